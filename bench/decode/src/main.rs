//! decode-cost URL [FRAMES]: reads the first FRAMES (1,000) ADDED frames of
//! the replay server's watch-list, then times, per frame and on one thread:
//! tattler's decoder as a stream runs it (scrubbing and managedFields
//! removal on: `__fuzz::event`), the same without edits (`__fuzz::frames`,
//! framing included), serde_json checking the frame without building
//! anything (`IgnoredAny`: the least a validating parser does), the SIMD
//! JSON crate sonic-rs doing the same and skipping the whole frame in search
//! of a missing key, UTF-8 validation and the newline search. Prints one
//! JSON line, microseconds per frame (best of 5).

use std::time::Instant;

fn main() {
    let url = tattler_bench_raw::url_arg();
    let want: usize = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let mut body = Vec::new();
    let mut frames = 0;
    let read = tattler_bench_raw::stream(&url, tattler_bench_raw::WATCH_LIST, |data| {
        frames += memchr::memchr_iter(b'\n', data).count();
        body.extend_from_slice(data);
        frames <= want
    });
    if let Err(e) = read {
        eprintln!("decode-cost: reading {url}: {e}");
        std::process::exit(1);
    }
    // Whole ADDED frames only (the last read may end inside one).
    let body: Vec<u8> = body
        .split_inclusive(|&b| b == b'\n')
        .filter(|l| l.ends_with(b"\n") && l.starts_with(br#"{"type":"ADDED""#))
        .take(want)
        .flatten()
        .copied()
        .collect();
    let lines: Vec<&[u8]> = body
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let n = lines.len();
    let bytes = body.len();
    let reps = (200_000 / n.max(1)).max(1);
    let time = |f: &dyn Fn()| {
        (0..5)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..reps {
                    f();
                }
                t.elapsed().as_secs_f64() * 1e6 / (reps * n) as f64
            })
            .fold(f64::INFINITY, f64::min)
    };
    let scrub = time(&|| lines.iter().for_each(|l| kube_tattler::__fuzz::event(l)));
    let plain = time(&|| kube_tattler::__fuzz::frames(&body, 1 << 20, 1 << 20));
    let serde = time(&|| {
        lines.iter().for_each(|l| {
            std::hint::black_box(serde_json::from_slice::<serde::de::IgnoredAny>(l).is_ok());
        })
    });
    let sonic = time(&|| {
        lines.iter().for_each(|l| {
            std::hint::black_box(sonic_rs::from_slice::<serde::de::IgnoredAny>(l).is_ok());
        })
    });
    // Looking up a key that is not there checks and skips the whole frame.
    let sonic_skip = time(&|| {
        lines.iter().for_each(|l| {
            std::hint::black_box(sonic_rs::get_from_slice(l, &["none"]).is_err());
        })
    });
    let utf8 = time(&|| {
        lines.iter().for_each(|l| {
            std::hint::black_box(std::str::from_utf8(l).is_ok());
        })
    });
    let newline = time(&|| {
        std::hint::black_box(memchr::memchr_iter(b'\n', &body).count());
    });
    println!(
        "{{\"frames\":{n},\"bytes_per_frame\":{},\"us_per_frame\":{{\"tattler_decode_scrub\":{scrub:.2},\"tattler_frames_no_edits\":{plain:.2},\"serde_json_ignored_any\":{serde:.2},\"sonic_rs_ignored_any\":{sonic:.2},\"sonic_rs_get_missing_key\":{sonic_skip:.2},\"utf8\":{utf8:.3},\"newlines_memchr\":{newline:.3}}}}}",
        bytes / n.max(1)
    );
}
