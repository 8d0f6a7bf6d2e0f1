//! Stacks beyond the managed walk, against the truths:
//! - the Windows minidump's managed frames equal the DAC's on every thread (the main thread's
//!   lazily captured HelperMethodFrame is resumed by unwinding coreclr.dll with `.pdata`);
//! - the mixed native+managed walk (`stack`) has exactly the managed walk's managed and explicit
//!   frames, and a blocked thread's native frames are the wait functions its source implies;
//! - `dso` finds the hang scenario's one `Hang.Gate` on every thread in `Monitor.Wait(gate)`,
//!   and the main thread's `scenario` argument string (the manifest's value);
//! - `u`: the bytes are the dump's, each managed return address follows a `call`, a JIT'd
//!   method's MethodDesc leads to the code the stack walk found, and the calls of the
//!   scenario's own methods are named as their source calls them.

use clrdata::model::dso;
use clrdata::model::objects::ObjectReader;
use clrdata::model::stack::{FrameKind, MixedStack, Regs, StackFrame, StackWalker, ThreadStack};
use clrdata::prelude::*;
use clrdata::{Runtime, TypeNames};
use dumpreader::{Dump, Memory, Target};
use serde_json::Value;

fn hex(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

fn open(name: &str) -> (tests::Entry, Dump) {
    let e = tests::entry(name);
    let d = Dump::open_with(&e.dump_path(), &e.open_options()).unwrap();
    (e, d)
}

/// The manifest's OS thread ids of threads with `role`.
fn role_threads(e: &tests::Entry, role: &str) -> Vec<u64> {
    e.manifest["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["role"] == role)
        .map(|t| t["os_id"].as_u64().unwrap())
        .collect()
}

const NET8: &[&str] = &[
    "hang",
    "deadlock",
    "heap",
    "crash",
    "threadpool",
    "servergc",
    "windows-hang",
    "async",
];

#[test]
fn windows_managed_frames_equal_the_dac_on_every_thread() {
    let (e, d) = open("windows-hang");
    let rt = tests::discover(&d).unwrap();
    let names = TypeNames::new();
    let w = StackWalker::for_target(&rt, &names);
    let stacks = w.walk_all().unwrap();
    let dac = e.dac["stacks"].as_array().unwrap();
    assert_eq!(dac.len(), 10);
    for ds in dac {
        let os = ds["osThreadId"].as_u64().unwrap();
        let ours = stacks.iter().find(|s| s.os_id == os).unwrap();
        let frames = ds["frames"].as_array().unwrap();
        let want: Vec<&str> = frames.iter().filter_map(|f| f["method"].as_str()).collect();
        let got: Vec<&str> = ours.methods().collect();
        assert_eq!(got, want, "thread {os}: {:?}", ours.incomplete);
        let dm: Vec<(u64, u64)> = frames
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
        assert_eq!(om, dm, "thread {os}: managed frames' sp/ip");
    }
    // The main thread, the one the lazy HelperMethodFrame used to stop.
    let main = role_threads(&e, "main")[0];
    let st = stacks.iter().find(|s| s.os_id == main).unwrap();
    assert!(st.incomplete.is_none(), "{:?}", st.incomplete);
    assert_eq!(
        st.methods().next(),
        Some("System.Threading.Thread.SleepInternal(Int32)")
    );
}

/// What the managed walk and the mixed walk must share: managed frames (sp, ip, method) and
/// explicit Frames (address, class, method), in order.
fn skeleton(frames: &[StackFrame]) -> Vec<(FrameKind, u64, u64, Option<String>)> {
    frames
        .iter()
        .filter(|f| f.kind != FrameKind::Native)
        .map(|f| match f.kind {
            FrameKind::Explicit => (f.kind, f.frame.unwrap(), 0, f.method.clone()),
            _ => (f.kind, f.sp, f.ip, f.method.clone()),
        })
        .collect()
}

fn mixed_walks<'a, M: Memory>(
    w: &StackWalker<'a, M>,
    managed: &[ThreadStack],
    rt: &Runtime<M>,
) -> Vec<MixedStack> {
    let threads = rt.threads().unwrap();
    managed
        .iter()
        .map(|m| {
            let td = threads.iter().find(|t| t.address == m.thread).unwrap();
            w.walk_mixed(m.os_id, Some(td))
        })
        .collect()
}

#[test]
fn mixed_walk_has_the_managed_walks_frames() {
    let mut compared = 0;
    for name in NET8 {
        let (_, d) = open(name);
        let rt = tests::discover(&d).unwrap();
        let names = TypeNames::new();
        let w = StackWalker::for_target(&rt, &names);
        let managed = w.walk_all().unwrap();
        let mixed = mixed_walks(&w, &managed, &rt);
        for (m, x) in managed.iter().zip(&mixed) {
            if m.os_id == 0 {
                continue; // an unstarted or dead Thread has no registers
            }
            let want = skeleton(&m.frames);
            let got = skeleton(&x.frames);
            assert_eq!(
                got, want,
                "{name}: thread {:#x}: {:?}",
                m.os_id, x.incomplete
            );
            assert!(
                x.gaps.is_empty(),
                "{name}: thread {:#x}: native frames missing: {:?}",
                m.os_id,
                x.gaps
            );
            compared += want.len();
        }
    }
    assert!(compared > 200, "too few frames compared ({compared})");
}

/// The modules of the native frames above (inner to) the first explicit Frame.
fn native_prefix(st: &MixedStack) -> Vec<String> {
    st.frames
        .iter()
        .take_while(|f| f.kind == FrameKind::Native)
        .map(|f| f.native.as_ref().unwrap().to_string())
        .collect()
}

#[test]
fn linux_blocked_threads_wait_in_libc_called_from_the_runtime() {
    let (e, d) = open("hang");
    let rt = tests::discover(&d).unwrap();
    let names = TypeNames::new();
    let w = StackWalker::for_target(&rt, &names);
    let threads = rt.threads().unwrap();
    let mut checked = 0;
    for role in [
        "monitor-wait",
        "sleep",
        "main",
        "mres-wait",
        "sync-over-async",
    ] {
        for os in role_threads(&e, role) {
            let td = threads.iter().find(|t| t.os_id == os).unwrap();
            let st = w.walk_mixed(os, Some(td));
            let natives = native_prefix(&st);
            // The kernel wait is entered from libc (futex), which libcoreclr's wait called.
            assert!(
                natives.first().is_some_and(|n| n.starts_with("libc.so.6")),
                "{role} {os}: {natives:?}"
            );
            let first_clr = natives.iter().position(|n| n.starts_with("libcoreclr.so"));
            assert!(
                first_clr.is_some_and(|i| natives[..i].iter().all(|n| n.starts_with("libc.so.6"))),
                "{role} {os}: {natives:?}"
            );
            // Then the FCALL's HelperMethodFrame, then managed code.
            let next = &st.frames[natives.len()];
            assert_eq!(next.kind, FrameKind::Explicit, "{role} {os}");
            assert!(next
                .frame_name
                .as_deref()
                .unwrap()
                .starts_with("HelperMethodFrame"));
            // The walk reaches the thread's first frame in libc (clone / __libc_start_main).
            assert!(st.incomplete.is_none(), "{role} {os}: {:?}", st.incomplete);
            let last = st.frames.last().unwrap();
            assert_eq!(last.kind, FrameKind::Native);
            let lm = last.native.as_ref().unwrap().module.clone().unwrap();
            assert!(lm == "libc.so.6" || lm == "dotnet", "{role} {os}: {lm}");
            checked += 1;
        }
    }
    assert_eq!(checked, 8);
}

#[test]
fn windows_blocked_threads_wait_in_ntdll_called_from_coreclr() {
    let (e, d) = open("windows-hang");
    let rt = tests::discover(&d).unwrap();
    let names = TypeNames::new();
    let w = StackWalker::for_target(&rt, &names);
    let threads = rt.threads().unwrap();
    let mut checked = 0;
    let sleep = ("ntdll.dll!ZwDelayExecution+", "kernelbase.dll!SleepEx+");
    let wait = (
        "ntdll.dll!ZwWaitForMultipleObjects+",
        "kernelbase.dll!WaitForMultipleObjectsEx+",
    );
    for (role, (sys, api)) in [
        ("main", sleep),
        ("sleep", sleep),
        ("monitor-wait", wait),
        ("mres-wait", wait),
        ("sync-over-async", wait),
    ] {
        for os in role_threads(&e, role) {
            let td = threads.iter().find(|t| t.os_id == os).unwrap();
            let st = w.walk_mixed(os, Some(td));
            let natives = native_prefix(&st);
            assert!(natives[0].starts_with(sys), "{role} {os}: {natives:?}");
            let api_at = natives.iter().position(|n| n.starts_with(api));
            assert!(api_at.is_some(), "{role} {os}: {natives:?}");
            assert!(
                natives[api_at.unwrap() + 1..]
                    .iter()
                    .all(|n| n.starts_with("coreclr.dll")),
                "{role} {os}: {natives:?}"
            );
            assert!(st.incomplete.is_none(), "{role} {os}: {:?}", st.incomplete);
            let tail: Vec<String> = st
                .frames
                .iter()
                .rev()
                .take(2)
                .map(|f| f.native.as_ref().unwrap().to_string())
                .collect();
            assert!(
                tail[0].starts_with("ntdll.dll!RtlUserThreadStart+"),
                "{tail:?}"
            );
            assert!(
                tail[1].starts_with("kernel32.dll!BaseThreadInitThunk+"),
                "{tail:?}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 8);
}

/// The objects `dso` finds on thread `os`: (object, type name, string value).
fn dso_of<M: Memory + Target>(rt: &Runtime<M>, os: u64) -> Vec<(u64, String, Option<String>)> {
    let names = TypeNames::new();
    let heap = rt.gc_heap().unwrap();
    let r = ObjectReader::new(rt, &names);
    let ti = rt
        .memory()
        .threads()
        .iter()
        .find(|t| t.id as u64 == os)
        .unwrap();
    let regs = Regs::from_context(&ti.context);
    let found = dso::stack_objects(&r, &heap, &regs, ti.stack.unwrap().1);
    assert!(found.note.is_none(), "{:?}", found.note);
    found
        .objects
        .iter()
        .map(|o| {
            let s = (o.method_table == rt.globals.string_mt)
                .then(|| r.string_value(o.object, 1000).unwrap().0);
            (o.object, r.type_name(o.method_table), s)
        })
        .collect()
}

#[test]
fn dso_finds_the_gate_on_its_waiters_and_the_scenario_string_on_main() {
    for name in ["hang", "servergc", "windows-hang"] {
        let (e, d) = open(name);
        let rt = tests::discover(&d).unwrap();
        let names = TypeNames::new();
        let heap = rt.gc_heap().unwrap();
        // The one Hang.Gate (the manifest and the DAC census both count 1).
        let gates: Vec<u64> = heap
            .objects(&rt)
            .filter(|o| !o.is_free && names.name_or_note(&rt, o.mt) == "Hang.Gate")
            .map(|o| o.address)
            .collect();
        assert_eq!(gates.len(), 1, "{name}");
        let waiters = role_threads(&e, "monitor-wait");
        assert_eq!(waiters.len(), 4);
        for os in waiters {
            let objs = dso_of(&rt, os);
            assert!(
                objs.iter()
                    .any(|(a, t, _)| *a == gates[0] && t == "Hang.Gate"),
                "{name}: thread {os}: {objs:?}"
            );
        }
        // Main: ParkMainThread(manifestPath, scenario) keeps its arguments on the stack.
        let main = role_threads(&e, "main")[0];
        let scenario = e.manifest["scenario"].as_str().unwrap();
        let objs = dso_of(&rt, main);
        assert!(
            objs.iter()
                .any(|(_, t, s)| t == "System.String" && s.as_deref() == Some(scenario)),
            "{name}: main: {objs:?}"
        );
        // Every listed object is a heap object start (the heap walk meets it).
        let starts: std::collections::HashSet<u64> = heap.objects(&rt).map(|o| o.address).collect();
        for (a, t, _) in &objs {
            assert!(
                starts.contains(a),
                "{name}: {a:#x} ({t}) is no object start"
            );
        }
    }
}

#[test]
fn u_bytes_are_the_dumps_and_return_addresses_follow_calls() {
    let mut returns = 0;
    for name in ["hang", "windows-hang"] {
        let (e, d) = open(name);
        let rt = tests::discover(&d).unwrap();
        let names = TypeNames::new();
        let w = StackWalker::for_target(&rt, &names);
        let stacks = w.walk_all().unwrap();
        for st in &stacks {
            for f in st
                .frames
                .iter()
                .filter(|f| f.kind == FrameKind::Managed)
                .skip(1)
            {
                if f.code != Some(clrdata::model::stack::CodeKind::Jit) {
                    continue;
                }
                let code = w.disassemble(f.ip).unwrap();
                assert!(code.note.is_none(), "{name}: {:?}", code.note);
                let bytes: Vec<u8> = code
                    .instructions
                    .iter()
                    .flat_map(|i| i.bytes.clone())
                    .collect();
                assert_eq!(bytes.len() as u64, code.end - code.start);
                assert_eq!(bytes, d.read_bytes(code.start, bytes.len()), "{name}");
                let k = code
                    .instructions
                    .iter()
                    .position(|i| i.address == f.ip)
                    .unwrap_or_else(|| panic!("{name}: {:#x} is no instruction start", f.ip));
                assert!(k > 0 && code.instructions[k - 1].mnemonic == "call");
                // The MethodDesc's native code slot holds the same method's start.
                let md = f.method_desc.unwrap();
                assert_eq!(w.method_desc_code(md), Ok(code.start), "{name}: {md:#x}");
                returns += 1;
            }
        }
        // The scenario's calls, named as the source makes them.
        let gm = stacks
            .iter()
            .flat_map(|s| &s.frames)
            .find(|f| f.method.as_deref() == Some("Hang.Program.GateThreadMain()"))
            .unwrap();
        let calls = |ip: u64| -> Vec<String> {
            w.disassemble(ip)
                .unwrap()
                .instructions
                .iter()
                .filter(|i| i.mnemonic == "call")
                .filter_map(|i| i.target_name.clone())
                .collect()
        };
        let c = calls(gm.ip);
        assert!(
            c.iter().any(|n| n == "Hang.Program.WaitOnGate()"),
            "{name}: {c:?}"
        );
        let wg = stacks
            .iter()
            .flat_map(|s| &s.frames)
            .find(|f| f.method.as_deref() == Some("Hang.Program.WaitOnGate()"))
            .unwrap();
        let c = calls(wg.ip);
        for want in [
            "System.Threading.Monitor.Enter(System.Object, Boolean ByRef)",
            "Hang.Program.Record(System.String, System.String)",
            "System.Threading.Monitor.Wait(System.Object)",
        ] {
            assert!(
                c.iter().any(|n| n.starts_with(want)),
                "{name}: {want} not in {c:?}"
            );
        }
        let _ = e;
    }
    println!("{returns} return addresses checked");
    assert!(returns > 30, "too few return addresses checked ({returns})");
}

#[test]
fn dso_on_the_crashing_thread_finds_the_exception_and_its_message() {
    let (e, d) = open("crash");
    let rt = tests::discover(&d).unwrap();
    let ex = &e.manifest["exceptions"][0];
    let crasher = e.manifest["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["managed_id"] == ex["thrown_on_managed_id"])
        .unwrap()["os_id"]
        .as_u64()
        .unwrap();
    // The dump's faulting thread (dso's default) is the thread that threw.
    assert_eq!(d.info().crashing_thread.map(|t| t as u64), Some(crasher));
    let objs = dso_of(&rt, crasher);
    for want in [&ex["type"], &ex["inner"]["type"]] {
        assert!(
            objs.iter().any(|(_, t, _)| t == want.as_str().unwrap()),
            "{want} not in {objs:?}"
        );
    }
    let msg = ex["message"].as_str().unwrap();
    assert!(
        objs.iter().any(|(_, _, s)| s.as_deref() == Some(msg)),
        "{msg} not in {objs:?}"
    );
}

/// Without any image file (no `--image-path`, no recorded paths): CoreLib's RuntimeFunctions
/// are found by replaying the runtime's binary search over the entries the dump kept, and its
/// methods named through the runtime's entry point map; the frames still equal the DAC's.
#[test]
fn managed_frames_equal_the_dac_from_the_dump_alone() {
    let opts = dumpreader::OpenOptions {
        image_search_path: Vec::new(),
        recorded_paths: false,
        ..Default::default()
    };
    let mut threads = 0;
    for name in NET8 {
        let (ok, n, diffs) = tests::stack_diffs(&tests::entry(name), &opts);
        assert!(diffs.is_empty(), "{}", diffs.join("\n"));
        assert_eq!(ok, n);
        threads += n;
    }
    let expected: usize = NET8
        .iter()
        .map(|n| tests::entry(n).dac["stacks"].as_array().unwrap().len())
        .sum();
    assert_eq!(threads, expected);
    assert!(threads >= 63, "{threads} threads compared");
}

/// The commands' JSON: `stack`, `dso` and `u` on a gate thread of the hang dump.
#[test]
fn stack_dso_and_u_commands_give_their_json() {
    use commands::Session;
    let e = tests::entry("hang");
    let s = Session::open_with(&e.dump_path(), &e.open_options()).unwrap();
    let run = |line: &str| -> Value {
        let (out, _) = commands::execute(&s, line)
            .unwrap_or_else(|err| panic!("{line}: {err}"))
            .unwrap();
        out.json_document()["result"].clone()
    };
    let os = role_threads(&e, "monitor-wait")[0];
    let st = run(&format!("k {os}"));
    let frames = st[0]["frames"].as_array().unwrap();
    assert_eq!(st[0]["os_id"], os);
    assert!(st[0]["incomplete"].is_null());
    let wait = frames
        .iter()
        .find(|f| f["method"] == "System.Threading.Monitor.Wait(System.Object, Int32)")
        .unwrap();
    assert_eq!(wait["kind"], "managed");
    assert!(frames
        .iter()
        .any(|f| f["kind"] == "native" && f["module"] == "libc.so.6"));
    let gm = frames
        .iter()
        .find(|f| f["method"] == "Hang.Program.GateThreadMain()")
        .unwrap();
    let u = run(&format!("u {}", gm["ip"].as_str().unwrap()));
    assert_eq!(u["kind"], "jit");
    assert_eq!(u["method"], "Hang.Program.GateThreadMain()");
    assert!(u["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["mnemonic"] == "call" && i["target_name"] == "Hang.Program.WaitOnGate()"));
    let d = run(&format!("dso -t {os}"));
    assert!(d["objects"]
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o["type_name"] == "Hang.Gate"));
}
