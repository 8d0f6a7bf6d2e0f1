//! Errors: each names the structure and the file offset (or address) it concerns.
//!
//! Each renders for people as one sentence (`Display`, addresses in hex) and serializes as
//! `{"kind", ...fields, "message"}` (see [`crate::json`] and docs/json.md, "Errors").

use crate::check::Refusals;
use std::path::PathBuf;

/// Everything that can go wrong while opening or parsing a dump or a module image.
///
/// Every variant names the structure involved and where it is (a file offset for dump
/// structures, a virtual address for structures read out of the dump's memory), so a message
/// is enough to find the bad bytes with a hex editor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[serde(remote = "Self", tag = "kind", rename_all = "snake_case")]
pub enum Error {
    /// An I/O error (opening, mapping or decompressing a file).
    #[error("{path}: {message}")]
    Io {
        /// The file concerned.
        #[serde(serialize_with = "crate::json::path")]
        path: PathBuf,
        /// The operating system's message.
        #[serde(rename = "os_error")]
        message: String,
    },
    /// The file starts with bytes that are neither an ELF core, a minidump nor zstd.
    #[error("unrecognised file format: first bytes {found:02x?} (expected ELF 7f 45 4c 46, minidump 'MDMP' or zstd 28 b5 2f fd)")]
    BadMagic {
        /// Up to the first 8 bytes of the file.
        found: Vec<u8>,
    },
    /// A structure extends past the end of the file.
    #[error("{structure} at file offset {offset:#x} needs {needed} bytes but the file is only {file_len:#x} bytes long")]
    Truncated {
        /// The structure, e.g. "program header 5".
        structure: String,
        /// File offset of the structure.
        #[serde(serialize_with = "crate::json::hex")]
        offset: u64,
        /// Bytes the structure needs.
        needed: u64,
        /// Length of the file.
        file_len: u64,
    },
    /// A memory segment's contents lie (partly) outside the file.
    #[error("segment {index} (address {address:#x}) claims file bytes {offset:#x}..+{size:#x} but the file is only {file_len:#x} bytes long")]
    SegmentOutsideFile {
        /// Index of the program header / memory descriptor.
        index: usize,
        /// Virtual address of the segment.
        #[serde(serialize_with = "crate::json::hex")]
        address: u64,
        /// File offset of the segment's bytes.
        #[serde(serialize_with = "crate::json::hex")]
        offset: u64,
        /// Number of file bytes the segment claims.
        size: u64,
        /// Length of the file.
        file_len: u64,
    },
    /// A count read from the file is larger than any sane dump would have.
    #[error("{structure} at file offset {offset:#x}: count {count} exceeds the limit {max}")]
    AbsurdCount {
        /// The structure holding the count.
        structure: String,
        /// File offset of the count.
        #[serde(serialize_with = "crate::json::hex")]
        offset: u64,
        /// The count found.
        count: u64,
        /// The largest count accepted.
        max: u64,
    },
    /// Two memory segments overlap; the first one (in file order) is kept.
    #[error("segment {index} ({address:#x}..{end:#x}) overlaps segment {other}; the bytes of segment {other} are kept")]
    OverlappingSegment {
        /// Index of the segment that lost the overlapping part.
        index: usize,
        /// Its start address.
        #[serde(serialize_with = "crate::json::hex")]
        address: u64,
        /// Its end address.
        #[serde(serialize_with = "crate::json::hex")]
        end: u64,
        /// Index of the segment that was kept.
        other: usize,
    },
    /// A structure holds a value that cannot be right.
    #[error("{structure} at file offset {offset:#x}: {reason}")]
    Malformed {
        /// The structure.
        structure: String,
        /// File offset of the structure.
        #[serde(serialize_with = "crate::json::hex")]
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A format feature this reader does not handle (e.g. a 32-bit or big-endian core).
    #[error("unsupported: {what}")]
    Unsupported {
        /// What is unsupported.
        what: String,
    },
    /// A structure read out of the dump's memory (a module image header, say) is missing or bad.
    #[error("{structure} at address {address:#x}: {reason}")]
    BadImage {
        /// The structure, e.g. "ELF header of /usr/lib/libc.so.6".
        structure: String,
        /// Its virtual address.
        #[serde(serialize_with = "crate::json::hex")]
        address: u64,
        /// What is wrong.
        reason: String,
    },
    /// Memory that a structure needs is not in the dump.
    #[error(transparent)]
    Read(
        #[from]
        #[serde(serialize_with = "ReadError::serialize")]
        ReadError,
    ),
    /// No module image could be found (neither in the dump's memory nor on disk).
    #[error("no image for module {module}: {refusals}")]
    NoImage {
        /// The module's path.
        module: String,
        /// Every source tried and why it was refused.
        refusals: Refusals,
    },
    /// A .NET single-file host's bundle manifest could be read neither from the dump's memory
    /// nor from the host's file.
    #[error("bundle manifest of {host} at file offset {header_offset:#x}: {refusals}")]
    NoManifest {
        /// The host's path.
        host: String,
        /// File offset of the manifest (the bundle marker's value).
        #[serde(serialize_with = "crate::json::hex")]
        header_offset: u64,
        /// Every source tried and why it was refused.
        refusals: Refusals,
    },
}

crate::serialize_with_message!(Error);

impl Error {
    pub(crate) fn io(path: &std::path::Path, e: &std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        }
    }

    pub(crate) fn truncated(
        structure: impl Into<String>,
        offset: u64,
        needed: u64,
        file_len: u64,
    ) -> Error {
        Error::Truncated {
            structure: structure.into(),
            offset,
            needed,
            file_len,
        }
    }

    pub(crate) fn malformed(
        structure: impl Into<String>,
        offset: u64,
        reason: impl Into<String>,
    ) -> Error {
        Error::Malformed {
            structure: structure.into(),
            offset,
            reason: reason.into(),
        }
    }
}

/// A read of dump memory that did not get all the bytes it wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[serde(remote = "Self")]
#[error("memory read at {addr:#x}: wanted {wanted} bytes, got {got}")]
pub struct ReadError {
    /// First address of the read.
    #[serde(serialize_with = "crate::json::hex")]
    pub addr: u64,
    /// Bytes requested.
    pub wanted: usize,
    /// Bytes available from `addr` onward.
    pub got: usize,
}

crate::serialize_with_message!(ReadError, kind = "read");

/// A recoverable problem met while parsing: in strict mode it is the error; otherwise it is
/// kept as a warning and parsing goes on.
pub(crate) fn recoverable(e: Error, strict: bool, warnings: &mut Vec<Error>) -> Result<(), Error> {
    if strict {
        return Err(e);
    }
    warnings.push(e);
    Ok(())
}
