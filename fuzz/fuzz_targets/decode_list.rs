//! `cargo fuzz run --features hook decode_list`: LIST page decoding and the
//! metadata of each item.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tattler_fuzz::decode_list(data));
