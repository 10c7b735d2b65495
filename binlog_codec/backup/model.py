"""What an online backup image holds, as plain dataclasses.

The names follow the WL#4063 specification: an image has a :class:`Header`
(with one :class:`SnapshotInfo` per table data snapshot), a :class:`Summary`
(validity point, binlog position), a :class:`Catalogue` (charsets, users,
databases and the items of each database), a list of :class:`MetadataItem`
(CREATE statements and other data needed to restore items) and a sequence of
:class:`TableDataChunk`.

Numbering follows the format: snapshots are numbered from 1 (the first
:class:`SnapshotInfo` of the header is snapshot 1); every other position
(database number, a table's position in its snapshot's table list, an item's
position in a list) counts from 0.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import cached_property
from datetime import datetime
from enum import Enum, IntEnum

# Header flags (stream_v1.h), bit 0 first.
FLAG_SUMMARY_IN_PREAMBLE = 0x01
FLAG_BIG_ENDIAN = 0x02
FLAG_HAS_BINLOG_POSITION = 0x04
KNOWN_HEADER_FLAGS = FLAG_SUMMARY_IN_PREAMBLE | FLAG_BIG_ENDIAN | FLAG_HAS_BINLOG_POSITION


class ImageType(IntEnum):
    """Which backup driver created a table data snapshot ([image type])."""

    NATIVE = 0  # a storage engine's native backup driver (BI_NATIVE)
    DEFAULT = 1  # the built-in blocking driver (BI_DEFAULT)
    CONSISTENT_SNAPSHOT = 2  # the built-in driver in a consistent read transaction (BI_CS)


class ItemType(IntEnum):
    """Type codes of catalogue and meta-data items."""

    CHARSET = 1
    USER = 2
    PRIVILEGE = 3
    DATABASE = 4
    TABLE = 5
    VIEW = 6


class MetadataKind(Enum):
    """The section of the meta-data an entry belongs to; it decides how the item's position is written."""

    GLOBAL = "global"  # [position]: e.g. a database's number
    TABLE = "table"  # [snapshot no ! position in the snapshot's table list], grouped by database
    PER_DB = "per_db"  # [position in the database's item list ! database no]
    PER_TABLE = "per_table"  # [position in the table's item list ! database no ! table position]


@dataclass(frozen=True)
class ServerVersion:
    """[server version]: e.g. ``ServerVersion(6, 0, 5, "6.0.5-alpha-log")``."""

    major: int
    minor: int
    release: int
    extra: str = ""


@dataclass(frozen=True)
class SnapshotInfo:
    """[snapshot description]: one table data snapshot of the image.

    ``engine_name`` and ``engine_version`` (major, minor) are present for
    native snapshots only; ``extra_data`` is whatever follows in the chunk.
    """

    image_type: ImageType
    table_count: int
    format_version: int = 1
    options: int = 0
    engine_name: str | None = None
    engine_version: tuple[int, int] | None = None
    extra_data: bytes = b""


@dataclass(frozen=True)
class Header:
    """[header]: global information written first.

    ``summary_in_preamble`` says where the :class:`Summary` is (right after
    the header, or at the end of the image); ``has_binlog_position`` whether
    the summary's binlog positions mean anything; ``big_endian`` the byte
    order of the server that created the image. ``extra_data`` is whatever
    follows the server version in the header chunk.
    """

    creation_time: datetime
    server_version: ServerVersion
    snapshots: tuple[SnapshotInfo, ...]
    summary_in_preamble: bool = False
    has_binlog_position: bool = True
    big_endian: bool = sys.byteorder == "big"
    extra_data: bytes = b""

    @property
    def flags(self) -> int:
        """The 2-byte [flags] field."""
        return (
            (FLAG_SUMMARY_IN_PREAMBLE if self.summary_in_preamble else 0)
            | (FLAG_BIG_ENDIAN if self.big_endian else 0)
            | (FLAG_HAS_BINLOG_POSITION if self.has_binlog_position else 0)
        )


@dataclass(frozen=True)
class Summary:
    """[summary]: known only when the backup is complete.

    The binlog position of the validity point (the last event at VP time, and
    the start of the event group holding it) is ``None`` when the header says
    the image has none (``has_binlog_position`` false).
    """

    vp_time: datetime
    end_time: datetime
    binlog_file: str | None = None
    binlog_position: int | None = None
    binlog_group_file: str | None = None
    binlog_group_position: int | None = None


@dataclass(frozen=True)
class Table:
    """A table in a database's catalogue; its rows are in snapshot ``snapshot_number``.

    ``extra_data`` holds at most 255 bytes.
    """

    name: str
    snapshot_number: int
    extra_data: bytes | None = None

    type = ItemType.TABLE


@dataclass(frozen=True)
class DbItem:
    """A per-database item other than a table (e.g. a view) in a database's catalogue."""

    type: ItemType
    name: str


@dataclass(frozen=True)
class Database:
    """[db info] and its [db catalogue]: tables and other items, in catalogue order.

    ``extra_data`` holds at most 65535 bytes.
    """

    name: str
    items: tuple[Table | DbItem, ...] = ()
    extra_data: bytes | None = None

    @property
    def tables(self) -> tuple[Table, ...]:
        return tuple(item for item in self.items if isinstance(item, Table))


@dataclass(frozen=True)
class Catalogue:
    """[catalogue]: what the image holds, without meta-data.

    ``charsets[0]`` is the charset of every string of the preamble and
    ``charsets[1]`` the server's default charset (both always present).
    ``users`` should start with the root user.
    """

    charsets: tuple[str, ...]
    users: tuple[str, ...]
    databases: tuple[Database, ...] = ()

    def snapshot_tables(self, snapshot_number: int) -> list[tuple[int, Table]]:
        """The table list of a snapshot, as (database number, table) in catalogue order.

        A table's position in this list is its number in table data chunks
        and in the meta-data.
        """
        return self._snapshot_tables.get(snapshot_number, [])

    @cached_property
    def _snapshot_tables(self) -> dict[int, list[tuple[int, Table]]]:
        tables: dict[int, list[tuple[int, Table]]] = {}
        for db_number, database in enumerate(self.databases):
            for table in database.tables:
                tables.setdefault(table.snapshot_number, []).append((db_number, table))
        return tables


@dataclass(frozen=True)
class MetadataItem:
    """[item entry]: what is needed to restore one item, and where the item is in the catalogue.

    ``position`` is the first number of [position in the catalogue]; the
    other numbers are ``snapshot_number`` (tables), ``database`` (per-db and
    per-table items; for tables, the database whose group the entry is
    stored in) and ``table`` (per-table items: the table's position in its
    database's item list). ``extra_data`` holds at most 65535 bytes.
    """

    kind: MetadataKind
    type: ItemType
    position: int
    database: int | None = None
    snapshot_number: int | None = None
    table: int | None = None
    extra_data: bytes | None = None
    create_statement: str | None = None

    @property
    def flags(self) -> int:
        """[flags]: has_extra_data (0x80), has_create_stmt (0x40)."""
        return (0x80 if self.extra_data is not None else 0) | (0x40 if self.create_statement is not None else 0)


@dataclass(frozen=True)
class TableDataChunk:
    """[table data chunk]: a piece of one table's data, opaque to this format.

    ``last`` is the "last data block" flag: no more data for the table
    follows. ``offset`` is where the chunk starts in the image file (0 for a
    chunk not read from a file).
    """

    snapshot_number: int
    table_number: int
    data: bytes
    last: bool = False
    sequence_number: int = 0
    offset: int = field(default=0, compare=False)
