//! Protobuf response bodies split as their bytes arrive, each piece turned
//! into the JSON the apiserver would have sent (`envelope`), so that the
//! stream handles them as it handles JSON bodies: a watch body
//! (`application/vnd.kubernetes.protobuf;stream=watch`: a 4-byte big-endian
//! length before each `WatchEvent`) into JSON event frames; a LIST body
//! (an enveloped `PartialObjectMetadataList`) into JSON items and its
//! metadata, item by item: a page of any size costs one item of memory.

use std::io::{self, Read};

use crate::objects::edits::{Edits, Found};
use crate::wire::buffered::Buffered;
use crate::wire::envelope::Walked;
use crate::wire::frames::{FrameError, ListError, ListItem, ListMeta};
use crate::wire::proto_json::Scratch;
use crate::wire::protobuf;
use crate::wire::{envelope, metav1};

/// The longest `typeMeta`, list `metadata`, or other small field read.
const MAX_SMALL: u64 = 1 << 20;

/// A protobuf body being read: its bytes read but not used, and the
/// protobuf pieces (varints, fields) read from them.
struct ProtoBody<R> {
    /// Holds at most the longest piece read whole: the caller's limit.
    bytes: Buffered<R>,
}

impl<R: Read> ProtoBody<R> {
    /// A body whose pieces read whole are at most `limit` bytes.
    fn new(inner: R, limit: usize) -> ProtoBody<R> {
        ProtoBody {
            bytes: Buffered::new(inner, limit),
        }
    }

    fn pending(&self) -> &[u8] {
        self.bytes.pending()
    }

    /// Reads until `k` bytes are pending or the body ends; whether they are.
    /// `k` past the body's limit is an I/O error (the callers check first).
    fn fill(&mut self, k: usize) -> io::Result<bool> {
        self.bytes.fill_to(k)
    }

    fn consume(&mut self, k: usize) {
        self.bytes.consume(k);
    }

    /// Passes over `k` bytes; false when the body ends first.
    fn discard(&mut self, k: u64) -> io::Result<bool> {
        self.bytes.discard(k)
    }

    /// Bytes consumed.
    fn consumed(&self) -> u64 {
        self.bytes.bytes_used()
    }

    /// Bytes read, for stats.
    fn bytes_read(&self) -> u64 {
        self.bytes.bytes_read()
    }

    /// A varint; `Ok(None)` at the end of the body before its first byte.
    fn varint(&mut self) -> Result<Option<u64>, ListError> {
        if !self.fill(1).map_err(ListError::Io)? {
            return Ok(None);
        }
        loop {
            match protobuf::varint(self.pending()) {
                Ok((v, n)) => {
                    self.consume(n);
                    return Ok(Some(v));
                }
                Err(_) if self.pending().len() < 10 => {
                    let more = self.pending().len() + 1;
                    if !self.fill(more).map_err(ListError::Io)? {
                        return Err(invalid("the body ends inside a varint"));
                    }
                }
                Err(e) => return Err(invalid(&e.message)),
            }
        }
    }

    /// A length-delimited value of at most `max` bytes, read whole.
    fn small(&mut self, len: u64, max: u64, what: &str) -> Result<Vec<u8>, ListError> {
        if len > max {
            return Err(invalid(&format!("{what} of {len} bytes")));
        }
        if !self.fill(len as usize).map_err(ListError::Io)? {
            return Err(invalid(&format!("the body ends inside {what}")));
        }
        let v = self.pending()[..len as usize].to_vec();
        self.consume(len as usize);
        Ok(v)
    }

    /// Passes over a field of wire type `wire`.
    fn skip(&mut self, wire: u64) -> Result<(), ListError> {
        let len = match wire {
            0 => {
                return self
                    .varint()?
                    .map(|_| ())
                    .ok_or_else(|| invalid("the body ends inside a field"))
            }
            1 => 8,
            5 => 4,
            2 => self
                .varint()?
                .ok_or_else(|| invalid("the body ends inside a field"))?,
            w => return Err(invalid(&format!("wire type {w}"))),
        };
        if self.discard(len).map_err(ListError::Io)? {
            Ok(())
        } else {
            Err(invalid("the body ends inside a field"))
        }
    }
}

fn invalid(m: &str) -> ListError {
    ListError::Invalid(format!("protobuf list: {m}"))
}

/// A frame as JSON, and what the decoder needs of its object when the one
/// pass wrote it (`envelope::event_in`).
pub(crate) type WalkedFrame<'a> = (&'a [u8], Option<Walked>);

/// Splits a protobuf watch body into frames and hands each out as the JSON
/// event frame the server would have sent.
pub(crate) struct ProtoFrameReader<R> {
    body: ProtoBody<R>,
    max: usize,
    json: Vec<u8>,
    scratch: Box<Scratch>,
}

impl<R: Read> ProtoFrameReader<R> {
    pub(crate) fn new(inner: R, max_frame: usize) -> Self {
        ProtoFrameReader {
            body: ProtoBody::new(inner, max_frame.saturating_add(4)),
            max: max_frame,
            json: Vec::new(),
            scratch: Box::default(),
        }
    }

    /// Total bytes read, for stats.
    pub(crate) fn bytes(&self) -> u64 {
        self.body.bytes_read()
    }

    fn next_len(&self) -> Option<usize> {
        let p = self.body.pending();
        (p.len() >= 4).then(|| u32::from_be_bytes([p[0], p[1], p[2], p[3]]) as usize)
    }

    /// Whether a whole frame is already buffered.
    pub(crate) fn buffered(&self) -> bool {
        self.next_len()
            .is_some_and(|n| n <= self.max && self.body.pending().len() >= 4 + n)
    }

    /// Whether part of a frame has been read.
    pub(crate) fn partial(&self) -> bool {
        !self.body.pending().is_empty()
    }

    /// The next frame as JSON, `Ok(None)` at a clean end of the body. A
    /// frame that is not a metadata-only watch event is
    /// [`FrameError::Invalid`], and the body reads on after it.
    pub(crate) fn next_frame(&mut self) -> Result<Option<&[u8]>, FrameError> {
        self.next_with(None).map(|f| f.map(|(frame, _)| frame))
    }

    /// As [`ProtoFrameReader::next_frame`], an object event's object
    /// written with `edits` in one pass (`envelope::event_in`): then what the
    /// decoder needs of it beside the frame, and nothing walks it again.
    pub(crate) fn next_walked(
        &mut self,
        edits: Edits,
    ) -> Result<Option<WalkedFrame<'_>>, FrameError> {
        self.next_with(Some(edits))
    }

    fn next_with(&mut self, edits: Option<Edits>) -> Result<Option<WalkedFrame<'_>>, FrameError> {
        let body = &mut self.body;
        if !body.fill(4).map_err(FrameError::Io)? {
            let pending = body.pending().len();
            return if pending == 0 {
                Ok(None)
            } else {
                Err(FrameError::Truncated(pending))
            };
        }
        let p = body.pending();
        let n = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) as usize;
        if n > self.max {
            body.consume(4);
            if !body.discard(n as u64).map_err(FrameError::Io)? {
                return Err(FrameError::Truncated(n));
            }
            return Err(FrameError::TooLarge(n));
        }
        if !body.fill(4 + n).map_err(FrameError::Io)? {
            return Err(FrameError::Truncated(body.pending().len()));
        }
        self.json.clear();
        let frame = &body.pending()[4..4 + n];
        let done = match edits {
            Some(edits) => envelope::event_in(frame, &mut self.json, &mut self.scratch, edits),
            None => envelope::event(frame, &mut self.json, &mut self.scratch).map(|()| None),
        };
        body.consume(4 + n);
        match done {
            Ok(walked) => Ok(Some((&self.json, walked))),
            Err(e) => {
                let m = format!("a protobuf watch frame of {n} bytes: {}", e.message);
                Err(if e.not_in_schema {
                    FrameError::Unknown(m)
                } else {
                    FrameError::Invalid(format!("{m}; skipped"))
                })
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProtoListState {
    /// Before the magic and the envelope's fields up to `raw`.
    Start,
    /// Inside `raw` (the `PartialObjectMetadataList`), up to this many
    /// bytes consumed in all.
    Raw(u64),
    /// After `raw`: the envelope's last fields, then the end.
    Tail,
    Done,
}

/// Reads a protobuf LIST body item by item as it arrives, each item handed
/// out as the JSON the server would have sent for it.
pub(crate) struct ProtoListReader<R> {
    body: ProtoBody<R>,
    max_item: usize,
    state: ProtoListState,
    meta: Option<ListMeta>,
    /// The items' `kind` and `apiVersion` (the list's, its kind less `List`).
    kind: Vec<u8>,
    api_version: Vec<u8>,
    json: Vec<u8>,
    scratch: Box<Scratch>,
}

impl<R: Read> ProtoListReader<R> {
    pub(crate) fn new(inner: R, max_item: usize) -> Self {
        ProtoListReader {
            body: ProtoBody::new(inner, max_item.max(MAX_SMALL as usize)),
            max_item,
            state: ProtoListState::Start,
            meta: None,
            kind: Vec::new(),
            api_version: Vec::new(),
            json: Vec::new(),
            scratch: Box::default(),
        }
    }

    /// Total bytes read, for stats.
    pub(crate) fn bytes(&self) -> u64 {
        self.body.bytes_read()
    }

    /// The page's metadata, once read (it comes before the items).
    pub(crate) fn meta(&self) -> Option<&ListMeta> {
        self.meta.as_ref()
    }

    /// The next item, `Ok(None)` once the body has ended cleanly.
    pub(crate) fn next_item(&mut self) -> Result<Option<ListItem<'_>>, ListError> {
        self.next_with(None).map(|i| i.map(|(item, _)| item))
    }

    /// As [`ProtoListReader::next_item`], each item written with `edits` in
    /// one pass (`envelope::item_doc_edited`): then where its metadata is,
    /// and nothing walks it again.
    pub(crate) fn next_item_walked(
        &mut self,
        edits: Edits,
    ) -> Result<Option<(ListItem<'_>, Option<Found>)>, ListError> {
        self.next_with(Some(edits))
    }

    fn next_with(
        &mut self,
        edits: Option<Edits>,
    ) -> Result<Option<(ListItem<'_>, Option<Found>)>, ListError> {
        loop {
            match self.state {
                ProtoListState::Done => return Ok(None),
                ProtoListState::Start => self.start()?,
                ProtoListState::Tail => {
                    let Some(key) = self.body.varint()? else {
                        self.state = ProtoListState::Done;
                        return Ok(None);
                    };
                    self.body.skip(key & 7)?;
                }
                ProtoListState::Raw(end) => {
                    if self.body.consumed() >= end {
                        if self.body.consumed() > end {
                            return Err(invalid("a field runs past the list"));
                        }
                        self.state = ProtoListState::Tail;
                        continue;
                    }
                    let key = self
                        .body
                        .varint()?
                        .ok_or_else(|| invalid("the body ends inside the list"))?;
                    let (number, wire) = (key >> 3, key & 7);
                    if wire != 2 || !matches!(number, 1 | 2) {
                        self.body.skip(wire)?;
                        continue;
                    }
                    let len = self
                        .body
                        .varint()?
                        .ok_or_else(|| invalid("the body ends inside the list"))?;
                    if len > end.saturating_sub(self.body.consumed()) {
                        return Err(invalid(&format!(
                            "a field of {len} bytes runs past the list"
                        )));
                    }
                    if number == 1 {
                        let raw = self.body.small(len, MAX_SMALL, "the list's metadata")?;
                        self.meta = Some(metav1::list_meta(&raw).map_err(|e| invalid(&e.message))?);
                        continue;
                    }
                    if len > self.max_item as u64 {
                        if !self.body.discard(len).map_err(ListError::Io)? {
                            return Err(invalid("the body ends inside an item"));
                        }
                        return Ok(Some((ListItem::TooLarge(len as usize), None)));
                    }
                    let len = len as usize;
                    if !self.body.fill(len).map_err(ListError::Io)? {
                        return Err(invalid("the body ends inside an item"));
                    }
                    self.json.clear();
                    let (out, raw) = (&mut self.json, &self.body.pending()[..len]);
                    let (kind, api_version) = (&self.kind, &self.api_version);
                    let done = match edits {
                        Some(edits) => envelope::item_doc_edited(
                            out,
                            kind,
                            api_version,
                            raw,
                            &mut self.scratch,
                            edits,
                        ),
                        None => envelope::item_doc(out, kind, api_version, raw, &mut self.scratch)
                            .map(|()| None),
                    };
                    self.body.consume(len);
                    return Ok(Some(match done {
                        Ok(found) => (ListItem::Item(&self.json), found),
                        Err(e) => {
                            let m = format!("a protobuf list item of {len} bytes: {}", e.message);
                            if e.not_in_schema {
                                (ListItem::Unknown(m), None)
                            } else {
                                (ListItem::Invalid(format!("{m}; skipped")), None)
                            }
                        }
                    }));
                }
            }
        }
    }

    /// The magic and the envelope up to its `raw` field.
    fn start(&mut self) -> Result<(), ListError> {
        if !self.body.fill(4).map_err(ListError::Io)?
            || self.body.pending()[..4] != protobuf::MAGIC[..]
        {
            return Err(invalid("no k8s protobuf magic"));
        }
        self.body.consume(4);
        loop {
            let key = self
                .body
                .varint()?
                .ok_or_else(|| invalid("no list in the body"))?;
            match (key >> 3, key & 7) {
                (1, 2) => {
                    let len = self.body.varint()?.unwrap_or(0);
                    let raw = self.body.small(len, MAX_SMALL, "typeMeta")?;
                    let (api_version, kind) =
                        protobuf::type_meta(&raw).map_err(|e| invalid(&e.message))?;
                    // Only kinds whose JSON tattler can write as the server
                    // would: metadata, and the built-in kinds of the schema.
                    let item = kind.strip_suffix(b"List").unwrap_or(b"");
                    if item != b"PartialObjectMetadata"
                        && crate::wire::schema::schema()
                            .kind(api_version, item)
                            .is_none()
                    {
                        let shown =
                            String::from_utf8_lossy(&kind[..kind.len().min(64)]).into_owned();
                        return Err(ListError::Unknown(format!(
                            "protobuf list: a body of kind {shown:?}, not in tattler's schema"
                        )));
                    }
                    self.kind = item.to_vec();
                    self.api_version = api_version.to_vec();
                }
                (2, 2) => {
                    let len = self
                        .body
                        .varint()?
                        .ok_or_else(|| invalid("the body ends inside the list"))?;
                    if self.kind.is_empty() {
                        return Err(invalid("a list without its kind"));
                    }
                    self.state = ProtoListState::Raw(self.body.consumed().saturating_add(len));
                    return Ok(());
                }
                (_, wire) => self.body.skip(wire)?,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::buffered::sources::Trickle;
    use crate::wire::frames::ListReader;

    /// Captured from kube-apiserver v1.36.3 (tests/wire/proto/README.md):
    /// each protobuf body, and the JSON body of the same request.
    const CAPTURES: &[(&[u8], &[u8])] = &[
        (
            include_bytes!("../../tests/wire/proto/watchlist-pods.bin"),
            include_bytes!("../../tests/wire/proto/watchlist-pods.jsonl"),
        ),
        (
            include_bytes!("../../tests/wire/proto/watch-expired.bin"),
            include_bytes!("../../tests/wire/proto/watch-expired.jsonl"),
        ),
        (
            include_bytes!("../../tests/wire/proto/watchlist-future-rv.bin"),
            include_bytes!("../../tests/wire/proto/watchlist-future-rv.jsonl"),
        ),
    ];
    const LISTS: &[(&[u8], &[u8])] = &[
        (
            include_bytes!("../../tests/wire/proto/list-pods.bin"),
            include_bytes!("../../tests/wire/proto/list-pods.json"),
        ),
        (
            include_bytes!("../../tests/wire/proto/list-empty.bin"),
            include_bytes!("../../tests/wire/proto/list-empty.json"),
        ),
    ];

    /// Full pods (tests/wire/proto/README.md): the protobuf page, and the
    /// same page as JSON.
    const FULL: (&[u8], &[u8]) = (
        include_bytes!("../../tests/wire/proto/list-pods-full.bin"),
        include_bytes!("../../tests/wire/proto/list-pods-full.json"),
    );

    /// The items of a JSON list body, as sent.
    fn json_items(body: &[u8]) -> Vec<String> {
        let mut r = ListReader::new(body, 1 << 20);
        let mut out = Vec::new();
        while let Some(item) = r.next_item().unwrap() {
            let ListItem::Item(b) = item else { panic!() };
            out.push(String::from_utf8(b.to_vec()).unwrap());
        }
        out
    }

    fn proto_items(body: &[u8], chunk: usize) -> Vec<String> {
        let mut r = ProtoListReader::new(Trickle(body, chunk), 1 << 20);
        let mut out = Vec::new();
        while let Some(item) = r.next_item().unwrap() {
            let ListItem::Item(b) = item else { panic!() };
            out.push(String::from_utf8(b.to_vec()).unwrap());
        }
        out
    }

    #[test]
    fn full_pods_are_the_json_the_server_sends() {
        let (proto, json) = FULL;
        for chunk in [7, 4096, 1 << 20] {
            let full: Vec<String> = proto_items(proto, chunk)
                .into_iter()
                .map(|i| i.replacen("\"kind\":\"Pod\",\"apiVersion\":\"v1\",", "", 1))
                .collect();
            assert_eq!(full, json_items(json), "chunk {chunk}");
        }
        assert_eq!(json_items(json).len(), 2);
    }

    fn frames(body: &[u8], chunk: usize, max: usize) -> Vec<Result<String, String>> {
        let mut r = ProtoFrameReader::new(Trickle(body, chunk), max);
        let mut out = Vec::new();
        loop {
            match r.next_frame() {
                Ok(Some(f)) => out.push(Ok(String::from_utf8_lossy(f).into_owned())),
                Ok(None) => return out,
                Err(FrameError::Invalid(m)) => out.push(Err(m)),
                Err(FrameError::Unknown(m)) => out.push(Err(format!("unknown: {m}"))),
                Err(FrameError::TooLarge(n)) => out.push(Err(format!("too large {n}"))),
                Err(FrameError::Truncated(n)) => {
                    out.push(Err(format!("truncated {n}")));
                    return out;
                }
                Err(FrameError::Io(e)) => panic!("{e}"),
            }
        }
    }

    /// The two requests of a capture were a moment apart: the server's
    /// current resourceVersion, quoted in a message, may differ.
    fn unversioned(s: &str) -> String {
        match s.find("current: ") {
            Some(at) => {
                let rest = &s[at + 9..];
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                format!("{}current: N{}", &s[..at], &rest[digits..])
            }
            None => s.to_string(),
        }
    }

    #[test]
    fn watch_frames_are_the_json_the_server_sends() {
        for (proto, json) in CAPTURES {
            let want: Vec<Result<String, String>> = std::str::from_utf8(json)
                .unwrap()
                .lines()
                .map(|l| Ok(unversioned(l)))
                .collect();
            assert!(!want.is_empty());
            for chunk in [1, 7, 4096] {
                let got: Vec<_> = frames(proto, chunk, 1 << 20)
                    .into_iter()
                    .map(|f| f.map(|f| unversioned(&f)))
                    .collect();
                assert_eq!(got, want, "chunk {chunk}");
            }
        }
    }

    #[test]
    fn the_capture_has_what_the_json_must_get_right() {
        let json = std::str::from_utf8(CAPTURES[0].1).unwrap();
        for needle in [
            "\"deletionTimestamp\":",
            "\"deletionGracePeriodSeconds\":0",
            "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"",
            "\"controller\":true,\"blockOwnerDeletion\":false",
            "\"finalizers\":[\"example.com/keep\"",
            "\"subresource\":\"status\"",
            "\"fieldsV1\":{",
            "kubectl.kubernetes.io/last-applied-configuration",
            "\\u003cb\\u003e \\u0026 \\u2028 tab\\there",
            "é ünïcode",
            "\"k8s.io/initial-events-end\":\"true\"",
        ] {
            assert!(json.contains(needle), "{needle}");
        }
    }

    #[test]
    fn list_items_are_the_json_the_server_sends() {
        for (proto, json) in LISTS {
            let mut want = ListReader::new(*json, 1 << 20);
            let mut want_items = Vec::new();
            while let Some(item) = want.next_item().unwrap() {
                let ListItem::Item(b) = item else {
                    panic!("{item:?}")
                };
                want_items.push(String::from_utf8(b.to_vec()).unwrap());
            }
            for chunk in [1, 5, 4096] {
                let mut got = ProtoListReader::new(Trickle(proto, chunk), 1 << 20);
                let mut items = Vec::new();
                while let Some(item) = got.next_item().unwrap() {
                    let ListItem::Item(b) = item else {
                        panic!("{item:?}")
                    };
                    items.push(String::from_utf8(b.to_vec()).unwrap());
                }
                assert_eq!(items, want_items, "chunk {chunk}");
                assert_eq!(got.meta(), want.meta());
            }
        }
        // The page with a continue token.
        let mut r = ProtoListReader::new(LISTS[0].0, 1 << 20);
        while r.next_item().unwrap().is_some() {}
        assert!(r.meta().unwrap().continue_token.is_some());
    }

    #[test]
    fn oversized_pieces_are_skipped_and_bad_ones_reported() {
        let (proto, json) = CAPTURES[0];
        let lines: Vec<&str> = std::str::from_utf8(json).unwrap().lines().collect();
        // The limit below the largest frame: it alone is skipped.
        let got = frames(proto, 4096, 1200);
        assert_eq!(got.len(), lines.len());
        assert!(got
            .iter()
            .any(|g| g.as_ref().is_err_and(|e| e.starts_with("too large"))));
        assert!(got.iter().any(|g| g.as_ref().is_ok()));
        // A frame whose object lost its magic: reported, and the next read.
        let mut bad = proto.to_vec();
        let at = bad.windows(4).position(|w| w == protobuf::MAGIC).unwrap();
        bad[at] = b'X';
        let got = frames(&bad, 4096, 1 << 20);
        assert_eq!(got.len(), lines.len());
        assert!(got[0]
            .as_ref()
            .unwrap_err()
            .contains("no k8s protobuf magic"));
        assert_eq!(got[1].as_deref(), Ok(lines[1]));
        // Cut in the middle: truncated.
        let got = frames(&proto[..proto.len() - 3], 4096, 1 << 20);
        assert!(got
            .last()
            .unwrap()
            .as_ref()
            .unwrap_err()
            .starts_with("truncated"));
        // A list item over the limit.
        let mut r = ProtoListReader::new(LISTS[0].0, 100);
        assert!(matches!(
            r.next_item().unwrap(),
            Some(ListItem::TooLarge(_))
        ));
        // A protobuf list of a kind outside the schema is refused as one
        // the schema does not know (JSON would carry it); an empty PodList
        // reads.
        let widgets: &[u8] = b"k8s\0\x0a\x10\x0a\x02v1\x12\x0aWidgetList\x12\x00";
        let mut r = ProtoListReader::new(widgets, 1 << 20);
        assert!(matches!(r.next_item(), Err(ListError::Unknown(m)) if m.contains("WidgetList")));
        let pods: &[u8] = b"k8s\0\x0a\x0d\x0a\x02v1\x12\x07PodList\x12\x00";
        let mut r = ProtoListReader::new(pods, 1 << 20);
        assert!(matches!(r.next_item(), Ok(None)));
        // A JSON body is not a protobuf list.
        let mut r = ProtoListReader::new(LISTS[0].1, 1 << 20);
        assert!(matches!(r.next_item(), Err(ListError::Invalid(_))));
        // A cut list body.
        let body = LISTS[0].0;
        let mut r = ProtoListReader::new(&body[..body.len() / 2], 1 << 20);
        let end = loop {
            match r.next_item() {
                Ok(Some(_)) => {}
                other => break other.map(|o| o.is_some()),
            }
        };
        assert!(matches!(end, Err(ListError::Invalid(_))), "{end:?}");
    }

    #[test]
    fn a_frame_costs_its_own_size_of_memory_and_no_more() {
        let frame = |n: usize| {
            let mut f = (n as u32).to_be_bytes().to_vec();
            f.resize(4 + n, 0x0a);
            f
        };
        // Over the limit: passed over in one buffer.
        let body = [frame(3 << 20), frame(1)].concat();
        let mut r = ProtoFrameReader::new(Trickle(&body, 10_000), 1 << 20);
        assert!(matches!(r.next_frame(), Err(FrameError::TooLarge(n)) if n == 3 << 20));
        assert_eq!(r.body.bytes.capacity(), 64 << 10);
        assert!(matches!(r.next_frame(), Err(FrameError::Invalid(_))));
        // Within it: the buffer grows to just the frame, and shrinks after.
        let body = [frame(300_000), frame(1)].concat();
        let mut r = ProtoFrameReader::new(Trickle(&body, 10_000), 1 << 20);
        assert!(matches!(r.next_frame(), Err(FrameError::Invalid(_))));
        assert_eq!(r.body.bytes.capacity(), 300_004);
        assert!(matches!(r.next_frame(), Err(FrameError::Invalid(_))));
        assert!(matches!(r.next_frame(), Ok(None)));
        assert_eq!(r.body.bytes.capacity(), 64 << 10);
        assert_eq!(r.bytes(), body.len() as u64);
    }

    /// Seeded random mutations and cuts of the captures: every outcome is
    /// an item, an error or the end, never a panic, in bounded time.
    #[test]
    fn mutated_captures_never_panic() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let started = std::time::Instant::now();
        let bodies: Vec<&[u8]> = CAPTURES.iter().chain(LISTS).map(|(p, _)| *p).collect();
        for round in 0..3000 {
            let mut b = bodies[round % bodies.len()].to_vec();
            for _ in 0..1 + next() % 4 {
                let at = (next() as usize) % b.len().max(1);
                match next() % 4 {
                    0 => b[at] = next() as u8,
                    1 => b[at] ^= 1 << (next() % 8),
                    2 => b.truncate(at),
                    _ => b.insert(at, next() as u8),
                }
                if b.is_empty() {
                    break;
                }
            }
            let chunk = 1 + (next() as usize) % 64;
            let _ = frames(&b, chunk, 1 + (next() as usize) % 4096);
            let mut r = ProtoListReader::new(Trickle(&b, chunk), 1 << 16);
            for _ in 0..10_000 {
                match r.next_item() {
                    Ok(Some(_)) => {}
                    _ => break,
                }
            }
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
    }
}
