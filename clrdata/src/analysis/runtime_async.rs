//! Runtime-async chains (.NET 11): the async methods the runtime itself suspends, with no
//! state machine. What they are, from CoreLib 11.0.0 (`AsyncHelpers.CoreCLR.cs`,
//! `RuntimeAsyncTaskContinuation`, `AsyncDispatcherInfo`; docs/clr-layout-net11.md section 4):
//!
//! - A suspended runtime-async method is a `System.Runtime.CompilerServices.Continuation`
//!   object (`Next`, `ResumeInfo*`, `Flags`, `State`, then the saved locals) of a subclass the
//!   runtime made for its layout (no metadata: named `Continuation_<layout>`). Its
//!   `ResumeInfo->DiagnosticIP` lies in the method's code: the code lookup names the method
//!   (the same lookup as a stack frame's); `State` is the index of the suspension point.
//! - A chain of them is owned by an `AsyncHelpers+RuntimeAsyncTask<T>`, the Task that
//!   non-runtime-async code sees: while suspended its `m_stateObject` is the chain's head. The
//!   head is plumbing (DiagnosticIP null) that says what the innermost method awaits: a
//!   `RuntimeAsyncTaskContinuation` (`Task`: the awaited task, registered as that task's
//!   continuation) or an `AsyncHelpers+ValueTaskSourceContinuation` (`Source`: an
//!   `IValueTaskSource`, whose continuation state is the RuntimeAsyncTask). Then one
//!   continuation per suspended method, innermost first, `Next` leading to its caller; the
//!   outermost method's caller is whatever awaits the RuntimeAsyncTask (its
//!   `m_continuationObject`: a state machine box, another chain's `RuntimeAsyncTaskContinuation`,
//!   a `WhenAll` promise, a thread's wait event...).
//! - A chain running now: the thread-static `AsyncDispatcherInfo.t_current` points at the
//!   running dispatcher's `AsyncDispatcherInfo` on the thread's stack: `CurrentTask` (the
//!   RuntimeAsyncTask) and `NextContinuation`, the frames to resume after the running one (the
//!   running method is on the thread's stack, no longer in the chain).
//!
//! Each suspended method is a [`Frame`]; `crate::analysis::asyncsm` makes it a box of kind
//! `RuntimeAsync` (its address the continuation object), so the chains, causality and
//! listings built over state machine boxes take them as they are: the box's continuations
//! lead to the caller, the innermost one's awaiters name what it awaits.

use crate::data::types::ReadTypes;
use crate::model::fields::{field, int, obj as ref_field};
use crate::model::objects::{FieldValue, ObjectReader};
use crate::model::stack::StackWalker;
use dumpreader::Memory;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// `AsyncHelpers+RuntimeAsyncTask<T>`'s name (its instantiations add `[[...]]`).
pub const RUNTIME_ASYNC_TASK: &str =
    "System.Runtime.CompilerServices.AsyncHelpers+RuntimeAsyncTask`1";
/// The plumbing continuation of an awaited Task.
pub const TASK_CONTINUATION: &str = "System.Runtime.CompilerServices.RuntimeAsyncTaskContinuation";
/// The plumbing continuation of an awaited `IValueTaskSource`.
pub const VALUE_TASK_SOURCE_CONTINUATION: &str =
    "System.Runtime.CompilerServices.AsyncHelpers+ValueTaskSourceContinuation";
/// Bound on a chain's continuations.
const MAX_FRAMES: usize = 4096;
/// Bound on nested dispatchers of a thread.
const MAX_DISPATCHERS: usize = 64;

/// What a runtime-async method's continuation says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuntimeAsyncFrame {
    /// `ResumeInfo->DiagnosticIP`: where in the method's code it suspended (0 when its
    /// ResumeInfo is not readable: `method_error` says why).
    pub diagnostic_ip: u64,
    /// `Continuation.State`: the suspension point's index in the method's async debug info.
    pub state: i32,
    /// `Continuation.Flags` (where to resume, which slots hold the execution context, the
    /// result, an exception).
    pub flags: u32,
    /// The method's MethodDesc (the code's).
    pub method_desc: Option<u64>,
    /// The method as the DAC names its code (`RealAsync.Program.LocalsOuter(Int32, System.String)`).
    pub method: Option<String>,
    /// Why the method is not named, when it is not.
    pub method_error: Option<String>,
    /// The `RuntimeAsyncTask` owning the chain (0 when none was found).
    pub task: u64,
    /// The Thread whose dispatcher runs the chain now (`AsyncDispatcherInfo.t_current`): this
    /// frame resumes after the one that thread runs.
    pub running_on_thread: Option<u64>,
}

/// A chain the runtime is running on a thread now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunningChain {
    /// The Thread.
    pub thread: u64,
    /// Its managed id.
    pub managed_id: u32,
    /// `AsyncDispatcherInfo.CurrentTask`.
    pub task: u64,
    /// The continuations still to resume (`NextContinuation` onwards), as frames' addresses.
    pub frames: Vec<u64>,
}

/// What the innermost method awaits, as its chain's plumbing continuation holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Awaited {
    /// Where it was read (`RuntimeAsyncTaskContinuation.Task`).
    pub field: String,
    /// The field's declared type.
    pub type_name: String,
    /// The awaited object.
    pub object: u64,
    /// Its type.
    pub object_type: Option<String>,
}

/// One suspended runtime-async method, found in its chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The continuation object.
    pub address: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// Its type's name (`Continuation_<layout>`).
    pub type_name: String,
    /// The method as its program names it (`Type.Method`), or why it is unknown.
    pub display: String,
    /// The owning task's `m_stateFlags`.
    pub task_flags: u32,
    /// Its caller: the next frame, or (the outermost) what awaits the task.
    pub continuation_object: u64,
    /// Where `continuation_object` was read.
    pub continuation_via: &'static str,
    /// The innermost frame's awaited object.
    pub awaited: Option<Awaited>,
    /// The continuation's own facts.
    pub frame: RuntimeAsyncFrame,
}

/// What [`find`] learnt.
#[derive(Debug, Default)]
pub struct Found {
    /// One per suspended method.
    pub frames: Vec<Frame>,
    /// The first frame (innermost method) of each RuntimeAsyncTask's chain: where a
    /// continuation that resumes that task leads.
    pub first_frame: HashMap<u64, u64>,
    /// Chains running on threads.
    pub running: Vec<RunningChain>,
    /// Problems met.
    pub errors: Vec<String>,
}

/// Whether `name` is a RuntimeAsyncTask instantiation.
pub fn is_runtime_async_task(name: &str) -> bool {
    name.starts_with(RUNTIME_ASYNC_TASK)
}

struct Reader<'a, 'r, M> {
    r: &'a ObjectReader<'r, M>,
    walker: StackWalker<'r, M>,
    continuation_mt: u64,
    resume_info_mt: Option<u64>,
    is_continuation: HashMap<u64, bool>,
}

/// A continuation's own fields.
struct Cont {
    mt: u64,
    next: u64,
    /// `ResumeInfo->DiagnosticIP`, or why it is not readable (a ResumeInfo in an image page
    /// the dump lacks).
    diagnostic_ip: crate::Result<u64>,
    flags: u32,
    state: i32,
    type_name: String,
    /// A continuation the runtime made for a method's saved state (no TypeDef): a frame.
    /// CoreLib's own subclasses (the plumbing) and the base class (the per-thread sentinel)
    /// are not.
    is_frame: bool,
}

impl<M: Memory> Reader<'_, '_, M> {
    fn is_continuation(&mut self, mt: u64) -> bool {
        if let Some(&v) = self.is_continuation.get(&mt) {
            return v;
        }
        let mut cur = mt;
        let mut found = false;
        for _ in 0..64 {
            if cur == 0 {
                break;
            }
            if cur == self.continuation_mt {
                found = true;
                break;
            }
            match self.r.mt(cur) {
                Some(i) => cur = i.parent,
                None => break,
            }
        }
        self.is_continuation.insert(mt, found);
        found
    }

    /// Reads the Continuation at `a` by its fields' names (`Next`, `ResumeInfo`, `Flags`,
    /// `State`; the runtime-made subclasses add none).
    fn continuation(&mut self, a: u64) -> crate::Result<Cont> {
        let (mt, _) = self.r.object_mt(a)?;
        if !self.is_continuation(mt) {
            return Err(crate::ClrError::corrupt(
                "Continuation",
                a,
                format!("a {}, not a Continuation", self.r.type_name(mt)),
            ));
        }
        let f = self
            .r
            .fields(mt, a + 8, false)
            .map_err(|e| e.context(format!("the Continuation {a:#x}")))?;
        let need = |name: &str| crate::ClrError::NoSuchField {
            type_name: "System.Runtime.CompilerServices.Continuation".into(),
            field: name.into(),
            is_static: false,
        };
        let resume_info = int(&f, "ResumeInfo").ok_or_else(|| need("ResumeInfo"))? as u64;
        let diagnostic_ip = if resume_info == 0 {
            Ok(0)
        } else {
            self.diagnostic_ip(resume_info)
        };
        let is_frame = mt != self.continuation_mt
            && self
                .r
                .mt(mt)
                .is_some_and(|i| i.parent == self.continuation_mt && i.token.is_none());
        Ok(Cont {
            mt,
            next: ref_field(&f, "Next"),
            diagnostic_ip,
            flags: int(&f, "Flags").ok_or_else(|| need("Flags"))? as u32,
            state: int(&f, "State").ok_or_else(|| need("State"))? as i32,
            type_name: self.r.type_name(mt),
            is_frame,
        })
    }

    /// `ResumeInfo.DiagnosticIP` of the struct at `p`, at the descriptor's
    /// `AsyncResumeInfo.DiagnosticIP` (11.0.0: 8), else where CoreLib's `ResumeInfo` has its
    /// field of that name. A ResumeInfo is emitted with its method's code: a ReadyToRun
    /// method's lies in its image, whose untouched pages createdump leaves out; there the
    /// image file is read, as the stack walk reads the image's tables (identity-checked).
    fn diagnostic_ip(&self, p: u64) -> crate::Result<u64> {
        let off = match self
            .r
            .rt
            .descriptor()
            .and_then(|d| d.field("AsyncResumeInfo", "DiagnosticIP"))
        {
            Some(o) => o,
            None => {
                let mt = self.resume_info_mt.ok_or_else(|| {
                    crate::ClrError::not_found(
                        "System.Runtime.CompilerServices.ResumeInfo",
                        "not loaded, and the descriptor has no AsyncResumeInfo",
                    )
                })?;
                let f = self
                    .r
                    .value_type(mt, p)
                    .map_err(|e| e.context(format!("the ResumeInfo at {p:#x}")))?;
                field(&f, "DiagnosticIP")
                    .and_then(|x| x.address)
                    .map(|a| a - p)
                    .ok_or_else(|| crate::ClrError::NoSuchField {
                        type_name: "System.Runtime.CompilerServices.ResumeInfo".into(),
                        field: "DiagnosticIP".into(),
                        is_static: false,
                    })?
            }
        };
        let m = self.r.rt.memory();
        if let Ok(v) = m.read_u64(p + off) {
            return Ok(v);
        }
        // Not in the dump: an image's page; its RangeSection's module's file, when here (the
        // lookup opens it), its value relocated as the loader relocated the image's.
        let _ = self.walker.ip_to_method(p);
        self.walker
            .code()
            .memory(m)
            .files
            .iter()
            .find_map(|f| f.relocated_pointer(p + off))
            .ok_or_else(|| crate::ClrError::read("ResumeInfo.DiagnosticIP", p + off))
    }

    /// The method of a DiagnosticIP, as a stack frame there would be named.
    fn method(&self, ip: u64) -> (Option<u64>, Option<String>, Option<String>) {
        match self.walker.ip_to_method(ip) {
            Ok(Some((ci, f))) => (f.method_desc.or(ci.method_desc), f.method, f.method_error),
            Ok(None) => (None, None, Some(format!("{ip:#x} is not in managed code"))),
            Err(e) => (None, None, Some(e.to_string())),
        }
    }

    /// What a plumbing head continuation says the innermost method awaits.
    fn awaited(&self, head: u64, c: &Cont) -> Option<Awaited> {
        let (field_name, declared) = if c.type_name == TASK_CONTINUATION {
            ("Task", "System.Threading.Tasks.Task")
        } else if c.type_name == VALUE_TASK_SOURCE_CONTINUATION {
            ("Source", "System.Threading.Tasks.Sources.IValueTaskSource")
        } else {
            return None;
        };
        let f = self.r.fields(c.mt, head + 8, false).ok()?;
        let o = ref_field(&f, field_name);
        (o != 0).then(|| Awaited {
            field: format!("{}.{field_name}", short(&c.type_name)),
            type_name: declared.to_owned(),
            object: o,
            object_type: self.r.object_mt(o).ok().map(|(m, _)| self.r.type_name(m)),
        })
    }

    /// The frames of the chain from `head` (plumbing continuations skipped, the first one's
    /// awaited object kept), innermost first.
    fn chain(
        &mut self,
        head: u64,
        task: u64,
        task_flags: u32,
        task_continuation: u64,
        running_on: Option<u64>,
        out: &mut Found,
        seen: &mut HashSet<u64>,
    ) -> Vec<u64> {
        let mut frames: Vec<u64> = Vec::new();
        let mut awaited = None;
        let mut cur = head;
        while cur != 0 {
            if frames.len() >= MAX_FRAMES || !seen.insert(cur) {
                if frames.len() >= MAX_FRAMES {
                    out.errors.push(format!(
                        "the continuation chain from {head:#x} is longer than {MAX_FRAMES}: cut"
                    ));
                }
                break;
            }
            let c = match self.continuation(cur) {
                Ok(c) => c,
                Err(e) => {
                    out.errors
                        .push(format!("continuation chain of task {task:#x}: {e}"));
                    break;
                }
            };
            if !c.is_frame {
                // plumbing (what the innermost awaits) or the per-thread sentinel
                if frames.is_empty() && awaited.is_none() {
                    awaited = self.awaited(cur, &c);
                }
                cur = c.next;
                continue;
            }
            let (diagnostic_ip, (method_desc, method, method_error)) = match &c.diagnostic_ip {
                Ok(0) => (0, (None, None, Some("its ResumeInfo is null".to_owned()))),
                Ok(ip) => (*ip, self.method(*ip)),
                Err(e) => (0, (None, None, Some(e.to_string()))),
            };
            let display = method
                .as_deref()
                .map(method_without_signature)
                .unwrap_or_else(|| {
                    if diagnostic_ip == 0 {
                        "<method not read>".to_owned()
                    } else {
                        format!("<method at {diagnostic_ip:#x}>")
                    }
                });
            let awaited = if frames.is_empty() {
                awaited.take()
            } else {
                None
            };
            frames.push(cur);
            out.frames.push(Frame {
                address: cur,
                mt: c.mt,
                type_name: c.type_name.clone(),
                display,
                task_flags,
                // its caller: the next frame, the outermost one's the task's awaiter
                continuation_object: c.next,
                continuation_via: "Continuation.Next",
                awaited,
                frame: RuntimeAsyncFrame {
                    diagnostic_ip,
                    state: c.state,
                    flags: c.flags,
                    method_desc,
                    method,
                    method_error,
                    task,
                    running_on_thread: running_on,
                },
            });
            cur = c.next;
        }
        // The outermost method continues into what awaits the task.
        if let Some(&last) = frames.last() {
            if let Some(b) = out.frames.iter_mut().rev().find(|b| b.address == last) {
                b.continuation_object = task_continuation;
                b.continuation_via = "RuntimeAsyncTask.m_continuationObject";
            }
        }
        frames
    }
}

/// A method as the DAC names it without its parameters and its own generic arguments:
/// `Type.Method` as a program writes it (`RealAsync.Program.GenInner[[System.__Canon, ...]]()`
/// → `RealAsync.Program.GenInner`; a generic type's arguments stay).
pub fn method_without_signature(m: &str) -> String {
    let mut depth = 0i32;
    let mut last_dot = None;
    let mut end = m.len();
    for (i, c) in m.char_indices() {
        match c {
            '[' | '<' => depth += 1,
            ']' | '>' => depth -= 1,
            '.' if depth == 0 => last_dot = Some(i),
            '(' if depth == 0 => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let s = &m[..end];
    match (last_dot, s.rfind("[[")) {
        (Some(d), Some(b)) if b > d => s[..b].to_owned(),
        _ => s.to_owned(),
    }
}

/// The class name without its namespace (`RuntimeAsyncTaskContinuation`).
fn short(name: &str) -> &str {
    let n = name.rsplit('.').next().unwrap_or(name);
    n.rsplit('+').next().unwrap_or(n)
}

/// Finds the runtime-async chains of the RuntimeAsyncTasks at `tasks` and of the chains the
/// threads run (`AsyncDispatcherInfo.t_current`).
pub fn find<M: Memory>(r: &ObjectReader<'_, M>, tasks: &[u64]) -> Found {
    let mut out = Found::default();
    let continuation_mt = r.rt.globals.continuation_mt;
    if continuation_mt == 0 {
        return out;
    }
    let mut rd = Reader {
        r,
        walker: StackWalker::new(r.rt, r.names, HashMap::new()),
        continuation_mt,
        resume_info_mt: r.corelib_type("System.Runtime.CompilerServices.ResumeInfo"),
        is_continuation: HashMap::new(),
    };
    let mut seen = HashSet::new();
    // Chains running on threads first (their tasks' m_stateObject no longer holds them).
    match running(r) {
        Ok(list) => {
            for (thread, managed_id, task, next) in list {
                let (flags, cont) = task_fields(r, task);
                let frames = rd.chain(next, task, flags, cont, Some(thread), &mut out, &mut seen);
                if let Some(&f) = frames.first() {
                    out.first_frame.entry(task).or_insert(f);
                }
                out.running.push(RunningChain {
                    thread,
                    managed_id,
                    task,
                    frames,
                });
            }
        }
        Err(e) => out.errors.push(format!(
            "chains running on threads (AsyncDispatcherInfo.t_current): {e}"
        )),
    }
    for &t in tasks {
        let Ok((mt, _)) = r.object_mt(t) else {
            continue;
        };
        let Ok(f) = r.fields(mt, t + 8, false) else {
            out.errors
                .push(format!("RuntimeAsyncTask {t:#x}: fields not readable"));
            continue;
        };
        let head = ref_field(&f, "m_stateObject");
        if head == 0 {
            continue;
        }
        let Ok((hmt, _)) = r.object_mt(head) else {
            continue;
        };
        if !rd.is_continuation(hmt) {
            continue;
        }
        let flags = int(&f, "m_stateFlags").unwrap_or(0) as u32;
        let cont = ref_field(&f, "m_continuationObject");
        let frames = rd.chain(head, t, flags, cont, None, &mut out, &mut seen);
        if let Some(&first) = frames.first() {
            out.first_frame.entry(t).or_insert(first);
        }
    }
    out
}

/// A task's `m_stateFlags` and `m_continuationObject` (zeros when unreadable).
fn task_fields<M: Memory>(r: &ObjectReader<'_, M>, task: u64) -> (u32, u64) {
    let Ok((mt, _)) = r.object_mt(task) else {
        return (0, 0);
    };
    match r.fields(mt, task + 8, false) {
        Ok(f) => (
            int(&f, "m_stateFlags").unwrap_or(0) as u32,
            ref_field(&f, "m_continuationObject"),
        ),
        Err(_) => (0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::method_without_signature as f;

    #[test]
    fn methods_without_their_signatures() {
        // the 11.0.0 DAC's names (asyncreal-net11, aspnethang-net11)
        assert_eq!(
            f("RealAsync.Program.VtOuter()"),
            "RealAsync.Program.VtOuter"
        );
        assert_eq!(
            f("RealAsync.Program.GenInner[[System.__Canon, System.Private.CoreLib]]()"),
            "RealAsync.Program.GenInner"
        );
        assert_eq!(
            f("RealAsync.Program+<>c.<Main>b__80_0()"),
            "RealAsync.Program+<>c.<Main>b__80_0"
        );
        assert_eq!(
            f("A.KestrelConnection`1[[System.__Canon, System.Private.CoreLib]].ExecuteAsync()"),
            "A.KestrelConnection`1[[System.__Canon, System.Private.CoreLib]].ExecuteAsync"
        );
        assert_eq!(
            f("A.EndpointRoutingMiddleware.<Invoke>g__AwaitMatcher|13_0(A.B, A.C)"),
            "A.EndpointRoutingMiddleware.<Invoke>g__AwaitMatcher|13_0"
        );
    }
}

/// Every thread's running dispatchers: (Thread, managed id, CurrentTask, NextContinuation),
/// the innermost dispatcher first.
fn running<M: Memory>(r: &ObjectReader<'_, M>) -> crate::Result<Vec<(u64, u32, u64, u64)>> {
    const TYPE: &str = "System.Runtime.CompilerServices.AsyncDispatcherInfo";
    let Some(mt) = r.corelib_type(TYPE) else {
        return Ok(Vec::new());
    };
    let statics = r
        .fields(mt, 0, true)
        .map_err(|e| e.context(format!("the fields of {TYPE}")))?;
    let Some(t_current) = statics
        .iter()
        .find(|f| f.attr == "TLstatic" && f.name == "t_current")
    else {
        return Err(crate::ClrError::NoSuchField {
            type_name: TYPE.into(),
            field: "t_current".into(),
            is_static: true,
        });
    };
    let slots = r.thread_static_addresses(
        t_current.declaring_mt,
        t_current.offset,
        t_current.element_type,
    )?;
    let m = r.rt.memory();
    let mut out = Vec::new();
    for (managed_id, thread, slot) in slots {
        let mut p = m
            .read_u64(slot)
            .map_err(|_| crate::ClrError::read("AsyncDispatcherInfo.t_current", slot))?;
        let mut n = 0;
        while p != 0 && n < MAX_DISPATCHERS {
            n += 1;
            let f = r
                .value_type(mt, p)
                .map_err(|e| e.context(format!("the AsyncDispatcherInfo at {p:#x}")))?;
            let task = ref_field(&f, "CurrentTask");
            let next = ref_field(&f, "NextContinuation");
            out.push((thread, managed_id, task, next));
            p = match field(&f, "Next").map(|x| &x.value) {
                Some(FieldValue::Pointer { value }) => *value,
                _ => 0,
            };
        }
    }
    Ok(out)
}

/// A variable a suspended runtime-async method holds across its await, as its continuation
/// saved it (`--fields`).
#[derive(Debug, Clone)]
pub struct HeldVariable {
    /// What the JIT's async debug info calls it (IL numbering): `arg 1`, `loc 3`, `this`,
    /// or a synthetic variable (`generic context`).
    pub raw: String,
    /// The name as the program wrote it: an argument's from the metadata's Param rows, a
    /// local's from the app's portable PDB (without one, `local N`).
    pub name: String,
    /// Argument, local, `this`, or other (synthetic).
    pub kind: HeldKind,
    /// Its declared type (the method's signature, or its locals signature).
    pub type_name: String,
    /// Where it is in the continuation object (from the object's start).
    pub offset: u32,
    /// The value read there.
    pub value: FieldValue,
}

/// What a held variable is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldKind {
    /// An argument of the method.
    Argument,
    /// A local variable of the method.
    Local,
    /// `this` of an instance method.
    This,
    /// A synthetic variable (the generic context, ...).
    Other,
}

/// Reads the variables runtime-async frames hold, with per-module caches (metadata, PDBs).
pub struct HeldReader<'a, 'r, M> {
    r: &'a ObjectReader<'r, M>,
    walker: StackWalker<'r, M>,
    pdbs: HashMap<u64, Option<std::sync::Arc<crate::metadata::PdbFile>>>,
}

impl<'a, 'r, M: Memory> HeldReader<'a, 'r, M> {
    /// A reader over `r`'s runtime.
    pub fn new(r: &'a ObjectReader<'r, M>) -> Self {
        HeldReader {
            r,
            walker: StackWalker::new(r.rt, r.names, HashMap::new()),
            pdbs: HashMap::new(),
        }
    }

    /// The variables the continuation at `address` (frame `f`) holds: the suspension point
    /// of its method's async debug info (.NET 11 `DebugInfo` "c1" AsyncInfo chunk, the point
    /// whose native offset is `DiagnosticIP` − the code's start; docs/clr-layout-net11.md
    /// 3.2) lists each saved variable's IL number and offset in the object; the method's
    /// signature, locals signature and Param rows type and name them, the app's PDB names
    /// its locals.
    pub fn held(
        &mut self,
        address: u64,
        f: &RuntimeAsyncFrame,
    ) -> crate::Result<Vec<HeldVariable>> {
        use clrcodeinfo::debuginfo::VarNumber;
        let r = self.r;
        let ip = f.diagnostic_ip;
        if ip == 0 {
            return Err(crate::ClrError::not_found(
                format!("the method of continuation {address:#x}"),
                "its ResumeInfo.DiagnosticIP was not read",
            ));
        }
        let (ci, _) = self.walker.ip_to_method(ip)?.ok_or_else(|| {
            crate::ClrError::not_found_at("method", ip, "the DiagnosticIP is not in managed code")
        })?;
        let (di, blob) = self.walker.code().debug_info(r.rt, &ci)?;
        let native = (ip - ci.method_start) as u32;
        if di.async_suspension_points.is_empty() {
            // Seen on aspnethang-net11: the ReadyToRun framework methods' blobs decode with
            // no async chunk (their JIT'd, re-jitted peers have one).
            return Err(crate::ClrError::not_found_at(
                "the method's suspension points",
                blob,
                format!(
                    "its {} debug info lists none",
                    if ci.kind == crate::model::stack::codeman::CodeKind::Jit {
                        "JIT'd code's"
                    } else {
                        "ReadyToRun code's"
                    }
                ),
            ));
        }
        let point = di
            .async_suspension_points
            .iter()
            .find(|p| p.native_offset == native)
            .ok_or_else(|| {
                crate::ClrError::corrupt(
                    "the method's async debug info",
                    blob,
                    format!(
                        "no suspension point at native offset {native:#x} (State {}; {} points)",
                        f.state,
                        di.async_suspension_points.len()
                    ),
                )
            })?;
        // The method's metadata.
        let md_addr = f.method_desc.ok_or_else(|| {
            crate::ClrError::not_found_at("MethodDesc", ip, "the code names none")
        })?;
        let md = crate::model::methods::method_desc(r, md_addr)?;
        let mt =
            r.rt.method_table(md.method_table)
                .map_err(|e| e.context(format!("its MethodTable {:#x}", md.method_table)))?;
        let module = mt.require_module()?;
        let mm = r.names.module_metadata(r.rt, module)?;
        let meta = mm.metadata()?;
        let rid = md.token & 0x00FF_FFFF;
        let mdef = |e| crate::ClrError::metadata(format!("MethodDef {:#x}", md.token), e);
        let def = meta.method_def(rid).map_err(mdef)?;
        let sig = meta.method_sig(rid).map_err(mdef)?;
        let has_this = sig.calling_convention & 0x20 != 0;
        let mut param_names: HashMap<u16, String> = HashMap::new();
        for p in meta.method_params(rid).map_err(mdef)? {
            if let Ok(row) = meta.param(p) {
                param_names.insert(row.sequence, row.name.to_string());
            }
        }
        let locals = crate::model::stack::vars::locals_sig(&self.walker, module, &meta, def.rva)?;
        let args: Vec<String> = mt.type_args.iter().map(|&a| r.type_name(a)).collect();
        let names = crate::metadata::MetadataNames::new(&meta).with_generic_args(args, Vec::new());
        let type_of = |t: &crate::metadata::SigType| {
            crate::metadata::type_to_string(t, crate::metadata::SigStyle::TypeName, &names)
        };
        let pdb = self.pdb(module);
        let method_token = crate::metadata::Token(md.token);
        let mut out = Vec::new();
        use HeldKind as K;
        for l in &point.locals {
            let at = address + l.offset as u64;
            let (raw, name, kind, ty) = match l.var_number {
                VarNumber::Il(n) => {
                    let n = n as usize;
                    if has_this && n == 0 {
                        ("this".to_owned(), "this".to_owned(), K::This, None)
                    } else {
                        let i = n - usize::from(has_this);
                        if i < sig.params.len() {
                            let name = param_names
                                .get(&(i as u16 + 1))
                                .cloned()
                                .unwrap_or_else(|| format!("argument {i}"));
                            (format!("arg {i}"), name, K::Argument, Some(&sig.params[i]))
                        } else {
                            let li = i - sig.params.len();
                            let name = pdb
                                .as_ref()
                                .and_then(|p| p.reader().ok())
                                .and_then(|p| {
                                    p.local_name(method_token, li as u16)
                                        .ok()
                                        .flatten()
                                        .map(str::to_owned)
                                })
                                .unwrap_or_else(|| format!("local {li}"));
                            (format!("loc {li}"), name, K::Local, locals.get(li))
                        }
                    }
                }
                VarNumber::TypeContext => (
                    "generic context".into(),
                    "generic context".into(),
                    K::Other,
                    None,
                ),
                other => {
                    let s = format!("{other:?}");
                    (s.clone(), s, K::Other, None)
                }
            };
            let (type_name, value) = match (kind, ty) {
                (K::This, _) => (
                    r.type_name(md.method_table),
                    if mt.is_value_type() {
                        r.read_value(at, crate::model::objects::elem::I, None)
                    } else {
                        r.read_value(at, crate::model::objects::elem::CLASS, None)
                    },
                ),
                (_, Some(t)) => (type_of(t), self.value(module, t, at)),
                (_, None) => (
                    "System.IntPtr".to_owned(),
                    r.read_value(at, crate::model::objects::elem::I, None),
                ),
            };
            out.push(HeldVariable {
                raw,
                name,
                kind,
                type_name,
                offset: l.offset,
                value,
            });
        }
        Ok(out)
    }

    /// The value of declared type `t` at `at`.
    fn value(&self, module: u64, t: &crate::metadata::SigType, at: u64) -> FieldValue {
        use crate::metadata::sig::element_type as et;
        use crate::metadata::{Primitive as P, SigType as S};
        let r = self.r;
        match t.unmodified() {
            S::Primitive(p) => {
                let e = match p {
                    P::Boolean => et::BOOLEAN,
                    P::Char => et::CHAR,
                    P::I1 => et::I1,
                    P::U1 => et::U1,
                    P::I2 => et::I2,
                    P::U2 => et::U2,
                    P::I4 => et::I4,
                    P::U4 => et::U4,
                    P::I8 => et::I8,
                    P::U8 => et::U8,
                    P::R4 => et::R4,
                    P::R8 => et::R8,
                    P::I => et::I,
                    P::U => et::U,
                    P::String | P::Object => et::CLASS,
                    _ => {
                        return FieldValue::Unavailable {
                            reason: format!("a {} is not read", p.short_name()),
                        }
                    }
                };
                r.read_value(at, e, None)
            }
            S::Class(_) | S::SzArray(_) | S::Array { .. } => r.read_value(at, et::CLASS, None),
            S::GenericInst {
                value_type: false, ..
            } => r.read_value(at, et::CLASS, None),
            S::Ptr(_) | S::ByRef(_) | S::FnPtr(_) => r.read_value(at, et::I, None),
            S::ValueType(tok) if tok.table_byte() == 0x02 => {
                // an enum reads as its underlying primitive (EEClass::m_NormType)
                let mt = r.typedef_mt(module, tok.0 & 0x00FF_FFFF);
                let e = mt.map(|m| r.norm_type(m)).unwrap_or(et::VALUETYPE);
                r.read_value(at, e, mt.filter(|_| e == et::VALUETYPE))
            }
            _ => FieldValue::Unavailable {
                reason:
                    "a value of this type is not read here (generic or another module's struct)"
                        .into(),
            },
        }
    }

    /// The app's portable PDB for `module`: found by its CodeView entry in the session's
    /// PDB folders (`DiscoverOptions::pdb_dirs`), taken only when its id matches.
    fn pdb(&mut self, module: u64) -> Option<std::sync::Arc<crate::metadata::PdbFile>> {
        if let Some(p) = self.pdbs.get(&module) {
            return p.clone();
        }
        let opts = &self.r.rt.options;
        let found = (opts.files && !opts.pdb_dirs.is_empty())
            .then(|| {
                let data = self.r.rt.module(module).ok()?;
                let info = crate::metadata::read_debug_info_from_memory(
                    self.r.rt.memory(),
                    data.image_base,
                    (data.image_size != 0).then_some(data.image_size as u64),
                )
                .ok()?;
                let cv = info.codeview?;
                crate::metadata::find_pdb(&cv, &opts.pdb_dirs, false)
                    .found
                    .map(std::sync::Arc::new)
            })
            .flatten();
        self.pdbs.insert(module, found.clone());
        found
    }
}
