//! proxy-url: HTTP CONNECT and SOCKS5 proxies.

use super::*;
use common::socks::{SocksMode, SocksProxy};

/// A kubeconfig for `server` (its CA from `c`) through `proxy_url`.
fn through(c: &Cluster, dir: &TempDir, server: &str, proxy_url: &str, token: &str) -> Config {
    let path = dir.write(
        "config",
        kubeconfig(
            &format!(
                "server: {}\ncertificate-authority-data: {}\nproxy-url: {}\n",
                q(server),
                c.ca_data(),
                q(proxy_url)
            ),
            &format!("token: {token}\n"),
            None,
        ),
    );
    quick(load(&path, None), &["pods"])
}

/// The CONNECT request Go's SOCKS dialer sends for a name: ATYP 03.
fn connect_by_name(name: &str, port: u16) -> Vec<u8> {
    let mut b = vec![5, 1, 0, 3, u8::try_from(name.len()).unwrap()];
    b.extend_from_slice(name.as_bytes());
    b.extend_from_slice(&port.to_be_bytes());
    b
}

#[test]
fn socks5_proxy_url_gets_the_servers_name_and_tunnels_tls() {
    let _w = Watchdog::new("socks5_proxy_url", LIMIT);
    capture_log();
    let c = Cluster::with(&["kubernetes.internal"], false);
    c.api.require_token(Some("tok-socks-4d4d"));
    let proxy = SocksProxy::start(SocksMode::Tunnel);
    let server = format!("https://kubernetes.internal:{}", c.front.port());
    let dir = TempDir::new("socks-url");
    let config = through(&c, &dir, &server, &proxy.url(), "tok-socks-4d4d");
    let _r = streams_one_pod(&c.api, config);
    let port = c.front.port();
    proxy.seen(|s| {
        assert_eq!(s.greetings, [vec![5, 1, 0]]);
        assert_eq!(s.logins, Vec::<(String, String)>::new());
        // The name, not an address tattler resolved (Go's net/http does the same).
        assert_eq!(s.connects, [connect_by_name("kubernetes.internal", port)]);
    });
    // TLS through the tunnel, checked for the server's name.
    assert_eq!(
        c.front.server_names(),
        [Some("kubernetes.internal".to_string())]
    );
    assert_eq!(
        c.front.header_values("authorization"),
        ["Bearer tok-socks-4d4d"]
    );
}

#[test]
fn socks5h_proxy_url_with_credentials_logs_in_and_never_shows_them() {
    let _w = Watchdog::new("socks5h_proxy_url", LIMIT);
    capture_log();
    let c = Cluster::with(&["kubernetes.internal"], false);
    let proxy = SocksProxy::start(SocksMode::Login("suser".into(), "socks/pw-5e5e".into()));
    let url = proxy
        .url()
        .replace("socks5://", "socks5h://suser:socks%2Fpw-5e5e@");
    let server = format!("https://kubernetes.internal:{}", c.front.port());
    let dir = TempDir::new("socks-creds");
    let config = through(&c, &dir, &server, &url, "tok-socks-cred-6f6f");
    let r = streams_one_pod(&c.api, config.clone());
    let port = c.front.port();
    proxy.seen(|s| {
        assert_eq!(s.greetings, [vec![5, 2, 0, 2]]);
        assert_eq!(
            s.logins,
            [("suser".to_string(), "socks/pw-5e5e".to_string())]
        );
        assert_eq!(s.connects, [connect_by_name("kubernetes.internal", port)]);
    });
    let texts = debug_texts(&config, &r);
    assert_hidden(
        &["pw%2F5e5e", "socks/pw-5e5e", "tok-socks-cred-6f6f"],
        &strs(&texts),
    );
}

#[test]
fn a_socks5_refusal_names_its_reply_code_and_no_secret() {
    let _w = Watchdog::new("socks5_refusal", LIMIT);
    capture_log();
    let c = Cluster::with(&["10.255.0.9"], false);
    let proxy = SocksProxy::start(SocksMode::Refuse(5));
    // An IP server: sent as an address (ATYP 01), never reached.
    let server = "https://10.255.0.9:6443";
    let url = proxy
        .url()
        .replace("socks5://", "socks5://suser:pw-7a7a-socks@");
    let dir = TempDir::new("socks-refused");
    let r = Reader::open(through(&c, &dir, server, &url, "tok-socks-ref-8b8b")).unwrap();
    let line = logged(&["pods: request failed", "reply 05 (connection refused)"]);
    assert!(line.contains("SOCKS5 proxy refused CONNECT"), "{line}");
    assert_only_not_current(&r, "Unreachable");
    proxy.seen(|s| {
        assert_eq!(s.greetings[0], [5, 2, 0, 2]);
        assert_eq!(s.connects[0], [5, 1, 0, 1, 10, 255, 0, 9, 0x19, 0x2b]);
    });
    assert_hidden(&["pw-7a7a-socks", "tok-socks-ref-8b8b"], &[&line]);
}

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
