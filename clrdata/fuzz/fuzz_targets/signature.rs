//! Every signature decoder, and both formatters, on arbitrary blobs.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    clrdata::metadata::fuzz_signature(data);
});
