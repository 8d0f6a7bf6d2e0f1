//! What the commands read of a NativeAOT app (`clrdata::nativeaot`): `clrthreads`' thread
//! list, and `crashinfo` (the crash info buffer the runtime wrote before aborting).

use crate::addr::hex;
use crate::output::{CommandError, Output, Render};
use crate::session::{clr, nativeaot_of, Session};
use crate::spec::CommandSpec;
use crate::text::{render, table};
use clap::{ArgMatches, Command};
use clrdata::nativeaot::{AotSummary, AotThread, AotTypeNames, NativeAot};
use serde::Serialize;
use serde_json::Value;

/// The NativeAOT-only commands.
pub static SPECS: &[CommandSpec] = &[CommandSpec {
    name: "crashinfo",
    aliases: &[],
    about: "a NativeAOT app's crash info: the JSON its runtime wrote before aborting (reason, \
            exception, stack)",
    grammar: || Command::new("crashinfo"),
    run: crashinfo,
}];

/// `clrthreads` on a NativeAOT app: the ThreadStore's list.
#[derive(Serialize)]
pub struct AotThreads {
    /// The runtime.
    pub nativeaot: AotSummary,
    /// The ThreadStore's address.
    pub thread_store: String,
    /// Its threads, in list order.
    pub threads: Vec<AotThread>,
}

impl Render for AotThreads {
    fn render(&self) -> String {
        let mut t = table(&["OSID", "Thread", "State", "Transition frame", "Exceptions"]);
        for th in &self.threads {
            t.add_row(vec![
                format!(
                    "{} ({:#x}){}",
                    th.os_id,
                    th.os_id,
                    if th.in_dump {
                        ""
                    } else {
                        " (no such OS thread in the dump)"
                    }
                ),
                hex(th.address),
                format!("{:#x} {}", th.state, th.state_names.join("|")),
                match th.transition_frame {
                    0 => "none".to_string(),
                    u64::MAX => "top of stack".to_string(),
                    0xffff_ffff_ffff_fffe => "interrupted".to_string(),
                    f => hex(f),
                },
                th.exceptions
                    .iter()
                    .map(|&e| hex(e))
                    .collect::<Vec<_>>()
                    .join(" "),
            ]);
        }
        format!(
            "NativeAOT ThreadStore {}: {} threads (managed thread ids are not read on \
             NativeAOT yet)\n{}",
            self.thread_store,
            self.threads.len(),
            render(&t)
        )
    }
}

/// `clrthreads` of a NativeAOT app.
pub fn aot_clrthreads(s: &Session, aot: &NativeAot) -> Result<Output, CommandError> {
    let cerr = |e| CommandError::clr("reading the NativeAOT thread list", e);
    let store = aot.thread_store(&*s.target).map_err(cerr)?;
    let threads = aot.threads(&*s.target).map_err(cerr)?;
    Ok(Output::rendered(
        "clrthreads",
        AotThreads {
            nativeaot: aot.summary(),
            thread_store: hex(store),
            threads,
        },
    ))
}

/// `crashinfo`'s result.
#[derive(Serialize)]
pub struct CrashInfoOut {
    /// The runtime.
    pub nativeaot: AotSummary,
    /// The buffer's address.
    pub address: String,
    /// The JSON the runtime wrote, as written.
    pub crash_info: Value,
}

/// SOS's names of the crash reasons (`reason`).
const REASONS: &[(&str, &str)] = &[
    ("0", "Unknown"),
    ("1", "UnhandledException"),
    ("2", "EnvironmentFailFast"),
    ("3", "InternalFailFast"),
];

fn render_exception(out: &mut String, e: &Value, indent: &str) {
    let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
    out.push_str(&format!("{indent}Exception object:   {}\n", s("address")));
    out.push_str(&format!("{indent}Exception type:     {}\n", s("type")));
    out.push_str(&format!("{indent}HResult:            {}\n", s("hr")));
    out.push_str(&format!("{indent}Message:            {}\n", s("message")));
    if let Some(stack) = e["stack"].as_array() {
        out.push_str(&format!(
            "{indent}StackTrace:\n{indent}    IP               Function\n"
        ));
        for f in stack {
            let fs = |k: &str| f[k].as_str().unwrap_or("").to_string();
            out.push_str(&format!(
                "{indent}    {:<16} {} + {}\n",
                fs("ip"),
                fs("name"),
                fs("offset")
            ));
        }
    }
    if let Some(inner) = e["inner"].as_array() {
        for i in inner {
            out.push_str(&format!("{indent}InnerException:\n"));
            render_exception(out, i, &format!("{indent}    "));
        }
    }
}

impl Render for CrashInfoOut {
    fn render(&self) -> String {
        let j = &self.crash_info;
        let s = |k: &str| j[k].as_str().unwrap_or("").to_string();
        let reason = s("reason");
        let reason_name = REASONS
            .iter()
            .find(|(r, _)| *r == reason)
            .map_or(reason.clone(), |(_, n)| n.to_string());
        let mut out = format!(
            "Crash info at {} (version {})\nCrashReason:        {reason_name}\nThreadId:           \
             {}\nRuntimeBaseAddress: {}\nRuntimeVersion:     {}\nMessage:            {}\n",
            self.address,
            s("version"),
            s("thread"),
            s("runtime_base"),
            s("runtime_version"),
            s("message"),
        );
        if !j["exception"].is_null() {
            out.push_str("\n** Exception **\n");
            render_exception(&mut out, &j["exception"], "");
        }
        out
    }
}

fn crashinfo(s: &Session, _: &ArgMatches) -> Result<Output, CommandError> {
    let aot =
        match clr(s) {
            Ok(_) => return Err(CommandError::not_found(
                "no crash info",
                "crashinfo reads a NativeAOT app's crash info buffer; this is a CoreCLR process \
                 (printexception reads its exceptions)",
            )),
            Err(e) => match nativeaot_of(s, &e) {
                Some(a) => a?,
                None => return Err(e),
            },
        };
    aot_crashinfo(s, &aot)
}

/// The crash info of a NativeAOT app (`crashinfo`; `printexception` without an address).
pub fn aot_crashinfo(s: &Session, aot: &NativeAot) -> Result<Output, CommandError> {
    let ci = aot
        .crash_info(&*s.target)
        .map_err(|e| CommandError::clr("reading the NativeAOT crash info", e))?
        .ok_or_else(|| {
            CommandError::not_found(
                "no crash info",
                "the NativeAOT runtime's crash info buffer is empty: the app did not crash (an \
                 unhandled exception or FailFast fills it before the abort)",
            )
        })?;
    Ok(Output::rendered(
        "crashinfo",
        CrashInfoOut {
            nativeaot: aot.summary(),
            address: hex(ci.address),
            crash_info: ci.json,
        },
    ))
}

/// `dumpheap -stat` on a NativeAOT app: the census by MethodTable, each type named by the
/// executable's symbol file when it is found (`<app>.dbg`, matched by build id), else unnamed
/// and said so.
#[derive(Serialize)]
pub struct AotHeapStat {
    /// The runtime.
    pub nativeaot: AotSummary,
    /// The census.
    #[serde(flatten)]
    pub census: clrdata::nativeaot::AotCensus,
}

impl Render for AotHeapStat {
    fn render(&self) -> String {
        let c = &self.census;
        let mut t = table(&["MT", "Count", "TotalSize", "Class Name"]);
        for x in c.types.iter().rev() {
            t.add_row(vec![
                hex(x.mt),
                x.count.to_string(),
                x.total_size.to_string(),
                x.name.clone().unwrap_or_else(|| "<unnamed>".to_string()),
            ]);
        }
        let mut out = format!("Statistics:\n{}", render(&t));
        match &c.names {
            AotTypeNames::Symbols {
                file,
                method_tables,
            } => out.push_str(&format!(
                "Type names: ILC's symbol names ({method_tables} MethodTables) from {file}\n"
            )),
            AotTypeNames::Unnamed { reason, looked_for } => {
                out.push_str(&format!(
                    "Types are unnamed (counted by MethodTable): {reason}\n"
                ));
                if !looked_for.is_empty() {
                    out.push_str(&format!("  looked for: {}\n", looked_for.join(", ")));
                }
            }
        }
        out.push_str(&format!(
            "Total {} objects, {} bytes ({} of them in frozen segments); free: {} objects, {} \
             bytes; {} segments\n",
            c.total_objects,
            c.total_size,
            c.frozen_objects,
            c.free_objects,
            c.free_size,
            c.segments
        ));
        for e in &c.errors {
            out.push_str(&format!(
                "Walk stopped in segment {} at {}: {} ({} bytes not walked)\n",
                hex(e.segment),
                hex(e.address),
                e.detail,
                e.skipped
            ));
        }
        out
    }
}

/// `dumpheap -stat` of a NativeAOT app.
pub fn aot_dumpheap_stat(s: &Session, aot: &NativeAot) -> Result<Output, CommandError> {
    let census = aot
        .heap_census(&*s.target)
        .map_err(|e| CommandError::clr("reading the NativeAOT GC heap", e))?;
    Ok(Output::rendered(
        "dumpheap",
        AotHeapStat {
            nativeaot: aot.summary(),
            census,
        },
    ))
}
