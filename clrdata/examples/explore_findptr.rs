// Development aid: which words of a structure point at a structure that holds VALUE at some offset.
use dumpreader::{Dump, Memory};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let d = Dump::open(std::path::Path::new(&a[1])).unwrap();
    let h = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let (addr, want) = (h(&a[2]), h(&a[3]));
    for i in 0..64u64 {
        let Ok(p) = d.read_u64(addr + i * 8) else {
            continue;
        };
        if p == want {
            println!("+{:#x} == value", i * 8);
        }
        for k in 0..32u64 {
            if d.read_u64(p.wrapping_add(k * 8)).ok() == Some(want) {
                println!("+{:#x} -> {p:#x} +{:#x}", i * 8, k * 8);
            }
        }
    }
}
