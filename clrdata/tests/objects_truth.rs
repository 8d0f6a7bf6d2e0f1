//! The GC reference layout read from the GCDesc equals the one derived independently from the
//! field types (FieldDescs + metadata signatures), for one object of every type of every .NET 8
//! corpus census; and statics of the heap scenario hold what its program set.

use clrdata::model::objects::{elem, FieldValue, ObjectReader};
use clrdata::prelude::*;
use clrdata::TypeNames;
use dumpreader::{Dump, Memory};
use std::collections::{BTreeSet, HashSet};

const NET8: &[&str] = &[
    "hang",
    "deadlock",
    "heap",
    "crash",
    "threadpool",
    "servergc",
    "windows-hang",
];

/// Reference slots of the value at `base` of type `mt` from its fields alone.
fn slots_from_fields<M: Memory>(
    r: &ObjectReader<'_, M>,
    mt: u64,
    base: u64,
    out: &mut BTreeSet<u64>,
    depth: u32,
) -> bool {
    assert!(depth < 16);
    for f in r.fields(mt, base, false).unwrap() {
        let a = f.address.unwrap();
        match (f.element_type, &f.value) {
            (elem::VALUETYPE, FieldValue::ValueType { mt: Some(vm), .. })
                if !slots_from_fields(r, *vm, a, out, depth + 1) =>
            {
                return false
            }
            (elem::VALUETYPE, FieldValue::ValueType { mt: Some(_), .. }) => {}
            // A struct field of a generic instantiation (AsyncTaskMethodBuilder<T>): its
            // MethodTable is not resolved from the signature yet.
            (elem::VALUETYPE, _) => return false,
            (elem::CLASS, _) => {
                out.insert(a);
            }
            _ => {}
        }
    }
    true
}

#[test]
fn gcdesc_references_equal_the_field_layout_for_every_census_type() {
    let mut checked = 0;
    let mut unresolved = Vec::new();
    for name in NET8 {
        let e = tests::entry(name);
        let d = Dump::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let rt = tests::discover(&d).unwrap();
        let names = TypeNames::new();
        let r = ObjectReader::new(&rt, &names);
        let heap = rt.gc_heap().unwrap();
        let mut seen = HashSet::new();
        for o in heap.objects(&rt) {
            if o.is_free || !seen.insert(o.mt) {
                continue;
            }
            let (mt, info) = r.object_mt(o.address).unwrap();
            let size = r.raw_size(o.address, &info).unwrap();
            let gc: BTreeSet<u64> = r
                .reference_slots(o.address, mt, size, 1 << 24)
                .unwrap()
                .into_iter()
                .collect();
            let mut fields = BTreeSet::new();
            let mut complete = true;
            if let Some(arr) = r.array(o.address, &info).unwrap() {
                for i in 0..arr.length {
                    let ea = arr.data + i * arr.component_size as u64;
                    match arr.element_type {
                        elem::CLASS => {
                            fields.insert(ea);
                        }
                        elem::VALUETYPE => {
                            complete &= slots_from_fields(&r, arr.element_mt, ea, &mut fields, 0)
                        }
                        _ => {}
                    }
                }
            } else if mt != rt.globals.string_mt {
                complete = slots_from_fields(&r, mt, o.address + 8, &mut fields, 0);
            }
            if !complete {
                unresolved.push(format!("{name}: {}", r.type_name(mt)));
                continue;
            }
            assert_eq!(
                gc,
                fields,
                "{name}: {} at {:#x}",
                r.type_name(mt),
                o.address
            );
            checked += 1;
        }
    }
    eprintln!("checked {checked}, unresolved {}", unresolved.len());
    assert!(checked > 500, "{checked}");
    // Types holding a struct of a generic instantiation are not checked; they are few.
    assert!(
        unresolved.len() * 20 < checked,
        "{checked} checked; unresolved: {unresolved:?}"
    );
}

#[test]
fn heap_statics_hold_the_programs_values() {
    let e = tests::entry("heap");
    let d = Dump::open_with(&e.dump_path(), &e.open_options()).unwrap();
    let rt = tests::discover(&d).unwrap();
    let names = TypeNames::new();
    let r = ObjectReader::new(&rt, &names);
    // The Person type's module is the program's.
    let heap = rt.gc_heap().unwrap();
    let person = heap
        .census(&rt)
        .types
        .iter()
        .map(|t| t.mt)
        .find(|&mt| r.type_name(mt) == "Heap.Person")
        .unwrap();
    let module = rt.method_table(person).unwrap().module.unwrap();
    let rid = r.find_typedef(module, "Heap.Registry").unwrap();
    let reg = r.typedef_mt(module, rid).unwrap();
    assert_eq!(r.type_name(reg), "Heap.Registry");
    let statics: Vec<_> = r
        .fields(reg, 0, true)
        .unwrap()
        .into_iter()
        .filter(|f| f.attr != "instance")
        .collect();
    let get = |n: &str| statics.iter().find(|f| f.name == n).unwrap().value.clone();
    assert_eq!(get("Counter"), FieldValue::Int { value: 42 });
    match get("Motto") {
        FieldValue::Object { string, .. } => {
            assert_eq!(
                string.as_deref(),
                e.manifest["statics"][1]["value"].as_str()
            )
        }
        v => panic!("{v:?}"),
    }
    match get("Origin") {
        FieldValue::ValueType { address, mt } => {
            let fs = r.value_type(mt.unwrap(), address).unwrap();
            assert_eq!(fs[0].value, FieldValue::Float { value: 48.8566 });
            assert_eq!(fs[1].value, FieldValue::Float { value: 2.3522 });
        }
        v => panic!("{v:?}"),
    }
    assert!(matches!(get("CurrentUser"), FieldValue::Unavailable { .. }));
}
