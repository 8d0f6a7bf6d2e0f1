//! The heap walk on a damaged heap (issue 24): random bytes written inside the heap cost only
//! the objects they touch. Every object and async state machine box of the undamaged dump
//! whose bytes no write touched is still found, at its address, with its MethodTable and
//! size; the walk reports the damage (address and kind) instead of taking garbage for objects
//! that swallow the valid ones behind them.
//!
//! The damage is made in memory ([`tests::damage::Overlay`]): `WRITES` writes of 8 random
//! bytes at random (unaligned) places inside the heap's object ranges, for a few seeds.

use clrdata::prelude::*;
use clrdata::{Runtime, TypeNames};
use dumpreader::Target;
use std::collections::HashMap;
use std::sync::Arc;
use tests::damage::{Class, Landmarks, Overlay, Rng};

const WRITES: usize = 64;

/// The objects (address → (MethodTable, size)) the walk finds, free ones left out, and the
/// number of walk errors.
fn walk(target: Arc<dyn Target>) -> (HashMap<u64, (u64, u64)>, usize, Vec<u64>) {
    let dbg = std::env::var("DUMPSHELL_RESYNC_DEBUG").is_ok();
    let rt = Runtime::discover(target).expect("the runtime is found");
    let heap = rt.gc_heap().expect("the heap is read");
    let mut it = heap.objects(&rt);
    let objects = it
        .by_ref()
        .filter(|o| !o.is_free)
        .map(|o| (o.address, (o.mt, o.size)))
        .collect();
    let errors = it.errors().len();
    if dbg {
        for e in it.errors() {
            eprintln!("  walk error {e}");
        }
    }
    let names = TypeNames::new();
    let boxes = clrdata::analysis::asyncsm::analyze(&rt, &names, &heap)
        .boxes
        .iter()
        // A runtime-async frame (.NET 11) is found only through its chain, from the
        // RuntimeAsyncTask that owns it: a damaged continuation before it hides it though its
        // own bytes are intact (a known limit: issue 24's note). State machine boxes are found
        // by the heap walk itself.
        .filter(|b| b.kind != clrdata::analysis::asyncsm::BoxKind::RuntimeAsync)
        .map(|b| b.address)
        .collect();
    (objects, errors, boxes)
}

#[test]
fn random_writes_in_the_heap_cost_only_the_objects_they_touch() {
    let mut failures = Vec::new();
    for name in [
        "async",
        "heap",
        "async-net9",
        "async-net10",
        "async-net11",
        "async-net11-classic",
    ] {
        let e = tests::entry(name);
        let dump: Arc<dyn Target> = Arc::new(e.open());
        let lm = Landmarks::find(dump.clone(), &e.name);
        assert!(!lm.heap_ranges.is_empty(), "{name}: no heap ranges");
        let (clean, clean_errors, clean_boxes) = walk(dump.clone());
        assert_eq!(
            clean_errors, 0,
            "{name}: the undamaged heap walks without error"
        );
        assert!(
            // heap has no async work; async-net11's are all runtime-async frames (see walk).
            !clean_boxes.is_empty() || name == "heap" || name == "async-net11",
            "{name}: no async boxes"
        );
        for seed in 1..=std::env::var("DUMPSHELL_RESYNC_SEEDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(12u64)
        {
            let mut rng = Rng::new(seed * 7919 + name.len() as u64);
            let mut ov = Overlay::new(dump.clone());
            let mut writes: Vec<(u64, u64)> = Vec::new();
            for _ in 0..WRITES {
                let Some(at) = lm.locate(Class::HeapRange, rng.next_u64()) else {
                    continue;
                };
                ov.write_u64(at, rng.next_u64());
                writes.push((at, at + 8));
            }
            writes.sort();
            let touched = |a: u64, size: u64| {
                // The object's header word before it (sync block index) is not its own.
                let i = writes.partition_point(|w| w.1 <= a);
                writes.get(i).is_some_and(|w| w.0 < a + size)
            };
            let (found, errors, boxes) = walk(ov.into_target());
            let what = format!("{name} seed {seed}");
            let mut missing = Vec::new();
            let mut kept = 0usize;
            for (&a, &(mt, size)) in &clean {
                if touched(a, size) {
                    continue;
                }
                kept += 1;
                match found.get(&a) {
                    Some(&f) if f == (mt, size) => {}
                    Some(&(fmt, fsize)) => missing.push(format!(
                        "{a:#x} (MT {mt:#x}, {size:#x} bytes) read as MT {fmt:#x}, {fsize:#x} bytes"
                    )),
                    None => missing.push(format!("{a:#x} (MT {mt:#x}, {size:#x} bytes) not found")),
                }
            }
            if !missing.is_empty() {
                failures.push(format!(
                    "{what}: {} of {kept} untouched objects lost ({errors} walk errors), e.g. {:?}",
                    missing.len(),
                    &missing[..missing.len().min(5)]
                ));
            }
            // No object the damaged walk finds overlaps an untouched object it kept.
            let mut spans: Vec<(u64, u64)> = found.iter().map(|(&a, &(_, s))| (a, a + s)).collect();
            spans.sort();
            for w in spans.windows(2) {
                if w[0].1 > w[1].0 && clean.contains_key(&w[1].0) && !touched(w[1].0, 8) {
                    failures.push(format!(
                        "{what}: the object read at {:#x}..{:#x} overlaps the untouched object at {:#x}",
                        w[0].0, w[0].1, w[1].0
                    ));
                    break;
                }
            }
            let lost_boxes: Vec<String> = clean_boxes
                .iter()
                .filter(|&&b| clean.get(&b).is_some_and(|&(_, s)| !touched(b, s)))
                .filter(|b| !boxes.contains(b))
                .map(|b| format!("{b:#x}"))
                .collect();
            if !lost_boxes.is_empty() {
                failures.push(format!("{what}: async boxes lost: {lost_boxes:?}"));
            }
            eprintln!(
                "{what}: {} writes, {kept} untouched objects all found: {}, {errors} walk errors, {} of {} boxes",
                writes.len(),
                missing.is_empty(),
                boxes.len(),
                clean_boxes.len()
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
