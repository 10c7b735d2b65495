"""Transaction boundaries from a quick scan: where each transaction starts and ends.

The Spark job cuts files into splits at these boundaries, so the scan only
looks at what delimits a transaction and decodes nothing else:

* a GTID event (MySQL GTID, anonymous or tagged GTID, MariaDB GTID) starts one;
  without GTIDs, a ``BEGIN`` query does;
* an XID event, a ``COMMIT`` / ``ROLLBACK`` / ``XA COMMIT`` / ``XA ROLLBACK``
  query, an XA_PREPARE event or a TRANSACTION_PAYLOAD event (which holds a
  whole transaction) ends it;
* a statement outside ``BEGIN`` (DDL, or a MariaDB GTID flagged standalone)
  is a transaction of its own.

Everything between transactions (format description, rotate, previous GTIDs,
GTID list, checkpoints, stop) belongs to none.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator

from .event_types import GTID_TYPES, EventType
from .events import decode
from .events.gtid import FL_STANDALONE
from .reader import BinlogReader, RawEvent

_BEGIN = (b"BEGIN", b"XA START", b"XA BEGIN")
_END = (b"COMMIT", b"ROLLBACK", b"XA COMMIT", b"XA ROLLBACK", b"XA END")


@dataclass
class Transaction:
    """One transaction: ``[start, end)`` byte range in ``file``, its GTID and event count."""

    file: str
    start: int
    end: int
    gtid: str | None
    events: int
    complete: bool


def _query_text(raw: RawEvent) -> bytes:
    """The statement of a QUERY event, without decoding the status variables."""
    body = raw.body
    if len(body) < 13:
        return b""
    db_len = body[8]
    status_len = int.from_bytes(body[11:13], "little")
    post_header = raw.fde.post_header_length(EventType.QUERY, 13)
    return body[post_header + status_len + db_len + 1 :].lstrip().upper()


class _Open:
    def __init__(self, raw: RawEvent, gtid: str | None, explicit: bool) -> None:
        self.start = raw.pos
        self.gtid = gtid
        self.explicit = explicit  # inside BEGIN ... COMMIT (or a MariaDB non-standalone group)
        self.events = 0


def scan_transactions(path: str | os.PathLike[str], **reader_options) -> Iterator[Transaction]:
    """Yield the transactions of one file in order; a trailing unfinished one has ``complete=False``."""
    reader = BinlogReader(path, unwrap_payloads=False, **reader_options)
    current: _Open | None = None
    name = reader.name
    for raw in reader:
        code = raw.type_code
        if code in GTID_TYPES:
            if current is not None:
                yield Transaction(name, current.start, raw.pos, current.gtid, current.events, False)
            record = decode(raw)
            explicit = code == EventType.MARIADB_GTID and not record.flags & FL_STANDALONE
            current = _Open(raw, record.gtid, explicit)
            current.events = 1
            continue
        if current is None and code in (EventType.QUERY, EventType.QUERY_COMPRESSED) and _query_text(raw).startswith(_BEGIN):
            current = _Open(raw, None, True)
        if current is None:
            if code in (EventType.QUERY, EventType.QUERY_COMPRESSED, EventType.TRANSACTION_PAYLOAD):
                yield Transaction(name, raw.pos, raw.end_pos, None, 1, True)
            continue
        current.events += 1
        if _ends(raw, current):
            yield Transaction(name, current.start, raw.end_pos, current.gtid, current.events, True)
            current = None
    if current is not None:
        yield Transaction(name, current.start, reader.file_size, current.gtid, current.events, False)


def _ends(raw: RawEvent, current: _Open) -> bool:
    code = raw.type_code
    if code in (EventType.XID, EventType.XA_PREPARE, EventType.TRANSACTION_PAYLOAD):
        return True
    if code == EventType.QUERY:
        text = _query_text(raw)
        if text.startswith(_BEGIN):
            current.explicit = True
            return False
        return text.startswith(_END) or not current.explicit
    return code == EventType.QUERY_COMPRESSED and not current.explicit
