"""tattler's log lines into :mod:`logging`, under the ``kube_tattler`` logger.

The C library calls one process-global callback from its own threads
(``tattler-watch-pods``, ...) and from the thread of a call that logs. The
callback takes the GIL, makes a :class:`logging.LogRecord` whose
``threadName`` is that thread's own name, and hands it to the logger named
after the Rust module (``kube_tattler::stream::watch`` becomes
``kube_tattler.stream.watch``, a child of ``kube_tattler``).

Inside a handler, the header's rule holds: a reader's ``next()`` with a
timeout, ``set_resources()`` and replacing the callback raise
:class:`~kube_tattler.Reentrant`; ``stop()``, ``stats()``,
``metrics_text()``, ``checkpoint()``, ``next(timeout=0)`` and ``close()`` work.
"""

from __future__ import annotations

import ctypes
import logging
import sys
import threading
from typing import Dict, Optional

from . import _native

LOGGER_NAME = "kube_tattler"
logger = logging.getLogger(LOGGER_NAME)
# A library's logger prints nothing until the application configures logging.
logger.addHandler(logging.NullHandler())

TRACE = 5
"""The ``logging`` level of tattler's trace lines (below ``DEBUG``)."""

_PY_LEVEL = {1: logging.ERROR, 2: logging.WARNING, 3: logging.INFO, 4: logging.DEBUG, 5: TRACE}

_loggers: Dict[bytes, logging.Logger] = {}
_installed = False
_install_lock = threading.Lock()


def _logger_for(target: Optional[bytes]) -> logging.Logger:
    lg = _loggers.get(target or b"")
    if lg is None:
        name = (target or b"").decode("utf-8", "replace").replace("::", ".")
        if name != LOGGER_NAME and not name.startswith(LOGGER_NAME + "."):
            name = LOGGER_NAME + "." + name if name else LOGGER_NAME
        lg = _loggers[target or b""] = logging.getLogger(name)
    return lg


def _thread_namer():
    """pthread_getname_np, to name records after tattler's threads; None where there is none."""
    try:
        libc = ctypes.CDLL(None)
        getname, self_ = libc.pthread_getname_np, libc.pthread_self
    except (OSError, AttributeError):
        return None
    self_.restype = ctypes.c_void_p
    getname.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    getname.restype = ctypes.c_int

    def name() -> Optional[str]:
        buf = ctypes.create_string_buffer(64)
        if getname(self_(), buf, len(buf)) != 0:
            return None
        return buf.value.decode("utf-8", "replace") or None

    return name


_thread_name = _thread_namer()
# Before 3.13, logging's threading.current_thread() on a thread Python did not
# start leaves a _DummyThread in threading's table for good: threading.enumerate()
# would list every stream thread tattler ever ran. 3.13 removes them itself.
_FORGET_DUMMIES = sys.version_info < (3, 13)


def _on_log(user: Optional[int], level: int, target: Optional[bytes], msg: Optional[bytes]) -> None:
    # Runs on tattler's threads: it must never raise into C (ctypes would only
    # print the traceback, but a handler's failure is not tattler's).
    try:
        pylevel = _PY_LEVEL.get(level, logging.DEBUG)
        lg = _logger_for(target)
        if not lg.isEnabledFor(pylevel):
            return
        ident = threading.get_ident()
        known = ident in threading._active  # type: ignore[attr-defined]
        try:
            text = (msg or b"").decode("utf-8", "replace")
            origin = (target or b"").decode("utf-8", "replace")
            record = lg.makeRecord(lg.name, pylevel, origin, 0, text, (), None)
            if not known and _thread_name is not None:
                record.threadName = _thread_name() or record.threadName
            lg.handle(record)
        finally:
            if _FORGET_DUMMIES and not known:
                with threading._active_limbo_lock:  # type: ignore[attr-defined]
                    threading._active.pop(ident, None)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a broken handler must not reach tattler's thread
        try:
            logging.lastResort.handle(  # type: ignore[union-attr]
                logging.makeLogRecord({"msg": "kube_tattler: a logging handler failed", "levelno": logging.ERROR})
            )
        except Exception:  # noqa: BLE001
            pass


# Kept for the life of the process: the C library holds this pointer.
_callback = _native.LOG_FN(_on_log)


def _tattler_level(pylevel: int) -> int:
    """The C ``tattler_log_level`` that passes everything ``pylevel`` lets through."""
    if pylevel <= TRACE:
        return 5
    if pylevel <= logging.DEBUG:
        return 4
    if pylevel <= logging.INFO:
        return 3
    if pylevel <= logging.WARNING:
        return 2
    if pylevel <= logging.ERROR:
        return 1
    return 0


def sync_log_level() -> None:
    """Tells tattler the ``kube_tattler`` logger's effective level.

    tattler does not even format a line below its level, so it is set from
    the logger's level at every ``open()``; call this after changing the
    level while readers run.
    """
    lib = _native.lib()
    lib.tattler_set_log_level(_tattler_level(logger.getEffectiveLevel()))


def install() -> None:
    """Routes tattler's log lines to :mod:`logging` (done by ``open()``) and syncs the level."""
    global _installed
    lib = _native.lib()
    if not _installed:
        with _install_lock:
            if not _installed:
                status = lib.tattler_set_log_callback(_callback, None)
                # LOGGER_IN_USE: a Rust host program's own logger gets the lines.
                # REENTRANT: opened from inside the callback; the next open installs it.
                _installed = status == _native.OK
    sync_log_level()


def uninstall() -> None:
    """Stops the bridge (at exit, before the interpreter can no longer run the callback)."""
    global _installed
    if _installed and _native._lib is not None:
        # Once this returns the callback is never called again (the header's promise).
        _native._lib.tattler_set_log_callback(_native.LOG_FN(), None)
        _installed = False
