//! The stack walk against the runtime DAC's own walk (dumps/<name>.dac.json `stacks`), frame
//! for frame: every frame's SP, IP, explicit Frame address and class, and MethodDesc exactly
//! (method names too where the tests claim Methods), on every corpus dump where the tests
//! claim the stack walk (`tests::readable_for(Capability::Stacks)`): .NET 8 and 10, Linux and
//! the Windows minidumps.

use tests::Capability;

/// Compares every dump of `filter`, prints what was compared, and fails on any difference.
fn compare_all(filter: impl Fn(&tests::Entry) -> bool) -> (usize, usize) {
    let mut all = Vec::new();
    let (mut threads, mut frames) = (0, 0);
    for e in tests::readable_for(Capability::Stacks)
        .into_iter()
        .filter(|e| filter(e))
    {
        let c = tests::stack_truth(&e, &e.open_options());
        println!(
            "{}: {}/{} threads equal, {} frames compared{}",
            e.name,
            c.equal_threads,
            c.threads,
            c.frames,
            if c.names { " (with names)" } else { "" }
        );
        assert!(c.threads > 0, "{}: the DAC walked no thread", e.name);
        threads += c.threads;
        frames += c.frames;
        all.extend(c.diffs);
    }
    assert!(all.is_empty(), "{}", all.join("\n"));
    (threads, frames)
}

#[test]
fn frames_equal_the_dac_linux() {
    let (threads, frames) = compare_all(|e| e.os() != "windows");
    println!("linux: {threads} threads, {frames} frames");
    assert!(threads >= 60, "{threads} threads compared");
}

/// The Windows minidumps: every managed thread, the main thread (unwound through coreclr.dll's
/// .pdata) included.
#[test]
fn frames_equal_the_dac_windows() {
    let (threads, frames) = compare_all(|e| e.os() == "windows");
    println!("windows: {threads} threads, {frames} frames");
    assert!(threads > 0);
}
