//! Shared by the truth tests: loading `tests/data/*.json` (made by `tools/make_testdata.py`
//! from corpus dumps) and SOS's `gcinfo` text of decoded GC info (the library's gcdump).

#![allow(dead_code)]

use clrcodeinfo::debuginfo::DebugInfoFormat;
use serde_json::Value;
use std::path::PathBuf;

pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Every data file, by name; a test that finds none fails (the data is committed).
pub fn data_files() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(data_dir())
        .expect("tests/data")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    for p in paths {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        out.push((p.file_stem().unwrap().to_string_lossy().to_string(), v));
    }
    assert!(!out.is_empty(), "no test data in {}", data_dir().display());
    out
}

pub fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

pub fn addr(v: &Value) -> u64 {
    let s = v.as_str().unwrap();
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

pub fn format_of(s: &str) -> DebugInfoFormat {
    match s {
        "net8-jit" => DebugInfoFormat::Net8 { flag_byte: true },
        "net8-r2r" => DebugInfoFormat::Net8 { flag_byte: false },
        "net10-jit" => DebugInfoFormat::Net10 { flag_byte: true },
        "net10-r2r" => DebugInfoFormat::Net10 { flag_byte: false },
        "net11" => DebugInfoFormat::Net11,
        other => panic!("unknown debug info format {other}"),
    }
}

/// SOS's gcinfo text of `g` (the library's [`clrcodeinfo::gcdump::sos_text`]).
pub fn sos_text(g: &clrcodeinfo::gcinfo::GcInfo) -> String {
    clrcodeinfo::gcdump::sos_text(g).expect("enumerate_states")
}
