//! `causality` and `pstacks --async` against the scenarios' manifests: the threads blocked on
//! tasks (Task.Wait, .Result, GetAwaiter().GetResult()) linked to the chains the program says
//! they wait on, and what each chain waits for.

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

/// The manifest chain's methods, innermost first.
fn chain_methods(e: &tests::Entry, name: &str) -> Vec<String> {
    e.manifest["async_chains"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no chain {name} in the manifest"))["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_owned())
        .collect()
}

fn methods(chain: &Value) -> Vec<String> {
    chain["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_owned())
        .collect()
}

fn waits(e: &tests::Entry) -> Vec<Value> {
    match &e.manifest["sync_over_async"] {
        Value::Array(a) => a.clone(),
        Value::Null => Vec::new(),
        v => vec![v.clone()],
    }
}

#[test]
fn blocked_threads_are_linked_to_the_chains_they_wait_on() {
    for name in [
        "hang",
        "async",
        "servergc",
        "windows-hang",
        "hang-net11",
        "async-net11",
    ] {
        let e = tests::entry(name);
        let s = session(&e);
        let r = run(&s, "causality");
        let threads = r["threads"].as_array().unwrap();
        let chains = r["chains"].as_array().unwrap();
        let want = waits(&e);
        assert!(!want.is_empty(), "{name}: manifest names no blocked thread");
        // runtime-async frames' owning tasks, by frame
        let ra_tasks: std::collections::HashMap<String, Value> = run(&s, "dumpasync --completed")
            ["chains"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["boxes"].as_array().unwrap().iter())
            .filter(|b| b["kind"] == "runtime_async")
            .map(|b| {
                (
                    b["address"].as_str().unwrap().to_owned(),
                    b["runtime_async"]["task"].clone(),
                )
            })
            .collect();
        assert_eq!(threads.len(), want.len(), "{name}: {r}");
        for w in &want {
            let os = w["os_id"].as_u64().unwrap();
            let t = threads
                .iter()
                .find(|t| t["os_id"].as_u64() == Some(os))
                .unwrap_or_else(|| panic!("{name}: thread {os} not linked to a task: {r}"));
            assert_eq!(t["managed_id"], w["managed_id"]);
            let want_methods = chain_methods(&e, w["waits_on_chain"].as_str().unwrap());
            let linked: Vec<Vec<String>> = t["chains"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| methods(&chains[i.as_u64().unwrap() as usize]))
                .collect();
            assert!(
                linked.contains(&want_methods),
                "{name}: thread {os} linked to {linked:?}, manifest says {want_methods:?}"
            );
            // The waited task is the chain's outermost box; for a runtime-async chain (.NET
            // 11, frames are Continuations) the RuntimeAsyncTask owning the outermost frame.
            let c = chains.iter().find(|c| methods(c) == want_methods).unwrap();
            let outer = c["boxes"].as_array().unwrap().last().unwrap();
            let owner = ra_tasks.get(outer.as_str().unwrap()).cloned();
            assert_eq!(owner.as_ref().unwrap_or(outer), &t["task"], "{name}");
            assert!(c["waited_by_threads"]
                .as_array()
                .unwrap()
                .contains(&Value::from(os)));
        }
        assert!(
            r["unresolved_waits"].as_array().unwrap().is_empty(),
            "{name}: {r}"
        );
    }
}

/// What the manifest says a chain awaits → the cause kind the tool must find.
fn expected_kind(awaits: &str) -> &'static str {
    match awaits {
        "System.Threading.Tasks.TaskCompletionSource`1.Task" => "task_completion_source",
        "System.Threading.SemaphoreSlim.WaitAsync" => "semaphore",
        "System.Threading.Tasks.Task.Delay" => "delay",
        "System.Threading.Tasks.Task.Run" => "queued",
        other => panic!("no expectation for {other}"),
    }
}

#[test]
fn every_chain_says_what_it_waits_for() {
    // .NET 11's runtime-async chains (hang-net11, async-net11) as the state machines' chains
    for name in ["hang", "async", "windows-hang", "hang-net11", "async-net11"] {
        let e = tests::entry(name);
        let s = session(&e);
        let r = run(&s, "causality");
        let chains = r["chains"].as_array().unwrap();
        for m in e.manifest["async_chains"].as_array().unwrap() {
            let want = chain_methods(&e, m["name"].as_str().unwrap());
            let c = chains
                .iter()
                .find(|c| methods(c) == want)
                .unwrap_or_else(|| panic!("{name}: chain {want:?} not in {r}"));
            let kind = expected_kind(m["awaits"].as_str().unwrap());
            assert_eq!(c["cause"]["kind"], kind, "{name}: {c}");
            assert_eq!(c["awaited_type"], m["awaited_type"], "{name}: {c}");
            if kind == "semaphore" {
                // SemaphoreSlim(0) with one async waiter, in both scenarios.
                assert_eq!(c["cause"]["current_count"], 0, "{c}");
                assert_eq!(c["cause"]["position"], 1, "{c}");
            }
        }
    }
}

#[test]
fn pstacks_async_merges_logical_stacks() {
    // the state machines' chains, and .NET 11's runtime-async ones
    for name in ["async", "async-net11"] {
        pstacks_async_of(name);
    }
}

fn pstacks_async_of(name: &str) {
    let e = tests::entry(name);
    let s = session(&e);
    let r = run(&s, "pstacks --async");
    let roots = r["roots"].as_array().unwrap();
    let total: u64 = roots.iter().map(|n| n["count"].as_u64().unwrap()).sum();
    let manifest_chains = e.manifest["async_chains"].as_array().unwrap().len() as u64;
    assert_eq!(total, manifest_chains, "{r}");
    assert_eq!(r["chains"].as_u64(), Some(manifest_chains));
    // The two WhenAll legs share their root, the outer method.
    let when_all = chain_methods(&e, "whenall-a").last().unwrap().clone();
    let n = roots
        .iter()
        .find(|n| n["method"] == when_all.as_str())
        .unwrap_or_else(|| panic!("no root {when_all}: {r}"));
    assert_eq!(n["count"], 2);
    assert_eq!(n["children"].as_array().unwrap().len(), 2);
    // Text: the footer counts stacks and roots.
    let (out, _) = commands::execute(&s, "pstacks --async").unwrap().unwrap();
    assert!(
        out.text.contains(&format!(
            "==> {manifest_chains} async logical stacks with {} roots",
            roots.len()
        )),
        "{}",
        out.text
    );
}

/// The chain awaiting `Task.Run` work behind a starved pool says so: the delegate's method is
/// the program's callback, the task sits in the global queue, and the pool's busy workers are
/// the ones the program blocked.
#[test]
fn a_chain_awaiting_queued_work_names_it_and_the_starved_pool() {
    let e = tests::entry("async");
    let s = session(&e);
    let r = run(&s, "causality");
    let tp = &e.manifest["thread_pool"];
    let want = chain_methods(&e, tp["queued_chain"].as_str().unwrap());
    let c = r["chains"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| methods(c) == want)
        .unwrap();
    let cause = &c["cause"];
    assert_eq!(cause["kind"], "queued", "{c}");
    let method = cause["method"].as_str().unwrap();
    assert_eq!(
        method.split('(').next().unwrap(),
        tp["queued_callback"].as_str().unwrap(),
        "{c}"
    );
    assert_eq!(cause["queue"], "global", "{c}");
    let workers = tp["workers"].as_i64().unwrap();
    assert_eq!(tp["blocked_workers"].as_i64(), Some(workers));
    assert_eq!(
        cause["pool"]["processing_work"].as_i64(),
        Some(workers),
        "{c}"
    );
    assert_eq!(cause["pool"]["max_threads"].as_i64(), Some(workers), "{c}");
    assert!(
        c["explanation"].as_str().unwrap().contains("starvation"),
        "{c}"
    );
    // ... naming what the workers block on: the manifest's monitor-wait lock
    // (threadpool's assessment, `thread_pool_starvation_is_a_finding_with_the_manifests_counts`).
    let lock = e.manifest["locks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["kind"] == "monitor-wait")
        .unwrap();
    let blocked = format!(
        "(blocked workers: {workers} in Monitor.Wait on {} 0x",
        lock["type"].as_str().unwrap()
    );
    assert!(
        c["explanation"].as_str().unwrap().contains(&blocked),
        "{c} vs {blocked}"
    );
}

/// The Roslyn scenario on .NET 8 and 10: the three threads blocked on chains are linked to
/// them with the manifest's ids, the cycle is a `cycle` cause naming its ring, and what the
/// innermost methods await is named: the TaskCompletionSources, the semaphores (with the
/// waiter counts the manifest records), the channels (their values:
/// `channels_equal_the_manifest_and_are_linked_to_their_chains`) and, for the other ValueTask
/// sources, the objects of the manifest's `awaited_type`.
#[test]
fn roslyn_scenario_threads_cycle_and_causes() {
    for e in tests::of_program("asyncreal") {
        roslyn_scenario(&e);
    }
}

fn roslyn_scenario(e: &tests::Entry) {
    let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
    let r = run(&s, "causality");
    assert_eq!(r["errors"].as_array().unwrap().len(), 0, "{}", r["errors"]);
    let chains = r["chains"].as_array().unwrap();
    let threads = r["threads"].as_array().unwrap();
    for w in waits(e) {
        let t = threads
            .iter()
            .find(|t| t["managed_id"] == w["managed_id"])
            .unwrap_or_else(|| panic!("thread {w} not found: {threads:?}"));
        assert_eq!(t["os_id"], w["os_id"], "{}", e.name);
        let want = chain_methods(e, w["waits_on_chain"].as_str().unwrap());
        let linked: Vec<Vec<String>> = t["chains"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| methods(&chains[i.as_u64().unwrap() as usize]))
            .collect();
        assert!(
            linked.iter().any(|m| {
                let mut a = m.clone();
                a.sort();
                let mut b = want.clone();
                b.sort();
                a == b
            }),
            "{w}: {linked:?} vs {want:?}"
        );
    }
    assert_eq!(threads.len(), waits(e).len(), "{threads:?}");
    // compiler-generated methods as their author wrote them (the manifest's compiler_names)
    let readable = |raw: &str| -> String {
        for n in e.manifest["compiler_names"].as_array().unwrap() {
            if n["method"] == raw {
                let w = n["written_in"].as_str().unwrap();
                return match n["kind"].as_str().unwrap() {
                    "lambda" => format!("{w} (lambda)"),
                    _ => format!("{w}.{} (local function)", n["name"].as_str().unwrap()),
                };
            }
        }
        raw.to_owned()
    };
    for m in e.manifest["async_chains"].as_array().unwrap() {
        let want: Vec<String> = m["methods"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| readable(x.as_str().unwrap()))
            .collect();
        let mut sorted = want.clone();
        sorted.sort();
        let found: Vec<&Value> = chains
            .iter()
            .filter(|c| {
                let mut a = methods(c);
                a.sort();
                if m["cycle"] == true {
                    a == sorted
                } else {
                    methods(c) == want
                }
            })
            .collect();
        assert_eq!(
            found.len() as u64,
            m["count"].as_u64().unwrap_or(1),
            "{}: {chains:?}",
            m["name"]
        );
        for c in found {
            let kind = c["cause"]["kind"].as_str().unwrap();
            let want_kind = if m["cycle"] == true {
                "cycle"
            } else if m["awaits"]
                .as_str()
                .unwrap()
                .contains("TaskCompletionSource")
            {
                "task_completion_source"
            } else if m["awaits"] == "System.Threading.SemaphoreSlim.WaitAsync" {
                "semaphore"
            } else if m["awaits"]
                .as_str()
                .unwrap()
                .starts_with("System.Threading.Channels.")
            {
                "channel"
            } else if m["awaits"]
                .as_str()
                .unwrap()
                .starts_with("System.Threading.Tasks.Task.Delay")
            {
                "delay"
            } else if m["awaits"] == "System.Threading.PeriodicTimer.WaitForNextTickAsync" {
                "periodic_timer"
            } else {
                "other"
            };
            assert_eq!(kind, want_kind, "{}: {c}", m["name"]);
            if kind == "other" || kind == "channel" {
                assert_eq!(c["awaited_type"], m["awaited_type"], "{}", m["name"]);
            }
            if kind == "cycle" {
                assert_eq!(c["cause"]["ring"].as_array().unwrap().len(), want.len());
            }
        }
    }
    for sem in e.manifest["semaphores"].as_array().unwrap() {
        let n = sem["async_waiters"].as_u64().unwrap();
        let hits = chains
            .iter()
            .filter(|c| {
                c["cause"]["kind"] == "semaphore"
                    && c["cause"]["async_waiters"].as_u64() == Some(n)
                    && c["cause"]["current_count"] == sem["current_count"]
            })
            .count() as u64;
        assert_eq!(hits, n, "{sem}");
    }
}

/// The address a static reference field holds, by the manifest's `Namespace.Type.field` path
/// (name2ee, then dumpclass: statics equal the DAC's, tests/tests/statics.rs).
fn static_object(s: &Session, path: &str) -> String {
    let (ty, fld) = path.rsplit_once('.').unwrap();
    let n = run(s, &format!("name2ee * {ty}"));
    let ee = n["matches"][0]["ee_class"]
        .as_str()
        .unwrap_or_else(|| panic!("{ty} not found: {n}"))
        .to_owned();
    let c = run(s, &format!("dumpclass {ee}"));
    let f = c["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == fld && f["attr"] == "static")
        .unwrap_or_else(|| panic!("no static {fld} in {ty}: {c}"));
    f["value"]["address"].as_str().unwrap().to_owned()
}

/// On every dump whose manifest records channels: the chain the manifest names waits on that
/// channel (the object its static field holds), with the manifest's type, capacity, item
/// count and waiting readers / writers, in `causality` and in `dumpasync`'s awaiter.
#[test]
fn channels_equal_the_manifest_and_are_linked_to_their_chains() {
    let dumps: Vec<tests::Entry> = tests::all()
        .into_iter()
        .filter(|e| e.manifest["channels"].is_array())
        .collect();
    assert!(dumps.len() >= 2, "no dumps with channels in their manifest");
    let mut compared = 0;
    for e in &dumps {
        let name = &e.name;
        let s = session(e);
        let r = run(&s, "causality");
        let chains = r["chains"].as_array().unwrap();
        let da = run(&s, "dumpasync");
        for want in e.manifest["channels"].as_array().unwrap() {
            let chain = want["chain"].as_str().unwrap();
            let methods_want = chain_methods(e, chain);
            let found: Vec<&Value> = chains
                .iter()
                .filter(|c| methods(c) == methods_want)
                .collect();
            assert_eq!(found.len(), 1, "{name}: chain {chain}: {chains:?}");
            let cause = &found[0]["cause"];
            assert_eq!(cause["kind"], "channel", "{name}: {chain}: {cause}");
            let ch = &cause["channel"];
            let address = static_object(&s, want["path"].as_str().unwrap());
            assert_eq!(ch["address"], address.as_str(), "{name}: {chain}: {ch}");
            assert_eq!(ch["type"], want["type"], "{name}: {chain}");
            assert_eq!(ch["capacity"], want["capacity"], "{name}: {chain}");
            assert_eq!(ch["items"], want["items"], "{name}: {chain}");
            compared += 4;
            for k in ["waiting_readers", "waiting_writers"] {
                if !want[k].is_null() {
                    assert_eq!(ch[k], want[k], "{name}: {chain}: {k}");
                    compared += 1;
                }
            }
            assert!(ch["problems"].as_array().unwrap().is_empty(), "{ch}");
            // the awaited operation waits in the list of what the chain called
            let awaits = e.manifest["async_chains"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == chain)
                .unwrap()["awaits"]
                .as_str()
                .unwrap();
            let (role, list) = match awaits.rsplit('.').next().unwrap() {
                "ReadAsync" => ("read", "blocked_readers"),
                "WriteAsync" => ("write", "blocked_writers"),
                "WaitToReadAsync" => ("wait_to_read", "waiting_to_read"),
                _ => ("wait_to_write", "waiting_to_write"),
            };
            assert_eq!(cause["role"], role, "{name}: {chain}: {cause}");
            let pos = cause["position"].as_u64().unwrap();
            assert!(
                pos >= 1 && pos <= ch[list].as_u64().unwrap(),
                "{name}: {chain}: {cause}"
            );
            assert_eq!(found[0]["awaited"], cause["operation"]);
            // dumpasync names the same channel on the innermost box's awaiter
            let innermost = found[0]["boxes"][0].as_str().unwrap();
            let aw = da["chains"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|c| c["boxes"].as_array().unwrap())
                .find(|b| b["address"] == innermost)
                .unwrap_or_else(|| panic!("{name}: box {innermost} not in dumpasync"))["awaiters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| !a["channel"].is_null())
                .unwrap_or_else(|| panic!("{name}: {chain}: no awaiter names a channel"))
                .clone();
            assert_eq!(aw["channel"]["address"], address.as_str());
            assert_eq!(aw["channel"]["items"], want["items"]);
        }
    }
    assert!(compared >= 20, "{compared}");
}

/// A chain waiting on an infinite, cancellable Task.Delay names the CancellationTokenSource that
/// alone can end it (the object the manifest's static field holds), whether it is cancelled
/// and how many registrations it has; a PeriodicTimer wait names the timer and its period.
#[test]
fn cancellation_sources_and_periodic_timers_equal_the_manifest() {
    let dumps: Vec<tests::Entry> = tests::all()
        .into_iter()
        .filter(|e| e.manifest["cancellation_sources"].is_array())
        .collect();
    assert!(
        !dumps.is_empty(),
        "no corpus dump records cancellation sources"
    );
    let mut compared = 0;
    for e in &dumps {
        let name = &e.name;
        let s = session(e);
        let r = run(&s, "causality");
        let chains = r["chains"].as_array().unwrap();
        let chain_of = |chain: &str| -> &Value {
            let want = chain_methods(e, chain);
            chains
                .iter()
                .find(|c| methods(c) == want)
                .unwrap_or_else(|| panic!("{name}: chain {want:?} not found"))
        };
        for cs in e.manifest["cancellation_sources"].as_array().unwrap() {
            let c = chain_of(cs["chain"].as_str().unwrap());
            assert_eq!(c["cause"]["kind"], "delay", "{name}: {c}");
            assert_eq!(c["cause"]["infinite"], true, "{name}: {c}");
            let got = &c["cause"]["cancellation"];
            let want_source = static_object(&s, cs["path"].as_str().unwrap());
            assert_eq!(
                got["source"].as_str(),
                Some(want_source.as_str()),
                "{name}: {c}"
            );
            assert_eq!(got["cancelled"], cs["cancelled"], "{name}: {c}");
            assert_eq!(got["registrations"], cs["registrations"], "{name}: {c}");
            compared += 3;
        }
        for pt in e.manifest["periodic_timers"].as_array().unwrap() {
            let c = chain_of(pt["chain"].as_str().unwrap());
            assert_eq!(c["cause"]["kind"], "periodic_timer", "{name}: {c}");
            let want_timer = static_object(&s, pt["path"].as_str().unwrap());
            assert_eq!(
                c["cause"]["timer"].as_str(),
                Some(want_timer.as_str()),
                "{name}: {c}"
            );
            assert_eq!(c["cause"]["period_ms"], pt["period_ms"], "{name}: {c}");
            compared += 2;
        }
    }
    eprintln!(
        "{compared} cancellation and periodic timer values equal the manifests' on {} dumps",
        dumps.len()
    );
}
