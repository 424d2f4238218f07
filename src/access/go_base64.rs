//! Base64 as Go reads and writes it for kubeconfig `*-data` fields and
//! proxy credentials: strict, and no error quotes the text (it may be a key).

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
