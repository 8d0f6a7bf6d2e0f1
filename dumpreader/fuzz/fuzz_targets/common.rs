use dumpreader::{Dump, Memory};

/// Opens `data` (forced to the given magic) and touches everything a caller might.
pub fn run(magic: &[u8], data: &[u8]) {
    let mut bytes = magic.to_vec();
    bytes.extend_from_slice(data.get(magic.len()..).unwrap_or(&[]));
    for strict in [false, true] {
        let opts = dumpreader::OpenOptions { strict, ..Default::default() };
        let Ok(d) = Dump::from_bytes_with(bytes.clone(), &opts) else { continue };
        let _ = d.info();
        for t in d.threads() {
            let mut b = [0u8; 64];
            let _ = d.read(t.context.rsp, &mut b);
            let _ = d.symbolize(t.context.rip);
        }
        for m in d.modules().to_vec() {
            let _ = d.module_image(&m);
            let _ = d.find_export(&m, "coreclr_initialize");
        }
        for r in d.memory_ranges().take(256) {
            let mut b = [0u8; 40];
            let _ = d.read(r.address, &mut b);
            let _ = d.read(r.end().saturating_sub(20), &mut b);
            let _ = d.read_cstr(r.address, 64);
            let _ = d.read_utf16(r.address, 8);
        }
    }
}
