//! Protobuf written from JSON by the schema, the way back of `proto_json`:
//! for tests, fuzzing and the benchmark's protobuf replay (objects of the
//! built-in kinds as the apiserver would send them). Not a faithful
//! encoder for every value (a JSON key the schema lacks is dropped, a
//! `Duration` reads as zero): what it writes only has to be protobuf the
//! server could have sent.

use base64::Engine as _;
use serde_json::Value as Json;

use crate::wire::protobuf::MAGIC;
use crate::wire::schema::{schema, Msg, Shape, Ty};

fn varint(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// A field's key.
pub(crate) fn key(n: u32, wire: u64, out: &mut Vec<u8>) {
    varint(u64::from(n) << 3 | wire, out);
}

/// A length-delimited field.
pub(crate) fn bytes(n: u32, b: &[u8], out: &mut Vec<u8>) {
    key(n, 2, out);
    varint(b.len() as u64, out);
    out.extend_from_slice(b);
}

/// A varint field.
pub(crate) fn int(n: u32, v: u64, out: &mut Vec<u8>) {
    key(n, 0, out);
    varint(v, out);
}

/// `magic` + a `runtime.Unknown` around an object's message.
pub(crate) fn unknown(kind: &str, api_version: &str, raw: &[u8]) -> Vec<u8> {
    let mut tm = Vec::new();
    bytes(1, api_version.as_bytes(), &mut tm);
    bytes(2, kind.as_bytes(), &mut tm);
    let mut out = MAGIC.to_vec();
    bytes(1, &tm, &mut out);
    bytes(2, raw, &mut out);
    out
}

/// A watch body's frame: the length, then the `WatchEvent`.
pub(crate) fn watch_frame(event_type: &str, object: &[u8], out: &mut Vec<u8>) {
    let mut ext = Vec::new();
    bytes(1, object, &mut ext);
    let mut ev = Vec::new();
    bytes(1, event_type.as_bytes(), &mut ev);
    bytes(2, &ext, &mut ev);
    out.extend_from_slice(&(ev.len() as u32).to_be_bytes());
    out.extend_from_slice(&ev);
}

/// A JSON object of a built-in kind as its protobuf message (the `raw` of
/// its `runtime.Unknown`); `None` for a kind the schema lacks.
pub(crate) fn object(obj: &Json) -> Option<(String, String, Vec<u8>)> {
    let kind = obj.get("kind")?.as_str()?;
    let api_version = obj.get("apiVersion")?.as_str()?;
    let s = schema();
    let msg = s.kind(api_version.as_bytes(), kind.as_bytes())?;
    let mut out = Vec::new();
    message(s.msg(msg), obj, &mut out);
    Some((kind.into(), api_version.into(), out))
}

/// The fields of `msg` found in the JSON object `v`.
fn message(msg: &Msg, v: &Json, out: &mut Vec<u8>) {
    let s = schema();
    for (n, field) in msg.fields.iter().enumerate() {
        let number = msg_number(msg, n);
        if field.shape == Shape::Inline {
            if let Ty::Msg(i) = field.ty {
                let mut inner = Vec::new();
                message(s.msg(i), v, &mut inner);
                bytes(number, &inner, out);
            }
            continue;
        }
        let Some(x) = v.get(field.key) else { continue };
        if x.is_null() {
            continue;
        }
        match field.shape {
            Shape::List => {
                for item in x.as_array().into_iter().flatten() {
                    value(field.ty, number, item, out);
                }
            }
            Shape::Map => {
                for (k, item) in x.as_object().into_iter().flatten() {
                    let mut e = Vec::new();
                    bytes(1, k.as_bytes(), &mut e);
                    value(field.ty, 2, item, &mut e);
                    bytes(number, &e, out);
                }
            }
            _ => value(field.ty, number, x, out),
        }
    }
}

/// The field number of `msg`'s `n`th field.
fn msg_number(msg: &Msg, n: usize) -> u32 {
    msg.number(n).unwrap_or(0)
}

fn time(v: &Json) -> Option<i64> {
    let t = v.as_str()?.as_bytes();
    let num =
        |a: usize, b: usize| -> Option<i64> { std::str::from_utf8(&t[a..b]).ok()?.parse().ok() };
    if t.len() < 20 {
        return None;
    }
    let (y, m, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (h, mi, s) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    // days_from_civil
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + s)
}

/// One value of type `ty` as field `number`.
fn value(ty: Ty, number: u32, v: &Json, out: &mut Vec<u8>) {
    let s = schema();
    match ty {
        Ty::Str => bytes(number, v.as_str().unwrap_or_default().as_bytes(), out),
        Ty::Bool => int(number, u64::from(v.as_bool().unwrap_or(false)), out),
        Ty::I32 | Ty::I64 | Ty::U32 | Ty::U64 => {
            int(number, v.as_i64().unwrap_or(0) as u64, out);
        }
        Ty::Bytes => {
            let text = v.as_str().unwrap_or_default();
            let b = base64::engine::general_purpose::STANDARD
                .decode(text)
                .unwrap_or_else(|_| text.as_bytes().to_vec());
            bytes(number, &b, out);
        }
        Ty::Time | Ty::MicroTime => {
            let mut m = Vec::new();
            if let Some(secs) = time(v) {
                int(1, secs as u64, &mut m);
            }
            bytes(number, &m, out);
        }
        Ty::Duration => bytes(number, &[], out),
        Ty::Quantity => {
            let mut m = Vec::new();
            let text = match v {
                Json::String(t) => t.clone(),
                other => other.to_string(),
            };
            bytes(1, text.as_bytes(), &mut m);
            bytes(number, &m, out);
        }
        Ty::IntOrString => {
            let mut m = Vec::new();
            match v {
                Json::String(t) => {
                    int(1, 1, &mut m);
                    bytes(3, t.as_bytes(), &mut m);
                }
                other => {
                    int(1, 0, &mut m);
                    int(2, other.as_i64().unwrap_or(0) as u64, &mut m);
                }
            }
            bytes(number, &m, out);
        }
        Ty::Raw | Ty::FieldsV1 => {
            let mut m = Vec::new();
            bytes(1, v.to_string().as_bytes(), &mut m);
            bytes(number, &m, out);
        }
        Ty::ObjectMeta => bytes(number, &object_meta(v), out),
        Ty::Msg(i) => {
            let mut m = Vec::new();
            message(s.msg(i), v, &mut m);
            bytes(number, &m, out);
        }
    }
}

/// An `ObjectMeta` from its JSON.
pub(crate) fn object_meta(v: &Json) -> Vec<u8> {
    let mut out = Vec::new();
    let str_field = |n: u32, k: &str, out: &mut Vec<u8>| {
        if let Some(t) = v.get(k).and_then(Json::as_str) {
            bytes(n, t.as_bytes(), out);
        }
    };
    for (n, k) in [
        (1, "name"),
        (2, "generateName"),
        (3, "namespace"),
        (4, "selfLink"),
        (5, "uid"),
        (6, "resourceVersion"),
    ] {
        str_field(n, k, &mut out);
    }
    if let Some(g) = v.get("generation").and_then(Json::as_i64) {
        int(7, g as u64, &mut out);
    }
    for (n, k) in [(8, "creationTimestamp"), (9, "deletionTimestamp")] {
        if let Some(secs) = v.get(k).and_then(time) {
            let mut m = Vec::new();
            int(1, secs as u64, &mut m);
            bytes(n, &m, &mut out);
        }
    }
    if let Some(g) = v.get("deletionGracePeriodSeconds").and_then(Json::as_i64) {
        int(10, g as u64, &mut out);
    }
    for (n, k) in [(11, "labels"), (12, "annotations")] {
        for (key, val) in v.get(k).and_then(Json::as_object).into_iter().flatten() {
            let mut e = Vec::new();
            bytes(1, key.as_bytes(), &mut e);
            bytes(2, val.as_str().unwrap_or_default().as_bytes(), &mut e);
            bytes(n, &e, &mut out);
        }
    }
    for r in v
        .get("ownerReferences")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        let mut m = Vec::new();
        for (n, k) in [(1, "kind"), (3, "name"), (4, "uid"), (5, "apiVersion")] {
            if let Some(t) = r.get(k).and_then(Json::as_str) {
                bytes(n, t.as_bytes(), &mut m);
            }
        }
        for (n, k) in [(6, "controller"), (7, "blockOwnerDeletion")] {
            if let Some(b) = r.get(k).and_then(Json::as_bool) {
                int(n, u64::from(b), &mut m);
            }
        }
        bytes(13, &m, &mut out);
    }
    for f in v
        .get("finalizers")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        bytes(14, f.as_str().unwrap_or_default().as_bytes(), &mut out);
    }
    for e in v
        .get("managedFields")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        let mut m = Vec::new();
        for (n, k) in [
            (1, "manager"),
            (2, "operation"),
            (3, "apiVersion"),
            (6, "fieldsType"),
            (8, "subresource"),
        ] {
            if let Some(t) = e.get(k).and_then(Json::as_str) {
                bytes(n, t.as_bytes(), &mut m);
            }
        }
        if let Some(secs) = e.get("time").and_then(time) {
            let mut t = Vec::new();
            int(1, secs as u64, &mut t);
            bytes(4, &t, &mut m);
        }
        if let Some(f) = e.get("fieldsV1") {
            let mut r = Vec::new();
            bytes(1, f.to_string().as_bytes(), &mut r);
            bytes(7, &r, &mut m);
        }
        bytes(17, &m, &mut out);
    }
    out
}

#[cfg(test)]
/// `raw`, a message of kind `kind`'s struct, without its `metadata`'s
/// `managedFields` (field 17 of `ObjectMeta`): what the server sends when
/// it drops them.
pub(crate) fn without_managed_fields(
    api_version: &[u8],
    kind: &[u8],
    raw: &[u8],
) -> Result<Vec<u8>, crate::wire::protobuf::PbError> {
    use crate::wire::protobuf::{Fields, Value};
    let s = schema();
    let meta_number = match kind {
        b"PartialObjectMetadata" => Some(1),
        _ => s.kind(api_version, kind).and_then(|m| {
            let m = s.msg(m);
            let p = m.fields.iter().position(|f| f.ty == Ty::ObjectMeta)?;
            m.number(p)
        }),
    };
    let copy = |n: u32, v: Value<'_>, out: &mut Vec<u8>| match v {
        Value::Varint(x) => int(n, x, out),
        Value::Fixed64(x) => {
            key(n, 1, out);
            out.extend_from_slice(&x.to_le_bytes());
        }
        Value::Fixed32(x) => {
            key(n, 5, out);
            out.extend_from_slice(&x.to_le_bytes());
        }
        Value::Bytes(b) => bytes(n, b, out),
    };
    let mut out = Vec::new();
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        match v {
            Value::Bytes(meta) if Some(n) == meta_number => {
                let mut m = Vec::new();
                let mut g = Fields::new(meta);
                while let Some((k, w)) = g.next_field()? {
                    if k != 17 {
                        copy(k, w, &mut m);
                    }
                }
                bytes(n, &m, &mut out);
            }
            v => copy(n, v, &mut out),
        }
    }
    Ok(out)
}
