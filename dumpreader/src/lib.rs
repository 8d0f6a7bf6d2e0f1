//! dumpreader: the lowest layer of dumpshell.
//!
//! Opens a Linux x86-64 ELF core (kernel, gdb `gcore`, .NET `createdump`) or a Windows
//! minidump and exposes one target: memory ([`Memory`]), threads with full x64 register
//! contexts, modules with identities, and parsed module images (symbols/exports, unwind table
//! locations). It knows nothing about the CLR.
//!
//! ```no_run
//! use dumpreader::{Dump, Memory};
//! let dump = Dump::open(std::path::Path::new("core.dmp")).unwrap();
//! for t in dump.threads() {
//!     println!("{} rip={:#x}", t.id, t.context.rip);
//! }
//! let word = dump.read_u64(dump.threads()[0].context.rsp).unwrap();
//! # let _ = word;
//! ```
//!
//! Files are memory-mapped and memory is served zero-copy from the mapping; `.zst` files are
//! decompressed once into a cache file. No input makes this crate panic: bad structures give an
//! [`Error`] naming the structure and its file offset, and recoverable problems are listed in
//! [`DumpInfo::warnings`].
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod backing;
mod bundle;
mod bytes;
mod check;
pub mod context;
mod elf;
mod elfmods;
mod error;
mod image;
pub mod json;
mod mdmp;
mod memory;
mod sparse;
mod types;

pub use backing::{FileSource, FileSourceState, FileVerdict, NoFile, Unanchored};
pub use bundle::{
    find_marker as find_bundle_marker, parse_manifest as parse_bundle_manifest,
    write_manifest as write_bundle_manifest, BundleEntry, BundleFileType, BundleManifest,
    BUNDLE_SIGNATURE,
};
pub use check::{Evidence, FileCheck, ImageGap, Refusal, Refusals};
pub use elfmods::{BundlePlacement, HostBundle};
pub use error::{Error, ReadError};
pub use image::{
    elf_file_symbols, file_identity, pe_identity, ElfFileSymbols, ElfImage, Export, ImageFormat,
    ImageSource, ModuleImage, PeImage, PeLayout, PeSection, ProgramHeader, Symbol,
};
pub use memory::{Memory, MemoryRange, Perms, SliceMemory, MAX_READ_BYTES};
pub use sparse::{copy_sparse, disk_usage};
pub use types::*;

use memory::{RawSegment, SegmentIndex};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// [`OpenOptions::cache_limit`]'s default: 32 GiB.
pub const DEFAULT_CACHE_LIMIT: u64 = 32 << 30;

/// Options for [`Dump::open_with`].
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// Where decompressed `.zst` dumps are cached (default: `$TMPDIR/dumpreader-cache`).
    pub cache_dir: Option<PathBuf>,
    /// The most bytes the cache may hold on disk (decompressed dumps are written sparse, their
    /// zero pages left as holes: [`copy_sparse`]): after a dump is decompressed into it, the entries
    /// opened least recently are deleted until the others fit (the new one is always kept).
    pub cache_limit: u64,
    /// Directories searched (by file name) for module image files when the dump lacks an
    /// image's pages; the module's own recorded path is tried last.
    pub image_search_path: Vec<PathBuf>,
    /// Refuse the dump at the first recoverable problem (segment outside the file, truncated
    /// note, bad optional stream) instead of recording it in [`DumpInfo::warnings`].
    pub strict: bool,
    /// Whether the bytes of an ELF `PT_LOAD` beyond `p_filesz` (up to `p_memsz`) read as
    /// zeros (true, the ELF rule and what createdump means) or as absent (false: useful for
    /// kernel cores, which leave out file-backed pages that were not dumped).
    pub zero_fill: bool,
    /// Whether a module's own recorded path is tried (after the search path) for its image
    /// file. True by default (right on the machine that made the dump); tests turn it off so
    /// that they never depend on files that exist only where the dump was made.
    pub recorded_paths: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            cache_dir: None,
            cache_limit: DEFAULT_CACHE_LIMIT,
            image_search_path: Vec::new(),
            strict: false,
            zero_fill: true,
            recorded_paths: true,
        }
    }
}

/// A memory region's attributes from the minidump MemoryInfoList stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionInfo {
    /// Region start.
    pub base: u64,
    /// Region size.
    pub size: u64,
    /// Allocation base.
    pub allocation_base: u64,
    /// `MEM_COMMIT` (0x1000), `MEM_RESERVE` (0x2000) or `MEM_FREE` (0x10000).
    pub state: u32,
    /// Page protection (`PAGE_*`).
    pub protect: u32,
    /// Protection at allocation.
    pub allocation_protect: u32,
    /// `MEM_PRIVATE` (0x20000), `MEM_MAPPED` (0x40000) or `MEM_IMAGE` (0x1000000).
    pub kind: u32,
}

/// What a format parser hands back.
pub(crate) struct Parsed {
    pub info: DumpInfo,
    pub threads: Vec<ThreadInfo>,
    pub segments: Vec<RawSegment>,
    pub mappings: Vec<FileMapping>,
    /// Modules when the format lists them (minidump); ELF modules are derived lazily.
    pub modules: Option<Vec<ModuleInfo>>,
    pub regions: Vec<RegionInfo>,
    /// Who wrote the dump, with the evidence; minidump type flags and streams.
    pub producer: (DumpProducer, Vec<String>, Option<u64>, Vec<String>),
}

enum Backing {
    Map(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Backing {
    fn bytes(&self) -> &[u8] {
        match self {
            Backing::Map(m) => m,
            Backing::Owned(v) => v,
        }
    }
}

/// A symbolized address: `module!symbol+offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbolized {
    /// Module file name.
    pub module: String,
    /// Symbol or export name.
    pub symbol: String,
    /// Offset of the address from the symbol.
    pub offset: u64,
}

impl std::fmt::Display for Symbolized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.offset == 0 {
            write!(f, "{}!{}", self.module, self.symbol)
        } else {
            write!(f, "{}!{}+{:#x}", self.module, self.symbol, self.offset)
        }
    }
}

/// An opened dump: the one target the rest of dumpshell reads.
pub struct Dump {
    data: Backing,
    path: Option<PathBuf>,
    source_note: Option<String>,
    opts: OpenOptions,
    info: DumpInfo,
    threads: Vec<ThreadInfo>,
    index: SegmentIndex,
    mappings: Vec<FileMapping>,
    modules: OnceLock<Vec<ModuleInfo>>,
    bundles: OnceLock<Vec<HostBundle>>,
    producer: (DumpProducer, Vec<String>, Option<u64>, Vec<String>),
    kind: OnceLock<DumpKind>,
    regions: Vec<RegionInfo>,
    images: Mutex<HashMap<u64, Result<Arc<ModuleImage>, Error>>>,
    backing: backing::Backing,
}

impl std::fmt::Debug for Dump {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dump")
            .field("path", &self.path)
            .field("format", &self.info.format)
            .field("threads", &self.threads.len())
            .field("ranges", &self.index.len())
            .finish()
    }
}

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

impl Dump {
    /// Opens a dump file with default options (format detected by magic; `.zst`
    /// decompressed once into the cache directory and mapped).
    pub fn open(path: &Path) -> Result<Dump, Error> {
        Dump::open_with(path, &OpenOptions::default())
    }

    /// Opens a dump file with options.
    pub fn open_with(path: &Path, opts: &OpenOptions) -> Result<Dump, Error> {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, &e))?;
        let mut magic = [0u8; 4];
        {
            use std::io::Read;
            let mut r = &file;
            let mut got = 0;
            while got < 4 {
                match r.read(&mut magic[got..]) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) => return Err(Error::io(path, &e)),
                }
            }
        }
        let (file, map_path, note) = if magic == ZSTD_MAGIC {
            let cached = decompress_cached(path, opts)?;
            let f = std::fs::File::open(&cached).map_err(|e| Error::io(&cached, &e))?;
            let note = format!(
                "decompressed from {} into {}",
                path.display(),
                cached.display()
            );
            (f, cached, Some(note))
        } else {
            (file, path.to_path_buf(), None)
        };
        let len = file.metadata().map_err(|e| Error::io(&map_path, &e))?.len();
        let backing = if len == 0 {
            Backing::Owned(Vec::new())
        } else {
            Backing::Map(map::map(&file).map_err(|e| Error::io(&map_path, &e))?)
        };
        let mut d = Dump::from_backing(backing, opts.clone())?;
        d.path = Some(path.to_path_buf());
        d.source_note = note;
        Ok(d)
    }

    /// Parses a dump held in memory (tests, fuzzing). Default options.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Dump, Error> {
        Dump::from_bytes_with(bytes, &OpenOptions::default())
    }

    /// Parses a dump held in memory with options (`.zst` input is decompressed, capped at
    /// 4 GiB).
    pub fn from_bytes_with(bytes: Vec<u8>, opts: &OpenOptions) -> Result<Dump, Error> {
        if bytes.starts_with(&ZSTD_MAGIC) {
            use std::io::Read;
            let dec = zstd::stream::read::Decoder::new(bytes.as_slice())
                .map_err(|e| Error::io(Path::new("<bytes>"), &e))?;
            let mut out = Vec::new();
            dec.take(4 << 30)
                .read_to_end(&mut out)
                .map_err(|e| Error::io(Path::new("<bytes>"), &e))?;
            return Dump::from_backing(Backing::Owned(out), opts.clone());
        }
        Dump::from_backing(Backing::Owned(bytes), opts.clone())
    }

    fn from_backing(data: Backing, opts: OpenOptions) -> Result<Dump, Error> {
        let b = data.bytes();
        let parsed = if b.starts_with(b"\x7fELF") {
            elf::parse(b, opts.strict)?
        } else if b.starts_with(b"MDMP") {
            mdmp::parse(b, opts.strict)?
        } else {
            return Err(Error::BadMagic {
                found: b.iter().take(8).copied().collect(),
            });
        };
        let Parsed {
            mut info,
            mut threads,
            mut segments,
            mappings,
            modules,
            regions,
            producer,
        } = parsed;
        if !opts.zero_fill {
            for s in segments.iter_mut() {
                s.seg.mem_size = s.seg.file_size;
            }
        }
        let index = SegmentIndex::build(segments, &mut info.warnings);
        if info.format == DumpFormat::ElfCore {
            for t in threads.iter_mut() {
                t.stack = index.range_of(t.context.rsp).map(|r| (r.address, r.end()));
            }
        }
        let backing = backing::Backing::new(&mappings, producer.0);
        let ml = OnceLock::new();
        if let Some(m) = modules {
            let _ = ml.set(m);
        }
        Ok(Dump {
            data,
            path: None,
            source_note: None,
            opts,
            info,
            threads,
            index,
            mappings,
            modules: ml,
            bundles: OnceLock::new(),
            producer,
            kind: OnceLock::new(),
            regions,
            images: Mutex::new(HashMap::new()),
            backing,
        })
    }

    /// The container format.
    pub fn format(&self) -> DumpFormat {
        self.info.format
    }

    /// Process-level information (pid, exception, OS, warnings...).
    pub fn info(&self) -> &DumpInfo {
        &self.info
    }

    /// The path the dump was opened from, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// How the file was obtained (e.g. "decompressed from X into Y"), if noteworthy.
    pub fn source_note(&self) -> Option<&str> {
        self.source_note.as_deref()
    }

    /// Threads in dump order (ELF: the first is the one that took the signal).
    pub fn threads(&self) -> &[ThreadInfo] {
        &self.threads
    }

    /// The thread with OS id `id`.
    pub fn thread(&self, id: u32) -> Option<&ThreadInfo> {
        self.threads.iter().find(|t| t.id == id)
    }

    /// Memory ranges in address order (disjoint).
    pub fn memory_ranges(&self) -> impl Iterator<Item = MemoryRange> + '_ {
        self.index.ranges()
    }

    /// The memory range containing `addr`.
    pub fn range_of(&self, addr: u64) -> Option<MemoryRange> {
        self.index.range_of(addr)
    }

    /// Zero-copy view of the file-backed bytes at `addr` up to the end of their range.
    pub fn slice_at(&self, addr: u64) -> Option<&[u8]> {
        self.index.slice(self.data.bytes(), addr)
    }

    /// File mappings of the process (ELF `NT_FILE`), sorted by address; empty for minidumps.
    pub fn file_mappings(&self) -> &[FileMapping] {
        &self.mappings
    }

    /// Region attributes from the minidump MemoryInfoList stream (empty when absent / ELF).
    pub fn memory_info(&self) -> &[RegionInfo] {
        &self.regions
    }

    /// Modules sorted by base address. ELF cores: every mapped file from `NT_FILE`, grouped by
    /// path (see [`ModuleInfo::kind`] for which are images); minidumps: the ModuleList.
    ///
    /// A file mapped several times from offset 0 (the .NET runtime on Linux maps a managed
    /// assembly more than once: flat for metadata, and as an image) gives one module per
    /// mapping whose memory starts with the image magic, each with its own base.
    pub fn modules(&self) -> &[ModuleInfo] {
        self.modules.get_or_init(|| {
            let mut m = if self.info.format == DumpFormat::ElfCore {
                let b = elfmods::build(self, &self.mappings, &self.opts);
                let _ = self.bundles.set(b.bundles);
                b.modules
            } else {
                Vec::new()
            };
            m.sort_by_key(|x| x.base);
            m
        })
    }

    /// What kind of dump this is: who wrote it, what memory it holds (format facts).
    pub fn dump_kind(&self) -> &DumpKind {
        self.kind.get_or_init(|| {
            let (producer, evidence, minidump_type, streams) = self.producer.clone();
            let mut memory_bytes = 0u64;
            for r in self.index.ranges() {
                memory_bytes = memory_bytes.saturating_add(r.size);
            }
            // File pages present: walk the (sorted) mappings and ranges together.
            let ranges: Vec<MemoryRange> = self.index.ranges().collect();
            let (mut mapped, mut present) = (0u64, 0u64);
            for m in &self.mappings {
                mapped = mapped.saturating_add(m.end.saturating_sub(m.start));
                let i = ranges.partition_point(|r| r.end() <= m.start);
                for r in ranges[i..].iter().take_while(|r| r.address < m.end) {
                    let a = r.address.max(m.start);
                    let b = r.end().min(m.end);
                    present = present.saturating_add(b.saturating_sub(a));
                }
            }
            let full_memory = match producer {
                DumpProducer::Minidump => minidump_type.is_some_and(|t| t & 2 != 0),
                _ => mapped > 0 && present == mapped,
            };
            DumpKind {
                producer,
                evidence,
                minidump_type,
                streams,
                file_bytes_mapped: mapped,
                file_bytes_present: present,
                memory_bytes,
                full_memory,
            }
        })
    }

    /// The .NET single-file hosts found among the modules, each with its bundle manifest and
    /// where its bundled files are mapped (ELF cores).
    pub fn bundles(&self) -> &[HostBundle] {
        self.modules();
        self.bundles.get().map_or(&[], |b| b.as_slice())
    }

    /// The module containing `addr`.
    pub fn module_at(&self, addr: u64) -> Option<&ModuleInfo> {
        let mods = self.modules();
        // The containing module with the highest base (an image can span smaller ones, e.g.
        // a double-mapped code region over libraries); usually the first one looked at.
        let i = mods.partition_point(|m| m.base <= addr);
        mods[..i].iter().rev().find(|m| m.contains(addr))
    }

    /// The first module whose file name equals `name` (ASCII case-insensitive).
    pub fn module_by_name(&self, name: &str) -> Option<&ModuleInfo> {
        let named = || {
            self.modules()
                .iter()
                .filter(|m| m.name().eq_ignore_ascii_case(name))
        };
        named()
            .find(|m| m.kind != ModuleKind::Other)
            .or_else(|| named().next())
    }

    /// The module's parsed image (cached). Read from the dump's memory when its pages are
    /// there; otherwise from a file found through [`OpenOptions::image_search_path`] or the
    /// module's own path, accepted only if its identity matches (see [`ModuleImage::note`]).
    pub fn module_image(&self, module: &ModuleInfo) -> Result<Arc<ModuleImage>, Error> {
        let key = module.base;
        if let Some(r) = self
            .images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return r.clone();
        }
        let r = self.load_image(module).map(Arc::new);
        self.images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, r.clone());
        r
    }

    fn load_image(&self, module: &ModuleInfo) -> Result<ModuleImage, Error> {
        let is_pe = module.kind == ModuleKind::Pe
            || (module.kind == ModuleKind::Other && self.info.os == Os::Windows);
        // A core's file mapping whose file is accepted for the bytes the dump lacks: read
        // through both (what every other reader sees); otherwise the dump's bytes alone.
        let raw = self.raw();
        let (mem, source, from): (&dyn Memory, ImageSource, String) =
            match self.file_source(&module.path).map(|f| f.state) {
                Some(backing::FileSourceState::Used { file, check }) => (
                    self,
                    ImageSource::File(file.clone()),
                    format!(
                        "from dump memory, and from file {} what it lacks: {check}",
                        file.display()
                    ),
                ),
                _ => (
                    &raw,
                    ImageSource::DumpMemory,
                    "from dump memory".to_string(),
                ),
            };
        let layout = if is_pe {
            image::guess_pe_layout(mem, module.base, &module.mappings)
        } else {
            PeLayout::Mapped
        };
        // 1. The dump's memory.
        let mem_result = parse_image_in_memory(mem, module.base, is_pe, layout);
        let mut refusals = Refusals::default();
        let partial = match mem_result {
            Ok((fmt, probs)) if probs.is_empty() => {
                return Ok(ModuleImage {
                    module_path: module.path.clone(),
                    base: module.base,
                    source,
                    note: from,
                    format: fmt,
                });
            }
            Ok((fmt, gaps)) => {
                refusals.push(Refusal::Incomplete { gaps });
                Some(fmt)
            }
            Err(e) => {
                refusals.push(Refusal::DumpMemory { error: Box::new(e) });
                None
            }
        };
        // 2. A bundled file: from the single-file host's file, matched by the host's identity.
        if let Some((hb, entry)) = self.bundled(module) {
            match self.image_from_bundle(module, hb, entry, is_pe, layout) {
                Ok(mut img) => {
                    if !refusals.is_empty() {
                        img.note = format!("{} (after: {refusals})", img.note);
                    }
                    return Ok(img);
                }
                Err(why) => refusals.push(why),
            }
        }
        // 3. Files on disk, matched by identity.
        for cand in elfmods::image_candidates(&module.path, &self.opts) {
            if !cand.is_file() {
                continue;
            }
            match self.image_from_file(module, &cand, is_pe, layout) {
                Ok(mut img) => {
                    if !refusals.is_empty() {
                        img.note = format!("{} (after: {refusals})", img.note);
                    }
                    return Ok(img);
                }
                Err(why) => refusals.push(why),
            }
        }
        if let Some(fmt) = partial {
            return Ok(ModuleImage {
                module_path: module.path.clone(),
                base: module.base,
                source: ImageSource::DumpMemory,
                note: format!("from dump memory, incomplete ({refusals})"),
                format: fmt,
            });
        }
        Err(Error::NoImage {
            module: module.path.clone(),
            refusals,
        })
    }

    /// The bundle entry a module is a placement of.
    pub fn bundled(&self, module: &ModuleInfo) -> Option<(&HostBundle, &BundleEntry)> {
        self.bundles().iter().find_map(|hb| {
            let (_, e) = hb.placement_at(module.base)?;
            Some((hb, e))
        })
    }

    fn image_from_bundle(
        &self,
        module: &ModuleInfo,
        hb: &HostBundle,
        entry: &BundleEntry,
        is_pe: bool,
        layout: PeLayout,
    ) -> Result<ModuleImage, Refusal> {
        if entry.is_compressed() {
            return Err(Refusal::CompressedEntry {
                entry: entry.relative_path.clone(),
            });
        }
        let host_identity = self
            .modules()
            .iter()
            .find(|m| m.base == hb.host_base)
            .and_then(|m| m.identity.clone());
        let (fpath, map, evidence) = elfmods::host_file(&hb.host_path, &host_identity, &self.opts)
            .map_err(|refusals| Refusal::BundleHost { refusals })?;
        let bytes: &[u8] = &map;
        // The build id names the host program, not its bundle: the marker must agree too.
        elfmods::bundle_in_file(hb, &fpath, &evidence, bytes)?;
        let slice = usize::try_from(entry.offset)
            .ok()
            .and_then(|o| bytes.get(o..o.checked_add(usize::try_from(entry.size).ok()?)?))
            .ok_or_else(|| Refusal::EntryOutsideFile {
                file: fpath.clone(),
                entry: entry.relative_path.clone(),
                offset: entry.offset,
                size: entry.size,
                file_len: bytes.len() as u64,
            })?;
        let format = parse_image_file(slice, module.base, is_pe, layout).map_err(|e| {
            Refusal::Unparsable {
                file: fpath.clone(),
                error: Box::new(e),
            }
        })?;
        Ok(ModuleImage {
            module_path: module.path.clone(),
            base: module.base,
            source: ImageSource::File(fpath.clone()),
            note: format!(
                "from bundle entry {} at {:#x} of file {}: host {evidence}",
                entry.relative_path,
                entry.offset,
                fpath.display()
            ),
            format,
        })
    }

    fn image_from_file(
        &self,
        module: &ModuleInfo,
        path: &Path,
        is_pe: bool,
        layout: PeLayout,
    ) -> Result<ModuleImage, Refusal> {
        let unreadable = |e: std::io::Error| Refusal::Unreadable {
            file: path.to_path_buf(),
            message: e.to_string(),
        };
        let f = std::fs::File::open(path).map_err(unreadable)?;
        let map = map::map(&f).map_err(unreadable)?;
        let bytes: &[u8] = &map;
        let fid = image::file_identity(bytes);
        let evidence = match (&module.identity, fid) {
            (Some(want), Some(have)) if *want == have => Evidence::Identity { identity: have },
            (Some(want), Some(have)) => {
                return Err(Refusal::IdentityMismatch {
                    file: path.to_path_buf(),
                    dump: want.clone(),
                    found: have,
                })
            }
            (Some(want), None) => {
                return Err(Refusal::NoIdentity {
                    file: path.to_path_buf(),
                    dump: want.clone(),
                })
            }
            // A core's file that its checks left unverified or refused is not used either.
            (None, _) => match self.file_source(&module.path).map(|f| f.state) {
                Some(st @ backing::FileSourceState::Unverified { .. })
                | Some(st @ backing::FileSourceState::NotUsed { .. }) => {
                    return Err(Refusal::NotVerified {
                        file: path.to_path_buf(),
                        state: Box::new(st),
                    })
                }
                _ => Evidence::Unverified,
            },
        };
        let format = parse_image_file(bytes, module.base, is_pe, layout).map_err(|e| {
            Refusal::Unparsable {
                file: path.to_path_buf(),
                error: Box::new(e),
            }
        })?;
        Ok(ModuleImage {
            module_path: module.path.clone(),
            base: module.base,
            source: ImageSource::File(path.to_path_buf()),
            note: format!("from file {}: {evidence}", path.display()),
            format,
        })
    }

    /// Address of the export `name` of `module` (ELF dynamic symbol or PE export).
    pub fn find_export(&self, module: &ModuleInfo, name: &str) -> Option<u64> {
        self.module_image(module).ok()?.find_export(name)
    }

    /// `module!symbol+offset` for `addr`, using the nearest exported symbol at or below it.
    pub fn symbolize(&self, addr: u64) -> Option<Symbolized> {
        let m = self.module_at(addr)?;
        let img = self.module_image(m).ok()?;
        let (sym, off) = img.symbolize(addr)?;
        Some(Symbolized {
            module: m.name().to_string(),
            symbol: sym.to_string(),
            offset: off,
        })
    }
}

impl Memory for Dump {
    /// The dump's bytes; where a file-backed mapping lacks pages that its producer leaves out
    /// unwritten (gcore, kernel), the mapped file's bytes once its identity is checked (see
    /// [`Dump::file_sources`]).
    #[inline]
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        let got = self.index.read(self.data.bytes(), addr, buf);
        if got == buf.len() {
            return got;
        }
        self.read_missing(addr, buf, got)
    }

    /// The dump's own bytes, where its file holds all `len` of them in one range.
    #[inline]
    fn slice(&self, addr: u64, len: usize) -> Option<&[u8]> {
        self.index
            .slice(self.data.bytes(), addr)
            .and_then(|s| s.get(..len))
    }
}

impl Dump {
    /// The rest of a read that stopped at `got`: alternately from accepted files and the dump.
    #[cold]
    fn read_missing(&self, addr: u64, buf: &mut [u8], mut got: usize) -> usize {
        while got < buf.len() {
            let a = addr.wrapping_add(got as u64);
            let f = self.read_from_files(a, &mut buf[got..]);
            if f == 0 {
                break;
            }
            got += f;
            let a = addr.wrapping_add(got as u64);
            got += self.index.read(self.data.bytes(), a, &mut buf[got..]);
        }
        got
    }

    /// The dump's own memory only (no image files): what module discovery reads.
    pub(crate) fn raw(&self) -> Raw<'_> {
        Raw(self)
    }
}

/// A dump's own memory, without the mapped files standing in for missing pages.
pub(crate) struct Raw<'a>(&'a Dump);

impl Memory for Raw<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        self.0.index.read(self.0.data.bytes(), addr, buf)
    }
}

/// The files tried, in order, for an image file recorded at `recorded` (a Linux or Windows
/// path): each folder of `dirs` joined with its file name, then the recorded path itself when
/// `recorded_paths`. The one candidate rule of every layer.
pub fn image_candidates(recorded: &str, dirs: &[PathBuf], recorded_paths: bool) -> Vec<PathBuf> {
    let name = recorded.rsplit(['/', '\\']).next().unwrap_or(recorded);
    let mut cands: Vec<PathBuf> = if name.is_empty() {
        Vec::new()
    } else {
        dirs.iter().map(|d| d.join(name)).collect()
    };
    if recorded_paths && !recorded.is_empty() && !cands.iter().any(|c| c == Path::new(recorded)) {
        cands.push(PathBuf::from(recorded));
    }
    cands
}

/// Parses the image file `bytes` (or a bundle entry's) loaded at `base`: ELF (with its
/// `.symtab`), or PE in the given layout. For a file the caller has checked itself (by
/// [`file_identity`]), e.g. one downloaded from a symbol server.
pub fn parse_image_file(
    bytes: &[u8],
    base: u64,
    is_pe: bool,
    layout: PeLayout,
) -> Result<ImageFormat, Error> {
    Ok(if is_pe {
        let mem = image::FileImageMemory::pe(bytes, base, layout)?;
        let (p, _) = image::parse_pe(&mem, base, layout)?;
        ImageFormat::Pe(p)
    } else {
        let mem = image::FileImageMemory::elf(bytes, base)?;
        let (mut e, _) = image::parse_elf(&mem, base, false)?;
        image::add_file_symtab(bytes, &mut e);
        ImageFormat::Elf(e)
    })
}

/// Parses the image whose headers are at `base` in `mem` (ELF, or PE in the given layout).
/// Returns the image and what it lacks (pages missing...): an image with gaps is usable but
/// incomplete. Other [`Target`] implementations use this to build their images.
pub fn parse_image_in_memory(
    mem: &dyn Memory,
    base: u64,
    is_pe: bool,
    layout: PeLayout,
) -> Result<(ImageFormat, Vec<ImageGap>), Error> {
    if is_pe {
        image::parse_pe(mem, base, layout).map(|(p, probs)| (ImageFormat::Pe(p), probs))
    } else {
        image::parse_elf(mem, base, true).map(|(e, probs)| (ImageFormat::Elf(e), probs))
    }
}

/// What every layer above dumpreader reads: a process's memory, threads and modules.
///
/// [`Dump`] implements it over a dump file; the WinDbg extension implements it over the
/// debugger engine, so the CLR layer and the commands work the same on both.
pub trait Target: Memory {
    /// What is known about the process as a whole.
    fn info(&self) -> &DumpInfo;
    /// The process's threads with their register contexts.
    fn threads(&self) -> &[ThreadInfo];
    /// The loaded modules, sorted by base address.
    fn modules(&self) -> &[ModuleInfo];
    /// A module's parsed image (headers, exports, unwind tables), cached by the target.
    fn module_image(&self, module: &ModuleInfo) -> Result<Arc<ModuleImage>, Error>;

    /// The memory the target holds, sorted by address (empty when the target cannot list it,
    /// e.g. a live debugger session).
    fn memory_ranges(&self) -> Vec<MemoryRange> {
        Vec::new()
    }
    /// How the target's bytes were obtained, when worth saying (a decompressed cache file...).
    fn source_note(&self) -> Option<String> {
        None
    }
    /// Folders where image files are looked for when the target lacks an image's pages.
    fn image_search_path(&self) -> Vec<PathBuf> {
        Vec::new()
    }
    /// Whether the paths the target records for its modules may be read as image files.
    fn use_recorded_paths(&self) -> bool {
        true
    }
    /// The .NET single-file hosts among the modules, with their bundles (empty when the
    /// target cannot tell).
    fn bundles(&self) -> &[HostBundle] {
        &[]
    }
    /// What kind of dump the target is, when it is a dump file.
    fn dump_kind(&self) -> Option<&DumpKind> {
        None
    }
    /// Where the bytes the target lacks in each mapped file come from (empty when the target
    /// does not read files for missing pages).
    fn file_sources(&self) -> Vec<FileSource> {
        Vec::new()
    }
    /// Mapped files found on disk whose identity the target cannot anchor itself (a PE file
    /// whose headers a core lacks): (recorded path, candidate files). A layer that knows the
    /// loader may check them and settle each with [`Target::settle_image_file`].
    fn unverified_image_files(&self) -> Vec<(String, Vec<PathBuf>)> {
        Vec::new()
    }
    /// Accepts a candidate file for `recorded` with the check that verified it (`Ok((file,
    /// check))`), or refuses them (`Err(why each was refused)`). Returns whether there was such
    /// a file to settle.
    fn settle_image_file(&self, recorded: &str, verdict: FileVerdict) -> bool {
        let _ = (recorded, verdict);
        false
    }

    /// The module containing `addr`.
    fn module_at(&self, addr: u64) -> Option<&ModuleInfo> {
        self.modules().iter().find(|m| m.contains(addr))
    }
    /// The first module whose file name equals `name` (ASCII case-insensitive).
    fn module_by_name(&self, name: &str) -> Option<&ModuleInfo> {
        self.modules()
            .iter()
            .find(|m| m.name().eq_ignore_ascii_case(name))
    }
    /// Address of the export `name` of `module` (ELF dynamic symbol or PE export).
    fn find_export(&self, module: &ModuleInfo, name: &str) -> Option<u64> {
        self.module_image(module).ok()?.find_export(name)
    }
    /// `module!symbol+offset` for `addr`, from the nearest exported symbol at or below it.
    fn symbolize(&self, addr: u64) -> Option<Symbolized> {
        let m = self.module_at(addr)?;
        let img = self.module_image(m).ok()?;
        let (sym, off) = img.symbolize(addr)?;
        Some(Symbolized {
            module: m.name().to_string(),
            symbol: sym.to_string(),
            offset: off,
        })
    }
}

macro_rules! forward_target {
    ($($ty:ty),*) => {$(
        impl<T: Target + ?Sized> Target for $ty {
            fn info(&self) -> &DumpInfo {
                (**self).info()
            }
            fn threads(&self) -> &[ThreadInfo] {
                (**self).threads()
            }
            fn modules(&self) -> &[ModuleInfo] {
                (**self).modules()
            }
            fn module_image(&self, module: &ModuleInfo) -> Result<Arc<ModuleImage>, Error> {
                (**self).module_image(module)
            }
            fn module_at(&self, addr: u64) -> Option<&ModuleInfo> {
                (**self).module_at(addr)
            }
            fn memory_ranges(&self) -> Vec<MemoryRange> {
                (**self).memory_ranges()
            }
            fn source_note(&self) -> Option<String> {
                (**self).source_note()
            }
            fn image_search_path(&self) -> Vec<PathBuf> {
                (**self).image_search_path()
            }
            fn use_recorded_paths(&self) -> bool {
                (**self).use_recorded_paths()
            }
            fn bundles(&self) -> &[HostBundle] {
                (**self).bundles()
            }
            fn dump_kind(&self) -> Option<&DumpKind> {
                (**self).dump_kind()
            }
            fn file_sources(&self) -> Vec<FileSource> {
                (**self).file_sources()
            }
            fn unverified_image_files(&self) -> Vec<(String, Vec<PathBuf>)> {
                (**self).unverified_image_files()
            }
            fn settle_image_file(&self, recorded: &str, verdict: FileVerdict) -> bool {
                (**self).settle_image_file(recorded, verdict)
            }
        }
    )*};
}
forward_target!(&T, Arc<T>, Box<T>);

impl Target for Dump {
    fn info(&self) -> &DumpInfo {
        Dump::info(self)
    }
    fn threads(&self) -> &[ThreadInfo] {
        Dump::threads(self)
    }
    fn modules(&self) -> &[ModuleInfo] {
        Dump::modules(self)
    }
    fn module_image(&self, module: &ModuleInfo) -> Result<Arc<ModuleImage>, Error> {
        Dump::module_image(self, module)
    }
    fn module_at(&self, addr: u64) -> Option<&ModuleInfo> {
        Dump::module_at(self, addr)
    }
    fn memory_ranges(&self) -> Vec<MemoryRange> {
        Dump::memory_ranges(self).collect()
    }
    fn source_note(&self) -> Option<String> {
        Dump::source_note(self).map(str::to_owned)
    }
    fn image_search_path(&self) -> Vec<PathBuf> {
        self.opts.image_search_path.clone()
    }
    fn use_recorded_paths(&self) -> bool {
        self.opts.recorded_paths
    }
    fn bundles(&self) -> &[HostBundle] {
        Dump::bundles(self)
    }
    fn dump_kind(&self) -> Option<&DumpKind> {
        Some(Dump::dump_kind(self))
    }
    fn file_sources(&self) -> Vec<FileSource> {
        Dump::file_sources(self)
    }
    fn unverified_image_files(&self) -> Vec<(String, Vec<PathBuf>)> {
        Dump::unverified_files(self)
    }
    fn settle_image_file(&self, recorded: &str, verdict: FileVerdict) -> bool {
        Dump::settle_file(self, recorded, verdict)
    }
}

/// Decompresses `path` (zstd) into the cache directory once; later opens reuse the file.
fn decompress_cached(path: &Path, opts: &OpenOptions) -> Result<PathBuf, Error> {
    use std::hash::{Hash, Hasher};
    let dir = opts
        .cache_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("dumpreader-cache"));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, &e))?;
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, &e))?;
    let canon = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut h = std::collections::hash_map::DefaultHasher::new();
    canon.hash(&mut h);
    meta.len().hash(&mut h);
    meta.modified().ok().hash(&mut h);
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("dump");
    let out = dir.join(format!("{stem}-{:016x}", h.finish()));
    if out.is_file() {
        // Opened now: the last to be evicted.
        if let Ok(f) = std::fs::File::options().append(true).open(&out) {
            let _ = f.set_modified(std::time::SystemTime::now());
        }
        return Ok(out);
    }
    let tmp = dir.join(format!(
        "{stem}-{:016x}.partial-{}",
        h.finish(),
        std::process::id()
    ));
    let res = (|| -> std::io::Result<()> {
        let src = std::fs::File::open(path)?;
        let mut dst = std::fs::File::create(&tmp)?;
        let dec =
            zstd::stream::read::Decoder::new(std::io::BufReader::with_capacity(1 << 20, src))?;
        copy_sparse(dec, &mut dst)?;
        Ok(())
    })();
    if let Err(e) = res {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(path, &e));
    }
    std::fs::rename(&tmp, &out).map_err(|e| Error::io(&out, &e))?;
    evict_cache(&dir, &out, opts.cache_limit);
    Ok(out)
}

/// Keeps the cache at `dir` within `limit` bytes on disk: deletes decompressed dumps other than `keep`,
/// least recently opened (modified) first, and partial files a day old (an interrupted
/// decompression). Problems are ignored: the cache is an optimisation.
fn evict_cache(dir: &Path, keep: &Path, limit: u64) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let now = std::time::SystemTime::now();
    let mut entries = Vec::new();
    for e in rd.flatten() {
        let p = e.path();
        let Ok(m) = e.metadata() else { continue };
        if !m.is_file() {
            continue;
        }
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let modified = m.modified().unwrap_or(now);
        if name.contains(".partial-") {
            let age = now.duration_since(modified).unwrap_or_default();
            if age.as_secs() > 24 * 3600 {
                let _ = std::fs::remove_file(&p);
            }
            continue;
        }
        entries.push((modified, disk_usage(&m), p));
    }
    let mut total: u64 = entries.iter().map(|e| e.1).sum();
    entries.sort();
    for (_, len, p) in entries {
        if total <= limit {
            break;
        }
        if p != keep && std::fs::remove_file(&p).is_ok() {
            total -= len;
        }
    }
}

mod map {
    //! The single place that memory-maps a file.
    #[allow(unsafe_code)]
    pub(crate) fn map(f: &std::fs::File) -> std::io::Result<memmap2::Mmap> {
        // SAFETY: the mapping is read-only. If another process truncates the file while it is
        // mapped, reads may fault (SIGBUS); dumps are treated as immutable inputs.
        unsafe { memmap2::Mmap::map(f) }
    }
}

#[cfg(test)]
mod tests;
