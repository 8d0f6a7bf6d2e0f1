//! `dumpasync`: async state machines of the heap as logical stacks (innermost first).

use crate::addr::hex;
use crate::addr::parse_address;
use crate::output::{CommandError, Output};
use crate::session::Clr;
use crate::session::Session;
use crate::spec::CommandSpec;
use crate::tree::{self, Node};
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::analysis::asyncsm::{self, AsyncBox};
use clrdata::analysis::causality::{self, Cause};
use clrdata::analysis::channels::ChannelState;
use clrdata::analysis::listing::{self, AsyncListing, AsyncQuery, ASYNC_NEEDS, CAUSALITY_NEEDS};
use clrdata::model::objects::ObjectReader;
use clrdata::model::stack::StackWalker;
use serde::Serialize;

/// The async commands.
pub static SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "dumpasync",
        aliases: &[],
        about: "async state machines as logical stacks (innermost first), found without the DAC",
        grammar,
        run: dumpasync,
    },
    CommandSpec {
        name: "causality",
        aliases: &[],
        about: "who waits for what: threads blocked on tasks, joined with the async chains they \
                wait for, and what each chain waits for (a TaskCompletionSource, a SemaphoreSlim, \
                a timer, queued work, a channel)",
        grammar: causality_grammar,
        run: causality,
    },
];

fn grammar() -> Command {
    Command::new("dumpasync")
        .arg(
            Arg::new("stats")
                .long("stats")
                .action(ArgAction::SetTrue)
                .help("count boxes by state machine type"),
        )
        .arg(
            Arg::new("completed")
                .long("completed")
                .short('c')
                .action(ArgAction::SetTrue)
                .help("include boxes whose task has completed"),
        )
        .arg(
            Arg::new("address")
                .long("address")
                .alias("addr")
                .value_name("ADDR")
                .help("only the chains holding the box at this address"),
        )
        .arg(
            Arg::new("type")
                .long("type")
                .value_name("TEXT")
                .help("only the chains with a state machine whose type contains this text"),
        )
        .arg(
            Arg::new("coalesce")
                .long("coalesce")
                .action(ArgAction::SetTrue)
                .help("group chains with the same state machine types, with counts"),
        )
        .arg(
            Arg::new("methodtable")
                .long("methodtable")
                .alias("mt")
                .value_name("MT")
                .help("only the chains with a box of this MethodTable"),
        )
        .arg(
            Arg::new("fields")
                .long("fields")
                .short('f')
                .action(ArgAction::SetTrue)
                .help("show each state machine's fields"),
        )
        .arg(
            Arg::new("tasks")
                .long("tasks")
                .short('t')
                .action(ArgAction::SetTrue)
                .help("also list the other tasks of the heap (not state machine boxes), with their status"),
        )
}

fn causality_grammar() -> Command {
    Command::new("causality").arg(
        Arg::new("all")
            .short('a')
            .long("all")
            .action(ArgAction::SetTrue)
            .help(
                "also list chains nobody waits for synchronously (default: all chains are listed; \
                   with -a completed ones too)",
            ),
    )
}

#[derive(Serialize)]
pub struct AwaiterOut {
    pub field: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub object: Option<String>,
    pub object_type: Option<String>,
    /// The channel whose waiter lists hold the awaited operation (see `causality`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<serde_json::Value>,
}

#[derive(Serialize)]
pub struct BoxOut {
    pub address: String,
    pub mt: String,
    pub box_type: String,
    /// `task` or `pooling` (a PoolingAsyncValueTaskMethodBuilder box, no Task).
    pub kind: asyncsm::BoxKind,
    /// The raw state machine type (`Ns.Program+<<Main>g__Fetch|0_1>d`).
    pub state_machine_type: String,
    /// The method as its author wrote it (`Ns.Program.Main.Fetch (local function)`).
    pub method: String,
    pub state_machine_mt: Option<String>,
    pub state: Option<i64>,
    pub state_name: &'static str,
    pub task_flags: String,
    pub task_status: &'static str,
    pub completed: bool,
    pub continuation_object: Option<String>,
    /// Where the continuation was read (`m_continuationObject`, ...).
    pub continuation_via: &'static str,
    pub continuations: Vec<String>,
    /// Threads blocked synchronously on this box's task (`Task+SetOnInvokeMres` events in
    /// its continuation).
    pub sync_waiters: usize,
    pub awaiters: Vec<AwaiterOut>,
    /// A runtime-async method's frame (.NET 11, kind `runtime_async`): its continuation's
    /// DiagnosticIP, suspension point, method and owning task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_async: Option<RuntimeAsyncOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<FieldOut>>,
}

/// A runtime-async method's frame (its `Continuation`).
#[derive(Serialize)]
pub struct RuntimeAsyncOut {
    /// `ResumeInfo->DiagnosticIP`: where in the method's code it suspended.
    pub diagnostic_ip: String,
    /// `Continuation.State`: the suspension point's index.
    pub state: i32,
    /// `Continuation.Flags`.
    pub flags: String,
    /// The method's MethodDesc.
    pub method_desc: Option<String>,
    /// The method as the DAC names its code (with its parameters).
    pub method: Option<String>,
    /// Why the method is not named, when it is not.
    pub method_error: Option<String>,
    /// The `AsyncHelpers+RuntimeAsyncTask` owning the chain.
    pub task: Option<String>,
    /// The Thread whose dispatcher runs the chain now (`AsyncDispatcherInfo.t_current`).
    pub running_on_thread: Option<String>,
}

#[derive(Serialize)]
pub struct FieldOut {
    /// The field's own (compiler-generated) name.
    pub name: String,
    /// The name as the user wrote it (`<attempt>5__2` → `attempt`, `<>u__1` → `awaiter 1`).
    pub display_name: String,
    /// What it holds: argument, local, state, builder, awaiter, this, temporary, iterator.
    pub kind: asyncsm::HoistedKind,
    #[serde(rename = "type")]
    pub type_name: String,
    pub value: String,
    /// A string field's characters (at most 1024).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub string: Option<String>,
}

fn box_out(b: &AsyncBox, facts: &asyncsm::TaskFacts) -> BoxOut {
    BoxOut {
        address: hex(b.address),
        mt: hex(b.mt),
        box_type: b.box_type.clone(),
        kind: b.kind,
        state_machine_type: b.state_machine_type.clone(),
        method: asyncsm::async_method_name(&b.state_machine_type),
        state_machine_mt: b.state_machine_mt.map(hex),
        state: b.state,
        state_name: b.state_name(),
        task_flags: hex(b.task_flags as u64),
        task_status: b.task_status(),
        completed: b.completed(),
        continuation_object: (b.continuation_object != 0).then(|| hex(b.continuation_object)),
        continuation_via: b.continuation_via,
        continuations: b.continuations.iter().copied().map(hex).collect(),
        sync_waiters: b.wait_events.len(),
        awaiters: b
            .awaiters
            .iter()
            .map(|a| AwaiterOut {
                field: a.field.clone(),
                type_name: a.type_name.clone(),
                object: a.object.map(hex),
                object_type: a.object_type.clone(),
                channel: a.object.and_then(|o| facts.channel_of(o)).map(channel_json),
            })
            .collect(),
        runtime_async: b.runtime_async.as_ref().map(|f| RuntimeAsyncOut {
            diagnostic_ip: hex(f.diagnostic_ip),
            state: f.state,
            flags: hex(f.flags as u64),
            method_desc: f.method_desc.map(hex),
            method: f.method.clone(),
            method_error: f.method_error.clone(),
            task: (f.task != 0).then(|| hex(f.task)),
            running_on_thread: f.running_on_thread.map(hex),
        }),
        fields: None,
    }
}

/// One `--fields` line: `System.Int32 attempt = 5 (local <attempt>5__2)`, a string's text
/// quoted after its address.
fn field_line(f: &FieldOut) -> String {
    use asyncsm::HoistedKind as K;
    let mut x = format!("{} {} = {}", f.type_name, f.display_name, f.value);
    if let Some(st) = &f.string {
        x.push_str(&format!(" {st:?}"));
    }
    let kind = match f.kind {
        K::Argument => Some("argument"),
        K::Local => Some("local"),
        _ => None,
    };
    match (kind, f.display_name != f.name) {
        (Some(k), true) => x.push_str(&format!(" ({k} {})", f.name)),
        (Some(k), false) => x.push_str(&format!(" ({k})")),
        (None, true) => x.push_str(&format!(" ({})", f.name)),
        (None, false) => {}
    }
    x
}

#[derive(Serialize)]
pub struct ChainOut {
    /// Innermost first.
    pub boxes: Vec<BoxOut>,
    /// How many chains share these types (1 unless --coalesce).
    pub count: usize,
    /// The outermost box continues back into this box of the chain: the tasks await each
    /// other in a ring and none can complete.
    pub cycle_back_to: Option<String>,
    /// Threads blocked synchronously on a task of this chain (`Task.Wait`, `.Result`,
    /// `GetAwaiter().GetResult()`), proven from their stacks; `null` where the stacks are not
    /// read on this runtime (the boxes' `sync_waiters` still count them).
    pub blocked_threads: Option<Vec<BlockedThread>>,
}

#[derive(Serialize, Clone)]
pub struct BlockedThread {
    pub os_id: u64,
    pub managed_id: u32,
    /// The outermost waiting frame.
    pub via: Option<String>,
    /// The task it waits on (a box of the chain, or the task its innermost box awaits).
    pub task: String,
}

#[derive(Serialize)]
pub struct StatOut {
    pub state_machine_type: String,
    pub count: usize,
}

#[derive(Serialize)]
pub struct TaskOut {
    pub address: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub task_status: &'static str,
    pub task_flags: String,
}

#[derive(Serialize)]
pub struct Result {
    pub chains: Vec<ChainOut>,
    pub stats: Option<Vec<StatOut>>,
    pub tasks: Option<Vec<TaskOut>>,
    /// State machine boxes (Task and pooled ValueTask boxes).
    pub total_boxes: usize,
    /// Runtime-async methods' frames (.NET 11), listed among the boxes of the chains.
    pub runtime_async_frames: usize,
    pub shown_boxes: usize,
    pub completed_skipped: usize,
    /// Rings of boxes awaiting each other (addresses, in continuation order).
    pub cycles: Vec<Vec<String>>,
    /// Pooled boxes idle in their pool's cache (not listed).
    pub idle_pooled_boxes: usize,
    /// Why `blocked_threads` is null, when it is.
    pub blocked_threads_unavailable: Option<String>,
    /// Damaged places the heap walk met (each in `errors`): the listing may be incomplete.
    pub heap_walk_errors: usize,
    pub errors: Vec<String>,
}

fn field_out(f: &listing::HoistedField) -> FieldOut {
    FieldOut {
        name: f.name.clone(),
        display_name: f.display_name.clone(),
        kind: f.kind,
        type_name: f.type_name.clone(),
        value: f.value.clone(),
        string: f.string.clone(),
    }
}

/// `dumpasync`'s result: the listing the query asked for.
pub struct DumpAsync(pub AsyncListing);

impl DumpAsync {
    /// The JSON form (docs/json.md, `dumpasync`).
    pub fn to_json(&self) -> Result {
        let l = &self.0;
        let a = &l.analysis;
        Result {
            chains: l
                .chains
                .iter()
                .map(|ch| ChainOut {
                    boxes: ch
                        .boxes
                        .iter()
                        .enumerate()
                        .map(|(k, &i)| {
                            let mut o = box_out(&a.boxes[i], &a.facts);
                            o.fields = ch
                                .fields
                                .as_ref()
                                .map(|fs| fs[k].iter().map(field_out).collect());
                            o
                        })
                        .collect(),
                    count: ch.count,
                    cycle_back_to: ch.cycle_back_to.map(|i| hex(a.boxes[i].address)),
                    blocked_threads: ch.blocked_threads.as_ref().map(|ts| {
                        ts.iter()
                            .map(|t| BlockedThread {
                                os_id: t.os_id,
                                managed_id: t.managed_id,
                                via: t.via.clone(),
                                task: hex(t.task),
                            })
                            .collect()
                    }),
                })
                .collect(),
            stats: l.stats.as_ref().map(|v| {
                v.iter()
                    .map(|(t, count)| StatOut {
                        state_machine_type: t.clone(),
                        count: *count,
                    })
                    .collect()
            }),
            tasks: l.tasks.as_ref().map(|v| {
                v.iter()
                    .map(|x| TaskOut {
                        address: hex(x.address),
                        type_name: x.type_name.clone(),
                        task_status: x.status(),
                        task_flags: hex(x.flags as u64),
                    })
                    .collect()
            }),
            total_boxes: a
                .boxes
                .iter()
                .filter(|b| b.kind != asyncsm::BoxKind::RuntimeAsync)
                .count(),
            runtime_async_frames: a
                .boxes
                .iter()
                .filter(|b| b.kind == asyncsm::BoxKind::RuntimeAsync)
                .count(),
            shown_boxes: l.shown_boxes,
            completed_skipped: l.completed_skipped,
            cycles: a
                .cycles
                .iter()
                .map(|r| r.iter().map(|&i| hex(a.boxes[i].address)).collect())
                .collect(),
            idle_pooled_boxes: a.idle_pooled_boxes,
            blocked_threads_unavailable: l.blocked_unavailable.as_ref().map(|e| e.to_string()),
            heap_walk_errors: a.heap_walk_errors,
            errors: a.errors.clone(),
        }
    }
}

impl Serialize for DumpAsync {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl crate::output::Render for DumpAsync {
    fn render(&self) -> String {
        let l = &self.0;
        let a = &l.analysis;
        let mut t = String::new();
        if let Some(st) = &l.stats {
            t.push_str(&format!("{:>8} {}\n", "Count", "State machine type"));
            for (ty, n) in st {
                t.push_str(&format!("{n:>8} {ty}\n"));
            }
            t.push_str(&format!("Total {} boxes\n", l.shown_boxes));
        } else {
            for ch in &l.chains {
                if ch.count > 1 {
                    t.push_str(&format!("{} chains:\n", ch.count));
                }
                for (depth, &i) in ch.boxes.iter().enumerate() {
                    render_box(&mut t, &a.boxes[i], depth);
                    if let Some(fs) = &ch.fields {
                        for f in &fs[depth] {
                            t.push_str(&format!(
                                "{:indent$}    {}\n",
                                "",
                                field_line(&field_out(f)),
                                indent = depth * 2
                            ));
                        }
                    }
                    render_awaited(&mut t, l, &a.boxes[i], depth);
                }
                if let Some(back) = ch.cycle_back_to {
                    t.push_str(&format!(
                        "{:indent$}^^ CYCLE: continues back into {:016x} {}: these tasks await each other, none can complete\n",
                        "",
                        a.boxes[back].address,
                        asyncsm::async_method_name(&a.boxes[back].state_machine_type),
                        indent = ch.boxes.len() * 2
                    ));
                }
                match &ch.blocked_threads {
                    Some(ts) => {
                        for th in ts {
                            t.push_str(&format!(
                                "  Blocked thread {:x} (managed {}) in {} on task {}\n",
                                th.os_id,
                                th.managed_id,
                                th.via.as_deref().unwrap_or("?"),
                                hex(th.task)
                            ));
                        }
                    }
                    None => {
                        let n: usize = ch.boxes.iter().map(|&i| a.boxes[i].wait_events.len()).sum();
                        if n > 0 {
                            t.push_str(&format!(
                                "  {n} thread(s) blocked synchronously on it (Task.Wait/.Result); which: causality (needs the stacks)\n"
                            ));
                        }
                    }
                }
                t.push('\n');
            }
            for ring in &a.cycles {
                let names: Vec<String> = ring
                    .iter()
                    .map(|&i| {
                        format!(
                            "{} ({:x})",
                            asyncsm::async_method_name(&a.boxes[i].state_machine_type),
                            a.boxes[i].address
                        )
                    })
                    .collect();
                t.push_str(&format!(
                    "Cycle of {} tasks awaiting each other: {} -> back to the first\n",
                    ring.len(),
                    names.join(" -> ")
                ));
            }
            if a.idle_pooled_boxes > 0 {
                t.push_str(&format!(
                    "{} pooled ValueTask boxes idle in their pool (not listed)\n",
                    a.idle_pooled_boxes
                ));
            }
            t.push_str(&format!(
                "{} chains, {} boxes shown of {} ({} completed skipped){}\n",
                l.chains.len(),
                l.shown_boxes,
                a.boxes.len(),
                l.completed_skipped,
                crate::text::incomplete(a.heap_walk_errors)
            ));
        }
        if let Some(tasks) = &l.tasks {
            t.push_str(&format!("\n{} other tasks:\n", tasks.len()));
            for x in tasks {
                t.push_str(&format!(
                    "{:>18} {:<22} {}\n",
                    hex(x.address),
                    x.status(),
                    x.type_name
                ));
            }
        }
        for e in &a.errors {
            t.push_str(&format!("error: {e}\n"));
        }
        t
    }
}

/// A box's line: address, MethodTable, state, status and method, indented by its depth.
fn render_box(t: &mut String, b: &AsyncBox, depth: usize) {
    let state = match b.state {
        Some(v) if !b.completed() => v.to_string(),
        Some(_) => "-".into(),
        None => "?".into(),
    };
    t.push_str(&format!(
        "{:indent$}{:016x} {:016x} {:>4} {:<9} {}{}\n",
        "",
        b.address,
        b.mt,
        state,
        if b.completed() {
            b.task_status()
        } else {
            b.state_name()
        },
        asyncsm::async_method_name(&b.state_machine_type),
        match b.kind {
            asyncsm::BoxKind::Pooling => " [pooled ValueTask box]",
            asyncsm::BoxKind::RuntimeAsync => " [runtime-async]",
            asyncsm::BoxKind::Task => "",
        },
        indent = depth * 2
    ));
}

/// What a box awaits that is not itself a box (a TaskCompletionSource's task, a channel's
/// operation, ...), with the channel it belongs to.
fn render_awaited(t: &mut String, l: &AsyncListing, b: &AsyncBox, depth: usize) {
    for aw in &b.awaiters {
        if let (Some(o), Some(ot)) = (aw.object, &aw.object_type) {
            if !l.is_box(o) {
                t.push_str(&format!(
                    "{:indent$}  << Awaiting: {o:016x} {ot} >>\n",
                    "",
                    indent = depth * 2
                ));
                if let Some(ch) = l.analysis.facts.channel_of(o) {
                    let role = ch.role_of(o).map_or("?", |(r, _)| r.api());
                    t.push_str(&format!(
                        "{:indent$}     ({role} on {})\n",
                        "",
                        channel_summary(ch),
                        indent = depth * 2
                    ));
                }
            }
        }
    }
}

fn dumpasync(s: &Session, m: &ArgMatches) -> std::result::Result<Output, CommandError> {
    let c = crate::session::clr_with(s, ASYNC_NEEDS)?;
    let heap = c.heap()?;
    let q = AsyncQuery {
        completed: m.get_flag("completed"),
        address: m
            .get_one::<String>("address")
            .map(|t| parse_address(t))
            .transpose()?,
        mt: m
            .get_one::<String>("methodtable")
            .map(|t| parse_address(t))
            .transpose()?,
        type_contains: m.get_one::<String>("type").cloned(),
        coalesce: m.get_flag("coalesce"),
        stats: m.get_flag("stats"),
        fields: m.get_flag("fields"),
        tasks: m.get_flag("tasks"),
    };
    let l = listing::list(&c.rt, &c.names, heap, &q);
    Ok(Output::rendered("dumpasync", DumpAsync(l)))
}

// ------------------------------------------------------------------------------ pstacks --async

#[derive(Serialize)]
pub struct AsyncStacks {
    /// Logical stacks merged (chains of boxes not completed).
    pub chains: usize,
    pub roots: Vec<Node>,
    pub errors: Vec<String>,
    /// Render every stack, not only the shared ones (`pstacks --all`).
    #[serde(skip)]
    pub all: bool,
}

impl crate::output::Render for AsyncStacks {
    fn render(&self) -> String {
        let mut text = tree::render(&self.roots, self.all);
        text.push_str(&format!(
            "\n\n==> {} async logical stacks with {} roots\n",
            self.chains,
            self.roots.len()
        ));
        for e in &self.errors {
            text.push_str(&format!("error: {e}\n"));
        }
        text
    }
}

/// The innermost "frame" of a logical stack: what its innermost method awaits.
fn awaited_frame(cause: &Cause) -> String {
    match cause {
        Cause::TaskCompletionSource { .. } => "[awaiting a TaskCompletionSource]".into(),
        Cause::Semaphore { .. } => "[awaiting SemaphoreSlim.WaitAsync]".into(),
        Cause::Delay { .. } => "[awaiting Task.Delay]".into(),
        Cause::PeriodicTimer { .. } => "[awaiting PeriodicTimer's next tick]".into(),
        Cause::Channel { role, .. } => format!("[awaiting Channel {}]", role.api()),
        Cause::Queued { .. } => "[awaiting a queued task not yet run]".into(),
        Cause::Running { .. } => "[awaiting a running task]".into(),
        Cause::RunningOnThread { os_id, .. } => format!("[running on thread {os_id:x}]"),
        Cause::CompletedNotResumed { .. } => "[awaited task completed, not resumed]".into(),
        Cause::Cycle { .. } => "[awaiting a task of its own cycle]".into(),
        Cause::Other { type_name, .. } => format!("[awaiting {type_name}]"),
        Cause::Unknown { .. } => "[awaiting ?]".into(),
    }
}

/// `pstacks --async`: async logical stacks (root = the outermost method) merged like thread
/// stacks, each leaf naming what the innermost method awaits; ids are innermost box addresses.
pub(crate) fn pstacks_async(s: &Session, all: bool) -> std::result::Result<Output, CommandError> {
    let c = crate::session::clr_with(s, ASYNC_NEEDS)?;
    let heap = c.heap()?;
    let a = asyncsm::analyze(&c.rt, &c.names, heap);
    let r = ObjectReader::new(&c.rt, &c.names);
    let causes = causality::analyze(&r, &a, &[]);
    let mut root = Node::default();
    let mut n = 0;
    for (ci, ch) in a.chains.iter().enumerate() {
        let Some(&first) = ch.first() else { continue };
        if a.boxes[first].completed() {
            continue;
        }
        let mut frames: Vec<String> = ch
            .iter()
            .rev()
            .map(|&i| asyncsm::async_method_name(&a.boxes[i].state_machine_type))
            .collect();
        frames.push(awaited_frame(&causes.chains[ci].cause));
        root.insert(&frames, a.boxes[first].address);
        n += 1;
    }
    let res = AsyncStacks {
        chains: n,
        roots: root.children,
        errors: a.errors.clone(),
        all,
    };
    Ok(Output::rendered("pstacks", res))
}

// ---------------------------------------------------------------------------------- causality

#[derive(Serialize)]
pub struct ChainView {
    /// Innermost first.
    pub methods: Vec<String>,
    pub boxes: Vec<String>,
    pub awaited: Option<String>,
    pub awaited_type: Option<String>,
    /// The cause, its addresses as strings.
    pub cause: serde_json::Value,
    /// The cause's kind (its tag in `cause`).
    #[serde(skip)]
    pub cause_kind: String,
    /// The cause as read (`cause` is its JSON).
    #[serde(skip)]
    pub cause_read: Cause,
    /// What the cause means, in words.
    pub explanation: String,
    /// Threads blocked synchronously on this chain (OS ids).
    pub waited_by_threads: Vec<u64>,
}

#[derive(Serialize)]
pub struct ThreadView {
    pub os_id: u64,
    pub managed_id: u32,
    pub via: Option<String>,
    pub task: String,
    pub task_type: String,
    pub event: String,
    /// Indices into `chains`.
    pub chains: Vec<usize>,
}

#[derive(Serialize)]
pub struct CausalityOut {
    pub threads: Vec<ThreadView>,
    pub chains: Vec<ChainView>,
    pub unresolved_waits: Vec<(u64, String)>,
    pub errors: Vec<String>,
}

/// A cause in words; `starvation` is the thread pool's assessment, when a chain waits on
/// queued work.
fn explain(
    cause: &Cause,
    c: &Clr,
    starvation: Option<&crate::threadpool::StarvationOut>,
) -> String {
    let ty = |a: u64| {
        ObjectReader::new(&c.rt, &c.names)
            .object_mt(a)
            .map(|(mt, _)| c.type_name(mt))
            .unwrap_or_default()
    };
    match cause {
        Cause::TaskCompletionSource { tcs, .. } => format!(
            "waits for {} {} to be completed (SetResult/SetException/SetCanceled); nothing has completed it",
            ty(*tcs),
            hex(*tcs)
        ),
        Cause::Semaphore {
            semaphore,
            current_count,
            position,
            async_waiters,
            sync_waiters,
        } => format!(
            "waits for SemaphoreSlim {} to be released: count {current_count}, async waiter {position} of {async_waiters}, {sync_waiters} threads blocked in Wait",
            hex(*semaphore)
        ),
        Cause::Delay {
            timer,
            due_ms,
            infinite,
            cancellation,
            ..
        } => {
            let mut x = match (timer, due_ms, infinite) {
                (Some(t), Some(d), _) => format!(
                    "waits for Task.Delay: timer {} due {} after it was set",
                    hex(*t),
                    duration(*d)
                ),
                (None, _, true) => "waits for Task.Delay(Timeout.Infinite): no timer, it never ends by itself".into(),
                _ => "waits for Task.Delay (its timer could not be read)".into(),
            };
            if let Some(cs) = cancellation {
                x.push_str(&format!(", {}", cancellation_text(cs)));
            }
            x
        }
        Cause::PeriodicTimer { timer, period_ms } => format!(
            "waits for the next tick of PeriodicTimer {}{}",
            hex(*timer),
            period_ms.map_or(String::new(), |p| format!(" (period {})", duration(p)))
        ),
        Cause::Queued {
            delegate_type,
            method,
            queue,
            pool,
            ..
        } => {
            let what = method
                .as_deref()
                .or(delegate_type.as_deref())
                .unwrap_or("?");
            match (queue, pool) {
                (Some(q), Some(p)) => {
                    let n = |v: Option<i64>| v.map_or("?".to_string(), |v| v.to_string());
                    let state = format!(
                        "the pool runs {} work items on {} workers (goal {}, max {})",
                        n(p.processing_work),
                        n(p.existing_threads),
                        n(p.threads_goal),
                        n(p.max_threads)
                    );
                    if let Some(st) = starvation.filter(|st| st.starved) {
                        let on: Vec<String> = st
                            .blocked_on
                            .iter()
                            .map(|g| format!("{} in {}", g.count, g.text))
                            .collect();
                        format!("waits for {what}, queued to the thread pool ({q} queue) and not yet run: {state}, all busy: thread pool starvation (blocked workers: {})", on.join("; "))
                    } else {
                        format!("waits for {what}, queued to the thread pool ({q} queue) and not yet run: {state}")
                    }
                }
                _ => format!(
                    "waits for {what}, a task scheduled but not yet run (WaitingToRun), not in the thread pool's queues (another scheduler?)"
                ),
            }
        }
        Cause::Running { task } => format!("waits for task {} that a thread is running", hex(*task)),
        Cause::RunningOnThread {
            os_id, managed_id, ..
        } => format!(
            "awaits nothing: thread {os_id:x} (managed {managed_id}) is running its innermost method now"
        ),
        Cause::CompletedNotResumed { status, .. } => format!(
            "the awaited task has {status}, but the method has not resumed: its continuation was posted to a context or scheduler that has not run it"
        ),
        Cause::Cycle { task, ring } => format!(
            "waits on task {} of a cycle of {} tasks awaiting each other ({}): none can complete",
            hex(*task),
            ring.len(),
            ring.iter().map(|b| hex(*b)).collect::<Vec<_>>().join(" -> ")
        ),
        Cause::Channel {
            role,
            position,
            channel,
            ..
        } => format!(
            "waits in {} (waiter {position}) on {}",
            role.api(),
            channel_summary(channel)
        ),
        Cause::Other { object, type_name } => format!("waits on {type_name} {}", hex(*object)),
        Cause::Unknown { why } => format!("unknown: {why}"),
    }
}

/// A channel in words: type, address, capacity, items, waiters.
pub(crate) fn channel_summary(ch: &ChannelState) -> String {
    let plural = |n: usize, one: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {one}s")
        }
    };
    let items = ch.items.map_or("? items (not counted)".to_string(), |n| {
        plural(n as usize, "item")
    });
    let size = match ch.capacity {
        Some(c) => format!(
            "bounded, capacity {c}{}, holds {items}{}",
            ch.full_mode
                .as_deref()
                .map_or(String::new(), |m| format!(" (full mode {m})")),
            if ch.full() { ": full" } else { "" }
        ),
        None => format!("unbounded, holds {items}"),
    };
    let waiters = |blocked: usize, waiting: usize, who: &str, api: &str| {
        let mut s = format!("{} waiting", plural(blocked + waiting, who));
        if waiting > 0 {
            s.push_str(&format!(" ({waiting} in {api})"));
        }
        s
    };
    format!(
        "channel {} {}: {size}; {}, {}{}{}",
        ch.type_name,
        hex(ch.address),
        waiters(
            ch.blocked_readers.len(),
            ch.waiting_to_read.len(),
            "reader",
            "WaitToReadAsync"
        ),
        waiters(
            ch.blocked_writers.len(),
            ch.waiting_to_write.len(),
            "writer",
            "WaitToWriteAsync"
        ),
        if ch.writing_done {
            "; its writer has completed"
        } else {
            ""
        },
        if ch.problems.is_empty() {
            String::new()
        } else {
            format!(" (not read: {})", ch.problems.join("; "))
        }
    )
}

/// A channel as JSON: its address as a `"0x.."` string, and the waiter counts (the waiting
/// operations themselves are not repeated for every chain waiting on the channel).
pub(crate) fn channel_json(ch: &ChannelState) -> serde_json::Value {
    serde_json::json!({
        "address": hex(ch.address),
        "type": ch.type_name,
        "capacity": ch.capacity,
        "full_mode": ch.full_mode,
        "items": ch.items,
        "full": ch.full(),
        "waiting_readers": ch.waiting_readers(),
        "waiting_writers": ch.waiting_writers(),
        "blocked_readers": ch.blocked_readers.len(),
        "blocked_writers": ch.blocked_writers.len(),
        "waiting_to_read": ch.waiting_to_read.len(),
        "waiting_to_write": ch.waiting_to_write.len(),
        "writing_done": ch.writing_done,
        "problems": ch.problems,
    })
}

/// A cause as JSON with its addresses as `"0x.."` strings, like every other address.
/// The cause's kind: its serde tag (`#[serde(tag = "kind")]` on clrdata's `Cause`), the one
/// spelling of each kind.
fn cause_kind(cause: &Cause) -> String {
    match serde_json::to_value(cause) {
        Ok(serde_json::Value::Object(o)) => match o.get("kind") {
            Some(serde_json::Value::String(k)) => k.clone(),
            _ => "unknown".into(),
        },
        _ => "unknown".into(),
    }
}

fn cause_json(cause: &Cause) -> serde_json::Value {
    let mut v = serde_json::to_value(cause).unwrap_or_default();
    if let (Cause::Channel { channel, .. }, Some(o)) = (cause, v.as_object_mut()) {
        o.insert("channel".into(), channel_json(channel));
    }
    if let Some(o) = v.as_object_mut() {
        for k in [
            "tcs",
            "task",
            "semaphore",
            "timer",
            "delegate",
            "object",
            "operation",
        ] {
            if let Some(n) = o.get(k).and_then(serde_json::Value::as_u64) {
                o.insert(k.into(), serde_json::Value::String(hex(n)));
            }
        }
        if let Some(c) = o
            .get_mut("cancellation")
            .and_then(serde_json::Value::as_object_mut)
        {
            if let Some(n) = c.get("source").and_then(serde_json::Value::as_u64) {
                c.insert("source".into(), serde_json::Value::String(hex(n)));
            }
        }
        if let Some(r) = o.get_mut("ring").and_then(serde_json::Value::as_array_mut) {
            for x in r.iter_mut() {
                if let Some(n) = x.as_u64() {
                    *x = serde_json::Value::String(hex(n));
                }
            }
        }
    }
    v
}

/// A CancellationTokenSource's state in words: "or the cancellation of CancellationTokenSource
/// 0x.. (not cancelled, 3 registrations)".
fn cancellation_text(cs: &causality::CancellationState) -> String {
    if cs.source == 0 {
        return "with a token that cannot be cancelled".into();
    }
    let state = match cs.cancelled {
        Some(true) => "cancellation requested",
        Some(false) => "not cancelled",
        None => "state unreadable",
    };
    let regs = cs.registrations.map_or(String::new(), |n| {
        format!(", {n} registration{}", if n == 1 { "" } else { "s" })
    });
    format!(
        "or the cancellation of CancellationTokenSource {} ({state}{regs})",
        hex(cs.source)
    )
}

fn duration(ms: u64) -> String {
    if ms.is_multiple_of(3_600_000) {
        format!("{} h", ms / 3_600_000)
    } else if ms.is_multiple_of(60_000) {
        format!("{} min", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

impl crate::output::Render for CausalityOut {
    fn render(&self) -> String {
        let mut t = String::new();
        t.push_str(&format!(
            "Threads blocked on tasks: {}\n",
            self.threads.len()
        ));
        for th in &self.threads {
            t.push_str(&format!(
                "\nThread {:x} (managed {}) blocked in {}\n  on task {} {}\n",
                th.os_id,
                th.managed_id,
                th.via.as_deref().unwrap_or("?"),
                th.task,
                th.task_type
            ));
            if th.chains.is_empty() {
                t.push_str("  (no async chain holds or awaits this task)\n");
            }
            for &i in &th.chains {
                let ch = &self.chains[i];
                t.push_str("  which is the async logical stack (innermost first):\n");
                for (m, b) in ch.methods.iter().zip(&ch.boxes) {
                    t.push_str(&format!("      {b} {m}\n"));
                }
                t.push_str(&format!("    {}\n", ch.explanation));
            }
        }
        t.push_str(&format!("\nAsync logical stacks: {}\n", self.chains.len()));
        for ch in &self.chains {
            t.push_str(&format!("\n  {}\n", ch.methods.join(" <- ")));
            t.push_str(&format!("    {}\n", ch.explanation));
            if !ch.waited_by_threads.is_empty() {
                let ids: Vec<String> = ch
                    .waited_by_threads
                    .iter()
                    .map(|i| format!("{i:x}"))
                    .collect();
                t.push_str(&format!("    threads blocked on it: {}\n", ids.join(",")));
            }
        }
        for (id, why) in &self.unresolved_waits {
            t.push_str(&format!(
                "thread {id:x}: blocked on a task not identified: {why}\n"
            ));
        }
        for e in &self.errors {
            t.push_str(&format!("error: {e}\n"));
        }
        t
    }
}

fn causality(s: &Session, m: &ArgMatches) -> std::result::Result<Output, CommandError> {
    let c = crate::session::clr_with(s, CAUSALITY_NEEDS)?;
    let heap = c.heap()?;
    let all = m.get_flag("all");
    let a = asyncsm::analyze(&c.rt, &c.names, heap);
    let r = ObjectReader::new(&c.rt, &c.names);
    let walker = StackWalker::for_target(&c.rt, &c.names);
    let scans = causality::thread_scans(&walker)
        .map_err(|e| CommandError::clr("reading the thread list", e))?;
    let k = causality::analyze_with(&r, &a, &scans, &walker);
    // A chain waits on work queued to the pool: is the pool starved?
    let starvation = k
        .chains
        .iter()
        .any(|c| matches!(&c.cause, Cause::Queued { queue: Some(_), .. }))
        .then(|| crate::threadpool::starvation_of(&c))
        .flatten();

    let mut chains = Vec::new();
    let mut chain_pos = std::collections::HashMap::new();
    for (ci, ch) in a.chains.iter().enumerate() {
        let first = ch[0];
        if !all && a.boxes[first].completed() {
            continue;
        }
        let cc = &k.chains[ci];
        chain_pos.insert(ci, chains.len());
        chains.push(ChainView {
            methods: ch
                .iter()
                .map(|&i| asyncsm::async_method_name(&a.boxes[i].state_machine_type))
                .collect(),
            boxes: ch.iter().map(|&i| hex(a.boxes[i].address)).collect(),
            awaited: cc.awaited.map(hex),
            awaited_type: cc.awaited_type.clone(),
            cause: cause_json(&cc.cause),
            cause_kind: cause_kind(&cc.cause),
            cause_read: cc.cause.clone(),
            explanation: explain(&cc.cause, &c, starvation.as_ref()),
            waited_by_threads: Vec::new(),
        });
    }
    // A chain whose innermost method a thread is running waits for what that thread waits for.
    for (ci, &pos) in &chain_pos {
        if let Cause::RunningOnThread { os_id, .. } = &k.chains[*ci].cause {
            if let Some(w) = k.thread_waits.iter().find(|w| w.os_id == *os_id) {
                chains[pos].explanation.push_str(&format!(
                    ", and that thread is blocked in {} on task {} {}",
                    w.via.as_deref().unwrap_or("?"),
                    hex(w.task),
                    w.task_type
                ));
            }
        }
    }
    let mut threads = Vec::new();
    for w in &k.thread_waits {
        let idx: Vec<usize> = w
            .chains
            .iter()
            .filter_map(|ci| chain_pos.get(ci).copied())
            .collect();
        for &i in &idx {
            chains[i].waited_by_threads.push(w.os_id);
        }
        threads.push(ThreadView {
            os_id: w.os_id,
            managed_id: w.managed_id,
            via: w.via.clone(),
            task: hex(w.task),
            task_type: w.task_type.clone(),
            event: hex(w.event),
            chains: idx,
        });
    }

    let res = CausalityOut {
        threads,
        chains,
        unresolved_waits: k.unresolved_waits.clone(),
        errors: a.errors.clone(),
    };
    Ok(Output::rendered("causality", res))
}
