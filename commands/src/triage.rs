//! `dumpshell triage <dump>...`: a one-page summary per dump, built from the same commands a
//! person would run (info, eeversion, clrthreads, pstacks, dumpheap -stat), for going through
//! many dumps at once. A dump that fails to open is reported and the others go on.
//!
//! The summary is composed from the commands' typed results ([`crate::Output::typed`]): a
//! renamed field is a compile error here, never a silent "?".

use crate::addr::hex;
use crate::asyncs::{CausalityOut, ChainView};
use crate::exceptions::{DumpExceptionsOut, PrintExceptionOut};
use crate::heap::{DumpHeap, EeVersion, TypeOut};
use crate::locks::DeadlockOut;
use crate::native::{ExceptionOut, InfoResult};
use crate::registry as commands;
use crate::session::Session;
use crate::stacks::ClrThreads;
use crate::threadpool::{StarvationOut, ThreadPoolOut};
use crate::tree::Node;
use crate::tree::PStacks;
use clrdata::prelude::*;
use dumpreader::OpenOptions;
use serde::Serialize;
use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How many merged stacks and heap types a summary shows.
pub const TOP: usize = 5;

/// How many frames of a NativeAOT app's crashing thread a page shows.
const CRASH_FRAMES: usize = 12;

/// The summary of one dump.
#[derive(Debug, Serialize)]
pub struct Triage {
    /// The dump as given.
    pub dump: String,
    /// Why the dump could not be opened at all (then nothing else is set).
    pub error: Option<String>,
    /// `info`'s result.
    pub format: Option<String>,
    /// Operating system.
    pub os: Option<String>,
    /// Process id.
    pub pid: Option<u64>,
    /// The process's name as the dump records it.
    pub process_name: Option<String>,
    /// The app: the file name (without extension) of the first managed assembly the dump maps
    /// that is not the framework's (a framework-dependent app runs as `dotnet`), else the
    /// process's name.
    pub app: Option<String>,
    /// The app's version, from its assembly's metadata in the dump: its
    /// `AssemblyInformationalVersionAttribute`, else the assembly's four-part version; None
    /// when the app is no managed module the dump maps, or its metadata is not in the dump.
    pub app_version: Option<String>,
    /// When the dump was written, in seconds since 1970 (UTC): the dump's own record when it
    /// has one (a minidump's header), else the dump file's modification time (an ELF core
    /// records no time); [`Triage::dump_time_source`] says which.
    pub dump_time: Option<u64>,
    /// Where [`Triage::dump_time`] came from: `"dump"` (the dump's header) or `"file"` (the
    /// file's modification time).
    pub dump_time_source: Option<&'static str>,
    /// The dump file's size in bytes.
    pub dump_size: Option<u64>,
    /// The runtime (".NET 8.0.4") and GC mode, or why the CLR could not be read.
    pub runtime: Option<String>,
    /// GC mode.
    pub gc: Option<String>,
    /// OS threads in the dump.
    pub os_threads: Option<u64>,
    /// Managed threads.
    pub managed_threads: Option<u64>,
    /// The exception or fatal signal the dump records.
    pub dump_exception: Option<ExceptionOut>,
    /// Managed threads whose last thrown exception is known.
    pub thread_exceptions: Vec<ThreadException>,
    /// Thread-pool starvation, when `threadpool` finds it (work queued, no worker free, the
    /// workers blocked synchronously): the counts and what the workers block on.
    pub thread_pool_starvation: Option<StarvationOut>,
    /// The merged stacks holding the most threads, innermost frame first.
    pub top_stacks: Vec<MergedStack>,
    /// The managed stack of the thread the dump records as crashing (its exception or fatal
    /// signal), innermost first; empty when there is none or it has no managed frame.
    pub crash_thread_frames: Vec<String>,
    /// Their source lines, as [`MergedStack::lines`].
    pub crash_thread_lines: Vec<Option<FrameLine>>,
    /// Pending async logical stacks grouped by what they wait for (see [`AsyncGroup`]), those
    /// with threads blocked on them or running them first, then the largest (at most
    /// [`TOP_ASYNC_GROUPS`]).
    pub async_groups: Vec<AsyncGroup>,
    /// How many groups there are in all.
    pub async_group_count: Option<u64>,
    /// How many pending async logical stacks there are in all.
    pub async_chain_count: Option<u64>,
    /// How many of them are HTTP requests Kestrel is processing (a chain through
    /// `HttpProtocol.ProcessRequests`).
    pub http_requests: Option<u64>,
    /// Monitor deadlocks: each cycle's threads (OS ids) and locks (type and address).
    pub deadlocks: Vec<Deadlock>,
    /// Exceptions on the heap grouped by type and message (most frequent first).
    pub exception_groups: Vec<ExceptionGroup>,
    /// The current thread's exception (the faulting thread's in a crash dump), as `pe` shows
    /// it: type, message, and the innermost frames of its trace.
    pub current_exception: Option<CurrentException>,
    /// The types holding the most bytes.
    pub heaviest_types: Vec<TypeOut>,
    /// Heap totals (objects, bytes).
    pub heap_objects: Option<u64>,
    /// Heap bytes.
    pub heap_bytes: Option<u64>,
    /// When the dump holds no GC heap (a mini dump): the one statement saying so, with its
    /// kind and the missing structure; the heap's commands are then not listed as problems.
    pub heap_absent: Option<String>,
    /// What could not be read, command by command.
    pub problems: Vec<String>,
}

/// A thread's last thrown exception.
#[derive(Debug, Serialize)]
pub struct ThreadException {
    /// OS thread id.
    pub os_id: u64,
    /// Managed thread id.
    pub managed_id: u64,
    /// Exception type.
    pub exception_type: String,
    /// Exception object address.
    pub address: Option<String>,
}

/// A Monitor deadlock: the threads of one cycle and the locks they wait for.
#[derive(Debug, Serialize, Clone)]
pub struct Deadlock {
    /// The threads (OS ids; none when a thread's OS id is unknown).
    pub threads: Vec<Option<u64>>,
    /// The locks.
    pub locks: Vec<DeadlockLock>,
}

/// A lock of a deadlock cycle.
#[derive(Debug, Serialize, Clone)]
pub struct DeadlockLock {
    /// The locked object's address.
    pub object: String,
    /// Its type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// The frame that waits for it.
    pub wait_frame: Option<String>,
}

/// Exceptions on the heap with one type and message.
#[derive(Debug, Serialize, Clone)]
pub struct ExceptionGroup {
    /// The type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// The message.
    pub message: Option<String>,
    /// How many.
    pub count: usize,
}

/// The current thread's exception.
#[derive(Debug, Serialize, Clone)]
pub struct CurrentException {
    /// The thread (OS id).
    pub thread_os_id: Option<u64>,
    /// The exception object.
    pub address: String,
    /// Its type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Its message.
    pub message: Option<String>,
    /// The inner exception's type.
    pub inner_exception_type: Option<String>,
    /// The innermost frames of its trace (method names; none where unknown).
    pub frames: Vec<Option<String>>,
    /// The innermost frames of its trace that are the app's own (not the runtime's or a
    /// framework's: see [`is_framework_frame`]), at most [`TOP`], searched through the whole
    /// trace.
    pub app_frames: Vec<String>,
}

/// Pending async logical stacks that wait for the same thing: the same object (one
/// TaskCompletionSource, SemaphoreSlim, awaited object), or, where each waits on an object of
/// its own, the same kind of object through the same methods.
#[derive(Debug, Serialize, Clone)]
pub struct AsyncGroup {
    /// How many chains.
    pub count: u64,
    /// `causality`'s cause kind.
    pub cause: String,
    /// What they wait for, in words.
    pub explanation: String,
    /// The object they all wait on, when it is one object.
    pub object: Option<String>,
    /// How many of them are HTTP requests (Kestrel).
    pub http_requests: u64,
    /// The distinct method lists, the most frequent first.
    pub stacks: Vec<AsyncGroupStack>,
}

/// One method list of an [`AsyncGroup`].
#[derive(Debug, Serialize, Clone)]
pub struct AsyncGroupStack {
    /// How many chains have these methods.
    pub count: u64,
    /// Methods, innermost first.
    pub methods: Vec<String>,
    /// Threads blocked synchronously on these chains (OS ids).
    pub waited_by_threads: Vec<u64>,
    /// Threads running these chains' innermost methods now (OS ids).
    pub running_on_threads: Vec<u64>,
}

/// Whether a frame is the runtime's or a framework's (System, Microsoft, interop), not the app's.
pub fn is_framework_frame(f: &str) -> bool {
    [
        "System.",
        "Microsoft.",
        "Interop+",
        "Interop.",
        "Internal.",
        "[",
    ]
    .iter()
    .any(|p| f.starts_with(p))
}

/// Most async groups a triage page shows.
pub const TOP_ASYNC_GROUPS: usize = 8;

/// Whether an async logical stack is an HTTP request Kestrel is processing.
fn is_http_request(methods: &[String]) -> bool {
    methods.iter().any(|m| {
        m.starts_with(
            "Microsoft.AspNetCore.Server.Kestrel.Core.Internal.Http.HttpProtocol.ProcessRequests",
        )
    })
}

/// Groups `causality`'s chains by what they wait for ([`AsyncGroup`]).
fn async_groups(c: &CausalityOut) -> Vec<AsyncGroup> {
    use clrdata::analysis::causality::Cause;
    use std::collections::HashMap;
    // The one object a chain waits on: what its cause names (a TaskCompletionSource, a
    // SemaphoreSlim, a channel, another object), else the object its innermost box awaits.
    let object_of = |ch: &ChainView| -> Option<String> {
        match &ch.cause_read {
            Cause::TaskCompletionSource { tcs: o, .. }
            | Cause::Semaphore { semaphore: o, .. }
            | Cause::Other { object: o, .. } => Some(hex(*o)),
            Cause::Channel { channel, .. } => Some(hex(channel.address)),
            _ => ch.awaited.clone(),
        }
    };
    let mut shared: HashMap<String, usize> = HashMap::new();
    for ch in &c.chains {
        if let Some(o) = object_of(ch) {
            *shared.entry(o).or_default() += 1;
        }
    }
    let mut order: Vec<String> = Vec::new();
    let mut groups: HashMap<String, AsyncGroup> = HashMap::new();
    for ch in &c.chains {
        let one = object_of(ch).filter(|o| shared.get(o).copied().unwrap_or(0) > 1);
        let key = match &one {
            Some(o) => format!("object {o}"),
            None => format!(
                "{} {} {}",
                ch.cause_kind,
                ch.awaited_type.as_deref().unwrap_or(""),
                ch.methods.join(" <- ")
            ),
        };
        let g = groups.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            // One waiter's place in line is not the group's.
            let explanation = match (&one, &ch.cause_read) {
                (
                    Some(_),
                    Cause::Semaphore {
                        semaphore,
                        current_count,
                        async_waiters,
                        sync_waiters,
                        ..
                    },
                ) => format!(
                    "wait for SemaphoreSlim {} to be released (count {current_count}, \
                     {async_waiters} async waiters, {sync_waiters} threads blocked in Wait)",
                    hex(*semaphore)
                ),
                (Some(_), Cause::Channel { role, channel, .. }) => format!(
                    "waits in {} on {}",
                    role.api(),
                    crate::asyncs::channel_summary(channel)
                ),
                (Some(_), _) => ch.explanation.clone(),
                (None, Cause::Other { .. }) => format!(
                    "each waits on an object of its own, a {}",
                    ch.awaited_type.as_deref().unwrap_or("object")
                ),
                (None, Cause::RunningOnThread { .. }) => {
                    "the innermost method is running on a thread now".to_string()
                }
                (None, _) => ch.explanation.clone(),
            };
            AsyncGroup {
                count: 0,
                cause: ch.cause_kind.clone(),
                explanation,
                object: one.clone(),
                http_requests: 0,
                stacks: Vec::new(),
            }
        });
        g.count += 1;
        if is_http_request(&ch.methods) {
            g.http_requests += 1;
        }
        let running = match ch.cause_read {
            Cause::RunningOnThread { os_id, .. } => Some(os_id),
            _ => None,
        };
        match g.stacks.iter_mut().find(|st| st.methods == ch.methods) {
            Some(st) => {
                st.count += 1;
                st.waited_by_threads.extend(&ch.waited_by_threads);
                st.running_on_threads.extend(running);
            }
            None => g.stacks.push(AsyncGroupStack {
                count: 1,
                methods: ch.methods.clone(),
                waited_by_threads: ch.waited_by_threads.clone(),
                running_on_threads: running.into_iter().collect(),
            }),
        }
    }
    let mut v: Vec<AsyncGroup> = order
        .into_iter()
        .filter_map(|k| groups.remove(&k))
        .collect();
    for g in &mut v {
        g.stacks.sort_by_key(|st| std::cmp::Reverse(st.count));
    }
    let involves_threads = |g: &AsyncGroup| {
        g.stacks
            .iter()
            .any(|st| !st.waited_by_threads.is_empty() || !st.running_on_threads.is_empty())
    };
    v.sort_by_key(|g| {
        (
            std::cmp::Reverse(involves_threads(g)),
            std::cmp::Reverse(g.count),
        )
    });
    v
}

/// One root-to-leaf path of the merged stacks.
#[derive(Debug, Serialize, Clone)]
pub struct MergedStack {
    /// Threads on this path.
    pub count: u64,
    /// Their OS ids.
    pub threads: Vec<u64>,
    /// Frames, innermost first.
    pub frames: Vec<String>,
    /// Each frame's source line (as `frames`): `{"source_file", "source_line"}` where the
    /// app's PDB gives one (as clrstack's), else null.
    pub lines: Vec<Option<FrameLine>>,
}

/// A frame's source document and line.
#[derive(Debug, Serialize, Clone, PartialEq, Eq)]
pub struct FrameLine {
    pub source_file: String,
    pub source_line: u32,
}

impl MergedStack {
    /// Frame `i` as the text shows it: with ` [file @ line]` when it has one.
    fn frame_text(&self, i: usize) -> String {
        match self.lines.get(i).and_then(Option::as_ref) {
            Some(l) => format!("{} [{} @ {}]", self.frames[i], l.source_file, l.source_line),
            None => self.frames[i].clone(),
        }
    }
}

/// Runs `line` and returns its typed result; a failure (or a result of another type, a bug)
/// is recorded in `problems`.
fn run<T: Any + Send + Sync>(
    s: &Session,
    line: &str,
    problems: &mut Vec<String>,
) -> Option<Arc<T>> {
    match commands::execute(s, line) {
        Ok(Some((out, _))) => {
            let typed = out.typed.and_then(|t| t.0.downcast::<T>().ok());
            if typed.is_none() {
                problems.push(format!(
                    "{line}: its result is not a {} (a bug: please report it)",
                    std::any::type_name::<T>()
                ));
            }
            typed
        }
        Ok(None) => None,
        Err(e) => {
            problems.push(format!("{line}: {e}"));
            None
        }
    }
}

/// Collects root-to-leaf paths of a pstacks tree (frames given root first).
fn leaves(node: &Node, path: &mut Vec<(String, Option<FrameLine>)>, out: &mut Vec<MergedStack>) {
    path.push((
        node.method.clone(),
        node.source_file
            .clone()
            .zip(node.source_line)
            .map(|(source_file, source_line)| FrameLine {
                source_file,
                source_line,
            }),
    ));
    let child_threads: usize = node.children.iter().map(|c| c.count).sum();
    if node.children.is_empty() || child_threads < node.count {
        // Threads whose stack ends here.
        let below: Vec<u64> = node
            .children
            .iter()
            .flat_map(|c| c.threads.iter().copied())
            .collect();
        let threads: Vec<u64> = node
            .threads
            .iter()
            .copied()
            .filter(|t| !below.contains(t))
            .collect();
        out.push(MergedStack {
            count: threads.len() as u64,
            threads,
            frames: path.iter().rev().map(|(m, _)| m.clone()).collect(),
            lines: path.iter().rev().map(|(_, l)| l.clone()).collect(),
        });
    }
    for c in &node.children {
        leaves(c, path, out);
    }
    path.pop();
}

/// A pstacks tree's stacks, root to leaf: the crashing thread's own (its lines exact) and the
/// [`TOP`] most common, merged by method as pstacks and Visual Studio merge them (threads in
/// the same methods at different lines are one stack, whose frame keeps its line only where
/// all of them are at that line).
fn top_stacks(roots: &[Node], crashing: Option<u64>) -> (Option<MergedStack>, Vec<MergedStack>) {
    let mut all = Vec::new();
    for r in roots {
        leaves(r, &mut Vec::new(), &mut all);
    }
    all.retain(|m| m.count > 0);
    let crash = crashing.and_then(|os| all.iter().find(|m| m.threads.contains(&os)).cloned());
    let mut merged: Vec<MergedStack> = Vec::new();
    for m in all {
        match merged.iter_mut().find(|g| g.frames == m.frames) {
            Some(g) => {
                g.count += m.count;
                g.threads.extend(m.threads);
                for (gl, ml) in g.lines.iter_mut().zip(&m.lines) {
                    if gl != ml {
                        *gl = None;
                    }
                }
            }
            None => merged.push(m),
        }
    }
    merged.sort_by(|a, b| b.count.cmp(&a.count).then(a.frames.cmp(&b.frames)));
    merged.truncate(TOP);
    (crash, merged)
}

/// Triages one dump.
pub fn triage(path: &Path, opts: &OpenOptions) -> Triage {
    triage_with(path, opts, &clrdata::DiscoverOptions::default())
}

/// [`triage`] with what discovery may read besides the dump.
pub fn triage_with(path: &Path, opts: &OpenOptions, discover: &clrdata::DiscoverOptions) -> Triage {
    let mut t = empty(path);
    if let Ok(m) = std::fs::metadata(path) {
        t.dump_size = Some(m.len());
        t.dump_time = m
            .modified()
            .ok()
            .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs());
        t.dump_time_source = t.dump_time.map(|_| "file");
    }
    let s = match Session::open_with(path, opts) {
        Ok(s) => s.with_discover_options(discover.clone()),
        Err(e) => {
            t.error = Some(e.to_string());
            return t;
        }
    };
    if let Some(w) = s.target.info().written_at {
        t.dump_time = Some(w);
        t.dump_time_source = Some("dump");
    }
    let p = &mut t.problems;
    if let Some(i) = run::<InfoResult>(&s, "info", p) {
        t.format = Some(i.format.to_owned());
        t.os = Some(i.os.clone());
        t.pid = i.pid.map(u64::from);
        t.process_name = i.process_name.clone();
        let app = app_module(&s);
        t.app_version = app.as_ref().and_then(|(_, v)| v.clone());
        t.app = app.map(|(n, _)| n).or_else(|| i.process_name.clone());
        t.os_threads = Some(i.threads as u64);
        t.dump_exception = i.exception.clone();
    }
    let Some(v) = run::<EeVersion>(&s, "eeversion", p) else {
        return t;
    };
    t.runtime = Some(v.runtime.clone());
    t.gc = v.gc.map(str::to_owned);
    // A NativeAOT app: its own thread list, stacks, crash info and heap census; CoreCLR's
    // structures are not there.
    if v.nativeaot.is_some() {
        triage_nativeaot(&s, &mut t);
        t.problems = merge_problems(std::mem::take(&mut t.problems));
        return t;
    }
    if let Some(th) = run::<ClrThreads>(&s, "clrthreads", p) {
        t.managed_threads = Some(th.threads.len() as u64);
        for x in &th.threads {
            if let Some(ty) = &x.last_exception_type {
                t.thread_exceptions.push(ThreadException {
                    os_id: x.os_id,
                    managed_id: u64::from(x.managed_id),
                    exception_type: ty.clone(),
                    address: x.last_exception.clone(),
                });
            }
        }
    }
    // With lines: the top frames say where (as clrstack's, when the app's PDB is found).
    if let Some(ps) = run::<PStacks>(&s, "pstacks -lines", p) {
        let crashing = t.dump_exception.as_ref().map(|e| u64::from(e.thread_id));
        let (crash, top) = top_stacks(&ps.roots, crashing);
        if let Some(m) = crash {
            t.crash_thread_frames = m.frames;
            t.crash_thread_lines = m.lines;
        }
        t.top_stacks = top;
    }
    if let Some(tp) = run::<ThreadPoolOut>(&s, "threadpool", p) {
        t.thread_pool_starvation = tp.starvation.clone().filter(|st| st.starved);
    }
    if let Some(c) = run::<CausalityOut>(&s, "causality", p) {
        t.async_chain_count = Some(c.chains.len() as u64);
        t.http_requests = Some(
            c.chains
                .iter()
                .filter(|ch| is_http_request(&ch.methods))
                .count() as u64,
        );
        let mut v = async_groups(&c);
        t.async_group_count = Some(v.len() as u64);
        v.truncate(TOP_ASYNC_GROUPS);
        t.async_groups = v;
    }
    if let Some(d) = run::<DeadlockOut>(&s, "deadlock", p) {
        t.deadlocks = d
            .cycles
            .iter()
            .map(|c| Deadlock {
                threads: c.threads.iter().map(|th| th.os_id).collect(),
                locks: c
                    .locks
                    .iter()
                    .map(|l| DeadlockLock {
                        object: l.object.clone(),
                        type_name: l.type_name.clone(),
                        wait_frame: l.wait_frame.clone(),
                    })
                    .collect(),
            })
            .collect();
    }
    if let Some(x) = run::<DumpExceptionsOut>(&s, "dumpexceptions", p) {
        t.exception_groups = x
            .groups
            .iter()
            .take(TOP)
            .map(|g| ExceptionGroup {
                type_name: g.type_name.clone(),
                message: g.message.clone(),
                count: g.count,
            })
            .collect();
    }
    if t.dump_exception.is_some() || !t.thread_exceptions.is_empty() {
        let mut ignore = Vec::new();
        if let Some(e) = run::<PrintExceptionOut>(&s, "pe", &mut ignore) {
            if let Some(x) = e.exceptions.first() {
                t.current_exception = Some(CurrentException {
                    thread_os_id: e.thread_os_id,
                    address: x.address.clone(),
                    type_name: x.type_name.clone(),
                    message: x.message.clone(),
                    inner_exception_type: x.inner_exception_type.clone(),
                    frames: x
                        .stack_trace
                        .iter()
                        .take(TOP)
                        .map(|f| f.method.clone())
                        .collect(),
                    app_frames: x
                        .stack_trace
                        .iter()
                        .filter_map(|f| f.method.clone())
                        .filter(|m| !is_framework_frame(m))
                        .take(TOP)
                        .collect(),
                });
            }
        }
    }
    if let Some(h) = run::<DumpHeap>(&s, "dumpheap -stat", p) {
        t.heap_objects = Some(h.total_objects);
        t.heap_bytes = Some(h.total_size);
        t.heaviest_types = h.statistics.iter().take(TOP).cloned().collect();
    }
    // A dump without a GC heap: one line says so, instead of each command that needs it.
    if let Some(no_heap) = heap_absent(&s) {
        t.problems.retain(|p| !p.ends_with(&no_heap));
        t.heap_absent = Some(no_heap);
    }
    t.problems = merge_problems(std::mem::take(&mut t.problems));
    t
}

/// The summary of a NativeAOT app, from the NativeAOT commands: `clrthreads` (the
/// ThreadStore), `pstacks` (each thread unwound by the app's unwind tables; the executable's
/// frames named as `clrstack` names them, from the symbol file or `<stripped> app+0x..`),
/// `crashinfo` (the exception the runtime recorded before aborting) and `dumpheap -stat` (the
/// census by MethodTable). The crashing thread is the one the dump records (its signal), else
/// the one the crash info names.
fn triage_nativeaot(s: &Session, t: &mut Triage) {
    use crate::nativeaot::{AotHeapStat, AotPStacks, CrashInfoOut};
    let p = &mut t.problems;
    if let Some(th) = run::<crate::nativeaot::AotThreads>(s, "clrthreads", p) {
        t.managed_threads = Some(th.threads.len() as u64);
    }
    // No crash info is no failure: the app did not crash.
    let crash = match commands::execute(s, "crashinfo") {
        Ok(Some((out, _))) => out.typed.and_then(|x| x.0.downcast::<CrashInfoOut>().ok()),
        Ok(None) | Err(crate::CommandError::NotFound { .. }) => None,
        Err(e) => {
            p.push(format!("crashinfo: {e}"));
            None
        }
    };
    let crash_thread = t
        .dump_exception
        .as_ref()
        .map(|e| u64::from(e.thread_id))
        .or_else(|| {
            let c = crash.as_ref()?;
            let id = c.crash_info["thread"].as_str()?;
            u64::from_str_radix(id.trim_start_matches("0x").trim_start_matches("0X"), 16).ok()
        });
    if let Some(c) = &crash {
        t.current_exception = crash_exception(c, crash_thread);
    }
    if let Some(ps) = run::<AotPStacks>(s, "pstacks", p) {
        let (crash, top) = top_stacks(&ps.stacks.roots, crash_thread);
        if let Some(m) = crash {
            t.crash_thread_frames = m.frames;
        }
        t.top_stacks = top;
        if let clrdata::model::stack::aot::AotFrameNames::Unnamed { reason, .. } = &ps.names {
            p.push(format!(
                "the executable's frames are <stripped> (unnamed): {reason}"
            ));
        }
    }
    if let Some(h) = run::<AotHeapStat>(s, "dumpheap -stat", p) {
        let c = &h.census;
        t.heap_objects = Some(c.total_objects);
        t.heap_bytes = Some(c.total_size);
        t.heaviest_types = c
            .types
            .iter()
            .take(TOP)
            .map(|x| TypeOut {
                mt: hex(x.mt),
                count: x.count,
                total_size: x.total_size,
                name: x.name.clone().unwrap_or_else(|| "<unnamed>".to_string()),
                retained: None,
            })
            .collect();
    }
    p.push(
        "a NativeAOT app: its thread pool, async state machines, locks and managed thread ids \
         are not read (its runtime publishes no layout for them)"
            .into(),
    );
}

/// The exception a NativeAOT app's crash info records, as [`CurrentException`] (the frames
/// as the runtime named them).
fn crash_exception(
    c: &crate::nativeaot::CrashInfoOut,
    thread: Option<u64>,
) -> Option<CurrentException> {
    let e = &c.crash_info["exception"];
    let str_of = |v: &serde_json::Value| v.as_str().map(str::to_owned);
    let type_name = str_of(&e["type"])?;
    let stack: Vec<String> = e["stack"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| str_of(&f["name"]))
        .collect();
    Some(CurrentException {
        thread_os_id: thread,
        // As the other sections write addresses (the runtime writes "0x7F84A980D298").
        address: str_of(&e["address"])
            .map(|a| {
                u64::from_str_radix(a.trim_start_matches("0x").trim_start_matches("0X"), 16)
                    .map_or(a, hex)
            })
            .unwrap_or_default(),
        type_name,
        message: str_of(&e["message"]),
        inner_exception_type: e["inner"]
            .as_array()
            .and_then(|v| v.first())
            .and_then(|i| str_of(&i["type"])),
        frames: stack.iter().take(TOP).cloned().map(Some).collect(),
        app_frames: stack
            .iter()
            .filter(|m| !is_framework_frame(m))
            .take(TOP)
            .cloned()
            .collect(),
    })
}

/// One line per distinct failure: commands that failed for the same reason (a structure every
/// section needs) are named together on one line, `pstacks, causality: <why>`, in the order met.
fn merge_problems(problems: Vec<String>) -> Vec<String> {
    let mut order: Vec<(Vec<String>, String)> = Vec::new();
    for p in problems {
        let (cmd, why) = match p.split_once(": ") {
            Some((c, w)) => (c.to_owned(), w.to_owned()),
            None => (String::new(), p.clone()),
        };
        match order.iter_mut().find(|(_, w)| *w == why) {
            Some((cmds, _)) if !cmd.is_empty() => cmds.push(cmd),
            _ => order.push((if cmd.is_empty() { vec![] } else { vec![cmd] }, why)),
        }
    }
    order
        .into_iter()
        .map(|(cmds, why)| {
            if cmds.is_empty() {
                why
            } else {
                format!("{}: {why}", cmds.join(", "))
            }
        })
        .collect()
}

/// The app's own assembly among the modules the dump maps: the first `.dll` or `.exe` (by load
/// address) that is not the framework's (no `System.`/`Microsoft.`/`netstandard`/`mscorlib`
/// name, not under a `shared/Microsoft.*` folder) nor the `dotnet` host, with its file name
/// without the extension and its version ([`app_version`]). A managed image whose metadata the
/// dump holds is preferred: on Windows the runtime's native DLLs (`hostpolicy.dll`,
/// `coreclr.dll`) and the app's own native launcher (`app.exe`) are `.dll`/`.exe` files too.
fn app_module(s: &Session) -> Option<(String, Option<String>)> {
    let t: &dyn dumpreader::Target = &*s.target;
    let mut mods: Vec<&dumpreader::ModuleInfo> = t.modules().iter().collect();
    mods.sort_by_key(|m| m.base);
    let candidates: Vec<(String, &dumpreader::ModuleInfo)> = mods
        .into_iter()
        .filter_map(|m| {
            let path = m.path.replace('\\', "/");
            let file = path.rsplit('/').next()?;
            let lower = file.to_ascii_lowercase();
            let (stem, ext) = lower.rsplit_once('.')?;
            let framework = stem.starts_with("system.")
                || stem.starts_with("microsoft.")
                || matches!(
                    stem,
                    "system" | "netstandard" | "mscorlib" | "dotnet" | "windowsbase"
                )
                || path.contains("/shared/Microsoft.");
            (matches!(ext, "dll" | "exe") && !framework).then(|| (file[..stem.len()].to_owned(), m))
        })
        .collect();
    candidates
        .iter()
        .find_map(|(name, m)| app_version(s, m).map(|v| (name.clone(), Some(v))))
        .or_else(|| candidates.first().map(|(name, _)| (name.clone(), None)))
}

/// The version of the managed image at `m`, from its own metadata in the dump's memory: the
/// assembly's `AssemblyInformationalVersionAttribute` (the SDK's `InformationalVersion`,
/// `1.0.0+<commit>` by default), else the Assembly row's four-part version. None when `m` is no
/// managed image or its metadata is not in the dump.
fn app_version(s: &Session, m: &dumpreader::ModuleInfo) -> Option<String> {
    let mem: &dyn dumpreader::Memory = &*s.target;
    let bytes = clrdata::metadata::read_metadata(mem, m.base, Some(m.size())).ok()?;
    let md = clrdata::metadata::Metadata::parse(&bytes.bytes).ok()?;
    if let Some(v) =
        md.assembly_string_attribute("System.Reflection", "AssemblyInformationalVersionAttribute")
    {
        return Some(v.to_owned());
    }
    let [a, b, c, d] = md.assembly(1).ok()?.version;
    Some(format!("{a}.{b}.{c}.{d}"))
}

/// The statement of a dump that holds no GC heap (the heap commands' own refusal), when it is
/// one ([`commands::heap::gc_heap_or_refusal`] decides).
fn heap_absent(s: &Session) -> Option<String> {
    let c = s.clr().ok()?;
    let e = c.heap().err()?;
    c.rt.gc_heap_absence(None)?;
    Some(e.to_string())
}

/// Triages many dumps, several at a time; the results come back in the order given.
pub fn triage_all(paths: &[PathBuf], opts: &OpenOptions) -> Vec<Triage> {
    triage_all_with(paths, opts, &clrdata::DiscoverOptions::default())
}

/// [`triage_all`] with what discovery may read besides each dump (a symbol server, ...): one
/// worker per core.
pub fn triage_all_with(
    paths: &[PathBuf],
    opts: &OpenOptions,
    discover: &clrdata::DiscoverOptions,
) -> Vec<Triage> {
    let results: Vec<std::sync::Mutex<Option<Triage>>> =
        paths.iter().map(|_| Default::default()).collect();
    triage_each(paths, opts, discover, 0, &|i, t| {
        *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
    });
    results
        .into_iter()
        .zip(paths)
        .map(|(m, p)| {
            m.into_inner()
                .ok()
                .flatten()
                .unwrap_or_else(|| triage_failed(p))
        })
        .collect()
}

/// Triages `paths` on `jobs` worker threads (0: one per core), handing each summary to `done`
/// (with its index in `paths`) as soon as it is made, in the order they finish. Each worker
/// holds one dump open at a time, so memory is bounded by the number of workers, not of dumps;
/// a dump that cannot be read (or a bug while reading it) gives a summary with `error` set and
/// the others go on.
pub fn triage_each(
    paths: &[PathBuf],
    opts: &OpenOptions,
    discover: &clrdata::DiscoverOptions,
    jobs: usize,
    done: &(dyn Fn(usize, Triage) + Sync),
) {
    parallel(paths.len(), jobs, &|i| {
        let p = &paths[i];
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            triage_with(p, opts, discover)
        }))
        .unwrap_or_else(|_| {
            let mut t = triage_failed(p);
            t.error = Some("internal error while triaging (a bug: please report it)".into());
            t
        });
        done(i, r);
    });
}

/// Runs `work(i)` for every `i` below `count` on `jobs` worker threads (0: one per core), each
/// worker taking the next index when it is free.
pub fn parallel(count: usize, jobs: usize, work: &(dyn Fn(usize) + Sync)) {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let workers = if jobs == 0 { cores } else { jobs }.min(count.max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|sc| {
        for _ in 0..workers {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= count {
                    break;
                }
                work(i);
            });
        }
    });
}

/// The summary of a dump that was not triaged (`error` says why).
pub fn triage_failed(p: &Path) -> Triage {
    let mut t = empty(p);
    t.error = Some("not triaged".into());
    t
}

fn empty(p: &Path) -> Triage {
    Triage {
        dump: p.display().to_string(),
        error: None,
        format: None,
        os: None,
        pid: None,
        process_name: None,
        app: None,
        dump_time: None,
        dump_time_source: None,
        app_version: None,
        dump_size: None,
        runtime: None,
        gc: None,
        os_threads: None,
        managed_threads: None,
        dump_exception: None,
        thread_exceptions: Vec::new(),
        thread_pool_starvation: None,
        top_stacks: Vec::new(),
        crash_thread_frames: Vec::new(),
        crash_thread_lines: Vec::new(),
        async_groups: Vec::new(),
        async_group_count: None,
        async_chain_count: None,
        http_requests: None,
        deadlocks: Vec::new(),
        exception_groups: Vec::new(),
        current_exception: None,
        heaviest_types: Vec::new(),
        heap_objects: None,
        heap_bytes: None,
        heap_absent: None,
        problems: Vec::new(),
    }
}

/// The one-page text of a summary.
pub fn render(t: &Triage) -> String {
    let mut s = format!("=== {}\n", t.dump);
    if let Some(e) = &t.error {
        s.push_str(&format!("cannot open: {e}\n"));
        return s;
    }
    s.push_str(&format!(
        "{} {} pid {}, {} OS threads",
        t.os.as_deref().unwrap_or("?"),
        t.format.as_deref().unwrap_or("?"),
        t.pid.map_or("?".into(), |p| p.to_string()),
        t.os_threads.unwrap_or(0)
    ));
    if let Some(rt) = &t.runtime {
        // The GC mode is not read on every runtime (NativeAOT): then it is left out, as
        // eeversion says.
        let gc =
            t.gc.as_deref()
                .map(|g| format!(" ({g} GC)"))
                .unwrap_or_default();
        s.push_str(&format!(
            ", {rt}{gc}, {} managed threads",
            t.managed_threads.unwrap_or(0)
        ));
    }
    s.push('\n');
    if let Some(e) = &t.dump_exception {
        s.push_str(&format!(
            "Exception recorded by the dump: code {} on thread {}\n",
            e.code, e.thread_id
        ));
    }
    for e in &t.thread_exceptions {
        s.push_str(&format!(
            "Thread {:#x} (managed {}) last threw {}\n",
            e.os_id, e.managed_id, e.exception_type
        ));
    }
    if let Some(line) = t
        .thread_pool_starvation
        .as_ref()
        .and_then(|st| st.summary.as_ref())
    {
        s.push_str(line);
        s.push('\n');
    }
    if !t.top_stacks.is_empty() {
        s.push_str("Top stacks:\n");
        for m in &t.top_stacks {
            let ids: Vec<String> = m.threads.iter().take(4).map(|x| format!("{x:x}")).collect();
            s.push_str(&format!(
                "  {} thread{} ({}{}):\n",
                m.count,
                if m.count == 1 { "" } else { "s" },
                ids.join(","),
                if m.threads.len() > 4 { ",..." } else { "" }
            ));
            for i in 0..m.frames.len().min(4) {
                s.push_str(&format!("      {}\n", m.frame_text(i)));
            }
            // The app's own innermost frame, when the first four are the framework's.
            let own = m.frames.iter().skip(4).position(|f| !is_framework_frame(f));
            let mut shown = 4;
            if let Some(k) = own {
                if k > 0 {
                    s.push_str(&format!("      ... {k} frames\n"));
                }
                s.push_str(&format!("      {}\n", m.frame_text(4 + k)));
                shown = 4 + k + 1;
            }
            if m.frames.len() > shown {
                s.push_str(&format!(
                    "      ... {} more frames\n",
                    m.frames.len() - shown
                ));
            }
        }
    }
    // A NativeAOT app's crashing thread, as its stack walk gives it (CoreCLR's shows in the
    // exception's trace below).
    let nativeaot = t
        .runtime
        .as_deref()
        .is_some_and(|r| r.starts_with("NativeAOT"));
    if nativeaot && !t.crash_thread_frames.is_empty() {
        let id = t
            .dump_exception
            .as_ref()
            .map(|e| u64::from(e.thread_id))
            .or(t.current_exception.as_ref().and_then(|x| x.thread_os_id));
        s.push_str(&format!(
            "Crashing thread {}, innermost frames:\n",
            id.map_or("?".to_string(), |i| format!("{i:x}"))
        ));
        for f in t.crash_thread_frames.iter().take(CRASH_FRAMES) {
            s.push_str(&format!("      {f}\n"));
        }
        if t.crash_thread_frames.len() > CRASH_FRAMES {
            s.push_str(&format!(
                "      ... {} more frames\n",
                t.crash_thread_frames.len() - CRASH_FRAMES
            ));
        }
    }
    if let Some(x) = &t.current_exception {
        s.push_str(&format!(
            "Exception on thread {:x}: {} {}: {}\n",
            x.thread_os_id.unwrap_or(0),
            x.address,
            x.type_name,
            x.message.as_deref().unwrap_or("")
        ));
        if let Some(inner) = &x.inner_exception_type {
            s.push_str(&format!("  inner: {inner}\n"));
        }
        for f in &x.frames {
            s.push_str(&format!("      {}\n", f.as_deref().unwrap_or("?")));
        }
    }
    for (i, d) in t.deadlocks.iter().enumerate() {
        let ids: Vec<String> = d
            .threads
            .iter()
            .map(|x| format!("{:x}", x.unwrap_or(0)))
            .collect();
        s.push_str(&format!(
            "DEADLOCK {}: threads {}\n",
            i + 1,
            ids.join(" -> ")
        ));
        for l in &d.locks {
            s.push_str(&format!(
                "  lock {} {} (waited for in {})\n",
                l.object,
                l.type_name,
                l.wait_frame.as_deref().unwrap_or("?")
            ));
        }
    }
    if !t.exception_groups.is_empty() {
        s.push_str("Exceptions on the heap:\n");
        for g in &t.exception_groups {
            let ty = g.type_name.as_str();
            let msg = g.message.as_deref().unwrap_or("");
            // The runtime allocates one of each at startup, to throw when it cannot allocate.
            let pre = msg.is_empty()
                && matches!(
                    ty,
                    "System.OutOfMemoryException"
                        | "System.StackOverflowException"
                        | "System.ExecutionEngineException"
                );
            s.push_str(&format!(
                "  {:>6} x {ty}: {}\n",
                g.count,
                if pre {
                    "(no message: likely the instance the runtime preallocates)"
                } else {
                    msg
                }
            ));
        }
    }
    if let Some(n) = t.async_chain_count.filter(|n| *n > 0) {
        let groups = t.async_group_count.unwrap_or(0);
        s.push_str(&format!(
            "Pending async logical stacks: {n}, in {groups} group{} by what they wait for",
            if groups == 1 { "" } else { "s" }
        ));
        if let Some(h) = t.http_requests.filter(|h| *h > 0) {
            s.push_str(&format!("; {h} of them HTTP requests (Kestrel)"));
        }
        s.push_str(":\n");
        let ids = |v: &[u64]| {
            v.iter()
                .map(|x| format!("{x:x}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let t_blocked = |os: &u64| {
            t.async_groups
                .iter()
                .flat_map(|g| &g.stacks)
                .any(|st| st.waited_by_threads.contains(os))
        };
        for g in &t.async_groups {
            let each_blocked = g.cause == "running_on_thread"
                && g.stacks
                    .iter()
                    .flat_map(|st| &st.running_on_threads)
                    .all(t_blocked);
            let mut explanation = match g
                .explanation
                .strip_prefix("each waits on an object of its own, a ")
            {
                Some(ty) if g.count == 1 => format!("waits on a {ty}"),
                _ => g.explanation.clone(),
            };
            if each_blocked {
                explanation.push_str("; each of those threads is blocked on a chain above");
            }
            let requests = match g.http_requests {
                0 => String::new(),
                h => format!(" ({h} HTTP request{})", if h == 1 { "" } else { "s" }),
            };
            let threads = |st: &AsyncGroupStack, indent: &str| {
                let mut x = String::new();
                if !st.waited_by_threads.is_empty() {
                    x.push_str(&format!(
                        "{indent}threads blocked on it: {}\n",
                        ids(&st.waited_by_threads)
                    ));
                }
                if !st.running_on_threads.is_empty() {
                    x.push_str(&format!(
                        "{indent}running on threads: {}\n",
                        ids(&st.running_on_threads)
                    ));
                }
                x
            };
            if let [st] = g.stacks.as_slice() {
                let n = if st.count > 1 {
                    format!("{} x ", st.count)
                } else {
                    String::new()
                };
                s.push_str(&format!("  {n}{}{requests}\n", st.methods.join(" <- ")));
                s.push_str(&format!("      {explanation}\n"));
                s.push_str(&threads(st, "      "));
                continue;
            }
            s.push_str(&format!("  {} chains{requests}: {explanation}\n", g.count));
            for st in g.stacks.iter().take(3) {
                s.push_str(&format!(
                    "    {:>4} x {}\n",
                    st.count,
                    st.methods.join(" <- ")
                ));
                s.push_str(&threads(st, "           "));
            }
            if g.stacks.len() > 3 {
                s.push_str(&format!(
                    "           ... {} more method lists\n",
                    g.stacks.len() - 3
                ));
            }
        }
        if groups as usize > t.async_groups.len() {
            s.push_str(&format!(
                "  ... {} more groups (dumpshell <dump> -c causality)\n",
                groups as usize - t.async_groups.len()
            ));
        }
    }
    if let (Some(n), Some(b)) = (t.heap_objects, t.heap_bytes) {
        s.push_str(&format!("Heap: {n} objects, {b} bytes; heaviest types:\n"));
        for ty in &t.heaviest_types {
            s.push_str(&format!(
                "  {:>12} bytes {:>8} x {}\n",
                ty.total_size, ty.count, ty.name
            ));
        }
    }
    if let Some(h) = &t.heap_absent {
        s.push_str(&format!("Heap: {h}\n"));
    }
    for p in &t.problems {
        s.push_str(&format!("Not read: {p}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_failure_of_many_sections_is_one_line() {
        let why = "memory read at 0x10: wanted 8 bytes, got 0";
        let merged = super::merge_problems(vec![
            format!("pstacks: {why}"),
            format!("causality: {why}"),
            "dumpheap -stat: no heap".to_owned(),
            format!("deadlock: {why}"),
        ]);
        assert_eq!(
            merged,
            vec![
                format!("pstacks, causality, deadlock: {why}"),
                "dumpheap -stat: no heap".to_owned()
            ]
        );
    }
}
