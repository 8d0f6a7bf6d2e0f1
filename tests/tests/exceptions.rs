//! Exceptions (`printexception`, `dumpexceptions`) read without the DAC, against the truths:
//! the crash and heap scenarios' manifests (type, message, thrown_in of the exception and its
//! inner one; the crashing thread), the DAC's heap census (how many objects of each exception
//! type) and the DAC's own view of the exception objects (`dumps/<name>.locks.dac.json`, from
//! `dumps/tools/dacprobe/lockprobe.py`: GetObjectExceptionData, GetMethodDescName and
//! GetCodeHeaderData for every recorded frame).

use clrdata::analysis::exceptions::{
    current_thread, exception_chain, heap_exceptions, read_exception, ExceptionData,
};
use clrdata::model::objects::ObjectReader;
use clrdata::model::stack::StackWalker;
use clrdata::prelude::*;
use clrdata::{Runtime, TypeNames};
use dumpreader::{Dump, Target};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

fn hex(v: &Value) -> u64 {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("not a hex string: {v}"));
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

fn open(e: &tests::Entry) -> (Arc<Dump>, Runtime<Arc<Dump>>) {
    let d = Arc::new(e.open());
    let rt = tests::discover(d.clone()).unwrap_or_else(|err| panic!("{}: {err}", e.name));
    (d, rt)
}

/// The DAC's exceptions and sync blocks of an entry, checked to belong to the committed dump.
fn dac_locks(e: &tests::Entry) -> Option<Value> {
    let p = tests::dumps_dir().join(format!("{}.locks.dac.json", e.name));
    let text = std::fs::read_to_string(p).ok()?;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["dump_sha256"], e.dac["dump_file"]["sha256"],
        "{}.locks.dac.json was written for another dump: regenerate it",
        e.name
    );
    Some(v)
}

/// The dumps whose exceptions the tests claim (.NET 8, 9, 10 and 11).
fn exceptions_claimed() -> Vec<tests::Entry> {
    tests::readable_for(tests::Capability::Exceptions)
}

/// Whether the tests claim method names (MethodDescs) and code offsets on the dump: elsewhere a
/// trace element's method, when given, is still compared.
fn names_methods(e: &tests::Entry) -> bool {
    tests::claims(e, tests::Capability::Methods) && tests::claims(e, tests::Capability::Stacks)
}

/// ClrMD's view of an entry (`dumps/<name>.clrmd.json`), when committed.
fn clrmd(e: &tests::Entry) -> Option<Value> {
    let p = tests::dumps_dir().join(format!("{}.clrmd.json", e.name));
    let text = std::fs::read_to_string(p).ok()?;
    Some(serde_json::from_str(&text).unwrap())
}

/// The dumps of scenario `program` whose exceptions the tests claim, at least one.
fn of_program(program: &str) -> Vec<tests::Entry> {
    let v: Vec<_> = exceptions_claimed()
        .into_iter()
        .filter(|e| e.program() == program)
        .collect();
    assert!(!v.is_empty(), "no readable {program} dump");
    v
}

/// A DAC-style method name without its signature.
fn bare(m: &str) -> &str {
    m.split('(').next().unwrap_or(m)
}

fn trace_methods(e: &ExceptionData) -> Vec<String> {
    e.stack_trace
        .iter()
        .map(|f| bare(f.method.as_deref().unwrap_or("?")).to_string())
        .collect()
}

#[test]
fn crash_pe_is_the_unhandled_exception_with_its_inner() {
    for e in of_program("crash") {
        crash_pe(&e);
    }
}

fn crash_pe(e: &tests::Entry) {
    eprintln!("checking {}", e.name);
    let (d, rt) = open(e);
    let names = TypeNames::new();
    let r = ObjectReader::new(&rt, &names);
    let w = StackWalker::new(&rt, &names, Default::default());
    let ex = &e.manifest["exceptions"][0];
    let crasher = e.manifest["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["managed_id"] == ex["thrown_on_managed_id"])
        .unwrap();
    // The current thread of a crash dump is the faulting one: the thread that threw.
    let threads = rt.threads().unwrap();
    let cur = current_thread(d.info().crashing_thread, &threads).unwrap();
    assert_eq!(Some(cur.os_id), crasher["os_id"].as_u64());
    assert_eq!(Some(cur.managed_id as u64), crasher["managed_id"].as_u64());
    let (_, obj) = rt.last_thrown_object(cur.address).unwrap();
    assert_ne!(obj, 0, "the crasher has a last thrown object");
    let chain = exception_chain(&r, &w, obj).unwrap();
    assert_eq!(chain.len(), 2, "the exception and its inner one");
    let (outer, inner) = (&chain[0], &chain[1]);
    assert_eq!(outer.type_name, ex["type"].as_str().unwrap());
    assert_eq!(outer.message.as_deref(), ex["message"].as_str());
    assert_eq!(outer.inner, inner.address);
    assert_eq!(outer.inner_type.as_deref(), ex["inner"]["type"].as_str());
    assert_eq!(outer.hresult as u32, 0x8013_1509, "COR_E_INVALIDOPERATION");
    assert_eq!(inner.type_name, ex["inner"]["type"].as_str().unwrap());
    assert_eq!(inner.message.as_deref(), ex["inner"]["message"].as_str());
    assert_eq!(inner.hresult as u32, 0x8013_1537, "COR_E_FORMAT");
    assert_eq!(inner.inner, 0);
    // .NET 9+: the exception being dispatched (Thread.ExceptionTracker's ExInfo) is the same.
    if let Some((ex_info, cur_ex)) = rt.current_exception(cur.address).unwrap() {
        assert_ne!(
            ex_info, 0,
            "{}: the crasher is dispatching its exception",
            e.name
        );
        assert_eq!(cur_ex, obj, "{}: the ExInfo's thrown object", e.name);
    }
    if !names_methods(e) {
        // Method names are not claimed here: the frames' MethodDescs are compared with the
        // DAC's and ClrMD's by exceptions_equal_the_dacs_view / exceptions_equal_clrmds.
        for x in &chain {
            assert_eq!(
                x.stack_trace_thread,
                Some(cur.address),
                "the trace's Thread"
            );
            assert!(x.notes.is_empty(), "{:?}", x.notes);
        }
        return;
    }
    // The outer trace: thrown in ProcessOrder, called by CrashWorker (the crasher's own frames).
    let own: Vec<String> = crasher["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    // The crasher's own frames first; below them the runtime's thread start, where it is
    // managed code (.NET 9+: Thread.StartCallback) — as ClrMD's trace of this exception says.
    let outer_trace = trace_methods(outer);
    assert_eq!(outer_trace[..own.len().min(outer_trace.len())], own[..]);
    match clrmd(e) {
        Some(m) => {
            let theirs: Vec<String> = m["exceptions_on_heap"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| hex(&x["address"]) == outer.address)
                .unwrap_or_else(|| {
                    panic!(
                        "{}: ClrMD lists no exception at {:#x}",
                        e.name, outer.address
                    )
                })["stack_trace"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| bare(f["method"].as_str().unwrap_or("?")).to_string())
                .collect();
            assert_eq!(
                outer_trace, theirs,
                "{}: the outer trace is ClrMD's",
                e.name
            );
        }
        None => assert_eq!(outer_trace, own, "{}", e.name),
    }
    assert_eq!(own[0], ex["thrown_in"].as_str().unwrap());
    // The inner trace: thrown in ParseOrder, caught in ProcessOrder.
    assert_eq!(
        trace_methods(inner),
        vec![
            ex["inner"]["thrown_in"].as_str().unwrap().to_string(),
            ex["thrown_in"].as_str().unwrap().to_string()
        ]
    );
    for x in &chain {
        assert_eq!(
            x.stack_trace_thread,
            Some(cur.address),
            "the trace's Thread"
        );
        assert!(x.notes.is_empty(), "{:?}", x.notes);
        // The program's frames are in its own module; Thread.StartCallback (9+) in CoreLib.
        for f in &x.stack_trace {
            let want =
                if f.method.as_deref().map(bare) == Some("System.Threading.Thread.StartCallback") {
                    "System.Private.CoreLib"
                } else {
                    "crash"
                };
            assert_eq!(
                f.module.as_deref(),
                Some(want),
                "{}: {:?}",
                e.name,
                f.method
            );
        }
    }
}

#[test]
fn crash_trace_frames_are_the_dacs_stack_frames() {
    // The unhandled exception's frames (SP, MethodDesc) are the crasher's stack frames as the
    // DAC's stack walk reports them (it stopped where it threw), less those of the managed
    // exception dispatcher that runs above the throw on .NET 9 (System.Runtime.EH.DispatchEx,
    // RhThrowEx: the EH machinery, no frame of the exception's trace; crashorder-net9); the IP
    // is one less than the return address (STEF_IP_ADJUSTED).
    for e in of_program("crash").into_iter().filter(names_methods) {
        crash_trace_frames(&e);
    }
}

fn crash_trace_frames(e: &tests::Entry) {
    eprintln!("checking {}", e.name);
    let (_, rt) = open(e);
    let names = TypeNames::new();
    let r = ObjectReader::new(&rt, &names);
    let w = StackWalker::new(&rt, &names, Default::default());
    let dt = e.dac["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| hex(&t["lastThrownObjectHandle"]) != 0)
        .unwrap();
    let (_, obj) = rt.last_thrown_object(hex(&dt["address"])).unwrap();
    let ex = read_exception(&r, &w, obj).unwrap();
    let st = e.dac["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["osThreadId"] == dt["osThreadId"])
        .unwrap();
    let managed: Vec<&Value> = st["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["frame_name"].is_null())
        .filter(|f| {
            !f["method"]
                .as_str()
                .is_some_and(|m| m.starts_with("System.Runtime.EH."))
        })
        .collect();
    assert_eq!(ex.stack_trace.len(), managed.len(), "{}", e.name);
    for (t, f) in ex.stack_trace.iter().zip(managed) {
        assert_eq!(t.sp, hex(&f["sp"]));
        assert_eq!(t.method_desc, hex(&f["methodDesc"]));
        assert_eq!(t.ip + 1, hex(&f["ip"]));
        assert_eq!(t.flags, 2, "STEF_IP_ADJUSTED");
    }
}

#[test]
fn exceptions_equal_the_dacs_view() {
    let mut checked = 0;
    for e in exceptions_claimed() {
        let Some(dac) = dac_locks(&e) else { continue };
        let (_, rt) = open(&e);
        let names = TypeNames::new();
        let r = ObjectReader::new(&rt, &names);
        let w = StackWalker::new(&rt, &names, Default::default());
        for de in dac["exceptions"].as_array().unwrap() {
            let a = hex(&de["address"]);
            let what = format!("{}: exception {a:#x}", e.name);
            let ours = read_exception(&r, &w, a).unwrap_or_else(|err| panic!("{what}: {err}"));
            assert_eq!(ours.type_name, de["type"].as_str().unwrap(), "{what}");
            assert_eq!(ours.message.as_deref(), de["message"].as_str(), "{what}");
            assert_eq!(
                format!("{:08x}", ours.hresult as u32),
                de["hresult"].as_str().unwrap(),
                "{what}"
            );
            let inner = de["inner_exception"]
                .as_str()
                .map(|_| hex(&de["inner_exception"]));
            assert_eq!(ours.inner, inner.unwrap_or(0), "{what}");
            let arr = de["stack_trace_array"]
                .as_str()
                .map(|_| hex(&de["stack_trace_array"]));
            assert_eq!(ours.stack_trace_array, arr.unwrap_or(0), "{what}");
            let frames = de["stack_trace"].as_array().unwrap();
            assert_eq!(ours.stack_trace.len(), frames.len(), "{what}");
            for (o, f) in ours.stack_trace.iter().zip(frames) {
                assert_eq!(o.ip, hex(&f["ip"]), "{what}");
                assert_eq!(o.sp, hex(&f["sp"]), "{what}");
                assert_eq!(o.method_desc, hex(&f["method_desc"]), "{what}");
                checked += 1;
                // Names and offsets where claimed; elsewhere a name given must still be right.
                if !names_methods(&e) {
                    if let Some(m) = &o.method {
                        assert_eq!(Some(m.as_str()), f["method"].as_str(), "{what}");
                    }
                    continue;
                }
                assert_eq!(o.method.as_deref(), f["method"].as_str(), "{what}");
                assert_eq!(
                    o.offset,
                    Some(hex(&f["ip"]) - hex(&f["method_start"])),
                    "{what}: offset from the DAC's method start"
                );
            }
        }
    }
    assert!(checked >= 8, "only {checked} frames checked");
}

#[test]
fn heap_keeps_the_manifests_exception_and_inner() {
    for e in of_program("heap") {
        heap_exception_and_inner(&e);
    }
}

fn heap_exception_and_inner(e: &tests::Entry) {
    eprintln!("checking {}", e.name);
    let (_, rt) = open(e);
    let names = TypeNames::new();
    let r = ObjectReader::new(&rt, &names);
    let w = StackWalker::new(&rt, &names, Default::default());
    let heap = rt.gc_heap().unwrap();
    let ex = &e.manifest["exceptions"][0];
    let (found, errors) = heap_exceptions(&r, &heap);
    assert!(errors.is_empty(), "{errors:?}");
    let outer: Vec<ExceptionData> = found
        .iter()
        .map(|(a, _)| read_exception(&r, &w, *a).unwrap())
        .filter(|x| x.type_name == ex["type"].as_str().unwrap())
        .collect();
    assert_eq!(outer.len(), 1, "one {}", ex["type"]);
    let chain = exception_chain(&r, &w, outer[0].address).unwrap();
    assert_eq!(chain.len(), 2);
    assert_eq!(chain[0].message.as_deref(), ex["message"].as_str());
    assert_eq!(chain[1].type_name, ex["inner"]["type"].as_str().unwrap());
    assert_eq!(chain[1].message.as_deref(), ex["inner"]["message"].as_str());
    if !names_methods(e) {
        return;
    }
    assert_eq!(
        trace_methods(&chain[0]).first().map(String::as_str),
        ex["thrown_in"].as_str()
    );
    assert_eq!(
        trace_methods(&chain[1]),
        vec![
            ex["inner"]["thrown_in"].as_str().unwrap().to_string(),
            ex["thrown_in"].as_str().unwrap().to_string()
        ],
        "the inner exception: thrown in CheckQuantity, caught in ValidateOrder"
    );
}

#[test]
fn heap_exceptions_are_the_dac_census_exception_types() {
    // Every dump whose exceptions are claimed, Windows included: the exception objects found
    // (by MethodTable) are the census's types named `...Exception`, with the same counts.
    for e in exceptions_claimed() {
        let (_, rt) = open(&e);
        let names = TypeNames::new();
        let r = ObjectReader::new(&rt, &names);
        let heap = rt.gc_heap().unwrap();
        let (found, errors) = heap_exceptions(&r, &heap);
        assert!(errors.is_empty(), "{}: {errors:?}", e.name);
        let mut ours: BTreeMap<u64, u64> = BTreeMap::new();
        for (_, mt) in &found {
            *ours.entry(*mt).or_default() += 1;
        }
        let census: BTreeMap<u64, u64> = e.dac["heap_stat"]["types"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["type"].as_str().unwrap().ends_with("Exception"))
            .map(|t| (hex(&t["mt"]), t["count"].as_u64().unwrap()))
            .collect();
        assert_eq!(
            ours, census,
            "{}: exception MethodTables and counts",
            e.name
        );
        assert!(
            ours.len() >= 3,
            "{}: the runtime's preallocated ones",
            e.name
        );
    }
}

#[test]
fn a_non_exception_is_refused_precisely() {
    for e in of_program("heap") {
        non_exception_refused(&e);
    }
}

fn non_exception_refused(e: &tests::Entry) {
    eprintln!("checking {}", e.name);
    let (_, rt) = open(e);
    let names = TypeNames::new();
    let r = ObjectReader::new(&rt, &names);
    let w = StackWalker::new(&rt, &names, Default::default());
    let heap = rt.gc_heap().unwrap();
    let s = heap
        .objects(&rt)
        .find(|o| o.mt == rt.globals.string_mt)
        .unwrap();
    let err = read_exception(&r, &w, s.address).unwrap_err().to_string();
    assert!(
        err.contains("does not derive from System.Exception"),
        "{err}"
    );
    for bad in [0u64, 8, u64::MAX - 3] {
        let err = read_exception(&r, &w, bad).unwrap_err().to_string();
        assert!(!err.is_empty());
        assert!(exception_chain(&r, &w, bad).is_err());
    }
}

#[test]
fn exceptions_equal_clrmds() {
    // .NET 9 and 10: every exception object ClrMD lists (the build's DAC underneath): type,
    // message, HResult, inner exception and each recorded frame (IP, SP, MethodDesc; the method
    // name where ours gives one), in heap order.
    let (mut dumps, mut exceptions, mut frames) = (0, 0, 0);
    for e in exceptions_claimed().into_iter().filter(|e| e.family() >= 9) {
        let Some(cm) = clrmd(&e) else { continue };
        let (_, rt) = open(&e);
        let names = TypeNames::new();
        let r = ObjectReader::new(&rt, &names);
        let w = StackWalker::new(&rt, &names, Default::default());
        let heap = rt.gc_heap().unwrap();
        let (found, errors) = heap_exceptions(&r, &heap);
        assert!(errors.is_empty(), "{}: {errors:?}", e.name);
        let theirs = cm["exceptions_on_heap"].as_array().unwrap();
        let ours: Vec<u64> = found.iter().map(|x| x.0).collect();
        let want: Vec<u64> = theirs.iter().map(|x| hex(&x["address"])).collect();
        assert_eq!(ours, want, "{}: exception objects", e.name);
        for c in theirs {
            let a = hex(&c["address"]);
            let what = format!("{}: exception {a:#x}", e.name);
            let x = read_exception(&r, &w, a).unwrap_or_else(|err| panic!("{what}: {err}"));
            assert!(x.notes.is_empty(), "{what}: {:?}", x.notes);
            assert_eq!(x.message.as_deref(), c["message"].as_str(), "{what}");
            assert_eq!(
                format!("{:08x}", x.hresult as u32),
                c["hresult"].as_str().unwrap(),
                "{what}"
            );
            let inner = c["inner"].as_str().map(|_| hex(&c["inner"])).unwrap_or(0);
            assert_eq!(x.inner, inner, "{what}: inner");
            if !x.type_name.contains('`') {
                assert_eq!(x.type_name, c["type"].as_str().unwrap(), "{what}");
            }
            let tf = c["stack_trace"].as_array().unwrap();
            assert_eq!(x.stack_trace.len(), tf.len(), "{what}: frames");
            for (o, f) in x.stack_trace.iter().zip(tf) {
                assert_eq!(
                    (o.ip, o.sp, o.method_desc),
                    (hex(&f["ip"]), hex(&f["sp"]), hex(&f["method_desc"])),
                    "{what}: frame"
                );
                if let Some(m) = &o.method {
                    assert_eq!(Some(m.as_str()), f["method"].as_str(), "{what}: method");
                }
                frames += 1;
            }
            exceptions += 1;
        }
        dumps += 1;
    }
    eprintln!("ClrMD exceptions: {dumps} dumps, {exceptions} exceptions, {frames} frames");
    assert!(dumps >= 10, "only {dumps} dumps");
    assert!(frames >= 20, "only {frames} frames");
}

#[test]
fn last_thrown_objects_are_the_dacs() {
    // Each thread's last thrown object (Thread.LastThrownObject on 9/10) is the DAC's, on every
    // dump with a DAC exceptions truth.
    let (mut threads, mut thrown) = (0, 0);
    for e in exceptions_claimed() {
        let Some(dac) = dac_locks(&e) else { continue };
        let (_, rt) = open(&e);
        for t in dac["threads"].as_array().unwrap() {
            let (_, obj) = rt.last_thrown_object(hex(&t["thread"])).unwrap();
            let want = t["last_thrown_object"]
                .as_str()
                .map(|_| hex(&t["last_thrown_object"]));
            assert_eq!(
                obj,
                want.unwrap_or(0),
                "{}: thread {}",
                e.name,
                t["managed_id"]
            );
            threads += 1;
            thrown += usize::from(obj != 0);
        }
    }
    assert!(
        threads >= 50 && thrown >= 2,
        "{threads} threads, {thrown} thrown"
    );
}

/// SOS's `pe` of an entry (`<name>.sos.txt`, its `### pe` section): each recorded frame as
/// (SP, IP, module, method, offset).
fn sos_pe_frames(e: &tests::Entry) -> Option<Vec<(u64, u64, String, String, u64)>> {
    let p = tests::dumps_dir().join(format!("{}.sos.txt", e.name));
    let text = std::fs::read_to_string(p).ok()?;
    let section = text.split("\n### ").find(|s| s.starts_with("pe\n"))?;
    let mut frames = Vec::new();
    for line in section
        .lines()
        .skip_while(|l| !l.starts_with("StackTrace (generated):"))
    {
        let mut w = line.split_whitespace();
        let (Some(sp), Some(ip)) = (w.next(), w.next()) else {
            continue;
        };
        let (Ok(sp), Ok(ip)) = (u64::from_str_radix(sp, 16), u64::from_str_radix(ip, 16)) else {
            continue;
        };
        let func = w.collect::<Vec<_>>().join(" ");
        let (module, rest) = func.split_once('!').unwrap();
        let (method, off) = rest.rsplit_once("+0x").unwrap();
        frames.push((
            sp,
            ip,
            module.to_string(),
            method.to_string(),
            u64::from_str_radix(off, 16).unwrap(),
        ));
    }
    Some(frames)
}

#[test]
fn async_frames_of_a_crash_through_runtime_async_are_the_dacs_and_the_manifests() {
    // crashasync-net11: an exception thrown in a resumed runtime-async method, unwound through
    // its suspended async callers (one of them awaiting a Task.Run) and rethrown unhandled by
    // Main's GetResult. The runtime appends each suspended caller's frame to the trace as it
    // unwinds through its continuation (STEF_CONTINUATION: sp 0, ip its DiagnosticIP). Those
    // frames, in order, are the DAC's (its trace of the exception, lockprobe's
    // GetMethodDescName of each MethodDesc, the flags as recorded) and the manifest's (the
    // async callers of the throwing method, innermost first); the program's own frames are
    // those of the program's own StackTrace of a rehearsal of the same chain (caught in
    // Rehearse where the real one reaches Main); every frame is SOS's `pe` frame; and
    // printexception marks exactly those frames (`continuation`, "[async continuation]").
    use clrdata::analysis::exceptions::STEF_CONTINUATION;
    let mut checked = 0;
    for e in of_program("crashasync") {
        eprintln!("checking {}", e.name);
        assert!(names_methods(&e), "{}: method names are claimed", e.name);
        let (d, rt) = open(&e);
        let names = TypeNames::new();
        let r = ObjectReader::new(&rt, &names);
        let w = StackWalker::new(&rt, &names, Default::default());
        let mex = &e.manifest["exceptions"][0];
        let crasher = e.manifest["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["managed_id"] == mex["thrown_on_managed_id"])
            .unwrap();
        let threads = rt.threads().unwrap();
        let cur = current_thread(d.info().crashing_thread, &threads).unwrap();
        assert_eq!(Some(cur.os_id), crasher["os_id"].as_u64(), "{}", e.name);
        let (_, obj) = rt.last_thrown_object(cur.address).unwrap();
        let ex = read_exception(&r, &w, obj).unwrap();
        assert!(ex.notes.is_empty(), "{}: {:?}", e.name, ex.notes);
        assert_eq!(ex.type_name, mex["type"].as_str().unwrap());
        assert_eq!(ex.message.as_deref(), mex["message"].as_str());
        assert_eq!(ex.inner, 0);
        let all = trace_methods(&ex);
        assert_eq!(
            Some(all[0].as_str()),
            mex["thrown_in"].as_str(),
            "{}",
            e.name
        );

        // The async frames: ours, the DAC's, the manifest's.
        let ours: Vec<_> = ex
            .stack_trace
            .iter()
            .filter(|f| f.flags & STEF_CONTINUATION != 0)
            .collect();
        let dac = dac_locks(&e).expect("the DAC's exceptions");
        let dex = dac["exceptions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| hex(&x["address"]) == obj)
            .unwrap_or_else(|| panic!("{}: the DAC lists no exception {obj:#x}", e.name));
        let theirs: Vec<&Value> = dex["stack_trace"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["flags"].as_u64().unwrap() as u32 & STEF_CONTINUATION != 0)
            .collect();
        assert_eq!(ours.len(), theirs.len(), "{}: async frames", e.name);
        for (o, t) in ours.iter().zip(&theirs) {
            assert_eq!(o.flags, t["flags"].as_u64().unwrap() as u32, "{}", e.name);
            assert_eq!(o.ip, hex(&t["ip"]), "{}: the DiagnosticIP", e.name);
            assert_eq!(o.sp, 0, "{}: an async frame has no SP", e.name);
            assert_eq!(o.sp, hex(&t["sp"]));
            assert_eq!(o.method_desc, hex(&t["method_desc"]), "{}", e.name);
            assert_eq!(o.method.as_deref(), t["method"].as_str(), "{}", e.name);
        }
        let ours_names: Vec<&str> = ours
            .iter()
            .map(|f| bare(f.method.as_deref().unwrap()))
            .collect();
        let manifest_names: Vec<&str> = mex["async_continuation_frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        assert!(manifest_names.len() >= 2);
        assert_eq!(ours_names, manifest_names, "{}: the manifest's", e.name);

        // The program's own frames, in the order its own StackTrace of the rehearsal gives.
        let ns = format!("{}.", all[0].split('.').next().unwrap());
        let own: Vec<&str> = all
            .iter()
            .map(String::as_str)
            .filter(|m| m.starts_with(&ns))
            .collect();
        let rehearsal: Vec<&str> = mex["rehearsal_own_frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        let mut want: Vec<&str> = rehearsal[..rehearsal.len() - 1].to_vec();
        want.extend(
            crasher["frames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m.as_str().unwrap()),
        );
        assert_eq!(own, want, "{}: own frames", e.name);

        // Every frame is SOS's `pe` frame.
        let sos = sos_pe_frames(&e).expect("SOS's pe");
        assert_eq!(sos.len(), ex.stack_trace.len(), "{}: SOS's frames", e.name);
        for (o, (sp, ip, module, method, off)) in ex.stack_trace.iter().zip(&sos) {
            assert_eq!((o.sp, o.ip), (*sp, *ip), "{}: {method}", e.name);
            assert_eq!(
                o.module.as_deref().map(|m| format!("{m}.dll")).as_deref(),
                Some(module.as_str())
            );
            assert_eq!(o.method.as_deref(), Some(method.as_str()));
            assert_eq!(o.offset, Some(*off), "{}: {method}", e.name);
        }

        // printexception: `continuation` on exactly those frames, in JSON and in the text.
        let s = commands::Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let (out, _) = commands::execute(&s, &format!("printexception {obj:#x}"))
            .unwrap()
            .unwrap();
        let frames = out.data["exceptions"][0]["stack_trace"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(frames.len(), ex.stack_trace.len());
        let marked: Vec<&str> = frames
            .iter()
            .filter(|f| f["continuation"] == true)
            .map(|f| bare(f["method"].as_str().unwrap()))
            .collect();
        assert_eq!(marked, manifest_names, "{}: printexception --json", e.name);
        let text_marked: Vec<&str> = out
            .text
            .lines()
            .filter(|l| l.ends_with(" [async continuation]"))
            .map(|l| bare(l.split_once('!').unwrap().1))
            .collect();
        assert_eq!(text_marked, manifest_names, "{}: printexception", e.name);
        checked += ours.len();
    }
    assert!(checked >= 3, "only {checked} async frames checked");
}

/// SOS's nested exceptions (`pe -nested`): on every thread of every dump whose exceptions are
/// claimed, the first nested ExInfo equals the DAC's `firstNestedException` (GetThreadData:
/// the thread's `ExceptionTracker`'s `PreviousNestedInfo`); Windows .NET 8, whose tracker's
/// layout is not known, gives none. Threads dispatching an exception (the crash dumps' crashers) are
/// counted: their tracker is read, so a wrong `PreviousNestedInfo` offset would show.
#[test]
fn nested_exceptions_equal_the_dacs() {
    let (mut threads, mut dispatching, mut dumps) = (0, 0, 0);
    for e in exceptions_claimed() {
        let Some(dac_threads) = e.dac["threads"].as_array() else {
            continue;
        };
        let (_, rt) = open(&e);
        dumps += 1;
        for dt in dac_threads {
            let addr = hex(&dt["address"]);
            let want = hex(&dt["firstNestedException"]);
            let ours = rt
                .nested_exceptions(addr)
                .unwrap_or_else(|err| panic!("{}: thread {addr:#x}: {err}", e.name));
            match ours {
                None => {
                    assert!(
                        e.family() == 8 && e.os() == "windows",
                        "{}: the tracker is read but on Windows .NET 8",
                        e.name
                    );
                    assert_eq!(want, 0, "{}: thread {addr:#x}", e.name);
                }
                Some(list) => {
                    let first = list.first().map_or(0, |&(x, _)| x);
                    assert_eq!(first, want, "{}: thread {addr:#x}", e.name);
                    if matches!(rt.current_exception(addr), Ok(Some((x, _))) if x != 0) {
                        dispatching += 1;
                    }
                }
            }
            threads += 1;
        }
    }
    eprintln!("{dumps} dumps, {threads} threads ({dispatching} dispatching an exception)");
    assert!(
        dumps >= 10 && dispatching >= 3,
        "{dumps} dumps, {dispatching} threads dispatching"
    );
}

/// The only dumps with a nested exception: the on-demand `nestedfault-*` (scenarios/fault.cs
/// `nested`; tests::on_demand(), made with its command). On the crasher, dispatching an
/// InvalidOperationException (in the catch block of CleanUp, called by a finally block) while a
/// NullReferenceException is unwound: the last thrown object's handle and the first nested
/// ExInfo equal the DAC's (`lastThrownObjectHandle`, `firstNestedException`), and `printexception -nested` lists under the current exception the
/// ones the manifest says are in dispatch beneath it (`exceptions_in_dispatch`, innermost
/// first: all but the first), with their type and message.
#[test]
fn nested_exceptions_of_nestedfault_dumps() {
    let mut checked = 0;
    for od in tests::on_demand()
        .iter()
        .filter(|o| o.name.starts_with("nestedfault-"))
    {
        let Some(e) = od.entry() else {
            eprintln!("SKIPPED {}: made on demand, not here: {}", od.name, od.make);
            continue;
        };
        let crasher = e.manifest["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["role"] == "crash")
            .unwrap();
        let os_id = crasher["os_id"].as_u64().unwrap();
        let dt = e.dac["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["osThreadId"].as_u64() == Some(os_id))
            .unwrap_or_else(|| panic!("{}: the DAC has no thread {os_id}", e.name));
        let want = hex(&dt["firstNestedException"]);
        let (_, rt) = open(&e);
        // The last thrown object's handle is the DAC's (.NET 11: the exception in dispatch,
        // through its ExInfo's field, not the FailFast's in m_LastThrownObjectHandle).
        let (handle, _) = rt.last_thrown_object(hex(&dt["address"])).unwrap();
        assert_eq!(
            handle,
            hex(&dt["lastThrownObjectHandle"]),
            "{}: last thrown",
            e.name
        );
        match rt.nested_exceptions(hex(&dt["address"])).unwrap() {
            Some(list) => {
                assert_ne!(want, 0, "{}: the DAC sees no nested exception", e.name);
                assert_eq!(list.first().map(|x| x.0), Some(want), "{}", e.name);
            }
            None => panic!("{}: nested exceptions not read", e.name),
        }
        let in_dispatch = e.manifest["exceptions_in_dispatch"].as_array().unwrap();
        let s = commands::Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let (out, _) = commands::execute(&s, &format!("setthread -t {os_id:#x}"))
            .unwrap()
            .unwrap();
        drop(out);
        let (out, _) = commands::execute(&s, "printexception -nested")
            .unwrap()
            .unwrap();
        let got: Vec<(String, String)> = out.data["nested_exceptions"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: {}", e.name, out.data))
            .iter()
            .map(|x| {
                (
                    x["type"].as_str().unwrap().to_owned(),
                    x["message"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect();
        let expect: Vec<(String, String)> = in_dispatch[1..]
            .iter()
            .map(|x| {
                (
                    x["type"].as_str().unwrap().to_owned(),
                    x["message"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(got, expect, "{}", e.name);
        checked += 1;
    }
    eprintln!("{checked} nestedfault dumps checked");
}
