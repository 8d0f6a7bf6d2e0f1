//! NativeAOT dumps (`tests::nativeaot()`): the runtime found from the dump alone, its thread
//! list and its crash info, each compared with the scenario's manifest, the symbols.json that
//! dumps/tools/aotsymbols.py wrote from the core, the executable and its `.dbg`, and SOS's
//! `crashinfo` (`<name>.sos.txt`).

use clrdata::nativeaot::{AotVersionSource, NativeAot};
use clrdata::ClrError;
use commands::Session;
use dumpreader::{Memory, Target};
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
        for cmd in ["dumpheap", "dso", "eeheap", "dumpasync"] {
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
        // No managed thread id: the runtime publishes no way to it; said, never guessed.
        assert!(
            out.text.contains("Managed thread ids: not shown"),
            "{}",
            e.name
        );
        assert!(out.data["threads"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("managed_id").is_none()));
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

/// The crash info buffer (8, 10: the debug header's `g_CrashInfoBuffer`; 11: the buffer the
/// NativeAOT fail-fast exception record names in createdump's diagnostic header): on the 8, 10
/// and 11 crash dumps its exception and inner exception equal the manifest's and SOS's; the
/// other dumps have none.
#[test]
fn nativeaot_crash_info() {
    let mut crashes = 0;
    for e in tests::nativeaot() {
        let d = e.open();
        let aot = find(&e, &d);
        let got = aot.crash_info(&d);
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
    assert_eq!(crashes, 3, "the 8, 10 and 11 crash dumps");
}

/// `dumpheap -stat`'s census (8, 10: the debug header's GC globals; 11: the GC sub-descriptor):
/// the count of each of the
/// program's own types whose MethodTable symbols.json names equals the manifest's, less the
/// value-type statics (CoreCLR boxes them on the heap, which the manifest counts: heap.cs says
/// so; NativeAOT stores them inline in the type's static base); the walk meets no error.
#[test]
fn nativeaot_heap_census() {
    let mut compared = 0;
    for e in tests::nativeaot() {
        let d = e.open();
        let aot = find(&e, &d);
        let got = aot.heap_census(&d);
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

/// A minimal ELF64 file with what a separate debug file gives a reader of NativeAOT names: a
/// `.note.gnu.build-id` and a `.symtab` of (name, link-time address) symbols. The corpus does
/// not commit the builds' `.dbg` files (dumps/README.md, "The NativeAOT corpus"); this one is
/// made of the MethodTable symbols aotsymbols.py read from the real `.dbg` (symbols.json) and,
/// where given, its function symbols (name, link-time address, size).
fn symbol_file(build_id: &[u8], syms: &[(String, u64)]) -> Vec<u8> {
    symbol_file_with(build_id, syms, &[])
}

fn symbol_file_with(
    build_id: &[u8],
    syms: &[(String, u64)],
    funcs: &[(String, u64, u64)],
) -> Vec<u8> {
    fn pad(v: &mut Vec<u8>, a: usize) {
        while v.len() % a != 0 {
            v.push(0);
        }
    }
    let mut v = vec![0u8; 64];
    // .note.gnu.build-id
    let note = v.len();
    v.extend_from_slice(&4u32.to_le_bytes());
    v.extend_from_slice(&(build_id.len() as u32).to_le_bytes());
    v.extend_from_slice(&3u32.to_le_bytes()); // NT_GNU_BUILD_ID
    v.extend_from_slice(b"GNU\0");
    v.extend_from_slice(build_id);
    pad(&mut v, 8);
    let note_len = v.len() - note;
    // .strtab
    let strtab = v.len();
    v.push(0);
    let mut offs = Vec::new();
    for n in syms.iter().map(|s| &s.0).chain(funcs.iter().map(|f| &f.0)) {
        offs.push(v.len() - strtab);
        v.extend_from_slice(n.as_bytes());
        v.push(0);
    }
    let strtab_len = v.len() - strtab;
    pad(&mut v, 8);
    // .symtab: the null symbol, then global objects defined in section 1
    let symtab = v.len();
    v.extend_from_slice(&[0u8; 24]);
    for ((_, addr), off) in syms.iter().zip(&offs) {
        v.extend_from_slice(&(*off as u32).to_le_bytes());
        v.push(0x11); // STB_GLOBAL, STT_OBJECT
        v.push(0);
        v.extend_from_slice(&1u16.to_le_bytes());
        v.extend_from_slice(&addr.to_le_bytes());
        v.extend_from_slice(&8u64.to_le_bytes());
    }
    for ((_, addr, size), off) in funcs.iter().zip(&offs[syms.len()..]) {
        v.extend_from_slice(&(*off as u32).to_le_bytes());
        v.push(0x12); // STB_GLOBAL, STT_FUNC
        v.push(0);
        v.extend_from_slice(&1u16.to_le_bytes());
        v.extend_from_slice(&addr.to_le_bytes());
        v.extend_from_slice(&size.to_le_bytes());
    }
    let symtab_len = v.len() - symtab;
    // .shstrtab
    let shstr = v.len();
    let names = b"\0.note.gnu.build-id\0.strtab\0.symtab\0.shstrtab\0";
    v.extend_from_slice(names);
    pad(&mut v, 8);
    let shoff = v.len();
    // section headers: null, note (1), strtab (2), symtab (3), shstrtab (4)
    let mut sh = |name: u32, ty: u32, off: usize, size: usize, link: u32, info: u32, es: u64| {
        v.extend_from_slice(&name.to_le_bytes());
        v.extend_from_slice(&ty.to_le_bytes());
        v.extend_from_slice(&(if ty == 7 { 2u64 } else { 0 }).to_le_bytes()); // SHF_ALLOC
        v.extend_from_slice(&0u64.to_le_bytes());
        v.extend_from_slice(&(off as u64).to_le_bytes());
        v.extend_from_slice(&(size as u64).to_le_bytes());
        v.extend_from_slice(&link.to_le_bytes());
        v.extend_from_slice(&info.to_le_bytes());
        v.extend_from_slice(&8u64.to_le_bytes());
        v.extend_from_slice(&es.to_le_bytes());
    };
    sh(0, 0, 0, 0, 0, 0, 0);
    sh(1, 7, note, note_len, 0, 0, 0);
    sh(20, 3, strtab, strtab_len, 0, 0, 0);
    sh(28, 2, symtab, symtab_len, 2, 1, 24);
    sh(36, 3, shstr, names.len(), 0, 0, 0);
    v[0..8].copy_from_slice(b"\x7fELF\x02\x01\x01\0");
    v[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
    v[18..20].copy_from_slice(&62u16.to_le_bytes()); // x86-64
    v[20..24].copy_from_slice(&1u32.to_le_bytes());
    v[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
    v[0x34..0x36].copy_from_slice(&64u16.to_le_bytes());
    v[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
    v[0x3c..0x3e].copy_from_slice(&5u16.to_le_bytes()); // e_shnum
    v[0x3e..0x40].copy_from_slice(&4u16.to_le_bytes()); // e_shstrndx
    v
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// The manifest's count of `t` (a manifest type) on NativeAOT: less its value-type statics,
/// which NativeAOT keeps inline in the type's static base (CoreCLR boxes them on the heap, and
/// the manifest counts those boxes: heap.cs says so).
fn aot_count(e: &tests::Entry, t: &Value, st: &Value) -> u64 {
    let mut want = t["count"].as_u64().unwrap();
    if st["base_type_symbol"] == "_ZTV28S_P_CoreLib_System_ValueType" {
        want -= e.manifest["statics"].as_array().map_or(0, |v| {
            v.iter()
                .filter(|x| x["kind"] == "static" && x["value_type"] == t["name"])
                .count() as u64
        });
    }
    want
}

/// The types named: with the executable's symbol file on the image path (matched by build
/// id), every manifest type whose MethodTable symbol symbols.json gives is named in
/// `dumpheap -stat` by that symbol (less `_ZTV<n>`) and counted as the program allocated it; a
/// symbol file of another build id is refused, named, and the types stay unnamed but counted.
/// Without any (as the corpus is opened everywhere else), the census says plainly why.
#[test]
fn nativeaot_heap_census_named_by_symbol_file() {
    let mut compared = 0;
    for e in tests::nativeaot() {
        let sym = symbols(&e);
        let build_id = unhex(sym["executable"]["build_id"].as_str().unwrap());
        let exe = e.manifest["app"]["executable"].as_str().unwrap();
        // No symbol file anywhere: unnamed, said so, counted.
        let d = e.open();
        let c = find(&e, &d).heap_census(&d).unwrap();
        let by_crash_info = match &c.names {
            clrdata::nativeaot::AotTypeNames::Unnamed {
                reason,
                by_crash_info,
                ..
            } => {
                assert!(reason.contains(&hex_str(&build_id)), "{}: {reason}", e.name);
                *by_crash_info
            }
            other => panic!("{}: {other:?}", e.name),
        };
        assert!(c.total_objects > 1000);
        let named: Vec<_> = c.types.iter().filter(|t| t.name.is_some()).collect();
        assert_eq!(named.len(), by_crash_info, "{}", e.name);
        if e.manifest["dump"]["kind"] == "crash" {
            // Only the crash info's exception types are named without symbols: the manifest's
            // exception and its inner one, and the one in flight is the MethodTable the real
            // .dbg names (symbols.json's ExInfo chain).
            let ex = &e.manifest["exceptions"][0];
            let allowed = [ex["type"].as_str(), ex["inner"]["type"].as_str()];
            for t in &named {
                assert!(allowed.contains(&t.name.as_deref()), "{}: {t:?}", e.name);
            }
            let mut checked = 0;
            for th in sym["thread_store"]["threads"].as_array().unwrap() {
                for x in th["exinfo_chain"].as_array().unwrap() {
                    let mt = d.read_u64(hex(&x["exception"])).unwrap() & !7;
                    let t = c.types.iter().find(|t| t.mt == mt).unwrap();
                    let name = t
                        .name
                        .as_deref()
                        .unwrap_or_else(|| panic!("{}: {mt:#x}", e.name));
                    let mangled: String = name
                        .chars()
                        .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' })
                        .collect();
                    assert_eq!(
                        clrdata::nativeaot::method_table_symbol_name(
                            x["method_table_symbol"].as_str().unwrap()
                        ),
                        Some(format!("S_P_CoreLib_{mangled}").as_str()),
                        "{}",
                        e.name
                    );
                    checked += 1;
                }
            }
            assert!(checked >= 1 && by_crash_info >= 1, "{}", e.name);
        } else {
            assert_eq!(by_crash_info, 0, "{}", e.name);
        }
        let mts: Vec<(String, u64)> = sym["types"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["symbol"].is_string())
            .map(|t| (t["symbol"].as_str().unwrap().to_owned(), hex(&t["rva"])))
            .collect();
        let dir = std::env::temp_dir().join(format!("aot-dbg-{}-{}", e.name, std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let census_with = |id: &[u8]| {
            std::fs::write(dir.join(format!("{exe}.dbg")), symbol_file(id, &mts)).unwrap();
            let mut o = e.open_options();
            o.image_search_path.push(dir.clone());
            let d = dumpreader::Dump::open_with(&e.dump_path(), &o).unwrap();
            let s = Session::new(Arc::new(d), e.dump_path());
            commands::execute(&s, "dumpheap -stat")
                .unwrap()
                .unwrap()
                .0
                .data
        };
        // Another build's file: refused.
        let mut other = build_id.clone();
        other[0] ^= 0xff;
        let out = census_with(&other);
        assert_eq!(out["names"]["kind"], "unnamed", "{}", e.name);
        assert!(
            out["names"]["looked_for"]
                .to_string()
                .contains("refused: build id"),
            "{}: {}",
            e.name,
            out["names"]
        );
        // The dump's own build's file: named.
        let out = census_with(&build_id);
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(
            out["names"]["kind"], "symbols",
            "{}: {}",
            e.name, out["names"]
        );
        assert_eq!(out["names"]["method_tables"], mts.len());
        let rows = out["types"].as_array().unwrap();
        for t in e.manifest["types"].as_array().unwrap() {
            let Some(st) = sym["types"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["name"] == t["name"] && s["symbol"].is_string())
            else {
                continue;
            };
            let symbol = st["symbol"].as_str().unwrap();
            let name = clrdata::nativeaot::method_table_symbol_name(symbol).unwrap();
            let have: u64 = rows
                .iter()
                .filter(|r| r["name"] == name)
                .map(|r| r["count"].as_u64().unwrap())
                .sum();
            assert_eq!(
                have,
                aot_count(&e, t, st),
                "{}: {} ({name})",
                e.name,
                t["name"]
            );
            compared += 1;
        }
    }
    assert!(compared >= 20, "{compared} types compared");
}

fn hex_str(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// With the build's real `.dbg` (kept by dumps/generate-aot.sh in `dumps/build/<name>/app/`,
/// not committed): every manifest type symbols.json names is named and counted. Skipped,
/// saying so, where the build folder is absent.
#[test]
fn nativeaot_heap_census_named_by_the_real_dbg() {
    let mut ran = 0;
    for e in tests::nativeaot() {
        let exe = e.manifest["app"]["executable"].as_str().unwrap();
        let dir = tests::dumps_dir().join("build").join(&e.name).join("app");
        if !dir.join(format!("{exe}.dbg")).is_file() {
            continue;
        }
        let mut o = e.open_options();
        o.image_search_path.push(dir);
        let d = dumpreader::Dump::open_with(&e.dump_path(), &o).unwrap();
        let aot = find(&e, &d);
        let c = aot.heap_census(&d).unwrap();
        assert!(
            matches!(c.names, clrdata::nativeaot::AotTypeNames::Symbols { .. }),
            "{}: {:?}",
            e.name,
            c.names
        );
        let sym = symbols(&e);
        for t in e.manifest["types"].as_array().unwrap() {
            let Some(st) = sym["types"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["name"] == t["name"] && s["symbol"].is_string())
            else {
                continue;
            };
            let name = clrdata::nativeaot::method_table_symbol_name(st["symbol"].as_str().unwrap());
            let have: u64 = c
                .types
                .iter()
                .filter(|x| x.name.as_deref() == name)
                .map(|x| x.count)
                .sum();
            assert_eq!(have, aot_count(&e, t, st), "{}: {}", e.name, t["name"]);
        }
        ran += 1;
    }
    if ran == 0 {
        eprintln!(
            "SKIPPED nativeaot_heap_census_named_by_the_real_dbg: no dumps/build/<name>/app/<exe>.dbg \
             (dumps/generate-aot.sh keeps them; they are not committed)"
        );
    }
}

/// ILC's symbol of the manifest's method `Namespace.Type.Method` in the app `exe` (the
/// assembly PublishAot names the executable after): `<exe>_<Namespace_Type>__<Method>`, every
/// character that is not an ASCII letter or digit spelled `_` (the type names' rule,
/// [`clrdata::nativeaot::AotTypeNames`], with `__` before the method).
fn ilc_method_symbol(exe: &str, method: &str) -> String {
    let (ty, m) = method.rsplit_once('.').expect("Type.Method");
    let mangle = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect()
    };
    format!("{}_{}__{}", mangle(exe), mangle(ty), mangle(m))
}

/// `clrstack -all` of the dump, opened with `dir` on the image path when given.
fn aot_clrstack(e: &tests::Entry, dir: Option<&std::path::Path>, cmd: &str) -> Value {
    let mut o = e.open_options();
    if let Some(d) = dir {
        o.image_search_path.push(d.to_path_buf());
    }
    let d = dumpreader::Dump::open_with(&e.dump_path(), &o).unwrap();
    let s = Session::new(Arc::new(d), e.dump_path());
    commands::execute(&s, cmd)
        .unwrap_or_else(|err| panic!("{}: {cmd}: {err}", e.name))
        .unwrap()
        .0
        .data
}

/// A walk ends at the thread's first frame; on a gcore core, whose libc pages (its
/// `.eh_frame`) gcore leaves out and whose libc file the corpus does not keep, it may instead
/// stop at libc, saying so, past the executable's frames (the waits' native frames are left
/// through the thread's transition frame, said as a gap).
fn assert_ends(e: &tests::Entry, st: &Value, gcore: bool) {
    if st["end"]["kind"] == "thread_start" {
        return;
    }
    let reason = st["end"]["reason"].as_str().unwrap_or("");
    assert!(
        gcore
            && (reason.contains("no unwind info in libc.so.6")
                || reason.contains(
                    "(libc.so.6) cannot be checked: the code before it is not in the dump"
                )),
        "{}: thread {}: {}",
        e.name,
        st["os_id"],
        st["end"]
    );
}

/// Whether `want` occurs in `have` in order (not necessarily adjacent).
fn in_order(want: &[String], have: &[&str]) -> bool {
    let mut it = have.iter();
    want.iter().all(|w| it.any(|h| h == w))
}

/// The stacks (`clrstack -all`, `pstacks`) by native unwinding from each thread's registers:
/// on every NativeAOT dump every ThreadStore thread is walked to its first frame (`_start`,
/// `clone3`: the unwind info has no return address). Without a symbol file (as the corpus is
/// opened everywhere else) the executable's frames are `<stripped>`, none named. With the
/// stand-in symbol file (symbols.json's functions of the program, from the real `.dbg`), each
/// manifest thread's stack holds the manifest's methods, innermost first, under ILC's names
/// ([`ilc_method_symbol`], checked against symbols.json's), and `pstacks` holds the same.
#[test]
fn nativeaot_stacks() {
    let mut threads_matched = 0;
    for e in tests::nativeaot() {
        let sym = symbols(&e);
        let exe = e.manifest["app"]["executable"].as_str().unwrap();
        let d = e.open();
        let threads = find(&e, &d).threads(&d).unwrap();
        // Without symbols: every thread walked to its base, the app's frames unnamed.
        let out = aot_clrstack(&e, None, "clrstack -all");
        assert_eq!(out["names"]["kind"], "unnamed", "{}", e.name);
        let stacks = out["stacks"].as_array().unwrap();
        assert_eq!(
            stacks
                .iter()
                .map(|s| s["os_id"].as_u64().unwrap())
                .collect::<Vec<_>>(),
            threads.iter().map(|t| t.os_id).collect::<Vec<_>>(),
            "{}",
            e.name
        );
        let gcore = e.manifest["dump"]["kind"] == "gcore";
        for st in stacks {
            assert_ends(&e, st, gcore);
            let frames = st["frames"].as_array().unwrap();
            assert!(
                frames.iter().any(|f| f["kind"] == "app"),
                "{}: thread {} has no frame in the executable",
                e.name,
                st["os_id"]
            );
            for f in frames.iter().filter(|f| f["kind"] == "app") {
                assert!(f["symbol"].is_null(), "{}: {f}", e.name);
            }
        }
        let text = commands::execute(&session(&e), "clrstack -all")
            .unwrap()
            .unwrap()
            .0
            .text;
        assert!(text.contains("<stripped> "), "{}", e.name);
        // The documented rule gives the binary's own names.
        let methods = sym["methods"].as_array().unwrap();
        let mut funcs = Vec::new();
        for m in methods {
            let name = m["name"].as_str().unwrap();
            let symbol = m["symbol"].as_str().unwrap();
            if !name.contains('<') && !name.contains('+') {
                assert_eq!(ilc_method_symbol(exe, name), symbol, "{}", e.name);
            }
            funcs.push((
                symbol.to_owned(),
                hex(&m["rva"]),
                m["size"].as_u64().unwrap(),
            ));
        }
        // With the stand-in symbol file (of the same functions): the manifest's methods in order.
        let dir = stand_in_symbols(&e, "stk");
        let out = aot_clrstack(&e, Some(&dir), "clrstack -all");
        let pst = aot_clrstack(&e, Some(&dir), "pstacks");
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(
            out["names"]["kind"], "symbols",
            "{}: {}",
            e.name, out["names"]
        );
        // ILC 8 writes some functions (the async methods' stubs) with size 0: not read, since
        // where they end is not stated.
        let sized = funcs.iter().filter(|f| f.2 > 0).count();
        assert_eq!(out["names"]["functions"], sized, "{}", e.name);
        let stacks = out["stacks"].as_array().unwrap();
        for t in e.manifest["threads"].as_array().unwrap() {
            let want: Vec<String> = t["frames"]
                .as_array()
                .map(|v| {
                    v.iter()
                        .map(|f| ilc_method_symbol(exe, f.as_str().unwrap()))
                        .collect()
                })
                .unwrap_or_default();
            if want.is_empty() {
                continue;
            }
            let id = t["os_id"].as_u64().unwrap();
            let st = stacks
                .iter()
                .find(|s| s["os_id"] == id)
                .unwrap_or_else(|| panic!("{}: no stack of thread {id}", e.name));
            assert_ends(&e, st, gcore);
            let have: Vec<&str> = st["frames"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["kind"] == "app")
                .filter_map(|f| f["symbol"].as_str())
                .collect();
            assert!(
                in_order(&want, &have),
                "{}: thread {id}: {want:?} not in order in {have:?}",
                e.name
            );
            // pstacks: a path of the tree holds them root first.
            let mut root_first = want.clone();
            root_first.reverse();
            assert!(
                tree_has_path(&pst["roots"], &root_first, id),
                "{}: pstacks lacks {root_first:?} for thread {id}",
                e.name
            );
            threads_matched += 1;
        }
    }
    assert!(threads_matched >= 40, "{threads_matched} threads matched");
}

/// Whether the `pstacks` tree has, on thread `id`'s path, the methods `want` in order.
fn tree_has_path(nodes: &Value, want: &[String], id: u64) -> bool {
    fn walk(nodes: &Value, id: u64, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        for n in nodes.as_array().into_iter().flatten() {
            if !n["threads"].as_array().unwrap().iter().any(|t| t == id) {
                continue;
            }
            path.push(n["method"].as_str().unwrap().to_owned());
            if n["children"].as_array().unwrap().is_empty() {
                out.push(path.clone());
            }
            walk(&n["children"], id, path, out);
            path.pop();
        }
    }
    let mut paths = Vec::new();
    walk(nodes, id, &mut Vec::new(), &mut paths);
    paths.iter().any(|p| {
        let have: Vec<&str> = p.iter().map(String::as_str).collect();
        in_order(want, &have)
    })
}

/// A folder holding the stand-in symbol file of `e` (symbols.json's functions of the program,
/// from the real `.dbg`, under the executable's build id), and the executable's name.
fn stand_in_symbols(e: &tests::Entry, tag: &str) -> std::path::PathBuf {
    let sym = symbols(e);
    let exe = e.manifest["app"]["executable"].as_str().unwrap();
    let funcs: Vec<(String, u64, u64)> = sym["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["symbol"].as_str().unwrap().to_owned(),
                hex(&m["rva"]),
                m["size"].as_u64().unwrap(),
            )
        })
        .collect();
    let build_id = unhex(sym["executable"]["build_id"].as_str().unwrap());
    let dir = std::env::temp_dir().join(format!("aot-{tag}-{}-{}", e.name, std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{exe}.dbg")),
        symbol_file_with(&build_id, &[], &funcs),
    )
    .unwrap();
    dir
}

/// `triage` on every NativeAOT dump gives one page: the ThreadStore's threads, the top merged
/// stacks from the NativeAOT stack walk (the executable's frames `<stripped> app+0x..` without
/// symbols, as clrstack names them), the crash dump's faulting thread (the manifest's crashing
/// thread) with its stack and the exception its crash info records (the manifest's type,
/// message and inner type), the heap census, and each thing it cannot read said once. With
/// the stand-in symbol file, the crashing thread's frames hold the manifest's methods in order
/// under ILC's names.
#[test]
fn nativeaot_triage() {
    let mut crashes = 0;
    // The crash of one bug on .NET 8, 10 and 11: one bucket (its crash info's trace names
    // parameters on 8 and 10 and not on 11; the signature keeps their types only).
    let mut crash_signatures = BTreeSet::new();
    for e in tests::nativeaot() {
        let d = e.open();
        let threads = find(&e, &d).threads(&d).unwrap();
        let ids: BTreeSet<u64> = threads.iter().map(|t| t.os_id).collect();
        let tr = commands::triage::triage(&e.dump_path(), &e.open_options());
        let page = commands::triage::render(&tr);
        assert!(tr.error.is_none(), "{}: {:?}", e.name, tr.error);
        // One page: each problem once, none a refusal for being NativeAOT, none a bug.
        let distinct: BTreeSet<&String> = tr.problems.iter().collect();
        assert_eq!(
            distinct.len(),
            tr.problems.len(),
            "{}: {:?}",
            e.name,
            tr.problems
        );
        for p in &tr.problems {
            assert!(
                !p.contains("a bug") && !p.contains("is a NativeAOT app"),
                "{}: {p}",
                e.name
            );
        }
        assert!(page.lines().count() <= 60, "{}:\n{page}", e.name);
        // The top stacks: ThreadStore threads, the executable's frames unnamed.
        assert!(!tr.top_stacks.is_empty(), "{}:\n{page}", e.name);
        for m in &tr.top_stacks {
            assert!(m.threads.iter().all(|t| ids.contains(t)), "{}", e.name);
            assert!(!m.frames.is_empty(), "{}", e.name);
            for f in &m.frames {
                assert!(f.starts_with("<stripped> "), "{}: {f}", e.name);
            }
        }
        assert!(page.contains("<stripped> "), "{}:\n{page}", e.name);
        // The census.
        assert!(tr.heap_objects.is_some_and(|n| n > 0), "{}", e.name);
        assert!(!tr.heaviest_types.is_empty(), "{}", e.name);
        if e.manifest["dump"]["kind"] != "crash" {
            assert!(tr.crash_thread_frames.is_empty(), "{}", e.name);
            assert!(tr.current_exception.is_none(), "{}", e.name);
            continue;
        }
        let crasher = e.manifest["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["role"] == "crash")
            .unwrap();
        let crash_id = crasher["os_id"].as_u64().unwrap();
        let x = tr
            .current_exception
            .as_ref()
            .unwrap_or_else(|| panic!("{}: no exception:\n{page}", e.name));
        assert_eq!(x.thread_os_id, Some(crash_id), "{}", e.name);
        let want = &e.manifest["exceptions"][0];
        assert_eq!(x.type_name, want["type"].as_str().unwrap(), "{}", e.name);
        assert_eq!(x.message.as_deref(), want["message"].as_str(), "{}", e.name);
        assert_eq!(
            x.inner_exception_type.as_deref(),
            want["inner"]["type"].as_str(),
            "{}",
            e.name
        );
        assert!(!tr.crash_thread_frames.is_empty(), "{}:\n{page}", e.name);
        assert!(
            page.contains(&format!("Crashing thread {crash_id:x}, innermost frames:")),
            "{}:\n{page}",
            e.name
        );
        // The crashing thread's stack is its own: the same frames as clrstack's walk of it.
        let st = aot_clrstack(&e, None, &format!("clrstack {crash_id:#x}"));
        let walked: Vec<String> = st["stacks"][0]["frames"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["kind"] == "app")
            .map(|f| {
                format!(
                    "<stripped> {}+{}",
                    f["module"].as_str().unwrap(),
                    f["module_offset"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(tr.crash_thread_frames, walked, "{}", e.name);
        let sig = commands::buckets::signature(&tr).expect("a crash signature");
        crash_signatures.insert(sig.text);
        // With the stand-in symbols: the manifest's methods, in order.
        let exe = e.manifest["app"]["executable"].as_str().unwrap();
        let dir = stand_in_symbols(&e, "triage");
        let mut o = e.open_options();
        o.image_search_path.push(dir.clone());
        let named = commands::triage::triage(&e.dump_path(), &o);
        std::fs::remove_dir_all(&dir).ok();
        let want: Vec<String> = crasher["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| ilc_method_symbol(exe, f.as_str().unwrap()))
            .collect();
        let have: Vec<&str> = named
            .crash_thread_frames
            .iter()
            .map(String::as_str)
            .collect();
        assert!(
            in_order(&want, &have),
            "{}: {want:?} not in order in {have:?}",
            e.name
        );
        assert!(
            !named.problems.iter().any(|p| p.contains("<stripped>")),
            "{}: {:?}",
            e.name,
            named.problems
        );
        crashes += 1;
    }
    assert_eq!(crashes, 3);
    assert_eq!(crash_signatures.len(), 1, "{crash_signatures:#?}");
}

/// Where the runtime's `RhGetRuntimeVersion` is in the executable of `e` (its offset from the
/// load address), for a stand-in symbol file: symbols.json, written before dumpshell read the
/// function, does not record its symbol, so it is looked for here by its code
/// (`push rbp; mov rbp, rsp; mov dword [rdi], len; lea rax, [rip+d]; pop rbp; ret` with a
/// version-sized length: its sibling `RhGetCrashInfoBuffer` stores 8192). None when the code is
/// not in the dump (a gcore core without the executable's text).
fn rh_get_runtime_version_rva(d: &dumpreader::Dump, aot: &NativeAot) -> Option<u64> {
    let m = d.modules().iter().find(|m| m.base == aot.base)?;
    let size = m.size().min(64 << 20);
    let mut found = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut at = 0u64;
    while at < size {
        let n = (buf.len() as u64).min(size - at) as usize;
        if d.read_exact(m.base + at, &mut buf[..n]).is_ok() {
            for i in 0..n.saturating_sub(19) {
                let c = &buf[i..i + 19];
                if c[..6] == [0x55, 0x48, 0x89, 0xe5, 0xc7, 0x07]
                    && c[10..13] == [0x48, 0x8d, 0x05]
                    && c[17..19] == [0x5d, 0xc3]
                    && u32::from_le_bytes([c[6], c[7], c[8], c[9]]) <= 16
                {
                    found.push(at + i as u64);
                }
            }
        }
        // Overlap the windows by the code's length.
        at += n.saturating_sub(19).max(1) as u64;
    }
    found.dedup();
    assert!(found.len() <= 1, "{found:x?}");
    found.first().copied()
}

/// The exact version of a NativeAOT app on 8 and 10, whose debug header states only the
/// family: with a symbol file naming `RhGetRuntimeVersion`, the string it returns, equal to the
/// manifest's version (the ILCompiler package that built the app) and, in a crash dump, to the
/// crash info's `runtime_version`; a symbol file pointing the name at other code is refused
/// and the version left unstated.
#[test]
fn nativeaot_version_from_the_symbol_file() {
    let mut read = 0;
    for e in tests::nativeaot() {
        let d = e.open();
        let aot = find(&e, &d);
        assert!(
            aot.version_from_symbol_file(&d).is_err(),
            "{}: no symbol file is on the corpus's image path",
            e.name
        );
        let Some(rva) = rh_get_runtime_version_rva(&d, &aot) else {
            eprintln!("{}: RhGetRuntimeVersion's code is not in the dump", e.name);
            continue;
        };
        let sym = symbols(&e);
        let exe = e.manifest["app"]["executable"].as_str().unwrap();
        let build_id = unhex(sym["executable"]["build_id"].as_str().unwrap());
        let ilc = e.manifest["app"]["ilcompiler"].as_str().unwrap();
        assert!(ilc.ends_with(&format!(" {}", e.runtime_version())), "{ilc}");
        let dir = std::env::temp_dir().join(format!("aot-ver-{}-{}", e.name, std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let open_with = |at: u64| {
            std::fs::write(
                dir.join(format!("{exe}.dbg")),
                symbol_file_with(&build_id, &[], &[("RhGetRuntimeVersion".into(), at, 19)]),
            )
            .unwrap();
            let mut o = e.open_options();
            o.image_search_path.push(dir.clone());
            dumpreader::Dump::open_with(&e.dump_path(), &o).unwrap()
        };
        let named = open_with(rva);
        let a = find(&e, &named);
        let v = a
            .version_from_symbol_file(&named)
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        assert_eq!(v, e.runtime_version(), "{}", e.name);
        assert_eq!(
            a.version.as_deref(),
            Some(e.runtime_version()),
            "{}",
            e.name
        );
        let expected_source = match (e.family(), e.manifest["dump"]["kind"] == "crash") {
            (11, _) => AotVersionSource::ContractDescriptor,
            (_, true) => AotVersionSource::CrashInfo,
            _ => AotVersionSource::SymbolFile,
        };
        assert_eq!(a.version_source, expected_source, "{}", e.name);
        if let Some(ci) = a.crash_info(&named).unwrap() {
            assert_eq!(ci.json["runtime_version"], v.as_str(), "{}", e.name);
        }
        // The name on other code (the function before it): refused, nothing stated.
        let wrong = open_with(rva - 0x30);
        let a = find(&e, &wrong);
        let err = a.version_from_symbol_file(&wrong).unwrap_err().to_string();
        assert!(err.contains("RhGetRuntimeVersion"), "{}: {err}", e.name);
        if expected_source == AotVersionSource::SymbolFile {
            assert_eq!(a.version, None, "{}", e.name);
        }
        std::fs::remove_dir_all(&dir).ok();
        read += 1;
    }
    assert!(read >= 9, "{read} dumps read");
}
