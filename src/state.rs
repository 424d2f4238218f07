//! Per-resource dedupe state: what was delivered, kept small.
//!
//! For each object only its uid (as 16 bytes), last delivered resourceVersion,
//! name and an interned namespace are kept — enough to judge the next event and
//! to name an object that vanished, never the object itself.

use std::collections::hash_map::{DefaultHasher, Entry as MapEntry};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::decode::{EventType, ObjectMeta};
use crate::Change;

const NO_NAMESPACE: u32 = u32::MAX;

struct Tracked {
    resource_version: u64,
    name: Box<str>,
    namespace: u32,
    /// The sync generation in which this object was last seen.
    seen: u32,
}

/// What to do with an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Deliver it as this change.
    Deliver(Change),
    /// Older than what was delivered, or a delete of an unknown object: drop.
    Stale,
    /// The version already delivered, seen again on a live watch: drop.
    Duplicate,
}

/// An object missing from a completed re-sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Vanished {
    pub namespace: Option<Arc<str>>,
    pub name: Box<str>,
    pub uid: String,
    pub resource_version: u64,
}

/// Dedupe state of one resource stream.
#[derive(Default)]
pub(crate) struct Tracker {
    objects: HashMap<u128, Tracked>,
    /// uids that are not canonical UUIDs, by their hashed key (real servers
    /// never produce them; kept so that such a uid still round-trips).
    odd_uids: HashMap<u128, Box<str>>,
    namespaces: Vec<Arc<str>>,
    namespace_ids: HashMap<Arc<str>, u32>,
    generation: u32,
    in_sync: bool,
    /// Objects deleted while a sync is in progress, with the deletion's
    /// resourceVersion: a relist's snapshot may still hold them, and must not
    /// bring them back. Emptied when the sync ends.
    tombstones: HashMap<u128, u64>,
    /// The resourceVersion of the last completed full state: an object it did
    /// not hold cannot show up with an older or equal version (such an event
    /// comes from a stream the snapshot superseded, during a relist swap).
    floor: u64,
    /// How to take back the last delivered verdict, should its entry not be
    /// sent after all (the stream was stopped while the send waited).
    last: Option<Undo>,
}

enum Undo {
    Added(u128),
    Changed {
        key: u128,
        resource_version: u64,
        seen: u32,
    },
    Removed {
        key: u128,
        tracked: Tracked,
        tombstoned: bool,
    },
}

impl Tracker {
    /// Starts delivering a full state (first sync or re-sync).
    pub(crate) fn begin_sync(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        self.in_sync = true;
    }

    /// Judges one event and records it if it is delivered. `initial`: the
    /// event is part of a full state (watch-list initial events, LIST items).
    pub(crate) fn observe(&mut self, kind: EventType, meta: &ObjectMeta, initial: bool) -> Verdict {
        if let Some(Undo::Removed { key, .. }) = self.last.take() {
            // The delete was sent: its odd uid (if any) is no longer needed.
            if !self.objects.contains_key(&key) {
                self.odd_uids.remove(&key);
            }
        }
        let key = self.key(&meta.uid);
        let rv = meta.resource_version;
        let generation = self.generation;
        let in_sync = initial && self.in_sync;
        if initial && self.tombstones.get(&key).is_some_and(|&gone| rv <= gone) {
            return Verdict::Stale;
        }
        match (kind, self.objects.entry(key)) {
            (EventType::Deleted, MapEntry::Occupied(o)) => {
                if rv < o.get().resource_version {
                    return Verdict::Stale;
                }
                let tracked = o.remove();
                let tombstoned = self.in_sync && self.tombstones.insert(key, rv).is_none();
                self.last = Some(Undo::Removed {
                    key,
                    tracked,
                    tombstoned,
                });
                Verdict::Deliver(Change::Delete)
            }
            (EventType::Deleted, MapEntry::Vacant(_)) => Verdict::Stale,
            (_, MapEntry::Vacant(_)) if rv <= self.floor && !initial => Verdict::Stale,
            (_, MapEntry::Occupied(mut o)) => {
                let t = o.get_mut();
                let undo = Undo::Changed {
                    key,
                    resource_version: t.resource_version,
                    seen: t.seen,
                };
                if in_sync {
                    t.seen = generation;
                }
                let verdict = if rv < t.resource_version {
                    Verdict::Stale
                } else if rv == t.resource_version {
                    if in_sync {
                        Verdict::Deliver(Change::Snapshot)
                    } else {
                        Verdict::Duplicate
                    }
                } else {
                    t.resource_version = rv;
                    Verdict::Deliver(Change::Update)
                };
                if matches!(verdict, Verdict::Deliver(_)) {
                    self.last = Some(undo);
                }
                verdict
            }
            (_, MapEntry::Vacant(v)) => {
                let namespace = match &meta.namespace {
                    Some(ns) => intern(&mut self.namespaces, &mut self.namespace_ids, ns),
                    None => NO_NAMESPACE,
                };
                v.insert(Tracked {
                    resource_version: rv,
                    name: Box::from(meta.name.as_ref()),
                    namespace,
                    // A live event does not vouch for the snapshot being read.
                    seen: if in_sync {
                        generation
                    } else {
                        generation.wrapping_sub(1)
                    },
                });
                self.last = Some(Undo::Added(key));
                Verdict::Deliver(Change::Add)
            }
        }
    }

    /// Takes back the last delivered verdict of [`observe`](Self::observe):
    /// its entry was not sent, so later events must be judged as if the
    /// event had never come.
    pub(crate) fn undo_last(&mut self) {
        match self.last.take() {
            Some(Undo::Added(key)) => {
                self.objects.remove(&key);
            }
            Some(Undo::Changed {
                key,
                resource_version,
                seen,
            }) => {
                if let Some(t) = self.objects.get_mut(&key) {
                    t.resource_version = resource_version;
                    t.seen = seen;
                }
            }
            Some(Undo::Removed {
                key,
                tracked,
                tombstoned,
            }) => {
                self.objects.insert(key, tracked);
                if tombstoned {
                    self.tombstones.remove(&key);
                }
            }
            None => {}
        }
    }

    /// Ends a full state taken at `snapshot_rv`: every object not seen in it
    /// is gone — unless a live event newer than the snapshot vouched for it.
    /// Returns them (and forgets them), in no particular order.
    pub(crate) fn end_sync(&mut self, snapshot_rv: u64) -> Vec<Vanished> {
        self.in_sync = false;
        self.tombstones = HashMap::new();
        self.floor = self.floor.max(snapshot_rv);
        let generation = self.generation;
        let gone: Vec<u128> = self
            .objects
            .iter()
            .filter(|(_, t)| t.seen != generation && t.resource_version <= snapshot_rv)
            .map(|(k, _)| *k)
            .collect();
        let mut out = Vec::with_capacity(gone.len());
        for key in gone {
            let t = self.objects.remove(&key).expect("key was just listed");
            out.push(Vanished {
                namespace: self.namespace(t.namespace),
                name: t.name,
                uid: self
                    .odd_uids
                    .remove(&key)
                    .map(String::from)
                    .unwrap_or_else(|| format_uuid(key)),
                resource_version: t.resource_version,
            });
        }
        out
    }

    /// The shared copy of a namespace name, for entries.
    pub(crate) fn namespace_arc(&mut self, ns: Option<&str>) -> Option<Arc<str>> {
        let id = intern(&mut self.namespaces, &mut self.namespace_ids, ns?);
        self.namespace(id)
    }

    /// Number of objects tracked.
    pub(crate) fn len(&self) -> usize {
        self.objects.len()
    }

    fn namespace(&self, id: u32) -> Option<Arc<str>> {
        (id != NO_NAMESPACE).then(|| self.namespaces[id as usize].clone())
    }

    fn key(&mut self, uid: &str) -> u128 {
        if let Some(k) = parse_uuid(uid) {
            return k;
        }
        let mut h1 = DefaultHasher::new();
        (1u8, uid).hash(&mut h1);
        let mut h2 = DefaultHasher::new();
        (2u8, uid).hash(&mut h2);
        // The top bits mark hashed keys so they never equal a parsed UUID's
        // canonical form in practice; the map lookup is the real guard.
        let k = (u128::from(h1.finish()) << 64) | u128::from(h2.finish());
        self.odd_uids.entry(k).or_insert_with(|| Box::from(uid));
        k
    }
}

fn intern(list: &mut Vec<Arc<str>>, ids: &mut HashMap<Arc<str>, u32>, ns: &str) -> u32 {
    if let Some(&id) = ids.get(ns) {
        return id;
    }
    let arc: Arc<str> = Arc::from(ns);
    let id = list.len() as u32;
    list.push(arc.clone());
    ids.insert(arc, id);
    id
}

/// A canonical lower-case UUID (`8-4-4-4-12`) as a number; anything else is `None`.
fn parse_uuid(uid: &str) -> Option<u128> {
    let b = uid.as_bytes();
    if b.len() != 36 {
        return None;
    }
    let mut v: u128 = 0;
    for (i, &c) in b.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if c != b'-' {
                return None;
            }
            continue;
        }
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        v = (v << 4) | u128::from(d);
    }
    Some(v)
}

fn format_uuid(v: u128) -> String {
    let h = format!("{v:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn meta(ns: &str, name: &str, uid: &str, rv: u64) -> ObjectMeta<'static> {
        ObjectMeta {
            kind: None,
            namespace: (!ns.is_empty()).then(|| Cow::Owned(ns.to_string())),
            name: Cow::Owned(name.to_string()),
            uid: Cow::Owned(uid.to_string()),
            resource_version: rv,
        }
    }

    const U1: &str = "6f824e9e-b6ca-474e-abfe-1335f933eeb9";
    const U2: &str = "00000000-0000-0000-0000-000000000002";

    #[test]
    fn uuids_round_trip() {
        assert_eq!(format_uuid(parse_uuid(U1).unwrap()), U1);
        assert_eq!(parse_uuid("6F824E9E-B6CA-474E-ABFE-1335F933EEB9"), None);
        assert_eq!(parse_uuid("not-a-uuid"), None);
    }

    #[test]
    fn first_sync_then_live_changes() {
        use Change::*;
        use EventType::*;
        let mut t = Tracker::default();
        t.begin_sync();
        assert_eq!(
            t.observe(Added, &meta("a", "p1", U1, 10), true),
            Verdict::Deliver(Add)
        );
        assert_eq!(
            t.observe(Added, &meta("a", "p2", "odd uid", 5), true),
            Verdict::Deliver(Add)
        );
        assert!(t.end_sync(100).is_empty());
        assert_eq!(
            t.observe(Modified, &meta("a", "p1", U1, 10), false),
            Verdict::Duplicate
        );
        assert_eq!(
            t.observe(Modified, &meta("a", "p1", U1, 9), false),
            Verdict::Stale
        );
        assert_eq!(
            t.observe(Modified, &meta("a", "p1", U1, 11), false),
            Verdict::Deliver(Update)
        );
        assert_eq!(
            t.observe(Deleted, &meta("a", "p1", U1, 12), false),
            Verdict::Deliver(Delete)
        );
        assert_eq!(
            t.observe(Deleted, &meta("a", "p1", U1, 13), false),
            Verdict::Stale
        );
        // A verdict whose entry was never sent is taken back.
        assert_eq!(
            t.observe(Modified, &meta("a", "p2", "odd uid", 6), false),
            Verdict::Deliver(Update)
        );
        t.undo_last();
        assert_eq!(
            t.observe(Modified, &meta("a", "p2", "odd uid", 6), false),
            Verdict::Deliver(Update)
        );
        assert_eq!(
            t.observe(Deleted, &meta("a", "p2", "odd uid", 7), false),
            Verdict::Deliver(Delete)
        );
        t.undo_last();
        assert_eq!(
            t.observe(Deleted, &meta("a", "p2", "odd uid", 7), false),
            Verdict::Deliver(Delete)
        );
        t.undo_last();
        assert_eq!(t.len(), 1);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn resync_reports_snapshots_updates_and_vanished_objects() {
        use Change::*;
        use EventType::*;
        let mut t = Tracker::default();
        t.begin_sync();
        t.observe(Added, &meta("a", "keep", U1, 10), true);
        t.observe(Added, &meta("a", "gone", U2, 11), true);
        t.observe(Added, &meta("", "odd", "odd uid", 12), true);
        t.end_sync(100);
        t.begin_sync();
        assert_eq!(
            t.observe(Added, &meta("a", "keep", U1, 10), true),
            Verdict::Deliver(Snapshot)
        );
        assert_eq!(
            t.observe(Added, &meta("", "odd", "odd uid", 20), true),
            Verdict::Deliver(Update)
        );
        let gone = t.end_sync(100);
        assert_eq!(
            gone,
            vec![Vanished {
                namespace: Some(Arc::from("a")),
                name: Box::from("gone"),
                uid: U2.to_string(),
                resource_version: 11
            }]
        );
        assert_eq!(t.len(), 2);
        // An interrupted re-sync followed by a complete one loses nothing.
        t.begin_sync();
        t.observe(Added, &meta("a", "keep", U1, 10), true);
        t.begin_sync();
        t.observe(Added, &meta("", "odd", "odd uid", 20), true);
        let gone = t.end_sync(100);
        assert_eq!(gone.len(), 1);
        assert_eq!(
            (gone[0].uid.as_str(), gone[0].namespace.clone()),
            (U1, Some(Arc::from("a")))
        );
        t.begin_sync();
        let gone = t.end_sync(100);
        assert_eq!(
            (gone[0].uid.as_str(), gone[0].namespace.clone()),
            ("odd uid", None)
        );
    }

    #[test]
    fn a_relist_racing_live_events_neither_resurrects_nor_wrongly_deletes() {
        use Change::*;
        use EventType::*;
        let mut t = Tracker::default();
        t.begin_sync();
        t.observe(Added, &meta("a", "p1", U1, 10), true);
        t.observe(Added, &meta("a", "p2", U2, 11), true);
        t.end_sync(11);
        // A relist's snapshot is taken at rv 20; meanwhile the live stream
        // deletes p2 (rv 21) and adds p3 (rv 22) before the snapshot arrives.
        t.begin_sync();
        assert_eq!(
            t.observe(Deleted, &meta("a", "p2", U2, 21), false),
            Verdict::Deliver(Delete)
        );
        let u3 = "00000000-0000-0000-0000-000000000003";
        assert_eq!(
            t.observe(Added, &meta("a", "p3", u3, 22), false),
            Verdict::Deliver(Add)
        );
        assert_eq!(
            t.observe(Added, &meta("a", "p1", U1, 10), true),
            Verdict::Deliver(Snapshot)
        );
        assert_eq!(
            t.observe(Added, &meta("a", "p2", U2, 11), true),
            Verdict::Stale,
            "no resurrection"
        );
        assert_eq!(
            t.end_sync(20),
            vec![],
            "p3 is newer than the snapshot: not deleted"
        );
        assert_eq!(t.len(), 2);
        // Tombstones last one sync only.
        t.begin_sync();
        assert_eq!(
            t.observe(Added, &meta("a", "p2", U2, 30), true),
            Verdict::Deliver(Add)
        );
    }
}
