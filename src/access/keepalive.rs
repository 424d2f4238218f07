//! TCP connections with keepalive probes. A peer that vanishes without a
//! reset (a load balancer's idle cut, a partition) is otherwise noticed only
//! when the idle timeout runs out; with probes after `IDLE` of silence, every
//! `INTERVAL`, `COUNT` times, the kernel ends such a connection within about
//! a minute, and the probes keep a load balancer's idle timer (commonly 4
//! minutes) from cutting a quiet watch at all.
//!
//! [`Socket`] makes a read or write that waited past its timeout fail with
//! `TimedOut` (Unix says `WouldBlock`): the stream's idle detection relies
//! on it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Silence before the first probe.
pub(crate) const IDLE: Duration = Duration::from_secs(30);
/// Between probes.
pub(crate) const INTERVAL: Duration = Duration::from_secs(10);
/// Unanswered probes before the kernel gives up on the connection.
pub(crate) const COUNT: u32 = 3;

/// Readies a new connection: `TCP_NODELAY` (a request head goes out at
/// once) and keepalive probes on (`access::dial` connects).
pub(crate) fn configure(s: &TcpStream) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    set_keepalive(s)
}

/// A TCP socket whose reads and writes that wait past their timeout fail
/// with `TimedOut`, whatever the platform says.
pub(crate) struct Socket(pub TcpStream);

fn timed_out(e: std::io::Error) -> std::io::Error {
    if e.kind() == std::io::ErrorKind::WouldBlock {
        std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "no data within the read timeout",
        )
    } else {
        e
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf).map_err(timed_out)
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf).map_err(timed_out)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn set_keepalive(s: &TcpStream) -> std::io::Result<()> {
    use nix::sys::socket::{setsockopt, sockopt};
    let secs = |d: Duration| d.as_secs() as u32;
    setsockopt(s, sockopt::KeepAlive, &true)?;
    setsockopt(s, sockopt::TcpKeepIdle, &secs(IDLE))?;
    setsockopt(s, sockopt::TcpKeepInterval, &secs(INTERVAL))?;
    setsockopt(s, sockopt::TcpKeepCount, &COUNT)?;
    Ok(())
}

#[cfg(all(unix, not(any(target_os = "linux", target_os = "android"))))]
fn set_keepalive(s: &TcpStream) -> std::io::Result<()> {
    use nix::sys::socket::{setsockopt, sockopt};
    // The system's probe timing; the probes are on.
    setsockopt(s, sockopt::KeepAlive, &true)?;
    Ok(())
}

#[cfg(not(unix))]
fn set_keepalive(_: &TcpStream) -> std::io::Result<()> {
    Ok(())
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests {
    #[test]
    fn a_read_past_its_timeout_says_timed_out() {
        use std::io::Read;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        super::configure(&s).unwrap();
        let _peer = l.accept().unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_millis(20)))
            .unwrap();
        assert!(s.nodelay().unwrap());
        let e = super::Socket(s).read(&mut [0; 8]).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
    }

    #[test]
    fn connections_have_keepalive_probes() {
        use nix::sys::socket::{getsockopt, sockopt};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        super::set_keepalive(&s).unwrap();
        assert!(getsockopt(&s, sockopt::KeepAlive).unwrap());
        assert_eq!(getsockopt(&s, sockopt::TcpKeepIdle).unwrap(), 30);
        assert_eq!(getsockopt(&s, sockopt::TcpKeepInterval).unwrap(), 10);
        assert_eq!(getsockopt(&s, sockopt::TcpKeepCount).unwrap(), 3);
    }
}
