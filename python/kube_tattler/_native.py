"""The C library: where it is found, and every function's ctypes prototype.

The only module that knows the C ABI's types. Every call goes through a
``ctypes.CDLL``, which releases the GIL for the call's duration: a thread
blocked in ``tattler_next_entry`` lets the others run (``stop()`` among them),
and tattler's own threads can take the GIL to log while a call waits for them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from typing import Iterator, List, Optional, Tuple

# The C ABI this package is written for. Before 1.0 a minor release may change
# the ABI (the SONAME is libtattler.so.0.MINOR), so the minor must match.
ABI = (0, 1)

# tattler_status values the wrapper acts on (include/tattler.h).
OK, TIMEOUT, CLOSED = 0, 1, 2
ERR_BUFFER_TOO_SMALL = 105
ERR_INVALID_HANDLE = 113

LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p)

_c_size_p = ctypes.POINTER(ctypes.c_size_t)
_c_void_pp = ctypes.POINTER(ctypes.c_void_p)
_c_u8_p = ctypes.POINTER(ctypes.c_uint8)
_c_bool_p = ctypes.POINTER(ctypes.c_bool)

# name: (restype, argtypes). Strings the library returns are c_char_p, which
# ctypes copies into bytes at once: nothing borrowed outlives the call.
_PROTOTYPES = {
    "tattler_status_str": (ctypes.c_char_p, [ctypes.c_int]),
    "tattler_version": (ctypes.c_char_p, []),
    "tattler_version_number": (ctypes.c_uint32, []),
    "tattler_open_ex": (
        ctypes.c_int,
        [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, _c_void_pp, ctypes.c_char_p, ctypes.c_size_t, _c_size_p],
    ),
    "tattler_next_entry": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int64, _c_void_pp]),
    "tattler_fd": (ctypes.c_int, [ctypes.c_void_p]),
    "tattler_stop": (None, [ctypes.c_void_p]),
    "tattler_close": (ctypes.c_int, [ctypes.c_void_p]),
    "tattler_set_resources_ex": (
        ctypes.c_int,
        [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_bool, _c_bool_p, ctypes.c_char_p, ctypes.c_size_t, _c_size_p],
    ),
    "tattler_stats_json": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, _c_size_p]),
    "tattler_metrics_text": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, _c_size_p]),
    "tattler_checkpoint": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, _c_size_p]),
    "tattler_entry_change": (ctypes.c_int, [ctypes.c_void_p]),
    "tattler_entry_group": (ctypes.c_char_p, [ctypes.c_void_p]),
    "tattler_entry_version": (ctypes.c_char_p, [ctypes.c_void_p]),
    "tattler_entry_resource": (ctypes.c_char_p, [ctypes.c_void_p]),
    "tattler_entry_kind": (ctypes.c_char_p, [ctypes.c_void_p]),
    "tattler_entry_namespace": (ctypes.c_char_p, [ctypes.c_void_p]),
    "tattler_entry_name": (ctypes.c_char_p, [ctypes.c_void_p]),
    "tattler_entry_uid": (ctypes.c_char_p, [ctypes.c_void_p]),
    "tattler_entry_identity": (ctypes.c_char_p, [ctypes.c_void_p]),
    "tattler_entry_holder": (ctypes.c_char_p, [ctypes.c_void_p]),
    "tattler_entry_term": (ctypes.c_bool, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)]),
    "tattler_entry_resource_version": (ctypes.c_uint64, [ctypes.c_void_p]),
    "tattler_entry_resource_version_str": (ctypes.c_char_p, [ctypes.c_void_p]),
    "tattler_entry_object": (_c_u8_p, [ctypes.c_void_p, _c_size_p]),
    "tattler_entry_inferred": (ctypes.c_bool, [ctypes.c_void_p]),
    "tattler_entry_error_ended": (ctypes.c_bool, [ctypes.c_void_p]),
    "tattler_entry_error_code": (ctypes.c_uint16, [ctypes.c_void_p]),
    "tattler_entry_error_reason": (ctypes.c_char_p, [ctypes.c_void_p]),
    "tattler_entry_error_message": (ctypes.c_char_p, [ctypes.c_void_p]),
    "tattler_entry_free": (None, [ctypes.c_void_p]),
    "tattler_set_log_callback": (ctypes.c_int, [LOG_FN, ctypes.c_void_p]),
    "tattler_set_log_level": (ctypes.c_int, [ctypes.c_int]),
    "tattler_in_log_callback": (ctypes.c_bool, []),
}


class LibraryNotFound(ImportError):
    """libtattler could not be loaded, or is not a version this package speaks."""


def _file_name() -> str:
    return "libtattler.dylib" if sys.platform == "darwin" else "libtattler.so"


def candidates() -> Iterator[Tuple[str, str]]:
    """Where the library is looked for, in order: (how it was found, path or name)."""
    env = os.environ.get("KUBE_TATTLER_LIB")
    if env:
        # An explicit choice is the only candidate: falling back to another
        # library would hide the mistake.
        yield "KUBE_TATTLER_LIB", env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield "the wheel", os.path.join(here, _file_name())
    # A checkout: python/kube_tattler/ -> the repository's cargo target directory.
    repo = os.path.dirname(os.path.dirname(here))
    if os.path.isfile(os.path.join(repo, "Cargo.toml")) and os.path.isdir(os.path.join(repo, "ffi")):
        target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(repo, "target")
        for profile in ("debug", "release"):
            yield "the repository", os.path.join(target, profile, _file_name())
    # The system loader: `make install` puts libtattler.so.0.MINOR on its path.
    if sys.platform != "darwin":
        yield "the system loader", "libtattler.so.%d.%d" % ABI
    found = ctypes.util.find_library("tattler")
    if found:
        yield "the system loader", found


def _load() -> Tuple[ctypes.CDLL, str]:
    tried: List[str] = []
    for how, path in candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (%s): no such file" % (path, how))
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s): %s" % (path, how, e))
            continue
        try:
            for name, (restype, argtypes) in _PROTOTYPES.items():
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = restype, argtypes
        except AttributeError as e:
            tried.append("%s (%s): not tattler's C library (%s)" % (path, how, e))
            continue
        number = lib.tattler_version_number()
        if (number // 10000, number // 100 % 100) != ABI:
            tried.append(
                "%s (%s): libtattler %s, but this package needs %d.%d.x"
                % (path, how, lib.tattler_version().decode(), ABI[0], ABI[1])
            )
            continue
        return lib, path
    raise LibraryNotFound(
        "kube_tattler: cannot load libtattler %d.%d; tried:\n  " % ABI
        + "\n  ".join(tried)
        + "\nInstall the kube-tattler wheel (it carries the library), or set KUBE_TATTLER_LIB "
        "to a libtattler.so (`make install` or `cargo build -p tattler-ffi` in the tattler repository)."
    )


_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_path: Optional[str] = None


def lib() -> ctypes.CDLL:
    """The loaded library (loaded at the first call, once)."""
    global _lib, _path
    if _lib is None:
        with _lock:
            if _lib is None:
                _lib, _path = _load()
    return _lib


def path() -> str:
    """The file the library was loaded from (or the name the system loader resolved)."""
    lib()
    assert _path is not None
    return _path
