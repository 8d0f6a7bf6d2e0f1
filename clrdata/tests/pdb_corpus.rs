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
//!   locals (manifest `hoisted`) are state machine fields `<name>5__N` whose scope is the N-th
//!   of the MoveNext's hoisted local scopes (Release and Debug builds).

use clrdata::metadata::{
    find_pdb, locate_in_pe, read_debug_info, read_debug_info_from_memory, read_metadata, CodeView,
    Metadata, PdbFile, PeLayout, TableId, Token,
};
use dumpreader::Dump;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// Dumps whose dll the rebuild did not reproduce: the IL and metadata are identical to the
/// committed sources' build, the PDB (hence its id) is not (dumps/pdbs/README.md).
const NOT_REPRODUCED: &[&str] = &["hang-net10-triage", "servergc-net10"];

fn pdbs_dir() -> PathBuf {
    tests::dumps_dir().join("pdbs")
}

/// The app module's bytes source: the dump's memory, or a kept image file.
enum AppImage {
    Memory {
        dump: Box<Dump>,
        base: u64,
        size: u64,
    },
    File(Vec<u8>),
}

impl AppImage {
    fn codeview(&self) -> Result<CodeView, Box<dyn std::error::Error>> {
        let info = match self {
            AppImage::Memory { dump, base, size } => {
                read_debug_info_from_memory(dump.as_ref(), *base, Some(*size))
            }
            AppImage::File(b) => read_debug_info(b, PeLayout::Flat),
        }?;
        Ok(info.codeview.ok_or("no CodeView entry")?)
    }

    /// The app's metadata bytes.
    fn metadata(&self) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
        match self {
            AppImage::Memory { dump, base, size } => {
                read_metadata(dump.as_ref(), *base, Some(*size))
                    .map(|m| m.bytes)
                    .map_err(|e| e.into())
            }
            AppImage::File(b) => {
                let r = locate_in_pe(b, PeLayout::Flat)?;
                Ok(b[r].to_vec())
            }
        }
    }
}

/// Finds the scenario app's dll for a dump: the module `<program>.dll` in memory, a bundled
/// (compressed, so inflated into memory) `<program>.dll`, or the dll kept in dumps/images/ for
/// a gcore dump that lacks its pages. `Err` says why there is none.
fn app_image(e: &tests::Entry) -> Result<AppImage, Box<dyn std::error::Error>> {
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
            return std::fs::read(&p).map(AppImage::File).map_err(|x| x.into());
        }
    }
    let dump = Box::new(e.open());
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
        [] => Err(format!("no module, bundled file or image in memory for {dll}").into()),
        _ => Err(format!("{} images in memory name {pdb}: {hits:x?}", hits.len()).into()),
    }
}

/// The kept PDB a dump's dll names, or why not.
fn kept_pdb(e: &tests::Entry) -> Result<(PdbFile, AppImage), Box<dyn std::error::Error>> {
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
        )
        .into()),
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
        matched.len() >= 25,
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

// ---------------------------------------------------------------------------------- SOS truths

/// The sections of a sos_pdb.py file: `(command, body)` in order, and the header lines.
fn sections(text: &str) -> (Vec<&str>, Vec<(&str, String)>) {
    let mut header = Vec::new();
    let mut out: Vec<(&str, String)> = Vec::new();
    for l in text.lines() {
        if let Some(c) = l.strip_prefix("### ") {
            out.push((c, String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(l);
            body.push('\n');
        } else {
            header.push(l);
        }
    }
    (header, out)
}

/// `ip2md <IP>` sections: IP (upper-case hex) -> (mdToken, SOS's own "Source file" line).
fn ip2md(secs: &[(&str, String)]) -> HashMap<String, (u32, Option<(String, u32)>)> {
    let mut m = HashMap::new();
    for (c, body) in secs {
        let Some(ip) = c.strip_prefix("ip2md ") else {
            continue;
        };
        let mut token = None;
        let mut src = None;
        for l in body.lines() {
            if let Some(t) = l.strip_prefix("mdToken:") {
                token = u32::from_str_radix(t.trim().trim_start_matches("0x"), 16)
                    .ok()
                    .or_else(|| u64::from_str_radix(t.trim(), 16).ok().map(|v| v as u32));
            }
            if let Some(s) = l.strip_prefix("Source file:") {
                if let Some((f, n)) = s.trim().rsplit_once(" @ ") {
                    src = Some((f.to_string(), n.trim().parse().unwrap()));
                }
            }
        }
        if let Some(t) = token {
            m.insert(ip.to_ascii_uppercase(), (t, src));
        }
    }
    m
}

/// The sos-lines / sos-locals truths present: `(dump name, path)`.
fn truths(suffix: &str) -> Vec<(String, PathBuf)> {
    let mut v: Vec<(String, PathBuf)> = walk_flat(&tests::dumps_dir())
        .into_iter()
        .filter_map(|p| {
            let f = p.file_name()?.to_str()?.to_string();
            Some((f.strip_suffix(suffix)?.to_string(), p))
        })
        .collect();
    v.sort();
    v
}

fn walk_flat(d: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(d)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect()
}

/// The `# PDB <path> (id <hex>)` header line's id.
fn header_pdb_id(header: &[&str]) -> String {
    header
        .iter()
        .find_map(|l| l.strip_prefix("# PDB "))
        .and_then(|l| l.rsplit_once("(id "))
        .map(|(_, id)| id.trim_end_matches(')').to_string())
        .expect("a '# PDB <path> (id <hex>)' header line")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn sos_lines_are_sequence_points_of_the_frames_methods() {
    let files = truths(".sos-lines.txt");
    assert!(
        !files.is_empty(),
        "no dumps/*.sos-lines.txt (dumps/tools/sos_pdb.py makes them)"
    );
    let mut frames = 0;
    let mut failures = Vec::new();
    for (name, path) in &files {
        let e = tests::entry(name);
        let (f, _img) = kept_pdb(&e).unwrap_or_else(|x| panic!("{name}: {x}"));
        let pdb = f.reader().unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        let (header, secs) = sections(&text);
        assert_eq!(
            header_pdb_id(&header),
            hex(&pdb.id().0),
            "{name}: the truth was made with another PDB"
        );
        let tokens = ip2md(&secs);
        let stacks = &secs
            .iter()
            .find(|(c, _)| *c == "clrstack -all")
            .unwrap_or_else(|| panic!("{name}: no clrstack -all section"))
            .1;
        let mut here = 0;
        for l in stacks.lines() {
            // <SP> <IP> <method> [<file> @ <line>]
            let Some((left, loc)) = l
                .trim_end()
                .strip_suffix(']')
                .and_then(|x| x.rsplit_once(" ["))
            else {
                continue;
            };
            let Some((file, line)) = loc.rsplit_once(" @ ") else {
                continue;
            };
            let mut parts = left.split_whitespace();
            let (_sp, ip) = (
                parts.next().unwrap(),
                parts.next().unwrap().to_ascii_uppercase(),
            );
            let line: u32 = line.parse().unwrap();
            let Some((token, raw)) = tokens.get(&ip) else {
                failures.push(format!("{name}: no ip2md section for {ip} ({l})"));
                continue;
            };
            let m = Token(*token);
            let points = pdb.sequence_points(m).unwrap();
            let ok = |want_file: &str, want_line: u32| {
                points.iter().any(|p| {
                    !p.is_hidden()
                        && p.start_line == want_line
                        && pdb.document_name(p.document).unwrap() == want_file
                })
            };
            if !ok(file, line) {
                failures.push(format!(
                    "{name}: {l}: line {line} is no sequence point of {m} ({} points: {:?})",
                    points.len(),
                    points
                        .iter()
                        .filter(|p| !p.is_hidden())
                        .map(|p| p.start_line)
                        .collect::<Vec<_>>()
                ));
            }
            if let Some((rf, rl)) = raw {
                if !ok(rf, *rl) {
                    failures.push(format!(
                        "{name}: ip2md {ip}: {rf} @ {rl} is no sequence point of {m}"
                    ));
                }
            }
            here += 1;
        }
        println!("{name}: {here} frames with lines");
        assert!(
            here > 0,
            "{name}: no frame with a line in {}",
            path.display()
        );
        frames += here;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!("{} dumps, {frames} frames", files.len());
}

/// One frame of a `clrstack -i -a` section: its IP (upper-case), module path, and the names
/// SOS printed for its locals in slot order (`local_<n>` when it found none).
fn icordebug_frames(body: &str) -> Vec<(String, String, Vec<String>)> {
    let mut out: Vec<(String, String, Vec<String>)> = Vec::new();
    let mut in_locals = false;
    for l in body.lines() {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() >= 3
            && t[0].len() == 16
            && t[1].len() == 16
            && t[2].starts_with('[')
            && l.ends_with(')')
        {
            let module = l
                .rsplit_once(" (")
                .map(|(_, m)| m.trim_end_matches(')'))
                .unwrap_or("");
            out.push((t[1].to_ascii_uppercase(), module.to_string(), Vec::new()));
            in_locals = false;
        } else if l.starts_with("LOCALS:") {
            in_locals = true;
        } else if l.starts_with("PARAMETERS:") || (!l.starts_with("  ") && !l.is_empty()) {
            in_locals = false;
        } else if in_locals {
            if let Some(rest) = l.strip_prefix("  + ") {
                let name = if let Some(e) = rest.strip_prefix("(Error ") {
                    if !e.contains("retrieving local variable") {
                        continue;
                    }
                    e.split('\'').nth(1).unwrap_or("").to_string()
                } else {
                    rest.split_whitespace().nth(1).unwrap_or("").to_string()
                };
                if let Some(f) = out.last_mut() {
                    f.2.push(name);
                }
            }
        }
    }
    out
}

#[test]
fn sos_local_names_are_the_pdb_slot_names() {
    let files = truths(".sos-locals.txt");
    assert!(
        !files.is_empty(),
        "no dumps/*.sos-locals.txt (dumps/tools/sos_pdb.py --locals)"
    );
    let (mut frames, mut named) = (0, 0);
    let mut failures = Vec::new();
    for (name, path) in &files {
        let e = tests::entry(name);
        let (f, _img) = kept_pdb(&e).unwrap_or_else(|x| panic!("{name}: {x}"));
        let pdb = f.reader().unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        let (header, secs) = sections(&text);
        assert_eq!(header_pdb_id(&header), hex(&pdb.id().0), "{name}");
        let tokens = ip2md(&secs);
        let dll = format!("/{}.dll", e.program());
        for (c, body) in &secs {
            if !c.ends_with("clrstack -i -a") {
                continue;
            }
            for (ip, module, locals) in icordebug_frames(body) {
                if !module.ends_with(&dll) {
                    continue;
                }
                let Some((token, _)) = tokens.get(&ip) else {
                    failures.push(format!("{name}: no ip2md section for {ip}"));
                    continue;
                };
                let m = Token(*token);
                frames += 1;
                for (slot, sos) in locals.iter().enumerate() {
                    let ours = pdb.local_name(m, slot as u16).unwrap();
                    let sos_none = *sos == format!("local_{slot}");
                    if sos_none != ours.is_none() || (!sos_none && ours != Some(sos.as_str())) {
                        failures.push(format!(
                            "{name}: {m} slot {slot}: SOS {sos}, reader {ours:?}"
                        ));
                    }
                    named += usize::from(!sos_none);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!(
        "{} dumps, {frames} app frames, {named} named locals",
        files.len()
    );
    assert!(
        frames >= 9 && named > 0,
        "{frames} frames, {named} named locals compared"
    );
}

// ---------------------------------------------------------------------------------- the sources

/// Whether `text` declares `name`: the word follows a type (or `var`) and is followed by `=`,
/// `;`, `)`, `,` or ` in` (locals, `foreach` variables, `out var`, patterns, `catch (E e)`), or
/// it is a later declarator of a multiple declaration (`bool all = true, any = false;`: after
/// a comma, initialised).
fn declares(text: &str, name: &str) -> bool {
    let b = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut from = 0;
    while let Some(i) = text[from..].find(name).map(|i| i + from) {
        from = i + 1;
        let end = i + name.len();
        if (i > 0 && word(b[i - 1])) || (end < b.len() && word(b[end])) {
            continue;
        }
        let before = text[..i].trim_end();
        let after = text[end..].trim_start();
        let typed = before.chars().last().is_some_and(|c| {
            c.is_ascii_alphanumeric() || c == '_' || c == '>' || c == ']' || c == '?'
        }) && before.len() < i;
        let follows = after.starts_with('=') && !after.starts_with("==")
            || after.starts_with(';')
            || after.starts_with(')')
            || after.starts_with(',')
            || after.starts_with("in ");
        let initialised = after.starts_with('=') && !after.starts_with("==");
        let declarator = before.ends_with(',') && initialised;
        if (typed && follows) || declarator {
            return true;
        }
    }
    false
}

#[test]
fn pdb_local_names_are_declared_in_the_csharp_source() {
    use sha2::Digest;
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut documents_checked = BTreeSet::new();
    for p in walk(&pdbs_dir())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "pdb"))
    {
        let f = PdbFile::open(&p).unwrap();
        let pdb = f.reader().unwrap();
        // Each document's source as it was compiled: the version kept by its SHA-256 in
        // dumps/pdbs/sources/ (the scenarios changed since some builds), else the scenario file
        // as committed now when the hash the PDB records equals it.
        let mut sources = HashMap::new();
        for d in pdb.documents().unwrap() {
            assert_eq!(
                d.hash_algorithm,
                Some(clrdata::metadata::HASH_SHA256),
                "{}",
                p.display()
            );
            let file = d.name.rsplit('/').next().unwrap().to_string();
            let hex: String = d.hash.iter().map(|b| format!("{b:02x}")).collect();
            let candidates = [
                pdbs_dir().join("sources").join(format!("{hex}.cs")),
                tests::dumps_dir().join("scenarios").join(&file),
            ];
            for here in candidates {
                let Ok(text) = std::fs::read_to_string(&here) else {
                    continue;
                };
                if sha2::Sha256::digest(text.as_bytes()).as_slice() == d.hash {
                    sources.insert(d.rid, text);
                    documents_checked.insert(d.name.clone());
                    break;
                }
            }
        }
        for rid in 1..=pdb.row_count(TableId::MethodDebugInformation) {
            let m = Token::new(TableId::MethodDef, rid);
            let names: Vec<_> = pdb
                .all_locals(m)
                .unwrap()
                .into_iter()
                .filter(|v| !v.is_hidden())
                .collect();
            if names.is_empty() {
                continue;
            }
            // The method's source lines: its own sequence points, or its kickoff method's.
            let mut points = pdb.sequence_points(m).unwrap();
            if let Some(k) = pdb.kickoff_method(m).unwrap() {
                points.extend(pdb.sequence_points(k).unwrap());
            }
            let visible: Vec<_> = points.iter().filter(|p| !p.is_hidden()).collect();
            let Some(doc) = visible.first().map(|p| p.document) else {
                continue;
            };
            let Some(text) = sources.get(&doc) else {
                continue;
            };
            let lo = visible
                .iter()
                .map(|p| p.start_line)
                .min()
                .unwrap()
                .saturating_sub(3) as usize;
            let hi = visible.iter().map(|p| p.end_line).max().unwrap() as usize;
            let span: String = text
                .lines()
                .skip(lo.saturating_sub(1))
                .take(hi + 1 - lo)
                .collect::<Vec<_>>()
                .join("\n");
            for v in names {
                checked += 1;
                if !declares(&span, v.name) {
                    failures.push(format!(
                        "{}: {m}: local '{}' (slot {}) is not declared in lines {lo}..={hi}",
                        p.display(),
                        v.name,
                        v.slot
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!(
        "{checked} local names in {} documents",
        documents_checked.len()
    );
    assert!(
        checked >= 20,
        "{checked} names checked: {documents_checked:?}"
    );
}

#[test]
fn declaration_finder() {
    assert!(declares(
        "            var threads = new List<Thread>();",
        "threads"
    ));
    assert!(declares("foreach (var t in threads)", "t"));
    assert!(declares("for (int i = 0; i < n; i++)", "i"));
    assert!(declares("catch (Exception ex) {", "ex"));
    assert!(!declares("Use(threads);", "threads"));
    assert!(!declares("x = threads;", "threads"));
    assert!(!declares("var threadsX = 1;", "threads"));
}

// ---------------------------------------------------------------------------------- async

/// The TypeDef whose full name (reflection's, generic arguments cut) is `name`.
fn type_def(md: &Metadata<'_>, name: &str) -> Option<u32> {
    let name = name.split("[[").next().unwrap();
    (1..=md.row_count(TableId::TypeDef)).find(|&rid| md.type_name(rid).is_ok_and(|n| n == name))
}

fn method_named(md: &Metadata<'_>, ty: u32, method: &str) -> Option<u32> {
    md.type_def_methods(ty)
        .ok()?
        .into_iter()
        .find(|&m| md.method_def(m).is_ok_and(|r| r.name == method))
}

/// A manifest chain's state-machine methods with their state machine types, innermost first:
/// every method before .NET 11; on 11 (`async_kinds`) only the methods compiled to a state
/// machine, in the order `state_machine_types` lists them.
fn state_machine_methods(c: &serde_json::Value) -> Vec<(&str, &str)> {
    let methods = c["methods"].as_array().unwrap();
    let sms = c["state_machine_types"].as_array().unwrap();
    let kinds = c["async_kinds"].as_array();
    methods
        .iter()
        .enumerate()
        .filter(|(i, _)| kinds.is_none_or(|k| k[*i] == "state-machine"))
        .map(|(_, m)| m.as_str().unwrap())
        .zip(sms.iter().map(|t| t.as_str().unwrap()))
        .collect()
}

#[test]
fn state_machines_kick_off_the_manifest_chains_methods() {
    let mut checked = 0;
    for e in roslyn_dumps() {
        let chains = e.manifest["async_chains"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if chains.is_empty() {
            continue;
        }
        let Ok((f, img)) = kept_pdb(&e) else { continue };
        let pdb = f.reader().unwrap();
        let md_bytes = img.metadata().unwrap();
        let md = Metadata::parse(&md_bytes).unwrap();
        for c in &chains {
            for (m, sm) in state_machine_methods(c) {
                let ty = type_def(&md, sm).unwrap_or_else(|| panic!("{}: no TypeDef {sm}", e.name));
                let mn = method_named(&md, ty, "MoveNext")
                    .unwrap_or_else(|| panic!("{}: {sm} has no MoveNext", e.name));
                let mn = Token::new(TableId::MethodDef, mn);
                let k = pdb.kickoff_method(mn).unwrap().unwrap_or_else(|| {
                    panic!("{}: {sm}.MoveNext {mn} has no kickoff method", e.name)
                });
                let owner = md.method_owner(k.rid()).unwrap().unwrap();
                let kname = format!(
                    "{}.{}",
                    md.type_name(owner).unwrap(),
                    md.method_def(k.rid()).unwrap().name
                );
                assert_eq!(kname, m, "{}: kickoff of {sm}.MoveNext", e.name);
                assert_eq!(
                    pdb.move_next_method(k).unwrap(),
                    Some(mn),
                    "{}: {m}",
                    e.name
                );
                // The MoveNext's lines are the async method's: in its document.
                assert!(
                    pdb.source_line(mn, u32::MAX).unwrap().is_some(),
                    "{}: {sm}.MoveNext has no line",
                    e.name
                );
                checked += 1;
            }
        }
    }
    println!("{checked} state machines");
    assert!(checked >= 60, "{checked} state machines checked");
}

#[test]
fn hoisted_locals_are_the_state_machines_fields_with_debug_scopes() {
    let mut checked = 0;
    for e in roslyn_dumps() {
        let hoisted = e.manifest["hoisted"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if hoisted.is_empty() {
            continue;
        }
        let (f, img) = kept_pdb(&e).unwrap_or_else(|x| panic!("{}: {x}", e.name));
        let pdb = f.reader().unwrap();
        let md_bytes = img.metadata().unwrap();
        let md = Metadata::parse(&md_bytes).unwrap();
        let chains = e.manifest["async_chains"].as_array().unwrap();
        for h in hoisted.iter().filter(|h| h["kind"] == "local") {
            let (method, name) = (h["method"].as_str().unwrap(), h["name"].as_str().unwrap());
            // A runtime-async method (.NET 11) has no state machine: its hoisted locals are
            // the runtime's continuation's (the async debug info), not fields.
            let runtime_async = chains.iter().any(|c| {
                let ms = c["methods"].as_array().unwrap();
                ms.iter()
                    .position(|m| m == method)
                    .is_some_and(|i| c["async_kinds"][i] == "runtime-async")
            });
            if runtime_async {
                continue;
            }
            let sm = chains
                .iter()
                .find_map(|c| {
                    state_machine_methods(c)
                        .into_iter()
                        .find(|(m, _)| *m == method)
                        .map(|(_, sm)| sm)
                })
                .unwrap_or_else(|| panic!("{}: no state machine for {method}", e.name));
            let ty = type_def(&md, sm).unwrap();
            let mn = Token::new(
                TableId::MethodDef,
                method_named(&md, ty, "MoveNext").unwrap(),
            );
            // The hoisted variable is the field <name>5__<n>.
            let prefix = format!("<{name}>5__");
            let n: usize = md
                .type_def_fields(ty)
                .unwrap()
                .into_iter()
                .find_map(|fr| md.field(fr).ok()?.name.strip_prefix(&prefix)?.parse().ok())
                .unwrap_or_else(|| panic!("{}: {sm} has no field {prefix}N", e.name));
            // The PDB records every hoisted variable's scope (Release and Debug builds alike):
            // the n-th scope is the field <name>5__n's.
            let s = pdb
                .hoisted_local_scopes(mn)
                .unwrap()
                .unwrap_or_else(|| panic!("{}: {sm}.MoveNext has no hoisted scopes", e.name));
            assert!(
                n >= 1 && n <= s.len(),
                "{}: {name} is field {n} of {} scopes",
                e.name,
                s.len()
            );
            assert!(
                !s[n - 1].is_empty(),
                "{}: {name}'s scope {:?} is empty",
                e.name,
                s[n - 1]
            );
            let scopes = &s;
            println!(
                "{}: {method} {name} = {sm}.{prefix}{n}, scopes {scopes:?}",
                e.name
            );
            checked += 1;
        }
    }
    assert!(checked >= 9, "{checked} hoisted locals checked");
}

// ---------------------------------------------------------------------------------- the rules

#[test]
fn source_line_and_locals_by_il_offset() {
    // hang-net10's PDB; method 0x06000008 (Hang.Program.Record in hang.cs as of 7b5dfcb):
    // sequence points IL_000e line 111 (the `for`), IL_0010 hidden, IL_0012 line 113, ...;
    // scopes 0..254 {frames, st, r}, 14..139 {i}, 18..126 {m}
    let f = PdbFile::open(
        &pdbs_dir().join("hang-10.0.14-fd-false/114e2f0dccaf406ca6035f48a6982752FFFFFFFF/hang.pdb"),
    )
    .unwrap();
    let p = f.reader().unwrap();
    let m = Token::new(TableId::MethodDef, 8);
    let line = |il| {
        p.source_line(m, il)
            .unwrap()
            .map(|l| (l.start_line, l.il_offset))
    };
    assert_eq!(line(0), Some((109, 0)));
    assert_eq!(line(0x0e), Some((111, 0x0e)));
    // a hidden point is skipped: the line stays the one before it
    assert_eq!(line(0x10), Some((111, 0x0e)));
    assert_eq!(line(0x11), Some((111, 0x0e)));
    assert_eq!(line(0x12), Some((113, 0x12)));
    assert_eq!(line(0xfc), Some((127, 0xe4)));
    assert_eq!(line(0xfd), Some((128, 0xfd)));
    assert_eq!(line(u32::MAX), Some((128, 0xfd)));
    let l = p.source_line(m, 0x8b).unwrap().unwrap();
    assert_eq!(
        (l.start_line, l.start_column, l.end_line, l.end_column),
        (118, 13, 126, 15)
    );
    assert!(
        l.document.ends_with("/dumps/scenarios/hang.cs"),
        "{}",
        l.document
    );
    let names = |il| {
        p.locals(m, il)
            .unwrap()
            .iter()
            .map(|v| (v.name, v.slot))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(0), [("frames", 0), ("st", 1), ("r", 2)]);
    assert_eq!(
        names(20),
        [("frames", 0), ("st", 1), ("r", 2), ("i", 3), ("m", 4)]
    );
    assert_eq!(names(130), [("frames", 0), ("st", 1), ("r", 2), ("i", 3)]);
    assert_eq!(names(253), [("frames", 0), ("st", 1), ("r", 2)]);
    assert_eq!(names(254), []);
    assert_eq!(p.local_name(m, 4).unwrap(), Some("m"));
    assert_eq!(p.local_name(m, 5).unwrap(), None);
    // a method without sequence points (a compiler-generated one): no line
    let hidden_only = (1..=p.row_count(TableId::MethodDebugInformation))
        .map(|r| Token::new(TableId::MethodDef, r))
        .find(|t| p.sequence_points(*t).unwrap().is_empty())
        .unwrap();
    assert_eq!(p.source_line(hidden_only, 0).unwrap(), None);
}
