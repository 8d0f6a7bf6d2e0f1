//! Raw read of a dump's GC heap bytes, the floor any heap walk is measured against:
//!
//!     cargo run --release -p clrdata --example rawscan -- DUMP --clrmd FILE.json
//!     cargo run --release -p clrdata --example rawscan -- DUMP 0xSTART-0xEND ...
//!
//! The ranges are the GC segments' object ranges, taken from ClrMD's view of the same dump
//! (`dumps/tools/clrmd/truth.sh ... --bench`, its `segments[].start..end`) or given by hand, so
//! it needs no CLR knowledge and works on any runtime version (dumpshell's own heap reader
//! refuses .NET 9+ today). Every range is read through `dumpreader`'s `Memory` in 1 MB blocks
//! and summed as u64 words (so every byte is touched), once to warm the page cache and then
//! timed, on one thread (sequential) and over all rayon threads (parallel, per segment).
//! Prints one line per mode: `rawscan <mode>: <bytes> bytes in <s> s, <GB/s> GB/s`.

use dumpreader::{Dump, Memory};
use rayon::prelude::*;
use std::time::Instant;

fn parse_hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

fn scan(dump: &Dump, (start, end): (u64, u64)) -> (u64, u64) {
    let mut buf = vec![0u8; 1 << 20];
    let (mut a, mut sum, mut n) = (start, 0u64, 0u64);
    while a < end {
        let want = ((end - a) as usize).min(buf.len());
        let got = dump.read(a, &mut buf[..want]);
        if got == 0 {
            break;
        }
        for c in buf[..got & !7].chunks_exact(8) {
            sum = sum.wrapping_add(u64::from_le_bytes(c.try_into().unwrap()));
        }
        n += got as u64;
        a += got as u64;
    }
    (sum, n)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: rawscan DUMP (--clrmd FILE.json | 0xSTART-0xEND ...)");
        std::process::exit(2);
    };
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    let mut i = 1;
    while i < args.len() {
        if args[i] == "--clrmd" {
            let file = args.get(i + 1).expect("--clrmd FILE");
            let text = std::fs::read_to_string(file).unwrap_or_else(|e| {
                eprintln!("{file}: {e}");
                std::process::exit(1)
            });
            let v: serde_json::Value = serde_json::from_str(&text).expect("ClrMD JSON");
            for s in v["segments"].as_array().expect("segments[]") {
                let a = s["start"].as_str().and_then(parse_hex);
                let b = s["end"].as_str().and_then(parse_hex);
                if let (Some(a), Some(b)) = (a, b) {
                    if b > a {
                        ranges.push((a, b));
                    }
                }
            }
            i += 2;
        } else {
            let (a, b) = args[i].split_once('-').expect("0xSTART-0xEND");
            ranges.push((parse_hex(a).expect("start"), parse_hex(b).expect("end")));
            i += 1;
        }
    }
    if ranges.is_empty() {
        eprintln!("rawscan: no ranges");
        std::process::exit(2);
    }
    let dump = Dump::open(std::path::Path::new(path)).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1)
    });
    // warm the page cache (the first pass over a fresh mapping pays for page faults)
    let _ = ranges.par_iter().map(|r| scan(&dump, *r)).count();

    let t = Instant::now();
    let (mut sum, mut bytes) = (0u64, 0u64);
    for r in &ranges {
        let (s, n) = scan(&dump, *r);
        sum = sum.wrapping_add(s);
        bytes += n;
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "rawscan sequential: {bytes} bytes in {secs:.4} s, {:.2} GB/s ({} ranges, checksum {sum:#x})",
        bytes as f64 / secs / 1e9,
        ranges.len()
    );

    let t = Instant::now();
    let (psum, pbytes) = ranges
        .par_iter()
        .map(|r| scan(&dump, *r))
        .reduce(|| (0, 0), |x, y| (x.0.wrapping_add(y.0), x.1 + y.1));
    let psecs = t.elapsed().as_secs_f64();
    println!(
        "rawscan parallel: {pbytes} bytes in {psecs:.4} s, {:.2} GB/s ({} threads, checksum {psum:#x})",
        pbytes as f64 / psecs / 1e9,
        rayon::current_num_threads()
    );
}
