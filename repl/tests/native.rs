//! The native-level commands on the real corpus, checked against the truths: the manifest (what
//! the program knew: its pid, its threads' OS ids) and the DAC's view (threads, object addresses
//! and their MethodTables).

use commands::Session;
use serde_json::Value;
use std::collections::BTreeSet;
use std::process::Command;

fn run_json(s: &Session, line: &str) -> Value {
    let (out, _) = commands::execute(s, line)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .unwrap();
    out.json_document()
}

fn session(e: &tests::Entry) -> Session {
    Session::open_with(&e.dump_path(), &e.open_options())
        .unwrap_or_else(|err| panic!("{}: {err}", e.name))
}

fn hex(v: &Value) -> u64 {
    let s = v.as_str().unwrap();
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

#[test]
fn info_reports_the_programs_pid_and_format() {
    for e in tests::all() {
        let doc = run_json(&session(&e), "info");
        assert_eq!(doc["schema"], 1);
        assert_eq!(doc["command"], "info");
        let r = &doc["result"];
        assert_eq!(r["pid"], e.manifest["pid"], "{}: pid", e.name);
        let want = if e.os() == "windows" {
            "minidump"
        } else {
            "elf-core"
        };
        assert_eq!(r["format"], want, "{}: format", e.name);
        assert_eq!(r["os"], e.os(), "{}: os", e.name);
        assert_eq!(r["arch"], "x86_64");
        // Only the crash dumps died of a signal; the others were dumped alive.
        let crashed = e.kind() == "crash";
        assert_eq!(
            !r["exception"].is_null(),
            crashed,
            "{}: exception {}",
            e.name,
            r["exception"]
        );
    }
}

#[test]
fn threads_lists_every_managed_thread_the_dac_saw() {
    for e in tests::all() {
        let doc = run_json(&session(&e), "threads --json");
        let ours: BTreeSet<u64> = doc["result"]["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["os_id"].as_u64().unwrap())
            .collect();
        let dac: BTreeSet<u64> = e.dac["threads"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["osThreadId"].as_u64())
            .filter(|&id| id != 0)
            .collect();
        assert!(
            dac.is_subset(&ours),
            "{}: DAC threads {dac:?} not all in {ours:?}",
            e.name
        );
        for t in e.manifest["threads"].as_array().unwrap() {
            assert!(
                ours.contains(&t["os_id"].as_u64().unwrap()),
                "{}: manifest thread {}",
                e.name,
                t["os_id"]
            );
        }
    }
}

#[test]
fn one_thread_shows_its_registers() {
    let e = tests::entry("hang");
    let s = session(&e);
    let main = e.manifest["threads"][0]["os_id"].as_u64().unwrap();
    let doc = run_json(&s, &format!("threads {main}"));
    let th = &doc["result"]["threads"];
    assert_eq!(th.as_array().unwrap().len(), 1);
    // The DAC's stack walk of the main thread started from the same context.
    let st = e.dac["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["osThreadId"].as_u64() == Some(main))
        .unwrap();
    assert_eq!(hex(&th[0]["registers"]["rip"]), hex(&st["frames"][0]["ip"]));
    assert_eq!(hex(&th[0]["registers"]["rsp"]), hex(&st["frames"][0]["sp"]));
    let err = commands::execute(&s, "threads 1").expect_err("thread 1 does not exist");
    assert!(err.to_string().contains("no thread with OS id 1"), "{err}");
}

#[test]
fn modules_find_the_runtime_and_corelib() {
    // A single-file app's runtime is its host and CoreLib lives in the bundle:
    // tests/tests/app_shapes.rs checks those.
    for e in tests::all()
        .into_iter()
        .filter(|e| !e.shape().starts_with("single-file"))
    {
        let doc = run_json(&session(&e), "modules");
        let paths: Vec<String> = doc["result"]["modules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                m["path"]
                    .as_str()
                    .unwrap()
                    .replace('\\', "/")
                    .to_ascii_lowercase()
            })
            .collect();
        let rt = if e.os() == "windows" {
            "/coreclr.dll"
        } else {
            "/libcoreclr.so"
        };
        assert!(paths.iter().any(|p| p.ends_with(rt)), "{}: no {rt}", e.name);
        assert!(
            paths
                .iter()
                .any(|p| p.ends_with("/system.private.corelib.dll")),
            "{}: no CoreLib",
            e.name
        );
        let unique: BTreeSet<&String> = paths.iter().collect();
        assert_eq!(
            unique.len(),
            paths.len(),
            "{}: a module is listed twice",
            e.name
        );
    }
}

/// `dq` of an object address shows its MethodTable pointer first: the DAC listed both for every
/// async state machine box.
#[test]
fn dq_shows_the_methodtable_the_dac_saw() {
    let mut checked = 0;
    for e in tests::all() {
        let s = session(&e);
        for b in e.dac["async_state_machine_boxes"]["boxes"]
            .as_array()
            .into_iter()
            .flatten()
            .take(5)
        {
            let doc = run_json(&s, &format!("dq {} 2", b["address"].as_str().unwrap()));
            let r = &doc["result"];
            assert_eq!(r["read"], 16);
            assert_eq!(
                hex(&r["values"][0]) & !7,
                hex(&b["mt"]),
                "{}: box {}",
                e.name,
                b["address"]
            );
            checked += 1;
        }
    }
    assert!(checked >= 10);
}

#[test]
fn memory_display_stops_where_the_dump_has_no_memory() {
    let e = tests::entry("hang");
    let s = session(&e);
    let doc = run_json(&s, "db 0x10 16");
    assert_eq!(doc["result"]["read"], 0);
    assert_eq!(doc["result"]["missing_from"], "0x10");
    let (out, _) = commands::execute(&s, "db 0x10 16").unwrap().unwrap();
    assert!(
        out.text.contains("the dump holds no memory from here"),
        "{}",
        out.text
    );
    assert!(commands::execute(&s, "db zz").is_err());
    assert!(
        commands::execute(&s, "dd 0x1000 0x1000000").is_err(),
        "an absurd count is refused"
    );
}

// ------------------------------------------------------------------------- the binary itself

fn dumpshell(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dumpshell"))
        .args(args)
        .output()
        .expect("dumpshell runs")
}

#[test]
fn binary_runs_commands_as_json_lines_and_fails_loudly() {
    let e = tests::entry("deadlock");
    let p = e.dump_path();
    let out = dumpshell(&[p.to_str().unwrap(), "-c", "info", "-c", "threads", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let docs: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0]["command"], "info");
    assert_eq!(docs[1]["command"], "threads");
    assert_eq!(docs[0]["result"]["pid"], e.manifest["pid"]);

    let out = dumpshell(&[p.to_str().unwrap(), "-c", "nosuchcommand", "-c", "info"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed command makes the exit status 1"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nosuchcommand") && err.contains("unknown command"),
        "{err}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Process id:"),
        "later commands still run"
    );

    let out = dumpshell(&["/nonexistent/dump.dmp", "-c", "info"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/dump.dmp"));
}

#[test]
fn binary_reads_commands_from_a_script_and_from_stdin() {
    use std::io::Write;
    let e = tests::entry("crash");
    let p = e.dump_path();
    let dir = std::env::temp_dir().join(format!("dumpshell-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("cmds.txt");
    std::fs::write(&script, "# a comment\ninfo --json\n\n!threads --json\n").unwrap();
    let out = dumpshell(&[p.to_str().unwrap(), "--script", script.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");

    let mut child = Command::new(env!("CARGO_BIN_EXE_dumpshell"))
        .arg(&p)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"info --json\nexit\nthreads\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let doc: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(doc["result"]["pid"], e.manifest["pid"]);
    assert_eq!(text.lines().count(), 1, "exit stops reading: {text}");
    // The crash dump records the fatal signal on the crashing thread (the manifest's crasher).
    let crasher = e.manifest["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["role"] == "crash");
    let c = crasher.expect("the crash manifest names its crashing thread");
    assert_eq!(doc["result"]["exception"]["thread_id"], c["os_id"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_lists_every_command_and_each_commands_options() {
    let e = tests::entry("hang");
    let p = e.dump_path();
    let out = dumpshell(&[p.to_str().unwrap(), "-c", "help", "-c", "help db"]);
    let text = String::from_utf8(out.stdout).unwrap();
    for c in commands::registry() {
        assert!(text.contains(c.name), "help lacks {}", c.name);
    }
    assert!(
        text.contains("--count"),
        "help db shows db's options: {text}"
    );
}

/// `help --json` and `help <command> --json` print JSON documents (docs/json.md, "help"):
/// every command of the registry with its aliases, and one command's options as its grammar
/// defines them.
#[test]
fn help_in_json() {
    let e = tests::entry("hang");
    let p = e.dump_path();
    let out = dumpshell(&[
        p.to_str().unwrap(),
        "-c",
        "help --json",
        "-c",
        "help dumpheap --json",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let docs: Vec<Value> = serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .map(|d| d.unwrap())
        .collect();
    assert_eq!(docs.len(), 2, "{text}");
    assert_eq!(docs[0]["command"], "help");
    let listed: Vec<&str> = docs[0]["result"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    let registry: Vec<&str> = commands::registry().iter().map(|c| c.name).collect();
    assert_eq!(listed, registry);
    let d = &docs[1]["result"];
    assert_eq!(d["kind"], "command");
    assert_eq!(d["name"], "dumpheap");
    let spec = commands::lookup("dumpheap").unwrap();
    // Built, as help builds it: clap's own --help is one of its options.
    let mut cmd = spec.command();
    cmd.build();
    let longs: Vec<String> = cmd
        .get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set())
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect();
    let json_longs: Vec<String> = d["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["long"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(json_longs, longs);
    assert!(json_longs.iter().any(|l| l == "--stat"), "{json_longs:?}");
}

/// `modules` on a gcore core says per file where the bytes the dump lacks come from and which
/// check accepted the file: CoreLib from the framework pack by the runtime's records,
/// libcoreclr by its build id; the app's dll (hang.dll, ilonly.dll) from dumps/images/<name>/
/// by the runtime's records when kept there, else (not on this machine) from nowhere.
#[test]
fn modules_say_where_a_gcore_cores_missing_bytes_come_from() {
    for e in tests::all()
        .into_iter()
        .filter(|e| e.kind() == "gcore" && e.shape() == "framework-dependent")
    {
        if !e.has_framework() {
            println!(
                "SKIPPED {}: no .NET {} runtime pack here",
                e.name,
                e.runtime_version()
            );
            continue;
        }
        let doc = run_json(&session(&e), "modules");
        let mods = doc["result"]["modules"].as_array().unwrap();
        let by_name = |n: &str| {
            mods.iter()
                .find(|m| m["path"].as_str().unwrap().ends_with(n))
                .unwrap_or_else(|| panic!("{}: no {n}", e.name))
        };
        let core = &by_name("/System.Private.CoreLib.dll")["missing"];
        assert_eq!(core["source"], "file", "{}: {core}", e.name);
        assert!(
            core["check"]
                .as_str()
                .unwrap()
                .starts_with("the runtime's records:"),
            "{core}"
        );
        assert!(core["bytes"].as_u64().unwrap() > 0);
        let clr = &by_name("/libcoreclr.so")["missing"];
        assert_eq!(clr["source"], "file", "{clr}");
        assert!(
            clr["check"]
                .as_str()
                .unwrap()
                .starts_with("build id matches"),
            "{clr}"
        );
        // The app's own dll: kept in dumps/images/<name>/ (then read from it, accepted by the
        // runtime's records), or nowhere.
        let dll = format!("{}.dll", e.program());
        let app = &by_name(&format!("/{dll}"))["missing"];
        if e.image_dir().is_some_and(|d| d.join(&dll).is_file()) {
            assert_eq!(app["source"], "file", "{}: {app}", e.name);
            assert!(
                app["check"]
                    .as_str()
                    .unwrap()
                    .starts_with("the runtime's records:"),
                "{app}"
            );
        } else {
            assert_eq!(app["source"], "none", "{}: {app}", e.name);
            assert!(app["file"].is_null(), "{app}");
        }
        println!(
            "{}: CoreLib: {}; {dll}: {} {}",
            e.name, core["check"], app["check"], app["why"]
        );
    }
}
