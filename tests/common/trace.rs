//! A trace of a test's run: the library's log lines and the test's own
//! (operations, entries), each with its time and thread, kept for the report
//! of a failing seed.

use std::time::Instant;

use parking_lot::Mutex;

/// Lines with their times; at most `limit` are kept.
pub struct Trace {
    lines: Mutex<Vec<String>>,
    start: Mutex<Option<Instant>>,
    limit: usize,
}

impl Trace {
    /// An empty trace keeping at most `limit` lines (a `static`'s initializer).
    pub const fn new(limit: usize) -> Trace {
        Trace {
            lines: Mutex::new(Vec::new()),
            start: Mutex::new(None),
            limit,
        }
    }

    /// Adds a line, stamped with the time since the start and the thread's name.
    pub fn push(&self, line: String) {
        let t = self.start.lock().get_or_insert_with(Instant::now).elapsed();
        let thread = std::thread::current();
        let mut lines = self.lines.lock();
        if lines.len() < self.limit {
            lines.push(format!(
                "{:8.3} [{}] {line}",
                t.as_secs_f64(),
                thread.name().unwrap_or("?")
            ));
        }
    }

    /// Forgets every line; the clock starts again.
    pub fn reset(&self) {
        self.lines.lock().clear();
        *self.start.lock() = Some(Instant::now());
    }

    /// Seconds since the start.
    pub fn elapsed(&self) -> f64 {
        self.start.lock().map_or(0.0, |s| s.elapsed().as_secs_f64())
    }

    /// Every line, one a line.
    pub fn text(&self) -> String {
        self.lines.lock().join("\n")
    }
}

impl log::Log for Trace {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.target().starts_with("kube_tattler::") || m.level() <= log::Level::Warn
    }

    fn log(&self, r: &log::Record) {
        if r.target().starts_with("kube_tattler") {
            // The crate's lock promise: no log call with a lock held.
            kube_tattler::sync::log_call(r.file(), r.line());
        }
        if self.enabled(r.metadata()) && !r.target().starts_with("tattler_fakeapi") {
            self.push(format!("{} {}: {}", r.level(), r.target(), r.args()));
        }
    }

    fn flush(&self) {}
}
