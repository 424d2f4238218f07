//! Protobuf's wire format, as much as the apiserver's metadata-only answers
//! need: fields read one at a time from a byte slice, every length checked
//! against what remains, unknown fields passed over, groups refused. No
//! schema here (that is `metav1`'s and `proto_json`'s), no recursion: a caller nests by
//! reading a length-delimited field with a reader of its own, so nesting is
//! bounded by the fixed schema, never by the input.
//!
//! Also the apiserver's envelope: `k8s\0` then a `runtime.Unknown`
//! (`typeMeta`, `raw`, `contentEncoding`, `contentType`), around every
//! object it sends as protobuf (a watch event's object, a LIST body; a watch
//! event itself is not enveloped, the watch framing is a 4-byte big-endian
//! length before each event).

/// The 4 bytes before every protobuf object the apiserver sends.
pub(crate) const MAGIC: &[u8; 4] = b"k8s\0";

/// Why bytes are not the protobuf expected; the message says what and where
/// (never the bytes' values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PbError {
    pub message: String,
    /// The bytes are well-formed, but name a field or kind tattler's schema
    /// does not have (a newer server's): JSON would carry it.
    pub not_in_schema: bool,
}

impl PbError {
    /// Bytes that are not the protobuf expected.
    pub(crate) fn new(m: impl Into<String>) -> PbError {
        PbError {
            message: m.into(),
            not_in_schema: false,
        }
    }

    /// A field or kind the schema does not have.
    pub(crate) fn not_in_schema(m: impl Into<String>) -> PbError {
        PbError {
            message: m.into(),
            not_in_schema: true,
        }
    }

    /// The same error, its message put in `context`'s words.
    pub(crate) fn context(self, f: impl FnOnce(&str) -> String) -> PbError {
        PbError {
            message: f(&self.message),
            ..self
        }
    }
}

/// One field's value, by wire type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

impl<'a> Value<'a> {
    /// A length-delimited value (string, bytes, message), or an error
    /// naming the field.
    pub(crate) fn bytes(self, what: &str) -> Result<&'a [u8], PbError> {
        match self {
            Value::Bytes(b) => Ok(b),
            _ => Err(PbError::new(format!("{what}: not length-delimited"))),
        }
    }

    /// A varint value (int32, int64, bool), or an error naming the field.
    pub(crate) fn varint(self, what: &str) -> Result<u64, PbError> {
        match self {
            Value::Varint(v) => Ok(v),
            _ => Err(PbError::new(format!("{what}: not a varint"))),
        }
    }
}

/// Reads the fields of one message.
pub(crate) struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Fields<'a> {
        Fields { buf, pos: 0 }
    }

    /// The next field's number and value; `None` at the message's end.
    pub(crate) fn next_field(&mut self) -> Result<Option<(u32, Value<'a>)>, PbError> {
        if self.pos == self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = key >> 3;
        if number == 0 || number > u64::from(u32::MAX >> 3) {
            return Err(PbError::new(format!(
                "field number {number} at byte {}",
                self.pos
            )));
        }
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => Value::Fixed64(u64::from_le_bytes(self.take_array::<8>()?)),
            2 => {
                let len = self.varint()?;
                let rest = self.buf.len() - self.pos;
                if len > rest as u64 {
                    return Err(PbError::new(format!(
                        "field {number}: length {len} with {rest} bytes left"
                    )));
                }
                let b = &self.buf[self.pos..self.pos + len as usize];
                self.pos += len as usize;
                Value::Bytes(b)
            }
            5 => Value::Fixed32(u32::from_le_bytes(self.take_array::<4>()?)),
            w => return Err(PbError::new(format!("field {number}: wire type {w}"))),
        };
        Ok(Some((number as u32, value)))
    }

    fn take_array<const N: usize>(&mut self) -> Result<[u8; N], PbError> {
        let b = self
            .buf
            .get(self.pos..self.pos + N)
            .ok_or_else(|| PbError::new("truncated fixed-width field"))?;
        self.pos += N;
        let mut out = [0; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    fn varint(&mut self) -> Result<u64, PbError> {
        let (v, n) = varint(&self.buf[self.pos..])?;
        self.pos += n;
        Ok(v)
    }
}

/// A varint at the start of `b`: its value and length. At most 10 bytes;
/// bits past the 64th are an error.
pub(crate) fn varint(b: &[u8]) -> Result<(u64, usize), PbError> {
    let mut v = 0u64;
    for (i, byte) in b.iter().enumerate().take(10) {
        let low = u64::from(byte & 0x7f);
        if i == 9 && low > 1 {
            return Err(PbError::new("varint over 64 bits"));
        }
        v |= low << (7 * i);
        if byte & 0x80 == 0 {
            return Ok((v, i + 1));
        }
    }
    if b.len() >= 10 {
        Err(PbError::new("varint over 10 bytes"))
    } else {
        Err(PbError::new("truncated varint"))
    }
}

/// A `runtime.Unknown` after the magic: the object's kind, apiVersion and
/// encoded bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unknown<'a> {
    pub api_version: &'a [u8],
    pub kind: &'a [u8],
    pub raw: &'a [u8],
}

/// Opens the envelope of an object sent as protobuf.
pub(crate) fn unknown(b: &[u8]) -> Result<Unknown<'_>, PbError> {
    let body = b
        .strip_prefix(MAGIC.as_slice())
        .ok_or_else(|| PbError::new("no k8s protobuf magic"))?;
    let mut out = Unknown::default();
    let mut f = Fields::new(body);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => (out.api_version, out.kind) = type_meta(v.bytes("typeMeta")?)?,
            2 => out.raw = v.bytes("raw")?,
            3 if !v.bytes("contentEncoding")?.is_empty() => {
                return Err(PbError::new("an encoded (compressed) object"))
            }
            _ => {}
        }
    }
    Ok(out)
}

/// A `runtime.TypeMeta`: apiVersion and kind.
pub(crate) fn type_meta(b: &[u8]) -> Result<(&[u8], &[u8]), PbError> {
    let (mut api_version, mut kind): (&[u8], &[u8]) = (b"", b"");
    let mut t = Fields::new(b);
    while let Some((n, v)) = t.next_field()? {
        match n {
            1 => api_version = v.bytes("typeMeta.apiVersion")?,
            2 => kind = v.bytes("typeMeta.kind")?,
            _ => {}
        }
    }
    Ok((api_version, kind))
}

/// A watch event (`metav1.WatchEvent`): its type and its object's bytes
/// (`RawExtension.raw`: an enveloped object).
pub(crate) fn watch_event(b: &[u8]) -> Result<(&[u8], &[u8]), PbError> {
    let (mut kind, mut object): (&[u8], &[u8]) = (b"", b"");
    let mut f = Fields::new(b);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => kind = v.bytes("type")?,
            2 => {
                let mut raw = Fields::new(v.bytes("object")?);
                while let Some((n, v)) = raw.next_field()? {
                    if n == 1 {
                        object = v.bytes("object.raw")?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok((kind, object))
}

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) mod encode;

#[cfg(test)]
mod tests {
    use super::*;

    type Case = (&'static [u8], Result<(u64, usize), &'static str>);

    #[test]
    fn varints() {
        let cases: &[Case] = &[
            (&[0], Ok((0, 1))),
            (&[0x96, 0x01], Ok((150, 2))),
            (&[0xff; 9], Err("truncated varint")),
            (
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
                Ok((u64::MAX, 10)),
            ),
            (
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
                Err("varint over 64 bits"),
            ),
            (&[0x80; 11], Err("varint over 10 bytes")),
            (&[], Err("truncated varint")),
        ];
        for (input, want) in cases {
            let got = varint(input).map_err(|e| e.message);
            assert_eq!(got, want.map_err(String::from), "{input:?}");
        }
    }

    #[test]
    fn fields_check_lengths_and_wire_types() {
        let mut f = Fields::new(&[0x0a, 0x02, b'h', b'i', 0x10, 0x05, 0x1d, 1, 0, 0, 0]);
        assert_eq!(f.next_field().unwrap(), Some((1, Value::Bytes(b"hi"))));
        assert_eq!(f.next_field().unwrap(), Some((2, Value::Varint(5))));
        assert_eq!(f.next_field().unwrap(), Some((3, Value::Fixed32(1))));
        assert_eq!(f.next_field().unwrap(), None);
        let bad: &[&[u8]] = &[
            &[0x0a, 0x05, b'h'],       // length past the end
            &[0x0b],                   // start group
            &[0x02],                   // field 0
            &[0x09, 1, 2, 3],          // truncated fixed64
            &[0x0a, 0xff, 0xff, 0xff], // truncated length
        ];
        for b in bad {
            assert!(Fields::new(b).next_field().is_err(), "{b:?}");
        }
    }

    #[test]
    fn envelope() {
        // typeMeta{apiVersion "v1", kind "Status"}, raw "x", contentType ""
        let b = b"k8s\0\x0a\x0c\x0a\x02v1\x12\x06Status\x12\x01x\x22\x00";
        let u = unknown(b).unwrap();
        assert_eq!(
            (u.api_version, u.kind, u.raw),
            (&b"v1"[..], &b"Status"[..], &b"x"[..])
        );
        assert!(unknown(b"k8s").is_err());
        assert!(unknown(b"{\"kind\":1}").is_err());
        assert!(unknown(b"k8s\0\x1a\x04gzip").is_err());
    }
}
