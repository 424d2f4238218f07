//! Whether the apiserver answers, as one reader's requests find it: a count
//! of the answers (any status) they got. A stream that backs off because
//! the server did not answer (a refused or failed connection) wakes as soon
//! as another stream of the reader is answered: the server is back, and an
//! agent's streams follow the first of them that gets through, instead of
//! each waiting out a backoff drawn while the server was down.

use std::sync::atomic::{AtomicU64, Ordering};

/// A reader's count of answers from the server.
#[derive(Debug, Default)]
pub(crate) struct Reach {
    answers: AtomicU64,
}

impl Reach {
    /// A request was answered (its status line came).
    pub(crate) fn answered(&self) {
        self.answers.fetch_add(1, Ordering::Relaxed);
    }

    /// The count now, to compare with later.
    pub(crate) fn mark(&self) -> u64 {
        self.answers.load(Ordering::Relaxed)
    }

    /// Whether a request was answered since `mark`.
    pub(crate) fn answered_since(&self, mark: u64) -> bool {
        self.answers.load(Ordering::Relaxed) != mark
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_after_the_mark_is_seen_and_none_before_it() {
        let r = Reach::default();
        r.answered();
        let mark = r.mark();
        assert!(!r.answered_since(mark));
        r.answered();
        assert!(r.answered_since(mark));
    }
}
