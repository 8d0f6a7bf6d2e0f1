//! The GC heap by generation, as SOS counts it: per heap and generation the bytes allocated,
//! free, unreachable and committed (`gcheapstat`), the objects' sizes as a histogram
//! (`sizestats`), and the objects of one generation (`dumpgen`, `dumpheap -gen`).
//!
//! A region (.NET 7+) belongs to one generation, so each object's generation is its region's.
//! A heap of segments keeps generations 0 and 1 (and the start of 2) in its ephemeral segment,
//! split by each generation's allocation start, which is not read: such a heap is refused
//! ([`ClrError::Unsupported`]), never guessed.

use crate::analysis::reach::LiveSet;
use crate::discovery::runtime::Runtime;
use crate::error::ClrError;
use crate::model::heap::{GcHeap, HeapObject, SegmentKind, WalkError};
use dumpreader::Memory;
use serde::Serialize;
use std::collections::BTreeMap;

/// A generation as SOS names them: gen0, gen1, gen2, the large, pinned and frozen object heaps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Generation {
    /// Generation 0.
    Gen0,
    /// Generation 1.
    Gen1,
    /// Generation 2.
    Gen2,
    /// The large object heap.
    Loh,
    /// The pinned object heap.
    Poh,
    /// The frozen (NonGC) segments: string literals, RuntimeType objects.
    Frozen,
}

impl Generation {
    /// Every generation, in SOS's column order.
    pub const ALL: [Generation; 6] = [
        Generation::Gen0,
        Generation::Gen1,
        Generation::Gen2,
        Generation::Loh,
        Generation::Poh,
        Generation::Frozen,
    ];

    /// Its index in [`Generation::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The short name SOS's `dumpgen` takes: gen0 gen1 gen2 loh poh foh.
    pub fn name(self) -> &'static str {
        match self {
            Generation::Gen0 => "gen0",
            Generation::Gen1 => "gen1",
            Generation::Gen2 => "gen2",
            Generation::Loh => "loh",
            Generation::Poh => "poh",
            Generation::Frozen => "foh",
        }
    }

    /// A generation as SOS's `dumpgen` and `dumpheap -gen` spell it, without regard to case:
    /// gen0 gen1 gen2 loh poh foh, and `dumpheap -gen`'s large, pinned and frozen.
    pub fn parse(word: &str) -> Option<Generation> {
        Some(match word.to_ascii_lowercase().as_str() {
            "gen0" => Generation::Gen0,
            "gen1" => Generation::Gen1,
            "gen2" => Generation::Gen2,
            "loh" | "large" => Generation::Loh,
            "poh" | "pinned" => Generation::Poh,
            "foh" | "frozen" => Generation::Frozen,
            _ => return None,
        })
    }

    /// The generation of every object of a segment of `kind`; None for a segments-mode
    /// ephemeral segment (gens 0, 1 and part of 2, split where this build does not read).
    pub fn of_kind(kind: SegmentKind) -> Option<Generation> {
        Some(match kind {
            SegmentKind::Gen0 => Generation::Gen0,
            SegmentKind::Gen1 => Generation::Gen1,
            SegmentKind::Gen2 => Generation::Gen2,
            SegmentKind::Loh => Generation::Loh,
            SegmentKind::Poh => Generation::Poh,
            SegmentKind::Frozen => Generation::Frozen,
            SegmentKind::Ephemeral => return None,
        })
    }
}

/// Refuses a heap with an ephemeral segment (see the module's text).
pub fn check_regions(heap: &GcHeap) -> Result<(), ClrError> {
    match heap
        .segments
        .iter()
        .find(|s| s.kind == SegmentKind::Ephemeral)
    {
        None => Ok(()),
        Some(s) => Err(ClrError::Unsupported {
            what: "an object's generation in the ephemeral segment".into(),
            detail: "this heap uses segments (not regions): generations 0 and 1 share the \
                     ephemeral segment, split at allocation starts this build does not read"
                .into(),
            addr: Some(s.address),
        }),
    }
}

/// The generation of a walked object (the heap was checked by [`check_regions`]).
pub fn generation_of(o: &HeapObject) -> Option<Generation> {
    Generation::of_kind(o.kind)
}

/// One generation's bytes on one heap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct GenerationSpace {
    /// Bytes from each of its segments' first object to where their objects end.
    pub allocated: u64,
    /// Bytes of free objects.
    pub free: u64,
    /// Bytes of (non-free) objects no root keeps alive, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unrooted: Option<u64>,
    /// Bytes from each of its regions' start ([`crate::Segment::region_start`]) to its
    /// committed end.
    pub committed: u64,
}

/// One GC heap's generations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapGenerations {
    /// The heap's index.
    pub index: usize,
    /// Indexed by [`Generation::index`].
    pub generations: [GenerationSpace; 6],
}

/// What `gcheapstat` shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcHeapStat {
    /// One per GC heap.
    pub heaps: Vec<HeapGenerations>,
    /// Where the walk met memory it could not read or a bad object (their bytes are in no
    /// count).
    pub errors: Vec<WalkError>,
}

/// Why a walk of this module stopped.
#[derive(Debug, Clone)]
pub enum GenerationStop {
    /// The progress callback asked to stop.
    Cancelled,
    /// The heap cannot be split by generation.
    Refused(ClrError),
}

/// Walks the heap sequentially, telling `progress` the bytes walked (false stops the walk),
/// handing `visit` each object with its generation.
fn walk<M: Memory>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    progress: &dyn Fn(u64) -> bool,
    mut visit: impl FnMut(&HeapObject, Generation),
) -> Result<Vec<WalkError>, GenerationStop> {
    check_regions(heap).map_err(GenerationStop::Refused)?;
    let mut it = heap.objects(rt);
    let mut ticks = crate::model::heap::WalkTicks::default();
    for o in it.by_ref() {
        if !ticks.tick(o.size, progress) {
            return Err(GenerationStop::Cancelled);
        }
        if let Some(g) = generation_of(&o) {
            visit(&o, g);
        }
    }
    Ok(it.errors().to_vec())
}

/// Each heap's generations: allocated and committed bytes of their segments, the free
/// objects' bytes and, with `live`, the bytes of objects it does not hold.
pub fn gc_heap_stat<M: Memory>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    live: Option<&LiveSet>,
    progress: &dyn Fn(u64) -> bool,
) -> Result<GcHeapStat, GenerationStop> {
    let mut heaps: Vec<HeapGenerations> = (0..heap.heaps.len().max(1))
        .map(|index| HeapGenerations {
            index,
            generations: [GenerationSpace {
                unrooted: live.map(|_| 0),
                ..GenerationSpace::default()
            }; 6],
        })
        .collect();
    for s in &heap.segments {
        let (Some(g), Some(h)) = (Generation::of_kind(s.kind), heaps.get_mut(s.heap)) else {
            continue;
        };
        let space = &mut h.generations[g.index()];
        space.allocated += s.walk_end.saturating_sub(s.mem);
        space.committed += s.committed.saturating_sub(s.region_start());
    }
    let errors = walk(rt, heap, progress, |o, g| {
        let Some(h) = heap
            .segments
            .get(o.segment)
            .and_then(|s| heaps.get_mut(s.heap))
        else {
            return;
        };
        let space = &mut h.generations[g.index()];
        if o.is_free {
            space.free += o.size;
        } else if let (Some(set), Some(u)) = (live, space.unrooted.as_mut()) {
            if !set.is_live(o.address) {
                *u += o.size;
            }
        }
    })?;
    Ok(GcHeapStat { heaps, errors })
}

/// One histogram of `sizestats`: object sizes (rounded up to 8 bytes) with their counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SizeHistogram {
    /// The generation.
    pub generation: Generation,
    /// Whether it counts free objects (else the others).
    pub free: bool,
    /// Size -> objects of that size, smallest first.
    pub sizes: Vec<(u64, u64)>,
}

/// What `sizestats` shows: SOS's histograms in SOS's order (the objects of gen0, gen1, gen2,
/// the LOH, the POH when the heap has one, the frozen segments when there are some; then the
/// free objects of gen0, gen1, gen2, the LOH and the POH when there is one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeStats {
    /// The histograms.
    pub histograms: Vec<SizeHistogram>,
    /// Where the walk met memory it could not read or a bad object.
    pub errors: Vec<WalkError>,
}

/// The size histograms of the heap's objects per generation, live and free apart.
pub fn size_stats<M: Memory>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    progress: &dyn Fn(u64) -> bool,
) -> Result<SizeStats, GenerationStop> {
    let mut counts: BTreeMap<(Generation, bool), BTreeMap<u64, u64>> = BTreeMap::new();
    let errors = walk(rt, heap, progress, |o, g| {
        *counts
            .entry((g, o.is_free))
            .or_default()
            .entry(o.size.div_ceil(8) * 8)
            .or_default() += 1;
    })?;
    let has = |k: SegmentKind| heap.segments.iter().any(|s| s.kind == k);
    let (poh, frozen) = (has(SegmentKind::Poh), has(SegmentKind::Frozen));
    let mut order: Vec<(Generation, bool)> = Vec::new();
    for free in [false, true] {
        order.extend(
            [
                Generation::Gen0,
                Generation::Gen1,
                Generation::Gen2,
                Generation::Loh,
            ]
            .map(|g| (g, free)),
        );
        if poh {
            order.push((Generation::Poh, free));
        }
        if frozen && !free {
            order.push((Generation::Frozen, free));
        }
    }
    let histograms = order
        .into_iter()
        .map(|(generation, free)| SizeHistogram {
            generation,
            free,
            sizes: counts
                .remove(&(generation, free))
                .unwrap_or_default()
                .into_iter()
                .collect(),
        })
        .collect();
    Ok(SizeStats { histograms, errors })
}

/// The objects of one generation (free ones included) handed to `visit` in heap order; the
/// walk's errors.
pub fn generation_objects<M: Memory>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    generation: Generation,
    progress: &dyn Fn(u64) -> bool,
    mut visit: impl FnMut(&HeapObject),
) -> Result<Vec<WalkError>, GenerationStop> {
    walk(rt, heap, progress, |o, g| {
        if g == generation {
            visit(o)
        }
    })
}

/// The generation of any address on the heap: its region's (the heap was checked by
/// [`check_regions`]), by binary search over the segments.
struct GenerationMap {
    /// `(start, end, generation)`, sorted by start.
    ranges: Vec<(u64, u64, Generation)>,
}

impl GenerationMap {
    fn new(heap: &GcHeap) -> GenerationMap {
        let mut ranges: Vec<(u64, u64, Generation)> = heap
            .segments
            .iter()
            .filter_map(|s| Generation::of_kind(s.kind).map(|g| (s.mem, s.walk_end, g)))
            .collect();
        ranges.sort_by_key(|r| r.0);
        GenerationMap { ranges }
    }

    fn of(&self, addr: u64) -> Option<Generation> {
        let i = self.ranges.partition_point(|r| r.0 <= addr);
        let r = self.ranges.get(i.checked_sub(1)?)?;
        (addr < r.1).then_some(r.2)
    }
}

/// One older object's references to younger objects of one generation (a row of SOS's
/// `ephrefs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EphemeralRefs {
    /// The older object.
    pub object: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// Its size (unaligned, as SOS's dumpheap).
    pub size: u64,
    /// Its generation (gen1, gen2, LOH or POH).
    pub object_generation: Generation,
    /// The younger objects' generation: gen0, or gen1 (for an object of gen2, LOH or POH).
    pub reference_generation: Generation,
    /// Its references to objects of that generation (one object referenced twice: 2).
    pub count: u64,
    /// The sizes of the objects referenced, once per reference.
    pub bytes: u64,
}

/// `ephrefs`: the objects of older generations that reference objects of younger ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EphemeralReferences {
    /// By (object generation, reference generation), then by address.
    pub rows: Vec<EphemeralRefs>,
    /// Distinct younger objects referenced.
    pub referenced: u64,
    /// Their total size (each once).
    pub referenced_bytes: u64,
    /// What the heap walk met.
    pub errors: Vec<WalkError>,
}

/// The non-free object at `addr` (its MethodTable readable) and its unaligned size.
fn object_and_size<M: Memory>(
    r: &crate::model::objects::ObjectReader<'_, M>,
    free_mt: u64,
    addr: u64,
) -> Option<(u64, u64)> {
    let (mt, info) = r.object_mt(addr).ok()?;
    if mt == free_mt {
        return None;
    }
    Some((mt, r.raw_size(addr, &info).ok()?))
}

/// `ephrefs` (SOS's FindReferencesToEphemeralCommand): every object of gen1, gen2, the LOH
/// and the POH holding references (dependent handles not counted) to objects of gen0, or
/// (for gen2, LOH and POH objects) of gen1: one row per object and younger generation, with
/// how many references and the referenced objects' bytes. Objects referenced that are no
/// valid object, or free, are skipped, as SOS does.
pub fn ephemeral_references<M: Memory>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    names: &crate::model::names::TypeNames,
    progress: &dyn Fn(u64) -> bool,
) -> Result<EphemeralReferences, GenerationStop> {
    let map = GenerationMap::new(heap);
    let r = crate::model::objects::ObjectReader::new(rt, names);
    let mut rows = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut referenced_bytes = 0u64;
    let errors = walk(rt, heap, progress, |o, g| {
        if o.is_free || matches!(g, Generation::Gen0 | Generation::Frozen) {
            return;
        }
        let Ok(refs) = r.references(o.address) else {
            return;
        };
        if refs.is_empty() {
            return;
        }
        let mut per: [(u64, u64); 2] = [(0, 0); 2];
        for (_, t) in refs {
            let Some(tg) = map.of(t) else { continue };
            let i = match tg {
                Generation::Gen0 => 0,
                Generation::Gen1 if g > Generation::Gen1 => 1,
                _ => continue,
            };
            let Some((_, size)) = object_and_size(&r, heap.free_mt, t) else {
                continue;
            };
            per[i].0 += 1;
            per[i].1 += size;
            if seen.insert(t) {
                referenced_bytes += size;
            }
        }
        for (i, (count, bytes)) in per.into_iter().enumerate() {
            if count > 0 {
                rows.push(EphemeralRefs {
                    object: o.address,
                    mt: o.mt,
                    size: r
                        .object_mt(o.address)
                        .and_then(|(_, info)| r.raw_size(o.address, &info))
                        .unwrap_or(o.size),
                    object_generation: g,
                    reference_generation: [Generation::Gen0, Generation::Gen1][i],
                    count,
                    bytes,
                });
            }
        }
    })?;
    rows.sort_by_key(|x| (x.object_generation, x.reference_generation, x.object));
    Ok(EphemeralReferences {
        rows,
        referenced: seen.len() as u64,
        referenced_bytes,
        errors,
    })
}

/// A reference between an ephemeral (gen0/gen1) object and a large one (`ephtoloh`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapEdge {
    /// The object holding the reference.
    pub from: u64,
    /// Its MethodTable.
    pub from_mt: u64,
    /// The object referenced.
    pub to: u64,
    /// Its MethodTable.
    pub to_mt: u64,
}

/// `ephtoloh`: references from ephemeral objects to the large object heap and back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EphemeralLoh {
    /// Gen0/gen1 objects referencing LOH objects, by (from, to).
    pub ephemeral_to_loh: Vec<HeapEdge>,
    /// LOH objects referencing gen0/gen1 objects, by (from, to).
    pub loh_to_ephemeral: Vec<HeapEdge>,
    /// Ephemeral -> large -> ephemeral: `(ephemeral, large, ephemeral)`, each pair of the
    /// two lists joined on the large object.
    pub round_trips: Vec<(u64, u64, u64)>,
    /// What the heap walk met.
    pub errors: Vec<WalkError>,
}

/// `ephtoloh` (SOS's FindEphemeralReferencesToLOHCommand): the gen0 and gen1 objects
/// referencing objects of the large object heap, the LOH objects referencing gen0 and gen1
/// objects, and the chains through both. (SOS 10.0.750501 reads only gen0 objects for the
/// first list, its test `gen is not Generation0 or Generation1` reading as `(not gen0) or
/// gen1`, and prints only the first chain: here every gen0 and gen1 object, every chain.)
pub fn ephemeral_loh<M: Memory>(
    rt: &Runtime<M>,
    heap: &GcHeap,
    names: &crate::model::names::TypeNames,
    progress: &dyn Fn(u64) -> bool,
) -> Result<EphemeralLoh, GenerationStop> {
    let map = GenerationMap::new(heap);
    let r = crate::model::objects::ObjectReader::new(rt, names);
    let (mut to_loh, mut from_loh) = (Vec::new(), Vec::new());
    let errors = walk(rt, heap, progress, |o, g| {
        let young = matches!(g, Generation::Gen0 | Generation::Gen1);
        if o.is_free || !(young || g == Generation::Loh) {
            return;
        }
        let Ok(refs) = r.references(o.address) else {
            return;
        };
        for (_, t) in refs {
            let Some(tg) = map.of(t) else { continue };
            let wanted = if young {
                tg == Generation::Loh
            } else {
                matches!(tg, Generation::Gen0 | Generation::Gen1)
            };
            if !wanted {
                continue;
            }
            let Some((tmt, _)) = object_and_size(&r, heap.free_mt, t) else {
                continue;
            };
            let e = HeapEdge {
                from: o.address,
                from_mt: o.mt,
                to: t,
                to_mt: tmt,
            };
            if young {
                to_loh.push(e);
            } else {
                from_loh.push(e);
            }
        }
    })?;
    to_loh.sort_by_key(|e| (e.from, e.to));
    from_loh.sort_by_key(|e| (e.from, e.to));
    let mut round_trips = Vec::new();
    for e in &to_loh {
        let i = from_loh.partition_point(|x| x.from < e.to);
        for x in from_loh[i..].iter().take_while(|x| x.from == e.to) {
            round_trips.push((e.from, e.to, x.to));
        }
    }
    Ok(EphemeralLoh {
        ephemeral_to_loh: to_loh,
        loh_to_ephemeral: from_loh,
        round_trips,
        errors,
    })
}
