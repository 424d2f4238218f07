//! The file descriptor of `tattler_fd`: readable while entries are queued,
//! so that `tattler_next_entry(r, 0, ...)` can be driven from poll/epoll.
//!
//! An eventfd and an `armed` flag. A stream that queues an entry calls
//! [`Readiness::signal`] (the core's ready hook): the first signal after a
//! clear writes the eventfd, later ones only see `armed`. A consumer that
//! finds the queue empty (a `TIMEOUT`, or it took the last entry) calls
//! [`Readiness::clear`]: disarm, drain the eventfd, then look at the queue
//! again and re-signal if an entry came meanwhile. An entry queued before
//! the disarm is seen by that second look (the disarm's swap reads the
//! stream's); one queued after it signals by itself. So a wake-up is never
//! lost; the fd may be readable with nothing queued (another thread took
//! the entry), which the next `TIMEOUT` clears.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) struct Readiness {
    #[cfg(target_os = "linux")]
    fd: nix::sys::eventfd::EventFd,
    armed: AtomicBool,
}

impl Readiness {
    /// A new eventfd (non-blocking, close-on-exec), readable at once: a
    /// consumer's first look then finds what is queued already, or clears it.
    #[cfg(target_os = "linux")]
    pub(crate) fn new() -> Option<Readiness> {
        use nix::sys::eventfd::{EfdFlags, EventFd};
        let fd = EventFd::from_flags(EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK).ok()?;
        let r = Readiness {
            fd,
            armed: AtomicBool::new(false),
        };
        r.signal();
        Some(r)
    }

    /// No eventfd here: `tattler_fd` returns -1.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn new() -> Option<Readiness> {
        None
    }

    /// The number for poll/epoll.
    pub(crate) fn raw(&self) -> c_int {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            self.fd.as_raw_fd()
        }
        #[cfg(not(target_os = "linux"))]
        {
            -1
        }
    }

    /// An entry was queued (or the reader stopped): make the fd readable.
    pub(crate) fn signal(&self) {
        if !self.armed.swap(true, Ordering::SeqCst) {
            #[cfg(target_os = "linux")]
            {
                // Fails only when the counter would overflow: readable anyway.
                let _ = self.fd.write(1);
            }
        }
    }

    /// The consumer found the queue empty: not readable, unless an entry
    /// came meanwhile (`queue_empty` says).
    pub(crate) fn clear(&self, queue_empty: impl Fn() -> bool) {
        self.armed.swap(false, Ordering::SeqCst);
        #[cfg(target_os = "linux")]
        {
            // EAGAIN when the counter is 0 already: nothing to drain.
            let _ = self.fd.read();
        }
        if !queue_empty() {
            self.signal();
        }
    }
}
