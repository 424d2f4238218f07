//! Splitting response bodies as their bytes arrive, never holding more than
//! one piece (and a read buffer): a watch body into frames, one JSON event a
//! line; a LIST body into its items and its metadata.

use std::io::{self, Read};

use serde::Deserialize;

use crate::resource_version::Rv;
use crate::wire::buffered::Buffered;
use crate::wire::decode::json_error;

/// Errors of the frame reader.
#[derive(Debug)]
pub(crate) enum FrameError {
    /// Reading the body failed (cut connection, idle timeout, shutdown).
    Io(io::Error),
    /// A frame was longer than the limit; it was skipped up to its end.
    TooLarge(usize),
    /// The body ended in the middle of a frame.
    Truncated(usize),
    /// A protobuf frame that could not be turned into a JSON event (the
    /// message says why); skipped, the body reads on.
    Invalid(String),
    /// A protobuf frame naming a field or kind tattler's schema does not
    /// have (a newer server's): JSON would carry it.
    Unknown(String),
}

/// Splits a watch body into frames as bytes arrive, one JSON event a line,
/// without waiting for the body to end. A frame is handed out where it lies
/// in the read buffer: no copy.
pub(crate) struct FrameReader<R> {
    /// Grows to at most a frame's limit and a byte: an over-long frame is
    /// dropped as it comes.
    input: Buffered<R>,
    /// The pending bytes before `scan` hold no newline.
    scan: usize,
    max: usize,
    /// Bytes of an over-long frame being skipped.
    skipping: Option<usize>,
    /// Where [`buffered`](Self::buffered) found the next frame's newline,
    /// in the pending bytes.
    found: Option<usize>,
}

impl<R: Read> FrameReader<R> {
    pub(crate) fn new(inner: R, max_frame: usize) -> Self {
        FrameReader {
            input: Buffered::new(inner, max_frame.saturating_add(1)),
            scan: 0,
            max: max_frame,
            skipping: None,
            found: None,
        }
    }

    /// Total bytes read, for stats.
    pub(crate) fn bytes(&self) -> u64 {
        self.input.bytes_read()
    }

    /// Whether a whole frame is already buffered: if so, the next
    /// [`next_frame`](Self::next_frame) returns it (or its error) without reading.
    pub(crate) fn buffered(&mut self) -> bool {
        loop {
            if self.found.is_some() {
                return true;
            }
            let Some(nl) = self.input.find(b'\n', self.scan, usize::MAX) else {
                self.scan = self.input.pending().len();
                return false;
            };
            if self.skipping.is_none() && trim(&self.input.pending()[..nl]).is_empty() {
                // A blank line, which next_frame would pass over.
                self.input.consume(nl + 1);
                self.scan = 0;
                continue;
            }
            self.found = Some(nl);
        }
    }

    /// Whether part of a frame has been read (a stall now is mid-frame).
    pub(crate) fn partial(&self) -> bool {
        !self.input.pending().is_empty() || self.skipping.is_some()
    }

    /// The next frame, `Ok(None)` at a clean end of the body.
    pub(crate) fn next_frame(&mut self) -> Result<Option<&[u8]>, FrameError> {
        loop {
            let found = match self.found.take() {
                Some(nl) => Some(nl),
                None => self.input.find(b'\n', self.scan, usize::MAX),
            };
            if let Some(nl) = found {
                self.scan = 0;
                if let Some(skipped) = self.skipping.take() {
                    self.input.consume(nl + 1);
                    return Err(FrameError::TooLarge(skipped + nl));
                }
                if nl > self.max {
                    self.input.consume(nl + 1);
                    return Err(FrameError::TooLarge(nl));
                }
                if trim(&self.input.pending()[..nl]).is_empty() {
                    self.input.consume(nl + 1);
                    continue;
                }
                return Ok(Some(trim(&self.input.take_bytes(nl + 1)[..nl])));
            }
            let pending = self.input.pending().len();
            self.scan = pending;
            if let Some(skipped) = self.skipping.as_mut() {
                *skipped += pending;
                self.input.clear();
                self.scan = 0;
            } else if pending > self.max {
                self.skipping = Some(pending);
                self.input.clear();
                self.scan = 0;
            }
            if self.input.fill().map_err(FrameError::Io)? == 0 {
                if let Some(skipped) = self.skipping.take() {
                    return Err(FrameError::TooLarge(skipped));
                }
                let rest = self.input.pending();
                if trim(rest).is_empty() {
                    return Ok(None);
                }
                return Err(FrameError::Truncated(rest.len()));
            }
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

/// One piece of a LIST body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ListItem<'a> {
    /// An item's JSON, as sent (its structure is the decoder's to check).
    Item(&'a [u8]),
    /// An item longer than the limit, skipped; its length.
    TooLarge(usize),
    /// A protobuf item that could not be turned into JSON (the message says
    /// why); skipped.
    Invalid(String),
    /// A protobuf item naming a field or kind tattler's schema does not have
    /// (a newer server's): JSON would carry it.
    Unknown(String),
}

/// The `metadata` of a LIST page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListMeta {
    pub resource_version: Rv,
    pub continue_token: Option<String>,
    /// `shardInfo.selector`: the shard selector the server applied, echoed
    /// in its own words (only a server that shards sends it).
    pub shard_selector: Option<String>,
}

/// Why a LIST body could not be read.
#[derive(Debug)]
pub(crate) enum ListError {
    /// Reading the body failed (cut connection, idle timeout, shutdown).
    Io(io::Error),
    /// Not a LIST: the message says what was found where.
    Invalid(String),
    /// A protobuf LIST of a kind tattler's schema does not have (a newer
    /// server's): JSON would carry it.
    Unknown(String),
}

#[derive(Deserialize)]
struct RawListMeta {
    #[serde(rename = "resourceVersion", default)]
    resource_version: String,
    #[serde(rename = "continue", default)]
    continue_token: Option<String>,
    #[serde(rename = "shardInfo", default)]
    shard_info: Option<RawShardInfo>,
}

#[derive(Deserialize)]
struct RawShardInfo {
    #[serde(default)]
    selector: String,
}

/// The longest `metadata` of a LIST page, and key, read.
const MAX_LIST_META: usize = 1 << 20;
const MAX_KEY: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListState {
    /// Before the body's `{`.
    Start,
    /// Before a member of the top-level object (or its `}`).
    Member,
    /// After a member's value: `,` or `}`.
    AfterMember,
    /// Before an item (or the `]`).
    Item,
    /// After an item: `,` or `]`.
    AfterItem,
    /// After the top-level `}`: only white space may follow.
    End,
    Done,
}

/// Reads a LIST response body (`{"kind":…,"metadata":{…},"items":[…]}`) item
/// by item as it arrives, so a page of any size costs one item of memory.
pub(crate) struct ListReader<R> {
    /// Grows to at most the longest value kept and a byte: a longer one is
    /// dropped as it comes.
    input: Buffered<R>,
    max_item: usize,
    state: ListState,
    meta: Option<ListMeta>,
    /// The length of the last value skipped as too long.
    skipped: usize,
}

/// How far a value extends, scanned as bytes arrive: brackets and strings
/// only; the decoder checks the rest of an item.
#[derive(Default)]
struct Scan {
    depth: usize,
    in_string: bool,
    escape: bool,
    /// Bytes of the value scanned so far.
    len: usize,
    /// A number or literal: it ends at the first delimiter.
    bare: bool,
}

impl Scan {
    /// Scans `bytes` (the value's next bytes); the length of the value's
    /// last part when it ends within them.
    fn feed(&mut self, bytes: &[u8]) -> Option<usize> {
        for (i, &b) in bytes.iter().enumerate() {
            if self.len == 0 && i == 0 {
                self.bare = !matches!(b, b'{' | b'[' | b'"');
            }
            if self.bare {
                if matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\r' | b'\n') {
                    self.len += i;
                    return Some(i);
                }
                continue;
            }
            if self.in_string {
                if self.escape {
                    self.escape = false;
                } else if b == b'\\' {
                    self.escape = true;
                } else if b == b'"' {
                    self.in_string = false;
                    if self.depth == 0 {
                        self.len += i + 1;
                        return Some(i + 1);
                    }
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        self.len += i + 1;
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
        }
        self.len += bytes.len();
        None
    }
}

impl<R: Read> ListReader<R> {
    pub(crate) fn new(inner: R, max_item: usize) -> Self {
        let max_item = max_item.max(1);
        ListReader {
            input: Buffered::new(inner, max_item.max(MAX_LIST_META).saturating_add(1)),
            max_item,
            state: ListState::Start,
            meta: None,
            skipped: 0,
        }
    }

    /// Total bytes read, for stats.
    pub(crate) fn bytes(&self) -> u64 {
        self.input.bytes_read()
    }

    /// The page's metadata, once [`next_item`](Self::next_item) has returned
    /// `Ok(None)` (or earlier, when it came before the items).
    pub(crate) fn meta(&self) -> Option<&ListMeta> {
        self.meta.as_ref()
    }

    /// The next item; `Ok(None)` once the body is complete.
    pub(crate) fn next_item(&mut self) -> Result<Option<ListItem<'_>>, ListError> {
        loop {
            match self.state {
                ListState::Done => return Ok(None),
                ListState::Start => {
                    self.expect(b'{', "a JSON object")?;
                    self.state = ListState::Member;
                }
                ListState::Member => {
                    if self.peek_ws()? == Some(b'}') {
                        self.input.consume(1);
                        self.state = ListState::End;
                        continue;
                    }
                    let key = self.key()?;
                    self.expect(b':', "`:` after a key")?;
                    match key.as_slice() {
                        b"items" => {
                            if self.peek_ws()? == Some(b'[') {
                                self.input.consume(1);
                                self.state = ListState::Item;
                            } else {
                                // `null` (an empty list), or anything else: skipped.
                                self.skip_value()?;
                                self.state = ListState::AfterMember;
                            }
                        }
                        b"metadata" => {
                            let len = self.capture(MAX_LIST_META)?.ok_or_else(|| {
                                ListError::Invalid("the list's metadata is over 1 MiB".into())
                            })?;
                            let raw: RawListMeta = serde_json::from_slice(
                                self.input.take_bytes(len),
                            )
                            .map_err(|e| {
                                ListError::Invalid(format!(
                                    "the list's metadata {}",
                                    json_error(&e)
                                ))
                            })?;
                            self.meta = Some(ListMeta {
                                resource_version: Rv::new(&raw.resource_version),
                                continue_token: raw.continue_token.filter(|c| !c.is_empty()),
                                shard_selector: raw.shard_info.map(|i| i.selector),
                            });
                            self.state = ListState::AfterMember;
                        }
                        _ => {
                            self.skip_value()?;
                            self.state = ListState::AfterMember;
                        }
                    }
                }
                ListState::AfterMember => match self.peek_ws()? {
                    Some(b',') => {
                        self.input.consume(1);
                        self.state = ListState::Member;
                    }
                    Some(b'}') => {
                        self.input.consume(1);
                        self.state = ListState::End;
                    }
                    other => return Err(self.unexpected(other, "`,` or `}` after a member")),
                },
                ListState::Item => {
                    if self.peek_ws()? == Some(b']') {
                        self.input.consume(1);
                        self.state = ListState::AfterMember;
                        continue;
                    }
                    self.state = ListState::AfterItem;
                    let max = self.max_item;
                    return Ok(Some(match self.capture(max)? {
                        Some(len) => ListItem::Item(self.input.take_bytes(len)),
                        None => ListItem::TooLarge(self.skipped),
                    }));
                }
                ListState::AfterItem => match self.peek_ws()? {
                    Some(b',') => {
                        self.input.consume(1);
                        self.state = ListState::Item;
                    }
                    Some(b']') => {
                        self.input.consume(1);
                        self.state = ListState::AfterMember;
                    }
                    other => return Err(self.unexpected(other, "`,` or `]` after an item")),
                },
                ListState::End => match self.peek_ws()? {
                    None => {
                        self.state = ListState::Done;
                        if self.meta.is_none() {
                            return Err(ListError::Invalid("the list has no metadata".into()));
                        }
                    }
                    other => return Err(self.unexpected(other, "the end of the body")),
                },
            }
        }
    }

    /// What was found instead of `want`: JSON's own punctuation is named,
    /// any other byte is not (it may be a value's).
    fn unexpected(&self, found: Option<u8>, want: &str) -> ListError {
        let at = self.input.bytes_used();
        ListError::Invalid(match found {
            Some(b) if b"{}[],:\"".contains(&b) => {
                format!("expected {want}, found {:?} after {at} bytes", b as char)
            }
            Some(_) => format!("expected {want}, found another byte after {at} bytes"),
            None => format!("expected {want}, found the end of the body"),
        })
    }

    /// The next byte that is not white space, not consumed; `None` at the end.
    fn peek_ws(&mut self) -> Result<Option<u8>, ListError> {
        loop {
            let pending = self.input.pending();
            let ws = pending
                .iter()
                .take_while(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
                .count();
            if let Some(&b) = pending.get(ws) {
                self.input.consume(ws);
                return Ok(Some(b));
            }
            self.input.clear();
            if self.input.fill().map_err(ListError::Io)? == 0 {
                return Ok(None);
            }
        }
    }

    fn expect(&mut self, b: u8, what: &str) -> Result<(), ListError> {
        match self.peek_ws()? {
            Some(x) if x == b => {
                self.input.consume(1);
                Ok(())
            }
            other => Err(self.unexpected(other, what)),
        }
    }

    /// A member's key, unescaped.
    fn key(&mut self) -> Result<Vec<u8>, ListError> {
        if self.peek_ws()? != Some(b'"') {
            let found = self.peek_ws()?;
            return Err(self.unexpected(found, "a key"));
        }
        let len = self
            .capture(MAX_KEY)?
            .ok_or_else(|| ListError::Invalid("a key of the list is over 1 KiB".into()))?;
        serde_json::from_slice::<String>(self.input.take_bytes(len))
            .map(String::into_bytes)
            .map_err(|e| ListError::Invalid(format!("a key of the list {}", json_error(&e))))
    }

    fn skip_value(&mut self) -> Result<(), ListError> {
        self.capture(0).map(|_| ())
    }

    /// Reads the value that starts at the next byte: its length, when it
    /// is at most `max` bytes long (it is then the first pending bytes, for
    /// the caller to take), else `None` (it was read and dropped; its length
    /// is in `skipped`). Memory stays within the reader's bound however
    /// long the value.
    fn capture(&mut self, max: usize) -> Result<Option<usize>, ListError> {
        if self.peek_ws()?.is_none() {
            return Err(ListError::Invalid(
                "the body ended where a value should be".into(),
            ));
        }
        let mut scan = Scan::default();
        // While kept, the value's bytes so far are the first `scan.len`
        // pending bytes; once not, they are dropped as they are scanned.
        let mut kept = true;
        loop {
            let from = if kept { scan.len } else { 0 };
            if let Some(n) = scan.feed(&self.input.pending()[from..]) {
                if kept && scan.len <= max {
                    return Ok(Some(scan.len));
                }
                self.input.consume(from + n);
                self.skipped = scan.len;
                return Ok(None);
            }
            kept &= scan.len <= max;
            if !kept {
                self.input.clear();
            }
            if self.input.fill().map_err(ListError::Io)? == 0 {
                if scan.bare {
                    // A bare value ending the body (only in an invalid list).
                    self.skipped = scan.len;
                    return Ok(kept.then_some(scan.len));
                }
                return Err(ListError::Invalid(
                    "the body ended in the middle of a value".into(),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::buffered::sources::Trickle;

    const PAGE1: &[u8] = include_bytes!("../../tests/wire/d-list-page1.json");

    fn frames(body: &[u8], max: usize, chunk: usize) -> Vec<Result<Vec<u8>, String>> {
        let mut r = FrameReader::new(Trickle(body, chunk), max);
        let mut out = Vec::new();
        loop {
            // Asking whether a frame is buffered changes nothing, and a yes
            // means the next frame comes without a read.
            let (buffered, read) = (r.buffered(), r.bytes());
            let next = r.next_frame();
            let next = next.map(|f| f.map(<[u8]>::to_vec));
            if buffered {
                assert_eq!(r.bytes(), read, "buffered, yet read");
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
                Err(FrameError::Invalid(m) | FrameError::Unknown(m)) => panic!("{m}"),
            }
        }
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
    fn memory_stays_within_a_frame_and_comes_back_after_a_huge_one() {
        // A 1 MiB line over a 100 KB limit: dropped as it comes.
        let mut body = vec![b'a'; 1 << 20];
        body.extend_from_slice(b"\n{\"x\":1}\n");
        let mut r = FrameReader::new(Trickle(&body, 10_000), 100_000);
        assert!(matches!(r.next_frame(), Err(FrameError::TooLarge(n)) if n == 1 << 20));
        assert_eq!(r.input.capacity(), 100_001);
        assert_eq!(r.next_frame().unwrap(), Some(&b"{\"x\":1}"[..]));
        // A 300 KB frame within the limit: the buffer grows for it, and
        // shrinks once it has been handed out.
        let mut body = vec![b'b'; 300_000];
        body.extend_from_slice(b"\n{\"y\":2}\n");
        let mut r = FrameReader::new(Trickle(&body, 10_000), 1 << 20);
        assert_eq!(r.next_frame().unwrap().map(<[u8]>::len), Some(300_000));
        assert_eq!(r.input.capacity(), 512 << 10);
        assert_eq!(r.next_frame().unwrap(), Some(&b"{\"y\":2}"[..]));
        assert_eq!(r.next_frame().unwrap(), None);
        assert_eq!(r.input.capacity(), 64 << 10);
    }

    #[test]
    fn a_list_holds_at_most_about_two_items_of_memory() {
        let mut body = br#"{"metadata":{"resourceVersion":"1"},"items":[{"a":""#.to_vec();
        body.extend(std::iter::repeat_n(b'z', 1 << 20));
        body.extend_from_slice(br#""},{"b":1}]}"#);
        for chunk in [1000, 1 << 20] {
            let mut r = ListReader::new(Trickle(&body, chunk), 100_000);
            assert!(
                matches!(r.next_item().unwrap(), Some(ListItem::TooLarge(n)) if n == (1 << 20) + 8)
            );
            assert!(r.input.capacity() <= 200_000, "{}", r.input.capacity());
            assert_eq!(r.next_item().unwrap(), Some(ListItem::Item(br#"{"b":1}"#)));
            assert_eq!(r.next_item().unwrap(), None);
        }
    }

    fn items(body: &[u8], max: usize, chunk: usize) -> Result<(Vec<String>, ListMeta), String> {
        let mut r = ListReader::new(Trickle(body, chunk), max);
        let mut out = Vec::new();
        loop {
            match r.next_item() {
                Ok(Some(ListItem::Item(b))) => out.push(String::from_utf8(b.to_vec()).unwrap()),
                Ok(Some(ListItem::TooLarge(n))) => out.push(format!("too large {n}")),
                Ok(Some(ListItem::Invalid(m) | ListItem::Unknown(m))) => panic!("{m}"),
                Ok(None) => return Ok((out, r.meta().cloned().unwrap())),
                Err(ListError::Invalid(m) | ListError::Unknown(m)) => return Err(m),
                Err(ListError::Io(e)) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn list_items_come_one_by_one_however_the_body_is_split() {
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"c1"},"items":[{"a":"}]\"{["},{"b":[1,{"c":2}]} ,{"too":"long long long!"}, {"d":{}}]}"#;
        for chunk in 1..body.len() {
            let (got, meta) = items(body, 24, chunk).unwrap();
            assert_eq!(
                got,
                [
                    r#"{"a":"}]\"{["}"#,
                    r#"{"b":[1,{"c":2}]}"#,
                    "too large 25",
                    r#"{"d":{}}"#
                ],
                "chunk {chunk}"
            );
            assert_eq!(meta.resource_version, Rv::new("42"));
            assert_eq!(meta.continue_token.as_deref(), Some("c1"));
        }
        // Metadata after the items, null items, an empty continue token.
        let (got, meta) = items(
            br#"{"items":null,"metadata":{"resourceVersion":"x1","continue":""}} "#,
            10,
            3,
        )
        .unwrap();
        assert!(got.is_empty());
        assert_eq!(
            (meta.resource_version.as_str(), meta.continue_token),
            ("x1", None)
        );
        let (got, _) = items(PAGE1, 1 << 20, 100).unwrap();
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn a_list_page_says_which_shard_the_server_sent() {
        // As kube-apiserver v1.36.3 with ShardedListAndWatch sent it for
        // configmaps (the request's selector had no spaces).
        let body = br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"204","shardInfo":{"selector":"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"}},"items":[{"a":1}]}"#;
        for chunk in [1, 7, body.len()] {
            let (got, meta) = items(body, 100, chunk).unwrap();
            assert_eq!(got, [r#"{"a":1}"#]);
            assert_eq!(
                meta.shard_selector.as_deref(),
                Some("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')")
            );
            assert_eq!(meta.resource_version, Rv::new("204"));
        }
        // A PartialObjectMetadataList from the same server, a server without
        // the gate, and a null one: none.
        for body in [
            &br#"{"kind":"PartialObjectMetadataList","metadata":{"resourceVersion":"204"},"items":[]}"#[..],
            br#"{"metadata":{"resourceVersion":"204","shardInfo":null},"items":[]}"#,
        ] {
            assert_eq!(items(body, 100, 5).unwrap().1.shard_selector, None);
        }
    }

    #[test]
    fn a_body_that_is_not_a_list_is_an_error_naming_what_was_found() {
        for (body, want) in [
            (&b"[1,2]"[..], "expected a JSON object"),
            (b"{\"items\":[{}]", "expected `,` or `}`"),
            (b"{\"items\":[{\"a\":1", "ended in the middle"),
            (b"{\"items\":[]}", "no metadata"),
            (b"{\"metadata\":{}} x", "the end of the body"),
            (b"{\"items\":[{}] \"x\"}", "`,` or `}`"),
            (
                b"{\"metadata\":{\"resourceVersion\":1},\"items\":[]}",
                "metadata",
            ),
            (b"{\"items\":[{} {}]}", "`,` or `]`"),
        ] {
            let e = items(body, 100, 2).unwrap_err();
            assert!(e.contains(want), "{}: {e}", String::from_utf8_lossy(body));
        }
    }

    /// What a bad page's error says reaches an Error entry and a log line:
    /// never a byte of the page's values (issue 38 item 4).
    #[test]
    fn a_bad_list_page_is_said_without_a_byte_of_its_values() {
        for (body, want) in [
            (
                &br#"{"metadata":{"resourceVersion":"1","shardInfo":"s3cr3t"},"items":[]}"#[..],
                "the list's metadata has a value of the wrong type or shape (line 1, column 43)",
            ),
            (
                br#"{"metadata":{"resourceVersion":31415926},"items":[]}"#,
                "the list's metadata has a value of the wrong type or shape (line 1, column 27)",
            ),
            (
                br#"{"metadata":{"continue":["s3cr3t"]},"items":[]}"#,
                "the list's metadata has a value of the wrong type or shape (line 1, column 12)",
            ),
            (
                br#"{"metadata":{},"items":[{}]s3cr3t}"#,
                "expected `,` or `}` after a member, found another byte after 27 bytes",
            ),
            (
                br#"{"metadata":{}} s3cr3t"#,
                "expected the end of the body, found another byte after 16 bytes",
            ),
            (
                br#"{"k\u00zz":1}"#,
                "a key of the list is not valid JSON (line 1, column 8)",
            ),
            (
                br#"{"items":[{}] :}"#,
                "expected `,` or `}` after a member, found ':' after 14 bytes",
            ),
        ] {
            for chunk in [1, 5, body.len()] {
                let e = items(body, 100, chunk).unwrap_err();
                assert_eq!(e, want, "{}", String::from_utf8_lossy(body));
            }
        }
    }
}
