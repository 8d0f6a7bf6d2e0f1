//! The command layer of dumpshell: each command parses its arguments, asks `dumpreader` /
//! `clrdata` for typed data, and returns an [`Output`] that renders both as text (tables sized to
//! the terminal) and as one JSON document. The binary (`main.rs`) and the WinDbg extension only
//! choose where the text goes.

pub mod addr;
pub mod cancel;
pub mod commands;
pub mod output;
pub mod progress;
pub mod session;
pub mod tokenize;
pub mod tree;
pub mod triage;

pub use commands::{execute, lookup, registry, CommandSpec};
pub use output::{CommandError, Output, JSON_SCHEMA_VERSION};
pub use session::Session;
