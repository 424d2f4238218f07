//! JSON configuration.

use super::*;

#[test]
fn json_with_kubeconfig_and_context() {
    let _w = Watchdog::new("json_kubeconfig", LIMIT);
    capture_log();
    let c = Cluster::start();
    c.api.require_token(Some("tok-json-kc-5f5f"));
    let dir = TempDir::new("json-kc");
    let path = dir.write(
        "config",
        format!(
            "current-context: other
clusters:
- name: c
  cluster:
    server: {}
    certificate-authority-data: {}
users:
- name: u
  user:
    token: tok-json-kc-5f5f
contexts:
- name: other
  context: {{cluster: nowhere, user: u}}
- name: json
  context: {{cluster: c, user: u, namespace: from-json}}
",
            q(&c.url()),
            c.ca_data()
        ),
    );
    let json = format!(
        r#"{{"kubeconfig":{},"context":"json","resources":["pods"]}}"#,
        q(&path)
    );
    let config = Config::from_json(&json).unwrap();
    assert_eq!(config.access.namespace.as_deref(), Some("from-json"));
    assert_eq!(config.access.server, c.url());
    let r = streams_one_pod(&c.api, config.clone());
    let texts = debug_texts(&config, &r);
    assert_hidden(&["tok-json-kc-5f5f"], &strs(&texts));
}

#[test]
fn json_with_an_exec_plugin() {
    let _w = Watchdog::new("json_exec", LIMIT);
    capture_log();
    let c = Cluster::start();
    c.api.require_token(Some("tok-json-exec-6161"));
    let dir = TempDir::new("json-exec");
    let (runs, info) = (dir.file("runs"), dir.file("info.json"));
    let json = serde_json::json!({
        "server": c.url(),
        "ca_data": c.pki.ca_pem,
        "exec": {
            "command": "/bin/sh",
            "args": [plugin()],
            "env": {
                "PLUGIN_TOKEN_FILE": dir.write("plugin-token", "tok-json-exec-6161"),
                "PLUGIN_LOG": runs,
                "PLUGIN_INFO": info
            },
            "api_version": V1BETA1
        },
        "resources": ["pods"]
    })
    .to_string();
    let config = Config::from_json(&json).unwrap();
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(plugin_runs(&runs).len(), 1);
    let info = exec_info(&info);
    assert_eq!(
        (&info["apiVersion"], &info["spec"]["interactive"]),
        (&serde_json::json!(V1BETA1), &serde_json::json!(false))
    );
    let texts = debug_texts(&config, &r);
    assert_hidden(&["tok-json-exec-6161"], &strs(&texts));
}

#[test]
fn json_with_client_certificate_files() {
    let _w = Watchdog::new("json_client_cert", LIMIT);
    capture_log();
    let c = Cluster::with(&["127.0.0.1"], true);
    let id = c.clients.client("json-user", KeyKind::RsaPkcs1);
    let dir = TempDir::new("json-cert");
    let json = serde_json::json!({
        "server": c.url(),
        "ca_file": dir.write("ca.crt", &c.pki.ca_pem),
        "client_cert_file": dir.write("c.crt", &id.cert_pem),
        "client_key_file": dir.write("c.key", &id.key_pem),
        "resources": ["pods"]
    })
    .to_string();
    let config = Config::from_json(&json).unwrap();
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(c.front.handshakes(), [Some(id.cert_der.clone())]);
    let texts = debug_texts(&config, &r);
    assert_hidden(&strs(&pem_lines(&id.key_pem)), &strs(&texts));
}

#[test]
fn json_with_basic_auth_tls_server_name_and_a_proxy() {
    let _w = Watchdog::new("json_basic_proxy", LIMIT);
    capture_log();
    let c = Cluster::with(&["kubernetes.internal"], false);
    let proxy = ConnectProxy::start();
    let json = serde_json::json!({
        "server": format!("https://kubernetes.internal:{}", c.front.port()),
        "ca_data": c.pki.ca_pem,
        "tls_server_name": "kubernetes.internal",
        "proxy": proxy.url(),
        "username": "json-admin",
        "password": "pw-json-7272",
        "resources": ["pods"]
    })
    .to_string();
    let config = Config::from_json(&json).unwrap();
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(
        proxy.targets(),
        [format!("kubernetes.internal:{}", c.front.port())]
    );
    assert_eq!(
        c.front.header_values("authorization"),
        [format!("Basic {}", b64(b"json-admin:pw-json-7272"))]
    );
    let texts = debug_texts(&config, &r);
    assert_hidden(&["pw-json-7272"], &strs(&texts));
}
