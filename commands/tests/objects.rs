//! Object commands on the corpus against the truths: every value the heap program set (its
//! manifest's `values`) is reached by following `name2ee` → `dumpclass` (statics) →
//! `dumpobj` / `dumparray` / `dumpvc` from the static roots; object names and sizes equal the
//! DAC's census; `verifyheap` finds nothing wrong on real dumps; `gcwhere` names the segments
//! the DAC reported; `objsize` equals an independent walk.

use commands::Session;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

fn run(s: &Session, line: &str) -> Value {
    let (out, _) = commands::execute(s, line)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .unwrap();
    out.json_document()["result"].clone()
}

fn hexv(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

fn session(e: &tests::Entry) -> Session {
    Session::open_with(&e.dump_path(), &e.open_options())
        .unwrap_or_else(|err| panic!("{}: {err}", e.name))
}

/// The readable dumps of the scenario programs named (see `tests::Entry::program`), at least one.
fn of_programs(programs: &[&str]) -> Vec<tests::Entry> {
    let v: Vec<_> = tests::readable()
        .into_iter()
        .filter(|e| programs.contains(&e.program()))
        .collect();
    assert!(!v.is_empty(), "no readable dump of {programs:?}");
    v
}

/// Follows manifest paths with the object commands only.
struct Nav<'a> {
    s: &'a Session,
}

impl Nav<'_> {
    /// The static fields of a type, by name: `name2ee` then `dumpclass`.
    fn statics(&self, ty: &str) -> HashMap<String, Value> {
        let n = run(self.s, &format!("name2ee * {ty}"));
        let m = &n["matches"][0];
        let ee = m["ee_class"]
            .as_str()
            .unwrap_or_else(|| panic!("{ty}: {n}"));
        let c = run(self.s, &format!("dumpclass {ee}"));
        c["fields"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["attr"] != "instance")
            .map(|f| (f["name"].as_str().unwrap().to_owned(), f["value"].clone()))
            .collect()
    }

    /// The fields of an object or a struct value (`{address, mt, type}`).
    fn fields(&self, v: &Value) -> Vec<Value> {
        let addr = v["address"].as_str().unwrap();
        let ty = v["type"].as_str().unwrap_or("");
        let is_struct = !self.is_object(v);
        let r = if is_struct {
            run(
                self.s,
                &format!("dumpvc {} {addr}", v["mt"].as_str().expect("struct MT")),
            )
        } else {
            run(self.s, &format!("dumpobj {addr}"))
        };
        assert!(!ty.is_empty() || is_struct);
        r["fields"].as_array().unwrap().clone()
    }

    fn is_object(&self, v: &Value) -> bool {
        // Objects are on the heap with their MT as first word: dumpobj accepts them. A struct
        // value's address is inside its container.
        let addr = v["address"].as_str().unwrap();
        let Ok(Some((o, _))) = commands::execute(self.s, &format!("dumpobj {addr} -nofields"))
        else {
            return false;
        };
        o.data["mt"] == v["mt"]
    }

    fn field(&self, v: &Value, name: &str) -> Value {
        let fs = self.fields(v);
        fs.iter()
            .find(|f| f["name"] == name && f["attr"] == "instance")
            .unwrap_or_else(|| panic!("no field {name} in {v}: {fs:?}"))["value"]
            .clone()
    }

    fn element(&self, v: &Value, idx: &[i64]) -> Value {
        let ty = v["type"].as_str().unwrap_or("").to_owned();
        if ty.starts_with("System.Collections.Generic.List`1") {
            let size = self.field(v, "_size").as_i64().unwrap();
            assert!(idx[0] < size, "{ty}[{}] beyond _size {size}", idx[0]);
            let items = self.field(v, "_items");
            return self.element(&items, idx);
        }
        let addr = v["address"].as_str().unwrap();
        let head = run(self.s, &format!("dumparray {addr} -length 0"));
        let bounds: Vec<i64> = head["array"]["bounds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_i64().unwrap())
            .collect();
        assert_eq!(bounds.len(), idx.len(), "{ty}: rank");
        let mut flat = 0i64;
        for (i, b) in idx.iter().zip(&bounds) {
            flat = flat * b + i;
        }
        let r = run(self.s, &format!("dumparray {addr} -start {flat} -length 1"));
        let e = &r["elements"][0];
        assert_eq!(
            e["indices"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap())
                .collect::<Vec<_>>(),
            idx
        );
        e["value"].clone()
    }

    fn lookup(&self, dict: &Value, key: &str) -> Value {
        let entries = self.field(dict, "_entries");
        let count = self.field(dict, "_count").as_i64().unwrap();
        let r = run(
            self.s,
            &format!(
                "dumparray {} -length {count} -details",
                entries["address"].as_str().unwrap()
            ),
        );
        for e in r["elements"].as_array().unwrap() {
            let fs = e["fields"].as_array().unwrap();
            let get = |n: &str| fs.iter().find(|f| f["name"] == n).unwrap()["value"].clone();
            if get("key")["string"] == key {
                return get("value");
            }
        }
        panic!("no key {key:?} in {dict}");
    }

    /// Follows `Heap.Roots.People[0].Home.Street`, `...ByName["x"].Id`, `Grid[2,3]`.
    fn follow(&self, path: &str) -> Value {
        // The root: the longest prefix naming a type with statics.
        let parts: Vec<&str> = path.splitn(3, '.').collect();
        let ty = format!("{}.{}", parts[0], parts[1]);
        let rest = parts[2];
        let statics = self.statics(&ty);
        let (first, mut rest) = split_name(rest);
        let mut cur = statics
            .get(first)
            .unwrap_or_else(|| panic!("{ty}.{first} not among statics {statics:?}"))
            .clone();
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('.') {
                let (name, r2) = split_name(r);
                rest = r2;
                cur = match name {
                    "Count" if cur["type"].as_str().unwrap_or("").contains("List`1") => {
                        self.field(&cur, "_size")
                    }
                    "Length" if cur["type"] == "System.String" => {
                        let o = run(
                            self.s,
                            &format!("dumpobj {} -nofields", cur["address"].as_str().unwrap()),
                        );
                        o["string_length"].clone()
                    }
                    _ => self.field(&cur, name),
                };
            } else if let Some(r) = rest.strip_prefix('[') {
                let end = r.find(']').unwrap();
                let inside = &r[..end];
                rest = &r[end + 1..];
                cur = if let Some(key) = inside.strip_prefix('"') {
                    self.lookup(&cur, key.strip_suffix('"').unwrap())
                } else {
                    let idx: Vec<i64> = inside
                        .split(',')
                        .map(|x| x.trim().parse().unwrap())
                        .collect();
                    self.element(&cur, &idx)
                };
            } else {
                panic!("cannot parse {rest}");
            }
        }
        cur
    }

    /// The primitive inside a boxed value (a boxed Int32's m_value, an enum's value__).
    fn unbox(&self, v: &Value) -> Value {
        if v.is_object() && v.get("string").is_none() && v.get("address").is_some() {
            let fs = self.fields(v);
            let inst: Vec<&Value> = fs.iter().filter(|f| f["attr"] == "instance").collect();
            assert_eq!(inst.len(), 1, "boxed primitive {v}: {fs:?}");
            return inst[0]["value"].clone();
        }
        v.clone()
    }
}

fn split_name(s: &str) -> (&str, &str) {
    let end = s.find(['.', '[']).unwrap_or(s.len());
    (&s[..end], &s[end..])
}

#[test]
fn every_manifest_value_is_reached_from_the_static_roots() {
    // Every heap dump the tests claim Statics on (.NET 8, 9, 10 and 11): the roots are statics.
    let heaps: Vec<_> = tests::readable_for(clrdata::discovery::layout::Capability::Statics)
        .into_iter()
        .filter(|e| e.program() == "heap")
        .collect();
    assert!(
        heaps.iter().any(|e| e.family() >= 9),
        "no .NET 9/10 heap dump"
    );
    for e in heaps {
        eprintln!("checking {}", e.name);
        every_manifest_value_is_reached_from_the_static_roots_on(&e);
    }
}

fn every_manifest_value_is_reached_from_the_static_roots_on(e: &tests::Entry) {
    let s = session(e);
    let nav = Nav { s: &s };
    let mut checked = 0;
    for v in e.manifest["values"].as_array().unwrap() {
        let path = v["path"].as_str().unwrap();
        let want = &v["value"];
        let got = nav.follow(path);
        match want {
            Value::String(w) => {
                assert_eq!(got["string"].as_str(), Some(w.as_str()), "{path}: {got}")
            }
            Value::Null => assert!(got.is_null(), "{path}: {got}"),
            Value::Number(n) if n.is_f64() => {
                assert_eq!(nav.unbox(&got).as_f64(), n.as_f64(), "{path}: {got}")
            }
            Value::Number(n) => assert_eq!(nav.unbox(&got).as_i64(), n.as_i64(), "{path}: {got}"),
            other => panic!("{path}: unexpected truth {other}"),
        }
        checked += 1;
    }
    assert_eq!(checked, 42);
}

#[test]
fn statics_equal_the_manifest() {
    // Every heap dump the tests claim Statics on (.NET 8, 9, 10 and 11).
    let heaps: Vec<_> = tests::readable_for(clrdata::discovery::layout::Capability::Statics)
        .into_iter()
        .filter(|e| e.program() == "heap")
        .collect();
    assert!(heaps.len() >= 3, "{} heap dumps", heaps.len());
    for e in heaps {
        eprintln!("checking {}", e.name);
        statics_equal_the_manifest_on(&e);
    }
}

fn statics_equal_the_manifest_on(e: &tests::Entry) {
    let s = session(e);
    let nav = Nav { s: &s };
    let reg = nav.statics("Heap.Registry");
    for st in e.manifest["statics"].as_array().unwrap() {
        let f = st["field"].as_str().unwrap();
        let got = &reg[f];
        if st["kind"] == "thread-static" {
            // Thread statics are listed, honestly without a value.
            assert!(got["unavailable"]
                .as_str()
                .unwrap()
                .contains("thread-static"));
            continue;
        }
        match (&st["value"], st.get("value_id")) {
            (_, Some(id)) => assert_eq!(&nav.field(got, "Id"), id, "{f}"),
            (Value::Object(o), _) => {
                // A struct static: the runtime keeps it boxed; its fields are the values.
                assert_eq!(got["type"], "Heap.GeoPoint");
                for (k, v) in o {
                    assert_eq!(nav.field(got, k).as_f64(), v.as_f64(), "{f}.{k}");
                }
            }
            (Value::String(w), _) => assert_eq!(got["string"].as_str(), Some(w.as_str())),
            (w, _) => assert_eq!(got, w, "{f}"),
        }
    }
}

#[test]
fn the_kept_exception_and_its_inner_one() {
    // Reached from the static Heap.Roots.Kept: every heap dump claiming Statics.
    let heaps: Vec<_> = tests::readable_for(clrdata::discovery::layout::Capability::Statics)
        .into_iter()
        .filter(|e| e.program() == "heap")
        .collect();
    for e in heaps {
        eprintln!("checking {}", e.name);
        the_kept_exception_and_its_inner_one_on(&e);
    }
}

fn the_kept_exception_and_its_inner_one_on(e: &tests::Entry) {
    let s = session(e);
    let nav = Nav { s: &s };
    let ex = &e.manifest["exceptions"][0];
    let kept = nav.follow("Heap.Roots.Kept");
    assert_eq!(kept["type"], ex["type"]);
    assert_eq!(nav.field(&kept, "_message")["string"], ex["message"]);
    let inner = nav.field(&kept, "_innerException");
    assert_eq!(inner["type"], ex["inner"]["type"]);
    assert_eq!(
        nav.field(&inner, "_message")["string"],
        ex["inner"]["message"]
    );
}

#[test]
fn dumpobj_name_and_size_equal_the_census_for_every_object_of_sampled_types() {
    for e in tests::readable() {
        let s = session(&e);
        let stat = &e.dac["heap_stat"]["types"];
        let mut checked = 0;
        for t in stat.as_array().unwrap().iter().take(25) {
            let mt = t["mt"].as_str().unwrap();
            let objs = run(&s, &format!("dumpheap -mt {mt}"));
            let mut total = 0;
            for o in objs["objects"].as_array().unwrap().iter().take(200) {
                let d = run(
                    &s,
                    &format!("dumpobj {} -nofields", o["address"].as_str().unwrap()),
                );
                assert_eq!(d["name"], t["type"], "{}: {}", e.name, o["address"]);
                assert_eq!(d["mt"], t["mt"]);
                assert_eq!(d["size"], o["size"], "{}: {}", e.name, o["address"]);
                total += d["size"].as_u64().unwrap();
                checked += 1;
            }
            if objs["objects"].as_array().unwrap().len() <= 200 {
                assert_eq!(total, t["total_size"].as_u64().unwrap(), "{}: {mt}", e.name);
            }
        }
        assert!(checked > 50, "{}: {checked}", e.name);
        // And every field of every Person-like user object decodes without an unreadable value.
        let r = run(&s, "dumpheap -stat");
        for t in r["statistics"].as_array().unwrap().iter().take(40) {
            let objs = run(
                &s,
                &format!("dumpheap -mt {} -limit 3", t["mt"].as_str().unwrap()),
            );
            for o in objs["objects"].as_array().unwrap() {
                let d = run(&s, &format!("dumpobj {}", o["address"].as_str().unwrap()));
                for f in d["fields"].as_array().unwrap() {
                    if f["attr"] == "instance" {
                        assert!(
                            f["value"].get("unavailable").is_none(),
                            "{}: {} {}: {f}",
                            e.name,
                            t["name"],
                            o["address"]
                        );
                        assert!(!f["name"].as_str().unwrap().starts_with("<field "), "{f}");
                    }
                }
            }
        }
    }
}

#[test]
fn verifyheap_finds_no_error_on_real_dumps() {
    for e in tests::readable() {
        let s = session(&e);
        let r = run(&s, "verifyheap");
        assert_eq!(r["errors"], 0, "{}: {}", e.name, r["problems"]);
        assert_eq!(
            r["objects"].as_u64().unwrap(),
            e.dac["heap_stat"]["total_objects"].as_u64().unwrap(),
            "{}",
            e.name
        );
        assert!(r["references"].as_u64().unwrap() > 100, "{}", e.name);
    }
}

#[test]
fn gcwhere_names_every_dac_segment() {
    for e in tests::readable() {
        let s = session(&e);
        let mut n = 0;
        for heap in e.dac["gc_heap"]["heaps"].as_array().unwrap() {
            let _ = heap;
        }
        for sg in e.dac["gc_heap"]["segments"].as_array().unwrap() {
            let (mem, end) = (hexv(&sg["mem"]), hexv(&sg["walk_end"]));
            if mem >= end {
                continue; // an empty segment holds no object
            }
            let r = run(&s, &format!("gcwhere {}", sg["mem"].as_str().unwrap()));
            assert_eq!(r["segment"], sg["address"], "{}", e.name);
            assert_eq!(r["kind"], sg["kind"], "{}", e.name);
            assert_eq!(r["heap"], sg["heap"], "{}", e.name);
            n += 1;
        }
        assert!(n >= 3, "{}", e.name);
        // Not in the heap: a precise error, not a panic.
        let err = commands::execute(&s, "gcwhere 10")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("not in the GC heap"), "{err}");
    }
}

#[test]
fn bad_addresses_get_precise_errors() {
    for e in of_programs(&["heap"]) {
        eprintln!("checking {}", e.name);
        bad_addresses_get_precise_errors_on(&e);
    }
}

fn bad_addresses_get_precise_errors_on(e: &tests::Entry) {
    let s = session(e);
    for line in [
        "dumpobj 10",
        "dumpobj 0",
        "dumparray 10",
        "objsize 10",
        "dumpmt 10",
        "dumpclass 10",
        "dumpmd 10",
        "dumpmodule 10",
    ] {
        let err = commands::execute(&s, line)
            .err()
            .unwrap_or_else(|| panic!("{line} succeeded"))
            .to_string();
        assert!(
            err.contains("0xa") || err.contains("0x10") || err.contains("0x0"),
            "{line}: {err}"
        );
    }
    // A valid address that is not an object start (inside a string).
    let people = Nav { s: &s }.follow("Heap.Roots.People");
    let inside = hexv(&people["address"]) + 4;
    let err = commands::execute(&s, &format!("dumpobj {inside:x}"))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("is not an object"), "{err}");
}

/// An independent walk: follows only the references of the types the heap program made,
/// decoded from the field tables of dumpobj (not from the GCDesc) and array elements.
fn walk_by_fields(s: &Session, root: &str) -> (BTreeSet<String>, u64) {
    let mut seen = BTreeSet::new();
    let mut size = 0;
    let mut stack = vec![root.to_owned()];
    while let Some(a) = stack.pop() {
        if !seen.insert(a.clone()) {
            continue;
        }
        let o = run(s, &format!("dumpobj {a}"));
        size += o["size"].as_u64().unwrap();
        let push_refs = |stack: &mut Vec<String>, fields: &Value| {
            for f in fields.as_array().into_iter().flatten() {
                if f["attr"] != "instance" {
                    continue;
                }
                if let Some(addr) = f["value"]["address"].as_str() {
                    if f["vt"] == false {
                        stack.push(addr.to_owned());
                    }
                }
            }
        };
        push_refs(&mut stack, &o["fields"]);
        // Embedded structs: their reference fields too.
        for f in o["fields"].as_array().unwrap() {
            if f["attr"] == "instance" && f["vt"] == true {
                if let Some(mt) = f["value"]["mt"].as_str() {
                    let vc = run(
                        s,
                        &format!("dumpvc {mt} {}", f["value"]["address"].as_str().unwrap()),
                    );
                    push_refs(&mut stack, &vc["fields"]);
                }
            }
        }
        if let Some(arr) = o["array"].as_object() {
            let et = arr["element_type"].as_str().unwrap();
            if et == "CLASS" || et == "VALUETYPE" {
                let r = run(s, &format!("dumparray {a} -details -nofields"));
                for e in r["elements"].as_array().unwrap() {
                    if et == "CLASS" {
                        if let Some(x) = e["value"]["address"].as_str() {
                            stack.push(x.to_owned());
                        }
                    } else {
                        push_refs(&mut stack, &e["fields"]);
                    }
                }
            }
        }
    }
    (seen, size)
}

#[test]
fn objsize_equals_an_independent_walk_by_fields() {
    for e in of_programs(&["heap"]) {
        eprintln!("checking {}", e.name);
        objsize_equals_an_independent_walk_by_fields_on(&e);
    }
}

fn objsize_equals_an_independent_walk_by_fields_on(e: &tests::Entry) {
    let s = session(e);
    let nav = Nav { s: &s };
    for path in [
        "Heap.Roots.People",
        "Heap.Roots.Entries",
        "Heap.Roots.Chain",
        "Heap.Roots.Slots",
        "Heap.Roots.PersonGrid",
        "Heap.Roots.Jagged",
        "Heap.Roots.ByName",
    ] {
        let root = nav.follow(path);
        let a = root["address"].as_str().unwrap();
        let (seen, size) = walk_by_fields(&s, a);
        let r = run(&s, &format!("objsize {a}"));
        assert_eq!(r["objects"].as_u64().unwrap(), seen.len() as u64, "{path}");
        assert_eq!(r["size"].as_u64().unwrap(), size, "{path}");
        assert!(r["errors"].as_array().unwrap().is_empty(), "{path}");
    }
    // People: the list, its array, 7 persons, their names, streets, one Tags array with 2
    // strings: the program's own structure.
    let people = nav.follow("Heap.Roots.People");
    let r = run(
        &s,
        &format!("objsize {}", people["address"].as_str().unwrap()),
    );
    assert!(r["objects"].as_u64().unwrap() >= 2 + 7 + 1 + 2, "{r}");
}

#[test]
fn dumpmt_and_dumpmodule_agree_with_dumpobj() {
    for e in of_programs(&["heap"]) {
        eprintln!("checking {}", e.name);
        dumpmt_and_dumpmodule_agree_with_dumpobj_on(&e);
    }
}

fn dumpmt_and_dumpmodule_agree_with_dumpobj_on(e: &tests::Entry) {
    let s = session(e);
    let nav = Nav { s: &s };
    let p = nav.follow("Heap.Roots.People[0]");
    let mt = p["mt"].as_str().unwrap();
    let d = run(&s, &format!("dumpmt {mt}"));
    assert_eq!(d["name"], "Heap.Person");
    let o = run(&s, &format!("dumpobj {}", p["address"].as_str().unwrap()));
    assert_eq!(d["ee_class"], o["ee_class"]);
    assert_eq!(
        d["base_size"].as_u64().unwrap(),
        o["size"].as_u64().unwrap()
    );
    assert!(d["file"].as_str().unwrap().ends_with("heap.dll"));
    let m = run(&s, &format!("dumpmodule {}", d["module"].as_str().unwrap()));
    assert_eq!(m["assembly"], "heap");
    assert!(m["path"].as_str().unwrap().ends_with("heap.dll"));
    // dumpclass lists the instance fields in declaration order with the same names.
    let c = run(
        &s,
        &format!("dumpclass {}", d["ee_class"].as_str().unwrap()),
    );
    let names: Vec<&str> = c["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    for n in ["Id", "Name", "Age", "Home", "Friend", "Tags"] {
        assert!(names.contains(&n), "{names:?}");
    }
}

#[test]
fn dumpmd_names_the_dac_stack_methods() {
    let mut checked = 0;
    for e in of_programs(&["heap", "hang"]) {
        let name = e.name.as_str();
        let s = session(&e);
        for st in e.dac["stacks"].as_array().unwrap() {
            for f in st["frames"].as_array().unwrap() {
                let (Some(md), Some(method)) = (f["methodDesc"].as_str(), f["method"].as_str())
                else {
                    continue;
                };
                if md == "0x0" || method.contains('[') || method.contains('<') {
                    continue; // generic instantiations print differently
                }
                let r = run(&s, &format!("dumpmd {md}"));
                assert_eq!(r["method_name"], method, "{name}: {md}");
                checked += 1;
            }
        }
    }
    assert!(checked > 20, "{checked}");
}
