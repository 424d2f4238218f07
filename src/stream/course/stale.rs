//! When the consumer is told a resource is not current: the Stale policy,
//! pure. The course keeps whether it was told already; this says, for one
//! request's cause and the step decided on it, what the notice would be.

use crate::api::end::End;
use crate::entry::Reason;
use crate::stream::course::vocabulary::{Next, Notice, Step};

/// Why a request failed, as the consumer is told it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Cause {
    /// Not a failure: no notice.
    #[default]
    None,
    /// No answer: a failed connect, a broken connection.
    Unreachable(String),
    /// An answer worth retrying: its status.
    Refused(u16, String),
    /// Nothing came for the idle timeout.
    Silent(String),
    /// The credentials could not be had.
    Credentials(String),
}

impl Cause {
    /// The cause of a request that ended with `end`.
    pub(crate) fn of(end: &End) -> Cause {
        match end {
            End::Refused { code, why, .. } => Cause::Refused(*code, why.clone()),
            End::Silent(why) => Cause::Silent(why.clone()),
            End::NoCredentials(why) => Cause::Credentials(why.clone()),
            End::Retry(why, _) | End::Broke(why) => Cause::Unreachable(why.clone()),
            _ => Cause::None,
        }
    }
}

/// The notice a request owes the consumer, if it was not told already: a
/// re-sync is told at once; a failure that pauses the stream is told when
/// the server did not answer 200 (`answered`: refused, unreachable, an
/// error status) or was silent past the idle timeout. A connection that
/// broke after an answer (a load balancer's cut) is no outage: its
/// reconnect tells, if it fails; watches that keep ending at once re-sync,
/// which tells.
pub(crate) fn owed(cause: Cause, step: &Step, answered: bool) -> Option<Notice> {
    let pausing = matches!(step.next, Next::Pause { .. });
    let (reason, code, message) = match cause {
        _ if step.resync => (
            Reason::Resyncing,
            0,
            step.why
                .clone()
                .unwrap_or_else(|| "a new full state".into()),
        ),
        Cause::Refused(429, why) if pausing => (Reason::Throttled, 429, why),
        Cause::Refused(code, why) if pausing => (Reason::Refused, code, why),
        Cause::Silent(why) if pausing => (Reason::Silent, 0, why),
        Cause::Credentials(why) if pausing => (Reason::Credentials, 0, why),
        Cause::Unreachable(why) if pausing && !answered => (Reason::Unreachable, 0, why),
        _ => return None,
    };
    Some(Notice {
        reason,
        code,
        message,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn step(next: Next, resync: bool) -> Step {
        Step {
            next,
            resync,
            reload: false,
            why: Some("why".into()),
            unreachable: false,
            notice: None,
        }
    }

    #[test]
    fn the_notice_each_cause_owes() {
        let pause = Next::Pause {
            failures: 1,
            at_least: Duration::ZERO,
            syncs: 0,
        };
        let s = |r: &str| r.to_string();
        type Row<'a> = (Cause, Step, bool, Option<(Reason, u16, &'a str)>);
        let rows: Vec<Row> = vec![
            // A re-sync is told whatever the cause.
            (
                Cause::None,
                step(Next::Go, true),
                true,
                Some((Reason::Resyncing, 0, "why")),
            ),
            (
                Cause::Refused(503, s("x")),
                step(pause.clone(), true),
                false,
                Some((Reason::Resyncing, 0, "why")),
            ),
            // A failure that pauses.
            (
                Cause::Refused(429, s("slow")),
                step(pause.clone(), false),
                true,
                Some((Reason::Throttled, 429, "slow")),
            ),
            (
                Cause::Refused(503, s("down")),
                step(pause.clone(), false),
                true,
                Some((Reason::Refused, 503, "down")),
            ),
            (
                Cause::Silent(s("quiet")),
                step(pause.clone(), false),
                true,
                Some((Reason::Silent, 0, "quiet")),
            ),
            (
                Cause::Credentials(s("exec")),
                step(pause.clone(), false),
                false,
                Some((Reason::Credentials, 0, "exec")),
            ),
            (
                Cause::Unreachable(s("refused")),
                step(pause.clone(), false),
                false,
                Some((Reason::Unreachable, 0, "refused")),
            ),
            // A cut after an answer is no outage.
            (
                Cause::Unreachable(s("cut")),
                step(pause.clone(), false),
                true,
                None,
            ),
            // Nothing that goes on at once is told.
            (
                Cause::Refused(503, s("x")),
                step(Next::Go, false),
                false,
                None,
            ),
            (Cause::None, step(pause, false), false, None),
            (
                Cause::Unreachable(s("x")),
                step(Next::End(None), false),
                false,
                None,
            ),
        ];
        for (cause, step, answered, want) in rows {
            let got = owed(cause.clone(), &step, answered);
            let got = got.as_ref().map(|n| (n.reason, n.code, n.message.as_str()));
            assert_eq!(got, want, "{cause:?} {step:?} answered {answered}");
        }
    }
}
