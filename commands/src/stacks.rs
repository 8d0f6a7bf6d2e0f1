//! Managed threads and stacks: `clrthreads`, `clrstack`, `pstacks`, `ip2md`, and the mixed
//! native+managed `stack`.

use crate::addr::{fmt_addr, hex, parse_address};
use crate::output::{CommandError, Output, Render};
use crate::session::clr;
use crate::session::{Clr, Session};
use crate::spec::CommandSpec;
use crate::text::{render, table};
use crate::tree::PStacks;
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::analysis::threadlist;
use clrdata::data::threads::thread_state_names;
use clrdata::model::disasm::MethodCode;
use clrdata::model::dso::{thread_stack_objects, ThreadStackObjects};
use clrdata::model::objects::ObjectReader;
use clrdata::model::stack::source::SourceLines;
use clrdata::model::stack::vars::{frame_vars, FrameVar, FrameVars, VarPlace};
use clrdata::model::stack::{
    walk_native_threads, CodeKind, FrameKind, MixedStack, Regs, StackFrame, StackWalker,
    ThreadStack,
};
use clrdata::prelude::*;
use serde::Serialize;

/// The stack commands.
pub static SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "clrthreads",
        aliases: &[],
        about: "managed threads: ids, Thread, state, GC mode, alloc context, last exception",
        grammar: || Command::new("clrthreads"),
        run: clrthreads,
    },
    CommandSpec {
        name: "clrstack",
        aliases: &[],
        about: "a managed thread's stack (-all: every thread's)",
        grammar: || {
            Command::new("clrstack")
                .arg(
                    Arg::new("all")
                        .long("all")
                        .action(ArgAction::SetTrue)
                        .help("every managed thread (SOS spells it -all)"),
                )
                .arg(
                    Arg::new("params")
                        .short('p')
                        .action(ArgAction::SetTrue)
                        .help("each managed frame's arguments (PARAMETERS), as SOS's -p"),
                )
                .arg(
                    Arg::new("locals")
                        .short('l')
                        .action(ArgAction::SetTrue)
                        .help("each managed frame's locals (LOCALS), named from the app's PDB"),
                )
                .arg(
                    Arg::new("both")
                        .short('a')
                        .action(ArgAction::SetTrue)
                        .help("arguments and locals (-p -l)"),
                )
                .arg(Arg::new("thread").help(
                    "OS thread id (decimal, or hex with 0x); default: the current thread (the \
                     faulting one, else the main thread) when managed, else the first managed one",
                ))
        },
        run: clrstack,
    },
    CommandSpec {
        name: "pstacks",
        aliases: &["parallelstacks"],
        about: "every thread's managed stack merged into a tree, root first",
        grammar: || {
            Command::new("pstacks")
                .arg(
                    Arg::new("all")
                        .short('a')
                        .long("all")
                        .action(ArgAction::SetTrue)
                        .help("list every thread id of a group (default: at most 4)"),
                )
                .arg(
                    Arg::new("lines")
                        .long("lines")
                        .action(ArgAction::SetTrue)
                        .help(
                            "each managed frame with its source line ([file @ line], from the \
                             app's PDB; frames at different lines are not merged); dotnet-dump's \
                             pstacks has no such option",
                        ),
                )
                .arg(
                    Arg::new("async")
                        .long("async")
                        .action(ArgAction::SetTrue)
                        .help("merge the async logical stacks (chains of state machines) instead of thread stacks"),
                )
        },
        run: pstacks,
    },
    CommandSpec {
        name: "stack",
        aliases: &["k"],
        about: "a thread's native and managed frames, WinDbg `k` style (-all: every thread's)",
        grammar: || {
            Command::new("stack")
                .arg(
                    Arg::new("all")
                        .long("all")
                        .action(ArgAction::SetTrue)
                        .help("every OS thread of the dump"),
                )
                .arg(Arg::new("thread").help(
                    "OS thread id (decimal, or hex with 0x); default: the faulting thread, \
                     else the dump's first thread",
                ))
        },
        run: stack,
    },
    CommandSpec {
        name: "dumpstackobjects",
        aliases: &["dso"],
        about: "objects referenced from a thread's registers and stack (conservative scan)",
        grammar: || {
            Command::new("dumpstackobjects")
                .arg(
                    Arg::new("thread")
                        .short('t')
                        .long("thread")
                        .help("OS thread id; default: the faulting thread, else the dump's first"),
                )
                .arg(Arg::new("top").help("scan from this address instead of the stack pointer"))
                .arg(Arg::new("bottom").help("scan up to this address instead of the stack's end"))
        },
        run: dso,
    },
    CommandSpec {
        name: "u",
        aliases: &["clru"],
        about: "disassemble the managed method containing a code address, calls named",
        grammar: || {
            Command::new("u").arg(
                Arg::new("address")
                    .required(true)
                    .help("a code address inside the method"),
            )
        },
        run: unassemble,
    },
];

fn parse_os_id(t: &str) -> Result<u64, CommandError> {
    let t = t.trim();
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse(),
    };
    r.map_err(|_| CommandError::bad_argument(format!("\'{t}\'"), "not a thread id"))
}

// ---------------------------------------------------------------------------------- clrthreads

#[derive(Serialize)]
pub struct ClrThread {
    /// The debugger's index of the thread (SOS's DBG column: its position in the dump's
    /// thread list, from 0; `setthread` takes it); `None` when its OS thread is not in the dump.
    pub index: Option<usize>,
    pub managed_id: u32,
    pub os_id: u64,
    pub thread: String,
    /// The Thread's address (as `thread`, for the text).
    #[serde(skip)]
    pub address: u64,
    pub state: u32,
    pub state_names: Vec<&'static str>,
    pub gc_mode: &'static str,
    pub alloc_context: String,
    pub alloc_limit: String,
    /// .NET 8 keeps no lock count; the DAC reports -1.
    pub lock_count: i64,
    pub apartment: &'static str,
    pub last_exception_handle: Option<String>,
    pub last_exception: Option<String>,
    pub last_exception_type: Option<String>,
    pub tags: Vec<&'static str>,
    pub dead: bool,
}

/// `clrthreads`'s result: the managed thread list ([`threadlist::ThreadList`]) as printed.
#[derive(Serialize)]
pub struct ClrThreads {
    pub thread_count: i32,
    pub unstarted: i32,
    pub background: i32,
    pub pending: i32,
    pub dead: i32,
    pub finalizer: String,
    pub threads: Vec<ClrThread>,
    /// What looks wrong with the thread list.
    pub notes: Vec<String>,
}

impl ClrThreads {
    fn of(l: threadlist::ThreadList, index_of: impl Fn(u64) -> Option<usize>) -> ClrThreads {
        let ts = &l.store;
        ClrThreads {
            thread_count: ts.thread_count,
            unstarted: ts.unstarted_thread_count,
            background: ts.background_thread_count,
            pending: ts.pending_thread_count,
            dead: ts.dead_thread_count,
            finalizer: hex(ts.finalizer_thread),
            threads: l
                .threads
                .iter()
                .map(|t| ClrThread {
                    index: (t.data.os_id != 0)
                        .then(|| index_of(t.data.os_id))
                        .flatten(),
                    managed_id: t.data.managed_id,
                    os_id: t.data.os_id,
                    thread: hex(t.data.address),
                    address: t.data.address,
                    state: t.data.state,
                    state_names: thread_state_names(t.data.state),
                    gc_mode: t.gc_mode(),
                    alloc_context: hex(t.data.alloc_ptr),
                    alloc_limit: hex(t.data.alloc_limit),
                    lock_count: -1,
                    apartment: t.apartment(),
                    last_exception_handle: (t.last_exception_handle != 0)
                        .then(|| hex(t.last_exception_handle)),
                    last_exception: (t.last_exception != 0).then(|| hex(t.last_exception)),
                    last_exception_type: t.last_exception_type.clone(),
                    tags: t.roles(),
                    dead: t.dead(),
                })
                .collect(),
            notes: l.notes,
        }
    }
}

impl Render for ClrThreads {
    fn render(&self) -> String {
        let mut text = format!(
            "ThreadCount:      {}\nUnstartedThread:  {}\nBackgroundThread: {}\nPendingThread:    {}\n\
             DeadThread:       {}\n",
            self.thread_count, self.unstarted, self.background, self.pending, self.dead
        );
        let mut t = table(&[
            "DBG",
            "ID",
            "OSID",
            "ThreadOBJ",
            "State",
            "GC Mode",
            "GC Alloc Context",
            "Lock Count",
            "Apt",
            "Exception",
        ]);
        for th in &self.threads {
            let mut ex = th
                .last_exception
                .as_ref()
                .map(|o| {
                    format!(
                        "{} {o}",
                        th.last_exception_type
                            .as_deref()
                            .unwrap_or("<unknown type>")
                    )
                })
                .unwrap_or_default();
            for tag in th.tags.iter().filter(|t| **t != "Background") {
                if !ex.is_empty() {
                    ex.push(' ');
                }
                ex.push_str(&format!("({tag})"));
            }
            t.add_row(vec![
                th.index.map_or("XXXX".to_string(), |i| i.to_string()),
                th.managed_id.to_string(),
                if th.dead {
                    "XXXX".to_string()
                } else {
                    format!("{:x}", th.os_id)
                },
                fmt_addr(th.address),
                format!("{:x}", th.state),
                th.gc_mode.to_string(),
                format!("{}:{}", th.alloc_context, th.alloc_limit),
                th.lock_count.to_string(),
                th.apartment.to_string(),
                ex,
            ]);
        }
        text.push_str(&render(&t));
        for n in &self.notes {
            text.push_str(&format!("Note: {n}\n"));
        }
        text
    }
}

fn clrthreads(s: &Session, _: &ArgMatches) -> Result<Output, CommandError> {
    let c = match clr(s) {
        Ok(c) => c,
        Err(e) => match crate::session::nativeaot_of(s, &e) {
            Some(aot) => return aot.and_then(|a| crate::nativeaot::aot_clrthreads(s, &a)),
            None => return Err(e),
        },
    };
    let l = threadlist::thread_list(&c.rt, &c.names)?;
    Ok(Output::rendered(
        "clrthreads",
        ClrThreads::of(l, |os_id| s.thread_index(os_id)),
    ))
}

// ------------------------------------------------------------------------------------ clrstack

#[derive(Serialize)]
pub struct ClrStackFrame {
    pub kind: FrameKind,
    pub sp: String,
    pub ip: String,
    pub frame: Option<String>,
    pub frame_name: Option<String>,
    pub method_desc: Option<String>,
    pub method: Option<String>,
    pub method_error: Option<String>,
    /// The frame's IL offset (managed frames whose debug info maps the IP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub il_offset: Option<u32>,
    /// The source document of the frame's line (from the app's PDB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_file: Option<String>,
    /// The source line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_line: Option<u32>,
    /// Why a managed frame has no source line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_note: Option<String>,
    /// With -p/-a: the managed frame's arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<ClrStackVar>>,
    /// With -l/-a: the managed frame's locals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locals: Option<Vec<ClrStackVar>>,
    /// With -p/-l/-a: why the frame's variables (or some) are not known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vars_note: Option<String>,
}

/// An argument or local of a frame (clrstack -p/-l/-a).
#[derive(Serialize)]
pub struct ClrStackVar {
    pub index: u32,
    pub name: Option<String>,
    /// Where it is at the frame's IP: `{"kind": "register", "register"}` or `{"kind":
    /// "memory", "address"}`; empty: nowhere (SOS's `<no data>`).
    pub locations: Vec<serde_json::Value>,
    /// The bytes read, hex, in memory order.
    pub bytes: Option<String>,
    /// The value as SOS prints it (the bytes as a number when 1, 2, 4 or 8 of them, else 0).
    pub value: Option<String>,
    pub error: Option<String>,
}

impl ClrStackVar {
    fn of(v: &FrameVar) -> ClrStackVar {
        ClrStackVar {
            index: v.index,
            name: v.name.clone(),
            locations: v
                .locations
                .iter()
                .map(|l| match l {
                    VarPlace::Register { register } => {
                        serde_json::json!({"kind": "register", "register": register})
                    }
                    VarPlace::Memory { address } => {
                        serde_json::json!({"kind": "memory", "address": hex(*address)})
                    }
                })
                .collect(),
            bytes: v
                .bytes
                .as_ref()
                .map(|b| b.iter().map(|x| format!("{x:02x}")).collect()),
            value: v.value.map(|x| format!("{x:#018x}")),
            error: v.error.clone(),
        }
    }
}

/// A managed frame's variables as clrstack -p/-l/-a found them (`None`: not asked for).
pub type FrameVarsResult = Option<Result<FrameVars, clrdata::ClrError>>;

#[derive(Serialize)]
pub struct ClrStackThread {
    pub os_id: u64,
    pub managed_id: u32,
    pub thread: String,
    pub frames: Vec<ClrStackFrame>,
    pub incomplete: Option<String>,
}

impl ClrStackThread {
    fn of(
        st: &ThreadStack,
        vars: Option<&[FrameVarsResult]>,
        params: bool,
        locals: bool,
    ) -> ClrStackThread {
        ClrStackThread {
            os_id: st.os_id,
            managed_id: st.managed_id,
            thread: hex(st.thread),
            frames: st
                .frames
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let fv = vars.and_then(|v| v.get(i)).and_then(|v| v.as_ref());
                    let list = |want: bool, pick: fn(&FrameVars) -> &Vec<FrameVar>| match fv {
                        Some(Ok(v)) if want => Some(pick(v).iter().map(ClrStackVar::of).collect()),
                        _ => None,
                    };
                    ClrStackFrame {
                        kind: f.kind,
                        sp: hex(f.sp),
                        ip: hex(f.ip),
                        frame: f.frame.map(hex),
                        frame_name: f.frame_name.clone(),
                        method_desc: f.method_desc.map(hex),
                        method: f.method.clone(),
                        method_error: f.method_error.clone(),
                        il_offset: f.source.as_ref().and_then(|s| s.il_offset),
                        source_file: f.source.as_ref().and_then(|s| s.file.clone()),
                        source_line: f.source.as_ref().and_then(|s| s.line),
                        source_note: f.source.as_ref().and_then(|s| s.note.clone()),
                        arguments: list(params, |v| &v.arguments),
                        locals: list(locals, |v| &v.locals),
                        vars_note: match fv {
                            Some(Err(e)) => Some(e.to_string()),
                            Some(Ok(v)) if !v.notes.is_empty() => Some(v.notes.join("; ")),
                            _ => None,
                        },
                    }
                })
                .collect(),
            incomplete: st.incomplete.clone(),
        }
    }
}

/// `clrstack`'s result: the stacks of the threads asked for, and with -p/-l/-a each
/// managed frame's arguments and locals (per thread, per frame). Its JSON is the list of
/// [`ClrStackThread`].
pub struct ClrStack {
    pub stacks: Vec<ThreadStack>,
    /// Per thread, per frame (`None` for a frame that is not managed); empty when not asked.
    pub vars: Vec<Vec<FrameVarsResult>>,
    pub params: bool,
    pub locals: bool,
    /// Per thread, its debugger index (what SOS prints after the OS id; `setthread` takes it).
    pub debugger_index: Vec<Option<usize>>,
}

impl Serialize for ClrStack {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_seq(self.stacks.iter().enumerate().map(|(i, st)| {
            ClrStackThread::of(
                st,
                self.vars.get(i).map(|v| v.as_slice()),
                self.params,
                self.locals,
            )
        }))
    }
}

/// SOS's line of one argument (`name (0xADDR) = value`) or local (`0xADDR = value`; a local
/// the PDB names is shown as an argument is).
fn var_line(v: &FrameVar, as_arg: bool) -> String {
    let mut out = String::from("        ");
    let named = as_arg || v.name.is_some();
    if let Some(n) = &v.name {
        out.push_str(n);
        out.push(' ');
    }
    let loc = match v.locations.as_slice() {
        [VarPlace::Register { .. }] => Some("<CLR reg>".to_string()),
        [VarPlace::Memory { address }] => Some(format!("0x{address:016X}")),
        _ => None,
    };
    match (&loc, named) {
        (Some(l), true) => out.push_str(&format!("({l}) ")),
        (Some(l), false) => out.push_str(&format!("{l} ")),
        (None, _) => {}
    }
    if (named && (v.name.is_some() || loc.is_some())) || (!named && loc.is_some()) {
        out.push_str("= ");
    }
    match (v.locations.is_empty(), v.value) {
        (true, _) => out.push_str("<no data>"),
        (false, Some(x)) => out.push_str(&format!("0x{x:016x}")),
        (false, None) => out.push_str(&format!(
            "<unable to retrieve data: {}>",
            v.error.as_deref().unwrap_or("")
        )),
    }
    out.push('\n');
    out
}

impl Render for ClrStack {
    fn render(&self) -> String {
        let mut text = String::new();
        for (ti, st) in self.stacks.iter().enumerate() {
            // SOS's header: the OS id, then the thread's debugger index.
            text.push_str(&format!(
                "OS Thread Id: {:#x} ({})\n",
                st.os_id,
                self.debugger_index
                    .get(ti)
                    .copied()
                    .flatten()
                    .map_or("XXXX".to_string(), |i| i.to_string())
            ));
            let vars = self.vars.get(ti);
            if vars.is_some() {
                // SOS's layout: each managed frame followed by its blocks and a blank line.
                text.push_str(&format!("{:>16} {:>16} Call Site\n", "Child SP", "IP"));
                for (fi, f) in st.frames.iter().enumerate() {
                    text.push_str(&format!(
                        "{} {} {}\n",
                        fmt_addr(child_sp(f)),
                        fmt_addr(f.ip),
                        frame_text(f)
                    ));
                    match vars.and_then(|v| v.get(fi)).and_then(|v| v.as_ref()) {
                        None => continue,
                        Some(Err(e)) => text.push_str(&format!("    <no variables: {e}>\n")),
                        Some(Ok(v)) => {
                            if self.params && !v.arguments.is_empty() {
                                text.push_str("    PARAMETERS:\n");
                                for a in &v.arguments {
                                    text.push_str(&var_line(a, true));
                                }
                            }
                            if self.locals && !v.locals.is_empty() {
                                text.push_str("    LOCALS:\n");
                                for l in &v.locals {
                                    text.push_str(&var_line(l, false));
                                }
                            }
                            for n in &v.notes {
                                text.push_str(&format!("    <{n}>\n"));
                            }
                        }
                    }
                    text.push('\n');
                }
                if let Some(why) = &st.incomplete {
                    text.push_str(&format!("<the walk stopped: {why}>\n"));
                }
                text.push('\n');
                continue;
            }
            let mut t = table(&["Child SP", "IP", "Call Site"]);
            for f in &st.frames {
                t.add_row(vec![fmt_addr(child_sp(f)), fmt_addr(f.ip), frame_text(f)]);
            }
            text.push_str(&render(&t));
            if let Some(why) = &st.incomplete {
                text.push_str(&format!("<the walk stopped: {why}>\n"));
            }
            text.push('\n');
        }
        text
    }
}

/// The Child SP a stack listing shows: an explicit Frame's address, else the frame's SP.
fn child_sp(f: &StackFrame) -> u64 {
    if f.kind == FrameKind::Explicit {
        f.frame.unwrap_or(f.sp)
    } else {
        f.sp
    }
}

/// A frame's Call Site column.
fn frame_text(f: &StackFrame) -> String {
    let m = f.method.clone().or_else(|| {
        f.method_error
            .as_ref()
            .map(|e| format!("<unknown method: {e}>"))
    });
    match f.kind {
        FrameKind::Explicit => {
            let base = format!(
                "[{}: {}]",
                f.frame_name.as_deref().unwrap_or("Frame"),
                fmt_addr(f.frame.unwrap_or(0))
            );
            match &f.method {
                Some(m) => format!("{base} {m}"),
                None => base,
            }
        }
        FrameKind::Managed => {
            let m = m.unwrap_or_else(|| "<unknown method>".into());
            match f
                .source
                .as_ref()
                .and_then(|s| s.file.as_deref().zip(s.line))
            {
                // SOS's form: `Method(args) [file @ line]`.
                Some((file, line)) => format!("{m} [{file} @ {line}]"),
                None => m,
            }
        }
        FrameKind::Native => f
            .native
            .as_ref()
            .map(|n| n.to_string())
            .unwrap_or_else(|| hex(f.ip)),
    }
}

/// Sets each managed frame's IL offset and source line (the apps' PDBs as the session finds
/// them: `--pdb-path`, `--image-path`, embedded PDBs, recorded paths).
pub fn annotate_lines(
    c: &Clr,
    w: &StackWalker<'_, std::sync::Arc<dyn dumpreader::Target>>,
    stacks: &mut [ThreadStack],
) {
    let lines = SourceLines::for_target(&c.rt);
    for st in stacks {
        lines.annotate(w, st);
    }
}

fn clrstack(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = match clr(s) {
        Ok(c) => c,
        Err(e) => match crate::session::nativeaot_of(s, &e) {
            Some(aot) => {
                let id = match m.get_one::<String>("thread") {
                    Some(t) => Some(parse_os_id(t)?),
                    None => None,
                };
                return aot
                    .and_then(|a| crate::nativeaot::aot_clrstack(s, &a, m.get_flag("all"), id));
            }
            None => return Err(e),
        },
    };
    let w = StackWalker::for_target(&c.rt, &c.names);
    let all = w
        .walk_all()
        .map_err(|e| CommandError::clr("reading the thread list", e))?;
    let chosen: Vec<ThreadStack> = if m.get_flag("all") {
        all
    } else if let Some(t) = m.get_one::<String>("thread") {
        let id = parse_os_id(t)?;
        let st = all.into_iter().find(|s| s.os_id == id).ok_or_else(|| {
            CommandError::not_found(format!("the managed thread with OS id {t}"), "none")
        })?;
        vec![st]
    } else if let Some(id) = s.selected_os_thread() {
        // The thread setthread chose: as SOS, its stack or the statement that it is not managed.
        let st = all
            .into_iter()
            .find(|t| t.os_id == u64::from(id))
            .ok_or_else(|| {
                CommandError::not_found(
                    format!("a managed thread with OS id {id:#x} (the current thread)"),
                    "it is not a managed thread (clrthreads lists them)",
                )
            })?;
        vec![st]
    } else {
        // The current thread when it is managed, else the first managed thread.
        let cur = s.current_os_thread();
        let i = all
            .iter()
            .position(|t| t.os_id != 0 && Some(t.os_id) == cur)
            .or_else(|| all.iter().position(|t| t.os_id != 0));
        all.into_iter()
            .enumerate()
            .filter(|(k, _)| Some(*k) == i)
            .map(|(_, t)| t)
            .collect()
    };
    let mut chosen = chosen;
    annotate_lines(&c, &w, &mut chosen);
    let both = m.get_flag("both");
    let (params, locals) = (both || m.get_flag("params"), both || m.get_flag("locals"));
    let vars = if params || locals {
        let lines = SourceLines::for_target(&c.rt);
        chosen
            .iter()
            .map(|st| {
                st.frames
                    .iter()
                    .map(|f| (f.kind == FrameKind::Managed).then(|| frame_vars(&lines, &w, f)))
                    .collect()
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(Output::rendered(
        "clrstack",
        ClrStack {
            debugger_index: chosen.iter().map(|t| s.thread_index(t.os_id)).collect(),
            stacks: chosen,
            vars,
            params,
            locals,
        },
    ))
}

// ------------------------------------------------------------------------------------- pstacks

fn pstacks(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let all = m.get_flag("all");
    if m.get_flag("async") {
        return crate::asyncs::pstacks_async(s, all);
    }
    let c = match clr(s) {
        Ok(c) => c,
        Err(e) => match crate::session::nativeaot_of(s, &e) {
            Some(aot) => return aot.and_then(|a| crate::nativeaot::aot_pstacks(s, &a, all)),
            None => return Err(e),
        },
    };
    let lines = m.get_flag("lines");
    let w = StackWalker::for_target(&c.rt, &c.names);
    let mut stacks = w
        .walk_all()
        .map_err(|e| CommandError::clr("reading the thread list", e))?;
    if lines {
        annotate_lines(&c, &w, &mut stacks);
    }
    // The fold into one tree is the shared merged-stack tree's (crate::tree, also used by
    // `pstacks --async`).
    let mut root = crate::tree::Node::default();
    let mut n = 0;
    let mut incomplete = Vec::new();
    for st in &stacks {
        if let Some(why) = &st.incomplete {
            incomplete.push((st.os_id, why.clone()));
        }
        // The frames of ThreadStack::methods, root first, each with its line.
        let frames: Vec<crate::tree::LinedFrame<'_>> = st
            .frames
            .iter()
            .rev()
            .filter_map(|f| {
                Some(crate::tree::LinedFrame {
                    method: f.method.as_deref()?,
                    line: f
                        .source
                        .as_ref()
                        .and_then(|s| s.file.as_deref().zip(s.line)),
                })
            })
            .collect();
        if frames.is_empty() {
            continue;
        }
        n += 1;
        root.insert_lined(&frames, st.os_id);
    }
    let r = PStacks {
        threads: n,
        roots: root.children,
        incomplete,
        all,
    };
    Ok(Output::rendered("pstacks", r))
}

// --------------------------------------------------------------------------------------- stack

/// The OS threads a command runs on: `-all`, one OS id, or the current thread (the faulting
/// thread, else the dump's first).
fn select_os_threads(s: &Session, m: &ArgMatches) -> Result<Vec<u64>, CommandError> {
    let threads = s.target.threads();
    if m.get_flag("all") {
        return Ok(threads.iter().map(|t| t.id as u64).collect());
    }
    if let Some(t) = m.get_one::<String>("thread") {
        let id = parse_os_id(t)?;
        if !threads.iter().any(|x| x.id as u64 == id) {
            return Err(CommandError::not_found(
                format!("OS thread {t}"),
                "not in the dump",
            ));
        }
        return Ok(vec![id]);
    }
    let current = s
        .current_os_thread()
        .ok_or_else(|| CommandError::not_found("the dump has no threads", ""))?;
    Ok(vec![current])
}

#[derive(Serialize)]
pub struct MixedFrameOut {
    pub kind: FrameKind,
    /// Child-SP (an explicit Frame: its address, as clrstack shows it).
    pub sp: String,
    /// The frame's instruction pointer.
    pub ip: String,
    /// The return address into the caller (the next frame's IP), when known.
    pub ret_addr: Option<String>,
    /// The Call Site as printed.
    pub call_site: String,
    pub module: Option<String>,
    pub symbol: Option<String>,
    pub offset: Option<String>,
    pub method_desc: Option<String>,
    pub method: Option<String>,
    pub frame: Option<String>,
    pub frame_name: Option<String>,
}

#[derive(Serialize)]
pub struct MixedThreadOut {
    pub os_id: u64,
    /// The thread's debugger index (its position in the dump's thread list: SOS's).
    pub index: Option<usize>,
    pub managed_id: Option<u32>,
    pub thread: Option<String>,
    pub frames: Vec<MixedFrameOut>,
    pub gaps: Vec<String>,
    pub incomplete: Option<String>,
}

impl MixedThreadOut {
    fn of(st: &MixedStack, index: Option<usize>) -> MixedThreadOut {
        MixedThreadOut {
            os_id: st.os_id,
            index,
            managed_id: st.managed_id,
            thread: st.thread.map(hex),
            frames: st
                .frames
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let n = f.native.as_ref();
                    MixedFrameOut {
                        kind: f.kind,
                        sp: hex(child_sp(f)),
                        ip: hex(f.ip),
                        ret_addr: st.return_address(i).map(hex),
                        call_site: frame_text(f),
                        module: n.and_then(|n| n.module.clone()),
                        symbol: n.and_then(|n| n.symbol.clone()),
                        offset: n.map(|n| hex(n.offset)),
                        method_desc: f.method_desc.map(hex),
                        method: f.method.clone(),
                        frame: f.frame.map(hex),
                        frame_name: f.frame_name.clone(),
                    }
                })
                .collect(),
            gaps: st.gaps.clone(),
            incomplete: st.incomplete.clone(),
        }
    }
}

/// `stack`'s result: the threads' mixed stacks, and why they are native only when they are.
/// Its JSON is the list of [`MixedThreadOut`].
pub struct MixedStacks {
    /// Why no CLR could be read (then the stacks are native frames only).
    pub no_clr: Option<clrdata::ClrError>,
    pub threads: Vec<MixedStack>,
    /// Each thread's debugger index (its position in the dump's thread list).
    pub debugger_index: Vec<Option<usize>>,
}

impl Serialize for MixedStacks {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_seq(
            self.threads.iter().enumerate().map(|(i, st)| {
                MixedThreadOut::of(st, self.debugger_index.get(i).copied().flatten())
            }),
        )
    }
}

/// SOS's thread header of dumpstack and dumpstackobjects: the OS id, then the thread's
/// debugger index (as clrstack's).
fn thread_header(os_id: u64, index: Option<usize>) -> String {
    format!(
        "OS Thread Id: {os_id:#x} ({})\n",
        index.map_or("XXXX".to_string(), |i| i.to_string())
    )
}

impl Render for MixedStacks {
    fn render(&self) -> String {
        let mut text = String::new();
        if let Some(e) = &self.no_clr {
            text.push_str(&format!("<native frames only: no CLR to read: {e}>\n"));
        }
        for (ti, st) in self.threads.iter().enumerate() {
            text.push_str(&thread_header(
                st.os_id,
                self.debugger_index.get(ti).copied().flatten(),
            ));
            let mut t = table(&["#", "Child-SP", "RetAddr", "Call Site"]);
            for (i, f) in st.frames.iter().enumerate() {
                t.add_row(vec![
                    format!("{i:02x}"),
                    fmt_addr(child_sp(f)),
                    st.return_address(i)
                        .map(fmt_addr)
                        .unwrap_or_else(|| "-".repeat(16)),
                    frame_text(f),
                ]);
            }
            text.push_str(&render(&t));
            for g in &st.gaps {
                text.push_str(&format!("<native frames missing: {g}>\n"));
            }
            if let Some(why) = &st.incomplete {
                text.push_str(&format!("<the walk stopped: {why}>\n"));
            }
            text.push('\n');
        }
        text
    }
}

fn stack(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let ids = select_os_threads(s, m)?;
    // Without a CLR the walker can read (another runtime, none at all): native frames only.
    let r = match s.clr() {
        Ok(c) => MixedStacks {
            no_clr: None,
            threads: StackWalker::for_target(&c.rt, &c.names)
                .walk_mixed_threads(&ids)
                .map_err(|e| CommandError::clr("reading the thread list", e))?,
            debugger_index: Vec::new(),
        },
        Err(e) => MixedStacks {
            threads: walk_native_threads(&*s.target, &ids),
            no_clr: Some(e),
            debugger_index: Vec::new(),
        },
    };
    let r = MixedStacks {
        debugger_index: r.threads.iter().map(|t| s.thread_index(t.os_id)).collect(),
        ..r
    };
    Ok(Output::rendered("stack", r))
}

// ------------------------------------------------------------------------------------------ dso

#[derive(Serialize)]
pub struct DsoRow {
    /// The stack slot, or null for a register.
    pub sp: Option<String>,
    pub register: Option<&'static str>,
    pub object: String,
    pub method_table: String,
    pub type_name: String,
    /// A string's value (at most 256 characters).
    pub string: Option<String>,
}

#[derive(Serialize)]
pub struct DsoOut {
    pub os_id: u64,
    /// The thread's debugger index (its position in the dump's thread list: SOS's).
    pub index: Option<usize>,
    pub managed_id: Option<u32>,
    pub stack_start: String,
    pub stack_end: String,
    pub objects: Vec<DsoRow>,
    pub note: Option<String>,
}

/// `dumpstackobjects`'s result: one thread's scan. Its JSON is a [`DsoOut`].
pub struct Dso {
    pub os_id: u64,
    /// The thread's debugger index.
    pub index: Option<usize>,
    pub managed_id: Option<u32>,
    pub scan: ThreadStackObjects,
}

impl Dso {
    /// The JSON form.
    pub fn to_json(&self) -> DsoOut {
        DsoOut {
            os_id: self.os_id,
            index: self.index,
            managed_id: self.managed_id,
            stack_start: hex(self.scan.range.0),
            stack_end: hex(self.scan.range.1),
            objects: self
                .scan
                .objects
                .iter()
                .map(|o| DsoRow {
                    sp: o.found.slot.map(hex),
                    register: o.found.register,
                    object: hex(o.found.object),
                    method_table: hex(o.found.method_table),
                    type_name: o.type_name.clone(),
                    string: o.string.clone(),
                })
                .collect(),
            note: self.scan.note.clone(),
        }
    }
}

impl Serialize for Dso {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl Render for Dso {
    fn render(&self) -> String {
        let mut text = thread_header(self.os_id, self.index);
        let mut t = table(&["SP/REG", "Object", "Name"]);
        for o in &self.scan.objects {
            let loc = match (o.found.register, o.found.slot) {
                (Some(r), _) => r.to_string(),
                (None, Some(a)) => fmt_addr(a),
                (None, None) => String::new(),
            };
            let shown = match &o.string {
                Some(v) => format!("{}    {v}", o.type_name),
                None => o.type_name.clone(),
            };
            t.add_row(vec![loc, fmt_addr(o.found.object), shown]);
        }
        text.push_str(&render(&t));
        if let Some(n) = &self.scan.note {
            text.push_str(&format!("<{n}>\n"));
        }
        text
    }
}

fn dso(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let heap = c.heap()?;
    let threads = s.target.threads();
    let os_id = match m.get_one::<String>("thread") {
        Some(t) => parse_os_id(t)?,
        None => s
            .current_os_thread()
            .ok_or_else(|| CommandError::not_found("the dump has no threads", ""))?,
    };
    let ti = threads
        .iter()
        .find(|t| t.id as u64 == os_id)
        .ok_or_else(|| {
            CommandError::not_found(format!("OS thread {os_id:#x}"), "not in the dump")
        })?;
    let parse = |name: &str| -> Result<Option<u64>, CommandError> {
        m.get_one::<String>(name)
            .map(|t| parse_address(t))
            .transpose()
    };
    let top = parse("top")?;
    let bottom = parse("bottom")?;
    let end = match (bottom, ti.stack) {
        (Some(b), _) => b,
        (None, Some((_, e))) => e,
        (None, None) => {
            return Err(CommandError::not_found(
                format!("the end of thread {os_id:#x}'s stack"),
                "the dump does not say where it is; give the range",
            ))
        }
    };
    let reader = ObjectReader::new(&c.rt, &c.names);
    let regs = Regs::from_context(&ti.context);
    let scan = thread_stack_objects(&reader, heap, &regs, top, end);
    let managed_id =
        c.rt.threads()
            .ok()
            .and_then(|ts| ts.iter().find(|t| t.os_id == os_id).map(|t| t.managed_id));
    Ok(Output::rendered(
        "dumpstackobjects",
        Dso {
            os_id,
            index: s.thread_index(os_id),
            managed_id,
            scan,
        },
    ))
}

// -------------------------------------------------------------------------------------------- u

#[derive(Serialize)]
pub struct UInstruction {
    pub address: String,
    pub bytes: String,
    pub mnemonic: String,
    pub operands: String,
    pub target: Option<String>,
    pub slot: Option<String>,
    pub target_name: Option<String>,
}

#[derive(Serialize)]
pub struct UOut {
    pub kind: CodeKind,
    pub method: Option<String>,
    pub method_desc: Option<String>,
    pub start: String,
    pub end: String,
    pub size: u64,
    pub instructions: Vec<UInstruction>,
    pub note: Option<String>,
}

/// `u`'s result: the method's code, and the address asked about (marked in the text). Its
/// JSON is a [`UOut`].
pub struct Unassembly {
    pub address: u64,
    pub code: MethodCode,
}

/// An instruction's bytes as hexadecimal digits.
fn bytes_hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

impl Unassembly {
    /// The JSON form.
    pub fn to_json(&self) -> UOut {
        let code = &self.code;
        UOut {
            kind: code.kind,
            method: code.method.clone(),
            method_desc: code.method_desc.map(hex),
            start: hex(code.start),
            end: hex(code.end),
            size: code.end - code.start,
            instructions: code
                .instructions
                .iter()
                .map(|i| UInstruction {
                    address: hex(i.address),
                    bytes: bytes_hex(&i.bytes),
                    mnemonic: i.mnemonic.clone(),
                    operands: i.operands.clone(),
                    target: i.target.map(hex),
                    slot: i.slot.map(hex),
                    target_name: i.target_name.clone(),
                })
                .collect(),
            note: code.note.clone(),
        }
    }
}

impl Serialize for Unassembly {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

/// WinDbg's address spelling: `00007f02`72a36860`.
fn tick(a: u64) -> String {
    format!("{:08x}`{:08x}", a >> 32, a & 0xFFFF_FFFF)
}

impl Render for Unassembly {
    fn render(&self) -> String {
        let (code, addr) = (&self.code, self.address);
        let mut text = String::new();
        text.push_str(match code.kind {
            CodeKind::Jit => "Normal JIT generated code\n",
            CodeKind::ReadyToRun => "ReadyToRun code\n",
        });
        text.push_str(&format!(
            "{}\n",
            code.method.as_deref().unwrap_or("<unknown method>")
        ));
        if let Some(md) = code.method_desc {
            text.push_str(&format!("MethodDesc {}\n", fmt_addr(md)));
        }
        text.push_str(&format!(
            "Begin {}, size {:x}\n",
            fmt_addr(code.start),
            code.end - code.start
        ));
        for i in &code.instructions {
            let mut line = format!(
                "{}{} {:<16} {:<7} {}",
                if i.address <= addr && addr < i.address + i.bytes.len() as u64 {
                    ">>> "
                } else {
                    ""
                },
                tick(i.address),
                bytes_hex(&i.bytes),
                i.mnemonic,
                i.operands
            );
            if let Some(t) = i.target {
                if let Some(n) = &i.target_name {
                    line.push_str(&format!(" ; {n} ({})", tick(t)));
                } else if i.slot.is_some() {
                    line.push_str(&format!(" ; -> {}", tick(t)));
                }
            } else if let Some(slot) = i.slot {
                line.push_str(&format!(" ; slot {} is not in the dump", tick(slot)));
            }
            text.push_str(line.trim_end());
            text.push('\n');
        }
        if let Some(n) = &code.note {
            text.push_str(&format!("<{n}>\n"));
        }
        text
    }
}

fn unassemble(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let address = parse_address(
        m.get_one::<String>("address")
            .map(String::as_str)
            .unwrap_or(""),
    )?;
    let code = StackWalker::for_target(&c.rt, &c.names).disassemble(address)?;
    Ok(Output::rendered("u", Unassembly { address, code }))
}
