//! Arguments and locals of managed frames against SOS's own (`dumps/<name>.sos-locals.txt`:
//! `clrstack -a -all` by dotnet-dump, the DAC path, dumps/pdbs/README.md): for every thread and
//! every managed frame SOS listed (matched by Child SP and IP as printed), ours has the same
//! arguments and locals in the same order, each with the same name (arguments), the same
//! location (the stack address, `<CLR reg>`, or none: `<no data>`) and the same value as SOS
//! prints it. Local names, which SOS's DAC path does not print, are compared with its
//! ICorDebug path (`clrstack -i -a`, per thread): every frame's arguments and locals by name
//! and count (SOS's `local_<n>` where the PDB names none).

use clrdata::model::stack::source::SourceLines;
use clrdata::model::stack::vars::{frame_vars, FrameVar, VarPlace};
use clrdata::model::stack::{FrameKind, StackWalker};
use std::collections::HashMap;

/// One argument or local line of SOS's PARAMETERS or LOCALS block.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SosVar {
    /// The argument's name (SOS prints none for locals).
    name: Option<String>,
    /// `Some(Some(addr))` a stack address, `Some(None)` `<CLR reg>`, `None` no location printed.
    location: Option<Option<u64>>,
    /// The value printed; `None` for `<no data>`.
    value: Option<u64>,
}

#[derive(Debug, Default)]
struct SosFrame {
    sp: u64,
    ip: u64,
    text: String,
    args: Vec<SosVar>,
    locals: Vec<SosVar>,
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// `[name ][(loc) ]= value` (arguments) or `[loc ]= value` / `value` (locals).
fn parse_var(line: &str, is_arg: bool) -> SosVar {
    let line = line.trim();
    let (head, val) = match line.rsplit_once("= ") {
        Some((h, v)) => (h.trim(), v.trim()),
        None => ("", line),
    };
    let value = if val == "<no data>" {
        None
    } else {
        Some(hex(val).unwrap_or_else(|| panic!("value {val:?} in {line:?}")))
    };
    let mut name = None;
    let mut location = None;
    if is_arg {
        let (n, loc) = match head.rfind(" (") {
            Some(i) if head.ends_with(')') => (&head[..i], Some(&head[i + 2..head.len() - 1])),
            _ if head.starts_with('(') && head.ends_with(')') => {
                ("", Some(&head[1..head.len() - 1]))
            }
            _ => (head, None),
        };
        if !n.is_empty() {
            name = Some(n.to_string());
        }
        location = loc.map(|l| if l == "<CLR reg>" { None } else { hex(l) });
    } else if !head.is_empty() {
        location = Some(if head == "<CLR reg>" { None } else { hex(head) });
    }
    SosVar {
        name,
        location,
        value,
    }
}

/// The `### clrstack -a -all` section: managed frames with their blocks, per OS thread id.
fn sos_stacks(text: &str) -> HashMap<u64, Vec<SosFrame>> {
    let mut out: HashMap<u64, Vec<SosFrame>> = HashMap::new();
    let mut in_section = false;
    let mut thread = None;
    let mut block = 0; // 1 parameters, 2 locals
    for l in text.lines() {
        if let Some(cmd) = l.strip_prefix("### ") {
            in_section = cmd.trim() == "clrstack -a -all";
            continue;
        }
        if !in_section {
            continue;
        }
        if let Some(id) = l.strip_prefix("OS Thread Id: 0x") {
            thread = u64::from_str_radix(id.split_whitespace().next().unwrap_or(""), 16).ok();
            block = 0;
            continue;
        }
        let Some(t) = thread else { continue };
        match l.trim() {
            "PARAMETERS:" => {
                block = 1;
                continue;
            }
            "LOCALS:" => {
                block = 2;
                continue;
            }
            "" => {
                block = 0;
                continue;
            }
            _ => {}
        }
        if block != 0 && l.starts_with("        ") {
            let f = out.get_mut(&t).and_then(|v| v.last_mut()).expect("a frame");
            let v = parse_var(l, block == 1);
            if block == 1 {
                f.args.push(v);
            } else {
                f.locals.push(v);
            }
            continue;
        }
        let mut parts = l.splitn(3, ' ');
        let (Some(sp), Some(ip), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (Some(sp), Some(ip)) = (hex(sp), hex(ip)) else {
            continue;
        };
        block = 0;
        out.entry(t).or_default().push(SosFrame {
            sp,
            ip,
            text: rest.trim_end().to_string(),
            ..Default::default()
        });
    }
    out
}

/// Ours in SOS's terms.
fn as_sos(v: &FrameVar, is_arg: bool) -> SosVar {
    let location = match v.locations.as_slice() {
        [VarPlace::Memory { address }] => Some(Some(*address)),
        [VarPlace::Register { .. }] => Some(None),
        _ => None,
    };
    SosVar {
        name: if is_arg { v.name.clone() } else { None },
        location,
        value: if v.locations.is_empty() {
            None
        } else {
            v.value
        },
    }
}

/// Dumps on which SOS's lists stop short: the DAC's GetArgumentByIndex and
/// GetLocalVariableByIndex fail part way through a frame's list (a `createdump --triage` dump
/// lacks most of the runtime's memory), and SOS prints the arguments and locals before the
/// failure only (ShowArgs nothing more, ShowLocals an empty line). There SOS's list must be the
/// start of ours, each equal: what SOS shows is compared, what it cannot show is counted.
const SOS_STOPS_SHORT: &[&str] = &["hang-net8-triage"];

#[test]
fn frame_arguments_and_locals_equal_sos() {
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
                .strip_suffix(".sos-locals.txt")
                .map(str::to_string)
        })
        .collect();
    truths.sort();
    let known = tests::names();
    let (mut dumps, mut frames, mut vars, mut values, mut no_data) = (0, 0, 0, 0, 0);
    let (mut stale_names, mut cut_short) = (0, 0);
    let mut diffs = Vec::new();
    for name in &truths {
        if !known.contains(name) {
            continue;
        }
        let text = std::fs::read_to_string(dir.join(format!("{name}.sos-locals.txt"))).unwrap();
        let sos = sos_stacks(&text);
        assert!(!sos.is_empty(), "{name}: no clrstack -a -all section");
        // SOS must have known the runtime's version (as in tests/tests/source_lines.rs).
        let version = text
            .lines()
            .take_while(|l| l.starts_with('#'))
            .find_map(|l| l.strip_prefix("# runtime as SOS knows it: "));
        assert!(
            version.is_some_and(|v| v != "0.0"),
            "{name}: SOS did not know the runtime's version ({version:?}): re-record the truth \
             with dumps/tools/sos_pdb.py --locals"
        );
        let d = tests::entry(name).open();
        let rt = tests::discover(&d).unwrap_or_else(|err| panic!("{name}: {err}"));
        let names = clrdata::TypeNames::new();
        let w = StackWalker::for_target(&rt, &names);
        let stacks = w.walk_all().unwrap_or_else(|err| panic!("{name}: {err}"));
        let lines = SourceLines::new(vec![dir.join("pdbs")], false, true);
        dumps += 1;
        for (os, sframes) in &sos {
            let Some(ours) = stacks.iter().find(|s| s.os_id == *os) else {
                diffs.push(format!("{name}: thread {os:#x} not walked"));
                continue;
            };
            for sf in sframes.iter().filter(|f| !f.text.starts_with('[')) {
                let Some(of) = ours
                    .frames
                    .iter()
                    .find(|f| f.kind == FrameKind::Managed && f.sp == sf.sp && f.ip == sf.ip)
                else {
                    diffs.push(format!(
                        "{name}: thread {os:#x}: no managed frame of ours at SP {:#x} IP {:#x} ({})",
                        sf.sp, sf.ip, sf.text
                    ));
                    continue;
                };
                let fv = match frame_vars(&lines, &w, of) {
                    Ok(v) => v,
                    Err(e) => {
                        diffs.push(format!("{name}: {}: {e}", sf.text));
                        continue;
                    }
                };
                frames += 1;
                for (kind, s, o, is_arg) in [
                    ("argument", &sf.args, &fv.arguments, true),
                    ("local", &sf.locals, &fv.locals, false),
                ] {
                    let mut ours: Vec<SosVar> = o.iter().map(|v| as_sos(v, is_arg)).collect();
                    if SOS_STOPS_SHORT.contains(&name.as_str()) && ours.len() > s.len() {
                        // SOS's list stopped where the DAC failed: what it shows is compared.
                        cut_short += ours.len() - s.len();
                        ours.truncate(s.len());
                    }
                    if ours.len() != s.len() {
                        diffs.push(format!(
                            "{name}: thread {os:#x} {}: {} {kind}s, SOS {}: ours {ours:?}, SOS {s:?} ({:?})",
                            sf.text,
                            ours.len(),
                            s.len(),
                            fv.notes
                        ));
                        continue;
                    }
                    for (i, (a, b)) in ours.iter().zip(s.iter()).enumerate() {
                        vars += 1;
                        // SOS's ShowArgs (strike.cpp) reuses one name buffer for every
                        // argument and prints it when its first character is not 0; the DAC's
                        // GetArgumentByIndex (stack.cpp) writes nothing there for an argument
                        // of a method with metadata but no Param row (FindParamOfMethod
                        // fails), so SOS prints the preceding argument's name again
                        // (names-net10/11: the Reflection.Emit `Worker.Run(string)` defined
                        // without DefineParameter, dumps/scenarios/names.cs, shows `this`
                        // twice; SOS's ICorDebug walk names it `param_1`). Only the name may
                        // differ, only for an argument we find no name for, and only when
                        // SOS's is the preceding one's.
                        let stale_name = is_arg
                            && i > 0
                            && a.name.is_none()
                            && b.name.is_some()
                            && b.name == s[i - 1].name
                            && SosVar {
                                name: b.name.clone(),
                                ..a.clone()
                            } == *b;
                        if stale_name {
                            stale_names += 1;
                            eprintln!(
                                "{name}: thread {os:#x} {}: argument {i} has no Param row; SOS \
                                 repeats the preceding name {:?} (its stale buffer)",
                                sf.text, b.name
                            );
                        }
                        if a == b || stale_name {
                            if b.value.is_some() {
                                values += 1;
                            } else {
                                no_data += 1;
                            }
                        } else {
                            diffs.push(format!(
                                "{name}: thread {os:#x} SP {:#x} {}: {kind} {i}: ours {a:?} ({:?}), SOS {b:?}",
                                sf.sp, sf.text, o[i]
                            ));
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "{dumps} dumps, {frames} managed frames: {vars} arguments and locals equal to SOS's \
         ({values} with a value, {no_data} <no data>; {stale_names} names SOS repeated from \
         the preceding argument; {cut_short} of ours past where SOS's list stopped short)"
    );
    assert!(
        diffs.is_empty(),
        "{} differences from SOS:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
    assert!(dumps >= 9, "only {dumps} dumps compared");
}

/// The `clrstack -i -a` sections: per frame (Child SP, IP as printed), the names SOS printed
/// for its parameters and locals, in order.
fn icordebug_frames(text: &str) -> Vec<(u64, u64, String, Vec<String>, Vec<String>)> {
    let mut out: Vec<(u64, u64, String, Vec<String>, Vec<String>)> = Vec::new();
    let mut in_section = false;
    let mut block = 0;
    for l in text.lines() {
        if let Some(cmd) = l.strip_prefix("### ") {
            in_section = cmd.trim().ends_with("clrstack -i -a");
            continue;
        }
        if !in_section {
            continue;
        }
        if l.starts_with("PARAMETERS:") {
            block = 1;
            continue;
        }
        if l.starts_with("LOCALS:") {
            block = 2;
            continue;
        }
        if let Some(item) = l.strip_prefix("  + ") {
            let name = if let Some(i) = item.find(" retrieving ") {
                item[i..].split('\'').nth(1).unwrap_or_default().to_string()
            } else {
                // `<type> <name>  + (Error 0x... printing parameter N)`: a value SOS could not
                // print (crashasync-net11's CallEntryPoint).
                let end = [" = ", " @ ", "   (", "  + ("]
                    .iter()
                    .filter_map(|sep| item.find(sep))
                    .min()
                    .unwrap_or(item.len());
                item[..end]
                    .split_whitespace()
                    .last()
                    .unwrap_or_default()
                    .to_string()
            };
            let f = out.last_mut().expect("a frame");
            if block == 1 {
                f.3.push(name);
            } else if block == 2 {
                f.4.push(name);
            }
            continue;
        }
        let split = |l: &str| -> Option<(u64, u64, String)> {
            let mut parts = l.splitn(3, ' ');
            let (sp, ip, rest) = (parts.next()?, parts.next()?, parts.next()?);
            Some((hex(sp)?, hex(ip)?, rest.to_string()))
        };
        let Some((mut sp, mut ip, mut rest)) = split(l) else {
            continue;
        };
        // A frame that is neither an IL frame nor an internal one (a dynamic method's, which
        // has no debug info): SOS's ICorDebug walk prints its SP and IP and nothing else, not
        // even a line end (strike.cpp
        // ClrStackImplWithICorDebug::ClrStackFromPublicInterface), so the next frame
        // follows on the same line. It has no PARAMETERS or LOCALS block.
        while let Some(next) = split(&rest) {
            (sp, ip, rest) = next;
        }
        block = 0;
        if rest.starts_with('[') && !rest.starts_with("[NativeStackFrame]") {
            out.push((sp, ip, rest, Vec::new(), Vec::new()));
        }
    }
    out
}

#[test]
fn frame_variable_names_equal_sos_icordebug_walk() {
    if tests::clean_room() {
        eprintln!("the clean room reads no PDB file: nothing to compare");
        return;
    }
    let dir = tests::dumps_dir();
    let known = tests::names();
    let (mut dumps, mut frames, mut names) = (0, 0, 0);
    let mut diffs = Vec::new();
    for name in known {
        let path = dir.join(format!("{name}.sos-locals.txt"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let sos = icordebug_frames(&text);
        assert!(!sos.is_empty(), "{name}: no clrstack -i -a section");
        let d = tests::entry(&name).open();
        let rt = tests::discover(&d).unwrap_or_else(|err| panic!("{name}: {err}"));
        let tn = clrdata::TypeNames::new();
        let w = StackWalker::for_target(&rt, &tn);
        let stacks = w.walk_all().unwrap_or_else(|err| panic!("{name}: {err}"));
        let lines = SourceLines::new(vec![dir.join("pdbs")], false, true);
        dumps += 1;
        for (sp, ip, text, args, locals) in &sos {
            let Some(of) = stacks
                .iter()
                .flat_map(|s| &s.frames)
                .find(|f| f.kind == FrameKind::Managed && f.sp == *sp && f.ip == *ip)
            else {
                diffs.push(format!(
                    "{name}: no managed frame of ours at SP {sp:#x} IP {ip:#x} ({text})"
                ));
                continue;
            };
            let fv = match frame_vars(&lines, &w, of) {
                Ok(v) => v,
                Err(e) => {
                    diffs.push(format!("{name}: {text}: {e}"));
                    continue;
                }
            };
            frames += 1;
            let ours_args: Vec<String> = fv
                .arguments
                .iter()
                // SOS names an argument without a Param row `param_<IL index>` (strike.cpp
                // ClrStackImplWithICorDebug::PrintParameters).
                .map(|a| {
                    a.name
                        .clone()
                        .unwrap_or_else(|| format!("param_{}", a.index))
                })
                .collect();
            let ours_locals: Vec<String> = fv
                .locals
                .iter()
                .map(|l| {
                    l.name
                        .clone()
                        .unwrap_or_else(|| format!("local_{}", l.index))
                })
                .collect();
            for (kind, o, s) in [
                ("arguments", &ours_args, args),
                ("locals", &ours_locals, locals),
            ] {
                if o == s {
                    names += o.len();
                } else {
                    diffs.push(format!("{name}: {text}: {kind} ours {o:?}, SOS {s:?}"));
                }
            }
        }
    }
    eprintln!("{dumps} dumps, {frames} frames of SOS's ICorDebug walk: {names} argument and local names equal");
    assert!(
        diffs.is_empty(),
        "{} differences from SOS:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
    assert!(
        dumps >= 9 && names > 100,
        "only {dumps} dumps, {names} names compared"
    );
}
