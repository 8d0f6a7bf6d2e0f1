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
use std::time::{Duration, Instant};
use tests::wine::{
    build, missing_prerequisite, run_logged, skip_or_fail, wine_cmd, wine_path, Built,
};

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
        .find(|n| dbgext::run::is_unavailable(n));
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
        &tests::workspace_root()
            .join("target/wine")
            .join(format!("host-{name}")),
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
    // `!help` lists every command of the registry, one line each.
    let help = &results[lines.len()];
    let text = help["normal"].as_str().unwrap_or("");
    let unlisted: Vec<&str> = commands::registry()
        .iter()
        .map(|c| c.name)
        .filter(|n| !text.contains(&format!("\n  {n} ")))
        .collect();
    if help["hr"] != 0 || !unlisted.is_empty() {
        failures.push(format!("!help (without {unlisted:?}): {help}"));
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
    let b = build(&["-p", "dbgext", "--lib", "--bins"]);
    let mut failures = check(&b, "hang", false);
    failures.extend(check(&b, "windows-hang", true));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
