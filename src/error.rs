//! The one error type of the library.

use std::fmt;
use std::path::PathBuf;

/// What went wrong, named after the phase that failed.
///
/// Failures of one resource stream while the reader runs are not errors of this
/// type: they arrive as [`Change::Error`](crate::Change::Error) entries, so the
/// other streams keep going.
///
/// The message says what failed; where an underlying error says why (an I/O
/// error), it is the [`source`](std::error::Error::source), not repeated in
/// the message: print the chain to show both.
///
/// ```
/// use std::error::Error as _;
/// let e = kube_tattler::Access::new("https://h").ca_file("/nonexistent/ca.crt").unwrap_err();
/// assert_eq!(e.to_string(), "cannot read /nonexistent/ca.crt");
/// let why = e.source().map(|s| s.to_string()).unwrap_or_default(); // "No such file or directory (os error 2)"
/// assert!(matches!(e, kube_tattler::Error::ReadFile { .. }));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is unusable; the message names the field and why.
    Config(String),
    /// A file named in the configuration could not be read.
    ReadFile {
        /// The file's path as given.
        path: PathBuf,
        /// Why it could not be read (also [`source`](std::error::Error::source)).
        source: std::io::Error,
    },
    /// A resource name could not be understood; the message names it.
    Resource(String),
    /// The TLS setup (CA bundle, client certificate) failed.
    Tls(String),
    /// A thread could not be started; the I/O error (also
    /// [`source`](std::error::Error::source)) says why.
    Spawn(std::io::Error),
    /// A checkpoint's bytes could not be read; the message says where.
    Checkpoint(String),
    /// This call waits for tattler's threads, and was made on one of them
    /// (from a log callback): it would wait for itself. Names the call.
    Reentrant(&'static str),
    /// The reader was stopped or closed: it starts no stream any more.
    Stopped,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(m) => write!(f, "invalid configuration: {m}"),
            // The why is the source's to say (C-GOOD-ERR): a caller printing
            // the chain would see it twice.
            Error::ReadFile { path, .. } => write!(f, "cannot read {}", path.display()),
            Error::Resource(m) => write!(f, "invalid resource: {m}"),
            Error::Tls(m) => write!(f, "TLS setup failed: {m}"),
            Error::Spawn(_) => f.write_str("cannot start a thread"),
            Error::Checkpoint(m) => write!(f, "invalid checkpoint: {m}"),
            Error::Reentrant(call) => write!(
                f,
                "{call} cannot be called on a tattler thread (from a log callback): it waits for those threads"
            ),
            Error::Stopped => f.write_str("the reader is stopped"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::ReadFile { source, .. } => Some(source),
            Error::Spawn(e) => Some(e),
            _ => None,
        }
    }
}

/// Why [`Reader::next`](crate::Reader::next) returned no entry: the reader was
/// stopped or closed, and every entry it had buffered has been handed out.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let reader: kube_tattler::Reader = unimplemented!();
/// let first = reader.next()?; // Closed converts, as every error here does
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

impl fmt::Display for Closed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("reader closed")
    }
}

impl std::error::Error for Closed {}

/// Why [`Reader::next_timeout`](crate::Reader::next_timeout) returned no entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextTimeoutError {
    /// The deadline passed with no entry; the reader is still running.
    Timeout,
    /// The reader was stopped or closed and has no more entries.
    Closed,
}

impl fmt::Display for NextTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NextTimeoutError::Timeout => f.write_str("timed out waiting for an entry"),
            NextTimeoutError::Closed => f.write_str("reader closed"),
        }
    }
}

impl std::error::Error for NextTimeoutError {}

/// Why [`Reader::try_next`](crate::Reader::try_next) returned no entry.
///
/// ```no_run
/// # let reader: kube_tattler::Reader = unimplemented!();
/// use kube_tattler::TryNextError;
/// match reader.try_next() {
///     Ok(entry) => println!("{entry}"),
///     Err(TryNextError::Empty) => { /* poll again later */ }
///     Err(TryNextError::Closed) => return,
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryNextError {
    /// No entry is ready right now; the reader is still running.
    Empty,
    /// The reader was stopped or closed and has no more entries.
    Closed,
}

impl fmt::Display for TryNextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryNextError::Empty => f.write_str("no entry ready"),
            TryNextError::Closed => f.write_str("reader closed"),
        }
    }
}

impl std::error::Error for TryNextError {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn messages_name_what_failed_and_sources_say_why() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "gone-7f3a");
        for (e, message) in [
            (
                Error::ReadFile {
                    path: "/x/ca.crt".into(),
                    source: io(),
                },
                "cannot read /x/ca.crt",
            ),
            (Error::Spawn(io()), "cannot start a thread"),
        ] {
            assert_eq!(e.to_string(), message);
            assert_eq!(
                e.source().map(|s| s.to_string()).as_deref(),
                Some("gone-7f3a")
            );
        }
        // The others have no source: their message is the whole story.
        for e in [
            Error::Config("x".into()),
            Error::Resource("x".into()),
            Error::Tls("x".into()),
            Error::Checkpoint("x".into()),
            Error::Reentrant("relist"),
            Error::Stopped,
        ] {
            assert!(e.source().is_none(), "{e}");
        }
    }
}
