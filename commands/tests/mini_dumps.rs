//! Mini dumps (createdump `--normal` / `--triage`): the corpus dumps whose manifest kind is one
//! of them hold no GC heap. Every heap command refuses with one statement naming the kind and
//! the missing structure; the rest (threads, the triage page) still reads what the memory
//! holds, equal to the DAC's truth. And the decision is from the memory: no dump that holds a
//! heap is ever said to lack one.

use clrdata::discovery::layout::Capability;
use clrdata::prelude::*;
use commands::Session;
use std::collections::BTreeSet;

/// The corpus dumps written without the heap.
fn mini_dumps() -> Vec<tests::Entry> {
    let v: Vec<tests::Entry> = tests::all()
        .into_iter()
        .filter(|e| matches!(e.kind(), "triage" | "normal"))
        .collect();
    assert!(
        !v.is_empty(),
        "the corpus has no createdump --triage/--normal dump (hang-net10-triage expected)"
    );
    v
}

fn session(e: &tests::Entry) -> Session {
    Session::open_with(&e.dump_path(), &e.open_options())
        .unwrap_or_else(|err| panic!("{}: {err}", e.name))
}

/// What the refusal must say of a dump of manifest kind `kind`: its kind, and the structure
/// found missing (for --triage the segments' headers, for --normal their objects).
fn assert_names_kind_and_structure(name: &str, line: &str, kind: &str, err: &str) {
    assert!(
        err.starts_with(&format!("this createdump --{kind} dump holds no GC heap: ")),
        "{name}: `{line}` must name the dump's kind (--{kind}) and that it holds no GC heap: {err}"
    );
    let structure = match kind {
        "triage" => "the GC heap's segments are not in it (heap_segment at 0x",
        _ => {
            "the GC heap's objects are not in it (the heap_segment headers are, but the first \
              object of segment 0x"
        }
    };
    assert!(
        err.contains(structure) && err.contains(" not in the dump"),
        "{name}: `{line}` must name the missing structure ({structure}…): {err}"
    );
}

#[test]
fn heap_commands_refuse_naming_the_kind_and_the_missing_structure() {
    for e in mini_dumps() {
        let s = session(&e);
        // A real heap address: the first thread's allocation context, as the DAC read it.
        let in_heap = e.dac["threads"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["allocContextPtr"].as_str())
            .find(|a| *a != "0x0")
            .unwrap_or("0x1000")
            .to_owned();
        let lines: [(String, Capability); 6] = [
            ("dumpheap -stat".into(), Capability::HeapWalk),
            ("dumpheap".into(), Capability::HeapWalk),
            ("eeheap -gc".into(), Capability::HeapWalk),
            (format!("gcroot {in_heap}"), Capability::Roots),
            ("dumpasync".into(), Capability::Fields),
            ("syncblk".into(), Capability::Locks),
        ];
        let mut stated = BTreeSet::new();
        for (line, cap) in &lines {
            let err = match commands::execute(&s, line) {
                Ok(Some((out, _))) => panic!(
                    "{}: `{line}` answered on a dump without a heap: {}",
                    e.name,
                    out.json_document()
                ),
                Ok(None) => panic!("{}: `{line}` printed nothing", e.name),
                Err(err) => err.to_string(),
            };
            if !tests::family_claims(e.family(), *cap) && err.contains("is not verified for") {
                // The family's own refusal comes first: the command is not read there at all.
                continue;
            }
            assert_names_kind_and_structure(&e.name, line, e.kind(), &err);
            stated.insert(err);
        }
        // One statement, the same from every command (one decision, made once).
        assert_eq!(stated.len(), 1, "{}: {stated:#?}", e.name);
    }
}

#[test]
fn threads_still_equal_the_dacs() {
    let mut checked = 0;
    for e in mini_dumps() {
        if !tests::claims(&e, Capability::Threads) {
            continue;
        }
        let s = session(&e);
        let (out, _) = commands::execute(&s, "clrthreads")
            .unwrap_or_else(|err| panic!("{}: clrthreads: {err}", e.name))
            .unwrap();
        let r = out.json_document()["result"].clone();
        let ours: BTreeSet<(String, u64, u64)> = r["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["thread"].as_str().unwrap().to_owned(),
                    t["os_id"].as_u64().unwrap(),
                    t["managed_id"].as_u64().unwrap(),
                )
            })
            .collect();
        let dac: BTreeSet<(String, u64, u64)> = e.dac["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["address"].as_str().unwrap().to_owned(),
                    t["osThreadId"].as_u64().unwrap(),
                    t["corThreadId"].as_u64().unwrap(),
                )
            })
            .collect();
        assert!(!dac.is_empty(), "{}: the DAC lists no thread", e.name);
        assert_eq!(ours, dac, "{}: clrthreads vs the DAC's thread list", e.name);
        assert_eq!(
            r["thread_count"].as_u64(),
            Some(dac.len() as u64),
            "{}",
            e.name
        );
        // The allocation contexts are the threads' own, read without the heap.
        for t in r["threads"].as_array().unwrap() {
            let d = e.dac["threads"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["address"] == t["thread"])
                .unwrap();
            assert_eq!(t["alloc_context"], d["allocContextPtr"], "{}", e.name);
            assert_eq!(t["alloc_limit"], d["allocContextLimit"], "{}", e.name);
        }
        checked += 1;
    }
    assert!(
        checked > 0,
        "no mini dump of a family whose threads are claimed"
    );
}

#[test]
fn triage_reads_what_is_there_and_says_once_that_the_heap_is_absent() {
    for e in mini_dumps() {
        let t = commands::triage::triage(&e.dump_path(), &e.open_options());
        assert!(t.error.is_none(), "{}: {:?}", e.name, t.error);
        assert_eq!(t.pid, e.manifest["pid"].as_u64(), "{}", e.name);
        assert!(t.runtime.is_some(), "{}: {:?}", e.name, t.problems);
        if tests::claims(&e, Capability::Threads) {
            assert_eq!(
                t.managed_threads,
                Some(e.dac["threads"].as_array().unwrap().len() as u64),
                "{}",
                e.name
            );
        }
        let h = t
            .heap_absent
            .as_deref()
            .unwrap_or_else(|| panic!("{}: no heap line: {:?}", e.name, t.problems));
        assert_names_kind_and_structure(&e.name, "triage", e.kind(), h);
        assert!(
            t.heap_objects.is_none() && t.heaviest_types.is_empty(),
            "{}: a census from no heap",
            e.name
        );
        // The statement is made once, not again by each command needing the heap.
        assert!(
            !t.problems.iter().any(|p| p.contains("holds no GC heap")),
            "{}: {:#?}",
            e.name,
            t.problems
        );
        let page = commands::triage::render(&t);
        let lines: Vec<&str> = page
            .lines()
            .filter(|l| l.contains("holds no GC heap"))
            .collect();
        assert_eq!(lines, [format!("Heap: {h}")], "{}:\n{page}", e.name);
    }
}

#[test]
fn no_dump_holding_a_heap_is_said_to_lack_one() {
    let mut checked = 0;
    for e in tests::all()
        .into_iter()
        .filter(|e| e.has_heap() && tests::claims(e, Capability::HeapWalk))
    {
        let s = session(&e);
        let Ok(c) = s.clr() else { continue };
        assert_eq!(
            c.rt.gc_heap_absence(None),
            None,
            "{} ({}): said to hold no GC heap",
            e.name,
            e.kind()
        );
        checked += 1;
    }
    assert!(checked > 5, "too few dumps with a heap checked ({checked})");
}
