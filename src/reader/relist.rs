//! Relists: every `relist_interval` (or on `Reader::relist`), a fresh stream
//! per resource syncs while the running one goes on, then takes its place.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{bounded, select, Receiver};

use super::registry::{Registry, Thread};
use crate::delivery::state::ResourceState;
use crate::resource::ResourceSpec;
use crate::stream::Role;

/// Every `interval`, relists each synced resource in turn: a replacement
/// stream syncs while the running one goes on, then takes its place. One
/// relist at a time, to spare the apiserver.
pub(super) fn relist_timer(registry: &Registry, closing: &Receiver<()>, interval: Duration) {
    loop {
        select! {
            recv(closing) -> _ => return,
            default(interval) => {}
        }
        if !relist_all(registry, closing) {
            return;
        }
    }
}

/// Relists every resource in turn; false when the reader is stopping.
pub(super) fn relist_all(registry: &Registry, closing: &Receiver<()>) -> bool {
    let specs: Vec<ResourceSpec> = registry
        .roster
        .lock()
        .handles
        .iter()
        .map(|s| s.spec.clone())
        .collect();
    specs.iter().all(|spec| relist(registry, closing, spec))
}

/// One relist; false when the reader is stopping.
///
/// The wait for the replacement's sync is bounded by the replacement itself:
/// it gives up after a few failures in a row (`stream::course`), which ends this wait.
fn relist(registry: &Registry, closing: &Receiver<()>, spec: &ResourceSpec) -> bool {
    let (done_tx, done) = bounded(1);
    let started = {
        // Not while a change of the watch set ends this resource's threads.
        let Some(_turn) = registry.turn() else {
            return false;
        };
        let mut g = registry.roster.lock();
        let g = &mut *g;
        let Some(start) = g.start.as_ref() else {
            return false;
        };
        let Some(h) = g.handles.iter_mut().find(|h| &h.spec == spec) else {
            return true;
        };
        if h.pending.is_some()
            || !h.state.ledger().synced()
            || h.state.counters.failed.load(Ordering::Relaxed)
        {
            return true;
        }
        let opaque = {
            let mut ledger = h.state.ledger();
            ledger.opaque().then(|| ledger.want_resync())
        };
        if let Some(before) = opaque {
            // No order to judge a second stream's snapshot by: the running
            // stream re-syncs itself, its connection ended for it.
            h.running.slot.interrupt();
            Err((h.state.clone(), before))
        } else {
            Ok(start.spawn(h, Role::Replacement(done_tx)).map(|t| {
                let id = t.id();
                h.pending = Some(t);
                id
            }))
        }
    };
    let started = match started {
        Ok(s) => s,
        // Waited for without the roster's lock or the turn.
        Err((state, before)) => return relist_by_resync(registry, closing, spec, &state, before),
    };
    let thread = match started {
        Ok(id) => id,
        Err(e) => {
            log::warn!("{}: cannot start a relist: {e}", spec.gvr());
            return true;
        }
    };
    log::info!("{}: relisting", spec.gvr());
    // Synced, or the replacement ended without syncing (dropping the sender).
    let synced = select! {
        recv(done) -> r => r.is_ok(),
        recv(closing) -> _ => return false,
    };
    // The swap and the join in the registry's turn (the roster's lock let
    // go for the join), the log after both.
    let Some(turn) = registry.turn() else {
        return false;
    };
    let mut finished = {
        let mut g = registry.roster.lock();
        let Some(h) = g.handles.iter_mut().find(|h| &h.spec == spec) else {
            return true;
        };
        // Still ours: set_resources may have stopped it and started another.
        if h.pending.as_ref().and_then(Thread::id) != thread {
            return true;
        }
        let Some(new) = h.pending.take() else {
            return true;
        };
        if synced {
            h.state.counters.relists.fetch_add(1, Ordering::Relaxed);
            std::mem::replace(&mut h.running, new)
        } else {
            // The running stream goes on (it may re-sync itself meanwhile).
            new
        }
    };
    finished.signal();
    if let Some(start) = &registry.roster.lock().start {
        start.out.control.wake();
    }
    finished.join();
    drop(turn);
    if !synced {
        log::warn!(
            "{}: the relist did not complete; the running stream goes on",
            spec.gvr()
        );
    }
    true
}

/// Waits for the re-sync a relist of an opaque resource asked its stream
/// for; false when the reader is stopping.
fn relist_by_resync(
    registry: &Registry,
    closing: &Receiver<()>,
    spec: &ResourceSpec,
    state: &Arc<ResourceState>,
    before: u64,
) -> bool {
    log::info!("{}: relisting", spec.gvr());
    loop {
        if state.ledger().completed() > before {
            state.counters.relists.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        // Failed for good, or no longer watched (set_resources changed it):
        // nothing to wait for.
        let watched = registry
            .roster
            .lock()
            .handles
            .iter()
            .any(|h| Arc::ptr_eq(&h.state, state));
        if state.counters.failed.load(Ordering::Relaxed) || !watched {
            return true;
        }
        // The stream's full state is paced by its own backoff; a stop ends
        // this wait at once.
        select! {
            recv(closing) -> _ => return false,
            default(Duration::from_millis(50)) => {}
        }
    }
}
