//! Per-resource dedupe state: what was delivered, kept small.
//!
//! Objects are keyed by namespace and name, as a consumer's store is: when a
//! name that holds one uid shows up with another, the object was deleted and
//! created again, and the consumer gets the old one's Delete before the new
//! one's Add — on every path (live, re-sync, relist, LIST fallback).
//!
//! Per object, never the object itself: a slot and a record of the compact
//! store (`delivery::store`), whose chunks are compacted as deletes leave
//! holes; this file holds the verdicts. tests/memory.rs measures the total
//! per object.

use std::cmp::Ordering;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use hashbrown::HashTable;

use crate::delivery::store::{Records, Slot, Uid};
use crate::entry::Change;
use crate::resource_version::{Rv, RvKey};
use crate::wire::decode::{EventType, ObjectMeta};

/// `Slot::namespace` of a cluster-scoped object.
const NO_NAMESPACE: u16 = u16::MAX;
/// `Slot::namespace` when the table is full (over 65,000 live namespaces;
/// Kubernetes supports 10,000): the namespace is in the record.
const NS_IN_RECORD: u16 = u16::MAX - 1;

/// At most this many deletes are remembered during one sync (see
/// `Table::tombstones`). Past it, a relist's snapshot may briefly bring
/// back an object deleted meanwhile, until the relist's own live events
/// (which include the delete) come.
const MAX_TOMBSTONES: usize = 100_000;

/// What to do with an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Deliver it as this change.
    Deliver(Change),
    /// Older than what was delivered, or a delete of an unknown object: drop.
    Stale,
    /// The version already delivered, seen again on a live watch: drop.
    Duplicate,
    /// Another object (another uid) held this name and is gone: it has been
    /// forgotten; deliver its Delete, then judge the event again.
    Displaced(Vanished),
}

/// An object that is gone without the server saying so: missing from a
/// completed re-sync, or its name taken by a newer object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Vanished {
    pub namespace: Option<Arc<str>>,
    pub name: Box<str>,
    pub uid: String,
    pub resource_version: Rv,
}

/// What ending a full state found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SyncEnd {
    /// The objects it lacks, forgotten now: each gets an inferred Delete.
    pub gone: Vec<Vanished>,
    /// Its resourceVersion is below the last full state's.
    pub went_back: bool,
    /// An overlapped full state (a relist's) older than what the primary
    /// had delivered when it was asked for: the server's history went back
    /// (an etcd restore), so judging its objects by resourceVersion against
    /// the primary's dropped the server's own. Nothing was changed: the
    /// full state is abandoned, and the primary's own (authoritative) one
    /// is to follow.
    pub behind: bool,
}

/// Dedupe state of one resource stream.
pub(crate) struct Table {
    objects: HashTable<Slot>,
    hasher: RandomState,
    records: Records,
    namespaces: Vec<Arc<str>>,
    namespace_ids: HashMap<Arc<str>, u16>,
    in_sync: bool,
    /// The full state being read overlaps another stream's live events (a
    /// relist): its objects are judged by resourceVersion against what those
    /// delivered. Otherwise (a first sync, a re-sync) it is authoritative:
    /// the server's object replaces the one held whatever the order of
    /// their resourceVersions, as after an etcd restore they may go back.
    ///
    /// When overlapped, the primary's resume point as the full state was
    /// asked for: its snapshot, a consistent read sent after, is never older
    /// unless the server's history went back.
    overlapped: Option<RvKey>,
    /// Objects deleted while a sync is in progress, with the deletion's
    /// resourceVersion: a relist's snapshot, and its live events up to the
    /// deletion, may still hold them and must not bring them back. Emptied
    /// once the live stream is past the newest of them.
    tombstones: HashMap<u128, RvKey>,
    /// The newest delete a tombstone remembers: once the live stream is past
    /// it, no stale event can come any more and the tombstones go.
    tombstones_below: RvKey,
    /// The resourceVersion of the last completed full state: an object it did
    /// not hold cannot show up with an older or equal version (such an event
    /// comes from a stream the snapshot superseded, during a relist swap).
    floor: RvKey,
    /// How to take back the last delivered verdict, should its entry not be
    /// sent after all (the stream was stopped while the send waited).
    last: Option<Undo>,
}

enum Undo {
    Added {
        hash: u64,
        at: u32,
    },
    Changed {
        hash: u64,
        at: u32,
        /// The record before the change: an opaque resourceVersion's text
        /// lives in the record, which an update writes anew.
        old_at: u32,
        rv: RvKey,
        seen: bool,
        sent: bool,
    },
    Removed {
        hash: u64,
        slot: Slot,
        tombstoned: Option<u128>,
    },
}

impl Default for Table {
    fn default() -> Self {
        Table {
            objects: HashTable::new(),
            hasher: RandomState::new(),
            records: Records::default(),
            namespaces: Vec::new(),
            namespace_ids: HashMap::new(),
            in_sync: false,
            overlapped: None,
            tombstones: HashMap::new(),
            tombstones_below: RvKey::default(),
            floor: RvKey::default(),
            last: None,
        }
    }
}

/// The hash of an object's place: its namespace and name.
fn place_hash(hasher: &RandomState, namespace: Option<&str>, name: &str) -> u64 {
    let mut h = hasher.build_hasher();
    namespace.unwrap_or("").hash(&mut h);
    name.hash(&mut h);
    h.finish()
}

impl Table {
    /// Ends an attempt at a full state that will not complete (its stream
    /// ended or gave it up): a later attempt starts afresh.
    pub(crate) fn abandon_sync(&mut self) {
        self.in_sync = false;
    }

    /// Whether an attempt at a full state is open.
    pub(crate) fn in_sync(&self) -> bool {
        self.in_sync
    }

    /// Starts an attempt at a full state: nothing is seen in it yet; in a
    /// `fresh` one, nothing delivered either. One pass over the objects, as
    /// the attempt itself is.
    /// `overlapped`: another stream's live events go on meanwhile (a
    /// relist), that stream being at this resume point now.
    pub(crate) fn begin_sync(&mut self, fresh: bool, overlapped: Option<&Rv>) {
        for s in self.objects.iter_mut() {
            s.seen = false;
            s.sent &= !fresh;
        }
        if fresh {
            // Tombstones guard the previous relist's swap, long over.
            self.tombstones.clear();
            self.tombstones_below = RvKey::default();
        }
        self.in_sync = true;
        self.overlapped = overlapped.map(Rv::key);
    }

    /// The id of the namespace `ns`, interning it; `None` when the table is full.
    fn namespace_id(&mut self, ns: &str) -> Option<u16> {
        if let Some(&id) = self.namespace_ids.get(ns) {
            return Some(id);
        }
        let id = u16::try_from(self.namespaces.len())
            .ok()
            .filter(|&id| id < NS_IN_RECORD)?;
        let arc: Arc<str> = Arc::from(ns);
        self.namespaces.push(arc.clone());
        self.namespace_ids.insert(arc, id);
        Some(id)
    }

    fn slot_namespace(&self, s: &Slot) -> Option<Arc<str>> {
        match s.namespace {
            NO_NAMESPACE => None,
            NS_IN_RECORD => Some(Arc::from(self.records.get(s.at).namespace)),
            id => Some(self.namespaces[id as usize].clone()),
        }
    }

    fn vanished(&self, s: &Slot) -> Vanished {
        let r = self.records.get(s.at);
        let resource_version = match s.rv.number() {
            Some(n) => Rv::from_u64(n),
            None => Rv::new(r.rv_text),
        };
        Vanished {
            namespace: self.slot_namespace(s),
            name: Box::from(r.name),
            uid: r.uid.text(),
            resource_version,
        }
    }

    /// Judges one event and records it if it is delivered. `initial`: the
    /// event is part of a full state (watch-list initial events, LIST items).
    pub(crate) fn observe(&mut self, kind: EventType, meta: &ObjectMeta, initial: bool) -> Verdict {
        if let Some(Undo::Removed { slot, .. }) = self.last.take() {
            // The delete was sent: its record is no longer needed.
            self.records.release(slot.at);
        }
        self.compact();
        let rv = meta.resource_version.key();
        let in_sync = initial && self.in_sync;
        if !initial
            && !self.in_sync
            && !self.tombstones.is_empty()
            && rv.order(self.tombstones_below) == Some(Ordering::Greater)
        {
            // The live stream (the owner, after the sync) has passed every
            // delete a tombstone remembers. (Opaque versions have no order:
            // their tombstones stay until the next full state begins.)
            self.tombstones.clear();
            self.tombstones_below = RvKey::default();
        }
        let uid = Uid::of(&meta.uid);
        let uid_key = uid.key();
        if let Some(&gone) = self.tombstones.get(&uid_key) {
            // A uid is never used again: a snapshot read before its deletion,
            // or a late event, cannot bring it back. Only a newer version
            // (integers) can, which no server sends.
            if in_sync || rv.order(gone) != Some(Ordering::Greater) {
                return Verdict::Stale;
            }
        }
        // Inside an authoritative full state, the server's object is the truth.
        let truth = in_sync && self.overlapped.is_none();
        let ns = meta.namespace.as_deref();
        let ns_id = match ns {
            Some(n) => self.namespace_id(n).unwrap_or(NS_IN_RECORD),
            None => NO_NAMESPACE,
        };
        let hash = place_hash(&self.hasher, ns, &meta.name);
        let records = &self.records;
        // Interned namespaces are equal when their ids are.
        let same_place = |s: &Slot| {
            s.namespace == ns_id && {
                let r = records.get(s.at);
                r.name == meta.name && (ns_id != NS_IN_RECORD || Some(r.namespace) == ns)
            }
        };
        let found = self.objects.find(hash, same_place).copied();
        let same_uid = found.is_some_and(|s| self.records.get(s.at).uid == uid);
        match (kind, found) {
            (EventType::Deleted, Some(s)) if same_uid => {
                if rv.order(s.rv) == Some(Ordering::Less) && !truth {
                    return Verdict::Stale;
                }
                self.remove(hash, s);
                let tombstoned =
                    (self.in_sync && self.tombstones.len() < MAX_TOMBSTONES).then(|| {
                        self.tombstones.insert(uid_key, rv);
                        if rv.order(self.tombstones_below) == Some(Ordering::Greater)
                            || self.tombstones_below == RvKey::default()
                        {
                            self.tombstones_below = rv;
                        }
                        uid_key
                    });
                self.last = Some(Undo::Removed {
                    hash,
                    slot: s,
                    tombstoned,
                });
                Verdict::Deliver(Change::Delete)
            }
            (_, Some(s)) if !same_uid => {
                // Another object holds the name. An event newer than it says
                // that object is gone; an older one is a late event about an
                // earlier object of this name.
                if matches!(rv.order(s.rv), Some(Ordering::Less | Ordering::Equal)) && !truth {
                    return Verdict::Stale;
                }
                let v = self.vanished(&s);
                self.remove(hash, s);
                self.last = Some(Undo::Removed {
                    hash,
                    slot: s,
                    tombstoned: None,
                });
                Verdict::Displaced(v)
            }
            (EventType::Deleted, _) => Verdict::Stale,
            (_, None) => {
                if !initial
                    && matches!(rv.order(self.floor), Some(Ordering::Less | Ordering::Equal))
                {
                    return Verdict::Stale;
                }
                let ns_text = if ns_id == NS_IN_RECORD {
                    ns.unwrap_or("")
                } else {
                    ""
                };
                let at = self
                    .records
                    .put(&uid, &meta.name, &meta.resource_version, ns_text);
                let slot = Slot {
                    rv,
                    at,
                    namespace: ns_id,
                    // A live event does not vouch for the snapshot being read.
                    seen: in_sync,
                    sent: in_sync,
                };
                self.insert(hash, slot);
                self.last = Some(Undo::Added { hash, at });
                Verdict::Deliver(Change::Add)
            }
            (_, Some(s)) => {
                let verdict = match rv.order(s.rv) {
                    Some(Ordering::Less) if !truth => Verdict::Stale,
                    Some(Ordering::Equal) if in_sync && !s.sent => {
                        Verdict::Deliver(Change::Snapshot)
                    }
                    Some(Ordering::Equal) => Verdict::Duplicate,
                    // Newer, or (opaque versions) different: a change.
                    _ => Verdict::Deliver(Change::Update),
                };
                let mut new = s;
                if in_sync {
                    new.seen = true;
                }
                new.sent |= in_sync && matches!(verdict, Verdict::Deliver(_));
                if verdict == Verdict::Deliver(Change::Update) {
                    new.rv = rv;
                    if rv.number().is_none() {
                        // The opaque text lives in the record: write it anew.
                        let ns_text = self.records.get(s.at).namespace.to_string();
                        let record =
                            Records::encode(&uid, &meta.name, &meta.resource_version, &ns_text);
                        self.records.release(s.at);
                        new.at = self.records.add(&record);
                    }
                }
                if matches!(verdict, Verdict::Deliver(_)) {
                    self.last = Some(Undo::Changed {
                        hash,
                        at: new.at,
                        old_at: s.at,
                        rv: s.rv,
                        seen: s.seen,
                        sent: s.sent,
                    });
                }
                if let Some(slot) = self.objects.find_mut(hash, |x| x.at == s.at) {
                    *slot = new;
                }
                verdict
            }
        }
    }

    fn insert(&mut self, hash: u64, slot: Slot) {
        let (records, namespaces, hasher) = (&self.records, &self.namespaces, &self.hasher);
        self.objects.insert_unique(hash, slot, |s| {
            let r = records.get(s.at);
            let ns = match s.namespace {
                NO_NAMESPACE => None,
                NS_IN_RECORD => Some(r.namespace),
                id => Some(&*namespaces[id as usize]),
            };
            place_hash(hasher, ns, r.name)
        });
    }

    /// Takes a slot out of the table; its record stays until released.
    fn remove(&mut self, hash: u64, slot: Slot) {
        if let Ok(o) = self.objects.find_entry(hash, |s| s.at == slot.at) {
            o.remove();
        }
    }

    /// The version delivered last of the object the last verdict removed
    /// (the resourceVersion of a Delete tattler makes up itself).
    pub(crate) fn removed_version(&self) -> Option<Rv> {
        let Some(Undo::Removed { slot, .. }) = &self.last else {
            return None;
        };
        Some(match slot.rv.number() {
            Some(n) => Rv::from_u64(n),
            None => Rv::new(self.records.get(slot.at).rv_text),
        })
    }

    /// Takes back the last delivered verdict of [`observe`](Self::observe):
    /// its entry was not sent, so later events must be judged as if the
    /// event had never come.
    pub(crate) fn undo_last(&mut self) {
        match self.last.take() {
            Some(Undo::Added { hash, at }) => {
                if let Ok(o) = self.objects.find_entry(hash, |s| s.at == at) {
                    o.remove();
                    self.records.release(at);
                }
            }
            Some(Undo::Changed {
                hash,
                at,
                old_at,
                rv,
                seen,
                sent,
            }) => {
                let mut rewritten = false;
                if let Some(s) = self.objects.find_mut(hash, |s| s.at == at) {
                    s.rv = rv;
                    s.seen = seen;
                    s.sent = sent;
                    if old_at != at {
                        // Back to the record with the old text.
                        s.at = old_at;
                        rewritten = true;
                    }
                }
                if rewritten {
                    self.records.revive(old_at);
                    self.records.release(at);
                }
            }
            Some(Undo::Removed {
                hash,
                slot,
                tombstoned,
            }) => {
                self.insert(hash, slot);
                if let Some(k) = tombstoned {
                    self.tombstones.remove(&k);
                }
            }
            None => {}
        }
    }

    /// Every live event up to `rv` was delivered already (by the stream a
    /// relist's replacement took over from): an object not held cannot show
    /// up with an older or equal version. Only raises the floor.
    pub(crate) fn raise_floor(&mut self, rv: &Rv) {
        let rv = rv.key();
        if rv.order(self.floor) == Some(Ordering::Greater) {
            self.floor = rv;
        }
    }

    /// Ends a full state taken at `snapshot_rv`: every object not seen in it
    /// is gone — unless a live event newer than the snapshot vouched for it.
    /// Returns them (and forgets them), in no particular order.
    ///
    /// An authoritative full state (not overlapped by another stream's live
    /// events) is the truth at its resourceVersion: every object it lacks is
    /// gone, and its resourceVersion is the new floor even when lower than
    /// the old one (`went_back`: an etcd restore, a rebuilt cluster).
    ///
    /// An overlapped full state older than the primary was when it began is
    /// abandoned (see [`SyncEnd::behind`]): nothing is forgotten.
    pub(crate) fn end_sync(&mut self, snapshot_rv: &Rv) -> SyncEnd {
        if let Some(Undo::Removed { slot, .. }) = self.last.take() {
            self.records.release(slot.at);
        }
        self.in_sync = false;
        let snapshot = snapshot_rv.key();
        let base = self.overlapped.take();
        let overlapped = base.is_some();
        if base.is_some_and(|b| snapshot.order(b) == Some(Ordering::Less)) {
            return SyncEnd {
                gone: Vec::new(),
                went_back: false,
                behind: true,
            };
        }
        let went_back = snapshot.order(self.floor) == Some(Ordering::Less);
        if !went_back || !overlapped {
            self.floor = snapshot;
        }
        let gone: Vec<Slot> = self
            .objects
            .iter()
            .filter(|s| !s.seen && (!overlapped || s.rv.order(snapshot) != Some(Ordering::Greater)))
            .copied()
            .collect();
        let mut out = Vec::with_capacity(gone.len());
        for s in gone {
            let v = self.vanished(&s);
            let hash = place_hash(&self.hasher, v.namespace.as_deref(), &v.name);
            self.remove(hash, s);
            self.records.release(s.at);
            out.push(v);
        }
        self.compact();
        SyncEnd {
            gone: out,
            went_back: went_back && !overlapped,
            behind: false,
        }
    }

    /// Every object held, for a checkpoint.
    pub(crate) fn export(&self) -> Vec<crate::checkpoint::Held> {
        self.objects
            .iter()
            .map(|s| {
                let v = self.vanished(s);
                crate::checkpoint::Held {
                    namespace: v.namespace.map(|n| n.to_string()),
                    name: v.name.into(),
                    uid: v.uid,
                    resource_version: v.resource_version,
                }
            })
            .collect()
    }

    /// Takes out (and forgets) every object whose namespace `moves` says
    /// goes elsewhere: another stream of the resource holds it from now on.
    pub(crate) fn split_off(
        &mut self,
        moves: impl Fn(Option<&str>) -> bool,
    ) -> Vec<crate::checkpoint::Held> {
        if let Some(Undo::Removed { slot, .. }) = self.last.take() {
            self.records.release(slot.at);
        }
        let going: Vec<Slot> = self
            .objects
            .iter()
            .filter(|s| moves(self.slot_namespace(s).as_deref()))
            .copied()
            .collect();
        let mut out = Vec::with_capacity(going.len());
        for s in going {
            let v = self.vanished(&s);
            let hash = place_hash(&self.hasher, v.namespace.as_deref(), &v.name);
            self.remove(hash, s);
            self.records.release(s.at);
            out.push(crate::checkpoint::Held {
                namespace: v.namespace.map(|n| n.to_string()),
                name: v.name.into(),
                uid: v.uid,
                resource_version: v.resource_version,
            });
        }
        self.compact();
        out
    }

    /// Holds the objects of a checkpoint taken at `rv` (a new tracker); an
    /// object named twice is kept once.
    pub(crate) fn import(&mut self, objects: &[crate::checkpoint::Held], rv: &Rv) {
        for o in objects {
            let ns = o.namespace.as_deref();
            let hash = place_hash(&self.hasher, ns, &o.name);
            let ns_id = match ns {
                Some(n) => self.namespace_id(n).unwrap_or(NS_IN_RECORD),
                None => NO_NAMESPACE,
            };
            let records = &self.records;
            let taken = self.objects.find(hash, |s| {
                s.namespace == ns_id && {
                    let r = records.get(s.at);
                    r.name == o.name && (ns_id != NS_IN_RECORD || Some(r.namespace) == ns)
                }
            });
            if taken.is_none() {
                self.restore(Vanished {
                    namespace: ns.map(Arc::from),
                    name: Box::from(o.name.as_str()),
                    uid: o.uid.clone(),
                    resource_version: o.resource_version.clone(),
                });
            }
        }
        self.floor = rv.key();
    }

    /// Puts back an object `end_sync` returned whose Delete was not sent.
    pub(crate) fn restore(&mut self, v: Vanished) {
        let ns = v.namespace.as_deref();
        let ns_id = match ns {
            Some(n) => self.namespace_id(n).unwrap_or(NS_IN_RECORD),
            None => NO_NAMESPACE,
        };
        let ns_text = if ns_id == NS_IN_RECORD {
            ns.unwrap_or("")
        } else {
            ""
        };
        let uid = Uid::of(&v.uid);
        let record = Records::encode(&uid, &v.name, &v.resource_version, ns_text);
        let at = self.records.add(&record);
        let hash = place_hash(&self.hasher, ns, &v.name);
        self.insert(
            hash,
            Slot {
                rv: v.resource_version.key(),
                at,
                namespace: ns_id,
                seen: false,
                sent: false,
            },
        );
    }

    /// Rewrites the records without holes when holes waste enough, and the
    /// namespace table without namespaces no object is in any more. Hashes
    /// are of names, not of ids or places: the table is not rehashed.
    fn compact(&mut self) {
        if !self.records.wasteful() {
            return;
        }
        // Callers have settled the last undo: records may move.
        debug_assert!(self.last.is_none());
        let mut records = Records::default();
        let mut namespaces: Vec<Arc<str>> = Vec::new();
        let mut namespace_ids: HashMap<Arc<str>, u16> = HashMap::new();
        for s in self.objects.iter_mut() {
            let r = self.records.get(s.at);
            let ns: Option<&str> = match s.namespace {
                NO_NAMESPACE => None,
                NS_IN_RECORD => Some(r.namespace),
                id => Some(&self.namespaces[id as usize]),
            };
            let id = ns.map(|n| match namespace_ids.get(n) {
                Some(&id) => id,
                None => match u16::try_from(namespaces.len()) {
                    Ok(id) if id < NS_IN_RECORD => {
                        let arc: Arc<str> = Arc::from(n);
                        namespaces.push(arc.clone());
                        namespace_ids.insert(arc, id);
                        id
                    }
                    _ => NS_IN_RECORD,
                },
            });
            let rv = match s.rv.number() {
                Some(n) => Rv::from_u64(n),
                None => Rv::new(r.rv_text),
            };
            let ns_text = if id == Some(NS_IN_RECORD) {
                ns.unwrap_or("")
            } else {
                ""
            };
            let record = Records::encode(&r.uid, r.name, &rv, ns_text);
            s.at = records.add(&record);
            s.namespace = id.unwrap_or(NO_NAMESPACE);
        }
        self.records = records;
        self.namespaces = namespaces;
        self.namespace_ids = namespace_ids;
    }

    /// The shared copy of a namespace name, for entries.
    pub(crate) fn namespace_arc(&mut self, ns: Option<&str>) -> Option<Arc<str>> {
        let ns = ns?;
        Some(match self.namespace_id(ns) {
            Some(id) => self.namespaces[id as usize].clone(),
            None => Arc::from(ns),
        })
    }

    /// Number of objects tracked.
    pub(crate) fn len(&self) -> usize {
        self.objects.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::store::{format_uuid, parse_uuid};
    use std::borrow::Cow;
    use Change::*;
    use EventType::*;

    fn meta(ns: &str, name: &str, uid: &str, rv: &str) -> ObjectMeta<'static> {
        ObjectMeta {
            kind: None,
            namespace: (!ns.is_empty()).then(|| Cow::Owned(ns.to_string())),
            name: Cow::Owned(name.to_string()),
            uid: Cow::Owned(uid.to_string()),
            resource_version: Rv::new(rv),
        }
    }

    const U1: &str = "6f824e9e-b6ca-474e-abfe-1335f933eeb9";
    const U2: &str = "00000000-0000-0000-0000-000000000002";
    const U3: &str = "00000000-0000-0000-0000-000000000003";
    const U4: &str = "00000000-0000-0000-0000-000000000004";
    const U5: &str = "00000000-0000-0000-0000-000000000005";
    const U6: &str = "00000000-0000-0000-0000-000000000006";

    fn vanished(ns: &str, name: &str, uid: &str, rv: &str) -> Vanished {
        Vanished {
            namespace: (!ns.is_empty()).then(|| Arc::from(ns)),
            name: Box::from(name),
            uid: uid.to_string(),
            resource_version: Rv::new(rv),
        }
    }

    /// A tracker with the first sync of `objects` done at `rv`.
    fn synced(objects: &[(&str, &str, &str, &str)], rv: &str) -> Table {
        let mut t = Table::default();
        t.begin_sync(true, None);
        for (ns, name, uid, v) in objects {
            assert_eq!(
                t.observe(Added, &meta(ns, name, uid, v), true),
                Verdict::Deliver(Add)
            );
        }
        assert!(t.end_sync(&Rv::new(rv)).gone.is_empty());
        t
    }

    #[test]
    fn uuids_round_trip() {
        assert_eq!(format_uuid(parse_uuid(U1).unwrap()), U1);
        assert_eq!(parse_uuid("6F824E9E-B6CA-474E-ABFE-1335F933EEB9"), None);
        assert_eq!(parse_uuid("not-a-uuid"), None);
    }

    #[test]
    fn first_sync_then_live_changes() {
        let mut t = synced(&[("a", "p1", U1, "10"), ("a", "p2", "odd uid", "5")], "100");
        assert_eq!(
            t.observe(Modified, &meta("a", "p1", U1, "10"), false),
            Verdict::Duplicate
        );
        assert_eq!(
            t.observe(Modified, &meta("a", "p1", U1, "9"), false),
            Verdict::Stale
        );
        assert_eq!(
            t.observe(Modified, &meta("a", "p1", U1, "11"), false),
            Verdict::Deliver(Update)
        );
        assert_eq!(
            t.observe(Deleted, &meta("a", "p1", U1, "12"), false),
            Verdict::Deliver(Delete)
        );
        assert_eq!(
            t.observe(Deleted, &meta("a", "p1", U1, "13"), false),
            Verdict::Stale
        );
        // A verdict whose entry was never sent is taken back.
        assert_eq!(
            t.observe(Modified, &meta("a", "p2", "odd uid", "6"), false),
            Verdict::Deliver(Update)
        );
        t.undo_last();
        assert_eq!(
            t.observe(Modified, &meta("a", "p2", "odd uid", "6"), false),
            Verdict::Deliver(Update)
        );
        assert_eq!(
            t.observe(Deleted, &meta("a", "p2", "odd uid", "7"), false),
            Verdict::Deliver(Delete)
        );
        t.undo_last();
        assert_eq!(t.len(), 1);
        assert_eq!(
            t.observe(Deleted, &meta("a", "p2", "odd uid", "7"), false),
            Verdict::Deliver(Delete)
        );
        // Not held, and no newer than the last full state: a late event.
        assert_eq!(
            t.observe(Added, &meta("b", "n", U3, "20"), false),
            Verdict::Stale
        );
        assert_eq!(
            t.observe(Added, &meta("b", "n", U3, "120"), false),
            Verdict::Deliver(Add)
        );
        t.undo_last();
        assert_eq!(t.len(), 0);
        // Same name in another namespace, or cluster-scoped: another object.
        assert_eq!(
            t.observe(Added, &meta("a", "x", U1, "130"), false),
            Verdict::Deliver(Add)
        );
        assert_eq!(
            t.observe(Added, &meta("b", "x", U2, "131"), false),
            Verdict::Deliver(Add)
        );
        assert_eq!(
            t.observe(Added, &meta("", "x", U3, "132"), false),
            Verdict::Deliver(Add)
        );
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn a_name_taken_by_another_uid_deletes_the_old_object_first() {
        // Live: p1 deleted and created again while the stream missed the delete.
        let mut t = synced(&[("a", "p1", U1, "10")], "10");
        assert_eq!(
            t.observe(Added, &meta("a", "p1", U2, "15"), false),
            Verdict::Displaced(vanished("a", "p1", U1, "10"))
        );
        assert_eq!(
            t.observe(Added, &meta("a", "p1", U2, "15"), false),
            Verdict::Deliver(Add)
        );
        // A late event about the old object is stale, not a second swap.
        assert_eq!(
            t.observe(Modified, &meta("a", "p1", U1, "12"), false),
            Verdict::Stale
        );
        assert_eq!(
            t.observe(Deleted, &meta("a", "p1", U1, "13"), false),
            Verdict::Stale
        );
        // In a re-sync: the old one goes before the new one comes, and is not
        // deleted again at the end.
        t.begin_sync(true, None);
        assert_eq!(
            t.observe(Added, &meta("a", "p1", U3, "40"), true),
            Verdict::Displaced(vanished("a", "p1", U2, "15"))
        );
        t.undo_last();
        assert_eq!(
            t.observe(Added, &meta("a", "p1", U3, "40"), true),
            Verdict::Displaced(vanished("a", "p1", U2, "15")),
            "a Delete not sent is taken back"
        );
        assert_eq!(
            t.observe(Added, &meta("a", "p1", U3, "40"), true),
            Verdict::Deliver(Add)
        );
        assert_eq!(t.end_sync(&Rv::new("40")).gone, vec![]);
        assert_eq!(t.len(), 1);
        // A DELETED of a newer object of the name: the one held is gone too.
        assert_eq!(
            t.observe(Deleted, &meta("a", "p1", U1, "50"), false),
            Verdict::Displaced(vanished("a", "p1", U3, "40"))
        );
        assert_eq!(
            t.observe(Deleted, &meta("a", "p1", U1, "50"), false),
            Verdict::Stale
        );
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn resync_reports_snapshots_updates_and_vanished_objects() {
        let mut t = synced(
            &[
                ("a", "keep", U1, "10"),
                ("a", "gone", U2, "11"),
                ("", "odd", "odd uid", "12"),
            ],
            "100",
        );
        t.begin_sync(true, None);
        assert_eq!(
            t.observe(Added, &meta("a", "keep", U1, "10"), true),
            Verdict::Deliver(Snapshot)
        );
        assert_eq!(
            t.observe(Added, &meta("", "odd", "odd uid", "20"), true),
            Verdict::Deliver(Update)
        );
        assert_eq!(
            t.end_sync(&Rv::new("100")).gone,
            vec![vanished("a", "gone", U2, "11")]
        );
        assert_eq!(t.len(), 2);
        // Attempts at one full state interrupted any number of times lose
        // nothing, and what an attempt delivered is not sent again.
        t.begin_sync(true, None);
        assert_eq!(
            t.observe(Added, &meta("a", "keep", U1, "10"), true),
            Verdict::Deliver(Snapshot)
        );
        for _ in 0..1000 {
            t.begin_sync(false, None);
        }
        assert_eq!(
            t.observe(Added, &meta("a", "keep", U1, "10"), true),
            Verdict::Duplicate
        );
        let gone = t.end_sync(&Rv::new("100")).gone;
        assert_eq!(gone, vec![vanished("", "odd", "odd uid", "20")]);
        // Fresh syncs as many times: still nothing kept that is gone.
        for _ in 0..300 {
            t.begin_sync(true, None);
        }
        assert_eq!(
            t.end_sync(&Rv::new("100")).gone,
            vec![vanished("a", "keep", U1, "10")]
        );
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn a_relist_racing_live_events_neither_resurrects_nor_wrongly_deletes() {
        let mut t = synced(&[("a", "p1", U1, "10"), ("a", "p2", U2, "11")], "11");
        // A relist's snapshot is taken at rv 20; meanwhile the live stream
        // deletes p2 (rv 21) and adds p3 (rv 22) before the snapshot arrives.
        t.begin_sync(true, Some(&Rv::empty()));
        assert_eq!(
            t.observe(Deleted, &meta("a", "p2", U2, "21"), false),
            Verdict::Deliver(Delete)
        );
        assert_eq!(
            t.observe(Added, &meta("a", "p3", U3, "22"), false),
            Verdict::Deliver(Add)
        );
        assert_eq!(
            t.observe(Added, &meta("a", "p1", U1, "10"), true),
            Verdict::Deliver(Snapshot)
        );
        assert_eq!(
            t.observe(Added, &meta("a", "p2", U2, "11"), true),
            Verdict::Stale,
            "no resurrection"
        );
        assert_eq!(
            t.end_sync(&Rv::new("20")).gone,
            vec![],
            "p3 is newer than the snapshot: not deleted"
        );
        assert_eq!(t.len(), 2);
        // Tombstones go once the live stream is past them.
        assert_eq!(
            t.observe(Modified, &meta("a", "p1", U1, "30"), false),
            Verdict::Deliver(Update)
        );
        t.begin_sync(true, None);
        assert_eq!(
            t.observe(Added, &meta("a", "p2", U2, "31"), true),
            Verdict::Deliver(Add)
        );
    }

    #[test]
    fn a_relist_older_than_the_primary_was_is_abandoned_and_changes_nothing() {
        // Synced at 11, then live to 62; an etcd restore takes the server
        // back to 47 and a relist, begun with the primary at 62, reads it.
        let mut t = synced(&[("a", "p1", U1, "10"), ("a", "p2", U2, "11")], "11");
        assert_eq!(
            t.observe(Modified, &meta("a", "p1", U1, "62"), false),
            Verdict::Deliver(Update)
        );
        t.begin_sync(true, Some(&Rv::new("62")));
        assert_eq!(
            t.observe(Added, &meta("a", "p1", U1, "40"), true),
            Verdict::Stale,
            "judged by version, as a relist's are"
        );
        let end = t.end_sync(&Rv::new("47"));
        assert_eq!(
            end,
            SyncEnd {
                gone: vec![],
                went_back: false,
                behind: true
            }
        );
        assert_eq!(t.len(), 2, "nothing forgotten");
        // The primary's own full state then is the truth.
        t.begin_sync(true, None);
        assert_eq!(
            t.observe(Added, &meta("a", "p1", U1, "40"), true),
            Verdict::Deliver(Update)
        );
        let end = t.end_sync(&Rv::new("47"));
        assert_eq!(end.gone, vec![vanished("a", "p2", U2, "11")]);
        // A relist that is not behind the primary completes as before.
        t.begin_sync(true, Some(&Rv::new("47")));
        assert_eq!(
            t.observe(Added, &meta("a", "p1", U1, "40"), true),
            Verdict::Deliver(Snapshot)
        );
        assert!(!t.end_sync(&Rv::new("48")).behind);
    }

    #[test]
    fn a_full_state_is_the_truth_whatever_the_order_of_versions() {
        // Synced at 100; then an etcd restore: the new full state is at 30.
        let mut t = synced(
            &[
                ("a", "p1", U1, "90"),
                ("a", "p3", U3, "95"),
                ("a", "p4", U4, "96"),
            ],
            "100",
        );
        t.begin_sync(true, None);
        assert_eq!(
            t.observe(Added, &meta("a", "p1", U1, "20"), true),
            Verdict::Deliver(Update),
            "older, yet the server's"
        );
        assert_eq!(
            t.observe(Added, &meta("a", "p2", U2, "21"), true),
            Verdict::Deliver(Add)
        );
        // Another uid under an old name: the server's object.
        let v = t.observe(Added, &meta("a", "p4", U5, "22"), true);
        assert!(matches!(v, Verdict::Displaced(_)), "{v:?}");
        assert_eq!(
            t.observe(Added, &meta("a", "p4", U5, "22"), true),
            Verdict::Deliver(Add)
        );
        let end = t.end_sync(&Rv::new("30"));
        assert_eq!(end.gone, vec![vanished("a", "p3", U3, "95")]);
        assert!(end.went_back);
        // Live events after it are new, not stale.
        assert_eq!(
            t.observe(Deleted, &meta("a", "p2", U2, "31"), false),
            Verdict::Deliver(Delete)
        );
        assert_eq!(
            t.observe(Added, &meta("a", "p5", U6, "32"), false),
            Verdict::Deliver(Add)
        );
        assert_eq!(
            t.observe(Modified, &meta("a", "p1", U1, "33"), false),
            Verdict::Deliver(Update)
        );
    }

    #[test]
    fn opaque_versions_never_bring_back_an_object_deleted_during_a_relist() {
        let mut t = synced(&[("a", "p1", U1, "x1"), ("a", "p2", U2, "x2")], "s1");
        t.begin_sync(true, Some(&Rv::empty()));
        // The primary's live stream deletes p2 while the snapshot is read.
        assert_eq!(
            t.observe(Deleted, &meta("a", "p2", U2, "x3"), false),
            Verdict::Deliver(Delete)
        );
        assert_eq!(
            t.observe(Added, &meta("a", "p2", U2, "x2"), true),
            Verdict::Stale,
            "the snapshot was read before the delete"
        );
        assert_eq!(
            t.observe(Added, &meta("a", "p1", U1, "x1"), true),
            Verdict::Deliver(Snapshot)
        );
        assert_eq!(t.end_sync(&Rv::new("s2")).gone, vec![]);
        // The replacement's live events from before the delete: still gone.
        assert_eq!(
            t.observe(Modified, &meta("a", "p2", U2, "x2b"), false),
            Verdict::Stale
        );
        assert_eq!(
            t.observe(Deleted, &meta("a", "p2", U2, "x3"), false),
            Verdict::Stale
        );
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn an_undone_update_of_an_opaque_version_keeps_the_old_text() {
        let mut t = synced(&[("a", "p1", U1, "o6")], "s1");
        assert_eq!(
            t.observe(Modified, &meta("a", "p1", U1, "o34"), false),
            Verdict::Deliver(Update)
        );
        // Its entry was not sent (a stop): as if the event never came.
        t.undo_last();
        let held = t.export();
        assert_eq!(held.len(), 1);
        assert_eq!(held[0].resource_version, Rv::new("o6"));
        assert_eq!(
            t.observe(Modified, &meta("a", "p1", U1, "o34"), false),
            Verdict::Deliver(Update),
            "the change comes again and is delivered"
        );
    }

    #[test]
    fn opaque_resource_versions_dedupe_by_equality() {
        let mut t = synced(&[("a", "p1", U1, "v-a"), ("a", "p2", U2, "10")], "list-1");
        assert_eq!(
            t.observe(Modified, &meta("a", "p1", U1, "v-a"), false),
            Verdict::Duplicate
        );
        assert_eq!(
            t.observe(Modified, &meta("a", "p1", U1, "v-b"), false),
            Verdict::Deliver(Update)
        );
        assert_eq!(
            t.observe(Modified, &meta("a", "p1", U1, "v-b"), false),
            Verdict::Duplicate
        );
        assert_eq!(
            t.observe(Modified, &meta("a", "p1", U1, "v-a"), false),
            Verdict::Deliver(Update),
            "order unknown: a change"
        );
        // A new object after an opaque floor is not taken as stale.
        assert_eq!(
            t.observe(Added, &meta("a", "p3", U3, "1"), false),
            Verdict::Deliver(Add)
        );
        t.begin_sync(true, None);
        assert_eq!(
            t.observe(Added, &meta("a", "p2", U2, "10"), true),
            Verdict::Deliver(Snapshot)
        );
        let mut gone = t.end_sync(&Rv::new("list-2")).gone;
        gone.sort_by(|a, b| a.name.cmp(&b.name));
        // The opaque text survives in the record.
        assert_eq!(
            gone,
            vec![vanished("a", "p1", U1, "v-a"), vanished("a", "p3", U3, "1")]
        );
    }

    #[test]
    fn records_survive_compaction_and_long_names_work() {
        let mut t = Table::default();
        t.begin_sync(true, None);
        let uid = |i: u32| format!("00000000-0000-0000-0000-{i:012}");
        let long = "x".repeat(2000);
        let name = |i: u32| {
            if i % 1000 == 7 {
                format!("{long}{i}")
            } else {
                format!("object-number-{i}")
            }
        };
        let ns = |i: u32| format!("ns-{}", i % 7);
        for i in 0..20_000u32 {
            let rv = if i % 100 == 3 {
                format!("opaque-{i}")
            } else {
                (i + 1).to_string()
            };
            assert_eq!(
                t.observe(Added, &meta(&ns(i), &name(i), &uid(i), &rv), true),
                Verdict::Deliver(Add)
            );
        }
        t.end_sync(&Rv::new("100000"));
        let before = t.records.written();
        for i in (0..20_000u32).filter(|i| i % 3 != 0) {
            let rv = if i % 100 == 3 {
                format!("opaque-{i}")
            } else {
                "200000".to_string()
            };
            assert_eq!(
                t.observe(Deleted, &meta(&ns(i), &name(i), &uid(i), &rv), false),
                Verdict::Deliver(Delete),
                "{i}"
            );
        }
        // Compaction ran (the holes were most of the chunks) and kept every record.
        assert!(
            t.records.written() < before / 2,
            "compacted: {before} -> {}",
            t.records.written()
        );
        t.begin_sync(true, None);
        let mut gone = t.end_sync(&Rv::new("300000")).gone;
        gone.sort_by_key(|v| v.uid.clone());
        assert_eq!(gone.len(), 6667);
        for (v, i) in gone.iter().zip((0..20_000u32).filter(|i| i % 3 == 0)) {
            let rv = if i % 100 == 3 {
                format!("opaque-{i}")
            } else {
                (i + 1).to_string()
            };
            assert_eq!(v, &vanished(&ns(i), &name(i), &uid(i), &rv));
        }
    }
}
