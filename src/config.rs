//! What [`Reader::open`](crate::Reader::open) takes: how to reach the
//! cluster ([`Access`]), what to stream (the resources, how objects are
//! shaped, relists, a checkpoint to resume from) and how hard to try
//! ([`Tuning`]), as kube-rs keeps `kube::Config` apart from `watcher::Config`.

use std::time::Duration;

use crate::access::cluster::{Access, ServerUrl};
use crate::access::transport::Connecting;
use crate::error::Error;
use crate::resource::ResourceSpec;

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
    pub shaping: crate::objects::shape::Shaping,
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
    pub resume: Option<crate::checkpoint::Checkpoint>,
    /// The shard of every resource without one of its own
    /// ([`ResourceSpec::shard`]): run `count` readers, each with its own
    /// `index`, and each streams only its share of the objects (see
    /// [`Shard`](crate::Shard)), including those given later to
    /// [`Reader::set_resources`](crate::Reader::set_resources).
    pub shard: Option<crate::wire::shard::Shard>,
    /// Timeouts, sizes, bounds and retry pacing.
    pub tuning: Tuning,
    /// Stream only while holding a `coordination.k8s.io/v1` Lease (off by
    /// default): replicas of one collector share the Lease and one streams.
    /// See [`LeaderElection`].
    pub leader_election: Option<LeaderElection>,
    /// Keep the checkpoint in a ConfigMap of the cluster (off by default),
    /// written by the leader and resumed from by the next one. See
    /// [`InClusterCheckpoint`].
    pub checkpoint_in_cluster: Option<InClusterCheckpoint>,
}

/// Leader election through a `coordination.k8s.io/v1` Lease, as client-go's
/// `tools/leaderelection` does it: the holder renews the Lease every
/// `retry_period`; a standby takes it once it has seen no renewal for
/// `lease_duration` (by its own clock); a holder that could not renew for
/// `renew_deadline` stops delivering before its Lease can expire.
///
/// With it, [`Reader::open`](crate::Reader::open) starts no stream: the
/// reader sends [`Change::Following`](crate::Change::Following) and waits;
/// once it holds the Lease it sends
/// [`Change::Leading`](crate::Change::Leading) and starts its streams
/// (from [`Config::checkpoint_in_cluster`] when set; [`Config::resume`] is
/// refused with it). It needs get, create and update on `leases` in
/// `namespace`. [`Reader::close`](crate::Reader::close) of a holder takes up
/// to a few seconds more: the last checkpoint, then the Lease released.
///
/// What it guarantees, as client-go: a standby takes the Lease only once it
/// has seen it unchanged for `lease_duration` by its own clock, and a holder
/// stops delivering once `renew_deadline` has passed since its last
/// successful renewal began. Two holders can overlap only if the clocks of
/// their nodes run at rates apart by more than `lease_duration /
/// renew_deadline` (1.5 by default), not by their offsets, or if stopping
/// the streams takes longer than `lease_duration - renew_deadline` (5 s by
/// default; it takes milliseconds).
///
/// ```
/// use kube_tattler::LeaderElection;
/// let mut election = LeaderElection::new("collectors", "inventory");
/// election.identity = "replica-1".into(); // default: $POD_NAME (else the host name), `_`, a random suffix
/// assert_eq!(election.lease_duration.as_secs(), 15);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaderElection {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name.
    pub lease: String,
    /// This replica's name in the Lease's `holderIdentity`: unique per
    /// replica. Default: the environment's `POD_NAME` (the downward API),
    /// else the host name, then `_` and a random suffix of this
    /// configuration's (as kube-controller-manager names itself), so that
    /// two readers on one host, or two processes given one `POD_NAME`,
    /// never take each other for the holder.
    pub identity: String,
    /// How long a standby waits, after it last saw the Lease change, before
    /// taking it. Default 15 s (client-go's).
    pub lease_duration: Duration,
    /// A holder that has not renewed for this long (counted from the start
    /// of its last successful renewal) stops delivering. Default 10 s;
    /// less than `lease_duration`.
    pub renew_deadline: Duration,
    /// How often the holder renews and a standby looks. Default 2 s; less
    /// than `renew_deadline`.
    pub retry_period: Duration,
    /// 1 (the default): one Lease, `lease`, and its holder streams every
    /// resource. N (2 to 1024): the resources split into N shards by their
    /// uid's hash ([`Shard`](crate::Shard)), shard `i` a Lease of its own,
    /// `lease-i` (and with [`checkpoint_in_cluster`](crate::Config::checkpoint_in_cluster),
    /// a ConfigMap `name-i`); each replica takes the shards it finds free, a
    /// replica that already leads `k` shards waiting `k` × 2.2 retry periods
    /// before it takes one nobody holds, so that shards spread over the
    /// replicas that start (or roll out) together. A dead replica's shards
    /// go, at once once their Leases expire, to whichever replicas see it
    /// first. Resources then have no shard of their own. A rollout that
    /// changes N runs one shard map at a time: a replica of the new count
    /// stands by while a Lease of the old one is held, then resumes from the
    /// old map's checkpoints.
    pub shards: u32,
}

impl LeaderElection {
    /// An election on the Lease `namespace`/`lease`, with the default
    /// identity and client-go's default timings (15 s, 10 s, 2 s).
    #[must_use]
    pub fn new(namespace: &str, lease: &str) -> LeaderElection {
        LeaderElection {
            namespace: namespace.to_string(),
            lease: lease.to_string(),
            identity: default_identity(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            shards: 1,
        }
    }

    fn validate(&self) -> Result<(), Error> {
        let bad = |why: &str| Err(Error::Config(format!("leader_election: {why}")));
        if !is_dns_name(&self.namespace) || !is_dns_name(&self.lease) {
            return bad(
                "namespace and lease must be DNS names (lowercase letters, digits, '-', '.')",
            );
        }
        if self.identity.is_empty() || self.identity.len() > 253 {
            return bad("identity must be 1 to 253 bytes (no POD_NAME and no host name?)");
        }
        if self.lease_duration < Duration::from_secs(1) {
            return bad("lease_duration must be at least 1 s");
        }
        if self.renew_deadline >= self.lease_duration {
            return bad("renew_deadline must be less than lease_duration");
        }
        if self.retry_period.is_zero() || self.retry_period >= self.renew_deadline {
            return bad("retry_period must be more than 0 and less than renew_deadline");
        }
        if !(1..=crate::wire::shard::MAX_SHARDS).contains(&self.shards) {
            return bad("shards must be 1 to 1024");
        }
        Ok(())
    }
}

/// The checkpoint kept in the cluster: a ConfigMap `name` in `namespace`,
/// its data key `checkpoint` holding [`Checkpoint::to_bytes`](crate::Checkpoint::to_bytes).
///
/// The leader writes it as soon as its streams are synced, then every
/// `interval` and when it stops cleanly; a new leader resumes from it by a
/// watch from its resourceVersion: changes made meanwhile come as the
/// server's Add, Update and Delete before Synced, and nothing held is added
/// twice (when the server's history no longer covers it: Stale, then a
/// re-sync against what it says the consumer holds). It holds names, uids
/// and resourceVersions only, never an object's content, so no Secret's
/// value can enter it. A ConfigMap, not the Lease's annotations:
/// annotations are limited to 256 KiB in all, a ConfigMap to 1 MiB (about
/// 9,000 objects); a larger checkpoint is not written (an Error entry says
/// so, and the last one written stays). It needs get, create and update on `configmaps`
/// in `namespace`. Keep it out of what the reader streams: a ConfigMap the
/// reader watches changes with each write, and each change moves the next
/// checkpoint, so it would be written every `interval` for nothing.
///
/// ```
/// let kept = kube_tattler::InClusterCheckpoint::new("collectors", "inventory-checkpoint");
/// assert_eq!(kept.interval.as_secs(), 30);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InClusterCheckpoint {
    /// The ConfigMap's namespace.
    pub namespace: String,
    /// The ConfigMap's name.
    pub name: String,
    /// How often the leader writes it. Default 30 s; at least 1 s.
    pub interval: Duration,
}

impl InClusterCheckpoint {
    /// The ConfigMap `namespace`/`name`, written every 30 s.
    #[must_use]
    pub fn new(namespace: &str, name: &str) -> InClusterCheckpoint {
        InClusterCheckpoint {
            namespace: namespace.to_string(),
            name: name.to_string(),
            interval: Duration::from_secs(30),
        }
    }

    fn validate(&self) -> Result<(), Error> {
        if !is_dns_name(&self.namespace) || !is_dns_name(&self.name) {
            return Err(Error::Config(
                "checkpoint_in_cluster: namespace and name must be DNS names (lowercase letters, digits, '-', '.')".into(),
            ));
        }
        if self.interval < Duration::from_secs(1) {
            return Err(Error::Config(
                "checkpoint_in_cluster: interval must be at least 1 s".into(),
            ));
        }
        Ok(())
    }
}

/// A DNS subdomain name, as Kubernetes names Leases, ConfigMaps and
/// namespaces: it goes into a URL path as it is.
fn is_dns_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && !s.starts_with(['-', '.'])
        && !s.ends_with(['-', '.'])
}

/// The downward API's `POD_NAME`, else the host name, then `_` and 16 random
/// hex digits (client-go's leader election names itself `host_uuid`); empty
/// when there is no name at all (refused by validation).
pub(crate) fn default_identity() -> String {
    let mut base = pod_or_host();
    if base.is_empty() {
        return base;
    }
    // Room for the suffix within the 253 bytes a holderIdentity may have.
    while base.len() > 253 - 17 {
        base.pop();
    }
    format!("{base}_{:016x}", random_u64())
}

/// 64 random bits without a dependency: std's randomly keyed hasher over
/// the time and the process.
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    h.write_u128(now.as_nanos());
    h.write_u32(std::process::id());
    h.finish()
}

/// The downward API's `POD_NAME`, else the host name (`/proc/sys/kernel/hostname`,
/// else `$HOSTNAME`), else empty.
fn pod_or_host() -> String {
    if let Ok(pod) = std::env::var("POD_NAME") {
        if !pod.trim().is_empty() {
            return pod.trim().to_string();
        }
    }
    if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        if !host.trim().is_empty() {
            return host.trim().to_string();
        }
    }
    // Not Linux: the shell's own (exported by some).
    std::env::var("HOSTNAME")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
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
    /// Limit on reaching the server, in total (not per read): the TCP
    /// connection, tried over the host's addresses as Go's dialer tries them
    /// (each address an equal share of at least 2 s; IPv4 and IPv6 raced,
    /// the second family 300 ms after the first), and with a proxy its
    /// answer (CONNECT, or the SOCKS5 negotiation) within the same time;
    /// the TLS handshake then has as long again. Default 5 s. `0`: no limit
    /// of tattler's own on the TCP connect, which lasts until the server
    /// answers, the system gives up (about two minutes on Linux, as Go's
    /// `Dialer` with no `Timeout`) or a close; client-go's 10 s for a
    /// proxy's answer and for the handshake. [`Reader::close`](crate::Reader::close)
    /// (and a relist) ends every phase at once, a TCP connect under way
    /// within 0.1 s on Linux (elsewhere it runs to its end, bounded by
    /// this), so this does not bound how long a close takes.
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
    /// What the transport takes of it.
    pub(crate) fn connecting(&self) -> Connecting {
        Connecting {
            gzip: self.gzip,
            connect_timeout: self.connect_timeout,
            idle_timeout: self.idle_timeout,
        }
    }

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
            shaping: crate::objects::shape::Shaping::default(),
            relist_interval: None,
            resume: None,
            shard: None,
            tuning: Tuning::default(),
            leader_election: None,
            checkpoint_in_cluster: None,
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
        if let Some(e) = &self.leader_election {
            e.validate()?;
            if self.resume.is_some() {
                return Err(Error::Config(
                    "resume: not with leader_election (a leader resumes from checkpoint_in_cluster)"
                        .into(),
                ));
            }
        }
        if let Some(k) = &self.checkpoint_in_cluster {
            k.validate()?;
            if self.leader_election.is_none() {
                return Err(Error::Config(
                    "checkpoint_in_cluster needs leader_election: one writer".into(),
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
    fn a_default_identity_is_the_pod_or_host_and_a_suffix_of_its_own() {
        let base = pod_or_host();
        if base.is_empty() {
            return; // no name on this machine: validation refuses it
        }
        let (a, b) = (default_identity(), default_identity());
        assert_ne!(a, b, "two readers on one host never share an identity");
        for id in [&a, &b] {
            let (head, suffix) = id.rsplit_once('_').unwrap();
            assert!(base.starts_with(head), "{id}");
            assert_eq!(suffix.len(), 16, "{id}");
            assert!(suffix.bytes().all(|c| c.is_ascii_hexdigit()), "{id}");
            assert!(id.len() <= 253);
        }
    }

    #[test]
    fn leader_election_timings_are_checked_as_client_go_does() {
        let base = Config::new(Access::new("https://h"))
            .watch(["pods"])
            .unwrap();
        let with = |f: &dyn Fn(&mut LeaderElection)| {
            let mut c = base.clone();
            let mut e = LeaderElection::new("ns", "lease");
            e.identity = "me".into();
            f(&mut e);
            c.leader_election = Some(e);
            c.validate().map(|_| ()).map_err(|e| e.to_string())
        };
        assert_eq!(with(&|_| {}), Ok(()));
        let s = Duration::from_secs;
        for (f, want) in [
            (
                &(|e: &mut LeaderElection| e.renew_deadline = s(15))
                    as &dyn Fn(&mut LeaderElection),
                "renew_deadline must be less",
            ),
            (
                &|e: &mut LeaderElection| e.retry_period = s(10),
                "retry_period must be",
            ),
            (
                &|e: &mut LeaderElection| e.retry_period = Duration::ZERO,
                "retry_period must be",
            ),
            (&|e: &mut LeaderElection| e.identity.clear(), "identity"),
            (
                &|e: &mut LeaderElection| e.lease = "Not/a name".into(),
                "DNS names",
            ),
        ] {
            let e = with(f).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
        let mut c = base.clone();
        c.checkpoint_in_cluster = Some(InClusterCheckpoint::new("ns", "cp"));
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("needs leader_election"));
    }

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
            crate::wire::shard::Shard::new(2, 1).unwrap(),
            crate::wire::shard::Shard::new(3, 0).unwrap(),
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
