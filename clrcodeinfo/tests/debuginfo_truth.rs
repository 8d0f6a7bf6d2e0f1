//! Debug info decoded from real dumps' blobs, held to the runtime's own DAC:
//! - the IL address map (IXCLRDataMethodInstance::GetILAddressMap: per bounds entry its IL
//!   offset and native range) equals our bounds;
//! - GetILOffsetsByAddress at each frame's IP and IP-1 equals `il_offsets_at`;
//! - each argument and local the DAC places for a frame (IXCLRDataFrame) is where our
//!   variable locations put it at that IP: the same stack address, or a register holding
//!   the DAC's value; and where the DAC finds no location, neither do we.

mod common;

use clrcodeinfo::debuginfo::{DebugInfo, VarLoc, VarNumber};
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;

fn decode(m: &Value) -> Option<DebugInfo> {
    let d = m.get("debug_info")?;
    let bytes = hex(d["hex"].as_str().unwrap());
    let what = format!("{} ({})", m["name"], m["start"]);
    let di = DebugInfo::decode(&bytes, format_of(d["format"].as_str().unwrap()))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    if d["extent"].as_str() == Some("the header's sizes") {
        assert_eq!(di.size, bytes.len(), "{what}: size");
    }
    Some(di)
}

#[test]
fn bounds_match_the_dacs_il_address_map() {
    let mut methods = 0;
    let mut entries = 0;
    for (name, d) in data_files() {
        for m in d["methods"].as_array().unwrap() {
            let Some(map) = m["dac_il_address_map"].as_array() else {
                continue;
            };
            let di =
                decode(m).unwrap_or_else(|| panic!("{name} {}: no debug info blob", m["name"]));
            let ours: Vec<(u64, u64, u64)> = di
                .bounds
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    // The DAC's DebuggerILToNativeMap: the end is the next entry's start, 0
                    // for the last.
                    let end = di.bounds.get(i + 1).map(|n| n.native_offset).unwrap_or(0);
                    (b.il_offset as u64, b.native_offset as u64, end as u64)
                })
                .collect();
            let dac: Vec<(u64, u64, u64)> = map
                .iter()
                .map(|e| {
                    let e = e.as_array().unwrap();
                    (
                        e[0].as_u64().unwrap(),
                        e[1].as_i64().unwrap() as u64,
                        e[2].as_i64().unwrap() as u64,
                    )
                })
                .collect();
            assert_eq!(
                ours, dac,
                "{name} {}: bounds vs the DAC's IL address map",
                m["name"]
            );
            methods += 1;
            entries += dac.len();
        }
    }
    eprintln!("bounds: {methods} methods, {entries} entries equal to the DAC's IL address maps");
    assert!(methods > 0);
}

fn method_map(d: &Value) -> BTreeMap<String, &Value> {
    d["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["start"].as_str().unwrap().to_string(), m))
        .collect()
}

#[test]
fn il_offsets_match_the_dacs_lookup() {
    let mut frames = 0;
    for (name, d) in data_files() {
        let methods = method_map(&d);
        for f in d["frames"].as_array().unwrap() {
            let Some(ms) = f["method_start"].as_str() else {
                continue;
            };
            let m = methods[ms];
            let Some(di) = decode(m) else { continue };
            let off = f["ip_offset"].as_u64().unwrap() as u32;
            for (key, at) in [
                ("il_offsets_at_ip", off),
                ("il_offsets_at_ip_minus_1", off - 1),
            ] {
                let Some(t) = f.get(key) else { continue };
                let dac: Vec<u32> = t["offsets"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap() as u32)
                    .collect();
                assert_eq!(
                    di.il_offsets_at(at),
                    dac,
                    "{name} {} {key} (+{at:#x})",
                    m["name"]
                );
            }
            frames += 1;
        }
    }
    eprintln!("IL offsets: {frames} frames equal to GetILOffsetsByAddress at IP and IP-1");
    assert!(frames > 0);
}

fn reg(f: &Value, r: u32) -> u64 {
    const N: [&str; 16] = [
        "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12",
        "r13", "r14", "r15",
    ];
    addr(&f["regs"][N[r as usize]])
}

#[test]
fn variable_locations_match_the_dacs_frames() {
    let (mut stack, mut regs, mut none) = (0, 0, 0);
    for (name, d) in data_files() {
        let methods = method_map(&d);
        for f in d["frames"].as_array().unwrap() {
            let Some(ms) = f["method_start"].as_str() else {
                continue;
            };
            let m = methods[ms];
            let Some(di) = decode(m) else { continue };
            let off = f["ip_offset"].as_u64().unwrap() as u32;
            let vars = &f["vars"];
            let args = vars["arguments"].as_array().map(|a| a.len()).unwrap_or(0) as u32;
            for (kind, base) in [("arguments", 0u32), ("locals", args)] {
                let Some(items) = vars[kind].as_array() else {
                    continue;
                };
                for it in items {
                    if it["hr"].as_str() != Some("0x00000000") {
                        continue;
                    }
                    let i = it["index"].as_u64().unwrap() as u32;
                    let what = format!("{name} {} +{off:#x} {kind}[{i}] {}", m["name"], it["name"]);
                    let locs = it["locations"].as_array().unwrap();
                    let ours = di.var_location(VarNumber::Il(base + i), off);
                    match (locs.len(), ours) {
                        (0, None) => none += 1,
                        (0, Some(v)) => panic!("{what}: the DAC has no location, we have {v:?}"),
                        (1, Some(v)) => {
                            let l = &locs[0];
                            if l["kind"] == "memory" {
                                let a = match v.loc {
                                    VarLoc::Stack { base, offset } => {
                                        reg(f, base).wrapping_add(offset as i64 as u64)
                                    }
                                    other => {
                                        panic!("{what}: the DAC has memory, we have {other:?}")
                                    }
                                };
                                assert_eq!(a, addr(&l["address"]), "{what}");
                                stack += 1;
                            } else {
                                let VarLoc::Reg(r) = v.loc else {
                                    panic!("{what}: the DAC has a register, we have {:?}", v.loc)
                                };
                                // The DAC's value is the register's content in the frame.
                                let bytes = hex(it["bytes"].as_str().unwrap());
                                let val = reg(f, r).to_le_bytes();
                                assert_eq!(&val[..bytes.len()], &bytes[..], "{what}: register {r}");
                                regs += 1;
                            }
                        }
                        (n, v) => panic!("{what}: the DAC has {n} locations, we have {v:?}"),
                    }
                }
            }
        }
    }
    eprintln!("variables: {stack} on the stack, {regs} in registers, {none} without location, all as the DAC places them");
    assert!(stack + regs > 0);
}
