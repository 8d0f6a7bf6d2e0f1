//! Runtime discovery: which CLR is in the dump, its exact version, its layout and its globals.

use crate::discovery::index;
use crate::discovery::layout::{self, Layout};
use crate::error::{ClrError, LayoutFrom, Result, SourceTried};
use dumpreader::{ImageFormat, Memory, ModuleInfo, Os, Target};
use serde::Serialize;

/// The `.rsrc` directory `(address, size)` of a PE module, if it has one.
fn resource_directory<T: Target + ?Sized>(target: &T, module: &ModuleInfo) -> Option<(u64, u32)> {
    let img = target.module_image(module).ok()?;
    match &img.format {
        ImageFormat::Pe(pe) => {
            let (rva, size) = *pe.data_directories.get(2)?;
            if rva == 0 || size == 0 {
                return None;
            }
            Some((pe.rva_to_addr(module.base, rva)?, size))
        }
        _ => None,
    }
}

/// The image's full extent `(start, end)` in memory, `.data` and `.bss` included (an ELF
/// module's file mappings end before its `.bss`).
fn image_range<T: Target + ?Sized>(target: &T, module: &ModuleInfo) -> (u64, u64) {
    let mut end = module.end;
    if let Ok(img) = target.module_image(module) {
        match &img.format {
            ImageFormat::Elf(e) => {
                for ph in e.program_headers.iter().filter(|p| p.p_type == 1) {
                    let top = e
                        .load_bias
                        .wrapping_add(ph.p_vaddr)
                        .wrapping_add(ph.p_memsz);
                    if top > end && top - module.base < (1 << 32) {
                        end = top;
                    }
                }
            }
            ImageFormat::Pe(pe) => {
                end = end.max(module.base + pe.size_of_image as u64);
            }
        }
    }
    (module.base, end)
}

/// How discovery asks the layers above it for the version CoreLib's own metadata states
/// (`AssemblyInformationalVersion`), once a layout's sanity checks passed on a runtime whose
/// image and path name no version ([`VersionSource::CoreLibMetadata`]).
pub(crate) type CoreLibVersion<M> = fn(&Runtime<M>) -> Option<String>;

/// Where the runtime's version was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VersionSource {
    /// The `@(#)Version` sccsid string in libcoreclr's read-only data, in the dump.
    Sccsid,
    /// The `ProductVersion` string of coreclr.dll's VS_VERSION_INFO resource.
    VersionResource,
    /// The `Microsoft.NETCore.App/<version>/` folder of the module's path.
    ModulePath,
    /// The `@(#)Version` sccsid string read from the runtime's image file (build id matched
    /// to the dump's module), when the dump lacks that page and the path names no version (a
    /// self-contained or single-file app).
    ImageFileSccsid,
    /// The bundled build index: the version of the NuGet pack whose module has exactly the
    /// dump's identity for the runtime module (build id; PE timestamp and size).
    BuildIndex,
    /// CoreLib's `AssemblyInformationalVersion` (its metadata, read through the runtime once
    /// a layout's sanity checks passed): for hosts whose image and path tell nothing (a
    /// single-file app whose read-only data is not in the dump).
    CoreLibMetadata,
    /// Nothing told: the version is unknown.
    Unknown,
}

/// How the runtime is hosted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuntimeHost {
    /// A shared-framework libcoreclr.so / coreclr.dll.
    CoreClr,
    /// A single-file host with the runtime linked in (exports g_dacTable / DotNetRuntimeInfo).
    SingleFile,
}

/// The GC flavour (`g_heap_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GcMode {
    /// Workstation GC (g_heap_type 1).
    Workstation,
    /// Server GC (g_heap_type 2).
    Server,
}

/// The runtime found in the dump.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuntimeInfo {
    /// The runtime module's path as the dump records it.
    pub module_path: String,
    /// Its file name.
    pub module_name: String,
    /// Its load address.
    pub base: u64,
    /// Its mapped size.
    pub size: u64,
    /// How the runtime is hosted.
    pub host: RuntimeHost,
    /// Target OS.
    pub os: String,
    /// The product version, e.g. "8.0.4" (empty when unknown).
    pub version: String,
    /// Where [`RuntimeInfo::version`] came from.
    pub version_source: VersionSource,
    /// The file version from the sccsid string or resource, e.g. "8.0.424.16909".
    pub file_version: Option<String>,
    /// The source commit, when the sccsid string names it.
    pub commit: Option<String>,
}

impl RuntimeInfo {
    /// Major version, when the version is known.
    pub fn major(&self) -> Option<u32> {
        self.version.split('.').next()?.parse().ok()
    }

    /// The runtime named for people: ".NET Core 3.1.23", ".NET 8.0.4".
    pub fn display_name(&self) -> String {
        match self.major() {
            Some(m) if m <= 3 => format!(".NET Core {}", self.version),
            Some(_) => format!(".NET {}", self.version),
            None => "a .NET runtime of unknown version".to_string(),
        }
    }
}

/// Where the runtime's layout was read: what (its contract descriptor on .NET 9 and later,
/// g_dacTable on .NET 8) from which source ([`LayoutFrom`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayoutSource {
    /// "contract descriptor" or "g_dacTable".
    pub what: &'static str,
    /// The source.
    pub from: LayoutFrom,
    /// How it was found there: the export, the index's entry (pack, version, identity), the
    /// file's path and the check that accepted it.
    pub detail: String,
}

impl LayoutSource {
    /// [`LayoutSource::what`] of a runtime read through its contract descriptor (.NET 9+).
    pub const DESCRIPTOR: &'static str = "contract descriptor";
}

impl std::fmt::Display for LayoutSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let from = match self.from {
            LayoutFrom::Dump => "the dump's memory",
            LayoutFrom::BuildIndex => "the build index",
            LayoutFrom::ImageFile => "an image file",
            LayoutFrom::SymbolServer => "a symbol server",
        };
        write!(f, "{} from {from} ({})", self.what, self.detail)
    }
}

/// What discovery may read besides the dump's memory.
#[derive(Debug, Clone)]
pub struct DiscoverOptions {
    /// Consult the build index bundled with dumpshell (by exact identity). On by default;
    /// tests turn it off to exercise the sources after it.
    pub build_index: bool,
    /// Read image files at all: the target's image search path and recorded paths (when
    /// dumpreader found a file for a module), the assemblies' files for the stack walk, the
    /// files the runtime's records check. Off: the clean room, where nothing but the dump and
    /// the index is read (dumpreader's own file backing is the target's: open it without an
    /// image search path and recorded paths).
    pub files: bool,
    /// A symbol server to download the runtime module from when neither the dump nor the
    /// index describes its layout (off by default; never used when `files` is off).
    pub symbol_server: Option<crate::discovery::symbols::SymbolServer>,
    /// Folders to search for the apps' portable PDBs (local variable names of runtime-async
    /// frames: `clrdata::metadata::find_pdb`, a PDB taken only when its id equals the
    /// module's CodeView entry; never used when `files` is off).
    pub pdb_dirs: Vec<std::path::PathBuf>,
}

impl Default for DiscoverOptions {
    fn default() -> Self {
        DiscoverOptions {
            build_index: true,
            files: true,
            symbol_server: None,
            pdb_dirs: Vec::new(),
        }
    }
}

impl DiscoverOptions {
    /// The clean room: the dump's memory and the build index, no file of any kind.
    pub fn clean_room() -> Self {
        DiscoverOptions {
            build_index: true,
            files: false,
            symbol_server: None,
            pdb_dirs: Vec::new(),
        }
    }
}

/// The runtime module's file from the symbol server, when one is given and files are read;
/// why not in `tried` otherwise.
fn from_symbol_server(
    module: &ModuleInfo,
    opts: &DiscoverOptions,
    tried: &mut Vec<SourceTried>,
) -> Option<crate::discovery::symbols::Fetched> {
    if !opts.files {
        return None;
    }
    let Some(server) = &opts.symbol_server else {
        tried.push(SourceTried {
            from: LayoutFrom::SymbolServer,
            why: "none given (--symbol-server URL, or DUMPSHELL_SYMBOL_SERVER)".into(),
        });
        return None;
    };
    match server.fetch(module) {
        Ok(f) => Some(f),
        Err(e) => {
            tried.push(SourceTried {
                from: LayoutFrom::SymbolServer,
                why: e.to_string(),
            });
            None
        }
    }
}

/// How a file from the symbol server is named in a [`LayoutSource`].
fn fetched_detail(f: &crate::discovery::symbols::Fetched) -> String {
    format!(
        "{} ({}, {}{})",
        f.url,
        f.image
            .note
            .trim_start_matches(&format!("from {}: ", f.url)),
        if f.cached { "cached at " } else { "kept at " },
        f.path.display()
    )
}

/// The runtime globals this layer uses (addresses in the target; 0 when null).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct Globals {
    /// g_dacTable.
    pub dac_table: u64,
    /// The ThreadStore (value of ThreadStore::s_pThreadStore).
    pub thread_store: u64,
    /// The finalizer Thread.
    pub finalizer_thread: u64,
    /// g_heap_type.
    pub heap_type: u32,
    /// The GcDacVars structure.
    pub gc_dac_vars: u64,
    /// The AppDomain.
    pub app_domain: u64,
    /// The SystemDomain.
    pub system_domain: u64,
    /// g_card_table.
    pub card_table: u64,
    /// g_lowest_address.
    pub lowest_address: u64,
    /// g_highest_address.
    pub highest_address: u64,
    /// Address of g_global_alloc_context.
    pub global_alloc_context: u64,
    /// The IGCHeap.
    pub gc_heap: u64,
    /// System.Object's MethodTable.
    pub object_mt: u64,
    /// System.String's MethodTable.
    pub string_mt: u64,
    /// System.Array's MethodTable.
    pub array_mt: u64,
    /// System.Object[]'s MethodTable (what SOS's GetUsefulGlobals calls ArrayMethodTable).
    pub object_array_mt: u64,
    /// System.Exception's MethodTable.
    pub exception_mt: u64,
    /// The free-object MethodTable.
    pub free_mt: u64,
    /// g_pSyncTable value.
    pub sync_table: u64,
    /// The SyncBlockCache.
    pub sync_block_cache: u64,
    /// Address of ExecutionManager::g_codeRangeMap.
    pub code_range_map: u64,
    /// The EEJitManager.
    pub ee_jit_manager: u64,
    /// The ReadyToRunJitManager.
    pub ready_to_run_jit_manager: u64,
    /// The GC's variables named by its own sub-descriptor (.NET 11); zeros elsewhere.
    pub gc: GcGlobals,
    /// `System.Runtime.CompilerServices.Continuation`'s MethodTable (.NET 11's
    /// `ContinuationMethodTable`): the parent of every runtime-made continuation type; 0 where
    /// the runtime has none.
    pub continuation_mt: u64,
}

/// The addresses of the GC's variables its contract sub-descriptor publishes (.NET 11): the
/// globals of the same names (0 when absent: the server GC has no workstation statics and
/// the other way round). Read by `crate::data::gcvars`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct GcGlobals {
    /// `GCHeapGenerationTable` (workstation).
    pub generation_table: u64,
    /// `MaxGeneration`.
    pub max_generation: u64,
    /// `GCHeapEphemeralHeapSegment` (workstation).
    pub ephemeral_heap_segment: u64,
    /// `GCHeapAllocAllocated` (workstation).
    pub alloc_allocated: u64,
    /// `GCHeapFinalizeQueue` (workstation).
    pub finalize_queue: u64,
    /// `HandleTableMap`.
    pub handle_table_map: u64,
    /// `NumHeaps` (server).
    pub num_heaps: u64,
    /// `Heaps` (server).
    pub heaps: u64,
    /// `GCHeapOomData` (workstation: the heap's `oom_info`).
    pub oom_data: u64,
}

/// A .NET runtime in a dump, with the layout chosen for it and its globals resolved.
///
/// Generic over the memory (`&Dump`, `Arc<Dump>`, a debugger target): reads go through
/// [`Memory`] only.
pub struct Runtime<M> {
    mem: M,
    /// The runtime found.
    pub info: RuntimeInfo,
    /// The layout table in use.
    pub layout: &'static Layout,
    /// Where the runtime's own description of its layout was read.
    pub layout_source: LayoutSource,
    /// What discovery was allowed to read.
    pub options: DiscoverOptions,
    /// Its globals.
    pub globals: Globals,
    /// Where image files may be read from when the dump lacks an image's pages.
    pub image_search: ImageSearch,
    /// Problems the dump reported when opened (a truncated file...), for explaining missing
    /// memory ([`Runtime::explain`]).
    dump_problems: Vec<String>,
    /// For a core whose missing file pages may be read from the files (gcore): the address
    /// ranges of each mapped file whose missing bytes no file stands in for, with why (none
    /// found, refused, not verified).
    unread_files: Vec<(u64, u64, String)>,
    /// The runtime's contract descriptor (.NET 9+).
    descriptor: Option<std::sync::Arc<crate::discovery::descriptor::ContractDescriptor>>,
    /// Where this build's g_dacTable has an entry the layout's numbering lacks
    /// ([`layout::DacTableRevision`]).
    dac_revision: layout::DacTableRevision,
    /// Why the AppDomain (`AppDomain::m_pTheAppDomain`) is not read, when it is not: a
    /// createdump dump of a single-file app made without the runtime's DAC lacks the host's
    /// data page that holds it ([`Runtime::app_domain`]).
    app_domain_missing: Option<ClrError>,
    /// The load-time checks skipped because the structure checked is not in the dump (only
    /// on a runtime read without its AppDomain: [`Runtime::degraded`]).
    unchecked: Vec<String>,
}

/// The AppDomain global as read (`read`), or, when the page holding it is absent from a
/// createdump dump of a single-file app made without the runtime's DAC (the host's data pages
/// the runtime touched are not saved), 0 and why: the runtime is then read without it, and
/// what needs it is refused with that reason ([`Runtime::app_domain`]). Any other failure is
/// the runtime's refusal, as before.
fn app_domain_or_missing<T: Target + ?Sized>(
    target: &T,
    read: Result<u64>,
) -> Result<(u64, Option<ClrError>)> {
    match read {
        Ok(a) => Ok((a, None)),
        Err(e @ ClrError::Read { addr, .. }) => match no_dac_single_file_host(target) {
            Some((host, start, end)) if (start..end).contains(&addr) => Ok((
                0,
                Some(ClrError::While {
                    context: format!(
                        "the runtime is read without its AppDomain: the page of {host}'s data that \
                         holds the global is not in this dump (createdump wrote it without the \
                         runtime's DAC, run by hand on a single-file app; the app's own dump \
                         request, createdump --full or gdb gcore save it)"
                    ),
                    error: Box::new(e),
                }),
            )),
            _ => Err(e),
        },
        Err(e) => Err(e),
    }
}

/// Where the image files of managed assemblies are looked for when the dump lacks pages of
/// them (createdump saves only the touched pages of a ReadyToRun image, so CoreLib's method
/// tables for the stack walk are often absent). A file is used only when its PE timestamp and
/// SizeOfImage equal the headers in the dump.
#[derive(Debug, Clone)]
pub struct ImageSearch {
    /// Folders searched, in order, for a file of the image's name.
    pub dirs: Vec<std::path::PathBuf>,
    /// Whether the path the runtime recorded for the image is tried last (right when the dump
    /// is analysed on the machine it was taken on).
    pub recorded_paths: bool,
    /// Whether the target itself reads the pages it lacks from identity-checked image files
    /// (a gcore or kernel core: dumpreader's file backing); the stack walk then needs no image
    /// file of its own.
    pub target_reads_files: bool,
}

impl Default for ImageSearch {
    fn default() -> Self {
        ImageSearch {
            dirs: Vec::new(),
            recorded_paths: true,
            target_reads_files: false,
        }
    }
}

impl ImageSearch {
    /// The target's image path and whether it reads image files itself.
    pub fn of_target<T: Target + ?Sized>(target: &T) -> ImageSearch {
        ImageSearch {
            dirs: target.image_search_path(),
            recorded_paths: target.use_recorded_paths(),
            target_reads_files: matches!(
                target.dump_kind().map(|k| k.producer),
                Some(dumpreader::DumpProducer::Gcore | dumpreader::DumpProducer::Kernel)
            ),
        }
    }

    /// The target's image path, as [`DiscoverOptions::files`] allows: nothing when files are
    /// not read.
    pub fn for_options<T: Target + ?Sized>(target: &T, opts: &DiscoverOptions) -> ImageSearch {
        let s = ImageSearch::of_target(target);
        if opts.files {
            s
        } else {
            ImageSearch {
                dirs: Vec::new(),
                recorded_paths: false,
                ..s
            }
        }
    }

    /// The files to try for an image the runtime loaded from `recorded` (a Linux or Windows
    /// path), in order.
    pub fn candidates(&self, recorded: &str) -> Vec<std::path::PathBuf> {
        dumpreader::image_candidates(recorded, &self.dirs, self.recorded_paths)
    }
}

impl<M> std::fmt::Debug for Runtime<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("info", &self.info)
            .field("layout", &self.layout.name)
            .field("globals", &self.globals)
            .finish()
    }
}

/// Finds the runtime module and reads its version without choosing a layout: what the native
/// commands can always show (also for unsupported runtimes).
pub fn find_runtime<T: Target + ?Sized>(target: &T) -> Result<RuntimeInfo> {
    find_runtime_with(target, &DiscoverOptions::default())
}

/// The indexed runtime modules of a host: libcoreclr.so / coreclr.dll, or a single-file host.
fn index_kinds(host: RuntimeHost) -> &'static [index::ModuleKind] {
    match host {
        RuntimeHost::CoreClr => &[index::ModuleKind::LibCoreClr, index::ModuleKind::CoreClrDll],
        RuntimeHost::SingleFile => &[
            index::ModuleKind::SingleFileHostElf,
            index::ModuleKind::SingleFileHostPe,
        ],
    }
}

/// The NativeAOT runtime of the target (`None`: not a NativeAOT app).
fn aot_runtime<T: Target + ?Sized>(
    target: &T,
) -> Result<Option<crate::discovery::nativeaot::NativeAot>> {
    crate::discovery::nativeaot::NativeAot::find(target)
}

/// [`find_runtime`] with what discovery may consult besides the dump (the build index).
pub fn find_runtime_with<T: Target + ?Sized>(
    target: &T,
    opts: &DiscoverOptions,
) -> Result<RuntimeInfo> {
    let modules = target.modules();
    let is_runtime_name = |m: &ModuleInfo| {
        let n = m.name().to_ascii_lowercase();
        n == "libcoreclr.so" || n == "coreclr.dll" || n == "libcoreclr.dylib"
    };
    let (module, host) = match modules.iter().find(|m| is_runtime_name(m)) {
        Some(m) => (m.clone(), RuntimeHost::CoreClr),
        None => {
            // A single-file host: the runtime is linked into the app's executable.
            // A NativeAOT app: its own runtime, none of CoreCLR's structures.
            if let Some(aot) = aot_runtime(target)? {
                return Err(ClrError::NativeAot {
                    runtime: aot.display_name(),
                    module: aot.module_name,
                    base: aot.base,
                });
            }
            let m = modules
                .iter()
                .filter(|m| m.kind != dumpreader::ModuleKind::Other)
                .find(|m| {
                    target.find_export(m, "DotNetRuntimeInfo").is_some()
                        || target.find_export(m, "g_dacTable").is_some()
                })
                // A host whose export table the dump lacks (createdump saves few of its
                // pages): its identity, when the index knows it as a single-file host.
                .or_else(|| {
                    let kinds = index_kinds(RuntimeHost::SingleFile);
                    opts.build_index.then(|| {
                        modules
                            .iter()
                            .filter(|m| m.kind != dumpreader::ModuleKind::Other)
                            .find(|m| index::build_of(m, kinds).is_ok())
                    })?
                })
                .ok_or_else(|| ClrError::NoRuntime {
                    detail: format!(
                        "no libcoreclr.so / coreclr.dll among {} modules, no module exports \
                         g_dacTable or DotNetRuntimeInfo{}",
                        modules.len(),
                        if opts.build_index {
                            ", and none has the identity of a single-file host the build index \
                             knows"
                        } else {
                            ""
                        }
                    ),
                })?;
            (m.clone(), RuntimeHost::SingleFile)
        }
    };
    let os = target.info().os;
    let (start, end) = image_range(target, &module);
    let mut info = RuntimeInfo {
        module_path: module.path.clone(),
        module_name: module.name().to_string(),
        base: module.base,
        size: end - start,
        host,
        os: format!("{os:?}").to_ascii_lowercase(),
        version: String::new(),
        version_source: VersionSource::Unknown,
        file_version: None,
        commit: None,
    };
    let path_version = version_from_path(&module.path);
    if let Some((fv, commit)) = sccsid_version(target, module.base, module.base + info.size) {
        info.file_version = Some(fv.clone());
        info.commit = commit;
        if let Some(v) = product_from_file_version(&fv) {
            info.version = v;
            info.version_source = VersionSource::Sccsid;
        }
    }
    if info.version.is_empty() {
        if let Some((fv, commit)) = resource_product_version(target, &module) {
            if let Some(v) = product_from_file_version(&fv) {
                info.version = v;
                info.version_source = VersionSource::VersionResource;
            }
            info.file_version = Some(fv);
            info.commit = commit;
        }
    }
    // The build index, by the module's exact identity (before the path: a folder's name is
    // not the build).
    if info.version.is_empty() && opts.build_index {
        if let Ok(b) = index::build_of(&module, index_kinds(host)) {
            info.version = b.package_version.clone();
            info.version_source = VersionSource::BuildIndex;
            info.file_version = Some(b.file_version.clone());
            info.commit = Some(b.commit.clone());
        }
    }
    if info.version.is_empty() {
        if let Some(pv) = path_version {
            info.version = pv;
            info.version_source = VersionSource::ModulePath;
        }
    }
    Ok(info)
}

/// The sccsid version read from the runtime's image file (build id matched by dumpreader), for
/// a runtime whose dump holds neither that page nor a versioned path: (product, file version,
/// commit).
fn image_file_version<T: Target + ?Sized>(
    target: &T,
    module: &ModuleInfo,
) -> Option<(String, String, Option<String>)> {
    let img = target.module_image(module).ok()?;
    let (dumpreader::ImageSource::File(path), ImageFormat::Elf(e)) = (&img.source, &img.format)
    else {
        return None;
    };
    let overlay = crate::discovery::descriptor::ElfFileOverlay::new(target, path, e.load_bias)?;
    let (start, end) = image_range(target, module);
    let (fv, commit) = sccsid_version(&overlay, start, end)?;
    let v = product_from_file_version(&fv)?;
    Some((v, fv, commit))
}

/// .NET 5+ file versions are major.minor.(patch*100 + n).revision ("8.0.424.16909" is 8.0.4);
/// .NET Core 3.x used 4.700.x, which does not give the product version.
fn product_from_file_version(fv: &str) -> Option<String> {
    let parts: Vec<u32> = fv.split('.').filter_map(|p| p.parse().ok()).collect();
    if parts.len() >= 3 && parts[0] >= 5 && parts[0] < 100 {
        Some(format!("{}.{}.{}", parts[0], parts[1], parts[2] / 100))
    } else {
        None
    }
}

/// `.../Microsoft.NETCore.App/<version>/<module>` → `<version>`.
fn version_from_path(path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split(['/', '\\']).collect();
    let i = parts
        .iter()
        .position(|p| p.eq_ignore_ascii_case("Microsoft.NETCore.App"))?;
    let v = parts.get(i + 1)?;
    if v.split('.').count() >= 3 && v.split('.').all(|p| !p.is_empty()) {
        Some((*v).to_string())
    } else {
        None
    }
}

/// Searches the module's mapped ranges for `@(#)Version X @Commit: Y`.
fn sccsid_version<T: Memory + ?Sized>(
    mem: &T,
    start: u64,
    end: u64,
) -> Option<(String, Option<String>)> {
    const NEEDLE: &[u8] = b"@(#)Version ";
    const CHUNK: u64 = 1 << 20;
    let mut buf = vec![0u8; CHUNK as usize + 128];
    let mut a = start;
    // Bound: the module's own extent (images are at most a few tens of MB).
    let end = end.min(start.saturating_add(256 << 20));
    while a < end {
        let want = ((end - a).min(CHUNK) + 128).min(buf.len() as u64) as usize;
        let got = mem.read(a, &mut buf[..want]);
        if got == 0 {
            // Skip to the next page.
            a = (a | 0xFFF) + 1;
            continue;
        }
        let hay = &buf[..got];
        if let Some(i) = hay.windows(NEEDLE.len()).position(|w| w == NEEDLE) {
            let rest = &hay[i + NEEDLE.len()..];
            let text: String = rest
                .iter()
                .take_while(|&&b| b != 0 && b.is_ascii())
                .map(|&b| b as char)
                .collect();
            if text.len() < 8 && i + NEEDLE.len() + 100 > got {
                // Cut at the buffer's end: read again from the needle.
                let s = mem
                    .read_cstr(a + i as u64 + NEEDLE.len() as u64, 200)
                    .ok()?;
                return parse_sccsid(&s);
            }
            return parse_sccsid(&text);
        }
        a += (got as u64).clamp(1, CHUNK);
    }
    None
}

fn parse_sccsid(s: &str) -> Option<(String, Option<String>)> {
    let mut it = s.split_whitespace();
    let v = it.next()?.to_string();
    if !v.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let commit = s
        .split("@Commit:")
        .nth(1)
        .and_then(|c| c.split_whitespace().next())
        .map(str::to_string);
    Some((v, commit))
}

/// The `ProductVersion` value of a PE module's VS_VERSION_INFO: coreclr.dll writes it like its
/// sccsid, "8,0,424,16909 @Commit: 2d7e...". Returns (dotted file version, commit).
fn resource_product_version<T: Target + ?Sized>(
    target: &T,
    module: &ModuleInfo,
) -> Option<(String, Option<String>)> {
    let (addr, size) = resource_directory(target, module)?;
    let bytes = target.read_bytes(addr, (size as usize).min(8 << 20));
    let key: Vec<u8> = "ProductVersion\0"
        .encode_utf16()
        .flat_map(|u| u.to_le_bytes())
        .collect();
    let i = bytes.windows(key.len()).position(|w| w == key.as_slice())?;
    // String { WORD wLength; WORD wValueLength; WORD wType; WCHAR szKey[]; padding; WCHAR Value[] }:
    // the value starts at the next 32-bit boundary (the directory is 4-aligned in the image).
    let mut v = (i + key.len() + 3) & !3;
    let mut units = Vec::new();
    while v + 1 < bytes.len() && units.len() < 256 {
        let u = u16::from_le_bytes([bytes[v], bytes[v + 1]]);
        if u == 0 {
            break;
        }
        units.push(u);
        v += 2;
    }
    let s = String::from_utf16_lossy(&units).replace(',', ".");
    let s = s.split('+').next()?.trim().to_string();
    parse_sccsid(&s)
}

/// A single-file host in a createdump dump made without the DAC (createdump names the bundled
/// assemblies' mappings only with it): (its file name, its image's extent).
fn no_dac_single_file_host<T: Target + ?Sized>(target: &T) -> Option<(String, u64, u64)> {
    let kind = target.dump_kind()?;
    if kind.producer != dumpreader::DumpProducer::Createdump {
        return None;
    }
    let hb = target.bundles().first()?;
    if !hb.recorded_names.is_empty() {
        return None;
    }
    let m = target.modules().iter().find(|m| m.base == hb.host_base)?;
    Some((m.name().to_owned(), m.base, m.end))
}

impl<M: Memory> Runtime<M> {
    /// Finds the runtime, chooses its layout, resolves the globals and runs the sanity checks.
    ///
    /// Errors: [`ClrError::NoRuntime`], [`ClrError::UnsupportedRuntime`] (e.g. "found .NET Core
    /// 3.1.23 (libcoreclr.so at 0x7f...); this build reads .NET 8, 9, 10 and 11"), [`ClrError::SanityCheck`].
    pub(crate) fn discover_with(
        target: M,
        corelib_version: CoreLibVersion<M>,
        opts: &DiscoverOptions,
    ) -> Result<Runtime<M>>
    where
        M: Target,
    {
        // Problems the dump reported when it was opened (a truncated file...) explain a
        // runtime that cannot be read better than the runtime's own symptoms do.
        let problems: Vec<String> = target
            .info()
            .warnings
            .iter()
            .map(|w| w.to_string())
            .collect();
        let explain = |e: ClrError| match (problems.first(), &e) {
            (
                Some(p),
                ClrError::NoRuntime { .. }
                | ClrError::Read { .. }
                | ClrError::Corrupt { .. }
                | ClrError::SanityCheck { .. },
            ) => ClrError::InDamagedDump {
                error: Box::new(e),
                problem: p.clone(),
                more: problems.len() - 1,
            },
            _ => e,
        };
        // createdump without the DAC (run by hand on a single-file app: it finds no
        // libcoreclr.so there) saves few of the host's data pages: the runtime's globals that
        // are not in the dump are said to be missing for that reason.
        let no_dac_host = no_dac_single_file_host(&target);
        let explain_host = |e: ClrError| match (&e, no_dac_host) {
            (ClrError::Read { addr, .. }, Some((host, start, end)))
                if (start..end).contains(addr) =>
            {
                ClrError::While {
                    context: format!(
                        "the runtime's own data in {host} is not in this dump: createdump wrote \
                         it without the runtime's DAC (run by hand on a single-file app, it \
                         finds no libcoreclr.so there; the app's own dump request, as \
                         dotnet-dump collect makes it, with the DAC beside the app, createdump \
                         --full or gdb gcore save that data)"
                    ),
                    error: Box::new(e),
                }
            }
            _ => e,
        };
        let mut rt = Self::discover_in(target, corelib_version, opts)
            .map_err(explain_host)
            .map_err(explain)?;
        rt.dump_problems = problems;
        // A core lacking the PE headers of its assemblies: their files, checked against the
        // runtime's own records, fill what it lacks.
        if opts.files {
            crate::discovery::imagecheck::settle_image_files(
                rt.memory(),
                rt.layout,
                rt.globals.app_domain,
            );
        }
        let unread: Vec<(String, String)> = rt
            .memory()
            .file_sources()
            .into_iter()
            .filter(|f| {
                f.missing_bytes > 0 && !matches!(f.state, dumpreader::FileSourceState::Used { .. })
            })
            .map(|f| (f.recorded, f.state.describe()))
            .collect();
        if !unread.is_empty() {
            rt.unread_files = rt
                .memory()
                .modules()
                .iter()
                .flat_map(|m| {
                    let why = unread.iter().find(|(p, _)| *p == m.path).map(|u| &u.1);
                    why.into_iter().map(|w| (m.base, m.end, w.clone()))
                })
                .collect();
        }
        Ok(rt)
    }

    /// The images the runtime loaded, as its own records describe them (the AppDomain's
    /// assemblies, their Modules, loaded layouts and lookup maps: what a PE file whose headers
    /// the dump lacks is compared with, [`crate::discovery::imagecheck`]).
    pub fn loaded_images(&self) -> Result<Vec<Result<crate::discovery::imagecheck::LoadedImage>>> {
        crate::discovery::imagecheck::loaded_images(self.memory(), self.layout, self.app_domain()?)
    }

    /// Why the missing bytes of the file mapped at `addr` are not read from a file (a gcore
    /// core whose file was not found, or was refused), when that is so.
    pub fn unread_file_at(&self, addr: u64) -> Option<&str> {
        self.unread_files
            .iter()
            .find(|(b, e, _)| (*b..*e).contains(&addr))
            .map(|u| u.2.as_str())
    }

    /// `e`, with the dump's own problems added when `e` is memory missing from a dump that
    /// reported damage when opened (a truncated file): the likely cause.
    pub fn explain(&self, e: ClrError) -> ClrError {
        match (self.dump_problems.first(), &e) {
            (Some(p), ClrError::Read { .. }) => ClrError::InDamagedDump {
                error: Box::new(e),
                problem: p.clone(),
                more: self.dump_problems.len() - 1,
            },
            _ => e,
        }
    }

    fn discover_in(
        target: M,
        corelib_version: CoreLibVersion<M>,
        opts: &DiscoverOptions,
    ) -> Result<Runtime<M>>
    where
        M: Target,
    {
        let info = find_runtime_with(&target, opts)?;
        let refused = ClrError::UnsupportedRuntime {
            found: info.display_name(),
            module: info.module_name.clone(),
            base: info.base,
        };
        let unsupported = || refused.clone();
        // The identity the index knows and the version text the dump holds must agree: a
        // contradiction is a damaged dump (or index), not something to choose from.
        if let (true, Some(fv), Some(m)) = (
            opts.build_index && info.version_source != VersionSource::BuildIndex,
            info.file_version.as_deref(),
            target.modules().iter().find(|m| m.base == info.base),
        ) {
            if let Ok(b) = index::build_of(m, index_kinds(info.host)) {
                if b.file_version != fv {
                    return Err(ClrError::SanityCheck {
                        version: info.version.clone(),
                        detail: format!(
                            "the dump's version text says {fv}, but its identity is the build \
                             index's {} (file version {})",
                            index::describe(b),
                            b.file_version
                        ),
                    });
                }
            }
        }
        let mut info = info;
        // A runtime that publishes a contract descriptor (.NET 9+) but whose version neither
        // the dump nor the path tells (a self-contained or single-file app): its image file's
        // sccsid names it.
        if info.version.is_empty() && opts.files {
            let module = target
                .modules()
                .iter()
                .find(|m| m.base == info.base)
                .cloned();
            if let Some(module) = module {
                if target
                    .find_export(&module, crate::discovery::descriptor::EXPORT_NAME)
                    .is_some()
                {
                    if let Some((v, fv, commit)) = image_file_version(&target, &module) {
                        info.version = v;
                        info.version_source = VersionSource::ImageFileSccsid;
                        info.file_version = Some(fv);
                        info.commit = commit;
                    }
                }
            }
        }
        // Nothing else told the version: the sccsid of the symbol server's file of the
        // module's identity.
        if info.version.is_empty() && opts.files && opts.symbol_server.is_some() {
            if let Some(m) = target.modules().iter().find(|m| m.base == info.base) {
                let mut ignored = Vec::new();
                if let Some(f) = from_symbol_server(m, opts, &mut ignored) {
                    if let ImageFormat::Elf(e) = &f.image.format {
                        let (start, end) = image_range(&target, m);
                        let version = crate::discovery::descriptor::ElfFileOverlay::new(
                            &target,
                            &f.path,
                            e.load_bias,
                        )
                        .and_then(|o| sccsid_version(&o, start, end))
                        .and_then(|(fv, c)| Some((product_from_file_version(&fv)?, fv, c)));
                        if let Some((v, fv, commit)) = version {
                            info.version = v;
                            info.version_source = VersionSource::ImageFileSccsid;
                            info.file_version = Some(fv);
                            info.commit = commit;
                        }
                    }
                }
            }
        }
        // .NET 9 and 10: read through the runtime's own contract descriptor.
        if let Some(family) = info
            .major()
            .and_then(crate::discovery::supplement::family_of_major)
        {
            return Self::discover_with_descriptor(target, info, family, opts);
        }
        // An unknown version (no sccsid, resource or framework path) is tried with the .NET 8
        // layout: accepted only if its sanity checks pass and CoreLib then says 8.x.
        let version_unknown = info.version.is_empty();
        if info.major() != Some(8) && !version_unknown {
            return Err(unsupported());
        }
        let layout: &'static Layout = match target.info().os {
            Os::Windows => &layout::NET8_WINDOWS_X64,
            Os::Linux => &layout::NET8_LINUX_X64,
            Os::Other(_) => return Err(unsupported()),
        };
        let module = target
            .modules()
            .iter()
            .find(|m| m.base == info.base)
            .cloned()
            .ok_or_else(|| ClrError::NoRuntime {
                detail: "the runtime module vanished from the module list".into(),
            })?;
        // The export, when the dump holds the symbol table; else the index's RVA for the
        // module's exact build; else the export of an identity-checked image file; else a
        // search of the runtime image for the one table whose entries lead to String's and
        // Free's MethodTables (createdump dumps often lack .dynsym's pages).
        let (dac_table, layout_source) = find_dac_table(&target, &module, &info, layout, opts)?;
        let image_search = ImageSearch::for_options(&target, opts);
        let dac_revision =
            layout::DacTableRevision::detect(&target_dac_probe(&target, dac_table, layout));
        let mut rt = Runtime {
            mem: target,
            info,
            layout,
            layout_source,
            options: opts.clone(),
            globals: Globals {
                dac_table,
                ..Globals::default()
            },
            image_search,
            dump_problems: Vec::new(),
            unread_files: Default::default(),
            descriptor: None,
            dac_revision,
            app_domain_missing: None,
            unchecked: Vec::new(),
        };
        if version_unknown {
            let tried = rt
                .resolve_globals(&module)
                .and_then(|_| rt.sanity_check().map(drop));
            let version = tried.as_ref().ok().and_then(|_| corelib_version(&rt));
            match version {
                Some(v) if v.split('.').next() == Some("8") => {
                    rt.info.version = v;
                    rt.info.version_source = VersionSource::CoreLibMetadata;
                }
                Some(v) => {
                    return Err(ClrError::UnsupportedRuntime {
                        found: format!(".NET {v} (from CoreLib's metadata)"),
                        module: rt.info.module_name.clone(),
                        base: rt.info.base,
                    })
                }
                None => {
                    return Err(unknown_version(
                        &rt.mem,
                        &module,
                        &rt.info,
                        opts,
                        tried.err(),
                    ))
                }
            }
            return Ok(rt);
        }
        rt.resolve_globals(&module)?;
        rt.unchecked = rt.sanity_check()?;
        Ok(rt)
    }

    /// .NET 9+: the layout from the contract descriptor and the family's supplements, the
    /// globals from the descriptor and from `g_dacTable` entries anchored on descriptor
    /// globals ([`crate::discovery::supplement::DacTableAnchors`]), then the same sanity checks as .NET 8.
    fn discover_with_descriptor(
        target: M,
        info: RuntimeInfo,
        family: crate::discovery::layout::Family,
        opts: &DiscoverOptions,
    ) -> Result<Runtime<M>>
    where
        M: Target,
    {
        use crate::discovery::supplement;
        let os = target.info().os;
        let windows = match os {
            Os::Windows => true,
            Os::Linux => false,
            Os::Other(_) => {
                return Err(ClrError::UnsupportedRuntime {
                    found: info.display_name(),
                    module: info.module_name.clone(),
                    base: info.base,
                })
            }
        };
        let runtime = format!("{} ({}-x64)", info.display_name(), info.os);
        let desc_err = |detail: String| ClrError::Descriptor {
            runtime: runtime.clone(),
            detail,
        };
        let module = target
            .modules()
            .iter()
            .find(|m| m.base == info.base)
            .cloned()
            .ok_or_else(|| ClrError::NoRuntime {
                detail: "the runtime module vanished from the module list".into(),
            })?;
        let (d, layout_source) = find_descriptor(&target, &module, &info, opts, &runtime)?;
        supplement::check_contracts(&d, family, &runtime)?;
        let layout = supplement::build_layout(&d, family, windows, &runtime)?;
        let global = |name: &'static str| -> Result<u64> {
            d.global_number(name).ok_or_else(|| ClrError::MissingField {
                ty: "globals",
                field: name,
                runtime: runtime.clone(),
            })
        };
        let deref = |name: &'static str| -> Result<u64> {
            let a = global(name)?;
            target.read_u64(a).map_err(|_| ClrError::read(name, a))
        };
        // The runtime's own data must be in the dump: a dump without it (createdump of a
        // single-file app writes without the DAC, and its --triage/--normal kinds then leave
        // the host's .data out) is named so, not searched for g_dacTable in vain.
        let thread_store = global("ThreadStore")?;
        if target.read_u64(thread_store).is_err() {
            return Err(ClrError::read(
                format!(
                    "ThreadStore::s_pThreadStore (the runtime's own data, in {}'s .data)",
                    info.module_name
                ),
                thread_store,
            ));
        }
        // .NET 11: every global is the descriptor's (the GC's own in its sub-descriptor);
        // .NET 9/10: some come from g_dacTable entries next to descriptor globals.
        let mut app_domain_missing = None;
        let globals = if let layout::GcSource::Descriptor(_) = layout.gc_source {
            descriptor_globals(&target, &d, &runtime)?
        } else {
            // g_dacTable entries next to descriptor globals (see DacTableAnchors).
            let anchors = supplement::anchors_of(family).ok_or_else(|| {
                desc_err(format!("no g_dacTable anchors are known for {family:?}"))
            })?;
            let (start, end) = image_range(&target, &module);
            // The export: from the dump's symbol table or an identity-checked image file (as
            // dumpreader found them, files allowed), else the index's RVA for the exact build.
            let dac_export = target
                .module_image(&module)
                .ok()
                .filter(|img| opts.files || img.source == dumpreader::ImageSource::DumpMemory)
                .and_then(|img| img.find_export("g_dacTable"))
                .or_else(|| {
                    opts.build_index
                        .then(|| index::build_of(&module, index_kinds(info.host)).ok())
                        .flatten()
                        .and_then(|b| b.export("g_dacTable"))
                        .map(|rva| module.base.wrapping_add(rva))
                })
                // The symbol server's file that gave the descriptor (from the cache now).
                .or_else(|| {
                    let server = opts.symbol_server.as_ref()?;
                    (layout_source.from == LayoutFrom::SymbolServer)
                        .then(|| server.fetch(&module).ok())
                        .flatten()?
                        .image
                        .find_export("g_dacTable")
                });
            let table = DacTableView::find(
                &target,
                (start, end),
                dac_export,
                &[
                    global("ThreadStore")?,
                    global("FinalizerThread")?,
                    global("GCThread")?,
                ],
            )
            .ok_or_else(|| {
                desc_err(format!(
                    "no g_dacTable entries ThreadStore, FinalizerThread, GCThread found in {}: \
                     g_heap_type and g_gcDacGlobals cannot be located",
                    info.module_name
                ))
            })?;
            let entry = |n: u64, what: &str| {
                table
                    .entry_after(&target, table.slot, n)
                    .ok_or_else(|| desc_err(format!("g_dacTable entry of {what} unreadable")))
            };
            let heap_type_addr = entry(anchors.heap_type_after_thread_store, "g_heap_type")?;
            let gc_dac_globals_addr =
                entry(anchors.gc_dac_globals_after_thread_store, "g_gcDacGlobals")?;
            if entry(anchors.app_domain_after_thread_store, "AppDomain")? != global("AppDomain")? {
                return Err(desc_err(
                    "g_dacTable does not hold AppDomain where this build expects it (after \
                     ThreadStore, FinalizerThread, GCThread, g_heap_type, g_gcDacGlobals): a \
                     reordered table, not read"
                        .into(),
                ));
            }
            let object_slot = table
                .slot_of(&target, global("ObjectMethodTable")?)
                .ok_or_else(|| desc_err("g_dacTable entry of g_pObjectClass not found".into()))?;
            let global_alloc_context = table
                .entry_after(
                    &target,
                    object_slot,
                    0u64.wrapping_sub(anchors.global_alloc_context_before_object_class),
                )
                .ok_or_else(|| {
                    desc_err("g_dacTable entry of g_global_alloc_context unreadable".into())
                })?;
            // SyncBlockCache::s_pSyncBlockCache, next to g_pSyncTable (SyncTableEntries); 0 when
            // the entry is not found (the locks reader then says so).
            let sync_block_cache = table
                .slot_of(&target, global("SyncTableEntries")?)
                .and_then(|slot| {
                    let after = if windows {
                        anchors.sync_block_cache_after_sync_table_windows
                    } else {
                        anchors.sync_block_cache_after_sync_table_unix
                    };
                    table.entry_after(&target, slot, after)
                })
                .and_then(|a| target.read_u64(a).ok())
                .unwrap_or(0);
            // The table itself: the export, else where the ThreadStore entry's index puts its
            // start (g_codeRangeMap is its first entry on 8.0 and 9.0).
            let table_start = dac_export
                .unwrap_or_else(|| table.slot.wrapping_sub(8 * anchors.thread_store_index));
            let (app_domain, missing) = app_domain_or_missing(&target, deref("AppDomain"))?;
            app_domain_missing = missing;
            Globals {
                dac_table: table_start,
                thread_store: deref("ThreadStore")?,
                finalizer_thread: deref("FinalizerThread")?,
                heap_type: target
                    .read_u32(heap_type_addr)
                    .map_err(|_| ClrError::read("g_heap_type", heap_type_addr))?,
                gc_dac_vars: target
                    .read_u64(gc_dac_globals_addr)
                    .map_err(|_| ClrError::read("g_gcDacGlobals", gc_dac_globals_addr))?,
                app_domain,
                // .NET 9's descriptor lacks it: g_dacTable's entry after AppDomain's
                // (dacvars.h declares SystemDomain::m_pSystemDomain right after
                // AppDomain::m_pTheAppDomain, .NET 8's indices 21 and 22); checked by
                // tests/tests/sos_domain.rs (SOS's System Domain address on the 9.0.22 dumps).
                system_domain: d
                    .global_number("SystemDomain")
                    .or_else(|| {
                        table.entry_after(
                            &target,
                            table.slot,
                            anchors.app_domain_after_thread_store + 1,
                        )
                    })
                    .and_then(|a| target.read_u64(a).ok())
                    .unwrap_or(0),
                global_alloc_context,
                object_mt: deref("ObjectMethodTable")?,
                string_mt: deref("StringMethodTable")?,
                object_array_mt: deref("ObjectArrayMethodTable")?,
                exception_mt: deref("ExceptionMethodTable")?,
                free_mt: deref("FreeObjectMethodTable")?,
                sync_table: deref("SyncTableEntries")?,
                // The descriptor's (10), else g_dacTable's first entry (9).
                code_range_map: d
                    .global_number("ExecutionManagerCodeRangeMapAddress")
                    .or_else(|| {
                        table.entry_after(&target, table_start, anchors.code_range_map_index)
                    })
                    .unwrap_or(0),
                // Not read on this family yet (their capabilities are refused).
                card_table: 0,
                lowest_address: 0,
                highest_address: 0,
                gc_heap: 0,
                array_mt: 0,
                sync_block_cache,
                ee_jit_manager: 0,
                ready_to_run_jit_manager: 0,
                gc: GcGlobals::default(),
                continuation_mt: 0,
            }
        };
        let image_search = ImageSearch::for_options(&target, opts);
        let mut rt = Runtime {
            mem: target,
            info,
            layout,
            layout_source,
            options: opts.clone(),
            globals,
            image_search,
            dump_problems: Vec::new(),
            unread_files: Default::default(),
            descriptor: Some(std::sync::Arc::new(d)),
            dac_revision: layout::DacTableRevision::AS_NUMBERED,
            app_domain_missing,
            unchecked: Vec::new(),
        };
        rt.unchecked = rt.sanity_check()?;
        // The global allocation context must be empty or a range (a wrong anchor reads
        // something else).
        let m = rt.memory();
        let gac = rt.globals.global_alloc_context + rt.layout.global_alloc_context_offset;
        let acl = rt.layout.alloc_context;
        let (p, lim) = (
            m.read_u64(gac + acl.alloc_ptr)
                .map_err(|_| ClrError::read("g_global_alloc_context", gac))?,
            m.read_u64(gac + acl.alloc_limit)
                .map_err(|_| ClrError::read("g_global_alloc_context", gac))?,
        );
        if p > lim || (p == 0) != (lim == 0) {
            return Err(ClrError::SanityCheck {
                version: rt.info.version.clone(),
                detail: format!(
                    "g_global_alloc_context at {gac:#x} reads ({p:#x}, {lim:#x}): not an \
                     allocation range"
                ),
            });
        }
        Ok(rt)
    }

    /// The contract descriptor the runtime published (.NET 9+), as read at discovery.
    pub fn descriptor(&self) -> Option<&crate::discovery::descriptor::ContractDescriptor> {
        self.descriptor.as_deref()
    }

    /// The AppDomain (the value of `AppDomain::m_pTheAppDomain`); or, when the runtime was read
    /// without it (the page holding the global is not in the dump), why: what needs it (the
    /// loaded assemblies, code versions) is refused with that reason.
    pub fn app_domain(&self) -> Result<u64> {
        match &self.app_domain_missing {
            None => Ok(self.globals.app_domain),
            Some(e) => Err(e.clone()),
        }
    }

    /// What the runtime was read without, when it was (a degraded runtime: the AppDomain of a
    /// createdump dump made without the DAC), with the load-time checks its absent memory
    /// skipped: said once by `info` and `eeversion`.
    pub fn degraded(&self) -> Option<String> {
        let e = self.app_domain_missing.as_ref()?;
        Some(if self.unchecked.is_empty() {
            e.to_string()
        } else {
            format!(
                "{e}; not checked at load, not in the dump either: {}",
                self.unchecked.join(", ")
            )
        })
    }

    /// `Ok` when `capability` has been verified against the DAC for this runtime's family;
    /// else [`ClrError::NotVerified`] naming the capability and the runtime. Every reader of a
    /// family-specific structure asks first (see [`crate::discovery::layout::Capability`]).
    pub fn require(&self, capability: crate::discovery::layout::Capability) -> Result<()> {
        if self.layout.verified.contains(&capability) {
            Ok(())
        } else {
            Err(ClrError::NotVerified {
                runtime: format!("{} ({}-x64)", self.info.display_name(), self.info.os),
                capability: capability.describe(),
            })
        }
    }

    /// The memory this runtime reads.
    pub fn memory(&self) -> &M {
        &self.mem
    }

    /// The address of the global at `index` of g_dacTable. .NET 8 stores absolute addresses;
    /// a value outside the runtime image is taken as an RVA (as .NET Core 3.1 on Linux did).
    /// `index` is in the layout's numbering; this build's own index follows from
    /// [`layout::DacTableRevision`].
    pub fn dac_global_address(&self, index: usize) -> Result<u64> {
        let index = self.dac_revision.index(index);
        // An index no family knows (a table's "not known" marker) is refused, never wrapped.
        let slot = (index as u64)
            .checked_mul(8)
            .and_then(|o| self.globals.dac_table.checked_add(o))
            .ok_or_else(|| {
                ClrError::corrupt(
                    "g_dacTable index",
                    self.globals.dac_table,
                    format!("index {index} is not known for this runtime"),
                )
            })?;
        let v = self
            .mem
            .read_u64(slot)
            .map_err(|_| ClrError::read(format!("g_dacTable[{index}]"), slot))?;
        let (base, end) = (self.info.base, self.info.base + self.info.size);
        if v >= base && v < end {
            Ok(v)
        } else if v < self.info.size {
            Ok(base + v)
        } else {
            Err(ClrError::corrupt(
                format!("g_dacTable[{index}]"),
                slot,
                format!(
                    "{v:#x} is neither inside the runtime image {base:#x}..{end:#x} nor an RVA"
                ),
            ))
        }
    }

    fn read_global_ptr(&self, index: usize, what: &str) -> Result<u64> {
        let a = self.dac_global_address(index)?;
        self.mem.read_u64(a).map_err(|_| ClrError::read(what, a))
    }

    fn resolve_globals(&mut self, _module: &ModuleInfo) -> Result<()>
    where
        M: Target,
    {
        let d = self.layout.dac;
        let (app_domain, app_domain_missing) = app_domain_or_missing(
            &self.mem,
            self.read_global_ptr(d.app_domain, "AppDomain::m_pTheAppDomain"),
        )?;
        self.app_domain_missing = app_domain_missing;
        let g = Globals {
            dac_table: self.globals.dac_table,
            thread_store: self.read_global_ptr(d.thread_store, "ThreadStore::s_pThreadStore")?,
            finalizer_thread: self.read_global_ptr(d.finalizer_thread, "g_pFinalizerThread")?,
            heap_type: {
                let a = self.dac_global_address(d.heap_type)?;
                self.mem
                    .read_u32(a)
                    .map_err(|_| ClrError::read("g_heap_type", a))?
            },
            gc_dac_vars: self.read_global_ptr(d.gc_dac_globals, "g_gcDacGlobals")?,
            app_domain,
            // Read by nothing yet (as on .NET 9 and 10, where it is optional): 0 when its page
            // is absent as the AppDomain's is.
            system_domain: app_domain_or_missing(
                &self.mem,
                self.read_global_ptr(d.system_domain, "SystemDomain::m_pSystemDomain"),
            )?
            .0,
            card_table: self.read_global_ptr(d.card_table, "g_card_table")?,
            lowest_address: self.read_global_ptr(d.lowest_address, "g_lowest_address")?,
            highest_address: self.read_global_ptr(d.highest_address, "g_highest_address")?,
            global_alloc_context: self.dac_global_address(d.global_alloc_context)?,
            gc_heap: self.read_global_ptr(d.gc_heap, "g_pGCHeap")?,
            object_mt: self.read_global_ptr(d.object_class, "g_pObjectClass")?,
            string_mt: self.read_global_ptr(d.string_class, "g_pStringClass")?,
            array_mt: self.read_global_ptr(d.array_class, "g_pArrayClass")?,
            object_array_mt: {
                // g_pPredefinedArrayTypes[ELEMENT_TYPE_OBJECT = 0x1c] is a TypeHandle of the
                // ArrayTypeDesc-free MT Object[].
                let a = self.dac_global_address(d.predefined_array_types)? + 0x1c * 8;
                self.mem
                    .read_u64(a)
                    .map_err(|_| ClrError::read("g_pPredefinedArrayTypes[OBJECT]", a))?
            },
            exception_mt: self.read_global_ptr(d.exception_class, "g_pExceptionClass")?,
            free_mt: self
                .read_global_ptr(d.free_object_method_table, "g_pFreeObjectMethodTable")?,
            sync_table: self.read_global_ptr(d.sync_table, "g_pSyncTable")?,
            sync_block_cache: self
                .read_global_ptr(d.sync_block_cache, "SyncBlockCache::s_pSyncBlockCache")?,
            code_range_map: self.dac_global_address(d.code_range_map)?,
            ee_jit_manager: self
                .read_global_ptr(d.ee_jit_manager, "ExecutionManager::m_pEEJitManager")?,
            ready_to_run_jit_manager: self.read_global_ptr(
                d.ready_to_run_jit_manager,
                "ExecutionManager::m_pReadyToRunJitManager",
            )?,
            gc: GcGlobals::default(),
            continuation_mt: 0,
        };
        self.globals = g;
        Ok(())
    }

    /// The load-time checks of the layout against the runtime's own structures. A runtime read
    /// without its AppDomain ([`Runtime::degraded`]: createdump wrote neither the host's data
    /// page nor the loader heap's pages) may lack the structures checked: each check whose
    /// memory is absent is then skipped and returned, said with the degradation; on any other
    /// runtime it refuses, and content that is there and wrong always refuses.
    fn sanity_check(&self) -> Result<Vec<String>> {
        let tolerate_absent = self.app_domain_missing.is_some();
        let skipped = std::cell::RefCell::new(Vec::new());
        let fail = |detail: String| ClrError::SanityCheck {
            version: self.info.version.clone(),
            detail,
        };
        let g = &self.globals;
        let mtl = &self.layout.method_table;
        let read_mt = |mt: u64, what: &str| -> Result<Option<(u32, u32)>> {
            match (
                self.mem.read_u32(mt + mtl.flags),
                self.mem.read_u32(mt + mtl.base_size),
            ) {
                (Ok(flags), Ok(base)) => Ok(Some((flags, base))),
                _ if tolerate_absent => {
                    skipped
                        .borrow_mut()
                        .push(format!("{what}'s MethodTable at {mt:#x}"));
                    Ok(None)
                }
                _ => Err(fail(format!(
                    "{what} MethodTable {mt:#x} is not in the dump"
                ))),
            }
        };
        if let Some((sf, sb)) = read_mt(g.string_mt, "g_pStringClass")?.filter(|&(sf, sb)| {
            sb != self.layout.string_base_size
                || sf & layout::mt_flags::HAS_COMPONENT_SIZE == 0
                || sf & 0xFFFF != 2
        }) {
            return Err(fail(format!(
                "String's MethodTable {:#x} has BaseSize {sb:#x} and flags {sf:#x}; expected \
                 BaseSize {:#x} with component size 2",
                g.string_mt, self.layout.string_base_size
            )));
        }
        if let Some((ff, fb)) =
            read_mt(g.free_mt, "g_pFreeObjectMethodTable")?.filter(|&(ff, fb)| {
                ff & layout::mt_flags::HAS_COMPONENT_SIZE == 0 || ff & 0xFFFF != 1 || fb != 0x18
            })
        {
            return Err(fail(format!(
                "the free-object MethodTable {:#x} has BaseSize {fb:#x} and flags {ff:#x}; \
                 expected BaseSize 0x18 with component size 1",
                g.free_mt
            )));
        }
        if let Some((of, ob)) = read_mt(g.object_mt, "g_pObjectClass")?
            .filter(|&(of, ob)| of & layout::mt_flags::HAS_COMPONENT_SIZE != 0 || ob != 0x18)
        {
            return Err(fail(format!(
                "Object's MethodTable {:#x} has BaseSize {ob:#x} and flags {of:#x}; expected \
                 BaseSize 0x18 without component size",
                g.object_mt
            )));
        }
        if let Some((af, _)) = read_mt(g.object_array_mt, "Object[]")?.filter(|&(af, _)| {
            af & layout::mt_flags::CATEGORY_ARRAY_MASK != layout::mt_flags::CATEGORY_ARRAY
                || af & 0xFFFF != 8
        }) {
            return Err(fail(format!(
                "Object[]'s MethodTable {:#x} has flags {af:#x}; expected an array with \
                 component size 8",
                g.object_array_mt
            )));
        }
        if g.heap_type != 1 && g.heap_type != 2 {
            return Err(fail(format!(
                "g_heap_type is {}; expected 1 (workstation) or 2 (server)",
                g.heap_type
            )));
        }
        // .NET 11: the GC's sub-descriptor (checked when it was merged) stands for GcDacVars.
        if let layout::GcSource::Descriptor(_) = self.layout.gc_source {
            return Ok(skipped.into_inner());
        }
        let gv = &self.layout.gc_dac_vars;
        let major = match self.mem.read_u8(g.gc_dac_vars + gv.major_version) {
            Ok(m) => m,
            Err(_) if tolerate_absent => {
                let mut skipped = skipped.into_inner();
                skipped.push(format!("GcDacVars at {:#x}", g.gc_dac_vars));
                return Ok(skipped);
            }
            Err(_) => {
                return Err(fail(format!(
                    "GcDacVars at {:#x} is not in the dump",
                    g.gc_dac_vars
                )))
            }
        };
        if major != gv.major {
            return Err(fail(format!(
                "GcDacVars at {:#x} has major version {major}; this layout reads {}",
                g.gc_dac_vars, gv.major
            )));
        }
        Ok(skipped.into_inner())
    }

    /// Workstation or server GC.
    pub fn gc_mode(&self) -> GcMode {
        if self.globals.heap_type == 2 {
            GcMode::Server
        } else {
            GcMode::Workstation
        }
    }
}

/// The refusal of a runtime whose version nothing tells: what each source lacked (`as_net8`:
/// why the .NET 8 layout, tried on it, failed its checks), and what would serve.
fn unknown_version<T: Target + ?Sized>(
    target: &T,
    module: &ModuleInfo,
    info: &RuntimeInfo,
    opts: &DiscoverOptions,
    as_net8: Option<ClrError>,
) -> ClrError {
    let mut tried = vec![SourceTried {
        from: LayoutFrom::Dump,
        why: format!(
            "no version text in the pages of {} the dump holds, no Microsoft.NETCore.App \
             version folder in its path, and {}",
            info.module_name,
            match as_net8 {
                Some(e) => format!("the .NET 8 layout tried on it fails: {e}"),
                None => "CoreLib's metadata names no version".into(),
            }
        ),
    }];
    if opts.build_index {
        if let Err(miss) = index::build_of(module, index_kinds(info.host)) {
            tried.push(SourceTried {
                from: LayoutFrom::BuildIndex,
                why: miss.to_string(),
            });
        }
    }
    if opts.files {
        tried.push(SourceTried {
            from: LayoutFrom::ImageFile,
            why: match target.module_image(module) {
                Ok(i) => format!("no version text read ({})", i.note),
                Err(e) => format!("none found ({e})"),
            },
        });
        if opts.symbol_server.is_none() {
            tried.push(SourceTried {
                from: LayoutFrom::SymbolServer,
                why: "none given (--symbol-server URL, or DUMPSHELL_SYMBOL_SERVER)".into(),
            });
        } else {
            tried.push(SourceTried {
                from: LayoutFrom::SymbolServer,
                why: "no version text read from its file of the module's identity (or none \
                      served)"
                    .into(),
            });
        }
    }
    ClrError::NoLayout {
        runtime: format!("{} at {:#x}", info.module_name, info.base),
        what: "the runtime's version",
        tried,
        needed: layout_needed(info, module, opts),
    }
}

/// What would serve when a runtime's layout is found nowhere: the sources not yet used.
fn layout_needed(info: &RuntimeInfo, module: &ModuleInfo, opts: &DiscoverOptions) -> String {
    let id = module
        .identity
        .as_ref()
        .map_or_else(|| "its build".to_string(), |i| i.to_string());
    let file = format!(
        "the runtime's own {} ({id}) in a folder given with --image-path",
        info.module_name
    );
    if opts.files && opts.symbol_server.is_none() {
        format!("{file}, or a symbol server serving it (--symbol-server URL)")
    } else if opts.files {
        file
    } else {
        format!("{file} (image files are not read in this session)")
    }
}

/// Where g_dacTable is (.NET 8), and from which source: the export in the dump's symbol table;
/// the index's RVA for the module's exact build; the export of an identity-checked image file;
/// a search of the dump's memory for the one table whose entries lead to String's, Object's and
/// Free's MethodTables.
fn find_dac_table<T: Target + ?Sized>(
    target: &T,
    module: &ModuleInfo,
    info: &RuntimeInfo,
    layout: &Layout,
    opts: &DiscoverOptions,
) -> Result<(u64, LayoutSource)> {
    const WHAT: &str = "g_dacTable";
    let source = |from, detail: String| LayoutSource {
        what: WHAT,
        from,
        detail,
    };
    let mut tried = Vec::new();
    let img = target.module_image(module);
    match &img {
        Ok(img) if img.source == dumpreader::ImageSource::DumpMemory => {
            if let Some(a) = img.find_export(WHAT) {
                return Ok((a, source(LayoutFrom::Dump, "its export".into())));
            }
            tried.push(SourceTried {
                from: LayoutFrom::Dump,
                why: format!("no {WHAT} export in the symbol table the dump holds"),
            });
        }
        Ok(_) => tried.push(SourceTried {
            from: LayoutFrom::Dump,
            why: "the symbol table's pages are not in the dump".into(),
        }),
        Err(e) => tried.push(SourceTried {
            from: LayoutFrom::Dump,
            why: format!("the module's image: {e}"),
        }),
    }
    if opts.build_index {
        match index::build_of(module, index_kinds(info.host)) {
            Ok(b) => match b.export(WHAT) {
                Some(rva) => {
                    return Ok((
                        module.base.wrapping_add(rva),
                        source(LayoutFrom::BuildIndex, index::describe(b)),
                    ))
                }
                None => tried.push(SourceTried {
                    from: LayoutFrom::BuildIndex,
                    why: format!("{} exports no {WHAT}", index::describe(b)),
                }),
            },
            Err(miss) => tried.push(SourceTried {
                from: LayoutFrom::BuildIndex,
                why: miss.to_string(),
            }),
        }
    }
    if opts.files {
        match &img {
            Ok(img) => match &img.source {
                dumpreader::ImageSource::File(path) => match img.find_export(WHAT) {
                    Some(a) => {
                        return Ok((
                            a,
                            source(
                                LayoutFrom::ImageFile,
                                format!("the export of {}", path.display()),
                            ),
                        ))
                    }
                    None => tried.push(SourceTried {
                        from: LayoutFrom::ImageFile,
                        why: format!("{} exports no {WHAT}", path.display()),
                    }),
                },
                dumpreader::ImageSource::DumpMemory => tried.push(SourceTried {
                    from: LayoutFrom::ImageFile,
                    why: format!("none found ({})", img.note),
                }),
            },
            Err(e) => tried.push(SourceTried {
                from: LayoutFrom::ImageFile,
                why: format!("none found ({e})"),
            }),
        }
    }
    if let Some(f) = from_symbol_server(module, opts, &mut tried) {
        match f.image.find_export(WHAT) {
            Some(a) => return Ok((a, source(LayoutFrom::SymbolServer, fetched_detail(&f)))),
            None => tried.push(SourceTried {
                from: LayoutFrom::SymbolServer,
                why: format!("{} exports no {WHAT}", f.url),
            }),
        }
    }
    if let Some(a) = scan_for_dac_table(target, module, layout) {
        return Ok((
            a,
            source(
                LayoutFrom::Dump,
                "found by its entries (the one table in the image leading to String's, \
                 Object's and Free's MethodTables)"
                    .into(),
            ),
        ));
    }
    tried.push(SourceTried {
        from: LayoutFrom::Dump,
        why: "no table in the image the dump holds leads to String's, Object's and Free's \
              MethodTables"
            .into(),
    });
    Err(ClrError::NoLayout {
        runtime: format!(
            "{} ({} at {:#x})",
            info.display_name(),
            info.module_name,
            info.base
        ),
        what: WHAT,
        tried,
        needed: layout_needed(info, module, opts),
    })
}

/// The runtime's contract descriptor (.NET 9 and later), and from which source: the dump's
/// memory (the export, else the one header in the image's extent); the build index, by the
/// module's exact identity, its bytes standing in for the pages the dump lacks
/// ([`index::IndexOverlay`]); the runtime's image file dumpreader matched by build id.
fn find_descriptor<T: Target + ?Sized>(
    target: &T,
    module: &ModuleInfo,
    info: &RuntimeInfo,
    opts: &DiscoverOptions,
    runtime: &str,
) -> Result<(
    crate::discovery::descriptor::ContractDescriptor,
    LayoutSource,
)> {
    use crate::discovery::descriptor::{self as desc, DescriptorError};
    const WHAT: &str = LayoutSource::DESCRIPTOR;
    let desc_err = |detail: String| ClrError::Descriptor {
        runtime: runtime.to_owned(),
        detail,
    };
    let source = |from, detail: String| LayoutSource {
        what: WHAT,
        from,
        detail,
    };
    let mut tried = Vec::new();
    let img = target.module_image(module);
    let in_dump = img
        .as_ref()
        .is_ok_and(|i| i.source == dumpreader::ImageSource::DumpMemory);
    // The dump's memory: the export, when the dump (or, files allowed, an image file) holds
    // the symbol table; else the one header in the runtime image (createdump saves .data but
    // rarely .dynsym's pages). The bytes read are the dump's either way.
    let export = img
        .as_ref()
        .ok()
        .filter(|_| in_dump || opts.files)
        .and_then(|i| i.find_export(desc::EXPORT_NAME));
    let (img_start, img_end) = image_range(target, module);
    let from_dump = match export {
        Some(at) => match desc::read_at(target, at) {
            Ok(d) => Some((d, "its export")),
            // The export is known but its pages are not in the dump.
            Err(DescriptorError::Read { what, addr }) => {
                tried.push(SourceTried {
                    from: LayoutFrom::Dump,
                    why: format!(
                        "{} exports it at {at:#x}, but {what} at {addr:#x} is not in the dump \
                         (createdump does not save those pages)",
                        info.module_name
                    ),
                });
                None
            }
            Err(e) => return Err(desc_err(e.to_string())),
        },
        None => match desc::find_in_image(target, img_start, img_end)
            .map_err(|e| desc_err(e.to_string()))?
        {
            Some(d) => Some((d, "the one header in the runtime image")),
            None => {
                tried.push(SourceTried {
                    from: LayoutFrom::Dump,
                    why: format!(
                        "no {} header in the pages of {} the dump holds (createdump does not \
                         save them), and its export table is not in the dump",
                        desc::EXPORT_NAME,
                        info.module_name
                    ),
                });
                None
            }
        },
    };
    if let Some((d, how)) = from_dump {
        return Ok((d, source(LayoutFrom::Dump, how.into())));
    }
    // The build index: the image's bytes of the exact build, standing in for the pages the
    // dump lacks; what only the process wrote (a sub-descriptor slot in .bss) from the dump.
    if opts.build_index {
        match index::build_of(module, index_kinds(info.host)) {
            Ok(b) => match b.main_descriptor() {
                Some(main) => {
                    let overlay = index::IndexOverlay::new(target, b, module.base);
                    let d = desc::read_at(&overlay, module.base.wrapping_add(main.rva)).map_err(
                        |e| {
                            desc_err(format!(
                                "{e} (from the build index: {})",
                                index::describe(b)
                            ))
                        },
                    )?;
                    return Ok((d, source(LayoutFrom::BuildIndex, index::describe(b))));
                }
                // A .NET 9 single-file host: its release's libcoreclr.so descriptor, the
                // globals through its own g_dacTable.
                None => match descriptor_through_dac_table(target, module, info, b) {
                    Ok((d, detail)) => return Ok((d, source(LayoutFrom::BuildIndex, detail))),
                    Err(why) => tried.push(SourceTried {
                        from: LayoutFrom::BuildIndex,
                        why: format!("{} has no {}{why}", index::describe(b), desc::EXPORT_NAME),
                    }),
                },
            },
            Err(miss) => tried.push(SourceTried {
                from: LayoutFrom::BuildIndex,
                why: miss.to_string(),
            }),
        }
    }
    // The runtime's image file, when dumpreader found one whose build id matches the dump's.
    if opts.files {
        match &img {
            Ok(i) => match (&i.source, &i.format) {
                (dumpreader::ImageSource::File(path), ImageFormat::Elf(e)) => {
                    match (
                        i.find_export(desc::EXPORT_NAME),
                        desc::ElfFileOverlay::new(target, path, e.load_bias),
                    ) {
                        (Some(at), Some(overlay)) => {
                            let d = desc::read_at(&overlay, at)
                                .map_err(|e| desc_err(format!("{e} (from {})", path.display())))?;
                            return Ok((
                                d,
                                source(
                                    LayoutFrom::ImageFile,
                                    format!("{} ({})", path.display(), i.note),
                                ),
                            ));
                        }
                        _ => tried.push(SourceTried {
                            from: LayoutFrom::ImageFile,
                            why: format!("{} has no such export", path.display()),
                        }),
                    }
                }
                _ => tried.push(SourceTried {
                    from: LayoutFrom::ImageFile,
                    why: format!("none found ({})", i.note),
                }),
            },
            Err(e) => tried.push(SourceTried {
                from: LayoutFrom::ImageFile,
                why: format!("none found ({e})"),
            }),
        }
    }
    // A symbol server's file of the module's identity.
    if let Some(f) = from_symbol_server(module, opts, &mut tried) {
        match &f.image.format {
            ImageFormat::Elf(e) => match (
                f.image.find_export(desc::EXPORT_NAME),
                desc::ElfFileOverlay::new(target, &f.path, e.load_bias),
            ) {
                (Some(at), Some(overlay)) => {
                    let d = desc::read_at(&overlay, at)
                        .map_err(|e| desc_err(format!("{e} (from {})", f.url)))?;
                    return Ok((d, source(LayoutFrom::SymbolServer, fetched_detail(&f))));
                }
                _ => tried.push(SourceTried {
                    from: LayoutFrom::SymbolServer,
                    why: format!("{} has no {} export", f.url, desc::EXPORT_NAME),
                }),
            },
            ImageFormat::Pe(_) => tried.push(SourceTried {
                from: LayoutFrom::SymbolServer,
                why: format!(
                    "{}: a PE file's descriptor is not read from a file yet (only from the \
                     dump's memory or the build index)",
                    f.url
                ),
            }),
        }
    }
    Err(ClrError::NoLayout {
        runtime: format!("{runtime}, {} at {:#x}", info.module_name, info.base),
        what: "the contract descriptor (.NET 9 and later are read only through it)",
        tried,
        needed: layout_needed(info, module, opts),
    })
}

/// Why a runtime image without a contract descriptor of its own got none through its
/// `g_dacTable` ([`descriptor_through_dac_table`]). Displayed as a clause that follows "has no
/// DotNetRuntimeContractDescriptor".
#[derive(Debug, Clone, PartialEq, Eq)]
enum DacTableMiss {
    /// No map of the family's descriptor globals to table entries is known (only .NET 9's
    /// Linux single-file host needs one).
    NoMap,
    /// The index holds no `DotNetRuntimeInfo` of the host.
    NoRuntimeInfo,
    /// The libcoreclr.so the host's `DotNetRuntimeInfo` names is not indexed.
    RuntimeNotIndexed { id: String },
    /// The named libcoreclr.so is of another build than the host.
    OtherBuild {
        runtime: String,
        runtime_build: String,
        host_build: String,
    },
    /// The named libcoreclr.so publishes no descriptor either.
    NoDescriptor { runtime: String },
    /// The host exports no g_dacTable.
    NoTable { host: String },
    /// A table of another length than the map's: another order.
    TableLength {
        host: u64,
        runtime: String,
        runtime_entries: u64,
        known: u64,
        family: layout::Family,
    },
    /// The libcoreclr.so descriptor does not parse.
    Descriptor {
        runtime: String,
        error: crate::discovery::descriptor::DescriptorError,
    },
    /// The descriptor names an indirect global the map lacks.
    Unmapped {
        runtime: String,
        global: String,
        family: layout::Family,
    },
    /// The table entry is not in the dump.
    EntryAbsent {
        index: u64,
        var: &'static str,
        slot: u64,
    },
    /// The table entry holds no address in the host.
    NotAnAddress {
        index: u64,
        var: &'static str,
        slot: u64,
        value: u64,
        module: String,
        start: u64,
        end: u64,
    },
}

impl std::fmt::Display for DacTableMiss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DacTableMiss::NoMap => Ok(()),
            DacTableMiss::NoRuntimeInfo => f.write_str(
                "; its DotNetRuntimeInfo (naming its release's libcoreclr.so) is not indexed",
            ),
            DacTableMiss::RuntimeNotIndexed { id } => write!(
                f,
                "; the libcoreclr.so its DotNetRuntimeInfo names ({id}) is not among the indexed \
                 builds, so no descriptor of its release is known"
            ),
            DacTableMiss::OtherBuild {
                runtime,
                runtime_build,
                host_build,
            } => write!(
                f,
                "; its DotNetRuntimeInfo names {runtime}, of another build ({runtime_build}; the \
                 host {host_build})"
            ),
            DacTableMiss::NoDescriptor { runtime } => write!(f, "; {runtime} has none either"),
            DacTableMiss::NoTable { host } => write!(f, "; {host} exports no g_dacTable"),
            DacTableMiss::TableLength {
                host,
                runtime,
                runtime_entries,
                known,
                family,
            } => write!(
                f,
                "; its g_dacTable has {host} entries and {runtime}'s {runtime_entries}, not the \
                 {known} whose order is known for {family:?}"
            ),
            DacTableMiss::Descriptor { runtime, error } => {
                write!(f, "; {runtime}'s descriptor: {error}")
            }
            DacTableMiss::Unmapped {
                runtime,
                global,
                family,
            } => write!(
                f,
                "; {runtime}'s descriptor names the global {global}, whose g_dacTable entry is \
                 not known for {family:?}"
            ),
            DacTableMiss::EntryAbsent { index, var, slot } => write!(
                f,
                "; its g_dacTable entry {index} ({var}) at {slot:#x} is not in the dump"
            ),
            DacTableMiss::NotAnAddress {
                index,
                var,
                slot,
                value,
                module,
                start,
                end,
            } => write!(
                f,
                "; its g_dacTable entry {index} ({var}) at {slot:#x} holds {value:#x}, not an \
                 address in {module} ({start:#x}..{end:#x})"
            ),
        }
    }
}

/// The contract descriptor of a runtime image that publishes none but holds `g_dacTable` (the
/// .NET 9 single-file host of Linux): the descriptor of the libcoreclr.so its own
/// `DotNetRuntimeInfo` names (the runtime pack's module of the same release, by exact
/// identity in the build index), with each indirect global's address read from the image's
/// own table, filled by the process, at the entry the family's map gives
/// ([`crate::discovery::supplement::dac_table_globals_of`]); with where it came from.
fn descriptor_through_dac_table<T: Target + ?Sized>(
    target: &T,
    module: &ModuleInfo,
    info: &RuntimeInfo,
    host: &'static index::Build,
) -> std::result::Result<(crate::discovery::descriptor::ContractDescriptor, String), DacTableMiss> {
    use crate::discovery::descriptor as desc;
    use crate::discovery::supplement;
    let windows = matches!(target.info().os, Os::Windows);
    let map = info
        .major()
        .and_then(supplement::family_of_major)
        .and_then(|f| supplement::dac_table_globals_of(f, windows))
        .filter(|_| host.kind.is_single_file_host())
        .ok_or(DacTableMiss::NoMap)?;
    let ri = host
        .runtime_info
        .as_ref()
        .ok_or(DacTableMiss::NoRuntimeInfo)?;
    let id = buildindex::Identity::ElfBuildId(&ri.runtime_module_index);
    let rb = buildindex::lookup(id)
        .ok()
        .flatten()
        .filter(|rb| rb.kind == index::ModuleKind::LibCoreClr)
        .ok_or_else(|| DacTableMiss::RuntimeNotIndexed { id: id.to_string() })?;
    if (rb.file_version.as_str(), rb.commit.as_str())
        != (host.file_version.as_str(), host.commit.as_str())
    {
        return Err(DacTableMiss::OtherBuild {
            runtime: index::describe(rb),
            runtime_build: format!("{} {}", rb.file_version, rb.commit),
            host_build: format!("{} {}", host.file_version, host.commit),
        });
    }
    let main = rb
        .main_descriptor()
        .ok_or_else(|| DacTableMiss::NoDescriptor {
            runtime: index::describe(rb),
        })?;
    let table_of = |b: &index::Build| {
        b.exports
            .iter()
            .find(|e| e.name == "g_dacTable")
            .map(|e| (e.rva, e.size))
    };
    let (table_rva, host_size) = table_of(host).ok_or_else(|| DacTableMiss::NoTable {
        host: index::describe(host),
    })?;
    let rb_size = table_of(rb).map_or(0, |t| t.1);
    if host_size != 8 * map.entries || rb_size != 8 * map.entries {
        return Err(DacTableMiss::TableLength {
            host: host_size / 8,
            runtime: index::describe(rb),
            runtime_entries: rb_size / 8,
            known: map.entries,
            family: map.family,
        });
    }
    let bad_json = |error| DacTableMiss::Descriptor {
        runtime: index::describe(rb),
        error,
    };
    // Which pointer_data index each indirect global uses: the JSON read with pointer_data
    // holding its own indices.
    let n = main.pointer_data.len();
    let own: Vec<u64> = (0..n as u64).collect();
    let shape = desc::parse(main.json_text().as_bytes(), &own).map_err(bad_json)?;
    let table = module.base.wrapping_add(table_rva);
    let image_end = module.base.wrapping_add(host.image_size);
    let mut pointer_data = vec![0u64; n];
    for (name, g) in &shape.globals {
        let desc::GlobalValue::Number(k) = g.value else {
            continue;
        };
        if !g.indirect {
            continue;
        }
        let e = map
            .globals
            .iter()
            .find(|e| e.global == name.as_str())
            .ok_or_else(|| DacTableMiss::Unmapped {
                runtime: index::describe(rb),
                global: name.clone(),
                family: map.family,
            })?;
        let slot = table.wrapping_add(8 * e.index);
        let v = target
            .read_u64(slot)
            .map_err(|_| DacTableMiss::EntryAbsent {
                index: e.index,
                var: e.dac_var,
                slot,
            })?;
        // The process stores addresses (an RVA is taken as one, as the anchors do).
        let addr = if v >= module.base && v < image_end {
            v
        } else if v != 0 && v < host.image_size {
            module.base.wrapping_add(v)
        } else {
            return Err(DacTableMiss::NotAnAddress {
                index: e.index,
                var: e.dac_var,
                slot,
                value: v,
                module: info.module_name.clone(),
                start: module.base,
                end: image_end,
            });
        };
        if let Some(p) = pointer_data.get_mut(k as usize) {
            *p = addr.wrapping_add(e.offset);
        }
    }
    let d = desc::parse(main.json_text().as_bytes(), &pointer_data).map_err(bad_json)?;
    Ok((
        d,
        format!(
            "the descriptor of {} (the release its DotNetRuntimeInfo names), its {} globals \
             through the g_dacTable of {}",
            index::describe(rb),
            map.globals.len(),
            index::describe(host)
        ),
    ))
}

/// .NET 11's globals, every one from its contract descriptor: the runtime's own and the GC's
/// (its sub-descriptor, merged): no g_dacTable. The GC flavour is the sub-descriptor's
/// `GCIdentifiers` ("workstation, regions, background," or "server, regions, background,
/// dynamic_heap": the runtime points its `GC` sub-descriptor slot at the one in use).
fn descriptor_globals<T: Target + ?Sized>(
    target: &T,
    d: &crate::discovery::descriptor::ContractDescriptor,
    runtime: &str,
) -> Result<Globals> {
    let missing = |name: &'static str| ClrError::MissingField {
        ty: "globals",
        field: name,
        runtime: runtime.to_owned(),
    };
    let global = |name: &'static str| d.global_number(name).ok_or_else(|| missing(name));
    let deref = |name: &'static str| -> Result<u64> {
        let a = global(name)?;
        target.read_u64(a).map_err(|_| ClrError::read(name, a))
    };
    let optional = |name: &'static str| -> u64 {
        d.global_number(name)
            .and_then(|a| target.read_u64(a).ok())
            .unwrap_or(0)
    };
    let gc_ids = d
        .global_str("GCIdentifiers")
        .ok_or_else(|| missing("GCIdentifiers"))?;
    let flavours: Vec<&str> = gc_ids.split(',').map(str::trim).collect();
    let heap_type = match (
        flavours.contains(&"workstation"),
        flavours.contains(&"server"),
    ) {
        (true, false) => 1,
        (false, true) => 2,
        _ => {
            return Err(ClrError::Descriptor {
                runtime: runtime.to_owned(),
                detail: format!(
                    "the GC's sub-descriptor says GCIdentifiers {gc_ids:?}: neither workstation \
                     nor server"
                ),
            })
        }
    };
    let gc_global = |name: &'static str| d.global_number(name).unwrap_or(0);
    Ok(Globals {
        dac_table: 0,
        thread_store: deref("ThreadStore")?,
        finalizer_thread: deref("FinalizerThread")?,
        heap_type,
        gc_dac_vars: 0,
        app_domain: deref("AppDomain")?,
        system_domain: optional("SystemDomain"),
        // The address of g_global_alloc_context (an ee_alloc_context), as on 9/10.
        global_alloc_context: global("GlobalAllocContext")?,
        object_mt: deref("ObjectMethodTable")?,
        string_mt: deref("StringMethodTable")?,
        object_array_mt: deref("ObjectArrayMethodTable")?,
        exception_mt: deref("ExceptionMethodTable")?,
        free_mt: deref("FreeObjectMethodTable")?,
        sync_table: deref("SyncTableEntries")?,
        code_range_map: global("ExecutionManagerCodeRangeMapAddress")?,
        card_table: 0,
        lowest_address: 0,
        highest_address: 0,
        gc_heap: 0,
        array_mt: 0,
        sync_block_cache: optional("SyncBlockCache"),
        ee_jit_manager: 0,
        ready_to_run_jit_manager: 0,
        gc: GcGlobals {
            generation_table: gc_global("GCHeapGenerationTable"),
            max_generation: gc_global("MaxGeneration"),
            ephemeral_heap_segment: gc_global("GCHeapEphemeralHeapSegment"),
            alloc_allocated: gc_global("GCHeapAllocAllocated"),
            finalize_queue: gc_global("GCHeapFinalizeQueue"),
            handle_table_map: gc_global("HandleTableMap"),
            num_heaps: gc_global("NumHeaps"),
            heaps: gc_global("Heaps"),
            oom_data: gc_global("GCHeapOomData"),
        },
        continuation_mt: optional("ContinuationMethodTable"),
    })
}

/// Finds g_dacTable without the symbol table: the only 8-aligned place in the runtime image
/// whose String, Object and Free entries are addresses inside the image holding pointers to
/// MethodTables of the right shape (String: base size 0x16, component size 2; Free: component
/// size 1; Object: base size 0x18). None when there is no such place or more than one.
/// The raw g_dacTable entries [`layout::DacTableRevision::detect`] looks at (0 where unreadable).
fn target_dac_probe<T: Target + ?Sized>(
    target: &T,
    dac_table: u64,
    layout: &Layout,
) -> layout::DacTableProbe {
    let at = layout.dac.revision_probe;
    let read = |i: usize| target.read_u64(dac_table + 8 * i as u64).unwrap_or(0);
    layout::DacTableProbe {
        before: read(at - 1),
        at: read(at),
        probe_index: at,
    }
}

/// The bytes of a runtime image's extent `start..end` as the dump holds them, read range by
/// range (absent pages stay zero, so they never match a search); `None` for an empty extent or
/// one over 256 MB (no runtime image is that large: a corrupt module list).
fn read_image_extent<T: Target + ?Sized>(target: &T, start: u64, end: u64) -> Option<Vec<u8>> {
    const MAX_IMAGE: u64 = 256 << 20;
    if end <= start || end - start > MAX_IMAGE {
        return None;
    }
    let mut bytes = vec![0u8; (end - start) as usize];
    let mut a = start;
    while a < end {
        let got = target.read(a, &mut bytes[(a - start) as usize..]);
        a = if got == 0 {
            (a | 0xFFF) + 1
        } else {
            a + got as u64
        };
    }
    Some(bytes)
}

fn scan_for_dac_table<T: Target + ?Sized>(
    target: &T,
    module: &ModuleInfo,
    layout: &Layout,
) -> Option<u64> {
    let (start, end) = image_range(target, module);
    let d = &layout.dac;
    let idx = [d.string_class, d.object_class, d.free_object_method_table];
    let span = 8 * (*idx.iter().max()? as u64 + 1);
    let bytes = read_image_extent(target, start, end)?;
    let q = |off: u64| -> Option<u64> {
        let o = off as usize;
        Some(u64::from_le_bytes(bytes.get(o..o + 8)?.try_into().ok()?))
    };
    let inside = |v: u64| v >= start && v < end && v.is_multiple_of(8);
    let mt_shape = |global: u64| -> Option<(u32, u32)> {
        let mt = target.read_u64(global).ok()?;
        let flags = target.read_u32(mt).ok()?;
        let base = target.read_u32(mt + 4).ok()?;
        Some((flags, base))
    };
    let mut found = None;
    let mut off = 0u64;
    while off + span <= end - start {
        let entries: Option<Vec<u64>> = idx.iter().map(|&i| q(off + 8 * i as u64)).collect();
        if let Some(e) = entries.filter(|e| e.iter().all(|&v| inside(v))) {
            let string_ok =
                mt_shape(e[0]).is_some_and(|(f, b)| b == 0x16 && f & 0x8000_FFFF == 0x8000_0002);
            let object_ok = string_ok && mt_shape(e[1]).is_some_and(|(_, b)| b == 0x18);
            let free_ok =
                object_ok && mt_shape(e[2]).is_some_and(|(f, _)| f & 0x8000_FFFF == 0x8000_0001);
            if free_ok {
                if found.is_some() {
                    return None; // ambiguous: refuse rather than guess
                }
                found = Some(start + off);
            }
        }
        off += 8;
    }
    found
}

/// A view of `g_dacTable` around adjacent entries the descriptor names (ThreadStore,
/// FinalizerThread, GCThread): from the export when the dump holds it, else found in the
/// runtime image.
struct DacTableView {
    /// Image extent, for telling absolute entries from RVAs.
    image: (u64, u64),
    /// The address of the first anchor's entry.
    slot: u64,
}

impl DacTableView {
    /// Entries searched from the export (g_dacTable has about 130-160 entries on .NET 9/10).
    const MAX_ENTRIES: u64 = 512;

    fn find<T: Target + ?Sized>(
        target: &T,
        image: (u64, u64),
        export: Option<u64>,
        run: &[u64],
    ) -> Option<DacTableView> {
        let (start, end) = image;
        if end <= start || run.is_empty() {
            return None;
        }
        let matches = |v: u64, want: u64| v == want || (v < end - start && start + v == want);
        let search = |from: u64, bytes: &[u8]| -> Option<u64> {
            let q = |o: usize| -> Option<u64> {
                Some(u64::from_le_bytes(bytes.get(o..o + 8)?.try_into().ok()?))
            };
            let mut found = None;
            let mut o = 0usize;
            while o + 8 * run.len() <= bytes.len() {
                if run
                    .iter()
                    .enumerate()
                    .all(|(i, &want)| q(o + 8 * i).is_some_and(|v| matches(v, want)))
                {
                    if found.is_some() {
                        return None; // ambiguous: refuse rather than guess
                    }
                    found = Some(from + o as u64);
                }
                o += 8;
            }
            found
        };
        let slot = match export {
            Some(t) => {
                let bytes = target.read_bytes(t, 8 * Self::MAX_ENTRIES as usize);
                search(t, &bytes)?
            }
            None => search(start, &read_image_extent(target, start, end)?)?,
        };
        Some(DacTableView { image, slot })
    }

    /// The global's address held `n` entries after `slot` (`n` wraps for entries before).
    fn entry_after<T: Memory + ?Sized>(&self, mem: &T, slot: u64, n: u64) -> Option<u64> {
        let v = mem.read_u64(slot.wrapping_add(n.wrapping_mul(8))).ok()?;
        self.absolute(v)
    }

    fn absolute(&self, v: u64) -> Option<u64> {
        let (start, end) = self.image;
        if v >= start && v < end {
            Some(v)
        } else if v < end - start {
            Some(start + v)
        } else {
            None
        }
    }

    /// The slot (within `MAX_ENTRIES` of the anchor) holding `global`'s address.
    fn slot_of<T: Memory + ?Sized>(&self, mem: &T, global: u64) -> Option<u64> {
        let from = self.slot.saturating_sub(8 * Self::MAX_ENTRIES / 4);
        let bytes = mem.read_bytes(from, 8 * Self::MAX_ENTRIES as usize);
        let mut found = None;
        for (i, c) in bytes.chunks_exact(8).enumerate() {
            let v = u64::from_le_bytes(c.try_into().ok()?);
            if self.absolute(v) == Some(global) {
                if found.is_some() {
                    return None;
                }
                found = Some(from + 8 * i as u64);
            }
        }
        found
    }
}
