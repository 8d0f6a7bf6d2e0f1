//! The report in a real browser: headless Chromium loads each page from a file:// URL, the
//! page's own self check (`?selfcheck`) counts what was drawn after its script ran — stack
//! boxes, chain columns, graph nodes and edges, table rows — and measures every label against
//! the room its layout gave it; the counts must equal the documents'. Then one screenshot per
//! section goes to `target/report-screenshots/` (`page.html#pstacks` shows that section alone).
//!
//! Needs Debian's `chromium` (`apt-get install -y chromium`), or `DUMPSHELL_CHROMIUM=<path>`;
//! skips loudly without it, fails with `DUMPSHELL_REQUIRE_CHROMIUM=1`.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DUMPSHELL_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in [
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

fn chromium_or_skip() -> Option<Browser> {
    match find_chromium() {
        Some(bin) => Some(Browser::new(bin)),
        None => {
            if std::env::var("DUMPSHELL_REQUIRE_CHROMIUM").as_deref() == Ok("1") {
                panic!("DUMPSHELL_REQUIRE_CHROMIUM=1 but no chromium on PATH (apt-get install -y chromium)");
            }
            eprintln!("SKIPPED: no chromium on PATH: the report's browser test did not run (apt-get install -y chromium, or DUMPSHELL_CHROMIUM=<path>)");
            None
        }
    }
}

/// One headless Chromium, run once per page, with a profile of its own.
struct Browser {
    bin: PathBuf,
    profile: PathBuf,
}

impl Browser {
    fn new(bin: PathBuf) -> Browser {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let profile = std::env::temp_dir().join(format!(
            "dumpshell-report-chromium-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&profile).unwrap();
        Browser { bin, profile }
    }

    fn run(&self, extra: &[String]) -> String {
        let mut args: Vec<String> = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--disable-dev-shm-usage",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(format!("--user-data-dir={}", self.profile.display()));
        args.extend(extra.iter().cloned());
        let out_file = self.profile.join("stdout");
        let mut child = Command::new(&self.bin)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out_file).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", self.bin.display()));
        let start = Instant::now();
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                assert!(st.success(), "chromium {args:?}: {st}");
                break;
            }
            // A guard against a hung browser, not a speed check: on a loaded 2-core machine one
            // screenshot has taken over 90 s.
            if start.elapsed() > Duration::from_secs(300) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not finish in 300 s: {args:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::fs::read_to_string(&out_file).unwrap_or_default()
    }

    /// The page's self check after its scripts ran.
    fn selfcheck(&self, page: &Path) -> Value {
        let dom = self.run(&[
            "--window-size=1400,1000".into(),
            "--dump-dom".into(),
            format!("{}?selfcheck", url(page)),
        ]);
        let start = dom.find("<pre id=\"selfcheck\">").unwrap_or_else(|| {
            panic!(
                "{}: no self check in the DOM (did the script run?)",
                page.display()
            )
        }) + "<pre id=\"selfcheck\">".len();
        let end = start + dom[start..].find("</pre>").unwrap();
        serde_json::from_str(&unesc(&dom[start..end])).unwrap()
    }

    fn screenshot(&self, page: &Path, fragment: &str, size: (u64, u64), png: &Path) {
        let _ = std::fs::remove_file(png);
        self.run(&[
            format!("--window-size={},{}", size.0, size.1),
            format!("--screenshot={}", png.display()),
            format!("{}#{fragment}", url(page)),
        ]);
        let len = std::fs::metadata(png).map(|m| m.len()).unwrap_or(0);
        assert!(len > 2000, "{}: no screenshot", png.display());
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

fn url(p: &Path) -> String {
    format!("file://{}", p.canonicalize().unwrap().display())
}

fn n(c: &Value, k: &str) -> u64 {
    c[k].as_u64()
        .unwrap_or_else(|| panic!("self check has no {k}: {c}"))
}

/// Screenshots taken: every section of these dumps, the named sections of the others.
const SHOTS: [(&str, &[&str]); 9] = [
    (
        "aspnethang",
        &["summary", "pstacks", "chains", "causality", "threadpool"],
    ),
    ("threads-1000-net10", &["pstacks", "causality", "locks"]),
    (
        "hang-net10",
        &[
            "summary",
            "pstacks",
            "chains",
            "causality",
            "heap",
            "exceptions",
            "locks",
            "threadpool",
            "threads",
        ],
    ),
    (
        "asyncreal-net10",
        &["summary", "pstacks", "chains", "causality"],
    ),
    (
        "deadlock-net10",
        &["summary", "pstacks", "causality", "locks"],
    ),
    ("crash-net10", &["summary", "pstacks", "exceptions"]),
    ("threadpool-net10", &["summary", "threadpool", "causality"]),
    ("heap-net10", &["heap"]),
    ("windows-hang-net10", &["pstacks"]),
];

#[test]
fn pages_draw_in_chromium_what_the_documents_hold() {
    let Some(b) = chromium_or_skip() else { return };
    let dir = out_dir();
    let mut checked = 0;
    let mut shots = 0;
    let mut reports = Vec::new();
    let mut all: Vec<(String, report::Report)> = Vec::new();
    for name in DUMPS {
        if let Some(e) = entry(name) {
            all.push((name.to_owned(), report_of(&e)));
        }
    }
    for d in on_demand() {
        all.push((d.name.to_owned(), report_of_path(d.name, &d.dump, &d.opts)));
    }
    for (name, r) in all {
        let name = name.as_str();
        let page = dir.join(format!("{name}.html"));
        std::fs::write(&page, r.render()).unwrap();
        let c = b.selfcheck(&page);
        let x = expect(&r);
        assert_eq!(c["errors"], serde_json::json!([]), "{name}: script errors");
        assert_eq!(
            n(&c, "overflow"),
            0,
            "{name}: labels wider than their boxes: {}",
            c["overflow_examples"]
        );
        assert_eq!(n(&c, "unrendered"), 0, "{name}: a drawing has no size");
        assert_eq!(n(&c, "failed"), 0, "{name}: a command failed: {c}");
        for (k, want) in [
            ("ps_boxes", x.ps_boxes as u64),
            ("ps_edges", x.ps_edges as u64),
            ("chains", x.chains),
            ("chain_cols", x.chain_cols as u64),
            ("graph_nodes", x.graph_nodes as u64),
            ("graph_edges", x.graph_edges as u64),
            ("heap_rows", x.heap_rows as u64),
            ("exc_rows", x.exc_rows as u64),
            ("sb_rows", x.sb_rows as u64),
            ("wait_rows", x.wait_rows as u64),
            ("thread_rows", x.thread_rows as u64),
            ("tp_rows", x.tp_rows as u64),
            ("rings", x.rings as u64),
        ] {
            assert_eq!(n(&c, k), want, "{name}: {k} drawn in the browser");
        }
        assert_eq!(n(&c, "sections"), 9, "{name}: sections");
        // the script's behaviours: a click on the first box lists its threads, the finder
        // marks the boxes holding a frame, a hover on a graph node lights its edges
        if let Some(ps) = result(&r.pstacks) {
            let b0 = report::pstacks::boxes(arr(&ps["roots"]));
            if let Some(first) = b0.boxes.first() {
                let popup = c["popup"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{name}: no popup: {c}"));
                let nt = first.threads.len();
                assert!(
                    popup.starts_with(&format!("{} thread", report::html::num(nt as u64))),
                    "{name}: popup {popup}"
                );
                for t in first.threads.iter().take(40) {
                    assert!(
                        popup.contains(&format!("0x{t:x}")),
                        "{name}: popup lacks {t:#x}: {popup}"
                    );
                }
                assert!(
                    n(&c, "filter_matches") >= 1,
                    "{name}: the finder marked nothing"
                );
            }
        }
        let chains = report::asyncs::chains(result(&r.dumpasync), result(&r.causality));
        let groups = report::asyncs::groups(&chains);
        let g = report::graph::build(
            &chains,
            &groups,
            result(&r.deadlock),
            result(&r.syncblk),
            result(&r.clrthreads),
        );
        if !g.nodes.is_empty() {
            let touching = g.edges.iter().filter(|e| e.from == 0 || e.to == 0).count() as u64;
            assert_eq!(
                n(&c, "lit_edges"),
                touching,
                "{name}: edges lit by a hover on node 0"
            );
        }
        checked += 1;
        if let Some((_, sections)) = SHOTS.iter().find(|(d, _)| *d == name) {
            for s in *sections {
                let sz = &c["sizes"][*s];
                let w = sz[0].as_u64().unwrap().clamp(1200, 4000);
                let h = sz[1].as_u64().unwrap().clamp(300, 6000);
                b.screenshot(&page, s, (w, h), &dir.join(format!("{name}-{s}.png")));
                shots += 1;
            }
        }
        if DUMPS.contains(&name) {
            reports.push((name.to_owned(), r));
        }
    }
    if checked == 0 {
        eprintln!("SKIPPED: no corpus dump could be read (runtime packs missing)");
        return;
    }
    // the page of several dumps
    let names: Vec<String> = reports.iter().map(|(n, _)| n.clone()).collect();
    let set = report::BucketSet {
        title: format!("{} corpus dumps", reports.len()),
        buckets: vec![
            report::Bucket {
                signature:
                    "monitor deadlock: Deadlock.Program.LockBWhileHoldingA / LockAWhileHoldingB"
                        .into(),
                count: 1,
                dumps: names
                    .iter()
                    .filter(|n| n.starts_with("deadlock"))
                    .cloned()
                    .collect(),
            },
            report::Bucket {
                signature:
                    "async chains waiting on TaskCompletionSource, SemaphoreSlim, Task.Delay".into(),
                count: names
                    .iter()
                    .filter(|n| n.starts_with("async") || n.starts_with("hang"))
                    .count() as u64,
                dumps: names
                    .iter()
                    .filter(|n| n.starts_with("async") || n.starts_with("hang"))
                    .cloned()
                    .collect(),
            },
        ],
        dumps: reports,
    };
    let page = dir.join("bucket-set.html");
    std::fs::write(&page, set.render()).unwrap();
    let c = b.selfcheck(&page);
    assert_eq!(c["errors"], serde_json::json!([]));
    assert_eq!(
        n(&c, "overflow"),
        0,
        "bucket page: {}",
        c["overflow_examples"]
    );
    assert_eq!(n(&c, "bucket_rows"), 2);
    assert_eq!(n(&c, "dumps"), names.len() as u64);
    assert_eq!(n(&c, "sections"), 9 * names.len() as u64 + 2);
    b.screenshot(&page, "", (1400, 1000), &dir.join("bucket-set.png"));
    // it prints
    let pdf = dir.join("hang-net10.pdf");
    if dir.join("hang-net10.html").is_file() {
        let _ = std::fs::remove_file(&pdf);
        b.run(&[
            "--no-pdf-header-footer".into(),
            format!("--print-to-pdf={}", pdf.display()),
            url(&dir.join("hang-net10.html")),
        ]);
        let len = std::fs::metadata(&pdf).map(|m| m.len()).unwrap_or(0);
        assert!(len > 20_000, "no PDF printed ({len} bytes)");
    }
    eprintln!(
        "{checked} pages checked in chromium, {} screenshots in {}",
        shots + 1,
        dir.display()
    );
}
