//! Entry points for the fuzz targets in `fuzz/` (the `fuzzing` feature):
//! the crate-private decoders, driven as a stream drives them. Not part of
//! the API.

use crate::objects::edits::Edits;
use crate::objects::reuse::Reuse;

const ALL: Edits = Edits {
    scrub: true,
    secret_data: true,
    drop_managed_fields: true,
};

struct Trickle<'a>(&'a [u8], usize);
impl std::io::Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.len().min(self.1.max(1)).min(out.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

/// Splits `body` into frames (arriving `chunk` bytes at a time) and
/// decodes each one, as a stream does.
pub fn frames(body: &[u8], chunk: usize, max_frame: usize) {
    let mut r = crate::wire::frames::FrameReader::new(Trickle(body, chunk), max_frame.max(1));
    let mut reuse = Reuse::default();
    loop {
        match r.next_frame() {
            Ok(Some(frame)) => {
                let _ = crate::wire::decode::event(frame, Edits::NONE, &mut reuse);
            }
            Err(crate::wire::frames::FrameError::TooLarge(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
}

/// Decodes one watch frame; decoded again with memory other walks used,
/// it must decode the same.
pub fn event(frame: &[u8]) {
    let fresh = crate::wire::decode::event(frame, ALL, &mut Reuse::default());
    let mut used = Reuse::default();
    let _ = crate::wire::decode::event(USED, ALL, &mut used);
    let _ = crate::wire::decode::event(frame, ALL, &mut used);
    let again = crate::wire::decode::event(frame, ALL, &mut used);
    assert_eq!(
        fresh, again,
        "memory reused from walk to walk changed a decoding"
    );
}

/// A frame whose walk uses every buffer a walk reuses.
const USED: &[u8] = br#"{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"u","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"spec\":{\"containers\":[{\"env\":[{\"name\":\"A\",\"value\":\"s\"}]}]}}"}},"spec":{"containers":[{"env":[{"name":"A","value":"s"}]}]}}}"#;

/// Reads a LIST body (arriving `chunk` bytes at a time) item by item,
/// and each item's metadata.
pub fn list(body: &[u8], chunk: usize) {
    let mut r = crate::wire::frames::ListReader::new(Trickle(body, chunk), 1 << 16);
    let mut reuse = Reuse::default();
    while let Ok(Some(item)) = r.next_item() {
        if let crate::wire::frames::ListItem::Item(b) = item {
            if let Ok(text) = std::str::from_utf8(b) {
                let _ = crate::wire::decode::object_walk(text, ALL, &mut reuse);
            }
        }
    }
}

/// Reads a protobuf body (arriving `chunk` bytes at a time) both as a
/// watch body and as a LIST body: each JSON piece handed out must be
/// JSON when it is UTF-8 (FieldsV1 is copied as Go copies it, unchecked
/// UTF-8 included), and is then decoded as the stream would.
pub fn protobuf(body: &[u8], chunk: usize, max_frame: usize) {
    fn check(json: &[u8]) {
        if std::str::from_utf8(json).is_ok() {
            if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(json) {
                panic!("protobuf gave invalid JSON: {e}");
            }
        }
    }
    let max = max_frame.max(1);
    let mut r = crate::wire::proto_frames::ProtoFrameReader::new(Trickle(body, chunk), max);
    let mut reuse = Reuse::default();
    loop {
        match r.next_frame() {
            Ok(Some(frame)) => {
                check(frame);
                let _ = crate::wire::decode::event(frame, ALL, &mut reuse);
            }
            Err(
                crate::wire::frames::FrameError::TooLarge(_)
                | crate::wire::frames::FrameError::Invalid(_),
            ) => {}
            Ok(None) | Err(_) => break,
        }
    }
    let mut r = crate::wire::proto_frames::ProtoListReader::new(Trickle(body, chunk), max);
    while let Ok(Some(item)) = r.next_item() {
        if let crate::wire::frames::ListItem::Item(b) = item {
            check(b);
            if let Ok(text) = std::str::from_utf8(b) {
                let _ = crate::wire::decode::object_walk(text, ALL, &mut reuse);
            }
        }
    }
}

/// Scrubs an object; when the walk accepts it, the output must be JSON
/// (as serde_json reads it, when within its nesting limit). UTF-8 is the
/// caller's check, as in the decoder.
pub fn scrub(obj: &[u8]) {
    if std::str::from_utf8(obj).is_err() {
        return;
    }
    if let Ok(Some(out)) = crate::objects::scrub::edit(obj, ALL) {
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&out) {
            assert!(
                e.to_string().contains("recursion"),
                "scrub produced invalid JSON: {e}"
            );
        }
    }
}

/// An object nested `depth` levels deep (objects and arrays as `shape`
/// says), with `tail` inside: the walk must neither recurse nor accept
/// more than its limit, whatever the shape.
pub fn depth(shape: &[u8], depth: usize, tail: &[u8]) {
    let depth = depth % (2 * crate::objects::edits::MAX_DEPTH);
    let mut obj = b"{\"spec\":".to_vec();
    let mut close = Vec::with_capacity(depth);
    for i in 0..depth {
        let b = shape.get(i % shape.len().max(1)).copied().unwrap_or(0);
        if b % 2 == 0 {
            obj.extend_from_slice(b"[");
            close.push(b']');
        } else {
            obj.extend_from_slice(b"{\"containers\":");
            close.push(b'}');
        }
    }
    obj.extend_from_slice(if tail.is_empty() { b"1" } else { tail });
    close.reverse();
    obj.extend_from_slice(&close);
    obj.push(b'}');
    let result = std::thread::Builder::new()
        .stack_size(64 << 10)
        .spawn(move || crate::objects::scrub::walk(&obj, ALL, &mut Reuse::default()).0)
        .expect("a thread")
        .join()
        .expect("no stack overflow");
    if depth + 1 > crate::objects::edits::MAX_DEPTH
        && tail.iter().all(|b| b.is_ascii_digit())
        && !tail.is_empty()
    {
        assert_eq!(result.err(), Some(crate::objects::edits::Bad::TooDeep));
    }
}

/// Reads a kubeconfig file's text (through a temporary file).
pub fn kubeconfig(text: &[u8]) {
    let path = std::env::temp_dir().join(format!("tattler-fuzz-kubeconfig-{}", std::process::id()));
    if std::fs::write(&path, text).is_ok() {
        let _ = crate::access::cluster::Access::from_kubeconfig(Some(&path), None);
    }
}

/// Reads one HTTP response (head, interim answers skipped, body by its
/// framing) from `data` as tattler's client reads a server's bytes:
/// whole, arriving in pieces of 1 to 7 bytes (read 3 bytes at a time),
/// and cut once at every byte (every 31st past the first 1,024 of a
/// long input). Every way must give the same head, body or error, and
/// the read buffer must stay within its bound.
pub fn http_response(data: &[u8]) {
    use crate::wire::http_read::{read_response, Responses};
    let bound = crate::wire::http::MAX_HEAD.max(16 << 10);
    let (whole, most) = read_response(Responses::new(Trickle(data, usize::MAX)), 64 << 10);
    assert!(most <= bound, "the read buffer grew to {most} bytes");
    if let Ok((head, body)) = &whole {
        assert!(body.len() <= data.len(), "a body longer than its input");
        assert!((100..1000).contains(&head.status));
        for (name, _) in head.fields() {
            assert!(
                !name.is_empty() && name.is_ascii(),
                "a header name {name:?}"
            );
        }
    }
    for piece in 1..=7 {
        let (got, most) = read_response(Responses::new(Trickle(data, piece)), 3);
        assert_eq!(got, whole, "arriving {piece} bytes at a time");
        assert!(most <= bound, "the read buffer grew to {most} bytes");
    }
    for at in (1..data.len()).filter(|at| *at < 1024 || at % 31 == 0) {
        let (got, _) = read_response(Responses::new(Cut(data, at)), 64 << 10);
        assert_eq!(got, whole, "cut at byte {at}");
    }
}

/// A source whose bytes come in two reads, cut at one place.
struct Cut<'a>(&'a [u8], usize);
impl std::io::Read for Cut<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let limit = if self.1 > 0 { self.1 } else { self.0.len() };
        let n = self.0.len().min(limit).min(out.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        self.1 = self.1.saturating_sub(n);
        Ok(n)
    }
}

/// The one pass against the two it replaces (issue 39), on any protobuf
/// watch body: each frame read with its object written with the edits in
/// one pass must decode as the same frame written plainly and then walked
/// does — the same event, metadata, bytes and errors. managedFields are
/// kept here: dropped, the one pass never reads them, and the two passes
/// refuse bytes of theirs that the one pass does not look at.
pub fn protobuf_one_pass(body: &[u8], chunk: usize, max_frame: usize) {
    use crate::wire::decode::{event, walked_event, DecodeError, Event};
    use crate::wire::proto_frames::ProtoFrameReader;
    const KEEP: Edits = Edits {
        drop_managed_fields: false,
        ..ALL
    };
    fn said(frame: &[u8], e: Result<Event<'_>, DecodeError>) -> String {
        match e {
            Ok(Event::Object {
                kind,
                meta,
                object,
                edited,
            }) => {
                let bytes = edited.unwrap_or_else(|| frame[object.0..object.1].to_vec());
                format!("{kind:?} {meta:?} {bytes:?}")
            }
            other => format!("{other:?}"),
        }
    }
    let max = max_frame.max(1);
    for edits in [KEEP, ALL] {
        let mut plain = ProtoFrameReader::new(Trickle(body, chunk), max);
        let mut walked = ProtoFrameReader::new(Trickle(body, chunk), max);
        loop {
            let want = match plain.next_frame() {
                Ok(Some(f)) => said(f, event(f, edits, &mut Reuse::default())),
                Ok(None) => "end".into(),
                Err(e) => format!("{e:?}"),
            };
            let got = match walked.next_walked(edits) {
                Ok(Some((f, Some(w)))) => {
                    // What the one pass hands out is JSON, as the walk would say.
                    let obj = &f[w.object.0..w.object.1];
                    assert!(
                        crate::objects::scrub::walk(obj, Edits::NONE, &mut Reuse::default())
                            .0
                            .is_ok(),
                        "the one pass wrote what the walk refuses"
                    );
                    said(f, walked_event(f, w))
                }
                Ok(Some((f, None))) => said(f, event(f, edits, &mut Reuse::default())),
                Ok(None) => "end".into(),
                Err(e) => format!("{e:?}"),
            };
            if edits == KEEP {
                assert_eq!(got, want, "one pass and two passes differ");
            }
            if want == "end"
                || want.starts_with("Truncated")
                || want.starts_with("Io")
                || got == "end"
            {
                break;
            }
        }
    }
}

/// A JSON watch body (one event a line, objects of built-in kinds) as the
/// protobuf watch body the apiserver would send for it: the benchmark's
/// protobuf replay. Events whose object is of no kind the schema knows are
/// left out.
pub fn protobuf_watch_body(json_body: &[u8]) -> Vec<u8> {
    use crate::wire::protobuf::encode;
    let mut out = Vec::new();
    for line in json_body.split(|&b| b == b'\n') {
        let Ok(ev) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        let (Some(t), Some(obj)) = (ev["type"].as_str(), ev.get("object")) else {
            continue;
        };
        if t == "BOOKMARK" {
            // A bookmark's object is of the resource's kind with its metadata only.
            let meta = encode::object_meta(&obj["metadata"]);
            let mut raw = Vec::new();
            encode::bytes(1, &meta, &mut raw);
            let kind = obj["kind"].as_str().unwrap_or("Pod");
            let api_version = obj["apiVersion"].as_str().unwrap_or("v1");
            encode::watch_frame(t, &encode::unknown(kind, api_version, &raw), &mut out);
            continue;
        }
        if let Some((kind, api_version, raw)) = encode::object(obj) {
            encode::watch_frame(t, &encode::unknown(&kind, &api_version, &raw), &mut out);
        }
    }
    out
}
