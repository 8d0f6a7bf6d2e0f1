//! `dumpshell triage --buckets` on a fleet made from the corpus: small dumps copied under other
//! names and times, the crash program's dumps of one bug on four runtimes (other pids, thread
//! ids and addresses; on .NET 9 another order, so another message), other crashes of another program, the deadlock and the hang. Bucket
//! membership is what the scenarios' manifests say it must be (docs/buckets.md); a second run
//! reads no dump again (the store), and a copy under a new name is not read either.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The corpus dumps of the fleet: (name, the bucket it must fall in, by the manifest's bug).
const FLEET: [(&str, &str); 9] = [
    // the crash program: InvalidOperationException thrown in Crash.Program.ProcessOrder
    ("crash", "order"),
    ("crash-net10", "order"),
    ("crash-net11", "order"),
    // the same bug with another order: "Order 23 is corrupt", "Bad checksum digit 'y'"
    ("crashorder-net9", "order"),
    // the fault program: other bugs (a NullReferenceException in ReadNext, a FailFast in Guarded)
    ("faultnull-net10", "nullref"),
    ("failfast-net10", "failfast"),
    ("deadlock-net10", "deadlock"),
    ("hang-net10", "hang"),
    // the same hang on .NET 8 (the runtime's own wait frames differ: Monitor.ObjWait)
    ("hang", "hang"),
];

fn copy_dump(from: &Path, to: &Path, age_days: u64) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    let src = std::fs::File::open(from).unwrap();
    let mut dst = std::fs::File::create(to).unwrap();
    dumpreader::copy_sparse(src, &mut dst).unwrap();
    let t = SystemTime::now() - Duration::from_secs(age_days * 86_400);
    dst.set_modified(t).unwrap();
}

fn secs_ago(days: u64) -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - days * 86_400
}

struct Run {
    doc: Value,
    status: i32,
}

fn run(dir: &Path, store: &Path, dirs: &[PathBuf], extra: &[&str]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dumpshell"));
    cmd.args(["triage", "--buckets", "--json", "--no-recorded-paths"])
        .arg("--store")
        .arg(store)
        .args(extra);
    for d in dirs {
        cmd.arg("--image-path").arg(d);
    }
    cmd.arg(dir);
    let out = cmd.output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let doc: Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{e}: {text}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(doc["command"], "buckets");
    Run {
        doc: doc["result"].clone(),
        status: out.status.code().unwrap_or(-1),
    }
}

/// The bucket holding `file` (a path ending).
fn bucket_of<'a>(r: &'a Value, file: &str) -> &'a Value {
    let hits: Vec<&Value> = r["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| {
            b["dumps"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d.as_str().unwrap().ends_with(file))
        })
        .collect();
    assert_eq!(hits.len(), 1, "{file} is in {} buckets", hits.len());
    hits[0]
}

fn names(b: &Value) -> Vec<String> {
    let mut v: Vec<String> = b["dumps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            Path::new(d.as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_fleet_falls_into_the_buckets_of_its_bugs_and_is_read_once() {
    let mut entries = Vec::new();
    for (name, bug) in FLEET {
        let e = tests::entry(name);
        // .NET 8.0.4's files come from no package index this project reaches: its dumps are
        // read from their memory alone (tests::framework_dir)
        if !e.has_framework() && e.runtime_version() != "8.0.4" {
            eprintln!(
                "SKIPPED the fleet test: the .NET {} runtime pack for {name} is not in the NuGet cache (dumps/fetch-frameworks.sh)",
                e.runtime_version()
            );
            return;
        }
        entries.push((e, bug));
    }
    let root = std::env::temp_dir().join(format!("dumpshell-fleet-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let fleet = root.join("fleet");
    let store = root.join("triage.sqlite");
    let mut dirs: Vec<PathBuf> = entries
        .iter()
        .flat_map(|(e, _)| e.framework_dirs().into_iter().chain(e.image_dir()))
        .collect();
    dirs.sort();
    dirs.dedup();
    // every corpus dump under a name of its own, written 10 days ago ...
    let mut expected: Vec<(String, &str)> = Vec::new();
    for (e, bug) in &entries {
        let f = format!("{}.dmp", e.name);
        copy_dump(&e.dump_path(), &fleet.join(&f), 10);
        expected.push((f, bug));
    }
    // ... copies under other names and times: the crash of .NET 10 on two more hosts (one
    // 20 days ago, the first), the hang on another host yesterday
    copy_dump(
        &fleet.join("crash-net10.dmp"),
        &fleet.join("host-a/core.4242"),
        20,
    );
    expected.push(("core.4242".into(), "order"));
    copy_dump(
        &fleet.join("crash.dmp"),
        &fleet.join("host-b/orders.dmp"),
        2,
    );
    expected.push(("orders.dmp".into(), "order"));
    copy_dump(
        &fleet.join("hang-net10.dmp"),
        &fleet.join("host-c/stuck.dmp"),
        1,
    );
    expected.push(("stuck.dmp".into(), "hang"));
    // and a file that is no dump: reported once, the others go on
    std::fs::write(fleet.join("broken.dmp"), b"not a dump at all").unwrap();

    let first = run(&fleet, &store, &dirs, &[]);
    let r = &first.doc;
    assert_eq!(
        first.status, 1,
        "a dump that cannot be read makes the status 1"
    );
    let failed = r["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0]["dump"].as_str().unwrap().ends_with("broken.dmp"));
    // each content once: the copies are not read
    assert_eq!(r["read"], entries.len() as u64 + 1);
    assert_eq!(r["reused"], 3);

    // membership: exactly the dumps of one bug share a bucket
    for (file, bug) in &expected {
        let b = bucket_of(r, file);
        let mut want: Vec<String> = expected
            .iter()
            .filter(|(_, g)| g == bug)
            .map(|(f, _)| f.clone())
            .collect();
        want.sort();
        assert_eq!(
            names(b),
            want,
            "the bucket of {file} ({bug}): {}",
            b["signature"]
        );
    }
    let buckets = r["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 5, "{buckets:#?}");
    // what each bucket says, from the manifests
    let order = bucket_of(r, "crash.dmp");
    assert_eq!(order["kind"], "crash");
    assert_eq!(
        order["count"],
        expected.iter().filter(|(_, b)| *b == "order").count() as u64
    );
    // one bug, different messages
    let messages: std::collections::BTreeSet<&str> = ["crash", "crashorder-net9"]
        .iter()
        .map(|n| {
            let e = entries.iter().find(|(e, _)| e.name == *n).unwrap();
            e.0.manifest["exceptions"][0]["message"].as_str().unwrap()
        })
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(
        order["detail"]["exception_type"],
        entries[0].0.manifest["exceptions"][0]["type"]
    );
    let thrown_in = entries[0].0.manifest["exceptions"][0]["thrown_in"]
        .as_str()
        .unwrap();
    let frames = order["detail"]["frames"].as_array().unwrap();
    assert!(
        frames[0]
            .as_str()
            .unwrap()
            .starts_with(&format!("{thrown_in}(")),
        "{frames:?}"
    );
    assert_eq!(order["detail"]["app_frames"], true);
    // first and last seen: the dumps' own times (20 days ago; 2 days ago)
    let near = |v: &Value, want: u64| v.as_u64().unwrap().abs_diff(want) < 120;
    assert!(
        near(&order["first_seen"], secs_ago(20)),
        "{}",
        order["first_seen"]
    );
    assert!(
        near(&order["last_seen"], secs_ago(2)),
        "{}",
        order["last_seen"]
    );
    assert!(order["example"].as_str().unwrap().ends_with("orders.dmp"));
    let mut runtimes: Vec<String> = ["crash", "crash-net10", "crash-net11", "crashorder-net9"]
        .iter()
        .map(|n| format!(".NET {}", tests::entry(n).runtime_version()))
        .collect();
    runtimes.sort();
    assert_eq!(order["runtimes"], serde_json::json!(runtimes));
    assert_eq!(order["apps"], serde_json::json!(["crash"]));
    // no message, address or id in a signature
    for b in buckets {
        let s = b["signature"].as_str().unwrap();
        assert!(!s.contains("0x"), "{s}");
        assert!(!s.contains("Order 17") && !s.contains("Order 23"), "{s}");
    }
    let nullref = bucket_of(r, "faultnull-net10.dmp");
    assert_eq!(
        nullref["detail"]["exception_type"],
        entries[4].0.manifest["exceptions"][0]["type"]
    );
    let dl = bucket_of(r, "deadlock-net10.dmp");
    assert_eq!(dl["kind"], "deadlock");
    assert_eq!(dl["detail"]["locks"].as_array().unwrap().len(), 2);
    let hang = bucket_of(r, "hang-net10.dmp");
    assert_eq!(hang["kind"], "hang");

    // the second run reads no dump: every content is in the store
    let second = run(&fleet, &store, &dirs, &[]);
    assert_eq!(
        second.doc["read"], 1,
        "only the file that is no dump is tried again"
    );
    assert_eq!(second.doc["reused"], expected.len() as u64);
    assert_eq!(second.doc["buckets"], first.doc["buckets"]);

    // a copy under a new name is not read either; the store's query sees it
    copy_dump(
        &fleet.join("deadlock-net10.dmp"),
        &fleet.join("host-d/dl.core"),
        0,
    );
    std::fs::remove_file(fleet.join("broken.dmp")).unwrap();
    let third = run(&fleet, &store, &dirs, &[]);
    assert_eq!(third.status, 0);
    assert_eq!(third.doc["read"], 0);
    assert_eq!(third.doc["reused"], expected.len() as u64 + 1);
    assert_eq!(names(bucket_of(&third.doc, "dl.core")).len(), 2);

    // dumpshell buckets: top, new since, a bucket's dumps, records
    let buckets_cmd = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_dumpshell"))
            .arg("buckets")
            .arg("--store")
            .arg(&store)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let top: Value = serde_json::from_str(&buckets_cmd(&["--json", "--top", "1"])).unwrap();
    assert_eq!(top["result"]["buckets"].as_array().unwrap().len(), 1);
    assert_eq!(top["result"]["buckets"][0]["id"], order["id"]);
    // new since 15 days ago: every bucket but the order crash's (first seen 20 days ago)
    let since = secs_ago(15).to_string();
    let new: Value = serde_json::from_str(&buckets_cmd(&["--json", "--since", &since])).unwrap();
    let new = new["result"]["buckets"].as_array().unwrap();
    assert_eq!(new.len(), 4);
    assert!(new.iter().all(|b| b["id"] != order["id"]));
    let one = buckets_cmd(&["--bucket", &order["id"].as_str().unwrap()[..8]]);
    let orders = expected.iter().filter(|(_, b)| *b == "order").count();
    assert_eq!(one.lines().count(), 1 + orders, "{one}");
    assert!(
        one.lines().nth(1).unwrap().ends_with("orders.dmp"),
        "the latest first: {one}"
    );
    let records = buckets_cmd(&["--records"]);
    assert_eq!(records.lines().count(), expected.len() + 1);
    for l in records.lines() {
        let rec: Value = serde_json::from_str(l).unwrap();
        assert_eq!(rec["sha256"].as_str().unwrap().len(), 64);
        assert!(rec["signature"]["id"].is_string());
    }
    // the table
    let table = buckets_cmd(&[]);
    // every dump of the fleet, and the copy of the deadlock added since
    let header = format!("{} dumps in 5 buckets", expected.len() + 1);
    assert!(table.contains(&header), "{table}");
    let _ = std::fs::remove_dir_all(&root);
}
