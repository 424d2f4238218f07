//! `cargo fuzz run --features hook decode_protobuf`: protobuf watch and LIST
//! bodies of metadata-only streams, turned into JSON; and watch bodies
//! written with the edits in one pass, against the plain conversion walked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tattler_fuzz::decode_protobuf(data));
