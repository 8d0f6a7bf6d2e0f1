//! clrdata: the CLR runtime reconstructed from a dump's memory alone (no DAC).
//!
//! Reads through `dumpreader::Memory` only and prints nothing: every function returns typed data
//! or a precise error (what, where, what was expected).
//!
//! Start with [`Runtime::discover`]: it finds the runtime module, reads its exact version,
//! chooses the layout table for its family ([`layout`]), resolves the runtime's globals and runs
//! sanity checks. Then [`Runtime::gc_heap`] gives the heap's structure, whose
//! [`GcHeap::objects`] / [`GcHeap::census`] walk it, and [`Runtime::method_table`] decodes types.

pub mod analysis;
pub mod data;
pub mod discovery;
pub mod error;
pub mod metadata;
pub mod model;

/// NativeAOT apps (found at discovery): `clrdata::nativeaot::NativeAot`.
pub use discovery::nativeaot;
mod open;

pub use discovery::runtime::{
    find_runtime, DiscoverOptions, GcMode, Globals, ImageSearch, LayoutSource, Runtime, RuntimeInfo,
};
pub use error::{ClrError, LayoutFrom, Result, SourceTried};
pub use model::heap::{Census, GcHeap, HeapAbsence, HeapObject, Segment, SegmentKind, WalkError};
pub use model::names::TypeNames;

/// The extension traits that read through a [`Runtime`] (`rt.method_table(mt)`,
/// `rt.threads()`, `rt.gc_heap()`, ...): `use clrdata::prelude::*;`.
pub mod prelude {
    pub use crate::analysis::roots::FindRoots;
    pub use crate::data::handles::ReadHandles;
    pub use crate::data::statics::ReadStatics;
    pub use crate::data::syncblocks::ReadSyncBlocks;
    pub use crate::data::threads::ReadThreads;
    pub use crate::data::types::ReadTypes;
    pub use crate::model::disasm::Disassemble;
    pub use crate::model::heap::ReadGcHeap;
}
