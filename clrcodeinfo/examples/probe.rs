//! Development aid: decode blobs listed in a manifest (one per line:
//! `gc_file gc_version dbg_file|- dbg_format method_size gap name`) and report.
use clrcodeinfo::debuginfo::{DebugInfo, DebugInfoFormat};
use clrcodeinfo::gcinfo::GcInfo;

fn fmt(s: &str) -> DebugInfoFormat {
    match s {
        "net8-jit" => DebugInfoFormat::Net8 { flag_byte: true },
        "net8-r2r" => DebugInfoFormat::Net8 { flag_byte: false },
        "net10-jit" => DebugInfoFormat::Net10 { flag_byte: true },
        "net10-r2r" => DebugInfoFormat::Net10 { flag_byte: false },
        _ => DebugInfoFormat::Net11,
    }
}

fn main() {
    let path = std::env::args().nth(1).expect("manifest");
    let verbose = std::env::args().nth(2).is_some();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let f: Vec<&str> = line.splitn(7, ' ').collect();
        let gc = std::fs::read(f[0]).unwrap();
        let ver: u32 = f[1].parse().unwrap();
        let size: u32 = f[4].parse().unwrap();
        let gap: i64 = f[5].parse().unwrap();
        match GcInfo::decode(&gc, ver) {
            Ok(g) => {
                let ok = g.header.code_length == size;
                println!(
                    "{} gc v{ver}: code_length {} (method {size}) {} size {} gap {gap} slots {}/{}/{} sp {} ranges {} fat {} {}",
                    if ok { "OK " } else { "BAD" },
                    g.header.code_length,
                    if ok { "" } else { "MISMATCH" },
                    g.size(),
                    g.num_registers,
                    g.num_tracked,
                    g.num_untracked,
                    g.safe_points().len(),
                    g.interruptible_ranges.len(),
                    g.header.fat,
                    f[6]
                );
                if verbose {
                    println!("   {:?}", g.header);
                }
            }
            Err(e) => println!("ERR gc v{ver}: {e} {}", f[6]),
        }
        if f[2] != "-" {
            let d = std::fs::read(f[2]).unwrap();
            match DebugInfo::decode(&d, fmt(f[3])) {
                Ok(di) => {
                    println!(
                        "    dbg {}: {} bounds, {} vars, size {}",
                        f[3],
                        di.bounds.len(),
                        di.vars.len(),
                        di.size
                    );
                    if verbose {
                        for b in &di.bounds {
                            println!(
                                "      {:#x} -> {:#x} {:#x}",
                                b.native_offset, b.il_offset, b.source.0
                            );
                        }
                        for v in &di.vars {
                            println!("      {:?}", v);
                        }
                    }
                }
                Err(e) => println!("    dbg ERR {}: {e}", f[3]),
            }
        }
    }
}
