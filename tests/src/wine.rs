//! Running the Windows builds (the WinDbg extension, `dumpshell.exe`) under wine in the tests:
//! the cross-build, the wine prefix and its runner. Needs wine, mingw-w64 and the Rust target;
//! without them a test says "SKIPPED: ..." and passes, unless `DUMPSHELL_REQUIRE_WINE=1` (CI),
//! where it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The Windows target the front ends are cross-built for.
pub const TARGET: &str = "x86_64-pc-windows-gnu";

fn root() -> PathBuf {
    crate::workspace_root()
}

pub fn require() -> bool {
    std::env::var("DUMPSHELL_REQUIRE_WINE").is_ok_and(|v| v == "1")
}

pub fn skip_or_fail(why: &str) {
    if require() {
        panic!("DUMPSHELL_REQUIRE_WINE=1 but {why}");
    }
    // Written to the real stderr, past the test harness's capture, so it shows in a passing run.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\nSKIPPED: wine test: {why} (set DUMPSHELL_REQUIRE_WINE=1 to make this a failure)\n"
    );
}

fn works(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What is missing to run the test, if anything.
pub fn missing_prerequisite() -> Option<String> {
    if !works("wine", &["--version"]) {
        return Some("wine is not installed (apt-get install wine wine64)".into());
    }
    if !works("x86_64-w64-mingw32-gcc", &["--version"]) {
        return Some("mingw-w64 is not installed (apt-get install gcc-mingw-w64-x86-64)".into());
    }
    let libdir = Command::new("rustc")
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let has_std = libdir
        .and_then(|d| std::fs::read_dir(d).ok())
        .is_some_and(|rd| {
            rd.filter_map(|e| e.ok())
                .any(|e| e.file_name().to_string_lossy().starts_with("libstd-"))
        });
    if !has_std {
        return Some(format!(
            "the Rust target {TARGET} is not installed (rustup target add {TARGET})"
        ));
    }
    None
}

/// Runs a command with output to files (wineserver outlives its clients and would hold a pipe
/// open), with a deadline. Returns stdout.
pub fn run_logged(mut cmd: Command, log: &Path, limit: Duration) -> String {
    let out_path = log.with_extension("out");
    let err_path = log.with_extension("err");
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} took more than {limit:?}; stderr:\n{}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = std::fs::read_to_string(&out_path).unwrap_or_default();
    assert!(
        status.success(),
        "{cmd:?} failed ({status}); stderr:\n{}\nstdout:\n{out}",
        std::fs::read_to_string(&err_path).unwrap_or_default()
    );
    out
}

pub fn wine_path(p: &Path) -> String {
    let abs = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    format!("Z:{}", abs.display()).replace('/', "\\")
}

/// What [`build`] made: the folder of the built Windows files and the wine prefix.
pub struct Built {
    /// `target/wine/x86_64-pc-windows-gnu/debug`.
    pub dir: PathBuf,
    /// The wine prefix.
    pub prefix: PathBuf,
}

/// Cross-builds `what` (cargo build arguments: `-p dbgext --lib --bins`) into target/wine (a
/// target folder of its own, so the outer cargo's lock is not in the way), builds the
/// bcryptprimitives stub beside them and makes the wine prefix.
pub fn build(what: &[&str]) -> Built {
    let wine_target = root().join("target").join("wine");
    std::fs::create_dir_all(&wine_target).unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut c = Command::new(cargo);
    c.current_dir(root())
        .arg("build")
        .args(what)
        .args(["--target", TARGET])
        .arg("--target-dir")
        .arg(&wine_target)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET");
    let t = Instant::now();
    run_logged(c, &wine_target.join("build"), Duration::from_secs(1800));
    eprintln!("wine test: cross-build of {what:?} took {:?}", t.elapsed());
    let dir = wine_target.join(TARGET).join("debug");
    let mut gcc = Command::new("x86_64-w64-mingw32-gcc");
    gcc.args(["-shared", "-O2", "-o"])
        .arg(dir.join("bcryptprimitives.dll"))
        .arg(root().join("dbgext/testhost/bcryptprimitives.c"));
    run_logged(gcc, &wine_target.join("gcc"), Duration::from_secs(120));
    let prefix = wine_target.join("prefix");
    if !prefix.join("system.reg").is_file() {
        let t = Instant::now();
        let mut boot = wine_cmd(&prefix, "wineboot");
        boot.arg("--init");
        run_logged(
            boot,
            &wine_target.join("wineboot"),
            Duration::from_secs(300),
        );
        eprintln!("wine test: wine prefix made in {:?}", t.elapsed());
    }
    Built { dir, prefix }
}

pub fn wine_cmd(prefix: &Path, program: &str) -> Command {
    let mut c = Command::new("wine");
    c.arg(program)
        .env("WINEPREFIX", prefix)
        .env("WINEDEBUG", "-all")
        .env("WINEDLLOVERRIDES", "bcryptprimitives=n;mscoree,mshtml=")
        .env("WINEARCH", "win64");
    c
}
