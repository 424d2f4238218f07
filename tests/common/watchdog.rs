//! A time limit that catches a hang: past it, the whole test binary exits
//! with 101 and one line naming the test and its limit. Limits are for hangs,
//! never for a correct run on a busy machine, and never include a one-time
//! build (the real cluster's timers start inside its fixture, once it is up).
//!
//! The line goes to the terminal: written to the stderr handle, not with
//! `eprintln!`, which the test harness captures and a process exit discards.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Armed until dropped.
pub struct Watchdog(Arc<AtomicBool>);

impl Watchdog {
    /// Arms a limit of `limit` for the test `name`.
    pub fn new(name: &str, limit: Duration) -> Watchdog {
        Watchdog::with_cleanup(name, limit, || {})
    }

    /// As [`Watchdog::new`]; `cleanup` runs before the exit (stopping a
    /// cluster's processes, which would outlive the test binary).
    pub fn with_cleanup(
        name: &str,
        limit: Duration,
        cleanup: impl FnOnce() + Send + 'static,
    ) -> Watchdog {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let name = name.to_string();
        std::thread::spawn(move || {
            let start = Instant::now();
            while start.elapsed() < limit {
                if flag.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let line = format!(
                "\nwatchdog: test {name:?} still running after its limit of {limit:?}: taken as hung; exiting 101\n"
            );
            let _ = std::io::stderr().write_all(line.as_bytes());
            cleanup();
            std::process::exit(101);
        });
        Watchdog(done)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
