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

use crate::descriptor::{ContractDescriptor, ContractVersion};
use crate::error::{ClrError, Result};
use crate::layout::{self, Capability, Family, Layout, MethodTableScheme};
use std::sync::Mutex;

/// An offset no reader may use: the field is neither in the descriptor nor in a verified
/// supplement, and every capability reading it is refused on the family.
pub const NOT_PUBLISHED: u64 = u64::MAX / 2;

/// The data contracts the heap walk and type names depend on, with the versions this build
/// reads. A descriptor naming another version of one of these is refused.
pub const KNOWN_CONTRACTS: &[(&str, i64)] = &[
    ("RuntimeTypeSystem", 1),
    ("Loader", 1),
    ("Thread", 1),
    ("Object", 1),
];

/// What is verified against the DAC on .NET 9 (Linux x64 workstation GC): the heap walk with
/// its census, the thread list that gives the allocation contexts, type names, and instance
/// fields (FieldDesc: `tests/tests/fields_net9_10.rs`, against the descriptor's Exception
/// offsets, ClrMD's exceptions, the DAC's async boxes and the heap scenario's manifest); GC
/// handles and the finalization queue (`tests/tests/roots.rs`), sync blocks, thin locks and
/// Monitor waits (`tests/tests/locks.rs`; Linux only: [`crate::layout::Layout::locks`] has no
/// Windows 9.0 table), exception objects, their traces and last thrown objects
/// (`tests/tests/exceptions.rs`), each against the DAC and ClrMD.
/// Everything else (statics included) is refused on the family until checked.
pub const VERIFIED_NET9: &[Capability] = &[
    Capability::HeapWalk,
    Capability::Threads,
    Capability::TypeNames,
    Capability::Fields,
    Capability::Roots,
    Capability::Locks,
    Capability::Exceptions,
];

/// What is verified against the DAC on .NET 10 (Linux x64 and Windows x64): as .NET 9 (fields
/// included), and server-GC heaps (servergc-net10: `gc_heap_field_offsets` indices as on 8.0).
pub const VERIFIED_NET10: &[Capability] = &[
    Capability::HeapWalk,
    Capability::Threads,
    Capability::TypeNames,
    Capability::ServerGc,
    Capability::Fields,
    Capability::Roots,
    Capability::Locks,
    Capability::Exceptions,
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
    /// Entries after `g_pSyncTable` (the descriptor's `SyncTableEntries`):
    /// `SyncBlockCache::s_pSyncBlockCache`, on Linux (dacvars.h: nothing between them when
    /// `TARGET_UNIX`).
    pub sync_block_cache_after_sync_table_unix: u64,
    /// The same on Windows: `g_pRCWCleanupList` (FEATURE_COMINTEROP),
    /// `g_runtimeLoadedBaseAddress` and `g_runtimeVirtualSize` (!TARGET_UNIX) come between (as
    /// in .NET 8's Windows table: indices 81 and 85).
    pub sync_block_cache_after_sync_table_windows: u64,
}

/// The .NET 9 and 10 anchors (verified on 9.0.22, 10.0.12 and 10.0.14 Linux: g_heap_type =
/// the DAC's GC mode, GcDacVars 2.x whose generation tables equal the DAC's,
/// g_global_alloc_context = the DAC's).
pub const ANCHORS_NET9_10: DacTableAnchors = DacTableAnchors {
    heap_type_after_thread_store: 3,
    gc_dac_globals_after_thread_store: 4,
    app_domain_after_thread_store: 5,
    global_alloc_context_before_object_class: 3,
    sync_block_cache_after_sync_table_unix: 1,
    sync_block_cache_after_sync_table_windows: 4,
};

/// The family a product major version belongs to, when this build has one for it.
pub fn family_of_major(major: u32) -> Option<Family> {
    match major {
        9 => Some(Family::Net9),
        10 => Some(Family::Net10),
        _ => None,
    }
}

/// Checks the descriptor's contract versions against [`KNOWN_CONTRACTS`].
pub fn check_contracts(d: &ContractDescriptor, runtime: &str) -> Result<()> {
    for (name, want) in KNOWN_CONTRACTS {
        match d.contract(name) {
            Some(ContractVersion::Int(v)) if v == want => {}
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
    FIELD_DESC_NET9_10[0],
    FIELD_DESC_NET9_10[1],
    FIELD_DESC_NET9_10[2],
    FIELD_DESC_NET9_10[3],
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
    ("MethodTable", "!", 0x40),
    ("MethodTable", "AuxiliaryData", 0x20),
    ("EEClass", "FieldDescList", 0x18),
    ("EEClass", "MethodDescChunk", 0x20),
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
    FIELD_DESC_NET9_10[0],
    FIELD_DESC_NET9_10[1],
    FIELD_DESC_NET9_10[2],
    FIELD_DESC_NET9_10[3],
];

struct Lookup<'a> {
    d: &'a ContractDescriptor,
    supplement: Supplement,
    runtime: &'a str,
}

impl Lookup<'_> {
    fn field(&self, ty: &'static str, field: &'static str) -> Result<u64> {
        self.d
            .field(ty, field)
            .or_else(|| {
                self.supplement
                    .iter()
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
            _ => SUPPLEMENT_NET10,
        },
        runtime,
    };
    let (gc_dac_vars, gc_heap_fields, generation, heap_segment) = gc_layouts();
    let n8 = &layout::NET8_LINUX_X64;
    let obj_header = d.global_number("ObjectHeaderSize").unwrap_or(8);
    let string_base_size = obj_header + l.field("String", "m_FirstChar")? + 2;
    let thread_ac = l.field("RuntimeThreadLocals", "AllocContext")?
        + l.field("EEAllocContext", "GCAllocationContext")?;
    let built = Layout {
        name: match (family, windows) {
            (Family::Net9, false) => ".NET 9 linux-x64 (contract descriptor)",
            (Family::Net9, true) => ".NET 9 windows-x64 (contract descriptor)",
            (_, false) => ".NET 10 linux-x64 (contract descriptor)",
            (_, true) => ".NET 10 windows-x64 (contract descriptor)",
        },
        family,
        method_table_scheme: MethodTableScheme::Net9,
        verified: match family {
            Family::Net9 => VERIFIED_NET9,
            _ => VERIFIED_NET10,
        },
        global_alloc_context_offset: l.field("EEAllocContext", "GCAllocationContext")?,
        // Not used: globals come from the descriptor and the g_dacTable anchors.
        dac: n8.dac,
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
            os_thread_id: l.field("Thread", "OSId")?,
            last_thrown_object: Some(l.field("Thread", "LastThrownObject")?),
            exception_tracker: match (
                l.field("Thread", "ExceptionTracker"),
                l.field("ExceptionInfo", "ThrownObject"),
            ) {
                (Ok(t), Ok(o)) => Some((t, o)),
                _ => None,
            },
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
        },
        min_object_size: 3 * d.pointer_size.max(8) as u64,
        string_base_size: u32::try_from(string_base_size).map_err(|_| ClrError::Descriptor {
            runtime: runtime.to_owned(),
            detail: format!("String.m_FirstChar gives a base size of {string_base_size}"),
        })?,
    };
    // Globals this family needs must be present too (checked here, read at discovery).
    for g in GLOBALS_NEEDED {
        l.global(g)?;
    }
    Ok(intern(built))
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
    let mut v = INTERNED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(found) = v.iter().find(|x| ***x == l) {
        return found;
    }
    let leaked: &'static Layout = Box::leak(Box::new(l));
    v.push(leaked);
    leaked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::parse;

    /// The fields a .NET 10 descriptor gives for the heap walk (10.0.12's values).
    const NET10: &str = r#"{"version":0,"types":{
        "MethodTable":{"!":64,"MTFlags":0,"BaseSize":4,"MTFlags2":8,"EEClassOrCanonMT":40,
            "Module":24,"ParentMethodTable":16,"NumInterfaces":14,"NumVirtuals":12,
            "PerInstInfo":48,"AuxiliaryData":32},
        "EEClass":{"MethodTable":16,"MethodDescChunk":32,"FieldDescList":24,"CorTypeAttr":40,
            "InternalCorElementType":48},
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
        check_contracts(&d, ".NET 10").unwrap();
        let l = build_layout(&d, Family::Net10, false, ".NET 10").unwrap();
        assert_eq!(l.method_table.flags2, 8);
        assert_eq!(l.method_table.size, 64);
        assert_eq!(l.thread.link, 112);
        assert_eq!(l.thread.alloc_context, 8);
        assert_eq!(l.thread.runtime_thread_locals, Some(32));
        assert_eq!(l.string_base_size, 0x16);
        assert_eq!(l.module.path_pointer, Some(200));
        assert!(l.verified.contains(&Capability::HeapWalk));
        assert!(!l.verified.contains(&Capability::Stacks));
        // Interned: the same table for the same descriptor.
        let again = build_layout(&d, Family::Net10, false, ".NET 10").unwrap();
        assert!(std::ptr::eq(l, again));
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
        let e = check_contracts(&d, ".NET 11.0.0").unwrap_err().to_string();
        assert!(e.contains("RuntimeTypeSystem version \"c2\""), "{e}");
        let text = NET10.replace(r#""Thread":1,"#, "");
        let d = parse(text.as_bytes(), &[0x1000]).unwrap();
        assert!(check_contracts(&d, "x")
            .unwrap_err()
            .to_string()
            .contains("no Thread contract"));
    }
}
