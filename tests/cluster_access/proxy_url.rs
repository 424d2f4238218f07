//! proxy-url.

use super::*;

#[test]
fn proxy_url_tunnels_through_the_proxy() {
    let _w = Watchdog::new("proxy_url", LIMIT);
    capture_log();
    // A name only the proxy can reach (no DNS here): kubernetes.internal.
    let c = Cluster::with(&["kubernetes.internal"], false);
    c.api.require_token(Some("tok-proxy-3c3c"));
    let proxy = ConnectProxy::start();
    let server = format!("https://kubernetes.internal:{}", c.front.port());
    let dir = TempDir::new("proxy-url");
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\nproxy-url: {}\n",
                q(&server),
                c.ca_data(),
                q(&proxy.url())
            ),
            "token: tok-proxy-3c3c\n",
            None,
        ),
    );
    let config = load(&path, None);
    assert_eq!(config.access.proxy, ProxyConfig::Url(proxy.url()));
    let _r = streams_one_pod(&c.api, quick(config, &["pods"]));
    assert_eq!(
        proxy.targets(),
        [format!("kubernetes.internal:{}", c.front.port())]
    );
    assert_eq!(proxy.auth(), [None]);
    assert_eq!(
        c.front.header_values("authorization"),
        ["Bearer tok-proxy-3c3c"]
    );
}

#[test]
fn proxy_url_is_not_used_for_a_loopback_server() {
    let _w = Watchdog::new("proxy_url_loopback", LIMIT);
    let c = Cluster::start();
    let proxy = ConnectProxy::start();
    let dir = TempDir::new("proxy-loopback");
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\nproxy-url: {}\n",
                q(&c.url()),
                c.ca_data(),
                q(&proxy.url())
            ),
            "token: tok-proxy-lo-6a6a\n",
            None,
        ),
    );
    let _r = streams_one_pod(&c.api, quick(load(&path, None), &["pods"]));
    assert_eq!(proxy.targets(), Vec::<String>::new());
}

#[test]
fn proxy_url_credentials_are_sent_but_never_shown() {
    let _w = Watchdog::new("proxy_url_credentials", LIMIT);
    capture_log();
    let c = Cluster::with(&["kubernetes.internal"], false);
    let proxy = ConnectProxy::start();
    let proxy_url = proxy
        .url()
        .replace("http://", "http://puser:proxy-pw%2F7b7b@");
    let server = format!("https://kubernetes.internal:{}", c.front.port());
    let dir = TempDir::new("proxy-creds");
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\nproxy-url: {}\n",
                q(&server),
                c.ca_data(),
                q(&proxy_url)
            ),
            "token: tok-proxy-cred-8c8c\n",
            None,
        ),
    );
    let config = quick(load(&path, None), &["pods"]);
    let r = streams_one_pod(&c.api, config.clone());
    assert_eq!(
        proxy.auth(),
        // Percent-encoded in the URL, decoded once on the wire (Go's url.User).
        [Some(format!("Basic {}", b64(b"puser:proxy-pw/7b7b")))]
    );
    let texts = debug_texts(&config, &r);
    assert_hidden(
        &["pw%2F7b7b", "proxy-pw/7b7b", "tok-proxy-cred-8c8c"],
        &strs(&texts),
    );
}

#[test]
fn an_unsupported_proxy_scheme_is_a_clear_error_without_the_password() {
    let _w = Watchdog::new("proxy_scheme", LIMIT);
    let dir = TempDir::new("proxy-scheme");
    let path = dir.write(
        "config",
        kubeconfig(
            "server: \"https://[::ffff:127.0.0.1]:1\"\nproxy-url: \"ftp://puser:proxy-pw-9d9d@proxy.internal:21\"\n",
            "token: tok-proxy-scheme-1e1e\n",
            None,
        ),
    );
    let e = open_err(quick(load(&path, None), &["pods"]));
    assert!(e.contains("proxy-url") && e.contains("http://"), "{e}");
    assert_hidden(&["proxy-pw-9d9d", "tok-proxy-scheme-1e1e"], &[&e]);
}
