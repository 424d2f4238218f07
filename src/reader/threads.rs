//! Every thread tattler starts, started one way: named, on a known stack,
//! with every asynchronous signal blocked (they are the host's to take),
//! marked as tattler's own (a call from the log callback that would wait for
//! its own thread is refused), and a panic in it turned into an Error entry
//! (reason `InternalError`) rather than a thread that silently ends.

use std::cell::Cell;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::delivery::channel::{Out, Stop};
use crate::entry::{Entry, ErrorInfo, Reason, Resource};

/// A thread's stack. tattler's own use of it is small and bounded (decoding
/// is iterative: no input can make it recurse); most of it is for the
/// caller's code that runs there, the log callback and the transform.
/// (Rust's default for a spawned thread is the same 2 MiB.)
pub(crate) const STACK: usize = 2 << 20;

thread_local! {
    /// Set on every thread tattler starts: the log callback runs there, and
    /// a call that waits for tattler's threads would wait for itself.
    static TATTLER_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is one of tattler's own (the log callback runs there).
pub(crate) fn on_tattler_thread() -> bool {
    TATTLER_THREAD.with(Cell::get)
}

/// Where a thread's panic is reported: the resource it served (an empty one
/// for the reader's own threads), on the way out, honouring stop.
pub(crate) struct Report {
    pub resource: Arc<Resource>,
    pub out: Out,
    pub stop: Stop,
}

/// Starts `body` on a thread named `name`, with every asynchronous signal
/// blocked.
pub(crate) fn spawn(
    name: String,
    report: Report,
    body: impl FnOnce() + Send + 'static,
) -> std::io::Result<JoinHandle<()>> {
    let builder = std::thread::Builder::new()
        .name(name.clone())
        .stack_size(STACK);
    with_async_signals_blocked(|| {
        builder.spawn(move || {
            TATTLER_THREAD.with(|t| t.set(true));
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
            if let Err(panic) = result {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                log::error!("{name}: the thread panicked: {what}");
                let info = ErrorInfo::ours(
                    Reason::InternalError,
                    0,
                    format!("{name} panicked: {what}"),
                    true,
                );
                report
                    .out
                    .send(Entry::failure(report.resource, info), &report.stop);
            }
        })
    })
}

/// The signals that stay deliverable on tattler's threads: the synchronous
/// ones, which the kernel sends to the thread that caused them (a bad memory
/// access, a trap) and which cannot wait in a mask.
#[cfg(unix)]
const SYNCHRONOUS: [nix::sys::signal::Signal; 6] = {
    use nix::sys::signal::Signal::*;
    [SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS]
};

/// Runs `spawn` (a thread's start) with every asynchronous signal blocked
/// in the calling thread, then restores its mask. A new thread inherits its
/// creator's mask, so it starts with them blocked, with no window in which
/// one could land on it: a process-directed SIGTERM or SIGINT then goes to a
/// thread of the host's, whatever the order of the host's own
/// `sigprocmask`/`pthread_sigmask` and its first open. A signal arriving
/// during the call waits, pending, until the mask is restored (or goes to
/// another thread of the host's). Child processes are unaffected: the
/// standard library resets the mask of a process it spawns (an exec
/// credential plugin).
#[cfg(unix)]
pub(crate) fn with_async_signals_blocked<T>(spawn: impl FnOnce() -> T) -> T {
    use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow};
    let mut block = SigSet::all();
    for sig in SYNCHRONOUS {
        block.remove(sig);
    }
    let mut old = SigSet::empty();
    // Fails only for a bad `how`: then the thread starts with the caller's
    // mask, as before.
    let blocked = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&block), Some(&mut old)).is_ok();
    let result = spawn();
    if blocked {
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
    }
    result
}

/// No signal masks here.
#[cfg(not(unix))]
pub(crate) fn with_async_signals_blocked<T>(spawn: impl FnOnce() -> T) -> T {
    spawn()
}

/// The resource of an entry about the reader itself, not one resource.
pub(crate) fn reader_resource() -> Arc<Resource> {
    Arc::new(Resource {
        group: String::new(),
        version: String::new(),
        resource: String::new(),
        kind: String::new(),
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use nix::sys::signal::{pthread_sigmask, SigSet, SigmaskHow, Signal};

    /// The calling thread's signal mask.
    fn mask() -> SigSet {
        let mut now = SigSet::empty();
        pthread_sigmask(SigmaskHow::SIG_BLOCK, None, Some(&mut now)).unwrap();
        now
    }

    #[test]
    fn a_started_thread_blocks_every_asynchronous_signal_and_the_caller_keeps_its_mask() {
        let before = mask();
        let (tx, rx) = crossbeam_channel::bounded(1);
        let (entries, _keep) = crossbeam_channel::bounded(1);
        let report = Report {
            resource: reader_resource(),
            out: Out {
                tx: entries,
                control: Arc::new(crate::delivery::channel::ChannelControl::new(1 << 20)),
                term: None,
            },
            stop: Stop {
                all: crossbeam_channel::never(),
                own: crossbeam_channel::never(),
            },
        };
        let t = spawn("tattler-test".into(), report, move || {
            tx.send(mask()).unwrap();
        })
        .unwrap();
        let inside = rx.recv().unwrap();
        t.join().unwrap();
        for sig in [
            Signal::SIGTERM,
            Signal::SIGINT,
            Signal::SIGHUP,
            Signal::SIGQUIT,
            Signal::SIGUSR1,
            Signal::SIGUSR2,
            Signal::SIGCHLD,
            Signal::SIGPIPE,
            Signal::SIGALRM,
            Signal::SIGWINCH,
        ] {
            assert!(
                inside.contains(sig),
                "{sig} is not blocked on tattler's thread"
            );
        }
        for sig in SYNCHRONOUS {
            assert!(
                !inside.contains(sig),
                "{sig} is blocked on tattler's thread"
            );
        }
        let after = mask();
        for sig in Signal::iterator() {
            assert_eq!(
                before.contains(sig),
                after.contains(sig),
                "{sig}: the caller's mask changed"
            );
        }
    }
}
