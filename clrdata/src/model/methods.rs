//! A type's methods: MethodDescChunks, MethodDescs and vtable slots (what `dumpmt -md` lists).
//!
//! .NET 8 (dotnet/runtime v8.0.4 `method.hpp`, `methodtable.h`, `class.h`; every offset and
//! size below was checked against real dumps and the runtime DAC, see
//! `dumps/tools/dac_methods.py`):
//! - `MethodDesc` (8 bytes): u16 m_wFlags3AndTokenRemainder, u8 m_chunkIndex (its distance from
//!   the chunk's first MethodDesc in 8-byte units), u8 m_methodIndex, u16 m_wSlotNumber, u16
//!   m_wFlags (classification = & 7; HasNonVtableSlot 8, MethodImpl 0x10, HasNativeCodeSlot
//!   0x20). m_wFlags3AndTokenRemainder: the token's low 12 bits, HasStableEntryPoint 0x1000,
//!   HasPrecode 0x2000. Its size: the classification's base size (IL 8, FCall 16, NDirect 48,
//!   EEImpl 24, Array 24, Instantiated 32, ComInterop 16, Dynamic 40), then in order the
//!   optional non-vtable slot (8), MethodImpl (16) and native code slot (8).
//! - `MethodDescChunk` (0x18 bytes, its MethodDescs follow): MethodTable*, next chunk*, u8
//!   m_size (bytes of MethodDescs / 8 − 1), u8 m_count (MethodDescs − 1), u16 token range.
//!   The EEClass's m_pChunks lists the chunks of the methods the type itself introduces.
//! - Slots: the first m_wNumVirtuals slots are in 8-slot vtable chunks pointed to from just
//!   after the MethodTable; then, when m_wFlags2 has HasNonVirtualSlots, the EEClass's
//!   NumNonVirtualSlots more, in a multipurpose slot (the value itself when
//!   HasSingleNonVirtualSlot 0x4000, else a pointer to an array). Multipurpose slots: PerInstInfo
//!   at +0x30 and InterfaceMap at +0x38 when present; DispatchMap, NonVirtualSlots and
//!   ModuleOverride, in this order, take the free ones of these two, then follow the vtable
//!   chunk pointers. Methods whose slot is beyond the vtable keep their entry point in their
//!   own non-vtable slot.
//! - The DAC lists slots 0 ≤ n < NumMethods (EEClass packed field 1): a vtable slot's entry
//!   point (`GetRestoredSlot`: the canonical MethodTable's, else a parent's when null), else the
//!   entry point of the introduced method with that slot; the MethodDesc of an entry point is
//!   its code's (JIT'd code header; ReadyToRun: the method of that token in the type's
//!   hierarchy), else the precode's.
//!
//! .NET 9 and 10 (`layout::MethodsLayout`, filled from the contract descriptor and
//! `supplement.rs`; docs/clr-layout-net9-10.md "Methods on .NET 9 and 10"): a 16-byte
//! MethodDesc (`m_codeData` at 8) and subclasses 8 bytes larger, the same flag bits; slot counts
//! as plain EEClass WORDs and the non-virtual slots in an array growing backwards from
//! `MethodTableAuxiliaryData + OffsetToNonVirtualSlots`; entry points assigned lazily (a null
//! slot: no entry point yet, the DAC's S_FALSE; only a virtual slot is inherited); a method
//! StubPrecode's type byte as the runtime's PrecodeMachineDescriptor publishes it (10).

use crate::data::types::ReadTypes;
use crate::discovery::layout::SlotScheme;
use crate::model::objects::ObjectReader;
use crate::model::precode::precode_method_desc;
use crate::model::stack::{CodeKind, StackWalker};
use dumpreader::Memory;
use serde::Serialize;

/// Bound on chunks per class and MethodDescs per chunk (m_count is a byte).
const MAX_CHUNKS: usize = 4096;
/// Bound on a parent chain.
const MAX_DEPTH: usize = 64;
/// MethodDesc flags (m_wFlags).
const MDC_HAS_NON_VTABLE_SLOT: u16 = 0x0008;
const MDC_METHOD_IMPL: u16 = 0x0010;
const MDC_HAS_NATIVE_CODE_SLOT: u16 = 0x0020;
/// .NET 11: an `AsyncMethodData` follows the other optional slots (the cDAC's
/// `MethodDescFlags.HasAsyncMethodData`; its size is the descriptor's). Verified by the chunk
/// walk: every MethodDesc's m_chunkIndex equals its offset on the .NET 11 corpus.
const MDC_HAS_ASYNC_METHOD_DATA: u16 = 0x0040;
/// m_wFlags3AndTokenRemainder (above the 12-bit token remainder).
const MD3_HAS_STABLE_ENTRY_POINT: u16 = 0x1000;
const MD3_HAS_PRECODE: u16 = 0x2000;
/// The FCall classification (m_wFlags & 7).
const CLASSIFICATION_FCALL: u8 = 1;
/// MethodTable m_wFlags2 bits.
use crate::discovery::layout::mt_flags::{
    F2_HAS_DISPATCH_MAP_SLOT as F2_HAS_DISPATCH_MAP, F2_HAS_INTERFACE_MAP, F2_HAS_MODULE_OVERRIDE,
    F2_HAS_NON_VIRTUAL_SLOTS, F2_HAS_PER_INST_INFO, F2_HAS_SINGLE_NON_VIRTUAL_SLOT,
};
use crate::model::dynamic::{dynamic_method_name, CLASSIFICATION_DYNAMIC};
/// EEClassPackedFields indices.
const PACKED_NUM_METHODS: u64 = 1;
const PACKED_NUM_NON_VIRTUAL_SLOTS: u64 = 10;

/// A MethodDesc decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MethodDescData {
    /// Its address.
    pub address: u64,
    /// Its MethodDescChunk.
    pub chunk: u64,
    /// The chunk's MethodTable (the canonical one for shared generic code).
    pub method_table: u64,
    /// The MethodDef token.
    pub token: u32,
    /// Its slot number.
    pub slot: u16,
    /// m_wFlags.
    pub flags: u16,
    /// m_wFlags3AndTokenRemainder.
    pub flags3: u16,
    /// Classification (0 IL, 1 FCall, 2 NDirect, 3 EEImpl, 4 Array, 5 Instantiated,
    /// 6 ComInterop, 7 Dynamic).
    pub classification: u8,
    /// Its size in the chunk, with the optional slots.
    pub size: u64,
    /// The address of its own entry-point slot (methods whose slot is not in the vtable).
    pub non_vtable_slot: Option<u64>,
    /// The address of its native code slot.
    pub native_code_slot: Option<u64>,
}

impl MethodDescData {
    /// Whether the entry point is stable (m_wFlags3AndTokenRemainder).
    pub fn has_stable_entry_point(&self) -> bool {
        self.flags3 & MD3_HAS_STABLE_ENTRY_POINT != 0
    }
    /// Whether the entry point is a precode.
    pub fn has_precode(&self) -> bool {
        self.flags3 & MD3_HAS_PRECODE != 0
    }
}

/// Decodes the MethodDesc at `md` (its chunk through m_chunkIndex).
pub fn method_desc<M: Memory>(r: &ObjectReader<'_, M>, md: u64) -> crate::Result<MethodDescData> {
    r.rt.require(crate::discovery::layout::Capability::Methods)?;
    let l = r.rt.layout.stack();
    let m = r.rt.memory();
    let mut b = [0u8; 8];
    m.read_exact(md, &mut b)
        .map_err(|_| crate::ClrError::read("MethodDesc", md))?;
    let rem = u16::from_le_bytes([b[0], b[1]]);
    let index = b[2] as u64;
    let raw_slot = u16::from_le_bytes([b[4], b[5]]);
    let flags = u16::from_le_bytes([b[6], b[7]]);
    let chunk = md
        .wrapping_sub(index * l.md_alignment)
        .wrapping_sub(l.method_desc_chunk_size);
    let mt = m
        .read_u64(chunk.wrapping_add(l.chunk_method_table))
        .map_err(|_| {
            crate::ClrError::read(format!("the MethodDescChunk of MethodDesc {md:#x}"), chunk)
        })?;
    let range = m
        .read_u16(chunk.wrapping_add(l.chunk_token_range))
        .map_err(|_| {
            crate::ClrError::read(format!("the MethodDescChunk of MethodDesc {md:#x}"), chunk)
        })?;
    let bits = l.md_token_remainder_bits;
    let rid =
        ((range as u32 & ((1 << (24 - bits)) - 1)) << bits) | (rem as u32 & ((1 << bits) - 1));
    let classification = (flags & 7) as u8;
    let ml = &r.rt.layout.methods;
    let mut size = ml.method_desc_sizes[classification as usize];
    let mut non_vtable_slot = None;
    if flags & MDC_HAS_NON_VTABLE_SLOT != 0 {
        non_vtable_slot = Some(md.wrapping_add(size));
        size += ml.non_vtable_slot_size;
    }
    if flags & MDC_METHOD_IMPL != 0 {
        size += ml.method_impl_size;
    }
    let mut native_code_slot = None;
    if flags & MDC_HAS_NATIVE_CODE_SLOT != 0 {
        native_code_slot = Some(md.wrapping_add(size));
        size += ml.native_code_slot_size;
    }
    if let Some(n) = ml.async_method_data_size {
        if flags & MDC_HAS_ASYNC_METHOD_DATA != 0 {
            size += n;
        }
    }
    Ok(MethodDescData {
        address: md,
        chunk,
        method_table: mt,
        token: 0x0600_0000 | rid,
        slot: raw_slot,
        flags,
        flags3: rem,
        classification,
        size,
        non_vtable_slot,
        native_code_slot,
    })
}

/// The MethodDescs a class introduces, from its EEClass's chunk list. Each chunk is checked:
/// every MethodDesc's m_chunkIndex must equal its distance from the chunk's start, and the
/// sizes must add up to the chunk's m_size and m_count.
pub fn introduced_methods<M: Memory>(
    r: &ObjectReader<'_, M>,
    ee_class: u64,
) -> crate::Result<Vec<MethodDescData>> {
    r.rt.require(crate::discovery::layout::Capability::Methods)?;
    let l = r.rt.layout.stack();
    let m = r.rt.memory();
    let mut chunk = m
        .read_u64(ee_class.wrapping_add(r.rt.layout.ee_class.chunks))
        .map_err(|_| {
            crate::ClrError::corrupt("EEClass", ee_class, "m_pChunks is not in the dump")
        })?;
    let mut out = Vec::new();
    for _ in 0..MAX_CHUNKS {
        if chunk == 0 {
            return Ok(out);
        }
        let next = m
            .read_u64(chunk.wrapping_add(8))
            .map_err(|_| crate::ClrError::read("MethodDescChunk", chunk))?;
        let size =
            m.read_u8(chunk.wrapping_add(0x10))
                .map_err(|_| crate::ClrError::read("MethodDescChunk", chunk))? as u64;
        let count =
            m.read_u8(chunk.wrapping_add(0x11))
                .map_err(|_| crate::ClrError::read("MethodDescChunk", chunk))? as usize
                + 1;
        let bytes = (size + 1) * l.md_alignment;
        let first = chunk.wrapping_add(l.method_desc_chunk_size);
        let mut off = 0u64;
        for i in 0..count {
            if off >= bytes {
                return Err(crate::ClrError::corrupt(
                    "MethodDescChunk",
                    chunk,
                    format!(
                        "MethodDesc {i} of {count} starts past its \
                     {bytes:#x} bytes"
                    ),
                ));
            }
            let md = first.wrapping_add(off);
            let idx = m
                .read_u8(md.wrapping_add(l.md_chunk_index))
                .map_err(|_| crate::ClrError::read("MethodDesc", md))? as u64;
            if idx * l.md_alignment != off {
                return Err(crate::ClrError::corrupt(
                    "MethodDescChunk",
                    chunk,
                    format!(
                        "the MethodDesc at {md:#x} has m_chunkIndex \
                     {idx}, expected {} (MethodDesc sizes misread?)",
                        off / l.md_alignment
                    ),
                ));
            }
            let d = method_desc(r, md)?;
            off += d.size;
            out.push(d);
        }
        if off != bytes {
            return Err(crate::ClrError::corrupt(
                "MethodDescChunk",
                chunk,
                format!(
                    "its {count} MethodDescs take {off:#x} bytes, its \
                 m_size says {bytes:#x}"
                ),
            ));
        }
        chunk = next;
    }
    Err(crate::ClrError::corrupt(
        "EEClass",
        ee_class,
        format!("more than {MAX_CHUNKS} MethodDescChunks (a cycle?)"),
    ))
}

/// EEClassPackedFields[index], when the EEClass keeps them unpacked.
fn packed_field<M: Memory>(
    r: &ObjectReader<'_, M>,
    ee_class: u64,
    index: u64,
) -> crate::Result<u32> {
    let l = &r.rt.layout.ee_class;
    let m = r.rt.memory();
    let packed = m
        .read_u8(ee_class.wrapping_add(l.fields_are_packed))
        .map_err(|_| crate::ClrError::read("EEClass", ee_class))?;
    if packed != 0 {
        return Err(crate::ClrError::unsupported(
            "EEClass",
            Some(ee_class),
            "it keeps its counters bit-packed (not decoded)",
        ));
    }
    let fixed = m
        .read_u8(ee_class.wrapping_add(l.fixed_fields_size))
        .map_err(|_| crate::ClrError::read("EEClass", ee_class))? as u64;
    m.read_u32(ee_class.wrapping_add(fixed + 4 * index))
        .map_err(|_| {
            crate::ClrError::read(
                format!("packed field {index} of EEClass {ee_class:#x}"),
                ee_class.wrapping_add(fixed + 4 * index),
            )
        })
}

/// The slot counts of a MethodTable: (virtual slots, vtable slots, all slots = NumMethods).
pub fn slot_counts<M: Memory>(r: &ObjectReader<'_, M>, mt: u64) -> crate::Result<(u16, u16, u32)> {
    r.rt.require(crate::discovery::layout::Capability::Methods)?;
    let info = r.rt.method_table(mt)?;
    let (num_methods, non_virtual) = match r.rt.layout.methods.slots {
        SlotScheme::Net8Packed => {
            let num_methods = packed_field(r, info.ee_class, PACKED_NUM_METHODS)?;
            let non_virtual = if info.flags2 & F2_HAS_NON_VIRTUAL_SLOTS != 0 {
                packed_field(r, info.ee_class, PACKED_NUM_NON_VIRTUAL_SLOTS)?
            } else {
                0
            };
            (num_methods, non_virtual)
        }
        SlotScheme::Net9Aux {
            ee_class_num_methods,
            ee_class_num_non_virtual_slots,
            ..
        } => {
            let m = r.rt.memory();
            let ee = info.ee_class;
            let rd = |off: u64, what: &str| {
                m.read_u16(ee.wrapping_add(off))
                    .map(u32::from)
                    .map_err(|_| {
                        crate::ClrError::read(
                            format!("EEClass {ee:#x}'s {what}"),
                            ee.wrapping_add(off),
                        )
                    })
            };
            (
                rd(ee_class_num_methods, "NumMethods")?,
                rd(ee_class_num_non_virtual_slots, "NumNonVirtualSlots")?,
            )
        }
    };
    if num_methods > 0xFFFF || non_virtual > 0xFFFF {
        return Err(crate::ClrError::corrupt(
            "EEClass",
            info.ee_class,
            format!(
                "{num_methods} methods, {non_virtual} non-virtual slots (at most 65535: damaged?)"
            ),
        ));
    }
    let vtable = info.num_virtuals as u32 + non_virtual;
    if vtable > 0xFFFF || vtable > num_methods.max(info.num_virtuals as u32) {
        return Err(crate::ClrError::corrupt(
            "MethodTable",
            mt,
            format!(
                "{} virtuals + {non_virtual} non-virtual slots exceed its \
             {num_methods} methods",
                info.num_virtuals
            ),
        ));
    }
    Ok((info.num_virtuals, vtable as u16, num_methods))
}

/// The offset from a MethodTable of its multipurpose slot for `flag` (DispatchMap 4,
/// NonVirtualSlots 8, ModuleOverride 0x10; the flag must be set): PerInstInfo and InterfaceMap
/// own +0x30 / +0x38 when present; the others, in flag order, take the free ones of these two,
/// then overflow slots after the vtable chunk pointers.
fn multipurpose_offset(
    l: &crate::discovery::layout::MethodTableLayout,
    flags2: u16,
    num_virtuals: u16,
    flag: u16,
) -> u64 {
    let mut free: Vec<u64> = Vec::new();
    if flags2 & F2_HAS_PER_INST_INFO == 0 {
        free.push(l.per_inst_info);
    }
    if flags2 & F2_HAS_INTERFACE_MAP == 0 {
        free.push(l.interface_map);
    }
    let before = [
        F2_HAS_DISPATCH_MAP,
        F2_HAS_NON_VIRTUAL_SLOTS,
        F2_HAS_MODULE_OVERRIDE,
    ]
    .iter()
    .take_while(|&&f| f != flag)
    .filter(|&&f| flags2 & f != 0)
    .count();
    match free.get(before) {
        Some(&o) => o,
        None => l.size + 8 * (num_virtuals as u64).div_ceil(8) + 8 * (before - free.len()) as u64,
    }
}

/// The address of vtable slot `slot` of `mt` (slot < its vtable slots).
fn slot_address<M: Memory>(r: &ObjectReader<'_, M>, mt: u64, slot: u32) -> crate::Result<u64> {
    let info = r.rt.method_table(mt)?;
    let m = r.rt.memory();
    let base = r.rt.layout.method_table.size;
    let nv = info.num_virtuals as u32;
    if slot < nv {
        let ind = mt.wrapping_add(base + 8 * (slot as u64 / 8));
        let chunk = m.read_u64(ind).map_err(|_| {
            crate::ClrError::corrupt(
                "MethodTable",
                mt,
                format!("vtable chunk pointer at {ind:#x} is not in the dump"),
            )
        })?;
        return Ok(chunk.wrapping_add(8 * (slot as u64 % 8)));
    }
    if let SlotScheme::Net9Aux {
        method_table_aux,
        aux_offset_to_non_virtual_slots,
        ..
    } = r.rt.layout.methods.slots
    {
        // .NET 9+: an array growing backwards from the auxiliary data's offset.
        let aux = m.read_u64(mt.wrapping_add(method_table_aux)).map_err(|_| {
            crate::ClrError::read(
                format!("the AuxiliaryData pointer of MethodTable {mt:#x}"),
                mt.wrapping_add(method_table_aux),
            )
        })?;
        let off = m
            .read_u16(aux.wrapping_add(aux_offset_to_non_virtual_slots))
            .map_err(|_| {
                crate::ClrError::read(
                    format!("the MethodTableAuxiliaryData of MethodTable {mt:#x}"),
                    aux,
                )
            })? as i16;
        return Ok(aux
            .wrapping_add_signed(off as i64)
            .wrapping_sub(8 * (1 + (slot - nv) as u64)));
    }
    let f2 = info.flags2;
    if f2 & F2_HAS_NON_VIRTUAL_SLOTS == 0 {
        return Err(crate::ClrError::not_found_at(
            format!("non-virtual slot {slot}"),
            mt,
            "the MethodTable has no non-virtual slots",
        ));
    }
    let off = multipurpose_offset(
        &r.rt.layout.method_table,
        f2,
        info.num_virtuals,
        F2_HAS_NON_VIRTUAL_SLOTS,
    );
    let at = mt.wrapping_add(off);
    if f2 & F2_HAS_SINGLE_NON_VIRTUAL_SLOT != 0 {
        if slot != nv {
            return Err(crate::ClrError::not_found_at(
                format!("non-virtual slot {slot}"),
                mt,
                format!("the MethodTable has a single non-virtual slot, {nv}"),
            ));
        }
        return Ok(at);
    }
    let array = m.read_u64(at).map_err(|_| {
        crate::ClrError::read(
            format!("the non-virtual slots pointer of MethodTable {mt:#x}"),
            at,
        )
    })?;
    Ok(array.wrapping_add(8 * (slot - nv) as u64))
}

/// The entry point in vtable slot `slot` of `mt` as the runtime's GetRestoredSlot reads it:
/// from the canonical MethodTable, else (a null, inherited slot) from the parents; 0 when the
/// slot is null up to System.Object (no entry point assigned yet).
pub fn vtable_slot<M: Memory>(r: &ObjectReader<'_, M>, mt: u64, slot: u32) -> crate::Result<u64> {
    r.rt.require(crate::discovery::layout::Capability::Methods)?;
    let mut cur = mt;
    for _ in 0..MAX_DEPTH {
        let info = r.rt.method_table(cur)?;
        let canon = info.canonical;
        let a = slot_address(r, canon, slot)?;
        let v = r.rt.memory().read_u64(a).map_err(|_| {
            crate::ClrError::read(format!("slot {slot} of MethodTable {canon:#x}"), a)
        })?;
        if v != 0 {
            return Ok(v);
        }
        let parent = r.rt.method_table(canon)?.parent;
        // Only a virtual slot is inherited: a null non-virtual slot (or one the parents do not
        // have) has no entry point yet (.NET 9+ assigns them lazily): the DAC's S_FALSE.
        if parent == 0 || slot >= r.rt.method_table(parent)?.num_virtuals as u32 {
            return Ok(0);
        }
        cur = parent;
    }
    Err(crate::ClrError::corrupt(
        "MethodTable",
        mt,
        format!("slot {slot}: parent chain deeper than {MAX_DEPTH}"),
    ))
}

/// What the "JIT" column of `dumpmt -md` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum JitState {
    /// JIT'd code.
    #[serde(rename = "JIT")]
    Jit,
    /// ReadyToRun code.
    #[serde(rename = "PreJIT")]
    PreJit,
    /// No code yet.
    #[serde(rename = "NONE")]
    None,
    /// An FCALL implemented in the runtime.
    #[serde(rename = "FCALL")]
    FCall,
}

impl JitState {
    /// As SOS prints it.
    pub fn as_str(&self) -> &'static str {
        match self {
            JitState::Jit => "JIT",
            JitState::PreJit => "PreJIT",
            JitState::None => "NONE",
            JitState::FCall => "FCALL",
        }
    }
}

/// One row of a type's method table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MethodSlot {
    /// The slot number.
    pub slot: u32,
    /// The entry point in it.
    pub entry: u64,
    /// The MethodDesc of the entry point.
    pub method_desc: Option<u64>,
    /// Whether the method has code, and which kind.
    pub jit: JitState,
    /// The method's name as the DAC spells it (`Type.Name(params)`).
    pub name: Option<String>,
    /// Why the MethodDesc or name is unknown.
    pub error: Option<String>,
}

/// A type's method table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MethodTableMethods {
    /// The MethodTable.
    pub mt: u64,
    /// m_wNumVirtuals.
    pub num_virtuals: u16,
    /// Slots in the vtable (virtuals and non-virtual vtable slots).
    pub num_vtable_slots: u16,
    /// All slots (the EEClass's NumMethods).
    pub num_methods: u32,
    /// One row per slot, in slot order.
    pub slots: Vec<MethodSlot>,
}

/// The code pointer a FixupPrecode or StubPrecode at `code` jumps to.
fn precode_target<M: Memory>(r: &ObjectReader<'_, M>, code: u64) -> Option<u64> {
    let m = r.rt.memory();
    let mut b = [0u8; 16];
    m.read_exact(code, &mut b).ok()?;
    let jmp = |at: usize| b[at..at + 2] == [0xFF, 0x25];
    let mov = |at: usize| b[at..at + 3] == [0x4C, 0x8B, 0x15];
    let at = if jmp(0) && mov(6) {
        0
    } else if mov(0) && jmp(7) {
        7
    } else {
        return None;
    };
    let d = i32::from_le_bytes([b[at + 2], b[at + 3], b[at + 4], b[at + 5]]) as i64;
    m.read_u64((code + at as u64 + 6).wrapping_add_signed(d))
        .ok()
}

/// A MethodDesc's entry point (MethodDesc::GetMethodEntryPoint): its own non-vtable slot, else
/// its slot in its (canonical) MethodTable.
pub fn method_entry_point<M: Memory>(
    r: &ObjectReader<'_, M>,
    d: &MethodDescData,
) -> crate::Result<u64> {
    r.rt.require(crate::discovery::layout::Capability::Methods)?;
    let s = match d.non_vtable_slot {
        Some(s) => s,
        None => slot_address(r, d.method_table, d.slot as u32)?,
    };
    r.rt.memory().read_u64(s).map_err(|_| {
        crate::ClrError::read(format!("slot {} of MethodDesc {:#x}", d.slot, d.address), s)
    })
}

/// The name and parameters of an array method (ArrayMethodDesc: no metadata; by its slot
/// after the virtuals: Get, Set, Address, then the constructors).
fn array_method_name<M: Memory>(
    r: &ObjectReader<'_, M>,
    d: &MethodDescData,
    mt: &crate::data::types::MethodTableInfo,
) -> crate::Result<String> {
    let a = mt.array.ok_or_else(|| {
        crate::ClrError::corrupt("array MethodDesc", d.address, "of a non-array type")
    })?;
    let rank = a.rank.clamp(1, 32) as usize;
    let ints = |n: usize| vec!["Int32"; n].join(", ");
    let k = (d.slot as i64) - mt.num_virtuals as i64;
    let (name, params) = match k {
        0 => ("Get", ints(rank)),
        1 => (
            "Set",
            format!(
                "{}, {}",
                ints(rank),
                crate::model::instantiation::signature_type_name(r.rt, r.names, a.element, 0)
            ),
        ),
        2 => ("Address", ints(rank)),
        k if k >= 3 => {
            let n = (k - 3) as usize;
            let count = if a.is_sz { n + 1 } else { rank * (n + 1) };
            (".ctor", ints(count))
        }
        _ => {
            return Err(crate::ClrError::corrupt(
                "array MethodDesc",
                d.address,
                format!("in virtual slot {}", d.slot),
            ))
        }
    };
    Ok(format!("{}.{name}({params})", r.type_name(d.method_table)))
}

/// The name of a MethodDesc's method as the DAC's GetMethodDescName spells it: its
/// MethodTable's type name, `.`, the MethodDef's name and its parameter list, with the type's
/// generic parameters replaced by its MethodTable's instantiation (`System.__Canon` in shared
/// code).
pub fn method_desc_name<M: Memory>(
    r: &ObjectReader<'_, M>,
    d: &MethodDescData,
) -> crate::Result<String> {
    r.rt.require(crate::discovery::layout::Capability::Methods)?;
    let mt =
        r.rt.method_table(d.method_table)
            .map_err(|e| e.context(format!("its MethodTable {:#x}", d.method_table)))?;
    if d.classification == 4 {
        return array_method_name(r, d, &mt);
    }
    if d.classification == CLASSIFICATION_DYNAMIC {
        return dynamic_method_name(r, d.address);
    }
    let module = mt.require_module()?;
    let mm = r.names.module_metadata(r.rt, module)?;
    let meta = mm.metadata()?;
    let rid = d.token & 0x00FF_FFFF;
    let name = meta
        .method_def(rid)
        .map_err(|e| crate::ClrError::metadata(format!("MethodDef {:#x}", d.token), e))?
        .name
        .to_string();
    // A method of a generic type's definition (its typical instantiation, whose type arguments
    // are its generic variables: TypeDescs, TypeHandle bit 1; pointers and byrefs are never
    // type arguments) keeps the signature's `!0`, as the DAC writes it (`Heap.Slot`1..ctor(!0,
    // Int32)`, SOS token2ee).
    let args = mt
        .type_args
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            if a & 2 != 0 {
                format!("!{i}")
            } else {
                crate::model::instantiation::signature_type_name(r.rt, r.names, a, 0)
            }
        })
        .collect();
    // A generic method's instantiation: its arguments after the name, and in the signature
    // in place of its type parameters (`BlockingWait[[Names.Slot, names]](Names.Slot)`).
    let method_args =
        crate::model::instantiation::method_instantiation(r.rt, d.address, d.classification)?;
    let inst = crate::model::instantiation::instantiation_suffix(r.rt, r.names, &method_args)?;
    let method_arg_names = method_args
        .iter()
        .map(|&a| crate::model::instantiation::signature_type_name(r.rt, r.names, a, 0))
        .collect();
    let names =
        crate::metadata::MetadataNames::new(&meta).with_generic_args(args, method_arg_names);
    let params = meta
        .method_sig(rid)
        .map(|sig| crate::metadata::format_method_params(&sig, &names))
        .map_err(|e| {
            crate::ClrError::metadata(format!("the signature of MethodDef {:#x}", d.token), e)
        })?;
    Ok(format!(
        "{}.{name}{inst}{params}",
        r.type_name(d.method_table)
    ))
}

/// A type's method table as SOS `dumpmt -md` lists it with the .NET 8 DAC.
pub fn method_table_methods<M: Memory>(
    r: &ObjectReader<'_, M>,
    w: &StackWalker<'_, M>,
    mt: u64,
) -> crate::Result<MethodTableMethods> {
    r.rt.require(crate::discovery::layout::Capability::Methods)?;
    let info = r.rt.method_table(mt)?;
    let (num_virtuals, num_vtable_slots, num_methods) = slot_counts(r, mt)?;
    let own = introduced_methods(r, info.ee_class)?;
    // (module, token) → MethodDesc over the type's canonical hierarchy, for ReadyToRun code.
    let mut hierarchy: Option<Vec<(u64, MethodDescData)>> = None;
    let mut slots = Vec::new();
    for n in 0..num_methods {
        let entry = if n < num_vtable_slots as u32 {
            vtable_slot(r, mt, n)
        } else {
            own.iter()
                .find(|d| d.slot as u32 == n)
                .ok_or_else(|| {
                    crate::ClrError::not_found_at(
                        format!("slot {n}"),
                        mt,
                        "no method of the type has it",
                    )
                })
                .and_then(|d| method_entry_point(r, d))
        };
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                slots.push(MethodSlot {
                    slot: n,
                    entry: 0,
                    method_desc: None,
                    jit: JitState::None,
                    name: None,
                    error: Some(e.to_string()),
                });
                continue;
            }
        };
        let mut row = MethodSlot {
            slot: n,
            entry,
            method_desc: None,
            jit: JitState::None,
            name: None,
            error: None,
        };
        if entry == 0 {
            // No entry point yet: the method of the slot is the most derived one of the
            // hierarchy introducing it (MethodTable::GetMethodDescForSlot), its state NONE.
            let h = hierarchy.get_or_insert_with(|| hierarchy_methods(r, mt));
            match h.iter().find(|(_, d)| d.slot as u32 == n) {
                Some((_, d)) => {
                    row.method_desc = Some(d.address);
                    match method_desc_name(r, d) {
                        Ok(name) => row.name = Some(name),
                        Err(e) => row.error = Some(e.to_string()),
                    }
                }
                None => row.error = Some(format!("no method of the type's hierarchy has slot {n}")),
            }
            slots.push(row);
            continue;
        }
        let mut entry_kind = None;
        match w.ip_to_method(entry) {
            Ok(Some((ci, f))) => {
                entry_kind = Some(ci.kind);
                if let Some(md) = f.method_desc.or(ci.method_desc) {
                    row.method_desc = Some(md);
                } else if let (Some(module), Some(token)) = (ci.module, ci.token) {
                    let h = hierarchy.get_or_insert_with(|| hierarchy_methods(r, mt));
                    row.method_desc = h
                        .iter()
                        .find(|(m, d)| *m == module && d.token == token)
                        .map(|(_, d)| d.address);
                    if row.method_desc.is_none() {
                        row.error = Some(format!(
                            "ReadyToRun code of MethodDef {token:#x} of no method of the type's \
                             hierarchy"
                        ));
                    }
                } else {
                    // ReadyToRun code of a generic instantiation (no MethodDef entry point):
                    // the method of the hierarchy whose native code it is.
                    let h = hierarchy.get_or_insert_with(|| hierarchy_methods(r, mt));
                    let m = r.rt.memory();
                    row.method_desc = h
                        .iter()
                        .find(|(_, d)| {
                            d.native_code_slot
                                .and_then(|s| m.read_u64(s).ok())
                                .is_some_and(|c| c == entry)
                        })
                        .map(|(_, d)| d.address);
                    if row.method_desc.is_none() {
                        row.error = Some(format!(
                            "ReadyToRun code at {entry:#x} is no method's of the type's hierarchy"
                        ));
                    }
                }
            }
            Ok(None) => match precode_method_desc(r.rt, w, entry) {
                Ok((md, _)) => row.method_desc = Some(md),
                // An FCALL's entry point is its implementation in the runtime, named through
                // the runtime's FCALL hash.
                Err(e) => match w.fcall_method(entry).or_else(|| {
                    // Where the FCALL hash is not known (.NET 9+): an entry point inside the
                    // runtime is the FCALL the type's hierarchy has in this slot
                    // (MethodTable::GetMethodDescForSlot).
                    let rt = &r.rt.info;
                    if entry < rt.base || entry >= rt.base + rt.size {
                        return None;
                    }
                    let h = hierarchy.get_or_insert_with(|| hierarchy_methods(r, mt));
                    h.iter()
                        .find(|(_, d)| d.slot as u32 == n)
                        .filter(|(_, d)| d.classification == CLASSIFICATION_FCALL)
                        .map(|(_, d)| d.address)
                }) {
                    Some(md) => row.method_desc = Some(md),
                    None => row.error = Some(e.to_string()),
                },
            },
            Err(e) => row.error = Some(e.to_string()),
        }
        row.jit = match entry_kind {
            Some(CodeKind::Jit) => JitState::Jit,
            Some(CodeKind::ReadyToRun) => JitState::PreJit,
            None => row
                .method_desc
                .map_or(JitState::None, |md| native_code_state(r, w, md, entry)),
        };
        if let Some(md) = row.method_desc {
            match method_desc(r, md).and_then(|d| method_desc_name(r, &d)) {
                Ok(n) => row.name = Some(n),
                Err(e) => row.error = Some(e.to_string()),
            }
        }
        slots.push(row);
    }
    Ok(MethodTableMethods {
        mt,
        num_virtuals,
        num_vtable_slots,
        num_methods,
        slots,
    })
}

/// Whether the method of `md` (entered through `entry`) has code: the precode's target when it
/// is the method's own managed code (the active version), else its native code slot or its
/// stable entry point; code inside the runtime module is an FCALL.
fn native_code_state<M: Memory>(
    r: &ObjectReader<'_, M>,
    w: &StackWalker<'_, M>,
    md: u64,
    entry: u64,
) -> JitState {
    match method_desc(r, md) {
        Ok(d) => native_code(r, w, &d, entry).1,
        Err(_) => JitState::None,
    }
}

/// A method's active native code version (tiered compilation): see
/// [`crate::discovery::layout::CodeVersionsLayout`].
enum ActiveVersion {
    /// The default version, the MethodDesc's own code (no state, or its flags say so).
    Default,
    /// An explicit version's code (0: not generated yet).
    Explicit(u64),
    /// Not known: no layout for the family, an explicit IL version (ReJIT), or memory missing.
    Unknown,
}

/// Bounds on the versioning structures read.
const MAX_VERSION_STATES: u64 = 1 << 20;
const MAX_CODE_VERSIONS: usize = 256;

fn active_code_version<M: Memory>(r: &ObjectReader<'_, M>, d: &MethodDescData) -> ActiveVersion {
    use crate::discovery::layout::{
        VersioningStates, DEFAULT_VERSION_ACTIVE_CHILD, NATIVE_CODE_VERSION_ACTIVE_CHILD,
    };
    let Some(cv) = r.rt.layout.methods.code_versions else {
        return ActiveVersion::Unknown;
    };
    let m = r.rt.memory();
    let state = match cv.states {
        VersioningStates::AppDomainHash {
            il_versions,
            method_descs,
        } => {
            let Ok(ad) = r.rt.app_domain() else {
                return ActiveVersion::Unknown;
            };
            // SHash {m_table, m_tableSize, m_tableCount, ..}
            match m.read_u32(ad.wrapping_add(il_versions + 12)) {
                Ok(0) => {}
                _ => return ActiveVersion::Unknown,
            }
            let (Ok(table), Ok(size)) = (
                m.read_u64(ad.wrapping_add(method_descs)),
                m.read_u32(ad.wrapping_add(method_descs + 8)),
            ) else {
                return ActiveVersion::Unknown;
            };
            if table == 0 {
                return ActiveVersion::Default;
            }
            if u64::from(size) > MAX_VERSION_STATES {
                return ActiveVersion::Unknown;
            }
            let mut found = None;
            for i in 0..u64::from(size) {
                let Ok(p) = m.read_u64(table.wrapping_add(8 * i)) else {
                    return ActiveVersion::Unknown;
                };
                if p == 0 || p == u64::MAX {
                    continue;
                }
                match m.read_u64(p.wrapping_add(cv.state_method_desc)) {
                    Ok(md) if md == d.address => {
                        found = Some(p);
                        break;
                    }
                    Ok(_) => {}
                    Err(_) => return ActiveVersion::Unknown,
                }
            }
            found
        }
        VersioningStates::CodeData {
            method_desc,
            versioning_state,
        } => match m.read_u64(d.address.wrapping_add(method_desc)) {
            Ok(0) => None,
            Ok(cd) => match m.read_u64(cd.wrapping_add(versioning_state)) {
                Ok(0) => None,
                Ok(st) => Some(st),
                Err(_) => return ActiveVersion::Unknown,
            },
            Err(_) => return ActiveVersion::Unknown,
        },
    };
    let Some(st) = state else {
        return ActiveVersion::Default;
    };
    match m.read_u8(st.wrapping_add(cv.state_flags)) {
        Ok(f) if f & DEFAULT_VERSION_ACTIVE_CHILD != 0 => return ActiveVersion::Default,
        Ok(_) => {}
        Err(_) => return ActiveVersion::Unknown,
    }
    let mut node = match m.read_u64(st.wrapping_add(cv.state_first_node)) {
        Ok(n) => n,
        Err(_) => return ActiveVersion::Unknown,
    };
    let mut active = None;
    for _ in 0..MAX_CODE_VERSIONS {
        if node == 0 {
            break;
        }
        let rd = |off: u64| m.read_u64(node.wrapping_add(off));
        let (Ok(code), Ok(md), Ok(il), Ok(flags), Ok(next)) = (
            rd(cv.node_native_code),
            rd(cv.node_method_desc),
            rd(cv.node_il_version),
            m.read_u32(node.wrapping_add(cv.node_flags)),
            rd(cv.node_next),
        ) else {
            return ActiveVersion::Unknown;
        };
        // A version of another IL (ReJIT) is not followed; a node of another method is not
        // this method's list.
        if il != 0 || md != d.address {
            return ActiveVersion::Unknown;
        }
        if flags & NATIVE_CODE_VERSION_ACTIVE_CHILD != 0 && active.is_none() {
            active = Some(code);
        }
        node = next;
    }
    if node != 0 {
        return ActiveVersion::Unknown;
    }
    match active {
        Some(code) => ActiveVersion::Explicit(code),
        None => ActiveVersion::Unknown,
    }
}

/// A method's current code and its kind (see `native_code_state`), given its entry point.
pub fn native_code<M: Memory>(
    r: &ObjectReader<'_, M>,
    w: &StackWalker<'_, M>,
    d: &MethodDescData,
    entry: u64,
) -> (Option<u64>, JitState) {
    if r.rt
        .require(crate::discovery::layout::Capability::Methods)
        .is_err()
    {
        return (None, JitState::None);
    }
    let kind = |code: u64, owned_only: bool| -> Option<JitState> {
        if code == 0 {
            return None;
        }
        let (ci, f) = w.ip_to_method(code).ok()??;
        // A precode may jump to code that is not this method's (an IL stub): only the
        // method's own code counts.
        let owned = match f.method_desc.or(ci.method_desc) {
            Some(other) => other == d.address,
            None => ci.token == Some(d.token),
        };
        if owned_only && !owned {
            return None;
        }
        Some(match ci.kind {
            CodeKind::Jit => JitState::Jit,
            CodeKind::ReadyToRun => JitState::PreJit,
        })
    };
    // The active code version, where it is an explicit one (code tiering made).
    match active_code_version(r, d) {
        ActiveVersion::Explicit(0) => return (None, JitState::None),
        ActiveVersion::Explicit(code) => {
            if let Some(k) = kind(code, true) {
                return (Some(code), k);
            }
        }
        ActiveVersion::Default | ActiveVersion::Unknown => {}
    }
    if let Some(t) = precode_target(r, entry) {
        if let Some(k) = kind(t, true) {
            return (Some(t), k);
        }
        // A call counting stub in front of the method's active code version (tiered
        // compilation counting its calls): that version's code, when it is the method's own.
        if let Some(c) = crate::model::precode::call_counting_stub_target(r.rt, t) {
            if let Some(k) = kind(c, true) {
                return (Some(c), k);
            }
        }
    }
    let m = r.rt.memory();
    let code = if let Some(s) = d.native_code_slot {
        m.read_u64(s).unwrap_or(0)
    } else if d.has_stable_entry_point() && !d.has_precode() {
        entry
    } else {
        0
    };
    if let Some(k) = kind(code, false) {
        return (Some(code), k);
    }
    let rt = &r.rt.info;
    if code != 0 && code >= rt.base && code < rt.base + rt.size {
        return (Some(code), JitState::FCall);
    }
    (None, JitState::None)
}

/// The introduced MethodDescs of `mt`'s canonical type and its parents', with their module.
fn hierarchy_methods<M: Memory>(r: &ObjectReader<'_, M>, mt: u64) -> Vec<(u64, MethodDescData)> {
    let mut out = Vec::new();
    let mut cur = mt;
    for _ in 0..MAX_DEPTH {
        let Ok(info) = r.rt.method_table(cur) else {
            break;
        };
        if let (Some(module), Ok(mds)) = (info.module, introduced_methods(r, info.ee_class)) {
            out.extend(mds.into_iter().map(|d| (module, d)));
        }
        if info.parent == 0 {
            break;
        }
        cur = info.parent;
    }
    out
}

/// Bounds on the hash table read from the dump.
const MAX_BUCKETS: u64 = 1 << 20;
const MAX_PARAM_TYPES: usize = 1 << 20;
/// The slots a DacEnumerableHashTable's bucket array starts with before its buckets: the
/// length first, then two the table keeps for growing (dacenumerablehash.h; the cDAC's
/// `DacEnumerableHash` skips 3). Reading from slot 2 missed the last bucket's chain: one
/// instantiation on asyncreal-net8 and one on async-net9 were in no module's table.
const BUCKET_ARRAY_SPECIAL_SLOTS: u64 = 3;

/// The TypeHandles of the constructed types (generic instantiations, arrays) a module has
/// loaded: its EETypeHashTable (DacEnumerableHashTable {m_pModule, m_pHeap, m_pBuckets,
/// m_cEntries}; the bucket array holds its length and two more special slots, then the
/// buckets; each chain of VolatileEntry {TypeHandle, next, hash} ends in an odd sentinel).
pub fn available_param_types<M: Memory>(
    r: &ObjectReader<'_, M>,
    module: u64,
) -> crate::Result<Vec<u64>> {
    r.rt.require(crate::discovery::layout::Capability::Methods)?;
    let Some(field) = r.rt.layout.methods.module_available_type_params else {
        return Err(crate::ClrError::MissingField {
            ty: "Module",
            field: "m_pAvailableParamTypes",
            runtime: r.rt.layout.name.to_owned(),
        });
    };
    let m = r.rt.memory();
    let rd = |a: u64, what: &str| m.read_u64(a).map_err(|_| crate::ClrError::read(what, a));
    let table = rd(module.wrapping_add(field), "Module::m_pAvailableParamTypes")?;
    if table == 0 {
        return Ok(Vec::new());
    }
    if rd(table, "EETypeHashTable::m_pModule")? != module {
        return Err(crate::ClrError::corrupt(
            "EETypeHashTable",
            table,
            format!("does not name its module {module:#x}"),
        ));
    }
    let buckets = rd(table.wrapping_add(0x10), "EETypeHashTable::m_pBuckets")?;
    let count = rd(table.wrapping_add(0x18), "EETypeHashTable::m_cEntries")? & 0xFFFF_FFFF;
    let n = rd(buckets, "EETypeHashTable bucket count")?;
    if n > MAX_BUCKETS || count as usize > MAX_PARAM_TYPES {
        return Err(crate::ClrError::corrupt(
            "EETypeHashTable",
            table,
            format!("{n} buckets, {count} entries (damaged?)"),
        ));
    }
    let mut out = Vec::new();
    for i in 0..n {
        let mut e = rd(
            buckets.wrapping_add(8 * (BUCKET_ARRAY_SPECIAL_SLOTS + i)),
            "EETypeHashTable bucket",
        )?;
        while e != 0 && e & 1 == 0 {
            if out.len() > count as usize {
                return Err(crate::ClrError::corrupt(
                    "EETypeHashTable",
                    table,
                    format!("more entries than its {count} (a cycle?)"),
                ));
            }
            out.push(rd(e, "EETypeHashEntry")?);
            e = rd(e.wrapping_add(8), "VolatileEntry::m_pNextEntry")?;
        }
    }
    Ok(out)
}
