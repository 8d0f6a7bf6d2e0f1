//! clrcodeinfo: pure decoders of the CLR's per-method code metadata.
//!
//! Bytes in, typed data out: no dump, no runtime, no other crate of the project. Every
//! decoder is bounded by its input (no read past the slice, no allocation sized by an
//! unchecked count, no loop that does not consume input) and reports corruption with a
//! precise error instead of panicking.
//!
//! - [`gcinfo`]: the x64 GC info (`GcInfoEncoder` format, versions 2 to 5 of .NET 8-11):
//!   header, safe points, interruptible ranges, the slot table and the slots live at a code
//!   offset, as `EECodeManager::EnumGcRefs` would report them to the GC.
//! - [`debuginfo`]: the JIT's debug info as the runtime stores it (JIT'd code and
//!   ReadyToRun images; the .NET 8/9, 10 and 11 layouts): native-to-IL offset bounds,
//!   variable locations and, on .NET 11, runtime-async suspension points.
//! - [`gcdump`]: decoded GC info as the text SOS's `gcinfo` prints (the runtime's GcInfoDumper).
//!
//! README.md says where the blobs are in a dump and how a stack walk should ask.

mod bits;
pub mod debuginfo;
pub mod gcdump;
pub mod gcinfo;
mod nibble;

pub use debuginfo::{DebugInfo, DebugInfoError, DebugInfoFormat};
pub use gcinfo::{GcInfo, GcInfoError, LivenessQuery};
