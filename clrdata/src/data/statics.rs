//! Statics of .NET 9 and later ([`crate::discovery::layout::StaticsScheme::PerType`]): each type keeps
//! its own statics, found from its MethodTable alone (RuntimeTypeSystem and Thread contracts,
//! `docs/design/datacontracts`; `methodtable.h`, `threadstatics.h`).
//!
//! - A type with statics has the `DynamicStatics` flag in MTFlags2. Its `DynamicStaticsInfo`
//!   {GCStatics, NonGCStatics, ...} ends where its `MethodTableAuxiliaryData` starts; each
//!   pointer's bit 0 is set while the class is not initialised (`StaticsPointerMask` clears
//!   it). GC statics (references, and structs kept boxed) are slots at `GCStatics + offset`,
//!   the others at `NonGCStatics + offset`. Generic instantiations have their own, the same
//!   way. Whether the class is initialised is `MethodTableAuxiliaryData.Flags` bit 0: before,
//!   the storage may exist but holds no value the program set, so no value is read.
//! - Thread statics: the type's `ThreadStaticsInfo` (ending where the auxiliary data starts)
//!   holds a TLSIndex per kind (GC, non-GC): raw 0xFFFFFFFF = never allocated, else type
//!   (bits 24-31) and offset (bits 0-23). A thread's `Thread.ThreadLocalDataPtr` points at its
//!   ThreadLocalData: type 0 (non-collectible) indexes the object[] `NonCollectibleTlsArrayData`
//!   (element `offset - NumberOfTlsOffsetsNotUsedInNoncollectibleArray`, when
//!   `NonCollectibleTlsDataCount > offset`); type 2 is the ThreadLocalData itself + offset;
//!   while the class constructor runs the base is in the `InFlightData` list (an object
//!   handle). The base is a managed array whose field offsets include its header; a thread
//!   without a base never touched the type's thread statics and is left out (as SOS does).
//! - Collectible types (and collectible TLS indices, type 1) are refused by name: not checked.

use crate::data::threads::ReadThreads;
use crate::data::types::{FieldInfo, MethodTableInfo};
use crate::discovery::layout::PerTypeStatics;
use crate::discovery::runtime::Runtime;
use crate::error::ClrError;
use crate::metadata::sig::element_type as elem;
use dumpreader::Memory;

/// MTFlags: a collectible type (its statics live with its LoaderAllocator).
const MT_FLAGS_COLLECTIBLE: u32 = 0x0020_0000;
/// MTFlags GenericsMask (low word) and its "typical instantiation" value: a generic type
/// definition (`List<T>`), which has no statics of its own.
const MT_FLAGS_GENERICS_MASK: u32 = 0x30;
const MT_FLAGS_GENERICS_TYPICAL: u32 = 0x30;
/// MethodTableAuxiliaryData flag `Initialized`.
const AUX_FLAG_INITIALIZED: u32 = 0x1;
/// TLSIndex raw value of an index never allocated.
const TLS_INDEX_UNALLOCATED: u32 = 0xFFFF_FFFF;
/// TLSIndexType values.
const TLS_NON_COLLECTIBLE: u32 = 0;
const TLS_COLLECTIBLE: u32 = 1;
const TLS_DIRECT_ON_THREAD_LOCAL_DATA: u32 = 2;
/// Bound on the in-flight list (a corrupt list must not loop).
const MAX_IN_FLIGHT: usize = 4096;

/// Whether a static of element type `et` lives with the GC statics (references, and structs,
/// which the runtime keeps boxed).
pub fn is_gc_static(et: u8) -> bool {
    matches!(
        et,
        elem::CLASS
            | elem::VALUETYPE
            | elem::STRING
            | elem::OBJECT
            | elem::SZARRAY
            | elem::ARRAY
            | elem::GENERICINST
    )
}

/// Statics of .NET 9 and later, per type (`StaticsScheme::PerType`): their addresses from a MethodTable alone.
pub trait ReadStatics {
    /// Whether the class is initialised (`MethodTableAuxiliaryData.Flags` bit 0).
    fn per_type_class_inited(&self, p: &PerTypeStatics, aux: u64) -> crate::Result<bool>;

    /// Where a (non-thread) static field's value lives on .NET 9+.
    fn per_type_static_address(
        &self,
        p: &PerTypeStatics,
        info: &MethodTableInfo,
        f: &FieldInfo,
    ) -> crate::Result<u64>;

    /// Each thread's address of the thread-static field at `offset` (element type `et`) of
    /// `info` on .NET 9+: (managed thread id, Thread, address).
    fn per_type_thread_static_addresses(
        &self,
        p: &PerTypeStatics,
        info: &MethodTableInfo,
        offset: u32,
        et: u8,
    ) -> crate::Result<Vec<(u32, u64, u64)>>;
}

impl<M: Memory> ReadStatics for Runtime<M> {
    fn per_type_class_inited(&self, p: &PerTypeStatics, aux: u64) -> crate::Result<bool> {
        let flags = self.statics_rd32(aux + p.aux_flags, "MethodTableAuxiliaryData.Flags")?;
        Ok(flags & AUX_FLAG_INITIALIZED != 0)
    }

    fn per_type_static_address(
        &self,
        p: &PerTypeStatics,
        info: &MethodTableInfo,
        f: &FieldInfo,
    ) -> crate::Result<u64> {
        let aux = self.statics_aux(info)?;
        if !self.per_type_class_inited(p, aux)? {
            return Err(ClrError::not_found_at(
                "statics",
                info.address,
                "class not initialised (its static constructor has not run): its statics hold \
                 no value yet",
            ));
        }
        let dsi = aux.wrapping_sub(p.dynamic_statics_size);
        let (slot, what) = if is_gc_static(f.element_type) {
            (dsi + p.gc_statics, "DynamicStaticsInfo.GCStatics")
        } else {
            (dsi + p.non_gc_statics, "DynamicStaticsInfo.NonGCStatics")
        };
        let base = self.statics_rd64(slot, what)? & p.statics_pointer_mask;
        if base == 0 {
            return Err(ClrError::not_found_at(
                "statics",
                info.address,
                format!("not allocated ({what} is null)"),
            ));
        }
        Ok(base + f.offset as u64)
    }

    fn per_type_thread_static_addresses(
        &self,
        p: &PerTypeStatics,
        info: &MethodTableInfo,
        offset: u32,
        et: u8,
    ) -> crate::Result<Vec<(u32, u64, u64)>> {
        let aux = self.statics_aux(info)?;
        let tsi = aux.wrapping_sub(p.thread_statics_size);
        let (at, what) = if is_gc_static(et) {
            (tsi + p.gc_tls_index, "ThreadStaticsInfo.GCTlsIndex")
        } else {
            (tsi + p.non_gc_tls_index, "ThreadStaticsInfo.NonGCTlsIndex")
        };
        let raw = self.statics_rd32(at, what)?;
        if raw == TLS_INDEX_UNALLOCATED {
            // No thread ever touched these thread statics.
            return Ok(Vec::new());
        }
        let (kind, index) = (raw >> 24, raw & 0x00FF_FFFF);
        if kind == TLS_COLLECTIBLE {
            return Err(ClrError::unsupported(
                "thread statics of a collectible type",
                Some(info.address),
                "not read (not verified)",
            ));
        }
        if kind != TLS_NON_COLLECTIBLE && kind != TLS_DIRECT_ON_THREAD_LOCAL_DATA {
            return Err(ClrError::corrupt(
                what,
                info.address,
                format!("TLS index {raw:#x} has an unknown type {kind}"),
            ));
        }
        let threads = self.threads()?;
        let mut out = Vec::new();
        for t in threads {
            if t.os_id == 0 {
                continue;
            }
            let tld =
                self.statics_rd64(t.address + p.thread_local_data, "Thread.ThreadLocalDataPtr")?;
            if tld == 0 {
                continue;
            }
            let mut base = 0;
            if kind == TLS_DIRECT_ON_THREAD_LOCAL_DATA {
                base = tld + index as u64;
            } else {
                let count = self.statics_rd32(
                    tld + p.tld_non_collectible_count,
                    "ThreadLocalData.NonCollectibleTlsDataCount",
                )? as i32;
                if count > index as i32 {
                    let arr = self.statics_rd64(
                        tld + p.tld_non_collectible_data,
                        "ThreadLocalData.NonCollectibleTlsArrayData",
                    )?;
                    let slot = (index as u64)
                        .checked_sub(p.tls_offsets_not_used)
                        .ok_or_else(|| {
                            ClrError::corrupt(
                                what,
                                info.address,
                                format!("TLS index {raw:#x}: offset below the array"),
                            )
                        })?;
                    if arr != 0 {
                        base = self.statics_rd64(
                            arr + p.ptr_array_data + 8 * slot,
                            "the thread's TLS array element",
                        )?;
                    }
                }
            }
            if base == 0 {
                base = self.in_flight_base(p, tld, raw)?;
            }
            if base == 0 {
                continue;
            }
            out.push((t.managed_id, t.address, base + offset as u64));
        }
        Ok(out)
    }
}

impl<M: Memory> Runtime<M> {
    fn statics_rd64(&self, a: u64, what: &str) -> crate::Result<u64> {
        self.memory()
            .read_u64(a)
            .map_err(|_| crate::ClrError::read(what, a))
    }

    fn statics_rd32(&self, a: u64, what: &str) -> crate::Result<u32> {
        self.memory()
            .read_u32(a)
            .map_err(|_| crate::ClrError::read(what, a))
    }

    /// The type's MethodTableAuxiliaryData, after the checks every per-type statics read
    /// shares: a type with statics of its own, not collectible.
    fn statics_aux(&self, info: &MethodTableInfo) -> crate::Result<u64> {
        if !info.has_component_size()
            && info.flags & MT_FLAGS_GENERICS_MASK == MT_FLAGS_GENERICS_TYPICAL
        {
            return Err(ClrError::not_found_at(
                "statics",
                info.address,
                "a generic type definition has no statics of its own (each instantiation has \
                 its own)",
            ));
        }
        if info.flags2 & crate::discovery::layout::mt_flags::FLAGS2_NET9_DYNAMIC_STATICS == 0 {
            return Err(ClrError::not_found_at(
                "statics",
                info.address,
                "its MethodTable has no statics (DynamicStatics flag clear)",
            ));
        }
        if info.flags & MT_FLAGS_COLLECTIBLE != 0 {
            return Err(ClrError::unsupported(
                "statics of a collectible type",
                Some(info.address),
                "not read (not verified)",
            ));
        }
        let aux = self.statics_rd64(
            info.address + self.layout.method_table.writeable_data,
            "MethodTable.AuxiliaryData",
        )?;
        if aux == 0 {
            return Err(ClrError::corrupt(
                "MethodTable.AuxiliaryData",
                info.address,
                "null",
            ));
        }
        Ok(aux)
    }

    /// A thread's base for TLS index `raw` in its in-flight list (thread statics of a class
    /// whose constructor is running), 0 when not there.
    fn in_flight_base(&self, p: &PerTypeStatics, tld: u64, raw: u32) -> crate::Result<u64> {
        let mut node = self.statics_rd64(tld + p.tld_in_flight, "ThreadLocalData.InFlightData")?;
        let mut n = 0;
        while node != 0 {
            n += 1;
            if n > MAX_IN_FLIGHT {
                return Err(ClrError::corrupt(
                    "ThreadLocalData's in-flight TLS list",
                    tld,
                    format!("longer than {MAX_IN_FLIGHT} (a loop?)"),
                ));
            }
            if self.statics_rd32(node + p.in_flight_tls_index, "InFlightTLSData.TlsIndex")? == raw {
                let handle =
                    self.statics_rd64(node + p.in_flight_tls_data, "InFlightTLSData.TLSData")?;
                return if handle == 0 {
                    Ok(0)
                } else {
                    self.statics_rd64(handle, "InFlightTLSData.TLSData's handle")
                };
            }
            node = self.statics_rd64(node + p.in_flight_next, "InFlightTLSData.Next")?;
        }
        Ok(0)
    }
}
