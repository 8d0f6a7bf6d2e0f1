//! Who waits for what: thread stacks joined with async chains.
//!
//! - A chain's cause: what its innermost box awaits (the object its awaiter holds), classified
//!   by what completes it: a `TaskCompletionSource` found by its `_task`, a `SemaphoreSlim`
//!   whose async waiter list holds the `TaskNode`, a channel whose waiter lists hold the
//!   operation ([`crate::analysis::channels`]), a `Task.Delay` promise and its timer, a delegate task
//!   queued but not yet run (`WaitingToRun`), or another task.
//! - A thread's wait: a thread blocked in `Task.Wait`, `Task<T>.Result` or
//!   `GetAwaiter().GetResult()` registers a `Task+SetOnInvokeMres` as the waited task's
//!   continuation and sleeps on it. The thread's stack (scanned conservatively: every aligned
//!   slot from the stack pointer to the end of its memory) holds both the task and that event;
//!   the task whose continuation is an event found on the same stack is the one waited on.
//!   Without that proof nothing is claimed.

use crate::analysis::asyncsm::{task_status_of, AsyncAnalysis};
use crate::analysis::channels::{ChannelRole, ChannelState};
use crate::analysis::tasks::TaskStatus;
use crate::model::dso::{for_each_word, MAX_STACK_BYTES};
use crate::model::fields::{int, obj as ref_field, object_fields, struct_fields};
use crate::model::objects::ObjectReader;
use crate::model::stack::StackWalker;
use dumpreader::Memory;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// Bound on the items of a `List<object>` continuation read.
const MAX_LIST: u64 = 4096;

/// What a thread's stack scan needs.
#[derive(Debug, Clone)]
pub struct ThreadScan {
    /// OS thread id.
    pub os_id: u64,
    /// Managed thread id.
    pub managed_id: u32,
    /// Method names of its frames, innermost first.
    pub frames: Vec<String>,
    /// Its stack memory `(stack pointer, end)`, when known.
    pub stack: Option<(u64, u64)>,
}

/// What completes the task an innermost box awaits.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Cause {
    /// A `TaskCompletionSource` nobody has completed.
    TaskCompletionSource {
        /// The TaskCompletionSource.
        tcs: u64,
        /// Its task.
        task: u64,
    },
    /// A `SemaphoreSlim.WaitAsync` not yet released.
    Semaphore {
        /// The SemaphoreSlim.
        semaphore: u64,
        /// Its `m_currentCount`.
        current_count: i64,
        /// This waiter's place in its async queue (1 = next to be released).
        position: usize,
        /// How many async waiters it has.
        async_waiters: usize,
        /// Threads blocked in `Wait` on it (`m_waitCount`).
        sync_waiters: i64,
    },
    /// A `System.Threading.Channels` operation (`ReadAsync`, `WriteAsync`, `WaitToReadAsync`,
    /// `WaitToWriteAsync`) waiting in a channel's waiter list.
    Channel {
        /// The operation awaited.
        operation: u64,
        /// Which of the channel's lists holds it (what the method called).
        role: ChannelRole,
        /// Its place in that list (1 = first to be served).
        position: usize,
        /// The channel: capacity, items, waiters.
        channel: ChannelState,
    },
    /// A `Task.Delay` whose timer has not fired.
    Delay {
        /// The delay promise.
        task: u64,
        /// Its `TimerQueueTimer` (none for an infinite delay).
        timer: Option<u64>,
        /// `_dueTime` in milliseconds (from when the timer was set).
        due_ms: Option<u64>,
        /// Whether the delay is infinite (`Timeout.Infinite`: a DelayPromise without a timer).
        infinite: bool,
        /// The cancellation token's source, for a delay that can be cancelled.
        cancellation: Option<CancellationState>,
    },
    /// `PeriodicTimer.WaitForNextTickAsync()` waiting for the next tick.
    PeriodicTimer {
        /// The PeriodicTimer.
        timer: u64,
        /// Its period in milliseconds, when its TimerQueueTimer is readable.
        period_ms: Option<u64>,
    },
    /// A delegate task scheduled but not yet run by any thread (`WaitingToRun`): queued to a
    /// scheduler, normally the thread pool.
    Queued {
        /// The task.
        task: u64,
        /// Its delegate (`m_action`).
        delegate: Option<u64>,
        /// The delegate's type.
        delegate_type: Option<String>,
        /// The method the delegate runs, or why it is unknown.
        method: Option<String>,
        /// The thread pool queue holding the task (`global`, `local`, ...), when it is in one.
        queue: Option<String>,
        /// The thread pool's state, when read.
        pool: Option<PoolState>,
    },
    /// A delegate task a thread is running now.
    Running {
        /// The task.
        task: u64,
    },
    /// The innermost box awaits nothing because a thread is running it now: its state
    /// machine's state is -1 (running) and exactly one thread's stack holds the box. What the
    /// chain waits for is then what that thread waits for (see [`Causality::thread_waits`]).
    RunningOnThread {
        /// The box.
        task: u64,
        /// The thread running it (OS id).
        os_id: u64,
        /// Its managed id.
        managed_id: u32,
    },
    /// The awaited task has completed, yet the box has not resumed (its continuation was
    /// posted to a context or scheduler that has not run it).
    CompletedNotResumed {
        /// The task.
        task: u64,
        /// Its status.
        status: &'static str,
    },
    /// The awaited task is a box of a ring of boxes awaiting each other
    /// ([`AsyncAnalysis::cycles`]): none can complete.
    Cycle {
        /// The awaited box.
        task: u64,
        /// The ring's boxes, in continuation order.
        ring: Vec<u64>,
    },
    /// Another kind of awaited object.
    Other {
        /// The object.
        object: u64,
        /// Its type.
        type_name: String,
    },
    /// Nothing awaited could be read.
    Unknown {
        /// Why.
        why: String,
    },
}

/// A `CancellationTokenSource` something waits on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CancellationState {
    /// The CancellationTokenSource (0: a token that cannot be cancelled).
    pub source: u64,
    /// Whether cancellation was requested (`_state` is not NotCanceledState, 0).
    pub cancelled: Option<bool>,
    /// How many callbacks are registered on it (its `Registrations.Callbacks` list).
    pub registrations: Option<u64>,
}

/// Most callback nodes of one CancellationTokenSource counted.
const MAX_REGISTRATIONS: u64 = 100_000;

/// The state of the CancellationTokenSource `source`.
pub fn cancellation_state<M: Memory>(r: &ObjectReader<'_, M>, source: u64) -> CancellationState {
    let mut st = CancellationState {
        source,
        cancelled: None,
        registrations: None,
    };
    if source == 0 {
        return st;
    }
    let Some(fs) = fields_at(r, source) else {
        return st;
    };
    st.cancelled = int(&fs, "_state").map(|v| v != 0);
    let regs = ref_field(&fs, "_registrations");
    st.registrations = if regs == 0 {
        Some(0)
    } else {
        (|| {
            let mut node = ref_field(&fields_at(r, regs)?, "Callbacks");
            let mut n = 0u64;
            while node != 0 && n < MAX_REGISTRATIONS {
                n += 1;
                node = ref_field(&fields_at(r, node)?, "Next");
            }
            (node == 0).then_some(n)
        })()
    };
    st
}

/// The instance fields of the object at `addr`, when it is readable.
fn fields_at<M: Memory>(
    r: &ObjectReader<'_, M>,
    addr: u64,
) -> Option<Vec<crate::model::objects::FieldData>> {
    object_fields(r, addr, "object").ok().map(|(_, f)| f)
}

/// What the thread pool was doing, for a task queued to it (whether it is starved is
/// [`crate::analysis::starvation::assess_starvation`]'s to say).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PoolState {
    /// Workers running a work item (NumProcessingWork).
    pub processing_work: Option<i64>,
    /// Worker threads that exist.
    pub existing_threads: Option<i64>,
    /// The number of threads the pool aims for.
    pub threads_goal: Option<i64>,
    /// `_maxThreads`.
    pub max_threads: Option<i64>,
}

/// One chain and what it waits for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChainCause {
    /// Index into [`AsyncAnalysis::chains`].
    pub chain: usize,
    /// The object the innermost box awaits.
    pub awaited: Option<u64>,
    /// Its type.
    pub awaited_type: Option<String>,
    /// What completes it.
    pub cause: Cause,
}

/// A thread blocked on a task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadWait {
    /// OS thread id.
    pub os_id: u64,
    /// Managed thread id.
    pub managed_id: u32,
    /// The waited task (a box or another task).
    pub task: u64,
    /// Its type.
    pub task_type: String,
    /// The event the thread sleeps on (the task's continuation).
    pub event: u64,
    /// The outermost waiting frame (`Task.Wait`, `Task<T>.get_Result`, `TaskAwaiter.GetResult`).
    pub via: Option<String>,
    /// Chains (indices) holding the waited task as a box, or awaiting it.
    pub chains: Vec<usize>,
}

/// Threads blocked on tasks, and what each chain waits for.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Causality {
    /// One per chain of the analysis, same order.
    pub chains: Vec<ChainCause>,
    /// Threads blocked on a task.
    pub thread_waits: Vec<ThreadWait>,
    /// Threads with a task-wait frame whose task could not be proven.
    pub unresolved_waits: Vec<(u64, String)>,
}

/// The threads' stacks as [`analyze`] scans them: each managed thread's frames, with its stack
/// pointer and the end of its stack as the dump records them.
pub fn thread_scans<M: Memory + dumpreader::Target>(
    walker: &StackWalker<'_, M>,
) -> crate::Result<Vec<ThreadScan>> {
    let stacks = walker.walk_all()?;
    let os: HashMap<u64, (u64, Option<(u64, u64)>)> = walker
        .rt
        .memory()
        .threads()
        .iter()
        .map(|t| (t.id as u64, (t.context.rsp, t.stack)))
        .collect();
    Ok(stacks
        .iter()
        .filter(|st| st.os_id != 0)
        .map(|st| ThreadScan {
            os_id: st.os_id,
            managed_id: st.managed_id,
            frames: st.methods().map(str::to_owned).collect(),
            stack: os
                .get(&st.os_id)
                .and_then(|(sp, range)| range.map(|(_, end)| (*sp, end))),
        })
        .collect())
}

/// Whether a frame is one of the runtime's ways of blocking on a task.
pub fn is_task_wait_frame(method: &str) -> bool {
    let m = method.split('(').next().unwrap_or(method);
    (m.starts_with("System.Threading.Tasks.Task")
        && (m.contains("Wait") || m.ends_with("get_Result") || m.ends_with("GetResultCore")))
        || (m.starts_with("System.Runtime.CompilerServices.") && m.contains("Awaiter"))
            && (m.ends_with("GetResult") || m.ends_with("HandleNonSuccessAndDebuggerNotification"))
}

/// Joins `threads` with the chains of `a`. With a stack walker, a task queued to the thread
/// pool is also found in the pool's queues, its delegate named, and the pool's state read.
pub fn analyze_with<M: Memory>(
    r: &ObjectReader<'_, M>,
    a: &AsyncAnalysis,
    threads: &[ThreadScan],
    w: &StackWalker<'_, M>,
) -> Causality {
    let mut out = analyze(r, a, threads);
    let mut queue: Option<crate::analysis::threadpool::WorkQueue> = None;
    let mut pool: Option<PoolState> = None;
    for c in &mut out.chains {
        let Cause::Queued {
            task,
            delegate,
            method,
            queue: q,
            pool: p,
            ..
        } = &mut c.cause
        else {
            continue;
        };
        if let Some(d) = delegate {
            *method = Some(match crate::model::delegates::delegate_method(r, w, *d) {
                Ok(m) => m.method,
                Err(e) => format!("<unknown: {e}>"),
            });
        }
        let wq = queue.get_or_insert_with(|| crate::analysis::threadpool::work_queue(r, w));
        *q = wq
            .items
            .iter()
            .find(|i| i.address == *task)
            .map(|i| i.queue.clone());
        if q.is_some() {
            *p = Some(
                pool.get_or_insert_with(|| {
                    let t = crate::analysis::threadpool::thread_pool(r, Some(w));
                    PoolState {
                        processing_work: t.processing_work,
                        existing_threads: t.existing_threads,
                        threads_goal: t.threads_goal,
                        max_threads: t.max_threads,
                    }
                })
                .clone(),
            );
        }
    }
    out
}

/// Joins `threads` with the chains of `a`.
pub fn analyze<M: Memory>(
    r: &ObjectReader<'_, M>,
    a: &AsyncAnalysis,
    threads: &[ThreadScan],
) -> Causality {
    let mut out = Causality::default();
    for (i, ch) in a.chains.iter().enumerate() {
        out.chains.push(chain_cause(r, a, i, ch));
    }
    // Innermost boxes that await nothing and are in the running state: the threads whose
    // stacks hold them.
    let running: HashMap<u64, usize> = out
        .chains
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c.cause, Cause::Unknown { .. }))
        .filter_map(|(i, _)| {
            let b = &a.boxes[*a.chains[i].first()?];
            (b.state == Some(-1) && !b.completed()).then_some((b.address, i))
        })
        .collect();
    let mut runners: HashMap<u64, Vec<(u64, u32)>> = HashMap::new();
    let box_index: HashMap<u64, usize> = a
        .boxes
        .iter()
        .enumerate()
        .map(|(i, b)| (b.address, i))
        .collect();
    for t in threads {
        let via = t
            .frames
            .iter()
            .rev()
            .find(|f| is_task_wait_frame(f))
            .cloned();
        let Some((sp, end)) = t.stack else {
            if let Some(v) = via {
                out.unresolved_waits.push((
                    t.os_id,
                    format!("in {v}, but the thread's stack memory is unknown"),
                ));
            }
            continue;
        };
        let slots = scan(r.rt.memory(), sp, end);
        if !running.is_empty() {
            let held: HashSet<u64> = slots
                .iter()
                .copied()
                .filter(|v| running.contains_key(v))
                .collect();
            for b in held {
                runners.entry(b).or_default().push((t.os_id, t.managed_id));
            }
        }
        let events: HashSet<u64> = slots
            .iter()
            .copied()
            .filter(|v| a.facts.wait_events.contains(v))
            .collect();
        let mut found = None;
        if !events.is_empty() {
            let mut seen = HashSet::new();
            for &v in &slots {
                let is_task = box_index.contains_key(&v) || a.facts.tasks.contains(&v);
                if !is_task || !seen.insert(v) {
                    continue;
                }
                if let Some(e) = continuation_event(r, v, &events) {
                    found = Some((v, e));
                    break;
                }
            }
        }
        match found {
            Some((task, event)) => {
                let mut chains: Vec<usize> = Vec::new();
                for (ci, ch) in a.chains.iter().enumerate() {
                    // a state machine box is its task; a runtime-async frame's task owns it
                    let holds = ch.iter().any(|&b| {
                        a.boxes[b].address == task
                            || a.boxes[b]
                                .runtime_async
                                .as_ref()
                                .is_some_and(|f| f.task == task)
                    });
                    let awaits = ch.first().is_some_and(|&b| {
                        a.boxes[b].awaiters.iter().any(|w| w.object == Some(task))
                    });
                    if holds || awaits {
                        chains.push(ci);
                    }
                }
                let task_type = r
                    .object_mt(task)
                    .map(|(mt, _)| r.type_name(mt))
                    .unwrap_or_else(|e| format!("<unreadable: {e}>"));
                out.thread_waits.push(ThreadWait {
                    os_id: t.os_id,
                    managed_id: t.managed_id,
                    task,
                    task_type,
                    event,
                    via,
                    chains,
                });
            }
            None => {
                if let Some(v) = via {
                    let why = if events.is_empty() {
                        "no task wait event (Task+SetOnInvokeMres) on its stack"
                    } else {
                        "no task on its stack has that wait event as its continuation"
                    };
                    out.unresolved_waits
                        .push((t.os_id, format!("in {v}: {why}")));
                }
            }
        }
    }
    for (task, ts) in runners {
        if let ([(os_id, managed_id)], Some(&ci)) = (ts.as_slice(), running.get(&task)) {
            out.chains[ci].cause = Cause::RunningOnThread {
                task,
                os_id: *os_id,
                managed_id: *managed_id,
            };
        }
    }
    // .NET 11: a chain awaiting a RuntimeAsyncTask whose chain a thread's dispatcher runs now
    // (AsyncDispatcherInfo.t_current's CurrentTask): what it waits for is that thread.
    for cc in out.chains.iter_mut() {
        let awaited = match &cc.cause {
            Cause::Other { object, .. } => *object,
            Cause::Running { task } => *task,
            _ => continue,
        };
        let Some(rc) = a.running.iter().find(|rc| rc.task == awaited) else {
            continue;
        };
        if let Some(t) = threads.iter().find(|t| t.managed_id == rc.managed_id) {
            cc.cause = Cause::RunningOnThread {
                task: awaited,
                os_id: t.os_id,
                managed_id: t.managed_id,
            };
        }
    }
    // .NET 11: a runtime-async chain a thread's dispatcher runs now (its innermost frame
    // resumes after the method that thread runs; AsyncDispatcherInfo.t_current).
    for (ci, ch) in a.chains.iter().enumerate() {
        let Some(f) = ch
            .first()
            .and_then(|&b| a.boxes[b].runtime_async.as_ref())
            .filter(|f| f.running_on_thread.is_some())
        else {
            continue;
        };
        let Some(rc) = a
            .running
            .iter()
            .find(|rc| rc.frames.first() == Some(&a.boxes[ch[0]].address))
        else {
            continue;
        };
        if let Some(t) = threads.iter().find(|t| t.managed_id == rc.managed_id) {
            out.chains[ci].cause = Cause::RunningOnThread {
                task: f.task,
                os_id: t.os_id,
                managed_id: t.managed_id,
            };
        }
    }
    out
}

/// The aligned pointer-sized values of `[sp, end)`, innermost first (bounded).
fn scan<M: Memory>(m: &M, sp: u64, end: u64) -> Vec<u64> {
    let start = sp & !7;
    let end = end.min(start.saturating_add(MAX_STACK_BYTES));
    let mut out = Vec::new();
    for_each_word(m, start, end, |_, v| out.push(v));
    out
}

/// The wait event among `events` that is `task`'s continuation (directly or in a List).
fn continuation_event<M: Memory>(
    r: &ObjectReader<'_, M>,
    task: u64,
    events: &HashSet<u64>,
) -> Option<u64> {
    let (mt, _) = r.object_mt(task).ok()?;
    let fs = r.fields(mt, task + 8, false).ok()?;
    let c = ref_field(&fs, "m_continuationObject");
    if c == 0 {
        return None;
    }
    if events.contains(&c) {
        return Some(c);
    }
    // A List<object> of several continuations.
    let (cmt, _) = r.object_mt(c).ok()?;
    if !r
        .type_name(cmt)
        .starts_with("System.Collections.Generic.List`1")
    {
        return None;
    }
    let lf = r.fields(cmt, c + 8, false).ok()?;
    let items = ref_field(&lf, "_items");
    let (_, info) = r.object_mt(items).ok()?;
    let arr = r.array(items, &info).ok()??;
    (0..arr.length.min(MAX_LIST))
        .filter_map(|i| r.rt.memory().read_u64(arr.data + 8 * i).ok())
        .find(|e| events.contains(e))
}

fn chain_cause<M: Memory>(
    r: &ObjectReader<'_, M>,
    a: &AsyncAnalysis,
    i: usize,
    ch: &[usize],
) -> ChainCause {
    let unknown = |why: &str| ChainCause {
        chain: i,
        awaited: None,
        awaited_type: None,
        cause: Cause::Unknown { why: why.into() },
    };
    let Some(&first) = ch.first() else {
        return unknown("empty chain");
    };
    let b = &a.boxes[first];
    if b.completed() {
        return ChainCause {
            chain: i,
            awaited: None,
            awaited_type: None,
            cause: Cause::CompletedNotResumed {
                task: b.address,
                status: task_status_of(b.task_flags),
            },
        };
    }
    let Some(obj) = b.awaiters.iter().find_map(|w| w.object) else {
        return unknown(
            "the innermost box holds no awaited object (it awaits a custom awaiter, or is running)",
        );
    };
    let (mt, _) = match r.object_mt(obj) {
        Ok(x) => x,
        Err(e) => return unknown(&format!("awaited object {obj:#x}: {e}")),
    };
    let ty = r.type_name(mt);
    let ring = a.cycles.iter().find(|ring| {
        ring.iter().any(|&k| {
            a.boxes[k].address == obj
                || a.boxes[k]
                    .runtime_async
                    .as_ref()
                    .is_some_and(|f| f.task == obj)
        })
    });
    let cause = match ring {
        Some(ring) => Cause::Cycle {
            task: obj,
            ring: ring.iter().map(|&k| a.boxes[k].address).collect(),
        },
        None => classify(r, a, obj, mt, &ty),
    };
    ChainCause {
        chain: i,
        awaited: Some(obj),
        awaited_type: Some(ty),
        cause,
    }
}

fn classify<M: Memory>(
    r: &ObjectReader<'_, M>,
    a: &AsyncAnalysis,
    obj: u64,
    mt: u64,
    ty: &str,
) -> Cause {
    if let Some(&tcs) = a.facts.tcs_of_task.get(&obj) {
        return Cause::TaskCompletionSource { tcs, task: obj };
    }
    if let Some(&si) = a.facts.semaphore_of_node.get(&obj) {
        let s = &a.facts.semaphores[si];
        let position = s
            .async_waiters
            .iter()
            .position(|&n| n == obj)
            .map_or(0, |p| p + 1);
        return Cause::Semaphore {
            semaphore: s.address,
            current_count: s.current_count,
            position,
            async_waiters: s.async_waiters.len(),
            sync_waiters: s.sync_waiters,
        };
    }
    if let Some(ch) = a.facts.channel_of(obj) {
        if let Some((role, position)) = ch.role_of(obj) {
            return Cause::Channel {
                operation: obj,
                role,
                position,
                channel: ch.clone(),
            };
        }
    }
    let Ok(fs) = r.fields(mt, obj + 8, false) else {
        return Cause::Other {
            object: obj,
            type_name: ty.to_owned(),
        };
    };
    if ty == "System.Threading.PeriodicTimer+State" {
        let owner = ref_field(&fs, "_owner");
        let period_ms = (|| {
            let t = ref_field(&fields_at(r, owner)?, "_timer");
            int(&fields_at(r, t)?, "_period").map(|v| v as u64)
        })();
        return Cause::PeriodicTimer {
            timer: owner,
            period_ms,
        };
    }
    let flags = int(&fs, "m_stateFlags").map(|v| v as u64).unwrap_or(0) as u32;
    let status = TaskStatus::from_flags(flags);
    if status.is_completed() {
        return Cause::CompletedNotResumed {
            task: obj,
            status: status.snake(),
        };
    }
    if ty.starts_with("System.Threading.Tasks.Task+DelayPromise") {
        let timer = Some(ref_field(&fs, "_timer")).filter(|t| *t != 0);
        let due_ms = timer.and_then(|t| int(&fields_at(r, t)?, "_dueTime").map(|v| v as u64));
        // DelayPromiseWithCancellation: its `_registration` on the token (a
        // CancellationTokenRegistration {_id, _node}: the CallbackNode's Registrations.Source),
        // or a `_token` (a CancellationToken {_source}) where it keeps one.
        let strukt =
            |name: &str| struct_fields(r, crate::model::fields::field(&fs, name)?, name).ok();
        let of = |o: u64, name: &str| Some(ref_field(&fields_at(r, o)?, name));
        let source = strukt("_token")
            .map(|tf| ref_field(&tf, "_source"))
            .or_else(|| {
                let node = ref_field(&strukt("_registration")?, "_node");
                of(of(node, "Registrations")?, "Source")
            });
        let cancellation = source.map(|src| cancellation_state(r, src));
        return Cause::Delay {
            task: obj,
            timer,
            due_ms,
            // Task.Delay(Timeout.Infinite) makes no timer (the promise's `_timer` is null).
            infinite: timer.is_none() && crate::model::fields::field(&fs, "_timer").is_some(),
            cancellation,
        };
    }
    let action = ref_field(&fs, "m_action");
    if action != 0 {
        if status == TaskStatus::WaitingToRun {
            return Cause::Queued {
                task: obj,
                delegate: Some(action),
                delegate_type: r.object_mt(action).ok().map(|(m, _)| r.type_name(m)),
                method: None,
                queue: None,
                pool: None,
            };
        }
        if status == TaskStatus::Running {
            return Cause::Running { task: obj };
        }
    }
    Cause::Other {
        object: obj,
        type_name: ty.to_owned(),
    }
}
