//! An open target (a dump file, or in WinDbg the debugger's target) and what the commands
//! share about it.

use clrdata::{GcHeap, Runtime, TypeNames};
use dumpreader::{Dump, OpenOptions, Target};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The CLR found in the target, with the caches every command shares.
pub struct Clr {
    /// The runtime: version, layout, globals.
    pub rt: Runtime<Arc<dyn Target>>,
    /// Type names and module metadata, cached.
    pub names: TypeNames,
    heap: OnceLock<Result<GcHeap, String>>,
}

impl Clr {
    /// The GC heap's structure (read once).
    pub fn heap(&self) -> Result<&GcHeap, String> {
        self.heap
            .get_or_init(|| crate::commands::heap::gc_heap_or_refusal(&self.rt))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The name of the type whose MethodTable is at `mt`, or a note saying why it is unknown.
    pub fn type_name(&self, mt: u64) -> String {
        self.names.name_or_note(&self.rt, mt)
    }
}

/// One open target.
pub struct Session {
    /// Memory, threads and modules, from a dump file or a debugger.
    pub target: Arc<dyn Target>,
    /// What the user opened (a dump's path; a description for other targets).
    pub path: PathBuf,
    clr: OnceLock<Result<Arc<Clr>, String>>,
}

impl Session {
    /// The thread a command uses when none is named (SOS's current thread in a dump): the
    /// thread the dump records as faulting, else the process's main thread, else the first.
    pub fn current_os_thread(&self) -> Option<u64> {
        let i = self.target.info();
        i.crashing_thread
            .or(i.main_thread)
            .or_else(|| self.target.threads().first().map(|t| t.id))
            .map(u64::from)
    }

    /// Opens the dump at `path` (a `.zst` file is decompressed once into the cache).
    pub fn open(path: &Path) -> Result<Session, dumpreader::Error> {
        Session::open_with(path, &OpenOptions::default())
    }

    /// Opens the dump at `path` with options (cache folder, image search path, ...).
    pub fn open_with(path: &Path, opts: &OpenOptions) -> Result<Session, dumpreader::Error> {
        Ok(Session::new(
            Arc::new(Dump::open_with(path, opts)?),
            path.to_path_buf(),
        ))
    }

    /// A session over any target (the WinDbg extension passes its dbgeng target).
    pub fn new(target: Arc<dyn Target>, path: PathBuf) -> Session {
        Session {
            target,
            path,
            clr: OnceLock::new(),
        }
    }

    /// The CLR in the target, discovered on first use. The error says precisely why there is
    /// none (no runtime, an unsupported version, a failed sanity check); native commands work
    /// regardless.
    pub fn clr(&self) -> Result<Arc<Clr>, String> {
        self.clr
            .get_or_init(|| {
                Runtime::discover(self.target.clone())
                    .map(|rt| {
                        Arc::new(Clr {
                            rt,
                            names: TypeNames::new(),
                            heap: OnceLock::new(),
                        })
                    })
                    .map_err(|e| e.to_string())
            })
            .clone()
    }
}
