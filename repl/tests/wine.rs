//! `dumpshell.exe`: the binary cross-built for x86_64-pc-windows-gnu (what Windows users run)
//! and run under wine on a Linux ELF core and a Windows minidump of the corpus prints what the
//! Linux binary prints.
//!
//! Needs wine, mingw-w64 and the Rust target. Without them the test prints "SKIPPED: ..." and
//! passes, unless `DUMPSHELL_REQUIRE_WINE=1` (CI), where it fails.

use std::process::Command;
use std::time::Duration;
use tests::wine::{build, missing_prerequisite, run_logged, skip_or_fail, wine_cmd, wine_path};

/// The commands compared: the merged stacks, and the heap's statistics.
const LINES: &[&str] = &["pstacks", "dumpheap -stat"];

#[test]
fn dumpshell_exe_under_wine_prints_what_the_linux_binary_prints() {
    if let Some(why) = missing_prerequisite() {
        skip_or_fail(&why);
        return;
    }
    let b = build(&["-p", "repl", "--bin", "dumpshell"]);
    let exe = b.dir.join("dumpshell.exe");
    let logs = tests::workspace_root().join("target/wine");
    let mut failures = Vec::new();
    for (name, frame) in [
        ("hang", "Hang.Program.WaitOnGate()"),
        ("windows-hang", "Hang.Program.WaitOnGate()"),
    ] {
        let dump = tests::entry(name).dump_path();
        let mut args: Vec<String> = vec!["--no-recorded-paths".into()];
        for l in LINES {
            args.push("-c".into());
            args.push((*l).into());
        }
        let linux = Command::new(env!("CARGO_BIN_EXE_dumpshell"))
            .arg(&dump)
            .args(&args)
            .output()
            .unwrap();
        assert!(linux.status.success(), "{name}: the Linux binary failed");
        let linux = String::from_utf8_lossy(&linux.stdout).into_owned();
        let mut c = wine_cmd(&b.prefix, &exe.display().to_string());
        c.arg(wine_path(&dump)).args(&args);
        let windows = run_logged(
            c,
            &logs.join(format!("dumpshell-{name}")),
            Duration::from_secs(600),
        );
        if !linux.contains(frame) {
            failures.push(format!(
                "{name}: the Linux binary's pstacks lacks {frame}:\n{linux}"
            ));
        }
        if windows.replace("\r\n", "\n") != linux {
            failures.push(format!(
                "{name}: dumpshell.exe printed\n{windows}\nbut the Linux binary\n{linux}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
