"""Transaction boundaries from a quick scan: where each transaction starts and ends.

The Spark job cuts files into splits at these boundaries, so the scan only
looks at what delimits a transaction and decodes nothing else:

* a GTID event (MySQL GTID, anonymous or tagged GTID, MariaDB GTID) starts one;
  without GTIDs, a ``BEGIN`` query does;
* an XID event, a ``COMMIT`` / ``ROLLBACK`` / ``XA COMMIT`` / ``XA ROLLBACK``
  query, an XA_PREPARE event or a TRANSACTION_PAYLOAD event (which holds a
  whole transaction) ends it;
* a statement outside ``BEGIN`` (DDL, a MariaDB GTID flagged standalone, or
  the rows events of a non-transactional table up to the one flagged
  ``STMT_END_F``) is a transaction of its own, together with the events that
  prepare it (INTVAR, RAND, USER_VAR, TABLE_MAP).

Everything between transactions (format description, rotate, previous GTIDs,
GTID list, checkpoints, stop) belongs to none.

The compiled build scans in C (:class:`binlog_codec.frames.TransactionScan`): it
reads the same events and finds the same transactions, and errors, as
:func:`scan_events` here (``tests/binlog_codec/test_transaction_scan.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator, NamedTuple

from . import compiled
from .event_types import GTID_TYPES, ROWS_TYPES, EventType
from .events import decode
from .events.gtid import FL_STANDALONE
from .reader import BinlogReader, EventHeader, RawEvent

BEGIN_WORDS = (b"BEGIN", b"XA START", b"XA BEGIN")
ENDING_WORDS = (b"COMMIT", b"ROLLBACK")
XA_END_WORDS = (b"XA COMMIT", b"XA ROLLBACK")
STATEMENTS = (EventType.QUERY, EventType.QUERY_COMPRESSED, EventType.EXECUTE_LOAD_QUERY)
COMMITS = (EventType.XID, EventType.XA_PREPARE, EventType.TRANSACTION_PAYLOAD)
# Events that belong to no transaction: they describe or delimit the file itself.
OUTSIDE = frozenset(
    {
        EventType.FORMAT_DESCRIPTION,
        EventType.START_V3,
        EventType.ROTATE,
        EventType.STOP,
        EventType.PREVIOUS_GTIDS,
        EventType.GTID_LIST,
        EventType.BINLOG_CHECKPOINT,
        EventType.HEARTBEAT,
        EventType.HEARTBEAT_V2,
        EventType.INCIDENT,
        EventType.IGNORABLE,
    }
)
STMT_END_F = 1


@dataclass
class Transaction:
    """One transaction: ``[start, end)`` byte range in ``file``, its GTID and event count, and
    the event ending at ``end`` (which commits it): its header, its XID (an XID event), and
    whether it is a TRANSACTION_PAYLOAD, whose last inner event is the one that commits."""

    file: str
    start: int
    end: int
    gtid: str | None
    events: int
    complete: bool
    ending: EventHeader | None = None
    xid: int | None = None
    payload: bool = False


class _Ending(NamedTuple):
    """What a transaction keeps of the last event read: where it ends, its header and XID."""

    end: int
    header: EventHeader
    xid: int | None


def _transaction(name: str, current: "_Open", end: int, complete: bool, last: _Ending | None) -> Transaction:
    """The transaction ``current`` ending at ``end``, with the last event read if it ends there."""
    if last is None or last.end != end:
        return Transaction(name, current.start, end, current.gtid, current.events, complete)
    payload = last.header.type_code == EventType.TRANSACTION_PAYLOAD
    return Transaction(name, current.start, end, current.gtid, current.events, complete, last.header, last.xid, payload)


def _query_text(raw: RawEvent) -> bytes:
    """The statement of a QUERY event, without decoding the status variables."""
    body = raw.body
    if len(body) < 13:
        return b""
    db_len = body[8]
    status_len = int.from_bytes(body[11:13], "little")
    post_header = raw.fde.post_header_length(EventType.QUERY, 13)
    return body[post_header + status_len + db_len + 1 :].lstrip().upper()


def _is_commit(text: bytes) -> bool:
    """``COMMIT`` or ``ROLLBACK`` (not ``ROLLBACK TO savepoint``), or the end of an XA transaction."""
    words = text.split(None, 2)
    if not words:
        return False
    if words[0] in ENDING_WORDS:
        return len(words) == 1 or words[1] != b"TO"
    return text.startswith(XA_END_WORDS)


def _statement_end(raw: RawEvent) -> bool:
    """Whether a rows event carries STMT_END_F: the last rows event of its statement."""
    width = 4 if raw.fde.post_header_length(raw.type_code, 8) == 6 else 6
    return bool(int.from_bytes(raw.body[width : width + 2], "little") & STMT_END_F)


class _Open:
    """The transaction being read: where it starts, its GTID, whether it is explicit, its events so far."""

    def __init__(self, start: int, gtid: str | None, explicit: bool) -> None:
        self.start = start
        self.gtid = gtid
        self.explicit = explicit  # inside BEGIN ... COMMIT (or a MariaDB non-standalone group)
        self.events = 0


def scan_transactions(path: str | os.PathLike[str], **reader_options) -> Iterator[Transaction]:
    """Yield the transactions of one file in order; a trailing unfinished one has ``complete=False``.

    ``reader_options`` are :class:`~binlog_codec.reader.BinlogReader`'s. With the compiled
    build the events are scanned in C, with the same transactions and errors."""
    reader = BinlogReader(path, unwrap_payloads=False, **reader_options)
    if compiled():
        from .frames import TransactionScan

        yield from TransactionScan(reader)
    else:
        yield from scan_events(reader)


def scan_events(reader: BinlogReader) -> Iterator[Transaction]:
    """The transactions of the events ``reader`` yields (a reader that does not unwrap payloads)."""
    current: _Open | None = None
    last: _Ending | None = None
    name = reader.name
    for raw in reader:
        code = raw.type_code
        if code in GTID_TYPES:
            if current is not None:
                yield _transaction(name, current, raw.pos, False, last)
            record = decode(raw)
            explicit = code == EventType.MARIADB_GTID and not record.flags & FL_STANDALONE
            current = _Open(raw.pos, record.gtid, explicit)
        elif current is None and code not in OUTSIDE:
            current = _Open(raw.pos, None, False)
        last = _Ending(raw.end_pos, raw.header, decode(raw).xid if code == EventType.XID else None)
        if current is None:
            continue
        if code not in OUTSIDE:
            current.events += 1
        if _ends(raw, current):
            yield _transaction(name, current, raw.end_pos, True, last)
            current = None
    if current is not None:
        yield _transaction(name, current, reader.file_size, False, last)


def _ends(raw: RawEvent, current: _Open) -> bool:
    """Whether ``raw`` ends the transaction ``current`` (a ``BEGIN`` makes it explicit)."""
    code = raw.type_code
    if code in COMMITS:
        return True
    if code in STATEMENTS:
        text = _query_text(raw) if code == EventType.QUERY else b""
        if text.startswith(BEGIN_WORDS):
            current.explicit = True
            return False
        return _is_commit(text) or not current.explicit
    if code in ROWS_TYPES:
        return not current.explicit and _statement_end(raw)
    return False
