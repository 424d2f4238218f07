//! `tattler_fd`: the eventfd is readable exactly while entries wait.

use std::ffi::c_int;
use std::ptr::null_mut;

use tattler_fakeapi::FakeApi;

use tattler::tattler_status::*;
use tattler::*;

use crate::support::*;

/// Whether `fd` is readable within `ms`.
fn readable(fd: c_int, ms: u16) -> bool {
    use nix::poll::{poll, PollFd, PollFlags};
    // The fd stays open while the reader does: the tests close it after.
    let fd = unsafe_borrow(fd);
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    poll(&mut fds, ms).unwrap() == 1
        && fds[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLIN))
}

fn unsafe_borrow(fd: c_int) -> std::os::fd::BorrowedFd<'static> {
    // SAFETY: the reader owns the fd and outlives every poll of these tests.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
}

#[test]
fn the_readiness_fd_is_readable_exactly_while_entries_wait() {
    let api = FakeApi::start();
    api.apply("pods", FakeApi::pod("shop", "web-1"));
    let r = open(&config(&api, &["pods"])).unwrap();
    assert_eq!(tattler_fd(null_mut()), -1);
    let fd = tattler_fd(r);
    assert!(fd >= 0);
    assert_eq!(tattler_fd(r), fd, "one fd per reader");
    // Readable until the Add and Synced are taken and a TIMEOUT seen.
    let mut got = Vec::new();
    while got.len() < 2 {
        assert!(readable(fd, 10_000), "readable while entries come");
        loop {
            let (st, e) = next(r, 0);
            if st == TATTLER_TIMEOUT {
                break;
            }
            assert_eq!(st, TATTLER_OK);
            got.push(line(e));
        }
    }
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(!readable(fd, 0), "cleared once the queue is empty");
    // A new object makes it readable; taking it clears it (the last one).
    api.apply("pods", FakeApi::pod("shop", "web-2"));
    assert!(readable(fd, 10_000), "readable for the new entry");
    let (st, e) = next(r, 0);
    assert_eq!(st, TATTLER_OK);
    let l = line(e);
    assert!(l.starts_with("Add shop/web-2"), "{l}");
    assert!(!readable(fd, 0), "taking the last entry clears it");
    // A wake does not touch it; a stop makes it readable for good.
    tattler_wake(r);
    assert!(!readable(fd, 0));
    tattler_stop(r);
    assert!(readable(fd, 10_000), "readable once stopped");
    assert_eq!(next(r, 0).0, TATTLER_CLOSED);
    assert!(readable(fd, 0), "still readable after CLOSED");
    close(r);
    assert_eq!(tattler_fd(r), -1, "closed");
}
