//! The one error type of the library.

use std::fmt;

/// What went wrong, named after the phase that failed.
///
/// Failures of one resource stream while the reader runs are not errors of this
/// type: they arrive as [`Change::Error`](crate::Change::Error) entries, so the
/// other streams keep going.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is unusable; the message names the field and why.
    Config(String),
    /// A file named in the configuration could not be read.
    ReadFile {
        /// The file's path as given.
        path: String,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A resource name could not be understood; the message names it.
    Resource(String),
    /// The TLS setup (CA bundle, client certificate) failed.
    Tls(String),
    /// A thread could not be started.
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
            Error::ReadFile { path, source } => write!(f, "cannot read {path}: {source}"),
            Error::Resource(m) => write!(f, "invalid resource: {m}"),
            Error::Tls(m) => write!(f, "TLS setup failed: {m}"),
            Error::Spawn(e) => write!(f, "cannot start a thread: {e}"),
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
