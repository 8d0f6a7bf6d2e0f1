//! .NET 9 and 10: the layout table filled from the runtime's own contract descriptor, with
//! hand-written supplements for what the descriptor lacks (the GC above all), resolved once
//! into the plain offsets of a [`Layout`].
//!
//! Lookup order for every runtime field: the descriptor, then this family's supplement, then a
//! [`ClrError::MissingField`] naming type, field and runtime. Fields only used by capabilities
//! not yet verified on the family are [`NOT_PUBLISHED`]: the gate
//! ([`crate::Runtime::require`]) refuses those capabilities before anything reads them.
//!
//! What each value was checked against is in `docs/clr-layout-net9-10.md`.

use crate::discovery::descriptor::{ContractDescriptor, ContractVersion};
use crate::discovery::layout::{self, Capability, Family, Layout, MethodTableScheme};
use crate::error::{ClrError, Result};
use std::sync::Mutex;

/// An offset no reader may use: the field is neither in the descriptor nor in a verified
/// supplement, and every capability reading it is refused on the family.
pub const NOT_PUBLISHED: u64 = u64::MAX / 2;

/// The data contracts the heap walk and type names depend on, with the versions this build
/// reads on .NET 9 and 10 (integers). A descriptor naming another version of one of these is
/// refused.
pub const KNOWN_CONTRACTS: &[(&str, i64)] = &[
    ("RuntimeTypeSystem", 1),
    ("Loader", 1),
    ("Thread", 1),
    ("Object", 1),
];

/// The same on .NET 11, whose descriptor (format version 2) names contract versions as
/// strings that restarted at "c1" (11.0.0: every contract "c1" but StressLog "c2";
/// docs/clr-layout-net11.md 1.2): a "c1" on 11 is not 10's version 1. ExecutionManager too:
/// its "c1" is 10's version 2 (the constant-lookup nibble map), and another version may
/// encode the map otherwise.
pub const KNOWN_CONTRACTS_NET11: &[(&str, &str)] = &[
    ("RuntimeTypeSystem", "c1"),
    ("Loader", "c1"),
    ("Thread", "c1"),
    ("Object", "c1"),
    ("ExecutionManager", "c1"),
];

/// What is verified against the DAC on .NET 9 (Linux x64 workstation GC): the heap walk with
/// its census, the thread list that gives the allocation contexts, type names, and instance
/// fields (FieldDesc: `tests/tests/fields_net9_10.rs`, against the descriptor's Exception
/// offsets, ClrMD's exceptions, the DAC's async boxes and the heap scenario's manifest).
/// The stack walk too (Linux: `clrdata/tests/stack_truth.rs`, frames equal the DAC's); GC
/// handles and the finalization queue (`tests/tests/roots.rs`), sync blocks, thin locks and
/// Monitor waits (`tests/tests/locks.rs`; Linux only: [`crate::discovery::layout::Layout::locks`] has no
/// Windows 9.0 table), exception objects, their traces and last thrown objects
/// (`tests/tests/exceptions.rs`), each against the DAC and ClrMD; gcroot's root set, the
/// stacks' precise references from each frame's GC info (`tests/tests/roots.rs`: equal to
/// ClrMD's `EnumerateRoots`).
/// Everything else (statics included) is refused on the family until checked.
pub const VERIFIED_NET9: &[Capability] = &[
    Capability::HeapWalk,
    Capability::Threads,
    Capability::TypeNames,
    Capability::ServerGc,
    Capability::Fields,
    Capability::Statics,
    Capability::Stacks,
    Capability::Methods,
    Capability::Roots,
    Capability::Locks,
    Capability::Exceptions,
    Capability::GcRoots,
];

/// What is verified against the DAC on .NET 10 (Linux x64 and Windows x64): as .NET 9 (fields
/// and gcroot's root set included), server-GC heaps (servergc-net10: `gc_heap_field_offsets`
/// indices as on 8.0), and the stack walk (`clrdata/tests/stack_truth.rs`: frames equal the
/// DAC's).
pub const VERIFIED_NET10: &[Capability] = &[
    Capability::HeapWalk,
    Capability::Threads,
    Capability::TypeNames,
    Capability::ServerGc,
    Capability::Fields,
    Capability::Statics,
    Capability::Stacks,
    Capability::Methods,
    Capability::Roots,
    Capability::Locks,
    Capability::Exceptions,
    Capability::GcRoots,
];

/// What is verified against the 11.0.0 DAC (Linux x64, the .NET 11 corpus: createdump
/// --withheap and crash dumps, runtime-async on and off, an ASP.NET Core service, server GC
/// with 2 heaps read through the GC's server sub-descriptor: servergc-net11): as .NET 10.
/// Every truth test runs on those dumps (`tests::family_claims`).
pub const VERIFIED_NET11: &[Capability] = &[
    Capability::HeapWalk,
    Capability::Threads,
    Capability::TypeNames,
    Capability::ServerGc,
    Capability::Fields,
    Capability::Statics,
    Capability::Stacks,
    Capability::Methods,
    Capability::Roots,
    Capability::Locks,
    Capability::Exceptions,
    Capability::GcRoots,
];

/// The runtime's globals a .NET 9/10 reader needs that the descriptor does not publish, found
/// in `g_dacTable` next to globals the descriptor does publish (dacvars.h order, the same
/// around these entries on 8.0, 9.0 and 10.0):
/// `[ThreadStore::s_pThreadStore, g_pFinalizerThread, g_pSuspensionThread (GCThread),
/// g_heap_type, g_gcDacGlobals, AppDomain::m_pTheAppDomain, ..]` and `[.., g_card_table,
/// g_lowest_address, g_highest_address, g_global_alloc_context, g_pGCHeap, .., g_pObjectClass]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DacTableAnchors {
    /// Entries after ThreadStore: g_heap_type.
    pub heap_type_after_thread_store: u64,
    /// Entries after ThreadStore: g_gcDacGlobals.
    pub gc_dac_globals_after_thread_store: u64,
    /// Entries after ThreadStore: AppDomain (a check of the anchor).
    pub app_domain_after_thread_store: u64,
    /// Entries before the ObjectMethodTable entry: g_global_alloc_context.
    pub global_alloc_context_before_object_class: u64,
    /// The ThreadStore entry's index in the table: where the table starts when its export is
    /// not known. 16 on 8.0 and 9.0; 15 on 10.0 (one stub manager fewer before it; measured
    /// against the export's RVA of every indexed 9.0 and 10.0 build of the corpus,
    /// clrdata/tests/build_index.rs).
    pub thread_store_index: u64,
    /// `ExecutionManager::g_codeRangeMap`'s index (0, as on 8.0), read where the descriptor
    /// does not publish `ExecutionManagerCodeRangeMapAddress` (.NET 9). Verified on 9.0.22:
    /// every JIT'd entry point and native code of `dumpmt -md` resolves to the DAC's code
    /// header (`repl/tests/methods.rs`), and the stack walk's frames equal the DAC's; a wrong
    /// map finds no code at all.
    pub code_range_map_index: u64,
    /// Entries after `g_pSyncTable` (the descriptor's `SyncTableEntries`):
    /// `SyncBlockCache::s_pSyncBlockCache`, on Linux (dacvars.h: nothing between them when
    /// `TARGET_UNIX`).
    pub sync_block_cache_after_sync_table_unix: u64,
    /// The same on Windows: `g_pRCWCleanupList` (FEATURE_COMINTEROP),
    /// `g_runtimeLoadedBaseAddress` and `g_runtimeVirtualSize` (!TARGET_UNIX) come between (as
    /// in .NET 8's Windows table: indices 81 and 85).
    pub sync_block_cache_after_sync_table_windows: u64,
}

/// The .NET 9 anchors (verified on 9.0.22, 10.0.12 and 10.0.14 Linux: g_heap_type =
/// the DAC's GC mode, GcDacVars 2.x whose generation tables equal the DAC's,
/// g_global_alloc_context = the DAC's).
pub const ANCHORS_NET9: DacTableAnchors = DacTableAnchors {
    heap_type_after_thread_store: 3,
    gc_dac_globals_after_thread_store: 4,
    app_domain_after_thread_store: 5,
    global_alloc_context_before_object_class: 3,
    thread_store_index: 16,
    code_range_map_index: 0,
    sync_block_cache_after_sync_table_unix: 1,
    sync_block_cache_after_sync_table_windows: 4,
};

/// The .NET 10 anchors: those of 9 but for ThreadStore's index.
pub const ANCHORS_NET10: DacTableAnchors = DacTableAnchors {
    thread_store_index: 15,
    ..ANCHORS_NET9
};

/// The anchors of a family (.NET 8's table order is 9's); None on .NET 11, whose globals are
/// all in its contract descriptor (no g_dacTable is read).
pub fn anchors_of(family: Family) -> Option<DacTableAnchors> {
    match family {
        Family::Net8 | Family::Net9 => Some(ANCHORS_NET9),
        Family::Net10 => Some(ANCHORS_NET10),
        Family::Net11 => None,
    }
}

/// A contract descriptor global located through `g_dacTable`: the entry holding its address
/// (see [`DacTableGlobals`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DacTableGlobal {
    /// The descriptor's name for it (`ThreadStore`).
    pub global: &'static str,
    /// The table's (dacvars.h's) name for the variable (`ThreadStore__s_pThreadStore`).
    pub dac_var: &'static str,
    /// The entry's index in the table.
    pub index: u64,
    /// Bytes past the variable's address: the descriptor's `ObjectArrayMethodTable` is
    /// `&g_pPredefinedArrayTypes[ELEMENT_TYPE_OBJECT]`, the entry locates the array.
    pub offset: u64,
}

/// Where, in a build's `g_dacTable`, each global of its family's contract descriptor lies:
/// for a runtime that holds the table but publishes no descriptor of its own.
///
/// The .NET 9 single-file host of Linux (`singlefilehost`, the runtime linked into every
/// single-file app) has no `DotNetRuntimeContractDescriptor`, while libcoreclr.so of the same
/// release has one; both are built from the same sources, and their `g_dacTable`s (the
/// runtime fills the table at startup with the address of every variable dacvars.h lists, in
/// that order) have the same length. The descriptor of the release's libcoreclr.so (its JSON:
/// the types' layouts and the direct globals) then serves the host, with each indirect
/// global's address read from the host's own filled table at the index below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DacTableGlobals {
    /// The family whose descriptors these are.
    pub family: Family,
    /// How many entries the table has (its export's size / 8): a table of another length is
    /// another order, not read.
    pub entries: u64,
    /// Every indirect global of the family's descriptors.
    pub globals: &'static [DacTableGlobal],
}

/// .NET 9 on Linux: the 13 indirect globals of the 9.0 descriptor (9.0.18 to 9.0.23, one JSON
/// text) and their entries in the 158-entry `g_dacTable`. Found, and checked on every .NET 9
/// dump of libcoreclr.so (9.0.22: the descriptor's pointer_data against the table the process
/// filled, clrdata/tests/build_index.rs `the_net9_dac_table_map_is_the_descriptors`), and on
/// the single-file host (hang-net9-single: every truth test of the corpus). In dacvars.h's
/// order: ThreadStore at 16 as [`ANCHORS_NET9`] has it, then g_pFinalizerThread and
/// g_pSuspensionThread; g_pObjectClass, g_pStringClass, g_pExceptionClass and
/// g_pFreeObjectMethodTable among the class pointers; g_pSyncTable before
/// SyncBlockCache::s_pSyncBlockCache; g_MiniMetaDataBuffMaxSize then its address.
pub const DAC_TABLE_GLOBALS_NET9_UNIX: DacTableGlobals = DacTableGlobals {
    family: Family::Net9,
    entries: 158,
    globals: &[
        DacTableGlobal {
            global: "ThreadStore",
            dac_var: "ThreadStore__s_pThreadStore",
            index: 16,
            offset: 0,
        },
        DacTableGlobal {
            global: "FinalizerThread",
            dac_var: "dac__g_pFinalizerThread",
            index: 17,
            offset: 0,
        },
        DacTableGlobal {
            global: "GCThread",
            dac_var: "dac__g_pSuspensionThread",
            index: 18,
            offset: 0,
        },
        DacTableGlobal {
            global: "AppDomain",
            dac_var: "AppDomain__m_pTheAppDomain",
            index: 21,
            offset: 0,
        },
        DacTableGlobal {
            global: "ArrayBoundsZero",
            dac_var: "ArrayBase__s_arrayBoundsZero",
            index: 29,
            offset: 0,
        },
        DacTableGlobal {
            global: "ObjectMethodTable",
            dac_var: "dac__g_pObjectClass",
            index: 43,
            offset: 0,
        },
        DacTableGlobal {
            global: "StringMethodTable",
            dac_var: "dac__g_pStringClass",
            index: 46,
            offset: 0,
        },
        DacTableGlobal {
            global: "ExceptionMethodTable",
            dac_var: "dac__g_pExceptionClass",
            index: 50,
            offset: 0,
        },
        DacTableGlobal {
            global: "FreeObjectMethodTable",
            dac_var: "dac__g_pFreeObjectMethodTable",
            index: 57,
            offset: 0,
        },
        // ELEMENT_TYPE_OBJECT (0x1c) pointers into g_pPredefinedArrayTypes.
        DacTableGlobal {
            global: "ObjectArrayMethodTable",
            dac_var: "dac__g_pPredefinedArrayTypes",
            index: 61,
            offset: 0x1c * 8,
        },
        DacTableGlobal {
            global: "SyncTableEntries",
            dac_var: "dac__g_pSyncTable",
            index: 82,
            offset: 0,
        },
        DacTableGlobal {
            global: "MiniMetaDataBuffMaxSize",
            dac_var: "dac__g_MiniMetaDataBuffMaxSize",
            index: 89,
            offset: 0,
        },
        DacTableGlobal {
            global: "MiniMetaDataBuffAddress",
            dac_var: "dac__g_MiniMetaDataBuffAddress",
            index: 90,
            offset: 0,
        },
    ],
};

/// The g_dacTable map of a family's descriptor globals, where one is known (.NET 9 on Linux:
/// the only runtime found without a descriptor of its own).
pub fn dac_table_globals_of(family: Family, windows: bool) -> Option<&'static DacTableGlobals> {
    match (family, windows) {
        (Family::Net9, false) => Some(&DAC_TABLE_GLOBALS_NET9_UNIX),
        _ => None,
    }
}

/// The family a product major version belongs to, when this build has one for it.
pub fn family_of_major(major: u32) -> Option<Family> {
    match major {
        9 => Some(Family::Net9),
        10 => Some(Family::Net10),
        11 => Some(Family::Net11),
        _ => None,
    }
}

/// Checks the descriptor's contract versions against the family's: [`KNOWN_CONTRACTS`]
/// (.NET 9, 10) or [`KNOWN_CONTRACTS_NET11`].
pub fn check_contracts(d: &ContractDescriptor, family: Family, runtime: &str) -> Result<()> {
    let wanted: Vec<(&str, ContractVersion)> = match family {
        Family::Net11 => KNOWN_CONTRACTS_NET11
            .iter()
            .map(|(n, v)| (*n, ContractVersion::Str((*v).to_owned())))
            .collect(),
        _ => KNOWN_CONTRACTS
            .iter()
            .map(|(n, v)| (*n, ContractVersion::Int(*v)))
            .collect(),
    };
    for (name, want) in &wanted {
        match d.contract(name) {
            Some(v) if v == want => {}
            Some(v) => {
                return Err(ClrError::Descriptor {
                    runtime: runtime.to_owned(),
                    detail: format!(
                        "its contract descriptor names {name} version {v}; this build reads \
                         version {want} (a newer reader is needed)"
                    ),
                })
            }
            None => {
                return Err(ClrError::Descriptor {
                    runtime: runtime.to_owned(),
                    detail: format!(
                        "its contract descriptor has no {name} contract (contracts: {})",
                        d.contracts.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                })
            }
        }
    }
    Ok(())
}

/// A hand-written field the descriptor of a family lacks: (type, field, offset). Only fields a
/// verified capability reads belong here, each checked on the corpus.
type Supplement = &'static [(&'static str, &'static str, u64)];

/// .NET 10 supplement (both OSes): none of the fields the heap walk and names read is missing
/// from its descriptor (the GC's own structures come from GcDacVars, see [`gc_layouts`]);
/// FieldDesc is.
const SUPPLEMENT_NET10: Supplement = &[
    // HeapList::CLRPersonalityRoutine, the base of a JIT'd method's unwind RVAs (as on 8.0;
    // not published). Verified by clrdata/tests/stack_truth.rs: with another base no
    // RUNTIME_FUNCTION of the RealCodeHeader covers the IP and the walk stops.
    ("CodeHeapListNode", "ModuleBase", 0x48),
    // InlinedCallFrame::m_Datum, right after Frame {FrameIdentifier, m_Next} and before the
    // descriptor's CallSiteSP (24); the cDAC's later descriptors publish it. Verified by
    // clrdata/tests/stack_truth.rs on hang-net10-trim, whose P/Invoke frames' MethodDescs the
    // DAC reports from it.
    ("InlinedCallFrame", "Datum", 16),
    // RealCodeHeader::phdrJitEHInfo, between phdrDebugInfo (0) and phdrJitGCInfo (16, which
    // the descriptor publishes), as 8.0's codeman.h and 11's descriptor have it. Verified by
    // tests/tests/roots.rs: JIT'd methods' EH clauses read from it equal the DAC's.
    ("RealCodeHeader", "EHInfo", 8),
    FIELD_DESC_NET9_10[0],
    FIELD_DESC_NET9_10[1],
    FIELD_DESC_NET9_10[2],
    FIELD_DESC_NET9_10[3],
    // MethodDesc subclasses the 10 descriptor gives no size for (`method.hpp` v10.0 with the
    // 16-byte MethodDesc: .NET 8's sizes + 8). Checked by the MethodDescChunk walk
    // (every MethodDesc's ChunkIndex equals its offset) on System.Threading.Thread's QCalls
    // (PInvoke) and delegate types (EEImpl), and against the runtime's own size table
    // (`MethodDescSizeTable`) in `repl/tests/methods.rs`.
    ("PInvokeMethodDesc", "!", 56),
    ("EEImplMethodDesc", "!", 32),
    ("CLRToCOMCallMethodDesc", "!", 24),
];

/// .NET 11 supplement: none. Its descriptor publishes what 10's supplement gave (FieldDesc,
/// `InlinedCallFrame.Datum`, `PInvokeMethodDesc`/`EEImplMethodDesc` sizes; the code heap's
/// module base as `CodeHeapListNode.CLRPersonalityRoutine`, what `HeapList::GetModuleBase`
/// returns on x64), and the GC publishes its own structures (docs/clr-layout-net11.md 2.1).
const SUPPLEMENT_NET11: Supplement = &[];

/// MethodDesc sizes on .NET 9 (the descriptor gives none). Already the 16-byte MethodDesc of
/// 10.0 (`m_codeData` at 8, unpublished in 9.0's descriptor): its own offsets say so
/// (`InstantiatedMethodDesc.PerInstInfo` 24, `StoredSigMethodDesc.Sig` 16, as on 10), and so do
/// the dumps (Hang.Gate's `.ctor` MethodDesc of 9.0.22 is followed by its code data pointer,
/// then its native code slot holding the DAC's NativeCodeAddr). Checked as the .NET 10 ones
/// are.
const METHOD_DESC_SIZES_NET9: [(&str, &str, u64); 11] = [
    ("MethodDesc", "!", 16),
    ("FCallMethodDesc", "!", 24),
    ("PInvokeMethodDesc", "!", 56),
    ("EEImplMethodDesc", "!", 32),
    ("ArrayMethodDesc", "!", 32),
    ("InstantiatedMethodDesc", "!", 40),
    ("CLRToCOMCallMethodDesc", "!", 24),
    ("DynamicMethodDesc", "!", 48),
    ("NonVtableSlot", "!", 8),
    ("MethodImpl", "!", 16),
    ("NativeCodeSlot", "!", 8),
];

/// FieldDesc on .NET 9 and 10 (in neither descriptor; the cDAC's later descriptors name it
/// `FieldDesc` {MTOfEnclosingClass, DWord1, DWord2}, the names used here). Read from
/// `src/coreclr/vm/field.h` (class FieldDesc: `m_pMTOfEnclosingClass`, then two DWORD
/// bitfields, `m_mb:24 m_isStatic:1 m_isThreadLocal:1 m_isRVA:1 m_prot:3
/// m_requiresFullMbValue:1` and `m_dwOffset:27 m_type:5`; no `m_debugName` in release
/// builds), unchanged from .NET 8. Verified on every 9.0.22 and 10.0.14 corpus dump by
/// `tests/tests/fields_net9_10.rs`: the offsets of `System.Exception._message`/`_HResult`
/// equal the descriptor's own `Exception` type, exception messages and HResults equal
/// ClrMD's, dumpasync's boxes equal the DAC's, and the heap scenario's values equal the
/// manifest's.
const FIELD_DESC_NET9_10: [(&str, &str, u64); 4] = [
    ("FieldDesc", "!", 16),
    ("FieldDesc", "MTOfEnclosingClass", 0),
    ("FieldDesc", "DWord1", 8),
    ("FieldDesc", "DWord2", 12),
];

/// .NET 9 supplement: its descriptor (7 contracts, 29 types) lacks these. Each was checked on
/// the 9.0.22 corpus dumps (names and census equal the DAC's; EEClass.FieldDescList and
/// FieldDesc by `tests/tests/fields_net9_10.rs`). `"!"` is a type's size.
const SUPPLEMENT_NET9: Supplement = &[
    // The stack walk's code manager and Frames (none in 9's descriptor): .NET 8's codeman.h
    // and frames.h offsets, the names 10's descriptor gives them. Verified by
    // clrdata/tests/stack_truth.rs on the 9.0.22 dumps (frames equal the DAC's).
    ("RangeSectionFragment", "Next", 0),
    ("RangeSectionFragment", "RangeBegin", 8),
    ("RangeSectionFragment", "RangeEndOpen", 0x10),
    ("RangeSectionFragment", "RangeSection", 0x18),
    ("RangeSection", "RangeBegin", 0),
    ("RangeSection", "RangeEndOpen", 8),
    ("RangeSection", "Flags", 0x10),
    ("RangeSection", "JitManager", 0x18),
    ("RangeSection", "R2RModule", 0x20),
    ("RangeSection", "HeapList", 0x28),
    ("CodeHeapListNode", "MapBase", 0x20),
    ("CodeHeapListNode", "HeaderMap", 0x28),
    ("CodeHeapListNode", "ModuleBase", 0x48),
    ("RealCodeHeader", "MethodDesc", 0x18),
    // _hpRealCodeHdr: phdrDebugInfo, phdrJitEHInfo, phdrJitGCInfo, phdrMDesc (codeman.h;
    // checked against the DAC's GC info addresses and EH clauses, tests/tests/roots.rs).
    ("RealCodeHeader", "GCInfo", 0x10),
    ("RealCodeHeader", "EHInfo", 8),
    ("RealCodeHeader", "NumUnwindInfos", 0x20),
    ("RealCodeHeader", "UnwindInfos", 0x24),
    ("Frame", "Next", 8),
    // InlinedCallFrame as 10's descriptor has it (m_Datum, then CallSiteSP 0x18,
    // CallerReturnAddress 0x20, CalleeSavedFP 0x28), not 8.0's table (0x20, 0x28, 0x30): with
    // those the resumed SP is the return address.
    ("InlinedCallFrame", "Datum", 0x10),
    ("InlinedCallFrame", "CallSiteSP", 0x18),
    ("InlinedCallFrame", "CallerReturnAddress", 0x20),
    ("InlinedCallFrame", "CalleeSavedFP", 0x28),
    // Module::m_pReadyToRunInfo (+0x3d8), whose m_pModule (+0) is the Module and m_pHeader
    // (+0x10) the READYTORUN_HEADER (both checked on use); its entry point map's buckets at
    // +0x1C0 as on 8.0 (HashMap::m_rgBuckets at +0x10). Not +0x490, which was taken first: the
    // Module ends before it (a ReadyToRun image's ReadyToRunInfo is allocated 0x468 bytes
    // after its Module, and +0x490 is that info's m_pCompositeInfo, which points to itself);
    // on the 9.0.22 dumps +0x3d8 is null on every IL-only module, where +0x490 holds whatever
    // follows the Module.
    ("Module", "ReadyToRunInfo", 0x3d8),
    ("ReadyToRunInfo", "ReadyToRunHeader", 0x10),
    ("ReadyToRunInfo", "EntryPointToMethodDescMap", 0x1B0),
    ("HashMap", "Buckets", 0x10),
    ("MethodTable", "!", 0x40),
    ("MethodTable", "AuxiliaryData", 0x20),
    ("EEClass", "FieldDescList", 0x18),
    ("EEClass", "MethodDescChunk", 0x20),
    // The WORD counters that bound the FieldDesc list (class.h: m_NumInstanceFields,
    // m_NumMethods, m_NumStaticFields ...; the descriptor's NumMethods 52 and
    // NumNonVirtualSlots 62 are where 10.0 has them, and so are these): checked by
    // tests/tests/statics.rs (every type's static FieldDescs equal the DAC's) and
    // fields_net9_10.rs (instance fields).
    ("EEClass", "NumInstanceFields", 50),
    ("EEClass", "NumStaticFields", 54),
    // Module: m_pSimpleName 264, m_path 272 (the descriptor's Path), m_pPEAssembly 280,
    // m_baseAddress 288 (the descriptor's Base).
    ("Module", "PEAssembly", 280),
    ("PEAssembly", "PEImage", 8),
    // PEImage::m_pLayouts[IMAGE_FLAT, IMAGE_LOADED] at 0x70 as on .NET 8.
    ("PEImage", "LoadedImageLayout", 0x78),
    ("PEImageLayout", "Base", 8),
    ("PEImageLayout", "Size", 0x10),
    ("PEImageLayout", "Flags", 0x14),
    // No ee_alloc_context before .NET 10: RuntimeThreadLocals.AllocContext and
    // g_global_alloc_context are the gc_alloc_context itself.
    ("EEAllocContext", "GCAllocationContext", 0),
    // MethodTableAuxiliaryData {union {DWORD m_dwFlags; {WORD m_loFlags; INT16
    // m_offsetToNonVirtualSlots}}, m_cachedVersionResilientHashCode, Module* m_pLoaderModule}
    // (the 10 descriptor's offsets: Flags 0, OffsetToNonVirtualSlots 2, LoaderModule 8).
    ("MethodTableAuxiliaryData", "OffsetToNonVirtualSlots", 2),
    METHOD_DESC_SIZES_NET9[0],
    METHOD_DESC_SIZES_NET9[1],
    METHOD_DESC_SIZES_NET9[2],
    METHOD_DESC_SIZES_NET9[3],
    METHOD_DESC_SIZES_NET9[4],
    METHOD_DESC_SIZES_NET9[5],
    METHOD_DESC_SIZES_NET9[6],
    METHOD_DESC_SIZES_NET9[7],
    METHOD_DESC_SIZES_NET9[8],
    METHOD_DESC_SIZES_NET9[9],
    METHOD_DESC_SIZES_NET9[10],
    FIELD_DESC_NET9_10[0],
    FIELD_DESC_NET9_10[1],
    FIELD_DESC_NET9_10[2],
    FIELD_DESC_NET9_10[3],
    // Statics (per-type since 9.0; the 10 descriptor publishes these, with the same values):
    // methodtable.h's MethodTableAuxiliaryData {DWORD m_dwFlags, ...}, the DynamicStaticsInfo
    // {m_pGCStatics, m_pNonGCStatics, m_pMethodTable} right before it, and ThreadStaticsInfo
    // {TLSIndex NonGCTlsIndex, TLSIndex GCTlsIndex, GenericsStaticsInfo {m_pFieldDescs,
    // DynamicStaticsInfo}} ending there too; threadstatics.h's ThreadLocalData
    // {cNonCollectibleTlsData, cCollectibleTlsData, pNonCollectibleTlsArrayData,
    // pCollectibleTlsArrayData, pThread, pInFlightData, ...} and InFlightTLSData {pNext,
    // tlsIndex, hTLSData}. Verified on heap-net9 by tests/tests/statics.rs: every type's GC and
    // non-GC statics base and every thread's thread-statics base equal the DAC's
    // (ISOSDacInterface14, dumps/heap-net9.statics.dac.json), the values the manifest's.
    ("MethodTableAuxiliaryData", "Flags", 0),
    ("DynamicStaticsInfo", "!", 24),
    ("DynamicStaticsInfo", "GCStatics", 0),
    ("DynamicStaticsInfo", "NonGCStatics", 8),
    ("ThreadStaticsInfo", "!", 40),
    ("ThreadStaticsInfo", "NonGCTlsIndex", 0),
    ("ThreadStaticsInfo", "GCTlsIndex", 4),
    ("ThreadLocalData", "NonCollectibleTlsDataCount", 0),
    ("ThreadLocalData", "NonCollectibleTlsArrayData", 8),
    ("ThreadLocalData", "InFlightData", 32),
    ("InFlightTLSData", "Next", 0),
    ("InFlightTLSData", "TlsIndex", 8),
    ("InFlightTLSData", "TLSData", 16),
];

/// .NET 9 on Linux x64 only: `Thread::m_ThreadLocalDataPtr` (Windows' Thread differs in size
/// before it; no 9.0 Windows dump checks it, so there it stays unpublished and thread statics
/// are refused). 9.0.22: the one word of each Thread that points at a ThreadLocalData whose
/// `pThread` (+24) points back (10.0's descriptor: 568), and the tests above check it.
///
/// `Module::m_pAvailableParamTypes` (ceeload.h: after m_FieldDefToDescMap come
/// m_GenericParamToDescMap (a 32-byte LookupMap), m_pILStubCache, the ULONG
/// m_DefaultDllImportSearchPathsAttributeValue, m_pAvailableClasses, then this: 88 bytes after
/// FieldDefToDescMap, as in 10's descriptor (512 -> 600); 9.0.22's descriptor puts
/// FieldDefToDescMap at 720). Checked by tests/tests/method_names.rs
/// `modules_list_the_constructed_types_on_the_heap`: the tables hold every generic
/// instantiation of the DAC's heap census on the 9.0.22 dumps.
///
/// The runtime's records of its loaded images (`discovery::imagecheck`, the .NET 10
/// descriptor's names): `AppDomain::m_Assemblies` at 0x720, an ArrayList as on 8.0 and 10
/// (count 0, first block 8; a block's next 0, size 8, elements 0x10), each element an
/// Assembly whose `m_pModule` (0x10, as on 10) points back to it through the descriptor's
/// `Module.Assembly`; `LookupMap::dwCount` at 0x10 (the descriptor gives its `TableData` at
/// 8); `ReadyToRunInfo::m_nRuntimeFunctions` at 0x58 (as on 8.0 and in 10's descriptor).
/// Checked on hang-net9 by tests/tests/image_records.rs against the 9.0.22 DAC
/// (`dumps/hang-net9.modules.dac.json`): the list gives GetAssemblyList's 13 Assemblies in its
/// order and their modules, each map's table and loaded image base equal GetModuleData's. The
/// function count at 0x58 equalled the files' (runtime pack) on its 8 ReadyToRun images when
/// found. No committed gcore core of 9 compares files in a test; the on-demand
/// ilonly-net9-gcore does (all 18 assemblies accepted; tests::on_demand lists it as read).
const SUPPLEMENT_NET9_LINUX: Supplement = &[
    // The assembly binder path of dumpalc (layout::AlcLayout::HostAssembly; the 10
    // descriptor's PEAssembly.AssemblyBinder 64 is the slot 9 calls m_pFallbackBinder, its
    // AssemblyBinder.AssemblyLoadContext 224 the handle): found on heap-net9 as on 8.0.33 (the
    // host assembly's m_pPEImage at +0x10 is the PEAssembly's; the SArray after the handle
    // lists the Assemblies dumpdomain lists); Linux only (ApplicationContext holds critical
    // sections, not checked on Windows).
    ("PEAssembly", "HostAssembly", 0x38),
    ("PEAssembly", "FallbackBinder", 0x40),
    ("BinderAssembly", "Binder", 0x20),
    ("AssemblyBinder", "ManagedAssemblyLoadContext", 0xE0),
    ("Thread", "ThreadLocalDataPtr", 0x3a0),
    ("Module", "AvailableTypeParams", 808),
    // Code versions (codeversion.h, method.hpp), as the 10 descriptor publishes them: found on
    // hang-net9-single (String.Equals: MethodDesc+8 holds its MethodDescCodeData, whose first
    // member is its MethodDescVersioningState, whose active node holds the DAC's native code);
    // checked by commands/tests/methods.rs on every 9.0.22 dump with a methods truth.
    ("MethodDesc", "CodeData", 8),
    ("MethodDescCodeData", "VersioningState", 0),
    ("MethodDescVersioningState", "Flags", 8),
    ("MethodDescVersioningState", "NativeCodeVersionNode", 16),
    ("NativeCodeVersionNode", "NativeCode", 0),
    ("NativeCodeVersionNode", "MethodDesc", 8),
    ("NativeCodeVersionNode", "ILVersionId", 16),
    ("NativeCodeVersionNode", "Next", 24),
    ("NativeCodeVersionNode", "Flags", 52),
    ("AppDomain", "DomainAssemblyList", 0x720),
    ("ArrayListBase", "Count", 0),
    ("ArrayListBase", "FirstBlock", 8),
    ("ArrayListBlock", "Next", 0),
    ("ArrayListBlock", "Size", 8),
    ("ArrayListBlock", "ArrayStart", 0x10),
    ("Assembly", "Module", 0x10),
    ("ModuleLookupMap", "Count", 0x10),
    ("ReadyToRunInfo", "NumRuntimeFunctions", 0x58),
    // The domains' records dumpdomain reads (10's descriptor names): the SystemDomain holds
    // `m_pSystemAssembly` at 0x728 and its embedded GlobalLoaderAllocator at 0x730 (vtable
    // first, the LowFrequencyHeap instance at +0x10); the allocator's heap pointers at 0x420,
    // 0x428 and 0x438 (StaticsHeap between, as on 10); `AppDomain::m_friendlyName` at 0x8A0,
    // before `m_pRootAssembly` (0x8A8) as on 10. Found on hang-net9 (each pointer points at
    // its heap instance, the name reads `clrhost`) and checked against SOS's dumpdomain (the
    // 9.0.22 DAC) on every .NET 9 dump with a `sos-domain` truth (tests/tests/sos_domain.rs).
    ("SystemDomain", "GlobalLoaderAllocator", 0x730),
    ("LoaderAllocator", "LowFrequencyHeap", 0x420),
    ("LoaderAllocator", "HighFrequencyHeap", 0x428),
    ("LoaderAllocator", "StubHeap", 0x438),
    ("AppDomain", "FriendlyName", 0x8A0),
];

/// .NET 9 globals its descriptor lacks (the 10 descriptor publishes these with the same
/// values): `StaticsPointerMask` (~ISCLASSNOTINITED, methodtable.h),
/// `NumberOfTlsOffsetsNotUsedInNoncollectibleArray` (threadstatics.h: the first two offsets of
/// the non-collectible array are not used) and `PtrArrayOffsetToDataArray` (an object[]'s
/// elements start after its MethodTable and length). Checked as the supplement above.
const GLOBALS_NET9: &[(&str, u64)] = &[
    ("StaticsPointerMask", !1),
    ("NumberOfTlsOffsetsNotUsedInNoncollectibleArray", 2),
    ("PtrArrayOffsetToDataArray", 0x10),
];

/// How the module's AssemblyLoadContext is found: the descriptor's `PEAssembly.AssemblyBinder`
/// and `AssemblyBinder.AssemblyLoadContext` (.NET 10, 11), else the family supplement's
/// host-assembly path (.NET 9), else unknown.
fn alc_layout(l: &Lookup<'_>) -> Option<layout::AlcLayout> {
    if let (Some(pe_assembly_binder), Some(binder_alc)) = (
        l.d.field("PEAssembly", "AssemblyBinder"),
        l.d.field("AssemblyBinder", "AssemblyLoadContext"),
    ) {
        return Some(layout::AlcLayout::Published {
            pe_assembly_binder,
            binder_alc,
        });
    }
    Some(layout::AlcLayout::HostAssembly {
        host_assembly: l.field("PEAssembly", "HostAssembly").ok()?,
        fallback_binder: l.field("PEAssembly", "FallbackBinder").ok()?,
        host_binder: l.field("BinderAssembly", "Binder").ok()?,
        binder_alc: l
            .field("AssemblyBinder", "ManagedAssemblyLoadContext")
            .ok()?,
    })
}

struct Lookup<'a> {
    d: &'a ContractDescriptor,
    supplement: Supplement,
    /// The family's supplement for one OS only (consulted after `supplement`).
    os_supplement: Supplement,
    /// Globals the family's descriptor lacks.
    globals: &'static [(&'static str, u64)],
    runtime: &'a str,
}

impl Lookup<'_> {
    fn field(&self, ty: &'static str, field: &'static str) -> Result<u64> {
        self.d
            .field(ty, field)
            .or_else(|| {
                self.supplement
                    .iter()
                    .chain(self.os_supplement)
                    .find(|(t, f, _)| *t == ty && *f == field)
                    .map(|s| s.2)
            })
            .ok_or_else(|| ClrError::MissingField {
                ty,
                field,
                runtime: self.runtime.to_owned(),
            })
    }
    fn size(&self, ty: &'static str) -> Result<u64> {
        let from_supplement = || {
            self.supplement
                .iter()
                .find(|(t, f, _)| *t == ty && *f == "!")
                .map(|s| s.2)
        };
        self.d
            .type_size(ty)
            .or_else(from_supplement)
            .ok_or_else(|| ClrError::MissingField {
                ty,
                field: "!",
                runtime: self.runtime.to_owned(),
            })
    }
    fn global(&self, name: &'static str) -> Result<u64> {
        self.d
            .global_number(name)
            .or_else(|| self.globals.iter().find(|g| g.0 == name).map(|g| g.1))
            .ok_or_else(|| ClrError::MissingField {
                ty: "globals",
                field: name,
                runtime: self.runtime.to_owned(),
            })
    }
}

/// The GC's structures on .NET 9/10: the GC is not in the descriptor. GcDacVars keeps its
/// major version 2 (minor 4 on 10.0) with the .NET 8 member offsets (new members are appended);
/// heap_segment and the generation fallback offsets are unchanged (checked: every segment's
/// fields equal the DAC's).
fn gc_layouts() -> (
    layout::GcDacVarsLayout,
    layout::GcHeapFieldIndex,
    layout::GenerationLayout,
    layout::HeapSegmentLayout,
) {
    let n8 = &layout::NET8_LINUX_X64;
    (
        n8.gc_dac_vars,
        n8.gc_heap_fields,
        n8.generation,
        n8.heap_segment,
    )
}

/// Builds the family's layout from the descriptor and the supplements. The result is interned:
/// equal layouts (every dump of one build) share one `&'static` table.
pub fn build_layout(
    d: &ContractDescriptor,
    family: Family,
    windows: bool,
    runtime: &str,
) -> Result<&'static Layout> {
    let l = Lookup {
        d,
        supplement: match family {
            Family::Net9 => SUPPLEMENT_NET9,
            Family::Net11 => SUPPLEMENT_NET11,
            _ => SUPPLEMENT_NET10,
        },
        os_supplement: match (family, windows) {
            (Family::Net9, false) => SUPPLEMENT_NET9_LINUX,
            _ => &[],
        },
        globals: match family {
            Family::Net9 => GLOBALS_NET9,
            _ => &[],
        },
        runtime,
    };
    let (gc_dac_vars, gc_heap_fields, generation, heap_segment) = gc_layouts();
    // .NET 11: the GC's own sub-descriptor (merged into `d`) describes its structures.
    let net11 = family == Family::Net11;
    let (gc_source, heap_segment) = if net11 {
        gc_descriptor_layouts(&l, heap_segment)?
    } else {
        (layout::GcSource::DacVars, heap_segment)
    };
    let n8 = &layout::NET8_LINUX_X64;
    let obj_header = d.global_number("ObjectHeaderSize").unwrap_or(8);
    let string_base_size = obj_header + l.field("String", "m_FirstChar")? + 2;
    let thread_ac = l.field("RuntimeThreadLocals", "AllocContext")?
        + l.field("EEAllocContext", "GCAllocationContext")?;
    let built = Layout {
        name: match (family, windows) {
            (Family::Net9, false) => ".NET 9 linux-x64 (contract descriptor)",
            (Family::Net9, true) => ".NET 9 windows-x64 (contract descriptor)",
            (Family::Net11, false) => ".NET 11 linux-x64 (contract descriptor)",
            (Family::Net11, true) => ".NET 11 windows-x64 (contract descriptor)",
            (_, false) => ".NET 10 linux-x64 (contract descriptor)",
            (_, true) => ".NET 10 windows-x64 (contract descriptor)",
        },
        family,
        method_table_scheme: MethodTableScheme::Net9,
        statics: match per_type_statics(&l) {
            Ok(p) => layout::StaticsScheme::PerType(p),
            Err(ClrError::MissingField { ty, field, .. }) => {
                layout::StaticsScheme::Unresolved { ty, field }
            }
            Err(e) => return Err(e),
        },
        verified: match (family, windows) {
            (Family::Net9, _) => VERIFIED_NET9,
            (Family::Net11, false) => VERIFIED_NET11,
            // No .NET 11 Windows dump has been checked.
            (Family::Net11, true) => &[],
            _ => VERIFIED_NET10,
        },
        global_alloc_context_offset: l.field("EEAllocContext", "GCAllocationContext")?,
        // Not used: globals come from the descriptor and the g_dacTable anchors.
        dac: n8.dac,
        gc_source,
        gc_dac_vars,
        gc_heap_fields,
        generation,
        alloc_context: layout::AllocContextLayout {
            alloc_ptr: l.field("GCAllocContext", "Pointer")?,
            alloc_limit: l.field("GCAllocContext", "Limit")?,
        },
        heap_segment,
        thread_store: layout::ThreadStoreLayout {
            thread_list: l.field("ThreadStore", "FirstThreadLink")?,
            thread_count: l.field("ThreadStore", "ThreadCount")?,
            unstarted_thread_count: l.field("ThreadStore", "UnstartedCount")?,
            background_thread_count: l.field("ThreadStore", "BackgroundCount")?,
            pending_thread_count: l.field("ThreadStore", "PendingCount")?,
            dead_thread_count: l.field("ThreadStore", "DeadCount")?,
        },
        thread: layout::ThreadLayout {
            state: l.field("Thread", "State")?,
            preemptive_gc_disabled: l.field("Thread", "PreemptiveGCDisabled")?,
            frame: l.field("Thread", "Frame")?,
            thread_id: l.field("Thread", "Id")?,
            alloc_context: thread_ac,
            runtime_thread_locals: Some(l.field("Thread", "RuntimeThreadLocals")?),
            link: l.field("Thread", "LinkNext")?,
            // .NET 11: the links hold the next Thread itself (docs/clr-layout-net11.md 2.3:
            // on async-net11 ThreadStore.FirstThreadLink is the DAC's first Thread).
            link_target: if net11 {
                0
            } else {
                l.field("Thread", "LinkNext")?
            },
            os_thread_id: l.field("Thread", "OSId")?,
            last_thrown_object: Some(l.field("Thread", "LastThrownObject")?),
            exception_tracker: match (
                l.field("Thread", "ExceptionTracker"),
                l.field("ExceptionInfo", "ThrownObject"),
                l.field("ExceptionInfo", "PreviousNestedInfo"),
            ) {
                (Ok(tracker), Ok(thrown_object), Ok(previous_nested)) => {
                    Some(layout::ExceptionTrackerLayout {
                        tracker,
                        thrown_object,
                        previous_nested,
                    })
                }
                _ => None,
            },
            thrown_object_is_handle: !net11,
        },
        method_table: layout::MethodTableLayout {
            flags: l.field("MethodTable", "MTFlags")?,
            base_size: l.field("MethodTable", "BaseSize")?,
            flags2: l.field("MethodTable", "MTFlags2")?,
            token: NOT_PUBLISHED,
            num_virtuals: l.field("MethodTable", "NumVirtuals")?,
            num_interfaces: l.field("MethodTable", "NumInterfaces")?,
            parent: l.field("MethodTable", "ParentMethodTable")?,
            loader_module: l.field("MethodTable", "Module")?,
            writeable_data: l.field("MethodTable", "AuxiliaryData")?,
            ee_class_or_canon: l.field("MethodTable", "EEClassOrCanonMT")?,
            per_inst_info: l.field("MethodTable", "PerInstInfo")?,
            interface_map: NOT_PUBLISHED,
            size: l.size("MethodTable")?,
        },
        ee_class: layout::EEClassLayout {
            method_table: l.field("EEClass", "MethodTable")?,
            field_desc_list: l.field("EEClass", "FieldDescList")?,
            chunks: l.field("EEClass", "MethodDescChunk")?,
            attr_class: l.field("EEClass", "CorTypeAttr")?,
            vm_flags: NOT_PUBLISHED,
            norm_type: l.field("EEClass", "InternalCorElementType")?,
            fields_are_packed: NOT_PUBLISHED,
            fixed_fields_size: NOT_PUBLISHED,
            field_counts: Some((
                l.field("EEClass", "NumInstanceFields")?,
                l.field("EEClass", "NumStaticFields")?,
            )),
        },
        // FieldDesc is in neither descriptor: the family's supplement gives it (a later
        // descriptor that publishes it wins).
        field_desc: layout::FieldDescLayout {
            size: l.size("FieldDesc")?,
            enclosing_mt: l.field("FieldDesc", "MTOfEnclosingClass")?,
            dword1: l.field("FieldDesc", "DWord1")?,
            dword2: l.field("FieldDesc", "DWord2")?,
        },
        module: layout::ModuleLayout {
            pe_assembly: l.field("Module", "PEAssembly")?,
            simple_name: None,
            path_pointer: Some(l.field("Module", "Path")?),
            pe_assembly_image: l.field("PEAssembly", "PEImage")?,
            pe_image_path_buffer: NOT_PUBLISHED,
            pe_image_layouts: l.field("PEImage", "LoadedImageLayout")?,
            pe_image_layout_count: 1,
            layout_base: l.field("PEImageLayout", "Base")?,
            layout_size: l.field("PEImageLayout", "Size")?,
            layout_flags: l.field("PEImageLayout", "Flags")?,
            layout_cor_header: None,
            typedef_map: l.field("Module", "TypeDefToMethodTableMap")?,
            dynamic_metadata: match (
                l.d.field("Module", "DynamicMetadata"),
                l.d.field("DynamicMetadata", "Size"),
                l.d.field("DynamicMetadata", "Data"),
            ) {
                (Some(module_field), Some(size), Some(data)) => {
                    Some(layout::DynamicMetadataLayout::Published {
                        module_field,
                        size,
                        data,
                    })
                }
                _ => None,
            },
            alc: alc_layout(&l),
        },
        methods: methods_layout(&l)?,
        min_object_size: 3 * d.pointer_size.max(8) as u64,
        string_base_size: u32::try_from(string_base_size).map_err(|_| ClrError::Descriptor {
            runtime: runtime.to_owned(),
            detail: format!("String.m_FirstChar gives a base size of {string_base_size}"),
        })?,
        stack: stack_layout(&l, family, windows),
        os: if windows {
            layout::TargetOs::Windows
        } else {
            layout::TargetOs::Linux
        },
        // The TypeDef map from the descriptor; the statics offsets are .NET 8's, and every
        // reader of them is gated by Capability::Statics.
        objects: layout::ObjectLayout {
            typedef_map: l.field("Module", "TypeDefToMethodTableMap")?,
            ..if windows {
                layout::OBJECTS_NET8_WINDOWS_X64
            } else {
                layout::OBJECTS_NET8_LINUX_X64
            }
        },
        roots: match family {
            Family::Net9 => &layout::NET9_ROOTS,
            Family::Net11 => roots_net11(&l)?,
            _ => &layout::NET10_ROOTS,
        },
        locks: match (family, windows) {
            (Family::Net9, false) => Some(&layout::NET9_LINUX_X64_LOCKS),
            (Family::Net9, true) => None,
            (Family::Net11, false) => Some(locks_net11(&l)?),
            (Family::Net11, true) => None,
            (_, false) => Some(&layout::NET10_LINUX_X64_LOCKS),
            (_, true) => Some(&layout::NET10_WINDOWS_X64_LOCKS),
        },
        image_records: image_records(&l),
        loader_heaps: loader_heaps(&l, family, windows),
        domains: domain_layout(&l, family),
    };
    // Globals this family needs must be present too (checked here, read at discovery).
    for g in GLOBALS_NEEDED {
        l.global(g)?;
    }
    Ok(intern(built))
}

/// The runtime's records of its loaded images that `discovery::imagecheck` compares a
/// headerless PE file with, when the descriptor (and the family's supplement) give every field
/// (10 and 11's descriptors do, 11's naming the list `AssemblyList`; 9's lacks the assembly
/// list); else `None`, and such files stay
/// unread. The ReadyToRun comparison needs the three ReadyToRunInfo fields as well.
fn image_records(l: &Lookup<'_>) -> Option<layout::ImageRecordsLayout> {
    let f = |ty: &'static str, field: &'static str| l.field(ty, field).ok();
    let r2r = f("Module", "ReadyToRunInfo")
        .and(f("ReadyToRunInfo", "ReadyToRunHeader"))
        .and(f("ReadyToRunInfo", "NumRuntimeFunctions"));
    Some(layout::ImageRecordsLayout {
        // 11.0.0's descriptor renamed the field `AssemblyList` (same offset, 576, and the
        // same ArrayList of Assemblies: docs/clr-layout-net11.md 1.4).
        domain_assemblies: f("AppDomain", "DomainAssemblyList")
            .or_else(|| f("AppDomain", "AssemblyList"))?,
        list_count: f("ArrayListBase", "Count")?,
        list_first: f("ArrayListBase", "FirstBlock")?,
        block_next: f("ArrayListBlock", "Next")?,
        block_size: f("ArrayListBlock", "Size")?,
        block_start: f("ArrayListBlock", "ArrayStart")?,
        assembly_module: f("Assembly", "Module")?,
        module_assembly: f("Module", "Assembly")?,
        map_count: f("ModuleLookupMap", "Count")?,
        typeref_map: f("Module", "TypeRefToMethodTableMap")?,
        memberref_map: f("Module", "MemberRefToDescMap")?,
        methoddef_map: f("Module", "MethodDefToDescMap")?,
        fielddef_map: f("Module", "FieldDefToDescMap")?,
        assemblyref_map: f("Module", "ManifestModuleReferencesMap")?,
        r2r_functions: r2r,
    })
}

/// The domains' records `dumpdomain` reads, when the descriptor (and the family's supplement:
/// .NET 9 on Linux) gives them; a StubHeap absent from the descriptor (.NET 11) is none.
fn domain_layout(l: &Lookup<'_>, family: Family) -> Option<layout::DomainLayout> {
    let f = |ty: &'static str, field: &'static str| l.field(ty, field).ok();
    Some(layout::DomainLayout {
        global_loader_allocator: f("SystemDomain", "GlobalLoaderAllocator")?,
        low_frequency_heap: f("LoaderAllocator", "LowFrequencyHeap")?,
        high_frequency_heap: f("LoaderAllocator", "HighFrequencyHeap")?,
        stub_heap: f("LoaderAllocator", "StubHeap"),
        friendly_name: f("AppDomain", "FriendlyName")?,
        system_domain_is_domain: family != Family::Net11,
    })
}

/// The GC's structures from its own sub-descriptor (.NET 11): `Generation`,
/// `TotalGenerationCount`, the server GC's `GCHeap` fields, `HeapSegment`. The read-only
/// (frozen) segment flag is not published: .NET 8's value (frozen segments still lead gen2's
/// region list, and the census equals the DAC's).
fn gc_descriptor_layouts(
    l: &Lookup<'_>,
    n8: layout::HeapSegmentLayout,
) -> Result<(layout::GcSource, layout::HeapSegmentLayout)> {
    let gc = layout::GcDescriptorLayout {
        generation_size: l.size("Generation")?,
        generation_count: l.global("TotalGenerationCount")?,
        generation_alloc_context: l.field("Generation", "AllocationContext")?,
        generation_start_segment: l.field("Generation", "StartSegment")?,
        heap_alloc_allocated: l.d.field("GCHeap", "AllocAllocated"),
        heap_ephemeral_heap_segment: l.d.field("GCHeap", "EphemeralHeapSegment"),
        heap_generation_table: l.d.field("GCHeap", "GenerationTable"),
        heap_finalize_queue: l.d.field("GCHeap", "FinalizeQueue"),
        heap_oom_data: l.d.field("GCHeap", "OomData"),
        oom_history: oom_history_layout(l),
    };
    let seg = layout::HeapSegmentLayout {
        allocated: l.field("HeapSegment", "Allocated")?,
        committed: l.field("HeapSegment", "Committed")?,
        reserved: l.field("HeapSegment", "Reserved")?,
        used: l.field("HeapSegment", "Used")?,
        mem: l.field("HeapSegment", "Mem")?,
        flags: l.field("HeapSegment", "Flags")?,
        next: l.field("HeapSegment", "Next")?,
        background_allocated: l.field("HeapSegment", "BackgroundAllocated")?,
        flag_readonly: n8.flag_readonly,
    };
    Ok((layout::GcSource::Descriptor(gc), seg))
}

/// `OomHistory` from the GC's sub-descriptor, when it describes every field.
fn oom_history_layout(l: &Lookup<'_>) -> Option<layout::OomHistoryLayout> {
    let f = |n: &str| l.d.field("OomHistory", n);
    Some(layout::OomHistoryLayout {
        reason: f("Reason")?,
        alloc_size: f("AllocSize")?,
        reserved: f("Reserved")?,
        allocated: f("Allocated")?,
        gc_index: f("GcIndex")?,
        fgm: f("Fgm")?,
        size: f("Size")?,
        available_pagefile_mb: f("AvailablePagefileMb")?,
        loh_p: f("LohP")?,
    })
}

/// The handle table and finalization queue of .NET 11 from the GC's sub-descriptor: its
/// `HandleMaxInternalTypes` gives the layout of [`layout::NET10_ROOTS`]'s rule, and every
/// offset and constant it publishes (`HandleTableMap`, `HandleTableBucket`,
/// `HandleTable.SegmentList`, `TableSegment` {RgUserData, NextSegment, RgValue},
/// `HandleSegmentSize`, `HandleBlocksPerSegment`, `HandlesPerBlock`,
/// `InitialHandleTableArraySize`, `CFinalize.FillPointers`, `CFinalizeFillPointersLength`)
/// overrides it. What it does not publish (the free mask, block types, `pHandleTable`,
/// `bEmptyLine`, `CFinalize::m_Array`) follows the rule, as on 10.
fn roots_net11(l: &Lookup<'_>) -> Result<&'static layout::RootsLayout> {
    let n = l.global("HandleMaxInternalTypes")?;
    if !(1..=64).contains(&n) {
        return Err(ClrError::Descriptor {
            runtime: l.runtime.to_owned(),
            detail: format!("HandleMaxInternalTypes is {n}"),
        });
    }
    let base = layout::roots_for_handle_types(n);
    let fill_count = l.global("CFinalizeFillPointersLength")?;
    let r = layout::RootsLayout {
        map_buckets: l.field("HandleTableMap", "BucketsPtr")?,
        map_next: l.field("HandleTableMap", "Next")?,
        buckets_per_map: l.global("InitialHandleTableArraySize")?,
        bucket_table: l.field("HandleTableBucket", "Table")?,
        table_segment_list: l.field("HandleTable", "SegmentList")?,
        segment_size: l.global("HandleSegmentSize")?,
        segment_header_size: l.field("TableSegment", "RgValue")?,
        blocks_per_segment: l.global("HandleBlocksPerSegment")?,
        handles_per_block: l.global("HandlesPerBlock")?,
        seg_user_data: l.field("TableSegment", "RgUserData")?,
        seg_next: l.field("TableSegment", "NextSegment")?,
        finalize_fill_pointers: l.field("CFinalize", "FillPointers")?,
        finalize_fill_count: usize::try_from(fill_count).unwrap_or(usize::MAX).min(64),
        ..base
    };
    if r == layout::NET10_ROOTS {
        return Ok(&layout::NET10_ROOTS);
    }
    static ROOTS: Mutex<Vec<&'static layout::RootsLayout>> = Mutex::new(Vec::new());
    Ok(intern_in(&ROOTS, r))
}

/// .NET 11 (Linux x64) monitors: the sync table from the descriptor (`SyncTableEntry`,
/// `SyncBlockCache.FreeSyncTableIndex`, `SyncBlock.Lock`/`ThinLock`: Monitor is managed), the
/// SyncBlockCache's m_ActiveCount and m_SyncTableSize where 10 has them (unpublished; checked on
/// async-net11: 1 active, index 2, size 250, as the 11.0.0 DAC's sync block count says).
fn locks_net11(l: &Lookup<'_>) -> Result<&'static layout::LockLayout> {
    let r = layout::LockLayout {
        cache_free_sync_table_index: l.field("SyncBlockCache", "FreeSyncTableIndex")?,
        sync_table_entry_size: l.size("SyncTableEntry")?,
        entry_object: l.field("SyncTableEntry", "Object")?,
        scheme: layout::LockScheme::Managed {
            lock_handle: l.field("SyncBlock", "Lock")?,
            thin_lock: l.field("SyncBlock", "ThinLock")?,
        },
        thread_first_blocking_item: NOT_PUBLISHED,
        ..layout::NET10_LINUX_X64_LOCKS
    };
    static LOCKS: Mutex<Vec<&'static layout::LockLayout>> = Mutex::new(Vec::new());
    Ok(intern_in(&LOCKS, r))
}

/// The per-type statics layout (.NET 9+). A missing field does not fail discovery: statics
/// alone then answer `MissingField` ([`layout::StaticsScheme::Unresolved`]).
fn per_type_statics(l: &Lookup<'_>) -> Result<layout::PerTypeStatics> {
    Ok(layout::PerTypeStatics {
        aux_flags: l.field("MethodTableAuxiliaryData", "Flags")?,
        dynamic_statics_size: l.size("DynamicStaticsInfo")?,
        gc_statics: l.field("DynamicStaticsInfo", "GCStatics")?,
        non_gc_statics: l.field("DynamicStaticsInfo", "NonGCStatics")?,
        statics_pointer_mask: l.global("StaticsPointerMask")?,
        thread_statics_size: l.size("ThreadStaticsInfo")?,
        gc_tls_index: l.field("ThreadStaticsInfo", "GCTlsIndex")?,
        non_gc_tls_index: l.field("ThreadStaticsInfo", "NonGCTlsIndex")?,
        thread_local_data: l.field("Thread", "ThreadLocalDataPtr")?,
        tld_non_collectible_count: l.field("ThreadLocalData", "NonCollectibleTlsDataCount")?,
        tld_non_collectible_data: l.field("ThreadLocalData", "NonCollectibleTlsArrayData")?,
        tld_in_flight: l.field("ThreadLocalData", "InFlightData")?,
        in_flight_next: l.field("InFlightTLSData", "Next")?,
        in_flight_tls_index: l.field("InFlightTLSData", "TlsIndex")?,
        in_flight_tls_data: l.field("InFlightTLSData", "TLSData")?,
        tls_offsets_not_used: l.global("NumberOfTlsOffsetsNotUsedInNoncollectibleArray")?,
        ptr_array_data: l.global("PtrArrayOffsetToDataArray")?,
    })
}

/// The stack walk's table on .NET 9/10: what the descriptor publishes (.NET 10: the code
/// manager, RealCodeHeader, MethodDesc, the Frames it names and their FrameIdentifier values;
/// .NET 9: MethodDesc and MethodDescChunk only), the rest [`NOT_PUBLISHED`] (the Stacks
/// capability is refused where they are missing: .NET 9). The two choices, how a Frame's
/// class is told and how the nibble map is encoded, are made here once: a descriptor with
/// FrameIdentifier globals has identifiers, ExecutionManager contract version 2 the
/// constant-lookup nibble map.
/// The Frames that saved a register context, where the descriptor says where they keep it
/// (10+; each left `None` where a field is missing: the walk then stops at such a Frame,
/// saying so). The HijackFrame needs the resumed SP: off Windows the end of its HijackArgs
/// (their size), on Windows their `Rsp`.
fn context_frames(d: &ContractDescriptor, windows: bool) -> layout::ContextFrames {
    let hijack = (|| {
        let args_rsp = if windows {
            Some(d.field("HijackArgs", "Rsp")?)
        } else {
            None
        };
        // The registers an x64 ABI may save (Windows unwind numbers), as the descriptor
        // names CalleeSavedRegisters' fields; each OS's struct has some of them.
        const NONVOLATILE: [(&str, usize); 8] = [
            ("Rbx", 3),
            ("Rbp", 5),
            ("Rsi", 6),
            ("Rdi", 7),
            ("R12", 12),
            ("R13", 13),
            ("R14", 14),
            ("R15", 15),
        ];
        let mut callee_saved_regs = [None; 16];
        for (field, reg) in NONVOLATILE {
            callee_saved_regs[reg] = d.field("CalleeSavedRegisters", field);
        }
        if callee_saved_regs.iter().all(|r| r.is_none()) {
            return None;
        }
        Some(layout::HijackLayout {
            return_address: d.field("HijackFrame", "ReturnAddress")?,
            args_ptr: d.field("HijackFrame", "HijackArgsPtr")?,
            args_size: d.type_size("HijackArgs")?,
            args_rsp,
            args_callee_saved: d.field("HijackArgs", "CalleeSavedRegisters")?,
            callee_saved_regs,
        })
    })();
    layout::ContextFrames {
        faulting_context: d.field("FaultingExceptionFrame", "TargetContext"),
        resumable_context_ptr: d.field("ResumableFrame", "TargetContextPtr"),
        hijack,
    }
}

fn stack_layout(l: &Lookup<'_>, family: Family, windows: bool) -> layout::StackLayout {
    let n8 = if windows {
        layout::NET8_WINDOWS_X64_STACK
    } else {
        layout::NET8_LINUX_X64_STACK
    };
    // The first field the walk needs that neither the descriptor nor the supplement has: the
    // walk refuses with it (`StackLayout::missing`).
    let missing = std::cell::Cell::new(None);
    let f = |ty: &'static str, field: &'static str| {
        l.field(ty, field).unwrap_or_else(|_| {
            if missing.get().is_none() {
                missing.set(Some((ty, field)));
            }
            NOT_PUBLISHED
        })
    };
    let mut ids = [0u64; layout::FRAME_IDENTIFIERS.len()];
    for (i, name) in layout::FRAME_IDENTIFIERS.iter().enumerate() {
        ids[i] = l.d.global_number(&format!("{name}Identifier")).unwrap_or(0);
    }
    let frame_type = if ids.iter().any(|&v| v != 0) {
        layout::FrameTypeSource::Identifier { ids }
    } else {
        layout::FrameTypeSource::Vtable
    };
    // 10's ExecutionManager 2 and 11's "c1" (the versions restarted as strings; checked on
    // async-net11: pointer-encoded map DWORDs lead to the DAC's method starts) are the
    // constant-lookup map; 11's contract version is checked at discovery.
    let nibble_map = match (family, l.d.contract("ExecutionManager")) {
        (Family::Net11, _) | (_, Some(ContractVersion::Int(2))) => {
            layout::NibbleMapEncoding::ConstantLookup
        }
        _ => layout::NibbleMapEncoding::Linear,
    };
    let u = |v: u64| v as u32;
    // Frames told by vtable (9): HelperMethodFrame and its MachState as on 8.0, the vtables
    // from g_dacTable index 125 ([`FRAME_VTABLES_NET9`]).
    let vtables = frame_type == layout::FrameTypeSource::Vtable && family == Family::Net9;
    let hmf = if vtables {
        n8
    } else {
        layout::StackLayout {
            hmf_method_desc: NOT_PUBLISHED,
            hmf_fcall_entry: NOT_PUBLISHED,
            hmf_mach_state: NOT_PUBLISHED,
            hmf_attribs: NOT_PUBLISHED,
            hmf_gc_refs: NOT_PUBLISHED,
            ms_rip: NOT_PUBLISHED,
            ms_rsp: NOT_PUBLISHED,
            ms_unwound: None,
            ms_ptrs: NOT_PUBLISHED,
            ms_ret_addr_ptr: NOT_PUBLISHED,
            ms_capture: NOT_PUBLISHED,
            ms_capture_rip: NOT_PUBLISHED,
            ms_capture_rsp: NOT_PUBLISHED,
            ..n8
        }
    };
    layout::StackLayout {
        range_map_levels: 5,
        range_map_low_bits: 17,
        fragment_next: f("RangeSectionFragment", "Next"),
        fragment_begin: f("RangeSectionFragment", "RangeBegin"),
        fragment_end: f("RangeSectionFragment", "RangeEndOpen"),
        fragment_range_section: f("RangeSectionFragment", "RangeSection"),
        rs_begin: f("RangeSection", "RangeBegin"),
        rs_end: f("RangeSection", "RangeEndOpen"),
        rs_flags: f("RangeSection", "Flags"),
        rs_jit_manager: f("RangeSection", "JitManager"),
        rs_r2r_module: f("RangeSection", "R2RModule"),
        rs_heap_list: f("RangeSection", "HeapList"),
        heap_list_map_base: f("CodeHeapListNode", "MapBase"),
        heap_list_hdr_map: f("CodeHeapListNode", "HeaderMap"),
        // HeapList::CLRPersonalityRoutine, what `HeapList::GetModuleBase` returns on x64:
        // published under that name from .NET 11, the supplement's `ModuleBase` before.
        heap_list_module_base: l
            .d
            .field("CodeHeapListNode", "CLRPersonalityRoutine")
            .unwrap_or_else(|| f("CodeHeapListNode", "ModuleBase")),
        code_header_method_desc: f("RealCodeHeader", "MethodDesc"),
        code_header_gc_info: l.field("RealCodeHeader", "GCInfo").unwrap_or(NOT_PUBLISHED),
        code_header_eh_info: l.field("RealCodeHeader", "EHInfo").unwrap_or(NOT_PUBLISHED),
        code_header_unwind_count: f("RealCodeHeader", "NumUnwindInfos"),
        code_header_unwind_infos: f("RealCodeHeader", "UnwindInfos"),
        method_desc_chunk_size: l.size("MethodDescChunk").unwrap_or(NOT_PUBLISHED),
        chunk_method_table: f("MethodDescChunk", "MethodTable"),
        chunk_token_range: f("MethodDescChunk", "FlagsAndTokenRange"),
        md_chunk_index: f("MethodDesc", "ChunkIndex"),
        md_alignment: l.global("MethodDescAlignment").unwrap_or(NOT_PUBLISHED),
        md_token_remainder_bits: u(l.global("MethodDescTokenRemainderBitCount").unwrap_or(0)),
        frame_next: f("Frame", "Next"),
        // HelperMethodFrame (gone in .NET 10; .NET 9's is not in its descriptor): as on 8.0.
        // A lazily captured frame is named through the FCALL hash ([`FCALL_METHODS_NET9`]).
        hmf_method_desc: hmf.hmf_method_desc,
        hmf_fcall_entry: hmf.hmf_fcall_entry,
        hmf_mach_state: hmf.hmf_mach_state,
        hmf_attribs: hmf.hmf_attribs,
        // gcPtrs as on 8.0: on crashorder-net9 (9.0.22, the main thread's
        // HelperMethodFrame_1OBJ in Thread.Join) gcPtrs[0] at +0xE8 holds the slot the
        // 9.0.22 DAC's GetStackReferences reports for that Frame.
        hmf_gc_refs: hmf.hmf_gc_refs,
        fcall_methods_index: if vtables {
            FCALL_METHODS_NET9
        } else {
            usize::MAX
        },
        ms_rip: hmf.ms_rip,
        ms_rsp: hmf.ms_rsp,
        ms_unwound: hmf.ms_unwound,
        ms_ptrs: hmf.ms_ptrs,
        ms_ret_addr_ptr: hmf.ms_ret_addr_ptr,
        ms_capture: hmf.ms_capture,
        ms_capture_rip: hmf.ms_capture_rip,
        ms_capture_rsp: hmf.ms_capture_rsp,
        callee_saved: n8.callee_saved,
        icf_datum: l.field("InlinedCallFrame", "Datum").ok(),
        icf_call_site_sp: f("InlinedCallFrame", "CallSiteSP"),
        icf_return_address: f("InlinedCallFrame", "CallerReturnAddress"),
        icf_callee_saved_fp: f("InlinedCallFrame", "CalleeSavedFP"),
        frame_vtables_index: if vtables {
            FRAME_VTABLES_NET9
        } else {
            usize::MAX
        },
        frame_type,
        nibble_map,
        sef_target_context: l.d.field("SoftwareExceptionFrame", "TargetContext"),
        context_frames: {
            let mut c = context_frames(l.d, windows);
            // 9.0's descriptor has no FaultingExceptionFrame: its CONTEXT m_ctx is at +0x20, as
            // on 8 (frames.h) and 10 (descriptor). Measured on the on-demand nestedfault-net9
            // (9.0.22, Linux): there its ContextFlags say CONTEXT_AMD64 and its Rip/Rsp are the
            // DAC's next frame (tests::on_demand: every frame equals the DAC's). Windows 9 has
            // no such dump to check: left unknown.
            if family == Family::Net9 && !windows {
                c.faulting_context.get_or_insert(0x20);
            }
            c
        },
        module_r2r_info: f("Module", "ReadyToRunInfo"),
        r2r_info_header: f("ReadyToRunInfo", "ReadyToRunHeader"),
        // m_pModule: at +0 on 8.0 and 9.0 (checked on use); 10's descriptor does not say.
        r2r_info_module: vtables.then_some(0),
        r2r_info_entry_map_buckets: f("ReadyToRunInfo", "EntryPointToMethodDescMap")
            .saturating_add(f("HashMap", "Buckets")),
        thread_last_thrown: NOT_PUBLISHED,
        // 9.0 on Windows: its g_dacTable order (the Frame vtables, the FCALL hash) and
        // MachState were not checked (no such dump): refused rather than guessed.
        missing: if vtables && windows {
            Some((
                "g_dacTable",
                "Frame vtables (9.0 windows-x64: not verified)",
            ))
        } else {
            missing.get()
        },
    }
}

/// g_dacTable index (from the table's start, [`DacTableAnchors::thread_store_index`]) of
/// the first of [`layout::FRAME_VTABLES`] on 9.0: found on the 9.0.22 dumps, where the
/// vtables of the Frames the DAC names DebuggerU2MCatchHandlerFrame, HelperMethodFrame and
/// InlinedCallFrame sit at 128, 131 and 137 (3, 6 and 12 into the list, as on 8.0).
pub const FRAME_VTABLES_NET9: usize = 125;

/// g_dacTable index (as [`FRAME_VTABLES_NET9`]) of `gFCallMethods` on 9.0 (8.0's 78 plus the
/// same 3 as the Frame vtables): on crashorder-net9 (9.0.22) the only index whose FCALL hash
/// maps the HelperMethodFrame's `m_FCallEntry` (Thread.Join's) to a MethodDesc, the one the
/// 9.0.22 DAC names for that Frame (Thread.Join(Int32)).
pub const FCALL_METHODS_NET9: usize = 81;

/// MethodDescs, slots and precodes on .NET 9/10: sizes from the descriptor's types (10) or the
/// supplement (9), the slot scheme of 9+, and what 10 alone publishes (the module's constructed
/// types, the precode machine descriptor).
fn methods_layout(l: &Lookup<'_>) -> Result<layout::MethodsLayout> {
    let md = l.size("MethodDesc")?;
    let platform = |field: &str| match (
        l.d.field("PlatformMetadata", "PrecodeMachineDescriptor"),
        l.d.field("PrecodeMachineDescriptor", field),
    ) {
        (Some(a), Some(b)) => Some(a + b),
        _ => None,
    };
    let platform_stub_type = platform("StubPrecodeType");
    Ok(layout::MethodsLayout {
        method_desc_sizes: [
            md,
            l.size("FCallMethodDesc")?,
            l.size("PInvokeMethodDesc")?,
            l.size("EEImplMethodDesc")?,
            l.size("ArrayMethodDesc")?,
            l.size("InstantiatedMethodDesc")?,
            // Without FEATURE_COMINTEROP (the descriptor's FeatureCOMInterop 0: Linux) the
            // runtime's size table gives this classification a plain MethodDesc's size.
            if l.d.global_number("FeatureCOMInterop") == Some(1) {
                l.size("CLRToCOMCallMethodDesc")?
            } else {
                md
            },
            l.size("DynamicMethodDesc")?,
        ],
        non_vtable_slot_size: l.size("NonVtableSlot")?,
        method_impl_size: l.size("MethodImpl")?,
        native_code_slot_size: l.size("NativeCodeSlot")?,
        // Published from .NET 11 (`AsyncMethodData` ! 24), whose MethodDescs may carry it.
        async_method_data_size: l.d.type_size("AsyncMethodData"),
        dynamic: match (
            l.d.field("StoredSigMethodDesc", "Sig"),
            l.d.field("StoredSigMethodDesc", "cSig"),
            l.d.field("StoredSigMethodDesc", "ExtendedFlags"),
            l.d.field("DynamicMethodDesc", "MethodName"),
        ) {
            (Some(sig), Some(sig_len), Some(extended_flags), Some(name)) => {
                Some(layout::DynamicMethodLayout {
                    sig,
                    sig_len,
                    extended_flags,
                    name,
                })
            }
            _ => None,
        },
        instantiated: match (
            l.d.field("InstantiatedMethodDesc", "PerInstInfo"),
            l.d.field("InstantiatedMethodDesc", "Flags2"),
            l.d.field("InstantiatedMethodDesc", "NumGenericArgs"),
        ) {
            (Some(per_inst_info), Some(flags2), Some(num_generic_args)) => {
                Some(layout::InstantiatedMethodLayout {
                    per_inst_info,
                    flags2,
                    num_generic_args,
                })
            }
            _ => None,
        },
        slots: layout::SlotScheme::Net9Aux {
            ee_class_num_methods: l.field("EEClass", "NumMethods")?,
            ee_class_num_non_virtual_slots: l.field("EEClass", "NumNonVirtualSlots")?,
            method_table_aux: l.field("MethodTable", "AuxiliaryData")?,
            aux_offset_to_non_virtual_slots: l
                .field("MethodTableAuxiliaryData", "OffsetToNonVirtualSlots")?,
        },
        // Published by the 10 descriptor; 9 on Linux by its supplement; elsewhere refused by
        // name.
        module_available_type_params: l.field("Module", "AvailableTypeParams").ok(),
        stub_precode_type_offset: platform_stub_type,
        stub_precode_type: layout::METHODS_NET8_LINUX.stub_precode_type,
        stub_code_page_size_offset: platform("StubCodePageSize"),
        stub_code_page_size: layout::METHODS_NET8_LINUX.stub_code_page_size,
        code_versions: code_versions(l),
    })
}

/// A method's code versions on .NET 9+ (the CodeVersions contract's types: published by the
/// 10 descriptor; .NET 9's by its supplement); `None` where a field is known nowhere.
fn code_versions(l: &Lookup<'_>) -> Option<layout::CodeVersionsLayout> {
    let f = |t, n| l.field(t, n).ok();
    Some(layout::CodeVersionsLayout {
        states: layout::VersioningStates::CodeData {
            method_desc: f("MethodDesc", "CodeData")?,
            versioning_state: f("MethodDescCodeData", "VersioningState")?,
        },
        // The 10 descriptor does not publish it (the cDAC reaches a state from its method):
        // the first member, as on 8 (codeversion.h).
        state_method_desc: 0,
        state_flags: f("MethodDescVersioningState", "Flags")?,
        state_first_node: f("MethodDescVersioningState", "NativeCodeVersionNode")?,
        node_native_code: f("NativeCodeVersionNode", "NativeCode")?,
        node_method_desc: f("NativeCodeVersionNode", "MethodDesc")?,
        node_il_version: f("NativeCodeVersionNode", "ILVersionId")?,
        node_next: f("NativeCodeVersionNode", "Next")?,
        node_flags: f("NativeCodeVersionNode", "Flags")?,
    })
}

/// The descriptor globals discovery reads.
pub const GLOBALS_NEEDED: &[&str] = &[
    "ThreadStore",
    "FinalizerThread",
    "GCThread",
    "AppDomain",
    "ObjectMethodTable",
    "StringMethodTable",
    "ObjectArrayMethodTable",
    "ExceptionMethodTable",
    "FreeObjectMethodTable",
    "SyncTableEntries",
];

static INTERNED: Mutex<Vec<&'static Layout>> = Mutex::new(Vec::new());

/// One `&'static` table per distinct layout (a handful per process at most).
fn intern(l: Layout) -> &'static Layout {
    intern_in(&INTERNED, l)
}

/// The `&'static` copy of `value` kept in `set`, made (and leaked) the first time a value equal
/// to it is asked for: one per distinct table, a handful per process at most.
fn intern_in<T: PartialEq>(set: &Mutex<Vec<&'static T>>, value: T) -> &'static T {
    let mut v = set.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(found) = v.iter().find(|x| ***x == value) {
        return found;
    }
    let leaked: &'static T = Box::leak(Box::new(value));
    v.push(leaked);
    leaked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::descriptor::parse;

    /// The fields a .NET 10 descriptor gives for the heap walk (10.0.12's values).
    const NET10: &str = r#"{"version":0,"types":{
        "MethodTable":{"!":64,"MTFlags":0,"BaseSize":4,"MTFlags2":8,"EEClassOrCanonMT":40,
            "Module":24,"ParentMethodTable":16,"NumInterfaces":14,"NumVirtuals":12,
            "PerInstInfo":48,"AuxiliaryData":32},
        "EEClass":{"MethodTable":16,"MethodDescChunk":32,"FieldDescList":24,"CorTypeAttr":40,
            "InternalCorElementType":48,"NumInstanceFields":50,"NumStaticFields":54,
            "NumMethods":52,"NumNonVirtualSlots":62},
        "MethodTableAuxiliaryData":{"LoaderModule":8,"OffsetToNonVirtualSlots":2,"Flags":0},
        "MethodDesc":{"!":16},"FCallMethodDesc":{"!":24},"ArrayMethodDesc":{"!":32},
        "InstantiatedMethodDesc":{"!":40},"DynamicMethodDesc":{"!":48},"NonVtableSlot":{"!":8},
        "MethodImpl":{"!":16},"NativeCodeSlot":{"!":8},
        "Module":{"PEAssembly":216,"Path":200,"TypeDefToMethodTableMap":416},"PEAssembly":{"PEImage":8},
        "PEImage":{"LoadedImageLayout":128},"PEImageLayout":{"Base":8,"Size":16,"Flags":20},
        "Thread":{"Id":16,"OSId":296,"LastThrownObject":336,"State":0,"PreemptiveGCDisabled":4,
            "RuntimeThreadLocals":32,"Frame":8,"LinkNext":[112,"pointer"]},
        "ThreadStore":{"FirstThreadLink":88,"ThreadCount":112,"UnstartedCount":116,
            "BackgroundCount":120,"PendingCount":124,"DeadCount":128},
        "GCAllocContext":{"Pointer":0,"Limit":8},"EEAllocContext":{"GCAllocationContext":8},
        "RuntimeThreadLocals":{"AllocContext":0},"String":{"m_FirstChar":12}},
        "globals":{"ObjectHeaderSize":["0x8","uint64"],"ThreadStore":[[0],"pointer"],
            "FinalizerThread":[[0],"pointer"],"GCThread":[[0],"pointer"],
            "AppDomain":[[0],"pointer"],"ObjectMethodTable":[[0],"pointer"],
            "StringMethodTable":[[0],"pointer"],"ObjectArrayMethodTable":[[0],"pointer"],
            "ExceptionMethodTable":[[0],"pointer"],"FreeObjectMethodTable":[[0],"pointer"],
            "SyncTableEntries":[[0],"pointer"]},
        "contracts":{"RuntimeTypeSystem":1,"Loader":1,"Thread":1,"Object":1}}"#;

    #[test]
    fn a_net10_descriptor_resolves_into_plain_offsets() {
        let d = parse(NET10.as_bytes(), &[0x1000]).unwrap();
        check_contracts(&d, Family::Net10, ".NET 10").unwrap();
        let l = build_layout(&d, Family::Net10, false, ".NET 10").unwrap();
        assert_eq!(l.method_table.flags2, 8);
        assert_eq!(l.method_table.size, 64);
        assert_eq!(l.thread.link, 112);
        assert_eq!(l.thread.alloc_context, 8);
        assert_eq!(l.thread.runtime_thread_locals, Some(32));
        assert_eq!(l.string_base_size, 0x16);
        assert_eq!(l.module.path_pointer, Some(200));
        assert!(l.verified.contains(&Capability::HeapWalk));
        assert_eq!(l.ee_class.field_counts, Some((50, 54)));
        // This descriptor has MethodTableAuxiliaryData (for the slots) but no statics types:
        // statics alone are unresolved, naming the first missing one.
        assert_eq!(
            l.statics,
            layout::StaticsScheme::Unresolved {
                ty: "DynamicStaticsInfo",
                field: "!"
            }
        );
        // Stacks is verified on the family, but this descriptor lacks the code manager: the
        // walk refuses, naming the first missing field; without ExecutionManager 2 and
        // FrameIdentifier globals the choices are version 1's.
        assert!(l.verified.contains(&Capability::Stacks));
        assert_eq!(l.stack.missing, Some(("RangeSectionFragment", "Next")));
        assert_eq!(l.stack.nibble_map, layout::NibbleMapEncoding::Linear);
        assert_eq!(l.stack.frame_type, layout::FrameTypeSource::Vtable);
        // Interned: the same table for the same descriptor.
        let again = build_layout(&d, Family::Net10, false, ".NET 10").unwrap();
        assert!(std::ptr::eq(l, again));
    }

    #[test]
    fn statics_resolve_from_the_descriptor_or_the_net9_supplement() {
        // 10.0.14's statics types and globals.
        let text = NET10
            .replace(
                r#""String":{"m_FirstChar":12}},"#,
                r#""String":{"m_FirstChar":12},
            "MethodTableAuxiliaryData":{"Flags":0,"LoaderModule":8},
            "DynamicStaticsInfo":{"!":24,"GCStatics":0,"NonGCStatics":8},
            "ThreadStaticsInfo":{"!":40,"GCTlsIndex":4,"NonGCTlsIndex":0},
            "ThreadLocalData":{"NonCollectibleTlsDataCount":0,"NonCollectibleTlsArrayData":8,
                "InFlightData":32},
            "InFlightTLSData":{"Next":0,"TlsIndex":8,"TLSData":16}},"#,
            )
            .replace(
                r#""LinkNext":[112,"pointer"]"#,
                r#""LinkNext":[112,"pointer"],"ThreadLocalDataPtr":568"#,
            )
            .replace(
                r#""ObjectHeaderSize":["0x8","uint64"],"#,
                r#""ObjectHeaderSize":["0x8","uint64"],
            "StaticsPointerMask":["0xfffffffffffffffe","uintptr_t"],
            "PtrArrayOffsetToDataArray":["0x10","uintptr_t"],
            "NumberOfTlsOffsetsNotUsedInNoncollectibleArray":["0x2","uint8"],"#,
            );
        let d = parse(text.as_bytes(), &[0x1000]).unwrap();
        let l = build_layout(&d, Family::Net10, false, ".NET 10").unwrap();
        let layout::StaticsScheme::PerType(p) = l.statics else {
            panic!("{:?}", l.statics)
        };
        assert_eq!(p.thread_local_data, 568);
        assert_eq!(p.statics_pointer_mask, !1);
        assert_eq!((p.tls_offsets_not_used, p.ptr_array_data), (2, 0x10));
        // .NET 9's descriptor has none of these: the supplement gives them on Linux; on
        // Windows the Thread's ThreadLocalDataPtr stays unknown (statics unresolved).
        let d = parse(NET10.as_bytes(), &[0x1000]).unwrap();
        let l9 = build_layout(&d, Family::Net9, false, ".NET 9").unwrap();
        let layout::StaticsScheme::PerType(p9) = l9.statics else {
            panic!("{:?}", l9.statics)
        };
        assert_eq!(
            p9,
            layout::PerTypeStatics {
                thread_local_data: 0x3a0,
                ..p
            }
        );
        let w9 = build_layout(&d, Family::Net9, true, ".NET 9").unwrap();
        assert_eq!(
            w9.statics,
            layout::StaticsScheme::Unresolved {
                ty: "Thread",
                field: "ThreadLocalDataPtr"
            }
        );
    }

    #[test]
    fn a_missing_field_is_named_with_type_and_runtime() {
        let text = NET10.replace(r#""LinkNext":[112,"pointer"]"#, r#""Other":1"#);
        let d = parse(text.as_bytes(), &[0x1000]).unwrap();
        match build_layout(&d, Family::Net10, false, ".NET 10.0.99") {
            Err(ClrError::MissingField { ty, field, runtime }) => {
                assert_eq!(
                    (ty, field, runtime.as_str()),
                    ("Thread", "LinkNext", ".NET 10.0.99")
                )
            }
            other => panic!("{other:?}"),
        }
        // .NET 9's supplement gives what its descriptor lacks.
        let text = NET10.replace(r#""AuxiliaryData":32"#, r#""X":1"#);
        let d = parse(text.as_bytes(), &[0x1000]).unwrap();
        assert!(build_layout(&d, Family::Net10, false, "10").is_err());
        assert_eq!(
            build_layout(&d, Family::Net9, false, "9")
                .unwrap()
                .method_table
                .writeable_data,
            0x20
        );
    }

    #[test]
    fn unknown_contract_versions_are_refused_by_name() {
        let text = NET10.replace(r#""RuntimeTypeSystem":1"#, r#""RuntimeTypeSystem":"c2""#);
        let d = parse(text.as_bytes(), &[0x1000]).unwrap();
        let e = check_contracts(&d, Family::Net10, ".NET 10.0.99")
            .unwrap_err()
            .to_string();
        assert!(e.contains("RuntimeTypeSystem version \"c2\""), "{e}");
        // .NET 11 names its versions as strings that restarted at "c1": its "c1" is read, an
        // integer 1 (10's numbering) or a "c2" is refused.
        let net11 = NET10
            .replace(
                r#""contracts":{"RuntimeTypeSystem":1,"Loader":1,"Thread":1,"Object":1}"#,
                r#""contracts":{"RuntimeTypeSystem":"c1","Loader":"c1","Thread":"c1",
                    "Object":"c1","ExecutionManager":"c1"}"#,
            )
            .replace(r#""version":0"#, r#""version":2"#);
        let d = parse(net11.as_bytes(), &[0x1000]).unwrap();
        check_contracts(&d, Family::Net11, ".NET 11.0.0").unwrap();
        assert!(check_contracts(&d, Family::Net10, ".NET 10").is_err());
        let d = parse(
            net11
                .replace(r#""Loader":"c1""#, r#""Loader":"c2""#)
                .as_bytes(),
            &[0x1000],
        )
        .unwrap();
        let e = check_contracts(&d, Family::Net11, ".NET 11.0.0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("Loader version \"c2\""), "{e}");
        let d = parse(NET10.as_bytes(), &[0x1000]).unwrap();
        assert!(check_contracts(&d, Family::Net11, ".NET 11.0.0").is_err());
        let text = NET10.replace(r#""Thread":1,"#, "");
        let d = parse(text.as_bytes(), &[0x1000]).unwrap();
        assert!(check_contracts(&d, Family::Net10, "x")
            .unwrap_err()
            .to_string()
            .contains("no Thread contract"));
    }
}

/// The loader heaps' table ([`layout::LoaderHeapLayout`]) of a runtime: 9.0 measured
/// (layout.rs); 10 and 11 from the descriptor where it publishes a field, else measured on
/// 10.0.14 (heap-net10, async-net10, servergc-net10: SOS's blocks and the LoaderAllocator's
/// pointers to them; windows-hang-net10: the Windows DAC's, under wine); `None` on Windows 9
/// and 11 (no dump to check them) or where a field is missing.
fn loader_heaps(l: &Lookup, family: Family, windows: bool) -> Option<layout::LoaderHeapLayout> {
    use layout::{CodeHeapKindSource, LoaderHeapName as N};
    let d = |t: &str, f: &str| l.d.field(t, f);
    match family {
        Family::Net8 => None,
        Family::Net9 => (!windows).then_some(layout::LOADER_HEAPS_NET9_LINUX),
        Family::Net10 => Some(layout::LoaderHeapLayout {
            // Windows: windows-hang-net10 (10.0.14) only, against the Windows DAC.
            checked_builds: if windows {
                &["10.0.14"]
            } else {
                &["10.0.11", "10.0.14"]
            },
            system_domain_listed: true,
            system_domain_dac_index: None,
            global_allocator: d("SystemDomain", "GlobalLoaderAllocator")?,
            heaps: [
                Some((
                    N::LowFrequencyHeap,
                    d("LoaderAllocator", "LowFrequencyHeap")?,
                )),
                Some((
                    N::HighFrequencyHeap,
                    d("LoaderAllocator", "HighFrequencyHeap")?,
                )),
                // Measured on 10.0.14: StaticsHeap between HighFrequencyHeap and StubHeap,
                // ExecutableHeap after StubHeap, then m_pPrecodeHeap, the precode heaps (as
                // 11's descriptor orders them).
                Some((N::StaticsHeap, 0x2C0)),
                Some((N::StubHeap, d("LoaderAllocator", "StubHeap")?)),
                Some((N::ExecutableHeap, 0x2D0)),
                Some((N::FixupPrecodeHeap, 0x2E0)),
                Some((N::NewStubPrecodeHeap, 0x2E8)),
            ],
            // The VirtualCallStubManager and where it keeps the two heaps: 0x6C8, 0x180 / 0x188
            // on Windows.
            vcs_manager: if windows { 0x6C8 } else { 0x710 },
            vcs_indcell_heap: if windows { 0x180 } else { 0x198 },
            vcs_cache_entry_heap: if windows { 0x188 } else { 0x1A0 },
            first_block: 8,
            block_next: 0,
            block_address: 8,
            block_size: 16,
            // Windows's g_dacTable has nine more entries before the LoaderCodeHeap vtable
            // (134); HostCodeHeap's is not verified there (windows-hang-net10 has none), nor
            // its fields.
            jit_manager_dac_index: Some(4),
            all_code_heaps: 0x10,
            heap_list_next: d("CodeHeapListNode", "Next")?,
            heap_list_heap: 8,
            code_heap_kind: if windows {
                CodeHeapKindSource::Vtable {
                    loader: 134,
                    host: None,
                }
            } else {
                CodeHeapKindSource::Vtable {
                    loader: 125,
                    host: Some(126),
                }
            },
            code_heap_first_block: 8,
            host_code_heap: (!windows).then_some((24, 32)),
        }),
        Family::Net11 if windows => None,
        Family::Net11 => {
            let first_block = d("LoaderHeap", "FirstBlock")?;
            Some(layout::LoaderHeapLayout {
                checked_builds: &["11.0.0"],
                system_domain_listed: false,
                system_domain_dac_index: None,
                global_allocator: d("SystemDomain", "GlobalLoaderAllocator")?,
                heaps: [
                    Some((
                        N::LowFrequencyHeap,
                        d("LoaderAllocator", "LowFrequencyHeap")?,
                    )),
                    Some((
                        N::HighFrequencyHeap,
                        d("LoaderAllocator", "HighFrequencyHeap")?,
                    )),
                    Some((N::StaticsHeap, d("LoaderAllocator", "StaticsHeap")?)),
                    Some((N::ExecutableHeap, d("LoaderAllocator", "ExecutableHeap")?)),
                    Some((
                        N::FixupPrecodeHeap,
                        d("LoaderAllocator", "FixupPrecodeHeap")?,
                    )),
                    Some((
                        N::NewStubPrecodeHeap,
                        d("LoaderAllocator", "NewStubPrecodeHeap")?,
                    )),
                    None,
                ],
                vcs_manager: d("LoaderAllocator", "VirtualCallStubManager")?,
                vcs_indcell_heap: d("VirtualCallStubManager", "IndcellHeap")?,
                vcs_cache_entry_heap: d("VirtualCallStubManager", "CacheEntryHeap")?,
                first_block,
                block_next: d("LoaderHeapBlock", "Next")?,
                block_address: d("LoaderHeapBlock", "VirtualAddress")?,
                block_size: d("LoaderHeapBlock", "VirtualSize")?,
                jit_manager_dac_index: None,
                all_code_heaps: d("EEJitManager", "AllCodeHeaps")?,
                heap_list_next: d("CodeHeapListNode", "Next")?,
                heap_list_heap: d("CodeHeapListNode", "Heap")?,
                // The values measured on 11.0.0 (async-net11, heap-net11: 0 on the heaps SOS
                // calls LoaderCodeHeap, 1 on its HostCodeHeap).
                code_heap_kind: CodeHeapKindSource::HeapType {
                    offset: d("CodeHeap", "HeapType")?,
                },
                code_heap_first_block: d("LoaderCodeHeap", "LoaderHeap")? + first_block,
                host_code_heap: Some((
                    d("HostCodeHeap", "BaseAddress")?,
                    d("HostCodeHeap", "CurrentAddress")?,
                )),
            })
        }
    }
}
