//! Opens a dump, lists threads and modules, and times it; then times memory reads.
//!
//! `cargo run --release -p dumpreader --example open_bench -- DUMP [--verbose] [--images]`

use dumpreader::{Dump, Memory};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: open_bench DUMP [--verbose] [--images]");
        std::process::exit(2);
    };
    let verbose = args.iter().any(|a| a == "--verbose");
    let images = args.iter().any(|a| a == "--images");
    let t0 = Instant::now();
    let dump = match Dump::open(std::path::Path::new(path)) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let t_open = t0.elapsed();
    let threads = dump.threads().len();
    let t1 = Instant::now();
    let modules = dump.modules().len();
    let t_mods = t1.elapsed();
    let (mut ranges, mut bytes, mut zero) = (0u64, 0u64, 0u64);
    for r in dump.memory_ranges() {
        ranges += 1;
        bytes += r.size;
        zero += r.zero_filled();
    }
    let info = dump.info();
    println!(
        "format {:?} os {:?} pid {:?} process {:?}",
        info.format, info.os, info.pid, info.process_name
    );
    println!(
        "exception {:?} crashing {:?} main {:?}",
        info.exception, info.crashing_thread, info.main_thread
    );
    println!(
        "ranges {ranges}, {:.1} MiB ({:.1} MiB zero-filled); threads {threads}; modules {modules}",
        bytes as f64 / 1048576.0,
        zero as f64 / 1048576.0
    );
    let readable = dump
        .threads()
        .iter()
        .filter(|t| dump.read_u64(t.context.rsp).is_ok())
        .count();
    println!("threads with stack memory at rsp: {readable}/{threads}");
    for w in &info.warnings {
        println!("warning: {w}");
    }
    if verbose {
        for t in dump.threads() {
            let c = &t.context;
            println!(
                "thread {} rip={:#x} rsp={:#x} rbp={:#x} fs_base={:#x} stack={:x?} fx={} sym={}",
                t.id,
                c.rip,
                c.rsp,
                c.rbp,
                c.fs_base,
                t.stack,
                c.fxsave.is_some(),
                dump.symbolize(c.rip)
                    .map(|s| s.to_string())
                    .unwrap_or_default()
            );
        }
        for m in dump.modules() {
            println!(
                "{:#014x}-{:#014x} {:?} {} {}",
                m.base,
                m.end,
                m.kind,
                m.path,
                m.identity
                    .as_ref()
                    .map(|i| i.to_string())
                    .unwrap_or_default()
            );
        }
    }
    let mut t_img = std::time::Duration::ZERO;
    if images {
        let t = Instant::now();
        let mut ok = 0;
        for m in dump
            .modules()
            .iter()
            .filter(|m| m.kind != dumpreader::ModuleKind::Other)
        {
            match dump.module_image(m) {
                Ok(img) => {
                    ok += 1;
                    if verbose {
                        let n = match &img.format {
                            dumpreader::ImageFormat::Elf(e) => e.symbols.len(),
                            dumpreader::ImageFormat::Pe(p) => p.exports.len(),
                        };
                        println!("image {} : {} symbols/exports; {}", m.name(), n, img.note);
                    }
                }
                Err(e) => println!("image {}: {e}", m.name()),
            }
        }
        t_img = t.elapsed();
        println!("images parsed: {ok}");
    }
    println!(
        "open {:.3} ms, modules {:.3} ms, images {:.3} ms",
        t_open.as_secs_f64() * 1e3,
        t_mods.as_secs_f64() * 1e3,
        t_img.as_secs_f64() * 1e3
    );

    // Read benchmarks.
    let Some(t) = dump.threads().first() else {
        return;
    };
    let sp = t.context.rsp & !7;
    let n = 10_000_000u64;
    let t = Instant::now();
    let mut acc = 0u64;
    for i in 0..n {
        acc = acc.wrapping_add(dump.read_u64(sp + (i & 63) * 8).unwrap_or(0));
    }
    let dt = t.elapsed();
    println!(
        "cached-page read_u64: {:.1} ns/read (acc {acc:x})",
        dt.as_nanos() as f64 / n as f64
    );
    // Random reads across all ranges (binary search path).
    let rs: Vec<_> = dump.memory_ranges().filter(|r| r.size >= 8).collect();
    if !rs.is_empty() {
        let mut x = 0x9e3779b97f4a7c15u64;
        let n = 2_000_000u64;
        let t = Instant::now();
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let r = &rs[(x % rs.len() as u64) as usize];
            let a = r.address + (x >> 20) % (r.size - 7);
            acc = acc.wrapping_add(dump.read_u64(a).unwrap_or(0));
        }
        let dt = t.elapsed();
        println!(
            "random read_u64 over {} ranges: {:.1} ns/read (acc {acc:x})",
            rs.len(),
            dt.as_nanos() as f64 / n as f64
        );
    }
}
