//! Why a frame's GC references could not be read (a leaf: [`super::StackWalker`] caches it,
//! [`super::gcrefs`] produces it).

use clrcodeinfo::GcInfoError;
use thiserror::Error;

/// Why a managed frame's references could not be read from its GC info (the frame is then
/// scanned conservatively).
#[derive(Debug, Clone, Error)]
pub enum FrameRefsError {
    #[error("its code is not found by the code manager")]
    CodeNotFound,
    #[error("the walk kept no registers for it")]
    NoRegisters,
    #[error("the frame was not unwound (its caller's SP places its slots)")]
    NotUnwound,
    #[error("its GC info is not found: {0}")]
    GcInfoNotFound(crate::ClrError),
    #[error("its GC info version is not known: {0}")]
    GcInfoVersion(crate::ClrError),
    #[error("its GC info at {addr:#x} is not in the dump")]
    GcInfoNotInDump { addr: u64 },
    #[error("its GC info at {addr:#x} does not decode: {error}")]
    GcInfoDecode { addr: u64, error: GcInfoError },
    #[error("its IP {ip:#x} lies beyond the {length} bytes of code its GC info describes")]
    IpBeyondCode { ip: u64, length: u32 },
    #[error("its GC info's live slots at offset {offset:#x} are not in the dump ({error})")]
    LiveSlotsNotInDump { offset: u32, error: GcInfoError },
    #[error("its GC info's live slots do not decode: {0}")]
    LiveSlots(GcInfoError),
}
