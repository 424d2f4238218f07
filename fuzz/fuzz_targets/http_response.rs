//! `cargo fuzz run --features hook http_response`: tattler's HTTP/1.1
//! response reader (head, interim answers, framing, chunks, trailers) on any
//! bytes, read whole, in small pieces and cut at every byte; every way must
//! agree, nothing may panic, and the read buffer stays bounded.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tattler_fuzz::http_response(data));
