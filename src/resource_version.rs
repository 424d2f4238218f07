//! resourceVersions: the server's text, compared only where the text allows.
//!
//! The API calls a resourceVersion opaque. etcd-backed resources (everything
//! a kube-apiserver stores itself) send decimal integers that grow with every
//! write, which tattler compares; aggregated and non-etcd servers may send any
//! string, of which tattler only knows whether two are equal.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// A resourceVersion exactly as the server sent it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Rv(Repr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    /// A decimal integer below 2^63 in canonical form (no sign, no leading
    /// zero): etcd's revisions. The text is kept so that it borrows as a `&str`.
    Num { value: u64, text: [u8; 19], len: u8 },
    /// Anything else (the empty string included).
    Opaque(Arc<str>),
}

/// The longest resourceVersion accepted: etcd's are at most 19 digits; an
/// opaque one is an identifier, not a document.
pub(crate) const MAX_LEN: usize = 1024;

impl Rv {
    /// The resourceVersion of this text.
    pub(crate) fn new(text: &str) -> Rv {
        match parse(text) {
            Some(value) => Rv::num_with_text(value, text.as_bytes()),
            None => Rv(Repr::Opaque(Arc::from(text))),
        }
    }

    /// An integer resourceVersion (below 2^63).
    pub(crate) fn from_u64(value: u64) -> Rv {
        let text = value.to_string();
        Rv::new(&text)
    }

    fn num_with_text(value: u64, digits: &[u8]) -> Rv {
        let mut text = [0u8; 19];
        text[..digits.len()].copy_from_slice(digits);
        Rv(Repr::Num {
            value,
            text,
            len: digits.len() as u8,
        })
    }

    /// No resourceVersion yet.
    pub(crate) fn empty() -> Rv {
        Rv::new("")
    }

    pub(crate) fn as_str(&self) -> &str {
        match &self.0 {
            // Only ASCII digits are ever stored.
            Repr::Num { text, len, .. } => {
                std::str::from_utf8(&text[..*len as usize]).unwrap_or_default()
            }
            Repr::Opaque(s) => s,
        }
    }

    /// The integer, when the text is one.
    pub(crate) fn number(&self) -> Option<u64> {
        match self.0 {
            Repr::Num { value, .. } => Some(value),
            Repr::Opaque(_) => None,
        }
    }

    /// Eight bytes that stand for this resourceVersion in the per-object
    /// state: the integer itself, or (top bit set) a hash of the opaque text.
    pub(crate) fn key(&self) -> RvKey {
        match &self.0 {
            Repr::Num { value, .. } => RvKey(*value),
            Repr::Opaque(s) => {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                s.hash(&mut h);
                RvKey(h.finish() | OPAQUE)
            }
        }
    }
}

impl Default for Rv {
    fn default() -> Rv {
        Rv::empty()
    }
}

const OPAQUE: u64 = 1 << 63;

/// What the per-object state keeps of a resourceVersion (see [`Rv::key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct RvKey(pub u64);

impl RvKey {
    /// The integer, when it was one.
    pub(crate) fn number(self) -> Option<u64> {
        (self.0 & OPAQUE == 0).then_some(self.0)
    }

    /// The order of two resourceVersions: known for two integers, or for equal keys.
    pub(crate) fn order(self, other: RvKey) -> Option<Ordering> {
        match (self.number(), other.number()) {
            (Some(a), Some(b)) => Some(a.cmp(&b)),
            _ if self == other => Some(Ordering::Equal),
            _ => None,
        }
    }
}

/// `text` as an integer if it is etcd's kind of resourceVersion.
fn parse(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    if b.is_empty() || b.len() > 19 || (b[0] == b'0' && b.len() > 1) {
        return None;
    }
    if !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    text.parse::<u64>().ok().filter(|v| v & OPAQUE == 0)
}

impl fmt::Debug for Rv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl fmt::Display for Rv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_compare_and_opaque_texts_only_match() {
        let (a, b) = (Rv::new("41"), Rv::new("100"));
        assert_eq!((a.number(), a.as_str()), (Some(41), "41"));
        assert_eq!(Rv::from_u64(7).as_str(), "7");
        for opaque in ["", "007", "-1", "1.5", "abc", "9223372036854775808", "１２"] {
            let o = Rv::new(opaque);
            assert_eq!((o.number(), o.as_str()), (None, opaque), "{opaque}");
            assert_eq!(o.key().number(), None);
            assert_eq!(o.key().order(Rv::new(opaque).key()), Some(Ordering::Equal));
            assert_eq!(o.key().order(a.key()), None);
        }
        assert_eq!(
            Rv::new("9223372036854775807").number(),
            Some(i64::MAX as u64)
        );
        assert_eq!(a.key().order(b.key()), Some(Ordering::Less));
        assert_eq!(Rv::empty().as_str(), "");
    }
}
