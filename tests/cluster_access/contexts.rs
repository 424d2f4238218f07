//! Contexts.

use super::*;

#[test]
fn current_context_or_a_named_one_with_its_namespace() {
    let _w = Watchdog::new("contexts", LIMIT);
    capture_log();
    let (a, b) = (Cluster::start(), Cluster::start());
    a.api.require_token(Some("tok-ctx-a-1111"));
    b.api.require_token(Some("tok-ctx-b-2222"));
    let dir = TempDir::new("contexts");
    let path = dir.write(
        "config",
        format!(
            "apiVersion: v1
kind: Config
current-context: alpha
clusters:
- name: ca
  cluster:
    server: {}
    certificate-authority-data: {}
- name: cb
  cluster:
    server: {}
    certificate-authority-data: {}
users:
- name: ua
  user:
    token: tok-ctx-a-1111
- name: ub
  user:
    token: tok-ctx-b-2222
contexts:
- name: alpha
  context:
    cluster: ca
    user: ua
    namespace: ns-alpha
- name: beta
  context:
    cluster: cb
    user: ub
    namespace: ns-beta
",
            q(&a.url()),
            a.ca_data(),
            q(&b.url()),
            b.ca_data()
        ),
    );
    let current = load(&path, None);
    assert_eq!(
        (
            current.access.server.as_str(),
            current.access.namespace.as_deref()
        ),
        (a.url().as_str(), Some("ns-alpha"))
    );
    assert!(
        current.access.source.contains("\"alpha\""),
        "{}",
        current.access.source
    );
    let r = streams_one_pod(&a.api, quick(current, &["pods"]));
    drop(r);
    let named = load(&path, Some("beta"));
    assert_eq!(
        (
            named.access.server.as_str(),
            named.access.namespace.as_deref()
        ),
        (b.url().as_str(), Some("ns-beta"))
    );
    assert!(
        named.access.source.contains("\"beta\""),
        "{}",
        named.access.source
    );
    let before = a.api.requests().len();
    let r = streams_one_pod(&b.api, quick(named, &["pods"]));
    drop(r);
    assert_eq!(a.api.requests().len(), before);
    assert_eq!(
        b.front.header_values("authorization"),
        ["Bearer tok-ctx-b-2222"]
    );
}

/// Two clusters, users or contexts of one name in ONE file: client-go fails
/// to decode the file ("duplicate name … in list"), so kubectl refuses it;
/// so does tattler, naming the kind and the name, never the entries. (Across
/// the files of `$KUBECONFIG` the first file wins: tests/proxy_env.rs.)
#[test]
fn a_name_given_twice_in_one_file_is_refused() {
    let _w = Watchdog::new("a_name_given_twice_in_one_file", LIMIT);
    capture_log();
    let dir = TempDir::new("dup-names");
    let base = kubeconfig(
        "server: https://10.1.2.3:6443\n",
        "token: tok-dup-7d7d\n",
        None,
    );
    for (kind, extra) in [
        (
            "cluster",
            "clusters:\n- name: c\n  cluster:\n    server: https://10.9.9.9:6443\n",
        ),
        (
            "user",
            "users:\n- name: u\n  user:\n    token: tok-dup-other-8e8e\n",
        ),
        (
            "context",
            "contexts:\n- name: main\n  context:\n    cluster: c\n    user: u\n",
        ),
    ] {
        // The duplicate entry goes first in the one list of its kind.
        let list = format!("{kind}s:\n");
        let entry = &extra[list.len()..];
        let text = base.replacen(&list, &format!("{list}{entry}"), 1);
        let path = dir.write("config", text);
        let e = load_err(&path, None);
        assert!(
            e.contains(&path)
                && e.contains(&format!("two {kind}s named"))
                && e.contains("duplicate name in list"),
            "{kind}: {e}"
        );
        assert_hidden(&["tok-dup-7d7d", "tok-dup-other-8e8e"], &[&e]);
    }
}
