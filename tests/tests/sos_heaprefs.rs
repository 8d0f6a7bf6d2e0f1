//! `dumpobjgcrefs`, `pathto` and the memory display commands (`db dw dd dq dp dc da du`) against
//! SOS: the truth `dumps/<name>.sos-heaprefs.txt`, written by dumps/tools/sos_heaprefs.py with
//! dotnet-dump 10.0.750501 and each build's own DAC, the objects chosen from SOS's own `gcroot`
//! output (dumps/<name>.sos-gcroot.txt).
//!
//! - `dumpobjgcrefs`: line by line. The rows' order is the GCDesc's (series from the highest
//!   down, as the GC walks an object), defined by the runtime, not by ClrMD.
//! - `pathto`: SOS (ClrMD's `GCRoot.FindPathFrom`) searches depth first and prints the first
//!   path it meets, which depends on the order ClrMD keeps its pending references in;
//!   dumpshell's search is breadth first and prints a shortest path. What is defined is
//!   compared: a path is found by both or by neither; ours runs from the source to the target
//!   and is no longer than SOS's; every step of SOS's path and of ours is a reference that
//!   dumpshell's `dumpobjgcrefs` lists (or a dependent handle's edge, marked as such); where
//!   the two paths are the same objects, the text is SOS's line by line.
//! - memory display: line by line (`da`/`du` print `Text: '...'`).
//!
//! Type names: SOS (ClrMD) writes a nested type with `+`; lines are compared with dumpshell's
//! C# style applied (`commands::style::to_csharp`) and `+` read as `.`, as sos_heapnear does.

use commands::Session;
use serde_json::Value;

fn session(e: &tests::Entry) -> Session {
    Session::open_with(&e.dump_path(), &e.open_options()).unwrap()
}

fn run(s: &Session, line: &str) -> (Value, String) {
    let (out, _) = commands::execute(s, line)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .unwrap();
    let text = commands::style::to_csharp(&out.text).into_owned();
    (out.json_document()["result"].clone(), text)
}

/// The text's lines without trailing blanks and blank lines, `+` read as `.`; SOS's
/// "Caching GC roots" notice (its root cache's, printed once per session) left out.
fn lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| {
            !l.trim().is_empty()
                && !l.starts_with("Caching GC roots")
                && !l.starts_with("Subsequent runs of this command")
        })
        .map(|l| l.trim_end().replace('+', "."))
        .collect()
}

fn truths() -> Vec<(tests::Entry, Vec<(String, String)>)> {
    let v = tests::sos::dumps_with("sos-heaprefs");
    assert!(v.len() >= 5, "the sos-heaprefs truths are missing");
    v
}

fn hex(v: &Value) -> u64 {
    let t = v.as_str().unwrap_or_else(|| panic!("not an address: {v}"));
    u64::from_str_radix(t.trim_start_matches("0x"), 16).unwrap()
}

#[test]
fn dumpobjgcrefs_is_sos() {
    let (mut checked, mut rows) = (0, 0);
    for (e, secs) in truths() {
        let s = session(&e);
        for (cmd, text) in secs.iter().filter(|(c, _)| c.starts_with("dumpobjgcrefs ")) {
            let (json, ours) = run(&s, cmd);
            assert_eq!(
                lines(&ours),
                lines(text),
                "{}: {cmd}\n--- ours:\n{ours}--- SOS:\n{text}",
                e.name
            );
            checked += 1;
            rows += json["references"].as_array().map_or(0, Vec::len);
        }
    }
    println!("dumpobjgcrefs: {checked} objects, {rows} references equal SOS's");
    assert!(checked >= 40, "only {checked} dumpobjgcrefs truths");
}

/// The objects of a `pathto` text (`-> ADDR TYPE` lines).
fn path_objects(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("-> "))
        .map(|l| u64::from_str_radix(l.split_whitespace().next().unwrap(), 16).unwrap())
        .collect()
}

/// Whether dumpshell's `dumpobjgcrefs` of `from` lists `to`.
fn references(s: &Session, from: u64, to: u64) -> bool {
    let (json, _) = run(s, &format!("dumpobjgcrefs {from:x}"));
    json["references"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| hex(&r["object"]) == to)
}

#[test]
fn pathto_finds_what_sos_finds() {
    let (mut checked, mut same, mut shorter, mut none) = (0, 0, 0, 0);
    for (e, secs) in truths() {
        let s = session(&e);
        for (cmd, text) in secs.iter().filter(|(c, _)| c.starts_with("pathto ")) {
            let w: Vec<u64> = cmd
                .split_whitespace()
                .skip(1)
                .map(|a| u64::from_str_radix(a, 16).unwrap())
                .collect();
            let (source, target) = (w[0], w[1]);
            let sos = path_objects(text);
            let (json, ours) = run(&s, cmd);
            let mine: Vec<u64> = json["path"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| hex(&p["object"]))
                .collect();
            let ctx = format!("{}: {cmd}\n--- ours:\n{ours}--- SOS:\n{text}", e.name);
            assert_eq!(mine.is_empty(), sos.is_empty(), "found by one only: {ctx}");
            assert_eq!(json["found"], !mine.is_empty(), "{ctx}");
            checked += 1;
            if sos.is_empty() {
                assert_eq!(lines(&ours), lines(text), "{ctx}");
                none += 1;
                continue;
            }
            assert_eq!((mine[0], *mine.last().unwrap()), (source, target), "{ctx}");
            assert_eq!((sos[0], *sos.last().unwrap()), (source, target), "{ctx}");
            assert!(mine.len() <= sos.len(), "ours is longer: {ctx}");
            for (i, st) in json["path"].as_array().unwrap().iter().enumerate().skip(1) {
                if st["dependent_handle"] == true {
                    continue;
                }
                assert!(
                    references(&s, mine[i - 1], mine[i]),
                    "our step {:x} -> {:x} is no reference: {ctx}",
                    mine[i - 1],
                    mine[i]
                );
            }
            for p in sos.windows(2) {
                if text.contains(&format!("{:x}", p[1])) && text.contains("(dependent handle)") {
                    continue;
                }
                assert!(
                    references(&s, p[0], p[1]),
                    "SOS's step {:x} -> {:x} is not among our references: {ctx}",
                    p[0],
                    p[1]
                );
            }
            if mine == sos {
                assert_eq!(lines(&ours), lines(text), "{ctx}");
                same += 1;
            } else {
                shorter += (mine.len() < sos.len()) as usize;
            }
        }
    }
    println!(
        "pathto: {checked} compared: {same} the same path as SOS's (text equal), {shorter} \
         shorter than SOS's, {none} found by neither"
    );
    assert!(checked >= 25, "only {checked} pathto truths");
    assert!(same >= 10, "only {same} paths the same as SOS's");
}

#[test]
fn memory_display_is_sos() {
    let mut checked = 0;
    for (e, secs) in truths() {
        let s = session(&e);
        for (cmd, text) in secs.iter().filter(|(c, _)| {
            matches!(
                c.split_whitespace().next(),
                Some("db" | "dw" | "dd" | "dq" | "dp" | "dc" | "da" | "du")
            )
        }) {
            let (_, ours) = run(&s, cmd);
            assert_eq!(
                ours.lines().collect::<Vec<_>>(),
                text.lines().collect::<Vec<_>>(),
                "{}: {cmd}\n--- ours:\n{ours}--- SOS:\n{text}",
                e.name
            );
            checked += 1;
        }
    }
    println!("memory display: {checked} commands equal SOS's, line by line");
    assert!(checked >= 40, "only {checked} memory display truths");
}

/// Every `ephrefs`/`ephtoloh` truth: the heaprefs files' and the busier heaps' of
/// `dumps/<name>.sos-ephrefs.txt`.
fn eph_truths() -> Vec<(tests::Entry, String, String)> {
    let mut v = Vec::new();
    for kind in ["sos-heaprefs", "sos-ephrefs"] {
        for (e, secs) in tests::sos::dumps_with(kind) {
            for (cmd, text) in secs {
                if cmd == "ephrefs" || cmd == "ephtoloh" {
                    v.push((e.clone(), cmd, text));
                }
            }
        }
    }
    v
}

/// `ephrefs`'s text as blocks: each `References from X to Y:` group (its header and rows) and
/// the closing count line.
fn eph_blocks(text: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for l in lines(text) {
        if l.starts_with("References from ") || l.contains(" older generation objects ") {
            out.push(Vec::new());
        }
        if let Some(b) = out.last_mut() {
            b.push(l);
        }
    }
    out
}

/// `ephrefs`: SOS prints its groups (object generation, referenced generation) in the order
/// ClrMD enumerates the heap's segments, dumpshell by generation: the groups are compared as
/// a set, each group's rows (by address in both) and the closing count line exactly.
/// `ephtoloh`: line by line.
#[test]
fn ephrefs_and_ephtoloh_are_sos() {
    let (mut checked, mut rows) = (0, 0);
    for (e, cmd, text) in eph_truths() {
        let s = session(&e);
        let (json, ours) = run(&s, &cmd);
        let ctx = format!("{}: {cmd}\n--- ours:\n{ours}--- SOS:\n{text}", e.name);
        if cmd == "ephrefs" {
            let (mut a, mut b) = (eph_blocks(&ours), eph_blocks(&text));
            a.sort();
            b.sort();
            assert_eq!(a, b, "{ctx}");
            rows += json["objects"].as_array().map_or(0, Vec::len);
        } else {
            assert_eq!(lines(&ours), lines(&text), "{ctx}");
        }
        checked += 1;
    }
    println!("ephrefs/ephtoloh: {checked} outputs equal SOS's ({rows} ephrefs rows)");
    assert!(checked >= 20, "only {checked} ephrefs/ephtoloh truths");
}
