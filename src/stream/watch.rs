//! Reading one watch (or watch-list) response: frames decoded as they
//! arrive, object events batched in the sink, bookmarks and error events
//! turned into progress or into how the request ended. A frame that cannot be
//! decoded is reported and skipped; the stream reads on.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::api::answer;
use crate::api::client::is_timeout;
use crate::api::end::End;
use crate::entry::Reason;
use crate::objects::reuse::Reuse;
use crate::resource_version::Rv;
use crate::stream::course::vocabulary::{CatchUp, Phase, Silence};
use crate::stream::decoded::Decoded;
use crate::stream::sink::ignored_initial_events;
use crate::stream::Parts;
use crate::wire::decode::{self, DecodeError, Event};
use crate::wire::envelope::Walked;
use crate::wire::frames::{FrameError, ListError};
use crate::wire::request::{self, Asking};

/// How long a resumed watch must be silent to have replayed its history.
const CATCH_UP_QUIET: Duration = Duration::from_secs(1);
/// How long a catch-up's replay may go on without going quiet (a busy
/// resource) before the stream asks the server how far it must go.
const CATCH_UP_PATIENCE: Duration = Duration::from_secs(5);
/// A watch-list's initial events end within this many initial_events_timeouts.
const INITIAL_EVENTS_TOTAL: u32 = 10;

/// How long each read after the server's ERROR event may wait for the end
/// of the watch's body (`Frames::finish`).
const FINISH_WAIT: Duration = Duration::from_millis(200);

/// The full state by watch-list; the same connection goes on with live
/// events. Its reads wait at most `initial_events_timeout`: a server that
/// ignores `sendInitialEvents` never sends the bookmark that ends them.
pub(crate) fn watch_list(p: &mut Parts) -> End {
    if !p.claim_sync() {
        return End::Stopped;
    }
    let timeout = p.pacing.timeout_secs();
    let path = request::watch_list(&p.target.collection(), p.course().cache_read(), timeout);
    let settings = p.client.settings();
    let quiet = settings.initial_events_timeout.min(settings.idle_timeout);
    read_watch(p, &path, Some(quiet))
}

/// Live changes from the resume point. Resumed from a checkpoint (or after
/// a Stale), the watch first replays what changed meanwhile: the
/// resource's Synced waits until the replay is over (the connection silent
/// for `CATCH_UP_QUIET`, the server sending its history at once, or a
/// bookmark). Nothing is asked first: after an apiserver restart the
/// watch's 410 is the first answer, and one full state follows. A replay
/// that goes on past `CATCH_UP_PATIENCE` ends its watch to ask the
/// server's resourceVersion, and the next watch goes on to reach it.
pub(crate) fn watch_live(p: &mut Parts) -> End {
    let mut short_reads = None;
    if let Some(catch_up) = p.course().catch_up() {
        if *catch_up == CatchUp::Probe {
            let target = match probe_version(p) {
                Ok(target) => target,
                Err(End::Stopped) => return End::Stopped,
                // Best effort: without it, the replay's end is the second of
                // silence (an empty target is never reached).
                Err(end) => {
                    log::debug!(
                        "{}: the server's resourceVersion is unknown ({end:?}); catching up by silence",
                        p.name
                    );
                    Rv::empty()
                }
            };
            p.catch_up_target(target);
        }
        if !p.check_caught_up() {
            return End::Stopped;
        }
        if p.course().catch_up().is_some() {
            // Shorter than the idle timeout, or quiet would read as a dead
            // connection and the replay never end.
            let idle = p.client.settings().idle_timeout;
            short_reads = Some(CATCH_UP_QUIET.min(idle / 2));
        }
    }
    let timeout = p.pacing.timeout_secs();
    let path = request::watch_from(
        &p.target.collection(),
        p.course().cursor().as_str(),
        timeout,
    );
    read_watch(p, &path, short_reads)
}

/// The server's resourceVersion now: a LIST of at most one object (no
/// selectors, so the server stops at the first), its metadata's.
fn probe_version(p: &mut Parts) -> Result<Rv, End> {
    let path = format!(
        "{}?limit=1",
        request::collection_path(&p.target.collection())
    );
    let resp = p.get(&path, Asking::List, None)?;
    let mut items = p.client.items(resp)?;
    loop {
        match items.next_item() {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(_) if p.client.stop().is_set() => return Err(End::Stopped),
            Err(ListError::Io(e)) => {
                return Err(End::Broke(format!("reading a list page failed: {e}")))
            }
            Err(ListError::Invalid(m) | ListError::Unknown(m)) => {
                return Err(End::Retry(format!("bad list page: {m}"), None))
            }
        }
    }
    let rv = items
        .meta()
        .map(|m| m.resource_version.clone())
        .unwrap_or_default();
    decode::checked_rv(rv.as_str()).map_err(|m| End::Retry(format!("bad list page: {m}"), None))
}

fn read_watch(p: &mut Parts, path: &str, short_reads: Option<Duration>) -> End {
    // `short_reads`: a shorter wait for each read than the idle timeout
    // (the initial-events timeout, a resume's catch-up quiet), for as long
    // as it means something: once the stream is synced and caught up, its
    // reads wait the idle timeout (a quiet, healthy watch is not ended).
    // A watch-list's initial events have a total limit too: a server that
    // ignores sendInitialEvents but keeps sending never goes quiet.
    let settings = p.client.settings().clone();
    // The object walks' memory, from frame to frame.
    let mut reuse = Reuse::default();
    let deadline = (!p.course().synced() && p.course().phase() == Phase::WatchList)
        .then(|| Instant::now() + settings.initial_events_timeout * INITIAL_EVENTS_TOTAL);
    let resp = match p.get(path, Asking::Objects, short_reads) {
        Ok(r) => r,
        Err(end) => return end,
    };
    let (mut frames, read_timeout) = match p.client.frames(resp) {
        Ok(f) => f,
        Err(end) => return end,
    };
    let mut short_reads = short_reads;
    // A catch-up by quiet, for so long.
    let patience = (p.course().catch_up() == Some(&CatchUp::Quiet))
        .then(|| Instant::now() + CATCH_UP_PATIENCE);
    let mut counted = 0;
    let mut objects = 0u64;
    let end = loop {
        p.received(frames.bytes() - counted);
        counted = frames.bytes();
        if p.due(frames.buffered()) {
            if let Some(end) = p.flush() {
                break end;
            }
            if !p.check_caught_up() {
                break End::Stopped;
            }
        }
        if deadline.is_some_and(|d| !p.course().synced() && Instant::now() >= d) {
            break ignored_initial_events(p.name, "no initial-events-end bookmark in time");
        }
        if patience
            .is_some_and(|t| Instant::now() >= t && p.course().catch_up() == Some(&CatchUp::Quiet))
        {
            // Busy: ask how far the replay must go, and watch on from here.
            p.catch_up_slow();
            break End::Ended;
        }
        if short_reads.is_some() && p.course().synced() && p.course().catch_up().is_none() {
            short_reads = None;
            read_timeout.set(settings.idle_timeout);
        }
        let piece = match frames.next_walked(p.edits()) {
            Ok(Some((f, walked))) => Piece::Frame(f, walked),
            Ok(None) => break End::Ended,
            Err(_) if p.client.stop().is_set() => break End::Stopped,
            Err(FrameError::Io(e)) if is_timeout(&e) => {
                match p.course().silence(
                    short_reads,
                    settings.idle_timeout,
                    frames.partial(),
                    objects,
                ) {
                    // The replay after a resume is over.
                    Silence::CaughtUp => {
                        break if p.caught_up() {
                            End::Ended
                        } else {
                            End::Stopped
                        }
                    }
                    Silence::Ends(End::Quiet) => {
                        log::info!(
                            "{}: {objects} initial objects, then nothing for {:?} and no initial-events-end bookmark",
                            p.name,
                            short_reads.unwrap_or_default()
                        );
                        break End::Quiet;
                    }
                    Silence::Ends(end) => break end,
                }
            }
            Err(FrameError::Io(e)) => break End::Broke(format!("stream broke: {e}")),
            Err(FrameError::Truncated(n)) => {
                break End::Broke(format!("stream ended in the middle of a frame ({n} bytes)"))
            }
            Err(FrameError::Unknown(message)) => match p.schema_miss(&message) {
                Some(end) => break end,
                None => invalid_protobuf(message),
            },
            Err(FrameError::Invalid(message)) => invalid_protobuf(message),
            Err(FrameError::TooLarge(n)) => {
                let limit = settings.max_frame_bytes;
                Piece::Skip(DecodeError {
                    reason: Reason::FrameTooLarge,
                    message: format!(
                        "a watch frame of {n} bytes exceeds max_frame_bytes ({limit}); skipped"
                    ),
                    namespace: None,
                    name: None,
                    meta: None,
                })
            }
        };
        let (frame, walked) = match piece {
            Piece::Frame(f, walked) => (f, walked),
            Piece::Skip(e) => {
                if let Err(end) = p.skip(e, &[]) {
                    break end;
                }
                continue;
            }
        };
        p.counters().events.fetch_add(1, Ordering::Relaxed);
        match on_frame(p, frame, walked, &mut reuse) {
            Ok(Handled::Object) => objects += 1,
            Ok(Handled::Other) => {}
            Ok(Handled::ServerError(end)) => {
                // The server ends the watch right after its ERROR event:
                // read to the end, so that the connection carries the next
                // request (a 410's full state) without a new handshake.
                if !frames.finish(&read_timeout, FINISH_WAIT) {
                    log::debug!("{}: the watch did not end after its ERROR event", p.name);
                }
                break end;
            }
            Err(end) => break end,
        }
    };
    p.received(frames.bytes() - counted);
    // What came before the end is delivered first.
    p.end(end)
}

/// A frame to decode (with what the protobuf writer found of an object it
/// wrote in one pass), or a piece to report and skip.
enum Piece<'a> {
    Frame(&'a [u8], Option<Walked>),
    Skip(DecodeError),
}

fn invalid_protobuf<'a>(message: String) -> Piece<'a> {
    Piece::Skip(DecodeError {
        reason: Reason::InvalidProtobuf,
        message,
        namespace: None,
        name: None,
        meta: None,
    })
}

/// What one frame was.
enum Handled {
    /// An object event: it joined the sink's batch.
    Object,
    /// A bookmark, or a piece skipped.
    Other,
    /// The server's ERROR event: the watch ends, as this says.
    ServerError(End),
}

/// Handles one frame. `Err` ends the connection.
fn on_frame(
    p: &mut Parts,
    frame: &[u8],
    walked: Option<Walked>,
    reuse: &mut Reuse,
) -> Result<Handled, End> {
    let decoded = match walked {
        Some(w) => decode::walked_event(frame, w),
        None => decode::event(frame, p.edits(), reuse),
    };
    let event = match decoded {
        Ok(e) => e,
        Err(e) => {
            p.skip(e, frame)?;
            return Ok(Handled::Other);
        }
    };
    match event {
        Event::Object {
            kind,
            meta,
            object,
            edited,
        } => {
            if !p
                .course()
                .initial_event_ok(kind == decode::EventType::Added)
            {
                // A watch-list's initial events are all ADDED: this is a
                // plain watch. What was batched before it goes first.
                let end = ignored_initial_events(
                    p.name,
                    "a change before the initial-events-end bookmark",
                );
                return Err(p.end(end));
            }
            let source = &frame[object.0..object.1];
            let bytes = edited.unwrap_or_else(|| source.to_vec());
            let object = p.shaped(bytes, &meta)?;
            // The kind is only read to learn the resource's.
            let with_kind = p.resource().kind.is_empty();
            p.push(Decoded::new(kind, meta, source, object, with_kind));
            Ok(Handled::Object)
        }
        Event::Bookmark {
            resource_version,
            initial_events_end,
        } => {
            p.bookmark(resource_version, initial_events_end)?;
            Ok(Handled::Other)
        }
        Event::Error(s) => Ok(Handled::ServerError(answer::error_event(
            &s,
            !p.course().synced(),
        ))),
    }
}
