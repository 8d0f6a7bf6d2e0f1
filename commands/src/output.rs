//! What every command returns: a JSON document and the text a person reads.

use serde::Serialize;
use serde_json::Value;
use std::any::Any;
use std::io::Write;
use std::sync::Arc;

/// The version of the JSON documents' schema (docs/json.md). Raised on incompatible changes.
pub const JSON_SCHEMA_VERSION: u32 = 1;

/// Writes a result too large to hold (a listing of millions of objects) as it is computed:
/// as text (`json` false) or as the JSON of the result object (`json` true).
pub type StreamFn = Arc<dyn Fn(&mut dyn Write, bool) -> Result<(), CommandError> + Send + Sync>;

/// A streamed result (see [`StreamFn`]).
#[derive(Clone)]
pub struct Stream(pub StreamFn);

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Stream")
    }
}

/// A command's typed result, kept beside its JSON for front ends that compose results
/// (`triage`): they read it back as its own Rust type ([`Output::typed`]), never by JSON key.
#[derive(Clone)]
pub struct Typed(pub Arc<dyn Any + Send + Sync>);

impl std::fmt::Debug for Typed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Typed")
    }
}

/// A command's result: the structured data and its rendering as text.
#[derive(Debug, Clone)]
pub struct Output {
    /// The command's canonical name (not the alias that was typed).
    pub command: &'static str,
    /// The result as data; what `--json` prints inside the envelope.
    pub data: Value,
    /// The result as text for a person.
    pub text: String,
    /// For a streamed result: what writes it (then `data` and `text` are empty until
    /// [`Output::materialize`]).
    pub stream: Option<Stream>,
    /// The result as its Rust type, for commands that keep it ([`Output::of`]).
    pub typed: Option<Typed>,
}

impl Output {
    /// Builds an output from a serializable result and its text.
    pub fn new<T: Serialize>(command: &'static str, data: &T, text: String) -> Output {
        let data = serde_json::to_value(data).unwrap_or_else(
            |e| serde_json::json!({ "error": format!("result could not be serialized: {e}") }),
        );
        Output {
            command,
            data,
            text,
            stream: None,
            typed: None,
        }
    }

    /// Builds an output that also keeps `result` as its own type, to be read back with
    /// [`Output::typed`].
    pub fn of<T: Serialize + Any + Send + Sync>(
        command: &'static str,
        result: T,
        text: String,
    ) -> Output {
        let mut out = Output::new(command, &result, text);
        out.typed = Some(Typed(Arc::new(result)));
        out
    }

    /// The result as `T`, when the command keeps it as that type.
    pub fn typed<T: Any>(&self) -> Option<&T> {
        self.typed.as_ref()?.0.downcast_ref::<T>()
    }

    /// A result written as it is computed, by `f`.
    pub fn streamed(
        command: &'static str,
        f: impl Fn(&mut dyn Write, bool) -> Result<(), CommandError> + Send + Sync + 'static,
    ) -> Output {
        Output {
            command,
            data: Value::Null,
            text: String::new(),
            stream: Some(Stream(Arc::new(f))),
            typed: None,
        }
    }

    /// Runs a streamed result into `data` and `text` (twice: once per form); other results
    /// are returned as they are.
    pub fn materialize(self) -> Result<Output, CommandError> {
        let Some(Stream(f)) = &self.stream else {
            return Ok(self);
        };
        let mut json = Vec::new();
        f(&mut json, true)?;
        let data = serde_json::from_slice(&json).map_err(|e| {
            CommandError::Failed(format!("a streamed result is not valid JSON: {e}"))
        })?;
        let mut text = Vec::new();
        f(&mut text, false)?;
        Ok(Output {
            command: self.command,
            data,
            text: String::from_utf8_lossy(&text).into_owned(),
            stream: None,
            typed: None,
        })
    }

    /// Writes the result: a streamed one as it is computed, JSON inside the envelope.
    pub fn write_to(
        &self,
        w: &mut dyn Write,
        json: bool,
        pretty: bool,
    ) -> Result<(), CommandError> {
        let io = |e: std::io::Error| CommandError::Failed(format!("writing the output: {e}"));
        match (&self.stream, json) {
            (Some(Stream(f)), true) => {
                write!(
                    w,
                    "{{\"schema\":{JSON_SCHEMA_VERSION},\"command\":\"{}\",\"result\":",
                    self.command
                )
                .map_err(io)?;
                f(w, true)?;
                writeln!(w, "}}").map_err(io)
            }
            (Some(Stream(f)), false) => f(w, false),
            (None, true) => {
                let doc = self.json_document();
                let s = if pretty {
                    serde_json::to_string_pretty(&doc).unwrap_or_default()
                } else {
                    doc.to_string()
                };
                writeln!(w, "{s}").map_err(io)
            }
            (None, false) => {
                write!(w, "{}", self.text).map_err(io)?;
                if !self.text.ends_with('\n') && !self.text.is_empty() {
                    writeln!(w).map_err(io)?;
                }
                Ok(())
            }
        }
    }

    /// The JSON document for this output: `{"schema":1,"command":..,"result":..}`.
    pub fn json_document(&self) -> Value {
        serde_json::json!({
            "schema": JSON_SCHEMA_VERSION,
            "command": self.command,
            "result": self.data,
        })
    }
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The line named no known command.
    #[error("unknown command '{0}' (type 'help' for the list)")]
    Unknown(String),
    /// The arguments did not parse; the text is clap's message, with usage.
    #[error("{0}")]
    Usage(String),
    /// The command ran and failed (the message says what and where).
    #[error("{0}")]
    Failed(String),
    /// The user interrupted the command (Ctrl-C).
    #[error("interrupted")]
    Cancelled,
}

/// A failure whose message is `e`'s (a clrdata or dumpreader error says what and where).
pub fn failed(e: impl std::fmt::Display) -> CommandError {
    CommandError::Failed(e.to_string())
}

impl CommandError {
    /// The JSON document for a failure: `{"schema":1,"command":..,"error":..}`.
    pub fn json_document(&self, command: &str) -> Value {
        serde_json::json!({
            "schema": JSON_SCHEMA_VERSION,
            "command": command,
            "error": self.to_string(),
        })
    }
}
