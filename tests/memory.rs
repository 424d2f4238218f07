//! Retained state per tracked object, counted by a counting allocator (not
//! timed, not sampled): live heap bytes after a sync of N objects, with every
//! entry consumed and dropped, minus live bytes before the reader opened.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use common::*;
use kube_tattler::Change;
use tattler_fakeapi::FakeApi;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new as isize - l.size() as isize, Ordering::Relaxed);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// Live heap bytes a synced reader of `n` configmaps keeps, per object.
fn retained_per_object(n: usize) -> f64 {
    let api = FakeApi::start();
    for i in 0..n {
        // Names as long as typical pod names (about 35 bytes), in 50 namespaces.
        let name = format!("web-{:08}-7d9f8c6b5d-x{:05}", i, i % 99_999);
        api.apply(
            "configmaps",
            FakeApi::object(Some(&format!("team-{}", i % 50)), &name),
        );
    }
    let before = LIVE.load(Ordering::Relaxed);
    let r = open(&api, &["configmaps"]);
    let mut got = 0;
    while next(&r).change() != Change::Synced {
        got += 1;
    }
    assert_eq!(got, n);
    // The watch stays open, idle: what is left is the reader's retained state.
    assert_quiet(&r, Duration::from_millis(200));
    let after = LIVE.load(Ordering::Relaxed);
    assert_eq!(r.stats()[0].objects, n as u64);
    let per_object = (after - before) as f64 / n as f64;
    println!("retained: {} bytes for {n} objects = {per_object:.1} bytes/object (stream buffers included)", after - before);
    per_object
}

#[test]
fn retained_state_is_at_most_128_bytes_per_object() {
    let _w = Watchdog::new("memory", Duration::from_secs(240));
    // 28,700 objects fill the state's hash table to 44% (its worst, just past
    // a doubling); 57,000 to 87% (its best).
    for n in [28_700, 57_000] {
        let per_object = retained_per_object(n);
        assert!(
            per_object <= 128.0,
            "{per_object:.1} bytes per tracked object at {n} objects"
        );
    }
}
