//! MethodDescs named as the DAC names them, on every corpus dump the tests claim Methods on
//! (.NET 8, 9, 10 and 11, Linux and the Windows minidump): the DAC's stack walk
//! (`dumps/<name>.dac.json`, `stacks[].frames[]`) gives each managed frame's `methodDesc`
//! (GetMethodDescPtrFromIP / GetMethodDescPtrFromFrame) and its `method` (GetMethodDescName).
//! Each MethodDesc is decoded through its MethodDescChunk (`clrdata::model::methods::method_desc`: the
//! MethodDesc size table, token remainder, chunk) and named from metadata
//! (`method_desc_name`); the name must equal the DAC's, token and MethodTable must agree with
//! the chunk's, and the MethodDesc must be one of its chunk's (the chunk walk of its class
//! finds it at that address). This needs no stack walk of ours: the MethodDescs are the DAC's.
//!
//! Environment: `DUMPSHELL_SKIP_DUMPS=a,*-net10h` leaves corpus dumps out (development against
//! one patch while the held-out patch waits).

use clrdata::discovery::layout::Capability;
use clrdata::model::instantiation::method_instantiation;
use clrdata::model::methods::{introduced_methods, method_desc, method_desc_name};
use clrdata::model::objects::ObjectReader;
use clrdata::prelude::*;
use clrdata::TypeNames;
use serde_json::Value;
use std::collections::BTreeMap;

fn hex(v: &Value) -> u64 {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("not a hex string: {v}"));
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("bad hex {s}"))
}

fn skipped(name: &str) -> bool {
    std::env::var("DUMPSHELL_SKIP_DUMPS")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .any(|s| match s.strip_prefix('*') {
            Some(suffix) => name.ends_with(suffix),
            None => s == name,
        })
}

/// The DAC's (MethodDesc, name) pairs of a dump's managed frames, each once.
fn dac_method_descs(e: &tests::Entry) -> BTreeMap<u64, String> {
    let mut out = BTreeMap::new();
    for s in e.dac["stacks"].as_array().into_iter().flatten() {
        for f in s["frames"].as_array().into_iter().flatten() {
            let (Some(md), Some(name)) = (f.get("methodDesc"), f["method"].as_str()) else {
                continue;
            };
            let md = hex(md);
            if md != 0 {
                let prev = out.insert(md, name.to_string());
                assert!(
                    prev.is_none() || prev.as_deref() == Some(name),
                    "{}: the DAC names {md:#x} twice differently",
                    e.name
                );
            }
        }
    }
    out
}

#[test]
fn stack_method_descs_are_named_as_the_dac_names_them() {
    let mut total = 0;
    let mut per_family: BTreeMap<u32, usize> = BTreeMap::new();
    let mut diffs = Vec::new();
    for e in tests::readable_for(Capability::Methods) {
        if skipped(&e.name) {
            eprintln!("method_names: {} skipped (DUMPSHELL_SKIP_DUMPS)", e.name);
            continue;
        }
        let pairs = dac_method_descs(&e);
        if pairs.is_empty() {
            continue;
        }
        let d = e.open();
        let rt = tests::discover(&d).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let names = TypeNames::new();
        let r = ObjectReader::new(&rt, &names);
        let mut n = 0;
        for (&md, dac_name) in &pairs {
            let what = format!("{} MethodDesc {md:#x} ({dac_name})", e.name);
            let decoded = match method_desc(&r, md) {
                Ok(x) => x,
                Err(err) => {
                    diffs.push(format!("{what}: does not decode: {err}"));
                    continue;
                }
            };
            match method_desc_name(&r, &decoded) {
                Ok(ours) if ours == *dac_name => {}
                Ok(ours) => diffs.push(format!("{what}: ours {ours}")),
                Err(err) => diffs.push(format!("{what}: not named: {err}")),
            }
            // The MethodDesc is one its class's chunk walk finds, at that address, with the
            // same token and slot (sizes and flags read right up to it). An IL stub's chunk
            // is not linked into its class's list: the 11.0.0 ILStubClass's EEClass has no
            // chunk at all (aspnethang-net11: `IL_STUB_AsyncResume`), so a dynamic method
            // whose class lists none is not looked for there.
            // A generic method's instantiation is not there either: the runtime makes its
            // InstantiatedMethodDesc in a chunk of its own (genmeth.cpp
            // `InstantiatedMethodDesc::NewInstantiatedMethodDesc`: `MethodDescChunk::
            // CreateChunk`, never `EEClass::AddChunk`), found through the module's
            // InstMethodHashTable; its chunk was read above (token, MethodTable).
            let instantiated =
                method_instantiation(&rt, md, decoded.classification).is_ok_and(|a| !a.is_empty());
            let ee = rt.method_table(decoded.method_table).map(|m| m.ee_class);
            match ee.and_then(|ee| introduced_methods(&r, ee)) {
                _ if instantiated => {}
                Ok(all) if all.is_empty() && decoded.classification == 7 => {}
                Ok(all) => match all.iter().find(|x| x.address == md) {
                    Some(x) if *x == decoded => {}
                    Some(x) => diffs.push(format!("{what}: the chunk walk reads {x:?}")),
                    None => diffs.push(format!("{what}: not found by its class's chunk walk")),
                },
                Err(err) => diffs.push(format!("{what}: chunk walk: {err}")),
            }
            n += 1;
        }
        eprintln!("method_names: {}: {n} MethodDescs named", e.name);
        total += n;
        *per_family.entry(e.family()).or_default() += n;
    }
    assert!(
        diffs.is_empty(),
        "{} of {total} MethodDescs differ from the DAC:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
    eprintln!("method_names: {total} MethodDescs, by family {per_family:?}");
    for fam in [9, 10, 11] {
        assert!(
            per_family.get(&fam).copied().unwrap_or(0) > 20,
            ".NET {fam}: too few MethodDescs compared ({per_family:?})"
        );
    }
}

/// The MethodDesc sizes of the layout (descriptor types and supplement) against the runtime's
/// own size table, on every .NET 10 dump claiming Methods: `MethodDescSizeTable` (the global
/// the 10 descriptor publishes: `MethodDesc::s_ClassificationSizeTable`, indexed by the flags'
/// classification | HasNonVtableSlot | MethodImpl | HasNativeCodeSlot bits) read from the dump,
/// or from the runtime's image file (same build id) where the dump lacks its page. All 64
/// entries are compared (classification sizes and the three optional slots). .NET 9 publishes
/// no table: its sizes are checked by the chunk walks (`repl/tests/methods.rs`
/// `every_heap_type_has_a_consistent_method_table`, and the test above).
#[test]
fn method_desc_sizes_equal_the_runtimes_size_table() {
    let mut dumps = 0;
    let mut compared = 0;
    for e in tests::readable_for(Capability::Methods) {
        if e.family() != 10 || skipped(&e.name) {
            continue;
        }
        let d = e.open();
        let rt = tests::discover(&d).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let at = rt
            .descriptor()
            .and_then(|x| x.global_number("MethodDescSizeTable"))
            .unwrap_or_else(|| panic!("{}: no MethodDescSizeTable global", e.name));
        let mut table = [0u8; 64];
        let from_dump = dumpreader::Memory::read_exact(rt.memory(), at, &mut table).is_ok();
        if !from_dump && tests::clean_room() {
            // The truth (the runtime's .rodata) is only in its file: compared with files.
            eprintln!("{}: the size table is not in the dump (clean room)", e.name);
            continue;
        }
        if !from_dump {
            let module = d
                .modules()
                .iter()
                .find(|m| m.base == rt.info.base)
                .unwrap_or_else(|| panic!("{}: no runtime module", e.name));
            let img = d
                .module_image(module)
                .unwrap_or_else(|err| panic!("{}: runtime image: {err}", e.name));
            // The image file, else (a single-file app's host, on no machine but the one that
            // made the dump) the NuGet pack's file of the same build id.
            let path = match &img.source {
                dumpreader::ImageSource::File(path) => Some(path.clone()),
                _ => tests::pack_file_of(module),
            };
            let (Some(path), dumpreader::ImageFormat::Elf(elf)) = (path, &img.format) else {
                // A Windows minidump: coreclr.dll's pages are in the dump.
                panic!(
                    "{}: the size table is neither in the dump nor in a file",
                    e.name
                );
            };
            let path = &path;
            let overlay =
                clrdata::discovery::descriptor::ElfFileOverlay::new(&d, path, elf.load_bias)
                    .unwrap_or_else(|| panic!("{}: {} unreadable", e.name, path.display()));
            dumpreader::Memory::read_exact(&overlay, at, &mut table).unwrap_or_else(|_| {
                panic!(
                    "{}: the size table at {at:#x} is not in {}",
                    e.name,
                    path.display()
                )
            });
        }
        let ml = &rt.layout.methods;
        for (flags, &want) in table.iter().enumerate() {
            let f = flags as u64;
            let mut size = ml.method_desc_sizes[(f & 7) as usize];
            if f & 8 != 0 {
                size += ml.non_vtable_slot_size;
            }
            if f & 0x10 != 0 {
                size += ml.method_impl_size;
            }
            if f & 0x20 != 0 {
                size += ml.native_code_slot_size;
            }
            assert_eq!(
                size,
                want as u64,
                "{}: MethodDesc flags {flags:#x}: ours {size}, the runtime's table {want} \
                 (read from the {})",
                e.name,
                if from_dump { "dump" } else { "image file" }
            );
            compared += 1;
        }
        dumps += 1;
    }
    eprintln!("method_names: {compared} size-table entries on {dumps} .NET 10 dumps");
    // In the clean room only the dumps holding the table's page (a Windows minidump) compare.
    let least = if tests::clean_room() { 1 } else { 3 };
    assert!(dumps >= least, "only {dumps} .NET 10 dumps compared");
}

/// `Module::m_pAvailableParamTypes` (the 10 descriptor's `Module.AvailableTypeParams`, .NET 9
/// Linux's supplement, .NET 8's 0x3c8 on Linux and 0x248 on Windows): on every dump claiming
/// Methods whose family knows it, the union of the constructed types the heap types' modules
/// list holds every generic instantiation of the DAC's heap census; where it is not known
/// (.NET 9 on Windows) the listing refuses by name.
#[test]
fn modules_list_the_constructed_types_on_the_heap() {
    let mut checked = 0;
    let mut types = 0;
    for e in tests::readable_for(Capability::Methods) {
        if skipped(&e.name) {
            continue;
        }
        let d = e.open();
        let rt = tests::discover(&d).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let names = TypeNames::new();
        let r = ObjectReader::new(&rt, &names);
        let heap: Vec<u64> = e.dac["heap_stat"]["types"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| hex(&t["mt"]))
            .collect();
        // An instantiation lives in its loader module's table: the runtime picks it among the
        // generic definition's module and its type arguments' modules (ComputeLoaderModule), so
        // every such module of every heap type is searched.
        let mut modules: Vec<u64> = heap
            .iter()
            .filter_map(|&mt| rt.method_table(mt).ok())
            .flat_map(|i| {
                let args: Vec<Option<u64>> = i
                    .type_args
                    .iter()
                    .map(|&ta| rt.method_table(ta).ok().and_then(|a| a.module))
                    .collect();
                std::iter::once(i.module).chain(args)
            })
            .flatten()
            .collect();
        modules.sort_unstable();
        modules.dedup();
        if rt.layout.methods.module_available_type_params.is_none() {
            let err = clrdata::model::methods::available_param_types(&r, modules[0]).unwrap_err();
            assert!(
                err.to_string().contains("m_pAvailableParamTypes"),
                "{}: {err}",
                e.name
            );
            continue;
        }
        let mut listed = std::collections::BTreeSet::new();
        for &m in &modules {
            let ths = clrdata::model::methods::available_param_types(&r, m)
                .unwrap_or_else(|err| panic!("{} module {m:#x}: {err}", e.name));
            listed.extend(ths);
        }
        for &mt in &heap {
            let Ok(info) = rt.method_table(mt) else {
                continue;
            };
            // Generic instantiations (some arrays of primitives, e.g. Byte[] on 8.0.4, are
            // not in these tables).
            if info.array.is_some() || info.type_args.is_empty() {
                continue;
            }
            assert!(
                listed.contains(&mt),
                "{}: {} ({mt:#x}) is in no module's constructed types",
                e.name,
                names.name_or_note(&rt, mt)
            );
            types += 1;
        }
        checked += 1;
    }
    eprintln!("method_names: {types} constructed types found on {checked} dumps");
    assert!(
        checked >= 10 && types > 100,
        "{checked} dumps, {types} types"
    );
}
