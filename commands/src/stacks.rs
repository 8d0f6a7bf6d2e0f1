//! Managed threads and stacks: `clrthreads`, `clrstack`, `pstacks`, `ip2md`, and the mixed
//! native+managed `stack`.

use crate::addr::hex;
use crate::addr::{fmt_addr, parse_address};
use crate::output::{CommandError, Output};
use crate::session::clr;
use crate::session::{Clr, Session};
use crate::spec::CommandSpec;
use crate::text::{render, table};
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::data::threads::thread_state_names;
use clrdata::model::stack::{FrameKind, StackWalker, ThreadStack};
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
                    Arg::new("async")
                        .long("async")
                        .action(ArgAction::SetTrue)
                        .help("merge the async logical stacks (chains of state machines) instead of thread stacks"),
                )
        },
        run: pstacks,
    },
    CommandSpec {
        name: "ip2md",
        aliases: &[],
        about: "the managed method containing a code address",
        grammar: || Command::new("ip2md").arg(Arg::new("ip").required(true).help("code address")),
        run: ip2md,
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
    pub index: usize,
    pub managed_id: u32,
    pub os_id: u64,
    pub thread: String,
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

/// A running .NET process always has its finalizer thread: a ThreadStore that lists no thread,
/// or none marked as the finalizer, or fewer threads than it counts, is damaged or was read
/// from the wrong place.
fn thread_store_notes(ts: &clrdata::data::threads::ThreadStoreData, listed: usize) -> Vec<String> {
    let mut notes = Vec::new();
    if listed == 0 {
        notes.push(format!(
            "the ThreadStore at {} lists no thread, yet a .NET process always has its finalizer \
             thread: the ThreadStore's memory may be damaged",
            hex(ts.address)
        ));
    } else if ts.finalizer_thread == 0 {
        notes.push(format!(
            "the ThreadStore at {} names no finalizer thread: it may be damaged",
            hex(ts.address)
        ));
    }
    if ts.thread_count >= 0 && (listed as i64) < ts.thread_count as i64 {
        notes.push(format!(
            "the ThreadStore counts {} threads but its list holds {listed}",
            ts.thread_count
        ));
    }
    notes
}

fn clrthreads(s: &Session, _: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let ts = c.rt.thread_store()?;
    let threads = c.rt.threads()?;
    let mut rows = Vec::new();
    for (i, t) in threads.iter().enumerate() {
        let (h, obj) = c.rt.last_thrown_object(t.address).unwrap_or((0, 0));
        let ex_type = (obj != 0)
            .then(|| clrdata::model::heap::read_method_table(c.rt.memory(), obj).ok())
            .flatten()
            .map(|mt| c.type_name(mt));
        let mut tags = Vec::new();
        if t.is_finalizer {
            tags.push("Finalizer");
        }
        if t.state & 0x0100_0000 != 0 {
            tags.push("Threadpool Worker");
        }
        if t.state & 0x0800_0000 != 0 {
            tags.push("Threadpool Completion Port");
        }
        if t.state & 0x200 != 0 {
            tags.push("Background");
        }
        rows.push(ClrThread {
            index: i + 1,
            managed_id: t.managed_id,
            os_id: t.os_id,
            thread: hex(t.address),
            state: t.state,
            state_names: thread_state_names(t.state),
            gc_mode: if t.preemptive_gc_disabled != 0 {
                "Cooperative"
            } else {
                "Preemptive"
            },
            alloc_context: hex(t.alloc_ptr),
            alloc_limit: hex(t.alloc_limit),
            lock_count: -1,
            apartment: if t.state & 0x4000 != 0 {
                "STA"
            } else if t.state & 0x8000 != 0 {
                "MTA"
            } else {
                "Ukn"
            },
            last_exception_handle: (h != 0).then(|| hex(h)),
            last_exception: (obj != 0).then(|| hex(obj)),
            last_exception_type: ex_type,
            tags,
            dead: t.state & 0x800 != 0,
        });
    }
    let r = ClrThreads {
        thread_count: ts.thread_count,
        unstarted: ts.unstarted_thread_count,
        background: ts.background_thread_count,
        pending: ts.pending_thread_count,
        dead: ts.dead_thread_count,
        finalizer: hex(ts.finalizer_thread),
        threads: rows,
        notes: thread_store_notes(&ts, threads.len()),
    };
    let mut text = format!(
        "ThreadCount:      {}\nUnstartedThread:  {}\nBackgroundThread: {}\nPendingThread:    {}\n\
         DeadThread:       {}\n",
        r.thread_count, r.unstarted, r.background, r.pending, r.dead
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
    for th in &r.threads {
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
            th.index.to_string(),
            th.managed_id.to_string(),
            if th.dead {
                "XXXX".to_string()
            } else {
                format!("{:x}", th.os_id)
            },
            fmt_addr(u64::from_str_radix(&th.thread[2..], 16).unwrap_or(0)),
            format!("{:x}", th.state),
            th.gc_mode.to_string(),
            format!("{}:{}", th.alloc_context, th.alloc_limit),
            th.lock_count.to_string(),
            th.apartment.to_string(),
            ex,
        ]);
    }
    text.push_str(&render(&t));
    for n in &r.notes {
        text.push_str(&format!("Note: {n}\n"));
    }
    Ok(Output::of("clrthreads", r, text))
}

// ------------------------------------------------------------------------------------ clrstack

fn walk_all(c: &Clr) -> Result<Vec<ThreadStack>, CommandError> {
    let w = StackWalker::for_target(&c.rt, &c.names);
    w.walk_all()
        .map_err(|e| CommandError::clr("reading the thread list", e))
}

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
}

#[derive(Serialize)]
pub struct ClrStackThread {
    pub os_id: u64,
    pub managed_id: u32,
    pub thread: String,
    pub frames: Vec<ClrStackFrame>,
    pub incomplete: Option<String>,
}

fn frame_text(f: &clrdata::model::stack::StackFrame) -> String {
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
        FrameKind::Managed => m.unwrap_or_else(|| "<unknown method>".into()),
        FrameKind::Native => f
            .native
            .as_ref()
            .map(|n| n.to_string())
            .unwrap_or_else(|| hex(f.ip)),
    }
}

fn clrstack(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let all = walk_all(&c)?;
    let chosen: Vec<&ThreadStack> = if m.get_flag("all") {
        all.iter().collect()
    } else if let Some(t) = m.get_one::<String>("thread") {
        let id = parse_os_id(t)?;
        let st = all
            .iter()
            .find(|s| s.os_id == id)
            .ok_or_else(|| {
                CommandError::not_found(format!("the managed thread with OS id {t}"), "none")
            })?;
        vec![st]
    } else {
        // The current thread when it is managed, else the first managed thread.
        let cur = s.current_os_thread();
        all.iter()
            .find(|t| t.os_id != 0 && Some(t.os_id) == cur)
            .or_else(|| all.iter().find(|t| t.os_id != 0))
            .into_iter()
            .collect()
    };
    let mut text = String::new();
    let mut out = Vec::new();
    for st in chosen {
        text.push_str(&format!(
            "OS Thread Id: {:#x} ({})\n",
            st.os_id, st.managed_id
        ));
        let mut t = table(&["Child SP", "IP", "Call Site"]);
        let mut frames = Vec::new();
        for f in &st.frames {
            let sp = if f.kind == FrameKind::Explicit {
                f.frame.unwrap_or(f.sp)
            } else {
                f.sp
            };
            t.add_row(vec![fmt_addr(sp), fmt_addr(f.ip), frame_text(f)]);
            frames.push(ClrStackFrame {
                kind: f.kind,
                sp: hex(f.sp),
                ip: hex(f.ip),
                frame: f.frame.map(hex),
                frame_name: f.frame_name.clone(),
                method_desc: f.method_desc.map(hex),
                method: f.method.clone(),
                method_error: f.method_error.clone(),
            });
        }
        text.push_str(&render(&t));
        if let Some(why) = &st.incomplete {
            text.push_str(&format!("<the walk stopped: {why}>\n"));
        }
        text.push('\n');
        out.push(ClrStackThread {
            os_id: st.os_id,
            managed_id: st.managed_id,
            thread: hex(st.thread),
            frames,
            incomplete: st.incomplete.clone(),
        });
    }
    Ok(Output::new("clrstack", &out, text))
}

// ------------------------------------------------------------------------------------- pstacks

#[derive(Serialize)]
pub struct PStacks {
    pub threads: usize,
    pub roots: Vec<crate::tree::Node>,
    /// Threads whose walk stopped early: (OS id, why).
    pub incomplete: Vec<(u64, String)>,
}

fn pstacks(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let all = m.get_flag("all");
    if m.get_flag("async") {
        return crate::asyncs::pstacks_async(s, all);
    }
    let c = clr(s)?;
    let stacks = walk_all(&c)?;
    let mut root = crate::tree::Node::default();
    let mut n = 0;
    let mut incomplete = Vec::new();
    for st in &stacks {
        let mut frames: Vec<&str> = st.methods().collect();
        if let Some(why) = &st.incomplete {
            incomplete.push((st.os_id, why.clone()));
        }
        if frames.is_empty() {
            continue;
        }
        frames.reverse();
        n += 1;
        root.insert(&frames, st.os_id);
    }
    let mut text = crate::tree::render(&root.children, all);
    text.push_str(&format!(
        "\n\n==> {n} threads with {} roots\n",
        root.children.len()
    ));
    for (id, why) in &incomplete {
        text.push_str(&format!("thread {id:#x}: the walk stopped: {why}\n"));
    }
    let r = PStacks {
        threads: n,
        roots: root.children,
        incomplete,
    };
    Ok(Output::of("pstacks", r, text))
}

// --------------------------------------------------------------------------------------- ip2md

#[derive(Serialize)]
pub struct Ip2Md {
    pub ip: String,
    pub kind: Option<clrdata::model::stack::CodeKind>,
    pub method_start: Option<String>,
    pub method_desc: Option<String>,
    pub module: Option<String>,
    pub token: Option<String>,
    pub method: Option<String>,
    pub error: Option<String>,
}

fn ip2md(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let ip = parse_address(m.get_one::<String>("ip").map(String::as_str).unwrap_or(""))
        ?;
    let w = StackWalker::for_target(&c.rt, &c.names);
    let r = w.ip_to_method(ip)?;
    let Some((ci, f)) = r else {
        return Err(CommandError::not_found(
            format!("{ip:#x}"),
            "not managed code (no RangeSection holds it)",
        ));
    };
    let out = Ip2Md {
        ip: hex(ip),
        kind: Some(ci.kind),
        method_start: Some(hex(ci.method_start)),
        method_desc: f.method_desc.map(hex),
        module: f.module.map(hex),
        token: f.token.map(|t| format!("{t:08x}")),
        method: f.method.clone(),
        error: f.method_error.clone(),
    };
    let mut text = String::new();
    if let Some(md) = &out.method_desc {
        text.push_str(&format!("MethodDesc:   {md}\n"));
    }
    text.push_str(&format!(
        "Method Name:  {}\n",
        out.method.as_deref().unwrap_or("<unknown>")
    ));
    if let Some(mo) = &out.module {
        text.push_str(&format!("Module:       {mo}\n"));
    }
    if let Some(t) = &out.token {
        text.push_str(&format!("mdToken:      {t}\n"));
    }
    text.push_str(&format!(
        "Code start:   {}\nCode kind:    {:?}\n",
        out.method_start.as_deref().unwrap_or("?"),
        ci.kind
    ));
    if let Some(e) = &out.error {
        text.push_str(&format!("Note:         {e}\n"));
    }
    Ok(Output::new("ip2md", &out, text))
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
    pub managed_id: Option<u32>,
    pub thread: Option<String>,
    pub frames: Vec<MixedFrameOut>,
    pub gaps: Vec<String>,
    pub incomplete: Option<String>,
}

fn stack(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let ids = select_os_threads(s, m)?;
    // Without a CLR the walker can read (another runtime, none at all): native frames only.
    let c = s.clr();
    let mut no_clr = None;
    let walks: Vec<clrdata::model::stack::MixedStack> = match &c {
        Ok(c) => {
            let managed =
                c.rt.threads()
                    .map_err(|e| CommandError::clr("reading the thread list", e))?;
            let w = StackWalker::for_target(&c.rt, &c.names);
            ids.iter()
                .map(|&id| {
                    let td = managed.iter().find(|t| t.os_id == id && id != 0);
                    w.walk_mixed(id, td)
                })
                .collect()
        }
        Err(e) => {
            no_clr = Some(e.clone());
            let t: &dyn dumpreader::Target = &*s.target;
            let nm = clrdata::model::stack::NativeModules::new(t);
            ids.iter()
                .map(|&id| {
                    let regs = s
                        .target
                        .threads()
                        .iter()
                        .find(|t| t.id as u64 == id)
                        .map(|t| clrdata::model::stack::Regs::from_context(&t.context));
                    clrdata::model::stack::walk_native(&nm, id, regs)
                })
                .collect()
        }
    };
    let mut text = String::new();
    if let Some(e) = &no_clr {
        text.push_str(&format!("<native frames only: no CLR to read: {e}>\n"));
    }
    let mut out = Vec::new();
    for (id, st) in ids.iter().copied().zip(walks) {
        match st.managed_id {
            Some(mid) => text.push_str(&format!("OS Thread Id: {id:#x} ({mid})\n")),
            None => text.push_str(&format!("OS Thread Id: {id:#x} (no managed thread)\n")),
        }
        let mut t = table(&["#", "Child-SP", "RetAddr", "Call Site"]);
        let mut frames = Vec::new();
        // The return address of a frame is the IP of the next non-explicit frame.
        let real: Vec<usize> = (0..st.frames.len())
            .filter(|&i| st.frames[i].kind != FrameKind::Explicit)
            .collect();
        for (i, f) in st.frames.iter().enumerate() {
            let ret = (f.kind != FrameKind::Explicit)
                .then(|| real.iter().find(|&&j| j > i).map(|&j| st.frames[j].ip))
                .flatten();
            let sp = if f.kind == FrameKind::Explicit {
                f.frame.unwrap_or(f.sp)
            } else {
                f.sp
            };
            let site = match f.kind {
                FrameKind::Native => f
                    .native
                    .as_ref()
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| hex(f.ip)),
                _ => frame_text(f),
            };
            t.add_row(vec![
                format!("{i:02x}"),
                fmt_addr(sp),
                ret.map(fmt_addr).unwrap_or_else(|| "-".repeat(16)),
                site.clone(),
            ]);
            let n = f.native.as_ref();
            frames.push(MixedFrameOut {
                kind: f.kind,
                sp: hex(sp),
                ip: hex(f.ip),
                ret_addr: ret.map(hex),
                call_site: site,
                module: n.and_then(|n| n.module.clone()),
                symbol: n.and_then(|n| n.symbol.clone()),
                offset: n.map(|n| hex(n.offset)),
                method_desc: f.method_desc.map(hex),
                method: f.method.clone(),
                frame: f.frame.map(hex),
                frame_name: f.frame_name.clone(),
            });
        }
        text.push_str(&render(&t));
        for g in &st.gaps {
            text.push_str(&format!("<native frames missing: {g}>\n"));
        }
        if let Some(why) = &st.incomplete {
            text.push_str(&format!("<the walk stopped: {why}>\n"));
        }
        text.push('\n');
        out.push(MixedThreadOut {
            os_id: id,
            managed_id: st.managed_id,
            thread: st.thread.map(hex),
            frames,
            gaps: st.gaps.clone(),
            incomplete: st.incomplete.clone(),
        });
    }
    Ok(Output::new("stack", &out, text))
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
    pub managed_id: Option<u32>,
    pub stack_start: String,
    pub stack_end: String,
    pub objects: Vec<DsoRow>,
    pub note: Option<String>,
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
        .ok_or_else(|| CommandError::not_found(format!("OS thread {os_id:#x}"), "not in the dump"))?;
    let mut regs = clrdata::model::stack::Regs::from_context(&ti.context);
    let parse = |name: &str| -> Result<Option<u64>, CommandError> {
        m.get_one::<String>(name)
            .map(|t| parse_address(t))
            .transpose()
    };
    let top = parse("top")?;
    let bottom = parse("bottom")?;
    if let Some(t) = top {
        // An explicit range: no registers, as SOS scans only the range then.
        regs = clrdata::model::stack::Regs::default();
        regs.gpr[clrdata::model::stack::unwind::RSP] = t;
    }
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
    let reader = clrdata::model::objects::ObjectReader::new(&c.rt, &c.names);
    let found = clrdata::model::dso::stack_objects(&reader, heap, &regs, end);
    let managed_id =
        c.rt.threads()
            .ok()
            .and_then(|ts| ts.iter().find(|t| t.os_id == os_id).map(|t| t.managed_id));
    let mut rows = Vec::new();
    let mut t = table(&["SP/REG", "Object", "Name"]);
    for o in &found.objects {
        let name = c.type_name(o.method_table);
        let string = (o.method_table == c.rt.globals.string_mt)
            .then(|| reader.string_value(o.object, 256).ok().map(|(v, _)| v))
            .flatten();
        let loc = match (o.register, o.slot) {
            (Some(r), _) => r.to_string(),
            (None, Some(a)) => fmt_addr(a),
            (None, None) => String::new(),
        };
        let shown = match &string {
            Some(v) => format!("{name}    {v}"),
            None => name.clone(),
        };
        t.add_row(vec![loc, fmt_addr(o.object), shown]);
        rows.push(DsoRow {
            sp: o.slot.map(hex),
            register: o.register,
            object: hex(o.object),
            method_table: hex(o.method_table),
            type_name: name,
            string,
        });
    }
    let mut text = match managed_id {
        Some(mid) => format!("OS Thread Id: {os_id:#x} ({mid})\n"),
        None => format!("OS Thread Id: {os_id:#x}\n"),
    };
    text.push_str(&render(&t));
    if let Some(n) = &found.note {
        text.push_str(&format!("<{n}>\n"));
    }
    let out = DsoOut {
        os_id,
        managed_id,
        stack_start: hex(found.range.0),
        stack_end: hex(found.range.1),
        objects: rows,
        note: found.note.clone(),
    };
    Ok(Output::new("dumpstackobjects", &out, text))
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
    pub kind: clrdata::model::stack::CodeKind,
    pub method: Option<String>,
    pub method_desc: Option<String>,
    pub start: String,
    pub end: String,
    pub size: u64,
    pub instructions: Vec<UInstruction>,
    pub note: Option<String>,
}

/// WinDbg's address spelling: `00007f02`72a36860`.
fn tick(a: u64) -> String {
    format!("{:08x}`{:08x}", a >> 32, a & 0xFFFF_FFFF)
}

fn unassemble(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let addr = parse_address(
        m.get_one::<String>("address")
            .map(String::as_str)
            .unwrap_or(""),
    )
    ?;
    let w = StackWalker::for_target(&c.rt, &c.names);
    let code = w.disassemble(addr)?;
    let mut text = String::new();
    text.push_str(match code.kind {
        clrdata::model::stack::CodeKind::Jit => "Normal JIT generated code\n",
        clrdata::model::stack::CodeKind::ReadyToRun => "ReadyToRun code\n",
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
    let mut ins = Vec::new();
    for i in &code.instructions {
        let bytes: String = i.bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut line = format!(
            "{}{} {:<16} {:<7} {}",
            if i.address <= addr && addr < i.address + i.bytes.len() as u64 {
                ">>> "
            } else {
                ""
            },
            tick(i.address),
            bytes,
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
        ins.push(UInstruction {
            address: hex(i.address),
            bytes,
            mnemonic: i.mnemonic.clone(),
            operands: i.operands.clone(),
            target: i.target.map(hex),
            slot: i.slot.map(hex),
            target_name: i.target_name.clone(),
        });
    }
    if let Some(n) = &code.note {
        text.push_str(&format!("<{n}>\n"));
    }
    let out = UOut {
        kind: code.kind,
        method: code.method.clone(),
        method_desc: code.method_desc.map(hex),
        start: hex(code.start),
        end: hex(code.end),
        size: code.end - code.start,
        instructions: ins,
        note: code.note.clone(),
    };
    Ok(Output::new("u", &out, text))
}
