//! `cargo fuzz run --features hook decode_frames`: the frame reader (input
//! arriving a few bytes at a time, against a small frame limit; the first two
//! bytes choose both) and event decoding of every frame.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tattler_fuzz::decode_frames(data));
