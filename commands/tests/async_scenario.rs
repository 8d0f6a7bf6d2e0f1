//! The async scenario's extras, through the commands: a lock held three times by one thread
//! and never contended (a thin lock in the object's header), and a ConcurrentQueue of a value
//! type, each against what the program recorded in its manifest.

use commands::Session;
use serde_json::Value;

fn run(s: &Session, line: &str) -> Value {
    let (out, _) = commands::execute(s, line)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .unwrap();
    out.json_document()["result"].clone()
}

fn session(e: &tests::Entry) -> Session {
    Session::open_with(&e.dump_path(), &e.open_options()).unwrap()
}

#[test]
fn the_thin_lock_has_its_owner_and_recursion() {
    let e = tests::entry("async");
    let s = session(&e);
    let lock = e.manifest["locks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["kind"] == "thin-lock")
        .unwrap();
    let owner = e.manifest["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["managed_id"] == lock["owner_managed_id"])
        .unwrap();
    let r = run(&s, "syncblk");
    let thin: Vec<&Value> = r["thin_locks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["type"] == lock["type"])
        .collect();
    assert_eq!(thin.len(), 1, "{r}");
    let t = thin[0];
    assert_eq!(t["owner"]["managed_id"], lock["owner_managed_id"]);
    assert_eq!(t["owner"]["os_id"], owner["os_id"]);
    assert_eq!(t["recursion"], lock["acquisitions"]);
    // The object is the one instance of its type on the heap.
    let objs = run(
        &s,
        &format!("dumpheap -type {}", lock["type"].as_str().unwrap()),
    );
    assert_eq!(objs["objects"][0]["address"], t["object"]);
    // No sync block was made for it: it is only in the header.
    assert!(!r["sync_blocks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|b| b["object"] == t["object"]));
}

#[test]
fn a_value_type_concurrent_queue_lists_its_values_in_order() {
    let e = tests::entry("async");
    let s = session(&e);
    let c = &e.manifest["collections"][0];
    let ty = c["type"].as_str().unwrap();
    let list = run(&s, &format!("dumpheap -type '{ty}'"));
    let objs: Vec<&Value> = list["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| {
            list["statistics"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["mt"] == o["mt"] && t["name"] == ty)
        })
        .collect();
    assert_eq!(objs.len(), 1, "{list}");
    let q = run(&s, &format!("dcq {}", objs[0]["address"].as_str().unwrap()));
    assert_eq!(q["count"], c["count"]);
    assert_eq!(q["element_type"], c["element_type"]);
    let values: Vec<Value> = q["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["value"].clone())
        .collect();
    assert_eq!(Value::from(values), c["values"]);
}
