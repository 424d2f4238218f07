//! Go's `encoding/json` output, byte for byte, as the apiserver writes it:
//! strings HTML-safe (`<`, `>`, `&`, U+2028 and U+2029 escaped, each
//! invalid UTF-8 byte as `\ufffd`), integers, a `Marshaler`'s raw JSON
//! (`FieldsV1`) compacted, and objects written key by key. The leaf the
//! protobuf-to-JSON writers (`metav1`, `envelope`, `proto_json`) and the
//! schema share.

use crate::wire::protobuf::PbError;

/// A JSON object being written: keys in the order given, commas between.
pub(crate) struct Obj<'o> {
    pub(crate) out: &'o mut Vec<u8>,
    first: bool,
}

impl<'o> Obj<'o> {
    pub(crate) fn new(out: &'o mut Vec<u8>) -> Obj<'o> {
        out.push(b'{');
        Obj { out, first: true }
    }

    pub(crate) fn key(&mut self, k: &str) {
        self.key_bytes(k.as_bytes());
    }

    pub(crate) fn key_bytes(&mut self, k: &[u8]) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        string(self.out, k);
        self.out.push(b':');
    }

    pub(crate) fn str_omitempty(&mut self, k: &str, v: &[u8]) {
        if !v.is_empty() {
            self.key(k);
            string(self.out, v);
        }
    }

    pub(crate) fn end(self) {
        self.out.push(b'}');
    }
}

/// An integer as Go writes it.
pub(crate) fn int(out: &mut Vec<u8>, v: i64) {
    // Digits into a stack buffer: no allocation per number.
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    let mut u = v.unsigned_abs();
    loop {
        at -= 1;
        buf[at] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    if v < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[at..]);
}

/// `FieldsV1`'s raw JSON as `encoding/json` writes a `Marshaler`'s output:
/// checked, then compacted with HTML-safe escaping. No bytes are `null`.
pub(crate) fn raw_json(out: &mut Vec<u8>, raw: &[u8]) -> Result<(), PbError> {
    if raw.is_empty() {
        out.extend_from_slice(b"null");
        return Ok(());
    }
    if !matches!(
        raw[0],
        b'n' | b'{' | b'[' | b'"' | b't' | b'f' | b'-' | b'0'..=b'9' | b'\t' | b'\r' | b'\n' | b' '
    ) {
        return Err(PbError::new(
            "raw bytes that are not JSON (CBOR? protobuf?)",
        ));
    }
    if serde_json::from_slice::<serde::de::IgnoredAny>(raw).is_err() {
        return Err(PbError::new("raw bytes that are not valid JSON"));
    }
    // The apiserver stores it compact, and it rarely holds what Go escapes.
    if !raw
        .iter()
        .any(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'<' | b'>' | b'&' | 0xe2))
    {
        out.extend_from_slice(raw);
        return Ok(());
    }
    let mut in_string = false;
    let mut escaped = false;
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        i += 1;
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            continue;
        } else if b == b'"' {
            in_string = true;
        }
        match b {
            b'<' => out.extend_from_slice(b"\\u003c"),
            b'>' => out.extend_from_slice(b"\\u003e"),
            b'&' => out.extend_from_slice(b"\\u0026"),
            0xe2 if raw.get(i) == Some(&0x80) && matches!(raw.get(i + 1), Some(0xa8 | 0xa9)) => {
                out.extend_from_slice(if raw[i + 1] == 0xa8 {
                    b"\\u2028"
                } else {
                    b"\\u2029"
                });
                i += 2;
            }
            _ => out.push(b),
        }
    }
    Ok(())
}

/// The bytes [`string`] looks at twice: those Go escapes, and 0xE2 (the
/// lead byte of U+2028 and U+2029).
const NEEDS_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[b'<' as usize] = true;
    t[b'>' as usize] = true;
    t[b'&' as usize] = true;
    t[0xe2] = true;
    t
};

/// A string as Go's `encoding/json` writes it (HTML-safe).
pub(crate) fn string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    // Most strings are printable ASCII with nothing to escape: one copy.
    // (A fold of comparisons the compiler vectorises.)
    let plain = s.iter().fold(true, |ok, &b| {
        ok & (0x20..0x80).contains(&b)
            & (b != b'"')
            & (b != b'\\')
            & (b != b'<')
            & (b != b'>')
            & (b != b'&')
    });
    if plain {
        out.extend_from_slice(s);
        out.push(b'"');
        return;
    }
    // Valid UTF-8 (checked at once, fast) is one chunk; otherwise each
    // invalid byte becomes U+FFFD between valid chunks.
    if let Ok(v) = std::str::from_utf8(s) {
        escape_valid(out, v.as_bytes());
        out.push(b'"');
        return;
    }
    for chunk in s.utf8_chunks() {
        escape_valid(out, chunk.valid().as_bytes());
        for _ in chunk.invalid() {
            out.extend_from_slice(b"\\ufffd");
        }
    }
    out.push(b'"');
}

/// Valid UTF-8 with Go's escapes, appended.
fn escape_valid(out: &mut Vec<u8>, v: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    {
        // Runs of bytes that need no escape are copied whole.
        let (mut run, mut i) = (0, 0);
        while i < v.len() {
            let b = v[i];
            if !NEEDS_ESCAPE[usize::from(b)] {
                i += 1;
                continue;
            }
            let escape: &[u8] = match b {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0x08 => b"\\b",
                0x0c => b"\\f",
                b'<' | b'>' | b'&' | 0..=0x1f => b"",
                // U+2028, U+2029 (valid UTF-8 here, so these bytes are they)
                0xe2 if v.get(i + 1) == Some(&0x80) && v.get(i + 2) == Some(&0xa8) => b"\\u2028",
                0xe2 if v.get(i + 1) == Some(&0x80) && v.get(i + 2) == Some(&0xa9) => b"\\u2029",
                _ => {
                    i += 1;
                    continue;
                }
            };
            out.extend_from_slice(&v[run..i]);
            if escape.is_empty() {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
                i += 1;
            } else {
                out.extend_from_slice(escape);
                i += if b == 0xe2 { 3 } else { 1 };
            }
            run = i;
        }
        out.extend_from_slice(&v[run..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn go(s: &[u8]) -> String {
        let mut out = Vec::new();
        string(&mut out, s);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_are_escaped_as_go_does() {
        let cases: &[(&[u8], &str)] = &[
            (b"plain", r#""plain""#),
            (b"a<b>&c", r#""a\u003cb\u003e\u0026c""#),
            (b"q\"\\", r#""q\"\\""#),
            (
                b"\n\r\t\x08\x0c\x01\x1f\x7f",
                "\"\\n\\r\\t\\b\\f\\u0001\\u001f\x7f\"",
            ),
            (
                "é ü \u{2028}x\u{2029}".as_bytes(),
                "\"é ü \\u2028x\\u2029\"",
            ),
            (b"a\xffb", r#""a\ufffdb""#),
            // Go's DecodeRune: each byte of a bad sequence is one U+FFFD.
            (b"\xe2\x80a", r#""\ufffd\ufffda""#),
            (b"\xed\xa0\x80", r#""\ufffd\ufffd\ufffd""#),
            (b"<\xe2\x80\xa8>", r#""\u003c\u2028\u003e""#),
        ];
        for (input, want) in cases {
            assert_eq!(go(input), *want, "{input:?}");
        }
    }

    #[test]
    fn fields_v1_is_compacted_html_safe() {
        let cases: &[(&[u8], Result<&str, ()>)] = &[
            (b"", Ok("null")),
            (
                b"{\"f:a\": {\".\": {}},\n \"k:<x>\":{}}",
                Ok(r#"{"f:a":{".":{}},"k:\u003cx\u003e":{}}"#),
            ),
            (b"{\"a b\":\"\\\" &\"}", Ok(r#"{"a b":"\" \u0026"}"#)),
            (b"{", Err(())),
            (b"\xa1\x61\x61", Err(())),
        ];
        for (input, want) in cases {
            let mut out = Vec::new();
            let got = raw_json(&mut out, input).map(|()| String::from_utf8(out).unwrap());
            assert_eq!(got.as_deref().map_err(|_| ()), *want, "{input:?}");
        }
    }
}
