//! Small pure helpers that are not worth a dependency.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Decodes standard base64 (with or without padding; white space ignored),
/// as kubeconfig `*-data` fields hold it.
pub(crate) fn base64_decode(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for (i, c) in s.bytes().enumerate() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return Err(format!("invalid base64 character at offset {i}")),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

/// Parses an RFC 3339 timestamp (`2026-11-29T17:30:20Z`, `…+02:00`,
/// fractional seconds allowed) into a point in time.
pub(crate) fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, min, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if b[13] != b':' || b[16] != b':' || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6
            && matches!(rest.as_bytes()[0], b'+' | b'-')
            && rest.as_bytes()[3] == b':' =>
        {
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            sign * (rest[1..3].parse::<i64>().ok()? * 3600 + rest[4..6].parse::<i64>().ok()? * 60)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64() {
        assert_eq!(base64_decode("aGVsbG8gd29ybGQ=").unwrap(), b"hello world");
        assert_eq!(base64_decode("aGVsbG8gd29ybGQ").unwrap(), b"hello world");
        assert_eq!(base64_decode("YQ==\nYg").unwrap(), b"a");
        assert_eq!(base64_decode("").unwrap(), b"");
        assert!(base64_decode("a*b").unwrap_err().contains("offset 1"));
    }

    #[test]
    fn quoted_parts_are_dropped() {
        assert_eq!(
            without_quoted(
                r#"invalid type: string "token:s3cr3t", expected struct User at line 3"#
            ),
            "invalid type: string …, expected struct User at line 3"
        );
        assert_eq!(
            without_quoted("invalid type: integer `20240917`, expected a string"),
            "invalid type: integer …, expected a string"
        );
    }

    #[test]
    fn rfc3339() {
        let t = |s| parse_rfc3339(s).map(|t| t.duration_since(UNIX_EPOCH).unwrap().as_secs());
        assert_eq!(t("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(t("2018-03-05T17:30:20-08:00"), Some(1_520_299_820));
        assert_eq!(t("2026-11-29T17:45:56.123456Z"), Some(1_795_974_356));
        assert_eq!(t("2000-02-29T00:00:00+01:00"), Some(951_778_800));
        assert_eq!(t("yesterday"), None);
        assert_eq!(t("2026-13-01T00:00:00Z"), None);
    }
}

/// A parser's message with every quoted part (`"…"` or `` `…` ``) replaced
/// by `…`: such messages quote the offending value, which may be a secret.
pub(crate) fn without_quoted(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut quote = None;
    for c in msg.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '`' => {
                quote = Some(c);
                out.push('…');
            }
            None => out.push(c),
        }
    }
    out
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Bytes of `w` equal to `b` have their top bit set in the result; the lowest
/// set bit marks the first one exactly (the classic has-zero-byte trick).
#[inline]
fn eq_mask(w: u64, b: u8) -> u64 {
    let x = w ^ (LO * u64::from(b));
    x.wrapping_sub(LO) & !x & HI
}

/// The first `"`, `\\` or control character (below 0x20) in `hay`: the
/// bytes that end a run of plain JSON string content.
#[inline]
pub(crate) fn find_string_special(hay: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i + 8 <= hay.len() {
        let w = u64::from_le_bytes(hay[i..i + 8].try_into().expect("8 bytes"));
        // Bytes below 0x20 (bytes of 0x80 and up never match: !w clears them).
        let control = w.wrapping_sub(LO * 0x20) & !w & HI;
        let m = eq_mask(w, b'"') | eq_mask(w, b'\\') | control;
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    hay[i..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|p| i + p)
}

#[cfg(test)]
mod find_tests {
    #[test]
    fn string_specials_agree_with_a_plain_search() {
        let text: Vec<u8> = (0..400u32)
            .map(|i| {
                [b'a', b'"', 0x1f, b'\\', 0x20, 0x7f, 0x80, 0x9f, 0x00, b'x']
                    [(i * 13 % 17 % 10) as usize]
            })
            .collect();
        for start in 0..text.len() {
            let hay = &text[start..];
            let want = hay
                .iter()
                .position(|&c| c == b'"' || c == b'\\' || c < 0x20);
            assert_eq!(super::find_string_special(hay), want, "{start}");
        }
    }
}
