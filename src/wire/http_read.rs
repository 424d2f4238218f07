//! Reading one HTTP/1.1 response from a byte source, by the rules of
//! `wire::http`: its head (interim 1xx answers skipped), then its body as
//! its framing says (a length, chunks, or to the close), handed out as
//! plain bytes through `Read`. Pure: the source is any `Read` (a socket, a
//! TLS stream, a test's bytes); nothing here logs or keeps a clock.
//!
//! Chunk-size lines are read as Go's `net/http` client reads them
//! (`net/http/internal/chunked.go`, the apiserver's own language): a line
//! with its CRLF is at most [`MAX_CHUNK_LINE`] (4096) bytes, ends in CRLF
//! (no bare LF, no other CR), its extensions are dropped, its size has at
//! most 16 hex digits, each chunk's data ends in CRLF, and a body whose
//! framing outweighs its data (over 16 KiB of overhead beyond 16 bytes a
//! chunk and twice the data) is refused. White space before an extension's
//! `;` is allowed (RFC 9112's BWS; Go refuses it). Trailers are read and
//! dropped: lines of at most 4096 bytes, [`MAX_TRAILERS`] in all.
//!
//! Memory is bounded whatever the server sends: one 64 KiB read buffer
//! (the longest head fits), whatever sizes a response claims.

use std::io::{self, Read};

use crate::wire::buffered::Buffered;
use crate::wire::http::{kind, parse_head, Framing, Head, HttpError, Kind, MAX_HEAD, MAX_INTERIM};

/// The longest chunk-size or trailer line, its line ending included.
pub(crate) const MAX_CHUNK_LINE: usize = 4096;
/// The most hex digits of a chunk size (Go's `parseHexUint`).
const MAX_CHUNK_DIGITS: usize = 16;
/// The most bytes of trailer lines after the last chunk.
pub(crate) const MAX_TRAILERS: usize = 16 << 10;
/// Go's bound on framing overhead beyond its allowance.
const MAX_EXCESS: u64 = 16 << 10;
/// The read buffer's size, fixed: room for the longest head and chunk line.
const BUF: usize = 64 << 10;
const _: () = assert!(BUF >= MAX_HEAD && BUF >= MAX_CHUNK_LINE);

/// The HTTP error inside an I/O error, when there is one (the connection
/// layer retries [`HttpError::Closed`] on a kept-alive connection).
pub(crate) fn http_error(e: &io::Error) -> Option<&HttpError> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<HttpError>())
}

/// HTTP responses read one after another from a byte source: a head, then
/// its body through [`BodyReader`], then (on a kept connection) the next.
pub(crate) struct Responses<R> {
    bytes: Buffered<R>,
}

impl<R> Responses<R> {
    /// Nothing read from `inner` yet.
    pub(crate) fn new(inner: R) -> Responses<R> {
        Responses {
            bytes: Buffered::new(inner, BUF),
        }
    }

    /// Whether no byte at all has come from the source: a connection that
    /// fails so failed before any of a response (Go's `persistConn` retries
    /// a request on a reused connection then).
    pub(crate) fn nothing_received(&self) -> bool {
        self.bytes.bytes_read() == 0
    }

    /// The bytes read and not used yet.
    pub(crate) fn buffered(&self) -> &[u8] {
        self.bytes.pending()
    }

    /// The buffer's size: bounded whatever the source sends (the fuzz
    /// target checks).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// The source, and whether every byte read from it was used.
    pub(crate) fn into_inner(self) -> (R, bool) {
        let all_used = self.bytes.pending().is_empty();
        (self.bytes.into_inner(), all_used)
    }

    fn consume(&mut self, n: usize) {
        self.bytes.consume(n);
    }
}

impl<R: Read> Responses<R> {
    /// Reads a response head, skipping interim (1xx) answers; 101 is an
    /// error. The body's bytes that came with it stay buffered.
    pub(crate) fn read_head(&mut self) -> io::Result<Head> {
        for _ in 0..=MAX_INTERIM {
            let head = self.one_head()?;
            match kind(&head) {
                Kind::Final => return Ok(head),
                Kind::Upgrade => return Err(HttpError::Upgrade.into()),
                Kind::Interim => {}
            }
        }
        Err(HttpError::TooManyInterim.into())
    }

    fn one_head(&mut self) -> io::Result<Head> {
        // httparse runs once a blank line has come (or the bound or the
        // source's end is reached), not on every read: a head trickling in
        // a byte at a time costs one parse, not one per byte. Whenever it
        // runs, on what has come so far, it says what the whole would: the
        // outcome does not depend on how the bytes were cut.
        let mut scanned = 0usize;
        let mut end = false;
        loop {
            let got = self.buffered();
            if end && got.is_empty() {
                return Err(HttpError::Closed.into());
            }
            // At MAX_HEAD bytes without an end, parse_head says HeadTooLarge:
            // the buffer (BUF >= MAX_HEAD) is never filled past it here.
            if end || got.len() >= MAX_HEAD || has_blank_line(&got[scanned.saturating_sub(2)..]) {
                if let Some((len, head)) = parse_head(got)? {
                    self.consume(len);
                    return Ok(head);
                }
                if end {
                    return Err(HttpError::TruncatedHead.into());
                }
            }
            scanned = got.len();
            end = self.bytes.fill()? == 0;
        }
    }

    /// Makes sure `need` bytes are buffered: `Ok(false)` when they are not
    /// and reading is not allowed now; the source's end is an error.
    fn ensure(&mut self, need: usize, may_read: bool) -> io::Result<bool> {
        if self.buffered().len() >= need {
            return Ok(true);
        }
        if !may_read {
            return Ok(false);
        }
        if !self.bytes.fill_to(need)? {
            return Err(HttpError::TruncatedBody.into());
        }
        Ok(true)
    }

    /// The length of the next line (up to its LF) of at most
    /// [`MAX_CHUNK_LINE`] bytes; `None` when it has not all come and
    /// reading is not allowed now.
    fn line(&mut self, may_read: bool, too_long: HttpError) -> io::Result<Option<usize>> {
        let mut scanned = 0;
        loop {
            if let Some(i) = self.bytes.find(b'\n', scanned, MAX_CHUNK_LINE) {
                return Ok(Some(i + 1));
            }
            let window = self.buffered().len().min(MAX_CHUNK_LINE);
            if window == MAX_CHUNK_LINE {
                return Err(too_long.into());
            }
            scanned = window;
            if !may_read {
                return Ok(None);
            }
            if self.bytes.fill()? == 0 {
                return Err(HttpError::TruncatedBody.into());
            }
        }
    }

    /// Up to `limit` bytes of data into `out`: from the buffer, else (when
    /// reading is allowed) from the source, straight into `out` when that
    /// is big; `Some(0)` at the source's end, `None` when reading is not
    /// allowed now.
    fn take(&mut self, out: &mut [u8], limit: u64, may_read: bool) -> io::Result<Option<usize>> {
        if self.buffered().is_empty() && !may_read {
            return Ok(None);
        }
        let want = usize::try_from(limit).unwrap_or(usize::MAX).min(out.len());
        self.bytes.read(&mut out[..want]).map(Some)
    }
}

/// Whether `bytes` holds an empty line: an LF followed by LF or CRLF.
fn has_blank_line(bytes: &[u8]) -> bool {
    bytes
        .windows(2)
        .enumerate()
        .any(|(i, w)| w == b"\n\n" || (w == b"\n\r" && bytes.get(i + 2) == Some(&b'\n')))
}

/// Where a body's reader is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// This many bytes to go (a Content-Length body).
    Length(u64),
    /// Everything to the connection's close.
    Close,
    /// A chunk-size line next.
    Size,
    /// This many bytes of the current chunk to go (more than 0).
    Data(u64),
    /// The CRLF after a chunk's data next.
    DataEnd,
    /// Trailer lines (or the empty line that ends the body) next.
    Trailers,
    /// The body has ended.
    Done,
}

/// A response body as plain bytes: `read` gives the body's bytes and `0`
/// at its end. Errors are the source's (a timeout stays a timeout) or a
/// framing error ([`HttpError`] inside an `InvalidData` or `UnexpectedEof`
/// error). Data already decoded is always handed out before an error.
pub(crate) struct BodyReader<R> {
    responses: Responses<R>,
    state: State,
    /// Framing overhead beyond Go's allowance, for chunked bodies.
    excess: u64,
    trailers: usize,
}

impl<R> BodyReader<R> {
    /// The body that follows a head of this framing in `responses`.
    pub(crate) fn new(responses: Responses<R>, framing: Framing) -> BodyReader<R> {
        let state = match framing {
            Framing::Empty => State::Done,
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::Size,
            Framing::Close => State::Close,
        };
        BodyReader {
            responses,
            state,
            excess: 0,
            trailers: 0,
        }
    }

    /// Whether the body has been read to its end.
    pub(crate) fn done(&self) -> bool {
        self.state == State::Done
    }

    /// The source with what was read from it and not used.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn responses(&self) -> &Responses<R> {
        &self.responses
    }

    /// The source back, with what was read from it and not used (a next
    /// response's bytes, which a kept connection must not have).
    pub(crate) fn into_responses(self) -> Responses<R> {
        self.responses
    }
}

impl<R: Read> BodyReader<R> {
    /// Reads the framing that follows the body's data (a chunk's CRLF, the
    /// last chunk, trailers) from what is buffered only, never from the
    /// source: whether the body has ended. For a body dropped right after
    /// its data, so that its connection can serve the next request.
    pub(crate) fn finish_buffered(&mut self) -> bool {
        loop {
            match self.state {
                State::Done => return true,
                State::Length(_) | State::Close | State::Data(_) => return false,
                State::Size | State::DataEnd | State::Trailers => match self.framing_step(false) {
                    Ok(true) => {}
                    Ok(false) | Err(_) => return false,
                },
            }
        }
    }

    /// One step through framing (not data): `Ok(false)` when it needs a
    /// read and `may_read` is false. On an error nothing is used, so the
    /// next call meets it again.
    fn framing_step(&mut self, may_read: bool) -> io::Result<bool> {
        match self.state {
            State::DataEnd => {
                if !self.responses.ensure(2, may_read)? {
                    return Ok(false);
                }
                if &self.responses.buffered()[..2] != b"\r\n" {
                    return Err(HttpError::Chunked("a chunk's data does not end in CRLF").into());
                }
                self.responses.consume(2);
                self.state = State::Size;
            }
            State::Size => {
                let too_long = HttpError::Chunked("a chunk-size line over 4096 bytes");
                let Some(len) = self.responses.line(may_read, too_long)? else {
                    return Ok(false);
                };
                let (size, content) = chunk_size(&self.responses.buffered()[..len])?;
                // Go's allowance: 16 bytes a chunk and twice its data.
                let excess = (self.excess + content as u64 + 2)
                    .saturating_sub(16u64.saturating_add(size.saturating_mul(2)));
                if excess > MAX_EXCESS {
                    return Err(HttpError::Chunked("too much framing for its data").into());
                }
                self.excess = excess;
                self.responses.consume(len);
                self.state = if size == 0 {
                    State::Trailers
                } else {
                    State::Data(size)
                };
            }
            State::Trailers => {
                let Some(len) = self.responses.line(may_read, HttpError::TrailersTooLarge)? else {
                    return Ok(false);
                };
                let line = &self.responses.buffered()[..len];
                let empty = line == b"\n" || line == b"\r\n";
                if !empty {
                    self.trailers += len;
                    if self.trailers > MAX_TRAILERS {
                        return Err(HttpError::TrailersTooLarge.into());
                    }
                }
                self.responses.consume(len);
                if empty {
                    self.state = State::Done;
                }
            }
            State::Length(_) | State::Close | State::Data(_) | State::Done => {}
        }
        Ok(true)
    }

    /// Data into `out` (not empty), or framing steps until there is some:
    /// `Ok(None)` at the end, or when a read is needed and not allowed.
    fn advance(&mut self, out: &mut [u8], may_read: bool) -> io::Result<Option<usize>> {
        loop {
            match self.state {
                State::Done => return Ok(None),
                State::Length(left) => {
                    return match self.responses.take(out, left, may_read)? {
                        None => Ok(None),
                        Some(0) => Err(HttpError::TruncatedBody.into()),
                        Some(n) => {
                            let left = left - n as u64;
                            self.state = if left == 0 {
                                State::Done
                            } else {
                                State::Length(left)
                            };
                            Ok(Some(n))
                        }
                    }
                }
                State::Close => {
                    return match self.responses.take(out, u64::MAX, may_read)? {
                        None => Ok(None),
                        Some(0) => {
                            self.state = State::Done;
                            Ok(None)
                        }
                        Some(n) => Ok(Some(n)),
                    }
                }
                State::Data(left) => {
                    return match self.responses.take(out, left, may_read)? {
                        None => Ok(None),
                        Some(0) => Err(HttpError::TruncatedBody.into()),
                        Some(n) => {
                            let left = left - n as u64;
                            self.state = if left == 0 {
                                State::DataEnd
                            } else {
                                State::Data(left)
                            };
                            Ok(Some(n))
                        }
                    }
                }
                State::Size | State::DataEnd | State::Trailers => {
                    if !self.framing_step(may_read)? {
                        return Ok(None);
                    }
                }
            }
        }
    }
}

impl<R: Read> Read for BodyReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < out.len() {
            // Once some data is in hand, go on only as far as the buffer
            // allows: never block with data the caller could have.
            match self.advance(&mut out[n..], n == 0) {
                Ok(Some(k)) => n += k,
                Ok(None) => break,
                Err(_) if n > 0 => break,
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }
}

/// A chunk-size line (with its line ending) read as Go reads it: its size,
/// and the length of its content (without CRLF) for the overhead count.
fn chunk_size(line: &[u8]) -> Result<(u64, usize), HttpError> {
    let Some(content) = line.strip_suffix(b"\r\n") else {
        return Err(HttpError::Chunked("a chunk-size line ends with a bare LF"));
    };
    if content.contains(&b'\r') {
        return Err(HttpError::Chunked("a CR inside a chunk-size line"));
    }
    let digits = match content.iter().position(|&b| b == b';') {
        Some(semi) => &content[..semi],
        None => content,
    };
    let digits = digits.trim_ascii_end();
    if digits.is_empty() {
        return Err(HttpError::Chunked("an empty chunk size"));
    }
    if digits.len() > MAX_CHUNK_DIGITS {
        return Err(HttpError::Chunked("a chunk size over 16 hex digits"));
    }
    let mut size = 0u64;
    for &b in digits {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return Err(HttpError::Chunked("an invalid byte in a chunk size")),
        };
        size = (size << 4) | u64::from(d);
    }
    Ok((size, content.len()))
}

/// One response read whole from `input` (a GET's): its head and its body,
/// or the first error. For tests and the fuzz target.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn read_response<R: Read>(
    input: Responses<R>,
    read_size: usize,
) -> (Result<(Head, Vec<u8>), String>, usize) {
    let mut input = input;
    let mut most = input.capacity();
    let head = match input.read_head() {
        Ok(h) => h,
        Err(e) => return (Err(e.to_string()), most.max(input.capacity())),
    };
    most = most.max(input.capacity());
    let framing = match crate::wire::http::framing(&head) {
        Ok(f) => f,
        Err(e) => return (Err(e.to_string()), most),
    };
    let mut body = BodyReader::new(input, framing);
    let mut out = Vec::new();
    let mut piece = vec![0; read_size.max(1)];
    loop {
        match body.read(&mut piece) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&piece[..n]),
            Err(e) => return (Err(e.to_string()), most.max(body.responses().capacity())),
        }
        most = most.max(body.responses().capacity());
        assert!(out.len() < 1 << 26, "bodies in tests are small");
    }
    assert!(body.done(), "a body read to its end is done");
    (Ok((head, out)), most)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::buffered::sources::Trickle;
    use crate::wire::http::framing;

    /// A source that gives its bytes cut at one place.
    struct Cut<'a> {
        bytes: &'a [u8],
        at: usize,
    }

    impl Read for Cut<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let limit = if self.at > 0 {
                self.at
            } else {
                self.bytes.len()
            };
            let n = self.bytes.len().min(limit).min(out.len());
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            self.at = self.at.saturating_sub(n);
            Ok(n)
        }
    }

    /// The response read in every way: whole, a byte at a time, in pieces
    /// of 2, 3 and 7, cut once at every byte (every 97th past the first
    /// 512 of a long one), with reads of 1, 5 and 64 KiB; every way must
    /// agree. Returns the common result.
    fn every_way(bytes: &[u8]) -> Result<(u16, Vec<u8>), String> {
        let whole = read_response(Responses::new(Trickle(bytes, usize::MAX)), 64 << 10).0;
        let show = |r: &Result<(Head, Vec<u8>), String>| {
            r.as_ref()
                .map(|(h, b)| (h.clone(), b.clone()))
                .map_err(Clone::clone)
        };
        for piece in [1, 2, 3, 7] {
            for read in [1, 5, 64 << 10] {
                let got = read_response(Responses::new(Trickle(bytes, piece)), read).0;
                assert_eq!(
                    show(&got),
                    show(&whole),
                    "pieces of {piece}, reads of {read}"
                );
            }
        }
        for at in (1..bytes.len()).filter(|at| *at < 512 || at % 97 == 0) {
            let got = read_response(Responses::new(Cut { bytes, at }), 64 << 10).0;
            assert_eq!(show(&got), show(&whole), "cut at {at}");
        }
        whole.map(|(h, b)| (h.status, b))
    }

    const JSON: &[u8] = b"{\"kind\":\"Pod\"}\n{\"kind\":\"Pod\",\"x\":1}\n";

    #[test]
    fn every_legal_framing_gives_the_same_body_however_it_is_cut() {
        let cases: &[(&str, &[u8])] = &[
            ("chunked", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nf\r\n{\"kind\":\"Pod\"}\n\r\n15\r\n{\"kind\":\"Pod\",\"x\":1}\n\r\n0\r\n\r\n"),
            ("bare LF head", b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\nf\r\n{\"kind\":\"Pod\"}\n\r\n15\r\n{\"kind\":\"Pod\",\"x\":1}\n\r\n0\r\n\r\n"),
            ("mixed head", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\n\r\nf\r\n{\"kind\":\"Pod\"}\n\r\n15\r\n{\"kind\":\"Pod\",\"x\":1}\n\r\n0\r\n\r\n"),
            ("interim answers", b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\nLink: </x>\n\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nf\r\n{\"kind\":\"Pod\"}\n\r\n15\r\n{\"kind\":\"Pod\",\"x\":1}\n\r\n0\r\n\r\n"),
            ("obs-text and obs-fold", b"HTTP/1.1 200 OK\r\nX-Note: caf\xe9 \xff\xfe\r\nX-Fold: a\r\n b\r\nTransfer-Encoding: chunked\r\n\r\nf\r\n{\"kind\":\"Pod\"}\n\r\n15\r\n{\"kind\":\"Pod\",\"x\":1}\n\r\n0\r\n\r\n"),
            ("padded sizes", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n000000000000000F\r\n{\"kind\":\"Pod\"}\n\r\n0015  \r\n{\"kind\":\"Pod\",\"x\":1}\n\r\n0000000000000000\r\n\r\n"),
            ("extensions", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nf;name=value;q=\"a b;c\"\r\n{\"kind\":\"Pod\"}\n\r\n15 ; x\r\n{\"kind\":\"Pod\",\"x\":1}\n\r\n0;last\r\n\r\n"),
            ("trailers", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\nf\r\n{\"kind\":\"Pod\"}\n\r\n15\r\n{\"kind\":\"Pod\",\"x\":1}\n\r\n0\r\nX-Sum: 1\r\nX-Other: caf\xe9\nX-Third: 3\r\n\n"),
            ("Content-Length with chunked", b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nf\r\n{\"kind\":\"Pod\"}\n\r\n15\r\n{\"kind\":\"Pod\",\"x\":1}\n\r\n0\r\n\r\n"),
            ("Content-Length", b"HTTP/1.1 200 OK\r\nContent-Length: 36\r\n\r\n{\"kind\":\"Pod\"}\n{\"kind\":\"Pod\",\"x\":1}\n"),
            ("to the close", b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"kind\":\"Pod\"}\n{\"kind\":\"Pod\",\"x\":1}\n"),
            ("one-byte chunks", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n1\r\n\"\r\n22\r\nkind\":\"Pod\"}\n{\"kind\":\"Pod\",\"x\":1}\n\r\n0\r\n\r\n"),
        ];
        for (what, bytes) in cases {
            assert_eq!(every_way(bytes), Ok((200, JSON.to_vec())), "{what}");
        }
    }

    #[test]
    fn bodies_that_cannot_be_read_fail_the_same_however_they_are_cut() {
        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        let long_ext = format!(
            "{chunked}1;{}\r\nx\r\n0\r\n\r\n",
            "e".repeat(MAX_CHUNK_LINE)
        );
        let fits_ext = format!(
            "{chunked}1;{}\r\nx\r\n0\r\n\r\n",
            "e".repeat(MAX_CHUNK_LINE - 5)
        );
        let noisy: String = format!(
            "{chunked}{}0\r\n\r\n",
            "1;aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\nx\r\n".repeat(600)
        );
        let long_trailers = format!(
            "{chunked}0\r\n{}\r\n",
            "X-T: aaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".repeat(600)
        );
        let cases: Vec<(&str, String, &str)> = vec![
            (
                "bare LF in a chunk line",
                format!("{chunked}1\nx\r\n0\r\n\r\n"),
                "a malformed chunked body: a chunk-size line ends with a bare LF",
            ),
            (
                "CR in a chunk line",
                format!("{chunked}1\r;\r\nx\r\n0\r\n\r\n"),
                "a malformed chunked body: a CR inside a chunk-size line",
            ),
            (
                "17 hex digits",
                format!("{chunked}00000000000000001\r\nx\r\n0\r\n\r\n"),
                "a malformed chunked body: a chunk size over 16 hex digits",
            ),
            (
                "no digits",
                format!("{chunked};ext\r\nx\r\n0\r\n\r\n"),
                "a malformed chunked body: an empty chunk size",
            ),
            (
                "not hex",
                format!("{chunked}0x1\r\nx\r\n0\r\n\r\n"),
                "a malformed chunked body: an invalid byte in a chunk size",
            ),
            (
                "leading space",
                format!("{chunked} 1\r\nx\r\n0\r\n\r\n"),
                "a malformed chunked body: an invalid byte in a chunk size",
            ),
            (
                "data without CRLF",
                format!("{chunked}1\r\nxy\r\n0\r\n\r\n"),
                "a malformed chunked body: a chunk's data does not end in CRLF",
            ),
            (
                "a 4097-byte chunk line",
                long_ext,
                "a malformed chunked body: a chunk-size line over 4096 bytes",
            ),
            (
                "framing outweighing data",
                noisy,
                "a malformed chunked body: too much framing for its data",
            ),
            (
                "trailers over their bound",
                long_trailers,
                "a malformed chunked body: trailers over their bound",
            ),
            (
                "cut in a chunk",
                format!("{chunked}10\r\nabc"),
                "the connection closed before the end of the body",
            ),
            (
                "cut before the last chunk",
                format!("{chunked}1\r\nx\r\n"),
                "the connection closed before the end of the body",
            ),
            (
                "cut in the trailers",
                format!("{chunked}0\r\nX: 1\r\n"),
                "the connection closed before the end of the body",
            ),
            (
                "cut in a Content-Length body",
                "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc".into(),
                "the connection closed before the end of the body",
            ),
            (
                "cut in the head",
                "HTTP/1.1 200 OK\r\nContent-Le".into(),
                "the connection closed in the middle of the response head",
            ),
            (
                "nothing",
                String::new(),
                "the connection closed before a response",
            ),
            (
                "101",
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n".into(),
                "the server switched protocols (101), which tattler never asks for",
            ),
            (
                "six interim answers",
                format!(
                    "{}HTTP/1.1 200 OK\r\n\r\n",
                    "HTTP/1.1 100 Continue\r\n\r\n".repeat(6)
                ),
                "over 5 interim (1xx) answers before a response",
            ),
            (
                "two lengths",
                "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab".into(),
                "a Content-Length that is not one decimal number (or several that disagree)",
            ),
            (
                "gzip transfer coding",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n".into(),
                "a Transfer-Encoding other than chunked",
            ),
            (
                "garbage",
                "<html>hello</html>\r\n\r\n".into(),
                "a malformed response head (invalid HTTP version)",
            ),
        ];
        for (what, bytes, want) in &cases {
            assert_eq!(every_way(bytes.as_bytes()), Err(want.to_string()), "{what}");
        }
        let (status, body) = every_way(fits_ext.as_bytes()).unwrap();
        assert_eq!(
            (status, body),
            (200, b"x".to_vec()),
            "a 4096-byte chunk line"
        );
    }

    #[test]
    fn data_before_an_error_is_handed_out_first() {
        let bytes = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\nxyz";
        let mut input = Responses::new(Trickle(bytes, usize::MAX));
        let head = input.read_head().unwrap();
        let mut body = BodyReader::new(input, framing(&head).unwrap());
        let mut out = [0u8; 64];
        assert_eq!(body.read(&mut out).unwrap(), 3);
        assert_eq!(&out[..3], b"abc");
        let e = body.read(&mut out).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(
            http_error(&e),
            Some(&HttpError::Chunked("a chunk-size line ends with a bare LF"))
        );
    }

    #[test]
    fn a_timeout_stays_a_timeout() {
        struct Slow(bool);
        impl Read for Slow {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                if std::mem::take(&mut self.0) {
                    let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab";
                    out[..head.len()].copy_from_slice(head);
                    return Ok(head.len());
                }
                Err(io::Error::new(io::ErrorKind::TimedOut, "idle"))
            }
        }
        let mut input = Responses::new(Slow(true));
        let head = input.read_head().unwrap();
        let mut body = BodyReader::new(input, framing(&head).unwrap());
        let mut out = [0u8; 64];
        assert_eq!(body.read(&mut out).unwrap(), 2);
        assert_eq!(
            body.read(&mut out).unwrap_err().kind(),
            io::ErrorKind::TimedOut
        );
    }

    #[test]
    fn the_framing_after_the_data_is_finished_from_the_buffer_alone() {
        let bytes =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX: y\r\n\r\n";
        let mut input = Responses::new(Trickle(bytes, usize::MAX));
        let head = input.read_head().unwrap();
        let mut body = BodyReader::new(input, framing(&head).unwrap());
        let mut out = [0u8; 3];
        assert_eq!(body.read(&mut out).unwrap(), 3);
        assert!(!body.done());
        assert!(body.finish_buffered());
        assert!(body.done());
        let (_, all_used) = body.into_responses().into_inner();
        assert!(all_used);
        // Not all there yet: no read, not done.
        let bytes = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n";
        let mut input = Responses::new(Trickle(bytes, usize::MAX));
        let head = input.read_head().unwrap();
        let mut body = BodyReader::new(input, framing(&head).unwrap());
        assert_eq!(body.read(&mut out).unwrap(), 3);
        assert!(!body.finish_buffered());
    }

    #[test]
    fn memory_stays_bounded_whatever_the_sizes() {
        // A head just under the bound fits the buffer.
        let head = format!(
            "HTTP/1.1 200 OK\r\nX: {}\r\nContent-Length: 1\r\n\r\nx",
            "a".repeat(MAX_HEAD - 60)
        );
        let (got, most) = read_response(Responses::new(Trickle(head.as_bytes(), 1000)), 4096);
        assert_eq!(got.unwrap().1, b"x");
        assert!(most <= MAX_HEAD, "{most}");
        // A chunk claiming 2^64-1 bytes allocates nothing for them.
        let bytes = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nabc";
        let (got, most) = read_response(Responses::new(Trickle(bytes, 7)), 4096);
        assert_eq!(
            got.unwrap_err(),
            "the connection closed before the end of the body"
        );
        assert_eq!(most, BUF);
        let (got, most) = read_response(
            Responses::new(Trickle(
                b"HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\nab",
                7,
            )),
            4096,
        );
        assert!(got.is_err());
        assert_eq!(most, BUF);
        // A head that fills the buffer without ending: refused as too
        // large, not grown, however it comes.
        let head = format!("HTTP/1.1 200 OK\r\nX: {}", "a".repeat(BUF));
        for piece in [1000, 7, BUF + 10] {
            let (got, most) = read_response(Responses::new(Trickle(head.as_bytes(), piece)), 4096);
            assert_eq!(got.unwrap_err(), "a response head over 64 KiB", "{piece}");
            assert_eq!(most, BUF);
        }
        let mut input = Responses::new(Trickle(head.as_bytes(), 1000));
        let e = input.read_head().unwrap_err();
        assert_eq!(http_error(&e), Some(&HttpError::HeadTooLarge));
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }
}
