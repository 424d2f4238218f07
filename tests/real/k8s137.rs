//! What Kubernetes 1.37 changed on tattler's paths, each against a real
//! 1.37.2 apiserver and, where it means something, the 1.36.3 one
//! (`Cluster::up_k8s`: these tests choose their versions whatever
//! TATTLER_K8S_VERSION says, so CI runs them once).
//!
//! - WatchListCompression (beta, on by default in 1.37): a watch-list asked
//!   with `Accept-Encoding: gzip` comes gzipped, one gzip member per flush,
//!   so one per event once the initial state is sent. 1.36 sends it plain.
//! - KEP-5958 (`Accept: …;drop=metadata.managedFields`) is not in 1.37.2:
//!   its gate does not exist and the parameter is ignored, as by 1.36.
//! - CBOR for custom resources is still alpha (`CBORServingAndStorage`,
//!   off by default) in 1.37.2, as in 1.36.3.
//!
//! tests/k8s/measure.sh measures the bytes and apiserver CPU behind these.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use crate::common::{next, show, until_synced};
use crate::fixture::{bin_dir_of, Cluster, SERIAL};
use kube_tattler::{Access, Config, Encoding, Reader, ResourceSpec};

const NS: &str = "gz";

/// The namespace and one ConfigMap in it, made before any watch.
const SEED: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: gz}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: seed, namespace: gz}
data: {k: v}
"#;

const WATCH_LIST: &str = "/api/v1/namespaces/gz/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";

/// A reader of gz's configmaps that asks for gzip.
fn gzip_reader(c: &Cluster, encoding: Encoding) -> Reader {
    let mut cfg = Access::from_kubeconfig(Some(c.kubeconfig().as_ref()), None)
        .map(Config::new)
        .unwrap();
    cfg.resources = vec![ResourceSpec::parse("configmaps")
        .unwrap()
        .remove(0)
        .in_namespace(NS)
        .with_encoding(encoding)];
    cfg.tuning.gzip = true;
    Reader::open(cfg).unwrap()
}

/// A watch as curl receives it over HTTP/1.1, not decoded: the response's
/// header lines, then the body's bytes as they come (`-N`).
struct RawWatch {
    child: Child,
    out: BufReader<ChildStdout>,
}

impl RawWatch {
    fn open(c: &Cluster, path: &str, gzip: bool) -> RawWatch {
        let token = std::fs::read_to_string(&c.env["K8S_TOKEN_FILE"]).unwrap();
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "-N", "-i", "--http1.1", "--cacert", &c.env["K8S_CA"]])
            .arg("-H")
            .arg(format!("Authorization: Bearer {}", token.trim()));
        if gzip {
            cmd.args(["-H", "Accept-Encoding: gzip"]);
        }
        let mut child = cmd
            .arg(format!("{}{path}", c.env["K8S_SERVER"]))
            .stdout(Stdio::piped())
            .spawn()
            .expect("curl");
        let out = BufReader::new(child.stdout.take().unwrap());
        RawWatch { child, out }
    }

    /// The status line and headers, lowercased, without line ends.
    fn headers(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let mut l = String::new();
            assert!(self.out.read_line(&mut l).unwrap() > 0, "no headers");
            let l = l.trim_end().to_ascii_lowercase();
            if l.is_empty() {
                return lines;
            }
            lines.push(l);
        }
    }

    /// The next gzip member of the body, decoded into its lines. Returns
    /// once the member's trailer is read: no byte of the next is needed.
    fn member(&mut self) -> Vec<String> {
        let mut text = String::new();
        flate2::bufread::GzDecoder::new(&mut self.out)
            .read_to_string(&mut text)
            .unwrap();
        assert!(!text.is_empty(), "the stream ended");
        text.lines().map(String::from).collect()
    }

    /// The next line of a plain body.
    fn line(&mut self) -> String {
        let mut l = String::new();
        assert!(self.out.read_line(&mut l).unwrap() > 0, "the stream ended");
        l.trim_end().to_string()
    }
}

impl Drop for RawWatch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `"TYPE name"` of a watch event's JSON line (`"BOOKMARK "` for a bookmark).
fn event(line: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    format!(
        "{} {}",
        v["type"].as_str().unwrap(),
        v["object"]["metadata"]["name"].as_str().unwrap_or("")
    )
}

fn create_configmap(c: &Cluster, name: &str) {
    c.kubectl(&["-n", NS, "create", "configmap", name, "--from-literal=k=v"]);
}

/// 1.37 gzips a watch-list asked with `Accept-Encoding: gzip` (kube-rs's
/// gzip watches broke on it): once the initial state is out, each event is
/// a gzip member of its own, complete without the next. tattler, asking for
/// gzip over protobuf and over JSON, syncs and then delivers each change
/// before the next is made.
#[test]
fn watch_list_with_gzip_on_1_37_one_member_per_event_each_delivered_at_once() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up_k8s("1.37", Duration::from_secs(180), &[]);
    c.apply(SEED);

    let mut raw = RawWatch::open(&c, WATCH_LIST, true);
    let headers = raw.headers();
    assert_eq!(headers[0], "http/1.1 200 ok", "{headers:?}");
    assert!(
        headers.contains(&"content-encoding: gzip".to_string()),
        "{headers:?}"
    );
    // The initial state: ADDED seed and the initial-events-end bookmark, in
    // as many members as the server flushed.
    let mut initial = Vec::new();
    while !initial
        .iter()
        .any(|l: &String| l.contains("k8s.io/initial-events-end"))
    {
        initial.extend(raw.member());
    }
    assert_eq!(
        initial.iter().map(|l| event(l)).collect::<Vec<_>>(),
        ["ADDED seed", "BOOKMARK "]
    );

    let readers = [
        gzip_reader(&c, Encoding::Auto),
        gzip_reader(&c, Encoding::Json),
    ];
    for r in &readers {
        assert_eq!(until_synced(r), ["Add gz/seed", "Synced configmaps"]);
    }
    for name in ["live-1", "live-2", "live-3"] {
        create_configmap(&c, name);
        // Periodic bookmarks may come in between, each a member of its own.
        let member = loop {
            let m = raw.member();
            if m.iter().any(|l| event(l) != "BOOKMARK ") {
                break m;
            }
        };
        assert_eq!(
            member.iter().map(|l| event(l)).collect::<Vec<_>>(),
            [format!("ADDED {name}")]
        );
        for r in &readers {
            assert_eq!(show(&next(r)), format!("Add gz/{name}"));
        }
    }
    for r in readers {
        r.close();
    }
}

/// 1.36 has no WatchListCompression: the same request comes plain, and
/// tattler's entries are the same as on 1.37.
#[test]
fn watch_list_with_gzip_on_1_36_comes_plain() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = Cluster::up_k8s("1.36", Duration::from_secs(180), &[]);
    c.apply(SEED);

    let mut raw = RawWatch::open(&c, WATCH_LIST, true);
    let headers = raw.headers();
    assert_eq!(headers[0], "http/1.1 200 ok", "{headers:?}");
    assert!(
        !headers.iter().any(|h| h.starts_with("content-encoding")),
        "{headers:?}"
    );
    assert_eq!(event(&raw.line()), "ADDED seed");
    assert!(raw.line().contains("k8s.io/initial-events-end"));

    let r = gzip_reader(&c, Encoding::Auto);
    assert_eq!(until_synced(&r), ["Add gz/seed", "Synced configmaps"]);
    for name in ["live-1", "live-2"] {
        create_configmap(&c, name);
        assert_eq!(show(&next(&r)), format!("Add gz/{name}"));
        let line = loop {
            let l = raw.line();
            if event(&l) != "BOOKMARK " {
                break l;
            }
        };
        assert_eq!(event(&line), format!("ADDED {name}"));
    }
    r.close();
}

/// One GET as curl makes it: (status, content-type, body).
fn get(c: &Cluster, path: &str, accept: &str) -> (u16, String, Vec<u8>) {
    let token = std::fs::read_to_string(&c.env["K8S_TOKEN_FILE"]).unwrap();
    let headers = c.dir.join("get.headers");
    let out = Command::new("curl")
        .args(["-sS", "--http1.1", "--cacert", &c.env["K8S_CA"]])
        .arg("-H")
        .arg(format!("Authorization: Bearer {}", token.trim()))
        .arg("-H")
        .arg(format!("Accept: {accept}"))
        .arg("-D")
        .arg(&headers)
        .arg(format!("{}{path}", c.env["K8S_SERVER"]))
        .output()
        .unwrap();
    assert!(out.status.success(), "curl {path}");
    let head = std::fs::read_to_string(&headers)
        .unwrap()
        .to_ascii_lowercase();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let ctype = head
        .lines()
        .find_map(|l| l.strip_prefix("content-type: "))
        .unwrap_or("")
        .trim()
        .to_string();
    (status, ctype, out.stdout)
}

/// KEP-5958 (a client's `;drop=metadata.managedFields`) did not make
/// 1.37.2: kube-apiserver knows no `ManagedFieldsOptOut` gate, and both
/// versions send the same bytes, managedFields in, with or without the
/// parameter. (kubernetes#139561, which adds it, was still open.)
#[test]
fn managed_fields_drop_is_ignored_by_1_37_2_as_by_1_36() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = Command::new(bin_dir_of("1.37").join("kube-apiserver"))
        .arg("--feature-gates=ManagedFieldsOptOut=true")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unrecognized feature gate: ManagedFieldsOptOut"),
        "{err}"
    );

    for minor in ["1.37", "1.36"] {
        let c = Cluster::up_k8s(minor, Duration::from_secs(120), &[]);
        c.apply(SEED);
        let path = "/api/v1/namespaces/gz/configmaps/seed";
        let (status, ctype, plain) = get(&c, path, "application/json");
        assert_eq!((status, ctype.as_str()), (200, "application/json"));
        let (status, ctype, asked) = get(&c, path, "application/json;drop=metadata.managedFields");
        assert_eq!(
            (status, ctype.as_str()),
            (200, "application/json"),
            "{minor}"
        );
        assert_eq!(asked, plain, "{minor}");
        let v: serde_json::Value = serde_json::from_slice(&asked).unwrap();
        assert_eq!(
            v["metadata"]["managedFields"][0]["manager"], "kubectl-client-side-apply",
            "{minor}"
        );
    }
}

const GZ_NAMESPACE: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: gz}
"#;

/// CBOR for custom resources (KEP-4222) is alpha in 1.37.2 as in 1.36.3:
/// off by default (a CBOR-only Accept is refused, 406), served with
/// `--feature-gates=CBORServingAndStorage=true` on both.
#[test]
fn cbor_for_custom_resources_is_still_behind_its_alpha_gate() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let path = "/apis/example.com/v1/namespaces/gz/widgets";
    for (minor, gate, want) in [
        ("1.37", false, (406, "application/json")),
        ("1.37", true, (200, "application/cbor")),
        ("1.36", true, (200, "application/cbor")),
    ] {
        let extra: &[&str] = if gate {
            &["--feature-gates=CBORServingAndStorage=true"]
        } else {
            &[]
        };
        let c = Cluster::up_k8s(minor, Duration::from_secs(120), extra);
        c.apply(crate::cluster::CRD);
        c.apply(GZ_NAMESPACE);
        c.kubectl(&[
            "wait",
            "--for",
            "condition=established",
            "--timeout=60s",
            "crd/widgets.example.com",
        ]);
        c.apply("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: gz}\nsize: 3\n");
        let (status, ctype, body) = get(&c, path, "application/cbor");
        assert_eq!((status, ctype.as_str()), want, "{minor} gate {gate}");
        if status == 200 {
            // RFC 8949's self-described CBOR tag, as the apiserver writes it.
            assert_eq!(&body[..3], [0xd9, 0xd9, 0xf7], "{minor}");
        }
    }
}
