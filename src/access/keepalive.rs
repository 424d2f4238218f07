//! TCP connections with keepalive probes. A peer that vanishes without a
//! reset (a load balancer's idle cut, a partition) is otherwise noticed only
//! when the idle timeout runs out; with probes after `IDLE` of silence, every
//! `INTERVAL`, `COUNT` times, the kernel ends such a connection within about
//! a minute, and the probes keep a load balancer's idle timer (commonly 4
//! minutes) from cutting a quiet watch at all. ureq's own TCP connector sets
//! no keepalive and keeps its socket private; this one is the same but for it.
//!
//! [`tcp`] and [`Socket`] are the same for tattler's own HTTP client
//! (`access::client`): a socket whose timed-out reads and writes say
//! `TimedOut` (the stream's idle detection relies on it; Unix says
//! `WouldBlock`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, Transport as Wire,
};

/// Silence before the first probe.
pub(crate) const IDLE: Duration = Duration::from_secs(30);
/// Between probes.
pub(crate) const INTERVAL: Duration = Duration::from_secs(10);
/// Unanswered probes before the kernel gives up on the connection.
pub(crate) const COUNT: u32 = 3;

/// Connects as ureq's `TcpConnector` does (each resolved address in turn),
/// with keepalive on.
#[derive(Debug, Default)]
pub(crate) struct KeepAliveTcp;

impl<In: Wire> Connector<In> for KeepAliveTcp {
    type Out = Either<In, Probed>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        if let Some(c) = chained {
            return Ok(Some(Either::A(c)));
        }
        let timeout = details.timeout.not_zero().map(|t| *t);
        let mut last = None;
        let mut stream = None;
        for addr in details.addrs.iter() {
            let tried = match timeout {
                Some(t) => TcpStream::connect_timeout(addr, t),
                None => TcpStream::connect(addr),
            };
            match tried {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    last = Some(ureq::Error::Timeout(details.timeout.reason));
                }
                Err(e) => last = Some(ureq::Error::Io(e)),
            }
        }
        let Some(stream) = stream else {
            return Err(last.unwrap_or_else(|| {
                ureq::Error::Io(std::io::Error::new(
                    std::io::ErrorKind::ConnectionRefused,
                    "no address to connect to",
                ))
            }));
        };
        if details.config.no_delay() {
            stream.set_nodelay(true)?;
        }
        set_keepalive(&stream)?;
        // Agent::shutdown (a stop) shuts the socket down through this handle,
        // which the transport keeps alive for as long as the connection.
        let handle = Arc::new(stream.try_clone()?);
        let weak = Arc::downgrade(&handle)
            as std::sync::Weak<dyn ureq::unversioned::transport::ShutdownHandle>;
        (details.register_shutdown)(weak)?;
        let buffers = LazyBuffers::new(
            details.config.input_buffer_size(),
            details.config.output_buffer_size(),
        );
        Ok(Some(Either::B(Probed {
            stream,
            buffers,
            read_timeout: None,
            write_timeout: None,
            _handle: handle,
        })))
    }
}

/// Connects to each address in turn (each within `timeout`), with
/// `TCP_NODELAY` (a request head goes out at once) and keepalive on.
pub(crate) fn tcp(addrs: &[std::net::SocketAddr], timeout: Duration) -> std::io::Result<TcpStream> {
    let mut last = None;
    for addr in addrs {
        match TcpStream::connect_timeout(addr, timeout) {
            Ok(s) => {
                s.set_nodelay(true)?;
                set_keepalive(&s)?;
                return Ok(s);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "no address to connect to",
        )
    }))
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

/// A TCP transport whose socket has keepalive on (as ureq's own, whose
/// type is private).
pub(crate) struct Probed {
    stream: TcpStream,
    buffers: LazyBuffers,
    /// The socket's timeouts as last set, to set them only when they change.
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    _handle: Arc<TcpStream>,
}

impl std::fmt::Debug for Probed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Probed")
    }
}

/// An I/O error as ureq's: a timeout as the timeout it was.
fn io_error(e: std::io::Error, timeout: &NextTimeout) -> ureq::Error {
    match e.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
            ureq::Error::Timeout(timeout.reason)
        }
        _ => ureq::Error::Io(e),
    }
}

impl Wire for Probed {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let timeout = timeout.for_write();
        let t = timeout.not_zero().map(|t| *t);
        if t != self.write_timeout {
            self.stream.set_write_timeout(t)?;
            self.write_timeout = t;
        }
        let output = &self.buffers.output()[..amount];
        self.stream
            .write_all(output)
            .map_err(|e| io_error(e, &timeout))
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let timeout = timeout.for_read();
        let t = timeout.not_zero().map(|t| *t);
        if t != self.read_timeout {
            self.stream.set_read_timeout(t)?;
            self.read_timeout = t;
        }
        let input = self.buffers.input_append_buf();
        let amount = loop {
            match self.stream.read(input) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_error(e, &timeout)),
            }
        };
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    /// Whether a pooled connection can carry another request: nothing to
    /// read and not closed (as ureq checks it).
    fn is_open(&mut self) -> bool {
        if self.stream.set_nonblocking(true).is_err() {
            return false;
        }
        let mut buf = [0];
        let open = matches!(
            self.stream.read(&mut buf),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
        );
        open && self.stream.set_nonblocking(false).is_ok()
    }

    fn is_tls(&self) -> bool {
        false
    }
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests {
    #[test]
    fn a_read_past_its_timeout_says_timed_out() {
        use std::io::Read;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = super::tcp(
            &[l.local_addr().unwrap()],
            std::time::Duration::from_secs(5),
        )
        .unwrap();
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
