//! decode-count FILE MODE [REPS]: runs one decoder over the watch frames of
//! FILE (one per line, as a watch-list body is; BOOKMARK and ERROR frames
//! are kept) REPS times (1), for instruction counts, which stay the same
//! from run to run on a shared machine where wall time does not:
//!
//!   valgrind --tool=callgrind --toggle-collect='*__fuzz*' \
//!       bench/target/release/decode-count FILE scrub
//!
//! With REPS > 1 it also prints the fastest repetition's microseconds per
//! frame (a wall-time check beside the counts; noisy on a shared machine).
//!
//! MODE: `scrub` (tattler's decoder with every edit on, as decode-cost's
//! first figure), `frames` (split into frames and decoded with no edits,
//! decode-cost's second), `serde` (serde_json's IgnoredAny check of each
//! frame). Prints the frames and bytes run over.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: decode-count FILE scrub|frames|serde [REPS]");
        std::process::exit(2);
    }
    let body = std::fs::read(&args[1]).unwrap_or_else(|e| {
        eprintln!("decode-count: {}: {e}", args[1]);
        std::process::exit(1);
    });
    let reps: usize = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(1);
    let lines: Vec<&[u8]> = body
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = std::time::Instant::now();
        match args[2].as_str() {
            "scrub" => lines.iter().for_each(|l| kube_tattler::__fuzz::event(l)),
            "frames" => kube_tattler::__fuzz::frames(&body, 1 << 20, 1 << 24),
            "serde" => lines.iter().for_each(|l| {
                std::hint::black_box(serde_json::from_slice::<serde::de::IgnoredAny>(l).is_ok());
            }),
            other => {
                eprintln!("decode-count: unknown mode {other:?}");
                std::process::exit(2);
            }
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "{{\"frames\":{},\"bytes\":{},\"reps\":{reps},\"best_us_per_frame\":{:.3}}}",
        lines.len(),
        body.len(),
        best * 1e6 / lines.len().max(1) as f64
    );
}
