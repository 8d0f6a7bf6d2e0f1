//! `help`, `help <command>` and the man page's command section: made from the registry's
//! [`CommandSpec`]s (each command's clap grammar), the one definition of names, aliases and
//! options, so help, JSON, man pages and completions never disagree.

use crate::output::{CommandError, Output, Render};
use crate::registry::{closest_commands, lookup, registry, sos_option_words};
use crate::spec::CommandSpec;
use serde::Serialize;

/// What `help` answers: the list of commands, or one command whole.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Help {
    /// `help`: every command, in the order the registry lists them.
    Commands {
        /// One entry per command.
        commands: Vec<CommandSummary>,
    },
    /// `help <command>`.
    Command(CommandHelp),
}

/// One line of `help`.
#[derive(Debug, Clone, Serialize)]
pub struct CommandSummary {
    /// The canonical name.
    pub name: &'static str,
    /// Other spellings.
    pub aliases: &'static [&'static str],
    /// What it does, in one line.
    pub about: &'static str,
}

/// `help <command>`: the command, its arguments and options.
#[derive(Debug, Clone, Serialize)]
pub struct CommandHelp {
    /// The canonical name.
    pub name: &'static str,
    /// Other spellings.
    pub aliases: &'static [&'static str],
    /// What it does, in one line.
    pub about: &'static str,
    /// The usage line, as clap writes it.
    pub usage: String,
    /// The positional arguments, in order.
    pub arguments: Vec<ArgHelp>,
    /// The options (`--json` included).
    pub options: Vec<ArgHelp>,
    /// SOS's option words for this command that dumpshell refuses with a suggestion (SOS
    /// takes them; dumpshell's command does not).
    pub sos_words_refused: Vec<&'static str>,
    /// The text `help <command>` prints.
    #[serde(skip)]
    text: String,
}

/// One argument or option.
#[derive(Debug, Clone, Serialize)]
pub struct ArgHelp {
    /// The argument's id (a positional's name).
    pub id: String,
    /// `--name` (an option's long spelling).
    pub long: Option<String>,
    /// `-c` (a short spelling).
    pub short: Option<String>,
    /// SOS's spelling: one dash and the long name (`-stat`), accepted as the long option.
    pub sos: Option<String>,
    /// Other long names it is accepted under.
    pub aliases: Vec<String>,
    /// The value's name (`ADDR`, `N`), for an option that takes one.
    pub value: Option<String>,
    /// Whether it must be given.
    pub required: bool,
    /// What it does.
    pub help: String,
}

impl ArgHelp {
    fn of(a: &clap::Arg) -> ArgHelp {
        let takes_value = a.get_num_args().is_some_and(|n| n.takes_values());
        let long = a.get_long().map(|l| format!("--{l}"));
        ArgHelp {
            id: a.get_id().to_string(),
            sos: a.get_long().map(|l| format!("-{l}")),
            long,
            short: a.get_short().map(|c| format!("-{c}")),
            aliases: a
                .get_all_aliases()
                .unwrap_or_default()
                .into_iter()
                .map(|s| format!("--{s}"))
                .collect(),
            value: if takes_value && !a.is_positional() {
                a.get_value_names()
                    .and_then(|v| v.first())
                    .map(|v| v.to_string())
                    .or_else(|| Some(a.get_id().to_string().to_ascii_uppercase()))
            } else {
                None
            },
            required: a.is_required_set(),
            help: a
                .get_long_help()
                .or_else(|| a.get_help())
                .map(|h| h.to_string())
                .unwrap_or_default(),
        }
    }

    /// How the option is spelled in a listing: `-s, --stat <TEXT>`.
    pub fn spelling(&self) -> String {
        let mut s = [self.short.as_deref(), self.long.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ");
        if s.is_empty() {
            s = format!("<{}>", self.id);
        }
        if let Some(v) = &self.value {
            s.push_str(&format!(" <{v}>"));
        }
        s
    }
}

/// One command's help, from its definition.
pub fn command_help(spec: &'static CommandSpec) -> CommandHelp {
    let mut cmd = spec.command();
    let usage = cmd.render_usage().to_string();
    let usage = usage.strip_prefix("Usage: ").unwrap_or(&usage).to_owned();
    let text = cmd.render_long_help().to_string();
    let (arguments, options): (Vec<_>, Vec<_>) = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .partition(|a| a.is_positional());
    let longs: Vec<String> = cmd
        .get_arguments()
        .flat_map(|a| {
            a.get_long()
                .into_iter()
                .chain(a.get_all_aliases().unwrap_or_default())
                .map(str::to_ascii_lowercase)
        })
        .collect();
    let shorts: Vec<char> = cmd.get_arguments().filter_map(|a| a.get_short()).collect();
    // What `sos_spelling` accepts: a long name (any case), or one letter that is a short.
    let accepted = |w: &str| {
        let body = w.trim_start_matches('-');
        longs.contains(&body.to_ascii_lowercase())
            || (body.chars().count() == 1 && body.chars().all(|c| shorts.contains(&c)))
    };
    let sos_words_refused = sos_option_words(spec.name)
        .iter()
        .copied()
        .filter(|w| !accepted(w))
        .collect();
    CommandHelp {
        name: spec.name,
        aliases: spec.aliases,
        about: spec.about,
        usage,
        arguments: arguments.into_iter().map(ArgHelp::of).collect(),
        options: options.into_iter().map(ArgHelp::of).collect(),
        sos_words_refused,
        text,
    }
}

/// `help` (no topic) or `help <command>`.
pub fn help(topic: Option<&str>) -> Result<Help, CommandError> {
    match topic {
        None => Ok(Help::Commands {
            commands: registry()
                .iter()
                .map(|c| CommandSummary {
                    name: c.name,
                    aliases: c.aliases,
                    about: c.about,
                })
                .collect(),
        }),
        Some(t) => {
            let spec = lookup(t).ok_or_else(|| CommandError::UnknownCommand {
                name: t.to_owned(),
                did_you_mean: closest_commands(t),
            })?;
            Ok(Help::Command(command_help(spec)))
        }
    }
}

/// `help [command] [--json]` as an [`Output`] (what the front ends print).
pub fn help_output(topic: Option<&str>) -> Result<Output, CommandError> {
    Ok(Output::rendered("help", help(topic)?))
}

/// The text of `help` (no argument) or `help <command>`.
pub fn help_text(topic: Option<&str>) -> Result<String, CommandError> {
    Ok(help(topic)?.render())
}

impl Render for Help {
    fn render(&self) -> String {
        match self {
            Help::Commands { commands } => {
                let mut s = String::from(
                    "Commands (type 'help <command>' for its options; add --json to any command):\n",
                );
                for c in commands {
                    let names = if c.aliases.is_empty() {
                        c.name.to_string()
                    } else {
                        format!("{} ({})", c.name, c.aliases.join(", "))
                    };
                    s.push_str(&format!("  {names:<28} {}\n", c.about));
                }
                s
            }
            Help::Command(c) => c.text.clone(),
        }
    }
}

/// Escapes text for roff: backslashes, and a leading `.` or `'` that would read as a request.
fn roff(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

/// The man page's section on the commands a dump session runs (`-c`, `--script`, the REPL):
/// each command with its aliases, what it does, its usage and every option, in roff.
pub fn man_commands_section() -> String {
    let mut s = String::from(".SH COMMANDS\n");
    s.push_str(
        "Run in a session (\\fB\\-c\\fR, \\fB\\-\\-script\\fR, standard input or the interactive \
         prompt). SOS's one\\-dash spelling of a long option is accepted (\\fB\\-stat\\fR for \
         \\fB\\-\\-stat\\fR); every command takes \\fB\\-\\-json\\fR.\n",
    );
    for spec in registry() {
        s.push_str(&man_command_entry(&command_help(spec)));
    }
    s
}

fn man_command_entry(c: &CommandHelp) -> String {
    let mut s = String::from(".TP\n");
    s.push_str(&format!("\\fB{}\\fR", roff(c.name)));
    if !c.aliases.is_empty() {
        s.push_str(&format!(" ({})", roff(&c.aliases.join(", "))));
    }
    s.push('\n');
    s.push_str(&roff(c.about));
    s.push_str(&format!("\n.br\nUsage: {}\n", roff(&c.usage)));
    for a in c.arguments.iter().chain(&c.options) {
        s.push_str(&format!(
            ".RS\n.TP\n\\fB{}\\fR\n{}\n.RE\n",
            roff(&a.spelling()),
            roff(&a.help.replace('\n', " "))
        ));
    }
    s
}

/// A man page of one command (`dumpshell man <command>`), in roff.
pub fn man_page(topic: &str) -> Result<String, CommandError> {
    let spec = lookup(topic).ok_or_else(|| CommandError::UnknownCommand {
        name: topic.to_owned(),
        did_you_mean: closest_commands(topic),
    })?;
    let c = command_help(spec);
    let mut s = format!(
        ".TH dumpshell\\-{} 1 \"dumpshell {}\"\n.SH NAME\n{} \\- {}\n.SH SYNOPSIS\n{}\n",
        roff(c.name),
        env!("CARGO_PKG_VERSION"),
        roff(c.name),
        roff(c.about),
        roff(&c.usage)
    );
    if !c.aliases.is_empty() {
        s.push_str(&format!(".SH ALIASES\n{}\n", roff(&c.aliases.join(", "))));
    }
    for (title, args) in [("ARGUMENTS", &c.arguments), ("OPTIONS", &c.options)] {
        if args.is_empty() {
            continue;
        }
        s.push_str(&format!(".SH {title}\n"));
        for a in args {
            s.push_str(&format!(
                ".TP\n\\fB{}\\fR\n{}\n",
                roff(&a.spelling()),
                roff(&a.help)
            ));
        }
    }
    if !c.sos_words_refused.is_empty() {
        s.push_str(&format!(
            ".SH SOS OPTIONS NOT TAKEN\n{} (refused with the closest option)\n",
            roff(&c.sos_words_refused.join(", "))
        ));
    }
    s.push_str(".SH SEE ALSO\n\\fBdumpshell\\fR(1)\n");
    Ok(s)
}
