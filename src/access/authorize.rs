//! The `Authorization` header, added below ureq. ureq-proto logs every
//! request head it writes, byte for byte, at trace level (target
//! `ureq_proto::util`), to whatever logger the host installed; a header
//! given to ureq would reach a Rust host's trace log. So the stream's agent
//! never sees the credentials: this connector, the outermost of the chain,
//! splices the header into each request head on its way to the socket (or
//! TLS), after ureq-proto has logged it.

use std::sync::Arc;

use parking_lot::Mutex;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, LazyBuffers, NextTimeout, Transport as Wire,
};

use crate::access::mask::{self, Framing};
use crate::access::secret::Token;

/// The header value for the agent's next request, set by its stream (one
/// thread, one request at a time) just before the request.
#[derive(Debug, Default)]
pub(crate) struct HeaderSlot(Mutex<Option<Token>>);

impl HeaderSlot {
    pub(crate) fn set(&self, value: Option<&str>) {
        *self.0.lock() = value.map(Token::new);
    }

    fn get(&self) -> Option<Token> {
        self.0.lock().clone()
    }
}

/// Wraps each connection of the chain so that its request heads carry the
/// slot's header.
#[derive(Debug)]
pub(crate) struct Authorize(pub Arc<HeaderSlot>);

impl<In: Wire> Connector<In> for Authorize {
    type Out = Authorized<In>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        Ok(chained.map(|inner| Authorized {
            inner,
            slot: self.0.clone(),
            masking: mask::rows_logged().then(|| Masking {
                buffers: LazyBuffers::new(
                    details.config.input_buffer_size(),
                    details.config.output_buffer_size(),
                ),
                framing: Framing::default(),
                pending: Vec::new(),
                taken: 0,
            }),
        }))
    }
}

/// A connection whose request heads get the header on their way out.
pub(crate) struct Authorized<T> {
    inner: T,
    slot: Arc<HeaderSlot>,
    /// Set when the host logged ureq-proto's rows as the connection opened.
    masking: Option<Masking>,
}

/// What a masking connection adds: buffers of its own for ureq (the inner
/// ones hold the server's bytes as they came), the framing followed, and
/// bytes masked but not yet in `buffers` (`pending[taken..]`).
struct Masking {
    buffers: LazyBuffers,
    framing: Framing,
    pending: Vec<u8>,
    taken: usize,
}

impl<T> std::fmt::Debug for Authorized<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Authorized")
    }
}

impl<T: Wire> Wire for Authorized<T> {
    fn buffers(&mut self) -> &mut dyn Buffers {
        match &mut self.masking {
            Some(m) => &mut m.buffers,
            None => self.inner.buffers(),
        }
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let spliced = match self.slot.get() {
            Some(value) => with_header(&self.buffers().output()[..amount], value.expose()),
            None => None,
        };
        let bytes = match (spliced, &mut self.masking) {
            (Some(bytes), _) => bytes,
            (None, Some(m)) => m.buffers.output()[..amount].to_vec(),
            (None, None) => return self.inner.transmit_output(amount, timeout),
        };
        // The head is in the inner output buffer already; it was copied out,
        // so the buffer can carry the spliced head piece by piece.
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let out = self.inner.buffers().output();
            let n = out.len().min(rest.len());
            if n == 0 {
                return Err(ureq::Error::Io(std::io::Error::other(
                    "no room in the output buffer",
                )));
            }
            out[..n].copy_from_slice(&rest[..n]);
            self.inner.transmit_output(n, timeout)?;
            rest = &rest[n..];
        }
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let Some(m) = &mut self.masking else {
            if mask::rows_logged() {
                // The host began logging the rows on a connection opened
                // unmasked: end it, so the next one masks.
                return Err(ureq::Error::Io(std::io::Error::other(
                    "ureq-proto's byte rows are logged now: reconnecting with bodies masked",
                )));
            }
            return self.inner.await_input(timeout);
        };
        // A head is passed up whole, so one read may give ureq nothing yet.
        while m.taken == m.pending.len() {
            if self.inner.buffers().input().is_empty() && !self.inner.await_input(timeout)? {
                return Ok(false);
            }
            m.pending.clear();
            m.taken = 0;
            let input = self.inner.buffers().input();
            let n = input.len();
            m.framing.feed(input, &mut m.pending)?;
            self.inner.buffers().input_consume(n);
        }
        let room = m.buffers.input_append_buf();
        let n = room.len().min(m.pending.len() - m.taken);
        room[..n].copy_from_slice(&m.pending[m.taken..m.taken + n]);
        m.taken += n;
        m.buffers.input_appended(n);
        Ok(n > 0)
    }

    fn is_open(&mut self) -> bool {
        let between = self
            .masking
            .as_ref()
            .is_none_or(|m| m.taken == m.pending.len() && m.framing.between_responses());
        between && self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

/// `head` with `Authorization: value` after its request line, when `head`
/// is one whole request head (tattler sends only `GET`s without a body)
/// that has no such header yet; `None` leaves the bytes as they are.
fn with_header(head: &[u8], value: &str) -> Option<Vec<u8>> {
    if !head.starts_with(b"GET ") || !head.ends_with(b"\r\n\r\n") {
        return None;
    }
    let line_end = head.windows(2).position(|w| w == b"\r\n")? + 2;
    let has = head[line_end..]
        .split(|&b| b == b'\n')
        .any(|l| l.len() >= 14 && l[..14].eq_ignore_ascii_case(b"authorization:"));
    if has {
        return None;
    }
    let mut out = Vec::with_capacity(head.len() + value.len() + 17);
    out.extend_from_slice(&head[..line_end]);
    out.extend_from_slice(b"Authorization: ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&head[line_end..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::with_header;

    #[test]
    fn the_header_follows_the_request_line_of_a_whole_get_head() {
        let head = b"GET /api/v1/pods HTTP/1.1\r\nhost: h\r\n\r\n";
        assert_eq!(
            with_header(head, "Bearer t0k").unwrap(),
            b"GET /api/v1/pods HTTP/1.1\r\nAuthorization: Bearer t0k\r\nhost: h\r\n\r\n"
        );
        for (bytes, why) in [
            (&b"GET /x HTTP/1.1\r\nhost: h\r\n"[..], "not a whole head"),
            (b"POST /x HTTP/1.1\r\n\r\n", "not a GET"),
            (
                b"GET /x HTTP/1.1\r\nAUTHORIZATION: Basic x\r\n\r\n",
                "has one",
            ),
            (b"{\"body\":1}", "a body"),
        ] {
            assert_eq!(with_header(bytes, "Bearer t0k"), None, "{why}");
        }
    }
}
