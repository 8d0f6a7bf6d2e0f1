//! One command's definition: its names, its argument grammar (clap, the single source of
//! parsing, `help` and completion) and what runs it. The registry lists them.

use crate::output::{CommandError, Output};
use crate::session::Session;
use clap::{ArgMatches, Command};

/// One command: its names, its argument grammar and what runs it.
pub struct CommandSpec {
    /// The canonical name.
    pub name: &'static str,
    /// Other spellings (SOS and WinDbg ones included).
    pub aliases: &'static [&'static str],
    /// One line for `help`.
    pub about: &'static str,
    /// The clap grammar (name and about are set from the fields above).
    pub grammar: fn() -> Command,
    /// Runs the command on parsed arguments.
    pub run: fn(&Session, &ArgMatches) -> Result<Output, CommandError>,
}

impl CommandSpec {
    /// The full clap command with name, aliases and about applied.
    pub fn command(&self) -> Command {
        (self.grammar)()
            .name(self.name)
            .about(self.about)
            .no_binary_name(true)
            .disable_version_flag(true)
            .arg(
                clap::Arg::new("json")
                    .long("json")
                    .action(clap::ArgAction::SetTrue)
                    .help("print the result as one JSON document"),
            )
    }
}
