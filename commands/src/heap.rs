//! CLR heap commands: `eeversion`, `eeheap`, `dumpheap`.

use crate::addr::hex;
use crate::addr::{parse_address, parse_count};
use crate::output::{CommandError, Output, Render};
use crate::session::{clr, Session};
use crate::spec::CommandSpec;
use crate::text::{render, table};
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::analysis::heapstat::{
    self, HeapQuery, HeapSizes, HeapStatistics, ListedObject, WalkStop,
};
use clrdata::GcMode;
use serde::Serialize;
use std::collections::HashMap;
use std::io::Write;

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
        about: "the runtime's native heaps: the loader heaps (SOS's eeheap -loader) and the GC heaps with their segments",
        grammar: || {
            Command::new("eeheap")
                .arg(
                    Arg::new("gc")
                        .long("gc")
                        .short('g')
                        .action(ArgAction::SetTrue)
                        .help("only the GC heaps: generations and segments with their sizes"),
                )
                .arg(
                    Arg::new("loader")
                        .long("loader")
                        .action(ArgAction::SetTrue)
                        .help(
                            "only the loader heaps, as SOS's eeheap -loader: each domain's \
                             LoaderAllocator heaps with their blocks (address(reserved:committed)), \
                             then the JIT manager's code heaps",
                        ),
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
    /// The GC mode `gc` names (None when the runtime is not read).
    #[serde(skip)]
    pub gc_mode: Option<GcMode>,
    /// A NativeAOT app's runtime (absent for CoreCLR).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nativeaot: Option<clrdata::nativeaot::AotSummary>,
}

impl Render for EeVersion {
    /// The version lines, what is said of the GC (or why the runtime is not read), then the
    /// runtime module.
    fn render(&self) -> String {
        if let Some(a) = &self.nativeaot {
            return format!(
                "{}\n{} (version read from the {}; layout: {})\nGC: {}\nRuntime: compiled into \
                 {} at {}\n",
                self.version,
                self.runtime,
                self.version_source.replace('_', " "),
                a.layout,
                self.gc_error.as_deref().unwrap_or("not read"),
                self.module,
                self.module_base
            );
        }
        let error = self.gc_error.as_deref().unwrap_or_default();
        let gc = match (self.gc_mode, self.gc_heaps) {
            (Some(GcMode::Workstation), Some(_)) => "Workstation mode\n".to_string(),
            (Some(GcMode::Server), Some(n)) => format!("Server mode with {n} gc heaps\n"),
            (Some(GcMode::Workstation), None) => format!("Workstation mode ({error})\n"),
            (Some(GcMode::Server), None) => format!("Server mode ({error})\n"),
            (None, _) => format!("The runtime cannot be read: {error}\n"),
        };
        let mut t = self
            .file_version
            .as_deref()
            .unwrap_or(&self.version)
            .to_string();
        if let Some(commit) = &self.commit {
            t.push_str(&format!(" @Commit: {commit}"));
        }
        t.push('\n');
        t.push_str(&format!(
            "{} (version read from the {})\n",
            self.runtime,
            self.version_source.replace('_', " ")
        ));
        t.push_str(&gc);
        t.push_str(&format!(
            "Runtime: {} at {}\n",
            self.module, self.module_base
        ));
        t
    }
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
    let mode = heap.as_ref().map(|h| h.mode).unwrap_or(c.rt.gc_mode());
    res.gc_mode = Some(mode);
    res.gc = Some(gc_mode_name(mode));
    res.gc_heaps = heap.as_ref().ok().map(|h| h.heaps.len());
    res.gc_error = heap.as_ref().err().map(|e| e.to_string());
    Ok(Output::rendered("eeversion", res))
}

/// `eeversion` where the runtime is found but cannot be read (`why`); `why` itself when not
/// even the runtime module or its version is found.
fn eeversion_unread(s: &Session, why: CommandError) -> Result<Output, CommandError> {
    if let Some(aot) = crate::session::nativeaot_of(s, &why) {
        let aot = aot?;
        let a = aot.summary();
        let res = EeVersion {
            runtime: aot.display_name(),
            version: aot.version_text(),
            version_source: serde_json::to_value(a.version_source)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            file_version: None,
            commit: None,
            module: aot.module_path.clone(),
            module_base: hex(aot.base),
            gc: None,
            gc_heaps: None,
            gc_error: Some(
                "the GC mode of a NativeAOT app is not read (dumpheap -stat reads its heap on \
                 .NET 8 and 10)"
                    .into(),
            ),
            gc_mode: None,
            nativeaot: Some(a),
        };
        return Ok(Output::rendered("eeversion", res));
    }
    let Ok(i) = clrdata::find_runtime(&*s.target) else {
        return Err(why);
    };
    if i.version.is_empty() {
        return Err(why);
    }
    let mut res = ee_version_of(&i);
    res.gc_error = Some(why.to_string());
    Ok(Output::rendered("eeversion", res))
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
        gc_mode: None,
        nativeaot: None,
    }
}

// -------------------------------------------------------------------------------------- eeheap

/// `eeheap`'s result.
pub struct EeHeap(pub HeapSizes);

#[derive(Serialize)]
pub struct EeHeapJson {
    pub gc: &'static str,
    pub uses_regions: bool,
    pub heaps: Vec<HeapJson>,
    /// Bytes from each segment's start to its allocated end, over all heaps.
    pub total_allocated: u64,
    pub total_committed: u64,
    /// Problems that did not stop the heap's reading (e.g. threads whose allocation context
    /// could not be read).
    pub notes: Vec<String>,
}

#[derive(Serialize)]
pub struct HeapJson {
    pub index: usize,
    pub address: String,
    pub generations: Vec<GenJson>,
    pub segments: Vec<SegJson>,
    pub allocated: u64,
    pub committed: u64,
}

#[derive(Serialize)]
pub struct GenJson {
    pub generation: String,
    pub start_segment: String,
    pub allocation_context: Option<(String, String)>,
}

#[derive(Serialize)]
pub struct SegJson {
    pub address: String,
    pub kind: &'static str,
    pub begin: String,
    pub allocated: String,
    pub committed: String,
    pub reserved: String,
    pub allocated_size: u64,
    pub committed_size: u64,
}

impl EeHeap {
    /// The JSON form (docs/json.md, `eeheap`).
    pub fn to_json(&self) -> EeHeapJson {
        let h = &self.0;
        EeHeapJson {
            gc: gc_mode_name(h.mode),
            uses_regions: h.uses_regions,
            heaps: h
                .heaps
                .iter()
                .map(|x| HeapJson {
                    index: x.index,
                    address: hex(x.address),
                    generations: x
                        .generations
                        .iter()
                        .map(|g| GenJson {
                            generation: g.name.clone(),
                            start_segment: hex(g.start_segment),
                            allocation_context: g.allocation_context.map(|(p, l)| (hex(p), hex(l))),
                        })
                        .collect(),
                    segments: x
                        .segments
                        .iter()
                        .map(|sg| SegJson {
                            address: hex(sg.address),
                            kind: sg.kind.name(),
                            begin: hex(sg.begin),
                            allocated: hex(sg.allocated),
                            committed: hex(sg.committed),
                            reserved: hex(sg.reserved),
                            allocated_size: sg.allocated_size,
                            committed_size: sg.committed_size,
                        })
                        .collect(),
                    allocated: x.allocated,
                    committed: x.committed,
                })
                .collect(),
            total_allocated: h.total_allocated,
            total_committed: h.total_committed,
            notes: h.notes.clone(),
        }
    }
}

impl Serialize for EeHeap {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl Render for EeHeap {
    fn render(&self) -> String {
        let res = &self.0;
        let mut t = format!(
            "GC: {}, {} heap{}, {}\n",
            gc_mode_name(res.mode),
            res.heaps.len(),
            if res.heaps.len() == 1 { "" } else { "s" },
            if res.uses_regions {
                "regions"
            } else {
                "segments"
            }
        );
        for h in &res.heaps {
            t.push_str(&format!("\nHeap {} ({})\n", h.index, hex(h.address)));
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
                    hex(sg.address),
                    sg.kind.name().to_string(),
                    hex(sg.begin),
                    hex(sg.allocated),
                    hex(sg.committed),
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
        t
    }
}

fn eeheap(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let (gc, loader) = (m.get_flag("gc"), m.get_flag("loader"));
    if gc && !loader {
        let heap = c.heap()?;
        return Ok(Output::rendered(
            "eeheap",
            EeHeap(heapstat::heap_sizes(heap)),
        ));
    }
    if loader && !gc {
        let l = clrdata::model::loaderheap::loader_heaps(&c.rt)?;
        return Ok(Output::rendered("eeheap", EeLoaderHeap::of(&l)));
    }
    // Both parts, as SOS without an option (with both options, without the total).
    let loader_part = clrdata::model::loaderheap::loader_heaps(&c.rt).map(|l| EeLoaderHeap::of(&l));
    let gc_part = c.heap().map(|h| EeHeap(heapstat::heap_sizes(h)));
    if let (Err(e), Err(_)) = (&loader_part, &gc_part) {
        return Err(CommandError::clr("eeheap", e.clone()));
    }
    Ok(Output::rendered(
        "eeheap",
        EeHeapAll {
            total: !(gc && loader),
            loader: loader_part,
            gc: gc_part,
        },
    ))
}

// ------------------------------------------------------------------------- eeheap -loader

/// `eeheap -loader`'s result: SOS's view of the loader heaps ([`clrdata::model::loaderheap`]).
///
/// As SOS, a domain lists only heaps whose blocks no earlier domain listed (by the block's
/// start): on .NET 8-10 the SystemDomain and the AppDomain share the global LoaderAllocator,
/// so the AppDomain has "No unique loader heaps found." Heaps are grouped under SOS's names
/// (the DAC's, with `IndcellHeap` as IndirectionCellHeap and a name ClrMD does not know,
/// such as StaticsHeap, as Unknown) in SOS's order; a heap's committed size is what the dump
/// holds of each block from its start, in pages, and its waste the uncommitted rest of every
/// block but the current one.
#[derive(Serialize)]
pub struct EeLoaderHeap {
    /// The domains, the SystemDomain first.
    pub domains: Vec<LoaderDomainJson>,
    /// The JIT manager's code heaps.
    pub jit_manager: JitManagerJson,
    /// Bytes committed over every domain's listed heaps and the code heaps.
    pub total: u64,
}

/// One domain.
#[derive(Serialize)]
pub struct LoaderDomainJson {
    /// "System Domain" or "Domain 1".
    pub name: String,
    pub address: String,
    /// The LoaderAllocator the domain uses (the DAC's GetDomainLoaderAllocator).
    pub loader_allocator: String,
    /// The heaps, grouped by SOS's name, in SOS's order; empty when every block was listed
    /// by an earlier domain.
    pub heaps: Vec<LoaderHeapJson>,
    pub committed: u64,
    pub wasted: u64,
    /// Heaps whose block chain could not be read to its end.
    pub errors: Vec<clrdata::ClrError>,
}

/// The blocks of one kind of heap.
#[derive(Serialize)]
pub struct LoaderHeapJson {
    /// SOS's name (LowFrequencyHeap, ..., IndirectionCellHeap, Unknown).
    pub name: &'static str,
    /// The DAC's names of the heaps grouped here.
    pub dac_names: Vec<&'static str>,
    pub blocks: Vec<BlockJson>,
    pub committed: u64,
    pub wasted: u64,
}

/// One block.
#[derive(Serialize)]
pub struct BlockJson {
    pub address: String,
    pub reserved: u64,
    pub committed: u64,
    pub current: bool,
}

/// The JIT manager.
#[derive(Serialize)]
pub struct JitManagerJson {
    pub address: String,
    /// Code heaps by kind (LoaderCodeHeap first), then start.
    pub heaps: Vec<CodeHeapJson>,
    pub committed: u64,
    pub wasted: u64,
    pub errors: Vec<clrdata::ClrError>,
}

/// One code heap.
#[derive(Serialize)]
pub struct CodeHeapJson {
    pub kind: &'static str,
    pub address: String,
    pub blocks: Vec<BlockJson>,
    pub committed: u64,
    pub wasted: u64,
}

/// SOS's name of a DAC heap name (ClrMD's `NativeHeapKind`), and its rank in SOS's order.
fn sos_heap_name(n: clrdata::discovery::layout::LoaderHeapName) -> (&'static str, u32) {
    use clrdata::discovery::layout::LoaderHeapName as N;
    match n {
        N::LowFrequencyHeap => ("LowFrequencyHeap", 0),
        N::HighFrequencyHeap => ("HighFrequencyHeap", 1),
        N::StubHeap => ("StubHeap", 2),
        N::ExecutableHeap => ("ExecutableHeap", 3),
        N::FixupPrecodeHeap => ("FixupPrecodeHeap", 4),
        N::NewStubPrecodeHeap => ("NewStubPrecodeHeap", 5),
        N::IndcellHeap => ("IndirectionCellHeap", 6),
        N::CacheEntryHeap => ("CacheEntryHeap", 10),
        // ClrMD knows no StaticsHeap: NativeHeapKind.Unknown, ranked last.
        N::StaticsHeap => ("Unknown", 100),
    }
}

fn block_json(b: &clrdata::model::loaderheap::HeapBlock) -> (BlockJson, u64, u64) {
    // SOS counts a block's uncommitted rest as waste unless it is the current block; a
    // block of size 0 counts nothing.
    let wasted = if b.reserved > 0 && b.committed < b.reserved && !b.current {
        b.reserved - b.committed
    } else {
        0
    };
    let committed = if b.reserved > 0 { b.committed } else { 0 };
    (
        BlockJson {
            address: hex(b.address),
            reserved: b.reserved,
            committed,
            current: b.current,
        },
        committed,
        wasted,
    )
}

impl EeLoaderHeap {
    /// SOS's view of `l`.
    pub fn of(l: &clrdata::model::loaderheap::LoaderHeaps) -> EeLoaderHeap {
        use clrdata::model::loaderheap::DomainKind;
        let mut seen = std::collections::HashSet::new();
        let mut domains = Vec::new();
        let mut total: u64 = 0;
        let mut app_index = 0;
        for d in &l.domains {
            let name = match d.kind {
                DomainKind::System => "System Domain".to_owned(),
                DomainKind::App => {
                    app_index += 1;
                    format!("Domain {app_index}")
                }
            };
            // SOS adds the domain's LoaderAllocator to the set of block starts it has listed.
            seen.insert(d.address);
            let mut groups: Vec<LoaderHeapJson> = Vec::new();
            let mut ranks: Vec<u32> = Vec::new();
            let mut errors = Vec::new();
            for h in &d.heaps {
                if let Some(e) = &h.error {
                    errors.push(e.clone());
                }
                let (name, rank) = sos_heap_name(h.name);
                for b in &h.blocks {
                    if !seen.insert(b.address) {
                        continue;
                    }
                    let (bj, c, w) = block_json(b);
                    let i = match groups.iter().position(|g| g.name == name) {
                        Some(i) => i,
                        None => {
                            groups.push(LoaderHeapJson {
                                name,
                                dac_names: Vec::new(),
                                blocks: Vec::new(),
                                committed: 0,
                                wasted: 0,
                            });
                            ranks.push(rank);
                            groups.len() - 1
                        }
                    };
                    let g = &mut groups[i];
                    if !g.dac_names.contains(&h.name.dac_name()) {
                        g.dac_names.push(h.name.dac_name());
                    }
                    g.blocks.push(bj);
                    g.committed = g.committed.saturating_add(c);
                    g.wasted = g.wasted.saturating_add(w);
                }
            }
            let mut order: Vec<usize> = (0..groups.len()).collect();
            order.sort_by_key(|&i| ranks[i]);
            let mut sorted = Vec::new();
            let mut slots: Vec<Option<LoaderHeapJson>> = groups.into_iter().map(Some).collect();
            for i in order {
                if let Some(g) = slots[i].take() {
                    sorted.push(g);
                }
            }
            let committed = sorted
                .iter()
                .fold(0u64, |a, g| a.saturating_add(g.committed));
            let wasted = sorted.iter().fold(0u64, |a, g| a.saturating_add(g.wasted));
            total = total.saturating_add(committed);
            domains.push(LoaderDomainJson {
                name,
                address: hex(d.address),
                loader_allocator: hex(d.loader_allocator),
                heaps: sorted,
                committed,
                wasted,
                errors,
            });
        }
        let j = &l.jit_manager;
        let mut keyed: Vec<((u32, u64), CodeHeapJson)> = Vec::new();
        let mut errors = j.errors.clone();
        for h in &j.heaps {
            if let Some(e) = &h.error {
                errors.push(e.clone());
            }
            // SOS lists one entry per block (a LoaderCodeHeap's blocks each), by kind
            // (ClrMD's NativeHeapKind: LoaderCodeHeap before HostCodeHeap) then start.
            let rank =
                u32::from(h.kind != clrdata::model::loaderheap::CodeHeapKind::LoaderCodeHeap);
            for b in &h.blocks {
                let (bj, c, w) = block_json(b);
                keyed.push((
                    (rank, b.address),
                    CodeHeapJson {
                        kind: h.kind.name(),
                        address: hex(h.address),
                        blocks: vec![bj],
                        committed: c,
                        wasted: w,
                    },
                ));
            }
        }
        keyed.sort_by_key(|(k, _)| *k);
        let heaps: Vec<CodeHeapJson> = keyed.into_iter().map(|(_, h)| h).collect();
        let committed = heaps
            .iter()
            .fold(0u64, |a, h| a.saturating_add(h.committed));
        let wasted = heaps.iter().fold(0u64, |a, h| a.saturating_add(h.wasted));
        total = total.saturating_add(committed);
        EeLoaderHeap {
            domains,
            jit_manager: JitManagerJson {
                address: hex(j.address),
                heaps,
                committed,
                wasted,
                errors,
            },
            total,
        }
    }
}

/// SOS's `FormatMemorySize`: `0x<hex> (<decimal>)`, nothing for 0.
fn sos_size(n: u64) -> String {
    if n > 0 {
        format!("{n:#x} ({n})")
    } else {
        String::new()
    }
}

/// SOS's "Size: ... bytes total[, ... bytes wasted]".
fn sos_size_and_wasted(size: u64, wasted: u64) -> String {
    let mut t = format!("Size: {} bytes total", sos_size(size));
    if wasted > 0 {
        t.push_str(&format!(", {} bytes wasted", sos_size(wasted)));
    }
    t
}

/// A row of SOS's two-column table: the label padded to 21, one space, the value.
fn sos_row(label: &str, value: &str) -> String {
    format!("{label:<21} {value}\n")
}

fn sos_block(b: &BlockJson) -> String {
    let a = b.address.trim_start_matches("0x");
    let a = format!("{:0>12}", a);
    if b.reserved > 0 {
        format!("{a}({:x}:{:x})", b.reserved, b.committed)
    } else {
        a
    }
}

const DIVIDER: &str = "----------------------------------------\n";

fn addr12(h: &str) -> String {
    format!("{:0>12}", h.trim_start_matches("0x"))
}

impl Render for EeLoaderHeap {
    fn render(&self) -> String {
        let mut t = String::from("Loader Heap:\n");
        t.push_str(DIVIDER);
        for d in &self.domains {
            t.push_str(&sos_row(&format!("{}:", d.name), &addr12(&d.address)));
            t.push_str(&sos_row("LoaderAllocator:", &addr12(&d.loader_allocator)));
            for g in &d.heaps {
                let blocks: Vec<String> = g.blocks.iter().map(sos_block).collect();
                t.push_str(&sos_row(
                    &format!("{}:", g.name),
                    &format!(
                        "{} {}.",
                        blocks.join(" "),
                        sos_size_and_wasted(g.committed, g.wasted)
                    ),
                ));
            }
            if d.committed > 0 {
                t.push_str(&sos_row(
                    "Total size:",
                    &format!("{}.", sos_size_and_wasted(d.committed, d.wasted)),
                ));
            } else {
                t.push_str("No unique loader heaps found.\n");
            }
            for e in &d.errors {
                t.push_str(&format!("Note: {e}\n"));
            }
            t.push_str(DIVIDER);
        }
        let j = &self.jit_manager;
        t.push_str(&sos_row("JIT Manager:", &addr12(&j.address)));
        for h in &j.heaps {
            let blocks: Vec<String> = h.blocks.iter().map(sos_block).collect();
            t.push_str(&sos_row(
                &format!("{}:", h.kind),
                &format!(
                    "{} {}.",
                    blocks.join(" "),
                    sos_size_and_wasted(h.committed, h.wasted)
                ),
            ));
        }
        t.push_str(&sos_row(
            "Total size:",
            &format!("{}.", sos_size_and_wasted(j.committed, j.wasted)),
        ));
        for e in &j.errors {
            t.push_str(&format!("Note: {e}\n"));
        }
        t.push_str(DIVIDER);
        t
    }
}

/// `eeheap` without an option (or with both): the loader heaps, then the GC heaps, then (with
/// neither option) SOS's "Total bytes consumed by CLR" (the loader heaps' committed bytes and
/// the GC heaps' committed bytes). A part that cannot be read says why in its place.
pub struct EeHeapAll {
    /// Whether the total line is printed (no option given).
    pub total: bool,
    pub loader: Result<EeLoaderHeap, clrdata::ClrError>,
    pub gc: Result<EeHeap, CommandError>,
}

#[derive(Serialize)]
struct EeHeapAllJson<'a> {
    loader: Option<&'a EeLoaderHeap>,
    loader_error: Option<&'a clrdata::ClrError>,
    gc: Option<EeHeapJson>,
    gc_error: Option<&'a CommandError>,
    total_bytes: Option<u64>,
}

impl EeHeapAll {
    fn total_bytes(&self) -> Option<u64> {
        match (&self.loader, &self.gc) {
            (Ok(l), Ok(g)) if self.total => Some(l.total.saturating_add(g.0.total_committed)),
            _ => None,
        }
    }
}

impl Serialize for EeHeapAll {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        EeHeapAllJson {
            loader: self.loader.as_ref().ok(),
            loader_error: self.loader.as_ref().err(),
            gc: self.gc.as_ref().ok().map(|g| g.to_json()),
            gc_error: self.gc.as_ref().err(),
            total_bytes: self.total_bytes(),
        }
        .serialize(s)
    }
}

impl Render for EeHeapAll {
    fn render(&self) -> String {
        let mut t = match &self.loader {
            Ok(l) => l.render(),
            Err(e) => format!("Loader heaps: {e}\n"),
        };
        t.push('\n');
        match &self.gc {
            Ok(g) => t.push_str(&g.render()),
            Err(e) => t.push_str(&format!("GC heaps: {e}\n")),
        }
        if let Some(n) = self.total_bytes() {
            t.push_str(&format!("\nTotal bytes consumed by CLR: {n:#x} ({n})\n"));
        }
        t
    }
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
            Arg::new("range")
                .value_name("START [END]")
                .num_args(1..=2)
                .help(
                    "only objects that start at START or after it, and before END (`L<n>`: \
                     START + n bytes), as SOS's dumpheap takes a memory range",
                ),
        )
        .arg(Arg::new("gen").long("gen").value_name("GENERATION").help(
            "only objects of this generation: gen0, gen1, gen2, loh (large), poh \
                     (pinned) or foh (frozen), as SOS spells them",
        ))
        .arg(Arg::new("heap").long("heap").value_name("N").help(
            "only objects of GC heap N (server GC has several, numbered from 0 as eeheap -gc \
             numbers them; workstation GC has heap 0)",
        ))
        .arg(Arg::new("segment").long("segment").value_name("ADDR").help(
            "only objects of the segment whose heap_segment is at ADDR or whose memory (from \
             its start to its committed end) holds ADDR, as SOS's -segment (eeheap -gc lists \
             them); 0 means every segment, as in SOS",
        ))
        .arg(
            Arg::new("bycount")
                .long("bycount")
                .action(ArgAction::SetTrue)
                .help("sort the statistics by object count instead of total size"),
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
            Arg::new("live")
                .long("live")
                .action(ArgAction::SetTrue)
                .conflicts_with("dead")
                .help(
                    "only the objects the roots keep alive (the precise root set gcroot uses: \
                     handles, the f-reachable queue, thread statics, each frame's live stack \
                     slots; dependent handles followed)",
                ),
        )
        .arg(
            Arg::new("dead")
                .long("dead")
                .action(ArgAction::SetTrue)
                .help("only the objects no root keeps alive (free space counted apart)"),
        )
        .arg(
            Arg::new("retained")
                .long("retained")
                .action(ArgAction::SetTrue)
                .requires("stat")
                .help(
                    "with -stat: a Retained column, the bytes each type's live objects keep \
                     alive (the union of their dominator subtrees, as `retained` gives them)",
                ),
        )
        .arg(
            Arg::new("limit")
                .long("limit")
                .value_name("N")
                .help("list at most N objects (statistics still count all)"),
        )
        .arg(
            Arg::new("thinlock")
                .long("thinlock")
                .action(ArgAction::SetTrue)
                .help(
                    "only the objects whose header holds a thin lock: owner Thread, its OS id \
                     and the recursion level, as SOS lists them (the other filters apply)",
                ),
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
    /// With -live / -dead: the live set the objects were chosen by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reachability: Option<ReachOut>,
    /// With -retained: how the retained sizes were computed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention: Option<RetentionOut>,
}

/// How `dumpheap -stat -retained`'s column was computed (docs/json.md, `dumpheap`).
#[derive(Serialize, Clone, Debug)]
pub struct RetentionOut {
    /// Live objects in the dominator tree.
    pub live_objects: u64,
    /// Their total size.
    pub live_bytes: u64,
    /// Milliseconds the root set, the marking and the dominator tree took.
    pub millis: u64,
    /// What could not be read.
    pub notes: Vec<String>,
}

/// The live set of `dumpheap -live` / `-dead` (docs/json.md, `dumpheap`).
#[derive(Serialize, Clone, Debug)]
pub struct ReachOut {
    /// `live` or `dead`: which objects were counted.
    pub only: &'static str,
    /// Roots taken (duplicates included).
    pub roots: usize,
    /// Distinct objects they hold.
    pub root_objects: u64,
    /// Objects reached from them (the live objects, roots' own included).
    pub live_objects: u64,
    /// Reached objects whose references could not be read.
    pub unreadable: u64,
    /// Bytes of the mark bitmap (one bit per 8 bytes of the heap's ranges).
    pub bitmap_bytes: u64,
    /// Milliseconds the root set and the marking took.
    pub millis: u64,
    /// What could not be read while finding the roots or marking.
    pub notes: Vec<String>,
}

#[derive(Serialize, Clone, Debug)]
pub struct TypeOut {
    pub mt: String,
    pub count: u64,
    pub total_size: u64,
    pub name: String,
    /// With -retained: the bytes the type's live objects keep alive (0: none live).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retained: Option<u64>,
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

impl DumpHeap {
    /// The result of a walk's statistics; with `retained` (MethodTable -> bytes, from
    /// `-retained`), each type's retained bytes.
    pub fn of(st: HeapStatistics, retained: Option<&HashMap<u64, u64>>) -> DumpHeap {
        DumpHeap {
            not_listed: st.not_listed,
            statistics: st
                .types
                .into_iter()
                .map(|t| TypeOut {
                    mt: hex(t.mt),
                    count: t.count,
                    total_size: t.total_size,
                    name: t.name,
                    retained: retained.map(|r| r.get(&t.mt).copied().unwrap_or(0)),
                })
                .collect(),
            strings: st.strings.map(|v| {
                v.into_iter()
                    .map(|s| StringOut {
                        count: s.count,
                        total_size: s.total_size,
                        value: s.value,
                    })
                    .collect()
            }),
            total_objects: st.total_objects,
            total_size: st.total_size,
            free_objects: st.free_objects,
            free_size: st.free_size,
            frozen_objects: st.frozen_objects,
            frozen_size: st.frozen_size,
            errors: st.errors.iter().map(walk_error).collect(),
            notes: st.notes,
            skipped_bytes: st.skipped_bytes,
            reachability: None,
            retention: None,
        }
    }
}

pub(crate) fn walk_error(e: &clrdata::WalkError) -> WalkErrorOut {
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

/// The listing's header line (text, not `-short`).
const LISTING_HEADER: &str = " Address           MT                      Size";

/// One listed object: in JSON `{"address":"0x..","mt":"0x..","size":N[,"free":true]}` (kept
/// compact: a listing can hold tens of millions), as text its line (`-short`: the address).
fn write_listed(
    w: &mut dyn Write,
    o: &ListedObject,
    json: bool,
    short: bool,
) -> std::io::Result<()> {
    if json {
        write!(
            w,
            "{{\"address\":\"0x{:x}\",\"mt\":\"0x{:x}\",\"size\":{}{}}}",
            o.address,
            o.mt,
            o.size,
            if o.free { ",\"free\":true" } else { "" }
        )
    } else if short {
        writeln!(w, "{:016x}", o.address)
    } else {
        writeln!(
            w,
            " {:016x}  {:016x}  {:>10}{}",
            o.address,
            o.mt,
            o.size,
            if o.free { " Free" } else { "" }
        )
    }
}

fn dumpheap(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = match clr(s) {
        Ok(c) => c,
        // A NativeAOT app: the census by MethodTable only (-stat, no other option).
        Err(e) => {
            let only_stat = m.get_flag("stat")
                && m.get_many::<String>("range").is_none()
                && [
                    "type", "mt", "gen", "heap", "segment", "min", "max", "limit",
                ]
                .iter()
                .all(|a| m.get_one::<String>(a).is_none())
                && ["strings", "short", "free", "live", "dead", "bycount"]
                    .iter()
                    .all(|a| !m.get_flag(a));
            return match crate::session::nativeaot_of(s, &e) {
                Some(aot) if only_stat => {
                    aot.and_then(|a| crate::nativeaot::aot_dumpheap_stat(s, &a))
                }
                _ => Err(e),
            };
        }
    };
    c.heap()?;
    let arg = |n: &str| m.get_one::<String>(n).map(String::as_str);
    let num = |n: &str| arg(n).map(parse_count).transpose();
    let want_live = m.get_flag("live");
    let mut retention: Option<(HashMap<u64, u64>, RetentionOut)> = None;
    let mut retain = |set: &clrdata::analysis::reach::LiveSet,
                      t0: std::time::Instant|
     -> Result<(), CommandError> {
        let r = clrdata::analysis::dominators::retention_of(&c.rt, c.heap()?, &c.names, set)?;
        let by_type = r
            .by_type()
            .into_iter()
            .map(|t| (t.mt, t.retained))
            .collect();
        let out = RetentionOut {
            live_objects: r.addresses.len() as u64,
            live_bytes: r.live_bytes,
            millis: t0.elapsed().as_millis() as u64,
            notes: r.notes,
        };
        retention = Some((by_type, out));
        Ok(())
    };
    let (reach, reach_out) = if want_live || m.get_flag("dead") {
        let heap = c.heap()?;
        let t0 = std::time::Instant::now();
        let set = clrdata::analysis::reach::live_set(&c.rt, heap, &c.names)?;
        if m.get_flag("retained") {
            retain(&set, t0)?;
        }
        let out = ReachOut {
            only: if want_live { "live" } else { "dead" },
            roots: set.roots.roots.len(),
            root_objects: set.root_objects,
            live_objects: set.marked,
            unreadable: set.unreadable,
            bitmap_bytes: set.bitmap_bytes(),
            millis: t0.elapsed().as_millis() as u64,
            notes: set.notes.clone(),
        };
        (
            Some(heapstat::ReachFilter {
                set: std::sync::Arc::new(set),
                live: want_live,
            }),
            Some(out),
        )
    } else {
        if m.get_flag("retained") {
            let t0 = std::time::Instant::now();
            let set = clrdata::analysis::reach::live_set(&c.rt, c.heap()?, &c.names)?;
            retain(&set, t0)?;
        }
        (None, None)
    };
    let generation = arg("gen").map(parse_generation).transpose()?;
    if generation.is_some() {
        clrdata::analysis::generations::check_regions(c.heap()?)?;
    }
    let range = m
        .get_many::<String>("range")
        .map(|v| address_range(c.heap()?, &v.map(String::as_str).collect::<Vec<_>>()))
        .transpose()?;
    let segments = segment_filter(c.heap()?, arg("heap"), arg("segment"))?;
    let by_count = m.get_flag("bycount");
    let q = HeapQuery {
        reach,
        generation,
        range,
        segments,
        type_filter: arg("type").map(str::to_owned),
        mt_filter: arg("mt").map(parse_address).transpose()?,
        min: num("min")?,
        max: num("max")?,
        limit: num("limit")?,
        strings: m.get_flag("strings"),
        list_free: m.get_flag("free"),
    };
    if m.get_flag("thinlock") {
        return dumpheap_thinlock(&c, &q);
    }
    let short = m.get_flag("short");
    let walk = move |list: Option<&mut heapstat::ListObject<'_, CommandError>>| {
        let heap = c.heap()?;
        let progress = c.control.progress(heap.walk_bytes(), "walking the heap");
        heapstat::heap_statistics(&c.rt, &c.names, heap, &q, &|n| progress.advance(n), list)
            .map(|st| {
                let mut d = DumpHeap::of(st, retention.as_ref().map(|r| &r.0));
                d.reachability = reach_out.clone();
                d.retention = retention.as_ref().map(|r| r.1.clone());
                if by_count {
                    // Most objects first; equal counts keep the order by total size.
                    d.statistics.sort_by_key(|t| std::cmp::Reverse(t.count));
                }
                d
            })
            .map_err(|e| match e {
                WalkStop::Cancelled => CommandError::Cancelled,
                WalkStop::Listing(e) => e,
            })
    };
    if m.get_flag("stat") || m.get_flag("strings") {
        return Ok(Output::rendered("dumpheap", walk(None)?));
    }
    // A listing: written as the walk goes (a heap can hold tens of millions of objects).
    Ok(Output::streamed("dumpheap", move |w, json| {
        write_listing(w, json, short, &walk)
    }))
}

/// `dumpheap -thinlock`'s result (docs/json.md, `dumpheap`): the matching objects whose header
/// holds a thin lock, in heap order.
#[derive(Serialize)]
pub struct DumpHeapThinLocks {
    pub thin_locks: Vec<HeapThinLockOut>,
    /// Places where the walk met memory it could not read or a bad object.
    pub errors: Vec<WalkErrorOut>,
    /// Problems reading the heap's structure that did not stop the walk.
    pub notes: Vec<String>,
}

/// One thin lock of `dumpheap -thinlock`.
#[derive(Serialize)]
pub struct HeapThinLockOut {
    pub object: String,
    pub mt: String,
    #[serde(rename = "type")]
    pub type_name: String,
    /// The header's thread id (the owner's thin-lock id, `Thread::m_ThreadId`).
    pub thread_id: u32,
    /// The owner Thread (None: no thread has that id).
    pub thread: Option<String>,
    /// Its OS thread id.
    pub os_id: Option<u64>,
    /// The header's recursion level: 0 when taken once (SOS's Recursion column).
    pub recursion: u32,
}

impl Render for DumpHeapThinLocks {
    /// SOS's table (`Object Thread OSId Recursion`, right-aligned, widths 16 16 18 14), nothing
    /// when no object holds a thin lock; walk errors after it.
    fn render(&self) -> String {
        let mut t = String::new();
        if !self.thin_locks.is_empty() {
            t.push_str(&format!(
                "{:>16} {:>16} {:>18} {:>14}\n",
                "Object", "Thread", "OSId", "Recursion"
            ));
        }
        let bare = |h: &str| h.trim_start_matches("0x").to_string();
        for l in &self.thin_locks {
            let os_id = format!("0x{:x}", l.os_id.unwrap_or(0));
            t.push_str(&format!(
                "{:>16} {:>16} {os_id:>18} {:>14}\n",
                bare(&l.object),
                l.thread.as_deref().map_or("0".into(), bare),
                l.recursion
            ));
        }
        for e in &self.errors {
            t.push_str(&format!(
                "Walk error at {} (segment {}): {} {}; {} bytes skipped\n",
                e.address, e.segment, e.kind, e.detail, e.skipped
            ));
        }
        for n in &self.notes {
            t.push_str(&format!("Note: {n}\n"));
        }
        t
    }
}

/// `dumpheap -thinlock`: the objects `q` matches whose header holds a thin lock, the owner
/// found from the header's thread id as the DAC finds it (the runtime's thin-lock id
/// dispenser, else the thread list), as SOS (ClrMD's `ClrObject.GetThinLock`) lists them.
fn dumpheap_thinlock(c: &crate::session::Clr, q: &HeapQuery) -> Result<Output, CommandError> {
    use clrdata::data::syncblocks::ReadSyncBlocks;
    use clrdata::data::threads::ReadThreads;
    let heap = c.heap()?;
    let progress = c.control.progress(heap.walk_bytes(), "walking the heap");
    let mut objects: Vec<(u64, u64)> = Vec::new();
    let st = heapstat::heap_statistics(
        &c.rt,
        &c.names,
        heap,
        q,
        &|n| progress.advance(n),
        Some(&mut |o: &ListedObject| -> Result<(), CommandError> {
            if !o.free {
                objects.push((o.address, o.mt));
            }
            Ok(())
        }),
    )
    .map_err(|e| match e {
        WalkStop::Cancelled => CommandError::Cancelled,
        WalkStop::Listing(e) => e,
    })?;
    let threads = c.rt.threads().unwrap_or_default();
    let m = c.rt.memory();
    let thin_locks = objects
        .iter()
        .filter_map(|&(a, mt)| {
            clrdata::analysis::locks::thin_lock_at(m, a, mt, |id| {
                c.rt.thread_of_thin_lock_id(id).ok()
            })
        })
        .map(|l| HeapThinLockOut {
            object: hex(l.object),
            mt: hex(l.mt),
            type_name: c.type_name(l.mt),
            thread_id: l.thread_id,
            thread: l.thread.map(hex),
            os_id: l
                .thread
                .and_then(|t| threads.iter().find(|x| x.address == t))
                .map(|x| x.os_id),
            recursion: l.recursion.saturating_sub(1),
        })
        .collect();
    Ok(Output::rendered(
        "dumpheap",
        DumpHeapThinLocks {
            thin_locks,
            errors: st.errors.iter().map(walk_error).collect(),
            notes: st.notes,
        },
    ))
}

/// `dumpheap <start> [<end>]`'s range as SOS reads it: `[start, end)`, the end an address or
/// `L<n>` (start + n, hexadecimal), none meaning the end of memory; refused when it is empty or
/// no segment's memory (from its region's start to its committed end) meets it.
fn address_range(heap: &clrdata::GcHeap, words: &[&str]) -> Result<(u64, u64), CommandError> {
    let start = parse_address(words[0])?;
    let end = match words.get(1) {
        None => u64::MAX,
        Some(w) => match w.strip_prefix(['L', 'l']) {
            Some(n) => start.saturating_add(parse_address(n)?),
            None => parse_address(w)?,
        },
    };
    if end <= start {
        return Err(CommandError::bad_argument(
            format!("range {}", words.join(" ")),
            "the start must be before the end",
        ));
    }
    if !heap
        .segments
        .iter()
        .any(|sg| sg.region_start() < end && start < sg.committed)
    {
        return Err(CommandError::bad_argument(
            format!("range {}", words.join(" ")),
            "no segment of the GC heap is in it",
        ));
    }
    Ok((start, end))
}

/// The segments `dumpheap -heap <n>` and `-segment <addr>` choose (indices in
/// [`clrdata::GcHeap::segments`]), as SOS chooses them: those of GC heap `n` (refused when the
/// heap has no such heap); the segment whose heap_segment is at `addr` or whose memory (from
/// its start to its committed end) holds `addr` (none may: then no object is counted; 0 means
/// every segment). `None` when neither is given.
fn segment_filter(
    heap: &clrdata::GcHeap,
    heap_word: Option<&str>,
    segment_word: Option<&str>,
) -> Result<Option<std::collections::BTreeSet<usize>>, CommandError> {
    let index = heap_word
        .map(|w| {
            let n = parse_count(w)?;
            match usize::try_from(n) {
                Ok(i) if i < heap.heaps.len() => Ok(i),
                _ => Err(CommandError::bad_argument(
                    format!("heap {w}"),
                    format!(
                        "no GC heap with index {n} (the process has {}, from 0)",
                        heap.heaps.len()
                    ),
                )),
            }
        })
        .transpose()?;
    let address = segment_word
        .map(parse_address)
        .transpose()?
        .filter(|&a| a != 0);
    if index.is_none() && address.is_none() {
        return Ok(None);
    }
    Ok(Some(
        heap.segments
            .iter()
            .enumerate()
            .filter(|(_, sg)| index.is_none_or(|i| sg.heap == i))
            .filter(|(_, sg)| {
                address
                    .is_none_or(|a| sg.address == a || (sg.region_start() <= a && a < sg.committed))
            })
            .map(|(i, _)| i)
            .collect(),
    ))
}

/// A heap walk handing each listed object to its argument, giving the statistics.
type Walk =
    dyn Fn(Option<&mut heapstat::ListObject<'_, CommandError>>) -> Result<DumpHeap, CommandError>;

/// A listing as the walk meets its objects, then its statistics: as JSON
/// `{"objects":[..], ...the statistics' fields}`, as text the objects' lines under a header
/// and the statistics (`-short`: the addresses only).
fn write_listing(
    w: &mut dyn Write,
    json: bool,
    short: bool,
    walk: &Walk,
) -> Result<(), CommandError> {
    let io = CommandError::from;
    let mut first = true;
    if json {
        w.write_all(b"{\"objects\":[").map_err(io)?;
    } else if !short {
        writeln!(w, "{LISTING_HEADER}").map_err(io)?;
    }
    let res = walk(Some(&mut |o: &ListedObject| {
        if json && !first {
            w.write_all(b",").map_err(io)?;
        }
        first = false;
        write_listed(w, o, json, short).map_err(io)
    }))?;
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
        w.write_all(res.render().as_bytes()).map_err(io)?;
    }
    Ok(())
}

/// The statistics part of `dumpheap`'s text (the listing is written as the walk goes).
impl Render for DumpHeap {
    fn render(&self) -> String {
        let r = self;
        let mut t = String::new();
        if let Some(l) = &r.reachability {
            t.push_str(&format!(
                "Live objects: {} reached from {} roots ({} objects) in {} ms; counting the {} ones\n",
                l.live_objects, l.roots, l.root_objects, l.millis, l.only
            ));
            if l.unreadable > 0 {
                t.push_str(&format!(
                    "  {} reached object(s) whose references could not be read\n",
                    l.unreadable
                ));
            }
            for n in &l.notes {
                t.push_str(&format!("  note: {n}\n"));
            }
        }
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
            if let Some(ro) = &r.retention {
                t.push_str(&format!(
                    "Retained: the bytes each type's live objects keep alive ({} live objects, {} \
                     bytes; {} ms)\n",
                    ro.live_objects, ro.live_bytes, ro.millis
                ));
                for n in &ro.notes {
                    t.push_str(&format!("  note: {n}\n"));
                }
            }
            t.push_str("Statistics:\n");
            let with_retained = r.retention.is_some();
            let mut head = vec!["MT", "Count", "TotalSize"];
            if with_retained {
                head.push("Retained");
            }
            head.push("Class Name");
            let mut tb = table(&head);
            // SOS order: smallest total first, so the biggest ends next to the prompt.
            for s in r.statistics.iter().rev() {
                let mut row = vec![
                    format!("{:0>16}", s.mt.trim_start_matches("0x")),
                    s.count.to_string(),
                    s.total_size.to_string(),
                ];
                if with_retained {
                    row.push(s.retained.unwrap_or(0).to_string());
                }
                row.push(s.name.clone());
                tb.add_row(row);
            }
            let right: &[usize] = if with_retained { &[1, 2, 3] } else { &[1, 2] };
            for &c in right {
                if let Some(col) = tb.column_mut(c) {
                    col.set_cell_alignment(comfy_table::CellAlignment::Right);
                }
            }
            t.push_str(&render(&tb));
        }
        t.push_str(&format!(
            "Total {} objects, {} bytes{}\n",
            r.total_objects,
            r.total_size,
            crate::text::incomplete(r.errors.len())
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
}

/// The generation a word names (SOS's spellings), or the refusal naming them.
pub fn parse_generation(
    word: &str,
) -> Result<clrdata::analysis::generations::Generation, CommandError> {
    clrdata::analysis::generations::Generation::parse(word).ok_or_else(|| {
        CommandError::bad_argument(
            format!("generation '{word}'"),
            "not a generation: gen0, gen1, gen2, loh (large), poh (pinned) or foh (frozen)",
        )
    })
}
