//! `dumpshell triage <dump>...`: a one-page summary per dump, built from the same commands a
//! person would run (info, eeversion, clrthreads, pstacks, dumpheap -stat), for going through
//! many dumps at once. A dump that fails to open is reported and the others go on.
//!
//! The summary is composed from the commands' typed results ([`crate::Output::typed`]): a
//! renamed field is a compile error here, never a silent "?".

use crate::asyncs::CausalityOut;
use crate::exceptions::{DumpExceptionsOut, PrintExceptionOut};
use crate::heap::{DumpHeap, EeVersion, TypeOut};
use crate::locks::DeadlockOut;
use crate::native::{ExceptionOut, InfoResult};
use crate::registry as commands;
use crate::session::Session;
use crate::stacks::{ClrThreads, PStacks};
use crate::threadpool::{StarvationOut, ThreadPoolOut};
use crate::tree::Node;
use dumpreader::OpenOptions;
use serde::Serialize;
use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How many merged stacks and heap types a summary shows.
pub const TOP: usize = 5;

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
    /// Pending async logical stacks (innermost method first) and what each waits for.
    pub async_chains: Vec<AsyncWait>,
    /// How many pending async logical stacks there are in all.
    pub async_chain_count: Option<u64>,
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
}

/// A pending async logical stack.
#[derive(Debug, Serialize, Clone)]
pub struct AsyncWait {
    /// Methods, innermost first.
    pub methods: Vec<String>,
    /// What it waits for (`causality`'s cause kind) and in words.
    pub cause: String,
    /// The explanation.
    pub explanation: String,
    /// Threads blocked synchronously on it.
    pub waited_by_threads: Vec<u64>,
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
fn leaves(node: &Node, path: &mut Vec<String>, out: &mut Vec<MergedStack>) {
    path.push(node.method.clone());
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
            frames: path.iter().rev().cloned().collect(),
        });
    }
    for c in &node.children {
        leaves(c, path, out);
    }
    path.pop();
}

/// Triages one dump.
pub fn triage(path: &Path, opts: &OpenOptions) -> Triage {
    let mut t = empty(path);
    let s = match Session::open_with(path, opts) {
        Ok(s) => s,
        Err(e) => {
            t.error = Some(e.to_string());
            return t;
        }
    };
    let p = &mut t.problems;
    if let Some(i) = run::<InfoResult>(&s, "info", p) {
        t.format = Some(i.format.to_owned());
        t.os = Some(i.os.clone());
        t.pid = i.pid.map(u64::from);
        t.os_threads = Some(i.threads as u64);
        t.dump_exception = i.exception.clone();
    }
    let Some(v) = run::<EeVersion>(&s, "eeversion", p) else {
        return t;
    };
    t.runtime = Some(v.runtime.clone());
    t.gc = v.gc.map(str::to_owned);
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
    if let Some(ps) = run::<PStacks>(&s, "pstacks", p) {
        let mut all = Vec::new();
        for r in &ps.roots {
            leaves(r, &mut Vec::new(), &mut all);
        }
        all.retain(|m| m.count > 0);
        all.sort_by(|a, b| b.count.cmp(&a.count).then(a.frames.cmp(&b.frames)));
        all.truncate(TOP);
        t.top_stacks = all;
    }
    if let Some(tp) = run::<ThreadPoolOut>(&s, "threadpool", p) {
        t.thread_pool_starvation = tp.starvation.clone().filter(|st| st.starved);
    }
    if let Some(c) = run::<CausalityOut>(&s, "causality", p) {
        t.async_chain_count = Some(c.chains.len() as u64);
        let mut v: Vec<AsyncWait> = c
            .chains
            .iter()
            .map(|c| AsyncWait {
                methods: c.methods.clone(),
                cause: c.cause_kind.clone(),
                explanation: c.explanation.clone(),
                waited_by_threads: c.waited_by_threads.clone(),
            })
            .collect();
        // Chains a thread is blocked on first.
        v.sort_by_key(|w| std::cmp::Reverse(w.waited_by_threads.len()));
        v.truncate(TOP);
        t.async_chains = v;
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
    t
}

/// The statement of a dump that holds no GC heap (the heap commands' own refusal), when it is
/// one ([`commands::heap::gc_heap_or_refusal`] decides).
fn heap_absent(s: &Session) -> Option<String> {
    let c = s.clr().ok()?;
    let e = c.heap().err()?;
    c.rt.gc_heap_absence(None)?;
    Some(e)
}

/// Triages many dumps, several at a time; the results come back in the order given.
pub fn triage_all(paths: &[PathBuf], opts: &OpenOptions) -> Vec<Triage> {
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(paths.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Triage>>> =
        paths.iter().map(|_| Default::default()).collect();
    std::thread::scope(|sc| {
        for _ in 0..workers {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(p) = paths.get(i) else { break };
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| triage(p, opts)))
                    .unwrap_or_else(|_| {
                        let mut t = triage_failed(p);
                        t.error =
                            Some("internal error while triaging (a bug: please report it)".into());
                        t
                    });
                *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            });
        }
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

fn triage_failed(p: &Path) -> Triage {
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
        runtime: None,
        gc: None,
        os_threads: None,
        managed_threads: None,
        dump_exception: None,
        thread_exceptions: Vec::new(),
        thread_pool_starvation: None,
        top_stacks: Vec::new(),
        async_chains: Vec::new(),
        async_chain_count: None,
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
        s.push_str(&format!(
            ", {rt} ({} GC), {} managed threads",
            t.gc.as_deref().unwrap_or("?"),
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
            for f in m.frames.iter().take(4) {
                s.push_str(&format!("      {f}\n"));
            }
            if m.frames.len() > 4 {
                s.push_str(&format!("      ... {} more frames\n", m.frames.len() - 4));
            }
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
        s.push_str(&format!("Pending async logical stacks: {n}\n"));
        for w in &t.async_chains {
            s.push_str(&format!("  {}\n", w.methods.join(" <- ")));
            s.push_str(&format!("      {}\n", w.explanation));
            if !w.waited_by_threads.is_empty() {
                let ids: Vec<String> = w
                    .waited_by_threads
                    .iter()
                    .map(|x| format!("{x:x}"))
                    .collect();
                s.push_str(&format!("      threads blocked on it: {}\n", ids.join(",")));
            }
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
