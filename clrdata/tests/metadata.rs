//! clrdata::metadata against real assemblies read out of the corpus dumps' memory, compared
//! with truth files written by Mono's monodis (tests/data/make-metadata-truth.sh) and with the
//! method names the runtime's own DAC printed (dumps/*.dac.json).

use clrdata::metadata::*;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

fn truth_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/metadata")
}

/// Every readable copy of module `name`'s metadata in corpus dump `dump` (an assembly can be
/// mapped twice: the loaded image and a flat file mapping).
fn metadata_in_dump(dump: &dumpreader::Dump, name: &str) -> Vec<MetadataBytes> {
    dump.modules()
        .iter()
        .filter(|m| m.name().eq_ignore_ascii_case(name))
        .filter_map(|m| read_metadata(dump, m.base, Some(m.size())).ok())
        .collect()
}

fn open(name: &str) -> dumpreader::Dump {
    dumpreader::Dump::open(&tests::entry(name).dump_path()).expect("corpus dump opens")
}

fn guid_text(g: [u8; 16]) -> String {
    format!(
        "{:08X}-{:04X}-{:04X}-{:02X}{:02X}-{}",
        u32::from_le_bytes([g[0], g[1], g[2], g[3]]),
        u16::from_le_bytes([g[4], g[5]]),
        u16::from_le_bytes([g[6], g[7]]),
        g[8],
        g[9],
        g[10..]
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect::<String>()
    )
}

/// What our reader says, in the truth file's line format, for every line of the truth file.
fn check_against_truth(md: &Metadata, truth_file: &str) {
    let text = std::fs::read_to_string(truth_dir().join(truth_file)).expect("truth file");
    let names: BTreeMap<&str, TableId> = TableId::ALL.iter().map(|t| (t.name(), *t)).collect();
    let mut checked = 0;
    let mut mismatches = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let mut it = line.splitn(3, ' ');
        let kind = it.next().unwrap();
        let a = it.next().unwrap_or("");
        let rest = it.next().unwrap_or("");
        let rid: u32 = a.parse().unwrap_or(0);
        let ours = match kind {
            "count" => {
                let t = names[a];
                format!("count {a} {}", md.row_count(t))
            }
            "mvid" => format!("mvid {}", guid_text(md.mvid().unwrap().unwrap())),
            "assembly" => format!("assembly {}", md.assembly(1).unwrap().name),
            "assemblyref" => format!("assemblyref {rid} {}", md.assembly_ref(rid).unwrap().name),
            "typedef" => {
                let r = md.type_def(rid).unwrap();
                format!(
                    "typedef {rid} {} flist={} mlist={} flags={:#x}",
                    md.type_name(rid).unwrap(),
                    r.field_list,
                    r.method_list,
                    r.flags
                )
            }
            "field" => format!("field {rid} {}", md.field(rid).unwrap().name),
            "method" => format!("method {rid} {}", md.method_def(rid).unwrap().name),
            "typeref" => format!("typeref {rid} {}", md.type_ref_name(rid).unwrap()),
            "memberref" => format!("memberref {rid} {}", md.member_ref(rid).unwrap().name),
            other => panic!("unknown truth line kind {other}"),
        };
        let _ = rest;
        if ours != line {
            mismatches.push(format!("truth: {line}\n ours: {ours}"));
        }
        checked += 1;
    }
    assert!(checked > 20, "{truth_file}: only {checked} truth lines");
    assert!(
        mismatches.is_empty(),
        "{truth_file}: {} of {checked} lines differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

fn check_module(dump_name: &str, module: &str, truth_file: &str) {
    let dump = open(dump_name);
    let copies = metadata_in_dump(&dump, module);
    assert!(
        !copies.is_empty(),
        "{dump_name}: no readable metadata for {module}"
    );
    for c in &copies {
        let md = Metadata::parse(&c.bytes).unwrap();
        check_against_truth(&md, truth_file);
    }
}

#[test]
fn hang_dll_matches_monodis() {
    check_module("hang", "hang.dll", "hang.txt");
}

#[test]
fn heap_dll_matches_monodis() {
    check_module("heap", "heap.dll", "heap.txt");
}

#[test]
fn crash_dll_matches_monodis() {
    check_module("crash", "crash.dll", "crash.txt");
}

#[test]
fn corelib_matches_monodis() {
    for dump in ["hang", "heap"] {
        check_module(
            dump,
            "System.Private.CoreLib.dll",
            "System.Private.CoreLib.txt",
        );
    }
}

#[test]
fn system_runtime_matches_monodis() {
    check_module("hang", "System.Runtime.dll", "System.Runtime.txt");
}

/// The layouts seen in the corpus: hang.dll only as a flat file mapping, heap.dll loaded
/// (mapped), CoreLib loaded on Linux (its flat mapping is not in the dump), every image mapped
/// on Windows.
#[test]
fn layouts_found_in_the_corpus() {
    let dump = open("hang");
    let l: Vec<_> = metadata_in_dump(&dump, "hang.dll")
        .iter()
        .map(|m| m.layout)
        .collect();
    assert_eq!(l, [PeLayout::Flat]);
    let l: Vec<_> = metadata_in_dump(&dump, "System.Private.CoreLib.dll")
        .iter()
        .map(|m| m.layout)
        .collect();
    assert_eq!(l, [PeLayout::Mapped]);
    let dump = open("heap");
    let l: Vec<_> = metadata_in_dump(&dump, "heap.dll")
        .iter()
        .map(|m| m.layout)
        .collect();
    assert_eq!(l, [PeLayout::Mapped]);
    let dump = open("windows-hang");
    for m in [
        "hang.dll",
        "System.Private.CoreLib.dll",
        "System.Runtime.dll",
    ] {
        let l: Vec<_> = metadata_in_dump(&dump, m)
            .iter()
            .map(|m| m.layout)
            .collect();
        assert_eq!(l, [PeLayout::Mapped], "windows-hang {m}");
    }
}

/// The .NET Core 3.1 dump does not hold CoreLib's metadata pages (they read as zeros): the
/// reader says so precisely instead of returning garbage.
#[test]
fn missing_metadata_is_a_precise_error() {
    let dump = open("netcore31");
    let m = dump
        .module_by_name("System.Private.CoreLib.dll")
        .expect("module");
    let err = read_metadata(&dump, m.base, Some(m.size())).unwrap_err();
    assert!(
        matches!(err, Error::BadSignature { found: 0, .. }),
        "unexpected error {err}"
    );
}

/// Every managed method name the DAC printed on a stack (`stacks[].frames[].method`) is what
/// our DAC-style formatter makes of some MethodDef of the dump's modules.
#[test]
fn method_names_match_the_dac() {
    // Dumps whose assemblies' pages are not in the dump (gcore, single-file) have no metadata
    // to name methods from.
    for entry in tests::all().into_iter().filter(|e| e.images_in_dump()) {
        let dump = dumpreader::Dump::open(&entry.dump_path()).unwrap();
        let mut ours = HashSet::new();
        let mut corelib = false;
        let mut app_readable = true;
        for m in dump.modules() {
            if m.kind != dumpreader::ModuleKind::Pe || !m.name().ends_with(".dll") {
                continue;
            }
            let Ok(bytes) = read_metadata(&dump, m.base, Some(m.size())) else {
                // netcore31: createdump (3.1) left these pages out of the dump.
                app_readable &=
                    m.name().starts_with("System.") || m.name().starts_with("Microsoft.");
                continue;
            };
            let md = Metadata::parse(&bytes.bytes).unwrap();
            corelib |= m.name() == "System.Private.CoreLib.dll";
            for rid in 1..=md.row_count(TableId::MethodDef) {
                ours.insert(md.method_display_name(rid).unwrap());
            }
        }
        let mut dac = HashSet::new();
        for s in entry.dac["stacks"].as_array().into_iter().flatten() {
            for f in s["frames"].as_array().into_iter().flatten() {
                if let Some(name) = f["method"].as_str() {
                    dac.insert(name.to_string());
                }
            }
        }
        let mut checked = 0;
        for name in &dac {
            if (!corelib && name.starts_with("System."))
                || (!app_readable && !name.starts_with("System."))
            {
                continue; // 3.1: that module's metadata is not in the dump
            }
            // A dynamic method (an LCG method, an IL stub) has no MethodDef: the runtime names
            // it from its MethodDesc (tests/tests/method_names.rs checks those names).
            if name.starts_with("DynamicClass.") || name.starts_with("ILStubClass.") {
                continue;
            }
            // A generic method's instantiation (`BlockingWait[[Names.Slot, names]](Names.Slot)`)
            // has the instantiation's parameter types, not the definition's; a method of a
            // Reflection.Emit module (the manifest's `emitted`) has no image among the dump's
            // modules: tests/tests/method_names.rs checks both from their MethodDescs.
            let head = name.split('(').next().unwrap_or(name);
            let emitted = entry.manifest["emitted"]["method"]
                .as_str()
                .is_some_and(|m| name.starts_with(&format!("{m}(")));
            if head.ends_with("]]") || emitted {
                continue;
            }
            // A method of a generic instantiation (`Task`1[[System.Int32, ...]].GetResultCore`)
            // is its definition's name with the type's arguments: the metadata formatter names
            // the definition.
            let def = strip_instantiation(name);
            assert!(
                ours.contains(&def),
                "{}: DAC method {name} not produced by our formatter (as {def})",
                entry.name
            );
            checked += 1;
        }
        if corelib || app_readable {
            assert!(
                checked > 0 || dac.is_empty(),
                "{}: nothing checked",
                entry.name
            );
        }
    }
}

/// The metadata read from dump memory is byte-equal to the assembly file's (when the build
/// folder is present: it is gitignored, so CI skips this).
#[test]
fn dump_metadata_equals_file_metadata() {
    let build = tests::dumps_dir().join("build");
    let fx = build.join("runtimes/net8/dnv/net/runtime/.net/shared/Microsoft.NETCore.App/8.0.4");
    let cases = [
        ("hang", "hang.dll", build.join("hang/hang.dll")),
        ("heap", "heap.dll", build.join("heap/heap.dll")),
        ("crash", "crash.dll", build.join("crash/crash.dll")),
        (
            "hang",
            "System.Private.CoreLib.dll",
            fx.join("System.Private.CoreLib.dll"),
        ),
        ("heap", "System.Runtime.dll", fx.join("System.Runtime.dll")),
    ];
    for (dump, module, file) in cases {
        let Ok(bytes) = std::fs::read(&file) else {
            eprintln!("skipping {}: not built", file.display());
            continue;
        };
        let r = locate_in_pe(&bytes, PeLayout::Flat).unwrap();
        let (layout, r2) = locate_in_pe_any(&bytes).unwrap();
        if layout == PeLayout::Flat {
            assert_eq!(r, r2);
        }
        let d = open(dump);
        let copies = metadata_in_dump(&d, module);
        assert!(!copies.is_empty());
        for c in copies {
            assert!(
                c.bytes == bytes[r.clone()],
                "{dump} {module}: metadata differs from {}",
                file.display()
            );
        }
    }
}

/// Cross-checks inside one module: member lists partition the Field/MethodDef tables, owners
/// invert the lists, every signature decodes, nested types name their enclosing type.
#[test]
fn corelib_is_self_consistent() {
    let dump = open("hang");
    let c = metadata_in_dump(&dump, "System.Private.CoreLib.dll").remove(0);
    let md = Metadata::parse(&c.bytes).unwrap();
    let mut fields = 0;
    let mut methods = 0;
    for t in 1..=md.row_count(TableId::TypeDef) {
        for f in md.type_def_fields(t).unwrap() {
            assert_eq!(md.field_owner(f).unwrap(), Some(t));
            md.field_sig(f).unwrap();
            fields += 1;
        }
        for m in md.type_def_methods(t).unwrap() {
            assert_eq!(md.method_owner(m).unwrap(), Some(t));
            md.method_sig(m).unwrap();
            methods += 1;
        }
        let row = md.type_def(t).unwrap();
        assert_eq!(
            row.is_nested(),
            md.enclosing_class(t).unwrap().is_some(),
            "TypeDef {t}"
        );
    }
    assert_eq!(fields, md.row_count(TableId::Field));
    assert_eq!(methods, md.row_count(TableId::MethodDef));
    for r in 1..=md.row_count(TableId::TypeSpec) {
        md.type_spec_sig(r).unwrap();
    }
    for r in 1..=md.row_count(TableId::MethodSpec) {
        md.method_spec_sig(r).unwrap();
    }
    for r in 1..=md.row_count(TableId::Property) {
        md.property_sig(r).unwrap();
    }
    for r in 1..=md.row_count(TableId::StandAloneSig) {
        let s = md.stand_alone_sig(r).unwrap().signature;
        if s.first() == Some(&7) {
            sig::decode_local_sig(s).unwrap();
        } else {
            sig::decode_method_sig(s).unwrap();
        }
    }
    // Every table's typed accessor reads every row.
    for r in 1..=md.row_count(TableId::CustomAttribute) {
        md.custom_attribute(r).unwrap();
    }
    for r in 1..=md.row_count(TableId::GenericParam) {
        let g = md.generic_param(r).unwrap();
        assert!(md.generic_params(g.owner).unwrap().contains(&r));
    }
    for r in 1..=md.row_count(TableId::InterfaceImpl) {
        md.interface_impl(r).unwrap();
    }
    for r in 1..=md.row_count(TableId::MethodSemantics) {
        md.method_semantics(r).unwrap();
    }
    // Known names and signatures.
    let find = |full: &str| {
        (1..=md.row_count(TableId::TypeDef)).find(|&t| md.type_name(t).unwrap() == full)
    };
    let dict = find("System.Collections.Generic.Dictionary`2").expect("Dictionary`2");
    let entry = find("System.Collections.Generic.Dictionary`2+Entry").expect("Entry");
    assert_eq!(md.enclosing_class(entry).unwrap(), Some(dict));
    let gps: Vec<_> = md
        .generic_params(Token::new(TableId::TypeDef, dict))
        .unwrap()
        .map(|r| md.generic_param(r).unwrap().name)
        .collect();
    assert_eq!(gps, ["TKey", "TValue"]);
    let names = MetadataNames::new(&md);
    let entries = md
        .type_def_fields(dict)
        .unwrap()
        .into_iter()
        .find(|&f| md.field(f).unwrap().name == "_entries")
        .unwrap();
    let ty = md.field_sig(entries).unwrap();
    assert_eq!(
        type_to_string(&ty, SigStyle::TypeName, &names),
        "System.Collections.Generic.Dictionary`2+Entry[!0,!1][]"
    );
    assert_eq!(type_to_string(&ty, SigStyle::Dac, &names), "Entry<!0,!1>[]");
    let names_tk =
        MetadataNames::new(&md).with_generic_args(vec!["TKey".into(), "TValue".into()], vec![]);
    assert_eq!(
        type_to_string(&ty, SigStyle::Dac, &names_tk),
        "Entry<TKey,TValue>[]"
    );
    assert_eq!(md.user_string(1).unwrap(), "value");
    assert_eq!(md.assembly(1).unwrap().name, "System.Private.CoreLib");
}

#[test]
fn typeref_scopes_in_hang() {
    let dump = open("hang");
    let c = metadata_in_dump(&dump, "hang.dll").remove(0);
    let md = Metadata::parse(&c.bytes).unwrap();
    for r in 1..=md.row_count(TableId::TypeRef) {
        let a = md
            .type_ref_assembly(r)
            .unwrap()
            .expect("every hang.dll TypeRef is in an assembly");
        let name = md.assembly_ref(a).unwrap().name;
        assert!(name == "mscorlib" || name == "System", "{name}");
    }
    let names = MetadataNames::new(&md);
    let specs: Vec<String> = (1..=md.row_count(TableId::TypeSpec))
        .map(|r| type_to_string(&md.type_spec_sig(r).unwrap(), SigStyle::TypeName, &names))
        .collect();
    // monodis: "class [mscorlib]System.Collections.Generic.List`1<class Hang.ThreadRecord>".
    assert!(
        specs.contains(&"System.Collections.Generic.List`1[[Hang.ThreadRecord, hang]]".to_string()),
        "{specs:?}"
    );
    assert!(specs.contains(
        &"System.Collections.Generic.List`1[[System.String, System.Private.CoreLib]]".to_string()
    ));
}

/// TypeName style against the DAC's heap census names: heap.dll's TypeSpecs that are closed
/// instantiations print exactly as the DAC names those types on the heap.
#[test]
fn type_spec_names_match_dac_heap_names() {
    let entry = tests::entry("heap");
    let dump = open("heap");
    let c = metadata_in_dump(&dump, "heap.dll").remove(0);
    let md = Metadata::parse(&c.bytes).unwrap();
    let names = MetadataNames::new(&md);
    let dac: HashSet<&str> = entry.dac["heap_stat"]["types"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["type"].as_str())
        .collect();
    let ours: Vec<String> = (1..=md.row_count(TableId::TypeSpec))
        .map(|r| type_to_string(&md.type_spec_sig(r).unwrap(), SigStyle::TypeName, &names))
        .collect();
    let matched: Vec<&String> = ours.iter().filter(|n| dac.contains(n.as_str())).collect();
    eprintln!("matched: {matched:?}");
    assert!(matched.len() >= 10, "ours: {ours:?}");
}

/// `A`1[[X, asm]].M(args)` → `A`1.M(args)`: drops the bracketed type arguments that follow a
/// generic arity before the method name.
fn strip_instantiation(name: &str) -> String {
    let (head, args) = match name.find('(') {
        Some(i) => name.split_at(i),
        None => (name, ""),
    };
    let mut out = String::new();
    let mut depth = 0usize;
    for ch in head.chars() {
        match ch {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(ch),
            _ => {}
        }
    }
    out + args
}
