"""Exceptions: one class per ``tattler_status`` failure, all under :class:`Error`.

The class names are the C names without ``TATTLER_ERR_``, in CamelCase
(``TATTLER_ERR_INVALID_CONFIG`` is :class:`InvalidConfig`). The ones about a
bad argument are also ``ValueError`` s.
"""

from __future__ import annotations

from typing import Dict, Optional, Type


class Error(Exception):
    """A failure of the tattler library.

    ``status`` is the C ``tattler_status`` number, ``message`` the text the
    failed call wrote (or the status's fixed text when the call has none).
    A status newer than this package is an ``Error`` itself.
    """

    STATUS: Optional[int] = None

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = self.STATUS if status is None else status

    def __str__(self) -> str:
        return self.message


class Closed(Error):
    """The reader is stopped (``stop()``, ``close()``) and every entry has been taken.

    Not a failure: ``next()`` raises it where the C call returns
    ``TATTLER_CLOSED``, and iteration ends on it.
    """

    STATUS = 2


class NullArg(Error):
    """A pointer argument was NULL (a bug in this package: please report it)."""

    STATUS = 100


class InvalidConfig(Error, ValueError):
    """The configuration is unusable: not JSON, an unknown key, a wrong type, nothing to watch. The message names the key."""

    STATUS = 101


class InvalidUtf8(Error, ValueError):
    """A string argument is not UTF-8."""

    STATUS = 102


class Io(Error):
    """A file named in the configuration could not be read, or a thread could not start."""

    STATUS = 103


class Panic(Error):
    """tattler panicked inside the call (a bug: please report it); the panic was caught."""

    STATUS = 104


class BufferTooSmall(Error):
    """A buffer was too small (this package retries with a larger one; seen only if the size keeps growing)."""

    STATUS = 105


class InvalidResource(Error, ValueError):
    """A resource name or a resource list could not be understood."""

    STATUS = 106


class Tls(Error):
    """The TLS setup failed (a CA bundle without a PEM certificate)."""

    STATUS = 107


class InvalidArg(Error, ValueError):
    """An integer argument is out of range."""

    STATUS = 108


class LoggerInUse(Error):
    """The process already has another Rust logger; tattler logs there, not to ``logging``."""

    STATUS = 109


class Other(Error):
    """A failure of a kind the C header does not name."""

    STATUS = 110


class Reentrant(Error):
    """The call was made from inside the log callback (a ``logging`` handler), where it cannot work."""

    STATUS = 111


class InvalidCheckpoint(Error, ValueError):
    """The checkpoint is not one this library can read: open without it (a full sync)."""

    STATUS = 112


class InvalidHandle(Error):
    """The reader or entry is not a live one (a bug in this package: please report it)."""

    STATUS = 113


_BY_STATUS: Dict[int, Type[Error]] = {
    cls.STATUS: cls
    for cls in (
        Closed, NullArg, InvalidConfig, InvalidUtf8, Io, Panic, BufferTooSmall, InvalidResource,
        Tls, InvalidArg, LoggerInUse, Other, Reentrant, InvalidCheckpoint, InvalidHandle,
    )  # fmt: skip
    if cls.STATUS is not None
}


def from_status(status: int, message: Optional[str] = None) -> Error:
    """The exception for a status, with the call's text or else the status's own."""
    if not message:
        from . import _native

        message = _native.lib().tattler_status_str(status).decode("utf-8", "replace")
    return _BY_STATUS.get(status, Error)(message, status)
