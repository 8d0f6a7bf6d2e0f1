//! The sync block table, thin-lock and sync-block headers, and what a thread's debugger
//! blocking items say it waits for: the runtime's lock structures, read (analysis of who waits
//! for whom is [`crate::analysis::locks`]).
//!
//! Where the runtime keeps it (.NET 8, vm/syncblk.h, threads.h, threaddebugblockinginfo.h;
//! offsets in [`crate::discovery::layout::LockLayout`], verified on the corpus):
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
//! .NET 11 (`LockScheme::Managed`): Monitor is managed. A SyncBlock holds an OBJECTHANDLE of a
//! `System.Threading.Lock` (`SyncBlock.Lock`), whose `_state` (bit 0 locked, the number of
//! waiting threads from bit 7 in units of 128), `_owningThreadId` (the owner's managed id) and
//! `_recursionCount` (re-entries) say who holds it; until such a Lock exists the SyncBlock keeps
//! the thin-lock word it took over from the header (`SyncBlock.ThinLock`). CoreLib 11.0.0's
//! `System.Threading.Lock` and `Lock.State` (docs/clr-layout-net11.md 2.6; checked on
//! deadlock-net11: LockA `_state` 257 = locked with 2 waiters, the manifest's owner id 4). Its
//! fields are read by name, which this layer cannot do: [`ReadSyncBlocks::sync_table_with`]
//! takes a reader of them (`crate::analysis::locks::monitors` gives one), and who waits is
//! in each thread's managed `ThreadBlockingInfo` list (read there too).
//!
//! Limits: only monitors (`lock`, Monitor.Enter/TryEnter/Wait). Waits on other primitives
//! (SemaphoreSlim, ReaderWriterLockSlim, Mutex, events, tasks) are not edges of the graph, so a
//! cycle through them is not found. A thread in Monitor.Wait waits for a pulse that any thread
//! may send: it is reported, but it is no edge to anybody (only once pulsed does it wait to
//! re-enter, as an entering thread). A lock held by a thread that has died is reported with
//! its recorded Thread. Thin locks cannot have waiters (a contended lock is inflated to a sync
//! block first), so they appear only as owned locks.

use crate::data::threads::ReadThreads;
use crate::discovery::layout::{LockHolder, LockScheme};
use crate::discovery::runtime::Runtime;
use crate::error::{ClrError, Result};
use dumpreader::Memory;
use serde::Serialize;
use std::collections::HashSet;

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

/// A managed `System.Threading.Lock` (.NET 11's Monitor), its fields as read by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManagedLock {
    /// `_owningThreadId`: the owner's managed thread id (0 when not held).
    pub owning_thread_id: i32,
    /// `_state`: bit 0 locked; bits 7 and up the number of threads waiting to enter.
    pub state: u32,
    /// `_recursionCount`: re-entries beyond the first.
    pub recursion_count: u32,
}

/// `Lock.State` (CoreLib 11.0.0): the locked bit.
const MANAGED_LOCKED: u32 = 1;
/// `Lock.State`: the waiter count's first bit (each waiter adds 128).
const MANAGED_WAITER_SHIFT: u32 = 7;

/// Reads the `System.Threading.Lock` at an address (.NET 11).
pub type LockReader<'a> = dyn Fn(u64) -> Result<ManagedLock> + 'a;

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
    /// Threads in Monitor.Wait on this object (the WaitEventLink list, in list order; on
    /// .NET 11 the threads whose blocking info names the lock's Condition, in thread order).
    pub wait_threads: Vec<u64>,
    /// .NET 11: the managed `System.Threading.Lock` the SyncBlock holds (0: none yet, or
    /// before 11).
    pub lock_object: u64,
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
    /// .NET 11: what each blocked thread waits for, from its managed `ThreadBlockingInfo`
    /// (`crate::analysis::locks::monitors` reads them); `None` before 11, where
    /// [`ReadSyncBlocks::blocking_items`] reads the runtime's own.
    pub blocking: Option<Vec<BlockingItem>>,
    /// Problems met.
    pub notes: Vec<String>,
}

/// One thing a thread is blocked on (.NET 11's managed `ThreadBlockingInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockingItem {
    /// The blocked Thread.
    pub thread: u64,
    /// Entering a lock, or in Monitor.Wait (a Condition of the lock).
    pub kind: WaitKind,
    /// The `System.Threading.Lock` (a Condition's `_lock` for Monitor.Wait).
    pub lock_object: u64,
    /// The timeout in milliseconds (-1: none).
    pub timeout_ms: i32,
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

/// Reading the sync block table, sync blocks and a thread's blocking items.
pub trait ReadSyncBlocks {
    /// Reads the SyncBlock at `sb`, its owner and its Monitor.Wait list.
    fn sync_block(&self, index: u32, sb: u64, object: u64) -> Result<SyncBlockData>;

    /// The Thread whose thin-lock thread id (`Thread::m_ThreadId`, what object headers and
    /// .NET 10's AwareLock record) is `id`: through the runtime's `ThinlockThreadIdDispenser`
    /// (`IdDispenser.IdToThread[id]`, ids 1..=`HighestId`) when the descriptor publishes it,
    /// else the thread of the ThreadStore list with that id.
    fn thread_of_thin_lock_id(&self, id: u32) -> Result<u64>;

    /// The sync table: every SyncBlock in use. An unreadable entry or SyncBlock becomes a note.
    /// .NET 11's managed monitors need a reader of their `Lock` objects: there it is refused
    /// (use [`ReadSyncBlocks::sync_table_with`], or `crate::analysis::locks::monitors`).
    fn sync_table(&self) -> Result<SyncTable>;

    /// [`ReadSyncBlocks::sync_table`], reading .NET 11's managed `Lock` objects with `read`.
    fn sync_table_with(&self, read: &LockReader<'_>) -> Result<SyncTable>;

    /// The debugger's blocking items of a thread, innermost first: (AwareLock/SyncBlock,
    /// kind, timeout). .NET 11 keeps them in managed code ([`SyncTable::blocking`]): refused.
    fn blocking_items(&self, thread: u64) -> Result<Vec<(u64, WaitKind, u32)>>;

    /// The object a HelperMethodFrame_1OBJ protects (`*gcPtrs[0]`), 0 when none.
    fn helper_frame_object(&self, frame: u64) -> Option<u64>;
}

impl<M: Memory> ReadSyncBlocks for Runtime<M> {
    fn sync_block(&self, index: u32, sb: u64, object: u64) -> Result<SyncBlockData> {
        self.read_sync_block(index, sb, object, None)
    }

    fn sync_table(&self) -> Result<SyncTable> {
        self.read_sync_table(None)
    }

    fn sync_table_with(&self, read: &LockReader<'_>) -> Result<SyncTable> {
        self.read_sync_table(Some(read))
    }

    fn thread_of_thin_lock_id(&self, id: u32) -> Result<u64> {
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

    fn blocking_items(&self, thread: u64) -> Result<Vec<(u64, WaitKind, u32)>> {
        let l = self.lock_layout()?;
        if let LockScheme::Managed { .. } = l.scheme {
            // .NET 11: the managed ThreadBlockingInfo (SyncTable::blocking).
            return Err(managed_refusal());
        }
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

    fn helper_frame_object(&self, frame: u64) -> Option<u64> {
        let off = self.layout.stack().hmf_gc_refs;
        if off == crate::discovery::supplement::NOT_PUBLISHED {
            return None;
        }
        let m = self.memory();
        let slot = m.read_u64(frame.wrapping_add(off)).ok()?;
        if slot == 0 {
            return None;
        }
        m.read_u64(slot).ok().filter(|&o| o != 0)
    }
}

impl<M: Memory> Runtime<M> {
    /// Reads the SyncBlock at `sb` (its index and object as the table says): its AwareLock
    /// (.NET 8-10) or, with `read`, its managed Lock (.NET 11).
    fn read_sync_block(
        &self,
        index: u32,
        sb: u64,
        object: u64,
        read: Option<&LockReader<'_>>,
    ) -> Result<SyncBlockData> {
        let l = self.lock_layout()?;
        if let LockScheme::Managed {
            lock_handle,
            thin_lock,
        } = l.scheme
        {
            let read = read.ok_or_else(managed_refusal)?;
            return self.managed_sync_block(index, sb, object, lock_handle, thin_lock, read);
        }
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
            lock_object: 0,
            notes,
        })
    }

    /// A .NET 11 SyncBlock: its `System.Threading.Lock` when it has one, else the thin-lock
    /// word it took over. MonitorHeld is what the 11.0.0 DAC (and SOS) report: the locked bit
    /// alone (its waiters are [`SyncBlockData::enter_waiters`]).
    fn managed_sync_block(
        &self,
        index: u32,
        sb: u64,
        object: u64,
        lock_handle: u64,
        thin_lock: u64,
        read: &LockReader<'_>,
    ) -> Result<SyncBlockData> {
        let m = self.memory();
        let handle = m
            .read_u64(sb.wrapping_add(lock_handle))
            .map_err(|_| ClrError::read("SyncBlock::m_Lock", sb.wrapping_add(lock_handle)))?;
        let lock_object = if handle == 0 {
            0
        } else {
            m.read_u64(handle)
                .map_err(|_| ClrError::read("the SyncBlock's Lock handle", handle))?
        };
        let mut notes = Vec::new();
        let (lock_state, locked, owner_id, recursion, enter_waiters) = if lock_object != 0 {
            let lk = read(lock_object).map_err(|e| {
                e.context(format!(
                    "the System.Threading.Lock {lock_object:#x} of SyncBlock {sb:#x}"
                ))
            })?;
            let locked = lk.state & MANAGED_LOCKED != 0;
            (
                lk.state,
                locked,
                u32::try_from(lk.owning_thread_id).unwrap_or(0),
                lk.recursion_count.saturating_add(1),
                lk.state >> MANAGED_WAITER_SHIFT,
            )
        } else {
            let v = m
                .read_u32(sb.wrapping_add(thin_lock))
                .map_err(|_| ClrError::read("SyncBlock::m_thinLock", sb.wrapping_add(thin_lock)))?;
            let id = v & SBLK_MASK_LOCK_THREADID;
            (v, id != 0, id, ((v & SBLK_MASK_LOCK_RECLEVEL) >> 16) + 1, 0)
        };
        let mut holding_thread = 0;
        let mut holding_os_thread_id = 0;
        if locked {
            match self.thread_of_thin_lock_id(owner_id) {
                Ok(t) => {
                    holding_thread = t;
                    let at = t.wrapping_add(self.layout.thread.os_thread_id);
                    holding_os_thread_id = m.read_u64(at).unwrap_or(0);
                }
                Err(e) => notes.push(format!("the owner's thread id {owner_id}: {e}")),
            }
        }
        Ok(SyncBlockData {
            index,
            sync_block: sb,
            object,
            lock_state,
            locked,
            monitor_held: u32::from(locked),
            recursion: if locked { recursion } else { 0 },
            holding_thread,
            holding_os_thread_id,
            enter_waiters,
            wait_threads: Vec::new(),
            lock_object,
            notes,
        })
    }

    fn read_sync_table(&self, read: Option<&LockReader<'_>>) -> Result<SyncTable> {
        let l = self.lock_layout()?;
        if let (LockScheme::Managed { .. }, None) = (l.scheme, read) {
            return Err(managed_refusal());
        }
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
            blocking: None,
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
            match self.read_sync_block(i, sb, obj, read) {
                Ok(d) => out.sync_blocks.push(d),
                Err(e) => out.notes.push(format!("sync table entry {i}: {e}")),
            }
        }
        Ok(out)
    }

    /// The lock table of this runtime, or the refusal naming it.
    fn lock_layout(&self) -> Result<&'static crate::discovery::layout::LockLayout> {
        self.require(crate::discovery::layout::Capability::Locks)?;
        self.layout.locks.ok_or_else(|| ClrError::NotVerified {
            runtime: format!("{} ({}-x64)", self.info.display_name(), self.info.os),
            capability: crate::discovery::layout::Capability::Locks.describe(),
        })
    }
}

/// The refusal of a .NET 11 sync table read without a reader of its managed Lock objects.
fn managed_refusal() -> ClrError {
    ClrError::unsupported(
        "the sync table",
        None,
        "on .NET 11 a monitor's state is a managed System.Threading.Lock, read by field name: \
         read the table with clrdata::analysis::locks::monitors",
    )
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
