// Development aid: for each word of a structure, previews what it points at (C string, UTF-16).
use dumpreader::{Dump, Memory};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let d = Dump::open(std::path::Path::new(&a[1])).unwrap();
    let addr = u64::from_str_radix(a[2].trim_start_matches("0x"), 16).unwrap();
    let n: u64 = a.get(3).map(|s| s.parse().unwrap()).unwrap_or(64);
    for i in 0..n {
        let Ok(v) = d.read_u64(addr + i * 8) else {
            continue;
        };
        let c = d
            .read_cstr(v, 60)
            .ok()
            .filter(|s| s.len() >= 3 && s.chars().all(|c| c.is_ascii_graphic() || c == ' '));
        let w = d
            .read_utf16(v, 30)
            .ok()
            .map(|s| s.split('\0').next().unwrap_or("").to_string())
            .filter(|s| s.len() >= 3 && s.chars().all(|c| c.is_ascii_graphic()));
        let m = d.module_at(v).map(|m| m.name().to_string());
        if c.is_some() || w.is_some() || m.is_some() {
            println!("+{:#05x} {v:#x} c={c:?} w={w:?} mod={m:?}", i * 8);
        }
    }
}
