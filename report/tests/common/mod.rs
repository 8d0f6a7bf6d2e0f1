//! Shared by the report's tests: the documents of a corpus dump made through the command
//! library at test time, what a page drawn from them must hold (counted from the JSON, not
//! from the renderer), and a little reading of the page's markup.

#![allow(dead_code)]

use commands::Session;
use report::Report;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The corpus dumps the tests draw: every scenario with something to picture (stacks, async
/// chains and their causes, a deadlock, a crash, a starved pool, a heap), .NET 8, 9, 10 and 11,
/// Linux and a Windows minidump.
pub const DUMPS: [&str; 10] = [
    "hang-net10",
    "async-net10",
    "asyncreal-net10",
    "deadlock-net10",
    "crash-net10",
    "threadpool-net10",
    "heap-net10",
    "asyncreal-net9-debug",
    "async-net8",
    "windows-hang-net10",
];

/// The entry, when this machine has its runtime's files (else says so and skips; with
/// `DUMPSHELL_REQUIRE_FRAMEWORKS=1` the harness fails instead).
pub fn entry(name: &str) -> Option<tests::Entry> {
    let e = tests::entry(name);
    if !e.has_framework() {
        eprintln!(
            "SKIPPED {name}: the .NET {} runtime pack is not in the NuGet cache (dumps/fetch-frameworks.sh restores it)",
            e.runtime_version()
        );
        return None;
    }
    Some(e)
}

/// Runs every command a report draws through the command library (as `dumpshell <dump> -c
/// <cmd> --json` would) and the triage, and files their documents.
pub fn report_of(e: &tests::Entry) -> Report {
    report_of_path(&e.name, &e.dump_path(), &e.open_options())
}

pub fn report_of_path(name: &str, path: &Path, opts: &dumpreader::OpenOptions) -> Report {
    let s = Session::open_with(path, opts).unwrap_or_else(|err| panic!("{name}: {err}"));
    let mut r = Report::new(name);
    for cmd in report::COMMANDS {
        let doc = match commands::execute(&s, cmd) {
            Ok(Some((out, _))) => out.json_document(),
            Ok(None) => continue,
            Err(err) => err.json_document(cmd.split_whitespace().next().unwrap()),
        };
        r.add(doc)
            .unwrap_or_else(|d| panic!("{cmd}: not filed: {d}"));
    }
    let t = commands::triage::triage(path, opts);
    r.triage = Some(json!({"schema": 1, "command": "triage", "result": t}));
    r
}

/// A dump made on demand (not committed): its path, manifest and how to open it.
pub struct OnDemand {
    pub name: &'static str,
    pub dump: PathBuf,
    pub manifest: Value,
    pub opts: dumpreader::OpenOptions,
}

/// The dumps made on demand that are here: the hung ASP.NET Core service
/// (`sudo dumps/aspnet/generate.sh`: 43 requests, Kestrel) and 1,000 blocked threads
/// (`dumps/bench/generate-large.sh --rt net10 threads-1000`). Each absent one is named loudly;
/// `DUMPSHELL_REQUIRE_ASPNET=1` / `DUMPSHELL_REQUIRE_THREADS_1000=1` make its absence a failure.
pub fn on_demand() -> Vec<OnDemand> {
    let root = tests::workspace_root().join("dumps").join("build");
    let mut v = Vec::new();
    let aspnet = root.join("aspnet");
    let bench = root.join("bench");
    let wanted = [
        (
            "aspnethang",
            aspnet.join("aspnethang.dmp"),
            aspnet.join("aspnethang.manifest.json"),
            std::fs::read_to_string(aspnet.join("aspnethang.runtime"))
                .map(|s| PathBuf::from(s.trim()))
                .ok(),
            "DUMPSHELL_REQUIRE_ASPNET",
            "sudo dumps/aspnet/generate.sh",
        ),
        (
            "threads-1000-net10",
            bench.join("threads-1000-net10.dmp"),
            bench.join("threads-1000-net10.manifest.json"),
            Some(bench.join("app-net10")),
            "DUMPSHELL_REQUIRE_THREADS_1000",
            "dumps/bench/generate-large.sh --rt net10 threads-1000",
        ),
    ];
    for (name, dump, manifest, images, var, how) in wanted {
        if !dump.is_file() || !manifest.is_file() {
            assert!(
                std::env::var_os(var).is_none(),
                "{var} is set but {} is absent (made by {how})",
                dump.display()
            );
            eprintln!(
                "!!! {} absent: the report of this on-demand dump is not checked ({how} makes it)",
                dump.display()
            );
            continue;
        }
        v.push(OnDemand {
            name,
            dump,
            manifest: serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap(),
            opts: dumpreader::OpenOptions {
                image_search_path: images.into_iter().collect(),
                recorded_paths: false,
                ..Default::default()
            },
        });
    }
    v
}

/// A document's result, when it has one.
pub fn result(v: &Option<Value>) -> Option<&Value> {
    v.as_ref().and_then(|d| d.get("result"))
}

pub fn arr(v: &Value) -> &[Value] {
    v.as_array().map(|a| a.as_slice()).unwrap_or(&[])
}

/// What a merged tree must become: a box starts at each root and at each node that is not
/// its parent's only child with the parent's count; every node is one frame line.
#[derive(Debug, Default, PartialEq)]
pub struct TreeExpect {
    pub boxes: usize,
    pub frames: usize,
    pub edges: usize,
    /// The boxes' thread counts, sorted.
    pub counts: Vec<u64>,
}

pub fn tree_expect(roots: &[Value]) -> TreeExpect {
    fn walk(n: &Value, starts: bool, t: &mut TreeExpect) {
        let count = n["count"].as_u64().unwrap();
        if starts {
            t.boxes += 1;
            t.counts.push(count);
        }
        t.frames += 1;
        let kids = arr(&n["children"]);
        for k in kids {
            let continues = kids.len() == 1 && k["count"].as_u64() == Some(count);
            walk(k, !continues, t);
        }
    }
    let mut t = TreeExpect::default();
    for r in roots {
        walk(r, true, &mut t);
    }
    t.edges = t.boxes - roots.len();
    t.counts.sort();
    t
}

/// The counts a page must show, from the documents (as the page's self check names them).
#[derive(Debug, Default)]
pub struct Expect {
    pub ps_boxes: usize,
    pub ps_edges: usize,
    pub chains: u64,
    pub chain_cols: usize,
    pub graph_nodes: usize,
    pub graph_edges: usize,
    pub heap_rows: usize,
    pub exc_rows: usize,
    pub sb_rows: usize,
    pub wait_rows: usize,
    pub thread_rows: usize,
    pub tp_rows: usize,
    pub rings: usize,
}

pub fn expect(r: &Report) -> Expect {
    let mut x = Expect::default();
    for d in [&r.pstacks, &r.pstacks_async] {
        if let Some(res) = result(d) {
            let t = tree_expect(arr(&res["roots"]));
            x.ps_boxes += t.boxes;
            x.ps_edges += t.edges;
        }
    }
    let da = result(&r.dumpasync);
    let ca = result(&r.causality);
    x.chains = match (ca, da) {
        (Some(c), _) => arr(&c["chains"]).len() as u64,
        (None, Some(d)) => arr(&d["chains"])
            .iter()
            .map(|c| c["count"].as_u64().unwrap_or(1))
            .sum(),
        _ => 0,
    };
    let chains = report::asyncs::chains(da, ca);
    let groups = report::asyncs::groups(&chains);
    x.chain_cols = groups.len().min(report::chains::MAX_ALL);
    let g = report::graph::build(
        &chains,
        &groups,
        result(&r.deadlock),
        result(&r.syncblk),
        result(&r.clrthreads),
    );
    if da.is_some() || ca.is_some() || result(&r.deadlock).is_some() || result(&r.syncblk).is_some()
    {
        x.graph_nodes = g.nodes.len();
        x.graph_edges = g.edges.len();
    }
    if let Some(h) = result(&r.dumpheap) {
        x.heap_rows = arr(&h["statistics"]).len().min(report::sections::HEAP_ROWS);
    }
    if let Some(d) = result(&r.dumpexceptions) {
        x.exc_rows = arr(&d["groups"]).len().min(report::sections::SHOWN_ROWS);
    }
    if let Some(s) = result(&r.syncblk) {
        x.sb_rows = arr(&s["sync_blocks"]).len();
    }
    if let Some(d) = result(&r.deadlock) {
        x.wait_rows = report::sections::wait_groups(arr(&d["waits"])).len();
        x.rings = arr(&d["cycles"]).len();
    }
    if let Some(c) = result(&r.clrthreads) {
        x.thread_rows = arr(&c["threads"]).len().min(report::sections::THREAD_ROWS);
    }
    if let Some(t) = result(&r.threadpool) {
        x.tp_rows = arr(&t["worker_threads"]).len();
    }
    x
}

/// The opening tags starting with `start` (e.g. `<g class="ps-box`), in order.
pub fn tags<'a>(html: &'a str, start: &str) -> Vec<&'a str> {
    let mut v = Vec::new();
    let mut at = 0;
    while let Some(i) = html[at..].find(start) {
        let s = at + i;
        let e = s + html[s..].find('>').unwrap();
        v.push(&html[s..=e]);
        at = e;
    }
    v
}

/// An attribute's value in one tag, unescaped.
pub fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let i = tag.find(&key)? + key.len();
    let j = tag[i..].find('"')? + i;
    Some(unesc(&tag[i..j]))
}

pub fn unesc(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The markup of the element whose opening tag holds `id="<id>"`, up to `close`.
pub fn element<'a>(html: &'a str, id: &str, close: &str) -> Option<&'a str> {
    let key = format!(" id=\"{id}\"");
    let i = html.find(&key)?;
    let s = html[..i].rfind('<')?;
    let e = html[s..].find(close)? + s + close.len();
    Some(&html[s..e])
}

/// Counts the occurrences of `pat`.
pub fn count(html: &str, pat: &str) -> usize {
    html.matches(pat).count()
}

/// Where screenshots and pages are written: `target/report-screenshots/`.
pub fn out_dir() -> std::path::PathBuf {
    let d = tests::workspace_root()
        .join("target")
        .join("report-screenshots");
    std::fs::create_dir_all(&d).unwrap();
    d
}
