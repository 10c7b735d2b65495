"""Event type codes and header flags of the binary log v4 format.

The codes are MySQL's ``Log_event_type`` enumeration (``binlog_event.h``)
and MariaDB's additions from 160 on. Names drop the ``_EVENT`` suffix; where
MariaDB reuses a MySQL concept under its own code, the name says so
(``MARIADB_GTID`` is 162, ``GTID`` is MySQL's 33).
"""

from __future__ import annotations

from enum import IntEnum, IntFlag


class EventType(IntEnum):
    UNKNOWN = 0
    START_V3 = 1
    QUERY = 2
    STOP = 3
    ROTATE = 4
    INTVAR = 5
    LOAD = 6
    SLAVE = 7
    CREATE_FILE = 8
    APPEND_BLOCK = 9
    EXEC_LOAD = 10
    DELETE_FILE = 11
    NEW_LOAD = 12
    RAND = 13
    USER_VAR = 14
    FORMAT_DESCRIPTION = 15
    XID = 16
    BEGIN_LOAD_QUERY = 17
    EXECUTE_LOAD_QUERY = 18
    TABLE_MAP = 19
    PRE_GA_WRITE_ROWS = 20
    PRE_GA_UPDATE_ROWS = 21
    PRE_GA_DELETE_ROWS = 22
    WRITE_ROWS_V1 = 23
    UPDATE_ROWS_V1 = 24
    DELETE_ROWS_V1 = 25
    INCIDENT = 26
    HEARTBEAT = 27
    IGNORABLE = 28
    ROWS_QUERY = 29
    WRITE_ROWS = 30
    UPDATE_ROWS = 31
    DELETE_ROWS = 32
    GTID = 33
    ANONYMOUS_GTID = 34
    PREVIOUS_GTIDS = 35
    TRANSACTION_CONTEXT = 36
    VIEW_CHANGE = 37
    XA_PREPARE = 38
    PARTIAL_UPDATE_ROWS = 39
    TRANSACTION_PAYLOAD = 40
    HEARTBEAT_V2 = 41
    GTID_TAGGED = 42
    # MariaDB
    ANNOTATE_ROWS = 160
    BINLOG_CHECKPOINT = 161
    MARIADB_GTID = 162
    GTID_LIST = 163
    START_ENCRYPTION = 164
    QUERY_COMPRESSED = 165
    WRITE_ROWS_COMPRESSED_V1 = 166
    UPDATE_ROWS_COMPRESSED_V1 = 167
    DELETE_ROWS_COMPRESSED_V1 = 168
    WRITE_ROWS_COMPRESSED = 169
    UPDATE_ROWS_COMPRESSED = 170
    DELETE_ROWS_COMPRESSED = 171


class EventFlag(IntFlag):
    """Flags of the common event header (``log_event.h``)."""

    BINLOG_IN_USE = 0x1
    THREAD_SPECIFIC = 0x4
    SUPPRESS_USE = 0x8
    ARTIFICIAL = 0x20
    RELAY_LOG = 0x40
    IGNORABLE = 0x80
    SKIP_REPLICATION = 0x8000


_NAMES = {member.value: member.name for member in EventType}


def type_name(code: int) -> str:
    """The event type's name, or ``UNKNOWN_<code>`` for codes no server defines."""
    return _NAMES.get(code) or f"UNKNOWN_{code}"


GTID_TYPES = frozenset(
    {EventType.GTID, EventType.ANONYMOUS_GTID, EventType.GTID_TAGGED, EventType.MARIADB_GTID}
)
ROWS_V1_TYPES = frozenset(
    {EventType.WRITE_ROWS_V1, EventType.UPDATE_ROWS_V1, EventType.DELETE_ROWS_V1}
)
ROWS_V2_TYPES = frozenset(
    {
        EventType.WRITE_ROWS,
        EventType.UPDATE_ROWS,
        EventType.DELETE_ROWS,
        EventType.PARTIAL_UPDATE_ROWS,
    }
)
MARIADB_COMPRESSED_ROWS_TYPES = frozenset(
    {
        EventType.WRITE_ROWS_COMPRESSED_V1,
        EventType.UPDATE_ROWS_COMPRESSED_V1,
        EventType.DELETE_ROWS_COMPRESSED_V1,
        EventType.WRITE_ROWS_COMPRESSED,
        EventType.UPDATE_ROWS_COMPRESSED,
        EventType.DELETE_ROWS_COMPRESSED,
    }
)
ROWS_TYPES = ROWS_V1_TYPES | ROWS_V2_TYPES | MARIADB_COMPRESSED_ROWS_TYPES
