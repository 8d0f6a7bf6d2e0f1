// Development aid: prints g_dacTable entries of a dump with the pointer-sized value each points at.
use dumpreader::{Dump, Memory};
fn main() {
    let path = std::env::args().nth(1).expect("dump");
    let n: usize = std::env::args()
        .nth(2)
        .map(|s| s.parse().unwrap())
        .unwrap_or(120);
    let d = Dump::open(std::path::Path::new(&path)).unwrap();
    let m = d
        .modules()
        .iter()
        .find(|m| {
            let n = m.name().to_ascii_lowercase();
            n == "libcoreclr.so" || n == "coreclr.dll"
        })
        .unwrap()
        .clone();
    println!("module {} {:#x}-{:#x}", m.path, m.base, m.end);
    let t = d.find_export(&m, "g_dacTable").unwrap();
    println!("g_dacTable {t:#x}");
    for i in 0..n {
        let e = d.read_u64(t + 8 * i as u64).unwrap_or(0);
        let v = d.read_u64(e).ok();
        println!(
            "{i:3} {:#x} -> {}",
            e,
            v.map(|v| format!("{v:#x}")).unwrap_or("?".into())
        );
    }
}
