"""Identity of a binlog file: which server wrote it and what it starts with, not its name.

A file name says little: ``RESET MASTER`` starts the numbering again, a restore
or an archiver may replace a file, and every server of a replication topology
names its files ``<base>.<digits>`` alike. What a server writes at the start of
each file does identify it (WL#7592's binary log layout: the 4-byte magic, then
the FORMAT_DESCRIPTION event, then PREVIOUS_GTIDS on MySQL 5.6+ or GTID_LIST on
MariaDB 10.0+):

* the FORMAT_DESCRIPTION event carries the writing server's ``server_id`` (in
  its header), its version and the file's creation time;
* PREVIOUS_GTIDS / GTID_LIST carry the GTID set logged before the file;
* the first transaction's bytes tell apart two files of one server opened in
  the same second with the same GTID state.

:class:`FileIdentity` keeps those facts and a SHA-256 of the file's *head*:
its first bytes up to the end of its first complete transaction (at most
:data:`HEAD_LIMIT` bytes), or up to the end of the header events when it holds
no transaction yet. Checking a file again hashes the same number of bytes, so a
file that grew since keeps its identity and one that was replaced does not.

The FORMAT_DESCRIPTION event's flags hold ``LOG_EVENT_BINLOG_IN_USE_F``, which
the server clears in place when it closes the file (and its CRC32 changes with
it), so both are left out of the hash.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass
from typing import Iterator

from .errors import TruncatedError
from .event_types import GTID_TYPES, EventType
from .events import decode
from .gtid_set import GtidSet
from .reader import BinlogReader, RawEvent

HEAD_LIMIT = 64 << 10  # bytes hashed at most: enough to tell one first transaction from another
_HEADER_EVENTS = (EventType.FORMAT_DESCRIPTION, EventType.START_V3, EventType.PREVIOUS_GTIDS, EventType.GTID_LIST,
                  EventType.BINLOG_CHECKPOINT, EventType.IGNORABLE)
_FLAGS_OFFSET = 4 + 17  # magic, then the v4 header: timestamp 4, type 1, server_id 4, size 4, log_pos 4, flags 2


@dataclass(frozen=True)
class FileIdentity:
    """What identifies one binlog file; see the module text.

    ``head_bytes`` and ``head`` are the length and SHA-256 of the hashed head;
    ``start_gtids`` the GTID set logged before the file (text, None when the
    server logs none); ``flavour`` is ``mysql`` or ``mariadb``.
    """

    name: str
    flavour: str
    server_id: int
    server_version: str
    created: int
    head_bytes: int
    head: str
    start_gtids: str | None

    def gtid_set(self) -> GtidSet | None:
        """:attr:`start_gtids` as a set, None when the file logs none."""
        return None if self.start_gtids is None else GtidSet.parse(self.start_gtids, self.flavour)

    def describe(self) -> str:
        """One line for error messages: server, creation time, head."""
        return (f"server_id {self.server_id} ({self.server_version}), created at {self.created}, "
                f"first {self.head_bytes} bytes sha256 {self.head[:12]}")

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "FileIdentity":
        return cls(**data)


def read_identity(path: str | os.PathLike[str], name: str | None = None) -> FileIdentity:
    """The identity of the binlog file at ``path`` (``name``: the file's name in its source, by
    default the path's). Raises the reader's located error for a file that is not a binlog."""
    reader = BinlogReader(path, unwrap_payloads=False, name=name)
    fde = server_id = start = None
    head_end = 0
    events = iter(reader)
    for raw in events:
        if fde is None:
            fde, server_id = raw.fde, raw.header.server_id
        if raw.type_code in (EventType.PREVIOUS_GTIDS, EventType.GTID_LIST):
            start = str(GtidSet.from_event(decode(raw)))
        if raw.type_code in _HEADER_EVENTS:
            head_end = raw.end_pos
            continue
        head_end = _first_transaction_end(events, raw)
        break
    if fde is None:
        raise TruncatedError(
            "the file ends after the magic: expected a FORMAT_DESCRIPTION event", file=reader.name, position=4
        )
    flavour = "mariadb" if fde.is_mariadb else "mysql"
    length = min(head_end, HEAD_LIMIT)
    return FileIdentity(
        name=name or os.path.basename(path), flavour=flavour, server_id=server_id,
        server_version=fde.server_version, created=fde.create_timestamp or 0,
        head_bytes=length, head=head_digest(path, length), start_gtids=start,
    )


def _first_transaction_end(events: Iterator[RawEvent], first: RawEvent) -> int:
    """Where the transaction that starts with the event ``first`` ends (as far as the file
    goes): its XID or TRANSACTION_PAYLOAD event, else the event before the next GTID event."""
    end = first.end_pos
    for raw in events:
        if raw.type_code in GTID_TYPES or end >= HEAD_LIMIT:
            break
        end = raw.end_pos
        if raw.type_code in (EventType.XID, EventType.TRANSACTION_PAYLOAD):
            break
    return end


def head_digest(path: str | os.PathLike[str], length: int) -> str:
    """SHA-256 of the first ``length`` bytes of the file, with the FORMAT_DESCRIPTION event's flags
    and last four bytes (its CRC32 when it has one) zeroed: the server rewrites them when it closes
    the file. Empty when the file is shorter than ``length``."""
    with open(path, "rb") as handle:
        data = bytearray(handle.read(length))
    if len(data) < length:
        return ""
    if len(data) >= _FLAGS_OFFSET + 2:
        data[_FLAGS_OFFSET : _FLAGS_OFFSET + 2] = b"\0\0"
        fde_end = 4 + int.from_bytes(data[4 + 9 : 4 + 13], "little")
        if _FLAGS_OFFSET + 2 <= fde_end - 4 and fde_end <= len(data):
            data[fde_end - 4 : fde_end] = b"\0" * 4
    return hashlib.sha256(bytes(data)).hexdigest()


def same_file(recorded: FileIdentity, path: str | os.PathLike[str]) -> bool:
    """Whether the file at ``path`` starts as the file ``recorded`` did (it may have grown since)."""
    try:
        return head_digest(path, recorded.head_bytes) == recorded.head
    except OSError:
        return False
