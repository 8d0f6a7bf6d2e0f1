//! The interactive session driven through a real pseudo-terminal: the prompt, command
//! completion, history kept across sessions, Ctrl-C at the prompt.

use rexpect::reader::Options;
use rexpect::session::{spawn_with_options, PtySession};
use std::path::Path;
use std::process::Command;

fn start(dump: &Path, data_home: &Path) -> PtySession {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dumpshell"));
    cmd.arg(dump)
        .env("XDG_DATA_HOME", data_home)
        .env("TERM", "xterm");
    let mut p = spawn_with_options(
        cmd,
        Options::new()
            .timeout_ms(Some(20_000))
            .strip_ansi_escape_codes(true),
    )
    .expect("dumpshell starts in a pty");
    p.exp_string("Type 'help' for commands").expect("banner");
    p.exp_string("> ").expect("prompt");
    p
}

/// Sends keys and flushes them to the terminal.
fn send(p: &mut PtySession, keys: &str) {
    p.send(keys).unwrap();
    p.flush().unwrap();
}

#[test]
fn completion_history_and_ctrl_c_at_the_prompt() {
    let e = tests::entry("hang");
    let dump = e.dump_path();
    let home = std::env::temp_dir().join(format!("dumpshell-pty-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();

    let mut p = start(&dump, &home);
    // "inf" + TAB completes to "info" (the only command starting so).
    send(&mut p, "inf");
    p.exp_string("inf").unwrap();
    send(&mut p, "\t");
    p.exp_string("info")
        .expect("TAB completed the command name");
    send(&mut p, "\r");
    p.exp_string(&format!("Process id:     {}", e.manifest["pid"]))
        .expect("info ran after completion");
    p.exp_string("> ").unwrap();
    // An option completes in SOS's spelling: "dumpheap -sta" + TAB is "dumpheap -stat".
    send(&mut p, "dumpheap -sta");
    p.exp_string("-sta").unwrap();
    send(&mut p, "\t");
    p.exp_string("t").expect("TAB completed the option");
    send(&mut p, "\r");
    p.exp_string("Total")
        .expect("dumpheap -stat ran after completion");
    p.exp_string("> ").unwrap();
    // Ctrl-C at the prompt clears the line and keeps the session.
    send(&mut p, "threads --bogus");
    p.exp_string("--bogus").unwrap();
    p.send_control('c').unwrap();
    p.exp_string("> ").unwrap();
    p.send_line("modules").unwrap();
    p.exp_string("libcoreclr.so")
        .expect("the session survived Ctrl-C");
    p.exp_string("> ").unwrap();
    p.send_line("exit").unwrap();
    p.exp_eof().unwrap();

    let hist = std::fs::read_to_string(home.join("dumpshell/history")).expect("history saved");
    assert!(hist.contains("info") && hist.contains("modules"), "{hist}");
    assert!(
        !hist.contains("--bogus"),
        "an interrupted line is not history: {hist}"
    );

    // A new session recalls the last command with the up arrow.
    let mut p = start(&dump, &home);
    send(&mut p, "\x1b[A");
    p.exp_string("modules")
        .expect("up arrow recalled 'modules'");
    send(&mut p, "\r");
    p.exp_string("libcoreclr.so")
        .expect("up arrow recalled 'modules'");
    p.exp_string("> ").unwrap();
    p.send_line("exit").unwrap();
    p.exp_eof().unwrap();
    let _ = std::fs::remove_dir_all(&home);
}

/// Tab after `-type` completes a type name from the dump's heap; Ctrl-C during a running
/// command stops it and keeps the session.
#[test]
fn type_name_completion_and_ctrl_c_during_a_command() {
    let e = tests::entry("hang");
    let dump = e.dump_path();
    let home = std::env::temp_dir().join(format!("dumpshell-pty2-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    // The manifest's own type, by a prefix no other heap type shares.
    let gate = e.manifest["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .find(|n| n.ends_with(".Gate"))
        .unwrap()
        .to_owned();
    let prefix = &gate[..gate.len() - 2];

    let mut p = start(&dump, &home);
    send(&mut p, &format!("dumpheap -stat -type {prefix}"));
    p.exp_string(prefix).unwrap();
    send(&mut p, "\t");
    p.exp_string(&gate[gate.len() - 2..])
        .expect("TAB completed the type name");
    send(&mut p, "\r");
    p.exp_string(&format!("24  {gate}"))
        .expect("dumpheap ran on the completed name (one Gate: 24 bytes)");
    p.exp_string("Total 1 objects").expect("one Gate");
    p.exp_string("> ").unwrap();

    // A command that would run a minute, interrupted.
    p.send_line("sleep 60000").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let t = std::time::Instant::now();
    p.send_control('c').unwrap();
    p.exp_string("interrupted")
        .expect("the command reports the interruption");
    p.exp_string("> ").unwrap();
    assert!(t.elapsed().as_secs() < 10, "stopped promptly");
    p.send_line("eeversion").unwrap();
    p.exp_string("8.0.4")
        .expect("the session goes on after Ctrl-C");
    p.exp_string("> ").unwrap();
    p.send_line("exit").unwrap();
    p.exp_eof().unwrap();
    let _ = std::fs::remove_dir_all(&home);
}
