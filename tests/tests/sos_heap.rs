//! `gcheapstat`, `sizestats`, `dumpgen` and `dumpheap -gen` against SOS: the truths
//! `dumps/<name>.sos-gcheapstat.txt`, `.sos-sizestats.txt` and `.sos-dumpgen.txt`, written by
//! dumps/tools/sos_heapcmds.sh with dotnet-dump 10.0.750501 and each build's own DAC. Every
//! corpus dump with such a truth is checked; values are compared, not whitespace.
//!
//! Sizes: SOS (ClrMD) gives an object's size unaligned, dumpshell as the GC lays it out
//! (aligned to 8; tests/tests/live.rs), so a type's total may exceed SOS's by less than 8 bytes
//! per object. `sizestats` rounds each size up to 8 (SOS does too) and `gcheapstat`'s
//! allocated, free and committed bytes are the segments' own: those are equal.

use commands::Session;
use serde_json::Value;
use std::collections::BTreeMap;

/// The dumps with the truth `dumps/<name>.sos-<what>.txt`, with SOS's output lines by command
/// (`### <command>` sections; a command recorded twice: its last output).
fn with_truth(what: &str) -> Vec<(tests::Entry, BTreeMap<String, Vec<String>>)> {
    let v: Vec<_> = tests::sos::dumps_with(&format!("sos-{what}"))
        .into_iter()
        .map(|(e, secs)| {
            let t = secs
                .into_iter()
                .map(|(c, text)| (c, text.lines().map(str::to_owned).collect()))
                .collect();
            (e, t)
        })
        .collect();
    assert!(!v.is_empty(), "no dump has the truth sos-{what}");
    v
}

fn session(e: &tests::Entry) -> Session {
    Session::open_with(&e.dump_path(), &e.open_options()).unwrap()
}

/// The command's JSON result and its text.
fn run(s: &Session, line: &str) -> (Value, String) {
    let (out, _) = commands::execute(s, line)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .unwrap();
    (out.json_document()["result"].clone(), out.text.clone())
}

fn num(s: &str) -> u64 {
    s.replace(',', "").parse().unwrap()
}

fn addr(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

// ---------------------------------------------------------------------------------- gcheapstat

/// One gcheapstat table: per row (`Heap0`, ..., `Total`) the Gen0..POH values and the
/// percentages (`SOH:55%`), by the table's title (`Allocated` for the first).
type HeapStatTables = BTreeMap<String, BTreeMap<String, (Vec<u64>, Vec<String>)>>;

/// Parses gcheapstat's text (SOS's or ours): the first five numbers of each row (Gen0, Gen1,
/// Gen2, LOH, POH; SOS leaves FRZ empty) and its percentages.
fn heapstat_tables(lines: &[String]) -> HeapStatTables {
    let mut out = HeapStatTables::new();
    let mut title = "Allocated".to_string();
    for l in lines {
        let t = l.trim();
        if t.ends_with(':') && !t.starts_with("Heap") {
            title = t.trim_end_matches(':').to_string();
            continue;
        }
        let w: Vec<&str> = t.split_whitespace().collect();
        let Some(first) = w.first() else { continue };
        if !(first.starts_with("Heap") && first.len() > 4 || *first == "Total") {
            continue;
        }
        let nums: Vec<u64> = w[1..]
            .iter()
            .filter_map(|x| x.parse::<u64>().ok())
            .take(5)
            .collect();
        let pcts: Vec<String> = w[1..]
            .iter()
            .filter(|x| x.contains(':'))
            .map(|x| x.to_string())
            .collect();
        out.entry(title.clone())
            .or_default()
            .insert(first.to_string(), (nums, pcts));
    }
    out
}

#[test]
fn gcheapstat_is_sos() {
    for (e, t) in with_truth("gcheapstat") {
        let s = session(&e);
        for cmd in ["gcheapstat", "gcheapstat -unreachable"] {
            let Some(sos) = t.get(cmd) else { continue };
            let sos = heapstat_tables(sos);
            let (json, text) = run(&s, cmd);
            let ours = heapstat_tables(&text.lines().map(str::to_owned).collect::<Vec<_>>());
            assert!(sos.contains_key("Committed space"), "{} {cmd}", e.name);
            // The JSON holds what the text shows.
            for (title, field) in [
                ("Allocated", "allocated"),
                ("Free space", "free"),
                ("Committed space", "committed"),
                ("Unrooted objects", "unrooted"),
            ] {
                let Some(rows) = ours.get(title) else {
                    continue;
                };
                for h in json["heaps"].as_array().unwrap() {
                    let name = format!("Heap{}", h["index"]);
                    let vals: Vec<u64> = h["generations"].as_array().unwrap()[..5]
                        .iter()
                        .map(|g| g[field].as_u64().unwrap())
                        .collect();
                    assert_eq!(rows[&name].0, vals, "{} {cmd} {title} {name}", e.name);
                }
            }
            if cmd.contains("unreachable") {
                unrooted_is_sos(&e, &sos["Unrooted objects"], &ours["Unrooted objects"]);
            }
            for title in ["Allocated", "Free space", "Committed space"] {
                assert_eq!(
                    ours.get(title),
                    sos.get(title),
                    "{} {cmd}: the {title} table",
                    e.name
                );
            }
        }
    }
}

/// gcheapstat -unreachable's unrooted bytes against SOS's. SOS marks from ClrMD's roots, which
/// lack .NET 9+'s thread statics (tests/tests/live.rs): from the same root set (ours less
/// thread statics) each generation's unrooted objects must be SOS's, their bytes SOS's plus
/// less than 8 per object (SOS's sizes are unaligned); from ours, at most those.
fn unrooted_is_sos(
    e: &tests::Entry,
    sos: &BTreeMap<String, (Vec<u64>, Vec<String>)>,
    ours: &BTreeMap<String, (Vec<u64>, Vec<String>)>,
) {
    use clrdata::analysis::generations::{self, Generation};
    use clrdata::analysis::reach::live_set_with;
    use clrdata::analysis::roots::RootSource;
    use clrdata::prelude::*;
    let d = e.open();
    let rt = tests::discover(&d).unwrap();
    let names = clrdata::TypeNames::new();
    let heap = rt.gc_heap().unwrap();
    let set = live_set_with(&rt, &heap, &names, |r| {
        !matches!(r.source, RootSource::ThreadStatics { .. })
    })
    .unwrap();
    let st = generations::gc_heap_stat(&rt, &heap, Some(&set), &|_| true).unwrap();
    // Unrooted objects per heap and generation, counted here.
    let mut count: BTreeMap<(usize, Generation), u64> = BTreeMap::new();
    for o in heap.objects(&rt) {
        let g = Generation::of_kind(o.kind).unwrap();
        if !o.is_free && !set.is_live(o.address) {
            *count.entry((heap.segments[o.segment].heap, g)).or_default() += 1;
        }
    }
    for h in &st.heaps {
        let row = format!("Heap{}", h.index);
        let (s_vals, _) = &sos[&row];
        for (i, g) in Generation::ALL[..5].iter().enumerate() {
            let o = h.generations[g.index()].unrooted.unwrap();
            let n = count.get(&(h.index, *g)).copied().unwrap_or(0);
            assert!(
                o >= s_vals[i] && o - s_vals[i] < 8 * n.max(1),
                "{} {row} {}: unrooted without thread statics {o} ({n} objects), SOS {}",
                e.name,
                g.name(),
                s_vals[i]
            );
            assert!(
                ours[&row].0[i] <= o,
                "{} {row} {}: unrooted {} > {o} without thread statics",
                e.name,
                g.name(),
                ours[&row].0[i]
            );
        }
    }
}

// ----------------------------------------------------------------------------------- sizestats

/// sizestats' sections: title -> rows (size, count, cumulative size, cumulative count).
fn size_sections(lines: &[String]) -> BTreeMap<String, Vec<[u64; 4]>> {
    let mut out: BTreeMap<String, Vec<[u64; 4]>> = BTreeMap::new();
    let mut cur = None;
    for l in lines {
        if let Some(t) = l.strip_prefix("Size Statistics for ") {
            cur = Some(t.to_owned());
            out.entry(t.to_owned()).or_default();
            continue;
        }
        let w: Vec<&str> = l.split_whitespace().collect();
        if let (Some(c), 4) = (&cur, w.len()) {
            if w.iter().all(|x| x.replace(',', "").parse::<u64>().is_ok()) {
                out.get_mut(c)
                    .unwrap()
                    .push([num(w[0]), num(w[1]), num(w[2]), num(w[3])]);
            }
        }
    }
    out
}

#[test]
fn sizestats_is_sos() {
    for (e, t) in with_truth("sizestats") {
        let s = session(&e);
        let sos = size_sections(&t["sizestats"]);
        let (json, text) = run(&s, "sizestats");
        let ours = size_sections(&text.lines().map(str::to_owned).collect::<Vec<_>>());
        assert!(sos.len() >= 9, "{}: {:?}", e.name, sos.keys());
        assert_eq!(ours, sos, "{}: sizestats", e.name);
        // The JSON's histograms are the text's rows.
        let hs = json["histograms"].as_array().unwrap();
        assert_eq!(hs.len(), ours.len(), "{}", e.name);
        let json_total: u64 = hs
            .iter()
            .flat_map(|h| h["sizes"].as_array().unwrap())
            .map(|x| x["count"].as_u64().unwrap())
            .sum();
        let text_total: u64 = ours.values().flatten().map(|r| r[1]).sum();
        assert_eq!(json_total, text_total, "{}", e.name);
    }
}

// ------------------------------------------------------------------------------------- dumpgen

/// MethodTable -> (count, size, name).
type Stats = BTreeMap<u64, (u64, u64, String)>;

/// SOS's statistics rows (`MT Count TotalSize Class Name`) and its total count.
fn sos_stats(lines: &[String]) -> (Stats, Option<u64>) {
    let mut st = Stats::new();
    let mut total = None;
    for l in lines {
        if let Some(t) = l.strip_prefix("Total ") {
            total = t.split_whitespace().next().map(num);
            continue;
        }
        let w: Vec<&str> = l.split_whitespace().collect();
        // dumpgen writes 16 digits, dumpheap as few as it needs.
        if w.len() >= 4
            && w[0].len() >= 8
            && w[0].chars().all(|c| c.is_ascii_hexdigit())
            && w[1].replace(',', "").parse::<u64>().is_ok()
        {
            st.insert(addr(w[0]), (num(w[1]), num(w[2]), w[3..].join(" ")));
        }
    }
    (st, total)
}

/// Ours against SOS's: same MethodTables and counts, sizes within alignment, and the same name
/// where SOS's is not a generic one (SOS writes `List<Heap.Person>`, dumpshell the DAC's
/// `List`1[[...]]`).
fn same_stats(what: &str, ours: &Stats, sos: &Stats) {
    let mts: std::collections::BTreeSet<u64> = ours.keys().chain(sos.keys()).copied().collect();
    let mut bad = Vec::new();
    for mt in mts {
        let o = ours.get(&mt).cloned().unwrap_or_default();
        let s = sos.get(&mt).cloned().unwrap_or_default();
        let size_ok = o.1 >= s.1 && o.1 - s.1 < 8 * o.0.max(1);
        let name_ok = s.2.contains('<') || o.2 == s.2;
        if o.0 != s.0 || !size_ok || !name_ok {
            bad.push(format!("{mt:#x}: ours {o:?} SOS {s:?}"));
        }
    }
    assert!(bad.is_empty(), "{what}: {bad:#?}");
}

fn json_stats(rows: &Value) -> Stats {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                addr(t["mt"].as_str().unwrap()),
                (
                    t["count"].as_u64().unwrap(),
                    t["total_size"].as_u64().unwrap(),
                    t["name"].as_str().unwrap().to_owned(),
                ),
            )
        })
        .collect()
}

#[test]
fn dumpgen_and_dumpheap_gen_are_sos() {
    for (e, t) in with_truth("dumpgen") {
        let s = session(&e);
        let mut checked = 0;
        for (cmd, lines) in &t {
            let what = format!("{} {cmd}", e.name);
            if cmd.starts_with("dumpgen") && cmd.contains(" -mt ") {
                // SOS: Address MT Size per object.
                let sos: Vec<(u64, u64, u64)> = lines
                    .iter()
                    .filter_map(|l| {
                        let w: Vec<&str> = l.split_whitespace().collect();
                        (w.len() == 3 && w[0].len() == 16 && u64::from_str_radix(w[0], 16).is_ok())
                            .then(|| (addr(w[0]), addr(w[1]), num(w[2])))
                    })
                    .collect();
                let (json, _) = run(&s, cmd);
                let ours: Vec<(u64, u64, u64)> = json["objects"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|o| {
                        (
                            addr(o["address"].as_str().unwrap()),
                            addr(o["mt"].as_str().unwrap()),
                            o["size"].as_u64().unwrap(),
                        )
                    })
                    .collect();
                assert!(!sos.is_empty(), "{what}");
                let mut a: Vec<_> = ours.iter().map(|x| (x.0, x.1)).collect();
                let mut b: Vec<_> = sos.iter().map(|x| (x.0, x.1)).collect();
                a.sort();
                b.sort();
                assert_eq!(a, b, "{what}: the objects");
                let sizes: BTreeMap<u64, u64> = sos.iter().map(|x| (x.0, x.2)).collect();
                for o in &ours {
                    let s = sizes[&o.0];
                    assert!(
                        o.2 >= s && o.2 - s < 8,
                        "{what}: {:#x} ours {} SOS {s}",
                        o.0,
                        o.2
                    );
                }
                assert_eq!(
                    json["total_objects"].as_u64(),
                    Some(sos.len() as u64),
                    "{what}"
                );
                checked += 1;
            } else if cmd.starts_with("dumpgen") {
                let (sos, total) = sos_stats(lines);
                let (json, _) = run(&s, cmd);
                let ours = json_stats(&json["statistics"]);
                same_stats(&what, &ours, &sos);
                assert_eq!(json["total_objects"].as_u64(), total, "{what}: total");
                checked += 1;
            } else if cmd.starts_with("dumpheap") {
                // SOS counts free objects as the `Free` type; dumpshell apart.
                let (mut sos, _) = sos_stats(lines);
                let free: Vec<u64> = sos
                    .iter()
                    .filter(|(_, v)| v.2 == "Free")
                    .map(|(k, _)| *k)
                    .collect();
                let sos_free = free
                    .iter()
                    .filter_map(|k| sos.remove(k))
                    .fold((0, 0), |a, v| (a.0 + v.0, a.1 + v.1));
                let (json, _) = run(&s, cmd);
                let ours = json_stats(&json["statistics"]);
                same_stats(&what, &ours, &sos);
                assert_eq!(
                    (
                        json["free_objects"].as_u64().unwrap(),
                        json["free_size"].as_u64().unwrap()
                    ),
                    sos_free,
                    "{what}: free objects"
                );
                checked += 1;
            }
        }
        assert!(checked >= 13, "{}: {checked} sections checked", e.name);
    }
}

// -------------------------------------------------------------------------------- dumpdelegate

#[test]
fn dumpdelegate_is_sos() {
    let (mut rows, mut named, mut refused) = (0, 0, 0);
    for (e, t) in with_truth("dumpdelegate") {
        let s = session(&e);
        for (cmd, lines) in &t {
            let what = format!("{} {cmd}", e.name);
            // SOS's refusal (`Object of type '..' is not a delegate.`, written without a line
            // end) does not reach dotnet-dump's output: an empty section is SOS's refusal.
            if lines.iter().all(|l| l.trim().is_empty())
                || lines.iter().any(|l| l.contains("is not a delegate"))
            {
                assert!(
                    commands::execute(&s, cmd).is_err(),
                    "{what}: SOS refuses it"
                );
                refused += 1;
                continue;
            }
            // SOS: `Target Method Name` rows; `<MD> is not a MethodDesc` where SOS's DAC would
            // not name the MethodDesc.
            let sos: Vec<(u64, u64, Option<String>)> = lines
                .iter()
                .filter_map(|l| {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    (w.len() >= 3 && w[0].len() == 16 && u64::from_str_radix(w[0], 16).is_ok())
                        .then(|| {
                            let name = w[2..].join(" ");
                            let name = (!name.ends_with("is not a MethodDesc")).then_some(name);
                            (addr(w[0]), addr(w[1]), name)
                        })
                })
                .collect();
            if sos.is_empty() {
                // The header alone: SOS 10.0.750501 reads a delegate through its
                // `_invocationList` field, which .NET 11's Delegate no longer has
                // (`_helperObject`, `_extraData`): SOS says nothing there.
                assert!(
                    e.family() >= 11 && lines.iter().any(|l| l.starts_with("Target")),
                    "{what}: no row in SOS's output"
                );
                continue;
            }
            let (json, _) = run(&s, cmd);
            let ours = json["methods"].as_array().unwrap();
            assert_eq!(ours.len(), sos.len(), "{what}: {json}");
            for (o, (target, md, name)) in ours.iter().zip(&sos) {
                assert_eq!(
                    addr(o["target"].as_str().unwrap()),
                    *target,
                    "{what}: target"
                );
                assert_eq!(
                    o["method_desc"].as_str().map(addr),
                    Some(*md),
                    "{what}: MethodDesc ({o})"
                );
                if let Some(n) = name {
                    assert_eq!(o["method"].as_str(), Some(n.as_str()), "{what}: name");
                    named += 1;
                }
                rows += 1;
            }
        }
    }
    assert!(
        rows > 0 && named > 0 && refused > 0,
        "{rows} rows, {named} named, {refused} refused"
    );
}

// ------------------------------------------------------------------------ dumpheap <start> <end>

#[test]
fn dumpheap_address_ranges_are_sos() {
    let mut checked = 0;
    for (e, t) in with_truth("dumpheap") {
        let s = session(&e);
        for (cmd, lines) in &t {
            let what = format!("{} {cmd}", e.name);
            if cmd.contains("-short") {
                // SOS lists every object in the range, free ones too.
                let mut sos: Vec<u64> = lines
                    .iter()
                    .filter_map(|l| {
                        let w = l.trim();
                        (w.len() >= 8 && !w.contains(' ') && u64::from_str_radix(w, 16).is_ok())
                            .then(|| addr(w))
                    })
                    .collect();
                assert!(sos.len() > 1, "{what}: {lines:?}");
                let (json, _) = run(&s, &format!("{cmd} -free"));
                let mut ours: Vec<u64> = json["objects"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|o| addr(o["address"].as_str().unwrap()))
                    .collect();
                // Both walk segment by segment, not in the same order of segments.
                ours.sort_unstable();
                sos.sort_unstable();
                assert_eq!(ours, sos, "{what}");
            } else {
                let (mut sos, _) = sos_stats(lines);
                let free: Vec<u64> = sos
                    .iter()
                    .filter(|(_, v)| v.2 == "Free")
                    .map(|(k, _)| *k)
                    .collect();
                let sos_free = free
                    .iter()
                    .filter_map(|k| sos.remove(k))
                    .fold((0, 0), |a, v| (a.0 + v.0, a.1 + v.1));
                assert!(!sos.is_empty(), "{what}");
                let (json, _) = run(&s, cmd);
                same_stats(&what, &json_stats(&json["statistics"]), &sos);
                assert_eq!(
                    (
                        json["free_objects"].as_u64().unwrap(),
                        json["free_size"].as_u64().unwrap()
                    ),
                    sos_free,
                    "{what}: free objects"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 3, "{checked}");
}

// ---------------------------------------------------------------------------- dumpruntimetypes

#[test]
fn dumpruntimetypes_is_sos() {
    let mut named = 0;
    for (e, t) in with_truth("dumpruntimetypes") {
        let s = session(&e);
        // SOS: Address Domain MT Type Name; a TypeDesc's row has no domain and `typehandle: ..`.
        let mut sos: BTreeMap<u64, (Option<u64>, u64, String)> = BTreeMap::new();
        for l in &t["dumpruntimetypes"] {
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() < 3 || u64::from_str_radix(w[0], 16).is_err() || w[0].len() < 8 {
                continue;
            }
            if w[2] == "typehandle:" {
                sos.insert(addr(w[0]), (None, addr(w[1]), String::new()));
            } else {
                sos.insert(addr(w[0]), (Some(addr(w[1])), addr(w[2]), w[3..].join(" ")));
            }
        }
        assert!(!sos.is_empty(), "{}", e.name);
        let (json, _) = run(&s, "dumpruntimetypes");
        assert!(
            json["unread"].as_array().unwrap().is_empty(),
            "{}: {json}",
            e.name
        );
        let ours: BTreeMap<u64, (Option<u64>, u64, String)> = json["types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    addr(r["address"].as_str().unwrap()),
                    (
                        r["domain"].as_str().map(addr),
                        addr(r["handle"].as_str().unwrap()),
                        r["name"].as_str().unwrap_or_default().to_owned(),
                    ),
                )
            })
            .collect();
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            sos.keys().collect::<Vec<_>>(),
            "{}: the RuntimeType objects",
            e.name
        );
        for (a, (d, h, n)) in &sos {
            let o = &ours[a];
            assert_eq!((&o.0, &o.1), (d, h), "{} {a:#x}: domain and handle", e.name);
            // SOS names generics in C# form (`List<Heap.Person>`), dumpshell as the DAC; SOS's
            // `(dynamicClass)` is ClrMD's placeholder for a type it does not name either (a
            // Reflection.Emit type: dumpshell does not name it yet, issue 27).
            if !n.contains('<') && !n.is_empty() && n != "(dynamicClass)" {
                assert_eq!(&o.2, n, "{} {a:#x}", e.name);
                named += 1;
            }
        }
    }
    assert!(named > 0);
}

// ------------------------------------------------------ dumpheap -heap, -segment and -bycount

/// `dumpheap -heap <n>`, `-segment <addr>` and `-bycount` against SOS (the truths
/// `dumps/<name>.sos-dumpheapfilter.txt`): per heap (and SOS's refusal of a heap past the
/// last), per segment `eeheap -gc` lists, an address inside a segment's memory, an address in
/// none, and the statistics by count.
#[test]
fn dumpheap_heap_segment_and_bycount_are_sos() {
    let (mut refused, mut heaps, mut segments, mut empty, mut by_count, mut short) =
        (0, 0, 0, 0, 0, 0);
    for (e, t) in with_truth("dumpheapfilter") {
        let s = session(&e);
        for (cmd, lines) in &t {
            let what = format!("{} {cmd}", e.name);
            if lines.iter().any(|l| l.contains("No GC heap with index of")) {
                let err = commands::execute(&s, cmd).err();
                assert!(
                    err.as_ref()
                        .is_some_and(|e| e.to_string().contains("no GC heap with index")),
                    "{what}: SOS refuses it ({:?})",
                    err.map(|e| e.to_string())
                );
                refused += 1;
                continue;
            }
            assert!(
                !lines.iter().any(|l| l.contains("exception")),
                "{what}: SOS failed: {lines:?}"
            );
            if cmd.contains("-short") {
                let mut sos: Vec<u64> = lines
                    .iter()
                    .filter_map(|l| {
                        let w = l.trim();
                        (w.len() >= 8 && !w.contains(' ') && u64::from_str_radix(w, 16).is_ok())
                            .then(|| addr(w))
                    })
                    .collect();
                assert!(!sos.is_empty(), "{what}: {lines:?}");
                let (json, _) = run(&s, &format!("{cmd} -free"));
                let mut ours: Vec<u64> = json["objects"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|o| addr(o["address"].as_str().unwrap()))
                    .collect();
                ours.sort_unstable();
                sos.sort_unstable();
                assert_eq!(ours, sos, "{what}");
                short += 1;
                continue;
            }
            let (mut sos, _) = sos_stats(lines);
            // The order of SOS's rows (smallest first) before the free objects come out.
            let sos_counts: Vec<u64> = lines
                .iter()
                .filter_map(|l| {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    (w.len() >= 4
                        && w[0].len() >= 8
                        && u64::from_str_radix(w[0], 16).is_ok()
                        && w[3..].join(" ") != "Free")
                        .then(|| num(w[1]))
                })
                .collect();
            let free: Vec<u64> = sos
                .iter()
                .filter(|(_, v)| v.2 == "Free")
                .map(|(k, _)| *k)
                .collect();
            let sos_free = free
                .iter()
                .filter_map(|k| sos.remove(k))
                .fold((0, 0), |a, v| (a.0 + v.0, a.1 + v.1));
            let (json, _) = run(&s, cmd);
            same_stats(&what, &json_stats(&json["statistics"]), &sos);
            assert_eq!(
                (
                    json["free_objects"].as_u64().unwrap(),
                    json["free_size"].as_u64().unwrap()
                ),
                sos_free,
                "{what}: free objects"
            );
            if cmd.contains("-bycount") {
                // SOS writes the most numerous type last; the JSON has it first.
                let mut ours: Vec<u64> = json["statistics"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t["count"].as_u64().unwrap())
                    .collect();
                ours.reverse();
                assert!(sos_counts.is_sorted(), "{what}: SOS's order");
                assert_eq!(ours, sos_counts, "{what}: the order by count");
                by_count += 1;
            }
            if sos.is_empty() && sos_free.0 == 0 {
                assert_eq!(json["total_objects"].as_u64(), Some(0), "{what}");
                empty += 1;
            } else if cmd.contains("-heap") {
                heaps += 1;
            } else if cmd.contains("-segment") {
                segments += 1;
            }
        }
    }
    assert!(
        refused >= 5 && heaps >= 7 && segments >= 20 && empty > 0 && by_count >= 10 && short >= 5,
        "{refused} refused, {heaps} heaps, {segments} segments, {empty} empty, {by_count} by \
         count, {short} short"
    );
}

// ----------------------------------------------------------------------------------- verifyobj

/// SOS's issue name (`InvalidMethodTable`) as dumpshell's JSON kind (`invalid_method_table`).
fn snake(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// `verifyobj` against SOS (the truths `dumps/<name>.sos-verifyobj.txt`): the verdict on
/// objects of the heap (valid), an address inside an object and one on no segment, and the
/// kind of SOS's issue.
#[test]
fn verifyobj_is_sos() {
    let (mut valid, mut invalid) = (0, 0);
    for (e, t) in with_truth("verifyobj") {
        let s = session(&e);
        for (cmd, lines) in &t {
            let what = format!("{} {cmd}", e.name);
            let (json, text) = run(&s, cmd);
            if lines.iter().any(|l| l.ends_with("is a valid object")) {
                assert_eq!(json["valid"], true, "{what}: {json}");
                assert_eq!(json["problems"].as_array().unwrap().len(), 0, "{what}");
                assert!(text.ends_with("is a valid object\n"), "{what}: {text}");
                valid += 1;
                continue;
            }
            // SOS: `Offset Issue Description` rows.
            let kinds: Vec<String> = lines
                .iter()
                .filter_map(|l| {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    (w.len() >= 2 && w[0].starts_with("0x")).then(|| snake(w[1]))
                })
                .collect();
            assert!(!kinds.is_empty(), "{what}: {lines:?}");
            assert_eq!(json["valid"], false, "{what}: {json}");
            let ours: Vec<String> = json["problems"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["kind"].as_str().unwrap().to_owned())
                .collect();
            assert_eq!(ours, kinds, "{what}: {json}");
            invalid += 1;
        }
    }
    assert!(
        valid >= 10 && invalid >= 10,
        "{valid} valid, {invalid} invalid"
    );
}
