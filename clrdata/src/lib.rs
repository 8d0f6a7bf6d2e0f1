//! clrdata: the CLR runtime reconstructed from a dump's memory alone (no DAC).
//!
//! Reads through `dumpreader::Memory` only and prints nothing: every function returns typed data
//! or a precise error (what, where, what was expected).
//!
//! Start with [`Runtime::discover`]: it finds the runtime module, reads its exact version,
//! chooses the layout table for its family ([`layout`]), resolves the runtime's globals and runs
//! sanity checks. Then [`Runtime::gc_heap`] gives the heap's structure, whose
//! [`GcHeap::objects`] / [`GcHeap::census`] walk it, and [`Runtime::method_table`] decodes types.

pub mod asyncsm;
pub mod causality;
pub mod channels;
pub mod delegates;
pub mod descriptor;
pub mod error;
pub mod exceptions;
pub mod fields;
pub mod handles;
pub mod heap;
mod imagecheck;
pub mod layout;
pub mod locks;
pub mod metadata;
pub mod methods;
pub mod names;
pub mod objects;
pub mod roots;
pub mod runtime;
pub mod stack;
pub mod statics;
pub mod supplement;
pub mod tasks;
pub mod threadpool;
pub mod threads;
pub mod timers;
pub mod types;

pub use error::{ClrError, Result};
pub use heap::{Census, GcHeap, HeapAbsence, HeapObject, Segment, SegmentKind, WalkError};
pub use names::TypeNames;
pub use runtime::{find_runtime, GcMode, Globals, ImageSearch, Runtime, RuntimeInfo};
