//! The envelopes of the apiserver's protobuf as the JSON it would have
//! sent: a watch event around an object or a `Status`, an error answer's
//! `Status`, a LIST item (a `PartialObjectMetadata`, or a built-in object
//! through `proto_json`), so that what comes after the decoder (scrubbing,
//! metadata, the table, checkpoints) cannot tell which encoding was on the
//! wire.

use crate::objects::edits::{Edits, Found};
use crate::objects::policy::State;
use crate::wire::decode::EventType;
use crate::wire::go_json::{string, Obj};
use crate::wire::metav1::{object_meta_in, status};
use crate::wire::proto_json::{object_doc_in, Pass, Scratch};
use crate::wire::protobuf::{self, Fields, PbError};

/// An object event written in one pass (`proto_json`'s [`Pass`]): what the
/// decoder needs of it, found as it was written, so that nothing walks it
/// again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Walked {
    pub(crate) kind: EventType,
    /// The object's span in the frame.
    pub(crate) object: (usize, usize),
    /// Its metadata strings, from the object's first byte.
    pub(crate) found: Found,
}

/// As [`event`], an object event's object written with `edits` in one pass
/// (ADDED, MODIFIED, DELETED; a built-in object or its metadata): then
/// what the decoder needs of it. `None`: written plainly, to be walked
/// (other events, and what only the walk does as the walk does).
pub(crate) fn event_in(
    frame: &[u8],
    out: &mut Vec<u8>,
    scratch: &mut Scratch,
    edits: Edits,
) -> Result<Option<Walked>, PbError> {
    let (kind, object) = protobuf::watch_event(frame)?;
    let event_type = match kind {
        b"ADDED" => EventType::Added,
        b"MODIFIED" => EventType::Modified,
        b"DELETED" => EventType::Deleted,
        _ => return event(frame, out, scratch).map(|()| None),
    };
    let u = protobuf::unknown(object).map_err(|e| e.context(|m| format!("event object: {m}")))?;
    if u.kind == b"Status" {
        return event(frame, out, scratch).map(|()| None);
    }
    let mut pass = Pass::new(edits, 0, scratch);
    let written = event_doc(kind, &u, out, scratch, &mut pass, event_type);
    pass.end(scratch);
    written.and_then(|walked| match walked {
        Some(w) => Ok(Some(w)),
        None => {
            let mut fallback = Pass::fallback(edits);
            event_doc(kind, &u, out, scratch, &mut fallback, event_type).map(|_| None)
        }
    })
}

/// A watch event of type `kind` around `u` (its object, out of its
/// envelope once), written in `pass`; `None` when the pass bailed (`out` as
/// it was).
fn event_doc(
    kind: &[u8],
    u: &protobuf::Unknown<'_>,
    out: &mut Vec<u8>,
    scratch: &mut Scratch,
    pass: &mut Pass,
    event_type: EventType,
) -> Result<Option<Walked>, PbError> {
    let frame_start = out.len();
    out.extend_from_slice(b"{\"type\":");
    string(out, kind);
    out.extend_from_slice(b",\"object\":");
    let base = out.len();
    pass.rebase(base);
    match u.kind {
        b"PartialObjectMetadata" => object_meta_doc_in(out, u.kind, u.api_version, u.raw, pass)?,
        kind => object_doc_in(out, kind, u.api_version, u.raw, scratch, pass)?,
    }
    if pass.bailed {
        out.truncate(frame_start);
        return Ok(None);
    }
    let end = out.len();
    out.push(b'}');
    Ok(Some(Walked {
        kind: event_type,
        object: (base - frame_start, end - frame_start),
        found: pass.found,
    }))
}

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
        kind => object_doc_in(out, kind, u.api_version, u.raw, scratch, &mut Pass::plain())?,
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
    scratch: &mut Scratch,
) -> Result<(), PbError> {
    item_doc_in(out, kind, api_version, raw, scratch, &mut Pass::plain())
}

/// As [`item_doc`], with `edits` in one pass: where the item's metadata
/// is (from its first byte), or `None` when it was written plainly, to be
/// walked (see [`event_in`]).
pub(crate) fn item_doc_edited(
    out: &mut Vec<u8>,
    kind: &[u8],
    api_version: &[u8],
    raw: &[u8],
    scratch: &mut Scratch,
    edits: Edits,
) -> Result<Option<Found>, PbError> {
    let start = out.len();
    let mut pass = Pass::new(edits, start, scratch);
    let written = item_doc_in(out, kind, api_version, raw, scratch, &mut pass);
    pass.end(scratch);
    written?;
    if pass.bailed {
        out.truncate(start);
        item_doc_in(
            out,
            kind,
            api_version,
            raw,
            scratch,
            &mut Pass::fallback(edits),
        )?;
        return Ok(None);
    }
    Ok(Some(pass.found))
}

fn item_doc_in(
    out: &mut Vec<u8>,
    kind: &[u8],
    api_version: &[u8],
    raw: &[u8],
    scratch: &mut Scratch,
    pass: &mut Pass,
) -> Result<(), PbError> {
    match kind {
        b"PartialObjectMetadata" => object_meta_doc_in(out, kind, api_version, raw, pass),
        _ => object_doc_in(out, kind, api_version, raw, scratch, pass),
    }
}

/// A `PartialObjectMetadata` message as its JSON document.
pub(crate) fn object_meta_doc(
    out: &mut Vec<u8>,
    kind: &[u8],
    api_version: &[u8],
    raw: &[u8],
) -> Result<(), PbError> {
    object_meta_doc_in(out, kind, api_version, raw, &mut Pass::plain())
}

/// As [`object_meta_doc`], in `pass`.
fn object_meta_doc_in(
    out: &mut Vec<u8>,
    kind: &[u8],
    api_version: &[u8],
    raw: &[u8],
    pass: &mut Pass,
) -> Result<(), PbError> {
    let mut meta: &[u8] = b"";
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        if n == 1 {
            meta = v.bytes("metadata")?;
        }
    }
    let st = State::Root;
    let mut o = Obj::new(out);
    for (key, v) in [("kind", kind), ("apiVersion", api_version)] {
        if !v.is_empty() {
            o.key(key);
            let kst = pass.member(st, key.as_bytes());
            pass.string(o.out, v, kst);
        }
    }
    o.key("metadata");
    let mst = pass.member(st, b"metadata");
    object_meta_in(o.out, meta, pass, mst)?;
    o.end();
    Ok(())
}
