//! Renders a report page from saved JSON documents:
//!
//!     cargo run -p report --example render -- OUT.html DOCS.jsonl...
//!
//! Every DOCS file holds JSON documents one per line (`dumpshell <dump> -c .. --json`, and
//! `dumpshell triage <dump> --json`); all files given make one dump's page. With `--set`, each
//! file is a dump of its own and the page is a bucket set (no buckets: the dumps' table only).

use std::path::Path;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let set = args.first().is_some_and(|a| a == "--set");
    if set {
        args.remove(0);
    }
    if args.len() < 2 {
        eprintln!("usage: render [--set] OUT.html DOCS.jsonl...");
        std::process::exit(2);
    }
    let out = args.remove(0);
    let read = |f: &str| std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{f}: {e}"));
    let name = |f: &str| {
        Path::new(f)
            .file_name()
            .map(|n| {
                n.to_string_lossy()
                    .split('.')
                    .next()
                    .unwrap_or("dump")
                    .to_owned()
            })
            .unwrap_or_default()
    };
    let page = if set {
        let mut s = report::BucketSet {
            title: format!("{} dumps", args.len()),
            ..Default::default()
        };
        for f in &args {
            let r = report::Report::from_json_lines(name(f), &read(f))
                .unwrap_or_else(|e| panic!("{f}: {e}"));
            s.dumps.push((name(f), r));
        }
        s.render()
    } else {
        let mut r = report::Report::new(name(&args[0]));
        for f in &args {
            let one = report::Report::from_json_lines("", &read(f))
                .unwrap_or_else(|e| panic!("{f}: {e}"));
            for v in [
                one.triage,
                one.info,
                one.clrthreads,
                one.pstacks,
                one.pstacks_async,
                one.dumpasync,
                one.causality,
                one.dumpheap,
                one.dumpexceptions,
                one.printexception,
                one.syncblk,
                one.deadlock,
                one.threadpool,
            ]
            .into_iter()
            .flatten()
            {
                let _ = r.add(v);
            }
        }
        r.render()
    };
    std::fs::write(&out, &page).unwrap_or_else(|e| panic!("{out}: {e}"));
    eprintln!("{out}: {} bytes", page.len());
}
