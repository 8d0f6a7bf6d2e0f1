//! GC info decoded from real dumps' blobs, held to independent truth:
//! - SOS's `gcinfo` text (the runtime's own decoder and dumper on 8-10, the cDAC on 11),
//!   compared line for line with the same text rendered from our decode: header fields and
//!   every liveness transition at every offset;
//! - the method's code size from the DAC (GetCodeHeaderData) equals the GC info's code
//!   length, and a JIT'd blob ends before the debug info the JIT allocated after it;
//! - the roots the DAC's own GC stack walk reports for each frame (GetStackReferences)
//!   equal what `live_slots_at` answers for that frame's IP.

mod common;

use clrcodeinfo::gcinfo::{GcInfo, LivenessQuery, SlotLocation, StackBase};
use common::*;
use std::collections::BTreeMap;

/// SOS picks the GC info version it decodes with by the runtime version it makes out
/// (`GCInfoVersion()` in dotnet/diagnostics `src/shared/inc/gcinfo.h`: 3 before .NET 10);
/// in the runtime's own crash dumps of .NET 10 it makes out none and decodes version 4 GC
/// info as version 3, printing garbage, which is no truth. Its choice shows: only version 3
/// prints a "Return Kind" line.
fn sos_decoded_the_right_version(d: &serde_json::Value) -> bool {
    let major: u32 = d["runtime"]
        .as_str()
        .unwrap()
        .split('.')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let printed_return_kind = d["methods"].as_array().unwrap().iter().any(|m| {
        m["sos_gcinfo"]
            .as_str()
            .is_some_and(|t| t.contains("Return Kind:"))
    });
    printed_return_kind == (GcInfo::version_for_runtime(major) < 4)
}

#[test]
fn gc_info_matches_sos_gcinfo_text() {
    let mut compared = 0;
    let mut per_dump = BTreeMap::new();
    let mut families = std::collections::BTreeSet::new();
    for (name, d) in data_files() {
        let sos_ok = sos_decoded_the_right_version(&d);
        if !sos_ok {
            eprintln!(
                "{name}: SOS decoded .NET {}'s GC info with the wrong version: its gcinfo text is not compared",
                d["runtime"]
            );
        }
        for m in d["methods"].as_array().unwrap() {
            let gc = &m["gc_info"];
            let bytes = hex(gc["hex"].as_str().unwrap());
            let version = gc["version"].as_u64().unwrap() as u32;
            let what = format!("{name} {} ({})", m["name"], m["start"]);
            let g = GcInfo::decode(&bytes, version).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(
                g.header.code_length as u64,
                m["size"].as_u64().unwrap(),
                "{what}: code length vs the DAC's method size"
            );
            assert!(
                g.size() <= bytes.len(),
                "{what}: size {} > blob {}",
                g.size(),
                bytes.len()
            );
            if m["gc_info_extent"].as_str() == Some("up to the debug info allocated after it") {
                // The JIT's allocations are 8-byte aligned: the blob fills all but the padding.
                assert!(
                    bytes.len() - g.size() < 8,
                    "{what}: decoded {} of the {} bytes before the debug info",
                    g.size(),
                    bytes.len()
                );
            }
            if !sos_ok {
                continue;
            }
            let Some(truth) = m["sos_gcinfo"].as_str() else {
                panic!("{what}: no SOS truth");
            };
            let ours = sos_text(&g);
            if ours != truth {
                let t: Vec<&str> = truth.lines().collect();
                let o: Vec<&str> = ours.lines().collect();
                let i = t
                    .iter()
                    .zip(&o)
                    .position(|(a, b)| a != b)
                    .unwrap_or(t.len().min(o.len()));
                panic!(
                    "{what}: SOS gcinfo differs at line {i}:\n  sos:  {:?}\n  ours: {:?}\n({} vs {} lines)",
                    t.get(i),
                    o.get(i),
                    t.len(),
                    o.len()
                );
            }
            compared += 1;
            *per_dump.entry(name.clone()).or_insert(0) += 1;
            families.insert(
                d["runtime"]
                    .as_str()
                    .unwrap()
                    .split('.')
                    .next()
                    .unwrap()
                    .to_string(),
            );
        }
    }
    eprintln!("gcinfo: {compared} methods equal to SOS: {per_dump:?}");
    // Every runtime family the decoder claims is held to SOS.
    for f in ["8", "9", "10", "11"] {
        assert!(
            families.contains(f),
            "no .NET {f} GC info compared with SOS"
        );
    }
}

/// The DAC's SOSStackRefData spelling of a slot: (register or base register, offset, flags):
/// stack slots carry `GetStackReg(base)`: 4 for SP, -5 for the caller's SP, the frame
/// register for frame-relative slots; registers their number and offset 0.
fn dac_key(g: &GcInfo, l: &clrcodeinfo::gcinfo::LiveSlot) -> (i64, i64, u64) {
    let flags = l.slot.flags.0 as u64;
    match l.slot.location {
        SlotLocation::Register(r) => (r as i64, 0, flags),
        SlotLocation::Stack { base, offset } => {
            let reg = match base {
                StackBase::Sp => 4,
                StackBase::CallerSp => -5,
                StackBase::Frame => g.header.stack_base_register.unwrap() as i64,
            };
            (reg, offset as i64, flags)
        }
    }
}

#[test]
fn live_slots_match_the_dacs_stack_references() {
    let mut frames = 0;
    let mut roots = 0;
    let (mut active, mut parents, mut filters) = (0, 0, 0);
    for (name, d) in data_files() {
        let methods: BTreeMap<String, &serde_json::Value> = d["methods"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["start"].as_str().unwrap().to_string(), m))
            .collect();
        for f in d["frames"].as_array().unwrap() {
            if let Some(u) = f.get("unclaimed_stack_refs") {
                panic!(
                    "{name}: thread {} has roots no managed frame claims: {u}",
                    f["thread"]
                );
            }
            let Some(refs) = f["stack_refs"].as_array() else {
                continue;
            };
            let m = methods[f["method_start"].as_str().unwrap()];
            let gc = &m["gc_info"];
            let g = GcInfo::decode(
                &hex(gc["hex"].as_str().unwrap()),
                gc["version"].as_u64().unwrap() as u32,
            )
            .unwrap();
            let off = f["ip_offset"].as_u64().unwrap() as u32;
            // How the runtime's stack walk asks (StackFrameIterator, EnumGcRefs' flags): the
            // first frame of a thread stopped in managed code is the active one; a frame of a
            // method whose catch/finally funclet runs deeper on the same thread is a funclet's
            // parent (a filter's parent is not: filters run in the first pass, both frames
            // report, the filter without the untracked slots); every other frame is a caller
            // stopped at a call. Which code is a funclet: the DAC's EH clauses.
            let clauses = m["dac_eh_clauses"].as_array().cloned().unwrap_or_default();
            let in_filter = |o: u64| {
                clauses.iter().any(|c| {
                    c["type"] == "filter"
                        && c["filter"].as_u64().unwrap() <= o
                        && o < c["handler"][0].as_u64().unwrap()
                })
            };
            let in_handler = |o: u64| {
                clauses.iter().any(|c| {
                    c["handler"][0].as_u64().unwrap() <= o && o < c["handler"][1].as_u64().unwrap()
                })
            };
            let parent = d["frames"].as_array().unwrap().iter().any(|o| {
                o["thread"] == f["thread"]
                    && o["method_start"] == f["method_start"]
                    && o["index"].as_u64() < f["index"].as_u64()
                    && in_handler(o["ip_offset"].as_u64().unwrap())
                    && !in_filter(o["ip_offset"].as_u64().unwrap())
            });
            let q = LivenessQuery {
                active_frame: f["first_frame"].as_bool() == Some(true),
                parent_of_funclet: parent,
                no_report_untracked: in_filter(off as u64),
                ..LivenessQuery::default()
            };
            if q.no_report_untracked {
                filters += 1;
            }
            if q.active_frame {
                active += 1;
            }
            if q.parent_of_funclet {
                parents += 1;
            }
            let mut ours: Vec<_> = g
                .live_slots_at(off, &q)
                .unwrap()
                .iter()
                .map(|l| dac_key(&g, l))
                .collect();
            let mut dac: Vec<_> = refs
                .iter()
                .map(|r| {
                    let reg = r["register"].as_i64().unwrap();
                    let has_reg = r["has_register"].as_i64().unwrap() != 0;
                    assert!(has_reg, "{name}: a root without register information: {r}");
                    (
                        reg,
                        r["offset"].as_i64().unwrap(),
                        r["flags"].as_u64().unwrap() & 3,
                    )
                })
                .collect();
            ours.sort();
            dac.sort();
            assert_eq!(
                ours, dac,
                "{name} {} at +{off:#x} (thread {}, frame {})",
                m["name"], f["thread"], f["index"]
            );
            frames += 1;
            roots += dac.len();
        }
    }
    eprintln!(
        "stack roots: {frames} frames ({active} active, {parents} funclet parents, {filters} filters), {roots} roots equal to the DAC's"
    );
    assert!(frames > 0 && active > 0 && parents > 0 && filters > 0);
}

/// A blob a dump holds only in part (`decode_available`: the runtime's own reads touched the
/// tables and the live states of the offsets it asked about): every prefix of every real blob
/// either refuses to decode (the tables are cut) or answers each query exactly as the whole
/// blob does, or fails it as truncated; never a different answer. Whole, it is the same as
/// `decode`.
#[test]
fn partial_blobs_answer_as_the_whole_or_say_truncated() {
    use clrcodeinfo::GcInfoError;
    let (mut prefixes, mut answered, mut truncated) = (0, 0, 0);
    for (name, d) in data_files() {
        for m in d["methods"].as_array().unwrap() {
            let gc = &m["gc_info"];
            let bytes = hex(gc["hex"].as_str().unwrap());
            let version = gc["version"].as_u64().unwrap() as u32;
            let whole = GcInfo::decode(&bytes, version).unwrap();
            let bytes = &bytes[..whole.size()];
            let all = GcInfo::decode_available(bytes, version).unwrap();
            assert!(all.is_complete(), "{name} {}", m["name"]);
            let len = whole.header.code_length;
            let mut offsets: Vec<u32> = whole.safe_points();
            offsets.extend((0..=len).step_by(7));
            let queries = [LivenessQuery::caller_frame(), LivenessQuery::active_frame()];
            for n in (0..bytes.len()).step_by(3) {
                let Ok(part) = GcInfo::decode_available(&bytes[..n], version) else {
                    continue;
                };
                prefixes += 1;
                for &o in &offsets {
                    for q in &queries {
                        let want = whole.live_slots_at(o, q).unwrap();
                        match part.live_slots_at(o, q) {
                            Ok(got) => {
                                assert_eq!(got, want, "{name} {} cut at {n}: +{o:#x}", m["name"]);
                                answered += 1;
                            }
                            Err(GcInfoError::Truncated { .. }) => truncated += 1,
                            Err(e) => panic!("{name} {} cut at {n}: +{o:#x}: {e}", m["name"]),
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "partial blobs: {prefixes} prefixes, {answered} answers equal, {truncated} truncated"
    );
    assert!(prefixes > 100 && answered > 1000 && truncated > 100);
}
