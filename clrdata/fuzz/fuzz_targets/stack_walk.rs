//! Whole-dump fuzzing, see dumpwalk.rs and tests::damage::fuzz_case("stack_walk").
#![no_main]
use libfuzzer_sys::fuzz_target;
mod dumpwalk;

fuzz_target!(|data: &[u8]| {
    dumpwalk::run("stack_walk", data);
});
