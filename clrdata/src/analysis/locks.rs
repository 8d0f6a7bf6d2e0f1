//! Monitors (`lock`, `Monitor.Enter/Wait`): who owns which object's lock, who waits for it, and
//! the wait-for graph between threads (`syncblk`, `deadlock`).
//!
//! The runtime's lock structures are read by [`crate::data::syncblocks`]; this module joins them
//! with the threads' stacks into the wait-for graph, and finds the thin locks held in object
//! headers (one heap walk).

use crate::data::syncblocks::ReadSyncBlocks;
use crate::data::syncblocks::{
    decode_header, object_header, BlockingItem, Header, ManagedLock, SyncBlockData, SyncTable,
    ThinLockData, WaitKind,
};
use crate::data::threads::ThreadData;
use crate::discovery::layout::LockScheme;
use crate::discovery::runtime::Runtime;
use crate::error::ClrError;
use crate::model::fields::{field, int, obj, object_fields};
use crate::model::heap::GcHeap;
use crate::model::names::TypeNames;
use crate::model::objects::{FieldValue, ObjectReader};
use crate::model::stack::ThreadStack;
use dumpreader::Memory;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// The monitors: the sync table with each SyncBlock's owner, recursion and waiters. .NET 8-10:
/// the runtime's own AwareLocks ([`ReadSyncBlocks::sync_table`]). .NET 11 (Monitor is
/// managed): each SyncBlock's `System.Threading.Lock` read by field name, and every thread's
/// managed `ThreadBlockingInfo` list (the thread-static `ThreadBlockingInfo.t_first`, CoreLib
/// 11.0.0: `{_objectPtr, _objectKind, _timeoutMs, _next}`, kinds 2 Lock and 3 Condition)
/// for what it waits on ([`SyncTable::blocking`]); a thread in Monitor.Wait waits on a
/// `Condition` of the lock (`Condition._lock`), and is in its SyncBlock's `wait_threads`.
pub fn monitors<M: Memory>(rt: &Runtime<M>, names: &TypeNames) -> crate::Result<SyncTable> {
    let managed = rt
        .layout
        .locks
        .is_some_and(|l| matches!(l.scheme, LockScheme::Managed { .. }));
    if !managed {
        return rt.sync_table();
    }
    let r = ObjectReader::new(rt, names);
    let read = |a: u64| read_managed_lock(&r, a);
    let mut table = rt.sync_table_with(&read)?;
    let blocking = managed_blocking_items(&r)?;
    for b in blocking.iter().filter(|b| b.kind == WaitKind::MonitorWait) {
        if let Some(sb) = table
            .sync_blocks
            .iter_mut()
            .find(|s| s.lock_object != 0 && s.lock_object == b.lock_object)
        {
            sb.wait_threads.push(b.thread);
        }
    }
    table.blocking = Some(blocking);
    Ok(table)
}

/// A `System.Threading.Lock`'s fields, by name.
pub fn read_managed_lock<M: Memory>(r: &ObjectReader<'_, M>, a: u64) -> crate::Result<ManagedLock> {
    let (mt, f) = object_fields(r, a, "System.Threading.Lock")?;
    let ty = r.type_name(mt);
    if ty != "System.Threading.Lock" {
        return Err(ClrError::corrupt(
            "System.Threading.Lock",
            a,
            format!("the object is a {ty}"),
        ));
    }
    let get = |name: &str| {
        int(&f, name).ok_or_else(|| ClrError::NoSuchField {
            type_name: ty.clone(),
            field: name.to_owned(),
            is_static: false,
        })
    };
    Ok(ManagedLock {
        owning_thread_id: get("_owningThreadId")? as i32,
        state: get("_state")? as u32,
        recursion_count: get("_recursionCount")? as u32,
    })
}

/// `ThreadBlockingInfo.ObjectKind` (CoreLib 11.0.0 literals; 0 and 1, the native Monitor's,
/// are obsolete).
const BLOCKING_KIND_LOCK: i64 = 2;
const BLOCKING_KIND_CONDITION: i64 = 3;
/// Bound on a thread's blocking list (nested waits).
const MAX_BLOCKING: usize = 64;

/// Every thread's managed blocking items (.NET 11), innermost first per thread, in thread
/// order: a Lock being entered, or a Condition waited on (given as its lock).
fn managed_blocking_items<M: Memory>(r: &ObjectReader<'_, M>) -> crate::Result<Vec<BlockingItem>> {
    const TYPE: &str = "System.Threading.ThreadBlockingInfo";
    let Some(mt) = r.corelib_type(TYPE) else {
        // Never loaded: no thread ever blocked on a managed lock.
        return Ok(Vec::new());
    };
    let statics = r
        .fields(mt, 0, true)
        .map_err(|e| e.context(format!("the fields of {TYPE}")))?;
    let t_first = statics
        .iter()
        .find(|f| f.attr == "TLstatic" && f.name == "t_first")
        .ok_or_else(|| ClrError::NoSuchField {
            type_name: TYPE.to_owned(),
            field: "t_first".to_owned(),
            is_static: true,
        })?;
    let slots =
        r.thread_static_addresses(t_first.declaring_mt, t_first.offset, t_first.element_type)?;
    let m = r.rt.memory();
    let mut out = Vec::new();
    for (_, thread, slot) in slots {
        let mut p = m
            .read_u64(slot)
            .map_err(|_| ClrError::read("ThreadBlockingInfo.t_first", slot))?;
        let mut n = 0;
        while p != 0 {
            n += 1;
            if n > MAX_BLOCKING {
                return Err(ClrError::corrupt(
                    "ThreadBlockingInfo list",
                    thread,
                    format!("more than {MAX_BLOCKING} items (a loop?)"),
                ));
            }
            let f = r
                .value_type(mt, p)
                .map_err(|e| e.context(format!("the ThreadBlockingInfo at {p:#x}")))?;
            let ptr = |name: &str| match field(&f, name).map(|x| &x.value) {
                Some(FieldValue::Pointer { value }) => Ok(*value),
                _ => Err(ClrError::NoSuchField {
                    type_name: TYPE.to_owned(),
                    field: name.to_owned(),
                    is_static: false,
                }),
            };
            let kind = int(&f, "_objectKind").ok_or_else(|| ClrError::NoSuchField {
                type_name: TYPE.to_owned(),
                field: "_objectKind".to_owned(),
                is_static: false,
            })?;
            let timeout_ms = int(&f, "_timeoutMs").unwrap_or(-1) as i32;
            let slot_of_object = ptr("_objectPtr")?;
            let object = m
                .read_u64(slot_of_object)
                .map_err(|_| ClrError::read("ThreadBlockingInfo._objectPtr", slot_of_object))?;
            match kind {
                BLOCKING_KIND_LOCK => out.push(BlockingItem {
                    thread,
                    kind: WaitKind::MonitorEnter,
                    lock_object: object,
                    timeout_ms,
                }),
                BLOCKING_KIND_CONDITION => {
                    let (_, cf) = object_fields(r, object, "System.Threading.Condition")?;
                    out.push(BlockingItem {
                        thread,
                        kind: WaitKind::MonitorWait,
                        lock_object: obj(&cf, "_lock"),
                        timeout_ms,
                    });
                }
                k => {
                    return Err(ClrError::corrupt(
                        "ThreadBlockingInfo",
                        p,
                        format!("object kind {k}: not a Lock (2) or Condition (3)"),
                    ))
                }
            }
            p = ptr("_next")?;
        }
    }
    Ok(out)
}

/// Thin locks held in object headers: one heap walk. Returns them with the walk's errors.
pub fn thin_locks<M: Memory>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    threads: &[ThreadData],
) -> (Vec<ThinLockData>, Vec<String>) {
    if let Err(e) = rt.require(crate::discovery::layout::Capability::Locks) {
        return (Vec::new(), vec![e.to_string()]);
    }
    let by_id: HashMap<u32, u64> = threads.iter().map(|t| (t.managed_id, t.address)).collect();
    let m = rt.memory();
    let mut out = Vec::new();
    let mut iter = heap.objects(rt);
    for o in iter.by_ref() {
        if o.is_free {
            continue;
        }
        out.extend(thin_lock_at(m, o.address, o.mt, |id| {
            by_id.get(&id).copied()
        }));
    }
    let errors = iter.errors().iter().map(|e| e.to_string()).collect();
    (out, errors)
}

/// The thin lock held in the header of the object at `object` (MethodTable `mt`), if any,
/// its owner Thread found by `owner` from the header's thread id. None when the header is
/// unreadable or holds no thin lock.
pub fn thin_lock_at<M: Memory>(
    m: &M,
    object: u64,
    mt: u64,
    owner: impl Fn(u32) -> Option<u64>,
) -> Option<ThinLockData> {
    let v = m.read_u32(object.wrapping_sub(4)).ok()?;
    let Header::ThinLock {
        thread_id,
        recursion,
    } = decode_header(v)
    else {
        return None;
    };
    Some(ThinLockData {
        object,
        mt,
        thread_id,
        thread: owner(thread_id),
        recursion,
    })
}

/// How the awaited lock was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitSource {
    /// Thread::m_DebugBlockingInfo.
    BlockingInfo,
    /// The Monitor FCALL's HelperMethodFrame_1OBJ.
    HelperFrame,
}

/// One thread blocked on a monitor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockWait {
    /// The waiting Thread.
    pub thread: u64,
    /// Its managed id.
    pub managed_id: u32,
    /// Its OS id.
    pub os_id: u64,
    /// Entering or waiting for a pulse.
    pub kind: WaitKind,
    /// The lock object.
    pub object: u64,
    /// Its SyncBlock (0 when only the header knows the lock: a thin lock).
    pub sync_block: u64,
    /// The owner Thread, when the lock is held.
    pub owner: Option<u64>,
    /// How the lock was found.
    pub source: WaitSource,
    /// The innermost frame with a method (the Monitor call it blocks in).
    pub blocked_in: Option<String>,
    /// The first frame below the Monitor methods (where the program waits).
    pub wait_frame: Option<String>,
    /// Problems met.
    pub notes: Vec<String>,
}

/// A cycle of the wait-for graph: each thread waits for a lock the next one holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cycle {
    /// The threads, each waiting for the next (the last for the first), starting at the
    /// lowest Thread address.
    pub threads: Vec<u64>,
    /// For each thread, the lock object it waits for (held by the next thread).
    pub objects: Vec<u64>,
}

/// A thread that waits, directly or through others, for a cycle it is not part of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WaitsOnCycle {
    /// The thread.
    pub thread: u64,
    /// Which cycle (index into [`Deadlocks::cycles`]).
    pub cycle: usize,
    /// The owners it waits through, ending at a thread of the cycle.
    pub through: Vec<u64>,
}

/// The wait-for graph over monitor owners and waiters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Deadlocks {
    /// Every thread blocked on a monitor.
    pub waits: Vec<LockWait>,
    /// The cycles (deadlocks).
    pub cycles: Vec<Cycle>,
    /// Threads blocked behind a cycle.
    pub waiting_on_cycles: Vec<WaitsOnCycle>,
    /// Problems met.
    pub notes: Vec<String>,
}

/// The methods a thread blocked on a monitor waits in, above the program's own frame: the
/// Monitor class, and on .NET 11 (whose Monitor is managed) the `System.Threading.Lock` and
/// `Condition` it calls and the managed wait subsystem they wait in (the 11.0.0 DAC's stacks of
/// deadlock-net11 and hang-net11: `WaitSubsystem+ThreadWaitInfo.Wait`, `WaitSubsystem.Wait`,
/// `WaitHandle.WaitOneNoCheck`, `Lock.TryEnterSlow`, `Lock.Enter`, `Monitor.Enter`, or
/// `Condition.Wait`).
const MONITOR_MACHINERY: &[&str] = &[
    "System.Threading.Monitor.",
    "System.Threading.Lock.",
    "System.Threading.Condition.",
    "System.Threading.WaitSubsystem.",
    "System.Threading.WaitSubsystem+",
    "System.Threading.WaitHandle.",
];

fn is_monitor_machinery(method: &str) -> bool {
    MONITOR_MACHINERY.iter().any(|p| method.starts_with(p))
}

fn is_enter_method(name: &str) -> bool {
    let n = name.split('(').next().unwrap_or(name);
    matches!(
        n,
        "System.Threading.Monitor.ReliableEnter"
            | "System.Threading.Monitor.Enter"
            | "System.Threading.Monitor.TryEnter"
            | "System.Threading.Monitor.ReliableEnterTimeout"
    )
}

/// Finds what each thread waits for and the cycles of the wait-for graph.
///
/// `stacks` are the threads' managed stacks (by Thread address), used to name the frames and,
/// for a thread with no debugger blocking item, to find the lock through the Monitor FCALL's
/// HelperMethodFrame_1OBJ.
pub fn find_deadlocks<M: Memory>(
    rt: &Runtime<M>,
    threads: &[ThreadData],
    table: &SyncTable,
    stacks: &HashMap<u64, ThreadStack>,
) -> Deadlocks {
    let mut notes = Vec::new();
    let by_sb: HashMap<u64, &SyncBlockData> = table
        .sync_blocks
        .iter()
        .map(|s| (s.sync_block, s))
        .collect();
    let by_id: HashMap<u32, u64> = threads.iter().map(|t| (t.managed_id, t.address)).collect();
    let mut waits = Vec::new();
    for t in threads {
        if t.os_id == 0 {
            continue;
        }
        let st = stacks.get(&t.address);
        let blocked_in = st.and_then(|s| s.methods().next().map(str::to_string));
        let wait_frame = st.and_then(|s| {
            s.methods()
                .find(|m| !is_monitor_machinery(m))
                .map(str::to_string)
        });
        let mut w = LockWait {
            thread: t.address,
            managed_id: t.managed_id,
            os_id: t.os_id,
            kind: WaitKind::MonitorEnter,
            object: 0,
            sync_block: 0,
            owner: None,
            source: WaitSource::BlockingInfo,
            blocked_in,
            wait_frame,
            notes: Vec::new(),
        };
        // .NET 11: the managed blocking items the table carries (a Lock, not a SyncBlock).
        if let Some(blocking) = &table.blocking {
            if let Some(b) = blocking.iter().find(|b| b.thread == t.address) {
                w.kind = b.kind;
                match table
                    .sync_blocks
                    .iter()
                    .find(|s| s.lock_object != 0 && s.lock_object == b.lock_object)
                {
                    Some(sb) => {
                        w.sync_block = sb.sync_block;
                        w.object = sb.object;
                        w.owner =
                            (sb.locked && sb.holding_thread != 0).then_some(sb.holding_thread);
                    }
                    // A System.Threading.Lock used as such (`lock (Lock)`), not a monitor.
                    None => {
                        w.object = b.lock_object;
                        w.notes.push(format!(
                            "it waits on the System.Threading.Lock {:#x}, which no sync block \
                             holds",
                            b.lock_object
                        ));
                    }
                }
                waits.push(w);
            }
            continue;
        }
        let items = match rt.blocking_items(t.address) {
            Ok(i) => i,
            Err(e) => {
                notes.push(format!("thread {:#x} ({}): {e}", t.os_id, t.managed_id));
                Vec::new()
            }
        };
        if let Some(&(monitor, kind, _)) = items.first() {
            w.kind = kind;
            w.sync_block = monitor;
            match by_sb.get(&monitor) {
                Some(sb) => {
                    w.object = sb.object;
                    w.owner = (sb.locked && sb.holding_thread != 0).then_some(sb.holding_thread);
                }
                None => w.notes.push(format!(
                    "it waits on the monitor {monitor:#x}, which no live sync table entry names"
                )),
            }
            waits.push(w);
            continue;
        }
        // No blocking item: a Monitor enter FCALL's frame may still name the object.
        let Some(st) = st else { continue };
        let Some(f) = st.frames.iter().find(|f| {
            f.frame_name.as_deref() == Some("HelperMethodFrame_1OBJ")
                && f.method.as_deref().is_some_and(is_enter_method)
        }) else {
            continue;
        };
        let Some(obj) = f.frame.and_then(|fr| rt.helper_frame_object(fr)) else {
            w.notes
                .push("in a Monitor enter call whose lock object is not readable".into());
            waits.push(w);
            continue;
        };
        w.source = WaitSource::HelperFrame;
        w.object = obj;
        match object_header(rt.memory(), obj) {
            Ok(Header::SyncBlock { index }) => {
                if let Some(sb) = table.sync_blocks.iter().find(|s| s.index == index) {
                    w.sync_block = sb.sync_block;
                    w.owner = (sb.locked && sb.holding_thread != 0).then_some(sb.holding_thread);
                }
            }
            Ok(Header::ThinLock { thread_id, .. }) => match by_id.get(&thread_id) {
                Some(&o) => w.owner = Some(o),
                None => w.notes.push(format!(
                    "thin lock held by thread id {thread_id}, which no thread has"
                )),
            },
            Ok(_) => {}
            Err(e) => w.notes.push(e.to_string()),
        }
        waits.push(w);
    }
    // The wait-for graph: a thread entering a held lock waits for its owner.
    let edge: HashMap<u64, (u64, u64)> = waits
        .iter()
        .filter(|w| w.kind == WaitKind::MonitorEnter)
        .filter_map(|w| w.owner.map(|o| (w.thread, (o, w.object))))
        .collect();
    let mut cycles: Vec<Cycle> = Vec::new();
    let mut cycle_of: HashMap<u64, usize> = HashMap::new();
    let mut starts: Vec<u64> = edge.keys().copied().collect();
    starts.sort_unstable();
    for &s in &starts {
        let mut path = vec![s];
        let mut cur = s;
        while let Some(&(next, _)) = edge.get(&cur) {
            if cycle_of.contains_key(&next) {
                break;
            }
            if let Some(pos) = path.iter().position(|&p| p == next) {
                let mut ts = path[pos..].to_vec();
                let min = ts
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, t)| **t)
                    .map(|(i, _)| i);
                ts.rotate_left(min.unwrap_or(0));
                let objects = ts.iter().map(|t| edge[t].1).collect();
                for t in &ts {
                    cycle_of.insert(*t, cycles.len());
                }
                cycles.push(Cycle {
                    threads: ts,
                    objects,
                });
                break;
            }
            if path.len() > threads.len() + 1 {
                break;
            }
            path.push(next);
            cur = next;
        }
    }
    let mut waiting_on_cycles = Vec::new();
    for &s in &starts {
        if cycle_of.contains_key(&s) {
            continue;
        }
        let mut through = Vec::new();
        let mut cur = s;
        let mut seen = HashSet::new();
        while let Some(&(next, _)) = edge.get(&cur) {
            if !seen.insert(next) {
                break;
            }
            through.push(next);
            if let Some(&c) = cycle_of.get(&next) {
                waiting_on_cycles.push(WaitsOnCycle {
                    thread: s,
                    cycle: c,
                    through: through.clone(),
                });
                break;
            }
            cur = next;
        }
    }
    Deadlocks {
        waits,
        cycles,
        waiting_on_cycles,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_words() {
        // Values built from syncblk.h's bit definitions.
        assert_eq!(decode_header(0), Header::Empty);
        assert_eq!(
            decode_header(0x4000_0000),
            Header::Empty,
            "finalizer-run bit only"
        );
        assert_eq!(
            decode_header(0x0800_0001),
            Header::SyncBlock { index: 1 },
            "deadlock.dmp's LockA header"
        );
        assert_eq!(
            decode_header(0x0C00_1234),
            Header::HashCode { hash: 0x1234 }
        );
        assert_eq!(
            decode_header(0x0000_0005),
            Header::ThinLock {
                thread_id: 5,
                recursion: 1
            }
        );
        assert_eq!(
            decode_header(0x0002_0007),
            Header::ThinLock {
                thread_id: 7,
                recursion: 3
            }
        );
        // A recursion level without a thread id holds no lock.
        assert_eq!(decode_header(0x0001_0000), Header::Empty);
    }
}
