//! A stream's pacing: how long it waits: a full-jitter backoff over failures in a row,
//! the request budget's equal-jitter wait before a full state, and random
//! watch timeouts so that streams do not all reconnect at once. One small
//! seeded generator (xorshift64*: plenty for jitter, no dependency).

use std::time::{Duration, SystemTime};

use crate::config::Backoff;

/// One stream's pacing: its backoff settings and a small seeded generator.
pub(crate) struct Pacing {
    backoff: Backoff,
    state: u64,
}

impl Pacing {
    /// Seeded from the stream's name, the time and the thread.
    pub(crate) fn new(name: &str, backoff: Backoff) -> Pacing {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        name.hash(&mut h);
        SystemTime::now().hash(&mut h);
        std::thread::current().id().hash(&mut h);
        Pacing::seeded(h.finish(), backoff)
    }

    fn seeded(seed: u64, backoff: Backoff) -> Pacing {
        Pacing {
            backoff,
            state: seed | 1,
        }
    }

    /// A random watch timeout in 290..=600 s.
    pub(crate) fn timeout_secs(&mut self) -> u32 {
        290 + (self.random() % 311) as u32
    }

    /// Full jitter: uniform in 0..=min(max, initial * 2^(failures-1)).
    pub(crate) fn backoff(&mut self, failures: u32) -> Duration {
        let cap = self.backoff.cap(failures);
        let ms = cap.as_millis().max(1) as u64;
        Duration::from_millis(self.random() % (ms + 1))
    }

    /// The wait after `failures` requests in a row the server did not
    /// answer (refused or failed connections): uniform in cap..=2·cap of
    /// the backoff, as client-go's reflector waits (factor 2, jitter 1.0),
    /// so that an outage costs the apiserver no more connection attempts
    /// than it does; a stream of the reader that gets through wakes the
    /// others (`Stream::pause_unreachable`).
    pub(crate) fn unreachable(&mut self, failures: u32) -> Duration {
        let cap = self.backoff.cap(failures);
        cap + self.jitter(cap)
    }

    /// The request budget's wait before a full state that follows `syncs`
    /// others without healthy watching: equal jitter, uniform in
    /// cap/2..=cap of the backoff of `syncs` failures, so that the bound
    /// holds whatever the draw (docs/limits.md: "Requests").
    pub(crate) fn budget(&mut self, syncs: u32) -> Duration {
        if syncs == 0 {
            return Duration::ZERO;
        }
        let cap = self.backoff.cap(syncs);
        let half = cap / 2;
        let ms = (cap - half).as_millis() as u64;
        half + Duration::from_millis(self.random() % (ms + 1))
    }

    /// Uniform in 0..=max: to spread streams woken together.
    pub(crate) fn jitter(&mut self, max: Duration) -> Duration {
        Duration::from_millis(self.random() % (max.as_millis() as u64 + 1))
    }

    fn random(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_stay_within_their_bounds() {
        let b = Backoff::default();
        let mut j = Pacing::seeded(7, b);
        for _ in 0..10_000 {
            assert!(j.backoff(1) <= Duration::from_millis(800));
            assert!(j.backoff(40) <= Duration::from_secs(30));
            let first = j.budget(1);
            assert!((Duration::from_millis(400)..=Duration::from_millis(800)).contains(&first));
            let late = j.budget(9);
            assert!((Duration::from_secs(15)..=Duration::from_secs(30)).contains(&late));
            assert!((290..=600).contains(&j.timeout_secs()));
        }
        assert_eq!(j.budget(0), Duration::ZERO);
        // The bound docs/limits.md states: at most 4 full states in any 3 s.
        let mut at = Duration::ZERO;
        let mut n = 1;
        loop {
            at += j.budget(n);
            if at >= Duration::from_secs(3) {
                break;
            }
            n += 1;
        }
        assert!(n <= 4, "{n} full states within 3 s");
    }

    #[test]
    fn an_unreachable_server_is_tried_as_client_go_tries_it() {
        let mut j = Pacing::seeded(11, Backoff::default());
        for _ in 0..10_000 {
            let first = j.unreachable(1);
            assert!((Duration::from_millis(800)..=Duration::from_millis(1600)).contains(&first));
            let late = j.unreachable(40);
            assert!((Duration::from_secs(30)..=Duration::from_secs(60)).contains(&late));
        }
        // The bound docs/limits.md states: at most 7 attempts in a 60 s
        // outage (the first at its start), however the draws fall.
        let mut at = Duration::ZERO;
        let mut attempts = 1;
        while at < Duration::from_secs(60) {
            at += j.backoff.cap(attempts);
            if at < Duration::from_secs(60) {
                attempts += 1;
            }
        }
        assert_eq!(attempts, 7, "the fewest waits: each at its cap");
    }
}
