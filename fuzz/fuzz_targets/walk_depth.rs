//! `cargo fuzz run --features hook walk_depth`: objects nested up to twice the
//! walker's limit, in any shape, walked on a 64 KiB stack.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tattler_fuzz::walk_depth(data));
