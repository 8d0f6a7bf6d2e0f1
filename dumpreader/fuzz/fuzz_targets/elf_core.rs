#![no_main]
use libfuzzer_sys::fuzz_target;
mod common;

fuzz_target!(|data: &[u8]| {
    // The ELF magic is fixed so the fuzzer spends its time past format detection.
    common::run(b"\x7fELF", data);
});
