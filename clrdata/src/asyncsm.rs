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

    /// `awaiting` (N >= 0), `running` (-1), `done` (-2) or `unknown`.
    pub fn state_name(&self) -> &'static str {
        match self.state {
            Some(n) if n >= 0 => "awaiting",
            Some(-1) => "running",
            Some(-2) => "done",
            _ => "unknown",
        }
    }

    /// The task's status from its flags.
    pub fn task_status(&self) -> &'static str {
        let f = self.task_flags;
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
}

struct Finder<'a, 'r, M> {
    r: &'a ObjectReader<'r, M>,
    task_mt: Option<u64>,
    is_task: HashMap<u64, bool>,
    is_box: HashMap<u64, bool>,
}

fn field<'f>(fields: &'f [FieldData], name: &str) -> Option<&'f FieldData> {
    fields.iter().rev().find(|f| f.name == name)
}

fn obj_ref(f: Option<&FieldData>) -> u64 {
    match f.map(|f| &f.value) {
        Some(FieldValue::Object { address, .. }) => *address,
        _ => 0,
    }
}

fn int_value(v: &FieldValue) -> Option<i64> {
    match v {
        FieldValue::Int { value } => Some(*value),
        FieldValue::UInt { value } => Some(*value as i64),
        _ => None,
    }
}

impl<'a, 'r, M: Memory> Finder<'a, 'r, M> {
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
        let flags = field(&fields, "m_stateFlags")
            .and_then(|f| int_value(&f.value))
            .unwrap_or(0) as u32;
        let cont = obj_ref(field(&fields, "m_continuationObject"));
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
        let state = sm_fields
            .iter()
            .find(|f| f.name == "<>1__state" || f.name == "$PC")
            .and_then(|f| int_value(&f.value));
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
            let c = obj_ref(field(&fields, "m_continuationObject"));
            self.resolve(c, boxes, depth + 1, seen, out);
            return;
        }
        let name = self.r.type_name(mt);
        if name.starts_with("System.Collections.Generic.List`1") {
            let items = obj_ref(field(&fields, "_items"));
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
            let c = obj_ref(field(&fields, n));
            if c != 0 {
                self.resolve(c, boxes, depth + 1, seen, out);
            }
        }
    }
}

/// Finds every async state machine box of the heap and the chains they form.
pub fn analyze<M: Memory>(rt: &Runtime<M>, names: &TypeNames, heap: &GcHeap) -> AsyncAnalysis {
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
    for o in iter.by_ref() {
        if o.is_free {
            continue;
        }
        if f.is_box_mt(o.mt) {
            candidates.push((o.address, o.mt));
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

/// Chains (indices, innermost first) from the boxes' continuations.
fn chains(boxes: &[AsyncBox], errors: &mut Vec<String>) -> Vec<Vec<usize>> {
    let index: HashMap<u64, usize> = boxes
        .iter()
        .enumerate()
        .map(|(i, b)| (b.address, i))
        .collect();
    let mut awaited_by: BTreeSet<usize> = BTreeSet::new();
    for b in boxes {
        for c in &b.continuations {
            if let Some(&j) = index.get(c) {
                awaited_by.insert(j);
            }
        }
    }
    let mut out = Vec::new();
    let mut covered = vec![false; boxes.len()];
    let walk = |start: usize, covered: &mut Vec<bool>, errors: &mut Vec<String>| {
        let mut chain = vec![start];
        let mut on = HashSet::new();
        on.insert(start);
        covered[start] = true;
        let mut cur = start;
        while let Some(&next) = boxes[cur].continuations.first().and_then(|a| index.get(a)) {
            if !on.insert(next) {
                errors.push(format!(
                    "continuation cycle at box {:#x}",
                    boxes[next].address
                ));
                break;
            }
            if chain.len() >= MAX_CHAIN {
                errors.push(format!(
                    "chain from box {:#x} longer than {MAX_CHAIN}: cut",
                    boxes[start].address
                ));
                break;
            }
            chain.push(next);
            covered[next] = true;
            cur = next;
        }
        chain
    };
    // Innermost boxes: nobody continues into them.
    for i in 0..boxes.len() {
        if !awaited_by.contains(&i) {
            out.push(walk(i, &mut covered, errors));
        }
    }
    // Boxes only on cycles.
    for i in 0..boxes.len() {
        if !covered[i] {
            out.push(walk(i, &mut covered, errors));
        }
    }
    out
}
