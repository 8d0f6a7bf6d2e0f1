//! The stack walk against the runtime DAC's own walk (dumps/<name>.dac.json `stacks`): every
//! thread's frames with a method, in order, and every managed frame's SP and IP, exactly.

use clrdata::stack::{FrameKind, StackWalker};
use clrdata::{Runtime, TypeNames};
use dumpreader::Dump;
use serde_json::Value;

fn hex(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// (matched threads, total threads, diffs) of one dump: every DAC stack's frames with a method,
/// in order, against ours; managed frames' SP and IP too.
fn compare(name: &str) -> (usize, usize, Vec<String>) {
    let e = tests::entry(name);
    let d = Dump::open_with(&e.dump_path(), &tests::open_options()).unwrap();
    let rt = Runtime::discover(&d).unwrap();
    let names = TypeNames::new();
    let w = StackWalker::for_target(&rt, &names);
    let stacks = w.walk_all().unwrap();
    let mut diffs = Vec::new();
    let mut ok = 0;
    let dac = e.dac["stacks"].as_array().unwrap();
    for ds in dac {
        let os = ds["osThreadId"].as_u64().unwrap();
        let Some(ours) = stacks.iter().find(|s| s.os_id == os) else {
            diffs.push(format!("{name}: thread {os} not walked"));
            continue;
        };
        let want: Vec<String> = ds["frames"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["method"].as_str().map(str::to_string))
            .collect();
        let got: Vec<String> = ours.methods().map(str::to_string).collect();
        let mut good = want == got;
        if good {
            // SP and IP of managed frames.
            let dm: Vec<(u64, u64)> = ds["frames"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f.get("frame").is_none())
                .map(|f| (hex(&f["sp"]), hex(&f["ip"])))
                .collect();
            let om: Vec<(u64, u64)> = ours
                .frames
                .iter()
                .filter(|f| f.kind == FrameKind::Managed)
                .map(|f| (f.sp, f.ip))
                .collect();
            if dm != om {
                good = false;
                diffs.push(format!("{name}: thread {os}: sp/ip {dm:x?} != {om:x?}"));
            }
        } else {
            diffs.push(format!(
                "{name}: thread {os}:\n  dac  {want:?}\n  ours {got:?}\n  stop {:?}",
                ours.incomplete
            ));
        }
        if good {
            ok += 1;
        }
    }
    (ok, dac.len(), diffs)
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
