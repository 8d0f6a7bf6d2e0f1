//! The extension's target and dispatch, on Linux, over an engine emulated from a dump file
//! (the same emulation the Windows test host puts behind its COM interfaces): every command's
//! text and JSON must be dumpshell's own, but for the fields that legitimately differ.

mod common;
#[path = "../testhost/dumpengine.rs"]
#[allow(dead_code)]
mod dumpengine;

use dbgext::run::{self, Channel};
use dumpengine::{DumpEngine, PartialReads};

fn check(name: &str, partial: PartialReads) {
    let entry = tests::entry(name);
    let path = entry.dump_path();
    let session = common::open(&path);
    let dump = dumpreader::Dump::open(&path).unwrap();
    let engine = DumpEngine::new(dump, path.display().to_string(), partial);
    let mut failures = Vec::new();
    for cmd in common::COMMANDS {
        let line = common::expand(cmd, &session);
        let (theirs, their_ok) = common::dumpshell(&session, &line);
        let (export, args) = line.split_once(' ').unwrap_or((&line, ""));
        let p = run::run(&engine, export, args);
        let ours = p.text(Channel::Normal);
        if p.ok != their_ok {
            failures.push(format!(
                "'{line}': dbgext ok={} dumpshell ok={their_ok}; errors: {}",
                p.ok,
                p.text(Channel::Error)
            ));
        }
        if let Some(d) = common::compare(&line, &ours, &theirs, entry.os()) {
            failures.push(d);
        }
    }
    assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n\n"));
}

#[test]
fn elf_core_through_the_engine_matches_dumpshell() {
    check("hang", PartialReads::Prefix);
}

#[test]
fn minidump_through_a_strict_engine_matches_dumpshell() {
    check("windows-hang", PartialReads::Fail);
}

#[test]
fn unknown_export_says_it_is_not_available() {
    struct Nothing;
    impl dbgext::engine::Engine for Nothing {
        fn read_virtual(&self, _: u64, _: &mut [u8]) -> Result<usize, i32> {
            Err(-1)
        }
        fn query_virtual(&self, _: u64) -> Option<dbgext::engine::EngineRegion> {
            None
        }
        fn threads(&self) -> Vec<dbgext::engine::EngineThread> {
            Vec::new()
        }
        fn thread_states(
            &self,
            _: &[dbgext::engine::EngineThread],
        ) -> Vec<dbgext::engine::ThreadState> {
            Vec::new()
        }
        fn process_id(&self) -> Option<u32> {
            None
        }
        fn executable_name(&self) -> Option<String> {
            None
        }
        fn modules(&self) -> Vec<dbgext::engine::EngineModule> {
            Vec::new()
        }
        fn last_exception(&self) -> Option<dbgext::engine::EngineException> {
            None
        }
        fn processor_type(&self) -> Option<u32> {
            None
        }
        fn target_name(&self) -> Option<String> {
            None
        }
    }
    let p = run::run(&Nothing, "nosuchcommand", "");
    assert!(!p.ok);
    assert_eq!(
        p.text(Channel::Error),
        "dumpshell: 'nosuchcommand' is not available in this build\n"
    );
    // Every registry name and alias is exported.
    for c in commands::registry() {
        for n in std::iter::once(c.name).chain(c.aliases.iter().copied()) {
            assert!(
                run::EXPORTED_COMMANDS.contains(&n),
                "registry command '{n}' has no export in dbgext"
            );
        }
    }
    // An empty target: commands fail or answer, never hang or panic.
    let p = run::run(&Nothing, "threads", "");
    assert!(p.ok, "{:?}", p);
    let p = run::run(&Nothing, "dq", "0x1000");
    assert!(p.ok, "{:?}", p);
    assert!(p.text(Channel::Normal).contains("??"));
    // WinDbg's SOS `!da` is DumpArray, not dotnet-dump's ASCII display.
    assert_eq!(run::windbg_meaning("da"), "dumparray");
    assert_eq!(run::windbg_meaning("du"), "du");
    let p = run::run(&Nothing, "da", "--bogus");
    assert!(
        !p.ok && p.text(Channel::Error).contains("!dumparray --bogus"),
        "{p:?}"
    );
    let p = run::run(&Nothing, "dq", "--bogus");
    assert!(!p.ok && p.text(Channel::Error).contains("--bogus"), "{p:?}");
}

/// Partial reads through the page cache, with ranges that start and end inside pages, over an
/// engine that fails any read not wholly readable: the target must still find every readable
/// prefix exactly, as the dump reader does.
#[test]
fn partial_reads_at_unaligned_range_edges() {
    use dbgext::engine::*;
    use dbgext::target::{serve, EngineTarget, Snapshot};
    use dumpreader::Memory;
    struct Strict(Vec<(u64, Vec<u8>)>);
    impl Engine for Strict {
        fn read_virtual(&self, addr: u64, buf: &mut [u8]) -> Result<usize, i32> {
            // Contiguous ranges join; fail unless all of buf is covered.
            let mut done = 0;
            while done < buf.len() {
                let a = addr + done as u64;
                let Some((s, b)) = self
                    .0
                    .iter()
                    .find(|(s, b)| a >= *s && a < s + b.len() as u64)
                else {
                    return Err(-1);
                };
                let off = (a - s) as usize;
                let n = (b.len() - off).min(buf.len() - done);
                buf[done..done + n].copy_from_slice(&b[off..off + n]);
                done += n;
            }
            Ok(done)
        }
        fn query_virtual(&self, _: u64) -> Option<EngineRegion> {
            None
        }
        fn threads(&self) -> Vec<EngineThread> {
            Vec::new()
        }
        fn thread_states(&self, _: &[EngineThread]) -> Vec<ThreadState> {
            Vec::new()
        }
        fn process_id(&self) -> Option<u32> {
            None
        }
        fn executable_name(&self) -> Option<String> {
            None
        }
        fn modules(&self) -> Vec<EngineModule> {
            Vec::new()
        }
        fn last_exception(&self) -> Option<EngineException> {
            None
        }
        fn processor_type(&self) -> Option<u32> {
            None
        }
        fn target_name(&self) -> Option<String> {
            None
        }
    }
    let fill = |start: u64, len: usize| -> (u64, Vec<u8>) {
        (
            start,
            (0..len).map(|i| (start as usize + i) as u8).collect(),
        )
    };
    let engine = Strict(vec![
        fill(0x1008, 0xfe8),   // 0x1008..0x1ff0
        fill(0x2000, 0x1010),  // 0x2000..0x3010
        fill(0x3010, 0x10ff0), // joins: ..0x14000
    ]);
    let (tx, rx) = std::sync::mpsc::channel();
    let target = EngineTarget::new(Snapshot::default(), tx);
    std::thread::scope(|s| {
        let w = s.spawn(move || {
            let t = target;
            let mut b = vec![0u8; 0x200];
            let mut got = Vec::new();
            for (a, n) in [
                (0x1000u64, 0x10usize),
                (0x1008, 0x100),
                (0x1f00, 0x200),
                (0x1ff0, 0x10),
                (0x2ff0, 0x40),
                (0x13f00, 0x200),
            ] {
                let k = t.read(a, &mut b[..n]);
                assert!(b[..k]
                    .iter()
                    .enumerate()
                    .all(|(i, &x)| x == (a as usize + i) as u8));
                got.push(k);
            }
            got
        });
        serve(&engine, &rx, &|| w.is_finished());
        assert_eq!(w.join().unwrap(), vec![0, 0x100, 0xf0, 0, 0x40, 0x100]);
    });
}
