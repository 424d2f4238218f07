//! `tattler_status`: the fixed texts and numbers, and the version.

use std::ffi::c_int;

use tattler::tattler_status::{self, *};
use tattler::*;

use crate::support::*;

#[test]
fn status_texts_and_version() {
    let mut seen = std::collections::HashSet::new();
    for n in (0..3).chain(100..114) {
        let t = s(tattler_status_str(n));
        assert!(tattler_status::from_int(n).is_some(), "{n} is a status");
        assert!(
            !t.is_empty() && t != "unknown status" && seen.insert(t.clone()),
            "{n}: {t}"
        );
    }
    for n in [-1, 3, 99, 114, c_int::MAX] {
        assert_eq!(s(tattler_status_str(n)), "unknown status");
    }
    assert_eq!(TATTLER_ERR_NULL_ARG as c_int, 100);
    assert_eq!(TATTLER_ERR_OTHER as c_int, 110);
    assert_eq!(TATTLER_ERR_REENTRANT as c_int, 111);
    assert_eq!(TATTLER_ERR_INVALID_CHECKPOINT as c_int, 112);
    assert_eq!(s(tattler_version()), env!("CARGO_PKG_VERSION"));
}
