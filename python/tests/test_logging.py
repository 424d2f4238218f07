"""The log callback into logging: records from tattler's own threads, and what a handler may call."""

import logging
import threading
from typing import List, Optional

import pytest

import kube_tattler
from kube_tattler import log
from conftest import Fake, until_synced


class Recorder(logging.Handler):
    """Keeps records; `hook` runs inside emit, on whichever thread logs."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: List[logging.LogRecord] = []
        self.synced = threading.Event()
        self.hook = None

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if "synced" in record.getMessage():
            self.synced.set()
        if self.hook is not None:
            self.hook(record)


@pytest.fixture
def recorder():
    h = Recorder()
    log.logger.addHandler(h)
    log.logger.setLevel(logging.DEBUG)
    yield h
    log.logger.removeHandler(h)
    log.logger.setLevel(logging.NOTSET)
    kube_tattler.sync_log_level()


def test_log_lines_reach_logging_from_tattlers_threads(fake: Fake, recorder: Recorder) -> None:
    with kube_tattler.open(fake.config("pods")) as r:
        until_synced(r)
        # The stream logs "v1/pods: synced 3 objects ..." as it sends Synced.
        assert recorder.synced.wait(10), [x.getMessage() for x in recorder.records]
    synced = [x for x in recorder.records if "synced" in x.getMessage()][0]
    assert synced.levelno == logging.INFO
    assert synced.name.startswith("kube_tattler.") and synced.pathname.startswith("kube_tattler::")
    # Named after tattler's thread (the kernel keeps 15 bytes of "tattler-watch-pods").
    assert synced.threadName.startswith("tattler-watch")
    # The warning about plain http, from open() on this thread.
    plain = [x for x in recorder.records if "plain http" in x.getMessage()]
    assert plain and plain[0].levelno == logging.WARNING and plain[0].threadName == threading.current_thread().name


def test_a_handler_may_call_what_the_header_allows(fake: Fake, recorder: Recorder) -> None:
    outcome = {}
    done = threading.Event()
    reader: Optional[kube_tattler.Reader] = None

    def inside(record: logging.LogRecord) -> None:
        if reader is None or done.is_set() or not record.threadName.startswith("tattler-"):
            return
        outcome["stats"] = reader.stats()[0]["resource"]
        outcome["try next"] = reader.next(timeout=0)  # does not wait: allowed
        for name, call in (("next", lambda: reader.next(timeout=1)), ("set_resources", lambda: reader.set_resources(["pods"]))):
            try:
                call()
                outcome[name] = "returned"
            except kube_tattler.Error as e:
                outcome[name] = type(e).__name__
        done.set()

    recorder.hook = inside
    with kube_tattler.open(fake.config("pods")) as r:
        reader = r
        fake.do("apply pods default pod-9")  # something to log on the stream's thread
        assert done.wait(10)
    assert outcome["stats"] == "v1/pods"
    assert outcome["next"] == "Reentrant" and outcome["set_resources"] == "Reentrant"


def test_a_failing_handler_does_not_stop_the_stream(fake: Fake, recorder: Recorder) -> None:
    def broken(record: logging.LogRecord) -> None:
        raise RuntimeError("a handler's bug")

    recorder.hook = broken
    with kube_tattler.open(fake.config("pods")) as r:
        assert len(until_synced(r)) == 3


def test_levels_map_both_ways() -> None:
    assert [log._tattler_level(lv) for lv in (1, 5, 10, 20, 30, 40, 50)] == [5, 5, 4, 3, 2, 1, 0]
    assert [log._PY_LEVEL[n] for n in (1, 2, 3, 4, 5)] == [40, 30, 20, 10, kube_tattler.TRACE]
    assert log._logger_for(b"kube_tattler::stream::watch").name == "kube_tattler.stream.watch"
    assert log._logger_for(b"ureq::run").name == "kube_tattler.ureq.run"
    assert log._logger_for(b"").name == "kube_tattler"
