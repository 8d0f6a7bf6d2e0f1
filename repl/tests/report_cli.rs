//! `dumpshell report` in a real browser: the page the command line writes for a dump is loaded
//! by headless Chromium, whose self check (`?selfcheck`: what the page's script counted after
//! it ran) must show the counts the commands' own documents hold (made here through the command
//! library, as report/tests/browser.rs does for the crate); the page of several dumps shows
//! their buckets. A screenshot of that page goes to `target/report-screenshots/cli-buckets.png`
//! (README's docs/images/buckets.png is one).
//!
//! Needs Debian's `chromium`, or `DUMPSHELL_CHROMIUM=<path>`; skips loudly without it, fails
//! with `DUMPSHELL_REQUIRE_CHROMIUM=1`.

#[path = "../../report/tests/common/mod.rs"]
mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DUMPSHELL_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| {
            ["chromium", "chromium-browser", "google-chrome"]
                .into_iter()
                .map(move |n| d.join(n))
        })
        .find(|p| p.is_file())
}

/// Runs headless Chromium with `extra` arguments; its standard output.
fn browse(bin: &Path, profile: &Path, extra: &[String]) -> String {
    let out_file = profile.join("stdout");
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--hide-scrollbars",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_file).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success(), "chromium {extra:?}: {st}");
            break;
        }
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::read_to_string(out_file).unwrap_or_default()
}

fn url(p: &Path) -> String {
    format!("file://{}", p.canonicalize().unwrap().display())
}

fn selfcheck(bin: &Path, profile: &Path, page: &Path) -> Value {
    let dom = browse(
        bin,
        profile,
        &[
            "--window-size=1400,1000".into(),
            "--dump-dom".into(),
            format!("{}?selfcheck", url(page)),
        ],
    );
    let tag = "<pre id=\"selfcheck\">";
    let start = dom.find(tag).expect("no self check: did the script run?") + tag.len();
    let end = start + dom[start..].find("</pre>").unwrap();
    serde_json::from_str(&common::unesc(&dom[start..end])).unwrap()
}

fn report_cmd(dumps: &[PathBuf], dirs: &[PathBuf], out: &Path) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dumpshell"));
    cmd.arg("report")
        .arg("-o")
        .arg(out)
        .arg("--no-recorded-paths");
    for d in dirs {
        cmd.arg("--image-path").arg(d);
    }
    cmd.args(dumps);
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn n(c: &Value, k: &str) -> u64 {
    c[k].as_u64().unwrap_or_else(|| panic!("no {k} in {c}"))
}

#[test]
fn the_cli_report_draws_in_chromium_what_the_documents_hold() {
    let Some(bin) = chromium() else {
        if std::env::var("DUMPSHELL_REQUIRE_CHROMIUM").as_deref() == Ok("1") {
            panic!("DUMPSHELL_REQUIRE_CHROMIUM=1 but no chromium on PATH");
        }
        eprintln!("SKIPPED: no chromium on PATH: the CLI report test did not run (apt-get install -y chromium)");
        return;
    };
    let names = ["deadlock-net10", "crash-net10", "crash-net11"];
    let mut entries = Vec::new();
    for name in names {
        let Some(e) = common::entry(name) else { return };
        entries.push(e);
    }
    let dir = common::out_dir();
    let profile = std::env::temp_dir().join(format!("dumpshell-cli-report-{}", std::process::id()));
    std::fs::create_dir_all(&profile).unwrap();
    let dirs_of = |e: &tests::Entry| -> Vec<PathBuf> {
        e.image_dir()
            .into_iter()
            .chain(e.framework_dirs())
            .collect()
    };
    // one dump's page: the counts the documents hold
    for e in &entries[..2] {
        let page = dir.join(format!("cli-{}.html", e.name));
        report_cmd(&[e.dump_path()], &dirs_of(e), &page);
        let c = selfcheck(&bin, &profile, &page);
        let x = common::expect(&common::report_of(e));
        assert_eq!(
            c["errors"],
            serde_json::json!([]),
            "{}: script errors",
            e.name
        );
        assert_eq!(n(&c, "failed"), 0, "{}: a command failed: {c}", e.name);
        assert_eq!(n(&c, "sections"), report::SECTIONS.len() as u64);
        assert_eq!(
            n(&c, "overflow"),
            0,
            "{}: {}",
            e.name,
            c["overflow_examples"]
        );
        for (k, want) in [
            ("ps_boxes", x.ps_boxes as u64),
            ("ps_edges", x.ps_edges as u64),
            ("chains", x.chains),
            ("graph_nodes", x.graph_nodes as u64),
            ("graph_edges", x.graph_edges as u64),
            ("heap_rows", x.heap_rows as u64),
            ("exc_rows", x.exc_rows as u64),
            ("sb_rows", x.sb_rows as u64),
            ("thread_rows", x.thread_rows as u64),
            ("rings", x.rings as u64),
        ] {
            assert_eq!(n(&c, k), want, "{}: {k}", e.name);
        }
        // the deadlock's ring, the crash's exception rows: the page is not empty
        if e.name.starts_with("deadlock") {
            assert_eq!(n(&c, "rings"), 1);
        } else {
            assert!(n(&c, "exc_rows") > 0);
        }
    }
    // a page of three dumps: the two crashes of one bug share a bucket
    let mut dirs: Vec<PathBuf> = entries.iter().flat_map(dirs_of).collect();
    dirs.sort();
    dirs.dedup();
    let page = dir.join("cli-buckets.html");
    let dumps: Vec<PathBuf> = entries.iter().map(|e| e.dump_path()).collect();
    report_cmd(&dumps, &dirs, &page);
    let c = selfcheck(&bin, &profile, &page);
    assert_eq!(c["errors"], serde_json::json!([]));
    assert_eq!(n(&c, "bucket_rows"), 2);
    assert_eq!(n(&c, "dumps"), 3);
    assert_eq!(n(&c, "sections"), 9 * 3 + 2);
    let png = dir.join("cli-buckets.png");
    let _ = std::fs::remove_file(&png);
    browse(
        &bin,
        &profile,
        &[
            "--window-size=1400,900".into(),
            format!("--screenshot={}", png.display()),
            url(&page),
        ],
    );
    assert!(std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0) > 2000);
    let _ = std::fs::remove_dir_all(&profile);
}
