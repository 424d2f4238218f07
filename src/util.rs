//! Small pure helpers: kubeconfig base64, RFC 3339 timestamps, and the
//! JSON string scan the scrubber uses.

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
