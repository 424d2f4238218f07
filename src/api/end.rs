//! How one request to the apiserver ended, as the stream, the elector and
//! the reader's discovery all judge it: the vocabulary `answer` turns
//! statuses into and a stream's course decides on.

use std::time::Duration;

use crate::entry::ErrorInfo;

/// How one request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum End {
    /// Discovery found the resource's name.
    Discovered,
    /// A paged LIST delivered the full state.
    Listed,
    /// The server ended a watch normally.
    Ended,
    /// The connection broke, or stayed silent past the idle timeout.
    Broke(String),
    /// A watch-list's connection went quiet before its initial-events-end
    /// bookmark: a server that ignores `sendInitialEvents`.
    Quiet,
    /// An ERROR event during a watch-list's initial state (what an etcd too
    /// old for watch-list sends).
    InitialError(String),
    /// 410: the history asked for is gone.
    Expired,
    /// 410 on a LIST page after the first: its continue token expired (the
    /// pages were read over longer than etcd keeps history).
    TokenExpired,
    /// The resourceVersion asked for is ahead of the server; its hint.
    TooLarge(Option<Duration>),
    /// 400/422: the server refuses the request as asked.
    Rejected(ErrorInfo),
    /// 401: reloading the credentials may cure it when `reloadable`.
    Unauthorized { info: ErrorInfo, reloadable: bool },
    /// Worth retrying (a failed connect, an unreadable answer); the
    /// server's hint, if it gave one.
    Retry(String, Option<Duration>),
    /// The server answered with a status worth retrying (429, 5xx, 404
    /// while a resource is being added); its hint, if it gave one.
    Refused {
        code: u16,
        why: String,
        hint: Option<Duration>,
    },
    /// Nothing came for the idle timeout: the connection is taken as dead.
    Silent(String),
    /// The credentials could not be had for now (a failing exec plugin, a
    /// token file not there yet): retried.
    NoCredentials(String),
    /// A failure retrying cannot fix.
    Fatal(ErrorInfo),
    /// The reader is stopping.
    Stopped,
    /// The reader asked for a relist by a new full state (a resource whose
    /// resourceVersions are opaque): the stream ended its request for it.
    Relist,
}
