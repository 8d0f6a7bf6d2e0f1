//! SOS's heap and object commands: `gcheapstat`, `sizestats`, `dumpgen` (the heap by
//! generation), `dumpdelegate`, `dumpruntimetypes`, `listnearobj`, `analyzeoom`, and the
//! references across generations (`ephrefs`, `ephtoloh`), each shaped as SOS 10.0.750501 prints it (checked against
//! SOS on the corpus: tests/tests/sos_heap.rs).

use crate::addr::{hex, parse_address};
use crate::heap::WalkErrorOut;
use crate::output::{CommandError, Output, Render};
use crate::session::{clr, Clr, Session};
use crate::spec::CommandSpec;
use crate::text::grouped;
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::analysis::generations::{self, Generation, GenerationStop};
use serde::Serialize;
use std::collections::HashMap;

/// The commands.
pub static SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "gcheapstat",
        aliases: &[],
        about: "per GC heap and generation: bytes allocated, free, committed (SOS's gcheapstat)",
        grammar: || {
            Command::new("gcheapstat").arg(
                Arg::new("unreachable")
                    .long("unreachable")
                    .alias("inclunrooted")
                    .alias("iu")
                    .action(ArgAction::SetTrue)
                    .help(
                        "also the bytes of objects no root keeps alive (the live set of \
                         dumpheap -live; SOS also spells it -inclUnrooted, -iu)",
                    ),
            )
        },
        run: gcheapstat,
    },
    CommandSpec {
        name: "sizestats",
        aliases: &[],
        about:
            "how many objects of each size, per generation, free objects apart (SOS's sizestats)",
        grammar: || Command::new("sizestats"),
        run: sizestats,
    },
    CommandSpec {
        name: "dumpgen",
        aliases: &["dg"],
        about: "the objects of one generation: per-type statistics, or with -mt their addresses",
        grammar: || {
            Command::new("dumpgen")
                .arg(
                    Arg::new("generation")
                        .value_name("GENERATION")
                        .required(true)
                        .help("gen0, gen1, gen2, loh, poh or foh (frozen), as SOS spells them"),
                )
                .arg(
                    Arg::new("type")
                        .long("type")
                        .value_name("TEXT")
                        .help("only types whose name contains TEXT (case ignored, as SOS does)"),
                )
                .arg(
                    Arg::new("mt")
                        .long("mt")
                        .value_name("ADDR")
                        .help("list the objects of this MethodTable (address, MT, size)"),
                )
        },
        run: dumpgen,
    },
    CommandSpec {
        name: "dumpdelegate",
        aliases: &[],
        about: "a delegate's target object and method (each one of a multicast delegate)",
        grammar: || {
            Command::new("dumpdelegate").arg(
                Arg::new("address")
                    .value_name("ADDR")
                    .required(true)
                    .help("the delegate object"),
            )
        },
        run: dumpdelegate,
    },
    CommandSpec {
        name: "dumpruntimetypes",
        aliases: &[],
        about: "every System.RuntimeType object of the heap, with the type it stands for",
        grammar: || Command::new("dumpruntimetypes"),
        run: dumpruntimetypes,
    },
    CommandSpec {
        name: "listnearobj",
        aliases: &["lno"],
        about: "the objects before, at and after an address of the GC heap, and whether the \
                heap there is consistent (SOS's listnearobj)",
        grammar: || {
            Command::new("listnearobj").arg(
                Arg::new("address")
                    .value_name("ADDR")
                    .required(true)
                    .help("an address on the GC heap (aligned down to 8, as SOS does)"),
            )
        },
        run: listnearobj,
    },
    CommandSpec {
        name: "analyzeoom",
        aliases: &[],
        about: "the GC's record of its last out-of-memory failure, per heap (SOS's analyzeoom)",
        grammar: || Command::new("analyzeoom"),
        run: analyzeoom,
    },
    CommandSpec {
        name: "ephrefs",
        aliases: &[],
        about: "older generation objects that reference objects of gen0 (and, from gen2, the \
                LOH and the POH, of gen1), with how many references and the bytes they \
                reference (SOS's ephrefs)",
        grammar: || Command::new("ephrefs"),
        run: ephrefs,
    },
    CommandSpec {
        name: "ephtoloh",
        aliases: &[],
        about: "gen0 and gen1 objects referencing the large object heap, LOH objects \
                referencing gen0 and gen1, and the chains through both (SOS's ephtoloh)",
        grammar: || Command::new("ephtoloh"),
        run: ephtoloh,
    },
];

/// Why a generation walk stopped, as the command's error.
fn stop(e: GenerationStop) -> CommandError {
    match e {
        GenerationStop::Cancelled => CommandError::Cancelled,
        GenerationStop::Refused(error) => CommandError::Clr {
            context: None,
            error,
        },
    }
}

/// A walk's progress report (false when the user interrupted).
fn progress<'a>(c: &'a Clr, heap: &clrdata::GcHeap, what: &str) -> crate::control::Progress<'a> {
    c.control.progress(heap.walk_bytes(), what)
}

fn errors_out(errors: &[clrdata::WalkError]) -> Vec<WalkErrorOut> {
    errors.iter().map(crate::heap::walk_error).collect()
}

/// `Walk error at ...` lines, as dumpheap writes them.
fn errors_text(errors: &[WalkErrorOut]) -> String {
    errors
        .iter()
        .map(|e| {
            format!(
                "Walk error at {} (segment {}): {} {}; {} bytes skipped\n",
                e.address,
                e.segment,
                e.kind.replace('_', " "),
                e.detail,
                e.skipped
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------- gcheapstat

/// `gcheapstat`'s result (docs/json.md, `gcheapstat`).
#[derive(Serialize)]
pub struct GcHeapStat {
    /// Whether `unrooted` was counted (-unreachable).
    pub unreachable: bool,
    /// One per GC heap.
    pub heaps: Vec<HeapStatOut>,
    /// The heaps' sums.
    pub total: Vec<GenerationOut>,
    /// Where the walk met memory it could not read or a bad object.
    pub errors: Vec<WalkErrorOut>,
}

/// One heap's generations.
#[derive(Serialize)]
pub struct HeapStatOut {
    pub index: usize,
    pub generations: Vec<GenerationOut>,
}

/// One generation's bytes.
#[derive(Serialize, Clone, Copy, Default)]
pub struct GenerationOut {
    /// gen0 gen1 gen2 loh poh foh.
    pub generation: &'static str,
    pub allocated: u64,
    pub free: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unrooted: Option<u64>,
    pub committed: u64,
}

fn generations_out(g: &[generations::GenerationSpace; 6]) -> Vec<GenerationOut> {
    Generation::ALL
        .iter()
        .map(|&gen| {
            let s = g[gen.index()];
            GenerationOut {
                generation: gen.name(),
                allocated: s.allocated,
                free: s.free,
                unrooted: s.unrooted,
                committed: s.committed,
            }
        })
        .collect()
}

impl Render for GcHeapStat {
    /// SOS's tables: allocated, free (with the free share of SOH, LOH and POH), unrooted with
    /// -unreachable, committed; a row per heap and the total. SOS 10.0.750501 prints an empty
    /// FRZ column (its row leaves the frozen value out); here it holds the frozen segments'.
    fn render(&self) -> String {
        let row = |name: &str, g: &[GenerationOut], pick: &dyn Fn(&GenerationOut) -> u64| {
            let mut t = format!("{name:<8} ");
            for x in g {
                t.push_str(&format!("{:<10} ", pick(x)));
            }
            t
        };
        let header = "Heap     Gen0       Gen1       Gen2       LOH        POH        FRZ       \n";
        let percents = |g: &[GenerationOut], pick: &dyn Fn(&GenerationOut) -> u64| {
            let soh: u64 = g[..3].iter().map(|x| x.allocated).sum();
            let part: u64 = g[..3].iter().map(pick).sum();
            let pct = |v: u64, of: u64| v.checked_mul(100).and_then(|x| x.checked_div(of));
            let mut t = String::new();
            for (label, v, of) in [
                ("SOH", part, soh),
                ("LOH", pick(&g[3]), g[3].allocated),
                ("POH", pick(&g[4]), g[4].allocated),
            ] {
                match pct(v, of) {
                    Some(p) => t.push_str(&format!("{:<8} ", format!("{label}:{p}%"))),
                    None => t.push_str(&format!("{:<8} ", "")),
                }
            }
            t
        };
        let mut t = String::new();
        let mut table = |title: Option<&str>, pick: &dyn Fn(&GenerationOut) -> u64, pct: bool| {
            if let Some(title) = title {
                t.push_str(title);
                t.push('\n');
            }
            t.push_str(header);
            for h in &self.heaps {
                let mut line = row(&format!("Heap{}", h.index), &h.generations, pick);
                if pct {
                    line.push_str(&percents(&h.generations, pick));
                }
                t.push_str(line.trim_end());
                t.push('\n');
            }
            t.push_str(row("Total", &self.total, pick).trim_end());
            t.push_str("\n\n");
        };
        table(None, &|x| x.allocated, false);
        table(Some("Free space:"), &|x| x.free, true);
        if self.unreachable {
            table(
                Some("Unrooted objects:"),
                &|x| x.unrooted.unwrap_or(0),
                true,
            );
        }
        table(Some("Committed space:"), &|x| x.committed, false);
        t.push_str(&errors_text(&self.errors));
        t
    }
}

fn gcheapstat(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let heap = c.heap()?;
    generations::check_regions(heap)?;
    let unreachable = m.get_flag("unreachable");
    let live = if unreachable {
        Some(clrdata::analysis::reach::live_set(&c.rt, heap, &c.names)?)
    } else {
        None
    };
    let p = progress(&c, heap, "walking the heap");
    let st =
        generations::gc_heap_stat(&c.rt, heap, live.as_ref(), &|n| p.advance(n)).map_err(stop)?;
    let mut total = [generations::GenerationSpace::default(); 6];
    for h in &st.heaps {
        for (t, g) in total.iter_mut().zip(h.generations.iter()) {
            t.allocated += g.allocated;
            t.free += g.free;
            t.committed += g.committed;
            t.unrooted = match (t.unrooted, g.unrooted) {
                (a, Some(b)) => Some(a.unwrap_or(0) + b),
                (a, None) => a,
            };
        }
    }
    let res = GcHeapStat {
        unreachable,
        heaps: st
            .heaps
            .iter()
            .map(|h| HeapStatOut {
                index: h.index,
                generations: generations_out(&h.generations),
            })
            .collect(),
        total: generations_out(&total),
        errors: errors_out(&st.errors),
    };
    Ok(Output::rendered("gcheapstat", res))
}

// ----------------------------------------------------------------------------------- sizestats

/// `sizestats`'s result (docs/json.md, `sizestats`).
#[derive(Serialize)]
pub struct SizeStats {
    /// In SOS's order.
    pub histograms: Vec<HistogramOut>,
    pub errors: Vec<WalkErrorOut>,
}

/// One generation's objects (or free objects) by size.
#[derive(Serialize)]
pub struct HistogramOut {
    /// gen0 gen1 gen2 loh poh foh.
    pub generation: &'static str,
    /// Whether these are free objects.
    pub free: bool,
    /// Smallest size first.
    pub sizes: Vec<SizeCount>,
}

/// Objects of one size (rounded up to 8 bytes).
#[derive(Serialize)]
pub struct SizeCount {
    pub size: u64,
    pub count: u64,
}

/// SOS's title word of a generation's histogram (its `Generation` enum's name, lower case).
fn sos_generation_title(g: &str) -> &'static str {
    match g {
        "gen0" => "generation0",
        "gen1" => "generation1",
        "gen2" => "generation2",
        "loh" => "large",
        "poh" => "pinned",
        _ => "frozen",
    }
}

impl Render for SizeStats {
    /// SOS's sections: per histogram the sizes with their counts and the cumulative size and
    /// count of the smaller sizes before each row, or `(none)`.
    fn render(&self) -> String {
        let mut t = String::new();
        for h in &self.histograms {
            t.push_str(&format!(
                "Size Statistics for {} {}objects\n\n",
                sos_generation_title(h.generation),
                if h.free { "free " } else { "" }
            ));
            if h.sizes.is_empty() {
                t.push_str("(none)\n\n");
                continue;
            }
            t.push_str(&format!(
                "{:>14} {:>14} {:>15} {:>16}\n",
                "Size", "Count", "Cumulative Size", "Cumulative Count"
            ));
            let (mut cum_size, mut cum_count) = (0u64, 0u64);
            for s in &h.sizes {
                t.push_str(&format!(
                    "{:>14} {:>14} {:>15} {:>16}\n",
                    grouped(s.size),
                    grouped(s.count),
                    grouped(cum_size),
                    grouped(cum_count)
                ));
                cum_size += s.size * s.count;
                cum_count += s.count;
            }
            t.push('\n');
        }
        t.push_str(&errors_text(&self.errors));
        t
    }
}

fn sizestats(s: &Session, _: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let heap = c.heap()?;
    let p = progress(&c, heap, "walking the heap");
    let st = generations::size_stats(&c.rt, heap, &|n| p.advance(n)).map_err(stop)?;
    let res = SizeStats {
        histograms: st
            .histograms
            .iter()
            .map(|h| HistogramOut {
                generation: h.generation.name(),
                free: h.free,
                sizes: h
                    .sizes
                    .iter()
                    .map(|&(size, count)| SizeCount { size, count })
                    .collect(),
            })
            .collect(),
        errors: errors_out(&st.errors),
    };
    Ok(Output::rendered("sizestats", res))
}

// ------------------------------------------------------------------------------------- dumpgen

/// `dumpgen`'s result (docs/json.md, `dumpgen`).
#[derive(Serialize)]
pub struct DumpGen {
    /// gen0 gen1 gen2 loh poh foh.
    pub generation: &'static str,
    /// Without -mt: per type, smallest total size first (SOS's order).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statistics: Option<Vec<crate::heap::TypeOut>>,
    /// With -mt: the objects of that MethodTable, in heap order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objects: Option<Vec<GenObject>>,
    /// Objects counted (free objects included, as SOS counts them).
    pub total_objects: u64,
    /// Their bytes.
    pub total_size: u64,
    pub errors: Vec<WalkErrorOut>,
}

/// One object of `dumpgen -mt`.
#[derive(Serialize)]
pub struct GenObject {
    pub address: String,
    pub mt: String,
    pub size: u64,
}

impl Render for DumpGen {
    /// SOS's shape: `Statistics:` with MT, Count, TotalSize and the class name per type, or
    /// with -mt the objects' Address, MT and Size; then `Total N objects`.
    fn render(&self) -> String {
        let mut t = String::new();
        if let Some(objects) = &self.objects {
            t.push_str("         Address               MT     Size\n");
            for o in objects {
                t.push_str(&format!(
                    "{:0>16} {:0>16} {:>8}\n",
                    o.address.trim_start_matches("0x"),
                    o.mt.trim_start_matches("0x"),
                    o.size
                ));
            }
        } else {
            t.push_str("Statistics:\n              MT    Count    TotalSize Class Name\n");
            for s in self.statistics.iter().flatten() {
                t.push_str(&format!(
                    "{:0>16} {:>8} {:>12} {}\n",
                    s.mt.trim_start_matches("0x"),
                    s.count,
                    s.total_size,
                    s.name
                ));
            }
        }
        t.push_str(&format!(
            "Total {} objects{}\n",
            self.total_objects,
            crate::text::incomplete(self.errors.len())
        ));
        t.push_str(&errors_text(&self.errors));
        t
    }
}

fn dumpgen(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let heap = c.heap()?;
    let word = m
        .get_one::<String>("generation")
        .map(String::as_str)
        .unwrap_or_default();
    let generation = crate::heap::parse_generation(word)?;
    let mt = m
        .get_one::<String>("mt")
        .map(|a| parse_address(a))
        .transpose()?;
    let type_filter = m.get_one::<String>("type").map(|t| t.to_lowercase());
    let p = progress(&c, heap, "walking the heap");
    let mut by_mt: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut objects = Vec::new();
    let (mut total_objects, mut total_size) = (0u64, 0u64);
    let mut type_ok: HashMap<u64, bool> = HashMap::new();
    let errors = generations::generation_objects(&c.rt, heap, generation, &|n| p.advance(n), |o| {
        if let Some(want) = mt {
            if o.mt == want {
                total_objects += 1;
                total_size += o.size;
                objects.push(GenObject {
                    address: hex(o.address),
                    mt: hex(o.mt),
                    size: o.size,
                });
            }
            return;
        }
        if let Some(t) = &type_filter {
            let ok = *type_ok.entry(o.mt).or_insert_with(|| {
                c.names
                    .name_or_note(&c.rt, o.mt)
                    .to_lowercase()
                    .contains(t.as_str())
            });
            if !ok {
                return;
            }
        }
        total_objects += 1;
        total_size += o.size;
        let e = by_mt.entry(o.mt).or_default();
        e.0 += 1;
        e.1 += o.size;
    })
    .map_err(stop)?;
    let statistics = mt.is_none().then(|| {
        let mut v: Vec<crate::heap::TypeOut> =
            clrdata::analysis::totals::type_totals(&c.rt, &c.names, &by_mt)
                .into_iter()
                .map(|t| crate::heap::TypeOut {
                    mt: hex(t.mt),
                    count: t.count,
                    total_size: t.total_size,
                    name: t.name,
                    retained: None,
                })
                .collect();
        v.reverse();
        v
    });
    let res = DumpGen {
        generation: generation.name(),
        statistics,
        objects: mt.is_some().then_some(objects),
        total_objects,
        total_size,
        errors: errors_out(&errors),
    };
    Ok(Output::rendered("dumpgen", res))
}

// -------------------------------------------------------------------------------- dumpdelegate

/// `dumpdelegate`'s result (docs/json.md, `dumpdelegate`).
#[derive(Serialize)]
pub struct DumpDelegate {
    /// The delegate asked for.
    pub delegate: String,
    /// Its type.
    pub delegate_type: String,
    /// One per single-cast delegate: the delegate itself, or each of a multicast delegate's
    /// invocation list (last first, as SOS prints them).
    pub methods: Vec<DelegateRow>,
}

/// One single-cast delegate.
#[derive(Serialize)]
pub struct DelegateRow {
    pub delegate: String,
    /// Its `_target` as stored (for a delegate to a static method, the delegate itself or 0).
    pub target: String,
    /// The method's MethodDesc (null when it cannot be found; `error` says why).
    pub method_desc: Option<String>,
    /// The method's name with its parameters, as the DAC names it.
    pub method: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Render for DumpDelegate {
    /// SOS's table: Target, Method (the MethodDesc), Name.
    fn render(&self) -> String {
        let mut t = String::from("Target           Method           Name\n");
        for r in &self.methods {
            let h = |s: &str| format!("{:0>16}", s.trim_start_matches("0x"));
            match (&r.method_desc, &r.method) {
                (Some(md), Some(name)) => {
                    t.push_str(&format!("{} {} {}\n", h(&r.target), h(md), name))
                }
                _ => t.push_str(&format!(
                    "{} (unknown: {})\n",
                    h(&r.target),
                    r.error.as_deref().unwrap_or("not found")
                )),
            }
        }
        t
    }
}

fn dumpdelegate(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    use clrdata::model::delegates;
    let c = clr(s)?;
    let addr = parse_address(
        m.get_one::<String>("address")
            .map(String::as_str)
            .unwrap_or_default(),
    )?;
    let r = clrdata::model::objects::ObjectReader::new(&c.rt, &c.names);
    let w = clrdata::model::stack::StackWalker::new(&c.rt, &c.names, HashMap::new());
    let (mt, _) = delegates::delegate_fields(&r, addr)?;
    let mut methods = Vec::new();
    // As SOS: a stack of delegates to print, a multicast one replaced by its invocation list.
    let mut todo = vec![addr];
    let mut seen = 0u64;
    while let Some(d) = todo.pop() {
        seen += 1;
        if seen > delegates::MAX_INVOCATION_LIST {
            break;
        }
        let f = match delegates::delegate_fields(&r, d) {
            Ok((_, f)) => f,
            Err(e) => {
                methods.push(DelegateRow {
                    delegate: hex(d),
                    target: hex(0),
                    method_desc: None,
                    method: None,
                    error: Some(e.to_string()),
                });
                continue;
            }
        };
        if f.invocation_list != 0 {
            if let Some(list) = delegates::invocation_list(&r, d)? {
                todo.extend(list.into_iter().filter(|&x| x != 0));
                continue;
            }
        }
        let row = match delegates::delegate_method(&r, &w, d) {
            Ok(dm) => DelegateRow {
                delegate: hex(d),
                target: hex(f.target),
                method_desc: Some(hex(dm.method_desc)),
                method: Some(dm.method),
                error: None,
            },
            Err(e) => DelegateRow {
                delegate: hex(d),
                target: hex(f.target),
                method_desc: None,
                method: None,
                error: Some(e.to_string()),
            },
        };
        methods.push(row);
    }
    let res = DumpDelegate {
        delegate: hex(addr),
        delegate_type: r.type_name(mt),
        methods,
    };
    Ok(Output::rendered("dumpdelegate", res))
}

// ---------------------------------------------------------------------------- dumpruntimetypes

/// `dumpruntimetypes`'s result (docs/json.md, `dumpruntimetypes`).
#[derive(Serialize)]
pub struct DumpRuntimeTypes {
    /// In heap order.
    pub types: Vec<RuntimeTypeOut>,
    /// RuntimeType objects whose `m_handle` could not be read.
    pub unread: Vec<String>,
    pub errors: Vec<WalkErrorOut>,
}

/// One RuntimeType object.
#[derive(Serialize)]
pub struct RuntimeTypeOut {
    /// The RuntimeType object.
    pub address: String,
    /// Its `m_handle`: a MethodTable, or (bit 1 set) a TypeDesc.
    pub handle: String,
    /// Whether `handle` is a MethodTable.
    pub is_method_table: bool,
    /// The AppDomain (null for a TypeDesc).
    pub domain: Option<String>,
    /// The MethodTable's type name (null for a TypeDesc).
    pub name: Option<String>,
}

impl Render for DumpRuntimeTypes {
    /// SOS's table: Address, Domain, MT and Type Name.
    fn render(&self) -> String {
        if self.types.is_empty() && self.unread.is_empty() {
            return format!(
                "No System.RuntimeType objects found.\n{}",
                errors_text(&self.errors)
            );
        }
        let h = |s: &str| s.trim_start_matches("0x").to_string();
        let mut t = format!(
            "{:>16} {:>16} {:>16} Type Name\n",
            "Address", "Domain", "MT"
        );
        for r in &self.types {
            let name = match &r.name {
                Some(n) => n.clone(),
                None => format!("typehandle: {} (a TypeDesc)", h(&r.handle)),
            };
            t.push_str(&format!(
                "{:>16} {:>16} {:>16} {}\n",
                h(&r.address),
                r.domain.as_deref().map(h).unwrap_or_default(),
                h(&r.handle),
                name
            ));
        }
        for u in &self.unread {
            t.push_str(&format!("Not read: {u}\n"));
        }
        t.push_str(&errors_text(&self.errors));
        t
    }
}

fn dumpruntimetypes(s: &Session, _: &ArgMatches) -> Result<Output, CommandError> {
    use clrdata::model::objects::FieldValue;
    let c = clr(s)?;
    let heap = c.heap()?;
    let r = clrdata::model::objects::ObjectReader::new(&c.rt, &c.names);
    let p = progress(&c, heap, "walking the heap");
    let mut is_runtime_type: HashMap<u64, bool> = HashMap::new();
    let mut types = Vec::new();
    let mut unread = Vec::new();
    let mut it = heap.objects(&c.rt);
    let mut ticks = clrdata::model::heap::WalkTicks::default();
    for o in it.by_ref() {
        if !ticks.tick(o.size, |b| p.advance(b)) {
            return Err(CommandError::Cancelled);
        }
        if o.is_free
            || !*is_runtime_type
                .entry(o.mt)
                .or_insert_with(|| c.names.name_or_note(&c.rt, o.mt) == "System.RuntimeType")
        {
            continue;
        }
        let handle = r.fields(o.mt, o.address + 8, false).map(|f| {
            f.iter()
                .rev()
                .find(|f| f.name == "m_handle")
                .and_then(|f| match f.value {
                    FieldValue::Pointer { value } | FieldValue::UInt { value } => Some(value),
                    FieldValue::Int { value } => Some(value as u64),
                    _ => None,
                })
        });
        let handle = match handle {
            Ok(Some(h)) => h,
            Ok(None) => {
                unread.push(format!("{}: no m_handle field", hex(o.address)));
                continue;
            }
            Err(e) => {
                unread.push(format!("{}: {e}", hex(o.address)));
                continue;
            }
        };
        // As the runtime's TypeHandle: bit 1 set marks a TypeDesc.
        let is_method_table = handle & 2 == 0;
        types.push(RuntimeTypeOut {
            address: hex(o.address),
            handle: hex(handle),
            is_method_table,
            domain: is_method_table.then(|| hex(c.rt.globals.app_domain)),
            name: is_method_table.then(|| c.names.name_or_note(&c.rt, handle)),
        });
    }
    let errors = errors_out(it.errors());
    Ok(Output::rendered(
        "dumpruntimetypes",
        DumpRuntimeTypes {
            types,
            unread,
            errors,
        },
    ))
}

// ------------------------------------------------------------------------------- listnearobj

/// `listnearobj`'s result (docs/json.md, `listnearobj`).
#[derive(Serialize)]
pub struct ListNearObj {
    /// The address asked, aligned down to 8.
    pub address: String,
    /// The heap_segment holding it (None: on no segment).
    pub segment: Option<String>,
    /// The lines, in SOS's order.
    pub lines: Vec<NearLineOut>,
    /// Whether the heap is locally consistent there (None: no segment searched).
    pub consistent: Option<bool>,
    /// The address column's width (SOS widens it to an allocation context's `start-end`).
    #[serde(skip)]
    width: usize,
}

/// One line of `listnearobj`.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NearLineOut {
    /// An object: `which` is SOS's label (`Before:`, `Current:`, `Next:`, `Expected:`).
    Object {
        which: &'static str,
        address: String,
        mt: Option<String>,
        #[serde(rename = "type")]
        type_name: Option<String>,
        /// Unaligned size (None: no MethodTable decodes there).
        size: Option<u64>,
        /// What is wrong with it (empty: sound).
        problems: Vec<String>,
    },
    /// An allocation context: an expected gap in the heap.
    Gap { start: String, end: String },
    /// A statement, as SOS words it.
    Note { text: String },
}

/// SOS's size column: `1,234 (0x4d2)`, empty for none.
fn size_text(size: Option<u64>) -> String {
    match size {
        Some(n) if n > 0 => format!("{} (0x{n:x})", grouped(n)),
        _ => String::new(),
    }
}

impl Render for ListNearObj {
    /// SOS's rows: the label (9 wide), the address (right-aligned, 16 wide or an allocation
    /// context's width), the size (32 wide), the type; statements between them; the
    /// consistency verdict last.
    fn render(&self) -> String {
        let w = self.width;
        let bare = |h: &str| h.trim_start_matches("0x").to_string();
        let mut t = String::new();
        for l in &self.lines {
            match l {
                NearLineOut::Object {
                    which,
                    address,
                    type_name,
                    size,
                    problems,
                    ..
                } => {
                    let row = format!(
                        "{which:<9} {:>w$} {:<32} {}",
                        bare(address),
                        size_text(*size),
                        type_name.as_deref().unwrap_or("")
                    );
                    t.push_str(row.trim_end());
                    t.push('\n');
                    if !problems.is_empty() {
                        t.push_str(&format!("Error Detected: {}\n", problems.join("; ")));
                    }
                }
                NearLineOut::Gap { start, end } => {
                    let (s, e) = (parse_hex(start), parse_hex(end));
                    let range = format!("{s:x}-{e:x}");
                    let size = size_text(Some(e.saturating_sub(s)));
                    t.push_str(&format!(
                        "{:<9} {range:>w$} {size:<32} GC Allocation Context (expected gap in \
                         the heap)\n",
                        "Gap:"
                    ));
                }
                NearLineOut::Note { text } => {
                    t.push_str(text);
                    t.push('\n');
                }
            }
        }
        match self.consistent {
            Some(true) => t.push_str("Heap local consistency confirmed.\n"),
            Some(false) => t.push_str("Heap local consistency not confirmed.\n"),
            None => {}
        }
        t
    }
}

fn parse_hex(h: &str) -> u64 {
    u64::from_str_radix(h.trim_start_matches("0x"), 16).unwrap_or(0)
}

fn listnearobj(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    use clrdata::analysis::nearobj::{near_objects, NearLine};
    let c = clr(s)?;
    let heap = c.heap()?;
    let a = parse_address(
        m.get_one::<String>("address")
            .map(String::as_str)
            .unwrap_or_default(),
    )?;
    let r = clrdata::model::objects::ObjectReader::new(&c.rt, &c.names);
    let n = near_objects(&r, heap, a);
    let lines = n
        .lines
        .into_iter()
        .map(|l| match l {
            NearLine::Object {
                which,
                address,
                mt,
                size,
                problems,
            } => NearLineOut::Object {
                which,
                address: hex(address),
                mt: mt.map(hex),
                type_name: mt.map(|mt| c.type_name(mt)),
                size,
                problems,
            },
            NearLine::Gap { start, end } => NearLineOut::Gap {
                start: hex(start),
                end: hex(end),
            },
            NearLine::Note(text) => NearLineOut::Note { text },
        })
        .collect();
    Ok(Output::rendered(
        "listnearobj",
        ListNearObj {
            address: hex(n.address),
            segment: n.segment.map(hex),
            lines,
            consistent: n.consistent,
            width: n.address_width,
        },
    ))
}

// -------------------------------------------------------------------------------- analyzeoom

/// `analyzeoom`'s result (docs/json.md, `analyzeoom`): the heaps whose GC recorded an OOM.
#[derive(Serialize)]
pub struct AnalyzeOom {
    pub heaps: Vec<clrdata::model::oom::OomRecord>,
}

impl Render for AnalyzeOom {
    /// SOS's words: per recorded OOM its reason and, when the GC failed to get memory, the
    /// details; else that there was none.
    fn render(&self) -> String {
        if self.heaps.is_empty() {
            return "There was no managed OOM due to allocations on the GC heap\n".into();
        }
        let mut t = String::new();
        for o in &self.heaps {
            t.push_str(match o.reason {
                1 | 3 => "OOM was due to an internal .Net error, likely a bug in the GC",
                2 => "Didn't have enough memory to commit",
                4 => "Didn't have enough memory to allocate an LOH segment",
                5 => "Low on memory during GC",
                6 => "Could not do a full GC",
                _ => "",
            });
            if !(1..=6).contains(&o.reason) {
                t.push_str(&o.reason.to_string());
            }
            t.push('\n');
            if o.fgm != 0 {
                let msg = match o.fgm {
                    1 => "Failed to reserve memory".to_string(),
                    2 => "Didn't have enough memory to commit beginning of the segment".into(),
                    3 => "Didn't have enough memory to commit the new ephemeral segment".into(),
                    4 => "Didn't have enough memory to grow the internal GC data structures".into(),
                    5 => {
                        "Didn't have enough memory to commit the internal GC data structures".into()
                    }
                    n => n.to_string(),
                };
                t.push_str(&format!(
                    "Details: {} {msg} {} bytes\n",
                    if o.loh { "LOH" } else { "SOH" },
                    grouped(o.size)
                ));
                if o.available_pagefile_mb != 0 {
                    t.push_str(&format!(
                        " - on GC entry available commit space was {} MB\n",
                        grouped(o.available_pagefile_mb)
                    ));
                }
            }
        }
        t
    }
}

fn analyzeoom(s: &Session, _: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let heap = c.heap()?;
    let heaps = clrdata::model::oom::oom_records(&c.rt, heap)
        .map_err(|e| CommandError::clr("reading the GC's OOM history", e))?;
    Ok(Output::rendered("analyzeoom", AnalyzeOom { heaps }))
}

// ---------------------------------------------------------------------------- ephrefs, ephtoloh

/// ClrMD's name of a generation (`Generation` enum), as SOS's ephrefs prints it.
fn clrmd_generation(g: Generation) -> &'static str {
    match g {
        Generation::Gen0 => "Generation0",
        Generation::Gen1 => "Generation1",
        Generation::Gen2 => "Generation2",
        Generation::Loh => "Large",
        Generation::Poh => "Pinned",
        Generation::Frozen => "Frozen",
    }
}

/// SOS's type column of a given width: a longer name keeps its end after `...`.
fn sos_type_column(name: &str, width: usize) -> String {
    let n = name.chars().count();
    if n <= width {
        return format!("{name:<width$}");
    }
    let tail: String = name.chars().skip(n - (width - 3)).collect();
    format!("...{tail}")
}

/// `ephrefs`'s result (docs/json.md, `ephrefs`).
#[derive(Serialize)]
pub struct EphRefs {
    pub objects: Vec<EphRefRow>,
    pub referenced: u64,
    pub referenced_bytes: u64,
    pub walk_errors: Vec<WalkErrorOut>,
}

#[derive(Serialize)]
pub struct EphRefRow {
    pub object: String,
    pub mt: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub size: u64,
    pub object_generation: Generation,
    pub reference_generation: Generation,
    pub count: u64,
    pub bytes: u64,
    #[serde(skip)]
    pub address: u64,
    #[serde(skip)]
    pub mt_value: u64,
}

impl Render for EphRefs {
    fn render(&self) -> String {
        let mut t = errors_text(&self.walk_errors);
        let mut last: Option<(Generation, Generation)> = None;
        for r in &self.objects {
            let key = (r.object_generation, r.reference_generation);
            if last != Some(key) {
                if last.is_some() {
                    t.push('\n');
                }
                last = Some(key);
                t.push_str(&format!(
                    "References from {} to {}:\n\n",
                    clrmd_generation(key.0).to_lowercase(),
                    clrmd_generation(key.1).to_lowercase()
                ));
                t.push_str(&format!(
                    "{:>16} {:>16} {:>14} {:<11} {:<11} {:>14} {:>14} Type\n",
                    "Object", "MethodTable", "Size", "Obj Gen", "Ref Gen", "Obj Count", "Obj Size"
                ));
            }
            t.push_str(&format!(
                "{:>16} {:>16} {:>14} {:<11} {:<11} {:>14} {:>14} {}\n",
                format!("{:012x}", r.address),
                format!("{:012x}", r.mt_value),
                grouped(r.size),
                clrmd_generation(r.object_generation),
                clrmd_generation(r.reference_generation),
                grouped(r.count),
                grouped(r.bytes),
                r.type_name
            ));
        }
        t.push_str(&format!(
            "\n{} older generation objects referenced {} younger objects ({} bytes)\n",
            grouped(self.objects.len() as u64),
            grouped(self.referenced),
            grouped(self.referenced_bytes)
        ));
        t
    }
}

fn ephrefs(s: &Session, _: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let heap = c.heap()?;
    let p = progress(&c, heap, "ephrefs");
    let r = generations::ephemeral_references(&c.rt, heap, &c.names, &|n| p.advance(n))
        .map_err(stop)?;
    let objects = r
        .rows
        .iter()
        .map(|x| EphRefRow {
            object: hex(x.object),
            mt: hex(x.mt),
            type_name: c.type_name(x.mt),
            size: x.size,
            object_generation: x.object_generation,
            reference_generation: x.reference_generation,
            count: x.count,
            bytes: x.bytes,
            address: x.object,
            mt_value: x.mt,
        })
        .collect();
    Ok(Output::rendered(
        "ephrefs",
        EphRefs {
            objects,
            referenced: r.referenced,
            referenced_bytes: r.referenced_bytes,
            walk_errors: errors_out(&r.errors),
        },
    ))
}

/// `ephtoloh`'s result (docs/json.md, `ephtoloh`).
#[derive(Serialize)]
pub struct EphToLoh {
    pub ephemeral_to_loh: Vec<EdgeOut>,
    pub loh_to_ephemeral: Vec<EdgeOut>,
    /// `[ephemeral, large, ephemeral]` objects.
    pub round_trips: Vec<[String; 3]>,
    pub walk_errors: Vec<WalkErrorOut>,
    #[serde(skip)]
    round_trip_rows: Vec<[(u64, String); 3]>,
}

#[derive(Serialize)]
pub struct EdgeOut {
    pub from: String,
    pub from_type: String,
    pub to: String,
    pub to_type: String,
    #[serde(skip)]
    pub addresses: (u64, u64),
}

impl Render for EphToLoh {
    fn render(&self) -> String {
        let mut t = errors_text(&self.walk_errors);
        let header = format!(
            "{:>16} {} {:>16} Large Object Type\n",
            "Ephemeral",
            sos_type_column("Ephemeral Type", 64),
            "Large Object"
        );
        let row = |e: &EdgeOut| {
            format!(
                "{:>16} {} {:>16} {}\n",
                format!("{:012x}", e.addresses.0),
                sos_type_column(&e.from_type, 64),
                format!("{:012x}", e.addresses.1),
                e.to_type
            )
        };
        if self.ephemeral_to_loh.is_empty() {
            t.push_str("No Ephemeral objects pointing to the Large objects.\n");
        } else {
            t.push_str("Ephemeral objects pointing to the Large objects:\n\n");
            t.push_str(&header);
            self.ephemeral_to_loh
                .iter()
                .for_each(|e| t.push_str(&row(e)));
            t.push('\n');
        }
        if self.loh_to_ephemeral.is_empty() {
            t.push_str("No Large objects pointing to Ephemeral objects.\n");
        } else {
            t.push_str("Large objects pointing to Ephemeral objects:\n\n");
            t.push_str(&header);
            self.loh_to_ephemeral
                .iter()
                .for_each(|e| t.push_str(&row(e)));
            t.push('\n');
        }
        if !self.ephemeral_to_loh.is_empty() && !self.loh_to_ephemeral.is_empty() {
            if self.round_trip_rows.is_empty() {
                t.push_str(
                    "No Ephemeral objects which point to Large objects which point to Ephemeral \
                     objects.\n",
                );
            } else {
                t.push_str(
                    "Ephemeral objects which point to Large objects which point to Ephemeral \
                     objects:\n\n",
                );
                for r in &self.round_trip_rows {
                    t.push_str(&format!(
                        "{:>16} {} {:>16} {} {:>16} {}\n",
                        format!("{:012x}", r[0].0),
                        sos_type_column(&r[0].1, 64),
                        format!("{:012x}", r[1].0),
                        sos_type_column(&r[1].1, 64),
                        format!("{:012x}", r[2].0),
                        r[2].1
                    ));
                }
                t.push('\n');
            }
        }
        t
    }
}

fn ephtoloh(s: &Session, _: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let heap = c.heap()?;
    let p = progress(&c, heap, "ephtoloh");
    let r = generations::ephemeral_loh(&c.rt, heap, &c.names, &|n| p.advance(n)).map_err(stop)?;
    let edge = |e: &clrdata::analysis::generations::HeapEdge| EdgeOut {
        from: hex(e.from),
        from_type: c.type_name(e.from_mt),
        to: hex(e.to),
        to_type: c.type_name(e.to_mt),
        addresses: (e.from, e.to),
    };
    let ephemeral_to_loh: Vec<EdgeOut> = r.ephemeral_to_loh.iter().map(edge).collect();
    let loh_to_ephemeral: Vec<EdgeOut> = r.loh_to_ephemeral.iter().map(edge).collect();
    let name_of = |a: u64| {
        let r = clrdata::model::objects::ObjectReader::new(&c.rt, &c.names);
        r.object_mt(a)
            .map_or_else(|_| "Unknown".to_string(), |(mt, _)| c.type_name(mt))
    };
    let round_trip_rows: Vec<[(u64, String); 3]> = r
        .round_trips
        .iter()
        .map(|&(a, b, d)| [(a, name_of(a)), (b, name_of(b)), (d, name_of(d))])
        .collect();
    Ok(Output::rendered(
        "ephtoloh",
        EphToLoh {
            ephemeral_to_loh,
            loh_to_ephemeral,
            round_trips: round_trip_rows
                .iter()
                .map(|r| [hex(r[0].0), hex(r[1].0), hex(r[2].0)])
                .collect(),
            walk_errors: errors_out(&r.errors),
            round_trip_rows,
        },
    ))
}
