//! Whole-dump fuzzing, see dumpwalk.rs and tests::damage::fuzz_case("async_chain").
#![no_main]
use libfuzzer_sys::fuzz_target;
mod dumpwalk;

fuzz_target!(|data: &[u8]| {
    dumpwalk::run("async_chain", data);
});
