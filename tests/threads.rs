//! Every thread tattler starts has ended when `close` returns, however busy
//! the streams were. One test in its own binary: no other test's threads are
//! counted.

mod common;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use common::proxy::{tattler_threads, tattler_threads_after_close, thread_names};
use common::Watchdog;
use kube_tattler::{Access, Backoff, Config, Reader};

#[test]
fn no_thread_outlives_close_even_mid_reconnect() {
    let _w = Watchdog::new("no_thread_outlives_close", Duration::from_secs(120));
    // A server that hangs up on every connection: the streams reconnect as
    // fast as the backoff lets them, so close lands mid-connect again and again.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::Builder::new()
        .name("hangup-accept".into())
        .spawn(move || {
            for s in listener.incoming() {
                drop(s);
            }
        })
        .unwrap();
    let resources = ["pods", "configmaps", "nodes"];
    let mut most = 0;
    for round in 0..150 {
        let mut c = Config::new(Access::new(format!("http://{addr}")))
            .watch(resources)
            .unwrap();
        c.tuning.backoff = Backoff {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(2),
            reset_after: Duration::from_secs(120),
        };
        let r = Reader::open(c).unwrap();
        let until = Instant::now() + Duration::from_millis(20);
        while Instant::now() < until {
            // One thread per stream, and nothing else (no helper per connection).
            let n = tattler_threads();
            most = most.max(n);
            assert!(
                n <= resources.len(),
                "round {round}: {n} tattler threads for {} streams: {:?}",
                resources.len(),
                thread_names()
            );
        }
        r.close();
        assert_eq!(
            tattler_threads_after_close(),
            0,
            "round {round}: threads left after close: {:?}",
            thread_names()
        );
    }
    assert_eq!(most, resources.len(), "the streams never all ran");
}
