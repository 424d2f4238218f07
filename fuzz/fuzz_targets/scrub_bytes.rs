//! `cargo fuzz run --features hook scrub_bytes`: the byte-level scrubber, whose
//! output must be JSON whenever its input is.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tattler_fuzz::scrub_bytes(data));
