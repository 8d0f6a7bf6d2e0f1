//! Damaged dumps derived from the corpus (issue #10): truncated files, zeroed or missing
//! structures, random bit flips in the heap, cycles planted in the runtime's linked lists.
//! Every command of the registry runs on each variant and must finish within a time bound
//! with a result or a precise error: no panic, no hang.
//!
//! The damage is made in memory ([`tests::damage::Overlay`]) except truncation, which cuts a
//! copy of the file's bytes. The default run is a deterministic subset on the `async` dump
//! (it has every structure: async chains, Frames, regions) and the `heap` dump;
//! `DUMPSHELL_DAMAGE=full` runs every variant on every .NET 8 dump.

use clrdata::prelude::*;
use commands::Session;
use dumpreader::Target;
use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use tests::damage::{flip_heap_bits, plant_cycle, Class, Landmarks, Overlay};

/// How long one command may take on a damaged dump (debug build, 2 shared cores).
fn bound() -> Duration {
    let secs = std::env::var("DUMPSHELL_DAMAGE_BOUND_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    Duration::from_secs(secs)
}

fn full() -> bool {
    std::env::var("DUMPSHELL_DAMAGE").is_ok_and(|v| v == "full")
}

#[derive(Debug)]
enum Outcome {
    Ok(serde_json::Value, String),
    Err(String),
    Panic(String),
    Timeout,
}

/// Runs `line` on `s` in its own thread, bounded in time, catching a panic.
fn run(s: &Arc<Session>, line: &str) -> (Outcome, Duration) {
    let (tx, rx) = mpsc::channel();
    let s2 = s.clone();
    let l2 = line.to_string();
    let start = Instant::now();
    let h = std::thread::Builder::new()
        .name(format!("cmd {line}"))
        .spawn(move || {
            let r = commands::execute(&s2, &l2);
            let _ = tx.send(match r {
                Ok(Some((out, _))) => Outcome::Ok(out.json_document()["result"].clone(), out.text),
                Ok(None) => Outcome::Err("empty line".into()),
                Err(e) => Outcome::Err(e.to_string()),
            });
        })
        .expect("spawn");
    let o = match rx.recv_timeout(bound()) {
        Ok(o) => {
            let _ = h.join();
            o
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match h.join() {
            Err(p) => Outcome::Panic(
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default(),
            ),
            Ok(()) => Outcome::Panic("no result".into()),
        },
        // The thread is left running: the test fails anyway.
        Err(mpsc::RecvTimeoutError::Timeout) => Outcome::Timeout,
    };
    (o, start.elapsed())
}

/// The command lines run on every variant: every registry command bare (those that need an
/// argument fail to parse, which is fine), then the ones that take an address, given one.
fn lines(lm: &Landmarks, target: &dyn Target) -> Vec<String> {
    let mut v: Vec<String> = commands::registry()
        .iter()
        .filter(|c| {
            !matches!(
                c.name,
                "sleep" | "db" | "dw" | "dd" | "dq" | "dp" | "dc" | "da" | "du"
            )
        })
        .map(|c| c.name.to_string())
        .collect();
    v.extend(
        [
            "eeheap -gc",
            "dumpheap -stat",
            "dumpheap -strings",
            "clrstack -all",
            "pstacks --async",
        ]
        .map(String::from),
    );
    let obj = lm.objects.get(lm.objects.len() / 2).map(|s| s.start);
    let mt = lm.method_tables.first().map(|s| s.start);
    if let Some(o) = obj {
        for c in [
            "dumpobj",
            "dumparray",
            "objsize",
            "gcwhere",
            "gcroot",
            "dq",
            "dumpobjgcrefs",
            "du",
        ] {
            v.push(format!("{c} {o:#x}"));
        }
        if let Some(first) = lm.objects.first() {
            v.push(format!("pathto {:#x} {o:#x}", first.start));
        }
    }
    if let Some(m) = mt {
        for c in ["dumpmt", "dumpheap -mt"] {
            v.push(format!("{c} {m:#x}"));
        }
    }
    if let Some((b, _)) = lm.boxes.first() {
        v.push(format!("dumpobj {:#x}", b.start));
        v.push(format!("taskstate {:#x}", b.start));
    }
    if let Some(t) = target.threads().first() {
        v.push(format!("ip2md {:#x}", t.context.rip));
        v.push(format!("dq {:#x}", t.context.rsp));
    }
    v
}

struct Report {
    failures: Vec<String>,
    runs: usize,
    slowest: (Duration, String),
}

/// Runs every line on one variant; returns the outcomes by line.
fn exercise(
    rep: &mut Report,
    dump: &str,
    variant: &str,
    target: Arc<dyn Target>,
    lines: &[String],
) -> Vec<(String, Outcome)> {
    let s = Arc::new(Session::new(
        target,
        PathBuf::from(format!("{dump} ({variant})")),
    ));
    let mut out = Vec::new();
    for line in lines {
        let (o, took) = run(&s, line);
        rep.runs += 1;
        if std::env::var_os("DUMPSHELL_DAMAGE_VERBOSE").is_some() {
            let what = match &o {
                Outcome::Ok(v, t) => {
                    if std::env::var_os("DUMPSHELL_DAMAGE_VERBOSE").is_some_and(|v| v == "2") {
                        let c: Vec<char> = t.chars().collect();
                        let head: String = c.iter().take(700).collect();
                        let tail: String = c[c.len().saturating_sub(900).max(700.min(c.len()))..]
                            .iter()
                            .collect();
                        format!("ok:\n{head}\n[...]\n{tail}")
                    } else {
                        format!("ok, {} bytes of JSON", v.to_string().len())
                    }
                }
                Outcome::Err(e) => format!("error: {}", e.lines().next().unwrap_or("")),
                other => format!("{other:?}"),
            };
            eprintln!("[{dump}/{variant}] {line} ({took:.0?}): {what}");
        }
        if took > rep.slowest.0 {
            rep.slowest = (took, format!("{dump}/{variant}: {line}"));
        }
        match &o {
            Outcome::Panic(m) => rep
                .failures
                .push(format!("{dump}/{variant}: `{line}` panicked: {m}")),
            Outcome::Timeout => {
                rep.failures
                    .push(format!("{dump}/{variant}: `{line}` ran over {:?}", bound()));
                // A runaway command keeps a core busy: stop here.
                return out;
            }
            Outcome::Err(m) if m.trim().is_empty() => rep.failures.push(format!(
                "{dump}/{variant}: `{line}` failed without a message"
            )),
            _ => {}
        }
        out.push((line.clone(), o));
    }
    out
}

fn ok<'a>(outs: &'a [(String, Outcome)], line: &str) -> Option<&'a serde_json::Value> {
    outs.iter()
        .find(|(l, _)| l == line)
        .and_then(|(_, o)| match o {
            Outcome::Ok(v, _) => Some(v),
            _ => None,
        })
}

fn err<'a>(outs: &'a [(String, Outcome)], line: &str) -> Option<&'a str> {
    outs.iter()
        .find(|(l, _)| l == line)
        .and_then(|(_, o)| match o {
            Outcome::Err(e) => Some(e.as_str()),
            _ => None,
        })
}

/// Objects counted by `dumpheap -stat` (its JSON totals).
fn total_objects(v: &serde_json::Value) -> Option<u64> {
    v["total_objects"]
        .as_u64()
        .or_else(|| v["totals"]["objects"].as_u64())
}

fn vm_hwm_mb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(0)
        / 1024
}

#[test]
fn every_command_survives_damaged_dumps() {
    let started = Instant::now();
    let entries: Vec<_> = if full() {
        tests::readable()
    } else {
        vec![tests::entry("async"), tests::entry("heap")]
    };
    let mut rep = Report {
        failures: Vec::new(),
        runs: 0,
        slowest: (Duration::ZERO, String::new()),
    };
    for e in &entries {
        let dump: Arc<dyn Target> = Arc::new(e.open());
        let program = e.name.as_str();
        let lm = Landmarks::find(dump.clone(), program);
        assert!(
            !lm.heap_ranges.is_empty() && !lm.threads.is_empty() && !lm.method_tables.is_empty(),
            "{}: landmarks not found: {lm:?}",
            e.name
        );
        let lines = lines(&lm, &*dump);
        let clean = exercise(&mut rep, &e.name, "undamaged", dump.clone(), &lines);
        let clean_total = ok(&clean, "dumpheap -stat").and_then(total_objects);
        assert!(
            clean_total.is_some(),
            "{}: dumpheap -stat on the clean dump",
            e.name
        );

        let damaged = |f: &dyn Fn(&mut Overlay)| {
            let mut ov = Overlay::new(dump.clone());
            f(&mut ov);
            ov.into_target()
        };

        // Zeroed structures.
        // (the most common MethodTable is String's: the runtime's sanity check catches it;
        // the fifth is an ordinary type whose objects the walk must step over)
        let mut zeroed: Vec<(&str, Class, usize)> = vec![
            ("zeroed String MethodTable", Class::MethodTable, 0),
            ("zeroed MethodTable", Class::MethodTable, 4),
            ("zeroed thread stack", Class::Stack, 0),
            ("zeroed program metadata", Class::Metadata, 0),
            ("zeroed ThreadStore", Class::ThreadStore, 0),
            ("zeroed heap region", Class::HeapRange, 0),
        ];
        if full() {
            zeroed.push(("zeroed Thread", Class::Thread, 0));
            zeroed.push(("zeroed Frame", Class::Frame, 0));
            zeroed.push(("zeroed async box", Class::AsyncBox, 0));
        }
        for (name, class, index) in zeroed {
            let Some(sp) = lm.class(class).get(index).copied() else {
                continue;
            };
            let t = damaged(&|ov| {
                ov.zero(sp.start, sp.len().min(4 << 20));
            });
            let outs = exercise(&mut rep, &e.name, name, t, &lines);
            match class {
                // The object walk does not depend on names: the same objects are counted.
                Class::Metadata | Class::Stack => {
                    let stat = ok(&outs, "dumpheap -stat");
                    // The program's types are still listed, their names replaced by a note
                    // saying what is wrong with the metadata.
                    if class == Class::Metadata
                        && !stat.is_some_and(|v| v.to_string().contains("expected BSJB"))
                    {
                        rep.failures.push(format!(
                            "{}/{name}: dumpheap -stat does not say the metadata is damaged",
                            e.name
                        ));
                    }
                    let n = stat.and_then(total_objects);
                    if n != clean_total {
                        rep.failures.push(format!(
                            "{}/{name}: dumpheap -stat counts {n:?} objects, undamaged {clean_total:?}",
                            e.name
                        ));
                    }
                }
                Class::ThreadStore => {
                    // A zeroed ThreadStore reads as an empty list. The stack walk must not
                    // invent threads, and clrthreads must say the list cannot be right (a .NET
                    // process always has its finalizer thread).
                    let th = ok(&outs, "clrthreads");
                    if !th.is_some_and(|v| {
                        v.to_string().contains("ThreadStore")
                            && v["notes"].as_array().is_some_and(|n| !n.is_empty())
                    }) {
                        rep.failures.push(format!(
                            "{}/{name}: clrthreads does not say the ThreadStore looks damaged: {th:?}",
                            e.name
                        ));
                    }
                }
                _ => {}
            }
        }

        // Missing pages: the first heap range absent from the dump.
        if let Some(sp) = lm.heap_ranges.first() {
            let t = damaged(&|ov| {
                ov.remove(sp.start, sp.len());
            });
            exercise(&mut rep, &e.name, "missing heap region", t, &lines);
        }

        // Random bit flips in the heap.
        let seeds: &[u64] = if full() { &[1, 2, 3, 4] } else { &[1] };
        for &seed in seeds {
            let t = damaged(&|ov| flip_heap_bits(ov, &lm, seed, 400));
            exercise(
                &mut rep,
                &e.name,
                &format!("heap bit flips seed {seed}"),
                t,
                &lines,
            );
        }

        // Cycles in linked lists.
        for which in 0..5 {
            let mut ov = Overlay::new(dump.clone());
            let Some(what) = plant_cycle(&mut ov, &lm, which) else {
                continue;
            };
            let outs = exercise(&mut rep, &e.name, &what, ov.into_target(), &lines);
            if which <= 1 {
                // The thread list cycles: clrthreads must say so, naming the list.
                match err(&outs, "clrthreads") {
                    Some(m) if m.contains("cycle") && m.contains("0x") => {}
                    other => rep.failures.push(format!(
                        "{}/{what}: clrthreads should report the cycle, got {other:?}",
                        e.name
                    )),
                }
            }
            if which == 2 {
                // A region list cycle: the heap's extent is unknown, so heap commands refuse
                // (rather than show a heap cut short as if whole), naming the segment.
                let (seg, _) = lm.segment_next[0];
                match err(&outs, "dumpheap -stat") {
                    Some(m) if m.contains("cycle") && m.contains(&format!("{seg:#x}")) => {}
                    other => rep.failures.push(format!(
                        "{}/{what}: dumpheap -stat should report the cycle, got {other:?}",
                        e.name
                    )),
                }
            } else if ok(&outs, "dumpheap -stat").is_none() {
                // Other cycles do not cost the heap: the object walk still answers.
                rep.failures.push(format!(
                    "{}/{what}: dumpheap -stat failed: {:?}",
                    e.name,
                    err(&outs, "dumpheap -stat")
                ));
            }
        }

        // Truncated files.
        let bytes = std::fs::read(e.dump_path()).expect("read dump");
        let cuts: &[u64] = if full() {
            &[1, 10, 25, 50, 75, 90, 99]
        } else {
            &[10, 60, 97]
        };
        for &pct in cuts.iter().chain([0u64].iter()) {
            let cut = if pct == 0 {
                200
            } else {
                bytes.len() * pct as usize / 100
            };
            let name = format!("truncated at {cut} bytes");
            match dumpreader::Dump::from_bytes_with(bytes[..cut].to_vec(), &tests::open_options()) {
                Ok(d) => {
                    let outs = exercise(&mut rep, &e.name, &name, Arc::new(d), &lines);
                    // When the runtime cannot be read, the error says the dump is truncated.
                    if let Some(m) = err(&outs, "eeversion") {
                        if !m.contains("damaged") {
                            rep.failures.push(format!(
                                "{}/{name}: eeversion fails without naming the damage: {m}",
                                e.name
                            ));
                        }
                    }
                }
                Err(err) => {
                    let m = err.to_string();
                    assert!(!m.is_empty(), "{}/{name}: an empty open error", e.name);
                    eprintln!("{}/{name}: not opened: {m}", e.name);
                }
            }
        }
    }
    let hwm = vm_hwm_mb();
    eprintln!(
        "damaged dumps: {} command runs in {:?}; slowest {:?} ({}); peak RSS {hwm} MiB",
        rep.runs,
        started.elapsed(),
        rep.slowest.0,
        rep.slowest.1
    );
    assert!(hwm < 4096, "peak RSS {hwm} MiB");
    assert!(
        rep.failures.is_empty(),
        "{} failures:\n{}",
        rep.failures.len(),
        rep.failures.join("\n")
    );
}

/// Replays the whole-dump fuzz findings kept in `clrdata/fuzz/regressions/<target>/` (each a
/// fuzz input for `tests::damage::apply_fuzz`) through the same commands as the fuzz target,
/// bounded in time: each must now finish without a panic.
#[test]
fn whole_dump_fuzz_findings_stay_fixed() {
    let root = tests::workspace_root().join("clrdata/fuzz/regressions");
    let mut rep = Report {
        failures: Vec::new(),
        runs: 0,
        slowest: (Duration::ZERO, String::new()),
    };
    for target in ["heap_walk", "stack_walk", "async_chain"] {
        let Ok(rd) = std::fs::read_dir(root.join(target)) else {
            continue;
        };
        let mut inputs: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        inputs.sort();
        if inputs.is_empty() {
            continue;
        }
        let case = tests::damage::fuzz_case(target).expect("known case");
        let e = tests::entry(case.dump);
        let dump: Arc<dyn Target> = Arc::new(e.open());
        let lm = Landmarks::find(dump.clone(), case.dump);
        let lines = (case.lines)(&lm);
        for input in inputs {
            let data = std::fs::read(&input).expect("read input");
            let mut ov = Overlay::new(dump.clone());
            tests::damage::apply_fuzz(&mut ov, &lm, case.classes, &data);
            let name = input.file_name().unwrap().to_string_lossy().into_owned();
            exercise(&mut rep, case.dump, &name, ov.into_target(), &lines);
        }
    }
    assert!(
        rep.failures.is_empty(),
        "{} failures:\n{}",
        rep.failures.len(),
        rep.failures.join("\n")
    );
}

/// An array of references whose length was damaged to 0xFFFFFFFF: asking for its references
/// must fail at once, naming the object, instead of listing 2^32 slots first.
#[test]
fn a_damaged_array_length_costs_no_memory() {
    use clrdata::model::objects::ObjectReader;
    let e = tests::entry("heap");
    let dump: Arc<dyn Target> = Arc::new(e.open());
    let rt = clrdata::Runtime::discover(dump.clone()).unwrap();
    let heap = rt.gc_heap().unwrap();
    let names = clrdata::TypeNames::new();
    let r = ObjectReader::new(&rt, &names);
    // An object[]-like array: component size 8 and GC references.
    let arr = heap
        .objects(&rt)
        .filter(|o| !o.is_free)
        .find(|o| {
            r.mt(o.mt)
                .is_some_and(|i| i.is_array() && i.component_size == 8 && i.contains_pointers())
        })
        .expect("an array of references in the heap dump");
    assert!(r.references(arr.address).is_ok());
    let mut ov = Overlay::new(dump.clone());
    ov.patch(arr.address + 8, 0xFFFF_FFFFu32.to_le_bytes().to_vec());
    let rt2 = clrdata::Runtime::discover(ov.into_target()).unwrap();
    let r2 = ObjectReader::new(&rt2, &names);
    let before = vm_hwm_mb();
    let t = Instant::now();
    let err = r2
        .references(arr.address)
        .expect_err("a 2^32-element array");
    let grew = vm_hwm_mb().saturating_sub(before);
    let m = err.to_string();
    assert!(m.contains(&format!("{:#x}", arr.address)), "{m}");
    assert!(grew < 64, "peak memory grew by {grew} MiB");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

/// verifyobj on a damaged copy of the heap dump names each damage where it was made: a reference
/// moved into the middle of another object (its offset and value), a reference slot missing from
/// the dump, and a MethodTable word overwritten; the object as dumped has no problem.
#[test]
fn verifyobj_names_the_damage_where_it_was_made() {
    use clrdata::model::objects::{verify_object, ObjectProblemKind, ObjectReader};
    let e = tests::entry("heap");
    let dump: Arc<dyn Target> = Arc::new(e.open());
    let rt = clrdata::Runtime::discover(dump.clone()).unwrap();
    let heap = rt.gc_heap().unwrap();
    let names = clrdata::TypeNames::new();
    let r = ObjectReader::new(&rt, &names);
    // An object with at least one non-null reference, and another object to point into.
    let (obj, refs) = heap
        .objects(&rt)
        .filter(|o| !o.is_free)
        .find_map(|o| {
            let refs = r.references(o.address).ok()?;
            (!refs.is_empty() && verify_object(&r, &heap, o.address).problems.is_empty())
                .then_some((o, refs))
        })
        .expect("an object with references in the heap dump");
    let (slot, target) = refs[0];
    let other = heap
        .objects(&rt)
        .find(|o| !o.is_free && o.address != target && o.size >= 24)
        .expect("another object");

    let check = |ov: Overlay| {
        let rt2 = clrdata::Runtime::discover(ov.into_target()).unwrap();
        let heap2 = rt2.gc_heap().unwrap();
        let r2 = ObjectReader::new(&rt2, &names);
        verify_object(&r2, &heap2, obj.address)
    };

    // A reference into the middle of another object.
    let mut ov = Overlay::new(dump.clone());
    ov.write_u64(slot, other.address + 8);
    let v = check(ov);
    assert_eq!(v.problems.len(), 1, "{v:?}");
    assert_eq!(
        v.problems[0].kind,
        ObjectProblemKind::InvalidObjectReference
    );
    assert_eq!(v.problems[0].offset, slot - obj.address, "{v:?}");
    assert!(
        v.problems[0]
            .detail
            .contains(&format!("{:#x}", other.address + 8)),
        "{v:?}"
    );

    // The slot's memory missing from the dump.
    let mut ov = Overlay::new(dump.clone());
    ov.remove(slot, 8);
    let v = check(ov);
    assert!(
        v.problems
            .iter()
            .any(|p| p.kind == ObjectProblemKind::InvalidObjectReference
                && p.offset == slot - obj.address),
        "{v:?}"
    );

    // The MethodTable word overwritten.
    let mut ov = Overlay::new(dump.clone());
    ov.write_u64(obj.address, 0xdead_0000);
    let v = check(ov);
    assert!(
        v.problems
            .iter()
            .any(|p| p.kind == ObjectProblemKind::InvalidMethodTable),
        "{v:?}"
    );
}
