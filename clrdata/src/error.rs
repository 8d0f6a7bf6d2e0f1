//! The errors of the runtime layer: each names the structure, the address and what was expected.

use thiserror::Error;

/// Why a runtime structure could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ClrError {
    /// No CLR runtime module (libcoreclr.so, coreclr.dll, or a single-file host exporting
    /// `g_dacTable` / `DotNetRuntimeInfo`) is in the dump: not a .NET Core process.
    #[error("no .NET runtime found in the dump ({0})")]
    NoRuntime(String),

    /// A runtime was found but this build has no layout for it. The native commands still work.
    #[error("found {found} ({module} at {base:#x}); this build reads .NET 8, 9 and 10")]
    UnsupportedRuntime {
        /// The runtime as named for people, e.g. ".NET Core 3.1.23".
        found: String,
        /// The runtime module's file name.
        module: String,
        /// Its load address.
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
        addr: u64,
    },

    /// A structure's content contradicts what the layout says it must be.
    #[error("{what} at {addr:#x}: {detail}")]
    Corrupt {
        /// The structure.
        what: String,
        /// Its address.
        addr: u64,
        /// What was wrong and what was expected.
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
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, ClrError>;
