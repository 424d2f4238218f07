//! A stream's client: one GET at a time over the stream's own connection
//! slot, its credentials current, an answer that is not a success turned
//! into how the request ended (`answer`), a success's body opened by its Content-Type (JSON,
//! or protobuf turned into the same JSON as it is read) and encoding (gzip
//! only when asked for), as watch frames, LIST items or a whole document;
//! and discovery's documents. It knows nothing of what the stream decides or
//! delivers: the discovery thread uses it alone.

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::access::client::{AgentSlot, ReadTimeout, Request};
use crate::access::credentials::CredentialError;
use crate::access::transport::Transport;
use crate::api::answer;
use crate::api::end::End;
use crate::api::settings::StreamSettings;
use crate::delivery::channel::Stop;
use crate::entry::{ErrorInfo, Reason};
use crate::objects::edits::{Edits, Found};
use crate::wire::decode;
use crate::wire::discovery::{
    checked, group_path_ok, parse_aggregated, parse_resource_list, GroupList, Served, AGGREGATED,
};
use crate::wire::frames::{FrameError, FrameReader, ListError, ListItem, ListMeta, ListReader};
use crate::wire::proto_frames::WalkedFrame;
use crate::wire::proto_frames::{ProtoFrameReader, ProtoListReader};
use crate::wire::request::{self, Asking};

/// A response as the HTTP client hands it on: status, headers, a body.
pub(crate) type Response = crate::access::client::Answer;

type Body = Box<dyn Read + Send>;

/// The media type of the apiserver's protobuf (`;stream=watch` on watches).
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The largest discovery document read.
const MAX_DISCOVERY: u64 = 16 << 20;

/// A stream's client.
pub(crate) struct Client {
    transport: Arc<Transport>,
    slot: Arc<AgentSlot>,
    settings: Arc<StreamSettings>,
    stop: Stop,
    /// The server answered with a success since the last
    /// [`Client::take_answered`].
    answered: bool,
}

impl Client {
    pub(crate) fn new(
        transport: Arc<Transport>,
        slot: Arc<AgentSlot>,
        settings: Arc<StreamSettings>,
        stop: Stop,
    ) -> Client {
        Client {
            transport,
            slot,
            settings,
            stop,
            answered: false,
        }
    }

    /// The settings every stream of the reader shares.
    pub(crate) fn settings(&self) -> &Arc<StreamSettings> {
        &self.settings
    }

    /// What stops this client's stream.
    pub(crate) fn stop(&self) -> &Stop {
        &self.stop
    }

    /// The reader's count of answers now (see [`Reach`](crate::access::reach::Reach)).
    pub(crate) fn reach_mark(&self) -> u64 {
        self.transport.reach.mark()
    }

    /// Whether any request of the reader was answered since `mark`.
    pub(crate) fn answered_since(&self, mark: u64) -> bool {
        self.transport.reach.answered_since(mark)
    }

    /// Whether the server answered with a success since the last time this
    /// was asked.
    pub(crate) fn take_answered(&mut self) -> bool {
        std::mem::take(&mut self.answered)
    }

    /// The next request reloads the credentials (after a 401).
    pub(crate) fn reload_credentials(&self) {
        self.transport.credentials.invalidate();
    }

    /// One GET for `what` with `accept`; `protobuf_ok`: a protobuf body is
    /// readable (it was asked for). An answer that is not a success for
    /// `what` ([`answer::succeeded`]: a watch's 200, a LIST's 200–206, as
    /// client-go has them) is turned into how the request ended.
    /// `read_timeout`: a shorter idle limit for this request's reads.
    pub(crate) fn get(
        &mut self,
        path: &str,
        what: Asking,
        accept: &str,
        protobuf_ok: bool,
        read_timeout: Option<Duration>,
    ) -> Result<Response, End> {
        let resp = self.exchange(path, accept, read_timeout, "GET", None)?;
        let code = resp.status();
        if answer::succeeded(code, what) {
            // A proxy's error page, say: not an answer of the apiserver's.
            let content_type = resp.header("Content-Type").unwrap_or("application/json");
            let readable = content_type.to_ascii_lowercase().contains("json")
                || (protobuf_ok && is_protobuf(&resp));
            if !readable {
                let shown: String = content_type.chars().take(64).collect();
                return Err(End::Retry(
                    format!("the server answered {code} with Content-Type {shown:?}, not JSON"),
                    None,
                ));
            }
            self.answered = true;
            return Ok(resp);
        }
        let hint = answer::retry_after(resp.header("Retry-After"), SystemTime::now());
        let content_type = resp.header("Content-Type").map(str::to_string);
        let mut body = Vec::new();
        let protobuf = is_protobuf(&resp);
        let _ = resp.into_body().take(64 << 10).read_to_end(&mut body);
        // Asked protobuf first, the server sends its Status that way too.
        if protobuf {
            body = crate::wire::envelope::status_doc(&body).unwrap_or_default();
        }
        let status = decode::described_status(&body, content_type.as_deref());
        Err(answer::classify(
            code,
            status,
            hint,
            self.transport.credentials.reloadable(),
        ))
    }

    /// One request with its credentials current: the response, whatever
    /// its status, or how the attempt ended (no credentials, a stop, a
    /// failed connection).
    fn exchange(
        &mut self,
        path: &str,
        accept: &str,
        read_timeout: Option<Duration>,
        method: &str,
        body: Option<&[u8]>,
    ) -> Result<Response, End> {
        let creds = &self.transport.credentials;
        let current = match creds.current(&[&self.stop.all, &self.stop.own]) {
            Ok(c) => c,
            Err(CredentialError::Stopped) => return Err(End::Stopped),
            // A credential that cannot come (a missing plugin, unusable output,
            // failing again and again) ends the resource with an Error entry.
            Err(CredentialError::Failed {
                message,
                fatal: true,
            }) => {
                return Err(End::Fatal(ErrorInfo::ours(
                    Reason::Credentials,
                    0,
                    message,
                    true,
                )))
            }
            Err(e) => return Err(End::NoCredentials(format!("credentials: {e}"))),
        };
        let client = match self.slot.client(&self.transport, &current) {
            None => return Err(End::Stopped),
            Some(Ok(c)) => c,
            Some(Err(e)) => {
                return Err(End::Fatal(ErrorInfo::ours(Reason::TlsIdentity, 0, e, true)))
            }
        };
        log::debug!("{method} {path}");
        let req = Request {
            path,
            accept,
            read_timeout,
        };
        match client.send(&req, method, body) {
            Ok(r) => {
                self.transport.reach.answered();
                Ok(r)
            }
            Err(_) if self.stop.is_set() => Err(End::Stopped),
            Err(e) => Err(End::Retry(format!("request failed: {e}"), None)),
        }
    }

    /// A request of the elector's (GET, PUT or POST of a Lease or a
    /// ConfigMap, JSON both ways): the status and up to 4 MiB of the
    /// decoded body, whatever the status. A 401 reloads the credentials
    /// for the next request.
    pub(crate) fn call(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
        read_timeout: Duration,
    ) -> Result<(u16, Vec<u8>), End> {
        let resp = self.exchange(path, "application/json", Some(read_timeout), method, body)?;
        let code = resp.status();
        if code == 401 && self.transport.credentials.reloadable() {
            self.reload_credentials();
        }
        let mut out = Vec::new();
        self.body(resp)?
            .take(4 << 20)
            .read_to_end(&mut out)
            .map_err(|e| End::Broke(format!("{method} {path}: {e}")))?;
        Ok((code, out))
    }

    /// A response body, decoded: gzip only when tattler asked for it.
    fn body(&self, resp: Response) -> Result<Body, End> {
        self.body_and_timeout(resp).map(|(b, _)| b)
    }

    /// A response body, decoded, and what changes how long its reads wait.
    fn body_and_timeout(&self, resp: Response) -> Result<(Body, ReadTimeout), End> {
        let encoding = resp
            .header("Content-Encoding")
            .map(|v| v.trim().to_ascii_lowercase());
        let (reader, timeout) = resp.into_parts();
        self.decoded(reader, encoding.as_deref())
            .map(|body| (body, timeout))
    }

    /// `reader` decoded as its `Content-Encoding` says.
    fn decoded(
        &self,
        reader: crate::access::client::AnswerBody,
        encoding: Option<&str>,
    ) -> Result<Body, End> {
        match encoding {
            None | Some("" | "identity") => Ok(Box::new(reader)),
            // Any number of members: a 1.37 apiserver (WatchListCompression)
            // gzips each event of a watch-list as a member of its own.
            Some("gzip") if self.settings.gzip => Ok(Box::new(Gunzip::new(reader))),
            Some(other) => {
                let shown: String = other.chars().take(32).collect();
                Err(End::Retry(
                    format!("the server sent a {shown:?} body, which tattler did not ask for"),
                    None,
                ))
            }
        }
    }

    /// A watch response's frames, read as its Content-Type says, and what
    /// changes how long their reads may wait.
    pub(crate) fn frames(&self, resp: Response) -> Result<(Frames, ReadTimeout), End> {
        let proto = is_protobuf(&resp);
        let (body, timeout) = self.body_and_timeout(resp)?;
        let max = self.settings.max_frame_bytes;
        let frames = if proto {
            Frames::Proto(ProtoFrameReader::new(body, max))
        } else {
            Frames::Json(FrameReader::new(body, max))
        };
        Ok((frames, timeout))
    }

    /// A LIST response's items, read as its Content-Type says.
    pub(crate) fn items(&self, resp: Response) -> Result<Items, End> {
        let proto = is_protobuf(&resp);
        let body = self.body(resp)?;
        let max = self.settings.max_frame_bytes;
        Ok(if proto {
            Items::Proto(ProtoListReader::new(body, max))
        } else {
            Items::Json(ListReader::new(body, max))
        })
    }

    /// A GET of a discovery document, its body read (bounded).
    pub(crate) fn document(&mut self, path: &str, what: Asking) -> Result<Vec<u8>, End> {
        let accept = request::accept(what, false, false, false);
        let resp = self.get(path, what, &accept, false, None)?;
        let mut body = Vec::new();
        let mut reader = self.body(resp)?;
        reader
            .by_ref()
            .take(MAX_DISCOVERY)
            .read_to_end(&mut body)
            .map_err(|e| End::Broke(format!("discovery {path}: {e}")))?;
        Ok(body)
    }

    /// Everything the server serves: aggregated discovery (two requests),
    /// else the legacy documents (one per group).
    pub(crate) fn served(&mut self) -> Result<Vec<Served>, End> {
        let bad = |path: &str, e: String| End::Retry(format!("{path}: {e}"), None);
        let core = self.document("/api", Asking::Discovery(AGGREGATED))?;
        let mut out = match parse_aggregated(&core).map_err(|e| bad("/api", e))? {
            Some(v) => v,
            None => {
                let v1 = self.document("/api/v1", Asking::Document)?;
                parse_resource_list("", "v1", &v1).map_err(|e| bad("/api/v1", e))?
            }
        };
        let apis = self.document("/apis", Asking::Discovery(AGGREGATED))?;
        match parse_aggregated(&apis).map_err(|e| bad("/apis", e))? {
            Some(v) => out.extend(v),
            None => {
                let groups: GroupList = serde_json::from_slice(&apis).map_err(|e| {
                    bad("/apis", format!("the document {}", decode::json_error(&e)))
                })?;
                for g in groups.groups {
                    if !group_path_ok(&g.name, &g.preferred.version) {
                        log::warn!("discovery: a group left out: its name or version is not as Kubernetes allows");
                        continue;
                    }
                    let path = format!("/apis/{}/{}", g.name, g.preferred.version);
                    match self.document(&path, Asking::Document) {
                        Ok(body) => out.extend(
                            parse_resource_list(&g.name, &g.preferred.version, &body)
                                .map_err(|e| bad(&path, e))?,
                        ),
                        // An aggregated API that is down leaves its group out.
                        Err(End::Retry(..) | End::Refused { .. }) => {}
                        Err(other) => return Err(other),
                    }
                }
            }
        }
        let (out, dropped) = checked(out);
        if dropped > 0 {
            log::warn!(
                "discovery: {dropped} resources left out: a group, version, resource or kind name not as Kubernetes allows"
            );
        }
        Ok(out)
    }
}

/// A gzip body read as Go's transport reads one (its `gzipReader`): the
/// gzip header is read at the first read, not when the body is opened
/// (flate2's decoders read it in their constructor, from the network,
/// before the stream's stop and deadline checks could run), and a body
/// without a byte (`Content-Length: 0`, or a chunked body with no member)
/// is an empty body, where flate2 says the header is cut (Go's
/// `gzip.NewReader` gives `io.EOF` then). Any number of members.
struct Gunzip<R> {
    /// The body before its first byte came.
    input: Option<std::io::BufReader<R>>,
    decoder: Option<flate2::bufread::MultiGzDecoder<std::io::BufReader<R>>>,
}

impl<R: Read> Gunzip<R> {
    /// Reads nothing yet.
    fn new(input: R) -> Gunzip<R> {
        Gunzip {
            input: Some(std::io::BufReader::with_capacity(32 << 10, input)),
            decoder: None,
        }
    }
}

impl<R: Read> Read for Gunzip<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.decoder.is_none() {
            let Some(input) = self.input.as_mut() else {
                return Ok(0);
            };
            // An error (a timeout) leaves it unread: the next read tries again.
            if std::io::BufRead::fill_buf(input)?.is_empty() {
                return Ok(0);
            }
            self.decoder = self.input.take().map(flate2::bufread::MultiGzDecoder::new);
        }
        match &mut self.decoder {
            Some(d) => d.read(out),
            None => Ok(0),
        }
    }
}

/// Whether a response's Content-Type is the apiserver's protobuf.
fn is_protobuf(resp: &Response) -> bool {
    resp.header("Content-Type")
        .is_some_and(|t| t.trim().to_ascii_lowercase().starts_with(PROTOBUF))
}

/// A read that waited past its timeout (the HTTP client says so by its kind).
pub(crate) fn is_timeout(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
}

/// A watch body's frames, each a JSON event.
pub(crate) enum Frames {
    Json(FrameReader<Body>),
    Proto(ProtoFrameReader<Body>),
}

impl Frames {
    pub(crate) fn next_frame(&mut self) -> Result<Option<&[u8]>, FrameError> {
        match self {
            Frames::Json(r) => r.next_frame(),
            Frames::Proto(r) => r.next_frame(),
        }
    }

    /// The next frame; for a protobuf body, an object event's object written
    /// with `edits` in one pass, and what the decoder needs of it.
    pub(crate) fn next_walked(
        &mut self,
        edits: Edits,
    ) -> Result<Option<WalkedFrame<'_>>, FrameError> {
        match self {
            Frames::Json(r) => r.next_frame().map(|f| f.map(|f| (f, None))),
            Frames::Proto(r) => r.next_walked(edits),
        }
    }

    /// Whether another frame's bytes are buffered already.
    pub(crate) fn buffered(&mut self) -> bool {
        match self {
            Frames::Json(r) => r.buffered(),
            Frames::Proto(r) => r.buffered(),
        }
    }

    /// Whether part of a frame has come.
    pub(crate) fn partial(&self) -> bool {
        match self {
            Frames::Json(r) => r.partial(),
            Frames::Proto(r) => r.partial(),
        }
    }

    /// Body bytes read so far.
    pub(crate) fn bytes(&self) -> u64 {
        match self {
            Frames::Json(r) => r.bytes(),
            Frames::Proto(r) => r.bytes(),
        }
    }

    /// Reads on to the body's end, each read waiting at most `each`, over
    /// at most [`FINISH_FRAMES`] frames: whether it ended (its connection
    /// then serves the next request, no new TCP and TLS handshake). For a
    /// watch the server ended after its ERROR event; what comes is
    /// dropped, and a stop shuts the socket, so no read outlasts it.
    pub(crate) fn finish(&mut self, timeout: &ReadTimeout, each: Duration) -> bool {
        timeout.set(each);
        for _ in 0..FINISH_FRAMES {
            match self.next_frame() {
                Ok(None) => return true,
                Ok(Some(_)) => {}
                Err(_) => return false,
            }
        }
        false
    }
}

/// The most frames [`Frames::finish`] reads past the server's ERROR event.
const FINISH_FRAMES: usize = 4;

/// A LIST body's items, each a JSON object.
pub(crate) enum Items {
    Json(ListReader<Body>),
    Proto(ProtoListReader<Body>),
}

impl Items {
    pub(crate) fn next_item(&mut self) -> Result<Option<ListItem<'_>>, ListError> {
        match self {
            Items::Json(r) => r.next_item(),
            Items::Proto(r) => r.next_item(),
        }
    }

    /// The next item; for a protobuf body, written with `edits` in one
    /// pass, with where its metadata is.
    pub(crate) fn next_walked(
        &mut self,
        edits: Edits,
    ) -> Result<Option<(ListItem<'_>, Option<Found>)>, ListError> {
        match self {
            Items::Json(r) => r.next_item().map(|i| i.map(|i| (i, None))),
            Items::Proto(r) => r.next_item_walked(edits),
        }
    }

    /// The page's `metadata`, once read.
    pub(crate) fn meta(&self) -> Option<&ListMeta> {
        match self {
            Items::Json(r) => r.meta(),
            Items::Proto(r) => r.meta(),
        }
    }

    /// Body bytes read so far.
    pub(crate) fn bytes(&self) -> u64 {
        match self {
            Items::Json(r) => r.bytes(),
            Items::Proto(r) => r.bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{self, Write};

    fn gzip(members: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in members {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(m).unwrap();
            out.extend(e.finish().unwrap());
        }
        out
    }

    /// A source that counts its reads and fails the first `failing` of
    /// them with a timeout.
    struct Source {
        bytes: Vec<u8>,
        at: usize,
        reads: usize,
        failing: usize,
    }

    impl Read for Source {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            self.reads += 1;
            if self.reads <= self.failing {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "idle"));
            }
            let n = (self.bytes.len() - self.at).min(out.len());
            out[..n].copy_from_slice(&self.bytes[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn source(bytes: Vec<u8>, failing: usize) -> Source {
        Source {
            bytes,
            at: 0,
            reads: 0,
            failing,
        }
    }

    fn all(g: &mut Gunzip<Source>) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        g.read_to_end(&mut out).map(|_| out)
    }

    #[test]
    fn an_empty_gzip_body_is_an_empty_body() {
        let mut g = Gunzip::new(source(Vec::new(), 0));
        assert_eq!(all(&mut g).unwrap(), b"");
        assert_eq!(g.read(&mut [0; 8]).unwrap(), 0, "and stays so");
        // flate2 alone calls it a cut header: what Gunzip is for.
        let e = flate2::read::MultiGzDecoder::new(&b""[..])
            .read(&mut [0; 8])
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn gzip_members_decode_to_their_bytes() {
        for (members, want) in [
            (&[&b"{\"a\":1}\n"[..]][..], &b"{\"a\":1}\n"[..]),
            (&[b"{\"a\":1}\n", b"{\"b\":2}\n"], b"{\"a\":1}\n{\"b\":2}\n"),
            (&[b""], b""),
        ] {
            let mut g = Gunzip::new(source(gzip(members), 0));
            assert_eq!(all(&mut g).unwrap(), want);
        }
        // Not gzip, or cut inside its header: errors, as before.
        for bad in [&b"{}"[..], &[0x1f, 0x8b, 8]] {
            let mut g = Gunzip::new(source(bad.to_vec(), 0));
            assert!(all(&mut g).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_gzip_header_is_read_at_the_first_read_and_a_timeout_leaves_it_unread() {
        let mut g = Gunzip::new(source(gzip(&[b"{}"]), 1));
        assert_eq!(
            g.input.as_ref().map(|i| i.get_ref().reads),
            Some(0),
            "nothing read when opened"
        );
        let e = g.read(&mut [0; 8]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(all(&mut g).unwrap(), b"{}", "read again after the timeout");
    }
}
