//! dumpshell's command library, under every front end (the `dumpshell` binary's REPL, `-c`,
//! scripts and `triage`; the WinDbg extension). Each command parses its arguments, asks
//! `dumpreader` / `clrdata` for typed data, and returns an [`Output`] that renders both as
//! text and as one JSON document. No terminal crate is used here: the front ends choose where
//! the text goes, how wide tables may be ([`text::set_width`]), and how cancellation and
//! progress reach the user ([`control::Control`]).

pub mod about;
pub mod addr;
pub mod asyncs;
pub mod buckets;
pub mod codeinfo;
pub mod control;
pub mod exceptions;
pub mod heap;
pub mod heaprefs;
pub mod heapsos;
pub mod help;
pub mod ilsos;
pub mod locks;
pub mod native;
pub mod nativeaot;
pub mod objects;
pub mod output;
pub mod registry;
pub mod roots;
pub mod runtimesos;
pub mod session;
pub mod settings;
pub mod spec;
pub mod stacks;
pub mod style;
pub mod text;
pub mod threadpool;
pub mod tokenize;
pub mod tree;
pub mod triage;
pub mod web;

pub use help::help_text;
pub use output::{CommandError, Output, JSON_SCHEMA_VERSION};
pub use registry::{execute, execute_streaming, lookup, parse, registry, Invocation};
pub use session::Session;
pub use spec::CommandSpec;
