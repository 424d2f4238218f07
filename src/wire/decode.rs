//! Pure decoding: a watch frame into an event, an object into the metadata
//! tattler needs, a body into a `Status`. No I/O; no recursion on input (the
//! object walk is iterative, serde only ever sees small, bounded documents).

use std::borrow::Cow;

use serde::Deserialize;

use crate::entry::Reason;
use crate::objects::edits::{self, Bad, Edits, Found};
use crate::objects::reuse::Reuse;
use crate::objects::scrub;
use crate::resource_version::{Rv, MAX_LEN};
use crate::wire::envelope::Walked;

/// A watch event's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

/// The metadata tattler needs from an object, parsed without building the object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObjectMeta<'a> {
    pub kind: Option<Cow<'a, str>>,
    pub namespace: Option<Cow<'a, str>>,
    pub name: Cow<'a, str>,
    pub uid: Cow<'a, str>,
    pub resource_version: Rv,
}

impl ObjectMeta<'_> {
    /// The same metadata, owning its strings.
    pub(crate) fn into_owned(self) -> ObjectMeta<'static> {
        let own = |c: Cow<'_, str>| Cow::Owned(c.into_owned());
        ObjectMeta {
            kind: self.kind.map(own),
            namespace: self.namespace.map(own),
            name: own(self.name),
            uid: own(self.uid),
            resource_version: self.resource_version,
        }
    }
}

/// A `Status` the server sent in an ERROR event or as an error response body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Status {
    pub code: u16,
    pub reason: String,
    pub message: String,
    pub retry_after_secs: Option<u32>,
    /// `details.causes[].reason == ResourceVersionTooLarge`.
    pub rv_too_large: bool,
}

/// One decoded watch frame.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Event<'a> {
    /// ADDED, MODIFIED or DELETED; `object` is the byte range of the object
    /// inside the frame.
    Object {
        kind: EventType,
        meta: ObjectMeta<'a>,
        object: (usize, usize),
        /// The object after the requested edits, when they changed it.
        edited: Option<Vec<u8>>,
    },
    /// A BOOKMARK: progress to `resource_version`; `initial_events_end` marks
    /// the end of a watch-list's initial state.
    Bookmark {
        resource_version: Rv,
        initial_events_end: bool,
    },
    /// An ERROR event.
    Error(Status),
}

/// Why a frame or an object could not be decoded: a short reason of its own
/// (the `reason` of the Error entry that reports it), a message naming what
/// was wrong (never quoting the object's values), and the object's
/// namespace and name when they could be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecodeError {
    pub reason: Reason,
    pub message: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// All the metadata, when it could be read: the consumer may hold an
    /// earlier version of the object, which then goes.
    pub meta: Option<Box<ObjectMeta<'static>>>,
}

impl DecodeError {
    fn new(reason: Reason, message: impl Into<String>) -> DecodeError {
        DecodeError {
            reason,
            message: message.into(),
            namespace: None,
            name: None,
            meta: None,
        }
    }
}

/// The reasons of [`DecodeError`]: a frame that is not a watch event.
pub(crate) const INVALID_FRAME: Reason = Reason::InvalidFrame;
/// An object that is not JSON, or lacks what every object has.
pub(crate) const INVALID_OBJECT: Reason = Reason::InvalidObject;
/// An object nested deeper than the walker's limit.
pub(crate) const OBJECT_TOO_DEEP: Reason = Reason::ObjectTooDeep;

/// The longest name, namespace and uid accepted. Kubernetes names are at most
/// 253 bytes (a few kinds allow any path segment); these bounds only keep a
/// hostile server from making per-object state large.
const MAX_NAME: usize = 2048;
const MAX_NAMESPACE: usize = 253;
const MAX_UID: usize = 128;

#[derive(Deserialize)]
struct BookmarkHead<'a> {
    #[serde(borrow)]
    metadata: BookmarkMeta<'a>,
}

#[derive(Deserialize)]
struct BookmarkMeta<'a> {
    #[serde(rename = "resourceVersion", borrow)]
    resource_version: Cow<'a, str>,
    #[serde(borrow, default)]
    annotations: Option<std::collections::HashMap<Cow<'a, str>, Cow<'a, str>>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StatusBody {
    kind: String,
    #[serde(rename = "apiVersion")]
    api_version: Option<String>,
    code: u16,
    reason: String,
    message: String,
    details: Option<StatusDetails>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StatusDetails {
    causes: Vec<StatusCause>,
    #[serde(rename = "retryAfterSeconds")]
    retry_after_seconds: Option<u32>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StatusCause {
    reason: String,
}

/// A `serde_json` error said by its category and place only: its own
/// message can quote a value of the server's (`invalid type: string
/// "s3cr3t", expected …`), and what it says reaches Error entries and logs.
pub(crate) fn json_error(e: &serde_json::Error) -> String {
    let what = match e.classify() {
        serde_json::error::Category::Io => "could not be read",
        serde_json::error::Category::Syntax => "is not valid JSON",
        serde_json::error::Category::Data => "has a value of the wrong type or shape",
        serde_json::error::Category::Eof => "ends early",
    };
    format!("{what} (line {}, column {})", e.line(), e.column())
}

/// Decodes one watch frame (`{"type":…,"object":{…}}`).
pub(crate) fn event<'f>(
    frame: &'f [u8],
    edits: Edits,
    reuse: &mut Reuse,
) -> Result<Event<'f>, DecodeError> {
    // The apiserver writes `{"type":"…","object":{…}}`: find the object
    // without a pass over the frame; walking the object checks it. Anything
    // else takes the general path: one pass over the frame to find its
    // members, then the walk.
    let (kind, obj) = match split_envelope(frame) {
        Some(parts) => parts,
        None => general_envelope(frame)?,
    };
    match kind.as_ref() {
        "ADDED" | "MODIFIED" | "DELETED" => {
            let kind = match kind.as_ref() {
                "ADDED" => EventType::Added,
                "MODIFIED" => EventType::Modified,
                _ => EventType::Deleted,
            };
            let start = obj.as_ptr() as usize - frame.as_ptr() as usize;
            let (meta, edited) = object_walk(obj, edits, reuse)?;
            Ok(Event::Object {
                kind,
                meta,
                object: (start, start + obj.len()),
                edited,
            })
        }
        "BOOKMARK" => {
            let b: BookmarkHead = serde_json::from_str(obj).map_err(|e| {
                DecodeError::new(INVALID_FRAME, format!("BOOKMARK object {}", json_error(&e)))
            })?;
            let initial_events_end = b
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("k8s.io/initial-events-end"))
                .is_some_and(|v| v == "true");
            Ok(Event::Bookmark {
                resource_version: checked_rv(&b.metadata.resource_version)
                    .map_err(|m| DecodeError::new(INVALID_FRAME, format!("BOOKMARK: {m}")))?,
                initial_events_end,
            })
        }
        "ERROR" => Ok(Event::Error(status(obj.as_bytes()))),
        // Named only when it has an event type's shape (a newer server's
        // type); anything else may be a value's bytes.
        other
            if (1..=32).contains(&other.len())
                && other.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') =>
        {
            Err(DecodeError::new(
                INVALID_FRAME,
                format!("unknown watch event type {other:?}"),
            ))
        }
        other => Err(DecodeError::new(
            INVALID_FRAME,
            format!(
                "a watch event type of {} bytes that is none Kubernetes sends",
                other.len()
            ),
        )),
    }
}

/// `{"type":"T","object":OBJ}` → (T, OBJ) when the frame has exactly that
/// shape (no white space, type first, object last); `None` otherwise.
fn split_envelope(frame: &[u8]) -> Option<(Cow<'_, str>, &str)> {
    const HEAD: &[u8] = b"{\"type\":\"";
    const MID: &[u8] = b"\",\"object\":{";
    let rest = frame.strip_prefix(HEAD)?;
    let q = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    let (kind, rest) = rest.split_at(q);
    let rest = rest.strip_prefix(MID)?;
    let start = frame.len() - rest.len() - 1;
    if !rest.ends_with(b"}}") {
        return None;
    }
    let obj = std::str::from_utf8(&frame[start..frame.len() - 1]).ok()?;
    let kind = std::str::from_utf8(kind).ok()?;
    Some((Cow::Borrowed(kind), obj))
}

/// A watch event of any member order and spacing.
fn general_envelope(frame: &[u8]) -> Result<(Cow<'_, str>, &str), DecodeError> {
    let bad = |m: &str| DecodeError::new(INVALID_FRAME, format!("watch frame: {m}"));
    let text = std::str::from_utf8(frame).map_err(|e| {
        bad(&format!(
            "not UTF-8 (invalid byte after {} bytes)",
            e.valid_up_to()
        ))
    })?;
    let (kind, obj) = match scrub::envelope(frame) {
        Ok(parts) => parts,
        Err(Bad::TooDeep) => {
            return Err(DecodeError::new(
                OBJECT_TOO_DEEP,
                format!("watch frame nested deeper than {} levels", edits::MAX_DEPTH),
            ))
        }
        Err(Bad::NotJson) => {
            // Let serde say where it is wrong, not what it found.
            let why = match serde_json::from_slice::<serde::de::IgnoredAny>(frame) {
                Err(e) => format!("it {}", json_error(&e)),
                Ok(_) => "not a JSON object".into(),
            };
            return Err(bad(&format!("not a watch event: {why}")));
        }
    };
    let (Some((ts, te)), Some((os, oe))) = (kind, obj) else {
        return Err(bad(
            "not a watch event: it needs a string `type` and an object `object`",
        ));
    };
    let kind = serde_json::from_str::<String>(&text[ts..te])
        .map_err(|e| bad(&format!("its type {}", json_error(&e))))?;
    Ok((Cow::Owned(kind), &text[os..oe]))
}

/// Parses the metadata of one object's JSON (a full pass: this also checks
/// that the object is valid JSON).
#[cfg(test)]
pub(crate) fn object_meta(obj: &str) -> Result<ObjectMeta<'_>, DecodeError> {
    object_walk(obj, Edits::NONE, &mut Reuse::default()).map(|(meta, _)| meta)
}

/// An object event the protobuf writer wrote in one pass
/// (`envelope::event_in`): its object already checked and edited as the
/// walk would have, and its metadata located; decoded with no walk.
pub(crate) fn walked_event(frame: &[u8], w: Walked) -> Result<Event<'_>, DecodeError> {
    let meta = walked_object(&frame[w.object.0..w.object.1], w.found)?;
    Ok(Event::Object {
        kind: w.kind,
        meta,
        object: w.object,
        edited: None,
    })
}

/// The metadata of an object the protobuf writer wrote in one pass, from
/// the strings it located (`found`): as [`object_walk`] gives it, errors
/// included.
pub(crate) fn walked_object(obj: &[u8], found: Found) -> Result<ObjectMeta<'_>, DecodeError> {
    meta(obj, found).map_err(|e| named(obj, found, e))
}

/// An error about an object, with its name and metadata where they could
/// be read.
fn named(obj: &[u8], found: Found, mut e: DecodeError) -> DecodeError {
    e.namespace = text(obj, found.namespace).map(Cow::into_owned);
    e.name = text(obj, found.name).map(Cow::into_owned);
    e.meta = meta(obj, found).ok().map(|m| Box::new(m.into_owned()));
    e
}

/// One structural pass over an object: checks it, makes `edits` (the edited
/// bytes, if anything changed) and finds its metadata.
pub(crate) fn object_walk<'o>(
    obj: &'o str,
    edits: Edits,
    reuse: &mut Reuse,
) -> Result<(ObjectMeta<'o>, Option<Vec<u8>>), DecodeError> {
    let (result, found) = scrub::walk(obj.as_bytes(), edits, reuse);
    let named = |e: DecodeError| named(obj.as_bytes(), found, e);
    let edited = match result {
        Ok(edited) => edited,
        Err(Bad::TooDeep) => {
            return Err(named(DecodeError::new(
                OBJECT_TOO_DEEP,
                format!("object nested deeper than {} levels", edits::MAX_DEPTH),
            )))
        }
        Err(Bad::NotJson) => {
            let why = match serde_json::from_str::<serde::de::IgnoredAny>(obj) {
                Err(e) => format!("object {}", json_error(&e)),
                Ok(_) => "object is not a JSON object".into(),
            };
            return Err(named(DecodeError::new(INVALID_OBJECT, why)));
        }
    };
    meta(obj.as_bytes(), found)
        .map(|m| (m, edited))
        .map_err(named)
}

/// The string at `span` (quotes included) of a checked object, unescaped.
fn text(obj: &[u8], span: Option<(usize, usize)>) -> Option<Cow<'_, str>> {
    let (s, e) = span?;
    let raw = &obj[s + 1..e - 1];
    if raw.contains(&b'\\') {
        serde_json::from_slice::<String>(&obj[s..e])
            .ok()
            .map(Cow::Owned)
    } else {
        std::str::from_utf8(raw).ok().map(Cow::Borrowed)
    }
}

fn meta(obj: &[u8], found: Found) -> Result<ObjectMeta<'_>, DecodeError> {
    let invalid = |m: String| DecodeError::new(INVALID_OBJECT, m);
    let field = |span, what: &str, max: usize| -> Result<Option<Cow<'_, str>>, DecodeError> {
        match text(obj, span) {
            Some(t) if t.len() > max => Err(invalid(format!(
                "metadata.{what} is {} bytes long (at most {max})",
                t.len()
            ))),
            t => Ok(t),
        }
    };
    let missing = |f: &str| invalid(format!("object has no metadata.{f}"));
    let name = field(found.name, "name", MAX_NAME)?
        .filter(|n| !n.is_empty())
        .ok_or_else(|| missing("name"))?;
    let uid = field(found.uid, "uid", MAX_UID)?
        .filter(|u| !u.is_empty())
        .ok_or_else(|| missing("uid"))?;
    let rv = field(found.resource_version, "resourceVersion", MAX_LEN)?
        .ok_or_else(|| missing("resourceVersion"))?;
    Ok(ObjectMeta {
        kind: field(found.kind, "kind", MAX_NAME)?,
        namespace: field(found.namespace, "namespace", MAX_NAMESPACE)?.filter(|n| !n.is_empty()),
        name,
        uid,
        resource_version: checked_rv(&rv).map_err(invalid)?,
    })
}

/// A resourceVersion within bounds.
pub(crate) fn checked_rv(text: &str) -> Result<Rv, String> {
    if text.len() > MAX_LEN {
        return Err(format!(
            "resourceVersion is {} bytes long (at most {})",
            text.len(),
            MAX_LEN
        ));
    }
    if text.is_empty() {
        return Err("resourceVersion is empty".into());
    }
    Ok(Rv::new(text))
}

/// A Status body: JSON with `"kind":"Status"` (and `"apiVersion":"v1"`
/// when it names one), as client-go decodes a `metav1.Status`. Any other
/// body is described by its length, never quoted, whatever its members
/// (a top-level `message` too): it may be an object's bytes (a Secret list
/// answered with an unexpected code, a proxy's page carrying a token).
pub(crate) fn status(body: &[u8]) -> Status {
    described_status(body, None)
}

/// As [`status`], naming the body's `Content-Type` (its media type only,
/// at most 64 characters of `[A-Za-z0-9/+.-]`) when it is not a Status.
pub(crate) fn described_status(body: &[u8], content_type: Option<&str>) -> Status {
    let parsed = serde_json::from_slice::<StatusBody>(body)
        .ok()
        .filter(|s| s.kind == "Status" && s.api_version.as_deref().is_none_or(|v| v == "v1"));
    match parsed {
        Some(s) => {
            let details = s.details.unwrap_or_default();
            Status {
                code: s.code,
                reason: s.reason,
                message: s.message,
                retry_after_secs: details.retry_after_seconds,
                rv_too_large: details
                    .causes
                    .iter()
                    .any(|c| c.reason == "ResourceVersionTooLarge"),
            }
        }
        None => Status {
            message: describe_body(body, content_type),
            ..Status::default()
        },
    }
}

/// How a body that is not a Status is said: its length and media type.
fn describe_body(body: &[u8], content_type: Option<&str>) -> String {
    if body.trim_ascii().is_empty() {
        return String::new();
    }
    let media: String = content_type
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .chars()
        .take(64)
        .filter(|c| c.is_ascii_alphanumeric() || "/+.-".contains(*c))
        .collect();
    match media.as_str() {
        "" => format!("a body of {} bytes that is not a Status", body.len()),
        m => format!("a {m} body of {} bytes that is not a Status", body.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::frames::{FrameError, FrameReader};

    const WATCHLIST: &[u8] = include_bytes!("../../tests/wire/a-watchlist-pods.body.jsonl");
    const EMPTY: &[u8] = include_bytes!("../../tests/wire/b-watchlist-empty.body.jsonl");
    const EXPIRED: &[u8] = include_bytes!("../../tests/wire/c1-watch-rv1.body.jsonl");
    const TOO_LARGE: &[u8] = include_bytes!("../../tests/wire/i-watchlist-future-rv.body.jsonl");
    const PAGE1: &[u8] = include_bytes!("../../tests/wire/d-list-page1.json");
    const FORBIDDEN: &[u8] = include_bytes!("../../tests/wire/f-403-nobody-watchlist.json");

    /// A body that is not a Status is said by its length and media type,
    /// never quoted (issue 38: a proxy's page, or an object's bytes).
    #[test]
    fn a_body_that_is_not_a_status_is_never_quoted() {
        let secret = b"<html>token: sk-0123456789</html>";
        for (ct, want) in [
            (None, "a body of 33 bytes that is not a Status"),
            (
                Some("text/html; charset=utf-8"),
                "a text/html body of 33 bytes that is not a Status",
            ),
            (
                Some("text/\u{1b}ht ml"),
                "a text/html body of 33 bytes that is not a Status",
            ),
        ] {
            let s = described_status(secret, ct);
            assert_eq!(s.message, want);
            assert_eq!((s.code, s.reason.as_str()), (0, ""));
        }
        assert_eq!(status(b" \n").message, "");
        // A Status says its own message.
        assert!(status(FORBIDDEN).message.starts_with("pods is forbidden"));
    }

    /// Only a Status is quoted: JSON with a top-level `message` that is
    /// not one (an object, another API's error) is said by its length.
    #[test]
    fn only_a_kubernetes_status_is_quoted() {
        let quoted = |body: &str| {
            let s = described_status(body.as_bytes(), Some("application/json"));
            (s.code, s.message)
        };
        for (body, want) in [
            (
                r#"{"kind":"Status","apiVersion":"v1","code":403,"message":"m"}"#,
                Some(403),
            ),
            (
                r#"{"apiVersion":"v1","message":"m","kind":"Status","code":500}"#,
                Some(500),
            ),
            (r#"{"kind":"Status","code":503,"message":"m"}"#, Some(503)),
            (r#"{"message":"s3cr3t","code":500}"#, None),
            (r#"{"kind":"Secret","message":"s3cr3t","code":500}"#, None),
            (
                r#"{"kind":"Status","apiVersion":"apps/v1","message":"s3cr3t"}"#,
                None,
            ),
            (r#"{"kind":"status","message":"s3cr3t"}"#, None),
            (r#"{"kind":1,"message":"s3cr3t"}"#, None),
            (r#"["Status","s3cr3t"]"#, None),
        ] {
            let said = match want {
                Some(code) => (code, "m".to_string()),
                None => (
                    0,
                    format!(
                        "a application/json body of {} bytes that is not a Status",
                        body.len()
                    ),
                ),
            };
            assert_eq!(quoted(body), said, "{body}");
        }
    }

    /// serde_json's messages can quote a value; what reaches an error says
    /// where and what kind of fault, never the value.
    #[test]
    fn json_errors_name_their_place_and_never_a_value() {
        let err = |text: &str| {
            json_error(
                &serde_json::from_str::<BookmarkHead>(text)
                    .err()
                    .expect(text),
            )
        };
        for (text, want) in [
            (
                r#"{"metadata":"s3cr3t"}"#,
                "has a value of the wrong type or shape (line 1, column 20)",
            ),
            (
                r#"{"metadata":{"resourceVersion":12345678}}"#,
                "has a value of the wrong type or shape (line 1, column 39)",
            ),
            (
                r#"{"metadata":{"resourceVersion":"1","annotations":{"k":"s3cr3t","j":7}}}"#,
                "has a value of the wrong type or shape (line 1, column 68)",
            ),
            (
                r#"{"metadata":s3cr3t}"#,
                "is not valid JSON (line 1, column 13)",
            ),
            (r#"{"metadata":{"#, "ends early (line 1, column 13)"),
        ] {
            let got = err(text);
            assert_eq!(got, want, "{text}");
            assert!(!got.contains("s3cr3t") && !got.contains("1234"), "{got}");
        }
        // What serde says by itself, which this is for.
        let raw = serde_json::from_str::<BookmarkHead>(r#"{"metadata":"s3cr3t"}"#)
            .err()
            .unwrap()
            .to_string();
        assert!(raw.contains("s3cr3t"), "{raw}");
        let bookmark = br#"{"type":"BOOKMARK","object":{"metadata":"s3cr3t"}}"#;
        let e = event(bookmark, Edits::NONE, &mut Reuse::default()).unwrap_err();
        assert_eq!(
            e.message,
            "BOOKMARK object has a value of the wrong type or shape (line 1, column 20)"
        );
    }

    fn lines(body: &[u8]) -> Vec<Vec<u8>> {
        let mut r = FrameReader::new(body, 1 << 20);
        let mut out = Vec::new();
        loop {
            match r.next_frame() {
                Ok(Some(f)) => out.push(f.to_vec()),
                Ok(None) => return out,
                Err(FrameError::Io(e)) => panic!("{e}"),
                Err(_) => panic!("bad frame"),
            }
        }
    }

    fn describe(ev: Event) -> String {
        match ev {
            Event::Object { kind, meta, .. } => format!(
                "{kind:?} {}/{} {}",
                meta.namespace.unwrap_or_default(),
                meta.name,
                meta.resource_version
            ),
            Event::Bookmark {
                resource_version,
                initial_events_end,
            } => format!("Bookmark {resource_version} {initial_events_end}"),
            Event::Error(s) => format!("Error {}", s.code),
        }
    }

    #[test]
    fn real_watch_list_decodes_to_the_expected_events() {
        let got: Vec<String> = lines(WATCHLIST)
            .iter()
            .map(|f| describe(event(f, Edits::NONE, &mut Reuse::default()).unwrap()))
            .collect();
        assert_eq!(
            got,
            [
                "Added wire-a/pod-a1 217",
                "Added wire-a/pod-a2 218",
                "Added wire-b/pod-b1 219",
                "Bookmark 219 true",
                "Added wire-a/pod-live 222",
                "Modified wire-a/pod-live 223",
                "Modified wire-a/pod-live 224",
                "Deleted wire-a/pod-live 225",
                "Modified wire-b/pod-b1 226",
                "Deleted wire-b/pod-b1 227",
            ]
        );
    }

    #[test]
    fn any_member_order_and_spacing_decodes_the_same() {
        for frame in lines(WATCHLIST) {
            let v: serde_json::Value = serde_json::from_slice(&frame).unwrap();
            let reordered = format!(
                "{{ \"object\" : {} , \"type\" : {} }}",
                serde_json::to_string_pretty(&v["object"]).unwrap(),
                v["type"]
            );
            let fast = describe(event(&frame, Edits::NONE, &mut Reuse::default()).unwrap());
            let general =
                describe(event(reordered.as_bytes(), Edits::NONE, &mut Reuse::default()).unwrap());
            assert_eq!(fast, general);
        }
    }

    #[test]
    fn object_range_is_the_object_as_sent() {
        let frame = lines(WATCHLIST).remove(0);
        let Event::Object {
            object: (s, e),
            meta,
            ..
        } = event(&frame, Edits::NONE, &mut Reuse::default()).unwrap()
        else {
            panic!("not an object")
        };
        let obj = &frame[s..e];
        assert!(obj.starts_with(b"{\"kind\":\"Pod\""));
        assert_eq!(&frame[e..], b"}");
        assert_eq!(meta.uid, "6f824e9e-b6ca-474e-abfe-1335f933eeb9");
        assert_eq!(meta.kind.as_deref(), Some("Pod"));
    }

    #[test]
    fn empty_collection_is_only_the_bookmark() {
        let f = lines(EMPTY);
        assert_eq!(f.len(), 1);
        assert_eq!(
            event(&f[0], Edits::NONE, &mut Reuse::default()).unwrap(),
            Event::Bookmark {
                resource_version: Rv::new("229"),
                initial_events_end: true
            }
        );
    }

    #[test]
    fn error_events_carry_the_status() {
        let f = lines(EXPIRED).remove(0);
        let Event::Error(s) = event(&f, Edits::NONE, &mut Reuse::default()).unwrap() else {
            panic!()
        };
        assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
        assert_eq!(s.message, "too old resource version: 1 (315)");
        let f = lines(TOO_LARGE).remove(0);
        let Event::Error(s) = event(&f, Edits::NONE, &mut Reuse::default()).unwrap() else {
            panic!()
        };
        assert_eq!(
            (s.code, s.rv_too_large, s.retry_after_secs),
            (504, true, Some(1))
        );
        let s = status(FORBIDDEN);
        assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
        assert!(
            s.message.contains("cannot watch resource \"pods\""),
            "{}",
            s.message
        );
        assert_eq!(
            status(b"<html>bad gateway</html>").message,
            "a body of 24 bytes that is not a Status"
        );
    }

    #[test]
    fn bad_frames_and_objects_have_reasons_of_their_own_and_name_the_object() {
        let e = |f: &[u8]| event(f, Edits::NONE, &mut Reuse::default()).unwrap_err();
        let obj = |meta: &str| format!(r#"{{"type":"ADDED","object":{{"metadata":{{{meta}}}}}}}"#);
        assert_eq!(e(b"this is not json").reason, INVALID_FRAME);
        assert!(e(b"this is not json").message.contains("not a watch event"));
        assert!(e(b"{\"type\":\"NOPE\",\"object\":{}}")
            .message
            .contains("\"NOPE\""));
        for odd in ["s3cr3t", "Added", "ADDED ", &"A".repeat(33)] {
            let frame = format!(r#"{{"type":"{odd}","object":{{}}}}"#);
            assert_eq!(
                e(frame.as_bytes()).message,
                format!(
                    "a watch event type of {} bytes that is none Kubernetes sends",
                    odd.len()
                ),
                "not quoted: {odd}"
            );
        }
        assert!(e(b"{\"type\":\"ADDED\"}").message.contains("`object`"));
        let missing = e(obj(r#""name":"x","namespace":"ns","uid":"u""#).as_bytes());
        assert_eq!(
            (
                missing.reason,
                missing.namespace.as_deref(),
                missing.name.as_deref()
            ),
            (INVALID_OBJECT, Some("ns"), Some("x"))
        );
        assert!(
            missing.message.contains("resourceVersion"),
            "{}",
            missing.message
        );
        assert!(e(obj(r#""name":"x","resourceVersion":"1""#).as_bytes())
            .message
            .contains("uid"));
        assert!(e(obj(r#""uid":"u","resourceVersion":"1""#).as_bytes())
            .message
            .contains("name"));
        let long = e(obj(&format!(
            r#""name":"{}","uid":"u","resourceVersion":"1""#,
            "n".repeat(3000)
        ))
        .as_bytes());
        assert!(
            long.message.contains("metadata.name is 3000 bytes"),
            "{}",
            long.message
        );
        let deep = format!(
            r#"{{"type":"ADDED","object":{{"metadata":{{"name":"d","namespace":"ns"}},"spec":{}{}}}}}"#,
            "[".repeat(edits::MAX_DEPTH + 5),
            "]".repeat(edits::MAX_DEPTH + 5)
        );
        let deep = e(deep.as_bytes());
        assert_eq!(
            (deep.reason, deep.name.as_deref()),
            (OBJECT_TOO_DEEP, Some("d"))
        );
        assert_eq!(
            e(b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"\xff\"}}}").reason,
            INVALID_FRAME
        );
        // An opaque resourceVersion is not an error.
        let opaque = obj(r#""name":"x","uid":"u","resourceVersion":"abc""#);
        let ok = event(opaque.as_bytes(), Edits::NONE, &mut Reuse::default()).unwrap();
        assert_eq!(describe(ok), "Added /x abc");
    }

    #[test]
    fn a_frame_that_is_not_utf8_is_reported_as_such_wherever_the_byte_is() {
        // The walk checks UTF-8 as it reads strings; the error must be the
        // one a check of the whole frame first gives, whatever else is wrong.
        let all = Edits {
            scrub: true,
            secret_data: true,
            drop_managed_fields: true,
        };
        let obj = |meta: &str| format!(r#"{{"type":"ADDED","object":{{"metadata":{{{meta}}}}}}}"#);
        let mut rng = 0x243F_6A88_85A3_08D3u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let frames = lines(WATCHLIST);
        let mut checked = 0;
        for round in 0..3000 {
            let mut f = frames[round % frames.len()].clone();
            let bad: &[u8] = [
                &[0xffu8][..],
                &[0xc3],
                &[0xed, 0xa0, 0x80],
                &[0xe2, 0x82],
                &[0xc3, 0xa9],
            ][(next() % 5) as usize];
            let at = (next() as usize) % f.len();
            f.splice(at..at, bad.iter().copied());
            if round % 7 == 0 {
                // And something else wrong after it.
                let at2 = at + (next() as usize) % (f.len() - at);
                f.insert(at2, b'}');
            }
            for edits in [Edits::NONE, all] {
                let got = event(&f, edits, &mut Reuse::default());
                match std::str::from_utf8(&f) {
                    Err(e) => {
                        let err = got.expect_err("not UTF-8");
                        assert_eq!(err.reason, INVALID_FRAME);
                        assert_eq!(
                            err.message,
                            format!(
                                "watch frame: not UTF-8 (invalid byte after {} bytes)",
                                e.valid_up_to()
                            )
                        );
                        assert_eq!((err.name, err.meta), (None, None));
                        checked += 1;
                    }
                    // Valid (é inserted, say): decoded as any object.
                    Ok(_) => {
                        if let Ok(Event::Object { meta, .. }) = got {
                            assert!(!meta.name.is_empty());
                        }
                    }
                }
            }
        }
        assert!(checked > 3000, "{checked}");
        // Text above 0x7f that is UTF-8 is kept, and names with it are read.
        let ok =
            obj(r#""name":"n\u00e9-é","uid":"ü","resourceVersion":"1","labels":{"ключ":"値"}"#);
        let Ok(Event::Object { meta, .. }) = event(ok.as_bytes(), all, &mut Reuse::default())
        else {
            panic!("{ok}")
        };
        assert_eq!((meta.name.as_ref(), meta.uid.as_ref()), ("né-é", "ü"));
    }

    #[test]
    fn list_items_decode_to_metadata() {
        let mut r = crate::wire::frames::ListReader::new(PAGE1, 1 << 20);
        let Ok(Some(crate::wire::frames::ListItem::Item(first))) = r.next_item() else {
            panic!()
        };
        let m = object_meta(std::str::from_utf8(first).unwrap()).unwrap();
        assert_eq!(
            (m.kind, m.name.as_ref()),
            (None, "extension-apiserver-authentication")
        );
    }
}
