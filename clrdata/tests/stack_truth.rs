//! The stack walk against the runtime DAC's own walk (dumps/<name>.dac.json `stacks`): every
//! thread's frames with a method, in order, and every managed frame's SP and IP, exactly.

/// (matched threads, total threads, diffs) of one dump (image files from the harness).
fn compare(name: &str) -> (usize, usize, Vec<String>) {
    tests::stack_diffs(&tests::entry(name), &tests::open_options())
}

#[test]
fn managed_frames_equal_the_dac_linux() {
    let mut all = Vec::new();
    for name in [
        "hang",
        "deadlock",
        "heap",
        "crash",
        "threadpool",
        "servergc",
        "async",
    ] {
        let (ok, n, diffs) = compare(name);
        println!("{name}: {ok}/{n} threads equal");
        all.extend(diffs);
    }
    assert!(all.is_empty(), "{}", all.join("\n"));
}

/// The Windows minidump: every managed thread, the main thread (unwound through coreclr.dll's
/// .pdata) included.
#[test]
fn managed_frames_equal_the_dac_windows() {
    let (ok, n, diffs) = compare("windows-hang");
    println!("windows-hang: {ok}/{n} threads equal");
    assert!(n > 0);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}
