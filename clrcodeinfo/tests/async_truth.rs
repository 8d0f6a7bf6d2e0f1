//! .NET 11 runtime-async suspension points (the debug info's async chunk), held to the
//! runtime's own objects in a real dump (tests/data/async/*.json, tools/asyncprobe.py):
//! - every suspended continuation's ResumeInfo->DiagnosticIP is its method's start plus the
//!   native offset of suspension point `State`;
//! - the locals a suspension point lists are in the continuation object at their offsets
//!   (from the object's start): the scenario manifest's hoisted arguments by position, and
//!   its hoisted locals among the other variables.

mod common;

use clrcodeinfo::debuginfo::{DebugInfo, VarNumber};
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;

fn files() -> Vec<(String, Value)> {
    let dir = data_dir().join("async");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).expect("tests/data/async") {
        let p = e.unwrap().path();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        out.push((p.file_stem().unwrap().to_string_lossy().to_string(), v));
    }
    assert!(!out.is_empty());
    out
}

/// A hoisted value as it lies in the continuation: (offset, type) -> the manifest's value.
fn value_at(c: &Value, offset: u32, ty: &str) -> Value {
    let bytes = hex(c["bytes"].as_str().unwrap());
    let o = offset as usize;
    match ty {
        "System.Int32" => i32::from_le_bytes(bytes[o..o + 4].try_into().unwrap()).into(),
        "System.Int64" => i64::from_le_bytes(bytes[o..o + 8].try_into().unwrap()).into(),
        "System.String" => {
            let p = u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
            c["strings"][format!("{p:#x}")].clone()
        }
        other => panic!("no reader for {other}"),
    }
}

#[test]
fn suspension_points_match_the_runtimes_continuations() {
    let mut checked = 0;
    let mut hoisted = 0;
    for (name, d) in files() {
        let mut decoded = BTreeMap::new();
        for m in d["methods"].as_array().unwrap() {
            let dbg = &m["debug_info"];
            let bytes = hex(dbg["hex"].as_str().unwrap());
            let di = DebugInfo::decode(&bytes, format_of(dbg["format"].as_str().unwrap()))
                .unwrap_or_else(|e| panic!("{name} {}: {e}", m["name"]));
            assert_eq!(di.size, bytes.len(), "{name} {}", m["name"]);
            decoded.insert(
                m["start"].as_str().unwrap().to_string(),
                (m["name"].as_str().unwrap().to_string(), di),
            );
        }
        let manifest = d["manifest_hoisted"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for c in d["continuations"].as_array().unwrap() {
            let (mname, di) = &decoded[c["method_start"].as_str().unwrap()];
            let state = c["state"].as_u64().unwrap() as usize;
            let point = di
                .async_suspension_points
                .get(state)
                .unwrap_or_else(|| panic!("{name} {mname}: no suspension point {state}"));
            assert_eq!(
                point.native_offset as u64,
                c["diagnostic_ip_offset"].as_u64().unwrap(),
                "{name} {mname} state {state}"
            );
            checked += 1;
            // The manifest's hoisted values of this method (its name without the signature).
            let short = mname.split('(').next().unwrap();
            let items: Vec<&Value> = manifest.iter().filter(|h| h["method"] == short).collect();
            if items.is_empty() {
                continue;
            }
            let args: Vec<&&Value> = items.iter().filter(|h| h["kind"] == "argument").collect();
            for (i, a) in args.iter().enumerate() {
                let l = point
                    .locals
                    .iter()
                    .find(|l| l.var_number == VarNumber::Il(i as u32))
                    .unwrap_or_else(|| panic!("{name} {mname}: argument {i} not saved"));
                assert_eq!(
                    value_at(c, l.offset, a["type"].as_str().unwrap()),
                    a["value"],
                    "{name} {mname} {}",
                    a["name"]
                );
                hoisted += 1;
            }
            for h in items.iter().filter(|h| h["kind"] == "local") {
                let ty = h["type"].as_str().unwrap();
                let found = point.locals.iter().any(|l| {
                    matches!(l.var_number, VarNumber::Il(n) if n as usize >= args.len())
                        && value_at(c, l.offset, ty) == h["value"]
                });
                assert!(
                    found,
                    "{name} {mname}: local {} = {} not among the saved locals",
                    h["name"], h["value"]
                );
                hoisted += 1;
            }
        }
    }
    eprintln!("async: {checked} continuations at their suspension point, {hoisted} hoisted values where the async info says");
    assert!(checked > 0 && hoisted > 0);
}
