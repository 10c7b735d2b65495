"""Transaction identity: MySQL GTID, anonymous and tagged GTID events, PREVIOUS_GTIDS,
MariaDB's GTID, GTID_LIST and BINLOG_CHECKPOINT, and the group-replication events
TRANSACTION_CONTEXT and VIEW_CHANGE.

GTID_LOG_EVENT / ANONYMOUS_GTID_LOG_EVENT (33, 34; ``control_events.h``)::

    flags 1 | sid 16 | gno 8
    [| lt_type 1 (=2) | last_committed 8 | sequence_number 8]          5.7.6+
    [| immediate_commit_ts 7 (bit 55: original follows) [| original_commit_ts 7]]   8.0.1+
    [| transaction_length packed]                                         8.0.2+
    [| immediate_server_version 4 (bit 31: original follows) [| original 4]]  8.0.14+
    [| commit_group_ticket 8]                                             8.0.33+

GTID_TAGGED_LOG_EVENT (42, MySQL 8.4+) uses the serialization library:
``format_version | payload_size | last_non_ignorable_field_id`` then
``field_id value`` pairs, every number a serialization varlen.

MariaDB GTID_EVENT (162)::

    seq_no 8 | domain_id 4 | flags2 1 | (commit_id 8 | xid | 6 zero bytes) [| flags_extra 1 ...]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..event_types import EventType
from ..reader import RawEvent
from ..wire import Cursor, ShortBody
from .base import Event, decoder, location, uuid_text

LOGICAL_TIMESTAMP_TYPECODE = 2
COMMIT_TS_ORIGINAL_FOLLOWS = 1 << 55
SERVER_VERSION_ORIGINAL_FOLLOWS = 1 << 31


@dataclass(kw_only=True)
class GtidEvent(Event):
    """MySQL GTID (33), ANONYMOUS_GTID (34) and GTID_TAGGED (42): the start of a transaction."""

    gtid: str
    sid: str
    gno: int
    tag: str | None = None
    flags: int = 0
    last_committed: int | None = None
    sequence_number: int | None = None
    immediate_commit_timestamp: int | None = None
    original_commit_timestamp: int | None = None
    transaction_length: int | None = None
    immediate_server_version: int | None = None
    original_server_version: int | None = None
    commit_group_ticket: int | None = None

    def summary(self) -> str:
        text = f"GTID {self.gtid}"
        if self.last_committed is not None:
            text += f" last_committed={self.last_committed} sequence_number={self.sequence_number}"
        if self.transaction_length:
            text += f" transaction_length={self.transaction_length}"
        return text


@decoder(EventType.GTID, EventType.ANONYMOUS_GTID)
def _gtid(raw: RawEvent, cursor: Cursor) -> GtidEvent:
    flags = cursor.u8("flags")
    sid = uuid_text(cursor.take(16, "sid"))
    gno = cursor.u64("gno")
    anonymous = raw.type_code == EventType.ANONYMOUS_GTID
    values: dict[str, Any] = {}
    if cursor.remaining and cursor.data[cursor.pos] == LOGICAL_TIMESTAMP_TYPECODE:
        cursor.skip(1, "lt_type")
        values["last_committed"] = cursor.u64("last_committed")
        values["sequence_number"] = cursor.u64("sequence_number")
        _commit_timestamps(cursor, values)
        if cursor.remaining:
            values["transaction_length"] = cursor.packed_int("transaction_length")
        _server_versions(cursor, values)
        if cursor.remaining >= 8:
            values["commit_group_ticket"] = cursor.u64("commit_group_ticket")
    return GtidEvent(
        **location(raw),
        gtid="ANONYMOUS" if anonymous else f"{sid}:{gno}",
        sid=sid,
        gno=gno,
        flags=flags,
        **values,
    )


def _commit_timestamps(cursor: Cursor, values: dict[str, Any]) -> None:
    if cursor.remaining < 7:
        return
    immediate = cursor.uint(7, "immediate_commit_timestamp")
    original = immediate
    if immediate & COMMIT_TS_ORIGINAL_FOLLOWS:
        immediate &= ~COMMIT_TS_ORIGINAL_FOLLOWS
        original = cursor.uint(7, "original_commit_timestamp")
    values["immediate_commit_timestamp"] = immediate
    values["original_commit_timestamp"] = original


def _server_versions(cursor: Cursor, values: dict[str, Any]) -> None:
    if cursor.remaining < 4:
        return
    immediate = cursor.u32("immediate_server_version")
    original = immediate
    if immediate & SERVER_VERSION_ORIGINAL_FOLLOWS:
        immediate &= ~SERVER_VERSION_ORIGINAL_FOLLOWS
        original = cursor.u32("original_server_version")
    values["immediate_server_version"] = immediate
    values["original_server_version"] = original


# Field ids of the tagged GTID event (``Gtid_event`` serialization definition).
_TAGGED_FIELDS = {
    0: "flags",
    1: "sid",
    2: "gno",
    3: "tag",
    4: "last_committed",
    5: "sequence_number",
    6: "immediate_commit_timestamp",
    7: "original_commit_timestamp",
    8: "transaction_length",
    9: "immediate_server_version",
    10: "original_server_version",
    11: "commit_group_ticket",
}
_TAGGED_SIGNED = {"gno", "last_committed", "sequence_number"}


@decoder(EventType.GTID_TAGGED)
def _gtid_tagged(raw: RawEvent, cursor: Cursor) -> GtidEvent:
    start = cursor.pos
    cursor.varlen_uint("format version")
    payload_size = cursor.varlen_uint("payload size")
    last_non_ignorable = cursor.varlen_uint("last non-ignorable field id")
    end = start + payload_size
    if payload_size < cursor.pos - start or end > cursor.end:
        raise ShortBody(f"payload size {payload_size} does not fit the {cursor.end - start}-byte body")
    values: dict[str, Any] = {}
    fields_cursor = Cursor(cursor.data, cursor.pos, end)
    while fields_cursor.remaining:
        field_id = fields_cursor.varlen_uint("field id")
        name = _TAGGED_FIELDS.get(field_id)
        if name is None:
            if field_id <= last_non_ignorable:
                raise ShortBody(f"unknown non-ignorable field {field_id}")
            break
        values[name] = _tagged_value(fields_cursor, name)
    cursor.pos = end
    values.setdefault("original_commit_timestamp", values.get("immediate_commit_timestamp"))
    values.setdefault("original_server_version", values.get("immediate_server_version"))
    sid, gno, tag = values.pop("sid", "00000000-0000-0000-0000-000000000000"), values.pop("gno", 0), values.pop("tag", None)
    if tag is None:
        raise ShortBody("tagged GTID event has no tag field")
    return GtidEvent(**location(raw), gtid=f"{sid}:{tag}:{gno}", sid=sid, gno=gno, tag=tag, **values)


def _tagged_value(cursor: Cursor, name: str) -> Any:
    if name == "sid":
        return uuid_text(bytes(cursor.varlen_uint("sid byte") & 0xFF for _ in range(16)))
    if name == "tag":
        return cursor.take(cursor.varlen_uint("tag length"), "tag").decode("utf-8", "backslashreplace")
    if name in _TAGGED_SIGNED:
        return cursor.varlen_int(name)
    return cursor.varlen_uint(name)


@dataclass
class GtidSetEntry:
    sid: str
    tag: str | None
    intervals: list[list[int]]  # [start, end) as stored

    def text(self) -> str:
        ranges = ":".join(
            f"{start}" if end - start == 1 else f"{start}-{end - 1}" for start, end in self.intervals
        )
        name = f"{self.sid}:{self.tag}" if self.tag else self.sid
        return f"{name}:{ranges}" if ranges else name


@dataclass(kw_only=True)
class PreviousGtidsEvent(Event):
    """PREVIOUS_GTIDS_LOG_EVENT (35): the GTID set of all earlier files.

    ``n_sids 8`` (tagged format, 8.4+: high byte 1, count in bits 8-55), then per
    entry ``sid 16 [| tag: varlen length + bytes] | n_intervals 8 | (start 8 | end 8)...``.
    """

    sids: list[GtidSetEntry]
    gtid_set: str

    def summary(self) -> str:
        return self.gtid_set or "(empty)"


@decoder(EventType.PREVIOUS_GTIDS)
def _previous_gtids(raw: RawEvent, cursor: Cursor) -> PreviousGtidsEvent:
    word = cursor.u64("n_sids")
    tagged = word >> 56 == 1
    count = (word >> 8) & ((1 << 48) - 1) if tagged else word
    if count * 24 > cursor.remaining:
        raise ShortBody(f"n_sids {count} cannot fit in {cursor.remaining} bytes")
    entries = []
    for _ in range(count):
        sid = uuid_text(cursor.take(16, "sid"))
        tag = None
        if tagged:
            tag = cursor.take(cursor.varlen_uint("tag length"), "tag").decode("utf-8", "backslashreplace") or None
        n_intervals = cursor.u64("n_intervals")
        if n_intervals * 16 > cursor.remaining:
            raise ShortBody(f"n_intervals {n_intervals} cannot fit in {cursor.remaining} bytes")
        intervals = [[cursor.u64("interval start"), cursor.u64("interval end")] for _ in range(n_intervals)]
        entries.append(GtidSetEntry(sid, tag, intervals))
    return PreviousGtidsEvent(**location(raw), sids=entries, gtid_set=",".join(e.text() for e in entries))


# MariaDB GTID flags2 (``log_event.h``).
FL_STANDALONE = 1
FL_GROUP_COMMIT_ID = 2
FL_TRANSACTIONAL = 4
FL_ALLOW_PARALLEL = 8
FL_WAITED = 16
FL_DDL = 32
FL_PREPARED_XA = 64
FL_COMPLETED_XA = 128
# flags_extra (MariaDB 10.5+)
FL_EXTRA_MULTI_ENGINE = 1
FL_START_ALTER = 2
FL_COMMIT_ALTER = 4
FL_ROLLBACK_ALTER = 8


@dataclass(kw_only=True)
class MariadbGtidEvent(Event):
    """MariaDB GTID_EVENT (162): starts an event group (``BEGIN`` is implied unless standalone)."""

    gtid: str
    domain_id: int
    server_id: int
    seq_no: int
    flags: int
    standalone: bool
    commit_id: int | None = None
    xid: dict[str, Any] | None = None
    flags_extra: int | None = None
    extra_engines: int | None = None
    alter_seq_no: int | None = None

    def summary(self) -> str:
        text = f"GTID {self.gtid}"
        if self.flags & FL_DDL:
            text += " ddl"
        elif self.standalone:
            text += " standalone"
        if self.commit_id is not None:
            text += f" cid={self.commit_id}"
        if self.xid is not None:
            text += f" xa={self.xid['gtrid']}"
        return text


@decoder(EventType.MARIADB_GTID)
def _mariadb_gtid(raw: RawEvent, cursor: Cursor) -> MariadbGtidEvent:
    seq_no = cursor.u64("seq_no")
    domain_id = cursor.u32("domain_id")
    flags = cursor.u8("flags2")
    values: dict[str, Any] = {}
    if flags & FL_GROUP_COMMIT_ID:
        values["commit_id"] = cursor.u64("commit_id")
    elif flags & (FL_PREPARED_XA | FL_COMPLETED_XA):
        format_id = cursor.u32("xid format_id")
        gtrid_len = cursor.u8("xid gtrid_length")
        bqual_len = cursor.u8("xid bqual_length")
        data = cursor.take(gtrid_len + bqual_len, "xid data")
        values["xid"] = {"format_id": format_id, "gtrid": data[:gtrid_len].hex(), "bqual": data[gtrid_len:].hex()}
    else:
        cursor.skip(min(6, cursor.remaining), "padding")
    if cursor.remaining:
        extra = values["flags_extra"] = cursor.u8("flags_extra")
        if extra & FL_EXTRA_MULTI_ENGINE:
            values["extra_engines"] = cursor.u8("extra_engines")
        if extra & (FL_COMMIT_ALTER | FL_ROLLBACK_ALTER):
            values["alter_seq_no"] = cursor.u64("start alter seq_no")
        cursor.pos = cursor.end  # later MariaDB versions append more; nothing here depends on it
    server_id = raw.header.server_id
    return MariadbGtidEvent(
        **location(raw),
        gtid=f"{domain_id}-{server_id}-{seq_no}",
        domain_id=domain_id,
        server_id=server_id,
        seq_no=seq_no,
        flags=flags,
        standalone=bool(flags & FL_STANDALONE),
        **values,
    )


@dataclass(kw_only=True)
class GtidListEvent(Event):
    """MariaDB GTID_LIST_EVENT (163): ``count 4 (low 28 bits) | (domain 4 | server 4 | seq_no 8)...``."""

    gtids: list[str]
    list_flags: int

    def summary(self) -> str:
        return "[" + ",".join(self.gtids) + "]"


@decoder(EventType.GTID_LIST)
def _gtid_list(raw: RawEvent, cursor: Cursor) -> GtidListEvent:
    word = cursor.u32("count")
    count = word & 0x0FFFFFFF
    if count * 16 > cursor.remaining:
        raise ShortBody(f"GTID count {count} cannot fit in {cursor.remaining} bytes")
    gtids = [f"{cursor.u32('domain_id')}-{cursor.u32('server_id')}-{cursor.u64('seq_no')}" for _ in range(count)]
    return GtidListEvent(**location(raw), gtids=gtids, list_flags=word >> 28)


@dataclass(kw_only=True)
class BinlogCheckpointEvent(Event):
    """MariaDB BINLOG_CHECKPOINT_EVENT (161): ``name_len 4 | name``, the oldest file crash recovery needs."""

    file_name: str

    def summary(self) -> str:
        return self.file_name


@decoder(EventType.BINLOG_CHECKPOINT)
def _binlog_checkpoint(raw: RawEvent, cursor: Cursor) -> BinlogCheckpointEvent:
    name = cursor.take(cursor.u32("name length"), "name")
    return BinlogCheckpointEvent(**location(raw), file_name=name.decode("utf-8", "backslashreplace"))


@dataclass(kw_only=True)
class TransactionContextEvent(Event):
    """TRANSACTION_CONTEXT_EVENT (36, group replication): ``server_uuid_len 1 | thread_id 4 |
    gtid_specified 1 | snapshot_version_len 4 | write_set_len 4 | read_set_len 4`` then
    server_uuid, snapshot version and the write and read sets (``length 2 | item`` each)."""

    server_uuid: str
    thread_id: int
    gtid_specified: bool
    snapshot_version: bytes
    write_set: list[bytes] = field(default_factory=list)
    read_set: list[bytes] = field(default_factory=list)

    def summary(self) -> str:
        return f"server {self.server_uuid}, thread {self.thread_id}, {len(self.write_set)} write-set items"


@decoder(EventType.TRANSACTION_CONTEXT)
def _transaction_context(raw: RawEvent, cursor: Cursor) -> TransactionContextEvent:
    uuid_len = cursor.u8("server_uuid length")
    thread_id = cursor.u32("thread_id")
    gtid_specified = bool(cursor.u8("gtid_specified"))
    snapshot_len = cursor.u32("snapshot_version length")
    write_count = cursor.u32("write_set items")
    read_count = cursor.u32("read_set items")
    server_uuid = cursor.take(uuid_len, "server_uuid").decode("ascii", "replace")
    snapshot = cursor.take(snapshot_len, "snapshot_version")
    if (write_count + read_count) * 2 > cursor.remaining:
        raise ShortBody(f"{write_count + read_count} set items cannot fit in {cursor.remaining} bytes")
    write_set = [cursor.take(cursor.u16("item length"), "write_set item") for _ in range(write_count)]
    read_set = [cursor.take(cursor.u16("item length"), "read_set item") for _ in range(read_count)]
    return TransactionContextEvent(
        **location(raw),
        server_uuid=server_uuid,
        thread_id=thread_id,
        gtid_specified=gtid_specified,
        snapshot_version=snapshot,
        write_set=write_set,
        read_set=read_set,
    )


@dataclass(kw_only=True)
class ViewChangeEvent(Event):
    """VIEW_CHANGE_EVENT (37, group replication): ``view_id 40 | seq_number 8 | cert_info_len 4``
    then ``key_len 4 | key | value_len 4 | value`` per certification entry."""

    view_id: str
    seq_number: int
    certification_info: dict[str, bytes]

    def summary(self) -> str:
        return f"view {self.view_id}, seq_number {self.seq_number}"


@decoder(EventType.VIEW_CHANGE)
def _view_change(raw: RawEvent, cursor: Cursor) -> ViewChangeEvent:
    view_id = cursor.take(40, "view_id").split(b"\0", 1)[0].decode("ascii", "replace")
    seq_number = cursor.u64("seq_number")
    count = cursor.u32("cert_info entries")
    if count * 8 > cursor.remaining:
        raise ShortBody(f"{count} certification entries cannot fit in {cursor.remaining} bytes")
    info = {}
    for _ in range(count):
        key = cursor.take(cursor.u32("key length"), "key").decode("utf-8", "backslashreplace")
        info[key] = cursor.take(cursor.u32("value length"), "value")
    return ViewChangeEvent(**location(raw), view_id=view_id, seq_number=seq_number, certification_info=info)
