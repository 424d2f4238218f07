"""What a reader hands out: one :class:`Entry` per change, copied out of C."""

from __future__ import annotations

import ctypes
import enum
import json
from typing import Any, NamedTuple, Optional, Union


class Change(enum.IntEnum):
    """What an entry reports; the numbers are the C ``tattler_change`` ones."""

    ADD = 1
    """An object the consumer has not seen before."""
    UPDATE = 2
    """A newer version of an object the consumer has seen."""
    DELETE = 3
    """An object is gone; ``Entry.inferred`` tells a delete found by a re-sync from one the server reported."""
    SNAPSHOT = 4
    """During a re-sync: an object the consumer already has, unchanged."""
    SYNCED = 5
    """This resource's full state has been delivered, or it is current again after a STALE; every later entry is a live change."""
    ERROR = 6
    """A failure (``Entry.error``): with ``ended`` the resource stopped, without it one object was skipped."""
    STALE = 7
    """The resource's view is not current (``Entry.error.reason``: Unreachable, Refused, Throttled, Silent, Resyncing, Credentials); SYNCED says when it is again."""
    LEADING = 8
    """With ``leader_election``: this reader holds its Lease and starts its streams (``namespace``/``name``: the Lease; ``identity`` and ``holder``: this reader; ``term``: the term its entries carry until the next FOLLOWING)."""
    FOLLOWING = 9
    """With ``leader_election``: this reader does not stream (``Entry.error.reason``: Standby at the start, LeaseLost or RenewFailed after it led; ``holder``: who holds the Lease now, ``None`` for nobody). Nothing of the term that ended comes after it."""

    def __str__(self) -> str:
        # "Add", as the Rust library, the C++ wrapper and the example print it.
        return self.name.capitalize()

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def change_of(value: int) -> Union[Change, int]:
    """The :class:`Change` for a C number, or the number itself when this package does not know it yet.

    A newer library may report a change this version has no member for; the
    entry keeps the int rather than failing, so a consumer can skip it.
    """
    try:
        return Change(value)
    except ValueError:
        return value


class Resource(NamedTuple):
    """The resource an entry came from. ``group`` is ``""`` for the core group."""

    group: str
    version: str
    resource: str
    kind: str

    def __str__(self) -> str:
        gv = self.version if not self.group else "%s/%s" % (self.group, self.version)
        return "%s/%s" % (gv, self.resource)


class ErrorInfo(NamedTuple):
    """What an ``ERROR`` entry reports.

    ``ended``: the resource failed for good and stopped (the others go on);
    false when one object or frame was skipped and the stream reads on.
    ``code``: the HTTP status (403, ...), or 0 when the failure was not an
    HTTP answer. ``reason``: the server's (``"Forbidden"``) or tattler's own
    word. ``message``: the server's message or tattler's description.
    """

    ended: bool
    code: int
    reason: str
    message: str


class Entry:
    """One change. Every field is copied out of the C entry, which is freed at once.

    ``raw_object`` is the object's JSON as the server sent it (``None`` for an
    inferred delete, ``SYNCED`` and ``ERROR``); :meth:`object` parses it.
    ``resource_version`` is the integer resourceVersion (0 when the server's
    is not an integer), ``resource_version_str`` the server's text; on
    ``SYNCED`` they are the version the state is complete at.

    Under ``leader_election``, ``term`` is the term the entry was delivered
    in: the Lease's ``leaseTransitions`` when this reader took it (0 for the
    Lease's first holder), on every entry a leading reader delivers, LEADING
    too; ``None`` without leader election and on FOLLOWING. A consumer
    writing to a store shared by replicas keeps the highest term it has
    written and refuses a lower one (fencing). ``holder``, on LEADING and
    FOLLOWING, is the replica holding the Lease now (this reader on
    LEADING); ``None`` when nobody does, and on other entries.
    """

    __slots__ = (
        "change", "resource", "namespace", "name", "uid",
        "resource_version", "resource_version_str", "inferred", "raw_object", "error",
        "term", "holder",
    )  # fmt: skip

    def __init__(
        self,
        change: Union[Change, int],
        resource: Resource,
        namespace: str = "",
        name: str = "",
        uid: str = "",
        resource_version: int = 0,
        resource_version_str: str = "",
        inferred: bool = False,
        raw_object: Optional[bytes] = None,
        error: Optional[ErrorInfo] = None,
        term: Optional[int] = None,
        holder: Optional[str] = None,
    ) -> None:
        self.change = change
        self.resource = resource
        self.namespace = namespace
        self.name = name
        self.uid = uid
        self.resource_version = resource_version
        self.resource_version_str = resource_version_str
        self.inferred = inferred
        self.raw_object = raw_object
        self.error = error
        self.term = term
        self.holder = holder

    @property
    def identity(self) -> str:
        """On LEADING and FOLLOWING, this reader's identity in its Lease; ``""`` otherwise."""
        return self.uid if self.change in (Change.LEADING, Change.FOLLOWING) else ""

    def object(self) -> Any:
        """The object parsed with ``json`` (a dict), or ``None`` when the entry has none."""
        return None if self.raw_object is None else json.loads(self.raw_object)

    def __repr__(self) -> str:
        # The object is left out: it may be large, and logs must not carry it.
        return "Entry(%s %s %s/%s rv=%s%s%s%s%s)" % (
            self.change,
            self.resource,
            self.namespace,
            self.name,
            self.resource_version_str,
            " inferred" if self.inferred else "",
            "" if self.error is None else " error=%r" % (self.error,),
            "" if self.term is None else " term=%d" % self.term,
            "" if self.holder is None else " holder=%s" % self.holder,
        )


def _s(value: Optional[bytes]) -> str:
    return "" if not value else value.decode("utf-8", "replace")


def copy_entry(lib: ctypes.CDLL, e: int) -> Entry:
    """Copies every field of the C entry ``e`` (the caller frees it afterwards)."""
    change = change_of(lib.tattler_entry_change(e))
    n = ctypes.c_size_t(0)
    p = lib.tattler_entry_object(e, ctypes.byref(n))
    raw = ctypes.string_at(p, n.value) if p else None
    term = ctypes.c_uint64(0)
    has_term = bool(lib.tattler_entry_term(e, ctypes.byref(term)))
    error = None
    if change in (Change.ERROR, Change.STALE, Change.FOLLOWING):
        error = ErrorInfo(
            bool(lib.tattler_entry_error_ended(e)),
            int(lib.tattler_entry_error_code(e)),
            _s(lib.tattler_entry_error_reason(e)),
            _s(lib.tattler_entry_error_message(e)),
        )
    return Entry(
        change,
        Resource(
            _s(lib.tattler_entry_group(e)),
            _s(lib.tattler_entry_version(e)),
            _s(lib.tattler_entry_resource(e)),
            _s(lib.tattler_entry_kind(e)),
        ),
        namespace=_s(lib.tattler_entry_namespace(e)),
        name=_s(lib.tattler_entry_name(e)),
        uid=_s(lib.tattler_entry_uid(e)),
        resource_version=int(lib.tattler_entry_resource_version(e)),
        resource_version_str=_s(lib.tattler_entry_resource_version_str(e)),
        inferred=bool(lib.tattler_entry_inferred(e)),
        raw_object=raw,
        error=error,
        term=term.value if has_term else None,
        # "" is none: the library never names an empty holder.
        holder=_s(lib.tattler_entry_holder(e)) or None,
    )
