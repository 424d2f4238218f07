//! A minimal HTTP/1.1 client for the benchmark baselines: one GET of the
//! watch-list, then the chunked body handed out as data slices.

use std::io::{Read, Write};
use std::net::TcpStream;

/// The watch-list request every client makes (the query kube-rs and tattler send).
pub const WATCH_LIST: &str = "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";

/// Connects to `url` (`http://host:port`), GETs `path`, and calls `on_data`
/// with every piece of de-chunked body until it returns false or the body ends.
/// Returns the number of body bytes handed out.
pub fn stream(
    url: &str,
    path: &str,
    mut on_data: impl FnMut(&[u8]) -> bool,
) -> std::io::Result<u64> {
    let host = url.trim_start_matches("http://").trim_end_matches('/');
    let mut sock = TcpStream::connect(host)?;
    sock.set_nodelay(true)?;
    write!(
        sock,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\nUser-Agent: bench-raw\r\n\r\n"
    )?;
    let mut buf = vec![0u8; 1 << 20];
    let mut lo;
    let mut hi = 0usize;
    // Response head.
    loop {
        let n = sock.read(&mut buf[hi..])?;
        if n == 0 {
            return Err(std::io::Error::other(
                "connection closed in the response head",
            ));
        }
        hi += n;
        if let Some(p) = memchr::memmem::find(&buf[..hi], b"\r\n\r\n") {
            let head = std::str::from_utf8(&buf[..p]).unwrap_or("");
            if !head.starts_with("HTTP/1.1 200") {
                return Err(std::io::Error::other(format!("bad response: {head}")));
            }
            if !head
                .to_ascii_lowercase()
                .contains("transfer-encoding: chunked")
            {
                return Err(std::io::Error::other("response is not chunked"));
            }
            lo = p + 4;
            break;
        }
    }
    let mut total = 0u64;
    // Bytes of chunk data still to come, and CRLF bytes to skip after it.
    let mut remaining = 0usize;
    let mut skip = 0usize;
    loop {
        // Consume what is buffered.
        while lo < hi {
            if skip > 0 {
                let k = skip.min(hi - lo);
                lo += k;
                skip -= k;
                continue;
            }
            if remaining > 0 {
                let k = remaining.min(hi - lo);
                total += k as u64;
                remaining -= k;
                if remaining == 0 {
                    skip = 2;
                }
                let go_on = on_data(&buf[lo..lo + k]);
                lo += k;
                if !go_on {
                    return Ok(total);
                }
                continue;
            }
            // A chunk-size line.
            let Some(eol) = memchr::memchr(b'\n', &buf[lo..hi]) else {
                break;
            };
            let line = std::str::from_utf8(&buf[lo..lo + eol]).unwrap_or("").trim();
            let size = usize::from_str_radix(line.split(';').next().unwrap_or(""), 16)
                .map_err(|_| std::io::Error::other(format!("bad chunk size {line:?}")))?;
            lo += eol + 1;
            if size == 0 {
                return Ok(total);
            }
            remaining = size;
        }
        // Refill: keep an incomplete chunk-size line.
        if lo < hi {
            buf.copy_within(lo..hi, 0);
            hi -= lo;
        } else {
            hi = 0;
        }
        lo = 0;
        let n = sock.read(&mut buf[hi..])?;
        if n == 0 {
            return Ok(total);
        }
        hi += n;
    }
}

/// Is this whole frame the initial-events-end bookmark?
pub fn is_initial_events_end(frame: &[u8]) -> bool {
    frame.starts_with(br#"{"type":"BOOKMARK""#)
        && memchr::memmem::find(frame, br#""k8s.io/initial-events-end":"true""#).is_some()
}

/// Prints the one JSON result line.
pub fn report(client: &str, objects: u64, bytes: u64, seconds: f64) {
    println!(
        r#"{{"client":"{client}","objects":{objects},"bytes":{bytes},"seconds_to_synced":{seconds:.6}}}"#
    );
}

pub fn url_arg() -> String {
    std::env::args().nth(1).unwrap_or_else(|| {
        eprintln!("usage: {} URL", std::env::args().next().unwrap_or_default());
        std::process::exit(2)
    })
}
