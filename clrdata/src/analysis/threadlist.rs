//! The managed thread list SOS's `clrthreads` prints, as data: the ThreadStore's counters, each
//! Thread with what its state bits say (roles, GC mode, apartment, dead) and its last thrown
//! exception, and what looks wrong with the list. Front ends only render it.

use crate::data::threads::{ReadThreads, ThreadData, ThreadStoreData};
use crate::discovery::runtime::Runtime;
use crate::error::Result;
use crate::model::heap::read_method_table;
use crate::model::names::TypeNames;
use dumpreader::Memory;

/// `TS_Background` (threads.h).
const TS_BACKGROUND: u32 = 0x200;
/// `TS_Dead`.
const TS_DEAD: u32 = 0x800;
/// `TS_InSTA`.
const TS_IN_STA: u32 = 0x4000;
/// `TS_InMTA`.
const TS_IN_MTA: u32 = 0x8000;
/// `TS_TPWorkerThread`.
const TS_TP_WORKER: u32 = 0x0100_0000;
/// `TS_CompletionPortThread`.
const TS_COMPLETION_PORT: u32 = 0x0800_0000;

/// One managed thread of the list.
#[derive(Debug, Clone)]
pub struct ManagedThread {
    /// The Thread as read.
    pub data: ThreadData,
    /// `m_LastThrownObjectHandle` (0: none, or unreadable).
    pub last_exception_handle: u64,
    /// The object it holds (0: none).
    pub last_exception: u64,
    /// That object's type name (when there is one and its MethodTable reads).
    pub last_exception_type: Option<String>,
}

impl ManagedThread {
    /// The thread's roles, as SOS names them: `Finalizer`, `Threadpool Worker`, `Threadpool
    /// Completion Port`, `Background`.
    pub fn roles(&self) -> Vec<&'static str> {
        let s = self.data.state;
        let mut tags = Vec::new();
        if self.data.is_finalizer {
            tags.push("Finalizer");
        }
        if s & TS_TP_WORKER != 0 {
            tags.push("Threadpool Worker");
        }
        if s & TS_COMPLETION_PORT != 0 {
            tags.push("Threadpool Completion Port");
        }
        if s & TS_BACKGROUND != 0 {
            tags.push("Background");
        }
        tags
    }

    /// `Cooperative` (m_fPreemptiveGCDisabled set) or `Preemptive`.
    pub fn gc_mode(&self) -> &'static str {
        if self.data.preemptive_gc_disabled != 0 {
            "Cooperative"
        } else {
            "Preemptive"
        }
    }

    /// The COM apartment: `STA`, `MTA` or `Ukn`.
    pub fn apartment(&self) -> &'static str {
        if self.data.state & TS_IN_STA != 0 {
            "STA"
        } else if self.data.state & TS_IN_MTA != 0 {
            "MTA"
        } else {
            "Ukn"
        }
    }

    /// Whether the thread is dead (`TS_Dead`).
    pub fn dead(&self) -> bool {
        self.data.state & TS_DEAD != 0
    }
}

/// The managed thread list.
#[derive(Debug, Clone)]
pub struct ThreadList {
    /// The ThreadStore's counters.
    pub store: ThreadStoreData,
    /// Its threads, in list order.
    pub threads: Vec<ManagedThread>,
    /// What looks wrong with the list.
    pub notes: Vec<String>,
}

/// Reads the ThreadStore and its threads, each with its last thrown exception.
pub fn thread_list<M: Memory>(rt: &Runtime<M>, names: &TypeNames) -> Result<ThreadList> {
    let store = rt.thread_store()?;
    let threads = rt.threads()?;
    let notes = thread_store_notes(&store, threads.len());
    let threads = threads
        .into_iter()
        .map(|t| {
            let (h, obj) = rt.last_thrown_object(t.address).unwrap_or((0, 0));
            let last_exception_type = (obj != 0)
                .then(|| read_method_table(rt.memory(), obj).ok())
                .flatten()
                .map(|mt| names.name_or_note(rt, mt));
            ManagedThread {
                data: t,
                last_exception_handle: h,
                last_exception: obj,
                last_exception_type,
            }
        })
        .collect();
    Ok(ThreadList {
        store,
        threads,
        notes,
    })
}

/// A running .NET process always has its finalizer thread: a ThreadStore that lists no thread,
/// or none marked as the finalizer, or fewer threads than it counts, is damaged or was read
/// from the wrong place.
fn thread_store_notes(ts: &ThreadStoreData, listed: usize) -> Vec<String> {
    let mut notes = Vec::new();
    if listed == 0 {
        notes.push(format!(
            "the ThreadStore at {:#x} lists no thread, yet a .NET process always has its \
             finalizer thread: the ThreadStore's memory may be damaged",
            ts.address
        ));
    } else if ts.finalizer_thread == 0 {
        notes.push(format!(
            "the ThreadStore at {:#x} names no finalizer thread: it may be damaged",
            ts.address
        ));
    }
    if ts.thread_count >= 0 && (listed as i64) < ts.thread_count as i64 {
        notes.push(format!(
            "the ThreadStore counts {} threads but its list holds {listed}",
            ts.thread_count
        ));
    }
    notes
}
