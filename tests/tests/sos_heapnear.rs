//! `listnearobj`, `dumpheap -thinlock` and `analyzeoom` against SOS: the truth
//! `dumps/<name>.sos-heapnear.txt`, written by dumps/tools/sos_heapnear.py with dotnet-dump
//! 10.0.750501 and each build's own DAC (the listnearobj addresses chosen from SOS's own
//! `dumpheap` and `eeheap -gc` output: an object, an address inside one, inside a free object,
//! unaligned, past a segment's allocated end, on no segment). Every corpus dump with the truth
//! is checked, line by line.
//!
//! Type names: SOS (ClrMD) writes a generic type as C# does (`List<System.String>`) and a
//! nested type with `+`; dumpshell's C# style (`set typenames csharp`, what the front ends
//! apply to the text: `commands::style::to_csharp`) writes the same names with `.` for
//! nesting: lines are compared with `+` read as `.` (no other `+` is printed).
//!
//! `dumpheap -thinlock`'s Recursion: SOS 10.0.750501's ClrMD decodes the header word with the
//! masks of the runtimes before .NET 8 (thread id `0x3FF`, level `(h & 0xFC00) >> 10`) when the
//! thread found through that id exists, so it prints 0 for a lock taken three times on .NET 8+
//! (whose header keeps the level in bits 16-21: `SBLK_MASK_LOCK_RECLEVEL` 0x3F0000). dumpshell
//! prints the runtime's level: the test checks SOS's column is the old decoding of the header
//! word, dumpshell's the runtime's, and that the latter is the scenario's acquisitions less one
//! (manifest `locks[]`, kind `thin-lock`); the other columns are compared exactly.

use commands::Session;
use serde_json::Value;

fn session(e: &tests::Entry) -> Session {
    Session::open_with(&e.dump_path(), &e.open_options()).unwrap()
}

fn run(s: &Session, line: &str) -> (Value, String) {
    let (out, _) = commands::execute(s, line)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .unwrap();
    (out.json_document()["result"].clone(), out.text.clone())
}

/// The text's lines without `#` comment lines (the truth notes why an address was chosen),
/// trailing blanks and blank lines, `+` read as `.`.
fn lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with("# ") && !l.trim().is_empty())
        .map(|l| l.trim_end().replace('+', "."))
        .collect()
}

fn truths() -> Vec<(tests::Entry, Vec<(String, String)>)> {
    let v = tests::sos::dumps_with("sos-heapnear");
    assert!(v.len() >= 8, "the sos-heapnear truths are missing");
    v
}

#[test]
fn listnearobj_is_sos() {
    let mut checked = 0;
    for (e, secs) in truths() {
        let s = session(&e);
        for (cmd, text) in secs.iter().filter(|(c, _)| c.starts_with("listnearobj ")) {
            let (_, ours) = run(&s, cmd);
            let ours = commands::style::to_csharp(&ours).into_owned();
            assert_eq!(
                lines(&ours),
                lines(text),
                "{}: {cmd}\n--- ours:\n{ours}--- SOS:\n{text}",
                e.name
            );
            checked += 1;
        }
    }
    assert!(checked >= 50, "only {checked} listnearobj truths");
}

#[test]
fn analyzeoom_is_sos() {
    for (e, secs) in truths() {
        let s = session(&e);
        let (_, text) = secs
            .iter()
            .find(|(c, _)| c == "analyzeoom")
            .unwrap_or_else(|| panic!("{}: no analyzeoom truth", e.name));
        let (json, ours) = run(&s, "analyzeoom");
        assert_eq!(lines(&ours), lines(text), "{}", e.name);
        assert_eq!(
            json["heaps"].as_array().map(Vec::len),
            Some(0),
            "{}",
            e.name
        );
    }
}

/// The header word (the 32 bits before the object), read with `dd`.
fn header(s: &Session, obj: u64) -> u32 {
    let (_, t) = run(s, &format!("dd {:x} L1", obj - 4));
    let w = t.split_whitespace().nth(1).expect("dd's value");
    u32::from_str_radix(w, 16).unwrap()
}

#[test]
fn dumpheap_thinlock_is_sos() {
    let mut locks = 0;
    for (e, secs) in truths() {
        let s = session(&e);
        let (_, text) = secs
            .iter()
            .find(|(c, _)| c == "dumpheap -thinlock")
            .unwrap_or_else(|| panic!("{}: no dumpheap -thinlock truth", e.name));
        let (json, ours) = run(&s, "dumpheap -thinlock");
        let (sos, mine) = (lines(text), lines(&ours));
        assert_eq!(mine.len(), sos.len(), "{}:\n{ours}--- SOS:\n{text}", e.name);
        let rows = json["thin_locks"].as_array().unwrap();
        for (i, (a, b)) in mine.iter().zip(&sos).enumerate() {
            let (wa, wb): (Vec<&str>, Vec<&str>) = (
                a.split_whitespace().collect(),
                b.split_whitespace().collect(),
            );
            assert_eq!(wa.len(), 4, "{}: {a}", e.name);
            assert_eq!(wa[..3], wb[..3], "{}: {a} / SOS {b}", e.name);
            if i == 0 {
                assert_eq!(a, b, "{}: the header", e.name);
                continue;
            }
            // Same layout of the line: each column ends where SOS's does.
            assert_eq!(a.len(), b.len(), "{}: {a} / SOS {b}", e.name);
            let obj = u64::from_str_radix(wa[0], 16).unwrap();
            let h = header(&s, obj);
            assert_eq!(wb[3], ((h & 0xFC00) >> 10).to_string(), "{}: SOS's", e.name);
            assert_eq!(wa[3], ((h >> 16) & 0x3F).to_string(), "{}: ours", e.name);
            let row = &rows[i - 1];
            assert_eq!(row["thread_id"].as_u64(), Some((h & 0xFFFF) as u64));
            let acquisitions = e.manifest["locks"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|l| l["kind"] == "thin-lock")
                .and_then(|l| l["acquisitions"].as_u64());
            if let Some(n) = acquisitions {
                assert_eq!(row["recursion"].as_u64(), Some(n - 1), "{}", e.name);
            }
            locks += 1;
        }
    }
    assert!(locks >= 3, "only {locks} thin locks compared");
}
