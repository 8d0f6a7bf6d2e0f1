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
        use crate::{asyncs, exceptions, heap, locks, native, objects, roots, stacks, threadpool};
        native::SPECS
            .iter()
            .chain(heap::SPECS)
            .chain(objects::SPECS)
            .chain(stacks::SPECS)
            .chain(asyncs::SPECS)
            .chain(roots::SPECS)
            .chain(exceptions::SPECS)
            .chain(locks::SPECS)
            .chain(threadpool::SPECS)
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

/// Parses one command line. `Ok(None)` for an empty line.
pub fn parse(line: &str) -> Result<Option<Invocation>, CommandError> {
    let words = tokenize::split(line)?;
    let Some((first, rest)) = words.split_first() else {
        return Ok(None);
    };
    let spec = lookup(first).ok_or_else(|| CommandError::UnknownCommand {
        name: first.clone(),
    })?;
    let cmd = spec.command();
    let rest = sos_spelling(&cmd, rest);
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

/// SOS spells long options with one dash (`dumpheap -stat -type Foo`): a word `-name` whose
/// name is one of the command's long options is read as `--name`. Other words are left alone
/// (`-c 4` stays a short option, `-1` a number).
fn sos_spelling(cmd: &Command, words: &[String]) -> Vec<String> {
    let longs: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
    words
        .iter()
        .map(|w| match w.strip_prefix('-') {
            Some(name) if !name.starts_with('-') && name.len() > 1 => {
                let (n, value) = match name.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (name, None),
                };
                let lower = n.to_ascii_lowercase();
                if longs.contains(&lower.as_str()) {
                    match value {
                        Some(v) => format!("--{lower}={v}"),
                        None => format!("--{lower}"),
                    }
                } else {
                    w.clone()
                }
            }
            _ => w.clone(),
        })
        .collect()
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

/// The text of `help` (no argument) or `help <command>`.
pub fn help_text(topic: Option<&str>) -> Result<String, CommandError> {
    match topic {
        None => {
            let mut s = String::from(
                "Commands (type 'help <command>' for its options; add --json to any command):\n",
            );
            for c in registry() {
                let names = if c.aliases.is_empty() {
                    c.name.to_string()
                } else {
                    format!("{} ({})", c.name, c.aliases.join(", "))
                };
                s.push_str(&format!("  {names:<28} {}\n", c.about));
            }
            Ok(s)
        }
        Some(t) => {
            let spec =
                lookup(t).ok_or_else(|| CommandError::UnknownCommand { name: t.to_owned() })?;
            Ok(spec.command().render_long_help().to_string())
        }
    }
}
