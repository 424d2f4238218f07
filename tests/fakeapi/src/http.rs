//! Minimal HTTP/1.1: request parsing, response heads, chunked (optionally gzip) bodies.

use flate2::write::GzEncoder;
use flate2::Compression;
use std::io::{self, BufRead, Read, Write};

/// At most this many bytes of request line + headers.
const MAX_HEAD: usize = 64 * 1024;
/// At most this many request headers.
const MAX_HEADERS: usize = 100;
/// Request bodies larger than this are refused.
const MAX_BODY: u64 = 16 * 1024 * 1024;

/// One parsed request head.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) method: String,
    /// The request target exactly as received (`/api/v1/pods?watch=true`).
    pub(crate) target: String,
    pub(crate) http11: bool,
    /// Header names in lowercase.
    pub(crate) headers: Vec<(String, String)>,
    /// The Content-Length body (a PUT's or POST's object); empty for none.
    pub(crate) body: Vec<u8>,
}

impl Request {
    /// The first value of a header (name in lowercase).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// `METHOD target`, as recorded by `FakeApi::requests`.
    pub(crate) fn line(&self) -> String {
        format!("{} {}", self.method, self.target)
    }

    fn connection_has(&self, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(k, _)| k == "connection")
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }

    /// Whether the connection may serve another request after this one.
    pub(crate) fn keep_alive(&self) -> bool {
        if self.connection_has("close") {
            false
        } else {
            self.http11 || self.connection_has("keep-alive")
        }
    }

    /// Whether `Accept-Encoding` allows gzip.
    pub(crate) fn accepts_gzip(&self) -> bool {
        self.headers
            .iter()
            .filter(|(k, _)| k == "accept-encoding")
            .flat_map(|(_, v)| v.split(','))
            .any(|t| {
                let mut parts = t.split(';');
                let coding = parts.next().unwrap_or("").trim();
                let q_zero = parts.any(|p| {
                    let p = p.trim();
                    p.starts_with("q=") && p[2..].trim().parse::<f32>().ok() == Some(0.0)
                });
                (coding.eq_ignore_ascii_case("gzip") || coding == "*") && !q_zero
            })
    }

    /// The apiserver indents JSON for curl, Wget and kube-probe.
    pub(crate) fn pretty_user_agent(&self) -> bool {
        let ua = self.header("user-agent").unwrap_or("");
        ua.starts_with("curl") || ua.starts_with("Wget") || ua.starts_with("kube-probe")
    }
}

/// What the reader thread got from the socket.
pub(crate) enum ReadResult {
    Request(Request),
    /// EOF or a read error: the client went away.
    Closed,
    /// Not HTTP we understand: answer 400 and close.
    Bad(String),
}

enum LineErr {
    Eof,
    TooLong,
}

fn read_line<R: BufRead>(r: &mut R, buf: &mut Vec<u8>, used: &mut usize) -> Result<(), LineErr> {
    buf.clear();
    let room = MAX_HEAD.saturating_sub(*used) as u64;
    let n = r
        .take(room)
        .read_until(b'\n', buf)
        .map_err(|_| LineErr::Eof)?;
    *used += n;
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        Ok(())
    } else if n as u64 == room {
        Err(LineErr::TooLong)
    } else {
        Err(LineErr::Eof)
    }
}

/// Reads one request (head and any Content-Length body).
pub(crate) fn read_request<R: BufRead>(r: &mut R) -> ReadResult {
    let mut used = 0;
    let mut line = Vec::new();
    loop {
        match read_line(r, &mut line, &mut used) {
            Ok(()) if line.is_empty() => continue,
            Ok(()) => break,
            Err(LineErr::Eof) => return ReadResult::Closed,
            Err(LineErr::TooLong) => return ReadResult::Bad("request header too large".into()),
        }
    }
    let Ok(text) = std::str::from_utf8(&line) else {
        return ReadResult::Bad("malformed request line".into());
    };
    let parts: Vec<&str> = text.split(' ').collect();
    if parts.len() != 3 || parts[0].is_empty() || parts[1].is_empty() {
        return ReadResult::Bad(format!("malformed HTTP request {}", json_free(text)));
    }
    let version = parts[2];
    if !version.starts_with("HTTP/1.") {
        return ReadResult::Bad(format!(
            "unsupported protocol version {}",
            json_free(version)
        ));
    }
    let mut req = Request {
        method: parts[0].to_string(),
        target: parts[1].to_string(),
        http11: version != "HTTP/1.0",
        headers: Vec::new(),
        body: Vec::new(),
    };
    loop {
        match read_line(r, &mut line, &mut used) {
            Ok(()) if line.is_empty() => break,
            Ok(()) => {}
            Err(LineErr::Eof) => return ReadResult::Closed,
            Err(LineErr::TooLong) => return ReadResult::Bad("request header too large".into()),
        }
        let Ok(text) = std::str::from_utf8(&line) else {
            return ReadResult::Bad("malformed MIME header line".into());
        };
        let Some((name, value)) = text.split_once(':') else {
            return ReadResult::Bad("malformed MIME header line".into());
        };
        if name.is_empty() || name.contains(' ') {
            return ReadResult::Bad("malformed MIME header line".into());
        }
        if req.headers.len() >= MAX_HEADERS {
            return ReadResult::Bad("too many headers".into());
        }
        req.headers
            .push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    if req.header("transfer-encoding").is_some() {
        return ReadResult::Bad("chunked request bodies are not supported".into());
    }
    if let Some(cl) = req.header("content-length") {
        let Ok(n) = cl.parse::<u64>() else {
            return ReadResult::Bad("bad Content-Length".into());
        };
        if n > MAX_BODY {
            return ReadResult::Bad("request body too large".into());
        }
        match io::copy(&mut r.take(n), &mut req.body) {
            Ok(got) if got == n => {}
            _ => return ReadResult::Closed,
        }
    }
    ReadResult::Request(req)
}

/// Keeps an error message printable.
fn json_free(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(200).collect()
}

/// Percent-decodes a URL component (`+` is a space in queries, as in Go's `url.ParseQuery`).
pub(crate) fn pct_decode(s: &str, plus_is_space: bool) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (
                    b.get(i + 1).and_then(|c| hex(*c)),
                    b.get(i + 2).and_then(|c| hex(*c)),
                ) {
                    (Some(h), Some(l)) => out.push((h * 16 + l) as u8),
                    _ => {
                        let bad: String = s[i..].chars().take(3).collect();
                        return Err(format!("invalid URL escape \"{bad}\""));
                    }
                }
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| "invalid UTF-8 in URL".to_string())
}

/// The decoded path segments (empty ones dropped) and query pairs of a request target.
pub(crate) type Target = (Vec<String>, Vec<(String, String)>);

/// Splits and decodes a request target.
pub(crate) fn parse_target(target: &str) -> Result<Target, String> {
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, q),
        None => (target, ""),
    };
    if !path.starts_with('/') {
        return Err(format!("invalid request target {}", json_free(target)));
    }
    let mut segs = Vec::new();
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        segs.push(pct_decode(seg, false)?);
    }
    let mut pairs = Vec::new();
    for part in query.split('&').filter(|s| !s.is_empty()) {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        pairs.push((pct_decode(k, true)?, pct_decode(v, true)?));
    }
    Ok((segs, pairs))
}

/// Go's `http.StatusText`.
pub(crate) fn reason_phrase(code: u16) -> &'static str {
    match code {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        413 => "Request Entity Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// A status line plus headers, in the order given, then the blank line.
pub(crate) fn head_bytes(code: u16, headers: &[(&str, String)]) -> Vec<u8> {
    let mut s = format!("HTTP/1.1 {code} {}\r\n", reason_phrase(code));
    for (k, v) in headers {
        s.push_str(k);
        s.push_str(": ");
        s.push_str(v);
        s.push_str("\r\n");
    }
    s.push_str("\r\n");
    s.into_bytes()
}

/// Gzips a whole body.
pub(crate) fn gzip_all(data: &[u8]) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    // Writing into a Vec cannot fail.
    let _ = gz.write_all(data);
    gz.finish().unwrap_or_default()
}

/// Encodes a streamed body as HTTP/1.1 chunks, gzip-compressed if asked: one gzip stream
/// flushed per chunk, or (`members`) each chunk a complete gzip member of its own, as
/// Kubernetes 1.37's WatchListCompression writes them (a decoder must read on past the end
/// of the first member).
pub(crate) struct Chunker {
    gz: Option<GzEncoder<Vec<u8>>>,
    members: bool,
}

impl Chunker {
    pub(crate) fn new(gzip: bool, members: bool) -> Chunker {
        Chunker {
            gz: (gzip && !members).then(|| GzEncoder::new(Vec::new(), Compression::default())),
            members: gzip && members,
        }
    }

    /// The bytes that go on the wire inside one chunk for `data`.
    pub(crate) fn payload(&mut self, data: &[u8]) -> Vec<u8> {
        if self.members {
            return gzip_all(data);
        }
        match &mut self.gz {
            None => data.to_vec(),
            Some(gz) => {
                // Writing into a Vec cannot fail; flush() is a zlib sync flush.
                let _ = gz.write_all(data);
                let _ = gz.flush();
                std::mem::take(gz.get_mut())
            }
        }
    }

    /// `<hex len>\r\n<payload>\r\n`, or nothing for an empty payload (which would end the body).
    pub(crate) fn frame(payload: &[u8]) -> Vec<u8> {
        if payload.is_empty() {
            return Vec::new();
        }
        let mut out = format!("{:x}\r\n", payload.len()).into_bytes();
        out.extend_from_slice(payload);
        out.extend_from_slice(b"\r\n");
        out
    }

    /// The gzip trailer (if any) as a chunk, then the terminating `0\r\n\r\n`.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(gz) = self.gz.take() {
            out = Chunker::frame(&gz.finish().unwrap_or_default());
        }
        out.extend_from_slice(b"0\r\n\r\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &str) -> ReadResult {
        read_request(&mut io::BufReader::new(raw.as_bytes()))
    }

    #[test]
    fn parses_head_and_skips_body() {
        let raw = "GET /api/v1/pods?watch=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nAccept-Encoding: deflate, gzip;q=0.5\r\n\r\nabcGET / HTTP/1.0\r\n\r\n";
        let mut r = io::BufReader::new(raw.as_bytes());
        let ReadResult::Request(a) = read_request(&mut r) else {
            panic!()
        };
        assert_eq!(a.line(), "GET /api/v1/pods?watch=1");
        assert!(a.keep_alive() && a.accepts_gzip());
        let ReadResult::Request(b) = read_request(&mut r) else {
            panic!()
        };
        assert!(!b.keep_alive() && !b.accepts_gzip());
        assert!(matches!(read_request(&mut r), ReadResult::Closed));
    }

    #[test]
    fn bad_input() {
        assert!(matches!(parse("GARBAGE\r\n\r\n"), ReadResult::Bad(_)));
        assert!(matches!(parse("GET / SPDY/3\r\n\r\n"), ReadResult::Bad(_)));
        assert!(matches!(
            parse("GET / HTTP/1.1\r\nnocolon\r\n\r\n"),
            ReadResult::Bad(_)
        ));
        assert!(matches!(
            parse("GET / HTTP/1.1\r\nHost"),
            ReadResult::Closed
        ));
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(70_000));
        assert!(matches!(parse(&long), ReadResult::Bad(_)));
        assert!(matches!(
            parse("GET / HTTP/1.1\r\nAccept-Encoding: gzip;q=0\r\n\r\n"),
            ReadResult::Request(r) if !r.accepts_gzip()
        ));
    }

    #[test]
    fn targets() {
        let (segs, q) = parse_target(
            "/api/v1/namespaces/a%2Fb/pods?labelSelector=app%3Dweb%2Ctier+in+(x)&watch",
        )
        .unwrap();
        assert_eq!(segs, ["api", "v1", "namespaces", "a/b", "pods"]);
        assert_eq!(q[0], ("labelSelector".into(), "app=web,tier in (x)".into()));
        assert_eq!(q[1], ("watch".into(), "".into()));
        assert!(parse_target("/api?x=%zz").is_err());
        assert!(parse_target("/api?x=%").is_err());
        assert!(parse_target("*").is_err());
    }

    #[test]
    fn chunks() {
        let mut c = Chunker::new(false, false);
        assert_eq!(Chunker::frame(&c.payload(b"{}\n")), b"3\r\n{}\n\r\n");
        assert_eq!(c.finish(), b"0\r\n\r\n");
    }
}
