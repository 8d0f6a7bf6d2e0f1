//! `dumpmt -md` against the runtime DAC: on every readable dump of the hang and heap scenarios
//! that has `dumps/<name>.methods.dac.json` and whose runtime's files are here (the others are
//! skipped, saying why), every row (entry point, MethodDesc, JIT state, slot,
//! name) of the MethodTables in `dumps/<name>.methods.dac.json` (written by
//! `dumps/tools/dac_methods.py`: GetMethodTableSlot for each slot below wNumMethods,
//! GetCodeHeaderData, GetMethodDescData, GetMethodDescName, as SOS's DumpMT -MD does), and
//! `dumpmd` of each MethodDesc against GetMethodDescData's token and slot. Then, on every .NET 8
//! dump, the method table of every type on the heap is walked: the MethodDescChunk checks
//! (each MethodDesc's m_chunkIndex, the sizes adding up to the chunk's) must all pass and every
//! slot must name its method.

use commands::Session;
use serde_json::Value;

fn run(s: &Session, line: &str) -> Value {
    let (out, _) = commands::execute(s, line)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .unwrap();
    out.json_document()["result"].clone()
}

/// The dump opened with its own runtime's files ([`tests::Entry::open_options`]: the 8.0.4
/// framework when fetched, the NuGet runtime pack of every other build).
fn session(e: &tests::Entry) -> Session {
    Session::open_with(&e.dump_path(), &e.open_options())
        .unwrap_or_else(|err| panic!("{}: {err}", e.name))
}

fn hexv(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// The DAC's method tables of an entry (`dumps/<name>.methods.dac.json`), checked to belong to
/// the committed dump; None when the corpus has none for it.
fn truth(e: &tests::Entry) -> Option<Value> {
    let p = tests::dumps_dir().join(format!("{}.methods.dac.json", e.name));
    let text = std::fs::read_to_string(&p).ok()?;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["dump_sha256"], e.dac["dump_file"]["sha256"],
        "{}.methods.dac.json was written for another dump: regenerate it",
        e.name
    );
    Some(v)
}

/// The readable dumps of scenario `program` that have a methods truth, with it.
fn of_program_with_truth(program: &str) -> Vec<(tests::Entry, Value)> {
    tests::readable_for(tests::Capability::Methods)
        .into_iter()
        .filter(|e| e.program() == program)
        .filter_map(|e| truth(&e).map(|t| (e, t)))
        .collect()
}

/// Those of them whose runtime's files are here: `dumpmt -md` needs the ReadyToRun images
/// (their RUNTIME_FUNCTIONs are not in the dump). A dump without them is skipped, saying so;
/// with DUMPSHELL_REQUIRE_FRAMEWORKS a framework NuGet serves must be here (`has_framework`
/// panics).
fn with_framework(program: &str) -> Vec<(tests::Entry, Value)> {
    of_program_with_truth(program)
        .into_iter()
        .filter(|(e, _)| {
            let here = e.has_framework();
            if !here {
                eprintln!(
                    "{}: skipped: the .NET {} framework files are not here (dumpmt -md needs \
                     its ReadyToRun images; dumps/fetch-frameworks.sh)",
                    e.name,
                    e.runtime_version()
                );
            }
            here
        })
        .collect()
}

fn check_against_dac(program: &str) {
    let dumps = with_framework(program);
    assert!(
        !dumps.is_empty(),
        "no {program} dump with a methods truth and its framework files: nothing was checked"
    );
    for (e, t) in &dumps {
        check_dump_against_dac(e, t);
    }
}

fn check_dump_against_dac(e: &tests::Entry, t: &Value) {
    let name = e.name.as_str();
    let s = session(e);
    assert!(t["errors"].as_array().unwrap().is_empty(), "{name}");
    let mut rows = 0;
    let mut ip2md_rows = 0;
    let mut diffs: Vec<String> = Vec::new();
    for mt in t["method_tables"].as_array().unwrap() {
        let addr = mt["mt"].as_str().unwrap();
        let r = run(&s, &format!("dumpmt -md {addr}"));
        let what = format!("{name} {addr} {}", mt["name"]);
        assert_eq!(r["name"], mt["name"], "{what}");
        let m = &r["methods"];
        assert_eq!(m["num_methods"], mt["num_methods"], "{what}");
        if e.family() < 9 {
            // Since .NET 9 GetMethodTableData returns 0 for both ("always return 0 since
            // .NET 9", the cDAC's SOSDacImpl says): no truth there; the slots below, read
            // from the vtable chunks and the non-virtual slot array, are compared one by one.
            assert_eq!(m["num_vtable_slots"], mt["num_vtable_slots"], "{what}");
            assert_eq!(m["num_virtuals"], mt["num_virtuals"], "{what}");
        }
        assert_eq!(r["num_methods"], mt["num_methods"], "{what}");
        let ours = m["slots"].as_array().unwrap();
        let dac = mt["methods"].as_array().unwrap();
        assert_eq!(ours.len(), dac.len(), "{what}");
        for (o, d) in ours.iter().zip(dac) {
            rows += 1;
            let row = format!("{what} slot {}: ours {o}, DAC {d}", d["slot"]);
            // Every row is compared; the differences are reported together.
            let mut ck = |ok: bool, what: &str| {
                if !ok {
                    diffs.push(format!("{what}: {row}"));
                }
                ok
            };
            if !ck(d.get("error").is_none(), "the DAC's row has an error") {
                continue;
            }
            if d.get("no_entry_point").is_some() {
                // .NET 9+: GetMethodTableSlot's S_FALSE, no entry point assigned yet.
                ck(o["slot"] == d["slot"], "slot");
                ck(hexv(&o["entry"]) == 0, "entry (the DAC has none)");
                ck(o["jit"] == "NONE", "JIT (no entry point)");
                continue;
            }
            ck(o["slot"] == d["slot"], "slot");
            ck(hexv(&o["entry"]) == hexv(&d["entry"]), "entry");
            let dmd = hexv(&d["method_desc"]);
            let same_md = ck(
                o["method_desc"].as_str().map(|_| hexv(&o["method_desc"]))
                    == (dmd != 0).then_some(dmd),
                "MethodDesc",
            );
            ck(o["jit"] == d["jit"], "JIT");
            ck(o["name"] == d["name"], "name");
            if dmd != 0 && same_md {
                // The MethodDesc itself: token and slot as GetMethodDescData reports them.
                let md = run(&s, &format!("dumpmd {dmd:x}"));
                let tok = u32::from_str_radix(md["token"].as_str().unwrap(), 16).unwrap();
                let mut ck = |ok: bool, what: &str| {
                    if !ok {
                        diffs.push(format!("dumpmd {what}: {row} (dumpmd {md})"));
                    }
                };
                ck(
                    format!("{tok:#010x}") == d["token"].as_str().unwrap(),
                    "token",
                );
                ck(md["slot"] == d["md_slot"], "slot");
                ck(hexv(&md["mt"]) == hexv(&d["md_mt"]), "MethodTable");
                // Its current code: GetMethodDescData's bHasNativeCode and NativeCodeAddr.
                if d["has_native_code"] == true {
                    ck(
                        md["code_address"]
                            .as_str()
                            .map(|_| hexv(&md["code_address"]))
                            == Some(hexv(&d["native_code"])),
                        "native code",
                    );
                } else if d["has_native_code"] == false {
                    ck(md["is_jitted"] == false, "no native code");
                }
                // `ip2md` of the method's JIT'd code (GetMethodDescData's NativeCodeAddr): the
                // same MethodDesc and name. (ReadyToRun code is found through the image's
                // ReadyToRunInfo, the stack walk's table, held to the DAC by the stack tests.)
                let code = d["native_code"]
                    .as_str()
                    .map_or(0, |_| hexv(&d["native_code"]));
                if d["jit"] == "JIT" && code != 0 && code != u64::MAX {
                    ip2md_rows += 1;
                    let ip = run(&s, &format!("ip2md {code:x}"));
                    let mut ck = |ok: bool, what: &str| {
                        if !ok {
                            diffs.push(format!("ip2md {what}: {row} (ip2md {ip})"));
                        }
                    };
                    match ip["method_desc"].as_str() {
                        Some(_) => ck(hexv(&ip["method_desc"]) == dmd, "MethodDesc"),
                        None => ck(
                            ip["token"].as_str().map(|t| format!("0x{t}")).as_deref()
                                == d["token"].as_str(),
                            "token",
                        ),
                    }
                    ck(ip["method"] == d["name"], "name");
                }
            }
        }
        // The text table as SOS prints it.
        let (out, _) = commands::execute(&s, &format!("dumpmt -md {addr}"))
            .unwrap()
            .unwrap();
        let text = &out.text;
        assert!(text.contains("MethodDesc Table\n"), "{what}: {text}");
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>()
                    == ["Entry", "MethodDesc", "JIT", "Slot", "Name"]),
            "{what}: {text}"
        );
    }
    assert!(rows > 400, "{name}: only {rows} rows compared");
    assert!(ip2md_rows > 10, "{name}: only {ip2md_rows} ip2md compared");
    eprintln!("{name}: {rows} rows, {ip2md_rows} ip2md compared");
    assert!(
        diffs.is_empty(),
        "{name}: {} of {rows} rows differ from the DAC's:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

#[test]
fn dumpmt_md_equals_the_dac_on_heap() {
    check_against_dac("heap");
}

#[test]
fn dumpmt_md_equals_the_dac_on_hang() {
    check_against_dac("hang");
}

#[test]
fn every_heap_type_has_a_consistent_method_table() {
    // Every slot is named only with the runtime's ReadyToRun images (their RUNTIME_FUNCTIONs
    // are not in the dump): dumps whose framework is not here are skipped, saying so.
    let mut checked = 0;
    // (the heap's types: dumps whose heap is read)
    for e in tests::readable_for(tests::Capability::Methods)
        .into_iter()
        .filter(|e| tests::claims(e, tests::Capability::HeapWalk))
    {
        if !e.has_framework() {
            eprintln!(
                "{}: skipped: the .NET {} framework files are not here (dumpmt -md needs its \
                 ReadyToRun images; dumps/fetch-frameworks.sh)",
                e.name,
                e.runtime_version()
            );
            continue;
        }
        checked += 1;
        let s = session(&e);
        let stat = run(&s, "dumpheap -stat");
        let mut types = 0;
        for t in stat["statistics"].as_array().unwrap() {
            let mt = t["mt"].as_str().unwrap();
            let r = run(&s, &format!("dumpmt -md {mt}"));
            let m = &r["methods"];
            let slots = m["slots"].as_array().unwrap();
            assert_eq!(
                slots.len() as u64,
                m["num_methods"].as_u64().unwrap(),
                "{} {mt}",
                e.name
            );
            for (i, sl) in slots.iter().enumerate() {
                assert_eq!(sl["slot"].as_u64(), Some(i as u64), "{} {mt}", e.name);
                assert!(
                    sl["name"].is_string() && sl["error"].is_null(),
                    "{} {mt} {}: {sl}",
                    e.name,
                    t["name"]
                );
            }
            types += 1;
        }
        assert!(types > 50, "{}: {types} types", e.name);
    }
    assert!(
        checked >= 1,
        "no readable dump with its framework files: nothing was checked"
    );
}

/// The readable dumps of the heap scenario.
fn heap_dumps() -> Vec<tests::Entry> {
    let v: Vec<_> = tests::readable_for(tests::Capability::Methods)
        .into_iter()
        .filter(|e| e.program() == "heap")
        .collect();
    assert!(!v.is_empty(), "no readable heap dump");
    v
}

#[test]
fn dumpmt_md_refuses_what_is_not_a_method_table() {
    for e in heap_dumps() {
        let s = session(&e);
        let err = commands::execute(&s, "dumpmt -md 10")
            .err()
            .unwrap_or_else(|| panic!("{}: dumpmt -md 10 succeeded", e.name))
            .to_string();
        assert!(err.contains("0x10"), "{}: {err}", e.name);
    }
}

/// Addresses that are not MethodTables (objects, their interiors, EEClasses, MethodDescs) give
/// an error or a listing, never a panic, in bounded time.
#[test]
fn dumpmt_md_survives_arbitrary_addresses() {
    let dumps = of_program_with_truth("heap");
    assert!(!dumps.is_empty(), "no heap dump with a methods truth");
    for (e, t) in &dumps {
        let s = session(e);
        let mut addrs: Vec<u64> = Vec::new();
        for mt in t["method_tables"].as_array().unwrap() {
            let ee = hexv(&mt["ee_class"]);
            addrs.extend([ee, ee + 8, ee + 0x20, hexv(&mt["mt"]) + 8]);
            for r in mt["methods"].as_array().unwrap().iter().take(3) {
                // (A .NET 9+ slot without an entry point has no MethodDesc in the truth.)
                if r["method_desc"].is_string() {
                    addrs.push(hexv(&r["method_desc"]));
                }
                addrs.push(hexv(&r["entry"]));
            }
        }
        let objs = run(&s, "dumpheap -short");
        for o in objs["objects"].as_array().unwrap().iter().step_by(97) {
            let a = hexv(&o["address"]);
            addrs.extend([a, a + 8, a + 16]);
        }
        let start = std::time::Instant::now();
        for a in &addrs {
            let _ = commands::execute(&s, &format!("dumpmt -md {a:x}"));
            let _ = commands::execute(&s, &format!("dumpmd {a:x}"));
        }
        assert!(addrs.len() > 100, "{}", e.name);
        assert!(
            start.elapsed().as_secs() < 120,
            "{}: {:?}",
            e.name,
            start.elapsed()
        );
    }
}
