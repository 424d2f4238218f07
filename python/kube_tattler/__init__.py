"""kube_tattler: the full state of Kubernetes objects, then every change, from a kube-apiserver.

A binding over tattler's C library (``libtattler.so``, with ``ctypes``)::

    import kube_tattler

    with kube_tattler.open({"resources": ["pods"]}) as r:
        for e in r:
            print(e.change, e.namespace, e.name, e.resource_version)

See the package's README for where the library is found, threading and logging.
"""

from ._native import LibraryNotFound
from .entry import Change, Entry, ErrorInfo, Resource
from .errors import (
    BufferTooSmall,
    Closed,
    Error,
    InvalidArg,
    InvalidCheckpoint,
    InvalidConfig,
    InvalidHandle,
    InvalidResource,
    InvalidUtf8,
    Io,
    LoggerInUse,
    NullArg,
    Other,
    Panic,
    Reentrant,
    Tls,
)
from .log import TRACE, sync_log_level
from .reader import Reader, open

__version__ = "0.1.0"


def library_version() -> str:
    """The version of the loaded libtattler, e.g. ``"0.1.0"``."""
    from . import _native

    return _native.lib().tattler_version().decode()


def library_path() -> str:
    """The file libtattler was loaded from (or the name the system loader resolved)."""
    from . import _native

    return _native.path()


__all__ = [
    "open", "Reader", "Entry", "Change", "Resource", "ErrorInfo",
    "Error", "Closed", "NullArg", "InvalidConfig", "InvalidUtf8", "Io", "Panic", "BufferTooSmall",
    "InvalidResource", "Tls", "InvalidArg", "LoggerInUse", "Other", "Reentrant", "InvalidCheckpoint",
    "InvalidHandle", "LibraryNotFound", "TRACE", "sync_log_level", "library_version", "library_path",
]  # fmt: skip
