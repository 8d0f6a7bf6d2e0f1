//! An open target (a dump file, or in WinDbg the debugger's target) and what the commands
//! share about it.

use crate::control::Control;
use crate::output::CommandError;
use clrdata::prelude::*;
use clrdata::{ClrError, GcHeap, Runtime, TypeNames};
use dumpreader::{Dump, OpenOptions, Target};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The CLR found in the target, with the caches every command shares.
pub struct Clr {
    /// The runtime: version, layout, globals.
    pub rt: Runtime<Arc<dyn Target>>,
    /// Type names and module metadata, cached.
    pub names: TypeNames,
    heap: OnceLock<Result<GcHeap, CommandError>>,
    /// The session's cancellation and progress (shared with the session).
    pub control: Arc<Control>,
}

impl Clr {
    /// The GC heap's structure (read once).
    pub fn heap(&self) -> Result<&GcHeap, CommandError> {
        self.heap
            .get_or_init(|| gc_heap_or_refusal(&self.rt))
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
    /// Cancellation and progress, set by the front end ([`Control`]).
    pub control: Arc<Control>,
    /// What discovery may read besides the dump (the build index, image files, a symbol
    /// server).
    discover: clrdata::DiscoverOptions,
    clr: OnceLock<Result<Arc<Clr>, ClrError>>,
    aot: OnceLock<Result<Option<Arc<clrdata::nativeaot::NativeAot>>, ClrError>>,
    /// The OS id of the thread `setthread` chose (SOS's current thread), kept for the session.
    selected: std::sync::Mutex<Option<u32>>,
    /// How type names are written in text (`set typenames`).
    name_style: std::sync::Mutex<crate::style::NameStyle>,
}

impl Session {
    /// The thread a command uses when none is named (SOS's current thread in a dump): the one
    /// `setthread` chose, else the thread the dump records as faulting, else the process's main
    /// thread, else the first.
    pub fn current_os_thread(&self) -> Option<u64> {
        let i = self.target.info();
        self.selected_os_thread()
            .or(i.crashing_thread)
            .or(i.main_thread)
            .or_else(|| self.target.threads().first().map(|t| t.id))
            .map(u64::from)
    }

    /// The OS id of the thread `setthread` chose, if it did.
    pub fn selected_os_thread(&self) -> Option<u32> {
        *self.selected.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes the dump's thread with OS id `os_id` the current one (`setthread`).
    pub fn select_os_thread(&self, os_id: u32) {
        *self.selected.lock().unwrap_or_else(|e| e.into_inner()) = Some(os_id);
    }

    /// How the session writes type names in text (`set typenames`).
    pub fn name_style(&self) -> crate::style::NameStyle {
        *self.name_style.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes the session write type names in text in `style`.
    pub fn set_name_style(&self, style: crate::style::NameStyle) {
        *self.name_style.lock().unwrap_or_else(|e| e.into_inner()) = style;
    }

    /// The debugger's index of the dump's thread with OS id `os_id` (SOS's and dotnet-dump's
    /// thread numbering: its position in the dump's thread list, from 0).
    pub fn thread_index(&self, os_id: u64) -> Option<usize> {
        self.target
            .threads()
            .iter()
            .position(|t| u64::from(t.id) == os_id)
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
            control: Arc::default(),
            discover: clrdata::DiscoverOptions::default(),
            clr: OnceLock::new(),
            aot: OnceLock::new(),
            selected: std::sync::Mutex::new(None),
            name_style: std::sync::Mutex::new(crate::style::NameStyle::default()),
        }
    }

    /// The session with what discovery may read besides the dump (a symbol server, ...):
    /// before the first CLR command.
    pub fn with_discover_options(mut self, opts: clrdata::DiscoverOptions) -> Session {
        self.discover = opts;
        self
    }

    /// The CLR in the target, discovered on first use. The error says precisely why there is
    /// none (no runtime, an unsupported version, a failed sanity check); native commands work
    /// regardless.
    pub fn clr(&self) -> Result<Arc<Clr>, ClrError> {
        self.clr
            .get_or_init(|| {
                Runtime::discover_with_options(self.target.clone(), &self.discover).map(|rt| {
                    Arc::new(Clr {
                        rt,
                        names: TypeNames::new(),
                        heap: OnceLock::new(),
                        control: self.control.clone(),
                    })
                })
            })
            .clone()
    }
}

impl Session {
    /// The NativeAOT runtime of the target, found on first use: `Ok(None)` when the target is
    /// not a NativeAOT app; the error when it is but its runtime cannot be read.
    pub fn nativeaot(&self) -> Result<Option<Arc<clrdata::nativeaot::NativeAot>>, ClrError> {
        self.aot
            .get_or_init(|| {
                clrdata::nativeaot::NativeAot::find(&*self.target).map(|o| o.map(Arc::new))
            })
            .clone()
    }
}

/// The NativeAOT runtime when the CLR's discovery found one (`error` is
/// [`ClrError::NativeAot`]): commands that read NativeAOT take their own path then.
pub fn nativeaot_of(
    s: &Session,
    error: &CommandError,
) -> Option<Result<Arc<clrdata::nativeaot::NativeAot>, CommandError>> {
    match error {
        CommandError::NoClr {
            error: ClrError::NativeAot { .. },
        } => Some(
            s.nativeaot()
                .map_err(|error| CommandError::NoClr { error })
                .and_then(|o| {
                    o.ok_or_else(|| CommandError::NoClr {
                        error: ClrError::NoRuntime {
                            detail: "the NativeAOT runtime found at discovery is not found again"
                                .into(),
                        },
                    })
                }),
        ),
        _ => None,
    }
}

/// The CLR, or the failure saying why there is none.
pub fn clr(s: &Session) -> Result<Arc<Clr>, CommandError> {
    s.clr().map_err(|error| CommandError::NoClr { error })
}

/// The GC heap's structure, or why it cannot be read. A dump that leaves the heap out (a mini
/// dump: createdump `--normal` or `--triage`, a minidump without private memory) is refused
/// by one statement naming the kind of dump and the missing structure, the same for every
/// heap command; whether the heap is absent is clrdata's decision from the memory
/// ([`clrdata::Runtime::gc_heap_absence`]), the kind's name follows from it and from who
/// wrote the dump. Called once per session ([`Clr::heap`]).
pub(crate) fn gc_heap_or_refusal(
    rt: &clrdata::Runtime<Arc<dyn dumpreader::Target>>,
) -> Result<clrdata::GcHeap, CommandError> {
    let read = rt.gc_heap();
    // A runtime whose heap walk is not verified is refused as such: its GC tables' layout,
    // and so the evidence, is not known.
    if let Err(e @ clrdata::ClrError::NotVerified { .. }) = &read {
        return Err(CommandError::clr("reading the GC heap", e.clone()));
    }
    match rt.gc_heap_absence(read.as_ref().ok()) {
        Some(a) => Err(CommandError::NoHeap {
            message: no_heap(
                rt.memory().dump_kind(),
                !rt.memory().bundles().is_empty(),
                &a,
            ),
            error: read.err(),
        }),
        None => read.map_err(|e| CommandError::clr("reading the GC heap", e)),
    }
}

/// The statement of a dump without a GC heap: its kind, then the evidence.
pub(crate) fn no_heap(
    kind: Option<&dumpreader::DumpKind>,
    single_file: bool,
    a: &clrdata::HeapAbsence,
) -> String {
    use clrdata::HeapAbsence;
    use dumpreader::DumpProducer;
    let what = match kind.map(|k| k.producer) {
        // createdump's own DAC enumeration tells its kinds apart: --normal saves the
        // segments' headers (not their objects), --triage not even those.
        Some(DumpProducer::Createdump) => match a {
            HeapAbsence::Segments { .. } => "createdump --triage dump".to_string(),
            HeapAbsence::Objects { .. } => "createdump --normal dump".to_string(),
            // createdump writes without the DAC when it finds no libcoreclr.so: a single-file
            // app (its other kinds are refused with --singlefile).
            HeapAbsence::Tables { .. } if single_file => {
                "createdump dump of a single-file app (createdump finds no libcoreclr.so there \
                 and writes without the runtime's DAC; createdump --full or gdb gcore saves it \
                 all)"
                    .to_string()
            }
            HeapAbsence::Tables { .. } => "createdump dump".to_string(),
        },
        Some(DumpProducer::Minidump) => {
            let names = kind.map(|k| k.minidump_type_names()).unwrap_or_default();
            format!(
                "minidump without the heap ({})",
                if names.is_empty() {
                    "no MINIDUMP_TYPE recorded".to_string()
                } else {
                    names.join("|")
                }
            )
        }
        Some(DumpProducer::Gcore) => "gdb gcore core".to_string(),
        Some(DumpProducer::Kernel) => {
            "kernel core (its coredump_filter left anonymous memory out)".to_string()
        }
        _ => "dump".to_string(),
    };
    format!("this {what} holds no GC heap: {a}")
}

/// The CLR, when its layer has verified every capability a command needs on this runtime
/// (clrdata's gate, `Runtime::require`); else the refusal naming the runtime and what is
/// missing, before anything is printed. For commands whose analyses carry on past errors
/// object by object, and so would otherwise print an empty answer instead of refusing.
pub fn clr_with(
    s: &Session,
    needs: &[clrdata::discovery::layout::Capability],
) -> Result<Arc<Clr>, CommandError> {
    let c = clr(s)?;
    for &cap in needs {
        c.rt.require(cap)?;
    }
    Ok(c)
}
