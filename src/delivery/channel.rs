//! The way out: every stream sends its entries into one bounded channel, which
//! holds at most `channel_capacity` entries and at most `max_buffered_bytes`
//! of objects. A full channel blocks the streams; nothing is dropped. Every
//! wait honours stop.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crossbeam_channel::{select, Receiver, Sender, TryRecvError, TrySendError};

use crate::entry::{Change, Entry, Resource, Term};
use crate::resource_version::Rv;
use crate::sync::{Condvar, Mutex};

/// Tells a stream to stop: either receiver disconnecting means stop.
#[derive(Clone)]
pub(crate) struct Stop {
    pub all: Receiver<()>,
    pub own: Receiver<()>,
}

impl Stop {
    pub(crate) fn is_set(&self) -> bool {
        matches!(self.all.try_recv(), Err(TryRecvError::Disconnected))
            || matches!(self.own.try_recv(), Err(TryRecvError::Disconnected))
    }

    /// Sleeps up to `d`; true when woken by a stop.
    pub(crate) fn sleep(&self, d: Duration) -> bool {
        select! {
            recv(self.all) -> _ => true,
            recv(self.own) -> _ => true,
            default(d) => false,
        }
    }
}

/// The channel's control block: the byte budget (the bytes of objects in
/// the channel, bounded: a stream waits for room before it sends, the
/// reader gives room back as entries are taken; an entry larger than the
/// whole budget still goes, alone), the batches being sent, the stop of
/// every send, and the readiness hook.
pub(crate) struct ChannelControl {
    limit: usize,
    used: AtomicUsize,
    waiting: AtomicUsize,
    /// Taking the raw receiver ([`crate::Reader::receiver_without_byte_budget`]) turns the budget
    /// off: entries taken from it give no room back.
    off: AtomicBool,
    lock: Mutex<()>,
    room: Condvar,
    /// Streams in the middle of sending a batch ([`ChannelControl::sending`]).
    bursts: AtomicUsize,
    /// The reader was stopped: no entry enters the channel any more.
    closed: AtomicBool,
    /// Sends between their look at `closed` and their end: once none is,
    /// after a stop, the channel holds every entry there will ever be.
    inflight: AtomicUsize,
    /// Deliveries begun so far: a checkpoint taken while the reader runs
    /// is exact when none began while the ledgers were read (the elector's
    /// periodic checkpoint kept in the cluster).
    begun: AtomicU64,
    /// Entries that entered the channel (counted inside their delivery, so
    /// that a checkpoint's look sees either the count or the delivery).
    entered: AtomicU64,
    /// Entries the consumer took out of the channel.
    taken: AtomicU64,
    /// Entries the consumer is done with: those it had taken when it last
    /// asked for another ([`ChannelControl::asks`]).
    done: AtomicU64,
    /// Called after each entry enters the channel and once at the stop
    /// ([`crate::Reader::set_ready_hook`]: the C library's readiness fd).
    ready: OnceLock<ReadyHook>,
}

/// What [`crate::Reader::set_ready_hook`] installs.
pub(crate) type ReadyHook = Box<dyn Fn() + Send + Sync>;

/// How long a reader that finds the channel empty keeps looking (instead of
/// parking) while a stream is sending a batch. A stream sends a batch's
/// entries a microsecond or two apart; a consumer that parks between them
/// costs a futex wake and a context switch per entry (54,748 futex calls for
/// 30,000 objects from a real apiserver), more than this much spinning.
pub(crate) const BURST_WAIT: Duration = Duration::from_micros(50);

/// A batch being sent (see [`ChannelControl::sending`]); dropping it ends it.
pub(crate) struct Burst<'a>(&'a ChannelControl);

impl Drop for Burst<'_> {
    fn drop(&mut self) {
        self.0.bursts.fetch_sub(1, Ordering::Release);
    }
}

/// A delivery under way (see [`ChannelControl::delivering`]); dropping it
/// ends it.
pub(crate) struct Delivering<'a>(&'a ChannelControl);

impl Drop for Delivering<'_> {
    fn drop(&mut self) {
        self.0.inflight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How often a stream waiting for room looks at stop by itself: a stop
/// wakes it at once ([`ChannelControl::wake`]); this is only the backstop.
const STOP_POLL: Duration = Duration::from_secs(1);

impl ChannelControl {
    pub(crate) fn new(limit: usize) -> ChannelControl {
        ChannelControl {
            limit: limit.max(1),
            used: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            off: AtomicBool::new(false),
            lock: Mutex::new(()),
            room: Condvar::new(),
            bursts: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            inflight: AtomicUsize::new(0),
            begun: AtomicU64::new(0),
            entered: AtomicU64::new(0),
            taken: AtomicU64::new(0),
            done: AtomicU64::new(0),
            ready: OnceLock::new(),
        }
    }

    /// Installs the readiness hook; false when one is installed already.
    pub(crate) fn set_ready_hook(&self, hook: ReadyHook) -> bool {
        self.ready.set(hook).is_ok()
    }

    fn ready(&self) {
        if let Some(hook) = self.ready.get() {
            hook();
        }
    }

    /// The reader stops: sends that have not begun fail, and those waiting
    /// for room look at their stop now.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.wake();
        // A consumer polling for entries must also see the end.
        self.ready();
    }

    /// After [`close`](Self::close): waits until no send is between its look
    /// at `closed` and its end (each is quick, or wakes on the stop), so that
    /// a reader that then finds the channel empty has every entry that was
    /// sent, and a checkpoint taken then matches what the consumer got.
    pub(crate) fn settle(&self) {
        while self.inflight.load(Ordering::SeqCst) > 0 {
            std::thread::yield_now();
        }
    }

    /// A stream is about to change what the consumer holds and send the
    /// entry that says so, or take the change back when the entry cannot
    /// go: until the guard is dropped, [`settle`](Self::settle) waits, so
    /// that a checkpoint taken once a stopped reader is drained never holds
    /// a change whose entry was not sent (nor misses one taken back late).
    ///
    /// `None` once the reader is closed: nothing may change then, not even
    /// for a moment. A delivery that began after [`settle`](Self::settle)
    /// looked would otherwise change the table under a checkpoint being
    /// taken, and take the change back only after it.
    pub(crate) fn delivering(&self) -> Option<Delivering<'_>> {
        // Under way before counted: whoever sees the count moved sees it
        // under way too, or over.
        self.inflight.fetch_add(1, Ordering::SeqCst);
        self.begun.fetch_add(1, Ordering::SeqCst);
        let under_way = Delivering(self);
        // After the count (both SeqCst, as close and settle are): either
        // settle saw this delivery under way and waits for it, or this sees
        // the reader closed.
        (!self.closed.load(Ordering::SeqCst)).then_some(under_way)
    }

    /// Deliveries begun so far, and whether one is under way now: equal
    /// counts before and after reading the ledgers, with none under way,
    /// mean no delivery touched them meanwhile.
    pub(crate) fn deliveries(&self) -> (u64, bool) {
        let begun = self.begun.load(Ordering::SeqCst);
        (begun, self.inflight.load(Ordering::SeqCst) > 0)
    }

    /// The consumer took an entry out of the channel.
    pub(crate) fn took(&self) {
        self.taken.fetch_add(1, Ordering::SeqCst);
    }

    /// The consumer asks for another entry: it is done with every entry it
    /// took before. An entry counts as delivered (a checkpoint kept in the
    /// cluster may hold it) only from then on, so that one the consumer
    /// still holds when its process dies comes again from the next leader.
    pub(crate) fn asks(&self) {
        self.done
            .store(self.taken.load(Ordering::SeqCst), Ordering::SeqCst);
    }

    /// Whether every entry that entered the channel was taken, and the
    /// consumer has asked for another since (a moment's answer: between
    /// two looks at [`deliveries`](Self::deliveries) that agree, exact).
    pub(crate) fn all_done(&self) -> bool {
        let entered = self.entered.load(Ordering::SeqCst);
        entered == self.done.load(Ordering::SeqCst)
    }

    /// Whether the raw receiver was handed out: its takes are not counted.
    pub(crate) fn is_off(&self) -> bool {
        self.off.load(Ordering::Relaxed)
    }

    /// A stream starts sending a batch: until the guard is dropped, a reader
    /// waiting for an entry spins a little longer before it parks.
    pub(crate) fn sending(&self) -> Burst<'_> {
        self.bursts.fetch_add(1, Ordering::Release);
        Burst(self)
    }

    /// Whether a stream is sending a batch.
    pub(crate) fn bursting(&self) -> bool {
        self.bursts.load(Ordering::Acquire) > 0
    }

    fn fits(&self, used: usize, n: usize) -> bool {
        used == 0 || used.saturating_add(n) <= self.limit || self.off.load(Ordering::Relaxed)
    }

    /// Takes room for `n` bytes; false when a stop came first.
    fn take(&self, n: usize, stop: &Stop) -> bool {
        if n == 0 {
            return true;
        }
        let before = self.used.fetch_add(n, Ordering::AcqRel);
        if self.fits(before, n) {
            return true;
        }
        self.used.fetch_sub(n, Ordering::AcqRel);
        self.waiting.fetch_add(1, Ordering::AcqRel);
        let mut g = self.lock.lock();
        let got = loop {
            if self.fits(self.used.load(Ordering::Acquire), n) {
                self.used.fetch_add(n, Ordering::AcqRel);
                break true;
            }
            if stop.is_set() {
                break false;
            }
            self.room.wait_for(&mut g, STOP_POLL);
        };
        drop(g);
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        got
    }

    /// Gives back the room of an entry taken out of the channel.
    pub(crate) fn give(&self, entry: &Entry) {
        let n = charge(entry);
        if n == 0 {
            return;
        }
        self.used.fetch_sub(n, Ordering::AcqRel);
        if self.waiting.load(Ordering::Acquire) > 0 {
            let _g = self.lock.lock();
            self.room.notify_all();
        }
    }

    /// Wakes every stream waiting for room, to look at its stop.
    pub(crate) fn wake(&self) {
        if self.waiting.load(Ordering::Acquire) > 0 {
            let _g = self.lock.lock();
            self.room.notify_all();
        }
    }

    /// Bytes of objects in the channel now.
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// No more accounting (the raw receiver is in the caller's hands).
    pub(crate) fn turn_off(&self) {
        self.off.store(true, Ordering::Relaxed);
        let _g = self.lock.lock();
        self.room.notify_all();
    }
}

fn charge(entry: &Entry) -> usize {
    entry.object.as_ref().map_or(0, Vec::len)
}

/// A stream's end of the channel.
#[derive(Clone)]
pub(crate) struct Out {
    pub tx: Sender<Entry>,
    pub control: std::sync::Arc<ChannelControl>,
    /// Under leader election: the term every entry sent here carries.
    pub term: Option<Term>,
}

impl Out {
    /// The same way out, its entries stamped with `term`.
    pub(crate) fn in_term(&self, term: Term) -> Out {
        Out {
            term: Some(term),
            ..self.clone()
        }
    }

    /// Blocks until the entry is queued (true) or a stop comes (false).
    pub(crate) fn send(&self, mut entry: Entry, stop: &Stop) -> bool {
        entry.term.clone_from(&self.term);
        let Some(_delivering) = self.control.delivering() else {
            return false;
        };
        self.send_open(entry, stop)
    }

    /// Sends a resource's Synced at `rv` (false when a stop came first):
    /// the one place a Synced entry is made, whichever stream or helper
    /// owes it.
    pub(crate) fn send_synced(&self, resource: Arc<Resource>, rv: Rv, stop: &Stop) -> bool {
        self.send(Entry::marker(Change::Synced, resource, rv), stop)
    }

    /// Queues the entry if the channel has room now, never waiting (the
    /// elector's Error entries: its thread must go on renewing); gives it
    /// back otherwise (`Some`), and once the reader is stopped. The byte
    /// budget is not asked: these entries carry no object.
    pub(crate) fn try_send(&self, mut entry: Entry) -> Option<Entry> {
        entry.term.clone_from(&self.term);
        let Some(_delivering) = self.control.delivering() else {
            return Some(entry);
        };
        match self.tx.try_send(entry) {
            Ok(()) => {
                self.control.entered.fetch_add(1, Ordering::SeqCst);
                self.control.ready();
                None
            }
            Err(e) => Some(e.into_inner()),
        }
    }

    fn send_open(&self, entry: Entry, stop: &Stop) -> bool {
        let n = charge(&entry);
        if !self.control.take(n, stop) {
            return false;
        }
        let give_back = |b: &ChannelControl| {
            b.used.fetch_sub(n, Ordering::AcqRel);
        };
        // Room in the channel (the common case): no select needed.
        let entry = match self.tx.try_send(entry) {
            Ok(()) => {
                self.control.entered.fetch_add(1, Ordering::SeqCst);
                self.control.ready();
                return true;
            }
            Err(TrySendError::Disconnected(_)) => {
                give_back(&self.control);
                return false;
            }
            Err(TrySendError::Full(e)) => e,
        };
        let sent = select! {
            send(self.tx, entry) -> r => r.is_ok(),
            recv(stop.all) -> _ => false,
            recv(stop.own) -> _ => false,
        };
        if sent {
            self.control.entered.fetch_add(1, Ordering::SeqCst);
            self.control.ready();
        } else {
            give_back(&self.control);
        }
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Change;
    use crate::resource_version::Rv;

    /// A way out into `tx` with a 1 MiB budget and no term.
    fn out_of(tx: Sender<Entry>) -> Out {
        Out {
            tx,
            control: std::sync::Arc::new(ChannelControl::new(1 << 20)),
            term: None,
        }
    }

    fn entry() -> Entry {
        let resource = crate::entry::Resource {
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
            kind: "Pod".into(),
        };
        Entry::marker(Change::Synced, std::sync::Arc::new(resource), Rv::empty())
    }

    #[test]
    fn once_closed_nothing_enters_and_settle_waits_for_sends_under_way() {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let (closing_tx, closing) = crossbeam_channel::bounded::<()>(0);
        let out = out_of(tx);
        let stop = Stop {
            all: closing,
            own: crossbeam_channel::never(),
        };
        assert!(out.send(entry(), &stop));
        // The channel is full: a send waits, and a stop ends it unsent.
        let waiting = {
            let (out, stop) = (out.clone(), stop.clone());
            std::thread::spawn(move || out.send(entry(), &stop))
        };
        std::thread::sleep(Duration::from_millis(50));
        out.control.close();
        drop(closing_tx);
        out.control.settle();
        assert!(!waiting.join().unwrap(), "a stop ends a waiting send");
        // Room again, yet a closed channel takes nothing new.
        assert!(rx.try_recv().is_ok());
        assert!(!out.send(entry(), &stop));
        assert!(rx.try_recv().is_err());
    }

    /// The count a checkpoint taken while the reader runs compares: it
    /// moves with each delivery, sent or given back, and a delivery under
    /// way shows; `try_send` never waits and gives the entry back.
    #[test]
    fn deliveries_are_counted_and_try_send_never_waits() {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let out = out_of(tx);
        assert_eq!(out.control.deliveries(), (0, false));
        {
            let _d = out.control.delivering().expect("open");
            assert_eq!(out.control.deliveries(), (1, true));
        }
        assert!(out.try_send(entry()).is_none());
        assert_eq!(out.control.deliveries(), (2, false));
        assert!(out.try_send(entry()).is_some(), "full: given back");
        assert!(rx.try_recv().is_ok());
        out.control.close();
        assert!(out.try_send(entry()).is_some(), "closed: given back");
        assert!(rx.try_recv().is_err());
    }

    /// An entry is done only once the consumer asks for another after
    /// taking it: sent, taken and held are not done; a send given back
    /// (full, closed) is not counted.
    #[test]
    fn an_entry_is_done_once_the_consumer_asks_again() {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let out = out_of(tx);
        let c = &out.control;
        assert!(c.all_done(), "nothing sent");
        assert!(out.try_send(entry()).is_none());
        assert!(!c.all_done(), "in the channel");
        assert!(out.try_send(entry()).is_some(), "full: given back");
        c.asks();
        assert!(!c.all_done(), "asked, but not taken yet");
        assert!(rx.try_recv().is_ok());
        c.took();
        assert!(!c.all_done(), "taken, still in the consumer's hands");
        c.asks();
        assert!(c.all_done(), "asked again: done");
        let stop = Stop {
            all: crossbeam_channel::never(),
            own: crossbeam_channel::never(),
        };
        assert!(out.send(entry(), &stop));
        assert!(!c.all_done(), "a new one sent");
    }

    /// Once closed no delivery begins, so none can change the table after
    /// settle has looked (a checkpoint taken then saw a change for a moment
    /// that was taken back after it: tests/fake/lifecycle.rs,
    /// a_checkpoint_after_stop_and_drain_is_exactly_what_the_consumer_got).
    #[test]
    fn once_closed_no_delivery_begins() {
        let control = ChannelControl::new(1 << 20);
        assert!(control.delivering().is_some());
        control.close();
        control.settle();
        assert!(control.delivering().is_none());
        assert!(!control.deliveries().1, "refused: not under way");
    }

    /// A delivery under way (a change in the table, its entry not yet sent
    /// or taken back) holds settle until it is over.
    #[test]
    fn settle_waits_for_a_delivery_under_way() {
        let control = std::sync::Arc::new(ChannelControl::new(1 << 20));
        let guard_held = {
            let control = control.clone();
            let (held_tx, held) = crossbeam_channel::bounded(0);
            let t = std::thread::spawn(move || {
                let _d = control.delivering().expect("open");
                held_tx.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(100));
                std::time::Instant::now()
            });
            held.recv().unwrap();
            t
        };
        control.close();
        control.settle();
        let settled = std::time::Instant::now();
        let released = guard_held.join().unwrap();
        assert!(
            settled >= released,
            "settle returned before the delivery ended"
        );
    }
}
