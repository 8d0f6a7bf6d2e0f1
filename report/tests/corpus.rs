//! The report drawn from corpus dumps: the documents are made at test time through the command
//! library, and the page is checked against them — every box of the merged stacks, every
//! chain, every link of the causality graph, every table row — and for what a page must never
//! do (load anything, let a dump's string become markup).

mod common;

use common::*;
use report::{Bucket, BucketSet, Report};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The reports of the corpus dumps this machine can read, made once per test binary.
type Reports = Vec<(String, Report)>;

fn reports() -> Reports {
    static CACHE: OnceLock<Mutex<Option<Reports>>> = OnceLock::new();
    let m = CACHE.get_or_init(|| Mutex::new(None));
    let mut g = m.lock().unwrap_or_else(|p| p.into_inner());
    if g.is_none() {
        let mut v = Vec::new();
        for name in DUMPS {
            if let Some(e) = entry(name) {
                v.push((name.to_owned(), report_of(&e)));
            }
        }
        for d in on_demand() {
            v.push((d.name.to_owned(), report_of_path(d.name, &d.dump, &d.opts)));
        }
        assert!(!v.is_empty(), "no corpus dump could be read");
        *g = Some(v);
    }
    g.clone().unwrap()
}

fn svg_of<'a>(page: &'a str, id: &str) -> Option<&'a str> {
    element(page, id, "</svg>")
}

#[test]
fn stacks_are_drawn_as_the_boxes_of_the_merged_tree() {
    for (name, r) in reports() {
        let page = r.render();
        for (doc, id) in [(&r.pstacks, "pstsvg"), (&r.pstacks_async, "psasvg")] {
            let Some(res) = result(doc) else { continue };
            let want = tree_expect(arr(&res["roots"]));
            if want.boxes == 0 {
                continue;
            }
            let svg = svg_of(&page, id).unwrap_or_else(|| panic!("{name}: no {id}"));
            let boxes = tags(svg, "<g class=\"ps-box");
            assert_eq!(boxes.len(), want.boxes, "{name} {id}: boxes");
            let frames: usize = boxes
                .iter()
                .map(|b| attr(b, "data-frames").unwrap().parse::<usize>().unwrap())
                .sum();
            assert_eq!(
                frames, want.frames,
                "{name} {id}: frames = nodes of the tree"
            );
            let mut counts: Vec<u64> = boxes
                .iter()
                .map(|b| attr(b, "data-count").unwrap().parse().unwrap())
                .collect();
            counts.sort();
            assert_eq!(
                counts, want.counts,
                "{name} {id}: thread counts of the boxes"
            );
            let edges = tags(svg, "<path class=\"ps-edge\"");
            assert_eq!(edges.len(), want.edges, "{name} {id}: edges");
            assert_eq!(
                count(svg, "class=\"ps-more\""),
                0,
                "{name}: nothing capped on the corpus"
            );
            // every thread of the tree is in the box table (the expander)
            if id == "pstsvg" {
                let table = element(&page, "pstids", "</details>").unwrap();
                for t in all_ids(arr(&res["roots"])) {
                    assert!(
                        table.contains(&format!("0x{t:x}")),
                        "{name}: thread {t:#x} not listed"
                    );
                }
            }
        }
        // the threads table links each thread to its box
        if let (Some(ct), Some(_)) = (result(&r.clrthreads), result(&r.pstacks)) {
            let rows = tags(&page, "<tr class=\"thread-row");
            assert_eq!(
                rows.len(),
                arr(&ct["threads"]).len().min(report::sections::THREAD_ROWS),
                "{name}: thread rows"
            );
        }
    }
}

fn all_ids(roots: &[Value]) -> Vec<u64> {
    let mut v: Vec<u64> = roots
        .iter()
        .flat_map(|r| arr(&r["threads"]).iter().filter_map(Value::as_u64))
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn every_chain_is_drawn_once_with_the_threads_blocked_on_it() {
    let mut seen_chains = 0;
    for (name, r) in reports() {
        let page = r.render();
        let Some(ca) = result(&r.causality) else {
            continue;
        };
        let chains = arr(&ca["chains"]);
        let cols = tags(&page, "<figure class=\"chain-col\"");
        if chains.is_empty() {
            assert!(cols.is_empty(), "{name}");
            continue;
        }
        seen_chains += chains.len();
        // each chain in exactly one column; a column's count is its chains'
        let entries: usize = cols
            .iter()
            .map(|c| attr(c, "data-entries").unwrap().parse::<usize>().unwrap())
            .sum();
        let total: u64 = cols
            .iter()
            .map(|c| attr(c, "data-count").unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(entries, chains.len(), "{name}: chains drawn");
        assert_eq!(total, chains.len() as u64, "{name}: chains counted");
        // each chain's methods are a column's methods (innermost first)
        let searches: Vec<String> = cols
            .iter()
            .map(|c| attr(c, "data-search").unwrap())
            .collect();
        for c in chains {
            let m: Vec<String> = arr(&c["methods"])
                .iter()
                .map(|m| m.as_str().unwrap().to_lowercase())
                .collect();
            assert!(
                searches.contains(&m.join("\n")),
                "{name}: chain {m:?} not drawn"
            );
        }
        // a column draws as many method boxes as its methods (no cap hit on the corpus)
        for c in &cols {
            let n = attr(c, "data-search").unwrap().split('\n').count();
            assert_eq!(
                attr(c, "data-boxes").unwrap().parse::<usize>().unwrap(),
                n,
                "{name}"
            );
        }
        // groups coalesce chains with the same methods and the same wait: columns with the
        // same methods differ in what they wait on
        let chains_l = report::asyncs::chains(result(&r.dumpasync), Some(ca));
        let groups = report::asyncs::groups(&chains_l);
        for (i, a) in groups.iter().enumerate() {
            for b in &groups[i + 1..] {
                if a.methods == b.methods && a.kind == b.kind {
                    assert!(
                        a.object != b.object || a.own_objects + b.own_objects > 0,
                        "{name}: {a:?} {b:?}"
                    );
                }
            }
            // a shared object is the one every chain of the group waits on
            if let Some(o) = &a.object {
                for &c in &a.chains {
                    assert_eq!(chains_l[c].object_key().as_ref(), Some(o), "{name}");
                }
            }
        }
        // every thread causality links to a chain hangs below that chain's column
        let pills: usize = cols
            .iter()
            .map(|c| attr(c, "data-threads").unwrap().parse::<usize>().unwrap())
            .sum();
        let mut linked = 0;
        for t in arr(&ca["threads"]) {
            let os = t["os_id"].as_u64().unwrap();
            let label = format!("thread 0x{os:x}");
            for ci in arr(&t["chains"]) {
                linked += 1;
                let methods: Vec<String> = arr(&chains[ci.as_u64().unwrap() as usize]["methods"])
                    .iter()
                    .map(|m| m.as_str().unwrap().to_lowercase())
                    .collect();
                let k = searches
                    .iter()
                    .position(|s| *s == methods.join("\n"))
                    .unwrap();
                let fig = &page[page.find(cols[k]).unwrap()..];
                let fig = &fig[..fig.find("</figure>").unwrap()];
                assert!(
                    fig.contains(&label),
                    "{name}: {label} not drawn under its chain"
                );
            }
        }
        assert!(pills >= arr(&ca["threads"]).len().min(linked), "{name}");
        // what each chain awaits is named on top of its column
        for c in chains {
            if let Some(kind) = c["cause"]["kind"].as_str() {
                if kind != "running_on_thread" {
                    assert!(
                        page.contains(&format!("ch-cause cz-{}", kind.replace('_', "-"))),
                        "{name}: {kind}"
                    );
                }
            }
        }
    }
    assert!(
        seen_chains > 20,
        "the async scenarios' chains were not read"
    );
}

#[test]
fn the_causality_graph_links_what_the_documents_link() {
    let mut deadlocks = 0;
    for (name, r) in reports() {
        let ca = result(&r.causality);
        let dl = result(&r.deadlock);
        let chains = report::asyncs::chains(result(&r.dumpasync), ca);
        let groups = report::asyncs::groups(&chains);
        let g = report::graph::build(
            &chains,
            &groups,
            dl,
            result(&r.syncblk),
            result(&r.clrthreads),
        );
        let node_of_thread = |os: u64| {
            g.nodes
                .iter()
                .position(|n| n.kind == report::graph::NodeKind::Thread && n.ids.contains(&os))
                .unwrap_or_else(|| panic!("{name}: thread {os:#x} not in the graph"))
        };
        let node_of_key = |k: &str| g.nodes.iter().position(|n| n.key == k);
        let has = |f: usize, t: usize, k: report::graph::EdgeKind| {
            g.edges
                .iter()
                .any(|e| e.from == f && e.to == t && e.kind == k)
        };
        if let Some(ca) = ca {
            // thread -> the chain group holding each chain it waits on
            for t in arr(&ca["threads"]) {
                let tn = node_of_thread(t["os_id"].as_u64().unwrap());
                for ci in arr(&t["chains"]) {
                    let ci = ci.as_u64().unwrap() as usize;
                    let gi = groups.iter().position(|g| g.chains.contains(&ci)).unwrap();
                    let cn = node_of_key(&format!("c:{gi}")).unwrap();
                    assert!(
                        has(tn, cn, report::graph::EdgeKind::WaitsOn),
                        "{name}: thread -> chain {ci}"
                    );
                }
            }
            // each chain group awaits its object (one edge per group, none for running ones)
            let awaits = g
                .edges
                .iter()
                .filter(|e| e.kind == report::graph::EdgeKind::Awaits)
                .count();
            let want = groups
                .iter()
                .filter(|g| g.kind != "running_on_thread")
                .count();
            assert_eq!(awaits, want, "{name}: awaits edges");
            // groups waiting on one object share its node
            let mut by_obj: HashMap<&str, usize> = HashMap::new();
            for gr in &groups {
                if let Some(o) = &gr.object {
                    *by_obj.entry(o).or_default() += 1;
                }
            }
            for (o, _) in by_obj {
                assert!(
                    node_of_key(&format!("o:{o}")).is_some(),
                    "{name}: object {o}"
                );
            }
        }
        if let Some(dl) = dl {
            for cy in arr(&dl["cycles"]) {
                deadlocks += 1;
                for l in arr(&cy["locks"]) {
                    let ln = node_of_key(&format!("l:{}", l["object"].as_str().unwrap())).unwrap();
                    let w = node_of_thread(l["waiter"]["os_id"].as_u64().unwrap());
                    let o = node_of_thread(l["owner"]["os_id"].as_u64().unwrap());
                    assert!(
                        g.nodes[ln].deadlock && g.nodes[w].deadlock && g.nodes[o].deadlock,
                        "{name}"
                    );
                    assert!(
                        g.edges
                            .iter()
                            .any(|e| e.from == w && e.to == ln && e.deadlock),
                        "{name}: waiter"
                    );
                    assert!(
                        g.edges.iter().any(|e| e.from == o
                            && e.to == ln
                            && e.kind == report::graph::EdgeKind::Owns
                            && e.deadlock),
                        "{name}: owner"
                    );
                }
            }
            // every monitor-enter wait is an edge
            for w in arr(&dl["waits"]) {
                if w["kind"] == "monitor-enter" {
                    let tn = node_of_thread(w["thread"]["os_id"].as_u64().unwrap());
                    let ln = node_of_key(&format!("l:{}", w["object"].as_str().unwrap())).unwrap();
                    assert!(has(tn, ln, report::graph::EdgeKind::WaitsOn), "{name}");
                }
            }
        }
        // the page draws the graph's nodes and edges
        let page = r.render();
        if let Some(svg) = svg_of(&page, "cgsvg") {
            assert_eq!(
                tags(svg, "<g class=\"g-node").len(),
                g.nodes.len(),
                "{name}: nodes"
            );
            assert_eq!(
                tags(svg, "<path class=\"g-edge").len(),
                g.edges.len(),
                "{name}: edges"
            );
        } else {
            assert!(g.nodes.is_empty(), "{name}: graph not drawn");
        }
        // the same documents give the same picture
        assert_eq!(page, r.render(), "{name}: not deterministic");
    }
    assert!(deadlocks > 0, "no deadlock cycle among the dumps read");
}

#[test]
fn tables_hold_every_row_of_their_documents() {
    for (name, r) in reports() {
        let page = r.render();
        let x = expect(&r);
        assert_eq!(
            count(&page, "<tr class=\"heap-row\""),
            x.heap_rows,
            "{name}: heap rows"
        );
        if let Some(h) = result(&r.dumpheap) {
            if let Some(first) = arr(&h["statistics"]).first() {
                let at = page.find("<tr class=\"heap-row\"").unwrap();
                let row = &page[at..at + page[at..].find("</tr>").unwrap()];
                let want = format!(
                    "<td class=\"mono type\">{}</td>",
                    report::html::esc(first["name"].as_str().unwrap())
                );
                assert!(row.ends_with(&want), "{name}: first heap row {row}");
            }
        }
        assert_eq!(
            count(&page, "<tr class=\"exc-row\""),
            x.exc_rows,
            "{name}: exception rows"
        );
        assert_eq!(
            count(&page, "<tr class=\"sb-row\""),
            x.sb_rows,
            "{name}: sync blocks"
        );
        assert_eq!(
            count(&page, "<tr class=\"wait-row\""),
            x.wait_rows,
            "{name}: waits"
        );
        // every waiting thread is in one row
        if let Some(d) = result(&r.deadlock) {
            let n: usize = tags(&page, "<tr class=\"wait-row\"")
                .iter()
                .map(|t| attr(t, "data-threads").unwrap().parse::<usize>().unwrap())
                .sum();
            assert_eq!(n, arr(&d["waits"]).len(), "{name}: waiting threads");
        }
        assert_eq!(
            count(&page, "<svg class=\"ring\""),
            x.rings,
            "{name}: deadlock rings"
        );
        assert_eq!(
            count(&page, "<tr class=\"tp-row\""),
            x.tp_rows,
            "{name}: pool threads"
        );
        // the thread's exception with its whole trace
        if let Some(pe) = result(&r.printexception) {
            let traces = tags(&page, "<ol class=\"trace mono\"");
            let with_frames = arr(&pe["exceptions"])
                .iter()
                .filter(|e| !arr(&e["stack_trace"]).is_empty())
                .count();
            assert_eq!(traces.len(), with_frames, "{name}");
            for e in arr(&pe["exceptions"]) {
                for f in arr(&e["stack_trace"]) {
                    if let Some(m) = f["method"].as_str() {
                        let line = format!(
                            "{}!{}+0x{:x}",
                            f["module"].as_str().unwrap(),
                            m,
                            f["offset"].as_u64().unwrap()
                        );
                        assert!(page.contains(&report::html::esc(&line)), "{name}: {line}");
                    }
                }
            }
        }
        // the summary names the findings of the triage
        let t = result(&r.triage).unwrap();
        assert_eq!(
            page.contains("<a class=\"badge\" href=\"#locks\">DEADLOCK</a>"),
            !arr(&t["deadlocks"]).is_empty(),
            "{name}"
        );
        assert_eq!(
            page.contains("<a class=\"badge\" href=\"#threadpool\">STARVATION</a>"),
            t["thread_pool_starvation"].is_object(),
            "{name}"
        );
        assert_eq!(
            page.contains("<a class=\"badge\" href=\"#chains\">WAITS</a>"),
            !arr(&t["async_groups"]).is_empty(),
            "{name}"
        );
        if let Some(ty) = t["current_exception"]["type"].as_str() {
            assert!(
                page.contains(&format!("<b class=\"mono\">{}</b>", report::html::esc(ty))),
                "{name}"
            );
        }
    }
}

/// The page fetches nothing: no external reference of any kind, a policy forbidding fetches.
fn assert_self_contained(name: &str, page: &str) {
    assert!(
        page.contains("Content-Security-Policy\" content=\"default-src 'none'"),
        "{name}"
    );
    for bad in [
        "<link",
        "<img",
        "<iframe",
        "<object",
        "<embed",
        "<base",
        "<meta http-equiv=\"refresh",
        "@import",
        " src=\"",
        "srcset=\"",
    ] {
        assert!(!page.contains(bad), "{name}: {bad}");
    }
    for href in page.split("href=\"").skip(1) {
        assert!(
            href.starts_with('#'),
            "{name}: a link leaves the page: {}",
            &href[..href.len().min(60)]
        );
    }
    for u in page.split("url(").skip(1) {
        assert!(u.starts_with('#'), "{name}: url({})", &u[..u.len().min(40)]);
    }
    let http = page.matches("http://").count() + page.matches("https://").count();
    let xmlns = page.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
    assert_eq!(
        http, xmlns,
        "{name}: an address other than the SVG namespace"
    );
    assert_eq!(count(page, "<script>"), 2, "{name}: scripts");
    assert_eq!(count(page, "</script>"), 2, "{name}: scripts closed");
}

#[test]
fn the_page_loads_nothing_and_no_dump_string_becomes_markup() {
    let all = reports();
    for (name, r) in &all {
        assert_self_contained(name, &r.render());
    }
    // A hostile dump: every string a dump can hold (frames, types, messages, thread names)
    // set to markup, in real documents.
    let (_, base) = all
        .iter()
        .find(|(n, _)| n == "deadlock-net10" || n == "hang-net10")
        .unwrap()
        .clone();
    let evil = "</script><img src=x onerror=alert(1)><svg onload=alert(2)>\"'&amp;List<String>";
    let mut r = base.clone();
    for d in [
        &mut r.pstacks,
        &mut r.pstacks_async,
        &mut r.dumpasync,
        &mut r.causality,
        &mut r.dumpheap,
        &mut r.syncblk,
        &mut r.deadlock,
        &mut r.clrthreads,
        &mut r.triage,
        &mut r.info,
    ]
    .into_iter()
    .flatten()
    {
        poison(d, evil);
    }
    r.title = evil.into();
    r.dumpexceptions = Some(
        json!({"schema":1,"command":"dumpexceptions","result":{"total":1,"exceptions":[],"groups":[{"type":evil,"message":evil,"count":1,"addresses":[evil]}],"errors":[evil]}}),
    );
    r.printexception = Some(json!({"schema":1,"command":"printexception","error":evil}));
    let page = r.render();
    assert_self_contained("poisoned", &page);
    for raw in ["<img", "<svg onload", "List<String>", "onerror=alert(1)>"] {
        assert!(!page.contains(raw), "a dump string became markup: {raw}");
    }
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"));
    assert!(page.contains("List&lt;String&gt;"));
    // and a bucket page with hostile names
    let set = BucketSet {
        title: evil.into(),
        buckets: vec![Bucket {
            signature: evil.into(),
            count: 1,
            dumps: vec![evil.into()],
        }],
        dumps: vec![(evil.into(), r)],
    };
    let page = set.render();
    assert_self_contained("poisoned set", &page);
    assert!(!page.contains("<img"));
}

/// Replaces every string in the document (keys stay) by `evil`, except the envelope's.
fn poison(v: &mut Value, evil: &str) {
    fn walk(v: &mut Value, evil: &str, depth: usize) {
        match v {
            Value::String(s) if !s.starts_with("0x") => *s = format!("{evil}{s}"),
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, evil, depth + 1)),
            Value::Object(o) => {
                for (k, x) in o.iter_mut() {
                    if depth == 0 && (k == "command" || k == "schema") {
                        continue;
                    }
                    walk(x, evil, depth + 1);
                }
            }
            _ => {}
        }
    }
    walk(v, evil, 0);
}

#[test]
fn failed_commands_are_shown_and_missing_ones_named() {
    let all = reports();
    let (name, full) = &all[0];
    // only stacks given: the other sections are left out and named
    let mut r = Report::new(name.clone());
    r.pstacks = full.pstacks.clone();
    let page = r.render();
    assert!(page.contains("id=\"pstacks\""));
    for s in [
        "summary",
        "chains",
        "causality",
        "heap",
        "exceptions",
        "locks",
        "threadpool",
        "threads",
    ] {
        assert!(
            !page.contains(&format!("<section class=\"sec\" id=\"{s}\"")),
            "{s} drawn without input"
        );
    }
    assert!(page.contains("Not in this report (no input given)"));
    assert!(page.contains("<code>dumpheap -stat</code>"));
    // a failed command: its error, as the document says it
    let mut r = full.clone();
    r.pstacks = Some(json!({"schema": 1, "command": "pstacks", "error": "no CLR to read: <why>"}));
    r.dumpheap =
        Some(json!({"schema": 1, "command": "dumpheap", "error": "the dump holds no GC heap"}));
    let page = r.render();
    assert!(
        page.contains("<p class=\"failed\"><b>pstacks</b> failed: no CLR to read: &lt;why&gt;</p>")
    );
    assert!(page.contains("<b>dumpheap -stat</b> failed: the dump holds no GC heap"));
    // documents filed by their command, bare results accepted
    let mut r = Report::new("x");
    assert!(r
        .add(json!({"schema":1,"command":"pe","error":"e"}))
        .is_ok());
    assert!(r.printexception.is_some());
    assert!(r
        .add(json!({"schema":1,"command":"gcroot","result":{}}))
        .is_err());
    let bare = result(&full.dumpheap).cloned();
    let mut r2 = Report::new("bare");
    r2.dumpheap = bare;
    if r2.dumpheap.is_some() {
        assert!(r2.render().contains("<tr class=\"heap-row\""));
    }
    // JSON lines as dumpshell prints them
    let lines: String = [
        &full.info,
        &full.pstacks,
        &full.pstacks_async,
        &full.causality,
    ]
    .iter()
    .filter_map(|d| d.as_ref())
    .map(|d| d.to_string() + "\n")
    .collect();
    let r3 = Report::from_json_lines("lines", &lines).unwrap();
    assert_eq!(r3.pstacks, full.pstacks);
    assert_eq!(r3.pstacks_async, full.pstacks_async);
    assert_eq!(r3.causality, full.causality);
}

#[test]
fn a_bucket_set_page_links_each_bucket_to_its_dumps() {
    let all = reports();
    let dumps: Vec<(String, Report)> = all.iter().take(4).cloned().collect();
    let names: Vec<String> = dumps.iter().map(|(n, _)| n.clone()).collect();
    let buckets = vec![
        Bucket::from_json(&json!({"signature": "deadlock in Monitor.Enter", "count": 7, "dumps": [names[0], names[1], "elsewhere.dmp"]})).unwrap(),
        Bucket::from_json(&json!({"signature": "async waits on a TaskCompletionSource", "dumps": [names[2]]})).unwrap(),
    ];
    assert_eq!(buckets[1].count, 1);
    let set = BucketSet {
        title: "corpus".into(),
        buckets,
        dumps,
    };
    let page = set.render();
    assert_self_contained("set", &page);
    assert_eq!(count(&page, "<tr class=\"bucket-row\""), 2);
    assert_eq!(count(&page, "<tr class=\"dump-row\""), names.len());
    assert_eq!(count(&page, "<article class=\"dump\""), names.len());
    for (k, n) in names.iter().enumerate() {
        let a = report::dump_anchor(k, n);
        assert!(
            page.contains(&format!("<article class=\"dump\" id=\"{a}\"")),
            "{a}"
        );
        assert!(page.contains(&format!("href=\"#{a}\"")), "{a} not linked");
    }
    // a dump not on the page is named, not linked
    assert!(page.contains("elsewhere.dmp") && !page.contains("href=\"#elsewhere"));
    // every in-page link has its target
    for href in page.split("href=\"#").skip(1) {
        let id = &href[..href.find('"').unwrap()];
        assert!(
            page.contains(&format!(" id=\"{id}\"")),
            "link to #{id} has no target"
        );
    }
    // element ids are unique across the dumps
    let mut ids: Vec<&str> = page
        .split(" id=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate element ids");
}

/// The on-demand dumps against what their programs recorded: the 1,000-thread program's
/// threads in Monitor.Wait on its one gate are one node of the graph, its thread count theirs;
/// the ASP.NET service's requests are the chains awaiting its dependency's
/// TaskCompletionSource, and its blocked handlers the threads drawn under them.
#[test]
fn on_demand_dumps_are_drawn_as_their_programs_recorded() {
    for d in on_demand() {
        let all = reports();
        let r = &all.iter().find(|(n, _)| n == d.name).unwrap().1;
        let chains = report::asyncs::chains(result(&r.dumpasync), result(&r.causality));
        let groups = report::asyncs::groups(&chains);
        let g = report::graph::build(
            &chains,
            &groups,
            result(&r.deadlock),
            result(&r.syncblk),
            result(&r.clrthreads),
        );
        let page = r.render();
        match d.name {
            "threads-1000-net10" => {
                let waiting: Vec<u64> = arr(&d.manifest["threads"])
                    .iter()
                    .filter(|t| t["role"] == "monitor-wait")
                    .map(|t| t["os_id"].as_u64().unwrap())
                    .collect();
                assert_eq!(waiting.len(), 334);
                let gate = g
                    .nodes
                    .iter()
                    .position(|n| {
                        n.kind == report::graph::NodeKind::Lock && n.title.ends_with("Gate")
                    })
                    .expect("the gate's lock");
                let t = g
                    .edges
                    .iter()
                    .find(|e| e.to == gate && e.kind == report::graph::EdgeKind::MonitorWait)
                    .map(|e| &g.nodes[e.from])
                    .unwrap();
                let mut ids = t.ids.clone();
                ids.sort();
                let mut want = waiting.clone();
                want.sort();
                assert_eq!(ids, want, "the threads in Monitor.Wait on the gate");
                // 1,000 threads: boxes, not one per thread
                let ps = result(&r.pstacks).unwrap();
                assert_eq!(ps["threads"].as_u64(), Some(1001));
                assert!(tags(&page, "<g class=\"ps-box").len() < 40);
            }
            "aspnethang" => {
                let asyncs = d.manifest["requests"]["async"].as_u64().unwrap();
                let syncs = d.manifest["requests"]["sync"].as_u64().unwrap();
                let m = &d.manifest["async_chains"][0]["methods"];
                let inner: Vec<&str> = arr(m).iter().map(|x| x.as_str().unwrap()).collect();
                let waiting: u64 = groups
                    .iter()
                    .filter(|gr| {
                        gr.kind == "task_completion_source"
                            && gr
                                .methods
                                .iter()
                                .map(String::as_str)
                                .take(inner.len())
                                .eq(inner.iter().copied())
                    })
                    .map(|gr| gr.count)
                    .sum();
                assert_eq!(waiting, asyncs + syncs, "chains awaiting the dependency");
                let mut blocked: Vec<u64> = groups
                    .iter()
                    .flat_map(|gr| gr.blocked.iter().map(|b| b.os_id))
                    .collect();
                blocked.sort();
                blocked.dedup();
                let mut want: Vec<u64> = arr(&d.manifest["threads"])
                    .iter()
                    .filter(|t| t["role"] == "report-blocked")
                    .map(|t| t["os_id"].as_u64().unwrap())
                    .collect();
                want.sort();
                assert_eq!(blocked, want, "threads blocked on the chains");
                for os in want {
                    assert!(
                        page.contains(&format!("thread 0x{os:x}")),
                        "thread {os:#x} not drawn"
                    );
                }
            }
            _ => unreachable!(),
        }
    }
}

#[test]
fn page_sizes() {
    let all = reports();
    for (name, r) in &all {
        let t = std::time::Instant::now();
        let page = r.render();
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        eprintln!("{name}: {} bytes, rendered in {ms:.1} ms", page.len());
        assert!(page.len() < 1_000_000, "{name}: {} bytes", page.len());
        std::fs::write(out_dir().join(format!("{name}.html")), &page).unwrap();
    }
}
