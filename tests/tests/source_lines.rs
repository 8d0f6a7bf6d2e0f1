//! Source lines of managed frames against SOS's own (`dumps/<name>.sos-lines.txt`: `clrstack
//! -all` by dotnet-dump with the app's PDB, dumps/pdbs/README.md): every frame SOS printed
//! with `[file @ line]` is a frame of ours (matched by Child SP and IP as printed) with the
//! same document and line, and every managed frame SOS printed without one has none of ours.
//! The PDBs are found by id below dumps/pdbs/ (never by name), each frame's IL offset from its
//! method's debug info, as SOS does (IP − 1 for every frame but the first listed).
//!
//! SOS must have known the runtime's version (every truth's header says `# runtime as SOS knows
//! it:`, as sos_pdb.py records it): without it SOS looks IL
//! offsets up by its pre-.NET 5 fallback, whose answers are not where the frames are (clrdata's
//! `model::stack::source` describes it). The first recordings were made so where the dump's
//! recorded runtime path was absent: 8 frames of asyncreal-net9-debug, failfast-net10,
//! faultav-net10, names-net10 and names-net11 had the fallback's lines (re-recorded).

use clrdata::model::stack::source::SourceLines;
use clrdata::model::stack::{FrameKind, StackWalker};
use std::collections::HashMap;

/// Dumps whose app methods' ReadyToRun debug info is not in the dump and whose image file the
/// corpus does not carry (their frames have no IL offset where SOS found one). None now:
/// hang-net10-r2r was one until the R2R reader used the part of its DebugInfo section the core
/// holds (its first 0x5a0 bytes, which hold every entry and blob its frames need, as SOS's DAC
/// found them there).
const DEBUG_INFO_NOT_IN_DUMP: &[&str] = &[];

/// Frames (dump, Child SP, IP) that SOS looks up at their return address itself, not inside
/// the call (IP − 1): `ConvertNativeToIlOffset` subtracts 1 only when the IP lies at or past
/// `GetRepresentativeEntryAddress` + 1 of the method instance `EnumMethodInstancesByAddress`
/// yields first, and for a generic method's code that instance is one of the method's loaded
/// instantiations, not necessarily the frame's: names.cs's `BlockingWait<T>` (names-net10's
/// `<__Canon>` frame at 0x..aad8, whose first instance's code is at 0x..ab60; names-net11's
/// `<Slot>` frame at 0x..8788, first instance at 0x..8e60, both checked with the runtime's own
/// DAC hosted by /work/shared/tools/dacprobe). The frames are in their call `Block();` (line
/// 131, IL 0); SOS shows the statement after it (132). Ours stay the call's line; for these
/// frames the test checks that SOS's line is ours for the return address itself.
const SOS_LOOKS_UP_RETURN_ADDRESS: &[(&str, u64, u64)] = &[
    ("names-net10", 0x7fc92a9feb90, 0x7fd52527aad8),
    ("names-net11", 0x7fa9477fdc30, 0x7fb53ead8788),
];

/// One frame line of `clrstack -all`: Child SP, IP, and the `[file @ line]` it ends with.
#[derive(Debug)]
struct SosFrame {
    sp: u64,
    ip: u64,
    text: String,
    line: Option<(String, u32)>,
}

/// The `### clrstack -all` section of a `.sos-lines.txt`: frames per OS thread id.
fn sos_stacks(text: &str) -> HashMap<u64, Vec<SosFrame>> {
    let mut out: HashMap<u64, Vec<SosFrame>> = HashMap::new();
    let mut in_section = false;
    let mut thread = None;
    for l in text.lines() {
        if let Some(cmd) = l.strip_prefix("### ") {
            in_section = cmd.trim() == "clrstack -all";
            continue;
        }
        if !in_section {
            continue;
        }
        if let Some(id) = l.strip_prefix("OS Thread Id: 0x") {
            let id = id.split_whitespace().next().unwrap_or("");
            thread = u64::from_str_radix(id, 16).ok();
            continue;
        }
        let mut parts = l.splitn(3, ' ');
        let (Some(sp), Some(ip), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (Ok(sp), Ok(ip)) = (u64::from_str_radix(sp, 16), u64::from_str_radix(ip, 16)) else {
            continue;
        };
        let Some(t) = thread else { continue };
        let rest = rest.trim_end();
        let line = rest
            .strip_suffix(']')
            .and_then(|r| r.rfind(" [").map(|i| &r[i + 2..]))
            .and_then(|inner| inner.rsplit_once(" @ "))
            .and_then(|(f, n)| Some((f.to_string(), n.parse().ok()?)));
        out.entry(t).or_default().push(SosFrame {
            sp,
            ip,
            text: rest.to_string(),
            line,
        });
    }
    out
}

#[test]
fn frame_lines_equal_sos() {
    if tests::clean_room() {
        eprintln!("the clean room reads no PDB file: nothing to compare");
        return;
    }
    let dir = tests::dumps_dir();
    let mut truths: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".sos-lines.txt")
                .map(str::to_string)
        })
        .collect();
    truths.sort();
    let known = tests::names();
    let mut dumps = 0;
    let mut with_lines = 0;
    let mut without = 0;
    let mut missing = 0;
    let mut versioned = 0;
    let mut return_address = 0;
    let mut diffs = Vec::new();
    let mut skipped = Vec::new();
    for name in &truths {
        if !known.contains(name) {
            skipped.push(name.clone());
            continue;
        }
        let e = tests::entry(name);
        let text = std::fs::read_to_string(dir.join(format!("{name}.sos-lines.txt"))).unwrap();
        let sos = sos_stacks(&text);
        assert!(!sos.is_empty(), "{name}: no clrstack -all section");
        let version = text
            .lines()
            .take_while(|l| l.starts_with('#'))
            .find_map(|l| l.strip_prefix("# runtime as SOS knows it: "));
        assert!(
            version.is_some_and(|v| v != "0.0"),
            "{name}: SOS did not know the runtime's version ({version:?}): re-record the truth \
             with dumps/tools/sos_pdb.py"
        );
        versioned += usize::from(version.is_some());
        let d = e.open();
        let rt = tests::discover(&d).unwrap_or_else(|err| panic!("{name}: {err}"));
        let names = clrdata::TypeNames::new();
        let w = StackWalker::for_target(&rt, &names);
        let mut stacks = w.walk_all().unwrap_or_else(|err| panic!("{name}: {err}"));
        let lines = SourceLines::new(vec![dir.join("pdbs")], false, true);
        for st in &mut stacks {
            lines.annotate(&w, st);
        }
        dumps += 1;
        for (os, frames) in &sos {
            let Some(ours) = stacks.iter().find(|s| s.os_id == *os) else {
                if frames.iter().any(|f| f.line.is_some()) {
                    diffs.push(format!(
                        "{name}: thread {os:#x} with source lines not walked"
                    ));
                }
                continue;
            };
            for sf in frames {
                let of = ours
                    .frames
                    .iter()
                    .find(|f| f.kind == FrameKind::Managed && f.sp == sf.sp && f.ip == sf.ip);
                let Some(of) = of else {
                    if sf.line.is_some() {
                        diffs.push(format!(
                            "{name}: thread {os:#x}: no managed frame of ours at SP {:#x} IP {:#x} ({})",
                            sf.sp, sf.ip, sf.text
                        ));
                    }
                    continue;
                };
                let src = of.source.as_ref();
                let got = src.and_then(|s| Some((s.file.clone()?, s.line?)));
                let note = src.and_then(|s| s.note.as_deref()).unwrap_or("");
                if got.is_none()
                    && sf.line.is_some()
                    && DEBUG_INFO_NOT_IN_DUMP.contains(&name.as_str())
                    && note.contains("ReadyToRun section 105")
                    && note.contains("not in the dump")
                {
                    missing += 1;
                    continue;
                }
                if SOS_LOOKS_UP_RETURN_ADDRESS.contains(&(name.as_str(), sf.sp, sf.ip)) {
                    let at_ip = lines.code_source(&w, of.ip, of.ip, of.module.zip(of.token));
                    let at_ip = at_ip.file.clone().zip(at_ip.line);
                    assert!(
                        got != sf.line && at_ip == sf.line,
                        "{name} {:#x}: SOS {:?}, ours {got:?}, ours at the return address \
                         {at_ip:?}: no longer the listed shape",
                        sf.ip,
                        sf.line
                    );
                    return_address += 1;
                    continue;
                }
                if got != sf.line {
                    diffs.push(format!(
                        "{name}: thread {os:#x} SP {:#x} IP {:#x}: SOS {:?}, ours {:?} (IL {:?}, {:?}) in {}",
                        sf.sp,
                        sf.ip,
                        sf.line,
                        got,
                        src.and_then(|s| s.il_offset),
                        src.and_then(|s| s.note.clone()),
                        sf.text
                    ));
                } else if got.is_some() {
                    with_lines += 1;
                } else {
                    without += 1;
                }
            }
        }
    }
    eprintln!(
        "{dumps} dumps: {with_lines} frames with SOS's file and line, {without} managed frames \
         without a line in both, {missing} without debug info in the dump, {return_address} \
         where SOS looks up the return address itself; {versioned} truths \
         record the runtime version SOS knew; not in tests::names(): {skipped:?}"
    );
    assert_eq!(return_address, SOS_LOOKS_UP_RETURN_ADDRESS.len());
    assert!(
        diffs.is_empty(),
        "{} frames differ from SOS:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
    assert!(dumps >= 20, "only {dumps} dumps compared");
    assert!(
        with_lines >= 318,
        "only {with_lines} frames with lines compared"
    );
}

/// One frame of SOS's `pe -lines`: SP, IP (as SOS prints it), `module!method+0xNN`, and the
/// `[file @ line]` it ends with.
#[derive(Debug)]
struct SosPeFrame {
    sp: u64,
    ip: u64,
    func: String,
    line: Option<(String, u32)>,
}

/// The `### pe -lines -nested <object>` sections of a `.sos-lines.txt`: each exception
/// object's recorded frames as SOS printed them.
fn sos_pe(text: &str) -> Vec<(u64, Vec<SosPeFrame>)> {
    let mut out = Vec::new();
    for section in text.split("\n### ").skip(1) {
        let Some(obj) = section
            .lines()
            .next()
            .and_then(|h| h.strip_prefix("pe -lines -nested "))
        else {
            continue;
        };
        let obj = u64::from_str_radix(obj.trim(), 16).expect("the section's object");
        let mut frames = Vec::new();
        for l in section
            .lines()
            .skip_while(|l| !l.starts_with("StackTrace (generated):"))
            .take_while(|l| !l.starts_with("StackTraceString:"))
        {
            let mut parts = l.trim_start().splitn(3, ' ');
            let (Some(sp), Some(ip), Some(rest)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let (Ok(sp), Ok(ip)) = (u64::from_str_radix(sp, 16), u64::from_str_radix(ip, 16))
            else {
                continue;
            };
            let rest = rest.trim_end();
            let (func, line) = match rest
                .strip_suffix(']')
                .and_then(|r| r.rfind(" [").map(|i| (&r[..i], &r[i + 2..])))
                .and_then(|(f, inner)| {
                    let (file, n) = inner.rsplit_once(" @ ")?;
                    Some((f, Some((file.to_string(), n.parse().ok()?))))
                }) {
                Some((f, l)) => (f.to_string(), l),
                None => (rest.to_string(), None),
            };
            frames.push(SosPeFrame { sp, ip, func, line });
        }
        out.push((obj, frames));
    }
    out
}

/// `printexception -lines` against SOS's `pe -lines` (dumps/tools/sos_pdb.py records it for
/// each exception `clrthreads` lists as a thread's last thrown one, and for their inner
/// exceptions): the same frames, each with SOS's `[file @ line]` or, where SOS printed none,
/// none; in the JSON (`source_file`, `source_line`) and in the text. SOS prints a hardware
/// exception's IPs one higher than recorded (its x64 "counterhack", strike.cpp
/// FormatGeneratedException); the JSON's `ip` is as recorded, so the IPs are compared so; the
/// text shows SOS's.
#[test]
fn exception_frame_lines_equal_sos_pe_lines() {
    if tests::clean_room() {
        eprintln!("the clean room reads no PDB file: nothing to compare");
        return;
    }
    let dir = tests::dumps_dir();
    let known = tests::names();
    let (mut exceptions, mut with_lines, mut without, mut hardwares) = (0, 0, 0, 0);
    let mut diffs = Vec::new();
    for name in &known {
        let Ok(text) = std::fs::read_to_string(dir.join(format!("{name}.sos-lines.txt"))) else {
            continue;
        };
        let sos = sos_pe(&text);
        if sos.is_empty() {
            continue;
        }
        let e = tests::entry(name);
        let discover = clrdata::DiscoverOptions {
            pdb_dirs: vec![dir.join("pdbs")],
            ..tests::discover_options()
        };
        let s = commands::Session::open_with(&e.dump_path(), &e.open_options())
            .unwrap_or_else(|err| panic!("{name}: {err}"))
            .with_discover_options(discover);
        for (obj, frames) in &sos {
            exceptions += 1;
            let (out, _) = commands::execute(&s, &format!("printexception -lines {obj:#x}"))
                .unwrap_or_else(|err| panic!("{name}: pe {obj:#x}: {err}"))
                .unwrap();
            let text = &out.text;
            let ex = &out.data["exceptions"][0];
            // Ours: SOS's IsAsyncException; SOS's own verdict shows in its printed IPs,
            // compared below.
            let hardware = ex["hardware"].as_bool().unwrap();
            hardwares += usize::from(hardware);
            let ours = ex["stack_trace"].as_array().unwrap();
            if ours.len() != frames.len() {
                diffs.push(format!(
                    "{name} {obj:#x}: {} frames, SOS {}",
                    ours.len(),
                    frames.len()
                ));
                continue;
            }
            for (o, sf) in ours.iter().zip(frames) {
                let sp =
                    u64::from_str_radix(o["sp"].as_str().unwrap().trim_start_matches("0x"), 16)
                        .unwrap();
                let ip =
                    u64::from_str_radix(o["ip"].as_str().unwrap().trim_start_matches("0x"), 16)
                        .unwrap();
                let shown = if hardware { ip + 1 } else { ip };
                if (sp, shown) != (sf.sp, sf.ip) {
                    diffs.push(format!(
                        "{name} {obj:#x}: frame SP {sp:#x} IP {ip:#x}, SOS {:#x} {:#x} ({})",
                        sf.sp, sf.ip, sf.func
                    ));
                    continue;
                }
                let got = o["source_file"]
                    .as_str()
                    .map(str::to_string)
                    .zip(o["source_line"].as_u64().map(|l| l as u32));
                if got != sf.line {
                    diffs.push(format!(
                        "{name} {obj:#x} {}: SOS {:?}, ours {got:?} (IL {}, {})",
                        sf.func, sf.line, o["il_offset"], o["source_note"]
                    ));
                    continue;
                }
                if let Some((file, line)) = &got {
                    let shown = format!(" [{file} @ {line}]\n");
                    let in_text = text.lines().any(|l| {
                        l.contains(&format!("{:X}", sf.ip)) && format!("{l}\n").ends_with(&shown)
                    });
                    if !in_text {
                        diffs.push(format!("{name} {obj:#x} {}: not in the text", sf.func));
                    }
                    with_lines += 1;
                } else {
                    without += 1;
                }
            }
        }
    }
    eprintln!(
        "{exceptions} exceptions ({hardwares} hardware): {with_lines} frames with SOS's file and \
         line, {without} without a line in both"
    );
    assert!(
        diffs.is_empty(),
        "{} frames differ from SOS's pe -lines:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
    assert!(exceptions >= 6, "only {exceptions} exceptions compared");
    assert!(
        hardwares >= 2,
        "only {hardwares} hardware exceptions compared"
    );
    assert!(
        with_lines >= 20,
        "only {with_lines} frames with lines compared"
    );
}

/// A triage stack: its threads, frames and their lines.
type TriageStack = (
    Vec<u64>,
    Vec<String>,
    Vec<Option<commands::triage::FrameLine>>,
);

/// Each thread's frames with a line, innermost first, as (file, line, method).
type ThreadLines = HashMap<u64, Vec<(String, u32, String)>>;

/// SOS's `clrstack -all` lines per thread: the frames it printed with `[file @ line]`.
fn sos_thread_lines(sos: &HashMap<u64, Vec<SosFrame>>) -> ThreadLines {
    sos.iter()
        .map(|(os, frames)| {
            let v = frames
                .iter()
                .filter_map(|f| {
                    let (file, line) = f.line.clone()?;
                    let method = f.text.rfind(" [").map(|i| &f.text[..i]).unwrap_or(&f.text);
                    Some((file, line, method.to_string()))
                })
                .collect();
            (*os, v)
        })
        .collect()
}

/// `pstacks -lines`'s tree unfolded per thread: each thread's frames with a line, innermost
/// first.
fn pstacks_thread_lines(roots: &[serde_json::Value]) -> ThreadLines {
    fn visit(n: &serde_json::Value, out: &mut ThreadLines) {
        if let (Some(file), Some(line)) = (n["source_file"].as_str(), n["source_line"].as_u64()) {
            for t in n["threads"].as_array().unwrap() {
                out.entry(t.as_u64().unwrap()).or_default().push((
                    file.to_string(),
                    line as u32,
                    n["method"].as_str().unwrap().to_string(),
                ));
            }
        }
        for c in n["children"].as_array().unwrap() {
            visit(c, out);
        }
    }
    let mut out = ThreadLines::new();
    for r in roots {
        visit(r, &mut out);
    }
    for v in out.values_mut() {
        v.reverse();
    }
    out
}

/// `pstacks -lines` and triage's top stacks against SOS's `clrstack -all` lines: every
/// thread's frames with a line, innermost first, are SOS's frames with `[file @ line]` for that
/// thread (same documents and lines, in order; frames SOS printed without a line have none).
/// Triage's stacks list only the merged stacks holding the most threads and the crashing
/// thread's: each of their threads is compared.
#[test]
fn pstacks_and_triage_lines_equal_sos_clrstack() {
    if tests::clean_room() {
        eprintln!("the clean room reads no PDB file: nothing to compare");
        return;
    }
    let dir = tests::dumps_dir();
    let (mut dumps, mut threads, mut triage_threads, mut lines) = (0, 0, 0, 0);
    let mut diffs = Vec::new();
    for name in &tests::names() {
        if DEBUG_INFO_NOT_IN_DUMP.contains(&name.as_str()) {
            continue; // frames without debug info, listed in frame_lines_equal_sos
        }
        let Ok(text) = std::fs::read_to_string(dir.join(format!("{name}.sos-lines.txt"))) else {
            continue;
        };
        let mut stacks = sos_stacks(&text);
        // Threads holding a frame SOS looks up at its return address (frame_lines_equal_sos
        // checks those frames): their SOS lines are not the frames' own.
        let skipped: Vec<u64> = stacks
            .iter()
            .filter(|(_, frames)| {
                frames
                    .iter()
                    .any(|f| SOS_LOOKS_UP_RETURN_ADDRESS.contains(&(name.as_str(), f.sp, f.ip)))
            })
            .map(|(os, _)| *os)
            .collect();
        stacks.retain(|os, _| !skipped.contains(os));
        let sos = sos_thread_lines(&stacks);
        let e = tests::entry(name);
        let discover = clrdata::DiscoverOptions {
            pdb_dirs: vec![dir.join("pdbs")],
            ..tests::discover_options()
        };
        let s = commands::Session::open_with(&e.dump_path(), &e.open_options())
            .unwrap_or_else(|err| panic!("{name}: {err}"))
            .with_discover_options(discover.clone());
        let (out, _) = commands::execute(&s, "pstacks -lines")
            .unwrap_or_else(|err| panic!("{name}: pstacks -lines: {err}"))
            .unwrap();
        let ptext = &out.text;
        dumps += 1;
        let ours = pstacks_thread_lines(out.data["roots"].as_array().unwrap());
        let key = |v: &[(String, u32, String)]| -> Vec<(String, u32)> {
            v.iter().map(|(f, l, _)| (f.clone(), *l)).collect()
        };
        for (os, want) in &sos {
            let got = ours.get(os).map(Vec::as_slice).unwrap_or(&[]);
            if key(got) != key(want) {
                diffs.push(format!(
                    "{name} pstacks thread {os:#x}: SOS {want:?}, ours {got:?}"
                ));
            }
            threads += 1;
            lines += want.len();
            for (file, line, m) in got {
                if !ptext.contains(&format!("{m} [{file} @ {line}]")) {
                    diffs.push(format!(
                        "{name} pstacks: {m} [{file} @ {line}] not in the text"
                    ));
                }
            }
        }
        for os in ours
            .keys()
            .filter(|os| !sos.contains_key(os) && !skipped.contains(os))
        {
            diffs.push(format!(
                "{name} pstacks thread {os:#x}: lines, SOS has no such thread"
            ));
        }

        let t = commands::triage::triage_with(&e.dump_path(), &e.open_options(), &discover);
        let ttext = commands::triage::render(&t);
        let mut stacks: Vec<TriageStack> = t
            .top_stacks
            .iter()
            .map(|m| (m.threads.clone(), m.frames.clone(), m.lines.clone()))
            .collect();
        if let Some(os) = t.dump_exception.as_ref().map(|x| u64::from(x.thread_id)) {
            stacks.push((
                vec![os],
                t.crash_thread_frames.clone(),
                t.crash_thread_lines.clone(),
            ));
        }
        for (ids, frames, flines) in &stacks {
            assert_eq!(frames.len(), flines.len(), "{name}: a line per frame");
            let got: Vec<(String, u32)> = flines
                .iter()
                .flatten()
                .map(|l| (l.source_file.clone(), l.source_line))
                .collect();
            // A stack merges threads by method: where its threads' lines differ, the frame
            // has none, so each thread's SOS lines hold the stack's in order, and equal them
            // when all its threads are at the same lines.
            let wants: Vec<Vec<(String, u32)>> = ids
                .iter()
                .map(|os| sos.get(os).map(|v| key(v)).unwrap_or_default())
                .collect();
            let same = wants.windows(2).all(|w| w[0] == w[1]);
            let holds = |want: &Vec<(String, u32)>| {
                let mut it = want.iter();
                got.iter().all(|g| it.any(|w| w == g))
            };
            for (os, want) in ids.iter().zip(&wants) {
                if skipped.contains(os) {
                    continue;
                }
                if if same { got != *want } else { !holds(want) } {
                    diffs.push(format!(
                        "{name} triage thread {os:#x}: SOS {want:?}, ours {got:?}"
                    ));
                }
                triage_threads += 1;
            }
        }
        // The text shows the top stacks' first frames with their lines.
        for m in &t.top_stacks {
            for (f, l) in m.frames.iter().zip(&m.lines).take(4) {
                if let Some(l) = l {
                    let shown = format!("{f} [{} @ {}]", l.source_file, l.source_line);
                    if !ttext.contains(&shown) {
                        diffs.push(format!("{name} triage: {shown} not in the text"));
                    }
                }
            }
        }
    }
    eprintln!(
        "{dumps} dumps: {threads} threads' pstacks lines ({lines} frames with a line), \
         {triage_threads} triage stack threads compared with SOS's clrstack"
    );
    assert!(
        diffs.is_empty(),
        "{} differ from SOS:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
    assert!(dumps >= 20 && lines >= 300, "{dumps} dumps, {lines} lines");
}
