//! The session's settings (`set`): how type names are written in text ([`NameStyle`]).

use crate::output::{CommandError, Output, Render};
use crate::session::Session;
use crate::spec::CommandSpec;
use crate::style::NameStyle;
use clap::{Arg, ArgMatches, Command};
use serde::Serialize;

/// The session's settings.
pub static SPECS: &[CommandSpec] = &[CommandSpec {
    name: "set",
    aliases: &[],
    about: "show or change the session's settings: `set typenames csharp` writes type names in \
            text in C#'s form (List<System.String>), `set typenames dac` in the DAC's and SOS's \
            (the default); JSON always keeps the DAC's form",
    grammar: || {
        Command::new("set")
            .arg(
                Arg::new("setting")
                    .value_parser(["typenames"])
                    .help("the setting to change"),
            )
            .arg(
                Arg::new("value")
                    .requires("setting")
                    .value_parser(clap::builder::EnumValueParser::<NameStyle>::new())
                    .help("its new value"),
            )
    },
    run: set,
}];

/// `set`'s result: every setting and its value.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// How type names are written in text.
    pub typenames: NameStyle,
}

impl Render for Settings {
    fn render(&self) -> String {
        format!("typenames  {}\n", self.typenames.as_str())
    }
}

fn set(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    if let Some(style) = m.get_one::<NameStyle>("value") {
        s.set_name_style(*style);
    } else if m.get_one::<String>("setting").is_some() {
        return Err(CommandError::Usage {
            message: "set typenames needs a value: dac or csharp".to_owned(),
        });
    }
    Ok(Output::rendered(
        "set",
        Settings {
            typenames: s.name_style(),
        },
    ))
}
