//! GC roots and `gcroot`: which roots keep an object alive, and the shortest path from each.
//!
//! Roots, as the GC itself uses them:
//! - handles holding an object that keep it alive: strong, pinned, async pinned, sized ref,
//!   ref counted, and variable handles currently strong or pinned (see [`GcHandle::is_strong`]);
//!   a dependent handle is no root: it adds an edge from its primary to its secondary;
//! - the f-reachable queue: objects found dead with a finalizer still to run;
//! - thread statics (.NET 9+): each thread's ThreadLocalData array;
//! - thread stacks, **precisely** as the GC's stack walk reports them
//!   ([`crate::model::stack::gcrefs`]): each managed frame's slots and registers its GC info
//!   says are live at its IP, each explicit Frame's protected references; an interior pointer
//!   (a byref) roots the object it points into, and nothing when it points outside the heap.
//!   A frame whose GC info cannot be read is scanned conservatively instead, and said so.
//!   Statics are no separate kind: .NET 8 keeps them in `object[]`s held by pinned handles.
//! - with `-conservative`, the stacks are scanned instead: every aligned word from the
//!   thread's stack pointer to the end of its stack memory, and its registers, that points at
//!   an object of the heap or into one, live or stale (a returned frame's slot shows up too;
//!   never the reverse).
//!
//! The search (`gcroot`), forward from the roots, root by root, breadth first, so each root
//! gets a shortest path from its object to the target:
//! - the marks are one bitmap over the heap's segments (one bit per 8-byte-aligned address),
//!   numbering no object and walking no heap beforehand; `--nostacks` builds nothing else;
//! - a search that fails leaves its objects marked (nothing they reach reaches the target, so
//!   every later root skips them: all roots together expand each such object once); a search
//!   that succeeds unmarks its objects and records its path's objects with their distance to
//!   the target, so a later root stops where it meets one (when no shorter way remains);
//! - the search keeps each level's marks (4-8 bytes per object reached) and finds the path
//!   back level by level, rereading only the objects of the levels above;
//! - a path longer than [`PATH_KEEP`] objects keeps its two ends.
//!
//! [`ObjectIndex`] (object starts numbered, for the conservative scan's interior pointers) is
//! built only for `-conservative`; the precise roots' interior pointers walk only the
//! segments they point into.

use crate::data::handles::HandleKind;
use crate::data::handles::ReadHandles;
use crate::data::threads::ReadThreads;
use crate::discovery::runtime::Runtime;
use crate::error::{ClrError, Result};
use crate::model::dso::{for_each_word, MAX_STACK_BYTES};
use crate::model::heap::{GcHeap, WalkError};
use crate::model::names::TypeNames;
use crate::model::objects::{GcLayout, ObjectReader};
use crate::model::stack::gcrefs::{ConservativeRange, RefSource};
use crate::model::stack::{StackWalker, REG_NAMES};
use dumpreader::{Memory, Target};
use serde::Serialize;
use std::collections::HashMap;
use std::rc::Rc;

/// Largest object whose references are read (the heap walk checked sizes against segments;
/// this bounds what a corrupt count could make the reader allocate).
const MAX_OBJECT_BYTES: u64 = 1 << 32;
/// Read window for reference enumeration: an object not in the current window is read with
/// its neighbours up to this many bytes, ahead of it, or behind it when the reads go down
/// (a depth-first mark pops an array's elements in descending order). Small, because every
/// miss copies it: a random walk over 21 million objects with a 1 MB window copied terabytes.
const WINDOW: usize = 4 << 10;

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
pub(crate) struct RefReader<'r, M> {
    pub(crate) reader: ObjectReader<'r, M>,
    facts: HashMap<u64, Option<MtFacts>>,
    last: Option<(u64, Option<MtFacts>)>,
    win: Vec<u8>,
    win_base: u64,
    win_len: usize,
    big: Vec<u8>,
}

impl<'r, M: Memory> RefReader<'r, M> {
    pub(crate) fn new(rt: &'r Runtime<M>, names: &'r TypeNames) -> Self {
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
    pub(crate) fn for_each(&mut self, addr: u64, mt: u64, mut f: impl FnMut(u64, u64)) -> bool {
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
        let bytes: &[u8] = if let Some(b) = mem.slice(addr, size as usize) {
            b
        } else if addr >= self.win_base && addr + size <= self.win_base + self.win_len as u64 {
            let o = (addr - self.win_base) as usize;
            &self.win[o..o + size as usize]
        } else if size as usize <= WINDOW {
            if self.win.is_empty() {
                self.win = vec![0u8; WINDOW];
            }
            // Going down, just below the window: a window ending at the object's end, when
            // the dump holds all of it; else one starting at the object.
            let end = addr + size;
            let below = addr < self.win_base && self.win_base - addr <= WINDOW as u64;
            let back = end.saturating_sub(WINDOW as u64);
            if below && back < addr && mem.read(back, &mut self.win) == WINDOW {
                self.win_base = back;
                self.win_len = WINDOW;
            } else {
                let got = mem.read(addr, &mut self.win);
                self.win_base = addr;
                self.win_len = got;
                if (got as u64) < size {
                    return false;
                }
            }
            let o = (addr - self.win_base) as usize;
            &self.win[o..o + size as usize]
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

    pub(crate) fn size_of(&mut self, addr: u64) -> Option<(u64, u64)> {
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
    /// A thread's thread statics (.NET 9+): the `object[]` its ThreadLocalData holds (each
    /// type's thread statics), which the GC reports per thread (`ScanThreadStaticRoots`),
    /// held by no handle.
    ThreadStatics {
        /// OS thread id.
        os_id: u64,
        /// Managed thread id.
        managed_id: u32,
        /// ThreadLocalData.NonCollectibleTlsArrayData's address.
        slot: u64,
    },
    /// A thread's stack slot or register: reported by a frame's GC info or an explicit
    /// Frame (precise), or found by a conservative scan.
    Stack {
        /// OS thread id.
        os_id: u64,
        /// Managed thread id.
        managed_id: u32,
        /// The stack slot's address (None for a register).
        slot: Option<u64>,
        /// The register holding it (`slot` None), or the register its slot is relative to,
        /// as the DAC names them (`rbp`, `rsp`, `caller_sp`); None for a conservative slot and
        /// an explicit Frame's.
        register: Option<&'static str>,
        /// The slot's offset from `register`.
        offset: i32,
        /// Whether the value points into the object rather than at its start (precise: the
        /// GC info's interior flag; conservative: where it points).
        interior: bool,
        /// Whether the GC info calls it pinned.
        pinned: bool,
        /// The value found (the object's address, or the interior pointer).
        value: u64,
        /// The reporting frame's SP and IP (None: a conservative scan of the whole stack).
        frame: Option<(u64, u64)>,
        /// The explicit Frame reporting it, if one does.
        explicit_frame: Option<u64>,
        /// How it was found: the frame's GC info, an explicit Frame, or a conservative scan
        /// (of a frame whose GC info could not be read, or of every stack with
        /// `-conservative`).
        found_by: RefSource,
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

/// How one thread's stack was read for roots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StackScan {
    /// OS thread id.
    pub os_id: u64,
    /// Managed thread id.
    pub managed_id: u32,
    /// Precise (each frame's GC info) or conservative (every word).
    pub mode: StackMode,
    /// The stack from the thread's SP to its end (what a conservative scan reads).
    pub from: u64,
    /// Its end.
    pub to: u64,
    /// Precise: frames walked.
    pub frames: usize,
    /// Precise: the ranges taken conservatively instead (frames whose GC info could not be
    /// read, the stack past where the walk stopped), with why.
    pub conservative: Vec<ConservativeRange>,
}

/// How stacks are read for roots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StackMode {
    /// What the GC reports: each managed frame's live slots from its GC info, each explicit
    /// Frame's protected references (a frame whose GC info cannot be read is scanned
    /// conservatively, and said so).
    Precise,
    /// Every aligned stack word and register pointing at or into an object: never misses a
    /// live reference, and takes stale slots too.
    Conservative,
}

/// Every root of the process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Roots {
    /// Handles, the f-reachable queue, thread statics, then stacks thread by thread.
    pub roots: Vec<Root>,
    /// Dependent handles: `(primary, secondary)` (edges, not roots).
    pub dependent: Vec<(u64, u64)>,
    /// The threads whose stacks were read.
    pub stacks_scanned: Vec<StackScan>,
    /// What could not be read.
    pub notes: Vec<String>,
}

/// The registers a conservative scan of a whole stack reads (all but rsp).
const REGISTERS: [usize; 15] = [0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

/// GC roots: what keeps objects alive.
pub trait FindRoots {
    /// Every root, as the GC finds them: strong handles, the f-reachable queue, thread
    /// statics and each managed thread's stack references, precise (frames' GC info and
    /// explicit Frames; a frame whose GC info cannot be read is scanned conservatively and said
    /// so in [`StackScan::conservative`]). An interior pointer roots the object it points
    /// into; one pointing outside the GC heap roots nothing.
    fn roots(&self, heap: &GcHeap, names: &TypeNames) -> Result<Roots>;

    /// As [`FindRoots::roots`], the stacks scanned conservatively: every stack word from the
    /// thread's SP to its stack's end, and every register, pointing at an object or into one.
    fn conservative_roots(&self, index: &ObjectIndex, names: &TypeNames) -> Result<Roots>;

    /// The roots that are no stack's: strong handles (dependent handles as edges), the
    /// f-reachable queue and (.NET 9+) each thread's thread-statics array. Needs only what `gchandles` and `finalizequeue` need (verified on
    /// .NET 8-11 against the DAC and ClrMD), not the stack scan's root set.
    fn handle_roots(&self) -> Result<Roots>;
}

impl<M: Memory + Target> FindRoots for Runtime<M> {
    fn handle_roots(&self) -> Result<Roots> {
        self.require(crate::discovery::layout::Capability::Roots)?;
        let mut res = Roots {
            roots: Vec::new(),
            dependent: Vec::new(),
            stacks_scanned: Vec::new(),
            notes: Vec::new(),
        };
        handle_and_queue_roots(self, &mut res);
        Ok(res)
    }

    fn roots(&self, heap: &GcHeap, names: &TypeNames) -> Result<Roots> {
        self.require(crate::discovery::layout::Capability::GcRoots)?;
        let mut res = Roots {
            roots: Vec::new(),
            dependent: Vec::new(),
            stacks_scanned: Vec::new(),
            notes: Vec::new(),
        };
        handle_and_queue_roots(self, &mut res);
        let threads = match self.threads() {
            Ok(t) => t,
            Err(e) => {
                res.notes
                    .push(format!("threads not read, no stack roots: {e}"));
                Vec::new()
            }
        };
        let walker = StackWalker::for_target(self, names);
        let ranges = heap_ranges(heap);
        let in_heap = |v: u64| in_ranges(&ranges, v);
        // Values to place in their objects (interior pointers, conservative words), with the
        // roots waiting for them.
        let mut pending: Vec<(u64, Root)> = Vec::new();
        for t in threads.iter().filter(|t| t.os_id != 0) {
            let Some(regs) = walker.registers(t.os_id) else {
                continue; // no OS thread in the dump (a thread that has not started or ended)
            };
            let (from, to) = match stack_extent(self, t.os_id, regs.sp()) {
                Some(r) => r,
                None => {
                    res.notes.push(format!(
                        "thread {:#x}: no stack memory around rsp {:#x}",
                        t.os_id,
                        regs.sp()
                    ));
                    (regs.sp(), regs.sp())
                }
            };
            let st = walker.walk(t);
            let refs = walker.gc_refs(&st, Some(to), &in_heap);
            res.notes.extend(
                refs.notes
                    .iter()
                    .map(|n| format!("thread {:#x}: {n}", t.os_id)),
            );
            for r in &refs.refs {
                if r.value == 0 {
                    continue; // a live slot holding null
                }
                let root = Root {
                    source: RootSource::Stack {
                        os_id: t.os_id,
                        managed_id: t.managed_id,
                        slot: r.address,
                        register: r.register,
                        offset: r.offset,
                        interior: r.interior,
                        pinned: r.pinned,
                        value: r.value,
                        frame: Some((r.frame_sp, r.frame_ip)),
                        explicit_frame: r.explicit_frame,
                        found_by: r.source,
                    },
                    object: r.value,
                };
                if r.interior || r.source == RefSource::Conservative {
                    pending.push((r.value, root));
                } else {
                    res.roots.push(root);
                }
            }
            res.stacks_scanned.push(StackScan {
                os_id: t.os_id,
                managed_id: t.managed_id,
                mode: StackMode::Precise,
                from,
                to,
                frames: st.frames.len(),
                conservative: refs.conservative,
            });
        }
        // Interior pointers root the object they point into (none: outside every object);
        // a conservative word roots the object it points at or into.
        let values: Vec<u64> = pending.iter().map(|(v, _)| *v).collect();
        let (found, errors) = containing_objects(self, heap, &values);
        if errors > 0 {
            res.notes.push(format!(
                "the heap walk met {errors} bad place(s) in the segments stack values point                  into; values there are not resolved"
            ));
        }
        for (v, mut root) in pending {
            let Some(&(obj, start)) = found.get(&v) else {
                continue;
            };
            if let RootSource::Stack {
                interior, found_by, ..
            } = &mut root.source
            {
                if *found_by == RefSource::Conservative {
                    *interior = !start;
                }
            }
            root.object = obj;
            res.roots.push(root);
        }
        Ok(res)
    }

    fn conservative_roots(&self, index: &ObjectIndex, names: &TypeNames) -> Result<Roots> {
        self.require(crate::discovery::layout::Capability::GcRoots)?;
        let mut res = Roots {
            roots: Vec::new(),
            dependent: Vec::new(),
            stacks_scanned: Vec::new(),
            notes: Vec::new(),
        };
        handle_and_queue_roots(self, &mut res);
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
            let regs = crate::model::stack::Regs::from_context(&ot.context);
            let mut consider = |slot: Option<u64>, register: Option<&'static str>, v: u64| {
                if let Some((obj, interior)) = resolve(index, &mut rr, v) {
                    res.roots.push(Root {
                        source: RootSource::Stack {
                            os_id: t.os_id,
                            managed_id: t.managed_id,
                            slot,
                            register,
                            offset: 0,
                            interior,
                            pinned: false,
                            value: v,
                            frame: None,
                            explicit_frame: None,
                            found_by: RefSource::Conservative,
                        },
                        object: obj,
                    });
                }
            };
            for r in REGISTERS {
                consider(None, Some(REG_NAMES[r]), regs.gpr[r]);
            }
            let Some((from, end)) = stack_extent(self, t.os_id, regs.sp()) else {
                res.notes.push(format!(
                    "thread {:#x}: no stack memory around rsp {:#x}",
                    t.os_id,
                    regs.sp()
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
            res.stacks_scanned.push(StackScan {
                os_id: t.os_id,
                managed_id: t.managed_id,
                mode: StackMode::Conservative,
                from,
                to,
                frames: 0,
                conservative: Vec::new(),
            });
        }
        Ok(res)
    }
}

/// The stack of OS thread `os_id` from `sp` (8-aligned) to its end: the dump's record of the
/// thread's stack, else the memory range holding `sp`.
fn stack_extent<M: Memory + Target>(rt: &Runtime<M>, os_id: u64, sp: u64) -> Option<(u64, u64)> {
    let from = sp & !7;
    let t = rt.memory();
    let end = t
        .threads()
        .iter()
        .find(|x| x.id as u64 == os_id)
        .and_then(|ot| ot.stack)
        .map(|(_, end)| end)
        .or_else(|| {
            t.memory_ranges()
                .into_iter()
                .find(|r| r.address <= from && from < r.address + r.size)
                .map(|r| r.address + r.size)
        })?;
    Some((from, end.max(from)))
}

/// The walked part `[mem, walk_end)` of every heap segment, sorted.
fn heap_ranges(heap: &GcHeap) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = heap
        .segments
        .iter()
        .filter(|s| s.walk_end > s.mem)
        .map(|s| (s.mem, s.walk_end))
        .collect();
    v.sort_unstable();
    v
}

fn in_ranges(ranges: &[(u64, u64)], v: u64) -> bool {
    let i = ranges.partition_point(|r| r.0 <= v);
    i > 0 && v < ranges[i - 1].1
}

/// For each of `values`, the non-free object it points at or into: `(object, whether it points
/// at its start)`; walks only the segments the values fall in. Also the number of walk errors
/// met there.
fn containing_objects<M: Memory>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    values: &[u64],
) -> (HashMap<u64, (u64, bool)>, usize) {
    let mut by_seg: HashMap<usize, Vec<u64>> = HashMap::new();
    for &v in values {
        if let Some(i) = heap
            .segments
            .iter()
            .position(|s| s.mem <= v && v < s.walk_end)
        {
            by_seg.entry(i).or_default().push(v);
        }
    }
    let mut out = HashMap::new();
    let mut errors = 0;
    for (si, mut vs) in by_seg {
        vs.sort_unstable();
        vs.dedup();
        let mut k = 0;
        errors += heap
            .visit_segment(rt, si, |o| {
                while k < vs.len() && vs[k] < o.address {
                    k += 1; // in no object (a gap the walk skipped)
                }
                while k < vs.len() && vs[k] < o.address + o.size {
                    if !o.is_free {
                        out.insert(vs[k], (o.address, vs[k] == o.address));
                    }
                    k += 1;
                }
            })
            .len();
    }
    (out, errors)
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

/// One bit per 8-byte-aligned address of every heap segment (region), numbered across the
/// segments: the search's marks, with no per-object table.
#[derive(Clone)]
pub(crate) struct HeapBits {
    /// `(start, end, first bit)` per segment, sorted by start.
    ranges: Vec<(u64, u64, u64)>,
    bits: Vec<u64>,
}

impl HeapBits {
    pub(crate) fn new(heap: &GcHeap) -> HeapBits {
        let mut spans: Vec<(u64, u64)> = heap
            .segments
            .iter()
            .filter(|s| s.walk_end > s.mem)
            .map(|s| (s.mem & !7, s.walk_end))
            .collect();
        spans.sort();
        let mut ranges: Vec<(u64, u64, u64)> = Vec::with_capacity(spans.len());
        let mut total = 0u64;
        for (start, end) in spans {
            // Overlapping ranges (a damaged segment list): keep the first.
            let start = match ranges.last() {
                Some(&(_, e, _)) if start < e => e.max(start),
                _ => start,
            };
            if end <= start {
                continue;
            }
            ranges.push((start, end, total));
            total += (end - start).div_ceil(8);
        }
        HeapBits {
            ranges,
            bits: crate::analysis::bigvec::filled(total.div_ceil(64) as usize, 0u64),
        }
    }

    /// The bit of an 8-byte-aligned address in a segment.
    #[inline]
    pub(crate) fn id(&self, addr: u64) -> Option<u64> {
        self.locate(addr).map(|(_, id)| id)
    }

    /// The range holding `addr` and its bit.
    #[inline]
    fn locate(&self, addr: u64) -> Option<(usize, u64)> {
        if addr & 7 != 0 {
            return None;
        }
        let i = self
            .ranges
            .partition_point(|r| r.0 <= addr)
            .checked_sub(1)?;
        let (start, end, base) = self.ranges[i];
        (addr < end).then(|| (i, base + (addr - start) / 8))
    }

    /// As [`HeapBits::id`], trying the range `hint` names first and leaving there the range
    /// `addr` fell in: addresses met in order, or near each other, mostly share one.
    #[inline]
    pub(crate) fn id_near(&self, addr: u64, hint: &mut usize) -> Option<u64> {
        if let Some(&(start, end, base)) = self.ranges.get(*hint) {
            if addr >= start && addr < end && addr & 7 == 0 {
                return Some(base + (addr - start) / 8);
            }
        }
        let (i, id) = self.locate(addr)?;
        *hint = i;
        Some(id)
    }

    pub(crate) fn addr(&self, id: u64) -> u64 {
        let i = self.ranges.partition_point(|r| r.2 <= id).saturating_sub(1);
        let (start, _, base) = self.ranges[i];
        start + 8 * (id - base)
    }

    pub(crate) fn get(&self, id: u64) -> bool {
        self.bits[(id / 64) as usize] >> (id % 64) & 1 != 0
    }

    /// The bitmap's words (bit `id % 64` of word `id / 64` is bit `id`).
    pub(crate) fn words(&self) -> &[u64] {
        &self.bits
    }

    /// Sets the bit; whether it was clear.
    pub(crate) fn set(&mut self, id: u64) -> bool {
        let w = &mut self.bits[(id / 64) as usize];
        let m = 1u64 << (id % 64);
        let was = *w & m == 0;
        *w |= m;
        was
    }

    pub(crate) fn clear(&mut self, id: u64) {
        self.bits[(id / 64) as usize] &= !(1u64 << (id % 64));
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bits.len() * 8
    }
}

/// A bit number as a level of the search keeps it.
trait LevelId: Copy {
    fn of(id: u64) -> Self;
    fn id(self) -> u64;
}

impl LevelId for u32 {
    fn of(id: u64) -> Self {
        id as u32
    }
    fn id(self) -> u64 {
        self as u64
    }
}

impl LevelId for u64 {
    fn of(id: u64) -> Self {
        id
    }
    fn id(self) -> u64 {
        self
    }
}

/// Options of [`gcroot_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcRootOptions {
    /// Read the threads' stacks for roots (`--nostacks` turns it off: then no stack work at
    /// all).
    pub stacks: bool,
    /// Scan the stacks conservatively (every word pointing into an object, stale slots too)
    /// rather than precisely (each frame's GC info): `-conservative`.
    pub conservative: bool,
    /// Stop after this many roots with a path (None: every root).
    pub max_roots: Option<usize>,
}

impl Default for GcRootOptions {
    fn default() -> Self {
        GcRootOptions {
            stacks: true,
            conservative: false,
            max_roots: None,
        }
    }
}

/// Longest path kept whole; a longer one keeps its first and last [`PATH_KEEP`]/2 objects.
pub const PATH_KEEP: usize = 256;

/// One root that keeps the target alive, with the shortest path from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RootPath {
    /// The root.
    pub root: Root,
    /// The objects from the root's object to the target, both included (at most
    /// [`PATH_KEEP`]: a longer path leaves out `elided` objects after `path[elided_at - 1]`).
    pub path: Vec<u64>,
    /// For each step `path[i] -> path[i+1]`, the slot of `path[i]` holding the reference (None
    /// for a dependent handle's edge, and for the step across an elision).
    pub slots: Vec<Option<u64>>,
    /// The path's length in objects (the root's object and the target included).
    pub length: u64,
    /// Where objects are left out of `path` (the index of the first object after the gap)
    /// and how many.
    pub elided: Option<(usize, u64)>,
}

/// What `gcroot` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GcRootResult {
    /// The object asked about.
    pub target: u64,
    /// Every root keeping it alive, in root order (handles, finalizer queue, stacks), each
    /// with a shortest path from its object.
    pub paths: Vec<RootPath>,
    /// Roots considered.
    pub roots_considered: usize,
    /// Whether the search stopped at `max_roots` before trying every root.
    pub stopped_at_max: bool,
    /// Objects the search expanded (read the references of), all roots together.
    pub objects_expanded: u64,
    /// Bytes of the search's mark bitmap (one bit per 8 bytes of the heap's segments).
    pub bitmap_bytes: u64,
    /// Whether the stacks were read (false with `--nostacks`).
    pub stacks: bool,
    /// The threads whose stacks were read, and how.
    pub stacks_scanned: Vec<StackScan>,
    /// What could not be read (the search used everything else).
    pub notes: Vec<String>,
}

/// Finds every root keeping `target` alive and a shortest path from each (stacks included).
pub fn gcroot<M: Memory + Target>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    names: &TypeNames,
    target: u64,
) -> Result<GcRootResult> {
    gcroot_with(rt, heap, names, target, GcRootOptions::default())
}

/// Whether `addr` is the start of a (non-free) object of its segment (one segment walked).
pub(crate) fn is_object_start<M: Memory>(rt: &Runtime<M>, heap: &GcHeap, addr: u64) -> bool {
    let Some(si) = heap
        .segments
        .iter()
        .position(|s| s.mem <= addr && addr < s.walk_end)
    else {
        return false;
    };
    let mut found = false;
    heap.visit_segment(rt, si, |o| {
        if o.address == addr && !o.is_free {
            found = true;
        }
    });
    found
}

/// The non-stack roots: strong handles (and dependent handles' edges), the f-reachable queue.
fn handle_and_queue_roots<M: Memory + Target>(rt: &Runtime<M>, res: &mut Roots) {
    match rt.gc_handles() {
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
    match rt.finalize_queue() {
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
    thread_static_roots(rt, res);
}

/// .NET 9+: each thread's ThreadLocalData array of thread statics (src/coreclr/vm/
/// threadstatics.cpp `ScanThreadStaticRoots`, called per thread by `GcScanRoots` in
/// gcenv.ee.cpp): a root no handle holds. Collectible types' thread statics are held by
/// loader allocator handles, in-flight ones by object handles: both among the handles.
fn thread_static_roots<M: Memory + Target>(rt: &Runtime<M>, res: &mut Roots) {
    let crate::discovery::layout::StaticsScheme::PerType(p) = rt.layout.statics else {
        return; // .NET 8: thread statics live in handle-held object[]s
    };
    let threads = match rt.threads() {
        Ok(t) => t,
        Err(e) => {
            res.notes
                .push(format!("threads not read, no thread-static roots: {e}"));
            return;
        }
    };
    let mem = rt.memory();
    for t in threads.iter().filter(|t| t.os_id != 0) {
        let Ok(tld) = mem.read_u64(t.address + p.thread_local_data) else {
            res.notes.push(format!(
                "thread {:#x}: ThreadLocalDataPtr not in the dump: its thread statics unread",
                t.os_id
            ));
            continue;
        };
        if tld == 0 {
            continue;
        }
        let slot = tld + p.tld_non_collectible_data;
        match mem.read_u64(slot) {
            Ok(0) => {}
            Ok(arr) => res.roots.push(Root {
                source: RootSource::ThreadStatics {
                    os_id: t.os_id,
                    managed_id: t.managed_id,
                    slot,
                },
                object: arr,
            }),
            Err(_) => res.notes.push(format!(
                "thread {:#x}: ThreadLocalData at {tld:#x} not in the dump: its thread statics unread",
                t.os_id
            )),
        }
    }
}

/// What the search knows reaches the target: the next object toward it, the slot holding it,
/// and the distance (objects known reach it by a shortest path).
type Known = HashMap<u64, (u64, Option<u64>, u64)>;

struct Search<'a, 'r, M> {
    bits: HeapBits,
    known: Known,
    deps: HashMap<u64, Vec<u64>>,
    rr: RefReader<'r, M>,
    target: u64,
    expanded: u64,
    unreadable: u64,
    _p: std::marker::PhantomData<&'a ()>,
}

impl<M: Memory> Search<'_, '_, M> {
    /// Calls `f(slot, value)` for every reference of `addr` and its dependent handles' edges
    /// (slot None). False when the object could not be read.
    fn refs(&mut self, addr: u64, mut f: impl FnMut(Option<u64>, u64)) -> bool {
        let Ok(mt) = crate::model::heap::read_method_table(self.rr.reader.rt.memory(), addr) else {
            return false;
        };
        let ok = self.rr.for_each(addr, mt, |slot, v| f(Some(slot), v));
        if let Some(d) = self.deps.get(&addr) {
            for &s in d {
                f(None, s);
            }
        }
        ok
    }

    /// A shortest path from `root` to the target: breadth first over the objects not yet
    /// proven unable to reach it, stopping at the target or where what is known reaches it
    /// no shorter. Objects of a search that fails stay marked: nothing they reach reaches the
    /// target, so later roots skip them; a search that succeeds unmarks its objects and
    /// records its path's objects as known.
    fn path_from(&mut self, root: u64) -> Option<(Vec<u64>, Vec<Option<u64>>)> {
        // The levels hold bit numbers: 4 bytes each while the heap's ranges number fewer
        // than 2^32 granules (32 GB).
        if self.bits.bits.len() as u64 * 64 <= u32::MAX as u64 {
            self.path_from_in::<u32>(root)
        } else {
            self.path_from_in::<u64>(root)
        }
    }

    fn path_from_in<I: LevelId>(&mut self, root: u64) -> Option<(Vec<u64>, Vec<Option<u64>>)> {
        if root == self.target {
            return Some((vec![root], Vec::new()));
        }
        if self.known.contains_key(&root) {
            return Some(self.known_chain(root, Vec::new(), Vec::new()));
        }
        let id = self.bits.id(root)?;
        if !self.bits.set(id) {
            return None; // proven not to reach the target
        }
        let mut levels: Vec<Vec<I>> = vec![vec![I::of(id)]];
        // (total length in steps, the object found, its referrer, the referrer's level, the slot)
        let mut best: Option<(u64, u64, u64, usize, Option<u64>)> = None;
        let target = self.target;
        let mut news: Vec<u64> = Vec::new();
        'search: loop {
            let l = levels.len() - 1;
            if best.is_some_and(|b| b.0 <= l as u64 + 1) {
                break;
            }
            let mut next = Vec::new();
            for i in 0..levels[l].len() {
                let addr = self.bits.addr(levels[l][i].id());
                self.expanded += 1;
                let mut found: Option<(u64, u64, Option<u64>)> = None;
                news.clear();
                let known = &self.known;
                let bits = &self.bits;
                let mut visit = |slot: Option<u64>, v: u64| {
                    if found.is_some_and(|f| f.1 == 0) {
                        return;
                    }
                    if v == target {
                        found = Some((v, 0, slot));
                    } else if let Some(k) = known.get(&v) {
                        if found.is_none_or(|f| k.2 < f.1) {
                            found = Some((v, k.2, slot));
                        }
                    } else if let Some(id) = bits.id(v) {
                        if !bits.get(id) {
                            news.push(id);
                        }
                    }
                };
                let ok =
                    match crate::model::heap::read_method_table(self.rr.reader.rt.memory(), addr) {
                        Ok(mt) => {
                            let ok = self.rr.for_each(addr, mt, |slot, v| visit(Some(slot), v));
                            if let Some(d) = self.deps.get(&addr) {
                                for &s in d {
                                    visit(None, s);
                                }
                            }
                            ok
                        }
                        Err(_) => false,
                    };
                if !ok {
                    self.unreadable += 1;
                }
                for &id in &news {
                    if self.bits.set(id) {
                        next.push(I::of(id));
                    }
                }
                if let Some((obj, d, slot)) = found {
                    let total = l as u64 + 1 + d;
                    if best.is_none_or(|b| total < b.0) {
                        best = Some((total, obj, addr, l, slot));
                    }
                    if d == 0 {
                        levels.push(next);
                        break 'search;
                    }
                }
            }
            let empty = next.is_empty();
            levels.push(next);
            if empty {
                break;
            }
        }
        let result = best.and_then(|(_, found, parent, parent_level, slot)| {
            // Back from the referrer to the root, one level up each time.
            let mut chain = vec![parent];
            let mut chain_slots = Vec::new();
            let mut cur = parent;
            for lvl in (0..parent_level).rev() {
                let mut hit = None;
                for i in 0..levels[lvl].len() {
                    let a = self.bits.addr(levels[lvl][i].id());
                    let mut s = None;
                    self.refs(a, |slot, v| {
                        if s.is_none() && v == cur {
                            s = Some(slot);
                        }
                    });
                    if let Some(s) = s {
                        hit = Some((a, s));
                        break;
                    }
                }
                let (a, s) = hit?; // the references changed between two reads
                chain.push(a);
                chain_slots.push(s);
                cur = a;
            }
            chain.reverse();
            chain_slots.reverse();
            chain.push(found);
            chain_slots.push(slot);
            Some((found, chain, chain_slots))
        });
        match result {
            Some((found, path, slots)) => {
                for lv in &levels {
                    for &x in lv {
                        self.bits.clear(x.id());
                    }
                }
                Some(self.known_chain(found, path, slots))
            }
            // Every object marked stays marked: none of them reaches the target.
            None if best.is_none() => None,
            None => {
                for lv in &levels {
                    for &x in lv {
                        self.bits.clear(x.id());
                    }
                }
                None
            }
        }
    }

    /// Extends `path` (ending at `from`, or empty) along what is known to the target, and
    /// records the prefix's objects as known.
    fn known_chain(
        &mut self,
        from: u64,
        mut path: Vec<u64>,
        mut slots: Vec<Option<u64>>,
    ) -> (Vec<u64>, Vec<Option<u64>>) {
        if path.last() != Some(&from) {
            path.push(from);
        }
        let prefix = path.len();
        let mut x = from;
        let mut guard = 0u64;
        while x != self.target {
            let Some(&(next, slot, _)) = self.known.get(&x) else {
                break;
            };
            slots.push(slot);
            path.push(next);
            x = next;
            guard += 1;
            if guard > 1 << 32 {
                break;
            }
        }
        let total = path.len() as u64 - 1;
        for i in 0..prefix.saturating_sub(1) {
            self.known
                .entry(path[i])
                .or_insert((path[i + 1], slots[i], total - i as u64));
        }
        (path, slots)
    }
}

/// Finds the roots keeping `target` alive and a shortest path from each (see
/// [`GcRootOptions`]).
pub fn gcroot_with<M: Memory + Target>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    names: &TypeNames,
    target: u64,
    opts: GcRootOptions,
) -> Result<GcRootResult> {
    // Without stacks the root set is the handles' and the f-reachable queue's, verified
    // where `gchandles` and `finalizequeue` are; the stack scan needs the whole root set.
    rt.require(if opts.stacks {
        crate::discovery::layout::Capability::GcRoots
    } else {
        crate::discovery::layout::Capability::Roots
    })?;
    if !is_object_start(rt, heap, target) {
        return Err(ClrError::corrupt(
            "gcroot target",
            target,
            "is not the start of an object of the GC heap",
        ));
    }
    let roots = if !opts.stacks {
        rt.handle_roots()?
    } else if opts.conservative {
        let index = ObjectIndex::build(rt, heap)?;
        let mut r = rt.conservative_roots(&index, names)?;
        if !index.errors.is_empty() {
            r.notes.push(format!(
                "the heap walk met {} bad place(s); stack values there are not resolved",
                index.errors.len()
            ));
        }
        r
    } else {
        rt.roots(heap, names)?
    };
    let mut deps: HashMap<u64, Vec<u64>> = HashMap::new();
    for &(p, s) in &roots.dependent {
        deps.entry(p).or_default().push(s);
    }
    let mut search = Search {
        bits: HeapBits::new(heap),
        known: HashMap::new(),
        deps,
        rr: RefReader::new(rt, names),
        target,
        expanded: 0,
        unreadable: 0,
        _p: std::marker::PhantomData,
    };
    let mut notes = roots.notes.clone();
    let mut paths = Vec::new();
    let mut memo: HashMap<u64, Option<(Vec<u64>, Vec<Option<u64>>)>> = HashMap::new();
    let mut stopped_at_max = false;
    for root in &roots.roots {
        if opts.max_roots.is_some_and(|m| paths.len() >= m) {
            stopped_at_max = true;
            break;
        }
        let found = match memo.get(&root.object) {
            Some(f) => f.clone(),
            None => {
                let f = search.path_from(root.object).map(|(p, s)| bound(p, s));
                memo.insert(root.object, f.clone());
                f
            }
        };
        if let Some((path, slots, length, elided)) = found.map(|(p, s)| unbound(p, s)) {
            paths.push(RootPath {
                root: root.clone(),
                path,
                slots,
                length,
                elided,
            });
        }
    }
    if search.unreadable > 0 {
        notes.push(format!(
            "{} object(s) whose references could not be read",
            search.unreadable
        ));
    }
    Ok(GcRootResult {
        target,
        paths,
        roots_considered: roots.roots.len(),
        stopped_at_max,
        objects_expanded: search.expanded,
        bitmap_bytes: search.bits.bytes() as u64,
        stacks: opts.stacks,
        stacks_scanned: roots.stacks_scanned,
        notes,
    })
}

/// What `pathto` found: a shortest path of references from one object to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathTo {
    /// The object the path starts from.
    pub source: u64,
    /// The object it ends at.
    pub target: u64,
    /// The objects from `source` to `target`, both included (empty: no path).
    pub path: Vec<u64>,
    /// For each step `path[i] -> path[i+1]`, the slot of `path[i]` holding the reference
    /// (None: a dependent handle's edge, primary to secondary).
    pub slots: Vec<Option<u64>>,
    /// Objects the search expanded.
    pub objects_expanded: u64,
    /// What could not be read (the search used everything else).
    pub notes: Vec<String>,
}

/// `pathto`: a shortest path of references from the object `source` to `target`, breadth
/// first over the objects' references and the dependent handles' edges (as ClrMD's
/// `GCRoot.FindPathFrom`, which SOS's `pathto` uses, walks them; it goes depth first and so
/// finds *a* path, this one a shortest). `source` must be an object (its MethodTable
/// readable); `target` is any address a reference may hold.
pub fn path_to<M: Memory + Target>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    names: &TypeNames,
    source: u64,
    target: u64,
) -> Result<PathTo> {
    let rr = RefReader::new(rt, names);
    rr.reader.object_mt(source)?;
    let mut notes = Vec::new();
    let mut deps: HashMap<u64, Vec<u64>> = HashMap::new();
    match rt.gc_handles() {
        Ok(h) => {
            notes.extend(h.errors.iter().map(|e| format!("handle table: {e}")));
            for x in &h.handles {
                if x.kind == HandleKind::Dependent && x.object != 0 && x.secondary != 0 {
                    deps.entry(x.object).or_default().push(x.secondary);
                }
            }
        }
        Err(e) => notes.push(format!(
            "handle table not read, dependent handles not followed: {e}"
        )),
    }
    let mut search = Search {
        bits: HeapBits::new(heap),
        known: HashMap::new(),
        deps,
        rr,
        target,
        expanded: 0,
        unreadable: 0,
        _p: std::marker::PhantomData,
    };
    let (path, slots) = search.path_from(source).unwrap_or_default();
    if search.unreadable > 0 {
        notes.push(format!(
            "{} object(s) whose references could not be read",
            search.unreadable
        ));
    }
    Ok(PathTo {
        source,
        target,
        path,
        slots,
        objects_expanded: search.expanded,
        notes,
    })
}

/// A path kept within [`PATH_KEEP`] objects: `(path, slots)` with an elision marker encoded
/// as the length in a trailing pseudo-slot (see [`unbound`]).
fn bound(path: Vec<u64>, slots: Vec<Option<u64>>) -> (Vec<u64>, Vec<Option<u64>>) {
    let n = path.len();
    let mut slots = slots;
    slots.push(Some(n as u64));
    if n <= PATH_KEEP {
        return (path, slots);
    }
    let h = PATH_KEEP / 2;
    let mut p = path[..h].to_vec();
    p.extend_from_slice(&path[n - h..]);
    let mut s = slots[..h].to_vec();
    s.extend_from_slice(&slots[n - h..]);
    (p, s)
}

fn unbound(
    path: Vec<u64>,
    mut slots: Vec<Option<u64>>,
) -> (Vec<u64>, Vec<Option<u64>>, u64, Option<(usize, u64)>) {
    let n = slots.pop().flatten().unwrap_or(path.len() as u64);
    let elided = (n > path.len() as u64).then(|| (PATH_KEEP / 2, n - path.len() as u64));
    if let Some((at, _)) = elided {
        // The step across the gap has no slot.
        if let Some(s) = slots.get_mut(at - 1) {
            *s = None;
        }
    }
    (path, slots, n, elided)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_paths_keep_their_ends() {
        let n = PATH_KEEP as u64 * 3;
        let path: Vec<u64> = (0..n).map(|i| 0x1000 + 8 * i).collect();
        let slots: Vec<Option<u64>> = (0..n - 1).map(|i| Some(0x9000 + i)).collect();
        let (p, s) = bound(path.clone(), slots.clone());
        let (p, s, len, elided) = unbound(p, s);
        assert_eq!(len, n);
        assert_eq!(p.len(), PATH_KEEP);
        assert_eq!(elided, Some((PATH_KEEP / 2, n - PATH_KEEP as u64)));
        assert_eq!(p[..PATH_KEEP / 2], path[..PATH_KEEP / 2]);
        assert_eq!(p[PATH_KEEP / 2..], path[path.len() - PATH_KEEP / 2..]);
        assert_eq!(s.len(), PATH_KEEP - 1);
        assert_eq!(s[..PATH_KEEP / 2 - 1], slots[..PATH_KEEP / 2 - 1]);
        assert_eq!(s[PATH_KEEP / 2 - 1], None, "no slot across the gap");
        assert_eq!(
            s[PATH_KEEP / 2..],
            slots[slots.len() - (PATH_KEEP / 2 - 1)..]
        );
        // A short path is kept whole.
        let (p, s, len, elided) = unbound_of(&path[..5], &slots[..4]);
        assert_eq!((p.len(), s.len(), len, elided), (5, 4, 5, None));
    }

    fn unbound_of(
        p: &[u64],
        s: &[Option<u64>],
    ) -> (Vec<u64>, Vec<Option<u64>>, u64, Option<(usize, u64)>) {
        let (p, s) = bound(p.to_vec(), s.to_vec());
        unbound(p, s)
    }
}
