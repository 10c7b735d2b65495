"""TABLE_MAP and rows events, header part: which table, which columns, the row bytes.

TABLE_MAP_EVENT (19)::

    post-header: table_id 6 (4 when the post-header is 6 bytes) | flags 2
    body:        db_len 1 | db | NUL | table_len 1 | table | NUL | column_count packed |
                 column_types (column_count) | metadata_len packed | metadata |
                 null_bitmap ((column_count + 7) / 8) | optional metadata (rest, WL#4618)

Rows events (``rows_event.h``; v1 = 23-25, v2 = 30-32, PARTIAL_UPDATE_ROWS = 39)::

    post-header: table_id 6 | flags 2 [| extra_data_len 2 | extra_data (extra_data_len - 2)]   v2 only
    body:        column_count packed | columns_before_image bitmap
                 [| columns_after_image bitmap]   UPDATE and PARTIAL_UPDATE only
                 | rows

In MariaDB's compressed rows events the rows are a compressed block, inflated here.
The metadata, optional metadata and rows are kept as bytes here; the table map
model and the row decoder build on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..event_types import (
    MARIADB_COMPRESSED_ROWS_TYPES,
    ROWS_V2_TYPES,
    EventType,
)
from ..mariadb_compression import uncompress_block
from ..reader import MAX_EVENT_SIZE
from ..reader import RawEvent
from ..wire import Cursor, ShortBody
from .base import Event, decoder, location

ROWS_FLAG_NAMES = {1: "STMT_END", 2: "NO_FOREIGN_KEY_CHECKS", 4: "RELAXED_UNIQUE_CHECKS", 8: "COMPLETE_ROWS"}


def _columns(count: int) -> str:
    return "1 column" if count == 1 else f"{count} columns"


def _table_id(raw: RawEvent, cursor: Cursor, type_code: int) -> int:
    width = 4 if raw.fde.post_header_length(type_code, 8) == 6 else 6
    return cursor.uint(width, "table_id")


@dataclass(kw_only=True)
class TableMapEvent(Event):
    """TABLE_MAP_EVENT (19): binds a table id to a table and its column types."""

    table_id: int
    flags: int
    database: str
    table: str
    column_count: int
    column_types: list[int]
    metadata: bytes = field(repr=False)
    null_bitmap: bytes = field(repr=False)
    optional_metadata: bytes = field(repr=False)

    def summary(self) -> str:
        return f"table_id {self.table_id} = `{self.database}`.`{self.table}` ({_columns(self.column_count)})"


def _counted_name(cursor: Cursor, what: str) -> str:
    name = cursor.take(cursor.u8(f"{what} length"), what)
    if cursor.u8(f"{what} terminator") != 0:
        raise ShortBody(f"{what} is not followed by its NUL terminator")
    return name.decode("utf-8", "backslashreplace")


@decoder(EventType.TABLE_MAP)
def _table_map(raw: RawEvent, cursor: Cursor) -> TableMapEvent:
    table_id = _table_id(raw, cursor, EventType.TABLE_MAP)
    flags = cursor.u16("flags")
    database = _counted_name(cursor, "database name")
    table = _counted_name(cursor, "table name")
    column_count = cursor.packed_int("column_count")
    column_types = list(cursor.take(column_count, "column types"))
    metadata = cursor.take(cursor.packed_int("metadata length"), "column metadata")
    null_bitmap = cursor.take((column_count + 7) // 8, "null bitmap")
    return TableMapEvent(
        **location(raw),
        table_id=table_id,
        flags=flags,
        database=database,
        table=table,
        column_count=column_count,
        column_types=column_types,
        metadata=metadata,
        null_bitmap=null_bitmap,
        optional_metadata=cursor.rest(),
    )


_ROWS_KIND = {
    EventType.WRITE_ROWS_V1: "insert",
    EventType.UPDATE_ROWS_V1: "update",
    EventType.DELETE_ROWS_V1: "delete",
    EventType.WRITE_ROWS: "insert",
    EventType.UPDATE_ROWS: "update",
    EventType.DELETE_ROWS: "delete",
    EventType.PARTIAL_UPDATE_ROWS: "update",
    EventType.WRITE_ROWS_COMPRESSED_V1: "insert",
    EventType.UPDATE_ROWS_COMPRESSED_V1: "update",
    EventType.DELETE_ROWS_COMPRESSED_V1: "delete",
    EventType.WRITE_ROWS_COMPRESSED: "insert",
    EventType.UPDATE_ROWS_COMPRESSED: "update",
    EventType.DELETE_ROWS_COMPRESSED: "delete",
}
# The post-header layout each rows type shares (MariaDB's compressed types reuse v1 and v2).
_POST_HEADER_TYPE = {
    EventType.WRITE_ROWS_COMPRESSED_V1: EventType.WRITE_ROWS_V1,
    EventType.UPDATE_ROWS_COMPRESSED_V1: EventType.UPDATE_ROWS_V1,
    EventType.DELETE_ROWS_COMPRESSED_V1: EventType.DELETE_ROWS_V1,
    EventType.WRITE_ROWS_COMPRESSED: EventType.WRITE_ROWS,
    EventType.UPDATE_ROWS_COMPRESSED: EventType.UPDATE_ROWS,
    EventType.DELETE_ROWS_COMPRESSED: EventType.DELETE_ROWS,
}
_V2_LIKE = ROWS_V2_TYPES | {
    EventType.WRITE_ROWS_COMPRESSED,
    EventType.UPDATE_ROWS_COMPRESSED,
    EventType.DELETE_ROWS_COMPRESSED,
}


@dataclass(kw_only=True)
class RowsEvent(Event):
    """A rows event: row images of one table, before (update, delete) and after (insert, update)."""

    kind: str
    table_id: int
    flags: int
    extra_data: bytes
    column_count: int
    columns_before: bytes
    columns_after: bytes | None
    rows: bytes = field(repr=False)
    rows_size: int

    @property
    def statement_end(self) -> bool:
        return bool(self.flags & 1)

    def summary(self) -> str:
        end = ", statement end" if self.statement_end else ""
        return f"{self.kind} table_id {self.table_id}, {_columns(self.column_count)}, {self.rows_size} bytes of rows{end}"


def _selects_a_column(bitmap: bytes, column_count: int) -> bool:
    """Whether a column bitmap (bit i for column i, least significant first) sets any of its columns."""
    return bool(int.from_bytes(bitmap, "little") & ((1 << column_count) - 1))


@decoder(*_ROWS_KIND)
def _rows(raw: RawEvent, cursor: Cursor) -> RowsEvent:
    type_code = raw.type_code
    layout = _POST_HEADER_TYPE.get(type_code, type_code)
    table_id = _table_id(raw, cursor, layout)
    flags = cursor.u16("flags")
    extra_data = b""
    if type_code in _V2_LIKE:
        extra_len = cursor.u16("extra_data_len")
        if extra_len < 2:
            raise ShortBody(f"extra_data_len {extra_len} is smaller than its own 2 bytes")
        extra_data = cursor.take(extra_len - 2, "extra_data")
    column_count = cursor.packed_int("column_count")
    bitmap_size = (column_count + 7) // 8
    before = cursor.take(bitmap_size, "columns_before_image")
    after = cursor.take(bitmap_size, "columns_after_image") if _ROWS_KIND[type_code] == "update" else None
    rows = cursor.rest()
    if type_code in MARIADB_COMPRESSED_ROWS_TYPES:
        rows = uncompress_block(rows, MAX_EVENT_SIZE)
    if rows and not any(_selects_a_column(bitmap, column_count) for bitmap in (before, after) if bitmap is not None):
        # A row of no columns takes no bytes: the row decoder would never get past the first one.
        raise ShortBody(f"{len(rows)} bytes of rows, but the column bitmaps select none of the {column_count} columns")
    return RowsEvent(
        **location(raw),
        kind=_ROWS_KIND[type_code],
        table_id=table_id,
        flags=flags,
        extra_data=extra_data,
        column_count=column_count,
        columns_before=before,
        columns_after=after,
        rows=rows,
        rows_size=len(rows),
    )
