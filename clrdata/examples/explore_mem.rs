// Development aid: hexdump of u64 words at an address in a dump: explore_mem DUMP ADDR [WORDS] [deref]
use dumpreader::{Dump, Memory};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let d = Dump::open(std::path::Path::new(&a[1])).unwrap();
    let addr = u64::from_str_radix(a[2].trim_start_matches("0x"), 16).unwrap();
    let n: u64 = a.get(3).map(|s| s.parse().unwrap()).unwrap_or(32);
    for i in 0..n {
        let p = addr + i * 8;
        match d.read_u64(p) {
            Ok(v) => println!(
                "+{:#05x} {p:#x}: {v:#018x}  {} {}",
                i * 8,
                v as u32,
                (v >> 32) as u32
            ),
            Err(_) => println!("+{:#05x} {p:#x}: ??", i * 8),
        }
    }
}
