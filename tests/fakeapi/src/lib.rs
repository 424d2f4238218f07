//! A scripted, stateful fake kube-apiserver for tattler's integration tests and demo mode.
//!
//! [`FakeApi::start`] listens on `127.0.0.1:0` and speaks plain HTTP/1.1 with the wire format of
//! a real kube-apiserver (v1.36, recorded in `shared/wire/`): the same response headers, `Status`
//! bodies for errors, one watch event per HTTP chunk (`<hex len>\r\n{json}\n\r\n`), watch-list
//! streams (`sendInitialEvents=true`) that end their initial ADDED events with the
//! `k8s.io/initial-events-end` BOOKMARK, paged lists with `continue` tokens, and 410 Expired
//! after [`FakeApi::compact`]. It answers `Accept: application/json;as=PartialObjectMetadata;
//! g=meta.k8s.io;v=v1` (and the `PartialObjectMetadataList` form on lists) with metadata-only
//! objects, and `/api` and `/apis` with aggregated discovery when asked for it
//! (`as=APIGroupDiscoveryList`), as the real server does.
//!
//! Single objects can be created (POST to the collection: 201, or 409 AlreadyExists) and
//! replaced (PUT: 200, 404 when absent, 409 Conflict when the body's `metadata.resourceVersion`
//! is not the stored one), as Leases and ConfigMaps are by a leader-elected client.
//!
//! The test drives the cluster ([`FakeApi::apply`], [`FakeApi::delete`]), scripts failures
//! ([`FakeApi::push_fault`], [`FakeApi::require_token`], [`FakeApi::forbid`]...) and waits for
//! the client without sleeping ([`FakeApi::wait_requests`], [`FakeApi::wait_open_watches`]).
//!
//! ```no_run
//! use tattler_fakeapi::FakeApi;
//! let api = FakeApi::start();
//! api.apply("pods", FakeApi::pod("default", "web-1"));
//! println!("serving on {}", api.url());
//! ```

#![warn(missing_docs)]

mod builders;
mod http;
mod json;
mod media;
mod server;
mod store;
mod util;

#[cfg(test)]
mod tests;

use crossbeam_channel::Sender;
use parking_lot::{Condvar, Mutex};
use serde_json::Value;
use server::{Conns, Shared};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};
pub use store::{Backup, InitialEvents, RequestRecord};
use store::{ResourceDef, State};

/// A failure to inject into the next request (list or watch) for a resource; see
/// [`FakeApi::push_fault`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Answer with this HTTP status and a `Status` body (`details.retryAfterSeconds` and a
    /// `Retry-After` header when `retry_after` is set), e.g. 429 TooManyRequests or 500.
    Status {
        /// HTTP status code and `Status.code`.
        code: u16,
        /// `Status.reason`, e.g. `TooManyRequests` (omitted when empty).
        reason: String,
        /// `Status.message` (omitted when empty).
        message: String,
        /// Seconds for the `Retry-After` header and `details.retryAfterSeconds`.
        retry_after: Option<u32>,
    },
    /// A watch gets 200, then one ERROR event with a 410 Expired `Status`
    /// (`too old resource version: R (C)`), then the stream ends. A list gets HTTP 410 Gone.
    ExpiredInStream,
    /// A watch gets 200, then one ERROR event with a 504 Timeout `Status` whose
    /// `details.causes[0].reason` is `ResourceVersionTooLarge` and `retryAfterSeconds` 1, then
    /// the stream ends. A list gets HTTP 504 with that `Status`.
    TooLargeInStream,
    /// Serve normally, but after this many complete events (bookmarks included) write about
    /// half of the next event's chunk and close the socket; if no event is due yet, cut when
    /// the next one is. A list sends its headers and half of its body, then closes.
    CutAfter(usize),
    /// 200 and the headers of a chunked response, then nothing at all until the client goes
    /// away or the `FakeApi` is dropped.
    Stall,
    /// 200, then one chunk that is not JSON (`this is not json\n`), then the normal stream.
    /// A list gets 200 with that as its whole body.
    Garbage,
    /// As `Status`, but `Retry-After` is an HTTP date `after` from now (as a load balancer or
    /// proxy sends it), and the body has no `retryAfterSeconds`.
    StatusRetryDate {
        /// HTTP status code and `Status.code`.
        code: u16,
        /// `Status.reason` (omitted when empty).
        reason: String,
        /// `Status.message` (omitted when empty).
        message: String,
        /// How far ahead the date is (whole seconds count; the date has no fraction).
        after: Duration,
    },
    /// A watch gets 200, then one ERROR event with a `Status` of this code, reason and message
    /// (e.g. 500 InternalError, as the apiserver sends when etcd fails mid-stream), then the
    /// stream ends. A list gets HTTP `code` with that `Status`.
    ErrorInStream {
        /// `Status.code` (the HTTP status stays 200 on a watch).
        code: u16,
        /// `Status.reason` (omitted when empty).
        reason: String,
        /// `Status.message` (omitted when empty).
        message: String,
    },
    /// A watch gets 200, a BOOKMARK (no annotation) and the end of the stream at once, and
    /// nothing a real server would not say: a watch from resourceVersion R gets the events
    /// after R it is owed (usually none), then the BOOKMARK at the current resourceVersion; a
    /// watch-list (or a watch without resourceVersion) gets none of the state, only a BOOKMARK
    /// at the resourceVersion it asked for, or nothing when it asked for none. Lists and gets
    /// are served normally.
    BookmarkOnly,
}

/// A running fake kube-apiserver. Dropping it stops the listener, shuts down every open
/// connection and joins all its threads.
pub struct FakeApi {
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
    shutdown_tx: Option<Sender<()>>,
}

impl std::fmt::Debug for FakeApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeApi")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

/// Applies an object or panics with the reason (a mistake in the test, not client input).
fn apply_in(sh: &Shared, res: &str, obj: Value) -> u64 {
    let mut st = sh.state.lock();
    let idx = resolve_or_panic(&st, res);
    match st.apply(idx, obj) {
        Ok(rv) => rv,
        Err(e) => panic!("tattler-fakeapi: cannot apply to {res:?}: {e}"),
    }
}

fn delete_in(sh: &Shared, res: &str, namespace: Option<&str>, name: &str) -> Option<u64> {
    let mut st = sh.state.lock();
    let idx = st.resolve(res)?;
    st.delete(idx, namespace, name)
}

fn resolve_or_panic(st: &State, res: &str) -> usize {
    match st.resolve(res) {
        Some(i) => i,
        None => panic!(
            "tattler-fakeapi: unknown resource {res:?} (use \"pods\" or \"group/version/resource\", \
             or add_resource first)"
        ),
    }
}

impl FakeApi {
    /// Binds `127.0.0.1:0` and starts serving, with the built-in resources and no objects.
    ///
    /// # Panics
    /// If the socket cannot be bound or a thread cannot be spawned.
    pub fn start() -> FakeApi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("tattler-fakeapi: bind 127.0.0.1:0");
        let addr = listener
            .local_addr()
            .expect("tattler-fakeapi: local address");
        let (shutdown_tx, shutdown_rx) = crossbeam_channel::bounded(0);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new()),
            cond: Condvar::new(),
            conns: Mutex::new(Conns::default()),
            shutdown: shutdown_rx,
            addr,
        });
        let sh = shared.clone();
        let accept = thread::Builder::new()
            .name("fakeapi-accept".into())
            .spawn(move || server::accept_loop(sh, listener))
            .expect("tattler-fakeapi: spawn the accept thread");
        FakeApi {
            shared,
            accept: Some(accept),
            shutdown_tx: Some(shutdown_tx),
        }
    }

    /// The base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    /// Serves another resource (e.g. a CRD's), or redefines one with the same
    /// group/version/resource. An empty `group` is the core group.
    pub fn add_resource(
        &self,
        group: &str,
        version: &str,
        resource: &str,
        kind: &str,
        namespaced: bool,
    ) {
        self.shared
            .state
            .lock()
            .add_resource(ResourceDef::new(group, version, resource, kind, namespaced));
    }

    /// Stops serving a resource, as the apiserver does when a CRD is deleted: its objects are
    /// deleted (watchers get DELETED for each), its watches end, it leaves discovery and its
    /// URLs answer 404. False if `res` was not served. [`FakeApi::add_resource`] serves it
    /// again, empty.
    pub fn remove_resource(&self, res: &str) -> bool {
        let mut st = self.shared.state.lock();
        let Some(idx) = st.resolve(res) else {
            return false;
        };
        st.remove_resource(idx);
        drop(st);
        self.shared.cond.notify_all();
        true
    }

    /// The short names discovery lists for `res` (kubectl's `po`, `deploy`; the built-in
    /// resources have the real server's).
    ///
    /// # Panics
    /// If `res` is unknown.
    pub fn set_short_names(&self, res: &str, names: &[&str]) {
        let mut st = self.shared.state.lock();
        let idx = resolve_or_panic(&st, res);
        st.resources[idx].def.short_names = names.iter().map(|s| s.to_string()).collect();
    }

    /// The verbs discovery lists for `res` (all eight by default). A list, watch or get that
    /// the verbs lack gets 405 MethodNotAllowed, as from a resource that does not serve it.
    ///
    /// # Panics
    /// If `res` is unknown.
    pub fn set_verbs(&self, res: &str, verbs: &[&str]) {
        let mut st = self.shared.state.lock();
        let idx = resolve_or_panic(&st, res);
        st.resources[idx].def.verbs = verbs.iter().map(|s| s.to_string()).collect();
    }

    /// `false`: behave like a server older than Kubernetes 1.27, which answers `/api` and
    /// `/apis` with the legacy documents whatever the `Accept` header asks for. `true` (the
    /// default): `Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`
    /// (or `v=v2beta1`) gets aggregated discovery, every resource of every group in one answer.
    pub fn set_aggregated_discovery(&self, on: bool) {
        self.shared.state.lock().aggregated = on;
    }

    /// Creates or updates (by namespace and name) an object of `res` (`"pods"` for core,
    /// `"group/version/resource"` otherwise). Sets `kind`, `apiVersion`, `metadata.uid` (new on
    /// create, kept on update), `metadata.resourceVersion` (one counter for all resources, as
    /// etcd), `creationTimestamp` and `generation`; a namespaced object without a namespace goes
    /// to `default`. Sends ADDED or MODIFIED to the watchers and returns the new resourceVersion.
    ///
    /// # Panics
    /// If `res` is unknown, or `obj` is not an object with `metadata.name`.
    pub fn apply(&self, res: &str, obj: Value) -> u64 {
        apply_in(&self.shared, res, obj)
    }

    /// Deletes an object; watchers get DELETED with its last state and a new resourceVersion,
    /// which is returned. `None` if there was no such object.
    pub fn delete(&self, res: &str, namespace: Option<&str>, name: &str) -> Option<u64> {
        delete_in(&self.shared, res, namespace, name)
    }

    /// The current state of one object.
    pub fn get(&self, res: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let st = self.shared.state.lock();
        let r = &st.resources[st.resolve(res)?];
        let key = match (r.def.namespaced, namespace) {
            (true, Some(ns)) => format!("{ns}/{name}"),
            (true, None) => format!("default/{name}"),
            (false, _) => name.to_string(),
        };
        r.objects.get(&key).map(|o| (**o).clone())
    }

    /// All current objects of a resource (in namespace/name order).
    pub fn objects(&self, res: &str) -> Vec<Value> {
        let st = self.shared.state.lock();
        match st.resolve(res) {
            Some(i) => st.resources[i]
                .objects
                .values()
                .map(|o| (**o).clone())
                .collect(),
            None => Vec::new(),
        }
    }

    /// The latest resourceVersion handed out.
    pub fn current_rv(&self) -> u64 {
        self.shared.state.lock().rv
    }

    /// Compacts everything before the current resourceVersion: watches from an older one get
    /// an in-stream 410 Expired, Exact lists at an older one and older continue tokens get
    /// HTTP 410 Gone. Watch-lists (NotOlderThan) still work.
    pub fn compact(&self) {
        self.shared.state.lock().compact();
    }

    /// A realistic Pod like the captured ones (labels, annotations, managedFields, a container
    /// with a plain env var and one from a `secretKeyRef`, status Pending), ready for
    /// [`FakeApi::apply`].
    pub fn pod(namespace: &str, name: &str) -> Value {
        builders::pod(namespace, name)
    }

    /// A minimal object of any kind: `{"metadata":{"name":..,"namespace":..}}`.
    pub fn object(namespace: Option<&str>, name: &str) -> Value {
        builders::object(namespace, name)
    }

    /// `Some(t)`: every request without `Authorization: Bearer t` gets 401 Unauthorized.
    /// `None` (the default): no authentication.
    pub fn require_token(&self, token: Option<&str>) {
        self.shared.state.lock().token = token.map(str::to_string);
    }

    /// While `forbidden`, requests for `res` get 403 Forbidden naming the verb and resource.
    ///
    /// # Panics
    /// If `res` is unknown.
    pub fn forbid(&self, res: &str, forbidden: bool) {
        let mut st = self.shared.state.lock();
        let idx = resolve_or_panic(&st, res);
        if forbidden {
            st.forbidden.insert(idx);
        } else {
            st.forbidden.remove(&idx);
        }
    }

    /// `false`: behave like a server without the WatchList feature: `sendInitialEvents` gets
    /// 422 Invalid and a watch without resourceVersion starts from now. `true` by default.
    pub fn set_watchlist(&self, supported: bool) {
        self.shared.state.lock().watchlist = supported;
    }

    /// `true`: behave like a server with the `ShardedListAndWatch` feature gate (KEP-5866):
    /// lists and watches with `shardSelector=shardRange(object.metadata.uid, '0x…', '0x…')`
    /// get only the objects whose uid's FNV-1a 64 hash is in range, and a JSON list of full
    /// objects says so in `metadata.shardInfo.selector` (a metadata-only list and watch events
    /// do not, as on kube-apiserver v1.36.3). Off by default, as in Kubernetes 1.36: the
    /// parameter is ignored.
    pub fn set_sharding(&self, on: bool) {
        self.shared.state.lock().sharding = on;
    }

    /// `true`: requests with `Accept-Encoding: gzip` get gzip bodies (`Content-Encoding: gzip`);
    /// watch streams are flushed after each event. Off by default.
    pub fn set_gzip(&self, on: bool) {
        self.shared.state.lock().gzip = on;
    }

    /// `true`: every resourceVersion the server hands out (objects, list metadata, bookmarks,
    /// 410 and 504 messages) is an opaque string, `o` and the number in hex (`o1f`: not an
    /// integer, and not ordered as a string), as from an aggregated or non-etcd server; the
    /// `resourceVersion=` of requests is read in that form (and `0`). Switching rewrites the
    /// stored objects and drops the history (a compaction): switch before clients connect.
    /// Off by default.
    pub fn set_opaque_rvs(&self, on: bool) {
        self.shared.state.lock().set_opaque(on);
    }

    /// A resourceVersion number as this server serves it now (see [`FakeApi::set_opaque_rvs`]).
    pub fn format_rv(&self, rv: u64) -> String {
        self.shared.state.lock().rv_str(rv)
    }

    /// How watch-lists are answered (see [`InitialEvents`]): as the real server, as one that
    /// ignores `sendInitialEvents`, or without the initial-events-end bookmark.
    pub fn set_initial_events(&self, mode: InitialEvents) {
        self.shared.state.lock().initial_events = mode;
    }

    /// `true`: requests with `Accept-Encoding: gzip` get gzip, and each watch event (each
    /// chunk) is a complete gzip member of its own, as Kubernetes 1.37's WatchListCompression
    /// sends them; lists are one member. Implies gzip; off by default.
    pub fn set_gzip_members(&self, on: bool) {
        self.shared.state.lock().gzip_members = on;
    }

    /// The store now (objects and revision), as an etcd snapshot holds it, for
    /// [`FakeApi::restore`].
    pub fn backup(&self) -> Backup {
        self.shared.state.lock().backup()
    }

    /// An etcd restore from `backup` without `--bump-revision`: every resource's objects are
    /// as they were at the backup (later creates gone, later deletes back, with their old
    /// uids), the resourceVersion counter goes back to the backup's and later writes reuse
    /// the revisions handed out since; the history is gone (watches from an older
    /// resourceVersion get 410, from a newer one 504 ResourceVersionTooLarge) and every open
    /// watch ends. Resources added after the backup come back empty.
    pub fn restore(&self, backup: &Backup) {
        self.shared.state.lock().restore(backup);
        self.shared.cond.notify_all();
    }

    /// `Some(text)`: every PUT and POST to `res` whose body contains `text` (`""` for all)
    /// gets 503 ServiceUnavailable and changes nothing, as from a server that a replica can no
    /// longer reach; `None`: writes are served again. Reads are not affected.
    ///
    /// # Panics
    /// If `res` is unknown.
    pub fn refuse_writes(&self, res: &str, containing: Option<&str>) {
        let mut st = self.shared.state.lock();
        let idx = resolve_or_panic(&st, res);
        match containing {
            Some(t) => st.refused_writes.insert(idx, t.to_string()),
            None => st.refused_writes.remove(&idx),
        };
    }

    /// Queues a fault for `res`; each request (list, watch or get) for it takes the oldest.
    ///
    /// # Panics
    /// If `res` is unknown.
    pub fn push_fault(&self, res: &str, fault: Fault) {
        let mut st = self.shared.state.lock();
        let idx = resolve_or_panic(&st, res);
        st.faults.entry(idx).or_default().push_back(fault);
    }

    /// How many faults queued for `res` no request has taken yet: a request
    /// is logged when it arrives and takes its fault a moment later.
    pub fn pending_faults(&self, res: &str) -> usize {
        let st = self.shared.state.lock();
        let idx = resolve_or_panic(&st, res);
        st.faults
            .get(&idx)
            .map_or(0, std::collections::VecDeque::len)
    }

    /// Drops every queued fault of every resource (those already being served go on).
    pub fn clear_faults(&self) {
        self.shared.state.lock().faults.clear();
    }

    /// How many TCP connections it has accepted so far.
    pub fn connections_accepted(&self) -> u64 {
        self.shared.conns.lock().next_id
    }

    /// Every request's `Accept` header so far (empty when absent), in arrival order.
    pub fn accepts(&self) -> Vec<String> {
        self.shared.state.lock().accepts.clone()
    }

    /// Every request so far, as `METHOD target` (e.g. `GET /api/v1/pods?watch=true&...`,
    /// the target exactly as received), in arrival order.
    pub fn requests(&self) -> Vec<String> {
        self.shared.state.lock().requests.clone()
    }

    /// Every request so far with its arrival time, in arrival order; see
    /// [`RequestRecord::is_full_sync`] to count full syncs.
    pub fn request_log(&self) -> Vec<RequestRecord> {
        self.shared.state.lock().log.clone()
    }

    /// Waits until at least `n` requests have arrived; false on timeout.
    pub fn wait_requests(&self, n: usize, timeout: Duration) -> bool {
        self.wait_for(timeout, |st| st.requests.len() >= n)
    }

    /// The number of watch streams open now.
    pub fn open_watches(&self) -> usize {
        self.shared.state.lock().watchers.len()
    }

    /// Waits until exactly `n` watch streams are open; false on timeout.
    pub fn wait_open_watches(&self, n: usize, timeout: Duration) -> bool {
        self.wait_for(timeout, |st| st.watchers.len() == n)
    }

    fn wait_for(&self, timeout: Duration, done: impl Fn(&State) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.state.lock();
        while !done(&st) {
            if self.shared.cond.wait_until(&mut st, deadline).timed_out() {
                return done(&st);
            }
        }
        true
    }

    /// Sends every open watch that asked for `allowWatchBookmarks=true` a BOOKMARK at the
    /// current resourceVersion (without annotation), like the apiserver's periodic ones.
    pub fn send_bookmarks(&self) {
        self.shared.state.lock().send_bookmarks();
    }

    /// Ends every open watch stream normally (terminating chunk), as a timeout does.
    pub fn end_watches(&self) {
        self.shared.state.lock().end_watches();
    }

    /// Starts a thread (`fakeapi-bookmarks`) that sends every open watch a
    /// bookmark every `interval`, as the apiserver does about once a minute:
    /// a healthy server is never silent for long. Stops with the server.
    pub fn start_bookmarks(&self, interval: Duration) {
        let sh = self.shared.clone();
        let stop = self.shared.shutdown.clone();
        let handle = thread::Builder::new()
            .name("fakeapi-bookmarks".into())
            .spawn(move || {
                while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
                    stop.recv_timeout(interval)
                {
                    sh.state.lock().send_bookmarks();
                }
            })
            .expect("tattler-fakeapi: spawn the bookmark thread");
        let mut conns = self.shared.conns.lock();
        conns.threads.retain(|h| !h.is_finished());
        conns.threads.push(handle);
    }

    /// Starts a thread (`fakeapi-churn`) that creates a few nodes, `namespaces` namespaces
    /// with configmaps and about `pods` pods, then every `interval` creates, relabels,
    /// re-annotates or deletes a pod. It stops when the `FakeApi` is dropped.
    pub fn start_churn(&self, namespaces: usize, pods: usize, interval: Duration) {
        let sh = self.shared.clone();
        let stop = self.shared.shutdown.clone();
        let handle = thread::Builder::new()
            .name("fakeapi-churn".into())
            .spawn(move || builders::churn(&sh, &stop, namespaces, pods, interval))
            .expect("tattler-fakeapi: spawn the churn thread");
        let mut conns = self.shared.conns.lock();
        conns.threads.retain(|h| !h.is_finished());
        conns.threads.push(handle);
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        // Wakes every connection, watch, stall and churn thread.
        drop(self.shutdown_tx.take());
        let threads = {
            let mut conns = self.shared.conns.lock();
            conns.closed = true;
            for s in conns.streams.values() {
                let _ = s.shutdown(Shutdown::Both);
            }
            std::mem::take(&mut conns.threads)
        };
        // Unblocks accept().
        let _ = TcpStream::connect_timeout(&self.shared.addr, Duration::from_millis(500));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        // Belt and braces: the accept thread checks `closed` under the lock before adding one.
        let late = std::mem::take(&mut self.shared.conns.lock().threads);
        for h in threads.into_iter().chain(late) {
            let _ = h.join();
        }
    }
}
