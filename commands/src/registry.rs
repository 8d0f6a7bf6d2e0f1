//! The command registry: one [`CommandSpec`] per command, its clap definition the single source
//! of argument parsing, `help` text and completion.

use crate::output::{CommandError, Output};
use crate::session::Session;
use crate::spec::CommandSpec;
use crate::tokenize;
use clap::{ArgMatches, Command};

/// Every command, in the order `help` lists them.
pub fn registry() -> &'static [&'static CommandSpec] {
    static ALL: std::sync::OnceLock<Vec<&'static CommandSpec>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        use crate::{
            asyncs, codeinfo, exceptions, heap, heaprefs, heapsos, ilsos, locks, native, nativeaot,
            objects, roots, runtimesos, settings, stacks, threadpool, web,
        };
        native::SPECS
            .iter()
            .chain(heap::SPECS)
            .chain(heapsos::SPECS)
            .chain(objects::SPECS)
            .chain(stacks::SPECS)
            .chain(codeinfo::SPECS)
            .chain(asyncs::SPECS)
            .chain(roots::SPECS)
            .chain(heaprefs::SPECS)
            .chain(exceptions::SPECS)
            .chain(nativeaot::SPECS)
            .chain(locks::SPECS)
            .chain(threadpool::SPECS)
            .chain(web::SPECS)
            .chain(runtimesos::SPECS)
            .chain(ilsos::SPECS)
            .chain(settings::SPECS)
            .collect()
    })
}

/// Finds a command by name or alias; a leading `!` (WinDbg/SOS habit) is ignored, and names
/// are matched without regard to case, as SOS does.
pub fn lookup(name: &str) -> Option<&'static CommandSpec> {
    let n = name.strip_prefix('!').unwrap_or(name).to_ascii_lowercase();
    registry()
        .iter()
        .copied()
        .find(|c| c.name == n || c.aliases.iter().any(|a| *a == n))
}

/// What a parsed line asks for.
pub struct Invocation {
    /// The command.
    pub spec: &'static CommandSpec,
    /// Whether `--json` was given on the line.
    pub json: bool,
    /// The parsed arguments.
    pub matches: ArgMatches,
}

/// The line without SOS's `sos` prefix (`sos clrthreads` is `clrthreads`, as dotnet-dump
/// and WinDbg's `!sos.` accept it); a line that is `sos` alone stays as it is.
pub fn without_sos_prefix(line: &str) -> &str {
    let t = line.trim_start();
    match t.split_once(char::is_whitespace) {
        Some((first, rest))
            if first.trim_start_matches('!').eq_ignore_ascii_case("sos")
                && !rest.trim().is_empty() =>
        {
            rest.trim_start()
        }
        _ => line,
    }
}

/// Parses one command line. `Ok(None)` for an empty line.
pub fn parse(line: &str) -> Result<Option<Invocation>, CommandError> {
    let words = tokenize::split(without_sos_prefix(line))?;
    let Some((first, rest)) = words.split_first() else {
        return Ok(None);
    };
    let spec = lookup(first).ok_or_else(|| CommandError::UnknownCommand {
        name: first.clone(),
        did_you_mean: closest_commands(first),
    })?;
    let cmd = spec.command();
    let rest = sos_spelling(spec.name, &cmd, rest)?;
    let matches = cmd
        .try_get_matches_from(rest)
        .map_err(|e| CommandError::Usage {
            message: e.render().to_string().trim_end().to_owned(),
        })?;
    let json = matches.get_flag("json");
    Ok(Some(Invocation {
        spec,
        json,
        matches,
    }))
}

/// SOS's own option words of the commands SOS users type most, as SOS 10.0.750501 lists them
/// (`help <command>`; the text is dumps/sos-help.txt). A word here that dumpshell's command of
/// the same name does not take is refused as SOS's option, never read as another.
pub const SOS_OPTION_WORDS: &[(&str, &[&str])] = &[
    (
        "dumpheap",
        &[
            "-mt",
            "-type",
            "-stat",
            "-strings",
            "-short",
            "-min",
            "-max",
            "-live",
            "-dead",
            "-heap",
            "-segment",
            "-thinlock",
            "-bycount",
            "-gen",
            "-ignoreGCState",
            "-noprogress",
            "-startAtLowerBound",
        ],
    ),
    (
        "clrstack",
        &["-a", "-l", "-p", "-n", "-f", "-r", "-all", "-i"],
    ),
    ("gcroot", &["-gcgen", "-nostacks", "-limit", "-all"]),
    ("dumpobj", &["-nofields"]),
    ("syncblk", &["-all"]),
    (
        "dumpasync",
        &[
            "-addr",
            "--address",
            "-mt",
            "--methodtable",
            "--type",
            "-t",
            "--tasks",
            "-c",
            "--completed",
            "-f",
            "--fields",
            "--stats",
            "--coalesce",
        ],
    ),
    ("threadpool", &["-hc", "-ti", "-wi", "-stat", "-summary"]),
    ("gcheapstat", &["-inclUnrooted", "-iu", "-unreachable"]),
    ("dumpgen", &["-type", "-mt"]),
];

/// SOS's option words of `command` (empty for a command not in [`SOS_OPTION_WORDS`]).
pub fn sos_option_words(command: &str) -> &'static [&'static str] {
    SOS_OPTION_WORDS
        .iter()
        .find(|(c, _)| *c == command)
        .map(|(_, w)| *w)
        .unwrap_or(&[])
}

/// SOS spells long options with one dash (`dumpheap -stat -type Foo`): a word `-name` whose
/// name is one of the command's long options is read as `--name`. Every other word that looks
/// like an option must be one of the command's own (`-c` a short option, `--name` a long one),
/// else it is refused with the closest options ([`CommandError::UnknownOption`]): SOS takes
/// each option as a whole word, so `-stats` is a misspelling of `-stat`, not `-s -t ats`.
/// Numbers (`-1`, `-0x10`) and every word after `--` are values.
fn sos_spelling(name: &str, cmd: &Command, words: &[String]) -> Result<Vec<String>, CommandError> {
    // Long names with their aliases (SOS's `-addr` for dumpasync's `--address`).
    let longs: Vec<&str> = cmd
        .get_arguments()
        .flat_map(|a| a.get_long_and_visible_aliases().unwrap_or_default())
        .chain(
            cmd.get_arguments()
                .flat_map(|a| a.get_all_aliases().unwrap_or_default()),
        )
        .collect();
    let shorts: Vec<char> = cmd.get_arguments().filter_map(|a| a.get_short()).collect();
    let mut out = Vec::with_capacity(words.len());
    let mut values_only = false;
    for w in words {
        if values_only || w == "-" || is_number(w.trim_start_matches('-')) {
            out.push(w.clone());
            continue;
        }
        if w == "--" {
            values_only = true;
            out.push(w.clone());
            continue;
        }
        let (dashes, body) = match (w.strip_prefix("--"), w.strip_prefix('-')) {
            (Some(b), _) => (2, b),
            (None, Some(b)) => (1, b),
            (None, None) => {
                out.push(w.clone());
                continue;
            }
        };
        let (n, value) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        let lower = n.to_ascii_lowercase();
        let known = if dashes == 1 && n.chars().count() == 1 {
            shorts.contains(&n.chars().next().unwrap_or(' ')) || longs.contains(&lower.as_str())
        } else {
            longs.contains(&lower.as_str())
        };
        if !known {
            return Err(unknown_option(name, cmd, w.split('=').next().unwrap_or(w)));
        }
        if dashes == 1 && n.chars().count() > 1 {
            out.push(match value {
                Some(v) => format!("--{lower}={v}"),
                None => format!("--{lower}"),
            });
        } else {
            out.push(w.clone());
        }
    }
    Ok(out)
}

/// `12`, `0x1f`: a negative number's digits, not an option.
fn is_number(t: &str) -> bool {
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .map(|h| (h, 16))
        .unwrap_or((t, 10));
    !digits.0.is_empty() && digits.0.chars().all(|c| c.is_digit(digits.1))
}

/// The refusal of `word`, an option `name`'s grammar `cmd` does not have.
fn unknown_option(name: &str, cmd: &Command, word: &str) -> CommandError {
    let sos = sos_option_words(name)
        .iter()
        .any(|s| s.eq_ignore_ascii_case(word));
    let mut options: Vec<String> = cmd
        .get_arguments()
        .filter(|a| a.get_id() != "json")
        .flat_map(|a| {
            a.get_long()
                .map(|l| format!("-{l}"))
                .into_iter()
                .chain(a.get_short().map(|c| format!("-{c}")))
        })
        .collect();
    options.push("--json".into());
    CommandError::UnknownOption {
        command: name.to_owned(),
        option: word.to_owned(),
        sos,
        did_you_mean: closest(
            word.trim_start_matches('-'),
            options.iter().map(|o| o.as_str()),
        ),
    }
}

/// The commands (names and aliases) closest to the word `name`.
pub(crate) fn closest_commands(name: &str) -> Vec<String> {
    let n = name.strip_prefix('!').unwrap_or(name);
    closest(
        n,
        registry()
            .iter()
            .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied())),
    )
}

/// The candidates closest to `word` (compared without case and leading dashes): those at the
/// smallest edit distance, when it is at most a third of the word's length (at least 1), or
/// that start with the word or that the word starts with (`-stats` → `-stat`); at most three.
fn closest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Vec<String> {
    let w = word.to_ascii_lowercase();
    if w.is_empty() {
        return Vec::new();
    }
    let limit = (w.chars().count() / 3).max(1);
    let mut scored: Vec<(usize, &str)> = candidates
        .filter_map(|c| {
            let bare = c.trim_start_matches('-').to_ascii_lowercase();
            let d = edit_distance(&w, &bare);
            let prefix = bare.len() >= 2 && (w.starts_with(&bare) || bare.starts_with(&w));
            (d <= limit || prefix).then_some((d, c))
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(3)
        .map(|(_, c)| c.to_owned())
        .collect()
}

/// Levenshtein distance between two short words.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Parses and runs one command line. `Ok(None)` for an empty line. A streamed result (a long
/// listing) is run to the end here: its `data` and `text` are filled.
pub fn execute(session: &Session, line: &str) -> Result<Option<(Output, bool)>, CommandError> {
    match execute_streaming(session, line)? {
        Some((out, json)) => Ok(Some((out.materialize()?, json))),
        None => Ok(None),
    }
}

/// Like [`execute`], but a streamed result is returned unrun, to be written with
/// [`Output::write_to`] as it is computed (what the `dumpshell` binary does, so a listing of
/// millions of objects never sits in memory).
pub fn execute_streaming(
    session: &Session,
    line: &str,
) -> Result<Option<(Output, bool)>, CommandError> {
    let Some(inv) = parse(line)? else {
        return Ok(None);
    };
    session.control.reset();
    let out = (inv.spec.run)(session, &inv.matches)?;
    Ok(Some((out, inv.json)))
}
