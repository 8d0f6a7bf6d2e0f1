//! From a module to its portable PDB: the PE debug directory (CodeView, embedded portable PDB,
//! PDB checksum entries), the PDB id a CodeView entry names, and finding the PDB file whose id
//! is that one (never by name alone).
//!
//! Formats: dotnet/runtime `docs/design/specs/PE-COFF.md` ("Debug Directory"): a CodeView entry
//! (type 2) holds `RSDS`, a GUID, an age and the PDB's path; when its MinorVersion is `0x504D`
//! the PDB is portable and its id is the GUID followed by the entry's TimeDateStamp (the 20
//! bytes of the PDB's `#Pdb` stream). An Embedded Portable PDB entry (type 17) holds `MPDB`, the
//! uncompressed size and the PDB deflated (raw deflate).

use super::pdb::{PdbError, PdbId, PdbResult, PortablePdb};
use super::pe::PeHeaders;
pub use dumpreader::PeLayout;
use std::path::{Path, PathBuf};

/// Debug directory entry type: CodeView (`RSDS`).
pub const DEBUG_TYPE_CODEVIEW: u32 = 2;
/// Debug directory entry type: the image is deterministic (no data).
pub const DEBUG_TYPE_DETERMINISTIC: u32 = 16;
/// Debug directory entry type: an embedded portable PDB (`MPDB`, deflated).
pub const DEBUG_TYPE_EMBEDDED_PORTABLE_PDB: u32 = 17;
/// Debug directory entry type: a hash of the PDB's content.
pub const DEBUG_TYPE_PDB_CHECKSUM: u32 = 19;
/// A CodeView entry's MinorVersion when the PDB is a portable PDB.
pub const PORTABLE_CODEVIEW_MINOR: u16 = 0x504D;
/// Largest PDB read or decompressed (256 MiB; the corpus's are 10 to 40 KB).
pub const MAX_PDB_BYTES: usize = 256 << 20;
/// Most debug directory entries read (real images have 2 to 5).
const MAX_DEBUG_ENTRIES: usize = 64;

/// One entry of a PE's debug directory (`IMAGE_DEBUG_DIRECTORY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DebugDirectoryEntry {
    /// Characteristics (0).
    pub characteristics: u32,
    /// TimeDateStamp: for a portable CodeView entry, the last 4 bytes of the PDB id.
    pub time_date_stamp: u32,
    /// MajorVersion.
    pub major_version: u16,
    /// MinorVersion.
    pub minor_version: u16,
    /// Type ([`DEBUG_TYPE_CODEVIEW`], ...).
    pub kind: u32,
    /// SizeOfData.
    pub size_of_data: u32,
    /// AddressOfRawData (an RVA).
    pub address_of_raw_data: u32,
    /// PointerToRawData (a file offset).
    pub pointer_to_raw_data: u32,
}

impl DebugDirectoryEntry {
    /// Where the entry's data is, as an offset from the image's start in `layout`.
    pub fn data_offset(&self, layout: PeLayout) -> usize {
        match layout {
            PeLayout::Mapped => self.address_of_raw_data as usize,
            PeLayout::Flat => self.pointer_to_raw_data as usize,
        }
    }
}

/// A CodeView debug directory entry: which PDB the image was built with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeView {
    /// The PDB's GUID.
    pub guid: [u8; 16],
    /// The PDB's age (1 for portable PDBs).
    pub age: u32,
    /// The PDB's path when the image was built.
    pub path: String,
    /// The entry's TimeDateStamp.
    pub stamp: u32,
    /// The entry's MajorVersion (the portable PDB format's version, for a portable entry).
    pub major_version: u16,
    /// The entry's MinorVersion ([`PORTABLE_CODEVIEW_MINOR`] for a portable PDB).
    pub minor_version: u16,
}

impl CodeView {
    /// Whether the image was built with a portable PDB.
    pub fn is_portable(&self) -> bool {
        self.minor_version == PORTABLE_CODEVIEW_MINOR
    }

    /// The id of the portable PDB this entry names (GUID + stamp).
    pub fn pdb_id(&self) -> PdbId {
        PdbId::from_guid_stamp(self.guid, self.stamp)
    }

    /// The PDB's file name (the path's last component, `/` or `\` separated).
    pub fn file_name(&self) -> &str {
        self.path.rsplit(['/', '\\']).next().unwrap_or(&self.path)
    }
}

/// A PDB Checksum entry (type 19): a hash of the PDB's content with its id zeroed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PdbChecksum {
    /// The algorithm's name (`SHA256`, ...).
    pub algorithm: String,
    /// The hash.
    pub checksum: Vec<u8>,
}

/// What a PE image's debug directory says about its debugging information.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageDebugInfo {
    /// The layout the image was read in.
    pub layout: PeLayout,
    /// Every entry, in directory order.
    pub entries: Vec<DebugDirectoryEntry>,
    /// The first CodeView entry, decoded.
    pub codeview: Option<CodeView>,
    /// Whether a Deterministic entry is present.
    pub deterministic: bool,
    /// The PDB Checksum entries.
    pub pdb_checksums: Vec<PdbChecksum>,
    /// The Embedded Portable PDB entry, if any (its data: [`embedded_pdb`]).
    pub embedded_pdb: Option<DebugDirectoryEntry>,
}

fn dbg_err(offset: usize, reason: impl Into<String>) -> PdbError {
    PdbError::BadDebugDirectory {
        offset,
        reason: reason.into(),
    }
}

fn u16_at(d: &[u8], off: usize) -> Option<u16> {
    d.get(off..off.checked_add(2)?)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
}

fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    d.get(off..off.checked_add(4)?)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The Debug data directory (index 6) of a PE image: `(RVA, size)`; `None` when the image has
/// none. `headers` needs only the image's first bytes (its first page).
pub fn debug_directory(headers: &[u8]) -> PdbResult<Option<(u32, u32)>> {
    let pe = u32_at(headers, 0x3C).ok_or_else(|| dbg_err(0x3C, "no e_lfanew"))? as usize;
    if u32_at(headers, pe) != Some(0x0000_4550) {
        return Err(dbg_err(pe, "no PE signature"));
    }
    let opt = pe + 24;
    let opt_size =
        u16_at(headers, pe + 20).ok_or_else(|| dbg_err(pe + 20, "truncated COFF header"))? as usize;
    let (count_off, dd_off) = match u16_at(headers, opt) {
        Some(0x10b) => (opt + 92, opt + 96),
        Some(0x20b) => (opt + 108, opt + 112),
        m => return Err(dbg_err(opt, format!("optional header magic {m:x?}"))),
    };
    let count = u32_at(headers, count_off)
        .ok_or_else(|| dbg_err(count_off, "truncated optional header"))?;
    if count <= 6 || dd_off + 7 * 8 > opt + opt_size {
        return Ok(None);
    }
    let rva = u32_at(headers, dd_off + 48)
        .ok_or_else(|| dbg_err(dd_off + 48, "truncated data directories"))?;
    let size = u32_at(headers, dd_off + 52)
        .ok_or_else(|| dbg_err(dd_off + 52, "truncated data directories"))?;
    Ok((rva != 0 && size != 0).then_some((rva, size)))
}

fn parse_entries(dir: &[u8], dir_off: usize) -> PdbResult<Vec<DebugDirectoryEntry>> {
    if !dir.chunks_exact(28).remainder().is_empty() {
        return Err(dbg_err(
            dir_off,
            format!("size {} is not a multiple of 28", dir.len()),
        ));
    }
    if dir.len() / 28 > MAX_DEBUG_ENTRIES {
        return Err(dbg_err(
            dir_off,
            format!("{} entries (at most {MAX_DEBUG_ENTRIES})", dir.len() / 28),
        ));
    }
    Ok(dir
        .chunks_exact(28)
        .map(|e| DebugDirectoryEntry {
            characteristics: u32::from_le_bytes([e[0], e[1], e[2], e[3]]),
            time_date_stamp: u32::from_le_bytes([e[4], e[5], e[6], e[7]]),
            major_version: u16::from_le_bytes([e[8], e[9]]),
            minor_version: u16::from_le_bytes([e[10], e[11]]),
            kind: u32::from_le_bytes([e[12], e[13], e[14], e[15]]),
            size_of_data: u32::from_le_bytes([e[16], e[17], e[18], e[19]]),
            address_of_raw_data: u32::from_le_bytes([e[20], e[21], e[22], e[23]]),
            pointer_to_raw_data: u32::from_le_bytes([e[24], e[25], e[26], e[27]]),
        })
        .collect())
}

/// Decodes a CodeView entry's data (`RSDS`, GUID, age, NUL-terminated UTF-8 path).
pub fn parse_codeview(e: &DebugDirectoryEntry, data: &[u8], offset: usize) -> PdbResult<CodeView> {
    if data.len() < 24 || &data[..4] != b"RSDS" {
        return Err(dbg_err(
            offset,
            format!(
                "CodeView data of {} bytes does not start with RSDS",
                data.len()
            ),
        ));
    }
    let mut guid = [0u8; 16];
    guid.copy_from_slice(&data[4..20]);
    let age = u32::from_le_bytes([data[20], data[21], data[22], data[23]]);
    let rest = &data[24..];
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    let path = std::str::from_utf8(&rest[..end])
        .map_err(|_| dbg_err(offset + 24, "CodeView path is not UTF-8"))?
        .to_string();
    Ok(CodeView {
        guid,
        age,
        path,
        stamp: e.time_date_stamp,
        major_version: e.major_version,
        minor_version: e.minor_version,
    })
}

fn parse_checksum(data: &[u8], offset: usize) -> PdbResult<PdbChecksum> {
    let end = data
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| dbg_err(offset, "PDB checksum algorithm name not terminated"))?;
    let algorithm = std::str::from_utf8(&data[..end])
        .map_err(|_| dbg_err(offset, "PDB checksum algorithm name is not UTF-8"))?
        .to_string();
    Ok(PdbChecksum {
        algorithm,
        checksum: data[end + 1..].to_vec(),
    })
}

/// Reads the debug directory of a PE image held in `image` (laid out as `layout`). An image
/// without a debug directory gives an empty [`ImageDebugInfo`].
pub fn read_debug_info(image: &[u8], layout: PeLayout) -> PdbResult<ImageDebugInfo> {
    read_debug_info_with(image.len() as u64, layout, &|off, buf| {
        let src = image.get(off as usize..).unwrap_or(&[]);
        let n = src.len().min(buf.len());
        buf[..n].copy_from_slice(&src[..n]);
        n
    })
}

/// Reads the debug directory of the PE image at `base` in a target's memory. The layout is
/// found as [`super::read_metadata`] finds it: mapped first, then flat; a layout is taken when
/// its CodeView entry (if the directory has one) starts with `RSDS`. `image_size` (the module's
/// mapped size), when known, bounds every read.
pub fn read_debug_info_from_memory(
    mem: &dyn dumpreader::Memory,
    base: u64,
    image_size: Option<u64>,
) -> PdbResult<ImageDebugInfo> {
    let limit = image_size.unwrap_or(u64::MAX);
    let read = |off: u64, buf: &mut [u8]| -> usize {
        if off >= limit {
            return 0;
        }
        let n = ((limit - off).min(buf.len() as u64)) as usize;
        mem.read(base.wrapping_add(off), &mut buf[..n])
    };
    let mut first_err = None;
    for layout in [PeLayout::Mapped, PeLayout::Flat] {
        match read_debug_info_with(limit, layout, &read) {
            Ok(i) => return Ok(i),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    Err(first_err.unwrap_or_else(|| dbg_err(0, "no layout")))
}

fn read_debug_info_with(
    limit: u64,
    layout: PeLayout,
    read: &dyn Fn(u64, &mut [u8]) -> usize,
) -> PdbResult<ImageDebugInfo> {
    let mut hdr = vec![0u8; 4096];
    let n = read(0, &mut hdr);
    hdr.truncate(n);
    let h = PeHeaders::parse(&hdr)?;
    let mut info = ImageDebugInfo {
        layout,
        entries: Vec::new(),
        codeview: None,
        deterministic: false,
        pdb_checksums: Vec::new(),
        embedded_pdb: None,
    };
    let Some((rva, size)) = debug_directory(&hdr)? else {
        return Ok(info);
    };
    let off = h.rva_to_offset(rva, layout).ok_or_else(|| {
        dbg_err(
            0,
            format!("{layout:?}: debug directory RVA {rva:#x} maps to no section"),
        )
    })?;
    if size as usize > MAX_DEBUG_ENTRIES * 28 || off as u64 + size as u64 > limit {
        return Err(dbg_err(
            off,
            format!("{layout:?}: directory of {size} bytes does not fit"),
        ));
    }
    let mut dir = vec![0u8; size as usize];
    if read(off as u64, &mut dir) != dir.len() {
        return Err(dbg_err(off, format!("{layout:?}: directory not readable")));
    }
    info.entries = parse_entries(&dir, off)?;
    // Bytes read in the wrong layout parse as entries too: a real entry's data has an RVA and a
    // file offset that the section table maps onto each other, and a type other than 0.
    for (i, e) in info.entries.iter().enumerate() {
        let consistent = e.size_of_data == 0
            || e.address_of_raw_data == 0
            || h.rva_to_offset(e.address_of_raw_data, PeLayout::Flat)
                == Some(e.pointer_to_raw_data as usize);
        if e.kind == 0 || !consistent || e.size_of_data as u64 > limit {
            return Err(dbg_err(
                off + i * 28,
                format!(
                    "{layout:?}: entry {i} is not a debug directory entry (type {}, RVA {:#x}, \
                     file offset {:#x}, size {:#x})",
                    e.kind, e.address_of_raw_data, e.pointer_to_raw_data, e.size_of_data
                ),
            ));
        }
    }
    for e in info.entries.clone() {
        let doff = e.data_offset(layout);
        match e.kind {
            DEBUG_TYPE_CODEVIEW if info.codeview.is_none() => {
                if e.size_of_data > 64 * 1024 {
                    return Err(dbg_err(
                        doff,
                        format!("CodeView data of {} bytes", e.size_of_data),
                    ));
                }
                let mut d = vec![0u8; e.size_of_data as usize];
                if read(doff as u64, &mut d) != d.len() {
                    return Err(dbg_err(
                        doff,
                        format!("{layout:?}: CodeView data not readable"),
                    ));
                }
                info.codeview = Some(parse_codeview(&e, &d, doff)?);
            }
            DEBUG_TYPE_DETERMINISTIC => info.deterministic = true,
            DEBUG_TYPE_PDB_CHECKSUM if e.size_of_data <= 1024 => {
                let mut d = vec![0u8; e.size_of_data as usize];
                if read(doff as u64, &mut d) == d.len() {
                    info.pdb_checksums.push(parse_checksum(&d, doff)?);
                }
            }
            DEBUG_TYPE_EMBEDDED_PORTABLE_PDB if info.embedded_pdb.is_none() => {
                info.embedded_pdb = Some(e);
            }
            _ => {}
        }
    }
    Ok(info)
}

/// Decompresses an Embedded Portable PDB entry's data: `MPDB`, the uncompressed size (u32),
/// then the PDB deflated. The size must be non-zero and at most [`MAX_PDB_BYTES`], and the
/// data must inflate to exactly that size.
pub fn decompress_embedded_pdb(data: &[u8]) -> PdbResult<Vec<u8>> {
    let bad = |reason: String| PdbError::Embedded { reason };
    if data.len() < 8 || &data[..4] != b"MPDB" {
        return Err(bad(format!("{} bytes not starting with MPDB", data.len())));
    }
    let size = u32::from_le_bytes([data[4], data[5], data[6], data[7]]) as usize;
    if size == 0 || size > MAX_PDB_BYTES {
        return Err(bad(format!(
            "uncompressed size {size} (1..={MAX_PDB_BYTES} accepted)"
        )));
    }
    let out = miniz_oxide::inflate::decompress_to_vec_with_limit(&data[8..], size)
        .map_err(|e| bad(format!("deflate data: {e:?}")))?;
    if out.len() != size {
        return Err(bad(format!(
            "inflated to {} bytes, the header says {size}",
            out.len()
        )));
    }
    Ok(out)
}

/// The embedded portable PDB of an image held in `image`, decompressed (`None` when the image
/// has no Embedded Portable PDB entry).
pub fn embedded_pdb(image: &[u8], info: &ImageDebugInfo) -> PdbResult<Option<Vec<u8>>> {
    let Some(e) = info.embedded_pdb else {
        return Ok(None);
    };
    let off = e.data_offset(info.layout);
    let data = off
        .checked_add(e.size_of_data as usize)
        .and_then(|end| image.get(off..end))
        .ok_or_else(|| {
            dbg_err(
                off,
                format!(
                    "embedded PDB data ({} bytes) beyond the image",
                    e.size_of_data
                ),
            )
        })?;
    decompress_embedded_pdb(data).map(Some)
}

/// The embedded portable PDB of the image at `base` in a target's memory (see [`embedded_pdb`]).
pub fn embedded_pdb_from_memory(
    mem: &dyn dumpreader::Memory,
    base: u64,
    info: &ImageDebugInfo,
) -> PdbResult<Option<Vec<u8>>> {
    let Some(e) = info.embedded_pdb else {
        return Ok(None);
    };
    let off = e.data_offset(info.layout);
    if e.size_of_data as usize > MAX_PDB_BYTES {
        return Err(dbg_err(
            off,
            format!("embedded PDB data of {} bytes", e.size_of_data),
        ));
    }
    let mut d = vec![0u8; e.size_of_data as usize];
    let got = mem.read(base.wrapping_add(off as u64), &mut d);
    if got != d.len() {
        return Err(dbg_err(
            off,
            format!("embedded PDB data: {got} of {} bytes in memory", d.len()),
        ));
    }
    decompress_embedded_pdb(&d).map(Some)
}

/// Where a [`PdbFile`]'s bytes came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PdbSource {
    /// A file.
    File(PathBuf),
    /// The image's Embedded Portable PDB entry.
    Embedded,
    /// Bytes handed over by the caller.
    Bytes,
}

/// A portable PDB's bytes, owned, with its id (checked to parse).
#[derive(Clone)]
pub struct PdbFile {
    bytes: Vec<u8>,
    id: PdbId,
    source: PdbSource,
}

impl std::fmt::Debug for PdbFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PdbFile")
            .field("id", &self.id)
            .field("source", &self.source)
            .field("len", &self.bytes.len())
            .finish()
    }
}

impl PdbFile {
    /// Takes a PDB's bytes (checks that they parse as a portable PDB).
    pub fn from_bytes(bytes: Vec<u8>, source: PdbSource) -> PdbResult<PdbFile> {
        let id = PortablePdb::parse(&bytes)?.id();
        Ok(PdbFile { bytes, id, source })
    }

    /// Reads a PDB file (at most [`MAX_PDB_BYTES`]).
    pub fn open(path: &Path) -> PdbResult<PdbFile> {
        let io = |e: std::io::Error| PdbError::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        };
        let len = std::fs::metadata(path).map_err(io)?.len();
        if len > MAX_PDB_BYTES as u64 {
            return Err(PdbError::Io {
                path: path.display().to_string(),
                reason: format!("{len} bytes (at most {MAX_PDB_BYTES} read)"),
            });
        }
        let bytes = std::fs::read(path).map_err(io)?;
        Self::from_bytes(bytes, PdbSource::File(path.to_path_buf()))
    }

    /// The PDB id.
    pub fn id(&self) -> PdbId {
        self.id
    }

    /// Where it came from.
    pub fn source(&self) -> &PdbSource {
        &self.source
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// A reader over the bytes (parsing is cheap: the root and the table header).
    pub fn reader(&self) -> PdbResult<PortablePdb<'_>> {
        PortablePdb::parse(&self.bytes)
    }
}

/// The outcome of a search for an image's PDB: the file whose id matched, and every candidate
/// looked at and why it was not taken.
#[derive(Debug, Clone, Default)]
pub struct PdbSearch {
    /// The PDB whose id is the CodeView entry's.
    pub found: Option<PdbFile>,
    /// Candidates refused: path and reason (another build's PDB, unreadable, not portable).
    pub refused: Vec<(PathBuf, String)>,
}

/// Most directory entries a search visits per folder tree (keeps a mistaken `/` cheap).
const MAX_SEARCH_ENTRIES: usize = 20_000;
/// Deepest folder level a search descends to below each search folder.
const MAX_SEARCH_DEPTH: usize = 4;

/// Finds the portable PDB a CodeView entry names, by its id, among:
/// 1. `<dir>/<file name>` and the symbol-server layout `<dir>/<file name>/<ssqp key>/<file name>`
///    (file names as recorded and lower-cased) for each `dir`;
/// 2. every file so named in the folders below each `dir` (at most 4 levels, 20,000 entries);
/// 3. the path the CodeView entry records, when `recorded_path` is true.
///
/// A candidate is taken only when its `#Pdb` id equals the entry's GUID + stamp: a file of the
/// right name from another build is refused (listed in [`PdbSearch::refused`]).
pub fn find_pdb(codeview: &CodeView, dirs: &[PathBuf], recorded_path: bool) -> PdbSearch {
    let want = codeview.pdb_id();
    let name = codeview.file_name().to_string();
    let lower = name.to_ascii_lowercase();
    let mut search = PdbSearch::default();
    let mut seen = std::collections::HashSet::new();
    let mut consider = |p: PathBuf, search: &mut PdbSearch| -> bool {
        if !seen.insert(p.clone()) || !p.is_file() {
            return false;
        }
        match PdbFile::open(&p) {
            Ok(f) if f.id() == want => {
                search.found = Some(f);
                true
            }
            Ok(f) => {
                search.refused.push((
                    p,
                    format!("another build's PDB (id {}, wanted {want})", f.id()),
                ));
                false
            }
            Err(e) => {
                search.refused.push((p, e.to_string()));
                false
            }
        }
    };
    if name.is_empty() {
        return search;
    }
    for d in dirs {
        let key = want.ssqp_key();
        for c in [
            d.join(&name),
            d.join(&lower),
            d.join(&name).join(&key).join(&name),
            d.join(&lower).join(&key).join(&lower),
        ] {
            if consider(c, &mut search) {
                return search;
            }
        }
    }
    for d in dirs {
        let mut budget = MAX_SEARCH_ENTRIES;
        let mut stack = vec![(d.clone(), 0usize)];
        while let Some((dir, depth)) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
            entries.sort();
            for p in entries {
                if budget == 0 {
                    break;
                }
                budget -= 1;
                if p.is_dir() {
                    if depth < MAX_SEARCH_DEPTH {
                        stack.push((p, depth + 1));
                    }
                } else if p
                    .file_name()
                    .and_then(|f| f.to_str())
                    .is_some_and(|f| f.eq_ignore_ascii_case(&name))
                    && consider(p, &mut search)
                {
                    return search;
                }
            }
        }
    }
    if recorded_path && !codeview.path.is_empty() {
        consider(PathBuf::from(&codeview.path), &mut search);
    }
    search
}
