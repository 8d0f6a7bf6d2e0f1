//! .NET 9 and 10, read through the runtime's contract descriptor: for every corpus dump whose
//! manifest says runtime 9.x or 10.x, the runtime, its threads, the GC heap's segments and the
//! `dumpheap -stat` census (count and size per MethodTable, free and frozen accounted, type
//! names) equal the DAC's truth (`dumps/<name>.dac.json`) exactly; capabilities not verified on
//! these families are refused by name.
//!
//! Environment: `DUMPSHELL_SKIP_DUMPS=a,*-net10h` leaves corpus dumps out (a name, or `*` and
//! a suffix) (development against one
//! patch while a held-out patch waits); `DUMPSHELL_EXTRA_DUMPS=/x.dmp=/x.dac.json,...` adds
//! dumps outside the corpus.

use clrdata::prelude::*;
use clrdata::{ClrError, TypeNames};
use dumpreader::Dump;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn hex(v: &Value) -> u64 {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("not a hex string: {v}"));
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("bad hex {s}"))
}

/// (name, dump path, expected version or "", DAC truth, what the dump kind leaves out, the
/// options to open it with).
fn dumps() -> Vec<(
    String,
    PathBuf,
    String,
    Value,
    String,
    dumpreader::OpenOptions,
)> {
    let skip: Vec<String> = std::env::var("DUMPSHELL_SKIP_DUMPS")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let dir = tests::dumps_dir();
    let mut out = Vec::new();
    for name in tests::names() {
        let skipped = skip.iter().any(|s| match s.strip_prefix('*') {
            Some(suffix) => name.ends_with(suffix),
            None => *s == name,
        });
        if skipped {
            eprintln!("census_descriptor: {name} skipped (DUMPSHELL_SKIP_DUMPS)");
            continue;
        }
        // A dump still being produced has no truths yet: not a corpus entry.
        if !dir.join(format!("{name}.manifest.json")).is_file()
            || !dir.join(format!("{name}.dac.json")).is_file()
        {
            eprintln!("census_descriptor: {name} has no manifest or DAC truth yet; left out");
            continue;
        }
        let e = tests::entry(&name);
        let v = e.runtime_version().to_owned();
        // Dumps whose managed images' pages are absent by their kind: a single-file bundle,
        // or gcore (which leaves out unmodified file mappings).
        let shape = if e.manifest["dump"]["kind"].as_str() == Some("triage") {
            "triage".to_owned()
        } else if e.manifest["app"]["shape"].as_str() == Some("single-file")
            || e.manifest["dump"]["kind"].as_str() == Some("gcore")
        {
            "images-not-in-dump".to_owned()
        } else {
            String::new()
        };
        if v.starts_with("9.") || v.starts_with("10.") || v.starts_with("11.") {
            let opts = e.open_options();
            out.push((name, e.dump_path(), v, e.dac, shape, opts));
        }
    }
    for spec in std::env::var("DUMPSHELL_EXTRA_DUMPS")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
    {
        let (dump, dac) = spec
            .split_once('=')
            .unwrap_or_else(|| panic!("DUMPSHELL_EXTRA_DUMPS: {spec}: expected dump=dac.json"));
        let text = std::fs::read_to_string(dac).unwrap_or_else(|e| panic!("{dac}: {e}"));
        out.push((
            dump.to_owned(),
            PathBuf::from(dump),
            String::new(),
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{dac}: {e}")),
            String::new(),
            tests::open_options(),
        ));
    }
    if out.is_empty() {
        eprintln!(
            "\n*** census_descriptor: NO .NET 9, 10 or 11 corpus dump found in {}: nothing was \
             checked ***\n",
            dir.display()
        );
    }
    out
}

/// The dump opened with the harness's options for its runtime (its runtime pack's folder,
/// plus the folder the DAC truth was made with: the image files the stack walk may want; the
/// contract descriptor createdump does not save comes from the build index, else from the
/// runtime image file whose build id matches); in the clean room, nothing but the dump.
fn open(path: &std::path::Path, mut opts: dumpreader::OpenOptions, dac: &Value) -> Dump {
    if tests::clean_room() {
        // No file at all (Entry::open_options is bare there too).
    } else if let Some(p) = dac["runtime"]["runtime_path"].as_str() {
        if let Some(dir) = std::path::Path::new(p).parent() {
            opts.image_search_path.push(dir.to_path_buf());
        }
    }
    Dump::open_with(path, &opts).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

#[test]
fn runtime_threads_and_census_equal_the_dac_exactly() {
    let (mut checked, mut unchecked) = (0, 0);
    let all = dumps();
    let total = all.len();
    for (name, path, version, dac, shape, opts) in all {
        let d = open(&path, opts, &dac);
        let rt = match tests::discover(&d) {
            Ok(rt) => rt,
            // A build the index does not hold, whose runtime file is not here.
            Err(err @ ClrError::NoLayout { .. })
                if std::env::var_os("DUMPSHELL_REQUIRE_FRAMEWORKS").is_none()
                    && !tests::clean_room() =>
            {
                eprintln!("\n*** census_descriptor: {name}: NOT CHECKED: {err} ***\n");
                unchecked += 1;
                continue;
            }
            Err(err) => panic!("{name}: {err}"),
        };
        if !version.is_empty() {
            assert_eq!(rt.info.version, version, "{name}: version");
        }
        assert!(
            rt.descriptor().is_some(),
            "{name}: read without its descriptor"
        );

        // Globals.
        let ug = &dac["gc_heap"]["useful_globals"];
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
            "{name}: Object[] MT"
        );
        let server = dac["gc_heap"]["GetGCHeapData"]["bServerMode"]
            .as_u64()
            .unwrap()
            != 0;
        assert_eq!(
            rt.gc_mode() == clrdata::GcMode::Server,
            server,
            "{name}: GC mode (g_heap_type)"
        );

        // Threads (their allocation contexts bound the heap walk).
        let ts = rt.thread_store().unwrap();
        let dts = &dac["runtime"]["thread_store"];
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
        for (ours, key) in [
            (ts.thread_count, "threadCount"),
            (ts.unstarted_thread_count, "unstartedThreadCount"),
            (ts.background_thread_count, "backgroundThreadCount"),
            (ts.pending_thread_count, "pendingThreadCount"),
            (ts.dead_thread_count, "deadThreadCount"),
        ] {
            assert_eq!(ours as i64, dts[key].as_i64().unwrap(), "{name}: {key}");
        }
        let threads = rt.threads().unwrap();
        let dthreads = dac["threads"].as_array().unwrap();
        assert_eq!(threads.len(), dthreads.len(), "{name}: thread count");
        for (t, dt) in threads.iter().zip(dthreads) {
            assert_eq!(t.address, hex(&dt["address"]), "{name}: thread");
            assert_eq!(t.os_id, dt["osThreadId"].as_u64().unwrap(), "{name}: os id");
            assert_eq!(
                t.managed_id as u64,
                dt["corThreadId"].as_u64().unwrap(),
                "{name}"
            );
            assert_eq!(t.state as u64, hex(&dt["state_hex"]), "{name}: state");
            assert_eq!(t.frame, hex(&dt["pFrame"]), "{name}: frame");
            assert_eq!(
                t.alloc_ptr,
                hex(&dt["allocContextPtr"]),
                "{name}: alloc ptr"
            );
            assert_eq!(
                t.alloc_limit,
                hex(&dt["allocContextLimit"]),
                "{name}: alloc limit"
            );
            assert_eq!(
                t.preemptive_gc_disabled as i64,
                dt["preemptiveGCDisabled"].as_i64().unwrap(),
                "{name}: preemptive"
            );
        }

        // The GC: global allocation context, segments.
        let heap = match rt.gc_heap() {
            Ok(h) => h,
            // A triage dump holds no heap: the DAC finds no object either; we refuse by
            // naming what is missing.
            Err(ClrError::Read { what, addr }) if shape == "triage" => {
                assert_eq!(
                    dac["heap_stat"]["total_objects"].as_u64(),
                    Some(0),
                    "{name}"
                );
                eprintln!(
                    "\n*** census_descriptor: {name}: a triage dump: no heap ({what} at \
                     {addr:#x} not in the dump); the DAC counts 0 objects; census NOT CHECKED ***\n"
                );
                checked += 1;
                continue;
            }
            Err(e) => panic!("{name}: {e}"),
        };
        let dgac = &dac["gc_heap"]["global_alloc_context"];
        let gac = rt.globals.global_alloc_context + rt.layout.global_alloc_context_offset;
        let m = rt.memory();
        use dumpreader::Memory;
        assert_eq!(
            (m.read_u64(gac).unwrap(), m.read_u64(gac + 8).unwrap()),
            (hex(&dgac["ptr"]), hex(&dgac["limit"])),
            "{name}: g_global_alloc_context"
        );
        let dheaps = dac["gc_heap"]["heaps"].as_array().unwrap();
        assert_eq!(heap.heaps.len(), dheaps.len(), "{name}: heaps");
        for (h, dh) in heap.heaps.iter().zip(dheaps) {
            assert_eq!(h.alloc_allocated, hex(&dh["alloc_allocated"]), "{name}");
            assert_eq!(
                h.ephemeral_heap_segment,
                hex(&dh["ephemeral_heap_segment"]),
                "{name}"
            );
            let dgens = dh["generation_table_full"].as_array().unwrap();
            assert_eq!(h.generations.len(), dgens.len(), "{name}: generations");
            for (gen, dg) in h.generations.iter().zip(dgens) {
                assert_eq!(gen.start_segment, hex(&dg["start_segment"]), "{name}");
                assert_eq!(gen.alloc_ptr, hex(&dg["allocContextPtr"]), "{name}");
                assert_eq!(gen.alloc_limit, hex(&dg["allocContextLimit"]), "{name}");
            }
        }
        let dsegs = dac["gc_heap"]["segments"].as_array().unwrap();
        assert_eq!(heap.segments.len(), dsegs.len(), "{name}: segment count");
        for (s, ds) in heap.segments.iter().zip(dsegs) {
            let at = s.address;
            assert_eq!(s.address, hex(&ds["address"]), "{name}: segment address");
            assert_eq!(s.mem, hex(&ds["mem"]), "{name}: mem of {at:#x}");
            assert_eq!(s.allocated, hex(&ds["allocated"]), "{name}: {at:#x}");
            assert_eq!(
                s.walk_end,
                hex(&ds["walk_end"]),
                "{name}: walk end of {at:#x}"
            );
            assert_eq!(s.committed, hex(&ds["committed"]), "{name}: {at:#x}");
            assert_eq!(s.reserved, hex(&ds["reserved"]), "{name}: {at:#x}");
            assert_eq!(s.flags, hex(&ds["flags"]), "{name}: {at:#x}");
            assert_eq!(s.next, hex(&ds["next"]), "{name}: {at:#x}");
            assert_eq!(s.kind.name(), ds["kind"].as_str().unwrap(), "{name}: kind");
            assert_eq!(
                s.is_ephemeral,
                ds["is_ephemeral_heap_segment"].as_bool().unwrap(),
                "{name}: {at:#x}"
            );
        }

        // The census.
        let c = heap.census(&rt);
        assert!(
            c.errors.is_empty(),
            "{name}: walk errors {:?}",
            &c.errors[..c.errors.len().min(5)]
        );
        assert_eq!(c.skipped_bytes, 0, "{name}: skipped bytes");
        let hs = &dac["heap_stat"];
        for (ours, key) in [
            (c.total_objects, "total_objects"),
            (c.total_size, "total_size"),
            (c.free_objects, "free_objects"),
            (c.free_size, "free_size"),
        ] {
            assert_eq!(ours, hs[key].as_u64().unwrap(), "{name}: {key}");
        }
        for (s, ds) in c.segments.iter().zip(dsegs) {
            assert_eq!(
                s.objects,
                ds["objects"].as_u64().unwrap(),
                "{name}: {:#x}",
                s.address
            );
            assert_eq!(s.bytes, ds["object_bytes"].as_u64().unwrap(), "{name}");
        }
        let theirs_kind: BTreeMap<String, (u64, u64, u64)> = hs["by_segment_kind"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    (
                        v["segments"].as_u64().unwrap(),
                        v["objects"].as_u64().unwrap(),
                        v["bytes"].as_u64().unwrap(),
                    ),
                )
            })
            .collect();
        let ours_kind: BTreeMap<String, (u64, u64, u64)> = c
            .by_segment_kind
            .iter()
            .map(|(k, v)| (k.clone(), (v.segments, v.objects, v.bytes)))
            .collect();
        assert_eq!(ours_kind, theirs_kind, "{name}: by segment kind");

        // where the DAC cannot name a type, the program's own record of it
        let entry = tests::entry(&name);
        let theirs: BTreeMap<u64, (u64, u64, String)> = hs["types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    hex(&t["mt"]),
                    (
                        t["count"].as_u64().unwrap(),
                        t["total_size"].as_u64().unwrap(),
                        entry.census_type_name(hex(&t["mt"]), t["type"].as_str().unwrap_or("")),
                    ),
                )
            })
            .collect();
        let names = TypeNames::new();
        let ours: BTreeMap<u64, (u64, u64, String)> = c
            .types
            .iter()
            .map(|t| (t.mt, (t.count, t.total_size, names.name_or_note(&rt, t.mt))))
            .collect();
        let mut bad = Vec::new();
        let mut unnamed = 0;
        for (mt, v) in &theirs {
            let o = ours.get(mt);
            // A gcore dump lacks unmodified file mappings (the assemblies, or a single-file
            // app's bundle); where no accepted file stands in (the single-file host is not
            // kept), the count and size must still be exact and the name says it is unknown.
            let metadata_absent = o.is_some_and(|o| {
                o.2.starts_with("<unknown type:") && o.2.contains("its metadata is not in the dump")
            });
            if shape == "images-not-in-dump"
                && metadata_absent
                && o.map(|o| (o.0, o.1)) == Some((v.0, v.1))
            {
                // and it says why no file stood in for the missing pages
                let note = &o.unwrap().2;
                assert!(note.contains("its file is not read ("), "{name}: {note}");
                unnamed += 1;
                continue;
            }
            if o != Some(v) {
                bad.push(format!("MT {mt:#x}: DAC {v:?}, ours {o:?}"));
            }
        }
        if unnamed > 0 {
            eprintln!(
                "\n*** census_descriptor: {name}: {unnamed} type names NOT CHECKED: the \
                 assemblies' metadata is not in this gcore / single-file dump ***\n"
            );
        }
        assert!(
            bad.is_empty(),
            "{name}: {} of {} MTs differ:\n{}",
            bad.len(),
            theirs.len(),
            bad.join("\n")
        );
        assert_eq!(ours.len(), theirs.len(), "{name}: distinct MTs");
        eprintln!(
            "census_descriptor: {name} ({}): {} objects, {} bytes, {} free, {} MTs: equal to the DAC",
            rt.info.version,
            c.total_objects,
            c.total_size,
            c.free_objects,
            ours.len()
        );
        checked += 1;

        // What is not verified on this family is refused by name.
        let refused = clrdata::discovery::layout::ALL_CAPABILITIES
            .iter()
            .copied()
            .filter(|c| !rt.layout.verified.contains(c));
        for cap in refused {
            match rt.require(cap) {
                Err(ClrError::NotVerified { capability, .. }) => {
                    assert_eq!(capability, cap.describe())
                }
                other => panic!("{name}: {cap:?} is not verified yet, got {other:?}"),
            }
        }
    }
    eprintln!(
        "census_descriptor: {checked} of {total} .NET 9/10/11 dumps checked, {unchecked} without \
         their runtime files"
    );
    // Dumps without their runtime's files are said loudly; none checked at all is a failure.
    assert!(
        total == 0 || checked > 0,
        "no .NET 9/10/11 dump could be checked"
    );
}
