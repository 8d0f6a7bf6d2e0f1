//! Statics and thread statics against the runtime's own DAC (`dumps/<name>.statics.dac.json`,
//! made by dumps/tools/dacstatics.py with the build's DAC through ISOSDacInterface14), on every
//! corpus dump the tests claim Statics on that has such a file (.NET 9 and 10: per-type
//! statics, thread statics in each thread's ThreadLocalData). For every type with statics
//! that the DAC lists (every loaded TypeDef's MethodTable of every module):
//! - its static FieldDescs: the same FieldDescs, tokens, offsets, element types and
//!   thread-static flags;
//! - each static's address: the DAC's GC or non-GC statics base + the field's offset, when the
//!   DAC says the class is initialised (`GetMethodTableInitializationFlags`); when it is not,
//!   ours must say "not initialised" (or "generic type definition"), never read a value;
//! - each thread static: the threads with a base and each one's address (the DAC's
//!   `GetThreadStaticBaseAddress` + offset) equal.
//!
//! Environment: `DUMPSHELL_SKIP_DUMPS=a,*-net10h` leaves corpus dumps out (development against
//! one patch while the held-out patch waits).

use clrdata::discovery::layout::Capability;
use clrdata::model::objects::{is_gc_static, ObjectReader};
use clrdata::prelude::*;
use clrdata::TypeNames;
use dumpreader::Dump;
use serde_json::Value;
use std::collections::BTreeSet;

fn hex(v: &Value) -> u64 {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("not a hex string: {v}"));
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("bad hex {s}"))
}

fn skipped(name: &str) -> bool {
    std::env::var("DUMPSHELL_SKIP_DUMPS")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .any(|s| match s.strip_prefix('*') {
            Some(suffix) => name.ends_with(suffix),
            None => s == name,
        })
}

/// The dumps claiming Statics that have the DAC's statics, with it (checked to belong to the
/// committed dump).
fn with_truth() -> Vec<(tests::Entry, Value)> {
    tests::readable_for(Capability::Statics)
        .into_iter()
        .filter(|e| !skipped(&e.name))
        .filter_map(|e| {
            let p = tests::dumps_dir().join(format!("{}.statics.dac.json", e.name));
            let t: Value = serde_json::from_str(&std::fs::read_to_string(p).ok()?).unwrap();
            assert_eq!(
                t["dump_sha256"], e.dac["dump_file"]["sha256"],
                "{}.statics.dac.json was written for another dump: regenerate it",
                e.name
            );
            Some((e, t))
        })
        .collect()
}

#[derive(Default, Debug)]
struct Counts {
    types: usize,
    field_descs: usize,
    addresses: usize,
    not_initialised: usize,
    thread_addresses: usize,
    rva: usize,
}

fn check(e: &tests::Entry, truth: &Value) -> Counts {
    let name = e.name.as_str();
    let d = Dump::open_with(&e.dump_path(), &e.open_options())
        .unwrap_or_else(|err| panic!("{name}: {err}"));
    let rt = tests::discover(&d).unwrap_or_else(|err| panic!("{name}: {err}"));
    rt.require(Capability::Statics).unwrap();
    let names = TypeNames::new();
    let r = ObjectReader::new(&rt, &names);
    let mut n = Counts::default();
    for t in truth["types"].as_array().unwrap() {
        let mt = hex(&t["mt"]);
        let what = format!("{name} {} ({mt:#x})", t["name"]);
        let info = rt
            .method_table(mt)
            .unwrap_or_else(|err| panic!("{what}: {err}"));
        let ours: Vec<_> = rt
            .fields(&info)
            .unwrap_or_else(|err| panic!("{what}: {err}"))
            .into_iter()
            .filter(|f| f.is_static)
            .collect();
        let dac = t["fields"].as_array().unwrap();
        assert_eq!(ours.len(), dac.len(), "{what}: static fields");
        n.types += 1;
        let inited = t["init_flags"].as_i64() == Some(1);
        for (f, df) in ours.iter().zip(dac) {
            let fw = format!("{what} field {}", df["token"]);
            assert_eq!(f.address, hex(&df["field_desc"]), "{fw}");
            assert_eq!(f.token as u64, hex(&df["token"]), "{fw}");
            assert_eq!(f.offset as u64, df["offset"].as_u64().unwrap(), "{fw}");
            assert_eq!(f.element_type as u64, df["type"].as_u64().unwrap(), "{fw}");
            assert_eq!(f.is_thread_static, df["thread_static"] == true, "{fw}");
            n.field_descs += 1;
            let gc = is_gc_static(f.element_type);
            if f.is_thread_static {
                let want: BTreeSet<(u64, u64)> = t["thread_bases"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|b| {
                        let base = hex(&b[if gc { "gc_base" } else { "non_gc_base" }]);
                        (base != 0).then(|| (hex(&b["thread"]), base + f.offset as u64))
                    })
                    .collect();
                let got: BTreeSet<(u64, u64)> =
                    match r.thread_static_addresses(mt, f.offset, f.element_type) {
                        Ok(v) => v.into_iter().map(|(_, thread, a)| (thread, a)).collect(),
                        // A generic type definition has none (the DAC lists no thread either).
                        Err(why) if why.to_string().contains("generic type definition") => {
                            BTreeSet::new()
                        }
                        Err(why) => panic!("{fw}: {why}"),
                    };
                assert_eq!(got, want, "{fw}: threads and addresses");
                n.thread_addresses += want.len();
                continue;
            }
            let ours = r.static_address(&info, f);
            if f.is_rva {
                assert!(ours.unwrap_err().to_string().contains("RVA"), "{fw}");
                n.rva += 1;
                continue;
            }
            if !inited {
                let why = ours.expect_err(&fw);
                assert!(
                    why.to_string().contains("not initialised")
                        || why.to_string().contains("generic type definition"),
                    "{fw}: {why}"
                );
                n.not_initialised += 1;
                continue;
            }
            let base = hex(&t[if gc { "gc_base" } else { "non_gc_base" }]);
            if base == 0 {
                assert!(ours.is_err(), "{fw}: the DAC has no base, ours {ours:?}");
                continue;
            }
            assert_eq!(ours, Ok(base + f.offset as u64), "{fw}");
            n.addresses += 1;
        }
    }
    n
}

#[test]
fn statics_and_thread_statics_equal_the_dacs() {
    let all = with_truth();
    assert!(
        !all.is_empty(),
        "no dump claiming Statics has a DAC statics truth"
    );
    let mut families = BTreeSet::new();
    for (e, t) in &all {
        let n = check(e, t);
        eprintln!("{}: {n:?}", e.name);
        assert!(n.types >= 50, "{}: {n:?}", e.name);
        assert!(n.addresses >= 100, "{}: {n:?}", e.name);
        assert!(n.thread_addresses >= 2, "{}: {n:?}", e.name);
        families.insert(e.family());
    }
    assert!(
        families.contains(&9) && families.contains(&10) && families.contains(&11),
        "{families:?}"
    );
}
