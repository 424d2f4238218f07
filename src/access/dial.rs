//! A TCP connection to one of a host's addresses, as Go's `net.Dialer`
//! makes it (kubectl's; `dialParallel` and `dialSerial` in net/dial.go):
//!
//! - the addresses are split into primaries (the family of the first, in
//!   the resolver's order) and fallbacks (the other family);
//! - each list is tried in order, one address at a time, each attempt given
//!   an equal share of the time left (at least 2 s, or all that is left:
//!   Go's `partialDeadline`);
//! - the fallbacks start 300 ms after the primaries (Go's default
//!   `FallbackDelay`, RFC 8305's "Happy Eyeballs"), or at once when the
//!   primaries have all failed; the first connection made wins, the other
//!   attempt is closed; when both lists fail, the primaries' first error
//!   is the answer.
//!
//! No thread and no async runtime: on Linux the attempts are non-blocking
//! sockets waited on together with `poll`, so nothing outlives the call,
//! and a stop is looked at every [`STOP_POLL`], so that it ends a connect
//! under way (Go's dialer ends at its context's cancel). Elsewhere the
//! lists are tried one after the other with the same shares of time (no
//! race), and a stop is seen only between addresses. The plan (which list,
//! which share) is pure and table-tested; [`connect`] only carries it out.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Go's default `Dialer.FallbackDelay`.
pub(crate) const FALLBACK_DELAY: Duration = Duration::from_millis(300);

/// Go's `saneMinimum`: the least share of the time an address is given
/// while more than that is left.
const SANE_MINIMUM: Duration = Duration::from_secs(2);

/// How often a connect under way looks at its stop.
pub(crate) const STOP_POLL: Duration = Duration::from_millis(100);

/// Connects to one of `addrs` before `deadline` (`None`: no limit of
/// tattler's own, the system's connect timeout), with `TCP_NODELAY` and
/// keepalive probes on, unless `stopped` says true first: then it ends
/// within [`STOP_POLL`] with `ConnectionAborted`. Errors keep their kind
/// (`TimedOut` at the deadline); with several addresses the message names
/// the one that failed.
pub(crate) fn connect(
    addrs: &[SocketAddr],
    deadline: Option<Instant>,
    stopped: &dyn Fn() -> bool,
) -> io::Result<TcpStream> {
    let stream = race(addrs, deadline, stopped)?;
    crate::access::keepalive::configure(&stream)?;
    Ok(stream)
}

fn ended_by_stop() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "the connect was ended by a stop or a relist",
    )
}

/// Go's `partition`: the addresses of the first one's family, in order,
/// and the others, in order.
pub(crate) fn partition(addrs: &[SocketAddr]) -> (Vec<SocketAddr>, Vec<SocketAddr>) {
    let Some(first) = addrs.first() else {
        return (Vec::new(), Vec::new());
    };
    addrs.iter().partition(|a| a.is_ipv4() == first.is_ipv4())
}

/// Go's `partialDeadline`: the deadline of an attempt started at `now` with
/// `remaining` addresses left in its list (this one included): an equal
/// share of the time left, at least 2 s (or all that is left). `None`
/// without a deadline; an error once it has passed.
pub(crate) fn partial_deadline(
    now: Instant,
    deadline: Option<Instant>,
    remaining: usize,
) -> io::Result<Option<Instant>> {
    let Some(deadline) = deadline else {
        return Ok(None);
    };
    let left = deadline.saturating_duration_since(now);
    if left.is_zero() {
        return Err(timed_out());
    }
    let share = left / u32::try_from(remaining.max(1)).unwrap_or(u32::MAX);
    let share = if share >= SANE_MINIMUM {
        share
    } else {
        left.min(SANE_MINIMUM)
    };
    Ok(Some(now + share))
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "connect timed out")
}

/// The error of an attempt at `addr`: named when there are several.
fn at(addr: SocketAddr, several: bool, e: io::Error) -> io::Error {
    if several {
        io::Error::new(e.kind(), format!("{addr}: {e}"))
    } else {
        e
    }
}

fn no_address() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionRefused, "no address to connect to")
}

/// One of the two lists, tried an address at a time.
#[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
struct Lane {
    addrs: Vec<SocketAddr>,
    next: usize,
    /// The list's first error, Go's `firstErr`.
    first_error: Option<io::Error>,
}

#[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
impl Lane {
    fn new(addrs: Vec<SocketAddr>) -> Lane {
        Lane {
            addrs,
            next: 0,
            first_error: None,
        }
    }

    fn failed(&mut self, e: io::Error) {
        self.first_error.get_or_insert(e);
    }

    /// The next address and its attempt's deadline; `None` when the list is
    /// done (every address tried, or the deadline passed).
    fn take(
        &mut self,
        now: Instant,
        deadline: Option<Instant>,
    ) -> Option<(SocketAddr, Option<Instant>)> {
        let addr = *self.addrs.get(self.next)?;
        match partial_deadline(now, deadline, self.addrs.len() - self.next) {
            Ok(until) => {
                self.next += 1;
                Some((addr, until))
            }
            Err(e) => {
                self.next = self.addrs.len();
                self.failed(e);
                None
            }
        }
    }

    fn error(&mut self) -> io::Error {
        self.first_error.take().unwrap_or_else(no_address)
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn race(
    addrs: &[SocketAddr],
    deadline: Option<Instant>,
    stopped: &dyn Fn() -> bool,
) -> io::Result<TcpStream> {
    // No race here: the primaries, then the fallbacks, each address with
    // its share of the time.
    let several = addrs.len() > 1;
    let (primaries, fallbacks) = partition(addrs);
    let mut first = None;
    for list in [primaries, fallbacks] {
        for (i, addr) in list.iter().enumerate() {
            if stopped() {
                return Err(ended_by_stop());
            }
            let attempt = match partial_deadline(Instant::now(), deadline, list.len() - i) {
                Ok(Some(until)) => TcpStream::connect_timeout(
                    addr,
                    until
                        .saturating_duration_since(Instant::now())
                        .max(Duration::from_millis(1)),
                ),
                Ok(None) => TcpStream::connect(addr),
                Err(e) => Err(e),
            };
            match attempt {
                Ok(s) => return Ok(s),
                Err(e) => {
                    first.get_or_insert(at(*addr, several, e));
                }
            }
        }
    }
    Err(first.unwrap_or_else(no_address))
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn race(
    addrs: &[SocketAddr],
    deadline: Option<Instant>,
    stopped: &dyn Fn() -> bool,
) -> io::Result<TcpStream> {
    use std::os::fd::{AsFd, AsRawFd, OwnedFd};

    use nix::errno::Errno;
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use nix::sys::socket::{
        getsockopt, socket, sockopt, AddressFamily, SockFlag, SockType, SockaddrStorage,
    };

    /// An attempt under way: its socket, address and deadline.
    struct Attempt {
        fd: OwnedFd,
        addr: SocketAddr,
        until: Option<Instant>,
    }

    /// Starts a non-blocking connect (one that completes at once is seen
    /// by the next poll, as one that completes later).
    fn start(addr: SocketAddr, until: Option<Instant>) -> io::Result<Attempt> {
        let family = if addr.is_ipv4() {
            AddressFamily::Inet
        } else {
            AddressFamily::Inet6
        };
        let fd = socket(
            family,
            SockType::Stream,
            SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
            None,
        )?;
        match nix::sys::socket::connect(fd.as_raw_fd(), &SockaddrStorage::from(addr)) {
            Ok(()) | Err(Errno::EINPROGRESS) | Err(Errno::EINTR) => Ok(Attempt { fd, addr, until }),
            Err(e) => Err(e.into()),
        }
    }

    let several = addrs.len() > 1;
    let (primaries, fallbacks) = partition(addrs);
    let started = Instant::now();
    let mut lanes = [Lane::new(primaries), Lane::new(fallbacks)];
    // When the fallbacks start; `None` once they have (or have none).
    let mut fallback_at = (!lanes[1].addrs.is_empty()).then_some(started + FALLBACK_DELAY);
    let mut running: [Option<Attempt>; 2] = [None, None];
    loop {
        if stopped() {
            // The attempts under way are closed as they drop.
            return Err(ended_by_stop());
        }
        let now = Instant::now();
        if fallback_at.is_some_and(|t| t <= now) {
            fallback_at = None;
        }
        // Each started list without an attempt under way makes its next one.
        for i in 0..2 {
            let started_lane = i == 0 || (fallback_at.is_none() && !lanes[1].addrs.is_empty());
            while started_lane && running[i].is_none() {
                let Some((addr, until)) = lanes[i].take(now, deadline) else {
                    break;
                };
                match start(addr, until) {
                    Ok(a) => running[i] = Some(a),
                    Err(e) => lanes[i].failed(at(addr, several, e)),
                }
            }
        }
        let primary_done = running[0].is_none();
        let fallback_done = running[1].is_none() && fallback_at.is_none();
        if primary_done && fallback_done {
            // Go answers with the primaries' error.
            let [primary, fallback] = &mut lanes;
            return Err(match primary.first_error {
                Some(_) => primary.error(),
                None => fallback.error(),
            });
        }
        if primary_done && fallback_at.is_some() {
            // The primaries failed: the fallbacks start now (Go resets its timer to 0).
            fallback_at = Some(now);
            continue;
        }
        // Wait for an attempt to finish, the earliest attempt deadline,
        // the fallbacks' start or the next look at the stop.
        let wake = running
            .iter()
            .flatten()
            .filter_map(|a| a.until)
            .chain(fallback_at)
            .fold(now + STOP_POLL, Instant::min);
        // Rounded up: never a busy wait on a sub-millisecond rest.
        let ms = wake
            .saturating_duration_since(now)
            .as_micros()
            .div_ceil(1000);
        let timeout = PollTimeout::from(u16::try_from(ms).unwrap_or(u16::MAX));
        let mut which = Vec::with_capacity(2);
        let mut fds = Vec::with_capacity(2);
        for (i, a) in running.iter().enumerate() {
            if let Some(a) = a {
                which.push(i);
                fds.push(PollFd::new(a.fd.as_fd(), PollFlags::POLLOUT));
            }
        }
        match poll(&mut fds, timeout) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
        let ready: Vec<bool> = fds
            .iter()
            .map(|f| f.revents().is_some_and(|r| !r.is_empty()))
            .collect();
        drop(fds);
        let now = Instant::now();
        for (k, i) in which.into_iter().enumerate() {
            let Some(a) = running[i].take() else { continue };
            if ready[k] {
                match getsockopt(&a.fd, sockopt::SocketError) {
                    Ok(0) => {
                        let stream = TcpStream::from(a.fd);
                        stream.set_nonblocking(false)?;
                        // The other attempt, if any, is closed as it drops.
                        return Ok(stream);
                    }
                    Ok(errno) => {
                        lanes[i].failed(at(a.addr, several, io::Error::from_raw_os_error(errno)))
                    }
                    Err(e) => lanes[i].failed(at(a.addr, several, e.into())),
                }
            } else if a.until.is_some_and(|t| t <= now) {
                lanes[i].failed(at(a.addr, several, timed_out()));
            } else {
                running[i] = Some(a);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn addrs(list: &[&str]) -> Vec<SocketAddr> {
        list.iter().map(|a| a.parse().unwrap()).collect()
    }

    #[test]
    fn addresses_split_by_the_first_ones_family_in_order() {
        let (p, f) = partition(&addrs(&[
            "[::1]:1",
            "127.0.0.1:2",
            "[::2]:3",
            "127.0.0.3:4",
        ]));
        assert_eq!(
            (p, f),
            (
                addrs(&["[::1]:1", "[::2]:3"]),
                addrs(&["127.0.0.1:2", "127.0.0.3:4"])
            )
        );
        let (p, f) = partition(&addrs(&["10.0.0.1:1", "10.0.0.2:1"]));
        assert_eq!((p.len(), f.len()), (2, 0));
        assert_eq!(partition(&[]), (vec![], vec![]));
    }

    /// Go's `TestDialerPartialDeadline` cases.
    #[test]
    fn each_address_gets_gos_share_of_the_time_left() {
        let now = Instant::now();
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        for (left, remaining, want) in [
            // Equal shares while they are at least 2 s.
            (s(10), 1, Some(s(10))),
            (s(10), 2, Some(s(5))),
            (s(10), 3, Some(ms(3333) + Duration::from_nanos(333_333))),
            // Shorter shares are 2 s, or all that is left.
            (s(10), 10, Some(s(2))),
            (s(3), 2, Some(s(2))),
            (ms(1500), 3, Some(ms(1500))),
            (ms(1), 100, Some(ms(1))),
        ] {
            let got = partial_deadline(now, Some(now + left), remaining).unwrap();
            assert_eq!(got.map(|t| t - now), want, "{left:?} {remaining}");
        }
        // Past the deadline: a timeout; no deadline: none per address.
        let e = partial_deadline(now, Some(now), 1).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(partial_deadline(now, None, 3).unwrap(), None);
    }

    #[test]
    fn a_list_hands_out_its_addresses_then_ends() {
        let now = Instant::now();
        let mut lane = Lane::new(addrs(&["10.0.0.1:1", "10.0.0.2:1"]));
        let d = Some(now + Duration::from_secs(10));
        assert_eq!(
            lane.take(now, d),
            Some((
                "10.0.0.1:1".parse().unwrap(),
                Some(now + Duration::from_secs(5))
            ))
        );
        assert_eq!(
            lane.take(now, d).map(|(a, _)| a),
            Some("10.0.0.2:1".parse().unwrap())
        );
        assert_eq!(lane.take(now, d), None);
        // Past the deadline the list ends with a timeout.
        let mut lane = Lane::new(addrs(&["10.0.0.1:1"]));
        assert_eq!(lane.take(now, Some(now)), None);
        assert_eq!(lane.error().kind(), io::ErrorKind::TimedOut);
    }

    /// A loopback address nothing answers: a listener whose one-place
    /// queue is full drops every further SYN, as a black hole does. `None`
    /// (the test skips) where the family or that behaviour is missing.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub(crate) fn black_hole(ip: &str) -> Option<(std::net::TcpListener, TcpStream, SocketAddr)> {
        use nix::sys::socket::{
            bind, listen, socket, AddressFamily, Backlog, SockFlag, SockType, SockaddrStorage,
        };
        use std::os::fd::AsRawFd;
        let at = SocketAddr::new(ip.parse().unwrap(), 0);
        let family = if at.is_ipv4() {
            AddressFamily::Inet
        } else {
            AddressFamily::Inet6
        };
        let fd = socket(family, SockType::Stream, SockFlag::SOCK_CLOEXEC, None).ok()?;
        bind(fd.as_raw_fd(), &SockaddrStorage::from(at)).ok()?;
        listen(&fd, Backlog::new(0).ok()?).ok()?;
        let listener = std::net::TcpListener::from(fd);
        let addr = listener.local_addr().ok()?;
        let filler = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
        match TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            Err(e) if e.kind() == io::ErrorKind::TimedOut => Some((listener, filler, addr)),
            _ => {
                eprintln!("no black hole on {ip} here: skipped");
                None
            }
        }
    }

    /// Go's race: a black-holed primary (IPv6 first, as the resolver
    /// orders `localhost`'s addresses) costs the fallback delay, not the
    /// timeout; the connection made is the fallback's.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn a_black_holed_first_family_costs_the_fallback_delay() {
        let Some((_hole, _filler, dead)) = black_hole("::1") else {
            return;
        };
        let good = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let live = good.local_addr().unwrap();
        let start = Instant::now();
        let s = connect(
            &[dead, live],
            Some(start + Duration::from_secs(20)),
            &|| false,
        )
        .unwrap();
        let took = start.elapsed();
        assert_eq!(s.peer_addr().unwrap(), live);
        assert!(s.nodelay().unwrap());
        // 300 ms, and a generous margin for a loaded machine; the timeout
        // (20 s) or Go's 2 s share would be far more.
        assert!(took >= FALLBACK_DELAY, "{took:?}");
        assert!(took < Duration::from_millis(1800), "{took:?}");
    }

    /// Within one family the addresses are tried one after the other, each
    /// with its share: a black-holed first of two, under a 4.2 s deadline,
    /// costs 2.1 s, then the second connects.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn within_a_family_each_address_gets_its_share() {
        let Some((_hole, _filler, dead)) = black_hole("127.0.0.1") else {
            return;
        };
        let good = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let live = good.local_addr().unwrap();
        let start = Instant::now();
        let s = connect(
            &[dead, live],
            Some(start + Duration::from_millis(4200)),
            &|| false,
        )
        .unwrap();
        let took = start.elapsed();
        assert_eq!(s.peer_addr().unwrap(), live);
        assert!(took >= Duration::from_millis(2050), "{took:?}");
        assert!(took < Duration::from_millis(4200), "{took:?}");
        // Under a 1 s deadline the first address takes it all (Go's 2 s
        // minimum share): a timeout that names it, the second never tried.
        let start = Instant::now();
        let e = connect(&[dead, live], Some(start + Duration::from_secs(1)), &|| {
            false
        })
        .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert_eq!(e.to_string(), format!("{dead}: connect timed out"));
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
    }

    /// Refused primaries start the fallbacks at once; when both fail the
    /// primaries' error is the answer (Go's).
    #[test]
    fn refused_primaries_start_the_fallbacks_at_once() {
        let closed = {
            let l = std::net::TcpListener::bind("[::1]:0");
            let Ok(l) = l else {
                eprintln!("no IPv6 loopback here: skipped");
                return;
            };
            l.local_addr().unwrap()
        };
        let good = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let live = good.local_addr().unwrap();
        let start = Instant::now();
        let s = connect(
            &[closed, live],
            Some(start + Duration::from_secs(20)),
            &|| false,
        )
        .unwrap();
        assert_eq!(s.peer_addr().unwrap(), live);
        assert!(start.elapsed() < FALLBACK_DELAY, "{:?}", start.elapsed());
        let closed4 = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let e = connect(&[closed, closed4], None, &|| false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
        assert!(e.to_string().starts_with(&format!("{closed}: ")), "{e}");
        let e = connect(&[], None, &|| false).unwrap_err();
        assert_eq!(e.to_string(), "no address to connect to");
    }

    /// A stop ends a connect to a black hole within [`STOP_POLL`] (and a
    /// margin for a loaded machine), with no deadline of its own (a connect
    /// timeout of 0) as with one, and before a fallback is even started.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn a_stop_ends_a_connect_under_way() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let Some((_hole, _filler, dead)) = black_hole("127.0.0.1") else {
            return;
        };
        for deadline in [None, Some(Instant::now() + Duration::from_secs(60))] {
            let stop = Arc::new(AtomicBool::new(false));
            let stopper = {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(400));
                    stop.store(true, Ordering::SeqCst);
                    Instant::now()
                })
            };
            let e = connect(&[dead, dead], deadline, &|| stop.load(Ordering::SeqCst)).unwrap_err();
            let ended = Instant::now();
            let stopped_at = stopper.join().unwrap();
            assert_eq!(e.kind(), io::ErrorKind::ConnectionAborted, "{e}");
            assert_eq!(e.to_string(), "the connect was ended by a stop or a relist");
            let late = ended.saturating_duration_since(stopped_at);
            assert!(late < STOP_POLL + Duration::from_millis(400), "{late:?}");
        }
        // Stopped before it starts: no attempt at all.
        let e = connect(&[dead], None, &|| true).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionAborted);
    }
}
