//! The elector: one thread (`tattler-elector`) per reader with
//! [`Config::leader_election`](crate::Config::leader_election). It reads
//! and writes the Lease (`lease` decides what to write), starts the
//! reader's streams once it holds the Lease and stops them before the Lease
//! can expire when it cannot renew, keeps the checkpoint in the cluster
//! (`checkpoint`: reading and writing its ConfigMap), and gives the Lease
//! up when the reader closes.
//!
//! Every wait honours the reader's stop; no lock is held here at all (the
//! reader's own, taken inside [`Streams`], never across an HTTP call). Each
//! request's reads wait at most the time left before the renew deadline,
//! and its connect at most half of `lease_duration - renew_deadline` (the
//! reader gives it a transport of its own), so that a holder stops
//! delivering before its Lease can expire, however the server fails.

mod checkpoint;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::{select, Receiver};

use self::checkpoint::configmap_resource;
use super::checkpoint_configmap::KeptMap;
use super::lease::{self, Lease, Observed, Verdict};
use super::lease_shares::ShardMap;
use super::Streams;
use crate::api::client::Client;
use crate::api::end::End;
use crate::checkpoint::Checkpoint;
use crate::config::{InClusterCheckpoint, LeaderElection};
use crate::delivery::channel::{Out, Stop};
use crate::entry::Term;
use crate::entry::{Change, Entry, ErrorInfo, Reason, Resource, Text};
use crate::resource::ResourceSpec;
use crate::resource_version::Rv;

/// The most sibling Leases `rollout_wait` reads: one more than the most
/// shards. It reads `N + 1` of them per take of a Lease (not per renewal).
const MAX_SIBLINGS: u32 = crate::wire::shard::MAX_SHARDS + 1;

/// How long the last checkpoint and the release may take on close.
const CLOSING_BUDGET: Duration = Duration::from_secs(3);

/// What the elector is given by the reader.
pub(crate) struct ElectorInit {
    pub election: LeaderElection,
    pub kept: Option<InClusterCheckpoint>,
    /// How many of the reader's Leases (one per shard) it holds now, this
    /// one's included: shared by its electors.
    pub leading: Arc<AtomicUsize>,
    /// Its own client (a transport with a short connect timeout); never
    /// stopped by the reader's stop, so that the last checkpoint and the
    /// release can go out on close.
    pub client: Client,
    pub out: Out,
    /// Disconnects when the reader stops.
    pub closing: Receiver<()>,
    /// Disconnects once the reader's close has joined the stream threads.
    pub finish: Receiver<()>,
    pub streams: Arc<dyn Streams>,
    /// The shard map its Lease belongs to.
    pub map: ShardMap,
    /// The streams the Lease's holder runs (to merge another map's checkpoints).
    pub named: Vec<ResourceSpec>,
}

/// The Lease while we hold it.
struct Held {
    /// As we last wrote it (its resourceVersion the next renewal's precondition).
    lease: Lease,
    /// When our last successful write of it began.
    renewed: Instant,
    next_renewal: Instant,
    next_checkpoint: Instant,
    /// The term our streams' entries carry; ended when we step down.
    term: Term,
    /// When the term began, and whether its first checkpoint is written.
    since: Instant,
    checkpointed: bool,
    /// The checkpoint the term resumed from: a part whose stream has no
    /// resume point yet (still replaying, or re-syncing) is written as it
    /// was there, never as one without a resume point.
    resumed: Option<Checkpoint>,
}

/// The elector's state; see the module's header.
pub(crate) struct Elector {
    election: LeaderElection,
    kept: Option<InClusterCheckpoint>,
    client: Client,
    out: Option<Out>,
    closing: Receiver<()>,
    finish: Receiver<()>,
    streams: Arc<dyn Streams>,
    map: ShardMap,
    named: Vec<ResourceSpec>,
    leading: Arc<AtomicUsize>,
    /// Since when the Lease has been seen free while the reader leads
    /// others ([`lease::patience`]).
    free_since: Option<Instant>,
    observed: Option<Observed>,
    held: Option<Held>,
    /// The holder the last Following named ("" for nobody); `None` before
    /// the first.
    said_holder: Option<String>,
    /// This term resumed from another shard map's checkpoints (a rollout):
    /// its own are not written over the old map's names until every Lease
    /// of this map is held by it (`checkpoint::new_map_held`).
    merged_from: Option<u32>,
    /// Since when the Lease has been seen absent by a replica that never
    /// saw it, while the kept checkpoint records a term.
    absent_since: Option<Instant>,
    /// Another replica was seen using our identity (a renewal's 409 over a
    /// record we never wrote).
    twin: bool,
    /// With shards: the sibling Leases as we last saw them change, and the
    /// rollout we last said we wait for.
    siblings: std::collections::HashMap<String, Observed>,
    said_rollout: Option<String>,
    /// The ConfigMap: `None` not known, `Some(None)` absent, else as read
    /// or last written.
    configmap: Option<Option<KeptMap>>,
    /// The record of our last Lease write that got no answer: a conflict
    /// that finds it written is our own write landing, not another
    /// replica's.
    unanswered: Option<lease::Record>,
    /// The checkpoint last written (or read): an unchanged one is not written again.
    written: Option<Vec<u8>>,
    /// Error entries waiting for room in the channel: the elector never
    /// blocks on a full channel while it holds the Lease.
    pending: std::collections::VecDeque<Entry>,
    /// Already said, until the next success: a 403 on the Lease, on the
    /// ConfigMap; a checkpoint too large.
    said_forbidden_lease: bool,
    said_forbidden_configmap: bool,
    said_too_large: bool,
    /// The server has been failing since this was set: logged once a spell.
    failing: bool,
    /// On close: every request ends by then.
    closing_until: Option<Instant>,
}

impl Elector {
    pub(crate) fn new(init: ElectorInit) -> Elector {
        Elector {
            election: init.election,
            kept: init.kept,
            client: init.client,
            out: Some(init.out),
            closing: init.closing,
            finish: init.finish,
            streams: init.streams,
            map: init.map,
            named: init.named,
            leading: init.leading,
            free_since: None,
            observed: None,
            held: None,
            said_holder: None,
            twin: false,
            merged_from: None,
            absent_since: None,
            siblings: std::collections::HashMap::new(),
            said_rollout: None,
            configmap: None,
            unanswered: None,
            written: None,
            pending: std::collections::VecDeque::new(),
            said_forbidden_lease: false,
            said_forbidden_configmap: false,
            said_too_large: false,
            failing: false,
            closing_until: None,
        }
    }

    /// The thread's body: stand by, lead, follow again, until the reader
    /// stops; then the last checkpoint and the release.
    pub(crate) fn run(mut self) {
        loop {
            self.flush_pending();
            let wake = match self.held.is_some() {
                true => self.hold(),
                false => self.try_acquire(),
            };
            if self.sleep_until(wake) {
                break;
            }
        }
        self.close();
    }

    fn lease_path(&self) -> String {
        format!(
            "/apis/coordination.k8s.io/v1/namespaces/{}/leases/{}",
            self.election.namespace, self.election.lease
        )
    }

    fn leases_path(&self) -> String {
        format!(
            "/apis/coordination.k8s.io/v1/namespaces/{}/leases",
            self.election.namespace
        )
    }

    /// Sleeps until `when`; true when the reader stopped.
    fn sleep_until(&self, when: Instant) -> bool {
        let d = when.saturating_duration_since(Instant::now());
        select! {
            recv(self.closing) -> _ => true,
            default(d) => false,
        }
    }

    fn stopped(&self) -> bool {
        Stop {
            all: self.closing.clone(),
            own: crossbeam_channel::never(),
        }
        .is_set()
    }

    /// How long a request may wait for the server: while holding, no later
    /// than the renew deadline.
    fn request_timeout(&self) -> Duration {
        let period = self.election.retry_period;
        let left = self.held.as_ref().map_or(period, |h| {
            (h.renewed + self.election.renew_deadline).saturating_duration_since(Instant::now())
        });
        let left = match self.closing_until {
            Some(until) => left.min(until.saturating_duration_since(Instant::now())),
            None => left,
        };
        period.min(left).max(Duration::from_millis(50))
    }

    /// One request; `Err` for no answer (the reason, free of secrets).
    fn call(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<(u16, Vec<u8>), String> {
        match self.client.call(method, path, body, timeout) {
            Ok(answer) => Ok(answer),
            Err(e) => Err(describe(e)),
        }
    }

    /// Logs a failure: the first of a spell as a warning, the rest at debug.
    fn failed(&mut self, what: &str) {
        // A conflict is another replica's write: the election at work.
        if self.failing || what.contains(": 409") {
            log::debug!("leader election: {what}");
        } else {
            log::warn!("leader election: {what} (retrying)");
            self.failing = true;
        }
    }

    /// The Lease now: `Ok(None)` when there is none.
    fn read_lease(&mut self) -> Result<Option<Lease>, String> {
        let path = self.lease_path();
        let (code, body) = self.call("GET", &path, None, self.request_timeout())?;
        match code {
            200 => lease::parse_lease(&body)
                .map(Some)
                .ok_or_else(|| "the server's Lease could not be read".to_string()),
            404 => Ok(None),
            _ => Err(self.refused("leases", code, &body)),
        }
    }

    /// Writes the record `verdict` calls for over the Lease `read` (or
    /// creates it); the Lease as written.
    fn write_lease(&mut self, verdict: &Verdict, read: Option<&Lease>) -> Result<Lease, Write> {
        let e = &self.election;
        let recorded = self.recorded_term();
        let record = lease::record_for(
            verdict,
            read,
            self.observed.as_ref().map(Observed::record),
            recorded,
            &e.identity,
            e.lease_duration,
            SystemTime::now(),
        );
        let body = lease::lease_body(&e.namespace, &e.lease, read, &record, Some(self.map.count));
        let (method, path) = match read {
            None => ("POST", self.leases_path()),
            Some(_) => ("PUT", self.lease_path()),
        };
        let answer = self.call(method, &path, Some(&body), self.request_timeout());
        let (code, answer) = match answer {
            Ok(a) => a,
            Err(e) => {
                self.unanswered = Some(record);
                return Err(Write::Failed(e));
            }
        };
        match code {
            200 | 201 => {
                self.said_forbidden_lease = false;
                self.unanswered = None;
                lease::parse_lease(&answer)
                    .ok_or_else(|| Write::Failed("the server's Lease could not be read".into()))
            }
            409 => Err(Write::Conflict),
            404 if read.is_some() => Err(Write::Gone),
            _ => Err(Write::Failed(self.refused("leases", code, &answer))),
        }
    }

    /// Before taking a Lease: why to wait, when a Lease of another shard
    /// map (`base` alone, `base-0`, `base-1`, … up to the first that is not
    /// there) is held by a live replica that cuts the resources into
    /// another number of shards: a rollout that changes `shards`. Once
    /// every such Lease is released or expired (by our clock, as the
    /// election judges its own), this map's replicas take every shard:
    /// never two maps at once. A Lease that cannot be read is a reason to
    /// wait too. A Lease written before the count was recorded counts as
    /// this map's, or as one shard when it is named `base`.
    fn rollout_wait(&mut self) -> Option<String> {
        let map = self.map.clone();
        let me = self.election.identity.clone();
        let unsharded = (map.count > 1).then(|| map.lease_base.clone());
        let numbered = (0..MAX_SIBLINGS).map(|i| format!("{}-{i}", map.lease_base));
        for name in unsharded.into_iter().chain(numbered) {
            let path = format!("{}/{name}", self.leases_path());
            let read = match self.call("GET", &path, None, self.request_timeout()) {
                Ok((200, body)) => lease::parse_lease(&body),
                Ok((404, _)) if name == map.lease_base => continue,
                Ok((404, _)) => return None,
                Ok((code, _)) => {
                    return Some(format!("the Lease {name} could not be read ({code})"))
                }
                Err(e) => return Some(format!("the Lease {name} could not be read ({e})")),
            };
            let Some(l) = read else {
                return Some(format!("the Lease {name} could not be read"));
            };
            let theirs = lease::shards_of(&l).unwrap_or(match name == map.lease_base {
                true => 1,
                false => map.count,
            });
            let now = Instant::now();
            let seen = Observed::note(self.siblings.remove(&name), &l.record, now);
            let live = lease::decide(Some(&l), Some(&seen), &me, now) == Verdict::Wait;
            self.siblings.insert(name.clone(), seen);
            if theirs != map.count && live {
                return Some(format!(
                    "a rollout of shards: {:?} holds {name} with {theirs} shards, this replica has {}; waiting until it is released or expires",
                    l.record.holder, map.count
                ));
            }
        }
        None
    }

    /// The term the kept checkpoint records, as last read or written.
    fn recorded_term(&self) -> Option<u64> {
        self.configmap
            .as_ref()?
            .as_ref()
            .and_then(super::checkpoint_configmap::recorded_term)
    }

    /// A failure status as text; a 403 also said once in an Error entry
    /// (the RBAC the elector needs).
    fn refused(&mut self, what: &str, code: u16, body: &[u8]) -> String {
        let status = crate::wire::decode::status(body);
        let reason = match status.reason {
            r if r.is_empty() => format!("HTTP {code}"),
            r => r,
        };
        if code == 403 {
            let ns = match what {
                "leases" => &self.election.namespace,
                _ => self.kept.as_ref().map_or("", |k| k.namespace.as_str()),
            };
            let said = match what {
                "leases" => &mut self.said_forbidden_lease,
                _ => &mut self.said_forbidden_configmap,
            };
            if !*said {
                *said = true;
                let message = format!(
                    "leader election needs get, create and update on {what} in the namespace {ns}: {}",
                    status.message
                );
                let resource = if what == "leases" {
                    lease_resource()
                } else {
                    configmap_resource()
                };
                let info = ErrorInfo {
                    code,
                    kind: Reason::Server,
                    reason: reason.clone(),
                    message,
                    ended: false,
                };
                self.error(resource, info);
            }
        }
        format!("{what}: {reason} ({code})")
    }

    /// A follower's turn: read the Lease, take it when it is free or
    /// expired. When to look again.
    fn try_acquire(&mut self) -> Instant {
        let began = Instant::now();
        let next = began + lease::follower_wait(self.election.retry_period, unit());
        let read = match self.read_lease() {
            Ok(read) => read,
            Err(e) => {
                self.failed(&format!("reading the Lease: {e}"));
                if self.said_holder.is_none() {
                    self.follow(Reason::Standby, "waiting for the Lease".into(), None);
                }
                return next;
            }
        };
        if let Some(l) = &read {
            self.observed = Some(Observed::note(
                self.observed.take(),
                &l.record,
                Instant::now(),
            ));
        }
        // Once another replica was seen using our identity, a Lease that
        // names it is that replica's: taken only when it expires.
        let me = match self.twin {
            true => "\u{0}",
            false => self.election.identity.as_str(),
        };
        let verdict = lease::decide(read.as_ref(), self.observed.as_ref(), me, Instant::now());
        // Who holds it, said once at the start and again when it changes
        // while we wait (client-go's OnNewLeader); a Lease we take now is
        // said by our Leading.
        // A Lease gone while held is held still (`lease::decide`), by whom we saw.
        let holder = match (&read, &self.observed) {
            (Some(l), _) => l.record.holder.as_str(),
            (None, Some(o)) if verdict == Verdict::Wait => o.record().holder.as_str(),
            (None, _) => "",
        };
        let changed = self.said_holder.as_deref() != Some(holder);
        if self.said_holder.is_none() || (changed && verdict == Verdict::Wait) {
            let why = match holder {
                h if h.is_empty() || h == self.election.identity => {
                    "waiting for the Lease".to_string()
                }
                h => format!("waiting for the Lease {h:?} holds"),
            };
            // A Lease naming us (a restart within its duration) is ours to
            // take: nobody else holds it.
            let holder = Some(holder.to_string()).filter(|h| *h != self.election.identity);
            self.follow(Reason::Standby, why, holder);
        }
        if verdict == Verdict::Wait {
            self.failing = false;
            self.free_since = None;
            return next;
        }
        // Counted as led while we try, so that the reader's other electors,
        // looking at the same moment, wait their turn. A Lease nobody holds
        // (none yet, or released) goes first to a replica leading fewer of
        // the reader's Leases: shards spread at a start or a rollout. One
        // whose holder stopped renewing is taken at once: a takeover is not
        // delayed past the lease duration.
        let now = Instant::now();
        let since = *self.free_since.get_or_insert(now);
        let others = self.leading.fetch_add(1, Ordering::SeqCst);
        let unheld = read.as_ref().is_none_or(|l| l.record.holder.is_empty());
        if unheld && now < since + lease::patience(others, self.election.retry_period) {
            self.leading.fetch_sub(1, Ordering::SeqCst);
            return next;
        }
        self.free_since = None;
        if let Some(why) = self.rollout_wait() {
            // Another shard map is live: never two at once.
            self.leading.fetch_sub(1, Ordering::SeqCst);
            if self.said_rollout.as_deref() != Some(why.as_str()) {
                log::info!("leader election: {why}");
                self.said_rollout = Some(why.clone());
                self.follow(Reason::Standby, why, None);
            }
            return next;
        }
        self.said_rollout = None;
        // The checkpoint to resume from, read before the Lease is taken: a
        // holder that stopped wrote its last one before it stopped, and a
        // rollout's new shard reads the old map's before its Lease tells
        // the new map's other shards that it took over (they then may
        // write over the old map's names).
        let resume = match self.load_checkpoint(Instant::now()) {
            Ok(resume) => resume,
            Err(why) => {
                self.leading.fetch_sub(1, Ordering::SeqCst);
                self.failed(&format!("reading the checkpoint: {why}"));
                return next;
            }
        };
        // No Lease, while we saw it before or the kept checkpoint says the
        // election ran: it may have been deleted under a holder that still
        // delivers (it stops at its next renewal, a 404, and delivers no
        // later than the renew deadline after that renewal began, before
        // the delete). Not created before it has been seen absent for a
        // lease duration: the last change we saw of it may be older than
        // the holder's last renewal (a look missed while starved).
        if read.is_none() && (self.observed.is_some() || self.recorded_term().is_some()) {
            let since = *self.absent_since.get_or_insert(Instant::now());
            if Instant::now() < since + self.election.lease_duration {
                self.leading.fetch_sub(1, Ordering::SeqCst);
                return next;
            }
        }
        self.absent_since = None;
        let began = Instant::now();
        match self.write_lease(&verdict, read.as_ref()) {
            Ok(written) => {
                self.failing = false;
                self.lead(written, began, resume);
                // A holder's turn next, at once: its first checkpoint is
                // due as soon as its streams are synced.
                if self.held.is_some() {
                    return Instant::now();
                }
            }
            Err(e) => {
                self.leading.fetch_sub(1, Ordering::SeqCst);
                self.failed(&format!("taking the Lease: {e}"));
            }
        }
        next
    }

    /// We hold the Lease since our write that began at `began`: say so,
    /// then start the streams from `resume`, the checkpoint in the cluster.
    fn lead(&mut self, written: Lease, began: Instant, resume: Option<Checkpoint>) {
        log::info!(
            "leader election: holding the Lease {}/{} as {}",
            self.election.namespace,
            self.election.lease,
            self.election.identity
        );
        self.observed = Some(Observed::note(
            self.observed.take(),
            &written.record,
            Instant::now(),
        ));
        // Counted in `leading` since try_acquire.
        let term = Term::new(
            written.record.transitions,
            began + self.election.renew_deadline,
        );
        self.held = Some(Held {
            lease: written,
            term: term.clone(),
            renewed: began,
            next_renewal: began + self.election.retry_period,
            // The first checkpoint as soon as the streams are synced.
            next_checkpoint: Instant::now()
                + self
                    .kept
                    .as_ref()
                    .map_or(Duration::MAX / 4, |_| Duration::from_millis(100)),
            since: began,
            checkpointed: false,
            resumed: resume.clone(),
        });
        let mut leading = self.marker(Change::Leading, None);
        leading.holder = Some(Box::from(self.election.identity.as_str()));
        // The term's number, not its end: a Leading still queued when the
        // term ends is handed out, so that the Following after it is
        // never one the consumer cannot place.
        self.send_in(leading, &Term::marker(term.number()));
        // The send may have waited for the consumer: no stream starts on a
        // Lease that may have expired meanwhile.
        if lease::must_stop(began, self.election.renew_deadline, Instant::now()) {
            self.step_down(
                Reason::RenewFailed,
                "the renew deadline passed before the streams started".into(),
                None,
            );
            return;
        }
        self.record_term();
        if let Err(e) = self.streams.start(resume.as_ref(), &term) {
            if !self.stopped() {
                log::error!("leader election: the streams could not start: {e}");
                let why = format!("the streams could not start: {e}");
                self.error(
                    lease_resource(),
                    ErrorInfo::ours(Reason::InternalError, 0, why, false),
                );
            }
        }
    }

    /// A holder's turn: renew when due, stop at the deadline, write the
    /// checkpoint when due. When to wake next.
    fn hold(&mut self) -> Instant {
        let deadline = self.election.renew_deadline;
        // The consumer took an entry past the renew deadline (this thread
        // could not run): the term ended there, and what it dropped comes
        // again only from a new term, resumed from the checkpoint.
        if self.held.as_ref().is_some_and(|h| h.term.is_ended()) {
            self.step_down(
                Reason::RenewFailed,
                format!("the Lease was not renewed for {deadline:?} (an entry was due meanwhile)"),
                None,
            );
            return Instant::now() + self.election.retry_period;
        }
        let now = Instant::now();
        if self.held.as_ref().is_some_and(|h| now >= h.next_renewal) {
            let began = now;
            match self.renew() {
                Ok(written) => {
                    self.failing = false;
                    if let Some(h) = &mut self.held {
                        h.lease = written;
                        h.renewed = began;
                        h.term.extend(began + deadline);
                    }
                }
                Err(Renewal::Lost(holder)) => {
                    self.step_down(
                        Reason::LeaseLost,
                        format!("the Lease is held by {holder:?} now"),
                        Some(holder),
                    );
                    return Instant::now() + self.election.retry_period;
                }
                Err(Renewal::Gone) => {
                    self.step_down(Reason::LeaseLost, "the Lease was deleted".into(), None);
                    return Instant::now() + self.election.retry_period;
                }
                Err(Renewal::Twin) => {
                    self.twin = true;
                    let id = self.election.identity.clone();
                    let why = format!(
                        "another replica uses the identity {id:?}: give each replica its own"
                    );
                    log::error!("leader election: {why}");
                    self.error(
                        lease_resource(),
                        ErrorInfo::ours(Reason::LeaseLost, 409, why.clone(), false),
                    );
                    self.step_down(Reason::LeaseLost, why, None);
                    return Instant::now() + self.election.retry_period;
                }
                Err(Renewal::Failed(e)) => self.failed(&format!("renewing the Lease: {e}")),
            }
            if let Some(h) = &mut self.held {
                h.next_renewal = began + self.election.retry_period;
            }
        }
        let renewed = self.held.as_ref().map_or(now, |h| h.renewed);
        if lease::must_stop(renewed, deadline, Instant::now()) {
            self.step_down(
                Reason::RenewFailed,
                format!("the Lease was not renewed for {deadline:?}"),
                None,
            );
            return Instant::now() + self.election.retry_period;
        }
        if self
            .held
            .as_ref()
            .is_some_and(|h| Instant::now() >= h.next_checkpoint)
        {
            let wait = self.periodic_checkpoint();
            if let Some(h) = &mut self.held {
                h.next_checkpoint = Instant::now() + wait;
            }
        }
        match &self.held {
            Some(h) => h
                .next_renewal
                .min(h.renewed + deadline)
                .min(h.next_checkpoint),
            None => Instant::now() + self.election.retry_period,
        }
    }

    /// client-go's renewal: a PUT over the Lease as we last wrote it; on a
    /// conflict, read it and renew only if it is still ours. A Lease that
    /// is gone ends our term at once; one that names us but holds a record
    /// we never wrote is another replica's with our identity.
    fn renew(&mut self) -> Result<Lease, Renewal> {
        let Some(ours) = self.held.as_ref().map(|h| h.lease.clone()) else {
            return Err(Renewal::Failed("not held".into()));
        };
        let last = self.unanswered.take();
        match self.write_lease(&Verdict::Renew, Some(&ours)) {
            Ok(written) => return Ok(written),
            Err(Write::Conflict) => {}
            Err(Write::Gone) => return Err(Renewal::Gone),
            Err(Write::Failed(e)) => return Err(Renewal::Failed(e)),
        }
        let read = self.read_lease().map_err(Renewal::Failed)?;
        let Some(read) = read else {
            return Err(Renewal::Gone);
        };
        self.observed = Some(Observed::note(
            self.observed.take(),
            &read.record,
            Instant::now(),
        ));
        if read.record.holder != self.election.identity {
            return Err(Renewal::Lost(read.record.holder));
        }
        // Ours by name: our own write that got no answer, landed; or
        // another replica's under the same identity.
        if last.as_ref() != Some(&read.record) {
            return Err(Renewal::Twin);
        }
        self.write_lease(&Verdict::Renew, Some(&read))
            .map_err(|e| Renewal::Failed(e.to_string()))
    }

    /// Stops the streams, waits for every delivery under way, then says
    /// why in a Following entry.
    fn step_down(&mut self, reason: Reason, why: String, holder: Option<String>) {
        if let Some(held) = self.held.take() {
            // First: what the streams still have queued is not handed out.
            held.term.end();
            self.leading.fetch_sub(1, Ordering::SeqCst);
        }
        self.streams.stop();
        log::warn!(
            "leader election: stopped streaming ({}): {why}",
            reason.as_str()
        );
        self.follow(reason, why, holder);
    }

    /// Sends a Following entry naming the holder seen (`None`: nobody, or
    /// not known).
    fn follow(&mut self, reason: Reason, why: String, holder: Option<String>) {
        let info = ErrorInfo::ours(reason, 0, why, false);
        let mut entry = self.marker(Change::Following, Some(info));
        entry.holder = holder.filter(|h| !h.is_empty()).map(Box::from);
        self.said_holder = Some(entry.holder.as_deref().unwrap_or("").to_string());
        self.send(entry);
    }

    /// Sends a Leading entry in its term.
    fn send_in(&self, entry: Entry, term: &Term) {
        if let Some(out) = &self.out {
            let stop = Stop {
                all: self.closing.clone(),
                own: crossbeam_channel::never(),
            };
            out.in_term(term.clone()).send(entry, &stop);
        }
    }

    /// A Leading or Following entry: the Lease's namespace and name, our identity.
    fn marker(&self, change: Change, info: Option<ErrorInfo>) -> Entry {
        let mut e = Entry::marker(change, Arc::new(lease_resource()), Rv::empty());
        e.namespace = Some(Arc::from(self.election.namespace.as_str()));
        e.name = Text::from(self.election.lease.as_str());
        e.uid = Text::from(self.election.identity.as_str());
        e.error = info.map(Box::new);
        e
    }

    /// Sends `entry`, waiting for room, unless the reader stops.
    fn send(&self, entry: Entry) {
        if let Some(out) = &self.out {
            let stop = Stop {
                all: self.closing.clone(),
                own: crossbeam_channel::never(),
            };
            out.send(entry, &stop);
        }
    }

    /// Queues an Error entry (not ended: the elector goes on); it goes
    /// when there is room, never holding the elector up.
    fn error(&mut self, resource: Resource, info: ErrorInfo) {
        self.pending
            .push_back(Entry::failure(Arc::new(resource), info));
        self.flush_pending();
    }

    fn flush_pending(&mut self) {
        let Some(out) = &self.out else {
            self.pending.clear();
            return;
        };
        while let Some(e) = self.pending.pop_front() {
            if let Some(e) = out.try_send(e) {
                self.pending.push_front(e);
                break;
            }
        }
    }

    /// The reader stopped: once its close has joined the streams, the last
    /// checkpoint (when the consumer took every entry) and the release
    /// (client-go's ReleaseOnCancel), within a few seconds, best effort.
    fn close(mut self) {
        self.out = None;
        self.pending.clear();
        let _ = self.finish.recv();
        let Some((renewed, ended)) = self.held.as_ref().map(|h| (h.renewed, h.term.is_ended()))
        else {
            return;
        };
        if ended || lease::must_stop(renewed, self.election.renew_deadline, Instant::now()) {
            return;
        }
        let until = Instant::now() + CLOSING_BUDGET;
        self.closing_until = Some(until);
        // A term resumed from another shard map's checkpoints leaves them
        // be until its own map holds every Lease (`merged_from`).
        if self.kept.is_some() && self.merged_from.is_none() {
            if let Some(cp) = self.streams.quiet_checkpoint() {
                self.write_checkpoint(&cp);
            }
        }
        let Some(mut ours) = self.held.as_ref().map(|h| h.lease.clone()) else {
            return;
        };
        while Instant::now() < until {
            let gone = lease::released(&ours, SystemTime::now());
            let e = &self.election;
            let count = Some(self.map.count);
            let body = lease::lease_body(&e.namespace, &e.lease, Some(&ours), &gone, count);
            let path = self.lease_path();
            match self.call("PUT", &path, Some(&body), self.request_timeout()) {
                Ok((200, _)) => {
                    log::info!(
                        "leader election: released the Lease {}/{}",
                        self.election.namespace,
                        self.election.lease
                    );
                    return;
                }
                Ok((409, _)) => match self.read_lease() {
                    Ok(Some(read)) if read.record.holder == self.election.identity => ours = read,
                    _ => return,
                },
                Ok((code, _)) => {
                    log::warn!("leader election: the Lease could not be released ({code})");
                    return;
                }
                Err(e) => {
                    log::warn!("leader election: the Lease could not be released: {e}");
                    return;
                }
            }
        }
    }
}

/// How a write of the Lease failed.
enum Write {
    /// It changed since we read it (409).
    Conflict,
    /// It is gone (404 on a replacement).
    Gone,
    /// No answer, or another failure (said as text, free of secrets).
    Failed(String),
}

impl std::fmt::Display for Write {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Write::Conflict => f.write_str("409: the Lease changed meanwhile"),
            Write::Gone => f.write_str("404: the Lease is gone"),
            Write::Failed(e) => f.write_str(e),
        }
    }
}

/// A draw in `0.0..1.0` for the follower's jitter.
fn unit() -> f64 {
    (crate::config::random_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// How a renewal failed.
enum Renewal {
    /// Another holder has the Lease (empty: nobody).
    Lost(String),
    /// The Lease was deleted.
    Gone,
    /// The Lease names us, with a record we never wrote.
    Twin,
    /// No answer, or a failure: tried again until the deadline.
    Failed(String),
}

/// The resource of the elector's entries.
fn lease_resource() -> Resource {
    Resource {
        group: "coordination.k8s.io".into(),
        version: "v1".into(),
        resource: "leases".into(),
        kind: "Lease".into(),
    }
}

/// How a request ended without an answer, as text (never a credential).
fn describe(e: End) -> String {
    match e {
        End::Retry(why, _) | End::Broke(why) | End::NoCredentials(why) | End::Silent(why) => why,
        End::Fatal(info) | End::Rejected(info) => info.to_string(),
        End::Unauthorized { info, .. } => info.to_string(),
        End::Refused { code, why, .. } => format!("{code}: {why}"),
        End::Stopped => "stopped".into(),
        _ => "no answer".into(),
    }
}
