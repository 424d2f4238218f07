//! tattler's own locks, and the check that keeps the crate's promise
//! ("# Threads"): no lock is held across a join or a log call.
//!
//! `Mutex` is parking_lot's. In debug builds each thread also keeps where
//! it took every guard it holds (a thread-local list, no lock of its own),
//! so that a join through `join`, or a log call a test's logger reports
//! through [`log_call`], made with one held is recorded as a violation, with
//! both places; a test asserts that [`take_violations`] finds none. Release
//! builds keep nothing: the guard is parking_lot's and the checks do nothing.
//!
//! Only the public functions below are for tests (`#[doc(hidden)]`, not
//! an API).

use std::ops::{Deref, DerefMut};
use std::panic::Location;
use std::thread::JoinHandle;
use std::time::Duration;

/// A mutex whose guards a debug build counts (see the module's header).
#[derive(Default)]
pub(crate) struct Mutex<T: ?Sized>(parking_lot::Mutex<T>);

impl<T> Mutex<T> {
    pub(crate) const fn new(value: T) -> Mutex<T> {
        Mutex(parking_lot::Mutex::new(value))
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks it; the guard is known to the thread until dropped.
    #[cfg_attr(debug_assertions, track_caller)]
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        let inner = self.0.lock();
        MutexGuard {
            inner,
            _held: Held::taken(),
        }
    }
}

/// A [`Mutex`]'s guard; it is not `Send` (parking_lot's is not either).
pub(crate) struct MutexGuard<'a, T: ?Sized> {
    inner: parking_lot::MutexGuard<'a, T>,
    _held: Held,
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

/// parking_lot's condition variable, for a [`Mutex`]'s guard. The guard
/// stays counted while its thread waits: a waiting thread does nothing else.
#[derive(Default)]
pub(crate) struct Condvar(parking_lot::Condvar);

impl Condvar {
    pub(crate) const fn new() -> Condvar {
        Condvar(parking_lot::Condvar::new())
    }

    /// Waits for a notification or `timeout`, the lock released meanwhile.
    pub(crate) fn wait_for<T: ?Sized>(&self, guard: &mut MutexGuard<'_, T>, timeout: Duration) {
        self.0.wait_for(&mut guard.inner, timeout);
    }

    pub(crate) fn notify_all(&self) {
        self.0.notify_all();
    }
}

/// Joins `thread`: every join of a thread tattler started goes here, so
/// that one made with a guard held is recorded.
#[cfg_attr(debug_assertions, track_caller)]
pub(crate) fn join<T>(thread: JoinHandle<T>) -> std::thread::Result<T> {
    check("a join", &Location::caller().to_string());
    thread.join()
}

/// Whether this build checks (a debug build): a test that finds no
/// violation in a release build has checked nothing.
#[doc(hidden)]
pub fn checking() -> bool {
    cfg!(debug_assertions)
}

/// For a test's `log::Log`: a log call is being made on this thread from
/// `file:line` (its record's); recorded as a violation when the thread
/// holds a guard.
#[doc(hidden)]
pub fn log_call(file: Option<&str>, line: Option<u32>) {
    let at = format!("{}:{}", file.unwrap_or("?"), line.unwrap_or(0));
    check("a log call", &at);
}

/// The violations recorded so far in this process (and forgets them): a
/// join or a log call made with a guard held, and where that guard was
/// taken.
#[doc(hidden)]
pub fn take_violations() -> Vec<String> {
    std::mem::take(&mut *VIOLATIONS.lock())
}

/// Recorded violations; parking_lot's own mutex, not a counted one.
static VIOLATIONS: parking_lot::Mutex<Vec<String>> = parking_lot::Mutex::new(Vec::new());

/// Records `what` (made at `at`) when this thread holds a guard.
fn check(what: &str, at: &str) {
    let held = held_here();
    if held.is_empty() {
        return;
    }
    let thread = std::thread::current();
    let taken: Vec<String> = held.iter().map(ToString::to_string).collect();
    VIOLATIONS.lock().push(format!(
        "{what} at {at} on thread {} with the lock taken at {} held",
        thread.name().unwrap_or("?"),
        taken.join(", ")
    ));
}

#[cfg(debug_assertions)]
mod held {
    use std::cell::{Cell, RefCell};
    use std::panic::Location;

    thread_local! {
        /// The guards this thread holds: a key each, and where it was taken.
        static HELD: RefCell<Vec<(u64, &'static Location<'static>)>> = const { RefCell::new(Vec::new()) };
        static NEXT: Cell<u64> = const { Cell::new(0) };
    }

    /// A guard's entry in its thread's list; dropping it takes it out.
    pub(super) struct Held(u64);

    impl Held {
        #[track_caller]
        pub(super) fn taken() -> Held {
            let at = Location::caller();
            let key = NEXT.with(|n| {
                let key = n.get();
                n.set(key + 1);
                key
            });
            HELD.with(|h| h.borrow_mut().push((key, at)));
            Held(key)
        }
    }

    impl Drop for Held {
        fn drop(&mut self) {
            // `try_with`: a guard dropped while the thread's locals are
            // being destroyed has nothing left to take out.
            let _ = HELD.try_with(|h| {
                let mut h = h.borrow_mut();
                if let Some(i) = h.iter().rposition(|(k, _)| *k == self.0) {
                    h.remove(i);
                }
            });
        }
    }

    pub(super) fn held_here() -> Vec<&'static Location<'static>> {
        HELD.try_with(|h| h.borrow().iter().map(|(_, at)| *at).collect())
            .unwrap_or_default()
    }
}

#[cfg(not(debug_assertions))]
mod held {
    use std::panic::Location;

    /// Nothing kept in a release build.
    pub(super) struct Held;

    impl Held {
        pub(super) fn taken() -> Held {
            Held
        }
    }

    pub(super) fn held_here() -> Vec<&'static Location<'static>> {
        Vec::new()
    }
}

use held::{held_here, Held};

#[cfg(all(test, debug_assertions))]
mod tests {
    use super::*;

    fn ours() -> Vec<String> {
        take_violations()
            .into_iter()
            .filter(|v| v.contains("src/sync.rs"))
            .collect()
    }

    #[test]
    fn a_join_or_a_log_call_with_a_guard_held_is_recorded_and_one_without_is_not() {
        let m = Mutex::new(0);
        let c = Condvar::new();
        {
            let mut g = m.lock();
            // A wait is not a violation: the lock is released meanwhile.
            c.wait_for(&mut g, Duration::from_millis(1));
            *g += 1;
            join(std::thread::spawn(|| ())).unwrap();
            log_call(Some("src/sync.rs"), Some(1));
        }
        let v = ours();
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].starts_with("a join at src/sync.rs:"), "{v:?}");
        assert!(v[1].starts_with("a log call at src/sync.rs:1 "), "{v:?}");
        assert!(v.iter().all(|v| v.contains("lock taken at src/sync.rs:")));
        // Released: neither is a violation any more.
        join(std::thread::spawn(|| ())).unwrap();
        log_call(Some("src/sync.rs"), Some(2));
        assert_eq!(ours(), Vec::<String>::new());
        assert_eq!(held_here().len(), 0);
    }

    #[test]
    fn guards_dropped_out_of_order_each_leave_the_list() {
        let (a, b) = (Mutex::new(()), Mutex::new(()));
        let ga = a.lock();
        let gb = b.lock();
        assert_eq!(held_here().len(), 2);
        drop(ga);
        assert_eq!(held_here().len(), 1);
        drop(gb);
        assert!(held_here().is_empty());
    }
}
