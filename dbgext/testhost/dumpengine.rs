//! A debugger engine emulated over a dump file: what dbgeng would answer for each call the
//! extension makes, computed with dumpreader. Shared by the Windows test host (which puts the
//! COM interfaces on top) and the Linux tests (which call it directly).

use dbgext::engine::*;
use dumpreader::{Dump, Memory, MemoryRange, ModuleIdentity, ModuleInfo, ModuleKind};

/// How `ReadVirtual` answers a request that is only partly readable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartialReads {
    /// Fail the whole request (`HRESULT_FROM_WIN32(ERROR_PARTIAL_COPY)`): the strictest engine.
    Fail,
    /// Succeed with the readable prefix's length (dbgeng's usual behaviour on dumps).
    Prefix,
}

/// `HRESULT_FROM_WIN32(ERROR_PARTIAL_COPY)`.
pub const E_PARTIAL_COPY: i32 = 0x8007_012Bu32 as i32;

/// The emulated engine.
pub struct DumpEngine {
    pub dump: Dump,
    pub ranges: Vec<MemoryRange>,
    /// The images (a debugger lists loaded images, not every mapped file).
    pub modules: Vec<ModuleInfo>,
    pub partial: PartialReads,
    /// What `GetDumpFileWide` answers.
    pub dump_name: String,
}

impl DumpEngine {
    pub fn new(dump: Dump, dump_name: String, partial: PartialReads) -> DumpEngine {
        let ranges = dump.memory_ranges().collect();
        let modules = dump
            .modules()
            .iter()
            .filter(|m| m.kind != ModuleKind::Other)
            .cloned()
            .collect();
        DumpEngine {
            dump,
            ranges,
            modules,
            partial,
            dump_name,
        }
    }

    /// Module parameters as `GetModuleParameters` gives them: base, size, timestamp.
    pub fn module_params(&self, m: &ModuleInfo) -> (u64, u32, u32) {
        let ts = match &m.identity {
            Some(ModuleIdentity::Pe { timestamp, .. }) => *timestamp,
            _ => 0,
        };
        (m.base, m.size().min(u32::MAX as u64) as u32, ts)
    }
}

impl Engine for DumpEngine {
    fn read_virtual(&self, addr: u64, buf: &mut [u8]) -> Result<usize, i32> {
        let n = self.dump.read(addr, buf);
        if n == buf.len() {
            return Ok(n);
        }
        match self.partial {
            PartialReads::Fail => Err(E_PARTIAL_COPY),
            PartialReads::Prefix if n > 0 => Ok(n),
            PartialReads::Prefix => Err(E_PARTIAL_COPY),
        }
    }

    fn query_virtual(&self, addr: u64) -> Option<EngineRegion> {
        let i = self.ranges.partition_point(|r| r.end() <= addr);
        let r = self.ranges.get(i)?;
        let prot = |r: &MemoryRange| match r.perms {
            Some(p) => match (p.read, p.write, p.exec) {
                (_, true, true) => 0x40,
                (_, true, false) => 0x04,
                (true, false, true) => 0x20,
                (false, false, true) => 0x10,
                (true, false, false) => 0x02,
                (false, false, false) => 0x01,
            },
            None => 0x04,
        };
        if r.address <= addr {
            Some(EngineRegion {
                base: r.address,
                size: r.size,
                state: MEM_COMMIT,
                protect: prot(r),
            })
        } else {
            Some(EngineRegion {
                base: addr,
                size: r.address - addr,
                state: MEM_FREE,
                protect: 0x01,
            })
        }
    }

    fn threads(&self) -> Vec<EngineThread> {
        self.dump
            .threads()
            .iter()
            .enumerate()
            .map(|(i, t)| EngineThread {
                engine_id: i as u32,
                system_id: t.id,
            })
            .collect()
    }

    fn thread_states(&self, threads: &[EngineThread]) -> Vec<ThreadState> {
        threads
            .iter()
            .map(|t| match self.dump.threads().get(t.engine_id as usize) {
                Some(th) => ThreadState {
                    context: Some(dumpreader::context::encode(&th.context)),
                    teb: th.teb,
                },
                None => ThreadState::default(),
            })
            .collect()
    }

    fn process_id(&self) -> Option<u32> {
        self.dump.info().pid
    }

    fn executable_name(&self) -> Option<String> {
        self.dump.info().process_name.clone()
    }

    fn modules(&self) -> Vec<EngineModule> {
        self.modules
            .iter()
            .map(|m| {
                let (base, size, timestamp) = self.module_params(m);
                EngineModule {
                    base,
                    size,
                    timestamp,
                    image_name: m.path.clone(),
                }
            })
            .collect()
    }

    fn last_exception(&self) -> Option<EngineException> {
        let e = self.dump.info().exception.as_ref()?;
        Some(EngineException {
            system_thread_id: Some(e.thread_id),
            code: e.code,
            flags: e.flags,
            address: e.address,
            parameters: e.parameters.clone(),
        })
    }

    fn processor_type(&self) -> Option<u32> {
        Some(IMAGE_FILE_MACHINE_AMD64)
    }

    fn target_name(&self) -> Option<String> {
        Some(self.dump_name.clone())
    }
}
