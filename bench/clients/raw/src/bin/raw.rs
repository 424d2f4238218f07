//! The physical limit: de-chunk the watch-list and split frames on newlines,
//! without copying or parsing them, until the initial-events-end bookmark.
//!
//! usage: raw URL [--owned]
//!
//! --owned: also copy every frame into a fresh `Vec<u8>` (then drop it), the
//! least any API that hands out owned frames must do ("raw-owned").

use std::time::Instant;

fn main() {
    let url = tattler_bench_raw::url_arg();
    let owned = std::env::args().any(|a| a == "--owned");
    let t0 = Instant::now();
    let mut kept = 0usize;
    let mut pending: Vec<u8> = Vec::new();
    let mut frames = 0u64;
    // The start of the current frame, kept only to recognise the bookmark.
    let mut head: Vec<u8> = Vec::with_capacity(256);
    let mut in_bookmark = false;
    let mut synced = false;
    let bytes = tattler_bench_raw::stream(&url, tattler_bench_raw::WATCH_LIST, |mut data| {
        while !data.is_empty() {
            match memchr::memchr(b'\n', data) {
                Some(p) => {
                    let part = &data[..p];
                    frames += 1;
                    if owned {
                        let mut f = Vec::with_capacity(pending.len() + part.len());
                        f.extend_from_slice(&pending);
                        f.extend_from_slice(part);
                        kept += std::hint::black_box(f).len();
                        pending.clear();
                    }
                    // Usually the whole frame is in this slice: look at it in place.
                    let whole = if head.is_empty() {
                        part
                    } else {
                        if in_bookmark || head.len() < 18 {
                            head.extend_from_slice(part);
                        }
                        &head[..]
                    };
                    if tattler_bench_raw::is_initial_events_end(whole) {
                        synced = true;
                        return false;
                    }
                    head.clear();
                    in_bookmark = false;
                    data = &data[p + 1..];
                }
                None => {
                    if owned {
                        pending.extend_from_slice(data);
                    }
                    if in_bookmark || head.len() < 18 {
                        head.extend_from_slice(data);
                        in_bookmark = head.starts_with(br#"{"type":"BOOKMARK""#);
                    }
                    data = &[];
                }
            }
        }
        true
    })
    .unwrap_or_else(|e| {
        eprintln!("raw: {e}");
        std::process::exit(1)
    });
    if !synced {
        eprintln!("raw: stream ended before the bookmark");
        std::process::exit(1);
    }
    if owned && kept == 0 {
        eprintln!("raw: nothing copied");
        std::process::exit(1);
    }
    let name = if owned { "raw-owned" } else { "raw" };
    tattler_bench_raw::report(name, frames - 1, bytes, t0.elapsed().as_secs_f64());
}
