//! Tasks, timers and the thread pool: `taskstate` (`tks`), `timerinfo` (`ti`), `threadpool`,
//! `threadpoolqueue` (`tpq`), `dumpconcurrentqueue` (`dcq`), `dumpconcurrentdictionary` (`dcd`). SOS's names and options; the
//! data comes from clrdata's `tasks`, `timers`, `threadpool` and `delegates`.

use crate::addr::{hex, parse_address, parse_count};
use crate::output::{CommandError, Output, Render};
use crate::session::clr;
use crate::session::{Clr, Session};
use crate::spec::CommandSpec;
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::analysis::{collections, starvation, tasks, threadpool, timers};
use clrdata::model::delegates::DelegateMethod;
use clrdata::model::objects::{FieldValue, ObjectReader};
use clrdata::model::stack::StackWalker;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The commands of this file.
pub static SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "taskstate",
        aliases: &["tks"],
        about: "a Task's state flags decoded (from its address, or a raw m_stateFlags value)",
        grammar: tks_grammar,
        run: taskstate,
    },
    CommandSpec {
        name: "timerinfo",
        aliases: &["ti"],
        about: "every timer: due time, period, callback and state, then a summary with counts",
        grammar: ti_grammar,
        run: timerinfo,
    },
    CommandSpec {
        name: "threadpool",
        aliases: &[],
        about: "the thread pool: worker counts and limits, CPU utilization, worker threads, \
                starvation (work queued while every worker is blocked)",
        grammar: tp_grammar,
        run: threadpool_cmd,
    },
    CommandSpec {
        name: "threadpoolqueue",
        aliases: &["tpq"],
        about: "work items queued to the thread pool (global and per thread), with callbacks",
        grammar: tpq_grammar,
        run: threadpoolqueue,
    },
    CommandSpec {
        name: "dumpconcurrentqueue",
        aliases: &["dcq"],
        about: "the items of a ConcurrentQueue<T>, oldest first",
        grammar: dcq_grammar,
        run: dumpconcurrentqueue,
    },
    CommandSpec {
        name: "dumpconcurrentdictionary",
        aliases: &["dcd"],
        about: "the key/value pairs of a ConcurrentDictionary<TKey, TValue>",
        grammar: dcd_grammar,
        run: dumpconcurrentdictionary,
    },
];

type Reader<'a> = ObjectReader<'a, Arc<dyn dumpreader::Target>>;
type Walker<'a> = StackWalker<'a, Arc<dyn dumpreader::Target>>;

/// What these commands read: CoreLib objects (thread pool, timers, queues) by field name.
const FIELD_NEEDS: &[clrdata::discovery::layout::Capability] = &[
    clrdata::discovery::layout::Capability::HeapWalk,
    clrdata::discovery::layout::Capability::TypeNames,
    clrdata::discovery::layout::Capability::Fields,
];

fn tools(c: &Clr) -> (Reader<'_>, Walker<'_>) {
    (
        ObjectReader::new(&c.rt, &c.names),
        StackWalker::new(&c.rt, &c.names, HashMap::new()),
    )
}

fn opt_hex(a: u64) -> Option<String> {
    (a != 0).then(|| hex(a))
}

/// A delegate's method as JSON: `{delegate, method, method_desc, target, ...}` or
/// `{delegate, error}`.
#[derive(Serialize)]
pub struct MethodOut {
    pub delegate: String,
    pub method: Option<String>,
    pub method_desc: Option<String>,
    pub target: Option<String>,
    pub target_type: Option<String>,
    pub is_static: Option<bool>,
    pub resolved_by: Option<&'static str>,
    pub error: Option<String>,
}

fn method_out(delegate: u64, m: &Option<clrdata::Result<DelegateMethod>>) -> Option<MethodOut> {
    let m = m.as_ref()?;
    Some(match m {
        Ok(d) => MethodOut {
            delegate: hex(delegate),
            method: Some(d.method.clone()),
            method_desc: Some(hex(d.method_desc)),
            target: opt_hex(d.target),
            target_type: d.target_type.clone(),
            is_static: Some(d.is_static),
            resolved_by: Some(d.resolved_by),
            error: None,
        },
        Err(e) => MethodOut {
            delegate: hex(delegate),
            method: None,
            method_desc: None,
            target: None,
            target_type: None,
            is_static: None,
            resolved_by: None,
            error: Some(e.to_string()),
        },
    })
}

/// SOS's spelling of a callback: `Type.Method`, `(TargetType)Type.Method` when the target's
/// type is not the method's, `<why>` when unknown.
fn method_text(m: &Option<clrdata::Result<DelegateMethod>>) -> String {
    match m {
        None => "[no callback]".into(),
        Some(Err(e)) => format!("<method unknown: {e}>"),
        Some(Ok(d)) => {
            let name = d.short_name();
            match &d.target_type {
                Some(t) if !name.starts_with(&format!("{t}.")) => format!("({t}){name}"),
                _ => name.to_string(),
            }
        }
    }
}

// ------------------------------------------------------------------------------- taskstate

fn tks_grammar() -> Command {
    Command::new("taskstate")
        .arg(Arg::new("address").help("the Task's address"))
        .arg(
            Arg::new("value")
                .long("value")
                .short('v')
                .value_name("FLAGS")
                .help("an m_stateFlags value (decimal, or hex with 0x)"),
        )
}

#[derive(Serialize)]
pub struct TaskStateOut {
    pub address: Option<String>,
    pub type_name: Option<String>,
    pub id: Option<i64>,
    pub state_flags: u32,
    pub state_flags_hex: String,
    pub status: &'static str,
    pub flags: Vec<String>,
    pub callback: Option<MethodOut>,
    pub state_object: Option<String>,
    pub state_type: Option<String>,
    pub scheduler_type: Option<String>,
}

fn parse_value(t: &str) -> Result<u32, CommandError> {
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        t.parse::<u64>().ok()
    };
    v.and_then(|v| u32::try_from(v).ok()).ok_or_else(|| {
        CommandError::bad_argument(format!("\'{t}\'"), "not a 32-bit m_stateFlags value")
    })
}

fn taskstate(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let res = if let Some(v) = m.get_one::<String>("value") {
        let f = parse_value(v)?;
        TaskStateOut {
            address: None,
            type_name: None,
            id: None,
            state_flags: f,
            state_flags_hex: format!("{f:#x}"),
            status: tasks::task_status(f),
            flags: tasks::flag_names(f),
            callback: None,
            state_object: None,
            state_type: None,
            scheduler_type: None,
        }
    } else {
        let a = m
            .get_one::<String>("address")
            .ok_or_else(|| CommandError::Usage {
                message: "taskstate needs a Task address or -v <m_stateFlags value>".into(),
            })?;
        let a = parse_address(a)?;
        let c = clr(s)?;
        let (r, w) = tools(&c);
        let t = tasks::read_task(&r, &w, a)?;
        TaskStateOut {
            address: Some(hex(t.address)),
            type_name: Some(t.type_name.clone()),
            id: Some(t.id),
            state_flags: t.state_flags,
            state_flags_hex: format!("{:#x}", t.state_flags),
            status: t.status,
            flags: t.flags.clone(),
            callback: method_out(t.action, &t.method),
            state_object: opt_hex(t.state_object),
            state_type: t.state_type.clone(),
            scheduler_type: t.scheduler_type.clone(),
        }
    };
    Ok(Output::rendered("taskstate", res))
}

impl Render for TaskStateOut {
    fn render(&self) -> String {
        let mut t = format!("{}\n", self.status);
        t.push_str(&format!(
            "m_stateFlags {} ({}): {}\n",
            self.state_flags_hex,
            self.state_flags,
            if self.flags.is_empty() {
                "none".to_string()
            } else {
                self.flags.join(" | ")
            }
        ));
        if let Some(a) = &self.address {
            t.push_str(&format!(
                "Task {a} {}\n",
                self.type_name.as_deref().unwrap_or("")
            ));
        }
        if let Some(cb) = &self.callback {
            match (&cb.method, &cb.error) {
                (Some(mname), _) => t.push_str(&format!("m_action {} -> {mname}\n", cb.delegate)),
                (None, Some(e)) => t.push_str(&format!("m_action {}: {e}\n", cb.delegate)),
                _ => {}
            }
        }
        if let Some(so) = &self.state_object {
            t.push_str(&format!(
                "m_stateObject {so} ({})\n",
                self.state_type.as_deref().unwrap_or("?")
            ));
        }
        t
    }
}

// ------------------------------------------------------------------------------- timerinfo

fn ti_grammar() -> Command {
    Command::new("timerinfo")
}

#[derive(Serialize)]
pub struct TimerOut {
    pub address: String,
    pub queue: String,
    pub queue_index: usize,
    pub list: &'static str,
    pub due_ms: u32,
    pub period_ms: Option<u32>,
    pub start_ticks: i64,
    pub due_at_ticks: i64,
    pub canceled: bool,
    pub callback: Option<MethodOut>,
    pub state: Option<String>,
    pub state_type: Option<String>,
}

#[derive(Serialize)]
pub struct TimerGroupOut {
    pub count: usize,
    pub list: &'static str,
    pub due_ms: u32,
    pub period_ms: Option<u32>,
    pub state_type: Option<String>,
    pub method: String,
}

#[derive(Serialize)]
pub struct TimerInfoOut {
    pub timers: Vec<TimerOut>,
    pub summary: Vec<TimerGroupOut>,
    pub total: usize,
    pub queues: usize,
    pub errors: Vec<String>,
}

/// (method, period, due, list, state type): what SOS groups timers by.
type TimerKey = (String, Option<u32>, u32, &'static str, Option<String>);

fn period_text(p: Option<u32>) -> String {
    match p {
        Some(p) => format!("{p:>8}"),
        None => "  ------".into(),
    }
}

/// `timerinfo`'s result: the timers, in SOS's order (by period, one-shot timers last).
pub struct TimerInfoResult(pub timers::Timers);

impl TimerInfoResult {
    /// The timers grouped as SOS groups them, fewest first.
    fn summary(&self) -> Vec<TimerGroupOut> {
        let mut groups: BTreeMap<TimerKey, usize> = BTreeMap::new();
        for tm in &self.0.timers {
            *groups
                .entry((
                    method_text(&tm.method),
                    tm.period_ms,
                    tm.due_ms,
                    tm.list,
                    tm.state_type.clone(),
                ))
                .or_default() += 1;
        }
        let mut summary: Vec<TimerGroupOut> = groups
            .into_iter()
            .map(
                |((method, period_ms, due_ms, list, state_type), count)| TimerGroupOut {
                    count,
                    list,
                    due_ms,
                    period_ms,
                    state_type,
                    method,
                },
            )
            .collect();
        summary.sort_by(|a, b| a.count.cmp(&b.count).then(a.method.cmp(&b.method)));
        summary
    }

    fn to_json(&self) -> TimerInfoOut {
        let all = &self.0;
        TimerInfoOut {
            timers: all
                .timers
                .iter()
                .map(|t| TimerOut {
                    address: hex(t.address),
                    queue: hex(t.queue),
                    queue_index: t.queue_index,
                    list: t.list,
                    due_ms: t.due_ms,
                    period_ms: t.period_ms,
                    start_ticks: t.start_ticks,
                    due_at_ticks: t.due_at_ticks,
                    canceled: t.canceled,
                    callback: method_out(t.callback, &t.method),
                    state: opt_hex(t.state),
                    state_type: t.state_type.clone(),
                })
                .collect(),
            summary: self.summary(),
            total: all.timers.len(),
            queues: all.queues.len(),
            errors: all.errors.clone(),
        }
    }
}

impl Serialize for TimerInfoResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl Render for TimerInfoResult {
    fn render(&self) -> String {
        let all = &self.0;
        let mut text = String::new();
        for tm in &all.timers {
            text.push_str(&format!(
                "({}) {} @{:>8} ms every {} ms |  {} ({}) -> {}{}\n",
                if tm.list == "short" { "S" } else { "L" },
                hex(tm.address),
                tm.due_ms,
                period_text(tm.period_ms),
                hex(tm.state),
                tm.state_type.as_deref().unwrap_or(""),
                method_text(&tm.method),
                if tm.canceled { " [canceled]" } else { "" }
            ));
        }
        text.push_str(&format!(
            "\n   {} timers in {} queues\n-----------------------------------------------\n",
            all.timers.len(),
            all.queues.len()
        ));
        for g in &self.summary() {
            text.push_str(&format!(
                "{:>4} | ({}) @{:>8} ms every {} ms | ({}) -> {}\n",
                g.count,
                if g.list == "short" { "S" } else { "L" },
                g.due_ms,
                period_text(g.period_ms),
                g.state_type.as_deref().unwrap_or(""),
                g.method
            ));
        }
        if all.instances == 0 && all.errors.is_empty() {
            text.push_str("No timer was ever created (TimerQueue.Instances is null).\n");
        }
        for e in &all.errors {
            text.push_str(&format!("error: {e}\n"));
        }
        text.push_str("(due: ms after the timer was last scheduled, as SOS shows it)\n");
        text
    }
}

fn timerinfo(s: &Session, _m: &ArgMatches) -> Result<Output, CommandError> {
    let c = crate::session::clr_with(s, FIELD_NEEDS)?;
    let (r, w) = tools(&c);
    let mut all = timers::timers(&r, &w);
    // SOS orders by period (one-shot timers, whose period is UnsignedInfinite, last).
    all.timers
        .sort_by_key(|t| (t.period_ms.unwrap_or(u32::MAX), t.address));
    Ok(Output::rendered("timerinfo", TimerInfoResult(all)))
}

// ------------------------------------------------------------------------------ threadpool

fn tp_grammar() -> Command {
    Command::new("threadpool").arg(
        Arg::new("wi")
            .long("wi")
            .action(ArgAction::SetTrue)
            .help("also list the queued work items (as threadpoolqueue does)"),
    )
}

#[derive(Serialize)]
pub struct WorkerOut {
    pub thread: String,
    pub managed_id: u32,
    pub os_id: u64,
    pub state: Vec<&'static str>,
    pub role: Option<&'static str>,
    pub activity: Option<&'static str>,
    pub innermost: Option<String>,
    pub work_item_method: Option<String>,
    pub stack_incomplete: Option<String>,
}

#[derive(Serialize)]
pub struct HillOut {
    pub address: String,
    pub last_thread_count: Option<i64>,
    pub total_samples: Option<i64>,
    pub current_sample_ms: Option<i64>,
    pub accumulated_completion_count: Option<i64>,
}

#[derive(Serialize)]
pub struct ThreadPoolOut {
    pub kind: &'static str,
    pub instance: Option<String>,
    pub cpu_utilization: Option<i64>,
    pub workers_total: Option<i64>,
    pub workers_running: Option<i64>,
    pub workers_idle: Option<i64>,
    pub min_threads: Option<i64>,
    pub max_threads: Option<i64>,
    pub threads_goal: Option<i64>,
    pub counts_raw: Option<String>,
    pub requested_workers: Option<i64>,
    pub blocked_threads: Option<i64>,
    pub hill_climbing: Option<HillOut>,
    pub worker_threads: Vec<WorkerOut>,
    pub queued: Option<usize>,
    pub work_items: Option<Vec<WorkItemOut>>,
    /// Whether the pool is starved, and why (null when the pool was never started).
    pub starvation: Option<StarvationOut>,
    pub errors: Vec<String>,
    /// The queues, when asked for (`--wi`), for the text.
    #[serde(skip)]
    pub queue: Option<threadpool::WorkQueue>,
}

/// The starvation assessment ([`starvation::assess_starvation`]).
#[derive(Debug, Clone, Serialize)]
pub struct StarvationOut {
    pub starved: bool,
    pub workers_total: Option<i64>,
    pub workers_busy: Option<i64>,
    pub max_threads: Option<i64>,
    pub workers_blocked: usize,
    pub queued_global: usize,
    pub queued_local: usize,
    /// The queued work grouped by what it runs, most first.
    pub queued_work: Vec<starvation::QueuedWork>,
    /// The blocked workers grouped by what they block on, most first.
    pub blocked_on: Vec<BlockGroupOut>,
    /// The finding in words (when starved).
    pub summary: Option<String>,
    /// What the assessment could not read (then a worker's block may be named by a frame).
    pub notes: Vec<String>,
}

/// Workers blocked on one thing.
#[derive(Debug, Clone, Serialize)]
pub struct BlockGroupOut {
    pub count: usize,
    /// `task`, `monitor_wait`, `monitor_enter` or `call`.
    pub kind: &'static str,
    /// The task or monitor object.
    pub object: Option<String>,
    /// Its type (for `call`: the blocking method).
    #[serde(rename = "type")]
    pub type_name: String,
    /// The workers' OS ids.
    pub os_ids: Vec<u64>,
    /// The group in words (`Monitor.Wait on Ns.Gate 0x..`).
    pub text: String,
}

fn block_group_out(on: &starvation::WorkerBlock, os_ids: Vec<u64>) -> BlockGroupOut {
    use starvation::WorkerBlock as B;
    let (kind, object, type_name, text) = match on {
        B::Task { task, task_type } => (
            "task",
            Some(hex(*task)),
            task_type.clone(),
            format!("Task.Wait/.Result on task {} {task_type}", hex(*task)),
        ),
        B::MonitorWait { object, type_name } => (
            "monitor_wait",
            Some(hex(*object)),
            type_name.clone(),
            format!("Monitor.Wait on {type_name} {}", hex(*object)),
        ),
        B::MonitorEnter { object, type_name } => (
            "monitor_enter",
            Some(hex(*object)),
            type_name.clone(),
            format!("lock (Monitor.Enter) on {type_name} {}", hex(*object)),
        ),
        B::Call { method } => ("call", None, method.clone(), method.clone()),
    };
    BlockGroupOut {
        count: os_ids.len(),
        kind,
        object,
        type_name,
        os_ids,
        text,
    }
}

/// The starvation assessment of the target's pool (None when it was never started).
pub(crate) fn starvation_of(c: &Clr) -> Option<StarvationOut> {
    let (r, w) = tools(c);
    let walker = StackWalker::for_target(&c.rt, &c.names);
    let p = threadpool::thread_pool(&r, Some(&walker));
    if p.instance == 0 {
        return None;
    }
    let q = threadpool::work_queue(&r, &w);
    Some(starvation(c, &p, &q))
}

/// The starvation assessment of the pool `p` with its queue `q`
/// ([`starvation::assess`]), as the command shows it.
fn starvation(c: &Clr, p: &threadpool::ThreadPoolInfo, q: &threadpool::WorkQueue) -> StarvationOut {
    let (st, notes) = starvation::assess(&c.rt, &c.names, || c.heap(), p, q);
    let blocked_on: Vec<BlockGroupOut> = st
        .groups()
        .into_iter()
        .map(|(on, ids)| block_group_out(on, ids))
        .collect();
    let n = |v: Option<i64>| v.map_or("?".to_string(), |v| v.to_string());
    let summary = st.starved.then(|| {
        let on: Vec<String> = blocked_on
            .iter()
            .map(|g| format!("{} in {}", g.count, g.text))
            .collect();
        let mut work: Vec<String> = st
            .queued_work
            .iter()
            .take(3)
            .map(|g| format!("{} x {}", g.count, g.what))
            .collect();
        if st.queued_work.len() > 3 {
            work.push("...".into());
        }
        format!(
            "THREAD POOL STARVATION: {} of {} workers busy (max {}), {} blocked: {}; {} work item{} in the queues ({} global, {} local): {}",
            n(st.workers_busy),
            n(st.workers_total),
            n(st.max_threads),
            st.blocked.len(),
            on.join("; "),
            st.queued(),
            if st.queued() == 1 { " waits" } else { "s wait" },
            st.queued_global,
            st.queued_local,
            work.join(", ")
        )
    });
    StarvationOut {
        starved: st.starved,
        workers_total: st.workers_total,
        workers_busy: st.workers_busy,
        max_threads: st.max_threads,
        workers_blocked: st.blocked.len(),
        queued_global: st.queued_global,
        queued_local: st.queued_local,
        queued_work: st.queued_work.clone(),
        blocked_on,
        summary,
        notes,
    }
}

fn opt(v: Option<i64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "?".into())
}

fn threadpool_cmd(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = crate::session::clr_with(s, FIELD_NEEDS)?;
    let (r, w) = tools(&c);
    let walker = StackWalker::for_target(&c.rt, &c.names);
    let p = threadpool::thread_pool(&r, Some(&walker));
    let q = threadpool::work_queue(&r, &w);
    let idle = match (p.existing_threads, p.processing_work) {
        (Some(e), Some(r)) => Some(e - r),
        _ => None,
    };
    let starved = (p.instance != 0).then(|| starvation(&c, &p, &q));
    let wi = m.get_flag("wi");
    let res = ThreadPoolOut {
        kind: "portable",
        instance: opt_hex(p.instance),
        cpu_utilization: p.cpu_utilization,
        workers_total: p.existing_threads,
        workers_running: p.processing_work,
        workers_idle: idle,
        min_threads: p.min_threads,
        max_threads: p.max_threads,
        threads_goal: p.threads_goal,
        counts_raw: p.counts_raw.map(hex),
        requested_workers: p.requested_workers,
        blocked_threads: p.blocked_threads,
        hill_climbing: p.hill_climbing.as_ref().map(|h| HillOut {
            address: hex(h.address),
            last_thread_count: h.last_thread_count,
            total_samples: h.total_samples,
            current_sample_ms: h.current_sample_ms,
            accumulated_completion_count: h.accumulated_completion_count,
        }),
        worker_threads: p
            .workers
            .iter()
            .map(|wk| WorkerOut {
                thread: hex(wk.thread),
                managed_id: wk.managed_id,
                os_id: wk.os_id,
                state: wk.state.clone(),
                role: wk.activity.as_ref().map(|a| a.role),
                activity: wk.activity.as_ref().map(|a| a.activity),
                innermost: wk.activity.as_ref().and_then(|a| a.innermost.clone()),
                work_item_method: wk
                    .activity
                    .as_ref()
                    .and_then(|a| a.work_item_method.clone()),
                stack_incomplete: wk.activity.as_ref().and_then(|a| a.incomplete.clone()),
            })
            .collect(),
        queued: Some(q.items.len()),
        work_items: wi.then(|| q.items.iter().map(item_out).collect()),
        starvation: starved,
        errors: p.errors.clone(),
        queue: wi.then_some(q),
    };
    Ok(Output::rendered("threadpool", res))
}

impl Render for ThreadPoolOut {
    fn render(&self) -> String {
        let mut t = String::from("Using the Portable thread pool.\n\n");
        if self.instance.is_none() && self.errors.is_empty() {
            t.push_str(
                "The thread pool was never started (PortableThreadPool.ThreadPoolInstance is null).\n",
            );
        }
        if self.instance.is_some() {
            t.push_str(&format!(
                "CPU utilization:  {}%\n",
                opt(self.cpu_utilization)
            ));
            t.push_str(&format!("Workers Total:    {}\n", opt(self.workers_total)));
            t.push_str(&format!(
                "Workers Running:  {}\n",
                opt(self.workers_running)
            ));
            t.push_str(&format!("Workers Idle:     {}\n", opt(self.workers_idle)));
            t.push_str(&format!("Worker Min Limit: {}\n", opt(self.min_threads)));
            t.push_str(&format!("Worker Max Limit: {}\n", opt(self.max_threads)));
            t.push_str(&format!("Threads Goal:     {}\n", opt(self.threads_goal)));
            t.push_str(&format!(
                "Requested:        {}\n",
                opt(self.requested_workers)
            ));
        }
        t.push_str(&format!(
            "Queued work items: {} (threadpoolqueue lists them)\n",
            self.queued.unwrap_or(0)
        ));
        if let Some(h) = &self.hill_climbing {
            t.push_str(&format!(
                "Hill climbing:    last thread count {}, {} samples\n",
                opt(h.last_thread_count),
                opt(h.total_samples)
            ));
        }
        if !self.worker_threads.is_empty() {
            t.push_str("\nPool threads:\n   ID      OSID  Thread          Role    Activity\n");
            for wk in &self.worker_threads {
                let mut line = format!(
                    "  {:>3} {:>9}  {:<14}  {:<6}  {}",
                    wk.managed_id,
                    format!("{:#x}", wk.os_id),
                    wk.thread,
                    wk.role.unwrap_or("?"),
                    wk.activity.unwrap_or("?")
                );
                if let Some(m) = wk.work_item_method.as_deref() {
                    line.push_str(&format!(": {m}"));
                }
                if let Some(m) = wk.innermost.as_deref() {
                    line.push_str(&format!("; in {m}"));
                }
                t.push_str(&line);
                t.push('\n');
            }
        }
        if let Some(st) = &self.starvation {
            if let Some(line) = &st.summary {
                t.push('\n');
                t.push_str(line);
                t.push('\n');
            }
        }
        if let Some(q) = &self.queue {
            t.push('\n');
            t.push_str(&queue_text(q));
        }
        let queue_errors = self.queue.as_ref().map_or(&[][..], |q| &q.errors[..]);
        for e in self.errors.iter().chain(queue_errors) {
            t.push_str(&format!("error: {e}\n"));
        }
        t
    }
}

// ------------------------------------------------------------------------- threadpoolqueue

fn tpq_grammar() -> Command {
    Command::new("threadpoolqueue")
}

#[derive(Serialize)]
pub struct WorkItemOut {
    pub address: String,
    pub type_name: String,
    pub queue: String,
    pub local_queue: Option<String>,
    pub kind: &'static str,
    pub callback: Option<MethodOut>,
    pub state: Option<String>,
    pub state_type: Option<String>,
    pub task_status: Option<&'static str>,
}

fn item_out(i: &threadpool::WorkItem) -> WorkItemOut {
    WorkItemOut {
        address: hex(i.address),
        type_name: i.type_name.clone(),
        queue: i.queue.clone(),
        local_queue: i.local_queue.map(hex),
        kind: i.kind,
        callback: method_out(i.callback, &i.method),
        state: opt_hex(i.state),
        state_type: i.state_type.clone(),
        task_status: i.task_status,
    }
}

#[derive(Serialize)]
pub struct GroupOut {
    pub kind: &'static str,
    pub method: String,
    pub count: usize,
}

#[derive(Serialize)]
pub struct TpqOut {
    pub work_queue: Option<String>,
    pub items: Vec<WorkItemOut>,
    pub summary: Vec<GroupOut>,
    pub global: usize,
    pub local: usize,
    pub local_queues: usize,
    pub errors: Vec<String>,
}

fn summary(q: &threadpool::WorkQueue) -> Vec<GroupOut> {
    let mut g: BTreeMap<(&'static str, String), usize> = BTreeMap::new();
    for i in &q.items {
        let name = match i.kind {
            "Task" | "QueueUserWorkItem" | "Timer" | "Delegate" => method_text(&i.method),
            _ => i.type_name.clone(),
        };
        *g.entry((i.kind, name)).or_default() += 1;
    }
    let mut v: Vec<GroupOut> = g
        .into_iter()
        .map(|((kind, method), count)| GroupOut {
            kind,
            method,
            count,
        })
        .collect();
    v.sort_by(|a, b| {
        a.kind
            .cmp(b.kind)
            .then(a.count.cmp(&b.count))
            .then(a.method.cmp(&b.method))
    });
    v
}

fn queue_text(q: &threadpool::WorkQueue) -> String {
    let mut t = String::new();
    let line = |i: &threadpool::WorkItem| {
        let what = match i.kind {
            "Task" => format!("Task | {}", method_text(&i.method)),
            "QueueUserWorkItem" => format!("Work | {}", method_text(&i.method)),
            "Timer" => format!("Timer | {}", method_text(&i.method)),
            "Delegate" => format!("Delegate | {}", method_text(&i.method)),
            _ => i.type_name.clone(),
        };
        let state = match (&i.state_type, i.state) {
            (Some(st), s) if s != 0 => format!("  (state {} {st})", hex(s)),
            _ => String::new(),
        };
        let status = i.task_status.map(|s| format!(" [{s}]")).unwrap_or_default();
        format!("{} {what}{status}{state}\n", hex(i.address))
    };
    t.push_str("global work item queue________________________________\n");
    for i in q.items.iter().filter(|i| i.queue != "local") {
        if i.queue != "global" {
            t.push_str(&format!("[{}] ", i.queue));
        }
        t.push_str(&line(i));
    }
    t.push_str("\nlocal per thread work items_____________________________________\n");
    for i in q.items.iter().filter(|i| i.queue == "local") {
        t.push_str(&line(i));
    }
    t.push('\n');
    let s = summary(q);
    for kind in ["Task", "QueueUserWorkItem", "Timer", "Delegate", "Other"] {
        let rows: Vec<&GroupOut> = s.iter().filter(|g| g.kind == kind).collect();
        if rows.is_empty() {
            continue;
        }
        let label = match kind {
            "QueueUserWorkItem" => "Work",
            k => k,
        };
        let mut n = 0;
        for g in rows {
            t.push_str(&format!(" {:>4} {label:<5} {}\n", g.count, g.method));
            n += g.count;
        }
        t.push_str(&format!(" ----\n {n:>4}\n\n"));
    }
    t
}

/// `threadpoolqueue`'s result: the pool's queues.
pub struct QueueResult(pub threadpool::WorkQueue);

impl Serialize for QueueResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let q = &self.0;
        let local = q.items.iter().filter(|i| i.queue == "local").count();
        TpqOut {
            work_queue: opt_hex(q.work_queue),
            items: q.items.iter().map(item_out).collect(),
            summary: summary(q),
            global: q.items.len() - local,
            local,
            local_queues: q.local_queues.len(),
            errors: q.errors.clone(),
        }
        .serialize(s)
    }
}

impl Render for QueueResult {
    fn render(&self) -> String {
        let q = &self.0;
        let mut t = queue_text(q);
        if q.work_queue == 0 && q.errors.is_empty() {
            t.push_str("The thread pool was never used (ThreadPool.s_workQueue is null).\n");
        }
        for e in &q.errors {
            t.push_str(&format!("error: {e}\n"));
        }
        t
    }
}

fn threadpoolqueue(s: &Session, _m: &ArgMatches) -> Result<Output, CommandError> {
    let c = crate::session::clr_with(s, FIELD_NEEDS)?;
    let (r, w) = tools(&c);
    let q = threadpool::work_queue(&r, &w);
    Ok(Output::rendered("threadpoolqueue", QueueResult(q)))
}

// --------------------------------------------------------------------- dumpconcurrentqueue

fn dcq_grammar() -> Command {
    Command::new("dumpconcurrentqueue")
        .arg(
            Arg::new("address")
                .required(true)
                .help("the ConcurrentQueue<T>'s address"),
        )
        .arg(
            Arg::new("limit")
                .long("limit")
                .value_name("N")
                .help("list at most N items (default: all, up to 1,000,000)"),
        )
}

use crate::objects::value_json;

#[derive(Serialize)]
pub struct ItemOut {
    pub position: i64,
    pub segment: String,
    pub slot: String,
    pub value: serde_json::Value,
    pub type_name: Option<String>,
    pub fields: Vec<FieldOut>,
    pub published: bool,
}

#[derive(Serialize)]
pub struct FieldOut {
    pub name: String,
    pub value: serde_json::Value,
}

#[derive(Serialize)]
pub struct SegmentOut {
    pub address: String,
    pub slots: String,
    pub capacity: u64,
    pub head: i64,
    pub tail: i64,
    pub frozen: bool,
    pub count: u64,
}

#[derive(Serialize)]
pub struct DcqOut {
    pub address: String,
    pub type_name: String,
    pub element_type: Option<String>,
    pub count: u64,
    pub segments: Vec<SegmentOut>,
    pub items: Vec<ItemOut>,
    pub errors: Vec<String>,
    /// The queue as read, for the text.
    #[serde(skip)]
    pub data: threadpool::ConcurrentQueueData,
}

fn value_text(
    v: &FieldValue,
    type_name: &Option<String>,
    fields: &[(String, FieldValue)],
) -> String {
    match v {
        FieldValue::Object { address: 0, .. } => "null".into(),
        FieldValue::Object {
            address,
            string: Some(s),
            ..
        } => format!("{} \"{s}\"", hex(*address)),
        FieldValue::Object { address, .. } => {
            format!("{} {}", hex(*address), type_name.as_deref().unwrap_or(""))
        }
        FieldValue::ValueType { address, .. } => {
            let inner: Vec<String> = fields
                .iter()
                .map(|(n, v)| format!("{n}={}", v.display()))
                .collect();
            format!(
                "{} {} {{{}}}",
                hex(*address),
                type_name.as_deref().unwrap_or(""),
                inner.join(", ")
            )
        }
        v => v.display(),
    }
}

impl Render for DcqOut {
    fn render(&self) -> String {
        let mut t = format!(
            "{} {} ({} items of {} in {} segments)\n",
            hex(self.data.address),
            self.data.type_name,
            self.count,
            self.data.element_type.as_deref().unwrap_or("?"),
            self.data.segments.len()
        );
        for (i, it) in self.data.items.iter().enumerate() {
            t.push_str(&format!(
                "[{i}] {}{}\n",
                value_text(&it.value, &it.type_name, &it.fields),
                if it.published {
                    ""
                } else {
                    " (enqueue not yet published)"
                }
            ));
        }
        if (self.data.items.len() as u64) < self.count {
            t.push_str(&format!(
                "... {} more not listed\n",
                self.count - self.data.items.len() as u64
            ));
        }
        for e in &self.data.errors {
            t.push_str(&format!("error: {e}\n"));
        }
        t
    }
}

fn dumpconcurrentqueue(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let a = crate::objects::addr(m, "address")?;
    let limit = match m.get_one::<String>("limit") {
        Some(l) => parse_count(l)? as usize,
        None => threadpool::MAX_ITEMS,
    };
    let c = crate::session::clr_with(s, FIELD_NEEDS)?;
    let (r, _) = tools(&c);
    let d = threadpool::concurrent_queue(&r, a, limit.min(threadpool::MAX_ITEMS))?;
    let count: u64 = d.segments.iter().map(|s| s.count).sum();
    let res = DcqOut {
        address: hex(d.address),
        type_name: d.type_name.clone(),
        element_type: d.element_type.clone(),
        count,
        segments: d
            .segments
            .iter()
            .map(|s| SegmentOut {
                address: hex(s.address),
                slots: hex(s.slots),
                capacity: s.capacity,
                head: s.head,
                tail: s.tail,
                frozen: s.frozen,
                count: s.count,
            })
            .collect(),
        items: d
            .items
            .iter()
            .map(|it| ItemOut {
                position: it.position,
                segment: hex(it.segment),
                slot: hex(it.slot_address),
                value: value_json(&r, &it.value),
                type_name: it.type_name.clone(),
                fields: it
                    .fields
                    .iter()
                    .map(|(n, v)| FieldOut {
                        name: n.clone(),
                        value: value_json(&r, v),
                    })
                    .collect(),
                published: it.published,
            })
            .collect(),
        errors: d.errors.clone(),
        data: d,
    };
    Ok(Output::rendered("dumpconcurrentqueue", res))
}

// --------------------------------------------------------------- dumpconcurrentdictionary

fn dcd_grammar() -> Command {
    Command::new("dumpconcurrentdictionary").arg(
        Arg::new("address")
            .required(true)
            .help("the ConcurrentDictionary<TKey, TValue>'s address"),
    )
}

#[derive(Serialize)]
pub struct DcdEntryOut {
    pub bucket: u64,
    pub node: String,
    /// The key: as `dumpobj`'s field values.
    pub key: serde_json::Value,
    /// The key as SOS prints it (`"text"`, `42`, `dumpobj <addr>`, `dumpvc <mt> <addr>`).
    pub key_text: String,
    pub value: serde_json::Value,
    pub value_text: String,
}

#[derive(Serialize)]
pub struct DcdOut {
    pub address: String,
    pub type_name: String,
    pub tables: String,
    pub buckets: String,
    pub bucket_count: u64,
    pub count: u64,
    pub entries: Vec<DcdEntryOut>,
    pub errors: Vec<String>,
    /// The header line: the type in ClrMD's form, as SOS prints it.
    #[serde(skip)]
    pub title: String,
}

/// SOS's primitive types, printed as values (ClrMDHelper's `IsSimpleType`).
const SIMPLE_TYPES: &[&str] = &[
    "System.Char",
    "System.Boolean",
    "System.SByte",
    "System.Byte",
    "System.Int16",
    "System.UInt16",
    "System.Int32",
    "System.UInt32",
    "System.Int64",
    "System.UInt64",
    "System.Single",
    "System.Double",
    "System.IntPtr",
    "System.UIntPtr",
];

/// A key or value as SOS's `dcd` prints it: a string quoted, a primitive's value, else the
/// command that shows it (`dumparray <addr>`, `dumpobj <addr>`, `dumpvc <mt> <addr>`); null
/// references `null`; cut to 100 characters and `...`.
fn dcd_text(r: &Reader<'_>, f: &clrdata::model::objects::FieldData) -> String {
    let t = match &f.value {
        FieldValue::Object { address: 0, .. } => "null".to_owned(),
        FieldValue::Object {
            string: Some(s), ..
        } => format!("\"{s}\""),
        FieldValue::Object { address, mt, .. } => {
            let info = mt.and_then(|m| r.mt(m));
            if info.as_ref().is_some_and(|i| i.array.is_some()) {
                format!("dumparray {address:016x}")
            } else {
                format!("dumpobj {address:016x}")
            }
        }
        v if SIMPLE_TYPES.contains(&f.type_name.as_str()) => match (f.type_name.as_str(), v) {
            ("System.Char", FieldValue::Char { value }) => {
                format!(
                    "'{}'",
                    char::from_u32(u32::from(*value)).unwrap_or('\u{fffd}')
                )
            }
            ("System.Boolean", FieldValue::Bool { value }) => {
                if *value { "True" } else { "False" }.to_owned()
            }
            ("System.IntPtr" | "System.UIntPtr", FieldValue::Pointer { value: 0 }) => {
                "null".to_owned()
            }
            ("System.IntPtr" | "System.UIntPtr", FieldValue::Pointer { value }) => {
                format!("0x{value:x}")
            }
            (_, v) => v.display(),
        },
        FieldValue::ValueType { address, mt } => format!(
            "dumpvc {:016x} {address:016x}",
            f.type_mt.or(*mt).unwrap_or(0)
        ),
        v => v.display(),
    };
    if t.chars().count() <= 100 {
        t
    } else {
        format!("{}...", t.chars().take(100).collect::<String>())
    }
}

impl Render for DcdOut {
    /// SOS's text: the type, then per entry `    -----`, `      Key: ..`, `    Value: ..`, then
    /// a rule, `N items` and an empty line.
    fn render(&self) -> String {
        let mut t = format!("{}\n", self.title);
        for e in &self.entries {
            t.push_str(&format!(
                "    -----\n      Key: {}\n    Value: {}\n",
                e.key_text, e.value_text
            ));
        }
        t.push_str("---------------------------------------------\n");
        t.push_str(&format!("{} items\n\n", self.count));
        for e in &self.errors {
            t.push_str(&format!("error: {e}\n"));
        }
        t
    }
}

fn dumpconcurrentdictionary(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let a = crate::objects::addr(m, "address")?;
    let c = crate::session::clr_with(s, FIELD_NEEDS)?;
    let (r, _) = tools(&c);
    let d = collections::concurrent_dictionary(&r, a, collections::MAX_ENTRIES)?;
    let mut errors = d.errors.clone();
    if d.cut {
        errors.push(format!(
            "more than {} entries: the rest are not listed",
            collections::MAX_ENTRIES
        ));
    }
    let res = DcdOut {
        address: hex(d.address),
        type_name: d.type_name.clone(),
        tables: hex(d.tables),
        buckets: hex(d.buckets),
        bucket_count: d.bucket_count,
        count: d.entries.len() as u64,
        entries: d
            .entries
            .iter()
            .map(|e| DcdEntryOut {
                bucket: e.bucket,
                node: hex(e.node),
                key: value_json(&r, &e.key.value),
                key_text: dcd_text(&r, &e.key),
                value: value_json(&r, &e.value.value),
                value_text: dcd_text(&r, &e.value),
            })
            .collect(),
        errors,
        title: crate::style::to_clrmd(&d.type_name).into_owned(),
    };
    Ok(Output::rendered("dumpconcurrentdictionary", res))
}
