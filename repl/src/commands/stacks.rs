//! Managed threads and stacks: `clrthreads`, `clrstack`, `pstacks`, `ip2md`.

use super::heap::clr;
use super::native::{render, table};
use super::CommandSpec;
use crate::addr::hex;
use crate::addr::{fmt_addr, parse_address};
use crate::output::{CommandError, Output};
use crate::session::{Clr, Session};
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::stack::{FrameKind, StackWalker, ThreadStack};
use clrdata::threads::thread_state_names;
use serde::Serialize;
use std::collections::HashMap;

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
                    "OS thread id (decimal, or hex with 0x); default: the first managed thread",
                ))
        },
        run: clrstack,
    },
    CommandSpec {
        name: "pstacks",
        aliases: &["parallelstacks"],
        about: "every thread's managed stack merged into a tree, root first",
        grammar: || {
            Command::new("pstacks").arg(
                Arg::new("all")
                    .short('a')
                    .long("all")
                    .action(ArgAction::SetTrue)
                    .help("list every thread id of a group (default: at most 4)"),
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
];

fn parse_os_id(t: &str) -> Result<u64, CommandError> {
    let t = t.trim();
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse(),
    };
    r.map_err(|_| CommandError::Usage(format!("'{t}' is not a thread id")))
}

// ---------------------------------------------------------------------------------- clrthreads

#[derive(Serialize)]
struct ClrThread {
    index: usize,
    managed_id: u32,
    os_id: u64,
    thread: String,
    state: u32,
    state_names: Vec<&'static str>,
    gc_mode: &'static str,
    alloc_context: String,
    alloc_limit: String,
    /// .NET 8 keeps no lock count; the DAC reports -1.
    lock_count: i64,
    apartment: &'static str,
    last_exception_handle: Option<String>,
    last_exception: Option<String>,
    last_exception_type: Option<String>,
    tags: Vec<&'static str>,
    dead: bool,
}

#[derive(Serialize)]
struct ClrThreads {
    thread_count: i32,
    unstarted: i32,
    background: i32,
    pending: i32,
    dead: i32,
    finalizer: String,
    threads: Vec<ClrThread>,
}

fn clrthreads(s: &Session, _: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let ts =
        c.rt.thread_store()
            .map_err(|e| CommandError::Failed(e.to_string()))?;
    let threads =
        c.rt.threads()
            .map_err(|e| CommandError::Failed(e.to_string()))?;
    let mut rows = Vec::new();
    for (i, t) in threads.iter().enumerate() {
        let (h, obj) = c.rt.last_thrown_object(t.address).unwrap_or((0, 0));
        let ex_type = (obj != 0)
            .then(|| c.rt.memory().read_u64(obj).ok())
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
    Ok(Output::new("clrthreads", &r, text))
}

// ------------------------------------------------------------------------------------ clrstack

fn walk_all(c: &Clr) -> Result<Vec<ThreadStack>, CommandError> {
    let w = StackWalker::for_target(&c.rt, &c.names);
    w.walk_all()
        .map_err(|e| CommandError::Failed(format!("reading the thread list: {e}")))
}

#[derive(Serialize)]
struct ClrStackFrame {
    kind: FrameKind,
    sp: String,
    ip: String,
    frame: Option<String>,
    frame_name: Option<String>,
    method_desc: Option<String>,
    method: Option<String>,
    method_error: Option<String>,
}

#[derive(Serialize)]
struct ClrStackThread {
    os_id: u64,
    managed_id: u32,
    thread: String,
    frames: Vec<ClrStackFrame>,
    incomplete: Option<String>,
}

fn frame_text(f: &clrdata::stack::StackFrame) -> String {
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
            .ok_or_else(|| CommandError::Failed(format!("no managed thread has OS id {t}")))?;
        vec![st]
    } else {
        all.iter().take(1).collect()
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

/// One node of the merged tree: a frame and the threads passing through it.
#[derive(Serialize, Default)]
struct Node {
    method: String,
    count: usize,
    threads: Vec<u64>,
    children: Vec<Node>,
    #[serde(skip)]
    index: HashMap<String, usize>,
}

impl Node {
    fn insert(&mut self, frames: &[&str], tid: u64) {
        let Some((first, rest)) = frames.split_first() else {
            return;
        };
        let i = match self.index.get(*first) {
            Some(&i) => i,
            None => {
                self.children.push(Node {
                    method: first.to_string(),
                    ..Node::default()
                });
                self.index
                    .insert(first.to_string(), self.children.len() - 1);
                self.children.len() - 1
            }
        };
        let child = &mut self.children[i];
        child.count += 1;
        child.threads.push(tid);
        child.insert(rest, tid);
    }
}

#[derive(Serialize)]
struct PStacks {
    threads: usize,
    roots: Vec<Node>,
    /// Threads whose walk stopped early: (OS id, why).
    incomplete: Vec<(u64, String)>,
}

const PADDING: usize = 5;

fn thread_list(ids: &[u64], all: bool) -> String {
    let shown: Vec<String> = ids
        .iter()
        .take(if all { usize::MAX } else { 4 })
        .map(|i| format!("{i:x}"))
        .collect();
    let mut s = shown.join(",");
    if !all && ids.len() > 4 {
        s.push_str("...");
    }
    s
}

/// chrisnas's renderer: a node's children (fewest threads first) before the node, leaves with
/// their `~~~~ ids` line; a child indented one step unless it holds all the node's threads.
fn render_node(n: &Node, depth: usize, all: bool, out: &mut String) {
    let pad = " ".repeat(PADDING * depth);
    if n.children.is_empty() {
        out.push_str(&format!("\n{pad} ~~~~ {}", thread_list(&n.threads, all)));
        out.push_str(&format!("\n{pad}{:>PADDING$} {}", n.count, n.method));
        return;
    }
    let mut kids: Vec<&Node> = n.children.iter().collect();
    kids.sort_by_key(|k| k.count);
    for k in kids {
        let d = if k.count == n.count { depth } else { depth + 1 };
        render_node(k, d, all, out);
    }
    out.push_str(&format!("\n{pad}{:>PADDING$} {}", n.count, n.method));
}

fn pstacks(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let all = m.get_flag("all");
    let stacks = walk_all(&c)?;
    let mut root = Node::default();
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
    let mut text = String::new();
    for r in &root.children {
        text.push_str("\n________________________________________________");
        render_node(r, 0, all, &mut text);
    }
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
    Ok(Output::new("pstacks", &r, text))
}

// --------------------------------------------------------------------------------------- ip2md

#[derive(Serialize)]
struct Ip2Md {
    ip: String,
    kind: Option<clrdata::stack::CodeKind>,
    method_start: Option<String>,
    method_desc: Option<String>,
    module: Option<String>,
    token: Option<String>,
    method: Option<String>,
    error: Option<String>,
}

fn ip2md(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let ip = parse_address(m.get_one::<String>("ip").map(String::as_str).unwrap_or(""))
        .map_err(CommandError::Usage)?;
    let w = StackWalker::for_target(&c.rt, &c.names);
    let r = w.ip_to_method(ip).map_err(CommandError::Failed)?;
    let Some((ci, f)) = r else {
        return Err(CommandError::Failed(format!(
            "{ip:#x} is not managed code (no RangeSection holds it)"
        )));
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
