//! `ehinfo` against SOS's own output (`dumps/<name>.sos-ehinfo.txt`, written by
//! dumps/tools/sos_ehinfo.py with dotnet-dump 10.0.750501 and the runtime's DAC): for every
//! method of the app that SOS's token2ee gives with code, on .NET 8, 9, 10 and 11 dumps,
//! - the DumpMD lines dumpshell prints (MethodDesc to Current CodeAddr) are SOS's;
//! - the EH clauses are SOS's, text for text (kind, `catch(<type>)`, duplicate and cloned
//!   finally clauses, the try and handler ranges as addresses and offsets), but the type of a
//!   typed clause where SOS prints it empty (`catch()`: SOS 10.0.750501 offline names a clause's
//!   type on these dumps only when the runtime cached its TypeHandle, ...): there dumpshell
//!   names it from the class token, and where the scenario's source says what it catches the
//!   name is that;
//! - `ehinfo <address inside the method>` gives the same clauses as `ehinfo <MethodDesc>`.

use commands::Session;
use std::collections::BTreeMap;

fn run(s: &Session, line: &str) -> Result<commands::Output, commands::CommandError> {
    commands::execute(s, line).map(|o| o.expect("a command").0)
}

/// The EH clause lines of an ehinfo text: from the first `EHHandler` line, blank lines and
/// trailing blanks left out.
fn clause_lines(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.starts_with("EHHandler "))
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.trim_end().to_string())
        .collect()
}

/// What the scenarios' sources catch, by method: (dump name prefix, method name, type).
const SOURCE_CATCHES: &[(&str, &str, &str)] = &[
    // crash.cs ProcessOrder: `catch (FormatException e)`
    (
        "crash",
        "Crash.Program.ProcessOrder(Crash.Order)",
        "System.FormatException",
    ),
    // heap.cs Build: `catch (Exception e) { Roots.Kept = e; }`
    ("heap", "Heap.Program.Build()", "System.Exception"),
];

#[test]
fn ehinfo_equals_sos() {
    let mut families = BTreeMap::<u32, usize>::new();
    let (mut methods, mut clauses, mut named_by_us, mut from_source) = (0, 0, 0, 0);
    for n in tests::names() {
        let Some(secs) = tests::sos::truth(&n, "sos-ehinfo") else {
            continue;
        };
        let e = tests::entry(&n);
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        for (cmd, body) in secs {
            let Some(md) = cmd.strip_prefix("ehinfo ") else {
                continue;
            };
            let ours = run(&s, &cmd).unwrap_or_else(|err| panic!("{n}: {cmd}: {err}"));
            // The DumpMD lines printed are SOS's.
            for l in ours.text.lines().take_while(|l| !l.is_empty()) {
                assert!(
                    body.lines().any(|b| b == l),
                    "{n}: {cmd}: `{l}` is not SOS's:\n{body}"
                );
            }
            let sos = clause_lines(&body);
            let got = clause_lines(&ours.text);
            assert_eq!(
                got.len(),
                sos.len(),
                "{n}: {cmd}:\n{}\nSOS:\n{body}",
                ours.text
            );
            let method = ours.data["method"].as_str().unwrap_or("").to_string();
            let mut k = 0;
            for (g, w) in got.iter().zip(&sos) {
                if g == w {
                    if g.starts_with("EHHandler ") {
                        k += 1;
                    }
                    continue;
                }
                // SOS's unnamed catch: ours names it (the rest of the line equal).
                let c = &ours.data["clauses"][k];
                let name = c["catch_type"].as_str().unwrap_or_else(|| {
                    panic!(
                        "{n}: {cmd}: clause {k} not named: {}",
                        c["catch_type_error"]
                    )
                });
                assert!(
                    w.ends_with(" TYPED catch()"),
                    "{n}: {cmd}: `{g}` vs SOS's `{w}`"
                );
                assert!(!name.is_empty());
                assert_eq!(
                    *g,
                    w.replacen("catch()", &format!("catch({name})"), 1),
                    "{n}: {cmd}"
                );
                named_by_us += 1;
                for (prefix, m, ty) in SOURCE_CATCHES {
                    if n.starts_with(prefix) && method == *m {
                        assert_eq!(name, *ty, "{n}: {m}: the source's catch");
                        from_source += 1;
                    }
                }
                k += 1;
            }
            clauses += k;
            // The same clauses from an address inside the method.
            let start = ours.data["method_start"].as_str().unwrap();
            let by_ip = run(&s, &format!("ehinfo {start}")).unwrap();
            assert_eq!(
                by_ip.data["clauses"], ours.data["clauses"],
                "{n}: {md} by address"
            );
            methods += 1;
            *families.entry(e.family()).or_default() += 1;
        }
    }
    eprintln!(
        "ehinfo: {methods} methods, {clauses} clauses ({named_by_us} typed clauses named where \
         SOS prints none, {from_source} checked against the source), by family {families:?}"
    );
    for f in [8, 9, 10, 11] {
        assert!(
            families.get(&f).copied().unwrap_or(0) > 0,
            ".NET {f}: no method checked"
        );
    }
    assert!(clauses >= 50, "only {clauses} clauses checked");
    assert!(
        from_source >= 2,
        "the sources' catches were not all checked"
    );
}

/// Where SOS has no ehinfo (it fails on ReadyToRun code: "Failed to perform EHInfo traverse"),
/// the DAC's clauses are the truth: `ehinfo <method start>` gives, for every method of
/// `clrcodeinfo/tests/data` with the DAC's TraverseEHInfo clauses (JIT'd and ReadyToRun, filters
/// and duplicates included), the DAC's kinds, ranges, filter offsets and duplicate flags.
#[test]
fn ehinfo_clauses_equal_the_dacs() {
    use serde_json::Value;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../clrcodeinfo/tests/data");
    let names = tests::names();
    let (mut methods, mut r2r, mut clauses, mut filters) = (0, 0, 0, 0);
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
        if !e.images_in_dump() && !e.has_framework() {
            continue;
        }
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        for m in d["methods"].as_array().unwrap() {
            let Some(want) = m["dac_eh_clauses"].as_array() else {
                continue;
            };
            let start = m["start"].as_str().unwrap();
            let ours = run(&s, &format!("ehinfo {start}"))
                .unwrap_or_else(|err| panic!("{name}: ehinfo {start} ({}): {err}", m["name"]));
            let got: Vec<Value> = ours.data["clauses"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "type": c["kind"].as_str().map(str::to_ascii_lowercase),
                        "try": c["try_offsets"],
                        "handler": c["handler_offsets"],
                        "filter": c["filter_offset"],
                        "duplicate": c["duplicate"],
                    })
                })
                .collect();
            assert_eq!(&got, want, "{name}: ehinfo {start} ({})", m["name"]);
            if ours.data["code_kind"] == "ready_to_run" {
                r2r += 1;
            }
            filters += got.iter().filter(|c| c["type"] == "filter").count();
            clauses += got.len();
            methods += 1;
        }
    }
    eprintln!(
        "ehinfo: {methods} methods ({r2r} ReadyToRun), {clauses} clauses ({filters} filters) \
         equal to the DAC's"
    );
    assert!(
        methods >= 30 && r2r >= 20,
        "{methods} methods, {r2r} ReadyToRun"
    );
}
