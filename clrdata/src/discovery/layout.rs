//! Version knowledge as data: the offsets, indices and flag values of one runtime family.
//!
//! Code asks the table (`layout.thread.frame`), never `if version >= ...`. Every value here
//! was verified against the corpus dumps; `docs/clr-layout-net8.md` says how, one by one.

/// Indices into `g_dacTable` (the runtime's exported `_DacGlobals`), one pointer-sized entry
/// each, holding the address of the global (absolute on .NET 8; see [`crate::Runtime`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DacTableIndices {
    /// Where a later .NET 8 servicing build inserted one global into `dacvars.h`
    /// ([`DacTableRevision`]): the first index (in this numbering) that moves up by one.
    pub revision_probe: usize,
    /// `ExecutionManager::g_codeRangeMap` (the RangeSectionMap, stored inline).
    pub code_range_map: usize,
    /// `ExecutionManager::m_pEEJitManager`.
    pub ee_jit_manager: usize,
    /// `ExecutionManager::m_pReadyToRunJitManager`.
    pub ready_to_run_jit_manager: usize,
    /// `ThreadStore::s_pThreadStore`.
    pub thread_store: usize,
    /// `g_pFinalizerThread`.
    pub finalizer_thread: usize,
    /// `g_heap_type` (DWORD: 1 workstation, 2 server).
    pub heap_type: usize,
    /// `g_gcDacGlobals` (pointer to `GcDacVars`).
    pub gc_dac_globals: usize,
    /// `AppDomain::m_pTheAppDomain`.
    pub app_domain: usize,
    /// `SystemDomain::m_pSystemDomain`.
    pub system_domain: usize,
    /// `g_card_table`.
    pub card_table: usize,
    /// `g_lowest_address`.
    pub lowest_address: usize,
    /// `g_highest_address`.
    pub highest_address: usize,
    /// `g_global_alloc_context` (a `gc_alloc_context`, stored inline).
    pub global_alloc_context: usize,
    /// `g_pGCHeap`.
    pub gc_heap: usize,
    /// `g_pObjectClass`.
    pub object_class: usize,
    /// `g_pStringClass`.
    pub string_class: usize,
    /// `g_pArrayClass` (System.Array).
    pub array_class: usize,
    /// `g_pExceptionClass`.
    pub exception_class: usize,
    /// `g_pFreeObjectMethodTable`.
    pub free_object_method_table: usize,
    /// `g_pPredefinedArrayTypes` (an inline array of TypeHandles indexed by CorElementType).
    pub predefined_array_types: usize,
    /// `g_pSyncTable`.
    pub sync_table: usize,
    /// `SyncBlockCache::s_pSyncBlockCache`.
    pub sync_block_cache: usize,
}

/// The revisions of .NET 8's `g_dacTable` this layer knows. The tables of [`NET8_LINUX_X64`]
/// and [`NET8_WINDOWS_X64`] number the entries as 8.0.4 has them; a later servicing build
/// (seen in 8.0.33, Linux and Windows) added one global in `dacvars.h` at
/// [`DacTableIndices::revision_probe`], so every entry from there on moves up by one (the sync
/// table, the FCALL hash, the Frame vtables). Found by comparing both builds' tables entry by
/// entry, and checked against the 8.0.33 DAC (sync blocks, FCALL MethodDescs, Frame names).
/// The two are told apart by where the entry at the probe points: the new global sits right
/// beside its predecessor in the image (4 bytes after it on Linux, 0x18 before it on Windows:
/// both compilers put the two together), where 8.0.4's entry at the probe is a global in
/// another part of the image (0xbf18 and 0x8340 bytes away).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DacTableRevision {
    /// Entries at or after this index (in the layout's numbering) are one further on; `None`
    /// when the build numbers them as the layout does.
    inserted_at: Option<usize>,
}

/// The raw entries [`DacTableRevision::detect`] compares.
#[derive(Debug, Clone, Copy)]
pub struct DacTableProbe {
    /// The entry before the probe index.
    pub before: u64,
    /// The entry at the probe index.
    pub at: u64,
    /// [`DacTableIndices::revision_probe`].
    pub probe_index: usize,
}

impl DacTableRevision {
    /// The layout's own numbering (8.0.4's; and the .NET 9+ anchors, which carry their own).
    pub const AS_NUMBERED: DacTableRevision = DacTableRevision { inserted_at: None };

    /// The revision of a build's table from its entries around the probe.
    pub fn detect(p: &DacTableProbe) -> DacTableRevision {
        let inserted = p.before != 0 && p.at != 0 && p.at.abs_diff(p.before) < 0x100;
        DacTableRevision {
            inserted_at: inserted.then_some(p.probe_index),
        }
    }

    /// This build's index of the entry the layout numbers `index`.
    pub fn index(self, index: usize) -> usize {
        match self.inserted_at {
            Some(at) if index >= at => index.saturating_add(1),
            _ => index,
        }
    }
}

/// `GcDacVars` (gcinterface.dac.h): offsets of its members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcDacVarsLayout {
    /// u8 major version (expected [`GcDacVarsLayout::major`]).
    pub major_version: u64,
    /// u8 minor version.
    pub minor_version: u64,
    /// The major version this layout reads.
    pub major: u8,
    /// size_t: sizeof(generation).
    pub generation_size: u64,
    /// size_t: number of generations (5 on .NET 8: gen0-2, LOH, POH).
    pub total_generation_count: u64,
    /// `generation*`: workstation generation table.
    pub generation_table: u64,
    /// `uint32_t*`: max_gen.
    pub max_gen: u64,
    /// `heap_segment**`: workstation ephemeral_heap_segment.
    pub ephemeral_heap_segment: u64,
    /// `uint8_t**`: workstation alloc_allocated.
    pub alloc_allocated: u64,
    /// `int*`: number of server heaps.
    pub n_heaps: u64,
    /// `gc_heap***`: server heap array.
    pub g_heaps: u64,
    /// `oom_history*`: the workstation heap's `oom_info` (its last OOM).
    pub oom_info: u64,
    /// `int*`: per-field offsets inside a server `gc_heap` (indices: [`GcHeapFieldIndex`]).
    pub gc_heap_field_offsets: u64,
    /// `int*`: per-field offsets inside a `generation`.
    pub generation_field_offsets: u64,
}

/// Where the GC's variables and the shape of its structures come from (chosen once at
/// discovery; read by `crate::data::gcvars`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcSource {
    /// `GcDacVars` through `g_gcDacGlobals` (.NET 8-10): [`Layout::gc_dac_vars`].
    DacVars,
    /// The GC's own contract sub-descriptor (.NET 11): the variables' addresses are its
    /// globals (`crate::discovery::runtime::GcGlobals`), the offsets its types'.
    Descriptor(GcDescriptorLayout),
}

/// The GC sub-descriptor's types (.NET 11 `Generation`, `GCHeap`) and its
/// `TotalGenerationCount`, resolved into offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcDescriptorLayout {
    /// `Generation` size.
    pub generation_size: u64,
    /// `TotalGenerationCount`.
    pub generation_count: u64,
    /// `Generation.AllocationContext`.
    pub generation_alloc_context: u64,
    /// `Generation.StartSegment`.
    pub generation_start_segment: u64,
    /// Server GC's `GCHeap.AllocAllocated` (the server sub-descriptor alone has the type).
    pub heap_alloc_allocated: Option<u64>,
    /// `GCHeap.EphemeralHeapSegment`.
    pub heap_ephemeral_heap_segment: Option<u64>,
    /// `GCHeap.GenerationTable`.
    pub heap_generation_table: Option<u64>,
    /// `GCHeap.FinalizeQueue`.
    pub heap_finalize_queue: Option<u64>,
    /// `GCHeap.OomData` (the server heap's `oom_info`).
    pub heap_oom_data: Option<u64>,
    /// The `OomHistory` type, when the sub-descriptor describes it.
    pub oom_history: Option<OomHistoryLayout>,
}

/// `oom_history` (gc/gcinterface.dac.h; gc_heap's `oom_info`, the heap's last OOM): one
/// struct since .NET Core 3 (`reason` an int enum, then size_t / pointer members, `fgm` an
/// int enum, `loh_p` a BOOL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OomHistoryLayout {
    /// `oom_reason reason` (i32).
    pub reason: u64,
    /// `size_t alloc_size`.
    pub alloc_size: u64,
    /// `uint8_t* reserved`.
    pub reserved: u64,
    /// `uint8_t* allocated`.
    pub allocated: u64,
    /// `size_t gc_index`.
    pub gc_index: u64,
    /// `failure_get_memory fgm` (i32).
    pub fgm: u64,
    /// `size_t size`.
    pub size: u64,
    /// `size_t available_pagefile_mb`.
    pub available_pagefile_mb: u64,
    /// `BOOL loh_p` (i32).
    pub loh_p: u64,
}

/// `oom_history` of .NET 8-10 (64-bit), as gcinterface.dac.h declares it at v8.0.0, v9.0.0 and
/// v10.0.0; .NET 11's sub-descriptor publishes the same offsets (`OomHistory`,
/// docs/clr-layout-net11.md).
pub const OOM_HISTORY: OomHistoryLayout = OomHistoryLayout {
    reason: 0,
    alloc_size: 8,
    reserved: 16,
    allocated: 24,
    gc_index: 32,
    fgm: 40,
    size: 48,
    available_pagefile_mb: 56,
    loh_p: 64,
};

/// Indices into `GcDacVars::gc_heap_field_offsets` (dac_gcheap_fields.h order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcHeapFieldIndex {
    /// alloc_allocated.
    pub alloc_allocated: usize,
    /// ephemeral_heap_segment.
    pub ephemeral_heap_segment: usize,
    /// generation_table (GENERATION_TABLE_FIELD_INDEX).
    pub generation_table: usize,
    /// oom_info (an inline `oom_history`).
    pub oom_info: usize,
    /// How many offsets the array has at least.
    pub count: usize,
}

/// `dac_generation` fallback offsets (the runtime publishes the real ones in
/// `generation_field_offsets`; these are used only if that array is absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenerationLayout {
    /// `gc_alloc_context allocation_context`.
    pub allocation_context: u64,
    /// `heap_segment* start_segment`.
    pub start_segment: u64,
}

/// `gc_alloc_context`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocContextLayout {
    /// alloc_ptr.
    pub alloc_ptr: u64,
    /// alloc_limit.
    pub alloc_limit: u64,
}

/// `heap_segment` / `dac_heap_segment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapSegmentLayout {
    /// allocated.
    pub allocated: u64,
    /// committed.
    pub committed: u64,
    /// reserved.
    pub reserved: u64,
    /// used.
    pub used: u64,
    /// mem (first object).
    pub mem: u64,
    /// flags.
    pub flags: u64,
    /// next.
    pub next: u64,
    /// background_allocated.
    pub background_allocated: u64,
    /// Flag bit of a read-only (frozen / NonGC) segment.
    pub flag_readonly: u64,
}

/// `ThreadStore`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadStoreLayout {
    /// `SList<Thread> m_ThreadList` (its first word is the head link's `m_pNext`).
    pub thread_list: u64,
    /// LONG m_ThreadCount.
    pub thread_count: u64,
    /// LONG m_UnstartedThreadCount.
    pub unstarted_thread_count: u64,
    /// LONG m_BackgroundThreadCount.
    pub background_thread_count: u64,
    /// LONG m_PendingThreadCount.
    pub pending_thread_count: u64,
    /// LONG m_DeadThreadCount.
    pub dead_thread_count: u64,
}

/// `Thread`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadLayout {
    /// ThreadState m_State.
    pub state: u64,
    /// DWORD m_fPreemptiveGCDisabled.
    pub preemptive_gc_disabled: u64,
    /// Frame* m_pFrame.
    pub frame: u64,
    /// DWORD m_ThreadId (the managed thread id).
    pub thread_id: u64,
    /// gc_alloc_context m_alloc_context (from the Thread, or with
    /// [`ThreadLayout::runtime_thread_locals`] from the block it points to).
    pub alloc_context: u64,
    /// `Thread.RuntimeThreadLocals` (.NET 9+): the pointer to the thread's TLS block holding
    /// its allocation context; `None` when the context is inline in the Thread (.NET 8).
    pub runtime_thread_locals: Option<u64>,
    /// SLink m_Link (the ThreadStore list link).
    pub link: u64,
    /// Where a link value points inside the next Thread: at its link (.NET 8-10: the value
    /// minus this is the Thread; equal to [`ThreadLayout::link`]) or at the Thread itself
    /// (.NET 11: 0; `ThreadStore.FirstThreadLink` and `Thread.LinkNext` hold `Thread*`).
    pub link_target: u64,
    /// SIZE_T m_OSThreadId.
    pub os_thread_id: u64,
    /// `Thread.LastThrownObject` (.NET 9+: the descriptor's; an OBJECTHANDLE); `None`: the
    /// family's [`StackLayout::thread_last_thrown`] (.NET 8).
    pub last_thrown_object: Option<u64>,
    /// `Thread.ExceptionTracker` and the `ExceptionInfo` it points at (.NET 9+: the
    /// descriptor's; Linux .NET 8: `ThreadExceptionState::m_pCurrentTracker` and its
    /// `ExceptionTracker`); `None` where not known (Windows .NET 8).
    pub exception_tracker: Option<ExceptionTrackerLayout>,
    /// Whether `ExceptionInfo.ThrownObject` is an OBJECTHANDLE (.NET 9, 10: `m_hThrowable`)
    /// or the object reference itself (.NET 11: the managed `ExInfo._exception`).
    pub thrown_object_is_handle: bool,
}

/// `Thread.ExceptionTracker`: the innermost `ExInfo` of an exception being dispatched, and
/// the fields of that `ExceptionInfo` (the descriptor's, .NET 9+).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExceptionTrackerLayout {
    /// `Thread.ExceptionTracker`.
    pub tracker: u64,
    /// `ExceptionInfo.ThrownObject` (an OBJECTHANDLE or the object, see
    /// [`ThreadLayout::thrown_object_is_handle`]).
    pub thrown_object: u64,
    /// `ExceptionInfo.PreviousNestedInfo`: the ExInfo of the exception this one was thrown
    /// while dispatching (SOS's nested exceptions).
    pub previous_nested: u64,
}

/// `MethodTable` (.NET 8, before the .NET 9 reshuffle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodTableLayout {
    /// DWORD m_dwFlags (low word: component size when HasComponentSize).
    pub flags: u64,
    /// DWORD m_BaseSize.
    pub base_size: u64,
    /// WORD m_wFlags2.
    pub flags2: u64,
    /// WORD m_wToken (0xFFFF: in an optional member). Unused by
    /// [`MethodTableScheme::Net9`] (the TypeDef rid is `MTFlags2 >> 8`).
    pub token: u64,
    /// WORD m_wNumVirtuals.
    pub num_virtuals: u64,
    /// WORD m_wNumInterfaces.
    pub num_interfaces: u64,
    /// m_pParentMethodTable.
    pub parent: u64,
    /// m_pLoaderModule.
    pub loader_module: u64,
    /// m_pWriteableData.
    pub writeable_data: u64,
    /// m_pEEClass / m_pCanonMT (bit 0 set: canonical MT).
    pub ee_class_or_canon: u64,
    /// m_pPerInstInfo / m_ElementTypeHnd.
    pub per_inst_info: u64,
    /// m_pInterfaceMap.
    pub interface_map: u64,
    /// sizeof(MethodTable): the vtable slots follow.
    pub size: u64,
}

/// `EEClass`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EEClassLayout {
    /// m_pMethodTable (back pointer to the canonical MT).
    pub method_table: u64,
    /// m_pFieldDescList.
    pub field_desc_list: u64,
    /// m_pChunks.
    pub chunks: u64,
    /// DWORD m_dwAttrClass.
    pub attr_class: u64,
    /// DWORD m_VMFlags.
    pub vm_flags: u64,
    /// BYTE m_NormType.
    pub norm_type: u64,
    /// BYTE m_fFieldsArePacked.
    pub fields_are_packed: u64,
    /// BYTE m_cbFixedEEClassFields (the packed fields start at this offset).
    pub fixed_fields_size: u64,
    /// .NET 9+: the WORD counters `NumInstanceFields` (inherited ones included) and
    /// `NumStaticFields` that bound the class's FieldDesc list; `None` (.NET 8): the list is
    /// the run of FieldDescs whose enclosing MethodTable is the class's.
    pub field_counts: Option<(u64, u64)>,
}

/// `FieldDesc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldDescLayout {
    /// sizeof(FieldDesc).
    pub size: u64,
    /// MethodTable* m_pMTOfEnclosingClass.
    pub enclosing_mt: u64,
    /// DWORD: token rid bits 0-23, static bit 24, thread-static bit 25, RVA bit 26,
    /// protection 27-29, requiresFullMbValue bit 30.
    pub dword1: u64,
    /// DWORD: offset bits 0-26, CorElementType bits 27-31.
    pub dword2: u64,
}

/// `Module`, `PEAssembly`, `PEImage`, `PEImageLayout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModuleLayout {
    /// Module::m_pPEAssembly.
    pub pe_assembly: u64,
    /// Module::m_pSimpleName (UTF-8); `None` when the family's table does not give it (the
    /// path's file stem stands in).
    pub simple_name: Option<u64>,
    /// `Module.Path` (.NET 9+): a pointer to the image path, UTF-16, NUL-terminated; `None`:
    /// the path is the PEImage's `m_path` SString ([`ModuleLayout::pe_image_path_buffer`]).
    pub path_pointer: Option<u64>,
    /// PEAssembly::m_PEImage.
    pub pe_assembly_image: u64,
    /// PEImage::m_path (an SString: its buffer pointer).
    pub pe_image_path_buffer: u64,
    /// PEImage::m_pLayouts[0..] first of the layout pointers.
    pub pe_image_layouts: u64,
    /// Number of layout slots.
    pub pe_image_layout_count: usize,
    /// PEImageLayout: base address (PEDecoder::m_base).
    pub layout_base: u64,
    /// PEImageLayout: size (PEDecoder::m_size).
    pub layout_size: u64,
    /// PEImageLayout: flags (PEDecoder::m_flags; 1 = mapped/loaded layout, RVA addressing).
    pub layout_flags: u64,
    /// PEImageLayout: the CLI header (PEDecoder::m_pCorHeader); `None`: found through the
    /// image's own PE headers (data directory 14).
    pub layout_cor_header: Option<u64>,
    /// `Module::m_TypeDefToMethodTableMap` (a LookupMap: pNext 0, pTable 8, dwCount 0x10,
    /// supportedFlags 0x18): the loaded MethodTable of a TypeDef (the object layer's
    /// `typedef_mt`, used by field types and CoreLib type lookups).
    pub typedef_map: u64,
    /// Where a Reflection.Emit module's metadata is kept ([`DynamicMetadataLayout`]); `None`
    /// where not known (.NET 8: such a module's types and methods are not named).
    pub dynamic_metadata: Option<DynamicMetadataLayout>,
    /// How a module's assembly binder and its managed AssemblyLoadContext are found
    /// ([`AlcLayout`], SOS's `dumpalc`); `None` where not known (refused).
    pub alc: Option<AlcLayout>,
}

/// The path from a PEAssembly to its managed AssemblyLoadContext, as the DAC's
/// `GetAssemblyLoadContext` walks it: the PEAssembly's binder (an `AssemblyBinder`), whose
/// `m_ptrManagedAssemblyLoadContext` is a GC handle of the managed AssemblyLoadContext (0
/// until that object is made).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlcLayout {
    /// .NET 10, 11 (their descriptors): `PEAssembly.AssemblyBinder` (`m_pAssemblyBinder`) and
    /// `AssemblyBinder.AssemblyLoadContext` (`m_ptrManagedAssemblyLoadContext`).
    Published {
        /// `PEAssembly.AssemblyBinder`.
        pe_assembly_binder: u64,
        /// `AssemblyBinder.AssemblyLoadContext`.
        binder_alc: u64,
    },
    /// .NET 8, 9 (runtime source, PEAssembly::GetAssemblyBinder): the binder of
    /// `PEAssembly::m_pHostAssembly` (a `BINDER_SPACE::Assembly`, its `m_pBinder`) or, for a
    /// dynamic assembly (no host assembly), `PEAssembly::m_pFallbackBinder`.
    HostAssembly {
        /// `PEAssembly::m_pHostAssembly`.
        host_assembly: u64,
        /// `PEAssembly::m_pFallbackBinder`.
        fallback_binder: u64,
        /// `BINDER_SPACE::Assembly::m_pBinder`.
        host_binder: u64,
        /// `AssemblyBinder::m_ptrManagedAssemblyLoadContext`.
        binder_alc: u64,
    },
}

/// A Reflection.Emit module's metadata: it has no PEImage; the runtime saves a copy of its
/// in-memory metadata, serialized as an image's metadata is, for the debugger
/// (`ReflectionModule::CaptureModuleMetaDataToMemory`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DynamicMetadataLayout {
    /// .NET 9, 10, 11 (their descriptors): `Module.DynamicMetadata` points at a
    /// `DynamicMetadata` {`Size` (a DWORD), `Data` (the bytes)}; null for every other module.
    Published {
        /// `Module.DynamicMetadata`.
        module_field: u64,
        /// `DynamicMetadata.Size`.
        size: u64,
        /// `DynamicMetadata.Data`.
        data: u64,
    },
    /// .NET 8: `ReflectionModule::m_pDynamicMetadata`, a field of the Module subclass only a
    /// Reflection.Emit module is (one whose PEAssembly has no PEImage; read only for such a
    /// module), points at an SBuffer {`m_size` (a DWORD) at 0, `m_buffer` at `buffer`}.
    ReflectionModuleSBuffer {
        /// The field's offset in the ReflectionModule.
        module_field: u64,
        /// `SBuffer::m_buffer`.
        buffer: u64,
    },
}

/// Where a type's statics live (RuntimeTypeSystem): an algorithm chosen once at discovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaticsScheme {
    /// .NET 8: per module, in its DomainLocalModule (`objects::ObjectLayout`); thread statics
    /// in each Thread's table of ThreadLocalModules.
    DomainLocalModule,
    /// .NET 9+: per type, in the `DynamicStaticsInfo` before its MethodTableAuxiliaryData;
    /// thread statics through the type's `ThreadStaticsInfo` TLS indices into each thread's
    /// `ThreadLocalData`.
    PerType(PerTypeStatics),
    /// .NET 9+, but a field or global the reader needs is neither in the descriptor nor in the
    /// family's supplement: statics answer [`crate::ClrError::MissingField`] with these names.
    Unresolved {
        /// The runtime type (or "globals").
        ty: &'static str,
        /// Its field (or the global).
        field: &'static str,
    },
}

/// The .NET 9+ statics layout (descriptor names: `DynamicStaticsInfo`, `ThreadStaticsInfo`,
/// `MethodTableAuxiliaryData`, `ThreadLocalData`, `InFlightTLSData`, `Thread.ThreadLocalDataPtr`
/// and the globals `StaticsPointerMask`, `NumberOfTlsOffsetsNotUsedInNoncollectibleArray`,
/// `PtrArrayOffsetToDataArray`). The MethodTable's `AuxiliaryData` pointer is
/// [`MethodTableLayout::writeable_data`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerTypeStatics {
    /// MethodTableAuxiliaryData.Flags (a DWORD; bit 0: the class is initialised).
    pub aux_flags: u64,
    /// sizeof(DynamicStaticsInfo): it ends where the auxiliary data starts.
    pub dynamic_statics_size: u64,
    /// DynamicStaticsInfo.GCStatics.
    pub gc_statics: u64,
    /// DynamicStaticsInfo.NonGCStatics.
    pub non_gc_statics: u64,
    /// Global StaticsPointerMask (clears the "class not initialised" bit of those pointers).
    pub statics_pointer_mask: u64,
    /// sizeof(ThreadStaticsInfo): it too ends where the auxiliary data starts.
    pub thread_statics_size: u64,
    /// ThreadStaticsInfo.GCTlsIndex (a TLSIndex: a DWORD raw index).
    pub gc_tls_index: u64,
    /// ThreadStaticsInfo.NonGCTlsIndex.
    pub non_gc_tls_index: u64,
    /// Thread.ThreadLocalDataPtr.
    pub thread_local_data: u64,
    /// ThreadLocalData.NonCollectibleTlsDataCount (INT32).
    pub tld_non_collectible_count: u64,
    /// ThreadLocalData.NonCollectibleTlsArrayData (an object[]).
    pub tld_non_collectible_data: u64,
    /// ThreadLocalData.InFlightData (InFlightTLSData list).
    pub tld_in_flight: u64,
    /// InFlightTLSData.Next.
    pub in_flight_next: u64,
    /// InFlightTLSData.TlsIndex.
    pub in_flight_tls_index: u64,
    /// InFlightTLSData.TLSData (an object handle).
    pub in_flight_tls_data: u64,
    /// Global NumberOfTlsOffsetsNotUsedInNoncollectibleArray.
    pub tls_offsets_not_used: u64,
    /// Global PtrArrayOffsetToDataArray.
    pub ptr_array_data: u64,
}

/// A runtime family: which versioned algorithms apply (chosen once at discovery).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// .NET 8: hand-written tables, `g_dacTable` indices.
    Net8,
    /// .NET 9: contract descriptor + supplements.
    Net9,
    /// .NET 10: contract descriptor + supplements.
    Net10,
    /// .NET 11: contract descriptor (format 2, string contract versions, the GC's own
    /// sub-descriptor), few supplements; Monitor is managed (`System.Threading.Lock`).
    Net11,
}

impl Family {
    /// The runtime's major version.
    pub fn major(self) -> u32 {
        match self {
            Family::Net8 => 8,
            Family::Net9 => 9,
            Family::Net10 => 10,
            Family::Net11 => 11,
        }
    }
}

/// How a MethodTable encodes its TypeDef token and module (RuntimeTypeSystem).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MethodTableScheme {
    /// .NET 8: `WORD m_wFlags2`, `WORD m_wToken`, `m_pLoaderModule` with a module override.
    Net8,
    /// .NET 9+: `DWORD MTFlags2` whose bits 8-31 are the TypeDef rid; `Module` direct;
    /// `AuxiliaryData` where .NET 8 had m_pWriteableData.
    Net9,
}

/// What a reader can do with a runtime: each capability is either verified against the
/// runtime's DAC for the family (listed in [`Layout::verified`]) or refused with
/// [`crate::ClrError::NotVerified`]. The one place that says what is checked on which family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// The GC heap's structure and its object walk (`dumpheap`, census), free and frozen
    /// objects included; needs the thread list for allocation contexts.
    HeapWalk,
    /// The thread list (`ThreadStore`, each Thread's ids, state, frame, allocation context).
    Threads,
    /// Type names from MethodTable, EEClass, Module and metadata.
    TypeNames,
    /// Server-GC heaps (`gc_heap` field offsets published by the GC).
    ServerGc,
    /// Fields and FieldDescs (`dumpobj`, statics, managed layouts read by field name).
    Fields,
    /// MethodDescs, slots, code (`dumpmt -md`, method names, `ip2md`).
    Methods,
    /// The stack walk (code manager, Frames, unwinding).
    Stacks,
    /// GC handles and the finalization queue.
    Roots,
    /// SyncBlocks, thin locks, Monitor waits.
    Locks,
    /// Exceptions (`_stackTrace`, last thrown object).
    Exceptions,
    /// Statics and thread statics.
    Statics,
    /// The root set of `gcroot`: precise stack references (GC info) and every static and
    /// thread-static root, as the GC would find them.
    GcRoots,
}

impl Capability {
    /// The capability named for people.
    pub fn describe(self) -> &'static str {
        match self {
            Capability::HeapWalk => "the GC heap walk",
            Capability::Threads => "the thread list",
            Capability::TypeNames => "type names",
            Capability::ServerGc => "server-GC heaps",
            Capability::Fields => "fields (FieldDesc)",
            Capability::Methods => "MethodDescs and code",
            Capability::Stacks => "the stack walk",
            Capability::Roots => "GC handles and the finalization queue",
            Capability::Locks => "sync blocks and locks",
            Capability::Exceptions => "exceptions",
            Capability::Statics => "statics and thread statics",
            Capability::GcRoots => "gcroot's root set (stack references, thread-static roots)",
        }
    }
}

/// Every capability: what .NET 8 (verified on the 8.0.4 and 8.0.33 corpus) can do.
pub const ALL_CAPABILITIES: &[Capability] = &[
    Capability::HeapWalk,
    Capability::Threads,
    Capability::TypeNames,
    Capability::ServerGc,
    Capability::Fields,
    Capability::Methods,
    Capability::Stacks,
    Capability::Roots,
    Capability::Locks,
    Capability::Exceptions,
    Capability::Statics,
    Capability::GcRoots,
];

/// One runtime family's layout table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Human name ("NET 8 linux-x64").
    pub name: &'static str,
    /// The family (which versioned algorithms apply).
    pub family: Family,
    /// How MethodTables encode token and module.
    pub method_table_scheme: MethodTableScheme,
    /// Where statics live.
    pub statics: StaticsScheme,
    /// What has been verified against the DAC for this family; everything else is refused.
    pub verified: &'static [Capability],
    /// `EEAllocContext.GCAllocationContext`: where the `gc_alloc_context` sits inside
    /// `g_global_alloc_context` (0 on .NET 8, where the global is a bare gc_alloc_context).
    pub global_alloc_context_offset: u64,
    /// g_dacTable indices.
    pub dac: DacTableIndices,
    /// Where the GC's tables are read from ([`GcSource`]).
    pub gc_source: GcSource,
    /// GcDacVars (with [`GcSource::DacVars`]).
    pub gc_dac_vars: GcDacVarsLayout,
    /// Server gc_heap field-offset indices.
    pub gc_heap_fields: GcHeapFieldIndex,
    /// generation (fallback).
    pub generation: GenerationLayout,
    /// gc_alloc_context.
    pub alloc_context: AllocContextLayout,
    /// heap_segment.
    pub heap_segment: HeapSegmentLayout,
    /// ThreadStore.
    pub thread_store: ThreadStoreLayout,
    /// Thread.
    pub thread: ThreadLayout,
    /// MethodTable.
    pub method_table: MethodTableLayout,
    /// EEClass.
    pub ee_class: EEClassLayout,
    /// FieldDesc.
    pub field_desc: FieldDescLayout,
    /// Module and its image.
    pub module: ModuleLayout,
    /// MethodDescs, method slots and precodes ([`MethodsLayout`]).
    pub methods: MethodsLayout,
    /// Minimum object size (3 pointers).
    pub min_object_size: u64,
    /// STRING_BASE_SIZE (what String's MethodTable must say).
    pub string_base_size: u32,
    /// The stack walk's table ([`Layout::stack`]).
    pub stack: StackLayout,
    /// The target's operating system (what differs by OS is chosen at discovery, here).
    pub os: TargetOs,
    /// The object layer's offsets ([`ObjectLayout`]).
    pub objects: ObjectLayout,
    /// The handle table's and finalization queue's table.
    pub roots: &'static RootsLayout,
    /// The lock table; `None` where none was checked (.NET 9 on Windows: no dump of it).
    pub locks: Option<&'static LockLayout>,
    /// The runtime's records of its loaded images that a PE file is compared with before it
    /// stands in for pages a core lacks ([`ImageRecordsLayout`]); `None` where they were not
    /// verified (such files then stay unread).
    pub image_records: Option<ImageRecordsLayout>,
    /// The loader heaps' table ([`LoaderHeapLayout`]); `None` where it was not verified.
    pub loader_heaps: Option<LoaderHeapLayout>,
    /// The domains' own records that SOS's `dumpdomain` shows ([`DomainLayout`]); `None` where
    /// they were not verified (dumpdomain then refuses).
    pub domains: Option<DomainLayout>,
}

/// What `dumpdomain` reads of the domains: the global LoaderAllocator embedded in the
/// SystemDomain (`SystemDomain::m_GlobalAllocator`, the one `BaseDomain::GetLoaderAllocator`
/// answers for both domains) and its three loader heap pointers, and the AppDomain's friendly
/// name (`AppDomain::m_friendlyName`, a pointer to a NUL-terminated UTF-16 string). The .NET 10
/// and 11 descriptors give every field (`SystemDomain.GlobalLoaderAllocator`,
/// `LoaderAllocator.Low/HighFrequencyHeap`, `.StubHeap` (10 only), `AppDomain.FriendlyName`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DomainLayout {
    /// `SystemDomain::m_GlobalAllocator`: the embedded GlobalLoaderAllocator's offset.
    pub global_loader_allocator: u64,
    /// `LoaderAllocator::m_pLowFrequencyHeap`.
    pub low_frequency_heap: u64,
    /// `LoaderAllocator::m_pHighFrequencyHeap`.
    pub high_frequency_heap: u64,
    /// `LoaderAllocator::m_pStubHeap`; `None` where the runtime has none (.NET 11: the
    /// descriptor no longer lists it and the DAC reports 0).
    pub stub_heap: Option<u64>,
    /// `AppDomain::m_friendlyName`.
    pub friendly_name: u64,
    /// Whether the DAC reports the SystemDomain as a domain (`GetAppDomainStoreData`): not on
    /// .NET 11, where the SystemDomain is no longer a BaseDomain (dotnet/runtime#129260) and
    /// the 11.0.0 DAC answers 0.
    pub system_domain_is_domain: bool,
}

/// .NET 8 on Linux x64 (8.0.33): `SystemDomain::m_pSystemAssembly` at 0x9F8 and the embedded
/// GlobalLoaderAllocator after it at 0xA00 (its vtable first, its LowFrequencyHeap instance at
/// +0x10); the LoaderAllocator's heap pointers at 0x390, 0x398 and 0x3A0 (no StaticsHeap on
/// 8.0: they are adjacent); `AppDomain::m_friendlyName` at 0xB70, just before
/// `m_pRootAssembly` (0xB78), as on 9 and 10. Found on hang-net8 (each pointer points at its
/// heap instance inside the allocator; the name reads `clrhost`) and checked against SOS's
/// dumpdomain (the 8.0.33 DAC) on every .NET 8 dump with a `sos-domain` truth
/// (tests/tests/sos_domain.rs).
pub const DOMAINS_NET8_LINUX_X64: DomainLayout = DomainLayout {
    global_loader_allocator: 0xA00,
    low_frequency_heap: 0x390,
    high_frequency_heap: 0x398,
    stub_heap: Some(0x3A0),
    friendly_name: 0xB70,
    system_domain_is_domain: true,
};

/// What `discovery::imagecheck` reads to anchor a PE file whose headers the dump lacks to the
/// image the runtime loaded: the AppDomain's assembly list (`AppDomain::m_Assemblies`, an
/// `ArrayList` of DomainAssembly pointers each holding its Assembly first, or of Assemblies),
/// the Assembly's Module and the Module's way back, the counts of the Module's lookup maps
/// (each a `LookupMap`: pNext 0, pTable 8, dwCount [`ImageRecordsLayout::map_count`]), and
/// the ReadyToRunInfo's RUNTIME_FUNCTION count. The image's layout (base, size, flags) is
/// [`ModuleLayout`]'s, the ReadyToRunInfo pointer and its header [`StackLayout`]'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageRecordsLayout {
    /// `AppDomain::m_Assemblies` (descriptor: `AppDomain.DomainAssemblyList`).
    pub domain_assemblies: u64,
    /// `ArrayListBase::m_count` (a DWORD).
    pub list_count: u64,
    /// `ArrayListBase::m_firstBlock` (an inline `ArrayListBlock`).
    pub list_first: u64,
    /// `ArrayListBlock::m_next`.
    pub block_next: u64,
    /// `ArrayListBlock::m_blockSize` (a DWORD).
    pub block_size: u64,
    /// `ArrayListBlock::m_array`: the first element.
    pub block_start: u64,
    /// `Assembly::m_pModule`.
    pub assembly_module: u64,
    /// `Module::m_pAssembly`.
    pub module_assembly: u64,
    /// `LookupMap::dwCount`, from the map's start.
    pub map_count: u64,
    /// `Module::m_TypeRefToMethodTableMap` (the TypeDef map is [`ModuleLayout::typedef_map`]).
    pub typeref_map: u64,
    /// `Module::m_MemberRefToDescMap`.
    pub memberref_map: u64,
    /// `Module::m_MethodDefToDescMap`.
    pub methoddef_map: u64,
    /// `Module::m_FieldDefToDescMap`.
    pub fielddef_map: u64,
    /// `Module::m_ManifestModuleReferencesMap` (AssemblyRef token to Module).
    pub assemblyref_map: u64,
    /// `ReadyToRunInfo::m_nRuntimeFunctions` (a DWORD), where known: a ReadyToRun image's
    /// header address and function count are then compared too.
    pub r2r_functions: Option<u64>,
}

/// .NET 8 on Linux x64 (8.0.33; the ModuleBase at the Module's start holds the TypeRef,
/// AssemblyRef and MemberRef maps after its vtable pointer, at the offsets 9.0's descriptor
/// gives them). Verified on ilonly-net8-gcore against the 8.0.33 DAC
/// (`dumps/ilonly-net8-gcore.modules.dac.json`, tests/tests/gcore_images.rs): the list walk
/// yields `GetAssemblyList`'s 19 Assemblies in its order, each Assembly's Module is
/// `GetAssemblyModuleList`'s and points back, each map's `pTable` is `GetModuleData`'s, the
/// loaded layout's base is its `ilBase`; and every map count and the 12 ReadyToRun images'
/// function counts (+0x58) equal their files'.
pub const IMAGE_RECORDS_NET8_LINUX_X64: ImageRecordsLayout = ImageRecordsLayout {
    domain_assemblies: 0x9F0,
    list_count: 0,
    list_first: 8,
    block_next: 0,
    block_size: 8,
    block_start: 0x10,
    assembly_module: 0x18,
    module_assembly: 0x128,
    map_count: 0x10,
    typeref_map: 8,
    memberref_map: 0x48,
    methoddef_map: 0x310,
    fielddef_map: 0x330,
    assemblyref_map: 0x28,
    r2r_functions: Some(0x58),
};

/// The operating system a layout is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetOs {
    /// Linux (ELF cores).
    Linux,
    /// Windows (minidumps).
    Windows,
}

/// The object layer's .NET 8 offsets (the TypeDef map and .NET 8's DomainLocalModule statics),
/// found in the corpus dumps (8.0.4, Linux and Windows) and verified by
/// `clrdata/tests/objects_truth.rs` and `repl/tests/objects.rs` (statics and struct field types
/// of the heap scenario). On .NET 9+ the TypeDef map comes from the descriptor; the statics
/// offsets are .NET 8's, every reader of them gated by Capability::Statics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectLayout {
    /// `Module::m_TypeDefToMethodTableMap` (a LookupMap: pNext 0, pTable 8, dwCount 0x10,
    /// supportedFlags 0x18).
    pub typedef_map: u64,
    /// `Module::m_ModuleID` (the DomainLocalModule).
    pub module_id: u64,
    /// `DomainLocalModule::m_pGCStatics`.
    pub dlm_gc_statics: u64,
    /// `DomainLocalModule::m_pDynamicClassTable` (DynamicClassInfo {m_pDynamicEntry,
    /// m_dwFlags}, 16 bytes each, indexed by a generic instantiation's DynamicTypeID); the
    /// entry count follows it.
    pub dlm_dynamic_class_table: u64,
    /// `DomainLocalModule::m_ModuleIndex` (the module's index in each thread's table of
    /// ThreadLocalModules).
    pub dlm_module_index: u64,
    /// `Thread::m_ThreadLocalBlock`: the table of ThreadLocalModule pointers (indexed by
    /// module index), its size follows it. `None` where not verified (Windows).
    pub thread_tlm_table: Option<u64>,
}

/// Linux x64, .NET 8.0.4.
pub const OBJECTS_NET8_LINUX_X64: ObjectLayout = ObjectLayout {
    typedef_map: 0x2f0,
    module_id: 0x4c8,
    dlm_gc_statics: 0x20,
    dlm_dynamic_class_table: 0x8,
    dlm_module_index: 0x28,
    thread_tlm_table: Some(0x438),
};

/// Windows x64, .NET 8.0.4.
pub const OBJECTS_NET8_WINDOWS_X64: ObjectLayout = ObjectLayout {
    typedef_map: 0x170,
    module_id: 0x2e8,
    dlm_gc_statics: 0x20,
    dlm_dynamic_class_table: 0x8,
    dlm_module_index: 0x28,
    thread_tlm_table: None,
};

const GC_DAC_VARS_V2: GcDacVarsLayout = GcDacVarsLayout {
    major_version: 0,
    minor_version: 1,
    major: 2,
    generation_size: 8,
    total_generation_count: 0x10,
    generation_table: 0x30,
    max_gen: 0x38,
    ephemeral_heap_segment: 0x50,
    alloc_allocated: 0x78,
    oom_info: 0x88,
    n_heaps: 0xB0,
    g_heaps: 0xB8,
    gc_heap_field_offsets: 0xF0,
    generation_field_offsets: 0xF8,
};

const GC_HEAP_FIELDS_NET8: GcHeapFieldIndex = GcHeapFieldIndex {
    alloc_allocated: 0,
    ephemeral_heap_segment: 1,
    generation_table: 18,
    oom_info: 3,
    count: 19,
};

const HEAP_SEGMENT_NET8: HeapSegmentLayout = HeapSegmentLayout {
    allocated: 0,
    committed: 8,
    reserved: 0x10,
    used: 0x18,
    mem: 0x20,
    flags: 0x28,
    next: 0x30,
    background_allocated: 0x38,
    flag_readonly: 1,
};

const METHOD_TABLE_NET8: MethodTableLayout = MethodTableLayout {
    flags: 0,
    base_size: 4,
    flags2: 8,
    token: 0xA,
    num_virtuals: 0xC,
    num_interfaces: 0xE,
    parent: 0x10,
    loader_module: 0x18,
    writeable_data: 0x20,
    ee_class_or_canon: 0x28,
    per_inst_info: 0x30,
    interface_map: 0x38,
    size: 0x40,
};

const FIELD_DESC_NET8: FieldDescLayout = FieldDescLayout {
    size: 0x10,
    enclosing_mt: 0,
    dword1: 8,
    dword2: 0xC,
};

/// .NET 8 on Linux x64 (8.0.x; verified on 8.0.4).
pub static NET8_LINUX_X64: Layout = Layout {
    name: ".NET 8 linux-x64",
    family: Family::Net8,
    method_table_scheme: MethodTableScheme::Net8,
    statics: StaticsScheme::DomainLocalModule,
    verified: ALL_CAPABILITIES,
    global_alloc_context_offset: 0,
    dac: DacTableIndices {
        revision_probe: 68,
        code_range_map: 0,
        ee_jit_manager: 4,
        ready_to_run_jit_manager: 5,
        thread_store: 16,
        finalizer_thread: 17,
        heap_type: 19,
        gc_dac_globals: 20,
        app_domain: 21,
        system_domain: 22,
        card_table: 33,
        lowest_address: 34,
        highest_address: 35,
        global_alloc_context: 36,
        gc_heap: 37,
        object_class: 40,
        string_class: 43,
        array_class: 44,
        exception_class: 47,
        free_object_method_table: 54,
        predefined_array_types: 58,
        sync_table: 79,
        sync_block_cache: 80,
    },
    gc_source: GcSource::DacVars,
    gc_dac_vars: GC_DAC_VARS_V2,
    gc_heap_fields: GC_HEAP_FIELDS_NET8,
    generation: GenerationLayout {
        allocation_context: 0,
        start_segment: 0x38,
    },
    alloc_context: AllocContextLayout {
        alloc_ptr: 0,
        alloc_limit: 8,
    },
    heap_segment: HEAP_SEGMENT_NET8,
    thread_store: ThreadStoreLayout {
        thread_list: 0xA0,
        thread_count: 0xB8,
        unstarted_thread_count: 0xC0,
        background_thread_count: 0xC4,
        pending_thread_count: 0xC8,
        dead_thread_count: 0xCC,
    },
    thread: ThreadLayout {
        state: 8,
        preemptive_gc_disabled: 0xC,
        frame: 0x10,
        thread_id: 0x20,
        alloc_context: 0x58,
        runtime_thread_locals: None,
        link: 0xE8,
        link_target: 0xE8,
        os_thread_id: 0x1A8,
        last_thrown_object: None,
        // Thread::m_ExceptionState.m_pCurrentTracker (ThreadExceptionState follows
        // m_LastThrownObjectHandle 0x1D0 and m_ltoIsUnhandled) and the ExceptionTracker's
        // m_pPrevNestedInfo and m_hThrowable (docs/clr-layout-net8.md: measured on
        // nestedfault-net8 against the DAC's firstNestedException and SOS's `pe -nested`).
        exception_tracker: Some(ExceptionTrackerLayout {
            tracker: 0x1E0,
            thrown_object: 0x40,
            previous_nested: 0x8,
        }),
        thrown_object_is_handle: true,
    },
    method_table: METHOD_TABLE_NET8,
    ee_class: EE_CLASS_NET8_UNIX,
    field_desc: FIELD_DESC_NET8,
    module: MODULE_NET8_UNIX,
    methods: METHODS_NET8_LINUX,
    min_object_size: 24,
    string_base_size: 0x16,
    stack: NET8_LINUX_X64_STACK,
    os: TargetOs::Linux,
    objects: OBJECTS_NET8_LINUX_X64,
    roots: &NET8_LINUX_X64_ROOTS,
    locks: Some(&NET8_LINUX_X64_LOCKS),
    image_records: Some(IMAGE_RECORDS_NET8_LINUX_X64),
    loader_heaps: Some(LOADER_HEAPS_NET8_LINUX),
    domains: Some(DOMAINS_NET8_LINUX_X64),
};

/// .NET 8 on Windows x64 (FEATURE_COMINTEROP, !TARGET_UNIX entries; verified on 8.0.4).
pub static NET8_WINDOWS_X64: Layout = Layout {
    name: ".NET 8 windows-x64",
    family: Family::Net8,
    method_table_scheme: MethodTableScheme::Net8,
    statics: StaticsScheme::DomainLocalModule,
    verified: ALL_CAPABILITIES,
    global_alloc_context_offset: 0,
    dac: DacTableIndices {
        revision_probe: 70,
        code_range_map: 0,
        ee_jit_manager: 4,
        ready_to_run_jit_manager: 5,
        thread_store: 16,
        finalizer_thread: 17,
        heap_type: 19,
        gc_dac_globals: 20,
        app_domain: 21,
        system_domain: 22,
        card_table: 34,
        lowest_address: 35,
        highest_address: 36,
        global_alloc_context: 37,
        gc_heap: 38,
        object_class: 41,
        string_class: 44,
        array_class: 45,
        exception_class: 48,
        free_object_method_table: 55,
        predefined_array_types: 59,
        sync_table: 81,
        sync_block_cache: 85,
    },
    gc_source: GcSource::DacVars,
    gc_dac_vars: GC_DAC_VARS_V2,
    gc_heap_fields: GC_HEAP_FIELDS_NET8,
    generation: GenerationLayout {
        allocation_context: 0,
        start_segment: 0x38,
    },
    alloc_context: AllocContextLayout {
        alloc_ptr: 0,
        alloc_limit: 8,
    },
    heap_segment: HEAP_SEGMENT_NET8,
    thread_store: ThreadStoreLayout {
        thread_list: 0x40,
        thread_count: 0x58,
        unstarted_thread_count: 0x60,
        background_thread_count: 0x64,
        pending_thread_count: 0x68,
        dead_thread_count: 0x6C,
    },
    thread: ThreadLayout {
        state: 8,
        preemptive_gc_disabled: 0xC,
        frame: 0x10,
        thread_id: 0x20,
        alloc_context: 0x58,
        runtime_thread_locals: None,
        link: 0xF8,
        link_target: 0xF8,
        os_thread_id: 0x1B8,
        last_thrown_object: None,
        exception_tracker: None,
        thrown_object_is_handle: true,
    },
    method_table: METHOD_TABLE_NET8,
    ee_class: EE_CLASS_NET8_WINDOWS,
    field_desc: FIELD_DESC_NET8,
    module: MODULE_NET8_WINDOWS,
    methods: METHODS_NET8_WINDOWS,
    min_object_size: 24,
    string_base_size: 0x16,
    stack: NET8_WINDOWS_X64_STACK,
    os: TargetOs::Windows,
    objects: OBJECTS_NET8_WINDOWS_X64,
    roots: &NET8_WINDOWS_X64_ROOTS,
    locks: Some(&NET8_WINDOWS_X64_LOCKS),
    // Not verified: no Windows dump lacks its images' headers (a minidump keeps them).
    image_records: None,
    loader_heaps: Some(LOADER_HEAPS_NET8_WINDOWS),
    // Not verified: SOS is not run on the Windows dumps.
    domains: None,
};

const EE_CLASS_NET8_UNIX: EEClassLayout = EEClassLayout {
    method_table: 0x10,
    field_desc_list: 0x18,
    chunks: 0x20,
    attr_class: 0x28,
    vm_flags: 0x2C,
    norm_type: 0x30,
    fields_are_packed: 0x31,
    fixed_fields_size: 0x32,
    field_counts: None,
};

const EE_CLASS_NET8_WINDOWS: EEClassLayout = EEClassLayout {
    method_table: 0x10,
    field_desc_list: 0x18,
    chunks: 0x20,
    attr_class: 0x38,
    vm_flags: 0x3C,
    norm_type: 0x40,
    fields_are_packed: 0x41,
    fixed_fields_size: 0x42,
    field_counts: None,
};

/// .NET 8 on Linux ([`AlcLayout::HostAssembly`]): PEAssembly {vtable, m_PEImage 8,
/// m_MDImportIsRW 0x10, m_pMDImport 0x18, m_pImporter 0x20, m_pEmitter 0x28, m_refCount and
/// m_isSystem 0x30, m_pHostAssembly 0x38, m_pFallbackBinder 0x40}; BINDER_SPACE::Assembly
/// {vtable, m_cRef 8, m_pPEImage 0x10, m_pAssemblyName 0x18, m_pBinder 0x20}; AssemblyBinder
/// {vtable, the R2R MVID-check SHash 8 (24 bytes), ApplicationContext 0x20 (192 bytes, as on
/// 10), m_ptrManagedAssemblyLoadContext 0xE0, m_loadedAssemblies 0xE8}. Found on heap-net8
/// (8.0.33): the host assembly's m_pPEImage is the PEAssembly's, every TPA assembly has the
/// same binder, and the SArray after the handle lists exactly the Assemblies dumpdomain lists;
/// the handle is 0 there, as SOS's dumpalc says (no managed AssemblyLoadContext yet;
/// tests/tests/sos_dumpobj.rs). .NET 9.0.22 has the same offsets (heap-net9, the family
/// supplement), and 10's descriptor says 0xE0 (224) for the handle.
const ALC_NET8_UNIX: Option<AlcLayout> = Some(AlcLayout::HostAssembly {
    host_assembly: 0x38,
    fallback_binder: 0x40,
    host_binder: 0x20,
    binder_alc: 0xE0,
});

const MODULE_NET8_UNIX: ModuleLayout = ModuleLayout {
    simple_name: Some(0x108),
    path_pointer: None,
    pe_assembly: 0x110,
    pe_assembly_image: 8,
    pe_image_path_buffer: 0x10,
    pe_image_layouts: 0x70,
    pe_image_layout_count: 2,
    layout_base: 8,
    layout_size: 0x10,
    layout_flags: 0x14,
    layout_cor_header: Some(0x20),
    typedef_map: 0x2f0,
    // Found on the on-demand names-net8 (8.0.33): of the ReflectionModule's words, the one at
    // +0x698 points at an SBuffer whose buffer starts with the metadata signature (BSJB); read
    // from it, the emitted method's frame and types are named as the DAC and the program name
    // them (tests/tests/method_names.rs, stack_truth, names_truth with that dump).
    dynamic_metadata: Some(DynamicMetadataLayout::ReflectionModuleSBuffer {
        module_field: 0x698,
        buffer: 0x10,
    }),
    alc: ALC_NET8_UNIX,
};

const MODULE_NET8_WINDOWS: ModuleLayout = ModuleLayout {
    simple_name: Some(0xA8),
    pe_assembly: 0xB0,
    typedef_map: 0x170,
    // Not found on Windows (the Module's Crsts are smaller there; no such dump).
    dynamic_metadata: None,
    // AssemblyBinder's ApplicationContext holds critical sections, whose size differs on
    // Windows: not verified there.
    alc: None,
    ..MODULE_NET8_UNIX
};

/// Component-size bits and high flags of `MethodTable::m_dwFlags` (.NET 8).
pub mod mt_flags {
    /// Category mask.
    pub const CATEGORY_MASK: u32 = 0x000F_0000;
    /// Category: value type.
    pub const CATEGORY_VALUETYPE: u32 = 0x0004_0000;
    /// Category: Nullable.
    pub const CATEGORY_NULLABLE: u32 = 0x0005_0000;
    /// Category: primitive value type.
    pub const CATEGORY_PRIMITIVE: u32 = 0x0006_0000;
    /// Category: true primitive.
    pub const CATEGORY_TRUEPRIMITIVE: u32 = 0x0007_0000;
    /// Category mask for arrays (0x80000 array, 0xA0000 SZ array).
    pub const CATEGORY_ARRAY_MASK: u32 = 0x000C_0000;
    /// Category: array.
    pub const CATEGORY_ARRAY: u32 = 0x0008_0000;
    /// Category bit: single-dimension zero-based array.
    pub const CATEGORY_IFARRAYTHENSZARRAY: u32 = 0x0002_0000;
    /// Category: interface.
    pub const CATEGORY_INTERFACE: u32 = 0x000C_0000;
    /// HasFinalizer.
    pub const HAS_FINALIZER: u32 = 0x0010_0000;
    /// IfNotInterfaceThenMarshalable / IDynamicInterfaceCastable etc. (not decoded).
    pub const CONTAINS_POINTERS: u32 = 0x0100_0000;
    /// HasTypeEquivalence.
    pub const HAS_TYPE_EQUIVALENCE: u32 = 0x0200_0000;
    /// Collectible.
    pub const COLLECTIBLE: u32 = 0x1000_0000;
    /// ContainsGenericVariables.
    pub const CONTAINS_GENERIC_VARIABLES: u32 = 0x2000_0000;
    /// ComObject.
    pub const COM_OBJECT: u32 = 0x4000_0000;
    /// HasComponentSize (low word = component size).
    pub const HAS_COMPONENT_SIZE: u32 = 0x8000_0000;
    /// Low-word flags when !HasComponentSize: generics kind mask.
    pub const GENERICS_MASK: u32 = 0x0030;
    /// Generic instantiation (non-canonical or canonical).
    pub const GENERICS_MASK_GENERIC_INST: u32 = 0x0010;
    /// Shared canonical instantiation.
    pub const GENERICS_MASK_SHARED_INST: u32 = 0x0020;
    /// Typical instantiation (the open generic type definition).
    pub const GENERICS_MASK_TYPICAL_INST: u32 = 0x0030;
    /// HasVariance.
    pub const HAS_VARIANCE: u32 = 0x0100;
    /// IsByRefLike.
    pub const IS_BYREF_LIKE: u32 = 0x1000;
    /// m_wFlags2: HasPerInstInfo.
    pub const F2_HAS_PER_INST_INFO: u16 = 0x0001;
    /// m_wFlags2: HasInterfaceMap.
    pub const F2_HAS_INTERFACE_MAP: u16 = 0x0002;
    /// m_wFlags2: HasDispatchMapSlot.
    pub const F2_HAS_DISPATCH_MAP_SLOT: u16 = 0x0004;
    /// m_wFlags2: HasNonVirtualSlots.
    pub const F2_HAS_NON_VIRTUAL_SLOTS: u16 = 0x0008;
    /// m_wFlags2: HasModuleOverride.
    pub const F2_HAS_MODULE_OVERRIDE: u16 = 0x0010;
    /// m_wFlags2: HasSingleNonVirtualSlot (the non-virtual slots are one slot, held inline).
    pub const F2_HAS_SINGLE_NON_VIRTUAL_SLOT: u16 = 0x4000;
    /// .NET 9+ `MTFlags2` (its low byte): the type has statics (`DynamicStatics`,
    /// RuntimeTypeSystem contract).
    pub const FLAGS2_NET9_DYNAMIC_STATICS: u16 = 0x2;
}

// ------------------------------------------------------------------------------------ stacks

/// What the stack walk reads: the code manager, MethodDescs and explicit Frames. Kept in its
/// own table (one per family, chosen by [`Layout::stack`]) so the stack walk's facts sit
/// together. Verified on the corpus by `clrdata/tests/stack_truth.rs` (frames = the DAC's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackLayout {
    /// RangeSectionMap: levels of 256 pointers (top level inline in `g_codeRangeMap`).
    pub range_map_levels: u32,
    /// Bits of the address below the leaf level's index (17 on 64-bit: 56 − 5×8 + 1).
    pub range_map_low_bits: u32,
    /// RangeSectionFragment: next, range begin, range end, RangeSection*.
    pub fragment_next: u64,
    /// RangeSectionFragment range begin.
    pub fragment_begin: u64,
    /// RangeSectionFragment range end (exclusive).
    pub fragment_end: u64,
    /// RangeSectionFragment's RangeSection*.
    pub fragment_range_section: u64,
    /// RangeSection: begin, end, u32 flags, IJitManager*, R2R Module*, HeapList*.
    pub rs_begin: u64,
    /// RangeSection range end.
    pub rs_end: u64,
    /// RangeSection flags (CODEHEAP 2, RANGELIST 4).
    pub rs_flags: u64,
    /// RangeSection IJitManager*.
    pub rs_jit_manager: u64,
    /// RangeSection R2R Module*.
    pub rs_r2r_module: u64,
    /// RangeSection HeapList*.
    pub rs_heap_list: u64,
    /// HeapList: mapBase.
    pub heap_list_map_base: u64,
    /// HeapList: pHdrMap (the nibble map).
    pub heap_list_hdr_map: u64,
    /// HeapList: CLRPersonalityRoutine (the base of the unwind RVAs of JIT'd code).
    pub heap_list_module_base: u64,
    /// RealCodeHeader: phdrMDesc.
    pub code_header_method_desc: u64,
    /// RealCodeHeader: phdrJitGCInfo (the GC info of JIT'd code; [`NOT_PUBLISHED`] where
    /// neither the descriptor nor the supplement gives it: only `gc_info` needs it).
    ///
    /// [`NOT_PUBLISHED`]: crate::discovery::supplement::NOT_PUBLISHED
    pub code_header_gc_info: u64,
    /// RealCodeHeader: phdrJitEHInfo (the EH clauses of JIT'd code, [`NOT_PUBLISHED`] where
    /// unknown: only funclets' parents need it).
    ///
    /// [`NOT_PUBLISHED`]: crate::discovery::supplement::NOT_PUBLISHED
    pub code_header_eh_info: u64,
    /// RealCodeHeader: DWORD nUnwindInfos.
    pub code_header_unwind_count: u64,
    /// RealCodeHeader: RUNTIME_FUNCTION unwindInfos[].
    pub code_header_unwind_infos: u64,
    /// sizeof(MethodDescChunk) (it precedes its MethodDescs).
    pub method_desc_chunk_size: u64,
    /// MethodDescChunk: MethodTable*.
    pub chunk_method_table: u64,
    /// MethodDescChunk: UINT16 m_flagsAndTokenRange.
    pub chunk_token_range: u64,
    /// MethodDesc: BYTE m_chunkIndex.
    pub md_chunk_index: u64,
    /// MethodDesc alignment (m_chunkIndex counts these).
    pub md_alignment: u64,
    /// Bits of the token in the MethodDesc (the rest is the chunk's range).
    pub md_token_remainder_bits: u32,
    /// Frame: m_Next.
    pub frame_next: u64,
    /// HelperMethodFrame: m_pMD.
    pub hmf_method_desc: u64,
    /// HelperMethodFrame: m_FCallEntry (the FCALL's entry; with `gFCallMethods` gives the
    /// MethodDesc when m_pMD was never set).
    pub hmf_fcall_entry: u64,
    /// HelperMethodFrame: m_MachState.
    pub hmf_mach_state: u64,
    /// HelperMethodFrame: `unsigned m_Attribs` (`FRAME_ATTR_EXCEPTION` 1 on `IL_Throw`'s
    /// frame; verified on crash.dmp, 8.0.4 Linux).
    pub hmf_attribs: u64,
    /// HelperMethodFrame_1OBJ/_2OBJ/_3OBJ: `gcPtrs[]`, the addresses of the OBJECTREFs the
    /// FCALL protects; HelperMethodFrame_PROTECTOBJ: `m_pObjRefs` then `m_numObjRefs`. Right
    /// after the HelperMethodFrame, whose last field is its LazyMachState, whose last is
    /// `m_CaptureRsp` ([`StackLayout::ms_capture_rsp`] + 8 after `hmf_mach_state`; 0xE8 on
    /// Linux, 0xD8 on Windows). Verified on .NET 8: Linux, the DAC's GetStackReferences
    /// reports the slot `gcPtrs[0]` holds; Linux and Windows, it holds the object the thread's
    /// Monitor.Wait waits on (`tests/tests/locks.rs`). [`NOT_PUBLISHED`] where not checked
    /// (9.0 Windows: not checked; 9.0 Linux: as 8.0's, checked on crashorder-net9 against the
    /// DAC's GetStackReferences; gone in 10).
    ///
    /// [`NOT_PUBLISHED`]: crate::discovery::supplement::NOT_PUBLISHED
    pub hmf_gc_refs: u64,
    /// g_dacTable index of `gFCallMethods` (`ECHash*[127]`; `ECHash {next, implementation, MD}`).
    pub fcall_methods_index: usize,
    /// MachState: m_Rip, m_Rsp.
    pub ms_rip: u64,
    /// MachState m_Rsp.
    pub ms_rsp: u64,
    /// MachState: the unwound callee-saved register values (Unix `m_Unwound`, used where
    /// `m_Ptrs` has no pointer), or none on Windows.
    pub ms_unwound: Option<u64>,
    /// MachState: the callee-saved register pointers (`m_Ptrs`).
    pub ms_ptrs: u64,
    /// MachState `_pRetAddr` (non-zero once the lazy state was computed).
    pub ms_ret_addr_ptr: u64,
    /// LazyMachState: the callee-saved registers captured in the FCALL (`m_Capture`).
    pub ms_capture: u64,
    /// LazyMachState `m_CaptureRip` (inside the FCALL, after the capture call).
    pub ms_capture_rip: u64,
    /// LazyMachState `m_CaptureRsp` (+8 for the capture call's return address).
    pub ms_capture_rsp: u64,
    /// Callee-saved registers in `CalleeSavedRegisters` order, as Windows unwind numbers
    /// (0 rax, 1 rcx, 2 rdx, 3 rbx, 4 rsp, 5 rbp, 6 rsi, 7 rdi, 8-15 r8-r15).
    pub callee_saved: &'static [u8],
    /// InlinedCallFrame: m_Datum (a P/Invoke's MethodDesc, named on the frame), when the
    /// family's table has it; m_pCallSiteSP, m_pCallerReturnAddress, m_pCalleeSavedFP.
    pub icf_datum: Option<u64>,
    /// InlinedCallFrame m_pCallSiteSP.
    pub icf_call_site_sp: u64,
    /// InlinedCallFrame m_pCallerReturnAddress.
    pub icf_return_address: u64,
    /// InlinedCallFrame m_pCalleeSavedFP.
    pub icf_callee_saved_fp: u64,
    /// g_dacTable index of the first Frame vtable of [`FRAME_VTABLES`]
    /// (`DebuggerClassInitMarkFrame__vtAddr`), when Frames are told by their vtable.
    pub frame_vtables_index: usize,
    /// How a Frame's class is told: its C++ vtable (.NET 8, 9) or the FrameIdentifier its
    /// first field holds (.NET 10).
    pub frame_type: FrameTypeSource,
    /// How the code heaps' nibble map is encoded (ExecutionManager contract version).
    pub nibble_map: NibbleMapEncoding,
    /// `Module::m_pReadyToRunInfo`.
    pub module_r2r_info: u64,
    /// `ReadyToRunInfo::m_pHeader` (the image's READYTORUN_HEADER: checks the pointer).
    pub r2r_info_header: u64,
    /// `ReadyToRunInfo::m_pModule` (a check of the pointer too), where the table knows it.
    pub r2r_info_module: Option<u64>,
    /// `ReadyToRunInfo::m_entryPointToMethodDescMap.m_rgBuckets` (the runtime's entry point
    /// → MethodDesc map of the image's methods).
    pub r2r_info_entry_map_buckets: u64,
    /// SoftwareExceptionFrame: its inline CONTEXT (`m_Context`), on families that have the
    /// Frame (.NET 9+'s managed exception handling).
    pub sef_target_context: Option<u64>,
    /// The other Frames that saved a register context the walk resumes from, where the
    /// family's descriptor publishes where (.NET 10+) or its tables know it (.NET 8: the
    /// FaultingExceptionFrame and ResumableFrame); `None` elsewhere: such a Frame stops the
    /// walk, saying why.
    pub context_frames: ContextFrames,
    /// The first (type, field) the walk needs that the family's descriptor and supplement
    /// lack: the walk is refused with it (`ClrError::MissingField`).
    pub missing: Option<(&'static str, &'static str)>,
    /// `Thread::m_LastThrownObjectHandle` (an OBJECTHANDLE: the object pointer is at the
    /// handle's address). Linux verified on crash.dmp (= the DAC's lastThrownObjectHandle);
    /// Windows assumed +0x10 like m_OSThreadId (no Windows dump with an exception yet).
    pub thread_last_thrown: u64,
}

/// Where the Frames that saved a whole register context keep it (the cDAC's StackWalk
/// contract: `FaultingExceptionFrame.TargetContext`, `ResumableFrame.TargetContextPtr`,
/// `HijackFrame` {`ReturnAddress`, `HijackArgsPtr`} with `HijackArgs` and
/// `CalleeSavedRegisters`), each as the descriptor publishes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContextFrames {
    /// FaultingExceptionFrame: its inline CONTEXT (`m_ctx`), the hardware fault's registers.
    pub faulting_context: Option<u64>,
    /// ResumableFrame (and RedirectedThreadFrame, its subclass): the pointer to the CONTEXT
    /// it resumes (`m_Regs`).
    pub resumable_context_ptr: Option<u64>,
    /// HijackFrame: the hijacked return address and the registers its trip function saved.
    pub hijack: Option<HijackLayout>,
}

/// A HijackFrame and the `HijackArgs` it points at (x64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HijackLayout {
    /// HijackFrame `m_ReturnAddress`: the IP resumed.
    pub return_address: u64,
    /// HijackFrame `m_Args`: the pointer to its HijackArgs.
    pub args_ptr: u64,
    /// `sizeof(HijackArgs)`: off Windows the resumed SP is the end of the HijackArgs (they
    /// lie on the stack right below the hijacked return's caller frame).
    pub args_size: u64,
    /// HijackArgs `Rsp` (Windows): the resumed SP, saved.
    pub args_rsp: Option<u64>,
    /// HijackArgs `Regs`: its CalleeSavedRegisters.
    pub args_callee_saved: u64,
    /// CalleeSavedRegisters: each register's offset by Windows unwind number (`None`: not a
    /// callee-saved register of the OS's ABI).
    pub callee_saved_regs: [Option<u64>; 16],
}

/// The Frame classes whose vtable addresses follow each other in g_dacTable (vptr_list.h,
/// release/8.0), from [`StackLayout::frame_vtables_index`]. Verified on the corpus:
/// DebuggerU2MCatchHandlerFrame, HelperMethodFrame, HelperMethodFrame_1OBJ (both OSes); the
/// others follow from the list's order.
pub const FRAME_VTABLES: &[&str] = &[
    "DebuggerClassInitMarkFrame",
    "DebuggerSecurityCodeMarkFrame",
    "DebuggerExitFrame",
    "DebuggerU2MCatchHandlerFrame",
    "FaultingExceptionFrame",
    "FuncEvalFrame",
    "HelperMethodFrame",
    "HelperMethodFrame_1OBJ",
    "HelperMethodFrame_2OBJ",
    "HelperMethodFrame_3OBJ",
    "HelperMethodFrame_PROTECTOBJ",
    "HijackFrame",
    "InlinedCallFrame",
    "MulticastFrame",
    "PInvokeCalliFrame",
    "PrestubMethodFrame",
    "ProtectByRefsFrame",
    "ProtectValueClassFrame",
    "ResumableFrame",
    "RedirectedThreadFrame",
    "StubDispatchFrame",
    "CallCountingHelperFrame",
    "ExternalMethodFrame",
    "DynamicHelperFrame",
    "ExceptionFilterFrame",
];

/// How a Frame's class is told (chosen once per family).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameTypeSource {
    /// The Frame's first field is its C++ vtable, compared with the `__vtAddr` entries of
    /// g_dacTable from [`StackLayout::frame_vtables_index`] ([`FRAME_VTABLES`]).
    Vtable,
    /// The Frame's first field is a `FrameIdentifier` value; `ids[i]` is the value of
    /// [`FRAME_IDENTIFIERS`]`[i]` (the descriptor's `<name>Identifier` globals; 0: not published).
    Identifier {
        /// Values by [`FRAME_IDENTIFIERS`] index.
        ids: [u64; FRAME_IDENTIFIERS.len()],
    },
}

/// The Frame classes a FrameIdentifier may name (frames.h `FRAME_TYPE_NAME` list, .NET 10);
/// each one's value is the descriptor's `<name>Identifier` global.
pub const FRAME_IDENTIFIERS: [&str; 22] = [
    "InlinedCallFrame",
    "ResumableFrame",
    "RedirectedThreadFrame",
    "FaultingExceptionFrame",
    "SoftwareExceptionFrame",
    "FuncEvalFrame",
    "PInvokeCalliFrame",
    "HijackFrame",
    "PrestubMethodFrame",
    "CallCountingHelperFrame",
    "StubDispatchFrame",
    "ExternalMethodFrame",
    "DynamicHelperFrame",
    "ProtectValueClassFrame",
    "DebuggerClassInitMarkFrame",
    "DebuggerExitFrame",
    "DebuggerU2MCatchHandlerFrame",
    "ExceptionFilterFrame",
    "TailCallFrame",
    "InterpreterFrame",
    "ProtectByRefsFrame",
    "FramedMethodFrame",
];

/// The encoding of a code heap's nibble map (ExecutionManager.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NibbleMapEncoding {
    /// Contract version 1 (.NET 8, 9): one nibble per 32-byte bucket, scanned backwards.
    Linear,
    /// Contract version 2 (.NET 10): as version 1, and a DWORD wholly inside a method holds
    /// a relative pointer to its start (low nibble 9-12).
    ConstantLookup,
}

const STACK_NET8_COMMON: StackLayout = StackLayout {
    range_map_levels: 5,
    range_map_low_bits: 17,
    fragment_next: 0,
    fragment_begin: 8,
    fragment_end: 0x10,
    fragment_range_section: 0x18,
    rs_begin: 0,
    rs_end: 8,
    rs_flags: 0x10,
    rs_jit_manager: 0x18,
    rs_r2r_module: 0x20,
    rs_heap_list: 0x28,
    heap_list_map_base: 0x20,
    heap_list_hdr_map: 0x28,
    heap_list_module_base: 0x48,
    code_header_method_desc: 0x18,
    code_header_gc_info: 0x10,
    code_header_eh_info: 8,
    code_header_unwind_count: 0x20,
    code_header_unwind_infos: 0x24,
    method_desc_chunk_size: 0x18,
    chunk_method_table: 0,
    chunk_token_range: 0x12,
    md_chunk_index: 2,
    md_alignment: 8,
    md_token_remainder_bits: 12,
    frame_next: 8,
    hmf_method_desc: 0x10,
    hmf_fcall_entry: 0x28,
    hmf_mach_state: 0x30,
    hmf_attribs: 0x18,
    hmf_gc_refs: 0x30 + 0xB0 + 8,
    fcall_methods_index: 78,
    ms_rip: 0,
    ms_rsp: 8,
    ms_capture: 0x10,
    ms_ptrs: 0x40,
    ms_ret_addr_ptr: 0x70,
    ms_unwound: Some(0x78),
    ms_capture_rip: 0xA8,
    ms_capture_rsp: 0xB0,
    // Unix CalleeSavedRegisters: r12, r13, r14, r15, rbx, rbp.
    callee_saved: &[12, 13, 14, 15, 3, 5],
    icf_datum: Some(0x10),
    icf_call_site_sp: 0x20,
    icf_return_address: 0x28,
    icf_callee_saved_fp: 0x30,
    frame_vtables_index: 122,
    frame_type: FrameTypeSource::Vtable,
    nibble_map: NibbleMapEncoding::Linear,
    sef_target_context: None,
    // frames.h of 8 (a version before 9's SoftwareExceptionFrame; x64, FEATURE_EH_FUNCLETS on
    // both OSes): a Frame is its vtable
    // and m_Next (0x10); FaultingExceptionFrame then has BOOL m_fFilterExecuted 0x10, TADDR
    // m_ReturnAddress 0x18 and T_CONTEXT m_ctx (DECLSPEC_ALIGN(16)) at 0x20; ResumableFrame
    // (RedirectedThreadFrame adds no field) has PTR_CONTEXT m_Regs at 0x10. As 10's and 11's
    // descriptors publish them (TargetContext 32, TargetContextPtr 16). m_ctx verified on the
    // on-demand faultnull-, faultav-, failfast-net8 (8.0.33, Linux): the frames resumed from
    // it equal the DAC's. HijackFrame: its HijackArgs (10's: 80 bytes, CalleeSavedRegisters
    // at 24) was not found at an 8.0 tag and no .NET 8 dump holds one to check it against:
    // not known here, the walk stops at it saying so.
    context_frames: ContextFrames {
        faulting_context: Some(0x20),
        resumable_context_ptr: Some(0x10),
        hijack: None,
    },
    module_r2r_info: 0x480,
    r2r_info_header: 0x10,
    r2r_info_module: Some(0),
    r2r_info_entry_map_buckets: 0x1C0,
    missing: None,
    thread_last_thrown: 0,
};

/// .NET 8 linux-x64.
pub const NET8_LINUX_X64_STACK: StackLayout = StackLayout {
    thread_last_thrown: 0x1D0,
    ..STACK_NET8_COMMON
};

/// .NET 8 windows-x64: no `m_Unwound`; CalleeSavedRegisters rdi, rsi, rbx, rbp, r12-r15.
pub const NET8_WINDOWS_X64_STACK: StackLayout = StackLayout {
    ms_unwound: None,
    ms_capture: 0x10,
    ms_ptrs: 0x50,
    ms_ret_addr_ptr: 0x90,
    ms_capture_rip: 0x98,
    ms_capture_rsp: 0xA0,
    hmf_gc_refs: 0x30 + 0xA0 + 8,
    callee_saved: &[7, 6, 3, 5, 12, 13, 14, 15],
    frame_vtables_index: 134,
    fcall_methods_index: 80, // the hash chain holding Thread.SleepInternal's FCALL entry
    // Module::m_pReadyToRunInfo and the entry point map's buckets (its Crst is smaller).
    module_r2r_info: 0x2A0,
    r2r_info_entry_map_buckets: 0x160,
    thread_last_thrown: 0x1E0,
    ..STACK_NET8_COMMON
};

impl Layout {
    /// The stack walk's table of this family.
    pub fn stack(&self) -> &StackLayout {
        &self.stack
    }
}

// ------------------------------------------------------------------------------------- roots
// (GC handle table and finalization queue: `gchandles`, `finalizequeue`, `gcroot`.)

/// The GC handle table and the finalization queue (gc/handletablepriv.h,
/// handletableconstants.h, gcinterface.dac.h, gcpriv.h `CFinalize`, release/8.0). The segment
/// header is `#pragma pack(1)`. Verified on the corpus by `tests/tests/roots.rs`: every handle
/// the heap scenario allocated is found at its address with its kind and target, each segment's
/// `pHandleTable` points back at its table, and the fill pointers are ordered inside the array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RootsLayout {
    /// `GcDacVars::finalize_queue` (`CFinalize**`: the workstation GC's finalize_queue).
    pub dac_vars_finalize_queue: u64,
    /// `GcDacVars::handle_table_map` (the address of `g_HandleTableMap`, stored inline).
    pub dac_vars_handle_table_map: u64,
    /// Index of `finalize_queue` in `gc_heap_field_offsets` (dac_gcheap_fields.h).
    pub gc_heap_field_finalize_queue: usize,
    /// HandleTableMap: pBuckets, pNext, dwMaxIndex.
    pub map_buckets: u64,
    /// HandleTableMap::pNext.
    pub map_next: u64,
    /// HandleTableMap::dwMaxIndex (buckets covered by this and the previous nodes).
    pub map_max_index: u64,
    /// Buckets per map node (INITIAL_HANDLE_TABLE_ARRAY_SIZE).
    pub buckets_per_map: u64,
    /// HandleTableBucket::pTable (one HandleTable* per heap slot).
    pub bucket_table: u64,
    /// HandleTable::pSegmentList (after `uint32_t rgTypeFlags[HANDLE_MAX_INTERNAL_TYPES]`).
    pub table_segment_list: u64,
    /// HANDLE_SEGMENT_SIZE (segments are aligned to it).
    pub segment_size: u64,
    /// HANDLE_HEADER_SIZE: rgValue starts here.
    pub segment_header_size: u64,
    /// HANDLE_BLOCKS_PER_SEGMENT.
    pub blocks_per_segment: u64,
    /// HANDLE_HANDLES_PER_BLOCK.
    pub handles_per_block: u64,
    /// _TableSegmentHeader::rgFreeMask (u32 per 32 handles; a set bit is a free handle).
    pub seg_free_mask: u64,
    /// _TableSegmentHeader::rgBlockType (0xFF: free block).
    pub seg_block_type: u64,
    /// _TableSegmentHeader::rgUserData (index of the block's user-data block, 0xFF none).
    pub seg_user_data: u64,
    /// _TableSegmentHeader::pNextSegment.
    pub seg_next: u64,
    /// _TableSegmentHeader::pHandleTable.
    pub seg_table: u64,
    /// _TableSegmentHeader::bEmptyLine (blocks at and past it were never used).
    pub seg_empty_line: u64,
    /// HNDTYPE_INTERNAL_DATABLOCK (user-data blocks: not handles).
    pub data_block_type: u8,
    /// CFinalize::m_FillPointers (total_generation_count + 2 entries, from offset 0).
    pub finalize_fill_pointers: u64,
    /// Number of fill pointers (5 generations + critical + f-reachable).
    pub finalize_fill_count: usize,
    /// CFinalize::m_Array (the start of segment 0).
    pub finalize_array: u64,
}

const ROOTS_NET8: RootsLayout = RootsLayout {
    dac_vars_finalize_queue: 0x90,
    dac_vars_handle_table_map: 0xE8,
    gc_heap_field_finalize_queue: 2,
    map_buckets: 0,
    map_next: 8,
    map_max_index: 0x10,
    buckets_per_map: 10,
    bucket_table: 0,
    table_segment_list: 0x30,
    segment_size: 0x10000,
    segment_header_size: 0x1000,
    blocks_per_segment: 120,
    handles_per_block: 64,
    seg_free_mask: 0x258,
    seg_block_type: 0x618,
    seg_user_data: 0x690,
    seg_next: 0x7C8,
    seg_table: 0x7D0,
    seg_empty_line: 0x7DA,
    data_block_type: 11,
    finalize_fill_pointers: 0,
    finalize_fill_count: 7,
    finalize_array: 0x38,
};

/// .NET 8 linux-x64 handle table and finalization queue.
pub static NET8_LINUX_X64_ROOTS: RootsLayout = ROOTS_NET8;
/// .NET 8 windows-x64 (the same GC structures).
pub static NET8_WINDOWS_X64_ROOTS: RootsLayout = ROOTS_NET8;

/// The handle table's layout for a GC whose `HANDLE_MAX_INTERNAL_TYPES` (gc/handletableconstants.h)
/// is `n`: `HandleTable` starts with `uint32_t rgTypeFlags[n]` (then `pSegmentList`, pointer
/// aligned); the packed segment header holds `rgTail[n]`, `rgHint[n]` (bytes) and
/// `rgFreeCount[n]` (u32) after `rgLocks` (0x708 + 120), then `pNextSegment`, `pHandleTable`,
/// two flag bytes and `bEmptyLine`; the last type, `n - 1`, marks user-data blocks. With
/// `n = 12` this gives .NET 8's offsets exactly.
pub const fn roots_for_handle_types(n: u64) -> RootsLayout {
    RootsLayout {
        table_segment_list: (4 * n + 7) & !7,
        seg_next: 0x780 + 6 * n,
        seg_table: 0x788 + 6 * n,
        seg_empty_line: 0x792 + 6 * n,
        data_block_type: (n - 1) as u8,
        ..ROOTS_NET8
    }
}

/// .NET 9 (both OSes): the GC's own structures, which the contract descriptor does not
/// describe. `GcDacVars` keeps major version 2 with members only appended
/// (gc/gcinterface.dacvars.def: `finalize_queue` after `oom_info`, `handle_table_map` after
/// `interesting_mechanism_bits_per_heap`, as on 8.0); `HANDLE_MAX_INTERNAL_TYPES` is still 12
/// (`HNDTYPE_WEAK_INTERIOR_POINTER` = 10 is new, below the data-block type 11), so the handle
/// table is .NET 8's. Verified by `tests/tests/roots.rs` (handles and fill pointers = the
/// DAC's and ClrMD's, finalizable objects by type = ClrMD's).
pub static NET9_ROOTS: RootsLayout = roots_for_handle_types(12);

/// .NET 10 (both OSes): as .NET 9, but `HANDLE_MAX_INTERNAL_TYPES` is 13
/// (`HNDTYPE_CROSSREFERENCE` = 11 is new; user-data blocks are type 12), which moves
/// `HandleTable::pSegmentList` to 0x38 and the segment header's tail (`pNextSegment` 0x7CE,
/// `pHandleTable` 0x7D6, `bEmptyLine` 0x7E0). Seen in the dumps (10.0.14 Linux and Windows:
/// `pSegmentList` at 0x38 is the 64 KB-aligned segment whose `pHandleTable` points back) and
/// verified as .NET 9 by `tests/tests/roots.rs`.
pub static NET10_ROOTS: RootsLayout = roots_for_handle_types(13);

// ------------------------------------------------------------------ locks (issue 7, locks.rs)

/// What `syncblk` and `deadlock` read: the SyncBlockCache, the sync table, SyncBlocks with
/// their AwareLock, the Monitor.Wait list, a Thread's debugger blocking items and the object a
/// HelperMethodFrame_1OBJ protects. Every offset verified on deadlock.dmp, hang.dmp and
/// windows-hang.dmp (owners and waiters = the manifests'); see `crate::analysis::locks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockLayout {
    /// SyncBlockCache: DWORD m_ActiveCount (after a CrstStatic whose size differs by OS).
    pub cache_active_count: u64,
    /// SyncBlockCache: DWORD m_FreeSyncTableIndex (entries 1..this-1 have been used).
    pub cache_free_sync_table_index: u64,
    /// SyncBlockCache: DWORD m_SyncTableSize.
    pub cache_sync_table_size: u64,
    /// sizeof(SyncTableEntry) {SyncBlock* m_SyncBlock; Object* m_Object}.
    pub sync_table_entry_size: u64,
    /// SyncTableEntry::m_Object (low bit set: a free entry).
    pub entry_object: u64,
    /// AwareLock::m_lockState (bit 0 locked, bits 6-31 waiter count); AwareLock is at
    /// SyncBlock+0.
    pub lock_state: u64,
    /// AwareLock::m_Recursion.
    pub recursion: u64,
    /// AwareLock::m_HoldingThread (a Thread*) or m_HoldingThreadId (a DWORD), per
    /// [`LockLayout::holder`].
    pub holding_thread: u64,
    /// What the AwareLock records of its owner.
    pub holder: LockHolder,
    /// AwareLock::m_HoldingOSThreadId.
    pub holding_os_thread_id: u64,
    /// AwareLock::m_dwSyncIndex (bit 31: precious).
    pub sync_index: u64,
    /// SyncBlock::m_Link: head of the WaitEventLinks of threads in Monitor.Wait.
    pub sync_block_link: u64,
    /// WaitEventLink::m_Thread.
    pub wait_link_thread: u64,
    /// WaitEventLink::m_LinkSB (what SyncBlock::m_Link chains).
    pub wait_link_sb: u64,
    /// Thread::m_DebugBlockingInfo.m_firstBlockingItem.
    pub thread_first_blocking_item: u64,
    /// DebugBlockingItem: AwareLock* pMonitor.
    pub blocking_monitor: u64,
    /// DebugBlockingItem: type (0 Monitor.Enter, 1 Monitor.Wait).
    pub blocking_type: u64,
    /// DebugBlockingItem: DWORD dwTimeout.
    pub blocking_timeout: u64,
    /// DebugBlockingItem: pNext.
    pub blocking_next: u64,
    /// Where a monitor's state lives: the SyncBlock's AwareLock (.NET 8-10, the offsets
    /// above) or a managed `System.Threading.Lock` (.NET 11).
    pub scheme: LockScheme,
}

/// Where a monitor's owner, recursion and waiters are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockScheme {
    /// The SyncBlock starts with the runtime's AwareLock (.NET 8-10); waiters are the
    /// WaitEventLinks and the debugger's blocking items of [`LockLayout`].
    AwareLock,
    /// .NET 11: Monitor is managed. `SyncBlock.Lock` is an OBJECTHANDLE of the
    /// `System.Threading.Lock` that holds the state (null until one is made);
    /// `SyncBlock.ThinLock` the thin-lock word the sync block took over from the object
    /// header (owner's thread id, recursion) until then. Who waits is in each thread's
    /// managed `ThreadBlockingInfo` list (docs/clr-layout-net11.md 2.6).
    Managed {
        /// `SyncBlock.Lock`.
        lock_handle: u64,
        /// `SyncBlock.ThinLock` (a DWORD).
        thin_lock: u64,
    },
}

/// How an AwareLock names the thread holding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockHolder {
    /// `PTR_Thread m_HoldingThread` (.NET 8 and 9).
    ThreadPointer,
    /// `DWORD m_HoldingThreadId`: the owner's thin-lock thread id (`Thread::m_ThreadId`), which
    /// the `ThinlockThreadIdDispenser` maps to its Thread (.NET 10: dotnet/runtime#107168 and
    /// #112715 replaced the pointer by the id).
    ThreadId,
}

const LOCKS_NET8_COMMON: LockLayout = LockLayout {
    cache_active_count: 0xA4,
    cache_free_sync_table_index: 0xB4,
    cache_sync_table_size: 0xC0,
    sync_table_entry_size: 0x10,
    entry_object: 8,
    lock_state: 0,
    recursion: 4,
    holding_thread: 8,
    holder: LockHolder::ThreadPointer,
    holding_os_thread_id: 0x10,
    sync_index: 0x1C,
    sync_block_link: 0x48,
    wait_link_thread: 0x10,
    wait_link_sb: 0x20,
    thread_first_blocking_item: 0x4A8,
    blocking_monitor: 0,
    blocking_type: 0x10,
    blocking_timeout: 0x14,
    blocking_next: 0x18,
    scheme: LockScheme::AwareLock,
};

/// .NET 8 linux-x64.
pub static NET8_LINUX_X64_LOCKS: LockLayout = LOCKS_NET8_COMMON;

/// .NET 8 windows-x64: a smaller CrstStatic in the SyncBlockCache, a larger Thread.
pub static NET8_WINDOWS_X64_LOCKS: LockLayout = LockLayout {
    cache_active_count: 0x44,
    cache_free_sync_table_index: 0x54,
    cache_sync_table_size: 0x60,
    thread_first_blocking_item: 0x4D0,
    ..LOCKS_NET8_COMMON
};

/// .NET 9 linux-x64. Neither SyncBlockCache nor the debugger's blocking items are in the
/// contract descriptor (it publishes `SyncTableEntry` and `SyncBlock.InteropInfo` = 0x38, as on
/// 8.0, so SyncBlock's AwareLock is 8.0's); the SyncBlockCache is found in `g_dacTable` next to
/// `g_pSyncTable` ([`crate::discovery::supplement::DacTableAnchors`]). Its counters sit where 8.0 has them;
/// `Thread::m_DebugBlockingInfo` is at 0x408. Seen in hang-net9 (the four Monitor.Wait
/// threads' items point at the gate's SyncBlock) and verified by `tests/tests/locks.rs`: every
/// sync block equals the DAC's (object, SyncBlock, MonitorHeld, recursion, owner), the owners and
/// waiters equal the manifests'.
pub static NET9_LINUX_X64_LOCKS: LockLayout = LockLayout {
    thread_first_blocking_item: 0x408,
    ..LOCKS_NET8_COMMON
};

/// .NET 10 linux-x64: the SyncBlockCache's CrstStatic is 0x48 bytes smaller than 8.0/9.0's
/// (its counters: m_ActiveCount 0x5C, m_FreeSyncTableIndex 0x6C, m_SyncTableSize 0x78; the
/// CrstStatic flags word 0x80000018 sits at 0x50 where 9.0 has its 0xC0000018 at 0x98), and
/// `Thread::m_DebugBlockingInfo` is at 0x2A0; the AwareLock keeps its owner's thread id at 8
/// where 9.0 has the Thread pointer ([`LockHolder::ThreadId`]; deadlock-net10: 5 and 4, the
/// owners' `m_ThreadId`, with their OS ids at 0x10). Seen in deadlock-net10 and hang-net10,
/// verified as .NET 9's (the owners are the DAC's and the manifest's).
pub static NET10_LINUX_X64_LOCKS: LockLayout = LockLayout {
    cache_active_count: 0x5C,
    cache_free_sync_table_index: 0x6C,
    cache_sync_table_size: 0x78,
    thread_first_blocking_item: 0x2A0,
    holder: LockHolder::ThreadId,
    ..LOCKS_NET8_COMMON
};

/// .NET 10 windows-x64: the SyncBlockCache counters where 8.0 Windows has them (windows-hang-net10:
/// 3 active, index 4, size 250 = ClrMD's 3 sync blocks); `Thread::m_DebugBlockingInfo` at 0x2B8
/// (its four Monitor.Wait threads' items point at the gate's SyncBlock).
pub static NET10_WINDOWS_X64_LOCKS: LockLayout = LockLayout {
    cache_active_count: 0x44,
    cache_free_sync_table_index: 0x54,
    cache_sync_table_size: 0x60,
    thread_first_blocking_item: 0x2B8,
    holder: LockHolder::ThreadId,
    ..LOCKS_NET8_COMMON
};

// ----------------------------------------------------------------------------------- methods

/// `StoredSigMethodDesc` and `DynamicMethodDesc` (method.hpp): a dynamic method's stored
/// signature (runtime-made: types as `ELEMENT_TYPE_INTERNAL` TypeHandles), its extended flags
/// and its UTF-8 name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynamicMethodLayout {
    /// `StoredSigMethodDesc.Sig` (a pointer to the signature blob).
    pub sig: u64,
    /// `StoredSigMethodDesc.cSig` (its length, a DWORD).
    pub sig_len: u64,
    /// `StoredSigMethodDesc.ExtendedFlags` (a DWORD: 0x4000 LCG method, 0x8000 IL stub).
    pub extended_flags: u64,
    /// `DynamicMethodDesc.MethodName` (a pointer to a UTF-8 string).
    pub name: u64,
}

/// Where an InstantiatedMethodDesc (classification 5) keeps a generic method's instantiation:
/// its kind in the low 3 bits of `m_wFlags2` (1 the generic definition; 2 unshared, 3 shared
/// by code, 4 a wrapper stub: instantiated), `m_wNumGenericArgs`, and `m_pPerInstInfo`, the
/// dictionary whose first `NumGenericArgs` words are the argument TypeHandles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstantiatedMethodLayout {
    /// `InstantiatedMethodDesc.PerInstInfo`.
    pub per_inst_info: u64,
    /// `InstantiatedMethodDesc.Flags2` (a WORD).
    pub flags2: u64,
    /// `InstantiatedMethodDesc.NumGenericArgs` (a WORD).
    pub num_generic_args: u64,
}

/// How a type's slots beyond its virtuals (the non-virtual vtable slots) and its method counts
/// are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotScheme {
    /// .NET 8: the EEClass keeps NumMethods and NumNonVirtualSlots in its packed fields
    /// (indices 1 and 10); the non-virtual slots are in a MethodTable multipurpose slot.
    Net8Packed,
    /// .NET 9+: `EEClass.NumMethods` / `NumNonVirtualSlots` are plain WORDs; the non-virtual
    /// slots are an array growing backwards from `MethodTableAuxiliaryData +
    /// OffsetToNonVirtualSlots` (slot `NumVirtuals + i` at `- 8 * (1 + i)`).
    Net9Aux {
        /// EEClass.NumMethods (WORD).
        ee_class_num_methods: u64,
        /// EEClass.NumNonVirtualSlots (WORD).
        ee_class_num_non_virtual_slots: u64,
        /// MethodTable.AuxiliaryData (a pointer).
        method_table_aux: u64,
        /// MethodTableAuxiliaryData.OffsetToNonVirtualSlots (int16).
        aux_offset_to_non_virtual_slots: u64,
    },
}

/// MethodDescs (`method.hpp`), slots and precodes: what `dumpmt -md`, `dumpmd`, `ip2md` and the
/// method names read besides the MethodDescChunk fields of [`StackLayout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodsLayout {
    /// sizeof the MethodDesc of each classification (IL, FCall, PInvoke/NDirect, EEImpl,
    /// Array, Instantiated, ComInterop, Dynamic), before the optional slots.
    pub method_desc_sizes: [u64; 8],
    /// The optional trailing members, in this order when their flag is set: the non-vtable
    /// slot (HasNonVtableSlot 0x8), MethodImpl (0x10) and the native code slot (0x20).
    pub non_vtable_slot_size: u64,
    /// sizeof(MethodImpl).
    pub method_impl_size: u64,
    /// sizeof the native code slot.
    pub native_code_slot_size: u64,
    /// sizeof(AsyncMethodData), the fourth optional slot (.NET 11: a MethodDesc with
    /// `m_wFlags` 0x40 `HasAsyncMethodData`, the runtime-async variant's data, after the native
    /// code slot); `None` where the runtime has no such slot.
    pub async_method_data_size: Option<u64>,
    /// Where a dynamic method (classification 7: a LightWeight Code Generation method or an
    /// IL stub) keeps its signature and name, where the descriptor publishes them (.NET 10+).
    pub dynamic: Option<DynamicMethodLayout>,
    /// Where a generic method's instantiation is ([`InstantiatedMethodLayout`]); `None` where
    /// not known (then such a method is named with its open signature and no arguments).
    pub instantiated: Option<InstantiatedMethodLayout>,
    /// Where the type's slot counts and non-virtual slots are.
    pub slots: SlotScheme,
    /// `Module::m_pAvailableParamTypes` (the EETypeHashTable of the module's constructed
    /// types), when known for the family.
    pub module_available_type_params: Option<u64>,
    /// Where the StubPrecode type byte a method's precode has is published:
    /// `PlatformMetadata.PrecodeMachineDescriptor + PrecodeMachineDescriptor.StubPrecodeType`,
    /// an offset from the descriptor's `PlatformMetadata` global (.NET 10); `None`: the fixed
    /// [`MethodsLayout::stub_precode_type`].
    pub stub_precode_type_offset: Option<u64>,
    /// `StubPrecode::Type` on x64 (the `mov r10` opcode byte) where nothing publishes it.
    pub stub_precode_type: u8,
    /// Where the size of a stub code page is published (a u32,
    /// `PlatformMetadata.PrecodeMachineDescriptor + PrecodeMachineDescriptor.StubCodePageSize`
    /// from the descriptor's `PlatformMetadata` global, .NET 10); `None`: the fixed
    /// [`MethodsLayout::stub_code_page_size`].
    pub stub_code_page_size_offset: Option<u64>,
    /// The runtime's interleaved stubs (precodes, call counting stubs) keep their data a stub
    /// code page after their code (`GetStubCodePageSize()`: 16 KB on x64): where nothing
    /// publishes it.
    pub stub_code_page_size: u64,
    /// Where a method's code versions are (tiered compilation), when known for the family.
    pub code_versions: Option<CodeVersionsLayout>,
}

/// A method's native code versions (codeversion.h; the cDAC's CodeVersions contract): its
/// `MethodDescVersioningState` {m_pMethodDesc, m_flags, .., the first `NativeCodeVersionNode`}
/// and the nodes {m_pNativeCode, m_pMethodDesc, m_parentId (the IL version), the next node,
/// .., m_flags}. The active version is the default one (the MethodDesc's own code) when the
/// method has no state or its flags have IsDefaultVersionActiveChild, else the node of the
/// IL version whose flags have IsActiveChild.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeVersionsLayout {
    /// Where the runtime keeps a method's state.
    pub states: VersioningStates,
    /// `MethodDescVersioningState::m_pMethodDesc`.
    pub state_method_desc: u64,
    /// `MethodDescVersioningState::m_flags` (a byte).
    pub state_flags: u64,
    /// `MethodDescVersioningState::m_pFirstVersionNode`.
    pub state_first_node: u64,
    /// `NativeCodeVersionNode::m_pNativeCode`.
    pub node_native_code: u64,
    /// `NativeCodeVersionNode::m_pMethodDesc`.
    pub node_method_desc: u64,
    /// `NativeCodeVersionNode::m_parentId` (the ReJIT id of its IL version; 0: the default).
    pub node_il_version: u64,
    /// `NativeCodeVersionNode::m_pNextMethodDescSibling`.
    pub node_next: u64,
    /// `NativeCodeVersionNode::m_flags` (a u32).
    pub node_flags: u64,
}

/// `MethodDescVersioningStateFlags::IsDefaultVersionActiveChildFlag`.
pub const DEFAULT_VERSION_ACTIVE_CHILD: u8 = 0x4;
/// `NativeCodeVersionNode::IsActiveChildFlag`.
pub const NATIVE_CODE_VERSION_ACTIVE_CHILD: u32 = 0x1;

/// Where a method's `MethodDescVersioningState` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersioningStates {
    /// .NET 8: `CodeVersionManager::m_methodDescVersioningStateMap`, an SHash {element_t*
    /// m_table, count_t m_tableSize, m_tableCount, ..} of state pointers (0 empty, -1
    /// deleted), in the AppDomain (`BaseDomain::m_codeVersionManager`), at `method_descs`;
    /// `il_versions` is the same manager's `m_ilCodeVersioningStateMap`, whose count must be 0
    /// (no method has an explicit IL version) for the default IL version to be every method's
    /// active one.
    AppDomainHash { il_versions: u64, method_descs: u64 },
    /// .NET 9 and later: `MethodDesc::m_codeData` (`MethodDescCodeData`), whose
    /// `VersioningState` is the state.
    CodeData {
        method_desc: u64,
        versioning_state: u64,
    },
}

/// .NET 8 on Linux (8.0.4 and 8.0.33): the AppDomain's CodeVersionManager at +0x9C0, its two
/// SHashes of 24 bytes; the state and node layouts as the 10 descriptor publishes them. Found
/// on hang-net8-single (the state of String.Equals, its explicit node active with the DAC's
/// native code); each corpus .NET 8 dump's table holds only readable states; checked by
/// commands/tests/methods.rs (`dumpmt -md` equals the DAC's JIT state and native code).
pub const CODE_VERSIONS_NET8_LINUX: CodeVersionsLayout = CodeVersionsLayout {
    states: VersioningStates::AppDomainHash {
        il_versions: 0x9C0,
        method_descs: 0x9D8,
    },
    state_method_desc: 0,
    state_flags: 8,
    state_first_node: 16,
    node_native_code: 0,
    node_method_desc: 8,
    node_il_version: 16,
    node_next: 24,
    node_flags: 52,
};

/// .NET 8 (x64): `method.hpp` v8.0.4; every size checked by the MethodDescChunk walk
/// (`repl/tests/methods.rs`: each MethodDesc's m_chunkIndex equals its offset).
pub const METHODS_NET8_LINUX: MethodsLayout = MethodsLayout {
    method_desc_sizes: [8, 16, 48, 24, 24, 32, 16, 40],
    non_vtable_slot_size: 8,
    method_impl_size: 16,
    native_code_slot_size: 8,
    async_method_data_size: None,
    // `method.hpp` v8.0.4: StoredSigMethodDesc {MethodDesc; m_pSig; m_cSig; m_dwExtendedFlags
    // (64-bit only)}, DynamicMethodDesc {..; m_pszMethodName; m_pResolver}: 40 bytes, its
    // size above. Checked on the on-demand names-net8 by tests/tests/method_names.rs: its
    // `DynamicMethod` and compiled-expression frames named as the 8.0.33 DAC names them.
    dynamic: Some(DynamicMethodLayout {
        sig: 8,
        sig_len: 16,
        extended_flags: 20,
        name: 24,
    }),
    // `method.hpp` v8.0.4 (class InstantiatedMethodDesc: the 8-byte MethodDesc, the union of
    // m_pDictLayout / m_pWrappedMethodDesc, m_pPerInstInfo, m_wFlags2, m_wNumGenericArgs; 32
    // bytes with padding, its size above). Checked on the on-demand names-net8 by
    // tests/tests/method_names.rs: every generic method frame named as the 8.0.33 DAC names it.
    instantiated: Some(InstantiatedMethodLayout {
        per_inst_info: 16,
        flags2: 24,
        num_generic_args: 26,
    }),
    slots: SlotScheme::Net8Packed,
    // Found in the corpus: the EETypeHashTable whose m_pModule is the module and whose entries
    // hold the instantiations and arrays it loaded (List<Heap.Person> in CoreLib's).
    module_available_type_params: Some(0x3c8),
    stub_precode_type_offset: None,
    stub_precode_type: 0x4C,
    // FixupPrecode's `jmp [rip+0x3ffa]` reaches its data 0x4000 on; the call counting stubs
    // of hang-net8-single keep {cell, target, threshold stub} as far on (the DAC's native code).
    stub_code_page_size_offset: None,
    stub_code_page_size: 0x4000,
    code_versions: Some(CODE_VERSIONS_NET8_LINUX),
};

/// .NET 8 on Windows: as Linux but `m_pAvailableParamTypes`, 0x180 bytes before Linux's as
/// the TypeDef map is (the Module's Crsts are smaller). Found on windows-hang (8.0.4): of the
/// five words of CoreLib's Module that point at something whose first word is the Module, the
/// one at +0x248 is the EETypeHashTable holding all 41 generic instantiations of the Windows
/// DAC's heap census (1,064 entries; +0x280, the other table, holds none of them). Checked by
/// tests/tests/method_names.rs `modules_list_the_constructed_types_on_the_heap` on that dump,
/// and on 8.0.33 on the on-demand windows-asyncreal-net8 (87 instantiations; its pooled
/// ValueTask box, which `dumpasync` finds through these tables, reads).
pub const METHODS_NET8_WINDOWS: MethodsLayout = MethodsLayout {
    module_available_type_params: Some(0x248),
    // The AppDomain's layout on Windows is not verified.
    code_versions: None,
    ..METHODS_NET8_LINUX
};
#[cfg(test)]
mod roots_layout_tests {
    use super::*;

    #[test]
    fn twelve_handle_types_give_the_net8_handle_table() {
        assert_eq!(roots_for_handle_types(12), ROOTS_NET8);
        assert_eq!(NET10_ROOTS.table_segment_list, 0x38);
        assert_eq!(NET10_ROOTS.seg_table, 0x7D6);
        assert_eq!(NET10_ROOTS.data_block_type, 12);
    }
}

/// The loader heaps `eeheap -loader` lists (`model::loaderheap`): the global LoaderAllocator's
/// heaps, the JIT manager's code heaps, and how the DAC of the family presents the domains.
/// Every value was checked against SOS's `eeheap -loader` (the runtime's own DAC through
/// ISOSDacInterface13) on 8.0.4, 8.0.33, 9.0.22, 10.0.14 and 11.0.0 Linux dumps
/// (tests/tests/eeheap_loader.rs; docs/clr-layout-net8.md "Loader heaps"), and against the
/// DAC alone (hosted under wine) on the Windows 8.0.4 and 10.0.14 dumps; `None` in
/// [`Layout::loader_heaps`] where no such check was made (Windows 9, 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoaderHeapLayout {
    /// The builds whose values were checked against the DAC (the runtime packs of the corpus's
    /// builds; 8.0.4's, served by no feed, from /work/shared/tools/dacs): another build of the
    /// family is refused.
    pub checked_builds: &'static [&'static str],
    /// Whether the DAC reports the SystemDomain as a domain of its own (`GetAppDomainStoreData`
    /// `systemDomain`): yes on 8-10; 0 on 11.0.0 (SOS's `dumpdomain` prints `System Domain:
    /// 0000000000000000` there), whose AppDomain then lists the global LoaderAllocator's heaps.
    pub system_domain_listed: bool,
    /// g_dacTable index of `SystemDomain::m_pSystemDomain`, where the descriptor does not
    /// publish `SystemDomain` (9.0: 22, as on 8.0).
    pub system_domain_dac_index: Option<usize>,
    /// `SystemDomain.GlobalLoaderAllocator` (`m_GlobalAllocator`, inline): 16 where the
    /// descriptor publishes it (10, 11); on 8 and 9 what the DAC's `GetDomainLoaderAllocator`
    /// answers for the SystemDomain, also every Module's `m_loaderAllocator` (0xA00 on
    /// 8.0.33, 0x730 on 9.0.22).
    pub global_allocator: u64,
    /// The LoaderAllocator's heap pointers, in the DAC's `GetLoaderAllocatorHeaps` order
    /// (request.cpp `LoaderAllocatorLoaderHeapNames`): name and offset; the heaps a runtime
    /// lacks are not listed (8: no StaticsHeap; 11: no StubHeap).
    pub heaps: [Option<(LoaderHeapName, u64)>; 7],
    /// `LoaderAllocator::m_pVirtualCallStubManager`.
    pub vcs_manager: u64,
    /// `VirtualCallStubManager::indcell_heap` (IndcellHeap).
    pub vcs_indcell_heap: u64,
    /// `VirtualCallStubManager::cache_entry_heap` (CacheEntryHeap).
    pub vcs_cache_entry_heap: u64,
    /// `LoaderHeap.FirstBlock` (UnlockedLoaderHeap::m_pFirstBlock).
    pub first_block: u64,
    /// `LoaderHeapBlock.Next`.
    pub block_next: u64,
    /// `LoaderHeapBlock.VirtualAddress`.
    pub block_address: u64,
    /// `LoaderHeapBlock.VirtualSize`.
    pub block_size: u64,
    /// g_dacTable index of `ExecutionManager::m_pEEJitManager` (4 on 8-10); `None`: the
    /// descriptor's `EEJitManagerAddress` (11).
    pub jit_manager_dac_index: Option<usize>,
    /// `EEJitManager.AllCodeHeaps` (`m_pAllCodeHeaps`, a HeapList chain).
    pub all_code_heaps: u64,
    /// `CodeHeapListNode.Next`.
    pub heap_list_next: u64,
    /// `CodeHeapListNode.Heap` (the CodeHeap).
    pub heap_list_heap: u64,
    /// How a CodeHeap's class is told.
    pub code_heap_kind: CodeHeapKindSource,
    /// Where a LoaderCodeHeap's first LoaderHeapBlock pointer is, from the CodeHeap
    /// (`LoaderCodeHeap.LoaderHeap` + `LoaderHeap.FirstBlock` of its ExplicitControlLoaderHeap).
    pub code_heap_first_block: u64,
    /// `HostCodeHeap.BaseAddress` and `HostCodeHeap.CurrentAddress` (m_pBaseAddr,
    /// m_pLastAvailableCommittedAddr); `None` where no HostCodeHeap was checked (8, 9).
    pub host_code_heap: Option<(u64, u64)>,
}

/// The names the DAC gives the LoaderAllocator's heaps (`GetLoaderAllocatorHeapNames`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum LoaderHeapName {
    /// LowFrequencyHeap.
    LowFrequencyHeap,
    /// HighFrequencyHeap.
    HighFrequencyHeap,
    /// StaticsHeap (9+).
    StaticsHeap,
    /// StubHeap (8-10).
    StubHeap,
    /// ExecutableHeap.
    ExecutableHeap,
    /// FixupPrecodeHeap.
    FixupPrecodeHeap,
    /// NewStubPrecodeHeap.
    NewStubPrecodeHeap,
    /// IndcellHeap (the VirtualCallStubManager's).
    IndcellHeap,
    /// CacheEntryHeap (the VirtualCallStubManager's).
    CacheEntryHeap,
}

impl LoaderHeapName {
    /// The DAC's name.
    pub fn dac_name(self) -> &'static str {
        match self {
            LoaderHeapName::LowFrequencyHeap => "LowFrequencyHeap",
            LoaderHeapName::HighFrequencyHeap => "HighFrequencyHeap",
            LoaderHeapName::StaticsHeap => "StaticsHeap",
            LoaderHeapName::StubHeap => "StubHeap",
            LoaderHeapName::ExecutableHeap => "ExecutableHeap",
            LoaderHeapName::FixupPrecodeHeap => "FixupPrecodeHeap",
            LoaderHeapName::NewStubPrecodeHeap => "NewStubPrecodeHeap",
            LoaderHeapName::IndcellHeap => "IndcellHeap",
            LoaderHeapName::CacheEntryHeap => "CacheEntryHeap",
        }
    }
}

/// How a CodeHeap's class (LoaderCodeHeap or HostCodeHeap) is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeHeapKindSource {
    /// By its C++ vtable (the DAC's `VPtrTargetVTable` comparison), against the g_dacTable
    /// entries of LoaderCodeHeap and, where checked, HostCodeHeap (`None`: not checked).
    Vtable {
        /// g_dacTable index of `LoaderCodeHeap__vtAddr`.
        loader: usize,
        /// g_dacTable index of `HostCodeHeap__vtAddr`.
        host: Option<usize>,
    },
    /// By `CodeHeap.HeapType` (a byte): 0 LoaderCodeHeap, 1 HostCodeHeap (11).
    HeapType {
        /// The field's offset.
        offset: u64,
    },
}

/// .NET 8 on Linux x64 (measured on 8.0.33: async-net8, heap-net8, hang-net8 and the other
/// 8.0.33 dumps, against the DAC's GetLoaderAllocatorHeaps and TraverseLoaderHeap:
/// dumps/*.loaderheaps.dac.json). 8.0.4 has the same values: checked against the 8.0.4 DAC
/// (/work/shared/tools/dacs) on its seven dumps (hang, heap, crash, deadlock, async, servergc,
/// threadpool), every field of this table exercised, and against SOS with that DAC
/// (`<name>.sos-loader.txt`). The LoaderCodeHeap vtable's g_dacTable index in 8.0.4's
/// numbering ([`DacTableRevision`]: 153 in 8.0.33's table).
pub const LOADER_HEAPS_NET8_LINUX: LoaderHeapLayout = LoaderHeapLayout {
    checked_builds: &["8.0.4", "8.0.33"],
    system_domain_listed: true,
    system_domain_dac_index: None,
    global_allocator: 0xA00,
    heaps: [
        Some((LoaderHeapName::LowFrequencyHeap, 0x390)),
        Some((LoaderHeapName::HighFrequencyHeap, 0x398)),
        Some((LoaderHeapName::StubHeap, 0x3A0)),
        Some((LoaderHeapName::ExecutableHeap, 0x3B0)),
        Some((LoaderHeapName::FixupPrecodeHeap, 0x3C0)),
        Some((LoaderHeapName::NewStubPrecodeHeap, 0x3C8)),
        None,
    ],
    vcs_manager: 0x828,
    vcs_indcell_heap: 0x1E8,
    vcs_cache_entry_heap: 0x1F0,
    first_block: 8,
    block_next: 0,
    block_address: 8,
    block_size: 16,
    jit_manager_dac_index: Some(4),
    all_code_heaps: 0x10,
    heap_list_next: 0,
    heap_list_heap: 8,
    code_heap_kind: CodeHeapKindSource::Vtable {
        loader: 152,
        host: None,
    },
    code_heap_first_block: 8,
    host_code_heap: None,
};

/// .NET 8 on Windows x64, 8.0.4 only (windows-hang: measured, then checked against the 8.0.4
/// Windows DAC under wine, `dumps/windows-hang.loaderheaps.dac.json` from
/// dumps/windows/dacprobe.cpp --loader-heaps; no SOS truth: SOS cannot host a Windows DAC on
/// Linux). The SystemDomain, LoaderAllocator and VirtualCallStubManager are laid out otherwise
/// than on Linux (the global LoaderAllocator at +0x4C8, not +0xA00; the heap pointers and the
/// VirtualCallStubManager's below), the LoaderHeap, its blocks, the JIT manager and its HeapList
/// as on Linux; LoaderCodeHeap's vtable is g_dacTable 164 (the Windows table: 152 on Linux);
/// HostCodeHeap's is not verified (windows-hang has none).
pub const LOADER_HEAPS_NET8_WINDOWS: LoaderHeapLayout = LoaderHeapLayout {
    checked_builds: &["8.0.4"],
    global_allocator: 0x4C8,
    heaps: [
        Some((LoaderHeapName::LowFrequencyHeap, 0x330)),
        Some((LoaderHeapName::HighFrequencyHeap, 0x338)),
        Some((LoaderHeapName::StubHeap, 0x340)),
        Some((LoaderHeapName::ExecutableHeap, 0x350)),
        Some((LoaderHeapName::FixupPrecodeHeap, 0x360)),
        Some((LoaderHeapName::NewStubPrecodeHeap, 0x368)),
        None,
    ],
    vcs_manager: 0x708,
    vcs_indcell_heap: 0x188,
    vcs_cache_entry_heap: 0x190,
    code_heap_kind: CodeHeapKindSource::Vtable {
        loader: 164,
        host: None,
    },
    ..LOADER_HEAPS_NET8_LINUX
};

/// .NET 9 on Linux x64 (measured on 9.0.22: heap-net9, servergc-net9 and the other 9.0.22
/// dumps, against the DAC: dumps/*.loaderheaps.dac.json).
pub const LOADER_HEAPS_NET9_LINUX: LoaderHeapLayout = LoaderHeapLayout {
    checked_builds: &["9.0.22"],
    system_domain_listed: true,
    system_domain_dac_index: Some(22),
    global_allocator: 0x730,
    heaps: [
        Some((LoaderHeapName::LowFrequencyHeap, 0x420)),
        Some((LoaderHeapName::HighFrequencyHeap, 0x428)),
        Some((LoaderHeapName::StaticsHeap, 0x430)),
        Some((LoaderHeapName::StubHeap, 0x438)),
        Some((LoaderHeapName::ExecutableHeap, 0x448)),
        Some((LoaderHeapName::FixupPrecodeHeap, 0x458)),
        Some((LoaderHeapName::NewStubPrecodeHeap, 0x460)),
    ],
    vcs_manager: 0x968,
    vcs_indcell_heap: 0x1E8,
    vcs_cache_entry_heap: 0x1F0,
    first_block: 8,
    block_next: 0,
    block_address: 8,
    block_size: 16,
    jit_manager_dac_index: Some(4),
    all_code_heaps: 0x10,
    heap_list_next: 0,
    heap_list_heap: 8,
    code_heap_kind: CodeHeapKindSource::Vtable {
        loader: 154,
        host: Some(155),
    },
    code_heap_first_block: 8,
    // As on 10 (servergc-net9's HostCodeHeap: the DAC's base and current address).
    host_code_heap: Some((24, 32)),
};
