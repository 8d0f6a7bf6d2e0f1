//! The objects around an address of the GC heap, and whether the heap there is consistent
//! (SOS's `listnearobj`, dotnet/diagnostics ListNearObjCommand.cs at 10.0.750501, followed step
//! by step): the object before the address, the one at it, the one after, allocation contexts
//! between them, and the checks SOS makes (each object ends where the next one, or the
//! segment's allocated end, begins).
//!
//! The segment is the one whose objects (`mem` to the walk's end) or whose committed memory
//! (from its start) hold the address; SOS's look-up in the reserved memory discards its result,
//! so an address only reserved is on no segment, as there. Objects come from the heap walk
//! ([`crate::model::heap`]), which skips allocation contexts as ClrMD does; an object's size is
//! its unaligned size (BaseSize + count x ComponentSize, at least the minimum object size, as
//! ClrMD's), the next object expected at that end aligned to 8. An object is sound when [`crate::model::objects::object_problems`] finds
//! nothing (SOS asks ClrMD's `IsObjectCorrupted`, which makes checks of the same kind).

use crate::model::heap::{
    method_table_of, plausible_method_table, AllocContext, GcHeap, HeapObject,
};
use crate::model::objects::{object_problems, ObjectReader};
use dumpreader::Memory;
use serde::Serialize;

/// One line of the answer, in SOS's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NearLine {
    /// An object: `which` is `Before:`, `Current:`, `Next:` or `Expected:` (SOS's words).
    Object {
        /// SOS's row label.
        which: &'static str,
        /// Its address.
        address: u64,
        /// Its MethodTable, when one decodes there.
        mt: Option<u64>,
        /// Its unaligned size, when a MethodTable decodes (else unknown).
        size: Option<u64>,
        /// What is wrong with it (empty: sound).
        problems: Vec<String>,
    },
    /// An allocation context between two objects (an expected gap).
    Gap {
        /// alloc_ptr.
        start: u64,
        /// alloc_limit.
        end: u64,
    },
    /// A statement, as SOS words it.
    Note(String),
}

/// What `listnearobj` finds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NearObjects {
    /// The address asked, aligned down to 8 as SOS aligns it.
    pub address: u64,
    /// The heap_segment holding it (None: on no segment).
    pub segment: Option<u64>,
    /// The width SOS gives the address column: 16, or the longest `start-end` of the
    /// segment's allocation contexts.
    pub address_width: usize,
    /// The lines.
    pub lines: Vec<NearLine>,
    /// Whether the heap is locally consistent there (None when no segment was searched).
    pub consistent: Option<bool>,
}

/// An object as ClrMD's `heap.GetObject` sees the address: its MethodTable and unaligned size
/// when a MethodTable decodes there (one the heap walk would accept: never in the GC heap).
struct Probe {
    address: u64,
    mt: Option<u64>,
    size: Option<u64>,
}

impl Probe {
    fn valid(&self) -> bool {
        self.mt.is_some()
    }
}

fn align8(x: u64) -> u64 {
    (x + 7) & !7
}

/// The objects near `address` (see the module's documentation).
pub fn near_objects<M: Memory>(
    reader: &ObjectReader<'_, M>,
    heap: &GcHeap,
    address: u64,
) -> NearObjects {
    let rt = reader.rt;
    let a = address & !7;
    let mut out = NearObjects {
        address: a,
        segment: None,
        address_width: 16,
        lines: Vec::new(),
        consistent: None,
    };
    let found: Vec<usize> = (0..heap.segments.len())
        .filter(|&i| {
            let s = &heap.segments[i];
            (s.mem <= a && a < s.walk_end) || (s.region_start() <= a && a < s.committed)
        })
        .collect();
    let Some(&si) = found.first() else {
        out.lines.push(NearLine::Note(format!(
            "Failed to find the segment of the managed heap where the object {a:x} resides"
        )));
        return out;
    };
    let seg = &heap.segments[si];
    out.segment = Some(seg.address);
    if found.len() > 1 {
        out.lines.push(NearLine::Note(format!(
            "Found multiple segments where the object {a:x} resides, this is possibly memory \
             corruption."
        )));
        out.lines.push(NearLine::Note(format!(
            "Printing values for segment {:x}",
            seg.address
        )));
    }
    let (first, end) = (seg.mem, seg.walk_end);
    if end <= first {
        out.lines.push(NearLine::Note(format!(
            "Segment {:x} has no objects.",
            seg.address
        )));
        return out;
    }
    let in_objects = |x: u64| first <= x && x < end;
    let ctxs: Vec<AllocContext> = heap
        .alloc_contexts
        .iter()
        .filter(|c| in_objects(c.ptr))
        .copied()
        .collect();
    out.address_width = ctxs
        .iter()
        .map(|c| format!("{:x}-{:x}", c.ptr, c.limit).len())
        .max()
        .map_or(16, |w| w.max(16));
    // The segment's objects, in order, and every object start of the heap (for the
    // soundness checks of references).
    let mut objs: Vec<HeapObject> = Vec::new();
    heap.visit_segment(rt, si, |o| objs.push(*o));
    let mut starts: Vec<u64> = heap
        .objects(rt)
        .filter(|o| !o.is_free)
        .map(|o| o.address)
        .collect();
    starts.sort_unstable();
    let probe = |x: u64| -> Probe {
        let mt = rt
            .memory()
            .read_u64(x)
            .ok()
            .map(method_table_of)
            .filter(|&mt| plausible_method_table(rt, heap, mt));
        let info = mt.and_then(|mt| reader.mt(mt));
        // ClrMD's size: never below the minimum object size (an empty string's 22 bytes are 24).
        let size = info
            .as_ref()
            .and_then(|i| reader.raw_size(x, i).ok())
            .map(|n| n.max(heap.min_object_size));
        match (mt, info, size) {
            (Some(mt), Some(_), Some(size)) => Probe {
                address: x,
                mt: Some(mt),
                size: Some(size),
            },
            _ => Probe {
                address: x,
                mt: None,
                size: None,
            },
        }
    };
    let mut lines: Vec<NearLine> = Vec::new();
    // VerifyAndPrintObject: the row, and whether the object is sound.
    let row = |lines: &mut Vec<NearLine>, which: &'static str, p: &Probe| -> bool {
        let problems = match p.mt {
            Some(mt) => object_problems(reader, p.address, mt, &starts),
            None => vec![format!("no MethodTable decodes at {:#x}", p.address)],
        };
        let ok = problems.is_empty() && p.valid();
        lines.push(NearLine::Object {
            which,
            address: p.address,
            mt: p.mt,
            size: p.size,
            problems,
        });
        ok
    };
    // PrintGapIfExists: the first context that overlaps [from, to) or holds `to`; returns the
    // memory without objects it covers (to its limit + the minimum object size).
    let gap = |lines: &mut Vec<NearLine>, from: u64, to: u64| -> Option<(u64, u64)> {
        let c = ctxs
            .iter()
            .find(|c| (from < c.limit && c.ptr < to) || (c.ptr <= to && to < c.limit))?;
        lines.push(NearLine::Gap {
            start: c.ptr,
            end: c.limit,
        });
        Some((c.ptr, c.limit + align8(heap.min_object_size)))
    };
    let mut consistent = true;
    let mut found_last = false;
    // CheckEndOfSegment.
    let check_end = |lines: &mut Vec<NearLine>,
                     expected: u64,
                     prev: u64,
                     consistent: &mut bool,
                     found_last: &mut bool| {
        if !in_objects(expected) && !*found_last {
            lines.push(NearLine::Note(format!(
                "{prev:x} is the last object on the segment"
            )));
            if expected != end {
                lines.push(NearLine::Note(format!(
                    "Error: Expected allocated end at {expected:x}, but instead was at {end:x}"
                )));
                *consistent = false;
            }
            *found_last = true;
        }
    };
    let from_walk = |o: &HeapObject| probe(o.address);
    let curr = probe(a);
    let mut expected;
    if a > first {
        let limit = if end <= a { end } else { a };
        let prev = objs.iter().rev().find(|o| o.address < limit);
        match prev {
            Some(po) => {
                let p = from_walk(po);
                consistent = row(&mut lines, "Before:", &p) && consistent;
                expected = match p.size {
                    Some(sz) if p.valid() => align8(po.address + sz),
                    _ => {
                        consistent = false;
                        objs.iter()
                            .find(|o| o.address > po.address)
                            .map_or(0, |o| o.address)
                    }
                };
                let ctx = gap(&mut lines, po.address, expected);
                if let Some((_, ctx_end)) = ctx {
                    expected = ctx_end;
                }
                if ctx.is_some_and(|(s, e)| s <= a && a < e) && curr.valid() {
                    lines.push(NearLine::Note(format!(
                        "Address {a:x} has a valid method table inside of an allocation context."
                    )));
                }
                check_end(
                    &mut lines,
                    expected,
                    po.address,
                    &mut consistent,
                    &mut found_last,
                );
            }
            None => {
                // No object before the address (the walk met none): SOS prints an empty
                // object there and goes on from the first object after it.
                consistent = false;
                lines.push(NearLine::Object {
                    which: "Before:",
                    address: 0,
                    mt: None,
                    size: None,
                    problems: vec!["the heap walk found no object before the address".into()],
                });
                expected = objs.first().map_or(end, |o| o.address);
                check_end(&mut lines, expected, 0, &mut consistent, &mut found_last);
            }
        }
    } else if a < first {
        lines.push(NearLine::Note(format!(
            "Address {a:x} is before the first object on the segment."
        )));
        expected = first;
    } else {
        lines.push(NearLine::Note(format!(
            "Address {a:x} is the first object on the segment."
        )));
        expected = first;
    }
    if !found_last && expected < a && in_objects(expected) {
        // The walk skipped the object expected (damage): SOS shows it and starts again after
        // an allocation context, at the current object, or at the segment's end.
        consistent = false;
        let e = probe(expected);
        row(&mut lines, "Expected:", &e);
        match gap(&mut lines, expected, a) {
            Some((_, ctx_end)) => expected = ctx_end,
            None if curr.valid() => expected = a,
            None => {
                if !objs.iter().any(|o| o.address > a) {
                    expected = end;
                }
            }
        }
        check_end(
            &mut lines,
            expected,
            e.address,
            &mut consistent,
            &mut found_last,
        );
    }
    let mut gap_after_current = false;
    if curr.valid() {
        if in_objects(a) {
            consistent = row(&mut lines, "Current:", &curr) && consistent;
            expected = align8(a + curr.size.unwrap_or(0));
            if let Some((_, ctx_end)) = gap(&mut lines, a, expected) {
                expected = ctx_end;
            }
            check_end(&mut lines, expected, a, &mut consistent, &mut found_last);
        } else {
            lines.push(NearLine::Note(format!(
                "Object {a:x} is not in the allocated range of the segment, it may have been \
                 collected but not zeroed."
            )));
            row(&mut lines, "Current:", &curr);
            found_last = true;
        }
    } else if expected == a {
        consistent = row(&mut lines, "Current:", &curr) && consistent;
        gap_after_current = true;
    }
    if !found_last {
        match objs.iter().find(|o| o.address > a) {
            Some(no) => {
                if gap_after_current {
                    gap(&mut lines, a, no.address);
                }
                let n = from_walk(no);
                consistent = row(&mut lines, "Next:", &n) && consistent;
                if no.address != expected {
                    consistent = false;
                    lines.push(NearLine::Note(format!(
                        "Expected to find next object at {expected:x}, instead found it at {:x}.",
                        no.address
                    )));
                }
                check_end(&mut lines, expected, a, &mut consistent, &mut found_last);
            }
            None => {
                consistent = false;
                lines.push(NearLine::Note(format!("Could not find object after {a:x}")));
            }
        }
    }
    out.lines = lines;
    out.consistent = Some(consistent);
    out
}
