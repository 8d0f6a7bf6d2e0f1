//! `gcinfo` against SOS's own `gcinfo` text (`clrcodeinfo/tests/data/*.json`, `sos_gcinfo`:
//! dotnet-dump 10.0.750501 with the runtime's DAC, by clrcodeinfo/tools/make_testdata.py and
//! sweep.py): for every method there of a corpus dump, JIT'd and ReadyToRun, on .NET 8, 9, 10
//! and 11, the text after `Pointer table:` (prolog size, GS cookie, PSPSym, generics context,
//! varargs, frame pointer, report-only-leaf, parameter area, return kind, code size, the
//! untracked slots, the interruptible ranges, safe points and each offset's slot births and
//! deaths) equals SOS's line for line, and the `entry point` line is the method's start; the
//! same from the method's MethodDesc where dumpshell knows it.

use commands::Session;
use serde_json::Value;
use std::collections::BTreeMap;

fn run(s: &Session, line: &str) -> Result<commands::Output, commands::CommandError> {
    commands::execute(s, line).map(|o| o.expect("a command").0)
}

#[test]
fn gcinfo_equals_sos() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../clrcodeinfo/tests/data");
    let names = tests::names();
    let mut families = BTreeMap::<u32, usize>::new();
    let (mut methods, mut r2r, mut by_md, mut lines) = (0, 0, 0, 0);
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().and_then(|x| x.to_str()) == Some("json"))
        .collect();
    paths.sort();
    for p in paths {
        let d: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let Some(name) = d["dump"].as_str() else {
            continue;
        };
        if !names.iter().any(|n| n == name) {
            continue;
        }
        let e = tests::entry(name);
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        for m in d["methods"].as_array().unwrap() {
            let Some(sos) = m["sos_gcinfo"].as_str() else {
                continue;
            };
            let start = m["start"].as_str().unwrap();
            let ours = run(&s, &format!("gcinfo {start}"))
                .unwrap_or_else(|err| panic!("{name}: gcinfo {start} ({}): {err}", m["name"]));
            let mut it = ours.text.lines();
            let want_start = format!(
                "entry point {:016X}",
                u64::from_str_radix(start.trim_start_matches("0x"), 16).unwrap()
            );
            assert_eq!(
                it.next(),
                Some(want_start.as_str()),
                "{name}: {}",
                m["name"]
            );
            let body: Vec<&str> = it
                .skip_while(|l| *l != "Pointer table:")
                .skip(1)
                .filter(|l| !l.trim().is_empty())
                .collect();
            let want: Vec<&str> = sos.lines().filter(|l| !l.trim().is_empty()).collect();
            assert_eq!(body, want, "{name}: gcinfo {start} ({})", m["name"]);
            if let Some(md) = ours.data["method_desc"].as_str() {
                let again = run(&s, &format!("gcinfo {md}")).unwrap();
                // The MethodDesc's current code may be another version than this code.
                if again.data["method_start"] == ours.data["method_start"] {
                    assert_eq!(again.text, ours.text, "{name}: gcinfo {md}");
                    by_md += 1;
                }
            }
            if ours.data["code_kind"] == "ready_to_run" {
                r2r += 1;
            }
            lines += want.len();
            methods += 1;
            *families.entry(e.family()).or_default() += 1;
        }
    }
    eprintln!(
        "gcinfo: {methods} methods ({r2r} ReadyToRun, {by_md} also by MethodDesc), {lines} \
         lines equal to SOS's; by family {families:?}"
    );
    for f in [8, 9, 10, 11] {
        assert!(
            families.get(&f).copied().unwrap_or(0) >= 5,
            ".NET {f}: {families:?}"
        );
    }
    assert!(
        methods >= 100 && r2r >= 20,
        "{methods} methods, {r2r} ReadyToRun"
    );
}
