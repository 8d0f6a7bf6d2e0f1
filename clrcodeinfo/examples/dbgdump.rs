//! Development aid: print the decoded debug info of every method in a tests/data file.
use clrcodeinfo::debuginfo::{DebugInfo, DebugInfoFormat};
fn main() {
    let path = std::env::args().nth(1).expect("data json");
    let filter = std::env::args().nth(2).unwrap_or_default();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for m in v["methods"].as_array().unwrap() {
        let name = m["name"].as_str().unwrap();
        if !name.contains(&filter) {
            continue;
        }
        let Some(d) = m.get("debug_info") else {
            continue;
        };
        let h = d["hex"].as_str().unwrap();
        let bytes: Vec<u8> = (0..h.len() / 2)
            .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let fmt = match d["format"].as_str().unwrap() {
            "net8-jit" => DebugInfoFormat::Net8 { flag_byte: true },
            "net8-r2r" => DebugInfoFormat::Net8 { flag_byte: false },
            "net10-jit" => DebugInfoFormat::Net10 { flag_byte: true },
            "net10-r2r" => DebugInfoFormat::Net10 { flag_byte: false },
            _ => DebugInfoFormat::Net11,
        };
        match DebugInfo::decode(&bytes, fmt) {
            Ok(di) => {
                println!(
                    "{name} {}: bounds {} vars {} pp {:?} rich {:?} async {:?} points {:?}",
                    m["start"],
                    di.bounds.len(),
                    di.vars.len(),
                    di.patchpoint_info,
                    di.rich_debug_info,
                    di.async_info_bytes,
                    di.async_suspension_points
                );
                if let Some(r) = &di.async_info_bytes {
                    println!("   async bytes {:02x?}", &bytes[r.clone()]);
                }
            }
            Err(e) => println!("{name}: ERR {e}"),
        }
    }
}
