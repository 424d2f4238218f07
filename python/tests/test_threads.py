"""Threads: stop() from another thread, close(), the finalizer backstop, nothing left running."""

import gc
import os
import signal
import logging
import threading
import warnings
from typing import List

import pytest

import kube_tattler
from kube_tattler import Change, reader
from conftest import Fake, line, next_entry, os_threads, until, until_synced


def test_stop_from_another_thread_ends_a_blocked_iteration(fake: Fake) -> None:
    with kube_tattler.open(fake.config("pods")) as r:
        synced = threading.Event()
        got: List[kube_tattler.Entry] = []

        def consume() -> None:
            for e in r:  # blocks in tattler_next_entry once synced: nothing else comes
                got.append(e)
                if e.change == Change.SYNCED:
                    synced.set()

        t = threading.Thread(target=consume, name="consumer")
        t.start()
        assert synced.wait(10), "no Synced"
        r.stop()
        t.join(10)
        assert not t.is_alive(), "stop() did not end the iteration"
        assert len(got) == 4
        with pytest.raises(kube_tattler.Closed):
            r.next()
        r.stop()  # again: nothing happens


def test_stop_from_another_thread_ends_the_main_threads_iteration(fake: Fake) -> None:
    with kube_tattler.open(fake.config("pods")) as r:
        synced = threading.Event()
        stopper = threading.Thread(target=lambda: synced.wait(10) and r.stop(), name="stopper")
        stopper.start()
        n = 0
        for e in r:  # on the main thread: waits in slices, so signals are handled too
            n += 1
            if e.change == Change.SYNCED:
                synced.set()
        stopper.join(10)
        assert n == 4


def test_close_is_idempotent_and_calls_after_it_say_closed(fake: Fake) -> None:
    r = kube_tattler.open(fake.config("pods"))
    e = next_entry(r)
    r.close()
    r.close()
    assert r.closed
    assert e.name.startswith("pod-") and e.object()["kind"] == "Pod"  # entries outlive the reader
    for call in (r.next, r.stats, r.metrics_text, r.checkpoint, lambda: r.set_resources(["pods"])):
        with pytest.raises(kube_tattler.Closed):
            call()
    assert list(r) == []
    r.stop()
    with r:
        pass


def test_close_from_another_thread_ends_a_blocked_next(fake: Fake) -> None:
    r = kube_tattler.open(fake.config("pods"))
    until_synced(r)
    waiting = threading.Event()
    outcome: List[object] = []

    def wait() -> None:
        waiting.set()
        try:
            outcome.append(r.next())
        except kube_tattler.Closed as e:
            outcome.append(e)

    t = threading.Thread(target=wait)
    t.start()
    assert waiting.wait(10)
    r.close()
    t.join(10)
    assert not t.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], kube_tattler.Closed)


def test_no_thread_is_left_after_close(fake: Fake) -> None:
    logger = kube_tattler.log.logger
    records: List[str] = []
    handler = _ListHandler(records)
    logger.addHandler(handler)
    logger.setLevel("DEBUG")  # the callback runs on tattler's threads, through logging
    try:
        before_os, before_py = os_threads(), threading.enumerate()
        with kube_tattler.open(fake.config("pods", "configmaps", "nodes")) as r:
            synced = set()
            until(r, lambda e: e.change == Change.SYNCED and not synced.add(e.resource.resource) and len(synced) == 3)
            assert os_threads() >= before_os + 3  # one per resource
        assert os_threads() == before_os
        # And no stand-in left in threading's table for a thread Python did not start.
        assert threading.enumerate() == before_py
        assert records, "nothing was logged: the test did not run the callback"
    finally:
        logger.removeHandler(handler)
        logger.setLevel("NOTSET")


def test_the_finalizer_closes_an_unreachable_reader(fake: Fake) -> None:
    before = os_threads()
    r = kube_tattler.open(fake.config("pods"))
    until_synced(r)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del r
        gc.collect()
    ours = [str(w.message) for w in caught if str(w.message).startswith("kube_tattler")]
    assert ours == ["kube_tattler: a Reader was not closed"]
    assert reader._backstop_threads, "the finalizer did not run"
    for t in reader._backstop_threads:
        t.join(10)
    reader._backstop_threads.clear()
    assert os_threads() == before


def test_an_unknown_change_number_is_kept_as_an_int() -> None:
    # A newer library may send a change this package has no member for.
    assert kube_tattler.entry.change_of(10) == 10 and not isinstance(kube_tattler.entry.change_of(10), Change)
    assert kube_tattler.entry.change_of(5) is Change.SYNCED
    assert kube_tattler.entry.change_of(7) is Change.STALE
    assert kube_tattler.entry.change_of(9) is Change.FOLLOWING and str(Change.LEADING) == "Leading"
    assert [int(c) for c in Change] == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert str(Change.ADD) == "Add" and "%s" % Change.SNAPSHOT == "Snapshot" and f"{Change.SYNCED}" == "Synced"


class _ListHandler(logging.Handler):
    def __init__(self, into: List[str]) -> None:
        super().__init__()
        self.into = into

    def emit(self, record) -> None:
        self.into.append(record.getMessage())


def test_a_python_signal_handler_runs_while_the_main_thread_waits(fake: Fake) -> None:
    # Python runs a handler only between bytecodes: a main thread inside one
    # long C call would never run it. next() waits in slices so that it does.
    with kube_tattler.open(fake.config("pods")) as r:
        old = signal.signal(signal.SIGUSR1, lambda *_: r.stop())
        try:
            synced = threading.Event()
            sender = threading.Thread(target=lambda: synced.wait(10) and os.kill(os.getpid(), signal.SIGUSR1))
            sender.start()
            n = 0
            for e in r:
                n += 1
                if e.change == Change.SYNCED:
                    synced.set()
            sender.join(10)
            assert n == 4
        finally:
            signal.signal(signal.SIGUSR1, old)


def test_next_with_a_timeout_returns_none_when_nothing_comes(fake: Fake) -> None:
    with kube_tattler.open(fake.config("pods")) as r:
        until_synced(r)
        assert r.next(timeout=0) is None
        assert r.next(timeout=0.05) is None
        with pytest.raises(ValueError):
            r.next(timeout=-1)
