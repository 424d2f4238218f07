//! Dates as the apiserver and HTTP write them: RFC 3339 (`metav1.Time`, an
//! exec credential's expiry) and the HTTP date of a `Retry-After`. One
//! civil-date conversion serves both.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Parses an RFC 3339 timestamp as Go's `time.Parse(time.RFC3339, …)` (and
/// so `metav1.Time`) does: `2026-11-29T17:30:20Z`, `…+02:00`, fractional
/// seconds allowed, every field range-checked (no `T99:99:99`, no Feb 31).
pub(crate) fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let d = b.get(r)?;
        if !d.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(d).ok()?.parse().ok()
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, min, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || min > 59
        || sec > 59
    {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &frac[digits..];
    }
    let offset = match rest.as_bytes() {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let two = |a: u8, b: u8| -> Option<i64> {
                (a.is_ascii_digit() && b.is_ascii_digit())
                    .then(|| i64::from(a - b'0') * 10 + i64::from(b - b'0'))
            };
            let (h, m) = (two(*h1, *h2)?, two(*m1, *m2)?);
            if h > 23 || m > 59 {
                return None;
            }
            let sign = if *sign == b'-' { -1 } else { 1 };
            sign * (h * 3600 + m * 60)
        }
        _ => return None,
    };
    from_civil(year, month, day, hour * 3600 + min * 60 + sec - offset)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`.
pub(crate) fn http_date(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 29 || &b[3..5] != b", " || &b[25..] != b" GMT" {
        return None;
    }
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    if !DAYS.contains(&&s[..3]) || b[7] != b' ' || b[11] != b' ' || b[16] != b' ' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let day = num(5..7)?;
    let month = MONTHS.iter().position(|m| *m == &s[8..11])? as i64 + 1;
    let year = num(12..16)?;
    if b[19] != b':' || b[22] != b':' {
        return None;
    }
    let (h, m, sec) = (num(17..19)?, num(20..22)?, num(23..25)?);
    if !(1..=days_in_month(year, month)).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    from_civil(year, month, day, h * 3600 + m * 60 + sec)
}

/// Seconds since the epoch of a civil date and time in UTC (Howard
/// Hinnant's days-from-civil); `None` before 1970.
fn from_civil(year: i64, month: i64, day: i64, secs_of_day: i64) -> Option<SystemTime> {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let secs = u64::try_from(days * 86_400 + secs_of_day).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

/// `t` as a `metav1.MicroTime` (a Lease's renewTime): RFC 3339 in UTC with
/// six fractional digits, `2026-12-02T11:00:00.000000Z`.
pub(crate) fn micro_time(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() as i64;
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        sod / 3600,
        sod / 60 % 60,
        sod % 60,
        since.subsec_micros()
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's
/// civil-from-days, the inverse of the days-from-civil in `from_civil`).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_time_is_what_the_apiserver_writes() {
        let t = UNIX_EPOCH + Duration::from_micros(1_796_209_200_000_042);
        assert_eq!(micro_time(t), "2026-12-02T11:00:00.000042Z");
        assert_eq!(
            parse_rfc3339(&micro_time(t)),
            Some(UNIX_EPOCH + Duration::from_secs(1_796_209_200))
        );
    }

    #[test]
    fn rfc3339() {
        let t = |s| parse_rfc3339(s).map(|t| t.duration_since(UNIX_EPOCH).unwrap().as_secs());
        assert_eq!(t("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(t("2018-03-05T17:30:20-08:00"), Some(1_520_299_820));
        assert_eq!(t("2026-11-29T17:45:56.123456Z"), Some(1_795_974_356));
        assert_eq!(t("2000-02-29T00:00:00+01:00"), Some(951_778_800));
        assert_eq!(t("2024-12-31T23:59:59Z"), Some(1_735_689_599));
        for bad in [
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2026-00-01T00:00:00Z",
            "2026-01-01T99:99:99Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T23:60:00Z",
            "2026-01-01T23:59:60Z",
            "2026-02-31T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-01-01T00:00:00",
            "2026-01-01T00:00:00.Z",
            "2026-01-01T00:00:00+25:00",
            "2026-01-01T00:00:00+01:60",
            "2026-01-01T00:00:00+0100",
            "2026-01-01 00:00:00Z",
            "+026-01-01T00:00:00Z",
            "2026-01-01T0a:00:00Z",
            "1969-12-31T23:59:59Z",
        ] {
            assert_eq!(t(bad), None, "{bad}");
        }
    }
}
