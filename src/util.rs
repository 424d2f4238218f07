//! Small pure helpers: kubeconfig base64, RFC 3339 timestamps, and the
//! JSON string scan the scrubber uses.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;

/// Go's `base64.StdEncoding`, which decodes kubeconfig `*-data` fields
/// (`[]byte` in JSON): the standard alphabet, padding required, trailing
/// bits tolerated, `\r` and `\n` skipped, anything else refused.
const GO_STD: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(true),
);

/// Decodes standard base64 as Go does for kubeconfig `*-data` fields. The
/// error gives an offset, never the offending character (the text may be a
/// key).
pub(crate) fn base64_decode(s: &str) -> Result<Vec<u8>, String> {
    let text: Vec<u8> = s.bytes().filter(|b| !matches!(b, b'\r' | b'\n')).collect();
    GO_STD.decode(&text).map_err(|e| match e {
        base64::DecodeError::InvalidByte(at, _) => {
            format!("not valid base64 (bad character at offset {at})")
        }
        base64::DecodeError::InvalidLastSymbol { offset, .. } => {
            format!("not valid base64 (bad character at offset {offset})")
        }
        base64::DecodeError::InvalidLength(_) => "not valid base64 (truncated)".into(),
        base64::DecodeError::InvalidPadding => "not valid base64 (bad padding)".into(),
    })
}

/// Standard base64 with padding (HTTP basic auth, `provideClusterInfo`).
pub(crate) fn base64_encode(data: &[u8]) -> String {
    GO_STD.encode(data)
}

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
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hour * 3600 + min * 60 + sec - offset;
    let secs = u64::try_from(secs).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_as_strict_as_go() {
        assert_eq!(base64_decode("aGVsbG8gd29ybGQ=").unwrap(), b"hello world");
        assert_eq!(
            base64_decode("aGVs\nbG8g\r\nd29ybGQ=").unwrap(),
            b"hello world"
        );
        assert_eq!(base64_decode("").unwrap(), b"");
        // Go: "illegal base64 data at input byte 4" for each of these.
        for bad in [
            "YQ==garbage!!",
            "YQ==YQ==",
            "aGVsbG8gd29ybGQ",
            "a*b=",
            "aGVs bG8=",
            "-_-_",
        ] {
            assert!(base64_decode(bad).is_err(), "{bad:?} was accepted");
        }
        let e = base64_decode("c2Vj*mV0").unwrap_err();
        assert!(e.contains("offset 4") && !e.contains('*'), "{e}");
        for s in ["", "a", "ab", "abc", "user:p@ss", "\u{e9}t\u{e9}"] {
            assert_eq!(
                base64_decode(&base64_encode(s.as_bytes())).unwrap(),
                s.as_bytes()
            );
        }
        assert_eq!(base64_encode(b"user:pass"), "dXNlcjpwYXNz");
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

const LO: u64 = 0x0101_0101_0101_0101;
const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HI: u64 = 0x8080_8080_8080_8080;

/// The top bit of each byte of the result is set when that byte of `w` is
/// not zero (no carry crosses bytes, so every byte's answer is exact).
#[inline]
fn nonzero(w: u64) -> u64 {
    ((w & LOW7) + LOW7) | w
}

/// The bytes of `w` (eight bytes of a JSON string, little-endian) that end a
/// run of plain string content: `"`, `\\` and control characters (below
/// 0x20) have the top bit set in the result, and only they, so a caller can
/// go from one to the next without reading the word again.
#[inline]
pub(crate) fn string_specials(w: u64) -> u64 {
    let not_quote = nonzero(w ^ (LO * u64::from(b'"')));
    let not_backslash = nonzero(w ^ (LO * u64::from(b'\\')));
    // 0x20 and above: the low seven bits reach 0x80 with 0x60 added, or the top bit is set.
    let not_control = ((w & LOW7) + LO * 0x60) | w;
    !(not_quote & not_backslash & not_control) & HI
}

#[cfg(test)]
mod specials_tests {
    #[test]
    fn every_byte_is_judged_alone() {
        let special = |b: u8| b == b'"' || b == b'\\' || b < 0x20;
        let fillers = [
            b'a', b'"', 0x00, 0x1f, b'\\', 0x20, 0x7f, 0x80, 0xff, 0x21, 0x5d,
        ];
        for b in 0..=255u8 {
            for at in 0..8 {
                for &fill in &fillers {
                    let mut word = [fill; 8];
                    word[at] = b;
                    let m = super::string_specials(u64::from_le_bytes(word));
                    for (i, &c) in word.iter().enumerate() {
                        let set = m >> (i * 8 + 7) & 1 == 1;
                        assert_eq!(set, special(c), "byte {c:#x} at {i} of {word:x?}");
                    }
                    assert_eq!(m & !super::HI, 0);
                }
            }
        }
    }
}
