//! [`EngineTarget`]: dumpreader's [`Target`] over a debugger engine.
//!
//! dbgeng may only be called on the thread WinDbg called the extension on, while the commands
//! above may read memory from several threads at once (clrdata walks the heap with rayon). So a
//! command runs on a worker thread, and the extension's own thread serves the engine calls
//! ([`serve`]): the target sends each request over a channel and waits for the answer. To keep
//! that round trip off the hot path, memory is fetched in 64 KiB blocks and cached by 4 KiB page
//! for the life of one command (the target may run on between commands; within one, it is
//! stopped).
//!
//! What is read from the engine up front ([`Snapshot`]): threads and their contexts and TEBs,
//! memory regions, modules, process id, executable name, last exception, processor type.
//! What is derived lazily through memory: the OS (module headers: ELF or PE), module kinds and
//! identities, stacks (TEB's StackLimit..StackBase; else the region holding rsp), images.

use crate::engine::{
    Engine, EngineException, EngineModule, EngineRegion, EngineThread, MEM_COMMIT,
};
use dumpreader::context;
use dumpreader::{
    Arch, DumpFormat, DumpInfo, ExceptionInfo, ImageSource, Memory, MemoryRange, ModuleIdentity,
    ModuleImage, ModuleInfo, ModuleKind, Os, PeLayout, Perms, Target, ThreadInfo,
};
use std::collections::HashMap;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

const PAGE: u64 = 0x1000;
const BLOCK: u64 = 0x10000;
/// Most pages kept (256 MiB); the cache is emptied when it grows past this.
const MAX_CACHED_PAGES: usize = 65536;
/// Bound on the `QueryVirtual` walk.
const MAX_REGIONS: usize = 1 << 20;

/// Everything read from the engine before a command runs (on the engine's thread).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Threads with their raw states.
    pub threads: Vec<(EngineThread, crate::engine::ThreadState)>,
    /// Committed memory regions in address order.
    pub regions: Vec<EngineRegion>,
    /// Modules in engine order.
    pub modules: Vec<EngineModule>,
    /// Process id.
    pub pid: Option<u32>,
    /// Executable path or name.
    pub executable: Option<String>,
    /// Last exception.
    pub exception: Option<EngineException>,
    /// Processor type.
    pub processor: Option<u32>,
    /// What is debugged.
    pub target_name: Option<String>,
}

impl Snapshot {
    /// Reads the snapshot from the engine.
    pub fn collect(engine: &dyn Engine) -> Snapshot {
        let threads = engine.threads();
        let states = engine.thread_states(&threads);
        let threads = threads
            .into_iter()
            .zip(
                states
                    .into_iter()
                    .chain(std::iter::repeat_with(Default::default)),
            )
            .collect();
        let mut regions = Vec::new();
        let mut addr = 0u64;
        for _ in 0..MAX_REGIONS {
            let Some(r) = engine.query_virtual(addr) else {
                break;
            };
            let end = r.base.saturating_add(r.size);
            if r.size == 0 || end <= addr {
                break;
            }
            if r.state == MEM_COMMIT {
                regions.push(r);
            }
            if end == u64::MAX {
                break;
            }
            addr = end;
        }
        Snapshot {
            threads,
            regions,
            modules: engine.modules(),
            pid: engine.process_id(),
            executable: engine.executable_name(),
            exception: engine.last_exception(),
            processor: engine.processor_type(),
            target_name: engine.target_name(),
        }
    }
}

/// A request to the engine thread.
pub enum Request {
    /// Read the 64 KiB block at `base`; answer each page, `None` where the page is not wholly
    /// readable.
    Block {
        /// Block start (64 KiB aligned).
        base: u64,
        /// Where to answer.
        reply: Sender<Vec<Option<Arc<[u8]>>>>,
    },
    /// Read up to `len` bytes at `addr` (the readable prefix).
    Direct {
        /// Start.
        addr: u64,
        /// Length.
        len: usize,
        /// Where to answer.
        reply: Sender<Vec<u8>>,
    },
}

/// How many bytes from `addr` the engine can read, up to `buf.len()`, filling `buf`; exact
/// even for an engine that fails partly readable requests whole (binary search on the length).
pub fn read_prefix(engine: &dyn Engine, addr: u64, buf: &mut [u8]) -> usize {
    if buf.is_empty() {
        return 0;
    }
    match engine.read_virtual(addr, buf) {
        Ok(n) if n >= buf.len() => return buf.len(),
        Ok(n) if n > 0 => {
            // The engine said how far it got; trust it (dbgeng's partial-read behaviour).
            return n;
        }
        _ => {}
    }
    // Largest readable prefix: lo is known readable, hi known not.
    let (mut lo, mut hi) = (0usize, buf.len());
    let mut tmp = vec![0u8; buf.len()];
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match engine.read_virtual(addr, &mut tmp[..mid]) {
            Ok(n) if n >= mid => lo = mid,
            Ok(n) if n > lo => {
                lo = n;
                hi = mid;
            }
            _ => hi = mid,
        }
    }
    if lo > 0 && engine.read_virtual(addr, &mut buf[..lo]).ok() == Some(lo) {
        lo
    } else {
        0
    }
}

fn answer_block(engine: &dyn Engine, base: u64) -> Vec<Option<Arc<[u8]>>> {
    let pages = (BLOCK / PAGE) as usize;
    let mut buf = vec![0u8; BLOCK as usize];
    if matches!(engine.read_virtual(base, &mut buf), Ok(n) if n == buf.len()) {
        return buf
            .chunks(PAGE as usize)
            .map(|c| Some(Arc::from(c)))
            .collect();
    }
    (0..pages)
        .map(|i| {
            let a = base + i as u64 * PAGE;
            let mut p = vec![0u8; PAGE as usize];
            match engine.read_virtual(a, &mut p) {
                Ok(n) if n == p.len() => Some(Arc::from(p)),
                _ => None,
            }
        })
        .collect()
}

/// Answers requests on the engine's thread until `done()` says the worker has finished and the
/// channel is quiet, or every sender is gone.
pub fn serve(engine: &dyn Engine, rx: &Receiver<Request>, done: &dyn Fn() -> bool) {
    use std::sync::mpsc::RecvTimeoutError;
    loop {
        match rx.recv_timeout(std::time::Duration::from_millis(20)) {
            Ok(Request::Block { base, reply }) => {
                let _ = reply.send(answer_block(engine, base));
            }
            Ok(Request::Direct { addr, len, reply }) => {
                let mut b = vec![0u8; len];
                let n = read_prefix(engine, addr, &mut b);
                b.truncate(n);
                let _ = reply.send(b);
            }
            Err(RecvTimeoutError::Timeout) => {
                if done() {
                    return;
                }
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// dumpreader's [`Target`] over a debugger engine (see the module documentation).
pub struct EngineTarget {
    snap: Snapshot,
    requests: Mutex<Sender<Request>>,
    pages: Mutex<HashMap<u64, Option<Arc<[u8]>>>>,
    info: OnceLock<DumpInfo>,
    threads: OnceLock<Vec<ThreadInfo>>,
    modules: OnceLock<Vec<ModuleInfo>>,
    images: Mutex<HashMap<u64, Result<Arc<ModuleImage>, dumpreader::Error>>>,
}

impl EngineTarget {
    /// A target over a snapshot, whose memory requests go to `requests` (served by [`serve`]).
    pub fn new(snap: Snapshot, requests: Sender<Request>) -> EngineTarget {
        EngineTarget {
            snap,
            requests: Mutex::new(requests),
            pages: Mutex::new(HashMap::new()),
            info: OnceLock::new(),
            threads: OnceLock::new(),
            modules: OnceLock::new(),
            images: Mutex::new(HashMap::new()),
        }
    }

    /// The snapshot the target was built from.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snap
    }

    fn sender(&self) -> Sender<Request> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn page(&self, page: u64) -> Option<Arc<[u8]>> {
        if let Some(p) = self
            .pages
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&page)
        {
            return p.clone();
        }
        let base = page & !(BLOCK - 1);
        let (tx, rx) = channel();
        if self
            .sender()
            .send(Request::Block { base, reply: tx })
            .is_err()
        {
            return None;
        }
        let got = rx.recv().ok()?;
        let mut cache = self.pages.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() + got.len() > MAX_CACHED_PAGES {
            cache.clear();
        }
        let mut mine = None;
        for (i, p) in got.into_iter().enumerate() {
            let a = base + i as u64 * PAGE;
            if a == page {
                mine = p.clone();
            }
            cache.insert(a, p);
        }
        mine
    }

    fn direct(&self, addr: u64, buf: &mut [u8]) -> usize {
        let (tx, rx) = channel();
        let req = Request::Direct {
            addr,
            len: buf.len(),
            reply: tx,
        };
        if self.sender().send(req).is_err() {
            return 0;
        }
        let Ok(b) = rx.recv() else { return 0 };
        let n = b.len().min(buf.len());
        buf[..n].copy_from_slice(&b[..n]);
        n
    }

    fn os(&self) -> Os {
        // The module headers tell: ELF images mean Linux (WinDbg opening an ELF core).
        let mut saw_pe = false;
        for m in self.snap.modules.iter().take(64) {
            let mut magic = [0u8; 4];
            if self.read(m.base, &mut magic) == 4 {
                if &magic == b"\x7fELF" {
                    return Os::Linux;
                }
                if &magic[..2] == b"MZ" {
                    saw_pe = true;
                }
            }
        }
        let _ = saw_pe;
        Os::Windows
    }

    fn build_info(&self) -> DumpInfo {
        let os = self.os();
        let s = &self.snap;
        let ids: Vec<u32> = s.threads.iter().map(|(t, _)| t.system_id).collect();
        let exception = s.exception.as_ref().map(|e| ExceptionInfo {
            code: e.code,
            address: e.address,
            thread_id: e.system_thread_id.unwrap_or(0),
            flags: e.flags,
            parameters: e.parameters.clone(),
        });
        let main_thread = s
            .pid
            .filter(|p| ids.contains(p))
            .or_else(|| ids.first().copied());
        DumpInfo {
            format: if os == Os::Linux {
                DumpFormat::ElfCore
            } else {
                DumpFormat::Minidump
            },
            os,
            arch: match s.processor {
                Some(crate::engine::IMAGE_FILE_MACHINE_AMD64) | None => Arch::X86_64,
                Some(p) => Arch::Other(p),
            },
            pid: s.pid,
            crashing_thread: exception.as_ref().map(|e| e.thread_id),
            exception,
            main_thread,
            process_name: s.executable.as_deref().map(|e| {
                let cut = e.rfind(['/', '\\']).map(|i| i + 1).unwrap_or(0);
                e[cut..].to_string()
            }),
            command_line: None,
            auxv: Vec::new(),
            // The engine's own session, not a file: its time is not asked for here.
            written_at: None,
            warnings: Vec::new(),
        }
    }

    fn region_of(&self, addr: u64) -> Option<&EngineRegion> {
        let r = &self.snap.regions;
        let i = r.partition_point(|x| x.base <= addr);
        r[..i]
            .last()
            .filter(|x| addr < x.base.saturating_add(x.size))
    }

    fn build_threads(&self) -> Vec<ThreadInfo> {
        let os = Target::info(self).os;
        self.snap
            .threads
            .iter()
            .map(|(t, st)| {
                let mut c = st
                    .context
                    .as_deref()
                    .and_then(context::decode)
                    .unwrap_or_default();
                let teb = if os == Os::Windows { st.teb } else { None };
                if let Some(teb) = teb {
                    c.gs_base = teb;
                }
                // Windows: the TEB's NT_TIB StackBase (+8) and StackLimit (+0x10).
                let from_teb = teb.and_then(|teb| {
                    let base = self.read_u64(teb.checked_add(8)?).ok()?;
                    let limit = self.read_u64(teb.checked_add(0x10)?).ok()?;
                    (limit < base).then_some((limit, base))
                });
                let stack = from_teb.or_else(|| {
                    self.region_of(c.rsp)
                        .map(|r| (r.base, r.base.saturating_add(r.size)))
                });
                ThreadInfo {
                    id: t.system_id,
                    context: c,
                    stack,
                    teb,
                    name: None,
                    signal: 0,
                    start_address: None,
                }
            })
            .collect()
    }

    fn build_modules(&self) -> Vec<ModuleInfo> {
        let mut out: Vec<ModuleInfo> = self
            .snap
            .modules
            .iter()
            .map(|m| {
                let mut magic = [0u8; 4];
                let kind = if self.read(m.base, &mut magic) == 4 {
                    if &magic == b"\x7fELF" {
                        ModuleKind::Elf
                    } else if &magic[..2] == b"MZ" {
                        ModuleKind::Pe
                    } else {
                        ModuleKind::Other
                    }
                } else {
                    ModuleKind::Other
                };
                let identity = match kind {
                    ModuleKind::Pe => {
                        let from_headers = self.pe_header_identity(m.base);
                        // The headers in memory first (what the file says), else the
                        // engine's module parameters (a minidump's module list).
                        let (timestamp, size_of_image) =
                            from_headers.unwrap_or((m.timestamp, m.size));
                        Some(ModuleIdentity::Pe {
                            timestamp,
                            size_of_image,
                        })
                    }
                    ModuleKind::Elf => {
                        dumpreader::parse_image_in_memory(self, m.base, false, PeLayout::Mapped)
                            .ok()
                            .and_then(|(f, _)| match f {
                                dumpreader::ImageFormat::Elf(e) => e.build_id,
                                _ => None,
                            })
                            .map(ModuleIdentity::BuildId)
                    }
                    ModuleKind::Other => None,
                };
                ModuleInfo {
                    path: m.image_name.clone(),
                    base: m.base,
                    end: m.base.saturating_add(u64::from(m.size)),
                    kind,
                    identity,
                    mappings: Vec::new(),
                    debug_file: None,
                    debug_id: None,
                }
            })
            .collect();
        out.sort_by_key(|m| m.base);
        out
    }

    /// `(TimeDateStamp, SizeOfImage)` from the PE headers at `base` (same place in both
    /// layouts).
    fn pe_header_identity(&self, base: u64) -> Option<(u32, u32)> {
        let nt = base.checked_add(u64::from(self.read_u32(base.checked_add(0x3c)?).ok()?))?;
        if self.read_u32(nt).ok()? != 0x4550 {
            return None;
        }
        let timestamp = self.read_u32(nt + 8).ok()?;
        let size_of_image = self.read_u32(nt + 24 + 56).ok()?;
        Some((timestamp, size_of_image))
    }

    /// How a PE image at `base` is laid out. Windows loads images mapped; on Linux the .NET
    /// runtime maps an assembly both flat and as an image, and without the process's file
    /// mappings (a debugger does not list them) the CLI header tells: its `cb` (0x48) is found
    /// at its RVA in the mapped layout, at its file offset in the flat one.
    pub fn pe_layout(&self, base: u64) -> PeLayout {
        if Target::info(self).os == Os::Windows {
            return PeLayout::Mapped;
        }
        (|| -> Option<PeLayout> {
            let lfanew = u64::from(self.read_u32(base + 0x3c).ok()?);
            let nt = base.checked_add(lfanew)?;
            if self.read_u32(nt).ok()? != 0x4550 {
                return None;
            }
            let fh = nt + 4;
            let nsec = self.read_u16(fh + 2).ok()? as u64;
            let opt_size = self.read_u16(fh + 16).ok()? as u64;
            let opt = fh + 20;
            let dd = match self.read_u16(opt).ok()? {
                0x20b => opt + 112,
                0x10b => opt + 96,
                _ => return None,
            };
            let cli_rva = self.read_u32(dd + 14 * 8).ok()?;
            if cli_rva == 0 {
                return None;
            }
            let sec = opt + opt_size;
            let mut flat = None;
            for i in 0..nsec.min(96) {
                let s = sec + i * 40;
                let vsize = self.read_u32(s + 8).ok()?;
                let va = self.read_u32(s + 12).ok()?;
                let raw_size = self.read_u32(s + 16).ok()?;
                let raw = self.read_u32(s + 20).ok()?;
                if cli_rva >= va && cli_rva < va.saturating_add(vsize.max(raw_size)) {
                    flat = Some(cli_rva - va + raw);
                    break;
                }
            }
            let is_cli = |a: u64| {
                self.read_u32(a).ok() == Some(0x48) && self.read_u16(a + 4).ok() == Some(2)
            };
            let mapped_ok = is_cli(base + u64::from(cli_rva));
            let flat_ok = flat.is_some_and(|f| is_cli(base + u64::from(f)));
            match (mapped_ok, flat_ok) {
                (false, true) => Some(PeLayout::Flat),
                _ => Some(PeLayout::Mapped),
            }
        })()
        .unwrap_or(PeLayout::Mapped)
    }
}

fn perms(protect: u32) -> Option<Perms> {
    let p = protect & 0xff;
    let (read, write, exec) = match p {
        0x01 => (false, false, false),
        0x02 => (true, false, false),
        0x04 | 0x08 => (true, true, false),
        0x10 => (false, false, true),
        0x20 => (true, false, true),
        0x40 | 0x80 => (true, true, true),
        _ => return None,
    };
    Some(Perms { read, write, exec })
}

impl Memory for EngineTarget {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        let mut done = 0usize;
        while done < buf.len() {
            let Some(a) = addr.checked_add(done as u64) else {
                break;
            };
            let page = a & !(PAGE - 1);
            let off = (a - page) as usize;
            let want = (PAGE as usize - off).min(buf.len() - done);
            match self.page(page) {
                Some(p) => {
                    buf[done..done + want].copy_from_slice(&p[off..off + want]);
                    done += want;
                }
                None => {
                    // A page not wholly readable (a range that starts or ends inside it, or
                    // none at all): ask the engine for exactly these bytes.
                    let got = self.direct(a, &mut buf[done..done + want]);
                    done += got;
                    if got < want {
                        break;
                    }
                }
            }
        }
        done
    }
}

impl Target for EngineTarget {
    fn info(&self) -> &DumpInfo {
        self.info.get_or_init(|| self.build_info())
    }
    fn threads(&self) -> &[ThreadInfo] {
        self.threads.get_or_init(|| self.build_threads())
    }
    fn modules(&self) -> &[ModuleInfo] {
        self.modules.get_or_init(|| self.build_modules())
    }
    fn module_image(&self, module: &ModuleInfo) -> Result<Arc<ModuleImage>, dumpreader::Error> {
        if let Some(r) = self
            .images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&module.base)
        {
            return r.clone();
        }
        let os = Target::info(self).os;
        let is_pe = module.kind == ModuleKind::Pe
            || (module.kind == ModuleKind::Other && os == Os::Windows);
        let layout = if is_pe {
            self.pe_layout(module.base)
        } else {
            PeLayout::Mapped
        };
        let r = match dumpreader::parse_image_in_memory(self, module.base, is_pe, layout) {
            Ok((format, probs)) => Ok(Arc::new(ModuleImage {
                module_path: module.path.clone(),
                base: module.base,
                source: ImageSource::DumpMemory,
                note: if probs.is_empty() {
                    "from the debugger's memory".to_string()
                } else {
                    format!(
                        "from the debugger's memory, incomplete ({})",
                        probs
                            .iter()
                            .map(|p| p.to_string())
                            .collect::<Vec<_>>()
                            .join("; ")
                    )
                },
                format,
            })),
            Err(e) => Err(dumpreader::Error::NoImage {
                module: module.path.clone(),
                refusals: vec![dumpreader::Refusal::DebuggerMemory { error: Box::new(e) }].into(),
            }),
        };
        self.images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(module.base, r.clone());
        r
    }
    fn memory_ranges(&self) -> Vec<MemoryRange> {
        self.snap
            .regions
            .iter()
            .map(|r| MemoryRange {
                address: r.base,
                size: r.size,
                // A debugger does not say which bytes a dump file holds: all count as held.
                file_size: r.size,
                perms: perms(r.protect),
            })
            .collect()
    }
    fn module_at(&self, addr: u64) -> Option<&ModuleInfo> {
        let mods = Target::modules(self);
        let i = mods.partition_point(|m| m.base <= addr);
        mods[..i].iter().rev().take(8).find(|m| m.contains(addr))
    }
}
