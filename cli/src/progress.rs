//! The progress line of a long sync (objects so far, objects per second),
//! at most one a second. Pure: the caller says when it is and how many
//! objects came, and writes the line where it belongs (stderr, when that is
//! a terminal).

use std::time::{Duration, Instant};

/// How often a line may come.
pub const EVERY: Duration = Duration::from_secs(1);

/// Rate-limits and words the progress lines of one sync.
#[derive(Debug)]
pub struct Progress {
    start: Instant,
    /// When the last line was made, and the count it showed.
    last: Option<(Instant, u64)>,
}

impl Progress {
    /// A sync that started at `start`.
    pub fn new(start: Instant) -> Progress {
        Progress { start, last: None }
    }

    /// The line to show at `now` with `objects` received so far, when a
    /// second has passed since the last one (or since the start): the count
    /// and the rate over that second.
    pub fn tick(&mut self, now: Instant, objects: u64) -> Option<String> {
        let (then, before) = self.last.unwrap_or((self.start, 0));
        let span = now.checked_duration_since(then)?;
        if span < EVERY {
            return None;
        }
        self.last = Some((now, objects));
        let rate = objects.saturating_sub(before) as f64 / span.as_secs_f64();
        Some(format!(
            "syncing: {} objects, {}/s",
            thousands(objects),
            thousands(rate.round() as u64)
        ))
    }

    /// Whether a line was shown (and so needs an end).
    pub fn shown(&self) -> bool {
        self.last.is_some()
    }

    /// The last line, once every resource has its full state.
    pub fn done(&self, now: Instant, objects: u64) -> String {
        let took = now.saturating_duration_since(self.start).as_secs_f64();
        format!("synced {} objects in {took:.1}s", thousands(objects))
    }
}

/// `12,345,678`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_a_second_with_the_rate_over_it() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut p = Progress::new(t0);
        assert_eq!(p.tick(at(0), 0), None);
        assert_eq!(p.tick(at(999), 5_000), None);
        assert!(!p.shown());
        assert_eq!(
            p.tick(at(1000), 5_000).as_deref(),
            Some("syncing: 5,000 objects, 5,000/s")
        );
        assert!(p.shown());
        assert_eq!(p.tick(at(1500), 6_000), None);
        assert_eq!(
            p.tick(at(3000), 1_234_567).as_deref(),
            Some("syncing: 1,234,567 objects, 614,784/s")
        );
        assert_eq!(
            p.done(at(3300), 1_300_000),
            "synced 1,300,000 objects in 3.3s"
        );
    }

    #[test]
    fn thousands_are_grouped() {
        for (n, want) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (100_000, "100,000"),
        ] {
            assert_eq!(thousands(n), want);
        }
    }
}
