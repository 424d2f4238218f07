//! Working memory the object walks reuse from object to object: the stack
//! of open containers, a copy's list of edits, a copy's redacted text. A
//! stream keeps one [`Reuse`] and hands it to each walk, so that walking an
//! object allocates nothing once the first few are walked (a walk of an
//! annotation's copy nests inside its object's, and takes its own). Nothing
//! read in one walk is left for the next: each buffer is empty when taken.

use super::walk::{Edit, Frame};

/// At most this many buffers of each kind are kept (a walk nests a copy's
/// walk at most `policy::MAX_COPY_DEPTH` deep), and none of more than
/// `LARGEST` bytes: an odd, huge object's memory is not held on to.
const KEPT: usize = 8;
const LARGEST: usize = 256 << 10;

/// Buffers to reuse (see the module's header).
#[derive(Debug, Default)]
pub(crate) struct Reuse {
    stacks: Vec<Vec<Frame>>,
    edits: Vec<Vec<Edit>>,
    bytes: Vec<Vec<u8>>,
}

fn take<T>(kept: &mut Vec<Vec<T>>) -> Vec<T> {
    kept.pop().unwrap_or_default()
}

fn give<T>(kept: &mut Vec<Vec<T>>, mut v: Vec<T>) {
    if v.capacity() == 0 || kept.len() >= KEPT || v.capacity() * size_of::<T>() > LARGEST {
        return;
    }
    v.clear();
    kept.push(v);
}

impl Reuse {
    pub(super) fn stack(&mut self) -> Vec<Frame> {
        take(&mut self.stacks)
    }

    pub(super) fn give_stack(&mut self, v: Vec<Frame>) {
        give(&mut self.stacks, v);
    }

    pub(super) fn edits(&mut self) -> Vec<Edit> {
        take(&mut self.edits)
    }

    pub(super) fn give_edits(&mut self, v: Vec<Edit>) {
        give(&mut self.edits, v);
    }

    pub(super) fn bytes(&mut self) -> Vec<u8> {
        take(&mut self.bytes)
    }

    /// A buffer back (a copy's redacted text, once written).
    pub(crate) fn give_bytes(&mut self, v: Vec<u8>) {
        give(&mut self.bytes, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_empty_and_only_so_many_so_large_are_kept() {
        let mut r = Reuse::default();
        let mut b = r.bytes();
        assert_eq!(b.capacity(), 0);
        b.extend_from_slice(b"secret");
        let cap = b.capacity();
        r.give_bytes(b);
        let b = r.bytes();
        assert!(b.is_empty());
        assert_eq!(b.capacity(), cap);
        r.give_bytes(Vec::with_capacity(LARGEST + 1));
        assert_eq!(r.bytes().capacity(), 0);
        for _ in 0..KEPT + 2 {
            r.give_bytes(Vec::with_capacity(8));
        }
        assert_eq!(r.bytes.len(), KEPT);
    }
}
