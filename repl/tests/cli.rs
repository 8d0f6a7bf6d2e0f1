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

/// `man` documents every session command with its options, from the same definitions as
/// `help` (the registry's clap grammars); `man <command>` is that command's own page; the shell
/// completions offer the commands' names as `-c`'s values.
#[test]
fn man_pages_and_completions_cover_every_command() {
    let man = dumpshell(&["man"]);
    assert!(man.contains(".SH COMMANDS"), "the man page lacks COMMANDS");
    let bash = dumpshell(&["completions", "bash"]);
    for spec in commands::registry() {
        let entry = format!(".TP\n\\fB{}\\fR", spec.name.replace('-', "\\-"));
        assert!(man.contains(&entry), "the man page lacks {}", spec.name);
        let help = commands::help::command_help(spec);
        let page = dumpshell(&["man", spec.name]);
        assert!(
            page.starts_with(&format!(".TH dumpshell\\-{} 1", spec.name)),
            "man {}: {page}",
            spec.name
        );
        for o in &help.options {
            let long = o.long.as_deref().unwrap_or_default().replace('-', "\\-");
            assert!(page.contains(&long), "man {} lacks {long}", spec.name);
            assert!(
                man.contains(&long),
                "the man page's {} lacks {long}",
                spec.name
            );
        }
        assert!(
            bash.split(|c: char| c.is_whitespace() || c == '"')
                .any(|w| w == spec.name),
            "bash completions do not offer {} after -c",
            spec.name
        );
    }
    // An unknown command's page is refused with the closest names.
    let out = Command::new(env!("CARGO_BIN_EXE_dumpshell"))
        .args(["man", "dumphaep"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("dumpheap"), "{err}");
}
