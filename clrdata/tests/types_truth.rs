//! MethodTables, EEClasses, FieldDescs and modules, checked for every MethodTable of the DAC's
//! census in every .NET 8 corpus dump; and the heap walk's recovery from a corrupted object.

use clrdata::model::heap::WalkErrorKind;
use clrdata::prelude::*;
use dumpreader::{Dump, Memory};
use serde_json::Value;
use std::collections::HashMap;

const NET8: &[&str] = &[
    "hang",
    "deadlock",
    "heap",
    "crash",
    "threadpool",
    "servergc",
    "windows-hang",
];

fn hex(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// Row count of the TypeDef table (table 2) from a BSJB metadata root in memory.
fn typedef_rows<M: Memory>(m: &M, md: u64) -> u32 {
    let ver_len = m.read_u32(md + 12).unwrap() as u64;
    let streams = md + 16 + ver_len;
    let n = m.read_u16(streams + 2).unwrap();
    let mut p = streams + 4;
    for _ in 0..n {
        let off = m.read_u32(p).unwrap() as u64;
        let name = m.read_cstr(p + 8, 32).unwrap();
        if name == "#~" || name == "#-" {
            let t = md + off;
            let valid = m.read_u64(t + 8).unwrap();
            assert!(valid & 4 != 0, "no TypeDef table");
            let idx = (valid & 3).count_ones() as u64;
            return m.read_u32(t + 24 + 4 * idx).unwrap();
        }
        p += 8 + ((name.len() as u64 + 4) & !3);
    }
    panic!("no #~ stream");
}

#[test]
fn every_census_method_table_decodes() {
    for name in NET8 {
        let e = tests::entry(name);
        let d = Dump::open_with(&e.dump_path(), &e.open_options()).unwrap();
        let rt = tests::discover(&d).unwrap();
        let mut rows: HashMap<u64, u32> = HashMap::new();
        let mut by_name: HashMap<String, u64> = HashMap::new();
        for t in e.dac["heap_stat"]["types"].as_array().unwrap() {
            let mt = hex(&t["mt"]);
            let tname = t["type"].as_str().unwrap().to_string();
            by_name.insert(tname.clone(), mt);
            let info = rt
                .method_table(mt)
                .unwrap_or_else(|err| panic!("{name}: {tname}: {err}"));
            // The census sizes say the same: a single object's size is at least BaseSize.
            assert!(info.base_size >= 0x10, "{name}: {tname}");
            // EEClass back pointer.
            let back = d
                .read_u64(info.ee_class + rt.layout.ee_class.method_table)
                .unwrap();
            assert_eq!(
                back, info.canonical,
                "{name}: {tname}: EEClass::m_pMethodTable"
            );
            assert_eq!(
                info.is_array(),
                tname.ends_with(']') && !tname.ends_with("]]"),
                "{name}: {tname}: array flag"
            );
            if tname == "System.String" {
                assert_eq!(info.component_size, 2);
            }
            let Some(module) = info.module else { continue };
            let md = rt
                .module(module)
                .unwrap_or_else(|err| panic!("{name}: {tname}: module {module:#x}: {err}"));
            assert!(!md.simple_name.is_empty(), "{name}: {tname}");
            let file = md.path.rsplit(['/', '\\']).next().unwrap_or("");
            assert!(
                file.eq_ignore_ascii_case(&format!("{}.dll", md.simple_name)),
                "{name}: {tname}: module {} path {}",
                md.simple_name,
                md.path
            );
            let (mdaddr, mdsize) = md
                .metadata
                .unwrap_or_else(|| panic!("{name}: {tname}: no metadata"));
            assert!(mdsize > 0);
            // User types live in the scenario's own assembly.
            for (prefix, asm) in [
                ("Hang.", "hang"),
                ("Heap.", "heap"),
                ("Deadlock.", "deadlock"),
            ] {
                if tname.starts_with(prefix) && !tname.contains('[') {
                    assert_eq!(md.simple_name, asm, "{name}: {tname}");
                }
            }
            if tname.starts_with("System.") && !tname.contains('[') {
                assert!(
                    md.simple_name.starts_with("System."),
                    "{name}: {tname}: {}",
                    md.simple_name
                );
            }
            if let Some(tok) = info.token {
                assert_eq!(tok >> 24, 2, "{name}: {tname}");
                let n = *rows
                    .entry(mdaddr)
                    .or_insert_with(|| typedef_rows(&d, mdaddr));
                let rid = tok & 0xFF_FFFF;
                assert!(rid >= 1 && rid <= n, "{name}: {tname}: rid {rid} of {n}");
            } else {
                assert!(info.is_array(), "{name}: {tname}: no token");
            }
        }
        // Generic arguments and array elements.
        let string_mt = rt.globals.string_mt;
        if let Some(&mt) = by_name
            .get("System.Collections.Generic.List`1[[System.String, System.Private.CoreLib]]")
        {
            let info = rt.method_table(mt).unwrap();
            assert!(info.is_generic());
            assert_eq!(info.type_args, vec![string_mt], "{name}: List<string>");
        }
        if let Some(&mt) = by_name.get("System.String[]") {
            let info = rt.method_table(mt).unwrap();
            let a = info.array.unwrap();
            assert_eq!((a.element, a.rank, a.is_sz), (string_mt, 1, true), "{name}");
        }
        if let Some(&mt) = by_name.get("System.Int32[,]") {
            let a = rt.method_table(mt).unwrap().array.unwrap();
            assert_eq!((a.rank, a.is_sz), (2, false), "{name}");
        }
        // Fields of a scenario class: Hang.Payload { int Index; string Tag; }.
        if let Some(&mt) = by_name.get("Hang.Payload") {
            let info = rt.method_table(mt).unwrap();
            let fields = rt.fields(&info).unwrap();
            let got: Vec<(u32, u8, bool)> = fields
                .iter()
                .map(|f| (f.offset, f.element_type, f.is_static))
                .collect();
            assert_eq!(
                got,
                vec![(8, 0x08, false), (0, 0x12, false)],
                "{name}: Payload fields"
            );
            assert_eq!(fields[0].token + 1, fields[1].token);
            if let Some((inst, stat)) = rt.field_counts(info.ee_class).unwrap() {
                assert_eq!((inst, stat), (2, 0), "{name}");
            }
        }
    }
}

/// A Memory that replaces 8 bytes of the real dump at one address.
struct Patched<'a> {
    inner: &'a Dump,
    at: u64,
    bytes: [u8; 8],
}

impl Memory for Patched<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        let got = self.inner.read(addr, buf);
        for i in 0..8u64 {
            let a = self.at + i;
            if a >= addr && a < addr + got as u64 {
                buf[(a - addr) as usize] = self.bytes[i as usize];
            }
        }
        got
    }
}

impl dumpreader::Target for Patched<'_> {
    fn info(&self) -> &dumpreader::DumpInfo {
        self.inner.info()
    }
    fn threads(&self) -> &[dumpreader::ThreadInfo] {
        self.inner.threads()
    }
    fn modules(&self) -> &[dumpreader::ModuleInfo] {
        self.inner.modules()
    }
    fn module_image(
        &self,
        m: &dumpreader::ModuleInfo,
    ) -> Result<std::sync::Arc<dumpreader::ModuleImage>, dumpreader::Error> {
        self.inner.module_image(m)
    }
    fn image_search_path(&self) -> Vec<std::path::PathBuf> {
        dumpreader::Target::image_search_path(self.inner)
    }
    fn use_recorded_paths(&self) -> bool {
        dumpreader::Target::use_recorded_paths(self.inner)
    }
}

#[test]
fn a_corrupt_method_table_is_reported_and_the_walk_resumes() {
    let e = tests::entry("hang");
    let d = Dump::open_with(&e.dump_path(), &e.open_options()).unwrap();
    let rt = tests::discover(&d).unwrap();
    let heap = rt.gc_heap().unwrap();
    let clean = heap.census(&rt);
    // The 500th Hang.Payload (32 bytes each, contiguous in gen2).
    let payload = hex(&e.dac["heap_stat"]["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "Hang.Payload")
        .unwrap()["mt"]);
    let victim = heap
        .objects(&rt)
        .filter(|o| o.mt == payload)
        .nth(500)
        .unwrap();
    let bad = Patched {
        inner: &d,
        at: victim.address,
        bytes: 0xdead_beef_0000_1000u64.to_le_bytes(),
    };
    let rt2 = tests::discover(bad).unwrap();
    let heap2 = rt2.gc_heap().unwrap();
    let c = heap2.census(&rt2);
    assert_eq!(c.errors.len(), 1, "{:?}", c.errors);
    let err = &c.errors[0];
    assert_eq!(err.address, victim.address);
    assert_eq!(err.kind, WalkErrorKind::BadMethodTable);
    assert_eq!(err.mt, 0xdead_beef_0000_1000);
    assert_eq!(err.segment, heap.segments[victim.segment].address);
    // It resumes at the next object (the next Payload, whose MT is known): one object lost.
    assert_eq!(err.skipped, 32);
    assert_eq!(c.skipped_bytes, 32);
    assert_eq!(c.total_objects, clean.total_objects - 1);
    assert_eq!(c.total_size, clean.total_size - 32);
    let p = c.types.iter().find(|t| t.mt == payload).unwrap();
    assert_eq!(p.count, 999);
}
