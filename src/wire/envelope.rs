//! The envelopes of the apiserver's protobuf as the JSON it would have
//! sent: a watch event around an object or a `Status`, an error answer's
//! `Status`, a LIST item (a `PartialObjectMetadata`, or a built-in object
//! through `proto_json`), so that what comes after the decoder (scrubbing,
//! metadata, the table, checkpoints) cannot tell which encoding was on the
//! wire.

use crate::wire::go_json::{string, Obj};
use crate::wire::metav1::{object_meta, status};
use crate::wire::protobuf::{self, Fields, PbError};

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
