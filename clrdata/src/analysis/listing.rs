//! The async listing SOS's `dumpasync` prints, as data: which chains of the async analysis a
//! query selects (completed or not, by box address, MethodTable or type), coalesced by their
//! types, with the threads blocked on each chain (from their stacks), the state machines'
//! fields, per-type counts and the other tasks of the heap. Front ends only render it.

use crate::analysis::asyncsm::{self, AsyncAnalysis, AsyncBox, HoistedKind};
use crate::analysis::causality;
use crate::analysis::tasks::TaskStatus;
use crate::discovery::layout::Capability;
use crate::discovery::runtime::Runtime;
use crate::model::heap::GcHeap;
use crate::model::names::TypeNames;
use crate::model::objects::{FieldValue, ObjectReader};
use crate::model::stack::StackWalker;
use crate::ClrError;
use dumpreader::{Memory, Target};
use std::collections::{BTreeMap, BTreeSet};

/// What the async analyses read: managed fields by name (Task, boxes, continuations).
pub const ASYNC_NEEDS: &[Capability] = &[
    Capability::HeapWalk,
    Capability::TypeNames,
    Capability::Fields,
];

/// What causality reads besides: the threads' stacks (who blocks where) and their locks.
pub const CAUSALITY_NEEDS: &[Capability] = &[
    Capability::HeapWalk,
    Capability::TypeNames,
    Capability::Fields,
    Capability::Stacks,
    Capability::Locks,
];

/// Which chains to list and what to add to them.
#[derive(Debug, Clone, Default)]
pub struct AsyncQuery {
    /// Keep completed boxes (SOS `--completed`).
    pub completed: bool,
    /// Only chains holding the box at this address.
    pub address: Option<u64>,
    /// Only chains holding a box of this MethodTable.
    pub mt: Option<u64>,
    /// Only chains holding a box whose state machine type or method contains this text.
    pub type_contains: Option<String>,
    /// Chains of the same types counted once.
    pub coalesce: bool,
    /// Counts by state machine type.
    pub stats: bool,
    /// Each box's state machine fields.
    pub fields: bool,
    /// The other tasks of the heap.
    pub tasks: bool,
}

/// One field of a state machine, as its author named it.
#[derive(Debug, Clone)]
pub struct HoistedField {
    /// The field's own (compiler-generated) name.
    pub name: String,
    /// The name as the user wrote it (`<attempt>5__2` → `attempt`, `<>u__1` → `awaiter 1`).
    pub display_name: String,
    pub kind: HoistedKind,
    pub type_name: String,
    /// The value as text (`0x...` for a reference, the number, ...).
    pub value: String,
    /// A string field's characters (at most 1024).
    pub string: Option<String>,
}

/// A thread blocked synchronously on a task of a chain, proven from its stack.
#[derive(Debug, Clone)]
pub struct BlockedThread {
    pub os_id: u64,
    pub managed_id: u32,
    /// The outermost waiting frame.
    pub via: Option<String>,
    /// The task it waits on (a box of the chain, or the task its innermost box awaits).
    pub task: u64,
}

/// One listed chain.
#[derive(Debug, Clone)]
pub struct ListedChain {
    /// Indexes into [`AsyncAnalysis::boxes`], innermost first.
    pub boxes: Vec<usize>,
    /// How many chains share these types (1 unless coalesced).
    pub count: usize,
    /// The box of the chain the outermost box continues back into (a ring).
    pub cycle_back_to: Option<usize>,
    /// Threads blocked on a task of the chain; `None` where the stacks are not read.
    pub blocked_threads: Option<Vec<BlockedThread>>,
    /// Per box (same order), its state machine's fields, when asked for.
    pub fields: Option<Vec<Vec<HoistedField>>>,
}

/// A task of the heap that is not an async box.
#[derive(Debug, Clone)]
pub struct OtherTask {
    pub address: u64,
    pub mt: u64,
    pub type_name: String,
    pub flags: u32,
}

impl OtherTask {
    pub fn status(&self) -> &'static str {
        asyncsm::task_status_of(self.flags)
    }
}

/// The listing: the analysis it was made from and what the query selected of it.
#[derive(Debug)]
pub struct AsyncListing {
    pub analysis: AsyncAnalysis,
    pub chains: Vec<ListedChain>,
    /// (state machine type, boxes), fewest first, when asked for.
    pub stats: Option<Vec<(String, usize)>>,
    pub tasks: Option<Vec<OtherTask>>,
    /// Distinct boxes on the listed chains.
    pub shown_boxes: usize,
    pub completed_skipped: usize,
    /// Why no chain has its blocked threads (the stacks could not be read).
    pub blocked_unavailable: Option<ClrError>,
}

impl AsyncListing {
    /// The boxes' analysis-wide facts: the box at `i`.
    pub fn box_at(&self, i: usize) -> &AsyncBox {
        &self.analysis.boxes[i]
    }

    /// Whether `object` is one of the async boxes, or the task owning a runtime-async method's
    /// frame (an awaited object that is neither is shown as what the chain waits on).
    pub fn is_box(&self, object: u64) -> bool {
        self.analysis.boxes.iter().any(|b| {
            b.address == object || b.runtime_async.as_ref().is_some_and(|f| f.task == object)
        })
    }
}

/// Threads blocked on tasks, by chain index of `a` (needs the stacks).
pub fn blocked_by_chain<M: Memory + Target>(
    rt: &Runtime<M>,
    names: &TypeNames,
    a: &AsyncAnalysis,
) -> crate::Result<BTreeMap<usize, Vec<BlockedThread>>> {
    for cap in CAUSALITY_NEEDS {
        rt.require(*cap)?;
    }
    let r = ObjectReader::new(rt, names);
    let walker = StackWalker::for_target(rt, names);
    let scans = causality::thread_scans(&walker)?;
    let k = causality::analyze(&r, a, &scans);
    let mut out: BTreeMap<usize, Vec<BlockedThread>> = BTreeMap::new();
    for w in &k.thread_waits {
        for &ci in &w.chains {
            out.entry(ci).or_default().push(BlockedThread {
                os_id: w.os_id,
                managed_id: w.managed_id,
                via: w.via.clone(),
                task: w.task,
            });
        }
    }
    Ok(out)
}

/// The state machine's fields (SOS's `--fields`), read where the box holds them.
pub fn state_machine_fields<M: Memory>(r: &ObjectReader<'_, M>, b: &AsyncBox) -> Vec<HoistedField> {
    let (Some(mt), Some(at)) = (b.state_machine_mt, b.state_machine_address) else {
        return Vec::new();
    };
    r.fields(mt, at, false)
        .map(|fs| {
            fs.iter()
                .map(|f| {
                    let (display_name, kind) = asyncsm::hoisted_field(&f.name);
                    let string = match &f.value {
                        FieldValue::Object { string, .. } => string.clone(),
                        _ => None,
                    };
                    HoistedField {
                        name: f.name.clone(),
                        display_name,
                        kind,
                        type_name: f.type_name.clone(),
                        value: f.value.display(),
                        string,
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The variables a runtime-async frame's continuation holds (.NET 11), as `--fields` lines:
/// `name` says where the async debug info puts it (`var 3 at +0x40`), `display_name` is the
/// program's name; when they cannot be read, one line says why.
pub fn runtime_async_fields<M: Memory>(
    h: &mut crate::analysis::runtime_async::HeldReader<'_, '_, M>,
    address: u64,
    f: &crate::analysis::runtime_async::RuntimeAsyncFrame,
) -> Vec<HoistedField> {
    match h.held(address, f) {
        Ok(vs) => vs
            .into_iter()
            .map(|v| {
                let string = match &v.value {
                    FieldValue::Object { string, .. } => string.clone(),
                    _ => None,
                };
                use crate::analysis::runtime_async::HeldKind;
                HoistedField {
                    name: format!("{} at +{:#x}", v.raw, v.offset),
                    display_name: v.name,
                    kind: match v.kind {
                        HeldKind::Argument => asyncsm::HoistedKind::Argument,
                        HeldKind::Local => asyncsm::HoistedKind::Local,
                        HeldKind::This => asyncsm::HoistedKind::This,
                        HeldKind::Other => asyncsm::HoistedKind::Other,
                    },
                    type_name: v.type_name,
                    value: v.value.display(),
                    string,
                }
            })
            .collect(),
        Err(e) => vec![HoistedField {
            name: "locals".into(),
            display_name: "locals not read".into(),
            kind: asyncsm::HoistedKind::Other,
            type_name: String::new(),
            value: format!("<{e}>"),
            string: None,
        }],
    }
}

/// Lists the async chains of the heap as `q` asks.
pub fn list<M: Memory + Target>(
    rt: &Runtime<M>,
    names: &TypeNames,
    heap: &GcHeap,
    q: &AsyncQuery,
) -> AsyncListing {
    let a = asyncsm::analyze(rt, names, heap);
    let keep = |b: &AsyncBox| q.completed || !b.completed();
    let completed_skipped = a.boxes.iter().filter(|b| !keep(b)).count();
    let mut chains: Vec<Vec<usize>> = Vec::new();
    // the analysis' chains each shown chain comes from (for the blocked threads)
    let mut origin: BTreeMap<Vec<usize>, Vec<usize>> = BTreeMap::new();
    for (ci, ch) in a.chains.iter().enumerate() {
        let ch: Vec<usize> = ch.iter().copied().filter(|&i| keep(&a.boxes[i])).collect();
        if !ch.is_empty() {
            origin.entry(ch.clone()).or_default().push(ci);
        }
        if ch.is_empty() || chains.contains(&ch) {
            continue;
        }
        if let Some(addr) = q.address {
            if !ch.iter().any(|&i| a.boxes[i].address == addr) {
                continue;
            }
        }
        if let Some(mt) = q.mt {
            if !ch.iter().any(|&i| a.boxes[i].mt == mt) {
                continue;
            }
        }
        if let Some(t) = &q.type_contains {
            if !ch.iter().any(|&i| {
                a.boxes[i].state_machine_type.contains(t.as_str())
                    || asyncsm::async_method_name(&a.boxes[i].state_machine_type)
                        .contains(t.as_str())
            }) {
                continue;
            }
        }
        chains.push(ch);
    }
    // A box awaited by several methods is on several chains: count it once.
    let shown: BTreeSet<usize> = chains.iter().flatten().copied().collect();
    let mut groups: Vec<(Vec<usize>, usize)> = Vec::new();
    if q.coalesce {
        let mut ix: BTreeMap<Vec<&str>, usize> = BTreeMap::new();
        for ch in chains {
            let key: Vec<&str> = ch
                .iter()
                .map(|&i| a.boxes[i].state_machine_type.as_str())
                .collect();
            match ix.get(&key) {
                Some(&g) => groups[g].1 += 1,
                None => {
                    ix.insert(key, groups.len());
                    groups.push((ch, 1));
                }
            }
        }
    } else {
        groups = chains.into_iter().map(|c| (c, 1)).collect();
    }
    let stats = q.stats.then(|| {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for &i in &shown {
            *counts
                .entry(a.boxes[i].state_machine_type.as_str())
                .or_default() += 1;
        }
        let mut v: Vec<(String, usize)> =
            counts.into_iter().map(|(t, n)| (t.to_owned(), n)).collect();
        v.sort_by(|x, y| x.1.cmp(&y.1).then(x.0.cmp(&y.0)));
        v
    });
    let r = ObjectReader::new(rt, names);
    let index: BTreeMap<u64, usize> = a
        .boxes
        .iter()
        .enumerate()
        .map(|(i, b)| (b.address, i))
        .collect();
    let cycle_back = |ch: &[usize]| -> Option<usize> {
        let last = *ch.last()?;
        a.boxes[last]
            .continuations
            .iter()
            .filter_map(|x| index.get(x).copied())
            .find(|i| ch.contains(i))
    };
    let (blocked, blocked_unavailable) = match blocked_by_chain(rt, names, &a) {
        Ok(b) => (Some(b), None),
        Err(e) => (None, Some(e)),
    };
    let blocked_of = |ch: &Vec<usize>| -> Option<Vec<BlockedThread>> {
        let b = blocked.as_ref()?;
        let mut v: Vec<BlockedThread> = Vec::new();
        for ci in origin.get(ch).into_iter().flatten() {
            for t in b.get(ci).into_iter().flatten() {
                if !v.iter().any(|x| x.os_id == t.os_id) {
                    v.push(t.clone());
                }
            }
        }
        Some(v)
    };
    let tasks = q.tasks.then(|| other_tasks(&r, names, rt, &a, q.completed));
    let mut held = None;
    let listed = groups
        .iter()
        .map(|(ch, n)| ListedChain {
            boxes: ch.clone(),
            count: *n,
            cycle_back_to: cycle_back(ch),
            blocked_threads: blocked_of(ch),
            fields: q.fields.then(|| {
                ch.iter()
                    .map(|&i| match &a.boxes[i].runtime_async {
                        Some(f) => runtime_async_fields(
                            held.get_or_insert_with(|| {
                                crate::analysis::runtime_async::HeldReader::new(&r)
                            }),
                            a.boxes[i].address,
                            f,
                        ),
                        None => state_machine_fields(&r, &a.boxes[i]),
                    })
                    .collect()
            }),
        })
        .collect();
    AsyncListing {
        chains: listed,
        stats,
        tasks,
        shown_boxes: shown.len(),
        completed_skipped,
        blocked_unavailable,
        analysis: a,
    }
}

/// The heap's tasks that are not async boxes, by address; completed ones only if asked.
fn other_tasks<M: Memory>(
    r: &ObjectReader<'_, M>,
    names: &TypeNames,
    rt: &Runtime<M>,
    a: &AsyncAnalysis,
    completed: bool,
) -> Vec<OtherTask> {
    let mut v: Vec<u64> = a.facts.tasks.iter().copied().collect();
    v.sort_unstable();
    v.into_iter()
        .filter_map(|t| {
            let (mt, _) = r.object_mt(t).ok()?;
            let fs = r.fields(mt, t + 8, false).ok()?;
            let flags = fs
                .iter()
                .rev()
                .find(|f| f.name == "m_stateFlags")
                .and_then(|f| match f.value {
                    FieldValue::Int { value } => Some(value as u32),
                    FieldValue::UInt { value } => Some(value as u32),
                    _ => None,
                })
                .unwrap_or(0);
            if !completed && TaskStatus::from_flags(flags).is_completed() {
                return None;
            }
            Some(OtherTask {
                address: t,
                mt,
                type_name: names.name_or_note(rt, mt),
                flags,
            })
        })
        .collect()
}
