//! Pure decoding: a byte stream into watch frames, a frame into an event,
//! a LIST page into items. No I/O beyond the `Read` it is handed.

use std::borrow::Cow;
use std::io::{self, Read};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::scrub::Edits;

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
    pub resource_version: u64,
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
        resource_version: u64,
        initial_events_end: bool,
    },
    /// An ERROR event.
    Error(Status),
}

/// Why a frame or page could not be decoded. The message names what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecodeError(pub String);

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    object: &'a RawValue,
}

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

/// Decodes one watch frame (`{"type":…,"object":{…}}`).
pub(crate) fn event(frame: &[u8], edits: Edits) -> Result<Event<'_>, DecodeError> {
    // The apiserver writes `{"type":"…","object":{…}}`: find the object
    // without a pass over it; parsing it below validates it. Anything else
    // (or a fast-path failure) takes the general path, which names the error.
    if let Some((kind, obj)) = split_envelope(frame) {
        if let Ok(ev) = event_of(kind, obj, frame, edits) {
            return Ok(ev);
        }
    }
    let raw: RawEvent = serde_json::from_slice(frame)
        .map_err(|e| DecodeError(format!("watch frame is not a watch event: {e}")))?;
    let obj = raw.object.get();
    event_of(raw.kind, obj, frame, edits)
}

/// The event of type `kind` carrying `obj`, a slice of `frame`.
fn event_of<'a>(
    kind: Cow<'a, str>,
    obj: &'a str,
    frame: &'a [u8],
    edits: Edits,
) -> Result<Event<'a>, DecodeError> {
    match kind.as_ref() {
        "ADDED" | "MODIFIED" | "DELETED" => {
            let kind = match kind.as_ref() {
                "ADDED" => EventType::Added,
                "MODIFIED" => EventType::Modified,
                _ => EventType::Deleted,
            };
            let start = obj.as_ptr() as usize - frame.as_ptr() as usize;
            let (meta, edited) = object_walk(obj, edits)?;
            Ok(Event::Object {
                kind,
                meta,
                object: (start, start + obj.len()),
                edited,
            })
        }
        "BOOKMARK" => {
            let b: BookmarkHead = serde_json::from_str(obj)
                .map_err(|e| DecodeError(format!("BOOKMARK object: {e}")))?;
            let initial_events_end = b
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("k8s.io/initial-events-end"))
                .is_some_and(|v| v == "true");
            Ok(Event::Bookmark {
                resource_version: parse_rv(&b.metadata.resource_version)?,
                initial_events_end,
            })
        }
        "ERROR" => Ok(Event::Error(status(obj.as_bytes()))),
        other => Err(DecodeError(format!("unknown watch event type {other:?}"))),
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

/// Parses the metadata of one object's JSON (a full pass: this also checks
/// that the object is valid JSON).
pub(crate) fn object_meta(obj: &str) -> Result<ObjectMeta<'_>, DecodeError> {
    object_walk(obj, NO_EDITS).map(|(meta, _)| meta)
}

/// No byte-level edits.
pub(crate) const NO_EDITS: Edits = Edits {
    scrub: false,
    drop_managed_fields: false,
};

/// One structural pass over an object: checks it, makes `edits` (the edited
/// bytes, if anything changed) and finds its metadata.
pub(crate) fn object_walk(
    obj: &str,
    edits: Edits,
) -> Result<(ObjectMeta<'_>, Option<Vec<u8>>), DecodeError> {
    let (edited, found) = crate::scrub::walk(obj.as_bytes(), edits).map_err(|_| {
        // Let serde say what is wrong and where.
        match serde_json::from_str::<serde::de::IgnoredAny>(obj) {
            Err(e) => DecodeError(format!("object: {e}")),
            Ok(_) => DecodeError("object is not a JSON object".into()),
        }
    })?;
    let text = |span: Option<(usize, usize)>| -> Option<Cow<'_, str>> {
        let (s, e) = span?;
        let raw = &obj[s + 1..e - 1];
        if raw.contains('\\') {
            serde_json::from_str::<String>(&obj[s..e])
                .ok()
                .map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(raw))
        }
    };
    let missing = |f: &str| DecodeError(format!("object has no metadata.{f}"));
    let meta = ObjectMeta {
        kind: text(found.kind),
        namespace: text(found.namespace).filter(|n| !n.is_empty()),
        name: text(found.name).ok_or_else(|| missing("name"))?,
        uid: text(found.uid).ok_or_else(|| missing("uid"))?,
        resource_version: parse_rv(
            &text(found.resource_version).ok_or_else(|| missing("resourceVersion"))?,
        )?,
    };
    Ok((meta, edited))
}

/// A Status body; anything unparsable becomes a Status with just the text.
pub(crate) fn status(body: &[u8]) -> Status {
    match serde_json::from_slice::<StatusBody>(body) {
        Ok(s) => {
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
        Err(_) => Status {
            message: String::from_utf8_lossy(&body[..body.len().min(512)])
                .trim()
                .to_string(),
            ..Status::default()
        },
    }
}

fn parse_rv(rv: &str) -> Result<u64, DecodeError> {
    rv.parse()
        .map_err(|_| DecodeError(format!("resourceVersion {rv:?} is not an integer")))
}

/// One LIST page: its resourceVersion, continue token and items' JSON.
pub(crate) struct ListPage<'a> {
    pub resource_version: u64,
    pub continue_token: Option<String>,
    pub items: Vec<&'a str>,
}

#[derive(Deserialize)]
struct RawList<'a> {
    metadata: ListMeta,
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct ListMeta {
    #[serde(rename = "resourceVersion")]
    resource_version: String,
    #[serde(rename = "continue", default)]
    continue_token: Option<String>,
}

/// The `metadata` of a LIST body from its first bytes (it precedes the
/// items): the resourceVersion and continue token of a page too large to read.
pub(crate) fn list_head(prefix: &[u8]) -> Option<(u64, Option<String>)> {
    const KEY: &[u8] = b"\"metadata\":";
    let at = memchr::memmem::find(prefix, KEY)? + KEY.len();
    let mut de = serde_json::Deserializer::from_slice(&prefix[at..]);
    let meta = <ListMeta as Deserialize>::deserialize(&mut de).ok()?;
    Some((
        parse_rv(&meta.resource_version).ok()?,
        meta.continue_token.filter(|c| !c.is_empty()),
    ))
}

/// Decodes a LIST response body.
pub(crate) fn list_page(body: &[u8]) -> Result<ListPage<'_>, DecodeError> {
    let raw: RawList =
        serde_json::from_slice(body).map_err(|e| DecodeError(format!("list body: {e}")))?;
    Ok(ListPage {
        resource_version: parse_rv(&raw.metadata.resource_version)?,
        continue_token: raw.metadata.continue_token.filter(|c| !c.is_empty()),
        items: raw
            .items
            .unwrap_or_default()
            .into_iter()
            .map(RawValue::get)
            .collect(),
    })
}

/// Errors of the frame reader.
#[derive(Debug)]
pub(crate) enum FrameError {
    /// Reading the body failed (cut connection, idle timeout, shutdown).
    Io(io::Error),
    /// A frame was longer than the limit; it was skipped up to its end.
    TooLarge(usize),
    /// The body ended in the middle of a frame.
    Truncated(usize),
}

/// Splits a watch body into frames as bytes arrive, one JSON event a line,
/// without waiting for the body to end.
pub(crate) struct FrameReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// `buf[start..end]` holds bytes read but not yet handed out.
    start: usize,
    end: usize,
    /// Bytes before `scan` (from `start`) hold no newline.
    scan: usize,
    max: usize,
    /// Bytes of an over-long frame being skipped.
    skipping: Option<usize>,
    /// Where [`buffered`](Self::buffered) found the next frame's newline.
    found: Option<usize>,
    /// Total bytes read, for stats.
    pub bytes: u64,
}

const READ_CHUNK: usize = 64 << 10;

impl<R: Read> FrameReader<R> {
    pub(crate) fn new(inner: R, max_frame: usize) -> Self {
        FrameReader {
            inner,
            buf: vec![0; READ_CHUNK],
            start: 0,
            end: 0,
            scan: 0,
            max: max_frame,
            skipping: None,
            found: None,
            bytes: 0,
        }
    }

    /// Whether a whole frame is already buffered: if so, the next
    /// [`next_frame`](Self::next_frame) returns it (or its error) without reading.
    pub(crate) fn buffered(&mut self) -> bool {
        loop {
            if self.found.is_some() {
                return true;
            }
            let Some(pos) = memchr::memchr(b'\n', &self.buf[self.scan..self.end]) else {
                self.scan = self.end;
                return false;
            };
            let nl = self.scan + pos;
            if self.skipping.is_none() && trim(&self.buf[self.start..nl]).is_empty() {
                // A blank line, which next_frame would pass over.
                self.start = nl + 1;
                self.scan = self.start;
                continue;
            }
            self.found = Some(nl);
        }
    }

    /// The next frame, `Ok(None)` at a clean end of the body.
    pub(crate) fn next_frame(&mut self) -> Result<Option<&[u8]>, FrameError> {
        loop {
            let found = self.found.take().or_else(|| {
                memchr::memchr(b'\n', &self.buf[self.scan..self.end]).map(|pos| self.scan + pos)
            });
            if let Some(nl) = found {
                let (start, line) = (self.start, &self.buf[self.start..nl]);
                self.start = nl + 1;
                self.scan = self.start;
                if let Some(skipped) = self.skipping.take() {
                    return Err(FrameError::TooLarge(skipped + line.len()));
                }
                if line.len() > self.max {
                    return Err(FrameError::TooLarge(line.len()));
                }
                if !trim(line).is_empty() {
                    // Borrowed anew: a borrow returned from inside the loop
                    // must not be the one the loop goes on with.
                    return Ok(Some(trim(&self.buf[start..nl])));
                }
                continue;
            }
            self.scan = self.end;
            let pending = self.end - self.start;
            if let Some(skipped) = self.skipping.as_mut() {
                *skipped += pending;
                self.start = 0;
                self.end = 0;
                self.scan = 0;
            } else if pending > self.max {
                self.skipping = Some(pending);
                self.start = 0;
                self.end = 0;
                self.scan = 0;
            } else if self.start > 0 && (self.end == self.buf.len() || self.start == self.end) {
                self.buf.copy_within(self.start..self.end, 0);
                self.end = pending;
                self.scan = pending;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                let grown = (self.buf.len() * 2).min(self.max + 1);
                self.buf.resize(grown.max(self.end + 1), 0);
            }
            let n = match self.inner.read(&mut self.buf[self.end..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(FrameError::Io(e)),
            };
            if n == 0 {
                let pending = self.end - self.start;
                if let Some(skipped) = self.skipping.take() {
                    return Err(FrameError::TooLarge(skipped));
                }
                if trim(&self.buf[self.start..self.end]).is_empty() {
                    return Ok(None);
                }
                return Err(FrameError::Truncated(pending));
            }
            self.bytes += n as u64;
            self.end += n;
            self.shrink_if_idle();
        }
    }

    /// After a huge frame, give the memory back once the buffer is empty.
    fn shrink_if_idle(&mut self) {
        if self.buf.len() > 4 * READ_CHUNK && self.start == self.end {
            self.buf = vec![0; READ_CHUNK];
            self.start = 0;
            self.end = 0;
            self.scan = 0;
        }
    }
}

fn trim(line: &[u8]) -> &[u8] {
    let mut l = line;
    while let [rest @ .., b'\r' | b' ' | b'\t'] = l {
        l = rest;
    }
    while let [b' ' | b'\t' | b'\r', rest @ ..] = l {
        l = rest;
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    const WATCHLIST: &[u8] = include_bytes!("../tests/wire/a-watchlist-pods.body.jsonl");
    const EMPTY: &[u8] = include_bytes!("../tests/wire/b-watchlist-empty.body.jsonl");
    const EXPIRED: &[u8] = include_bytes!("../tests/wire/c1-watch-rv1.body.jsonl");
    const TOO_LARGE: &[u8] = include_bytes!("../tests/wire/i-watchlist-future-rv.body.jsonl");
    const PAGE1: &[u8] = include_bytes!("../tests/wire/d-list-page1.json");
    const FORBIDDEN: &[u8] = include_bytes!("../tests/wire/f-403-nobody-watchlist.json");

    fn frames(body: &[u8], max: usize, chunk: usize) -> Vec<Result<Vec<u8>, String>> {
        struct Trickle<'a>(&'a [u8], usize);
        impl Read for Trickle<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(self.1).min(out.len());
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut r = FrameReader::new(Trickle(body, chunk), max);
        let mut out = Vec::new();
        loop {
            // Asking whether a frame is buffered changes nothing, and a yes
            // means the next frame comes without a read.
            let (buffered, read) = (r.buffered(), r.bytes);
            let next = r.next_frame();
            let next = next.map(|f| f.map(<[u8]>::to_vec));
            if buffered {
                assert_eq!(r.bytes, read, "buffered, yet read");
            }
            match next {
                Ok(Some(f)) => out.push(Ok(f)),
                Ok(None) => return out,
                Err(FrameError::TooLarge(n)) => out.push(Err(format!("too large {n}"))),
                Err(FrameError::Truncated(n)) => {
                    out.push(Err(format!("truncated {n}")));
                    return out;
                }
                Err(FrameError::Io(e)) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn real_watch_list_decodes_to_the_expected_events() {
        let got: Vec<String> = frames(WATCHLIST, 1 << 20, 7)
            .into_iter()
            .map(|f| match event(&f.unwrap(), NO_EDITS).unwrap() {
                Event::Object { kind, meta, .. } => format!(
                    "{kind:?} {}/{} {}",
                    meta.namespace.unwrap_or_default(),
                    meta.name,
                    meta.resource_version
                ),
                Event::Bookmark {
                    resource_version,
                    initial_events_end,
                } => {
                    format!("Bookmark {resource_version} {initial_events_end}")
                }
                Event::Error(s) => format!("Error {}", s.code),
            })
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
    fn object_range_is_the_object_as_sent() {
        let frame = frames(WATCHLIST, 1 << 20, 1 << 20).remove(0).unwrap();
        let Event::Object {
            object: (s, e),
            meta,
            ..
        } = event(&frame, NO_EDITS).unwrap()
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
        let f = frames(EMPTY, 1 << 20, 3);
        assert_eq!(f.len(), 1);
        assert_eq!(
            event(f[0].as_ref().unwrap(), NO_EDITS).unwrap(),
            Event::Bookmark {
                resource_version: 229,
                initial_events_end: true
            }
        );
    }

    #[test]
    fn error_events_carry_the_status() {
        let f = frames(EXPIRED, 1 << 20, 5).remove(0).unwrap();
        let Event::Error(s) = event(&f, NO_EDITS).unwrap() else {
            panic!()
        };
        assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
        assert_eq!(s.message, "too old resource version: 1 (315)");
        let f = frames(TOO_LARGE, 1 << 20, 5).remove(0).unwrap();
        let Event::Error(s) = event(&f, NO_EDITS).unwrap() else {
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
            "<html>bad gateway</html>"
        );
    }

    #[test]
    fn frames_survive_any_split_and_oversized_ones_are_skipped() {
        let body = b"{\"a\":1}\n\r\n{\"b\":\"0123456789\"}\n{\"c\":3}\n{\"d\":4";
        for chunk in 1..body.len() {
            let got = frames(body, 12, chunk);
            assert_eq!(
                got,
                vec![
                    Ok(b"{\"a\":1}".to_vec()),
                    Err("too large 18".into()),
                    Ok(b"{\"c\":3}".to_vec()),
                    Err("truncated 6".into())
                ],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn bad_frames_name_the_problem() {
        let e = |f: &[u8]| event(f, NO_EDITS).unwrap_err().0;
        assert!(e(b"this is not json").contains("not a watch event"));
        assert!(e(b"{\"type\":\"NOPE\",\"object\":{}}").contains("\"NOPE\""));
        assert!(e(
            b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\",\"uid\":\"u\"}}}"
        )
        .contains("resourceVersion"));
        assert!(e(b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\",\"uid\":\"u\",\"resourceVersion\":\"abc\"}}}")
            .contains("\"abc\""));
        assert!(
            e(b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"\xff\"}}}")
                .contains("not a watch event")
        );
    }

    #[test]
    fn the_head_of_a_list_page_is_read_without_its_items() {
        let cut = &PAGE1[..PAGE1.len() / 2];
        let (rv, token) = list_head(cut).unwrap();
        assert_eq!(rv, 229);
        assert!(token.unwrap().starts_with("eyJ2Ijoib"));
        assert_eq!(list_head(b"{\"kind\":\"List\""), None);
    }

    #[test]
    fn list_pages() {
        let p = list_page(PAGE1).unwrap();
        assert_eq!(p.resource_version, 229);
        assert!(p
            .continue_token
            .as_deref()
            .unwrap()
            .starts_with("eyJ2Ijoib"));
        assert_eq!(p.items.len(), 2);
        let m = object_meta(p.items[0]).unwrap();
        assert_eq!(
            (m.kind, m.name.as_ref()),
            (None, "extension-apiserver-authentication")
        );
    }
}
