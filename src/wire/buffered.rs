//! The one buffered reader under every reader of the apiserver's bytes
//! (`http_read`'s heads and bodies, `frames`' watch frames and LIST items,
//! `proto_frames`' protobuf frames and items): the bytes read from a source
//! and not yet used, in one buffer. The readers decide what the bytes mean;
//! this holds them, and keeps memory bounded whatever the source sends: the
//! buffer starts at [`READ_SIZE`], grows only when the pending bytes need
//! more room, never past its bound, and shrinks back once empty after a
//! huge piece.
//!
//! Bytes handed out by [`take_bytes`](Buffered::take_bytes) stay where they
//! are until the next read, so a reader can lend them to its caller without
//! a copy.

use std::io::{self, Read};

/// The buffer's first and smallest size.
pub(crate) const READ_SIZE: usize = 64 << 10;

/// A byte source with the bytes read from it but not yet used.
pub(crate) struct Buffered<R> {
    inner: R,
    buf: Vec<u8>,
    /// `buf[start..end]` is read and not yet used.
    start: usize,
    end: usize,
    /// The most bytes `buf` may hold.
    limit: usize,
    /// The source has ended (a read gave 0): it is not asked again.
    eof: bool,
    /// Bytes read from the source in all.
    read: u64,
}

impl<R> Buffered<R> {
    /// Nothing read from `inner` yet; the buffer never grows past `limit`
    /// bytes (nor shrinks below [`READ_SIZE`]).
    pub(crate) fn new(inner: R, limit: usize) -> Buffered<R> {
        Buffered {
            inner,
            buf: vec![0; READ_SIZE],
            start: 0,
            end: 0,
            limit: limit.max(READ_SIZE),
            eof: false,
            read: 0,
        }
    }

    /// The bytes read and not used yet.
    #[inline]
    pub(crate) fn pending(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Marks the first `n` pending bytes used.
    #[inline]
    pub(crate) fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.start);
        self.start += n;
    }

    /// The first `n` pending bytes, marked used; they stay in place until
    /// the next read.
    #[inline]
    pub(crate) fn take_bytes(&mut self, n: usize) -> &[u8] {
        let at = self.start;
        self.consume(n);
        &self.buf[at..at + n]
    }

    /// Marks every pending byte used.
    pub(crate) fn clear(&mut self) {
        self.start = self.end;
    }

    /// Where the first `byte` is among the pending bytes from `from` up to
    /// (not including) `before`, both cut to what is pending.
    #[inline]
    pub(crate) fn find(&self, byte: u8, from: usize, before: usize) -> Option<usize> {
        let pending = self.pending();
        let to = before.min(pending.len());
        let from = from.min(to);
        memchr::memchr(byte, &pending[from..to]).map(|i| from + i)
    }

    /// Bytes read from the source in all.
    pub(crate) fn bytes_read(&self) -> u64 {
        self.read
    }

    /// Bytes read from the source and used.
    pub(crate) fn bytes_used(&self) -> u64 {
        self.read - (self.end - self.start) as u64
    }

    /// The buffer's size: bounded whatever the source sends (the fuzz
    /// target checks).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// The source (the pending bytes are dropped).
    pub(crate) fn into_inner(self) -> R {
        self.inner
    }

    /// Makes room after the pending bytes for `need` of them in all:
    /// moves them to the front when the buffer's tail is short, grows the
    /// buffer to `grow_to` (at least `need`, at most the limit) when it is
    /// too small. Moving only when the tail is short costs one move per
    /// buffer's worth, not one per read.
    fn make_room(&mut self, need: usize, grow_to: usize) -> io::Result<()> {
        if need > self.limit {
            // The readers stop at their own bounds, all within the limit.
            return Err(io::Error::other("the read buffer is full"));
        }
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            // After a huge piece, give the memory back.
            if self.buf.len() > 4 * READ_SIZE {
                self.buf = vec![0; READ_SIZE];
            }
        }
        if self.buf.len() - self.start < need {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.buf.len() < need {
                self.buf.resize(grow_to.clamp(need, self.limit), 0);
            }
        }
        Ok(())
    }
}

impl<R: Read> Buffered<R> {
    /// One read from the source after the pending bytes (room made as
    /// needed: the buffer doubles when they fill it); `Ok(0)` at the
    /// source's end. An error when the pending bytes fill the limit.
    pub(crate) fn fill(&mut self) -> io::Result<usize> {
        if self.eof {
            return Ok(0);
        }
        let pending = self.end - self.start;
        self.make_room(pending + 1, self.buf.len().saturating_mul(2))?;
        self.read_more()
    }

    /// Reads until `need` bytes are pending (the buffer grows to just
    /// that) or the source ends: whether they are. `need` above the limit
    /// is an error.
    pub(crate) fn fill_to(&mut self, need: usize) -> io::Result<bool> {
        while self.end - self.start < need {
            if self.eof {
                return Ok(false);
            }
            self.make_room(need, need)?;
            self.read_more()?;
        }
        Ok(true)
    }

    /// Passes over `n` bytes, reading as needed; false when the source
    /// ends first. Memory stays one buffer however large `n` is.
    pub(crate) fn discard(&mut self, mut n: u64) -> io::Result<bool> {
        while n > 0 {
            if self.start == self.end && !self.fill_to(1)? {
                return Ok(false);
            }
            let t = ((self.end - self.start) as u64).min(n);
            self.consume(t as usize);
            n -= t;
        }
        Ok(true)
    }

    /// One read into the buffer's free tail.
    fn read_more(&mut self) -> io::Result<usize> {
        let n = read_source(&mut self.inner, &mut self.buf[self.end..])?;
        self.end += n;
        self.count(n);
        Ok(n)
    }

    fn count(&mut self, n: usize) {
        self.read += n as u64;
        if n == 0 {
            self.eof = true;
        }
    }
}

/// One read, retried when interrupted.
fn read_source<R: Read>(inner: &mut R, out: &mut [u8]) -> io::Result<usize> {
    loop {
        match inner.read(out) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// The pending bytes first; with none, a read from the source: straight
/// into `out` when it is at least half the buffer (no copy), else through
/// the buffer.
impl<R: Read> Read for Buffered<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.start == self.end {
            if self.eof {
                return Ok(0);
            }
            if out.len() >= self.buf.len() / 2 {
                let n = read_source(&mut self.inner, out)?;
                self.count(n);
                return Ok(n);
            }
            if self.fill()? == 0 {
                return Ok(0);
            }
        }
        let pending = self.pending();
        let n = pending.len().min(out.len());
        out[..n].copy_from_slice(&pending[..n]);
        self.consume(n);
        Ok(n)
    }
}

/// Byte sources for the readers' tests.
#[cfg(test)]
pub(crate) mod sources {
    use std::io::{self, Read};

    /// Gives its bytes `piece` at a time (the last read may be short).
    pub(crate) struct Trickle<'a>(pub &'a [u8], pub usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(self.1).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sources::Trickle;
    use super::*;

    /// A source that records the size of each read asked of it, gives
    /// `script`'s answers in turn (a size, or an error kind), then bytes
    /// `b'x'` for ever.
    struct Scripted {
        script: Vec<Result<usize, io::ErrorKind>>,
        asked: Vec<usize>,
    }

    impl Scripted {
        fn new(script: &[Result<usize, io::ErrorKind>]) -> Scripted {
            Scripted {
                script: script.iter().rev().cloned().collect(),
                asked: Vec::new(),
            }
        }
    }

    impl Read for Scripted {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            self.asked.push(out.len());
            let n = match self.script.pop() {
                Some(Ok(n)) => n.min(out.len()),
                Some(Err(kind)) => return Err(kind.into()),
                None => out.len(),
            };
            out[..n].fill(b'x');
            Ok(n)
        }
    }

    #[test]
    fn pending_bytes_are_consumed_taken_and_counted() {
        let mut b = Buffered::new(&b"hello world"[..], 0);
        assert_eq!(b.pending(), b"");
        assert_eq!(b.fill().unwrap(), 11);
        assert_eq!(b.pending(), b"hello world");
        assert_eq!(b.take_bytes(6), b"hello ");
        b.consume(1);
        assert_eq!(b.pending(), b"orld");
        assert_eq!((b.bytes_read(), b.bytes_used()), (11, 7));
        b.clear();
        assert_eq!((b.pending(), b.bytes_used()), (&b""[..], 11));
        assert_eq!(b.fill().unwrap(), 0);
    }

    #[test]
    fn find_searches_the_window_it_is_given() {
        let mut b = Buffered::new(&b"ab\ncd\nef"[..], 0);
        b.fill().unwrap();
        assert_eq!(b.find(b'\n', 0, usize::MAX), Some(2));
        assert_eq!(b.find(b'\n', 3, usize::MAX), Some(5));
        assert_eq!(b.find(b'\n', 6, usize::MAX), None);
        assert_eq!(b.find(b'\n', 3, 5), None, "the window ends before it");
        assert_eq!(b.find(b'\n', 0, 2), None);
        assert_eq!(b.find(b'\n', 0, 3), Some(2));
        assert_eq!(b.find(b'\n', 100, 200), None, "cut to what is pending");
        b.consume(3);
        assert_eq!(
            b.find(b'\n', 0, usize::MAX),
            Some(2),
            "from the pending bytes"
        );
    }

    #[test]
    fn the_buffer_moves_only_when_its_tail_is_full_and_doubles_up_to_its_limit() {
        let mut b = Buffered::new(Scripted::new(&[]), 3 * READ_SIZE);
        assert_eq!(b.fill().unwrap(), READ_SIZE);
        b.consume(10);
        // Room at the tail: nothing moves, the read asks for the rest.
        let mut b2 = Buffered::new(Scripted::new(&[Ok(100)]), 0);
        b2.fill().unwrap();
        b2.consume(40);
        b2.fill().unwrap();
        assert_eq!(b2.inner.asked, [READ_SIZE, READ_SIZE - 100]);
        assert_eq!((b2.start, b2.end), (40, READ_SIZE));
        // A full tail with used bytes before: moved to the front, not grown.
        b.fill().unwrap();
        assert_eq!((b.start, b.end, b.capacity()), (0, READ_SIZE, READ_SIZE));
        // Full of pending bytes: doubled, then up to the limit, then an error.
        b.fill().unwrap();
        assert_eq!(b.capacity(), 2 * READ_SIZE);
        b.fill().unwrap();
        assert_eq!(b.capacity(), 3 * READ_SIZE);
        assert_eq!(b.pending().len(), 3 * READ_SIZE);
        assert_eq!(b.fill().unwrap_err().to_string(), "the read buffer is full");
        assert_eq!(b.inner.asked, [READ_SIZE, 10, READ_SIZE, READ_SIZE]);
    }

    #[test]
    fn fill_to_reads_until_enough_or_the_end_and_grows_to_just_that() {
        let mut b = Buffered::new(Trickle(&[7; 100_000], 1000), 1 << 20);
        assert!(b.fill_to(70_000).unwrap());
        assert_eq!(b.pending().len(), 70_000);
        assert_eq!(b.capacity(), 70_000);
        assert!(b.fill_to(5).unwrap(), "already there");
        assert_eq!(b.pending().len(), 70_000, "no read");
        b.consume(69_990);
        assert!(b.fill_to(20_000).unwrap());
        assert_eq!(b.capacity(), 70_000, "moved, not grown");
        assert!(!b.fill_to(40_000).unwrap(), "the source ends first");
        assert_eq!(b.pending().len(), 30_010);
        let mut b = Buffered::new(Trickle(&[7; 10], 1), 1 << 20);
        assert!(b.fill_to((1 << 20) + 1).is_err(), "over the limit");
    }

    #[test]
    fn the_memory_of_a_huge_piece_is_given_back_once_it_is_used() {
        let mut b = Buffered::new(Trickle(&[1; 1_000_000], 1 << 20), 1 << 20);
        assert!(b.fill_to(500_000).unwrap());
        assert_eq!(b.capacity(), 500_000);
        let piece = b.take_bytes(400_000);
        assert_eq!(piece.len(), 400_000, "lent in place");
        assert!(b.fill_to(100_001).unwrap());
        assert_eq!(b.capacity(), 500_000, "not empty: kept");
        b.clear();
        assert!(b.fill_to(1).unwrap());
        assert_eq!(b.capacity(), READ_SIZE);
    }

    #[test]
    fn the_end_of_the_source_is_final_and_interruptions_are_retried() {
        let mut b = Buffered::new(
            Scripted::new(&[Err(io::ErrorKind::Interrupted), Ok(3), Ok(0), Ok(5)]),
            0,
        );
        assert_eq!(b.fill().unwrap(), 3);
        assert_eq!(b.fill().unwrap(), 0);
        assert_eq!(b.fill().unwrap(), 0);
        assert!(!b.fill_to(4).unwrap());
        assert!(!b.discard(4).unwrap());
        assert_eq!(b.read(&mut [0; 10]).unwrap(), 0);
        assert_eq!(b.inner.asked.len(), 3, "not asked after its end");
        // Other errors are the source's, and the next call reads on.
        let mut b = Buffered::new(Scripted::new(&[Err(io::ErrorKind::TimedOut), Ok(2)]), 0);
        assert_eq!(b.fill().unwrap_err().kind(), io::ErrorKind::TimedOut);
        assert_eq!(b.fill().unwrap(), 2);
    }

    #[test]
    fn discard_passes_over_bytes_in_one_buffer() {
        let body: Vec<u8> = (0..=255).cycle().take(300_000).collect();
        let mut b = Buffered::new(Trickle(&body, 7000), 0);
        assert!(b.discard(250_001).unwrap());
        assert!(b.fill_to(1).unwrap());
        assert_eq!(b.pending()[0], body[250_001]);
        assert_eq!(b.bytes_used(), 250_001);
        assert_eq!(b.capacity(), READ_SIZE);
        assert!(!b.discard(50_000).unwrap());
    }

    #[test]
    fn reads_take_pending_bytes_first_and_big_ones_skip_the_buffer() {
        let body: Vec<u8> = (0..=255).cycle().take(200_000).collect();
        let mut b = Buffered::new(Scripted::new(&[Ok(10)]), 0);
        b.fill().unwrap();
        let mut out = vec![0; READ_SIZE];
        // Pending bytes come first, without a read.
        assert_eq!(b.read(&mut out).unwrap(), 10);
        assert_eq!(b.inner.asked, [READ_SIZE]);
        // None pending and a big read: straight from the source.
        assert_eq!(b.read(&mut out[..READ_SIZE / 2]).unwrap(), READ_SIZE / 2);
        assert_eq!(b.pending(), b"");
        assert_eq!(b.bytes_read(), 10 + READ_SIZE as u64 / 2);
        // A small one: through the buffer, the rest kept.
        assert_eq!(b.read(&mut out[..100]).unwrap(), 100);
        assert_eq!(b.pending().len(), READ_SIZE - 100);
        assert_eq!(b.inner.asked, [READ_SIZE, READ_SIZE / 2, READ_SIZE]);
        // Whatever the sizes, the bytes come in order.
        for size in [1, 100, READ_SIZE / 2, READ_SIZE] {
            let mut b = Buffered::new(Trickle(&body, 5000), 0);
            let mut got = Vec::new();
            let mut piece = vec![0; size];
            loop {
                match b.read(&mut piece).unwrap() {
                    0 => break,
                    n => got.extend_from_slice(&piece[..n]),
                }
            }
            assert_eq!(got, body, "reads of {size}");
            assert_eq!(b.bytes_read(), body.len() as u64);
        }
    }
}
