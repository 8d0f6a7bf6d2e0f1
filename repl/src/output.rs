//! What every command returns: a JSON document and the text a person reads.

use serde::Serialize;
use serde_json::Value;

/// The version of the JSON documents' schema (docs/json.md). Raised on incompatible changes.
pub const JSON_SCHEMA_VERSION: u32 = 1;

/// A command's result: the structured data and its rendering as text.
#[derive(Debug, Clone)]
pub struct Output {
    /// The command's canonical name (not the alias that was typed).
    pub command: &'static str,
    /// The result as data; what `--json` prints inside the envelope.
    pub data: Value,
    /// The result as text for a person.
    pub text: String,
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
