//! Thread-pool starvation: work is queued, no worker is free, and the workers are blocked (on
//! which task, monitor or call) — one assessment, joined from the pool's state
//! ([`crate::analysis::threadpool`]) and the threads' waits ([`crate::analysis::causality`],
//! [`crate::analysis::locks`]).

use crate::analysis::threadpool::{ThreadPoolInfo, WorkQueue};
use serde::Serialize;

/// What a pool worker running a work item is blocked on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkerBlock {
    /// A task it waits for synchronously (`Task.Wait`, `.Result`, `GetAwaiter().GetResult()`),
    /// proven from its stack ([`crate::analysis::causality`]).
    Task {
        /// The task.
        task: u64,
        /// Its type.
        task_type: String,
    },
    /// `Monitor.Wait` on an object: it waits for a `Pulse`.
    MonitorWait {
        /// The object.
        object: u64,
        /// Its type.
        type_name: String,
    },
    /// `lock` / `Monitor.Enter` on an object another thread holds.
    MonitorEnter {
        /// The object.
        object: u64,
        /// Its type.
        type_name: String,
    },
    /// Another blocking call, named by its outermost `System.Threading` frame
    /// (`Thread.Sleep`, `ManualResetEventSlim.Wait`, `WaitHandle.WaitOne`, ...).
    Call {
        /// The method.
        method: String,
    },
}

/// A worker blocked while running a work item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockedWorker {
    /// Managed thread id.
    pub managed_id: u32,
    /// OS thread id.
    pub os_id: u64,
    /// The work item's method, as far as the stack shows.
    pub work_item_method: Option<String>,
    /// What it is blocked on.
    pub on: WorkerBlock,
}

/// Whether the thread pool is starved: work waits in its queues while no worker is free,
/// because the workers are blocked synchronously.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Starvation {
    /// The verdict: work is queued, no worker is idle (`NumProcessingWork` ≥
    /// `NumExistingThreads`), and at least half of the busy workers are blocked.
    pub starved: bool,
    /// Workers that exist (`NumExistingThreads`).
    pub workers_total: Option<i64>,
    /// Workers running a work item (`NumProcessingWork`).
    pub workers_busy: Option<i64>,
    /// `_maxThreads`.
    pub max_threads: Option<i64>,
    /// The workers blocked while running a work item, from their stacks.
    pub blocked: Vec<BlockedWorker>,
    /// Work items in the global queues (normal, high priority, assignable).
    pub queued_global: usize,
    /// Work items in the threads' local queues.
    pub queued_local: usize,
    /// The queued work grouped by what it runs, most first.
    pub queued_work: Vec<QueuedWork>,
}

/// Queued work items that run one method.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueuedWork {
    /// `Task`, `QueueUserWorkItem`, `Timer`, `Delegate` or `Other`.
    pub kind: &'static str,
    /// The method the items run (no parameter list), or the item's type when no delegate
    /// method is known.
    pub what: String,
    /// How many.
    pub count: usize,
}

impl Starvation {
    /// All queued work items.
    pub fn queued(&self) -> usize {
        self.queued_global + self.queued_local
    }

    /// The blocked workers grouped by what they block on (most workers first), each with
    /// their OS ids.
    pub fn groups(&self) -> Vec<(&WorkerBlock, Vec<u64>)> {
        let mut g: Vec<(&WorkerBlock, Vec<u64>)> = Vec::new();
        for b in &self.blocked {
            match g.iter_mut().find(|(k, _)| *k == &b.on) {
                Some((_, ids)) => ids.push(b.os_id),
                None => g.push((&b.on, vec![b.os_id])),
            }
        }
        g.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
        g
    }
}

/// Whether the innermost frame of a stack is a blocking call of the runtime.
fn is_blocking_frame(method: &str) -> bool {
    let m = method.split('(').next().unwrap_or(method);
    m.starts_with("System.Threading.")
        && ["Wait", "Sleep", "Join", "Enter"]
            .iter()
            .any(|w| m.rsplit('.').next().is_some_and(|last| last.contains(w)))
}

/// Assesses starvation from the pool's state, its queues, the workers' stacks (by Thread),
/// the threads blocked on monitors ([`crate::analysis::locks::find_deadlocks`]) and those proven
/// blocked on tasks ([`crate::analysis::causality::analyze`]). A worker blocked on a task is named by
/// the task; else by the monitor object when the program itself calls Monitor (the frame
/// outside `Monitor` is not a `System.Threading` primitive built on it); else by the
/// outermost `System.Threading` frame of its innermost blocking call. `type_of` names an
/// object's type.
pub fn assess_starvation(
    type_of: impl Fn(u64) -> String,
    pool: &ThreadPoolInfo,
    queue: &WorkQueue,
    stacks: &std::collections::HashMap<u64, crate::model::stack::ThreadStack>,
    lock_waits: &[crate::analysis::locks::LockWait],
    task_waits: &[crate::analysis::causality::ThreadWait],
) -> Starvation {
    let queued_local = queue.items.iter().filter(|i| i.queue == "local").count();
    let mut queued_work: Vec<QueuedWork> = Vec::new();
    for i in &queue.items {
        let what = match &i.method {
            Some(Ok(m)) => m.short_name().to_owned(),
            _ => i.type_name.clone(),
        };
        match queued_work
            .iter_mut()
            .find(|g| g.kind == i.kind && g.what == what)
        {
            Some(g) => g.count += 1,
            None => queued_work.push(QueuedWork {
                kind: i.kind,
                what,
                count: 1,
            }),
        }
    }
    queued_work.sort_by(|a, b| b.count.cmp(&a.count).then(a.what.cmp(&b.what)));
    let mut out = Starvation {
        queued_work,
        workers_total: pool.existing_threads,
        workers_busy: pool.processing_work,
        max_threads: pool.max_threads,
        queued_global: queue.items.len() - queued_local,
        queued_local,
        ..Starvation::default()
    };
    for wk in &pool.workers {
        let Some(a) = &wk.activity else { continue };
        if a.role != "worker" || a.activity != "running a work item" {
            continue;
        }
        let Some(st) = stacks.get(&wk.thread) else {
            continue;
        };
        let methods: Vec<&str> = st.methods().collect();
        if !methods.first().is_some_and(|m| is_blocking_frame(m)) {
            continue;
        }
        let on = if let Some(t) = task_waits.iter().find(|t| t.os_id == wk.os_id) {
            WorkerBlock::Task {
                task: t.task,
                task_type: t.task_type.clone(),
            }
        } else if let Some(l) = lock_waits.iter().find(|l| {
            l.os_id == wk.os_id
                && l.object != 0
                && !l
                    .wait_frame
                    .as_deref()
                    .is_some_and(|f| f.starts_with("System.Threading."))
        }) {
            match l.kind {
                crate::data::syncblocks::WaitKind::MonitorWait => WorkerBlock::MonitorWait {
                    object: l.object,
                    type_name: type_of(l.object),
                },
                crate::data::syncblocks::WaitKind::MonitorEnter => WorkerBlock::MonitorEnter {
                    object: l.object,
                    type_name: type_of(l.object),
                },
            }
        } else {
            let outer = methods
                .iter()
                .take_while(|m| m.starts_with("System.Threading."))
                .last()
                .copied()
                .unwrap_or(methods[0]);
            WorkerBlock::Call {
                method: outer.to_owned(),
            }
        };
        out.blocked.push(BlockedWorker {
            managed_id: wk.managed_id,
            os_id: wk.os_id,
            work_item_method: a.work_item_method.clone(),
            on,
        });
    }
    let busy = pool.processing_work.unwrap_or(0);
    let no_idle = matches!(
        (pool.processing_work, pool.existing_threads),
        (Some(p), Some(e)) if p >= e && p > 0
    );
    out.starved = out.queued() > 0
        && no_idle
        && !out.blocked.is_empty()
        && 2 * out.blocked.len() as i64 >= busy;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::causality::ThreadWait;
    use crate::analysis::locks::{LockWait, WaitSource};
    use crate::analysis::threadpool::{pool_thread_activity, WorkItem, Worker};
    use crate::data::syncblocks::WaitKind;
    use crate::model::stack::{FrameKind, StackFrame, ThreadStack};
    use std::collections::HashMap;

    fn frame(method: &str) -> StackFrame {
        StackFrame {
            kind: FrameKind::Managed,
            sp: 0,
            ip: 0,
            frame: None,
            frame_name: None,
            method_desc: None,
            module: None,
            token: None,
            method: Some(method.into()),
            method_error: None,
            code: None,
            native: None,
            source: None,
            context: None,
        }
    }

    /// A worker running a work item, with its stack (innermost first).
    fn worker(thread: u64, frames: &[&str]) -> (Worker, ThreadStack) {
        let st = ThreadStack {
            thread,
            managed_id: thread as u32,
            os_id: thread + 100,
            frames: frames.iter().map(|m| frame(m)).collect(),
            incomplete: None,
        };
        let w = Worker {
            thread,
            managed_id: thread as u32,
            os_id: thread + 100,
            state: Vec::new(),
            activity: Some(pool_thread_activity(&st)),
        };
        (w, st)
    }

    const DISPATCH: &[&str] = &[
        "System.Threading.ThreadPoolWorkQueue.Dispatch()",
        "System.Threading.PortableThreadPool+WorkerThread.WorkerThreadStart()",
    ];

    fn stack(inner: &[&'static str]) -> Vec<&'static str> {
        inner.iter().chain(DISPATCH).copied().collect()
    }

    fn item(queue: &str) -> WorkItem {
        WorkItem {
            address: 1,
            type_name: "T".into(),
            queue: queue.into(),
            local_queue: None,
            kind: "Other",
            callback: 0,
            method: None,
            state: 0,
            state_type: None,
            task_status: None,
        }
    }

    fn pool(workers: Vec<Worker>, busy: i64, existing: i64) -> ThreadPoolInfo {
        ThreadPoolInfo {
            instance: 1,
            processing_work: Some(busy),
            existing_threads: Some(existing),
            max_threads: Some(32767),
            workers,
            ..ThreadPoolInfo::default()
        }
    }

    /// Workers blocked on a task, on a program's monitor, in Thread.Sleep and in a Monitor
    /// wait inside ManualResetEventSlim are named by task, object, and call; the verdict
    /// needs work queued, no idle worker and half the busy ones blocked.
    #[test]
    fn blocked_workers_are_named_and_grouped_and_the_verdict_follows_the_counts() {
        let (w1, s1) = worker(
            1,
            &stack(&[
                "System.Threading.Monitor.Wait(System.Object, Int32)",
                "System.Threading.ManualResetEventSlim.Wait(Int32, System.Threading.CancellationToken)",
                "System.Threading.Tasks.Task.SpinThenBlockingWait(Int32, System.Threading.CancellationToken)",
                "System.Threading.Tasks.Task.Wait()",
                "App.Work()",
            ]),
        );
        let (w2, s2) = worker(
            2,
            &stack(&[
                "System.Threading.Monitor.Wait(System.Object, Int32)",
                "App.WaitGate()",
            ]),
        );
        let (w3, s3) = worker(
            3,
            &stack(&[
                "System.Threading.Thread.SleepInternal(Int32)",
                "System.Threading.Thread.Sleep(Int32)",
                "App.Nap()",
            ]),
        );
        let (w4, s4) = worker(
            4,
            &stack(&[
                "System.Threading.Monitor.Wait(System.Object, Int32)",
                "System.Threading.ManualResetEventSlim.Wait()",
                "App.Event()",
            ]),
        );
        let (w5, s5) = worker(5, &stack(&["App.Compute()"]));
        let (w6, s6) = worker(
            6,
            &stack(&[
                "System.Threading.Monitor.Wait(System.Object, Int32)",
                "App.WaitGate()",
            ]),
        );
        let stacks: HashMap<u64, ThreadStack> = [s1, s2, s3, s4, s5, s6]
            .into_iter()
            .map(|s| (s.thread, s))
            .collect();
        let lock = |t: u64, obj: u64, frame: &str| LockWait {
            thread: t,
            managed_id: t as u32,
            os_id: t + 100,
            kind: WaitKind::MonitorWait,
            object: obj,
            sync_block: 0,
            owner: None,
            source: WaitSource::BlockingInfo,
            blocked_in: None,
            wait_frame: Some(frame.into()),
            notes: Vec::new(),
        };
        let locks = vec![
            lock(1, 0x90, "System.Threading.ManualResetEventSlim.Wait(Int32, System.Threading.CancellationToken)"),
            lock(2, 0x80, "App.WaitGate()"),
            lock(4, 0x91, "System.Threading.ManualResetEventSlim.Wait()"),
            lock(6, 0x80, "App.WaitGate()"),
        ];
        let tasks = vec![ThreadWait {
            os_id: 101,
            managed_id: 1,
            task: 0x70,
            task_type: "System.Threading.Tasks.Task`1[[System.Int32]]".into(),
            event: 0x71,
            via: Some("System.Threading.Tasks.Task.Wait()".into()),
            chains: Vec::new(),
        }];
        let queue = WorkQueue {
            items: vec![item("global"), item("local"), item("global-high-priority")],
            ..WorkQueue::default()
        };
        let names = |o: u64| format!("Type{o:x}");
        let workers = vec![w1, w2, w3, w4, w5, w6];
        let st = assess_starvation(
            names,
            &pool(workers.clone(), 6, 6),
            &queue,
            &stacks,
            &locks,
            &tasks,
        );
        assert!(st.starved);
        assert_eq!((st.queued_global, st.queued_local), (2, 1));
        assert_eq!(st.queued_work.len(), 1);
        assert_eq!(
            (st.queued_work[0].what.as_str(), st.queued_work[0].count),
            ("T", 3)
        );
        assert_eq!(st.blocked.len(), 5, "{:?}", st.blocked);
        let g = st.groups();
        assert_eq!(
            g[0],
            (
                &WorkerBlock::MonitorWait {
                    object: 0x80,
                    type_name: "Type80".into()
                },
                vec![102, 106]
            )
        );
        assert!(g.contains(&(
            &WorkerBlock::Task {
                task: 0x70,
                task_type: "System.Threading.Tasks.Task`1[[System.Int32]]".into()
            },
            vec![101]
        )));
        assert!(g.contains(&(
            &WorkerBlock::Call {
                method: "System.Threading.Thread.Sleep(Int32)".into()
            },
            vec![103]
        )));
        assert!(g.contains(&(
            &WorkerBlock::Call {
                method: "System.Threading.ManualResetEventSlim.Wait()".into()
            },
            vec![104]
        )));
        // No work queued, an idle worker, or too few blocked: not starved.
        let empty = WorkQueue::default();
        assert!(
            !assess_starvation(
                names,
                &pool(workers.clone(), 6, 6),
                &empty,
                &stacks,
                &locks,
                &tasks
            )
            .starved
        );
        assert!(
            !assess_starvation(
                names,
                &pool(workers.clone(), 6, 7),
                &queue,
                &stacks,
                &locks,
                &tasks
            )
            .starved
        );
        let few: Vec<Worker> = workers
            .into_iter()
            .filter(|w| w.thread == 2 || w.thread == 5)
            .collect();
        assert!(
            assess_starvation(
                names,
                &pool(few.clone(), 2, 2),
                &queue,
                &stacks,
                &locks,
                &tasks
            )
            .starved
        );
        assert!(
            !assess_starvation(names, &pool(few, 3, 3), &queue, &stacks, &locks, &tasks).starved
        );
    }
}

/// Gathers what [`assess_starvation`] joins, for the pool `pool` with its queue `queue`: the
/// workers' stacks, the monitors they wait on, and (only when a worker is in a task-wait
/// frame) the tasks they wait for, which needs the heap (`heap`, asked for only then). The
/// second value says what could not be read (the assessment is then made without it).
pub fn assess<'h, M: dumpreader::Memory + dumpreader::Target, E: std::fmt::Display>(
    rt: &crate::discovery::runtime::Runtime<M>,
    names: &crate::model::names::TypeNames,
    heap: impl FnOnce() -> Result<&'h crate::model::heap::GcHeap, E>,
    pool: &ThreadPoolInfo,
    queue: &WorkQueue,
) -> (Starvation, Vec<String>) {
    use crate::analysis::{asyncsm, causality, locks};
    use crate::data::threads::ReadThreads;
    use crate::model::objects::ObjectReader;
    use crate::model::stack::{StackWalker, ThreadStack};
    let mut notes = Vec::new();
    let walker = StackWalker::for_target(rt, names);
    let r = ObjectReader::new(rt, names);
    let workers: std::collections::HashSet<u64> = pool.workers.iter().map(|w| w.thread).collect();
    let threads: Vec<crate::data::threads::ThreadData> = match rt.threads() {
        Ok(ts) => ts
            .into_iter()
            .filter(|t| workers.contains(&t.address))
            .collect(),
        Err(e) => {
            notes.push(format!("the thread list: {e}"));
            Vec::new()
        }
    };
    let stacks: std::collections::HashMap<u64, ThreadStack> = threads
        .iter()
        .map(|t| (t.address, walker.walk(t)))
        .collect();
    let lock_waits = match rt
        .require(crate::discovery::layout::Capability::Locks)
        .and_then(|_| locks::monitors(rt, names))
    {
        Ok(table) => locks::find_deadlocks(rt, &threads, &table, &stacks).waits,
        Err(e) => {
            notes.push(format!("monitors not read: {e}"));
            Vec::new()
        }
    };
    let in_task_wait = stacks
        .values()
        .any(|st| st.methods().any(causality::is_task_wait_frame));
    let mut task_waits = Vec::new();
    if in_task_wait {
        match heap() {
            Err(e) => notes.push(format!("tasks waited on not read: {e}")),
            Ok(heap) => match causality::thread_scans(&walker) {
                Err(e) => notes.push(format!(
                    "tasks waited on not read: reading the thread list: {e}"
                )),
                Ok(scans) => {
                    let a = asyncsm::analyze(rt, names, heap);
                    let scans: Vec<_> = scans
                        .into_iter()
                        .filter(|t| threads.iter().any(|w| w.os_id == t.os_id))
                        .collect();
                    task_waits = causality::analyze(&r, &a, &scans).thread_waits;
                }
            },
        }
    }
    let type_of = |o: u64| {
        crate::model::heap::read_method_table(rt.memory(), o)
            .map(|mt| names.name_or_note(rt, mt))
            .unwrap_or_else(|_| "<object not in the dump>".into())
    };
    let st = assess_starvation(type_of, pool, queue, &stacks, &lock_waits, &task_waits);
    (st, notes)
}
