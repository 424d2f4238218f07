//! A scripted SOCKS5 proxy (RFC 1928, RFC 1929) on 127.0.0.1: it records
//! each greeting, username/password and CONNECT request byte for byte, then
//! answers as its `SocksMode` says; a tunnel goes to 127.0.0.1 at the
//! requested port, whatever host was asked for (so that names such as
//! `kubernetes.internal` need no DNS).

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the proxy does with each client.
#[derive(Clone, Debug)]
pub enum SocksMode {
    /// No authentication; CONNECT tunnels.
    Tunnel,
    /// Username/password required (method 02) and checked; then tunnels.
    Login(String, String),
    /// No authentication; CONNECT is answered with this reply code.
    Refuse(u8),
}

/// What the clients sent.
#[derive(Default, Debug)]
pub struct SocksSeen {
    /// Each greeting (`05 n methods…`).
    pub greetings: Vec<Vec<u8>>,
    /// Each username and password sent.
    pub logins: Vec<(String, String)>,
    /// Each CONNECT request, whole (`05 01 00 atyp addr port`).
    pub connects: Vec<Vec<u8>>,
}

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    seen: Mutex<SocksSeen>,
    sockets: Mutex<Vec<TcpStream>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Shared {
    fn track(&self, s: &TcpStream) -> bool {
        let mut all = self.sockets.lock().unwrap();
        if self.stop.load(Ordering::SeqCst) {
            let _ = s.shutdown(Shutdown::Both);
            return false;
        }
        if let Ok(c) = s.try_clone() {
            all.push(c);
        }
        true
    }

    fn spawn(&self, f: impl FnOnce() + Send + 'static) {
        let h = std::thread::Builder::new()
            .name("socks-proxy".into())
            .spawn(f)
            .expect("spawn");
        self.threads.lock().unwrap().push(h);
    }
}

/// The proxy; dropping it ends every connection and joins its threads.
pub struct SocksProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl SocksProxy {
    pub fn start(mode: SocksMode) -> SocksProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        let sh = shared.clone();
        let accept = std::thread::Builder::new()
            .name("socks-accept".into())
            .spawn(move || {
                for c in listener.incoming() {
                    if sh.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(c) = c else { continue };
                    if !sh.track(&c) {
                        break;
                    }
                    let (sh2, mode) = (sh.clone(), mode.clone());
                    sh.spawn(move || serve(&sh2, c, &mode));
                }
            })
            .unwrap();
        SocksProxy {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    /// `socks5://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("socks5://{}", self.addr)
    }

    /// What the clients sent so far.
    pub fn seen<T>(&self, f: impl FnOnce(&SocksSeen) -> T) -> T {
        f(&self.shared.seen.lock().unwrap())
    }
}

impl Drop for SocksProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(500));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        for s in self.shared.sockets.lock().unwrap().iter() {
            let _ = s.shutdown(Shutdown::Both);
        }
        let threads: Vec<_> = self.shared.threads.lock().unwrap().drain(..).collect();
        for h in threads {
            let _ = h.join();
        }
    }
}

fn read_n(c: &mut TcpStream, n: usize) -> Option<Vec<u8>> {
    let mut b = vec![0u8; n];
    c.read_exact(&mut b).ok()?;
    Some(b)
}

fn serve(sh: &Arc<Shared>, mut c: TcpStream, mode: &SocksMode) {
    let _ = c.set_read_timeout(Some(Duration::from_secs(20)));
    let Some(head) = read_n(&mut c, 2) else {
        return;
    };
    let Some(methods) = read_n(&mut c, usize::from(head[1])) else {
        return;
    };
    sh.seen
        .lock()
        .unwrap()
        .greetings
        .push([head, methods.clone()].concat());
    match mode {
        SocksMode::Login(user, password) => {
            if !methods.contains(&2) {
                let _ = c.write_all(&[5, 0xff]);
                return;
            }
            let _ = c.write_all(&[5, 2]);
            let Some(v) = read_n(&mut c, 2) else { return };
            let Some(name) = read_n(&mut c, usize::from(v[1])) else {
                return;
            };
            let Some(n) = read_n(&mut c, 1) else { return };
            let Some(pw) = read_n(&mut c, usize::from(n[0])) else {
                return;
            };
            let (name, pw) = (
                String::from_utf8_lossy(&name).into_owned(),
                String::from_utf8_lossy(&pw).into_owned(),
            );
            let ok = v[0] == 1 && name == *user && pw == *password;
            sh.seen.lock().unwrap().logins.push((name, pw));
            let _ = c.write_all(&[1, if ok { 0 } else { 1 }]);
            if !ok {
                return;
            }
        }
        _ => {
            let _ = c.write_all(&[5, 0]);
        }
    }
    let Some(req) = read_n(&mut c, 4) else { return };
    let addr_len = match req[3] {
        1 => 4,
        4 => 16,
        3 => match read_n(&mut c, 1) {
            Some(n) => usize::from(n[0]) + 1,
            None => return,
        },
        _ => return,
    };
    // The length byte of a domain was read apart: put it back in the record.
    let rest = if req[3] == 3 {
        let Some(rest) = read_n(&mut c, addr_len - 1 + 2) else {
            return;
        };
        [&[u8::try_from(addr_len - 1).unwrap()][..], &rest].concat()
    } else {
        let Some(rest) = read_n(&mut c, addr_len + 2) else {
            return;
        };
        rest
    };
    let port = u16::from_be_bytes([rest[rest.len() - 2], rest[rest.len() - 1]]);
    sh.seen.lock().unwrap().connects.push([req, rest].concat());
    if let SocksMode::Refuse(code) = mode {
        let _ = c.write_all(&[5, *code, 0, 1, 0, 0, 0, 0, 0, 0]);
        return;
    }
    let Ok(up) = TcpStream::connect(("127.0.0.1", port)) else {
        let _ = c.write_all(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0]);
        return;
    };
    if !sh.track(&up) {
        return;
    }
    // Bound to a domain, as some proxies answer: the client reads it whole.
    if c.write_all(&[&[5, 0, 0, 3, 5][..], b"socks", &[0x04, 0x38]].concat())
        .is_err()
    {
        return;
    }
    let _ = c.set_read_timeout(None);
    let (Ok(mut up_r), Ok(mut c_w)) = (up.try_clone(), c.try_clone()) else {
        return;
    };
    sh.spawn(move || {
        let _ = std::io::copy(&mut up_r, &mut c_w);
        let _ = c_w.shutdown(Shutdown::Both);
    });
    let mut up_w = up;
    let _ = std::io::copy(&mut c, &mut up_w);
    let _ = up_w.shutdown(Shutdown::Both);
}
