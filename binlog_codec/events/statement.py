"""Statement events: QUERY and its status variables, the values a statement depends on
(INTVAR, RAND, USER_VAR), XID and XA_PREPARE, LOAD DATA blocks, ROWS_QUERY and
MariaDB's ANNOTATE_ROWS and QUERY_COMPRESSED.

QUERY_EVENT body (binlog v4; ``statement_events.h``)::

    post-header: thread_id 4 | exec_time 4 | db_len 1 | error_code 2 | status_vars_len 2
    body:        status_vars (status_vars_len) | db (db_len) | NUL | query (rest)

Binlog v1/v3 have no ``status_vars_len``; the post-header length announced by
the format description says which layout is in force.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..event_types import EventType
from ..mariadb_compression import uncompress_block
from ..reader import MAX_EVENT_SIZE, RawEvent
from ..wire import Cursor, ShortBody
from .base import Event, decode_text, decoder, location, short_text


def _length_string(cursor: Cursor, what: str) -> str:
    return cursor.take(cursor.u8(what), what).decode("utf-8", "backslashreplace")


def _catalog(cursor: Cursor) -> str:
    text = _length_string(cursor, "catalog")
    cursor.skip(1, "catalog terminator")
    return text


def _auto_increment(cursor: Cursor) -> dict[str, int]:
    return {"increment": cursor.u16("auto_increment_increment"), "offset": cursor.u16("auto_increment_offset")}


def _charset(cursor: Cursor) -> dict[str, int]:
    return {
        "character_set_client": cursor.u16("character_set_client"),
        "collation_connection": cursor.u16("collation_connection"),
        "collation_server": cursor.u16("collation_server"),
    }


def _invoker(cursor: Cursor) -> dict[str, str]:
    return {"user": _length_string(cursor, "invoker user"), "host": _length_string(cursor, "invoker host")}


OVER_MAX_DBS_IN_EVENT_MTS = 254


def _updated_db_names(cursor: Cursor) -> list[str] | None:
    count = cursor.u8("updated db count")
    if count == OVER_MAX_DBS_IN_EVENT_MTS:
        return None
    return [cursor.cstring("updated db name").decode("utf-8", "backslashreplace") for _ in range(count)]


# code -> (name, reader); the order and sizes of ``Q_*`` codes in ``statement_events.h``
# (MySQL) and ``log_event.h`` (MariaDB, 128 and up).
STATUS_VARS: dict[int, tuple[str, Callable[[Cursor], Any]]] = {
    0: ("flags2", lambda c: c.u32("flags2")),
    1: ("sql_mode", lambda c: c.u64("sql_mode")),
    2: ("catalog", _catalog),
    3: ("auto_increment", _auto_increment),
    4: ("charset", _charset),
    5: ("time_zone", lambda c: _length_string(c, "time_zone")),
    6: ("catalog", lambda c: _length_string(c, "catalog")),
    7: ("lc_time_names", lambda c: c.u16("lc_time_names")),
    8: ("charset_database", lambda c: c.u16("charset_database")),
    9: ("table_map_for_update", lambda c: c.u64("table_map_for_update")),
    10: ("master_data_written", lambda c: c.u32("master_data_written")),
    11: ("invoker", _invoker),
    12: ("updated_db_names", _updated_db_names),
    13: ("microseconds", lambda c: c.u24("microseconds")),
    16: ("explicit_defaults_for_timestamp", lambda c: c.u8("explicit_defaults_for_timestamp")),
    17: ("ddl_xid", lambda c: c.u64("ddl_xid")),
    18: ("default_collation_for_utf8mb4", lambda c: c.u16("default_collation_for_utf8mb4")),
    19: ("sql_require_primary_key", lambda c: c.u8("sql_require_primary_key")),
    20: ("default_table_encryption", lambda c: c.u8("default_table_encryption")),
    128: ("hrnow", lambda c: c.u24("hrnow")),
    129: ("xid", lambda c: c.u64("xid")),
    130: ("gtid_flags3", lambda c: c.u8("gtid_flags3")),
}


def parse_status_vars(data: bytes) -> tuple[dict[str, Any], int | None]:
    """Decode a status-variable block; returns the values and the first unknown code, if any.

    An unknown code ends decoding (its length cannot be known), exactly as the
    server does; the variables before it are kept.
    """
    cursor = Cursor(data)
    values: dict[str, Any] = {}
    while cursor.remaining:
        code = cursor.u8("status variable code")
        entry = STATUS_VARS.get(code)
        if entry is None:
            return values, code
        name, read = entry
        values[name] = read(cursor)
    return values, None


@dataclass(kw_only=True)
class QueryEvent(Event):
    """QUERY_EVENT (2), EXECUTE_LOAD_QUERY (18) and MariaDB's QUERY_COMPRESSED (165)."""

    thread_id: int
    exec_time: int
    error_code: int
    database: str
    query: str
    status_vars: dict[str, Any] = field(default_factory=dict)
    unknown_status_var: int | None = None
    load_file_id: int | None = None

    def summary(self) -> str:
        db = f"[{self.database}] " if self.database else ""
        return db + short_text(self.query)


def _query_fields(raw: RawEvent, cursor: Cursor, post_header_length: int) -> dict[str, Any]:
    """The QUERY post-header and status variables; leaves ``cursor`` at the database name."""
    start = cursor.pos
    thread_id = cursor.u32("thread_id")
    exec_time = cursor.u32("exec_time")
    db_len = cursor.u8("db_len")
    error_code = cursor.u16("error_code")
    status_len = cursor.u16("status_vars_len") if post_header_length >= 13 else 0
    extra: dict[str, Any] = {}
    if raw.type_code == EventType.EXECUTE_LOAD_QUERY:
        extra["load_file_id"] = cursor.u32("file_id")
        cursor.skip(9, "fn_pos_start, fn_pos_end, dup_handling")
    cursor.pos = start
    cursor.skip(post_header_length, "post-header")
    status_vars, unknown = parse_status_vars(cursor.take(status_len, "status variables"))
    database = cursor.take(db_len, "database name")
    if cursor.u8("database name terminator") != 0:
        raise ShortBody(f"database name of {db_len} bytes is not followed by its NUL terminator")
    return dict(
        thread_id=thread_id,
        exec_time=exec_time,
        error_code=error_code,
        database=database.decode("utf-8", "backslashreplace"),
        status_vars=status_vars,
        unknown_status_var=unknown,
        **extra,
    )


_QUERY_POST_HEADER = {EventType.QUERY: 13, EventType.QUERY_COMPRESSED: 13, EventType.EXECUTE_LOAD_QUERY: 26}


@decoder(EventType.QUERY, EventType.EXECUTE_LOAD_QUERY, EventType.QUERY_COMPRESSED)
def _query(raw: RawEvent, cursor: Cursor) -> QueryEvent:
    lookup_type = EventType.QUERY if raw.type_code == EventType.QUERY_COMPRESSED else raw.type_code
    post_header_length = raw.fde.post_header_length(lookup_type, _QUERY_POST_HEADER[raw.type_code])
    values = _query_fields(raw, cursor, post_header_length)
    text = cursor.rest()
    if raw.type_code == EventType.QUERY_COMPRESSED:
        text = uncompress_block(text, MAX_EVENT_SIZE)
    return QueryEvent(**location(raw), query=decode_text(text), **values)


INTVAR_NAMES = {1: "LAST_INSERT_ID", 2: "INSERT_ID"}


@dataclass(kw_only=True)
class IntvarEvent(Event):
    """INTVAR_EVENT (5): ``type 1 | value 8``, an auto-increment value a statement used."""

    variable: str
    value: int

    def summary(self) -> str:
        return f"{self.variable}={self.value}"


@decoder(EventType.INTVAR)
def _intvar(raw: RawEvent, cursor: Cursor) -> IntvarEvent:
    kind = cursor.u8("type")
    return IntvarEvent(**location(raw), variable=INTVAR_NAMES.get(kind, str(kind)), value=cursor.u64("value"))


@dataclass(kw_only=True)
class RandEvent(Event):
    """RAND_EVENT (13): ``seed1 8 | seed2 8`` for RAND() in the next statement."""

    seed1: int
    seed2: int

    def summary(self) -> str:
        return f"rand_seed1={self.seed1}, rand_seed2={self.seed2}"


@decoder(EventType.RAND)
def _rand(raw: RawEvent, cursor: Cursor) -> RandEvent:
    return RandEvent(**location(raw), seed1=cursor.u64("seed1"), seed2=cursor.u64("seed2"))


USER_VAR_TYPES = {0: "STRING", 1: "REAL", 2: "INT", 4: "DECIMAL"}


@dataclass(kw_only=True)
class UserVarEvent(Event):
    """USER_VAR_EVENT (14): ``name_len 4 | name | is_null 1 [| type 1 | charset 4 |
    value_len 4 | value [| flags 1]]``, a user variable the next statement reads."""

    name: str
    is_null: bool
    value_type: str | None = None
    charset: int | None = None
    value: bytes = b""
    flags: int | None = None

    def summary(self) -> str:
        value = "NULL" if self.is_null else f"{self.value_type} 0x{self.value.hex()}"
        return f"@`{self.name}`={value}"


@decoder(EventType.USER_VAR)
def _user_var(raw: RawEvent, cursor: Cursor) -> UserVarEvent:
    name = cursor.take(cursor.u32("name length"), "name").decode("utf-8", "backslashreplace")
    if cursor.u8("is_null"):
        return UserVarEvent(**location(raw), name=name, is_null=True)
    kind = cursor.u8("value type")
    charset = cursor.u32("charset")
    value = cursor.take(cursor.u32("value length"), "value")
    flags = cursor.u8("flags") if cursor.remaining else None
    return UserVarEvent(
        **location(raw),
        name=name,
        is_null=False,
        value_type=USER_VAR_TYPES.get(kind, str(kind)),
        charset=charset,
        value=value,
        flags=flags,
    )


@dataclass(kw_only=True)
class XidEvent(Event):
    """XID_EVENT (16): ``xid 8``, the commit of a transaction on a transactional engine."""

    xid: int

    def summary(self) -> str:
        return f"COMMIT /* xid={self.xid} */"


@decoder(EventType.XID)
def _xid(raw: RawEvent, cursor: Cursor) -> XidEvent:
    if cursor.remaining != 8:
        raise ShortBody(f"XID body is {cursor.remaining} bytes, expected 8")
    return XidEvent(**location(raw), xid=cursor.u64("xid"))


@dataclass(kw_only=True)
class XaPrepareEvent(Event):
    """XA_PREPARE_LOG_EVENT (38): ``one_phase 1 | format_id 4 | gtrid_len 4 | bqual_len 4 | data``."""

    one_phase: bool
    format_id: int
    gtrid: bytes
    bqual: bytes

    def summary(self) -> str:
        verb = "XA COMMIT ... ONE PHASE" if self.one_phase else "XA PREPARE"
        return f"{verb} X'{self.gtrid.hex()}',X'{self.bqual.hex()}',{self.format_id}"


@decoder(EventType.XA_PREPARE)
def _xa_prepare(raw: RawEvent, cursor: Cursor) -> XaPrepareEvent:
    one_phase = bool(cursor.u8("one_phase"))
    format_id = cursor.u32("format_id")
    gtrid_len = cursor.u32("gtrid_length")
    bqual_len = cursor.u32("bqual_length")
    return XaPrepareEvent(
        **location(raw),
        one_phase=one_phase,
        format_id=format_id,
        gtrid=cursor.take(gtrid_len, "gtrid"),
        bqual=cursor.take(bqual_len, "bqual"),
    )


@dataclass(kw_only=True)
class LoadBlockEvent(Event):
    """BEGIN_LOAD_QUERY (17) and APPEND_BLOCK (9): ``file_id 4 | block``; DELETE_FILE (11): ``file_id 4``."""

    file_id: int
    block: bytes = field(repr=False)
    block_size: int

    def summary(self) -> str:
        return f"file_id={self.file_id}, {self.block_size} bytes"


@decoder(EventType.BEGIN_LOAD_QUERY, EventType.APPEND_BLOCK, EventType.DELETE_FILE)
def _load_block(raw: RawEvent, cursor: Cursor) -> LoadBlockEvent:
    file_id = cursor.u32("file_id")
    block = cursor.rest()
    return LoadBlockEvent(**location(raw), file_id=file_id, block=block, block_size=len(block))


@dataclass(kw_only=True)
class RowsQueryEvent(Event):
    """ROWS_QUERY_LOG_EVENT (29): ``length 1 (unused) | query``, and MariaDB's
    ANNOTATE_ROWS_EVENT (160): the whole body is the statement that made the rows."""

    query: str

    def summary(self) -> str:
        return short_text(self.query)


@decoder(EventType.ROWS_QUERY)
def _rows_query(raw: RawEvent, cursor: Cursor) -> RowsQueryEvent:
    cursor.skip(1, "length")
    return RowsQueryEvent(**location(raw), query=decode_text(cursor.rest()))


@decoder(EventType.ANNOTATE_ROWS)
def _annotate_rows(raw: RawEvent, cursor: Cursor) -> RowsQueryEvent:
    return RowsQueryEvent(**location(raw), query=decode_text(cursor.rest()))
