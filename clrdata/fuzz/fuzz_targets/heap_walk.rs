//! Whole-dump fuzzing, see dumpwalk.rs and tests::damage::fuzz_case("heap_walk").
#![no_main]
use libfuzzer_sys::fuzz_target;
mod dumpwalk;

fuzz_target!(|data: &[u8]| {
    dumpwalk::run("heap_walk", data);
});
