//! dbgext: dumpshell's commands inside WinDbg (issue 9).
//!
//! Not built yet: the DLL will implement dumpreader's `Memory` over IDebugDataSpaces and route
//! the same `repl` commands through IDebugControl output. Until then this crate only links the
//! command layer so the workspace layout is in place and the dependency direction is checked.

/// The version string the extension will report from `DebugExtensionInitialize`.
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
