//! Heap commands on the corpus against the truths: `dumpheap` equals the runtime DAC's census,
//! and finds what the scenario programs say they made.

use commands::Session;
use serde_json::Value;
use std::collections::BTreeMap;

fn run(s: &Session, line: &str) -> Value {
    let (out, _) = commands::execute(s, line)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .unwrap();
    out.json_document()["result"].clone()
}

fn session(e: &tests::Entry) -> Session {
    Session::open_with(&e.dump_path(), &e.open_options()).unwrap()
}

#[test]
fn dumpheap_stat_equals_the_dac_census_on_every_net8_dump() {
    for e in tests::readable() {
        let s = session(&e);
        // SOS's spelling (one dash) and ours give the same result.
        let r = run(&s, "dumpheap -stat");
        assert_eq!(r, run(&s, "dumpheap --stat"), "{}", e.name);
        let ours: BTreeMap<String, (String, u64, u64)> = r["statistics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["mt"].as_str().unwrap().to_owned(),
                    (
                        t["name"].as_str().unwrap().to_owned(),
                        t["count"].as_u64().unwrap(),
                        t["total_size"].as_u64().unwrap(),
                    ),
                )
            })
            .collect();
        let hs = &e.dac["heap_stat"];
        let dac: BTreeMap<String, (String, u64, u64)> = hs["types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["mt"].as_str().unwrap().to_owned(),
                    (
                        // where the DAC cannot name a type (Reflection.Emit), the program's
                        // own record of it
                        e.census_type_name(
                            u64::from_str_radix(
                                t["mt"].as_str().unwrap().trim_start_matches("0x"),
                                16,
                            )
                            .unwrap(),
                            t["type"].as_str().unwrap(),
                        ),
                        t["count"].as_u64().unwrap(),
                        t["total_size"].as_u64().unwrap(),
                    ),
                )
            })
            .collect();
        assert_eq!(ours, dac, "{}: dumpheap -stat vs the DAC census", e.name);
        assert_eq!(r["total_objects"], hs["total_objects"], "{}", e.name);
        assert_eq!(r["total_size"], hs["total_size"], "{}", e.name);
        assert_eq!(r["free_objects"], hs["free_objects"], "{}", e.name);
        assert_eq!(r["free_size"], hs["free_size"], "{}", e.name);
        let frozen = &hs["by_segment_kind"]["frozen"];
        assert_eq!(r["frozen_objects"], frozen["objects"], "{}", e.name);
        assert_eq!(r["frozen_size"], frozen["bytes"], "{}", e.name);
        assert_eq!(
            r["errors"].as_array().unwrap().len(),
            0,
            "{}: walk errors {}",
            e.name,
            r["errors"]
        );
    }
}

#[test]
fn dumpheap_listing_counts_every_object_the_dac_counted() {
    for name in ["hang", "windows-hang"] {
        let e = tests::entry(name);
        let r = run(&session(&e), "dumpheap");
        let listed = r["objects"].as_array().unwrap();
        assert_eq!(
            listed.len() as u64,
            e.dac["heap_stat"]["total_objects"].as_u64().unwrap(),
            "{name}"
        );
        let bytes: u64 = listed.iter().map(|o| o["size"].as_u64().unwrap()).sum();
        assert_eq!(
            bytes,
            e.dac["heap_stat"]["total_size"].as_u64().unwrap(),
            "{name}"
        );
    }
}

#[test]
fn dumpheap_type_and_mt_find_the_manifests_objects() {
    let mut checked = 0;
    for e in tests::readable() {
        let s = session(&e);
        for t in e.manifest["types"].as_array().into_iter().flatten() {
            let name = t["dac_name"].as_str().or(t["name"].as_str()).unwrap();
            let want = t["count"].as_u64().unwrap();
            let r = run(&s, &format!("dumpheap -type '{name}'"));
            // -type matches by substring: the exact name's row holds the program's objects.
            let row = r["statistics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["name"] == name);
            let got = row.map_or(0, |x| x["count"].as_u64().unwrap());
            assert_eq!(got, want, "{}: dumpheap -type {name}", e.name);
            if let Some(row) = row {
                let by_mt = run(&s, &format!("dumpheap -mt {}", row["mt"].as_str().unwrap()));
                assert_eq!(
                    by_mt["objects"].as_array().unwrap().len() as u64,
                    want,
                    "{}: -mt of {name}",
                    e.name
                );
                let short = commands::execute(
                    &s,
                    &format!("dumpheap -mt {} -short", row["mt"].as_str().unwrap()),
                )
                .unwrap()
                .unwrap()
                .0
                .text;
                assert_eq!(short.lines().count() as u64, want);
            }
            checked += 1;
        }
    }
    assert!(checked > 40, "{checked}");
}

#[test]
fn dumpheap_strings_shows_the_strings_the_program_made() {
    let e = tests::entry("heap");
    let r = run(&session(&e), "dumpheap -strings");
    let values: Vec<&str> = r["strings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["value"].as_str().unwrap())
        .collect();
    let mut checked = 0;
    for v in e.manifest["values"].as_array().unwrap() {
        if v["type"] == "System.String" {
            if let Some(want) = v["value"].as_str().filter(|w| w.chars().count() < 1024) {
                assert!(
                    values.contains(&want),
                    "string {want:?} not found by dumpheap -strings"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 5, "{checked}");
}

#[test]
fn min_max_filter_by_size_and_unsupported_runtimes_are_named() {
    let e = tests::entry("heap");
    let s = session(&e);
    let big = run(&s, "dumpheap -min 85000");
    assert!(big["objects"]
        .as_array()
        .unwrap()
        .iter()
        .all(|o| o["size"].as_u64().unwrap() >= 85000));
    assert!(
        big["objects"].as_array().unwrap().len() >= 3,
        "the scenario made three LOH objects"
    );
    let small = run(&s, "dumpheap -max 24 -stat");
    assert!(small["statistics"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["total_size"].as_u64().unwrap() == 24 * t["count"].as_u64().unwrap()));
    let s31 = session(&tests::entry("netcore31"));
    let err = commands::execute(&s31, "dumpheap -stat").expect_err("3.1 is not read");
    assert!(err.to_string().contains(".NET Core 3.1.23"), "{err}");
    // Native commands still work on it.
    assert!(commands::execute(&s31, "threads").is_ok());
}

#[test]
fn eeversion_and_eeheap_match_the_dac() {
    for e in tests::readable() {
        let s = session(&e);
        let v = run(&s, "eeversion");
        assert_eq!(
            v["version"].as_str(),
            Some(e.runtime_version()),
            "{}",
            e.name
        );
        let want_gc = e.manifest["runtime"]["gc"].as_str().unwrap();
        assert_eq!(v["gc"], want_gc, "{}", e.name);
        let h = run(&s, "eeheap -gc");
        let segs: Vec<&Value> = h["heaps"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|h| h["segments"].as_array().unwrap())
            .collect();
        let dac = e.dac["gc_heap"]["segments"].as_array().unwrap();
        assert_eq!(segs.len(), dac.len(), "{}: segment count", e.name);
        for d in dac {
            let ours = segs
                .iter()
                .find(|s| s["address"] == d["address"])
                .unwrap_or_else(|| panic!("{}: segment {}", e.name, d["address"]));
            assert_eq!(ours["begin"], d["mem"]);
            assert_eq!(ours["allocated"], d["walk_end"]);
            assert_eq!(ours["kind"], d["kind"]);
        }
        assert_eq!(
            v["gc_heaps"].as_u64(),
            e.manifest["runtime"]["gc_heap_count"].as_u64(),
            "{}",
            e.name
        );
    }
}

#[test]
fn eeversion_names_a_runtime_it_cannot_read() {
    // .NET Core 3.1 is found and refused by every CLR command; eeversion still gives its
    // version (the manifest's) and says why the rest is not read.
    let e = tests::entry("netcore31");
    let v = run(&session(&e), "eeversion");
    assert_eq!(v["version"], e.runtime_version(), "{v}");
    assert!(v["gc"].is_null(), "{v}");
    let why = v["gc_error"].as_str().unwrap();
    assert!(
        why.contains("this build reads .NET 8, 9, 10 and 11"),
        "{why}"
    );
}
