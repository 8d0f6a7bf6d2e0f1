//! Root commands: `gchandles`, `finalizequeue`, `gcroot`, `retained`.

use crate::addr::{fmt_addr, hex, parse_address};
use crate::output::{CommandError, Output, Render};
use crate::session::clr;
use crate::session::{Clr, Session};
use crate::spec::CommandSpec;
use crate::text::{render, table};
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::analysis::roots::{
    gcroot_with as find_roots, static_slot_names, GcRootOptions, RootSource,
};
use clrdata::data::handles::{FinalizerSegment, HandleKind};
use clrdata::model::objects::ObjectReader;
use clrdata::model::stack::gcrefs::RefSource;
use clrdata::model::stack::{StackWalker, ThreadStack};
use clrdata::prelude::*;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The root commands.
pub static SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "gchandles",
        aliases: &[],
        about: "the GC handles: each handle's kind and object, and counts by kind and type",
        grammar: || Command::new("gchandles").arg(flag("stat", "only the statistics")),
        run: gchandles,
    },
    CommandSpec {
        name: "finalizequeue",
        aliases: &["fq"],
        about: "objects registered for finalization, per generation, and those ready for it",
        grammar: || Command::new("finalizequeue").arg(flag("stat", "only the statistics")),
        run: finalizequeue,
    },
    CommandSpec {
        name: "gcroot",
        aliases: &[],
        about: "the roots keeping an object alive, with the shortest path from each",
        grammar: || {
            Command::new("gcroot")
                .arg(
                    Arg::new("address")
                        .required(true)
                        .help("the object's address"),
                )
                .arg(flag(
                    "nostacks",
                    "leave out the stack roots (no stack is read: handles, the f-reachable \
                     queue and thread statics only)",
                ))
                .arg(flag(
                    "conservative",
                    "take every stack word and register pointing at or into an object as a \
                     root, live or stale (by default each frame's GC info says which slots \
                     are live)",
                ))
                .arg(flag(
                    "all",
                    "every root keeping the object alive (by default the first 64 found)",
                ))
        },
        run: gcroot,
    },
    CommandSpec {
        name: "retained",
        aliases: &[],
        about: "what holds the most memory: the objects and types with the largest retained \
                sizes (the dominator tree of the live objects)",
        grammar: || {
            Command::new("retained")
                .arg(
                    Arg::new("top")
                        .short('n')
                        .long("top")
                        .value_name("N")
                        .default_value("20")
                        .help("how many objects and types to list"),
                )
                .arg(
                    Arg::new("type")
                        .long("type")
                        .short('t')
                        .value_name("TEXT")
                        .help("only objects and types whose type name contains TEXT"),
                )
        },
        run: retained,
    },
];

/// `retained`'s result (docs/json.md, `retained`).
#[derive(Serialize)]
pub struct Retained {
    pub live_objects: u64,
    pub live_bytes: u64,
    pub millis: u64,
    pub objects: Vec<RetainedObject>,
    pub types: Vec<RetainedType>,
    pub notes: Vec<String>,
}

#[derive(Serialize)]
pub struct RetainedObject {
    pub address: String,
    pub mt: String,
    pub name: String,
    pub size: u64,
    pub retained: u64,
    /// Its immediate dominator (null: only the roots together dominate it).
    pub dominator: Option<String>,
    /// What keeps it (and all it retains) alive.
    pub held_by: HeldBy,
}

/// The root behind a retained object: the top of its dominator chain (the object itself when
/// a root holds it directly) and the roots holding that top object.
#[derive(Serialize)]
pub struct HeldBy {
    /// The top of the object's dominator chain: every path from the roots to the object
    /// passes through it, and no object dominates it.
    pub top: String,
    pub top_name: String,
    /// Objects on the chain from the top down to the object (both included).
    pub chain_length: usize,
    /// The roots holding the top object itself, as gcroot gives them (`root` of
    /// docs/json.md's gcroot); empty when several roots reach it, each through other objects.
    pub roots: Vec<serde_json::Value>,
    /// The static field whose slot holds the chain, when the top is a statics `object[]`
    /// held by a handle (.NET 8's statics).
    pub static_field: Option<String>,
}

#[derive(Serialize)]
pub struct RetainedType {
    pub mt: String,
    pub name: String,
    pub count: u64,
    pub size: u64,
    pub retained: u64,
}

fn retained(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let heap = c.heap()?;
    let top: usize = m
        .get_one::<String>("top")
        .map(|v| crate::addr::parse_count(v))
        .transpose()?
        .unwrap_or(20) as usize;
    let filter = m.get_one::<String>("type").cloned();
    let t0 = std::time::Instant::now();
    let r = clrdata::analysis::dominators::retention(&c.rt, heap, &c.names)?;
    let by_type = r.by_type();
    let millis = t0.elapsed().as_millis() as u64;
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut name = |mt: u64| names.entry(mt).or_insert_with(|| c.type_name(mt)).clone();
    let pass = |n: &str| filter.as_ref().is_none_or(|f| n.contains(f.as_str()));
    // The largest `top` of the objects whose type passes, without sorting them all (a heap
    // can hold tens of millions): the types are few, so the filter is by MethodTable.
    let passing: std::collections::HashSet<u64> = by_type
        .iter()
        .map(|t| t.mt)
        .filter(|&mt| pass(&name(mt)))
        .collect();
    // A min-heap of the `top` largest so far (ties: the lower address first, as the sort
    // below orders them).
    let key = |i: usize| (r.retained[i], std::cmp::Reverse(i));
    let mut best: std::collections::BinaryHeap<std::cmp::Reverse<(u64, std::cmp::Reverse<usize>)>> =
        std::collections::BinaryHeap::with_capacity(top + 1);
    if top > 0 {
        for i in 0..r.addresses.len() {
            if best.len() == top && best.peek().is_some_and(|m| m.0 >= key(i)) {
                continue;
            }
            if filter.is_some() && !passing.contains(&r.mts[i]) {
                continue;
            }
            best.push(std::cmp::Reverse(key(i)));
            if best.len() > top {
                best.pop();
            }
        }
    }
    let largest = |a: &usize, b: &usize| r.retained[*b].cmp(&r.retained[*a]).then(a.cmp(b));
    let mut order: Vec<usize> = best.into_iter().map(|k| (k.0).1 .0).collect();
    order.sort_by(largest);
    let reader = ObjectReader::new(&c.rt, &c.names);
    let mut statics: Option<HashMap<u64, String>> = None;
    let mut objects = Vec::new();
    for i in order {
        if objects.len() >= top {
            break;
        }
        let n = name(r.mts[i]);
        if !pass(&n) {
            continue;
        }
        let chain = r.dominator_chain(i as u32);
        let t = chain[0] as usize;
        let roots: Vec<&clrdata::analysis::roots::Root> = r.roots_of(chain[0]).collect();
        let top_name = name(r.mts[t]);
        // .NET 8 keeps statics in object[]s held by handles: the slot below the top names
        // the static.
        let static_field = match chain.get(1) {
            Some(&below)
                if top_name == "System.Object[]"
                    && roots
                        .iter()
                        .any(|x| matches!(x.source, RootSource::Handle { .. })) =>
            {
                clrdata::analysis::dominators::slot_holding(
                    &c.rt,
                    &c.names,
                    r.addresses[t],
                    r.addresses[below as usize],
                )
                .and_then(|slot| {
                    statics
                        .get_or_insert_with(|| static_slots(&c, &reader))
                        .get(&slot)
                        .cloned()
                })
            }
            _ => None,
        };
        let held_by = HeldBy {
            top: hex(r.addresses[t]),
            top_name,
            chain_length: chain.len(),
            roots: roots.iter().map(|x| root_json(&x.source)).collect(),
            static_field,
        };
        objects.push(RetainedObject {
            held_by,
            address: hex(r.addresses[i]),
            mt: hex(r.mts[i]),
            name: n,
            size: r.sizes[i],
            retained: r.retained[i],
            dominator: r.idom(i as u32).map(|d| hex(r.addresses[d as usize])),
        });
    }
    let types = by_type
        .iter()
        .map(|t| RetainedType {
            mt: hex(t.mt),
            name: name(t.mt),
            count: t.count,
            size: t.size,
            retained: t.retained,
        })
        .filter(|t| pass(&t.name))
        .take(top)
        .collect();
    Ok(Output::rendered(
        "retained",
        Retained {
            live_objects: r.addresses.len() as u64,
            live_bytes: r.live_bytes,
            millis,
            objects,
            types,
            notes: r.notes,
        },
    ))
}

impl Render for Retained {
    fn render(&self) -> String {
        let mut t = format!(
            "{} live objects, {} bytes; retained sizes in {} ms\n\nObjects holding the most:\n",
            self.live_objects, self.live_bytes, self.millis
        );
        let mut tb = table(&[
            "Address",
            "Size",
            "Retained",
            "Dominator",
            "Type",
            "Held by",
        ]);
        for o in &self.objects {
            tb.add_row(vec![
                o.address.trim_start_matches("0x").to_string(),
                o.size.to_string(),
                o.retained.to_string(),
                o.dominator.as_deref().map_or("(roots)".to_string(), |d| {
                    d.trim_start_matches("0x").to_string()
                }),
                o.name.clone(),
                held_by_text(o),
            ]);
        }
        t.push_str(&render(&tb));
        t.push_str("\nTypes holding the most:\n");
        let mut tb = table(&["MT", "Count", "Size", "Retained", "Class Name"]);
        for r in &self.types {
            tb.add_row(vec![
                r.mt.trim_start_matches("0x").to_string(),
                r.count.to_string(),
                r.size.to_string(),
                r.retained.to_string(),
                r.name.clone(),
            ]);
        }
        t.push_str(&render(&tb));
        for n in &self.notes {
            t.push_str(&format!("Note: {n}\n"));
        }
        t
    }
}

/// The `Held by` cell: the root (or the static it stands for), then the top object when it is
/// not the listed one.
fn held_by_text(o: &RetainedObject) -> String {
    let h = &o.held_by;
    let root = if let Some(f) = &h.static_field {
        format!("static {f}")
    } else if h.roots.is_empty() {
        "several roots".to_string()
    } else {
        let mut kinds: Vec<String> = h.roots.iter().map(root_word).collect();
        kinds.dedup();
        kinds.join(", ")
    };
    if h.top == o.address {
        root
    } else {
        format!(
            "{root} via {} {}",
            h.top.trim_start_matches("0x"),
            h.top_name
        )
    }
}

/// A root in a few words: `strong handle 7f..`, `stack of thread 1a2b`, ...
fn root_word(r: &serde_json::Value) -> String {
    let s = |k: &str| {
        r[k].as_str()
            .unwrap_or("?")
            .trim_start_matches("0x")
            .to_string()
    };
    match r["kind"].as_str() {
        Some("handle") => format!(
            "{} handle {}",
            r["handle_kind"].as_str().unwrap_or("?").replace('_', " "),
            s("handle")
        ),
        Some("finalizer_queue") => "f-reachable queue".to_string(),
        Some("thread_statics") => format!(
            "thread statics of thread {:x}",
            r["os_id"].as_u64().unwrap_or(0)
        ),
        Some("stack") => format!("stack of thread {:x}", r["os_id"].as_u64().unwrap_or(0)),
        _ => "root".to_string(),
    }
}

fn flag(name: &'static str, help: &'static str) -> Arg {
    Arg::new(name)
        .long(name)
        .action(ArgAction::SetTrue)
        .help(help)
}

fn obj_mt(c: &Clr, obj: u64) -> u64 {
    clrdata::model::heap::read_method_table(c.rt.memory(), obj).unwrap_or(0)
}

fn obj_size(r: &ObjectReader<'_, Arc<dyn dumpreader::Target>>, obj: u64) -> u64 {
    r.object_mt(obj)
        .ok()
        .and_then(|(_, i)| r.object_size(obj, &i).ok())
        .unwrap_or(0)
}

#[derive(Serialize, Clone)]
pub struct TypeRow {
    pub mt: String,
    pub count: u64,
    pub total_size: u64,
    pub name: String,
}

/// Per-type statistics, largest total first (as `dumpheap -stat`'s JSON).
fn statistics(c: &Clr, objs: &[(u64, u64)]) -> Vec<TypeRow> {
    let mut by: HashMap<u64, (u64, u64)> = HashMap::new();
    for &(obj, size) in objs {
        let e = by.entry(obj_mt(c, obj)).or_default();
        e.0 += 1;
        e.1 += size;
    }
    let mut rows: Vec<TypeRow> = by
        .into_iter()
        .map(|(mt, (count, total_size))| TypeRow {
            mt: hex(mt),
            count,
            total_size,
            name: c.type_name(mt),
        })
        .collect();
    rows.sort_by(|a, b| {
        b.total_size
            .cmp(&a.total_size)
            .then(b.count.cmp(&a.count))
            .then(a.name.cmp(&b.name))
    });
    rows
}

fn statistics_text(rows: &[TypeRow]) -> String {
    let mut t = table(&["MT", "Count", "TotalSize", "Class Name"]);
    for r in rows {
        t.add_row(vec![
            r.mt.trim_start_matches("0x").to_string(),
            r.count.to_string(),
            r.total_size.to_string(),
            r.name.clone(),
        ]);
    }
    render(&t)
}

// ---------------------------------------------------------------------------------- gchandles

#[derive(Serialize)]
pub struct HandleRow {
    pub handle: String,
    pub kind: HandleKind,
    pub object: String,
    pub size: u64,
    #[serde(rename = "type")]
    pub type_name: String,
    pub secondary: Option<String>,
    pub strong: bool,
    pub heap_slot: u32,
}

#[derive(Serialize)]
pub struct HandlesResult {
    pub handles: Option<Vec<HandleRow>>,
    pub statistics: Vec<TypeRow>,
    pub counts: BTreeMap<String, u64>,
    pub total: u64,
    pub null_handles: u64,
    pub tables: usize,
    pub segments: usize,
    pub errors: Vec<String>,
}

fn gchandles(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let r = ObjectReader::new(&c.rt, &c.names);
    let stat = m.get_flag("stat");
    let h = c.rt.gc_handles()?;
    let live: Vec<_> = h.handles.iter().filter(|x| x.object != 0).collect();
    let sizes: Vec<(u64, u64)> = live
        .iter()
        .map(|x| (x.object, obj_size(&r, x.object)))
        .collect();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for x in &live {
        *counts.entry(x.kind.short_name()).or_default() += 1;
    }
    let rows: Vec<HandleRow> = live
        .iter()
        .zip(&sizes)
        .map(|(x, &(_, size))| HandleRow {
            handle: hex(x.address),
            kind: x.kind,
            object: hex(x.object),
            size,
            type_name: c.type_name(obj_mt(&c, x.object)),
            secondary: (x.kind == HandleKind::Dependent).then(|| hex(x.secondary)),
            strong: x.is_strong(),
            heap_slot: x.heap_slot,
        })
        .collect();
    let res = HandlesResult {
        statistics: statistics(&c, &sizes),
        handles: (!stat).then_some(rows),
        counts,
        total: live.len() as u64,
        null_handles: (h.handles.len() - live.len()) as u64,
        tables: h.tables,
        segments: h.segments,
        errors: h.errors.clone(),
    };
    Ok(Output::rendered("gchandles", res))
}

impl Render for HandlesResult {
    fn render(&self) -> String {
        let mut t = String::new();
        if let Some(rows) = &self.handles {
            let mut tb = table(&["Handle", "Type", "Object", "Size", "Data", "Type"]);
            for x in rows {
                tb.add_row(vec![
                    x.handle.trim_start_matches("0x").to_string(),
                    x.kind.short_name(),
                    x.object.trim_start_matches("0x").to_string(),
                    x.size.to_string(),
                    x.secondary
                        .as_deref()
                        .map(|v| v.trim_start_matches("0x").to_string())
                        .unwrap_or_default(),
                    x.type_name.clone(),
                ]);
            }
            t.push_str(&render(&tb));
            t.push('\n');
        }
        t.push_str("Statistics:\n");
        t.push_str(&statistics_text(&self.statistics));
        t.push_str(&format!("Total {} objects\n\nHandles:\n", self.total));
        for (k, n) in &self.counts {
            t.push_str(&format!("    {:<22}{n}\n", format!("{k} Handles:")));
        }
        t.push_str(&format!(
            "({} allocated handles hold no object: freed into the handle caches, or weak handles \
             whose target was collected)\n",
            self.null_handles
        ));
        for e in &self.errors {
            t.push_str(&format!("error: {e}\n"));
        }
        t
    }
}

// ------------------------------------------------------------------------------ finalizequeue

#[derive(Serialize)]
pub struct QueueSegmentRow {
    pub heap: usize,
    pub segment: FinalizerSegment,
    pub start: String,
    pub end: String,
    pub count: u64,
    /// The range as numbers, for the text.
    #[serde(skip)]
    pub range: (u64, u64),
}

#[derive(Serialize)]
pub struct QueueEntryRow {
    pub heap: usize,
    pub slot: String,
    pub object: String,
    pub segment: FinalizerSegment,
    pub size: u64,
    #[serde(rename = "type")]
    pub type_name: String,
    #[serde(skip)]
    pub address: u64,
    #[serde(skip)]
    pub mt: u64,
}

#[derive(Serialize)]
pub struct QueueResult {
    pub segments: Vec<QueueSegmentRow>,
    pub objects: Option<Vec<QueueEntryRow>>,
    pub statistics: Vec<TypeRow>,
    pub total: u64,
    pub ready_for_finalization: u64,
    pub errors: Vec<String>,
    /// The heaps' numbers, in order.
    #[serde(skip)]
    pub heaps: Vec<usize>,
}

fn seg_label(s: FinalizerSegment) -> &'static str {
    match s {
        FinalizerSegment::Gen0 => "generation 0",
        FinalizerSegment::Gen1 => "generation 1",
        FinalizerSegment::Gen2 => "generation 2",
        FinalizerSegment::Loh => "large object heap",
        FinalizerSegment::Poh => "pinned object heap",
        FinalizerSegment::ReadyCritical => "ready (critical)",
        FinalizerSegment::Ready => "ready",
    }
}

fn finalizequeue(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let r = ObjectReader::new(&c.rt, &c.names);
    let stat = m.get_flag("stat");
    let q = c.rt.finalize_queue()?;
    let live: Vec<_> = q.entries.iter().filter(|x| x.object != 0).collect();
    let sizes: Vec<(u64, u64)> = live
        .iter()
        .map(|x| (x.object, obj_size(&r, x.object)))
        .collect();
    let mut segments = Vec::new();
    for h in &q.heaps {
        for &(seg, start, end) in &h.ranges {
            segments.push(QueueSegmentRow {
                heap: h.heap,
                segment: seg,
                start: hex(start),
                end: hex(end),
                count: (end - start) / 8,
                range: (start, end),
            });
        }
    }
    let res = QueueResult {
        objects: (!stat).then(|| {
            live.iter()
                .zip(&sizes)
                .map(|(x, &(_, size))| QueueEntryRow {
                    heap: x.heap,
                    slot: hex(x.slot),
                    object: hex(x.object),
                    segment: x.segment,
                    size,
                    type_name: c.type_name(obj_mt(&c, x.object)),
                    address: x.object,
                    mt: obj_mt(&c, x.object),
                })
                .collect()
        }),
        statistics: statistics(&c, &sizes),
        total: live.len() as u64,
        ready_for_finalization: live.iter().filter(|x| x.segment.is_ready()).count() as u64,
        segments,
        errors: q.errors.clone(),
        heaps: q.heaps.iter().map(|h| h.heap).collect(),
    };
    Ok(Output::rendered("finalizequeue", res))
}

impl Render for QueueResult {
    fn render(&self) -> String {
        let mut t = String::new();
        for &heap in &self.heaps {
            if self.heaps.len() > 1 {
                t.push_str(&format!("Heap {heap}\n"));
            }
            let mut ready = (0u64, u64::MAX, 0u64);
            // SOS's order: generation 0 first (the array holds them the other way round).
            for sg in self.segments.iter().filter(|sg| sg.heap == heap).rev() {
                let (start, end) = sg.range;
                if sg.segment.is_ready() {
                    ready.0 += sg.count;
                    ready.1 = ready.1.min(start);
                    ready.2 = ready.2.max(end);
                } else {
                    t.push_str(&format!(
                        "{} has {} finalizable objects ({}->{})\n",
                        seg_label(sg.segment),
                        sg.count,
                        fmt_addr(start),
                        fmt_addr(end)
                    ));
                }
            }
            t.push_str(&format!(
                "Ready for finalization {} objects ({}->{})\n",
                ready.0,
                fmt_addr(if ready.1 == u64::MAX { 0 } else { ready.1 }),
                fmt_addr(ready.2)
            ));
            t.push_str("------------------------------\n");
        }
        if let Some(objs) = &self.objects {
            let mut tb = table(&["Address", "MT", "Size", "Queue", "Class Name"]);
            for o in objs {
                tb.add_row(vec![
                    fmt_addr(o.address),
                    format!("{:x}", o.mt),
                    o.size.to_string(),
                    seg_label(o.segment).to_string(),
                    o.type_name.clone(),
                ]);
            }
            t.push_str(&render(&tb));
            t.push('\n');
        }
        t.push_str(
            "Statistics for all finalizable objects (including all objects ready for finalization):\n",
        );
        t.push_str(&statistics_text(&self.statistics));
        t.push_str(&format!("Total {} objects\n", self.total));
        for e in &self.errors {
            t.push_str(&format!("error: {e}\n"));
        }
        t
    }
}

// ------------------------------------------------------------------------------------- gcroot

/// Roots printed without `-all`.
pub const DEFAULT_MAX_ROOTS: usize = 64;

#[derive(Serialize)]
pub struct PathStep {
    pub object: String,
    #[serde(rename = "type")]
    pub type_name: String,
    /// The slot of the previous object holding this reference (None for the root's object,
    /// for a dependent handle's edge and for the first object after an elision).
    pub via_slot: Option<String>,
    /// "static variable: Type.Field" or "dependent handle".
    pub note: Option<String>,
}

#[derive(Serialize)]
pub struct RootRow {
    pub root: serde_json::Value,
    #[serde(skip)]
    pub source: RootSource,
    /// For a stack root: the frame holding the slot, when the stack walk places it.
    pub frame: Option<String>,
    pub path: Vec<PathStep>,
    /// The path's length in objects (root object and target included).
    pub length: u64,
    /// Objects left out of a long path: `{"after": index in path, "objects": n}`.
    pub elided: Option<serde_json::Value>,
}

#[derive(Serialize)]
pub struct GcRootJson {
    pub target: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub roots: Vec<RootRow>,
    pub found: usize,
    pub roots_considered: usize,
    /// Whether more roots may hold the target (the search stopped at the limit; `-all`).
    pub limited: bool,
    pub objects_expanded: u64,
    pub bitmap_bytes: u64,
    pub stacks_scanned: Vec<serde_json::Value>,
    pub stack_scan: &'static str,
    pub notes: Vec<String>,
}

fn gcroot(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let target = m
        .get_one::<String>("address")
        .map(|t| parse_address(t))
        .transpose()?
        .ok_or_else(|| CommandError::Usage {
            message: "missing <address>".into(),
        })?;
    let opts = GcRootOptions {
        stacks: !m.get_flag("nostacks"),
        conservative: m.get_flag("conservative"),
        max_roots: (!m.get_flag("all")).then_some(DEFAULT_MAX_ROOTS),
    };
    let heap = c.heap()?;
    let res = find_roots(&c.rt, heap, &c.names, target, opts)?;
    let r = ObjectReader::new(&c.rt, &c.names);
    let mut statics: Option<HashMap<u64, String>> = None;
    let mut stacks: HashMap<u64, Option<ThreadStack>> = HashMap::new();
    let walker = StackWalker::for_target(&c.rt, &c.names);
    let threads = if opts.stacks {
        c.rt.threads().unwrap_or_default()
    } else {
        Vec::new()
    };
    let mut rows = Vec::new();
    for p in &res.paths {
        let mut path = Vec::new();
        let gap = p.elided.map(|(at, _)| at);
        for (i, &o) in p.path.iter().enumerate() {
            let type_name = c.type_name(obj_mt(&c, o));
            let via = if i == 0 { None } else { p.slots[i - 1] };
            let mut note = None;
            if i > 0 && via.is_none() && gap != Some(i) {
                note = Some("dependent handle".to_string());
            }
            // .NET 8 keeps statics in object[]s held by handles: the slot names the static.
            if i == 1
                && matches!(p.root.source, RootSource::Handle { .. })
                && path_is_object_array(&path)
            {
                if let Some(slot) = via {
                    // The modules of the path's own types first (no heap walk), then those of
                    // every type on the heap.
                    let path_mts: Vec<u64> = p.path.iter().map(|&o| obj_mt(&c, o)).collect();
                    let name = static_slot_names(&r, &path_mts).remove(&slot).or_else(|| {
                        statics
                            .get_or_insert_with(|| static_slots(&c, &r))
                            .get(&slot)
                            .cloned()
                    });
                    if let Some(name) = name {
                        note = Some(format!("static variable: {name}"));
                    }
                }
            }
            path.push(PathStep {
                object: hex(o),
                type_name,
                via_slot: via.map(hex),
                note,
            });
        }
        let frame = match &p.root.source {
            RootSource::Stack {
                os_id,
                slot,
                frame,
                explicit_frame,
                ..
            } => {
                let st = stacks.entry(*os_id).or_insert_with(|| {
                    threads
                        .iter()
                        .find(|t| t.os_id == *os_id)
                        .map(|t| walker.walk(t))
                });
                st.as_ref()
                    .and_then(|st| frame_line(st, *frame, *explicit_frame, *slot))
            }
            _ => None,
        };
        rows.push(RootRow {
            root: root_json(&p.root.source),
            source: p.root.source.clone(),
            frame,
            path,
            length: p.length,
            elided: p
                .elided
                .map(|(at, n)| serde_json::json!({"after": at - 1, "objects": n})),
        });
    }
    let out = GcRootJson {
        target: hex(target),
        type_name: c.type_name(obj_mt(&c, target)),
        found: rows.len(),
        roots: rows,
        roots_considered: res.roots_considered,
        limited: res.stopped_at_max,
        objects_expanded: res.objects_expanded,
        bitmap_bytes: res.bitmap_bytes,
        stacks_scanned: res
            .stacks_scanned
            .iter()
            .map(|s| {
                serde_json::json!({
                    "os_id": s.os_id,
                    "managed_id": s.managed_id,
                    "mode": s.mode,
                    "from": hex(s.from),
                    "to": hex(s.to),
                    "frames": s.frames,
                    "conservative": s.conservative.iter().map(|c| serde_json::json!({
                        "from": hex(c.from),
                        "to": hex(c.to),
                        "reason": c.reason,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect(),
        stack_scan: if !res.stacks {
            "none (-nostacks)"
        } else if opts.conservative {
            "conservative: every stack word and register pointing at or into an object"
        } else {
            "precise: each frame's live slots from its GC info, each explicit Frame's protected \
             references"
        },
        notes: res.notes.clone(),
    };
    Ok(Output::rendered("gcroot", out))
}

/// A root for JSON: addresses as hex strings.
fn root_json(r: &RootSource) -> serde_json::Value {
    match r {
        RootSource::Handle {
            handle,
            handle_kind,
        } => {
            serde_json::json!({"kind": "handle", "handle": hex(*handle), "handle_kind": handle_kind})
        }
        RootSource::FinalizerQueue { slot } => {
            serde_json::json!({"kind": "finalizer_queue", "slot": hex(*slot)})
        }
        RootSource::ThreadStatics {
            os_id,
            managed_id,
            slot,
        } => serde_json::json!({
            "kind": "thread_statics",
            "os_id": os_id,
            "managed_id": managed_id,
            "slot": hex(*slot),
        }),
        RootSource::Stack {
            os_id,
            managed_id,
            slot,
            register,
            offset,
            interior,
            pinned,
            value,
            frame,
            explicit_frame,
            found_by,
        } => serde_json::json!({
            "kind": "stack",
            "os_id": os_id,
            "managed_id": managed_id,
            "slot": slot.map(hex),
            "register": register,
            "offset": offset,
            "interior": interior,
            "pinned": pinned,
            "value": hex(*value),
            "frame_sp": frame.map(|f| hex(f.0)),
            "frame_ip": frame.map(|f| hex(f.1)),
            "explicit_frame": explicit_frame.map(hex),
            "found_by": found_by,
        }),
    }
}

fn path_is_object_array(path: &[PathStep]) -> bool {
    path.first()
        .is_some_and(|p| p.type_name == "System.Object[]")
}

/// Static fields of the loaded types of the modules with objects on the heap, by slot.
fn static_slots(
    c: &Clr,
    r: &ObjectReader<'_, Arc<dyn dumpreader::Target>>,
) -> HashMap<u64, String> {
    let Ok(heap) = c.heap() else {
        return HashMap::new();
    };
    let mts: Vec<u64> = heap.census(&c.rt).types.iter().map(|t| t.mt).collect();
    static_slot_names(r, &mts)
}

/// The frame line of a stack root: the frame reporting it (an explicit Frame, or the managed
/// frame at `frame`'s SP and IP); for a root of a conservative scan of the whole stack, the
/// innermost frame with SP <= its slot.
fn frame_line(
    st: &ThreadStack,
    frame: Option<(u64, u64)>,
    explicit: Option<u64>,
    slot: Option<u64>,
) -> Option<String> {
    let f = match (explicit, frame) {
        (Some(x), _) => st.frames.iter().find(|f| f.frame == Some(x))?,
        (None, Some((sp, ip))) => st
            .frames
            .iter()
            .find(|f| f.frame.is_none() && f.sp == sp && f.ip == ip)?,
        (None, None) => {
            let slot = slot?;
            st.frames.iter().rev().find(|f| f.sp <= slot)?
        }
    };
    // As SOS: an explicit Frame by its address and class, with the method it stands for.
    let what = match (&f.frame_name, &f.method) {
        (Some(n), Some(m)) => format!("[{n}] ({m})"),
        (Some(n), None) => format!("[{n}]"),
        (None, m) => m.clone()?,
    };
    Some(format!("{:x} {:x} {what}", f.frame.unwrap_or(f.sp), f.ip))
}

impl Render for GcRootJson {
    fn render(&self) -> String {
        gcroot_text(self)
    }
}

fn gcroot_text(o: &GcRootJson) -> String {
    let mut t = String::new();
    let mut last: Option<String> = None;
    // The frame line last printed in this thread's section (a frame's slots share it).
    let mut last_frame: Option<&str> = None;
    for row in &o.roots {
        let (section, line) = match &row.source {
            RootSource::Handle {
                handle,
                handle_kind,
            } => (
                "HandleTable:".to_string(),
                format!("    {} ({})", fmt_addr(*handle), handle_kind.name()),
            ),
            RootSource::FinalizerQueue { slot } => (
                "Finalizer Queue:".to_string(),
                format!("    {} (finalizer root)", fmt_addr(*slot)),
            ),
            RootSource::ThreadStatics { os_id, slot, .. } => (
                "Thread statics:".to_string(),
                format!("    {} (thread {os_id:x})", fmt_addr(*slot)),
            ),
            RootSource::Stack {
                os_id,
                slot,
                register,
                offset,
                interior,
                pinned,
                value,
                found_by,
                ..
            } => {
                let mut l = String::new();
                let section = format!("Thread {os_id:x}:");
                if last.as_deref() != Some(section.as_str()) {
                    last_frame = None;
                }
                if let Some(f) = &row.frame {
                    if last_frame != Some(f.as_str()) {
                        l.push_str(&format!("    {f}\n"));
                    }
                    last_frame = Some(f.as_str());
                }
                // As SOS: a slot by the register it is relative to and its address, a
                // register by its name; then the value it holds.
                let place = match (slot, register) {
                    (Some(s), Some(r)) if *offset < 0 => {
                        format!("{r}-{:x}: {}", offset.unsigned_abs(), fmt_addr(*s))
                    }
                    (Some(s), Some(r)) => format!("{r}+{offset:x}: {}", fmt_addr(*s)),
                    (Some(s), None) => fmt_addr(*s),
                    (None, Some(r)) => format!("{r}:"),
                    (None, None) => String::new(),
                };
                l.push_str(&format!(
                    "        {place} = {}{}{}{}",
                    fmt_addr(*value),
                    if *interior { " (interior)" } else { "" },
                    if *pinned { " (pinned)" } else { "" },
                    if *found_by == RefSource::Conservative && o.stack_scan.starts_with("precise") {
                        " (conservative: the frame's GC info was not read)"
                    } else {
                        ""
                    }
                ));
                (format!("Thread {os_id:x}:"), l)
            }
        };
        if last.as_deref() != Some(section.as_str()) {
            if last.is_some() {
                t.push('\n');
            }
            t.push_str(&section);
            t.push('\n');
            last = Some(section);
        }
        t.push_str(&line);
        t.push('\n');
        for (i, step) in row.path.iter().enumerate() {
            if let Some(e) = &row.elided {
                if e["after"].as_u64().map(|a| a as usize + 1) == Some(i) {
                    t.push_str(&format!(
                        "          -> ... {} more objects ...\n",
                        e["objects"].as_u64().unwrap_or(0)
                    ));
                }
            }
            t.push_str(&format!(
                "          -> {:x} {}{}\n",
                parse_address(&step.object).unwrap_or(0),
                step.type_name,
                step.note
                    .as_ref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            ));
        }
    }
    if !o.roots.is_empty() {
        t.push('\n');
    }
    t.push_str(&format!("Found {} unique roots.\n", o.found));
    if o.limited {
        t.push_str(&format!(
            "(stopped at {} roots; -all lists every root)\n",
            o.found
        ));
    }
    if o.stacks_scanned.is_empty() && o.stack_scan.starts_with("none") {
        t.push_str(&format!(
            "(no stack roots: -nostacks; {} roots, {} objects expanded)\n",
            o.roots_considered, o.objects_expanded
        ));
    } else if o.stack_scan.starts_with("conservative") {
        t.push_str(&format!(
            "(stack roots from a conservative scan of {} thread stacks: a stale slot can appear \
             as a root; {} roots, {} objects expanded)\n",
            o.stacks_scanned.len(),
            o.roots_considered,
            o.objects_expanded
        ));
    } else {
        let fallback: Vec<String> = o
            .stacks_scanned
            .iter()
            .flat_map(|s| {
                let os = s["os_id"].as_u64().unwrap_or(0);
                s["conservative"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |c| {
                        format!(
                            "thread {os:x}: {}..{} scanned conservatively: {}",
                            c["from"].as_str().unwrap_or(""),
                            c["to"].as_str().unwrap_or(""),
                            c["reason"].as_str().unwrap_or("")
                        )
                    })
            })
            .collect();
        t.push_str(&format!(
            "(stack roots from the GC info of the frames of {} thread stacks{}; {} roots, {} \
             objects expanded)\n",
            o.stacks_scanned.len(),
            if fallback.is_empty() {
                String::new()
            } else {
                format!(", {} ranges scanned conservatively", fallback.len())
            },
            o.roots_considered,
            o.objects_expanded
        ));
        for f in fallback {
            t.push_str(&format!("note: {f}\n"));
        }
    }
    for n in &o.notes {
        t.push_str(&format!("note: {n}\n"));
    }
    t
}
