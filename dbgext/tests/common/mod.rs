//! What the dbgext tests share: dumpshell's own answer for a command line, and the comparison
//! that allows only the fields that legitimately differ between a dump file and a debugger.
#![allow(dead_code)]

use commands::Session;
use serde_json::Value;
use std::path::Path;

/// The commands checked on every dump (`{rsp}` is replaced by the first thread's rsp, `{edge}`
/// by an address 0x20 bytes before the end of a memory range, to test partial reads).
pub const COMMANDS: &[&str] = &[
    "info",
    "info --json",
    "threads",
    "threads --json",
    "threads -r",
    "modules",
    "modules --json",
    "dq {rsp}",
    "dq {rsp} L20 --json",
    "db {edge} 0x40",
    "dd {edge} 0x20 --json",
    "dq 0x10",
];

/// Fills the placeholders of a command line for this dump.
pub fn expand(cmd: &str, session: &Session) -> String {
    let t = &*session.target;
    let rsp = t.threads().first().map(|t| t.context.rsp).unwrap_or(0);
    // The end of a range that is not followed directly by another.
    let ranges = t.memory_ranges();
    let edge = ranges
        .windows(2)
        .find(|w| w[0].end() < w[1].address)
        .map(|w| w[0].end() - 0x20)
        .unwrap_or(0);
    cmd.replace("{rsp}", &format!("{rsp:#x}"))
        .replace("{edge}", &format!("{edge:#x}"))
}

/// What `dumpshell <dump> -c <line>` prints on stdout (JSON compact, as when piped), and
/// whether it succeeded.
pub fn dumpshell(session: &Session, line: &str) -> (String, bool) {
    match commands::execute(session, line) {
        Ok(None) => (String::new(), true),
        Ok(Some((out, json))) => {
            if json {
                (format!("{}\n", out.json_document()), true)
            } else {
                let mut t = out.text;
                if !t.is_empty() && !t.ends_with('\n') {
                    t.push('\n');
                }
                (t, true)
            }
        }
        Err(e) => {
            let name = line.split_whitespace().next().unwrap_or("");
            let out = if line.split_whitespace().any(|w| w == "--json") {
                format!("{}\n", e.json_document(name))
            } else {
                String::new()
            };
            (out, false)
        }
    }
}

/// Opens the dump for dumpshell's side.
pub fn open(path: &Path) -> Session {
    Session::open(path).unwrap_or_else(|e| panic!("opening {}: {e}", path.display()))
}

/// Fields that legitimately differ, per command, in the JSON (`result` paths) and in the text
/// (lines starting with these labels):
/// - `info`: `path` (the dump path vs. what the debugger says it opened), `source`,
///   `command_line` (dbgeng has no call for it), `memory_bytes_in_file` (a debugger does not
///   say which bytes a file holds), `process_name` on minidumps (the dump does not record it;
///   a debugger knows the executable), `modules` on ELF cores (dumpshell counts every mapped
///   file, a debugger lists images);
/// - `threads`: `stack` on Windows (the minidump's stack descriptor starts at the saved rsp;
///   through a debugger the TEB's StackLimit..StackBase), `fs_base` and `orig_rax` on Linux
///   (not part of a Windows CONTEXT), `signal` (per-thread signals are an ELF note), `name`.
pub fn normalize_json(cmd: &str, v: &mut Value, os: &str) {
    let r = &mut v["result"];
    match cmd {
        "info" => {
            // dump_kind: who wrote the dump is read from the file's own notes and streams,
            // which a debugger engine does not hand on.
            for k in [
                "path",
                "source",
                "command_line",
                "memory_bytes_in_file",
                "dump_kind",
            ] {
                r[k] = Value::Null;
            }
            if os == "windows" {
                r["process_name"] = Value::Null;
            } else {
                r["modules"] = Value::Null;
            }
        }
        "threads" => {
            if let Some(ts) = r["threads"].as_array_mut() {
                for t in ts {
                    t["signal"] = Value::Null;
                    t["name"] = Value::Null;
                    if os == "windows" {
                        t["stack"] = Value::Null;
                    } else {
                        t["registers"]["fs_base"] = Value::Null;
                        t["registers"]["orig_rax"] = Value::Null;
                    }
                }
            }
        }
        _ => {}
    }
}

/// The same for text: drops lines whose content legitimately differs (see [`normalize_json`]).
pub fn normalize_text(cmd: &str, text: &str, os: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let l = line.trim_start();
        let drop = match cmd {
            "info" => {
                ["Dump:", "Source:", "Command line:", "Memory:", "Dump kind:"]
                    .iter()
                    .any(|p| l.starts_with(p))
                    || (os == "windows" && l.starts_with("Process name:"))
                    || (os != "windows" && l.starts_with("Modules:"))
            }
            _ => false,
        };
        if drop {
            // Dropped, not replaced: some of these lines are present on one side only.
            continue;
        }
        let mut line = line.to_string();
        if cmd == "threads" {
            if os == "windows" {
                // The stack column: keep everything up to it.
                if let Some(i) = line.find(" 0x") {
                    line.truncate(i);
                }
            } else {
                for reg in ["fs_base=", "orig_rax="] {
                    if let Some(i) = line.find(reg) {
                        let end = (i + reg.len() + 16).min(line.len());
                        line.replace_range(i + reg.len()..end, "<differs>");
                    }
                }
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Compares dbgext's output for `line` with dumpshell's; returns a description of the first
/// difference, or None.
pub fn compare(line: &str, ours: &str, theirs: &str, os: &str) -> Option<String> {
    let cmd = line.split_whitespace().next().unwrap_or("");
    if line.split_whitespace().any(|w| w == "--json") {
        let parse =
            |s: &str| -> Result<Value, serde_json::Error> { serde_json::from_str(s.trim()) };
        let (mut a, mut b) = match (parse(ours), parse(theirs)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) => return Some(format!("dbgext: not JSON ({e}): {ours:?}")),
            (_, Err(e)) => return Some(format!("dumpshell: not JSON ({e}): {theirs:?}")),
        };
        normalize_json(cmd, &mut a, os);
        normalize_json(cmd, &mut b, os);
        if a != b {
            return Some(format!(
                "JSON differs for '{line}':\n dbgext:    {a}\n dumpshell: {b}"
            ));
        }
        None
    } else {
        let (a, b) = (
            normalize_text(cmd, ours, os),
            normalize_text(cmd, theirs, os),
        );
        if a != b {
            let first = a
                .lines()
                .zip(b.lines())
                .find(|(x, y)| x != y)
                .map(|(x, y)| format!("first differing line:\n dbgext:    {x}\n dumpshell: {y}"))
                .unwrap_or_else(|| "line counts differ".into());
            return Some(format!(
                "text differs for '{line}': {first}\n--- dbgext ---\n{a}--- dumpshell ---\n{b}"
            ));
        }
        None
    }
}
