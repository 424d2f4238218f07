//! The fake cluster's state: resource table, objects, per-resource event history, watchers,
//! and the knobs set by the test (token, forbidden resources, faults...).

use crate::util;
use crate::Fault;
use crossbeam_channel::Sender;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

/// Events kept per resource before the oldest tenth is dropped (an automatic compaction, so a
/// long demo does not grow without bound; etcd compacts every 5 minutes too).
const HISTORY_CAP: usize = 20_000;

/// One served resource.
#[derive(Clone, Debug)]
pub(crate) struct ResourceDef {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) resource: String,
    pub(crate) kind: String,
    pub(crate) namespaced: bool,
    /// kubectl's short names, as discovery lists them (`po`, `deploy`).
    pub(crate) short_names: Vec<String>,
    /// The verbs discovery lists; a list, watch or get the resource lacks gets 405.
    pub(crate) verbs: Vec<String>,
}

/// The verbs of a built-in resource, as discovery lists them.
pub(crate) const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

impl ResourceDef {
    /// A resource with the short names and verbs the real apiserver gives it (every verb but
    /// `deletecollection` on namespaces; short names for the built-in ones).
    pub(crate) fn new(
        group: &str,
        version: &str,
        resource: &str,
        kind: &str,
        namespaced: bool,
    ) -> ResourceDef {
        let verbs = VERBS
            .iter()
            .filter(|v| {
                !(group.is_empty() && resource == "namespaces" && **v == "deletecollection")
            })
            .map(|v| v.to_string())
            .collect();
        ResourceDef {
            group: group.to_string(),
            version: version.to_string(),
            resource: resource.to_string(),
            kind: kind.to_string(),
            namespaced,
            short_names: default_short_names(group, resource)
                .iter()
                .map(|s| s.to_string())
                .collect(),
            verbs,
        }
    }

    /// Whether discovery lists this verb for the resource.
    pub(crate) fn allows(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// `Namespaced` or `Cluster`, as aggregated discovery says it.
    pub(crate) fn scope(&self) -> &'static str {
        if self.namespaced {
            "Namespaced"
        } else {
            "Cluster"
        }
    }

    /// `v1` or `group/version`.
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// What the Go type's zero value adds to a BOOKMARK object after `metadata`
    /// (copied from the captures for Pod and Deployment; derived from the Go types for the rest).
    pub(crate) fn bookmark_extra(&self) -> &'static str {
        match (self.group.as_str(), self.kind.as_str()) {
            ("", "Pod") => r#","spec":{"containers":null},"status":{}"#,
            ("apps", "Deployment") => {
                r#","spec":{"replicas":0,"selector":null,"template":{"metadata":{},"spec":{"containers":null}},"strategy":{}},"status":{}"#
            }
            ("", "Node") => {
                r#","spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"","operatingSystem":"","architecture":""}}"#
            }
            ("", "Namespace") | ("", "PersistentVolume") => r#","spec":{},"status":{}"#,
            ("", "Service") | ("networking.k8s.io", "Ingress") => {
                r#","spec":{},"status":{"loadBalancer":{}}"#
            }
            ("rbac.authorization.k8s.io", "Role")
            | ("rbac.authorization.k8s.io", "ClusterRole") => r#","rules":null"#,
            ("rbac.authorization.k8s.io", "RoleBinding")
            | ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
                r#","roleRef":{"apiGroup":"","kind":"","name":""}"#
            }
            _ => "",
        }
    }
}

/// kubectl short names of the built-in resources, for discovery.
fn default_short_names(group: &str, resource: &str) -> &'static [&'static str] {
    match (group, resource) {
        ("", "pods") => &["po"],
        ("", "nodes") => &["no"],
        ("", "namespaces") => &["ns"],
        ("", "configmaps") => &["cm"],
        ("", "services") => &["svc"],
        ("", "endpoints") => &["ep"],
        ("", "persistentvolumes") => &["pv"],
        ("", "serviceaccounts") => &["sa"],
        ("", "events") => &["ev"],
        ("", "persistentvolumeclaims") => &["pvc"],
        ("apps", "deployments") => &["deploy"],
        ("apps", "replicasets") => &["rs"],
        ("apps", "statefulsets") => &["sts"],
        ("apps", "daemonsets") => &["ds"],
        ("batch", "cronjobs") => &["cj"],
        ("networking.k8s.io", "ingresses") => &["ing"],
        ("apiextensions.k8s.io", "customresourcedefinitions") => &["crd", "crds"],
        _ => &[],
    }
}

/// One change, as kept in the history and sent to watchers.
#[derive(Debug)]
pub(crate) struct Event {
    /// ADDED, MODIFIED or DELETED.
    pub(crate) typ: &'static str,
    pub(crate) rv: u64,
    /// The object at this rv (for DELETED: the last state with the deletion's rv).
    pub(crate) obj: Arc<Value>,
    /// The state before (None for ADDED), for selector transitions and Exact lists.
    pub(crate) prev: Option<Arc<Value>>,
}

/// What a watch stream's thread is told.
pub(crate) enum WatchMsg {
    Event(Arc<Event>),
    /// A periodic bookmark at this rv.
    Bookmark(u64),
    /// End the stream normally.
    End,
}

/// An open watch stream.
pub(crate) struct Watcher {
    pub(crate) id: u64,
    pub(crate) res: usize,
    pub(crate) tx: Sender<WatchMsg>,
    pub(crate) bookmarks: bool,
}

/// A resource's objects and history.
pub(crate) struct Resource {
    pub(crate) def: ResourceDef,
    /// Keyed `namespace/name` (namespaced) or `name`: the etcd key order.
    pub(crate) objects: BTreeMap<String, Arc<Value>>,
    pub(crate) history: VecDeque<Arc<Event>>,
    /// Watches and Exact lists from a resourceVersion below this get 410.
    pub(crate) compacted: u64,
    /// No longer served (`FakeApi::remove_resource`, a deleted CRD): 404 and absent from
    /// discovery. The slot stays so that indices held elsewhere stay valid.
    pub(crate) removed: bool,
}

/// How a watch-list (`sendInitialEvents=true`) is answered; see `FakeApi::set_initial_events`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum InitialEvents {
    /// As the real server: the initial ADDED events, then the `k8s.io/initial-events-end`
    /// BOOKMARK (when bookmarks were asked for), then live events.
    #[default]
    Normal,
    /// As a server that does not know `sendInitialEvents` (and `resourceVersionMatch` on a
    /// watch): the request is a legacy watch. Without a resourceVersion (or `0`) every object
    /// comes as ADDED, then live events, and no initial-events-end bookmark ever; with one,
    /// the events after it.
    Ignored,
    /// The initial ADDED events and live events, but never the initial-events-end bookmark
    /// (as from a watch cache that cannot tell when its initial events are done).
    NoEndBookmark,
}

/// The store as it was: what `FakeApi::backup` returns and `FakeApi::restore` puts back.
#[derive(Clone, Debug)]
pub struct Backup {
    pub(crate) rv: u64,
    /// Per resource slot, its objects.
    pub(crate) objects: Vec<BTreeMap<String, Arc<Value>>>,
}

impl Backup {
    /// The revision the backup was taken at (the resourceVersion counter it restores).
    pub fn revision(&self) -> u64 {
        self.rv
    }
}

/// One request as it arrived; see `FakeApi::request_log`.
#[derive(Clone, Debug)]
pub struct RequestRecord {
    /// When it arrived.
    pub at: Instant,
    /// `METHOD target`, as `FakeApi::requests` has it.
    pub line: String,
}

impl RequestRecord {
    fn parsed(&self) -> Option<crate::http::Target> {
        let target = self.line.split_once(' ')?.1;
        crate::http::parse_target(target).ok()
    }

    fn query(&self, key: &str) -> Option<String> {
        let (_, q) = self.parsed()?;
        q.into_iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The collection asked for, named as the tests name it (`pods`,
    /// `apps/v1/deployments`) and its namespace; `None` for discovery, gets of one object and
    /// anything else.
    pub fn collection(&self) -> Option<(String, Option<String>)> {
        let (segs, _) = self.parsed()?;
        let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
        let (prefix, rest) = match segs.as_slice() {
            ["api", "v1", rest @ ..] => (String::new(), rest),
            ["apis", g, v, rest @ ..] => (format!("{g}/{v}/"), rest),
            _ => return None,
        };
        match rest {
            [r] => Some((format!("{prefix}{r}"), None)),
            ["namespaces", ns, r] => Some((format!("{prefix}{r}"), Some(ns.to_string()))),
            _ => None,
        }
    }

    /// A watch (`watch=true`).
    pub fn is_watch(&self) -> bool {
        self.query("watch")
            .is_some_and(|v| !(v == "0" || v.eq_ignore_ascii_case("false")))
    }

    /// A request for the whole state of a collection: a watch-list (`sendInitialEvents=true`)
    /// or a LIST without `continue` (a first page). Answered or not: it counts what the client
    /// asked for.
    pub fn is_full_sync(&self) -> bool {
        if self.collection().is_none() || !self.line.starts_with("GET ") {
            return false;
        }
        if self.is_watch() {
            self.query("sendInitialEvents")
                .is_some_and(|v| !(v == "0" || v.eq_ignore_ascii_case("false")))
        } else {
            self.query("continue").is_none_or(|c| c.is_empty())
        }
    }
}

/// Everything behind the one lock.
pub(crate) struct State {
    pub(crate) resources: Vec<Resource>,
    pub(crate) rv: u64,
    pub(crate) compacted: u64,
    pub(crate) watchers: Vec<Watcher>,
    next_watcher: u64,
    pub(crate) token: Option<String>,
    pub(crate) forbidden: HashSet<usize>,
    pub(crate) watchlist: bool,
    /// `shardSelector` is honoured (the `ShardedListAndWatch` feature gate).
    pub(crate) sharding: bool,
    pub(crate) gzip: bool,
    pub(crate) faults: HashMap<usize, VecDeque<Fault>>,
    pub(crate) requests: Vec<String>,
    /// Each request's `Accept` header (empty when absent), in arrival order.
    pub(crate) accepts: Vec<String>,
    /// The same requests with their arrival times.
    pub(crate) log: Vec<RequestRecord>,
    /// resourceVersions are served as opaque strings (`o` and the number in hex).
    pub(crate) opaque: bool,
    pub(crate) initial_events: InitialEvents,
    /// Watch events each as their own gzip member (WatchListCompression).
    pub(crate) gzip_members: bool,
    /// Whether `/api` and `/apis` answer the aggregated discovery media type (Kubernetes 1.27+).
    pub(crate) aggregated: bool,
    /// PUTs and POSTs to a resource whose body contains the text get 503 (see
    /// `FakeApi::refuse_writes`).
    pub(crate) refused_writes: HashMap<usize, String>,
}

const BUILTIN: &[(&str, &str, &str, &str, bool)] = &[
    ("", "v1", "pods", "Pod", true),
    ("", "v1", "nodes", "Node", false),
    ("", "v1", "namespaces", "Namespace", false),
    ("", "v1", "configmaps", "ConfigMap", true),
    ("", "v1", "secrets", "Secret", true),
    ("", "v1", "services", "Service", true),
    ("", "v1", "endpoints", "Endpoints", true),
    ("", "v1", "persistentvolumes", "PersistentVolume", false),
    ("apps", "v1", "deployments", "Deployment", true),
    ("networking.k8s.io", "v1", "ingresses", "Ingress", true),
    ("rbac.authorization.k8s.io", "v1", "roles", "Role", true),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        true,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
    ),
];

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// The store key of an object: `namespace/name` or `name`.
pub(crate) fn object_key(obj: &Value) -> String {
    let name = meta_str(obj, "name").unwrap_or("");
    match meta_str(obj, "namespace") {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

impl State {
    pub(crate) fn new() -> State {
        let mut st = State {
            resources: Vec::new(),
            rv: 1,
            compacted: 0,
            watchers: Vec::new(),
            next_watcher: 1,
            token: None,
            forbidden: HashSet::new(),
            watchlist: true,
            sharding: false,
            gzip: false,
            faults: HashMap::new(),
            requests: Vec::new(),
            accepts: Vec::new(),
            log: Vec::new(),
            opaque: false,
            initial_events: InitialEvents::Normal,
            gzip_members: false,
            aggregated: true,
            refused_writes: HashMap::new(),
        };
        for (g, v, r, k, n) in BUILTIN {
            st.add_resource(ResourceDef::new(g, v, r, k, *n));
        }
        st
    }

    /// Adds a resource, or redefines one with the same group/version/resource.
    pub(crate) fn add_resource(&mut self, def: ResourceDef) -> usize {
        if let Some(i) = self.find(&def.group, &def.version, &def.resource) {
            self.resources[i].def = def;
            return i;
        }
        self.resources.push(Resource {
            def,
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            compacted: self.compacted,
            removed: false,
        });
        self.resources.len() - 1
    }

    /// Stops serving a resource as the apiserver does when a CRD is deleted: every object is
    /// deleted (DELETED events to the watchers), then its watches end, then it is gone from
    /// discovery and its URLs answer 404.
    pub(crate) fn remove_resource(&mut self, idx: usize) {
        let keys: Vec<(Option<String>, String)> = self.resources[idx]
            .objects
            .values()
            .map(|o| {
                (
                    meta_str(o, "namespace").map(str::to_string),
                    meta_str(o, "name").unwrap_or("").to_string(),
                )
            })
            .collect();
        for (ns, name) in keys {
            self.delete(idx, ns.as_deref(), &name);
        }
        for w in self.watchers.iter().filter(|w| w.res == idx) {
            let _ = w.tx.send(WatchMsg::End);
        }
        self.resources[idx].removed = true;
    }

    /// The resources being served, in the order they were added.
    pub(crate) fn served(&self) -> impl Iterator<Item = &Resource> {
        self.resources.iter().filter(|r| !r.removed)
    }

    /// The resource served at `group`/`version`/`resource`.
    pub(crate) fn find(&self, group: &str, version: &str, resource: &str) -> Option<usize> {
        self.resources.iter().position(|r| {
            !r.removed
                && r.def.group == group
                && r.def.version == version
                && r.def.resource == resource
        })
    }

    /// A test's name for a resource: `pods`, `v1/pods`, `core/v1/pods` or `group/version/resource`.
    pub(crate) fn resolve(&self, res: &str) -> Option<usize> {
        let parts: Vec<&str> = res.trim_matches('/').split('/').collect();
        let (group, version, resource) = match parts.as_slice() {
            [r] => ("", None, *r),
            [v, r] => ("", Some(*v), *r),
            [g, v, r] => (if *g == "core" { "" } else { *g }, Some(*v), *r),
            _ => return None,
        };
        self.resources.iter().position(|r| {
            !r.removed
                && r.def.group == group
                && r.def.resource == resource
                && version.is_none_or(|v| r.def.version == v)
        })
    }

    /// Creates or updates an object; returns its new resourceVersion.
    pub(crate) fn apply(&mut self, idx: usize, obj: Value) -> Result<u64, String> {
        let Value::Object(mut obj) = obj else {
            return Err("the object must be a JSON object".into());
        };
        let def = self.resources[idx].def.clone();
        let meta = obj.entry("metadata").or_insert_with(|| json!({}));
        let Value::Object(meta) = meta else {
            return Err("metadata must be a JSON object".into());
        };
        let name = match meta.get("name").and_then(Value::as_str) {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => return Err("metadata.name is required".into()),
        };
        let key = if def.namespaced {
            let ns = match meta.get("namespace").and_then(Value::as_str) {
                Some(ns) if !ns.is_empty() => ns.to_string(),
                _ => "default".to_string(),
            };
            meta.insert("namespace".into(), Value::String(ns.clone()));
            format!("{ns}/{name}")
        } else {
            meta.remove("namespace");
            name
        };
        self.rv += 1;
        let rv = self.rv;
        let prev = self.resources[idx].objects.get(&key).cloned();
        match &prev {
            Some(p) => {
                for f in ["uid", "creationTimestamp"] {
                    match p.get("metadata").and_then(|m| m.get(f)) {
                        Some(v) => meta.insert(f.into(), v.clone()),
                        None => meta.remove(f),
                    };
                }
            }
            None => {
                meta.insert("uid".into(), Value::String(util::uuid()));
                meta.insert(
                    "creationTimestamp".into(),
                    Value::String(util::rfc3339_now()),
                );
            }
        }
        meta.insert("resourceVersion".into(), Value::String(self.rv_str(rv)));
        if obj.contains_key("spec") && def.kind != "Namespace" {
            let generation = match &prev {
                None => 1,
                Some(p) => {
                    let old = p
                        .get("metadata")
                        .and_then(|m| m.get("generation"))
                        .and_then(Value::as_u64)
                        .unwrap_or(1);
                    if p.get("spec") == obj.get("spec") {
                        old
                    } else {
                        old + 1
                    }
                }
            };
            if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
                meta.insert("generation".into(), json!(generation));
            }
        }
        let mut full = Map::new();
        full.insert("kind".into(), Value::String(def.kind.clone()));
        full.insert("apiVersion".into(), Value::String(def.api_version()));
        full.extend(obj);
        let obj = Arc::new(Value::Object(full));
        self.resources[idx].objects.insert(key, obj.clone());
        let typ = if prev.is_some() { "MODIFIED" } else { "ADDED" };
        self.record(idx, Event { typ, rv, obj, prev });
        Ok(rv)
    }

    /// Deletes an object; the DELETED event carries its last state with a new resourceVersion.
    pub(crate) fn delete(
        &mut self,
        idx: usize,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<u64> {
        let key = match (self.resources[idx].def.namespaced, namespace) {
            (true, Some(ns)) => format!("{ns}/{name}"),
            (true, None) => format!("default/{name}"),
            (false, _) => name.to_string(),
        };
        let prev = self.resources[idx].objects.remove(&key)?;
        self.rv += 1;
        let rv = self.rv;
        let mut obj = (*prev).clone();
        if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
            meta.insert("resourceVersion".into(), Value::String(self.rv_str(rv)));
        }
        self.record(
            idx,
            Event {
                typ: "DELETED",
                rv,
                obj: Arc::new(obj),
                prev: Some(prev),
            },
        );
        Some(rv)
    }

    fn record(&mut self, idx: usize, ev: Event) {
        let ev = Arc::new(ev);
        let res = &mut self.resources[idx];
        res.history.push_back(ev.clone());
        if res.history.len() > HISTORY_CAP {
            for _ in 0..HISTORY_CAP / 10 {
                if let Some(old) = res.history.pop_front() {
                    res.compacted = res.compacted.max(old.rv);
                }
            }
        }
        for w in self.watchers.iter().filter(|w| w.res == idx) {
            let _ = w.tx.send(WatchMsg::Event(ev.clone()));
        }
    }

    /// A resourceVersion as served: the number, or with opaque rvs `o` and the number in hex
    /// (never parseable as an integer, and not ordered as strings).
    pub(crate) fn rv_str(&self, rv: u64) -> String {
        format_rv(self.opaque, rv)
    }

    /// Switches the rv form. Every stored object is rewritten in the new form and the history
    /// dropped (a compaction): resourceVersions of the old form mean nothing any more.
    pub(crate) fn set_opaque(&mut self, on: bool) {
        if self.opaque == on {
            return;
        }
        self.opaque = on;
        for r in &mut self.resources {
            for obj in r.objects.values_mut() {
                let mut o = (**obj).clone();
                let old = o["metadata"]["resourceVersion"].as_str().unwrap_or("");
                if let Some(n) = parse_rv(!on, old) {
                    o["metadata"]["resourceVersion"] = Value::String(format_rv(on, n));
                }
                *obj = Arc::new(o);
            }
        }
        self.compact();
    }

    /// The objects of every resource and the revision, as an etcd snapshot holds them.
    pub(crate) fn backup(&self) -> Backup {
        Backup {
            rv: self.rv,
            objects: self.resources.iter().map(|r| r.objects.clone()).collect(),
        }
    }

    /// An etcd restore without `--bump-revision`: the objects as they were at the backup, the
    /// revision counter back to the backup's (later writes reuse revisions handed out
    /// since), the watch cache's history gone, every open watch ended.
    pub(crate) fn restore(&mut self, b: &Backup) {
        for (i, r) in self.resources.iter_mut().enumerate() {
            r.objects = b.objects.get(i).cloned().unwrap_or_default();
            r.history.clear();
            r.compacted = b.rv;
        }
        self.rv = b.rv;
        self.compacted = b.rv;
        self.end_watches();
    }

    /// Drops all history: resourceVersions below the current one are gone.
    pub(crate) fn compact(&mut self) {
        self.compacted = self.rv;
        for r in &mut self.resources {
            r.history.clear();
            r.compacted = self.rv;
        }
    }

    /// The objects of a resource as they were at `rv` (which must not be below its compaction).
    pub(crate) fn snapshot_at(&self, idx: usize, rv: u64) -> BTreeMap<String, Arc<Value>> {
        let res = &self.resources[idx];
        let mut snap = res.objects.clone();
        for ev in res.history.iter().rev() {
            if ev.rv <= rv {
                break;
            }
            let key = object_key(&ev.obj);
            match (&ev.prev, ev.typ) {
                (_, "ADDED") | (None, _) => {
                    snap.remove(&key);
                }
                (Some(p), _) => {
                    snap.insert(key, p.clone());
                }
            }
        }
        snap
    }

    pub(crate) fn register(&mut self, res: usize, tx: Sender<WatchMsg>, bookmarks: bool) -> u64 {
        let id = self.next_watcher;
        self.next_watcher += 1;
        self.watchers.push(Watcher {
            id,
            res,
            tx,
            bookmarks,
        });
        id
    }

    pub(crate) fn unregister(&mut self, id: u64) {
        self.watchers.retain(|w| w.id != id);
    }

    pub(crate) fn send_bookmarks(&self) {
        for w in self.watchers.iter().filter(|w| w.bookmarks) {
            let _ = w.tx.send(WatchMsg::Bookmark(self.rv));
        }
    }

    pub(crate) fn end_watches(&self) {
        for w in &self.watchers {
            let _ = w.tx.send(WatchMsg::End);
        }
    }
}

/// See `State::rv_str`.
pub(crate) fn format_rv(opaque: bool, rv: u64) -> String {
    if opaque {
        format!("o{rv:x}")
    } else {
        rv.to_string()
    }
}

/// A resourceVersion a client sent back, in the form `format_rv` gives; `0` is the API's
/// "any" in either form.
pub(crate) fn parse_rv(opaque: bool, s: &str) -> Option<u64> {
    if s == "0" {
        return Some(0);
    }
    if opaque {
        let hex = s.strip_prefix('o')?;
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u64::from_str_radix(hex, 16).ok()
    } else if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

/// One label selector requirement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LabelReq {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// One field selector requirement (`path=value` or `path!=value`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldReq {
    pub(crate) path: Vec<String>,
    pub(crate) value: String,
    pub(crate) negate: bool,
}

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 316
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Splits on commas outside parentheses.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Parses a label selector: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`.
pub(crate) fn parse_label_selector(s: &str) -> Result<Vec<LabelReq>, String> {
    let mut out = Vec::new();
    if s.trim().is_empty() {
        return Ok(out);
    }
    for term in split_top(s) {
        let t = term.trim();
        let bad = || format!("unable to parse requirement: invalid label selector term {t:?}");
        let key = |k: &str| {
            let k = k.trim();
            if valid_key(k) {
                Ok(k.to_string())
            } else {
                Err(bad())
            }
        };
        let val = |v: &str| {
            let v = v.trim();
            if valid_value(v) {
                Ok(v.to_string())
            } else {
                Err(bad())
            }
        };
        let req = if let Some(rest) = t.strip_prefix('!') {
            LabelReq::NotExists(key(rest)?)
        } else if let Some((k, v)) = t.split_once("!=") {
            LabelReq::Ne(key(k)?, val(v)?)
        } else if let Some((k, v)) = t.split_once("==") {
            LabelReq::Eq(key(k)?, val(v)?)
        } else if let Some((k, v)) = t.split_once('=') {
            LabelReq::Eq(key(k)?, val(v)?)
        } else if let Some((lhs, rest)) = t.split_once('(') {
            let inner = rest.strip_suffix(')').ok_or_else(bad)?;
            let values = inner.split(',').map(val).collect::<Result<Vec<_>, _>>()?;
            let words: Vec<&str> = lhs.split_whitespace().collect();
            match words.as_slice() {
                [k, "in"] => LabelReq::In(key(k)?, values),
                [k, "notin"] => LabelReq::NotIn(key(k)?, values),
                _ => return Err(bad()),
            }
        } else {
            LabelReq::Exists(key(t)?)
        };
        out.push(req);
    }
    Ok(out)
}

/// Parses a field selector: `path=value`, `path==value`, `path!=value`, comma-separated.
/// FNV-1a 64, the apiserver's shard hash (`k8s.io/apimachinery/pkg/sharding`).
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A `shardSelector` as the apiserver reads it (KEP-5866): `shardRange(object.metadata.uid,
/// '0x…', '0x…')` requirements joined by ` || `, each start inclusive and end exclusive, in
/// `0x`-prefixed lower-case hex up to `0x10000000000000000`.
pub(crate) fn parse_shard_selector(s: &str) -> Result<Vec<(u128, u128)>, String> {
    let bad = || format!("invalid shard selector: {s:?}");
    let mut out = Vec::new();
    for req in s.split("||").map(str::trim).filter(|r| !r.is_empty()) {
        let args = req
            .strip_prefix("shardRange(")
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(bad)?;
        let parts: Vec<&str> = args.split(',').map(str::trim).collect();
        let [field, start, end] = parts.as_slice() else {
            return Err(bad());
        };
        if *field != "object.metadata.uid" {
            return Err(bad());
        }
        let hex = |v: &str| {
            v.strip_prefix("'0x")
                .and_then(|v| v.strip_suffix('\''))
                .filter(|v| !v.is_empty() && v.len() <= 17)
                .and_then(|v| u128::from_str_radix(v, 16).ok())
                .filter(|v| *v <= 1 << 64)
                .ok_or_else(bad)
        };
        out.push((hex(start)?, hex(end)?));
    }
    Ok(out)
}

/// A shard selector as the apiserver writes it back in a list's `metadata.shardInfo`
/// (`selector.go`'s `String()`): a space after each comma, whatever the request had.
pub(crate) fn shard_selector_text(ranges: &[(u128, u128)]) -> String {
    ranges
        .iter()
        .map(|(start, end)| {
            format!("shardRange(object.metadata.uid, '0x{start:016x}', '0x{end:016x}')")
        })
        .collect::<Vec<_>>()
        .join(" || ")
}

pub(crate) fn parse_field_selector(s: &str) -> Result<Vec<FieldReq>, String> {
    let mut out = Vec::new();
    if s.trim().is_empty() {
        return Ok(out);
    }
    for term in s.split(',') {
        let t = term.trim();
        let (path, value, negate) = if let Some((p, v)) = t.split_once("!=") {
            (p, v, true)
        } else if let Some((p, v)) = t.split_once("==") {
            (p, v, false)
        } else if let Some((p, v)) = t.split_once('=') {
            (p, v, false)
        } else {
            return Err(format!("invalid selector: '{s}'; can't understand '{t}'"));
        };
        let path = path.trim();
        if path.is_empty() || path.split('.').any(str::is_empty) {
            return Err(format!("invalid selector: '{s}'; can't understand '{t}'"));
        }
        out.push(FieldReq {
            path: path.split('.').map(str::to_string).collect(),
            value: value.trim().to_string(),
            negate,
        });
    }
    Ok(out)
}

/// Which objects a list or watch sees.
#[derive(Debug, Default, Clone)]
pub(crate) struct Filter {
    pub(crate) namespace: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) labels: Vec<LabelReq>,
    pub(crate) fields: Vec<FieldReq>,
    /// `shardSelector` ranges of the uid's FNV-1a 64 hash (start inclusive, end exclusive);
    /// empty: every object.
    pub(crate) shards: Vec<(u128, u128)>,
}

impl Filter {
    pub(crate) fn has_selectors(&self) -> bool {
        !self.labels.is_empty() || !self.fields.is_empty() || !self.shards.is_empty()
    }

    pub(crate) fn matches(&self, obj: &Value) -> bool {
        if !self.shards.is_empty() {
            let h = u128::from(fnv1a64(meta_str(obj, "uid").unwrap_or("").as_bytes()));
            if !self
                .shards
                .iter()
                .any(|(start, end)| *start <= h && h < *end)
            {
                return false;
            }
        }
        if let Some(ns) = &self.namespace {
            if meta_str(obj, "namespace") != Some(ns.as_str()) {
                return false;
            }
        }
        if let Some(name) = &self.name {
            if meta_str(obj, "name") != Some(name.as_str()) {
                return false;
            }
        }
        let labels = obj.get("metadata").and_then(|m| m.get("labels"));
        let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        let labels_ok = self.labels.iter().all(|r| match r {
            LabelReq::Eq(k, v) => label(k) == Some(v.as_str()),
            LabelReq::Ne(k, v) => label(k) != Some(v.as_str()),
            LabelReq::In(k, vs) => label(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            LabelReq::NotIn(k, vs) => label(k).is_none_or(|l| vs.iter().all(|v| v != l)),
            LabelReq::Exists(k) => label(k).is_some(),
            LabelReq::NotExists(k) => label(k).is_none(),
        });
        labels_ok
            && self.fields.iter().all(|f| {
                let mut cur = Some(obj);
                for p in &f.path {
                    cur = cur.and_then(|c| c.get(p));
                }
                let got = match cur {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Null) | None => String::new(),
                    Some(v) => v.to_string(),
                };
                (got == f.value) != f.negate
            })
    }

    /// What a watcher with this filter sees of an event: objects moving into the selection are
    /// ADDED, moving out are DELETED (as the watch cache does).
    pub(crate) fn transform(&self, ev: &Event) -> Option<(&'static str, Arc<Value>)> {
        let now = self.matches(&ev.obj);
        if ev.typ == "MODIFIED" {
            let before = ev.prev.as_deref().is_some_and(|p| self.matches(p));
            match (before, now) {
                (true, true) => Some(("MODIFIED", ev.obj.clone())),
                (false, true) => Some(("ADDED", ev.obj.clone())),
                (true, false) => Some(("DELETED", ev.obj.clone())),
                (false, false) => None,
            }
        } else {
            now.then(|| (ev.typ, ev.obj.clone()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_selectors() {
        let r = parse_label_selector("app=web, tier != db,env in (a, b),!legacy,x notin (y),z")
            .unwrap();
        assert_eq!(r.len(), 6);
        let f = Filter {
            labels: r,
            ..Filter::default()
        };
        let obj = json!({"metadata":{"labels":{"app":"web","env":"b","z":""}}});
        assert!(f.matches(&obj));
        let obj = json!({"metadata":{"labels":{"app":"web","env":"c","z":""}}});
        assert!(!f.matches(&obj));
        assert!(parse_label_selector("a b c").is_err());
        assert!(parse_label_selector("a in (b").is_err());
        assert!(parse_label_selector("=x").is_err());
    }

    #[test]
    fn shard_selectors() {
        let upper = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')";
        let f = Filter {
            shards: parse_shard_selector(upper).unwrap(),
            ..Filter::default()
        };
        // fnv1a64("a") = 0xaf63dc4c8601ec8c, fnv1a64("b") = 0xaf63df4c8601f1a5: both upper.
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert!(f.matches(&json!({"metadata":{"uid":"a"}})));
        let lower = parse_shard_selector(
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
        )
        .unwrap();
        assert_eq!(lower, [(0, 1 << 63)]);
        let both =
            format!("{upper} || shardRange(object.metadata.uid, '0x0', '0x8000000000000000')");
        assert_eq!(parse_shard_selector(&both).unwrap().len(), 2);
        // Written back as the apiserver writes it, whatever spacing the request had.
        let unspaced = "shardRange(object.metadata.uid,'0x0000000000000000','0x8000000000000000')";
        assert_eq!(
            shard_selector_text(&parse_shard_selector(unspaced).unwrap()),
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
        );
        for bad in [
            "shardRange(object.metadata.name, '0x0', '0x1')",
            "shardRange(object.metadata.uid, 0x0, '0x1')",
            "shardRange(object.metadata.uid, '0x0', '0x20000000000000000')",
            "range(x)",
        ] {
            assert!(parse_shard_selector(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn field_selectors() {
        let f = Filter {
            fields: parse_field_selector("metadata.name=a,metadata.namespace!=kube-system")
                .unwrap(),
            ..Filter::default()
        };
        assert!(f.matches(&json!({"metadata":{"name":"a","namespace":"x"}})));
        assert!(!f.matches(&json!({"metadata":{"name":"a","namespace":"kube-system"}})));
        assert!(parse_field_selector("metadata.name").is_err());
    }

    #[test]
    fn apply_delete_snapshot() {
        let mut st = State::new();
        let pods = st.resolve("pods").unwrap();
        assert_eq!(st.resolve("v1/pods"), Some(pods));
        assert_eq!(
            st.resolve("apps/v1/deployments"),
            st.find("apps", "v1", "deployments")
        );
        assert!(st.resolve("apps/v2/deployments").is_none());
        let rv1 = st
            .apply(
                pods,
                json!({"metadata":{"name":"a","namespace":"n"},"spec":{"x":1}}),
            )
            .unwrap();
        let a = st.resources[pods].objects["n/a"].clone();
        assert_eq!(a["kind"], "Pod");
        assert_eq!(a["metadata"]["generation"], 1);
        let rv2 = st
            .apply(
                pods,
                json!({"metadata":{"name":"a","namespace":"n"},"spec":{"x":2}}),
            )
            .unwrap();
        let a2 = st.resources[pods].objects["n/a"].clone();
        assert_eq!(a2["metadata"]["uid"], a["metadata"]["uid"]);
        assert_eq!(a2["metadata"]["generation"], 2);
        let rv3 = st.delete(pods, Some("n"), "a").unwrap();
        assert!(rv1 < rv2 && rv2 < rv3);
        assert!(st.snapshot_at(pods, rv3).is_empty());
        assert_eq!(st.snapshot_at(pods, rv2)["n/a"]["spec"]["x"], 2);
        assert_eq!(st.snapshot_at(pods, rv1)["n/a"]["spec"]["x"], 1);
        assert!(st.snapshot_at(pods, rv1 - 1).is_empty());
    }
}
