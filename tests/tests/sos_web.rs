//! SOS's web and collection commands against SOS's own output (dotnet-dump 10.0.750501 with the
//! runtime's DAC, recorded by dumps/tools/sosrun.py):
//! - `dumps/<name>.sos-http.txt`: `dumprequests` and `dumphttp` (plain, `--stats`,
//!   `--pending`, `--completed --uri x --statuscode 200`). Our text equals SOS's exactly. On
//!   aspnethang-net11 (an ASP.NET Core app hung with 43 requests in flight) the requests are
//!   also checked against the scenario's manifest: one `GET http /orders/<id>` per id its async
//!   requests asked for and one `GET http /report` per sync request. No corpus program uses
//!   HttpClient, so `dumphttp` is checked on its empty answer (header and `Total 0 requests`)
//!   on .NET 8, 10 and 11 dumps, an ASP.NET Core one among them.
//! - `dumps/<name>.sos-dcd.txt`: `dcd <addr>` for every `ConcurrentDictionary<TKey, TValue>` on
//!   the heap (only .NET 11 dumps have any: the ASP.NET Core app's 26 and the runtime's own
//!   `ConcurrentDictionary<String, Int32>` on crash-net11 and threadpool-net11). Our text
//!   equals SOS's, but for one fact: where a key or value is a struct of a generic instantiation
//!   over reference types (`ValueTuple<Func<ParameterInfo, Expression>, Int32>`), SOS's
//!   `dumpvc` names the shared canonical MethodTable (ClrMD reads the field's type in the
//!   `__Canon` context: `ValueTuple<__Canon, Int32>`), dumpshell the exact instantiation; the
//!   test accepts that line only when SOS's MethodTable is our MethodTable's canonical one
//!   (`dumpmt`'s `canonical`) and the addresses are equal.

use commands::Session;

fn run(s: &Session, line: &str) -> commands::Output {
    commands::execute(s, line)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .expect("a command")
        .0
}

fn text(s: &Session, line: &str) -> String {
    run(s, line).text
}

#[test]
fn web_commands_equal_sos() {
    let truths = tests::sos::dumps_with("sos-http");
    assert!(
        truths.len() >= 4,
        "expected the sos-http truths of aspnethang-net11, crash-net11, hang-net8 and heap-net10"
    );
    let mut requests_seen = 0;
    for (e, secs) in truths {
        let name = &e.name;
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        for (cmd, body) in &secs {
            let ours = text(&s, cmd);
            assert_eq!(
                ours.trim_end(),
                body.trim_end(),
                "{name}: `{cmd}` differs from SOS's"
            );
            if cmd == "dumprequests" {
                requests_seen += body.lines().filter(|l| l.contains(" GET ")).count();
            }
        }
    }
    assert_eq!(
        requests_seen, 43,
        "aspnethang-net11's requests in SOS's truth"
    );
}

/// aspnethang-net11's requests are the scenario's: `/orders/<id>` for each id its async
/// requests asked for, `/report` for each sync one (the manifest's hoisted `id` values).
#[test]
fn dumprequests_lists_the_scenario_requests() {
    let e = tests::entry("aspnethang-net11");
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tests::dumps_dir().join("aspnethang-net11.manifest.json"))
            .unwrap(),
    )
    .unwrap();
    let chain = &manifest["async_chains"][0];
    let ids = chain["hoisted"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == "id")
        .expect("the manifest's GetOrderAsync ids")["values"]
        .as_array()
        .unwrap()
        .clone();
    let mut want: Vec<String> = ids
        .iter()
        .map(|v| match v.as_str().unwrap() {
            "report" => "/report".to_owned(),
            id => format!("/orders/{id}"),
        })
        .collect();
    assert_eq!(
        want.len() as u64,
        manifest["requests"]["async"].as_u64().unwrap()
            + manifest["requests"]["sync"].as_u64().unwrap()
    );
    let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
    let out = run(&s, "dumprequests");
    let reqs = out.data["requests"].as_array().unwrap();
    let mut got: Vec<String> = reqs
        .iter()
        .map(|r| {
            assert_eq!(r["method"], "GET");
            assert_eq!(r["scheme"], "http");
            assert_eq!(r["query"], "");
            r["url"].as_str().unwrap().to_owned()
        })
        .collect();
    assert!(out.data["problems"].as_array().unwrap().is_empty());
    want.sort();
    got.sort();
    assert_eq!(got, want);
}

#[test]
fn dcd_equals_sos() {
    let truths = tests::sos::dumps_with("sos-dcd");
    assert!(truths.len() >= 3, "expected three sos-dcd truths");
    let (mut sections, mut entries, mut canonical) = (0, 0, 0);
    for (e, secs) in truths {
        let name = &e.name;
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        for (cmd, body) in &secs {
            sections += 1;
            let ours = text(&s, cmd);
            let (ours, sos): (Vec<&str>, Vec<&str>) = (
                ours.trim_end().lines().collect(),
                body.trim_end().lines().collect(),
            );
            assert_eq!(
                ours.len(),
                sos.len(),
                "{name}: `{cmd}`:\n{}",
                ours.join("\n")
            );
            for (o, t) in ours.iter().zip(&sos) {
                if t.trim_start().starts_with("Key:") {
                    entries += 1;
                }
                if o == t {
                    continue;
                }
                // `Value: dumpvc <mt> <addr>`: SOS's MethodTable the canonical form of ours.
                let words = |l: &str| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
                let (ow, tw) = (words(o), words(t));
                assert!(
                    ow.len() == 4 && tw.len() == 4 && ow[1] == "dumpvc" && tw[1] == "dumpvc",
                    "{name}: `{cmd}`: ours `{o}`, SOS `{t}`"
                );
                assert_eq!((&ow[0], &ow[3]), (&tw[0], &tw[3]), "{name}: `{cmd}`");
                let mt = run(&s, &format!("dumpmt {}", ow[2]));
                let canon = mt.data["canonical"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("0x");
                assert_eq!(
                    u64::from_str_radix(canon, 16).unwrap(),
                    u64::from_str_radix(&tw[2], 16).unwrap(),
                    "{name}: `{cmd}`: SOS's {} is not the canonical MethodTable of our {}",
                    tw[2],
                    ow[2]
                );
                canonical += 1;
            }
        }
    }
    assert!(
        sections >= 28 && entries >= 400,
        "{sections} sections, {entries} entries"
    );
    assert!(canonical <= 1, "{canonical} canonical MethodTables");
}

/// dcd refuses what is not a ConcurrentDictionary, as SOS does.
#[test]
fn dcd_refuses_other_objects() {
    let e = tests::entry("aspnethang-net11");
    let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
    // A DefaultHttpContext (from SOS's dumprequests truth).
    let err = commands::execute(&s, "dcd 7fb02503e468")
        .err()
        .expect("a refusal")
        .to_string();
    assert!(err.contains("DefaultHttpContext"), "{err}");
}

/// `printexception` prints the recorded trace's IPs and offsets as SOS's plain `pe -nested`
/// does (`dumps/<name>.sos-pe.txt`): a hardware exception's (SOS's `IsAsyncException`: a
/// fault's `_xcode`, or a fault's HResult, FormatException's among them) one higher than
/// recorded, the others as recorded. Each frame line is compared whole: SP, IP and
/// `file!method+0xNN` (SOS names the module by its image file, `crash.dll!`).
#[test]
fn printexception_ips_equal_sos() {
    let truths = tests::sos::dumps_with("sos-pe");
    assert!(truths.len() >= 7, "expected seven sos-pe truths");
    let frame = |l: &str| -> Option<(String, String, String)> {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() < 3 || w[0].len() != 16 || w[1].len() != 16 {
            return None;
        }
        u64::from_str_radix(w[1], 16).ok()?;
        w[2].rsplit_once("+0x")?;
        // (ours marks a runtime-async continuation's frame, which SOS does not)
        let func = w[2..].join(" ");
        let func = func.trim_end_matches(" [async continuation]");
        Some((w[0].to_owned(), w[1].to_owned(), func.to_owned()))
    };
    let (mut frames, mut hardware) = (0, 0);
    for (e, secs) in truths {
        let name = &e.name;
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        for (cmd, body) in &secs {
            let addr = cmd.rsplit(' ').next().unwrap();
            let out = run(&s, &format!("printexception {addr}"));
            let hw = out.data["exceptions"][0]["hardware"].as_bool().unwrap();
            let sos: Vec<_> = body
                .lines()
                .skip_while(|l| !l.starts_with("StackTrace (generated):"))
                .take_while(|l| !l.starts_with("StackTraceString:"))
                .filter_map(frame)
                .collect();
            let ours: Vec<_> = out
                .text
                .lines()
                .skip_while(|l| !l.starts_with("StackTrace (generated):"))
                .take_while(|l| !l.starts_with("StackTraceString:"))
                .filter_map(frame)
                .collect();
            // (an exception never thrown, as the runtime's preallocated ones, has no trace)
            assert_eq!(ours, sos, "{name}: `{cmd}` (hardware: {hw})");
            // The lines before the trace (object, type, message, inner exception) and after
            // it (StackTraceString, HResult) as SOS prints them.
            let outside = |t: &str| -> Vec<String> {
                let lines: Vec<&str> = t.lines().collect();
                let head = lines
                    .iter()
                    .take_while(|l| !l.starts_with("StackTrace (generated)"));
                let tail = lines
                    .iter()
                    .skip_while(|l| !l.starts_with("StackTraceString:"));
                head.chain(tail.take(2))
                    .map(|l| l.trim_end().to_owned())
                    .collect()
            };
            assert_eq!(outside(&out.text), outside(body), "{name}: `{cmd}`");
            frames += sos.len();
            hardware += usize::from(hw);
        }
    }
    assert!(
        frames >= 30 && hardware >= 4,
        "{frames} frames, {hardware} hardware"
    );
}

/// `printexception -inner <object>`: the exception, then its inner exceptions, outermost
/// first. SOS prints one exception at a time and names the next one
/// (`InnerException: <type>, Use printexception <address> to see more.`); its `sos-pe`
/// truths hold each exception of a chain in a section of its own. Our chain must be SOS's:
/// the same addresses and types in the same order, ending where SOS says `<none>`, and each
/// exception's lines before its trace (object, type, message, inner) as SOS prints them
/// for that exception alone.
#[test]
fn printexception_inner_is_the_chain_sos_names() {
    let inner_of = |body: &str| -> Option<(String, u64)> {
        let l = body.lines().find(|l| l.starts_with("InnerException:"))?;
        let rest = l["InnerException:".len()..].trim();
        let (ty, more) = rest.split_once(", Use printexception ")?;
        let a = more.split_whitespace().next()?;
        Some((ty.to_owned(), u64::from_str_radix(a, 16).unwrap()))
    };
    let head = |t: &str| -> Vec<String> {
        t.lines()
            .take_while(|l| !l.starts_with("StackTrace (generated)"))
            .map(|l| l.trim_end().to_owned())
            .collect()
    };
    let (mut chains, mut links) = (0, 0);
    for (e, secs) in tests::sos::dumps_with("sos-pe") {
        let name = &e.name;
        let section = |a: u64| {
            secs.iter()
                .find(|(c, _)| u64::from_str_radix(c.rsplit(' ').next().unwrap(), 16) == Ok(a))
                .map(|(_, b)| b.as_str())
        };
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        for (cmd, body) in &secs {
            if inner_of(body).is_none() {
                continue;
            }
            let outer = u64::from_str_radix(cmd.rsplit(' ').next().unwrap(), 16).unwrap();
            // SOS's chain, section by section.
            let mut want = vec![(outer, body.as_str())];
            while let Some((_, a)) = inner_of(want.last().unwrap().1) {
                let b = section(a).unwrap_or_else(|| {
                    panic!("{name}: SOS names the inner exception {a:#x}, not recorded")
                });
                want.push((a, b));
            }
            let out = run(&s, &format!("printexception -inner {outer:x}"));
            let got = out.data["exceptions"].as_array().unwrap();
            let got_addrs: Vec<u64> = got
                .iter()
                .map(|x| {
                    u64::from_str_radix(x["address"].as_str().unwrap().trim_start_matches("0x"), 16)
                        .unwrap()
                })
                .collect();
            let want_addrs: Vec<u64> = want.iter().map(|w| w.0).collect();
            assert_eq!(
                got_addrs, want_addrs,
                "{name}: `printexception -inner {outer:x}`"
            );
            for (i, (a, b)) in want.iter().enumerate() {
                if i > 0 {
                    let (ty, _) = inner_of(want[i - 1].1).unwrap();
                    assert_eq!(got[i]["type"].as_str(), Some(ty.as_str()), "{name}: {a:#x}");
                }
                // Each block of our text, the exception alone, printed by plain printexception.
                let alone = run(&s, &format!("printexception {a:x}"));
                assert!(
                    out.text.contains(&alone.text),
                    "{name}: `printexception -inner {outer:x}` lacks the block of {a:#x}:\n{}",
                    out.text
                );
                assert_eq!(head(&alone.text), head(b), "{name}: {a:#x}");
                links += 1;
            }
            chains += 1;
        }
    }
    assert!(
        chains >= 4 && links >= 8,
        "{chains} chains, {links} exceptions"
    );
}

/// SOS's `pe -nested` on the crashing thread (`### setthread --tid <id>; pe -nested` in
/// `<name>.sos.txt`, dumps/tools/sos.sh): our `printexception -nested` with the same thread
/// chosen (`setthread -t`) prints the same text, line for line: the current exception, its
/// trace, and each exception nested under it (`Nested exception ---...`). Ours alone marks a
/// runtime-async continuation's frame (` [async continuation]`), which is taken off first.
/// Besides the committed dumps, the on-demand `nestedfault-*` dumps (scenarios/fault.cs
/// `nested`: a FailFast in a catch block inside a finally block run while a
/// NullReferenceException is unwound), the only ones with a nested exception, where made.
#[test]
fn printexception_nested_on_the_crasher_is_sos() {
    let mut dumps: Vec<(tests::Entry, Vec<(String, String)>)> = tests::sos::dumps_with("sos");
    let mut absent = Vec::new();
    for od in tests::on_demand() {
        let Some(e) = od.entry() else {
            if od.name.starts_with("nestedfault-") {
                absent.push(format!("{} ({})", od.name, od.make));
            }
            continue;
        };
        let p = tests::on_demand_dir().join(format!("{}.sos.txt", od.name));
        if let Ok(t) = std::fs::read_to_string(p) {
            dumps.push((e, tests::sos::sections(&t)));
        }
    }
    let (mut compared, mut nested) = (0, 0);
    for (e, secs) in dumps {
        for (cmd, body) in &secs {
            let Some(tid) = cmd
                .strip_prefix("setthread --tid ")
                .and_then(|r| r.strip_suffix("; pe -nested"))
            else {
                continue;
            };
            let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
            let tid: u32 = tid.parse().unwrap();
            run(&s, &format!("setthread -t {tid:#x}"));
            let ours = text(&s, "printexception -nested");
            let ours: Vec<&str> = ours
                .lines()
                .map(|l| l.trim_end_matches(" [async continuation]").trim_end())
                .collect();
            let sos: Vec<&str> = body.lines().map(str::trim_end).collect();
            let trim = |v: Vec<&str>| -> Vec<String> {
                let mut v: Vec<String> = v.into_iter().map(str::to_owned).collect();
                while v.last().is_some_and(|l| l.is_empty()) {
                    v.pop();
                }
                v
            };
            assert_eq!(
                trim(ours),
                trim(sos),
                "{}: `setthread -t {tid:#x}` then `printexception -nested`",
                e.name
            );
            nested += body.matches("\nNested exception ---").count();
            compared += 1;
        }
    }
    eprintln!(
        "{compared} crashers' `pe -nested` equal SOS's, {nested} nested exceptions among them"
    );
    if !absent.is_empty() {
        eprintln!("\n*** not made here, so no nested exception compared: {absent:?} ***\n");
    }
    assert!(compared >= 6, "only {compared} crashers compared");
}
