//! Many dumps at once: `dumpshell triage --buckets` (each dump signed and grouped, through the
//! store so a dump already read is not read again), `dumpshell buckets` (the store queried) and
//! `dumpshell report` (the HTML page of a dump or of a set of dumps). The signatures and buckets
//! are the command library's ([`commands::buckets`]); this front end finds the files, keeps the
//! store, draws the progress bar and prints.

use crate::store::{self, Store};
use commands::buckets::{self, Record};
use commands::triage::{self, Triage};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Whether a file in a folder given to triage is taken as a dump: `.dmp`, `.mdmp`, `.core`,
/// `.zst`, or named `core` / `core.<pid>`.
fn looks_like_dump(p: &Path) -> bool {
    let name = p
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let ext = p
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    matches!(ext.as_str(), "dmp" | "mdmp" | "core" | "zst")
        || name == "core"
        || name.starts_with("core.")
}

/// The dumps named: files as given, folders searched (recursively, sorted) for files that look
/// like dumps ([`looks_like_dump`]).
pub fn expand(paths: &[PathBuf]) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            // an unreadable folder is reported as a dump that cannot be opened
            out.push(dir.to_path_buf());
            return;
        };
        let mut v: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        v.sort();
        for p in v {
            if p.is_dir() {
                walk(&p, out);
            } else if looks_like_dump(&p) {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out);
        } else {
            out.push(p.clone());
        }
    }
    out
}

/// A bar over `n` dumps on standard error, drawn only when it is a terminal.
pub fn bar(n: usize, what: &str) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let b = ProgressBar::with_draw_target(Some(n as u64), target);
    b.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} dumps ({elapsed}, {eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    b.set_message(what.to_owned());
    b
}

/// What a fleet run made: one record per dump (in the order given) and how many were read.
pub struct Fleet {
    /// The dumps' records, in the order given.
    pub records: Vec<Record>,
    /// How many dumps were read (triaged) in this run.
    pub read: usize,
    /// How many were not read: their content was in the store, or is another dump's of this
    /// run (a copy under another name).
    pub reused: usize,
    /// A store problem met on the way (the run goes on without it).
    pub store_error: Option<String>,
}

/// One dump file on its way: its store key, size and time, and content hash.
struct Seen {
    key: String,
    stat: Option<(u64, i64)>,
    sha: Option<String>,
    /// The hash came from the store (the file is unchanged since).
    file_known: bool,
}

/// Signs every dump: from the store when its content was read before, else triaged and added
/// to the store. Three passes, each on `jobs` threads (0: one per core): the files' hashes
/// (from the store when a file's path, size and time are unchanged), then one triage per
/// content not in the store (a copy under another name is read once), then the records. Each
/// worker holds one dump open at a time.
pub fn sign_all(
    paths: &[PathBuf],
    opts: &dumpreader::OpenOptions,
    discover: &clrdata::DiscoverOptions,
    jobs: usize,
    store: Option<Store>,
) -> Fleet {
    let store = store.map(Mutex::new);
    let store_error: Mutex<Option<String>> = Mutex::new(None);
    let note = |e: store::StoreError| {
        let mut g = store_error.lock().unwrap_or_else(|e| e.into_inner());
        g.get_or_insert_with(|| e.to_string());
    };
    let with_store = |f: &mut dyn FnMut(&Store) -> Result<(), store::StoreError>| {
        if let Some(s) = &store {
            let g = s.lock().unwrap_or_else(|e| e.into_inner());
            if let Err(e) = f(&g) {
                note(e);
            }
        }
    };
    // 1. hashes, and what the store knows of each content
    let seen: Vec<Mutex<Option<(Seen, Option<Record>)>>> =
        paths.iter().map(|_| Mutex::new(None)).collect();
    if store.is_some() {
        let pb = bar(paths.len(), "hashing");
        triage::parallel(paths.len(), jobs, &|i| {
            let p = &paths[i];
            let key = p
                .canonicalize()
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string();
            let stat = store::stat(p).ok();
            let mut sha = None;
            if let Some((size, mtime)) = stat {
                with_store(&mut |s| {
                    sha = s.known_hash(&key, size, mtime)?;
                    Ok(())
                });
            }
            let file_known = sha.is_some();
            if sha.is_none() && stat.is_some() {
                sha = store::sha256_file(p).ok();
            }
            let mut known = None;
            if let (Some(h), Some((size, _))) = (&sha, stat) {
                with_store(&mut |s| {
                    known = s.known_content(h, size)?;
                    Ok(())
                });
            }
            *seen[i].lock().unwrap_or_else(|e| e.into_inner()) = Some((
                Seen {
                    key,
                    stat,
                    sha,
                    file_known,
                },
                known,
            ));
            pb.inc(1);
        });
        pb.finish_and_clear();
    }
    let seen: Vec<(Option<Seen>, Option<Record>)> = seen
        .into_iter()
        .map(|m| match m.into_inner().ok().flatten() {
            Some((s, k)) => (Some(s), k),
            None => (None, None),
        })
        .collect();
    // 2. one triage per content the store does not hold (every file when there is no store)
    let mut todo: Vec<usize> = Vec::new();
    let mut first_of: std::collections::HashMap<(String, u64), usize> = Default::default();
    let mut same_as: Vec<Option<usize>> = vec![None; paths.len()];
    for (i, (s, known)) in seen.iter().enumerate() {
        if known.is_some() {
            continue;
        }
        match s.as_ref().and_then(|s| Some((s.sha.clone()?, s.stat?.0))) {
            Some(content) => match first_of.get(&content) {
                Some(&k) => same_as[i] = Some(k),
                None => {
                    first_of.insert(content, i);
                    todo.push(i);
                }
            },
            None => todo.push(i),
        }
    }
    let triaged: Vec<Mutex<Option<Record>>> = paths.iter().map(|_| Mutex::new(None)).collect();
    let pb = bar(todo.len(), "triage");
    triage::parallel(todo.len(), jobs, &|k| {
        let i = todo[k];
        let p = &paths[i];
        let t = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            triage::triage_with(p, opts, discover)
        }))
        .unwrap_or_else(|_| {
            let mut t = triage::triage_failed(p);
            t.error = Some("internal error while triaging (a bug: please report it)".into());
            t
        });
        let sha = seen[i].0.as_ref().and_then(|s| s.sha.clone());
        let r = Record::of(&t, sha);
        // a file that could not be opened is tried again next time
        if r.signature.is_some() {
            with_store(&mut |s| s.put_content(&r));
        }
        *triaged[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        pb.inc(1);
    });
    pb.finish_and_clear();
    let triaged: Vec<Option<Record>> = triaged
        .into_iter()
        .map(|m| m.into_inner().ok().flatten())
        .collect();
    // 3. a record per file, under its own name and time
    let mut records = Vec::with_capacity(paths.len());
    for (i, p) in paths.iter().enumerate() {
        let (s, known) = &seen[i];
        let rec = match (known, &triaged[i], same_as[i]) {
            (_, Some(r), _) => r.clone(),
            (Some(r), _, _) => r.clone(),
            (_, _, Some(k)) => triaged[k]
                .clone()
                .unwrap_or_else(|| Record::of(&triage::triage_failed(&paths[k]), None)),
            _ => Record::of(&triage::triage_failed(p), None),
        };
        let mut rec = rec;
        rec.dump = p.display().to_string();
        if !rec.time_from_dump {
            rec.time = file_time(p);
        }
        if let Some(Seen {
            key,
            stat: Some((size, mtime)),
            sha: Some(h),
            file_known: false,
        }) = s
        {
            if rec.signature.is_some() {
                with_store(&mut |st| st.put_file(key, *size, *mtime, h, rec.time));
            }
        }
        records.push(rec);
    }
    Fleet {
        records,
        read: todo.len(),
        reused: paths.len() - todo.len(),
        store_error: store_error.into_inner().unwrap_or_else(|e| e.into_inner()),
    }
}

/// A file's modification time in seconds (what [`Triage::dump_time`] holds).
fn file_time(p: &Path) -> Option<u64> {
    std::fs::metadata(p)
        .ok()?
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs())
}

/// The dumps that could not be read, once each: (dump, why).
pub fn failures(records: &[Record]) -> Vec<(String, String)> {
    records
        .iter()
        .filter(|r| r.signature.is_none())
        .map(|r| {
            (
                r.dump.clone(),
                r.error.clone().unwrap_or_else(|| "not read".into()),
            )
        })
        .collect()
}

/// Triages every dump in `paths` on `jobs` threads, printing each page (or JSON line) in the
/// order given as soon as it and those before it are done, with a progress bar on a terminal.
pub fn triage_pages(
    paths: &[PathBuf],
    opts: &dumpreader::OpenOptions,
    discover: &clrdata::DiscoverOptions,
    jobs: usize,
    json: bool,
) -> bool {
    let pb = bar(paths.len(), "triage");
    struct Out {
        next: usize,
        pending: Vec<Option<Triage>>,
        failed: bool,
    }
    let out = Mutex::new(Out {
        next: 0,
        pending: paths.iter().map(|_| None).collect(),
        failed: false,
    });
    triage::triage_each(paths, opts, discover, jobs, &|i, t| {
        let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
        o.pending[i] = Some(t);
        loop {
            let k = o.next;
            let Some(t) = o.pending.get_mut(k).and_then(Option::take) else {
                break;
            };
            o.failed |= t.error.is_some();
            let text = if json {
                serde_json::json!({"schema": commands::JSON_SCHEMA_VERSION, "command": "triage", "result": t})
                    .to_string()
            } else {
                triage::render(&t)
            };
            pb.suspend(|| println!("{text}"));
            o.next += 1;
        }
        pb.inc(1);
    });
    pb.finish_and_clear();
    let o = out.into_inner().unwrap_or_else(|e| e.into_inner());
    o.failed
}

/// The JSON result of `triage --buckets` and `buckets`.
pub fn buckets_document(
    buckets: &[buckets::Bucket],
    failed: &[(String, String)],
    read: Option<usize>,
    reused: Option<usize>,
) -> serde_json::Value {
    serde_json::json!({
        "schema": commands::JSON_SCHEMA_VERSION,
        "command": "buckets",
        "result": {
            "buckets": buckets,
            "failed": failed.iter().map(|(d, e)| serde_json::json!({"dump": d, "error": e})).collect::<Vec<_>>(),
            "read": read,
            "reused": reused,
        }
    })
}

/// Parses `--since`: seconds since 1970, or a UTC date `YYYY-MM-DD` with an optional
/// `THH:MM[:SS]` or ` HH:MM[:SS]`.
pub fn parse_time(s: &str) -> Option<u64> {
    if let Ok(n) = s.parse::<u64>() {
        return Some(n);
    }
    let (date, time) = match s.split_once(['T', ' ']) {
        Some((d, t)) => (d, t),
        None => (s, "00:00:00"),
    };
    let d: Vec<i64> = date
        .split('-')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let t: Vec<i64> = time
        .trim_end_matches('Z')
        .split(':')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let [y, m, day] = d[..] else { return None };
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    let (h, mi, se) = (
        t.first().copied()?,
        t.get(1).copied().unwrap_or(0),
        t.get(2).copied().unwrap_or(0),
    );
    // days from civil (Howard Hinnant's algorithm)
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + h * 3600 + mi * 60 + se).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_parse() {
        assert_eq!(super::parse_time("1795772465"), Some(1_795_772_465));
        assert_eq!(
            super::parse_time("2026-11-27T09:41:05"),
            Some(1_795_772_465)
        );
        assert_eq!(super::parse_time("2026-11-27"), Some(1_795_737_600));
        assert_eq!(super::parse_time("yesterday"), None);
    }
}
