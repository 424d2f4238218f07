//! tattler's Rust API on the replay server.
//!
//! usage: tattler-rust URL|CONFIG.json [--noscrub] [--live COUNT | --relist]
//!
//! URL is the replay server's; CONFIG.json a configuration for
//! `Config::from_json` (a real apiserver: bench/real.sh writes them).
//! Default: sync and print {"client","objects","bytes","seconds_to_synced",…}.
//! --live COUNT: after Synced, read COUNT live updates; print their latency
//!   (send timestamp in the object to next() returning) and the CPU they cost.
//! --relist: after Synced, call reader.relist() from a thread while this one
//!   consumes its entries; print its time, CPU and peak RSS.

use std::time::Instant;

use kube_tattler::Change;
use tattler_bench_client::*;

const STAMP: &[u8] = br#""bench.tattler.dev/sent-unix-nanos":""#;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = args.first().cloned().unwrap_or_else(|| {
        die("usage: tattler-rust URL|CONFIG.json [--noscrub] [--live COUNT | --relist]")
    });
    let noscrub = args.iter().any(|a| a == "--noscrub");
    let live: Option<u64> = args
        .iter()
        .position(|a| a == "--live")
        .and_then(|i| args.get(i + 1)?.parse().ok());
    let relist = args.iter().any(|a| a == "--relist");
    let client = if noscrub {
        "tattler-rust-noscrub"
    } else {
        "tattler-rust"
    };

    let t0 = Instant::now();
    let reader = open(&url, noscrub);
    let s = sync(&reader, t0);
    let stats = reader.stats();
    let st = &stats[0];
    let base = format!(
        r#""client":"{client}","objects":{},"bytes":{},"seconds_to_synced":{:.6},"tracked":{},"touched":{}"#,
        s.objects, st.bytes, s.seconds, st.objects, s.touched
    );
    if let Some(count) = live {
        live_phase(&reader, &base, count);
    } else if relist {
        relist_phase(&reader, &base);
    } else {
        println!("{{{base}}}");
    }
    reader.close();
}

/// Reads `count` live updates and reports their latency and CPU cost.
fn live_phase(reader: &kube_tattler::Reader, base: &str, count: u64) {
    let mut lat_ns: Vec<i64> = Vec::with_capacity(count as usize);
    let mut first: Option<(Instant, f64)> = None;
    let mut missing = 0u64;
    while (lat_ns.len() as u64) < count {
        let e = match reader.next_timeout(std::time::Duration::from_secs(30)) {
            Ok(e) => e,
            Err(_) => die("no live update within 30 s"),
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0);
        if e.change() != Change::Update {
            continue;
        }
        if first.is_none() {
            // The CPU window opens at the first live update: it excludes the
            // pause the server makes after the bookmark.
            first = Some((Instant::now(), cpu_seconds()));
        }
        let Some(sent) = e.object().and_then(stamp) else {
            missing += 1;
            continue;
        };
        lat_ns.push(now - sent);
    }
    let (t1, c1) = first.unwrap_or((Instant::now(), cpu_seconds()));
    let wall = t1.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - c1;
    lat_ns.sort_unstable();
    let pct = |p: f64| {
        let i = ((lat_ns.len() as f64 - 1.0) * p).round() as usize;
        lat_ns.get(i).copied().unwrap_or(0) as f64 / 1e3
    };
    let rate = (count.saturating_sub(1)) as f64 / wall;
    println!(
        r#"{{{base},"live_updates":{},"live_missing_stamp":{missing},"live_seconds":{wall:.3},"live_rate":{rate:.1},"live_cpu_seconds":{cpu:.4},"cpu_core_fraction_per_1000_ups":{:.5},"cpu_us_per_update":{:.2},"latency_us_p50":{:.1},"latency_us_p90":{:.1},"latency_us_p99":{:.1},"latency_us_max":{:.1}}}"#,
        lat_ns.len(),
        cpu / wall * 1000.0 / rate,
        cpu / count as f64 * 1e6,
        pct(0.50),
        pct(0.90),
        pct(0.99),
        pct(1.0),
    );
}

/// The send time in a live update's annotation.
fn stamp(obj: &[u8]) -> Option<i64> {
    let at = obj.windows(STAMP.len()).position(|w| w == STAMP)? + STAMP.len();
    std::str::from_utf8(obj.get(at..at + 19)?)
        .ok()?
        .parse()
        .ok()
}

/// Relists while consuming the entries it produces.
fn relist_phase(reader: &kube_tattler::Reader, base: &str) {
    settle();
    let rss_before = status_kb("VmRSS");
    let hwm_before = status_kb("VmHWM");
    let peak_reset = reset_peak_rss();
    let c0 = cpu_seconds();
    let t0 = Instant::now();
    let (mut snapshots, mut updates, mut deletes, mut adds, mut other) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let (ok, relist_secs, consumed_secs) = std::thread::scope(|s| {
        let h = s.spawn(|| {
            let ok = reader.relist();
            (ok, t0.elapsed().as_secs_f64())
        });
        loop {
            let e = reader
                .next()
                .unwrap_or_else(|_| die("closed during the relist"));
            match e.change() {
                Change::Snapshot => snapshots += 1,
                Change::Update => updates += 1,
                Change::Delete => deletes += 1,
                Change::Add => adds += 1,
                Change::Synced => break,
                _ => other += 1,
            }
        }
        let consumed = t0.elapsed().as_secs_f64();
        let (ok, secs) = h.join().expect("relist thread");
        (ok, secs, consumed)
    });
    let cpu = cpu_seconds() - c0;
    let hwm = status_kb("VmHWM");
    settle();
    let rss_after = status_kb("VmRSS");
    let relists = reader.stats()[0].relists;
    println!(
        r#"{{{base},"relist_ok":{ok},"relists":{relists},"relist_seconds":{relist_secs:.3},"relist_synced_after_seconds":{consumed_secs:.3},"relist_cpu_seconds":{cpu:.3},"snapshots":{snapshots},"updates":{updates},"deletes":{deletes},"adds":{adds},"other":{other},"rss_before_kb":{rss_before},"peak_rss_before_kb":{hwm_before},"peak_rss_during_relist_kb":{},"rss_after_kb":{rss_after}}}"#,
        if peak_reset { hwm } else { 0 }
    );
}
