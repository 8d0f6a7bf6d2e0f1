//! The JIT's debug info as the runtime stores it: native-to-IL offset mappings ("bounds"),
//! variable locations ("vars") and, on .NET 11, runtime-async suspension points.
//!
//! Sources (dotnet/runtime): `src/coreclr/vm/debuginfostore.cpp` (`CompressDebugInfo`),
//! `src/coreclr/inc/nibblestream.h`, `src/coreclr/inc/cordebuginfo.h` (`ICorDebugInfo`), the
//! cDAC's `docs/design/datacontracts/DebugInfo.md` and its readers
//! (`Contracts/DebugInfo/DebugInfo_1.cs`, `DebugInfoHelpers.cs`), and `readytorun.h` at v10.0
//! ("R2R Version 16 replaces the compression format for debug boundaries"). Which layout a
//! release writes was checked on real dumps of each (see the crate's tests):
//!
//! | family | container | bounds | vars |
//! |---|---|---|---|
//! | .NET 8, 9 | JIT'd code: a flag byte (1: `PatchpointInfo` follows, 2: rich debug info follows as a u32 size and data); ReadyToRun: none. Then nibbles `bounds size, vars size` | a count, then per entry nibbles: native offset delta, IL offset + 3, source type | per variable: start, length, number + 4, location |
//! | .NET 10 | as 8/9; a bounds size of 0xFFFFFFFF announces `bounds size, uninstrumented bounds size` | a count, native delta bits - 1, IL bits - 1, then packed entries `[2 source bits][native delta][IL offset + 3]`, least significant first | as 8/9 |
//! | .NET 11 | nibbles `bounds size, vars size` (slim) or `0, bounds, vars, uninstrumented bounds, patchpoint info, rich debug info, async info sizes` (fat), chunks in that order; the same for JIT'd and R2R code | as .NET 10 with 3 source bits (bit 2: async) | per variable: number + 6 (MAX_ILNUM became -6 with CALL_RETURN_ILNUM -5), start, length (a call return value: the call's IL offset, length 1), location |
//!
//! Seen in real dumps (tests/data): .NET 8's `PatchpointInfo` is 32 bytes before its
//! per-local offsets with the local count at 8, .NET 10's 40 with the count at 16 (it gained
//! the tier-0 code's address); .NET 11's async chunk lists per suspension point the native
//! offset (signed delta from the previous one) and its locals (number + 6, offset from the
//! continuation object's start), as the cDAC's DebugInfo.md describes. Not seen, so not
//! checked: rich debug info (only with `DOTNET_RichDebugInfo`; located, not decoded) and
//! uninstrumented bounds (a profiler's rewritten IL; decoded as bounds).
//!
//! Where a blob lives: JIT'd code, `RealCodeHeader::phdrDebugInfo` (offset 0 of the code
//! header whose address is stored just before the method's first instruction); ReadyToRun
//! code, the image's DebugInfo section (105), a NativeArray indexed by the method's
//! RUNTIME_FUNCTION index whose entry is a NativeFormat unsigned `lookBack`: the blob is
//! `lookBack` bytes before the entry when non-zero, else right after it
//! (`ReadyToRunInfo::GetDebugInfo`).

use crate::nibble::NibbleReader;
use std::ops::Range;
use thiserror::Error;

/// `ICorDebugInfo::MAX_MAPPING_VALUE`: IL offsets are stored plus 3.
const IL_OFFSET_BIAS: u32 = 3;
/// `ICorDebugInfo::MAX_ILNUM` on .NET 8-10: variable numbers are stored plus 4.
const MAX_ILNUM: i64 = -4;
/// .NET 11's `MAX_ILNUM` (after `CALL_RETURN_ILNUM` = -5 was added): stored plus 6.
const MAX_ILNUM_NET11: i64 = -6;
/// .NET 11: a variable entry describing the value a call returned.
const CALL_RETURN_ILNUM: u32 = -5i32 as u32;
/// The .NET 11 fat header marker.
const DEBUG_INFO_FAT: u32 = 0;
/// The .NET 10 marker of a header with uninstrumented bounds.
const HAS_INSTRUMENTED_BOUNDS: u32 = 0xFFFF_FFFF;
/// Flag byte bits (.NET 8-10 JIT'd code).
const EXTRA_DEBUG_INFO_PATCHPOINT: u8 = 1;
const EXTRA_DEBUG_INFO_RICH: u8 = 2;
/// Bound on entries decoded (a count beyond what the blob can hold is an error before this).
const MAX_ENTRIES: u32 = 1 << 20;

/// IL offset special values (`ICorDebugInfo::MappingTypes`).
pub const NO_MAPPING: u32 = 0xFFFF_FFFF;
pub const PROLOG: u32 = 0xFFFF_FFFE;
pub const EPILOG: u32 = 0xFFFF_FFFD;

/// A debug info decoding error: what was read and at which byte of the blob.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DebugInfoError {
    #[error("debug info truncated: reading {what} at byte {at}")]
    Truncated { what: &'static str, at: usize },
    #[error("debug info: {what} at byte {at} does not fit 32 bits")]
    Overflow { what: &'static str, at: usize },
    #[error("debug info: {what} {value} at byte {at} is more than the blob's {available} bytes can hold")]
    CountTooLarge {
        what: &'static str,
        value: u64,
        at: usize,
        available: usize,
    },
    #[error("debug info: unknown flag byte bits {0:#04x}")]
    UnknownFlags(u8),
    #[error("debug info: bounds entries of {0} bits")]
    BadBitWidth(u32),
    #[error("debug info: variable {index} has location kind {kind}, not a VarLocType")]
    BadVarLocType { index: u32, kind: u32 },
    #[error("debug info: {what} ({start}..{end}) lies outside the blob's {len} bytes")]
    ChunkOutOfRange {
        what: &'static str,
        start: u64,
        end: u64,
        len: usize,
    },
}

pub type Result<T, E = DebugInfoError> = std::result::Result<T, E>;

/// Which release's layout the blob has (see the module table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebugInfoFormat {
    /// .NET 8 and 9. `flag_byte`: JIT'd code (`RealCodeHeader::phdrDebugInfo`) starts with
    /// the flag byte; ReadyToRun code does not.
    Net8 { flag_byte: bool },
    /// .NET 10 (R2R major 16).
    Net10 { flag_byte: bool },
    /// .NET 11: one layout for JIT'd and ReadyToRun code.
    Net11,
}

impl DebugInfoFormat {
    /// The layout a runtime of major version `major` uses, for JIT'd code (`jit`) or its
    /// ReadyToRun images (a runtime loads only R2R images of its own family's layout:
    /// `MINIMUM_READYTORUN_MAJOR_VERSION`).
    pub fn for_runtime(major: u32, jit: bool) -> DebugInfoFormat {
        match major {
            0..=9 => DebugInfoFormat::Net8 { flag_byte: jit },
            10 => DebugInfoFormat::Net10 { flag_byte: jit },
            _ => DebugInfoFormat::Net11,
        }
    }

    fn has_flag_byte(self) -> bool {
        match self {
            DebugInfoFormat::Net8 { flag_byte } | DebugInfoFormat::Net10 { flag_byte } => flag_byte,
            DebugInfoFormat::Net11 => false,
        }
    }

    /// `sizeof(PatchpointInfo)` before its per-local offsets, and where its local count is
    /// (patchpointinfo.h): .NET 8 and 9 `{uint64 calleeSaveRegisters; unsigned
    /// numberOfLocals; int totalFrameSize, genericContextArgOffset, keptAliveThisOffset,
    /// securityCookieOffset, monitorAcquiredOffset; int offsets[]}`; .NET 10 adds the tier-0
    /// code's address after the callee-saved set (seen in a 10.0.12 dump: 40 bytes, the count
    /// at 16). .NET 11's fat header gives the size instead.
    fn patchpoint_layout(self) -> (usize, usize) {
        match self {
            DebugInfoFormat::Net8 { .. } => (32, 8),
            DebugInfoFormat::Net10 { .. } | DebugInfoFormat::Net11 => (40, 16),
        }
    }

    fn source_bits(self) -> u32 {
        match self {
            DebugInfoFormat::Net8 { .. } => 0,
            DebugInfoFormat::Net10 { .. } => 2,
            DebugInfoFormat::Net11 => 3,
        }
    }
}

/// `ICorDebugInfo::SourceTypes` bits (as the runtime hands them to the debugger).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SourceTypes(pub u32);

impl SourceTypes {
    pub const SEQUENCE_POINT: u32 = 0x01;
    pub const STACK_EMPTY: u32 = 0x02;
    pub const CALL_SITE: u32 = 0x04;
    pub const NATIVE_END_OFFSET_UNKNOWN: u32 = 0x08;
    pub const CALL_INSTRUCTION: u32 = 0x10;
    /// .NET 11: suspension or resumption of a runtime-async call.
    pub const ASYNC: u32 = 0x20;

    pub fn has(self, bit: u32) -> bool {
        self.0 & bit != 0
    }
}

/// One bounds entry: from `native_offset` on (to the next entry's), the code is the IL at
/// `il_offset` ([`NO_MAPPING`], [`PROLOG`], [`EPILOG`] or an IL offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OffsetMapping {
    pub native_offset: u32,
    pub il_offset: u32,
    pub source: SourceTypes,
}

/// x64 register numbers of `ICorDebugInfo::RegNum` (0 rax ... 4 rsp, 5 rbp ... 15 r15).
pub type RegNum = u32;

/// Where a variable lives (`ICorDebugInfo::VarLoc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VarLoc {
    /// `VLT_REG`: in a register.
    Reg(RegNum),
    /// `VLT_REG_BYREF`: the register holds the variable's address.
    RegByRef(RegNum),
    /// `VLT_REG_FP`: in a floating point register (x64: xmm number).
    RegFp(RegNum),
    /// `VLT_STK`: at `[base + offset]`.
    Stack { base: RegNum, offset: i32 },
    /// `VLT_STK_BYREF`: `[base + offset]` holds the variable's address.
    StackByRef { base: RegNum, offset: i32 },
    /// `VLT_REG_REG`: two registers.
    RegReg(RegNum, RegNum),
    /// `VLT_REG_STK`: a register, then a stack slot.
    RegStack {
        reg: RegNum,
        base: RegNum,
        offset: i32,
    },
    /// `VLT_STK_REG`: a stack slot, then a register.
    StackReg {
        base: RegNum,
        offset: i32,
        reg: RegNum,
    },
    /// `VLT_STK2`: two successive stack slots at `[base + offset]`.
    Stack2 { base: RegNum, offset: i32 },
    /// `VLT_FPSTK` (x86 only).
    FpStack(u32),
    /// `VLT_FIXED_VA`: a fixed argument of a varargs method.
    FixedVarArg(u32),
}

/// Variable numbers: IL arguments first (`this` is 0), then IL locals (argument count +
/// local index); negative ones are special (`ICorDebugInfo`: -1 varargs handle, -2 return
/// buffer, -3 generics type context, -4 unknown; .NET 11 adds -5, a call's return value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VarNumber {
    Il(u32),
    VarargsHandle,
    ReturnBuffer,
    TypeContext,
    Unknown,
    /// .NET 11 `CALL_RETURN_ILNUM`: the return value of the call at an IL offset.
    CallReturn,
    /// Another negative number.
    Special(i32),
}

impl VarNumber {
    /// From the runtime's `uint32_t varNumber`.
    pub fn from_raw(v: u32) -> VarNumber {
        match v as i32 {
            -1 => VarNumber::VarargsHandle,
            -2 => VarNumber::ReturnBuffer,
            -3 => VarNumber::TypeContext,
            -4 => VarNumber::Unknown,
            -5 => VarNumber::CallReturn,
            n if (-64..0).contains(&n) => VarNumber::Special(n),
            _ => VarNumber::Il(v),
        }
    }

    /// As the runtime stores it (`uint32_t varNumber`).
    pub fn raw(self) -> u32 {
        match self {
            VarNumber::Il(v) => v,
            VarNumber::VarargsHandle => -1i32 as u32,
            VarNumber::ReturnBuffer => -2i32 as u32,
            VarNumber::TypeContext => -3i32 as u32,
            VarNumber::Unknown => -4i32 as u32,
            VarNumber::CallReturn => -5i32 as u32,
            VarNumber::Special(n) => n as u32,
        }
    }
}

/// One variable's location over a native code range (`ICorDebugInfo::NativeVarInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NativeVarInfo {
    pub start_offset: u32,
    pub end_offset: u32,
    pub var_number: VarNumber,
    pub loc: VarLoc,
    /// .NET 11, [`VarNumber::CallReturn`] entries: the IL offset of the call whose return
    /// value this is (the entry covers `[start, start + 1]`).
    pub call_return_il_offset: Option<u32>,
}

/// A local captured in a runtime-async continuation (.NET 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AsyncLocal {
    pub var_number: VarNumber,
    /// Offset of the local in the continuation's data.
    pub offset: u32,
}

/// A runtime-async suspension point (.NET 11): where the method suspends and which locals it
/// saves in its continuation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsyncSuspensionPoint {
    pub native_offset: u32,
    pub locals: Vec<AsyncLocal>,
}

/// A decoded debug info blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebugInfo {
    pub format: DebugInfoFormat,
    /// Native-to-IL mappings, in native offset order as stored.
    pub bounds: Vec<OffsetMapping>,
    /// The bounds mapped back to the original IL when a profiler rewrote it (.NET 10+).
    pub uninstrumented_bounds: Option<Vec<OffsetMapping>>,
    pub vars: Vec<NativeVarInfo>,
    /// Byte ranges in the blob of the chunks not decoded here.
    pub patchpoint_info: Option<Range<usize>>,
    pub rich_debug_info: Option<Range<usize>>,
    pub async_info_bytes: Option<Range<usize>>,
    /// .NET 11 runtime-async suspension points.
    pub async_suspension_points: Vec<AsyncSuspensionPoint>,
    /// Bytes of the blob the debug info occupies.
    pub size: usize,
}

fn count_check(
    what: &'static str,
    n: u32,
    at: usize,
    remaining: usize,
    min_bits: u64,
) -> Result<()> {
    // Every entry takes at least `min_bits` bits.
    if n > MAX_ENTRIES || (n as u64) * min_bits > (remaining as u64) * 8 {
        return Err(DebugInfoError::CountTooLarge {
            what,
            value: n as u64,
            at,
            available: remaining,
        });
    }
    Ok(())
}

fn chunk<'a>(bytes: &'a [u8], what: &'static str, start: u64, len: u64) -> Result<&'a [u8]> {
    let end = start + len;
    if end > bytes.len() as u64 {
        return Err(DebugInfoError::ChunkOutOfRange {
            what,
            start,
            end,
            len: bytes.len(),
        });
    }
    Ok(&bytes[start as usize..end as usize])
}

impl DebugInfo {
    /// Decodes a debug info blob of the given layout. `bytes` may run past the blob (a
    /// bounded read from a dump): only what the header's sizes cover is read, and
    /// [`DebugInfo::size`] says how much that is.
    pub fn decode(bytes: &[u8], format: DebugInfoFormat) -> Result<DebugInfo> {
        let mut pos = 0usize;
        let mut patchpoint_info = None;
        let mut rich_debug_info = None;
        if format.has_flag_byte() {
            let flags = *bytes.first().ok_or(DebugInfoError::Truncated {
                what: "the flag byte",
                at: 0,
            })?;
            pos = 1;
            if flags & !(EXTRA_DEBUG_INFO_PATCHPOINT | EXTRA_DEBUG_INFO_RICH) != 0 {
                return Err(DebugInfoError::UnknownFlags(flags));
            }
            if flags & EXTRA_DEBUG_INFO_PATCHPOINT != 0 {
                let (fixed, count_at) = format.patchpoint_layout();
                let c = chunk(
                    bytes,
                    "the patchpoint info's local count",
                    (pos + count_at) as u64,
                    4,
                )?;
                let locals = u32::from_le_bytes(c.try_into().unwrap()) as u64;
                let size = fixed as u64 + locals * 4;
                chunk(bytes, "the patchpoint info", pos as u64, size)?;
                patchpoint_info = Some(pos..pos + size as usize);
                pos += size as usize;
            }
            if flags & EXTRA_DEBUG_INFO_RICH != 0 {
                let c = chunk(bytes, "the rich debug info's size", pos as u64, 4)?;
                let size = u32::from_le_bytes(c.try_into().unwrap()) as u64;
                chunk(bytes, "the rich debug info", pos as u64 + 4, size)?;
                rich_debug_info = Some(pos + 4..pos + 4 + size as usize);
                pos += 4 + size as usize;
            }
        }

        let mut h = NibbleReader::new(&bytes[pos..], pos);
        let mut sizes = [0u32; 6]; // bounds, vars, uninstrumented, patchpoint, rich, async
        let first = h.u32("the bounds size")?;
        match format {
            DebugInfoFormat::Net11 if first == DEBUG_INFO_FAT => {
                for (i, what) in [
                    "the bounds size",
                    "the vars size",
                    "the uninstrumented bounds size",
                    "the patchpoint info size",
                    "the rich debug info size",
                    "the async info size",
                ]
                .into_iter()
                .enumerate()
                {
                    sizes[i] = h.u32(what)?;
                }
            }
            DebugInfoFormat::Net10 { .. } if first == HAS_INSTRUMENTED_BOUNDS => {
                sizes[0] = h.u32("the bounds size")?;
                sizes[2] = h.u32("the uninstrumented bounds size")?;
                sizes[1] = h.u32("the vars size")?;
            }
            _ => {
                sizes[0] = first;
                sizes[1] = h.u32("the vars size")?;
            }
        }
        let mut at = (pos + h.next_byte_index()) as u64;
        // Chunk order: bounds, [uninstrumented bounds], vars (.NET 10), or bounds, vars,
        // uninstrumented, patchpoint, rich, async (.NET 11).
        let order: &[usize] = match format {
            DebugInfoFormat::Net10 { .. } => &[0, 2, 1],
            _ => &[0, 1, 2, 3, 4, 5],
        };
        let mut ranges: [Option<Range<u64>>; 6] = Default::default();
        for &i in order {
            let len = sizes[i] as u64;
            ranges[i] = Some(at..at + len);
            at += len;
        }
        if at > bytes.len() as u64 {
            return Err(DebugInfoError::ChunkOutOfRange {
                what: "the debug info's chunks",
                start: pos as u64,
                end: at,
                len: bytes.len(),
            });
        }
        let slice = |i: usize| -> (&[u8], usize) {
            let r = ranges[i].clone().unwrap_or(0..0);
            (&bytes[r.start as usize..r.end as usize], r.start as usize)
        };
        let bounds = match slice(0) {
            ([], _) => Vec::new(),
            (b, base) => decode_bounds(b, base, format)?,
        };
        let uninstrumented_bounds = match slice(2) {
            ([], _) => None,
            (b, base) => Some(decode_bounds(b, base, format)?),
        };
        let vars = match slice(1) {
            ([], _) => Vec::new(),
            (b, base) => decode_vars(b, base, format)?,
        };
        let to_range = |i: usize| {
            ranges[i]
                .clone()
                .filter(|r| r.end > r.start)
                .map(|r| r.start as usize..r.end as usize)
        };
        if format == DebugInfoFormat::Net11 {
            patchpoint_info = to_range(3);
            rich_debug_info = to_range(4);
        }
        let async_info_bytes = to_range(5);
        let async_suspension_points = match slice(5) {
            ([], _) => Vec::new(),
            (b, base) => decode_async(b, base)?,
        };
        Ok(DebugInfo {
            format,
            bounds,
            uninstrumented_bounds,
            vars,
            patchpoint_info,
            rich_debug_info,
            async_info_bytes,
            async_suspension_points,
            size: at as usize,
        })
    }

    /// The IL offsets the DAC maps a native offset to (`ClrDataMethodInstance::
    /// GetILOffsetsByAddress`): each bounds entry `i` covers `[native_offset(i),
    /// native_offset(i+1))`; the last entry, and an epilog entry whose successor starts at
    /// offset 0, are open-ended. Several entries can cover one offset (a call instruction
    /// and its statement); they come in bounds order. `native_offset` is the address minus
    /// the method's native code start.
    pub fn il_offsets_at(&self, native_offset: u32) -> Vec<u32> {
        let b = &self.bounds;
        let mut out = Vec::new();
        for (i, m) in b.iter().enumerate() {
            // The DAC's DebuggerILToNativeMap: nativeEndOffset is the next entry's start,
            // 0 for the last entry.
            let end = if i + 1 < b.len() {
                b[i + 1].native_offset
            } else {
                0
            };
            let open = (m.il_offset == EPILOG || i + 1 == b.len()) && end == 0;
            if native_offset >= m.native_offset && (open || native_offset < end) {
                out.push(m.il_offset);
            }
        }
        out
    }

    /// The IL offset of a native offset as SOS shows it (the first of
    /// [`DebugInfo::il_offsets_at`]). For a frame that is not the leaf (its IP is a return
    /// address) SOS asks for IP - 1, inside the call (`ConvertNativeToIlOffset`,
    /// `StackWalkIPAdjustOffset`), so pass `ip - 1 - start` for such frames.
    pub fn il_offset_at(&self, native_offset: u32) -> Option<u32> {
        self.il_offsets_at(native_offset).first().copied()
    }

    /// The location of variable `var` at `native_offset` as the DAC picks it
    /// (`ClrDataFrame::ValueFromDebugInfo`): the first entry of that number whose range
    /// `[start, end]` (inclusive) holds the offset. The DAC uses the frame's IP itself, a
    /// return address for non-leaf frames.
    pub fn var_location(&self, var: VarNumber, native_offset: u32) -> Option<&NativeVarInfo> {
        self.vars.iter().find(|v| {
            v.var_number == var && v.start_offset <= native_offset && v.end_offset >= native_offset
        })
    }
}

/// Bounds of .NET 8/9: count, then nibble triples.
fn decode_bounds(b: &[u8], base: usize, format: DebugInfoFormat) -> Result<Vec<OffsetMapping>> {
    let mut r = NibbleReader::new(b, base);
    let count = r.u32("the bounds count")?;
    if format.source_bits() == 0 {
        count_check("the bounds count", count, base, b.len(), 12)?;
        let mut out = Vec::with_capacity(count as usize);
        let mut native = 0u32;
        for _ in 0..count {
            native = native.wrapping_add(r.u32("a bounds native offset delta")?);
            let il = r.u32("a bounds IL offset")?.wrapping_sub(IL_OFFSET_BIAS);
            let source = r.u32("a bounds source type")?;
            out.push(OffsetMapping {
                native_offset: native,
                il_offset: il,
                source: SourceTypes(source),
            });
        }
        return Ok(out);
    }
    // .NET 10/11: bit-packed entries after the nibble header.
    let native_bits = r.u32("the bounds native delta width")? as u64 + 1;
    let il_bits = r.u32("the bounds IL offset width")? as u64 + 1;
    let source_bits = format.source_bits() as u64;
    let width = native_bits + il_bits + source_bits;
    if native_bits > 32 || il_bits > 33 || width > 64 {
        return Err(DebugInfoError::BadBitWidth(
            width.min(u32::MAX as u64) as u32
        ));
    }
    let data = &b[r.next_byte_index()..];
    if count > MAX_ENTRIES || count as u64 * width > data.len() as u64 * 8 {
        return Err(DebugInfoError::CountTooLarge {
            what: "the bounds count",
            value: count as u64,
            at: base,
            available: data.len(),
        });
    }
    let mut out = Vec::with_capacity(count as usize);
    let mut native = 0u32;
    let mut bit = 0u64;
    for _ in 0..count {
        let mut v = 0u64;
        for k in 0..width {
            let p = bit + k;
            let byte = data[(p / 8) as usize] as u64;
            v |= ((byte >> (p % 8)) & 1) << k;
        }
        bit += width;
        let src = v & ((1 << source_bits) - 1);
        v >>= source_bits;
        let delta = (v & ((1u64 << native_bits) - 1)) as u32;
        v >>= native_bits;
        let il = (v as u32).wrapping_sub(IL_OFFSET_BIAS);
        native = native.wrapping_add(delta);
        let mut source = 0;
        if src & 1 != 0 {
            source |= SourceTypes::CALL_INSTRUCTION;
        }
        if src & 2 != 0 {
            source |= SourceTypes::STACK_EMPTY;
        }
        if src & 4 != 0 {
            source |= SourceTypes::ASYNC;
        }
        out.push(OffsetMapping {
            native_offset: native,
            il_offset: il,
            source: SourceTypes(source),
        });
    }
    Ok(out)
}

/// Vars: count, then per variable (`DoNativeVarInfo`).
fn decode_vars(b: &[u8], base: usize, format: DebugInfoFormat) -> Result<Vec<NativeVarInfo>> {
    let mut r = NibbleReader::new(b, base);
    let count = r.u32("the vars count")?;
    count_check("the vars count", count, base, b.len(), 20)?;
    let mut out = Vec::with_capacity(count as usize);
    for index in 0..count {
        let (start, end, num);
        let mut call_return_il_offset = None;
        if format == DebugInfoFormat::Net11 {
            // .NET 11: the number first (entries sorted by it), then the range, or for a
            // call's return value the call's IL offset.
            num = (r.u32("a variable number")? as i64 + MAX_ILNUM_NET11) as u32;
            start = r.u32("a variable's start offset")?;
            if num == CALL_RETURN_ILNUM {
                call_return_il_offset = Some(r.u32("a call return value's IL offset")?);
                end = start.wrapping_add(1);
            } else {
                end = start.wrapping_add(r.u32("a variable's range length")?);
            }
        } else {
            start = r.u32("a variable's start offset")?;
            end = start.wrapping_add(r.u32("a variable's range length")?);
            num = (r.u32("a variable number")? as i64 + MAX_ILNUM) as u32;
        }
        let kind = r.u32("a variable's location kind")?;
        let reg = |r: &mut NibbleReader<'_>| r.u32("a variable's register");
        let off = |r: &mut NibbleReader<'_>| r.i32("a variable's stack offset");
        let loc = match kind {
            0 => VarLoc::Reg(reg(&mut r)?),
            1 => VarLoc::RegByRef(reg(&mut r)?),
            2 => VarLoc::RegFp(reg(&mut r)?),
            3 => {
                let base = reg(&mut r)?;
                VarLoc::Stack {
                    base,
                    offset: off(&mut r)?,
                }
            }
            4 => {
                let base = reg(&mut r)?;
                VarLoc::StackByRef {
                    base,
                    offset: off(&mut r)?,
                }
            }
            5 => {
                let a = reg(&mut r)?;
                VarLoc::RegReg(a, reg(&mut r)?)
            }
            6 => {
                let rg = reg(&mut r)?;
                let base = reg(&mut r)?;
                VarLoc::RegStack {
                    reg: rg,
                    base,
                    offset: off(&mut r)?,
                }
            }
            7 => {
                let offset = off(&mut r)?;
                let base = reg(&mut r)?;
                VarLoc::StackReg {
                    base,
                    offset,
                    reg: reg(&mut r)?,
                }
            }
            8 => {
                let base = reg(&mut r)?;
                VarLoc::Stack2 {
                    base,
                    offset: off(&mut r)?,
                }
            }
            9 => VarLoc::FpStack(r.u32("a variable's FP stack slot")?),
            10 => VarLoc::FixedVarArg(r.u32("a variable's varargs offset")?),
            _ => return Err(DebugInfoError::BadVarLocType { index, kind }),
        };
        out.push(NativeVarInfo {
            start_offset: start,
            end_offset: end,
            var_number: VarNumber::from_raw(num),
            loc,
            call_return_il_offset,
        });
    }
    Ok(out)
}

/// .NET 11 async info: suspension point count, total locals count, per point (native offset
/// delta (signed), locals count), then every local (var number - MAX_ILNUM, offset).
fn decode_async(b: &[u8], base: usize) -> Result<Vec<AsyncSuspensionPoint>> {
    let mut r = NibbleReader::new(b, base);
    let n = r.u32("the suspension point count")?;
    count_check("the suspension point count", n, base, b.len(), 8)?;
    let _total = r.u32("the async locals count")?;
    let mut points = Vec::with_capacity(n as usize);
    let mut counts = Vec::with_capacity(n as usize);
    let mut last = 0i64;
    for _ in 0..n {
        last += r.i32("a suspension point's native offset delta")? as i64;
        let c = r.u32("a suspension point's locals count")?;
        count_check("a suspension point's locals count", c, base, b.len(), 8)?;
        points.push(AsyncSuspensionPoint {
            native_offset: last as u32,
            locals: Vec::new(),
        });
        counts.push(c);
    }
    for (p, c) in points.iter_mut().zip(counts) {
        for _ in 0..c {
            let num = (r.u32("an async local's variable number")? as i64 + MAX_ILNUM_NET11) as u32;
            let offset = r.u32("an async local's offset")?;
            p.locals.push(AsyncLocal {
                var_number: VarNumber::from_raw(num),
                offset,
            });
        }
    }
    Ok(points)
}
