//! SOS's thread commands against SOS's own output (`dumps/<name>.sos-threads.txt`, written by
//! dumps/tools/sos_threads.py with dotnet-dump 10.0.750501 and the runtime's DAC; for the other
//! .NET 11 dumps `dumps/<name>.sos-modules.txt`, its `--modules` sections only):
//! - clrthreads: every managed thread's DBG column (the debugger's index), OS id, Thread and
//!   state equal SOS's, row for row;
//! - setthread: the thread list (indexes, OS ids) equals SOS's text, and the current thread
//!   (`*`) SOS's, but in a dump that records a faulting thread, which dumpshell starts on;
//! - setthread <i>; registers: each thread's registers equal SOS's, but two of dotnet-dump's
//!   ELF reader's (ClrMD's `RegSetX64`) own: it prints `eflags` as 0 (it leaves EFlags out of
//!   the context it builds: checked to be 0 in every SOS section), and r8 and r9 swapped (it
//!   declares R8 before R9, the kernel's user_regs_struct holds r9 first; gdb agrees with
//!   dumpshell: crash-net10's thread 0 has r8 = 0, r9 = 0xffffffff);
//! - setthread <i>; clrstack: clrstack without a thread walks the thread setthread chose (its
//!   header `OS Thread Id: 0x.. (<debugger index>)` equal to SOS's), or refuses it as not
//!   managed exactly where SOS says it is not; `stack` and `dso` on that thread start with
//!   the same header (SOS's dumpstack and dumpstackobjects name the thread so);
//! - clrmodules -v: every module SOS lists, in its order, has our image base, size, Module,
//!   Assembly, layout and path; our text is SOS's `clrmodules` (`<base> <size> <path>`);
//! - dumpassembly <addr>: the text equals SOS's for every Assembly SOS's clrmodules lists;
//! - token2ee <module> <token>: the text equals SOS's (the app's and CoreLib's first TypeDef
//!   and MethodDef tokens: MethodTable or `<not loaded yet>`, MethodDesc or `<invalid module
//!   token>`, the name and the JITTED code address, -1 for a method without code; and `*`), but
//!   for the MethodDescs without code SOS calls `<invalid module token>` (P/Invoke methods,
//!   generic method definitions), which dumpshell shows, and the name of a generic type
//!   definition's own MethodTable (SOS's token2ee `Heap.Node<T1>`), which dumpshell names as
//!   the DAC does (`Heap.Node`1`, SOS's dumpmt: `dumps/<name>.sos-dumpmt.txt`);
//!   On .NET 11 a MethodDef token is refused (runtime-async methods have two MethodDescs, and
//!   the map's is not always SOS's: aspnethang-net11's GetStockAsync);
//! - threadstate <hex>: the text equals SOS's.

use commands::Session;
use std::collections::HashMap;

fn run(s: &Session, line: &str) -> Result<commands::Output, commands::CommandError> {
    commands::execute(s, line).map(|o| o.expect("a command").0)
}

/// The truth files there are, by dump name: `<name>.sos-threads.txt` (every section), or
/// `<name>.sos-modules.txt` (`sos_threads.py --modules`: the module sections only).
fn truths() -> Vec<(tests::Entry, Vec<(String, String)>)> {
    let mut out = tests::sos::dumps_with("sos-threads");
    out.extend(tests::sos::dumps_with("sos-modules"));
    assert!(
        out.len() >= 8,
        "expected the .NET 8-11 hang and heap dumps' sos-threads truths, found {}",
        out.len()
    );
    out
}

/// Every .NET 11 dump of the CLR in the corpus has SOS's module truth (clrmodules, dumpassembly
/// and token2ee are checked on each by [`thread_commands_equal_sos`]).
#[test]
fn every_net11_dump_has_sos_module_truth() {
    let dir = tests::dumps_dir();
    let mut n11 = 0;
    for n in tests::names() {
        if tests::entry(&n).family() != 11 {
            continue;
        }
        n11 += 1;
        assert!(
            ["sos-threads", "sos-modules"]
                .iter()
                .any(|k| dir.join(format!("{n}.{k}.txt")).is_file()),
            "{n}: no SOS module truth (python3 dumps/tools/sos_threads.py {n} --modules)"
        );
    }
    assert!(n11 >= 10, "only {n11} .NET 11 dumps");
}

#[test]
fn thread_commands_equal_sos() {
    for (e, secs) in truths() {
        let name = &e.name;
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let mut checked = HashMap::<&str, usize>::new();
        // Every runtime of these truths knows the records of its loaded images (.NET 8-11 on
        // Linux): clrmodules answers.
        run(&s, "clrmodules").unwrap_or_else(|e| panic!("{name}: clrmodules: {e}"));
        for (cmd, body) in &secs {
            if cmd == "clrthreads" {
                let out = run(&s, "clrthreads --json").unwrap();
                let ours = &out.data["threads"];
                let mut rows = 0;
                for l in body.lines() {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    if w.len() < 5 || w[3].len() != 16 || u64::from_str_radix(w[3], 16).is_err() {
                        continue;
                    }
                    rows += 1;
                    let managed: u64 = w[1].parse().unwrap();
                    let t = ours
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|t| t["managed_id"] == managed)
                        .unwrap_or_else(|| panic!("{name}: no managed thread {managed} of ours"));
                    let dbg = if w[0] == "XXXX" {
                        serde_json::Value::Null
                    } else {
                        w[0].parse::<u64>().unwrap().into()
                    };
                    assert_eq!(t["index"], dbg, "{name}: DBG of managed thread {managed}");
                    assert_eq!(
                        format!("{:x}", t["os_id"].as_u64().unwrap()),
                        w[2],
                        "{name}: OSID of managed thread {managed}"
                    );
                    let ours_thread = t["thread"].as_str().unwrap().trim_start_matches("0x");
                    assert_eq!(
                        u64::from_str_radix(ours_thread, 16).unwrap(),
                        u64::from_str_radix(w[3], 16).unwrap(),
                        "{name}: ThreadOBJ of {managed}"
                    );
                    assert_eq!(
                        format!("{:x}", t["state"].as_u64().unwrap()),
                        w[4],
                        "{name}: State of {managed}"
                    );
                }
                assert!(rows > 0, "{name}: no clrthreads row read");
                assert_eq!(
                    rows,
                    ours.as_array().unwrap().len(),
                    "{name}: managed threads"
                );
                *checked.entry("clrthreads").or_default() += 1;
            } else if cmd == "setthread" {
                let fresh = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
                let ours = run(&fresh, "setthread").unwrap().text;
                // The same threads and indexes; the current thread (`*`) is SOS's (the core's
                // first thread) unless the dump records a faulting thread: dumpshell's current
                // thread is then that one (Session::current_os_thread), where SOS stays on the
                // first (crash-net10, faultnull-net10: the main thread).
                let unstarred = |t: &str| -> Vec<String> {
                    t.lines().map(|l| format!(" {}", &l[1..])).collect()
                };
                assert_eq!(unstarred(&ours), unstarred(body), "{name}: setthread");
                let star = |t: &str| t.lines().position(|l| l.starts_with('*'));
                match fresh.target.info().crashing_thread {
                    None => assert_eq!(star(&ours), star(body), "{name}: current thread"),
                    Some(id) => assert_eq!(
                        star(&ours),
                        fresh.thread_index(u64::from(id)),
                        "{name}: the faulting thread is current"
                    ),
                }
                *checked.entry("setthread").or_default() += 1;
            } else if let Some(rest) = cmd.strip_prefix("setthread ") {
                let (i, what) = rest.split_once("; ").unwrap();
                assert_eq!(run(&s, &format!("setthread {i}")).unwrap().text, "");
                match what {
                    "registers" => {
                        let ours = run(&s, "registers").unwrap().text;
                        let value = |t: &str, r: &str| -> String {
                            t.lines()
                                .find_map(|l| l.strip_prefix(&format!("{r} = ")))
                                .unwrap_or_else(|| panic!("{name}: no {r} in {t}"))
                                .to_string()
                        };
                        let mut n = 0;
                        for b in body.lines() {
                            let (r, v) = b.split_once(" = ").unwrap();
                            match r {
                                // dotnet-dump leaves EFlags out of an ELF core's context.
                                "eflags" => assert_eq!(v, "0x00000000", "{name}: SOS's eflags"),
                                // dotnet-dump swaps r8 and r9 of an ELF core: ClrMD's
                                // RegSetX64 declares R8 before R9, where the kernel's
                                // user_regs_struct (the prstatus registers) holds r9 first.
                                // gdb reads crash-net10's thread 0 as ours (r8 0, r9
                                // 0xffffffff), SOS prints them the other way round.
                                "r8" => assert_eq!(value(&ours, "r9"), v, "{name}: {i}: r8"),
                                "r9" => assert_eq!(value(&ours, "r8"), v, "{name}: {i}: r9"),
                                _ => assert_eq!(value(&ours, r), v, "{name}: {i}: {r}"),
                            }
                            n += 1;
                        }
                        assert_eq!(ours.lines().count(), body.lines().count(), "{name}: {i}");
                        assert_eq!(n, 24, "{name}: thread {i}: registers compared");
                        *checked.entry("registers").or_default() += 1;
                    }
                    "clrstack" => {
                        let head = body.lines().next().unwrap();
                        let sos_id = head
                            .strip_prefix("OS Thread Id: 0x")
                            .and_then(|r| r.split_whitespace().next())
                            .map(|h| u64::from_str_radix(h, 16).unwrap())
                            .unwrap_or_else(|| panic!("{name}: {head}"));
                        let managed = !body.contains("Unable to walk the managed stack");
                        match run(&s, "clrstack --json") {
                            Ok(out) => {
                                assert!(
                                    managed,
                                    "{name}: thread {i} walked where SOS says it is not managed"
                                );
                                let st = &out.data[0];
                                assert_eq!(st["os_id"], sos_id, "{name}: thread {i}'s clrstack");
                                // SOS's header names the thread's debugger index.
                                assert_eq!(
                                    out.text.lines().next(),
                                    Some(head),
                                    "{name}: thread {i}'s clrstack header"
                                );
                            }
                            Err(err) => {
                                assert!(!managed, "{name}: thread {i}: {err}");
                                assert!(err.to_string().contains("not a managed thread"), "{err}");
                            }
                        }
                        *checked.entry("clrstack").or_default() += 1;
                        // stack and dso (SOS's dumpstack and dumpstackobjects, whose header is
                        // clrstack's: the OS id, then the debugger index) on the same thread.
                        for c in ["stack", "dso"] {
                            let out =
                                run(&s, c).unwrap_or_else(|e| panic!("{name}: {i}: {c}: {e}"));
                            assert_eq!(
                                out.text.lines().next(),
                                Some(head),
                                "{name}: thread {i}'s {c} header"
                            );
                            let index = if c == "stack" {
                                &out.data[0]["index"]
                            } else {
                                &out.data["index"]
                            };
                            assert_eq!(index.as_u64(), i.parse().ok(), "{name}: {i}: {c}");
                        }
                        *checked.entry("stack and dso headers").or_default() += 1;
                    }
                    other => panic!("{name}: unknown section {other}"),
                }
            } else if cmd == "clrmodules -v" {
                clrmodules(name, &s, body);
                *checked.entry("clrmodules").or_default() += 1;
            } else if cmd.starts_with("dumpassembly ") {
                let ours = run(&s, cmd).unwrap_or_else(|e| panic!("{name}: {cmd}: {e}"));
                assert_eq!(ours.text, *body, "{name}: {cmd}");
                *checked.entry("dumpassembly").or_default() += 1;
            } else if cmd.starts_with("token2ee ") {
                if e.family() >= 11
                    && cmd
                        .split_whitespace()
                        .nth(2)
                        .is_some_and(|t| t.starts_with("06"))
                {
                    // .NET 11's MethodDef tokens are refused (runtime-async methods have two
                    // MethodDescs; aspnethang-net11's GetStockAsync gives another than SOS's).
                    let err = run(&s, cmd)
                        .err()
                        .unwrap_or_else(|| panic!("{name}: {cmd} answered"));
                    assert!(
                        err.to_string().contains("not verified for"),
                        "{name}: {cmd}: {err}"
                    );
                    *checked.entry("token2ee refused").or_default() += 1;
                    continue;
                }
                let ours = run(&s, cmd).unwrap_or_else(|e| panic!("{name}: {cmd}: {e}"));
                let m = &ours.data["matches"][0];
                if body.ends_with("<invalid module token>\n")
                    && !m["method_desc"].is_null()
                    && m["code"].is_null()
                {
                    // A MethodDesc without native code that SOS 10.0.750501 calls `<invalid
                    // module token>` (on these dumps the P/Invoke methods and the generic method
                    // definitions: SOS names other methods without code, with the code address
                    // -1, as dumpshell does); the header lines are SOS's all the same.
                    let head: Vec<&str> = body.lines().take(3).collect();
                    let ours_head: Vec<&str> = ours.text.lines().take(3).collect();
                    assert_eq!(ours_head, head, "{name}: {cmd}");
                    assert!(
                        ours.text
                            .ends_with("JITTED Code Address: ffffffffffffffff\n"),
                        "{name}: {cmd}"
                    );
                    *checked.entry("token2ee not jitted").or_default() += 1;
                    continue;
                }
                if let Some(def) = generic_definition(body) {
                    // A generic type definition's own MethodTable: SOS's token2ee names it in
                    // its own form (`Heap.Node<T1>`); dumpshell as the DAC does (`Heap.Node`1`,
                    // SOS's dumpmt: checked below against dumps/*.sos-dumpmt.txt). All but the
                    // name equal SOS's.
                    let but_name = |t: &str| -> Vec<String> {
                        t.lines()
                            .filter(|l| !l.starts_with("Name:"))
                            .map(str::to_string)
                            .collect()
                    };
                    assert_eq!(but_name(&ours.text), but_name(body), "{name}: {cmd}");
                    assert_eq!(m["name"].as_str(), Some(def.as_str()), "{name}: {cmd}");
                    *checked.entry("token2ee generic definition").or_default() += 1;
                    continue;
                }
                // SOS's own names of generic type definitions (`X<T1>`) in the DAC's form
                // (`X`1`, as dumpshell names them: checked above and against SOS's dumpmt).
                let sos: String = body
                    .split_inclusive('\n')
                    .map(|l| match generic_definition(l) {
                        Some(d) if l.starts_with("Name:") => format!("Name:        {d}\n"),
                        _ => l.to_string(),
                    })
                    .collect();
                assert_eq!(ours.text, sos, "{name}: {cmd}");
                *checked.entry("token2ee").or_default() += 1;
            } else if let Some(v) = cmd.strip_prefix("threadstate ") {
                let ours = run(&s, &format!("threadstate {v}")).unwrap().text;
                assert_eq!(ours, *body, "{name}: threadstate {v}");
                *checked.entry("threadstate").or_default() += 1;
            }
        }
        if name == "hang-net10" {
            // `sos <command>` is the command.
            assert_eq!(
                run(&s, "sos clrthreads").unwrap().data,
                run(&s, "clrthreads").unwrap().data
            );
        }
        let mut expected = vec!["clrmodules", "dumpassembly", "token2ee"];
        if secs.iter().any(|(c, _)| c == "clrthreads") {
            expected.extend([
                "clrthreads",
                "setthread",
                "registers",
                "clrstack",
                "stack and dso headers",
                "threadstate",
            ]);
        }
        for c in expected {
            assert!(
                checked.get(c).copied().unwrap_or(0) > 0,
                "{name}: no {c} checked"
            );
        }
        eprintln!("{name}: {checked:?}");
    }
}

/// The DAC's name of the generic type definition SOS's token2ee text names in its own form
/// (`Name:        Heap.Node<T1>` → `Heap.Node`1`; `Names.Pair<T1, T2>` → `Names.Pair`2`).
fn generic_definition(body: &str) -> Option<String> {
    let n = body.lines().find_map(|l| l.strip_prefix("Name:        "))?;
    let open = n.rfind('<')?;
    let args = n[open..].strip_prefix('<')?.strip_suffix('>')?;
    let k = args.split(", ").count();
    let numbered = args
        .split(", ")
        .enumerate()
        .all(|(i, a)| a == format!("T{}", i + 1));
    numbered.then(|| format!("{}`{k}", &n[..open]))
}

/// dumpmt of the generic type definitions' own MethodTables names them as SOS's dumpmt (the
/// DAC's GetMethodTableName: `Heap.Node`1`), `dumps/<name>.sos-dumpmt.txt`
/// (dumps/tools/sos_dumpmt.py).
#[test]
fn generic_definitions_are_named_as_the_dac_names_them() {
    let mut checked = 0;
    for (e, secs) in tests::sos::dumps_with("sos-dumpmt") {
        let n = &e.name;
        let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        for (cmd, body) in secs {
            let Some(mt) = cmd.strip_prefix("dumpmt ") else {
                continue;
            };
            let want = body
                .lines()
                .find_map(|l| l.strip_prefix("Name:"))
                .map(str::trim)
                .unwrap_or_else(|| panic!("{n}: {cmd}: no Name line"));
            let ours = run(&s, &format!("dumpmt {mt}")).unwrap();
            let got = ours
                .text
                .lines()
                .find_map(|l| l.strip_prefix("Name:"))
                .map(str::trim);
            assert_eq!(got, Some(want), "{n}: {cmd}");
            checked += 1;
        }
    }
    eprintln!("{checked} generic type definitions named as the DAC names them");
    assert!(
        checked >= 10,
        "only {checked} generic type definitions checked"
    );
}

/// `clrmodules` against SOS's `clrmodules -v`.
fn clrmodules(name: &str, s: &Session, body: &str) {
    // SOS's blocks: the path, then `    Key: value` lines.
    let mut sos: Vec<(String, HashMap<String, String>)> = Vec::new();
    for l in body.lines() {
        if let Some(kv) = l.strip_prefix("    ") {
            if let Some((k, v)) = kv.split_once(':') {
                sos.last_mut()
                    .unwrap_or_else(|| panic!("{name}: {l}"))
                    .1
                    .insert(k.trim().to_string(), v.trim().to_string());
            }
        } else if !l.trim().is_empty() {
            sos.push((l.to_string(), HashMap::new()));
        }
    }
    let out = run(s, "clrmodules --json").unwrap();
    let ours = out.data["modules"].as_array().unwrap();
    assert_eq!(ours.len(), sos.len(), "{name}: modules");
    assert!(!sos.is_empty(), "{name}: SOS listed no module");
    let mut text = String::new();
    for (m, (path, kv)) in ours.iter().zip(&sos) {
        let hexv = |k: &str| format!("{:#x}", u64::from_str_radix(&kv[k], 16).unwrap());
        assert_eq!(m["error"], serde_json::Value::Null, "{name}: {path}");
        // A dynamic (Reflection.Emit) module: SOS's `(Dynamic)`, no image, no file.
        let dynamic = kv.get("IsDynamic").is_some_and(|v| v == "True");
        assert_eq!(m["dynamic"].as_bool(), Some(dynamic), "{name}: {path}");
        if dynamic {
            assert_eq!(path, "(Dynamic)", "{name}");
            assert_eq!(m["path"], serde_json::Value::Null, "{name}: {path}");
        } else {
            assert_eq!(m["path"].as_str(), Some(path.as_str()), "{name}");
        }
        assert_eq!(
            m["base"].as_str().unwrap(),
            hexv("ImageBase"),
            "{name}: {path}"
        );
        assert_eq!(
            m["size"].as_u64().unwrap(),
            u64::from_str_radix(&kv["Size"], 16).unwrap(),
            "{name}: {path}"
        );
        assert_eq!(
            m["module"].as_str().unwrap(),
            hexv("ModuleAddress"),
            "{name}: {path}"
        );
        assert_eq!(
            m["assembly"].as_str().unwrap(),
            hexv("AssemblyAddress"),
            "{name}: {path}"
        );
        if !dynamic {
            assert_eq!(
                m["layout"].as_str().unwrap(),
                kv["Layout"].to_ascii_lowercase(),
                "{name}: {path}"
            );
        }
        text.push_str(&format!("{} {} {path}\n", kv["ImageBase"], kv["Size"]));
    }
    assert_eq!(out.text, text, "{name}: clrmodules' text");
}
