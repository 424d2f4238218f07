//! Tests that talk raw HTTP/1.1 to the fake over a `TcpStream`. Every socket has a read
//! timeout, so a broken server fails a test instead of hanging it; nothing sleeps to
//! synchronise (the `wait_*` methods and the stream itself do that).

use super::*;
use serde_json::json;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(10);
const WATCH_LIST: &str =
    "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";

struct Head {
    code: u16,
    reason: String,
    headers: Vec<(String, String)>,
}

impl Head {
    fn get(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn names(&self) -> Vec<&str> {
        self.headers.iter().map(|(k, _)| k.as_str()).collect()
    }
}

struct Client {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Client {
    fn connect(api: &FakeApi) -> Client {
        let s = TcpStream::connect(api.url().trim_start_matches("http://")).unwrap();
        s.set_read_timeout(Some(T)).unwrap();
        Client {
            r: BufReader::new(s.try_clone().unwrap()),
            w: s,
        }
    }

    fn send_raw(&mut self, raw: &str) {
        self.w.write_all(raw.as_bytes()).unwrap();
    }

    fn send(&mut self, target: &str, headers: &[&str]) {
        let mut req = format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        for h in headers {
            req.push_str(h);
            req.push_str("\r\n");
        }
        req.push_str("\r\n");
        self.send_raw(&req);
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.r.read_line(&mut l).unwrap();
        l
    }

    fn head(&mut self) -> Head {
        let status = self.line();
        assert!(status.starts_with("HTTP/1.1 "), "status line {status:?}");
        let code = status[9..12].parse().unwrap();
        let reason = status[13..].trim_end().to_string();
        let mut headers = Vec::new();
        loop {
            let l = self.line();
            assert!(l.ends_with("\r\n"), "header line {l:?}");
            let l = l.trim_end();
            if l.is_empty() {
                break;
            }
            let (k, v) = l.split_once(": ").unwrap();
            headers.push((k.to_string(), v.to_string()));
        }
        Head {
            code,
            reason,
            headers,
        }
    }

    /// A Content-Length body.
    fn body(&mut self, h: &Head) -> Vec<u8> {
        let n: usize = h
            .get("Content-Length")
            .expect("Content-Length")
            .parse()
            .unwrap();
        let mut b = vec![0; n];
        self.r.read_exact(&mut b).unwrap();
        b
    }

    /// One chunk's payload, or None for the terminating chunk.
    fn chunk(&mut self) -> Option<Vec<u8>> {
        let size_line = self.line();
        assert!(size_line.ends_with("\r\n"), "chunk size line {size_line:?}");
        let n = usize::from_str_radix(size_line.trim_end(), 16).unwrap();
        let mut b = vec![0; n + 2];
        self.r.read_exact(&mut b).unwrap();
        assert_eq!(&b[n..], b"\r\n");
        b.truncate(n);
        (n > 0).then_some(b)
    }

    /// One watch event: exactly one JSON document plus "\n" in one chunk.
    fn event(&mut self) -> Value {
        let c = self.chunk().expect("an event, not the end of the stream");
        assert_eq!(c.last(), Some(&b'\n'));
        assert_eq!(c.iter().filter(|b| **b == b'\n').count(), 1);
        serde_json::from_slice(&c).unwrap()
    }

    fn end(&mut self) {
        assert!(self.chunk().is_none(), "expected the terminating chunk");
    }

    fn get_json(&mut self, target: &str, headers: &[&str]) -> (Head, Value) {
        self.send(target, headers);
        let h = self.head();
        let b = self.body(&h);
        (h, serde_json::from_slice(&b).unwrap())
    }

    /// True if the server closed the connection (EOF) within the read timeout.
    fn at_eof(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.r.read(&mut b), Ok(0))
    }
}

fn get(api: &FakeApi, target: &str) -> (Head, Value) {
    Client::connect(api).get_json(target, &[])
}

fn names(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

fn rv_of(o: &Value) -> u64 {
    o["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn watch_list_shape_then_live_events() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::pod("wire-a", "pod-a1"));
    api.apply("pods", FakeApi::pod("wire-a", "pod-a2"));
    api.apply("pods", FakeApi::pod("wire-b", "pod-b1"));
    let mut c = Client::connect(&api);
    c.send(&format!("/api/v1/pods?{WATCH_LIST}"), &[]);
    let h = c.head();
    assert_eq!((h.code, h.reason.as_str()), (200, "OK"));
    assert_eq!(
        h.names(),
        [
            "Audit-Id",
            "Cache-Control",
            "Content-Type",
            "X-Kubernetes-Pf-Flowschema-Uid",
            "X-Kubernetes-Pf-Prioritylevel-Uid",
            "Date",
            "Transfer-Encoding"
        ]
    );
    assert_eq!(h.get("Content-Type"), Some("application/json"));
    assert_eq!(h.get("Cache-Control"), Some("no-cache, private"));
    assert_eq!(h.get("Transfer-Encoding"), Some("chunked"));
    assert_eq!(h.get("Audit-Id").unwrap().len(), 36);

    let initial: Vec<Value> = (0..3).map(|_| c.event()).collect();
    for e in &initial {
        assert_eq!(e["type"], "ADDED");
        assert_eq!(e["object"]["kind"], "Pod");
        assert_eq!(e["object"]["apiVersion"], "v1");
        assert_eq!(e["object"]["status"]["phase"], "Pending");
        assert_eq!(e["object"]["metadata"]["uid"].as_str().unwrap().len(), 36);
    }
    let objs: Vec<Value> = initial.iter().map(|e| e["object"].clone()).collect();
    assert_eq!(names(&objs), ["pod-b1", "pod-a2", "pod-a1"]);
    let rvs: Vec<u64> = objs.iter().map(rv_of).collect();
    assert!(
        rvs.windows(2).any(|w| w[0] > w[1]),
        "not in rv order: {rvs:?}"
    );

    let bookmark = c.chunk().unwrap();
    let cur = api.current_rv();
    assert_eq!(
        String::from_utf8(bookmark).unwrap(),
        format!(
            "{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":\"{cur}\",\"annotations\":{{\"k8s.io/initial-events-end\":\"true\"}}}},\"spec\":{{\"containers\":null}},\"status\":{{}}}}}}\n"
        )
    );
    assert!(api.wait_open_watches(1, T));

    let mut a1 = api.get("pods", Some("wire-a"), "pod-a1").unwrap();
    let uid = a1["metadata"]["uid"].clone();
    a1["metadata"]["labels"]["stage"] = json!("modified");
    let rv_mod = api.apply("pods", a1);
    let e = c.event();
    assert_eq!(e["type"], "MODIFIED");
    assert_eq!(rv_of(&e["object"]), rv_mod);
    assert_eq!(e["object"]["metadata"]["uid"], uid);
    assert_eq!(e["object"]["metadata"]["labels"]["stage"], "modified");

    let rv_add = api.apply("pods", FakeApi::pod("wire-a", "pod-live"));
    let e = c.event();
    assert_eq!(
        (e["type"].as_str(), rv_of(&e["object"])),
        (Some("ADDED"), rv_add)
    );

    let rv_del = api.delete("pods", Some("wire-a"), "pod-live").unwrap();
    assert!(rv_del > rv_add);
    let e = c.event();
    assert_eq!(e["type"], "DELETED");
    assert_eq!(rv_of(&e["object"]), rv_del);
    assert_eq!(e["object"]["metadata"]["name"], "pod-live");
    assert_eq!(api.delete("pods", Some("wire-a"), "pod-live"), None);
    assert_eq!(api.objects("pods").len(), 3);
}

#[test]
fn chunk_framing_bytes_and_keep_alive() {
    let api = FakeApi::start();
    api.apply(
        "configmaps",
        json!({"metadata":{"name":"cm-1","namespace":"wire-a"},"data":{"k":"v1"}}),
    );
    let mut c = Client::connect(&api);
    c.send(
        &format!("/api/v1/namespaces/wire-a/configmaps?{WATCH_LIST}"),
        &[],
    );
    assert_eq!(c.head().code, 200);
    let size_line = c.line();
    let n = usize::from_str_radix(size_line.trim_end(), 16).unwrap();
    assert_eq!(size_line, format!("{n:x}\r\n"));
    let mut payload = vec![0; n + 2];
    c.r.read_exact(&mut payload).unwrap();
    // Exactly `{"type":"ADDED","object":` + the stored object as serde_json writes it + `}\n`.
    let stored = api.get("configmaps", Some("wire-a"), "cm-1").unwrap();
    let mut want = b"{\"type\":\"ADDED\",\"object\":".to_vec();
    want.extend_from_slice(&serde_json::to_vec(&stored).unwrap());
    want.extend_from_slice(b"}\n\r\n");
    assert_eq!(
        String::from_utf8(payload).unwrap(),
        String::from_utf8(want).unwrap()
    );
    let bookmark = c.chunk().unwrap();
    assert!(bookmark.ends_with(b"\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}\n"));
    assert!(api.wait_open_watches(1, T));
    api.end_watches();
    let mut end = [0u8; 5];
    c.r.read_exact(&mut end).unwrap();
    assert_eq!(&end, b"0\r\n\r\n");
    assert!(api.wait_open_watches(0, T));

    // Keep-alive: the same connection serves a list next, with Content-Length.
    let (h, list) = c.get_json("/api/v1/namespaces/wire-a/configmaps", &[]);
    assert_eq!(h.code, 200);
    assert!(h.get("Transfer-Encoding").is_none());
    assert_eq!(h.names().last(), Some(&"Content-Length"));
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["items"][0]["data"]["k"], "v1");
    assert!(list["items"][0].get("kind").is_none());
    assert!(list["items"][0].get("apiVersion").is_none());
    assert_eq!(api.requests().len(), 2);
}

#[test]
fn compaction_gives_410_in_stream_and_on_lists() {
    let api = FakeApi::start();
    for i in 0..3 {
        api.apply(
            "configmaps",
            FakeApi::object(Some("wire-a"), &format!("cm-{i}")),
        );
    }
    let old = api.current_rv();
    let (_, page1) = get(&api, "/api/v1/configmaps?limit=1");
    let token = page1["metadata"]["continue"].as_str().unwrap().to_string();
    for n in 0..5 {
        api.apply(
            "configmaps",
            json!({"metadata":{"name":"cm-0","namespace":"wire-a"},"data":{"n":n.to_string()}}),
        );
    }
    api.compact();
    let c_rv = api.current_rv();

    // Watch from a compacted rv: 200, one ERROR 410 event, end of stream.
    let mut c = Client::connect(&api);
    c.send(
        &format!("/api/v1/namespaces/wire-a/configmaps?watch=true&resourceVersion={old}"),
        &[],
    );
    assert_eq!(c.head().code, 200);
    let raw = c.chunk().unwrap();
    assert_eq!(
        String::from_utf8(raw).unwrap(),
        format!("{{\"type\":\"ERROR\",\"object\":{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{{}},\"status\":\"Failure\",\"message\":\"too old resource version: {old} ({c_rv})\",\"reason\":\"Expired\",\"code\":410}}}}\n")
    );
    c.end();
    assert_eq!(api.open_watches(), 0);

    // Exact list at a compacted rv: HTTP 410 Gone, like c3.
    let mut c = Client::connect(&api);
    c.send(
        &format!(
            "/api/v1/namespaces/wire-a/configmaps?resourceVersion={old}&resourceVersionMatch=Exact"
        ),
        &["User-Agent: curl/8.14.1"],
    );
    let h = c.head();
    assert_eq!((h.code, h.reason.as_str()), (410, "Gone"));
    assert_eq!(
        String::from_utf8(c.body(&h)).unwrap(),
        "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"status\": \"Failure\",\n  \"message\": \"The resourceVersion for the provided list is too old.\",\n  \"reason\": \"Expired\",\n  \"code\": 410\n}"
    );

    // Continue token from before the compaction: 410 with an inconsistent (rv -1) token.
    let (h, st) = get(
        &api,
        &format!("/api/v1/configmaps?limit=1&continue={token}"),
    );
    assert_eq!(h.code, 410);
    assert_eq!(st["reason"], "Expired");
    assert!(st["message"]
        .as_str()
        .unwrap()
        .starts_with("The provided continue parameter is too old"));
    let new_token = st["metadata"]["continue"].as_str().unwrap();
    let decoded = String::from_utf8(util::base64_decode(new_token).unwrap()).unwrap();
    assert!(decoded.contains("\"rv\":-1"), "{decoded}");
    let (h, rest) = get(
        &api,
        &format!("/api/v1/configmaps?limit=5&continue={new_token}"),
    );
    assert_eq!(h.code, 200);
    assert_eq!(names(rest["items"].as_array().unwrap()), ["cm-1", "cm-2"]);

    // A watch-list at the old rv still works (NotOlderThan), like c6.
    let mut c = Client::connect(&api);
    c.send(
        &format!("/api/v1/namespaces/wire-a/configmaps?{WATCH_LIST}&resourceVersion={old}"),
        &[],
    );
    assert_eq!(c.head().code, 200);
    for _ in 0..3 {
        assert_eq!(c.event()["type"], "ADDED");
    }
    assert_eq!(
        c.event()["object"]["metadata"]["resourceVersion"],
        c_rv.to_string()
    );

    // A watch from the compaction point goes on live.
    let mut c = Client::connect(&api);
    c.send(
        &format!("/api/v1/configmaps?watch=true&resourceVersion={c_rv}"),
        &[],
    );
    assert_eq!(c.head().code, 200);
    assert!(api.wait_open_watches(2, T));
    let rv = api.apply("configmaps", FakeApi::object(Some("wire-b"), "new"));
    let e = c.event();
    assert_eq!(
        (e["type"].as_str(), rv_of(&e["object"])),
        (Some("ADDED"), rv)
    );
}

#[test]
fn watch_replays_history_and_exact_list_sees_the_past() {
    let api = FakeApi::start();
    let rv1 = api.apply("pods", FakeApi::object(Some("ns"), "a"));
    let rv2 = api.apply("pods", FakeApi::object(Some("ns"), "b"));
    let rv3 = api.apply(
        "pods",
        json!({"metadata":{"name":"a","namespace":"ns","labels":{"x":"y"}}}),
    );
    let rv4 = api.delete("pods", Some("ns"), "b").unwrap();
    let mut c = Client::connect(&api);
    c.send(&format!("/api/v1/pods?watch=1&resourceVersion={rv1}"), &[]);
    assert_eq!(c.head().code, 200);
    let got: Vec<(String, u64)> = (0..3)
        .map(|_| {
            let e = c.event();
            (e["type"].as_str().unwrap().to_string(), rv_of(&e["object"]))
        })
        .collect();
    assert_eq!(
        got,
        [
            ("ADDED".to_string(), rv2),
            ("MODIFIED".to_string(), rv3),
            ("DELETED".to_string(), rv4)
        ]
    );
    let (h, list) = get(
        &api,
        &format!("/api/v1/pods?resourceVersion={rv2}&resourceVersionMatch=Exact"),
    );
    assert_eq!(h.code, 200);
    assert_eq!(list["metadata"]["resourceVersion"], rv2.to_string());
    assert_eq!(names(list["items"].as_array().unwrap()), ["a", "b"]);
    assert!(list["items"][0]["metadata"].get("labels").is_none());
    // A future rv is too large.
    let (h, st) = get(&api, &format!("/api/v1/pods?resourceVersion={}", rv4 + 10));
    assert_eq!(h.code, 504);
    assert_eq!(
        st["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
}

#[test]
fn invalid_options_get_422_like_the_real_server() {
    let api = FakeApi::start();
    let e = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        "reason": "Invalid",
        "details": {"group": "meta.k8s.io", "kind": "ListOptions", "causes": [{
            "reason": "FieldValueForbidden",
            "message": "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            "field": "resourceVersionMatch"}]},
        "code": 422
    });
    let (h, st) = get(
        &api,
        "/api/v1/pods?watch=true&sendInitialEvents=true&allowWatchBookmarks=true",
    );
    assert_eq!((h.code, h.reason.as_str()), (422, "Unprocessable Entity"));
    assert_eq!(st, e);

    let (h, st) = get(
        &api,
        "/api/v1/pods?watch=true&resourceVersionMatch=NotOlderThan",
    );
    assert_eq!(h.code, 422);
    assert_eq!(st["message"], "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided");

    let (h, st) = get(
        &api,
        "/api/v1/pods?sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
    );
    assert_eq!(h.code, 422);
    assert_eq!(st["message"], "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list]");
    assert_eq!(st["details"]["causes"].as_array().unwrap().len(), 2);

    api.set_watchlist(false);
    let (h, st) = get(&api, &format!("/api/v1/pods?{WATCH_LIST}"));
    assert_eq!(h.code, 422);
    assert_eq!(st["reason"], "Invalid");
    assert_eq!(st["message"], "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled");
    assert_eq!(st["details"]["causes"][0]["field"], "sendInitialEvents");

    // Bad values are 400s, not panics.
    for q in [
        "limit=x",
        "watch=1&timeoutSeconds=y",
        "resourceVersion=abc",
        "labelSelector=a%20b%20c",
        "continue=%21%21",
        "fieldSelector=nonsense",
    ] {
        let (h, st) = get(&api, &format!("/api/v1/pods?{q}"));
        assert_eq!(
            (h.code, st["reason"].as_str()),
            (400, Some("BadRequest")),
            "{q}"
        );
    }
}

#[test]
fn watch_list_off_and_legacy_watch() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::object(Some("a"), "old"));
    // WatchList on: a watch without resourceVersion gets the initial events + bookmark (k capture).
    let mut c = Client::connect(&api);
    c.send("/api/v1/pods?watch=true&allowWatchBookmarks=true", &[]);
    assert_eq!(c.head().code, 200);
    assert_eq!(c.event()["type"], "ADDED");
    assert_eq!(
        c.event()["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    drop(c);
    assert!(api.wait_open_watches(0, T));

    api.set_watchlist(false);
    let mut c = Client::connect(&api);
    c.send("/api/v1/pods?watch=true&allowWatchBookmarks=true", &[]);
    assert_eq!(c.head().code, 200);
    assert!(api.wait_open_watches(1, T));
    api.apply("pods", FakeApi::object(Some("a"), "new"));
    let e = c.event();
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("new"))
    );

    // A watch-list at a future rv: ERROR 504 ResourceVersionTooLarge, like i.
    api.set_watchlist(true);
    let future = api.current_rv() + 100_000;
    let mut c = Client::connect(&api);
    c.send(
        &format!("/api/v1/pods?{WATCH_LIST}&resourceVersion={future}"),
        &[],
    );
    assert_eq!(c.head().code, 200);
    let e = c.event();
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 504);
    assert_eq!(
        e["object"]["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    c.end();
}

#[test]
fn paged_list_over_three_pages_is_consistent() {
    let api = FakeApi::start();
    for (ns, name) in [
        ("b", "cm-1"),
        ("a", "cm-2"),
        ("a", "cm-1"),
        ("c", "cm-1"),
        ("b", "cm-2"),
    ] {
        api.apply(
            "configmaps",
            json!({"metadata":{"name":name,"namespace":ns},"data":{"v":"1"}}),
        );
    }
    let (h, p1) = get(&api, "/api/v1/configmaps?limit=2");
    assert_eq!(h.code, 200);
    let list_rv = p1["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(p1["metadata"]["remainingItemCount"], 3);
    let t1 = p1["metadata"]["continue"].as_str().unwrap();
    let decoded = String::from_utf8(util::base64_decode(t1).unwrap()).unwrap();
    assert_eq!(
        decoded,
        format!("{{\"v\":\"meta.k8s.io/v1\",\"rv\":{list_rv},\"start\":\"/a/cm-2\\u0000\"}}")
    );

    // Changes between pages don't show up: the pages are a snapshot at list_rv.
    api.apply(
        "configmaps",
        json!({"metadata":{"name":"cm-1","namespace":"c"},"data":{"v":"2"}}),
    );
    api.apply("configmaps", FakeApi::object(Some("b"), "cm-0"));
    api.delete("configmaps", Some("b"), "cm-2");

    let (_, p2) = get(&api, &format!("/api/v1/configmaps?limit=2&continue={t1}"));
    assert_eq!(p2["metadata"]["resourceVersion"], list_rv.as_str());
    assert_eq!(p2["metadata"]["remainingItemCount"], 1);
    let t2 = p2["metadata"]["continue"].as_str().unwrap();
    let (_, p3) = get(&api, &format!("/api/v1/configmaps?limit=2&continue={t2}"));
    assert!(p3["metadata"].get("continue").is_none());
    assert!(p3["metadata"].get("remainingItemCount").is_none());
    let mut all = Vec::new();
    for p in [&p1, &p2, &p3] {
        assert_eq!(p["kind"], "ConfigMapList");
        for item in p["items"].as_array().unwrap() {
            assert!(item.get("kind").is_none() && item.get("apiVersion").is_none());
            all.push(format!(
                "{}/{}={}",
                item["metadata"]["namespace"].as_str().unwrap(),
                item["metadata"]["name"].as_str().unwrap(),
                item["data"]["v"].as_str().unwrap_or("")
            ));
        }
    }
    assert_eq!(
        all,
        ["a/cm-1=1", "a/cm-2=1", "b/cm-1=1", "b/cm-2=1", "c/cm-1=1"]
    );

    // Selectors: no remainingItemCount (as the real server).
    let (_, sel) = get(
        &api,
        "/api/v1/configmaps?limit=1&fieldSelector=metadata.name%3Dcm-1",
    );
    assert_eq!(names(sel["items"].as_array().unwrap()), ["cm-1"]);
    assert!(sel["metadata"]["continue"].is_string());
    assert!(sel["metadata"].get("remainingItemCount").is_none());
    let (_, ns) = get(
        &api,
        "/api/v1/namespaces/b/configmaps?fieldSelector=metadata.namespace!%3Da",
    );
    assert_eq!(names(ns["items"].as_array().unwrap()), ["cm-0", "cm-1"]);
}

#[test]
fn unauthorized_and_forbidden_bodies_match_the_captures() {
    let api = FakeApi::start();
    api.require_token(Some("s3cret"));
    let mut c = Client::connect(&api);
    c.send(
        "/api/v1/pods",
        &[
            "Authorization: Bearer not-a-valid-token",
            "User-Agent: curl/8.14.1",
        ],
    );
    let h = c.head();
    assert_eq!((h.code, h.reason.as_str()), (401, "Unauthorized"));
    assert_eq!(
        h.names(),
        [
            "Audit-Id",
            "Cache-Control",
            "Content-Type",
            "Date",
            "Content-Length"
        ]
    );
    assert_eq!(
        String::from_utf8(c.body(&h)).unwrap(),
        "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"status\": \"Failure\",\n  \"message\": \"Unauthorized\",\n  \"reason\": \"Unauthorized\",\n  \"code\": 401\n}"
    );
    // Without curl's User-Agent the body is compact, with a newline, like Go's json.Encoder.
    c.send("/api/v1/pods", &[]);
    let h = c.head();
    assert_eq!(
        String::from_utf8(c.body(&h)).unwrap(),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}\n"
    );

    api.forbid("pods", true);
    let auth = "Authorization: Bearer s3cret";
    c.send(
        &format!("/api/v1/namespaces/wire-a/pods?{WATCH_LIST}"),
        &[auth, "User-Agent: curl/8.14.1"],
    );
    let h = c.head();
    assert_eq!(
        (h.code, h.get("X-Content-Type-Options")),
        (403, Some("nosniff"))
    );
    assert_eq!(
        String::from_utf8(c.body(&h)).unwrap(),
        "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"status\": \"Failure\",\n  \"message\": \"pods is forbidden: User \\\"nobody\\\" cannot watch resource \\\"pods\\\" in API group \\\"\\\" in the namespace \\\"wire-a\\\"\",\n  \"reason\": \"Forbidden\",\n  \"details\": {\n    \"kind\": \"pods\"\n  },\n  \"code\": 403\n}"
    );
    let (h, st) = c.get_json("/api/v1/pods", &[auth]);
    assert_eq!(h.code, 403);
    assert_eq!(st["message"], "pods is forbidden: User \"nobody\" cannot list resource \"pods\" in API group \"\" at the cluster scope");
    api.forbid("pods", false);
    let (h, _) = c.get_json("/api/v1/pods", &[auth]);
    assert_eq!(h.code, 200);
    api.require_token(None);
    let (h, _) = c.get_json("/api/v1/pods", &[]);
    assert_eq!(h.code, 200);
}

#[test]
fn fault_status_with_retry_after_then_normal() {
    let api = FakeApi::start();
    api.push_fault(
        "pods",
        Fault::Status {
            code: 429,
            reason: "TooManyRequests".into(),
            message: "Too many requests, please try again later.".into(),
            retry_after: Some(3),
        },
    );
    api.push_fault(
        "pods",
        Fault::Status {
            code: 500,
            reason: "InternalError".into(),
            message: "boom".into(),
            retry_after: None,
        },
    );
    let mut c = Client::connect(&api);
    let (h, st) = c.get_json("/api/v1/pods?watch=true", &[]);
    assert_eq!(
        (h.code, h.reason.as_str(), h.get("Retry-After")),
        (429, "Too Many Requests", Some("3"))
    );
    assert_eq!(st["details"]["retryAfterSeconds"], 3);
    assert_eq!(st["reason"], "TooManyRequests");
    let (h, st) = c.get_json("/api/v1/pods", &[]);
    assert_eq!((h.code, h.get("Retry-After")), (500, None));
    assert_eq!(st["message"], "boom");
    let (h, st) = c.get_json("/api/v1/pods", &[]);
    assert_eq!(h.code, 200);
    assert_eq!(st["kind"], "PodList");
}

#[test]
fn fault_errors_in_stream() {
    let api = FakeApi::start();
    api.push_fault("pods", Fault::ExpiredInStream);
    api.push_fault("pods", Fault::TooLargeInStream);
    let mut c = Client::connect(&api);
    c.send("/api/v1/pods?watch=true&resourceVersion=1", &[]);
    assert_eq!(c.head().code, 200);
    let e = c.event();
    assert_eq!(e["type"], "ERROR");
    assert_eq!(
        (e["object"]["code"].as_u64(), e["object"]["reason"].as_str()),
        (Some(410), Some("Expired"))
    );
    assert!(e["object"]["message"]
        .as_str()
        .unwrap()
        .starts_with("too old resource version: 1 ("));
    c.end();
    // The connection stays usable, like after any finished response.
    c.send(&format!("/api/v1/pods?{WATCH_LIST}"), &[]);
    assert_eq!(c.head().code, 200);
    let e = c.event();
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 504);
    assert_eq!(e["object"]["reason"], "Timeout");
    assert_eq!(
        e["object"]["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    assert_eq!(e["object"]["details"]["retryAfterSeconds"], 1);
    c.end();
    assert_eq!(api.open_watches(), 0);
    // Lists get the HTTP form.
    api.push_fault("pods", Fault::ExpiredInStream);
    let (h, _) = c.get_json("/api/v1/pods", &[]);
    assert_eq!(h.code, 410);
}

#[test]
fn fault_cut_after_n_events() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::pod("a", "p1"));
    api.apply("pods", FakeApi::pod("a", "p2"));
    api.push_fault("pods", Fault::CutAfter(1));
    let mut c = Client::connect(&api);
    c.send(&format!("/api/v1/pods?{WATCH_LIST}"), &[]);
    assert_eq!(c.head().code, 200);
    assert_eq!(c.event()["type"], "ADDED");
    let size_line = c.line();
    let n = usize::from_str_radix(size_line.trim_end(), 16).unwrap();
    let mut rest = Vec::new();
    c.r.read_to_end(&mut rest).unwrap();
    assert!(
        !rest.is_empty() && rest.len() < n,
        "got {} of {n}",
        rest.len()
    );
    assert!(api.wait_open_watches(0, T));

    // Nothing queued yet: the cut comes with the next event.
    api.push_fault("pods", Fault::CutAfter(0));
    let mut c = Client::connect(&api);
    c.send(
        &format!(
            "/api/v1/pods?watch=true&resourceVersion={}",
            api.current_rv()
        ),
        &[],
    );
    assert_eq!(c.head().code, 200);
    assert!(api.wait_open_watches(1, T));
    api.apply("pods", FakeApi::pod("a", "p3"));
    let size_line = c.line();
    let n = usize::from_str_radix(size_line.trim_end(), 16).unwrap();
    let mut rest = Vec::new();
    c.r.read_to_end(&mut rest).unwrap();
    assert!(!rest.is_empty() && rest.len() < n);

    // A list: headers, half the body, close.
    api.push_fault("pods", Fault::CutAfter(0));
    let mut c = Client::connect(&api);
    c.send("/api/v1/pods", &[]);
    let h = c.head();
    let n: usize = h.get("Content-Length").unwrap().parse().unwrap();
    let mut rest = Vec::new();
    c.r.read_to_end(&mut rest).unwrap();
    assert!(!rest.is_empty() && rest.len() < n);
}

#[test]
fn fault_stall_and_garbage() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::object(Some("a"), "p"));
    api.push_fault("pods", Fault::Stall);
    api.push_fault("pods", Fault::Garbage);
    let mut c = Client::connect(&api);
    c.send(&format!("/api/v1/pods?{WATCH_LIST}"), &[]);
    let h = c.head();
    assert_eq!((h.code, h.get("Transfer-Encoding")), (200, Some("chunked")));
    c.w.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut b = [0u8; 1];
    let err = c.r.read(&mut b).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{err:?}"
    );
    // A stalled watch is an open watch, deaf to events and end_watches, until the client goes.
    assert_eq!(api.open_watches(), 1);
    api.apply("pods", FakeApi::object(Some("a"), "q"));
    api.end_watches();
    let err = c.r.read(&mut b).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{err:?}"
    );
    drop(c);
    assert!(api.wait_open_watches(0, T));

    let mut c = Client::connect(&api);
    c.send(&format!("/api/v1/pods?{WATCH_LIST}"), &[]);
    assert_eq!(c.head().code, 200);
    assert_eq!(c.chunk().unwrap(), b"this is not json\n");
    assert_eq!(c.event()["type"], "ADDED");
    assert_eq!(c.event()["type"], "ADDED");
    assert_eq!(c.event()["type"], "BOOKMARK");

    api.push_fault("pods", Fault::Garbage);
    let mut c = Client::connect(&api);
    c.send("/api/v1/pods", &[]);
    let h = c.head();
    assert_eq!(c.body(&h), b"this is not json\n");
}

#[test]
fn drop_is_prompt_with_stalled_and_streaming_clients() {
    let api = FakeApi::start();
    api.start_churn(2, 3, Duration::from_millis(20));
    api.push_fault("pods", Fault::Stall);
    let mut stalled = Client::connect(&api);
    stalled.send("/api/v1/pods?watch=true", &[]);
    assert_eq!(stalled.head().code, 200);
    let mut watching = Client::connect(&api);
    watching.send("/api/v1/configmaps?watch=true", &[]);
    assert_eq!(watching.head().code, 200);
    let mut half = Client::connect(&api);
    half.send_raw("GET /api/v1/pods HTTP/1.1\r\nHost: x\r\n");
    let _idle = Client::connect(&api);
    assert!(api.wait_open_watches(2, T));
    assert!(api.wait_requests(2, T));
    let t0 = Instant::now();
    drop(api);
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(1), "drop took {took:?}");
    assert!(stalled.at_eof());
    assert!(half.at_eof());
}

#[test]
fn client_going_away_closes_the_watch() {
    let api = FakeApi::start();
    let mut c = Client::connect(&api);
    c.send("/api/v1/pods?watch=true", &[]);
    assert_eq!(c.head().code, 200);
    assert!(api.wait_open_watches(1, T));
    drop(c);
    assert!(api.wait_open_watches(0, T));
    // And a client that disappears mid-stream is noticed by the write error too.
    let mut c = Client::connect(&api);
    c.send("/api/v1/pods?watch=true", &[]);
    assert_eq!(c.head().code, 200);
    assert!(api.wait_open_watches(1, T));
    c.w.shutdown(std::net::Shutdown::Both).unwrap();
    for i in 0..3 {
        api.apply("pods", FakeApi::object(Some("x"), &format!("p{i}")));
    }
    assert!(api.wait_open_watches(0, T));
}

#[test]
fn timeout_seconds_ends_the_stream_normally() {
    let api = FakeApi::start();
    let mut c = Client::connect(&api);
    let t0 = Instant::now();
    c.send("/api/v1/pods?watch=true&timeoutSeconds=1", &[]);
    assert_eq!(c.head().code, 200);
    c.end();
    assert!(t0.elapsed() >= Duration::from_millis(900));
    assert!(api.wait_open_watches(0, T));
}

#[test]
fn periodic_bookmarks_only_for_those_who_asked() {
    let api = FakeApi::start();
    let rv = api.current_rv();
    let mut with = Client::connect(&api);
    with.send(&format!("/api/v1/namespaces/wire-b/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion={rv}"), &[]);
    assert_eq!(with.head().code, 200);
    let mut without = Client::connect(&api);
    without.send(
        &format!("/api/v1/configmaps?watch=true&resourceVersion={rv}"),
        &[],
    );
    assert_eq!(without.head().code, 200);
    assert!(api.wait_open_watches(2, T));
    api.send_bookmarks();
    assert_eq!(
        String::from_utf8(with.chunk().unwrap()).unwrap(),
        format!("{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":\"{rv}\"}}}}}}\n")
    );
    api.apply("configmaps", FakeApi::object(Some("wire-a"), "cm"));
    assert_eq!(without.event()["type"], "ADDED");
}

#[test]
fn selectors_on_watches_move_objects_in_and_out() {
    let api = FakeApi::start();
    api.apply(
        "pods",
        json!({"metadata":{"name":"p","namespace":"a","labels":{"app":"web"}}}),
    );
    api.apply(
        "pods",
        json!({"metadata":{"name":"q","namespace":"a","labels":{"app":"db"}}}),
    );
    let (_, list) = get(&api, "/api/v1/pods?labelSelector=app%3Dweb");
    assert_eq!(names(list["items"].as_array().unwrap()), ["p"]);
    let (_, list) = get(&api, "/api/v1/pods?labelSelector=app+in+(web,db),app!%3Ddb");
    assert_eq!(names(list["items"].as_array().unwrap()), ["p"]);
    let mut c = Client::connect(&api);
    c.send(
        &format!("/api/v1/namespaces/a/pods?{WATCH_LIST}&labelSelector=app%3Dweb"),
        &[],
    );
    assert_eq!(c.head().code, 200);
    assert_eq!(c.event()["object"]["metadata"]["name"], "p");
    assert_eq!(c.event()["type"], "BOOKMARK");
    api.apply(
        "pods",
        json!({"metadata":{"name":"p","namespace":"a","labels":{"app":"db"}}}),
    );
    let e = c.event();
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("DELETED"), Some("p"))
    );
    api.apply(
        "pods",
        json!({"metadata":{"name":"q","namespace":"a","labels":{"app":"web"}}}),
    );
    let e = c.event();
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("q"))
    );
    api.apply(
        "pods",
        json!({"metadata":{"name":"z","namespace":"other","labels":{"app":"web"}}}),
    );
    api.apply(
        "pods",
        json!({"metadata":{"name":"q","namespace":"a","labels":{"app":"web","v":"2"}}}),
    );
    let e = c.event();
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("MODIFIED"), Some("q"))
    );
}

#[test]
fn gzip_streams_and_bodies() {
    let api = FakeApi::start();
    api.set_gzip(true);
    api.apply("pods", FakeApi::pod("a", "p"));
    let mut c = Client::connect(&api);
    c.send(
        &format!("/api/v1/pods?{WATCH_LIST}"),
        &["Accept-Encoding: gzip"],
    );
    let h = c.head();
    assert_eq!((h.code, h.get("Content-Encoding")), (200, Some("gzip")));
    let mut dec = flate2::write::GzDecoder::new(Vec::new());
    // Each event is decodable as soon as its chunk arrives.
    dec.write_all(&c.chunk().unwrap()).unwrap();
    dec.flush().unwrap();
    let first: Value = serde_json::from_slice(dec.get_ref()).unwrap();
    assert_eq!(first["type"], "ADDED");
    dec.get_mut().clear();
    dec.write_all(&c.chunk().unwrap()).unwrap();
    dec.flush().unwrap();
    let second: Value = serde_json::from_slice(dec.get_ref()).unwrap();
    assert_eq!(second["type"], "BOOKMARK");
    api.end_watches();
    while let Some(chunk) = c.chunk() {
        dec.write_all(&chunk).unwrap();
    }
    dec.finish().unwrap();

    c.send("/api/v1/pods", &["Accept-Encoding: gzip"]);
    let h = c.head();
    assert_eq!(h.get("Content-Encoding"), Some("gzip"));
    let mut body = String::new();
    flate2::read::GzDecoder::new(&c.body(&h)[..])
        .read_to_string(&mut body)
        .unwrap();
    assert!(body.starts_with("{\"kind\":\"PodList\""));
    // No Accept-Encoding: plain.
    let (h, _) = c.get_json("/api/v1/pods", &[]);
    assert!(h.get("Content-Encoding").is_none());
}

#[test]
fn discovery_version_get_and_not_found() {
    let api = FakeApi::start();
    let mut c = Client::connect(&api);
    c.send("/version", &[]);
    let h = c.head();
    let v: Value = serde_json::from_slice(&c.body(&h)).unwrap();
    assert_eq!(v["gitVersion"], "v1.36.2");
    let (_, v) = c.get_json("/api", &[]);
    assert_eq!(v["versions"], json!(["v1"]));
    let (_, v) = c.get_json("/api/v1", &[]);
    let pods = v["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods")
        .unwrap();
    assert_eq!(
        (pods["kind"].as_str(), pods["namespaced"].as_bool()),
        (Some("Pod"), Some(true))
    );
    assert!(pods["verbs"].as_array().unwrap().contains(&json!("watch")));
    api.add_resource("example.com", "v1", "widgets", "Widget", true);
    let (_, v) = c.get_json("/apis", &[]);
    let groups: Vec<&str> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert!(groups.contains(&"apps") && groups.contains(&"example.com"));
    let (_, v) = c.get_json("/apis/example.com/v1", &[]);
    assert_eq!(v["resources"][0]["kind"], "Widget");
    let (h, _) = c.get_json("/apis/example.com", &[]);
    assert_eq!(h.code, 200);

    api.apply(
        "example.com/v1/widgets",
        json!({"metadata":{"name":"w","namespace":"x"},"spec":{"size":3}}),
    );
    let (h, w) = c.get_json("/apis/example.com/v1/namespaces/x/widgets/w", &[]);
    assert_eq!(h.code, 200);
    assert_eq!(
        (w["kind"].as_str(), w["apiVersion"].as_str()),
        (Some("Widget"), Some("example.com/v1"))
    );
    let mut cw = Client::connect(&api);
    cw.send(&format!("/apis/example.com/v1/widgets?{WATCH_LIST}"), &[]);
    assert_eq!(cw.head().code, 200);
    assert_eq!(cw.event()["object"]["spec"]["size"], 3);
    assert_eq!(
        cw.chunk().unwrap(),
        format!("{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"Widget\",\"apiVersion\":\"example.com/v1\",\"metadata\":{{\"resourceVersion\":\"{}\",\"annotations\":{{\"k8s.io/initial-events-end\":\"true\"}}}}}}}}\n", api.current_rv()).into_bytes()
    );

    let (h, st) = c.get_json("/apis/example.com/v1/namespaces/x/widgets/nope", &[]);
    assert_eq!(h.code, 404);
    assert_eq!(st["message"], "widgets \"nope\" not found");
    for path in [
        "/api/v1/gizmos",
        "/api/v1/namespaces/x/nodes",
        "/apis/nope/v1/things",
        "/nothing",
        "/api/v1/pods/a/b/c",
    ] {
        let (h, st) = c.get_json(path, &[]);
        assert_eq!(h.code, 404, "{path}");
        assert_eq!(
            st["message"],
            "the server could not find the requested resource"
        );
        assert_eq!(st["reason"], "NotFound");
    }
    // Deployments' empty watch-list: only the bookmark, with the Go zero value (b capture).
    let mut cd = Client::connect(&api);
    cd.send(&format!("/apis/apps/v1/deployments?{WATCH_LIST}"), &[]);
    assert_eq!(cd.head().code, 200);
    let b = String::from_utf8(cd.chunk().unwrap()).unwrap();
    assert!(b.ends_with("\"spec\":{\"replicas\":0,\"selector\":null,\"template\":{\"metadata\":{},\"spec\":{\"containers\":null}},\"strategy\":{}},\"status\":{}}}\n"), "{b}");
}

#[test]
fn requests_are_recorded_and_bad_input_gets_400() {
    let api = FakeApi::start();
    let mut c = Client::connect(&api);
    let (h, _) = c.get_json("/api/v1/pods?watch=false&labelSelector=a%3Db", &[]);
    assert_eq!(h.code, 200);
    let (h, st) = c.get_json("/api/v1/pods?x=%zz", &[]);
    assert_eq!((h.code, st["reason"].as_str()), (400, Some("BadRequest")));
    c.send_raw("DELETE /api/v1/pods HTTP/1.1\r\nHost: x\r\n\r\n");
    let h = c.head();
    assert_eq!(h.code, 405);
    c.body(&h);
    assert!(api.wait_requests(3, T));
    assert_eq!(
        api.requests(),
        [
            "GET /api/v1/pods?watch=false&labelSelector=a%3Db",
            "GET /api/v1/pods?x=%zz",
            "DELETE /api/v1/pods"
        ]
    );
    // Connection: close is honoured.
    c.send("/api/v1/pods", &["Connection: close"]);
    let h = c.head();
    assert_eq!(h.get("Connection"), Some("close"));
    c.body(&h);
    assert!(c.at_eof());
    // Garbage instead of HTTP: 400, then the connection is closed.
    let mut c = Client::connect(&api);
    c.send_raw("this is not http\r\n\r\n");
    let h = c.head();
    assert_eq!(h.code, 400);
    c.body(&h);
    assert!(c.at_eof());
    let mut c = Client::connect(&api);
    c.send_raw(&format!("GET /{} HTTP/1.1\r\n", "x".repeat(70_000)));
    assert_eq!(c.head().code, 400);
    // Neither unparseable request is recorded.
    assert_eq!(api.requests().len(), 4);
}

#[test]
fn churn_produces_events() {
    let api = FakeApi::start();
    api.start_churn(2, 6, Duration::from_millis(2));
    let mut c = Client::connect(&api);
    c.send(&format!("/api/v1/pods?{WATCH_LIST}"), &[]);
    assert_eq!(c.head().code, 200);
    let mut live = 0;
    let mut seen_bookmark = false;
    while live < 20 {
        let e = c.event();
        if e["type"] == "BOOKMARK" {
            seen_bookmark = true;
        } else if seen_bookmark {
            live += 1;
        }
    }
    assert!(!api.objects("nodes").is_empty());
    assert_eq!(api.objects("namespaces").len(), 2);
    assert_eq!(api.objects("configmaps").len(), 4);
}

#[test]
fn pod_builder_has_the_documented_shape() {
    let p = FakeApi::pod("ns", "web");
    assert_eq!(p["metadata"]["namespace"], "ns");
    assert!(p["metadata"]["labels"].is_object() && p["metadata"]["annotations"].is_object());
    assert!(p["metadata"]["managedFields"][0]["fieldsV1"].is_object());
    let env = &p["spec"]["containers"][0]["env"];
    assert_eq!(env[0]["value"], "info");
    assert_eq!(env[1]["valueFrom"]["secretKeyRef"]["key"], "password");
    assert_eq!(p["status"]["phase"], "Pending");
    assert_eq!(FakeApi::object(None, "n"), json!({"metadata":{"name":"n"}}));
}

const META_ACCEPT: &str = "Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const META_LIST_ACCEPT: &str =
    "Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const DISCOVERY_ACCEPT: &str = "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":…}` and nothing else.
fn assert_partial(obj: &Value, metadata: &Value) {
    // In any order: serde_json's preserve_order may be on in the workspace.
    let mut keys: Vec<&str> = obj
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(keys, ["apiVersion", "kind", "metadata"], "{obj}");
    assert_eq!(
        (obj["kind"].as_str(), obj["apiVersion"].as_str()),
        (Some("PartialObjectMetadata"), Some("meta.k8s.io/v1"))
    );
    assert_eq!(&obj["metadata"], metadata);
}

#[test]
fn metadata_only_watch_list_and_live_events() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::pod("wire-meta", "web-1"));
    let mut c = Client::connect(&api);
    c.send(&format!("/api/v1/pods?{WATCH_LIST}"), &[META_ACCEPT]);
    let h = c.head();
    assert_eq!(
        (h.code, h.get("Content-Type")),
        (200, Some("application/json"))
    );
    let stored = api.get("pods", Some("wire-meta"), "web-1").unwrap();
    let e = c.event();
    assert_eq!(e["type"], "ADDED");
    assert_partial(&e["object"], &stored["metadata"]);
    assert!(e["object"]["metadata"]["managedFields"].is_array());
    // The end bookmark is a PartialObjectMetadata too (m-metadata-watchlist-pods).
    let cur = api.current_rv();
    assert_eq!(
        String::from_utf8(c.chunk().unwrap()).unwrap(),
        format!("{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{{\"resourceVersion\":\"{cur}\",\"annotations\":{{\"k8s.io/initial-events-end\":\"true\"}}}}}}}}\n")
    );
    assert!(api.wait_open_watches(1, T));
    let rv = api.apply("pods", FakeApi::pod("wire-meta", "web-1"));
    let e = c.event();
    assert_eq!(e["type"], "MODIFIED");
    let stored = api.get("pods", Some("wire-meta"), "web-1").unwrap();
    assert_partial(&e["object"], &stored["metadata"]);
    let del = api.delete("pods", Some("wire-meta"), "web-1").unwrap();
    let e = c.event();
    assert_eq!(
        (
            e["type"].as_str(),
            rv_of(&e["object"]),
            e["object"]["kind"].as_str()
        ),
        (Some("DELETED"), del, Some("PartialObjectMetadata"))
    );
    assert!(del > rv);
    api.send_bookmarks();
    assert_eq!(c.event()["object"]["kind"], "PartialObjectMetadata");

    // A plain watch from a resourceVersion replays history in the same form.
    let mut c = Client::connect(&api);
    c.send(
        &format!("/api/v1/pods?watch=true&resourceVersion={}", rv - 1),
        &[META_ACCEPT],
    );
    assert_eq!(c.head().code, 200);
    for typ in ["MODIFIED", "DELETED"] {
        let e = c.event();
        assert_eq!(
            (e["type"].as_str(), e["object"]["kind"].as_str()),
            (Some(typ), Some("PartialObjectMetadata"))
        );
        assert!(e["object"].get("spec").is_none());
    }
}

#[test]
fn metadata_only_lists_gets_and_what_is_not_acceptable() {
    let api = FakeApi::start();
    for name in ["a", "b", "c"] {
        api.apply("pods", FakeApi::pod("ns", name));
    }
    let mut c = Client::connect(&api);
    let (h, list) = c.get_json("/api/v1/pods?limit=2", &[META_LIST_ACCEPT]);
    assert_eq!(h.code, 200);
    assert_eq!(
        (list["kind"].as_str(), list["apiVersion"].as_str()),
        (Some("PartialObjectMetadataList"), Some("meta.k8s.io/v1"))
    );
    let items = list["items"].as_array().unwrap();
    assert_eq!(names(items), ["a", "b"]);
    let stored = api.get("pods", Some("ns"), "a").unwrap();
    assert_partial(&items[0], &stored["metadata"]);
    let cont = list["metadata"]["continue"].as_str().unwrap();
    assert_eq!(list["metadata"]["remainingItemCount"], 1);
    let (_, page2) = c.get_json(
        &format!("/api/v1/pods?limit=2&continue={cont}"),
        &[META_LIST_ACCEPT],
    );
    assert_eq!(names(page2["items"].as_array().unwrap()), ["c"]);
    // An empty result is `"items": null`, as Go writes a nil slice.
    let (_, empty) = c.get_json("/api/v1/namespaces/none/pods", &[META_LIST_ACCEPT]);
    assert_eq!(
        (empty["kind"].as_str(), &empty["items"]),
        (Some("PartialObjectMetadataList"), &Value::Null)
    );
    // A get: one PartialObjectMetadata.
    let (h, one) = c.get_json("/api/v1/namespaces/ns/pods/b", &[META_ACCEPT]);
    assert_eq!(h.code, 200);
    let stored = api.get("pods", Some("ns"), "b").unwrap();
    assert_partial(&one, &stored["metadata"]);
    // The fallback range is taken when the first is not servable (protobuf).
    let (_, list) = c.get_json(
        "/api/v1/pods",
        &["Accept: application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"],
    );
    assert_eq!(list["kind"], "PartialObjectMetadataList");

    for (target, accept, message) in [
        (
            "/api/v1/pods",
            META_ACCEPT,
            "you requested PartialObjectMetadata, but the requested object is a list (*v1.PodList)",
        ),
        (
            "/api/v1/namespaces/ns/pods/a",
            META_LIST_ACCEPT,
            "you requested PartialObjectMetadataList, but the requested object is not a list (*v1.Pod)",
        ),
        (
            &format!("/api/v1/pods?{WATCH_LIST}") as &str,
            META_LIST_ACCEPT,
            "you requested PartialObjectMetadataList, but the requested object is not a list (*v1.Pod)",
        ),
        (
            "/api/v1/pods",
            "Accept: application/vnd.kubernetes.protobuf, application/yaml",
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
        ),
    ] {
        let (h, st) = c.get_json(target, &[accept]);
        assert_eq!(
            (h.code, st["reason"].as_str(), st["message"].as_str()),
            (406, Some("NotAcceptable"), Some(message)),
            "{target} {accept}"
        );
    }
    // Full objects are unchanged by any of this.
    let (_, list) = c.get_json("/api/v1/pods", &["Accept: application/json"]);
    assert_eq!(list["kind"], "PodList");
    assert!(list["items"][0]["spec"].is_object());
}

/// Every resource of an aggregated discovery document, as `group/version/resource`.
fn discovered(doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for item in doc["items"].as_array().unwrap() {
        let group = item["metadata"]["name"].as_str().unwrap_or("");
        for v in item["versions"].as_array().unwrap() {
            for r in v["resources"].as_array().unwrap() {
                out.push(format!(
                    "{group}/{}/{}",
                    v["version"].as_str().unwrap(),
                    r["resource"].as_str().unwrap()
                ));
            }
        }
    }
    out
}

#[test]
fn aggregated_discovery_follows_resources_as_they_come_and_go() {
    let api = FakeApi::start();
    let mut c = Client::connect(&api);
    let (h, doc) = c.get_json("/apis", &[DISCOVERY_ACCEPT]);
    assert_eq!(h.code, 200);
    assert_eq!(
        h.get("Content-Type"),
        Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
    );
    assert_eq!(
        (h.get("Cache-Control"), h.get("Vary")),
        (Some("public"), Some("Accept"))
    );
    assert_eq!(
        (doc["kind"].as_str(), doc["apiVersion"].as_str()),
        (
            Some("APIGroupDiscoveryList"),
            Some("apidiscovery.k8s.io/v2")
        )
    );
    let apps = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metadata"]["name"] == "apps")
        .unwrap();
    let deploy = &apps["versions"][0]["resources"][0];
    assert_eq!(
        deploy,
        &json!({
            "resource": "deployments",
            "responseKind": {"group": "", "version": "", "kind": "Deployment"},
            "scope": "Namespaced",
            "singularResource": "deployment",
            "shortNames": ["deploy"],
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        })
    );
    assert_eq!(apps["versions"][0]["freshness"], "Current");
    assert!(!discovered(&doc).iter().any(|r| r.starts_with("/")));

    // /api: the core group, one item without a name.
    let (h, core) = c.get_json("/api", &[DISCOVERY_ACCEPT]);
    assert_eq!(h.code, 200);
    assert_eq!(core["items"].as_array().unwrap().len(), 1);
    assert_eq!(
        core["items"][0]["metadata"],
        json!({"creationTimestamp": null})
    );
    let core_res = discovered(&core);
    assert!(core_res.contains(&"/v1/pods".to_string()), "{core_res:?}");
    let nodes = core["items"][0]["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "nodes")
        .unwrap();
    assert_eq!(
        (nodes["scope"].as_str(), &nodes["shortNames"]),
        (Some("Cluster"), &json!(["no"]))
    );

    // An unchanged document: 304 for its Etag, no body.
    let tag = h.get("Etag").unwrap().to_string();
    c.send(
        "/api",
        &[DISCOVERY_ACCEPT, &format!("If-None-Match: {tag}")],
    );
    let h304 = c.head();
    assert_eq!(
        (h304.code, h304.get("Content-Length"), h304.get("Etag")),
        (304, None, Some(tag.as_str()))
    );

    // A CRD established after start appears, with its short names and verbs; one deleted goes.
    api.add_resource("example.com", "v1", "widgets", "Widget", true);
    api.set_short_names("example.com/v1/widgets", &["wd"]);
    api.add_resource("example.com", "v1", "gadgets", "Gadget", false);
    api.set_verbs("example.com/v1/gadgets", &["get", "create"]);
    let (_, doc) = c.get_json("/apis", &[DISCOVERY_ACCEPT]);
    let all = discovered(&doc);
    assert!(
        all.contains(&"example.com/v1/widgets".to_string())
            && all.contains(&"example.com/v1/gadgets".to_string()),
        "{all:?}"
    );
    let ex = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metadata"]["name"] == "example.com")
        .unwrap();
    assert_eq!(
        ex["versions"][0]["resources"][0]["shortNames"],
        json!(["wd"])
    );
    assert_eq!(
        ex["versions"][0]["resources"][1]["verbs"],
        json!(["get", "create"])
    );
    assert_eq!(ex["versions"][0]["resources"][1]["scope"], "Cluster");
    // The legacy per-version document says the same.
    let (_, legacy) = c.get_json("/apis/example.com/v1", &[]);
    assert_eq!(legacy["resources"][0]["shortNames"], json!(["wd"]));
    assert_eq!(legacy["resources"][1]["verbs"], json!(["get", "create"]));

    assert!(api.remove_resource("example.com/v1/gadgets"));
    assert!(!api.remove_resource("example.com/v1/gadgets"));
    let (_, doc) = c.get_json("/apis", &[DISCOVERY_ACCEPT]);
    let all = discovered(&doc);
    assert!(
        all.contains(&"example.com/v1/widgets".to_string())
            && !all.contains(&"example.com/v1/gadgets".to_string()),
        "{all:?}"
    );

    // v2beta1, asked for first, answers as v2beta1.
    let (h, doc) = c.get_json(
        "/apis",
        &["Accept: application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"],
    );
    assert_eq!(
        (h.get("Content-Type"), doc["apiVersion"].as_str()),
        (
            Some("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"),
            Some("apidiscovery.k8s.io/v2beta1")
        )
    );
    // Plain JSON is the legacy document.
    let (h, legacy) = c.get_json("/apis", &["Accept: application/json"]);
    assert_eq!(
        (h.get("Content-Type"), legacy["kind"].as_str()),
        (Some("application/json"), Some("APIGroupList"))
    );
}

#[test]
fn a_server_without_aggregated_discovery_answers_the_legacy_documents() {
    let api = FakeApi::start();
    api.set_aggregated_discovery(false);
    let mut c = Client::connect(&api);
    let (h, v) = c.get_json("/apis", &[DISCOVERY_ACCEPT]);
    assert_eq!(
        (h.code, h.get("Content-Type"), v["kind"].as_str()),
        (200, Some("application/json"), Some("APIGroupList"))
    );
    let (_, v) = c.get_json("/api", &[DISCOVERY_ACCEPT]);
    assert_eq!(v["kind"], "APIVersions");
    // Only the aggregated type, which this server does not have: 406.
    let (h, st) = c.get_json(
        "/apis",
        &["Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"],
    );
    assert_eq!(
        (h.code, st["reason"].as_str()),
        (406, Some("NotAcceptable"))
    );
}

#[test]
fn a_removed_resource_deletes_its_objects_ends_its_watches_and_is_gone() {
    let api = FakeApi::start();
    api.add_resource("example.com", "v1", "widgets", "Widget", true);
    api.apply("example.com/v1/widgets", FakeApi::object(Some("a"), "w1"));
    api.apply("example.com/v1/widgets", FakeApi::object(Some("b"), "w2"));
    let mut c = Client::connect(&api);
    c.send(&format!("/apis/example.com/v1/widgets?{WATCH_LIST}"), &[]);
    assert_eq!(c.head().code, 200);
    assert_eq!(c.event()["type"], "ADDED");
    assert_eq!(c.event()["type"], "ADDED");
    assert_eq!(c.event()["type"], "BOOKMARK");
    assert!(api.wait_open_watches(1, T));
    assert!(api.remove_resource("example.com/v1/widgets"));
    let mut deleted = vec![c.event(), c.event()]
        .into_iter()
        .map(|e| {
            format!(
                "{} {}",
                e["type"].as_str().unwrap(),
                e["object"]["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect::<Vec<_>>();
    deleted.sort();
    assert_eq!(deleted, ["DELETED w1", "DELETED w2"]);
    c.end();
    assert!(api.wait_open_watches(0, T));
    let (h, _) = get(&api, "/apis/example.com/v1/widgets");
    assert_eq!(h.code, 404);
    let (h, _) = get(&api, "/apis/example.com/v1");
    assert_eq!(h.code, 404);
    assert!(api.objects("example.com/v1/widgets").is_empty());
    // Served again: empty.
    api.add_resource("example.com", "v1", "widgets", "Widget", true);
    let (h, list) = get(&api, "/apis/example.com/v1/widgets");
    assert_eq!(
        (h.code, list["items"].as_array().map(Vec::len)),
        (200, Some(0))
    );
}

#[test]
fn verbs_a_resource_lacks_get_405() {
    let api = FakeApi::start();
    api.add_resource(
        "authentication.k8s.io",
        "v1",
        "tokenreviews",
        "TokenReview",
        false,
    );
    api.set_verbs("authentication.k8s.io/v1/tokenreviews", &["create"]);
    for target in [
        "/apis/authentication.k8s.io/v1/tokenreviews".to_string(),
        format!("/apis/authentication.k8s.io/v1/tokenreviews?{WATCH_LIST}"),
        "/apis/authentication.k8s.io/v1/tokenreviews/x".to_string(),
    ] {
        let (h, st) = get(&api, &target);
        assert_eq!(
            (h.code, st["reason"].as_str()),
            (405, Some("MethodNotAllowed")),
            "{target}"
        );
    }
    api.set_verbs("authentication.k8s.io/v1/tokenreviews", &["list", "create"]);
    let (h, _) = get(&api, "/apis/authentication.k8s.io/v1/tokenreviews");
    assert_eq!(h.code, 200);
    // Forbidden comes first, as authorization runs before the handler.
    api.forbid("authentication.k8s.io/v1/tokenreviews", true);
    let (h, _) = get(
        &api,
        &format!("/apis/authentication.k8s.io/v1/tokenreviews?{WATCH_LIST}"),
    );
    assert_eq!(h.code, 403);
}

/// The raw (still chunked) bytes of one event, for exact comparisons.
fn event_text(c: &mut Client) -> String {
    String::from_utf8(c.chunk().expect("an event")).unwrap()
}

#[test]
fn opaque_resource_versions_everywhere_and_read_back() {
    let api = FakeApi::start();
    api.set_opaque_rvs(true);
    let rv = api.apply("configmaps", FakeApi::object(Some("a"), "c1"));
    assert_eq!(rv, 2);
    assert_eq!(api.format_rv(rv), "o2");
    assert_eq!(
        api.objects("configmaps")[0]["metadata"]["resourceVersion"],
        "o2"
    );
    for i in 0..25 {
        api.apply("configmaps", FakeApi::object(Some("a"), &format!("x{i}")));
    }
    // 27 = 0x1b: the form is not an integer and does not order as one would.
    let (_, list) = get(&api, "/api/v1/configmaps?limit=1");
    assert_eq!(list["metadata"]["resourceVersion"], "o1b");
    assert_eq!(list["items"][0]["metadata"]["resourceVersion"], "o2");
    let mut c = Client::connect(&api);
    c.send(
        &format!("/api/v1/configmaps?{WATCH_LIST}&resourceVersion=o2"),
        &[],
    );
    assert_eq!(c.head().code, 200);
    let mut last = Value::Null;
    for _ in 0..26 {
        last = c.event();
        assert_eq!(last["type"], "ADDED");
    }
    assert_eq!(
        event_text(&mut c),
        "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"o1b\",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}\n"
    );
    assert!(last["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .starts_with('o'));
    api.delete("configmaps", Some("a"), "c1");
    let e = c.event();
    assert_eq!(
        (
            e["type"].as_str(),
            e["object"]["metadata"]["resourceVersion"].as_str()
        ),
        (Some("DELETED"), Some("o1c"))
    );
    api.send_bookmarks();
    assert_eq!(
        event_text(&mut c),
        "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"o1c\"}}}\n"
    );
    drop(c);
    // A watch from an opaque rv replays the history after it.
    let mut c = Client::connect(&api);
    c.send("/api/v1/configmaps?watch=true&resourceVersion=o1b", &[]);
    assert_eq!(c.head().code, 200);
    assert_eq!(c.event()["object"]["metadata"]["resourceVersion"], "o1c");
    drop(c);
    // An integer is no resourceVersion of this server; "0" still is.
    let (h, st) = get(&api, "/api/v1/configmaps?resourceVersion=27");
    assert_eq!(
        (h.code, st["message"].as_str()),
        (400, Some("invalid resource version: \"27\""))
    );
    let (h, _) = get(&api, "/api/v1/configmaps?resourceVersion=0");
    assert_eq!(h.code, 200);
    // 410 messages carry the opaque form.
    api.compact();
    let mut c = Client::connect(&api);
    c.send("/api/v1/configmaps?watch=true&resourceVersion=o2", &[]);
    assert_eq!(c.head().code, 200);
    assert_eq!(
        c.event()["object"]["message"],
        "too old resource version: o2 (o1c)"
    );
    c.end();
    // Switching back rewrites the stored objects.
    api.set_opaque_rvs(false);
    assert_eq!(
        api.get("configmaps", Some("a"), "x0").unwrap()["metadata"]["resourceVersion"],
        "3"
    );
}

#[test]
fn restore_without_bump_takes_objects_and_revisions_back_and_ends_watches() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::pod("a", "keep"));
    api.apply("pods", FakeApi::pod("a", "gone-later"));
    let uid = api.get("pods", Some("a"), "gone-later").unwrap()["metadata"]["uid"].clone();
    let backup = api.backup();
    assert_eq!(backup.revision(), 3);
    api.delete("pods", Some("a"), "gone-later");
    api.apply("pods", FakeApi::pod("a", "new"));
    api.apply("configmaps", FakeApi::object(Some("b"), "c"));
    assert_eq!(api.current_rv(), 6);
    let mut c = Client::connect(&api);
    c.send("/api/v1/pods?watch=true&resourceVersion=6", &[]);
    assert_eq!(c.head().code, 200);
    assert!(api.wait_open_watches(1, T));
    api.restore(&backup);
    c.end();
    assert_eq!(api.current_rv(), 3);
    let names: Vec<String> = api
        .objects("pods")
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["gone-later", "keep"]);
    assert_eq!(
        api.get("pods", Some("a"), "gone-later").unwrap()["metadata"]["uid"],
        uid
    );
    assert!(api.objects("configmaps").is_empty());
    // The next write reuses a revision handed out before the restore.
    assert_eq!(api.apply("pods", FakeApi::pod("a", "again")), 4);
    // A watch from a revision the store no longer reached: 504 too large; from an older: 410.
    let mut c = Client::connect(&api);
    c.send("/api/v1/pods?watch=true&resourceVersion=6", &[]);
    assert_eq!(c.head().code, 200);
    assert_eq!(c.event()["object"]["code"], 504);
    c.end();
    c.send("/api/v1/pods?watch=true&resourceVersion=2", &[]);
    assert_eq!(c.head().code, 200);
    assert_eq!(c.event()["object"]["code"], 410);
    c.end();
}

#[test]
fn ignored_send_initial_events_is_a_legacy_watch() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::pod("a", "p1"));
    let rv = api.apply("pods", FakeApi::pod("a", "p2"));
    api.set_initial_events(InitialEvents::Ignored);
    let mut c = Client::connect(&api);
    c.send(&format!("/api/v1/pods?{WATCH_LIST}"), &[]);
    assert_eq!(c.head().code, 200);
    let a = c.event();
    let b = c.event();
    assert_eq!(
        (a["type"].as_str(), b["type"].as_str()),
        (Some("ADDED"), Some("ADDED"))
    );
    // No initial-events-end bookmark: the next event is a live one.
    api.apply("pods", FakeApi::pod("a", "p3"));
    let e = c.event();
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("p3"))
    );
    api.send_bookmarks();
    let e = c.event();
    assert_eq!(e["type"], "BOOKMARK");
    assert!(e["object"]["metadata"].get("annotations").is_none());
    drop(c);
    // With a resourceVersion: the events after it, not the state.
    let mut c = Client::connect(&api);
    c.send(
        &format!("/api/v1/pods?{WATCH_LIST}&resourceVersion={rv}"),
        &[],
    );
    assert_eq!(c.head().code, 200);
    assert_eq!(c.event()["object"]["metadata"]["name"], "p3");
    drop(c);
    // No 422 for what such a server does not know.
    let mut c = Client::connect(&api);
    c.send("/api/v1/pods?watch=true&sendInitialEvents=true", &[]);
    assert_eq!(c.head().code, 200);
}

#[test]
fn no_end_bookmark_sends_the_initial_events_only() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::pod("a", "p1"));
    api.set_initial_events(InitialEvents::NoEndBookmark);
    let mut c = Client::connect(&api);
    c.send(&format!("/api/v1/pods?{WATCH_LIST}"), &[]);
    assert_eq!(c.head().code, 200);
    assert_eq!(c.event()["object"]["metadata"]["name"], "p1");
    api.apply("pods", FakeApi::pod("a", "p2"));
    let e = c.event();
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("p2"))
    );
    api.set_initial_events(InitialEvents::Normal);
    drop(c);
    let mut c = Client::connect(&api);
    c.send(&format!("/api/v1/pods?{WATCH_LIST}"), &[]);
    assert_eq!(c.head().code, 200);
    c.event();
    c.event();
    assert_eq!(c.event()["type"], "BOOKMARK");
}

#[test]
fn bookmark_only_error_in_stream_and_retry_after_dates() {
    let api = FakeApi::start();
    let rv = api.apply("pods", FakeApi::pod("a", "p1"));
    api.push_fault(
        "pods",
        Fault::ErrorInStream {
            code: 500,
            reason: "InternalError".into(),
            message: "etcdserver: leader changed".into(),
        },
    );
    api.push_fault(
        "pods",
        Fault::StatusRetryDate {
            code: 503,
            reason: "ServiceUnavailable".into(),
            message: "".into(),
            after: Duration::from_secs(30),
        },
    );
    let mut c = Client::connect(&api);
    c.send(&format!("/api/v1/pods?{WATCH_LIST}"), &[]);
    assert_eq!(c.head().code, 200);
    assert_eq!(
        event_text(&mut c),
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"etcdserver: leader changed\",\"reason\":\"InternalError\",\"code\":500}}\n"
    );
    c.end();
    let (h, st) = c.get_json("/api/v1/pods", &[]);
    assert_eq!(h.code, 503);
    assert!(st["details"].is_null());
    let date = h.get("Retry-After").unwrap();
    let want = util::http_date(std::time::SystemTime::now() + Duration::from_secs(30));
    let later = util::http_date(std::time::SystemTime::now() + Duration::from_secs(31));
    assert!(date == want || date == later || date.len() == 29, "{date}");
    assert!(date.ends_with(" GMT"));
    for _ in 0..3 {
        api.push_fault("pods", Fault::BookmarkOnly);
    }
    // A watch from an rv: the events owed, then the bookmark at the current rv.
    c.send(
        &format!(
            "/api/v1/pods?watch=true&allowWatchBookmarks=true&resourceVersion={}",
            rv - 1
        ),
        &[],
    );
    assert_eq!(c.head().code, 200);
    assert_eq!(c.event()["object"]["metadata"]["name"], "p1");
    assert_eq!(
        event_text(&mut c),
        format!("{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":\"{rv}\"}},\"spec\":{{\"containers\":null}},\"status\":{{}}}}}}\n")
    );
    c.end();
    // A watch-list: none of the state; a bookmark where the client was, or nothing.
    c.send(&format!("/api/v1/pods?{WATCH_LIST}&resourceVersion=1"), &[]);
    assert_eq!(c.head().code, 200);
    assert_eq!(c.event()["object"]["metadata"]["resourceVersion"], "1");
    c.end();
    c.send(&format!("/api/v1/pods?{WATCH_LIST}"), &[]);
    assert_eq!(c.head().code, 200);
    c.end();
    // Bookmark-only leaves lists alone.
    api.push_fault("pods", Fault::BookmarkOnly);
    let (h, st) = c.get_json("/api/v1/pods", &[]);
    assert_eq!(
        (h.code, st["items"].as_array().map(Vec::len)),
        (200, Some(1))
    );
}

#[test]
fn gzip_members_one_per_event() {
    let api = FakeApi::start();
    api.set_gzip_members(true);
    api.apply("pods", FakeApi::pod("a", "p"));
    let mut c = Client::connect(&api);
    c.send(
        &format!("/api/v1/pods?{WATCH_LIST}"),
        &["Accept-Encoding: gzip"],
    );
    let h = c.head();
    assert_eq!((h.code, h.get("Content-Encoding")), (200, Some("gzip")));
    let mut all = Vec::new();
    let mut types = Vec::new();
    for _ in 0..2 {
        let chunk = c.chunk().unwrap();
        // Each chunk is a whole gzip member: magic, and a plain GzDecoder reads it to its end.
        assert_eq!(&chunk[..2], &[0x1f, 0x8b]);
        let mut s = String::new();
        flate2::read::GzDecoder::new(&chunk[..])
            .read_to_string(&mut s)
            .unwrap();
        types.push(serde_json::from_str::<Value>(&s).unwrap()["type"].clone());
        all.extend_from_slice(&chunk);
    }
    assert_eq!(types, ["ADDED", "BOOKMARK"]);
    api.end_watches();
    // No gzip trailer of a stream: just the terminating chunk.
    c.end();
    // A single-member decoder stops after the first event; a multi-member one reads both.
    let mut first = String::new();
    flate2::read::GzDecoder::new(&all[..])
        .read_to_string(&mut first)
        .unwrap();
    assert_eq!(first.lines().count(), 1);
    let mut both = String::new();
    flate2::read::MultiGzDecoder::new(&all[..])
        .read_to_string(&mut both)
        .unwrap();
    assert_eq!(both.lines().count(), 2);
    // Without Accept-Encoding: plain.
    c.send(&format!("/api/v1/pods?{WATCH_LIST}"), &[]);
    let h = c.head();
    assert!(h.get("Content-Encoding").is_none());
    assert_eq!(c.event()["type"], "ADDED");
}

#[test]
fn request_log_times_and_full_syncs() {
    let api = FakeApi::start();
    let t0 = Instant::now();
    let mut c = Client::connect(&api);
    c.get_json("/api/v1/namespaces/a/pods?limit=1", &[]);
    c.get_json("/api/v1/namespaces/a/pods?limit=1&continue=x", &[]);
    c.get_json("/apis/apps/v1/deployments", &[]);
    c.get_json("/api/v1/namespaces/a/pods/p", &[]);
    c.get_json("/api", &[]);
    c.send(&format!("/api/v1/pods?{WATCH_LIST}"), &[]);
    c.head();
    c.chunk();
    drop(c);
    let mut c = Client::connect(&api);
    c.send("/api/v1/pods?watch=true&resourceVersion=1", &[]);
    c.head();
    let log = api.request_log();
    assert_eq!(log.len(), 7);
    assert!(log.windows(2).all(|w| w[0].at <= w[1].at) && log[0].at >= t0);
    let syncs: Vec<(String, Option<String>)> = log
        .iter()
        .filter(|r| r.is_full_sync())
        .map(|r| r.collection().unwrap())
        .collect();
    assert_eq!(
        syncs,
        [
            ("pods".to_string(), Some("a".to_string())),
            ("apps/v1/deployments".to_string(), None),
            ("pods".to_string(), None),
        ]
    );
    assert!(log[6].is_watch() && !log[6].is_full_sync());
    assert_eq!(log[3].collection(), None);
}
