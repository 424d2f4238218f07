//! Protobuf metadata to the JSON the apiserver would have sent: a
//! `PartialObjectMetadata` (or a `Status`, or a watch event around either)
//! written byte for byte as Go's `encoding/json` writes it, so that what
//! comes after the decoder (scrubbing, metadata, the table, checkpoints)
//! cannot tell which encoding was on the wire.
//!
//! Go's rules, as the 1.36 apiserver applies them: struct fields in
//! declaration order, `omitempty` (and `omitzero` on `creationTimestamp`),
//! map keys sorted bytewise, `metav1.Time` as RFC 3339 in whole seconds (the
//! protobuf nanos are dropped, as the apiserver drops them), `FieldsV1` as
//! its raw JSON compacted, strings with `<`, `>`, `&`, U+2028 and U+2029
//! escaped and each invalid UTF-8 byte written as `\ufffd`.

use std::collections::BTreeMap;

use crate::wire::protobuf::{self, Fields, PbError, Value};

/// Go's zero `time.Time` in Unix seconds: such a Time is written as `null`
/// (or left out, under `omitzero`).
const ZERO_TIME: i64 = -62_135_596_800;

/// A watch event (protobuf `WatchEvent`) as the JSON frame the apiserver
/// sends over JSON: `{"type":"…","object":{…}}`, appended to `out`.
pub(crate) fn event(
    frame: &[u8],
    out: &mut Vec<u8>,
    scratch: &mut crate::wire::proto_json::Scratch,
) -> Result<(), PbError> {
    let (kind, object) = protobuf::watch_event(frame)?;
    out.extend_from_slice(b"{\"type\":");
    string(out, kind);
    out.extend_from_slice(b",\"object\":");
    let u = protobuf::unknown(object).map_err(|e| e.context(|m| format!("event object: {m}")))?;
    match u.kind {
        b"PartialObjectMetadata" => object_meta_doc(out, u.kind, u.api_version, u.raw)?,
        b"Status" => status(out, u.kind, u.api_version, u.raw)?,
        kind => crate::wire::proto_json::object_doc(out, kind, u.api_version, u.raw, scratch)?,
    }
    out.push(b'}');
    Ok(())
}

/// An enveloped protobuf `Status` (an error answer's body) as its JSON
/// document.
pub(crate) fn status_doc(body: &[u8]) -> Result<Vec<u8>, PbError> {
    let u = protobuf::unknown(body)?;
    if u.kind != b"Status" {
        return Err(PbError::new("an error body that is not a Status"));
    }
    let mut out = Vec::new();
    status(&mut out, u.kind, u.api_version, u.raw)?;
    Ok(out)
}

/// A LIST item's message as its JSON document: a `PartialObjectMetadata`,
/// or a built-in object (`proto_json`).
pub(crate) fn item_doc(
    out: &mut Vec<u8>,
    kind: &[u8],
    api_version: &[u8],
    raw: &[u8],
    scratch: &mut crate::wire::proto_json::Scratch,
) -> Result<(), PbError> {
    match kind {
        b"PartialObjectMetadata" => object_meta_doc(out, kind, api_version, raw),
        _ => crate::wire::proto_json::object_doc(out, kind, api_version, raw, scratch),
    }
}

/// A `PartialObjectMetadata` message as its JSON document.
pub(crate) fn object_meta_doc(
    out: &mut Vec<u8>,
    kind: &[u8],
    api_version: &[u8],
    raw: &[u8],
) -> Result<(), PbError> {
    let mut meta: &[u8] = b"";
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        if n == 1 {
            meta = v.bytes("metadata")?;
        }
    }
    let mut o = Obj::new(out);
    o.str_omitempty("kind", kind);
    o.str_omitempty("apiVersion", api_version);
    o.key("metadata");
    object_meta(o.out, meta)?;
    o.end();
    Ok(())
}

/// The `resourceVersion` and `continue` of a LIST's `ListMeta`.
pub(crate) fn list_meta(raw: &[u8]) -> Result<(String, Option<String>), PbError> {
    let (mut rv, mut cont) = (String::new(), None);
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        match n {
            2 => rv = utf8(v.bytes("resourceVersion")?, "resourceVersion")?,
            3 => {
                let c = utf8(v.bytes("continue")?, "continue")?;
                cont = (!c.is_empty()).then_some(c);
            }
            _ => {}
        }
    }
    Ok((rv, cont))
}

fn utf8(b: &[u8], what: &str) -> Result<String, PbError> {
    String::from_utf8(b.to_vec()).map_err(|_| PbError::new(format!("{what} is not UTF-8")))
}

#[derive(Default)]
struct Meta<'a> {
    name: &'a [u8],
    generate_name: &'a [u8],
    namespace: &'a [u8],
    self_link: &'a [u8],
    uid: &'a [u8],
    resource_version: &'a [u8],
    generation: i64,
    creation: Option<&'a [u8]>,
    deletion: Option<&'a [u8]>,
    grace: Option<i64>,
    labels: BTreeMap<&'a [u8], &'a [u8]>,
    annotations: BTreeMap<&'a [u8], &'a [u8]>,
    owners: Vec<&'a [u8]>,
    finalizers: Vec<&'a [u8]>,
    managed: Vec<&'a [u8]>,
}

/// An `ObjectMeta` message as JSON.
pub(crate) fn object_meta(out: &mut Vec<u8>, raw: &[u8]) -> Result<(), PbError> {
    let mut m = Meta::default();
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => m.name = v.bytes("name")?,
            2 => m.generate_name = v.bytes("generateName")?,
            3 => m.namespace = v.bytes("namespace")?,
            4 => m.self_link = v.bytes("selfLink")?,
            5 => m.uid = v.bytes("uid")?,
            6 => m.resource_version = v.bytes("resourceVersion")?,
            7 => m.generation = v.varint("generation")? as i64,
            8 => m.creation = Some(v.bytes("creationTimestamp")?),
            9 => m.deletion = Some(v.bytes("deletionTimestamp")?),
            10 => m.grace = Some(v.varint("deletionGracePeriodSeconds")? as i64),
            11 => map_entry(&mut m.labels, v, "labels")?,
            12 => map_entry(&mut m.annotations, v, "annotations")?,
            13 => m.owners.push(v.bytes("ownerReferences")?),
            14 => m.finalizers.push(v.bytes("finalizers")?),
            17 => m.managed.push(v.bytes("managedFields")?),
            _ => {}
        }
    }
    let mut o = Obj::new(out);
    o.str_omitempty("name", m.name);
    o.str_omitempty("generateName", m.generate_name);
    o.str_omitempty("namespace", m.namespace);
    o.str_omitempty("selfLink", m.self_link);
    o.str_omitempty("uid", m.uid);
    o.str_omitempty("resourceVersion", m.resource_version);
    if m.generation != 0 {
        o.key("generation");
        int(o.out, m.generation);
    }
    if let Some(t) = m.creation.map(seconds).transpose()?.flatten() {
        // omitzero: a zero time is left out.
        o.key("creationTimestamp");
        time(o.out, Some(t))?;
    }
    if let Some(t) = m.deletion {
        o.key("deletionTimestamp");
        time(o.out, seconds(t)?)?;
    }
    if let Some(g) = m.grace {
        o.key("deletionGracePeriodSeconds");
        int(o.out, g);
    }
    for (key, map) in [("labels", &m.labels), ("annotations", &m.annotations)] {
        if map.is_empty() {
            continue;
        }
        o.key(key);
        let mut inner = Obj::new(o.out);
        for (k, v) in map {
            inner.key_bytes(k);
            string(inner.out, v);
        }
        inner.end();
    }
    if !m.owners.is_empty() {
        o.key("ownerReferences");
        o.out.push(b'[');
        for (i, r) in m.owners.iter().enumerate() {
            if i > 0 {
                o.out.push(b',');
            }
            owner_reference(o.out, r)?;
        }
        o.out.push(b']');
    }
    if !m.finalizers.is_empty() {
        o.key("finalizers");
        o.out.push(b'[');
        for (i, s) in m.finalizers.iter().enumerate() {
            if i > 0 {
                o.out.push(b',');
            }
            string(o.out, s);
        }
        o.out.push(b']');
    }
    if !m.managed.is_empty() {
        o.key("managedFields");
        o.out.push(b'[');
        for (i, e) in m.managed.iter().enumerate() {
            if i > 0 {
                o.out.push(b',');
            }
            managed_fields_entry(o.out, e)?;
        }
        o.out.push(b']');
    }
    o.end();
    Ok(())
}

/// One map entry (key 1, value 2); a later duplicate key wins, as in Go.
fn map_entry<'a>(
    map: &mut BTreeMap<&'a [u8], &'a [u8]>,
    v: Value<'a>,
    what: &str,
) -> Result<(), PbError> {
    let (mut key, mut value): (&[u8], &[u8]) = (b"", b"");
    let mut f = Fields::new(v.bytes(what)?);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => key = v.bytes(what)?,
            2 => value = v.bytes(what)?,
            _ => {}
        }
    }
    map.insert(key, value);
    Ok(())
}

fn owner_reference(out: &mut Vec<u8>, raw: &[u8]) -> Result<(), PbError> {
    let (mut api_version, mut kind, mut name, mut uid): (&[u8], &[u8], &[u8], &[u8]) =
        (b"", b"", b"", b"");
    let (mut controller, mut block) = (None, None);
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => kind = v.bytes("ownerReferences.kind")?,
            3 => name = v.bytes("ownerReferences.name")?,
            4 => uid = v.bytes("ownerReferences.uid")?,
            5 => api_version = v.bytes("ownerReferences.apiVersion")?,
            6 => controller = Some(v.varint("ownerReferences.controller")? != 0),
            7 => block = Some(v.varint("ownerReferences.blockOwnerDeletion")? != 0),
            _ => {}
        }
    }
    let mut o = Obj::new(out);
    for (k, v) in [
        ("apiVersion", api_version),
        ("kind", kind),
        ("name", name),
        ("uid", uid),
    ] {
        o.key(k);
        string(o.out, v);
    }
    for (k, v) in [("controller", controller), ("blockOwnerDeletion", block)] {
        if let Some(b) = v {
            o.key(k);
            o.out
                .extend_from_slice(if b { "true" } else { "false" }.as_bytes());
        }
    }
    o.end();
    Ok(())
}

fn managed_fields_entry(out: &mut Vec<u8>, raw: &[u8]) -> Result<(), PbError> {
    let empty: &[u8] = b"";
    let (mut manager, mut operation, mut api_version) = (empty, empty, empty);
    let (mut fields_type, mut subresource) = (empty, empty);
    let (mut time_raw, mut fields_v1) = (None, None);
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => manager = v.bytes("managedFields.manager")?,
            2 => operation = v.bytes("managedFields.operation")?,
            3 => api_version = v.bytes("managedFields.apiVersion")?,
            4 => time_raw = Some(v.bytes("managedFields.time")?),
            6 => fields_type = v.bytes("managedFields.fieldsType")?,
            7 => {
                let mut raw: &[u8] = b"";
                let mut g = Fields::new(v.bytes("managedFields.fieldsV1")?);
                while let Some((n, v)) = g.next_field()? {
                    if n == 1 {
                        raw = v.bytes("managedFields.fieldsV1.raw")?;
                    }
                }
                fields_v1 = Some(raw);
            }
            8 => subresource = v.bytes("managedFields.subresource")?,
            _ => {}
        }
    }
    let mut o = Obj::new(out);
    o.str_omitempty("manager", manager);
    o.str_omitempty("operation", operation);
    o.str_omitempty("apiVersion", api_version);
    if let Some(t) = time_raw {
        o.key("time");
        time(o.out, seconds(t)?)?;
    }
    o.str_omitempty("fieldsType", fields_type);
    if let Some(raw) = fields_v1 {
        o.key("fieldsV1");
        raw_json(o.out, raw)?;
    }
    o.str_omitempty("subresource", subresource);
    o.end();
    Ok(())
}

/// A `metav1.Status` message as JSON (`metadata` is always there, as Go
/// writes a struct).
pub(crate) fn status(
    out: &mut Vec<u8>,
    kind: &[u8],
    api_version: &[u8],
    raw: &[u8],
) -> Result<(), PbError> {
    let (mut meta, mut status, mut message, mut reason): (&[u8], &[u8], &[u8], &[u8]) =
        (b"", b"", b"", b"");
    let (mut details, mut code) = (None, 0i32);
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => meta = v.bytes("Status.metadata")?,
            2 => status = v.bytes("Status.status")?,
            3 => message = v.bytes("Status.message")?,
            4 => reason = v.bytes("Status.reason")?,
            5 => details = Some(v.bytes("Status.details")?),
            6 => code = v.varint("Status.code")? as i32,
            _ => {}
        }
    }
    let mut o = Obj::new(out);
    o.str_omitempty("kind", kind);
    o.str_omitempty("apiVersion", api_version);
    o.key("metadata");
    list_meta_json(o.out, meta)?;
    o.str_omitempty("status", status);
    o.str_omitempty("message", message);
    o.str_omitempty("reason", reason);
    if let Some(d) = details {
        o.key("details");
        status_details(o.out, d)?;
    }
    if code != 0 {
        o.key("code");
        int(o.out, i64::from(code));
    }
    o.end();
    Ok(())
}

fn list_meta_json(out: &mut Vec<u8>, raw: &[u8]) -> Result<(), PbError> {
    let (mut self_link, mut rv, mut cont): (&[u8], &[u8], &[u8]) = (b"", b"", b"");
    let mut remaining = None;
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => self_link = v.bytes("ListMeta.selfLink")?,
            2 => rv = v.bytes("ListMeta.resourceVersion")?,
            3 => cont = v.bytes("ListMeta.continue")?,
            4 => remaining = Some(v.varint("ListMeta.remainingItemCount")? as i64),
            _ => {}
        }
    }
    let mut o = Obj::new(out);
    o.str_omitempty("selfLink", self_link);
    o.str_omitempty("resourceVersion", rv);
    o.str_omitempty("continue", cont);
    if let Some(r) = remaining {
        o.key("remainingItemCount");
        int(o.out, r);
    }
    o.end();
    Ok(())
}

fn status_details(out: &mut Vec<u8>, raw: &[u8]) -> Result<(), PbError> {
    let (mut name, mut group, mut kind, mut uid): (&[u8], &[u8], &[u8], &[u8]) =
        (b"", b"", b"", b"");
    let (mut causes, mut retry) = (Vec::new(), 0i32);
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => name = v.bytes("details.name")?,
            2 => group = v.bytes("details.group")?,
            3 => kind = v.bytes("details.kind")?,
            4 => causes.push(v.bytes("details.causes")?),
            5 => retry = v.varint("details.retryAfterSeconds")? as i32,
            6 => uid = v.bytes("details.uid")?,
            _ => {}
        }
    }
    let mut o = Obj::new(out);
    o.str_omitempty("name", name);
    o.str_omitempty("group", group);
    o.str_omitempty("kind", kind);
    o.str_omitempty("uid", uid);
    if !causes.is_empty() {
        o.key("causes");
        o.out.push(b'[');
        for (i, c) in causes.iter().enumerate() {
            if i > 0 {
                o.out.push(b',');
            }
            let (mut reason, mut message, mut field): (&[u8], &[u8], &[u8]) = (b"", b"", b"");
            let mut g = Fields::new(c);
            while let Some((n, v)) = g.next_field()? {
                match n {
                    1 => reason = v.bytes("cause.reason")?,
                    2 => message = v.bytes("cause.message")?,
                    3 => field = v.bytes("cause.field")?,
                    _ => {}
                }
            }
            let mut c = Obj::new(o.out);
            c.str_omitempty("reason", reason);
            c.str_omitempty("message", message);
            c.str_omitempty("field", field);
            c.end();
        }
        o.out.push(b']');
    }
    if retry != 0 {
        o.key("retryAfterSeconds");
        int(o.out, i64::from(retry));
    }
    o.end();
    Ok(())
}

/// A JSON object being written: keys in the order given, commas between.
struct Obj<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
}

impl<'o> Obj<'o> {
    fn new(out: &'o mut Vec<u8>) -> Obj<'o> {
        out.push(b'{');
        Obj { out, first: true }
    }

    fn key(&mut self, k: &str) {
        self.key_bytes(k.as_bytes());
    }

    fn key_bytes(&mut self, k: &[u8]) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        string(self.out, k);
        self.out.push(b':');
    }

    fn str_omitempty(&mut self, k: &str, v: &[u8]) {
        if !v.is_empty() {
            self.key(k);
            string(self.out, v);
        }
    }

    fn end(self) {
        self.out.push(b'}');
    }
}

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

/// A `metav1.Time` message's seconds; `None` for Go's zero time (no bytes,
/// or the zero instant).
pub(crate) fn seconds(raw: &[u8]) -> Result<Option<i64>, PbError> {
    let mut secs = 0i64;
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        if n == 1 {
            secs = v.varint("Time.seconds")? as i64;
        }
    }
    Ok((!raw.is_empty() && secs != ZERO_TIME).then_some(secs))
}

/// A time as `metav1.Time` writes it: `null` when zero, else
/// `"2006-01-02T15:04:05Z"`.
pub(crate) fn time(out: &mut Vec<u8>, secs: Option<i64>) -> Result<(), PbError> {
    let Some(secs) = secs else {
        out.extend_from_slice(b"null");
        return Ok(());
    };
    // Go writes any year; tattler only the ones a cluster has.
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return Err(PbError::new(format!("a time in the year {y}")));
    }
    let two = |out: &mut Vec<u8>, v: i64| {
        out.push(b'0' + (v / 10 % 10) as u8);
        out.push(b'0' + (v % 10) as u8);
    };
    out.push(b'"');
    two(out, y / 100);
    two(out, y % 100);
    out.push(b'-');
    two(out, i64::from(m));
    out.push(b'-');
    two(out, i64::from(d));
    out.push(b'T');
    two(out, tod / 3600);
    out.push(b':');
    two(out, tod / 60 % 60);
    out.push(b':');
    two(out, tod % 60);
    out.extend_from_slice(b"Z\"");
    Ok(())
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's
/// algorithm).
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
    fn times() {
        let cases: &[(Option<i64>, &str)] = &[
            (None, "null"),
            (Some(0), r#""1970-01-01T00:00:00Z""#),
            (Some(1_796_168_679), r#""2026-12-01T23:44:39Z""#),
            (Some(-1), r#""1969-12-31T23:59:59Z""#),
            (Some(951_782_400), r#""2000-02-29T00:00:00Z""#),
        ];
        for (secs, want) in cases {
            let mut out = Vec::new();
            time(&mut out, *secs).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), *want, "{secs:?}");
        }
        assert!(time(&mut Vec::new(), Some(i64::MAX / 2)).is_err());
        assert_eq!(seconds(b"").unwrap(), None);
        // seconds = Go's zero instant
        let mut zero = vec![0x08];
        let mut v = ZERO_TIME as u64;
        while v >= 0x80 {
            zero.push((v as u8) | 0x80);
            v >>= 7;
        }
        zero.push(v as u8);
        assert_eq!(seconds(&zero).unwrap(), None);
        assert_eq!(seconds(&[0x08, 0x01, 0x10, 0x05]).unwrap(), Some(1));
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
