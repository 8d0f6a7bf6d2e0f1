//! What dbgext asks of a debugger engine, in dbgeng's own terms.
//!
//! [`Engine`] is the narrow, platform-neutral face of the dbgeng calls the extension makes; the
//! Windows build implements it over the COM interfaces (`dbgeng.rs`), and the tests implement it
//! over a dump file. An engine is only ever called on the thread that owns it (dbgeng's rule:
//! the thread WinDbg called the extension on), which is why the trait is neither `Send` nor
//! `Sync`: the target built on top of it forwards every call to that thread.

/// One thread as the engine lists it (`IDebugSystemObjects::GetThreadIdsByIndex`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineThread {
    /// The engine's own thread id (what `SetCurrentThreadId` takes).
    pub engine_id: u32,
    /// The OS thread id.
    pub system_id: u32,
}

/// What the engine knows of one thread's state.
#[derive(Debug, Clone, Default)]
pub struct ThreadState {
    /// The raw x64 `CONTEXT` (`IDebugAdvanced::GetThreadContext`), if it could be had.
    pub context: Option<Vec<u8>>,
    /// The TEB address (`IDebugSystemObjects::GetCurrentThreadTeb`), Windows targets only.
    pub teb: Option<u64>,
}

/// One module (`IDebugSymbols::GetModuleParameters` + `GetModuleNameString(DEBUG_MODNAME_IMAGE)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineModule {
    /// Load address.
    pub base: u64,
    /// Size of the image in memory.
    pub size: u32,
    /// PE `TimeDateStamp` (0 when unknown or not a PE).
    pub timestamp: u32,
    /// The image file's path as the engine knows it.
    pub image_name: String,
}

/// A memory region (`IDebugDataSpaces2::QueryVirtual`, a `MEMORY_BASIC_INFORMATION64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineRegion {
    /// Region start.
    pub base: u64,
    /// Region size.
    pub size: u64,
    /// `MEM_COMMIT` (0x1000), `MEM_RESERVE` (0x2000) or `MEM_FREE` (0x10000).
    pub state: u32,
    /// `PAGE_*` protection.
    pub protect: u32,
}

/// `MEM_COMMIT`.
pub const MEM_COMMIT: u32 = 0x1000;
/// `MEM_FREE`.
pub const MEM_FREE: u32 = 0x10000;

/// The last event when it is an exception (`IDebugControl::GetLastEventInformation` with
/// `DEBUG_EVENT_EXCEPTION` and its `EXCEPTION_RECORD64`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineException {
    /// OS id of the thread the event happened on, when the engine could say.
    pub system_thread_id: Option<u32>,
    /// `ExceptionCode`.
    pub code: u32,
    /// `ExceptionFlags`.
    pub flags: u32,
    /// `ExceptionAddress`.
    pub address: u64,
    /// `ExceptionInformation[..NumberParameters]`.
    pub parameters: Vec<u64>,
}

/// `IMAGE_FILE_MACHINE_AMD64`, what `IDebugControl::GetActualProcessorType` gives for x64.
pub const IMAGE_FILE_MACHINE_AMD64: u32 = 0x8664;

/// The debugger engine calls dbgext needs. Every method maps to one or a few dbgeng calls; a
/// method that fails answers `None`/empty rather than an error: the target then says "unknown".
pub trait Engine {
    /// `IDebugDataSpaces::ReadVirtual`: `Ok(bytes read)`, or the failing HRESULT. An engine may
    /// fail a read that is only partly readable, or succeed with fewer bytes: both are handled.
    fn read_virtual(&self, addr: u64, buf: &mut [u8]) -> Result<usize, i32>;
    /// `IDebugDataSpaces2::QueryVirtual`: the region containing `addr`, or the next one above
    /// it (dump targets), `None` past the last.
    fn query_virtual(&self, addr: u64) -> Option<EngineRegion>;
    /// The threads, in engine order.
    fn threads(&self) -> Vec<EngineThread>;
    /// Each thread's context and TEB (the engine's current thread is switched and restored).
    fn thread_states(&self, threads: &[EngineThread]) -> Vec<ThreadState>;
    /// `IDebugSystemObjects::GetCurrentProcessSystemId`.
    fn process_id(&self) -> Option<u32>;
    /// `IDebugSystemObjects2::GetCurrentProcessExecutableName`.
    fn executable_name(&self) -> Option<String>;
    /// The loaded modules, in engine order.
    fn modules(&self) -> Vec<EngineModule>;
    /// The last event, when it was an exception.
    fn last_exception(&self) -> Option<EngineException>;
    /// `IDebugControl::GetActualProcessorType` (an `IMAGE_FILE_MACHINE_*`).
    fn processor_type(&self) -> Option<u32>;
    /// What is being debugged, for `info`'s "Dump:" line: the dump file
    /// (`IDebugClient4::GetDumpFileWide`), or a description of a live target.
    fn target_name(&self) -> Option<String>;
}
