//! Response bodies masked across ureq. ureq-proto logs every response byte
//! it parses, body included, at trace level (target `ureq_proto::util`, hex
//! rows), before tattler has scrubbed anything: a Rust host logging that
//! target at trace would receive env values and Secret data. When (and only
//! when) the host's logger would record those rows, each connection masks
//! the bodies below ureq: [`Framing`] follows HTTP/1.1's framing of the
//! response bytes on their way up from the socket (or TLS), XORs each body
//! byte with a ChaCha20 [`Keystream`] of a key that lives only in this
//! process's memory, and names the response's keystream in an
//! `x-tattler-masked` header; the stream unmasks what ureq hands it
//! ([`Unmasked`]). ureq-proto's rows then carry only masked bytes.
//!
//! The framing is the one ureq-proto reads (`Transfer-Encoding: chunked`
//! before `Content-Length`, none for 1xx, 204 and 304, otherwise to the
//! connection's end), so both agree on which bytes are body; chunk-size
//! lines, heads and trailers pass as they are. Framing this reader does not
//! understand is masked to the connection's end: ureq fails on it, never
//! logs it.

use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305};
use ring::rand::{SecureRandom, SystemRandom};

/// The header naming a response's keystream.
pub(crate) const HEADER: &str = "x-tattler-masked";
/// Bytes of keystream made at a time.
const PAD: usize = 4096;
/// The pad index whose first bytes check a header's value; never a body's.
const CHECK_PAD: u32 = u32::MAX;
/// Longest response head followed (ureq's own limit is its input buffer).
const MAX_HEAD: usize = 128 << 10;
/// Longest chunk-size or trailer line followed.
const MAX_LINE: usize = 4 << 10;

/// Whether the host's logger would record ureq-proto's byte rows.
pub(crate) fn rows_logged() -> bool {
    log::log_enabled!(target: "ureq_proto::util", log::Level::Trace)
}

/// This process's masking key: random, made once, never written anywhere.
fn key() -> Option<&'static LessSafeKey> {
    static KEY: OnceLock<Option<LessSafeKey>> = OnceLock::new();
    KEY.get_or_init(|| {
        let mut bytes = [0u8; 32];
        SystemRandom::new().fill(&mut bytes).ok()?;
        let key = UnboundKey::new(&CHACHA20_POLY1305, &bytes).ok()?;
        Some(LessSafeKey::new(key))
    })
    .as_ref()
}

fn unavailable() -> io::Error {
    io::Error::other("no keystream to mask response bodies with")
}

/// Pad `index` of keystream `id`: ChaCha20 of zeros (the tag is dropped).
fn pad(id: u64, index: u32) -> io::Result<Box<[u8; PAD]>> {
    let key = key().ok_or_else(unavailable)?;
    let mut nonce = [0u8; 12];
    nonce[..8].copy_from_slice(&id.to_le_bytes());
    nonce[8..].copy_from_slice(&index.to_le_bytes());
    let mut bytes = Box::new([0u8; PAD]);
    let _tag = key
        .seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::empty(),
            &mut bytes[..],
        )
        .map_err(|_| unavailable())?;
    Ok(bytes)
}

/// One response's keystream, applied from its first body byte on.
pub(crate) struct Keystream {
    id: u64,
    next: u32,
    pad: Box<[u8; PAD]>,
    at: usize,
}

impl Keystream {
    /// A keystream no other response of this process has.
    fn fresh() -> io::Result<Keystream> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Keystream::new(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    fn new(id: u64) -> io::Result<Keystream> {
        Ok(Keystream {
            id,
            next: 1,
            pad: pad(id, 0)?,
            at: 0,
        })
    }

    /// The header value naming this keystream: its id and a check only this
    /// process can make, so a server cannot name one.
    fn token(&self) -> io::Result<String> {
        let check = pad(self.id, CHECK_PAD)?;
        let mut out = format!("{:016x}", self.id);
        for b in &check[..8] {
            out.push_str(&format!("{b:02x}"));
        }
        Ok(out)
    }

    /// The keystream a header value names, when this process made it.
    pub(crate) fn from_token(token: &str) -> Option<Keystream> {
        let id = u64::from_str_radix(token.get(..16)?, 16).ok()?;
        let ks = Keystream::new(id).ok()?;
        (ks.token().ok()? == token).then_some(ks)
    }

    /// XORs `data` with the next `data.len()` bytes of keystream.
    pub(crate) fn apply(&mut self, mut data: &mut [u8]) -> io::Result<()> {
        while !data.is_empty() {
            if self.at == PAD {
                if self.next == CHECK_PAD {
                    return Err(io::Error::other("masked body too long"));
                }
                self.pad = pad(self.id, self.next)?;
                self.next += 1;
                self.at = 0;
            }
            let n = data.len().min(PAD - self.at);
            for (b, k) in data[..n].iter_mut().zip(&self.pad[self.at..self.at + n]) {
                *b ^= k;
            }
            self.at += n;
            data = &mut data[n..];
        }
        Ok(())
    }
}

/// A body ureq handed over, unmasked.
pub(crate) struct Unmasked<R> {
    inner: R,
    keystream: Keystream,
}

impl<R: Read> Read for Unmasked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.keystream.apply(&mut buf[..n])?;
        Ok(n)
    }
}

/// `body` unmasked when its response's head names a keystream of this
/// process; as it is otherwise.
pub(crate) fn unmasked<R: Read + Send + 'static>(
    headers: &ureq::http::HeaderMap,
    body: R,
) -> Box<dyn Read + Send> {
    let keystream = headers
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(Keystream::from_token);
    match keystream {
        Some(keystream) => Box::new(Unmasked {
            inner: body,
            keystream,
        }),
        None => Box::new(body),
    }
}

/// Where the response bytes of one connection are.
enum Phase {
    /// A head, collected until its empty line.
    Head(Vec<u8>),
    /// Body bytes left of a `Content-Length` body.
    Length(u64),
    /// A chunk-size line, collected until its end.
    Size(Vec<u8>),
    /// Data bytes left of a chunk.
    Data(u64),
    /// Bytes left of the CRLF after a chunk's data.
    DataEnd(u8),
    /// A trailer line (after the last chunk), collected until its end.
    Trailer(Vec<u8>),
    /// Everything to the connection's end is body (or not understood).
    Close,
}

/// The masking of one connection's response bytes.
pub(crate) struct Framing {
    phase: Phase,
    keystream: Option<Keystream>,
}

impl Default for Framing {
    fn default() -> Self {
        Framing {
            phase: Phase::Head(Vec::new()),
            keystream: None,
        }
    }
}

impl Framing {
    /// Appends `input`, the next bytes from the server, to `out` with every
    /// body byte masked and each head naming its keystream.
    pub(crate) fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        while !input.is_empty() {
            let phase = std::mem::replace(&mut self.phase, Phase::Close);
            self.phase = match phase {
                Phase::Head(mut head) => {
                    if collect(&mut head, &mut input, b"\r\n\r\n") {
                        self.head(&head, out)?
                    } else if head.len() > MAX_HEAD {
                        self.mask_to_close(&head, out)?
                    } else {
                        Phase::Head(head)
                    }
                }
                Phase::Length(left) => match self.body(left, &mut input, out)? {
                    0 => Phase::Head(Vec::new()),
                    left => Phase::Length(left),
                },
                Phase::Data(left) => match self.body(left, &mut input, out)? {
                    0 => Phase::DataEnd(2),
                    left => Phase::Data(left),
                },
                Phase::DataEnd(left) => {
                    let n = usize::from(left).min(input.len());
                    out.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    match left - n as u8 {
                        0 => Phase::Size(Vec::new()),
                        left => Phase::DataEnd(left),
                    }
                }
                Phase::Size(mut line) => {
                    if !collect(&mut line, &mut input, b"\r\n") {
                        if line.len() > MAX_LINE {
                            self.mask_to_close(&line, out)?
                        } else {
                            Phase::Size(line)
                        }
                    } else {
                        match chunk_size(&line) {
                            Some(0) => {
                                out.extend_from_slice(&line);
                                Phase::Trailer(Vec::new())
                            }
                            Some(size) => {
                                out.extend_from_slice(&line);
                                Phase::Data(size)
                            }
                            None => self.mask_to_close(&line, out)?,
                        }
                    }
                }
                Phase::Trailer(mut line) => {
                    if !collect(&mut line, &mut input, b"\r\n") {
                        if line.len() > MAX_LINE {
                            self.mask_to_close(&line, out)?
                        } else {
                            Phase::Trailer(line)
                        }
                    } else {
                        out.extend_from_slice(&line);
                        if line.len() == 2 {
                            Phase::Head(Vec::new())
                        } else {
                            Phase::Trailer(Vec::new())
                        }
                    }
                }
                Phase::Close => {
                    self.masked(input, out)?;
                    input = &[];
                    Phase::Close
                }
            };
        }
        Ok(())
    }

    /// Masks up to `left` body bytes off the front of `input`; the bytes
    /// left after them.
    fn body(&mut self, left: u64, input: &mut &[u8], out: &mut Vec<u8>) -> io::Result<u64> {
        let n = left.min(input.len() as u64) as usize;
        self.masked(&input[..n], out)?;
        *input = &input[n..];
        Ok(left - n as u64)
    }

    fn masked(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        let from = out.len();
        out.extend_from_slice(bytes);
        match &mut self.keystream {
            Some(keystream) => keystream.apply(&mut out[from..]),
            None => {
                // Bytes not understood before any head: masked by a
                // keystream nobody is told of.
                let mut keystream = Keystream::fresh()?;
                keystream.apply(&mut out[from..])?;
                self.keystream = Some(keystream);
                Ok(())
            }
        }
    }

    /// Everything from `bytes` on is masked: framing not understood.
    fn mask_to_close(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> io::Result<Phase> {
        self.masked(bytes, out)?;
        Ok(Phase::Close)
    }

    /// A whole head: written out naming a fresh keystream (any header of
    /// that name the server sent dropped), and the framing of its body.
    fn head(&mut self, head: &[u8], out: &mut Vec<u8>) -> io::Result<Phase> {
        let Some(framing) = body_framing(head) else {
            return self.mask_to_close(head, out);
        };
        let keystream = Keystream::fresh()?;
        let mut lines = head.split_inclusive(|&b| b == b'\n');
        if let Some(status) = lines.next() {
            out.extend_from_slice(status);
        }
        out.extend_from_slice(HEADER.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(keystream.token()?.as_bytes());
        out.extend_from_slice(b"\r\n");
        for line in lines {
            if !is_header(line, HEADER) {
                out.extend_from_slice(line);
            }
        }
        self.keystream = Some(keystream);
        Ok(framing)
    }

    /// Whether the bytes fed so far end between responses.
    pub(crate) fn between_responses(&self) -> bool {
        matches!(&self.phase, Phase::Head(h) if h.is_empty())
    }
}

/// Moves bytes from `input` to `line` until `line` ends with `end` (then
/// `true`) or `input` runs out.
fn collect(line: &mut Vec<u8>, input: &mut &[u8], end: &[u8]) -> bool {
    let last = end[end.len() - 1];
    while let Some((&b, rest)) = input.split_first() {
        line.push(b);
        *input = rest;
        if b == last && line.ends_with(end) {
            return true;
        }
    }
    false
}

/// Whether `line` is a header named `name` (any case).
fn is_header(line: &[u8], name: &str) -> bool {
    line.len() > name.len()
        && line[..name.len()].eq_ignore_ascii_case(name.as_bytes())
        && line[name.len()] == b':'
}

/// A chunk-size line's size (hex, before any extension), when it has one.
fn chunk_size(line: &[u8]) -> Option<u64> {
    let line = line.strip_suffix(b"\r\n")?;
    let digits = line.split(|&b| b == b';').next()?;
    let digits = std::str::from_utf8(digits).ok()?.trim_matches([' ', '\t']);
    if digits.is_empty() || digits.len() > 15 {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

/// How the body after `head` is framed, as ureq-proto reads it (tattler
/// sends no HEAD requests); `None` for a head it would refuse.
fn body_framing(head: &[u8]) -> Option<Phase> {
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let status = lines.next()?;
    let http10 = status.starts_with(b"HTTP/1.0 ");
    if !http10 && !status.starts_with(b"HTTP/1.1 ") {
        return None;
    }
    let code: u16 = std::str::from_utf8(status.get(9..12)?).ok()?.parse().ok()?;
    let mut chunked = false;
    let mut length: Option<u64> = None;
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        let value = std::str::from_utf8(value).ok()?.trim_matches([' ', '\t']);
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            chunked |= value
                .split(',')
                .any(|c| c.trim().eq_ignore_ascii_case("chunked"));
        } else if name.eq_ignore_ascii_case(b"content-length") {
            for v in value.split(',') {
                let v: u64 = v.trim().parse().ok()?;
                if length.is_some_and(|l| l != v) {
                    return None;
                }
                length = Some(v);
            }
        }
    }
    let allowed = !(100..200).contains(&code) && code != 204 && code != 304;
    Some(if !allowed {
        Phase::Head(Vec::new())
    } else if chunked && !http10 {
        Phase::Size(Vec::new())
    } else if let Some(0) = length {
        Phase::Head(Vec::new())
    } else if let Some(len) = length {
        Phase::Length(len)
    } else {
        Phase::Close
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What ureq would see of `response` fed in pieces of `piece` bytes,
    /// and the body bytes an `Unmasked` reader makes of it.
    fn through(response: &[u8], piece: usize) -> Vec<u8> {
        let mut framing = Framing::default();
        let mut out = Vec::new();
        for part in response.chunks(piece) {
            framing.feed(part, &mut out).unwrap();
        }
        out
    }

    fn token_of(out: &[u8]) -> String {
        let s = String::from_utf8_lossy(out);
        let at = s.find("x-tattler-masked: ").unwrap() + 18;
        s[at..at + 32].to_string()
    }

    #[test]
    fn a_length_body_is_masked_and_unmasks_whatever_the_pieces() {
        let body = b"{\"env\":[{\"name\":\"P\",\"value\":\"hunter2\"}]}";
        let mut response =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        response.extend_from_slice(body);
        for piece in [1, 3, 7, 64, 4096] {
            let out = through(&response, piece);
            assert!(!out.windows(7).any(|w| w == b"hunter2"), "piece {piece}");
            let head_end = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            assert!(out.starts_with(b"HTTP/1.1 200 OK\r\nx-tattler-masked: "));
            let mut ks = Keystream::from_token(&token_of(&out)).unwrap();
            let mut masked = out[head_end..].to_vec();
            ks.apply(&mut masked).unwrap();
            assert_eq!(masked, body, "piece {piece}");
        }
    }

    #[test]
    fn chunk_framing_passes_and_only_chunk_data_is_masked() {
        let response = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n5;x=y\r\nhello\r\n6\r\n world\r\n0\r\nT: v\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
        for piece in [1, 2, 5, 1000] {
            let out = through(response, piece);
            let s = String::from_utf8_lossy(&out).to_string();
            assert!(s.contains("\r\n5;x=y\r\n"), "{s}");
            assert!(s.contains("\r\n6\r\n"));
            assert!(
                s.contains("\r\n0\r\nT: v\r\n\r\nHTTP/1.1 204 No Content\r\nx-tattler-masked: ")
            );
            assert!(!s.contains("hello") && !s.contains("world"));
            // The first response's data, unmasked in order.
            let first = token_of(&out);
            let mut ks = Keystream::from_token(&first).unwrap();
            let find = |what: &[u8]| out.windows(what.len()).position(|w| w == what).unwrap();
            let at = find(b"5;x=y\r\n") + 7;
            let mut data = out[at..at + 5].to_vec();
            let at2 = find(b"\r\n6\r\n") + 5;
            data.extend_from_slice(&out[at2..at2 + 6]);
            ks.apply(&mut data).unwrap();
            assert_eq!(data, b"hello world");
        }
    }

    #[test]
    fn framing_follows_the_rules_ureq_proto_reads_by() {
        for (head, want) in [
            ("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", "Length(4)"),
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 4, 4\r\n\r\n",
                "Length(4)",
            ),
            ("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "Head"),
            (
                "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
                "Head",
            ),
            ("HTTP/1.1 204 No Content\r\n\r\n", "Head"),
            ("HTTP/1.1 100 Continue\r\n\r\n", "Head"),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
                "Size",
            ),
            (
                "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                "Close",
            ),
            ("HTTP/1.1 200 OK\r\n\r\n", "Close"),
        ] {
            let got = match body_framing(head.as_bytes()).unwrap() {
                Phase::Length(n) => format!("Length({n})"),
                Phase::Head(_) => "Head".into(),
                Phase::Size(_) => "Size".into(),
                Phase::Close => "Close".into(),
                _ => "other".into(),
            };
            assert_eq!(got, want, "{head:?}");
        }
        for bad in [
            "HTTP/2 200 OK\r\n\r\n",
            "HTTP/1.1 2x0 OK\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 4, 5\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        ] {
            assert!(body_framing(bad.as_bytes()).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn what_is_not_understood_is_masked_to_the_end() {
        for response in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 4, 5\r\n\r\nhunter2"[..],
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhunter2",
            b"hunter2 before any head\r\n\r\n",
        ] {
            let out = through(response, 3);
            assert!(!out.windows(7).any(|w| w == b"hunter2"));
        }
    }

    #[test]
    fn a_servers_header_of_the_name_is_dropped_and_a_forged_token_refused() {
        let out = through(
            b"HTTP/1.1 200 OK\r\nX-Tattler-Masked: 00000000000000000000000000000000\r\nContent-Length: 0\r\n\r\n",
            4,
        );
        let s = String::from_utf8_lossy(&out);
        assert_eq!(s.matches("asked: ").count(), 1, "{s}");
        assert!(Keystream::from_token("00000000000000000000000000000000").is_none());
        assert!(Keystream::from_token("zz").is_none());
        assert!(Keystream::from_token(&token_of(&out)).is_some());
    }

    #[test]
    fn the_keystream_spans_pads_the_same_however_it_is_split() {
        let mut whole = vec![0u8; PAD * 2 + 100];
        Keystream::new(7).unwrap().apply(&mut whole).unwrap();
        let mut split = vec![0u8; PAD * 2 + 100];
        let mut ks = Keystream::new(7).unwrap();
        for part in split.chunks_mut(999) {
            ks.apply(part).unwrap();
        }
        assert_eq!(whole, split);
        assert_ne!(&whole[..PAD], &whole[PAD..PAD * 2]);
    }
}
