//! `dumpmt -md` against the runtime DAC: every row (entry point, MethodDesc, JIT state, slot,
//! name) of the MethodTables in `dumps/<name>.methods.dac.json` (written by
//! `dumps/tools/dac_methods.py`: GetMethodTableSlot for each slot below wNumMethods,
//! GetCodeHeaderData, GetMethodDescData, GetMethodDescName, as SOS's DumpMT -MD does), and
//! `dumpmd` of each MethodDesc against GetMethodDescData's token and slot. Then, on every .NET 8
//! dump, the method table of every type on the heap is walked: the MethodDescChunk checks
//! (each MethodDesc's m_chunkIndex, the sizes adding up to the chunk's) must all pass and every
//! slot must name its method.

use repl::{commands, Session};
use serde_json::Value;

fn run(s: &Session, line: &str) -> Value {
    let (out, _) = commands::execute(s, line)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .unwrap();
    out.json_document()["result"].clone()
}

fn session(e: &tests::Entry) -> Session {
    Session::open_with(&e.dump_path(), &tests::open_options()).unwrap()
}

fn hexv(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

fn truth(name: &str) -> Value {
    let p = tests::dumps_dir().join(format!("{name}.methods.dac.json"));
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

fn check_against_dac(name: &str) {
    let e = tests::entry(name);
    let s = session(&e);
    let t = truth(name);
    assert!(t["errors"].as_array().unwrap().is_empty());
    let mut rows = 0;
    for mt in t["method_tables"].as_array().unwrap() {
        let addr = mt["mt"].as_str().unwrap();
        let r = run(&s, &format!("dumpmt -md {addr}"));
        let what = format!("{name} {addr} {}", mt["name"]);
        assert_eq!(r["name"], mt["name"], "{what}");
        let m = &r["methods"];
        assert_eq!(m["num_methods"], mt["num_methods"], "{what}");
        assert_eq!(m["num_vtable_slots"], mt["num_vtable_slots"], "{what}");
        assert_eq!(m["num_virtuals"], mt["num_virtuals"], "{what}");
        assert_eq!(r["num_methods"], mt["num_methods"], "{what}");
        let ours = m["slots"].as_array().unwrap();
        let dac = mt["methods"].as_array().unwrap();
        assert_eq!(ours.len(), dac.len(), "{what}");
        for (o, d) in ours.iter().zip(dac) {
            let row = format!("{what} slot {}: ours {o}, DAC {d}", d["slot"]);
            assert!(d.get("error").is_none(), "{row}");
            assert_eq!(o["slot"], d["slot"], "{row}");
            assert_eq!(hexv(&o["entry"]), hexv(&d["entry"]), "{row}");
            let dmd = hexv(&d["method_desc"]);
            assert_eq!(
                o["method_desc"].as_str().map(|_| hexv(&o["method_desc"])),
                (dmd != 0).then_some(dmd),
                "{row}"
            );
            assert_eq!(o["jit"], d["jit"], "{row}");
            assert_eq!(o["name"], d["name"], "{row}");
            if dmd != 0 {
                // The MethodDesc itself: token and slot as GetMethodDescData reports them.
                let md = run(&s, &format!("dumpmd {dmd:x}"));
                let tok = u32::from_str_radix(md["token"].as_str().unwrap(), 16).unwrap();
                assert_eq!(
                    format!("{tok:#010x}"),
                    d["token"].as_str().unwrap(),
                    "{row}"
                );
                assert_eq!(md["slot"], d["md_slot"], "{row}");
                assert_eq!(hexv(&md["mt"]), hexv(&d["md_mt"]), "{row}");
            }
            rows += 1;
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
    for e in tests::net8() {
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
}

#[test]
fn dumpmt_md_refuses_what_is_not_a_method_table() {
    let s = session(&tests::entry("heap"));
    let err = commands::execute(&s, "dumpmt -md 10")
        .err()
        .unwrap_or_else(|| panic!("dumpmt -md 10 succeeded"))
        .to_string();
    assert!(err.contains("0x10"), "{err}");
}

/// Addresses that are not MethodTables (objects, their interiors, EEClasses, MethodDescs) give
/// an error or a listing, never a panic, in bounded time.
#[test]
fn dumpmt_md_survives_arbitrary_addresses() {
    let s = session(&tests::entry("heap"));
    let t = truth("heap");
    let mut addrs: Vec<u64> = Vec::new();
    for mt in t["method_tables"].as_array().unwrap() {
        let ee = hexv(&mt["ee_class"]);
        addrs.extend([ee, ee + 8, ee + 0x20, hexv(&mt["mt"]) + 8]);
        for r in mt["methods"].as_array().unwrap().iter().take(3) {
            addrs.push(hexv(&r["method_desc"]));
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
    assert!(addrs.len() > 100);
    assert!(start.elapsed().as_secs() < 120, "{:?}", start.elapsed());
}
