//! .NET single-file bundles: the manifest a single-file host carries after its embedded files.
//!
//! Layout (dotnet/runtime `src/native/corehost/bundle/` and
//! `src/installer/managed/Microsoft.NET.HostModel/Bundle/`):
//!
//! - The host holds a 40-byte marker in its data: an `int64` header offset followed by the
//!   32-byte signature (SHA-256 of ".net core bundle"). The offset is 0 in a host that carries
//!   no bundle; the bundler patches it to the manifest's file offset.
//! - At that offset: `u32` major version, `u32` minor version, `i32` file count, the bundle id
//!   (a 7-bit-length-prefixed UTF-8 string); from version 2 on, the deps.json and
//!   runtimeconfig.json locations (`i64` offset, `i64` size each) and `u64` flags.
//! - Then one entry per file: `i64` offset, `i64` size, from version 6 on `i64` compressed size
//!   (0: stored uncompressed), a `u8` file type, and the relative path (7-bit-prefixed string).
//!   Offsets are file offsets in the host executable.
//!
//! Parsing is bounded: every count and length is checked against the bytes at hand.

use crate::bytes::{le_u32, le_u64};
use crate::Error;

/// The 32 bytes that follow the header offset in a single-file host: SHA-256 of
/// ".net core bundle".
pub const BUNDLE_SIGNATURE: [u8; 32] = [
    0x8b, 0x12, 0x02, 0xb9, 0x6a, 0x61, 0x20, 0x38, 0x72, 0x7b, 0x93, 0x02, 0x14, 0xd7, 0xa0, 0x32,
    0x13, 0xf5, 0xb9, 0xe6, 0xef, 0xae, 0x33, 0x18, 0xee, 0x3b, 0x2d, 0xce, 0x24, 0xb3, 0x6a, 0xae,
];

/// Most files a manifest may list.
pub const MAX_BUNDLE_FILES: u64 = 1_000_000;
/// Longest relative path or bundle id accepted.
const MAX_STRING: u64 = 64 * 1024;

/// What kind of file a bundle entry is (`FileType` in Microsoft.NET.HostModel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BundleFileType {
    /// 0: unknown.
    Unknown,
    /// 1: a managed assembly.
    Assembly,
    /// 2: a native binary.
    NativeBinary,
    /// 3: the app's deps.json.
    DepsJson,
    /// 4: the app's runtimeconfig.json.
    RuntimeConfigJson,
    /// 5: symbols (pdb).
    Symbols,
    /// Any other value.
    Other(u8),
}

impl BundleFileType {
    fn from_u8(b: u8) -> BundleFileType {
        match b {
            0 => BundleFileType::Unknown,
            1 => BundleFileType::Assembly,
            2 => BundleFileType::NativeBinary,
            3 => BundleFileType::DepsJson,
            4 => BundleFileType::RuntimeConfigJson,
            5 => BundleFileType::Symbols,
            n => BundleFileType::Other(n),
        }
    }

    /// A short lower-case name ("assembly", "native", "deps.json", ...).
    pub fn name(&self) -> &'static str {
        match self {
            BundleFileType::Unknown => "unknown",
            BundleFileType::Assembly => "assembly",
            BundleFileType::NativeBinary => "native",
            BundleFileType::DepsJson => "deps.json",
            BundleFileType::RuntimeConfigJson => "runtimeconfig.json",
            BundleFileType::Symbols => "symbols",
            BundleFileType::Other(_) => "other",
        }
    }
}

/// One file embedded in a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleEntry {
    /// Offset of the file's bytes in the host executable.
    pub offset: u64,
    /// Size of the file (uncompressed).
    pub size: u64,
    /// Size of the stored bytes when compressed (deflate), 0 when stored as is.
    pub compressed_size: u64,
    /// What the file is.
    pub file_type: BundleFileType,
    /// Path relative to the app's folder (the name the runtime knows it by).
    pub relative_path: String,
}

impl BundleEntry {
    /// Whether the entry is stored compressed (the runtime then inflates it into memory, so
    /// no mapping of the host file holds its image).
    pub fn is_compressed(&self) -> bool {
        self.compressed_size != 0
    }

    /// Bytes the entry occupies in the host file.
    pub fn stored_size(&self) -> u64 {
        if self.is_compressed() {
            self.compressed_size
        } else {
            self.size
        }
    }

    /// Whether file offset `off` lies within the entry's stored bytes.
    pub fn contains_offset(&self, off: u64) -> bool {
        off >= self.offset && off - self.offset < self.stored_size()
    }
}

/// A single-file bundle's manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleManifest {
    /// File offset of the manifest header (the host's marker value).
    pub header_offset: u64,
    /// Format major version (2: .NET 5; 6: .NET 6 and later, with compression).
    pub major_version: u32,
    /// Format minor version.
    pub minor_version: u32,
    /// The bundle id (the extraction folder's name).
    pub bundle_id: String,
    /// deps.json location (offset, size) from the v2 header, if any.
    pub deps_json: Option<(u64, u64)>,
    /// runtimeconfig.json location (offset, size) from the v2 header, if any.
    pub runtimeconfig_json: Option<(u64, u64)>,
    /// v2 header flags (1: .NET Core 3 compatibility mode: every file extracted to disk).
    pub flags: u64,
    /// The embedded files, in manifest order.
    pub entries: Vec<BundleEntry>,
    /// Bytes the manifest occupies (header and entries).
    pub manifest_size: u64,
}

impl BundleManifest {
    /// The entry whose stored bytes contain file offset `off`.
    pub fn entry_at_offset(&self, off: u64) -> Option<&BundleEntry> {
        self.entries.iter().find(|e| e.contains_offset(off))
    }

    /// The entry named `relative_path` (ASCII case-insensitive).
    pub fn entry(&self, relative_path: &str) -> Option<&BundleEntry> {
        self.entries
            .iter()
            .find(|e| e.relative_path.eq_ignore_ascii_case(relative_path))
    }

    /// Whether the bundle was made in .NET Core 3 compatibility mode (files extracted to disk).
    pub fn is_netcoreapp3_compat(&self) -> bool {
        self.flags & 1 != 0
    }
}

/// Finds the bundle marker in `bytes` (a host image's data) and returns the header offset it
/// holds, with the marker's position: `Some((position, 0))` for a host without a bundle.
pub fn find_marker(bytes: &[u8]) -> Option<(usize, u64)> {
    let mut from = 0usize;
    while let Some(i) = memfind(&bytes[from..], &BUNDLE_SIGNATURE) {
        let at = from + i;
        if at >= 8 {
            return Some((at - 8, le_u64(bytes, at - 8)));
        }
        from = at + 1;
    }
    None
}

fn memfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let first = needle[0];
    let mut i = 0usize;
    while i + needle.len() <= hay.len() {
        match hay[i..hay.len() - needle.len() + 1]
            .iter()
            .position(|&b| b == first)
        {
            None => return None,
            Some(p) => {
                let at = i + p;
                if &hay[at..at + needle.len()] == needle {
                    return Some(at);
                }
                i = at + 1;
            }
        }
    }
    None
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
    /// File offset of `b[0]`, for error messages.
    base: u64,
}

impl Cursor<'_> {
    fn err(&self, what: &str, reason: String) -> Error {
        Error::malformed(
            format!("bundle manifest {what}"),
            self.base + self.pos as u64,
            reason,
        )
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], Error> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len());
        match end {
            Some(e) => {
                let s = &self.b[self.pos..e];
                self.pos = e;
                Ok(s)
            }
            None => Err(self.err(
                what,
                format!(
                    "needs {n} bytes but only {} remain",
                    self.b.len().saturating_sub(self.pos)
                ),
            )),
        }
    }

    fn u32(&mut self, what: &str) -> Result<u32, Error> {
        Ok(le_u32(self.take(4, what)?, 0))
    }

    fn u64(&mut self, what: &str) -> Result<u64, Error> {
        Ok(le_u64(self.take(8, what)?, 0))
    }

    fn i64_nonneg(&mut self, what: &str) -> Result<u64, Error> {
        let at = self.pos;
        let v = self.u64(what)?;
        if (v as i64) < 0 {
            self.pos = at;
            return Err(self.err(what, format!("negative value {}", v as i64)));
        }
        Ok(v)
    }

    /// A .NET BinaryWriter string: 7-bit encoded length, then UTF-8 bytes.
    fn string(&mut self, what: &str) -> Result<String, Error> {
        let at = self.pos;
        let mut len: u64 = 0;
        let mut shift = 0;
        loop {
            let b = self.take(1, what)?[0];
            len |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 28 {
                self.pos = at;
                return Err(self.err(what, "string length prefix longer than 5 bytes".into()));
            }
        }
        if len > MAX_STRING {
            self.pos = at;
            return Err(self.err(what, format!("string length {len} > {MAX_STRING}")));
        }
        let s = self.take(len as usize, what)?;
        match std::str::from_utf8(s) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => {
                self.pos = at;
                Err(self.err(what, "string is not UTF-8".into()))
            }
        }
    }
}

/// Parses a bundle manifest from `bytes`, which hold the host file's bytes from file offset
/// `bytes_offset` on; the manifest header is at file offset `header_offset`.
///
/// `file_len`, when known, bounds the entries' offsets (an entry past the end of the file is an
/// error).
pub fn parse_manifest(
    bytes: &[u8],
    bytes_offset: u64,
    header_offset: u64,
    file_len: Option<u64>,
) -> Result<BundleManifest, Error> {
    let start = header_offset
        .checked_sub(bytes_offset)
        .and_then(|s| usize::try_from(s).ok())
        .filter(|&s| s <= bytes.len())
        .ok_or_else(|| {
            Error::malformed(
                "bundle manifest header",
                header_offset,
                format!(
                    "not within the bytes at hand ({bytes_offset:#x}..+{:#x})",
                    bytes.len()
                ),
            )
        })?;
    let mut c = Cursor {
        b: &bytes[start..],
        pos: 0,
        base: header_offset,
    };
    let major = c.u32("major version")?;
    let minor = c.u32("minor version")?;
    if !(1..=100).contains(&major) {
        return Err(Error::malformed(
            "bundle manifest header",
            header_offset,
            format!("major version {major} is not a bundle version (1..=100)"),
        ));
    }
    let count = c.u32("file count")? as i32;
    if count < 0 || count as u64 > MAX_BUNDLE_FILES {
        return Err(Error::AbsurdCount {
            structure: "bundle manifest file count".into(),
            offset: header_offset + 8,
            count: count as i64 as u64,
            max: MAX_BUNDLE_FILES,
        });
    }
    let bundle_id = c.string("bundle id")?;
    let (mut deps_json, mut runtimeconfig_json, mut flags) = (None, None, 0);
    if major >= 2 {
        let loc = |o: u64, s: u64| (o != 0).then_some((o, s));
        let (o, s) = (
            c.i64_nonneg("deps.json offset")?,
            c.i64_nonneg("deps.json size")?,
        );
        deps_json = loc(o, s);
        let (o, s) = (
            c.i64_nonneg("runtimeconfig.json offset")?,
            c.i64_nonneg("runtimeconfig.json size")?,
        );
        runtimeconfig_json = loc(o, s);
        flags = c.u64("flags")?;
    }
    // Each entry takes at least 18 bytes (v1..5) or 26 (v6+): the count must fit.
    let min_entry = if major >= 6 { 26 } else { 18 };
    let remaining = c.b.len() - c.pos;
    if (count as usize).saturating_mul(min_entry) > remaining {
        return Err(Error::malformed(
            "bundle manifest file count",
            header_offset + 8,
            format!(
                "{count} entries need at least {} bytes but only {remaining} follow",
                count as usize * min_entry
            ),
        ));
    }
    let mut entries = Vec::with_capacity(count as usize);
    for i in 0..count {
        let what = |f: &str| format!("entry {i} {f}");
        let entry_off = header_offset + c.pos as u64;
        let offset = c.i64_nonneg(&what("offset"))?;
        let size = c.i64_nonneg(&what("size"))?;
        let compressed_size = if major >= 6 {
            c.i64_nonneg(&what("compressed size"))?
        } else {
            0
        };
        let file_type = BundleFileType::from_u8(c.take(1, &what("type"))?[0]);
        let relative_path = c.string(&what("path"))?;
        let e = BundleEntry {
            offset,
            size,
            compressed_size,
            file_type,
            relative_path,
        };
        if let Some(len) = file_len {
            if !matches!(e.offset.checked_add(e.stored_size()), Some(end) if end <= len) {
                return Err(Error::malformed(
                    format!("bundle manifest entry {i} ({})", e.relative_path),
                    entry_off,
                    format!(
                        "bytes {:#x}..+{:#x} lie past the end of the file ({len:#x})",
                        e.offset,
                        e.stored_size()
                    ),
                ));
            }
        }
        entries.push(e);
    }
    Ok(BundleManifest {
        header_offset,
        major_version: major,
        minor_version: minor,
        bundle_id,
        deps_json,
        runtimeconfig_json,
        flags,
        entries,
        manifest_size: c.pos as u64,
    })
}

/// Writes a manifest in the bundle format (tests and fuzzing build bundles with it).
pub fn write_manifest(m: &BundleManifest) -> Vec<u8> {
    fn string(out: &mut Vec<u8>, s: &str) {
        let mut n = s.len() as u64;
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        }
        out.extend_from_slice(s.as_bytes());
    }
    let mut out = Vec::new();
    out.extend_from_slice(&m.major_version.to_le_bytes());
    out.extend_from_slice(&m.minor_version.to_le_bytes());
    out.extend_from_slice(&(m.entries.len() as u32).to_le_bytes());
    string(&mut out, &m.bundle_id);
    if m.major_version >= 2 {
        for loc in [m.deps_json, m.runtimeconfig_json] {
            let (o, s) = loc.unwrap_or((0, 0));
            out.extend_from_slice(&o.to_le_bytes());
            out.extend_from_slice(&s.to_le_bytes());
        }
        out.extend_from_slice(&m.flags.to_le_bytes());
    }
    for e in &m.entries {
        out.extend_from_slice(&e.offset.to_le_bytes());
        out.extend_from_slice(&e.size.to_le_bytes());
        if m.major_version >= 6 {
            out.extend_from_slice(&e.compressed_size.to_le_bytes());
        }
        out.push(match e.file_type {
            BundleFileType::Unknown => 0,
            BundleFileType::Assembly => 1,
            BundleFileType::NativeBinary => 2,
            BundleFileType::DepsJson => 3,
            BundleFileType::RuntimeConfigJson => 4,
            BundleFileType::Symbols => 5,
            BundleFileType::Other(n) => n,
        });
        string(&mut out, &e.relative_path);
    }
    out
}
