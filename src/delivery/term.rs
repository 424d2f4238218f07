//! A leader's term as its entries carry it (issue 37, fencing): the
//! number, the Lease's `leaseTransitions` when this replica took it, and
//! whether the term has ended. The elector makes one per acquisition and
//! ends it before it says `Following`; the reader drops an entry of an
//! ended term that is still in the channel (`Reader::next`), so that a
//! replica's consumer gets nothing more of a term once it stepped down:
//! no checkpoint covers those entries, and the next leader delivers them
//! again.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One term of one Lease; clones share whether it ended.
#[derive(Clone, Debug)]
pub(crate) struct Term {
    number: u64,
    ended: Arc<AtomicBool>,
}

impl Term {
    pub(crate) fn new(number: u64) -> Term {
        Term {
            number,
            ended: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The Lease's `leaseTransitions` at acquisition.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// From now on, entries of this term still queued are dropped.
    pub(crate) fn end(&self) {
        self.ended.store(true, Ordering::SeqCst);
    }

    pub(crate) fn is_ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_end() {
        let t = Term::new(4);
        let stamped = t.clone();
        assert!(!stamped.is_ended());
        t.end();
        assert!(stamped.is_ended());
        assert_eq!(stamped.number(), 4);
    }
}
