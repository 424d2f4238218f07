//! Allocations per delivered entry (issue 39 item 4): a sync with a counting
//! allocator that counts calls (alloc, alloc_zeroed, realloc), all threads,
//! from just before the reader opens to Synced, divided by the objects.
//!
//! usage: tattler-rust-allocs URL [--noscrub]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tattler_bench_client::*;

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static REALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: defers every call to System; only counts the calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc_zeroed(l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        REALLOCS.fetch_add(1, Ordering::Relaxed);
        System.realloc(p, l, new)
    }
}

#[global_allocator]
static A: Counting = Counting;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = args
        .first()
        .cloned()
        .unwrap_or_else(|| die("usage: tattler-rust-allocs URL [--noscrub]"));
    let noscrub = args.iter().any(|a| a == "--noscrub");
    let (a0, r0) = (
        ALLOCS.load(Ordering::Relaxed),
        REALLOCS.load(Ordering::Relaxed),
    );
    let t0 = Instant::now();
    let reader = open(&url, noscrub);
    let s = sync(&reader, t0);
    let (a, r) = (
        ALLOCS.load(Ordering::Relaxed) - a0,
        REALLOCS.load(Ordering::Relaxed) - r0,
    );
    let n = s.objects.max(1) as f64;
    println!(
        r#"{{"client":"tattler-rust-allocs","objects":{},"allocs":{a},"reallocs":{r},"allocs_per_entry":{:.3},"reallocs_per_entry":{:.3}}}"#,
        s.objects,
        a as f64 / n,
        r as f64 / n
    );
    reader.close();
}
