//! kube-rs `watcher` on typed `Pod`s: on the replay server (a URL: plain http,
//! no auth) or on a real apiserver (a kubeconfig file).
//!
//! usage: kube-rs URL|KUBECONFIG [--list] [--live COUNT] [--fields SELECTOR] [--metadata]
//!
//! Default: `watcher::Config::default().streaming_lists()` (a watch-list).
//! --list: the default watcher config (paged LIST, then WATCH).
//! --fields SELECTOR: a field selector (`spec.nodeName=node-042`: a node agent).
//! --metadata: a watcher on `Api<PartialObjectMeta<Pod>>` (metadata-only requests).
//! --live COUNT: after InitDone, read COUNT live updates and report their
//!   latency (send timestamp annotation to the event) and CPU cost.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::PartialObjectMeta;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher;
use kube::{Api, Client, Config};

const STAMP: &str = "bench.tattler.dev/sent-unix-nanos";

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(url) = args.first() else {
        eprintln!("usage: kube-rs URL|KUBECONFIG [--list] [--live COUNT] [--fields SELECTOR] [--metadata]");
        std::process::exit(2)
    };
    let list = args.iter().any(|a| a == "--list");
    let live: Option<usize> = args
        .iter()
        .position(|a| a == "--live")
        .and_then(|i| args.get(i + 1)?.parse().ok());
    let fields = args
        .iter()
        .position(|a| a == "--fields")
        .and_then(|i| args.get(i + 1));
    let metadata = args.iter().any(|a| a == "--metadata");
    let client_name = if list { "kube-rs-list" } else { "kube-rs" };

    let t0 = Instant::now();
    let config = if url.starts_with("http://") || url.starts_with("https://") {
        Config::new(url.parse().expect("a URL"))
    } else {
        let kc = Kubeconfig::read_from(url).expect("a kubeconfig");
        Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .expect("a kubeconfig")
    };
    let client = Client::try_from(config).expect("a client");
    let api: Api<Pod> = Api::all(client.clone());
    let mut wc = if list {
        watcher::Config::default()
    } else {
        watcher::Config::default().streaming_lists()
    };
    if let Some(f) = fields {
        wc = wc.fields(f);
    }
    if metadata {
        if live.is_some() {
            eprintln!("kube-rs: --metadata measures the initial sync only");
            std::process::exit(2)
        }
        // kube 5: an Api of PartialObjectMeta makes metadata-only requests.
        let api: Api<PartialObjectMeta<Pod>> = Api::all(client);
        let mut stream = watcher(api, wc).boxed();
        let (objects, touched) = initial_sync(&mut stream, |p| touch_meta(&p.metadata)).await;
        let secs = t0.elapsed().as_secs_f64();
        println!(
            r#"{{"client":"kube-rs-metadata","objects":{objects},"bytes":0,"seconds_to_synced":{secs:.6},"touched":{touched}}}"#
        );
        return;
    }
    let mut stream = watcher(api, wc).boxed();
    let (objects, touched) = initial_sync(&mut stream, touch).await;
    let secs = t0.elapsed().as_secs_f64();
    let base = format!(
        r#""client":"{client_name}","objects":{objects},"bytes":0,"seconds_to_synced":{secs:.6},"touched":{touched}"#
    );
    let Some(count) = live else {
        println!("{{{base}}}");
        return;
    };
    let mut lat_ns: Vec<i64> = Vec::with_capacity(count);
    let mut first: Option<(Instant, f64)> = None;
    while lat_ns.len() < count {
        let ev = match tokio::time::timeout(std::time::Duration::from_secs(30), stream.next()).await
        {
            Ok(Some(Ok(ev))) => ev,
            _ => {
                eprintln!("kube-rs: no live update within 30 s");
                std::process::exit(1)
            }
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0);
        let watcher::Event::Apply(p) = ev else {
            continue;
        };
        if first.is_none() {
            first = Some((Instant::now(), cpu_seconds()));
        }
        let sent: Option<i64> = p
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(STAMP))
            .and_then(|v| v.parse().ok());
        if let Some(sent) = sent {
            lat_ns.push(now - sent);
        }
    }
    let (t1, c1) = first.expect("at least one update");
    let wall = t1.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - c1;
    lat_ns.sort_unstable();
    let pct = |p: f64| lat_ns[((lat_ns.len() as f64 - 1.0) * p).round() as usize] as f64 / 1e3;
    let rate = (count - 1) as f64 / wall;
    println!(
        r#"{{{base},"live_updates":{},"live_seconds":{wall:.3},"live_rate":{rate:.1},"live_cpu_seconds":{cpu:.4},"cpu_core_fraction_per_1000_ups":{:.5},"cpu_us_per_update":{:.2},"latency_us_p50":{:.1},"latency_us_p90":{:.1},"latency_us_p99":{:.1},"latency_us_max":{:.1}}}"#,
        lat_ns.len(),
        cpu / wall * 1000.0 / rate,
        cpu / count as f64 * 1e6,
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(1.0)
    );
}

/// Reads the stream up to InitDone, touching each initial object; exits on an error.
async fn initial_sync<K, S>(stream: &mut S, touch: impl Fn(&K) -> usize) -> (u64, usize)
where
    S: futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Unpin,
{
    let (mut objects, mut touched) = (0u64, 0usize);
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(watcher::Event::InitApply(p)) => {
                objects += 1;
                touched += touch(&p);
            }
            Ok(watcher::Event::InitDone) => break,
            Ok(_) => {}
            Err(e) => {
                eprintln!("kube-rs: {e}");
                std::process::exit(1)
            }
        }
    }
    (objects, touched)
}

fn touch(p: &Pod) -> usize {
    touch_meta(&p.metadata)
}

fn touch_meta(m: &kube::api::ObjectMeta) -> usize {
    m.name.as_deref().map_or(0, str::len)
        + m.namespace.as_deref().map_or(0, str::len)
        + m.resource_version.as_deref().map_or(0, str::len)
}

/// User + system CPU seconds of this process so far, from /proc/self/stat.
fn cpu_seconds() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 (1-based), i.e. 11 and 12 after the ')'.
    let ticks: f64 = f.get(11).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    ticks / 100.0
}
