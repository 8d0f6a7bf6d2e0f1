//! `dumpheap -live` / `-dead` and `objsize` against SOS (`dumps/<name>.sos-live.txt`, written
//! by dumps/tools/sos_live.sh with dotnet-dump 10.0.750501 and each build's own DAC): per type
//! (MethodTable), the same objects counted.
//!
//! Sizes: SOS (ClrMD) gives an object's size unaligned (`BaseSize + count * ComponentSize`: a
//! string of 3 characters is 28 bytes), dumpshell as the GC lays it out (aligned to 8: 32), so
//! a type's total is SOS's plus less than 8 bytes per object, and equal for every type whose
//! objects' sizes are all multiples of 8.
//!
//! Where the live sets differ, the difference is explained, object by object, by what the two
//! root sets hold: SOS's `-live` marks from ClrMD's `EnumerateRoots`, which (through the DAC)
//! does not report .NET 9+'s thread-statics arrays (`ThreadLocalData`) as roots
//! (root_set_is_clrmds in roots.rs), while the GC does (`ScanThreadStaticRoots`).

use clrdata::analysis::heapstat::{self, HeapQuery, ReachFilter};
use clrdata::analysis::reach::{live_set_with, LiveSet};
use clrdata::analysis::roots::RootSource;
use clrdata::prelude::*;
use commands::Session;
use serde_json::Value;
use std::collections::BTreeMap;

/// One SOS statistics block: MethodTable -> (count, size, name).
type Stats = BTreeMap<u64, (u64, u64, String)>;

/// SOS's outputs of `dumps/<name>.sos-live.txt`, by command.
fn sos_live(e: &tests::Entry) -> Option<BTreeMap<String, Vec<String>>> {
    let p = tests::dumps_dir().join(format!("{}.sos-live.txt", e.name));
    let text = std::fs::read_to_string(p).ok()?;
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut cur: Option<String> = None;
    for l in text.lines() {
        if let Some(c) = l.strip_prefix("### ") {
            cur = Some(c.to_owned());
            out.entry(c.to_owned()).or_default();
        } else if let Some(c) = &cur {
            out.get_mut(c).unwrap().push(l.to_owned());
        }
    }
    Some(out)
}

/// The statistics rows of SOS's output (`MT Count TotalSize Class Name`), and its total line.
fn sos_stats(lines: &[String]) -> (Stats, (u64, u64)) {
    let mut st = Stats::new();
    let mut total = None;
    let num = |s: &str| s.replace(',', "").parse::<u64>().unwrap();
    for l in lines {
        if let Some(t) = l.strip_prefix("Total ") {
            // Total 448 objects, 503,156 bytes
            let w: Vec<&str> = t.split_whitespace().collect();
            total = Some((num(w[0]), num(w[2])));
            continue;
        }
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() >= 4 && w[0].chars().all(|c| c.is_ascii_hexdigit()) && w[0].len() >= 8 {
            if let (Ok(mt), Ok(_)) = (
                u64::from_str_radix(w[0], 16),
                w[1].replace(',', "").parse::<u64>(),
            ) {
                st.insert(mt, (num(w[1]), num(w[2]), w[3..].join(" ")));
            }
        }
    }
    (st, total.expect("SOS's total line"))
}

fn run(s: &Session, line: &str) -> Value {
    let (out, _) = commands::execute(s, line)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .unwrap();
    out.json_document()["result"].clone()
}

/// An address (a MethodTable, a handle) as the JSON gives it (`"0x.."`).
fn addr_of(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// Our statistics (`dumpheap -stat --json`'s rows): MethodTable -> (count, size, name).
fn our_stats(r: &Value) -> Stats {
    rows_stats(&r["statistics"])
}

/// Rows `{"mt", "count", "total_size", "name"}` (dumpheap's `statistics`, objsize's `types`):
/// MethodTable -> (count, size, name).
fn rows_stats(rows: &Value) -> Stats {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                addr_of(&t["mt"]),
                (
                    t["count"].as_u64().unwrap(),
                    t["total_size"].as_u64().unwrap(),
                    t["name"].as_str().unwrap().to_owned(),
                ),
            )
        })
        .collect()
}

/// The entries with SOS's -live truth.
fn with_truth() -> Vec<(tests::Entry, BTreeMap<String, Vec<String>>)> {
    tests::names()
        .into_iter()
        .filter_map(|n| {
            let e = tests::entry(&n);
            let t = sos_live(&e)?;
            Some((e, t))
        })
        .collect()
}

/// Differences of per-type counts between ours and SOS's, and size mismatches beyond alignment.
fn compare(ours: &Stats, sos: &Stats) -> (Vec<String>, Vec<String>) {
    let mut counts = Vec::new();
    let mut sizes = Vec::new();
    let mts: std::collections::BTreeSet<u64> = ours.keys().chain(sos.keys()).copied().collect();
    for mt in mts {
        let o = ours.get(&mt).cloned().unwrap_or((0, 0, String::new()));
        let s = sos.get(&mt).cloned().unwrap_or((0, 0, String::new()));
        let name = if o.2.is_empty() { &s.2 } else { &o.2 };
        if o.0 != s.0 {
            counts.push(format!("{mt:#x} {name}: ours {} SOS {}", o.0, s.0));
        } else if !(o.1 >= s.1 && o.1 - s.1 < 8 * o.0.max(1)) {
            sizes.push(format!("{mt:#x} {name}: ours {} bytes SOS {}", o.1, s.1));
        }
    }
    (counts, sizes)
}

/// Per-type statistics of the objects `set` says are live (or dead), as `dumpheap -stat`'s.
fn stats_of(
    rt: &clrdata::Runtime<&dumpreader::Dump>,
    names: &clrdata::TypeNames,
    heap: &clrdata::model::heap::GcHeap,
    set: &std::sync::Arc<LiveSet>,
    live: bool,
) -> Stats {
    let q = HeapQuery {
        reach: Some(ReachFilter {
            set: set.clone(),
            live,
        }),
        ..HeapQuery::default()
    };
    let st = heapstat::heap_statistics::<_, ()>(rt, names, heap, &q, &|_| true, None).unwrap();
    st.types
        .into_iter()
        .map(|t| (t.mt, (t.count, t.total_size, t.name)))
        .collect()
}

/// `dumpheap -stat -live` and `-dead` against SOS's on the heap and hang dumps of .NET 8-11:
/// - on .NET 8 the same objects of every type, live and dead;
/// - on .NET 9+ SOS's live objects are ours, and ours beyond them are exactly what the
///   thread-statics roots alone keep alive: marking from our root set without them gives
///   SOS's live and dead counts for every type (ClrMD, which SOS's `-live` marks from, does
///   not report the ThreadLocalData arrays: root_set_is_clrmds in roots.rs; the GC scans them,
///   `ScanThreadStaticRoots` in threadstatics.cpp, so ours is the GC's set);
/// - free space: SOS counts it as dead objects of type Free, we count it apart (the same).
#[test]
fn dumpheap_live_and_dead_are_sos() {
    let (mut dumps, mut beyond_sos) = (0, 0u64);
    let mut families = std::collections::BTreeSet::new();
    for (e, truth) in with_truth() {
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let d = e.open();
        let rt = tests::discover(&d).unwrap();
        let names = clrdata::TypeNames::new();
        let heap = rt.gc_heap().unwrap();
        let without_tls = std::sync::Arc::new(
            live_set_with(&rt, &heap, &names, |r| {
                !matches!(r.source, RootSource::ThreadStatics { .. })
            })
            .unwrap(),
        );
        for (word, key, live) in [
            ("-live", "dumpheap -stat -live", true),
            ("-dead", "dumpheap -stat -dead", false),
        ] {
            let r = run(&s, &format!("dumpheap -stat {word} --json"));
            assert!(
                r["reachability"]["notes"].as_array().unwrap().is_empty(),
                "{}: {}",
                e.name,
                r["reachability"]
            );
            assert_eq!(r["reachability"]["only"], &word[1..], "{}", e.name);
            let (mut sos, total) = sos_stats(&truth[key]);
            // SOS counts free space as dead objects of type Free; we count it apart.
            let free = sos
                .iter()
                .find(|(_, v)| v.2 == "Free")
                .map(|(k, v)| (*k, v.clone()));
            if let Some((k, f)) = &free {
                sos.remove(k);
                assert!(!live, "{}: free space among SOS's live objects", e.name);
                assert_eq!(r["free_objects"].as_u64().unwrap(), f.0, "{}", e.name);
                assert_eq!(r["free_size"].as_u64().unwrap(), f.1, "{}", e.name);
            } else {
                assert_eq!(r["free_objects"].as_u64().unwrap(), 0, "{}", e.name);
            }
            let ours = our_stats(&r);
            assert_eq!(
                total.0,
                sos.values().map(|v| v.0).sum::<u64>() + free.as_ref().map_or(0, |f| f.1 .0),
                "{}: SOS's rows add up to its total",
                e.name
            );
            // Marking without the thread-statics roots: SOS's objects, type by type.
            let alike = stats_of(&rt, &names, &heap, &without_tls, live);
            let (counts, sizes) = compare(&alike, &sos);
            assert!(
                counts.is_empty() && sizes.is_empty(),
                "{} {word}: without the thread-statics roots, not SOS's:\n{}\n{}",
                e.name,
                counts.join("\n"),
                sizes.join("\n")
            );
            // Ours: SOS's plus what the thread-statics roots alone keep alive (none on 8).
            let (counts, sizes) = compare(&ours, &sos);
            assert!(sizes.is_empty(), "{} {word}: {sizes:?}", e.name);
            if e.family() == 8 {
                assert!(counts.is_empty(), "{} {word}: {counts:?}", e.name);
            }
            for (mt, o) in &ours {
                let a = alike.get(mt).map_or(0, |v| v.0);
                if live {
                    assert!(o.0 >= a, "{} {word}: {mt:#x}", e.name);
                    beyond_sos += o.0 - a;
                } else {
                    assert!(o.0 <= a, "{} {word}: {mt:#x}", e.name);
                }
            }
            eprintln!(
                "{} {word}: {} objects {} bytes (SOS: {} objects, free included); live set \
                 {} objects from {} roots in {} ms",
                e.name,
                r["total_objects"],
                r["total_size"],
                total.0,
                r["reachability"]["live_objects"],
                r["reachability"]["roots"],
                r["reachability"]["millis"]
            );
        }
        families.insert(e.family());
        dumps += 1;
    }
    eprintln!("dumpheap -live/-dead vs SOS: {dumps} dumps; {beyond_sos} live objects only the thread-statics roots keep alive");
    for f in [8, 9, 10, 11] {
        assert!(
            families.contains(&f),
            "no .NET {f} dump with SOS's -live truth"
        );
    }
}

/// `objsize` against SOS's `objsize -stat` (every object reachable from one object, each once,
/// dependent handles followed) for the heap and hang scenarios' objects (up to 8 per type):
/// the same objects of every type, sizes as SOS's up to alignment.
#[test]
fn objsize_is_sos() {
    let (mut dumps, mut objects) = (0, 0);
    let mut families = std::collections::BTreeSet::new();
    for (e, truth) in with_truth() {
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let mut here = 0;
        for (key, lines) in &truth {
            let Some(a) = key.strip_prefix("objsize -stat ") else {
                continue;
            };
            let (sos, total) = sos_stats(lines);
            let r = run(&s, &format!("objsize {a} --json"));
            assert!(
                r["errors"].as_array().unwrap().is_empty(),
                "{}: objsize {a}: {r}",
                e.name
            );
            let ours = rows_stats(&r["types"]);
            let (counts, sizes) = compare(&ours, &sos);
            assert!(
                counts.is_empty() && sizes.is_empty(),
                "{}: objsize {a}:\n{}\n{}",
                e.name,
                counts.join("\n"),
                sizes.join("\n")
            );
            assert_eq!(r["objects"].as_u64().unwrap(), total.0, "{}: {a}", e.name);
            here += 1;
        }
        if here > 0 {
            families.insert(e.family());
            dumps += 1;
            objects += here;
        }
    }
    eprintln!("objsize vs SOS: {dumps} dumps, {objects} objects");
    assert!(objects >= 100, "only {objects} objects");
    for f in [8, 9, 10, 11] {
        assert!(
            families.contains(&f),
            "no .NET {f} dump with SOS's objsize truth"
        );
    }
}

/// The live object graph built independently of clrdata::analysis::dominators: each live
/// object's references as ObjectReader::references reads them, a dependent handle's secondary
/// as a reference of its primary, and the objects the roots hold.
struct Graph {
    ret: clrdata::analysis::dominators::Retention,
    adj: Vec<Vec<usize>>,
    starts: Vec<usize>,
}

impl Graph {
    fn of(e: &tests::Entry) -> Graph {
        use clrdata::analysis::dominators::retention;
        use clrdata::model::objects::ObjectReader;
        let d = e.open();
        let rt = tests::discover(&d).unwrap();
        let names = clrdata::TypeNames::new();
        let heap = rt.gc_heap().unwrap();
        let ret = retention(&rt, &heap, &names).unwrap();
        assert!(ret.notes.is_empty(), "{}: {:?}", e.name, ret.notes);
        let n = ret.addresses.len();
        let reader = ObjectReader::new(&rt, &names);
        let roots = rt.roots(&heap, &names).unwrap();
        let idx = |a: u64| ret.addresses.binary_search(&a).ok();
        let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, &a) in ret.addresses.iter().enumerate() {
            for (_, t) in reader.references(a).unwrap() {
                if let Some(j) = idx(t) {
                    adj[i].push(j);
                }
            }
        }
        for &(p, s) in &roots.dependent {
            if let (Some(i), Some(j)) = (idx(p), idx(s)) {
                adj[i].push(j);
            }
        }
        let starts: Vec<usize> = roots.roots.iter().filter_map(|r| idx(r.object)).collect();
        Graph { ret, adj, starts }
    }

    /// Which objects the roots reach when object `x` is taken out of the graph.
    fn reached_without(&self, x: Option<usize>) -> Vec<bool> {
        let mut seen = vec![false; self.adj.len()];
        let mut stack: Vec<usize> = Vec::new();
        for &s in &self.starts {
            if Some(s) != x && !seen[s] {
                seen[s] = true;
                stack.push(s);
            }
        }
        while let Some(v) = stack.pop() {
            for &w in &self.adj[v] {
                if Some(w) != x && !seen[w] {
                    seen[w] = true;
                    stack.push(w);
                }
            }
        }
        seen
    }

    /// The bytes of the objects reached, by [`Graph::reached_without`].
    fn bytes(&self, seen: &[bool]) -> u64 {
        seen.iter()
            .zip(&self.ret.sizes)
            .filter(|(s, _)| **s)
            .map(|(_, z)| z)
            .sum()
    }
}

/// Retained sizes (the dominator tree, clrdata::analysis::dominators) against their
/// definition, computed here by brute force on the heap and hang dumps of .NET 8-11: the
/// retained size of X is the bytes no longer reachable from the roots when X is removed
/// ([`Graph`], built independently).
#[test]
fn retained_sizes_are_their_definition() {
    let mut checked = 0;
    for e in with_truth().into_iter().map(|x| x.0) {
        let t0 = std::time::Instant::now();
        let g = Graph::of(&e);
        let took = t0.elapsed();
        let ret = &g.ret;
        let n = ret.addresses.len();
        // Every live object is reached in the independent graph too.
        assert_eq!(
            g.bytes(&g.reached_without(None)),
            ret.live_bytes,
            "{}",
            e.name
        );
        for x in 0..n {
            assert_eq!(
                ret.retained[x],
                ret.live_bytes - g.bytes(&g.reached_without(Some(x))),
                "{}: retained size of {:#x}",
                e.name,
                ret.addresses[x]
            );
        }
        eprintln!(
            "{}: {n} live objects, retained sizes in {took:?}, each its definition",
            e.name
        );
        checked += 1;
    }
    assert!(checked >= 8, "{checked} dumps");
}

/// The retained sizes read in one heap walk (objects numbered by their live-set marks) equal
/// those read the way a damaged heap is (the walked objects numbered apart, read twice).
#[test]
fn retention_one_walk_is_the_two_walks() {
    use clrdata::analysis::dominators::{retention_of, retention_of_two_walks};
    let mut checked = 0;
    for e in with_truth().into_iter().map(|x| x.0) {
        let d = e.open();
        let rt = tests::discover(&d).unwrap();
        let names = clrdata::TypeNames::new();
        let heap = rt.gc_heap().unwrap();
        let set = clrdata::analysis::reach::live_set(&rt, &heap, &names).unwrap();
        let one = retention_of(&rt, &heap, &names, &set).unwrap();
        let two = retention_of_two_walks(&rt, &heap, &names, &set).unwrap();
        assert!(!one.addresses.is_empty(), "{}", e.name);
        assert_eq!(one.addresses, two.addresses, "{}", e.name);
        assert_eq!(one.mts, two.mts, "{}", e.name);
        assert_eq!(one.sizes, two.sizes, "{}", e.name);
        assert_eq!(one.retained, two.retained, "{}", e.name);
        assert_eq!(one.notes, two.notes, "{}", e.name);
        for i in 0..one.addresses.len() as u32 {
            assert_eq!(one.idom(i), two.idom(i), "{}: object {i}", e.name);
        }
        checked += 1;
    }
    assert!(checked >= 8, "{checked} dumps");
}

/// `dumpheap -stat -retained`'s column against its definition, by brute force ([`Graph`]):
/// a type's retained bytes are those of the objects that some live object of the type
/// dominates (object Y is dominated by X when the roots no longer reach Y without X), each
/// counted once; a type with no live object retains nothing.
#[test]
fn dumpheap_retained_column_is_its_definition() {
    let mut checked = 0;
    for e in with_truth().into_iter().map(|x| x.0) {
        let g = Graph::of(&e);
        let ret = &g.ret;
        let n = ret.addresses.len();
        let mut held: BTreeMap<u64, std::collections::BTreeSet<usize>> = BTreeMap::new();
        for x in 0..n {
            let seen = g.reached_without(Some(x));
            let set = held.entry(ret.mts[x]).or_default();
            set.extend((0..n).filter(|&y| !seen[y]));
        }
        let want: BTreeMap<u64, u64> = held
            .iter()
            .map(|(mt, s)| (*mt, s.iter().map(|&y| ret.sizes[y]).sum()))
            .collect();
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let r = run(&s, "dumpheap -stat -retained --json");
        let rows = r["statistics"].as_array().unwrap();
        assert!(!rows.is_empty(), "{}", e.name);
        for t in rows {
            let mt = addr_of(&t["mt"]);
            assert_eq!(
                t["retained"].as_u64(),
                Some(want.get(&mt).copied().unwrap_or(0)),
                "{}: {t}",
                e.name
            );
            checked += 1;
        }
        assert_eq!(
            r["retention"]["live_bytes"].as_u64(),
            Some(ret.live_bytes),
            "{}",
            e.name
        );
    }
    assert!(checked >= 100, "{checked} types");
}

/// `retained`: the objects with the largest retained sizes, in order, as the dominator tree
/// gives them; each type's retained bytes at least its objects' own and at most the live bytes.
#[test]
fn retained_command_lists_the_largest() {
    use clrdata::analysis::dominators::retention;
    for e in with_truth().into_iter().map(|x| x.0) {
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let r = run(&s, "retained -n 5 --json");
        let d = e.open();
        let rt = tests::discover(&d).unwrap();
        let names = clrdata::TypeNames::new();
        let heap = rt.gc_heap().unwrap();
        let ret = retention(&rt, &heap, &names).unwrap();
        let mut sizes = ret.retained.clone();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        let objs = r["objects"].as_array().unwrap();
        assert_eq!(objs.len(), 5, "{}", e.name);
        for (o, want) in objs.iter().zip(&sizes) {
            assert_eq!(o["retained"].as_u64().unwrap(), *want, "{}", e.name);
        }
        assert_eq!(
            r["live_bytes"].as_u64().unwrap(),
            ret.live_bytes,
            "{}",
            e.name
        );
        for t in r["types"].as_array().unwrap() {
            let (size, retained) = (t["size"].as_u64().unwrap(), t["retained"].as_u64().unwrap());
            assert!(
                size <= retained && retained <= ret.live_bytes,
                "{}: {t}",
                e.name
            );
        }
    }
}

/// `retained`'s `held_by` against what the heap scenario created: each large object the
/// program keeps only in a static (manifest `large_objects`, on the LOH and the POH) is held
/// through that static, found by type and the length the program gave it; each object the
/// program holds only by a strong or pinned handle (manifest `handles`, by the handle's
/// address) is held by that handle itself.
#[test]
fn retained_names_the_root_behind_each_object() {
    let mut checked = 0;
    for e in tests::readable() {
        let Some(large) = e.manifest["large_objects"].as_array() else {
            continue;
        };
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let r = run(&s, "retained -n 100000 --json");
        let objs = r["objects"].as_array().unwrap();
        assert_eq!(
            objs.len() as u64,
            r["live_objects"].as_u64().unwrap(),
            "{}",
            e.name
        );
        for lo in large {
            let (ty, len) = (lo["type"].as_str().unwrap(), lo["length"].as_u64().unwrap());
            // The object's size as the GC lays it out: header, MethodTable, length, elements.
            let elem = match ty {
                "System.Byte[]" => 1,
                "System.String" => 2,
                _ => 8,
            };
            let base = if ty == "System.String" { 22 } else { 24 };
            let size = (base + elem * len + 7) & !7;
            let found: Vec<&Value> = objs
                .iter()
                .filter(|o| o["name"] == ty && o["size"].as_u64() == Some(size))
                .collect();
            assert_eq!(found.len(), 1, "{}: {lo}", e.name);
            let h = &found[0]["held_by"];
            assert_eq!(
                h["static_field"].as_str(),
                lo["path"].as_str(),
                "{}: {lo}: {h}",
                e.name
            );
            checked += 1;
        }
        for hd in e.manifest["handles"].as_array().into_iter().flatten() {
            if !matches!(hd["kind"].as_str(), Some("normal" | "pinned")) || hd["alive"] != true {
                continue;
            }
            let ty = hd["target_type"].as_str().unwrap();
            // GCHandle.ToIntPtr tags a pinned handle with bit 0 (GCHandle.cs: `handle |= 1`
            // for GCHandleType.Pinned); the handle table's slot is the value without it.
            let handle = format!("{:#x}", addr_of(&hd["handle"]) & !1);
            let held = objs.iter().any(|o| {
                o["name"] == ty
                    && o["held_by"]["top"] == o["address"]
                    && o["held_by"]["roots"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|x| x["kind"] == "handle" && x["handle"] == handle.as_str())
            });
            assert!(held, "{}: no {ty} held by handle {hd}", e.name);
            checked += 1;
        }
        // Every object's top dominates it: following `dominator` from the object reaches it.
        let by_addr: std::collections::HashMap<&str, &Value> = objs
            .iter()
            .map(|o| (o["address"].as_str().unwrap(), o))
            .collect();
        for o in objs {
            let mut at = o;
            let mut steps = 1;
            while let Some(d) = at["dominator"].as_str() {
                at = by_addr[d];
                steps += 1;
            }
            assert_eq!(at["address"], o["held_by"]["top"], "{}: {o}", e.name);
            assert_eq!(
                steps,
                o["held_by"]["chain_length"].as_u64().unwrap(),
                "{}",
                e.name
            );
        }
    }
    assert!(checked >= 20, "{checked} objects checked");
}
