//! The errors of the runtime layer: each names the structure, the address and what was expected.
//!
//! One error story for the whole crate: every fallible function returns [`Result`] with a
//! [`ClrError`]. Each variant carries the data (addresses as numbers, the structure's name, what
//! was expected) and renders as one sentence with hex addresses; it serializes as a structured
//! object `{"kind": "<variant>", ...fields}` (addresses as `"0x.."` strings) to which the front
//! ends add the sentence as `"message"` (docs/json.md, "Errors"). Nothing is classified by its
//! text: a caller that must tell errors apart matches the variant.

use thiserror::Error;

/// Why a runtime structure could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error, serde::Serialize)]
#[serde(remote = "Self", tag = "kind", rename_all = "snake_case")]
pub enum ClrError {
    /// No CLR runtime module (libcoreclr.so, coreclr.dll, or a single-file host exporting
    /// `g_dacTable` / `DotNetRuntimeInfo`) is in the dump: not a .NET Core process.
    #[error("no .NET runtime found in the dump ({detail})")]
    NoRuntime {
        /// What was looked for and not found.
        detail: String,
    },

    /// The dump is of a NativeAOT app (its executable exports `DotNetRuntimeDebugHeader` or
    /// a NativeAOT `DotNetRuntimeContractDescriptor`): it has none of CoreCLR's structures, so
    /// what needs them is refused; [`crate::nativeaot`] reads what it has.
    #[error(
        "this is a NativeAOT app ({runtime}, {module} at {base:#x}): it has none of CoreCLR's \
         structures, which this command reads (NativeAOT dumps are read by info, eeversion, \
         clrthreads, clrstack, pstacks, crashinfo and dumpheap -stat)"
    )]
    NativeAot {
        /// The runtime as named for people, e.g. "NativeAOT .NET 10.0.12".
        runtime: String,
        /// The executable's file name.
        module: String,
        /// Its load address.
        #[serde(serialize_with = "dumpreader::json::hex")]
        base: u64,
    },

    /// A runtime was found but this build has no layout for it. The native commands still work.
    #[error("found {found} ({module} at {base:#x}); this build reads .NET 8, 9, 10 and 11")]
    UnsupportedRuntime {
        /// The runtime as named for people, e.g. ".NET Core 3.1.23".
        found: String,
        /// The runtime module's file name.
        module: String,
        /// Its load address.
        #[serde(serialize_with = "dumpreader::json::hex")]
        base: u64,
    },

    /// The runtime is read, but what was asked needs layouts or algorithms not yet verified
    /// against this family's DAC: refused rather than guessed.
    #[error(
        "{capability} is not verified for {runtime} yet (README: what is read on each \
         runtime); refusing rather than guessing"
    )]
    NotVerified {
        /// The runtime as named for people, e.g. ".NET 10.0.12 (linux-x64)".
        runtime: String,
        /// What was asked, e.g. "the stack walk".
        capability: &'static str,
    },

    /// A runtime type's field that neither the runtime's contract descriptor nor this build's
    /// supplement for the family gives.
    #[error(
        "missing field {ty}.{field} for {runtime}: not in its contract descriptor nor in \
             this build's supplement"
    )]
    MissingField {
        /// The runtime type (the runtime's own name, e.g. "MethodTable").
        ty: &'static str,
        /// The field (e.g. "AuxiliaryData").
        field: &'static str,
        /// The runtime.
        runtime: String,
    },

    /// The runtime's contract descriptor cannot be read, or names contract versions this
    /// build does not know.
    #[error("{runtime}: {detail}")]
    Descriptor {
        /// The runtime.
        runtime: String,
        /// What was wrong.
        detail: String,
    },

    /// Memory the structure needs is not in the dump.
    #[error("cannot read {what} at {addr:#x}: not in the dump")]
    Read {
        /// What was being read (e.g. "ThreadStore::m_ThreadList").
        what: String,
        /// Where.
        #[serde(serialize_with = "dumpreader::json::hex")]
        addr: u64,
    },

    /// A structure's content contradicts what the layout says it must be.
    #[error("{what} at {addr:#x}: {detail}")]
    Corrupt {
        /// The structure.
        what: String,
        /// Its address.
        #[serde(serialize_with = "dumpreader::json::hex")]
        addr: u64,
        /// What was wrong and what was expected.
        detail: String,
    },

    /// Something the reader looks up by name or number does not exist where it was looked
    /// for: a managed type's field, a type in a module, a method of a slot, a static.
    #[error("{what}: {detail}")]
    NotFound {
        /// What was looked up (e.g. "field System.Threading.ThreadPool.s_queues").
        what: String,
        /// Where it was looked for, and why it is not there.
        detail: String,
        /// The address looked at, when there is one.
        #[serde(
            serialize_with = "dumpreader::json::hex_opt",
            skip_serializing_if = "Option::is_none"
        )]
        addr: Option<u64>,
    },

    /// A managed type has no field of that name (a CoreLib type of another version, or not
    /// the type expected).
    #[error("{type_name} has no {} field {field}", if *is_static { "static" } else { "instance" })]
    NoSuchField {
        /// The type.
        type_name: String,
        /// The field looked for.
        field: String,
        /// Whether a static field was looked for.
        is_static: bool,
    },

    /// A form this build does not read (an unwind code, a precode kind, a signature element).
    #[error("{what}: {detail}")]
    Unsupported {
        /// What was met.
        what: String,
        /// Why it is not read.
        detail: String,
        /// Where it was met, when known.
        #[serde(
            serialize_with = "dumpreader::json::hex_opt",
            skip_serializing_if = "Option::is_none"
        )]
        addr: Option<u64>,
    },

    /// A module's ECMA-335 metadata (or a PDB) is malformed where it was read.
    #[error("{what}: {error}")]
    Metadata {
        /// Whose metadata, and what was read (e.g. "MethodDef 0x6000012 of hang.dll").
        what: String,
        /// What the metadata reader found wrong (names the stream, table, row or offset).
        #[serde(serialize_with = "dumpreader::json::display")]
        error: crate::metadata::Error,
    },

    /// An image file was needed (the dump lacks the image's pages) and could not be used.
    #[error("{what}: {detail}")]
    ImageFile {
        /// The image and what was wanted of it.
        what: String,
        /// Why no file served (not found, refused, unreadable).
        detail: String,
    },

    /// A frame cannot be unwound: no unwind information covers its address, or what covers it
    /// is not read.
    #[error("cannot unwind the frame at {ip:#x}: {detail}")]
    Unwind {
        /// The frame's instruction pointer.
        #[serde(serialize_with = "dumpreader::json::hex")]
        ip: u64,
        /// Why.
        detail: String,
    },

    /// A load-time sanity check of the chosen layout failed: the runtime build is not the one
    /// the layout was written for, or the structure checked is damaged (a zeroed String
    /// MethodTable reads the same as a foreign layout). Refusing beats printing garbage.
    #[error(
        "runtime {version} fails a sanity check (an unsupported build, or damaged memory): \
         {detail}"
    )]
    SanityCheck {
        /// The runtime version found.
        version: String,
        /// Which invariant failed.
        detail: String,
    },

    /// An error met while reading `context` (the thread list, a box's continuation, ...).
    #[error("{context}: {error}")]
    While {
        /// What was being read.
        context: String,
        /// What went wrong.
        error: Box<ClrError>,
    },

    /// The runtime's own description of its layout (its contract descriptor on .NET 9 and
    /// later, g_dacTable on .NET 8) or its version was found nowhere discovery may look: the
    /// dump's memory, the bundled build index, image files, a symbol server. Says what each
    /// source lacked and what would serve.
    #[error("{runtime}: {what} was found nowhere ({}); would serve: {needed}", tried_text(.tried))]
    NoLayout {
        /// The runtime as named for people (its module and version when known).
        runtime: String,
        /// What was looked for ("the contract descriptor", "g_dacTable", "the version").
        what: &'static str,
        /// Each source tried, in order, and why it did not serve.
        tried: Vec<SourceTried>,
        /// What would serve (an image file of the build, a symbol server).
        needed: String,
    },

    /// The runtime could not be read, and the dump reported damage of its own when it was
    /// opened (a truncated file, clipped segments): most likely the cause.
    #[error("{error} (the dump itself is damaged: {problem}{})", more_problems(*.more))]
    InDamagedDump {
        /// Why the runtime could not be read.
        error: Box<ClrError>,
        /// The dump's first problem.
        problem: String,
        /// How many more it reported.
        more: usize,
    },
}

dumpreader::serialize_with_message!(ClrError);

/// Where a runtime's layout (its contract descriptor, its g_dacTable) and version may come
/// from, in the order discovery tries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LayoutFrom {
    /// The dump's own memory.
    Dump,
    /// The build index bundled with dumpshell (crate `buildindex`), by the module's exact
    /// identity.
    BuildIndex,
    /// An image file of the runtime (`--image-path`, the path the dump records), its identity
    /// checked.
    ImageFile,
    /// A file downloaded from a symbol server (`--symbol-server`), its identity checked.
    SymbolServer,
}

impl std::fmt::Display for LayoutFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LayoutFrom::Dump => "the dump's memory",
            LayoutFrom::BuildIndex => "the build index",
            LayoutFrom::ImageFile => "image files",
            LayoutFrom::SymbolServer => "a symbol server",
        })
    }
}

/// One source discovery tried ([`ClrError::NoLayout`]), and why it did not serve.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SourceTried {
    /// The source.
    pub from: LayoutFrom,
    /// Why it did not serve.
    pub why: String,
}

fn tried_text(tried: &[SourceTried]) -> String {
    tried
        .iter()
        .map(|t| format!("{}: {}", t.from, t.why))
        .collect::<Vec<_>>()
        .join("; ")
}

fn more_problems(more: usize) -> String {
    match more {
        0 => String::new(),
        1 => "; and 1 more problem".into(),
        n => format!("; and {n} more problems"),
    }
}

impl ClrError {
    /// A [`ClrError::Read`] for `what` at `addr`.
    pub fn read(what: impl Into<String>, addr: u64) -> ClrError {
        ClrError::Read {
            what: what.into(),
            addr,
        }
    }

    /// A [`ClrError::Corrupt`].
    pub fn corrupt(what: impl Into<String>, addr: u64, detail: impl Into<String>) -> ClrError {
        ClrError::Corrupt {
            what: what.into(),
            addr,
            detail: detail.into(),
        }
    }

    /// A [`ClrError::NotFound`] without an address.
    pub fn not_found(what: impl Into<String>, detail: impl Into<String>) -> ClrError {
        ClrError::NotFound {
            what: what.into(),
            detail: detail.into(),
            addr: None,
        }
    }

    /// A [`ClrError::NotFound`] at `addr`.
    pub fn not_found_at(what: impl Into<String>, addr: u64, detail: impl Into<String>) -> ClrError {
        ClrError::NotFound {
            what: what.into(),
            detail: detail.into(),
            addr: Some(addr),
        }
    }

    /// A [`ClrError::Unsupported`].
    pub fn unsupported(
        what: impl Into<String>,
        addr: Option<u64>,
        detail: impl Into<String>,
    ) -> ClrError {
        ClrError::Unsupported {
            what: what.into(),
            detail: detail.into(),
            addr,
        }
    }

    /// A [`ClrError::Metadata`].
    pub fn metadata(what: impl Into<String>, error: crate::metadata::Error) -> ClrError {
        ClrError::Metadata {
            what: what.into(),
            error,
        }
    }

    /// A [`ClrError::Unwind`].
    pub fn unwind(ip: u64, detail: impl Into<String>) -> ClrError {
        ClrError::Unwind {
            ip,
            detail: detail.into(),
        }
    }

    /// A [`ClrError::ImageFile`].
    pub fn image_file(what: impl Into<String>, detail: impl Into<String>) -> ClrError {
        ClrError::ImageFile {
            what: what.into(),
            detail: detail.into(),
        }
    }

    /// This error, met while reading `context`.
    pub fn context(self, context: impl Into<String>) -> ClrError {
        ClrError::While {
            context: context.into(),
            error: Box::new(self),
        }
    }

    /// The innermost error (through [`ClrError::While`] and [`ClrError::InDamagedDump`]).
    pub fn root(&self) -> &ClrError {
        match self {
            ClrError::While { error, .. } | ClrError::InDamagedDump { error, .. } => error.root(),
            e => e,
        }
    }
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, ClrError>;
