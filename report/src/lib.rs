//! `dumpshell report`: one self-contained HTML page of a dump, drawn from the JSON documents
//! dumpshell's commands print (docs/json.md): the triage summary, parallel stacks as Visual
//! Studio draws them, async chains, the causality graph, the heap's top types, exceptions,
//! locks and deadlock cycles, the thread pool and the thread list. Also a page for a set of
//! dumps grouped in buckets ([`BucketSet`]).
//!
//! The page loads nothing (inline style, inline SVG, inline script, and a Content-Security-Policy
//! that forbids every fetch), reads the same with scripts off (the layouts are computed here;
//! the script only expands, highlights and filters), and prints. Every string from a dump is
//! escaped ([`html::esc`]).
//!
//! ```no_run
//! let mut r = report::Report::new("hang.dmp");
//! r.pstacks = Some(serde_json::json!({"schema": 1, "command": "pstacks", "result": {"threads": 0, "roots": [], "incomplete": []}}));
//! let page: String = r.render();
//! ```

pub mod asyncs;
pub mod chains;
pub mod graph;
pub mod html;
pub mod page;
pub mod pstacks;
pub mod sections;

use html::{arr, esc, slug, tid, Html};
use serde_json::Value;
use std::fmt::Write as _;

/// A line of saved output that is not a JSON document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {error}")]
pub struct JsonLineError {
    /// The line's number (from 1).
    pub line: usize,
    /// What the JSON parser says.
    pub error: String,
}

/// The documents of one dump, one per command: each the command's JSON document as printed
/// with `--json` (`{"schema":1,"command":..,"result":..}`, or `{.., "error": ..}` when the
/// command failed), or the bare `result`. `None`: not run (its section is left out and named in
/// a note).
#[derive(Debug, Default, Clone)]
pub struct Report {
    /// The dump's name as the page shows it (a file name).
    pub title: String,
    /// `dumpshell triage <dump> --json`.
    pub triage: Option<Value>,
    /// `info`.
    pub info: Option<Value>,
    /// `clrthreads`.
    pub clrthreads: Option<Value>,
    /// `pstacks` (thread stacks).
    pub pstacks: Option<Value>,
    /// `pstacks --async` (async logical stacks).
    pub pstacks_async: Option<Value>,
    /// `dumpasync`.
    pub dumpasync: Option<Value>,
    /// `causality`.
    pub causality: Option<Value>,
    /// `dumpheap -stat`.
    pub dumpheap: Option<Value>,
    /// `dumpexceptions`.
    pub dumpexceptions: Option<Value>,
    /// `printexception` / `pe` (best with `-nested`).
    pub printexception: Option<Value>,
    /// `syncblk`.
    pub syncblk: Option<Value>,
    /// `deadlock`.
    pub deadlock: Option<Value>,
    /// `threadpool`.
    pub threadpool: Option<Value>,
}

/// A failed command's error as its JSON document gives it (docs/json.md, "Errors").
#[derive(Clone, Copy, Debug)]
pub struct Failure<'a> {
    /// The error's kind (`clr`, `no_heap`, ...).
    #[allow(dead_code)]
    pub kind: &'a str,
    /// Its sentence.
    pub message: &'a str,
}

/// A document as the sections see it.
#[derive(Clone, Copy)]
pub(crate) enum Doc<'a> {
    Missing,
    /// The command failed: its error's kind and sentence.
    Failed {
        kind: &'a str,
        message: &'a str,
    },

    Ok(&'a Value),
}

impl<'a> Doc<'a> {
    fn of(v: &'a Option<Value>) -> Doc<'a> {
        match v {
            None | Some(Value::Null) => Doc::Missing,
            Some(v) => {
                if v.get("schema").is_some() || v.get("command").is_some() {
                    if let Some(e) = v.get("error") {
                        // {kind, ...fields, message} (docs/json.md, "Errors")
                        return Doc::Failed {
                            kind: e["kind"].as_str().unwrap_or(""),
                            message: e["message"].as_str().or(e.as_str()).unwrap_or(""),
                        };
                    }
                    if let Some(r) = v.get("result") {
                        return Doc::Ok(r);
                    }
                }
                Doc::Ok(v)
            }
        }
    }
    fn ok(self) -> Option<&'a Value> {
        match self {
            Doc::Ok(v) => Some(v),
            _ => None,
        }
    }
    fn result(self) -> Result<Option<&'a Value>, Failure<'a>> {
        match self {
            Doc::Ok(v) => Ok(Some(v)),
            Doc::Missing => Ok(None),
            Doc::Failed { kind, message } => Err(Failure { kind, message }),
        }
    }
    fn present(self) -> bool {
        !matches!(self, Doc::Missing)
    }
}

/// The page's sections: (anchor, title).
pub const SECTIONS: [(&str, &str); 9] = [
    ("summary", "Summary"),
    ("pstacks", "Parallel stacks"),
    ("chains", "Async chains"),
    ("causality", "Causality"),
    ("heap", "Heap"),
    ("exceptions", "Exceptions"),
    ("locks", "Locks"),
    ("threadpool", "Thread pool"),
    ("threads", "Threads"),
];

/// The commands a full report runs, in the order [`Report::add`] expects them when their
/// documents come as one JSON-lines stream (`dumpshell <dump> -c .. -c .. --json`).
pub const COMMANDS: [&str; 12] = [
    "info",
    "clrthreads",
    "pstacks",
    "pstacks --async",
    "dumpasync",
    "causality",
    "dumpheap -stat",
    "dumpexceptions",
    "pe -nested",
    "syncblk",
    "deadlock",
    "threadpool",
];

impl Report {
    pub fn new(title: impl Into<String>) -> Report {
        Report {
            title: title.into(),
            ..Report::default()
        }
    }

    /// Files a document under its command (the envelope's `command`, aliases included). A
    /// `pstacks` result with `chains` is `pstacks --async`; a failed `pstacks` (whose document
    /// does not say which) fills `pstacks`, then `pstacks_async`. Returns the document back when
    /// its command is not one the report draws.
    pub fn add(&mut self, doc: Value) -> Result<(), Value> {
        let cmd = doc
            .get("command")
            .and_then(Value::as_str)
            .map(|c| {
                c.split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_ascii_lowercase()
            })
            .unwrap_or_default();
        let slot = match cmd.as_str() {
            "triage" => &mut self.triage,
            "info" | "dumpinfo" => &mut self.info,
            "clrthreads" => &mut self.clrthreads,
            "pstacks" | "parallelstacks" => {
                let is_async = doc["result"].get("chains").is_some();
                let failed = doc.get("error").is_some();
                if is_async || (failed && self.pstacks.is_some()) {
                    &mut self.pstacks_async
                } else {
                    &mut self.pstacks
                }
            }
            "dumpasync" => &mut self.dumpasync,
            "causality" => &mut self.causality,
            "dumpheap" => &mut self.dumpheap,
            "dumpexceptions" => &mut self.dumpexceptions,
            "printexception" | "pe" => &mut self.printexception,
            "syncblk" => &mut self.syncblk,
            "deadlock" => &mut self.deadlock,
            "threadpool" => &mut self.threadpool,
            _ => return Err(doc),
        };
        *slot = Some(doc);
        Ok(())
    }

    /// A report from the JSON lines `dumpshell <dump> -c .. --json` prints (one document per
    /// line; blank lines skipped). Documents of other commands are ignored.
    pub fn from_json_lines(title: impl Into<String>, text: &str) -> Result<Report, JsonLineError> {
        let mut r = Report::new(title);
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(line).map_err(|error| JsonLineError {
                line: n + 1,
                error: error.to_string(),
            })?;
            let _ = r.add(v);
        }
        Ok(r)
    }

    /// The whole page.
    pub fn render(&self) -> String {
        let mut h = Html::default();
        let title = if self.title.is_empty() {
            "dump"
        } else {
            &self.title
        };
        h.raw(&page::head(&format!("{title} — dumpshell report")));
        let _ = write!(
            h,
            "<body><script>{}</script><header class=\"top\"><h1>dumpshell report<small>{}</small></h1><nav>",
            page::JS_ERRORS,
            esc(title)
        );
        for (a, t) in self.sections_present() {
            let _ = write!(h, "<a href=\"#{a}\">{t}</a>");
        }
        h.raw("</nav></header>");
        h.raw(&page::markers());
        h.raw("<main>");
        self.body(&mut h, "");
        h.raw("</main>");
        footer(&mut h);
        let _ = writeln!(h, "<script>{}</script></body></html>", page::JS);
        h.s
    }

    fn sections_present(&self) -> Vec<(&'static str, &'static str)> {
        SECTIONS
            .iter()
            .copied()
            .filter(|(a, _)| self.section_inputs(a).iter().any(|d| d.present()))
            .collect()
    }

    fn section_inputs(&self, a: &str) -> Vec<Doc<'_>> {
        let d = |v| Doc::of(v);
        match a {
            "summary" => vec![d(&self.triage), d(&self.info)],
            "pstacks" => vec![d(&self.pstacks), d(&self.pstacks_async)],
            "chains" => vec![d(&self.dumpasync), d(&self.causality)],
            "causality" => vec![d(&self.causality), d(&self.deadlock), d(&self.syncblk)],
            "heap" => vec![d(&self.dumpheap)],
            "exceptions" => vec![d(&self.printexception), d(&self.dumpexceptions)],
            "locks" => vec![d(&self.deadlock), d(&self.syncblk)],
            "threadpool" => vec![d(&self.threadpool)],
            "threads" => vec![d(&self.clrthreads)],
            _ => vec![],
        }
    }

    /// The inputs not given, as command names.
    pub fn missing(&self) -> Vec<&'static str> {
        let all: [(&Option<Value>, &'static str); 13] = [
            (&self.triage, "triage"),
            (&self.info, "info"),
            (&self.clrthreads, "clrthreads"),
            (&self.pstacks, "pstacks"),
            (&self.pstacks_async, "pstacks --async"),
            (&self.dumpasync, "dumpasync"),
            (&self.causality, "causality"),
            (&self.dumpheap, "dumpheap -stat"),
            (&self.dumpexceptions, "dumpexceptions"),
            (&self.printexception, "pe"),
            (&self.syncblk, "syncblk"),
            (&self.deadlock, "deadlock"),
            (&self.threadpool, "threadpool"),
        ];
        all.iter()
            .filter(|(v, _)| !Doc::of(v).present())
            .map(|(_, n)| *n)
            .collect()
    }

    /// The sections, element ids prefixed with `p`.
    fn body(&self, h: &mut Html, p: &str) {
        let missing = self.missing();
        if !missing.is_empty() {
            let _ = write!(
                h,
                "<p class=\"missing\">Not in this report (no input given): <code>{}</code>. Their sections, or parts, are left out.</p>",
                missing.join("</code>, <code>")
            );
        }
        let triage = Doc::of(&self.triage);
        let info = Doc::of(&self.info);
        let pst = Doc::of(&self.pstacks);
        let psa = Doc::of(&self.pstacks_async);
        let da = Doc::of(&self.dumpasync);
        let ca = Doc::of(&self.causality);
        let dl = Doc::of(&self.deadlock);
        let sb = Doc::of(&self.syncblk);
        let ct = Doc::of(&self.clrthreads);

        // The crashing thread (highlighted in the stacks).
        let crashing = info
            .ok()
            .and_then(|i| i["crashing_thread"].as_u64())
            .or_else(|| {
                triage
                    .ok()
                    .and_then(|t| t["dump_exception"]["thread_id"].as_u64())
            })
            .or_else(|| {
                triage
                    .ok()
                    .and_then(|t| t["current_exception"]["thread_os_id"].as_u64())
            });
        let thread_boxes = pst.ok().map(|r| pstacks::boxes(arr(&r["roots"])));

        // summary
        if triage.present() || info.present() {
            open(h, p, "summary", "Summary", "triage, info");
            for (n, d) in [("triage", triage), ("info", info)] {
                if let Doc::Failed { message: e, .. } = d {
                    failed(h, n, e);
                }
            }
            if let Some(e) = triage.ok().and_then(|t| t["error"].as_str()) {
                failed(h, "triage", e);
            }
            let note = if triage.present() {
                None
            } else {
                Some("The triage (dumpshell triage --json) was not given: only the dump's facts are shown.")
            };
            let present: Vec<&str> = self.sections_present().iter().map(|(a, _)| *a).collect();
            sections::summary(h, triage.ok(), info.ok(), note, p, &present);
            close(h);
        }

        // parallel stacks
        if pst.present() || psa.present() {
            open(
                h,
                p,
                "pstacks",
                "Parallel stacks",
                "pstacks, pstacks --async",
            );
            let managed: std::collections::HashMap<u64, u64> = ct
                .ok()
                .map(|c| {
                    arr(&c["threads"])
                        .iter()
                        .filter_map(|t| Some((t["os_id"].as_u64()?, t["managed_id"].as_u64()?)))
                        .collect()
                })
                .unwrap_or_default();
            let names = |t: u64| managed.get(&t).map(|m| format!("({m})"));
            match pst {
                Doc::Failed { message: e, .. } => failed(h, "pstacks", e),
                Doc::Ok(r) => {
                    let b = thread_boxes.as_ref().unwrap();
                    let threads = r["threads"].as_u64().unwrap_or(0);
                    let _ = write!(
                        h,
                        "<p class=\"lead\">{} managed {} merged into {} {} (frames shared by the same threads), the outermost frames at the bottom, as Visual Studio's Parallel Stacks window draws them. Click a box for its thread ids; hover a frame for its full name. The app's own frames are in bold{}.</p>",
                        html::num(threads),
                        if threads == 1 { "stack" } else { "stacks" },
                        html::num(b.boxes.len() as u64),
                        if b.boxes.len() == 1 { "box" } else { "boxes" },
                        if crashing.is_some() { "; the crashing thread's boxes are yellow" } else { "" }
                    );
                    ps_toolbar(h, &format!("{p}pst"));
                    pstacks::render(
                        h,
                        b,
                        pstacks::IdKind::Threads,
                        &format!("{p}pst"),
                        crashing,
                        &names,
                    );
                    let inc = arr(&r["incomplete"]);
                    if !inc.is_empty() {
                        let _ = write!(
                            h,
                            "<details class=\"problems\"><summary>{} stopped early</summary><ul>",
                            inc.len()
                        );
                        for i in inc {
                            let _ = write!(
                                h,
                                "<li><span class=\"mono\">{}</span>: {}</li>",
                                i[0].as_u64().map(tid).unwrap_or_default(),
                                esc(i[1].as_str().unwrap_or(""))
                            );
                        }
                        h.raw("</ul></details>");
                    }
                }
                Doc::Missing => {}
            }
            match psa {
                Doc::Failed { message: e, .. } => failed(h, "pstacks --async", e),
                Doc::Ok(r) => {
                    let b = pstacks::boxes(arr(&r["roots"]));
                    if b.boxes.is_empty() {
                        h.raw("<h3>Async logical stacks</h3><p class=\"note\">No pending async chain.</p>");
                    } else {
                        let _ = write!(
                            h,
                            "<h3>Async logical stacks</h3><p class=\"lead\">{} pending async {} merged the same way (Visual Studio's Tasks view): the outermost awaiting method at the bottom; the top line of a leaf says what its innermost method awaits.</p>",
                            html::num(r["chains"].as_u64().unwrap_or(0)),
                            if r["chains"].as_u64() == Some(1) { "chain" } else { "chains" }
                        );
                        ps_toolbar(h, &format!("{p}psa"));
                        pstacks::render(
                            h,
                            &b,
                            pstacks::IdKind::Tasks,
                            &format!("{p}psa"),
                            None,
                            &|_| None,
                        );
                    }
                }
                Doc::Missing => {}
            }
            close(h);
        }

        // async chains and the causality graph share the joined chains
        let chain_list = asyncs::chains(da.ok(), ca.ok());
        let groups = asyncs::groups(&chain_list);
        if da.present() || ca.present() {
            open(h, p, "chains", "Async chains", "dumpasync, causality");
            for (n, d) in [("dumpasync", da), ("causality", ca)] {
                if let Doc::Failed { message: e, .. } = d {
                    failed(h, n, e);
                }
            }
            if da.ok().is_some() || ca.ok().is_some() {
                if let (Some(d), Some(c)) = (da.ok(), ca.ok()) {
                    let nd = arr(&d["chains"]).len();
                    let nc = arr(&c["chains"]).len();
                    if nd != nc {
                        let _ = write!(
                            h,
                            "<p class=\"note\">dumpasync lists {nd} chains and causality {nc}: the chains drawn are causality's (with dumpasync's boxes where the two agree).</p>"
                        );
                    }
                }
                let _ = write!(
                    h,
                    "<p class=\"note\">Each column is one logical stack read as a call stack: what it awaits on top, then its innermost method down to the outermost. Threads blocked synchronously on the chain (Task.Wait, .Result, GetResult()) hang below it.</p>"
                );
                chains::render(h, &chain_list, &groups, &format!("{p}ch"));
                if let Some(d) = da.ok() {
                    if let Some(why) = d["blocked_threads_unavailable"].as_str() {
                        let _ = write!(
                            h,
                            "<p class=\"note\">Blocked threads not read: {}</p>",
                            esc(why)
                        );
                    }
                    let errs = arr(&d["errors"]);
                    if !errs.is_empty() {
                        let _ = write!(h, "<details class=\"problems\"><summary>dumpasync: {} errors</summary><ul>", errs.len());
                        for e in errs.iter().take(100) {
                            let _ = write!(h, "<li>{}</li>", esc(&html::vtext(e)));
                        }
                        h.raw("</ul></details>");
                    }
                }
            }
            close(h);
        }
        if ca.present() || dl.present() || sb.present() {
            open(
                h,
                p,
                "causality",
                "Causality",
                "causality, deadlock, syncblk",
            );
            for (n, d) in [("causality", ca), ("deadlock", dl), ("syncblk", sb)] {
                if let Doc::Failed { message: e, .. } = d {
                    failed(h, n, e);
                }
            }
            let g = graph::build(&chain_list, &groups, dl.ok(), sb.ok(), ct.ok());
            h.raw("<div class=\"legend\"><span><i class=\"e-waits\" style=\"border-color:#bc4c00\"></i>waits on (blocked)</span><span><i style=\"border-color:#bc4c00;border-top-style:dashed\"></i>Monitor.Wait</span><span><i style=\"border-color:#8250df\"></i>owns</span><span><i style=\"border-color:#1a7f37\"></i>runs</span><span><i style=\"border-color:#0969da\"></i>awaits</span><span><i style=\"border-color:#cf222e;border-top-width:3px\"></i>deadlock</span><span><b style=\"border-color:#bc4c00;background:#fff8f2;border-radius:7px\"></b>thread</span><span><b style=\"border-color:#0969da;background:#f0f6ff\"></b>async chain</span><span><b style=\"border-color:#8250df;background:#fbefff;border-radius:1px\"></b>lock</span><span><b style=\"border-color:#cf222e;background:#ffebe9\"></b>TaskCompletionSource</span><span><b style=\"border-color:#9a6700;background:#fff8c5\"></b>SemaphoreSlim</span><span><b style=\"border-color:#0969da;background:#ddf4ff\"></b>timer</span><span><b style=\"border-color:#8250df;background:#fbefff\"></b>channel</span></div>");
            let _ = write!(
                h,
                "<p class=\"note\">Who waits for what: threads on the left, the async chains they block on or run, then what those chains await and the locks threads hold or wait for. Threads with the same waits are one node. Hover a node to light its edges.</p>"
            );
            graph::render(h, &g, &format!("{p}cg"));
            if let Some(c) = ca.ok() {
                let un = arr(&c["unresolved_waits"]);
                if !un.is_empty() {
                    let _ = write!(h, "<details class=\"problems\"><summary>{} thread waits not linked to a chain</summary><ul>", un.len());
                    for u in un.iter().take(200) {
                        let _ = write!(
                            h,
                            "<li><span class=\"mono\">{}</span>: {}</li>",
                            u[0].as_u64().map(tid).unwrap_or_default(),
                            esc(u[1].as_str().unwrap_or(""))
                        );
                    }
                    h.raw("</ul></details>");
                }
            }
            close(h);
        }

        // heap
        match Doc::of(&self.dumpheap) {
            Doc::Missing => {}
            d => {
                open(h, p, "heap", "Heap", "dumpheap -stat");
                match d {
                    Doc::Failed { message: e, .. } => failed(h, "dumpheap -stat", e),
                    Doc::Ok(r) => sections::heap(h, r, &format!("{p}hp")),
                    Doc::Missing => {}
                }
                close(h);
            }
        }
        // exceptions
        let pe = Doc::of(&self.printexception);
        let de = Doc::of(&self.dumpexceptions);
        if pe.present() || de.present() {
            open(h, p, "exceptions", "Exceptions", "pe, dumpexceptions");
            // "no last thrown exception" is an answer, not a failure
            let pe_r = match pe {
                Doc::Failed {
                    kind: "no_last_exception",
                    message,
                } => {
                    let _ = write!(h, "<p class=\"lead\">{}.</p>", esc(&cap_first(message)));
                    Ok(None)
                }
                d => d.result(),
            };
            sections::exceptions(h, pe_r, triage.ok(), de.result());
            close(h);
        }
        // locks
        if dl.present() || sb.present() {
            open(h, p, "locks", "Locks", "deadlock, syncblk");
            sections::locks(h, dl.result(), sb.result(), &format!("{p}lk"));
            close(h);
        }
        // thread pool
        match Doc::of(&self.threadpool) {
            Doc::Missing => {}
            d => {
                open(h, p, "threadpool", "Thread pool", "threadpool");
                match d {
                    Doc::Failed { message: e, .. } => failed(h, "threadpool", e),
                    Doc::Ok(r) => sections::threadpool(h, r),
                    Doc::Missing => {}
                }
                close(h);
            }
        }
        // threads
        if ct.present() {
            open(h, p, "threads", "Threads", "clrthreads");
            match ct {
                Doc::Failed { message: e, .. } => failed(h, "clrthreads", e),
                Doc::Ok(r) => {
                    let leaf = thread_boxes
                        .as_ref()
                        .map(pstacks::leaf_box_of)
                        .unwrap_or_default();
                    let inner: std::collections::HashMap<u64, String> = thread_boxes
                        .as_ref()
                        .map(|b| {
                            leaf.iter()
                                .filter_map(|(&t, &i)| {
                                    Some((t, html::short_method(b.boxes[i].frames.last()?)))
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    let pre = format!("{p}pst");
                    sections::threads(
                        h,
                        r,
                        &format!("{p}th"),
                        &|t| leaf.get(&t).map(|i| format!("{pre}b{i}")),
                        &|t| inner.get(&t).cloned(),
                    );
                }
                Doc::Missing => {}
            }
            close(h);
        }
    }
}

fn cap_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn ps_toolbar(h: &mut Html, id: &str) {
    let _ = write!(
        h,
        "<div class=\"toolbar\"><input type=\"search\" class=\"ps-filter\" data-svg=\"{id}svg\" placeholder=\"find a frame\" aria-label=\"find a frame\"><label><input type=\"checkbox\" class=\"fit-toggle\" data-target=\"{id}wrap\"> fit to width</label></div>"
    );
}

fn open(h: &mut Html, p: &str, id: &str, title: &str, src: &str) {
    let _ = write!(
        h,
        "<section class=\"sec\" id=\"{p}{id}\"><h2>{}<span class=\"src\">{}</span></h2>",
        esc(title),
        esc(src)
    );
}

fn close(h: &mut Html) {
    h.raw("</section>");
}

fn failed(h: &mut Html, cmd: &str, e: &str) {
    let _ = write!(
        h,
        "<p class=\"failed\"><b>{}</b> failed: {}</p>",
        esc(cmd),
        esc(e)
    );
}

fn footer(h: &mut Html) {
    h.raw("<footer>Made by dumpshell report from the JSON documents of dumpshell's commands (docs/json.md). Self-contained: no network, no external fonts; the pictures are laid out when the page is made and read the same with scripts off.</footer>");
}

/// A bucket of a set of dumps: a signature (what the dumps have in common), how many dumps
/// fell in it, and some of their names.
#[derive(Debug, Clone, Default)]
pub struct Bucket {
    pub signature: String,
    pub count: u64,
    pub dumps: Vec<String>,
}

impl Bucket {
    /// From a record `{signature, count, dumps[]}`.
    pub fn from_json(v: &Value) -> Option<Bucket> {
        Some(Bucket {
            signature: v["signature"].as_str()?.to_owned(),
            count: v["count"]
                .as_u64()
                .unwrap_or_else(|| arr(&v["dumps"]).len() as u64),
            dumps: arr(&v["dumps"])
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        })
    }
}

/// A page for many dumps: the buckets (with counts and example dumps, each linking to its
/// dump's part of the page), a table of the dumps with their findings, then each dump's
/// sections.
#[derive(Debug, Default, Clone)]
pub struct BucketSet {
    pub title: String,
    pub buckets: Vec<Bucket>,
    /// (dump name, its documents).
    pub dumps: Vec<(String, Report)>,
}

impl BucketSet {
    pub fn render(&self) -> String {
        let mut h = Html::default();
        let title = if self.title.is_empty() {
            "dumps"
        } else {
            &self.title
        };
        h.raw(&page::head(&format!("{title} — dumpshell report")));
        let _ = write!(
            h,
            "<body><script>{}</script><header class=\"top\"><h1>dumpshell report<small>{}</small></h1><nav><a href=\"#buckets\">Buckets</a><a href=\"#dumps\">Dumps</a>",
            page::JS_ERRORS,
            esc(title)
        );
        for (k, (name, _)) in self.dumps.iter().enumerate().take(30) {
            let _ = write!(
                h,
                "<a href=\"#{}\">{}</a>",
                dump_anchor(k, name),
                esc(&html::elide_middle(name, 28))
            );
        }
        h.raw("</nav></header>");
        h.raw(&page::markers());
        h.raw("<main>");
        // buckets
        let anchor_of = |name: &str| {
            self.dumps
                .iter()
                .enumerate()
                .find(|(_, (n, _))| n == name)
                .map(|(k, (n, _))| dump_anchor(k, n))
        };
        h.raw("<div class=\"index\">");
        if !self.buckets.is_empty() {
            let total: u64 = self.buckets.iter().map(|b| b.count).sum();
            let _ = write!(
                h,
                "<section class=\"sec idx\" id=\"buckets\"><h2>Buckets<span class=\"src\">{} dumps in {} buckets</span></h2><table class=\"grid buckets\"><thead><tr><th class=\"num\">dumps</th><th class=\"bar-col\">share</th><th>signature</th><th>examples</th></tr></thead><tbody>",
                html::num(total),
                self.buckets.len()
            );
            let max = self
                .buckets
                .iter()
                .map(|b| b.count)
                .max()
                .unwrap_or(1)
                .max(1);
            for b in &self.buckets {
                let ex: Vec<String> = b
                    .dumps
                    .iter()
                    .take(5)
                    .map(|d| match anchor_of(d) {
                        Some(a) => format!("<a href=\"#{a}\">{}</a>", esc(d)),
                        None => esc(d),
                    })
                    .collect();
                let more = b.dumps.len().saturating_sub(5);
                let _ = write!(
                    h,
                    "<tr class=\"bucket-row\"><td class=\"num\">{}</td><td class=\"bar-col\"><div class=\"bar\"><span style=\"width:{:.1}%\"></span></div></td><td class=\"sig\">{}</td><td class=\"mono small\">{}{}</td></tr>",
                    html::num(b.count),
                    b.count as f64 * 100.0 / max as f64,
                    esc(&b.signature),
                    ex.join(", "),
                    if more > 0 { format!(" +{more}") } else { String::new() }
                );
            }
            h.raw("</tbody></table></section>");
        }
        let _ = write!(
            h,
            "<section class=\"sec idx\" id=\"dumps\"><h2>Dumps<span class=\"src\">{} on this page</span></h2><table class=\"grid\"><thead><tr><th>dump</th><th>runtime</th><th>findings</th></tr></thead><tbody>",
            self.dumps.len()
        );
        for (k, (name, r)) in self.dumps.iter().enumerate() {
            let t = Doc::of(&r.triage).ok();
            let rt = t.and_then(|t| t["runtime"].as_str()).unwrap_or("-");
            let _ = write!(
                h,
                "<tr class=\"dump-row\"><td class=\"mono\"><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td></tr>",
                dump_anchor(k, name),
                esc(name),
                esc(rt),
                findings(t)
            );
        }
        h.raw("</tbody></table></section></div>");
        for (k, (name, r)) in self.dumps.iter().enumerate() {
            let a = dump_anchor(k, name);
            let _ = write!(
                h,
                "<article class=\"dump\" id=\"{a}\"><h1>{}</h1><nav>",
                esc(name)
            );
            for (s, t) in r.sections_present() {
                let _ = write!(h, "<a href=\"#{a}-{s}\">{t}</a>");
            }
            h.raw("</nav>");
            r.body(&mut h, &format!("{a}-"));
            h.raw("</article>");
        }
        h.raw("</main>");
        footer(&mut h);
        let _ = writeln!(h, "<script>{}</script></body></html>", page::JS);
        h.s
    }
}

/// The anchor of the k-th dump of a set: `d3-hang-net10-dmp`.
pub fn dump_anchor(k: usize, name: &str) -> String {
    format!("d{k}-{}", slug(name))
}

/// A dump's findings as badges (from its triage).
fn findings(t: Option<&Value>) -> String {
    let Some(t) = t else {
        return "<span class=\"muted\">no triage</span>".into();
    };
    if let Some(e) = t["error"].as_str() {
        return format!("<span class=\"failed\">{}</span>", esc(e));
    }
    let mut v = Vec::new();
    if let Some(ty) = t["current_exception"]["type"].as_str() {
        v.push(format!("<span class=\"v-exc\"><span class=\"badge\">EXCEPTION</span></span> <span class=\"mono\">{}</span>", esc(&html::short_type(ty))));
    } else if t["dump_exception"].is_object() {
        v.push("<span class=\"v-crash\"><span class=\"badge\">CRASH</span></span>".into());
    }
    if !arr(&t["deadlocks"]).is_empty() {
        v.push("<span class=\"v-deadlock\"><span class=\"badge\">DEADLOCK</span></span>".into());
    }
    if t["thread_pool_starvation"].is_object() {
        v.push("<span class=\"v-starved\"><span class=\"badge\">STARVATION</span></span>".into());
    }
    if let Some(n) = t["async_chain_count"].as_u64().filter(|n| *n > 0) {
        v.push(format!(
            "<span class=\"v-wait\"><span class=\"badge\">WAITS</span></span> {n} chains"
        ));
    }
    if v.is_empty() {
        "<span class=\"muted\">none</span>".into()
    } else {
        v.join(" ")
    }
}
