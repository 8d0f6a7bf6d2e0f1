//! CLR heap commands: `eeversion`, `eeheap`, `dumpheap`.

use crate::addr::hex;
use crate::addr::{parse_address, parse_count};
use crate::output::{CommandError, Output};
use crate::session::{clr, Clr, Session};
use crate::spec::CommandSpec;
use crate::text::{render, table};
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::{GcMode, SegmentKind};
use serde::Serialize;
use std::collections::HashMap;

/// The heap commands.
pub static SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "eeversion",
        aliases: &[],
        about: "the .NET runtime's version, where it was read, and the GC mode",
        grammar: || Command::new("eeversion"),
        run: eeversion,
    },
    CommandSpec {
        name: "eeheap",
        aliases: &[],
        about: "the GC heaps: generations and segments with their sizes",
        grammar: || {
            Command::new("eeheap").arg(
                Arg::new("gc")
                    .long("gc")
                    .short('g')
                    .action(ArgAction::SetTrue)
                    .help("the GC heap (the only part shown so far; SOS spells it -gc)"),
            )
        },
        run: eeheap,
    },
    CommandSpec {
        name: "dumpheap",
        aliases: &[],
        about: "objects of the GC heap, or with -stat the count and size of each type",
        grammar: dumpheap_grammar,
        run: dumpheap,
    },
];

fn gc_mode_name(m: GcMode) -> &'static str {
    match m {
        GcMode::Workstation => "workstation",
        GcMode::Server => "server",
    }
}

// ----------------------------------------------------------------------------------- eeversion

#[derive(Serialize)]
pub struct EeVersion {
    pub runtime: String,
    pub version: String,
    pub version_source: String,
    pub file_version: Option<String>,
    pub commit: Option<String>,
    pub module: String,
    pub module_base: String,
    /// `workstation` or `server` (g_heap_type), also when the GC heap could not be read
    /// (`gc_error` says why).
    pub gc: Option<&'static str>,
    pub gc_heaps: Option<usize>,
    pub gc_error: Option<String>,
}

fn eeversion(s: &Session, _: &ArgMatches) -> Result<Output, CommandError> {
    let c = match clr(s) {
        Ok(c) => c,
        // A runtime found but not read (unsupported, or its data not in the dump) still has
        // its version: say it, and why the rest cannot be read.
        Err(e) => return eeversion_unread(s, e),
    };
    // The version is known even when the heap cannot be read (a truncated dump): say both.
    let heap = c.heap();
    let mut res = ee_version_of(&c.rt.info);
    // g_heap_type, read at discovery: known even when the heap is not in the dump.
    res.gc = Some(gc_mode_name(
        heap.as_ref().map(|h| h.mode).unwrap_or(c.rt.gc_mode()),
    ));
    res.gc_heaps = heap.as_ref().ok().map(|h| h.heaps.len());
    res.gc_error = heap.as_ref().err().map(|e| e.to_string());
    let gc = match heap {
        Ok(h) => match h.mode {
            GcMode::Workstation => "Workstation mode\n".to_string(),
            GcMode::Server => format!("Server mode with {} gc heaps\n", h.heaps.len()),
        },
        Err(e) => match c.rt.gc_mode() {
            GcMode::Workstation => format!("Workstation mode ({e})\n"),
            GcMode::Server => format!("Server mode ({e})\n"),
        },
    };
    let t = ee_version_text(&res, &gc);
    Ok(Output::of("eeversion", res, t))
}

/// `eeversion` where the runtime is found but cannot be read (`why`); `why` itself when not
/// even the runtime module or its version is found.
fn eeversion_unread(s: &Session, why: CommandError) -> Result<Output, CommandError> {
    let Ok(i) = clrdata::find_runtime(&*s.target) else {
        return Err(why);
    };
    if i.version.is_empty() {
        return Err(why);
    }
    let mut res = ee_version_of(&i);
    res.gc_error = Some(why.to_string());
    let t = ee_version_text(&res, &format!("The runtime cannot be read: {why}\n"));
    Ok(Output::of("eeversion", res, t))
}

/// `eeversion`'s fields that the runtime's identity gives (the GC's are the caller's).
fn ee_version_of(i: &clrdata::RuntimeInfo) -> EeVersion {
    EeVersion {
        runtime: i.display_name(),
        version: i.version.clone(),
        version_source: serde_json::to_value(i.version_source)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        file_version: i.file_version.clone(),
        commit: i.commit.clone(),
        module: i.module_path.clone(),
        module_base: hex(i.base),
        gc: None,
        gc_heaps: None,
        gc_error: None,
    }
}

/// `eeversion`'s text: the version lines, `middle` (what is said of the GC, or why the
/// runtime is not read), then the runtime module.
fn ee_version_text(res: &EeVersion, middle: &str) -> String {
    let mut t = res
        .file_version
        .as_deref()
        .unwrap_or(&res.version)
        .to_string();
    if let Some(commit) = &res.commit {
        t.push_str(&format!(" @Commit: {commit}"));
    }
    t.push('\n');
    t.push_str(&format!(
        "{} (version read from the {})\n",
        res.runtime,
        res.version_source.replace('_', " ")
    ));
    t.push_str(middle);
    t.push_str(&format!("Runtime: {} at {}\n", res.module, res.module_base));
    t
}

// -------------------------------------------------------------------------------------- eeheap

#[derive(Serialize)]
pub struct EeHeap {
    pub gc: &'static str,
    pub uses_regions: bool,
    pub heaps: Vec<HeapOut>,
    /// Bytes from each segment's start to its allocated end, over all heaps.
    pub total_allocated: u64,
    pub total_committed: u64,
    /// Problems that did not stop the heap's reading (e.g. threads whose allocation context
    /// could not be read).
    pub notes: Vec<String>,
}

#[derive(Serialize)]
pub struct HeapOut {
    pub index: usize,
    pub address: String,
    pub generations: Vec<GenOut>,
    pub segments: Vec<SegOut>,
    pub allocated: u64,
    pub committed: u64,
}

#[derive(Serialize)]
pub struct GenOut {
    pub generation: String,
    pub start_segment: String,
    pub allocation_context: Option<(String, String)>,
}

#[derive(Serialize)]
pub struct SegOut {
    pub address: String,
    pub kind: &'static str,
    pub begin: String,
    pub allocated: String,
    pub committed: String,
    pub reserved: String,
    pub allocated_size: u64,
    pub committed_size: u64,
}

const GEN_NAMES: [&str; 5] = ["gen0", "gen1", "gen2", "loh", "poh"];

fn eeheap(s: &Session, _: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let heap = c.heap()?;
    let mut heaps = Vec::new();
    for (i, h) in heap.heaps.iter().enumerate() {
        let segments: Vec<SegOut> = heap
            .segments
            .iter()
            .filter(|sg| sg.heap == i)
            .map(|sg| SegOut {
                address: hex(sg.address),
                kind: sg.kind.name(),
                begin: hex(sg.mem),
                allocated: hex(sg.walk_end),
                committed: hex(sg.committed),
                reserved: hex(sg.reserved),
                allocated_size: sg.walk_end.saturating_sub(sg.mem),
                committed_size: sg.committed.saturating_sub(sg.mem),
            })
            .collect();
        heaps.push(HeapOut {
            index: i,
            address: hex(h.address),
            generations: h
                .generations
                .iter()
                .enumerate()
                .map(|(g, gen)| GenOut {
                    generation: GEN_NAMES
                        .get(g)
                        .map_or_else(|| format!("gen{g}"), |n| n.to_string()),
                    start_segment: hex(gen.start_segment),
                    allocation_context: (gen.alloc_ptr != 0)
                        .then(|| (hex(gen.alloc_ptr), hex(gen.alloc_limit))),
                })
                .collect(),
            allocated: segments.iter().map(|s| s.allocated_size).sum(),
            committed: segments.iter().map(|s| s.committed_size).sum(),
            segments,
        });
    }
    let res = EeHeap {
        gc: gc_mode_name(heap.mode),
        uses_regions: heap.heaps.iter().any(|h| h.uses_regions),
        total_allocated: heaps.iter().map(|h| h.allocated).sum(),
        total_committed: heaps.iter().map(|h| h.committed).sum(),
        heaps,
        notes: heap.notes.clone(),
    };
    let mut t = format!(
        "GC: {}, {} heap{}, {}\n",
        res.gc,
        res.heaps.len(),
        if res.heaps.len() == 1 { "" } else { "s" },
        if res.uses_regions {
            "regions"
        } else {
            "segments"
        }
    );
    for h in &res.heaps {
        t.push_str(&format!("\nHeap {} ({})\n", h.index, h.address));
        let mut tb = table(&[
            "segment",
            "kind",
            "begin",
            "allocated",
            "committed",
            "allocated size",
            "committed size",
        ]);
        for sg in &h.segments {
            tb.add_row(vec![
                sg.address.clone(),
                sg.kind.to_string(),
                sg.begin.clone(),
                sg.allocated.clone(),
                sg.committed.clone(),
                format!("{:#x} ({})", sg.allocated_size, sg.allocated_size),
                format!("{:#x} ({})", sg.committed_size, sg.committed_size),
            ]);
        }
        t.push_str(&render(&tb));
        t.push_str(&format!(
            "Heap {} allocated {:#x} ({}) bytes, committed {:#x} ({}) bytes\n",
            h.index, h.allocated, h.allocated, h.committed, h.committed
        ));
    }
    t.push_str(&format!(
        "------------------------------\nGC Allocated Heap Size:    Size: {:#x} ({}) bytes.\nGC Committed Heap Size:    Size: {:#x} ({}) bytes.\n",
        res.total_allocated, res.total_allocated, res.total_committed, res.total_committed
    ));
    for n in &res.notes {
        t.push_str(&format!("Note: {n}\n"));
    }
    Ok(Output::new("eeheap", &res, t))
}

// ------------------------------------------------------------------------------------ dumpheap

fn dumpheap_grammar() -> Command {
    Command::new("dumpheap")
        .arg(
            Arg::new("stat")
                .long("stat")
                .short('s')
                .action(ArgAction::SetTrue)
                .help("only the per-type statistics"),
        )
        .arg(
            Arg::new("type")
                .long("type")
                .short('t')
                .value_name("TEXT")
                .help("only objects whose type name contains TEXT"),
        )
        .arg(
            Arg::new("mt")
                .long("mt")
                .value_name("ADDR")
                .help("only objects with this MethodTable"),
        )
        .arg(
            Arg::new("min")
                .long("min")
                .value_name("BYTES")
                .help("only objects at least this big"),
        )
        .arg(
            Arg::new("max")
                .long("max")
                .value_name("BYTES")
                .help("only objects at most this big"),
        )
        .arg(
            Arg::new("strings")
                .long("strings")
                .action(ArgAction::SetTrue)
                .help("statistics of string values (count, size, value)"),
        )
        .arg(
            Arg::new("short")
                .long("short")
                .action(ArgAction::SetTrue)
                .help("only the addresses, one per line"),
        )
        .arg(
            Arg::new("free")
                .long("free")
                .action(ArgAction::SetTrue)
                .help("list free objects too"),
        )
        .arg(
            Arg::new("limit")
                .long("limit")
                .value_name("N")
                .help("list at most N objects (statistics still count all)"),
        )
}

/// `dumpheap`'s result; a listing's objects are written ahead of it, as the walk goes.
#[derive(Serialize)]
pub struct DumpHeap {
    /// Listed objects beyond --limit that were counted but not listed.
    pub not_listed: u64,
    /// Per-type statistics of the matching objects, largest total size first.
    pub statistics: Vec<TypeOut>,
    /// String values with -strings.
    pub strings: Option<Vec<StringOut>>,
    pub total_objects: u64,
    pub total_size: u64,
    /// Free space (objects of the Free type); not in the totals.
    pub free_objects: u64,
    pub free_size: u64,
    /// Objects in frozen (NonGC) segments: included in the totals, said apart.
    pub frozen_objects: u64,
    pub frozen_size: u64,
    /// Places where the walk met memory it could not read or a bad object.
    pub errors: Vec<WalkErrorOut>,
    /// Problems reading the heap's structure that did not stop the walk.
    pub notes: Vec<String>,
    pub skipped_bytes: u64,
}

/// One listed object: kept compact (a listing can hold tens of millions), written as hex
/// strings in JSON like every address.
#[derive(Serialize)]
pub struct ObjOut {
    #[serde(serialize_with = "ser_hex")]
    pub address: u64,
    #[serde(serialize_with = "ser_hex")]
    pub mt: u64,
    pub size: u64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub free: bool,
}

#[derive(Serialize, Clone, Debug)]
pub struct TypeOut {
    pub mt: String,
    pub count: u64,
    pub total_size: u64,
    pub name: String,
}

#[derive(Serialize)]
pub struct StringOut {
    pub count: u64,
    pub total_size: u64,
    pub value: String,
}

#[derive(Serialize)]
pub struct WalkErrorOut {
    pub address: String,
    pub segment: String,
    pub kind: String,
    pub mt: String,
    pub detail: String,
    pub skipped: u64,
}

fn ser_hex<S: serde::Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format_args!("0x{v:x}"))
}

fn walk_error(e: &clrdata::WalkError) -> WalkErrorOut {
    WalkErrorOut {
        address: hex(e.address),
        segment: hex(e.segment),
        kind: serde_json::to_value(e.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        mt: hex(e.mt),
        detail: e.detail.clone(),
        skipped: e.skipped,
    }
}

/// What `dumpheap` was asked.
#[derive(Clone)]
struct HeapQuery {
    type_filter: Option<String>,
    mt_filter: Option<u64>,
    min: Option<u64>,
    max: Option<u64>,
    limit: Option<u64>,
    strings: bool,
    list_free: bool,
}

impl HeapQuery {
    fn filtered(&self) -> bool {
        self.type_filter.is_some()
            || self.mt_filter.is_some()
            || self.min.is_some()
            || self.max.is_some()
            || self.strings
    }
}

fn dumpheap(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    c.heap()?;
    let arg = |n: &str| m.get_one::<String>(n).map(String::as_str);
    let num = |n: &str| {
        arg(n)
            .map(parse_count)
            .transpose()
            
    };
    let q = HeapQuery {
        type_filter: arg("type").map(str::to_owned),
        mt_filter: arg("mt")
            .map(parse_address)
            .transpose()
            ?,
        min: num("min")?,
        max: num("max")?,
        limit: num("limit")?,
        strings: m.get_flag("strings"),
        list_free: m.get_flag("free"),
    };
    let short = m.get_flag("short");
    if m.get_flag("stat") || q.strings {
        let res = heap_walk(&c, &q, None)?;
        let text = dumpheap_text(&res);
        return Ok(Output::of("dumpheap", res, text));
    }
    // A listing: written as the walk goes (a heap can hold tens of millions of objects).
    Ok(Output::streamed("dumpheap", move |w, json| {
        let io = CommandError::from;
        let mut first = true;
        if json {
            w.write_all(b"{\"objects\":[").map_err(io)?;
        } else if !short {
            writeln!(w, " {:<16}  {:<16}  {:>10}", "Address", "MT", "Size").map_err(io)?;
        }
        let mut on = |o: &ObjOut| -> Result<(), CommandError> {
            if json {
                if !first {
                    w.write_all(b",").map_err(io)?;
                }
                write!(
                    w,
                    "{{\"address\":\"0x{:x}\",\"mt\":\"0x{:x}\",\"size\":{}{}}}",
                    o.address,
                    o.mt,
                    o.size,
                    if o.free { ",\"free\":true" } else { "" }
                )
                .map_err(io)?;
            } else if short {
                writeln!(w, "{:016x}", o.address).map_err(io)?;
            } else {
                writeln!(
                    w,
                    " {:016x}  {:016x}  {:>10}{}",
                    o.address,
                    o.mt,
                    o.size,
                    if o.free { " Free" } else { "" }
                )
                .map_err(io)?;
            }
            first = false;
            Ok(())
        };
        let res = heap_walk(&c, &q, Some(&mut on))?;
        if json {
            w.write_all(b"]").map_err(io)?;
            let v = serde_json::to_value(&res).unwrap_or_default();
            for (k, v) in v.as_object().into_iter().flatten() {
                write!(w, ",{}:{}", serde_json::Value::from(k.as_str()), v).map_err(io)?;
            }
            w.write_all(b"}").map_err(io)?;
        } else if !short {
            if res.not_listed > 0 {
                writeln!(
                    w,
                    "... {} more objects not listed (--limit)",
                    res.not_listed
                )
                .map_err(io)?;
            }
            writeln!(w).map_err(io)?;
            w.write_all(dumpheap_text(&res).as_bytes()).map_err(io)?;
        }
        Ok(())
    }))
}

/// What receives each listed object.
type ListObject<'a> = dyn FnMut(&ObjOut) -> Result<(), CommandError> + 'a;

/// Walks the heap for `q`: the statistics, and each listed object given to `list` (none
/// with `-stat`). The plain `-stat` runs the parallel census.
fn heap_walk(
    c: &Clr,
    q: &HeapQuery,
    mut list: Option<&mut ListObject<'_>>,
) -> Result<DumpHeap, CommandError> {
    let heap = c.heap()?;
    let filtered = q.filtered();
    // Which MethodTables pass the type filter (decided once per MethodTable).
    let mut type_ok: HashMap<u64, bool> = HashMap::new();
    let mut pass = |mt: u64, size: u64| -> bool {
        if q.mt_filter.is_some_and(|f| f != mt)
            || q.min.is_some_and(|v| size < v)
            || q.max.is_some_and(|v| size > v)
        {
            return false;
        }
        if q.strings && mt != c.rt.globals.string_mt {
            return false;
        }
        match &q.type_filter {
            None => true,
            Some(t) => *type_ok
                .entry(mt)
                .or_insert_with(|| c.type_name(mt).contains(t.as_str())),
        }
    };

    let mut stats: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut listed = 0u64;
    let mut not_listed = 0u64;
    let (mut free_objects, mut free_size, mut frozen_objects, mut frozen_size) = (0, 0, 0, 0);
    let mut string_stats: HashMap<String, (u64, u64)> = HashMap::new();

    let errors = if !filtered && list.is_none() {
        // The plain -stat: the parallel census.
        let progress = c.control.progress(heap.walk_bytes(), "walking the heap");
        let census = heap.census_observed(&c.rt, &|n| progress.advance(n));
        drop(progress);
        if census.stopped {
            return Err(CommandError::Cancelled);
        }
        for t in &census.types {
            stats.insert(t.mt, (t.count, t.total_size));
        }
        free_objects = census.free_objects;
        free_size = census.free_size;
        if let Some(k) = census.by_segment_kind.get(SegmentKind::Frozen.name()) {
            frozen_objects = k.objects;
            frozen_size = k.bytes;
        }
        census.errors.iter().map(walk_error).collect::<Vec<_>>()
    } else {
        let progress = c.control.progress(heap.walk_bytes(), "walking the heap");
        let strings_reader = clrdata::model::objects::ObjectReader::new(&c.rt, &c.names);
        let mut it = heap.objects(&c.rt);
        let (mut n, mut bytes) = (0u64, 0u64);
        for o in it.by_ref() {
            n += 1;
            bytes += o.size;
            if n.is_multiple_of(4096) {
                if !progress.advance(bytes) {
                    return Err(CommandError::Cancelled);
                }
                bytes = 0;
            }
            if o.is_free {
                if !filtered {
                    free_objects += 1;
                    free_size += o.size;
                    if q.list_free {
                        if let Some(f) = list.as_mut() {
                            f(&ObjOut {
                                address: o.address,
                                mt: o.mt,
                                size: o.size,
                                free: true,
                            })?;
                        }
                    }
                }
                continue;
            }
            if !pass(o.mt, o.size) {
                continue;
            }
            let e = stats.entry(o.mt).or_default();
            e.0 += 1;
            e.1 += o.size;
            if o.kind == SegmentKind::Frozen {
                frozen_objects += 1;
                frozen_size += o.size;
            }
            if q.strings {
                if let Ok((v, _)) = strings_reader.string_value(o.address, 1024) {
                    let e = string_stats.entry(v).or_default();
                    e.0 += 1;
                    e.1 += o.size;
                }
            }
            if let Some(f) = list.as_mut() {
                if q.limit.is_some_and(|l| listed >= l) {
                    not_listed += 1;
                } else {
                    listed += 1;
                    f(&ObjOut {
                        address: o.address,
                        mt: o.mt,
                        size: o.size,
                        free: false,
                    })?;
                }
            }
        }
        it.errors().iter().map(walk_error).collect::<Vec<_>>()
    };

    let mut statistics: Vec<TypeOut> = stats
        .iter()
        .map(|(&mt, &(count, total_size))| TypeOut {
            mt: hex(mt),
            count,
            total_size,
            name: c.type_name(mt),
        })
        .collect();
    statistics.sort_by(|a, b| {
        b.total_size
            .cmp(&a.total_size)
            .then(b.count.cmp(&a.count))
            .then(a.name.cmp(&b.name))
    });
    let strings_out = q.strings.then(|| {
        let mut v: Vec<StringOut> = string_stats
            .into_iter()
            .map(|(value, (count, total_size))| StringOut {
                count,
                total_size,
                value,
            })
            .collect();
        v.sort_by(|a, b| b.total_size.cmp(&a.total_size).then(a.value.cmp(&b.value)));
        v
    });
    Ok(DumpHeap {
        total_objects: statistics.iter().map(|t| t.count).sum(),
        total_size: statistics.iter().map(|t| t.total_size).sum(),
        not_listed,
        statistics,
        strings: strings_out,
        free_objects,
        free_size,
        frozen_objects,
        frozen_size,
        skipped_bytes: errors.iter().map(|e| e.skipped).sum(),
        errors,
        notes: heap.notes.clone(),
    })
}

/// The statistics part of `dumpheap`'s text (the listing is written as the walk goes).
fn dumpheap_text(r: &DumpHeap) -> String {
    let mut t = String::new();
    if let Some(strings) = &r.strings {
        let mut tb = table(&["Count", "TotalSize", "String Value"]);
        for s in strings.iter().rev() {
            let mut v: String = s
                .value
                .chars()
                .take(100)
                .flat_map(char::escape_debug)
                .collect();
            if s.value.chars().count() > 100 {
                v.push('…');
            }
            tb.add_row(vec![s.count.to_string(), s.total_size.to_string(), v]);
        }
        t.push_str(&render(&tb));
    } else {
        t.push_str("Statistics:\n");
        let mut tb = table(&["MT", "Count", "TotalSize", "Class Name"]);
        // SOS order: smallest total first, so the biggest ends next to the prompt.
        for s in r.statistics.iter().rev() {
            tb.add_row(vec![
                format!("{:0>16}", s.mt.trim_start_matches("0x")),
                s.count.to_string(),
                s.total_size.to_string(),
                s.name.clone(),
            ]);
        }
        for c in [1, 2] {
            if let Some(col) = tb.column_mut(c) {
                col.set_cell_alignment(comfy_table::CellAlignment::Right);
            }
        }
        t.push_str(&render(&tb));
    }
    t.push_str(&format!(
        "Total {} objects, {} bytes\n",
        r.total_objects, r.total_size
    ));
    if r.frozen_objects > 0 {
        t.push_str(&format!(
            "  of which {} objects, {} bytes in frozen (NonGC) segments (string literals, type objects)\n",
            r.frozen_objects, r.frozen_size
        ));
    }
    if r.free_objects > 0 {
        t.push_str(&format!(
            "Free space: {} objects, {} bytes (not in the total)\n",
            r.free_objects, r.free_size
        ));
    }
    for e in &r.errors {
        t.push_str(&format!(
            "Walk error at {} (segment {}): {} {}; {} bytes skipped\n",
            e.address,
            e.segment,
            e.kind.replace('_', " "),
            e.detail,
            e.skipped
        ));
    }
    for n in &r.notes {
        t.push_str(&format!("Note: {n}\n"));
    }
    t
}
