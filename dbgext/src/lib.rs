//! dbgext: dumpshell's commands inside WinDbg.
//!
//! The DLL (built for `x86_64-pc-windows-gnu` or `-msvc`) exports the WinDbg extension entry
//! points (`DebugExtensionInitialize`, `DebugExtensionUninitialize`, `DebugExtensionNotify`),
//! `help`, and one export per command name ([`run::EXPORTED_COMMANDS`]). Each command export
//! builds a [`target::EngineTarget`] — dumpreader's `Target` over the debugger engine — and
//! runs the command by name through the `commands` library, so the text and `--json` are the same as
//! `dumpshell`'s; the text goes back through `IDebugControl::ControlledOutput`.
//!
//! The platform-neutral part (the [`engine::Engine`] trait, the target, the dispatch) builds and
//! is tested everywhere; the COM side (`dbgeng`, `exports`) only on Windows.

pub mod engine;
pub mod run;
pub mod target;

#[cfg(windows)]
pub mod dbgeng;
#[cfg(windows)]
mod exports;

/// The version string the extension reports.
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
