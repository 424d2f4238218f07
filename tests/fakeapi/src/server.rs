//! Connections, routing and the list/watch handlers.

use crate::http::{self, Chunker, ReadResult, Request};
use crate::json::{self, Ctx};
use crate::media::{self, Want};
use crate::store::{self, Filter, InitialEvents, ResourceDef, State, WatchMsg};
use crate::util;
use crate::Fault;
use crossbeam_channel::{at, never, select, unbounded, Receiver, Sender};
use parking_lot::{Condvar, Mutex};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, VecDeque};
use std::io::{BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// State shared by the handle, the accept thread and every connection thread.
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    /// Notified when a request arrives or a watch opens or closes.
    pub(crate) cond: Condvar,
    pub(crate) conns: Mutex<Conns>,
    /// Disconnected when the `FakeApi` is dropped: wakes every blocked thread.
    pub(crate) shutdown: Receiver<()>,
    pub(crate) addr: SocketAddr,
}

/// Open connections and the threads to join on drop.
#[derive(Default)]
pub(crate) struct Conns {
    pub(crate) closed: bool,
    pub(crate) streams: HashMap<u64, TcpStream>,
    pub(crate) threads: Vec<JoinHandle<()>>,
    pub(crate) next_id: u64,
}

const FLOWSCHEMA_UID: &str = "f22c9e51-e1d0-4690-b566-ab0892e2d633";
const PRIORITYLEVEL_UID: &str = "debca55a-f2dc-4fd2-ab19-62ab36872d73";
const JSON: &str = "application/json";

const VERSION_BODY: &str = r#"{
  "major": "1",
  "minor": "36",
  "emulationMajor": "1",
  "emulationMinor": "36",
  "minCompatibilityMajor": "1",
  "minCompatibilityMinor": "35",
  "gitVersion": "v1.36.2",
  "gitCommit": "98b35193b2ac7a23a673325f5e9b830ecd5ba406",
  "gitTreeState": "clean",
  "buildDate": "2026-11-29T16:18:50Z",
  "goVersion": "go1.27.3-X:nojsonv2",
  "compiler": "gc",
  "platform": "linux/amd64"
}"#;

/// Accepts connections until the handle is dropped.
pub(crate) fn accept_loop(sh: Arc<Shared>, listener: TcpListener) {
    for incoming in listener.incoming() {
        let stream = match incoming {
            Ok(s) => s,
            Err(e) => {
                if sh.conns.lock().closed {
                    break;
                }
                log::warn!("fakeapi: accept failed: {e}");
                // Out of file descriptors or similar: don't spin.
                let _ = sh.shutdown.recv_timeout(Duration::from_millis(10));
                continue;
            }
        };
        let mut conns = sh.conns.lock();
        if conns.closed {
            let _ = stream.shutdown(Shutdown::Both);
            break;
        }
        let Ok(clone) = stream.try_clone() else {
            continue;
        };
        let id = conns.next_id;
        conns.next_id += 1;
        conns.streams.insert(id, clone);
        conns.threads.retain(|h| !h.is_finished());
        let sh2 = sh.clone();
        match thread::Builder::new()
            .name("fakeapi-conn".into())
            .spawn(move || conn_main(sh2, id, stream))
        {
            Ok(h) => conns.threads.push(h),
            Err(e) => {
                log::warn!("fakeapi: cannot spawn a connection thread: {e}");
                if let Some(s) = conns.streams.remove(&id) {
                    let _ = s.shutdown(Shutdown::Both);
                }
            }
        }
    }
}

/// What the reader thread passes to the connection thread.
enum ConnMsg {
    Request(Request),
    Bad(String),
    Closed,
}

/// Whether the connection goes on after a response.
#[derive(PartialEq, Eq, Debug)]
enum Flow {
    KeepAlive,
    Close,
}

struct Conn {
    stream: TcpStream,
    rx: Receiver<ConnMsg>,
    /// Requests that arrived while a watch was streaming.
    pending: VecDeque<ConnMsg>,
    shutdown: Receiver<()>,
}

impl Conn {
    fn send(&self, data: &[u8]) -> bool {
        (&self.stream).write_all(data).is_ok()
    }

    fn next(&mut self) -> Option<ConnMsg> {
        if let Some(m) = self.pending.pop_front() {
            return Some(m);
        }
        select! {
            recv(self.rx) -> m => m.ok(),
            recv(self.shutdown) -> _ => None,
        }
    }
}

fn reader_main(stream: TcpStream, tx: Sender<ConnMsg>) {
    let mut r = BufReader::new(stream);
    loop {
        match http::read_request(&mut r) {
            ReadResult::Request(req) => {
                if tx.send(ConnMsg::Request(req)).is_err() {
                    return;
                }
            }
            ReadResult::Bad(m) => {
                let _ = tx.send(ConnMsg::Bad(m));
                return;
            }
            ReadResult::Closed => {
                let _ = tx.send(ConnMsg::Closed);
                return;
            }
        }
    }
}

fn conn_main(sh: Arc<Shared>, id: u64, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let (tx, rx) = unbounded();
    let reader = stream.try_clone().ok().and_then(|s| {
        thread::Builder::new()
            .name("fakeapi-read".into())
            .spawn(move || reader_main(s, tx))
            .ok()
    });
    let mut conn = Conn {
        stream,
        rx,
        pending: VecDeque::new(),
        shutdown: sh.shutdown.clone(),
    };
    if reader.is_some() {
        loop {
            match conn.next() {
                Some(ConnMsg::Request(req)) => {
                    let flow = handle(&sh, &mut conn, &req);
                    if flow == Flow::Close || !req.keep_alive() {
                        break;
                    }
                }
                Some(ConnMsg::Bad(m)) => {
                    let resp = Resp {
                        audit: util::uuid(),
                        gzip: false,
                        members: false,
                        pretty: false,
                        close: true,
                    };
                    send_status(&conn, &resp, 400, "BadRequest", &m, None, None);
                    break;
                }
                Some(ConnMsg::Closed) | None => break,
            }
        }
    }
    let _ = conn.stream.shutdown(Shutdown::Both);
    if let Some(r) = reader {
        let _ = r.join();
    }
    sh.conns.lock().streams.remove(&id);
}

/// How to answer one request.
struct Resp {
    audit: String,
    gzip: bool,
    /// With `gzip`: each watch event its own gzip member.
    members: bool,
    pretty: bool,
    close: bool,
}

enum Len {
    Fixed(usize),
    Chunked,
}

/// Response headers in the order Go writes them: the handler's sorted, then Date,
/// Content-Length, Connection, Transfer-Encoding.
fn headers(
    r: &Resp,
    code: u16,
    content_type: &str,
    gzipped: bool,
    retry_after: Option<String>,
    len: Len,
) -> Vec<(&'static str, String)> {
    let mut h = vec![
        ("Audit-Id", r.audit.clone()),
        ("Cache-Control", "no-cache, private".to_string()),
    ];
    if gzipped {
        h.push(("Content-Encoding", "gzip".into()));
    }
    h.push(("Content-Type", content_type.to_string()));
    if let Some(s) = retry_after {
        h.push(("Retry-After", s));
    }
    if code == 403 || content_type != JSON {
        h.push(("X-Content-Type-Options", "nosniff".into()));
    }
    if code != 401 {
        h.push(("X-Kubernetes-Pf-Flowschema-Uid", FLOWSCHEMA_UID.into()));
        h.push((
            "X-Kubernetes-Pf-Prioritylevel-Uid",
            PRIORITYLEVEL_UID.into(),
        ));
    }
    h.push(("Date", util::http_date_now()));
    if let Len::Fixed(n) = len {
        h.push(("Content-Length", n.to_string()));
    }
    if r.close {
        h.push(("Connection", "close".into()));
    }
    if let Len::Chunked = len {
        h.push(("Transfer-Encoding", "chunked".into()));
    }
    h
}

fn flow(r: &Resp, ok: bool) -> Flow {
    if ok && !r.close {
        Flow::KeepAlive
    } else {
        Flow::Close
    }
}

/// A complete response with Content-Length.
fn send_body(
    conn: &Conn,
    r: &Resp,
    code: u16,
    content_type: &str,
    body: Vec<u8>,
    retry_after: Option<String>,
) -> Flow {
    let body = if r.gzip { http::gzip_all(&body) } else { body };
    let h = headers(
        r,
        code,
        content_type,
        r.gzip,
        retry_after,
        Len::Fixed(body.len()),
    );
    let mut out = http::head_bytes(code, &h);
    out.extend_from_slice(&body);
    flow(r, conn.send(&out))
}

fn send_json(conn: &Conn, r: &Resp, v: &Value) -> Flow {
    send_body(conn, r, 200, JSON, json::body(v, Ctx::Top, r.pretty), None)
}

/// A `Status` object (reason and message omitted when empty, as Go's omitempty does).
pub(crate) fn status_obj(
    code: u16,
    reason: &str,
    message: &str,
    details: Option<Value>,
    metadata: Value,
) -> Value {
    let mut m = Map::new();
    m.insert("kind".into(), json!("Status"));
    m.insert("apiVersion".into(), json!("v1"));
    m.insert("metadata".into(), metadata);
    m.insert("status".into(), json!("Failure"));
    if !message.is_empty() {
        m.insert("message".into(), json!(message));
    }
    if !reason.is_empty() {
        m.insert("reason".into(), json!(reason));
    }
    if let Some(d) = details {
        m.insert("details".into(), d);
    }
    m.insert("code".into(), json!(code));
    Value::Object(m)
}

fn send_status_obj(
    conn: &Conn,
    r: &Resp,
    code: u16,
    v: &Value,
    retry_after: Option<String>,
) -> Flow {
    send_body(
        conn,
        r,
        code,
        JSON,
        json::body(v, Ctx::Top, r.pretty),
        retry_after,
    )
}

fn send_status(
    conn: &Conn,
    r: &Resp,
    code: u16,
    reason: &str,
    message: &str,
    details: Option<Value>,
    retry_after: Option<String>,
) -> Flow {
    let v = status_obj(code, reason, message, details, json!({}));
    send_status_obj(conn, r, code, &v, retry_after)
}

fn not_found(conn: &Conn, r: &Resp) -> Flow {
    send_status(
        conn,
        r,
        404,
        "NotFound",
        "the server could not find the requested resource",
        Some(json!({})),
        None,
    )
}

fn bad_request(conn: &Conn, r: &Resp, message: &str) -> Flow {
    send_status(conn, r, 400, "BadRequest", message, None, None)
}

fn expired_status(rv: &str, oldest: &str) -> Value {
    status_obj(
        410,
        "Expired",
        &format!("too old resource version: {rv} ({oldest})"),
        None,
        json!({}),
    )
}

fn too_large_status(rv: &str, current: &str) -> Value {
    status_obj(
        504,
        "Timeout",
        &format!("Timeout: Too large resource version: {rv}, current: {current}"),
        Some(json!({
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1
        })),
        json!({}),
    )
}

fn list_expired_status() -> Value {
    status_obj(
        410,
        "Expired",
        "The resourceVersion for the provided list is too old.",
        None,
        json!({}),
    )
}

/// One watch frame: `{"type":T,"object":OBJ}\n`.
fn frame(typ: &str, obj_json: &str) -> Vec<u8> {
    let mut s = String::with_capacity(obj_json.len() + 32);
    s.push_str("{\"type\":");
    json::write_str(&mut s, typ);
    s.push_str(",\"object\":");
    s.push_str(obj_json);
    s.push_str("}\n");
    s.into_bytes()
}

/// A BOOKMARK's object: the kind's zero value with only a resourceVersion (and the
/// initial-events-end annotation), or a bare `PartialObjectMetadata` for metadata-only watches
/// (m-metadata-watchlist-pods).
fn bookmark_json(def: &ResourceDef, rv: &str, initial_end: bool, meta: bool) -> String {
    let (kind, api_version, extra) = if meta {
        (
            "PartialObjectMetadata".to_string(),
            media::META_API_VERSION.to_string(),
            "",
        )
    } else {
        (def.kind.clone(), def.api_version(), def.bookmark_extra())
    };
    format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{{\"resourceVersion\":{}{}}}{extra}}}",
        json::quote(&kind),
        json::quote(&api_version),
        json::quote(rv),
        if initial_end {
            ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}"
        } else {
            ""
        },
    )
}

fn qget<'a>(q: &'a [(String, String)], key: &str) -> Option<&'a str> {
    q.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// apimachinery's `Convert_Slice_string_To_bool`: only "0" and "false" (any case) are false.
fn qbool(v: &str) -> bool {
    !(v == "0" || v.eq_ignore_ascii_case("false"))
}

fn authorized(req: &Request, token: &str) -> bool {
    req.header("authorization")
        .and_then(|h| h.split_once(' '))
        .is_some_and(|(scheme, t)| scheme.eq_ignore_ascii_case("bearer") && t.trim() == token)
}

fn handle(sh: &Shared, conn: &mut Conn, req: &Request) -> Flow {
    log::debug!("fakeapi: {}", req.line());
    let (gzip_on, members, token) = {
        let mut st = sh.state.lock();
        st.requests.push(req.line());
        st.accepts
            .push(req.header("accept").unwrap_or_default().to_string());
        st.log.push(store::RequestRecord {
            at: Instant::now(),
            line: req.line(),
        });
        sh.cond.notify_all();
        (
            st.gzip || st.gzip_members,
            st.gzip_members,
            st.token.clone(),
        )
    };
    let mut resp = Resp {
        audit: util::uuid(),
        gzip: gzip_on && req.accepts_gzip(),
        members,
        pretty: req.pretty_user_agent(),
        close: !req.keep_alive(),
    };
    let (segs, query) = match http::parse_target(&req.target) {
        Ok(t) => t,
        Err(m) => return bad_request(conn, &resp, &m),
    };
    if let Some(p) = qget(&query, "pretty") {
        resp.pretty = matches!(p, "1" | "t" | "T" | "true" | "TRUE" | "True");
    }
    if let Some(tok) = token {
        if !authorized(req, &tok) {
            return send_status(conn, &resp, 401, "Unauthorized", "Unauthorized", None, None);
        }
    }
    if !matches!(req.method.as_str(), "GET" | "PUT" | "POST") {
        return send_status(
            conn,
            &resp,
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            Some(json!({})),
            None,
        );
    }
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    match segs.as_slice() {
        ["version"] => send_body(
            conn,
            &resp,
            200,
            JSON,
            VERSION_BODY.as_bytes().to_vec(),
            None,
        ),
        ["healthz"] | ["livez"] | ["readyz"] => send_body(
            conn,
            &resp,
            200,
            "text/plain; charset=utf-8",
            b"ok".to_vec(),
            None,
        ),
        ["api"] => serve_discovery(sh, conn, &resp, req, true),
        ["apis"] => serve_discovery(sh, conn, &resp, req, false),
        ["apis", g] => match api_group(&sh.state.lock(), g) {
            Some(v) => send_json(conn, &resp, &v),
            None => not_found(conn, &resp),
        },
        ["api", "v1"] => match resource_list(&sh.state.lock(), "", "v1") {
            Some(v) => send_json(conn, &resp, &v),
            None => not_found(conn, &resp),
        },
        ["apis", g, v] => match resource_list(&sh.state.lock(), g, v) {
            Some(v) => send_json(conn, &resp, &v),
            None => not_found(conn, &resp),
        },
        ["api", "v1", rest @ ..] => serve_resource(sh, conn, &resp, req, &query, "", "v1", rest),
        ["apis", g, v, rest @ ..] => serve_resource(sh, conn, &resp, req, &query, g, v, rest),
        _ => not_found(conn, &resp),
    }
}

fn resource_list(st: &State, group: &str, version: &str) -> Option<Value> {
    let defs: Vec<&ResourceDef> = st
        .served()
        .map(|r| &r.def)
        .filter(|d| d.group == group && d.version == version)
        .collect();
    if defs.is_empty() && !(group.is_empty() && version == "v1") {
        return None;
    }
    let resources: Vec<Value> = defs
        .iter()
        .map(|d| {
            let mut r = json!({
                "name": d.resource,
                "singularName": d.kind.to_lowercase(),
                "namespaced": d.namespaced,
                "kind": d.kind,
                "verbs": d.verbs,
            });
            if !d.short_names.is_empty() {
                r["shortNames"] = json!(d.short_names);
            }
            r
        })
        .collect();
    let mut v = json!({
        "kind": "APIResourceList",
        "groupVersion": if group.is_empty() { version.to_string() } else { format!("{group}/{version}") },
        "resources": resources,
    });
    if !group.is_empty() {
        v["apiVersion"] = json!("v1");
    }
    Some(v)
}

fn versions_of<'a>(st: &'a State, group: &str) -> Vec<&'a str> {
    let mut versions: Vec<&str> = Vec::new();
    for r in st.served() {
        if r.def.group == group && !versions.contains(&r.def.version.as_str()) {
            versions.push(&r.def.version);
        }
    }
    versions
}

fn groups_of(st: &State) -> Vec<&str> {
    let mut groups: Vec<&str> = Vec::new();
    for r in st.served() {
        if !r.def.group.is_empty() && !groups.contains(&r.def.group.as_str()) {
            groups.push(&r.def.group);
        }
    }
    groups
}

fn group_versions(st: &State, group: &str) -> Vec<Value> {
    versions_of(st, group)
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect()
}

fn group_obj(st: &State, group: &str) -> Value {
    let versions = group_versions(st, group);
    json!({"name": group, "versions": versions, "preferredVersion": versions[0]})
}

fn group_list(st: &State) -> Value {
    let groups: Vec<Value> = groups_of(st).iter().map(|g| group_obj(st, g)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn api_group(st: &State, group: &str) -> Option<Value> {
    if !st.served().any(|r| r.def.group == group) {
        return None;
    }
    let mut v = group_obj(st, group);
    v["kind"] = json!("APIGroup");
    v["apiVersion"] = json!("v1");
    Some(v)
}

/// `/api` (`core`) or `/apis`: the legacy document, or aggregated discovery when the client
/// asks for it first and the server has it (g-apis-aggregated).
fn serve_discovery(sh: &Shared, conn: &Conn, resp: &Resp, req: &Request, core: bool) -> Flow {
    let accept = media::accepted(req.header("accept"));
    let st = sh.state.lock();
    let aggregated = st.aggregated;
    let want = media::choose(&accept, |w| match w {
        Want::Full => true,
        Want::Discovery(_) => aggregated,
        Want::Meta | Want::MetaList => false,
    });
    match want {
        Some(Want::Discovery(version)) => {
            let doc = aggregated_discovery(&st, core, version);
            drop(st);
            let body = json::body(&doc, Ctx::Plain, resp.pretty);
            let content_type = format!(
                "application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
            );
            send_cacheable(conn, resp, req, &content_type, body)
        }
        Some(_) => {
            let v = if core {
                json!({
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": sh.addr.to_string()}]
                })
            } else {
                group_list(&st)
            };
            drop(st);
            send_json(conn, resp, &v)
        }
        None => {
            drop(st);
            not_acceptable(conn, resp, MEDIA_TYPES)
        }
    }
}

/// An `APIGroupDiscoveryList`: for `/api` the core group (one item without a name), for
/// `/apis` every other group, each with its versions and every resource in them.
fn aggregated_discovery(st: &State, core: bool, version: &str) -> Value {
    let groups: Vec<&str> = if core { vec![""] } else { groups_of(st) };
    let items: Vec<Value> = groups
        .iter()
        .map(|g| {
            let versions: Vec<Value> = versions_of(st, g)
                .iter()
                .map(|v| {
                    let resources: Vec<Value> = st
                        .served()
                        .map(|r| &r.def)
                        .filter(|d| d.group == *g && d.version == *v)
                        .map(|d| {
                            let mut r = json!({
                                "resource": d.resource,
                                "responseKind": {"group": "", "version": "", "kind": d.kind},
                                "scope": d.scope(),
                                "singularResource": d.kind.to_lowercase(),
                                "verbs": d.verbs,
                            });
                            if !d.short_names.is_empty() {
                                r["shortNames"] = json!(d.short_names);
                            }
                            r
                        })
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            let metadata = if g.is_empty() {
                json!({"creationTimestamp": null})
            } else {
                json!({"name": g})
            };
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    })
}

/// FNV-1a, for the discovery Etag (the real server's is a SHA-512 in hex: any stable hash of
/// the body does).
fn etag(body: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in body {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("\"{h:016X}\"")
}

/// A cacheable discovery answer (g-apis-aggregated.headers.txt): `Cache-Control: public`, an
/// `Etag`, `Vary: Accept`; `If-None-Match` with the current Etag gets 304 without a body.
fn send_cacheable(conn: &Conn, r: &Resp, req: &Request, content_type: &str, body: Vec<u8>) -> Flow {
    let tag = etag(&body);
    let not_modified = req
        .header("if-none-match")
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag));
    let (code, body) = if not_modified {
        (304, Vec::new())
    } else if r.gzip {
        (200, http::gzip_all(&body))
    } else {
        (200, body)
    };
    let mut h = vec![
        ("Audit-Id", r.audit.clone()),
        ("Cache-Control", "public".to_string()),
    ];
    if r.gzip && code == 200 {
        h.push(("Content-Encoding", "gzip".into()));
    }
    h.push(("Content-Type", content_type.to_string()));
    h.push(("Etag", tag));
    h.push(("Vary", "Accept".into()));
    h.push(("X-Kubernetes-Pf-Flowschema-Uid", FLOWSCHEMA_UID.into()));
    h.push((
        "X-Kubernetes-Pf-Prioritylevel-Uid",
        PRIORITYLEVEL_UID.into(),
    ));
    h.push(("Date", util::http_date_now()));
    if code == 200 {
        h.push(("Content-Length", body.len().to_string()));
    }
    if r.close {
        h.push(("Connection", "close".into()));
    }
    let mut out = http::head_bytes(code, &h);
    out.extend_from_slice(&body);
    flow(r, conn.send(&out))
}

/// What a 406 for an `Accept` with nothing servable lists.
const MEDIA_TYPES: &str = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// 406 NotAcceptable, as `newNotAcceptableError` builds it.
fn not_acceptable(conn: &Conn, r: &Resp, message: &str) -> Flow {
    let details = json!({"causes": [{"reason": "UnexpectedServerResponse", "message": message}]});
    send_status(conn, r, 406, "NotAcceptable", message, Some(details), None)
}

/// The list/watch options the fake understands.
struct Opts {
    watch: bool,
    send_initial: Option<bool>,
    rv: String,
    rv_num: Option<u64>,
    rv_match: String,
    bookmarks: bool,
    timeout: Option<u64>,
    limit: i64,
    cont: String,
    label_selector: String,
    field_selector: String,
    shard_selector: String,
}

fn parse_int(v: &str) -> Result<i64, String> {
    v.parse::<i64>().map_err(|_| {
        format!(
            "strconv.ParseInt: parsing {}: invalid syntax",
            json::quote(v)
        )
    })
}

impl Opts {
    /// `opaque`: resourceVersions come back in the opaque form (`State::parse_rv`).
    fn parse(q: &[(String, String)], opaque: bool) -> Result<Opts, String> {
        let rv = qget(q, "resourceVersion").unwrap_or("").to_string();
        let rv_num = if rv.is_empty() {
            None
        } else {
            Some(
                store::parse_rv(opaque, &rv)
                    .ok_or_else(|| format!("invalid resource version: {}", json::quote(&rv)))?,
            )
        };
        Ok(Opts {
            watch: qget(q, "watch").is_some_and(qbool),
            send_initial: qget(q, "sendInitialEvents").map(qbool),
            rv,
            rv_num,
            rv_match: qget(q, "resourceVersionMatch").unwrap_or("").to_string(),
            bookmarks: qget(q, "allowWatchBookmarks").is_some_and(qbool),
            timeout: match qget(q, "timeoutSeconds") {
                Some(v) => Some(parse_int(v)?).filter(|s| *s > 0).map(|s| s as u64),
                None => None,
            },
            limit: match qget(q, "limit") {
                Some(v) => parse_int(v)?,
                None => 0,
            },
            cont: qget(q, "continue").unwrap_or("").to_string(),
            label_selector: qget(q, "labelSelector").unwrap_or("").to_string(),
            field_selector: qget(q, "fieldSelector").unwrap_or("").to_string(),
            shard_selector: qget(q, "shardSelector").unwrap_or("").to_string(),
        })
    }
}

/// One validation error, as `field.Error`.
struct FieldErr {
    field: &'static str,
    /// The StatusCause reason.
    reason: &'static str,
    /// The error body, e.g. `Forbidden: ...`.
    body: String,
}

fn forbidden(field: &'static str, detail: &str) -> FieldErr {
    FieldErr {
        field,
        reason: "FieldValueForbidden",
        body: format!("Forbidden: {detail}"),
    }
}

fn not_supported(field: &'static str, value: &str, supported: &[&str]) -> FieldErr {
    let list: Vec<String> = supported.iter().map(|s| json::quote(s)).collect();
    FieldErr {
        field,
        reason: "FieldValueNotSupported",
        body: format!(
            "Unsupported value: {}: supported values: {}",
            json::quote(value),
            list.join(", ")
        ),
    }
}

/// apimachinery's `ValidateListOptions`.
/// `ignored`: the server knows neither `sendInitialEvents` nor `resourceVersionMatch` on a
/// watch ([`InitialEvents::Ignored`]), so nothing about them is checked.
fn validate(o: &Opts, watchlist_enabled: bool, ignored: bool) -> Vec<FieldErr> {
    let mut errs = Vec::new();
    let m = o.rv_match.as_str();
    if o.watch && ignored {
        return errs;
    }
    if o.watch {
        if o.send_initial.is_some() {
            if m != "NotOlderThan" {
                errs.push(forbidden(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            if !watchlist_enabled {
                errs.push(forbidden(
                    "sendInitialEvents",
                    "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
                ));
            }
        }
        if !m.is_empty() {
            if o.send_initial.is_none() {
                errs.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if m != "NotOlderThan" {
                errs.push(not_supported("resourceVersionMatch", m, &["NotOlderThan"]));
            }
            if !o.cont.is_empty() {
                errs.push(forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
        return errs;
    }
    if !m.is_empty() {
        if o.rv.is_empty() {
            errs.push(forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if !o.cont.is_empty() {
            errs.push(forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        match m {
            "Exact" => {
                if o.rv == "0" {
                    errs.push(forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                    ));
                }
            }
            "NotOlderThan" => {}
            _ => errs.push(not_supported(
                "resourceVersionMatch",
                m,
                &["Exact", "NotOlderThan", ""],
            )),
        }
    }
    if o.send_initial.is_some() {
        errs.push(forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    errs
}

fn invalid_status(errs: &[FieldErr]) -> Value {
    let parts: Vec<String> = errs
        .iter()
        .map(|e| format!("{}: {}", e.field, e.body))
        .collect();
    let joined = if parts.len() == 1 {
        parts[0].clone()
    } else {
        format!("[{}]", parts.join(", "))
    };
    let causes: Vec<Value> = errs
        .iter()
        .map(|e| json!({"reason": e.reason, "message": e.body, "field": e.field}))
        .collect();
    status_obj(
        422,
        "Invalid",
        &format!("ListOptions.meta.k8s.io \"\" is invalid: {joined}"),
        Some(json!({"group": "meta.k8s.io", "kind": "ListOptions", "causes": causes})),
        json!({}),
    )
}

/// Fault effects that apply while serving normally.
#[derive(Default)]
struct Twist {
    cut_after: Option<usize>,
    garbage: bool,
    /// A watch sends what `Fault::BookmarkOnly` says, then ends.
    bookmark_only: bool,
}

#[allow(clippy::too_many_arguments)]
fn serve_resource(
    sh: &Shared,
    conn: &mut Conn,
    resp: &Resp,
    req: &Request,
    query: &[(String, String)],
    group: &str,
    version: &str,
    rest: &[&str],
) -> Flow {
    let (ns, rname, name): (Option<&str>, &str, Option<&str>) = match rest {
        [r] => (None, r, None),
        ["namespaces", ns, r] => (Some(ns), r, None),
        ["namespaces", ns, r, n] => (Some(ns), r, Some(n)),
        [r, n] => (None, r, Some(n)),
        _ => return not_found(conn, resp),
    };
    let watch = qget(query, "watch").is_some_and(qbool);
    let mut st = sh.state.lock();
    let Some(idx) = st.find(group, version, rname) else {
        drop(st);
        return not_found(conn, resp);
    };
    let def = st.resources[idx].def.clone();
    if ns.is_some() && !def.namespaced {
        drop(st);
        return not_found(conn, resp);
    }
    if req.method != "GET" {
        drop(st);
        return serve_write(sh, conn, resp, req, idx, &def, ns, name);
    }
    if st.forbidden.contains(&idx) {
        drop(st);
        let verb = if watch {
            "watch"
        } else if name.is_some() {
            "get"
        } else {
            "list"
        };
        let user = if req.header("authorization").is_some() {
            "nobody"
        } else {
            "system:anonymous"
        };
        let scope = match ns {
            Some(ns) => format!("in the namespace {}", json::quote(ns)),
            None => "at the cluster scope".to_string(),
        };
        let mut message = format!(
            "{rname} is forbidden: User {} cannot {verb} resource {} in API group {} {scope}",
            json::quote(user),
            json::quote(rname),
            json::quote(group)
        );
        if let Some(n) = name {
            message = format!(
                "{rname} {} is forbidden: User {} cannot {verb} resource {} in API group {} {scope}",
                json::quote(n),
                json::quote(user),
                json::quote(rname),
                json::quote(group)
            );
        }
        let mut details = json!({"kind": rname});
        if let Some(n) = name {
            details["name"] = json!(n);
        }
        if !group.is_empty() {
            details["group"] = json!(group);
        }
        return send_status(conn, resp, 403, "Forbidden", &message, Some(details), None);
    }
    let verb = if watch {
        "watch"
    } else if name.is_some() {
        "get"
    } else {
        "list"
    };
    if !def.allows(verb) {
        drop(st);
        return send_status(
            conn,
            resp,
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            Some(json!({})),
            None,
        );
    }
    let accept = media::accepted(req.header("accept"));
    let meta = match media::choose(&accept, |w| !matches!(w, Want::Discovery(_))) {
        None => {
            drop(st);
            return not_acceptable(conn, resp, MEDIA_TYPES);
        }
        Some(Want::Meta) if verb == "list" => {
            drop(st);
            let m = format!(
                "you requested PartialObjectMetadata, but the requested object is a list (*v1.{}List)",
                def.kind
            );
            return not_acceptable(conn, resp, &m);
        }
        Some(Want::MetaList) if verb != "list" => {
            drop(st);
            let m = format!(
                "you requested PartialObjectMetadataList, but the requested object is not a list (*v1.{})",
                def.kind
            );
            return not_acceptable(conn, resp, &m);
        }
        Some(w) => w != Want::Full,
    };
    let fault = st.faults.get_mut(&idx).and_then(VecDeque::pop_front);
    let watchlist = st.watchlist;
    let sharding = st.sharding;
    let ignored = st.initial_events == InitialEvents::Ignored;
    let opaque = st.opaque;
    let cur = st.rv;
    let cur_str = st.rv_str(cur);
    let next_str = st.rv_str(cur + 1);
    drop(st);

    let rv_param = qget(query, "resourceVersion").unwrap_or("").to_string();
    let mut twist = Twist::default();
    match fault {
        None => {}
        Some(Fault::Status {
            code,
            reason,
            message,
            retry_after,
        }) => {
            let details = retry_after.map(|s| json!({"retryAfterSeconds": s}));
            let header = retry_after.map(|s| s.to_string());
            return send_status(conn, resp, code, &reason, &message, details, header);
        }
        Some(Fault::StatusRetryDate {
            code,
            reason,
            message,
            after,
        }) => {
            let at = std::time::SystemTime::now() + after;
            let header = Some(util::http_date(at));
            return send_status(conn, resp, code, &reason, &message, None, header);
        }
        Some(Fault::ErrorInStream {
            code,
            reason,
            message,
        }) => {
            let status = status_obj(code, &reason, &message, None, json!({}));
            if watch {
                return stream_error(conn, resp, &status);
            }
            return send_status_obj(conn, resp, code, &status, None);
        }
        Some(Fault::BookmarkOnly) => twist.bookmark_only = watch,
        Some(Fault::ExpiredInStream) => {
            if watch {
                let rv = if rv_param.is_empty() {
                    cur_str.clone()
                } else {
                    rv_param
                };
                return stream_error(conn, resp, &expired_status(&rv, &cur_str));
            }
            return send_status_obj(conn, resp, 410, &list_expired_status(), None);
        }
        Some(Fault::TooLargeInStream) => {
            let rv = if rv_param.is_empty() {
                next_str
            } else {
                rv_param
            };
            let status = too_large_status(&rv, &cur_str);
            if watch {
                return stream_error(conn, resp, &status);
            }
            return send_status_obj(conn, resp, 504, &status, None);
        }
        Some(Fault::CutAfter(n)) => twist.cut_after = Some(n),
        Some(Fault::Stall) => return stall(sh, conn, resp, watch.then_some(idx)),
        Some(Fault::Garbage) => twist.garbage = true,
    }

    let o = match Opts::parse(query, opaque) {
        Ok(o) => o,
        Err(m) => return bad_request(conn, resp, &m),
    };
    let errs = validate(&o, watchlist, ignored);
    if !errs.is_empty() {
        return send_status_obj(conn, resp, 422, &invalid_status(&errs), None);
    }
    let mut filter = Filter {
        namespace: ns.map(str::to_string),
        ..Filter::default()
    };
    match store::parse_label_selector(&o.label_selector) {
        Ok(l) => filter.labels = l,
        Err(m) => return bad_request(conn, resp, &m),
    }
    match store::parse_field_selector(&o.field_selector) {
        Ok(f) => filter.fields = f,
        Err(m) => return bad_request(conn, resp, &m),
    }
    // Without the feature gate the server drops the parameter unread.
    if sharding {
        match store::parse_shard_selector(&o.shard_selector) {
            Ok(s) => filter.shards = s,
            Err(m) => return bad_request(conn, resp, &m),
        }
    }
    if let Some(n) = name {
        filter.name = Some(n.to_string());
        if !o.watch {
            return serve_get(sh, conn, resp, idx, &def, ns, n, meta, twist);
        }
    }
    if o.watch {
        serve_watch(sh, conn, resp, idx, &def, &o, &filter, meta, twist)
    } else {
        serve_list(sh, conn, resp, idx, &def, &o, &filter, meta, twist)
    }
}

/// A PUT (replace `name`) or POST (create in the collection) of one object, with the
/// apiserver's optimistic concurrency: a PUT whose `metadata.resourceVersion` is not the stored
/// one gets 409 Conflict, a POST of an existing name 409 AlreadyExists.
#[allow(clippy::too_many_arguments)]
fn serve_write(
    sh: &Shared,
    conn: &Conn,
    resp: &Resp,
    req: &Request,
    idx: usize,
    def: &ResourceDef,
    ns: Option<&str>,
    name: Option<&str>,
) -> Flow {
    let verb = if req.method == "PUT" {
        "update"
    } else {
        "create"
    };
    let mut st = sh.state.lock();
    if st.forbidden.contains(&idx) {
        drop(st);
        let message = format!(
            "{} is forbidden: User \"nobody\" cannot {verb} resource {} in API group {}",
            def.resource,
            json::quote(&def.resource),
            json::quote(&def.group)
        );
        return send_status(conn, resp, 403, "Forbidden", &message, None, None);
    }
    if let Some(text) = st.refused_writes.get(&idx) {
        if req
            .body
            .windows(text.len().max(1))
            .any(|w| w == text.as_bytes())
            || text.is_empty()
        {
            drop(st);
            return send_status(
                conn,
                resp,
                503,
                "ServiceUnavailable",
                "the server is refusing writes (the test said so)",
                None,
                None,
            );
        }
    }
    let Ok(Value::Object(mut obj)) = serde_json::from_slice::<Value>(&req.body) else {
        drop(st);
        return bad_request(conn, resp, "the request body is not a JSON object");
    };
    let meta = obj.entry("metadata").or_insert_with(|| json!({}));
    let given_name = meta.get("name").and_then(Value::as_str).map(str::to_string);
    let given_rv = meta
        .get("resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let (Some(ns), Value::Object(m)) = (ns, &mut *meta) {
        m.insert("namespace".into(), json!(ns));
    }
    let target = match (name, &given_name) {
        (Some(n), Some(g)) if n == g => n.to_string(),
        (Some(_), _) => {
            drop(st);
            return bad_request(
                conn,
                resp,
                "the name of the object does not match the name on the URL",
            );
        }
        (None, Some(g)) => g.clone(),
        (None, None) => {
            drop(st);
            return bad_request(conn, resp, "metadata.name is required");
        }
    };
    let key = match ns {
        Some(ns) => format!("{ns}/{target}"),
        None => target.clone(),
    };
    let stored = st.resources[idx].objects.get(&key).cloned();
    let qualified = if def.group.is_empty() {
        def.resource.clone()
    } else {
        format!("{}.{}", def.resource, def.group)
    };
    match (verb, &stored) {
        ("create", Some(_)) => {
            drop(st);
            let message = format!("{qualified} {} already exists", json::quote(&target));
            let details = json!({"name": target, "group": def.group, "kind": def.resource});
            return send_status(
                conn,
                resp,
                409,
                "AlreadyExists",
                &message,
                Some(details),
                None,
            );
        }
        ("update", None) => {
            drop(st);
            let message = format!("{qualified} {} not found", json::quote(&target));
            let details = json!({"name": target, "group": def.group, "kind": def.resource});
            return send_status(conn, resp, 404, "NotFound", &message, Some(details), None);
        }
        ("update", Some(o)) => {
            let current = o
                .get("metadata")
                .and_then(|m| m.get("resourceVersion"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            if given_rv.as_deref().is_some_and(|rv| rv != current) {
                drop(st);
                let message = format!(
                    "Operation cannot be fulfilled on {qualified} {}: the object has been modified; please apply your changes to the latest version and try again",
                    json::quote(&target)
                );
                let details = json!({"name": target, "group": def.group, "kind": def.resource});
                return send_status(conn, resp, 409, "Conflict", &message, Some(details), None);
            }
        }
        _ => {}
    }
    if let Err(m) = st.apply(idx, Value::Object(obj)) {
        drop(st);
        return bad_request(conn, resp, &m);
    }
    let written = st.resources[idx].objects.get(&key).cloned();
    drop(st);
    sh.cond.notify_all();
    let code = if verb == "create" { 201 } else { 200 };
    match written {
        Some(o) => send_body(
            conn,
            resp,
            code,
            JSON,
            json::body(&o, Ctx::Plain, resp.pretty),
            None,
        ),
        None => not_found(conn, resp),
    }
}

/// Sends a finished body, or the fault's version of it.
fn send_twisted(conn: &Conn, resp: &Resp, body: Vec<u8>, twist: Twist) -> Flow {
    if twist.garbage {
        return send_body(conn, resp, 200, JSON, b"this is not json\n".to_vec(), None);
    }
    if twist.cut_after.is_some() {
        let body = if resp.gzip {
            http::gzip_all(&body)
        } else {
            body
        };
        let h = headers(resp, 200, JSON, resp.gzip, None, Len::Fixed(body.len()));
        let mut out = http::head_bytes(200, &h);
        out.extend_from_slice(&body[..body.len() / 2]);
        conn.send(&out);
        let _ = conn.stream.shutdown(Shutdown::Both);
        return Flow::Close;
    }
    send_body(conn, resp, 200, JSON, body, None)
}

#[allow(clippy::too_many_arguments)]
fn serve_get(
    sh: &Shared,
    conn: &Conn,
    resp: &Resp,
    idx: usize,
    def: &ResourceDef,
    ns: Option<&str>,
    name: &str,
    meta: bool,
    twist: Twist,
) -> Flow {
    let key = match ns {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    };
    let obj = sh.state.lock().resources[idx].objects.get(&key).cloned();
    match obj {
        Some(o) if meta => {
            let body = json::body(&media::meta_item(&o), Ctx::Top, resp.pretty);
            send_twisted(conn, resp, body, twist)
        }
        Some(o) => send_twisted(conn, resp, json::body(&o, Ctx::Plain, resp.pretty), twist),
        None => {
            let mut details = json!({"name": name, "kind": def.resource});
            if !def.group.is_empty() {
                details["group"] = json!(def.group);
            }
            let message = format!("{} {} not found", def.resource, json::quote(name));
            send_status(conn, resp, 404, "NotFound", &message, Some(details), None)
        }
    }
}

/// A decoded continue token.
struct Continue {
    rv: i64,
    start: String,
}

fn encode_continue(rv: i64, last_key: &str) -> String {
    let start = format!("/{last_key}\u{0}");
    let raw = format!(
        "{{\"v\":\"meta.k8s.io/v1\",\"rv\":{rv},\"start\":{}}}",
        json::quote(&start)
    );
    util::base64_encode(raw.as_bytes())
}

fn decode_continue(token: &str) -> Result<Continue, String> {
    let bad = |why: &str| format!("continue key is not valid: {why}");
    let raw = util::base64_decode(token).ok_or_else(|| bad("illegal base64 data"))?;
    let v: Value = serde_json::from_slice(&raw).map_err(|e| bad(&e.to_string()))?;
    if v.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(bad("server does not recognize this encoded key"));
    }
    let rv = v
        .get("rv")
        .and_then(Value::as_i64)
        .ok_or_else(|| bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("encoded start key empty"))?;
    let start = start.strip_prefix('/').unwrap_or(start);
    let start = start.strip_suffix('\u{0}').unwrap_or(start);
    Ok(Continue {
        rv,
        start: start.to_string(),
    })
}

#[allow(clippy::too_many_arguments)]
fn serve_list(
    sh: &Shared,
    conn: &Conn,
    resp: &Resp,
    idx: usize,
    def: &ResourceDef,
    o: &Opts,
    filter: &Filter,
    meta: bool,
    twist: Twist,
) -> Flow {
    let st = sh.state.lock();
    let cur = st.rv;
    let compacted = st.resources[idx].compacted;
    let mut start: Option<String> = None;
    // None: the current state.
    let mut at: Option<u64> = None;
    if !o.cont.is_empty() {
        if !o.rv.is_empty() {
            drop(st);
            return bad_request(
                conn,
                resp,
                "specifying resource version is not allowed when using continue",
            );
        }
        let tok = match decode_continue(&o.cont) {
            Ok(t) => t,
            Err(m) => {
                drop(st);
                return bad_request(conn, resp, &m);
            }
        };
        if tok.rv >= 0 {
            let trv = tok.rv as u64;
            if trv < compacted {
                drop(st);
                let status = status_obj(
                    410,
                    "Expired",
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                    None,
                    json!({"continue": encode_continue(-1, &tok.start)}),
                );
                return send_status_obj(conn, resp, 410, &status, None);
            }
            if trv > cur {
                drop(st);
                return bad_request(
                    conn,
                    resp,
                    "continue key is not valid: resource version is in the future",
                );
            }
            at = Some(trv);
        }
        start = Some(tok.start);
    } else if let Some(r) = o.rv_num {
        if r > cur {
            let status = too_large_status(&o.rv, &st.rv_str(cur));
            drop(st);
            return send_status_obj(conn, resp, 504, &status, None);
        }
        if o.rv_match == "Exact" {
            if r < compacted {
                drop(st);
                return send_status_obj(conn, resp, 410, &list_expired_status(), None);
            }
            at = Some(r);
        }
    }
    let list_rv = at.unwrap_or(cur);
    let snapshot;
    let objects = match at {
        Some(r) if r < cur => {
            snapshot = st.snapshot_at(idx, r);
            &snapshot
        }
        _ => &st.resources[idx].objects,
    };
    let matching: Vec<(&String, &Arc<Value>)> = objects
        .iter()
        .filter(|(k, _)| start.as_ref().is_none_or(|s| k.as_str() > s.as_str()))
        .filter(|(_, v)| filter.matches(v))
        .collect();
    let take = if o.limit > 0 {
        (o.limit as usize).min(matching.len())
    } else {
        matching.len()
    };
    let mut list_meta = json!({"resourceVersion": st.rv_str(list_rv)});
    if take < matching.len() {
        let token_rv = if at.is_some() || start.is_none() || o.cont.is_empty() {
            list_rv as i64
        } else {
            // Continuing an inconsistent (rv -1) list stays inconsistent.
            -1
        };
        list_meta["continue"] = json!(encode_continue(token_rv, matching[take - 1].0));
        if !filter.has_selectors() {
            list_meta["remainingItemCount"] = json!(matching.len() - take);
        }
    }
    // The applied shard selector, echoed in the server's words, on every page of a full
    // object list; a PartialObjectMetadataList carries none (as kube-apiserver v1.36.3 does).
    if !filter.shards.is_empty() && !meta {
        list_meta["shardInfo"] = json!({"selector": store::shard_selector_text(&filter.shards)});
    }
    let items: Vec<Value> = matching[..take]
        .iter()
        .map(|(_, obj)| {
            if meta {
                // PartialObjectMetadata items keep their kind and apiVersion.
                return media::meta_item(obj);
            }
            let mut obj = (***obj).clone();
            if let Some(m) = obj.as_object_mut() {
                m.remove("kind");
                m.remove("apiVersion");
            }
            obj
        })
        .collect();
    drop(st);
    let v = if meta {
        // A nil slice in Go: an empty result is `"items": null` (m-metadata-list-pods).
        let items = if items.is_empty() {
            Value::Null
        } else {
            Value::Array(items)
        };
        json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": media::META_API_VERSION,
            "metadata": list_meta,
            "items": items,
        })
    } else {
        json!({
            "kind": format!("{}List", def.kind),
            "apiVersion": def.api_version(),
            "metadata": list_meta,
            "items": items,
        })
    };
    send_twisted(conn, resp, json::body(&v, Ctx::Top, resp.pretty), twist)
}

/// 200 with chunked headers, then nothing until the client or the server goes away.
/// A stalled watch counts as an open watch (it ignores events and `end_watches`).
fn stall(sh: &Shared, conn: &mut Conn, resp: &Resp, watch_of: Option<usize>) -> Flow {
    let (_guard, wrx) = match watch_of {
        Some(idx) => {
            let (tx, rx) = unbounded();
            let id = sh.state.lock().register(idx, tx, false);
            sh.cond.notify_all();
            (Some(WatchGuard { sh, id }), rx)
        }
        None => (None, never()),
    };
    let h = headers(resp, 200, JSON, resp.gzip, None, Len::Chunked);
    if !conn.send(&http::head_bytes(200, &h)) {
        return Flow::Close;
    }
    loop {
        select! {
            // The sender stays in the registry until the guard drops: never disconnected here.
            recv(wrx) -> _ => {}
            recv(conn.rx) -> m => match m {
                Ok(ConnMsg::Request(_)) | Ok(ConnMsg::Bad(_)) => {}
                Ok(ConnMsg::Closed) | Err(_) => return Flow::Close,
            },
            recv(conn.shutdown) -> _ => return Flow::Close,
        }
    }
}

/// 200, one ERROR event, end of stream.
fn stream_error(conn: &Conn, resp: &Resp, status: &Value) -> Flow {
    let h = headers(resp, 200, JSON, resp.gzip, None, Len::Chunked);
    let mut out = http::head_bytes(200, &h);
    let mut chunker = Chunker::new(resp.gzip, resp.members);
    let payload = chunker.payload(&frame("ERROR", &json::compact(status, Ctx::Top)));
    out.extend_from_slice(&Chunker::frame(&payload));
    if !conn.send(&out) {
        return flow(resp, false);
    }
    // The apiserver writes the event, flushes, and ends the body when its
    // handler returns: the last chunk comes in a write of its own.
    thread::sleep(Duration::from_millis(20));
    flow(resp, conn.send(&chunker.finish()))
}

/// Writes a watch body, applying CutAfter.
struct Out<'a> {
    stream: &'a TcpStream,
    chunker: Chunker,
    cut_after: Option<usize>,
    sent: usize,
}

impl Out<'_> {
    fn write(&self, data: &[u8]) -> bool {
        let mut s = self.stream;
        s.write_all(data).is_ok()
    }

    /// One event in one chunk; false once the connection is gone (or cut).
    fn event(&mut self, frame: &[u8]) -> bool {
        let payload = self.chunker.payload(frame);
        if self.cut_after == Some(self.sent) {
            let mut part = format!("{:x}\r\n", payload.len()).into_bytes();
            part.extend_from_slice(&payload[..payload.len() / 2]);
            self.write(&part);
            let _ = self.stream.shutdown(Shutdown::Both);
            return false;
        }
        self.sent += 1;
        self.write(&Chunker::frame(&payload))
    }

    fn raw(&mut self, data: &[u8]) -> bool {
        let payload = self.chunker.payload(data);
        self.write(&Chunker::frame(&payload))
    }

    fn finish(&mut self) -> bool {
        let end = self.chunker.finish();
        self.write(&end)
    }
}

/// Unregisters a watcher however its stream ends.
struct WatchGuard<'a> {
    sh: &'a Shared,
    id: u64,
}

impl Drop for WatchGuard<'_> {
    fn drop(&mut self) {
        self.sh.state.lock().unregister(self.id);
        self.sh.cond.notify_all();
    }
}

#[allow(clippy::too_many_arguments)]
fn serve_watch(
    sh: &Shared,
    conn: &mut Conn,
    resp: &Resp,
    idx: usize,
    def: &ResourceDef,
    o: &Opts,
    filter: &Filter,
    meta: bool,
    twist: Twist,
) -> Flow {
    let (tx, wrx) = unbounded();
    let mut frames: Vec<Vec<u8>> = Vec::new();
    let guard = {
        let mut st = sh.state.lock();
        let cur = st.rv;
        let cur_str = st.rv_str(cur);
        let res = &st.resources[idx];
        let mode = st.initial_events;
        // An Ignored server reads the request as if it had no sendInitialEvents.
        let send_initial = match mode {
            InitialEvents::Ignored => None,
            _ => o.send_initial,
        };
        let watch_list = st.watchlist
            && mode != InitialEvents::Ignored
            && (send_initial == Some(true) || (send_initial.is_none() && o.rv.is_empty()));
        let legacy_initial = (st.watchlist && send_initial.is_none() && o.rv == "0")
            || (mode == InitialEvents::Ignored && (o.rv.is_empty() || o.rv == "0"));
        if watch_list || legacy_initial {
            if o.rv_num.is_some_and(|r| r > cur) {
                drop(st);
                return stream_error(conn, resp, &too_large_status(&o.rv, &cur_str));
            }
            for obj in res.objects.values().rev().filter(|v| filter.matches(v)) {
                frames.push(frame("ADDED", &media::render(obj, meta)));
            }
            if watch_list && o.bookmarks && mode != InitialEvents::NoEndBookmark {
                frames.push(frame("BOOKMARK", &bookmark_json(def, &cur_str, true, meta)));
            }
            if twist.bookmark_only {
                // Nothing of the state: at most a bookmark where the client already was.
                frames.clear();
                if o.rv_num.is_some_and(|r| r > 0) {
                    frames.push(frame("BOOKMARK", &bookmark_json(def, &o.rv, false, meta)));
                }
            }
        } else {
            let from = match o.rv_num {
                None | Some(0) => cur,
                Some(r) => r,
            };
            if from < res.compacted {
                let oldest = st.rv_str(res.compacted);
                drop(st);
                return stream_error(conn, resp, &expired_status(&o.rv, &oldest));
            }
            if from > cur {
                drop(st);
                return stream_error(conn, resp, &too_large_status(&o.rv, &cur_str));
            }
            for ev in res.history.iter().filter(|e| e.rv > from) {
                if let Some((t, obj)) = filter.transform(ev) {
                    frames.push(frame(t, &media::render(&obj, meta)));
                }
            }
            if twist.bookmark_only {
                // Truthful: every event up to the bookmark's rv went out first.
                frames.push(frame(
                    "BOOKMARK",
                    &bookmark_json(def, &cur_str, false, meta),
                ));
            }
        }
        let id = st.register(idx, tx, o.bookmarks);
        sh.cond.notify_all();
        (WatchGuard { sh, id }, st.opaque)
    };
    let (guard, opaque) = guard;

    let h = headers(resp, 200, JSON, resp.gzip, None, Len::Chunked);
    let mut out = Out {
        stream: &conn.stream,
        chunker: Chunker::new(resp.gzip, resp.members),
        cut_after: twist.cut_after,
        sent: 0,
    };
    if !out.write(&http::head_bytes(200, &h)) {
        return Flow::Close;
    }
    if twist.garbage && !out.raw(b"this is not json\n") {
        return Flow::Close;
    }
    for f in &frames {
        if !out.event(f) {
            return Flow::Close;
        }
    }
    drop(frames);
    if twist.bookmark_only {
        drop(guard);
        let ok = out.finish();
        return flow(resp, ok);
    }
    let deadline = match o
        .timeout
        .and_then(|s| Instant::now().checked_add(Duration::from_secs(s)))
    {
        Some(t) => at(t),
        None => never(),
    };
    loop {
        select! {
            recv(wrx) -> m => match m {
                Ok(WatchMsg::Event(ev)) => {
                    if let Some((t, obj)) = filter.transform(&ev) {
                        if !out.event(&frame(t, &media::render(&obj, meta))) {
                            return Flow::Close;
                        }
                    }
                }
                Ok(WatchMsg::Bookmark(rv)) => {
                    let rv = store::format_rv(opaque, rv);
                    if o.bookmarks && !out.event(&frame("BOOKMARK", &bookmark_json(def, &rv, false, meta))) {
                        return Flow::Close;
                    }
                }
                Ok(WatchMsg::End) | Err(_) => break,
            },
            recv(conn.rx) -> m => match m {
                Ok(ConnMsg::Closed) | Err(_) => return Flow::Close,
                Ok(other) => conn.pending.push_back(other),
            },
            recv(conn.shutdown) -> _ => return Flow::Close,
            recv(deadline) -> _ => break,
        }
    }
    drop(guard);
    let ok = out.finish();
    flow(resp, ok)
}
