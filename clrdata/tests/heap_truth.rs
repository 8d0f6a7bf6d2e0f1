//! The runtime and GC heap layer against the corpus truth (dumps/<name>.dac.json, written by
//! the runtime's own DAC): globals, thread store, GC mode, segments and the census, exactly.

use clrdata::prelude::*;
use clrdata::{ClrError, GcMode};
use dumpreader::Dump;
use serde_json::Value;
use std::collections::BTreeMap;

const NET8: &[&str] = &[
    "hang",
    "deadlock",
    "heap",
    "crash",
    "threadpool",
    "servergc",
    "windows-hang",
];

fn hex(v: &Value) -> u64 {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("not a hex string: {v}"));
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("bad hex {s}"))
}

fn open(name: &str) -> (tests::Entry, Dump) {
    let e = tests::entry(name);
    let d = Dump::open_with(&e.dump_path(), &e.open_options())
        .unwrap_or_else(|err| panic!("{name}: {err}"));
    (e, d)
}

#[test]
fn globals_threads_and_gc_mode_match_the_dac() {
    for name in NET8 {
        let (e, d) = open(name);
        let rt = tests::discover(&d).unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!(rt.info.version, "8.0.4", "{name}: version");
        let ug = &e.dac["gc_heap"]["useful_globals"];
        let g = &rt.globals;
        assert_eq!(
            g.string_mt,
            hex(&ug["StringMethodTable"]),
            "{name}: String MT"
        );
        assert_eq!(
            g.object_mt,
            hex(&ug["ObjectMethodTable"]),
            "{name}: Object MT"
        );
        assert_eq!(g.free_mt, hex(&ug["FreeMethodTable"]), "{name}: Free MT");
        assert_eq!(
            g.exception_mt,
            hex(&ug["ExceptionMethodTable"]),
            "{name}: Exception MT"
        );
        assert_eq!(
            g.object_array_mt,
            hex(&ug["ArrayMethodTable"]),
            "{name}: Array MT"
        );

        let ts = rt.thread_store().unwrap();
        let dts = &e.dac["runtime"]["thread_store"];
        assert_eq!(
            ts.first_thread,
            hex(&dts["firstThread"]),
            "{name}: first thread"
        );
        assert_eq!(
            ts.finalizer_thread,
            hex(&dts["finalizerThread"]),
            "{name}: finalizer"
        );
        assert_eq!(
            ts.thread_count as i64,
            dts["threadCount"].as_i64().unwrap(),
            "{name}"
        );
        assert_eq!(
            ts.background_thread_count as i64,
            dts["backgroundThreadCount"].as_i64().unwrap(),
            "{name}"
        );
        assert_eq!(
            ts.unstarted_thread_count as i64,
            dts["unstartedThreadCount"].as_i64().unwrap()
        );
        assert_eq!(
            ts.pending_thread_count as i64,
            dts["pendingThreadCount"].as_i64().unwrap()
        );
        assert_eq!(
            ts.dead_thread_count as i64,
            dts["deadThreadCount"].as_i64().unwrap()
        );

        let threads = rt.threads().unwrap();
        let dthreads = e.dac["threads"].as_array().unwrap();
        assert_eq!(threads.len(), dthreads.len(), "{name}: thread count");
        for (t, dt) in threads.iter().zip(dthreads) {
            assert_eq!(t.address, hex(&dt["address"]), "{name}");
            assert_eq!(t.os_id, dt["osThreadId"].as_u64().unwrap(), "{name}: os id");
            assert_eq!(
                t.managed_id as u64,
                dt["corThreadId"].as_u64().unwrap(),
                "{name}"
            );
            assert_eq!(t.state as u64, hex(&dt["state_hex"]), "{name}: state");
            assert_eq!(t.frame, hex(&dt["pFrame"]), "{name}: frame");
            assert_eq!(t.alloc_ptr, hex(&dt["allocContextPtr"]), "{name}");
            assert_eq!(t.alloc_limit, hex(&dt["allocContextLimit"]), "{name}");
            assert_eq!(
                t.preemptive_gc_disabled as i64,
                dt["preemptiveGCDisabled"].as_i64().unwrap(),
                "{name}"
            );
        }

        let hd = &e.dac["gc_heap"]["GetGCHeapData"];
        let server = hd["bServerMode"].as_i64().unwrap() != 0;
        assert_eq!(rt.gc_mode() == GcMode::Server, server, "{name}: GC mode");
        let heap = rt.gc_heap().unwrap();
        assert_eq!(
            heap.heaps.len() as i64,
            hd["HeapCount"].as_i64().unwrap(),
            "{name}"
        );
        assert_eq!(
            heap.max_generation as i64,
            hd["g_max_generation"].as_i64().unwrap()
        );
        for (h, dh) in heap
            .heaps
            .iter()
            .zip(e.dac["gc_heap"]["heaps"].as_array().unwrap())
        {
            assert_eq!(h.address, hex(&dh["heapAddr"]), "{name}: heap address");
            assert_eq!(h.alloc_allocated, hex(&dh["alloc_allocated"]), "{name}");
            assert_eq!(
                h.ephemeral_heap_segment,
                hex(&dh["ephemeral_heap_segment"]),
                "{name}"
            );
            let dg = dh["generation_table_full"].as_array().unwrap();
            assert_eq!(h.generations.len(), dg.len(), "{name}: generations");
            for (g, dg) in h.generations.iter().zip(dg) {
                assert_eq!(g.start_segment, hex(&dg["start_segment"]), "{name}");
                assert_eq!(g.alloc_ptr, hex(&dg["allocContextPtr"]), "{name}");
                assert_eq!(g.alloc_limit, hex(&dg["allocContextLimit"]), "{name}");
            }
            assert_eq!(
                h.uses_regions,
                dh["uses_regions"].as_bool().unwrap(),
                "{name}"
            );
        }
        let gac = &e.dac["gc_heap"]["global_alloc_context"];
        let d = rt.memory();
        use dumpreader::Memory;
        assert_eq!(
            d.read_u64(g.global_alloc_context).unwrap(),
            hex(&gac["ptr"]),
            "{name}"
        );
        assert_eq!(
            d.read_u64(g.global_alloc_context + 8).unwrap(),
            hex(&gac["limit"])
        );
        // Contexts skipped: the same set as the DAC's.
        let ours: Vec<(u64, u64)> = heap
            .alloc_contexts
            .iter()
            .map(|c| (c.ptr, c.limit))
            .collect();
        let theirs: Vec<(u64, u64)> = e.dac["gc_heap"]["alloc_contexts_skipped"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (hex(&c["ptr"]), hex(&c["limit"])))
            .collect();
        assert_eq!(ours, theirs, "{name}: allocation contexts");
        // The card table and bounds.
        let dh0 = &e.dac["gc_heap"]["heaps"][0];
        assert_eq!(g.lowest_address, hex(&dh0["lowest_address"]), "{name}");
        assert_eq!(g.highest_address, hex(&dh0["highest_address"]), "{name}");
        assert_eq!(g.card_table, hex(&dh0["card_table"]), "{name}");
    }
}

#[test]
fn segments_and_census_equal_the_dac_exactly() {
    for name in NET8 {
        let (e, d) = open(name);
        let rt = tests::discover(&d).unwrap_or_else(|err| panic!("{name}: {err}"));
        let heap = rt.gc_heap().unwrap();
        let dsegs = e.dac["gc_heap"]["segments"].as_array().unwrap();
        assert_eq!(heap.segments.len(), dsegs.len(), "{name}: segment count");
        for (s, ds) in heap.segments.iter().zip(dsegs) {
            assert_eq!(s.address, hex(&ds["address"]), "{name}: segment address");
            assert_eq!(s.heap as u64, ds["heap"].as_u64().unwrap(), "{name}");
            assert_eq!(s.mem, hex(&ds["mem"]), "{name}: mem of {:#x}", s.address);
            assert_eq!(s.allocated, hex(&ds["allocated"]), "{name}");
            assert_eq!(
                s.walk_end,
                hex(&ds["walk_end"]),
                "{name}: walk end of {:#x}",
                s.address
            );
            assert_eq!(s.committed, hex(&ds["committed"]), "{name}");
            assert_eq!(s.reserved, hex(&ds["reserved"]), "{name}");
            assert_eq!(s.flags, hex(&ds["flags"]), "{name}");
            assert_eq!(s.next, hex(&ds["next"]), "{name}");
            assert_eq!(s.kind.name(), ds["kind"].as_str().unwrap(), "{name}: kind");
            assert_eq!(
                s.generation_list as u64,
                ds["generation_list"].as_u64().unwrap()
            );
            assert_eq!(
                s.is_ephemeral,
                ds["is_ephemeral_heap_segment"].as_bool().unwrap()
            );
        }

        let c = heap.census(&rt);
        assert!(
            c.errors.is_empty(),
            "{name}: walk errors {:?}",
            &c.errors[..c.errors.len().min(5)]
        );
        assert_eq!(c.skipped_bytes, 0);
        let hs = &e.dac["heap_stat"];
        assert_eq!(
            c.total_objects,
            hs["total_objects"].as_u64().unwrap(),
            "{name}: objects"
        );
        assert_eq!(
            c.total_size,
            hs["total_size"].as_u64().unwrap(),
            "{name}: size"
        );
        assert_eq!(
            c.free_objects,
            hs["free_objects"].as_u64().unwrap(),
            "{name}: free"
        );
        assert_eq!(
            c.free_size,
            hs["free_size"].as_u64().unwrap(),
            "{name}: free size"
        );
        for (s, ds) in c.segments.iter().zip(dsegs) {
            assert_eq!(
                s.objects,
                ds["objects"].as_u64().unwrap(),
                "{name}: {:#x}",
                s.address
            );
            assert_eq!(s.bytes, ds["object_bytes"].as_u64().unwrap(), "{name}");
        }
        let mut theirs_kind = BTreeMap::new();
        for (k, v) in hs["by_segment_kind"].as_object().unwrap() {
            theirs_kind.insert(
                k.clone(),
                (
                    v["segments"].as_u64().unwrap(),
                    v["objects"].as_u64().unwrap(),
                    v["bytes"].as_u64().unwrap(),
                ),
            );
        }
        let ours_kind: BTreeMap<String, (u64, u64, u64)> = c
            .by_segment_kind
            .iter()
            .map(|(k, v)| (k.clone(), (v.segments, v.objects, v.bytes)))
            .collect();
        assert_eq!(ours_kind, theirs_kind, "{name}: by segment kind");

        let theirs: BTreeMap<u64, (u64, u64)> = hs["types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    hex(&t["mt"]),
                    (
                        t["count"].as_u64().unwrap(),
                        t["total_size"].as_u64().unwrap(),
                    ),
                )
            })
            .collect();
        let ours: BTreeMap<u64, (u64, u64)> = c
            .types
            .iter()
            .map(|t| (t.mt, (t.count, t.total_size)))
            .collect();
        for (mt, v) in &theirs {
            assert_eq!(ours.get(mt), Some(v), "{name}: MT {mt:#x} (count, size)");
        }
        assert_eq!(ours.len(), theirs.len(), "{name}: distinct MTs");

        // The sequential iterator agrees with the parallel census.
        let mut it = heap.objects(&rt);
        let (mut n, mut bytes) = (0u64, 0u64);
        for o in it.by_ref() {
            if !o.is_free {
                n += 1;
                bytes += o.size;
            }
        }
        assert!(it.errors().is_empty());
        assert_eq!(
            (n, bytes),
            (c.total_objects, c.total_size),
            "{name}: iterator"
        );
    }
}

#[test]
fn netcore31_is_refused_by_name() {
    let (_, d) = open("netcore31");
    let info = clrdata::find_runtime(&d).expect("the 3.1 runtime is found");
    assert_eq!(info.version, "3.1.23");
    let err = tests::discover(&d).expect_err("3.1 must be refused");
    match &err {
        ClrError::UnsupportedRuntime {
            found,
            module,
            base,
        } => {
            assert_eq!(found, ".NET Core 3.1.23");
            assert_eq!(module, "libcoreclr.so");
            assert_eq!(*base, info.base);
        }
        other => panic!("wrong error: {other}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("3.1.23"), "{msg}");
    assert_eq!(
        msg,
        format!(
            "found .NET Core 3.1.23 (libcoreclr.so at {:#x}); this build reads .NET 8, 9, 10 and 11",
            info.base
        )
    );
}

#[test]
fn version_sources() {
    let (_, d) = open("hang");
    let info = clrdata::find_runtime(&d).unwrap();
    assert_eq!(info.version, "8.0.4");
    // createdump did not save the page of libcoreclr holding its sccsid string (the copies in
    // the dump belong to the JIT's double-mapped memory): the version comes from the path.
    assert_eq!(
        info.version_source,
        clrdata::discovery::runtime::VersionSource::ModulePath
    );
    let (_, d) = open("windows-hang");
    let info = clrdata::find_runtime(&d).unwrap();
    assert_eq!(info.version, "8.0.4");
    assert_eq!(info.module_name, "coreclr.dll");
    assert_eq!(
        info.version_source,
        clrdata::discovery::runtime::VersionSource::VersionResource
    );
}

/// With no image file anywhere (a dump analysed far from the machine that made it), the
/// runtime is still found — g_dacTable located by its contents when the symbol table is not
/// in the dump — and the census still equals the DAC's.
#[test]
fn the_runtime_and_census_need_no_image_files() {
    let bare = dumpreader::OpenOptions {
        recorded_paths: false,
        ..Default::default()
    };
    let mut scanned = 0;
    for name in NET8 {
        let e = tests::entry(name);
        let d = Dump::open_with(&e.dump_path(), &bare).unwrap();
        let rt_mod = d.modules().iter().find(|m| {
            let n = m.name().to_ascii_lowercase();
            n == "libcoreclr.so" || n == "coreclr.dll"
        });
        if rt_mod.is_some_and(|m| d.find_export(m, "g_dacTable").is_none()) {
            scanned += 1;
        }
        let rt =
            tests::discover(&d).unwrap_or_else(|err| panic!("{name} without image files: {err}"));
        let ug = &e.dac["gc_heap"]["useful_globals"];
        assert_eq!(
            rt.globals.string_mt,
            hex(&ug["StringMethodTable"]),
            "{name}"
        );
        assert_eq!(rt.globals.free_mt, hex(&ug["FreeMethodTable"]), "{name}");
        let census = rt.gc_heap().unwrap().census(&rt);
        assert_eq!(
            census.total_objects,
            e.dac["heap_stat"]["total_objects"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            census.total_size,
            e.dac["heap_stat"]["total_size"].as_u64().unwrap(),
            "{name}"
        );
    }
    assert!(scanned > 0, "no dump exercised the search for g_dacTable");
}
