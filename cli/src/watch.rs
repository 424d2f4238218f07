//! A run: open the reader, print entries until a signal, `--until-synced`'s
//! end or a failure; then stop, print what was queued, write the checkpoint.
//! Between entries, four times a second, it looks at the streams' stats: a
//! resource overdue for its first full state ends the run (`deadline`), a
//! retry is a warning, and a long sync shows its progress on a terminal.

use std::collections::{HashMap, HashSet};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use kube_tattler::{Change, Entry, NextTimeoutError, Reader, Reason, StreamStats, TryNextError};

use crate::args::{Args, Output};
use crate::cluster;
use crate::deadline::{self, Stream};
use crate::files;
use crate::output::{Layout, Printer, View};
use crate::progress::Progress;

/// How often the stats are looked at.
const TICK: Duration = Duration::from_millis(250);

/// How long a table holds the rows of the initial state back when a person
/// is watching (stdout a terminal); elsewhere until every resource has its
/// full state, or `HOLD_ROWS` of them.
const HOLD_ON_TERMINAL: Duration = Duration::from_secs(1);

/// Why the streaming ended.
enum End {
    /// A signal stopped the reader, or `--until-synced` is done.
    Done,
    /// The run failed: the line to print.
    Failed(String),
    /// stdout went away or failed.
    Output(io::Error),
}

/// Runs the command; `Err` is the one line to print before exiting 1.
pub fn run(a: &Args) -> Result<(), String> {
    let cluster::Cluster { config, demo } = cluster::build(a).map_err(|e| error(&e))?;
    let specs = &config.resources;
    let wildcard = specs.iter().any(|s| s.is_wildcard());
    let named = specs.iter().filter(|s| !s.is_wildcard()).count();
    let mut namespaces: Vec<Option<&str>> = specs
        .iter()
        .filter(|s| s.namespaced)
        .map(|s| s.namespace.as_deref())
        .collect();
    namespaces.dedup();
    let layout = Layout {
        namespace: namespaces.contains(&None) || namespaces.len() > 1,
        kinds: specs.len() > 1 || wildcard,
    };
    let flush_each = config.checkpoint_in_cluster.is_some();
    let reader = Arc::new(Reader::open(config).map_err(|e| error(&cluster::one_line(&e)))?);
    // Weak: the run's reference stays the last, so the reader is closed
    // (dropped) when the run ends; under leader election that writes the
    // last checkpoint to the cluster and releases the Lease, so a standby
    // leads at its next look instead of after the lease duration.
    let on_signal = Arc::downgrade(&reader);
    ctrlc::set_handler(move || {
        if let Some(reader) = on_signal.upgrade() {
            reader.stop();
        }
    })
    .map_err(|e| error(&e.to_string()))?;

    let stdout_terminal = io::stdout().is_terminal();
    let mut run = Watch {
        printer: Printer::new(a.output, a.objects, !a.no_headers, layout),
        json_like: matches!(a.output, Output::Json | Output::Yaml),
        out: BufWriter::with_capacity(64 << 10, io::stdout().lock()),
        started: Instant::now(),
        deadline: a.sync_deadline(),
        until_synced: a.until_synced,
        wildcard,
        named,
        synced_all: false,
        objects: 0,
        progress: io::stderr()
            .is_terminal()
            .then(|| (Progress::new(Instant::now()), stdout_terminal)),
        synced: HashSet::new(),
        skipped: HashSet::new(),
        retries: HashMap::new(),
        warn_retries: a.verbosity == 0,
        stdout_terminal,
        flush_each,
    };
    let end = run.stream(&reader);

    // Stop the streams (before the demo cluster, if any, goes away) and take
    // what they had queued: once drained, the checkpoint matches what was
    // printed.
    reader.stop();
    let mut end = end;
    if !matches!(end, End::Output(_)) {
        for entry in reader.iter() {
            if let Err(e) = run.print(&entry) {
                end = End::Output(e);
                break;
            }
        }
        if let Err(e) = run
            .printer
            .release(&mut run.out)
            .and_then(|_| run.out.flush())
        {
            end = End::Output(e);
        }
    }
    run.end_progress();
    drop(demo);
    if let Some(path) = &a.checkpoint {
        match &end {
            // Entries the reader of our output never got must come again.
            End::Output(_) => {
                log::warn!("the output went away: {} is left as it was", path.display())
            }
            _ => files::save_checkpoint(path, &reader.checkpoint()).map_err(|e| error(&e))?,
        }
    }
    match end {
        End::Done => Ok(()),
        End::Failed(line) => Err(line),
        // `kubectl-tattler … | head`: the reader of our output had enough.
        End::Output(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        End::Output(e) => Err(error(&format!("writing the output: {e}"))),
    }
}

/// `error: …`, as kubectl words its failures.
fn error(msg: &str) -> String {
    format!("error: {msg}")
}

/// What a run keeps between entries.
struct Watch<W: Write> {
    printer: Printer,
    /// Error entries are in the output itself.
    json_like: bool,
    out: W,
    started: Instant,
    deadline: Option<Duration>,
    until_synced: bool,
    wildcard: bool,
    /// Streams of the named (not wildcard) resources.
    named: usize,
    /// Every resource has had its full state.
    synced_all: bool,
    /// Objects received until then.
    objects: u64,
    /// With stderr a terminal: the progress, and whether stdout is one too
    /// (then lines, not a line rewritten in place under the rows).
    progress: Option<(Progress, bool)>,
    /// The resources whose Synced entry came (as the stats name them).
    synced: HashSet<String>,
    /// Under a wildcard, the resources whose ended Error entry came: left
    /// out. (Their stats say failed before the entry is taken; judging by
    /// the stats would end the run before its warning.)
    skipped: HashSet<String>,
    /// Per stream, the retries already warned about.
    retries: HashMap<String, u64>,
    /// Warn of retries (without `-v`, which logs them itself).
    warn_retries: bool,
    stdout_terminal: bool,
    /// Under leader election with a checkpoint kept in the cluster: each
    /// entry written out before the next is asked for.
    flush_each: bool,
}

impl<W: Write> Watch<W> {
    /// Prints entries until the run ends.
    fn stream(&mut self, reader: &Reader) -> End {
        let mut next_tick = Instant::now();
        loop {
            let now = Instant::now();
            if now >= next_tick {
                if let Some(why) = self.tick(reader, now) {
                    return End::Failed(error(&why));
                }
                // A person watching gets the rows held for alignment within a second.
                if self.stdout_terminal && now.duration_since(self.started) >= HOLD_ON_TERMINAL {
                    if let Err(e) = self.printer.release(&mut self.out) {
                        return End::Output(e);
                    }
                }
                next_tick = now + TICK;
            }
            let entry = match reader.try_next() {
                Ok(e) => e,
                Err(TryNextError::Closed) => return End::Done,
                Err(TryNextError::Empty) => {
                    // Nothing queued: what was printed goes out now; a burst
                    // is written in large pieces.
                    if let Err(e) = self.out.flush() {
                        return End::Output(e);
                    }
                    match reader.next_timeout(next_tick.saturating_duration_since(Instant::now())) {
                        Ok(e) => e,
                        Err(NextTimeoutError::Timeout) => continue,
                        Err(NextTimeoutError::Closed) => return End::Done,
                    }
                }
            };
            if let Err(e) = self.print(&entry) {
                return End::Output(e);
            }
            let end = self.judge(reader, &entry);
            if self.synced_all {
                if let Err(e) = self.printer.release(&mut self.out) {
                    return End::Output(e);
                }
            }
            if let Some(end) = end {
                return end;
            }
        }
    }

    /// Prints one entry, and on stderr what the format leaves out.
    fn print(&mut self, entry: &Entry) -> io::Result<()> {
        let view = View::of(entry);
        self.printer
            .print(&mut self.out, &view, SystemTime::now())?;
        match (entry.change(), entry.error()) {
            (Change::Synced, _) => {}
            // A name not served ends the run: judge says why.
            (Change::Error, Some(err))
                if !err.ended && err.kind != Reason::NotFound && !self.json_like =>
            {
                let what = match (entry.namespace(), entry.name()) {
                    (_, "") => String::new(),
                    (Some(ns), name) => format!(" {ns}/{name}"),
                    (None, name) => format!(" {name}"),
                };
                self.note(&format!(
                    "warning: {}{what} skipped: {}: {}",
                    entry.resource().resource,
                    err.reason,
                    err.message
                ));
            }
            (Change::Error, _) => {}
            // The view is not current: said on stderr for people, once it
            // had synced (before that, a failure to sync says why); JSON and
            // YAML carry it as a line of their own.
            (Change::Stale, Some(err)) if !self.json_like && self.synced.contains(&gvr(entry)) => {
                let ns = entry
                    .namespace()
                    .map(|n| format!(" in {n}"))
                    .unwrap_or_default();
                self.note(&format!(
                    "warning: {}{ns} not current ({}): {}",
                    entry.resource().resource,
                    err.reason,
                    err.message
                ));
            }
            (Change::Stale, _) => {}
            // Leader election: whether this replica streams, on stderr for
            // people; JSON and YAML carry it as a line of their own.
            (Change::Leading | Change::Following, err) if !self.json_like => {
                let lease = format!("{}/{}", entry.namespace().unwrap_or_default(), entry.name());
                let me = entry.identity().unwrap_or_default();
                match err {
                    None => self.note(&format!(
                        "leading: {me} holds the Lease {lease} (term {})",
                        entry.term().unwrap_or_default()
                    )),
                    Some(err) => self.note(&format!(
                        "following: {me} does not hold the Lease {lease} ({}): {}",
                        err.reason, err.message
                    )),
                }
            }
            (Change::Leading | Change::Following, _) => {}
            _ if !self.synced_all => self.objects += 1,
            _ => {}
        }
        // Asking for the next entry tells the reader this one is done: a
        // checkpoint kept in the cluster may hold it from then on, so it
        // must be out of our buffer before, or a replica killed then loses it.
        if self.flush_each {
            self.printer.release(&mut self.out)?;
            self.out.flush()?;
        }
        Ok(())
    }

    /// What an entry means for the run: its end, or nothing.
    fn judge(&mut self, reader: &Reader, entry: &Entry) -> Option<End> {
        let resource = &entry.resource().resource;
        if let Some(err) = entry.error() {
            if err.kind == Reason::NotFound {
                // A name the server does not serve (yet): kubectl's words.
                return Some(End::Failed(error(&format!(
                    "the server doesn't have a resource type {resource:?}"
                ))));
            }
            if !err.ended || entry.change() == Change::Stale {
                return None;
            }
            let why = if err.kind == Reason::Server {
                format!("Error from server ({}): {}", err.reason, err.message)
            } else {
                format!("{resource}: {}: {}", err.reason, err.message)
            };
            if !self.wildcard {
                return Some(End::Failed(why));
            }
            // Under --all a resource the identity may not read is left out.
            self.note(&format!("warning: skipping {resource}: {why}"));
            self.skipped.insert(gvr(entry));
        }
        if entry.change() == Change::Synced {
            self.synced.insert(gvr(entry));
        }
        if matches!(entry.change(), Change::Synced | Change::Error) && !self.synced_all {
            // Done when every stream's Synced entry came (the stats say a
            // stream is synced before its entries are taken). With a
            // wildcard, the found streams join once discovery has answered:
            // more streams than the named ones.
            let stats = reader.stats();
            let found = !self.wildcard || stats.len() > self.named;
            let done = |s: &StreamStats| {
                self.synced.contains(&s.resource) || self.skipped.contains(&s.resource)
            };
            if found && stats.iter().all(done) {
                self.synced_all = true;
                self.end_progress();
                if self.until_synced {
                    return Some(End::Done);
                }
            }
        }
        None
    }

    /// Looks at the stats: a failure when a resource is overdue, warnings
    /// for retries, the progress line.
    fn tick(&mut self, reader: &Reader, now: Instant) -> Option<String> {
        let stats = reader.stats();
        let waited = now.saturating_duration_since(self.started);
        if let (Some(limit), false) = (self.deadline, self.synced_all) {
            let streams: Vec<Stream> = stats
                .iter()
                .map(|s| Stream {
                    resource: &s.resource,
                    synced_once: s.synced || self.synced.contains(&s.resource),
                    failed: s.failed,
                    bytes: s.bytes,
                    last_error: s.last_error.as_deref(),
                })
                .collect();
            let discovered = !self.wildcard || stats.len() > self.named;
            if let Some(why) = deadline::overdue(&streams, discovered, waited, limit) {
                return Some(why);
            }
        }
        if self.warn_retries {
            let mut warnings = Vec::new();
            for (i, s) in stats.iter().enumerate() {
                // One the deadline will judge is not a warning.
                let judged = self.deadline.is_some()
                    && !self.synced_all
                    && !self.synced.contains(&s.resource);
                let seen = self.retries.entry(stream_id(&stats, i)).or_insert(0);
                let fresh = s.reconnects > *seen;
                *seen = s.reconnects;
                if let (true, false, false, Some(why)) = (fresh, s.failed, judged, &s.last_error) {
                    warnings.push(format!("warning: {}: {why}; retrying", s.resource));
                }
            }
            for w in warnings {
                self.note(&w);
            }
        }
        if !self.synced_all {
            if let Some((p, lines)) = &mut self.progress {
                if let Some(line) = p.tick(now, self.objects) {
                    let _ = if *lines {
                        writeln!(io::stderr(), "{line}")
                    } else {
                        write!(io::stderr(), "\r{line}\x1b[K")
                    };
                }
            }
        }
        None
    }

    /// Ends the progress line, if one was shown: with the count and time
    /// once every resource has its full state, else by clearing it.
    fn end_progress(&mut self) {
        let Some((p, lines)) = self.progress.take() else {
            return;
        };
        let _ = match (p.shown(), self.synced_all, lines) {
            (false, ..) | (true, false, true) => Ok(()),
            (true, false, false) => write!(io::stderr(), "\r\x1b[K"),
            (true, true, true) => {
                writeln!(io::stderr(), "{}", p.done(Instant::now(), self.objects))
            }
            (true, true, false) => {
                let done = p.done(Instant::now(), self.objects);
                writeln!(io::stderr(), "\r{done}\x1b[K")
            }
        };
    }

    /// A line on stderr, after clearing a progress line being rewritten.
    fn note(&mut self, line: &str) {
        if let Some((p, false)) = &self.progress {
            if p.shown() {
                let _ = write!(io::stderr(), "\r\x1b[K");
            }
        }
        crate::stderr_line(line);
    }
}

/// An entry's resource as the stats name it: `v1/pods`, `apps/v1/deployments`.
fn gvr(e: &Entry) -> String {
    let r = e.resource();
    if r.version.is_empty() {
        r.resource.clone()
    } else if r.group.is_empty() {
        format!("{}/{}", r.version, r.resource)
    } else {
        format!("{}/{}/{}", r.group, r.version, r.resource)
    }
}

/// A stream's name among the stats: its resource, numbered when several
/// streams (namespaces) share it.
fn stream_id(stats: &[StreamStats], i: usize) -> String {
    let n = stats[..i]
        .iter()
        .filter(|s| s.resource == stats[i].resource)
        .count();
    format!("{}#{n}", stats[i].resource)
}
