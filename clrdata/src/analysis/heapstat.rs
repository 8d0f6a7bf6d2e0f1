//! The GC heap in numbers: its heaps and segments with their sizes (`eeheap`), and the objects
//! of a walk counted per type, per string value, free and frozen apart (`dumpheap`), each
//! object that matches handed to the caller as it is met (a listing can hold tens of
//! millions).

use crate::analysis::reach::LiveSet;
pub use crate::analysis::totals::TypeTotal;
use crate::discovery::runtime::{GcMode, Runtime};
use crate::model::heap::{GcHeap, SegmentKind, WalkError};
use crate::model::names::TypeNames;
use crate::model::objects::ObjectReader;
use dumpreader::Memory;
use std::collections::HashMap;

// -------------------------------------------------------------------------------------- eeheap

/// The names of the generations of a heap's generation table, in order.
const GENERATION_NAMES: [&str; 5] = ["gen0", "gen1", "gen2", "loh", "poh"];

/// The GC heaps with their segments' sizes (`eeheap`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeapSizes {
    /// Workstation or server.
    pub mode: GcMode,
    /// Whether a heap uses regions (.NET 7+) rather than segments.
    pub uses_regions: bool,
    /// One per GC heap.
    pub heaps: Vec<HeapSize>,
    /// Bytes from each segment's start to its allocated end, over all heaps.
    pub total_allocated: u64,
    /// Bytes from each segment's start to its committed end, over all heaps.
    pub total_committed: u64,
    /// Problems that did not stop the heap's reading.
    pub notes: Vec<String>,
}

/// One GC heap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeapSize {
    /// Its index.
    pub index: usize,
    /// The gc_heap (0 for workstation).
    pub address: u64,
    /// Its generation table.
    pub generations: Vec<GenerationStart>,
    /// Its segments, in walk order.
    pub segments: Vec<SegmentSize>,
    /// The segments' allocated bytes.
    pub allocated: u64,
    /// The segments' committed bytes.
    pub committed: u64,
}

/// One generation of a heap's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenerationStart {
    /// `gen0`, `gen1`, `gen2`, `loh`, `poh`.
    pub name: String,
    /// Its first segment.
    pub start_segment: u64,
    /// Its allocation context (pointer, limit), when one is open.
    pub allocation_context: Option<(u64, u64)>,
}

/// One segment (region) with its sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentSize {
    /// The heap_segment.
    pub address: u64,
    /// What it holds.
    pub kind: SegmentKind,
    /// Its first object.
    pub begin: u64,
    /// Where its objects end (the walk's end).
    pub allocated: u64,
    /// Its committed end.
    pub committed: u64,
    /// Its reserved end.
    pub reserved: u64,
    /// `allocated - begin`.
    pub allocated_size: u64,
    /// `committed - begin`.
    pub committed_size: u64,
}

/// The heaps of `heap` with their segments' sizes.
pub fn heap_sizes(heap: &GcHeap) -> HeapSizes {
    let mut heaps = Vec::new();
    for (i, h) in heap.heaps.iter().enumerate() {
        let segments: Vec<SegmentSize> = heap
            .segments
            .iter()
            .filter(|sg| sg.heap == i)
            .map(|sg| SegmentSize {
                address: sg.address,
                kind: sg.kind,
                begin: sg.mem,
                allocated: sg.walk_end,
                committed: sg.committed,
                reserved: sg.reserved,
                allocated_size: sg.walk_end.saturating_sub(sg.mem),
                committed_size: sg.committed.saturating_sub(sg.mem),
            })
            .collect();
        heaps.push(HeapSize {
            index: i,
            address: h.address,
            generations: h
                .generations
                .iter()
                .enumerate()
                .map(|(g, gen)| GenerationStart {
                    name: GENERATION_NAMES
                        .get(g)
                        .map_or_else(|| format!("gen{g}"), |n| n.to_string()),
                    start_segment: gen.start_segment,
                    allocation_context: (gen.alloc_ptr != 0)
                        .then_some((gen.alloc_ptr, gen.alloc_limit)),
                })
                .collect(),
            allocated: segments.iter().map(|s| s.allocated_size).sum(),
            committed: segments.iter().map(|s| s.committed_size).sum(),
            segments,
        });
    }
    HeapSizes {
        mode: heap.mode,
        uses_regions: heap.heaps.iter().any(|h| h.uses_regions),
        total_allocated: heaps.iter().map(|h| h.allocated).sum(),
        total_committed: heaps.iter().map(|h| h.committed).sum(),
        heaps,
        notes: heap.notes.clone(),
    }
}

// ------------------------------------------------------------------------------------ dumpheap

/// Which objects a heap walk counts and lists.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeapQuery {
    /// Only types whose name contains this text.
    pub type_filter: Option<String>,
    /// Only objects of this MethodTable.
    pub mt_filter: Option<u64>,
    /// Only objects of this generation (`dumpheap -gen`; a heap of segments is refused by
    /// [`crate::analysis::generations::check_regions`] before the walk).
    pub generation: Option<crate::analysis::generations::Generation>,
    /// Only objects that start in `[start, end)` (`dumpheap <start> [<end>]`).
    pub range: Option<(u64, u64)>,
    /// Only objects of these segments, by index in [`GcHeap::segments`] (`dumpheap -heap`,
    /// `-segment`).
    pub segments: Option<std::collections::BTreeSet<usize>>,
    /// Only objects at least this big.
    pub min: Option<u64>,
    /// Only objects at most this big.
    pub max: Option<u64>,
    /// List at most this many objects (the statistics still count all).
    pub limit: Option<u64>,
    /// Only strings, counted per value too.
    pub strings: bool,
    /// List free objects too (unfiltered walks only).
    pub list_free: bool,
    /// Only the objects reachable from the roots (`live`) or only those that are not
    /// (`-dead`; free space is counted apart as in every walk).
    pub reach: Option<ReachFilter>,
}

/// `dumpheap -live` / `-dead`: the live set, and which side of it is asked for.
#[derive(Debug, Clone)]
pub struct ReachFilter {
    /// The objects the roots keep alive.
    pub set: std::sync::Arc<LiveSet>,
    /// Whether the live objects are asked for (else the dead ones).
    pub live: bool,
}

impl PartialEq for ReachFilter {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.set, &other.set) && self.live == other.live
    }
}

impl Eq for ReachFilter {}

impl HeapQuery {
    /// Whether anything but the whole heap is asked for.
    pub fn filtered(&self) -> bool {
        self.type_filter.is_some()
            || self.mt_filter.is_some()
            || self.generation.is_some()
            || self.range.is_some()
            || self.segments.is_some()
            || self.min.is_some()
            || self.max.is_some()
            || self.strings
            || self.reach.is_some()
    }
}

/// One object of a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedObject {
    /// Its address.
    pub address: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// Its size.
    pub size: u64,
    /// Whether it is free space.
    pub free: bool,
}

/// The strings of one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StringTotal {
    /// Strings of this value.
    pub count: u64,
    /// Their total size.
    pub total_size: u64,
    /// The value (at most 1024 characters).
    pub value: String,
}

/// What a heap walk counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeapStatistics {
    /// Objects that matched beyond the listing's limit (counted, not listed).
    pub not_listed: u64,
    /// Per type, largest total size first (then count, then name).
    pub types: Vec<TypeTotal>,
    /// Per string value, largest total first, when strings were asked for.
    pub strings: Option<Vec<StringTotal>>,
    /// Objects that matched (free ones excluded).
    pub total_objects: u64,
    /// Their size.
    pub total_size: u64,
    /// Free objects (unfiltered walks only); not in the totals.
    pub free_objects: u64,
    /// Their size.
    pub free_size: u64,
    /// Matching objects in frozen (NonGC) segments; in the totals.
    pub frozen_objects: u64,
    /// Their size.
    pub frozen_size: u64,
    /// Where the walk met memory it could not read or a bad object.
    pub errors: Vec<WalkError>,
    /// Problems reading the heap's structure that did not stop the walk.
    pub notes: Vec<String>,
    /// Bytes the errors skipped.
    pub skipped_bytes: u64,
}

/// Why a heap walk stopped before its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalkStop<E> {
    /// The progress callback asked to stop.
    Cancelled,
    /// The listing callback failed.
    Listing(E),
}

/// What receives each listed object.
pub type ListObject<'a, E> = dyn FnMut(&ListedObject) -> Result<(), E> + 'a;

/// Walks the heap for `q`: the statistics, and each matching object (free ones too with
/// `list_free`) given to `list` in heap order. Without a filter nor a listing the walk is the
/// parallel census. `progress` is told the bytes walked, and stops the walk by returning false.
pub fn heap_statistics<M: Memory, E>(
    rt: &Runtime<M>,
    names: &TypeNames,
    heap: &GcHeap,
    q: &HeapQuery,
    progress: &(dyn Fn(u64) -> bool + Sync),
    mut list: Option<&mut ListObject<'_, E>>,
) -> Result<HeapStatistics, WalkStop<E>> {
    let filtered = q.filtered();
    // Free space is counted (apart) by a walk of the whole heap, of one generation, of some
    // segments or of an address range, and by `-dead` alone (free space is no live object:
    // SOS's `-dead` lists it).
    let count_free = q.reach.as_ref().is_none_or(|r| !r.live)
        && !HeapQuery {
            reach: None,
            generation: None,
            range: None,
            segments: None,
            ..q.clone()
        }
        .filtered();
    // The generation, the segments and the address range choose where to look: free space
    // there is counted.
    let in_generation = |kind: SegmentKind, segment: usize, addr: u64| {
        q.generation
            .is_none_or(|g| crate::analysis::generations::Generation::of_kind(kind) == Some(g))
            && q.segments.as_ref().is_none_or(|s| s.contains(&segment))
            && q.range
                .is_none_or(|(start, end)| start <= addr && addr < end)
    };
    // Which MethodTables pass the type filter (decided once per MethodTable).
    let mut type_ok: HashMap<u64, bool> = HashMap::new();
    let mut pass = |addr: u64, mt: u64, size: u64, kind: SegmentKind, segment: usize| -> bool {
        if !in_generation(kind, segment, addr) {
            return false;
        }
        if q.reach
            .as_ref()
            .is_some_and(|r| r.set.is_live(addr) != r.live)
        {
            return false;
        }
        if q.mt_filter.is_some_and(|f| f != mt)
            || q.min.is_some_and(|v| size < v)
            || q.max.is_some_and(|v| size > v)
        {
            return false;
        }
        if q.strings && mt != rt.globals.string_mt {
            return false;
        }
        match &q.type_filter {
            None => true,
            Some(t) => *type_ok
                .entry(mt)
                .or_insert_with(|| names.name_or_note(rt, mt).contains(t.as_str())),
        }
    };

    let mut stats: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut listed = 0u64;
    let mut not_listed = 0u64;
    let (mut free_objects, mut free_size, mut frozen_objects, mut frozen_size) = (0, 0, 0, 0);
    let mut string_stats: HashMap<String, (u64, u64)> = HashMap::new();

    let errors = if !filtered && list.is_none() {
        // The plain -stat: the parallel census.
        let census = heap.census_observed(rt, progress);
        if census.stopped {
            return Err(WalkStop::Cancelled);
        }
        for t in &census.types {
            stats.insert(t.mt, (t.count, t.total_size));
        }
        free_objects = census.free_objects;
        free_size = census.free_size;
        if let Some(k) = census.by_segment_kind.get(SegmentKind::Frozen.name()) {
            frozen_objects = k.objects;
            frozen_size = k.bytes;
        }
        census.errors
    } else {
        let strings_reader = ObjectReader::new(rt, names);
        let mut it = heap.objects(rt);
        let mut ticks = crate::model::heap::WalkTicks::default();
        for o in it.by_ref() {
            if !ticks.tick(o.size, progress) {
                return Err(WalkStop::Cancelled);
            }
            if o.is_free {
                if count_free && in_generation(o.kind, o.segment, o.address) {
                    free_objects += 1;
                    free_size += o.size;
                    if q.list_free {
                        if let Some(f) = list.as_mut() {
                            f(&ListedObject {
                                address: o.address,
                                mt: o.mt,
                                size: o.size,
                                free: true,
                            })
                            .map_err(WalkStop::Listing)?;
                        }
                    }
                }
                continue;
            }
            if !pass(o.address, o.mt, o.size, o.kind, o.segment) {
                continue;
            }
            let e = stats.entry(o.mt).or_default();
            e.0 += 1;
            e.1 += o.size;
            if o.kind == SegmentKind::Frozen {
                frozen_objects += 1;
                frozen_size += o.size;
            }
            if q.strings {
                if let Ok((v, _)) = strings_reader.string_value(o.address, 1024) {
                    let e = string_stats.entry(v).or_default();
                    e.0 += 1;
                    e.1 += o.size;
                }
            }
            if let Some(f) = list.as_mut() {
                if q.limit.is_some_and(|l| listed >= l) {
                    not_listed += 1;
                } else {
                    listed += 1;
                    f(&ListedObject {
                        address: o.address,
                        mt: o.mt,
                        size: o.size,
                        free: false,
                    })
                    .map_err(WalkStop::Listing)?;
                }
            }
        }
        it.errors().to_vec()
    };

    let types = crate::analysis::totals::type_totals(rt, names, &stats);
    let strings = q.strings.then(|| {
        let mut v: Vec<StringTotal> = string_stats
            .into_iter()
            .map(|(value, (count, total_size))| StringTotal {
                count,
                total_size,
                value,
            })
            .collect();
        v.sort_by(|a, b| b.total_size.cmp(&a.total_size).then(a.value.cmp(&b.value)));
        v
    });
    Ok(HeapStatistics {
        total_objects: types.iter().map(|t| t.count).sum(),
        total_size: types.iter().map(|t| t.total_size).sum(),
        not_listed,
        types,
        strings,
        free_objects,
        free_size,
        frozen_objects,
        frozen_size,
        skipped_bytes: errors.iter().map(|e| e.skipped).sum(),
        errors,
        notes: heap.notes.clone(),
    })
}
