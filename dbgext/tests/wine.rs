//! The real DLL, cross-built for x86_64-pc-windows-gnu, loaded by the test host
//! (`testhost/main.rs`: dbgeng's interfaces over a dump file) under wine, on an ELF core and
//! a Windows minidump of the corpus. Every command's output, captured from
//! IDebugControl::ControlledOutput, must be dumpshell's own (run in-process here) but for the
//! fields that legitimately differ (`common::normalize_*`).
//!
//! Needs wine, mingw-w64 and the Rust target. Without them the test prints "SKIPPED: ..." and
//! passes, unless `DUMPSHELL_REQUIRE_WINE=1` (CI), where it fails.

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TARGET: &str = "x86_64-pc-windows-gnu";

fn root() -> PathBuf {
    tests::workspace_root()
}

fn require() -> bool {
    std::env::var("DUMPSHELL_REQUIRE_WINE").is_ok_and(|v| v == "1")
}

fn skip_or_fail(why: &str) {
    if require() {
        panic!("DUMPSHELL_REQUIRE_WINE=1 but {why}");
    }
    // Written to the real stderr, past the test harness's capture, so it shows in a passing run.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\nSKIPPED: dbgext wine test: {why} (set DUMPSHELL_REQUIRE_WINE=1 to make this a failure)\n"
    );
}

fn works(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What is missing to run the test, if anything.
fn missing_prerequisite() -> Option<String> {
    if !works("wine", &["--version"]) {
        return Some("wine is not installed (apt-get install wine wine64)".into());
    }
    if !works("x86_64-w64-mingw32-gcc", &["--version"]) {
        return Some("mingw-w64 is not installed (apt-get install gcc-mingw-w64-x86-64)".into());
    }
    let libdir = Command::new("rustc")
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let has_std = libdir
        .and_then(|d| std::fs::read_dir(d).ok())
        .is_some_and(|rd| {
            rd.filter_map(|e| e.ok())
                .any(|e| e.file_name().to_string_lossy().starts_with("libstd-"))
        });
    if !has_std {
        return Some(format!(
            "the Rust target {TARGET} is not installed (rustup target add {TARGET})"
        ));
    }
    None
}

/// Runs a command with output to files (wineserver outlives its clients and would hold a pipe
/// open), with a deadline. Returns stdout.
fn run_logged(mut cmd: Command, log: &Path, limit: Duration) -> String {
    let out_path = log.with_extension("out");
    let err_path = log.with_extension("err");
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} took more than {limit:?}; stderr:\n{}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = std::fs::read_to_string(&out_path).unwrap_or_default();
    assert!(
        status.success(),
        "{cmd:?} failed ({status}); stderr:\n{}\nstdout:\n{out}",
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    out
}

fn wine_path(p: &Path) -> String {
    let abs = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    format!("Z:{}", abs.display()).replace('/', "\\")
}

struct Built {
    dir: PathBuf,
    prefix: PathBuf,
}

/// Cross-builds the DLL and the host into target/wine (a target folder of its own, so the
/// outer cargo's lock is not in the way), builds the bcryptprimitives stub beside them and
/// makes the wine prefix.
fn build() -> Built {
    let wine_target = root().join("target").join("wine");
    std::fs::create_dir_all(&wine_target).unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut c = Command::new(cargo);
    c.current_dir(root())
        .args([
            "build", "-p", "dbgext", "--lib", "--bins", "--target", TARGET,
        ])
        .arg("--target-dir")
        .arg(&wine_target)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET");
    let t = Instant::now();
    run_logged(c, &wine_target.join("build"), Duration::from_secs(1800));
    eprintln!("dbgext wine test: cross-build took {:?}", t.elapsed());
    let dir = wine_target.join(TARGET).join("debug");
    let mut gcc = Command::new("x86_64-w64-mingw32-gcc");
    gcc.args(["-shared", "-O2", "-o"])
        .arg(dir.join("bcryptprimitives.dll"))
        .arg(root().join("dbgext/testhost/bcryptprimitives.c"));
    run_logged(gcc, &wine_target.join("gcc"), Duration::from_secs(120));
    let prefix = wine_target.join("prefix");
    if !prefix.join("system.reg").is_file() {
        let t = Instant::now();
        let mut boot = wine_cmd(&prefix, "wineboot");
        boot.arg("--init");
        run_logged(
            boot,
            &wine_target.join("wineboot"),
            Duration::from_secs(300),
        );
        eprintln!("dbgext wine test: wine prefix made in {:?}", t.elapsed());
    }
    Built { dir, prefix }
}

fn wine_cmd(prefix: &Path, program: &str) -> Command {
    let mut c = Command::new("wine");
    c.arg(program)
        .env("WINEPREFIX", prefix)
        .env("WINEDEBUG", "-all")
        .env("WINEDLLOVERRIDES", "bcryptprimitives=n;mscoree,mshtml=")
        .env("WINEARCH", "win64");
    c
}

/// Runs the host on one dump and checks every command against dumpshell.
fn check(b: &Built, name: &str, strict_reads: bool) -> Vec<String> {
    let entry = tests::entry(name);
    let dump = entry.dump_path();
    let session = common::open(&dump);
    let lines: Vec<String> = common::COMMANDS
        .iter()
        .map(|c| common::expand(c, &session))
        .collect();
    let unavailable = dbgext::run::EXPORTED_COMMANDS
        .iter()
        .find(|n| commands::lookup(n).is_none());
    let mut c = wine_cmd(
        &b.prefix,
        &b.dir.join("dbgext-testhost.exe").display().to_string(),
    );
    c.arg(wine_path(&b.dir.join("dbgext.dll")))
        .arg(wine_path(&dump));
    if strict_reads {
        c.arg("--strict-reads");
    }
    c.args(&lines);
    c.arg("help");
    if let Some(n) = unavailable {
        c.arg(*n);
    }
    let t = Instant::now();
    let out = run_logged(
        c,
        &root().join("target/wine").join(format!("host-{name}")),
        Duration::from_secs(600),
    );
    eprintln!("dbgext wine test: {name}: host ran in {:?}", t.elapsed());
    let doc: Value = serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("host output is not JSON ({e}):\n{out}"));
    let mut failures = Vec::new();
    if doc["initialize"]["hr"] != 0 || doc["initialize"]["version"] != 0x10000 {
        failures.push(format!("DebugExtensionInitialize: {}", doc["initialize"]));
    }
    if doc["missing_exports"]
        .as_array()
        .is_none_or(|a| !a.is_empty())
    {
        failures.push(format!("missing exports: {}", doc["missing_exports"]));
    }
    if doc["violations"].as_array().is_none_or(|a| !a.is_empty()) {
        failures.push(format!("dbgeng rule violations: {}", doc["violations"]));
    }
    let results = doc["results"].as_array().cloned().unwrap_or_default();
    for (i, line) in lines.iter().enumerate() {
        let Some(r) = results.get(i) else {
            failures.push(format!("no result for '{line}'"));
            continue;
        };
        let ours = r["normal"].as_str().unwrap_or("");
        let (theirs, their_ok) = common::dumpshell(&session, line);
        let our_ok = r["hr"] == 0;
        if our_ok != their_ok {
            failures.push(format!(
                "'{line}': dbgext hr={} but dumpshell ok={their_ok}; error output: {}",
                r["hr"], r["error"]
            ));
        }
        if their_ok && r["error"].as_str().is_some_and(|e| !e.is_empty()) {
            failures.push(format!("'{line}': unexpected error output {}", r["error"]));
        }
        if let Some(d) = common::compare(line, ours, &theirs, entry.os()) {
            failures.push(d);
        }
    }
    let help = &results[lines.len()];
    if help["hr"] != 0 || !help["normal"].as_str().unwrap_or("").contains("dq (dp)") {
        failures.push(format!("!help: {help}"));
    }
    if let Some(n) = unavailable {
        let r = &results[lines.len() + 1];
        let want = format!("dumpshell: '{n}' is not available in this build\n");
        if r["error"].as_str() != Some(want.as_str()) {
            failures.push(format!("!{n}: wanted {want:?}, got {r}"));
        }
    }
    failures
        .into_iter()
        .map(|f| format!("[{name}] {f}"))
        .collect()
}

#[test]
fn dll_under_wine_matches_dumpshell() {
    if let Some(why) = missing_prerequisite() {
        skip_or_fail(&why);
        return;
    }
    let b = build();
    let mut failures = check(&b, "hang", false);
    failures.extend(check(&b, "windows-hang", true));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
