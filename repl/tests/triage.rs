//! `dumpshell triage` over the whole corpus at once, checked against the truths.

use serde_json::Value;
use std::process::Command;

#[test]
fn triage_summarises_every_dump_and_reports_the_ones_it_cannot_open() {
    let entries = tests::all();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dumpshell"));
    cmd.args(["triage", "--json", "--no-recorded-paths"]);
    // Every runtime's own files the corpus needs (a file is used only for the dump whose
    // module it is: identity checked), as a user gives them.
    let mut dirs: Vec<std::path::PathBuf> =
        entries.iter().flat_map(|e| e.framework_dirs()).collect();
    dirs.sort();
    dirs.dedup();
    for d in dirs {
        cmd.arg("--image-path").arg(d);
    }
    for e in &entries {
        cmd.arg(e.dump_path());
    }
    cmd.arg("/nonexistent/missing.dmp");
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "a dump that cannot be opened makes the status 1"
    );
    let docs: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        docs.len(),
        entries.len() + 1,
        "one document per dump, in order"
    );
    let last = &docs[entries.len()]["result"];
    assert!(last["error"]
        .as_str()
        .unwrap()
        .contains("/nonexistent/missing.dmp"));

    let mut heaps_checked = 0;
    for (e, d) in entries.iter().zip(&docs) {
        let r = &d["result"];
        assert_eq!(d["command"], "triage");
        assert!(r["error"].is_null(), "{}: {}", e.name, r["error"]);
        assert_eq!(r["pid"], e.manifest["pid"], "{}", e.name);
        use tests::Capability::{HeapWalk, TypeNames};
        if !tests::claims(e, HeapWalk) || !tests::claims(e, TypeNames) {
            // tests/tests/refusals.rs holds these to a precise refusal.
            continue;
        }
        heaps_checked += 1;
        assert!(
            r["runtime"]
                .as_str()
                .is_some_and(|v| v.contains(e.runtime_version())),
            "{}: runtime {}",
            e.name,
            r["runtime"]
        );
        // The heaviest types are the DAC census's, largest first.
        let mut dac: Vec<&Value> = e.dac["heap_stat"]["types"]
            .as_array()
            .unwrap()
            .iter()
            .collect();
        dac.sort_by(|a, b| {
            b["total_size"]
                .as_u64()
                .cmp(&a["total_size"].as_u64())
                .then(b["count"].as_u64().cmp(&a["count"].as_u64()))
        });
        for (ours, theirs) in r["heaviest_types"].as_array().unwrap().iter().zip(&dac) {
            assert_eq!(ours["total_size"], theirs["total_size"], "{}", e.name);
            assert_eq!(ours["count"], theirs["count"], "{}", e.name);
        }
        assert_eq!(
            r["heap_objects"], e.dac["heap_stat"]["total_objects"],
            "{}",
            e.name
        );
    }

    // Every dump whose heap and type names the tests claim: .NET 8, 9, 10 and 11 alike.
    assert!(
        entries
            .iter()
            .filter(|e| e.family() >= 9 && tests::claims(e, tests::Capability::HeapWalk))
            .count()
            > 0
            && heaps_checked > 0,
        "no heap summary checked"
    );

    // hang: the top stack is the 4 threads waiting on the gate, with the manifest's ids.
    let i = entries.iter().position(|e| e.name == "hang").unwrap();
    let top = &docs[i]["result"]["top_stacks"][0];
    assert_eq!(top["count"], 4);
    let mut ids: Vec<u64> = top["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap())
        .collect();
    ids.sort_unstable();
    let mut want: Vec<u64> = entries[i].manifest["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["role"] == "monitor-wait")
        .map(|t| t["os_id"].as_u64().unwrap())
        .collect();
    want.sort_unstable();
    assert_eq!(ids, want);
    assert!(top["frames"]
        .to_string()
        .contains("System.Threading.Monitor.Wait(System.Object, Int32)"));

    // Pending async chains: as many as the manifest's (none complete), grouped by what they
    // wait for; the groups a thread is blocked on listed first with that thread.
    for name in ["hang", "async"] {
        let i = entries.iter().position(|e| e.name == name).unwrap();
        let m = &entries[i].manifest;
        let r = &docs[i]["result"];
        assert_eq!(
            r["async_chain_count"].as_u64(),
            Some(m["async_chains"].as_array().unwrap().len() as u64),
            "{name}"
        );
        let waiters: Vec<Value> = match &m["sync_over_async"] {
            Value::Array(a) => a.clone(),
            v => vec![v.clone()],
        };
        let groups = r["async_groups"].as_array().unwrap();
        if r["async_group_count"].as_u64() == Some(groups.len() as u64) {
            let sum: u64 = groups.iter().map(|g| g["count"].as_u64().unwrap()).sum();
            assert_eq!(Some(sum), r["async_chain_count"].as_u64(), "{name}");
        }
        let first = &groups[0]["stacks"][0];
        let blocked = first["waited_by_threads"].as_array().unwrap();
        assert!(!blocked.is_empty(), "{name}: {first}");
        assert!(
            blocked
                .iter()
                .all(|t| waiters.iter().any(|w| &w["os_id"] == t)),
            "{name}: {first} vs {waiters:?}"
        );
    }

    // deadlock: the cycle's two threads and two locks, with the manifest's lock types.
    let i = entries.iter().position(|e| e.name == "deadlock").unwrap();
    let m = &entries[i].manifest;
    let d = &docs[i]["result"]["deadlocks"];
    assert_eq!(d.as_array().unwrap().len(), 1, "{d}");
    let mut types: Vec<&str> = d[0]["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["type"].as_str().unwrap())
        .collect();
    types.sort_unstable();
    let mut want: Vec<&str> = m["locks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["owner_managed_id"].is_number())
        .map(|l| l["type"].as_str().unwrap())
        .collect();
    want.sort_unstable();
    want.dedup();
    assert_eq!(types, want, "{d}");
    for (j, e) in entries.iter().enumerate() {
        if e.name != "deadlock" && e.runtime_version().starts_with("8.") {
            assert!(
                docs[j]["result"]["deadlocks"]
                    .as_array()
                    .unwrap()
                    .is_empty(),
                "{}: no deadlock expected",
                e.name
            );
        }
    }

    // crash: the current exception is the manifest's, with its message and inner type.
    let i = entries.iter().position(|e| e.name == "crash").unwrap();
    let ex = &entries[i].manifest["exceptions"][0];
    let cur = &docs[i]["result"]["current_exception"];
    assert_eq!(cur["type"], ex["type"], "{cur} vs {ex}");
    assert_eq!(cur["message"], ex["message"], "{cur}");
    assert_eq!(cur["inner_exception_type"], ex["inner"]["type"], "{cur}");

    // crash: the crashing thread's last exception is the manifest's.
    let i = entries.iter().position(|e| e.name == "crash").unwrap();
    let m = &entries[i].manifest;
    let crasher = m["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["role"] == "crash")
        .unwrap();
    let ex = docs[i]["result"]["thread_exceptions"].as_array().unwrap();
    assert!(
        ex.iter()
            .any(|x| x["os_id"] == crasher["os_id"]
                && x["exception_type"] == m["exceptions"][0]["type"]),
        "{ex:?} vs {}",
        m["exceptions"][0]
    );
}

/// Thread-pool starvation as a triage finding, against the scenarios that starve the pool
/// (`threadpool`: 2 workers blocked in `Monitor.Wait` on a `BlockGate`, 10 QueueUserWorkItem
/// and 5 tasks queued; `async`: 2 workers blocked on a `PoolGate`, and the one `Task.Run`
/// the program queued behind them): the worker counts, the workers blocked and on what (the
/// manifest's monitor-wait lock: its type and waiters), the items queued. The dumps whose
/// programs do not starve the pool (hang, heap, deadlock) get no such finding.
#[test]
fn thread_pool_starvation_is_a_finding_with_the_manifests_counts() {
    let entries = tests::all();
    let mut starved = 0;
    let mut clean = 0;
    let mut compared = 0;
    for e in &entries {
        let expect = match e.program() {
            "threadpool" | "async" => true,
            "hang" | "heap" | "deadlock" => false,
            _ => continue,
        };
        let t = commands::triage::triage(&e.dump_path(), &e.open_options());
        let page = commands::triage::render(&t);
        let name = &e.name;
        if !expect {
            assert!(
                t.thread_pool_starvation.is_none(),
                "{name}: {:?}",
                t.thread_pool_starvation
            );
            assert!(!page.contains("STARVATION"), "{name}: {page}");
            clean += 1;
            continue;
        }
        let m = &e.manifest;
        let tp = &m["thread_pool"];
        let st = t
            .thread_pool_starvation
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no starvation finding: {:?}", t.problems));
        assert!(st.starved);
        // The pool's size: `workers` (async) or the limits both set to it (threadpool).
        let workers = tp["workers"]
            .as_i64()
            .or_else(|| tp["max_worker_threads"].as_i64())
            .unwrap();
        if let Some(min) = tp["min_worker_threads"].as_i64() {
            assert_eq!(min, workers, "{name}");
        }
        assert_eq!(st.workers_total, Some(workers), "{name}");
        assert_eq!(st.workers_busy, Some(workers), "{name}");
        assert_eq!(st.max_threads, Some(workers), "{name}");
        let blocked = tp["blocked_workers"].as_u64().unwrap() as usize;
        assert_eq!(st.workers_blocked, blocked, "{name}");
        // Queued: the manifest's work items by queue, or the async program's Task.Run chains.
        let (global, local) = match m["work_items"].as_array() {
            Some(items) => {
                let sum = |q: &str| -> usize {
                    items
                        .iter()
                        .filter(|i| i["queue"] == q)
                        .map(|i| i["count"].as_u64().unwrap() as usize)
                        .sum()
                };
                (sum("global"), sum("local"))
            }
            None => (
                m["async_chains"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|c| c["awaits"] == "System.Threading.Tasks.Task.Run")
                    .count(),
                0,
            ),
        };
        assert!(global > 0, "{name}");
        assert_eq!(st.queued_global, global, "{name}");
        assert_eq!(st.queued_local, local, "{name}");
        // What the queued work runs: the manifest's callbacks and counts (threadpool), or the
        // callback of the Task.Run the async program queued.
        let mut work: Vec<(String, usize)> = st
            .queued_work
            .iter()
            .map(|g| (g.what.clone(), g.count))
            .collect();
        work.sort();
        let mut want_work: Vec<(String, usize)> = match m["work_items"].as_array() {
            Some(items) => items
                .iter()
                .map(|i| {
                    (
                        i["callback"].as_str().unwrap().to_owned(),
                        i["count"].as_u64().unwrap() as usize,
                    )
                })
                .collect(),
            None => vec![(tp["queued_callback"].as_str().unwrap().to_owned(), global)],
        };
        want_work.sort();
        assert_eq!(work, want_work, "{name}");
        // What they block on: the manifest's monitor-wait lock, every blocked worker on it.
        let lock = m["locks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["kind"] == "monitor-wait")
            .unwrap();
        assert_eq!(st.blocked_on.len(), 1, "{name}: {:?}", st.blocked_on);
        let g = &st.blocked_on[0];
        assert_eq!(g.kind, "monitor_wait", "{name}");
        assert_eq!(g.type_name, lock["type"].as_str().unwrap(), "{name}");
        let mut ids = g.os_ids.clone();
        ids.sort_unstable();
        let mut want: Vec<u64> = m["threads"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|th| th["role"] == "pool-worker-blocked")
            .filter(|th| {
                lock["waiter_managed_ids"]
                    .as_array()
                    .unwrap()
                    .contains(&th["managed_id"])
            })
            .map(|th| th["os_id"].as_u64().unwrap())
            .collect();
        want.sort_unstable();
        assert_eq!(ids, want, "{name}");
        assert_eq!(g.count, blocked, "{name}");
        // The page says it, at the top (before the stacks).
        let line = st.summary.as_deref().unwrap();
        assert!(line.starts_with("THREAD POOL STARVATION"), "{line}");
        let at = page.find(line).unwrap_or_else(|| panic!("{name}: {page}"));
        assert!(page.find("Top stacks").is_none_or(|s| at < s), "{page}");
        compared += 9 + 2 * want_work.len();
        starved += 1;
    }
    assert!(starved >= 6, "starved dumps checked: {starved}");
    assert!(clean >= 10, "dumps without starvation checked: {clean}");
    assert!(compared >= 70, "{compared}");
}

/// .NET 11's runtime-async chains (no state machine: the runtime's Continuation objects)
/// grouped as state-machine chains are: as many pending chains as the manifest records, each
/// shown group's method lists (innermost first) a manifest chain's methods, and the group a
/// thread is blocked on first, with that thread.
#[test]
fn triage_groups_runtime_async_chains() {
    let entries: Vec<tests::Entry> = tests::all()
        .into_iter()
        .filter(|e| {
            e.manifest["async_chains"].as_array().is_some_and(|cs| {
                cs.iter().any(|c| {
                    c["async_kinds"]
                        .as_array()
                        .is_some_and(|k| k.iter().any(|k| k == "runtime-async"))
                })
            })
        })
        .collect();
    assert!(
        entries.len() >= 3,
        "{} dumps with runtime-async chains",
        entries.len()
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dumpshell"));
    cmd.args(["triage", "--json"]);
    for e in &entries {
        cmd.arg(e.dump_path());
    }
    let out = cmd.output().unwrap();
    let docs: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(docs.len(), entries.len());
    let mut stacks_checked = 0;
    for (e, d) in entries.iter().zip(&docs) {
        let name = &e.name;
        let r = &d["result"];
        let chains = e.manifest["async_chains"].as_array().unwrap();
        let want: u64 = chains
            .iter()
            .map(|c| c["count"].as_u64().unwrap_or(1))
            .sum();
        // An ASP.NET Core app also has the server's own pending chains (Kestrel's), which
        // its manifest does not list.
        let server = e.program() == "aspnethang";
        let count = r["async_chain_count"].as_u64().unwrap();
        if server {
            assert!(
                count >= want,
                "{name}: {count} chains, the manifest's {want}"
            );
        } else {
            assert_eq!(count, want, "{name}");
        }
        let groups = r["async_groups"].as_array().unwrap();
        assert!(!groups.is_empty(), "{name}: no group");
        if r["async_group_count"].as_u64() == Some(groups.len() as u64) {
            let sum: u64 = groups.iter().map(|g| g["count"].as_u64().unwrap()).sum();
            assert_eq!(sum, count, "{name}");
        }
        for c in chains.iter().filter(|_| server) {
            let n = c["count"].as_u64().unwrap_or(1);
            let cm = &c["methods"];
            assert!(
                groups.iter().any(|g| g["count"].as_u64() == Some(n)
                    && g["stacks"].as_array().unwrap().iter().all(|st| {
                        let (sm, cm) = (st["methods"].as_array().unwrap(), cm.as_array().unwrap());
                        sm.len() >= cm.len() && sm[..cm.len()] == cm[..]
                    })),
                "{name}: no group of {n} chains {cm}"
            );
        }
        for g in groups {
            for st in g["stacks"].as_array().unwrap() {
                let methods: Vec<&str> = st["methods"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m.as_str().unwrap())
                    .collect();
                // compiler-made names (lambdas, local functions) are shown readable
                if methods.iter().any(|m| m.contains(" (")) {
                    continue;
                }
                // the server's own chains
                if server && !methods[0].starts_with("AspnetHang.") {
                    continue;
                }
                assert!(
                    chains.iter().any(|c| {
                        let cm: Vec<&str> = c["methods"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|m| m.as_str().unwrap())
                            .collect();
                        // a chain may continue into framework frames the manifest leaves out
                        methods.len() >= cm.len() && methods[..cm.len()] == cm[..]
                    }),
                    "{name}: group stack {methods:?} is no manifest chain"
                );
                stacks_checked += 1;
            }
        }
        if let Some(w) = match &e.manifest["sync_over_async"] {
            Value::Array(a) => a.first().cloned(),
            Value::Null => None,
            v => Some(v.clone()),
        } {
            let blocked = groups[0]["stacks"][0]["waited_by_threads"]
                .as_array()
                .unwrap();
            assert!(
                blocked.iter().any(|t| *t == w["os_id"]),
                "{name}: the first group is not the one {w} waits on: {}",
                groups[0]
            );
        }
    }
    eprintln!(
        "{} dumps, {stacks_checked} runtime-async group stacks equal manifest chains",
        entries.len()
    );
    assert!(stacks_checked >= 10, "{stacks_checked}");
}
