//! Async state machines: what `dumpasync` needs.
//!
//! - A box is found by structure, not by name: a heap object whose type derives from
//!   `System.Threading.Tasks.Task` and has an instance field named `StateMachine`
//!   (`AsyncTaskMethodBuilder`1+AsyncStateMachineBox`1[...]` on .NET Core).
//! - Its state: the state machine's `<>1__state` (Roslyn and mcs; `$PC` for older mcs): -1
//!   running, -2 done, N >= 0 waiting at await N. The state machine is a struct embedded in
//!   the box (release builds) or a class (debug builds).
//! - Its task: `Task.m_stateFlags` (RanToCompletion 0x1000000, Faulted 0x200000, Canceled
//!   0x400000) and `m_continuationObject`: the awaiting box itself, a Task (whose own
//!   continuation is followed), a `List<object>` of several, or a delegate / continuation
//!   object whose `_target`, `m_action`, `m_task`, `_continuation`, `m_stateMachine` lead to a
//!   box (ContinuationWrapper unwrapped on the way).
//! - Chains: the continuation points from the awaited (inner) box to the awaiting (outer) one.
//!   A chain starts at a box no other box continues into (the innermost) and follows the
//!   continuations outward, as SOS prints a logical stack. Every walk is bounded.

use crate::fields::{field, int, obj as ref_field};
use crate::heap::GcHeap;
use crate::names::TypeNames;
use crate::objects::{FieldData, FieldValue, ObjectReader};
use crate::runtime::Runtime;
use dumpreader::Memory;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap, HashSet};

/// Task state flags.
pub mod task_flags {
    /// TASK_STATE_STARTED.
    pub const STARTED: u32 = 0x10000;
    /// TASK_STATE_FAULTED.
    pub const FAULTED: u32 = 0x200000;
    /// TASK_STATE_CANCELED.
    pub const CANCELED: u32 = 0x400000;
    /// TASK_STATE_RAN_TO_COMPLETION.
    pub const RAN_TO_COMPLETION: u32 = 0x1000000;
    /// TASK_STATE_WAITING_FOR_ACTIVATION.
    pub const WAITING_FOR_ACTIVATION: u32 = 0x2000000;
    /// Any of the completed states.
    pub const COMPLETED_MASK: u32 = RAN_TO_COMPLETION | FAULTED | CANCELED;
}

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

/// One async state machine box.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AsyncBox {
    /// The box's address.
    pub address: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// The box's type name.
    pub box_type: String,
    /// The state machine's type name.
    pub state_machine_type: String,
    /// The state machine's MethodTable, when known.
    pub state_machine_mt: Option<u64>,
    /// Where the state machine's fields start (embedded struct or the class instance's
    /// first field).
    pub state_machine_address: Option<u64>,
    /// `<>1__state`, when read.
    pub state: Option<i64>,
    /// `Task.m_stateFlags`.
    pub task_flags: u32,
    /// The raw `m_continuationObject` (0 = none).
    pub continuation_object: u64,
    /// The boxes the continuation leads to (the awaiting methods).
    pub continuations: Vec<u64>,
    /// Non-empty awaiter fields.
    pub awaiters: Vec<Awaiter>,
}

impl AsyncBox {
    /// Whether the task completed (ran to completion, faulted or was canceled).
    pub fn completed(&self) -> bool {
        self.task_flags & task_flags::COMPLETED_MASK != 0
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

    /// The task's status from its flags.
    pub fn task_status(&self) -> &'static str {
        task_status_of(self.task_flags)
    }
}

/// A task's status from its `m_stateFlags`.
pub fn task_status_of(f: u32) -> &'static str {
    {
        if f & task_flags::RAN_TO_COMPLETION != 0 {
            "ran_to_completion"
        } else if f & task_flags::FAULTED != 0 {
            "faulted"
        } else if f & task_flags::CANCELED != 0 {
            "canceled"
        } else if f & task_flags::WAITING_FOR_ACTIVATION != 0 {
            "waiting_for_activation"
        } else if f & task_flags::STARTED != 0 {
            "running"
        } else {
            "created"
        }
    }
}

/// Every box and the chains they form.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AsyncAnalysis {
    /// The boxes, in heap order.
    pub boxes: Vec<AsyncBox>,
    /// Chains as indices into `boxes`, innermost first.
    pub chains: Vec<Vec<usize>>,
    /// Problems met (objects that could not be read, cycles, walk errors).
    pub errors: Vec<String>,
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
    is_box: HashMap<u64, bool>,
}

/// What an object's type tells `analyze`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Box,
    Task,
    Tcs,
    Semaphore,
    WaitEvent,
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
            return Kind::Task;
        }
        let name = self.r.type_name(mt);
        if name.starts_with("System.Threading.Tasks.TaskCompletionSource") {
            Kind::Tcs
        } else if name == "System.Threading.SemaphoreSlim" {
            Kind::Semaphore
        } else if name == "System.Threading.Tasks.Task+SetOnInvokeMres" {
            Kind::WaitEvent
        } else {
            Kind::Other
        }
    }

    fn semaphore(&mut self, addr: u64, mt: u64) -> Result<Semaphore, String> {
        let fs = self
            .r
            .fields(mt, addr + 8, false)
            .map_err(|e| format!("SemaphoreSlim {addr:#x}: fields not readable: {e}"))?;
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
        if let Some(&v) = self.is_box.get(&mt) {
            return v;
        }
        let v = self.derives_from_task(mt)
            && self.r.fields(mt, 0, false).is_ok_and(|fs| {
                // Only names matter here (values are read at a dummy address).
                fs.iter().any(|f| f.name == "StateMachine")
            });
        self.is_box.insert(mt, v);
        v
    }

    fn read_box(&mut self, addr: u64, mt: u64) -> Result<AsyncBox, String> {
        let fields = self
            .r
            .fields(mt, addr + 8, false)
            .map_err(|e| format!("box {addr:#x}: fields not readable: {e}"))?;
        let flags = int(&fields, "m_stateFlags").unwrap_or(0) as u32;
        let cont = ref_field(&fields, "m_continuationObject");
        let info = self.r.mt(mt);
        let mut sm_type = None;
        let mut sm_mt = None;
        let mut sm_addr = None;
        let mut sm_fields = Vec::new();
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
        let state = int(&sm_fields, "<>1__state").or_else(|| int(&sm_fields, "$PC"));
        let mut awaiters = Vec::new();
        for f in &sm_fields {
            let is_awaiter = f.name.starts_with("<>u__") || f.name.starts_with("$awaiter");
            if !is_awaiter {
                continue;
            }
            let object = match &f.value {
                FieldValue::Object { address, .. } => Some(*address).filter(|a| *a != 0),
                FieldValue::ValueType {
                    address,
                    mt: Some(m),
                } => self.r.fields(*m, *address, false).ok().and_then(|fs| {
                    fs.iter().find_map(|g| match g.value {
                        FieldValue::Object { address, .. } if address != 0 => Some(address),
                        _ => None,
                    })
                }),
                // An awaiter of a generic type whose MethodTable was not resolved: its first
                // field is the awaited task (TaskAwaiter<T>.m_task) when it reads as an object.
                FieldValue::ValueType { address, mt: None } => self
                    .r
                    .rt
                    .memory()
                    .read_u64(*address)
                    .ok()
                    .filter(|&o| o != 0 && self.r.object_mt(o).is_ok()),
                _ => None,
            };
            if let Some(o) = object {
                let object_type = self.r.object_mt(o).ok().map(|(m, _)| self.r.type_name(m));
                awaiters.push(Awaiter {
                    field: f.name.clone(),
                    type_name: f.type_name.clone(),
                    object: Some(o),
                    object_type,
                });
            }
        }
        Ok(AsyncBox {
            address: addr,
            mt,
            box_type: self.r.type_name(mt),
            state_machine_type: sm_type.unwrap_or_else(|| "<unknown state machine>".into()),
            state_machine_mt: sm_mt,
            state_machine_address: sm_addr,
            state,
            task_flags: flags,
            continuation_object: cont,
            continuations: Vec::new(),
            awaiters,
        })
    }

    /// The boxes that `obj` (a continuation object) leads to.
    fn resolve(
        &mut self,
        obj: u64,
        boxes: &HashSet<u64>,
        depth: usize,
        seen: &mut HashSet<u64>,
        out: &mut Vec<u64>,
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
        let Ok((mt, info)) = self.r.object_mt(obj) else {
            return;
        };
        // An object[] (List<object>._items).
        if info.component_size != 0 {
            if let Ok(Some(a)) = self.r.array(obj, &info) {
                if a.component_size == 8 && a.element_type != crate::objects::elem::VALUETYPE {
                    for i in 0..a.length.min(MAX_LIST) {
                        if let Ok(e) = self.r.rt.memory().read_u64(a.data + 8 * i) {
                            self.resolve(e, boxes, depth + 1, seen, out);
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
            self.resolve(c, boxes, depth + 1, seen, out);
            return;
        }
        let name = self.r.type_name(mt);
        if name.starts_with("System.Collections.Generic.List`1") {
            let items = ref_field(&fields, "_items");
            self.resolve(items, boxes, depth + 1, seen, out);
            return;
        }
        for n in [
            "_target",
            "m_action",
            "m_task",
            "_continuation",
            "m_stateMachine",
            "StateMachine",
        ] {
            let c = ref_field(&fields, n);
            if c != 0 {
                self.resolve(c, boxes, depth + 1, seen, out);
            }
        }
    }
}

/// Finds every async state machine box of the heap and the chains they form.
pub fn analyze<M: Memory>(rt: &Runtime<M>, names: &TypeNames, heap: &GcHeap) -> AsyncAnalysis {
    if let Err(e) = rt.require(crate::layout::Capability::Fields) {
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
    };
    let mut out = AsyncAnalysis::default();
    let mut iter = heap.objects(rt);
    let mut candidates = Vec::new();
    let mut kinds: HashMap<u64, Kind> = HashMap::new();
    let mut tcs = Vec::new();
    let mut sems = Vec::new();
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
            Kind::Tcs => tcs.push((o.address, o.mt)),
            Kind::Semaphore => sems.push((o.address, o.mt)),
            Kind::WaitEvent => {
                out.facts.wait_events.insert(o.address);
            }
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
            Err(e) => out.errors.push(e),
        }
    }
    for e in iter.errors() {
        out.errors.push(format!("heap walk: {e:?}"));
    }
    for (a, mt) in candidates {
        match f.read_box(a, mt) {
            Ok(b) => out.boxes.push(b),
            Err(e) => out.errors.push(e),
        }
    }
    let set: HashSet<u64> = out.boxes.iter().map(|b| b.address).collect();
    for i in 0..out.boxes.len() {
        let mut seen = HashSet::new();
        seen.insert(out.boxes[i].address);
        let mut next = Vec::new();
        let c = out.boxes[i].continuation_object;
        f.resolve(c, &set, 0, &mut seen, &mut next);
        out.boxes[i].continuations = next;
    }
    out.chains = chains(&out.boxes, &mut out.errors);
    out
}

/// Bound on the number of chains (paths) enumerated: a box awaited by several others starts
/// one chain per awaiting path, which could multiply on a crafted heap.
pub const MAX_CHAINS: usize = 10_000;

/// Chains (indices, innermost first) from the boxes' continuations: every path from a box
/// nobody continues into (the innermost) to a box that continues nowhere (a root). A box
/// awaited by two others (a `List<object>` continuation) therefore starts two chains.
fn chains(boxes: &[AsyncBox], errors: &mut Vec<String>) -> Vec<Vec<usize>> {
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
    w.out
}

struct PathWalk<'a> {
    boxes: &'a [AsyncBox],
    next: &'a [Vec<usize>],
    out: Vec<Vec<usize>>,
    covered: Vec<bool>,
    problems: BTreeSet<String>,
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
            if path.contains(&n) {
                self.problems.insert(format!(
                    "continuation cycle at box {:#x}",
                    self.boxes[n].address
                ));
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

/// The async method a state machine type implements: `Ns.Type+<Method>d__3` (Roslyn) or
/// `Ns.Type+<Method>c__async0` (mcs) → `Ns.Type.Method`; a type not shaped like a compiler's
/// state machine is returned as it is.
pub fn async_method_name(state_machine_type: &str) -> String {
    // Generic arguments of the state machine (`...d__3`1[[...]]`) are not part of the name.
    let base = state_machine_type
        .split_once("`1[")
        .or_else(|| state_machine_type.split_once('['))
        .map_or(state_machine_type, |(b, _)| b);
    let Some(plus) = base.rfind("+<") else {
        return state_machine_type.to_owned();
    };
    let (owner, rest) = (&base[..plus], &base[plus + 2..]);
    match rest.find('>') {
        Some(end) if end > 0 => format!("{owner}.{}", &rest[..end]),
        _ => state_machine_type.to_owned(),
    }
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
        assert_eq!(async_method_name("X+<>d"), "X+<>d");
    }
}
