//! Exceptions: `printexception` (`pe`) and `dumpexceptions`.

use crate::addr::{fmt_addr, hex, parse_address};
use crate::output::{CommandError, Output, Render};
use crate::session::clr;
use crate::session::Session;
use crate::spec::CommandSpec;
use crate::text::{render, table};
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::analysis::exceptions::{
    current_thread, exceptions_at, list_heap_exceptions, ExceptionData, HeapExceptions,
};
use clrdata::model::stack::source::SourceLines;
use clrdata::model::stack::{FrameSource, StackWalker};
use clrdata::prelude::*;
use serde::Serialize;

/// The exception commands.
pub static SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "printexception",
        aliases: &["pe"],
        about: "an exception: type, message, HResult, recorded stack trace, inner exceptions",
        grammar: || {
            Command::new("printexception")
                .arg(
                    Arg::new("lines")
                        .long("lines")
                        .short('l')
                        .action(ArgAction::SetTrue)
                        .help(
                            "each frame of the stack trace with its source line ([file @ line], \
                             from the app's PDB), as SOS's -lines",
                        ),
                )
                .arg(
                    Arg::new("nested")
                        .long("nested")
                        .action(ArgAction::SetTrue)
                        .help(
                            "also the current thread's nested exceptions: those its innermost \
                             exception was thrown while dispatching (.NET 9+), as SOS's -nested",
                        ),
                )
                .arg(
                    Arg::new("inner")
                        .long("inner")
                        .action(ArgAction::SetTrue)
                        .help(
                            "print every inner exception in full after the exception (not in \
                             SOS, which says `Use printexception <inner> to see more`)",
                        ),
                )
                .arg(Arg::new("address").help(
                    "the exception object; default: the current thread's last thrown exception \
                     (the faulting thread's in a crash dump, else the first managed thread's)",
                ))
        },
        run: printexception,
    },
    CommandSpec {
        name: "dumpexceptions",
        aliases: &[],
        about: "every exception object on the heap, grouped by type and message, with counts",
        grammar: || {
            Command::new("dumpexceptions").arg(
                Arg::new("type")
                    .long("type")
                    .value_name("TEXT")
                    .help("only exceptions whose type name contains TEXT"),
            )
        },
        run: dumpexceptions,
    },
];

#[derive(Serialize)]
pub struct FrameOut {
    pub sp: String,
    pub ip: String,
    pub method_desc: String,
    pub flags: u32,
    /// A runtime-async method's frame the runtime appended as the exception unwound through
    /// its continuation (.NET 11, `STEF_CONTINUATION`): `ip` its DiagnosticIP, `sp` 0.
    pub continuation: bool,
    pub module: Option<String>,
    /// The image file's name (`crash.dll`); None for an in-memory image.
    pub module_file: Option<String>,
    pub method: Option<String>,
    pub offset: Option<u64>,
    pub error: Option<String>,
    /// With `-lines`: the IL offset the frame's line is looked up at (null without -lines or
    /// when the code maps to no IL).
    pub il_offset: Option<u32>,
    /// With `-lines`: the source document and line, from the app's PDB.
    pub source_file: Option<String>,
    pub source_line: Option<u32>,
    /// With `-lines`: why the frame has no line.
    pub source_note: Option<String>,
}

#[derive(Serialize)]
pub struct ExceptionOut {
    pub address: String,
    pub method_table: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub message: Option<String>,
    pub hresult: String,
    /// Whether SOS takes it for a hardware fault's exception (`_xcode` not
    /// `EXCEPTION_COMPLUS`, or a fault's HResult): its frames' lines are looked up so.
    pub hardware: bool,
    pub inner_exception: Option<String>,
    pub inner_exception_type: Option<String>,
    pub stack_trace_array: Option<String>,
    pub stack_trace_thread: Option<String>,
    pub stack_trace: Vec<FrameOut>,
    pub stack_trace_string: Option<String>,
    pub remote_stack_trace_string: Option<String>,
    pub notes: Vec<String>,
}

/// `e`'s JSON; `sources`: its trace's lines (`-lines`), one per element, else empty.
fn exception_out(e: &ExceptionData, sources: &[FrameSource]) -> ExceptionOut {
    ExceptionOut {
        address: hex(e.address),
        method_table: hex(e.mt),
        type_name: e.type_name.clone(),
        message: e.message.clone(),
        hresult: format!("{:08x}", e.hresult as u32),
        hardware: e.is_hardware(),
        inner_exception: (e.inner != 0).then(|| hex(e.inner)),
        inner_exception_type: e.inner_type.clone(),
        stack_trace_array: (e.stack_trace_array != 0).then(|| hex(e.stack_trace_array)),
        stack_trace_thread: e.stack_trace_thread.map(hex),
        stack_trace: e
            .stack_trace
            .iter()
            .enumerate()
            .map(|(i, f)| FrameOut {
                sp: hex(f.sp),
                ip: hex(f.ip),
                method_desc: hex(f.method_desc),
                flags: f.flags,
                continuation: f.flags & clrdata::analysis::exceptions::STEF_CONTINUATION != 0,
                module: f.module.clone(),
                module_file: f.module_file.clone(),
                method: f.method.clone(),
                offset: f.offset,
                error: f.error.clone(),
                il_offset: sources.get(i).and_then(|s| s.il_offset),
                source_file: sources.get(i).and_then(|s| s.file.clone()),
                source_line: sources.get(i).and_then(|s| s.line),
                source_note: sources.get(i).and_then(|s| s.note.clone()),
            })
            .collect(),
        stack_trace_string: e.stack_trace_string.clone(),
        remote_stack_trace_string: e.remote_stack_trace_string.clone(),
        notes: e.notes.clone(),
    }
}

/// SOS's `printexception` text for one exception; `sources`: its trace's lines (`-lines`),
/// printed as SOS does after the frame (`[file @ line]`), else empty.
fn exception_text(e: &ExceptionData, sources: &[FrameSource]) -> String {
    let mut t = String::new();
    t.push_str(&format!("Exception object: {}\n", fmt_addr(e.address)));
    t.push_str(&format!("Exception type:   {}\n", e.type_name));
    t.push_str(&format!(
        "Message:          {}\n",
        e.message.as_deref().unwrap_or("<none>")
    ));
    if e.inner != 0 {
        t.push_str(&format!(
            "InnerException:   {}, Use printexception {} to see more.\n",
            e.inner_type.as_deref().unwrap_or("<unknown type>"),
            fmt_addr(e.inner).to_uppercase()
        ));
    } else {
        t.push_str("InnerException:   <none>\n");
    }
    t.push_str("StackTrace (generated):\n");
    if e.stack_trace.is_empty() {
        // SOS's three words for no frames: no trace array, an array it could not read, and
        // a readable array of no element.
        t.push_str(if e.stack_trace_array == 0 {
            "<none>\n"
        } else if e.stack_trace_thread.is_none() {
            "<Not Available>\n"
        } else {
            "Unable to decipher generated stack trace\n"
        });
    } else {
        t.push_str("    SP               IP               Function\n");
        for (i, f) in e.stack_trace.iter().enumerate() {
            // SOS's IP and offset: a hardware exception's one higher than recorded.
            let shown = e.shown_ip(f.ip);
            let offset = f.offset.map(|o| o.wrapping_add(shown.wrapping_sub(f.ip)));
            // SOS names the module by its image file (`crash.dll`); an in-memory image by
            // its simple name.
            let module = f
                .module_file
                .as_deref()
                .or(f.module.as_deref())
                .unwrap_or("<unknown module>");
            let func = match (&f.method, offset) {
                (Some(m), Some(off)) => format!("{module}!{m}+{off:#x}"),
                (Some(m), None) => format!("{module}!{m}"),
                (None, _) => format!(
                    "<unknown method: MethodDesc {}: {}>",
                    fmt_addr(f.method_desc),
                    f.error.as_deref().unwrap_or("")
                ),
            };
            let line = sources
                .get(i)
                .and_then(|s| s.file.as_deref().zip(s.line))
                .map(|(file, line)| format!(" [{file} @ {line}]"))
                .unwrap_or_default();
            t.push_str(&format!(
                "    {} {} {func}{}{line}\n",
                fmt_addr(f.sp).to_uppercase(),
                fmt_addr(shown).to_uppercase(),
                if f.flags & clrdata::analysis::exceptions::STEF_CONTINUATION != 0 {
                    " [async continuation]"
                } else {
                    ""
                }
            ));
        }
        t.push('\n');
    }
    // SOS follows a StackTraceString with an empty line ("looks better"), not `<none>`.
    match e.stack_trace_string.as_deref() {
        Some(st) => t.push_str(&format!("StackTraceString: {st}\n\n")),
        None => t.push_str("StackTraceString: <none>\n"),
    }
    if let Some(r) = &e.remote_stack_trace_string {
        t.push_str(&format!("RemoteStackTraceString: {r}\n"));
    }
    // SOS: `%lx`, no leading zeros.
    t.push_str(&format!("HResult: {:x}\n", e.hresult as u32));
    for n in &e.notes {
        t.push_str(&format!("Note: {n}\n"));
    }
    t
}

/// `printexception`'s result.
#[derive(Serialize)]
pub struct PrintExceptionOut {
    /// Where the exception came from: "address" or "thread".
    pub source: &'static str,
    /// The thread whose last thrown exception this is (when chosen by thread).
    pub thread_os_id: Option<u64>,
    pub thread_managed_id: Option<u32>,
    /// `-nested` given.
    pub nested: bool,
    /// `-inner` given.
    pub inner: bool,
    /// The exception, then (with -inner) its inner exceptions, outermost first.
    pub exceptions: Vec<ExceptionOut>,
    /// The current thread whose nested exceptions are listed (SOS's: the current thread even
    /// when an address is given).
    pub nested_thread_os_id: Option<u64>,
    /// The current thread's nested exceptions, innermost first (SOS's `-nested`: the
    /// exceptions its innermost exception was thrown while dispatching); null when not read
    /// (`nested_note` says why).
    pub nested_exceptions: Option<Vec<ExceptionOut>>,
    /// Why the nested exceptions were not read.
    pub nested_note: Option<String>,
    /// Whether each frame carries its source line (`-lines`).
    pub lines: bool,
    /// The exceptions as read (what `exceptions` shows), for the text.
    #[serde(skip)]
    pub chain: Vec<ExceptionData>,
    /// With `-lines`, each exception's trace's lines (as `chain`), else empty.
    #[serde(skip)]
    pub sources: Vec<Vec<FrameSource>>,
    /// The nested exceptions as read, with their lines (as `chain`, `sources`).
    #[serde(skip)]
    pub nested_chain: Vec<(ExceptionData, Vec<FrameSource>)>,
}

impl Render for PrintExceptionOut {
    fn render(&self) -> String {
        // As SOS, no line says whose exception this is (the current thread's: `setthread`
        // shows it; the JSON names it).
        let mut text = String::new();
        for (i, e) in self.chain.iter().enumerate() {
            if i > 0 {
                text.push_str(
                    "\nInner exception --------------------------------------------------------------\n",
                );
            }
            text.push_str(&exception_text(
                e,
                self.sources.get(i).map(Vec::as_slice).unwrap_or(&[]),
            ));
        }
        // SOS's nested exceptions of the current thread.
        if !self.nested_chain.is_empty() && !self.nested {
            text.push_str(
                "There are nested exceptions on this thread. Run with -nested for details\n",
            );
        } else if self.nested {
            for (e, sources) in &self.nested_chain {
                text.push_str(
                    "\nNested exception -------------------------------------------------------------\n",
                );
                text.push_str(&exception_text(e, sources));
            }
            if let Some(n) = &self.nested_note {
                text.push_str(&format!("Note: nested exceptions not read: {n}\n"));
            }
        }
        text
    }
}

fn printexception(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = match clr(s) {
        Ok(c) => c,
        // A NativeAOT app: its crash info names the unhandled exception (objects themselves
        // are not read on NativeAOT yet).
        Err(e) => match crate::session::nativeaot_of(s, &e) {
            Some(aot) if m.get_one::<String>("address").is_none() => {
                return aot.and_then(|a| crate::nativeaot::aot_crashinfo(s, &a))
            }
            _ => return Err(e),
        },
    };
    let nested = m.get_flag("nested");
    let inner = m.get_flag("inner");
    // The current thread: the one setthread chose, else the faulting one, else the first
    // managed one.
    let current = || -> Result<clrdata::data::threads::ThreadData, CommandError> {
        let threads =
            c.rt.threads()
                .map_err(|e| CommandError::clr("reading the thread list", e))?;
        match s.selected_os_thread() {
            Some(id) => threads
                .into_iter()
                .find(|t| t.os_id == u64::from(id))
                .ok_or_else(|| {
                    CommandError::not_found(
                        format!("a managed thread with OS id {id:#x} (the current thread)"),
                        "it is not a managed thread",
                    )
                }),
            None => current_thread(s.target.info().crashing_thread, &threads)
                .copied()
                .ok_or_else(|| CommandError::not_found("the dump has no managed thread", "")),
        }
    };
    let mut thread = None;
    let addr = match m.get_one::<String>("address") {
        Some(a) => parse_address(a)?,
        None => {
            let t = current()?;
            let (_, obj) = c.rt.last_thrown_object(t.address).map_err(|e| {
                CommandError::clr(format!("thread {:#x} ({})", t.os_id, t.managed_id), e)
            })?;
            if obj == 0 {
                return Err(CommandError::NoLastException {
                    os_id: t.os_id,
                    managed_id: t.managed_id,
                });
            }
            thread = Some(t);
            obj
        }
    };
    let chain = exceptions_at(&c.rt, &c.names, addr, inner)?;
    let lines = m.get_flag("lines");
    let w = StackWalker::for_target(&c.rt, &c.names);
    let finder = SourceLines::for_target(&c.rt);
    // The same lookup as clrstack's (SourceLines: the session's PDBs), at the addresses SOS's
    // `pe -lines` looks up (ExceptionData::trace_sources).
    let sources_of = |e: &ExceptionData| -> Vec<FrameSource> {
        if lines {
            e.trace_sources(&finder, &w)
        } else {
            Vec::new()
        }
    };
    let sources: Vec<Vec<FrameSource>> = chain.iter().map(sources_of).collect();
    // SOS's nested exceptions: the current thread's, whatever exception is printed. Each
    // (ExInfo, object), or why they were not read.
    let (nested_thread, nested_list, mut nested_note) = match thread.map_or_else(current, Ok) {
        Ok(t) => match c.rt.nested_exceptions(t.address) {
            Ok(Some(list)) => (Some(t.os_id), list, None),
            Ok(None) => (
                Some(t.os_id),
                Vec::new(),
                Some(
                    "the layout of this runtime's exception tracker is not known (Windows .NET 8)"
                        .to_string(),
                ),
            ),
            Err(e) => (
                Some(t.os_id),
                Vec::new(),
                Some(format!("thread {:#x} ({}): {e}", t.os_id, t.managed_id)),
            ),
        },
        Err(e) => (None, Vec::new(), Some(e.to_string())),
    };
    let mut nested_chain = Vec::new();
    for (ex_info, obj) in nested_list.into_iter().filter(|&(_, o)| o != 0) {
        match exceptions_at(&c.rt, &c.names, obj, false) {
            Ok(es) => nested_chain.extend(es.into_iter().map(|e| {
                let src = sources_of(&e);
                (e, src)
            })),
            Err(err) => {
                nested_note = Some(format!(
                    "the exception {obj:#x} of ExInfo {ex_info:#x}: {err}"
                ));
                break;
            }
        }
    }
    let r = PrintExceptionOut {
        source: if thread.is_some() {
            "thread"
        } else {
            "address"
        },
        thread_os_id: thread.map(|t| t.os_id),
        thread_managed_id: thread.map(|t| t.managed_id),
        nested,
        inner,
        exceptions: chain
            .iter()
            .enumerate()
            .map(|(i, e)| exception_out(e, sources.get(i).map(Vec::as_slice).unwrap_or(&[])))
            .collect(),
        nested_thread_os_id: nested_thread,
        nested_exceptions: (nested_note.is_none() || !nested_chain.is_empty()).then(|| {
            nested_chain
                .iter()
                .map(|(e, src)| exception_out(e, src))
                .collect()
        }),
        nested_note,
        lines,
        chain,
        sources,
        nested_chain,
    };
    Ok(Output::rendered("printexception", r))
}

// ------------------------------------------------------------------------------ dumpexceptions

#[derive(Serialize)]
pub struct HeapException {
    pub address: String,
    pub method_table: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub message: Option<String>,
    pub hresult: String,
    pub inner_exception: Option<String>,
    pub stack_frames: usize,
}

#[derive(Serialize)]
pub struct Group {
    #[serde(rename = "type")]
    pub type_name: String,
    pub message: Option<String>,
    pub count: usize,
    pub addresses: Vec<String>,
}

/// `dumpexceptions`'s result.
#[derive(Serialize)]
pub struct DumpExceptionsOut {
    pub total: usize,
    pub exceptions: Vec<HeapException>,
    pub groups: Vec<Group>,
    pub errors: Vec<String>,
    /// The listing as read (what `exceptions` shows), for the text.
    #[serde(skip)]
    pub listing: HeapExceptions,
}

impl DumpExceptionsOut {
    fn of(l: HeapExceptions) -> DumpExceptionsOut {
        DumpExceptionsOut {
            total: l.exceptions.len(),
            exceptions: l
                .exceptions
                .iter()
                .map(|e| HeapException {
                    address: hex(e.address),
                    method_table: hex(e.mt),
                    type_name: e.type_name.clone(),
                    message: e.message.clone(),
                    hresult: format!("{:08x}", e.hresult as u32),
                    inner_exception: (e.inner != 0).then(|| hex(e.inner)),
                    stack_frames: e.stack_frames,
                })
                .collect(),
            groups: l
                .groups
                .iter()
                .map(|g| Group {
                    type_name: g.type_name.clone(),
                    message: g.message.clone(),
                    count: g.addresses.len(),
                    addresses: g.addresses.iter().copied().map(hex).collect(),
                })
                .collect(),
            errors: l.errors.clone(),
            listing: l,
        }
    }
}

impl Render for DumpExceptionsOut {
    fn render(&self) -> String {
        let l = &self.listing;
        let mut t = table(&["Address", "MethodTable", "Type", "Message"]);
        for e in &l.exceptions {
            t.add_row(vec![
                fmt_addr(e.address),
                fmt_addr(e.mt),
                e.type_name.clone(),
                e.message.clone().unwrap_or_default(),
            ]);
        }
        let mut text = render(&t);
        text.push_str(&format!(
            "\nTotal: {} exception objects\n\n",
            l.exceptions.len()
        ));
        let mut g = table(&["Count", "Type", "Message"]);
        for gr in &l.groups {
            g.add_row(vec![
                gr.addresses.len().to_string(),
                gr.type_name.clone(),
                gr.message.clone().unwrap_or_else(|| "<none>".into()),
            ]);
        }
        text.push_str(&render(&g));
        for e in &l.errors {
            text.push_str(&format!("error: {e}\n"));
        }
        text
    }
}

fn dumpexceptions(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let heap = c.heap()?;
    let filter = m.get_one::<String>("type").map(String::as_str);
    let stop = || s.control.requested();
    let l = list_heap_exceptions(&c.rt, &c.names, heap, filter, &stop)
        .ok_or(CommandError::Cancelled)?;
    Ok(Output::rendered("dumpexceptions", DumpExceptionsOut::of(l)))
}
