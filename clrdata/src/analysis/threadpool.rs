//! The .NET 8 portable thread pool (`threadpool`), its queued work (`threadpoolqueue`) and
//! `ConcurrentQueue<T>` contents (`dumpconcurrentqueue`).
//!
//! Sources (dotnet/runtime v8.0.4 System.Private.CoreLib; every field name below was confirmed
//! in the corpus dumps' metadata):
//! - `ThreadPool.s_workQueue` is the `ThreadPoolWorkQueue`: `workItems` and
//!   `highPriorityWorkItems` (`ConcurrentQueue<object>`), `_assignableWorkItemQueues`
//!   (`ConcurrentQueue<object>[]`, used only when `s_assignableWorkItemQueueCount` > 0).
//!   Per-thread local queues: `ThreadPoolWorkQueue+WorkStealingQueueList._queues`
//!   (`s_queues` since 9.0; `WorkStealingQueue[]`), each with `m_array` (object[]) between `m_headIndex` and
//!   `m_tailIndex` (masked by `m_mask`).
//! - A work item is an `IThreadPoolWorkItem` or a delegate: `QueueUserWorkItemCallback*`
//!   (`_callback`, `_state`), a `Task` (`m_action`, `m_stateObject`), a `TimerQueueTimer`, ...
//! - `ConcurrentQueue<T>`: `_head` → `ConcurrentQueueSegment<T>` → `_nextSegment`; each
//!   segment has `_slots` (`Slot[]` of `{Item, SequenceNumber}`), `_slotsMask`,
//!   `_headAndTail` (`PaddedHeadAndTail {Head, Tail}`) and `_frozenForEnqueues` (then `Tail`
//!   carries `FreezeOffset` = 2 × the slot count). Items are the positions Head..Tail; a slot at
//!   position p holds a published item when its SequenceNumber is p + 1.
//! - `PortableThreadPool.ThreadPoolInstance`: `_minThreads`, `_maxThreads`, `_cpuUtilization`,
//!   `_separated.counts._data` (bits 0-15 NumProcessingWork, 16-31 NumExistingThreads, 32-47
//!   NumThreadsGoal: `PortableThreadPool.ThreadCounts`), `_separated.numRequestedWorkers`.
//!   Worker threads carry the runtime's `TS_TPWorkerThread` thread state bit (0x01000000).

use crate::analysis::tasks::{self, corelib_static_object, object_type};
use crate::data::threads::ReadThreads;
use crate::model::delegates::{self, DelegateMethod};
use crate::model::fields::{field, int, obj, object_fields, struct_fields};
use crate::model::objects::{FieldValue, ObjectReader};
use crate::model::stack::StackWalker;
use dumpreader::Memory;
use serde::Serialize;
use std::collections::HashSet;

/// Bound on the segments of one ConcurrentQueue.
pub const MAX_SEGMENTS: usize = 4096;
/// Bound on the items read from one queue.
pub const MAX_ITEMS: usize = 1_000_000;

// ----------------------------------------------------------------------------- ConcurrentQueue

/// One item of a ConcurrentQueue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueItem {
    /// The segment holding it.
    pub segment: u64,
    /// Its position (Head-relative positions grow from the segment's Head).
    pub position: i64,
    /// Where the slot's `Item` lives.
    pub slot_address: u64,
    /// The item: an object reference or a value (a struct as `value_type` with its address).
    pub value: FieldValue,
    /// For a reference: the object's type; for a struct: its type.
    pub type_name: Option<String>,
    /// For a struct item: its fields (name, value).
    pub fields: Vec<(String, FieldValue)>,
    /// False when the slot's SequenceNumber says the enqueue was not yet published.
    pub published: bool,
}

/// One segment of a ConcurrentQueue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueueSegment {
    /// The `ConcurrentQueueSegment<T>`.
    pub address: u64,
    /// `_slots`.
    pub slots: u64,
    /// The slot count.
    pub capacity: u64,
    /// `_headAndTail.Head`.
    pub head: i64,
    /// `_headAndTail.Tail` (the freeze offset removed when frozen).
    pub tail: i64,
    /// `_frozenForEnqueues`.
    pub frozen: bool,
    /// Items between Head and Tail.
    pub count: u64,
}

/// A ConcurrentQueue's contents.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConcurrentQueueData {
    /// The queue.
    pub address: u64,
    /// Its type.
    pub type_name: String,
    /// The element type `T` (from the slot's `Item` field).
    pub element_type: Option<String>,
    /// Segments from `_head`.
    pub segments: Vec<QueueSegment>,
    /// The items, oldest first.
    pub items: Vec<QueueItem>,
    /// What could not be read.
    pub errors: Vec<String>,
}

/// Reads the items of the `ConcurrentQueue<T>` at `addr` (at most `limit`).
pub fn concurrent_queue<M: Memory>(
    r: &ObjectReader<'_, M>,
    addr: u64,
    limit: usize,
) -> crate::Result<ConcurrentQueueData> {
    let (mt, f) = object_fields(r, addr, "ConcurrentQueue")?;
    let type_name = r.type_name(mt);
    let head = match field(&f, "_head") {
        Some(h) => match h.value {
            FieldValue::Object { address, .. } => address,
            _ => 0,
        },
        None => {
            return Err(crate::ClrError::NoSuchField {
                type_name,
                field: "_head (not a ConcurrentQueue<T>)".into(),
                is_static: false,
            })
        }
    };
    // T from the queue's instantiation; else from the first slot's Item field.
    let element_type = r
        .mt(mt)
        .and_then(|i| i.type_args.first().copied())
        .map(|t| r.type_name(t));
    let mut out = ConcurrentQueueData {
        address: addr,
        type_name,
        element_type,
        segments: Vec::new(),
        items: Vec::new(),
        errors: Vec::new(),
    };
    let mut seen = HashSet::new();
    let mut seg = head;
    while seg != 0 {
        if !seen.insert(seg) {
            out.errors
                .push(format!("segment {seg:#x} met twice (a cycle): stopped"));
            break;
        }
        if out.segments.len() >= MAX_SEGMENTS {
            out.errors
                .push(format!("more than {MAX_SEGMENTS} segments: cut"));
            break;
        }
        match read_segment(r, seg, limit.saturating_sub(out.items.len()), &mut out) {
            Ok(next) => seg = next,
            Err(e) => {
                out.errors.push(format!(
                    "segment {seg:#x}: {e}; the rest of the queue is lost"
                ));
                break;
            }
        }
    }
    Ok(out)
}

fn read_segment<M: Memory>(
    r: &ObjectReader<'_, M>,
    seg: u64,
    limit: usize,
    out: &mut ConcurrentQueueData,
) -> crate::Result<u64> {
    let (_, f) = object_fields(r, seg, "ConcurrentQueueSegment")?;
    let slots = obj(&f, "_slots");
    let next = obj(&f, "_nextSegment");
    let no_field = |name: &str| crate::ClrError::NoSuchField {
        type_name: "ConcurrentQueueSegment".into(),
        field: name.into(),
        is_static: false,
    };
    let ht = field(&f, "_headAndTail").ok_or_else(|| no_field("_headAndTail"))?;
    let ht = struct_fields(r, ht, "_headAndTail")?;
    let head = int(&ht, "Head").ok_or_else(|| no_field("_headAndTail.Head"))?;
    let mut tail = int(&ht, "Tail").ok_or_else(|| no_field("_headAndTail.Tail"))?;
    let frozen = int(&f, "_frozenForEnqueues").unwrap_or(0) != 0;
    let (smt, sinfo) = r.object_mt(slots).map_err(|e| e.context("_slots"))?;
    let arr = r
        .array(slots, &sinfo)
        .map_err(|e| e.context("_slots"))?
        .ok_or_else(|| {
            crate::ClrError::corrupt(
                "_slots",
                slots,
                format!("a {}, not an array", r.type_name(smt)),
            )
        })?;
    let cap = arr.length;
    if frozen {
        tail -= 2 * cap as i64;
    }
    let count = (tail - head).clamp(0, cap as i64) as u64;
    if tail - head > cap as i64 || tail < head {
        out.errors.push(format!(
            "segment {seg:#x}: Head {head} and Tail {tail} do not fit {cap} slots"
        ));
    }
    out.segments.push(QueueSegment {
        address: seg,
        slots,
        capacity: cap,
        head,
        tail,
        frozen,
        count,
    });
    if cap == 0 {
        return Ok(next);
    }
    let slot_mt = arr.element_mt;
    let slot_size = arr.component_size as u64;
    for k in 0..count.min(limit as u64) {
        let pos = head + k as i64;
        let index = pos.rem_euclid(cap as i64) as u64;
        let slot_addr = arr.data + index * slot_size;
        let sf = r
            .fields(slot_mt, slot_addr, false)
            .map_err(|e| e.context(format!("slot {index} at {slot_addr:#x}")))?;
        let item = field(&sf, "Item").ok_or_else(|| crate::ClrError::NoSuchField {
            type_name: "ConcurrentQueueSegment+Slot".into(),
            field: "Item".into(),
            is_static: false,
        })?;
        if out.element_type.is_none() {
            out.element_type = Some(item.type_name.clone());
        }
        let seq = int(&sf, "SequenceNumber");
        let (type_name, fields) = match &item.value {
            FieldValue::Object { address, .. } => (object_type(r, *address), Vec::new()),
            FieldValue::ValueType {
                address,
                mt: Some(m),
            } => (
                Some(r.type_name(*m)),
                r.fields(*m, *address, false)
                    .map(|fs| fs.into_iter().map(|f| (f.name, f.value)).collect())
                    .unwrap_or_default(),
            ),
            _ => (Some(item.type_name.clone()), Vec::new()),
        };
        out.items.push(QueueItem {
            segment: seg,
            position: pos,
            slot_address: item.address.unwrap_or(slot_addr),
            value: item.value.clone(),
            type_name,
            fields,
            published: seq == Some(pos + 1),
        });
    }
    Ok(next)
}

// ------------------------------------------------------------------------------- work items

/// What a queued work item will run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkItem {
    /// The queued object.
    pub address: u64,
    /// Its type.
    pub type_name: String,
    /// `global`, `global-high-priority`, `assignable[N]` or `local`.
    pub queue: String,
    /// For a local item: the `WorkStealingQueue`.
    pub local_queue: Option<u64>,
    /// `Task`, `QueueUserWorkItem`, `Timer`, `Delegate` or `Other`.
    pub kind: &'static str,
    /// The delegate run (0: none found).
    pub callback: u64,
    /// Its method, or why it is unknown (`None` without a delegate).
    pub method: Option<crate::Result<DelegateMethod>>,
    /// The state passed to it (0: none).
    pub state: u64,
    /// Its type.
    pub state_type: Option<String>,
    /// For a task: its status (`WaitingToRun`).
    pub task_status: Option<&'static str>,
}

/// A thread-local work-stealing queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LocalQueue {
    /// The `WorkStealingQueue`.
    pub address: u64,
    /// `m_headIndex`.
    pub head: i64,
    /// `m_tailIndex`.
    pub tail: i64,
    /// Items found.
    pub items: usize,
}

/// Everything queued to the thread pool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WorkQueue {
    /// `ThreadPool.s_workQueue` (0 when not found).
    pub work_queue: u64,
    /// Items, global queues first (high priority, normal, assignable), then local ones.
    pub items: Vec<WorkItem>,
    /// The local queues.
    pub local_queues: Vec<LocalQueue>,
    /// What could not be read.
    pub errors: Vec<String>,
}

/// Describes one queued object.
pub fn work_item<M: Memory>(
    r: &ObjectReader<'_, M>,
    w: &StackWalker<'_, M>,
    addr: u64,
    queue: &str,
) -> WorkItem {
    let mut wi = WorkItem {
        address: addr,
        type_name: String::new(),
        queue: queue.to_string(),
        local_queue: None,
        kind: "Other",
        callback: 0,
        method: None,
        state: 0,
        state_type: None,
        task_status: None,
    };
    let (mt, f) = match object_fields(r, addr, "work item") {
        Ok(v) => v,
        Err(e) => {
            wi.type_name = format!("<unreadable: {e}>");
            return wi;
        }
    };
    wi.type_name = r.type_name(mt);
    if field(&f, "m_stateFlags").is_some() && field(&f, "m_action").is_some() {
        wi.kind = "Task";
        if let Ok(t) = tasks::read_task(r, w, addr) {
            wi.callback = t.action;
            wi.method = t.method;
            wi.state = t.state_object;
            wi.state_type = t.state_type;
            wi.task_status = Some(t.status);
        }
    } else if wi
        .type_name
        .starts_with("System.Threading.QueueUserWorkItemCallback")
    {
        wi.kind = "QueueUserWorkItem";
        wi.callback = obj(&f, "_callback");
        wi.state = obj(&f, "_state");
    } else if field(&f, "_timerCallback").is_some() {
        wi.kind = "Timer";
        wi.callback = obj(&f, "_timerCallback");
        wi.state = obj(&f, "_state");
    } else if field(&f, "_methodPtr").is_some() {
        wi.kind = "Delegate";
        wi.callback = addr;
    }
    if wi.kind != "Task" {
        if wi.callback != 0 {
            wi.method = Some(delegates::delegate_method(r, w, wi.callback));
        }
        wi.state_type = object_type(r, wi.state);
    }
    wi
}

/// Everything queued: the global queues, then the thread-local ones.
pub fn work_queue<M: Memory>(r: &ObjectReader<'_, M>, w: &StackWalker<'_, M>) -> WorkQueue {
    let mut out = WorkQueue::default();
    if let Err(e) = r.rt.require(crate::discovery::layout::Capability::Fields) {
        out.errors.push(e.to_string());
        return out;
    }
    match corelib_static_object(r, "System.Threading.ThreadPool", "s_workQueue") {
        // The pool was never used: nothing queued (`work_queue` stays 0).
        Ok(0) => {}
        Ok(q) => {
            out.work_queue = q;
            global_queues(r, w, q, &mut out);
        }
        Err(e) => out.errors.push(format!("the global work queue: {e}")),
    }
    // The field is `_queues` in 8.0's CoreLib, `s_queues` since 9.0 (each dump's metadata
    // names the one it has).
    const LIST: &str = "System.Threading.ThreadPoolWorkQueue+WorkStealingQueueList";
    let queues = match corelib_static_object(r, LIST, "_queues") {
        Err(crate::ClrError::NoSuchField { .. }) => corelib_static_object(r, LIST, "s_queues"),
        other => other,
    };
    match queues {
        Ok(0) => {}
        Ok(a) => local_queues(r, w, a, &mut out),
        Err(e) => out.errors.push(format!("the local work queues: {e}")),
    }
    out
}

fn add_queue_items<M: Memory>(
    r: &ObjectReader<'_, M>,
    w: &StackWalker<'_, M>,
    cq: u64,
    name: &str,
    out: &mut WorkQueue,
) {
    if cq == 0 {
        return;
    }
    match concurrent_queue(r, cq, MAX_ITEMS) {
        Ok(d) => {
            for e in d.errors {
                out.errors.push(format!("{name} queue {cq:#x}: {e}"));
            }
            for it in d.items {
                match it.value {
                    FieldValue::Object { address, .. } if address != 0 => {
                        out.items.push(work_item(r, w, address, name))
                    }
                    FieldValue::Object { .. } => out.errors.push(format!(
                        "{name} queue {cq:#x}: position {} holds null",
                        it.position
                    )),
                    v => out.errors.push(format!(
                        "{name} queue {cq:#x}: position {} is not an object ({})",
                        it.position,
                        v.display()
                    )),
                }
            }
        }
        Err(e) => out.errors.push(format!("{name} queue: {e}")),
    }
}

fn global_queues<M: Memory>(
    r: &ObjectReader<'_, M>,
    w: &StackWalker<'_, M>,
    q: u64,
    out: &mut WorkQueue,
) {
    let f = match object_fields(r, q, "ThreadPoolWorkQueue") {
        Ok((_, f)) => f,
        Err(e) => {
            out.errors.push(e.to_string());
            return;
        }
    };
    add_queue_items(
        r,
        w,
        obj(&f, "highPriorityWorkItems"),
        "global-high-priority",
        out,
    );
    add_queue_items(r, w, obj(&f, "workItems"), "global", out);
    add_queue_items(
        r,
        w,
        obj(&f, "lowPriorityWorkItems"),
        "global-low-priority",
        out,
    );
    let assignable = obj(&f, "_assignableWorkItemQueues");
    if assignable != 0 {
        for (i, cq) in references(r, assignable, 4096, out).into_iter().enumerate() {
            add_queue_items(r, w, cq, &format!("assignable[{i}]"), out);
        }
    }
}

/// The references of an object[] (nulls included), at most `max`.
fn references<M: Memory>(
    r: &ObjectReader<'_, M>,
    arr: u64,
    max: u64,
    out: &mut WorkQueue,
) -> Vec<u64> {
    let a = match r.object_mt(arr).and_then(|(_, i)| r.array(arr, &i)) {
        Ok(Some(a)) if a.component_size == 8 => a,
        Ok(_) => {
            out.errors
                .push(format!("{arr:#x} is not an array of references"));
            return Vec::new();
        }
        Err(e) => {
            out.errors
                .push(crate::ClrError::corrupt("array", arr, format!("{e}")).to_string());
            return Vec::new();
        }
    };
    let mut v = Vec::new();
    for i in 0..a.length.min(max) {
        match r.rt.memory().read_u64(a.data + 8 * i) {
            Ok(p) => v.push(p),
            Err(_) => out.errors.push(
                crate::ClrError::corrupt(
                    "array",
                    arr,
                    format!("element {i} at {:#x} is not in the dump", a.data + 8 * i),
                )
                .to_string(),
            ),
        }
    }
    v
}

fn local_queues<M: Memory>(
    r: &ObjectReader<'_, M>,
    w: &StackWalker<'_, M>,
    arr: u64,
    out: &mut WorkQueue,
) {
    for wsq in references(r, arr, 65536, out) {
        if wsq == 0 {
            continue;
        }
        let f = match object_fields(r, wsq, "WorkStealingQueue") {
            Ok((_, f)) => f,
            Err(e) => {
                out.errors.push(e.to_string());
                continue;
            }
        };
        let head = int(&f, "m_headIndex").unwrap_or(0);
        let tail = int(&f, "m_tailIndex").unwrap_or(0);
        let mask = int(&f, "m_mask").unwrap_or(0);
        let array = obj(&f, "m_array");
        let slots = if array != 0 {
            references(r, array, 1 << 20, out)
        } else {
            Vec::new()
        };
        let mut n = 0;
        if tail < head || tail - head > slots.len() as i64 {
            out.errors.push(
                crate::ClrError::corrupt(
                    "WorkStealingQueue",
                    wsq,
                    format!("head {head}, tail {tail} do not fit {} slots", slots.len()),
                )
                .to_string(),
            );
        } else {
            for p in head..tail {
                let i = (p & mask) as usize;
                match slots.get(i) {
                    Some(&item) if item != 0 => {
                        let mut wi = work_item(r, w, item, "local");
                        wi.local_queue = Some(wsq);
                        out.items.push(wi);
                        n += 1;
                    }
                    // A null slot between head and tail: taken by a thief or the owner.
                    _ => {}
                }
            }
        }
        out.local_queues.push(LocalQueue {
            address: wsq,
            head,
            tail,
            items: n,
        });
    }
}

// ------------------------------------------------------------------------------ thread pool

/// A thread pool worker thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Worker {
    /// The runtime's Thread.
    pub thread: u64,
    /// Managed thread id.
    pub managed_id: u32,
    /// OS thread id.
    pub os_id: u64,
    /// The ThreadState bits' names.
    pub state: Vec<&'static str>,
    /// What it is doing, from its stack (when a walker was given).
    pub activity: Option<PoolThreadActivity>,
}

/// What a thread the runtime marks as a pool thread is doing, from its managed stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PoolThreadActivity {
    /// `worker` (`PortableThreadPool+WorkerThread.WorkerThreadStart`), `gate` (the gate
    /// thread, also marked as a pool thread), `wait` (a registered-wait thread) or `unknown`.
    pub role: &'static str,
    /// For a worker: `running a work item` (`ThreadPoolWorkQueue.Dispatch` on its stack),
    /// `idle` (waiting on the pool's semaphore) or `in the pool`; else `-`.
    pub activity: &'static str,
    /// The innermost managed method (where it is, or blocks).
    pub innermost: Option<String>,
    /// For a worker running a work item: the outermost method called from `Dispatch` outside
    /// `System.Threading` (the work item's own code, as far as the stack shows).
    pub work_item_method: Option<String>,
    /// Why the stack walk stopped early, if it did.
    pub incomplete: Option<String>,
}

/// Classifies a pool thread from its stack (innermost first).
pub fn pool_thread_activity(st: &crate::model::stack::ThreadStack) -> PoolThreadActivity {
    let methods: Vec<&str> = st.methods().collect();
    let has = |n: &str| methods.iter().any(|m| m.contains(n));
    let role = if has("PortableThreadPool+WorkerThread.WorkerThreadStart") {
        "worker"
    } else if has("PortableThreadPool+GateThread.GateThreadStart") {
        "gate"
    } else if has("PortableThreadPool+WaitThread.WaitThreadStart") {
        "wait"
    } else {
        "unknown"
    };
    let dispatch = methods
        .iter()
        .position(|m| m.starts_with("System.Threading.ThreadPoolWorkQueue.Dispatch("));
    let activity = match (role, dispatch) {
        ("worker", Some(_)) => "running a work item",
        ("worker", None) if has("LowLevelLifoSemaphore") => "idle",
        ("worker", None) => "in the pool",
        _ => "-",
    };
    let work_item_method = dispatch.and_then(|d| {
        methods[..d]
            .iter()
            .rev()
            .find(|m| !m.starts_with("System.Threading."))
            .map(|m| m.to_string())
    });
    PoolThreadActivity {
        role,
        activity,
        innermost: methods.first().map(|m| m.to_string()),
        work_item_method,
        incomplete: st.incomplete.clone(),
    }
}

/// The portable thread pool's state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ThreadPoolInfo {
    /// `PortableThreadPool.ThreadPoolInstance` (0 when not found).
    pub instance: u64,
    /// `_cpuUtilization` (%).
    pub cpu_utilization: Option<i64>,
    /// `_minThreads`.
    pub min_threads: Option<i64>,
    /// `_maxThreads`.
    pub max_threads: Option<i64>,
    /// `_separated.counts._data`, raw.
    pub counts_raw: Option<u64>,
    /// NumProcessingWork (bits 0-15): workers running work items.
    pub processing_work: Option<i64>,
    /// NumExistingThreads (bits 16-31).
    pub existing_threads: Option<i64>,
    /// NumThreadsGoal (bits 32-47).
    pub threads_goal: Option<i64>,
    /// `_separated.numRequestedWorkers`.
    pub requested_workers: Option<i64>,
    /// `_numBlockedThreads` (cooperative blocking).
    pub blocked_threads: Option<i64>,
    /// `_threadAdjustmentIntervalMs`.
    pub thread_adjustment_interval_ms: Option<i64>,
    /// Hill climbing: `HillClimbing.ThreadPoolHillClimber` fields, when it exists.
    pub hill_climbing: Option<HillClimbing>,
    /// Threads the runtime marks as thread pool workers.
    pub workers: Vec<Worker>,
    /// What could not be read.
    pub errors: Vec<String>,
}

/// A few fields of the hill climbing algorithm's state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HillClimbing {
    /// The `HillClimbing` object.
    pub address: u64,
    /// `_lastThreadCount`.
    pub last_thread_count: Option<i64>,
    /// `_totalSamples`.
    pub total_samples: Option<i64>,
    /// `_currentSampleMs`.
    pub current_sample_ms: Option<i64>,
    /// `_secondsElapsedSinceLastChange` is a double: not read. `_accumulatedCompletionCount`.
    pub accumulated_completion_count: Option<i64>,
}

/// The thread pool's state (portable .NET 8 pool). With a walker holding the threads'
/// registers ([`StackWalker::for_target`]), each pool thread's stack tells what it is doing.
pub fn thread_pool<M: Memory>(
    r: &ObjectReader<'_, M>,
    w: Option<&StackWalker<'_, M>>,
) -> ThreadPoolInfo {
    let mut out = ThreadPoolInfo::default();
    if let Err(e) = r.rt.require(crate::discovery::layout::Capability::Fields) {
        out.errors.push(e.to_string());
        return out;
    }
    match corelib_static_object(
        r,
        "System.Threading.PortableThreadPool",
        "ThreadPoolInstance",
    ) {
        // The pool was never started (`instance` stays 0).
        Ok(0) => {}
        Ok(p) => {
            out.instance = p;
            match object_fields(r, p, "PortableThreadPool") {
                Ok((_, f)) => {
                    out.cpu_utilization = int(&f, "_cpuUtilization");
                    out.min_threads = int(&f, "_minThreads");
                    out.max_threads = int(&f, "_maxThreads");
                    out.blocked_threads = int(&f, "_numBlockedThreads");
                    out.thread_adjustment_interval_ms = int(&f, "_threadAdjustmentIntervalMs");
                    match field(&f, "_separated").map(|s| struct_fields(r, s, "_separated")) {
                        Some(Ok(sep)) => {
                            out.requested_workers = int(&sep, "numRequestedWorkers");
                            match field(&sep, "counts")
                                .map(|c| struct_fields(r, c, "_separated.counts"))
                            {
                                Some(Ok(c)) => {
                                    if let Some(d) = int(&c, "_data") {
                                        let d = d as u64;
                                        out.counts_raw = Some(d);
                                        let part = |s: u32| ((d >> s) as u16 as i16) as i64;
                                        out.processing_work = Some(part(0));
                                        out.existing_threads = Some(part(16));
                                        out.threads_goal = Some(part(32));
                                    } else {
                                        out.errors
                                            .push("_separated.counts._data not readable".into());
                                    }
                                }
                                Some(Err(e)) => out.errors.push(e.to_string()),
                                None => out.errors.push("_separated has no counts field".into()),
                            }
                        }
                        Some(Err(e)) => out.errors.push(e.to_string()),
                        None => out
                            .errors
                            .push("PortableThreadPool has no _separated field".into()),
                    }
                }
                Err(e) => out.errors.push(e.to_string()),
            }
        }
        Err(e) => out.errors.push(format!("the portable thread pool: {e}")),
    }
    match corelib_static_object(
        r,
        "System.Threading.PortableThreadPool+HillClimbing",
        "ThreadPoolHillClimber",
    ) {
        Ok(0) => {}
        Ok(h) => match object_fields(r, h, "HillClimbing") {
            Ok((_, f)) => {
                out.hill_climbing = Some(HillClimbing {
                    address: h,
                    last_thread_count: int(&f, "_lastThreadCount"),
                    total_samples: int(&f, "_totalSamples"),
                    current_sample_ms: int(&f, "_currentSampleMs"),
                    accumulated_completion_count: int(&f, "_accumulatedCompletionCount"),
                })
            }
            Err(e) => out.errors.push(e.to_string()),
        },
        // Not loaded: the pool never adjusted its thread count.
        Err(_) => {}
    }
    match r.rt.threads() {
        Ok(ts) => {
            for t in ts {
                if t.state & 0x0100_0000 != 0 {
                    out.workers.push(Worker {
                        thread: t.address,
                        managed_id: t.managed_id,
                        os_id: t.os_id,
                        state: crate::data::threads::thread_state_names(t.state),
                        activity: w.map(|w| pool_thread_activity(&w.walk(&t))),
                    });
                }
            }
        }
        Err(e) => out.errors.push(format!("the thread list: {e}")),
    }
    out
}
