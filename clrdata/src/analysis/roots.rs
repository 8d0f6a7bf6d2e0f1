//! GC roots and `gcroot`: which roots keep an object alive, and the shortest path from each.
//!
//! Roots, as the GC itself uses them:
//! - handles holding an object that keep it alive: strong, pinned, async pinned, sized ref,
//!   ref counted, and variable handles currently strong or pinned (see [`GcHandle::is_strong`]);
//!   a dependent handle is no root: it adds an edge from its primary to its secondary;
//! - the f-reachable queue: objects found dead with a finalizer still to run;
//! - thread stacks, scanned **conservatively**: every aligned word from the thread's stack
//!   pointer to the end of its stack memory, and its registers, that points at an object of the
//!   heap, or into one (an interior pointer, as the JIT reports for byrefs) is taken as a root.
//!   The GC knows exactly which slots are live; this scan does not, so a stale slot of a
//!   returned frame can show up as a root (never the reverse: a live slot is always seen).
//!   Statics are no separate kind: .NET 8 keeps them in `object[]`s held by pinned handles.
//!
//! The search (one pass over the heap, then work proportional to the target's ancestors):
//! 1. an [`ObjectIndex`]: a bitmap of object starts per segment (one bit per 8 bytes of heap)
//!    with per-word ranks, numbering the objects 0..n;
//! 2. the reverse reference graph over those numbers in compressed form (per object, the
//!    objects referring to it: 4 bytes per reference), built by two parallel passes over the
//!    heap (count, then fill), references read from each type's GCDesc, plus the dependent
//!    handles' primary→secondary edges;
//! 3. a breadth-first search backwards from the target gives every object's distance to it;
//! 4. each root whose object has a distance gets its path by walking forward from it, each step
//!    to a referenced object one step closer: a shortest path from that root.

use crate::data::handles::HandleKind;
use crate::data::handles::ReadHandles;
use crate::data::threads::ReadThreads;
use crate::discovery::runtime::Runtime;
use crate::error::{ClrError, Result};
use crate::model::dso::{for_each_word, MAX_STACK_BYTES};
use crate::model::heap::{GcHeap, WalkError};
use crate::model::names::TypeNames;
use crate::model::objects::{GcLayout, ObjectReader};
use dumpreader::{Memory, Target};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};

/// Largest object whose references are read (the heap walk checked sizes against segments;
/// this bounds what a corrupt count could make the reader allocate).
const MAX_OBJECT_BYTES: u64 = 1 << 32;
/// Read window for reference enumeration.
const WINDOW: usize = 1 << 20;

// ------------------------------------------------------------------------------ object index

struct SegBits {
    start: u64,
    end: u64,
    base: u64,
    bits: Vec<u64>,
    ranks: Vec<u32>,
}

/// The heap's object starts, numbered: a bitmap per segment (a bit per 8 bytes) with ranks.
pub struct ObjectIndex {
    segs: Vec<SegBits>,
    total: u64,
    /// What the heap walk met on the way (bad objects, absent memory).
    pub errors: Vec<WalkError>,
}

impl ObjectIndex {
    /// Walks the heap (segments in parallel) and indexes every non-free object.
    pub fn build<M: Memory>(rt: &Runtime<M>, heap: &GcHeap) -> Result<ObjectIndex> {
        let per_seg = heap.par_visit(
            rt,
            |s| {
                let words = if s.walk_end > s.mem {
                    ((s.walk_end - s.mem) / 8).div_ceil(64) as usize
                } else {
                    0
                };
                SegBits {
                    start: s.mem,
                    end: s.walk_end.max(s.mem),
                    base: 0,
                    bits: vec![0u64; words],
                    ranks: Vec::new(),
                }
            },
            |acc, o| {
                if !o.is_free && o.address >= acc.start && o.address < acc.end {
                    let off = (o.address - acc.start) / 8;
                    acc.bits[(off / 64) as usize] |= 1 << (off % 64);
                }
            },
        );
        let mut errors = Vec::new();
        let mut segs: Vec<SegBits> = Vec::with_capacity(per_seg.len());
        for (s, e) in per_seg {
            errors.extend(e);
            segs.push(s);
        }
        segs.sort_by_key(|s| s.start);
        let mut total = 0u64;
        for s in &mut segs {
            s.base = total;
            let mut r = 0u32;
            s.ranks = s
                .bits
                .iter()
                .map(|w| {
                    let v = r;
                    r += w.count_ones();
                    v
                })
                .collect();
            total += r as u64;
        }
        if total > u32::MAX as u64 {
            return Err(ClrError::corrupt(
                "GC heap",
                0,
                format!("{total} objects: more than this index numbers (2^32)"),
            ));
        }
        Ok(ObjectIndex {
            segs,
            total,
            errors,
        })
    }

    /// Number of objects indexed.
    pub fn len(&self) -> u64 {
        self.total
    }

    /// Whether no object was indexed.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    fn seg_of(&self, addr: u64) -> Option<&SegBits> {
        let i = self.segs.partition_point(|s| s.start <= addr);
        let s = self.segs.get(i.checked_sub(1)?)?;
        (addr < s.end).then_some(s)
    }

    /// [`ObjectIndex::index_of`] trying segment `*hint` first (and remembering the hit):
    /// references mostly stay near each other.
    #[inline]
    fn index_of_hinted(&self, addr: u64, hint: &mut usize) -> Option<u32> {
        if addr & 7 != 0 {
            return None;
        }
        let s = match self.segs.get(*hint) {
            Some(s) if s.start <= addr && addr < s.end => s,
            _ => {
                let i = self
                    .segs
                    .partition_point(|s| s.start <= addr)
                    .checked_sub(1)?;
                let s = &self.segs[i];
                if addr >= s.end {
                    return None;
                }
                *hint = i;
                s
            }
        };
        let off = (addr - s.start) / 8;
        let (w, b) = ((off / 64) as usize, off % 64);
        let word = *s.bits.get(w)?;
        if word >> b & 1 == 0 {
            return None;
        }
        let below = (word & ((1u64 << b) - 1)).count_ones();
        Some((s.base + s.ranks[w] as u64 + below as u64) as u32)
    }

    /// Whether `addr` lies in the walked part of a heap segment.
    pub fn in_heap(&self, addr: u64) -> bool {
        self.seg_of(addr).is_some()
    }

    /// The number of the object starting at `addr`, if one does.
    #[inline]
    pub fn index_of(&self, addr: u64) -> Option<u32> {
        if addr & 7 != 0 {
            return None;
        }
        let s = self.seg_of(addr)?;
        let off = (addr - s.start) / 8;
        let (w, b) = ((off / 64) as usize, off % 64);
        let word = *s.bits.get(w)?;
        if word >> b & 1 == 0 {
            return None;
        }
        let below = (word & ((1u64 << b) - 1)).count_ones();
        Some((s.base + s.ranks[w] as u64 + below as u64) as u32)
    }

    /// The address of object number `idx`.
    pub fn address_of(&self, idx: u32) -> Option<u64> {
        let idx = idx as u64;
        if idx >= self.total {
            return None;
        }
        let si = self
            .segs
            .partition_point(|s| s.base <= idx)
            .checked_sub(1)?;
        let s = &self.segs[si];
        let k = (idx - s.base) as u32;
        let w = s.ranks.partition_point(|&r| r <= k).checked_sub(1)?;
        let mut word = s.bits[w];
        for _ in 0..(k - s.ranks[w]) {
            word &= word - 1;
        }
        if word == 0 {
            return None;
        }
        Some(s.start + 8 * (w as u64 * 64 + word.trailing_zeros() as u64))
    }

    /// The start of the closest object at or below `addr` in its segment.
    fn object_at_or_below(&self, addr: u64) -> Option<u64> {
        let s = self.seg_of(addr)?;
        let off = (addr - s.start) / 8;
        let (mut w, b) = ((off / 64) as usize, off % 64);
        let mut word = s.bits[w] & (u64::MAX >> (63 - b));
        loop {
            if word != 0 {
                let bit = 63 - word.leading_zeros() as u64;
                return Some(s.start + 8 * (w as u64 * 64 + bit));
            }
            if w == 0 {
                return None;
            }
            w -= 1;
            word = s.bits[w];
        }
    }
}

// ------------------------------------------------------------------------------- references

#[derive(Clone)]
struct MtFacts {
    base: u32,
    comp: u32,
    layout: Option<Rc<GcLayout>>,
}

/// Reads objects' references, with per-MethodTable facts cached and a read window.
struct RefReader<'r, M> {
    reader: ObjectReader<'r, M>,
    facts: HashMap<u64, Option<MtFacts>>,
    last: Option<(u64, Option<MtFacts>)>,
    win: Vec<u8>,
    win_base: u64,
    win_len: usize,
    big: Vec<u8>,
}

impl<'r, M: Memory> RefReader<'r, M> {
    fn new(rt: &'r Runtime<M>, names: &'r TypeNames) -> Self {
        RefReader {
            reader: ObjectReader::new(rt, names),
            facts: HashMap::new(),
            last: None,
            win: Vec::new(),
            win_base: 0,
            win_len: 0,
            big: Vec::new(),
        }
    }

    fn facts(&mut self, mt: u64) -> Option<MtFacts> {
        if let Some(f) = self.facts.get(&mt) {
            return f.clone();
        }
        let f = self.reader.mt(mt).map(|info| MtFacts {
            base: info.base_size,
            comp: info.component_size,
            layout: match self.reader.gc_layout(mt) {
                Ok(GcLayout::None) | Err(_) => None,
                Ok(l) => Some(Rc::new(l)),
            },
        });
        self.facts.insert(mt, f.clone());
        f
    }

    /// Calls `f(slot address, value)` for every non-null reference of the object at `addr`
    /// (MethodTable `mt`). Returns false when the object could not be read.
    fn for_each(&mut self, addr: u64, mt: u64, mut f: impl FnMut(u64, u64)) -> bool {
        if self.last.as_ref().is_none_or(|l| l.0 != mt) {
            let facts = self.facts(mt);
            self.last = Some((mt, facts));
        }
        let Some((_, Some(facts))) = &self.last else {
            return false;
        };
        let Some(layout) = facts.layout.clone() else {
            return true;
        };
        let (base, comp) = (facts.base, facts.comp);
        let mem = self.reader.rt.memory();
        // The component count, then the object's bytes.
        let count = if comp != 0 {
            match mem.read_u32(addr + 8) {
                Ok(c) => c as u64,
                Err(_) => return false,
            }
        } else {
            0
        };
        let raw = base as u64 + count * comp as u64;
        let size = (raw + 7) & !7;
        if size > MAX_OBJECT_BYTES {
            return false;
        }
        let bytes: &[u8] =
            if addr >= self.win_base && addr + size <= self.win_base + self.win_len as u64 {
                let o = (addr - self.win_base) as usize;
                &self.win[o..o + size as usize]
            } else if size as usize <= WINDOW {
                if self.win.is_empty() {
                    self.win = vec![0u8; WINDOW];
                }
                let got = mem.read(addr, &mut self.win);
                self.win_base = addr;
                self.win_len = got;
                if (got as u64) < size {
                    return false;
                }
                &self.win[..size as usize]
            } else {
                self.big.resize(size as usize, 0);
                if mem.read(addr, &mut self.big) < size as usize {
                    return false;
                }
                &self.big
            };
        let at = |off: u64| -> u64 {
            let o = off as usize;
            match bytes.get(o..o + 8) {
                Some(b) => u64::from_le_bytes(b.try_into().unwrap_or([0; 8])),
                None => 0,
            }
        };
        match &*layout {
            GcLayout::None => {}
            GcLayout::Series(series) => {
                for &(off, sz) in series.iter().rev() {
                    let stop = (off as i64 + sz + raw as i64).max(0) as u64;
                    let mut p = off;
                    while p < stop && p + 8 <= size {
                        let v = at(p);
                        if v != 0 {
                            f(addr + p, v);
                        }
                        p += 8;
                    }
                }
            }
            GcLayout::Repeating { start, items } => {
                let stop = raw.saturating_sub(8);
                let mut p = *start;
                'outer: while p < stop {
                    let before = p;
                    for &(nptrs, skip) in items {
                        let end = p + 8 * nptrs.max(1) as u64;
                        while p < end {
                            if p + 8 > size {
                                break 'outer;
                            }
                            let v = at(p);
                            if v != 0 {
                                f(addr + p, v);
                            }
                            p += 8;
                        }
                        p += skip as u64;
                    }
                    if p == before {
                        break;
                    }
                }
            }
        }
        true
    }

    fn size_of(&mut self, addr: u64) -> Option<(u64, u64)> {
        let mem = self.reader.rt.memory();
        let mt = crate::model::heap::read_method_table(mem, addr).ok()?;
        let f = self.facts(mt)?;
        let count = if f.comp != 0 {
            mem.read_u32(addr + 8).ok()? as u64
        } else {
            0
        };
        Some((mt, (f.base as u64 + count * f.comp as u64 + 7) & !7))
    }
}

// ---------------------------------------------------------------------------- reverse graph

/// The reverse reference graph: for each object number, the numbers of the objects (and
/// dependent-handle primaries) referring to it.
pub struct ReverseGraph {
    /// After the fill, `ends[i]` is the end of object `i`'s run in `edges` (its start is
    /// `ends[i-1]`, 0 for the first).
    ends: Vec<u32>,
    edges: Vec<u32>,
    /// Objects whose references could not be read.
    pub unreadable: u64,
}

impl ReverseGraph {
    /// Builds the graph in two parallel passes over the heap.
    pub fn build<M: Memory>(
        rt: &Runtime<M>,
        heap: &GcHeap,
        index: &ObjectIndex,
        names: &TypeNames,
        dependent: &[(u64, u64)],
    ) -> Result<ReverseGraph> {
        let n = index.len() as usize;
        let counts: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
        let dep: Vec<(u32, u32)> = dependent
            .iter()
            .filter_map(|&(p, s)| Some((index.index_of(p)?, index.index_of(s)?)))
            .collect();
        let unreadable = AtomicU32::new(0);
        let pass = |fill: Option<&[AtomicU32]>, out: Option<&[AtomicU32]>| {
            (0..heap.segments.len()).into_par_iter().for_each(|si| {
                let mut rr = RefReader::new(rt, names);
                let mut bad = 0u32;
                let (mut src_hint, mut dst_hint) = (0usize, 0usize);
                heap.visit_segment(rt, si, |o| {
                    if o.is_free {
                        return;
                    }
                    let Some(src) = index.index_of_hinted(o.address, &mut src_hint) else {
                        return;
                    };
                    let ok = rr.for_each(o.address, o.mt, |_, v| {
                        if let Some(dst) = index.index_of_hinted(v, &mut dst_hint) {
                            match (fill, out) {
                                (Some(pos), Some(edges)) => {
                                    let at = pos[dst as usize].fetch_add(1, Ordering::Relaxed);
                                    edges[at as usize].store(src, Ordering::Relaxed);
                                }
                                _ => {
                                    counts[dst as usize].fetch_add(1, Ordering::Relaxed);
                                }
                            }
                        }
                    });
                    if !ok {
                        bad += 1;
                    }
                });
                unreadable.fetch_add(bad, Ordering::Relaxed);
            });
        };
        pass(None, None);
        for &(_, s) in &dep {
            counts[s as usize].fetch_add(1, Ordering::Relaxed);
        }
        // Exclusive prefix sums: counts becomes each run's start (the fill cursor).
        let mut total = 0u64;
        for c in &counts {
            let v = c.load(Ordering::Relaxed) as u64;
            c.store(total as u32, Ordering::Relaxed);
            total += v;
            if total > u32::MAX as u64 {
                return Err(ClrError::corrupt(
                    "GC heap",
                    0,
                    "more than 2^32 references: beyond this graph's numbering",
                ));
            }
        }
        let edges: Vec<AtomicU32> = (0..total).map(|_| AtomicU32::new(0)).collect();
        unreadable.store(0, Ordering::Relaxed);
        pass(Some(&counts), Some(&edges));
        for &(p, s) in &dep {
            let at = counts[s as usize].fetch_add(1, Ordering::Relaxed);
            edges[at as usize].store(p, Ordering::Relaxed);
        }
        Ok(ReverseGraph {
            ends: counts.into_iter().map(AtomicU32::into_inner).collect(),
            edges: edges.into_iter().map(AtomicU32::into_inner).collect(),
            unreadable: unreadable.load(Ordering::Relaxed) as u64,
        })
    }

    /// The objects referring to object `i`.
    pub fn referrers(&self, i: u32) -> &[u32] {
        let i = i as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        let end = self.ends.get(i).copied().unwrap_or(0) as usize;
        self.edges.get(start..end).unwrap_or(&[])
    }

    /// Number of references (edges).
    pub fn edge_count(&self) -> usize {
        self.edges.len()
    }
}

// ------------------------------------------------------------------------------------ roots

/// Where a root is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RootSource {
    /// A GC handle.
    Handle {
        /// The handle's address.
        handle: u64,
        /// Its kind.
        handle_kind: HandleKind,
    },
    /// The f-reachable queue (ready for finalization).
    FinalizerQueue {
        /// The queue slot's address.
        slot: u64,
    },
    /// A thread's stack slot or register (conservative scan).
    Stack {
        /// OS thread id.
        os_id: u64,
        /// Managed thread id.
        managed_id: u32,
        /// The stack slot's address (None for a register).
        slot: Option<u64>,
        /// The register's name (None for a stack slot).
        register: Option<&'static str>,
        /// Whether the value points into the object rather than at its start.
        interior: bool,
        /// The value found (the object's address, or the interior pointer).
        value: u64,
    },
}

/// One root: where it is and the object it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Root {
    /// Where.
    pub source: RootSource,
    /// The object it keeps alive.
    pub object: u64,
}

/// Every root of the process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Roots {
    /// Handles, the f-reachable queue, then stacks thread by thread.
    pub roots: Vec<Root>,
    /// Dependent handles: `(primary, secondary)` (edges, not roots).
    pub dependent: Vec<(u64, u64)>,
    /// Threads whose stacks were scanned: `(os id, managed id, from, to)`.
    pub stacks_scanned: Vec<(u64, u32, u64, u64)>,
    /// What could not be read.
    pub notes: Vec<String>,
}

const REGISTERS: [&str; 15] = [
    "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8", "r9", "r10", "r11", "r12", "r13", "r14",
    "r15",
];

/// GC roots: what keeps objects alive.
pub trait FindRoots {
    /// Every root: strong handles, the f-reachable queue and the conservative stack scan of
    /// every managed thread that has an OS thread in the dump.
    fn roots(&self, index: &ObjectIndex, names: &TypeNames) -> Result<Roots>;
}

impl<M: Memory + Target> FindRoots for Runtime<M> {
    fn roots(&self, index: &ObjectIndex, names: &TypeNames) -> Result<Roots> {
        self.require(crate::discovery::layout::Capability::GcRoots)?;
        let mut res = Roots {
            roots: Vec::new(),
            dependent: Vec::new(),
            stacks_scanned: Vec::new(),
            notes: Vec::new(),
        };
        match self.gc_handles() {
            Ok(h) => {
                res.notes
                    .extend(h.errors.iter().map(|e| format!("handle table: {e}")));
                for x in &h.handles {
                    if x.object == 0 {
                        continue;
                    }
                    if x.kind == HandleKind::Dependent {
                        if x.secondary != 0 {
                            res.dependent.push((x.object, x.secondary));
                        }
                    } else if x.is_strong() {
                        res.roots.push(Root {
                            source: RootSource::Handle {
                                handle: x.address,
                                handle_kind: x.kind,
                            },
                            object: x.object,
                        });
                    }
                }
            }
            Err(e) => res.notes.push(format!("handle table not read: {e}")),
        }
        match self.finalize_queue() {
            Ok(q) => {
                res.notes
                    .extend(q.errors.iter().map(|e| format!("finalization queue: {e}")));
                for x in q
                    .entries
                    .iter()
                    .filter(|x| x.segment.is_ready() && x.object != 0)
                {
                    res.roots.push(Root {
                        source: RootSource::FinalizerQueue { slot: x.slot },
                        object: x.object,
                    });
                }
            }
            Err(e) => res.notes.push(format!("finalization queue not read: {e}")),
        }
        let threads = match self.threads() {
            Ok(t) => t,
            Err(e) => {
                res.notes
                    .push(format!("threads not read, no stack roots: {e}"));
                Vec::new()
            }
        };
        let mut rr = RefReader::new(self, names);
        for t in threads.iter().filter(|t| t.os_id != 0) {
            let Some(ot) = self
                .memory()
                .threads()
                .iter()
                .find(|x| x.id as u64 == t.os_id)
            else {
                continue;
            };
            let c = &ot.context;
            let regs = [
                c.rax, c.rbx, c.rcx, c.rdx, c.rsi, c.rdi, c.rbp, c.r8, c.r9, c.r10, c.r11, c.r12,
                c.r13, c.r14, c.r15,
            ];
            let mut consider = |slot: Option<u64>, register: Option<&'static str>, v: u64| {
                if let Some((obj, interior)) = resolve(index, &mut rr, v) {
                    res.roots.push(Root {
                        source: RootSource::Stack {
                            os_id: t.os_id,
                            managed_id: t.managed_id,
                            slot,
                            register,
                            interior,
                            value: v,
                        },
                        object: obj,
                    });
                }
            };
            for (name, v) in REGISTERS.iter().zip(regs) {
                consider(None, Some(name), v);
            }
            let from = c.rsp & !7;
            let Some((_, end)) = ot.stack.or_else(|| {
                self.memory()
                    .memory_ranges()
                    .into_iter()
                    .find(|r| r.address <= from && from < r.address + r.size)
                    .map(|r| (r.address, r.address + r.size))
            }) else {
                res.notes.push(format!(
                    "thread {:#x}: no stack memory around rsp {from:#x}",
                    t.os_id
                ));
                continue;
            };
            let to = end.min(from + MAX_STACK_BYTES);
            if to <= from {
                continue;
            }
            let stopped = for_each_word(self.memory(), from, to, |slot, v| {
                consider(Some(slot), None, v)
            });
            if stopped < to {
                res.notes.push(format!(
                    "thread {:#x}: stack {from:#x}..{to:#x} readable only to {stopped:#x}",
                    t.os_id
                ));
            }
            res.stacks_scanned.push((t.os_id, t.managed_id, from, to));
        }
        Ok(res)
    }
}

/// The object a stack value refers to: `(object, interior)`.
fn resolve<M: Memory>(
    index: &ObjectIndex,
    rr: &mut RefReader<'_, M>,
    v: u64,
) -> Option<(u64, bool)> {
    if v == 0 || !index.in_heap(v) {
        return None;
    }
    if index.index_of(v).is_some() {
        return Some((v, false));
    }
    let start = index.object_at_or_below(v)?;
    let (_, size) = rr.size_of(start)?;
    (v > start && v < start + size).then_some((start, true))
}

// ----------------------------------------------------------------------------------- gcroot

/// One root that keeps the target alive, with the shortest path from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RootPath {
    /// The root.
    pub root: Root,
    /// The objects from the root's object to the target, both included.
    pub path: Vec<u64>,
    /// For each step `path[i] -> path[i+1]`, the slot of `path[i]` holding the reference (None
    /// for a dependent handle's edge).
    pub slots: Vec<Option<u64>>,
}

/// What `gcroot` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GcRootResult {
    /// The object asked about.
    pub target: u64,
    /// Every root keeping it alive, in root order (handles, finalizer queue, stacks).
    pub paths: Vec<RootPath>,
    /// Roots considered.
    pub roots_considered: usize,
    /// Objects indexed and references in the graph.
    pub objects: u64,
    /// References in the graph.
    pub references: u64,
    /// Objects that can reach the target (its ancestors, itself included).
    pub ancestors: u64,
    /// Threads whose stacks were scanned.
    pub stacks_scanned: Vec<(u64, u32, u64, u64)>,
    /// What could not be read (the search used everything else).
    pub notes: Vec<String>,
}

/// Finds every root keeping `target` alive and the shortest path from each.
pub fn gcroot<M: Memory + Target>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    names: &TypeNames,
    target: u64,
) -> Result<GcRootResult> {
    let index = ObjectIndex::build(rt, heap)?;
    let Some(t) = index.index_of(target) else {
        return Err(ClrError::corrupt(
            "gcroot target",
            target,
            "is not the start of an object of the GC heap",
        ));
    };
    let roots = rt.roots(&index, names)?;
    let graph = ReverseGraph::build(rt, heap, &index, names, &roots.dependent)?;
    let mut notes = roots.notes.clone();
    if !index.errors.is_empty() {
        notes.push(format!(
            "the heap walk met {} bad place(s); objects there are not in the search",
            index.errors.len()
        ));
    }
    if graph.unreadable > 0 {
        notes.push(format!(
            "{} object(s) whose references could not be read",
            graph.unreadable
        ));
    }
    // Distances to the target, backwards.
    let mut dist: HashMap<u32, u32> = HashMap::new();
    dist.insert(t, 0);
    let mut queue = VecDeque::from([t]);
    while let Some(x) = queue.pop_front() {
        let d = dist[&x];
        for &p in graph.referrers(x) {
            dist.entry(p).or_insert_with(|| {
                queue.push_back(p);
                d + 1
            });
        }
    }
    // Forward from each root, one step closer each time.
    let mut deps: HashMap<u32, Vec<u32>> = HashMap::new();
    for &(p, s) in &roots.dependent {
        if let (Some(p), Some(s)) = (index.index_of(p), index.index_of(s)) {
            deps.entry(p).or_default().push(s);
        }
    }
    let mut rr = RefReader::new(rt, names);
    let mut paths = Vec::new();
    let mut memo: HashMap<u32, Option<Path>> = HashMap::new();
    for root in &roots.roots {
        let Some(ri) = index.index_of(root.object) else {
            continue;
        };
        if !dist.contains_key(&ri) {
            continue;
        }
        let found = memo
            .entry(ri)
            .or_insert_with(|| descend(&index, &mut rr, &dist, &deps, ri, t))
            .clone();
        match found {
            Some((path, slots)) => paths.push(RootPath {
                root: root.clone(),
                path,
                slots,
            }),
            None => notes.push(format!(
                "root object {:#x}: lost the way to the target (its references changed reading)",
                root.object
            )),
        }
    }
    Ok(GcRootResult {
        target,
        paths,
        roots_considered: roots.roots.len(),
        objects: index.len(),
        references: graph.edge_count() as u64,
        ancestors: dist.len() as u64,
        stacks_scanned: roots.stacks_scanned,
        notes,
    })
}

type Path = (Vec<u64>, Vec<Option<u64>>);

fn descend<M: Memory>(
    index: &ObjectIndex,
    rr: &mut RefReader<'_, M>,
    dist: &HashMap<u32, u32>,
    deps: &HashMap<u32, Vec<u32>>,
    from: u32,
    target: u32,
) -> Option<Path> {
    let mut x = from;
    let mut path = vec![index.address_of(x)?];
    let mut slots = Vec::new();
    let mut guard = 0u32;
    while x != target {
        guard += 1;
        if guard > 1 << 26 {
            return None;
        }
        let want = dist.get(&x)?.checked_sub(1)?;
        let addr = index.address_of(x)?;
        let mt = crate::model::heap::read_method_table(rr.reader.rt.memory(), addr).ok()?;
        let mut next = None;
        rr.for_each(addr, mt, |slot, v| {
            if next.is_none() {
                if let Some(j) = index.index_of(v) {
                    if dist.get(&j) == Some(&want) {
                        next = Some((j, Some(slot)));
                    }
                }
            }
        });
        if next.is_none() {
            next = deps
                .get(&x)
                .and_then(|v| v.iter().find(|j| dist.get(j) == Some(&want)))
                .map(|&j| (j, None));
        }
        let (j, slot) = next?;
        slots.push(slot);
        path.push(index.address_of(j)?);
        x = j;
    }
    Some((path, slots))
}

/// The modules types `mts` come from, CoreLib's first: each type's own (an array's element
/// type's), and for a generic instantiation its type arguments' too (where the runtime may
/// keep its statics and its entry in the loaded types). Each module once.
pub fn modules_of_types<M: Memory>(r: &ObjectReader<'_, M>, mts: &[u64]) -> Vec<u64> {
    let mut modules: Vec<u64> = Vec::new();
    let mut add = |m: u64| {
        if !modules.contains(&m) {
            modules.push(m);
        }
    };
    if let Some(m) = r.corelib_module() {
        add(m);
    }
    for &mt in mts {
        let mut th = mt;
        for _ in 0..8 {
            let Some(i) = r.mt(th) else { break };
            match i.array {
                Some(a) if a.element & 2 == 0 => th = a.element,
                Some(_) => break,
                None => {
                    if let Some(m) = i.module {
                        add(m);
                    }
                    for &ta in &i.type_args {
                        if let Some(m) = r.mt(ta).and_then(|x| x.module) {
                            add(m);
                        }
                    }
                    break;
                }
            }
        }
    }
    modules
}

/// The static fields of the loaded types of the modules that `mts` (MethodTables, e.g. the
/// heap census's) belong to, and CoreLib's: the address of each one's slot (for a reference,
/// the slot in the statics `object[]` holding it) → `Namespace.Type.Field`. `gcroot` names a
/// path's static with it: .NET 8 keeps statics in `object[]`s held by handles.
pub fn static_slot_names<M: Memory>(r: &ObjectReader<'_, M>, mts: &[u64]) -> HashMap<u64, String> {
    let modules = modules_of_types(r, mts);
    let mut out = HashMap::new();
    for m in modules {
        for (name, rid) in r.typedef_names(m) {
            let Some(mt) = r.typedef_mt(m, rid) else {
                continue;
            };
            let Ok(fields) = r.fields(mt, 0, true) else {
                continue;
            };
            for f in fields.iter().filter(|f| f.attr == "static") {
                if let Some(a) = f.address {
                    out.insert(a, format!("{name}.{}", f.name));
                }
            }
        }
    }
    out
}
