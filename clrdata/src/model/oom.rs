//! The GC's record of its last out-of-memory failure, per heap (gc_heap's `oom_info`, an
//! `oom_history`: what SOS's `analyzeoom` reads through the DAC's `GetOOMData` /
//! `GetOOMStaticData`). Workstation GC: the static GcDacVars' `oom_info` points at (.NET
//! 8-10) or the GC sub-descriptor's global `GCHeapOomData` (.NET 11); server GC: each
//! gc_heap's field, at the offset `gc_heap_field_offsets[3]` (.NET 8-10) or `GCHeap.OomData`
//! (.NET 11) gives. A heap whose `reason` is `oom_no_failure` (0) has had no OOM.

use crate::data::gcvars::{GcHeapVars, ReadGcVars};
use crate::discovery::runtime::Runtime;
use crate::error::{ClrError, Result};
use crate::model::heap::GcHeap;
use dumpreader::Memory;
use serde::Serialize;

/// One heap's last OOM (a heap with none has no record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OomRecord {
    /// The heap's index (0 for workstation GC).
    pub heap: usize,
    /// Where the `oom_history` is.
    pub address: u64,
    /// `oom_reason` (1 budget, 2 can't commit, 3 can't reserve, 4 LOH, 5 low memory,
    /// 6 unproductive full GC).
    pub reason: u32,
    /// The allocation request's size.
    pub alloc_size: u64,
    /// `reserved`.
    pub reserved: u64,
    /// `allocated`.
    pub allocated: u64,
    /// The GC's index when it happened.
    pub gc_index: u64,
    /// `failure_get_memory` (0 none, 1 reserve segment, 2 commit segment begin, 3 commit
    /// ephemeral segment, 4 grow table, 5 commit table).
    pub fgm: u32,
    /// The size that failed.
    pub size: u64,
    /// Available commit space on GC entry, in MB (0: not recorded).
    pub available_pagefile_mb: u64,
    /// Whether the failure was the large object heap's.
    pub loh: bool,
}

/// The OOM records of every heap of `heap` (none: no managed OOM). Refused when the build's
/// `oom_history` or its place is not known.
pub fn oom_records<M: Memory>(rt: &Runtime<M>, heap: &GcHeap) -> Result<Vec<OomRecord>> {
    let v = rt.gc_vars()?;
    let missing = |field: &'static str| ClrError::MissingField {
        ty: "gc_heap",
        field,
        runtime: rt.info.display_name(),
    };
    let layout = v
        .oom_history
        .ok_or_else(|| missing("oom_info (OomHistory's layout)"))?;
    let places: Vec<(usize, u64)> = match v.heaps {
        GcHeapVars::Workstation { oom_info, .. } => {
            vec![(0, oom_info.ok_or_else(|| missing("oom_info"))?)]
        }
        GcHeapVars::Server { oom_info, .. } => {
            let off = oom_info.ok_or_else(|| missing("oom_info"))?;
            heap.heaps
                .iter()
                .enumerate()
                .map(|(i, h)| (i, h.address + off))
                .collect()
        }
    };
    let m = rt.memory();
    let mut out = Vec::new();
    for (i, a) in places {
        let u32_at = |off: u64, what: &str| {
            m.read_u32(a + off)
                .map_err(|_| ClrError::read(format!("oom_history::{what} of heap {i}"), a + off))
        };
        let u64_at = |off: u64, what: &str| {
            m.read_u64(a + off)
                .map_err(|_| ClrError::read(format!("oom_history::{what} of heap {i}"), a + off))
        };
        let reason = u32_at(layout.reason, "reason")?;
        if reason == 0 {
            continue;
        }
        out.push(OomRecord {
            heap: i,
            address: a,
            reason,
            alloc_size: u64_at(layout.alloc_size, "alloc_size")?,
            reserved: u64_at(layout.reserved, "reserved")?,
            allocated: u64_at(layout.allocated, "allocated")?,
            gc_index: u64_at(layout.gc_index, "gc_index")?,
            fgm: u32_at(layout.fgm, "fgm")?,
            size: u64_at(layout.size, "size")?,
            available_pagefile_mb: u64_at(layout.available_pagefile_mb, "available_pagefile_mb")?,
            loh: u32_at(layout.loh_p, "loh_p")? != 0,
        });
    }
    Ok(out)
}
