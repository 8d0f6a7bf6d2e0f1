//! NativeAOT dumps (`tests::nativeaot()`): the runtime found from the dump alone, its thread
//! list and its crash info, each compared with the scenario's manifest, the symbols.json that
//! dumps/tools/aotsymbols.py wrote from the core, the executable and its `.dbg`, and SOS's
//! `crashinfo` (`<name>.sos.txt`).

use clrdata::nativeaot::{AotVersionSource, NativeAot};
use clrdata::ClrError;
use commands::Session;
use dumpreader::Target;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

fn symbols(e: &tests::Entry) -> Value {
    let p = tests::dumps_dir().join(format!("{}.symbols.json", e.name));
    serde_json::from_str(&std::fs::read_to_string(&p).expect("symbols.json")).expect("JSON")
}

fn hex(v: &Value) -> u64 {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("not a hex string: {v}"));
    u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex")
}

fn find(e: &tests::Entry, d: &dumpreader::Dump) -> NativeAot {
    NativeAot::find(d)
        .unwrap_or_else(|err| panic!("{}: {err}", e.name))
        .unwrap_or_else(|| panic!("{}: no NativeAOT runtime found", e.name))
}

/// On .NET 11 (whose descriptor names no crash info buffer and whose GC sub-descriptor is not
/// read yet) `got` must be the precise refusal; true when it was, and the dump is done.
fn refused_on_11<T: std::fmt::Debug>(e: &tests::Entry, got: &Result<T, ClrError>) -> bool {
    if e.family() != 11 {
        return false;
    }
    assert!(
        matches!(got, Err(ClrError::NotFound { .. })),
        "{}: {got:?}",
        e.name
    );
    true
}

#[test]
fn the_corpus_has_nativeaot_dumps_of_each_release() {
    let families: BTreeSet<u32> = tests::nativeaot().iter().map(|e| e.family()).collect();
    assert_eq!(families, BTreeSet::from([8, 10, 11]));
}

/// Every NativeAOT dump: the runtime is found, of the manifest's version (exact where the dump
/// states it: the 11 descriptor, the crash info of a crashed 8/10 app), and CoreCLR's
/// discovery refuses it as NativeAOT, naming the version.
#[test]
fn nativeaot_runtime_and_version() {
    for e in tests::nativeaot() {
        let d = e.open();
        let aot = find(&e, &d);
        assert_eq!(aot.family, e.family(), "{}", e.name);
        let crashed = e.manifest["dump"]["kind"] == "crash";
        let expected_source = match (e.family(), crashed) {
            (11, _) => AotVersionSource::ContractDescriptor,
            (_, true) => AotVersionSource::CrashInfo,
            _ => AotVersionSource::HeaderVersion,
        };
        assert_eq!(aot.version_source, expected_source, "{}", e.name);
        match &aot.version {
            Some(v) => assert_eq!(v, e.runtime_version(), "{}", e.name),
            None => assert_eq!(expected_source, AotVersionSource::HeaderVersion),
        }
        // The header version or the descriptor, as symbols.json observed it.
        let sym = symbols(&e);
        match &aot.layout {
            clrdata::nativeaot::AotLayoutSource::DebugHeader {
                address,
                major,
                type_entries,
                ..
            } => {
                let h = &sym["debug_header"];
                assert_eq!(*address, hex(&h["address"]), "{}", e.name);
                assert_eq!(*major as u64, h["major_version"].as_u64().unwrap());
                assert_eq!(
                    *type_entries,
                    h["entries"].as_array().unwrap().len(),
                    "{}",
                    e.name
                );
            }
            clrdata::nativeaot::AotLayoutSource::ContractDescriptor { address, .. } => {
                assert_eq!(*address, hex(&sym["contract_descriptor"]["address"]));
            }
        }
        match clrdata::Runtime::discover(&d) {
            Err(ClrError::NativeAot { runtime, base, .. }) => {
                assert_eq!(base, aot.base, "{}", e.name);
                assert!(
                    runtime.contains(&aot.version_text()),
                    "{}: {runtime}",
                    e.name
                );
            }
            other => panic!("{}: discovery gave {:?}", e.name, other.err()),
        }
    }
}

fn session(e: &tests::Entry) -> Session {
    let d: Arc<dyn Target> = Arc::new(e.open());
    Session::new(d, e.dump_path())
}

/// `info` and `eeversion` name NativeAOT and its version; a command that reads CoreCLR's
/// structures refuses with the NativeAOT error, never an empty answer.
#[test]
fn commands_name_nativeaot_and_refuse_coreclr_commands() {
    for e in tests::nativeaot() {
        let s = session(&e);
        let (info, _) = commands::execute(&s, "info").unwrap().unwrap();
        let shape = &info.data["app_shape"];
        assert_eq!(shape["shape"], "nativeaot", "{}", e.name);
        let v = shape["runtime_version"].as_str().unwrap();
        assert!(
            e.runtime_version().starts_with(v),
            "{}: {v} against {}",
            e.name,
            e.runtime_version()
        );
        assert_eq!(info.data["nativeaot"]["family"], e.family());
        let (ee, _) = commands::execute(&s, "eeversion").unwrap().unwrap();
        assert_eq!(ee.data["version"], v, "{}", e.name);
        assert!(ee.data["runtime"]
            .as_str()
            .unwrap()
            .starts_with("NativeAOT .NET"));
        for cmd in ["dumpheap", "clrstack -all", "eeheap", "dumpasync"] {
            match commands::execute(&s, cmd) {
                Err(commands::CommandError::NoClr {
                    error: ClrError::NativeAot { .. },
                }) => {}
                Err(other) => panic!("{}: {cmd}: {other}", e.name),
                Ok(_) => panic!("{}: {cmd} answered on a NativeAOT dump", e.name),
            }
        }
    }
}

/// The ThreadStore's list: every manifest thread (by OS id) is in it, and it equals what
/// aotsymbols.py read (OS id, state, transition frame, the ExInfo chain's exceptions).
#[test]
fn nativeaot_threads() {
    for e in tests::nativeaot() {
        let d = e.open();
        let aot = find(&e, &d);
        let threads = aot
            .threads(&d)
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let ids: BTreeSet<u64> = threads.iter().map(|t| t.os_id).collect();
        for t in e.manifest["threads"].as_array().unwrap() {
            let id = t["os_id"].as_u64().unwrap();
            assert!(
                ids.contains(&id),
                "{}: manifest thread {id} missing",
                e.name
            );
        }
        assert!(threads.iter().all(|t| t.in_dump), "{}", e.name);
        // The finalizer: attached, GC stress suppressed (TSF_SuppressGcStress).
        assert_eq!(
            threads.iter().filter(|t| t.state == 0x9).count(),
            1,
            "{}",
            e.name
        );
        let sym = symbols(&e);
        let truth = sym["thread_store"]["threads"].as_array().unwrap();
        assert_eq!(threads.len(), truth.len(), "{}", e.name);
        for (t, w) in threads.iter().zip(truth) {
            assert_eq!(t.address, hex(&w["thread"]), "{}", e.name);
            assert_eq!(t.os_id, w["os_id"].as_u64().unwrap(), "{}", e.name);
            assert_eq!(t.state as u64, hex(&w["state_flags"]), "{}", e.name);
            assert_eq!(
                t.transition_frame,
                hex(&w["transition_frame"]),
                "{}",
                e.name
            );
            let ex: Vec<u64> = w["exinfo_chain"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| hex(&x["exception"]))
                .collect();
            assert_eq!(t.exceptions, ex, "{}", e.name);
        }
        // The crashing thread of a crash dump holds the unhandled exception in flight.
        if e.manifest["dump"]["kind"] == "crash" {
            let crasher = e.manifest["threads"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["role"] == "crash")
                .unwrap();
            let t = threads
                .iter()
                .find(|t| Some(t.os_id) == crasher["os_id"].as_u64())
                .unwrap();
            assert_eq!(t.exceptions.len(), 1, "{}", e.name);
        }
        // triage's summary counts the same threads and names the runtime.
        let tr = commands::triage::triage(&e.dump_path(), &e.open_options());
        assert_eq!(tr.managed_threads, Some(threads.len() as u64), "{}", e.name);
        assert!(
            tr.runtime
                .as_deref()
                .is_some_and(|r| r.starts_with("NativeAOT .NET")),
            "{}: {:?}",
            e.name,
            tr.runtime
        );
        assert!(
            !tr.problems.iter().any(|p| p.contains("a bug")),
            "{}: {:?}",
            e.name,
            tr.problems
        );
        // The command's JSON says the same.
        let s = session(&e);
        let (out, _) = commands::execute(&s, "clrthreads").unwrap().unwrap();
        let listed: Vec<u64> = out.data["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["os_id"].as_u64().unwrap())
            .collect();
        assert_eq!(
            listed,
            threads.iter().map(|t| t.os_id).collect::<Vec<_>>(),
            "{}",
            e.name
        );
    }
}

/// The exception lines of SOS's `crashinfo` ("Exception type:", "Message:"), first the
/// current exception then its inner one.
fn sos_exception(e: &tests::Entry) -> Vec<(String, String)> {
    let p = tests::dumps_dir().join(format!("{}.sos.txt", e.name));
    let text = std::fs::read_to_string(p).expect("sos.txt");
    let mut out = Vec::new();
    let mut ty = None;
    for l in text.lines() {
        let l = l.trim();
        if let Some(t) = l.strip_prefix("Exception type:") {
            ty = Some(t.trim().to_string());
        } else if let (Some(m), Some(t)) = (l.strip_prefix("Message:"), &ty) {
            out.push((t.clone(), m.trim().to_string()));
            ty = None;
        }
        if l.starts_with("** Thread") {
            break; // the current exception and its inner ones are printed first
        }
    }
    out
}

/// The crash info buffer: on the 8 and 10 crash dumps its exception and inner exception equal
/// the manifest's and SOS's; the other 8/10 dumps have an empty buffer; .NET 11's descriptor
/// names no buffer, so it is refused there.
#[test]
fn nativeaot_crash_info() {
    let mut crashes = 0;
    for e in tests::nativeaot() {
        let d = e.open();
        let aot = find(&e, &d);
        let got = aot.crash_info(&d);
        if refused_on_11(&e, &got) {
            continue;
        }
        let got = got.unwrap_or_else(|err| panic!("{}: {err}", e.name));
        if e.manifest["dump"]["kind"] != "crash" {
            assert!(got.is_none(), "{}: {got:?}", e.name);
            continue;
        }
        crashes += 1;
        let ci = got.unwrap_or_else(|| panic!("{}: empty crash info", e.name));
        let want = &e.manifest["exceptions"][0];
        let ex = &ci.json["exception"];
        assert_eq!(ex["type"], want["type"], "{}", e.name);
        assert_eq!(ex["message"], want["message"], "{}", e.name);
        assert_eq!(ex["inner"][0]["type"], want["inner"]["type"], "{}", e.name);
        assert_eq!(ex["inner"][0]["message"], want["inner"]["message"]);
        assert_eq!(ci.json["runtime_version"], e.runtime_version());
        // The exception's address is the crashing thread's exception in flight.
        let threads = aot.threads(&d).unwrap();
        assert!(threads
            .iter()
            .any(|t| t.exceptions == [hex(&ex["address"])]));
        let sos = sos_exception(&e);
        assert_eq!(
            sos,
            vec![
                (
                    want["type"].as_str().unwrap().to_string(),
                    want["message"].as_str().unwrap().to_string()
                ),
                (
                    want["inner"]["type"].as_str().unwrap().to_string(),
                    want["inner"]["message"].as_str().unwrap().to_string()
                ),
            ],
            "{}: SOS",
            e.name
        );
        // The commands: crashinfo, and printexception without an address.
        let s = session(&e);
        for cmd in ["crashinfo", "pe"] {
            let (out, _) = commands::execute(&s, cmd).unwrap().unwrap();
            assert_eq!(out.data["crash_info"]["exception"]["type"], want["type"]);
        }
    }
    assert_eq!(crashes, 2, "the 8 and 10 crash dumps");
}

/// `dumpheap -stat`'s census (8, 10: the debug header's GC globals): the count of each of the
/// program's own types whose MethodTable symbols.json names equals the manifest's, less the
/// value-type statics (CoreCLR boxes them on the heap, which the manifest counts: heap.cs says
/// so; NativeAOT stores them inline in the type's static base); the walk meets no error.
/// Refused on 11 (its GC sub-descriptor is not read yet).
#[test]
fn nativeaot_heap_census() {
    let mut compared = 0;
    for e in tests::nativeaot() {
        let d = e.open();
        let aot = find(&e, &d);
        let got = aot.heap_census(&d);
        if refused_on_11(&e, &got) {
            continue;
        }
        let c = got.unwrap_or_else(|err| panic!("{}: {err}", e.name));
        assert!(c.errors.is_empty(), "{}: {:?}", e.name, c.errors);
        assert!(c.total_objects > 1000, "{}: {}", e.name, c.total_objects);
        let sym = symbols(&e);
        let sym_types = sym["types"].as_array().unwrap();
        for t in e.manifest["types"].as_array().unwrap() {
            let name = &t["name"];
            let Some(st) = sym_types
                .iter()
                .find(|s| &s["name"] == name && s["method_table"].is_string())
            else {
                continue; // generic or array: symbols.json did not look it up
            };
            let mt = hex(&st["method_table"]);
            let mut want = t["count"].as_u64().unwrap();
            if st["base_type_symbol"] == "_ZTV28S_P_CoreLib_System_ValueType" {
                let statics = e.manifest["statics"]
                    .as_array()
                    .map(|v| {
                        v.iter()
                            .filter(|x| x["kind"] == "static" && &x["value_type"] == name)
                            .count() as u64
                    })
                    .unwrap_or(0);
                want -= statics;
            }
            let have = c.types.iter().find(|x| x.mt == mt).map_or(0, |x| x.count);
            assert_eq!(have, want, "{}: {name} (MethodTable {mt:#x})", e.name);
            compared += 1;
        }
        // The command's JSON: the same census.
        let s = session(&e);
        let (out, _) = commands::execute(&s, "dumpheap -stat").unwrap().unwrap();
        assert_eq!(out.data["total_objects"], c.total_objects, "{}", e.name);
        assert!(
            commands::execute(&s, "dumpheap -type Foo").is_err(),
            "{}",
            e.name
        );
    }
    assert!(compared >= 20, "{compared} types compared");
}
