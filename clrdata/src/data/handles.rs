//! The GC handle table and the finalization queue, read from the GC's own structures.
//!
//! Handles: `GcDacVars::handle_table_map` is the address of `g_HandleTableMap`, a chain of map
//! nodes of 10 buckets each; a bucket holds one `HandleTable*` per heap slot (1 with
//! workstation GC, one per server heap); a table heads a list of 64 KB segments. A segment's
//! 4 KB header says per block of 64 handles its type (`rgBlockType`, 0xFF free, 11 = a
//! user-data block), which handles are free (`rgFreeMask`, a set bit is free) and where the
//! block's user data is (`rgUserData`: the dependent handles' secondary objects, the variable
//! handles' current strength); the handles (`rgValue`, one object pointer each) follow the
//! header. A handle is its slot's address.
//!
//! Finalization: each heap's `CFinalize` keeps one array cut into segments by
//! `m_FillPointers`: segment `i` runs from `m_FillPointers[i-1]` (`m_Array` for 0) to
//! `m_FillPointers[i]`. Segments 0-4 hold the objects registered for finalization per
//! generation (`4 - gen`: POH 0, LOH 1, gen2 2, gen1 3, gen0 4); 5 holds critical finalizable
//! objects found dead, 6 the other dead ones: together the f-reachable queue ("ready for
//! finalization"), which roots its objects until the finalizer thread runs them.

use crate::data::gcvars::{GcHeapVars, ReadGcVars};
use crate::discovery::layout::RootsLayout;
use crate::discovery::runtime::Runtime;
use crate::error::{ClrError, Result};
use dumpreader::Memory;
use serde::Serialize;
use std::collections::HashSet;

/// Bound on map nodes, segments per table and queue entries (corrupt lists must not loop).
const MAX_MAP_NODES: usize = 1024;
const MAX_SEGMENTS_PER_TABLE: usize = 1 << 16;
const MAX_FINALIZER_ENTRIES: u64 = 1 << 26;
const MAX_SLOTS: u64 = 4096;

/// The kind of a GC handle (`HNDTYPE_*`, gcinterface.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HandleKind {
    /// HNDTYPE_WEAK_SHORT (0): `GCHandleType.Weak`.
    WeakShort,
    /// HNDTYPE_WEAK_LONG (1): `GCHandleType.WeakTrackResurrection`.
    WeakLong,
    /// HNDTYPE_STRONG (2): `GCHandleType.Normal`.
    Strong,
    /// HNDTYPE_PINNED (3).
    Pinned,
    /// HNDTYPE_VARIABLE (4): strength in the user data.
    Variable,
    /// HNDTYPE_REFCOUNTED (5): strong while the COM reference count is non-zero.
    RefCounted,
    /// HNDTYPE_DEPENDENT (6): the secondary lives while the primary does.
    Dependent,
    /// HNDTYPE_ASYNCPINNED (7).
    AsyncPinned,
    /// HNDTYPE_SIZEDREF (8).
    SizedRef,
    /// HNDTYPE_WEAK_NATIVE_COM (9).
    WeakNativeCom,
    /// Any other type number.
    Other(u8),
}

impl HandleKind {
    /// From the block type number.
    pub fn from_type(t: u8) -> HandleKind {
        match t {
            0 => HandleKind::WeakShort,
            1 => HandleKind::WeakLong,
            2 => HandleKind::Strong,
            3 => HandleKind::Pinned,
            4 => HandleKind::Variable,
            5 => HandleKind::RefCounted,
            6 => HandleKind::Dependent,
            7 => HandleKind::AsyncPinned,
            8 => HandleKind::SizedRef,
            9 => HandleKind::WeakNativeCom,
            n => HandleKind::Other(n),
        }
    }

    /// The name SOS prints: "strong handle", "weak short handle", ...
    pub fn name(self) -> String {
        match self {
            HandleKind::WeakShort => "weak short handle".into(),
            HandleKind::WeakLong => "weak long handle".into(),
            HandleKind::Strong => "strong handle".into(),
            HandleKind::Pinned => "pinned handle".into(),
            HandleKind::Variable => "variable handle".into(),
            HandleKind::RefCounted => "ref counted handle".into(),
            HandleKind::Dependent => "dependent handle".into(),
            HandleKind::AsyncPinned => "async pinned handle".into(),
            HandleKind::SizedRef => "sized ref handle".into(),
            HandleKind::WeakNativeCom => "weak native COM handle".into(),
            HandleKind::Other(n) => format!("handle of type {n}"),
        }
    }

    /// The short name of `gchandles -stat` ("Strong", "WeakShort", ...).
    pub fn short_name(self) -> String {
        match self {
            HandleKind::Other(n) => format!("Type{n}"),
            k => format!("{k:?}"),
        }
    }
}

/// Strength of a variable handle (`VHT_*` in its user data).
fn variable_strength(user_data: u64) -> Option<HandleKind> {
    match user_data {
        0x100 => Some(HandleKind::WeakShort),
        0x200 => Some(HandleKind::WeakLong),
        0x400 => Some(HandleKind::Strong),
        0x800 => Some(HandleKind::Pinned),
        _ => None,
    }
}

/// One allocated GC handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GcHandle {
    /// The handle (its slot's address: what `GCHandle.ToIntPtr` gives, pinned bit cleared).
    pub address: u64,
    /// Its kind.
    pub kind: HandleKind,
    /// The object it holds (0: none, e.g. a weak handle whose target was collected).
    pub object: u64,
    /// A dependent handle's secondary object (0 otherwise or when none).
    pub secondary: u64,
    /// A variable handle's current strength, decoded from its user data.
    pub variable_kind: Option<HandleKind>,
    /// The heap slot of its table (0 with workstation GC).
    pub heap_slot: u32,
}

impl GcHandle {
    /// Whether the handle keeps its object alive (a GC root): strong, pinned, async pinned,
    /// sized ref, ref counted (its COM count is not read: taken as non-zero, as a live
    /// wrapper's is), and variable handles currently strong or pinned.
    pub fn is_strong(&self) -> bool {
        match self.kind {
            HandleKind::Strong
            | HandleKind::Pinned
            | HandleKind::AsyncPinned
            | HandleKind::SizedRef
            | HandleKind::RefCounted => true,
            HandleKind::Variable => matches!(
                self.variable_kind,
                Some(HandleKind::Strong) | Some(HandleKind::Pinned)
            ),
            _ => false,
        }
    }
}

/// Every allocated handle of every table, with what could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HandleTable {
    /// Allocated handles, in table, segment and slot order (null ones included).
    pub handles: Vec<GcHandle>,
    /// Handle tables read.
    pub tables: usize,
    /// Segments read.
    pub segments: usize,
    /// What could not be read, and where (the rest was still read).
    pub errors: Vec<String>,
}

/// Which part of the finalization queue an entry is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinalizerSegment {
    /// Registered for finalization, object in generation 0.
    Gen0,
    /// ... in generation 1.
    Gen1,
    /// ... in generation 2.
    Gen2,
    /// ... in the large object heap.
    Loh,
    /// ... in the pinned object heap.
    Poh,
    /// Found dead, with a critical finalizer: ready for finalization (f-reachable).
    ReadyCritical,
    /// Found dead: ready for finalization (f-reachable).
    Ready,
}

impl FinalizerSegment {
    /// Whether the entry is on the f-reachable queue (a root until its finalizer runs).
    pub fn is_ready(self) -> bool {
        matches!(
            self,
            FinalizerSegment::ReadyCritical | FinalizerSegment::Ready
        )
    }

    fn from_index(i: usize) -> FinalizerSegment {
        match i {
            0 => FinalizerSegment::Poh,
            1 => FinalizerSegment::Loh,
            2 => FinalizerSegment::Gen2,
            3 => FinalizerSegment::Gen1,
            4 => FinalizerSegment::Gen0,
            5 => FinalizerSegment::ReadyCritical,
            _ => FinalizerSegment::Ready,
        }
    }
}

/// One entry of a finalization queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FinalizerEntry {
    /// The queue slot's address.
    pub slot: u64,
    /// The object.
    pub object: u64,
    /// Which segment of the queue.
    pub segment: FinalizerSegment,
    /// The GC heap.
    pub heap: usize,
}

/// One heap's finalization queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FinalizeQueueHeap {
    /// The heap's index.
    pub heap: usize,
    /// The CFinalize's address.
    pub address: u64,
    /// `(segment, start, end)` slot ranges, in array order.
    pub ranges: Vec<(FinalizerSegment, u64, u64)>,
}

/// The finalization queues of every heap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FinalizeQueue {
    /// Per heap.
    pub heaps: Vec<FinalizeQueueHeap>,
    /// Every entry, heap by heap, in array order.
    pub entries: Vec<FinalizerEntry>,
    /// What could not be read.
    pub errors: Vec<String>,
}

/// Reading the GC handle table and the finalization queue.
pub trait ReadHandles {
    /// The handle tables: `(heap slot, HandleTable*)` of every bucket of `g_HandleTableMap`.
    fn handle_tables(&self) -> Result<Vec<(u32, u64)>>;

    /// Every allocated handle. A table or segment that cannot be read is reported in
    /// [`HandleTable::errors`]; the others are still read.
    fn gc_handles(&self) -> Result<HandleTable>;

    /// The finalization queue of every heap: each registered object, and the f-reachable ones.
    fn finalize_queue(&self) -> Result<FinalizeQueue>;
}

impl<M: Memory> ReadHandles for Runtime<M> {
    fn handle_tables(&self) -> Result<Vec<(u32, u64)>> {
        self.require(crate::discovery::layout::Capability::Roots)?;
        let l = self.rl();
        let slots = self.gc_heap_count()?;
        let mut map = self.gc_vars()?.handle_table_map;
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut nodes = 0;
        while map != 0 {
            nodes += 1;
            if nodes > MAX_MAP_NODES || !seen.insert(map) {
                return Err(ClrError::corrupt(
                    "HandleTableMap chain",
                    map,
                    format!("a cycle or more than {MAX_MAP_NODES} nodes"),
                ));
            }
            let buckets = self.ptr(map + l.map_buckets, "HandleTableMap::pBuckets")?;
            if buckets != 0 {
                for i in 0..l.buckets_per_map {
                    let b = self.ptr(buckets + 8 * i, "HandleTableMap::pBuckets[i]")?;
                    if b == 0 {
                        continue;
                    }
                    let tables = self.ptr(b + l.bucket_table, "HandleTableBucket::pTable")?;
                    if tables == 0 {
                        continue;
                    }
                    for s in 0..slots {
                        let t = self.ptr(tables + 8 * s, "HandleTableBucket::pTable[slot]")?;
                        if t != 0 {
                            out.push((s as u32, t));
                        }
                    }
                }
            }
            map = self.ptr(map + l.map_next, "HandleTableMap::pNext")?;
        }
        Ok(out)
    }

    fn gc_handles(&self) -> Result<HandleTable> {
        self.require(crate::discovery::layout::Capability::Roots)?;
        let l = self.rl();
        let tables = self.handle_tables()?;
        let mut res = HandleTable {
            handles: Vec::new(),
            tables: tables.len(),
            segments: 0,
            errors: Vec::new(),
        };
        for (slot, table) in tables {
            let mut seg = match self.ptr(table + l.table_segment_list, "HandleTable::pSegmentList")
            {
                Ok(s) => s,
                Err(e) => {
                    res.errors.push(e.to_string());
                    continue;
                }
            };
            let mut n = 0;
            while seg != 0 {
                n += 1;
                if n > MAX_SEGMENTS_PER_TABLE {
                    res.errors.push(format!(
                        "HandleTable {table:#x}: more than {MAX_SEGMENTS_PER_TABLE} segments \
                         (a cycle?); the rest is not read"
                    ));
                    break;
                }
                match self.read_handle_segment(table, seg, slot, &mut res.handles) {
                    Ok(next) => {
                        res.segments += 1;
                        seg = next;
                    }
                    Err(e) => {
                        res.errors.push(e.to_string());
                        break;
                    }
                }
            }
        }
        Ok(res)
    }

    fn finalize_queue(&self) -> Result<FinalizeQueue> {
        self.require(crate::discovery::layout::Capability::Roots)?;
        let l = self.rl();
        let mut res = FinalizeQueue {
            heaps: Vec::new(),
            entries: Vec::new(),
            errors: Vec::new(),
        };
        for (hi, cf) in self.finalize_queue_addresses()?.into_iter().enumerate() {
            let mut fill = Vec::with_capacity(l.finalize_fill_count);
            for i in 0..l.finalize_fill_count as u64 {
                fill.push(self.ptr(
                    cf + l.finalize_fill_pointers + 8 * i,
                    "CFinalize::m_FillPointers",
                )?);
            }
            let array = self.ptr(cf + l.finalize_array, "CFinalize::m_Array")?;
            let mut ranges = Vec::new();
            let mut start = array;
            let mut ok = true;
            for (i, &end) in fill.iter().enumerate() {
                if end < start
                    || (end - start) % 8 != 0
                    || (end - start) / 8 > MAX_FINALIZER_ENTRIES
                {
                    res.errors.push(format!(
                        "CFinalize {cf:#x} (heap {hi}): fill pointer {i} is {end:#x}, before \
                         its segment's start {start:#x} or misaligned; the queue is not read"
                    ));
                    ok = false;
                    break;
                }
                ranges.push((FinalizerSegment::from_index(i), start, end));
                start = end;
            }
            if ok {
                let mut buf = vec![0u8; 1 << 16];
                for &(segment, s, e) in &ranges {
                    // In chunks: a queue can hold millions of entries.
                    let mut a = s;
                    while a < e {
                        let want = ((e - a) as usize).min(buf.len());
                        let got = self.memory().read(a, &mut buf[..want]);
                        for (k, c) in buf[..got - got % 8].chunks_exact(8).enumerate() {
                            let object = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
                            res.entries.push(FinalizerEntry {
                                slot: a + 8 * k as u64,
                                object,
                                segment,
                                heap: hi,
                            });
                        }
                        if got < want {
                            res.errors.push(format!(
                                "finalization queue slots {s:#x}..{e:#x} (heap {hi}): not in the \
                                 dump from {:#x}",
                                a + got as u64
                            ));
                            break;
                        }
                        a += want as u64;
                    }
                }
            }
            res.heaps.push(FinalizeQueueHeap {
                heap: hi,
                address: cf,
                ranges,
            });
        }
        Ok(res)
    }
}

impl<M: Memory> Runtime<M> {
    fn rl(&self) -> &'static RootsLayout {
        self.layout.roots
    }

    fn ptr(&self, addr: u64, what: &str) -> Result<u64> {
        self.memory()
            .read_u64(addr)
            .map_err(|_| ClrError::read(what, addr))
    }

    /// The number of heap slots of a handle table bucket (server: the heaps).
    fn gc_heap_count(&self) -> Result<u64> {
        let GcHeapVars::Server { n_heaps: p, .. } = self.gc_vars()?.heaps else {
            return Ok(1);
        };
        let n = self
            .memory()
            .read_i32(p)
            .map_err(|_| ClrError::read("gc_heap::n_heaps", p))?;
        if n <= 0 || n as u64 > MAX_SLOTS {
            return Err(ClrError::corrupt(
                "gc_heap::n_heaps",
                p,
                format!("{n}: expected 1..{MAX_SLOTS}"),
            ));
        }
        Ok(n as u64)
    }

    /// Reads one handle table segment; returns the next segment.
    fn read_handle_segment(
        &self,
        table: u64,
        seg: u64,
        slot: u32,
        out: &mut Vec<GcHandle>,
    ) -> Result<u64> {
        let l = self.rl();
        if !seg.is_multiple_of(l.segment_size) {
            return Err(ClrError::corrupt(
                "handle table segment",
                seg,
                format!(
                    "not aligned to {:#x} (HandleTable {table:#x})",
                    l.segment_size
                ),
            ));
        }
        let mut header = vec![0u8; l.segment_header_size as usize];
        self.memory()
            .read_exact(seg, &mut header)
            .map_err(|_| ClrError::read("handle table segment header", seg))?;
        let u64_at = |o: u64| {
            let o = o as usize;
            u64::from_le_bytes(header[o..o + 8].try_into().unwrap_or([0; 8]))
        };
        let owner = u64_at(l.seg_table);
        if owner != table {
            return Err(ClrError::corrupt(
                "handle table segment",
                seg,
                format!("pHandleTable is {owner:#x}; expected its table {table:#x}"),
            ));
        }
        let next = u64_at(l.seg_next);
        let blocks = (header[l.seg_empty_line as usize] as u64).min(l.blocks_per_segment);
        let hpb = l.handles_per_block;
        let values_at = seg + l.segment_header_size;
        let mut values = vec![0u8; (blocks * hpb * 8) as usize];
        let got = self.memory().read(values_at, &mut values);
        if got < values.len() {
            return Err(ClrError::read(
                format!("handle table segment values ({blocks} blocks in use)"),
                values_at + got as u64,
            ));
        }
        let value = |i: u64| {
            let o = (i * 8) as usize;
            u64::from_le_bytes(values[o..o + 8].try_into().unwrap_or([0; 8]))
        };
        let read_user = |block: u64, i: u64| -> u64 {
            let ud = header[(l.seg_user_data + block) as usize] as u64;
            if ud >= blocks {
                return 0;
            }
            value(ud * hpb + i)
        };
        for b in 0..blocks {
            let t = header[(l.seg_block_type + b) as usize];
            if t == 0xFF || t == l.data_block_type {
                continue;
            }
            let kind = HandleKind::from_type(t);
            for i in 0..hpb {
                let h = b * hpb + i;
                let mask_off = (l.seg_free_mask + 4 * (h / 32)) as usize;
                let mask =
                    u32::from_le_bytes(header[mask_off..mask_off + 4].try_into().unwrap_or([0; 4]));
                if mask & (1 << (h % 32)) != 0 {
                    continue; // free
                }
                let (secondary, variable_kind) = match kind {
                    HandleKind::Dependent => (read_user(b, i), None),
                    HandleKind::Variable => (0, variable_strength(read_user(b, i))),
                    _ => (0, None),
                };
                out.push(GcHandle {
                    address: values_at + h * 8,
                    kind,
                    object: value(h),
                    secondary,
                    variable_kind,
                    heap_slot: slot,
                });
            }
        }
        Ok(next)
    }

    /// The CFinalize of each heap.
    fn finalize_queue_addresses(&self) -> Result<Vec<u64>> {
        match self.gc_vars()?.heaps {
            GcHeapVars::Workstation { finalize_queue, .. } => {
                Ok(vec![self.ptr(finalize_queue, "gc_heap::finalize_queue")?])
            }
            GcHeapVars::Server {
                g_heaps,
                finalize_queue,
                ..
            } => {
                let n = self.gc_heap_count()?;
                let arr = self.ptr(g_heaps, "gc_heap::g_heaps")?;
                let off = finalize_queue.ok_or_else(|| {
                    ClrError::corrupt(
                        "gc_heap field offsets",
                        g_heaps,
                        "finalize_queue is missing",
                    )
                })?;
                (0..n)
                    .map(|i| {
                        let h = self.ptr(arr + 8 * i, "g_heaps[i]")?;
                        self.ptr(h + off, "gc_heap::finalize_queue")
                    })
                    .collect()
            }
        }
    }
}
