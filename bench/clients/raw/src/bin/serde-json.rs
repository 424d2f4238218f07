//! The naive parser: every frame into a `serde_json::Value`, its metadata
//! read, until the initial-events-end bookmark.

use std::time::Instant;

use serde_json::Value;

fn main() {
    let url = tattler_bench_raw::url_arg();
    let t0 = Instant::now();
    let mut objects = 0u64;
    let mut frame: Vec<u8> = Vec::with_capacity(64 << 10);
    let mut synced = false;
    let mut touched = 0usize;
    let mut failed = None;
    let bytes = tattler_bench_raw::stream(&url, tattler_bench_raw::WATCH_LIST, |mut data| {
        while !data.is_empty() {
            let Some(p) = memchr::memchr(b'\n', data) else {
                frame.extend_from_slice(data);
                break;
            };
            frame.extend_from_slice(&data[..p]);
            data = &data[p + 1..];
            let v: Value = match serde_json::from_slice(&frame) {
                Ok(v) => v,
                Err(e) => {
                    failed = Some(e.to_string());
                    return false;
                }
            };
            frame.clear();
            let md = &v["object"]["metadata"];
            if v["type"] == "BOOKMARK" {
                if md["annotations"]["k8s.io/initial-events-end"] == "true" {
                    synced = true;
                    return false;
                }
                continue;
            }
            objects += 1;
            touched += md["name"].as_str().map_or(0, str::len)
                + md["namespace"].as_str().map_or(0, str::len)
                + md["resourceVersion"].as_str().map_or(0, str::len);
        }
        true
    })
    .unwrap_or_else(|e| {
        eprintln!("serde-json: {e}");
        std::process::exit(1)
    });
    if let Some(e) = failed {
        eprintln!("serde-json: bad frame: {e}");
        std::process::exit(1);
    }
    if !synced || touched == 0 {
        eprintln!("serde-json: stream ended before the bookmark");
        std::process::exit(1);
    }
    tattler_bench_raw::report("serde_json", objects, bytes, t0.elapsed().as_secs_f64());
}
