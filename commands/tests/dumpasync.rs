//! `dumpasync` on the hang scenario dumps against the truths: the manifest's async chains
//! (innermost first) and the DAC's list of async state machine boxes.

use commands::Session;
use serde_json::Value;
use std::collections::BTreeSet;

fn run(s: &Session, line: &str) -> Value {
    let (out, _) = commands::execute(s, line)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .unwrap();
    out.json_document()["result"].clone()
}

fn session(e: &tests::Entry) -> Session {
    Session::open_with(&e.dump_path(), &e.open_options()).unwrap()
}

const DUMPS: &[&str] = &["hang", "servergc", "windows-hang", "async"];

fn types(chain: &Value) -> Vec<String> {
    chain["boxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["state_machine_type"].as_str().unwrap().to_owned())
        .collect()
}

fn addresses(r: &Value) -> BTreeSet<u64> {
    r["chains"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["boxes"].as_array().unwrap().iter())
        .map(|b| parse(b["address"].as_str().unwrap()))
        .collect()
}

fn parse(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

fn dac_boxes(e: &tests::Entry) -> BTreeSet<u64> {
    e.dac["async_state_machine_boxes"]["boxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| parse(b["address"].as_str().unwrap()))
        .collect()
}

#[test]
fn every_manifest_chain_is_found_innermost_first_and_awaiting() {
    for name in DUMPS {
        let e = tests::entry(name);
        let s = session(&e);
        let r = run(&s, "dumpasync");
        let chains = r["chains"].as_array().unwrap();
        let expected = e.manifest["async_chains"].as_array().unwrap();
        assert!(!expected.is_empty(), "{name}: manifest lists no chain");
        for m in expected {
            let want = tests::chain_identity(m);
            let found = chains.iter().find(|c| types(c) == want).unwrap_or_else(|| {
                panic!(
                    "{name}: chain {} ({want:?}) not found; chains: {:?}",
                    m["name"],
                    chains.iter().map(types).collect::<Vec<_>>()
                )
            });
            for b in found["boxes"].as_array().unwrap() {
                assert_eq!(b["state_name"], "awaiting", "{name}: {b}");
                assert!(b["state"].as_i64().unwrap() >= 0, "{name}: {b}");
                assert_eq!(b["completed"], false, "{name}: {b}");
            }
        }
        assert_eq!(
            r["errors"].as_array().unwrap().len(),
            0,
            "{name}: errors {}",
            r["errors"]
        );
    }
}

#[test]
fn boxes_found_equal_the_dac_list() {
    for name in DUMPS {
        let e = tests::entry(name);
        let s = session(&e);
        let dac = dac_boxes(&e);
        assert!(!dac.is_empty(), "{name}: the DAC truth lists no box");
        let all = run(&s, "dumpasync --completed");
        assert_eq!(
            addresses(&all),
            dac,
            "{name}: dumpasync --completed vs the DAC"
        );
        assert_eq!(
            all["total_boxes"].as_u64().unwrap() as usize,
            dac.len(),
            "{name}"
        );
        // Without --completed: the DAC's boxes minus the completed ones.
        let live = run(&s, "dumpasync");
        let skipped = live["completed_skipped"].as_u64().unwrap() as usize;
        assert_eq!(addresses(&live).len() + skipped, dac.len(), "{name}");
        assert!(addresses(&live).is_subset(&dac), "{name}");
    }
}

#[test]
fn filters_stats_and_coalesce() {
    let e = tests::entry("hang");
    let s = session(&e);
    let all = run(&s, "dumpasync");
    let first = &all["chains"][0]["boxes"][0];
    let a = first["address"].as_str().unwrap().to_owned();
    let by_addr = run(&s, &format!("dumpasync --address {a}"));
    assert_eq!(by_addr["chains"].as_array().unwrap().len(), 1);
    assert!(addresses(&by_addr).contains(&parse(&a)));

    let by_type = run(&s, "dumpasync -type <TcsB>");
    let chains = by_type["chains"].as_array().unwrap();
    assert_eq!(chains.len(), 1, "{by_type}");
    assert_eq!(
        types(&chains[0]),
        vec![
            "Hang.Program+<TcsC>c__async5",
            "Hang.Program+<TcsB>c__async4",
            "Hang.Program+<TcsA>c__async3"
        ]
    );

    let stats = run(&s, "dumpasync --stats");
    let total: u64 = stats["stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["count"].as_u64().unwrap())
        .sum();
    assert_eq!(total, addresses(&all).len() as u64);
    let st: BTreeSet<&str> = stats["stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["state_machine_type"].as_str().unwrap())
        .collect();
    assert!(st.contains("Hang.Program+<DelayA>c__async0"), "{st:?}");

    let co = run(&s, "dumpasync --coalesce");
    let n: u64 = co["chains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["count"].as_u64().unwrap())
        .sum();
    assert_eq!(n as usize, all["chains"].as_array().unwrap().len());

    // The text names every state machine with two spaces of indent per level.
    let (out, _) = commands::execute(&s, "dumpasync").unwrap().unwrap();
    assert!(out.text.contains("\n  "), "{}", out.text);
    // methods as written in the text (the raw state machine type is in the JSON)
    assert!(out.text.contains("Hang.Program.SemA\n"), "{}", out.text);
    assert!(!out.text.contains("<SemA>c__async6"), "{}", out.text);
}

/// The async scenario's completed and faulted boxes: skipped by default, shown with
/// `--completed` with the status the program saw and the state `done`.
#[test]
fn completed_boxes_have_the_programs_status() {
    let e = tests::entry("async");
    let s = session(&e);
    let want = e.manifest["completed_boxes"].as_array().unwrap();
    assert_eq!(want.len(), 2);
    let live = run(&s, "dumpasync");
    assert_eq!(live["completed_skipped"].as_u64(), Some(want.len() as u64));
    let all = run(&s, "dumpasync --completed");
    for w in want {
        let smt = w["state_machine_type"].as_str().unwrap();
        let chain = all["chains"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| types(c) == vec![smt.to_owned()])
            .unwrap_or_else(|| panic!("{smt} not shown alone with --completed: {all}"));
        let b = &chain["boxes"][0];
        let status = match w["status"].as_str().unwrap() {
            "RanToCompletion" => "ran_to_completion",
            "Faulted" => "faulted",
            other => panic!("unexpected manifest status {other}"),
        };
        assert_eq!(b["task_status"], status, "{b}");
        assert_eq!(b["completed"], true, "{b}");
        assert_eq!(b["state_name"], "done", "{b}");
        assert!(!types(&live["chains"].as_array().unwrap()[0]).contains(&smt.to_owned()));
    }
}

/// Fan-out (a List<object> continuation): the shared inner box starts one chain per awaiting
/// method, and is counted once.
#[test]
fn a_box_awaited_twice_starts_two_chains_and_counts_once() {
    let e = tests::entry("async");
    let s = session(&e);
    let r = run(&s, "dumpasync");
    let chains = r["chains"].as_array().unwrap();
    let inner = e.manifest["async_chains"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "fanout-1")
        .map(tests::chain_identity)
        .unwrap()[0]
        .clone();
    let with_inner = chains.iter().filter(|c| types(c)[0] == inner).count();
    assert_eq!(with_inner, 2, "{r}");
    let distinct: BTreeSet<u64> = addresses(&r);
    assert_eq!(r["shown_boxes"].as_u64().unwrap() as usize, distinct.len());
    let stats = run(&s, "dumpasync --stats");
    let total: u64 = stats["stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["count"].as_u64().unwrap())
        .sum();
    assert_eq!(total as usize, distinct.len());
}

#[test]
fn fields_methodtable_and_tasks_options() {
    let e = tests::entry("async");
    let s = session(&e);
    let all = run(&s, "dumpasync");
    let b = &all["chains"][0]["boxes"][0];
    let mt = b["mt"].as_str().unwrap();
    let by_mt = run(&s, &format!("dumpasync --methodtable {mt}"));
    for c in by_mt["chains"].as_array().unwrap() {
        assert!(c["boxes"].as_array().unwrap().iter().any(|x| x["mt"] == mt));
    }
    assert!(!by_mt["chains"].as_array().unwrap().is_empty());
    // --fields: the mcs state machine's state field ($PC) equals the state read for the box.
    let f = run(&s, "dumpasync --fields");
    for c in f["chains"].as_array().unwrap() {
        for b in c["boxes"].as_array().unwrap() {
            let fields = b["fields"].as_array().unwrap();
            let pc = fields
                .iter()
                .find(|x| x["name"] == "$PC" || x["name"] == "<>1__state")
                .unwrap_or_else(|| panic!("no state field in {b}"));
            assert_eq!(
                pc["value"].as_str().unwrap(),
                b["state"].as_i64().unwrap().to_string()
            );
        }
    }
    // --tasks: the Task.Run task the "queued" chain awaits is listed, scheduled and not yet
    // run: .NET's TaskStatus.WaitingToRun (started, delegate not invoked; Task.Status).
    let t = run(&s, "dumpasync --tasks");
    let tasks = t["tasks"].as_array().unwrap();
    let queued = e.manifest["async_chains"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "queued")
        .unwrap();
    let awaited_type = queued["awaited_type"].as_str().unwrap();
    assert!(
        tasks
            .iter()
            .any(|x| x["type"] == awaited_type && x["task_status"] == "waiting_to_run"),
        "{awaited_type} not in {tasks:?}"
    );
}

/// The Roslyn scenario of async as real code writes it (`asyncreal-net8`, `asyncreal-net10`):
/// ValueTask and pooled boxes, IValueTaskSource awaits (our own source, channels), an async
/// iterator under `await foreach`, WhenAll/WhenAny, SemaphoreSlim, TCS, lambdas, local
/// functions, a generic method, a cycle and threads blocked on chains, each against the DAC
/// (its box list and heap census) and the manifest.
#[test]
fn roslyn_async_as_real_code_writes_it() {
    let dumps = tests::of_program("asyncreal");
    assert!(dumps.len() >= 2, "no asyncreal dumps");
    let mut compared = 0usize;
    for e in dumps {
        let name = &e.name;
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let r = run(&s, "dumpasync --completed");
        assert_eq!(
            r["errors"].as_array().unwrap().len(),
            0,
            "{name}: {}",
            r["errors"]
        );
        let chains = r["chains"].as_array().unwrap();
        let boxes = || {
            chains
                .iter()
                .flat_map(|c| c["boxes"].as_array().unwrap().iter())
        };
        // Task boxes: exactly the DAC's (address, MethodTable, type).
        let ours: BTreeSet<(u64, u64, String)> = boxes()
            .filter(|b| b["kind"] == "task")
            .map(|b| {
                (
                    parse(b["address"].as_str().unwrap()),
                    parse(b["mt"].as_str().unwrap()),
                    b["box_type"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let dac: BTreeSet<(u64, u64, String)> = e.dac["async_state_machine_boxes"]["boxes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    parse(b["address"].as_str().unwrap()),
                    parse(b["mt"].as_str().unwrap()),
                    b["type"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(ours, dac, "{name}: Task boxes vs the DAC's");
        // Pooled boxes: the DAC's census of PoolingAsyncValueTaskMethodBuilder boxes.
        let pooled: BTreeSet<(u64, String)> = boxes()
            .filter(|b| b["kind"] == "pooling")
            .map(|b| {
                (
                    parse(b["address"].as_str().unwrap()),
                    b["box_type"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let census: Vec<(String, u64)> = e.dac["heap_stat"]["types"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| {
                t["type"].as_str().unwrap().starts_with(
                    "System.Runtime.CompilerServices.PoolingAsyncValueTaskMethodBuilder`1+StateMachineBox`1[",
                )
            })
            .map(|t| (t["type"].as_str().unwrap().to_owned(), t["count"].as_u64().unwrap()))
            .collect();
        let idle = r["idle_pooled_boxes"].as_u64().unwrap();
        assert_eq!(
            pooled.len() as u64 + idle,
            census.iter().map(|c| c.1).sum::<u64>(),
            "{name}: pooled boxes vs the census {census:?}"
        );
        for (_, t) in &pooled {
            assert!(
                census.iter().any(|c| &c.0 == t),
                "{name}: {t} not in the census"
            );
        }
        assert_eq!(
            r["total_boxes"].as_u64().unwrap() as usize,
            dac.len() + pooled.len()
        );
        compared += dac.len() + pooled.len();

        // Every manifest chain: its boxes (innermost first), how many, all awaiting; what the
        // innermost awaits; each outer box awaits the inner one (its task, its pooled box or its
        // iterator object) unless a WhenAll/WhenAny promise stands between them.
        let by_addr = |a: &str| boxes().find(|b| b["address"] == a).unwrap();
        for m in e.manifest["async_chains"].as_array().unwrap() {
            let want = tests::chain_identity(m);
            if m["cycle"] == true {
                let rings = r["cycles"].as_array().unwrap();
                assert_eq!(rings.len(), 1, "{name}: cycles {rings:?}");
                let ring: Vec<String> = rings[0]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| {
                        by_addr(a.as_str().unwrap())["state_machine_type"]
                            .as_str()
                            .unwrap()
                            .to_owned()
                    })
                    .collect();
                assert!(
                    (0..ring.len()).any(|k| ring[k..].iter().chain(&ring[..k]).eq(want.iter())),
                    "{name}: ring {ring:?} vs {want:?}"
                );
                let ch = chains
                    .iter()
                    .find(|c| !c["cycle_back_to"].is_null())
                    .unwrap_or_else(|| panic!("{name}: no chain says it cycles"));
                let mut t = types(ch);
                t.sort();
                let mut w = want.clone();
                w.sort();
                assert_eq!(t, w, "{name}");
                compared += 1;
                continue;
            }
            let found: Vec<&Value> = chains.iter().filter(|c| types(c) == want).collect();
            let count = m["count"].as_u64().unwrap_or(1) as usize;
            assert_eq!(found.len(), count, "{name}: chain {}: {want:?}", m["name"]);
            for c in &found {
                let bs = c["boxes"].as_array().unwrap();
                for b in bs {
                    assert_eq!(b["state_name"], "awaiting", "{name}: {b}");
                    assert_eq!(b["completed"], false, "{name}: {b}");
                }
                let aw: Vec<&str> = bs[0]["awaiters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a["object_type"].as_str().unwrap())
                    .collect();
                assert_eq!(
                    aw,
                    vec![m["awaited_type"].as_str().unwrap()],
                    "{name}: chain {} awaits",
                    m["name"]
                );
                if count == 1 {
                    for pair in bs.windows(2) {
                        let inner = &pair[0];
                        // A runtime-async method (.NET 11) is awaited through its task (its
                        // frame's owner); one calling another directly shares that task.
                        let inner_task = &inner["runtime_async"]["task"];
                        let same_task = !inner_task.is_null()
                            && pair[1]["runtime_async"]["task"] == *inner_task;
                        let ok = same_task
                            || pair[1]["awaiters"].as_array().unwrap().iter().any(|a| {
                                a["object"] == inner["address"]
                                    || (!inner_task.is_null() && a["object"] == *inner_task)
                                    || a["object_type"] == inner["state_machine_type"]
                            });
                        assert!(
                            ok,
                            "{name}: chain {}: {} awaits {}",
                            m["name"], pair[1], inner
                        );
                    }
                }
                if m["box"] == "pooling" {
                    assert_eq!(bs[0]["kind"], "pooling", "{name}");
                    assert_eq!(bs[0]["task_status"], "pending", "{name}");
                }
                compared += bs.len();
            }
        }

        // Threads blocked on chains: each chain's boxes count one synchronous waiter; where the
        // stacks are read (.NET 8) the thread itself is named, with its ids.
        for w in e.manifest["sync_over_async"].as_array().unwrap() {
            let chain = e.manifest["async_chains"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == w["waits_on_chain"])
                .unwrap();
            let identity = tests::chain_identity(chain);
            let outer = identity.last().unwrap().as_str();
            let ch = chains
                .iter()
                .find(|c| {
                    types(c).last().map(String::as_str) == Some(outer)
                        || types(c).iter().any(|t| t == outer) && !c["cycle_back_to"].is_null()
                })
                .unwrap_or_else(|| panic!("{name}: no chain for {w}"));
            let waiters: u64 = ch["boxes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["sync_waiters"].as_u64().unwrap())
                .sum();
            assert_eq!(waiters, 1, "{name}: {w}");
            if tests::claims(&e, clrdata::discovery::layout::Capability::Stacks) {
                let ts = ch["blocked_threads"].as_array().unwrap_or_else(|| {
                    panic!(
                        "{name}: no blocked threads: {}",
                        r["blocked_threads_unavailable"]
                    )
                });
                assert_eq!(ts.len(), 1, "{name}: {ts:?}");
                assert_eq!(ts[0]["managed_id"], w["managed_id"], "{name}");
                assert_eq!(ts[0]["os_id"], w["os_id"], "{name}");
            } else {
                assert!(ch["blocked_threads"].is_null(), "{name}");
                assert!(r["blocked_threads_unavailable"].is_string(), "{name}");
            }
            compared += 1;
        }

        // Compiler-generated names: readable in the text, raw in the JSON.
        let (out, _) = commands::execute(&s, "dumpasync").unwrap().unwrap();
        for n in e.manifest["compiler_names"].as_array().unwrap() {
            let raw_method = n["method"].as_str().unwrap();
            let written_in = n["written_in"].as_str().unwrap();
            let readable = match n["kind"].as_str().unwrap() {
                "lambda" => format!("{written_in} (lambda)"),
                "local-function" => {
                    format!(
                        "{written_in}.{} (local function)",
                        n["name"].as_str().unwrap()
                    )
                }
                k => panic!("unknown kind {k}"),
            };
            // the state machine of that method: `<method>d` nested where the method is
            let b = boxes()
                .find(|b| b["method"] == readable.as_str())
                .unwrap_or_else(|| panic!("{name}: no box named {readable}"));
            let smt = b["state_machine_type"].as_str().unwrap();
            let short = raw_method.rsplit(['.', '+']).next().unwrap();
            if b["kind"] == "runtime_async" {
                // no state machine (.NET 11): the frame is the method itself
                assert_eq!(smt, raw_method, "{name}");
            } else {
                assert!(
                    smt.contains(&format!("<{short}>d")),
                    "{name}: {smt} vs {raw_method}"
                );
            }
            assert!(
                out.text.contains(&readable),
                "{name}: {readable} not in the text"
            );
            assert!(!out.text.contains(smt), "{name}: raw {smt} in the text");
            compared += 1;
        }
        assert!(out.text.contains("CYCLE"), "{name}");
        eprintln!("dumpasync: {name}: {compared} values compared so far");
    }
}

/// `dumpasync --fields` on the Roslyn scenario's "locals" chain: every argument and hoisted
/// local the program records (`hoisted` in the manifest) is shown under the name the user wrote,
/// as an argument or a local, with the value the program gave it; in Release (struct state
/// machines) and Debug (class state machines) builds.
#[test]
fn fields_show_hoisted_arguments_and_locals_with_their_values() {
    let dumps: Vec<_> = tests::of_program("asyncreal")
        .into_iter()
        .filter(|e| e.manifest["hoisted"].is_array())
        .collect();
    assert!(
        !dumps.is_empty(),
        "no asyncreal dump records hoisted values"
    );
    let mut compared = 0;
    let mut runtime_async = 0;
    for e in dumps {
        let name = &e.name;
        // The kept PDBs name a runtime-async method's locals (.NET 11: its continuation holds
        // them where the JIT's async debug info says; the metadata names its arguments).
        let s = session(&e).with_discover_options(clrdata::DiscoverOptions {
            pdb_dirs: vec![tests::dumps_dir().join("pdbs")],
            ..Default::default()
        });
        let r = run(&s, "dumpasync --fields");
        let boxes: Vec<&Value> = r["chains"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["boxes"].as_array().unwrap().iter())
            .collect();
        // The program's hoisted values, and those its chains record (runtime-async chains
        // list the locals each method holds across its await: `ticks` of TickOuter).
        let mut hoisted: Vec<Value> = e.manifest["hoisted"].as_array().unwrap().clone();
        for c in e.manifest["async_chains"].as_array().into_iter().flatten() {
            for h in c["hoisted"].as_array().into_iter().flatten() {
                if !hoisted
                    .iter()
                    .any(|x| x["method"] == h["method"] && x["name"] == h["name"])
                {
                    hoisted.push(h.clone());
                }
            }
        }
        for h in &hoisted {
            let method = h["method"].as_str().unwrap();
            let want_name = h["name"].as_str().unwrap();
            let of_method: Vec<&&Value> = boxes.iter().filter(|b| b["method"] == method).collect();
            assert_eq!(of_method.len(), 1, "{name}: one box of {method}");
            let f = of_method[0]["fields"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["display_name"] == want_name)
                .unwrap_or_else(|| {
                    panic!(
                        "{name}: {method} has no field shown as {want_name}: {}",
                        of_method[0]["fields"]
                    )
                });
            assert_eq!(f["kind"], h["kind"], "{name}: {method}.{want_name}: {f}");
            assert_eq!(f["type"], h["type"], "{name}: {method}.{want_name}: {f}");
            match &h["value"] {
                Value::String(v) => {
                    assert_eq!(f["string"].as_str(), Some(v.as_str()), "{name}: {f}")
                }
                v => assert_eq!(
                    f["value"].as_str().map(str::to_owned),
                    Some(v.to_string()),
                    "{name}: {f}"
                ),
            }
            compared += 1;
            if of_method[0]["kind"] == "runtime_async" {
                runtime_async += 1;
            }
        }
    }
    eprintln!(
        "{compared} hoisted values equal the programs' ({runtime_async} of runtime-async frames)"
    );
    assert!(
        runtime_async >= 8,
        "{runtime_async} runtime-async values compared"
    );
}

/// .NET 11's runtime-async methods (no state machine: the runtime suspends them into
/// `Continuation` objects): every frame `dumpasync` lists is named as the runtime's DAC names
/// the code its continuation resumes at (`<name>.ips.dac.json`, made by
/// `dumps/tools/dacips.py` from each frame's `ResumeInfo->DiagnosticIP`: GetCodeHeaderData's
/// MethodDesc and GetMethodDescName); each manifest chain's runtime-async methods are those
/// names without their signatures; and where no framework method is suspended (hang, async,
/// asyncreal) there is one frame per continuation object the runtime made
/// (`Continuation_<layout>` in the DAC's census).
#[test]
fn runtime_async_frames_are_the_dacs_methods() {
    let mut checked = 0;
    let mut dumps = 0;
    for e in tests::all() {
        let p = tests::dumps_dir().join(format!("{}.ips.dac.json", e.name));
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let t: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            t["dump_sha256"], e.dac["dump_file"]["sha256"],
            "{}.ips.dac.json was written for another dump: regenerate it",
            e.name
        );
        let dac: std::collections::BTreeMap<u64, (u64, String)> = t["ips"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["hr"] == "0x00000000")
            .map(|x| {
                (
                    parse(x["ip"].as_str().unwrap()),
                    (
                        parse(x["method_desc"].as_str().unwrap()),
                        x["method"].as_str().unwrap().to_owned(),
                    ),
                )
            })
            .collect();
        let s = session(&e);
        let r = run(&s, "dumpasync --completed");
        let frames: Vec<&Value> = r["chains"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["boxes"].as_array().unwrap().iter())
            .filter(|b| b["kind"] == "runtime_async")
            .collect();
        assert!(!frames.is_empty(), "{}: no runtime-async frame", e.name);
        let mut distinct = BTreeSet::new();
        for b in &frames {
            let ra = &b["runtime_async"];
            let ip = parse(ra["diagnostic_ip"].as_str().unwrap());
            let (md, name) = dac
                .get(&ip)
                .unwrap_or_else(|| panic!("{}: {ip:#x} not in the DAC truth: {b}", e.name));
            assert_eq!(
                ra["method"].as_str(),
                Some(name.as_str()),
                "{}: {b}",
                e.name
            );
            assert_eq!(
                parse(ra["method_desc"].as_str().unwrap()),
                *md,
                "{}: {b}",
                e.name
            );
            assert!(ra["state"].as_i64().unwrap() >= 0, "{}: {b}", e.name);
            assert_ne!(ra["task"], Value::Null, "{}: {b}", e.name);
            distinct.insert(b["address"].as_str().unwrap().to_owned());
            checked += 1;
        }
        // The manifest's runtime-async methods: the DAC's names without their signatures.
        for m in e.manifest["async_chains"].as_array().unwrap() {
            let kinds = m["async_kinds"].as_array().unwrap();
            for (method, k) in m["methods"].as_array().unwrap().iter().zip(kinds) {
                if k != "runtime-async" {
                    continue;
                }
                let method = method.as_str().unwrap();
                assert!(
                    dac.values().any(|(_, n)| {
                        clrdata::analysis::runtime_async::method_without_signature(n) == method
                    }),
                    "{}: the DAC names no suspended method {method}",
                    e.name
                );
            }
        }
        // One frame per continuation the runtime made, where only the program's methods are
        // suspended (dumps/README.md: the census holds as many as the chains' invocations).
        if ["hang", "async", "asyncreal"].contains(&e.program()) {
            let census: u64 = e.dac["heap_stat"]["types"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["type"].as_str().unwrap().starts_with("Continuation_"))
                .map(|t| t["count"].as_u64().unwrap())
                .sum();
            assert_eq!(
                distinct.len() as u64,
                census,
                "{}: frames vs the census",
                e.name
            );
            assert_eq!(
                r["runtime_async_frames"].as_u64(),
                Some(census),
                "{}",
                e.name
            );
        }
        dumps += 1;
    }
    eprintln!("runtime-async frames: {checked} on {dumps} dumps equal the DAC's methods");
    assert!(
        dumps >= 4 && checked >= 90,
        "{dumps} dumps, {checked} frames"
    );
}

/// Every .NET 11 manifest chain holding runtime-async methods (hang, async, asyncreal,
/// aspnethang): found as many times as the program made it (`count`), innermost first (a
/// runtime-async frame identified by its method, a state machine by its type; a chain may go
/// on into callers the manifest leaves out, such as Kestrel's), each frame awaiting, and the
/// innermost one naming the object it awaits by the manifest's `awaited_type`.
#[test]
fn runtime_async_manifest_chains_innermost_first_with_what_they_await() {
    let mut checked = 0;
    let mut dumps = 0;
    for e in tests::all() {
        let Some(expected) = e.manifest["async_chains"].as_array() else {
            continue;
        };
        let has_ra = expected.iter().any(|c| {
            c["async_kinds"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "runtime-async"))
        });
        if !has_ra {
            continue;
        }
        dumps += 1;
        let name = &e.name;
        let s = session(&e);
        let r = run(&s, "dumpasync");
        let chains = r["chains"].as_array().unwrap();
        for m in expected {
            let want = tests::chain_identity(m);
            let n = m["count"].as_u64().unwrap_or(1) as usize;
            let found: Vec<&Value> = chains
                .iter()
                .filter(|c| {
                    let t = types(c);
                    t.len() >= want.len() && t[..want.len()] == want[..]
                })
                .collect();
            assert_eq!(
                found.len(),
                n,
                "{name}: chain {} ({want:?}): {} found; chains: {:?}",
                m["name"],
                found.len(),
                chains.iter().map(types).collect::<Vec<_>>()
            );
            for c in found {
                let boxes = c["boxes"].as_array().unwrap();
                for b in &boxes[..want.len()] {
                    assert_eq!(b["state_name"], "awaiting", "{name}: {b}");
                    if b["kind"] == "runtime_async" {
                        assert!(b["runtime_async"]["method"].is_string(), "{name}: {b}");
                    }
                }
                if let Some(t) = m["awaited_type"].as_str() {
                    let inner = &boxes[0];
                    assert!(
                        inner["awaiters"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .any(|a| a["object_type"] == t),
                        "{name}: chain {}: the innermost frame awaits no {t}: {inner}",
                        m["name"]
                    );
                }
                checked += 1;
            }
        }
    }
    eprintln!("{checked} runtime-async manifest chains on {dumps} dumps, innermost first, awaiting the manifest's objects");
    assert!(
        dumps >= 4 && checked >= 70,
        "{dumps} dumps, {checked} chains"
    );
}
