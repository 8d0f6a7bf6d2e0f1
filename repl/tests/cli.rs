//! The command line's own outputs: `--version` names the runtime families read (from
//! clrdata's lists), and the completions and man page are made from the clap definitions
//! (every subcommand and dump option in them).

use std::process::Command;

fn dumpshell(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_dumpshell"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "dumpshell {args:?} failed");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn version_names_the_runtimes_read() {
    let v = dumpshell(&["--version"]);
    assert!(
        v.starts_with(&format!("dumpshell {}", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    for family in [".NET 8:", ".NET 9:", ".NET 10:"] {
        assert!(v.contains(family), "--version lacks {family}: {v}");
    }
}

#[test]
fn completions_and_man_page_come_from_the_clap_definitions() {
    let bash = dumpshell(&["completions", "bash"]);
    for word in [
        "_dumpshell",
        "triage",
        "buckets",
        "report",
        "--buckets",
        "--store",
        "--jobs",
        "completions",
        "--image-path",
        "--cache-dir",
    ] {
        assert!(bash.contains(word), "bash completions lack {word}");
    }
    let zsh = dumpshell(&["completions", "zsh"]);
    assert!(zsh.contains("#compdef dumpshell"), "{zsh}");
    let man = dumpshell(&["man"]);
    assert!(man.contains(".TH dumpshell 1"), "{man}");
    for word in ["triage", "buckets", "report", "completions", "image\\-path"] {
        assert!(man.contains(word), "the man page lacks {word}");
    }
}
