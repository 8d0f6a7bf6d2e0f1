//! What every command returns: a JSON document and the text a person reads.

use crate::style::NameStyle;
use clrdata::ClrError;
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

/// A command's typed result: what `--json` prints (its `Serialize`) and the text a person
/// reads ([`Render::render`]), both from the one value. Every command returns one through
/// [`Output::rendered`].
pub trait Render: Serialize + Any + Send + Sync {
    /// The result as text for a person.
    fn render(&self) -> String;
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
    /// The result as its Rust type ([`Output::rendered`]).
    pub typed: Option<Typed>,
}

impl Output {
    /// Builds an output from a serializable result and its text.
    fn new<T: Serialize>(command: &'static str, data: &T, text: String) -> Output {
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
    fn of<T: Serialize + Any + Send + Sync>(
        command: &'static str,
        result: T,
        text: String,
    ) -> Output {
        let mut out = Output::new(command, &result, text);
        out.typed = Some(Typed(Arc::new(result)));
        out
    }

    /// The output of a typed result: its JSON and its text, the result kept as its own type.
    pub fn rendered<T: Render>(command: &'static str, result: T) -> Output {
        let text = result.render();
        Output::of(command, result, text)
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
        let data = serde_json::from_slice(&json).map_err(|e| CommandError::Output {
            detail: format!("a streamed result is not valid JSON: {e}"),
            broken_pipe: false,
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

    /// Writes the result: a streamed one as it is computed, JSON inside the envelope; text with
    /// its type names in `style` (JSON keeps the DAC's form).
    pub fn write_to(
        &self,
        w: &mut dyn Write,
        json: bool,
        pretty: bool,
        style: NameStyle,
    ) -> Result<(), CommandError> {
        let io = CommandError::from;
        if style != NameStyle::Dac && !json {
            if let Some(Stream(f)) = &self.stream {
                let mut styled = StyledLines {
                    inner: w,
                    style,
                    line: Vec::new(),
                };
                f(&mut styled, false)?;
                return styled.flush_line().map_err(io);
            }
        }
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
                write!(w, "{}", style.apply(&self.text)).map_err(io)?;
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

/// A writer that rewrites the type names of each whole line of text in `style` (a streamed
/// result's text is written piecemeal).
struct StyledLines<'w> {
    inner: &'w mut dyn Write,
    style: NameStyle,
    line: Vec<u8>,
}

impl StyledLines<'_> {
    fn flush_line(&mut self) -> std::io::Result<()> {
        if !self.line.is_empty() {
            let text = String::from_utf8_lossy(&self.line);
            self.inner.write_all(self.style.apply(&text).as_bytes())?;
            self.line.clear();
        }
        Ok(())
    }
}

impl Write for StyledLines<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        for chunk in buf.split_inclusive(|b| *b == b'\n') {
            self.line.extend_from_slice(chunk);
            if chunk.ends_with(b"\n") {
                self.flush_line()?;
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Why a command failed. Each renders as one sentence (what failed, where, why); as JSON it is
/// `{"kind": .., ...fields, "message": ..}` (docs/json.md, "Errors"), a runtime or dump error
/// nested as the same kind of object.
#[derive(Debug, Clone, thiserror::Error, serde::Serialize)]
#[serde(remote = "Self", tag = "kind", rename_all = "snake_case")]
pub enum CommandError {
    /// The line named no known command.
    #[error(
        "unknown command '{name}' ({}type 'help' for the list)",
        did_you_mean_text(did_you_mean)
    )]
    UnknownCommand {
        /// The word typed.
        name: String,
        /// The commands whose names are closest to it (empty when none is close).
        did_you_mean: Vec<String>,
    },
    /// A command was given an option it does not have: a misspelling, or an option SOS's
    /// command has that this one does not (yet).
    #[error("{}; {}type 'help {command}' for its options", option_text(command, option, *sos), did_you_mean_text(did_you_mean))]
    UnknownOption {
        /// The command.
        command: String,
        /// The word typed.
        option: String,
        /// Whether it is an option of SOS's command of that name (then not a misspelling).
        sos: bool,
        /// The command's options closest to it (empty when none is close).
        did_you_mean: Vec<String>,
    },
    /// The arguments did not parse: clap's message, with usage.
    #[error("{message}")]
    Usage {
        /// What clap says (in JSON `text`: `message` is the whole error's sentence).
        #[serde(rename = "text")]
        message: String,
    },
    /// An argument's value is not valid (an address, a count, a thread id).
    #[error("{what}: {detail}")]
    BadArgument {
        /// The argument and its value.
        what: String,
        /// Why it is not valid.
        detail: String,
    },
    /// The dump holds no CLR this build reads (the native commands still work).
    #[error("no CLR to read: {error}")]
    NoClr {
        /// Why (no runtime, an unsupported one, a failed sanity check).
        error: ClrError,
    },
    /// The dump holds no GC heap (a mini dump), or its heap cannot be read.
    #[error("{message}")]
    NoHeap {
        /// The statement: the kind of dump and the evidence (in JSON `statement`).
        #[serde(rename = "statement")]
        message: String,
        /// The runtime's error, when reading the heap's structures failed.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<ClrError>,
    },
    /// Reading the runtime failed; `context` says what the command was reading.
    #[error("{}{error}", context.as_deref().map(|c| format!("{c}: ")).unwrap_or_default())]
    Clr {
        /// What was being read, when the runtime's error does not say it.
        #[serde(skip_serializing_if = "Option::is_none")]
        context: Option<String>,
        /// What went wrong and where.
        error: ClrError,
    },
    /// Reading the dump itself failed.
    #[error("{error}")]
    Dump {
        /// What went wrong and where.
        error: dumpreader::Error,
    },
    /// What the command was asked for is not in the dump (no such thread, no managed thread).
    #[error("{what}{}", if detail.is_empty() { String::new() } else { format!(": {detail}") })]
    NotFound {
        /// What was asked for.
        what: String,
        /// Why it is not there.
        detail: String,
    },
    /// `printexception` without an address, on a thread that has thrown nothing.
    #[error("the current thread {os_id:#x} ({managed_id}): it has no last thrown exception; give an exception object's address")]
    NoLastException {
        /// The thread's OS id.
        os_id: u64,
        /// Its managed id.
        managed_id: u32,
    },
    /// Writing the result failed.
    #[error("writing the output: {detail}")]
    Output {
        /// The operating system's text.
        detail: String,
        /// The reader went away (a closed pipe: `dumpshell ... | head`), not a failure.
        broken_pipe: bool,
    },
    /// The user interrupted the command (Ctrl-C).
    #[error("interrupted")]
    Cancelled,
}

dumpreader::serialize_with_message!(CommandError);

/// `did you mean 'a' or 'b'? ` (with the trailing space), or nothing.
fn did_you_mean_text(words: &[String]) -> String {
    match words {
        [] => String::new(),
        [one] => format!("did you mean '{one}'? "),
        [rest @ .., last] => format!(
            "did you mean {} or '{last}'? ",
            rest.iter()
                .map(|w| format!("'{w}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn option_text(command: &str, option: &str, sos: bool) -> String {
    if sos {
        format!("'{option}' is an option of SOS's {command} that dumpshell's does not have")
    } else {
        format!("{command} has no option '{option}'")
    }
}

impl From<ClrError> for CommandError {
    fn from(error: ClrError) -> CommandError {
        CommandError::Clr {
            context: None,
            error,
        }
    }
}

impl From<dumpreader::Error> for CommandError {
    fn from(error: dumpreader::Error) -> CommandError {
        CommandError::Dump { error }
    }
}

impl From<std::io::Error> for CommandError {
    fn from(e: std::io::Error) -> CommandError {
        CommandError::Output {
            detail: e.to_string(),
            broken_pipe: e.kind() == std::io::ErrorKind::BrokenPipe,
        }
    }
}

impl CommandError {
    /// A runtime error met while reading `context`.
    pub fn clr(context: impl Into<String>, error: ClrError) -> CommandError {
        CommandError::Clr {
            context: Some(context.into()),
            error,
        }
    }

    /// A [`CommandError::NotFound`].
    pub fn not_found(what: impl Into<String>, detail: impl Into<String>) -> CommandError {
        CommandError::NotFound {
            what: what.into(),
            detail: detail.into(),
        }
    }

    /// A [`CommandError::BadArgument`].
    pub fn bad_argument(what: impl Into<String>, detail: impl Into<String>) -> CommandError {
        CommandError::BadArgument {
            what: what.into(),
            detail: detail.into(),
        }
    }

    /// The JSON document for a failure: `{"schema":1,"command":..,"error":{..}}`.
    pub fn json_document(&self, command: &str) -> Value {
        serde_json::json!({
            "schema": JSON_SCHEMA_VERSION,
            "command": command,
            "error": self,
        })
    }
}
