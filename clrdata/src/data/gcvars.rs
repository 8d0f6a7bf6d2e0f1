//! Where the GC's own variables are: the address of each (the generation table, max_gen, the
//! workstation heap's ephemeral segment and alloc_allocated, the finalize queue, the handle
//! table map, the server heaps) and the shape of a `generation` and a server `gc_heap`.
//!
//! Two sources, chosen once at discovery ([`crate::discovery::layout::GcSource`]):
//! - .NET 8-10: `GcDacVars` (gcinterface.dac.h), found through `g_gcDacGlobals`: each member
//!   is a pointer to the variable, the generation and server-heap field offsets are arrays the
//!   GC publishes ([`GcVarsSource::DacVars`]);
//! - .NET 11: the GC's own contract sub-descriptor, merged into the runtime's: its globals
//!   (`GCHeapGenerationTable`, `MaxGeneration`, `GCHeapEphemeralHeapSegment`,
//!   `GCHeapAllocAllocated`, `GCHeapFinalizeQueue`, `HandleTableMap`, `NumHeaps`, `Heaps`)
//!   are the variables' addresses, its types (`Generation`, `GCHeap`) the offsets. The same
//!   addresses GcDacVars holds (docs/clr-layout-net11.md 2.1: checked on async-net11).

use crate::discovery::layout::GcSource;
use crate::discovery::runtime::{GcMode, Runtime};
use crate::error::{ClrError, Result};
use dumpreader::Memory;

/// The GC's variables of one runtime, resolved ([`ReadGcVars::gc_vars`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcVars {
    /// GcDacVars' (major, minor) version; `None` where the GC's sub-descriptor serves.
    pub dac_vars_version: Option<(u8, u8)>,
    /// sizeof(generation).
    pub generation_size: u64,
    /// Generations per heap (5: gen0-2, LOH, POH).
    pub generation_count: u64,
    /// generation::allocation_context.
    pub generation_alloc_context: u64,
    /// generation::start_segment.
    pub generation_start_segment: u64,
    /// Address of max_gen (a u32).
    pub max_generation: u64,
    /// Address of `g_HandleTableMap` (the first node of the map chain).
    pub handle_table_map: u64,
    /// Workstation: the heap's statics; server: the heap array and per-heap offsets.
    pub heaps: GcHeapVars,
    /// The shape of `oom_history` (None: not known for this build).
    pub oom_history: Option<crate::discovery::layout::OomHistoryLayout>,
}

/// Where a GC heap's own fields are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcHeapVars {
    /// Workstation GC: the gc_heap's fields are statics; their addresses.
    Workstation {
        /// The generation table (inline array of generations).
        generation_table: u64,
        /// `heap_segment* ephemeral_heap_segment`.
        ephemeral_heap_segment: u64,
        /// `uint8_t* alloc_allocated`.
        alloc_allocated: u64,
        /// `CFinalize* finalize_queue`.
        finalize_queue: u64,
        /// The `oom_history oom_info` (None: not published).
        oom_info: Option<u64>,
    },
    /// Server GC: `g_heaps` and the offsets of the fields inside each `gc_heap`.
    Server {
        /// Address of `int n_heaps`.
        n_heaps: u64,
        /// Address of `gc_heap** g_heaps`.
        g_heaps: u64,
        /// Offsets inside a gc_heap: alloc_allocated, ephemeral_heap_segment,
        /// generation_table, finalize_queue; `None`: the GC did not publish it.
        alloc_allocated: Option<u64>,
        /// ephemeral_heap_segment.
        ephemeral_heap_segment: Option<u64>,
        /// generation_table.
        generation_table: Option<u64>,
        /// finalize_queue.
        finalize_queue: Option<u64>,
        /// oom_info (an inline `oom_history`).
        oom_info: Option<u64>,
    },
}

/// Resolving the GC's variables.
pub trait ReadGcVars {
    /// The GC's variables, from GcDacVars or the GC's sub-descriptor.
    fn gc_vars(&self) -> Result<GcVars>;
}

impl<M: Memory> ReadGcVars for Runtime<M> {
    fn gc_vars(&self) -> Result<GcVars> {
        match &self.layout.gc_source {
            GcSource::DacVars => self.gc_vars_from_dac_vars(),
            GcSource::Descriptor(d) => {
                let g = &self.globals.gc;
                let need = |v: u64, name: &'static str| -> Result<u64> {
                    if v == 0 {
                        Err(ClrError::MissingField {
                            ty: "globals",
                            field: name,
                            runtime: self.info.display_name(),
                        })
                    } else {
                        Ok(v)
                    }
                };
                let heaps = match self.gc_mode() {
                    GcMode::Workstation => GcHeapVars::Workstation {
                        generation_table: need(g.generation_table, "GCHeapGenerationTable")?,
                        ephemeral_heap_segment: need(
                            g.ephemeral_heap_segment,
                            "GCHeapEphemeralHeapSegment",
                        )?,
                        alloc_allocated: need(g.alloc_allocated, "GCHeapAllocAllocated")?,
                        finalize_queue: need(g.finalize_queue, "GCHeapFinalizeQueue")?,
                        oom_info: (g.oom_data != 0).then_some(g.oom_data),
                    },
                    GcMode::Server => GcHeapVars::Server {
                        n_heaps: need(g.num_heaps, "NumHeaps")?,
                        g_heaps: need(g.heaps, "Heaps")?,
                        alloc_allocated: d.heap_alloc_allocated,
                        ephemeral_heap_segment: d.heap_ephemeral_heap_segment,
                        generation_table: d.heap_generation_table,
                        finalize_queue: d.heap_finalize_queue,
                        oom_info: d.heap_oom_data,
                    },
                };
                Ok(GcVars {
                    dac_vars_version: None,
                    generation_size: d.generation_size,
                    generation_count: d.generation_count,
                    generation_alloc_context: d.generation_alloc_context,
                    generation_start_segment: d.generation_start_segment,
                    max_generation: need(g.max_generation, "MaxGeneration")?,
                    handle_table_map: need(g.handle_table_map, "HandleTableMap")?,
                    heaps,
                    oom_history: d.oom_history,
                })
            }
        }
    }
}

impl<M: Memory> Runtime<M> {
    fn gc_ptr(&self, addr: u64, what: &str) -> Result<u64> {
        self.memory()
            .read_u64(addr)
            .map_err(|_| ClrError::read(what, addr))
    }

    /// GcDacVars (.NET 8-10): every member a pointer to the GC's variable.
    fn gc_vars_from_dac_vars(&self) -> Result<GcVars> {
        let m = self.memory();
        let gl = &self.layout.gc_dac_vars;
        let dv = self.globals.gc_dac_vars;
        let major = m
            .read_u8(dv + gl.major_version)
            .map_err(|_| ClrError::read("GcDacVars", dv))?;
        let minor = m
            .read_u8(dv + gl.minor_version)
            .map_err(|_| ClrError::read("GcDacVars", dv))?;
        let gen_size = self.gc_ptr(dv + gl.generation_size, "GcDacVars::generation_size")?;
        let gen_count = self.gc_ptr(
            dv + gl.total_generation_count,
            "GcDacVars::total_generation_count",
        )?;
        if !(4..=8).contains(&gen_count) || gen_size == 0 || gen_size > 0x10000 {
            return Err(ClrError::corrupt(
                "GcDacVars",
                dv,
                format!(
                    "total_generation_count {gen_count} / generation_size {gen_size:#x}: \
                     expected 4..8 generations of a plausible size"
                ),
            ));
        }
        // Generation field offsets (allocation_context, start_segment), published by the GC.
        let gfo = self.gc_ptr(
            dv + gl.generation_field_offsets,
            "GcDacVars::generation_field_offsets",
        )?;
        let (gen_ac_off, gen_ss_off) = if gfo != 0 {
            let a = m
                .read_i32(gfo)
                .map_err(|_| ClrError::read("generation_field_offsets", gfo))?;
            let s = m
                .read_i32(gfo + 4)
                .map_err(|_| ClrError::read("generation_field_offsets", gfo + 4))?;
            if a < 0 || s < 0 || s as u64 >= gen_size || a as u64 >= gen_size {
                return Err(ClrError::corrupt(
                    "generation_field_offsets",
                    gfo,
                    format!("allocation_context {a}, start_segment {s}: outside a generation"),
                ));
            }
            (a as u64, s as u64)
        } else {
            (
                self.layout.generation.allocation_context,
                self.layout.generation.start_segment,
            )
        };
        let rl = self.layout.roots;
        let heaps = match self.gc_mode() {
            GcMode::Workstation => GcHeapVars::Workstation {
                generation_table: self
                    .gc_ptr(dv + gl.generation_table, "GcDacVars::generation_table")?,
                ephemeral_heap_segment: self.gc_ptr(
                    dv + gl.ephemeral_heap_segment,
                    "GcDacVars::ephemeral_heap_segment",
                )?,
                alloc_allocated: self
                    .gc_ptr(dv + gl.alloc_allocated, "GcDacVars::alloc_allocated")?,
                finalize_queue: self
                    .gc_ptr(dv + rl.dac_vars_finalize_queue, "GcDacVars::finalize_queue")?,
                oom_info: Some(self.gc_ptr(dv + gl.oom_info, "GcDacVars::oom_info")?)
                    .filter(|&a| a != 0),
            },
            GcMode::Server => {
                let fo = self.gc_ptr(
                    dv + gl.gc_heap_field_offsets,
                    "GcDacVars::gc_heap_field_offsets",
                )?;
                let field = |i: usize| -> Result<Option<u64>> {
                    let a = fo + 4 * i as u64;
                    let v = m
                        .read_i32(a)
                        .map_err(|_| ClrError::read("gc_heap_field_offsets", a))?;
                    Ok((v >= 0).then_some(v as u64))
                };
                let fi = self.layout.gc_heap_fields;
                GcHeapVars::Server {
                    n_heaps: self.gc_ptr(dv + gl.n_heaps, "GcDacVars::n_heaps")?,
                    g_heaps: self.gc_ptr(dv + gl.g_heaps, "GcDacVars::g_heaps")?,
                    alloc_allocated: field(fi.alloc_allocated)?,
                    ephemeral_heap_segment: field(fi.ephemeral_heap_segment)?,
                    generation_table: field(fi.generation_table)?,
                    finalize_queue: field(rl.gc_heap_field_finalize_queue)?,
                    oom_info: field(fi.oom_info)?,
                }
            }
        };
        Ok(GcVars {
            dac_vars_version: Some((major, minor)),
            generation_size: gen_size,
            generation_count: gen_count,
            generation_alloc_context: gen_ac_off,
            generation_start_segment: gen_ss_off,
            max_generation: self.gc_ptr(dv + gl.max_gen, "GcDacVars::max_gen")?,
            handle_table_map: self.gc_ptr(
                dv + rl.dac_vars_handle_table_map,
                "GcDacVars::handle_table_map",
            )?,
            heaps,
            oom_history: Some(crate::discovery::layout::OOM_HISTORY),
        })
    }
}
