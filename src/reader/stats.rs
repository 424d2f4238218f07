//! What a reader says about its streams: per-stream counters
//! ([`StreamStats`]) and the Prometheus text of them.

use std::sync::atomic::Ordering;

use super::registry::StreamHandle;
use crate::resource::ResourceSpec;
use crate::wire::sharding::Sharding;

/// A snapshot of one resource stream's counters, from
/// [`Reader::stats`](crate::Reader::stats).
///
/// ```no_run
/// # let reader: kube_tattler::Reader = unimplemented!();
/// let lagging: Vec<String> = reader.stats().into_iter().filter(|s| !s.current).map(|s| s.resource).collect();
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamStats {
    /// The resource, as `group/version/resource` (`v1/pods` for core).
    pub resource: String,
    /// Watch events and LIST items received.
    pub events: u64,
    /// Body bytes received (after gzip decoding).
    pub bytes: u64,
    /// Connections re-made after a failure.
    pub reconnects: u64,
    /// Full re-syncs (410 Expired, resourceVersion too large, watches that
    /// end at once).
    pub resyncs: u64,
    /// Relist swaps completed (see `relist_interval`).
    pub relists: u64,
    /// Events dropped as older than what was already delivered.
    pub stale_drops: u64,
    /// Objects and frames skipped because they could not be delivered (each
    /// reported by an Error entry).
    pub skipped: u64,
    /// Objects outside the resource's [`Shard`](crate::Shard) that the
    /// server sent anyway and tattler dropped: more than 0 means the server
    /// does not shard (`ShardedListAndWatch` off or unsupported) and the
    /// filtering is tattler's.
    pub other_shard_drops: u64,
    /// For a resource with a [`Shard`](crate::Shard) (of more than one),
    /// who keeps it to its shard as far as the stream has seen: the server,
    /// tattler, or not known yet (a stream read by watch-list learns it
    /// only from an object outside the shard). `None` without a shard. The
    /// metrics carry it as the `sharding` label.
    pub sharding: Option<Sharding>,
    /// The last resourceVersion seen, as the server sent it.
    pub resource_version: String,
    /// Objects currently tracked.
    pub objects: u64,
    /// The initial state (or the latest re-sync) is complete.
    pub synced: bool,
    /// When the last full state completed.
    pub synced_at: Option<std::time::SystemTime>,
    /// The server cannot do watch-list (it refused it, or never ended its
    /// initial events); this resource uses paged LIST + WATCH.
    pub list_fallback: bool,
    /// The stream failed for good and sent an Error entry.
    pub failed: bool,
    /// Why the stream last retried or gave up (a refused connection, a
    /// failing exec plugin, a 503…); `None` once a sync completes.
    pub last_error: Option<String>,
    /// The consumer's view of this resource is current: synced, and no
    /// Stale entry since its last Synced.
    pub current: bool,
    /// The resourceVersion the view is current at, when it is.
    pub current_at: Option<String>,
    /// How long ago the server last sent anything (an answer, an event, a
    /// bookmark); `None` before it ever did.
    pub since_heard: Option<std::time::Duration>,
}

/// The counters in the Prometheus text exposition format (version 0.0.4):
/// `streams` as (labels, stats), and the channel's entries and bytes.
pub(super) fn metrics_text(
    streams: &[(String, StreamStats)],
    channel_entries: usize,
    channel_bytes: usize,
) -> String {
    use std::fmt::Write;
    let now = std::time::SystemTime::now();
    type Get = fn(&StreamStats, std::time::SystemTime) -> Option<f64>;
    let per_stream: [(&str, &str, &str, Get); 15] = [
        (
            "events_total",
            "counter",
            "Watch events and LIST items received.",
            |s, _| Some(s.events as f64),
        ),
        (
            "received_bytes_total",
            "counter",
            "Body bytes received (after decompression).",
            |s, _| Some(s.bytes as f64),
        ),
        (
            "reconnects_total",
            "counter",
            "Requests made again after a failure.",
            |s, _| Some(s.reconnects as f64),
        ),
        (
            "resyncs_total",
            "counter",
            "Full re-syncs (history expired, resourceVersion too large, empty watches).",
            |s, _| Some(s.resyncs as f64),
        ),
        (
            "relists_total",
            "counter",
            "Relist swaps completed.",
            |s, _| Some(s.relists as f64),
        ),
        (
            "stale_drops_total",
            "counter",
            "Events dropped as older than what was delivered.",
            |s, _| Some(s.stale_drops as f64),
        ),
        (
            "skipped_total",
            "counter",
            "Objects and frames skipped, each reported by an Error entry.",
            |s, _| Some(s.skipped as f64),
        ),
        (
            "other_shard_drops_total",
            "counter",
            "Objects outside the stream's shard that the server sent anyway, dropped.",
            |s, _| Some(s.other_shard_drops as f64),
        ),
        (
            "objects",
            "gauge",
            "Objects tracked (the consumer's state).",
            |s, _| Some(s.objects as f64),
        ),
        (
            "synced",
            "gauge",
            "1 when the last full state is complete.",
            |s, _| Some(u8::from(s.synced).into()),
        ),
        (
            "current",
            "gauge",
            "1 when the consumer's view is current (synced, not stale).",
            |s, _| Some(u8::from(s.current).into()),
        ),
        (
            "seconds_since_heard",
            "gauge",
            "Seconds since the server last sent anything (an answer, an event, a bookmark).",
            |s, _| s.since_heard.map(|d| d.as_secs_f64()),
        ),
        (
            "failed",
            "gauge",
            "1 when the stream failed for good.",
            |s, _| Some(u8::from(s.failed).into()),
        ),
        (
            "list_fallback",
            "gauge",
            "1 when the resource is read by LIST + WATCH.",
            |s, _| Some(u8::from(s.list_fallback).into()),
        ),
        (
            "seconds_since_sync",
            "gauge",
            "Seconds since the last full state completed.",
            |s, now| {
                s.synced_at
                    .map(|t| now.duration_since(t).unwrap_or_default().as_secs_f64())
            },
        ),
    ];
    let mut out = String::new();
    for (name, kind, help, get) in per_stream {
        let _ = writeln!(
            out,
            "# HELP tattler_{name} {help}\n# TYPE tattler_{name} {kind}"
        );
        for (labels, s) in streams {
            if let Some(v) = get(s, now) {
                let _ = writeln!(out, "tattler_{name}{{{labels}}} {v}");
            }
        }
    }
    let _ = writeln!(
            out,
            "# HELP tattler_channel_entries Entries waiting for the consumer.\n# TYPE tattler_channel_entries gauge\ntattler_channel_entries {channel_entries}"
        );
    let _ = writeln!(
            out,
            "# HELP tattler_channel_bytes Bytes of objects waiting for the consumer.\n# TYPE tattler_channel_bytes gauge\ntattler_channel_bytes {channel_bytes}"
        );
    out
}

/// A stream's labels: `resource="v1/pods"`, its scope where set, and with
/// a shard, who keeps the stream to it (`sharding="server"`, `"here"` or
/// `"unknown"`).
pub(super) fn metric_labels(stats: &StreamStats, spec: &ResourceSpec) -> String {
    let esc = |v: &str| {
        v.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
    };
    let mut l = format!("resource=\"{}\"", esc(&stats.resource));
    let shard = spec.shard.map(|s| s.to_string());
    for (k, v) in [
        ("namespace", spec.namespace.as_deref()),
        ("label_selector", spec.label_selector.as_deref()),
        ("field_selector", spec.field_selector.as_deref()),
        ("metadata_only", spec.metadata_only.then_some("true")),
        ("shard", shard.as_deref()),
        ("sharding", stats.sharding.as_ref().map(Sharding::as_str)),
    ] {
        if let Some(v) = v {
            l.push_str(&format!(",{k}=\"{}\"", esc(v)));
        }
    }
    l
}

impl StreamHandle {
    pub(super) fn snapshot(&self) -> StreamStats {
        let c = &self.state.counters;
        let (synced, resource_version) = {
            let ledger = self.state.ledger();
            (ledger.synced(), ledger.resource_version().clone())
        };
        let current = synced && !c.stale.load(Ordering::Relaxed);
        StreamStats {
            resource: c.resolved.lock().clone().unwrap_or_else(|| self.spec.gvr()),
            events: c.events.load(Ordering::Relaxed),
            bytes: c.bytes.load(Ordering::Relaxed),
            reconnects: c.reconnects.load(Ordering::Relaxed),
            resyncs: c.resyncs.load(Ordering::Relaxed),
            relists: c.relists.load(Ordering::Relaxed),
            stale_drops: c.stale_drops.load(Ordering::Relaxed),
            skipped: c.skipped.load(Ordering::Relaxed),
            other_shard_drops: c.other_shard_drops.load(Ordering::Relaxed),
            sharding: self
                .spec
                .shard
                .filter(|s| !s.is_whole())
                .map(|_| c.sharding()),
            resource_version: resource_version.as_str().to_string(),
            objects: c.objects.load(Ordering::Relaxed),
            synced,
            synced_at: *c.synced_at.lock(),
            list_fallback: c.list_fallback.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
            last_error: c.last_error.lock().clone(),
            current,
            current_at: current.then(|| resource_version.as_str().to_string()),
            since_heard: self.state.since_heard(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(resource: &str, sharding: Option<Sharding>) -> StreamStats {
        StreamStats {
            resource: resource.into(),
            events: 0,
            bytes: 0,
            reconnects: 0,
            resyncs: 0,
            relists: 0,
            stale_drops: 0,
            skipped: 0,
            other_shard_drops: 0,
            sharding,
            resource_version: String::new(),
            objects: 0,
            synced: false,
            synced_at: None,
            list_fallback: false,
            failed: false,
            last_error: None,
            current: false,
            current_at: None,
            since_heard: None,
        }
    }

    #[test]
    fn metric_labels_are_escaped() {
        let spec = ResourceSpec::parse("pods")
            .unwrap()
            .remove(0)
            .in_namespace("a")
            .with_field_selector("x=\"q\\\n")
            .metadata_only();
        assert_eq!(
            metric_labels(&stats(&spec.gvr(), None), &spec),
            r#"resource="v1/pods",namespace="a",field_selector="x=\"q\\\n",metadata_only="true""#
        );
        let sharded = spec.in_shard(crate::wire::shard::Shard::new(3, 2).unwrap());
        for (sharding, label) in [
            (Sharding::Unknown, "unknown"),
            (Sharding::Server, "server"),
            (Sharding::Here, "here"),
        ] {
            let l = metric_labels(&stats(&sharded.gvr(), Some(sharding)), &sharded);
            let want = format!(r#",metadata_only="true",shard="2/3",sharding="{label}""#);
            assert!(l.ends_with(&want), "{l}");
        }
    }
}
