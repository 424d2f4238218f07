//! A SOCKS5 proxy's CONNECT (RFC 1928), with RFC 1929 username/password,
//! spoken as Go's `golang.org/x/net/internal/socks` speaks it for
//! `net/http` (which kubectl uses):
//!
//! - greeting `05 01 00`, or `05 02 00 02` when the proxy URL has a user
//!   (no authentication, or username/password: the proxy picks);
//! - for username/password, `01 len user len password`, and `01 00` back;
//! - `05 01 00` and the server: a domain name (`03 len name`) unless the
//!   host is an IP literal (`01` and 4 bytes, `04` and 16), then the port.
//!
//! `net/http` hands the SOCKS dialer the request URL's `host:port` as it is
//! (`connectMethod.targetAddr`), for `socks5://` and `socks5h://` alike:
//! Go never resolves the server's name for a SOCKS5 proxy, so neither does
//! tattler, and the two schemes are the same on the wire.
//!
//! Every reply is read into a fixed buffer of at most 262 bytes (the
//! longest bound address); the time it may take is the caller's (the
//! stream under it has a deadline). Errors name the step and the reply
//! code, never the proxy's other bytes, and never the credentials.

use std::io::{self, Read, Write};
use std::net::IpAddr;

const VERSION: u8 = 5;
const NO_AUTH: u8 = 0;
const USER_PASSWORD: u8 = 2;
const NO_ACCEPTABLE: u8 = 0xff;
const USER_PASSWORD_VERSION: u8 = 1;
const CONNECT: u8 = 1;
const IPV4: u8 = 1;
const DOMAIN: u8 = 3;
const IPV6: u8 = 4;

/// Asks the SOCKS5 proxy at the other end of `wire` for a connection to
/// `host:port` (`host` without brackets), with `user` (name, password) when
/// the proxy URL gives one. On success the tunnel is open and nothing of
/// the server's has been read.
pub(crate) fn connect<S: Read + Write + ?Sized>(
    wire: &mut S,
    host: &str,
    port: u16,
    user: Option<(&str, &str)>,
) -> io::Result<()> {
    let request = connect_request(host, port)?;
    let greeting: &[u8] = match user {
        Some(_) => &[VERSION, 2, NO_AUTH, USER_PASSWORD],
        None => &[VERSION, 1, NO_AUTH],
    };
    wire.write_all(greeting)?;
    wire.flush()?;
    let mut choice = [0u8; 2];
    read_reply(wire, &mut choice, "its greeting")?;
    if choice[0] != VERSION {
        return Err(bad("its greeting answer is not SOCKS version 5"));
    }
    match (choice[1], user) {
        (NO_AUTH, _) => {}
        (USER_PASSWORD, Some((name, password))) => authenticate(wire, name, password)?,
        (NO_ACCEPTABLE, _) => {
            return Err(refused(if user.is_some() {
                "the SOCKS5 proxy accepts neither no authentication nor a username and password"
            } else {
                "the SOCKS5 proxy requires authentication: give proxy-url a user and password"
            }))
        }
        _ => {
            return Err(bad(
                "it chose an authentication method tattler did not offer",
            ))
        }
    }
    wire.write_all(&request)?;
    wire.flush()?;
    let mut head = [0u8; 4];
    read_reply(wire, &mut head, "CONNECT")?;
    if head[0] != VERSION {
        return Err(bad("its CONNECT answer is not SOCKS version 5"));
    }
    if head[1] != 0 {
        return Err(refused(&format!(
            "the SOCKS5 proxy refused CONNECT: reply {:02x} ({})",
            head[1],
            reply_reason(head[1])
        )));
    }
    if head[2] != 0 {
        return Err(bad("its CONNECT answer has a non-zero reserved byte"));
    }
    // The bound address and port, read to their end so that the tunnel
    // starts at the server's first byte.
    let mut rest = [0u8; 255 + 2];
    let len = match head[3] {
        IPV4 => 4,
        IPV6 => 16,
        DOMAIN => {
            let mut n = [0u8; 1];
            read_reply(wire, &mut n, "CONNECT")?;
            usize::from(n[0])
        }
        _ => return Err(bad("its CONNECT answer has an unknown address type")),
    };
    read_reply(wire, &mut rest[..len + 2], "CONNECT")?;
    Ok(())
}

/// The CONNECT request for `host:port`: the name as a domain unless it is
/// an IP literal (Go's `socks.Dialer.connect`).
fn connect_request(host: &str, port: u16) -> io::Result<Vec<u8>> {
    let mut b = vec![VERSION, CONNECT, 0];
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => {
            b.push(IPV4);
            b.extend_from_slice(&ip.octets());
        }
        Ok(IpAddr::V6(ip)) => {
            b.push(IPV6);
            b.extend_from_slice(&ip.octets());
        }
        Err(_) => {
            let len = u8::try_from(host.len())
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "the server's name is too long for a SOCKS5 proxy (255 bytes at most)",
                    )
                })?;
            b.push(DOMAIN);
            b.push(len);
            b.extend_from_slice(host.as_bytes());
        }
    }
    b.extend_from_slice(&port.to_be_bytes());
    Ok(b)
}

/// RFC 1929: the user name and password, then the proxy's verdict.
fn authenticate<S: Read + Write + ?Sized>(
    wire: &mut S,
    name: &str,
    password: &str,
) -> io::Result<()> {
    let (Ok(n), Ok(p)) = (u8::try_from(name.len()), u8::try_from(password.len())) else {
        return Err(invalid_user());
    };
    if n == 0 {
        return Err(invalid_user());
    }
    let mut b = Vec::with_capacity(3 + name.len() + password.len());
    b.push(USER_PASSWORD_VERSION);
    b.push(n);
    b.extend_from_slice(name.as_bytes());
    b.push(p);
    b.extend_from_slice(password.as_bytes());
    let written = wire.write_all(&b).and_then(|()| wire.flush());
    // The buffer held the password: not left in freed memory.
    b.fill(0);
    written?;
    let mut verdict = [0u8; 2];
    read_reply(wire, &mut verdict, "the username and password")?;
    if verdict[0] != USER_PASSWORD_VERSION {
        return Err(bad("its username/password answer has an unknown version"));
    }
    if verdict[1] != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the SOCKS5 proxy refused the username and password of proxy-url",
        ));
    }
    Ok(())
}

fn invalid_user() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "the SOCKS5 proxy asks for a username and password: the user name must be 1 to 255 bytes, the password at most 255",
    )
}

/// Reads exactly `buf.len()` bytes of the proxy's answer to `what`; an end
/// before them is an error that says so.
fn read_reply<S: Read + ?Sized>(wire: &mut S, buf: &mut [u8], what: &str) -> io::Result<()> {
    wire.read_exact(buf).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("the SOCKS5 proxy closed the connection before it answered {what}"),
        ),
        // A timeout already names the phase that ran out of time.
        _ => e,
    })
}

fn bad(why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("not a SOCKS5 proxy's answer: {why}"),
    )
}

fn refused(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionRefused, why.to_string())
}

/// RFC 1928's words for a reply code.
pub(crate) fn reply_reason(code: u8) -> &'static str {
    match code {
        0 => "succeeded",
        1 => "general SOCKS server failure",
        2 => "connection not allowed by ruleset",
        3 => "network unreachable",
        4 => "host unreachable",
        5 => "connection refused",
        6 => "TTL expired",
        7 => "command not supported",
        8 => "address type not supported",
        _ => "unassigned",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A proxy's side of the exchange: what it answers, and what it got.
    struct Script {
        answers: io::Cursor<Vec<u8>>,
        sent: Vec<u8>,
    }

    impl Read for Script {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            // One byte a read: every reply is read to its exact length.
            let n = buf.len().min(1);
            self.answers.read(&mut buf[..n])
        }
    }

    impl Write for Script {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.sent.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn run(
        host: &str,
        user: Option<(&str, &str)>,
        answers: &[u8],
    ) -> (io::Result<()>, Vec<u8>, usize) {
        let mut s = Script {
            answers: io::Cursor::new(answers.to_vec()),
            sent: Vec::new(),
        };
        let r = connect(&mut s, host, 6443, user);
        let left = answers.len() - s.answers.position() as usize;
        (r, s.sent, left)
    }

    const OK_V4: &[u8] = &[5, 0, 0, 1, 10, 0, 0, 1, 0x1f, 0x90];

    #[test]
    fn a_name_is_sent_as_a_domain_and_the_whole_reply_is_read() {
        let answers = [&[5, 0][..], OK_V4, b"server bytes"].concat();
        let (r, sent, left) = run("kubernetes.internal", None, &answers);
        r.unwrap();
        let want = [
            &[5, 1, 0][..],
            &[5, 1, 0, 3, 19],
            b"kubernetes.internal",
            &[0x19, 0x2b],
        ]
        .concat();
        assert_eq!(sent, want);
        assert_eq!(left, "server bytes".len(), "nothing of the server's read");
    }

    #[test]
    fn ip_literals_are_sent_as_addresses() {
        let answers = [&[5, 0][..], OK_V4].concat();
        let (r, sent, _) = run("10.1.2.3", None, &answers);
        r.unwrap();
        assert_eq!(sent[3..], [5, 1, 0, 1, 10, 1, 2, 3, 0x19, 0x2b]);
        let (r, sent, _) = run("2001:db8::1", None, &answers);
        r.unwrap();
        let mut want = vec![5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8];
        want.extend([0; 11]);
        want.extend([1, 0x19, 0x2b]);
        assert_eq!(sent[3..], want);
    }

    #[test]
    fn credentials_offer_both_methods_and_are_sent_when_chosen() {
        // The proxy chooses username/password.
        let answers = [&[5, 2][..], &[1, 0], OK_V4].concat();
        let (r, sent, left) = run("k8s", Some(("us", "pw-1a")), &answers);
        r.unwrap();
        let want = [
            &[5, 2, 0, 2][..],
            &[1, 2],
            b"us",
            &[5],
            b"pw-1a",
            &[5, 1, 0, 3, 3],
            b"k8s",
            &[0x19, 0x2b],
        ]
        .concat();
        assert_eq!((sent, left), (want, 0));
        // The proxy needs none: the credentials are not sent.
        let answers = [&[5, 0][..], OK_V4].concat();
        let (r, sent, _) = run("k8s", Some(("us", "pw-1a")), &answers);
        r.unwrap();
        assert_eq!(sent[..4], [5, 2, 0, 2]);
        assert!(!sent.windows(5).any(|w| w == b"pw-1a"));
    }

    #[test]
    fn a_domain_bound_address_is_read_to_its_end() {
        let answers = [&[5, 0][..], &[5, 0, 0, 3, 4], b"bind", &[0, 1], b"X"].concat();
        let (r, _, left) = run("k8s", None, &answers);
        r.unwrap();
        assert_eq!(left, 1);
    }

    #[test]
    fn failures_name_the_step_and_code_and_never_the_secrets() {
        let user = Some(("us", "pw-2b"));
        for (answers, user, kind, want) in [
            (
                &[5, 0, 5, 5, 0, 1, 0, 0, 0, 0, 0, 0][..],
                None,
                io::ErrorKind::ConnectionRefused,
                "the SOCKS5 proxy refused CONNECT: reply 05 (connection refused)",
            ),
            (
                &[5, 0, 5, 2, 0, 1],
                None,
                io::ErrorKind::ConnectionRefused,
                "the SOCKS5 proxy refused CONNECT: reply 02 (connection not allowed by ruleset)",
            ),
            (
                &[5, 0, 5, 0x2a, 0, 1],
                None,
                io::ErrorKind::ConnectionRefused,
                "the SOCKS5 proxy refused CONNECT: reply 2a (unassigned)",
            ),
            (
                &[5, 0xff],
                None,
                io::ErrorKind::ConnectionRefused,
                "the SOCKS5 proxy requires authentication: give proxy-url a user and password",
            ),
            (
                &[5, 2],
                None,
                io::ErrorKind::InvalidData,
                "not a SOCKS5 proxy's answer: it chose an authentication method tattler did not offer",
            ),
            (
                &[5, 2, 1, 1],
                user,
                io::ErrorKind::PermissionDenied,
                "the SOCKS5 proxy refused the username and password of proxy-url",
            ),
            (
                b"HTTP/1.1 400 pw-2b",
                user,
                io::ErrorKind::InvalidData,
                "not a SOCKS5 proxy's answer: its greeting answer is not SOCKS version 5",
            ),
            (
                &[5, 0, 5, 0, 0, 9],
                None,
                io::ErrorKind::InvalidData,
                "not a SOCKS5 proxy's answer: its CONNECT answer has an unknown address type",
            ),
            (
                &[5, 0, 5, 0],
                None,
                io::ErrorKind::UnexpectedEof,
                "the SOCKS5 proxy closed the connection before it answered CONNECT",
            ),
            (
                &[],
                None,
                io::ErrorKind::UnexpectedEof,
                "the SOCKS5 proxy closed the connection before it answered its greeting",
            ),
        ] {
            let (r, _, _) = run("k8s", user, answers);
            let e = r.unwrap_err();
            assert_eq!((e.kind(), e.to_string()), (kind, want.to_string()));
        }
        // Credentials the protocol cannot carry: an error before any is sent.
        let long = "x".repeat(256);
        for (name, password) in [("", "pw"), (long.as_str(), "pw"), ("us", long.as_str())] {
            let (r, sent, _) = run("k8s", Some((name, password)), &[5, 2]);
            assert_eq!(r.unwrap_err().kind(), io::ErrorKind::InvalidInput);
            assert_eq!(sent, [5, 2, 0, 2]);
        }
        let (r, sent, _) = run(&"n".repeat(256), None, &[5, 0]);
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::InvalidInput);
        assert!(sent.is_empty());
    }
}
