//! The GC heap: heaps, generations, segments (regions), allocation contexts, and the object walk.
//!
//! The walk follows the runtime DAC's heap enumeration as ClrMD and SOS do it: segments in the
//! order LOH, gen2, gen1, gen0 (with regions), POH, duplicates removed; each segment from `mem`
//! to `allocated` (the ephemeral segment to the heap's `alloc_allocated`); allocation contexts
//! (threads', generations', the global one) skipped from `alloc_ptr` to `alloc_limit` + the
//! minimum object size; an object's size is `align8(BaseSize + count * ComponentSize)`.
//! A bad object is reported (address, segment, what was wrong) and the walk resynchronises on
//! the next plausible object of the segment, if any, counting the bytes it skipped.

use crate::data::threads::ReadThreads;
use crate::discovery::layout::mt_flags;
use crate::discovery::runtime::{GcMode, Runtime};
use crate::error::{ClrError, Result};
use dumpreader::Memory;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

/// Bound on segment chains (a corrupt `next` must not loop forever).
pub const MAX_SEGMENTS: usize = 1 << 20;
/// Bound on server heaps.
pub const MAX_HEAPS: usize = 4096;

/// What a segment holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentKind {
    /// Generation 0 region.
    Gen0,
    /// Generation 1 region.
    Gen1,
    /// Generation 2 region (or, with segments, a gen2 segment).
    Gen2,
    /// The ephemeral segment (segments mode, gens 0 and 1).
    Ephemeral,
    /// Large object heap.
    Loh,
    /// Pinned object heap.
    Poh,
    /// Read-only (frozen / NonGC) segment: string literals, RuntimeType objects.
    Frozen,
}

impl SegmentKind {
    /// The name SOS / dacprobe use: gen0 gen1 gen2 ephemeral loh poh frozen.
    pub fn name(self) -> &'static str {
        match self {
            SegmentKind::Gen0 => "gen0",
            SegmentKind::Gen1 => "gen1",
            SegmentKind::Gen2 => "gen2",
            SegmentKind::Ephemeral => "ephemeral",
            SegmentKind::Loh => "loh",
            SegmentKind::Poh => "poh",
            SegmentKind::Frozen => "frozen",
        }
    }
}

/// One heap segment (a region on .NET 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Segment {
    /// Index of the GC heap (0 for workstation).
    pub heap: usize,
    /// The heap_segment's address.
    pub address: u64,
    /// The generation whose start-segment chain led here (0-2, 3 LOH, 4 POH).
    pub generation_list: u8,
    /// What it holds.
    pub kind: SegmentKind,
    /// First object.
    pub mem: u64,
    /// heap_segment::allocated.
    pub allocated: u64,
    /// heap_segment::committed.
    pub committed: u64,
    /// heap_segment::reserved.
    pub reserved: u64,
    /// heap_segment::used.
    pub used: u64,
    /// heap_segment::flags.
    pub flags: u64,
    /// heap_segment::next.
    pub next: u64,
    /// Where the walk ends: alloc_allocated for the ephemeral segment, else `allocated`.
    pub walk_end: u64,
    /// Whether this is the heap's ephemeral_heap_segment.
    pub is_ephemeral: bool,
}

/// `sizeof(aligned_plug_and_gap)` on a 64-bit target (gc.cpp: a pad word and plug_and_gap's
/// gap, reloc, pair and plug): the bytes a region keeps ahead of its first object
/// (`get_region_start` is `heap_segment_mem - sizeof(aligned_plug_and_gap)`).
pub const ALIGNED_PLUG_AND_GAP: u64 = 0x28;

impl Segment {
    /// Where the segment's memory starts: a region's start (its first object less
    /// [`ALIGNED_PLUG_AND_GAP`]); a frozen segment's first object (its header is not the GC's).
    pub fn region_start(&self) -> u64 {
        match self.kind {
            SegmentKind::Frozen => self.mem,
            _ => self.mem.saturating_sub(ALIGNED_PLUG_AND_GAP),
        }
    }
}

/// One generation's entry of a heap's generation table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Generation {
    /// Address of the generation structure.
    pub address: u64,
    /// start_segment.
    pub start_segment: u64,
    /// allocation_context.alloc_ptr.
    pub alloc_ptr: u64,
    /// allocation_context.alloc_limit.
    pub alloc_limit: u64,
}

/// One GC heap (the only one with workstation GC).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapData {
    /// The gc_heap's address (0 for workstation, whose fields are statics).
    pub address: u64,
    /// alloc_allocated.
    pub alloc_allocated: u64,
    /// ephemeral_heap_segment.
    pub ephemeral_heap_segment: u64,
    /// Generations 0, 1, 2, LOH, POH.
    pub generations: Vec<Generation>,
    /// Whether this heap uses regions (gen0's start segment differs from gen1's).
    pub uses_regions: bool,
}

/// An allocation context: the walk skips from `ptr` to `limit` + the minimum object size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, PartialOrd, Ord)]
pub struct AllocContext {
    /// alloc_ptr.
    pub ptr: u64,
    /// alloc_limit.
    pub limit: u64,
}

/// The GC heap's structure: everything needed to walk it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GcHeap {
    /// Workstation or server.
    pub mode: GcMode,
    /// GcDacVars version (major, minor); `None` where the GC's own sub-descriptor gave the
    /// tables (.NET 11).
    pub dac_vars_version: Option<(u8, u8)>,
    /// max_gen (2).
    pub max_generation: u32,
    /// The heaps.
    pub heaps: Vec<HeapData>,
    /// Every segment, in walk order.
    pub segments: Vec<Segment>,
    /// Allocation contexts to skip, sorted by `ptr` (unique).
    pub alloc_contexts: Vec<AllocContext>,
    /// Problems met reading the heap's structure that did not stop it (a damaged thread
    /// list: some allocation contexts unknown).
    pub notes: Vec<String>,
    /// The free-object MethodTable.
    pub free_mt: u64,
    /// The minimum object size.
    pub min_object_size: u64,
}

/// What went wrong at one place of the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WalkErrorKind {
    /// The object's memory is not in the dump.
    MemoryAbsent,
    /// The MethodTable pointer is null, unreadable or not a plausible MethodTable.
    BadMethodTable,
    /// The computed size is below the minimum or runs past the segment's end.
    BadSize,
}

/// A bad place found by the walk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WalkError {
    /// The object's address.
    pub address: u64,
    /// The segment's address.
    pub segment: u64,
    /// What kind of problem.
    pub kind: WalkErrorKind,
    /// The MethodTable read there (0 if none).
    pub mt: u64,
    /// What was wrong and what was expected.
    pub detail: String,
    /// Bytes skipped to get past it (to the resynchronised object or the segment's end).
    pub skipped: u64,
}

impl std::fmt::Display for WalkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.kind {
            WalkErrorKind::MemoryAbsent => "memory absent",
            WalkErrorKind::BadMethodTable => "bad MethodTable",
            WalkErrorKind::BadSize => "bad size",
        };
        write!(
            f,
            "heap object at {:#x} (segment {:#x}): {what}",
            self.address, self.segment
        )?;
        if self.mt != 0 {
            write!(f, ", MethodTable {:#x}", self.mt)?;
        }
        write!(f, ": {}", self.detail)?;
        if self.skipped != 0 {
            write!(f, " ({:#x} bytes skipped)", self.skipped)?;
        }
        Ok(())
    }
}

/// One object met by the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapObject {
    /// Its address.
    pub address: u64,
    /// Its MethodTable (mark bits cleared).
    pub mt: u64,
    /// Its size in bytes (aligned).
    pub size: u64,
    /// Index of its segment in [`GcHeap::segments`].
    pub segment: usize,
    /// The segment's kind.
    pub kind: SegmentKind,
    /// Whether it is a free object (MethodTable = g_pFreeObjectMethodTable).
    pub is_free: bool,
}

/// Per-MethodTable census line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TypeStat {
    /// The MethodTable.
    pub mt: u64,
    /// Number of objects.
    pub count: u64,
    /// Their total size.
    pub total_size: u64,
}

/// Per segment-kind totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct KindStat {
    /// Segments of this kind.
    pub segments: u64,
    /// Live (non-free) objects.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// Per segment totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct SegmentStat {
    /// The segment's address.
    pub address: u64,
    /// Non-free objects.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Free objects.
    pub free_objects: u64,
    /// Their bytes.
    pub free_bytes: u64,
}

/// The heap census by MethodTable (free objects counted apart).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Census {
    /// One line per MethodTable, sorted by total size descending, then count, then MT.
    pub types: Vec<TypeStat>,
    /// Non-free objects.
    pub total_objects: u64,
    /// Their bytes.
    pub total_size: u64,
    /// Free objects.
    pub free_objects: u64,
    /// Their bytes.
    pub free_size: u64,
    /// Totals per segment kind ("gen0", ..., "frozen").
    pub by_segment_kind: BTreeMap<String, KindStat>,
    /// Totals per segment, in [`GcHeap::segments`] order.
    pub segments: Vec<SegmentStat>,
    /// Bad places met.
    pub errors: Vec<WalkError>,
    /// Bytes skipped because of them.
    pub skipped_bytes: u64,
    /// Whether the walk was stopped early (by its progress observer): the census is partial.
    pub stopped: bool,
}

fn align8(x: u64) -> u64 {
    (x + 7) & !7
}

/// The MethodTable of an object whose first word is `word`: the word with the low bits the GC
/// uses while it runs (mark, pinned) cleared. Every reader of an object's type goes through it.
pub fn method_table_of(word: u64) -> u64 {
    word & !7
}

/// The MethodTable of the object at `obj` ([`method_table_of`] its first word), unvalidated.
pub fn read_method_table<M: Memory + ?Sized>(
    mem: &M,
    obj: u64,
) -> std::result::Result<u64, dumpreader::ReadError> {
    mem.read_u64(obj).map(method_table_of)
}

/// The GC heap's structure: its heaps, generations and segments, ready to walk.
pub trait ReadGcHeap {
    /// Reads the GC's structure: heaps, generation tables, segments and allocation contexts.
    fn gc_heap(&self) -> Result<GcHeap>;

    /// Whether the dump leaves the GC heap out, with the evidence ([`HeapAbsence`]); `None`
    /// when some of it is there, or when the GC's own tables are in the dump but cannot be
    /// read for another reason (then [`Runtime::gc_heap`]'s error says why). Every heap command
    /// asks this one question.
    ///
    /// `heap` is the heap's structure when already read. A dump that reported damage when
    /// opened (a truncated file) is never said to be without a heap: its missing memory is
    /// the damage's.
    fn gc_heap_absence(&self, heap: Option<&GcHeap>) -> Option<HeapAbsence>;
}

impl<M: Memory> ReadGcHeap for Runtime<M> {
    fn gc_heap(&self) -> Result<GcHeap> {
        self.require(crate::discovery::layout::Capability::HeapWalk)?;
        if self.gc_mode() == GcMode::Server {
            self.require(crate::discovery::layout::Capability::ServerGc)?;
        }
        self.read_gc_heap().map_err(|e| self.explain(e))
    }

    fn gc_heap_absence(&self, heap: Option<&GcHeap>) -> Option<HeapAbsence> {
        if matches!(
            self.explain(ClrError::read("", 0)),
            ClrError::InDamagedDump { .. }
        ) {
            return None;
        }
        let m = self.memory();
        let heaps = match self.read_heap_tables() {
            Ok((_, _, _, heaps)) => heaps,
            Err(ClrError::Read { addr, .. }) => return Some(HeapAbsence::Tables { addr }),
            Err(_) => return None,
        };
        let sl = self.layout.heap_segment;
        let absent = |a: u64| m.read_exact(a, &mut [0u8; 8]).is_err();
        // Each generation's first GC segment: a list may begin with frozen (NonGC) segments,
        // whose headers the runtime allocates apart (in the native heap, which a mini dump may
        // hold); they are skipped to the first segment the GC owns.
        let mut missing: Vec<u64> = Vec::new();
        for g in heaps.iter().flat_map(|h| &h.generations) {
            let mut a = g.start_segment;
            let mut hops = 0;
            while a != 0 && hops < 64 {
                hops += 1;
                let mut raw = [0u8; 0x40];
                if m.read_exact(a, &mut raw).is_err() {
                    if !missing.contains(&a) {
                        missing.push(a);
                    }
                    break;
                }
                let f = |off: u64| {
                    let o = off as usize;
                    u64::from_le_bytes(raw[o..o + 8].try_into().unwrap_or([0; 8]))
                };
                if f(sl.flags) & sl.flag_readonly == 0 {
                    // A GC segment's header is in the dump: not the first kind of absence.
                    missing.clear();
                    a = u64::MAX;
                    break;
                }
                a = f(sl.next);
            }
            if a == u64::MAX {
                break;
            }
        }
        if let Some(&segment) = missing.first() {
            return Some(HeapAbsence::Segments {
                segment,
                count: missing.len(),
            });
        }
        let read;
        let heap = match heap {
            Some(h) => h,
            None => {
                read = self.read_gc_heap().ok()?;
                &read
            }
        };
        let holding: Vec<&Segment> = heap
            .segments
            .iter()
            .filter(|s| s.walk_end > s.mem && s.mem != 0 && s.kind != SegmentKind::Frozen)
            .collect();
        let first = holding.first()?;
        holding
            .iter()
            .all(|s| absent(s.mem))
            .then_some(HeapAbsence::Objects {
                segment: first.address,
                mem: first.mem,
                count: holding.len(),
            })
    }
}

impl<M: Memory> Runtime<M> {
    fn gc_read_u64(&self, addr: u64, what: &str) -> Result<u64> {
        self.memory()
            .read_u64(addr)
            .map_err(|_| ClrError::read(what, addr))
    }

    /// The GC's tables (GcDacVars or the GC's sub-descriptor, each heap's generation table):
    /// what names the segments.
    fn read_heap_tables(&self) -> Result<HeapTables> {
        use crate::data::gcvars::{GcHeapVars, ReadGcVars};
        let m = self.memory();
        let v = self.gc_vars()?;
        let max_generation = m
            .read_u32(v.max_generation)
            .map_err(|_| ClrError::read("max_gen", v.max_generation))?;
        let acl = self.layout.alloc_context;
        let read_gens = |table: u64| -> Result<Vec<Generation>> {
            (0..v.generation_count)
                .map(|i| {
                    let g = table + i * v.generation_size;
                    Ok(Generation {
                        address: g,
                        start_segment: self.gc_read_u64(
                            g + v.generation_start_segment,
                            "generation::start_segment",
                        )?,
                        alloc_ptr: self.gc_read_u64(
                            g + v.generation_alloc_context + acl.alloc_ptr,
                            "generation::allocation_context",
                        )?,
                        alloc_limit: self.gc_read_u64(
                            g + v.generation_alloc_context + acl.alloc_limit,
                            "generation::allocation_context",
                        )?,
                    })
                })
                .collect()
        };
        let mode = self.gc_mode();
        let mut heaps = Vec::new();
        match v.heaps {
            GcHeapVars::Workstation {
                generation_table,
                ephemeral_heap_segment,
                alloc_allocated,
                ..
            } => {
                let generations = read_gens(generation_table)?;
                heaps.push(HeapData {
                    address: 0,
                    alloc_allocated: self.gc_read_u64(alloc_allocated, "alloc_allocated")?,
                    ephemeral_heap_segment: self
                        .gc_read_u64(ephemeral_heap_segment, "ephemeral_heap_segment")?,
                    uses_regions: generations[0].start_segment != generations[1].start_segment,
                    generations,
                });
            }
            GcHeapVars::Server {
                n_heaps,
                g_heaps,
                alloc_allocated,
                ephemeral_heap_segment,
                generation_table,
                ..
            } => {
                let n = m
                    .read_i32(n_heaps)
                    .map_err(|_| ClrError::read("gc_heap::n_heaps", n_heaps))?;
                if n <= 0 || n as usize > MAX_HEAPS {
                    return Err(ClrError::corrupt(
                        "gc_heap::n_heaps",
                        n_heaps,
                        format!("{n} heaps; expected 1..{MAX_HEAPS}"),
                    ));
                }
                let arr = self.gc_read_u64(g_heaps, "gc_heap::g_heaps")?;
                let field = |off: Option<u64>, name: &str| -> Result<u64> {
                    off.ok_or_else(|| {
                        ClrError::corrupt(
                            "gc_heap field offsets",
                            g_heaps,
                            format!("{name} is missing"),
                        )
                    })
                };
                let (aa_off, eph_off, gt_off) = (
                    field(alloc_allocated, "alloc_allocated")?,
                    field(ephemeral_heap_segment, "ephemeral_heap_segment")?,
                    field(generation_table, "generation_table")?,
                );
                for i in 0..n as u64 {
                    let h = self.gc_read_u64(arr + 8 * i, "g_heaps[i]")?;
                    let generations = read_gens(h + gt_off)?;
                    heaps.push(HeapData {
                        address: h,
                        alloc_allocated: self
                            .gc_read_u64(h + aa_off, "gc_heap::alloc_allocated")?,
                        ephemeral_heap_segment: self
                            .gc_read_u64(h + eph_off, "gc_heap::ephemeral_heap_segment")?,
                        uses_regions: generations[0].start_segment != generations[1].start_segment,
                        generations,
                    });
                }
            }
        }
        Ok((v.dac_vars_version, max_generation, mode, heaps))
    }

    fn read_gc_heap(&self) -> Result<GcHeap> {
        let m = self.memory();
        let (dac_vars_version, max_generation, mode, heaps) = self.read_heap_tables()?;
        let acl = self.layout.alloc_context;

        // Allocation contexts: threads, generations, global.
        let mut ctx = Vec::new();
        let mut add = |ptr: u64, limit: u64| {
            if ptr != 0 && limit != 0 && ptr < limit {
                ctx.push(AllocContext { ptr, limit });
            }
        };
        // A damaged thread list costs the contexts of the threads past the damage (the walk
        // then meets their unallocated gaps as errors), not the whole heap.
        let mut notes = Vec::new();
        let (threads, problem) = self.threads_partial();
        if let Some(e) = problem {
            notes.push(format!(
                "allocation contexts of {} threads only: {e}",
                threads.len()
            ));
        }
        for t in threads {
            add(t.alloc_ptr, t.alloc_limit);
        }
        let gac = self.globals.global_alloc_context + self.layout.global_alloc_context_offset;
        add(
            self.gc_read_u64(gac + acl.alloc_ptr, "g_global_alloc_context")?,
            self.gc_read_u64(gac + acl.alloc_limit, "g_global_alloc_context")?,
        );
        for h in &heaps {
            for g in &h.generations {
                add(g.alloc_ptr, g.alloc_limit);
            }
        }
        // Like a dict keyed by ptr: the last one added wins.
        ctx.reverse();
        ctx.sort_by_key(|c| c.ptr);
        ctx.dedup_by_key(|c| c.ptr);

        // Segments.
        let sl = self.layout.heap_segment;
        let mut segments = Vec::new();
        let mut seen = HashSet::new();
        seen.insert(0u64);
        for (hi, h) in heaps.iter().enumerate() {
            let mut order: Vec<usize> = vec![3, 2];
            if h.uses_regions {
                order.extend([1, 0]);
            }
            if h.generations.len() > 4 {
                order.push(4);
            }
            for gen in order {
                let mut sa = h.generations[gen].start_segment;
                let mut via_next = false;
                loop {
                    if !seen.insert(sa) {
                        // A list that returns to a segment already walked is damaged; its
                        // true remainder is unknown, so no heap is better than a short one
                        // that looks complete.
                        if via_next && sa != 0 {
                            return Err(ClrError::corrupt(
                                "heap_segment list",
                                sa,
                                format!(
                                    "heap {hi} generation {gen}: the list returns to this \
                                     segment (a cycle); expected distinct segments ending in 0"
                                ),
                            ));
                        }
                        break;
                    }
                    via_next = true;
                    if segments.len() >= MAX_SEGMENTS {
                        return Err(ClrError::corrupt(
                            "heap_segment chain",
                            sa,
                            format!("more than {MAX_SEGMENTS} segments"),
                        ));
                    }
                    let mut raw = [0u8; 0x40];
                    m.read_exact(sa, &mut raw)
                        .map_err(|_| ClrError::read("heap_segment", sa))?;
                    let f = |off: u64| {
                        let o = off as usize;
                        u64::from_le_bytes(raw[o..o + 8].try_into().unwrap_or([0; 8]))
                    };
                    let (allocated, mem, flags, next) =
                        (f(sl.allocated), f(sl.mem), f(sl.flags), f(sl.next));
                    let is_ephemeral = sa == h.ephemeral_heap_segment;
                    let walk_end = if is_ephemeral {
                        h.alloc_allocated
                    } else {
                        allocated
                    };
                    let kind = if flags & sl.flag_readonly != 0 {
                        SegmentKind::Frozen
                    } else {
                        match gen {
                            3 => SegmentKind::Loh,
                            4 => SegmentKind::Poh,
                            0 if h.uses_regions => SegmentKind::Gen0,
                            1 if h.uses_regions => SegmentKind::Gen1,
                            2 if h.uses_regions => SegmentKind::Gen2,
                            _ if is_ephemeral => SegmentKind::Ephemeral,
                            _ => SegmentKind::Gen2,
                        }
                    };
                    segments.push(Segment {
                        heap: hi,
                        address: sa,
                        generation_list: gen as u8,
                        kind,
                        mem,
                        allocated,
                        committed: f(sl.committed),
                        reserved: f(sl.reserved),
                        used: f(sl.used),
                        flags,
                        next,
                        walk_end,
                        is_ephemeral,
                    });
                    sa = next;
                }
            }
        }
        Ok(GcHeap {
            mode,
            dac_vars_version,
            max_generation,
            heaps,
            segments,
            alloc_contexts: ctx,
            notes,
            free_mt: self.globals.free_mt,
            min_object_size: self.layout.min_object_size,
        })
    }
}

/// GcDacVars version, max_gen, mode, heaps.
type HeapTables = (Option<(u8, u8)>, u32, GcMode, Vec<HeapData>);

/// How a dump shows that it holds no GC heap: the GC's own tables are in it (the runtime's
/// DAC saved them) but the memory they point to is not. The evidence, not a guess from who
/// wrote the dump; [`Runtime::gc_heap_absence`] decides it for every command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum HeapAbsence {
    /// Not one of the segments the generation tables start is in the dump, not even its
    /// heap_segment header (createdump `--triage`): `segment` is the first of `count`.
    Segments {
        /// The first segment's heap_segment address.
        segment: u64,
        /// How many distinct segments the generation tables start.
        count: usize,
    },
    /// The segments' heap_segment headers are in the dump, but not one object of any of them
    /// (createdump `--normal`): `segment`'s first object at `mem` is absent, as are those of
    /// the `count` - 1 other segments holding objects.
    Objects {
        /// The first segment holding objects.
        segment: u64,
        /// Its first object's address.
        mem: u64,
        /// How many segments hold objects.
        count: usize,
    },
    /// The GC's own tables (its globals: `g_gcDacGlobals`' targets, the generation table) are
    /// not in the dump, so neither are the heap's bounds: a dump written without the runtime's
    /// DAC (createdump of a single-file app, which finds no libcoreclr.so). `addr` is the
    /// first of them the read missed.
    Tables {
        /// The first GC global the read found missing.
        addr: u64,
    },
}

impl std::fmt::Display for HeapAbsence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            HeapAbsence::Segments { segment, count } => {
                write!(
                f,
                "the GC heap's segments are not in it (heap_segment at {segment:#x} not in the \
                 dump{})",
                match count {
                    0 | 1 => String::new(),
                    n => format!(", nor any of the {} others the generation tables name", n - 1),
                }
            )
            }
            HeapAbsence::Objects {
                segment,
                mem,
                count,
            } => write!(
                f,
                "the GC heap's objects are not in it (the heap_segment headers are, but the \
                 first object of segment {segment:#x} at {mem:#x} is not in the dump{})",
                match count {
                    0 | 1 => String::new(),
                    n => format!(", nor those of the {} other segments", n - 1),
                }
            ),
            HeapAbsence::Tables { addr } => write!(
                f,
                "the GC's own tables are not in it (the GC global at {addr:#x} is not in the \
                 dump), so the heap cannot be found even where its memory is"
            ),
        }
    }
}

/// What the walk needs to know of a MethodTable, cached per MT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MtSize {
    base: u32,
    comp: u32,
}

/// Whether `mt` passes the heap walk's checks of a MethodTable (not in the GC heap, plausible
/// size fields and class): what the walk accepts as an object's type.
pub fn plausible_method_table<M: Memory>(rt: &Runtime<M>, heap: &GcHeap, mt: u64) -> bool {
    load_mt(rt.memory(), rt.layout, heap, mt).is_ok()
}

/// Reads and checks a MethodTable's size fields. Err = why it is implausible.
fn load_mt<M: Memory>(
    mem: &M,
    rt_layout: &crate::discovery::layout::Layout,
    heap: &GcHeap,
    mt: u64,
) -> crate::Result<MtSize> {
    let free_mt = heap.free_mt;
    if mt == 0 {
        return Err(crate::ClrError::corrupt(
            "MethodTable",
            mt,
            "null MethodTable",
        ));
    }
    // A MethodTable never lies in the GC heap; a heap object whose fields link back to each
    // other (a linked node's next and previous) can pass the class test below.
    if let Some(g) = heap
        .segments
        .iter()
        .find(|g| mt >= g.mem && mt < g.reserved.max(g.allocated))
    {
        return Err(crate::ClrError::corrupt(
            "MethodTable",
            mt,
            format!("it lies in the GC heap (segment {:#x})", g.address),
        ));
    }
    let l = &rt_layout.method_table;
    let mut raw = [0u8; 0x30];
    if mem.read(mt, &mut raw) < raw.len() {
        return Err(crate::ClrError::read("MethodTable", mt));
    }
    let rd32 =
        |o: u64| u32::from_le_bytes(raw[o as usize..o as usize + 4].try_into().unwrap_or([0; 4]));
    let rd64 =
        |o: u64| u64::from_le_bytes(raw[o as usize..o as usize + 8].try_into().unwrap_or([0; 8]));
    let flags = rd32(l.flags);
    let base = rd32(l.base_size);
    let canon = rd64(l.ee_class_or_canon);
    let comp = if flags & mt_flags::HAS_COMPONENT_SIZE != 0 {
        flags & 0xFFFF
    } else {
        0
    };
    if !(0x10..=0x0100_0000).contains(&base) {
        return Err(crate::ClrError::corrupt(
            "MethodTable",
            mt,
            format!("BaseSize {base:#x} is implausible (expected 0x10..0x1000000)"),
        ));
    }
    // The free-object MethodTable is a bare, EEClass-less MT.
    if mt != free_mt {
        if canon & !1 == 0 {
            return Err(crate::ClrError::corrupt(
                "MethodTable",
                mt,
                "null EEClass / canonical MT",
            ));
        }
        check_class_backlink(mem, rt_layout, mt, canon)?;
    }
    Ok(MtSize { base, comp })
}

/// The DAC's own test of a MethodTable (`MethodTable::ValidateWithPossibleAV`, used by
/// `DacValidateMethodTable` on every object it reads): its class's MethodTable is the MT
/// itself, or (a generic instantiation, whose class belongs to the canonical MT) an MT of the
/// same class. A damaged object's MethodTable word rarely passes it: the walk then reports the
/// object instead of taking garbage as a type whose size would swallow the objects behind it.
fn check_class_backlink<M: Memory>(
    mem: &M,
    rt_layout: &crate::discovery::layout::Layout,
    mt: u64,
    ee_class_or_canon: u64,
) -> crate::Result<()> {
    let l = &rt_layout.method_table;
    // GetClass(): the EEClass, through the canonical MT when the word is tagged.
    let class_of = |word: u64| -> Option<u64> {
        if word & 1 == 0 {
            return Some(word);
        }
        let canon = word & !1;
        mem.read_u64(canon.wrapping_add(l.ee_class_or_canon))
            .ok()
            .filter(|w| w & 1 == 0 && *w != 0)
    };
    let bad = |detail: String| Err(crate::ClrError::corrupt("MethodTable", mt, detail));
    let Some(ee) = class_of(ee_class_or_canon).filter(|&e| e != 0) else {
        return bad(format!(
            "its canonical MethodTable ({:#x}) has no EEClass",
            ee_class_or_canon & !1
        ));
    };
    let at = ee.wrapping_add(rt_layout.ee_class.method_table);
    let Ok(back) = mem.read_u64(at) else {
        return bad(format!("its EEClass {ee:#x} is not readable"));
    };
    if back == mt {
        return Ok(());
    }
    let back_class = if back == 0 {
        None
    } else {
        mem.read_u64(back.wrapping_add(l.ee_class_or_canon))
            .ok()
            .and_then(class_of)
    };
    if back_class == Some(ee) {
        return Ok(());
    }
    bad(format!(
        "its EEClass {ee:#x} leads to MethodTable {back:#x}, which is neither it nor of the \
         same class"
    ))
}

/// A small open-addressing map from MethodTable to its size info and census counters.
struct MtCache {
    keys: Vec<u64>,
    vals: Vec<MtEntry>,
    len: usize,
}

#[derive(Debug, Clone, Copy, Default)]
struct MtEntry {
    /// None: implausible MT.
    size: Option<MtSize>,
    /// Whether the walk has taken an object of this MethodTable (not only read it while
    /// resynchronising): evidence for a resynchronisation point.
    seen: bool,
    count: u64,
    bytes: u64,
}

impl MtCache {
    fn new() -> Self {
        MtCache {
            keys: vec![0; 256],
            vals: vec![MtEntry::default(); 256],
            len: 0,
        }
    }

    #[inline]
    fn slot(&self, mt: u64) -> usize {
        let mask = self.keys.len() - 1;
        let mut i = (mt.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & mask;
        loop {
            let k = self.keys[i];
            if k == mt || k == 0 {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// The slot of `mt`, inserting it (with `load()`) when absent. Valid until the next insert.
    #[inline]
    fn index(&mut self, mt: u64, load: impl FnOnce() -> Option<MtSize>) -> usize {
        let i = self.slot(mt);
        if self.keys[i] == mt {
            return i;
        }
        let size = load();
        let i = if (self.len + 1) * 2 > self.keys.len() {
            self.grow();
            self.slot(mt)
        } else {
            i
        };
        self.keys[i] = mt;
        self.vals[i] = MtEntry {
            size,
            count: 0,
            bytes: 0,
            seen: false,
        };
        self.len += 1;
        i
    }

    fn grow(&mut self) {
        let n = self.keys.len() * 2;
        let old_k = std::mem::replace(&mut self.keys, vec![0; n]);
        let old_v = std::mem::replace(&mut self.vals, vec![MtEntry::default(); n]);
        for (k, v) in old_k.into_iter().zip(old_v) {
            if k != 0 {
                let i = self.slot(k);
                self.keys[i] = k;
                self.vals[i] = v;
            }
        }
    }

    fn entries(&self) -> impl Iterator<Item = (u64, &MtEntry)> {
        self.keys
            .iter()
            .zip(self.vals.iter())
            .filter(|(k, _)| **k != 0)
            .map(|(k, v)| (*k, v))
    }
}

const WINDOW: usize = 256 * 1024;

/// Walks one segment, feeding objects and errors to the callbacks. Allocation-free per object.
struct SegmentWalker<'a, M> {
    mem: &'a M,
    layout: &'static crate::discovery::layout::Layout,
    heap: &'a GcHeap,
    seg_index: usize,
    seg: Segment,
    a: u64,
    ctx_i: usize,
    buf: Vec<u8>,
    buf_base: u64,
    buf_len: usize,
    last_slot: usize,
}

enum Step {
    /// The object and its MethodTable's cache slot.
    Object(HeapObject, usize),
    Error(WalkError),
    Done,
}

impl<'a, M: Memory> SegmentWalker<'a, M> {
    fn new(
        mem: &'a M,
        layout: &'static crate::discovery::layout::Layout,
        heap: &'a GcHeap,
        seg_index: usize,
    ) -> Self {
        let seg = heap.segments[seg_index];
        let ctx_i = heap.alloc_contexts.partition_point(|c| c.ptr < seg.mem);
        SegmentWalker {
            mem,
            layout,
            heap,
            seg_index,
            seg,
            a: seg.mem,
            ctx_i,
            buf: Vec::new(),
            buf_base: 0,
            buf_len: 0,
            last_slot: 0,
        }
    }

    /// The 16 bytes at `a` (MT word, component count), from the window.
    #[inline]
    fn header(&mut self, a: u64) -> Option<(u64, u32)> {
        if a < self.buf_base || a + 12 > self.buf_base + self.buf_len as u64 {
            if self.buf.is_empty() {
                self.buf = vec![0u8; WINDOW];
            }
            let want = ((self.seg.walk_end.saturating_sub(a)) + 16).min(WINDOW as u64) as usize;
            let got = self.mem.read(a, &mut self.buf[..want]);
            self.buf_base = a;
            self.buf_len = got;
            if got < 12 {
                return None;
            }
        }
        let o = (a - self.buf_base) as usize;
        let b = &self.buf[o..o + 12];
        let mt = u64::from_le_bytes(b[0..8].try_into().ok()?);
        let cnt = u32::from_le_bytes(b[8..12].try_into().ok()?);
        Some((mt, cnt))
    }

    fn error(&mut self, kind: WalkErrorKind, mt: u64, detail: String, cache: &mut MtCache) -> Step {
        let at = self.a;
        let resume = self.resync(at + 8, u64::MAX, cache);
        let skipped = resume.unwrap_or(self.seg.walk_end).saturating_sub(at);
        self.a = resume.unwrap_or(self.seg.walk_end);
        Step::Error(WalkError {
            address: at,
            segment: self.seg.address,
            kind,
            mt,
            detail,
            skipped,
        })
    }

    /// The size of the object at `p` when its header names a valid MethodTable (one the walk
    /// has seen, or one that passes [`load_mt`]'s checks now) and the object fits in the
    /// segment; None otherwise. A MethodTable found valid here joins the cache; an invalid
    /// word does not (a damaged region must not fill the cache with garbage).
    fn object_size_at(&mut self, p: u64, cache: &mut MtCache) -> Option<u64> {
        let end = self.seg.walk_end;
        let (w, cnt) = self.header(p)?;
        let mt = method_table_of(w);
        if mt == 0 || mt & 7 != 0 {
            return None;
        }
        let i = cache.slot(mt);
        let s = if cache.keys[i] == mt {
            cache.vals[i].size?
        } else {
            let s = load_mt(self.mem, self.layout, self.heap, mt).ok()?;
            cache.index(mt, || Some(s));
            s
        };
        let size = align8(s.base as u64 + s.comp as u64 * cnt as u64);
        let is_free = mt == self.heap.free_mt;
        (size >= self.heap.min_object_size || is_free)
            .then_some(size.max(8))
            .filter(|&size| p + size <= end)
    }

    /// Whether an object may start at `q`: the walk's end, an allocation context's start, or a
    /// header naming a valid MethodTable.
    fn object_may_start_at(&mut self, q: u64, cache: &mut MtCache) -> bool {
        q == self.seg.walk_end
            || self
                .heap
                .alloc_contexts
                .binary_search_by_key(&q, |c| c.ptr)
                .is_ok()
            || self.object_size_at(q, cache).is_some()
    }

    /// Whether the walk has taken an object of the MethodTable named at `p`.
    fn seen_at(&mut self, p: u64, cache: &MtCache) -> bool {
        let Some((w, _)) = self.header(p) else {
            return false;
        };
        let mt = method_table_of(w);
        let i = cache.slot(mt);
        cache.keys[i] == mt && cache.vals[i].seen
    }

    /// Looks for the first address from `from` (below `limit`) where an object starts again
    /// after damage; the walk resumes there. A candidate is a header naming a valid
    /// MethodTable ([`load_mt`]: plausible sizes, and its class leads back to it) whose object
    /// fits in the segment ([`Self::object_size_at`]). The evidence for one is that its type
    /// is one the walk has taken objects of (*seen*) and that its end is where an object may
    /// start (*proven*: the walk's end, an allocation context or another candidate).
    ///
    /// A candidate with both wins at once. Otherwise, once the scan has passed the end of the
    /// first candidate, the one with the most evidence among those that start inside it wins
    /// (the earliest of equals): a damaged object's field may hold a MethodTable pointer (a
    /// `RuntimeType`'s handle) whose type's size happens to end where a real object does, and
    /// a real object next to further damage has no valid successor.
    fn resync(&mut self, from: u64, limit: u64, cache: &mut MtCache) -> Option<u64> {
        let end = self.seg.walk_end.min(limit);
        let mut p = align8(from);
        // The best candidate starting inside the first one (the most evidence, the earliest
        // of equals), and the first one's end.
        let mut best: Option<(u64, u8)> = None;
        let mut first_end = u64::MAX;
        while p + 12 <= end {
            if p >= first_end {
                break;
            }
            if self.header(p).is_none() {
                if best.is_some() {
                    break;
                }
                // Unreadable here: skip to the next page.
                p = (p | 0xFFF) + 1;
                continue;
            }
            if let Some(size) = self.object_size_at(p, cache) {
                let seen = self.seen_at(p, cache);
                let proven = self.object_may_start_at(p + size, cache);
                if seen && proven {
                    return Some(p);
                }
                let evidence = seen as u8 + proven as u8;
                match best {
                    None => {
                        first_end = p + size;
                        best = Some((p, evidence));
                    }
                    Some((_, e)) if evidence > e => best = Some((p, evidence)),
                    Some(_) => {}
                }
            }
            p += 8;
        }
        best.map(|(a, _)| a)
    }

    #[inline]
    fn next(&mut self, cache: &mut MtCache) -> Step {
        let end = self.seg.walk_end;
        let ctxs = &self.heap.alloc_contexts;
        while self.a < end {
            let a = self.a;
            while self.ctx_i < ctxs.len() && ctxs[self.ctx_i].ptr < a {
                self.ctx_i += 1;
            }
            if self.ctx_i < ctxs.len() && ctxs[self.ctx_i].ptr == a {
                self.a = ctxs[self.ctx_i].limit + self.heap.min_object_size;
                continue;
            }
            let Some((raw_mt, cnt)) = self.header(a) else {
                let skipped = end - a;
                self.a = end;
                return Step::Error(WalkError {
                    address: a,
                    segment: self.seg.address,
                    kind: WalkErrorKind::MemoryAbsent,
                    mt: 0,
                    detail: "object header not in the dump; rest of the segment skipped".into(),
                    skipped,
                });
            };
            let mt = method_table_of(raw_mt);
            let (mem, layout, heap) = (self.mem, self.layout, self.heap);
            let slot = if cache.keys.get(self.last_slot) == Some(&mt) {
                self.last_slot
            } else {
                cache.index(mt, || load_mt(mem, layout, heap, mt).ok())
            };
            self.last_slot = slot;
            let Some(s) = cache.vals[slot].size else {
                let why = load_mt(mem, layout, heap, mt)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                return self.error(WalkErrorKind::BadMethodTable, mt, why, cache);
            };
            let size = align8(s.base as u64 + s.comp as u64 * cnt as u64);
            let is_free = mt == self.heap.free_mt;
            if (size < self.heap.min_object_size && !is_free) || a + size > end {
                let detail = format!(
                    "size {size:#x} (BaseSize {:#x} + {cnt} x {}) {}",
                    s.base,
                    s.comp,
                    if a + size > end {
                        format!("runs past the walk end {end:#x}")
                    } else {
                        "is below the minimum object size".to_string()
                    }
                );
                return self.error(WalkErrorKind::BadSize, mt, detail, cache);
            }
            let size = size.max(8);
            // An array or string whose end is not where an object may start: its count may be
            // damaged. When an object is proven to start inside it, it is reported (with what
            // it would have swallowed) and the walk resumes there; else the damage is the next
            // object's, reported in its turn.
            if s.comp != 0 && !self.object_may_start_at(a + size, cache) {
                if let Some(p) = self.resync(a + self.heap.min_object_size, a + size, cache) {
                    self.a = p;
                    return Step::Error(WalkError {
                        address: a,
                        segment: self.seg.address,
                        kind: WalkErrorKind::BadSize,
                        mt,
                        detail: format!(
                            "size {size:#x} ({cnt} elements) runs over an object proven to \
                             start at {p:#x} (its end {:#x} starts no object): the count is \
                             damaged",
                            a + size
                        ),
                        skipped: p - a,
                    });
                }
            }
            self.a = a + size;
            // The checks above may have grown the cache: the slot is looked up again.
            let slot = if cache.keys[slot] == mt {
                slot
            } else {
                cache.slot(mt)
            };
            cache.vals[slot].seen = true;
            return Step::Object(
                HeapObject {
                    address: a,
                    mt,
                    size,
                    segment: self.seg_index,
                    kind: self.seg.kind,
                    is_free,
                },
                slot,
            );
        }
        Step::Done
    }
}

impl GcHeap {
    /// Iterates every object (free ones included, flagged) in segment order, sequentially.
    /// Errors met are kept in [`ObjectIter::errors`].
    pub fn objects<'a, M: Memory>(&'a self, rt: &'a Runtime<M>) -> ObjectIter<'a, M> {
        ObjectIter {
            rt,
            heap: self,
            seg: 0,
            walker: None,
            cache: MtCache::new(),
            errors: Vec::new(),
        }
    }

    /// Calls `visit` for every object (free ones included) of segment `index`; returns the
    /// errors met. For parallel visits over all segments use [`GcHeap::par_visit`].
    pub fn visit_segment<M: Memory>(
        &self,
        rt: &Runtime<M>,
        index: usize,
        mut visit: impl FnMut(&HeapObject),
    ) -> Vec<WalkError> {
        let mut cache = MtCache::new();
        let mut w = SegmentWalker::new(rt.memory(), rt.layout, self, index);
        let mut errors = Vec::new();
        loop {
            match w.next(&mut cache) {
                Step::Object(o, _) => visit(&o),
                Step::Error(e) => errors.push(e),
                Step::Done => break,
            }
        }
        errors
    }

    /// Visits every segment in parallel: `init` makes one accumulator per segment, `visit` feeds
    /// it objects; the accumulators come back in segment order with each segment's errors.
    pub fn par_visit<M, A, I, V>(
        &self,
        rt: &Runtime<M>,
        init: I,
        visit: V,
    ) -> Vec<(A, Vec<WalkError>)>
    where
        M: Memory,
        A: Send,
        I: Fn(&Segment) -> A + Sync,
        V: Fn(&mut A, &HeapObject) + Sync,
    {
        (0..self.segments.len())
            .into_par_iter()
            .map(|i| {
                let mut acc = init(&self.segments[i]);
                let errs = self.visit_segment(rt, i, |o| visit(&mut acc, o));
                (acc, errs)
            })
            .collect()
    }

    /// The census by MethodTable, walking segments in parallel with a per-MT cache.
    pub fn census<M: Memory>(&self, rt: &Runtime<M>) -> Census {
        self.census_observed(rt, &|_| true)
    }

    /// Bytes of heap a full walk covers (each segment from its start to its walk end), for
    /// progress reports.
    pub fn walk_bytes(&self) -> u64 {
        self.segments
            .iter()
            .map(|s| s.walk_end.saturating_sub(s.mem))
            .sum()
    }

    /// [`GcHeap::census`], telling `progress` the bytes of each segment walked (from any
    /// thread). When `progress` returns false the segments not yet started are skipped and
    /// the census is partial: [`Census::stopped`] says so.
    pub fn census_observed<M: Memory>(
        &self,
        rt: &Runtime<M>,
        progress: &(dyn Fn(u64) -> bool + Sync),
    ) -> Census {
        let stop = std::sync::atomic::AtomicBool::new(false);
        struct Acc {
            cache: MtCache,
            stat: SegmentStat,
            errors: Vec<WalkError>,
            walked: bool,
        }
        let per_seg: Vec<Acc> = (0..self.segments.len())
            .into_par_iter()
            .map(|i| {
                let mut cache = MtCache::new();
                let mut stat = SegmentStat {
                    address: self.segments[i].address,
                    ..Default::default()
                };
                let mut errors = Vec::new();
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    return Acc {
                        cache,
                        stat,
                        errors,
                        walked: false,
                    };
                }
                let mut w = SegmentWalker::new(rt.memory(), rt.layout, self, i);
                loop {
                    match w.next(&mut cache) {
                        Step::Object(o, slot) => {
                            if o.is_free {
                                stat.free_objects += 1;
                                stat.free_bytes += o.size;
                            } else {
                                stat.objects += 1;
                                stat.bytes += o.size;
                                let e = &mut cache.vals[slot];
                                e.count += 1;
                                e.bytes += o.size;
                            }
                        }
                        Step::Error(e) => errors.push(e),
                        Step::Done => break,
                    }
                }
                let seg = &self.segments[i];
                if !progress(seg.walk_end.saturating_sub(seg.mem)) {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                Acc {
                    cache,
                    stat,
                    errors,
                    walked: true,
                }
            })
            .collect();
        let mut types: std::collections::HashMap<u64, TypeStat> = Default::default();
        let mut census = Census {
            types: Vec::new(),
            total_objects: 0,
            total_size: 0,
            free_objects: 0,
            free_size: 0,
            by_segment_kind: BTreeMap::new(),
            segments: Vec::new(),
            errors: Vec::new(),
            skipped_bytes: 0,
            stopped: per_seg.iter().any(|a| !a.walked),
        };
        for (i, acc) in per_seg.into_iter().enumerate() {
            for (mt, e) in acc.cache.entries() {
                if e.count > 0 {
                    let t = types.entry(mt).or_insert(TypeStat {
                        mt,
                        count: 0,
                        total_size: 0,
                    });
                    t.count += e.count;
                    t.total_size += e.bytes;
                }
            }
            let k = census
                .by_segment_kind
                .entry(self.segments[i].kind.name().to_string())
                .or_default();
            k.segments += 1;
            k.objects += acc.stat.objects;
            k.bytes += acc.stat.bytes;
            census.total_objects += acc.stat.objects;
            census.total_size += acc.stat.bytes;
            census.free_objects += acc.stat.free_objects;
            census.free_size += acc.stat.free_bytes;
            census.segments.push(acc.stat);
            census.skipped_bytes += acc.errors.iter().map(|e| e.skipped).sum::<u64>();
            census.errors.extend(acc.errors);
        }
        census.types = types.into_values().collect();
        census.types.sort_by(|a, b| {
            b.total_size
                .cmp(&a.total_size)
                .then(b.count.cmp(&a.count))
                .then(a.mt.cmp(&b.mt))
        });
        census
    }
}

/// A sequential iterator over the heap's objects (see [`GcHeap::objects`]).
pub struct ObjectIter<'a, M> {
    rt: &'a Runtime<M>,
    heap: &'a GcHeap,
    seg: usize,
    walker: Option<SegmentWalker<'a, M>>,
    cache: MtCache,
    errors: Vec<WalkError>,
}

impl<M> ObjectIter<'_, M> {
    /// The bad places met so far.
    pub fn errors(&self) -> &[WalkError] {
        &self.errors
    }
}

impl<M: Memory> Iterator for ObjectIter<'_, M> {
    type Item = HeapObject;

    fn next(&mut self) -> Option<HeapObject> {
        loop {
            if self.walker.is_none() {
                if self.seg >= self.heap.segments.len() {
                    return None;
                }
                let w = SegmentWalker::new(self.rt.memory(), self.rt.layout, self.heap, self.seg);
                // Keep the window buffer of the previous walker.
                self.walker = Some(w);
            }
            let w = self.walker.as_mut()?;
            match w.next(&mut self.cache) {
                Step::Object(o, _) => return Some(o),
                Step::Error(e) => self.errors.push(e),
                Step::Done => {
                    self.walker = None;
                    self.seg += 1;
                }
            }
        }
    }
}

/// A heap walk's progress, reported every 4096 objects with the bytes walked since the last
/// report (what the walks over [`GcHeap::objects`] hand their progress callback).
#[derive(Debug, Default)]
pub struct WalkTicks {
    objects: u64,
    bytes: u64,
}

impl WalkTicks {
    /// Counts one object of `size` bytes; on every 4096th, hands `report` the bytes since the
    /// last report and returns its answer (false: the walk is to stop). True otherwise.
    pub fn tick(&mut self, size: u64, report: impl FnOnce(u64) -> bool) -> bool {
        self.objects += 1;
        self.bytes += size;
        if !self.objects.is_multiple_of(4096) {
            return true;
        }
        let bytes = std::mem::take(&mut self.bytes);
        report(bytes)
    }
}
