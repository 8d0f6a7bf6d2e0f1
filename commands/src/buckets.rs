//! Buckets: a stable signature per dump, so that many dumps of one bug fall together
//! (`dumpshell triage --buckets`, `dumpshell buckets`). The rules, and the cases that must
//! and must not share a bucket, are in docs/buckets.md.
//!
//! In the spirit of Windows Error Reporting's clr20r3 buckets (exception type and the faulting
//! method), Sentry's fingerprints (exception type and the app's own "in-app" frames) and
//! Backtrace's frame rules: what identifies a bug is what the app's code did, not where the
//! process happened to be loaded, which thread ids it had, or what the message said.
//!
//! - crash (the dump records an exception or fatal signal): the exception's type and the
//!   innermost frames of the app's own code in its trace (else on the crashing thread's
//!   stack; else, when no frame is the app's, the innermost frames there are);
//! - deadlock (a Monitor cycle and no crash): each lock's type with the method that waits
//!   for it, sorted (the thread order of a cycle is arbitrary);
//! - hang (neither): what the most threads wait in (on the merged stack holding the most
//!   threads, the framework call the app's innermost frame made: `Monitor.Wait`, not the
//!   runtime's frames below it, which differ between versions) with that stack's innermost app
//!   frames, and what the largest group of pending async chains waits for.
//!
//! Frames are normalised ([`normalize_frame`]): no module prefix, address, offset, file or
//! line; a generic instantiation's arguments dropped, its arity kept.

use crate::triage::{is_framework_frame, Triage};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// The version of these rules: a store keeps signatures made by the same rules only (a dump
/// signed by other rules is read again). Raise it when a signature's text or what a record
/// holds changes (2: the app's version and the minidump's own time; 3: parameter names dropped).
pub const RULES_VERSION: u32 = 3;

/// How many frames a signature keeps.
pub const SIGNATURE_FRAMES: usize = 3;

/// What kind of problem a dump shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum BucketKind {
    /// The dump records an exception or fatal signal.
    Crash,
    /// A Monitor deadlock and no crash.
    Deadlock,
    /// Neither: the process was dumped while running (or hung).
    Hang,
    /// The runtime could not be read (the dump opened): only the dump's own exception record
    /// and the runtime's version are in the signature.
    RuntimeNotRead,
}

impl BucketKind {
    /// The word the signature text starts with.
    pub fn word(self) -> &'static str {
        match self {
            BucketKind::Crash => "crash",
            BucketKind::Deadlock => "deadlock",
            BucketKind::Hang => "hang",
            BucketKind::RuntimeNotRead => "runtime not read",
        }
    }
}

/// A dump's signature: the bucket it falls in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    /// The bucket's id: the first 16 hex digits of the SHA-256 of `text`.
    pub id: String,
    /// Crash, deadlock or hang.
    pub kind: BucketKind,
    /// The whole signature in words (what the id is made from).
    pub text: String,
    /// Crash: the exception's type (`signal 0x6` or `exception 0xc0000005` when no managed
    /// exception is known).
    pub exception_type: Option<String>,
    /// Crash: the innermost frames the signature holds (normalised, innermost first); hang:
    /// the app's innermost frames on the stack the most threads share.
    pub frames: Vec<String>,
    /// Whether `frames` are the app's own (else the innermost frames of any code: no frame was
    /// the app's).
    pub app_frames: bool,
    /// Deadlock: each lock's type and the method waiting for it (`Type in Method`), sorted.
    pub locks: Vec<String>,
    /// Hang: the call the most threads wait in (normalised): on the merged stack holding the
    /// most threads, the frame just outside the app's innermost one, else the innermost.
    pub threads_wait_in: Option<String>,
    /// Hang: what the largest group of pending async chains waits for (causality's cause kind
    /// and the innermost method of its chains).
    pub async_wait: Option<String>,
}

/// A frame without what varies between two dumps of one build and bug: a module prefix
/// (`Module!`), an offset (`+0x1a`), an address, a file and line (` [/src/a.cs @ 12]`, ` in
/// a.cs:line 12`), and a generic instantiation's arguments (`List`1[[System.Int32, ...]]` →
/// `List`1`: the arity stays).
pub fn normalize_frame(f: &str) -> String {
    let mut s = f.trim();
    // file and line
    for marker in [" [", " in ", " @ "] {
        if let Some(k) = s.find(marker) {
            // `[` also opens a generic instantiation in some spellings: only a trailing
            // bracket with a path or line in it is a file.
            let tail = &s[k..];
            if marker != " [" || tail.contains('@') || tail.contains(':') || tail.contains('/') {
                s = &s[..k];
            }
        }
    }
    // module prefix: `Module!Method`, not inside the parameter list
    let paren = s.find('(').unwrap_or(s.len());
    if let Some(k) = s[..paren].find('!') {
        s = &s[k + 1..];
    }
    let mut out = String::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    let mut depth = 0usize;
    while i < b.len() {
        // `[[...]]`: a generic instantiation's arguments
        if b[i] == b'[' && b.get(i + 1) == Some(&b'[') || depth > 0 && b[i] == b'[' {
            depth += 1;
            i += 1;
            continue;
        }
        if depth > 0 {
            if b[i] == b']' {
                depth -= 1;
            }
            i += 1;
            continue;
        }
        // `+0x1a` offsets and bare `0x...` addresses
        if (b[i] == b'+' && b.get(i + 1) == Some(&b'0') && b.get(i + 2) == Some(&b'x'))
            || (b[i] == b'0'
                && b.get(i + 1) == Some(&b'x')
                && (i == 0 || !b[i - 1].is_ascii_alphanumeric()))
        {
            i += if b[i] == b'+' { 3 } else { 2 };
            while i < b.len() && b[i].is_ascii_hexdigit() {
                i += 1;
            }
            continue;
        }
        out.push(b[i] as char);
        i += 1;
    }
    // only ASCII was pushed byte-wise above; keep any other text as it was
    if !s.is_ascii() {
        return s.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    without_parameter_names(&out.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The parameter list with its types only: a stack trace's `ProcessOrder(Order o, Int32 n)` (a
/// NativeAOT crash info's, an exception's recorded trace) → `ProcessOrder(Order, Int32)`, as the
/// runtime's frames name it. A parameter of one word is a type already; commas inside `<...>`
/// or `[...]` do not split.
fn without_parameter_names(f: &str) -> String {
    let (Some(open), true) = (f.find('('), f.ends_with(')')) else {
        return f.to_owned();
    };
    let inner = &f[open + 1..f.len() - 1];
    let mut params = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '<' | '[' | '(' => depth += 1,
            '>' | ']' | ')' => depth -= 1,
            ',' if depth == 0 => {
                params.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    params.push(&inner[start..]);
    let typed: Vec<&str> = params
        .iter()
        .map(|p| {
            let p = p.trim();
            // the last word is the name when the words before it close every bracket
            match p.rfind(' ') {
                Some(k) if !p[k..].contains(['<', '>', '[', ']', ',']) => p[..k].trim_end(),
                _ => p,
            }
        })
        .collect();
    format!("{}({})", &f[..open], typed.join(", "))
}

/// The innermost frames of `frames` that are the app's own, normalised; when none is, the
/// innermost frames of any code (and `false`).
fn signature_frames<'a>(frames: impl Iterator<Item = &'a str> + Clone) -> (Vec<String>, bool) {
    let app: Vec<String> = frames
        .clone()
        .filter(|f| !is_framework_frame(f))
        .take(SIGNATURE_FRAMES)
        .map(normalize_frame)
        .collect();
    if !app.is_empty() {
        return (app, true);
    }
    (
        frames.take(SIGNATURE_FRAMES).map(normalize_frame).collect(),
        false,
    )
}

fn id_of(text: &str) -> String {
    let d = Sha256::digest(text.as_bytes());
    d.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The signature of a triaged dump; `None` when the dump could not be opened (`t.error`).
pub fn signature(t: &Triage) -> Option<Signature> {
    if t.error.is_some() {
        return None;
    }
    let mut sig = Signature {
        id: String::new(),
        kind: BucketKind::Hang,
        text: String::new(),
        exception_type: None,
        frames: Vec::new(),
        app_frames: false,
        locks: Vec::new(),
        threads_wait_in: None,
        async_wait: None,
    };
    let crash_code = t.dump_exception.as_ref().map(|e| {
        if t.os.as_deref() == Some("windows") {
            format!("exception {}", e.code)
        } else {
            format!("signal {}", e.code)
        }
    });
    if t.runtime.is_none() {
        sig.kind = BucketKind::RuntimeNotRead;
        sig.exception_type = crash_code;
        sig.text = format!(
            "{}: {}",
            sig.kind.word(),
            sig.exception_type
                .as_deref()
                .unwrap_or("no exception recorded")
        );
    } else if let Some(code) = crash_code {
        sig.kind = BucketKind::Crash;
        let x = t.current_exception.as_ref();
        sig.exception_type = Some(x.map_or(code, |x| x.type_name.clone()));
        let (frames, app) = match x.filter(|x| !x.app_frames.is_empty()) {
            Some(x) => signature_frames(x.app_frames.iter().map(String::as_str)),
            None => signature_frames(t.crash_thread_frames.iter().map(String::as_str)),
        };
        sig.frames = frames;
        sig.app_frames = app;
        sig.text = format!(
            "crash: {} at {}{}",
            sig.exception_type.as_deref().unwrap_or("?"),
            if sig.frames.is_empty() {
                "(no managed frame)".to_owned()
            } else {
                sig.frames.join(" < ")
            },
            if app || sig.frames.is_empty() {
                ""
            } else {
                " (no frame of the app's own)"
            }
        );
    } else if !t.deadlocks.is_empty() {
        sig.kind = BucketKind::Deadlock;
        let locks: BTreeSet<String> = t
            .deadlocks
            .iter()
            .flat_map(|d| &d.locks)
            .map(|l| {
                format!(
                    "{} in {}",
                    normalize_frame(&l.type_name),
                    l.wait_frame
                        .as_deref()
                        .map_or("?".to_owned(), normalize_frame)
                )
            })
            .collect();
        sig.locks = locks.into_iter().collect();
        sig.text = format!("deadlock: {}", sig.locks.join(" | "));
    } else {
        sig.kind = BucketKind::Hang;
        if let Some(top) = t.top_stacks.first() {
            // The call the app made (the framework frame just outside the app's innermost
            // frame: `Monitor.Wait`, not the runtime-specific frames below it), else the
            // innermost frame.
            let first_app = top.frames.iter().position(|f| !is_framework_frame(f));
            let called = match first_app {
                Some(k) if k > 0 => top.frames.get(k - 1),
                _ => top.frames.first(),
            };
            sig.threads_wait_in = called.map(|f| normalize_frame(f));
            let (frames, app) = signature_frames(top.frames.iter().map(String::as_str));
            sig.frames = frames;
            sig.app_frames = app;
        }
        // The largest group (the first of the largest, in triage's order).
        let mut largest: Option<&crate::triage::AsyncGroup> = None;
        for g in &t.async_groups {
            if largest.is_none_or(|l| g.count > l.count) {
                largest = Some(g);
            }
        }
        sig.async_wait = largest.map(|g| {
            let inner = g
                .stacks
                .first()
                .and_then(|st| st.methods.first())
                .map_or("?".to_owned(), |m| normalize_frame(m));
            format!("{} in {inner}", g.cause)
        });
        let mut parts = Vec::new();
        if let Some(w) = &sig.threads_wait_in {
            parts.push(format!("threads wait in {w}"));
        }
        if !sig.frames.is_empty() && sig.app_frames {
            parts.push(format!("from {}", sig.frames.join(" < ")));
        }
        if let Some(a) = &sig.async_wait {
            parts.push(format!("async chains wait for {a}"));
        }
        if parts.is_empty() {
            parts.push("no managed thread and no pending async chain".into());
        }
        sig.text = format!("hang: {}", parts.join("; "));
    }
    sig.id = id_of(&sig.text);
    Some(sig)
}

/// What a fleet keeps of one dump: where it is, what it is (size and content hash), when it was
/// written, what ran it, and its signature. The store's rows and `--records` lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The dump's path as given.
    pub dump: String,
    /// Its size in bytes.
    pub size: u64,
    /// The SHA-256 of its bytes (hex), when computed.
    pub sha256: Option<String>,
    /// When it was written (seconds since 1970, UTC; [`Triage::dump_time`]).
    pub time: Option<u64>,
    /// Whether [`Record::time`] is the dump's own record (a minidump's header), the same for
    /// every copy; else it is the file's modification time, taken per file.
    #[serde(default)]
    pub time_from_dump: bool,
    /// The app ([`Triage::app`]).
    pub app: Option<String>,
    /// The app's version ([`Triage::app_version`]), when known.
    pub app_version: Option<String>,
    /// The runtime (".NET 8.0.4").
    pub runtime: Option<String>,
    /// Its signature (null when it could not be opened).
    pub signature: Option<Signature>,
    /// Why it could not be read, once (the open error, or the runtime's refusal).
    pub error: Option<String>,
}

impl Record {
    /// The record of a triaged dump.
    pub fn of(t: &Triage, sha256: Option<String>) -> Record {
        Record {
            dump: t.dump.clone(),
            size: t.dump_size.unwrap_or(0),
            sha256,
            time: t.dump_time,
            time_from_dump: t.dump_time_source == Some("dump"),
            app: t.app.clone(),
            app_version: t.app_version.clone(),
            runtime: t.runtime.clone(),
            signature: signature(t),
            error: t.error.clone().or_else(|| {
                t.runtime
                    .is_none()
                    .then(|| t.problems.first().cloned())
                    .flatten()
            }),
        }
    }
}

/// A bucket: the dumps sharing one signature.
#[derive(Debug, Clone, Serialize)]
pub struct Bucket {
    /// The signature's id.
    pub id: String,
    /// Crash, deadlock, hang.
    pub kind: BucketKind,
    /// The signature in words.
    pub signature: String,
    /// How many dumps.
    pub count: u64,
    /// The earliest and latest dump time seen (seconds since 1970, UTC).
    pub first_seen: Option<u64>,
    /// The latest.
    pub last_seen: Option<u64>,
    /// The apps seen, sorted.
    pub apps: Vec<String>,
    /// The app versions seen, sorted.
    pub app_versions: Vec<String>,
    /// The runtimes seen, sorted.
    pub runtimes: Vec<String>,
    /// An example dump: the latest one.
    pub example: String,
    /// Every dump in it, the latest first.
    pub dumps: Vec<String>,
    /// The whole signature.
    pub detail: Signature,
}

/// The buckets of `records`, the largest first (then the most recent); dumps without a
/// signature are left out (they are listed as failures).
pub fn group(records: &[Record]) -> Vec<Bucket> {
    let mut v: Vec<Bucket> = Vec::new();
    for r in records {
        let Some(sig) = &r.signature else { continue };
        let b = match v.iter_mut().position(|b| b.id == sig.id) {
            Some(k) => &mut v[k],
            None => {
                v.push(Bucket {
                    id: sig.id.clone(),
                    kind: sig.kind,
                    signature: sig.text.clone(),
                    count: 0,
                    first_seen: None,
                    last_seen: None,
                    apps: Vec::new(),
                    app_versions: Vec::new(),
                    runtimes: Vec::new(),
                    example: r.dump.clone(),
                    dumps: Vec::new(),
                    detail: sig.clone(),
                });
                v.last_mut().expect("just pushed")
            }
        };
        b.count += 1;
        b.dumps.push(r.dump.clone());
        if let Some(t) = r.time {
            b.first_seen = Some(b.first_seen.map_or(t, |f| f.min(t)));
            if b.last_seen.is_none_or(|l| t >= l) {
                b.example = r.dump.clone();
            }
            b.last_seen = Some(b.last_seen.map_or(t, |l| l.max(t)));
        }
        for (list, x) in [
            (&mut b.apps, &r.app),
            (&mut b.app_versions, &r.app_version),
            (&mut b.runtimes, &r.runtime),
        ] {
            if let Some(x) = x {
                if !list.contains(x) {
                    list.push(x.clone());
                    list.sort();
                }
            }
        }
    }
    // each bucket's dumps, the latest first
    for b in &mut v {
        let time = |d: &String| {
            records
                .iter()
                .find(|r| &r.dump == d)
                .and_then(|r| r.time)
                .unwrap_or(0)
        };
        b.dumps
            .sort_by(|a, c| time(c).cmp(&time(a)).then_with(|| a.cmp(c)));
    }
    v.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(b.last_seen.cmp(&a.last_seen))
            .then_with(|| a.id.cmp(&b.id))
    });
    v
}

/// A UTC time as `2026-11-27 09:41:05`.
pub fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // civil from days (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The buckets as a table: bucket (id and signature), count, first and last seen, apps and
/// runtimes seen, an example dump.
pub fn render(buckets: &[Bucket]) -> String {
    let mut t = crate::text::table(&[
        "bucket",
        "dumps",
        "first seen (UTC)",
        "last seen (UTC)",
        "apps / runtimes",
        "example",
    ]);
    for b in buckets {
        let mut seen = b.apps.join(", ");
        if !b.app_versions.is_empty() {
            seen.push_str(&format!(" {}", b.app_versions.join(", ")));
        }
        seen.push_str(&format!("\n{}", b.runtimes.join(", ")));
        t.add_row(vec![
            format!("{}\n{}", b.id, b.signature),
            b.count.to_string(),
            b.first_seen.map_or("?".into(), utc),
            b.last_seen.map_or("?".into(), utc),
            seen,
            b.example.clone(),
        ]);
    }
    let total: u64 = buckets.iter().map(|b| b.count).sum();
    format!(
        "{}{total} dump{} in {} bucket{}\n",
        crate::text::render(&t),
        if total == 1 { "" } else { "s" },
        buckets.len(),
        if buckets.len() == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_lose_what_varies_and_keep_the_arity() {
        assert_eq!(
            normalize_frame("Crash!Crash.Program.ProcessOrder(Crash.Order)+0x4a"),
            "Crash.Program.ProcessOrder(Crash.Order)"
        );
        assert_eq!(
            normalize_frame("App.Cache`1[[System.Int32, System.Private.CoreLib]].Get(Int32) [/src/Cache.cs @ 42]"),
            "App.Cache`1.Get(Int32)"
        );
        assert_eq!(
            normalize_frame("App.Worker.Run() in /src/Worker.cs:line 17"),
            "App.Worker.Run()"
        );
        assert_eq!(normalize_frame("0x7f00deadbeef App.A.B()"), "App.A.B()");
        // parameter names (a stack trace's) dropped, types kept
        assert_eq!(
            normalize_frame("Crash.Program.ProcessOrder(Order o)"),
            "Crash.Program.ProcessOrder(Order)"
        );
        assert_eq!(
            normalize_frame("A.B.C(Dictionary<String, Int32> d, ref Int32 n, Int32)"),
            "A.B.C(Dictionary<String, Int32>, ref Int32, Int32)"
        );
        assert_eq!(
            normalize_frame("A.B.C(Int32, System.String)"),
            "A.B.C(Int32, System.String)"
        );
        // a hex-looking name is not an address
        assert_eq!(normalize_frame("App.Box0x1.Get()"), "App.Box0x1.Get()");
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(1_795_772_465), "2026-11-27 09:41:05");
    }
}
