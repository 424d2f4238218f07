//! HTTP/1.1 as tattler speaks it (RFC 9112), the decisions only: the GET and
//! CONNECT heads tattler writes, the response head read with `httparse`, and
//! how a response's body is framed (§6.3). `http_read` reads bytes with
//! these rules; `access::client` moves them. Pure: nothing here logs, so no
//! request head (it carries the credentials) and no response byte can reach
//! a logger from here, and nothing below tattler sees them either.
//!
//! Limits, each with its reason:
//! - a response head is at most [`MAX_HEAD`] (64 KiB, what ureq allowed
//!   before, so no server that worked stops working), with any number of
//!   fields within it, as Go's client takes them (its only bound is
//!   `Transport.MaxResponseHeaderBytes`, 10 MB by default: tattler's is
//!   smaller because its read buffer is fixed; an apiserver's heads are a
//!   few hundred bytes);
//! - at most [`MAX_INTERIM`] (5) interim 1xx answers before the final one,
//!   as Go's `net/http` client allows;
//! - chunk-size lines and trailers: see `http_read`.

use std::fmt;

/// The longest response head read, interim answers each counted alone.
pub(crate) const MAX_HEAD: usize = 64 << 10;
/// The header fields parsed at first: a head with more is parsed again
/// with room for as many as it has lines.
const FIRST_FIELDS: usize = 64;
/// The most interim (1xx) answers skipped before the final one.
pub(crate) const MAX_INTERIM: usize = 5;
/// Sent as `User-Agent`.
pub(crate) const USER_AGENT: &str = concat!("tattler/", env!("CARGO_PKG_VERSION"));

/// Why an exchange failed in HTTP itself (not in the I/O under it). The
/// messages quote no header value and no body byte: a server's bytes may
/// carry secrets, and a request's carry the credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum HttpError {
    /// A value tattler was to send would break the head (a CR, an LF or
    /// another control byte): the field is named, never the value.
    RequestField(&'static str),
    /// The connection closed before any byte of a response.
    Closed,
    /// The connection closed in the middle of a response head.
    TruncatedHead,
    /// A response head longer than [`MAX_HEAD`].
    HeadTooLarge,
    /// Not an HTTP/1.x response head (`httparse`'s reason).
    Malformed(&'static str),
    /// A status code below 100.
    Status(u16),
    /// 101 Switching Protocols: tattler never asks to upgrade.
    Upgrade,
    /// More than [`MAX_INTERIM`] interim answers.
    TooManyInterim,
    /// Content-Length fields that are not one decimal number, or disagree.
    ContentLength,
    /// A Transfer-Encoding other than `chunked`.
    TransferEncoding,
    /// A chunked body tattler cannot read (the reason, in Go's words where
    /// Go has them).
    Chunked(&'static str),
    /// The trailer section after the last chunk is over its bound.
    TrailersTooLarge,
    /// The connection closed before the body's end.
    TruncatedBody,
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::RequestField(what) => {
                write!(f, "{what} has a control character; not sent")
            }
            HttpError::Closed => f.write_str("the connection closed before a response"),
            HttpError::TruncatedHead => {
                f.write_str("the connection closed in the middle of the response head")
            }
            HttpError::HeadTooLarge => {
                write!(f, "a response head over {} KiB", MAX_HEAD >> 10)
            }
            HttpError::Malformed(why) => write!(f, "a malformed response head ({why})"),
            HttpError::Status(code) => write!(f, "a malformed response status ({code})"),
            HttpError::Upgrade => {
                f.write_str("the server switched protocols (101), which tattler never asks for")
            }
            HttpError::TooManyInterim => {
                write!(
                    f,
                    "over {MAX_INTERIM} interim (1xx) answers before a response"
                )
            }
            HttpError::ContentLength => f.write_str(
                "a Content-Length that is not one decimal number (or several that disagree)",
            ),
            HttpError::TransferEncoding => f.write_str("a Transfer-Encoding other than chunked"),
            HttpError::Chunked(why) => write!(f, "a malformed chunked body: {why}"),
            HttpError::TrailersTooLarge => {
                f.write_str("a malformed chunked body: trailers over their bound")
            }
            HttpError::TruncatedBody => {
                f.write_str("the connection closed before the end of the body")
            }
        }
    }
}

impl std::error::Error for HttpError {}

impl From<HttpError> for std::io::Error {
    fn from(e: HttpError) -> std::io::Error {
        let kind = match e {
            HttpError::Closed | HttpError::TruncatedHead | HttpError::TruncatedBody => {
                std::io::ErrorKind::UnexpectedEof
            }
            _ => std::io::ErrorKind::InvalidData,
        };
        std::io::Error::new(kind, e)
    }
}

/// A GET as tattler sends it.
pub(crate) struct Get<'a> {
    /// Path and query (origin form), the server URL's path prefix included.
    pub target: &'a str,
    /// The server's `host[:port]`, as its URL names it.
    pub authority: &'a str,
    /// The media types asked for.
    pub accept: &'a str,
    /// `gzip` or `identity`.
    pub accept_encoding: &'a str,
    /// The credentials' header value (`Bearer …`, `Basic …`).
    pub authorization: Option<&'a str>,
}

/// Whether `value` can go into a head as it is: no control byte but HTAB.
fn sendable(value: &str) -> bool {
    !value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f)
}

fn field(out: &mut Vec<u8>, name: &str, value: &str, what: &'static str) -> Result<(), HttpError> {
    if !sendable(value) {
        return Err(HttpError::RequestField(what));
    }
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
    Ok(())
}

/// The head of a GET: the request line, `Host`, `User-Agent`, `Accept`,
/// `Accept-Encoding`, `Authorization` when given, and `Connection:
/// keep-alive`. The target must be visible ASCII (the URL builders
/// percent-encode everything else).
#[cfg(test)]
pub(crate) fn get_head(req: &Get<'_>) -> Result<Vec<u8>, HttpError> {
    request_head("GET", req, None)
}

/// The head of a request with `method`, as a GET's, and for a body
/// of `content` bytes its `Content-Type: application/json` and
/// `Content-Length` (a Lease or a ConfigMap written by the elector).
pub(crate) fn request_head(
    method: &str,
    req: &Get<'_>,
    content: Option<usize>,
) -> Result<Vec<u8>, HttpError> {
    if req.target.is_empty() || !req.target.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(HttpError::RequestField("the request target"));
    }
    if !req.authority.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(HttpError::RequestField("the Host header"));
    }
    let mut out = Vec::with_capacity(
        200 + req.target.len() + req.accept.len() + req.authorization.map_or(0, str::len),
    );
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(req.target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    field(&mut out, "Host", req.authority, "the Host header")?;
    field(&mut out, "User-Agent", USER_AGENT, "User-Agent")?;
    field(&mut out, "Accept", req.accept, "the Accept header")?;
    field(
        &mut out,
        "Accept-Encoding",
        req.accept_encoding,
        "the Accept-Encoding header",
    )?;
    if let Some(value) = req.authorization {
        field(&mut out, "Authorization", value, "the credentials' header")?;
    }
    if let Some(n) = content {
        field(&mut out, "Content-Type", "application/json", "Content-Type")?;
        field(&mut out, "Content-Length", &n.to_string(), "Content-Length")?;
    }
    out.extend_from_slice(b"Connection: keep-alive\r\n\r\n");
    Ok(out)
}

/// The head of a CONNECT to `authority` (`host:port`, brackets around an
/// IPv6 address) through a proxy, with the proxy's credentials when given.
pub(crate) fn connect_head(
    authority: &str,
    proxy_authorization: Option<&str>,
) -> Result<Vec<u8>, HttpError> {
    if authority.is_empty() || !authority.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(HttpError::RequestField("the CONNECT target"));
    }
    let mut out = Vec::with_capacity(128 + 2 * authority.len());
    out.extend_from_slice(b"CONNECT ");
    out.extend_from_slice(authority.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    field(&mut out, "Host", authority, "the CONNECT target")?;
    field(&mut out, "User-Agent", USER_AGENT, "User-Agent")?;
    if let Some(value) = proxy_authorization {
        field(
            &mut out,
            "Proxy-Authorization",
            value,
            "the proxy's credentials",
        )?;
    }
    out.extend_from_slice(b"\r\n");
    Ok(out)
}

/// One header field as received: its name (a token: ASCII) and its value's
/// bytes, obs-text (0x80–0xFF) kept, obs-fold line breaks made spaces.
#[derive(Clone, PartialEq, Eq)]
struct HeaderField {
    name: Box<str>,
    value: Box<[u8]>,
}

/// A response head. Its `Debug` output shows the status and the field
/// names, never a value (a server may send cookies or tokens).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Head {
    /// The status code, 100–999.
    pub status: u16,
    /// The minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor: u8,
    fields: Vec<HeaderField>,
}

impl fmt::Debug for Head {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.fields.iter().map(|h| &*h.name).collect();
        f.debug_struct("Head")
            .field("status", &self.status)
            .field("minor", &self.minor)
            .field("fields", &names)
            .finish()
    }
}

impl Head {
    /// A head from parts (tests).
    #[cfg(test)]
    pub(crate) fn new(status: u16, fields: &[(&str, &[u8])]) -> Head {
        Head {
            status,
            minor: 1,
            fields: fields
                .iter()
                .map(|(n, v)| HeaderField {
                    name: (*n).into(),
                    value: (*v).into(),
                })
                .collect(),
        }
    }

    /// The first field named `name` (ASCII case-insensitive), as bytes
    /// without surrounding white space.
    pub(crate) fn bytes(&self, name: &str) -> Option<&[u8]> {
        self.fields
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(name))
            .map(|f| f.value.trim_ascii())
    }

    /// Every field named `name`, in order, as [`bytes`](Self::bytes).
    pub(crate) fn all<'h>(&'h self, name: &'h str) -> impl Iterator<Item = &'h [u8]> + 'h {
        self.fields
            .iter()
            .filter(move |f| f.name.eq_ignore_ascii_case(name))
            .map(|f| f.value.trim_ascii())
    }

    /// The first field named `name` as text, when it is visible ASCII
    /// (spaces and tabs too): a value with obs-text reads as absent here,
    /// as `http::HeaderValue::to_str` has it.
    pub(crate) fn text(&self, name: &str) -> Option<&str> {
        let v = self.bytes(name)?;
        if v.iter().all(|&b| b == b'\t' || (0x20..0x7f).contains(&b)) {
            std::str::from_utf8(v).ok()
        } else {
            None
        }
    }

    /// The header fields' names and values, in order (the fuzz hook
    /// compares heads read in different pieces).
    #[cfg(feature = "fuzzing")]
    pub(crate) fn fields(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.fields.iter().map(|f| (&*f.name, &*f.value))
    }

    /// Whether a comma-separated field (`Connection`) lists `token`.
    fn lists(&self, name: &str, token: &str) -> bool {
        self.all(name).any(|v| {
            v.split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
        })
    }
}

/// Parses a response head at the start of `buf`: `Ok(None)` while it is
/// incomplete, else its length (the body starts there) and the head.
/// Line endings CRLF or a bare LF, as `httparse` reads them; obs-fold
/// continuation lines are joined with spaces (RFC 9112 §5.2 asks a user
/// agent to accept them). The status line is split as Go's
/// `http.ReadResponse` splits it: any number of spaces after the version
/// and after the code (`HTTP/1.1  200 OK`). Any number of fields, bounded
/// by [`MAX_HEAD`] alone.
pub(crate) fn parse_head(buf: &[u8]) -> Result<Option<(usize, Head)>, HttpError> {
    match parse_with(buf, &mut [httparse::EMPTY_HEADER; FIRST_FIELDS])? {
        Parsed::Done(got) => return Ok(got),
        Parsed::MoreFields => {}
    }
    // Each field takes a line of its own: as many as the lines within the
    // bound is always room enough.
    let within = &buf[..buf.len().min(MAX_HEAD + 1)];
    let lines = within.iter().filter(|&&b| b == b'\n').count() + 1;
    match parse_with(buf, &mut vec![httparse::EMPTY_HEADER; lines])? {
        Parsed::Done(got) => Ok(got),
        // More fields than lines within the bound: the head goes past it.
        Parsed::MoreFields => Err(HttpError::HeadTooLarge),
    }
}

/// What one parse with a given number of field slots says.
enum Parsed {
    /// The head, or `None` while it is incomplete.
    Done(Option<(usize, Head)>),
    /// More fields than slots.
    MoreFields,
}

fn parse_with<'b>(buf: &'b [u8], fields: &mut [httparse::Header<'b>]) -> Result<Parsed, HttpError> {
    let mut resp = httparse::Response::new(fields);
    let parsed = httparse::ParserConfig::default()
        .allow_obsolete_multiline_headers_in_responses(true)
        .allow_multiple_spaces_in_response_status_delimiters(true)
        .parse_response(&mut resp, buf);
    let len = match parsed {
        Ok(httparse::Status::Complete(len)) => len,
        // Not ended within the bound: longer than it, whatever follows.
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => {
            return Err(HttpError::HeadTooLarge)
        }
        Ok(httparse::Status::Partial) => return Ok(Parsed::Done(None)),
        Err(httparse::Error::TooManyHeaders) => return Ok(Parsed::MoreFields),
        Err(e) => return Err(HttpError::Malformed(reason(e))),
    };
    if len > MAX_HEAD {
        return Err(HttpError::HeadTooLarge);
    }
    let status = resp.code.unwrap_or(0);
    if status < 100 {
        return Err(HttpError::Status(status));
    }
    let fields = resp
        .headers
        .iter()
        .map(|h| HeaderField {
            name: h.name.into(),
            value: h
                .value
                .iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
                .collect(),
        })
        .collect();
    Ok(Parsed::Done(Some((
        len,
        Head {
            status,
            minor: resp.version.unwrap_or(1),
            fields,
        },
    ))))
}

/// `httparse`'s reason, in its words.
fn reason(e: httparse::Error) -> &'static str {
    match e {
        httparse::Error::HeaderName => "invalid header name",
        httparse::Error::HeaderValue => "invalid header value",
        httparse::Error::NewLine => "invalid new line",
        httparse::Error::Status => "invalid response status",
        httparse::Error::Token => "invalid token",
        httparse::Error::TooManyHeaders => "too many headers",
        httparse::Error::Version => "invalid HTTP version",
    }
}

/// What a head is, among those that may answer one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An interim answer (100, 102, 103, …): skipped, the response follows.
    Interim,
    /// 101: an error, tattler never asks to upgrade.
    Upgrade,
    /// The response.
    Final,
}

/// Sorts a head by its status.
pub(crate) fn kind(head: &Head) -> Kind {
    match head.status {
        101 => Kind::Upgrade,
        100..=199 => Kind::Interim,
        _ => Kind::Final,
    }
}

/// How a response's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body (1xx, 204, 304).
    Empty,
    /// This many bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
    /// Everything until the server closes the connection.
    Close,
}

/// RFC 9112 §6.3 for the response to a GET: no body for 1xx, 204 and 304;
/// `Transfer-Encoding: chunked` wins over `Content-Length` (any other
/// transfer coding is refused, as Go's client refuses it);
/// `Content-Length` fields must be one decimal number, the same in each;
/// otherwise the body runs to the connection's close.
pub(crate) fn framing(head: &Head) -> Result<Framing, HttpError> {
    if matches!(head.status, 100..=199 | 204 | 304) {
        return Ok(Framing::Empty);
    }
    let mut codings = head
        .all("transfer-encoding")
        .flat_map(|v| v.split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .filter(|c| !c.is_empty())
        .peekable();
    if codings.peek().is_some() {
        let chunked = codings
            .next()
            .is_some_and(|c| c.eq_ignore_ascii_case(b"chunked"));
        return if chunked && codings.next().is_none() {
            Ok(Framing::Chunked)
        } else {
            Err(HttpError::TransferEncoding)
        };
    }
    let mut length = None;
    for v in head.all("content-length") {
        // At most 19 digits: always below 2^63, as Go's ParseUint(…, 10, 63).
        if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
            return Err(HttpError::ContentLength);
        }
        let n = v.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
        if length.is_some_and(|l| l != n) {
            return Err(HttpError::ContentLength);
        }
        length = Some(n);
    }
    Ok(match length {
        Some(0) => Framing::Empty,
        Some(n) => Framing::Length(n),
        None => Framing::Close,
    })
}

/// Whether the connection can carry another request once this response's
/// body has been read to its end: HTTP/1.1 without `Connection: close`
/// (HTTP/1.0 only with `Connection: keep-alive`), a body that ends by its
/// framing, not both `Transfer-Encoding` and `Content-Length` (RFC 9112
/// §6.3 asks a client to close after such a response), and no
/// `Transfer-Encoding` in an HTTP/1.0 answer (§6.1: its framing is faulty
/// and the connection closes after it, `Connection: keep-alive` or not).
pub(crate) fn reusable(head: &Head, framing: Framing) -> bool {
    let encoded = head.bytes("transfer-encoding").is_some();
    let persistent = if head.minor >= 1 {
        !head.lists("connection", "close")
    } else {
        head.lists("connection", "keep-alive") && !encoded
    };
    let both = encoded && head.bytes("content-length").is_some();
    persistent && framing != Framing::Close && !both
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &[u8]) -> Result<Option<(usize, Head)>, HttpError> {
        parse_head(text)
    }

    #[test]
    fn the_get_head_carries_what_tattler_sends_and_nothing_else() {
        let get = Get {
            target: "/api/v1/pods?watch=true&limit=500",
            authority: "10.0.0.1:6443",
            accept: "application/json",
            accept_encoding: "gzip",
            authorization: Some("Bearer t0k"),
        };
        assert_eq!(
            String::from_utf8(get_head(&get).unwrap()).unwrap(),
            format!(
                "GET /api/v1/pods?watch=true&limit=500 HTTP/1.1\r\nHost: 10.0.0.1:6443\r\nUser-Agent: tattler/{}\r\nAccept: application/json\r\nAccept-Encoding: gzip\r\nAuthorization: Bearer t0k\r\nConnection: keep-alive\r\n\r\n",
                env!("CARGO_PKG_VERSION")
            )
        );
        let anonymous = Get {
            authorization: None,
            ..get
        };
        let text = String::from_utf8(get_head(&anonymous).unwrap()).unwrap();
        assert!(!text.contains("Authorization"), "{text}");
    }

    #[test]
    fn a_value_that_would_break_the_head_is_refused_and_not_quoted() {
        let ok = Get {
            target: "/api",
            authority: "h:1",
            accept: "application/json",
            accept_encoding: "identity",
            authorization: None,
        };
        for (get, what) in [
            (
                Get {
                    target: "/api x",
                    ..ok
                },
                "the request target",
            ),
            (Get { target: "", ..ok }, "the request target"),
            (
                Get {
                    target: "/api\r\nX: y",
                    ..ok
                },
                "the request target",
            ),
            (
                Get {
                    authority: "h\r\n:1",
                    ..ok
                },
                "the Host header",
            ),
            (
                Get {
                    accept: "a\nb",
                    ..ok
                },
                "the Accept header",
            ),
            (
                Get {
                    authorization: Some("Bearer s3cr3t\r\nX-Evil: 1"),
                    ..ok
                },
                "the credentials' header",
            ),
            (
                Get {
                    authorization: Some("Bearer s3cr3t\0"),
                    ..ok
                },
                "the credentials' header",
            ),
        ] {
            let e = get_head(&get).unwrap_err();
            assert_eq!(e, HttpError::RequestField(what));
            assert!(!e.to_string().contains("s3cr3t"), "{e}");
        }
        // A tab is allowed in a field value.
        assert!(get_head(&Get {
            accept: "a,\tb",
            ..ok
        })
        .is_ok());
    }

    #[test]
    fn the_connect_head_names_the_server_and_carries_the_proxys_credentials() {
        assert_eq!(
            String::from_utf8(connect_head("[::1]:6443", Some("Basic dTpw")).unwrap()).unwrap(),
            format!(
                "CONNECT [::1]:6443 HTTP/1.1\r\nHost: [::1]:6443\r\nUser-Agent: tattler/{}\r\nProxy-Authorization: Basic dTpw\r\n\r\n",
                env!("CARGO_PKG_VERSION")
            )
        );
        assert_eq!(
            connect_head("h:1", Some("Basic a\r\nb")).unwrap_err(),
            HttpError::RequestField("the proxy's credentials")
        );
        assert!(connect_head("h 1:2", None).is_err());
    }

    #[test]
    fn heads_parse_with_any_line_ending_httparse_accepts() {
        for (text, why) in [
            (
                &b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-A: 1\r\n\r\n"[..],
                "CRLF",
            ),
            (
                b"HTTP/1.1 200 OK\nContent-Type: application/json\nX-A: 1\n\n",
                "bare LF",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\nX-A: 1\r\n\n",
                "mixed",
            ),
            (
                b"HTTP/1.1 200\r\nContent-Type: application/json\r\nX-A: 1\r\n\r\n",
                "no reason",
            ),
            (
                b"\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-A: 1\r\n\r\n",
                "an empty line first",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Type:   application/json  \r\nX-A:1\r\n\r\n",
                "white space",
            ),
        ] {
            let (len, h) = head(text)
                .unwrap()
                .unwrap_or_else(|| panic!("{why}: incomplete"));
            assert_eq!(len, text.len(), "{why}");
            assert_eq!(h.status, 200, "{why}");
            assert_eq!(h.minor, 1, "{why}");
            assert_eq!(h.text("content-type"), Some("application/json"), "{why}");
            assert_eq!(h.text("CONTENT-TYPE"), Some("application/json"), "{why}");
            assert_eq!(h.bytes("x-a"), Some(&b"1"[..]), "{why}");
            assert_eq!(h.text("x-missing"), None, "{why}");
        }
    }

    #[test]
    fn a_head_is_complete_only_at_its_empty_line_and_the_body_starts_there() {
        let full = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        let end = full.len() - 2;
        for cut in 0..end {
            assert_eq!(head(&full[..cut]).unwrap(), None, "cut at {cut}");
        }
        for cut in end..=full.len() {
            assert_eq!(head(&full[..cut]).unwrap().unwrap().0, end, "cut at {cut}");
        }
    }

    #[test]
    fn obs_text_values_are_kept_as_bytes_and_obs_fold_is_joined() {
        let (_, h) = head(b"HTTP/1.1 200 OK\r\nX-Note: caf\xe9 \xff\r\nContent-Type: application/json\r\nX-Folded: a\r\n  b\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(h.bytes("x-note"), Some(&b"caf\xe9 \xff"[..]));
        assert_eq!(h.text("x-note"), None, "not text");
        assert_eq!(h.text("content-type"), Some("application/json"));
        assert_eq!(h.text("x-folded"), Some("a    b"));
        let shown = format!("{h:?}");
        assert!(
            shown.contains("X-Note") && !shown.contains("caf"),
            "{shown}"
        );
    }

    #[test]
    fn bad_heads_are_refused_with_their_reason() {
        let huge = format!("HTTP/1.1 200 OK\r\nX-Big: {}\r\n", "a".repeat(MAX_HEAD));
        let ended = format!("{huge}\r\n");
        // Fields of 3 bytes each: more than the first parse has room for,
        // and more than fit the bound.
        let tiny = format!("HTTP/1.1 200 OK\n{}\n", "a:\n".repeat(MAX_HEAD / 3 + 1));
        let cut_tiny = &tiny.as_bytes()[..MAX_HEAD];
        for (text, want) in [
            (huge.as_bytes(), HttpError::HeadTooLarge),
            (&huge.as_bytes()[..MAX_HEAD], HttpError::HeadTooLarge),
            (ended.as_bytes(), HttpError::HeadTooLarge),
            (tiny.as_bytes(), HttpError::HeadTooLarge),
            (cut_tiny, HttpError::HeadTooLarge),
            (b"HTTP/1.1 099 Low\r\n\r\n", HttpError::Status(99)),
            (
                b"HTTP/2.0 200 OK\r\n\r\n",
                HttpError::Malformed("invalid HTTP version"),
            ),
            (
                b"ICY 200 OK\r\n\r\n",
                HttpError::Malformed("invalid HTTP version"),
            ),
            (
                b"HTTP/1.1 2000 OK\r\n\r\n",
                HttpError::Malformed("invalid response status"),
            ),
            (
                b"HTTP/1.1 200 OK\r\nBad Name: v\r\n\r\n",
                HttpError::Malformed("invalid header name"),
            ),
            (
                b"HTTP/1.1 200 OK\r\nX: a\x01b\r\n\r\n",
                HttpError::Malformed("invalid header value"),
            ),
            (
                b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
                HttpError::Malformed("invalid header value"),
            ),
        ] {
            assert_eq!(
                head(text),
                Err(want),
                "{}",
                String::from_utf8_lossy(&text[..40.min(text.len())])
            );
        }
        // Just at the bound is fine; one byte short of its end is not yet
        // too large.
        let fits = format!(
            "HTTP/1.1 200 OK\r\nX: {}\r\n\r\n",
            "a".repeat(MAX_HEAD - 24)
        );
        assert_eq!(fits.len(), MAX_HEAD);
        assert_eq!(head(fits.as_bytes()).unwrap().unwrap().0, MAX_HEAD);
        assert_eq!(head(&fits.as_bytes()[..MAX_HEAD - 1]), Ok(None));
    }

    /// Go's client reads any number of fields (its only bound is
    /// `MaxResponseHeaderBytes`); so does tattler, within [`MAX_HEAD`].
    #[test]
    fn any_number_of_fields_within_the_bound_is_read() {
        for n in [
            0,
            1,
            FIRST_FIELDS - 1,
            FIRST_FIELDS,
            FIRST_FIELDS + 1,
            128,
            129,
            3000,
        ] {
            let fields: String = (0..n).map(|i| format!("X-{i}: v{i}\r\n")).collect();
            let text = format!("HTTP/1.1 200 OK\r\n{fields}Content-Length: 0\r\n\r\n");
            let (len, h) = head(text.as_bytes()).unwrap().unwrap();
            assert_eq!(len, text.len(), "{n}");
            assert_eq!(h.fields.len(), n + 1, "{n}");
            assert_eq!(h.text("content-length"), Some("0"), "{n}");
            if n > 0 {
                let last = format!("x-{}", n - 1);
                assert_eq!(h.text(&last), Some(format!("v{}", n - 1).as_str()));
            }
        }
        // Three-byte fields filling the bound to its last byte.
        let fill = (MAX_HEAD - "HTTP/1.1 200 OK\n".len() - 1) / 3;
        let text = format!("HTTP/1.1 200 OK\n{}\n", "a:\n".repeat(fill));
        assert!(text.len() <= MAX_HEAD);
        assert_eq!(head(text.as_bytes()).unwrap().unwrap().1.fields.len(), fill);
    }

    /// The status line as Go's `http.ReadResponse` splits it: the version
    /// up to the first space, spaces trimmed, a code of three digits up to
    /// the next space; the reason is anything.
    #[test]
    fn status_lines_are_split_as_go_splits_them() {
        for (line, want) in [
            ("HTTP/1.1 200 OK", Ok((1, 200))),
            ("HTTP/1.1  200 OK", Ok((1, 200))),
            ("HTTP/1.1    200    OK", Ok((1, 200))),
            ("HTTP/1.1 200  OK", Ok((1, 200))),
            ("HTTP/1.1 200", Ok((1, 200))),
            ("HTTP/1.1  200", Ok((1, 200))),
            ("HTTP/1.1 200 ", Ok((1, 200))),
            ("HTTP/1.0  404 Not Found", Ok((0, 404))),
            ("HTTP/1.1 200 OK with spaces\there", Ok((1, 200))),
            (
                "HTTP/1.1\t200 OK",
                Err(HttpError::Malformed("invalid HTTP version")),
            ),
            (
                "HTTP/1.1200 OK",
                Err(HttpError::Malformed("invalid HTTP version")),
            ),
            (
                " HTTP/1.1 200 OK",
                Err(HttpError::Malformed("invalid HTTP version")),
            ),
            (
                "HTTP/1.1 20 OK",
                Err(HttpError::Malformed("invalid response status")),
            ),
            (
                "HTTP/1.1 200\tOK",
                Err(HttpError::Malformed("invalid response status")),
            ),
            (
                "HTTP/1.1 2OO OK",
                Err(HttpError::Malformed("invalid response status")),
            ),
        ] {
            for ending in ["\r\n", "\n"] {
                let text = format!("{line}{ending}Content-Length: 0{ending}{ending}");
                let got = head(text.as_bytes()).map(|h| {
                    let (_, h) = h.expect("complete");
                    (h.minor, h.status)
                });
                assert_eq!(got, want, "{line:?}");
            }
        }
    }

    #[test]
    fn interim_answers_are_skipped_but_101_is_an_error() {
        for (status, want) in [
            (100, Kind::Interim),
            (102, Kind::Interim),
            (103, Kind::Interim),
            (199, Kind::Interim),
            (101, Kind::Upgrade),
            (200, Kind::Final),
            (204, Kind::Final),
            (410, Kind::Final),
            (999, Kind::Final),
        ] {
            assert_eq!(kind(&Head::new(status, &[])), want, "{status}");
        }
    }

    #[test]
    fn framing_follows_rfc_9112_section_6_3() {
        let te: &[u8] = b"chunked";
        for (status, fields, want) in [
            (200, &[][..], Ok(Framing::Close)),
            (
                200,
                &[("Content-Length", &b"10"[..])][..],
                Ok(Framing::Length(10)),
            ),
            (200, &[("Content-Length", b"0")], Ok(Framing::Empty)),
            (
                200,
                &[("content-length", b" 0010 ")],
                Ok(Framing::Length(10)),
            ),
            (200, &[("Transfer-Encoding", te)], Ok(Framing::Chunked)),
            (
                200,
                &[("Transfer-Encoding", b"Chunked")],
                Ok(Framing::Chunked),
            ),
            (
                200,
                &[("Transfer-Encoding", b" chunked , ")],
                Ok(Framing::Chunked),
            ),
            // chunked wins over Content-Length, whatever it says.
            (
                200,
                &[("Content-Length", b"5"), ("Transfer-Encoding", te)],
                Ok(Framing::Chunked),
            ),
            (
                200,
                &[("Transfer-Encoding", te), ("Content-Length", b"nonsense")],
                Ok(Framing::Chunked),
            ),
            // No body, whatever the fields say.
            (204, &[("Content-Length", b"10")], Ok(Framing::Empty)),
            (304, &[("Transfer-Encoding", te)], Ok(Framing::Empty)),
            (100, &[("Content-Length", b"10")], Ok(Framing::Empty)),
            // Several Content-Lengths must agree.
            (
                200,
                &[("Content-Length", b"7"), ("Content-Length", b"7")],
                Ok(Framing::Length(7)),
            ),
            (
                200,
                &[("Content-Length", b"7"), ("Content-Length", b"8")],
                Err(HttpError::ContentLength),
            ),
            (
                200,
                &[("Content-Length", b"7, 7")],
                Err(HttpError::ContentLength),
            ),
            (
                200,
                &[("Content-Length", b"+7")],
                Err(HttpError::ContentLength),
            ),
            (
                200,
                &[("Content-Length", b"-1")],
                Err(HttpError::ContentLength),
            ),
            (
                200,
                &[("Content-Length", b"")],
                Err(HttpError::ContentLength),
            ),
            (
                200,
                &[("Content-Length", b"99999999999999999999")],
                Err(HttpError::ContentLength),
            ),
            (
                200,
                &[("Content-Length", b"9223372036854775807")],
                Ok(Framing::Length(i64::MAX as u64)),
            ),
            // Only chunked, once.
            (
                200,
                &[("Transfer-Encoding", b"gzip, chunked")],
                Err(HttpError::TransferEncoding),
            ),
            (
                200,
                &[("Transfer-Encoding", b"identity")],
                Err(HttpError::TransferEncoding),
            ),
            (
                200,
                &[("Transfer-Encoding", te), ("Transfer-Encoding", te)],
                Err(HttpError::TransferEncoding),
            ),
            (
                200,
                &[("Transfer-Encoding", b"chunked, gzip")],
                Err(HttpError::TransferEncoding),
            ),
        ] {
            assert_eq!(
                framing(&Head::new(status, fields)),
                want,
                "{status} {fields:?}"
            );
        }
    }

    #[test]
    fn a_connection_is_reused_only_when_the_response_allows_it() {
        let mut h = Head::new(200, &[("Content-Length", b"2")]);
        assert!(reusable(&h, Framing::Length(2)));
        assert!(!reusable(&h, Framing::Close));
        h.minor = 0;
        assert!(!reusable(&h, Framing::Length(2)), "HTTP/1.0");
        let h10 = Head {
            minor: 0,
            ..Head::new(200, &[("Connection", b"Keep-Alive")])
        };
        assert!(reusable(&h10, Framing::Length(2)));
        // HTTP/1.0 with Transfer-Encoding: closed after it, whatever else.
        for fields in [
            &[("Transfer-Encoding", &b"chunked"[..])][..],
            &[
                ("Connection", b"keep-alive"),
                ("Transfer-Encoding", b"chunked"),
            ],
            &[
                ("Transfer-Encoding", b"chunked"),
                ("Connection", b"Keep-Alive"),
            ],
        ] {
            let h = Head {
                minor: 0,
                ..Head::new(200, fields)
            };
            assert!(!reusable(&h, Framing::Chunked), "HTTP/1.0 {fields:?}");
        }
        for fields in [
            &[("Connection", &b"close"[..])][..],
            &[("Connection", b"upgrade, Close")],
            &[("Transfer-Encoding", b"chunked"), ("Content-Length", b"2")],
        ] {
            assert!(
                !reusable(&Head::new(200, fields), Framing::Chunked),
                "{fields:?}"
            );
        }
        assert!(reusable(
            &Head::new(200, &[("Transfer-Encoding", b"chunked")]),
            Framing::Chunked
        ));
        assert!(reusable(&Head::new(204, &[]), Framing::Empty));
    }
}
