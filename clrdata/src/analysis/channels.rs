//! `System.Threading.Channels` channels: capacity, items held and the readers and writers
//! waiting on them.
//!
//! A blocked `ReadAsync`/`WriteAsync` operation has no pointer back to its channel, so the
//! channels are found by the heap walk ([`crate::analysis::asyncsm::analyze`]) and each one's waiter
//! lists are read; an operation is then looked up in them.
//!
//! Everything is read by field name, as the BCL's sources name them. The shapes differ by
//! version and are told apart by which field the channel has, never by the runtime's version:
//! - .NET 8: `_blockedReaders` / `_blockedWriters` are `Deque<AsyncOperation<T>>`
//!   (`_array`, `_head`, `_size`); `_waitingReadersTail` / `_waitingWritersTail` a ring of
//!   `AsyncOperation<bool>` linked by `Next` (the tail's `Next` is the head).
//! - .NET 10: `_blockedReadersHead` / `_blockedWritersHead` / `_waitingReadersHead` /
//!   `_waitingWritersHead` are rings of operations linked by `Next` (and `Previous`).
//! - `SingleConsumerUnboundedChannel`: one `_blockedReader` and one `_waitingReader`.
//! - Items: `_items` is a `ConcurrentQueue<T>` (unbounded: its segments' head and tail, as
//!   `ConcurrentQueue.Count` counts them), a `Deque<T>` (bounded) or a `PriorityQueue`
//!   (prioritized), both counted by `_size`. Another container is not counted, and says so.
//! - Capacity: `_bufferedCapacity` (bounded channels only) and `_mode` (`BoundedChannelFullMode`).

use crate::model::fields::{field, int, obj as ref_field, struct_fields};
use crate::model::objects::{FieldData, FieldValue, ObjectReader};
use dumpreader::Memory;
use serde::Serialize;
use std::collections::HashSet;

/// Bound on a waiter list or a ConcurrentQueue's segment list.
const MAX_WAITERS: usize = 100_000;

/// The channel types of System.Threading.Channels (generic definitions, by name).
const CHANNEL_TYPES: &[&str] = &[
    "System.Threading.Channels.BoundedChannel`1[",
    "System.Threading.Channels.UnboundedChannel`1[",
    "System.Threading.Channels.SingleConsumerUnboundedChannel`1[",
    "System.Threading.Channels.UnboundedPrioritizedChannel`1[",
];

/// Whether objects of this type are channels ([`read`] reads them).
pub fn is_channel_type(name: &str) -> bool {
    CHANNEL_TYPES.iter().any(|p| name.starts_with(p))
}

/// One channel and who waits on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChannelState {
    /// Its address.
    pub address: u64,
    /// Its type.
    pub type_name: String,
    /// `_bufferedCapacity` of a bounded channel; `None`: unbounded.
    pub capacity: Option<u64>,
    /// `BoundedChannelFullMode` of a bounded channel (`Wait`, `DropNewest`, `DropOldest`,
    /// `DropWrite`).
    pub full_mode: Option<String>,
    /// Items it holds, when its container was read.
    pub items: Option<u64>,
    /// `ReadAsync` operations waiting for an item, first to be served first.
    pub blocked_readers: Vec<u64>,
    /// `WriteAsync` operations waiting for room (bounded, full, mode `Wait`), in order.
    pub blocked_writers: Vec<u64>,
    /// `WaitToReadAsync` operations waiting.
    pub waiting_to_read: Vec<u64>,
    /// `WaitToWriteAsync` operations waiting.
    pub waiting_to_write: Vec<u64>,
    /// Whether its writer was completed (`_doneWriting` set): no item will come.
    pub writing_done: bool,
    /// What could not be read (the item count's container, a waiter list).
    pub problems: Vec<String>,
}

impl ChannelState {
    /// Readers waiting: in `ReadAsync` and in `WaitToReadAsync`.
    pub fn waiting_readers(&self) -> usize {
        self.blocked_readers.len() + self.waiting_to_read.len()
    }

    /// Writers waiting: in `WriteAsync` and in `WaitToWriteAsync`.
    pub fn waiting_writers(&self) -> usize {
        self.blocked_writers.len() + self.waiting_to_write.len()
    }

    /// Whether a bounded channel holds as many items as its capacity.
    pub fn full(&self) -> bool {
        matches!((self.capacity, self.items), (Some(c), Some(n)) if n >= c)
    }

    /// Which list holds `op`, and its place there (1 = first to be served).
    pub fn role_of(&self, op: u64) -> Option<(ChannelRole, usize)> {
        let lists = [
            (ChannelRole::Read, &self.blocked_readers),
            (ChannelRole::Write, &self.blocked_writers),
            (ChannelRole::WaitToRead, &self.waiting_to_read),
            (ChannelRole::WaitToWrite, &self.waiting_to_write),
        ];
        lists
            .into_iter()
            .find_map(|(role, l)| l.iter().position(|&o| o == op).map(|p| (role, p + 1)))
    }
}

/// Which of a channel's waiter lists an operation is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelRole {
    /// `ReadAsync` waiting for an item.
    Read,
    /// `WriteAsync` waiting for room.
    Write,
    /// `WaitToReadAsync`.
    WaitToRead,
    /// `WaitToWriteAsync`.
    WaitToWrite,
}

impl ChannelRole {
    /// The API the waiter called.
    pub fn api(self) -> &'static str {
        match self {
            ChannelRole::Read => "ReadAsync",
            ChannelRole::Write => "WriteAsync",
            ChannelRole::WaitToRead => "WaitToReadAsync",
            ChannelRole::WaitToWrite => "WaitToWriteAsync",
        }
    }
}

/// `BoundedChannelFullMode` by value.
fn full_mode_name(v: i64) -> String {
    match v {
        0 => "Wait".into(),
        1 => "DropNewest".into(),
        2 => "DropOldest".into(),
        3 => "DropWrite".into(),
        v => format!("<unknown mode {v}>"),
    }
}

/// Reads the channel at `addr` (its MethodTable `mt`).
pub fn read<M: Memory>(r: &ObjectReader<'_, M>, addr: u64, mt: u64) -> crate::Result<ChannelState> {
    let type_name = r.type_name(mt);
    let fs = r.fields(mt, addr + 8, false).map_err(|e| {
        e.context(format!(
            "channel {addr:#x} ({type_name}): fields not readable"
        ))
    })?;
    let mut problems = Vec::new();
    let capacity = match field(&fs, "_bufferedCapacity") {
        Some(_) => match int(&fs, "_bufferedCapacity") {
            Some(c) if c >= 0 => Some(c as u64),
            v => {
                problems.push(format!("_bufferedCapacity not readable ({v:?})"));
                None
            }
        },
        None => None,
    };
    let full_mode = field(&fs, "_mode").map(|f| match &f.value {
        FieldValue::Int { value } => full_mode_name(*value),
        FieldValue::UInt { value } => full_mode_name(*value as i64),
        v => format!("<unreadable: {}>", v.display()),
    });
    let items = match field(&fs, "_items") {
        None => {
            problems.push("no _items field: items not counted".into());
            None
        }
        Some(_) => match item_count(r, ref_field(&fs, "_items")) {
            Ok(n) => Some(n),
            Err(e) => {
                problems.push(format!("items not counted: {e}"));
                None
            }
        },
    };
    let mut list = |deque: &str, ring: &str, single: &str| -> Vec<u64> {
        let res = if field(&fs, deque).is_some() {
            deque_items(r, ref_field(&fs, deque))
        } else if field(&fs, ring).is_some() {
            ring_items(r, ref_field(&fs, ring))
        } else if field(&fs, single).is_some() {
            Ok(Some(ref_field(&fs, single))
                .filter(|&o| o != 0)
                .into_iter()
                .collect())
        } else {
            Ok(Vec::new())
        };
        res.unwrap_or_else(|e| {
            problems.push(e.to_string());
            Vec::new()
        })
    };
    let blocked_readers = list("_blockedReaders", "_blockedReadersHead", "_blockedReader");
    let blocked_writers = list("_blockedWriters", "_blockedWritersHead", "_blockedWriter");
    // .NET 8 keeps the tail of the ring, 10 the head: either way the whole ring.
    let waiting_to_read = list(
        "_waitingReadersTail",
        "_waitingReadersHead",
        "_waitingReader",
    );
    let waiting_to_write = list(
        "_waitingWritersTail",
        "_waitingWritersHead",
        "_waitingWriter",
    );
    Ok(ChannelState {
        address: addr,
        type_name,
        capacity,
        full_mode,
        items,
        blocked_readers,
        blocked_writers,
        waiting_to_read,
        waiting_to_write,
        writing_done: ref_field(&fs, "_doneWriting") != 0,
        problems,
    })
}

fn fields_of<M: Memory>(
    r: &ObjectReader<'_, M>,
    addr: u64,
) -> crate::Result<(u64, String, Vec<FieldData>)> {
    let (mt, _) = r
        .object_mt(addr)
        .map_err(|e| e.context(format!("{addr:#x}")))?;
    let name = r.type_name(mt);
    let fs = r
        .fields(mt, addr + 8, false)
        .map_err(|e| e.context(format!("{name} {addr:#x}: fields not readable")))?;
    Ok((mt, name, fs))
}

/// The `Next` field of an operation (`Next` or the auto-property's `<Next>k__BackingField`).
fn next_of(fs: &[FieldData]) -> u64 {
    match ref_field(fs, "<Next>k__BackingField") {
        0 => ref_field(fs, "Next"),
        n => n,
    }
}

/// A ring of operations linked by `Next`, from `start` (0: empty) until it comes back.
fn ring_items<M: Memory>(r: &ObjectReader<'_, M>, start: u64) -> crate::Result<Vec<u64>> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut cur = start;
    while cur != 0 && seen.insert(cur) {
        if out.len() >= MAX_WAITERS {
            return Err(crate::ClrError::corrupt(
                "waiter ring from",
                start,
                format!("more than {MAX_WAITERS} operations"),
            ));
        }
        out.push(cur);
        let (_, _, fs) = fields_of(r, cur).map_err(|e| e.context("waiter ring"))?;
        cur = next_of(&fs);
    }
    Ok(out)
}

/// The references a `Deque<T>` holds, from `_head` for `_size` (wrapping), in order.
fn deque_items<M: Memory>(r: &ObjectReader<'_, M>, deque: u64) -> crate::Result<Vec<u64>> {
    if deque == 0 {
        return Ok(Vec::new());
    }
    let (_, name, fs) = fields_of(r, deque)?;
    let (Some(head), Some(size)) = (int(&fs, "_head"), int(&fs, "_size")) else {
        return Err(crate::ClrError::corrupt(
            name.clone(),
            deque,
            "no _head/_size",
        ));
    };
    if size == 0 {
        return Ok(Vec::new());
    }
    let arr = ref_field(&fs, "_array");
    let (_, info) = r
        .object_mt(arr)
        .map_err(|e| e.context(format!("{name} {deque:#x}: _array")))?;
    let a = r
        .array(arr, &info)
        .map_err(|e| e.context(format!("{name} {deque:#x}: _array")))?
        .ok_or_else(|| {
            crate::ClrError::corrupt(
                name.clone(),
                deque,
                format!("_array {arr:#x} is not an array"),
            )
        })?;
    if size < 0 || head < 0 || size as u64 > a.length || a.component_size != 8 {
        return Err(crate::ClrError::corrupt(
            name.clone(),
            deque,
            format!(
                "_head {head}, _size {size} do not fit its array of {} elements",
                a.length
            ),
        ));
    }
    (0..size as u64)
        .map(|i| {
            let at = a.data + 8 * ((head as u64 + i) % a.length);
            r.rt.memory()
                .read_u64(at)
                .map_err(|_| crate::ClrError::read(format!("{name} {deque:#x}'s element"), at))
        })
        .collect()
}

/// How many items the channel's `_items` container holds.
fn item_count<M: Memory>(r: &ObjectReader<'_, M>, items: u64) -> crate::Result<u64> {
    if items == 0 {
        return Err(crate::ClrError::not_found("the channel's _items", "null"));
    }
    let (_, name, fs) = fields_of(r, items)?;
    if name.starts_with("System.Collections.Generic.Deque`1")
        || name.starts_with("System.Collections.Generic.PriorityQueue`2")
    {
        return match int(&fs, "_size") {
            Some(n) if n >= 0 => Ok(n as u64),
            v => Err(crate::ClrError::corrupt(
                name.clone(),
                items,
                format!("_size {v:?}"),
            )),
        };
    }
    if name.starts_with("System.Collections.Concurrent.ConcurrentQueue`1") {
        return concurrent_queue_count(r, &fs, &name, items);
    }
    Err(crate::ClrError::corrupt(
        name.clone(),
        items,
        "a container this reader does not count",
    ))
}

/// `ConcurrentQueue<T>.Count` of a queue at rest: over its segments from `_head` to `_tail`,
/// each segment's `Tail - Head` as `GetCount` computes it (a segment frozen for enqueues has
/// `Tail` raised by twice its length).
fn concurrent_queue_count<M: Memory>(
    r: &ObjectReader<'_, M>,
    fs: &[FieldData],
    name: &str,
    q: u64,
) -> crate::Result<u64> {
    let tail_seg = ref_field(fs, "_tail");
    let mut seg = ref_field(fs, "_head");
    let mut total = 0u64;
    let mut seen = HashSet::new();
    loop {
        if seg == 0 {
            return Err(crate::ClrError::corrupt(
                name,
                q,
                "segment list ends before _tail",
            ));
        }
        if !seen.insert(seg) || seen.len() > MAX_WAITERS {
            return Err(crate::ClrError::corrupt(
                name,
                q,
                "segment list loops or is too long",
            ));
        }
        let (_, sname, sf) = fields_of(r, seg)?;
        let slots = ref_field(&sf, "_slots");
        let (_, sinfo) = r
            .object_mt(slots)
            .map_err(|e| e.context(format!("{sname} {seg:#x}: _slots")))?;
        let len = r
            .array(slots, &sinfo)
            .map_err(|e| e.context(format!("{sname} {seg:#x}: _slots")))?
            .ok_or_else(|| crate::ClrError::corrupt(sname.clone(), seg, "_slots is not an array"))?
            .length as i64;
        let mask = int(&sf, "_slotsMask")
            .ok_or_else(|| crate::ClrError::corrupt(sname.clone(), seg, "no _slotsMask"))?;
        let ht = field(&sf, "_headAndTail")
            .ok_or_else(|| crate::ClrError::corrupt(sname.clone(), seg, "no _headAndTail"))?;
        let hf = struct_fields(r, ht, &format!("{sname} {seg:#x}: _headAndTail"))?;
        let (Some(head), Some(tail)) = (int(&hf, "Head"), int(&hf, "Tail")) else {
            return Err(crate::ClrError::corrupt(sname.clone(), seg, "no Head/Tail"));
        };
        // ConcurrentQueue.GetCount(segment, head, tail)
        let freeze_offset = len * 2;
        if head != tail && head != tail - freeze_offset {
            let (h, t) = (head & mask, tail & mask);
            total += if h < t { t - h } else { len - h + t } as u64;
        }
        if seg == tail_seg {
            return Ok(total);
        }
        seg = ref_field(&sf, "_nextSegment");
    }
}
