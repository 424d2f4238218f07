//! When a run gives up: a resource without its first full state once the
//! `--request-timeout` has passed, if it is failing (its stream retries) or
//! silent (no byte came). One still receiving is a long sync, not a
//! failure: a 100,000-pod watch-list takes a minute. Pure.
//!
//! The library retries for ever and says so only in `StreamStats`
//! (`last_error`, `bytes`); a "not current" signal of its own would replace
//! this polling.

use std::time::Duration;

/// What the verdict needs of one stream's stats.
#[derive(Debug, Clone, Copy)]
pub struct Stream<'a> {
    /// `group/version/resource`, or the name as given until discovery resolves it.
    pub resource: &'a str,
    /// It has had a full state since the run began.
    pub synced_once: bool,
    /// It failed for good (its Error entry says why).
    pub failed: bool,
    /// Body bytes received.
    pub bytes: u64,
    /// Why it last retried.
    pub last_error: Option<&'a str>,
}

/// Why the run fails after `waited` with `limit`, if it does: the first
/// overdue stream's reason, in one line. `discovered` is false while a
/// wildcard (`--all`) has found nothing.
pub fn overdue(
    streams: &[Stream],
    discovered: bool,
    waited: Duration,
    limit: Duration,
) -> Option<String> {
    if waited < limit {
        return None;
    }
    let within = go_duration(limit);
    if !discovered {
        return Some(format!(
            "no resource found by discovery within {within} (is the server reachable?)"
        ));
    }
    let late: Vec<String> = streams
        .iter()
        .filter(|s| !s.synced_once && !s.failed)
        .filter_map(|s| match s.last_error {
            Some(why) => Some(format!(
                "{}: no full state within {within}: {why}",
                s.resource
            )),
            None if s.bytes == 0 => Some(format!(
                "{}: no answer from the server within {within}",
                s.resource
            )),
            None => None,
        })
        .collect();
    match late.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        [first, rest @ ..] => Some(format!("{first} (and {} more)", rest.len())),
    }
}

/// As Go prints a duration: `2s`, `1m30s`, `1h0m0s`, `1.5s`, `250ms`.
pub fn go_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = d.as_secs();
    let frac = d.subsec_millis();
    let s = if frac == 0 {
        format!("{}s", secs % 60)
    } else {
        let text = format!("{}.{frac:03}", secs % 60);
        format!("{}s", text.trim_end_matches('0'))
    };
    match (secs / 3600, secs / 60 % 60) {
        (0, 0) => s,
        (0, m) => format!("{m}m{s}"),
        (h, m) => format!("{h}h{m}m{s}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(2);

    fn stream(resource: &str) -> Stream<'_> {
        Stream {
            resource,
            synced_once: false,
            failed: false,
            bytes: 0,
            last_error: None,
        }
    }

    #[test]
    fn the_verdicts() {
        let refused = Stream {
            last_error: Some("connect: connection refused"),
            ..stream("v1/pods")
        };
        let receiving = Stream {
            bytes: 10,
            ..stream("v1/nodes")
        };
        let synced = Stream {
            synced_once: true,
            ..refused
        };
        let failed = Stream {
            failed: true,
            ..refused
        };
        let s = |streams: &[Stream], secs: u64| {
            overdue(streams, true, Duration::from_secs(secs), LIMIT)
        };
        assert_eq!(s(&[refused], 1), None, "too early");
        assert_eq!(
            s(&[refused], 2).as_deref(),
            Some("v1/pods: no full state within 2s: connect: connection refused")
        );
        assert_eq!(
            s(&[stream("v1/pods")], 3).as_deref(),
            Some("v1/pods: no answer from the server within 2s")
        );
        assert_eq!(
            s(&[receiving, synced, failed], 60),
            None,
            "a long sync, a synced one, an ended one"
        );
        assert_eq!(
            s(&[receiving, stream("v1/pods"), refused, synced], 2).as_deref(),
            Some("v1/pods: no answer from the server within 2s (and 1 more)")
        );
        assert_eq!(
            overdue(&[], false, LIMIT, LIMIT).as_deref(),
            Some("no resource found by discovery within 2s (is the server reachable?)")
        );
        assert_eq!(overdue(&[], true, LIMIT, LIMIT), None);
    }

    #[test]
    fn durations_as_go_prints_them() {
        let cases = [
            (250, "250ms"),
            (1_000, "1s"),
            (1_500, "1.5s"),
            (30_000, "30s"),
            (90_000, "1m30s"),
            (120_000, "2m0s"),
            (3_600_000, "1h0m0s"),
            (5_430_250, "1h30m30.25s"),
        ];
        for (ms, want) in cases {
            assert_eq!(go_duration(Duration::from_millis(ms)), want);
        }
    }
}
