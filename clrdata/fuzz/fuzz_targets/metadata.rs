//! Metadata::parse on arbitrary bytes (seeded with real metadata and PE images), then every
//! accessor over every row: nothing may panic, loop without bound or allocate unboundedly.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    clrdata::metadata::fuzz_exercise(data);
});
