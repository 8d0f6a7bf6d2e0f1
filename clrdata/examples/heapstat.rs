//! Heap census benchmark: `cargo run --release -p clrdata --example heapstat -- DUMP [--top N]`
//!
//! Times runtime discovery, the heap structure, the parallel census (objects/s), the sequential
//! object iterator, and a raw scan of the same heap bytes (every segment's `mem..walk_end` read
//! through the same `Memory` and summed, in parallel over segments like the census), and prints
//! the ratio census / raw scan. `RAYON_NUM_THREADS` sets the thread count.

use clrdata::prelude::*;
use clrdata::Runtime;
use dumpreader::{Dump, Memory};
use rayon::prelude::*;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: heapstat DUMP [--top N]");
        std::process::exit(2);
    };
    let top: usize = args
        .iter()
        .position(|a| a == "--top")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let t0 = Instant::now();
    let dump = Dump::open(std::path::Path::new(path)).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1)
    });
    let t_open = t0.elapsed();
    let t1 = Instant::now();
    let rt = match Runtime::discover(&dump) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1)
        }
    };
    let heap = rt.gc_heap().expect("heap structure");
    let t_disc = t1.elapsed();
    println!(
        "{} ({:?} from {:?}), {:?} GC, {} heaps, {} segments, threads: {}",
        rt.info.display_name(),
        rt.info.version,
        rt.info.version_source,
        heap.mode,
        heap.heaps.len(),
        heap.segments.len(),
        rayon::current_num_threads()
    );
    println!(
        "open {:.3}s, discover+heap {:.3}s",
        t_open.as_secs_f64(),
        t_disc.as_secs_f64()
    );

    // Warm the page cache once (the first pass over a fresh mmap pays for page faults).
    let raw = |_: ()| -> (u64, u64) {
        heap.segments
            .par_iter()
            .map(|s| {
                let mut buf = vec![0u8; 1 << 20];
                let (mut a, mut sum, mut n) = (s.mem, 0u64, 0u64);
                while a < s.walk_end {
                    let want = ((s.walk_end - a) as usize).min(buf.len());
                    let got = rt.memory().read(a, &mut buf[..want]);
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
            })
            .reduce(|| (0, 0), |x, y| (x.0.wrapping_add(y.0), x.1 + y.1))
    };
    let _ = raw(());
    let t2 = Instant::now();
    let (sum, bytes) = raw(());
    let t_raw = t2.elapsed().as_secs_f64();

    let t3 = Instant::now();
    let c = heap.census(&rt);
    let t_census = t3.elapsed().as_secs_f64();

    let t4 = Instant::now();
    let mut it = heap.objects(&rt);
    let n_seq = it.by_ref().filter(|o| !o.is_free).count();
    let t_seq = t4.elapsed().as_secs_f64();

    let all = c.total_objects + c.free_objects;
    println!(
        "census: {} objects ({} bytes), {} free ({} bytes), {} types, {} errors ({} bytes skipped)",
        c.total_objects,
        c.total_size,
        c.free_objects,
        c.free_size,
        c.types.len(),
        c.errors.len(),
        c.skipped_bytes
    );
    println!(
        "census (parallel):   {:.3}s  {:.1} M objects/s",
        t_census,
        all as f64 / t_census / 1e6
    );
    println!(
        "iterator (1 thread): {:.3}s  {:.1} M objects/s  ({} objects)",
        t_seq,
        (n_seq as u64 + c.free_objects) as f64 / t_seq / 1e6,
        n_seq
    );
    println!(
        "raw scan (parallel): {:.3}s  {:.2} GB/s over {} bytes (checksum {sum:#x})",
        t_raw,
        bytes as f64 / t_raw / 1e9,
        bytes
    );
    println!("census / raw scan time: {:.2}x", t_census / t_raw);
    for t in c.types.iter().take(top) {
        println!("{:#018x} {:>10} {:>14}", t.mt, t.count, t.total_size);
    }
}
