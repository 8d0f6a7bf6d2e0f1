//! The x64 GC info decoder: the JIT's per-method GC table (`GcInfoEncoder` /
//! `GcInfoDecoder`), for the GC info versions of .NET 8 to 11.
//!
//! Sources (dotnet/runtime; the same code is copied into dotnet/diagnostics
//! `src/shared/{inc,vm,gcinfo}` at each release tag, read at v8.0.547301, v9.0.661903,
//! v10.0.731102 and v11.0.0): `src/coreclr/inc/gcinfodecoder.h`, `src/coreclr/vm/gcinfodecoder.cpp`,
//! `src/coreclr/inc/gcinfotypes.h` (the AMD64 encoding constants, unchanged from 8 to 11),
//! `src/coreclr/gcinfo/gcinfoencoder.cpp`, `src/coreclr/inc/gcinfo.h` (versions) and
//! `src/coreclr/vm/eetwain.cpp` (`EECodeManager::EnumGcRefs`, how the stack walk asks).
//!
//! Versions: .NET 8 and 9 write version 3 for JIT'd code (2 and 3 share one format; SOS
//! decodes both as 3), .NET 10 version 4, .NET 11 version 5, whose changes are x86-only (the
//! x86 header's return kind and async bit, dotnet/runtime#128706; dotnet/diagnostics
//! `src/shared/inc/gcinfo.h` after #5862/#5890: SOS decodes 11 as 5), so on x64 5 reads as 4.
//! ReadyToRun code carries the version of its image (`GCInfoToken::
//! ReadyToRunVersionToGcInfoVersion`; readytorun.h at v10.0: "R2R Version 11 uses GCInfo v4,
//! which encodes safe points without -1 offset and does not track return kinds"): R2R majors
//! below 11 are version 3, 11 to 20 version 4, 21 and up version 5. Framework images: .NET 8
//! R2R 9.1, .NET 9 10.1, .NET 10 16.0, .NET 11 26.1 (read from the runtime packs). Version 4
//! also dropped the PSPSym (R2R 13: "removes usage of PSPSym ... redefines generics instance
//! context stack slot in GCInfo v4 to be SP/FP relative").
//!
//! Where a blob lives: JIT'd code, `RealCodeHeader::phdrJitGCInfo` (offset 0x10 of the code
//! header whose address is stored just before the method's first instruction; the same on 8,
//! 9, 10 and 11); ReadyToRun code, right after the UNWIND_INFO of the method's entry
//! RUNTIME_FUNCTION: image base + UnwindData + align4(4 + 2 × CountOfUnwindCodes + 4) (the
//! personality routine's RVA always follows the codes; `ReadyToRunJitManager::
//! GetGCInfoToken`), as the DAC's GetCodeHeaderData agrees on every R2R method of the tests.
//!
//! Layout of a blob (bits, least significant first):
//! header (slim or fat), safe points (call sites), interruptible ranges, slot table, live
//! states at safe points, then the fully interruptible liveness in 64-byte chunks.

use crate::bits::BitReader;
use std::ops::Range;
use thiserror::Error;

// The AMD64 encoding (gcinfotypes.h, `AMD64GcInfoEncoding` / the TARGET_AMD64 #defines).
const CODE_LENGTH_ENCBASE: u32 = 8;
const NORM_PROLOG_SIZE_ENCBASE: u32 = 5;
const NORM_EPILOG_SIZE_ENCBASE: u32 = 3;
const GS_COOKIE_STACK_SLOT_ENCBASE: u32 = 6;
const PSP_SYM_STACK_SLOT_ENCBASE: u32 = 6;
const GENERICS_INST_CONTEXT_STACK_SLOT_ENCBASE: u32 = 6;
const STACK_BASE_REGISTER_ENCBASE: u32 = 3;
const SIZE_OF_EDIT_AND_CONTINUE_PRESERVED_AREA_ENCBASE: u32 = 4;
const REVERSE_PINVOKE_FRAME_ENCBASE: u32 = 6;
const SIZE_OF_STACK_AREA_ENCBASE: u32 = 3;
const SIZE_OF_RETURN_KIND_IN_SLIM_HEADER: u32 = 2;
const SIZE_OF_RETURN_KIND_IN_FAT_HEADER: u32 = 4;
const NUM_SAFE_POINTS_ENCBASE: u32 = 2;
const NUM_INTERRUPTIBLE_RANGES_ENCBASE: u32 = 1;
const INTERRUPTIBLE_RANGE_DELTA1_ENCBASE: u32 = 6;
const INTERRUPTIBLE_RANGE_DELTA2_ENCBASE: u32 = 6;
const NUM_REGISTERS_ENCBASE: u32 = 2;
const NUM_STACK_SLOTS_ENCBASE: u32 = 2;
const NUM_UNTRACKED_SLOTS_ENCBASE: u32 = 1;
const REGISTER_ENCBASE: u32 = 3;
const REGISTER_DELTA_ENCBASE: u32 = 2;
const STACK_SLOT_ENCBASE: u32 = 6;
const STACK_SLOT_DELTA_ENCBASE: u32 = 4;
const POINTER_SIZE_ENCBASE: u32 = 3;
const LIVESTATE_RLE_RUN_ENCBASE: u32 = 2;
const LIVESTATE_RLE_SKIP_ENCBASE: u32 = 4;
const NUM_NORM_CODE_OFFSETS_PER_CHUNK: u32 = 64;
const NUM_NORM_CODE_OFFSETS_PER_CHUNK_LOG2: u32 = 6;
/// Stack slots are 8-byte units (`NORMALIZE_STACK_SLOT(x) = x >> 3`).
const STACK_SLOT_SCALE: i64 = 8;
/// The frame register is stored xor 5 (RBP encodes as 0).
const STACK_BASE_REGISTER_XOR: u32 = 5;
/// `GC_INFO_FLAGS_BIT_SIZE` (version 1's 9 bits are not supported).
const GC_INFO_FLAGS_BIT_SIZE: u32 = 10;

/// [`GcInfo::enumerate_states`] walks every offset: it refuses methods longer than this.
const MAX_ENUMERATED_CODE: u32 = 1 << 20;

/// The rsp register number (never a GC slot).
const RSP: u8 = 4;

/// A GC info decoding error: what was read, where (bit position from the blob's start), and
/// what was wrong.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum GcInfoError {
    #[error("unsupported GC info version {0} (x64 GC info versions 2 to 5 are decoded)")]
    UnsupportedVersion(u32),
    #[error("GC info truncated: reading {what} at bit {at} needs {wanted} more bits; the blob has {len_bits}")]
    Truncated {
        what: &'static str,
        at: usize,
        wanted: u32,
        len_bits: usize,
    },
    #[error("GC info: {what} at bit {at} is a variable-length number longer than 64 bits")]
    VarLengthOverflow { what: &'static str, at: usize },
    #[error("GC info: {what} is {value}, beyond {limit}")]
    OutOfRange {
        what: &'static str,
        value: i128,
        limit: i128,
    },
    #[error("GC info: slot {index} has stack base {base}, which is none of caller SP (0), SP (1), frame register (2)")]
    InvalidStackBase { index: u32, base: u8 },
    #[error("GC info: slot {index} is register {register}, not a GC register of x64")]
    InvalidRegister { index: u32, register: u32 },
    #[error("GC info: the code length is 0")]
    ZeroCodeLength,
    #[error("GC info: {count} safe points in {code_length} bytes of code")]
    TooManySafePoints { count: u32, code_length: u32 },
    #[error("GC info: interruptible range {index} ends at {stop:#x}, past the code's {code_length:#x} bytes")]
    RangeBeyondCode {
        index: u32,
        stop: u64,
        code_length: u32,
    },
    #[error("GC info: a frame-register-relative slot in a method without a frame register")]
    NoFrameRegister,
    #[error("GC info: a live-state run covers slots {from}..{to}, past the {count} tracked slots")]
    RunBeyondSlots { from: u64, to: u64, count: u32 },
    #[error("GC info: chunk pointer {pointer} of chunk {chunk} lies outside the blob")]
    BadChunkPointer { chunk: u32, pointer: u64 },
}

pub type Result<T, E = GcInfoError> = std::result::Result<T, E>;

/// The header's flag bits (`GcInfoHeaderFlags`), as encoded in a fat header; a slim header
/// sets at most `HAS_STACK_BASE_REGISTER`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeaderFlags(pub u16);

impl HeaderFlags {
    pub const IS_VARARG: u16 = 0x1;
    pub const HAS_GS_COOKIE: u16 = 0x4;
    /// Only before version 4.
    pub const HAS_PSP_SYM: u16 = 0x8;
    pub const GENERICS_INST_CONTEXT_MASK: u16 = 0x30;
    pub const HAS_STACK_BASE_REGISTER: u16 = 0x40;
    /// x64: `GC_INFO_WANTS_REPORT_ONLY_LEAF`.
    pub const WANTS_REPORT_ONLY_LEAF: u16 = 0x80;
    pub const HAS_EDIT_AND_CONTINUE_INFO: u16 = 0x100;
    pub const REVERSE_PINVOKE_FRAME: u16 = 0x200;

    pub fn has(self, bit: u16) -> bool {
        self.0 & bit != 0
    }
}

/// What the generics instantiation context slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenericsContextKind {
    /// A MethodTable (`GC_INFO_HAS_GENERICS_INST_CONTEXT_MT`, 0x10).
    MethodTable,
    /// A MethodDesc (0x20).
    MethodDesc,
    /// `this` (0x30).
    This,
}

/// The GS cookie: a stack slot relative to the caller's SP, valid over a code range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GsCookie {
    /// Offset from the caller's SP (`EECodeManager::GetGSCookieAddr`).
    pub caller_sp_offset: i32,
    /// `[prolog size, code length - epilog size)`.
    pub valid_range: Range<u32>,
}

/// The generics instantiation context (shared generic code's hidden argument, kept alive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenericsContext {
    /// The slot's offset. Before version 4 it is relative to the caller's SP (funclets reach
    /// it through the PSPSym); from version 4 on, to the frame register when the method has
    /// one, else to SP (`EECodeManager::GetExactGenericsToken`). SOS prints it as
    /// `caller.sp±x` either way.
    pub offset: i32,
    pub kind: GenericsContextKind,
}

/// The decoded header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcInfoHeader {
    /// A fat header (flags and optional fields) rather than a slim one.
    pub fat: bool,
    pub flags: HeaderFlags,
    /// The return kind (`ReturnKind`, 2 bits in a slim header, 4 in a fat one); versions
    /// before 4 only.
    pub return_kind: Option<u8>,
    /// The method's code length in bytes (hot code and funclets).
    pub code_length: u32,
    /// The prolog size, present when the method has a GS cookie or a generics context
    /// (`GetPrologSize`, the GS cookie's valid range start).
    pub prolog_size: Option<u32>,
    pub gs_cookie: Option<GsCookie>,
    /// The PSPSym slot, relative to the initial SP on x64 (versions before 4).
    pub psp_sym: Option<i32>,
    pub generics_inst_context: Option<GenericsContext>,
    /// The frame register (x64: 5, RBP) the frame-relative slots are based on.
    pub stack_base_register: Option<u8>,
    /// Edit and continue: the size of the preserved area.
    pub edit_and_continue_preserved_area: Option<u32>,
    /// The reverse P/Invoke frame's slot (UnmanagedCallersOnly methods).
    pub reverse_pinvoke_frame: Option<i32>,
    /// The outgoing argument and scratch area at the bottom of the frame (0 in a slim header);
    /// stack slots there are not reported for non-leaf frames.
    pub size_of_stack_outgoing_and_scratch_area: u32,
}

impl GcInfoHeader {
    pub fn is_vararg(&self) -> bool {
        self.flags.has(HeaderFlags::IS_VARARG)
    }
}

/// What a stack slot's offset is relative to (`GcStackSlotBase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StackBase {
    /// The caller's SP (`GC_CALLER_SP_REL`, 0).
    CallerSp,
    /// This frame's SP (`GC_SP_REL`, 1).
    Sp,
    /// The frame register named in the header (`GC_FRAMEREG_REL`, 2).
    Frame,
}

/// Where a GC slot lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SlotLocation {
    /// An x64 register: 0 rax, 1 rcx, 2 rdx, 3 rbx, 5 rbp, 6 rsi, 7 rdi, 8-15 r8-r15.
    Register(u8),
    /// A stack slot `base + offset`.
    Stack { base: StackBase, offset: i32 },
}

/// A slot's GC flags (`GcSlotFlags`: interior 1, pinned 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct SlotFlags(pub u8);

impl SlotFlags {
    pub const INTERIOR: u8 = 1;
    pub const PINNED: u8 = 2;

    pub fn interior(self) -> bool {
        self.0 & Self::INTERIOR != 0
    }
    pub fn pinned(self) -> bool {
        self.0 & Self::PINNED != 0
    }
}

/// One entry of the slot table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Slot {
    pub location: SlotLocation,
    pub flags: SlotFlags,
    /// Untracked: live throughout the method body (reported for the leaf frame of a method,
    /// not for a funclet's parent nor where the stack walk asks not to).
    pub untracked: bool,
}

/// One offset as the GC info dumper sees it ([`GcInfo::enumerate_states`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetState {
    pub offset: u32,
    pub interruptible: bool,
    /// The return address offset of the call whose safe point is encoded at this offset
    /// (version 3: `offset + 1`; version 4: `offset`).
    pub safe_point: Option<u32>,
    pub live: Vec<LiveSlot>,
}

/// A slot the GC would be told about, with its index in the slot table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LiveSlot {
    pub index: u32,
    pub slot: Slot,
}

/// The calling convention deciding which registers a call preserves (x64 Windows also keeps
/// rsi and rdi).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Abi {
    /// System V (Linux, macOS).
    #[default]
    Unix,
    Windows,
}

impl Abi {
    /// Whether a call may clobber `reg` (`IsScratchRegister`).
    pub fn is_scratch_register(self, reg: u8) -> bool {
        let preserved: u16 = (1 << 3)
            | (1 << 5)
            | (1 << 12)
            | (1 << 13)
            | (1 << 14)
            | (1 << 15)
            | match self {
                Abi::Unix => 0,
                Abi::Windows => (1 << 6) | (1 << 7),
            };
        reg >= 16 || preserved & (1 << reg) == 0
    }
}

/// The stack pointers of a frame, to place its stack slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameAddresses {
    pub sp: u64,
    /// The frame register's value, when the method has one.
    pub frame_register: Option<u64>,
    pub caller_sp: u64,
}

/// How the stack walk asks about a frame (`EECodeManager::EnumGcRefs`' flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LivenessQuery {
    /// `ActiveStackFrame`: the leaf frame, stopped at the IP itself (interrupted, so the
    /// method must be fully interruptible there). Otherwise the offset is a return address.
    /// Scratch registers and outgoing-argument slots are reported only for the active frame.
    pub active_frame: bool,
    /// `ExecutionAborted`: the frame will not resume (an exception passed through it); only
    /// fully interruptible code reports anything.
    pub execution_aborted: bool,
    /// `AbortingCall` (with `execution_aborted`, versions before 4): the offset is a return
    /// address, so the call itself is looked at.
    pub aborting_call: bool,
    /// `ParentOfFuncletStackFrame`: a funclet of this frame was reported already; with
    /// "report only leaf" (always from version 4 on) nothing is reported for the parent.
    pub parent_of_funclet: bool,
    /// `NoReportUntracked`: the walker sets it for filter funclets (their parent reports the
    /// untracked slots).
    pub no_report_untracked: bool,
    /// The runtime's decoder is .NET 11's or later ([`GcInfo::aborted_needs_range`]): with
    /// `execution_aborted`, an offset outside every interruptible range reports nothing even
    /// when the method has no ranges at all. Earlier decoders ran that range check only when
    /// there were ranges: a method without any (MinOpts code: untracked slots only) still
    /// reported its untracked slots.
    pub aborted_needs_range: bool,
    /// The calling convention (which registers are scratch).
    pub abi: Abi,
    /// The frame's stack pointers; without them only SP-relative slots can be recognised as
    /// outgoing-argument (scratch) slots.
    pub frame: Option<FrameAddresses>,
}

impl LivenessQuery {
    /// A non-leaf frame stopped at a call (the offset of its return address): what the stack
    /// walk asks for every frame but the interrupted leaf.
    pub fn caller_frame() -> LivenessQuery {
        LivenessQuery::default()
    }

    /// The leaf frame interrupted at its IP.
    pub fn active_frame() -> LivenessQuery {
        LivenessQuery {
            active_frame: true,
            ..LivenessQuery::default()
        }
    }
}

/// Where the safe points' live states are.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SafePointStates {
    /// No tracked slots, or no safe points.
    None,
    /// One bit per tracked slot per safe point, from this bit.
    Direct { start: usize },
    /// Per safe point an offset (this many bits each, from `table`) to a live-state vector
    /// (plain or run-length encoded) stored from `states` on.
    Indirect {
        table: usize,
        bits: u32,
        states: usize,
    },
}

/// The fully interruptible part: a pointer per 64-byte chunk of interruptible code.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Chunks {
    /// Bits per chunk pointer (0: no chunk has data).
    pointer_bits: u32,
    /// Where the pointer table starts.
    table: usize,
    num_chunks: u32,
    /// Where chunk data starts (a pointer p points at `data + p - 1`; 0 is an empty chunk).
    data: usize,
}

/// A decoded GC info blob (x64).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcInfo {
    bytes: Vec<u8>,
    version: u32,
    pub header: GcInfoHeader,
    /// Call sites as encoded (normalized offsets; version 3: return address - 1).
    safe_points_encoded: Vec<u32>,
    /// Fully interruptible code ranges `[start, stop)`.
    pub interruptible_ranges: Vec<Range<u32>>,
    /// The slot table: registers, then tracked stack slots, then untracked stack slots.
    pub slots: Vec<Slot>,
    pub num_registers: u32,
    pub num_tracked: u32,
    pub num_untracked: u32,
    safe_point_states: SafePointStates,
    chunks: Option<Chunks>,
    /// How many bytes of the blob the GC info occupies.
    size: usize,
    /// Whether every live state and chunk was read ([`GcInfo::decode_available`] may stop
    /// short of them).
    complete: bool,
}

/// `CeilOfLog2(x)` of gcinfotypes.h: the bits needed for offsets below `x` (0 for x <= 1).
fn ceil_log2(x: u64) -> u32 {
    if x <= 1 {
        0
    } else {
        64 - (x - 1).leading_zeros()
    }
}

impl GcInfo {
    /// The GC info version of JIT'd code of a runtime major version (8, 9: 3; 10: 4;
    /// 11: 5, which changed only x86's encoding).
    pub fn version_for_runtime(major: u32) -> u32 {
        match major {
            0..=9 => 3,
            10 => 4,
            _ => 5,
        }
    }

    /// Whether the decoder of a runtime major version reports nothing for an aborted frame
    /// outside every interruptible range even when the method has none
    /// ([`LivenessQuery::aborted_needs_range`]): .NET 11 on (dotnet/runtime PR 119403,
    /// "Unconditionally skip GC reporting for non-interruptible aborted methods", opened
    /// September 2025, after .NET 10 branched; dotnet/diagnostics' copy of the decoder has it
    /// from its December 2025 sync). A rule of the runtime's decoder, whatever the version of
    /// the blob it reads (a ReadyToRun image's may be older). Seen in the corpus: .NET 11.0.0
    /// reports no slot for crashasync-net11's `ExceptionDispatchInfo.Throw()` below its
    /// SoftwareExceptionFrame (no safe points, no ranges, untracked `rbp-8`), .NET 10.0.14
    /// reports faultnull-net10's `ReadNext` `rbp-8` below its FaultingExceptionFrame (the same
    /// shape of GC info).
    pub fn aborted_needs_range(runtime_major: u32) -> bool {
        runtime_major >= 11
    }

    /// The GC info version of a ReadyToRun image's code, from its R2R header's major version
    /// (`GCInfoToken::ReadyToRunVersionToGcInfoVersion`: 21 and up 5, 11 and up 4, else 3).
    pub fn version_for_ready_to_run(r2r_major: u16) -> u32 {
        match r2r_major {
            0..=10 => 3,
            11..=20 => 4,
            _ => 5,
        }
    }

    /// Decodes a GC info blob. `bytes` may extend past the blob (a dump read of a bounded
    /// length): only what the GC info occupies is kept ([`GcInfo::size`]). Every table is
    /// walked once here, so a later query fails only on data a corrupt blob could hide.
    pub fn decode(bytes: &[u8], version: u32) -> Result<GcInfo> {
        Self::decode_with(bytes, version, false)
    }

    /// As [`GcInfo::decode`], for a blob of which only `bytes` could be read (a dump keeps the
    /// pages the runtime's own reads touched: the tables, and the live states of the offsets
    /// it was asked about): the header, the safe points, the interruptible ranges and the slot
    /// table must be there; the live-state offsets and vectors, the chunk pointers and the
    /// chunks after them may stop short ([`GcInfo::is_complete`] false). A query that needs a missing one
    /// fails with [`GcInfoError::Truncated`]; [`GcInfo::size`] is then what was read.
    pub fn decode_available(bytes: &[u8], version: u32) -> Result<GcInfo> {
        Self::decode_with(bytes, version, true)
    }

    /// Whether every live state and chunk of the blob was read (always, from
    /// [`GcInfo::decode`]).
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    fn decode_with(bytes: &[u8], version: u32, partial: bool) -> Result<GcInfo> {
        // With `partial`, a truncation while walking live states or chunks ends the walk.
        let mut complete = true;
        let mut tolerate = |r: Result<()>| -> Result<bool> {
            match r {
                Ok(()) => Ok(true),
                Err(GcInfoError::Truncated { .. }) if partial => {
                    complete = false;
                    Ok(false)
                }
                Err(e) => Err(e),
            }
        };
        if !(2..=5).contains(&version) {
            return Err(GcInfoError::UnsupportedVersion(version));
        }
        let mut r = BitReader::new(bytes);
        let header = decode_header(&mut r, version)?;
        let code_length = header.code_length;

        let num_safe_points = r.var_u32(NUM_SAFE_POINTS_ENCBASE, "the number of safe points")?;
        let num_ranges = if header.fat {
            r.var_u32(
                NUM_INTERRUPTIBLE_RANGES_ENCBASE,
                "the number of interruptible ranges",
            )?
        } else {
            0
        };
        if num_safe_points as u64 > code_length as u64 + 1 {
            return Err(GcInfoError::TooManySafePoints {
                count: num_safe_points,
                code_length,
            });
        }
        let bits_per_offset = ceil_log2(code_length as u64);
        let mut safe_points_encoded = Vec::with_capacity(num_safe_points.min(4096) as usize);
        for _ in 0..num_safe_points {
            safe_points_encoded.push(r.read(bits_per_offset, "a safe point offset")? as u32);
        }

        let mut interruptible_ranges = Vec::with_capacity(num_ranges.min(4096) as usize);
        let mut last_stop = 0u64;
        for i in 0..num_ranges {
            let start_delta = r.var_unsigned(
                INTERRUPTIBLE_RANGE_DELTA1_ENCBASE,
                "an interruptible range start",
            )?;
            let stop_delta = r.var_unsigned(
                INTERRUPTIBLE_RANGE_DELTA2_ENCBASE,
                "an interruptible range length",
            )? + 1;
            let start = last_stop.saturating_add(start_delta);
            let stop = start.saturating_add(stop_delta);
            if stop > code_length as u64 {
                return Err(GcInfoError::RangeBeyondCode {
                    index: i,
                    stop,
                    code_length,
                });
            }
            interruptible_ranges.push(start as u32..stop as u32);
            last_stop = stop;
        }

        let (slots, num_registers, num_tracked, num_untracked) =
            decode_slot_table(&mut r, &header)?;

        let mut size_bits = r.pos();
        let mut safe_point_states = SafePointStates::None;
        let mut chunks = None;
        if num_tracked > 0 {
            // The live states at safe points (gcinfodecoder.cpp EnumerateLiveSlots).
            let mut indirect_bits = 0u32;
            if num_safe_points > 0 && r.read1("the live state indirection flag")? {
                indirect_bits = r.var_u32(POINTER_SIZE_ENCBASE, "the live state offset size")? + 1;
                if indirect_bits > 32 {
                    return Err(GcInfoError::OutOfRange {
                        what: "the live state offset size",
                        value: indirect_bits as i128,
                        limit: 32,
                    });
                }
            }
            let after_flag = r.pos();
            if num_safe_points > 0 {
                if indirect_bits > 0 {
                    let table = after_flag;
                    let table_end = table as u64 + num_safe_points as u64 * indirect_bits as u64;
                    let states = (table_end + 7) & !7;
                    let mut t = r.clone();
                    t.set_pos(table, "the live state offsets")?;
                    let mut end = table_end as usize;
                    let mut seen = std::collections::BTreeSet::new();
                    for _ in 0..num_safe_points {
                        // (The runtime reads the offset of the safe point it needs alone.)
                        let off = match t.read(indirect_bits, "a live state offset") {
                            Ok(o) => o,
                            Err(e) => {
                                tolerate(Err(e))?;
                                break;
                            }
                        };
                        if seen.insert(off) {
                            let mut s = r.clone();
                            let at = states
                                .checked_add(off)
                                .filter(|&p| p <= usize::MAX as u64)
                                .ok_or(GcInfoError::OutOfRange {
                                    what: "a live state offset",
                                    value: off as i128,
                                    limit: r.len_bits() as i128,
                                })?;
                            let read = s
                                .set_pos(at as usize, "a live state")
                                .and_then(|_| read_live_state(&mut s, num_tracked, |_| Ok(())));
                            if !tolerate(read)? {
                                break;
                            }
                            end = end.max(s.pos());
                        }
                    }
                    safe_point_states = SafePointStates::Indirect {
                        table,
                        bits: indirect_bits,
                        states: states as usize,
                    };
                    size_bits = size_bits.max(end);
                } else {
                    let n = num_safe_points as u64 * num_tracked as u64;
                    let mut s = r.clone();
                    let read = s.skip(n, "the live states at safe points");
                    if !tolerate(read)? {
                        s.set_pos(s.len_bits(), "the live states at safe points")?;
                    }
                    safe_point_states = SafePointStates::Direct { start: after_flag };
                    size_bits = size_bits.max(s.pos());
                }
            }
            size_bits = size_bits.max(after_flag);
            if num_ranges > 0 {
                // The runtime skips num_safe_points * num_tracked bits here, whatever the
                // indirection (the encoder never has both call sites and ranges).
                r.skip(
                    num_safe_points as u64 * num_tracked as u64,
                    "the live states at safe points",
                )?;
                let total: u64 = interruptible_ranges
                    .iter()
                    .map(|g| (g.end - g.start) as u64)
                    .sum();
                let num_chunks = total.div_ceil(NUM_NORM_CODE_OFFSETS_PER_CHUNK as u64) as u32;
                let pointer_bits = r.var_u32(POINTER_SIZE_ENCBASE, "the chunk pointer size")?;
                if pointer_bits > 32 {
                    return Err(GcInfoError::OutOfRange {
                        what: "the chunk pointer size",
                        value: pointer_bits as i128,
                        limit: 32,
                    });
                }
                let table = r.pos();
                let mut end = table;
                let mut data = table;
                if pointer_bits > 0 {
                    let table_end = table as u64 + num_chunks as u64 * pointer_bits as u64;
                    // The runtime reads the pointers up to the chunk it needs (and back to a
                    // non-empty one): a partial blob may end inside the table.
                    let cut = table_end > r.len_bits() as u64;
                    if cut {
                        tolerate(Err(GcInfoError::Truncated {
                            what: "the chunk pointers",
                            at: table,
                            wanted: (num_chunks as u64 * pointer_bits as u64).min(u32::MAX as u64)
                                as u32,
                            len_bits: r.len_bits(),
                        }))?;
                    }
                    data = ((table_end + 7) & !7) as usize;
                    end = data.min(r.len_bits()).max(table_end as usize);
                    let mut seen = std::collections::BTreeSet::new();
                    let mut t = r.clone();
                    for chunk in (0..num_chunks).take_while(|_| !cut) {
                        let p = t.read(pointer_bits, "a chunk pointer")?;
                        if p != 0 && seen.insert(p) {
                            let at = (data as u64 + p - 1) as usize;
                            let mut c = r.clone();
                            if c.set_pos(at, "chunk data").is_err() {
                                // Beyond what was read: a bad pointer, or (partial) a chunk
                                // whose bytes are missing.
                                let missing = GcInfoError::Truncated {
                                    what: "chunk data",
                                    at,
                                    wanted: 0,
                                    len_bits: c.len_bits(),
                                };
                                if partial && tolerate(Err(missing)).is_ok() {
                                    continue;
                                }
                                return Err(GcInfoError::BadChunkPointer { chunk, pointer: p });
                            }
                            if !tolerate(read_chunk(&mut c, num_tracked))? {
                                continue;
                            }
                            end = end.max(c.pos());
                        }
                    }
                }
                chunks = Some(Chunks {
                    pointer_bits,
                    table,
                    num_chunks,
                    data,
                });
                size_bits = size_bits.max(end);
            }
        }
        // (A partial blob's tables may place data past what was read.)
        let size = size_bits.div_ceil(8).min(bytes.len());
        // A partial blob keeps every byte read: a query may need bits past the last one
        // validated.
        let keep = if complete { size } else { bytes.len() };
        Ok(GcInfo {
            bytes: bytes[..keep.min(bytes.len())].to_vec(),
            version,
            header,
            safe_points_encoded,
            interruptible_ranges,
            slots,
            num_registers,
            num_tracked,
            num_untracked,
            safe_point_states,
            chunks,
            size,
            complete,
        })
    }

    /// The version it was decoded as.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Bytes the GC info occupies (the extent of everything decoded).
    pub fn size(&self) -> usize {
        self.size
    }

    /// The blob's bytes (`size()` of them).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The call sites' return address offsets, ascending (`EnumerateSafePoints`: version 3
    /// stores each minus one).
    pub fn safe_points(&self) -> Vec<u32> {
        self.safe_points_encoded
            .iter()
            .map(|&o| {
                if self.version < 4 {
                    o.wrapping_add(1)
                } else {
                    o
                }
            })
            .collect()
    }

    /// Whether the method is fully interruptible at `offset` (inside an interruptible range).
    pub fn is_interruptible(&self, offset: u32) -> bool {
        self.interruptible_ranges
            .iter()
            .any(|g| g.contains(&offset))
    }

    /// Whether `offset` is a call's return address with GC info (`IsSafePoint`).
    pub fn is_safe_point(&self, return_offset: u32) -> bool {
        self.safe_points().binary_search(&return_offset).is_ok()
    }

    /// Whether a funclet's parent frame reports nothing (`WantsReportOnlyLeaf`): the header
    /// flag before version 4 (as the .NET 8/9 runtime reads it), always from version 4 on.
    pub fn wants_report_only_leaf(&self) -> bool {
        self.version >= 4 || self.header.flags.has(HeaderFlags::WANTS_REPORT_ONLY_LEAF)
    }

    /// The untracked slots (live throughout the method).
    pub fn untracked_slots(&self) -> impl Iterator<Item = LiveSlot> + '_ {
        let first = self.num_tracked;
        self.slots[first as usize..]
            .iter()
            .enumerate()
            .map(move |(i, s)| LiveSlot {
                index: first + i as u32,
                slot: *s,
            })
    }

    /// The address of a stack slot in a frame (`GetStackSlot`); `None` for a register or a
    /// frame-relative slot when the frame register's value is not known.
    pub fn slot_address(&self, slot: &Slot, frame: &FrameAddresses) -> Option<u64> {
        match slot.location {
            SlotLocation::Register(_) => None,
            SlotLocation::Stack { base, offset } => {
                let b = match base {
                    StackBase::Sp => frame.sp,
                    StackBase::CallerSp => frame.caller_sp,
                    StackBase::Frame => frame.frame_register?,
                };
                Some(b.wrapping_add(offset as i64 as u64))
            }
        }
    }

    /// The offset the decoder looks at for a query (`EnumGcRefs` before version 4: a
    /// non-active frame's return address minus one, inside the call).
    fn effective_offset(&self, code_offset: u32, q: &LivenessQuery) -> u32 {
        if self.version >= 4 {
            return code_offset;
        }
        let adjust = if q.execution_aborted {
            q.aborting_call
        } else {
            !q.active_frame
        };
        if adjust {
            code_offset.wrapping_sub(1)
        } else {
            code_offset
        }
    }

    /// The slots the runtime reports to the GC for a frame stopped at `code_offset`
    /// (`EECodeManager::EnumGcRefs` + `GcInfoDecoder::EnumerateLiveSlots`).
    ///
    /// `code_offset` is the frame's IP minus the method's start (the start of the main
    /// body, also for funclets: GC info covers the whole method). For every frame but the
    /// interrupted leaf that IP is the return address the unwind found; pass it as it is:
    /// this applies the version's rule (version 3 looks at the call instruction, one byte
    /// before; version 4 at the return address).
    ///
    /// Scratch registers and outgoing-argument stack slots are left out unless
    /// `active_frame` (`reportScratchSlots`). Slots come in the runtime's reporting order:
    /// tracked slots by index, then untracked ones.
    pub fn live_slots_at(&self, code_offset: u32, q: &LivenessQuery) -> Result<Vec<LiveSlot>> {
        if q.parent_of_funclet && self.wants_report_only_leaf() {
            return Ok(Vec::new());
        }
        let offset = self.effective_offset(code_offset, q);
        let scratch = (!q.active_frame).then_some(q);
        self.enumerate_live(
            offset,
            q.execution_aborted.then_some(q.aborted_needs_range),
            q.parent_of_funclet || q.no_report_untracked,
            scratch,
        )
    }

    /// `EnumerateLiveSlots` at the offset the decoder is built with (already adjusted):
    /// `aborted` is `Some(aborted_needs_range)` for `ExecutionAborted`, None otherwise;
    /// `scratch_filter` is the query whose scratch registers and slots are left out (a
    /// non-leaf frame), `None` to report them (`reportScratchSlots`).
    fn enumerate_live(
        &self,
        offset: u32,
        aborted: Option<bool>,
        no_untracked: bool,
        scratch_filter: Option<&LivenessQuery>,
    ) -> Result<Vec<LiveSlot>> {
        let mut out = Vec::new();
        let push = |index: u32, out: &mut Vec<LiveSlot>| -> Result<()> {
            let slot = *self
                .slots
                .get(index as usize)
                .ok_or(GcInfoError::RunBeyondSlots {
                    from: index as u64,
                    to: index as u64 + 1,
                    count: self.num_tracked,
                })?;
            if scratch_filter.is_none_or(|q| !self.is_scratch(&slot, q)) {
                out.push(LiveSlot { index, slot });
            }
            Ok(())
        };

        let execution_aborted = aborted.is_some();
        let safe_point = self.find_safe_point(offset).filter(|_| !execution_aborted);
        // Not at a safe point (or aborted): where the offset falls in the concatenated
        // interruptible ranges.
        let mut pseudo = None;
        if safe_point.is_none() {
            let mut cum = 0u32;
            for g in &self.interruptible_ranges {
                if offset >= g.start && offset < g.end {
                    pseudo = Some(cum + (offset - g.start));
                }
                cum += g.end - g.start;
            }
            // Aborted outside every interruptible range: nothing at all, not even the
            // untracked slots. Before .NET 11 the runtime's decoder ran this check only when
            // the method has ranges: one without (MinOpts: its references untracked) still
            // reported its untracked slots (`aborted_needs_range` false).
            if let (None, Some(needs_range)) = (pseudo, aborted) {
                if needs_range || !self.interruptible_ranges.is_empty() {
                    return Ok(out);
                }
            }
        }
        if self.num_tracked > 0 {
            if let Some(i) = safe_point {
                self.safe_point_live(i, |s| push(s, &mut out))?;
            } else if !self.interruptible_ranges.is_empty() {
                // Outside every range (and not aborted) the runtime reads pseudo offset 0,
                // the first range's start.
                self.chunk_live(pseudo.unwrap_or(0), |s| push(s, &mut out))?;
            }
        }
        if !no_untracked {
            for s in self.num_tracked..self.num_tracked + self.num_untracked {
                // Untracked slots are reported with reportScratchSlots = true.
                out.push(LiveSlot {
                    index: s,
                    slot: self.slots[s as usize],
                });
            }
        }
        Ok(out)
    }

    /// What the runtime's GC info dumper (`GcInfoDumper::EnumerateStateChanges`, which SOS's
    /// `gcinfo` prints) sees at every offset from 0 to the code length: whether the offset is
    /// interruptible, whether it is (the encoding of) a safe point, and the tracked slots
    /// live there in reporting order (scratch ones included): at a safe point as for a caller
    /// frame stopped at that call, at an interruptible offset as for the interrupted leaf,
    /// elsewhere nothing. Bounded by the code length; for dumps and tests.
    pub fn enumerate_states(&self) -> Result<Vec<OffsetState>> {
        if self.header.code_length > MAX_ENUMERATED_CODE {
            return Err(GcInfoError::OutOfRange {
                what: "the code length to enumerate",
                value: self.header.code_length as i128,
                limit: MAX_ENUMERATED_CODE as i128,
            });
        }
        let mut out = Vec::with_capacity(self.header.code_length.min(1 << 20) as usize + 1);
        for offset in 0..=self.header.code_length {
            let interruptible = self.is_interruptible(offset);
            let at_safe_point = self.find_safe_point(offset).is_some();
            let safe_point =
                at_safe_point.then(|| if self.version < 4 { offset + 1 } else { offset });
            // A safe point: flags 0; else ActiveStackFrame, plus ExecutionAborted where not
            // interruptible.
            let aborted = !at_safe_point && !interruptible;
            let live = self.enumerate_live(offset, aborted.then_some(false), true, None)?;
            out.push(OffsetState {
                offset,
                interruptible,
                safe_point,
                live,
            });
        }
        Ok(out)
    }

    /// `IsScratchRegister` / `IsScratchStackSlot` for a non-leaf frame.
    fn is_scratch(&self, slot: &Slot, q: &LivenessQuery) -> bool {
        match slot.location {
            SlotLocation::Register(r) => q.abi.is_scratch_register(r),
            SlotLocation::Stack { base, offset } => {
                let area = self.header.size_of_stack_outgoing_and_scratch_area as i64;
                if let Some(f) = &q.frame {
                    match self.slot_address(slot, f) {
                        Some(a) => a >= f.sp && a < f.sp.wrapping_add(area as u64),
                        None => false,
                    }
                } else {
                    base == StackBase::Sp && (offset as i64) < area && offset >= 0
                }
            }
        }
    }

    /// The index of the safe point encoded at `offset` (`FindSafePoint`: an exact match).
    fn find_safe_point(&self, offset: u32) -> Option<usize> {
        self.safe_points_encoded.binary_search(&offset).ok()
    }

    /// The tracked slots live at safe point `i`, in index order.
    pub fn safe_point_live_slots(&self, i: usize) -> Result<Vec<u32>> {
        let mut v = Vec::new();
        if i < self.safe_points_encoded.len() {
            self.safe_point_live(i, |s| {
                v.push(s);
                Ok(())
            })?;
        }
        Ok(v)
    }

    fn safe_point_live(&self, i: usize, mut f: impl FnMut(u32) -> Result<()>) -> Result<()> {
        let mut r = BitReader::new(&self.bytes);
        match self.safe_point_states {
            SafePointStates::None => Ok(()),
            SafePointStates::Direct { start } => {
                let n = self.num_tracked as u64;
                r.set_pos(start, "the live states at safe points")?;
                r.skip(i as u64 * n, "a safe point's live state")?;
                for s in 0..self.num_tracked {
                    if r.read1("a safe point's live state")? {
                        f(s)?;
                    }
                }
                Ok(())
            }
            SafePointStates::Indirect {
                table,
                bits,
                states,
            } => {
                r.set_pos(table, "the live state offsets")?;
                r.skip(i as u64 * bits as u64, "a live state offset")?;
                let off = r.read(bits, "a live state offset")?;
                r.set_pos((states as u64 + off) as usize, "a live state")?;
                read_live_state(&mut r, self.num_tracked, f)
            }
        }
    }

    /// The tracked slots live at a pseudo offset (offset within the concatenated
    /// interruptible ranges).
    fn chunk_live(&self, pseudo: u32, f: impl FnMut(u32) -> Result<()>) -> Result<()> {
        let Some(c) = &self.chunks else {
            return Ok(());
        };
        if c.pointer_bits == 0 || c.num_chunks == 0 {
            return Ok(());
        }
        let break_chunk = pseudo / NUM_NORM_CODE_OFFSETS_PER_CHUNK;
        if break_chunk >= c.num_chunks {
            return Ok(());
        }
        let mut r = BitReader::new(&self.bytes);
        let mut chunk = break_chunk;
        let pointer = loop {
            r.set_pos(c.table, "the chunk pointers")?;
            r.skip(chunk as u64 * c.pointer_bits as u64, "a chunk pointer")?;
            let p = r.read(c.pointer_bits, "a chunk pointer")?;
            if p != 0 {
                break p;
            }
            if chunk == 0 {
                return Ok(());
            }
            chunk -= 1;
        };
        r.set_pos((c.data as u64 + pointer - 1) as usize, "chunk data")?;
        let delta = (chunk == break_chunk).then_some(pseudo % NUM_NORM_CODE_OFFSETS_PER_CHUNK);
        read_chunk_live(&mut r, self.num_tracked, delta, f)
    }
}

/// A live-state vector (`GCINFO_WRITE_VAR_VECTOR`): a plain bit per tracked slot after a 0
/// bit, or after a 1 bit a run-length encoding: one bit choosing which base codes the dead
/// runs, the first dead run (unbiased), then live and dead runs alternating (each minus one).
fn read_live_state(
    r: &mut BitReader<'_>,
    num_tracked: u32,
    mut f: impl FnMut(u32) -> Result<()>,
) -> Result<()> {
    if !r.read1("a live state's encoding")? {
        for s in 0..num_tracked {
            if r.read1("a live state")? {
                f(s)?;
            }
        }
        return Ok(());
    }
    let mut skip_base = !r.read1("a live state's run bases")?;
    let mut read_slots = r.var_unsigned(
        if skip_base {
            LIVESTATE_RLE_SKIP_ENCBASE
        } else {
            LIVESTATE_RLE_RUN_ENCBASE
        },
        "a live state run",
    )?;
    skip_base = !skip_base;
    let mut report = true;
    while read_slots < num_tracked as u64 {
        let cnt = r.var_unsigned(
            if skip_base {
                LIVESTATE_RLE_SKIP_ENCBASE
            } else {
                LIVESTATE_RLE_RUN_ENCBASE
            },
            "a live state run",
        )? + 1;
        let to = read_slots.saturating_add(cnt);
        if to > num_tracked as u64 {
            return Err(GcInfoError::RunBeyondSlots {
                from: read_slots,
                to,
                count: num_tracked,
            });
        }
        if report {
            for s in read_slots..to {
                f(s as u32)?;
            }
        }
        read_slots = to;
        skip_base = !skip_base;
        report = !report;
    }
    if read_slots > num_tracked as u64 {
        return Err(GcInfoError::RunBeyondSlots {
            from: read_slots,
            to: read_slots,
            count: num_tracked,
        });
    }
    Ok(())
}

/// Reads a chunk's could-be-live vector and returns the slot indexes it names, leaving `r`
/// after the vector.
fn read_could_be_live(r: &mut BitReader<'_>, num_tracked: u32) -> Result<Vec<u32>> {
    let mut v = Vec::new();
    read_live_state(r, num_tracked, |s| {
        v.push(s);
        Ok(())
    })?;
    Ok(v)
}

/// Walks a chunk (validation): could-be-live slots, final states, each slot's transitions.
fn read_chunk(r: &mut BitReader<'_>, num_tracked: u32) -> Result<()> {
    let slots = read_could_be_live(r, num_tracked)?;
    r.skip(slots.len() as u64, "a chunk's final states")?;
    for _ in &slots {
        while r.read1("a lifetime transition")? {
            r.read(
                NUM_NORM_CODE_OFFSETS_PER_CHUNK_LOG2,
                "a lifetime transition offset",
            )?;
        }
    }
    Ok(())
}

/// The live slots of a chunk at `delta` (its offset in the chunk); `None`: a chunk before
/// the asked one, whose final states hold.
fn read_chunk_live(
    r: &mut BitReader<'_>,
    num_tracked: u32,
    delta: Option<u32>,
    mut f: impl FnMut(u32) -> Result<()>,
) -> Result<()> {
    let slots = read_could_be_live(r, num_tracked)?;
    let mut finals = r.clone();
    r.skip(slots.len() as u64, "a chunk's final states")?;
    for s in slots {
        let mut live = finals.read1("a chunk's final state")?;
        if let Some(d) = delta {
            while r.read1("a lifetime transition")? {
                let t = r.read(
                    NUM_NORM_CODE_OFFSETS_PER_CHUNK_LOG2,
                    "a lifetime transition offset",
                )? as u32;
                if t > d {
                    live = !live;
                }
            }
        }
        if live {
            f(s)?;
        }
    }
    Ok(())
}

fn decode_header(r: &mut BitReader<'_>, version: u32) -> Result<GcInfoHeader> {
    let slim = !r.read1("the header kind")?;
    if slim {
        let (flags, stack_base_register) = if r.read1("the frame register flag")? {
            (
                HeaderFlags(HeaderFlags::HAS_STACK_BASE_REGISTER),
                Some(STACK_BASE_REGISTER_XOR as u8),
            )
        } else {
            (HeaderFlags(0), None)
        };
        let return_kind = if version < 4 {
            Some(r.read(SIZE_OF_RETURN_KIND_IN_SLIM_HEADER, "the return kind")? as u8)
        } else {
            None
        };
        let code_length = r.var_u32(CODE_LENGTH_ENCBASE, "the code length")?;
        if code_length == 0 {
            return Err(GcInfoError::ZeroCodeLength);
        }
        return Ok(GcInfoHeader {
            fat: false,
            flags,
            return_kind,
            code_length,
            prolog_size: None,
            gs_cookie: None,
            psp_sym: None,
            generics_inst_context: None,
            stack_base_register,
            edit_and_continue_preserved_area: None,
            reverse_pinvoke_frame: None,
            size_of_stack_outgoing_and_scratch_area: 0,
        });
    }
    let flags = HeaderFlags(r.read(GC_INFO_FLAGS_BIT_SIZE, "the header flags")? as u16);
    let return_kind = if version < 4 {
        Some(r.read(SIZE_OF_RETURN_KIND_IN_FAT_HEADER, "the return kind")? as u8)
    } else {
        None
    };
    let code_length = r.var_u32(CODE_LENGTH_ENCBASE, "the code length")?;
    if code_length == 0 {
        return Err(GcInfoError::ZeroCodeLength);
    }
    let generics = flags.0 & HeaderFlags::GENERICS_INST_CONTEXT_MASK;
    let mut prolog_size = None;
    let mut valid_range = 0..0;
    if flags.has(HeaderFlags::HAS_GS_COOKIE) {
        let prolog = r
            .var_u32(NORM_PROLOG_SIZE_ENCBASE, "the prolog size")?
            .saturating_add(1);
        let epilog = r.var_u32(NORM_EPILOG_SIZE_ENCBASE, "the epilog size")?;
        prolog_size = Some(prolog);
        valid_range = prolog..code_length.wrapping_sub(epilog);
    } else if generics != 0 {
        let prolog = r
            .var_u32(NORM_PROLOG_SIZE_ENCBASE, "the prolog size")?
            .saturating_add(1);
        prolog_size = Some(prolog);
    }
    let gs_cookie = if flags.has(HeaderFlags::HAS_GS_COOKIE) {
        Some(GsCookie {
            caller_sp_offset: r.var_i32_scaled(
                GS_COOKIE_STACK_SLOT_ENCBASE,
                STACK_SLOT_SCALE,
                "the GS cookie slot",
            )?,
            valid_range,
        })
    } else {
        None
    };
    let psp_sym = if version < 4 && flags.has(HeaderFlags::HAS_PSP_SYM) {
        Some(r.var_i32_scaled(
            PSP_SYM_STACK_SLOT_ENCBASE,
            STACK_SLOT_SCALE,
            "the PSPSym slot",
        )?)
    } else {
        None
    };
    let generics_inst_context = if generics != 0 {
        let offset = r.var_i32_scaled(
            GENERICS_INST_CONTEXT_STACK_SLOT_ENCBASE,
            STACK_SLOT_SCALE,
            "the generics context slot",
        )?;
        let kind = match generics {
            0x10 => GenericsContextKind::MethodTable,
            0x20 => GenericsContextKind::MethodDesc,
            _ => GenericsContextKind::This,
        };
        Some(GenericsContext { offset, kind })
    } else {
        None
    };
    let stack_base_register = if flags.has(HeaderFlags::HAS_STACK_BASE_REGISTER) {
        let v =
            r.var_u32(STACK_BASE_REGISTER_ENCBASE, "the frame register")? ^ STACK_BASE_REGISTER_XOR;
        if v > 15 || v == RSP as u32 {
            return Err(GcInfoError::OutOfRange {
                what: "the frame register",
                value: v as i128,
                limit: 15,
            });
        }
        Some(v as u8)
    } else {
        None
    };
    let edit_and_continue_preserved_area = if flags.has(HeaderFlags::HAS_EDIT_AND_CONTINUE_INFO) {
        Some(r.var_u32(
            SIZE_OF_EDIT_AND_CONTINUE_PRESERVED_AREA_ENCBASE,
            "the edit-and-continue preserved area",
        )?)
    } else {
        None
    };
    let reverse_pinvoke_frame = if flags.has(HeaderFlags::REVERSE_PINVOKE_FRAME) {
        Some(r.var_i32_scaled(
            REVERSE_PINVOKE_FRAME_ENCBASE,
            STACK_SLOT_SCALE,
            "the reverse P/Invoke frame slot",
        )?)
    } else {
        None
    };
    let area = r.var_u32(
        SIZE_OF_STACK_AREA_ENCBASE,
        "the outgoing argument area size",
    )?;
    let size_of_stack_outgoing_and_scratch_area =
        area.checked_mul(8).ok_or(GcInfoError::OutOfRange {
            what: "the outgoing argument area size",
            value: area as i128 * 8,
            limit: u32::MAX as i128,
        })?;
    Ok(GcInfoHeader {
        fat: true,
        flags,
        return_kind,
        code_length,
        prolog_size,
        gs_cookie,
        psp_sym,
        generics_inst_context,
        stack_base_register,
        edit_and_continue_preserved_area,
        reverse_pinvoke_frame,
        size_of_stack_outgoing_and_scratch_area,
    })
}

/// The slot table (`GcSlotDecoder::DecodeSlotTable`): counts, then registers (first in
/// full, then a delta + 1 while the previous had no flags), tracked stack slots and
/// untracked stack slots (2-bit base each; offset in full after a slot with flags, else an
/// unsigned delta from the previous).
fn decode_slot_table(
    r: &mut BitReader<'_>,
    header: &GcInfoHeader,
) -> Result<(Vec<Slot>, u32, u32, u32)> {
    let num_registers = if r.read1("the register slots flag")? {
        r.var_u32(NUM_REGISTERS_ENCBASE, "the number of register slots")?
    } else {
        0
    };
    let (num_stack, num_untracked) = if r.read1("the stack slots flag")? {
        (
            r.var_u32(NUM_STACK_SLOTS_ENCBASE, "the number of stack slots")?,
            r.var_u32(NUM_UNTRACKED_SLOTS_ENCBASE, "the number of untracked slots")?,
        )
    } else {
        (0, 0)
    };
    let total = num_registers as u64 + num_stack as u64 + num_untracked as u64;
    // Each slot takes at least 3 bits: a count beyond that cannot be real.
    if total * 3 > r.len_bits() as u64 {
        return Err(GcInfoError::Truncated {
            what: "the slot table",
            at: r.pos(),
            wanted: (total * 3).min(u32::MAX as u64) as u32,
            len_bits: r.len_bits(),
        });
    }
    let mut slots = Vec::with_capacity(total as usize);
    let mut reg = 0u32;
    let mut flags = 0u8;
    for i in 0..num_registers {
        if i == 0 || flags != 0 {
            reg = r.var_u32(REGISTER_ENCBASE, "a register slot")?;
            flags = r.read(2, "a register slot's flags")? as u8;
        } else {
            let d = r.var_u32(REGISTER_DELTA_ENCBASE, "a register slot delta")?;
            reg = reg.saturating_add(d).saturating_add(1);
        }
        if reg > 15 || reg == RSP as u32 {
            return Err(GcInfoError::InvalidRegister {
                index: i,
                register: reg,
            });
        }
        slots.push(Slot {
            location: SlotLocation::Register(reg as u8),
            flags: SlotFlags(flags),
            untracked: false,
        });
    }
    for (count, untracked) in [(num_stack, false), (num_untracked, true)] {
        let mut offset = 0i64;
        let mut flags = 0u8;
        for j in 0..count {
            let index = slots.len() as u32;
            let base = r.read(2, "a stack slot's base")? as u8;
            if j == 0 || flags != 0 {
                offset = r.var_signed(STACK_SLOT_ENCBASE, "a stack slot offset")?;
                flags = r.read(2, "a stack slot's flags")? as u8;
            } else {
                let d = r.var_unsigned(STACK_SLOT_DELTA_ENCBASE, "a stack slot delta")?;
                offset = offset.saturating_add(d.min(i64::MAX as u64) as i64);
            }
            let base = match base {
                0 => StackBase::CallerSp,
                1 => StackBase::Sp,
                2 => StackBase::Frame,
                b => return Err(GcInfoError::InvalidStackBase { index, base: b }),
            };
            if base == StackBase::Frame && header.stack_base_register.is_none() {
                return Err(GcInfoError::NoFrameRegister);
            }
            let bytes = (offset as i128) * STACK_SLOT_SCALE as i128;
            let off = i32::try_from(bytes).map_err(|_| GcInfoError::OutOfRange {
                what: "a stack slot offset",
                value: bytes,
                limit: i32::MAX as i128,
            })?;
            slots.push(Slot {
                location: SlotLocation::Stack { base, offset: off },
                flags: SlotFlags(flags),
                untracked,
            });
        }
    }
    Ok((
        slots,
        num_registers,
        num_registers + num_stack,
        num_untracked,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two slim-header blobs with no safe points, no interruptible ranges and one untracked
    /// slot (`rbp-8`), each asked as the frame below an exception Frame: .NET 11.0.0's
    /// `ExceptionDispatchInfo.Throw()` of crashasync-net11 (JIT'd at 0x7f0c550d4bd0, GC info
    /// at 0x7f0c5535f450; below its SoftwareExceptionFrame, the return address of the throwing
    /// call at offset 0x39), for which the 11.0.0 DAC's GetStackReferences reports nothing,
    /// and .NET 10.0.14's `Fault.Program.ReadNext` of faultnull-net10 (0x7f2404093ab0, GC info
    /// at 0x7f2404362758; below its FaultingExceptionFrame, faulted at offset 0x5b), for which
    /// the 10.0.14 DAC reports `rbp-8`.
    #[test]
    fn aborted_frames_without_ranges_follow_their_runtime() {
        let throw = GcInfo::decode(&[0xea, 0x80, 0xc8, 0x1f, 0, 0, 0, 0], 5).unwrap();
        let read_next = GcInfo::decode(&[0x92, 0x81, 0xc8, 0x1f, 0, 0, 0, 0], 4).unwrap();
        let rbp_8 = Slot {
            location: SlotLocation::Stack {
                base: StackBase::Frame,
                offset: -8,
            },
            flags: SlotFlags(0),
            untracked: true,
        };
        for g in [&throw, &read_next] {
            assert!(g.interruptible_ranges.is_empty() && g.safe_points().is_empty());
            assert_eq!((g.num_tracked, g.num_untracked), (0, 1));
            assert_eq!(g.slots, vec![rbp_8]);
        }
        let aborted = |needs_range, aborting_call| LivenessQuery {
            execution_aborted: true,
            aborting_call,
            aborted_needs_range: needs_range,
            ..LivenessQuery::default()
        };
        let net11 = GcInfo::aborted_needs_range(11);
        assert!(net11 && !GcInfo::aborted_needs_range(10));
        assert!(throw
            .live_slots_at(0x39, &aborted(net11, true))
            .unwrap()
            .is_empty());
        let live = read_next
            .live_slots_at(0x5b, &aborted(false, false))
            .unwrap();
        assert_eq!(live.iter().map(|l| l.slot).collect::<Vec<_>>(), vec![rbp_8]);
        // Not aborted, the untracked slot is reported either way.
        let caller = LivenessQuery::caller_frame();
        assert_eq!(throw.live_slots_at(0x39, &caller).unwrap().len(), 1);
    }

    #[test]
    fn ceil_log2_matches_the_runtime() {
        // CeilOfLog2(x) = bsr((x << 1) - 1)
        for x in 1u64..5000 {
            let expect = 63 - ((x << 1) - 1).leading_zeros();
            assert_eq!(ceil_log2(x), expect, "{x}");
        }
    }
}
