//! Roots: the GC handle table, the finalization queue and gcroot, against two independent
//! truths: the heap scenario's manifest (the handles, finalizable objects and statics the
//! program made) and the runtime DAC's own view of the same dumps (`dumps/<name>.roots.dac.json`,
//! written by `dumps/tools/dacroots.py`: GetHandleEnum, GetFinalizationFillPointers,
//! GetStackReferences).

use clrdata::data::handles::{FinalizerSegment, HandleKind};
use clrdata::{Runtime, TypeNames};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

fn hex(v: &Value) -> u64 {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("not a hex string: {v}"));
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

/// The DAC's roots truth of an entry, when one is committed (Linux dumps only), checked to
/// belong to the committed dump.
fn dac_roots(e: &tests::Entry) -> Option<Value> {
    let p = tests::dumps_dir().join(format!("{}.roots.dac.json", e.name));
    let text = std::fs::read_to_string(p).ok()?;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["dump_sha256"], e.dac["dump_file"]["sha256"],
        "{}.roots.dac.json was written for another dump: regenerate it",
        e.name
    );
    Some(v)
}

/// The dumps of the scenario programs named whose roots the tests claim, at least one.
fn roots_of_programs(programs: &[&str]) -> Vec<tests::Entry> {
    let v: Vec<_> = roots_claimed()
        .into_iter()
        .filter(|e| programs.contains(&e.program()))
        .collect();
    assert!(!v.is_empty(), "no dump of {programs:?} with roots claimed");
    v
}

/// The readable dumps of the scenario programs named (see `tests::Entry::program`), at least one.
fn of_programs(programs: &[&str]) -> Vec<tests::Entry> {
    let v: Vec<_> = tests::readable()
        .into_iter()
        .filter(|e| programs.contains(&e.program()))
        .collect();
    assert!(!v.is_empty(), "no readable dump of {programs:?}");
    v
}

fn dac_kind(k: HandleKind) -> &'static str {
    match k {
        HandleKind::WeakShort => "weak_short",
        HandleKind::WeakLong => "weak_long",
        HandleKind::Strong => "strong",
        HandleKind::Pinned => "pinned",
        HandleKind::Variable => "variable",
        HandleKind::RefCounted => "ref_counted",
        HandleKind::Dependent => "dependent",
        HandleKind::AsyncPinned => "async_pinned",
        HandleKind::SizedRef => "sized_ref",
        HandleKind::WeakNativeCom => "weak_native_com",
        HandleKind::Other(_) => "other",
    }
}

/// ClrMD's view of an entry (`dumps/<name>.clrmd.json`), when committed.
fn clrmd(e: &tests::Entry) -> Option<Value> {
    let p = tests::dumps_dir().join(format!("{}.clrmd.json", e.name));
    let text = std::fs::read_to_string(p).ok()?;
    Some(serde_json::from_str(&text).unwrap())
}

/// A type name as ClrMD writes it: `A`2+B[[X, asm],[Y, asm]]` is `A<X, Y>+B` (the runtime's
/// own name, as dumpshell gives it, carries arity and assemblies).
fn clrmd_style(s: &str) -> String {
    let (Some(bt), Some(open)) = (s.find('`'), s.find("[[")) else {
        return s.to_owned();
    };
    let digits = s[bt + 1..]
        .find(|c: char| !c.is_ascii_digit())
        .map_or(s.len(), |i| bt + 1 + i);
    let nested = &s[digits.min(open)..open];
    let (mut depth, mut start, mut end) = (0, 0, s.len());
    let mut args = Vec::new();
    for (i, c) in s.char_indices().skip_while(|(i, _)| *i < open) {
        match c {
            '[' => {
                depth += 1;
                if depth == 2 {
                    start = i + 1;
                }
            }
            ']' => {
                if depth == 2 {
                    let a = &s[start..i];
                    args.push(clrmd_style(a.rsplit_once(", ").map_or(a, |x| x.0)));
                }
                depth -= 1;
                if depth == 0 {
                    end = i;
                    break;
                }
            }
            _ => {}
        }
    }
    let rest = s.get(end + 1..).unwrap_or("");
    format!(
        "{}<{}>{nested}{}",
        &s[..bt],
        args.join(", "),
        clrmd_style(rest)
    )
}

#[test]
fn clrmd_style_names() {
    assert_eq!(
        clrmd_style("System.WeakReference`1[[System.Diagnostics.Tracing.EventSource, System.Private.CoreLib]]"),
        "System.WeakReference<System.Diagnostics.Tracing.EventSource>"
    );
    assert_eq!(
        clrmd_style("C`2+Container[[A[], X],[D`1[[E, Y]], Z]][]"),
        "C<A[], D<E>>+Container[]"
    );
    assert_eq!(
        clrmd_style("System.Threading.Thread"),
        "System.Threading.Thread"
    );
}

/// The dumps whose GC handles and finalization queue the tests claim (.NET 8, 9, 10 and 11).
fn roots_claimed() -> Vec<tests::Entry> {
    tests::readable_for(tests::Capability::Roots)
}

/// ClrMD's name of a handle kind (`ClrHandleKind`).
fn clrmd_kind(k: HandleKind) -> &'static str {
    match k {
        HandleKind::WeakShort => "WeakShort",
        HandleKind::WeakLong => "WeakLong",
        HandleKind::Strong => "Strong",
        HandleKind::Pinned => "Pinned",
        HandleKind::Variable => "Variable",
        HandleKind::RefCounted => "RefCounted",
        HandleKind::Dependent => "Dependent",
        HandleKind::AsyncPinned => "AsyncPinned",
        HandleKind::SizedRef => "SizedRef",
        HandleKind::WeakNativeCom => "WeakWinRT",
        HandleKind::Other(_) => "other",
    }
}

#[test]
fn handles_are_the_dacs() {
    let (mut checked, mut with_clrmd, mut compared) = (0, 0, 0);
    let mut families = BTreeSet::new();
    for e in roots_claimed() {
        let d = e.open();
        let rt = tests::discover(&d).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let h = rt
            .gc_handles()
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        assert!(h.errors.is_empty(), "{}: {:?}", e.name, h.errors);
        assert!(h.tables >= 1 && h.segments >= 1, "{}", e.name);
        let strong = h
            .handles
            .iter()
            .filter(|x| x.object != 0 && x.is_strong())
            .count();
        assert!(strong > 0, "{}: no strong handle at all", e.name);
        // ClrMD (the same build's DAC underneath) lists the handles holding an object.
        if let Some(cm) = clrmd(&e).filter(|_| e.family() >= 9) {
            let ours: BTreeSet<(u64, &str, u64)> = h
                .handles
                .iter()
                .filter(|x| x.object != 0)
                .map(|x| (x.address, clrmd_kind(x.kind), x.object))
                .collect();
            let theirs: BTreeSet<(u64, &str, u64)> = cm["gc_handles"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| {
                    (
                        hex(&x["address"]),
                        x["kind"].as_str().unwrap(),
                        hex(&x["object"]),
                    )
                })
                .collect();
            assert_eq!(
                ours, theirs,
                "{}: handles (address, kind, object) vs ClrMD",
                e.name
            );
            for x in cm["gc_handles"].as_array().unwrap() {
                let ours = h
                    .handles
                    .iter()
                    .find(|y| y.address == hex(&x["address"]))
                    .unwrap();
                assert_eq!(
                    ours.is_strong(),
                    x["is_strong"].as_bool().unwrap(),
                    "{}",
                    e.name
                );
            }
            compared += 4 * ours.len();
            with_clrmd += 1;
        }
        let Some(truth) = dac_roots(&e) else { continue };
        // The DAC enumerates the handles holding an object (the GC's scan skips null ones).
        let ours: BTreeSet<(u64, &str, u64)> = h
            .handles
            .iter()
            .filter(|x| x.object != 0)
            .map(|x| (x.address, dac_kind(x.kind), x.object))
            .collect();
        let dac: BTreeSet<(u64, &str, u64)> = truth["handles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                (
                    hex(&x["handle"]),
                    x["type"].as_str().unwrap(),
                    hex(&x["object"]),
                )
            })
            .collect();
        assert_eq!(ours, dac, "{}: handles (address, kind, object)", e.name);
        for x in truth["handles"].as_array().unwrap() {
            let ours = h
                .handles
                .iter()
                .find(|y| y.address == hex(&x["handle"]))
                .unwrap();
            if ours.kind == HandleKind::Dependent {
                assert_eq!(
                    ours.secondary,
                    hex(&x["secondary"]),
                    "{}: dependent secondary",
                    e.name
                );
            }
            assert_eq!(
                ours.is_strong(),
                x["strong"].as_bool().unwrap(),
                "{}: handle {} strength",
                e.name,
                x["handle"]
            );
        }
        compared += 5 * dac.len();
        families.insert(e.family());
        checked += 1;
    }
    eprintln!(
        "handles: {checked} dumps against the DAC, {with_clrmd} against ClrMD, {compared} values"
    );
    assert!(checked >= 3, "DAC handle truth for only {checked} dumps");
    for f in [8, 9, 10] {
        assert!(families.contains(&f), "no .NET {f} dump's handles checked");
    }
    assert!(
        with_clrmd >= 10,
        "ClrMD handle truth for only {with_clrmd} dumps"
    );
}

#[test]
fn heap_scenario_handles_are_found_with_kind_and_target() {
    for e in roots_of_programs(&["heap"]) {
        heap_handles(&e);
    }
}

fn heap_handles(e: &tests::Entry) {
    eprintln!("checking {}", e.name);
    let n = e.name.as_str();
    let d = e.open();
    let rt = tests::discover(&d).unwrap();
    let names = TypeNames::new();
    let h = rt.gc_handles().unwrap();
    let handles = e.manifest["handles"].as_array().unwrap();
    assert_eq!(handles.len(), 5, "{n}");
    for m in handles {
        // GCHandle.ToIntPtr sets bit 0 of a pinned handle.
        let addr = hex(&m["handle"]) & !1;
        let found = h
            .handles
            .iter()
            .find(|x| x.address == addr)
            .unwrap_or_else(|| panic!("{n}: manifest handle {addr:#x} ({}) not found", m["kind"]));
        let kind = match m["kind"].as_str().unwrap() {
            "normal" => HandleKind::Strong,
            "weak" => HandleKind::WeakShort,
            "weak-track-resurrection" => HandleKind::WeakLong,
            "pinned" => HandleKind::Pinned,
            k => panic!("unexpected kind {k}"),
        };
        assert_eq!(found.kind, kind, "{n}: handle {addr:#x}");
        if m["alive"].as_bool().unwrap() {
            assert_ne!(found.object, 0, "{n}: handle {addr:#x} lost its target");
            let mt = d_mt(&d, found.object);
            assert_eq!(
                names.name_or_note(&rt, mt),
                m["target_type"].as_str().unwrap(),
                "{n}: handle {addr:#x}: target type"
            );
        } else {
            assert_eq!(found.object, 0, "{n}: handle {addr:#x}: target collected");
        }
    }
}

fn d_mt(d: &dumpreader::Dump, obj: u64) -> u64 {
    use dumpreader::Memory;
    d.read_u64(obj).unwrap() & !7
}

#[test]
fn finalization_queue_is_the_dacs_and_holds_the_live_finalizables() {
    let (mut checked, mut with_clrmd, mut compared) = (0, 0, 0);
    for e in roots_claimed() {
        let d = e.open();
        let rt = tests::discover(&d).unwrap();
        let q = rt
            .finalize_queue()
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        assert!(q.errors.is_empty(), "{}: {:?}", e.name, q.errors);
        let heaps = e.manifest["runtime"]["gc_heap_count"].as_u64().unwrap_or(1) as usize;
        assert_eq!(q.heaps.len(), heaps, "{}: one queue per heap", e.name);
        if let Some(truth) = dac_roots(&e) {
            let dac = truth["finalization_fill_pointers"].as_array().unwrap();
            assert_eq!(dac.len(), q.heaps.len(), "{}", e.name);
            for (hq, dq) in q.heaps.iter().zip(dac) {
                let ends: Vec<u64> = hq.ranges.iter().map(|r| r.2).collect();
                let dends: Vec<u64> = dq["fill_pointers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(hex)
                    .collect();
                assert_eq!(ends, dends, "{}: heap {} fill pointers", e.name, hq.heap);
                compared += ends.len();
            }
            checked += 1;
        }
        // ClrMD's finalizer queue: the registered objects and the f-reachable ones, by type.
        if let Some(cm) = clrmd(&e).filter(|_| e.family() >= 9) {
            let names = TypeNames::new();
            let fq = &cm["finalizer_queue"];
            let (mut registered, mut ready) = (BTreeMap::new(), BTreeMap::new());
            for x in &q.entries {
                let side = if x.segment.is_ready() {
                    &mut ready
                } else {
                    &mut registered
                };
                *side
                    .entry(clrmd_style(&names.name_or_note(&rt, d_mt(&d, x.object))))
                    .or_insert(0u64) += 1;
            }
            let by_type = |v: &Value| -> BTreeMap<String, u64> {
                v.as_array()
                    .unwrap()
                    .iter()
                    .map(|t| {
                        (
                            t["type"].as_str().unwrap().to_owned(),
                            t["count"].as_u64().unwrap(),
                        )
                    })
                    .collect()
            };
            assert_eq!(
                registered.values().sum::<u64>(),
                fq["finalizable_objects"].as_u64().unwrap(),
                "{}: finalizable objects",
                e.name
            );
            assert_eq!(
                ready.values().sum::<u64>(),
                fq["ready_for_finalization"].as_u64().unwrap(),
                "{}: ready for finalization",
                e.name
            );
            assert_eq!(
                registered,
                by_type(&fq["finalizable_by_type"]),
                "{}",
                e.name
            );
            assert_eq!(ready, by_type(&fq["ready_by_type"]), "{}", e.name);
            compared += 2 + registered.len() + ready.len();
            with_clrmd += 1;
        }
    }
    eprintln!(
        "finalization queues: {checked} dumps against the DAC, {with_clrmd} against ClrMD, \
         {compared} values"
    );
    assert!(checked >= 3);
    assert!(
        with_clrmd >= 10,
        "ClrMD finalizer truth for only {with_clrmd} dumps"
    );

    // The heap scenario: 5 Heap.Finalizable still registered (none ready: the program waited
    // for pending finalizers after its last collection), no Heap.DeadFinalizable.
    for e in roots_of_programs(&["heap"]) {
        heap_finalizables(&e);
    }
}

fn heap_finalizables(e: &tests::Entry) {
    eprintln!("checking {}", e.name);
    let d = e.open();
    let rt = tests::discover(&d).unwrap();
    let names = TypeNames::new();
    let q = rt.finalize_queue().unwrap();
    let mut by_type: BTreeMap<String, usize> = BTreeMap::new();
    for x in &q.entries {
        assert!(!x.segment.is_ready(), "nothing is ready for finalization");
        *by_type
            .entry(names.name_or_note(&rt, d_mt(&d, x.object)))
            .or_default() += 1;
    }
    for f in e.manifest["finalizers"]["live_finalizable"]
        .as_array()
        .unwrap()
    {
        assert_eq!(
            by_type
                .get(f["type"].as_str().unwrap())
                .copied()
                .unwrap_or(0) as u64,
            f["count"].as_u64().unwrap(),
            "{}: {}",
            e.name,
            f["type"]
        );
    }
    for f in e.manifest["finalizers"]["finalized_before_dump"]
        .as_array()
        .unwrap()
    {
        assert!(
            !by_type.contains_key(f["type"].as_str().unwrap()),
            "{}: {}",
            e.name,
            f["type"]
        );
    }
    // After two full collections the Finalizables are in generation 2.
    let gen2 = q
        .entries
        .iter()
        .filter(|x| x.segment == FinalizerSegment::Gen2)
        .filter(|x| names.name_or_note(&rt, d_mt(&d, x.object)) == "Heap.Finalizable")
        .count();
    assert_eq!(gen2, 5, "{}", e.name);
}

// ------------------------------------------------------------------------------------ gcroot

use clrdata::analysis::roots::{
    gcroot, gcroot_with, static_slot_names, GcRootOptions, ObjectIndex, RootSource, Roots,
};
use clrdata::model::objects::ObjectReader;
use clrdata::model::stack::gcrefs::RefSource;
use clrdata::prelude::*;

/// The first object of `type_name` on the heap whose `Id` field is `id` (or any, when None).
fn find_object(
    rt: &Runtime<&dumpreader::Dump>,
    names: &TypeNames,
    type_name: &str,
    id: Option<i64>,
) -> Vec<u64> {
    let heap = rt.gc_heap().unwrap();
    let r = ObjectReader::new(rt, names);
    let mut out = Vec::new();
    for o in heap.objects(rt) {
        if o.is_free || names.name_or_note(rt, o.mt) != type_name {
            continue;
        }
        if let Some(id) = id {
            let f = r.object(o.address, false).unwrap();
            let v = f.fields.iter().find(|f| f.name == "Id").unwrap();
            if v.value.display() != id.to_string() {
                continue;
            }
        }
        out.push(o.address);
    }
    out
}

#[test]
fn object_index_numbers_every_object_the_dac_counts() {
    for e in of_programs(&["heap", "hang"]) {
        let name = e.name.as_str();
        let d = e.open();
        let rt = tests::discover(&d).unwrap();
        let heap = rt.gc_heap().unwrap();
        let index = ObjectIndex::build(&rt, &heap).unwrap();
        let dac: u64 = e.dac["heap_stat"]["types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["count"].as_u64().unwrap())
            .sum();
        assert_eq!(
            index.len(),
            dac,
            "{name}: objects indexed vs the DAC's census"
        );
        // Numbering round-trips.
        for o in heap.objects(&rt).filter(|o| !o.is_free).step_by(7) {
            let i = index.index_of(o.address).unwrap();
            assert_eq!(index.address_of(i), Some(o.address));
            assert_eq!(index.index_of(o.address + 8), None);
        }
    }
}

/// The DAC's spelling of a register (`SOSStackRefData::Register`): the x64 unwind number, -5
/// for the caller's SP (`-(rsp + 1)`).
fn dac_register(name: &str) -> i64 {
    match name {
        "caller_sp" => -5,
        n => clrdata::model::stack::REG_NAMES
            .iter()
            .position(|r| *r == n)
            .unwrap_or_else(|| panic!("register {n}")) as i64,
    }
}

/// A stack reference as the DAC's GetStackReferences reports it, null slots included:
/// (slot address or 0 for a register, register (the slot's base register) or none for an
/// explicit Frame's, value, interior/pinned flags, frame SP, source: the frame's IP or the
/// explicit Frame).
type DacRef = (u64, Option<i64>, u64, u64, u64, u64);

/// Every stack reference of every thread equals the DAC's own GC stack walk
/// (`dumps/<name>.roots.dac.json`, GetStackReferences), null slots included: the same slots
/// and registers, values, interior and pinned flags, reported by the same frames. No frame of
/// these dumps falls back to a conservative scan.
#[test]
fn stack_references_are_the_dacs() {
    let (mut refs, mut dumps, mut threads) = (0, 0, 0);
    let mut families = BTreeSet::new();
    for e in tests::readable_for(tests::Capability::GcRoots) {
        let Some(truth) = dac_roots(&e) else { continue };
        let Some(stacks) = truth["stack_refs"].as_array() else {
            continue; // the roots truth of this dump holds handles only
        };
        let name = e.name.as_str();
        let d = e.open();
        let rt = tests::discover(&d).unwrap();
        let names = TypeNames::new();
        let walker = clrdata::model::stack::StackWalker::for_target(&rt, &names);
        let all = rt.threads().unwrap();
        for t in stacks {
            let os = t["os_id"].as_u64().unwrap();
            let td = all
                .iter()
                .find(|x| x.os_id == os)
                .unwrap_or_else(|| panic!("{name}: thread {os:#x} of the DAC's not found"));
            let st = walker.walk(td);
            let found = walker.gc_refs(&st, None, &|_| true);
            assert!(
                found.conservative.is_empty() && found.notes.is_empty(),
                "{name}: thread {os:#x}: {:?} {:?}",
                found.conservative,
                found.notes
            );
            let mut ours: Vec<DacRef> = found
                .refs
                .iter()
                .map(|r| {
                    (
                        r.address.unwrap_or(0),
                        r.register.map(dac_register),
                        r.value,
                        (r.interior as u64) | ((r.pinned as u64) << 1),
                        r.frame_sp,
                        r.explicit_frame.unwrap_or(r.frame_ip),
                    )
                })
                .collect();
            let mut dac: Vec<DacRef> = t["refs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        hex(&r["address"]),
                        r["register"].as_i64(),
                        hex(&r["object"]),
                        r["flags"].as_u64().unwrap() & 3,
                        hex(&r["sp"]),
                        hex(&r["source"]),
                    )
                })
                .collect();
            ours.sort_unstable();
            dac.sort_unstable();
            assert_eq!(
                ours, dac,
                "{name}: thread {os:#x}: stack references (slot, register, value, flags, frame \
                 sp, source) vs the DAC's"
            );
            refs += dac.len();
            threads += 1;
        }
        families.insert(e.family());
        dumps += 1;
    }
    eprintln!("stack references: {refs} on {threads} threads of {dumps} dumps equal the DAC's");
    assert!(dumps >= 10, "DAC stack references of only {dumps} dumps");
    assert!(refs >= 500, "only {refs} DAC stack references checked");
    for f in [8, 11] {
        assert!(families.contains(&f), "no .NET {f} dump's stack references");
    }
}

/// Funclets' parents need each method's EH clauses: read from JIT'd code's RealCodeHeader and
/// ReadyToRun images' ExceptionInfo section, they equal the DAC's (GetMethodDescData's EH
/// clause enumeration, `clrcodeinfo/tests/data/<dump>.json`), filters' offsets and duplicates
/// included; funclets found in a method are filters exactly where the DAC's clauses say.
#[test]
fn eh_clauses_are_the_dacs() {
    use clrdata::model::stack::{CodeIndex, CodeKind};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../clrcodeinfo/tests/data");
    let names = tests::names();
    let (mut methods, mut clauses, mut jit, mut r2r, mut filters) = (0, 0, 0, 0, 0);
    let mut not_in_dump = 0;
    let mut families = BTreeSet::new();
    for f in std::fs::read_dir(&dir).unwrap() {
        let p = f.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let d: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let name = d["dump"].as_str().unwrap();
        if !names.iter().any(|n| n == name) {
            continue;
        }
        let e = tests::entry(name);
        if !tests::claims(&e, tests::Capability::GcRoots) {
            continue;
        }
        let dump = e.open();
        let rt = tests::discover(&dump).unwrap();
        let index = CodeIndex::new();
        for m in d["methods"].as_array().unwrap() {
            let Some(want) = m["dac_eh_clauses"].as_array() else {
                continue; // the DAC found none (an error HRESULT)
            };
            let start = hex(&m["start"]);
            let info = index.lookup(&rt, start).unwrap().unwrap();
            let got = match index.eh_clauses(&rt, &info) {
                Ok(g) => g,
                // A ReadyToRun image's lookup table where the dump lacks it (the DAC's reads
                // of it went to the image file): only without the runtime's files (the clean
                // room, a machine without the pack).
                Err(clrdata::ClrError::Read { .. })
                    if info.kind == CodeKind::ReadyToRun && !e.has_framework() =>
                {
                    not_in_dump += 1;
                    continue;
                }
                Err(err) => panic!("{name}: {}: {err}", m["name"]),
            };
            let kind = |c: &clrdata::model::stack::EhClause| match c.flags & 7 {
                0 => "typed",
                1 => "filter",
                2 => "finally",
                4 => "fault",
                _ => "other",
            };
            let ours: Vec<Value> = got
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "type": kind(c),
                        "try": [c.try_start, c.try_end],
                        "handler": [c.handler_start, c.handler_end],
                        "filter": c.is_filter().then_some(c.filter_or_class),
                        "duplicate": c.is_duplicate(),
                    })
                })
                .collect();
            assert_eq!(&ours, want, "{name}: {}: EH clauses", m["name"]);
            // Each handler and filter starts a funclet: a filter funclet exactly at a filter.
            for c in got.iter().filter(|c| !c.is_duplicate()) {
                for (at, filter) in [(c.handler_start, false), (c.filter_or_class, true)] {
                    if filter && !c.is_filter() {
                        continue;
                    }
                    let f = index.lookup(&rt, start + at as u64).unwrap().unwrap();
                    assert_eq!(f.unwind.start(), start + at as u64, "{name}: a funclet");
                    assert_eq!(
                        index.is_filter_funclet(&rt, &f).unwrap(),
                        filter,
                        "{name}: {}: funclet at +{at:#x}",
                        m["name"]
                    );
                    filters += usize::from(filter);
                }
            }
            match info.kind {
                CodeKind::Jit => jit += 1,
                CodeKind::ReadyToRun => r2r += 1,
            }
            clauses += got.len();
            methods += 1;
        }
        families.insert(e.family());
    }
    eprintln!(
        "EH clauses: {methods} methods ({jit} JIT'd, {r2r} ReadyToRun), {clauses} clauses, \
         {filters} filter funclets equal to the DAC's; {not_in_dump} ReadyToRun methods' \
         lookup entries not in their dump"
    );
    assert!(jit >= 5, "{jit} JIT'd");
    // ReadyToRun filters are in .NET 11's CoreLib, read from its pack's files.
    if not_in_dump == 0 {
        assert!(
            r2r >= 10 && filters >= 3,
            "{r2r} ReadyToRun, {filters} filters"
        );
    }
    for f in [8, 9, 10, 11] {
        assert!(families.contains(&f), "no .NET {f} dump");
    }
}

fn handle_root(p: &clrdata::analysis::roots::RootPath) -> Option<(u64, HandleKind)> {
    match p.root.source {
        RootSource::Handle {
            handle,
            handle_kind,
        } => Some((handle, handle_kind)),
        _ => None,
    }
}

#[test]
fn gcroot_finds_the_handles_statics_and_locals_the_heap_scenario_used() {
    // Every readable heap dump with the DAC's roots (its locals are checked against them).
    let mut checked = 0;
    for e in of_programs(&["heap"]) {
        if dac_roots(&e).is_none() && clrmd_roots(&e).is_none() {
            eprintln!("{}: skipped: no roots truth", e.name);
            continue;
        }
        heap_gcroots(&e);
        checked += 1;
    }
    assert!(checked >= 1, "no heap dump with a roots truth");
}

fn heap_gcroots(e: &tests::Entry) {
    eprintln!("checking {}", e.name);
    let d = e.open();
    let rt = tests::discover(&d).unwrap();
    let names = TypeNames::new();
    let heap = rt.gc_heap().unwrap();
    let r = ObjectReader::new(&rt, &names);
    let mts: Vec<u64> = heap.census(&rt).types.iter().map(|t| t.mt).collect();
    let statics = static_slot_names(&r, &mts);
    let handle_of = |kind: &str| -> u64 {
        let h = e.manifest["handles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["kind"] == kind)
            .unwrap();
        hex(&h["handle"]) & !1
    };
    // The static naming the path's second object, for paths from a handle through object[].
    let static_of = |p: &clrdata::analysis::roots::RootPath| -> Option<String> {
        handle_root(p)?;
        if p.path.len() < 2 || names.name_or_note(&rt, d_mt(&d, p.path[0])) != "System.Object[]" {
            return None;
        }
        statics.get(&p.slots[0]?).cloned()
    };

    // The two HandleTargets: one only in the normal (strong) handle, one only in Roots.Target.
    let targets = find_object(&rt, &names, "Heap.HandleTarget", None);
    assert_eq!(targets.len(), 2);
    let mut seen_handle = false;
    let mut seen_static = false;
    for t in targets {
        let res = gcroot(&rt, &heap, &names, t).unwrap();
        let handles: Vec<_> = res.paths.iter().filter_map(handle_root).collect();
        if res.paths.iter().any(|p| {
            p.path == vec![t] && handle_root(p) == Some((handle_of("normal"), HandleKind::Strong))
        }) {
            seen_handle = true;
        } else {
            assert!(
                res.paths
                    .iter()
                    .any(|p| static_of(p).as_deref() == Some("Heap.Roots.Target")),
                "{handles:x?}"
            );
            seen_static = true;
        }
    }
    assert!(seen_handle && seen_static);

    // The WeakTarget: held by the static Roots.Weak; the two weak handles are no roots.
    let weak = find_object(&rt, &names, "Heap.WeakTarget", None);
    assert_eq!(weak.len(), 1);
    let res = gcroot(&rt, &heap, &names, weak[0]).unwrap();
    assert!(res
        .paths
        .iter()
        .any(|p| static_of(p).as_deref() == Some("Heap.Roots.Weak")));
    for p in &res.paths {
        if let Some((h, k)) = handle_root(p) {
            assert!(k == HandleKind::Strong || k == HandleKind::Pinned, "{k:?}");
            assert_ne!(h, handle_of("weak"));
            assert_ne!(h, handle_of("weak-track-resurrection"));
        }
    }

    // The pinned int[64]: its pinned handle (a path of the object alone) and Roots.PinnedInts.
    let pinned = hex(&d_handle_target(&d, handle_of("pinned")));
    let res = gcroot(&rt, &heap, &names, pinned).unwrap();
    assert!(res.paths.iter().any(|p| p.path == vec![pinned]
        && handle_root(p) == Some((handle_of("pinned"), HandleKind::Pinned))));
    assert!(res
        .paths
        .iter()
        .any(|p| static_of(p).as_deref() == Some("Heap.Roots.PinnedInts")));

    // Registry.Owner is Person 3; every path is a shortest one: through the static's slot
    // directly (object[] -> Person), not through the People list.
    let owner = find_object(&rt, &names, "Heap.Person", Some(3));
    assert_eq!(owner.len(), 1);
    let res = gcroot(&rt, &heap, &names, owner[0]).unwrap();
    let p = res
        .paths
        .iter()
        .find(|p| static_of(p).as_deref() == Some("Heap.Registry.Owner"))
        .expect("Person 3 rooted by the static Heap.Registry.Owner");
    assert_eq!(p.path.len(), 2);

    // The Finalizables: held by Roots.Finalizables (a Finalizable[]); being registered for
    // finalization does not root them (only the f-reachable queue does).
    for f in find_object(&rt, &names, "Heap.Finalizable", None) {
        let res = gcroot(&rt, &heap, &names, f).unwrap();
        assert!(res
            .paths
            .iter()
            .all(|p| !matches!(p.root.source, RootSource::FinalizerQueue { .. })));
        let p = res
            .paths
            .iter()
            .find(|p| static_of(p).as_deref() == Some("Heap.Roots.Finalizables"))
            .unwrap();
        assert_eq!(p.path.len(), 3, "object[] -> Finalizable[] -> Finalizable");
        assert_eq!(
            names.name_or_note(&rt, d_mt(&d, p.path[1])),
            "Heap.Finalizable[]"
        );
    }

    // Thread statics: Registry.CurrentUser is Person 1 on the main thread and Person 2 on
    // thread-static-holder. .NET 8 keeps each thread's statics in an object[] of its own held
    // by a strong handle [E]: each Person has such a path, through no named static, and the
    // two arrays differ (.NET 9+: thread_statics_root_their_objects_on_9_and_later).
    let mut per_thread = Vec::new();
    for id in [1, 2].into_iter().filter(|_| e.family() == 8) {
        let p = find_object(&rt, &names, "Heap.Person", Some(id));
        let res = gcroot(&rt, &heap, &names, p[0]).unwrap();
        let arrays: Vec<u64> = res
            .paths
            .iter()
            .filter(|x| handle_root(x).map(|h| h.1) == Some(HandleKind::Strong))
            .filter(|x| x.path.len() == 2 && static_of(x).is_none())
            .filter(|x| names.name_or_note(&rt, d_mt(&d, x.path[0])) == "System.Object[]")
            .map(|x| x.path[0])
            .collect();
        assert_eq!(
            arrays.len(),
            1,
            "Person {id}: one thread-static array holds it"
        );
        per_thread.push(arrays[0]);
    }
    if e.family() == 8 {
        assert_ne!(per_thread[0], per_thread[1]);
    }

    // Locals: every object the DAC (else ClrMD) reports on the main thread's stack (Park's
    // arguments, ...) has a stack root on that thread.
    let main_os = e.manifest["threads"][0]["os_id"].as_u64().unwrap();
    let objs: BTreeSet<u64> = match dac_roots(e).filter(|t| t["stack_refs"].is_array()) {
        Some(truth) => truth["stack_refs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["os_id"].as_u64() == Some(main_os))
            .unwrap()["refs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| hex(&x["object"]))
            // A live slot holding null is no root (the Roslyn-compiled heap-net8 has one).
            .filter(|&o| o != 0)
            .collect(),
        None => clrmd_roots(e).unwrap()["roots"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| {
                r["kind"] == "Stack"
                    && r["os_id"].as_u64() == Some(main_os)
                    && r["is_interior"] == false
            })
            .map(|r| hex(&r["object"]))
            .collect(),
    };
    assert!(!objs.is_empty(), "{}", e.name);
    for o in objs {
        let res = gcroot(&rt, &heap, &names, o).unwrap();
        assert!(
            res.paths.iter().any(
                |p| matches!(p.root.source, RootSource::Stack { os_id, .. } if os_id == main_os)
                    && p.path == vec![o]
            ),
            "{}: {o:#x}: no stack root on the main thread",
            e.name
        );
    }
}

fn d_handle_target(d: &dumpreader::Dump, h: u64) -> Value {
    use dumpreader::Memory;
    Value::String(format!("{:#x}", d.read_u64(h).unwrap()))
}

#[test]
fn gcroot_of_a_non_object_is_a_precise_error() {
    for e in of_programs(&["heap"]) {
        let d = e.open();
        let rt = tests::discover(&d).unwrap();
        let names = TypeNames::new();
        let heap = rt.gc_heap().unwrap();
        let t = find_object(&rt, &names, "Heap.WeakTarget", None)[0];
        let err = gcroot(&rt, &heap, &names, t + 8).unwrap_err().to_string();
        assert!(
            err.contains("not the start of an object"),
            "{}: {err}",
            e.name
        );
    }
}

#[test]
fn gcroot_on_the_windows_dump_and_server_gc() {
    // hang's Hang.Gate: the 4 GateThreadMain threads wait on it (locals) and Hang.Program keeps it.
    // Every readable dump of the hang program (Windows, server GC, Roslyn-compiled ones too).
    for e in of_programs(&["hang"]) {
        let name = e.name.as_str();
        let d = e.open();
        let rt = tests::discover(&d).unwrap();
        let names = TypeNames::new();
        let heap = rt.gc_heap().unwrap();
        let gate = find_object(&rt, &names, "Hang.Gate", None);
        assert_eq!(gate.len(), 1, "{name}");
        let res = gcroot(&rt, &heap, &names, gate[0]).unwrap();
        assert!(res.notes.is_empty(), "{name}: {:?}", res.notes);
        let waiters: BTreeSet<u64> = e.manifest["threads"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| {
                t["frames"].as_array().is_some_and(|f| {
                    f.iter()
                        .any(|m| m.as_str().is_some_and(|m| m.ends_with("WaitOnGate")))
                })
            })
            .map(|t| t["os_id"].as_u64().unwrap())
            .collect();
        assert_eq!(waiters.len(), 4, "{name}");
        let stack_threads: BTreeSet<u64> = res
            .paths
            .iter()
            .filter_map(|p| match p.root.source {
                RootSource::Stack { os_id, .. } if p.path == vec![gate[0]] => Some(os_id),
                _ => None,
            })
            .collect();
        assert!(
            waiters.is_subset(&stack_threads),
            "{name}: waiters {waiters:?}, stack roots {stack_threads:?}"
        );
        assert!(
            res.paths.iter().any(|p| handle_root(p).is_some()),
            "{name}: no handle root"
        );
    }
}

/// An independent oracle for gcroot's paths: the whole heap's references (every object's,
/// from `ObjectReader::references`, plus the dependent handles' edges), then each object's
/// distance to `target` by a breadth-first search backwards from it.
struct Oracle {
    /// object -> the objects referring to it
    referrers: std::collections::HashMap<u64, Vec<u64>>,
}

impl Oracle {
    fn new(rt: &Runtime<&dumpreader::Dump>, names: &TypeNames) -> Oracle {
        let heap = rt.gc_heap().unwrap();
        let r = ObjectReader::new(rt, names);
        let mut referrers: std::collections::HashMap<u64, Vec<u64>> = Default::default();
        for o in heap.objects(rt).filter(|o| !o.is_free) {
            for (_, v) in r.references(o.address).unwrap_or_default() {
                referrers.entry(v).or_default().push(o.address);
            }
        }
        for h in rt.gc_handles().unwrap().handles {
            if h.kind == HandleKind::Dependent && h.object != 0 && h.secondary != 0 {
                referrers.entry(h.secondary).or_default().push(h.object);
            }
        }
        Oracle { referrers }
    }

    fn distances(&self, target: u64) -> std::collections::HashMap<u64, u64> {
        let mut dist = std::collections::HashMap::from([(target, 0u64)]);
        let mut q = std::collections::VecDeque::from([target]);
        while let Some(x) = q.pop_front() {
            let d = dist[&x];
            for &p in self.referrers.get(&x).map(|v| v.as_slice()).unwrap_or(&[]) {
                if let std::collections::hash_map::Entry::Vacant(e) = dist.entry(p) {
                    e.insert(d + 1);
                    q.push_back(p);
                }
            }
        }
        dist
    }
}

/// gcroot against the oracle on every readable heap and hang dump, without stacks (handles and
/// the f-reachable queue): for many targets, a root gets a path exactly when its object reaches
/// the target, each path is a shortest one, and each step's slot holds the next object.
#[test]
fn gcroot_gives_each_root_a_shortest_path() {
    use dumpreader::Memory;
    let (mut targets_checked, mut paths_checked) = (0, 0);
    for e in tests::readable_for(tests::Capability::GcRoots)
        .into_iter()
        .filter(|e| ["heap", "hang"].contains(&e.program()))
    {
        let d = e.open();
        let rt = tests::discover(&d).unwrap();
        let names = TypeNames::new();
        let heap = rt.gc_heap().unwrap();
        let oracle = Oracle::new(&rt, &names);
        let opts = GcRootOptions {
            stacks: false,
            max_roots: None,
            ..GcRootOptions::default()
        };
        // Every 97th object, and the heap scenario's own.
        let mut targets: Vec<u64> = heap
            .objects(&rt)
            .filter(|o| !o.is_free)
            .step_by(97)
            .map(|o| o.address)
            .take(60)
            .collect();
        for t in [
            "Heap.HandleTarget",
            "Heap.WeakTarget",
            "Heap.Finalizable",
            "Hang.Gate",
        ] {
            targets.extend(find_object(&rt, &names, t, None));
        }
        let mut with_path = 0;
        for &t in &targets {
            let res = gcroot_with(&rt, &heap, &names, t, opts).unwrap();
            assert!(!res.stacks && res.stacks_scanned.is_empty(), "{}", e.name);
            let dist = oracle.distances(t);
            // The roots the search considered: every strong handle and f-reachable object.
            let h = rt.gc_handles().unwrap();
            let q = rt.finalize_queue().unwrap();
            let mut roots: Vec<u64> = h
                .handles
                .iter()
                .filter(|x| x.object != 0 && x.is_strong() && x.kind != HandleKind::Dependent)
                .map(|x| x.object)
                .collect();
            roots.extend(
                q.entries
                    .iter()
                    .filter(|x| x.segment.is_ready() && x.object != 0)
                    .map(|x| x.object),
            );
            // .NET 9+: each thread's thread-statics array (checked by
            // thread_statics_root_their_objects_on_9_and_later).
            roots.extend(rt.handle_roots().unwrap().roots.iter().filter_map(|r| {
                matches!(r.source, RootSource::ThreadStatics { .. }).then_some(r.object)
            }));
            assert_eq!(res.roots_considered, roots.len(), "{}", e.name);
            let expected = roots.iter().filter(|o| dist.contains_key(o)).count();
            assert_eq!(
                res.paths.len(),
                expected,
                "{}: target {t:#x}: roots with a path vs roots whose object reaches it",
                e.name
            );
            for p in &res.paths {
                assert!(p.root.source != RootSource::FinalizerQueue { slot: 0 });
                assert_eq!(p.path.first(), Some(&p.root.object), "{}", e.name);
                assert_eq!(p.path.last(), Some(&t), "{}", e.name);
                assert_eq!(
                    p.length,
                    dist[&p.root.object] + 1,
                    "{}: target {t:#x}: root object {:#x}: not a shortest path: {:x?}",
                    e.name,
                    p.root.object,
                    p.path
                );
                assert!(p.elided.is_none());
                assert_eq!(p.path.len() as u64, p.length);
                for (i, w) in p.path.windows(2).enumerate() {
                    match p.slots[i] {
                        Some(slot) => {
                            assert!(slot > w[0], "{}", e.name);
                            assert_eq!(d.read_u64(slot).unwrap(), w[1], "{}: slot", e.name);
                        }
                        // A dependent handle's edge.
                        None => assert!(h.handles.iter().any(|x| x.kind == HandleKind::Dependent
                            && x.object == w[0]
                            && x.secondary == w[1])),
                    }
                }
                paths_checked += 1;
            }
            with_path += usize::from(!res.paths.is_empty());
            targets_checked += 1;
        }
        assert!(with_path > 0, "{}: no target reached from any root", e.name);
    }
    eprintln!("gcroot: {targets_checked} targets, {paths_checked} paths against the oracle");
    assert!(targets_checked >= 100, "only {targets_checked} targets");
}

/// `max_roots` stops the search at that many roots, the first ones found without it.
#[test]
fn gcroot_output_is_bounded() {
    for e in of_programs(&["heap"])
        .into_iter()
        .filter(|e| tests::claims(e, tests::Capability::GcRoots))
    {
        let d = e.open();
        let rt = tests::discover(&d).unwrap();
        let names = TypeNames::new();
        let heap = rt.gc_heap().unwrap();
        let pinned = find_object(&rt, &names, "Heap.HandleTarget", None);
        let all = gcroot(&rt, &heap, &names, pinned[0]).unwrap();
        assert!(all.stacks && !all.stacks_scanned.is_empty(), "{}", e.name);
        let one = gcroot_with(
            &rt,
            &heap,
            &names,
            pinned[0],
            GcRootOptions {
                max_roots: Some(1),
                ..GcRootOptions::default()
            },
        )
        .unwrap();
        assert_eq!(one.paths.len(), 1, "{}", e.name);
        assert_eq!(one.paths[0], all.paths[0], "{}", e.name);
        if all.paths.len() > 1 {
            assert!(one.stopped_at_max, "{}", e.name);
        }
        assert!(!all.stopped_at_max, "{}", e.name);
    }
}

/// ClrMD's root set (`dumps/<name>.roots.clrmd.json`: `ClrHeap.EnumerateRoots()` through the
/// build's own DAC, `dumps/tools/clrmd/truth.sh --roots`), when committed for the dump.
fn clrmd_roots(e: &tests::Entry) -> Option<Value> {
    let p = tests::dumps_dir().join(format!("{}.roots.clrmd.json", e.name));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(p).ok()?).unwrap();
    assert_eq!(
        v["dump"]["sha256"], e.dac["dump_file"]["sha256"],
        "{}.roots.clrmd.json was written for another dump: regenerate it",
        e.name
    );
    Some(v)
}

/// ClrMD's name of a root that is a handle (`ClrRootKind`).
fn clrmd_root_kind(k: HandleKind) -> &'static str {
    match k {
        HandleKind::Pinned => "PinnedHandle",
        HandleKind::AsyncPinned => "AsyncPinnedHandle",
        HandleKind::RefCounted => "RefCountedHandle",
        HandleKind::SizedRef => "SizedRefHandle",
        _ => "StrongHandle",
    }
}

/// Whether a ClrMD root is a stack root or one of ClrMD's "additional" roots
/// (`ClrHeap.EnumerateAdditionalRoots`, part of `EnumerateRoots` in ClrMD 4.2: statics buckets
/// and thread-statics storage on .NET 9 and 10). ClrMD reports these only when it knows the
/// runtime's major version: on a Windows minidump (coreclr.dll's version resource), not on a
/// Linux core, where it reads 0.0 (dumps/tools/clrmd/README.md, finding 6).
fn is_stack_or_additional(r: &Value) -> bool {
    matches!(
        r["kind"].as_str(),
        Some("Stack" | "StaticVar" | "ThreadStaticVar")
    )
}

/// ClrMD's additional roots of a dump found among ours (`ours`: handles, f-reachable queue,
/// thread statics; `held`: the objects our handles hold); how many there are.
/// - `StaticVar`: the pinned `object[]` holding types' GC statics (the runtime's
///   PinnedHeapHandleTable bucket), `address` a type's statics base inside it. The GC has no
///   root of that kind: a strong handle holds the bucket (ClrMD calls the report "purely
///   additive"), so the object must be one our handles hold, and the address inside it.
/// - `ThreadStaticVar`: a type's GC thread-statics storage (an `object[]`) on a live thread
///   (`address` = `object`). The GC reaches it through its thread's ThreadLocalData array,
///   whose slot `ScanThreadStaticRoots` reports and we give as the thread-statics root: every
///   ClrMD one must be an element of one of those arrays. The arrays may hold more, two kinds
///   ClrMD's enumeration leaves out by construction (it asks, per TypeDef of each module's
///   TypeDef map, for the GC base `GetThreadStaticBaseAddress` gives): a type's non-GC thread
///   statics (the runtime allocates them as an `sbyte[]`, `AllocatePrimitiveArray
///   (ELEMENT_TYPE_I1, ...)` in threadstatics.cpp), and the GC thread statics of a generic
///   instantiation (no TypeDef map holds it). Each such element must be one of the two: an
///   `sbyte[]`, or the GC thread-statics base of a generic instantiation among the heap's
///   types.
fn additional_roots_found(
    e: &tests::Entry,
    rt: &Runtime<&dumpreader::Dump>,
    ours: &Roots,
    held: &BTreeSet<u64>,
    roots: &[Value],
) -> usize {
    use dumpreader::Memory;
    let d = rt.memory();
    let of = |kind: &str| -> Vec<(u64, u64)> {
        roots
            .iter()
            .filter(|r| r["kind"] == kind)
            .map(|r| (hex(&r["address"]), hex(&r["object"])))
            .collect()
    };
    let (statics, thread_statics) = (of("StaticVar"), of("ThreadStaticVar"));
    let n = statics.len() + thread_statics.len();
    assert_eq!(
        n > 0,
        e.os() == "windows" && (9..=10).contains(&e.family()),
        "{}: ClrMD reports static roots on .NET 9 and 10 when it reads the runtime's version \
         (Windows), else none",
        e.name
    );
    if n == 0 {
        return 0;
    }
    for &(address, object) in &statics {
        assert!(
            held.contains(&object),
            "{}: ClrMD's static root {object:#x} is held by none of our handles",
            e.name
        );
        let len = d.read_u32(object + 8).unwrap() as u64;
        assert!(
            object < address && address < object + 16 + 8 * len,
            "{}: ClrMD's static base {address:#x} is not inside {object:#x}",
            e.name
        );
    }
    let names = TypeNames::new();
    let reader = ObjectReader::new(rt, &names);
    let type_of = |o: u64| {
        reader
            .object_mt(o)
            .map(|(mt, _)| reader.type_name(mt))
            .unwrap_or_else(|err| panic!("{}: {o:#x}: {err}", e.name))
    };
    let mut elements = BTreeSet::new();
    for r in &ours.roots {
        if let RootSource::ThreadStatics { .. } = r.source {
            assert_eq!(type_of(r.object), "System.Object[]", "{}", e.name);
            let len = d.read_u32(r.object + 8).unwrap() as u64;
            for i in 0..len {
                let v = d.read_u64(r.object + 16 + 8 * i).unwrap();
                if v != 0 {
                    elements.insert(v);
                }
            }
        }
    }
    let theirs: BTreeSet<u64> = thread_statics
        .iter()
        .map(|&(address, object)| {
            assert_eq!(address, object, "{}", e.name);
            object
        })
        .collect();
    let missing: Vec<_> = theirs.difference(&elements).collect();
    assert!(
        missing.is_empty(),
        "{}: ClrMD's thread-static roots {missing:x?} are in none of our thread-statics arrays",
        e.name
    );
    // The GC thread-statics bases of the heap's types, by base: whose each extra element is.
    let heap = rt.gc_heap().unwrap();
    let mut owner: BTreeMap<u64, String> = BTreeMap::new();
    for t in heap.census(rt).types {
        let class = clrdata::metadata::sig::element_type::CLASS;
        for (_, _, base) in reader
            .thread_static_addresses(t.mt, 0, class)
            .unwrap_or_default()
        {
            owner.insert(base, reader.type_name(t.mt));
        }
    }
    for &x in elements.difference(&theirs) {
        let ty = type_of(x);
        let generic = owner.get(&x).filter(|o| o.contains("[["));
        assert!(
            ty == "System.SByte[]" || (ty == "System.Object[]" && generic.is_some()),
            "{}: {x:#x} ({ty}) in a thread-statics array: not ClrMD's, neither a non-GC \
             thread-statics sbyte[] nor a generic instantiation's GC thread statics ({:?})",
            e.name,
            owner.get(&x)
        );
    }
    n
}

/// A stack root as ClrMD names it: (OS thread, slot address or 0 for a register, the register
/// (for a register root), the frame's SP (for a register root), object, interior, pinned).
type ClrmdStackRoot = (u64, u64, String, u64, u64, bool, bool);

/// The root set equals ClrMD's `EnumerateRoots` on every dump whose roots are claimed (.NET
/// 8-11) and that has ClrMD's truth: the handles and the f-reachable queue (kind, address,
/// object), and the stack roots (thread, slot or frame and register, object, interior, pinned)
/// both ways: every ClrMD stack root is found, and no other (no stale slot). ClrMD differs
/// from the GC in one way, checked here: for an interior pointer outside the GC heap (a byref
/// to a stack local) it reads the pointer and names the object the local holds; the GC roots
/// nothing there (the local is reported by its own slot), so neither do we.
#[test]
fn root_set_is_clrmds() {
    use dumpreader::Memory;
    let (mut dumps, mut compared, mut stack_compared, mut byrefs) = (0, 0, 0, 0);
    let (mut thread_statics, mut conservative_found, mut additional) = (0, 0, 0);
    let mut families = BTreeSet::new();
    let mut stack_families = BTreeSet::new();
    for e in roots_claimed() {
        let Some(truth) = clrmd_roots(&e) else {
            continue;
        };
        assert_eq!(truth["errors"], serde_json::json!([]), "{}", e.name);
        let d = e.open();
        let rt = tests::discover(&d).unwrap();
        let ours = rt.handle_roots().unwrap();
        assert!(ours.notes.is_empty(), "{}: {:?}", e.name, ours.notes);
        // Thread-statics arrays (.NET 9+): roots the GC scans that ClrMD does not report.
        let tls = ours
            .roots
            .iter()
            .filter(|r| matches!(r.source, RootSource::ThreadStatics { .. }))
            .count();
        assert_eq!(tls > 0, e.family() >= 9, "{}: thread-statics roots", e.name);
        thread_statics += tls;
        let ours_set: BTreeSet<(String, u64, u64)> = ours
            .roots
            .iter()
            .filter(|r| !matches!(r.source, RootSource::ThreadStatics { .. }))
            .map(|r| match &r.source {
                RootSource::Handle {
                    handle,
                    handle_kind,
                } => (clrmd_root_kind(*handle_kind).to_owned(), *handle, r.object),
                RootSource::FinalizerQueue { slot } => {
                    ("FinalizerQueue".to_owned(), *slot, r.object)
                }
                _ => unreachable!(),
            })
            .collect();
        let strong: BTreeSet<u64> = ours
            .roots
            .iter()
            .filter(|r| matches!(r.source, RootSource::Handle { .. }))
            .map(|r| r.object)
            .collect();
        let roots = truth["roots"].as_array().unwrap();
        let theirs: BTreeSet<(String, u64, u64)> = roots
            .iter()
            .filter(|r| !is_stack_or_additional(r))
            .map(|r| {
                (
                    r["kind"].as_str().unwrap().to_owned(),
                    hex(&r["address"]),
                    hex(&r["object"]),
                )
            })
            .collect();
        assert_eq!(
            ours_set, theirs,
            "{}: handle and f-reachable roots (kind, address, object) vs ClrMD's",
            e.name
        );
        compared += theirs.len();
        additional += additional_roots_found(&e, &rt, &ours, &strong, roots);
        families.insert(e.family());
        dumps += 1;
        if !tests::claims(&e, tests::Capability::GcRoots) {
            continue;
        }
        let names = TypeNames::new();
        let heap = rt.gc_heap().unwrap();
        let all = rt.roots(&heap, &names).unwrap();
        assert!(all.notes.is_empty(), "{}: {:?}", e.name, all.notes);
        // Frames scanned conservatively (their GC info could not be read): only where the
        // runtime's files are not at hand (the clean room) and the dump lacks a ReadyToRun
        // blob's pages the DAC read from the image file. There every ClrMD root of the frame
        // must be among the scan's; the scan may add stale ones.
        let mut zones: Vec<(u64, u64, u64)> = Vec::new();
        for s in &all.stacks_scanned {
            assert!(
                s.conservative.is_empty() || !e.has_framework(),
                "{}: thread {:#x}: frames scanned conservatively: {:?}",
                e.name,
                s.os_id,
                s.conservative
            );
            zones.extend(s.conservative.iter().map(|c| (s.os_id, c.from, c.to)));
        }
        let in_zone = |os: u64, frame_sp: u64| {
            zones
                .iter()
                .any(|&(o, from, to)| o == os && from <= frame_sp && frame_sp < to.max(from + 1))
        };
        let mut zone_ours: BTreeSet<(u64, u64, u64)> = BTreeSet::new();
        let mut ours_stack: BTreeSet<ClrmdStackRoot> = BTreeSet::new();
        // Where each of our stack references is, with its value (null ones included).
        let mut values: BTreeMap<(u64, u64, String, u64), u64> = BTreeMap::new();
        for r in &all.roots {
            if let RootSource::Stack {
                os_id,
                slot,
                register,
                interior,
                pinned,
                value,
                frame,
                found_by,
                ..
            } = &r.source
            {
                if *found_by == RefSource::Conservative {
                    // (thread, frame SP, object) of a conservatively scanned frame.
                    let sp = frame.map_or(0, |f| f.0);
                    assert!(in_zone(*os_id, sp), "{}: {:x?}", e.name, r.source);
                    zone_ours.insert((*os_id, sp, r.object));
                    continue;
                }
                let key = (
                    *os_id,
                    slot.unwrap_or(0),
                    if slot.is_none() {
                        register.unwrap_or_default().to_owned()
                    } else {
                        String::new()
                    },
                    if slot.is_none() {
                        frame.map_or(0, |f| f.0)
                    } else {
                        0
                    },
                );
                values.insert(key.clone(), *value);
                ours_stack.insert((key.0, key.1, key.2, key.3, r.object, *interior, *pinned));
            }
        }
        let heap_ranges: Vec<(u64, u64)> =
            heap.segments.iter().map(|s| (s.mem, s.walk_end)).collect();
        let in_heap = |v: u64| heap_ranges.iter().any(|&(a, b)| a <= v && v < b);
        let reader = ObjectReader::new(&rt, &names);
        let contains = |obj: u64, v: u64| {
            let size = reader
                .object_mt(obj)
                .ok()
                .and_then(|(_, i)| reader.object_size(obj, &i).ok())
                .unwrap_or(0);
            obj <= v && v < obj + size
        };
        let walker = clrdata::model::stack::StackWalker::for_target(&rt, &names);
        let threads = rt.threads().unwrap();
        let mut theirs_stack: BTreeSet<ClrmdStackRoot> = BTreeSet::new();
        for r in roots.iter().filter(|r| r["kind"] == "Stack") {
            let os = r["os_id"].as_u64().unwrap();
            let addr = hex(&r["address"]);
            if in_zone(os, hex(&r["frame_sp"])) {
                let obj = hex(&r["object"]);
                assert!(
                    zone_ours.contains(&(os, hex(&r["frame_sp"]), obj)),
                    "{}: ClrMD's stack root {obj:#x} at {addr:#x} of a frame scanned \
                     conservatively is not among the scan's",
                    e.name
                );
                conservative_found += 1;
                continue;
            }
            let key = (
                os,
                addr,
                if addr == 0 {
                    r["register"].as_str().unwrap().to_owned()
                } else {
                    String::new()
                },
                if addr == 0 { hex(&r["frame_sp"]) } else { 0 },
            );
            let obj = hex(&r["object"]);
            let interior = r["is_interior"] == true;
            if interior {
                // The byref's value: the slot's, or the register's at that frame (what our
                // walk restored; a register root we did not keep is looked up among every
                // reference of the frame, null and outside-the-heap ones included).
                let v = if addr != 0 {
                    d.read_u64(addr).unwrap()
                } else {
                    match values.get(&key) {
                        Some(&v) => v,
                        None => {
                            let td = threads.iter().find(|t| t.os_id == os).unwrap();
                            let st = walker.walk(td);
                            walker
                                .gc_refs(&st, None, &|_| false)
                                .refs
                                .iter()
                                .find(|x| {
                                    x.address.is_none()
                                        && x.frame_sp == key.3
                                        && x.register == Some(key.2.as_str())
                                })
                                .unwrap_or_else(|| {
                                    panic!(
                                        "{}: ClrMD's register root {key:x?}: no such reference",
                                        e.name
                                    )
                                })
                                .value
                        }
                    }
                };
                if !in_heap(v) {
                    let through = d.read_u64(v).unwrap_or(0);
                    assert!(
                        contains(obj, through),
                        "{}: ClrMD's interior root {key:x?} (value {v:#x} outside the heap) \
                         names {obj:#x}, not what the value points at ({through:#x})",
                        e.name
                    );
                    byrefs += 1;
                    continue;
                }
                assert!(
                    contains(obj, v),
                    "{}: {key:x?}: {v:#x} not in {obj:#x}",
                    e.name
                );
            }
            theirs_stack.insert((
                key.0,
                key.1,
                key.2,
                key.3,
                obj,
                interior,
                r["is_pinned"] == true,
            ));
        }
        let missing: Vec<_> = theirs_stack.difference(&ours_stack).collect();
        let extra: Vec<_> = ours_stack.difference(&theirs_stack).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{}: stack roots (thread, slot, register, frame sp, object, interior, pinned): \
             ClrMD's not found {missing:x?}; ours ClrMD lacks {extra:x?}",
            e.name
        );
        stack_compared += theirs_stack.len();
        stack_families.insert(e.family());
    }
    eprintln!(
        "root sets: {dumps} dumps, {compared} handle/f-reachable roots equal ClrMD's; \
         {stack_compared} stack roots equal ClrMD's ({byrefs} ClrMD interior roots outside the \
         heap, read through, left out; {conservative_found} found by the conservative scan of a \
         frame whose GC info the dump lacks); {thread_statics} thread-statics roots (9+) beside; \
         {additional} ClrMD static and thread-static roots found among ours"
    );
    for f in [8, 9, 10, 11] {
        assert!(
            families.contains(&f),
            "no .NET {f} dump's roots against ClrMD"
        );
        assert!(
            stack_families.contains(&f),
            "no .NET {f} dump's stack roots against ClrMD"
        );
    }
    assert!(stack_compared >= 2000, "only {stack_compared} stack roots");
}

/// `gcroot -nostacks` needs only the handles and the f-reachable queue, verified on .NET 9-11
/// too: the oracle's shortest paths there.
#[test]
fn gcroot_without_stacks_on_every_family() {
    let mut families = BTreeSet::new();
    for e in roots_claimed()
        .into_iter()
        .filter(|e| ["heap", "hang"].contains(&e.program()))
    {
        let d = e.open();
        let rt = tests::discover(&d).unwrap();
        let names = TypeNames::new();
        let heap = rt.gc_heap().unwrap();
        let oracle = Oracle::new(&rt, &names);
        let roots = rt.handle_roots().unwrap();
        let opts = GcRootOptions {
            stacks: false,
            max_roots: None,
            ..GcRootOptions::default()
        };
        let targets: Vec<u64> = heap
            .objects(&rt)
            .filter(|o| !o.is_free)
            .step_by(131)
            .map(|o| o.address)
            .take(25)
            .collect();
        for t in targets {
            let res = gcroot_with(&rt, &heap, &names, t, opts)
                .unwrap_or_else(|err| panic!("{}: {err}", e.name));
            let dist = oracle.distances(t);
            let expected = roots
                .roots
                .iter()
                .filter(|r| dist.contains_key(&r.object))
                .count();
            assert_eq!(res.paths.len(), expected, "{}: target {t:#x}", e.name);
            for p in &res.paths {
                assert_eq!(p.length, dist[&p.root.object] + 1, "{}", e.name);
            }
        }
        if !tests::claims(&e, tests::Capability::GcRoots) {
            let t = heap.objects(&rt).find(|o| !o.is_free).unwrap().address;
            let err = gcroot(&rt, &heap, &names, t).unwrap_err();
            assert!(
                matches!(err, clrdata::ClrError::NotVerified { .. }),
                "{}: gcroot with stacks: {err}",
                e.name
            );
        }
        families.insert(e.family());
    }
    for f in [8, 9, 10, 11] {
        assert!(families.contains(&f), "no .NET {f} dump");
    }
}

/// The command: `-nostacks` reads no stack (on every family whose handles are claimed), a
/// frame's several stack roots print its frame line once, `-all` lifts the limit.
#[test]
fn gcroot_command_json_and_text() {
    use commands::session::Session;
    let mut families = BTreeSet::new();
    let mut frames_checked = 0;
    for e in roots_of_programs(&["heap"]) {
        let s = Session::open_with(&e.dump_path(), &e.open_options())
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let d = e.open();
        let rt = tests::discover(&d).unwrap();
        let names = TypeNames::new();
        let t = find_object(&rt, &names, "Heap.WeakTarget", None)[0];
        let (out, _) = commands::execute(&s, &format!("gcroot -nostacks {t:#x} --json"))
            .unwrap_or_else(|err| panic!("{}: {err}", e.name))
            .unwrap();
        let j = out.json_document()["result"].clone();
        assert_eq!(j["stack_scan"], "none (-nostacks)", "{}", e.name);
        assert_eq!(j["stacks_scanned"], serde_json::json!([]), "{}", e.name);
        assert!(j["found"].as_u64().unwrap() >= 1, "{}: {j}", e.name);
        assert_eq!(j["limited"], false, "{}", e.name);
        for r in j["roots"].as_array().unwrap() {
            assert_ne!(r["root"]["kind"], "stack", "{}", e.name);
            assert_eq!(
                r["length"].as_u64().unwrap() as usize,
                r["path"].as_array().unwrap().len(),
                "{}",
                e.name
            );
        }
        families.insert(e.family());
        if !tests::claims(&e, tests::Capability::GcRoots) {
            continue;
        }
        // A local of Main held in several of its slots: Main's frame line once per thread.
        let truth = clrmd_roots(&e);
        let Some(local) = truth.as_ref().and_then(|v| {
            let stack: Vec<&Value> = v["roots"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["kind"] == "Stack" && r["is_interior"] == false)
                .collect();
            stack
                .iter()
                .find(|r| {
                    stack
                        .iter()
                        .filter(|x| x["object"] == r["object"] && x["frame_sp"] == r["frame_sp"])
                        .count()
                        > 1
                })
                .map(|r| (hex(&r["object"]), hex(&r["frame_sp"])))
        }) else {
            continue;
        };
        let (out, _) = commands::execute(&s, &format!("gcroot -all {:#x}", local.0))
            .unwrap()
            .unwrap();
        let text = out.text.clone();
        let frame_lines = text
            .lines()
            .filter(|l| l.starts_with(&format!("    {:x} ", local.1)))
            .count();
        assert_eq!(frame_lines, 1, "{}: {text}", e.name);
        frames_checked += 1;
    }
    assert!(families.len() >= 3, "{families:?}");
    assert!(
        frames_checked >= 1,
        "no frame with two stack roots of one object"
    );
}

/// Precise stack roots start from each frame's GC info: found where the DAC found it
/// (`clrcodeinfo/tests/data/<dump>.json`: each method's GC info address, from the DAC's
/// GetCodeHeaderData and the ReadyToRun image), JIT'd and ReadyToRun code, .NET 8-11.
#[test]
fn gc_info_is_where_the_dac_has_it() {
    use clrdata::model::stack::{CodeIndex, CodeKind};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../clrcodeinfo/tests/data");
    let names = tests::names();
    let (mut checked, mut jit, mut r2r) = (0, 0, 0);
    let mut families = BTreeSet::new();
    for f in std::fs::read_dir(&dir).unwrap() {
        let p = f.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let d: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let name = d["dump"].as_str().unwrap();
        if !names.iter().any(|n| n == name) {
            continue;
        }
        let e = tests::entry(name);
        if !tests::claims(&e, tests::Capability::Stacks) {
            continue;
        }
        let dump = e.open();
        let rt = tests::discover(&dump).unwrap();
        let index = CodeIndex::new();
        for m in d["methods"].as_array().unwrap() {
            let start = hex(&m["start"]);
            let want = hex(&m["gc_info"]["address"]);
            let info = index
                .lookup(&rt, start)
                .unwrap_or_else(|err| panic!("{name}: {start:#x}: {err}"))
                .unwrap_or_else(|| panic!("{name}: {start:#x}: not managed code"));
            let got = index
                .gc_info(&rt, &info)
                .unwrap_or_else(|err| panic!("{name}: {} ({start:#x}): {err}", m["name"]));
            assert_eq!(got, want, "{name}: {} ({start:#x}): GC info", m["name"]);
            match info.kind {
                CodeKind::Jit => jit += 1,
                CodeKind::ReadyToRun => r2r += 1,
            }
            checked += 1;
        }
        families.insert(e.family());
    }
    eprintln!("GC info: {checked} methods ({jit} JIT'd, {r2r} ReadyToRun) where the DAC has it");
    assert!(jit >= 10 && r2r >= 10, "{jit} JIT'd, {r2r} ReadyToRun");
    for f in [8, 9, 10, 11] {
        assert!(families.contains(&f), "no .NET {f} dump");
    }
}

/// .NET 9+ keeps thread statics in each thread's ThreadLocalData, held by no handle: the heap
/// scenario's `Registry.CurrentUser` (Person 1 on managed thread 1, Person 2 on the
/// thread-static holder, as its manifest records) each have a thread-statics root of their own
/// thread, with or without stacks.
#[test]
fn thread_statics_root_their_objects_on_9_and_later() {
    let mut checked = BTreeSet::new();
    for e in roots_of_programs(&["heap"]) {
        if e.family() < 9 {
            continue;
        }
        let d = e.open();
        let rt = tests::discover(&d).unwrap();
        let names = TypeNames::new();
        let heap = rt.gc_heap().unwrap();
        for s in e.manifest["statics"].as_array().unwrap() {
            if s["kind"] != "thread-static" || s["value_type"] != "Heap.Person" {
                continue;
            }
            let managed = s["managed_id"].as_u64().unwrap() as u32;
            let id = s["value_id"].as_i64().unwrap();
            let person = find_object(&rt, &names, "Heap.Person", Some(id));
            assert_eq!(person.len(), 1, "{}", e.name);
            let res = gcroot_with(
                &rt,
                &heap,
                &names,
                person[0],
                GcRootOptions {
                    stacks: false,
                    ..GcRootOptions::default()
                },
            )
            .unwrap();
            let mine: Vec<_> = res
                .paths
                .iter()
                .filter(|p| {
                    matches!(p.root.source, RootSource::ThreadStatics { managed_id, .. }
                        if managed_id == managed)
                })
                .collect();
            assert_eq!(
                mine.len(),
                1,
                "{}: Person {id} (thread static of managed thread {managed}): {:#x?}",
                e.name,
                res.paths
            );
            // The array of the thread's thread statics, the type's own object[], the Person.
            assert_eq!(mine[0].path.len(), 3, "{}", e.name);
            // Another thread's statics reach it only through more objects (no thread static
            // of theirs holds it).
            for p in &res.paths {
                if matches!(p.root.source, RootSource::ThreadStatics { managed_id, .. }
                    if managed_id != managed)
                {
                    assert!(p.path.len() > 3, "{}: Person {id}: {:#x?}", e.name, p.path);
                }
            }
            checked.insert((e.family(), id));
        }
    }
    for f in [9, 10, 11] {
        for id in [1, 2] {
            assert!(checked.contains(&(f, id)), "{checked:?}");
        }
    }
}

/// A root as SOS's gcroot prints it: a handle (its address), a stack slot (thread, slot), a
/// register (thread, frame SP, register), an f-reachable object (its queue slot).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum SosRoot {
    Handle(u64),
    Slot(u64, u64),
    Register(u64, u64, String),
    Finalizer(u64),
}

/// A root of a `gcroot` with its frame (stack roots: SP, IP) and its path (the root's object
/// first, the target last).
type RootWithPath = (SosRoot, Option<(u64, u64)>, Vec<u64>);

/// One `gcroot <target>` of `dumps/<name>.sos-gcroot.txt`: each root SOS printed.
struct SosGcRoot {
    target: u64,
    roots: Vec<RootWithPath>,
    found: usize,
}

/// Parses `dumps/<name>.sos-gcroot.txt` (dumps/tools/sos_gcroot.sh), checked to be of the
/// committed dump.
fn sos_gcroots(e: &tests::Entry) -> Option<Vec<SosGcRoot>> {
    let p = tests::dumps_dir().join(format!("{}.sos-gcroot.txt", e.name));
    let text = std::fs::read_to_string(p).ok()?;
    let sha = e.dac["dump_file"]["sha256"].as_str().unwrap();
    assert!(
        text.lines()
            .nth(1)
            .is_some_and(|l| l.ends_with(&format!("core sha256 {sha}"))),
        "{}.sos-gcroot.txt was written for another dump: regenerate it",
        e.name
    );
    let h = |s: &str| u64::from_str_radix(s, 16).unwrap_or_else(|_| panic!("{s}"));
    let mut out: Vec<SosGcRoot> = Vec::new();
    let (mut thread, mut frame, mut section) = (0u64, None, "");
    for l in text.lines().skip(2) {
        let t = l.trim();
        if let Some(a) = l.strip_prefix("### gcroot ") {
            out.push(SosGcRoot {
                target: h(a),
                roots: Vec::new(),
                found: usize::MAX,
            });
            continue;
        }
        let cur = out.last_mut().unwrap();
        if t.is_empty() {
            continue;
        } else if let Some(n) = t.strip_prefix("Found ") {
            cur.found = n.split(' ').next().unwrap().parse().unwrap();
        } else if t == "HandleTable:" {
            section = "handles";
        } else if t.starts_with("Finalizer") {
            section = "finalizer";
        } else if let Some(os) = t.strip_prefix("Thread ").and_then(|x| x.strip_suffix(':')) {
            (section, thread) = ("thread", h(os));
        } else if let Some(obj) = t.strip_prefix("-> ") {
            let obj = obj.split_whitespace().next().unwrap();
            cur.roots.last_mut().unwrap().2.push(h(obj));
        } else if section == "handles" && t.ends_with("handle)") {
            let a = t.split_whitespace().next().unwrap();
            cur.roots.push((SosRoot::Handle(h(a)), None, Vec::new()));
        } else if section == "finalizer" {
            let a = t.split_whitespace().next().unwrap();
            cur.roots.push((SosRoot::Finalizer(h(a)), None, Vec::new()));
        } else if section == "thread" && l.starts_with("    ") && !l.starts_with("        ") {
            let mut w = t.split_whitespace();
            frame = Some((h(w.next().unwrap()), h(w.next().unwrap())));
        } else if section == "thread" {
            // `rbp-8: 00007ffd...` (a slot relative to a register), `r13:` (a register),
            // `00007f94...` (a slot an explicit Frame protects).
            let root = match t.split_once(':') {
                Some((_, slot)) if !slot.trim().is_empty() => SosRoot::Slot(thread, h(slot.trim())),
                Some((reg, _)) => SosRoot::Register(thread, frame.unwrap().0, reg.to_owned()),
                None => SosRoot::Slot(thread, h(t)),
            };
            cur.roots.push((root, frame, Vec::new()));
        } else {
            panic!("{}.sos-gcroot.txt: unexpected line {l:?}", e.name);
        }
    }
    for g in &out {
        assert_eq!(g.found, g.roots.len(), "{}: gcroot {:#x}", e.name, g.target);
    }
    Some(out)
}

/// gcroot's root set is SOS's (`dumps/<name>.sos-gcroot.txt`: dotnet-dump's gcroot, with the
/// build's own DAC, of the heap and hang scenarios' objects and of every object ClrMD names as
/// a stack root) on the heap and hang dumps of .NET 8-11: every handle, stack slot and register
/// (with its frame) SOS prints for a target is ours; ours that SOS does not print reach the
/// target in an independent search (SOS's is incomplete); .NET 9+'s thread-statics roots are
/// ours alone (SOS, through ClrMD, does not report them). Each of our paths starts
/// at the same object as SOS's and is no longer (SOS's search is not breadth first: on .NET
/// 11's hang some of its paths take a longer way).
#[test]
fn gcroot_root_sets_are_sos() {
    let (mut dumps, mut targets, mut roots, mut same_paths, mut shorter) = (0, 0, 0, 0, 0);
    let mut sos_missed = 0;
    let mut families = BTreeSet::new();
    for e in roots_claimed()
        .into_iter()
        .filter(|e| tests::claims(e, tests::Capability::GcRoots))
    {
        let Some(sos) = sos_gcroots(&e) else { continue };
        let d = e.open();
        let rt = tests::discover(&d).unwrap();
        let names = TypeNames::new();
        let heap = rt.gc_heap().unwrap();
        let oracle = Oracle::new(&rt, &names);
        for g in &sos {
            let res = gcroot_with(
                &rt,
                &heap,
                &names,
                g.target,
                GcRootOptions {
                    max_roots: None,
                    ..GcRootOptions::default()
                },
            )
            .unwrap_or_else(|err| panic!("{}: gcroot {:#x}: {err}", e.name, g.target));
            assert!(res.notes.is_empty(), "{}: {:?}", e.name, res.notes);
            let mut ours: Vec<RootWithPath> = res
                .paths
                .iter()
                .filter_map(|p| {
                    let root = match &p.root.source {
                        RootSource::Handle { handle, .. } => SosRoot::Handle(*handle),
                        RootSource::FinalizerQueue { slot } => SosRoot::Finalizer(*slot),
                        RootSource::ThreadStatics { .. } => return None,
                        RootSource::Stack {
                            os_id,
                            slot: Some(s),
                            ..
                        } => SosRoot::Slot(*os_id, *s),
                        RootSource::Stack {
                            os_id,
                            slot: None,
                            register,
                            frame,
                            ..
                        } => SosRoot::Register(
                            *os_id,
                            frame.unwrap().0,
                            register.unwrap().to_owned(),
                        ),
                    };
                    let frame = match &p.root.source {
                        RootSource::Stack { frame, .. } => *frame,
                        _ => None,
                    };
                    Some((root, frame, p.path.clone()))
                })
                .collect();
            let mut theirs = g.roots.clone();
            ours.sort();
            theirs.sort();
            let key = |v: &[RootWithPath]| -> Vec<(SosRoot, Option<u64>)> {
                // An explicit Frame's root: SOS prints the Frame's address as its SP.
                v.iter().map(|x| (x.0.clone(), x.1.map(|f| f.1))).collect()
            };
            let (ok, tk) = (key(&ours), key(&theirs));
            let missing: Vec<_> = tk.iter().filter(|r| !ok.contains(r)).collect();
            assert!(
                missing.is_empty(),
                "{}: gcroot {:#x}: SOS's roots (and their frames' IPs) not found: {missing:x?}",
                e.name,
                g.target
            );
            // Roots SOS does not print: its search does not come back to an object it has
            // left, so it misses roots whose ways to the target run through such an object
            // (hang-net11: a waiter list walked from one thread's slot is not walked again
            // from the others'; heap-net9: the thread-static array a byref of
            // HoldThreadStatic points into, whose Person reaches others). Each of ours is a
            // root of ClrMD's (root_set_is_clrmds) whose object reaches the target in the
            // oracle's breadth-first search over the whole heap, by a path as short as ours.
            let dist = oracle.distances(g.target);
            for (root, _, path) in ours
                .iter()
                .filter(|o| !tk.contains(&(o.0.clone(), o.1.map(|f| f.1))))
            {
                assert_eq!(
                    dist.get(&path[0]).map(|d| d + 1),
                    Some(path.len() as u64),
                    "{}: gcroot {:#x}: {root:x?}: {path:x?}",
                    e.name,
                    g.target
                );
                sos_missed += 1;
            }
            let ours: Vec<_> = ours
                .into_iter()
                .filter(|o| tk.contains(&(o.0.clone(), o.1.map(|f| f.1))))
                .collect();
            for (o, s) in ours.iter().zip(&theirs) {
                // SOS's search is not breadth first: its path may be longer; ours is a
                // shortest one (gcroot_gives_each_root_a_shortest_path).
                assert!(
                    o.2.len() <= s.2.len() && o.2.first() == s.2.first(),
                    "{}: gcroot {:#x}: root {:x?}: path {:x?} vs SOS's {:x?}",
                    e.name,
                    g.target,
                    o.0,
                    o.2,
                    s.2
                );
                same_paths += usize::from(o.2 == s.2);
                shorter += usize::from(o.2.len() < s.2.len());
            }
            roots += theirs.len();
            targets += 1;
        }
        families.insert(e.family());
        dumps += 1;
    }
    eprintln!(
        "gcroot vs SOS: {dumps} dumps, {targets} targets, {roots} roots of SOS's found; of their \
         paths {same_paths} are SOS's, {shorter} shorter than SOS's; {sos_missed} roots SOS \
         misses"
    );
    assert!(roots >= 500, "only {roots} roots");
    for f in [8, 9, 10, 11] {
        assert!(families.contains(&f), "no .NET {f} dump");
    }
}
