"""The reader: one ``tattler_reader`` of the C library, its streams running on tattler's threads."""

from __future__ import annotations

import atexit
import ctypes
import json
import math
import os
import threading
import time
import warnings
import weakref
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native, log
from .entry import Entry, copy_entry
from .errors import BufferTooSmall, Closed, InvalidConfig, InvalidResource, from_status

Config = Union[Mapping[str, Any], str, bytes, None]

# A wait on the main thread is cut into slices this long, so that Python runs
# its signal handlers (Ctrl-C, a SIGTERM handler that calls stop()) between
# them: the interpreter cannot run one while the thread is inside a C call.
SIGNAL_CHECK_MS = 200

_open_readers: "weakref.WeakSet[Reader]" = weakref.WeakSet()


def _json_default(value: Any) -> Any:
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError("kube_tattler: %s is not JSON serialisable" % type(value).__name__)


def _config_text(config: Config, keys: Dict[str, Any]) -> bytes:
    if isinstance(config, (bytes, bytearray)):
        config = bytes(config).decode("utf-8")
    if isinstance(config, str):
        if keys:
            raise TypeError("kube_tattler.open: keyword keys go with a dict configuration, not a JSON string")
        text = config
    elif config is None or isinstance(config, Mapping):
        doc = dict(config or {})
        doc.update(keys)
        text = json.dumps(doc, default=_json_default)
    else:
        raise TypeError("kube_tattler.open: the configuration is a dict or a JSON string, not %s" % type(config).__name__)
    if "\0" in text:
        # C would read only up to it.
        raise InvalidConfig("JSON: the configuration contains a NUL character", InvalidConfig.STATUS)
    return text.encode("utf-8")


def _with_error_text(call: Callable[[ctypes.Array, int, Any], int]) -> Tuple[int, str]:
    """Runs a C call that writes its error text into a buffer; again with a larger one if it was cut."""
    size = 2048
    while True:
        buf = ctypes.create_string_buffer(size)
        needed = ctypes.c_size_t(0)
        status = call(buf, size, ctypes.byref(needed))
        if status < 100 or needed.value <= size:
            return status, buf.value.decode("utf-8", "replace")
        size = needed.value  # a failed call changed nothing: asking again is safe


def _copy_out(fn: Callable[..., int], handle: int, text: bool) -> bytes:
    """Runs a C call that copies into a buffer whole or not at all, growing the buffer as asked."""
    size = 4096
    for _ in range(16):
        buf = ctypes.create_string_buffer(size)
        needed = ctypes.c_size_t(0)
        status = fn(handle, buf, size, ctypes.byref(needed))
        if status == _native.OK:
            # Texts count their NUL; a checkpoint is bytes without one.
            return buf.raw[: needed.value - 1 if text else needed.value]
        if status != _native.ERR_BUFFER_TOO_SMALL:
            raise from_status(status)
        size = needed.value + needed.value // 8 + 256  # counters move between two calls
    raise BufferTooSmall("the size kept growing", BufferTooSmall.STATUS)


class Reader:
    """A running reader: the full state of the configured resources, then every change.

    Made by :func:`open`; use it as a context manager, or call :meth:`close`.
    Iterating yields :class:`Entry` objects and ends once the reader is
    stopped (:meth:`stop`, from any thread) and its queued entries are taken.
    """

    def __init__(self, config: Config = None, *, checkpoint: Optional[bytes] = None, **keys: Any) -> None:
        self._handle: Optional[int] = None  # first: __del__ of a failed open looks at it
        self._lock = threading.Lock()
        text = _config_text(config, keys)
        lib = _native.lib()
        log.install()
        cp = None if checkpoint is None else bytes(checkpoint)
        out = ctypes.c_void_p()
        status, message = _with_error_text(
            lambda buf, n, needed: lib.tattler_open_ex(
                text, cp, 0 if cp is None else len(cp), ctypes.byref(out), buf, n, needed
            )
        )
        if status != _native.OK:
            raise from_status(status, message)
        self._handle = out.value
        _open_readers.add(self)

    # The stream of entries.

    def next(self, timeout: Optional[float] = None) -> Optional[Entry]:
        """Waits for the next entry, at most ``timeout`` seconds (``None``: until one comes).

        Returns the entry; ``None`` when ``timeout`` passed with none (0 only
        takes an entry that is ready). Raises :class:`Closed` once the reader
        is stopped or closed and every queued entry has been taken, and on
        every call after that. The GIL is released while it waits.
        """
        lib = _native.lib()
        handle = self._handle
        if handle is None:
            raise Closed("reader closed", Closed.STATUS)
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must be None or >= 0")
        deadline = None if timeout is None else time.monotonic() + timeout
        on_main = threading.get_ident() == threading.main_thread().ident
        out = ctypes.c_void_p()
        while True:
            ms = -1 if deadline is None else max(0, math.ceil((deadline - time.monotonic()) * 1000))
            if on_main and (ms < 0 or ms > SIGNAL_CHECK_MS):
                ms = SIGNAL_CHECK_MS
            status = lib.tattler_next_entry(handle, ms, ctypes.byref(out))
            if status == _native.OK:
                try:
                    return copy_entry(lib, out.value)
                finally:
                    lib.tattler_entry_free(out.value)
            if status == _native.TIMEOUT:
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                continue
            if status == _native.CLOSED or (status == _native.ERR_INVALID_HANDLE and self._handle is None):
                raise Closed("reader closed", Closed.STATUS)
            raise from_status(status)

    def __iter__(self) -> Iterator[Entry]:
        return self

    def __next__(self) -> Entry:
        try:
            entry = self.next()
        except Closed:
            raise StopIteration from None
        assert entry is not None
        return entry

    # Ending.

    def stop(self) -> None:
        """Ends the reader: every stream stops, and a thread blocked in :meth:`next` or a ``for`` loop
        gets the entries still queued, then the end. Safe from any thread, any number of times, also
        from a ``logging`` handler and from a Python signal handler (which runs as normal code). The
        reader must still be closed."""
        handle = self._handle
        if handle is not None:
            _native.lib().tattler_stop(handle)

    def close(self) -> None:
        """Stops the reader, joins its threads and frees it. Idempotent; ``with`` calls it.

        Entries already handed out stay valid. Another thread still blocked in
        :meth:`next` gets the end (the library then frees the reader when that
        call returns).
        """
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is None:
            return
        _open_readers.discard(self)
        status = _native.lib().tattler_close(handle)
        if status != _native.OK:
            raise from_status(status)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._handle is None

    def __enter__(self) -> "Reader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        # A backstop only: close() is the way. Never block whoever dropped the
        # last reference (a garbage collection may run inside a logging lock
        # that a stream thread waits for): stop now, join on a thread of its own.
        handle = getattr(self, "_handle", None)
        if not handle:
            return
        self._handle = None
        try:
            warnings.warn("kube_tattler: a Reader was not closed", ResourceWarning, source=self)
            lib = _native.lib()
            lib.tattler_stop(handle)
            t = threading.Thread(target=lib.tattler_close, args=(handle,), name="kube_tattler-close", daemon=True)
            _backstop_threads.append(t)
            t.start()
        except Exception:  # noqa: BLE001 - at interpreter exit there may be no thread to start
            _native.lib().tattler_close(handle)

    def __repr__(self) -> str:
        return "<kube_tattler.Reader %s>" % ("closed" if self._handle is None else "open")

    # While it runs.

    def set_resources(self, resources: Union[Sequence[Union[str, Mapping[str, Any]]], str], force: bool = False) -> bool:
        """Changes the resources streamed while entries flow; returns whether anything changed.

        ``resources`` is the configuration's ``resources`` list (names, and
        dicts with their own scope) or its JSON text. Added resources sync in
        full (then ``SYNCED``), removed ones stop, the rest run on; ``force``
        restarts every stream. Raises :class:`InvalidResource` (the message
        names the item and key), :class:`InvalidConfig` for an empty list,
        :class:`Closed` when the reader is stopped, :class:`Reentrant` inside a
        ``logging`` handler. A refused list changes nothing.
        """
        if isinstance(resources, (str, bytes)):
            text = resources.encode("utf-8") if isinstance(resources, str) else resources
        elif isinstance(resources, Sequence):
            text = json.dumps(list(resources), default=_json_default).encode("utf-8")
        else:
            raise TypeError("set_resources: a list of names and dicts, or its JSON text")
        if b"\0" in text:
            raise InvalidResource("the resource list contains a NUL character", InvalidResource.STATUS)
        handle = self._handle
        if handle is None:
            raise Closed("reader closed", Closed.STATUS)
        lib = _native.lib()
        changed = ctypes.c_bool(False)
        status, message = _with_error_text(
            lambda buf, n, needed: lib.tattler_set_resources_ex(
                handle, text, bool(force), ctypes.byref(changed), buf, n, needed
            )
        )
        if status == _native.OK:
            return bool(changed.value)
        if status == _native.CLOSED or (status == _native.ERR_INVALID_HANDLE and self._handle is None):
            raise Closed("reader stopped", Closed.STATUS)
        raise from_status(status, message)

    def stats(self) -> List[Dict[str, Any]]:
        """The counters of each stream, in the configured order (``tattler_stats_json``)::

            [{"resource": "v1/pods", "events": 12, "objects": 10, "synced": True, "last_error": None, ...}]
        """
        return json.loads(_copy_out(_native.lib().tattler_stats_json, self._live(), text=True))

    def metrics_text(self) -> str:
        """The counters in Prometheus' text format (0.0.4), ready to serve as ``/metrics``."""
        return _copy_out(_native.lib().tattler_metrics_text, self._live(), text=True).decode("utf-8")

    def checkpoint(self) -> bytes:
        """Where each synced resource can resume, and the objects the consumer holds (no contents, no
        credentials): bytes to keep in a file and pass to ``open(config, checkpoint=...)`` after a restart.

        Exact when taken after :meth:`stop` once iteration has ended (every
        entry taken): so on shutdown, stop, drain, checkpoint, close.
        """
        return _copy_out(_native.lib().tattler_checkpoint, self._live(), text=False)

    def fileno(self) -> int:
        """A file descriptor readable while entries wait (Linux; an eventfd the reader owns).

        For ``selectors``, ``select.select([reader], ...)`` or asyncio's
        ``loop.add_reader``: when it is readable, call ``next(timeout=0)``
        until it returns ``None``. Never read or close it; ``close()`` does.
        """
        fd = _native.lib().tattler_fd(self._live())
        if fd < 0:
            raise OSError("kube_tattler: no readiness file descriptor (not Linux, or the descriptor limit)")
        return fd

    def _live(self) -> int:
        handle = self._handle
        if handle is None:
            raise Closed("reader closed", Closed.STATUS)
        return handle


# The backstop's closing threads, for a test to join.
_backstop_threads: List[threading.Thread] = []


def open(config: Config = None, *, checkpoint: Optional[bytes] = None, **keys: Any) -> Reader:  # noqa: A001
    """Opens a reader: checks the configuration and starts one thread per resource.

    ``config`` is the JSON document of ``tattler_open`` as a dict (or its
    text); keyword arguments add keys to the dict
    (``open(server=url, resources=["pods"])``). Without ``server``,
    ``kubeconfig`` or ``in_cluster`` the cluster is found as kubectl finds it.
    ``checkpoint``: bytes from :meth:`Reader.checkpoint`, to resume.

    Raises :class:`InvalidConfig` (the message names the key),
    :class:`InvalidResource`, :class:`Io` (a file named cannot be read),
    :class:`Tls`, :class:`InvalidCheckpoint`; a server that cannot be reached
    is not an error here but retries (logged) and ``ERROR`` entries.
    """
    return Reader(config, checkpoint=checkpoint, **keys)


@atexit.register
def _close_at_exit() -> None:
    # Before the interpreter finalizes, when tattler's threads can still take
    # the GIL to log: close what is open, then unhook the log callback.
    for r in list(_open_readers):
        try:
            r.close()
        except Exception:  # noqa: BLE001
            pass
    log.uninstall()
