//! What the server said, turned into how the request ended: whether an
//! answer's status is a success ([`succeeded`]), an HTTP answer that is
//! not (by its status, the server's `Status` body and its hint
//! of when to come back), and an ERROR event inside a 200 stream (by the
//! same rules: 410 and the resourceVersion too large mean the same in both).

use std::time::{Duration, SystemTime};

use crate::api::end::End;
use crate::entry::ErrorInfo;
use crate::wire::decode::Status;
use crate::wire::request::Asking;

/// A server's hint is followed up to this long (a later one would park a
/// stream for hours on one answer).
pub(crate) const MAX_HINT: Duration = Duration::from_secs(300);

/// The `Retry-After` header: seconds, or an HTTP date (IMF-fixdate, the form
/// RFC 9110 requires of senders). `None` when absent or unreadable.
pub(crate) fn retry_after(header: Option<&str>, now: SystemTime) -> Option<Duration> {
    let v = header?.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs).min(MAX_HINT));
    }
    let at = crate::wire::dates::http_date(v)?;
    Some(
        at.duration_since(now)
            .unwrap_or(Duration::ZERO)
            .min(MAX_HINT),
    )
}

/// Whether an answer with `code` to a request for `what` is a success, as
/// client-go takes it: a watch only with 200 (`Request.Watch` opens its
/// stream on 200 alone), any other GET with 200–206 (`transformResponse`
/// errs below 200 and above 206 Partial Content).
pub(crate) fn succeeded(code: u16, what: Asking) -> bool {
    match what {
        Asking::Objects => code == 200,
        Asking::List | Asking::Document | Asking::Discovery(_) => (200..=206).contains(&code),
    }
}

/// How a request answered with `code` ended. `status` is the body's Status
/// (its code 0 when the body was not one), `hint` the `Retry-After` header.
pub(crate) fn classify(code: u16, status: Status, hint: Option<Duration>, reloadable: bool) -> End {
    // The later of the two hints the server may give.
    let body_hint = status
        .retry_after_secs
        .map(|s| Duration::from_secs(u64::from(s)));
    let hint = hint.max(body_hint).map(|h| h.min(MAX_HINT));
    let reason = if status.reason.is_empty() {
        format!("HTTP {code}")
    } else {
        status.reason.clone()
    };
    let info = ErrorInfo::server(code, reason, status.message.clone());
    match code {
        410 => End::Expired,
        400 | 422 => End::Rejected(info),
        401 => End::Unauthorized { info, reloadable },
        // Not served (yet): a CRD being established, an API being added.
        404 => End::Refused {
            code,
            why: format!("not served (404 {})", status.message),
            hint,
        },
        504 if status.rv_too_large => End::TooLarge(hint),
        429 | 503 => End::Refused {
            code,
            why: format!("server busy ({code} {})", status.message),
            hint,
        },
        500..=599 => End::Refused {
            code,
            why: format!("server error {code}: {}", status.message),
            hint,
        },
        _ => End::Fatal(info),
    }
}

/// How a watch ended on an ERROR event carrying `status`; `initial`: the
/// stream's full state is not complete yet (an ERROR during a watch-list's
/// initial events is what an etcd too old for watch-list sends).
pub(crate) fn error_event(status: &Status, initial: bool) -> End {
    let hint = status
        .retry_after_secs
        .map(|s| Duration::from_secs(u64::from(s)).min(MAX_HINT));
    match status.code {
        410 => End::Expired,
        504 if status.rv_too_large => End::TooLarge(hint),
        _ => {
            let why = format!(
                "the server sent an error event: {} {} {}",
                status.code, status.reason, status.message
            );
            if initial {
                End::InitialError(why)
            } else {
                End::Retry(why, hint)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn retry_after_in_seconds_or_as_a_date_bounded() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        let ra = |h: &str| retry_after(Some(h), now);
        assert_eq!(ra("0"), Some(Duration::ZERO));
        assert_eq!(ra(" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(ra("86400"), Some(MAX_HINT));
        assert_eq!(
            ra("Sun, 06 Nov 1994 08:50:07 GMT"),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            ra("Sun, 06 Nov 1994 08:00:00 GMT"),
            Some(Duration::ZERO),
            "in the past"
        );
        assert_eq!(
            ra("Tue, 29 Feb 2000 00:00:00 GMT").map(|d| d == MAX_HINT),
            Some(true)
        );
        for bad in [
            "soon",
            "-1",
            "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 UTC",
        ] {
            assert_eq!(ra(bad), None, "{bad}");
        }
        assert_eq!(retry_after(None, now), None);
    }

    #[test]
    fn a_list_succeeds_with_200_to_206_and_a_watch_with_200_alone() {
        let kinds = [
            Asking::Objects,
            Asking::List,
            Asking::Document,
            Asking::Discovery("application/json"),
        ];
        // (code, watch, everything else)
        for (code, watch, other) in [
            (100, false, false),
            (199, false, false),
            (200, true, true),
            (201, false, true),
            (203, false, true),
            (204, false, true),
            (206, false, true),
            (207, false, false),
            (226, false, false),
            (299, false, false),
            (304, false, false),
            (410, false, false),
        ] {
            for what in kinds {
                let want = if what == Asking::Objects {
                    watch
                } else {
                    other
                };
                assert_eq!(succeeded(code, what), want, "{code} {what:?}");
            }
        }
    }

    #[test]
    fn statuses_decide_the_end() {
        let st = |code: u16, reason: &str, retry: Option<u32>, too_large: bool| Status {
            code,
            reason: reason.into(),
            message: "m".into(),
            retry_after_secs: retry,
            rv_too_large: too_large,
        };
        let secs = Duration::from_secs;
        assert_eq!(
            classify(410, st(410, "Expired", None, false), None, false),
            End::Expired
        );
        assert!(
            matches!(classify(422, st(422, "Invalid", None, false), None, false), End::Rejected(i) if i.reason == "Invalid")
        );
        assert!(
            matches!(classify(401, st(0, "", None, false), None, true), End::Unauthorized { reloadable: true, info } if info.reason == "HTTP 401")
        );
        assert_eq!(
            classify(
                429,
                st(429, "TooManyRequests", Some(2), false),
                Some(secs(5)),
                false
            ),
            End::Refused {
                code: 429,
                why: "server busy (429 m)".into(),
                hint: Some(secs(5))
            }
        );
        assert_eq!(
            classify(503, st(0, "", Some(9), false), Some(Duration::ZERO), false),
            End::Refused {
                code: 503,
                why: "server busy (503 m)".into(),
                hint: Some(secs(9))
            },
            "the later hint wins"
        );
        assert_eq!(
            classify(504, st(504, "Timeout", Some(1), true), None, false),
            End::TooLarge(Some(secs(1)))
        );
        assert!(
            matches!(classify(500, st(0, "", None, false), None, false), End::Refused { code: 500, why, hint: None } if why.contains("500"))
        );
        assert!(
            matches!(classify(404, st(404, "NotFound", None, false), None, false), End::Refused { code: 404, why, hint: None } if why.contains("404"))
        );
        assert!(
            matches!(classify(403, st(403, "Forbidden", None, false), None, false), End::Fatal(i) if i.code == 403 && i.ended)
        );
        assert!(
            matches!(classify(302, st(0, "", None, false), None, false), End::Fatal(i) if i.reason == "HTTP 302")
        );
    }

    #[test]
    fn error_events_decide_the_end_as_statuses_do() {
        let st = |code: u16, retry: Option<u32>, too_large: bool| Status {
            code,
            reason: "R".into(),
            message: "m".into(),
            retry_after_secs: retry,
            rv_too_large: too_large,
        };
        let why = |code: u16| format!("the server sent an error event: {code} R m");
        let secs = Duration::from_secs;
        // (status, initial) -> end
        let rows = [
            (st(410, None, false), false, End::Expired),
            (st(410, None, false), true, End::Expired),
            (st(504, Some(2), true), false, End::TooLarge(Some(secs(2)))),
            (st(504, Some(2), true), true, End::TooLarge(Some(secs(2)))),
            (st(504, None, false), false, End::Retry(why(504), None)),
            (
                st(500, Some(9), false),
                false,
                End::Retry(why(500), Some(secs(9))),
            ),
            (
                st(500, Some(86_400), false),
                false,
                End::Retry(why(500), Some(MAX_HINT)),
            ),
            (st(500, None, false), true, End::InitialError(why(500))),
        ];
        for (status, initial, want) in rows {
            assert_eq!(error_event(&status, initial), want, "{status:?} {initial}");
        }
    }
}
