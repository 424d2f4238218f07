//! `cargo fuzz run config_json`: see the crate documentation in src/lib.rs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tattler_fuzz::config_json(data));
