//! The text of the main commands, pinned (insta snapshots in `tests/snapshots/`), so that a
//! change to how a result is rendered is seen and reviewed, not made by accident. The values
//! in these texts are checked against independent truth by the other tests, on the same dumps:
//! `clrthreads` and `pstacks` on `hang` (stacks.rs: the DAC's threads, the scenario's blocked
//! threads), `dumpheap -stat` on `hang` (heap.rs: the DAC's heap statistics), `dumpasync` and
//! `causality` on `async` (dumpasync.rs, causality.rs: the DAC's boxes, the manifest), and
//! `triage` on `hang` (triage.rs). Update a snapshot only for a deliberate rendering change:
//! `INSTA_UPDATE=always cargo test -p commands --test snapshots`, then review the diff.

use commands::Session;

fn text(dump: &str, line: &str) -> String {
    let e = tests::entry(dump);
    let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
    let (out, _) = commands::execute(&s, line)
        .unwrap_or_else(|e| panic!("{dump}: {line}: {e}"))
        .unwrap();
    out.text
}

#[test]
fn clrthreads_text() {
    insta::assert_snapshot!("clrthreads_hang", text("hang", "clrthreads"));
}

#[test]
fn pstacks_text() {
    insta::assert_snapshot!("pstacks_hang", text("hang", "pstacks"));
}

#[test]
fn dumpheap_stat_text() {
    insta::assert_snapshot!("dumpheap_stat_hang", text("hang", "dumpheap -stat"));
}

#[test]
fn dumpasync_text() {
    insta::assert_snapshot!("dumpasync_async", text("async", "dumpasync"));
}

#[test]
fn causality_text() {
    insta::assert_snapshot!("causality_async", text("async", "causality"));
}

#[test]
fn triage_text() {
    let e = tests::entry("hang");
    let t = commands::triage::triage(&e.dump_path(), &e.open_options());
    let page = commands::triage::render(&t);
    // The first line names the dump by its path on this machine.
    let page = page.split_once('\n').map_or("", |(_, rest)| rest);
    insta::assert_snapshot!("triage_hang", page);
}
