//! What a replica does with the Lease it shares with the others: pure, no
//! I/O, as client-go's `tools/leaderelection` decides it
//! (`leaderelection.go`: `tryAcquireOrRenew`, `isLeaseValid`, `renew`,
//! `release`; `resourcelock/leaselock.go` for the Lease's fields).
//!
//! Expiry is judged by *our* clock: a Lease is held until `leaseDurationSeconds`
//! after we last saw its record change (client-go's `observedTime`), never by
//! the holder's `renewTime`, so the clocks' offsets between nodes do not
//! matter, only how fast they run. A holder stops delivering once it has not
//! renewed for `renew_deadline`, counted from the *start* of its last
//! successful renewal: the server wrote that renewal after the start, and
//! every other replica saw it later still, so each of them waits until at
//! least `start + lease_duration` before taking the Lease. Two holders can
//! overlap only when clocks run at different rates by more than
//! `lease_duration / renew_deadline` (client-go's own bound), or when
//! stopping the streams takes longer than `lease_duration - renew_deadline`.

use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use crate::wire::dates::micro_time;

/// A Lease's `spec`, the leader-election record of client-go's
/// `LeaderElectionRecord`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Record {
    /// Empty: nobody holds it (released).
    pub holder: String,
    pub lease_duration_secs: u64,
    pub acquire_time: String,
    pub renew_time: String,
    pub transitions: u64,
}

/// A Lease as read: its record, its resourceVersion (the next write's
/// precondition) and the whole object, which the next write updates (as
/// client-go's leaselock PUTs the Lease it read): labels, annotations,
/// owner references, `spec.strategy`, `spec.preferredHolder` stay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lease {
    pub record: Record,
    pub resource_version: String,
    pub object: Value,
}

/// What to do with the Lease now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// There is none: create it, held by us (POST).
    Create,
    /// Take it (PUT with the resourceVersion read): it is free, released, or
    /// its holder has not renewed for its duration by our clock.
    Acquire,
    /// It is ours: renew it (PUT), keeping its acquireTime and transitions.
    Renew,
    /// Another holder's, not expired by our clock.
    Wait,
}

/// When we last saw the Lease's record change, by our clock (client-go's
/// `observedRecord` and `observedTime`).
#[derive(Debug, Clone)]
pub(crate) struct Observed {
    record: Record,
    at: Instant,
}

impl Observed {
    /// Notes the record read at `now`; the time moves only when it changed.
    pub(crate) fn note(seen: Option<Observed>, record: &Record, now: Instant) -> Observed {
        match seen {
            Some(o) if &o.record == record => o,
            _ => Observed {
                record: record.clone(),
                at: now,
            },
        }
    }

    /// The record as last seen.
    pub(crate) fn record(&self) -> &Record {
        &self.record
    }

    /// Whether the record seen is still held at `now`: its holder's duration
    /// has not passed since we saw it change (`isLeaseValid`).
    fn valid(&self, now: Instant) -> bool {
        now < self.at + Duration::from_secs(self.record.lease_duration_secs)
    }
}

/// What to do with `read` (`None`: there is no Lease), as `me`, at `now`
/// (`tryAcquireOrRenew`): ours → renew; free, released or expired → take;
/// someone else's and valid → wait. `observed` is the record as noted
/// ([`Observed::note`]) with this read.
pub(crate) fn decide(
    read: Option<&Lease>,
    observed: Option<&Observed>,
    me: &str,
    now: Instant,
) -> Verdict {
    let Some(lease) = read else {
        // Gone: one we saw held by another stays held for its duration
        // after we saw it change, as if it were still there (a Lease
        // deleted while held must not let a standby lead at once).
        return match observed {
            Some(o) if !o.record.holder.is_empty() && o.record.holder != me && o.valid(now) => {
                Verdict::Wait
            }
            _ => Verdict::Create,
        };
    };
    let holder = &lease.record.holder;
    if holder == me {
        return Verdict::Renew;
    }
    // A record not noted yet is one just seen: valid for its whole duration.
    let valid = observed.is_none_or(|o| o.record != lease.record || o.valid(now));
    if !holder.is_empty() && valid {
        Verdict::Wait
    } else {
        Verdict::Acquire
    }
}

/// How long a Lease nobody holds (none yet, or released) must have been
/// seen so before a replica that already leads `leading` other Leases
/// (shards) takes it: per Lease it leads, the longest a follower waits
/// between two looks ([`follower_wait`] at its top, 2.2 retry periods), so
/// that a replica leading fewer always gets a look in first and shards
/// spread over the replicas at a start or a rollout. One leading none
/// takes it at once; an expired Lease (its holder stopped renewing) is
/// taken at once by whoever sees it.
pub(crate) fn patience(leading: usize, retry_period: Duration) -> Duration {
    follower_wait(retry_period, 1.0).saturating_mul(u32::try_from(leading).unwrap_or(u32::MAX))
}

/// Whether a holder must stop delivering: its last successful renewal
/// started `renew_deadline` or more ago.
pub(crate) fn must_stop(
    last_renewal_start: Instant,
    renew_deadline: Duration,
    now: Instant,
) -> bool {
    now >= last_renewal_start + renew_deadline
}

/// The lease duration as a Lease holds it, in whole seconds: rounded up, so
/// that another replica never takes the Lease before this one stops (its
/// renew deadline is less than the duration, so less than what is written).
pub(crate) fn written_secs(lease_duration: Duration) -> u64 {
    (lease_duration.as_secs() + u64::from(lease_duration.subsec_nanos() > 0)).max(1)
}

/// The record to write for `verdict` (not [`Verdict::Wait`]) as `me` at
/// `now`. A Lease created again after it vanished (`read` is `None`)
/// goes on counting its transitions [`CREATED_AGAIN_GAP`] past the higher
/// of the last record we saw and the term the kept checkpoint records
/// (`recorded`): the term on entries ([`crate::Entry::term`]) never goes
/// back, even past terms begun while their record could not be written.
pub(crate) fn record_for(
    verdict: &Verdict,
    read: Option<&Lease>,
    last_seen: Option<&Record>,
    recorded: Option<u64>,
    me: &str,
    lease_duration: Duration,
    now: SystemTime,
) -> Record {
    let stamp = micro_time(now);
    let old = read.map(|l| &l.record);
    let (acquire_time, transitions) = match (verdict, old) {
        (Verdict::Renew, Some(o)) => (o.acquire_time.clone(), o.transitions),
        (_, Some(o)) => (stamp.clone(), o.transitions + 1),
        (_, None) => {
            let next = last_seen
                .map(|r| r.transitions)
                .into_iter()
                .chain(recorded)
                .max()
                .map_or(0, |t| t.saturating_add(CREATED_AGAIN_GAP));
            (stamp.clone(), next)
        }
    };
    Record {
        holder: me.to_string(),
        lease_duration_secs: written_secs(lease_duration),
        acquire_time,
        renew_time: stamp,
        transitions,
    }
}

/// How far past the last term it knows of a Lease created again starts:
/// the last record seen may be older than the Lease deleted, and a term is
/// recorded on the kept checkpoint best effort (a holder whose ConfigMap
/// writes fail leads without it), so terms begun unseen stay below.
pub(crate) const CREATED_AGAIN_GAP: u64 = 100;

/// The record that gives the Lease up (`release`): no holder, a duration of
/// one second, so that a standby takes it at its next look.
pub(crate) fn released(read: &Lease, now: SystemTime) -> Record {
    let stamp = micro_time(now);
    Record {
        holder: String::new(),
        lease_duration_secs: 1,
        acquire_time: stamp.clone(),
        renew_time: stamp,
        transitions: read.record.transitions,
    }
}

/// The annotation on each shard's Lease that says how many shards its
/// holder cuts the resources into: replicas of another count stand by
/// while it is held (a rollout that changes `shards`).
pub(crate) const SHARDS_ANNOTATION: &str = "tattler.io/shards";

/// The Lease document to PUT over `read` (the object read, every field it
/// had kept, the record's five fields set) or to POST (`read` is `None`);
/// with `shards`, the [`SHARDS_ANNOTATION`].
pub(crate) fn lease_body(
    namespace: &str,
    name: &str,
    read: Option<&Lease>,
    r: &Record,
    shards: Option<u32>,
) -> Vec<u8> {
    let mut doc = match read.map(|l| &l.object) {
        Some(Value::Object(o)) => Value::Object(o.clone()),
        _ => json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease"}),
    };
    let rv = read.map(|l| l.resource_version.as_str());
    super::set_metadata(&mut doc, namespace, name, rv);
    if let Some(n) = shards {
        doc["metadata"]["annotations"][SHARDS_ANNOTATION] = json!(n.to_string());
    }
    if !doc.get("spec").is_some_and(Value::is_object) {
        doc["spec"] = json!({});
    }
    let spec = &mut doc["spec"];
    spec["holderIdentity"] = json!(r.holder);
    spec["leaseDurationSeconds"] = json!(r.lease_duration_secs);
    spec["acquireTime"] = json!(r.acquire_time);
    spec["renewTime"] = json!(r.renew_time);
    spec["leaseTransitions"] = json!(r.transitions);
    serde_json::to_vec(&doc).unwrap_or_default()
}

/// The shard count a Lease's holder wrote ([`SHARDS_ANNOTATION`]); `None`
/// when it wrote none (no shards, or an older tattler).
pub(crate) fn shards_of(lease: &Lease) -> Option<u32> {
    lease.object["metadata"]["annotations"][SHARDS_ANNOTATION]
        .as_str()?
        .parse()
        .ok()
}

/// How long a replica that does not hold the Lease waits before it looks
/// again: `retry_period` stretched by up to 1.2 times itself, as client-go's
/// `JitterUntil` with its `JitterFactor` of 1.2 waits, so that replicas
/// started together drift apart. `unit` is a draw in `0.0..1.0`.
pub(crate) fn follower_wait(retry_period: Duration, unit: f64) -> Duration {
    retry_period + retry_period.mul_f64(1.2 * unit.clamp(0.0, 1.0))
}

/// A Lease as the server sends it; `None` when it is not one.
pub(crate) fn parse_lease(body: &[u8]) -> Option<Lease> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let resource_version = v
        .get("metadata")?
        .get("resourceVersion")?
        .as_str()?
        .to_string();
    let spec = v.get("spec");
    let text = |k: &str| {
        spec.and_then(|s| s.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let number = |k: &str| {
        spec.and_then(|s| s.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let record = Record {
        holder: text("holderIdentity"),
        lease_duration_secs: number("leaseDurationSeconds"),
        acquire_time: text("acquireTime"),
        renew_time: text("renewTime"),
        transitions: number("leaseTransitions"),
    };
    Some(Lease {
        record,
        resource_version,
        object: v,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: &str, secs: u64) -> Lease {
        Lease {
            record: Record {
                holder: holder.into(),
                lease_duration_secs: secs,
                acquire_time: "2026-12-02T11:00:00.000000Z".into(),
                renew_time: "2026-12-02T11:00:05.000000Z".into(),
                transitions: 3,
            },
            resource_version: "42".into(),
            object: Value::Null,
        }
    }

    #[test]
    fn the_verdicts_follow_client_go() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let other = lease("b", 15);
        let (ours, free) = (lease("a", 15), lease("", 1));
        let seen_at = |l: &Lease, at| Observed::note(None, &l.record, at);
        // (what was read, when we saw it change, now) → verdict, for "a".
        let cases: Vec<(Option<&Lease>, Option<Observed>, Instant, Verdict)> = vec![
            (None, None, t0, Verdict::Create),
            // Ours, even expired by our clock: renew (client-go's IsLeader path).
            (Some(&ours), None, t0, Verdict::Renew),
            (
                Some(&ours),
                Some(seen_at(&ours, t0)),
                t0 + s(60),
                Verdict::Renew,
            ),
            // Released: no holder, taken at once.
            (Some(&free), Some(seen_at(&free, t0)), t0, Verdict::Acquire),
            // Another's, seen changing just now or 14 s ago: wait.
            (Some(&other), Some(seen_at(&other, t0)), t0, Verdict::Wait),
            (
                Some(&other),
                Some(seen_at(&other, t0)),
                t0 + s(14),
                Verdict::Wait,
            ),
            // Unchanged for its 15 s by our clock: take it.
            (
                Some(&other),
                Some(seen_at(&other, t0)),
                t0 + s(15),
                Verdict::Acquire,
            ),
            // Never noted: the read itself is the observation, as a new
            // client-go elector's first read.
            (Some(&other), None, t0, Verdict::Wait),
            // Gone while another held it: held still, for its duration
            // after we saw it change; then created.
            (None, Some(seen_at(&other, t0)), t0 + s(14), Verdict::Wait),
            (None, Some(seen_at(&other, t0)), t0 + s(15), Verdict::Create),
            // Gone after it was released, or while it was ours: created.
            (None, Some(seen_at(&free, t0)), t0, Verdict::Create),
            (None, Some(seen_at(&ours, t0)), t0, Verdict::Create),
        ];
        for (i, (read, observed, now, want)) in cases.into_iter().enumerate() {
            assert_eq!(decide(read, observed.as_ref(), "a", now), want, "case {i}");
        }
    }

    #[test]
    fn expiry_counts_from_when_we_saw_a_change_not_from_renew_time() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let first = lease("b", 15);
        let seen = Observed::note(None, &first.record, t0);
        // The same record read again later: the observation keeps its time.
        let again = Observed::note(Some(seen), &first.record, t0 + s(10));
        assert_eq!(
            decide(Some(&first), Some(&again), "a", t0 + s(16)),
            Verdict::Acquire
        );
        // A renewal (renewTime moved, whatever the holder's clock says): the
        // clock starts again.
        let mut renewed = first.clone();
        renewed.record.renew_time = "1999-01-01T00:00:00.000000Z".into();
        let moved = Observed::note(Some(again), &renewed.record, t0 + s(12));
        assert_eq!(
            decide(Some(&renewed), Some(&moved), "a", t0 + s(16)),
            Verdict::Wait
        );
        assert_eq!(
            decide(Some(&renewed), Some(&moved), "a", t0 + s(27)),
            Verdict::Acquire
        );
    }

    #[test]
    fn a_holder_stops_at_the_renew_deadline_from_its_last_renewals_start() {
        let t0 = Instant::now();
        let d = Duration::from_secs(10);
        assert!(!must_stop(t0, d, t0 + Duration::from_millis(9_999)));
        assert!(must_stop(t0, d, t0 + d));
    }

    #[test]
    fn a_sub_second_part_of_the_duration_is_written_rounded_up() {
        let ms = Duration::from_millis;
        let rows = [
            (ms(1), 1),
            (ms(999), 1),
            (ms(1000), 1),
            (ms(1001), 2),
            (ms(1500), 2),
            (ms(15_000), 15),
            (ms(15_250), 16),
        ];
        for (d, want) in rows {
            assert_eq!(written_secs(d), want, "{d:?}");
            // Never shorter than the duration the holder stops within.
            assert!(Duration::from_secs(want) >= d, "{d:?}");
        }
    }

    #[test]
    fn records_keep_or_move_acquire_time_and_transitions() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(1_796_209_200);
        let d = Duration::from_secs(15);
        let ours = lease("a", 15);
        let r = record_for(&Verdict::Renew, Some(&ours), None, None, "a", d, now);
        assert_eq!(
            (r.acquire_time.as_str(), r.transitions),
            ("2026-12-02T11:00:00.000000Z", 3)
        );
        assert_eq!(r.renew_time, "2026-12-02T11:00:00.000000Z");
        let r = record_for(
            &Verdict::Acquire,
            Some(&lease("b", 15)),
            None,
            None,
            "a",
            d,
            now,
        );
        assert_eq!((r.holder.as_str(), r.transitions), ("a", 4));
        let r = record_for(&Verdict::Create, None, None, None, "a", d, now);
        assert_eq!((r.lease_duration_secs, r.transitions), (15, 0));
        // Created again after it vanished: the terms go on, from the last
        // record seen or the term the kept checkpoint records, the higher.
        let seen = lease("b", 15).record;
        let create = |seen, recorded| {
            record_for(&Verdict::Create, None, seen, recorded, "a", d, now).transitions
        };
        assert_eq!(create(Some(&seen), None), 103);
        assert_eq!(create(None, Some(9)), 109);
        assert_eq!(create(Some(&seen), Some(2)), 103);
        assert_eq!(create(Some(&seen), Some(6)), 106);
        let gone = released(&ours, now);
        assert_eq!(
            (
                gone.holder.as_str(),
                gone.lease_duration_secs,
                gone.transitions
            ),
            ("", 1, 3)
        );
    }

    #[test]
    fn a_lease_round_trips_through_its_document() {
        let r = lease("a", 15).record;
        let fresh: Value = serde_json::from_slice(&lease_body("ns", "l", None, &r, None)).unwrap();
        assert_eq!(fresh["metadata"], json!({"name": "l", "namespace": "ns"}));
        let mut read = lease("a", 15);
        read.object = fresh;
        let body = lease_body("ns", "l", Some(&read), &r, None);
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            v["metadata"],
            json!({"name": "l", "namespace": "ns", "resourceVersion": "42"})
        );
        let back = parse_lease(&body).unwrap();
        assert_eq!((back.record, back.resource_version), (r, "42".to_string()));
        // A Lease with no spec yet: nobody holds it.
        let bare = parse_lease(br#"{"metadata":{"resourceVersion":"7"}}"#).unwrap();
        assert_eq!(bare.record, Record::default());
        assert_eq!(parse_lease(b"[]"), None);
    }

    /// Issue 37: a write updates the Lease it read, as client-go's leaselock
    /// PUTs it: what the record does not set stays.
    #[test]
    fn a_write_keeps_what_it_did_not_set() {
        let read = parse_lease(
            br#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease",
                "metadata":{"name":"l","namespace":"ns","resourceVersion":"8","labels":{"app":"c"},
                  "annotations":{"note":"x"},"finalizers":["f"],
                  "ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"u"}]},
                "spec":{"holderIdentity":"b","leaseDurationSeconds":15,"leaseTransitions":2,
                  "strategy":"OldestEmulationVersion","preferredHolder":"c"}}"#,
        )
        .unwrap();
        let now = std::time::UNIX_EPOCH + Duration::from_secs(1_796_209_200);
        let r = record_for(
            &Verdict::Acquire,
            Some(&read),
            None,
            None,
            "a",
            Duration::from_secs(15),
            now,
        );
        let v: Value =
            serde_json::from_slice(&lease_body("ns", "l", Some(&read), &r, Some(3))).unwrap();
        assert_eq!(v["metadata"]["labels"], json!({"app": "c"}));
        assert_eq!(
            v["metadata"]["annotations"],
            json!({"note": "x", "tattler.io/shards": "3"})
        );
        assert_eq!(v["metadata"]["finalizers"], json!(["f"]));
        assert_eq!(v["metadata"]["ownerReferences"][0]["name"], "p");
        assert_eq!(v["metadata"]["resourceVersion"], "8");
        assert_eq!(v["spec"]["strategy"], "OldestEmulationVersion");
        assert_eq!(v["spec"]["preferredHolder"], "c");
        assert_eq!(v["spec"]["holderIdentity"], "a");
        assert_eq!(v["spec"]["leaseTransitions"], 3);
        let written = parse_lease(&serde_json::to_vec(&v).unwrap()).unwrap();
        assert_eq!(shards_of(&written), Some(3));
        assert_eq!(shards_of(&read), None);
    }

    #[test]
    fn a_follower_waits_between_one_and_two_point_two_retry_periods() {
        let r = Duration::from_secs(2);
        let rows = [
            (0.0, 2_000),
            (0.5, 3_200),
            (0.999, 4_397),
            (1.0, 4_400),
            (7.0, 4_400),
        ];
        for (unit, ms) in rows {
            let got = follower_wait(r, unit).as_millis();
            assert!(got.abs_diff(ms) <= 1, "{unit}: {got} ms, want {ms}");
        }
    }

    #[test]
    fn patience_grows_with_the_leases_led() {
        let r = Duration::from_secs(2);
        for (leading, want_ms) in [(0, 0), (1, 4_400), (2, 8_800), (5, 22_000)] {
            assert_eq!(
                patience(leading, r),
                Duration::from_millis(want_ms),
                "{leading}"
            );
            // Longer than any follower's wait between two looks: one leading
            // fewer looks again before this one takes the Lease.
            if leading > 0 {
                assert!(patience(leading, r) >= follower_wait(r, 1.0));
            }
        }
        assert!(patience(usize::MAX, r) >= r.saturating_mul(u32::MAX));
    }
}
