//! Timers (`timerinfo`): every `TimerQueueTimer` of every `TimerQueue`.
//!
//! .NET 8 (dotnet/runtime v8.0.4 `System/Threading/Timer.cs`, names confirmed in the corpus
//! dumps' metadata): `TimerQueue.Instances` (static, `<Instances>k__BackingField`) is a
//! `TimerQueue[]`, one queue per processor. Each queue keeps two doubly linked lists of
//! `TimerQueueTimer` through `_next`: `_shortTimers` (due within the queue's threshold) and
//! `_longTimers`. A timer holds `_startTicks` (TickCount64 when its current interval began),
//! `_dueTime` (ms after `_startTicks`; `Timeout.UnsignedInfinite` when not scheduled),
//! `_period` (`UnsignedInfinite` for a one-shot timer), `_timerCallback`, `_state` and
//! `_canceled`.
//!
//! Due time is shown as SOS's `ti` shows it: `_dueTime`, the milliseconds from when the timer
//! was (re)scheduled. The time remaining is not computable from a dump (it records no current
//! tick count); `due_at_ticks` (`_startTicks + _dueTime`, on the runtime's TickCount64 clock)
//! lets timers be compared with one another.

use crate::analysis::tasks::{corelib_static_object, object_type};
use crate::model::delegates::{self, DelegateMethod};
use crate::model::fields::{int, obj};
use crate::model::objects::{FieldData, ObjectReader};
use crate::model::stack::StackWalker;
use dumpreader::Memory;
use serde::Serialize;
use std::collections::HashSet;

/// `Timeout.UnsignedInfinite`.
pub const INFINITE: u32 = u32::MAX;
/// Bound on the timers read from one list.
pub const MAX_TIMERS_PER_LIST: usize = 1_000_000;
/// Bound on the queues read.
const MAX_QUEUES: u64 = 4096;

/// One timer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimerInfo {
    /// The `TimerQueueTimer`.
    pub address: u64,
    /// Its queue (`TimerQueue`).
    pub queue: u64,
    /// The queue's index in `TimerQueue.Instances`.
    pub queue_index: usize,
    /// `short` or `long`: the list it is on.
    pub list: &'static str,
    /// `_dueTime`: ms after `_startTicks` (SOS's `@ N ms`).
    pub due_ms: u32,
    /// `_period` (`None`: one-shot).
    pub period_ms: Option<u32>,
    /// `_startTicks`.
    pub start_ticks: i64,
    /// `_startTicks + _dueTime`.
    pub due_at_ticks: i64,
    /// `_canceled`.
    pub canceled: bool,
    /// `_timerCallback` (0: none).
    pub callback: u64,
    /// What the callback calls, or why it is unknown (`None` without a callback).
    pub method: Option<crate::Result<DelegateMethod>>,
    /// `_state` (0: none).
    pub state: u64,
    /// Its type.
    pub state_type: Option<String>,
}

/// One timer queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimerQueueInfo {
    /// The `TimerQueue`.
    pub address: u64,
    /// Its index.
    pub index: usize,
    /// `<ActiveCount>k__BackingField`, when read.
    pub active_count: Option<i64>,
    /// Timers found on its lists.
    pub timers: usize,
}

/// Every timer found, with the problems met.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Timers {
    /// The `TimerQueue[]` (0 when not found).
    pub instances: u64,
    /// The queues.
    pub queues: Vec<TimerQueueInfo>,
    /// The timers, queue by queue, short list first, each list in link order.
    pub timers: Vec<TimerInfo>,
    /// What could not be read (address and structure named).
    pub errors: Vec<String>,
}

fn object_fields<M: Memory>(
    r: &ObjectReader<'_, M>,
    addr: u64,
    what: &str,
) -> crate::Result<Vec<FieldData>> {
    let (mt, _) = r
        .object_mt(addr)
        .map_err(|e| e.context(format!("{what}")))?;
    r.fields(mt, addr + 8, false)
        .map_err(|e| e.context(format!("{what} {addr:#x}: fields not readable")))
}

/// Reads one `TimerQueueTimer`.
pub fn read_timer<M: Memory>(
    r: &ObjectReader<'_, M>,
    w: &StackWalker<'_, M>,
    addr: u64,
) -> crate::Result<(TimerInfo, u64)> {
    let f = object_fields(r, addr, "TimerQueueTimer")?;
    let due = int(&f, "_dueTime").ok_or_else(|| crate::ClrError::NoSuchField {
        type_name: "TimerQueueTimer".into(),
        field: "_dueTime".into(),
        is_static: false,
    })? as u32;
    let period = int(&f, "_period").unwrap_or(INFINITE as i64) as u32;
    let start = int(&f, "_startTicks").unwrap_or(0);
    let callback = obj(&f, "_timerCallback");
    let state = obj(&f, "_state");
    let info = TimerInfo {
        address: addr,
        queue: obj(&f, "_associatedTimerQueue"),
        queue_index: 0,
        list: if int(&f, "_short").unwrap_or(0) != 0 {
            "short"
        } else {
            "long"
        },
        due_ms: due,
        period_ms: (period != INFINITE).then_some(period),
        start_ticks: start,
        due_at_ticks: start.saturating_add(due as i64),
        canceled: int(&f, "_canceled").unwrap_or(0) != 0,
        callback,
        method: (callback != 0).then(|| delegates::delegate_method(r, w, callback)),
        state,
        state_type: object_type(r, state),
    };
    Ok((info, obj(&f, "_next")))
}

/// Every timer of every queue.
pub fn timers<M: Memory>(r: &ObjectReader<'_, M>, w: &StackWalker<'_, M>) -> Timers {
    let mut out = Timers::default();
    if let Err(e) = r.rt.require(crate::discovery::layout::Capability::Fields) {
        out.errors.push(e.to_string());
        return out;
    }
    let instances = match corelib_static_object(
        r,
        "System.Threading.TimerQueue",
        "<Instances>k__BackingField",
    ) {
        // No timer was ever created (or TimerQueue never loaded): none to list.
        Ok(0) => return out,
        Ok(a) => a,
        Err(e) => {
            out.errors.push(format!("the timer queues: {e}"));
            return out;
        }
    };
    out.instances = instances;
    let queues = match r
        .object_mt(instances)
        .and_then(|(_, i)| r.array(instances, &i))
    {
        Ok(Some(a)) if a.component_size == 8 => a,
        Ok(_) => {
            out.errors.push(format!(
                "TimerQueue.Instances {instances:#x} is not an array of references"
            ));
            return out;
        }
        Err(e) => {
            out.errors.push(format!("TimerQueue.Instances: {e}"));
            return out;
        }
    };
    let mut seen = HashSet::new();
    for i in 0..queues.length.min(MAX_QUEUES) {
        let slot = queues.data + 8 * i;
        let q = match r.rt.memory().read_u64(slot) {
            Ok(0) => continue,
            Ok(q) => q,
            Err(_) => {
                out.errors.push(format!(
                    "TimerQueue.Instances[{i}] at {slot:#x} is not in the dump"
                ));
                continue;
            }
        };
        let qf = match object_fields(r, q, "TimerQueue") {
            Ok(f) => f,
            Err(e) => {
                out.errors.push(format!("TimerQueue.Instances[{i}]: {e}"));
                continue;
            }
        };
        let before = out.timers.len();
        for (list, head) in [
            ("short", obj(&qf, "_shortTimers")),
            ("long", obj(&qf, "_longTimers")),
        ] {
            let mut cur = head;
            let mut n = 0usize;
            while cur != 0 {
                if !seen.insert(cur) {
                    out.errors.push(format!(
                        "TimerQueue {q:#x} {list} list: timer {cur:#x} met twice (a cycle): stopped"
                    ));
                    break;
                }
                if n >= MAX_TIMERS_PER_LIST {
                    out.errors.push(format!(
                        "TimerQueue {q:#x} {list} list longer than {MAX_TIMERS_PER_LIST}: cut"
                    ));
                    break;
                }
                n += 1;
                match read_timer(r, w, cur) {
                    Ok((mut t, next)) => {
                        t.queue_index = i as usize;
                        t.list = list;
                        if t.queue != q {
                            out.errors.push(format!(
                                "timer {cur:#x} on the {list} list of TimerQueue {q:#x} names \
                                 queue {:#x}",
                                t.queue
                            ));
                        }
                        out.timers.push(t);
                        cur = next;
                    }
                    Err(e) => {
                        out.errors.push(format!(
                            "TimerQueue {q:#x} {list} list: {e}; the rest of the list is lost"
                        ));
                        break;
                    }
                }
            }
        }
        out.queues.push(TimerQueueInfo {
            address: q,
            index: i as usize,
            active_count: int(&qf, "<ActiveCount>k__BackingField"),
            timers: out.timers.len() - before,
        });
    }
    out
}
