//! `eeheap -loader` (the loader heaps: clrdata::model::loaderheap) against two truths:
//!
//! - SOS's `eeheap -loader` (`dumps/<name>.sos-heapnear.txt`, dotnet-dump 10.0.750501 with each
//!   build's own DAC: 8.0.33, 9.0.22, 10.0.14, 11.0.0, server GC; and `dumps/<name>.sos-loader.txt`
//!   on the seven 8.0.4 dumps, SOS given the 8.0.4 DAC): every line equal, but for
//!   one column. SOS's `LoaderAllocator:` rows print the domain's own address (ClrMD's
//!   `ClrAppDomain.LoaderAllocator` returns `AppDomainInfo.Address`, not the
//!   `GetDomainLoaderAllocator` answer it stores beside it): the test checks that SOS's value
//!   is the domain's address, and that dumpshell's is the LoaderAllocator the DAC's
//!   GetDomainLoaderAllocator gives (`<name>.loaderheaps.dac.json`). The committed sizes
//!   (`(reserved:committed)`, "wasted") are SOS's own measure of the dump's memory (whole pages
//!   readable from a block's start) and are compared exactly.
//! - the DAC itself (`dumps/<name>.loaderheaps.dac.json`, dumps/tools/dacloaderheaps.py: every
//!   Linux dump of 8.0.4, 8.0.33, 9.0.22, 10.0.11, 10.0.14 and 11.0.0 the DAC could host): the
//!   domains and their LoaderAllocator, every heap's name, address and blocks (address,
//!   reserved size, the current one) in the DAC's order, and the JIT manager's code heaps.
//!   Where the DAC could not read the heaps (createdump --triage: GetLoaderAllocatorHeaps fails
//!   with CORDBG_E_READVIRTUAL_FAILURE) dumpshell must say a heap could not be read. Also the
//!   two Windows dumps (8.0.4, 10.0.14), the Windows DAC hosted under wine
//!   (dumps/windows/dacprobe.cpp --loader-heaps); and every module's LoaderAllocator and thunk
//!   heap (GetModuleData): none of its own, as dumpshell (and SOS, on these dumps) lists none.

use clrdata::model::loaderheap::{self, CodeHeapKind, DomainKind};
use serde_json::Value;

fn hexv(v: &Value) -> u64 {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("not a hex string: {v}"));
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

/// The DAC's truth of an entry, checked to belong to the committed dump.
fn dac_truth(e: &tests::Entry) -> Option<Value> {
    let p = tests::dumps_dir().join(format!("{}.loaderheaps.dac.json", e.name));
    let text = std::fs::read_to_string(p).ok()?;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["dump_sha256"], e.dac["dump_file"]["sha256"],
        "{}.loaderheaps.dac.json was written for another dump: regenerate it",
        e.name
    );
    Some(v)
}

/// A heap's blocks against the DAC's TraverseLoaderHeap of it (`t["blocks"]`: address, reserved
/// size, whether current), in order.
fn assert_blocks_are_the_dacs(ours: &[loaderheap::HeapBlock], t: &Value, what: &str) {
    let theirs: Vec<(u64, u64, bool)> = t["blocks"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no blocks in the DAC's truth"))
        .iter()
        .map(|b| {
            (
                hexv(&b["address"]),
                b["size"].as_u64().unwrap(),
                b["current"].as_bool().unwrap(),
            )
        })
        .collect();
    let mine: Vec<(u64, u64, bool)> = ours
        .iter()
        .map(|b| (b.address, b.reserved, b.current))
        .collect();
    assert_eq!(mine, theirs, "{what}");
}

fn lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with("# ") && !l.trim().is_empty())
        .map(|l| l.trim_end().to_owned())
        .collect()
}

#[test]
fn eeheap_loader_is_sos() {
    let mut checked = 0;
    let truths = tests::sos::dumps_with("sos-heapnear")
        .into_iter()
        .chain(tests::sos::dumps_with("sos-loader"));
    for (e, secs) in truths {
        let Some((_, sos)) = secs.iter().find(|(c, _)| c == "eeheap -loader") else {
            continue;
        };
        let dac = dac_truth(&e).unwrap_or_else(|| panic!("{}: no loaderheaps.dac.json", e.name));
        let s = commands::Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let (out, _) = commands::execute(&s, "eeheap -loader")
            .unwrap_or_else(|err| panic!("{}: {err}", e.name))
            .unwrap();
        let (ours, sos) = (lines(&out.text), lines(sos));
        assert_eq!(
            ours.len(),
            sos.len(),
            "{}\n{}\n---\n{}",
            e.name,
            out.text,
            sos.join("\n")
        );
        let mut domain: Option<u64> = None;
        let mut domains = dac["domains"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| hexv(&d["address"]) != 0);
        for (o, t) in ours.iter().zip(&sos) {
            if let Some(a) = t.strip_prefix("LoaderAllocator:") {
                let a = u64::from_str_radix(a.trim(), 16).unwrap();
                assert_eq!(Some(a), domain, "{}: SOS's LoaderAllocator row", e.name);
                let d = domains.next().unwrap();
                assert_eq!(hexv(&d["address"]), a, "{}", e.name);
                let la = hexv(&d["loader_allocator"]);
                assert_eq!(o, &format!("LoaderAllocator:      {la:012x}"), "{}", e.name);
                continue;
            }
            if t.starts_with("System Domain:") || t.starts_with("Domain ") {
                domain = t
                    .rsplit(' ')
                    .next()
                    .and_then(|a| u64::from_str_radix(a, 16).ok());
            }
            assert_eq!(o, t, "{}\n--- ours:\n{}", e.name, out.text);
        }
        checked += 1;
    }
    assert!(checked >= 16, "only {checked} eeheap -loader truths");
}

#[test]
fn loader_heaps_are_the_dacs() {
    let mut checked = 0;
    let mut unreadable = 0;
    let mut modules_checked = 0;
    for e in tests::all() {
        let Some(dac) = dac_truth(&e) else {
            continue;
        };
        let rt = tests::discover(e.open()).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let l = loaderheap::loader_heaps(&rt).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let dac_domains: Vec<&Value> = dac["domains"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| hexv(&d["address"]) != 0)
            .collect();
        assert_eq!(l.domains.len(), dac_domains.len(), "{}", e.name);
        for (ours, d) in l.domains.iter().zip(&dac_domains) {
            let kind = if d["kind"] == "system" {
                DomainKind::System
            } else {
                DomainKind::App
            };
            assert_eq!(ours.kind, kind, "{}", e.name);
            assert_eq!(ours.address, hexv(&d["address"]), "{}", e.name);
            assert_eq!(
                ours.loader_allocator,
                hexv(&d["loader_allocator"]),
                "{}",
                e.name
            );
            if d["heaps_hr"] != "0x00000000" {
                // The DAC could not read them (a triage dump): dumpshell says so.
                assert!(
                    ours.heaps.iter().any(|h| h.error.is_some()),
                    "{}: the DAC could not read the heaps ({}), dumpshell read them all",
                    e.name,
                    d["heaps_hr"]
                );
                unreadable += 1;
                continue;
            }
            let dh = d["heaps"].as_array().unwrap();
            assert_eq!(ours.heaps.len(), dh.len(), "{}: heap count", e.name);
            for (h, t) in ours.heaps.iter().zip(dh) {
                assert_eq!(h.name.dac_name(), t["name"], "{}", e.name);
                assert_eq!(h.address, hexv(&t["address"]), "{} {:?}", e.name, h.name);
                assert!(h.error.is_none(), "{} {:?}: {:?}", e.name, h.name, h.error);
                assert_blocks_are_the_dacs(&h.blocks, t, &format!("{} {:?}", e.name, h.name));
            }
        }
        // Modules with heaps of their own (SOS's "Module Thunk heaps" and, for a collectible
        // assembly's LoaderAllocator, "Module LoaderAllocators"): dumpshell lists none, so the
        // DAC must report none (no corpus dump has a thunk heap or a collectible assembly).
        let app_la = dac_domains
            .iter()
            .rfind(|d| d["kind"] == "app")
            .map(|d| hexv(&d["loader_allocator"]));
        let mut modules = 0;
        let dac_modules = dac["modules"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: no modules in the DAC's truth: regenerate it", e.name));
        for m in dac_modules {
            if m.get("error").is_some() {
                continue; // (a gcore core without its images: GetModuleData fails)
            }
            assert_eq!(
                hexv(&m["thunk_heap"]),
                0,
                "{}: module {} has a thunk heap",
                e.name,
                m["module"]
            );
            assert_eq!(
                Some(hexv(&m["loader_allocator"])),
                app_la,
                "{}: module {} has a LoaderAllocator of its own",
                e.name,
                m["module"]
            );
            modules += 1;
        }
        modules_checked += modules;
        let jm = &dac["jit_managers"][0];
        assert_eq!(l.jit_manager.address, hexv(&jm["address"]), "{}", e.name);
        assert!(
            l.jit_manager.errors.is_empty(),
            "{}: {:?}",
            e.name,
            l.jit_manager.errors
        );
        let dh = jm["code_heaps"].as_array().unwrap();
        assert_eq!(
            l.jit_manager.heaps.len(),
            dh.len(),
            "{}: code heaps",
            e.name
        );
        for (h, t) in l.jit_manager.heaps.iter().zip(dh) {
            match h.kind {
                CodeHeapKind::LoaderCodeHeap => {
                    assert_eq!(t["type"], "loader", "{}", e.name);
                    assert_blocks_are_the_dacs(
                        &h.blocks,
                        t,
                        &format!("{} LoaderCodeHeap {:#x}", e.name, h.address),
                    );
                }
                CodeHeapKind::HostCodeHeap => {
                    assert_eq!(t["type"], "host", "{}", e.name);
                    let b = &h.blocks[0];
                    assert_eq!(b.address, hexv(&t["base"]), "{}", e.name);
                    assert_eq!(b.address + b.reserved, hexv(&t["current"]), "{}", e.name);
                }
            }
        }
        checked += 1;
    }
    assert!(
        checked >= 54,
        "only {checked} dumps with the DAC's loader heaps"
    );
    assert!(
        modules_checked >= 750,
        "only {modules_checked} modules' LoaderAllocator and thunk heap checked"
    );
    assert!(
        unreadable >= 2,
        "the triage dumps' unreadable heaps were not checked"
    );
}
