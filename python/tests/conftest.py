"""The fake apiserver, a hard time limit per test, and helpers to read entries.

The fake apiserver is $KUBE_TATTLER_FAKEAPI, or the checkout's debug build of
`cargo build -p tattler-ffi --example fakeapi_serve` (built here when missing).
The suite tests python/kube_tattler (with the checkout's target/debug
library); with KUBE_TATTLER_EXPECT_INSTALLED=1 (python/test.sh) it tests the
installed package instead, and refuses one that does not carry its library.
"""

from __future__ import annotations

import faulthandler
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Dict, List, Optional

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.environ.get("KUBE_TATTLER_EXPECT_INSTALLED") != "1":
    # In a checkout: the package's source, with the library of target/debug.
    sys.path.insert(0, os.path.join(REPO, "python"))

import kube_tattler  # noqa: E402
# Per test: a failure at SOFT seconds, the whole process dumped and killed at HARD
# (a call stuck in C cannot be interrupted by the SIGALRM handler).
SOFT, HARD = 30, 45


def fakeapi_binary() -> str:
    given = os.environ.get("KUBE_TATTLER_FAKEAPI")
    if given:
        return given
    path = os.path.join(REPO, "target", "debug", "examples", "fakeapi_serve")
    if not os.path.exists(path):
        subprocess.run(["cargo", "build", "-p", "tattler-ffi", "--example", "fakeapi_serve"], cwd=REPO, check=True)
    return path


_stderr_fd = 2


def pytest_configure(config: pytest.Config) -> None:
    global _stderr_fd
    # Output capture is suspended here: this is the terminal's stderr, where a
    # hung run's thread dump must go (fd 2 is a capture file during a test).
    _stderr_fd = os.dup(2)
    if os.environ.get("KUBE_TATTLER_EXPECT_INSTALLED") == "1":
        here = os.path.dirname(os.path.abspath(kube_tattler.__file__))
        lib = kube_tattler.library_path()
        if "site-packages" not in here or os.path.dirname(lib) != here:
            raise pytest.UsageError(
                "kube_tattler is %s with the library %s: not the installed wheel's" % (here, lib)
            )


class _Timeout(Exception):
    pass


@pytest.fixture(autouse=True)
def hard_timeout(request: pytest.FixtureRequest):
    def expired(signum, frame):
        raise _Timeout("%s ran over %d s" % (request.node.nodeid, SOFT))

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(SOFT)
    faulthandler.dump_traceback_later(HARD, exit=True, file=_stderr_fd)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


class Fake:
    """A fake apiserver process, driven over its stdin (ffi/examples/fakeapi_serve.rs)."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [fakeapi_binary(), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self._lines: "queue.Queue[Optional[str]]" = queue.Queue()
        self._pump = threading.Thread(target=self._read, name="fakeapi-stdout", daemon=True)
        self._pump.start()
        self.url = self.line()
        self.seeded: Dict[str, int] = {}
        while True:
            line = self.line()
            if line == "ready":
                break
            _, key, rv = line.split()
            self.seeded[key] = int(rv)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def line(self, timeout: float = 10) -> str:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("the fake apiserver said nothing for %s s" % timeout) from None
        if line is None:
            raise AssertionError("the fake apiserver closed its output")
        return line

    def do(self, command: str) -> int:
        """Sends one command; returns the resourceVersion of its `ok RV` answer (0 for a bare `ok`)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        answer = self.line()
        assert answer.startswith("ok"), "%s: %s" % (command, answer)
        rest = answer[2:].strip()
        return int(rest) if rest else 0

    def config(self, *resources: object, **keys: object) -> dict:
        return dict({"server": self.url, "resources": list(resources)}, **keys)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()  # it exits when its stdin closes
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("the fake apiserver did not exit") from None
        self._pump.join(10)
        self.proc.stdout.close()  # type: ignore[union-attr]


@pytest.fixture
def fake():
    f = Fake()
    yield f
    f.close()


def line(e: kube_tattler.Entry) -> str:
    """An entry as one comparable line: `Add default/pod-1 7`, `Synced v1/pods 9`."""
    if e.change == kube_tattler.Change.SYNCED:
        return "Synced %s %d" % (e.resource, e.resource_version)
    if e.change == kube_tattler.Change.ERROR:
        assert e.error is not None
        return "Error %s %d %s ended=%s" % (e.resource, e.error.code, e.error.reason, e.error.ended)
    return "%s %s/%s %d%s" % (e.change, e.namespace, e.name, e.resource_version, " inferred" if e.inferred else "")


def next_entry(r: kube_tattler.Reader, timeout: float = 10) -> kube_tattler.Entry:
    e = r.next(timeout=timeout)
    assert e is not None, "no entry within %s s" % timeout
    return e


def until(r: kube_tattler.Reader, done: Callable[[kube_tattler.Entry], bool], timeout: float = 10) -> List[kube_tattler.Entry]:
    """The entries up to and including the first for which `done` is true."""
    deadline = time.monotonic() + timeout
    got: List[kube_tattler.Entry] = []
    while True:
        e = r.next(timeout=max(0.0, deadline - time.monotonic()))
        assert e is not None, "waited %s s; got %s" % (timeout, [line(x) for x in got])
        got.append(e)
        if done(e):
            return got


def until_synced(r: kube_tattler.Reader, resource: str = "pods", timeout: float = 10) -> List[kube_tattler.Entry]:
    """The entries before the Synced of `resource` (the Synced itself left out)."""
    got = until(r, lambda e: e.change == kube_tattler.Change.SYNCED and e.resource.resource == resource, timeout)
    return got[:-1]


def os_threads() -> int:
    """The process's threads, as the kernel counts them (Python's and tattler's)."""
    return len(os.listdir("/proc/self/task"))

