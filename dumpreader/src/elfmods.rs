//! Modules of an ELF core, from its `NT_FILE` mappings.
//!
//! Mappings are grouped by file. An ELF image is the mappings of its file that lie within its
//! `PT_LOAD` extent from its load base; a PE image mapped from offset 0 spans its SizeOfImage.
//! A .NET single-file host maps its own file again for each bundled assembly it loads: those
//! mappings are not the host's, they are the bundled files', named through the bundle manifest
//! (read from the dump's memory, or from the host file matched by build id).

use crate::bundle::{self, BundleEntry, BundleFileType, BundleManifest};
use crate::check::{Evidence, Refusal, Refusals};
use crate::error::Error;
use crate::image;
use crate::memory::Memory;
use crate::types::*;
use crate::{Dump, OpenOptions};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const PAGE: u64 = 0x1000;
/// Most bytes of a host image scanned for the bundle marker.
const MAX_MARKER_SCAN: u64 = 256 << 20;
/// Largest manifest read from the dump's memory.
const MAX_MANIFEST_BYTES: u64 = 64 << 20;
/// Mappings of one bundled file further apart than this are separate placements.
const PLACEMENT_GAP: u64 = 1 << 20;

/// A .NET single-file host found in the dump and what its bundle holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostBundle {
    /// The host executable's path as recorded in the dump.
    pub host_path: String,
    /// The host image's load base.
    pub host_base: u64,
    /// Where the bundle marker (header offset + signature) was found in the dump's memory;
    /// `None` when it came from the host file.
    pub marker_address: Option<u64>,
    /// File offset of the bundle manifest (the marker's value).
    pub header_offset: u64,
    /// Where the marker lies in the host file, when known (from the image's PT_LOADs).
    pub marker_file_offset: Option<u64>,
    /// The manifest, or why it could not be read ([`Error::NoManifest`]).
    pub manifest: Result<BundleManifest, Error>,
    /// Where the manifest was read from ("dump memory at ...", "file X: build-id ... matches").
    pub manifest_source: String,
    /// Where bundled files are mapped, by entry index.
    pub placements: Vec<BundlePlacement>,
    /// How many mappings of the host file lie outside its image (bundled files mapped from
    /// it): none in a compressed bundle, whose files are inflated into anonymous memory.
    pub bundle_mappings: usize,
    /// The bundled files createdump named (see [`createdump_name`]): (the file's offset in the
    /// host file, its name as the runtime's DAC gave it), sorted by offset. Empty when
    /// createdump ran without the DAC, and in cores of other writers.
    pub recorded_names: Vec<(u64, String)>,
}

/// One mapping (image or flat) of a bundled file in the process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundlePlacement {
    /// Index into the manifest's entries.
    pub entry: usize,
    /// Where the file's first byte is (its PE headers for an assembly).
    pub base: u64,
    /// One past the last mapped byte.
    pub end: u64,
}

impl HostBundle {
    /// The entry of a placement.
    pub fn entry(&self, p: &BundlePlacement) -> Option<&BundleEntry> {
        self.manifest.as_ref().ok()?.entries.get(p.entry)
    }

    /// The placement whose base is `base`, with its entry.
    pub fn placement_at(&self, base: u64) -> Option<(&BundlePlacement, &BundleEntry)> {
        let p = self.placements.iter().find(|p| p.base == base)?;
        Some((p, self.entry(p)?))
    }

    /// The name createdump gave the bundled file `module` starts (see
    /// [`HostBundle::recorded_names`]), when it is one of the host's mappings so named.
    pub fn recorded_name_of(&self, module: &ModuleInfo) -> Option<&str> {
        let first = module.mappings.first()?;
        if first.path != self.host_path {
            return None;
        }
        let at = first
            .file_offset
            .checked_add(module.base.checked_sub(first.start)?)?;
        let i = self
            .recorded_names
            .binary_search_by_key(&at, |n| n.0)
            .ok()?;
        Some(self.recorded_names[i].1.as_str())
    }

    /// The folder the bundled files' paths are relative to (the host's folder).
    pub fn app_dir(&self) -> &str {
        match self.host_path.rfind(['/', '\\']) {
            Some(i) => &self.host_path[..i],
            None => "",
        }
    }
}

/// The name createdump gave a mapping, when it is one of its renamed managed-module mappings.
///
/// createdump, when it has the DAC, renames the mapping that holds each managed image's header
/// page to the name the DAC gives the module (dotnet/runtime src/coreclr/debug/createdump
/// crashinfo.cpp, `AddOrReplaceModuleMapping`); for an assembly bundled in a single-file host
/// that name is the bundle-relative file name, not a path, although the mapping is of the host
/// file. The kernel records every mapped file by its absolute path (`/memfd:...` included), so
/// a name without a directory is such a rename.
pub fn createdump_name(path: &str) -> Option<&str> {
    (!path.is_empty() && !path.contains(['/', '\\'])).then_some(path)
}

pub(crate) struct Built {
    pub modules: Vec<ModuleInfo>,
    pub bundles: Vec<HostBundle>,
}

fn magic(d: &Dump, addr: u64) -> Option<ModuleKind> {
    let mut m = [0u8; 4];
    if d.raw().read(addr, &mut m) != 4 {
        return None;
    }
    if &m == b"\x7fELF" {
        Some(ModuleKind::Elf)
    } else if &m[..2] == b"MZ" {
        Some(ModuleKind::Pe)
    } else {
        None
    }
}

/// The ELF image at `base`: (end of its PT_LOAD extent, its PT_LOAD ranges as addresses).
fn elf_extent(d: &Dump, base: u64) -> Option<(u64, Vec<ProgramHeader>, u64)> {
    let (phdrs, bias) = image::elf_headers(&d.raw(), base).ok()?;
    let end = phdrs
        .iter()
        .filter(|p| p.p_type == 1)
        .filter_map(|p| p.p_vaddr.checked_add(p.p_memsz))
        .max()?;
    let end = bias.checked_add(end)?.checked_next_multiple_of(PAGE)?;
    (end > base).then_some((end, phdrs, bias))
}

use crate::image::ProgramHeader;

pub(crate) fn build(d: &Dump, mappings: &[FileMapping], opts: &OpenOptions) -> Built {
    let mut by_path: HashMap<&str, Vec<&FileMapping>> = HashMap::new();
    let mut order = Vec::new();
    for m in mappings {
        let e = by_path.entry(m.path.as_str()).or_default();
        if e.is_empty() {
            order.push(m.path.as_str());
        }
        e.push(m);
    }
    // createdump's renamed mappings last: a single-file host takes back those of its file.
    order.sort_by_key(|p| createdump_name(p).is_some());
    let renamed: Vec<&FileMapping> = mappings
        .iter()
        .filter(|m| createdump_name(&m.path).is_some())
        .collect();
    let mut taken_back: std::collections::HashSet<u64> = Default::default();
    let mut out = Vec::new();
    let mut bundles = Vec::new();
    for path in order {
        let own: Vec<&FileMapping> = by_path[path]
            .iter()
            .copied()
            .filter(|m| !taken_back.contains(&m.start))
            .collect();
        if own.is_empty() {
            continue;
        }
        // The host's own mappings, with those createdump renamed given back to it (step 2).
        let mut given_back: Vec<FileMapping> = Vec::new();
        let mut maps: Vec<&FileMapping> = own;
        let mut taken = vec![false; maps.len()];
        // 1. ELF images: the mappings within each one's PT_LOAD extent.
        let mut elf_heads = Vec::new();
        for (i, m) in maps.iter().enumerate() {
            if taken[i] || m.file_offset != 0 || magic(d, m.start) != Some(ModuleKind::Elf) {
                continue;
            }
            let Some((end, phdrs, bias)) = elf_extent(d, m.start) else {
                continue;
            };
            let mut mine = Vec::new();
            for (j, x) in maps.iter().enumerate() {
                if !taken[j] && x.start >= m.start && x.start < end {
                    taken[j] = true;
                    mine.push((*x).clone());
                }
            }
            let identity =
                image::build_id_from(&d.raw(), &phdrs, bias).map(ModuleIdentity::BuildId);
            elf_heads.push((m.start, end, phdrs, bias));
            out.push(ModuleInfo {
                path: path.to_string(),
                base: m.start,
                end,
                kind: ModuleKind::Elf,
                identity,
                mappings: mine,
                debug_file: None,
                debug_id: None,
            });
        }
        // 2. A single-file host: the rest of its mappings are its bundled files'.
        {
            for (base, end, phdrs, bias) in &elf_heads {
                let identity = out
                    .iter()
                    .find(|m| m.base == *base && m.path == path)
                    .and_then(|m| m.identity.clone());
                let Some(mut hb) =
                    find_bundle(d, path, *base, *end, phdrs, *bias, identity, &maps, opts)
                else {
                    continue;
                };
                // The bundled files lie in the host file after its ELF image and before the
                // manifest: createdump's renamed mappings of those offsets are the host's. (A
                // name createdump adds for an image it finds in no file mapping, as one
                // inflated from a compressed bundle, has offset 0: not the host's.)
                let image_end = phdrs
                    .iter()
                    .filter(|p| p.p_type == 1)
                    .map(|p| p.p_offset.saturating_add(p.p_filesz))
                    .max()
                    .unwrap_or(0);
                for m in &renamed {
                    if m.file_offset >= image_end & !(PAGE - 1) && m.file_offset < hb.header_offset
                    {
                        if let Some(name) = createdump_name(&m.path) {
                            if let Some(at) = pe_header_in_page(d, m) {
                                hb.recorded_names.push((at, name.to_string()));
                            }
                        }
                        taken_back.insert(m.start);
                        given_back.push(FileMapping {
                            path: path.to_string(),
                            ..(*m).clone()
                        });
                    }
                }
                hb.recorded_names.sort();
                hb.recorded_names.dedup();
                if !given_back.is_empty() {
                    let mut all: Vec<(&FileMapping, bool)> = maps
                        .iter()
                        .copied()
                        .zip(taken.iter().copied())
                        .chain(given_back.iter().map(|m| (m, false)))
                        .collect();
                    all.sort_by_key(|(m, _)| m.start);
                    maps = all.iter().map(|(m, _)| *m).collect();
                    taken = all.iter().map(|(_, t)| *t).collect();
                }
                hb.bundle_mappings = taken.iter().filter(|t| !**t).count();
                match &hb.manifest {
                    Ok(man) => {
                        let dir = hb.app_dir().to_string();
                        hb.placements = place_entries(d, &dir, man, &maps, &mut taken, &mut out);
                    }
                    // Unnamed: still one module per placement, never one spanning them all; a
                    // placement createdump named is named so.
                    Err(_) => {
                        let dir = hb.app_dir().to_string();
                        place_unnamed(
                            d,
                            path,
                            (&dir, &hb.recorded_names),
                            &maps,
                            &mut taken,
                            &mut out,
                        )
                    }
                }
                bundles.push(hb);
                break;
            }
        }
        // 3. Mappings that continue an ELF image of the file right after its extent (data
        //    the file maps past its PT_LOAD extent) stay with it.
        for (j, m) in maps.iter().enumerate() {
            if taken[j] {
                continue;
            }
            if let Some(md) = out.iter_mut().rev().find(|md| {
                md.path == path
                    && md.kind == ModuleKind::Elf
                    && m.start >= md.end
                    && m.start <= md.end + PAGE
            }) {
                md.end = md.end.max(m.end);
                md.mappings.push((*m).clone());
                taken[j] = true;
            }
        }
        // 4. The others as before: PE images mapped from offset 0, and files that are not images.
        let rest: Vec<&FileMapping> = maps
            .iter()
            .zip(&taken)
            .filter(|(_, t)| !**t)
            .map(|(m, _)| *m)
            .collect();
        group_rest(d, path, &rest, &mut out);
    }
    Built {
        modules: out,
        bundles,
    }
}

fn group_rest(d: &Dump, path: &str, maps: &[&FileMapping], out: &mut Vec<ModuleInfo>) {
    // A PE file the dump lacks the header page of (gcore leaves unmodified file pages out):
    // known by its name.
    let lower = path.to_ascii_lowercase();
    let pe_by_name = [".dll", ".exe", ".winmd"]
        .iter()
        .any(|x| lower.ends_with(x));
    // Heads: mappings of file offset 0 whose memory starts with an image magic.
    let mut groups: Vec<(u64, ModuleKind, Vec<FileMapping>)> = Vec::new();
    for m in maps.iter() {
        let kind = if m.file_offset == 0 {
            let mut b = [0u8; 1];
            match magic(d, m.start) {
                Some(k) => Some(k),
                None if pe_by_name && d.raw().read(m.start, &mut b) == 0 => Some(ModuleKind::Pe),
                None => None,
            }
        } else {
            None
        };
        let last_end = groups
            .last()
            .map_or(0, |g| g.2.iter().map(|x| x.end).max().unwrap_or(g.0));
        let near_last = groups.last().is_some_and(|g| m.start >= g.0)
            && m.start <= last_end.saturating_add(PLACEMENT_GAP);
        // A PE image loaded by the runtime on Linux maps its sections separately, and a
        // section whose file offset rounds down to 0 also starts with "MZ": a mapping
        // inside the previous PE head's SizeOfImage belongs to that image (near it, when the
        // header is not in the dump).
        let inside_previous_pe = groups.last().is_some_and(|g| {
            g.1 == ModuleKind::Pe
                && match image::pe_identity(&d.raw(), g.0) {
                    Some(ModuleIdentity::Pe { size_of_image, .. }) => {
                        m.start < g.0.saturating_add(u64::from(size_of_image))
                    }
                    _ => near_last,
                }
        });
        let kind = if inside_previous_pe { None } else { kind };
        match (kind, groups.last_mut()) {
            (Some(k), Some(g)) if g.1 == ModuleKind::Other && near_last => {
                // The first head adopts the mappings seen just before it.
                g.0 = m.start.min(g.0);
                g.1 = k;
                g.2.push((*m).clone());
            }
            (Some(k), _) => groups.push((m.start, k, vec![(*m).clone()])),
            // Mappings far from the last group are not part of it (never one module spanning
            // the heap between two mappings of one file).
            (None, Some(g)) if near_last => g.2.push((*m).clone()),
            (None, _) => groups.push((m.start, ModuleKind::Other, vec![(*m).clone()])),
        }
    }
    for (base, kind, mappings) in groups {
        // Base: the head mapping (lowest start with offset 0 for non-images).
        let base = if kind == ModuleKind::Other {
            mappings
                .iter()
                .filter(|m| m.file_offset == 0)
                .map(|m| m.start)
                .min()
                .unwrap_or(base)
        } else {
            base
        };
        let end = mappings.iter().map(|m| m.end).max().unwrap_or(base);
        let identity = match kind {
            ModuleKind::Elf => image::elf_build_id(&d.raw(), base).map(ModuleIdentity::BuildId),
            ModuleKind::Pe => image::pe_identity(&d.raw(), base),
            ModuleKind::Other => None,
        };
        out.push(ModuleInfo {
            path: path.to_string(),
            base,
            end,
            kind,
            identity,
            mappings,
            debug_file: None,
            debug_id: None,
        });
    }
}

/// Looks for the bundle marker in the host image's memory (its writable segments first), then
/// in the host file; reads the manifest from the dump's memory or the file.
#[allow(clippy::too_many_arguments)]
fn find_bundle(
    d: &Dump,
    path: &str,
    base: u64,
    end: u64,
    phdrs: &[ProgramHeader],
    bias: u64,
    identity: Option<ModuleIdentity>,
    maps: &[&FileMapping],
    opts: &OpenOptions,
) -> Option<HostBundle> {
    // The marker is a static array in the host's data.
    let mut loads: Vec<&ProgramHeader> = phdrs.iter().filter(|p| p.p_type == 1).collect();
    loads.sort_by_key(|p| p.p_flags & 2 == 0); // writable first
    let mut marker = None;
    let mut scanned = 0u64;
    for p in loads {
        let start = bias.wrapping_add(p.p_vaddr);
        let len = p.p_memsz.min(end.saturating_sub(start));
        if scanned + len > MAX_MARKER_SCAN {
            break;
        }
        scanned += len;
        let bytes = read_sparse(d, start, len);
        if let Some((at, off)) = bundle::find_marker(&bytes) {
            marker = Some((start + at as u64, off));
            break;
        }
    }
    if let Some((_, 0)) = marker {
        return None; // a host without a bundle (framework-dependent apphost)
    }
    let host_file = || host_file(path, &identity, opts);
    let mut file_marker_pos = None;
    let (marker_address, header_offset, file) = match marker {
        Some((a, off)) => (Some(a), off, None),
        None => {
            // Not in the dump: the host file may tell (only a host that maps its own file
            // again is worth the look).
            // (A compressed bundle's files are inflated into anonymous memory: then only the
            // main executable is worth the look.)
            let is_main = d
                .info()
                .auxv
                .iter()
                .any(|&(t, v)| t == 9 && v >= base && v < end);
            if !is_main && maps.iter().all(|m| m.start >= base && m.start < end) {
                return None;
            }
            let (fpath, bytes, note) = host_file().ok()?;
            let (pos, off) = bundle::find_marker(&bytes)?;
            if off == 0 {
                return None;
            }
            file_marker_pos = Some(pos as u64);
            (None, off, Some((fpath, bytes, note)))
        }
    };
    // Where the marker lies in the file (from the PT_LOAD that holds it), to check it there
    // before scanning the whole file.
    let marker_file_off = marker_address
        .and_then(|a| {
            phdrs
                .iter()
                .filter(|p| p.p_type == 1)
                .find(|p| {
                    let v = bias.wrapping_add(p.p_vaddr);
                    a >= v && a - v < p.p_filesz
                })
                .map(|p| p.p_offset + (a - bias.wrapping_add(p.p_vaddr)))
        })
        .or(file_marker_pos);
    // The manifest: from the dump's memory when a mapping of the file covers it.
    let mut why = Refusals::default();
    for m in maps.iter() {
        let len = m.end - m.start;
        if header_offset >= m.file_offset && header_offset - m.file_offset < len {
            let a = m.start + (header_offset - m.file_offset);
            let bytes = read_present(d, a, (m.end - a).min(MAX_MANIFEST_BYTES));
            if bytes.is_empty() {
                why.push(Refusal::ManifestMappingAbsent { address: m.start });
                continue;
            }
            match bundle::parse_manifest(&bytes, header_offset, header_offset, None) {
                Ok(man) => {
                    return Some(HostBundle {
                        host_path: path.to_string(),
                        host_base: base,
                        marker_address,
                        header_offset,
                        marker_file_offset: marker_file_off,
                        manifest: Ok(man),
                        manifest_source: format!("dump memory at {a:#x}"),
                        placements: Vec::new(),
                        bundle_mappings: 0,
                        recorded_names: Vec::new(),
                    })
                }
                Err(e) => why.push(Refusal::ManifestInMemory {
                    address: a,
                    error: Box::new(e),
                }),
            }
        }
    }
    if why.is_empty() {
        why.push(Refusal::ManifestNotMapped);
    }
    let file = match file {
        Some(f) => Ok(f),
        None => host_file(),
    };
    // The build id names the host program (the runtime pack's singlefilehost), not the bundle
    // appended to it: the file's own marker must point where the dump's does.
    let file = file.and_then(|(fpath, bytes, evidence)| {
        match check_bundle(&fpath, &evidence, &bytes, marker_file_off, header_offset) {
            Ok(()) => Ok((fpath, bytes, evidence)),
            Err(r) => Err(Refusals(vec![r])),
        }
    });
    let no_manifest = |refusals: Refusals| Error::NoManifest {
        host: path.to_string(),
        header_offset,
        refusals,
    };
    let (manifest, source) = match file {
        Ok((fpath, bytes, evidence)) => {
            match bundle::parse_manifest(&bytes, 0, header_offset, Some(bytes.len() as u64)) {
                Ok(m) => (Ok(m), format!("file {}: {evidence}", fpath.display())),
                Err(e) => (
                    Err(no_manifest(Refusals(vec![Refusal::Unparsable {
                        file: fpath.clone(),
                        error: Box::new(e),
                    }]))),
                    format!("file {}", fpath.display()),
                ),
            }
        }
        Err(e) => {
            why.extend(e.0);
            (Err(no_manifest(why)), "nowhere".to_string())
        }
    };
    Some(HostBundle {
        host_path: path.to_string(),
        host_base: base,
        marker_address,
        header_offset,
        marker_file_offset: marker_file_off,
        manifest,
        manifest_source: source,
        placements: Vec::new(),
        bundle_mappings: 0,
        recorded_names: Vec::new(),
    })
}

/// The bytes at `addr..addr+len`, pages the dump lacks read as zeros.
fn read_sparse(d: &Dump, addr: u64, len: u64) -> Vec<u8> {
    let len = len.min(MAX_MARKER_SCAN) as usize;
    let mut v = vec![0u8; len];
    let mut done = 0usize;
    while done < len {
        let a = addr + done as u64;
        let got = d.raw().read(a, &mut v[done..]);
        done += got;
        if done < len {
            // Skip to the next page.
            let next = ((a + got as u64) | (PAGE - 1)) + 1;
            done = (next - addr) as usize;
        }
    }
    v
}

/// The bytes at `addr..addr+len` that the dump holds, up to the first missing one.
fn read_present(d: &Dump, addr: u64, len: u64) -> Vec<u8> {
    let mut v = vec![0u8; len.min(MAX_MARKER_SCAN) as usize];
    let got = d.raw().read(addr, &mut v);
    v.truncate(got);
    v
}

/// Where the bundle marker of a host file points (the manifest's file offset): read at
/// `known` (the marker's file offset, when the dump told it) or found by a scan.
pub(crate) fn marker_in_file(bytes: &[u8], known: Option<u64>) -> Option<u64> {
    if let Some(o) = known.and_then(|o| usize::try_from(o).ok()) {
        if let Some(m) = bytes.get(o..o.saturating_add(40)) {
            if m.len() == 40 && m[8..] == bundle::BUNDLE_SIGNATURE {
                return Some(crate::bytes::le_u64(m, 0));
            }
        }
    }
    bundle::find_marker(bytes).map(|(_, off)| off)
}

/// Whether a host file carries the dump's bundle: its marker points where the dump's does
/// (a host's build id names the runtime's singlefilehost, not the app bundled into it).
/// `evidence`: what matched already (its build id).
pub(crate) fn bundle_in_file(
    hb: &HostBundle,
    file: &Path,
    evidence: &Evidence,
    bytes: &[u8],
) -> Result<(), Refusal> {
    check_bundle(
        file,
        evidence,
        bytes,
        hb.marker_file_offset,
        hb.header_offset,
    )
}

/// Whether the marker of the host file `bytes` (read at `marker_file_offset` when known, else
/// found by a scan) points at `header_offset`.
fn check_bundle(
    file: &Path,
    evidence: &Evidence,
    bytes: &[u8],
    marker_file_offset: Option<u64>,
    header_offset: u64,
) -> Result<(), Refusal> {
    match marker_in_file(bytes, marker_file_offset) {
        Some(off) if off == header_offset => Ok(()),
        Some(found) => Err(Refusal::OtherBundle {
            file: file.to_path_buf(),
            evidence: evidence.clone(),
            found,
            expected: header_offset,
        }),
        None => Err(Refusal::NoBundleMarker {
            file: file.to_path_buf(),
            evidence: evidence.clone(),
        }),
    }
}

/// The files tried for a module recorded at `path`, in order: each image search folder joined
/// with the file name, then the recorded path itself when [`OpenOptions::recorded_paths`].
pub(crate) fn image_candidates(path: &str, opts: &OpenOptions) -> Vec<PathBuf> {
    crate::image_candidates(path, &opts.image_search_path, opts.recorded_paths)
}

/// The host's file, from the image search path (by name) or its recorded path, accepted only
/// when its build id equals the dump's (or read unverified when the dump has none).
pub(crate) fn host_file(
    path: &str,
    identity: &Option<ModuleIdentity>,
    opts: &OpenOptions,
) -> Result<(PathBuf, memmap2::Mmap, Evidence), Refusals> {
    let name = Path::new(path)
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    let cands = image_candidates(path, opts);
    let mut why = Refusals::default();
    for c in cands {
        if !c.is_file() {
            continue;
        }
        let bytes = match std::fs::File::open(&c).and_then(|f| crate::map::map(&f)) {
            Ok(b) => b,
            Err(e) => {
                why.push(Refusal::Unreadable {
                    file: c,
                    message: e.to_string(),
                });
                continue;
            }
        };
        let fid = image::file_identity(&bytes);
        match (identity, fid) {
            (Some(w), Some(h)) if *w == h => {
                return Ok((c, bytes, Evidence::Identity { identity: h }))
            }
            (Some(w), Some(h)) => why.push(Refusal::IdentityMismatch {
                file: c,
                dump: w.clone(),
                found: h,
            }),
            (Some(w), None) => why.push(Refusal::NoIdentity {
                file: c,
                dump: w.clone(),
            }),
            (None, _) => return Ok((c, bytes, Evidence::Unverified)),
        }
    }
    if why.is_empty() {
        why.push(Refusal::HostFileNotFound {
            name: name.to_string_lossy().into_owned(),
        });
    }
    Err(why)
}

/// Turns the host's remaining mappings into bundled-file modules.
fn place_entries(
    d: &Dump,
    dir: &str,
    man: &BundleManifest,
    maps: &[&FileMapping],
    taken: &mut [bool],
    out: &mut Vec<ModuleInfo>,
) -> Vec<BundlePlacement> {
    let mut placements = Vec::new();
    // Entries by offset, to find the one a mapping belongs to.
    let mut by_off: Vec<(u64, usize)> = man
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.is_compressed())
        .map(|(i, e)| (e.offset, i))
        .collect();
    by_off.sort();
    let containing = |off: u64| -> Option<usize> {
        let i = by_off.partition_point(|&(o, _)| o <= off);
        let (_, ei) = *by_off.get(i.checked_sub(1)?)?;
        man.entries[ei].contains_offset(off).then_some(ei)
    };
    let starting_in_page = |off: u64| -> Option<usize> {
        let i = by_off.partition_point(|&(o, _)| o < off);
        by_off
            .get(i)
            .filter(|&&(o, _)| o < off + PAGE)
            .map(|&(_, ei)| ei)
    };
    // (entry, first mapping start, end, mappings)
    let mut clusters: Vec<(usize, u64, u64, Vec<FileMapping>)> = Vec::new();
    for (j, m) in maps.iter().enumerate() {
        if taken[j] {
            continue;
        }
        let cands = [containing(m.file_offset), starting_in_page(m.file_offset)];
        let open = clusters.iter_mut().rev().find(|c| {
            cands.contains(&Some(c.0)) && m.start >= c.1 && m.start <= c.2 + PLACEMENT_GAP
        });
        if let Some(c) = open {
            c.2 = c.2.max(m.end);
            c.3.push((*m).clone());
            taken[j] = true;
            continue;
        }
        let Some(e) = starting_in_page(m.file_offset).or(cands[0]) else {
            continue;
        };
        taken[j] = true;
        clusters.push((e, m.start, m.end, vec![(*m).clone()]));
    }
    for (ei, _, end, mappings) in clusters {
        let e = &man.entries[ei];
        let first = &mappings[0];
        let base = if e.offset >= first.file_offset && e.offset - first.file_offset < PAGE {
            first.start + (e.offset - first.file_offset)
        } else {
            first.start
        };
        let kind = match magic(d, base) {
            Some(k) => k,
            None if e.file_type == BundleFileType::Assembly => ModuleKind::Pe,
            None => ModuleKind::Other,
        };
        let identity = match kind {
            ModuleKind::Pe => image::pe_identity(&d.raw(), base),
            ModuleKind::Elf => image::elf_build_id(&d.raw(), base).map(ModuleIdentity::BuildId),
            ModuleKind::Other => None,
        };
        placements.push(BundlePlacement {
            entry: ei,
            base,
            end,
        });
        let sep = if dir.contains('\\') && !dir.contains('/') {
            '\\'
        } else {
            '/'
        };
        out.push(ModuleInfo {
            path: format!("{dir}{sep}{}", e.relative_path),
            base,
            end,
            kind,
            identity,
            mappings,
            debug_file: None,
            debug_id: None,
        });
    }
    placements.sort_by_key(|p| p.base);
    placements
}

/// Where a PE header lies in the first page of mapping `m`, as an offset in its file, when
/// the dump holds that page (a bundled file need not start at a page: the single-file bundler
/// aligns assemblies to 16 bytes on Linux).
fn pe_header_in_page(d: &Dump, m: &FileMapping) -> Option<u64> {
    let page = read_present(d, m.start, PAGE.min(m.end - m.start));
    (0..page.len().saturating_sub(1))
        .step_by(16)
        .find(|&i| {
            page[i..].starts_with(b"MZ")
                && image::pe_identity(&d.raw(), m.start + i as u64).is_some()
        })
        .map(|i| m.file_offset + i as u64)
}

/// Without the manifest: the host's other mappings as one module per placement (a run of
/// mappings whose file offsets go on rising, without a wide gap), of kind Pe when their first
/// bytes are in the dump and are a PE header. A placement whose file createdump named
/// (`named`: the app's folder, and the bundled files' offsets in the host file with their
/// names) is named `<folder>/<name>`, as the manifest would name it; the others keep the
/// host's path.
fn place_unnamed(
    d: &Dump,
    path: &str,
    named: (&str, &[(u64, String)]),
    maps: &[&FileMapping],
    taken: &mut [bool],
    out: &mut Vec<ModuleInfo>,
) {
    let is_named = |at: u64| named.1.binary_search_by_key(&at, |n| n.0).is_ok();
    // Runs, each with where its first mapping's PE header lies in the file.
    let mut runs: Vec<(Option<u64>, Vec<FileMapping>)> = Vec::new();
    for (j, m) in maps.iter().enumerate() {
        if taken[j] {
            continue;
        }
        taken[j] = true;
        let pe = pe_header_in_page(d, m);
        let joins = runs.last().is_some_and(|(run_pe, r)| {
            let Some(p) = r.last() else { return false };
            let contiguous_file = m.file_offset == p.file_offset + (p.end - p.start);
            // A file createdump named starts its own run (unless this mapping continues the
            // same image: a loaded image's sections may start with its header's bytes).
            let other_named_file = pe.is_some_and(|at| is_named(at) && Some(at) != *run_pe);
            m.start >= p.end
                && m.start - p.end <= PLACEMENT_GAP / 4
                && m.file_offset >= p.file_offset
                && (m.start > p.end || contiguous_file)
                && !other_named_file
        });
        if joins {
            if let Some((_, r)) = runs.last_mut() {
                r.push((*m).clone());
            }
        } else {
            runs.push((pe, vec![(*m).clone()]));
        }
    }
    for (pe, mappings) in runs {
        let first = &mappings[0];
        // A PE header lies within the first page when the file was mapped as an image.
        let mut base = first.start;
        let mut kind = ModuleKind::Other;
        let mut name = None;
        if let Some(at) = pe {
            base = first.start + (at - first.file_offset);
            kind = ModuleKind::Pe;
            name = named
                .1
                .binary_search_by_key(&at, |n| n.0)
                .ok()
                .map(|i| named.1[i].1.as_str());
        }
        let end = mappings.iter().map(|m| m.end).max().unwrap_or(base);
        let identity = match kind {
            ModuleKind::Pe => image::pe_identity(&d.raw(), base),
            _ => None,
        };
        let path = match name {
            Some(n) => {
                let sep = if named.0.contains('\\') && !named.0.contains('/') {
                    '\\'
                } else {
                    '/'
                };
                format!("{}{sep}{n}", named.0)
            }
            None => path.to_string(),
        };
        out.push(ModuleInfo {
            path,
            base,
            end,
            kind,
            identity,
            mappings,
            debug_file: None,
            debug_id: None,
        });
    }
}
