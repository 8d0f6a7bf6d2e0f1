//! Running one extension command: the names the DLL exports, dispatch by name through the
//! command library's registry at run time, and the text that goes back to the debugger.

use crate::engine::Engine;
use crate::target::{serve, EngineTarget, Snapshot};
use commands::help_text;
use commands::Session;
use std::path::PathBuf;
use std::sync::mpsc::channel;
use std::sync::Arc;

/// Every command name the DLL exports (besides `help` and the DebugExtension* entry points):
/// the native commands with their aliases, and the SOS names users type. Each dispatches by
/// name through `commands::lookup` when called, so a command the registry gains later
/// works without touching dbgext; a name the registry lacks says so.
///
/// Names that are also debugger meta-commands or common extension names (`threads`, `u`,
/// `do`) are exported all the same: type `!dbgext.<name>` when another extension has it too.
pub const EXPORTED_COMMANDS: &[&str] = &[
    // native (dumpreader level)
    "sleep",
    "info",
    "dumpinfo",
    "threads",
    "osthreads",
    "modules",
    "lm",
    "db",
    "memory",
    "m",
    "dw",
    "dd",
    "dq",
    "dp",
    "dc",
    "da",
    "du",
    // CLR (SOS names)
    "pstacks",
    "parallelstacks",
    "dumpasync",
    "dumpheap",
    "clrthreads",
    "clrstack",
    "dumpobj",
    "do",
    "dumpalc",
    "pe",
    "printexception",
    "dumpexceptions",
    "gcroot",
    "pathto",
    "dumpobjgcrefs",
    "ephrefs",
    "ephtoloh",
    "dumpmt",
    "dumpclass",
    "dumpmd",
    "dumparray",
    "dumpvc",
    "eeheap",
    "eeversion",
    "objsize",
    "retained",
    "crashinfo",
    "gcwhere",
    "verifyheap",
    "verifyobj",
    "gcheapstat",
    "sizestats",
    "dumpgen",
    "dg",
    "dumpdelegate",
    "dumpruntimetypes",
    "listnearobj",
    "lno",
    "analyzeoom",
    "name2ee",
    "dumpmodule",
    "syncblk",
    "deadlock",
    "finalizequeue",
    "fq",
    "gchandles",
    "threadpool",
    "tpq",
    "threadpoolqueue",
    "timerinfo",
    "ti",
    "taskstate",
    "tks",
    "dcq",
    "dumpconcurrentqueue",
    "dcd",
    "dumpconcurrentdictionary",
    "dumphttp",
    "dumprequests",
    "dso",
    "dumpstackobjects",
    "ip2md",
    "u",
    "clru",
    "stack",
    "k",
    "causality",
    "setthread",
    "threadstate",
    "registers",
    "clrmodules",
    "assemblies",
    "dumpassembly",
    "dumpdomain",
    "token2ee",
    "soshelp",
    "set",
    "ehinfo",
    "gcinfo",
    "dumpil",
    "dumpsig",
    "dumpsigelem",
];

/// Where a piece of output goes (dbgeng's `DEBUG_OUTPUT_NORMAL` or `DEBUG_OUTPUT_ERROR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// Normal output.
    Normal,
    /// Error output.
    Error,
}

/// What one command printed and whether it succeeded.
#[derive(Debug, Clone, Default)]
pub struct Printed {
    /// The pieces in order.
    pub pieces: Vec<(Channel, String)>,
    /// False when the command failed (the DLL then returns `E_FAIL`).
    pub ok: bool,
}

impl Printed {
    fn normal(&mut self, s: String) {
        self.pieces.push((Channel::Normal, s));
    }
    fn error(&mut self, s: String) {
        self.pieces.push((Channel::Error, s));
    }
    /// Everything on one channel, concatenated.
    pub fn text(&self, ch: Channel) -> String {
        self.pieces
            .iter()
            .filter(|(c, _)| *c == ch)
            .map(|(_, s)| s.as_str())
            .collect()
    }
}

/// Exported names the extension answers itself rather than through the registry.
pub const FRONT_END_COMMANDS: &[&str] = &["help", "soshelp"];

/// Whether an exported name has nothing behind it in this build (neither a registry command
/// nor one the extension answers itself).
pub fn is_unavailable(name: &str) -> bool {
    !FRONT_END_COMMANDS.contains(&name) && commands::lookup(name).is_none()
}

/// The message for an exported name the registry does not have.
pub fn not_available(name: &str) -> String {
    format!("dumpshell: '{name}' is not available in this build\n")
}

/// The text of `!help` / `!help <command>`.
pub fn help(args: &str) -> Printed {
    let mut p = Printed {
        ok: true,
        ..Default::default()
    };
    let topic = args.split_whitespace().next();
    match help_text(topic) {
        Ok(t) => {
            if topic.is_none() {
                p.normal(format!(
                    "dumpshell {} WinDbg extension: type !<command> [arguments] (or \
                     !dbgext.<command> when another extension has the same name).\n",
                    crate::version()
                ));
            }
            p.normal(t);
            if topic.is_none() {
                let missing: Vec<&str> = EXPORTED_COMMANDS
                    .iter()
                    .copied()
                    .filter(|n| is_unavailable(n))
                    .collect();
                if !missing.is_empty() {
                    p.normal(format!(
                        "Exported but not available in this build yet: {}\n",
                        missing.join(", ")
                    ));
                }
            }
        }
        Err(e) => {
            p.ok = false;
            p.error(format!("dumpshell: help: {e}\n"));
        }
    }
    p
}

/// How type names are written in the extension's text (`!set typenames`): kept for the whole
/// debugging session, where each command has a session of its own.
static NAME_STYLE: std::sync::Mutex<commands::style::NameStyle> =
    std::sync::Mutex::new(commands::style::NameStyle::Dac);

fn name_style() -> commands::style::NameStyle {
    *NAME_STYLE.lock().unwrap_or_else(|e| e.into_inner())
}

fn set_name_style(style: commands::style::NameStyle) {
    *NAME_STYLE.lock().unwrap_or_else(|e| e.into_inner()) = style;
}

/// The exports that mean another command in WinDbg's SOS than in dotnet-dump's: there `!da`
/// is DumpArray (WinDbg's own `da`, without the bang, displays ASCII memory), where
/// dotnet-dump's `da` is the memory display.
const WINDBG_SOS_MEANINGS: &[(&str, &str)] = &[("da", "dumparray")];

/// The command an exported name runs in WinDbg ([`WINDBG_SOS_MEANINGS`]).
pub fn windbg_meaning(name: &str) -> &str {
    WINDBG_SOS_MEANINGS
        .iter()
        .find(|(export, _)| *export == name)
        .map_or(name, |(_, command)| command)
}

/// Runs the command exported as `name` with the argument text WinDbg passed, against the
/// engine, and returns what it printed. Must be called on the engine's own thread: engine
/// calls happen only here, while the command itself runs on a worker thread.
pub fn run(engine: &dyn Engine, name: &str, args: &str) -> Printed {
    let name = windbg_meaning(name);
    let mut p = Printed::default();
    if FRONT_END_COMMANDS.contains(&name) {
        return help(args);
    }
    if commands::lookup(name).is_none() {
        p.error(not_available(name));
        return p;
    }
    // Each export runs in a session of its own: a thread chosen here would be forgotten at once.
    if name == "setthread" && args.split_whitespace().any(|w| w != "--json") {
        p.error(
            "dumpshell: !setthread: in WinDbg each command runs on its own, so a current thread \
             set here would not last: name the thread in the command instead (!clrstack <OS id>, \
             !dso -t <OS id>); !setthread alone lists the threads\n"
                .to_string(),
        );
        return p;
    }
    let line = format!("{name} {}", args.trim());
    let line = line.trim_end().to_owned();
    let wants_json = args.split_whitespace().any(|w| w == "--json");
    // Parse first: a usage error needs no snapshot of the target.
    if let Err(e) = commands::parse(&line) {
        report_error(&mut p, name, &line, &e, wants_json);
        return p;
    }
    let snap = Snapshot::collect(engine);
    let path = PathBuf::from(
        snap.target_name
            .clone()
            .unwrap_or_else(|| "debugger target".to_owned()),
    );
    let (tx, rx) = channel();
    let target = EngineTarget::new(snap, tx);
    let result = std::thread::scope(|s| {
        let worker = s.spawn(move || {
            let session = Session::new(Arc::new(target), path);
            session.set_name_style(name_style());
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                commands::execute(&session, &line)
            }));
            // `!set typenames` lasts beyond its own session (each command runs in a new one).
            set_name_style(session.name_style());
            r
        });
        serve(engine, &rx, &|| worker.is_finished());
        worker.join()
    });
    let line = format!("{name} {}", args.trim());
    let line = line.trim_end();
    match result {
        Ok(Ok(Ok(None))) => p.ok = true,
        Ok(Ok(Ok(Some((out, json))))) => {
            p.ok = true;
            if json {
                p.normal(format!("{}\n", out.json_document()));
            } else {
                let mut t = name_style().apply(&out.text).into_owned();
                if !t.is_empty() && !t.ends_with('\n') {
                    t.push('\n');
                }
                p.normal(t);
            }
        }
        Ok(Ok(Err(e))) => report_error(&mut p, name, line, &e, wants_json),
        Ok(Err(panic)) | Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            p.error(format!(
                "dumpshell: !{line}: internal error (please report): {what}\n"
            ));
        }
    }
    p
}

fn report_error(p: &mut Printed, name: &str, line: &str, e: &commands::CommandError, json: bool) {
    if json {
        p.normal(format!("{}\n", e.json_document(name)));
    }
    p.error(format!("dumpshell: !{line}: {e}\n"));
}
