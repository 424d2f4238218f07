//! Every thread tattler starts, started one way: named, on a known stack,
//! marked as tattler's own (a call from the log callback that would wait for
//! its own thread is refused), and a panic in it turned into an Error entry
//! (reason `InternalError`) rather than a thread that silently ends.

use std::cell::Cell;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::delivery::channel::{Out, Stop};
use crate::{Entry, ErrorInfo, Reason, Resource};

/// A thread's stack. tattler's own use of it is small and bounded (decoding
/// is iterative: no input can make it recurse); most of it is for the
/// caller's code that runs there, the log callback and the transform.
/// (Rust's default for a spawned thread is the same 2 MiB.)
pub(crate) const STACK: usize = 2 << 20;

thread_local! {
    /// Set on every thread tattler starts: the log callback runs there, and
    /// a call that waits for tattler's threads would wait for itself.
    static TATTLER_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is one of tattler's own (the log callback runs there).
pub(crate) fn on_tattler_thread() -> bool {
    TATTLER_THREAD.with(Cell::get)
}

/// Where a thread's panic is reported: the resource it served (an empty one
/// for the reader's own threads), on the way out, honouring stop.
pub(crate) struct Report {
    pub resource: Arc<Resource>,
    pub out: Out,
    pub stop: Stop,
}

/// Starts `body` on a thread named `name`.
pub(crate) fn spawn(
    name: String,
    report: Report,
    body: impl FnOnce() + Send + 'static,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.clone())
        .stack_size(STACK)
        .spawn(move || {
            TATTLER_THREAD.with(|t| t.set(true));
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
            if let Err(panic) = result {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                log::error!("{name}: the thread panicked: {what}");
                let info = ErrorInfo::ours(
                    Reason::InternalError,
                    0,
                    format!("{name} panicked: {what}"),
                    true,
                );
                report
                    .out
                    .send(Entry::failure(report.resource, info), &report.stop);
            }
        })
}

/// The resource of an entry about the reader itself, not one resource.
pub(crate) fn reader_resource() -> Arc<Resource> {
    Arc::new(Resource {
        group: String::new(),
        version: String::new(),
        resource: String::new(),
        kind: String::new(),
    })
}
