//! Shards: two readers, shards 0 and 1 of 2, over the same pods with churn,
//! against a server that ignores `shardSelector` (Kubernetes 1.36 without the
//! `ShardedListAndWatch` gate: tattler filters) and one that honours it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::common::tls::capture_log;
use crate::common::*;
use kube_tattler::{Change, Reader, Shard, Sharding};
use tattler_fakeapi::{FakeApi, Fault};

/// `shardSelector` of shard 0 and 1 of 2, as the requests carry it.
const SELECTORS: [&str; 2] = [
    "shardSelector=shardRange%28object.metadata.uid%2C%20%270x0000000000000000%27%2C%20%270x8000000000000000%27%29",
    "shardSelector=shardRange%28object.metadata.uid%2C%20%270x8000000000000000%27%2C%20%270x10000000000000000%27%29",
];

type Held = BTreeMap<(String, String), String>;

/// One replica: its reader and what its consumer holds, (namespace, name) -> uid.
struct Replica {
    shard: Shard,
    reader: Reader,
    held: Held,
}

impl Replica {
    fn open(api: &FakeApi, index: u32) -> Replica {
        let mut c = config(api, &["pods"]);
        c.shard = Some(Shard::new(2, index).unwrap());
        Replica {
            shard: c.shard.unwrap(),
            reader: Reader::open(c).unwrap(),
            held: Held::new(),
        }
    }

    /// Applies one entry to the consumer's map: an Add, Update or Snapshot
    /// must be of the shard's objects, and consistent with what the
    /// consumer holds; a Delete of what it holds.
    fn take(&mut self, timeout: Duration) -> Option<Change> {
        let e = self.reader.next_timeout(timeout).ok()?;
        let key = (
            e.namespace().unwrap_or_default().to_string(),
            e.name().to_string(),
        );
        match e.change() {
            Change::Add | Change::Update | Change::Snapshot => {
                assert!(
                    self.shard.owns(e.uid()),
                    "shard {} got {} of {key:?} (uid {})",
                    self.shard,
                    show(&e),
                    e.uid()
                );
                // An Add of what the consumer lacks; an Update or Snapshot of what it holds.
                let before = self.held.insert(key, e.uid().to_string());
                let want = (e.change() != Change::Add).then(|| e.uid().to_string());
                assert_eq!(before, want, "{}", show(&e));
            }
            // Only of what the consumer holds (an object that left the
            // shard, when the shard changed, included): none of the other
            // shard's deletes.
            Change::Delete => {
                assert_eq!(
                    self.held.remove(&key).as_deref(),
                    Some(e.uid()),
                    "{}",
                    show(&e)
                );
            }
            Change::Synced | Change::Stale => {}
            _ => panic!("shard {}: {}", self.shard, show(&e)),
        }
        Some(e.change())
    }

    fn until_synced(&mut self) {
        while self.take(Duration::from_secs(30)) != Some(Change::Synced) {}
    }

    /// Takes entries until the consumer holds exactly the shard's part of
    /// `server` and the reader says it is current (no re-sync under way).
    fn converge(&mut self, server: &Held) {
        let want: Held = server
            .iter()
            .filter(|(_, uid)| self.shard.owns(uid))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.held != want || !self.reader.stats()[0].current {
            assert!(
                Instant::now() < deadline,
                "shard {}: holds {:?}, the server's part is {:?}",
                self.shard,
                self.held,
                want
            );
            self.take(Duration::from_millis(100));
        }
    }
}

/// The pods the server has, (namespace, name) -> uid.
fn server_pods(api: &FakeApi) -> Held {
    api.objects("pods")
        .iter()
        .map(|o| {
            let m = &o["metadata"];
            let s = |k: &str| m[k].as_str().unwrap().to_string();
            ((s("namespace"), s("name")), s("uid"))
        })
        .collect()
}

/// Adds, updates, deletes, and deletes then re-creates (a new uid, so the
/// name may change shards).
fn churn(api: &FakeApi, round: usize) {
    for i in 0..10 {
        pod(api, "a", &format!("p{i}")); // Update
    }
    for i in 10..16 {
        api.delete("pods", Some("b"), &format!("p{i}"));
    }
    for i in 16..22 {
        let ns = if i % 2 == 0 { "a" } else { "b" };
        api.delete("pods", Some(ns), &format!("p{i}"));
        pod(api, ns, &format!("p{i}"));
    }
    for i in 0..12 {
        pod(api, "b", &format!("new-{round}-{i}"));
    }
}

/// Both consumers hold exactly their shard's part of the server, so their
/// union is the server's objects and no object is held twice.
fn assert_split(api: &FakeApi, replicas: &mut [Replica; 2]) {
    let server = server_pods(api);
    for r in replicas.iter_mut() {
        r.converge(&server);
    }
    let mut union = replicas[0].held.clone();
    for (k, v) in &replicas[1].held {
        assert!(
            union.insert(k.clone(), v.clone()).is_none(),
            "{k:?} held by both shards"
        );
    }
    assert_eq!(union, server);
    assert!(
        !replicas[0].held.is_empty() && !replicas[1].held.is_empty(),
        "a shard is empty: {:?}",
        replicas.iter().map(|r| r.held.len()).collect::<Vec<_>>()
    );
}

fn seed(api: &FakeApi) {
    for i in 0..40 {
        pod(
            api,
            if i < 10 || i % 2 == 0 { "a" } else { "b" },
            &format!("p{i}"),
        );
    }
}

/// Every request for pods carried its reader's shardSelector (but a probe
/// of the current resourceVersion, which reads no object).
fn assert_requests_ask_for_the_shard(api: &FakeApi) {
    let pods: Vec<String> = requests(api)
        .into_iter()
        .filter(|r| r.starts_with("GET /api/v1/pods") && r != "GET /api/v1/pods?limit=1")
        .collect();
    assert!(pods.len() >= 2, "{pods:?}");
    for r in &pods {
        let n = SELECTORS.iter().filter(|s| r.contains(*s)).count();
        assert_eq!(n, 1, "{r}");
    }
    for s in SELECTORS {
        assert!(
            pods.iter().any(|r| r.contains(s)),
            "no request with {s}: {pods:?}"
        );
    }
}

#[test]
fn two_shards_split_the_pods_where_the_server_does_not_shard() {
    let _w = Watchdog::new("two_shards_split_the_pods", Duration::from_secs(60));
    let api = FakeApi::start();
    seed(&api);
    let mut replicas = [Replica::open(&api, 0), Replica::open(&api, 1)];
    for r in &mut replicas {
        r.until_synced();
    }
    assert_split(&api, &mut replicas);
    churn(&api, 0);
    assert_split(&api, &mut replicas);
    // A re-sync while the pods changed behind the readers' backs: the
    // inferred Deletes are only of what each holds.
    for _ in 0..2 {
        api.push_fault(
            "pods",
            Fault::Status {
                code: 503,
                reason: "ServiceUnavailable".into(),
                message: "busy".into(),
                retry_after: Some(1),
            },
        );
    }
    let before = api.requests().len();
    api.end_watches();
    assert!(api.wait_requests(before + 2, Duration::from_secs(10)));
    churn(&api, 1);
    api.compact();
    assert_split(&api, &mut replicas);
    for r in &mut replicas {
        let s = &r.reader.stats()[0];
        // The fake sent each reader every pod: the other shard's were dropped here.
        assert!(s.other_shard_drops > 0, "{s:?}");
        assert_eq!(s.sharding, Some(Sharding::Here), "{s:?}");
        assert!(s.resyncs >= 1, "{s:?}");
        assert_eq!(s.objects as usize, r.held.len(), "{s:?}");
        let metrics = r.reader.metrics_text();
        let series = format!(
            "tattler_other_shard_drops_total{{resource=\"v1/pods\",shard=\"{}\",sharding=\"here\"}} {}",
            r.shard, s.other_shard_drops
        );
        assert!(metrics.contains(&series), "{series} not in\n{metrics}");
    }
    assert_requests_ask_for_the_shard(&api);
}

#[test]
fn two_shards_where_the_server_shards_drop_nothing() {
    let _w = Watchdog::new("two_shards_server_side", Duration::from_secs(60));
    let api = FakeApi::start();
    api.set_sharding(true);
    seed(&api);
    let mut replicas = [Replica::open(&api, 0), Replica::open(&api, 1)];
    for r in &mut replicas {
        r.until_synced();
    }
    assert_split(&api, &mut replicas);
    churn(&api, 0);
    assert_split(&api, &mut replicas);
    // The server sent each reader only its part: nothing to drop here. By
    // watch-list, nothing says the server shards either: its events carry
    // no shardInfo.
    for r in &replicas {
        let s = &r.reader.stats()[0];
        assert_eq!(s.other_shard_drops, 0, "{s:?}");
        assert_eq!(s.sharding, Some(Sharding::Unknown), "{s:?}");
        assert!(r
            .reader
            .metrics_text()
            .contains(&format!("shard=\"{}\",sharding=\"unknown\"}}", r.shard)));
    }
    assert_requests_ask_for_the_shard(&api);
}

/// The label every series of the reader's first stream carries.
fn sharding_label(r: &Replica) -> String {
    let metrics = r.reader.metrics_text();
    let line = metrics
        .lines()
        .find(|l| l.starts_with("tattler_objects{"))
        .unwrap_or_else(|| panic!("no tattler_objects in\n{metrics}"));
    let label = line.split("sharding=\"").nth(1).unwrap_or_default();
    label.split('"').next().unwrap_or_default().to_string()
}

/// Waits until the reader's first stream says `want`.
fn wait_sharding(r: &mut Replica, server: &Held, want: Sharding) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while r.reader.stats()[0].sharding != Some(want) {
        assert!(
            Instant::now() < deadline,
            "{:?}, not {want:?}",
            r.reader.stats()[0]
        );
        r.converge(server);
    }
}

/// A LIST page's `metadata.shardInfo` names the shard: the stream says the
/// server shards, in its stats, its metrics and once in the log; a server
/// that stops sharding is caught by the first object outside the shard, and
/// one that shards again by its next LIST.
#[test]
fn a_sharded_list_says_the_server_shards_and_an_object_outside_says_it_does_not() {
    let _w = Watchdog::new(
        "a_sharded_list_says_the_server_shards",
        Duration::from_secs(60),
    );
    let log = capture_log();
    let api = FakeApi::start();
    api.set_sharding(true);
    api.set_watchlist(false);
    seed(&api);
    let mut r = Replica::open(&api, 0);
    r.until_synced();
    r.converge(&server_pods(&api));
    let s = r.reader.stats().remove(0);
    assert!(s.list_fallback, "{s:?}");
    assert_eq!(s.sharding, Some(Sharding::Server), "{s:?}");
    assert_eq!(s.other_shard_drops, 0, "{s:?}");
    assert_eq!(sharding_label(&r), "server");
    assert!(log
        .wait_for(
            &[
                "v1/pods: the server shards (shardInfo \"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')\")",
                "shard 0/2",
            ],
            Duration::from_secs(5),
        )
        .is_some());
    // The server stops sharding (an apiserver without the gate takes the
    // next watch): the first pod of the other shard proves it.
    api.set_sharding(false);
    let before = api.requests().len();
    api.end_watches();
    assert!(api.wait_requests(before + 1, Duration::from_secs(10)));
    churn(&api, 0);
    wait_sharding(&mut r, &server_pods(&api), Sharding::Here);
    assert!(r.reader.stats()[0].other_shard_drops > 0);
    assert_eq!(sharding_label(&r), "here");
    // Sharding again, the next full state (a LIST: the history is gone
    // while the stream is kept out) says so.
    api.set_sharding(true);
    for _ in 0..2 {
        api.push_fault(
            "pods",
            Fault::Status {
                code: 503,
                reason: "ServiceUnavailable".into(),
                message: "busy".into(),
                retry_after: Some(1),
            },
        );
    }
    let before = api.requests().len();
    api.end_watches();
    assert!(api.wait_requests(before + 2, Duration::from_secs(10)));
    churn(&api, 1);
    api.compact();
    wait_sharding(&mut r, &server_pods(&api), Sharding::Server);
    assert!(r.reader.stats()[0].resyncs >= 1);
    assert_eq!(sharding_label(&r), "server");
}

/// A metadata-only LIST (a `PartialObjectMetadataList`) carries no
/// shardInfo, even from a server that shards: the stream cannot tell.
#[test]
fn a_metadata_only_list_proves_nothing() {
    let _w = Watchdog::new(
        "a_metadata_only_list_proves_nothing",
        Duration::from_secs(30),
    );
    let api = FakeApi::start();
    api.set_sharding(true);
    api.set_watchlist(false);
    seed(&api);
    let mut c = config(&api, &["pods"]);
    let pods: kube_tattler::ResourceSpec = "pods".parse().unwrap();
    c.resources = vec![pods.metadata_only().in_shard(Shard::new(2, 1).unwrap())];
    let mut r = Replica {
        shard: Shard::new(2, 1).unwrap(),
        reader: Reader::open(c).unwrap(),
        held: Held::new(),
    };
    r.until_synced();
    r.converge(&server_pods(&api));
    let s = r.reader.stats().remove(0);
    assert!(s.list_fallback, "{s:?}");
    assert_eq!(s.other_shard_drops, 0, "{s:?}");
    assert_eq!(s.sharding, Some(Sharding::Unknown), "{s:?}");
    assert_eq!(sharding_label(&r), "unknown");
    // Without a shard there is nothing to say.
    let plain = open(&api, &["pods"]);
    let s = plain.stats().remove(0);
    assert_eq!(s.sharding, None, "{s:?}");
    assert!(!plain.metrics_text().contains("sharding="));
}

#[test]
fn resources_set_later_take_the_configuration_s_shard() {
    let _w = Watchdog::new(
        "resources_set_later_take_the_shard",
        Duration::from_secs(30),
    );
    let api = FakeApi::start();
    let mut r = Replica::open(&api, 0);
    r.until_synced();
    let configmaps: kube_tattler::ResourceSpec = "configmaps".parse().unwrap();
    let own = configmaps
        .clone()
        .in_namespace("x")
        .in_shard(Shard::new(2, 1).unwrap());
    let before = api.requests().len();
    assert!(r.reader.set_resources(&[configmaps, own]).unwrap());
    // The two streams start at once (pods' stops: not in the new set).
    assert!(api.wait_requests(before + 2, Duration::from_secs(10)));
    let mut cms: Vec<String> = requests(&api)
        .into_iter()
        .filter(|q| q.contains("configmaps"))
        .collect();
    cms.sort();
    assert_eq!(
        cms,
        [
            format!("GET /api/v1/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&{}", SELECTORS[0]),
            format!("GET /api/v1/namespaces/x/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&{}", SELECTORS[1]),
        ]
    );
}

#[test]
fn changing_a_resource_s_shard_re_syncs_against_what_the_consumer_holds() {
    let _w = Watchdog::new("changing_the_shard_re_syncs", Duration::from_secs(60));
    let api = FakeApi::start();
    seed(&api);
    let server = server_pods(&api);
    let mut r = Replica::open(&api, 0);
    r.until_synced();
    r.converge(&server);
    let half = r.held.clone();
    let pods: kube_tattler::ResourceSpec = "pods".parse().unwrap();
    // Taking every shard: the other half comes as Add, nothing is deleted.
    r.shard = Shard::new(1, 0).unwrap();
    assert!(r
        .reader
        .set_resources(&[pods.clone().in_shard(r.shard)])
        .unwrap());
    r.converge(&server);
    assert!(half.iter().all(|(k, v)| r.held.get(k) == Some(v)));
    // Back to one half: the other half's objects are inferred Deletes.
    r.shard = Shard::new(2, 0).unwrap();
    assert!(r.reader.set_resources(&[pods.in_shard(r.shard)]).unwrap());
    r.converge(&server);
    assert_eq!(r.held, half);
}
