//! Reachability over the object graph: which objects the roots keep alive (`dumpheap -live` /
//! `-dead`), and what one object keeps alive (`objsize`).
//!
//! Both are one traversal with a mark bitmap over the heap's ranges (one bit per 8-byte-aligned
//! address of every segment, [`HeapBits`]): no table of objects, no hash set of addresses. The
//! references followed are the GC's: each object's GCDesc series, and a dependent handle's
//! secondary as a reference of its primary (as the GC marks it, and as SOS's `-live` and
//! `objsize` follow them through ClrMD).
//!
//! The live set starts from the precise root set [`FindRoots::roots`] (the one `gcroot` uses):
//! strong handles, the f-reachable queue, thread statics (.NET 9+), and each thread's stack
//! references from its frames' GC info (a frame whose GC info cannot be read is scanned
//! conservatively, and said so in the notes).

use crate::analysis::roots::{FindRoots, HeapBits, RefReader, Root, Roots};
use crate::analysis::totals::{type_totals, TypeTotal};
use crate::discovery::runtime::Runtime;
use crate::error::{ClrError, Result};
use crate::model::heap::{read_method_table, GcHeap};
use crate::model::names::TypeNames;
use dumpreader::{Memory, Target};
use serde::Serialize;
use std::collections::HashMap;

/// The objects the roots keep alive: a mark per 8-byte-aligned address of the heap's ranges.
pub struct LiveSet {
    bits: HeapBits,
    /// The roots taken (those of [`FindRoots::roots`] the caller kept, duplicates included)
    /// and the dependent handles followed: what the set was marked from.
    pub roots: Roots,
    /// Distinct objects the roots hold.
    pub root_objects: u64,
    /// Objects marked (reached), the roots' own included.
    pub marked: u64,
    /// Marked objects whose references could not be read (their MethodTable or memory): what
    /// they reference may be missing from the set.
    pub unreadable: u64,
    /// What could not be read while finding the roots.
    pub notes: Vec<String>,
}

impl LiveSet {
    /// Whether the object at `addr` is reachable from a root.
    pub fn is_live(&self, addr: u64) -> bool {
        self.bits.id(addr).is_some_and(|id| self.bits.get(id))
    }

    /// As [`LiveSet::is_live`], for addresses met in order ([`HeapBits::id_near`]: `hint`
    /// starts at 0 and is kept between calls).
    pub fn is_live_near(&self, addr: u64, hint: &mut usize) -> bool {
        self.bits
            .id_near(addr, hint)
            .is_some_and(|id| self.bits.get(id))
    }

    /// The marks.
    pub(crate) fn bits(&self) -> &HeapBits {
        &self.bits
    }

    /// Bytes of the mark bitmap.
    pub fn bitmap_bytes(&self) -> u64 {
        self.bits.bytes() as u64
    }
}

impl std::fmt::Debug for LiveSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveSet")
            .field("roots", &self.roots)
            .field("marked", &self.marked)
            .field("unreadable", &self.unreadable)
            .finish()
    }
}

/// Dependent handles as edges: primary -> secondaries.
fn dependent_edges(dependent: &[(u64, u64)]) -> HashMap<u64, Vec<u64>> {
    let mut deps: HashMap<u64, Vec<u64>> = HashMap::new();
    for &(p, s) in dependent {
        deps.entry(p).or_default().push(s);
    }
    deps
}

/// Marks everything reachable from `starts` (already marked or not) depth first; calls
/// `seen(addr)` once per object newly marked, starts included. Returns the objects whose
/// references could not be read.
fn mark<M: Memory>(
    rr: &mut RefReader<'_, M>,
    bits: &mut HeapBits,
    deps: &HashMap<u64, Vec<u64>>,
    starts: impl IntoIterator<Item = u64>,
    mut seen: impl FnMut(&mut RefReader<'_, M>, u64),
) -> u64 {
    let mut stack: Vec<u64> = Vec::new();
    for a in starts {
        if let Some(id) = bits.id(a) {
            if bits.set(id) {
                stack.push(a);
            }
        }
    }
    let mut unreadable = 0u64;
    while let Some(a) = stack.pop() {
        seen(rr, a);
        let ok = match read_method_table(rr.reader.rt.memory(), a) {
            Ok(mt) => rr.for_each(a, mt, |_, v| {
                if let Some(id) = bits.id(v) {
                    if bits.set(id) {
                        stack.push(v);
                    }
                }
            }),
            Err(_) => false,
        };
        if !ok {
            unreadable += 1;
        }
        if let Some(d) = deps.get(&a) {
            for &v in d {
                if let Some(id) = bits.id(v) {
                    if bits.set(id) {
                        stack.push(v);
                    }
                }
            }
        }
    }
    unreadable
}

/// The objects the precise root set keeps alive (see the module's documentation).
pub fn live_set<M: Memory + Target>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    names: &TypeNames,
) -> Result<LiveSet> {
    live_set_with(rt, heap, names, |_| true)
}

/// The objects the roots `keep` takes of the precise root set keep alive (a part of the root
/// set, to see what the rest keeps alive alone).
pub fn live_set_with<M: Memory + Target>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    names: &TypeNames,
    keep: impl Fn(&Root) -> bool,
) -> Result<LiveSet> {
    let mut roots = rt.roots(heap, names)?;
    roots.roots.retain(|r| keep(r));
    let deps = dependent_edges(&roots.dependent);
    let mut bits = HeapBits::new(heap);
    let mut rr = RefReader::new(rt, names);
    let mut notes = roots.notes.clone();
    let mut outside = 0usize;
    let mut objs: Vec<u64> = roots.roots.iter().map(|r| r.object).collect();
    objs.sort_unstable();
    objs.dedup();
    for &o in &objs {
        if bits.id(o).is_none() {
            outside += 1;
        }
    }
    if outside > 0 {
        notes.push(format!(
            "{outside} root object(s) outside the heap's walked ranges (not followed)"
        ));
    }
    let mut marked = 0u64;
    let unreadable = mark(&mut rr, &mut bits, &deps, objs.iter().copied(), |_, _| {
        marked += 1
    });
    if unreadable > 0 {
        notes.push(format!(
            "{unreadable} reached object(s) whose references could not be read: what they \
             reference may be counted dead"
        ));
    }
    Ok(LiveSet {
        bits,
        roots,
        root_objects: objs.len() as u64,
        marked,
        unreadable,
        notes,
    })
}

/// What one object keeps alive (`objsize`): every object reachable from it, each once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reached {
    /// The object.
    pub address: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// Its type's name.
    pub name: String,
    /// Objects reachable from it, itself included.
    pub objects: u64,
    /// Their total size.
    pub size: u64,
    /// Per type, largest total first (then count, then name).
    pub types: Vec<TypeTotal>,
    /// Objects reached whose references or size could not be read.
    pub unreadable: u64,
    /// Bytes of the mark bitmap.
    pub bitmap_bytes: u64,
}

/// Every object reachable from the object at `addr` (itself included), each counted once,
/// dependent handles followed; per type (as SOS's `objsize`).
pub fn reachable_from<M: Memory + Target>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    names: &TypeNames,
    addr: u64,
) -> Result<Reached> {
    if !crate::analysis::roots::is_object_start(rt, heap, addr) {
        return Err(ClrError::corrupt(
            "objsize target",
            addr,
            "is not the start of an object of the GC heap",
        ));
    }
    // Dependent handles only: no stack is read.
    let deps = match rt.handle_roots() {
        Ok(r) => dependent_edges(&r.dependent),
        Err(_) => HashMap::new(),
    };
    let mut bits = HeapBits::new(heap);
    let mut rr = RefReader::new(rt, names);
    let mut by: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut bad = 0u64;
    let unreadable = mark(&mut rr, &mut bits, &deps, [addr], |rr, a| {
        match rr.size_of(a) {
            Some((mt, size)) => {
                let e = by.entry(mt).or_default();
                e.0 += 1;
                e.1 += size;
            }
            None => bad += 1,
        }
    });
    let mt = read_method_table(rt.memory(), addr).unwrap_or(0);
    let types = type_totals(rt, names, &by);
    Ok(Reached {
        address: addr,
        mt,
        name: names.name_or_note(rt, mt),
        objects: types.iter().map(|t| t.count).sum(),
        size: types.iter().map(|t| t.total_size).sum(),
        types,
        unreadable: unreadable.max(bad),
        bitmap_bytes: bits.bytes() as u64,
    })
}
