//! The runtime's records of its loaded images (`Runtime::loaded_images`), which anchor a PE file
//! to the image a gcore core lacks the headers of (clrdata/src/discovery/imagecheck.rs: the
//! AppDomain's assembly list, each Assembly's Module, its PEAssembly and loaded layout, its
//! lookup maps), against the runtime DAC's own view of them (`dumps/<name>.modules.dac.json`,
//! made by dumps/tools/dacmodules.py: GetAssemblyList, GetAssemblyModuleList, GetModuleData).
//! The records come from the dump's memory alone, so this holds in the clean room too.

use clrdata::metadata::TableId;
use serde_json::Value;

fn hex(v: &Value) -> u64 {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("not a hex string: {v}"));
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

/// The DAC's name for the map of `t` (DacpModuleData).
fn dac_map(t: TableId) -> &'static str {
    match t {
        TableId::TypeDef => "TypeDefToMethodTableMap",
        TableId::TypeRef => "TypeRefToMethodTableMap",
        TableId::MemberRef => "MemberRefToDescMap",
        TableId::MethodDef => "MethodDefToDescMap",
        TableId::Field => "FieldDefToDescMap",
        TableId::AssemblyRef => "ManifestModuleReferencesMap",
        other => panic!("no DAC map for {other:?}"),
    }
}

/// Every dump with the DAC's module view: the AppDomain's list walks to the DAC's Assemblies in
/// the DAC's order, each one's Module is the DAC's, and each image's loaded base and lookup
/// maps' tables equal GetModuleData's (its PEAssembly too on .NET 8, where the DAC reports the
/// PEAssembly rather than the Module).
#[test]
fn image_records_equal_the_dacs() {
    let (mut dumps, mut images, mut maps) = (0, 0, 0);
    let mut families = std::collections::BTreeSet::new();
    for e in tests::all() {
        let p = tests::dumps_dir().join(format!("{}.modules.dac.json", e.name));
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let t: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            t["dump_sha256"], e.dac["dump_file"]["sha256"],
            "{}.modules.dac.json was written for another dump: regenerate it",
            e.name
        );
        let d = e.open();
        let rt = tests::discover(&d).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let ours = rt
            .loaded_images()
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let domains = t["app_domains"].as_array().unwrap();
        assert_eq!(domains.len(), 1, "{}: one AppDomain", e.name);
        let dac = domains[0]["assemblies"].as_array().unwrap();
        assert_eq!(
            ours.len(),
            dac.len(),
            "{}: {} assemblies in the list, the DAC has {}",
            e.name,
            ours.len(),
            dac.len()
        );
        for (o, a) in ours.iter().zip(dac) {
            let o = o.as_ref().unwrap_or_else(|err| panic!("{}: {err}", e.name));
            let name = a["name"].as_str().unwrap_or("?");
            assert_eq!(o.assembly, hex(&a["assembly"]), "{}: {name}", e.name);
            let mods = a["modules"].as_array().unwrap();
            assert_eq!(mods.len(), 1, "{}: {name}: one module", e.name);
            let m = &mods[0];
            assert_eq!(o.module, hex(&m["module"]), "{}: {name}: module", e.name);
            if m.get("error").is_some() {
                // The DAC could not read this image (a gcore core whose file is not here).
                continue;
            }
            if e.family() == 8 {
                assert_eq!(o.pe_assembly, hex(&m["pe_assembly"]), "{}: {name}", e.name);
            }
            assert_eq!(o.base, hex(&m["il_base"]), "{}: {name}: image base", e.name);
            assert_eq!(o.maps.len(), 6);
            for map in &o.maps {
                assert_eq!(
                    map.table_address,
                    hex(&m["maps"][dac_map(map.table)]),
                    "{}: {name}: {:?} map",
                    e.name,
                    map.table
                );
                assert!(map.count > 0, "{}: {name}: {:?} map", e.name, map.table);
                maps += 1;
            }
            images += 1;
        }
        families.insert(e.family());
        dumps += 1;
    }
    println!("{dumps} dumps, {images} images, {maps} lookup maps equal the DAC's");
    assert!(
        dumps >= 5 && images >= 60 && families.len() >= 3,
        "{dumps} dumps, {images} images, families {families:?}"
    );
}

/// Where the layout does not know the records (.NET 8 on Windows), asking for them is refused
/// by name, never guessed.
#[test]
fn image_records_are_refused_where_unknown() {
    let mut refused = 0;
    for e in tests::all() {
        if e.name != "windows-hang" {
            continue;
        }
        let d = e.open();
        let rt = tests::discover(&d).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let err = rt.loaded_images().unwrap_err().to_string();
        assert!(
            err.contains("records of its loaded images") && err.contains("windows-x64"),
            "{}: {err}",
            e.name
        );
        refused += 1;
    }
    assert_eq!(refused, 1);
}
