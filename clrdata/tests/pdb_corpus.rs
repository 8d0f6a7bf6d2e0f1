//! The portable PDB reader on the corpus's own PDBs (dumps/pdbs/, rebuilt bit for bit from the
//! scenario sources: dumps/pdbs/README.md):
//! - every Roslyn-built dump's app dll, read from the dump's memory, names by its CodeView entry
//!   a PDB id that a kept PDB has (found by id, never by name), except the dumps the README lists
//!   as not reproduced or not verifiable;
//! - the lines SOS printed with these PDBs (`dumps/<name>.sos-lines.txt`, `clrstack -all` and
//!   `ip2md`) are sequence points of the frames' methods (SOS prints no IL offsets in a dump, so
//!   each line must be the start line of one of the method's non-hidden sequence points, in the
//!   same document);
//! - the local names SOS's ICorDebug walk printed (`dumps/<name>.sos-locals.txt`, `clrstack -i
//!   -a` per thread) are the reader's names of those slots (SOS's rule: first LocalVariable of
//!   the slot in the method's scopes, none when hidden), and every local name the PDB gives a
//!   scenario method is declared in that method's C# source;
//! - the async chains' state machines (manifest `state_machine_types`) have MoveNext methods
//!   whose kickoff method (StateMachineMethod) is the chain's method, and asyncreal's hoisted
//!   locals (manifest `hoisted`) are state machine fields whose hoisted scopes the Debug build's
//!   PDB records.

use clrdata::metadata::{
    find_pdb, locate_in_pe, read_debug_info, read_debug_info_from_memory, read_metadata, CodeView,
    Metadata, PdbFile, PeLayout, TableId,
};
use dumpreader::Dump;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Dumps whose dll the rebuild did not reproduce: the IL and metadata are identical to the
/// committed sources' build, the PDB (hence its id) is not (dumps/pdbs/README.md).
const NOT_REPRODUCED: &[&str] = &["hang-net10-triage", "servergc-net10"];

fn pdbs_dir() -> PathBuf {
    tests::dumps_dir().join("pdbs")
}

/// The app module's bytes source: the dump's memory, or a kept image file.
enum AppImage {
    Memory { dump: Dump, base: u64, size: u64 },
    File(Vec<u8>),
}

impl AppImage {
    fn codeview(&self) -> Result<CodeView, String> {
        let info = match self {
            AppImage::Memory { dump, base, size } => {
                read_debug_info_from_memory(dump, *base, Some(*size))
            }
            AppImage::File(b) => read_debug_info(b, PeLayout::Flat),
        }
        .map_err(|e| e.to_string())?;
        info.codeview.ok_or_else(|| "no CodeView entry".to_string())
    }

    /// The app's metadata bytes.
    fn metadata(&self) -> Result<Vec<u8>, String> {
        match self {
            AppImage::Memory { dump, base, size } => read_metadata(dump, *base, Some(*size))
                .map(|m| m.bytes)
                .map_err(|e| e.to_string()),
            AppImage::File(b) => {
                let r = locate_in_pe(b, PeLayout::Flat).map_err(|e| e.to_string())?;
                Ok(b[r].to_vec())
            }
        }
    }
}

/// Finds the scenario app's dll for a dump: the module `<program>.dll` in memory, a bundled
/// (compressed, so inflated into memory) `<program>.dll`, or the dll kept in dumps/images/ for
/// a gcore dump that lacks its pages. `Err` says why there is none.
fn app_image(e: &tests::Entry) -> Result<AppImage, String> {
    let dll = format!("{}.dll", e.program());
    if e.kind() == "gcore" {
        if e.shape() == "single-file" {
            return Err(
                "a single-file gcore dump lacks the bundle's pages and the corpus does \
                        not carry the host"
                    .into(),
            );
        }
        if e.shape() == "framework-dependent" {
            let p = e
                .image_dir()
                .map(|d| d.join(&dll))
                .filter(|p| p.is_file())
                .ok_or("gcore dump without its dll in dumps/images/")?;
            return std::fs::read(&p)
                .map(AppImage::File)
                .map_err(|x| x.to_string());
        }
    }
    let dump = e.open();
    // A ReadyToRun image is mapped twice (as an image, and flat in part): take the mapping
    // whose metadata reads whole.
    let found = dump
        .modules()
        .iter()
        .filter(|m| m.name().eq_ignore_ascii_case(&dll))
        .find(|m| read_metadata(&dump, m.base, Some(m.size())).is_ok())
        .map(|m| (m.base, m.size()));
    if let Some((base, size)) = found {
        return Ok(AppImage::Memory { dump, base, size });
    }
    let mut placed = None;
    for b in dump.bundles() {
        for p in &b.placements {
            if b.entry(p)
                .is_some_and(|en| en.relative_path.eq_ignore_ascii_case(&dll))
            {
                placed = Some((p.base, p.end - p.base));
            }
        }
    }
    if let Some((base, size)) = placed {
        return Ok(AppImage::Memory { dump, base, size });
    }
    // A compressed single-file bundle inflates its assemblies into anonymous memory, which no
    // module or placement names: look for the PE image whose CodeView entry names
    // `<program>.pdb` at the start of a page.
    let pdb = format!("{}.pdb", e.program());
    let mut hits = Vec::new();
    for r in dump.memory_ranges() {
        let mut a = (r.address + 0xFFF) & !0xFFF;
        while a + 0x200 <= r.end() {
            if dump.slice_at(a).is_some_and(|b| b.starts_with(b"MZ")) {
                let size = r.end() - a;
                if let Ok(i) = read_debug_info_from_memory(&dump, a, Some(size)) {
                    if i.codeview.is_some_and(|c| c.file_name() == pdb) {
                        hits.push((a, size));
                    }
                }
            }
            a += 0x1000;
        }
    }
    match hits.as_slice() {
        [(base, size)] => Ok(AppImage::Memory {
            dump,
            base: *base,
            size: *size,
        }),
        [] => Err(format!(
            "no module, bundled file or image in memory for {dll}"
        )),
        _ => Err(format!(
            "{} images in memory name {pdb}: {hits:x?}",
            hits.len()
        )),
    }
}

/// The kept PDB a dump's dll names, or why not.
fn kept_pdb(e: &tests::Entry) -> Result<(PdbFile, AppImage), String> {
    let img = app_image(e)?;
    let cv = img.codeview()?;
    assert!(
        cv.is_portable(),
        "{}: CodeView entry is not a portable PDB's: {cv:?}",
        e.name
    );
    let s = find_pdb(&cv, &[pdbs_dir()], false);
    match s.found {
        Some(f) => Ok((f, img)),
        None => Err(format!(
            "no kept PDB with id {} ({}); {} files of that name refused (other builds)",
            cv.pdb_id(),
            cv.path,
            s.refused.len()
        )),
    }
}

fn roslyn_dumps() -> Vec<tests::Entry> {
    tests::all()
        .into_iter()
        .filter(|e| e.compiler() == "roslyn")
        .collect()
}

#[test]
fn every_roslyn_dump_has_its_pdb_by_id() {
    let mut matched = Vec::new();
    let mut used = BTreeSet::new();
    let mut problems = Vec::new();
    for e in roslyn_dumps() {
        match kept_pdb(&e) {
            Ok((f, img)) => {
                let pdb = f.reader().unwrap();
                // The PDB describes this assembly: as many methods as its MethodDef table, and
                // its entry point.
                let md_bytes = img.metadata().unwrap_or_else(|x| panic!("{}: {x}", e.name));
                let md = Metadata::parse(&md_bytes).unwrap();
                assert_eq!(
                    pdb.type_system_rows(TableId::MethodDef),
                    md.row_count(TableId::MethodDef),
                    "{}: MethodDef rows",
                    e.name
                );
                assert_eq!(
                    pdb.row_count(TableId::MethodDebugInformation),
                    md.row_count(TableId::MethodDef),
                    "{}",
                    e.name
                );
                if let clrdata::metadata::PdbSource::File(p) = f.source() {
                    used.insert(p.canonicalize().unwrap());
                }
                assert!(
                    !NOT_REPRODUCED.contains(&e.name.as_str()),
                    "{}: listed as not reproduced but {} matches: update the list and the README",
                    e.name,
                    f.id()
                );
                println!("{}: {} ({:?})", e.name, f.id(), f.source());
                matched.push(e.name.clone());
            }
            Err(why) => {
                println!("{}: no PDB: {why}", e.name);
                let single_gcore = e.kind() == "gcore" && e.shape() == "single-file";
                if !NOT_REPRODUCED.contains(&e.name.as_str()) && !single_gcore {
                    problems.push(format!("{}: {why}", e.name));
                }
            }
        }
    }
    // Every kept PDB belongs to some dump.
    let mut stray = Vec::new();
    for p in walk(&pdbs_dir()) {
        if p.extension().is_some_and(|x| x == "pdb") && !used.contains(&p.canonicalize().unwrap()) {
            stray.push(p.display().to_string());
        }
    }
    assert!(
        problems.is_empty(),
        "dumps without their PDB:\n{}",
        problems.join("\n")
    );
    assert!(stray.is_empty(), "kept PDBs no dump names: {stray:?}");
    assert!(
        matched.len() >= 24,
        "{} dumps matched: {matched:?}",
        matched.len()
    );
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![d.to_path_buf()];
    while let Some(d) = stack.pop() {
        for en in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = en.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
