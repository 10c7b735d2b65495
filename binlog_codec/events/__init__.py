"""Typed records for every event kind MySQL 5.1 to 9.x and MariaDB 10.x/11.x write.

:func:`decode` turns a framed :class:`~binlog_codec.reader.RawEvent` into a
record; :func:`read` does both for a file. The records live in one module per
event family:

* ``control``: format description, rotate, stop, incident, heartbeats,
  transaction payload, skipped and obsolete events;
* ``statement``: query (with status variables), intvar, rand, user var, xid,
  XA prepare, LOAD DATA blocks, rows query, MariaDB annotate rows;
* ``gtid``: MySQL GTID / anonymous / tagged GTID, previous GTIDs, MariaDB GTID,
  GTID list, binlog checkpoint, transaction context, view change;
* ``rows_header``: table map and rows events (header part).

Unknown event types: an event flagged ``LOG_EVENT_IGNORABLE_F`` is stepped over
by its length and reported as an :class:`OpaqueEvent`; any other unknown type
is an :class:`~binlog_codec.errors.UnknownEventError`, unless the caller passes
``skip_unknown=True``, in which case it too is reported as a skip.
"""

from __future__ import annotations

import os
from typing import Iterator

from ..errors import BinlogError, CorruptEventError, EncryptedBinlogError, UnknownEventError
from ..event_types import EventFlag, EventType
from ..reader import BinlogReader, RawEvent
from ..wire import Cursor, ShortBody
from . import control, gtid, rows_header, statement  # noqa: F401 - they register their decoders
from .base import DECODERS, Event
from .control import FormatDescriptionEvent, OpaqueEvent, RotateEvent, StopEvent, TransactionPayloadEvent
from .gtid import (
    BinlogCheckpointEvent,
    GtidEvent,
    GtidListEvent,
    MariadbGtidEvent,
    PreviousGtidsEvent,
    TransactionContextEvent,
    ViewChangeEvent,
)
from .rows_header import RowsEvent, TableMapEvent
from .statement import QueryEvent, RowsQueryEvent, XidEvent

# Events whose whole body a decoder need not consume: the rest is format
# growth a later server version may append (MySQL's own readers ignore it).
_TRAILING_BYTES_ALLOWED = {
    EventType.GTID,
    EventType.ANONYMOUS_GTID,
    EventType.GTID_TAGGED,
    EventType.MARIADB_GTID,
    EventType.STOP,
    EventType.PREVIOUS_GTIDS,
    EventType.GTID_LIST,
}


def decode(raw: RawEvent, *, skip_unknown: bool = False) -> Event:
    """Decode ``raw``'s body into its record; errors are located :class:`BinlogError`."""
    code = raw.type_code
    if code == EventType.START_ENCRYPTION:
        raise raw.error(
            EncryptedBinlogError,
            "encrypted binlog: the events after START_ENCRYPTION_EVENT are encrypted; "
            "read a decrypted copy (e.g. one written by mariadb-binlog --read-from-remote-server)",
        )
    function = DECODERS.get(code)
    if function is None:
        if raw.header.flags & EventFlag.IGNORABLE:
            return control.skipped(raw, f"unknown event type {code} flagged ignorable, skipped")
        if skip_unknown:
            return control.skipped(raw, f"unknown event type {code} skipped on request")
        raise raw.error(
            UnknownEventError,
            f"unknown event type {code}: expected a type MySQL or MariaDB defines, "
            "or the LOG_EVENT_IGNORABLE_F flag (0x80)",
        )
    cursor = Cursor(raw.body)
    try:
        record = function(raw, cursor)
    except ShortBody as exc:
        raise raw.error(CorruptEventError, f"corrupt body: {exc}") from None
    if cursor.remaining and code not in _TRAILING_BYTES_ALLOWED:
        raise raw.error(
            CorruptEventError,
            f"corrupt body: {cursor.remaining} bytes left over after the last field "
            f"(body is {len(raw.body)} bytes)",
        )
    return record


def read(path: str | os.PathLike[str], *, skip_unknown: bool = False, **reader_options) -> Iterator[Event]:
    """Frame and decode every event of the binlog file at ``path``."""
    for raw in BinlogReader(path, **reader_options):
        yield decode(raw, skip_unknown=skip_unknown)


__all__ = [
    "BinlogCheckpointEvent",
    "BinlogError",
    "Event",
    "FormatDescriptionEvent",
    "GtidEvent",
    "GtidListEvent",
    "MariadbGtidEvent",
    "OpaqueEvent",
    "PreviousGtidsEvent",
    "QueryEvent",
    "RotateEvent",
    "RowsEvent",
    "RowsQueryEvent",
    "StopEvent",
    "TableMapEvent",
    "TransactionContextEvent",
    "TransactionPayloadEvent",
    "ViewChangeEvent",
    "XidEvent",
    "decode",
    "read",
]
