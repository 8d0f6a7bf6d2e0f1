//! Monitors (`lock`, `Monitor.Enter/Wait`): who owns which object's lock, who waits for it, and
//! the wait-for graph between threads (`syncblk`, `deadlock`).
//!
//! Where the runtime keeps it (.NET 8, vm/syncblk.h, threads.h, threaddebugblockinginfo.h;
//! offsets in [`crate::layout::LockLayout`], verified on the corpus):
//! - The object header (the 32-bit word just before the MethodTable pointer): with
//!   `BIT_SBLK_IS_HASH_OR_SYNCBLKINDEX` (0x08000000) set and `BIT_SBLK_IS_HASHCODE`
//!   (0x04000000) clear, bits 0-25 index the sync table; with both clear, a thin lock: bits
//!   0-15 the owner's thread id (`Thread::m_ThreadId`, the managed id), bits 16-21 the extra
//!   recursion levels.
//! - `g_pSyncTable`: `SyncTableEntry {SyncBlock*, Object*}` for indices 1 ..
//!   `SyncBlockCache::m_FreeSyncTableIndex`; an Object* with bit 0 set is a free entry.
//! - SyncBlock starts with its AwareLock: `m_lockState` (bit 0 locked, bits 6-31 the number of
//!   threads waiting to enter), `m_Recursion`, `m_HoldingThread`, `m_HoldingOSThreadId`.
//!   `SyncBlock::m_Link` chains the `WaitEventLink`s of the threads in `Monitor.Wait`.
//! - What a blocked thread waits for: `Thread::m_DebugBlockingInfo`, the list of
//!   `DebugBlockingItem {AwareLock* pMonitor, AppDomain*, type, timeout, next}` that
//!   `AwareLock::EnterEpilog` (type 0, entering) and `SyncBlock::Wait` (type 1, waiting for a
//!   pulse) push on the waiting thread's stack for the debugger's GetBlockingObjects. A thread
//!   that has not reached that point yet (still spinning) has no item; then the
//!   HelperMethodFrame_1OBJ of its `Monitor.ReliableEnter`/`Enter`/`TryEnter` FCALL gives the
//!   object it protects (`gcPtrs[0]`), and its owner comes from the object's header.
//!   On the corpus both paths name the same object for every blocked thread.
//!
//! Limits: only monitors (`lock`, Monitor.Enter/TryEnter/Wait). Waits on other primitives
//! (SemaphoreSlim, ReaderWriterLockSlim, Mutex, events, tasks) are not edges of the graph, so a
//! cycle through them is not found. A thread in Monitor.Wait waits for a pulse that any thread
//! may send: it is reported, but it is no edge to anybody (only once pulsed does it wait to
//! re-enter, as an entering thread). A lock held by a thread that has died is reported with
//! its recorded Thread. Thin locks cannot have waiters (a contended lock is inflated to a sync
//! block first), so they appear only as owned locks.

use crate::error::{ClrError, Result};
use crate::heap::GcHeap;
use crate::layout::LockHolder;
use crate::runtime::Runtime;
use crate::stack::ThreadStack;
use crate::threads::ThreadData;
use dumpreader::Memory;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// Bound on the sync table entries read.
pub const MAX_SYNC_TABLE: u32 = 1 << 26;
/// Bound on a list walked in target memory (waiters, blocking items).
const MAX_LIST: usize = 100_000;

/// `BIT_SBLK_IS_HASH_OR_SYNCBLKINDEX`.
pub const BIT_SBLK_IS_HASH_OR_SYNCBLKINDEX: u32 = 0x0800_0000;
/// `BIT_SBLK_IS_HASHCODE`.
pub const BIT_SBLK_IS_HASHCODE: u32 = 0x0400_0000;
/// `MASK_SYNCBLOCKINDEX`.
pub const MASK_SYNCBLOCKINDEX: u32 = (1 << 26) - 1;
/// `SBLK_MASK_LOCK_THREADID`.
pub const SBLK_MASK_LOCK_THREADID: u32 = 0xFFFF;
/// `SBLK_MASK_LOCK_RECLEVEL`.
pub const SBLK_MASK_LOCK_RECLEVEL: u32 = 0x003F_0000;
/// AwareLock::LockState: IsLockedMask.
const LOCK_IS_LOCKED: u32 = 1;
/// AwareLock::LockState: WaiterCountShift.
const LOCK_WAITER_SHIFT: u32 = 6;

/// What an object's header word says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Header {
    /// Nothing (or only GC/finalizer bits).
    Empty,
    /// A hash code stored in the header.
    HashCode {
        /// The hash code.
        hash: u32,
    },
    /// A sync block index.
    SyncBlock {
        /// The index into the sync table.
        index: u32,
    },
    /// A thin lock.
    ThinLock {
        /// The owner's `Thread::m_ThreadId` (the managed thread id).
        thread_id: u32,
        /// Times taken (1 + the header's recursion level).
        recursion: u32,
    },
}

/// Decodes the header word (`ObjHeader::m_SyncBlockValue`).
pub fn decode_header(v: u32) -> Header {
    if v & BIT_SBLK_IS_HASH_OR_SYNCBLKINDEX != 0 {
        if v & BIT_SBLK_IS_HASHCODE != 0 {
            Header::HashCode {
                hash: v & MASK_SYNCBLOCKINDEX,
            }
        } else {
            Header::SyncBlock {
                index: v & MASK_SYNCBLOCKINDEX,
            }
        }
    } else if v & SBLK_MASK_LOCK_THREADID != 0 {
        Header::ThinLock {
            thread_id: v & SBLK_MASK_LOCK_THREADID,
            recursion: ((v & SBLK_MASK_LOCK_RECLEVEL) >> 16) + 1,
        }
    } else {
        Header::Empty
    }
}

/// The header word of the object at `obj` (the 32 bits just before it).
pub fn object_header<M: Memory>(m: &M, obj: u64) -> Result<Header> {
    let v = m.read_u32(obj.wrapping_sub(4)).map_err(|_| {
        ClrError::read(
            "object header (ObjHeader::m_SyncBlockValue)",
            obj.wrapping_sub(4),
        )
    })?;
    Ok(decode_header(v))
}

/// One SyncBlock in use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyncBlockData {
    /// Its index in the sync table.
    pub index: u32,
    /// The SyncBlock.
    pub sync_block: u64,
    /// The object it belongs to.
    pub object: u64,
    /// AwareLock::m_lockState.
    pub lock_state: u32,
    /// Whether the monitor is held.
    pub locked: bool,
    /// SOS's MonitorHeld: 1 when held, plus 2 per thread waiting to enter.
    pub monitor_held: u32,
    /// AwareLock::m_Recursion (times the owner entered).
    pub recursion: u32,
    /// The owner Thread (0 when not held).
    pub holding_thread: u64,
    /// The owner's OS thread id (AwareLock::m_HoldingOSThreadId).
    pub holding_os_thread_id: u64,
    /// Threads waiting to enter (the lock state's waiter count).
    pub enter_waiters: u32,
    /// Threads in Monitor.Wait on this object (the WaitEventLink list), in list order.
    pub wait_threads: Vec<u64>,
    /// Problems met reading it.
    pub notes: Vec<String>,
}

impl SyncBlockData {
    /// Held, or waited for (to enter or for a pulse).
    pub fn is_interesting(&self) -> bool {
        self.locked || self.enter_waiters > 0 || !self.wait_threads.is_empty()
    }
}

/// The sync table and its SyncBlocks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyncTable {
    /// g_pSyncTable.
    pub table: u64,
    /// SyncBlockCache::m_FreeSyncTableIndex (entries below it have been used).
    pub used_entries: u32,
    /// SyncBlockCache::m_SyncTableSize.
    pub size: u32,
    /// SyncBlockCache::m_ActiveCount.
    pub active_count: u32,
    /// Entries that are free (recycled).
    pub free_entries: u32,
    /// Entries with an object but no SyncBlock (a hash code only).
    pub without_sync_block: u32,
    /// Every SyncBlock of a live entry, in index order.
    pub sync_blocks: Vec<SyncBlockData>,
    /// Problems met.
    pub notes: Vec<String>,
}

/// A thin lock held in an object header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThinLockData {
    /// The object.
    pub object: u64,
    /// Its MethodTable.
    pub mt: u64,
    /// The owner's managed thread id (the header's thread id).
    pub thread_id: u32,
    /// The owner Thread, when a thread has that id.
    pub thread: Option<u64>,
    /// Times taken.
    pub recursion: u32,
}

impl<M: Memory> Runtime<M> {
    /// The lock table of this runtime, or the refusal naming it.
    fn lock_layout(&self) -> Result<&'static crate::layout::LockLayout> {
        self.require(crate::layout::Capability::Locks)?;
        self.layout.locks().ok_or_else(|| ClrError::NotVerified {
            runtime: format!("{} ({}-x64)", self.info.display_name(), self.info.os),
            capability: crate::layout::Capability::Locks.describe(),
        })
    }

    /// Reads the SyncBlock at `sb`, its owner and its Monitor.Wait list.
    pub fn sync_block(&self, index: u32, sb: u64, object: u64) -> Result<SyncBlockData> {
        let l = self.lock_layout()?;
        let m = self.memory();
        let r32 = |off: u64, what: &str| {
            m.read_u32(sb.wrapping_add(off))
                .map_err(|_| ClrError::read(format!("SyncBlock::{what}"), sb.wrapping_add(off)))
        };
        let lock_state = r32(l.lock_state, "m_Monitor.m_lockState")?;
        let recursion = r32(l.recursion, "m_Monitor.m_Recursion")?;
        let mut notes = Vec::new();
        let holding_thread = match l.holder {
            LockHolder::ThreadPointer => m
                .read_u64(sb.wrapping_add(l.holding_thread))
                .map_err(|_| ClrError::read("SyncBlock::m_Monitor.m_HoldingThread", sb))?,
            LockHolder::ThreadId => {
                let id = r32(l.holding_thread, "m_Monitor.m_HoldingThreadId")?;
                if id == 0 || lock_state & LOCK_IS_LOCKED == 0 {
                    0
                } else {
                    match self.thread_of_thin_lock_id(id) {
                        Ok(t) => t,
                        Err(e) => {
                            notes.push(format!("the owner's thread id {id}: {e}"));
                            0
                        }
                    }
                }
            }
        };
        let holding_os_thread_id = m
            .read_u64(sb.wrapping_add(l.holding_os_thread_id))
            .unwrap_or(0);
        let locked = lock_state & LOCK_IS_LOCKED != 0;
        let enter_waiters = lock_state >> LOCK_WAITER_SHIFT;
        let mut wait_threads = Vec::new();
        let mut link = m.read_u64(sb.wrapping_add(l.sync_block_link)).unwrap_or(0);
        let mut seen = HashSet::new();
        while link != 0 {
            if !seen.insert(link) || seen.len() > MAX_LIST {
                notes.push(format!("the Monitor.Wait list loops at {link:#x}"));
                break;
            }
            let wel = link.wrapping_sub(l.wait_link_sb);
            match m.read_u64(wel.wrapping_add(l.wait_link_thread)) {
                Ok(t) => wait_threads.push(t),
                Err(_) => {
                    notes.push(format!("WaitEventLink {wel:#x} is not in the dump"));
                    break;
                }
            }
            link = match m.read_u64(link) {
                Ok(n) => n,
                Err(_) => {
                    notes.push(format!("SLink {link:#x} is not in the dump"));
                    break;
                }
            };
        }
        let idx = r32(l.sync_index, "m_Monitor.m_dwSyncIndex")? & !0x8000_0000;
        if idx != index {
            notes.push(format!(
                "the SyncBlock says its index is {idx}, the table says {index}"
            ));
        }
        if locked && holding_thread == 0 {
            notes.push("locked, but no holding thread is recorded".into());
        }
        Ok(SyncBlockData {
            index,
            sync_block: sb,
            object,
            lock_state,
            locked,
            monitor_held: (lock_state & LOCK_IS_LOCKED) + (enter_waiters << 1),
            recursion: if locked { recursion } else { 0 },
            holding_thread: if locked { holding_thread } else { 0 },
            holding_os_thread_id: if locked { holding_os_thread_id } else { 0 },
            enter_waiters,
            wait_threads,
            notes,
        })
    }

    /// The Thread whose thin-lock thread id (`Thread::m_ThreadId`, what object headers and
    /// .NET 10's AwareLock record) is `id`: through the runtime's `ThinlockThreadIdDispenser`
    /// (`IdDispenser.IdToThread[id]`, ids 1..=`HighestId`) when the descriptor publishes it,
    /// else the thread of the ThreadStore list with that id.
    pub fn thread_of_thin_lock_id(&self, id: u32) -> Result<u64> {
        let m = self.memory();
        let d = self.descriptor();
        let dispenser = d.and_then(|d| {
            Some((
                d.global_number("ThinlockThreadIdDispenser")?,
                d.field("IdDispenser", "HighestId")?,
                d.field("IdDispenser", "IdToThread")?,
            ))
        });
        let Some((global, highest_off, table_off)) = dispenser else {
            return self
                .threads()?
                .iter()
                .find(|t| t.managed_id == id)
                .map(|t| t.address)
                .ok_or_else(|| {
                    ClrError::corrupt("thin-lock thread id", 0, format!("no thread has id {id}"))
                });
        };
        let disp = m
            .read_u64(global)
            .map_err(|_| ClrError::read("ThinlockThreadIdDispenser", global))?;
        let highest = m.read_u32(disp.wrapping_add(highest_off)).map_err(|_| {
            ClrError::read("IdDispenser::m_highestId", disp.wrapping_add(highest_off))
        })?;
        if id == 0 || id > highest {
            return Err(ClrError::corrupt(
                "thin-lock thread id",
                disp,
                format!("{id} is not a dispensed id (1..={highest})"),
            ));
        }
        let table = m.read_u64(disp.wrapping_add(table_off)).map_err(|_| {
            ClrError::read("IdDispenser::m_idToThread", disp.wrapping_add(table_off))
        })?;
        let at = table.wrapping_add(8 * id as u64);
        m.read_u64(at)
            .map_err(|_| ClrError::read("IdDispenser::m_idToThread[id]", at))
    }

    /// The sync table: every SyncBlock in use. An unreadable entry or SyncBlock becomes a note.
    pub fn sync_table(&self) -> Result<SyncTable> {
        let l = self.lock_layout()?;
        let m = self.memory();
        let cache = self.globals.sync_block_cache;
        let table = self.globals.sync_table;
        if cache == 0 {
            return Err(ClrError::corrupt(
                "SyncBlockCache::s_pSyncBlockCache",
                0,
                "null or not found beside g_pSyncTable in g_dacTable",
            ));
        }
        let r32 = |off: u64, what: &str| {
            m.read_u32(cache.wrapping_add(off)).map_err(|_| {
                ClrError::read(format!("SyncBlockCache::{what}"), cache.wrapping_add(off))
            })
        };
        let used = r32(l.cache_free_sync_table_index, "m_FreeSyncTableIndex")?;
        let size = r32(l.cache_sync_table_size, "m_SyncTableSize")?;
        let active_count = r32(l.cache_active_count, "m_ActiveCount")?;
        if used > size || size > MAX_SYNC_TABLE {
            return Err(ClrError::corrupt(
                "SyncBlockCache",
                cache,
                format!("{used} entries used of a table of {size}: implausible"),
            ));
        }
        let mut out = SyncTable {
            table,
            used_entries: used,
            size,
            active_count,
            free_entries: 0,
            without_sync_block: 0,
            sync_blocks: Vec::new(),
            notes: Vec::new(),
        };
        for i in 1..used {
            let e = table.wrapping_add(i as u64 * l.sync_table_entry_size);
            let (sb, obj) = match (m.read_u64(e), m.read_u64(e.wrapping_add(l.entry_object))) {
                (Ok(s), Ok(o)) => (s, o),
                _ => {
                    out.notes
                        .push(format!("sync table entry {i} at {e:#x} is not in the dump"));
                    continue;
                }
            };
            if obj & 1 != 0 || obj == 0 {
                out.free_entries += 1;
                continue;
            }
            if sb == 0 {
                out.without_sync_block += 1;
                continue;
            }
            match self.sync_block(i, sb, obj) {
                Ok(d) => out.sync_blocks.push(d),
                Err(e) => out.notes.push(format!("sync table entry {i}: {e}")),
            }
        }
        Ok(out)
    }

    /// Thin locks held in object headers: one heap walk. Returns them with the walk's errors.
    pub fn thin_locks(
        &self,
        heap: &GcHeap,
        threads: &[ThreadData],
    ) -> (Vec<ThinLockData>, Vec<String>) {
        if let Err(e) = self.require(crate::layout::Capability::Locks) {
            return (Vec::new(), vec![e.to_string()]);
        }
        let by_id: HashMap<u32, u64> = threads.iter().map(|t| (t.managed_id, t.address)).collect();
        let m = self.memory();
        let mut out = Vec::new();
        let mut iter = heap.objects(self);
        for o in iter.by_ref() {
            if o.is_free {
                continue;
            }
            let Ok(v) = m.read_u32(o.address.wrapping_sub(4)) else {
                continue;
            };
            if let Header::ThinLock {
                thread_id,
                recursion,
            } = decode_header(v)
            {
                out.push(ThinLockData {
                    object: o.address,
                    mt: o.mt,
                    thread_id,
                    thread: by_id.get(&thread_id).copied(),
                    recursion,
                });
            }
        }
        let errors = iter.errors().iter().map(|e| format!("{e:?}")).collect();
        (out, errors)
    }

    /// The debugger's blocking items of a thread, innermost first: (AwareLock/SyncBlock,
    /// kind, timeout).
    pub fn blocking_items(&self, thread: u64) -> Result<Vec<(u64, WaitKind, u32)>> {
        let l = self.lock_layout()?;
        let m = self.memory();
        let mut p = m
            .read_u64(thread.wrapping_add(l.thread_first_blocking_item))
            .map_err(|_| {
                ClrError::read(
                    "Thread::m_DebugBlockingInfo",
                    thread.wrapping_add(l.thread_first_blocking_item),
                )
            })?;
        let mut out = Vec::new();
        while p != 0 {
            if out.len() >= 64 {
                return Err(ClrError::corrupt(
                    "DebugBlockingItem list",
                    thread,
                    "more than 64 items (a loop?)",
                ));
            }
            let rd = |off: u64| {
                m.read_u64(p.wrapping_add(off))
                    .map_err(|_| ClrError::read("DebugBlockingItem", p.wrapping_add(off)))
            };
            let monitor = rd(l.blocking_monitor)?;
            let ty = m.read_u32(p.wrapping_add(l.blocking_type)).map_err(|_| {
                ClrError::read("DebugBlockingItem::type", p.wrapping_add(l.blocking_type))
            })?;
            let timeout = m.read_u32(p.wrapping_add(l.blocking_timeout)).unwrap_or(0);
            let kind = match ty {
                0 => WaitKind::MonitorEnter,
                1 => WaitKind::MonitorWait,
                _ => {
                    return Err(ClrError::corrupt(
                        "DebugBlockingItem",
                        p,
                        format!("unknown type {ty}"),
                    ))
                }
            };
            out.push((monitor, kind, timeout));
            p = rd(l.blocking_next)?;
        }
        Ok(out)
    }

    /// The object a HelperMethodFrame_1OBJ protects (`*gcPtrs[0]`), 0 when none.
    pub fn helper_frame_object(&self, frame: u64) -> Option<u64> {
        let off = self.lock_layout().ok()?.hmf_1obj_gc_ptr?;
        let m = self.memory();
        let slot = m.read_u64(frame.wrapping_add(off)).ok()?;
        if slot == 0 {
            return None;
        }
        m.read_u64(slot).ok().filter(|&o| o != 0)
    }
}

/// Why a thread is blocked on a monitor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitKind {
    /// Entering (Monitor.Enter, `lock`): it waits for the owner to leave.
    MonitorEnter,
    /// In Monitor.Wait: it waits for a Pulse.
    MonitorWait,
}

/// How the awaited lock was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitSource {
    /// Thread::m_DebugBlockingInfo.
    BlockingInfo,
    /// The Monitor FCALL's HelperMethodFrame_1OBJ.
    HelperFrame,
}

/// One thread blocked on a monitor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockWait {
    /// The waiting Thread.
    pub thread: u64,
    /// Its managed id.
    pub managed_id: u32,
    /// Its OS id.
    pub os_id: u64,
    /// Entering or waiting for a pulse.
    pub kind: WaitKind,
    /// The lock object.
    pub object: u64,
    /// Its SyncBlock (0 when only the header knows the lock: a thin lock).
    pub sync_block: u64,
    /// The owner Thread, when the lock is held.
    pub owner: Option<u64>,
    /// How the lock was found.
    pub source: WaitSource,
    /// The innermost frame with a method (the Monitor call it blocks in).
    pub blocked_in: Option<String>,
    /// The first frame below the Monitor methods (where the program waits).
    pub wait_frame: Option<String>,
    /// Problems met.
    pub notes: Vec<String>,
}

/// A cycle of the wait-for graph: each thread waits for a lock the next one holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cycle {
    /// The threads, each waiting for the next (the last for the first), starting at the
    /// lowest Thread address.
    pub threads: Vec<u64>,
    /// For each thread, the lock object it waits for (held by the next thread).
    pub objects: Vec<u64>,
}

/// A thread that waits, directly or through others, for a cycle it is not part of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WaitsOnCycle {
    /// The thread.
    pub thread: u64,
    /// Which cycle (index into [`Deadlocks::cycles`]).
    pub cycle: usize,
    /// The owners it waits through, ending at a thread of the cycle.
    pub through: Vec<u64>,
}

/// The wait-for graph over monitor owners and waiters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Deadlocks {
    /// Every thread blocked on a monitor.
    pub waits: Vec<LockWait>,
    /// The cycles (deadlocks).
    pub cycles: Vec<Cycle>,
    /// Threads blocked behind a cycle.
    pub waiting_on_cycles: Vec<WaitsOnCycle>,
    /// Problems met.
    pub notes: Vec<String>,
}

const MONITOR_PREFIX: &str = "System.Threading.Monitor.";

fn is_enter_method(name: &str) -> bool {
    let n = name.split('(').next().unwrap_or(name);
    matches!(
        n,
        "System.Threading.Monitor.ReliableEnter"
            | "System.Threading.Monitor.Enter"
            | "System.Threading.Monitor.TryEnter"
            | "System.Threading.Monitor.ReliableEnterTimeout"
    )
}

/// Finds what each thread waits for and the cycles of the wait-for graph.
///
/// `stacks` are the threads' managed stacks (by Thread address), used to name the frames and,
/// for a thread with no debugger blocking item, to find the lock through the Monitor FCALL's
/// HelperMethodFrame_1OBJ.
pub fn find_deadlocks<M: Memory>(
    rt: &Runtime<M>,
    threads: &[ThreadData],
    table: &SyncTable,
    stacks: &HashMap<u64, ThreadStack>,
) -> Deadlocks {
    let mut notes = Vec::new();
    let by_sb: HashMap<u64, &SyncBlockData> = table
        .sync_blocks
        .iter()
        .map(|s| (s.sync_block, s))
        .collect();
    let by_id: HashMap<u32, u64> = threads.iter().map(|t| (t.managed_id, t.address)).collect();
    let mut waits = Vec::new();
    for t in threads {
        if t.os_id == 0 {
            continue;
        }
        let st = stacks.get(&t.address);
        let blocked_in = st.and_then(|s| s.methods().next().map(str::to_string));
        let wait_frame = st.and_then(|s| {
            s.methods()
                .find(|m| !m.starts_with(MONITOR_PREFIX))
                .map(str::to_string)
        });
        let mut w = LockWait {
            thread: t.address,
            managed_id: t.managed_id,
            os_id: t.os_id,
            kind: WaitKind::MonitorEnter,
            object: 0,
            sync_block: 0,
            owner: None,
            source: WaitSource::BlockingInfo,
            blocked_in,
            wait_frame,
            notes: Vec::new(),
        };
        let items = match rt.blocking_items(t.address) {
            Ok(i) => i,
            Err(e) => {
                notes.push(format!("thread {:#x} ({}): {e}", t.os_id, t.managed_id));
                Vec::new()
            }
        };
        if let Some(&(monitor, kind, _)) = items.first() {
            w.kind = kind;
            w.sync_block = monitor;
            match by_sb.get(&monitor) {
                Some(sb) => {
                    w.object = sb.object;
                    w.owner = (sb.locked && sb.holding_thread != 0).then_some(sb.holding_thread);
                }
                None => w.notes.push(format!(
                    "it waits on the monitor {monitor:#x}, which no live sync table entry names"
                )),
            }
            waits.push(w);
            continue;
        }
        // No blocking item: a Monitor enter FCALL's frame may still name the object.
        let Some(st) = st else { continue };
        let Some(f) = st.frames.iter().find(|f| {
            f.frame_name.as_deref() == Some("HelperMethodFrame_1OBJ")
                && f.method.as_deref().is_some_and(is_enter_method)
        }) else {
            continue;
        };
        let Some(obj) = f.frame.and_then(|fr| rt.helper_frame_object(fr)) else {
            w.notes
                .push("in a Monitor enter call whose lock object is not readable".into());
            waits.push(w);
            continue;
        };
        w.source = WaitSource::HelperFrame;
        w.object = obj;
        match object_header(rt.memory(), obj) {
            Ok(Header::SyncBlock { index }) => {
                if let Some(sb) = table.sync_blocks.iter().find(|s| s.index == index) {
                    w.sync_block = sb.sync_block;
                    w.owner = (sb.locked && sb.holding_thread != 0).then_some(sb.holding_thread);
                }
            }
            Ok(Header::ThinLock { thread_id, .. }) => match by_id.get(&thread_id) {
                Some(&o) => w.owner = Some(o),
                None => w.notes.push(format!(
                    "thin lock held by thread id {thread_id}, which no thread has"
                )),
            },
            Ok(_) => {}
            Err(e) => w.notes.push(e.to_string()),
        }
        waits.push(w);
    }
    // The wait-for graph: a thread entering a held lock waits for its owner.
    let edge: HashMap<u64, (u64, u64)> = waits
        .iter()
        .filter(|w| w.kind == WaitKind::MonitorEnter)
        .filter_map(|w| w.owner.map(|o| (w.thread, (o, w.object))))
        .collect();
    let mut cycles: Vec<Cycle> = Vec::new();
    let mut cycle_of: HashMap<u64, usize> = HashMap::new();
    let mut starts: Vec<u64> = edge.keys().copied().collect();
    starts.sort_unstable();
    for &s in &starts {
        let mut path = vec![s];
        let mut cur = s;
        while let Some(&(next, _)) = edge.get(&cur) {
            if cycle_of.contains_key(&next) {
                break;
            }
            if let Some(pos) = path.iter().position(|&p| p == next) {
                let mut ts = path[pos..].to_vec();
                let min = ts
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, t)| **t)
                    .map(|(i, _)| i);
                ts.rotate_left(min.unwrap_or(0));
                let objects = ts.iter().map(|t| edge[t].1).collect();
                for t in &ts {
                    cycle_of.insert(*t, cycles.len());
                }
                cycles.push(Cycle {
                    threads: ts,
                    objects,
                });
                break;
            }
            if path.len() > threads.len() + 1 {
                break;
            }
            path.push(next);
            cur = next;
        }
    }
    let mut waiting_on_cycles = Vec::new();
    for &s in &starts {
        if cycle_of.contains_key(&s) {
            continue;
        }
        let mut through = Vec::new();
        let mut cur = s;
        let mut seen = HashSet::new();
        while let Some(&(next, _)) = edge.get(&cur) {
            if !seen.insert(next) {
                break;
            }
            through.push(next);
            if let Some(&c) = cycle_of.get(&next) {
                waiting_on_cycles.push(WaitsOnCycle {
                    thread: s,
                    cycle: c,
                    through: through.clone(),
                });
                break;
            }
            cur = next;
        }
    }
    Deadlocks {
        waits,
        cycles,
        waiting_on_cycles,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_words() {
        // Values built from syncblk.h's bit definitions.
        assert_eq!(decode_header(0), Header::Empty);
        assert_eq!(
            decode_header(0x4000_0000),
            Header::Empty,
            "finalizer-run bit only"
        );
        assert_eq!(
            decode_header(0x0800_0001),
            Header::SyncBlock { index: 1 },
            "deadlock.dmp's LockA header"
        );
        assert_eq!(
            decode_header(0x0C00_1234),
            Header::HashCode { hash: 0x1234 }
        );
        assert_eq!(
            decode_header(0x0000_0005),
            Header::ThinLock {
                thread_id: 5,
                recursion: 1
            }
        );
        assert_eq!(
            decode_header(0x0002_0007),
            Header::ThinLock {
                thread_id: 7,
                recursion: 3
            }
        );
        // A recursion level without a thread id holds no lock.
        assert_eq!(decode_header(0x0001_0000), Header::Empty);
    }
}
