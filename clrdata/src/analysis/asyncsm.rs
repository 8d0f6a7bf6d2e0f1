//! Async state machines: what `dumpasync` needs.
//!
//! - A box is found by structure, not by name: a heap object whose type derives from
//!   `System.Threading.Tasks.Task` and has an instance field named `StateMachine`
//!   (`AsyncTaskMethodBuilder`1+AsyncStateMachineBox`1[...]` on .NET Core; also what
//!   `AsyncValueTaskMethodBuilder` and `AsyncIteratorMethodBuilder` use), or a type with the
//!   fields `StateMachine` and `_valueTaskSource` (a `ManualResetValueTaskSourceCore`): the
//!   `PoolingAsyncValueTaskMethodBuilder`1+StateMachineBox`1[...]` of
//!   `[AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]` methods, which is no
//!   Task (so not in the DAC's list of `AsyncStateMachineBox`es). A pooled box back in the pool's
//!   cache (its state machine's builder no longer points at it) is no box of a running method
//!   and is left out (`idle_pooled_boxes` counts them).
//! - Its state: the state machine's `<>1__state` (Roslyn and mcs; `$PC` for older mcs): -1
//!   running, -2 done, N >= 0 waiting at await N. The state machine is a struct embedded in
//!   the box (release builds) or a class (debug builds).
//! - Its task: `Task.m_stateFlags` (decoded by [`crate::analysis::tasks::TaskStatus`], the one decoder)
//!   and `m_continuationObject`: the awaiting box itself, a Task (whose own
//!   continuation is followed), a `List<object>` of several, or a delegate / continuation
//!   object whose `_target`, `m_action`, `m_task`, `_continuation`, `m_stateMachine` lead to a
//!   box (ContinuationWrapper unwrapped on the way). A pooled box's status and continuation are
//!   its `_valueTaskSource`'s (`_completed`, `_error`, `_continuationState`: the awaiting box).
//! - An async iterator (`IAsyncEnumerable`): its box's task is awaited by nobody; the method
//!   running `await foreach` awaits `MoveNextAsync()`'s ValueTask<bool>, whose source is the
//!   iterator object itself (the box's state machine, a class): the link is that state
//!   machine's `ManualResetValueTaskSourceCore` field's `_continuationState`.
//! - Awaited objects: the awaiter fields `<>u__N` (or mcs `$awaiter`), searched depth first
//!   through embedded structs for the first object (`TaskAwaiter.m_task`,
//!   `ValueTaskAwaiter._value._obj`: a Task or an `IValueTaskSource` such as a channel's
//!   `AsyncOperation`, a `SemaphoreSlim+TaskNode`, a pooled box or an iterator).
//! - Chains: the continuation points from the awaited (inner) box to the awaiting (outer) one.
//!   A chain starts at a box no other box continues into (the innermost) and follows the
//!   continuations outward, as SOS prints a logical stack. Boxes that await each other in a
//!   ring (a deadlock of tasks) are reported as a cycle ([`AsyncAnalysis::cycles`]); the chain
//!   through them stops where it would come back. Every walk is bounded.
//! - Threads blocked synchronously (`Task.Wait`, `.Result`, `GetAwaiter().GetResult()`) leave
//!   a `Task+SetOnInvokeMres` in the task's continuation: counted per box (`wait_events`);
//!   which thread sleeps on it is `causality`'s business (it needs the stacks).

use crate::analysis::channels::ChannelState;
use crate::discovery::runtime::Runtime;
use crate::model::fields::{field, int, obj as ref_field};
use crate::model::heap::GcHeap;
use crate::model::names::TypeNames;
use crate::model::objects::{FieldData, FieldValue, ObjectReader};
use dumpreader::Memory;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap, HashSet};

/// Bound on continuation resolution depth (nested wrappers, tasks, lists).
const MAX_RESOLVE_DEPTH: usize = 16;
/// Bound on a chain's length.
pub const MAX_CHAIN: usize = 1024;
/// Bound on a List<object> of continuations read.
const MAX_LIST: u64 = 4096;
/// Bound on parent chains.
const MAX_PARENTS: usize = 64;

/// A non-empty awaiter field of a state machine (`<>u__N`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Awaiter {
    /// The field's name.
    pub field: String,
    /// The awaiter's declared type.
    pub type_name: String,
    /// The object the awaiter holds (the awaited task, usually), when any.
    pub object: Option<u64>,
    /// That object's type name.
    pub object_type: Option<String>,
}

/// What builds a box.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BoxKind {
    /// A Task (`AsyncTaskMethodBuilder`1+AsyncStateMachineBox`1`).
    Task,
    /// A `PoolingAsyncValueTaskMethodBuilder`1+StateMachineBox`1` (no Task).
    Pooling,
    /// Not a box: a runtime-async method suspended by the runtime (.NET 11), its
    /// `Continuation` object ([`crate::analysis::runtime_async`]).
    RuntimeAsync,
}

/// The status of a `ManualResetValueTaskSourceCore` (`ValueTaskSourceStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceStatus {
    /// Not completed.
    Pending,
    /// Completed with a result.
    Succeeded,
    /// Completed with an exception.
    Faulted,
    /// Completed with an OperationCanceledException.
    Canceled,
}

impl SourceStatus {
    /// Snake-case name.
    pub fn name(self) -> &'static str {
        match self {
            SourceStatus::Pending => "pending",
            SourceStatus::Succeeded => "succeeded",
            SourceStatus::Faulted => "faulted",
            SourceStatus::Canceled => "canceled",
        }
    }
}

/// One async state machine box.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AsyncBox {
    /// The box's address.
    pub address: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// The box's type name.
    pub box_type: String,
    /// A Task box or a pooled one.
    pub kind: BoxKind,
    /// A pooled box's `_valueTaskSource` status (None for Task boxes).
    pub source_status: Option<SourceStatus>,
    /// The state machine's type name.
    pub state_machine_type: String,
    /// The state machine's MethodTable, when known.
    pub state_machine_mt: Option<u64>,
    /// Where the state machine's fields start (embedded struct or the class instance's
    /// first field).
    pub state_machine_address: Option<u64>,
    /// `<>1__state`, when read.
    pub state: Option<i64>,
    /// `Task.m_stateFlags` (0 for a pooled box).
    pub task_flags: u32,
    /// The raw continuation object (0 = none): `m_continuationObject`, or the
    /// `_continuationState` named by `continuation_via`.
    pub continuation_object: u64,
    /// Where `continuation_object` was read: `m_continuationObject`,
    /// `_valueTaskSource._continuationState` (pooled box) or
    /// `StateMachine.<field>._continuationState` (an async iterator's promise).
    pub continuation_via: &'static str,
    /// `Task+SetOnInvokeMres` events in the continuation: threads blocked synchronously on
    /// this box's task.
    pub wait_events: Vec<u64>,
    /// The boxes the continuation leads to (the awaiting methods).
    pub continuations: Vec<u64>,
    /// Non-empty awaiter fields (a runtime-async method's innermost frame: what its chain's
    /// plumbing continuation says it awaits).
    pub awaiters: Vec<Awaiter>,
    /// A runtime-async method's frame ([`BoxKind::RuntimeAsync`]): its continuation's
    /// DiagnosticIP, suspension point, method and owning task. Its `state_machine_type` is
    /// then the method (`Type.Method`, as the program's manifests write it).
    pub runtime_async: Option<crate::analysis::runtime_async::RuntimeAsyncFrame>,
}

impl AsyncBox {
    /// Whether the task completed (ran to completion, faulted or was canceled; for a pooled
    /// box, its value task source completed).
    pub fn completed(&self) -> bool {
        match self.kind {
            BoxKind::Task | BoxKind::RuntimeAsync => {
                crate::analysis::tasks::TaskStatus::from_flags(self.task_flags).is_completed()
            }
            BoxKind::Pooling => self
                .source_status
                .is_some_and(|s| s != SourceStatus::Pending),
        }
    }

    /// `done` once the task completed (the runtime then clears the state machine, so its
    /// state field reads 0), else `awaiting` (N >= 0), `running` (-1), `done` (-2) or
    /// `unknown`.
    pub fn state_name(&self) -> &'static str {
        if self.completed() {
            return "done";
        }
        match self.state {
            Some(n) if n >= 0 => "awaiting",
            Some(-1) => "running",
            Some(-2) => "done",
            _ => "unknown",
        }
    }

    /// The task's status from its flags ([`crate::analysis::tasks::TaskStatus`], snake case); a pooled
    /// box's is its value task source's (`pending`, `succeeded`, `faulted`, `canceled`).
    pub fn task_status(&self) -> &'static str {
        match (self.kind, self.source_status) {
            (BoxKind::Pooling, Some(s)) => s.name(),
            (BoxKind::Pooling, None) => "unknown",
            (BoxKind::Task | BoxKind::RuntimeAsync, _) => task_status_of(self.task_flags),
        }
    }
}

/// A task's status from its `m_stateFlags`, snake case (the one decoder,
/// [`crate::analysis::tasks::TaskStatus`]).
pub fn task_status_of(f: u32) -> &'static str {
    crate::analysis::tasks::TaskStatus::from_flags(f).snake()
}

/// Every box and the chains they form.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AsyncAnalysis {
    /// The boxes, in heap order.
    pub boxes: Vec<AsyncBox>,
    /// Chains as indices into `boxes`, innermost first.
    pub chains: Vec<Vec<usize>>,
    /// Rings of boxes awaiting each other (indices into `boxes`, in continuation order: each
    /// box's completion continues the next, the last's the first): none can complete.
    pub cycles: Vec<Vec<usize>>,
    /// Pooled boxes back in their pool's cache (no running method), left out of `boxes`.
    pub idle_pooled_boxes: usize,
    /// Problems met (objects that could not be read, cycles, walk errors).
    pub errors: Vec<String>,
    /// Runtime-async chains the runtime is running on threads now (.NET 11).
    pub running: Vec<crate::analysis::runtime_async::RunningChain>,
    /// How many damaged places the heap walk met (each also in `errors`): the boxes listed
    /// may then be incomplete.
    pub heap_walk_errors: usize,
    /// What else the walk learnt about tasks and what completes them (for `causality`).
    #[serde(skip)]
    pub facts: TaskFacts,
}

/// Objects met during the walk that tell what a task waits for.
#[derive(Debug, Clone, Default)]
pub struct TaskFacts {
    /// Every object deriving from `System.Threading.Tasks.Task` that is not a box.
    pub tasks: HashSet<u64>,
    /// `TaskCompletionSource` objects by the task they complete (`_task`).
    pub tcs_of_task: HashMap<u64, u64>,
    /// Every `SemaphoreSlim`.
    pub semaphores: Vec<Semaphore>,
    /// The semaphore (index into `semaphores`) whose async waiter list holds a TaskNode.
    pub semaphore_of_node: HashMap<u64, usize>,
    /// `Task+SetOnInvokeMres` objects: the event a thread blocked in `Task.Wait`, `.Result`
    /// or `GetResult()` sleeps on, registered as the waited task's continuation.
    pub wait_events: HashSet<u64>,
    /// Every `System.Threading.Channels` channel ([`crate::analysis::channels`]).
    pub channels: Vec<ChannelState>,
    /// The channel (index into `channels`) whose waiter lists hold an operation
    /// (`ReadAsync`, `WriteAsync`, `WaitToReadAsync`, `WaitToWriteAsync`).
    pub channel_of_operation: HashMap<u64, usize>,
}

impl TaskFacts {
    /// The channel whose waiter lists hold the operation `op`, when one does.
    pub fn channel_of(&self, op: u64) -> Option<&ChannelState> {
        self.channel_of_operation
            .get(&op)
            .and_then(|&i| self.channels.get(i))
    }
}

/// A `SemaphoreSlim` and its waiters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Semaphore {
    /// Its address.
    pub address: u64,
    /// `m_currentCount`.
    pub current_count: i64,
    /// `m_waitCount` (threads blocked synchronously).
    pub sync_waiters: i64,
    /// The async waiters (`TaskNode`s from `m_asyncHead`), in order.
    pub async_waiters: Vec<u64>,
}

struct Finder<'a, 'r, M> {
    r: &'a ObjectReader<'r, M>,
    task_mt: Option<u64>,
    is_task: HashMap<u64, bool>,
    is_box: HashMap<u64, Option<BoxKind>>,
    /// Constructed types by module (see [`param_types`]), names in signature spelling.
    param_types: HashMap<u64, crate::Result<Vec<(u64, String)>>>,
    /// Modules searched for a struct's instantiation (CoreLib and each box's loader module).
    modules: Vec<u64>,
    /// Problems met looking instantiations up (said where they leave a box unread).
    lookup_errors: BTreeSet<String>,
    /// Where resuming a RuntimeAsyncTask leads: its chain's innermost frame (.NET 11).
    first_frame: HashMap<u64, u64>,
}

/// A type name in signature spelling (`A`1[System.Int32]`) from the runtime's
/// (`A`1[[System.Int32, System.Private.CoreLib]]`): assembly names dropped, one bracket level.
fn sig_spelling(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let b = name.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'[' if b.get(i + 1) == Some(&b'[') => {
                out.push('[');
                i += 2;
            }
            b']' if b.get(i + 1) == Some(&b',') && b.get(i + 2) == Some(&b'[') => {
                out.push(',');
                i += 3;
            }
            b']' if b.get(i + 1) == Some(&b']') => {
                out.push(']');
                i += 2;
            }
            b',' if b.get(i + 1) == Some(&b' ') => {
                // `, assembly` up to the closing bracket of this argument
                while i < b.len() && b[i] != b']' {
                    i += 1;
                }
            }
            c => {
                out.push(c as char);
                i += 1;
            }
        }
    }
    out
}

/// The constructed types (generic instantiations) a module has loaded: its
/// `m_pAvailableParamTypes` hash, read by [`crate::model::methods::available_param_types`] (the
/// module field from the layout: .NET 8's table, 10's descriptor; refused by name on 9.0,
/// whose descriptor does not publish it).
fn param_types<M: Memory>(r: &ObjectReader<'_, M>, module: u64) -> crate::Result<Vec<u64>> {
    crate::model::methods::available_param_types(r, module)
}

/// What an object's type tells `analyze`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Box,
    Task,
    Tcs,
    Semaphore,
    WaitEvent,
    Channel,
    RuntimeAsyncTask,
    Other,
}

/// Bound on a semaphore's async waiter list.
const MAX_WAITERS: usize = 100_000;

impl<'a, 'r, M: Memory> Finder<'a, 'r, M> {
    fn kind(&mut self, mt: u64) -> Kind {
        if self.is_box_mt(mt) {
            return Kind::Box;
        }
        if self.derives_from_task(mt) {
            if crate::analysis::runtime_async::is_runtime_async_task(&self.r.type_name(mt)) {
                return Kind::RuntimeAsyncTask;
            }
            return Kind::Task;
        }
        let name = self.r.type_name(mt);
        if name.starts_with("System.Threading.Tasks.TaskCompletionSource") {
            Kind::Tcs
        } else if name == "System.Threading.SemaphoreSlim" {
            Kind::Semaphore
        } else if name == "System.Threading.Tasks.Task+SetOnInvokeMres" {
            Kind::WaitEvent
        } else if crate::analysis::channels::is_channel_type(&name) {
            Kind::Channel
        } else {
            Kind::Other
        }
    }

    fn semaphore(&mut self, addr: u64, mt: u64) -> crate::Result<Semaphore> {
        let fs = self.r.fields(mt, addr + 8, false).map_err(|e| {
            crate::ClrError::corrupt("SemaphoreSlim", addr, format!("fields not readable: {e}"))
        })?;
        let num = |n: &str| int(&fs, n).unwrap_or(0);
        let mut async_waiters = Vec::new();
        let mut node = ref_field(&fs, "m_asyncHead");
        let mut seen = HashSet::new();
        while node != 0 && seen.insert(node) && async_waiters.len() < MAX_WAITERS {
            async_waiters.push(node);
            node = match self.fields_of(node) {
                Some((_, nf)) => ref_field(&nf, "Next"),
                None => 0,
            };
        }
        Ok(Semaphore {
            address: addr,
            current_count: num("m_currentCount"),
            sync_waiters: num("m_waitCount"),
            async_waiters,
        })
    }

    fn derives_from_task(&mut self, mt: u64) -> bool {
        if let Some(&v) = self.is_task.get(&mt) {
            return v;
        }
        let mut cur = mt;
        let mut found = false;
        for _ in 0..MAX_PARENTS {
            if cur == 0 {
                break;
            }
            let hit = match self.task_mt {
                Some(t) => cur == t,
                None => self.r.type_name(cur) == "System.Threading.Tasks.Task",
            };
            if hit {
                found = true;
                break;
            }
            match self.r.mt(cur) {
                Some(i) => cur = i.parent,
                None => break,
            }
        }
        self.is_task.insert(mt, found);
        found
    }

    fn fields_of(&self, addr: u64) -> Option<(u64, Vec<FieldData>)> {
        let (mt, info) = self.r.object_mt(addr).ok()?;
        if info.component_size != 0 {
            return Some((mt, Vec::new()));
        }
        let f = self.r.fields(mt, addr + 8, false).ok()?;
        Some((mt, f))
    }

    fn is_box_mt(&mut self, mt: u64) -> bool {
        self.box_kind(mt).is_some()
    }

    /// Whether objects of `mt` are boxes, and which kind.
    fn box_kind(&mut self, mt: u64) -> Option<BoxKind> {
        if let Some(&v) = self.is_box.get(&mt) {
            return v;
        }
        // Only names matter here (values are read at a dummy address).
        let names: Vec<String> = self
            .r
            .fields(mt, 0, false)
            .map(|fs| fs.into_iter().map(|f| f.name).collect())
            .unwrap_or_default();
        let has = |n: &str| names.iter().any(|f| f == n);
        let v = if !has("StateMachine") {
            None
        } else if self.derives_from_task(mt) {
            Some(BoxKind::Task)
        } else if has("_valueTaskSource") {
            Some(BoxKind::Pooling)
        } else {
            None
        };
        self.is_box.insert(mt, v);
        v
    }

    /// The fields of an embedded struct, when its MethodTable is known or its instantiation
    /// is found among the loaded constructed types by its exact name.
    fn struct_fields(&mut self, f: &FieldData) -> Option<(u64, Vec<FieldData>)> {
        match f.value {
            FieldValue::ValueType { address, mt } => {
                let m = match mt.or(f.type_mt) {
                    Some(m) => m,
                    None => self.instantiation(&f.type_name)?,
                };
                Some((address, self.r.fields(m, address, false).ok()?))
            }
            _ => None,
        }
    }

    /// The MethodTable of a generic instantiation (signature spelling, as a field's declared
    /// type reads) among the constructed types of the modules searched.
    fn instantiation(&mut self, sig_name: &str) -> Option<u64> {
        if !sig_name.contains('`') {
            return None;
        }
        // field types read either way (`A`1[System.Int32]`, `A`1[[System.Int32, ...]]`)
        let sig_name = &sig_spelling(sig_name);
        for module in self.modules.clone() {
            let r = self.r;
            let list = self.param_types.entry(module).or_insert_with(|| {
                param_types(r, module).map(|v| {
                    v.into_iter()
                        .map(|th| th & !1)
                        .filter(|th| th & 2 == 0 && *th != 0)
                        .map(|th| (th, sig_spelling(&r.type_name(th))))
                        .collect()
                })
            });
            match list {
                Ok(l) => {
                    if let Some((mt, _)) = l.iter().find(|(_, n)| n == sig_name) {
                        return Some(*mt);
                    }
                }
                Err(e) => {
                    self.lookup_errors
                        .insert(format!("module {module:#x}'s constructed types: {e}"));
                }
            }
        }
        None
    }

    /// The first non-null object reference in a field, searched depth first through embedded
    /// structs (`ValueTaskAwaiter._value._obj`); a struct whose MethodTable is unknown is read
    /// by its first slot when that holds an object.
    fn first_object(&mut self, f: &FieldData, depth: usize) -> Option<u64> {
        match &f.value {
            FieldValue::Object { address, .. } => Some(*address).filter(|a| *a != 0),
            FieldValue::ValueType { address, mt } if depth < 4 => {
                if mt.or(f.type_mt).is_some() {
                    let (_, fs) = self.struct_fields(f)?;
                    fs.iter().find_map(|g| self.first_object(g, depth + 1))
                } else if let Some((_, fs)) = self.struct_fields(f) {
                    fs.iter().find_map(|g| self.first_object(g, depth + 1))
                } else {
                    self.r
                        .rt
                        .memory()
                        .read_u64(*address)
                        .ok()
                        .filter(|&o| o != 0 && self.r.object_mt(o).is_ok())
                }
            }
            _ => None,
        }
    }

    /// A `ManualResetValueTaskSourceCore` embedded as `f`: its status and continuation state.
    fn source_core(&mut self, f: &FieldData) -> Option<(SourceStatus, u64)> {
        if !f
            .type_name
            .starts_with("System.Threading.Tasks.Sources.ManualResetValueTaskSourceCore")
        {
            return None;
        }
        let (_, fs) = self.struct_fields(f)?;
        let completed = matches!(
            field(&fs, "_completed").map(|x| &x.value),
            Some(FieldValue::Bool { value: true })
        );
        let error = ref_field(&fs, "_error");
        let status = if !completed {
            SourceStatus::Pending
        } else if error == 0 {
            SourceStatus::Succeeded
        } else {
            // ExceptionDispatchInfo._exception
            let ex = self
                .fields_of(error)
                .map_or(0, |(_, e)| ref_field(&e, "_exception"));
            let ty = self
                .r
                .object_mt(ex)
                .map(|(m, _)| self.r.type_name(m))
                .unwrap_or_default();
            if ty.ends_with("OperationCanceledException") || ty.ends_with("TaskCanceledException") {
                SourceStatus::Canceled
            } else {
                SourceStatus::Faulted
            }
        };
        Some((status, ref_field(&fs, "_continuationState")))
    }

    /// Reads a box; `None` for a pooled box idle in its pool's cache.
    fn read_box(&mut self, addr: u64, mt: u64) -> crate::Result<Option<AsyncBox>> {
        let kind = self.box_kind(mt).unwrap_or(BoxKind::Task);
        let fields = self.r.fields(mt, addr + 8, false).map_err(|e| {
            crate::ClrError::corrupt("box", addr, format!("fields not readable: {e}"))
        })?;
        let flags = int(&fields, "m_stateFlags").unwrap_or(0) as u32;
        let mut cont = ref_field(&fields, "m_continuationObject");
        let mut via = "m_continuationObject";
        let mut source_status = None;
        if kind == BoxKind::Pooling {
            via = "_valueTaskSource._continuationState";
            let vts = field(&fields, "_valueTaskSource");
            match vts.and_then(|f| self.source_core(f)) {
                Some((st, c)) => {
                    source_status = Some(st);
                    cont = c;
                }
                None => {
                    let why: Vec<&str> = self.lookup_errors.iter().map(String::as_str).collect();
                    return Err(crate::ClrError::not_found_at(
                        "pooled box",
                        addr,
                        format!(
                            "its _valueTaskSource ({}) is not readable: the MethodTable of \
                             that struct is not found{}{}",
                            vts.map_or("no such field", |f| f.type_name.as_str()),
                            if why.is_empty() { "" } else { ": " },
                            why.join("; ")
                        ),
                    ));
                }
            }
        }
        let info = self.r.mt(mt);
        let mut sm_type = None;
        let mut sm_mt = None;
        let mut sm_addr = None;
        let mut sm_fields = Vec::new();
        let mut sm_is_class = false;
        if let Some(sm) = field(&fields, "StateMachine") {
            match &sm.value {
                FieldValue::ValueType { address, mt } => {
                    let m = mt.or(sm.type_mt);
                    sm_mt = m;
                    sm_addr = Some(*address);
                    if let Some(m) = m {
                        sm_type = Some(self.r.type_name(m));
                        sm_fields = self.r.fields(m, *address, false).unwrap_or_default();
                    }
                }
                FieldValue::Object { address, .. } if *address != 0 => {
                    if let Some((m, f)) = self.fields_of(*address) {
                        sm_mt = Some(m);
                        sm_addr = Some(address + 8);
                        sm_type = Some(self.r.type_name(m));
                        sm_fields = f;
                        sm_is_class = true;
                    }
                }
                _ => {}
            }
            if sm_type.is_none() && !sm.type_name.is_empty() {
                sm_type = Some(sm.type_name.clone());
            }
        }
        if sm_type.is_none() {
            if let Some(last) = info.as_ref().and_then(|i| i.type_args.last().copied()) {
                sm_type = Some(self.r.type_name(last));
                sm_mt = sm_mt.or(Some(last));
            }
        }
        if kind == BoxKind::Pooling {
            // A running method's pooled box is its builder's m_task (stored before the state
            // machine was copied in); a box returned to the cache holds a default state machine.
            if let Some(b) = field(&sm_fields, "<>t__builder") {
                if self.first_object(b, 0) != Some(addr) {
                    return Ok(None);
                }
            }
        }
        // An async iterator: nobody awaits the box's task; the consumer awaits the iterator
        // object (a value task source) through its promise's continuation state.
        if cont == 0 && sm_is_class {
            if let Some((name, c)) = sm_fields
                .iter()
                .find_map(|f| self.source_core(f).map(|(_, c)| (f.name.as_str(), c)))
            {
                if c != 0 {
                    cont = c;
                    via = if name == "<>v__promiseOfValueOrEnd" {
                        "StateMachine.<>v__promiseOfValueOrEnd._continuationState"
                    } else {
                        "StateMachine (a value task source)._continuationState"
                    };
                }
            }
        }
        let state = int(&sm_fields, "<>1__state").or_else(|| int(&sm_fields, "$PC"));
        let mut awaiters = Vec::new();
        for f in &sm_fields {
            let is_awaiter = f.name.starts_with("<>u__") || f.name.starts_with("$awaiter");
            if !is_awaiter {
                continue;
            }
            if let Some(o) = self.first_object(f, 0) {
                let object_type = self.r.object_mt(o).ok().map(|(m, _)| self.r.type_name(m));
                awaiters.push(Awaiter {
                    field: f.name.clone(),
                    type_name: f.type_name.clone(),
                    object: Some(o),
                    object_type,
                });
            }
        }
        Ok(Some(AsyncBox {
            address: addr,
            mt,
            box_type: self.r.type_name(mt),
            kind,
            source_status,
            state_machine_type: sm_type.unwrap_or_else(|| "<unknown state machine>".into()),
            state_machine_mt: sm_mt,
            state_machine_address: sm_addr,
            state,
            task_flags: flags,
            continuation_object: cont,
            continuation_via: via,
            wait_events: Vec::new(),
            continuations: Vec::new(),
            awaiters,
            runtime_async: None,
        }))
    }

    /// The boxes that `obj` (a continuation object) leads to, and the task wait events
    /// (`Task+SetOnInvokeMres`) met on the way.
    #[allow(clippy::too_many_arguments)]
    fn resolve(
        &mut self,
        obj: u64,
        boxes: &HashSet<u64>,
        events: &HashSet<u64>,
        depth: usize,
        seen: &mut HashSet<u64>,
        out: &mut Vec<u64>,
        waits: &mut Vec<u64>,
    ) {
        if obj == 0 || depth > MAX_RESOLVE_DEPTH || !seen.insert(obj) {
            return;
        }
        if boxes.contains(&obj) {
            if !out.contains(&obj) {
                out.push(obj);
            }
            return;
        }
        if events.contains(&obj) {
            waits.push(obj);
            return;
        }
        // A RuntimeAsyncTask met as a continuation (its dispatch Action's target, an awaited
        // source's continuation state, a RuntimeAsyncTaskContinuation's owner): resuming it
        // resumes its chain's innermost method.
        if let Some(&first) = self.first_frame.get(&obj) {
            if boxes.contains(&first) && !out.contains(&first) {
                out.push(first);
            }
            return;
        }
        let Ok((mt, info)) = self.r.object_mt(obj) else {
            return;
        };
        // An object[] (List<object>._items).
        if info.component_size != 0 {
            if let Ok(Some(a)) = self.r.array(obj, &info) {
                if a.component_size == 8 && a.element_type != crate::model::objects::elem::VALUETYPE
                {
                    for i in 0..a.length.min(MAX_LIST) {
                        if let Ok(e) = self.r.rt.memory().read_u64(a.data + 8 * i) {
                            self.resolve(e, boxes, events, depth + 1, seen, out, waits);
                        }
                    }
                }
            }
            return;
        }
        let Ok(fields) = self.r.fields(mt, obj + 8, false) else {
            return;
        };
        if self.derives_from_task(mt) {
            let c = ref_field(&fields, "m_continuationObject");
            self.resolve(c, boxes, events, depth + 1, seen, out, waits);
            return;
        }
        let name = self.r.type_name(mt);
        if name.starts_with("System.Collections.Generic.List`1") {
            let items = ref_field(&fields, "_items");
            self.resolve(items, boxes, events, depth + 1, seen, out, waits);
            return;
        }
        for n in [
            "_target",
            "m_action",
            "m_task",
            "_continuation",
            "m_stateMachine",
            "StateMachine",
            "_continuationState",
            "RuntimeAsyncTask",
        ] {
            let c = ref_field(&fields, n);
            if c != 0 {
                self.resolve(c, boxes, events, depth + 1, seen, out, waits);
            }
        }
    }
}

/// Finds every async state machine box of the heap and the chains they form.
pub fn analyze<M: Memory>(rt: &Runtime<M>, names: &TypeNames, heap: &GcHeap) -> AsyncAnalysis {
    if let Err(e) = rt.require(crate::discovery::layout::Capability::Fields) {
        return AsyncAnalysis {
            errors: vec![e.to_string()],
            ..AsyncAnalysis::default()
        };
    }
    let reader = ObjectReader::new(rt, names);
    let task_mt = reader.corelib_type("System.Threading.Tasks.Task");
    let mut f = Finder {
        r: &reader,
        task_mt,
        is_task: HashMap::new(),
        is_box: HashMap::new(),
        param_types: HashMap::new(),
        modules: reader.corelib_module().into_iter().collect(),
        lookup_errors: BTreeSet::new(),
        first_frame: HashMap::new(),
    };
    let mut out = AsyncAnalysis::default();
    let mut iter = heap.objects(rt);
    let mut candidates = Vec::new();
    let mut kinds: HashMap<u64, Kind> = HashMap::new();
    let mut tcs = Vec::new();
    let mut sems = Vec::new();
    let mut chans = Vec::new();
    let mut runtime_async_tasks = Vec::new();
    for o in iter.by_ref() {
        if o.is_free {
            continue;
        }
        let k = *kinds.entry(o.mt).or_insert_with(|| f.kind(o.mt));
        match k {
            Kind::Box => candidates.push((o.address, o.mt)),
            Kind::Task => {
                out.facts.tasks.insert(o.address);
            }
            Kind::RuntimeAsyncTask => {
                out.facts.tasks.insert(o.address);
                runtime_async_tasks.push(o.address);
            }
            Kind::Tcs => tcs.push((o.address, o.mt)),
            Kind::Semaphore => sems.push((o.address, o.mt)),
            Kind::WaitEvent => {
                out.facts.wait_events.insert(o.address);
            }
            Kind::Channel => chans.push((o.address, o.mt)),
            Kind::Other => {}
        }
    }
    for (a, mt) in tcs {
        if let Ok(fs) = reader.fields(mt, a + 8, false) {
            let t = ref_field(&fs, "_task");
            if t != 0 {
                out.facts.tcs_of_task.insert(t, a);
            }
        }
    }
    for (a, mt) in sems {
        match f.semaphore(a, mt) {
            Ok(sem) => {
                let i = out.facts.semaphores.len();
                for n in &sem.async_waiters {
                    out.facts.semaphore_of_node.insert(*n, i);
                }
                out.facts.semaphores.push(sem);
            }
            Err(e) => out.errors.push(e.to_string()),
        }
    }
    for (a, mt) in chans {
        match crate::analysis::channels::read(&reader, a, mt) {
            Ok(ch) => {
                let i = out.facts.channels.len();
                for op in ch
                    .blocked_readers
                    .iter()
                    .chain(&ch.blocked_writers)
                    .chain(&ch.waiting_to_read)
                    .chain(&ch.waiting_to_write)
                {
                    out.facts.channel_of_operation.insert(*op, i);
                }
                out.facts.channels.push(ch);
            }
            Err(e) => out.errors.push(e.to_string()),
        }
    }
    out.heap_walk_errors = iter.errors().len();
    for e in iter.errors() {
        out.errors.push(format!("heap walk: {e}"));
    }
    for (a, mt) in candidates {
        if let Some(lm) = reader.mt(mt).map(|i| i.loader_module) {
            if lm != 0 && !f.modules.contains(&lm) {
                f.modules.push(lm);
            }
        }
        match f.read_box(a, mt) {
            Ok(Some(b)) => out.boxes.push(b),
            Ok(None) => out.idle_pooled_boxes += 1,
            Err(e) => out.errors.push(e.to_string()),
        }
    }
    // .NET 11: the runtime-async methods' frames, as boxes of their own kind.
    let found = crate::analysis::runtime_async::find(&reader, &runtime_async_tasks);
    out.boxes.extend(found.frames.into_iter().map(|f| {
        AsyncBox {
            address: f.address,
            mt: f.mt,
            box_type: f.type_name,
            kind: BoxKind::RuntimeAsync,
            source_status: None,
            state_machine_type: f.display,
            state_machine_mt: None,
            state_machine_address: None,
            state: Some(f.frame.state as i64),
            task_flags: f.task_flags,
            continuation_object: f.continuation_object,
            continuation_via: f.continuation_via,
            wait_events: Vec::new(),
            continuations: Vec::new(),
            awaiters: f
                .awaited
                .into_iter()
                .map(|w| Awaiter {
                    field: w.field,
                    type_name: w.type_name,
                    object: Some(w.object),
                    object_type: w.object_type,
                })
                .collect(),
            runtime_async: Some(f.frame),
        }
    }));
    out.running = found.running;
    out.errors.extend(found.errors);
    f.first_frame = found.first_frame;
    let set: HashSet<u64> = out.boxes.iter().map(|b| b.address).collect();
    for i in 0..out.boxes.len() {
        let mut seen = HashSet::new();
        seen.insert(out.boxes[i].address);
        let mut next = Vec::new();
        let mut waits = Vec::new();
        let c = out.boxes[i].continuation_object;
        f.resolve(
            c,
            &set,
            &out.facts.wait_events,
            0,
            &mut seen,
            &mut next,
            &mut waits,
        );
        out.boxes[i].continuations = next;
        out.boxes[i].wait_events = waits;
    }
    let (chains, cycles) = chains(&out.boxes, &mut out.errors);
    out.chains = chains;
    out.cycles = cycles;
    out
}

/// Bound on the number of chains (paths) enumerated: a box awaited by several others starts
/// one chain per awaiting path, which could multiply on a crafted heap.
pub const MAX_CHAINS: usize = 10_000;

/// Chains (indices, innermost first) from the boxes' continuations: every path from a box
/// nobody continues into (the innermost) to a box that continues nowhere (a root). A box
/// awaited by two others (a `List<object>` continuation) therefore starts two chains. Boxes
/// only on rings start at their first box in heap order; a path stops before it comes back,
/// and the ring is returned apart (each once, from its first box in heap order).
type Chains = (Vec<Vec<usize>>, Vec<Vec<usize>>);

fn chains(boxes: &[AsyncBox], errors: &mut Vec<String>) -> Chains {
    let index: HashMap<u64, usize> = boxes
        .iter()
        .enumerate()
        .map(|(i, b)| (b.address, i))
        .collect();
    let next: Vec<Vec<usize>> = boxes
        .iter()
        .map(|b| {
            let mut v: Vec<usize> = b
                .continuations
                .iter()
                .filter_map(|a| index.get(a).copied())
                .collect();
            v.dedup();
            v
        })
        .collect();
    let mut awaited = vec![false; boxes.len()];
    for n in next.iter().flatten() {
        awaited[*n] = true;
    }
    let mut w = PathWalk {
        boxes,
        next: &next,
        out: Vec::new(),
        covered: vec![false; boxes.len()],
        problems: BTreeSet::new(),
        cycles: Vec::new(),
    };
    // Innermost boxes first, then boxes reachable only through cycles.
    for (i, _) in awaited.iter().enumerate().filter(|(_, a)| !**a) {
        w.from(i);
    }
    for i in 0..boxes.len() {
        if !w.covered[i] {
            w.from(i);
        }
    }
    errors.extend(w.problems);
    (w.out, w.cycles)
}

struct PathWalk<'a> {
    boxes: &'a [AsyncBox],
    next: &'a [Vec<usize>],
    out: Vec<Vec<usize>>,
    covered: Vec<bool>,
    problems: BTreeSet<String>,
    cycles: Vec<Vec<usize>>,
}

impl PathWalk<'_> {
    /// Every path from `start`, depth first with an explicit stack (bounded depth and count).
    fn from(&mut self, start: usize) {
        // (path so far, index of the next continuation to try at its last box)
        let mut path = vec![start];
        let mut cursor = vec![0usize];
        self.covered[start] = true;
        while let Some(&last) = path.last() {
            let k = *cursor.last().unwrap_or(&0);
            let succ = &self.next[last];
            if k == 0 && succ.is_empty() {
                self.emit(&path);
            }
            if k >= succ.len() {
                path.pop();
                cursor.pop();
                continue;
            }
            if let Some(c) = cursor.last_mut() {
                *c += 1;
            }
            let n = succ[k];
            if let Some(at) = path.iter().position(|&p| p == n) {
                // A ring: record it once (rotated to start at its lowest index).
                let ring = &path[at..];
                let lo = ring
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, &b)| b)
                    .map_or(0, |(i, _)| i);
                let mut r = ring[lo..].to_vec();
                r.extend_from_slice(&ring[..lo]);
                if !self.cycles.contains(&r) {
                    self.cycles.push(r);
                }
                self.emit(&path);
                continue;
            }
            if path.len() >= MAX_CHAIN {
                self.problems.insert(format!(
                    "chain from box {:#x} longer than {MAX_CHAIN}: cut",
                    self.boxes[start].address
                ));
                self.emit(&path);
                continue;
            }
            if self.out.len() >= MAX_CHAINS {
                self.problems.insert(format!(
                    "more than {MAX_CHAINS} chains: the rest not listed"
                ));
                return;
            }
            self.covered[n] = true;
            path.push(n);
            cursor.push(0);
        }
    }

    fn emit(&mut self, path: &[usize]) {
        if self.out.len() < MAX_CHAINS && self.out.last().map(Vec::as_slice) != Some(path) {
            self.out.push(path.to_vec());
        }
    }
}

/// What a field of a Roslyn (or mcs) state machine holds, from its compiler-generated name
/// (Roslyn's `GeneratedNameKind`): `<x>5__2` is the hoisted local `x`, a plain name an
/// argument, `<>u__1` an awaiter, and so on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HoistedKind {
    /// An argument of the async method (Roslyn keeps its name).
    Argument,
    /// A local variable of the method, hoisted because it lives across an await.
    Local,
    /// The state (`<>1__state`; mcs `$PC`).
    State,
    /// The method builder (`<>t__builder`; mcs `$builder`).
    Builder,
    /// A pending awaiter (`<>u__N`; mcs `$awaiterN`).
    Awaiter,
    /// `this` of an instance method (`<>4__this`).
    This,
    /// A temporary the compiler made (`<>7__wrapN`, `<>s__N`, spilled values).
    Temporary,
    /// An async iterator's own state (current value, initial thread, dispose mode, promise).
    Iterator,
    /// A name of no known form.
    Other,
}

/// The name a person reads for a state machine field, and what it holds: `<attempt>5__2` →
/// (`attempt`, Local); `orderId` → (`orderId`, Argument); `<>u__1` → (`awaiter 1`, Awaiter);
/// `<>3__source` (an iterator's copy of its argument) → (`source`, Argument).
pub fn hoisted_field(raw: &str) -> (String, HoistedKind) {
    use HoistedKind::*;
    if let Some(rest) = raw.strip_prefix("<>") {
        // `<>K__name`: K is the kind letter.
        let (kind, tail) = match rest.split_once("__") {
            Some((k, t)) => (k, t),
            None => return (raw.to_owned(), Other),
        };
        return match kind {
            "1" => ("state".into(), State),
            "t" => ("builder".into(), Builder),
            "u" => (format!("awaiter {tail}"), Awaiter),
            "4" => ("this".into(), This),
            "3" => (tail.to_owned(), Argument),
            "7" | "s" | "8" => (
                format!("temporary {}", tail.trim_start_matches("wrap")),
                Temporary,
            ),
            "2" => ("current".into(), Iterator),
            "l" => ("initial thread id".into(), Iterator),
            "w" => ("dispose mode".into(), Iterator),
            "v" => ("promise of value or end".into(), Iterator),
            "x" => ("combined cancellation tokens".into(), Iterator),
            _ => (raw.to_owned(), Other),
        };
    }
    if let Some(rest) = raw.strip_prefix('<') {
        // `<name>5__N` (a hoisted local), `<name>P` (a primary constructor parameter).
        if let Some((name, tail)) = rest.split_once('>') {
            // Roslyn `<x>5__N` / `<x>s__N`; mcs `<x>__N`.
            if !name.is_empty()
                && (tail.starts_with("5__") || tail.starts_with("s__") || tail.starts_with("__"))
            {
                return (name.to_owned(), Local);
            }
        }
        return (raw.to_owned(), Other);
    }
    // mcs: `$PC`, `$builder`, `$awaiterN`, `$this` (its hoisted locals `<x>__N` are above).
    match raw {
        "$PC" => return ("state".into(), State),
        "$builder" => return ("builder".into(), Builder),
        "$this" => return ("this".into(), This),
        _ => {}
    }
    if let Some(n) = raw.strip_prefix("$awaiter") {
        return (format!("awaiter {n}"), Awaiter);
    }
    if raw.starts_with('$') {
        return (raw.to_owned(), Other);
    }
    (raw.to_owned(), Argument)
}

/// The async method a state machine type implements, as its author wrote it:
/// `Ns.Type+<Method>d__3` (Roslyn) or `Ns.Type+<Method>c__async0` (mcs) → `Ns.Type.Method`;
/// an async lambda's `Ns.Type+<>c+<<Main>b__12_0>d` (or `+<>c__DisplayClass12_0+...`) →
/// `Ns.Type.Main (lambda)`; a local function's `Ns.Type+<<Main>g__Fetch|12_1>d` →
/// `Ns.Type.Main.Fetch (local function)`. A type not shaped like a compiler's state machine is
/// returned as it is (the raw name stays in the JSON's `state_machine_type`).
pub fn async_method_name(state_machine_type: &str) -> String {
    // A runtime-async method's own name (.NET 11: no state machine), `Type.Method`: a
    // lambda's `Ns.Type+<>c.<Main>b__80_0`, a local function's `Ns.Type.<Outer>g__Fetch|62_0`.
    if let Some(dot) = state_machine_type.rfind(".<") {
        if let Some(n) =
            compiler_method_name(&state_machine_type[..dot], &state_machine_type[dot + 1..])
        {
            return n;
        }
    }
    // Generic arguments of the state machine (`...d__3`1[[...]]`) are not part of the name.
    let base = state_machine_type
        .split_once("`1[")
        .or_else(|| state_machine_type.split_once('['))
        .map_or(state_machine_type, |(b, _)| b);
    let Some(plus) = base.rfind("+<") else {
        return state_machine_type.to_owned();
    };
    let (owner, rest) = (&base[..plus], &base[plus + 2..]);
    if let Some(inner) = rest.strip_prefix('<') {
        // `<Outer>b__N_M>d` (lambda) or `<Outer>g__Name|N_M>d` (local function)
        let Some((outer, tail)) = inner.split_once('>') else {
            return state_machine_type.to_owned();
        };
        // the closure class a lambda lives in is not the user's
        let owner = match owner.rfind("+<>c") {
            Some(i) if !owner[i + 4..].contains('+') => &owner[..i],
            _ => owner,
        };
        if outer.is_empty() || outer.contains('<') {
            return state_machine_type.to_owned();
        }
        if tail.starts_with("b__") {
            return format!("{owner}.{outer} (lambda)");
        }
        if let Some(name) = tail.strip_prefix("g__").and_then(|t| t.split_once('|')) {
            if !name.0.is_empty() {
                return format!("{owner}.{outer}.{} (local function)", name.0);
            }
        }
        return state_machine_type.to_owned();
    }
    match rest.find('>') {
        Some(end) if end > 0 => format!("{owner}.{}", &rest[..end]),
        _ => state_machine_type.to_owned(),
    }
}

/// A compiler-generated method's name as its author wrote it: `<Main>b__80_0` (a lambda, in
/// `owner` or its closure class `owner+<>c...`) → `Owner.Main (lambda)`; `<Outer>g__Fetch|62_0`
/// (a local function) → `Owner.Outer.Fetch (local function)`; `None` for other names.
fn compiler_method_name(owner: &str, method: &str) -> Option<String> {
    let inner = method.strip_prefix('<')?;
    let (outer, tail) = inner.split_once('>')?;
    if outer.is_empty() || outer.contains('<') {
        return None;
    }
    let owner = match owner.rfind("+<>c") {
        Some(i) if !owner[i + 4..].contains('+') => &owner[..i],
        _ => owner,
    };
    if tail.starts_with("b__") {
        return Some(format!("{owner}.{outer} (lambda)"));
    }
    let name = tail.strip_prefix("g__")?.split_once('|')?.0;
    (!name.is_empty()).then(|| format!("{owner}.{outer}.{name} (local function)"))
}

#[cfg(test)]
mod tests {
    use super::async_method_name;

    #[test]
    fn method_names_from_state_machine_types() {
        assert_eq!(
            async_method_name("Hang.Program+<DelayC>c__async2"),
            "Hang.Program.DelayC"
        );
        assert_eq!(async_method_name("A.B+C+<Run>d__12"), "A.B+C.Run");
        assert_eq!(
            async_method_name("A.B+<Get>d__1`1[[System.Int32, System.Private.CoreLib]]"),
            "A.B.Get"
        );
        assert_eq!(async_method_name("NotAStateMachine"), "NotAStateMachine");
        // Roslyn's names for async lambdas and local functions (asyncreal manifests'
        // compiler_names)
        assert_eq!(
            async_method_name("RealAsync.Program+<>c+<<Main>b__67_0>d"),
            "RealAsync.Program.Main (lambda)"
        );
        assert_eq!(
            async_method_name("A.P+<>c__DisplayClass3_0+<<Run>b__1>d"),
            "A.P.Run (lambda)"
        );
        assert_eq!(
            async_method_name("RealAsync.Program+<<LocalOuter>g__Fetch|56_0>d"),
            "RealAsync.Program.LocalOuter.Fetch (local function)"
        );
        assert_eq!(async_method_name("X+<<>b__1>d"), "X+<<>b__1>d");
        // runtime-async methods (.NET 11) by their own names (asyncreal-net11's manifest
        // compiler_names)
        assert_eq!(
            async_method_name("RealAsync.Program+<>c.<Main>b__80_0"),
            "RealAsync.Program.Main (lambda)"
        );
        assert_eq!(
            async_method_name("RealAsync.Program.<LocalOuter>g__Fetch|62_0"),
            "RealAsync.Program.LocalOuter.Fetch (local function)"
        );
        assert_eq!(
            async_method_name("RealAsync.Program.LocalsOuter"),
            "RealAsync.Program.LocalsOuter"
        );
        assert_eq!(async_method_name("X+<>d"), "X+<>d");
    }
}
