//! `cargo fuzz run watch_stream`: see the crate documentation in src/lib.rs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tattler_fuzz::watch_stream(data));
