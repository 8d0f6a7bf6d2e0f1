//! Thread and stack commands on the corpus against the truths: `clrthreads` equals the DAC's
//! thread data, `clrstack -all` the DAC's frames, and the scenario programs' blocked threads
//! show where they block; `pstacks` merges the hang scenario's gate threads.

use commands::Session;
use serde_json::Value;

fn run(s: &Session, line: &str) -> Value {
    let (out, _) = commands::execute(s, line)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .unwrap();
    out.json_document()["result"].clone()
}

fn hex(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

const LINUX_NET8: &[&str] = &[
    "hang",
    "deadlock",
    "heap",
    "crash",
    "threadpool",
    "servergc",
];

#[test]
fn clrthreads_equals_the_dac_thread_data() {
    for name in LINUX_NET8.iter().chain(&["windows-hang"]) {
        let e = tests::entry(name);
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let r = run(&s, "clrthreads");
        let ours = r["threads"].as_array().unwrap();
        let dac = e.dac["threads"].as_array().unwrap();
        assert_eq!(ours.len(), dac.len(), "{name}: thread count");
        for (o, d) in ours.iter().zip(dac) {
            let what = format!("{name}: thread {}", d["address"]);
            assert_eq!(hex(&o["thread"]), hex(&d["address"]), "{what}");
            assert_eq!(o["managed_id"], d["corThreadId"], "{what}");
            assert_eq!(o["os_id"], d["osThreadId"], "{what}");
            assert_eq!(o["state"], d["state"], "{what}");
            let coop = d["preemptiveGCDisabled"].as_u64().unwrap() != 0;
            assert_eq!(
                o["gc_mode"],
                if coop { "Cooperative" } else { "Preemptive" },
                "{what}"
            );
            assert_eq!(
                hex(&o["alloc_context"]),
                hex(&d["allocContextPtr"]),
                "{what}"
            );
            assert_eq!(
                hex(&o["alloc_limit"]),
                hex(&d["allocContextLimit"]),
                "{what}"
            );
            assert_eq!(
                o["lock_count"].as_i64().unwrap() as u32 as u64,
                d["lockCount"].as_u64().unwrap(),
                "{what}"
            );
            let fin = o["tags"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == "Finalizer");
            assert_eq!(fin, d["is_finalizer"].as_bool().unwrap(), "{what}");
            if !name.starts_with("windows") {
                let h = o["last_exception_handle"]
                    .as_str()
                    .map(|_| hex(&o["last_exception_handle"]));
                assert_eq!(h.unwrap_or(0), hex(&d["lastThrownObjectHandle"]), "{what}");
            }
        }
    }
}

#[test]
fn crash_thread_shows_its_exception() {
    let e = tests::entry("crash");
    let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
    let r = run(&s, "clrthreads");
    let with_ex: Vec<&Value> = r["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| !t["last_exception"].is_null())
        .collect();
    assert_eq!(with_ex.len(), 1);
    assert_eq!(
        with_ex[0]["last_exception_type"],
        "System.InvalidOperationException"
    );
}

/// An address in the commands' JSON: a hex string or a number.
fn addr(v: &Value) -> Option<u64> {
    match v {
        Value::String(s) => u64::from_str_radix(s.trim_start_matches("0x"), 16).ok(),
        v => v.as_u64(),
    }
}

/// `clrstack -all` on every Linux dump where the tests claim the stack walk (.NET 8, 9, 10, 11):
/// every frame's SP, IP and explicit Frame address equal the DAC's, in order; the method names
/// too where the tests claim Methods.
#[test]
fn clrstack_all_equals_the_dac_frames_on_linux() {
    let mut frames = 0;
    for e in tests::readable_for(tests::Capability::Stacks) {
        if e.os() == "windows" {
            continue;
        }
        let name = &e.name;
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let r = run(&s, "clrstack -all");
        let names = tests::claims(&e, tests::Capability::Methods);
        for d in e.dac["stacks"].as_array().unwrap() {
            let os = d["osThreadId"].as_u64().unwrap();
            let ours = r
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["os_id"].as_u64() == Some(os))
                .unwrap_or_else(|| panic!("{name}: thread {os} missing"));
            let key = |f: &Value| (addr(&f["sp"]), addr(&f["ip"]), addr(&f["frame"]));
            let want: Vec<_> = d["frames"].as_array().unwrap().iter().map(key).collect();
            let got: Vec<_> = ours["frames"].as_array().unwrap().iter().map(key).collect();
            assert_eq!(got, want, "{name}: thread {os}: sp, ip, Frame");
            frames += want.len();
            if !names {
                continue;
            }
            let want: Vec<&str> = d["frames"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|f| f["method"].as_str())
                .collect();
            let got: Vec<&str> = ours["frames"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|f| f["method"].as_str())
                .collect();
            assert_eq!(got, want, "{name}: thread {os}");
        }
    }
    assert!(frames > 1000, "{frames} frames compared");
}

#[test]
fn blocked_threads_show_where_they_block() {
    for name in LINUX_NET8 {
        let e = tests::entry(name);
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let r = run(&s, "clrstack -all");
        for t in e.manifest["threads"].as_array().unwrap() {
            let os = t["os_id"].as_u64().unwrap();
            let st = r
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["os_id"].as_u64() == Some(os))
                .unwrap_or_else(|| panic!("{name}: thread {os} missing"));
            let methods: Vec<String> = st["frames"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|f| f["method"].as_str())
                .map(|m| m.split('(').next().unwrap().to_string())
                .collect();
            let want: Vec<&str> = t["frames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap())
                .collect();
            // The program's own namespace.
            let prefix = format!("{}.", want[0].split('.').next().unwrap());
            let own: Vec<&String> = methods.iter().filter(|m| m.starts_with(&prefix)).collect();
            assert_eq!(own, want, "{name}: thread {os} own frames");
            if let Some(b) = t["blocked_in"].as_str() {
                let first_own = methods.iter().position(|m| m.starts_with(&prefix)).unwrap();
                assert!(
                    methods[..first_own].iter().any(|m| m == b),
                    "{name}: thread {os}: {b} not in {methods:?}"
                );
            }
        }
    }
}

fn find<'a>(n: &'a Value, method_prefix: &str) -> Option<&'a Value> {
    if n["method"]
        .as_str()
        .is_some_and(|m| m.starts_with(method_prefix))
    {
        return Some(n);
    }
    n["children"]
        .as_array()
        .and_then(|c| c.iter().find_map(|k| find(k, method_prefix)))
}

#[test]
fn pstacks_merges_the_gate_threads_of_hang() {
    let e = tests::entry("hang");
    let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
    let r = run(&s, "pstacks");
    let gate = r["roots"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|root| find(root, "Hang.Program.GateThreadMain"))
        .expect("a GateThreadMain branch");
    assert_eq!(gate["count"], 4);
    let wait = find(gate, "System.Threading.Monitor.Wait(").unwrap();
    assert_eq!(wait["count"], 4);
    let mut ids: Vec<u64> = gate["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    ids.sort();
    let mut want: Vec<u64> = e.manifest["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["frames"][0] == "Hang.Program.WaitOnGate")
        .map(|t| t["os_id"].as_u64().unwrap())
        .collect();
    want.sort();
    assert_eq!(ids, want);
    // Text: the group line lists 4 ids, the footer counts threads and roots.
    let (out, _) = commands::execute(&s, "pstacks").unwrap().unwrap();
    assert!(
        out.text.contains("==> 9 threads with 6 roots"),
        "{}",
        out.text
    );
    let line = out
        .text
        .lines()
        .find(|l| l.contains("~~~~") && l.matches(',').count() == 3)
        .expect("a group of 4 threads");
    assert!(!line.ends_with("..."));
}

#[test]
fn pstacks_shows_the_deadlock_lock_frames() {
    let e = tests::entry("deadlock");
    let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
    let (out, _) = commands::execute(&s, "pstacks").unwrap().unwrap();
    assert_eq!(
        out.text
            .matches("System.Threading.Monitor.ReliableEnter(System.Object, Boolean ByRef)")
            .count(),
        3,
        "{}",
        out.text
    );
}

/// Without a thread, clrstack shows the current thread: the faulting one in the crash dump,
/// the main thread in a live dump (as the manifests name them).
#[test]
fn clrstack_defaults_to_the_current_thread() {
    for (name, role) in [
        ("crash", "crash"),
        ("hang", "main"),
        ("windows-hang", "main"),
    ] {
        let e = tests::entry(name);
        let s = commands::Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let (out, _) = commands::execute(&s, "clrstack").unwrap().unwrap();
        let got = out.json_document()["result"][0]["os_id"].as_u64();
        let want = e.manifest["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["role"] == role)
            .unwrap()["os_id"]
            .as_u64();
        assert_eq!(got, want, "{name}: clrstack's default thread");
    }
}

/// The PARAMETERS and LOCALS lines of a `clrstack -a -all` text, per OS thread id.
fn var_blocks(text: &str) -> std::collections::BTreeMap<u64, Vec<String>> {
    let mut out: std::collections::BTreeMap<u64, Vec<String>> = Default::default();
    let mut thread = None;
    for l in text.lines() {
        if let Some(id) = l.strip_prefix("OS Thread Id: 0x") {
            thread = u64::from_str_radix(id.split_whitespace().next().unwrap_or(""), 16).ok();
            continue;
        }
        if let Some(t) = thread {
            if l.starts_with("        ") || l == "    PARAMETERS:" || l == "    LOCALS:" {
                out.entry(t).or_default().push(l.trim_end().to_string());
            }
        }
    }
    out
}

/// `clrstack -a -all` prints SOS's PARAMETERS and LOCALS blocks line for line (SOS:
/// dumps/<name>.sos-locals.txt; no PDB folder here, so no local is named and every line has
/// SOS's own form).
#[test]
fn clrstack_a_prints_sos_parameters_and_locals() {
    let mut lines = 0;
    for name in tests::names() {
        // SOS's lists stop short on the triage dump (the DAC fails part way through a frame's
        // arguments and locals): tests/tests/frame_vars.rs compares what it shows there.
        if name == "hang-net8-triage" {
            continue;
        }
        let Ok(sos) =
            std::fs::read_to_string(tests::dumps_dir().join(format!("{name}.sos-locals.txt")))
        else {
            continue;
        };
        let sos = sos
            .split("### ")
            .find(|s| s.starts_with("clrstack -a -all"))
            .expect("a clrstack -a -all section");
        let e = tests::entry(&name);
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let (out, _) = commands::execute(&s, "clrstack -a -all").unwrap().unwrap();
        let (mut ours, theirs) = (var_blocks(&out.text), var_blocks(sos));
        for (t, want) in &theirs {
            // SOS's ShowArgs reuses one name buffer, which the DAC's GetArgumentByIndex leaves
            // as it was for an argument of a method with metadata but no Param row: SOS prints
            // the preceding argument's name again (names-net10/11: the Reflection.Emit
            // `Worker.Run(string)` without DefineParameter, dumps/scenarios/names.cs, shows
            // `this` twice). Our unnamed argument's line takes that name only where SOS's line
            // is exactly it followed by ours.
            if let Some(o) = ours.get_mut(t) {
                for i in 1..o.len().min(want.len()) {
                    let prev = want[i - 1].trim_start().split(" (").next().unwrap_or("");
                    if o[i].starts_with("        (")
                        && !prev.is_empty()
                        && want[i] == format!("        {prev} {}", o[i].trim_start())
                    {
                        o[i] = want[i].clone();
                    }
                }
            }
            assert_eq!(
                ours.get(t),
                Some(want),
                "{name}: thread {t:#x}:\n{}",
                out.text
            );
            lines += want.len();
        }
        let doc = out.json_document();
        let frames = doc["result"][0]["frames"].as_array().unwrap();
        assert!(
            frames.iter().any(|f| f["arguments"].is_array()),
            "{name}: no arguments in the JSON"
        );
    }
    eprintln!("clrstack -a -all: {lines} PARAMETERS/LOCALS lines equal to SOS's");
    assert!(lines > 1000, "only {lines} lines compared");
}
