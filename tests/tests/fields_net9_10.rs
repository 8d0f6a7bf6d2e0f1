//! Fields (FieldDesc) on .NET 9, 10 and 11, held to independent truths on every corpus dump of those
//! families that the tests claim Fields on (`tests::claims`: a GC heap, and the assemblies'
//! images in the dump):
//! - the offsets FieldDescs give for `System.Exception`'s fields equal the runtime's own
//!   contract descriptor's `Exception` type (a truth of the same build, not of our reader);
//! - every exception object ClrMD lists (`exceptions_on_heap`): `_message`, `_HResult` and
//!   `_innerException` read through FieldDescs equal ClrMD's message, HResult and inner;
//! - `dumpasync`'s analysis (`asyncsm::analyze`, which reads tasks and state machines by field
//!   name): its boxes equal the DAC's `async_state_machine_boxes` (address, MethodTable, type
//!   name, size), and every manifest chain is found innermost first, each box awaiting
//!   (`<>1__state` >= 0) and not completed;
//! - the heap scenario (heap-net9, heap-net10): the values the program recorded for objects
//!   reachable without statics (Persons, a generic Node chain, boxed structs and generic
//!   structs, struct arrays, the boxed GeoPoint of the static `Origin`, the kept exception).
//!
//! Environment: `DUMPSHELL_SKIP_DUMPS=a,*-net10h` leaves corpus dumps out (as
//! census_descriptor.rs: development against one patch while the held-out patch waits).

use clrdata::analysis::asyncsm;
use clrdata::discovery::layout::Capability;
use clrdata::model::fields::object_fields;
use clrdata::model::objects::{FieldData, FieldValue, ObjectReader};
use clrdata::prelude::*;
use clrdata::{Runtime, TypeNames};
use dumpreader::Dump;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

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

/// The .NET 9/10/11 corpus dumps the tests claim Fields on.
fn entries() -> Vec<tests::Entry> {
    let v: Vec<tests::Entry> = tests::all()
        .into_iter()
        .filter(|e| matches!(e.family(), 9..=11))
        .filter(|e| tests::claims(e, Capability::Fields))
        .filter(|e| {
            let s = skipped(&e.name);
            if s {
                eprintln!("fields_net9_10: {} skipped (DUMPSHELL_SKIP_DUMPS)", e.name);
            }
            !s
        })
        .collect();
    assert!(!v.is_empty(), "no .NET 9/10/11 dump with Fields claimed");
    v
}

fn open(e: &tests::Entry) -> Dump {
    e.open()
}

fn runtime<'d>(e: &tests::Entry, d: &'d Dump) -> Runtime<&'d Dump> {
    tests::discover(d).unwrap_or_else(|err| panic!("{}: {err}", e.name))
}

/// Every live object's address by type name (the DAC's spelling).
fn objects_by_type(r: &ObjectReader<'_, &Dump>) -> HashMap<String, Vec<u64>> {
    let heap = r.rt.gc_heap().unwrap();
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut out: HashMap<String, Vec<u64>> = HashMap::new();
    for o in heap.objects(r.rt) {
        if o.is_free {
            continue;
        }
        let n = names
            .entry(o.mt)
            .or_insert_with(|| r.type_name(o.mt))
            .clone();
        out.entry(n).or_default().push(o.address);
    }
    out
}

fn field<'f>(fs: &'f [FieldData], name: &str, what: &str) -> &'f FieldValue {
    &fs.iter()
        .rev()
        .find(|f| f.name == name)
        .unwrap_or_else(|| {
            panic!(
                "{what} has no field {name} (fields: {:?})",
                fs.iter().map(|f| &f.name).collect::<Vec<_>>()
            )
        })
        .value
}

/// The fields of what a field value designates: a referenced object or an embedded struct.
fn fields_of(r: &ObjectReader<'_, &Dump>, v: &FieldValue, what: &str) -> Vec<FieldData> {
    match v {
        FieldValue::Object { address, .. } if *address != 0 => {
            object_fields(r, *address, what).unwrap().1
        }
        FieldValue::ValueType {
            address,
            mt: Some(mt),
        } => r.value_type(*mt, *address).unwrap(),
        v => panic!("{what}: not an object or struct: {v:?}"),
    }
}

/// Follows `path` (field names) from the fields `fs`.
fn at(r: &ObjectReader<'_, &Dump>, fs: &[FieldData], path: &[&str], what: &str) -> FieldValue {
    let mut cur = fs.to_vec();
    for (i, name) in path.iter().enumerate() {
        let v = field(&cur, name, what).clone();
        if i + 1 == path.len() {
            return v;
        }
        cur = fields_of(r, &v, &format!("{what}.{name}"));
    }
    unreachable!()
}

fn string(v: &FieldValue) -> Option<String> {
    match v {
        FieldValue::Object { address: 0, .. } => None,
        FieldValue::Object {
            string: Some(s), ..
        } => Some(s.clone()),
        v => panic!("not a string: {v:?}"),
    }
}

fn int(v: &FieldValue) -> i64 {
    match v {
        FieldValue::Int { value } => *value,
        FieldValue::UInt { value } => *value as i64,
        v => panic!("not an integer: {v:?}"),
    }
}

fn float(v: &FieldValue) -> f64 {
    match v {
        FieldValue::Float { value } => *value,
        v => panic!("not a float: {v:?}"),
    }
}

/// The value the manifest recorded at `path`.
fn manifest_value<'m>(e: &'m tests::Entry, path: &str) -> &'m Value {
    &e.manifest["values"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["path"] == path)
        .unwrap_or_else(|| panic!("{}: the manifest has no value {path}", e.name))["value"]
}

#[test]
fn exception_field_offsets_equal_the_runtimes_descriptor() {
    let mut compared = 0;
    for e in entries() {
        let d = open(&e);
        let rt = runtime(&e, &d);
        let names = TypeNames::new();
        let r = ObjectReader::new(&rt, &names);
        let desc = rt
            .descriptor()
            .unwrap_or_else(|| panic!("{}: no contract descriptor", e.name));
        let ty = desc
            .types
            .get("Exception")
            .unwrap_or_else(|| panic!("{}: the descriptor has no Exception type", e.name));
        let ours: BTreeMap<String, u32> = r
            .instance_fields(rt.globals.exception_mt)
            .unwrap()
            .into_iter()
            .map(|(decl, f)| {
                let fd = r.fields(decl, 0, false).unwrap();
                let name = fd
                    .iter()
                    .find(|x| x.token == f.token)
                    .map(|x| x.name.clone())
                    .unwrap();
                (name, f.offset)
            })
            .collect();
        assert!(ty.fields.len() >= 5, "{}: {:?}", e.name, ty.fields);
        for (name, off) in &ty.fields {
            let got = ours
                .get(name)
                .unwrap_or_else(|| panic!("{}: no FieldDesc for Exception.{name}", e.name));
            // The descriptor's offsets are from the object's start (its MethodTable pointer);
            // a FieldDesc's from the first field.
            assert_eq!(
                *got as u64 + 8,
                *off,
                "{}: Exception.{name}: FieldDesc offset vs the descriptor's",
                e.name
            );
            compared += 1;
        }
        eprintln!(
            "fields_net9_10: {} ({}): Exception's {} descriptor fields equal the FieldDescs' \
             offsets ({} instance fields)",
            e.name,
            rt.info.version,
            ty.fields.len(),
            ours.len()
        );
    }
    eprintln!("fields_net9_10: {compared} Exception field offsets compared");
}

#[test]
fn exceptions_equal_clrmds() {
    let mut compared = 0;
    for e in entries() {
        let truth = tests::dumps_dir().join(format!("{}.clrmd.json", e.name));
        let Ok(text) = std::fs::read_to_string(&truth) else {
            eprintln!("fields_net9_10: {} has no ClrMD truth", e.name);
            continue;
        };
        let clrmd: Value = serde_json::from_str(&text).unwrap();
        let exs = clrmd["exceptions_on_heap"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let d = open(&e);
        let rt = runtime(&e, &d);
        let names = TypeNames::new();
        let r = ObjectReader::new(&rt, &names);
        for x in &exs {
            let a = hex(&x["address"]);
            let what = format!("{}: exception {a:#x}", e.name);
            let (mt, fs) = object_fields(&r, a, &what).unwrap();
            assert_eq!(r.type_name(mt), x["type"].as_str().unwrap(), "{what}");
            let msg = string(field(&fs, "_message", &what));
            assert_eq!(msg.as_deref(), x["message"].as_str(), "{what}: _message");
            let hr = int(field(&fs, "_HResult", &what)) as u32;
            assert_eq!(
                format!("{hr:08x}"),
                x["hresult"].as_str().unwrap(),
                "{what}: _HResult"
            );
            let inner = field(&fs, "_innerException", &what).address().unwrap();
            let want = if x["inner"].is_null() {
                0
            } else {
                hex(&x["inner"])
            };
            assert_eq!(inner, want, "{what}: _innerException");
            compared += 4;
        }
        eprintln!(
            "fields_net9_10: {} ({}): {} exceptions equal ClrMD's (type, _message, _HResult, \
             _innerException)",
            e.name,
            rt.info.version,
            exs.len()
        );
    }
    assert!(compared > 0, "no exception compared");
    eprintln!("fields_net9_10: {compared} exception fields compared with ClrMD");
}

#[test]
fn dumpasync_boxes_equal_the_dacs() {
    let mut matched = 0;
    let mut chains_checked = 0;
    for e in entries() {
        let Some(dac) = e.dac["async_state_machine_boxes"]["boxes"].as_array() else {
            continue;
        };
        let d = open(&e);
        let rt = runtime(&e, &d);
        let names = TypeNames::new();
        let heap = rt.gc_heap().unwrap();
        let a = asyncsm::analyze(&rt, &names, &heap);
        assert!(a.errors.is_empty(), "{}: {:?}", e.name, a.errors);
        let r = ObjectReader::new(&rt, &names);
        // The DAC's list is the heap's `AsyncStateMachineBox`es (Task boxes); pooled
        // ValueTask boxes (no Task) are checked against its heap census below.
        let ours: BTreeSet<(u64, u64, String, u64)> = a
            .boxes
            .iter()
            .filter(|b| b.kind == asyncsm::BoxKind::Task)
            .map(|b| {
                let (_, info) = r.object_mt(b.address).unwrap();
                let size = r.object_size(b.address, &info).unwrap();
                (b.address, b.mt, b.box_type.clone(), size)
            })
            .collect();
        let theirs: BTreeSet<(u64, u64, String, u64)> = dac
            .iter()
            .map(|b| {
                (
                    hex(&b["address"]),
                    hex(&b["mt"]),
                    b["type"].as_str().unwrap().to_owned(),
                    b["size"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(ours, theirs, "{}: dumpasync's boxes vs the DAC's", e.name);
        let pooled: Vec<&asyncsm::AsyncBox> = a
            .boxes
            .iter()
            .filter(|b| b.kind == asyncsm::BoxKind::Pooling)
            .collect();
        // (the runtime-async methods' frames, .NET 11, are no boxes)
        let state_machines = a
            .boxes
            .iter()
            .filter(|b| b.kind != asyncsm::BoxKind::RuntimeAsync)
            .count();
        assert_eq!(state_machines, theirs.len() + pooled.len(), "{}", e.name);
        // Pooled boxes: every PoolingAsyncValueTaskMethodBuilder box of the DAC's census is
        // ours or idle in its pool.
        let census: u64 = e.dac["heap_stat"]["types"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| {
                t["type"].as_str().unwrap().starts_with(
                    "System.Runtime.CompilerServices.PoolingAsyncValueTaskMethodBuilder`1+StateMachineBox`1[",
                )
            })
            .map(|t| t["count"].as_u64().unwrap())
            .sum();
        assert_eq!(
            pooled.len() + a.idle_pooled_boxes,
            census as usize,
            "{}: pooled boxes vs the DAC's census",
            e.name
        );
        matched += theirs.len() + pooled.len();
        // The manifest's chains: innermost first, each box awaiting and not completed.
        let types = |c: &Vec<usize>| -> Vec<String> {
            c.iter()
                .map(|&i| a.boxes[i].state_machine_type.clone())
                .collect()
        };
        for m in e.manifest["async_chains"].as_array().into_iter().flatten() {
            // (a runtime-async method, .NET 11, is its own frame: named by its method)
            let want = tests::chain_identity(m);
            if m["cycle"] == true {
                // A ring: the same boxes, in continuation order from any of them.
                let ring = a
                    .cycles
                    .iter()
                    .find(|r| {
                        let t = types(r);
                        t.len() == want.len()
                            && (0..t.len()).any(|k| t[k..].iter().chain(&t[..k]).eq(want.iter()))
                    })
                    .unwrap_or_else(|| {
                        panic!("{}: cycle {want:?} not found: {:?}", e.name, a.cycles)
                    });
                assert_eq!(a.cycles.len(), 1, "{}", e.name);
                for &i in ring {
                    assert_eq!(a.boxes[i].state_name(), "awaiting", "{}", e.name);
                }
                chains_checked += 1;
                continue;
            }
            // An HTTP request's chain (aspnethang: `from_requests`) goes on through the
            // framework's request pipeline (the route's lambda, Kestrel): the manifest lists the
            // program's methods, innermost first.
            let prefix = m["from_requests"].is_object();
            let matches = |c: &Vec<usize>| {
                let t = types(c);
                t == want || (prefix && t.len() > want.len() && t[..want.len()] == want[..])
            };
            let n = a.chains.iter().filter(|c| matches(c)).count();
            assert_eq!(
                n as u64,
                m["count"].as_u64().unwrap_or(1),
                "{}: chains {}",
                e.name,
                m["name"]
            );
            let found = a.chains.iter().find(|c| matches(c)).unwrap_or_else(|| {
                panic!(
                    "{}: chain {} ({want:?}) not found; chains: {:?}",
                    e.name,
                    m["name"],
                    a.chains.iter().map(types).collect::<Vec<_>>()
                )
            });
            for &i in found {
                let b = &a.boxes[i];
                assert!(
                    b.state.is_some_and(|s| s >= 0),
                    "{}: {:#x} state {:?}",
                    e.name,
                    b.address,
                    b.state
                );
                assert!(!b.completed(), "{}: {:#x} completed", e.name, b.address);
                assert_eq!(b.state_name(), "awaiting", "{}: {:#x}", e.name, b.address);
            }
            // What the innermost awaits: the manifest's runtime type of the awaited object (a
            // ValueTask's source where it is one).
            if let Some(at) = m["awaited_type"].as_str() {
                let inner = &a.boxes[found[0]];
                let got: Vec<&str> = inner
                    .awaiters
                    .iter()
                    .filter_map(|w| w.object_type.as_deref())
                    .collect();
                assert_eq!(got, vec![at], "{}: chain {} awaits", e.name, m["name"]);
            }
            chains_checked += 1;
        }
        eprintln!(
            "fields_net9_10: {} ({}): {} boxes equal the DAC's, {} manifest chains found",
            e.name,
            rt.info.version,
            theirs.len(),
            e.manifest["async_chains"].as_array().map_or(0, |c| c.len())
        );
    }
    assert!(matched > 0, "no box compared");
    eprintln!("fields_net9_10: {matched} boxes matched, {chains_checked} chains checked");
}

#[test]
fn heap_scenario_values_equal_the_manifest() {
    let mut compared = 0;
    for e in entries().into_iter().filter(|e| e.program() == "heap") {
        let d = open(&e);
        let rt = runtime(&e, &d);
        let names = TypeNames::new();
        let r = ObjectReader::new(&rt, &names);
        let by_type = objects_by_type(&r);
        let of = |t: &str| -> Vec<u64> { by_type.get(t).cloned().unwrap_or_default() };
        let name = &e.name;
        let mut check = |ok: bool, what: String| {
            assert!(ok, "{name}: {what}");
            compared += 1;
        };
        let mv = |p: &str| manifest_value(&e, p).clone();

        // Persons: People[0] is the one named "Zoë".
        let persons: Vec<(u64, Vec<FieldData>)> = of("Heap.Person")
            .into_iter()
            .map(|a| (a, object_fields(&r, a, "Heap.Person").unwrap().1))
            .collect();
        check(persons.len() == 7, format!("{} Persons", persons.len()));
        let named = |n: &str| -> Vec<&Vec<FieldData>> {
            persons
                .iter()
                .filter(|(_, f)| string(field(f, "Name", "Person")).as_deref() == Some(n))
                .map(|(_, f)| f)
                .collect()
        };
        let zoe_name = mv("Heap.Roots.People[0].Name");
        let zoe = named(zoe_name.as_str().unwrap());
        check(zoe.len() == 1, format!("{} Persons named Zoë", zoe.len()));
        let zoe = zoe[0];
        check(
            int(field(zoe, "Age", "Zoë")) == mv("Heap.Roots.People[0].Age").as_i64().unwrap(),
            "People[0].Age".into(),
        );
        check(
            string(&at(&r, zoe, &["Home", "Street"], "Zoë")).as_deref()
                == mv("Heap.Roots.People[0].Home.Street").as_str(),
            "People[0].Home.Street".into(),
        );
        check(
            int(&at(&r, zoe, &["Home", "Number"], "Zoë"))
                == mv("Heap.Roots.People[0].Home.Number").as_i64().unwrap(),
            "People[0].Home.Number".into(),
        );
        check(
            string(&at(&r, zoe, &["Friend", "Name"], "Zoë")).as_deref()
                == mv("Heap.Roots.People[0].Friend.Name").as_str(),
            "People[0].Friend.Name".into(),
        );
        // ByName["李雷"].Id
        let li = named("李雷");
        check(li.len() == 1, format!("{} Persons named 李雷", li.len()));
        check(
            int(field(li[0], "Id", "李雷"))
                == mv("Heap.Roots.ByName[\"李雷\"].Id").as_i64().unwrap(),
            "ByName[李雷].Id".into(),
        );
        // People[3]: the empty name, no home street.
        let empty = named("");
        check(
            empty.len() == 1,
            format!("{} Persons named \"\"", empty.len()),
        );
        let street = match field(empty[0], "Home", "People[3]") {
            FieldValue::Object { address: 0, .. } => None,
            _ => string(&at(&r, empty[0], &["Home", "Street"], "People[3]")),
        };
        check(
            street.as_deref() == mv("Heap.Roots.People[3].Home.Street").as_str(),
            "People[3].Home.Street".into(),
        );

        // The generic chain: a Node<string> whose Next.Next.Value is "node 3".
        let nodes = of("Heap.Node`1[[System.String, System.Private.CoreLib]]");
        check(nodes.len() == 5, format!("{} Node<string>", nodes.len()));
        let want = mv("Heap.Roots.Chain.Next.Next.Value");
        let hits = nodes
            .iter()
            .filter(|&&n| {
                let fs = object_fields(&r, n, "Node").unwrap().1;
                let next = field(&fs, "Next", "Node");
                if next.address() == Some(0) {
                    return false;
                }
                let fs2 = fields_of(&r, next, "Node.Next");
                let next2 = field(&fs2, "Next", "Node.Next");
                next2.address() != Some(0)
                    && string(field(&fields_of(&r, next2, "Node.Next.Next"), "Value", "n"))
                        .as_deref()
                        == want.as_str()
            })
            .count();
        check(hits >= 1, "Chain.Next.Next.Value".into());

        // Boxed structs: Slot<int>, Point, Color, and the static Origin's GeoPoint box.
        let boxed = |t: &str| -> Vec<FieldData> {
            let v = of(t);
            assert_eq!(v.len(), 1, "{name}: {t} boxes");
            object_fields(&r, v[0], t).unwrap().1
        };
        let slot = boxed("Heap.Slot`1[[System.Int32, System.Private.CoreLib]]");
        check(
            int(field(&slot, "Value", "BoxedSlot"))
                == mv("Heap.Roots.BoxedSlot.Value").as_i64().unwrap(),
            "BoxedSlot.Value".into(),
        );
        let point = boxed("Heap.Point");
        check(
            int(field(&point, "X", "BoxedPoint"))
                == mv("Heap.Roots.BoxedPoint.X").as_i64().unwrap(),
            "BoxedPoint.X".into(),
        );
        let color = boxed("Heap.Color");
        check(
            int(field(&color, "value__", "BoxedColor"))
                == mv("Heap.Roots.BoxedColor").as_i64().unwrap(),
            "BoxedColor".into(),
        );
        let geo = boxed("Heap.GeoPoint");
        let origin = e.manifest["statics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["field"] == "Origin")
            .unwrap()["value"]
            .clone();
        for c in ["Lat", "Lon"] {
            check(
                float(field(&geo, c, "Origin")) == origin[c].as_f64().unwrap(),
                format!("Origin.{c}"),
            );
        }

        // Struct arrays: Points[999].Y, Entries[3].{Key, Value.Id, Weight}, Slots[2].
        let element = |t: &str, i: u64| -> Vec<FieldData> {
            let v = of(t);
            assert_eq!(v.len(), 1, "{name}: {t}");
            let (_, info) = r.object_mt(v[0]).unwrap();
            let arr = r.array(v[0], &info).unwrap().unwrap();
            assert!(i < arr.length, "{name}: {t}[{i}] of {}", arr.length);
            r.value_type(arr.element_mt, arr.data + i * arr.component_size as u64)
                .unwrap()
        };
        let p = element("Heap.Point[]", 999);
        check(
            int(field(&p, "Y", "Points[999]")) == mv("Heap.Roots.Points[999].Y").as_i64().unwrap(),
            "Points[999].Y".into(),
        );
        let en = element("Heap.Entry[]", 3);
        check(
            string(field(&en, "Key", "Entries[3]")).as_deref()
                == mv("Heap.Roots.Entries[3].Key").as_str(),
            "Entries[3].Key".into(),
        );
        check(
            int(&at(&r, &en, &["Value", "Id"], "Entries[3]"))
                == mv("Heap.Roots.Entries[3].Value.Id").as_i64().unwrap(),
            "Entries[3].Value.Id".into(),
        );
        check(
            float(field(&en, "Weight", "Entries[3]"))
                == mv("Heap.Roots.Entries[3].Weight").as_f64().unwrap(),
            "Entries[3].Weight".into(),
        );
        let sl = element("Heap.Slot`1[[Heap.Person, heap]][]", 2);
        check(
            string(&at(&r, &sl, &["Value", "Name"], "Slots[2]")).as_deref()
                == mv("Heap.Roots.Slots[2].Value.Name").as_str(),
            "Slots[2].Value.Name".into(),
        );
        check(
            int(field(&sl, "Version", "Slots[2]"))
                == mv("Heap.Roots.Slots[2].Version").as_i64().unwrap(),
            "Slots[2].Version".into(),
        );

        // The kept exception and its inner one.
        let kept = of("Heap.ValidationException");
        check(
            kept.len() == 1,
            format!("{} ValidationException", kept.len()),
        );
        let fs = object_fields(&r, kept[0], "Kept").unwrap().1;
        let kept_msg = string(field(&fs, "_message", "Kept"));
        let inner_msg = match field(&fs, "_innerException", "Kept") {
            FieldValue::Object { address: 0, .. } => None,
            v => string(field(&fields_of(&r, v, "Kept.inner"), "_message", "inner")),
        };
        // The manifest names the kept exception's message and its inner one's; which object
        // is which is decided by the messages themselves.
        let want_outer = mv("Heap.Roots.Kept._message");
        let want_inner = mv("Heap.Roots.Kept._innerException._message");
        check(
            kept_msg.as_deref() == want_outer.as_str()
                || kept_msg.as_deref() == want_inner.as_str(),
            format!("Kept._message {kept_msg:?}"),
        );
        if kept_msg.as_deref() == want_outer.as_str() {
            check(
                inner_msg.as_deref() == want_inner.as_str(),
                "Kept._innerException._message".into(),
            );
        }
        eprintln!(
            "fields_net9_10: {name} ({}): heap scenario values equal the manifest's",
            rt.info.version
        );
    }
    assert!(compared > 0, "no heap scenario dump compared");
    eprintln!("fields_net9_10: {compared} heap-scenario facts compared with the manifest");
}

/// The commands themselves (the repl, its capability gate included): `dumpasync --completed`
/// lists the DAC's boxes, and `dumpobj` of every exception ClrMD lists shows its `_message` and
/// `_HResult` as ClrMD reads them.
#[test]
fn dumpasync_and_dumpobj_commands_work() {
    use commands::Session;
    let run = |s: &Session, line: &str| -> Value {
        let (out, _) = commands::execute(s, line)
            .unwrap_or_else(|err| panic!("{line}: {err}"))
            .unwrap();
        out.json_document()["result"].clone()
    };
    let mut boxes = 0;
    let mut objects = 0;
    for e in entries() {
        let s = Session::open_with(&e.dump_path(), &e.open_options())
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let dac: BTreeSet<u64> = e.dac["async_state_machine_boxes"]["boxes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| hex(&b["address"]))
            .collect();
        let r = run(&s, "dumpasync --completed");
        // Task boxes only: pooled ValueTask boxes are no AsyncStateMachineBox (checked against
        // the census in dumpasync_boxes_equal_the_dacs).
        let task_boxes = || {
            r["chains"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|c| c["boxes"].as_array().unwrap().iter())
                .filter(|b| b["kind"] == "task")
        };
        let ours: BTreeSet<u64> = task_boxes().map(|b| hex(&b["address"])).collect();
        assert_eq!(ours, dac, "{}: dumpasync --completed vs the DAC", e.name);
        let pooled: BTreeSet<&str> = r["chains"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["boxes"].as_array().unwrap().iter())
            .filter(|b| b["kind"] == "pooling")
            .map(|b| b["address"].as_str().unwrap())
            .collect();
        assert_eq!(
            r["total_boxes"].as_u64().unwrap() as usize,
            dac.len() + pooled.len(),
            "{}",
            e.name
        );
        boxes += dac.len();
        let truth = tests::dumps_dir().join(format!("{}.clrmd.json", e.name));
        let Ok(text) = std::fs::read_to_string(&truth) else {
            continue;
        };
        let clrmd: Value = serde_json::from_str(&text).unwrap();
        for x in clrmd["exceptions_on_heap"].as_array().into_iter().flatten() {
            let a = x["address"].as_str().unwrap();
            let o = run(&s, &format!("dumpobj {a}"));
            let fs = o["fields"].as_array().unwrap();
            let get = |n: &str| {
                fs.iter()
                    .rev()
                    .find(|f| f["name"] == n)
                    .unwrap_or_else(|| panic!("{}: {a} has no {n}: {o}", e.name))["value"]
                    .clone()
            };
            let msg = get("_message");
            assert_eq!(
                msg["string"].as_str(),
                x["message"].as_str(),
                "{}: {a} _message",
                e.name
            );
            assert_eq!(
                format!("{:08x}", get("_HResult").as_i64().unwrap() as u32),
                x["hresult"].as_str().unwrap(),
                "{}: {a} _HResult",
                e.name
            );
            objects += 1;
        }
    }
    assert!(boxes > 0 && objects > 0);
    eprintln!(
        "fields_net9_10: commands: {boxes} boxes, {objects} dumpobj exceptions equal the truths"
    );
}
