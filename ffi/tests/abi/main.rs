//! The C ABI called from Rust as a C program would call it, misuse included:
//! NULL everywhere, bad strings, calls after stop, entries outliving their
//! reader, a close racing a blocked wait. Against the fake apiserver; every
//! wait is bounded so a hang fails the test.
//!
//! One binary, one file per C object (the library is also an rlib, so these
//! call its extern functions directly); `support.rs` holds the calls wrapped
//! as a C program makes them. The C programs themselves are c_programs.rs's.

mod checkpoint;
mod config;
mod entry;
mod handles;
mod logging;
mod reader;
#[cfg(target_os = "linux")]
mod readiness;
mod status;
mod support;
