//! Damaged dumps derived from the corpus, in memory: an [`Overlay`] target that patches, zeroes
//! or removes byte ranges of a real dump without writing a file, and [`Landmarks`] that locate
//! the structures worth damaging (GC heap regions, MethodTables, the ThreadStore and its
//! Threads, thread stacks and Frames, a module's metadata, async state machine boxes) through
//! clrdata's own readers on the undamaged dump.
//!
//! Used by `tests/tests/damaged.rs` (the deterministic CI run), by the `clrdata/fuzz` targets
//! `heap_walk`, `stack_walk` and `async_chain` (the fuzz input picks patches), and by the
//! `damage` example that writes damaged dump files for trying by hand.

use clrdata::prelude::*;
use clrdata::{Runtime, TypeNames};
use dumpreader::{
    DumpInfo, Error, Memory, MemoryRange, ModuleImage, ModuleInfo, Target, ThreadInfo,
};
use std::path::PathBuf;
use std::sync::Arc;

/// A target whose memory is another target's with some ranges replaced or removed.
///
/// Module images, threads and modules are the inner target's: the damage is to process memory
/// as the CLR layer reads it.
pub struct Overlay {
    inner: Arc<dyn Target>,
    /// `(address, bytes)`, applied in order (a later patch wins where two overlap).
    patches: Vec<(u64, Vec<u8>)>,
    /// `[start, end)` ranges that read as absent (as if the dump lacked those pages).
    holes: Vec<(u64, u64)>,
}

impl Overlay {
    /// No damage yet.
    pub fn new(inner: Arc<dyn Target>) -> Overlay {
        Overlay {
            inner,
            patches: Vec::new(),
            holes: Vec::new(),
        }
    }

    /// Replaces the bytes at `addr` (only where the inner target has memory).
    pub fn patch(&mut self, addr: u64, bytes: Vec<u8>) -> &mut Self {
        if !bytes.is_empty() {
            self.patches.push((addr, bytes));
        }
        self
    }

    /// Writes a little-endian u64 at `addr`.
    pub fn write_u64(&mut self, addr: u64, v: u64) -> &mut Self {
        self.patch(addr, v.to_le_bytes().to_vec())
    }

    /// Zeroes `len` bytes at `addr`.
    pub fn zero(&mut self, addr: u64, len: u64) -> &mut Self {
        self.patch(addr, vec![0; len.min(1 << 28) as usize])
    }

    /// Makes `[addr, addr+len)` unreadable.
    pub fn remove(&mut self, addr: u64, len: u64) -> &mut Self {
        self.holes.push((addr, addr.saturating_add(len)));
        self
    }

    /// Flips bit `bit` (0..8) of the byte at `addr`, on top of earlier patches.
    pub fn flip(&mut self, addr: u64, bit: u8) -> &mut Self {
        let mut b = [0u8; 1];
        if self.read(addr, &mut b) == 1 {
            self.patch(addr, vec![b[0] ^ (1 << (bit & 7))]);
        }
        self
    }

    /// How many patches and holes are applied.
    pub fn damage_count(&self) -> usize {
        self.patches.len() + self.holes.len()
    }

    /// Wraps itself for a `Session` or `Runtime`.
    pub fn into_target(self) -> Arc<dyn Target> {
        Arc::new(self)
    }
}

impl Memory for Overlay {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        let mut want = buf.len();
        for &(s, e) in &self.holes {
            if addr >= s && addr < e {
                return 0;
            }
            if s > addr && s - addr < want as u64 {
                want = (s - addr) as usize;
            }
        }
        let got = self.inner.read(addr, &mut buf[..want]);
        let end = addr.saturating_add(got as u64);
        for (p, bytes) in &self.patches {
            let pe = p.saturating_add(bytes.len() as u64);
            if *p >= end || pe <= addr {
                continue;
            }
            let from = (*p).max(addr);
            let to = pe.min(end);
            let dst = (from - addr) as usize..(to - addr) as usize;
            let src = (from - p) as usize..(to - p) as usize;
            buf[dst].copy_from_slice(&bytes[src]);
        }
        got
    }
}

impl Target for Overlay {
    fn info(&self) -> &DumpInfo {
        self.inner.info()
    }
    fn threads(&self) -> &[ThreadInfo] {
        self.inner.threads()
    }
    fn modules(&self) -> &[ModuleInfo] {
        self.inner.modules()
    }
    fn module_image(&self, module: &ModuleInfo) -> Result<Arc<ModuleImage>, Error> {
        self.inner.module_image(module)
    }
    fn memory_ranges(&self) -> Vec<MemoryRange> {
        self.inner.memory_ranges()
    }
    fn source_note(&self) -> Option<String> {
        Some("damaged in memory by tests::damage::Overlay".into())
    }
    fn image_search_path(&self) -> Vec<PathBuf> {
        self.inner.image_search_path()
    }
    fn use_recorded_paths(&self) -> bool {
        self.inner.use_recorded_paths()
    }
}

/// A `[start, end)` range of target memory holding one structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

impl Span {
    /// Its length.
    pub fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where the interesting structures of one (undamaged) dump are.
#[derive(Debug, Clone, Default)]
pub struct Landmarks {
    /// GC heap regions/segments: their object ranges `[mem, allocated)`.
    pub heap_ranges: Vec<Span>,
    /// Heap segment headers with a successor, and the address of each one's `next` field.
    pub segment_next: Vec<(u64, u64)>,
    /// MethodTables of objects on the heap (their first 64 bytes), most frequent types first.
    pub method_tables: Vec<Span>,
    /// Some heap objects (address and size), spread over the heap, for `dumpobj`.
    pub objects: Vec<Span>,
    /// The ThreadStore (its first 0x100 bytes) and the address of its thread list head.
    pub thread_store: Option<(Span, u64)>,
    /// Managed Threads (first 0x400 bytes) and the address of each one's list link.
    pub threads: Vec<(Span, u64)>,
    /// Thread stacks `[rsp, end of the stack's memory range)`, at most 256 KiB each.
    pub stacks: Vec<Span>,
    /// Explicit Frames (first 0x40 bytes) and the address of each one's `m_Next`.
    pub frames: Vec<(Span, u64)>,
    /// The metadata (BSJB) of the program's own assembly.
    pub metadata: Option<Span>,
    /// Async state machine boxes and the address of each one's `m_continuationObject`
    /// (None when it could not be located), innermost first within each chain.
    pub boxes: Vec<(Span, Option<u64>)>,
    /// Chains of boxes as indices into `boxes`, innermost first.
    pub chains: Vec<Vec<usize>>,
}

impl Landmarks {
    /// Finds the structures of the dump in `target` (which must be undamaged: the CLR layer
    /// locates them). Parts that cannot be found stay empty.
    pub fn find(target: Arc<dyn Target>, program: &str) -> Landmarks {
        let mut lm = Landmarks::default();
        let Ok(rt) = Runtime::discover(target.clone()) else {
            return lm;
        };
        let names = TypeNames::new();
        let ranges = target.memory_ranges();
        // Threads, stacks and Frames.
        let link = rt.layout.thread.link;
        if let Ok(ts) = rt.thread_store() {
            let head = ts.address + rt.layout.thread_store.thread_list;
            lm.thread_store = Some((span(ts.address, 0x100), head));
        }
        let frame_next = rt.layout.stack().frame_next;
        for t in rt.threads().unwrap_or_default() {
            lm.threads.push((span(t.address, 0x400), t.address + link));
            if t.frame != 0 && t.frame != u64::MAX {
                lm.frames.push((span(t.frame, 0x40), t.frame + frame_next));
            }
        }
        for t in target.threads() {
            let sp = t.context.rsp;
            if let Some(r) = ranges.iter().find(|r| sp >= r.address && sp < r.end()) {
                lm.stacks.push(Span {
                    start: sp,
                    end: r.end().min(sp + (256 << 10)),
                });
            }
        }
        // The heap.
        let Ok(heap) = rt.gc_heap() else {
            return lm;
        };
        let seg_next = rt.layout.heap_segment.next;
        for s in &heap.segments {
            if s.allocated > s.mem {
                lm.heap_ranges.push(Span {
                    start: s.mem,
                    end: s.allocated,
                });
            }
            if s.next != 0 {
                lm.segment_next.push((s.address, s.address + seg_next));
            }
        }
        let census = heap.census(&rt);
        for t in census.types.iter().take(64) {
            lm.method_tables.push(span(t.mt, 0x40));
        }
        let all: Vec<_> = heap.objects(&rt).filter(|o| !o.is_free).collect();
        let step = (all.len() / 48).max(1);
        for o in all.iter().step_by(step) {
            lm.objects.push(span(o.address, o.size.max(24)));
        }
        // The program's metadata: the module of a type defined by the program.
        for t in &census.types {
            let Some(module) = rt.method_table(t.mt).ok().and_then(|i| i.module) else {
                continue;
            };
            let Ok(md) = rt.module(module) else { continue };
            if md.simple_name.eq_ignore_ascii_case(program) {
                if let Some((a, n)) = md.metadata {
                    lm.metadata = Some(span(a, n as u64));
                }
                break;
            }
        }
        // Async boxes.
        let a = clrdata::analysis::asyncsm::analyze(&rt, &names, &heap);
        let mem = rt.memory();
        for b in &a.boxes {
            let size = all
                .binary_search_by_key(&b.address, |o| o.address)
                .map(|i| all[i].size)
                .unwrap_or(0x60);
            let cont = (b.continuation_object != 0)
                .then(|| {
                    (8..size.min(0x80))
                        .step_by(8)
                        .map(|off| b.address + off)
                        .find(|&f| mem.read_u64(f).ok() == Some(b.continuation_object))
                })
                .flatten();
            lm.boxes.push((span(b.address, size), cont));
        }
        lm.chains = a.chains.clone();
        lm
    }

    /// Every span of one class (for picking a place to damage).
    pub fn class(&self, class: Class) -> Vec<Span> {
        match class {
            Class::HeapRange => self.heap_ranges.clone(),
            Class::MethodTable => self.method_tables.clone(),
            Class::Object => self.objects.clone(),
            Class::ThreadStore => self.thread_store.iter().map(|t| t.0).collect(),
            Class::Thread => self.threads.iter().map(|t| t.0).collect(),
            Class::Stack => self.stacks.clone(),
            Class::Frame => self.frames.iter().map(|t| t.0).collect(),
            Class::Metadata => self.metadata.iter().copied().collect(),
            Class::AsyncBox => self.boxes.iter().map(|t| t.0).collect(),
        }
    }

    /// The address `pos` bytes into the concatenation of a class's spans (wrapping around).
    pub fn locate(&self, class: Class, pos: u64) -> Option<u64> {
        let spans = self.class(class);
        let total: u64 = spans.iter().map(Span::len).sum();
        if total == 0 {
            return None;
        }
        let mut p = pos % total;
        for s in spans {
            if p < s.len() {
                return Some(s.start + p);
            }
            p -= s.len();
        }
        None
    }
}

fn span(start: u64, len: u64) -> Span {
    Span {
        start,
        end: start.saturating_add(len),
    }
}

/// Classes of structure damage is aimed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// GC heap object ranges.
    HeapRange,
    /// MethodTables.
    MethodTable,
    /// Heap objects.
    Object,
    /// The ThreadStore.
    ThreadStore,
    /// Managed Thread objects.
    Thread,
    /// Thread stacks.
    Stack,
    /// Explicit Frames.
    Frame,
    /// The program assembly's metadata.
    Metadata,
    /// Async state machine boxes.
    AsyncBox,
}

impl Class {
    /// Every class, in a fixed order (the fuzz input indexes it).
    pub const ALL: [Class; 9] = [
        Class::HeapRange,
        Class::MethodTable,
        Class::Object,
        Class::ThreadStore,
        Class::Thread,
        Class::Stack,
        Class::Frame,
        Class::Metadata,
        Class::AsyncBox,
    ];
}

/// Applies a fuzz input to `ov` as patches aimed at `classes`: records of
/// `[class byte][position u32 LE][length byte][bytes]`, the class byte indexing `classes`,
/// the position an offset into that class's spans ([`Landmarks::locate`]). A length with its
/// top bit set zeroes `(len & 0x7f) * 64` bytes instead of copying bytes from the input; a
/// class byte ≥ 0xF0 plants a cycle (see [`plant_cycle`]) chosen by the position.
pub fn apply_fuzz(ov: &mut Overlay, lm: &Landmarks, classes: &[Class], mut data: &[u8]) {
    let mut n = 0;
    while data.len() >= 6 && n < 64 {
        n += 1;
        let (c, pos, len) = (
            data[0],
            u32::from_le_bytes([data[1], data[2], data[3], data[4]]) as u64,
            data[5],
        );
        data = &data[6..];
        if c >= 0xF0 {
            plant_cycle(ov, lm, pos as usize);
            continue;
        }
        let class = classes[c as usize % classes.len()];
        let Some(at) = lm.locate(class, pos) else {
            continue;
        };
        if len & 0x80 != 0 {
            ov.zero(at, (len & 0x7f) as u64 * 64 + 8);
        } else {
            let k = (len as usize).min(data.len());
            ov.patch(at, data[..k].to_vec());
            data = &data[k..];
        }
    }
}

/// Plants cycle number `which` (modulo the cycles this dump offers) into the linked lists:
/// a Thread's link to itself or to the first Thread, a heap segment's `next` to itself, a
/// Frame's `m_Next` to itself, an outer async box's continuation back to an inner box.
/// Returns a description, or None when the dump has no such list.
pub fn plant_cycle(ov: &mut Overlay, lm: &Landmarks, which: usize) -> Option<String> {
    let kinds = 5;
    match which % kinds {
        0 => {
            let (t, link) = lm.threads.get((which / kinds) % lm.threads.len().max(1))?;
            ov.write_u64(*link, *link);
            Some(format!("Thread {:#x} links to itself", t.start))
        }
        1 => {
            let (t, link) = lm.threads.last()?;
            let first = lm.threads.first()?;
            ov.write_u64(*link, first.1);
            Some(format!(
                "the last Thread {:#x} links back to the first {:#x}",
                t.start, first.0.start
            ))
        }
        2 => {
            let (s, next) = lm
                .segment_next
                .get((which / kinds) % lm.segment_next.len().max(1))?;
            ov.write_u64(*next, *s);
            Some(format!("heap segment {s:#x} has itself as next"))
        }
        3 => {
            let (f, next) = lm.frames.get((which / kinds) % lm.frames.len().max(1))?;
            ov.write_u64(*next, f.start);
            Some(format!("Frame {:#x} has itself as m_Next", f.start))
        }
        _ => {
            let chain = lm.chains.iter().find(|c| c.len() >= 2)?;
            let inner = lm.boxes.get(chain[0])?;
            let outer = lm.boxes.get(*chain.last()?)?;
            let field = outer
                .1
                .or(inner.1.map(|f| f - inner.0.start + outer.0.start))?;
            ov.write_u64(field, inner.0.start);
            Some(format!(
                "async box {:#x} continues back into inner box {:#x}",
                outer.0.start, inner.0.start
            ))
        }
    }
}

/// A small deterministic generator (xorshift64*) for seeded damage.
pub struct Rng(u64);

impl Rng {
    /// Seeded (0 is replaced by a fixed non-zero seed).
    pub fn new(seed: u64) -> Rng {
        Rng(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }
    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Flips `count` random bits in the heap's object ranges, seeded.
pub fn flip_heap_bits(ov: &mut Overlay, lm: &Landmarks, seed: u64, count: usize) {
    let mut rng = Rng::new(seed);
    for _ in 0..count {
        if let Some(a) = lm.locate(Class::HeapRange, rng.next_u64()) {
            let bit = (rng.next_u64() % 8) as u8;
            ov.flip(a, bit);
        }
    }
}

/// What one whole-dump fuzz target damages and runs (shared by the `clrdata/fuzz` targets and
/// the replay of their saved findings in `tests/tests/damaged.rs`).
pub struct FuzzCase {
    /// The corpus dump fuzzed (overridable with `DUMPSHELL_FUZZ_DUMP`).
    pub dump: &'static str,
    /// The structures the input's patches aim at.
    pub classes: &'static [Class],
    /// The command lines run on the damaged dump.
    pub lines: fn(&Landmarks) -> Vec<String>,
}

/// The fuzz case named `target` (`heap_walk`, `stack_walk`, `async_chain`).
pub fn fuzz_case(target: &str) -> Option<FuzzCase> {
    Some(match target {
        "heap_walk" => FuzzCase {
            dump: "heap",
            classes: &[Class::HeapRange, Class::MethodTable, Class::Object],
            lines: |lm| {
                let mut v: Vec<String> = ["eeheap -gc", "dumpheap -stat", "verifyheap"]
                    .map(String::from)
                    .to_vec();
                for o in lm.objects.iter().step_by(16) {
                    v.push(format!("dumpobj {:#x}", o.start));
                    v.push(format!("objsize {:#x}", o.start));
                }
                v
            },
        },
        "stack_walk" => FuzzCase {
            dump: "hang",
            classes: &[
                Class::Stack,
                Class::Frame,
                Class::Thread,
                Class::ThreadStore,
            ],
            lines: |_| {
                ["clrthreads", "clrstack -all", "pstacks"]
                    .map(String::from)
                    .to_vec()
            },
        },
        "async_chain" => FuzzCase {
            dump: "async",
            classes: &[Class::AsyncBox, Class::Object],
            lines: |_| ["dumpasync", "causality"].map(String::from).to_vec(),
        },
        _ => return None,
    })
}
