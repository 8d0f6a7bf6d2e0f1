//! The hung ASP.NET Core service of `dumps/aspnet/generate.sh` (issue 17): `triage` must say how
//! many requests wait on what and which threads block on which tasks, equal to what the program
//! recorded. The dump is not committed (a Kestrel process's dump does not fit the corpus
//! budget): where `dumps/build/aspnet/aspnethang.dmp` is absent this test says so and checks
//! nothing. Set DUMPSHELL_REQUIRE_ASPNET=1 to make its absence a failure.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

fn dump_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dumps/build/aspnet")
}

#[test]
fn triage_of_a_hung_aspnet_service_counts_requests_and_blocked_threads() {
    let dir = dump_dir();
    let dmp = dir.join("aspnethang.dmp");
    if !dmp.is_file() {
        assert!(
            std::env::var_os("DUMPSHELL_REQUIRE_ASPNET").is_none(),
            "{} is absent (make it with sudo dumps/aspnet/generate.sh)",
            dmp.display()
        );
        eprintln!(
            "!!! {} absent: the ASP.NET Core triage is not checked (dumps/aspnet/generate.sh makes it)",
            dmp.display()
        );
        return;
    }
    let m: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("aspnethang.manifest.json")).unwrap(),
    )
    .unwrap();
    // The runtime the app ran on (the SDK's shared framework), for its contract descriptor.
    let rt = std::fs::read_to_string(dir.join("aspnethang.runtime")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dumpshell"))
        .args([
            "triage",
            "--json",
            "--no-recorded-paths",
            "--image-path",
            rt.trim(),
        ])
        .arg(&dmp)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &doc["result"];

    let asyncs = m["requests"]["async"].as_u64().unwrap();
    let syncs = m["requests"]["sync"].as_u64().unwrap();
    let blocked: BTreeSet<u64> = m["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["role"] == "report-blocked")
        .map(|t| t["os_id"].as_u64().unwrap())
        .collect();
    assert_eq!(blocked.len() as u64, syncs);
    // Every request is one chain through Kestrel's request processing.
    assert_eq!(r["http_requests"].as_u64(), Some(asyncs + syncs), "{r}");

    let groups = r["async_groups"].as_array().unwrap();
    // One group waits on the dependency's TaskCompletionSource: every chain that reached it
    // (the async requests whole, the sync requests' inner part), the sync requests' threads
    // blocked on it.
    let chain = &m["async_chains"][0];
    let methods: Vec<&str> = chain["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    let dep: Vec<&Value> = groups
        .iter()
        .filter(|g| g["cause"] == "task_completion_source")
        .collect();
    assert_eq!(
        dep.len(),
        1,
        "one group waits on the dependency: {groups:?}"
    );
    let g = dep[0];
    assert_eq!(g["count"].as_u64(), chain["count"].as_u64(), "{g}");
    assert_eq!(g["http_requests"].as_u64(), Some(asyncs), "{g}");
    let mut waited = BTreeSet::new();
    for st in g["stacks"].as_array().unwrap() {
        let ms: Vec<&str> = st["methods"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        assert_eq!(ms[..methods.len()], methods[..], "innermost first: {st}");
        waited.extend(
            st["waited_by_threads"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_u64().unwrap()),
        );
    }
    assert_eq!(waited, blocked, "threads blocked on the dependency");
    // The sync requests' own chains are running on those threads.
    let running: BTreeSet<u64> = groups
        .iter()
        .filter(|g| g["cause"] == "running_on_thread")
        .flat_map(|g| g["stacks"].as_array().unwrap().iter())
        .flat_map(|st| st["running_on_threads"].as_array().unwrap().iter())
        .map(|t| t.as_u64().unwrap())
        .collect();
    assert_eq!(
        running, blocked,
        "request chains running on the blocked threads"
    );
    let running_requests: u64 = groups
        .iter()
        .filter(|g| g["cause"] == "running_on_thread")
        .map(|g| g["http_requests"].as_u64().unwrap())
        .sum();
    assert_eq!(running_requests, syncs);
}

#[test]
fn dumpasync_of_a_hung_aspnet_service_lists_every_box_the_dac_finds() {
    let dir = dump_dir();
    let dmp = dir.join("aspnethang.dmp");
    if !dmp.is_file() {
        eprintln!("!!! {} absent: nothing checked", dmp.display());
        return;
    }
    let rt = std::fs::read_to_string(dir.join("aspnethang.runtime")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dumpshell"))
        .args(["--no-recorded-paths", "--image-path", rt.trim()])
        .arg(&dmp)
        .args(["-c", "dumpasync --completed", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let parse = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let ours: BTreeSet<(u64, String)> = doc["result"]["chains"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["boxes"].as_array().unwrap().iter())
        .filter(|b| b["kind"] == "task")
        .map(|b| {
            (
                parse(b["address"].as_str().unwrap()),
                b["box_type"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let dac: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("aspnethang.dac.json")).unwrap())
            .unwrap();
    let want: BTreeSet<(u64, String)> = dac["async_state_machine_boxes"]["boxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                parse(b["address"].as_str().unwrap()),
                b["type"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(want.len() > 100, "{}", want.len());
    assert_eq!(ours, want, "Task boxes vs the DAC's");
}
