//! Per-resource dedupe state: what was delivered, kept small.
//!
//! For each object only its uid (as 16 bytes), last delivered resourceVersion,
//! name and an interned namespace are kept — enough to judge the next event and
//! to name an object that vanished, never the object itself. A map bucket is
//! 40 bytes; names live packed in 64 KiB chunks, compacted as deletes leave
//! holes (tests/memory.rs measures the total at under 128 bytes per object).

use std::collections::hash_map::{DefaultHasher, Entry as MapEntry};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::decode::{EventType, ObjectMeta};
use crate::Change;

/// `Tracked::namespace` of a cluster-scoped object.
const NO_NAMESPACE: u16 = u16::MAX;
/// `Tracked::namespace` when the table is full (over 65,000 live namespaces;
/// Kubernetes supports 10,000): the namespace is in `Tracker::ns_overflow`.
const NS_OVERFLOW: u16 = u16::MAX - 1;

/// A uid as a map key: two words, so a bucket needs no 16-byte alignment.
type Key = (u64, u64);

/// 16 bytes: with its key, a map bucket is 32.
struct Tracked {
    resource_version: u64,
    /// Where the name is in [`Names`].
    name_at: u32,
    namespace: u16,
    name_len: u8,
    /// The sync generation (mod 256) in which this object was last seen. Every
    /// object is seen by, or removed at, one of any two consecutive syncs, so
    /// the wrap is harmless.
    seen: u8,
}

/// uids are random (v4 UUIDs, or SipHash of an odd uid): mixing them with a
/// per-tracker random seed is enough, and much cheaper than SipHash.
#[derive(Clone)]
struct UidHash(u64);

impl Default for UidHash {
    fn default() -> Self {
        use std::hash::BuildHasher;
        UidHash(std::collections::hash_map::RandomState::new().hash_one(0u8) | 1)
    }
}

impl std::hash::BuildHasher for UidHash {
    type Hasher = UidHasher;
    fn build_hasher(&self) -> UidHasher {
        UidHasher(self.0)
    }
}

struct UidHasher(u64);

impl Hasher for UidHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(23) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Object names packed in fixed chunks; a name of over 255 bytes (no
/// Kubernetes name is) is kept on its own.
#[derive(Default)]
struct Names {
    chunks: Vec<Box<[u8]>>,
    /// Bytes used in the last chunk.
    used: usize,
    /// Bytes of names still referenced, and all bytes written.
    live: usize,
    written: usize,
    long: HashMap<u32, Box<str>>,
    /// Long names are numbered down from u32::MAX (chunk offsets count up).
    long_taken: u32,
}

const CHUNK: usize = 64 << 10;
const LONG: u8 = 0;

impl Names {
    /// Stores a name; returns where and how long (`LONG` for a long name).
    fn add(&mut self, name: &str) -> (u32, u8) {
        let b = name.as_bytes();
        if b.is_empty() || b.len() > 255 {
            self.long_taken += 1;
            let at = u32::MAX - self.long_taken;
            self.long.insert(at, Box::from(name));
            return (at, LONG);
        }
        if self.chunks.is_empty() || self.used + b.len() > CHUNK {
            if !self.chunks.is_empty() {
                // The old chunk's unused tail is lost space, like a hole.
                self.written += CHUNK - self.used;
            }
            self.chunks.push(vec![0; CHUNK].into_boxed_slice());
            self.used = 0;
        }
        let chunk = self.chunks.len() - 1;
        self.chunks[chunk][self.used..self.used + b.len()].copy_from_slice(b);
        let at = (chunk * CHUNK + self.used) as u32;
        self.used += b.len();
        self.live += b.len();
        self.written += b.len();
        (at, b.len() as u8)
    }

    fn get(&self, at: u32, len: u8) -> &str {
        if len == LONG {
            return self.long.get(&at).map_or("", |s| s);
        }
        let (c, o) = (at as usize / CHUNK, at as usize % CHUNK);
        std::str::from_utf8(&self.chunks[c][o..o + len as usize]).unwrap_or("")
    }

    fn release(&mut self, at: u32, len: u8) {
        if len == LONG {
            self.long.remove(&at);
        } else {
            self.live -= len as usize;
        }
    }

    /// More than a sixth of the chunks' bytes are holes.
    fn wasteful(&self) -> bool {
        self.written > 4 * CHUNK && self.live * 6 < self.written * 5
    }
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
    objects: HashMap<Key, Tracked, UidHash>,
    names: Names,
    /// uids that are not canonical UUIDs, by their hashed key (real servers
    /// never produce them; kept so that such a uid still round-trips).
    odd_uids: HashMap<Key, Box<str>>,
    namespaces: Vec<Arc<str>>,
    namespace_ids: HashMap<Arc<str>, u16>,
    ns_overflow: HashMap<Key, Arc<str>>,
    generation: u8,
    in_sync: bool,
    /// Objects deleted while a sync is in progress, with the deletion's
    /// resourceVersion: a relist's snapshot, and its live events up to the
    /// deletion, may still hold them and must not bring them back. Emptied
    /// once the live stream is past the newest of them.
    tombstones: HashMap<Key, u64>,
    /// The newest delete a tombstone remembers: once the live stream is past
    /// it, no stale event can come any more and the tombstones go.
    tombstones_below: u64,
    /// The resourceVersion of the last completed full state: an object it did
    /// not hold cannot show up with an older or equal version (such an event
    /// comes from a stream the snapshot superseded, during a relist swap).
    floor: u64,
    /// The stream whose live events count (see [`Tracker::owner`]).
    owner: u64,
    /// The stream delivering a full state now, 0 for none: one at a time.
    syncer: u64,
    /// How to take back the last delivered verdict, should its entry not be
    /// sent after all (the stream was stopped while the send waited).
    last: Option<Undo>,
}

enum Undo {
    Added(Key),
    Changed {
        key: Key,
        resource_version: u64,
        seen: u8,
    },
    Removed {
        key: Key,
        tracked: Tracked,
        tombstoned: bool,
    },
}

impl Tracker {
    /// The stream whose live events are delivered. A relist's replacement
    /// takes over when its snapshot is complete: from then on it delivers
    /// every change after the snapshot, in order, and the stream it replaces
    /// (still reading, about to be stopped) could only repeat them, or bring
    /// back an object already deleted.
    pub(crate) fn owner(&self) -> u64 {
        self.owner
    }

    /// Makes `stream` the one whose live events are delivered.
    pub(crate) fn set_owner(&mut self, stream: u64) {
        self.owner = stream;
    }

    /// Lets `stream` deliver a full state, unless another stream is (a relist
    /// racing a re-sync): only one full state at a time can be reconciled.
    pub(crate) fn claim_sync(&mut self, stream: u64) -> bool {
        if self.syncer != 0 && self.syncer != stream {
            return false;
        }
        self.syncer = stream;
        self.begin_sync();
        true
    }

    /// `stream` ends without completing its full state.
    pub(crate) fn release_sync(&mut self, stream: u64) {
        if self.syncer == stream {
            self.syncer = 0;
            self.in_sync = false;
        }
    }

    /// Starts delivering a full state (first sync or re-sync).
    pub(crate) fn begin_sync(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        self.in_sync = true;
    }

    /// Judges one event and records it if it is delivered. `initial`: the
    /// event is part of a full state (watch-list initial events, LIST items).
    pub(crate) fn observe(&mut self, kind: EventType, meta: &ObjectMeta, initial: bool) -> Verdict {
        if let Some(Undo::Removed { key, tracked, .. }) = self.last.take() {
            // The delete was sent: its name and odd uid are no longer needed.
            self.names.release(tracked.name_at, tracked.name_len);
            if !self.objects.contains_key(&key) {
                self.odd_uids.remove(&key);
                self.ns_overflow.remove(&key);
            }
        }
        self.compact_names();
        let key = self.key(&meta.uid);
        let rv = meta.resource_version;
        let generation = self.generation;
        let in_sync = initial && self.in_sync;
        if !initial && !self.in_sync && rv > self.tombstones_below {
            // The live stream (the owner, after the sync) has passed every
            // delete a tombstone remembers.
            self.tombstones.clear();
            self.tombstones_below = 0;
        }
        if self.tombstones.get(&key).is_some_and(|&gone| rv <= gone) {
            return Verdict::Stale;
        }
        match (kind, self.objects.entry(key)) {
            (EventType::Deleted, MapEntry::Occupied(o)) => {
                if rv < o.get().resource_version {
                    return Verdict::Stale;
                }
                let tracked = o.remove();
                let tombstoned = self.in_sync && self.tombstones.insert(key, rv).is_none();
                if tombstoned {
                    self.tombstones_below = self.tombstones_below.max(rv);
                }
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
                    Some(ns) => intern(&mut self.namespaces, &mut self.namespace_ids, ns)
                        .unwrap_or_else(|| {
                            self.ns_overflow.insert(key, Arc::from(ns.as_ref()));
                            NS_OVERFLOW
                        }),
                    None => NO_NAMESPACE,
                };
                let (name_at, name_len) = self.names.add(&meta.name);
                v.insert(Tracked {
                    resource_version: rv,
                    name_at,
                    name_len,
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
                if let Some(t) = self.objects.remove(&key) {
                    self.names.release(t.name_at, t.name_len);
                }
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
        if let Some(Undo::Removed { tracked, .. }) = self.last.take() {
            self.names.release(tracked.name_at, tracked.name_len);
        }
        self.in_sync = false;
        self.syncer = 0;
        self.floor = self.floor.max(snapshot_rv);
        let generation = self.generation;
        let gone: Vec<Key> = self
            .objects
            .iter()
            .filter(|(_, t)| t.seen != generation && t.resource_version <= snapshot_rv)
            .map(|(k, _)| *k)
            .collect();
        let mut out = Vec::with_capacity(gone.len());
        for key in gone {
            let t = self.objects.remove(&key).expect("key was just listed");
            let name = Box::from(self.names.get(t.name_at, t.name_len));
            self.names.release(t.name_at, t.name_len);
            out.push(Vanished {
                namespace: self.namespace(key, t.namespace),
                name,
                uid: self
                    .odd_uids
                    .remove(&key)
                    .map(String::from)
                    .unwrap_or_else(|| format_uuid(key)),
                resource_version: t.resource_version,
            });
        }
        self.compact_names();
        out
    }

    /// Puts back an object `end_sync` returned whose Delete was not sent.
    pub(crate) fn restore(&mut self, v: Vanished) {
        let key = self.key(&v.uid);
        let namespace = match &v.namespace {
            Some(ns) => {
                intern(&mut self.namespaces, &mut self.namespace_ids, ns).unwrap_or_else(|| {
                    self.ns_overflow.insert(key, ns.clone());
                    NS_OVERFLOW
                })
            }
            None => NO_NAMESPACE,
        };
        let (name_at, name_len) = self.names.add(&v.name);
        let seen = self.generation.wrapping_sub(1);
        self.objects.insert(
            key,
            Tracked {
                resource_version: v.resource_version,
                name_at,
                name_len,
                namespace,
                seen,
            },
        );
    }

    /// Rewrites the name chunks without holes, when holes waste enough, and
    /// the namespace table without namespaces no object is in any more.
    fn compact_names(&mut self) {
        if !self.names.wasteful() {
            return;
        }
        let mut names = Names::default();
        let mut namespaces = Vec::new();
        let mut namespace_ids = HashMap::new();
        for (key, t) in self.objects.iter_mut() {
            let (at, len) = names.add(self.names.get(t.name_at, t.name_len));
            t.name_at = at;
            t.name_len = len;
            let ns = match t.namespace {
                NO_NAMESPACE => continue,
                NS_OVERFLOW => self.ns_overflow.get(key).cloned(),
                id => Some(self.namespaces[id as usize].clone()),
            };
            if let Some(ns) = ns {
                if let Some(id) = intern(&mut namespaces, &mut namespace_ids, &ns) {
                    t.namespace = id;
                    self.ns_overflow.remove(key);
                } else {
                    t.namespace = NS_OVERFLOW;
                    self.ns_overflow.insert(*key, ns);
                }
            }
        }
        self.names = names;
        self.namespaces = namespaces;
        self.namespace_ids = namespace_ids;
    }

    /// The shared copy of a namespace name, for entries.
    pub(crate) fn namespace_arc(&mut self, ns: Option<&str>) -> Option<Arc<str>> {
        let ns = ns?;
        Some(
            match intern(&mut self.namespaces, &mut self.namespace_ids, ns) {
                Some(id) => self.namespaces[id as usize].clone(),
                None => Arc::from(ns),
            },
        )
    }

    /// Number of objects tracked.
    pub(crate) fn len(&self) -> usize {
        self.objects.len()
    }

    fn namespace(&mut self, key: Key, id: u16) -> Option<Arc<str>> {
        match id {
            NO_NAMESPACE => None,
            NS_OVERFLOW => self.ns_overflow.remove(&key),
            _ => Some(self.namespaces[id as usize].clone()),
        }
    }

    fn key(&mut self, uid: &str) -> Key {
        if let Some(k) = parse_uuid(uid) {
            return ((k >> 64) as u64, k as u64);
        }
        let mut h1 = DefaultHasher::new();
        (1u8, uid).hash(&mut h1);
        let mut h2 = DefaultHasher::new();
        (2u8, uid).hash(&mut h2);
        // The top bits mark hashed keys so they never equal a parsed UUID's
        // canonical form in practice; the map lookup is the real guard.
        let k = (h1.finish(), h2.finish());
        self.odd_uids.entry(k).or_insert_with(|| Box::from(uid));
        k
    }
}

/// The id of a namespace, `None` when the table is full.
fn intern(list: &mut Vec<Arc<str>>, ids: &mut HashMap<Arc<str>, u16>, ns: &str) -> Option<u16> {
    if let Some(&id) = ids.get(ns) {
        return Some(id);
    }
    let id = u16::try_from(list.len())
        .ok()
        .filter(|&id| id < NS_OVERFLOW)?;
    let arc: Arc<str> = Arc::from(ns);
    list.push(arc.clone());
    ids.insert(arc, id);
    Some(id)
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

fn format_uuid((hi, lo): Key) -> String {
    let h = format!("{hi:016x}{lo:016x}");
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
        let k = parse_uuid(U1).unwrap();
        assert_eq!(format_uuid(((k >> 64) as u64, k as u64)), U1);
        assert_eq!(parse_uuid("6F824E9E-B6CA-474E-ABFE-1335F933EEB9"), None);
        assert_eq!(parse_uuid("not-a-uuid"), None);
    }

    #[test]
    fn names_survive_compaction_and_long_names_work() {
        use EventType::*;
        let mut t = Tracker::default();
        t.begin_sync();
        let uid = |i: u32| format!("00000000-0000-0000-0000-{i:012}");
        let long = "x".repeat(300);
        for i in 0..20_000u32 {
            let name = if i % 1000 == 7 {
                long.clone()
            } else {
                format!("object-number-{i}")
            };
            t.observe(Added, &meta("ns", &name, &uid(i), u64::from(i) + 1), true);
        }
        t.end_sync(100_000);
        for i in (0..20_000u32).filter(|i| i % 3 != 0) {
            t.observe(Deleted, &meta("ns", "", &uid(i), 200_000), false);
        }
        // Compaction ran (the holes were most of the chunks) and kept every name.
        t.begin_sync();
        let mut gone = t.end_sync(300_000);
        gone.sort_by_key(|v| v.resource_version);
        assert_eq!(gone.len(), 6667);
        for v in &gone {
            let i = (v.resource_version - 1) as u32;
            let want = if i % 1000 == 7 {
                long.clone()
            } else {
                format!("object-number-{i}")
            };
            assert_eq!(&*v.name, want.as_str());
            assert_eq!(v.uid, uid(i));
        }
        assert!(
            t.names.written < 4 * CHUNK,
            "names were compacted: {}",
            t.names.written
        );
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
