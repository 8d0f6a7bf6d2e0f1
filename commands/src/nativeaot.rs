//! What the commands read of a NativeAOT app (`clrdata::nativeaot`): `clrthreads`' thread
//! list, and `crashinfo` (the crash info buffer the runtime wrote before aborting).

use crate::addr::hex;
use crate::output::{CommandError, Output, Render};
use crate::session::{clr, nativeaot_of, Session};
use crate::spec::CommandSpec;
use crate::text::{render, table};
use clap::{ArgMatches, Command};
use clrdata::model::stack::aot::{
    AotFrameKind, AotFrameNames, AotStack, AotStackEnd, AotStackWalker,
};
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
            "NativeAOT ThreadStore {}: {} threads\n{}Managed thread ids: {MANAGED_IDS_UNPUBLISHED}\n",
            self.thread_store,
            self.threads.len(),
            render(&t)
        )
    }
}

/// Why `clrthreads` on a NativeAOT app gives no managed thread ids: what the runtime publishes
/// does not reach them (checked on the 8.0.31, 10.0.12 and 11.0.0 corpus dumps).
pub const MANAGED_IDS_UNPUBLISHED: &str = "not shown: the id is a field of the managed \
    System.Threading.Thread, reached only through the thread static Thread.t_currentThread, and \
    nothing the runtime publishes locates it (the debug header's thread entries, 8: ThreadBuffer, \
    10: RuntimeThreadLocals, are m_pNext, the allocation context, m_threadId, the stress log and \
    the ExInfo chain; 11's Thread contract n1 adds the state, stack bounds and transition frame; \
    11's ManagedTypes gives System.Threading.Thread's _managedThreadId offset but no path to the \
    object; ILC's thread-static storage is named only by the .dbg)";

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
            AotTypeNames::Unnamed {
                reason,
                looked_for,
                by_crash_info,
            } => {
                out.push_str(&format!(
                    "Types are unnamed (counted by MethodTable): {reason}\n"
                ));
                if *by_crash_info > 0 {
                    out.push_str(&format!(
                        "  {by_crash_info} named by the crash info (the types of the exceptions \
                         it records)\n"
                    ));
                }
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

// ------------------------------------------------------------------------------ stacks

/// `clrstack` on a NativeAOT app: each thread's frames by native unwinding, the executable's
/// named from its symbol file or said `<stripped>`.
#[derive(Serialize)]
pub struct AotClrStack {
    /// The runtime.
    pub nativeaot: AotSummary,
    /// Where the executable's frames are named from.
    pub names: AotFrameNames,
    /// The threads' stacks.
    pub stacks: Vec<AotStack>,
}

fn end_text(end: &AotStackEnd) -> String {
    match end {
        AotStackEnd::ThreadStart => "<the walk reached the thread's first frame>".to_string(),
        AotStackEnd::Stopped { reason } => format!("<the walk stopped: {reason}>"),
    }
}

fn names_text(n: &AotFrameNames) -> String {
    match n {
        AotFrameNames::Symbols { file, functions } => {
            format!("Frame names: ILC's symbols ({functions} functions) from {file}\n")
        }
        AotFrameNames::Unnamed { reason, looked_for } => {
            let mut t = format!("The executable's frames are <stripped> (unnamed): {reason}\n");
            if !looked_for.is_empty() {
                t.push_str(&format!("  looked for: {}\n", looked_for.join(", ")));
            }
            t
        }
    }
}

impl Render for AotClrStack {
    fn render(&self) -> String {
        let mut out = String::new();
        for st in &self.stacks {
            out.push_str(&format!(
                "OS Thread Id: {:#x} (NativeAOT Thread {})\n",
                st.os_id,
                hex(st.thread)
            ));
            let mut t = table(&["Child SP", "IP", "Call Site"]);
            for f in &st.frames {
                let mut site = f.call_site();
                if f.kind == AotFrameKind::Native {
                    site = format!("[native] {site}");
                }
                if f.caller_by_frame_pointer {
                    site.push_str(" (left by its frame pointer: no CFI)");
                }
                t.add_row(vec![hex(f.sp), hex(f.ip), site]);
            }
            out.push_str(&render(&t));
            if let Some(g) = &st.gap {
                out.push_str(&format!(
                    "<native frames missing: the walk from the registers stopped ({}); it went on \
                     from the thread's transition frame {}>\n",
                    g.reason,
                    hex(g.transition_frame)
                ));
            }
            out.push_str(&end_text(&st.end));
            out.push_str("\n\n");
        }
        out.push_str(&names_text(&self.names));
        out
    }
}

fn aot_walk(s: &Session, aot: &NativeAot) -> Result<(AotFrameNames, Vec<AotStack>), CommandError> {
    let threads = aot
        .threads(&*s.target)
        .map_err(|e| CommandError::clr("reading the NativeAOT thread list", e))?;
    let w = AotStackWalker::new(&*s.target, aot);
    let stacks = threads.iter().map(|t| w.walk(t)).collect();
    Ok((w.names, stacks))
}

/// `clrstack` of a NativeAOT app: the thread `os_id` (None: the current thread when it is the
/// runtime's, else the first), or every thread (`all`).
pub fn aot_clrstack(
    s: &Session,
    aot: &NativeAot,
    all: bool,
    os_id: Option<u64>,
) -> Result<Output, CommandError> {
    let (names, stacks) = aot_walk(s, aot)?;
    let chosen: Vec<AotStack> = if all {
        stacks
    } else if let Some(id) = os_id {
        let st = stacks
            .into_iter()
            .find(|st| st.os_id == id)
            .ok_or_else(|| {
                CommandError::not_found(
                    format!("the NativeAOT thread with OS id {id:#x}"),
                    "none in the ThreadStore",
                )
            })?;
        vec![st]
    } else {
        let cur = s.current_os_thread();
        let i = stacks
            .iter()
            .position(|t| Some(t.os_id) == cur)
            .unwrap_or(0);
        stacks.into_iter().skip(i).take(1).collect()
    };
    Ok(Output::rendered(
        "clrstack",
        AotClrStack {
            nativeaot: aot.summary(),
            names,
            stacks: chosen,
        },
    ))
}

/// `pstacks` of a NativeAOT app: the threads' frames in the executable merged into a tree.
pub fn aot_pstacks(s: &Session, aot: &NativeAot, all: bool) -> Result<Output, CommandError> {
    let (names, stacks) = aot_walk(s, aot)?;
    let mut root = crate::tree::Node::default();
    let mut n = 0;
    let mut incomplete = Vec::new();
    for st in &stacks {
        if let AotStackEnd::Stopped { reason } = &st.end {
            incomplete.push((st.os_id, reason.clone()));
        }
        let frames = st.app_methods_root_first();
        if frames.is_empty() {
            continue;
        }
        n += 1;
        root.insert(&frames, st.os_id);
    }
    Ok(Output::rendered(
        "pstacks",
        AotPStacks {
            stacks: crate::tree::PStacks {
                threads: n,
                roots: root.children,
                incomplete,
                all,
            },
            names,
        },
    ))
}

/// `pstacks` on a NativeAOT app: the merged tree of the executable's frames.
#[derive(Serialize)]
pub struct AotPStacks {
    /// The tree, as `pstacks` gives it.
    #[serde(flatten)]
    pub stacks: crate::tree::PStacks,
    /// Where the frames are named from.
    pub names: AotFrameNames,
}

impl Render for AotPStacks {
    fn render(&self) -> String {
        let mut t = self.stacks.render();
        t.push_str(&names_text(&self.names));
        t
    }
}
