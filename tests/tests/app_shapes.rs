//! App shapes and dump kinds (issue 16), over the corpus dumps chosen by their manifests'
//! `app.shape` and `dump.kind`: single-file hosts listed once with their ELF image's extent and
//! build id, their bundled assemblies by name, and `info` naming the shape and the kind.
//!
//! Truth comes from the files and the dump: the host executable (when the corpus build left it
//! at the path the dump records) read by `readelf`, the runtime pack's own list of assemblies,
//! and the manifest. A dump shape with no corpus dump yet is said so loudly, not passed quietly.

use commands::Session;
use dumpreader::{DumpProducer, ModuleIdentity, ModuleKind, OpenOptions, Target};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

fn single_file() -> Vec<tests::Entry> {
    let v: Vec<_> = tests::all()
        .into_iter()
        .filter(|e| e.shape().starts_with("single-file"))
        .collect();
    if v.is_empty() {
        eprintln!("!!! no corpus dump has app.shape single-file*: nothing checked");
    }
    v
}

/// The host file at the path the dump records, when this machine has it (the corpus build's
/// output), with its build id by `readelf -n`.
fn host_file(path: &str) -> Option<(PathBuf, Vec<u8>)> {
    let p = PathBuf::from(path);
    if !p.is_file() {
        eprintln!("  (host file {path} not on this machine: file checks skipped)");
        return None;
    }
    let out = Command::new("readelf").arg("-n").arg(&p).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let id = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))?
        .trim()
        .to_string();
    let bytes = (0..id.len() / 2)
        .map(|i| u8::from_str_radix(&id[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    Some((p, bytes))
}

/// The extent of an ELF file's PT_LOADs from `readelf -lW`: (lowest page, highest end rounded
/// up to a page), as link-time addresses.
fn readelf_extent(p: &Path) -> (u64, u64) {
    let out = Command::new("readelf").arg("-lW").arg(p).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.first() == Some(&"LOAD") {
            let h = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
            let (vaddr, memsz) = (h(f[2]), h(f[5]));
            lo = lo.min(vaddr & !0xfff);
            hi = hi.max((vaddr + memsz).next_multiple_of(0x1000));
        }
    }
    (lo, hi)
}

/// The assemblies a single-file app bundles: the runtime pack's managed files and the app's.
fn pack_assemblies(e: &tests::Entry) -> Option<BTreeSet<String>> {
    let pack = e.manifest["app"]["runtime_pack"].as_str()?;
    let ver = pack.rsplit(' ').next()?;
    let home = std::env::var_os("NUGET_PACKAGES")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".nuget/packages")))?;
    let lib = home
        .join("microsoft.netcore.app.runtime.linux-x64")
        .join(ver)
        .join("runtimes/linux-x64/lib");
    let tfm_dir = std::fs::read_dir(&lib).ok()?.flatten().next()?.path();
    let mut names: BTreeSet<String> = std::fs::read_dir(&tfm_dir)
        .ok()?
        .flatten()
        .filter_map(|f| f.file_name().into_string().ok())
        .filter(|n| n.ends_with(".dll"))
        .collect();
    // CoreLib lives in the pack's native folder.
    names.insert("System.Private.CoreLib.dll".into());
    names.insert(format!("{}.dll", e.program()));
    Some(names)
}

#[test]
fn single_file_hosts_are_listed_once_with_their_image_extent_and_build_id() {
    for e in single_file() {
        eprintln!("{}", e.name);
        let d = e.open();
        let bundles = d.bundles();
        if e.kind() == "gcore" {
            assert_eq!(
                bundles.len(),
                1,
                "{}: the bundle marker is in the host's data",
                e.name
            );
        }
        let Some(hb) = bundles.first() else {
            eprintln!("  !!! {}: no bundle marker in the dump's memory", e.name);
            continue;
        };
        let hosts: Vec<_> = d
            .modules()
            .iter()
            .filter(|m| m.path == hb.host_path && m.kind == ModuleKind::Elf)
            .collect();
        assert_eq!(hosts.len(), 1, "{}: the host is one module", e.name);
        let h = hosts[0];
        assert_eq!(h.base, hb.host_base);
        // No module of the host's file spans the others (the bug: base to past the GC heap).
        for m in d.modules().iter().filter(|m| m.path == hb.host_path) {
            assert!(m.size() < 256 << 20, "{}: {m:x?} spans too much", e.name);
        }
        let Some(Some(ModuleIdentity::BuildId(id))) = Some(h.identity.clone()) else {
            panic!("{}: the host has no build id", e.name);
        };
        if let Some((file, want)) = host_file(&h.path) {
            assert_eq!(id, want, "{}: build id equals readelf -n's", e.name);
            let (lo, hi) = readelf_extent(&file);
            assert_eq!(h.size(), hi - lo, "{}: extent equals the PT_LOADs'", e.name);
        }
    }
}

#[test]
fn every_elf_module_with_a_build_id_note_in_the_dump_has_it() {
    // The main executable of a single-file app had none (its base was the lowest mapping of
    // its file, not its ELF header): every ELF module now reads its note where the dump holds
    // it. Checked on each dump against the files that exist here.
    for e in single_file() {
        let d = e.open();
        for m in d.modules().iter().filter(|m| m.kind == ModuleKind::Elf) {
            if let Some((_, want)) = Path::new(&m.path)
                .is_file()
                .then(|| host_file(&m.path))
                .flatten()
            {
                assert_eq!(
                    m.identity,
                    Some(ModuleIdentity::BuildId(want)),
                    "{}: {}",
                    e.name,
                    m.path
                );
            }
        }
        let main = d
            .modules()
            .iter()
            .find(|m| {
                d.info()
                    .auxv
                    .iter()
                    .any(|&(t, v)| t == 9 && m.contains(v) && m.kind == ModuleKind::Elf)
            })
            .unwrap_or_else(|| panic!("{}: the main executable (AT_ENTRY) is a module", e.name));
        assert!(
            main.identity.is_some(),
            "{}: main executable's build id",
            e.name
        );
    }
}

#[test]
fn bundled_assemblies_are_named_from_the_manifest() {
    for e in single_file() {
        let d0 = e.open();
        let Some(hb) = d0.bundles().first() else {
            continue;
        };
        // The manifest lies past the bundled files: no process maps it. It is read from the host
        // file, matched by build id; here the corpus build's own output, when present.
        let Some(dir) = Path::new(&hb.host_path).parent().filter(|d| d.is_dir()) else {
            eprintln!(
                "  !!! {}: host file not here; bundle names unchecked",
                e.name
            );
            continue;
        };
        let opts = OpenOptions {
            image_search_path: vec![dir.to_path_buf()],
            ..tests::open_options()
        };
        let d = dumpreader::Dump::open_with(&e.dump_path(), &opts).unwrap();
        let hb = &d.bundles()[0];
        let man = match &hb.manifest {
            Ok(m) => m,
            // The build left another app's bundle there (same host program, same build id).
            Err(w @ dumpreader::Error::NoManifest { refusals, .. })
                if refusals
                    .iter()
                    .any(|r| matches!(r, dumpreader::Refusal::OtherBundle { .. })) =>
            {
                eprintln!("  !!! {}: {w}; bundle names unchecked", e.name);
                continue;
            }
            Err(w) => panic!("{}: {w}", e.name),
        };
        let assemblies: BTreeSet<String> = man
            .entries
            .iter()
            .filter(|x| x.file_type == dumpreader::BundleFileType::Assembly)
            .map(|x| x.relative_path.clone())
            .collect();
        if let Some(want) = pack_assemblies(&e) {
            assert_eq!(
                assemblies, want,
                "{}: the bundle holds the pack's files",
                e.name
            );
        } else {
            eprintln!("  !!! {}: runtime pack not here; names unchecked", e.name);
        }
        let compressed = man.entries.iter().filter(|x| x.is_compressed()).count();
        if e.shape() == "single-file-self-extract" {
            // extracted to a folder: the runtime maps the assemblies from there, none from the
            // host
            assert_eq!(
                hb.bundle_mappings, 0,
                "{}: nothing mapped from the host",
                e.name
            );
        } else if e.shape() == "single-file-compressed" {
            assert!(compressed > 0, "{}", e.name);
            assert_eq!(
                hb.bundle_mappings, 0,
                "{}: nothing mapped from the host",
                e.name
            );
        } else {
            assert_eq!(compressed, 0, "{}", e.name);
            assert!(
                man.entry("System.Private.CoreLib.dll").is_some()
                    && hb.placements.iter().any(|p| man.entries[p.entry].relative_path
                        == "System.Private.CoreLib.dll"),
                "{}: CoreLib is mapped out of the bundle",
                e.name
            );
        }
        // Each mapped bundled module: named by its entry, its mappings inside the entry's bytes
        // (each starts at a page of the entry), its base where the entry's first byte lands.
        for p in &hb.placements {
            let entry = &man.entries[p.entry];
            let m = d.modules().iter().find(|m| m.base == p.base).unwrap();
            assert_eq!(m.name(), entry.relative_path.rsplit('/').next().unwrap());
            let first = &m.mappings[0];
            if first.file_offset <= entry.offset && entry.offset < first.file_offset + 0x1000 {
                // Mapped from the entry's first page: the base is where its first byte lands.
                assert_eq!(
                    p.base,
                    first.start + (entry.offset - first.file_offset),
                    "{}: {}",
                    e.name,
                    m.path
                );
            } else {
                // Only later pages mapped (headers copied elsewhere): the first mapping's start.
                assert_eq!(p.base, first.start, "{}: {}", e.name, m.path);
            }
            for x in &m.mappings {
                assert!(
                    x.file_offset + 0x1000 > entry.offset
                        && x.file_offset < entry.offset + entry.size,
                    "{}: {} mapping {x:x?}",
                    e.name,
                    m.path
                );
            }
        }
    }
}

fn info(e: &tests::Entry) -> serde_json::Value {
    let d: Arc<dyn Target> = Arc::new(e.open());
    let s = Session::new(d, e.dump_path());
    let (out, _) = commands::execute(&s, "info").unwrap().unwrap();
    out.data
}

#[test]
fn info_names_the_app_shape_and_the_dump_kind() {
    let mut seen = BTreeSet::new();
    for e in tests::all() {
        let shape = e.shape().to_string();
        let kind = e.kind().to_string();
        let i = info(&e);
        let got_shape = i["app_shape"]["shape"].as_str().unwrap_or("?").to_string();
        let producer = i["dump_kind"]["producer"]
            .as_str()
            .unwrap_or("?")
            .to_string();
        eprintln!(
            "{:32} {shape:24} {kind:14} -> {got_shape:24} {producer:10} {}",
            e.name, i["dump_kind"]["description"]
        );
        seen.insert((shape.clone(), kind.clone()));
        // Compressed bundles read without the host file: told by no bundled file being mapped.
        // ReadyToRun apps are framework-dependent in how the runtime is hosted; trimming
        // needs a self-contained publish.
        let want_shape = match shape.as_str() {
            "single-file"
            | "single-file-compressed"
            | "single-file-self-extract"
            | "self-contained" => shape.as_str(),
            "trimmed" => "self-contained",
            _ => "framework-dependent",
        };
        assert_eq!(
            got_shape, want_shape,
            "{}: {}",
            e.name, i["app_shape"]["description"]
        );
        let want_producer = match kind.as_str() {
            "gcore" => "gcore",
            k if k.starts_with("minidump") => "minidump",
            _ if e.os() == "windows" => "minidump",
            _ => "createdump",
        };
        assert_eq!(producer, want_producer, "{}", e.name);
        if shape.starts_with("single-file") && e.family() >= 5 {
            let v = e.runtime_version();
            let desc = i["app_shape"]["description"].as_str().unwrap();
            if i["app_shape"]["runtime_version"].is_string() {
                assert!(
                    desc.contains(&format!(".NET {v} inside")),
                    "{}: {desc}",
                    e.name
                );
            }
        }
    }
    for want in [
        ("single-file", "gcore"),
        ("single-file-compressed", "gcore"),
        ("single-file", "withheap"),
        ("self-contained", "withheap"),
        ("framework-dependent", "withheap"),
    ] {
        if !seen.contains(&(want.0.to_string(), want.1.to_string())) {
            eprintln!("!!! no corpus dump of shape {} and kind {}", want.0, want.1);
        }
    }
}

#[test]
fn gcore_dumps_are_recognised_and_open_fast() {
    let gcores: Vec<_> = tests::all()
        .into_iter()
        .filter(|e| e.kind() == "gcore")
        .collect();
    if gcores.is_empty() {
        eprintln!("!!! no corpus dump has dump.kind gcore: nothing checked");
    }
    for e in gcores {
        let path = e.dump_path();
        let t = std::time::Instant::now();
        let d = dumpreader::Dump::open_with(&path, &tests::open_options()).unwrap();
        let n = d.modules().len();
        let k = d.dump_kind();
        eprintln!(
            "{}: opened, {n} modules, kind in {:?}: {:?}",
            e.name,
            t.elapsed(),
            k.evidence
        );
        assert_eq!(k.producer, DumpProducer::Gcore, "{}", e.name);
        assert!(!k.full_memory, "{}: gcore leaves file pages out", e.name);
    }
}
