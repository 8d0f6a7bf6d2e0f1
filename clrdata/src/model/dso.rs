//! `dumpstackobjects` (`dso`): the objects a thread's registers and stack words point at,
//! found conservatively as SOS does — every aligned word from the stack pointer to the end of
//! the thread's stack whose value is the start of a plausible object of the GC heap.
//!
//! "Plausible" (SOS's DumpStackObjects checks the same things through the DAC): the value is
//! 8-aligned, lies in a heap segment below its allocated end, its MethodTable decodes, the
//! MethodTable's EEClass points back at its canonical MethodTable, it is not a free object,
//! and the object's size fits in the segment. A stale slot of a returned frame can be listed
//! (it is a conservative scan); a word that is not an object start is never listed.

use crate::model::heap::GcHeap;
use crate::model::objects::{gc_where, ObjectReader};
use crate::model::stack::unwind::{Regs, REG_NAMES};
use dumpreader::Memory;
use serde::Serialize;

/// Bound on the stack bytes scanned for one thread (64 MB).
pub const MAX_STACK_BYTES: u64 = 64 << 20;
/// Read window.
const WINDOW: usize = 64 << 10;

/// One object reference found on a stack or in a register.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StackObject {
    /// The stack slot holding the reference (none: a register).
    pub slot: Option<u64>,
    /// The register holding it (`rbx`...), when found in a register.
    pub register: Option<&'static str>,
    /// The object.
    pub object: u64,
    /// Its MethodTable.
    pub method_table: u64,
}

/// What a conservative scan of one thread found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StackObjects {
    /// The stack range scanned: [stack pointer, end).
    pub range: (u64, u64),
    /// References, registers first, then slots from the stack pointer upwards.
    pub objects: Vec<StackObject>,
    /// Why the scan stopped early or was shortened, if it was.
    pub note: Option<String>,
}

/// Whether `v` is the start of a plausible object (see the module comment); its MethodTable.
pub fn plausible_object<M: Memory>(
    reader: &ObjectReader<'_, M>,
    heap: &GcHeap,
    v: u64,
) -> Option<u64> {
    if v & 7 != 0 || v == 0 {
        return None;
    }
    let w = gc_where(heap, v)?;
    if w.beyond_allocated {
        return None;
    }
    let rt = reader.rt;
    let (mt, info) = reader.object_mt(v).ok()?;
    if mt == heap.free_mt {
        return None;
    }
    let back = rt
        .memory()
        .read_u64(info.ee_class + rt.layout.ee_class.method_table)
        .ok()?;
    if back != info.canonical {
        return None;
    }
    let size = reader.object_size(v, &info).ok()?;
    if size < heap.min_object_size || v.checked_add(size)? > w.allocated {
        return None;
    }
    Some(mt)
}

/// Scans the registers `regs` and the stack words in `[regs.sp(), stack_end)` for objects.
pub fn stack_objects<M: Memory>(
    reader: &ObjectReader<'_, M>,
    heap: &GcHeap,
    regs: &Regs,
    stack_end: u64,
) -> StackObjects {
    let mem = reader.rt.memory();
    let start = regs.sp() & !7;
    let mut note = None;
    let mut end = stack_end;
    if end < start {
        end = start;
        note = Some(format!(
            "the stack end {stack_end:#x} is below the stack pointer {start:#x}"
        ));
    } else if end - start > MAX_STACK_BYTES {
        end = start + MAX_STACK_BYTES;
        note = Some(format!(
            "only the first {} MB of the stack were scanned",
            MAX_STACK_BYTES >> 20
        ));
    }
    let mut out = StackObjects {
        range: (start, end),
        objects: Vec::new(),
        note,
    };
    for (i, &v) in regs.gpr.iter().enumerate() {
        if let Some(mt) = plausible_object(reader, heap, v) {
            out.objects.push(StackObject {
                slot: None,
                register: Some(REG_NAMES[i]),
                object: v,
                method_table: mt,
            });
        }
    }
    // Cheap filter before the segment lookup: the heap's overall extent.
    let lo = heap.segments.iter().map(|s| s.mem).min().unwrap_or(0);
    let hi = heap.segments.iter().map(|s| s.walk_end).max().unwrap_or(0);
    let stopped = for_each_word(mem, start, end, |slot, v| {
        if v < lo || v >= hi {
            return;
        }
        if let Some(mt) = plausible_object(reader, heap, v) {
            out.objects.push(StackObject {
                slot: Some(slot),
                register: None,
                object: v,
                method_table: mt,
            });
        }
    });
    if stopped < end && out.note.is_none() {
        out.note = Some(format!(
            "the stack from {stopped:#x} to {end:#x} is not in the dump"
        ));
    }
    out
}

/// Characters of a string object's value listed with it.
pub const STRING_CHARS: usize = 256;

/// An object found on a stack, with its type's name and, for a string, its characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedStackObject {
    /// Where it was found and what it is.
    pub found: StackObject,
    /// Its type's name (or a note saying why it is unknown).
    pub type_name: String,
    /// A string's value (at most [`STRING_CHARS`] characters), when it reads.
    pub string: Option<String>,
}

/// What `dumpstackobjects` lists for one thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadStackObjects {
    /// The stack range scanned: [stack pointer, end).
    pub range: (u64, u64),
    /// The objects, registers first, then slots from the stack pointer upwards.
    pub objects: Vec<NamedStackObject>,
    /// Why the scan stopped early or was shortened, if it was.
    pub note: Option<String>,
}

/// Scans one thread's stack conservatively ([`stack_objects`]) up to `stack_end`: from its
/// registers `regs`, or, given `top`, only the words of `[top, stack_end)` (no register, as
/// SOS scans only the range then); names each object found.
pub fn thread_stack_objects<M: Memory>(
    reader: &ObjectReader<'_, M>,
    heap: &GcHeap,
    regs: &Regs,
    top: Option<u64>,
    stack_end: u64,
) -> ThreadStackObjects {
    let mut regs = *regs;
    if let Some(t) = top {
        regs = Regs::default();
        regs.gpr[crate::model::stack::unwind::RSP] = t;
    }
    let found = stack_objects(reader, heap, &regs, stack_end);
    let string_mt = reader.rt.globals.string_mt;
    ThreadStackObjects {
        range: found.range,
        objects: found
            .objects
            .into_iter()
            .map(|o| NamedStackObject {
                type_name: reader.type_name(o.method_table),
                string: (o.method_table == string_mt)
                    .then(|| {
                        reader
                            .string_value(o.object, STRING_CHARS)
                            .ok()
                            .map(|(v, _)| v)
                    })
                    .flatten(),
                found: o,
            })
            .collect(),
        note: found.note,
    }
}

/// Calls `f(slot, value)` for each aligned word of `[start & !7, end)`, read in windows (what
/// every conservative stack scan shares: dso, gcroot's stack roots, causality). Returns where
/// reading stopped: `end`, or the first address the dump lacks.
pub fn for_each_word<M: Memory + ?Sized>(
    mem: &M,
    start: u64,
    end: u64,
    mut f: impl FnMut(u64, u64),
) -> u64 {
    let mut a = start & !7;
    let mut buf = vec![0u8; WINDOW];
    while a < end {
        let n = ((end - a) as usize).min(WINDOW);
        let got = mem.read(a, &mut buf[..n]);
        for (k, c) in buf[..got & !7].chunks_exact(8).enumerate() {
            f(
                a + 8 * k as u64,
                u64::from_le_bytes(c.try_into().unwrap_or([0; 8])),
            );
        }
        if got < n {
            return a + got as u64;
        }
        a += n as u64;
    }
    end
}
