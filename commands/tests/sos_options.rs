//! SOS's option grammar: every option word SOS's own `help` lists for dumpheap, clrstack,
//! gcroot, dumpobj, syncblk, dumpasync and threadpool (dumps/sos-help.txt, written by
//! dumps/tools/sos_help.sh with dotnet-dump 10.0.750501) either parses as that option of
//! dumpshell's command or is refused as SOS's option that dumpshell's lacks; a word that is no
//! option of the command is refused with the closest ones, never read as another (`-stats` is
//! not `-s -t ats`); a mistyped command gets the closest names.

use commands::CommandError;
use std::collections::{BTreeMap, BTreeSet};

/// SOS's option words per command, from its help text: the `Options:` blocks (`-x, --long`),
/// the usage lines (`ClrStack [-a] [-l] ...`) and the one option gcroot's help names only in its
/// prose (`The -all option forces all roots to be displayed`).
fn sos_words() -> BTreeMap<String, BTreeSet<String>> {
    let path = tests::dumps_dir().join("sos-help.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (dumps/tools/sos_help.sh writes it)",
            path.display()
        )
    });
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut cmd = String::new();
    let mut in_options = false;
    let option_words = |s: &str| -> Vec<String> {
        s.split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']' || c == '|')
            .map(|w| w.trim_end_matches([':', '.', ';']))
            .filter(|w| w.starts_with('-') && w.len() > 1 && !w[1..].starts_with(' '))
            .map(|w| w.to_owned())
            .collect()
    };
    for line in text.lines() {
        if let Some(c) = line.strip_prefix("### help ") {
            cmd = c.trim().to_owned();
            out.entry(cmd.clone()).or_default();
            in_options = false;
            continue;
        }
        if cmd.is_empty() {
            continue;
        }
        if line.trim_end() == "Options:" {
            in_options = true;
            continue;
        }
        let set = out.get_mut(&cmd).unwrap();
        if in_options {
            if line.trim().is_empty() {
                in_options = false;
            } else if line.starts_with("  -") {
                // `  -stat, -summary  Print a summary`: the words before the description.
                let head = line.trim_start();
                let head = head.split("  ").next().unwrap_or(head);
                set.extend(option_words(head));
            }
            continue;
        }
        // The description list under the usage (`-stat          Restrict the output...`).
        if line.starts_with('-') && line[1..].starts_with(|c: char| c.is_ascii_alphabetic()) {
            set.extend(option_words(line.split_whitespace().next().unwrap_or("")));
        }
        let lower = line.to_ascii_lowercase();
        if lower.starts_with(&format!("{cmd} [")) {
            set.extend(option_words(line));
        }
        if let Some(rest) = line.strip_prefix("The ") {
            if let Some((w, tail)) = rest.split_once(' ') {
                if w.starts_with('-') && tail.starts_with("option forces all roots") {
                    set.insert(w.to_owned());
                }
            }
        }
    }
    out
}

#[test]
fn the_sos_word_table_is_sos_own_help() {
    let help = sos_words();
    let table: BTreeMap<String, BTreeSet<String>> = commands::registry::SOS_OPTION_WORDS
        .iter()
        .map(|(c, w)| (c.to_string(), w.iter().map(|s| s.to_string()).collect()))
        .collect();
    assert_eq!(table, help, "SOS_OPTION_WORDS against dumps/sos-help.txt");
    assert!(help.values().map(|v| v.len()).sum::<usize>() > 40);
}

/// A value for an SOS option word that takes one (SOS's help: `-mt <MethodTable>`, ...).
fn value_of(word: &str) -> Option<&'static str> {
    match word.trim_start_matches('-').to_ascii_lowercase().as_str() {
        "type" => Some("System.String"),
        "mt" | "methodtable" | "addr" | "address" | "heap" | "segment" | "min" | "max" => {
            Some("0x1000")
        }
        "gen" | "limit" => Some("2"),
        _ => None,
    }
}

/// What the command needs besides options (gcroot and dumpobj an address).
fn positional(cmd: &str) -> &'static str {
    match cmd {
        "gcroot" | "dumpobj" => " 0x7f0000001000",
        "dumpgen" => " gen0",
        _ => "",
    }
}

#[test]
fn every_sos_option_word_parses_as_itself_or_is_refused_as_sos() {
    let mut accepted = Vec::new();
    let mut refused = Vec::new();
    for (cmd, words) in commands::registry::SOS_OPTION_WORDS {
        for word in *words {
            let mut line = format!("{cmd} {word}");
            if let Some(v) = value_of(word) {
                line.push(' ');
                line.push_str(v);
            }
            line.push_str(positional(cmd));
            match commands::parse(&line) {
                Ok(Some(inv)) => {
                    // The word is one of the command's options, taken as that option.
                    let bare = word.trim_start_matches('-').to_ascii_lowercase();
                    let cmd_def = inv.spec.command();
                    let hit = cmd_def.get_arguments().any(|a| {
                        let named = a.get_long() == Some(bare.as_str())
                            || a.get_all_aliases()
                                .is_some_and(|v| v.contains(&bare.as_str()))
                            || (bare.chars().count() == 1 && a.get_short() == bare.chars().next());
                        named
                            && inv
                                .matches
                                .value_source(a.get_id().as_str())
                                .is_some_and(|s| s == clap::parser::ValueSource::CommandLine)
                    });
                    assert!(hit, "`{line}` parsed, but not as the option {word}");
                    accepted.push(line);
                }
                Err(CommandError::UnknownOption {
                    command,
                    option,
                    sos,
                    ..
                }) => {
                    assert_eq!(command, *cmd, "`{line}`");
                    assert_eq!(option, *word, "`{line}`");
                    assert!(sos, "`{line}`: refused, but not as SOS's option");
                    refused.push(line);
                }
                Err(e) => panic!("`{line}`: {e}"),
                Ok(None) => unreachable!(),
            }
        }
    }
    eprintln!(
        "SOS option words: {} taken as SOS takes them, {} refused as SOS's:\n  refused: {}",
        accepted.len(),
        refused.len(),
        refused.join(" | ")
    );
    assert!(accepted.len() >= 15, "{accepted:?}");
}

#[test]
fn a_misspelt_option_is_refused_with_the_closest_never_read_as_another() {
    for (line, want) in [
        ("dumpheap -stats", "-stat"),
        ("dumpheap -typ Foo", "-type"),
        ("dumpheap --stats", "-stat"),
        ("gcroot -nostack 0x1000", "-nostacks"),
        ("dumpasync --coalese", "-coalesce"),
    ] {
        match commands::parse(line) {
            Err(e @ CommandError::UnknownOption { .. }) => {
                let CommandError::UnknownOption {
                    sos, did_you_mean, ..
                } = &e
                else {
                    unreachable!()
                };
                assert!(!sos, "`{line}`: {e}");
                assert!(
                    did_you_mean.iter().any(|w| w == want),
                    "`{line}`: {e} ({did_you_mean:?})"
                );
                let text = e.to_string();
                assert!(text.contains(&format!("did you mean '{want}'")), "{text}");
                assert!(
                    !text.contains("-- -"),
                    "{text}: no clap hint to pass it as a value"
                );
            }
            Err(e) => panic!("`{line}`: {e}"),
            Ok(_) => panic!("`{line}` parsed"),
        }
    }
    // Numbers and words after `--` are values, not options.
    assert!(commands::parse("clrstack -all").is_ok() || commands::parse("clrstack").is_ok());
}

#[test]
fn a_mistyped_command_gets_the_closest_names() {
    for (line, want) in [
        ("dumphep -stat", "dumpheap"),
        ("clrstak", "clrstack"),
        ("!dumpasyn", "dumpasync"),
    ] {
        match commands::parse(line) {
            Err(e @ CommandError::UnknownCommand { .. }) => {
                let text = e.to_string();
                assert!(text.contains(&format!("did you mean '{want}'")), "{text}");
            }
            Err(e) => panic!("`{line}`: {e}"),
            Ok(_) => panic!("`{line}` parsed"),
        }
    }
    match commands::parse("frobnicate") {
        Err(CommandError::UnknownCommand { did_you_mean, .. }) => {
            assert!(did_you_mean.is_empty(), "{did_you_mean:?}")
        }
        _ => panic!("frobnicate parsed"),
    }
}

/// `sos <command>` is `<command>` (dotnet-dump's and WinDbg's prefix; tests/tests/sos_threads.rs
/// runs it and `soshelp` on a dump), and `setthread`'s options are SOS's (`-t`/`--tid`).
#[test]
fn sos_prefix_and_soshelp() {
    for (line, name) in [
        ("sos clrthreads", "clrthreads"),
        ("!sos clrstack -a", "clrstack"),
        ("SOS   dumpheap -stat", "dumpheap"),
        ("sos setthread -t 19330", "setthread"),
    ] {
        let inv = commands::parse(line).unwrap().unwrap();
        assert_eq!(inv.spec.name, name, "{line}");
    }
    assert_eq!(
        commands::registry::without_sos_prefix("sos"),
        "sos",
        "`sos` alone is no command line to strip"
    );
    assert!(matches!(
        commands::parse("sos nosuchcommand"),
        Err(CommandError::UnknownCommand { .. })
    ));
    let inv = commands::parse("setthread --tid 5").unwrap().unwrap();
    assert_eq!(inv.matches.get_one::<String>("tid").unwrap(), "5");
}
