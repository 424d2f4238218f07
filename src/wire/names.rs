//! Kubernetes names as the apiserver checks them (RFC 1123 labels and
//! subdomains), for the names tattler puts in a request path. Pure.

/// Whether `s` may be a group, version or resource in a request path.
/// RFC 1123: lowercase letters, digits and `-` (and `.` between labels when
/// `dots`), starting and ending with a letter or digit, at most `max` bytes.
pub(crate) fn dns_name(s: &str, max: usize, dots: bool) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= max
        && b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && b.iter()
            .all(|c| alnum(c) || *c == b'-' || (dots && *c == b'.'))
        && !s.contains("..")
}
