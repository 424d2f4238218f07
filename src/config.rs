//! What [`Reader::open`](crate::Reader::open) takes: how to reach the
//! cluster ([`Access`]), what to stream (the resources, how objects are
//! shaped, relists, a checkpoint to resume from) and how hard to try
//! ([`Tuning`]), as kube-rs keeps `kube::Config` apart from `watcher::Config`.

use std::time::Duration;

use crate::access::cluster::{Access, ServerUrl};
use crate::{Error, ResourceSpec};

/// Retry pacing for a failing stream: exponential with full jitter.
///
/// ```
/// use std::time::Duration;
/// let mut tuning = kube_tattler::Tuning::default();
/// tuning.backoff.max = Duration::from_secs(10);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backoff {
    /// The first delay's upper bound.
    pub initial: Duration,
    /// No delay is longer than this.
    pub max: Duration,
    /// A stream healthy for this long starts again from `initial`.
    pub reset_after: Duration,
}

impl Backoff {
    /// The upper bound of the delay after `n` failures in a row:
    /// `initial · 2^(n-1)`, at most `max`.
    pub(crate) fn cap(&self, n: u32) -> Duration {
        self.initial
            .saturating_mul(
                1u32.checked_shl(n.saturating_sub(1).min(20))
                    .unwrap_or(u32::MAX),
            )
            .min(self.max)
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
            reset_after: Duration::from_secs(120),
        }
    }
}

/// Everything [`Reader::open`](crate::Reader::open) needs: how to reach the
/// cluster, what to stream from it, and tuning.
///
/// ```
/// use kube_tattler::{Access, Config};
/// let mut config = Config::new(Access::new("https://10.0.0.1:6443").token("…"))
///     .watch(["pods", "deployments.apps"])?;
/// config.tuning.channel_capacity = 256;
/// # Ok::<(), kube_tattler::Error>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// How to reach the cluster.
    pub access: Access,
    /// The resources to stream, one thread each.
    pub resources: Vec<ResourceSpec>,
    /// Secret scrubbing (on by default), managedFields, event filtering and a
    /// transform hook, applied before an entry enters the output channel.
    pub shaping: crate::Shaping,
    /// Relist every resource this often by swapping in a fresh stream (off by
    /// default; 1 minute to 7 days). The new stream syncs while the old one
    /// runs on; unchanged objects come out as Snapshot, changed ones as
    /// Update, vanished ones as inferred Delete, then Synced.
    pub relist_interval: Option<Duration>,
    /// Resume from a [`Checkpoint`](crate::Checkpoint) of an earlier reader.
    /// Each resource it holds (same group, version, resource, namespace,
    /// selectors, metadata-only and shard) starts from it: a Synced entry at once,
    /// then a watch from its resourceVersion — only what changed meanwhile,
    /// deletes included. When the server no longer has that version, a
    /// re-sync against the restored state follows (unchanged objects as
    /// Snapshot, vanished ones as inferred Delete, then Synced). Other
    /// resources sync as usual.
    pub resume: Option<crate::Checkpoint>,
    /// The shard of every resource without one of its own
    /// ([`ResourceSpec::shard`]): run `count` readers, each with its own
    /// `index`, and each streams only its share of the objects (see
    /// [`Shard`](crate::Shard)), including those given later to
    /// [`Reader::set_resources`](crate::Reader::set_resources).
    pub shard: Option<crate::Shard>,
    /// Timeouts, sizes, bounds and retry pacing.
    pub tuning: Tuning,
}

/// How hard tattler tries and how much it holds: the part of a
/// [`Config`] most users leave at its defaults.
///
/// ```
/// use std::time::Duration;
/// let mut tuning = kube_tattler::Tuning::default();
/// tuning.channel_capacity = 4096;
/// tuning.idle_timeout = Duration::from_secs(90);
/// assert_ne!(tuning, kube_tattler::Tuning::default());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tuning {
    /// Capacity of the output channel; a full channel slows the streams down,
    /// it never drops an entry. Default 64: a consumer that falls behind
    /// holds at most 64 objects in flight (at 100,000 pods over protobuf,
    /// 1,024 let a lagging consumer's peak RSS reach 28 MB; 64 kept it at
    /// 14.9-15.4 MiB in four runs; the sync's speed and CPU did not change).
    pub channel_capacity: usize,
    /// At most this many bytes of objects wait in the output channel; a
    /// stream with more to send waits for the consumer (an object larger than
    /// this still goes, alone). With `channel_capacity`, and per stream
    /// `max_frame_bytes` plus a batch of at most 1 MiB, this bounds the memory
    /// tattler holds for a slow consumer. Default 64 MiB.
    pub max_buffered_bytes: usize,
    /// A single object (one watch frame or list page item) larger than this is
    /// not buffered: it is reported as an Error entry and skipped. Default 64 MiB.
    pub max_frame_bytes: usize,
    /// A stream that receives no byte (bookmarks included) for this long is
    /// taken as dead and reconnected. Default 150 s: the server bookmarks a
    /// watch about once a minute, so a dead peer is noticed within about two
    /// bookmark intervals (TCP keepalive probes, every connection's, usually
    /// notice it sooner).
    pub idle_timeout: Duration,
    /// Limit on establishing a TCP connection. Default 5 s. A thread in the
    /// middle of a connect finishes it before [`Reader::close`](crate::Reader::close)
    /// can join it, so this also bounds how long a close can take.
    pub connect_timeout: Duration,
    /// During a watch-list's initial state, a stream that receives nothing
    /// for this long without the initial-events-end bookmark takes the
    /// server to ignore `sendInitialEvents` (some aggregated servers and
    /// fakes do) and falls back to LIST + WATCH. Default 30 s.
    pub initial_events_timeout: Duration,
    /// Ask the server for gzip-compressed bodies. Off by default: it costs the
    /// apiserver CPU and saves bandwidth only off-host.
    pub gzip: bool,
    /// Objects per page when the server has no watch-list and tattler falls
    /// back to paged LIST + WATCH. Default 500.
    pub page_size: u32,
    /// Retry pacing.
    pub backoff: Backoff,
    /// A watch that ends sooner than this with nothing in it counts as a
    /// failure (paced by `backoff`; three in a row re-sync), as client-go
    /// judges it. Default 1 s.
    pub short_watch: Duration,
    /// How often the resources of a wildcard (`"*"`, `"*.apps"`) are looked
    /// for again through discovery: a CRD established meanwhile gets a
    /// stream, one deleted loses its. Default 5 minutes (two requests each
    /// time).
    pub discovery_interval: Duration,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            channel_capacity: 64,
            max_buffered_bytes: 64 << 20,
            max_frame_bytes: 64 << 20,
            idle_timeout: Duration::from_secs(150),
            connect_timeout: Duration::from_secs(5),
            initial_events_timeout: Duration::from_secs(30),
            gzip: false,
            page_size: 500,
            backoff: Backoff::default(),
            short_watch: Duration::from_secs(1),
            discovery_interval: Duration::from_secs(300),
        }
    }
}

impl Tuning {
    fn validate(&self) -> Result<(), Error> {
        let bad = |why: &str| Err(Error::Config(why.into()));
        if self.channel_capacity == 0 {
            return bad("channel_capacity must be at least 1");
        }
        if self.idle_timeout < Duration::from_secs(1) {
            return bad("idle_timeout must be at least 1 s");
        }
        if self.initial_events_timeout < Duration::from_millis(100) {
            return bad("initial_events_timeout must be at least 100 ms");
        }
        if self.discovery_interval < Duration::from_secs(1) {
            return bad("discovery_interval must be at least 1 s");
        }
        if self.max_buffered_bytes == 0 {
            return bad("max_buffered_bytes must be at least 1");
        }
        if self.page_size == 0 {
            return bad("page_size must be at least 1");
        }
        if self.backoff.initial.is_zero() || self.backoff.max < self.backoff.initial {
            return bad("backoff: need 0 < initial <= max");
        }
        Ok(())
    }
}

impl Config {
    /// A configuration reaching the cluster through `access`, with nothing
    /// to watch yet and every other field at its default.
    ///
    /// ```
    /// use kube_tattler::{Access, Config, ResourceSpec};
    /// let mut config = Config::new(Access::new("https://10.0.0.1:6443"));
    /// config.resources.push("pods".parse::<ResourceSpec>()?.in_namespace("shop"));
    /// config.shaping.drop_managed_fields = true;
    /// # Ok::<(), kube_tattler::Error>(())
    /// ```
    #[must_use]
    pub fn new(access: Access) -> Self {
        Config {
            access,
            resources: Vec::new(),
            shaping: crate::Shaping::default(),
            relist_interval: None,
            resume: None,
            shard: None,
            tuning: Tuning::default(),
        }
    }

    /// Adds resources by name, as [`ResourceSpec::parse`] reads them: any
    /// list of strings (`&["pods"]`, `["pods", "nodes"]`, `&args` of
    /// `Vec<String>`, an iterator).
    ///
    /// ```
    /// use kube_tattler::{Access, Config};
    /// let names: Vec<String> = vec!["pods".into(), "deploy".into()];
    /// let config = Config::new(Access::new("https://10.0.0.1:6443")).watch(&names)?;
    /// assert_eq!(config.resources.len(), 2);
    /// let config = config.watch(["rbac"])?; // adds four
    /// assert_eq!(config.resources.len(), 6);
    /// # Ok::<(), kube_tattler::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Resource`] for the first name `parse` refuses; the
    /// configuration is then dropped.
    pub fn watch(
        mut self,
        names: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> Result<Self, Error> {
        for name in names {
            self.resources.extend(ResourceSpec::parse(name.as_ref())?);
        }
        Ok(self)
    }

    /// Gives [`shard`](Self::shard) to every resource without a shard.
    pub(crate) fn apply_shard(&mut self) {
        if let Some(shard) = self.shard {
            for spec in self.resources.iter_mut().filter(|s| s.shard.is_none()) {
                spec.shard = Some(shard);
            }
        }
    }

    /// Checks what can be checked without the network.
    pub(crate) fn validate(&self) -> Result<ServerUrl, Error> {
        if self.resources.is_empty() {
            return Err(Error::Config("resources: nothing to watch".into()));
        }
        self.tuning.validate()?;
        if let Some(r) = self.relist_interval {
            if r < Duration::from_secs(60) || r > Duration::from_secs(7 * 86_400) {
                return Err(Error::Config(
                    "relist_interval must be between 1 minute and 7 days".into(),
                ));
            }
        }
        self.access.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_field() {
        let c = Config::new(Access::new("https://h"));
        assert!(c.validate().unwrap_err().to_string().contains("resources"));
        let mut c = Config::new(Access::new("https://h"))
            .watch(["pods"])
            .unwrap();
        c.tuning.channel_capacity = 0;
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("channel_capacity"));
    }

    #[test]
    fn the_configuration_s_shard_goes_to_resources_without_one() {
        let (half, third) = (
            crate::Shard::new(2, 1).unwrap(),
            crate::Shard::new(3, 0).unwrap(),
        );
        let mut c = Config::new(Access::new("https://h"))
            .watch(["pods"])
            .unwrap();
        c.resources
            .push("nodes".parse::<ResourceSpec>().unwrap().in_shard(third));
        c.apply_shard();
        assert_eq!(c.resources[0].shard, None);
        c.shard = Some(half);
        c.apply_shard();
        let got: Vec<_> = c.resources.iter().map(|r| r.shard).collect();
        assert_eq!(got, [Some(half), Some(third)]);
    }
}
