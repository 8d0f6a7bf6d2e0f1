//! gcore cores read with the image files on disk (issue 16).
//!
//! gdb's gcore leaves out the never-written pages of file mappings: the assemblies' headers,
//! metadata and ReadyToRun code, the runtime's text. dumpreader reads them from the mapped
//! files once each file's identity is anchored (build id; for a PE file whose headers the
//! dump lacks, clrdata's comparison with the runtime's records). These tests hold the result
//! to the DAC's truths (made with the files on disk) on every gcore dump whose files this
//! machine has: the framework's from its NuGet runtime pack. The app's own hang.dll / single-
//! file host is not in the corpus (the build outputs left on the corpus machine were rebuilt
//! after the dumps were made, and this module's tests show they are refused): frames and
//! types of the app must then be left unnamed, never named wrongly, and the tests say so.
//! ilonly-net8-gcore's app and libraries are (`dumps/images/ilonly-net8-gcore/`): there every
//! frame and type is named.

use clrdata::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;
use tests::Entry;

fn hex(v: &Value) -> Option<u64> {
    v.as_str()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
}

/// Whether a DAC name needs the app's own metadata.
fn of_app(name: &str) -> bool {
    name.contains("Hang.")
}

/// The gcore dumps of a framework-dependent app whose framework files this machine has.
fn gcore_fd() -> Vec<Entry> {
    let mut out = Vec::new();
    for e in tests::all() {
        if e.kind() != "gcore" || e.shape() != "framework-dependent" {
            continue;
        }
        if !e.has_framework() {
            println!(
                "SKIPPED {}: the .NET {} runtime pack is not here",
                e.name,
                e.runtime_version()
            );
            continue;
        }
        out.push(e);
    }
    out
}

/// Where each file's missing bytes come from: the framework's assemblies (and the app's dll
/// kept in dumps/images/<name>/) are accepted by the runtime's records, the runtime by its
/// build id; nothing is read from an unchecked file.
#[test]
fn gcore_framework_files_are_checked_before_use() {
    let mut files = 0;
    for e in gcore_fd() {
        let d = e.open();
        let rt = clrdata::Runtime::discover(&d).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        drop(rt);
        for f in d.file_sources().iter().filter(|f| f.missing_bytes > 0) {
            let name = f.recorded.rsplit('/').next().unwrap_or(&f.recorded);
            let framework = e
                .framework_dirs()
                .iter()
                .any(|dir| dir.join(name).is_file());
            match &f.state {
                dumpreader::FileSourceState::Used { file, check } => {
                    assert!(
                        e.framework_dirs()
                            .iter()
                            .chain(e.image_dir().iter())
                            .any(|dir| file.starts_with(dir)),
                        "{}: {name} read from {} (recorded paths are off)",
                        e.name,
                        file.display()
                    );
                    if name.ends_with(".dll") {
                        assert!(
                            matches!(check.evidence, dumpreader::Evidence::Records { .. }),
                            "{name}: {check}"
                        );
                    } else {
                        assert!(
                            matches!(
                                &check.evidence,
                                dumpreader::Evidence::Identity {
                                    identity: dumpreader::ModuleIdentity::BuildId(_)
                                } | dumpreader::Evidence::IdentityAndBundle {
                                    identity: dumpreader::ModuleIdentity::BuildId(_),
                                    ..
                                }
                            ),
                            "{name}: {check}"
                        );
                    }
                    files += 1;
                }
                other => assert!(
                    !framework,
                    "{}: {name} is in the framework but not used: {other:?}",
                    e.name
                ),
            }
            println!("{}: {name}: {}", e.name, f.state.describe());
        }
        let core = d
            .file_source(
                &d.modules()
                    .iter()
                    .find(|m| m.name() == "System.Private.CoreLib.dll")
                    .unwrap()
                    .path,
            )
            .unwrap();
        assert!(
            matches!(core.state, dumpreader::FileSourceState::Used { .. }),
            "{}: CoreLib: {core:?}",
            e.name
        );
    }
    println!("{files} files accepted");
}

/// A file that differs from what the runtime loaded is refused, and the next candidate (the
/// right one) is used: an assembly one byte longer than its layout, a runtime library with
/// another build id.
#[test]
fn gcore_refuses_a_file_that_fails_its_check() {
    for e in gcore_fd() {
        let tmp = std::env::temp_dir().join(format!("gcore-refuse-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        let dirs = e.framework_dirs();
        let asm = "System.Runtime.dll";
        let mut bytes = std::fs::read(dirs[0].join(asm)).unwrap();
        bytes.push(0);
        std::fs::write(tmp.join(asm), &bytes).unwrap();
        // Another ELF file under the runtime library's name.
        std::fs::copy(
            dirs[1].join("libclrjit.so"),
            tmp.join("libSystem.Native.so"),
        )
        .unwrap();
        let mut opts = e.open_options();
        opts.image_search_path.insert(0, tmp.clone());
        let d = dumpreader::Dump::open_with(&e.dump_path(), &opts).unwrap();
        let _rt = clrdata::Runtime::discover(&d).unwrap();
        for name in [asm, "libSystem.Native.so"] {
            let m = d.modules().iter().find(|m| m.name() == name).unwrap();
            let f = d.file_source(&m.path).unwrap();
            println!("{}: {name}: {}", e.name, f.state.describe());
            match &f.state {
                dumpreader::FileSourceState::Used { file, .. } => {
                    assert!(!file.starts_with(&tmp), "{name}: the wrong file was used")
                }
                other => panic!("{name}: the right file was not used: {other:?}"),
            }
        }
        // Alone, the wrong files are refused and nothing is read.
        let opts = dumpreader::OpenOptions {
            image_search_path: vec![tmp.clone()],
            recorded_paths: false,
            ..Default::default()
        };
        let d = dumpreader::Dump::open_with(&e.dump_path(), &opts).unwrap();
        let native = d
            .modules()
            .iter()
            .find(|m| m.name() == "libSystem.Native.so")
            .unwrap();
        let f = d.file_source(&native.path).unwrap();
        assert!(
            matches!(
                &f.state,
                dumpreader::FileSourceState::NotUsed {
                    why: dumpreader::NoFile::Refused { .. }
                }
            ),
            "{f:?}"
        );
        std::fs::remove_dir_all(&tmp).ok();
    }
}

/// The stack walk against the DAC's, frame for frame (SP, IP, Frame, MethodDesc), and every
/// method name but the app's own; the app's methods, whose metadata is in no file here, stay
/// unnamed with a reason.
#[test]
fn gcore_stacks_equal_the_dac() {
    use clrdata::model::stack::StackWalker;
    let (mut frames, mut named, mut unnamed_app) = (0, 0, 0);
    let mut diffs = Vec::new();
    for e in gcore_fd() {
        let d = e.open();
        let rt = clrdata::Runtime::discover(&d).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let names = clrdata::TypeNames::new();
        let stacks = StackWalker::for_target(&rt, &names).walk_all().unwrap();
        let dac = e.dac["stacks"].as_array().cloned().unwrap_or_default();
        assert!(!dac.is_empty(), "{}: no DAC stacks", e.name);
        for ds in &dac {
            let os = ds["osThreadId"].as_u64().unwrap_or(0);
            let Some(ours) = stacks.iter().find(|s| s.os_id == os) else {
                diffs.push(format!("{}: thread {os} not walked", e.name));
                continue;
            };
            let df = ds["frames"].as_array().cloned().unwrap_or_default();
            if df.len() != ours.frames.len() {
                diffs.push(format!(
                    "{}: thread {os}: {} frames, the DAC's {} ({:?})",
                    e.name,
                    ours.frames.len(),
                    df.len(),
                    ours.incomplete
                ));
            }
            for (i, (w, o)) in df.iter().zip(&ours.frames).enumerate() {
                frames += 1;
                let want = (
                    hex(&w["sp"]),
                    hex(&w["ip"]),
                    hex(&w["frame"]),
                    w["frame_name"].as_str(),
                    hex(&w["methodDesc"]),
                );
                let got = (
                    Some(o.sp),
                    Some(o.ip),
                    o.frame,
                    o.frame_name.as_deref(),
                    o.method_desc,
                );
                if want != got {
                    diffs.push(format!(
                        "{}: thread {os} frame {i}: dac {want:x?} ours {got:x?}",
                        e.name
                    ));
                    continue;
                }
                match (w["method"].as_str(), o.method.as_deref()) {
                    (Some(dn), None) if of_app(dn) && o.method_error.is_some() => unnamed_app += 1,
                    (dn, on) if dn == on => named += usize::from(dn.is_some()),
                    (dn, on) => diffs.push(format!(
                        "{}: thread {os} frame {i}: dac {dn:?}, ours {on:?} ({:?})",
                        e.name, o.method_error
                    )),
                }
            }
        }
    }
    println!(
        "{frames} frames equal in SP/IP/Frame/MethodDesc, {named} named as the DAC names them, \
         {unnamed_app} of the app left unnamed (its hang.dll is not here)"
    );
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// `dumpheap -stat`: every MethodTable's count and size equal the DAC's census, and every
/// type name but the app's; the app's types say why they are not named.
#[test]
fn gcore_heap_census_names_equal_the_dac() {
    let (mut types, mut named, mut app) = (0, 0, 0);
    let mut diffs = Vec::new();
    for e in gcore_fd() {
        let d = e.open();
        let rt = clrdata::Runtime::discover(&d).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let heap = rt.gc_heap().unwrap();
        let census = heap.census(&rt);
        let names = clrdata::TypeNames::new();
        let ours: BTreeMap<u64, (u64, u64)> = census
            .types
            .iter()
            .map(|t| (t.mt, (t.count, t.total_size)))
            .collect();
        let dac = e.dac["heap_stat"]["types"].as_array().cloned().unwrap();
        assert_eq!(ours.len(), dac.len(), "{}: MethodTables", e.name);
        for t in &dac {
            types += 1;
            let mt = hex(&t["mt"]).unwrap();
            let want = (
                t["count"].as_u64().unwrap(),
                t["total_size"].as_u64().unwrap(),
            );
            if ours.get(&mt) != Some(&want) {
                diffs.push(format!(
                    "{}: {mt:#x}: ours {:?}, dac {want:?}",
                    e.name,
                    ours.get(&mt)
                ));
            }
            let dn = t["type"].as_str().unwrap();
            match names.name(&rt, mt) {
                Ok(n) if &*n == dn => named += 1,
                Err(_) if of_app(dn) => app += 1,
                other => diffs.push(format!("{}: {mt:#x}: dac {dn:?}, ours {other:?}", e.name)),
            }
        }
    }
    println!("{types} MethodTables' counts and sizes equal, {named} names equal, {app} of the app left unnamed");
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    assert!(named > 0);
}

/// A single-file app's gcore: its bundled assemblies are mapped from the host executable, so
/// the host file must be here, matched by build id AND by its bundle marker (the build id
/// names the runtime's singlefilehost, not the app). The host (tens of MB) is not in the
/// corpus: folders named in `DUMPSHELL_APP_IMAGES` (colon-separated) are searched for it; the
/// test skips loudly when it is absent, and holds whatever it finds to the rule: a host whose
/// bundle is not the dump's is refused and nothing is read from it.
#[test]
fn gcore_single_file_host_is_used_only_with_its_bundle() {
    let dirs: Vec<std::path::PathBuf> = std::env::var_os("DUMPSHELL_APP_IMAGES")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    for e in tests::all() {
        if e.kind() != "gcore" || !e.shape().starts_with("single-file") {
            continue;
        }
        let d0 = e.open();
        let Some(hb) = d0.bundles().first().cloned() else {
            panic!("{}: no single-file host found", e.name);
        };
        let host = hb.host_path.rsplit('/').next().unwrap_or("").to_string();
        let mut opts = e.open_options();
        opts.image_search_path.extend(dirs.iter().cloned());
        let found: Vec<_> = opts
            .image_search_path
            .iter()
            .map(|d| d.join(&host))
            .filter(|p| p.is_file())
            .collect();
        if found.is_empty() {
            println!(
                "SKIPPED {}: its single-file host `{host}` is not here (not in the corpus; name \
                 its folder in DUMPSHELL_APP_IMAGES)",
                e.name
            );
            continue;
        }
        let d = dumpreader::Dump::open_with(&e.dump_path(), &opts).unwrap();
        let f = d.file_source(&hb.host_path).unwrap();
        println!("{}: {host}: {}", e.name, f.state.describe());
        match &f.state {
            dumpreader::FileSourceState::Used { check, .. } => {
                assert!(
                    matches!(
                        check.evidence,
                        dumpreader::Evidence::IdentityAndBundle { .. }
                    ),
                    "{}: {check}",
                    e.name
                );
                // The bundle's assemblies then read: the stacks name the app's methods.
                let rt = clrdata::Runtime::discover(&d).unwrap();
                let names = clrdata::TypeNames::new();
                let stacks = clrdata::model::stack::StackWalker::for_target(&rt, &names)
                    .walk_all()
                    .unwrap();
                assert!(
                    stacks
                        .iter()
                        .flat_map(|s| &s.frames)
                        .any(|f| f.method.as_deref().is_some_and(|m| m.starts_with("Hang."))),
                    "{}: no Hang frame named",
                    e.name
                );
            }
            dumpreader::FileSourceState::NotUsed { why } => {
                assert!(
                    matches!(why, dumpreader::NoFile::Refused { .. }),
                    "{}: {why}",
                    e.name
                );
                // Nothing read from it: a page of the host's mappings that the dump lacks
                // stays missing.
                let m = d
                    .file_mappings()
                    .iter()
                    .find(|m| m.path == hb.host_path && d.range_of(m.start).is_none())
                    .unwrap();
                use dumpreader::Memory;
                assert_eq!(
                    d.read(m.start, &mut [0u8; 2]),
                    0,
                    "{}: read a refused file",
                    e.name
                );
            }
            other => panic!("{}: {other:?}", e.name),
        }
    }
}

/// `syncblk`: every sync block in use equals ClrMD's (its object, whether held, owner,
/// recursion, waiters).
#[test]
fn gcore_sync_blocks_equal_clrmds() {
    let (mut blocks, mut values) = (0, 0);
    for e in gcore_fd() {
        let d = e.open();
        let rt = clrdata::Runtime::discover(&d).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let table = rt.sync_table().unwrap();
        let cm: Value = serde_json::from_str(
            &std::fs::read_to_string(tests::dumps_dir().join(format!("{}.clrmd.json", e.name)))
                .unwrap(),
        )
        .unwrap();
        let theirs = cm["sync_blocks"].as_array().cloned().unwrap_or_default();
        assert!(!theirs.is_empty(), "{}: ClrMD lists no sync block", e.name);
        assert_eq!(
            table.sync_blocks.len(),
            theirs.len(),
            "{}: sync blocks",
            e.name
        );
        for c in &theirs {
            let i = c["index"].as_u64().unwrap() as u32;
            let what = format!("{}: sync block {i}", e.name);
            let s = table.sync_blocks.iter().find(|s| s.index == i).unwrap();
            assert_eq!(Some(s.object), hex(&c["object"]), "{what}");
            assert_eq!(s.locked, c["monitor_held"].as_bool().unwrap(), "{what}");
            let owner = c["owner_thread"].as_str().and(hex(&c["owner_thread"]));
            assert_eq!(s.locked.then_some(s.holding_thread), owner, "{what}");
            assert_eq!(
                u64::from(s.recursion),
                c["recursion"].as_u64().unwrap(),
                "{what}"
            );
            let waiting = c["waiting_count"].as_u64().unwrap();
            if s.wait_threads.is_empty() {
                assert_eq!(u64::from(s.enter_waiters), waiting, "{what}: waiters");
            } else {
                assert!(waiting > 0, "{what}: threads in Monitor.Wait");
            }
            blocks += 1;
            values += 5;
        }
    }
    println!("{blocks} sync blocks, {values} values equal ClrMD's");
}
