//! Memory per tracked object: sync, drop every entry, let the reader settle,
//! then report live heap bytes (a counting allocator), RSS and tattler's own
//! object count. Run against N pods and against 0 pods; the difference over N
//! is what each tracked object costs.
//!
//! usage: tattler-rust-mem URL [--noscrub]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Instant;

use tattler_bench_client::*;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: defers every call to System; only counts the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        System.dealloc(p, l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        System.alloc_zeroed(l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new as isize - l.size() as isize, Ordering::Relaxed);
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
        .unwrap_or_else(|| die("usage: tattler-rust-mem URL [--noscrub]"));
    let noscrub = args.iter().any(|a| a == "--noscrub");
    let t0 = Instant::now();
    let reader = open(&url, noscrub);
    let s = sync(&reader, t0);
    settle();
    let heap = LIVE.load(Ordering::Relaxed);
    let rss = status_kb("VmRSS");
    let hwm = status_kb("VmHWM");
    let st = &reader.stats()[0];
    println!(
        r#"{{"client":"tattler-rust-mem","objects":{},"tracked":{},"seconds_to_synced":{:.6},"heap_bytes_after_sync":{heap},"rss_kb_after_sync":{rss},"peak_rss_kb":{hwm}}}"#,
        s.objects, st.objects, s.seconds
    );
    reader.close();
}
