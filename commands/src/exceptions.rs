//! Exceptions: `printexception` (`pe`) and `dumpexceptions`.

use crate::addr::{fmt_addr, hex, parse_address};
use crate::output::{CommandError, Output};
use crate::session::clr;
use crate::session::{Clr, Session};
use crate::spec::CommandSpec;
use crate::text::{render, table};
use clap::{Arg, ArgAction, ArgMatches, Command};
use clrdata::analysis::exceptions::{
    current_thread, exception_chain, heap_exceptions, read_exception, ExceptionData,
};
use clrdata::model::objects::ObjectReader;
use clrdata::model::stack::StackWalker;
use clrdata::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;

/// The exception commands.
pub static SPECS: &[CommandSpec] = &[
    CommandSpec {
        name: "printexception",
        aliases: &["pe"],
        about: "an exception: type, message, HResult, recorded stack trace, inner exceptions",
        grammar: || {
            Command::new("printexception")
                .arg(
                    Arg::new("nested")
                        .long("nested")
                        .action(ArgAction::SetTrue)
                        .help("print every inner exception in full (SOS spells it -nested)"),
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
    pub module: Option<String>,
    pub method: Option<String>,
    pub offset: Option<u64>,
    pub error: Option<String>,
}

#[derive(Serialize)]
pub struct ExceptionOut {
    pub address: String,
    pub method_table: String,
    #[serde(rename = "type")]
    pub type_name: String,
    pub message: Option<String>,
    pub hresult: String,
    pub inner_exception: Option<String>,
    pub inner_exception_type: Option<String>,
    pub stack_trace_array: Option<String>,
    pub stack_trace_thread: Option<String>,
    pub stack_trace: Vec<FrameOut>,
    pub stack_trace_string: Option<String>,
    pub remote_stack_trace_string: Option<String>,
    pub notes: Vec<String>,
}

fn exception_out(e: &ExceptionData) -> ExceptionOut {
    ExceptionOut {
        address: hex(e.address),
        method_table: hex(e.mt),
        type_name: e.type_name.clone(),
        message: e.message.clone(),
        hresult: format!("{:08x}", e.hresult as u32),
        inner_exception: (e.inner != 0).then(|| hex(e.inner)),
        inner_exception_type: e.inner_type.clone(),
        stack_trace_array: (e.stack_trace_array != 0).then(|| hex(e.stack_trace_array)),
        stack_trace_thread: e.stack_trace_thread.map(hex),
        stack_trace: e
            .stack_trace
            .iter()
            .map(|f| FrameOut {
                sp: hex(f.sp),
                ip: hex(f.ip),
                method_desc: hex(f.method_desc),
                flags: f.flags,
                module: f.module.clone(),
                method: f.method.clone(),
                offset: f.offset,
                error: f.error.clone(),
            })
            .collect(),
        stack_trace_string: e.stack_trace_string.clone(),
        remote_stack_trace_string: e.remote_stack_trace_string.clone(),
        notes: e.notes.clone(),
    }
}

/// SOS's `printexception` text for one exception.
fn exception_text(e: &ExceptionData) -> String {
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
            fmt_addr(e.inner)
        ));
    } else {
        t.push_str("InnerException:   <none>\n");
    }
    if e.stack_trace.is_empty() {
        t.push_str("StackTrace (generated): <none>\n");
    } else {
        t.push_str("StackTrace (generated):\n");
        t.push_str("    SP               IP               Function\n");
        for f in &e.stack_trace {
            let func = match (&f.method, f.offset) {
                (Some(m), Some(off)) => format!(
                    "{}!{m}+{off:#x}",
                    f.module.as_deref().unwrap_or("<unknown module>")
                ),
                (Some(m), None) => {
                    format!("{}!{m}", f.module.as_deref().unwrap_or("<unknown module>"))
                }
                (None, _) => format!(
                    "<unknown method: MethodDesc {}: {}>",
                    fmt_addr(f.method_desc),
                    f.error.as_deref().unwrap_or("")
                ),
            };
            t.push_str(&format!(
                "    {} {} {func}\n",
                fmt_addr(f.sp).to_uppercase(),
                fmt_addr(f.ip).to_uppercase()
            ));
        }
    }
    t.push('\n');
    t.push_str(&format!(
        "StackTraceString: {}\n",
        e.stack_trace_string.as_deref().unwrap_or("<none>")
    ));
    if let Some(r) = &e.remote_stack_trace_string {
        t.push_str(&format!("RemoteStackTraceString: {r}\n"));
    }
    t.push_str(&format!("HResult: {:08x}\n", e.hresult as u32));
    for n in &e.notes {
        t.push_str(&format!("Note: {n}\n"));
    }
    t
}

#[derive(Serialize)]
pub struct PrintExceptionOut {
    /// Where the exception came from: "address" or "thread".
    pub source: &'static str,
    /// The thread whose last thrown exception this is (when chosen by thread).
    pub thread_os_id: Option<u64>,
    pub thread_managed_id: Option<u32>,
    pub nested: bool,
    /// The exception, then (with -nested) its inner exceptions, outermost first.
    pub exceptions: Vec<ExceptionOut>,
}

fn printexception(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let nested = m.get_flag("nested");
    let mut thread = None;
    let addr = match m.get_one::<String>("address") {
        Some(a) => parse_address(a)?,
        None => {
            let threads =
                c.rt.threads()
                    .map_err(|e| CommandError::clr("reading the thread list", e))?;
            let t = current_thread(s.target.info().crashing_thread, &threads)
                .ok_or_else(|| CommandError::not_found("the dump has no managed thread", ""))?;
            let (_, obj) = c.rt.last_thrown_object(t.address).map_err(|e| {
                CommandError::clr(format!("thread {:#x} ({})", t.os_id, t.managed_id), e)
            })?;
            if obj == 0 {
                return Err(CommandError::NoLastException {
                    os_id: t.os_id,
                    managed_id: t.managed_id,
                });
            }
            thread = Some(*t);
            obj
        }
    };
    let chain = exceptions_at(&c, addr, nested)?;
    let mut text = String::new();
    if let Some(t) = &thread {
        text.push_str(&format!(
            "The last exception thrown on thread {:#x} ({}):\n",
            t.os_id, t.managed_id
        ));
    }
    for (i, e) in chain.iter().enumerate() {
        if i > 0 {
            text.push_str(
                "\nNested exception -------------------------------------------------------------\n",
            );
        }
        text.push_str(&exception_text(e));
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
        exceptions: chain.iter().map(exception_out).collect(),
    };
    Ok(Output::of("printexception", r, text))
}

fn exceptions_at(c: &Clr, addr: u64, nested: bool) -> Result<Vec<ExceptionData>, CommandError> {
    let r = ObjectReader::new(&c.rt, &c.names);
    let w = StackWalker::new(&c.rt, &c.names, Default::default());
    let res = if nested {
        exception_chain(&r, &w, addr)
    } else {
        read_exception(&r, &w, addr).map(|e| vec![e])
    };
    Ok(res?)
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

#[derive(Serialize)]
pub struct DumpExceptionsOut {
    pub total: usize,
    pub exceptions: Vec<HeapException>,
    pub groups: Vec<Group>,
    pub errors: Vec<String>,
}

fn dumpexceptions(s: &Session, m: &ArgMatches) -> Result<Output, CommandError> {
    let c = clr(s)?;
    let heap = c.heap()?;
    let filter = m.get_one::<String>("type").map(|t| t.to_lowercase());
    let r = ObjectReader::new(&c.rt, &c.names);
    let w = StackWalker::new(&c.rt, &c.names, Default::default());
    let (found, mut errors) = heap_exceptions(&r, heap);
    let mut list = Vec::new();
    let mut groups: BTreeMap<(String, Option<String>), Vec<u64>> = BTreeMap::new();
    for (i, (addr, mt)) in found.iter().enumerate() {
        if i % 256 == 0 && s.control.requested() {
            return Err(CommandError::Cancelled);
        }
        let name = r.type_name(*mt);
        if let Some(f) = &filter {
            if !name.to_lowercase().contains(f) {
                continue;
            }
        }
        match read_exception(&r, &w, *addr) {
            Ok(e) => {
                groups
                    .entry((e.type_name.clone(), e.message.clone()))
                    .or_default()
                    .push(e.address);
                list.push(HeapException {
                    address: hex(e.address),
                    method_table: hex(e.mt),
                    type_name: e.type_name,
                    message: e.message,
                    hresult: format!("{:08x}", e.hresult as u32),
                    inner_exception: (e.inner != 0).then(|| hex(e.inner)),
                    stack_frames: e.stack_trace.len(),
                });
            }
            Err(e) => errors.push(format!("{addr:#x}: {e}")),
        }
    }
    let mut gs: Vec<Group> = groups
        .into_iter()
        .map(|((t, msg), addrs)| Group {
            type_name: t,
            message: msg,
            count: addrs.len(),
            addresses: addrs.into_iter().map(hex).collect(),
        })
        .collect();
    gs.sort_by(|a, b| b.count.cmp(&a.count).then(a.type_name.cmp(&b.type_name)));
    let mut t = table(&["Address", "MethodTable", "Type", "Message"]);
    for e in &list {
        t.add_row(vec![
            fmt_addr(found_addr(&e.address)),
            fmt_addr(found_addr(&e.method_table)),
            e.type_name.clone(),
            e.message.clone().unwrap_or_default(),
        ]);
    }
    let mut text = render(&t);
    text.push_str(&format!("\nTotal: {} exception objects\n\n", list.len()));
    let mut g = table(&["Count", "Type", "Message"]);
    for gr in &gs {
        g.add_row(vec![
            gr.count.to_string(),
            gr.type_name.clone(),
            gr.message.clone().unwrap_or_else(|| "<none>".into()),
        ]);
    }
    text.push_str(&render(&g));
    for e in &errors {
        text.push_str(&format!("error: {e}\n"));
    }
    let out = DumpExceptionsOut {
        total: list.len(),
        exceptions: list,
        groups: gs,
        errors,
    };
    Ok(Output::of("dumpexceptions", out, text))
}

fn found_addr(h: &str) -> u64 {
    u64::from_str_radix(h.trim_start_matches("0x"), 16).unwrap_or(0)
}
