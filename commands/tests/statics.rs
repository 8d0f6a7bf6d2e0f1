//! Statics beyond those of plain types: thread statics (each thread's value, as SOS's
//! `>> Thread:Value id:value <<`) against the heap program's manifest, and statics of generic
//! instantiations against what the runtime library guarantees: `List<T>.s_emptyArray` is
//! `new T[0]`, so on every dump each `List<T>` on the heap whose statics are allocated must
//! show a `T[]` of length 0 there. Every dump the tests claim Statics on: .NET 8's
//! DomainLocalModule and .NET 9/10's per-type statics and ThreadLocalData alike.

use clrdata::discovery::layout::Capability;
use commands::Session;
use serde_json::Value;

fn run(s: &Session, line: &str) -> Value {
    let (out, _) = commands::execute(s, line)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .unwrap();
    out.json_document()["result"].clone()
}

fn session(e: &tests::Entry) -> Session {
    Session::open_with(&e.dump_path(), &e.open_options())
        .unwrap_or_else(|err| panic!("{}: {err}", e.name))
}

/// The dumps of scenario `program` the tests claim Statics on (any compiler; .NET 8, 9, 10, 11).
fn of_program(program: &str) -> Vec<tests::Entry> {
    let v: Vec<_> = tests::readable_for(Capability::Statics)
        .into_iter()
        .filter(|e| e.program() == program)
        .collect();
    assert!(!v.is_empty(), "no readable {program} dump");
    v
}

fn field<'a>(fields: &'a Value, name: &str) -> &'a Value {
    fields
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no field {name} in {fields}"))
}

#[test]
fn thread_statics_equal_the_manifest() {
    for e in of_program("heap") {
        thread_statics_of(&e);
    }
}

fn thread_statics_of(e: &tests::Entry) {
    let s = session(e);
    let mut checked = 0;
    for st in e.manifest["statics"].as_array().unwrap() {
        if st["kind"] != "thread-static" {
            continue;
        }
        let ty = st["type"].as_str().unwrap();
        let n = run(&s, &format!("name2ee * {ty}"));
        let ee = n["matches"][0]["ee_class"].as_str().unwrap();
        let c = run(&s, &format!("dumpclass {ee}"));
        let f = field(&c["fields"], st["field"].as_str().unwrap());
        assert_eq!(f["attr"], "TLstatic", "{f}");
        let id = st["managed_id"].as_u64().unwrap();
        let per_thread = f["thread_values"]
            .as_array()
            .unwrap_or_else(|| panic!("no thread values: {f}"));
        let tv = per_thread
            .iter()
            .find(|v| v["thread"].as_u64() == Some(id))
            .unwrap_or_else(|| panic!("thread {id} missing: {f}"));
        let obj = tv["value"]["address"].as_str().unwrap();
        let o = run(&s, &format!("dumpobj {obj}"));
        assert_eq!(o["name"], st["value_type"], "{o}");
        assert_eq!(
            field(&o["fields"], "Id")["value"].as_u64(),
            st["value_id"].as_u64(),
            "thread {id}: {o}"
        );
        // The text shows each thread's value, SOS style.
        let text = f["value_text"].as_str().unwrap();
        assert!(text.starts_with(">> Thread:Value") && text.ends_with("<<"));
        assert!(
            text.contains(&format!(" {id:x}:{:0>16}", obj.trim_start_matches("0x"))),
            "{text}"
        );
        checked += 1;
    }
    assert_eq!(checked, 2, "{}", e.name);
    eprintln!("{}: {checked} thread statics equal the manifest", e.name);
}

#[test]
fn generic_statics_of_list_instantiations_are_empty_arrays_of_t() {
    let mut checked = 0;
    for e in tests::readable_for(Capability::Statics) {
        let s = session(&e);
        let stat = run(&s, "dumpheap -stat");
        for t in stat["statistics"].as_array().unwrap() {
            let name = t["name"].as_str().unwrap();
            let Some(arg) = name
                .strip_prefix("System.Collections.Generic.List`1[[")
                .and_then(|r| r.strip_suffix("]]"))
            else {
                continue;
            };
            // "Heap.Person, heap" → "Heap.Person"; nested instantiations keep their brackets.
            let elem = arg.rsplit_once(", ").map_or(arg, |(n, _)| n);
            let objs = run(
                &s,
                &format!("dumpheap -mt {} -short", t["mt"].as_str().unwrap()),
            );
            let first = objs["objects"][0]["address"]
                .as_str()
                .or_else(|| objs["objects"][0].as_str())
                .unwrap_or_else(|| panic!("{}: {objs}", e.name))
                .to_string();
            let o = run(&s, &format!("dumpobj {first}"));
            let f = field(&o["fields"], "s_emptyArray");
            assert_eq!(f["attr"], "static", "{f}");
            let Some(arr) = f["value"]["address"].as_str() else {
                // Not allocated (the class constructor never ran): must say so.
                assert!(f["value"]["unavailable"].is_string(), "{}: {f}", e.name);
                continue;
            };
            let a = run(&s, &format!("dumpobj {arr}"));
            eprintln!("{}: {name}.s_emptyArray {arr}", e.name);
            assert_eq!(a["name"], format!("{elem}[]"), "{} {name}: {a}", e.name);
            assert_eq!(a["array"]["length"], 0, "{} {name}: {a}", e.name);
            checked += 1;
        }
    }
    assert!(
        checked >= 10,
        "only {checked} List<T> instantiations checked"
    );
}

/// The MT column of field tables against the DAC's GetFieldDescData MTOfType (the MethodTable
/// SOS prints) for classes of a scenario (`dumps/<name>.methods.dac.json`,
/// `field_classes`): ours is never a different MethodTable; fields of array and generic
/// instantiation types, embedded generic structs included, get theirs. Returns (matched,
/// known to the DAC, array or generic typed matched, array or generic typed known to the DAC but
/// not resolved). A field of a plain type the DAC knows is always resolved.
fn field_type_mts(e: &tests::Entry, t: &Value) -> (usize, usize, usize, usize) {
    let name = e.name.as_str();
    let s = session(e);
    let hexu =
        |v: &Value| u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let (mut matched, mut dac_known, mut constructed, mut unresolved) = (0, 0, 0, 0);
    for c in t["field_classes"].as_array().unwrap() {
        let r = run(
            &s,
            &format!("dumpclass {}", c["ee_class"].as_str().unwrap()),
        );
        for f in c["fields"].as_array().unwrap() {
            let ours = r["fields"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| hexu(&o["token"]) == hexu(&f["token"]))
                .unwrap_or_else(|| panic!("field {} missing: {r}", f["token"]));
            let dac = hexu(&f["mt_of_type"]);
            let what = format!(
                "{name} {} {}: ours {}, DAC {dac:#x}",
                c["name"], ours["name"], ours["type_mt"]
            );
            if !ours["type_mt"].is_null() {
                assert_eq!(hexu(&ours["type_mt"]), dac, "{what}");
                matched += 1;
                if ours["type"].as_str().unwrap().ends_with(']') {
                    constructed += 1;
                }
            }
            if dac != 0 {
                dac_known += 1;
                if ours["type_mt"].is_null() {
                    eprintln!("not found: {what}");
                    assert!(
                        ours["type"].as_str().unwrap_or("").ends_with(']'),
                        "a plain type unresolved: {what}"
                    );
                    unresolved += 1;
                }
            }
        }
    }
    (matched, dac_known, constructed, unresolved)
}

/// The readable dumps of scenario `program` that have `dumps/<name>.methods.dac.json`, with
/// it (checked to belong to the committed dump).
fn with_methods_truth(program: &str) -> Vec<(tests::Entry, Value)> {
    let v: Vec<_> = of_program(program)
        .into_iter()
        .filter_map(|e| {
            let p = tests::dumps_dir().join(format!("{}.methods.dac.json", e.name));
            let t: Value = serde_json::from_str(&std::fs::read_to_string(p).ok()?).unwrap();
            assert_eq!(
                t["dump_sha256"], e.dac["dump_file"]["sha256"],
                "{}.methods.dac.json was written for another dump: regenerate it",
                e.name
            );
            Some((e, t))
        })
        .collect();
    assert!(!v.is_empty(), "no {program} dump with a methods truth");
    v
}

#[test]
fn field_type_mts_agree_with_the_dac() {
    // heap: Person.Tags (string[]), Roots' array and generic statics (Teams, a
    // Dictionary<string, List<Person>>, is declared through heap.dll's TypeRefs as mscorlib's).
    for (e, t) in with_methods_truth("heap") {
        let (matched, known, constructed, unresolved) = field_type_mts(&e, &t);
        // .NET 9 does not publish Module.AvailableTypeParams, so a field's constructed type that
        // is looked up there (not reached through an object) is not resolved
        // (docs/clr-layout-net9-10.md, "Methods on .NET 9 and 10"); every one found still
        // equals the DAC's (field_type_mts).
        // The 11.0.0 truth holds one class (heap-net11.methods.dac.json: `Heap.Person`, the
        // only one with an instance to find its EEClass by; dumps/README.md), whose one
        // constructed field is `Tags` (string[]).
        let (floor, allowed) = match e.family() {
            9 => (14, 2),
            11 => (1, 0),
            _ => (15, 0),
        };
        assert!(
            constructed >= floor,
            "{}: {constructed} array/generic fields with their MT",
            e.name
        );
        assert!(unresolved <= allowed, "{}: {unresolved} unresolved", e.name);
        assert_eq!(
            matched + unresolved,
            known,
            "{}: {matched} of {known}",
            e.name
        );
    }
    // hang: CoreLib generic types (an enumerator's embedded KeyValuePair, a
    // TaskCompletionSource<int>'s Task<int>, SemaphoreSlim's StrongBox<bool> and TaskNodes).
    // (Only the hang truths made with `dac_methods.py --field-class` list classes: hang, hang-net8.)
    let hang: Vec<_> = with_methods_truth("hang")
        .into_iter()
        .filter(|(_, t)| t["field_classes"].as_array().is_some_and(|a| !a.is_empty()))
        .collect();
    assert!(!hang.is_empty(), "no hang truth lists field classes");
    for (e, t) in hang {
        let (matched, known, constructed, unresolved) = field_type_mts(&e, &t);
        assert_eq!(unresolved, 0, "{}", e.name);
        assert!(
            constructed >= 3,
            "{}: {constructed} array/generic fields with their MT",
            e.name
        );
        assert_eq!(matched, known, "{}: {matched} of {known}", e.name);
    }
}
