//! Why a source of a module's bytes (the dump's memory, a file on disk, a bundle entry) was
//! accepted, or refused: typed, rendered by `Display`, serialized as [`crate::json`] says.

use crate::backing::FileSourceState;
use crate::error::Error;
use crate::types::ModuleIdentity;
use std::fmt;
use std::path::PathBuf;

/// What ties a file on disk to the dump: why it was accepted.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(remote = "Self", tag = "kind", rename_all = "snake_case")]
pub enum Evidence {
    /// Its identity (GNU build id, or PE TimeDateStamp and SizeOfImage) equals the one the
    /// dump records for the module.
    Identity {
        /// The identity both hold.
        #[serde(serialize_with = "crate::json::display")]
        identity: ModuleIdentity,
    },
    /// A .NET single-file host: its identity equals the dump's, and its bundle marker points
    /// where the dump's does (the build id names the runtime's host program, not the app
    /// bundled into it).
    IdentityAndBundle {
        /// The identity both hold.
        #[serde(serialize_with = "crate::json::display")]
        identity: ModuleIdentity,
        /// File offset of the bundle manifest both point at.
        #[serde(serialize_with = "crate::json::hex")]
        header_offset: u64,
    },
    /// The dump records no identity of the module: the file is read unverified.
    Unverified,
    /// The layer that knows the loader (clrdata) compared the file with the runtime's own
    /// records of the image; `compared` is its account of what agreed.
    Records {
        /// What was compared, in that layer's words.
        compared: String,
    },
}

impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let identity = |f: &mut fmt::Formatter<'_>, id: &ModuleIdentity| match id {
            ModuleIdentity::BuildId(_) => write!(f, "build id matches ({id})"),
            ModuleIdentity::Pe { .. } => write!(f, "PE identity matches ({id})"),
        };
        match self {
            Evidence::Identity { identity: id } => identity(f, id),
            Evidence::IdentityAndBundle { identity: id, .. } => {
                identity(f, id)?;
                write!(f, ", and its bundle marker")
            }
            Evidence::Unverified => write!(f, "identity not in dump, not verified"),
            Evidence::Records { compared } => write!(f, "{compared}"),
        }
    }
}

crate::serialize_with_message!(Evidence);

/// How a file was accepted: the evidence, and the candidates refused before it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(remote = "Self")]
pub struct FileCheck {
    /// What ties the file to the dump.
    pub evidence: Evidence,
    /// Candidates tried before it, and why each was refused.
    pub after: Refusals,
}

impl From<Evidence> for FileCheck {
    fn from(evidence: Evidence) -> FileCheck {
        FileCheck {
            evidence,
            after: Refusals::default(),
        }
    }
}

impl fmt::Display for FileCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.evidence)?;
        if !self.after.is_empty() {
            write!(f, " (after: {})", self.after)?;
        }
        Ok(())
    }
}

crate::serialize_with_message!(FileCheck, kind = "file_check");

/// Why one source of a module's bytes was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[serde(remote = "Self", tag = "kind", rename_all = "snake_case")]
pub enum Refusal {
    /// The dump's memory holds the image, but not all of it.
    #[error("dump memory incomplete: {}", join(gaps))]
    Incomplete {
        /// What is missing.
        gaps: Vec<ImageGap>,
    },
    /// The image cannot be read from the dump's memory.
    #[error("dump memory: {error}")]
    DumpMemory {
        /// Why.
        error: Box<Error>,
    },
    /// The image cannot be read from a debugger's memory (the WinDbg extension's target).
    #[error("debugger memory: {error}")]
    DebuggerMemory {
        /// Why.
        error: Box<Error>,
    },
    /// The mapping of the host file that holds the bundle manifest is not in the dump.
    #[error("mapping at {address:#x} not in the dump")]
    ManifestMappingAbsent {
        /// Start of the mapping.
        #[serde(serialize_with = "crate::json::hex")]
        address: u64,
    },
    /// The dump's memory where the bundle manifest is mapped does not hold a manifest.
    #[error("dump memory at {address:#x}: {error}")]
    ManifestInMemory {
        /// Where the manifest is mapped.
        #[serde(serialize_with = "crate::json::hex")]
        address: u64,
        /// What is wrong with it.
        error: Box<Error>,
    },
    /// No mapping of the host file covers the bundle manifest.
    #[error("no mapping of the manifest is in the dump")]
    ManifestNotMapped,
    /// No file of the host's name was found on the image path or at its recorded path.
    #[error("host file {name} not found")]
    HostFileNotFound {
        /// The host's file name.
        name: String,
    },
    /// The file of the single-file host that bundles the module could not be used.
    #[error("bundle host file: {refusals}")]
    BundleHost {
        /// Why each candidate host file was refused.
        refusals: Refusals,
    },
    /// The bundle stores the file compressed: its bytes in the host file are not the image's.
    #[error("{entry} is stored compressed in the bundle")]
    CompressedEntry {
        /// The entry's relative path.
        entry: String,
    },
    /// The bundle entry's bytes lie past the end of the host file.
    #[error(
        "{}: entry {entry} ({offset:#x}..+{size:#x}) lies past the end of the file ({file_len:#x} \
         bytes)",
        file.display()
    )]
    EntryOutsideFile {
        /// The host file.
        #[serde(serialize_with = "crate::json::path")]
        file: PathBuf,
        /// The entry's relative path.
        entry: String,
        /// The entry's file offset.
        #[serde(serialize_with = "crate::json::hex")]
        offset: u64,
        /// The entry's size.
        size: u64,
        /// The file's length.
        file_len: u64,
    },
    /// The file cannot be opened or mapped.
    #[error("{}: {message}", file.display())]
    Unreadable {
        /// The file.
        #[serde(serialize_with = "crate::json::path")]
        file: PathBuf,
        /// The operating system's message.
        #[serde(rename = "os_error")]
        message: String,
    },
    /// The file's identity is not the one the dump records.
    #[error("{}: identity mismatch: dump has {dump}, file has {found}", file.display())]
    IdentityMismatch {
        /// The file.
        #[serde(serialize_with = "crate::json::path")]
        file: PathBuf,
        /// The identity the dump records.
        #[serde(serialize_with = "crate::json::display")]
        dump: ModuleIdentity,
        /// The file's.
        #[serde(serialize_with = "crate::json::display")]
        found: ModuleIdentity,
    },
    /// The file has no identity (no build id note, no PE headers) to compare with the dump's.
    #[error("{}: no identity, dump has {dump}", file.display())]
    NoIdentity {
        /// The file.
        #[serde(serialize_with = "crate::json::path")]
        file: PathBuf,
        /// The identity the dump records.
        #[serde(serialize_with = "crate::json::display")]
        dump: ModuleIdentity,
    },
    /// A single-file host's file whose bundle marker points elsewhere than the dump's: the
    /// same host program with another app bundled into it.
    #[error(
        "{}: {evidence}, but it carries another bundle (manifest at file offset {found:#x}, \
         the dump's at {expected:#x})",
        file.display()
    )]
    OtherBundle {
        /// The host file.
        #[serde(serialize_with = "crate::json::path")]
        file: PathBuf,
        /// What matched (its build id).
        evidence: Evidence,
        /// File offset its marker points at.
        #[serde(serialize_with = "crate::json::hex")]
        found: u64,
        /// File offset the dump's marker points at.
        #[serde(serialize_with = "crate::json::hex")]
        expected: u64,
    },
    /// A single-file host's file without a bundle marker.
    #[error("{}: {evidence}, but no bundle marker in the file", file.display())]
    NoBundleMarker {
        /// The host file.
        #[serde(serialize_with = "crate::json::path")]
        file: PathBuf,
        /// What matched (its build id).
        evidence: Evidence,
    },
    /// The dump records no identity of the module, and the file was not verified otherwise
    /// (see [`crate::Dump::file_source`]).
    #[error("{}: identity not in dump, and {}", file.display(), state.describe())]
    NotVerified {
        /// The file.
        #[serde(serialize_with = "crate::json::path")]
        file: PathBuf,
        /// What is known of the mapped file's source.
        state: Box<FileSourceState>,
    },
    /// The file was accepted, but what it holds cannot be parsed.
    #[error("{}: {error}", file.display())]
    Unparsable {
        /// The file.
        #[serde(serialize_with = "crate::json::path")]
        file: PathBuf,
        /// What is wrong.
        error: Box<Error>,
    },
    /// Refused by the layer that knows the loader (clrdata): the file differs from the
    /// runtime's own records of the image.
    #[error("{}: {difference}", file.display())]
    Records {
        /// The file.
        #[serde(serialize_with = "crate::json::path")]
        file: PathBuf,
        /// The first difference, in that layer's words.
        difference: String,
    },
}

crate::serialize_with_message!(Refusal);

/// Sources tried in turn and why each was refused; `Display` joins them with "; ".
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
#[serde(transparent)]
pub struct Refusals(pub Vec<Refusal>);

impl std::ops::Deref for Refusals {
    type Target = Vec<Refusal>;
    fn deref(&self) -> &Vec<Refusal> {
        &self.0
    }
}

impl std::ops::DerefMut for Refusals {
    fn deref_mut(&mut self) -> &mut Vec<Refusal> {
        &mut self.0
    }
}

impl From<Vec<Refusal>> for Refusals {
    fn from(v: Vec<Refusal>) -> Refusals {
        Refusals(v)
    }
}

impl fmt::Display for Refusals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&join(&self.0))
    }
}

/// What a module image read from memory lacks (it is usable, but incomplete).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[serde(remote = "Self", tag = "kind", rename_all = "snake_case")]
pub enum ImageGap {
    /// The `.eh_frame_hdr` (PT_GNU_EH_FRAME) cannot be read.
    #[error(".eh_frame_hdr at {address:#x} unreadable")]
    EhFrameHdr {
        /// Its address.
        #[serde(serialize_with = "crate::json::hex")]
        address: u64,
    },
    /// The `.dynamic` section (PT_DYNAMIC) is not in memory: no symbols.
    #[error(".dynamic at {address:#x} not in memory")]
    Dynamic {
        /// Its address.
        #[serde(serialize_with = "crate::json::hex")]
        address: u64,
    },
    /// DT_SYMENT holds a symbol size no ELF64 symbol table has.
    #[error("DT_SYMENT {syment} unusable")]
    SymbolEntrySize {
        /// The value found.
        syment: u64,
    },
    /// Part of a table (`.dynstr`, `.dynsym`) is not in memory.
    #[error("{table} at {address:#x}: only {got} of {wanted} bytes in memory")]
    PartialTable {
        /// The table's name.
        table: &'static str,
        /// Its address.
        #[serde(serialize_with = "crate::json::hex")]
        address: u64,
        /// Bytes read.
        got: u64,
        /// Bytes it has.
        wanted: u64,
    },
    /// Neither DT_HASH nor DT_GNU_HASH can be read, nor is `.dynstr` after `.dynsym`.
    #[error("symbol count unknown (hash table not in memory)")]
    SymbolCount,
    /// The PE export directory cannot be read.
    #[error("export directory: {error}")]
    Exports {
        /// Why.
        error: Box<Error>,
    },
}

crate::serialize_with_message!(ImageGap);

/// Items' `Display` texts joined with "; ".
pub(crate) fn join<T: fmt::Display>(items: &[T]) -> String {
    let mut s = String::new();
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            s.push_str("; ");
        }
        s.push_str(&x.to_string());
    }
    s
}
