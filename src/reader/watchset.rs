//! The watch set: which streams run, changed at run time (`set_resources`,
//! the wildcards' discovery), with what they hand over and the namespaces'
//! Synced gates.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::registry::{Registry, Scope, StreamHandle};
use super::threads;
use crate::delivery::state::SyncGate;
use crate::error::Error;
use crate::resource::ResourceSpec;
use crate::stream::Role;

/// Makes the streams of `scope` the ones of `wanted`: starts the new, stops
/// and joins the gone, restarts all with `force`; the other scope's streams
/// are left alone (and a found one that the caller names is not started
/// twice). Whether anything changed. All in the registry's turn, so that
/// the gone and restarting threads have ended before any new one starts;
/// the roster's lock is let go while they are joined.
pub(super) fn reconcile(
    registry: &Registry,
    wanted: &[ResourceSpec],
    scope: Scope,
    force: bool,
) -> Result<bool, Error> {
    let stopped = || Error::Stopped;
    let Some(_turn) = registry.turn() else {
        return Err(stopped());
    };
    let mut result_spawn = Ok(());
    let ours = |h: &StreamHandle| h.found == (scope == Scope::Found);
    // Signal what goes or restarts and take its threads, under the roster's lock;
    // join them without it.
    let (mut gone, mut restarting, changed) = {
        let mut roster = registry.roster.lock();
        if roster.start.is_none() {
            return Err(stopped());
        }
        let (keep, mut gone): (Vec<StreamHandle>, Vec<StreamHandle>) = roster
            .handles
            .drain(..)
            .partition(|s| !ours(s) || wanted.contains(&s.spec));
        let mut keep = keep;
        let present = keep.iter().filter(|s| ours(s)).count();
        let changed = force || !gone.is_empty() || wanted.len() != present;
        for s in &mut gone {
            s.signal();
        }
        let mut restarting = Vec::new();
        if force {
            // The old threads end before new ones start: two streams
            // syncing one resource's state at once would confuse it.
            for h in keep.iter_mut().filter(|h| ours(h)) {
                h.signal();
                restarting.push(std::mem::take(&mut h.running));
                restarting.extend(h.pending.take());
            }
        }
        // Streams blocked on a full channel look at their stop now.
        if let Some(start) = &roster.start {
            start.out.control.wake();
        }
        roster.handles = keep;
        (gone, restarting, changed)
    };
    for s in &mut gone {
        s.join();
    }
    for t in &mut restarting {
        t.join();
    }
    let mut guard = registry.roster.lock();
    let roster = &mut *guard;
    let Some(start) = roster.start.as_ref() else {
        return Err(stopped());
    };
    // A namespace removed while the resource's other namespaces waited for
    // it: their Synced goes now, from a thread of its own (the caller may be
    // the consumer, and the channel full).
    roster.helpers.retain(|t| !t.is_finished());
    for h in &gone {
        let Some(gate) = &h.gate else { continue };
        if !gate.leave(h.state.member()) {
            continue;
        }
        let resource = Arc::new(crate::entry::Resource {
            group: h.spec.group.clone(),
            version: h.spec.version.clone(),
            resource: h.spec.resource.clone(),
            kind: h.spec.kind.clone(),
        });
        let report = start.report();
        let (out, stop) = (report.out.clone(), report.stop.clone());
        match threads::spawn("tattler-synced".into(), report, move || {
            out.send_synced(resource, crate::resource_version::Rv::empty(), &stop);
        }) {
            Ok(t) => roster.helpers.push(t),
            Err(e) => result_spawn = Err(Error::Spawn(e)),
        }
    }
    let mut result = result_spawn.map(|()| changed);
    if force {
        // Dedupe state carries over: the consumer sees Snapshots, not a second Add.
        for h in roster.handles.iter_mut().filter(|h| ours(h)) {
            match start.spawn(h, Role::Primary) {
                Ok(t) => h.running = t,
                Err(e) => result = Err(e),
            }
        }
    }
    let fresh: Vec<ResourceSpec> = wanted
        .iter()
        .filter(|spec| {
            !roster.handles.iter().any(|s| {
                (ours(s) && &s.spec == *spec)
                    || (scope == Scope::Found && crate::checkpoint::same_scope(&s.spec, spec))
            })
        })
        .cloned()
        .collect();
    let inherited = hand_over(&gone, &roster.handles, &fresh);
    // Several namespaces of one new resource share a gate (one Synced);
    // another namespace of a resource already in several joins its gate.
    let gates = sync_gates(&fresh);
    for ((spec, gate), part) in fresh.iter().zip(gates).zip(inherited) {
        let gate = gate.or_else(|| {
            let g = roster
                .handles
                .iter()
                .find(|s| same_resource(&s.spec, spec))
                .and_then(|s| s.gate.clone())?;
            let m = new_member();
            g.join(m);
            Some((g, m))
        });
        match start.start_from(spec, part.as_ref(), gate, None) {
            Ok(mut h) => {
                h.found = scope == Scope::Found;
                roster.handles.push(h);
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    // The caller's order for stats(), the found ones after.
    roster.handles.sort_by_key(|s| {
        (
            s.found,
            wanted
                .iter()
                .position(|w| w == &s.spec)
                .unwrap_or(usize::MAX),
        )
    });
    result
}

/// What the consumer holds of removed streams, handed to new streams of the
/// same resource (a scope changed: other namespaces, other selectors): each
/// new one re-syncs against the objects in its namespace, and the first takes
/// the rest too, so that its first full state deletes what no new scope
/// holds. A kept stream's objects outside its own namespace (left to it by an
/// earlier hand-over, to be deleted by its first full state) go to a new
/// stream of their namespace too: one table holds an object, never two. A
/// consumer keyed by resource, namespace and name so never keeps an object
/// the new scopes lack, nor misses a delete made during the change. A
/// resource removed with no new scope gets nothing: the consumer removed it.
fn hand_over(
    gone: &[StreamHandle],
    kept: &[StreamHandle],
    fresh: &[ResourceSpec],
) -> Vec<Option<crate::checkpoint::CheckpointPart>> {
    let same = |a: &ResourceSpec, b: &ResourceSpec| {
        (&a.group, &a.version, &a.resource, &a.lookup)
            == (&b.group, &b.version, &b.resource, &b.lookup)
    };
    let home = |spec: &ResourceSpec, ns: Option<&str>| {
        fresh
            .iter()
            .position(|f| same(f, spec) && f.namespace.as_deref().is_none_or(|n| ns == Some(n)))
    };
    let mut parts: Vec<Option<crate::checkpoint::CheckpointPart>> = vec![None; fresh.len()];
    let mut put = |at: usize, o: crate::checkpoint::Held| {
        parts[at]
            .get_or_insert_with(|| crate::checkpoint::CheckpointPart {
                spec: fresh[at].clone(),
                resource_version: crate::resource_version::Rv::empty(),
                objects: Vec::new(),
            })
            .objects
            .push(o);
    };
    for g in gone {
        let Some(first) = fresh.iter().position(|f| same(f, &g.spec)) else {
            continue;
        };
        let held = g.state.ledger().export();
        for o in held {
            let at = home(&g.spec, o.namespace.as_deref()).unwrap_or(first);
            put(at, o);
        }
    }
    for k in kept {
        let Some(own) = k.spec.namespace.clone() else {
            continue;
        };
        if !fresh.iter().any(|f| same(f, &k.spec)) {
            continue;
        }
        let moved = {
            let mut ledger = k.state.ledger();
            let moved =
                ledger.split_off(|ns| ns != Some(own.as_str()) && home(&k.spec, ns).is_some());
            k.state
                .counters
                .objects
                .store(ledger.len() as u64, Ordering::Relaxed);
            moved
        };
        for o in moved {
            if let Some(at) = home(&k.spec, o.namespace.as_deref()) {
                put(at, o);
            }
        }
    }
    parts
}

/// Whether two specs are one resource to the consumer: the same but for
/// the namespace.
pub(super) fn same_resource(a: &ResourceSpec, b: &ResourceSpec) -> bool {
    let mut b = b.clone();
    b.namespace.clone_from(&a.namespace);
    crate::checkpoint::same_scope(a, &b)
}

/// A key for one resource's part in a [`SyncGate`].
fn new_member() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// For each spec, the gate it shares with the same resource's other
/// namespaces, when there are several, and its key there.
pub(super) fn sync_gates(specs: &[ResourceSpec]) -> Vec<Option<(Arc<SyncGate>, u64)>> {
    let mut gates: Vec<Option<(Arc<SyncGate>, u64)>> = vec![None; specs.len()];
    for i in 0..specs.len() {
        if gates[i].is_some() {
            continue;
        }
        let group: Vec<usize> = (i..specs.len())
            .filter(|&j| same_resource(&specs[i], &specs[j]))
            .collect();
        if group.len() > 1 {
            let members: Vec<u64> = group.iter().map(|_| new_member()).collect();
            let gate = SyncGate::new(&members);
            for (j, m) in group.into_iter().zip(members) {
                gates[j] = Some((gate.clone(), m));
            }
        }
    }
    gates
}

/// The specs without repeats, in their first order.
pub(super) fn dedup(specs: &[ResourceSpec]) -> Vec<ResourceSpec> {
    let mut out: Vec<ResourceSpec> = Vec::with_capacity(specs.len());
    for s in specs {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}
