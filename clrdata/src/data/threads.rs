//! The ThreadStore and its managed threads (the parts the heap walk and `clrthreads` need).

use crate::discovery::runtime::Runtime;
use crate::error::{ClrError, Result};
use dumpreader::Memory;
use serde::Serialize;

/// Bound on the thread list walk (a corrupt list must not loop forever).
pub const MAX_THREADS: usize = 100_000;

/// `ThreadStore` counters and the first thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ThreadStoreData {
    /// The ThreadStore's address.
    pub address: u64,
    /// m_ThreadCount.
    pub thread_count: i32,
    /// m_UnstartedThreadCount.
    pub unstarted_thread_count: i32,
    /// m_BackgroundThreadCount.
    pub background_thread_count: i32,
    /// m_PendingThreadCount.
    pub pending_thread_count: i32,
    /// m_DeadThreadCount.
    pub dead_thread_count: i32,
    /// The first Thread of the list (0 when empty).
    pub first_thread: u64,
    /// The finalizer Thread.
    pub finalizer_thread: u64,
}

/// One managed `Thread`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ThreadData {
    /// The Thread object's address.
    pub address: u64,
    /// Managed thread id (m_ThreadId).
    pub managed_id: u32,
    /// OS thread id (m_OSThreadId; 0 when not started or dead).
    pub os_id: u64,
    /// m_State.
    pub state: u32,
    /// m_fPreemptiveGCDisabled (1 = cooperative mode).
    pub preemptive_gc_disabled: u32,
    /// m_pFrame (the innermost explicit Frame; -1 at the end).
    pub frame: u64,
    /// Allocation context pointer.
    pub alloc_ptr: u64,
    /// Allocation context limit.
    pub alloc_limit: u64,
    /// Whether this is the finalizer thread.
    pub is_finalizer: bool,
}

/// Reading the ThreadStore and its Threads.
pub trait ReadThreads {
    /// The ThreadStore's counters and first thread.
    fn thread_store(&self) -> Result<ThreadStoreData>;

    /// Reads one Thread.
    fn thread_data(&self, thread: u64) -> Result<ThreadData>;

    /// Every managed thread, in ThreadStore list order. The walk is bounded and stops at a
    /// cycle or unreadable link with an error naming the link.
    fn threads(&self) -> Result<Vec<ThreadData>>;

    /// The threads of the ThreadStore list up to the first problem (a cycle, an unreadable
    /// Thread or link), and that problem: for readers that can use a partial list (the heap's
    /// allocation contexts).
    fn threads_partial(&self) -> (Vec<ThreadData>, Option<ClrError>);

    /// `Thread::m_LastThrownObjectHandle`: (handle, the object it holds; 0 when none); on
    /// .NET 11, as its DAC, the exception being dispatched first (the address of its ExInfo's
    /// `m_exception` as the handle).
    fn last_thrown_object(&self, thread: u64) -> Result<(u64, u64)>;

    /// The exception a thread is dispatching now (.NET 9+: `Thread.ExceptionTracker`, the
    /// innermost `ExInfo`, and its `ThrownObject`: a handle on 8 to 10, the object on 11;
    /// Linux .NET 8: the current `ExceptionTracker`): (ExInfo, the object; 0 when none).
    /// `Ok(None)` where the tracker's layout is not known (Windows .NET 8).
    fn current_exception(&self, thread: u64) -> Result<Option<(u64, u64)>>;

    /// The exceptions the thread's innermost one was thrown while dispatching, innermost
    /// first (SOS's nested exceptions: `ExceptionInfo.PreviousNestedInfo` from the thread's
    /// `ExceptionTracker` on): each (ExInfo, its thrown object; 0 when none). `Ok(None)` where
    /// the tracker's layout is not known (Windows .NET 8).
    fn nested_exceptions(&self, thread: u64) -> Result<Option<Vec<(u64, u64)>>>;
}

impl<M: Memory> ReadThreads for Runtime<M> {
    fn thread_store(&self) -> Result<ThreadStoreData> {
        self.require(crate::discovery::layout::Capability::Threads)?;
        let ts = self.globals.thread_store;
        let l = &self.layout.thread_store;
        let m = self.memory();
        let rd = |off: u64, what: &str| {
            m.read_i32(ts + off)
                .map_err(|_| ClrError::read(format!("ThreadStore::{what}"), ts + off))
        };
        let head_next = m
            .read_u64(ts + l.thread_list)
            .map_err(|_| ClrError::read("ThreadStore::m_ThreadList", ts + l.thread_list))?;
        let first_thread = if head_next == 0 {
            0
        } else {
            head_next.wrapping_sub(self.layout.thread.link_target)
        };
        Ok(ThreadStoreData {
            address: ts,
            thread_count: rd(l.thread_count, "m_ThreadCount")?,
            unstarted_thread_count: rd(l.unstarted_thread_count, "m_UnstartedThreadCount")?,
            background_thread_count: rd(l.background_thread_count, "m_BackgroundThreadCount")?,
            pending_thread_count: rd(l.pending_thread_count, "m_PendingThreadCount")?,
            dead_thread_count: rd(l.dead_thread_count, "m_DeadThreadCount")?,
            first_thread,
            finalizer_thread: self.globals.finalizer_thread,
        })
    }

    fn thread_data(&self, thread: u64) -> Result<ThreadData> {
        let l = &self.layout.thread;
        let m = self.memory();
        let r32 = |off: u64, what: &str| {
            m.read_u32(thread + off)
                .map_err(|_| ClrError::read(format!("Thread::{what}"), thread + off))
        };
        let r64 = |off: u64, what: &str| {
            m.read_u64(thread + off)
                .map_err(|_| ClrError::read(format!("Thread::{what}"), thread + off))
        };
        let acl = &self.layout.alloc_context;
        // .NET 9+: the allocation context lives in the thread's RuntimeThreadLocals block
        // (null until the thread first allocates); .NET 8: inline in the Thread.
        let ac_base = match l.runtime_thread_locals {
            None => Some(thread + l.alloc_context),
            Some(off) => {
                let p = r64(off, "RuntimeThreadLocals")?;
                (p != 0).then(|| p + l.alloc_context)
            }
        };
        let rd_ac = |field: u64, what: &str| -> Result<u64> {
            match ac_base {
                None => Ok(0),
                Some(b) => m
                    .read_u64(b + field)
                    .map_err(|_| ClrError::read(format!("Thread::{what}"), b + field)),
            }
        };
        Ok(ThreadData {
            address: thread,
            managed_id: r32(l.thread_id, "m_ThreadId")?,
            os_id: r64(l.os_thread_id, "m_OSThreadId")?,
            state: r32(l.state, "m_State")?,
            preemptive_gc_disabled: r32(l.preemptive_gc_disabled, "m_fPreemptiveGCDisabled")?,
            frame: r64(l.frame, "m_pFrame")?,
            alloc_ptr: rd_ac(acl.alloc_ptr, "m_alloc_context.alloc_ptr")?,
            alloc_limit: rd_ac(acl.alloc_limit, "m_alloc_context.alloc_limit")?,
            is_finalizer: thread == self.globals.finalizer_thread,
        })
    }

    fn threads(&self) -> Result<Vec<ThreadData>> {
        match self.threads_partial() {
            (threads, None) => Ok(threads),
            (_, Some(e)) => Err(self.explain(e)),
        }
    }

    fn threads_partial(&self) -> (Vec<ThreadData>, Option<ClrError>) {
        let mut out = Vec::new();
        let ts = match self.thread_store() {
            Ok(ts) => ts,
            Err(e) => return (out, Some(e)),
        };
        let link_off = self.layout.thread.link;
        let link_target = self.layout.thread.link_target;
        let mut seen = std::collections::HashSet::new();
        let mut t = ts.first_thread;
        while t != 0 {
            if !seen.insert(t) || out.len() >= MAX_THREADS {
                let e = ClrError::corrupt(
                    "ThreadStore thread list",
                    ts.address,
                    format!("cycle or more than {MAX_THREADS} threads at Thread {t:#x}"),
                );
                return (out, Some(e));
            }
            match self.thread_data(t) {
                Ok(d) => out.push(d),
                Err(e) => return (out, Some(e)),
            }
            let next = match self.memory().read_u64(t + link_off) {
                Ok(n) => n,
                Err(_) => return (out, Some(ClrError::read("Thread::m_Link", t + link_off))),
            };
            t = if next == 0 {
                0
            } else {
                next.wrapping_sub(link_target)
            };
        }
        (out, None)
    }

    fn last_thrown_object(&self, thread: u64) -> Result<(u64, u64)> {
        self.require(crate::discovery::layout::Capability::Exceptions)?;
        // .NET 11: the runtime sets m_LastThrownObjectHandle only once an exception's
        // dispatch is over, and its ExInfo holds the object itself; the DAC (GetThreadData)
        // gives the exception being dispatched first, the address of its ExInfo's field as a
        // pseudo-handle (on nestedfault-net11: the InvalidOperationException in its catch
        // block, not the FailFast's earlier ExecutionEngineException the handle holds).
        if let (Some(l), false) = (
            self.layout.thread.exception_tracker,
            self.layout.thread.thrown_object_is_handle,
        ) {
            if let Some((ex_info, obj)) = self.current_exception(thread)? {
                if ex_info != 0 && obj != 0 {
                    return Ok((ex_info + l.thrown_object, obj));
                }
            }
        }
        let off = match self.layout.thread.last_thrown_object {
            Some(off) => off,
            None => self.layout.stack().thread_last_thrown,
        };
        let h = self
            .memory()
            .read_u64(thread + off)
            .map_err(|_| ClrError::read("Thread::m_LastThrownObjectHandle", thread + off))?;
        if h == 0 {
            return Ok((0, 0));
        }
        let obj = self
            .memory()
            .read_u64(h)
            .map_err(|_| ClrError::read("the last thrown object's handle", h))?;
        Ok((h, obj))
    }

    fn current_exception(&self, thread: u64) -> Result<Option<(u64, u64)>> {
        self.require(crate::discovery::layout::Capability::Exceptions)?;
        let Some(l) = self.layout.thread.exception_tracker else {
            return Ok(None);
        };
        let ex_info = self
            .memory()
            .read_u64(thread + l.tracker)
            .map_err(|_| ClrError::read("Thread::ExceptionTracker", thread + l.tracker))?;
        if ex_info == 0 {
            return Ok(Some((0, 0)));
        }
        Ok(Some((ex_info, self.thrown_object(ex_info)?)))
    }

    fn nested_exceptions(&self, thread: u64) -> Result<Option<Vec<(u64, u64)>>> {
        let Some((first, _)) = self.current_exception(thread)? else {
            return Ok(None);
        };
        let Some(l) = self.layout.thread.exception_tracker else {
            return Ok(None);
        };
        let m = self.memory();
        let mut out: Vec<(u64, u64)> = Vec::new();
        let mut at = first;
        while at != 0 {
            let prev = m.read_u64(at + l.previous_nested).map_err(|_| {
                ClrError::read("ExceptionInfo::PreviousNestedInfo", at + l.previous_nested)
            })?;
            if prev == 0 {
                break;
            }
            // A nested ExInfo lives on the stack below the one it interrupted; a chain that
            // comes back or never ends is damaged.
            if prev == first || out.iter().any(|&(x, _)| x == prev) || out.len() >= 1024 {
                return Err(ClrError::corrupt(
                    "ExceptionInfo::PreviousNestedInfo",
                    at + l.previous_nested,
                    format!("the nested exception chain comes back to {prev:#x} or never ends"),
                ));
            }
            out.push((prev, self.thrown_object(prev)?));
            at = prev;
        }
        Ok(Some(out))
    }
}

impl<M: Memory> Runtime<M> {
    /// An `ExceptionInfo`'s thrown object (0 when none): .NET 11 holds the object itself
    /// (ExInfo._exception); before, a handle to it.
    fn thrown_object(&self, ex_info: u64) -> Result<u64> {
        let Some(l) = self.layout.thread.exception_tracker else {
            return Ok(0);
        };
        let m = self.memory();
        let v = m
            .read_u64(ex_info + l.thrown_object)
            .map_err(|_| ClrError::read("ExInfo::m_hThrowable", ex_info + l.thrown_object))?;
        if v == 0 || !self.layout.thread.thrown_object_is_handle {
            return Ok(v);
        }
        m.read_u64(v)
            .map_err(|_| ClrError::read("the thrown object's handle", v))
    }
}

/// One `ThreadState` bit: its name in the runtime's threads.h (`None`: a bit the runtimes
/// dumpshell reads leave unused) and SOS's description of it (`threadstate`, SOS 10.0.750501,
/// which still describes the retired bits).
#[derive(Debug, Clone, Copy)]
pub struct ThreadStateBit {
    /// The bit.
    pub bit: u32,
    /// The runtime's name, as `clrthreads` shows it (threads.h's `TS_` name).
    pub name: Option<&'static str>,
    /// SOS's description (`threadstate`).
    pub sos: &'static str,
}

const fn tsb(bit: u32, name: Option<&'static str>, sos: &'static str) -> ThreadStateBit {
    ThreadStateBit { bit, name, sos }
}

/// Every `ThreadState` bit (threads.h), in bit order.
pub const THREAD_STATE_BITS: &[ThreadStateBit] = &[
    tsb(
        0x0000_0001,
        Some("AbortRequested"),
        "Thread Abort Requested",
    ),
    tsb(0x0000_0002, Some("GCSuspendPending"), "GC Suspend Pending"),
    tsb(
        0x0000_0004,
        Some("UserSuspendPending"),
        "User Suspend Pending",
    ),
    tsb(
        0x0000_0008,
        Some("DebugSuspendPending"),
        "Debug Suspend Pending",
    ),
    tsb(0x0000_0010, Some("GCOnTransitions"), "GC On Transitions"),
    tsb(0x0000_0020, Some("LegalToJoin"), "Legal to Join"),
    tsb(0x0000_0040, None, "Yield Requested"),
    tsb(0x0000_0080, Some("Hijacked"), "Hijacked by the GC"),
    tsb(0x0000_0100, None, "Blocking GC for Stack Overflow"),
    tsb(0x0000_0200, Some("Background"), "Background"),
    tsb(0x0000_0400, Some("Unstarted"), "Unstarted"),
    tsb(0x0000_0800, Some("Dead"), "Dead"),
    tsb(0x0000_1000, Some("WeOwn"), "CLR Owns"),
    tsb(0x0000_2000, Some("CoInitialized"), "CoInitialized"),
    tsb(0x0000_4000, Some("InSTA"), "In Single Threaded Apartment"),
    tsb(0x0000_8000, Some("InMTA"), "In Multi Threaded Apartment"),
    tsb(0x0001_0000, Some("ReportDead"), "Reported Dead"),
    tsb(0x0002_0000, Some("FullyInitialized"), "Fully initialized"),
    tsb(0x0004_0000, Some("TaskReset"), "Task Reset"),
    tsb(0x0008_0000, Some("SyncSuspended"), "Sync Suspended"),
    tsb(0x0010_0000, Some("DebugWillSync"), "Debug Will Sync"),
    tsb(0x0020_0000, Some("StackCrawlNeeded"), "Stack Crawl Needed"),
    tsb(0x0040_0000, Some("SuspendUnstarted"), "Suspend Unstarted"),
    tsb(0x0080_0000, None, "Aborted"),
    tsb(
        0x0100_0000,
        Some("ThreadPoolWorker"),
        "Thread Pool Worker Thread",
    ),
    tsb(0x0200_0000, Some("Interruptible"), "Interruptible"),
    tsb(0x0400_0000, Some("Interrupted"), "Interrupted"),
    tsb(
        0x0800_0000,
        Some("CompletionPortThread"),
        "Completion Port Thread",
    ),
    tsb(0x1000_0000, Some("AbortInitiated"), "Abort Initiated"),
    tsb(0x2000_0000, Some("Finalized"), "Finalized"),
    tsb(0x4000_0000, Some("FailStarted"), "Failed to Start"),
    tsb(0x8000_0000, Some("Detached"), "Detached"),
];

/// SOS's descriptions of the bits set in a `ThreadState` (`threadstate`), in bit order.
pub fn thread_state_descriptions(state: u32) -> Vec<&'static str> {
    THREAD_STATE_BITS
        .iter()
        .filter(|b| state & b.bit != 0)
        .map(|b| b.sos)
        .collect()
}

/// The names of the bits set in a `ThreadState`.
pub fn thread_state_names(state: u32) -> Vec<&'static str> {
    THREAD_STATE_BITS
        .iter()
        .filter(|b| state & b.bit != 0)
        .filter_map(|b| b.name)
        .collect()
}
