//! Plain data describing a dump: process info, threads with registers, modules.

use std::path::Path;

/// The container format of a dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DumpFormat {
    /// A Linux ELF core (kernel, gdb `gcore`, .NET `createdump`).
    ElfCore,
    /// A Windows minidump (`MDMP`).
    Minidump,
}

/// The operating system the dumped process ran on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Os {
    /// Linux.
    Linux,
    /// Windows.
    Windows,
    /// Something else (minidump platform id).
    Other(u32),
}

/// The dumped process's architecture. Only x86-64 is supported for threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    /// x86-64 / AMD64.
    X86_64,
    /// Something else: ELF `e_machine` or minidump processor architecture.
    Other(u32),
}

/// An exception (Windows) or fatal signal (Linux) recorded in the dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExceptionInfo {
    /// Windows exception code (e.g. 0xC0000005), or the Linux signal number.
    pub code: u32,
    /// Faulting address: `ExceptionAddress` (Windows) or `si_addr` (Linux, fault signals only).
    pub address: u64,
    /// OS id of the thread that took it.
    pub thread_id: u32,
    /// Linux `si_code`, or Windows `ExceptionFlags`.
    pub flags: u32,
    /// Windows `ExceptionInformation[..NumberParameters]` (empty on Linux).
    pub parameters: Vec<u64>,
}

/// What the dump says about the process as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpInfo {
    /// Container format.
    pub format: DumpFormat,
    /// Operating system.
    pub os: Os,
    /// Architecture.
    pub arch: Arch,
    /// Process id, if recorded (ELF: `NT_PRPSINFO` or the main thread; minidump: MiscInfo).
    pub pid: Option<u32>,
    /// Exception record or fatal signal, if any.
    pub exception: Option<ExceptionInfo>,
    /// The crashing thread (minidump: the exception's thread; ELF: the first thread whose
    /// `pr_cursig` is a fatal signal, else the first thread when `NT_SIGINFO` holds one).
    pub crashing_thread: Option<u32>,
    /// The main thread (ELF: the thread whose id is the pid; minidump: first listed thread).
    pub main_thread: Option<u32>,
    /// Executable name (ELF `NT_PRPSINFO` `pr_fname`), if recorded.
    pub process_name: Option<String>,
    /// Command line (ELF `NT_PRPSINFO` `pr_psargs`, at most 80 bytes), if recorded.
    pub command_line: Option<String>,
    /// ELF auxiliary vector (`NT_AUXV`): (type, value) pairs.
    pub auxv: Vec<(u64, u64)>,
    /// When the dump was written, in seconds since 1970 (UTC), when the dump records it
    /// (minidump: the header's `TimeDateStamp`; an ELF core records no time).
    pub written_at: Option<u64>,
    /// Problems found in the dump that did not stop it from opening (overlapping or clipped
    /// segments, unreadable optional streams...). Each is a precise [`crate::Error`].
    pub warnings: Vec<crate::Error>,
}

/// Full x86-64 register context of a thread.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[allow(missing_docs)]
pub struct X64Context {
    pub rax: u64,
    pub rbx: u64,
    pub rcx: u64,
    pub rdx: u64,
    pub rsi: u64,
    pub rdi: u64,
    pub rbp: u64,
    pub rsp: u64,
    pub r8: u64,
    pub r9: u64,
    pub r10: u64,
    pub r11: u64,
    pub r12: u64,
    pub r13: u64,
    pub r14: u64,
    pub r15: u64,
    pub rip: u64,
    pub rflags: u64,
    pub cs: u16,
    pub ss: u16,
    pub ds: u16,
    pub es: u16,
    pub fs: u16,
    pub gs: u16,
    /// FS segment base (Linux: the thread pointer, TLS). 0 when unknown (minidumps).
    pub fs_base: u64,
    /// GS segment base (Windows: the TEB, from the thread list). 0 when unknown.
    pub gs_base: u64,
    /// Linux `orig_rax` (the syscall number when stopped in a syscall), 0 otherwise.
    pub orig_rax: u64,
    /// The 512-byte FXSAVE area (x87, MXCSR, XMM0-15) when the dump has it
    /// (ELF `NT_PRFPREG`; minidump CONTEXT with CONTEXT_FLOATING_POINT).
    pub fxsave: Option<Box<[u8; 512]>>,
}

impl X64Context {
    /// XMM register `i` (0..16) from the FXSAVE area.
    pub fn xmm(&self, i: usize) -> Option<u128> {
        let fx = self.fxsave.as_ref()?;
        let off = 160usize.checked_add(i.checked_mul(16)?)?;
        if i >= 16 {
            return None;
        }
        let b: [u8; 16] = fx.get(off..off + 16)?.try_into().ok()?;
        Some(u128::from_le_bytes(b))
    }

    /// MXCSR from the FXSAVE area.
    pub fn mxcsr(&self) -> Option<u32> {
        let fx = self.fxsave.as_ref()?;
        Some(u32::from_le_bytes([fx[24], fx[25], fx[26], fx[27]]))
    }

    /// Register by DWARF number (x86-64 psABI: 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi,
    /// 6 rbp, 7 rsp, 8-15 r8-r15, 16 rip, 49 rflags, 50-55 es cs ss ds fs gs, 58/59 fs/gs base).
    pub fn dwarf_reg(&self, n: u16) -> Option<u64> {
        Some(match n {
            0 => self.rax,
            1 => self.rdx,
            2 => self.rcx,
            3 => self.rbx,
            4 => self.rsi,
            5 => self.rdi,
            6 => self.rbp,
            7 => self.rsp,
            8 => self.r8,
            9 => self.r9,
            10 => self.r10,
            11 => self.r11,
            12 => self.r12,
            13 => self.r13,
            14 => self.r14,
            15 => self.r15,
            16 => self.rip,
            49 => self.rflags,
            50 => self.es as u64,
            51 => self.cs as u64,
            52 => self.ss as u64,
            53 => self.ds as u64,
            54 => self.fs as u64,
            55 => self.gs as u64,
            58 => self.fs_base,
            59 => self.gs_base,
            _ => return None,
        })
    }

    /// Register by (lower-case) name: "rax".."r15", "rip", "rflags"/"eflags", segment
    /// registers, "fs_base", "gs_base", "orig_rax".
    pub fn get(&self, name: &str) -> Option<u64> {
        Some(match name {
            "rax" => self.rax,
            "rbx" => self.rbx,
            "rcx" => self.rcx,
            "rdx" => self.rdx,
            "rsi" => self.rsi,
            "rdi" => self.rdi,
            "rbp" => self.rbp,
            "rsp" => self.rsp,
            "r8" => self.r8,
            "r9" => self.r9,
            "r10" => self.r10,
            "r11" => self.r11,
            "r12" => self.r12,
            "r13" => self.r13,
            "r14" => self.r14,
            "r15" => self.r15,
            "rip" => self.rip,
            "rflags" | "eflags" => self.rflags,
            "cs" => self.cs as u64,
            "ss" => self.ss as u64,
            "ds" => self.ds as u64,
            "es" => self.es as u64,
            "fs" => self.fs as u64,
            "gs" => self.gs as u64,
            "fs_base" => self.fs_base,
            "gs_base" => self.gs_base,
            "orig_rax" => self.orig_rax,
            _ => return None,
        })
    }
}

/// One thread of the dumped process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    /// OS thread id (Linux tid / Windows thread id).
    pub id: u32,
    /// Register context.
    pub context: X64Context,
    /// Stack memory `(start, end)`: the minidump stack descriptor, or for ELF cores the memory
    /// range containing `rsp`. `None` when unknown.
    pub stack: Option<(u64, u64)>,
    /// Windows TEB address (minidump), if known.
    pub teb: Option<u64>,
    /// Thread name (minidump ThreadNames stream), if recorded.
    pub name: Option<String>,
    /// Current signal of this thread (ELF `pr_cursig`, else `pr_info.si_signo`), 0 if none.
    pub signal: u32,
    /// Thread start address (minidump ThreadInfoList), if recorded.
    pub start_address: Option<u64>,
}

/// What kind of file a module is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModuleKind {
    /// An ELF image (shared library or executable).
    Elf,
    /// A PE image (Windows module, or a managed assembly mapped on Linux).
    Pe,
    /// A mapped file that is not a recognised image (data file, or whose header page is missing).
    Other,
}

/// How a module is identified, to match it against a file on disk.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ModuleIdentity {
    /// ELF GNU build id (`NT_GNU_BUILD_ID`).
    BuildId(Vec<u8>),
    /// PE `TimeDateStamp` and `SizeOfImage` (the symbol-server key).
    Pe {
        /// COFF header TimeDateStamp.
        timestamp: u32,
        /// Optional header SizeOfImage.
        size_of_image: u32,
    },
}

impl std::fmt::Display for ModuleIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModuleIdentity::BuildId(b) => {
                write!(f, "build-id ")?;
                for x in b {
                    write!(f, "{x:02x}")?;
                }
                Ok(())
            }
            ModuleIdentity::Pe {
                timestamp,
                size_of_image,
            } => {
                write!(f, "pe {timestamp:08X}{size_of_image:x}")
            }
        }
    }
}

/// One file mapping of the process (ELF `NT_FILE` entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Offset in the file of the byte mapped at `start`.
    pub file_offset: u64,
    /// The file's path as the kernel recorded it.
    pub path: String,
}

/// A module: a mapped image file (ELF, PE) or, on Linux, any mapped file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleInfo {
    /// Path as recorded in the dump.
    pub path: String,
    /// Load address (where the image's headers are).
    pub base: u64,
    /// One past the last mapped address.
    pub end: u64,
    /// Kind of image.
    pub kind: ModuleKind,
    /// Identity (build id or PE timestamp+size), when the dump has it.
    pub identity: Option<ModuleIdentity>,
    /// The file mappings making up this module (ELF cores; empty for minidumps).
    pub mappings: Vec<FileMapping>,
    /// PDB file name from the CodeView record (minidumps), if any.
    pub debug_file: Option<String>,
    /// Debug identifier (PDB GUID+age, or ELF build id) from the CodeView record, if any.
    pub debug_id: Option<String>,
}

impl ModuleInfo {
    /// Size in bytes (`end - base`).
    pub fn size(&self) -> u64 {
        self.end.saturating_sub(self.base)
    }

    /// Whether `addr` lies within `base..end`.
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.base && addr < self.end
    }

    /// The file name part of the path (handles both `/` and `\` separators).
    pub fn name(&self) -> &str {
        let p = self.path.as_str();
        let cut = p.rfind(['/', '\\']).map(|i| i + 1).unwrap_or(0);
        p.get(cut..).unwrap_or(p)
    }

    /// The path as a [`Path`].
    pub fn path(&self) -> &Path {
        Path::new(&self.path)
    }
}

/// Who wrote a dump, as its layout tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DumpProducer {
    /// The .NET runtime's `createdump` (ELF core: EI_OSABI GNU/Linux, no XSAVE notes).
    Createdump,
    /// gdb's `gcore` (ELF core with GDB notes or section headers).
    Gcore,
    /// The Linux kernel (core_pattern, systemd-coredump): an ELF core of neither kind above.
    Kernel,
    /// A Windows minidump (MiniDumpWriteDump, or createdump.exe which calls it).
    Minidump,
}

impl DumpProducer {
    /// A short name: "createdump", "gcore", "kernel", "minidump".
    pub fn name(&self) -> &'static str {
        match self {
            DumpProducer::Createdump => "createdump",
            DumpProducer::Gcore => "gcore",
            DumpProducer::Kernel => "kernel",
            DumpProducer::Minidump => "minidump",
        }
    }
}

/// What kind of dump this is: who wrote it and what memory it holds, from format facts only
/// (whether the GC heap is in it is for the CLR layer to tell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpKind {
    /// Who wrote it.
    pub producer: DumpProducer,
    /// The facts the producer was recognised by.
    pub evidence: Vec<String>,
    /// Minidumps: the `MINIDUMP_TYPE` flags the writer recorded in the header.
    pub minidump_type: Option<u64>,
    /// Minidumps: the names of the streams present, in directory order.
    pub streams: Vec<String>,
    /// ELF cores: bytes of mapped files (`NT_FILE`) in the process.
    pub file_bytes_mapped: u64,
    /// ELF cores: how many of those bytes the dump holds.
    pub file_bytes_present: u64,
    /// Bytes of memory the dump holds (including ranges that read as zeros).
    pub memory_bytes: u64,
    /// Whether the dump holds all of the process's memory: ELF, every page of every mapped file
    /// too (createdump --full; never true of gcore, which leaves out unmodified file pages);
    /// minidump, MiniDumpWithFullMemory.
    pub full_memory: bool,
}

/// `MINIDUMP_TYPE` flag names, by bit.
pub const MINIDUMP_TYPE_FLAGS: &[(u64, &str)] = &[
    (0x1, "WithDataSegs"),
    (0x2, "WithFullMemory"),
    (0x4, "WithHandleData"),
    (0x8, "FilterMemory"),
    (0x10, "ScanMemory"),
    (0x20, "WithUnloadedModules"),
    (0x40, "WithIndirectlyReferencedMemory"),
    (0x80, "FilterModulePaths"),
    (0x100, "WithProcessThreadData"),
    (0x200, "WithPrivateReadWriteMemory"),
    (0x400, "WithoutOptionalData"),
    (0x800, "WithFullMemoryInfo"),
    (0x1000, "WithThreadInfo"),
    (0x2000, "WithCodeSegs"),
    (0x4000, "WithoutAuxiliaryState"),
    (0x8000, "WithFullAuxiliaryState"),
    (0x10000, "WithPrivateWriteCopyMemory"),
    (0x20000, "IgnoreInaccessibleMemory"),
    (0x40000, "WithTokenInformation"),
    (0x80000, "WithModuleHeaders"),
    (0x100000, "FilterTriage"),
    (0x200000, "WithAvxXStateContext"),
    (0x400000, "WithIptTrace"),
    (0x800000, "ScanInaccessiblePartialPages"),
];

impl DumpKind {
    /// The names of the `MINIDUMP_TYPE` flags set (empty for ELF cores; "Normal" for 0).
    pub fn minidump_type_names(&self) -> Vec<&'static str> {
        match self.minidump_type {
            None => Vec::new(),
            Some(0) => vec!["Normal"],
            Some(t) => MINIDUMP_TYPE_FLAGS
                .iter()
                .filter(|(b, _)| t & b != 0)
                .map(|(_, n)| *n)
                .collect(),
        }
    }
}
