//! The clean room: every corpus dump read as on a machine that has nothing but the dump and
//! dumpshell — no image path, no recorded paths, no NuGet pack, discovery forbidden every file
//! source (`clrdata::DiscoverOptions::clean_room`): the dump's memory and the build index
//! bundled with dumpshell only.
//!
//! This binary runs the truth tests themselves, not copies: their files are included below,
//! and the harness runs in the clean room in a binary named `clean_room-*`
//! ([`tests::clean_room`]). There, [`tests::claims`] holds each dump to every capability its
//! kind holds without files (a gcore core lacks the assemblies' file pages, so what needs
//! their metadata or code is not claimed on it; everything else is), and each capability
//! claimed is compared with the DAC's, ClrMD's and the scenarios' truths exactly as with files:
//! the census, threads and segments (census_descriptor, heap_truth), the stack walk frame for
//! frame (stack_truth, stacks), GC handles, the finalization queue and gcroot (roots), statics
//! (statics), monitors (locks), objects, fields, types and names (objects_truth, types_truth,
//! names_truth, fields_net9_10, method_names), exceptions, the thread pool, and the refusals
//! (refusals). Any test binary runs the same way with `DUMPSHELL_CLEAN_ROOM=1`.

#[path = "../../clrdata/tests/census_descriptor.rs"]
mod census_descriptor;
#[path = "exceptions.rs"]
mod exceptions;
#[path = "fields_net9_10.rs"]
mod fields_net9_10;
#[path = "../../clrdata/tests/heap_truth.rs"]
mod heap_truth;
#[path = "locks.rs"]
mod locks;
#[path = "method_names.rs"]
mod method_names;
#[path = "../../clrdata/tests/names_truth.rs"]
mod names_truth;
#[path = "../../clrdata/tests/objects_truth.rs"]
mod objects_truth;
#[path = "refusals.rs"]
mod refusals;
#[path = "roots.rs"]
mod roots;
#[path = "../../clrdata/tests/stack_truth.rs"]
mod stack_truth;
#[path = "stacks.rs"]
mod stacks;
#[path = "statics.rs"]
mod statics;
#[path = "threadpool.rs"]
mod threadpool;
#[path = "../../clrdata/tests/types_truth.rs"]
mod types_truth;

use dumpreader::{Dump, FileSourceState, ImageSource};
use tests::{Capability, CAPABILITIES};

/// This binary is the clean room, and the harness opens dumps there with no file source.
#[test]
fn this_binary_is_the_clean_room() {
    assert!(tests::clean_room());
    let o = tests::discover_options();
    assert!(!o.files);
    for e in tests::all() {
        let opts = e.open_options();
        assert!(opts.image_search_path.is_empty(), "{}", e.name);
        assert!(!opts.recorded_paths, "{}", e.name);
        assert!(e.framework_dirs().is_empty(), "{}", e.name);
    }
}

/// Every .NET 8, 9 and 10 corpus dump is read in the clean room, and no file was: after
/// discovery and a stack walk of every thread, no module's image came from a file and no
/// file stood in for missing pages. Prints, per dump, what the clean room claims of it and
/// what it does not (a capability the tests claim with the runtime's files but not here).
#[test]
fn every_dump_is_read_from_itself_and_the_index() {
    use std::collections::BTreeMap;
    let mut per_family: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    let mut lines = Vec::new();
    for e in tests::all() {
        let f = e.family();
        if !matches!(f, 8..=10) {
            continue;
        }
        let d = Dump::open_with(&e.dump_path(), &e.open_options()).expect("open");
        let slot = per_family.entry(f).or_default();
        slot.1 += 1;
        let rt = tests::discover(&d).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        let names = clrdata::TypeNames::new();
        if tests::claims(&e, Capability::Stacks) {
            let _ = clrdata::model::stack::StackWalker::for_target(&rt, &names).walk_all();
        }
        for m in d.modules() {
            if let Ok(img) = d.module_image(m) {
                assert!(
                    !matches!(img.source, ImageSource::File(_)),
                    "{}: {} read from a file in the clean room",
                    e.name,
                    m.path
                );
            }
        }
        for fs in d.file_sources() {
            assert!(
                !matches!(fs.state, FileSourceState::Used { .. }),
                "{}: {} stood in for missing pages in the clean room",
                e.name,
                fs.recorded
            );
        }
        slot.0 += 1;
        let not: Vec<String> = CAPABILITIES
            .iter()
            .filter(|&&c| tests::family_claims(f, c) && !tests::claims(&e, c))
            .map(|c| format!("{c:?}"))
            .collect();
        let unread = e.unread_images();
        lines.push(format!(
            "{} ({} {}): layout {}; not claimed: {}{}",
            e.name,
            e.runtime_version(),
            e.kind(),
            rt.layout_source,
            if not.is_empty() {
                "none".to_string()
            } else {
                not.join(", ")
            },
            if unread.is_empty() {
                String::new()
            } else {
                format!(
                    " ({} image files' pages not in the dump, e.g. {})",
                    unread.len(),
                    unread[0]
                )
            }
        ));
    }
    eprintln!("{}", lines.join("\n"));
    for (f, (read, all)) in &per_family {
        eprintln!(".NET {f}: {read} of {all} dumps read in the clean room");
        assert_eq!(read, all);
    }
    assert_eq!(per_family.len(), 3, "{per_family:?}");
}

/// The dumps read in part ([`tests::Shortfall::ThreadsOnly`], in `tests::pending()`) are read
/// so in the clean room too: the runtime from the dump and the build index only, its threads
/// equal to the DAC's, and what the dump lacks refused as tests/tests/pending.rs holds it.
#[test]
fn dumps_read_in_part_are_read_so_from_themselves_and_the_index() {
    let mut checked = 0;
    for p in tests::pending() {
        if p.shortfall != tests::Shortfall::ThreadsOnly
            || !tests::dumps_dir()
                .join(format!("{}.dmp.zst", p.name))
                .is_file()
        {
            continue;
        }
        let e = tests::entry(p.name);
        let d = Dump::open_with(&e.dump_path(), &e.open_options()).expect("open");
        let rt = tests::discover(&d).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        assert_eq!(rt.info.version, e.runtime_version(), "{}", e.name);
        match tests::read_in_part(&e, &rt) {
            Ok(how) => eprintln!("{}: {how}", e.name),
            Err(why) => panic!("{}: not read in part as listed: {why}", e.name),
        }
        for fs in d.file_sources() {
            assert!(
                !matches!(fs.state, FileSourceState::Used { .. }),
                "{}: {} stood in for missing pages in the clean room",
                e.name,
                fs.recorded
            );
        }
        checked += 1;
    }
    eprintln!("{checked} dumps read in part checked in the clean room");
}
