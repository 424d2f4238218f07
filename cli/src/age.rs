//! The AGE column: an object's `metadata.creationTimestamp` read as
//! Kubernetes writes it, and the time since shown as kubectl shows it. Pure.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `2026-12-02T07:47:45Z` (RFC 3339 in UTC, as `metav1.Time` writes it; a
/// fraction of a second is allowed and ignored).
pub fn parse_timestamp(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        let part = s.get(from..to)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    let tail = &s[19..];
    let tail = match tail.strip_prefix('.') {
        Some(frac) => frac.trim_start_matches(|c: char| c.is_ascii_digit()),
        None => tail,
    };
    let valid = tail == "Z"
        && (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && hour < 24
        && minute < 60
        && second < 61;
    if !valid {
        return None;
    }
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The time from `created` to `now` as kubectl's AGE column shows it
/// (`duration.HumanDuration` of k8s.io/apimachinery): `45s`, `3m12s`, `5h`,
/// `2d3h`, `400d`, `3y`. A clock up to a second behind is `0s`.
pub fn human(created: SystemTime, now: SystemTime) -> String {
    let secs: i64 = match now.duration_since(created) {
        Ok(d) => d.as_secs().min(i64::MAX as u64) as i64,
        Err(e) if e.duration() < Duration::from_secs(2) => 0,
        Err(_) => return "<invalid>".into(),
    };
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        return match secs % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_as_kubernetes_writes_them() {
        let at =
            |s: &str| parse_timestamp(s).map(|t| t.duration_since(UNIX_EPOCH).unwrap().as_secs());
        assert_eq!(at("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(at("2026-12-02T07:47:45Z"), Some(1_796_197_665));
        assert_eq!(at("2024-02-29T23:59:59Z"), Some(1_709_251_199));
        assert_eq!(at("2026-12-02T07:47:45.123456Z"), Some(1_796_197_665));
        for bad in [
            "",
            "2026-12-02",
            "2026-12-02T07:47:45",
            "2026-12-02T07:47:45+01:00",
            "2026-13-02T07:47:45Z",
            "2026-12-02T24:00:00Z",
            "2026-12-02 07:47:45Z",
            "20x6-12-02T07:47:45Z",
            "+026-12-02T07:47:45Z",
            "1969-12-31T23:59:59Z",
        ] {
            assert_eq!(at(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn ages_as_kubectl_shows_them() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        let age = |secs: u64| human(now - Duration::from_secs(secs), now);
        let cases = [
            (0, "0s"),
            (59, "59s"),
            (119, "119s"),
            (120, "2m"),
            (192, "3m12s"),
            (599, "9m59s"),
            (600, "10m"),
            (179 * 60 + 59, "179m"),
            (3 * 3600, "3h"),
            (7 * 3600 + 59 * 60, "7h59m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (51 * 3600, "2d3h"),
            (8 * 86_400, "8d"),
            (729 * 86_400, "729d"),
            (730 * 86_400, "2y"),
            (731 * 86_400, "2y1d"),
            (9 * 365 * 86_400, "9y"),
        ];
        for (secs, want) in cases {
            assert_eq!(age(secs), want, "{secs} s");
        }
        // A clock a little behind the server's.
        assert_eq!(human(now + Duration::from_millis(1500), now), "0s");
        assert_eq!(human(now + Duration::from_secs(5), now), "<invalid>");
    }
}
