"""Row images of rows events: column bitmaps (WL#5092), null bitmaps, the shared-image of
PARTIAL_UPDATE_ROWS_EVENT (WL#2955), values through the plan built once per table map.

A rows event holds one or more rows; each row is one image (insert: after,
delete: before) or two (update: before then after). An image covers the
columns set in the event's column bitmap for that image -- under
binlog_row_image=MINIMAL or NOBLOB the other columns are *absent*, which is not
NULL (WL#5092) -- and is laid out as::

    null bitmap ((present columns + 7) / 8 bytes, bit i for the i-th present column)
    | values of the present, non-NULL columns, in column order

PARTIAL_UPDATE_ROWS_EVENT puts a shared-image between before and after image
(WL#2955 F2): ``value_options packed`` and, when bit 0 (PARTIAL_JSON) is set,
``partial_columns``: one bit per JSON column of the table, 1 when that column's
after-image value is a diff (``length | diff_1 ... diff_N``, WL#2955 F3) rather
than a full document. Diffs are kept as bytes here (``RowImage.partial``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import charsets
from .errors import CorruptEventError
from .event_types import EventType
from .events import FormatDescriptionEvent, GtidEvent, MariadbGtidEvent, RowsEvent, TableMapEvent, read
from .table_map import ColumnType, TableMap, decode_table_map
from .values import value_decoder
from .wire import Cursor, ShortBody

PARTIAL_JSON = 1


@dataclass
class RowChange:
    """One row of a rows event. ``before``/``after`` map column names to values;
    absent columns are absent from the mapping. ``partial`` names the JSON columns
    whose ``after`` value is a WL#2955 diff (bytes), not a document."""

    kind: str
    row_index: int
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    partial: list[str] = field(default_factory=list)


def _present(bitmap: bytes, count: int) -> list[int]:
    return [i for i in range(count) if bitmap[i // 8] >> (i % 8) & 1]


class DecodingPlan:
    """What decoding a row of one table needs, built once per table map."""

    def __init__(self, table: TableMap, flavour: str = "mysql", assumed_collation: int | None = None) -> None:
        self.table = table
        self.names = [column.display_name for column in table.columns]
        self.decoders = [value_decoder(column, flavour, assumed_collation) for column in table.columns]
        self.json_columns = [c.index for c in table.columns if c.type_code == ColumnType.JSON]
        self.pack_lengths = [column.pack_length or 4 for column in table.columns]

    def image(self, data: bytes, offset: int, present: list[int], partial: set[int] = frozenset()) -> tuple[dict, int]:
        """Decode one image starting at ``offset``; returns the values and the next offset."""
        null_size = (len(present) + 7) // 8
        if offset + null_size > len(data):
            raise ShortBody(f"row image null bitmap needs {null_size} bytes at row offset {offset}")
        nulls = data[offset : offset + null_size]
        offset += null_size
        values: dict[str, Any] = {}
        for position, index in enumerate(present):
            if nulls[position // 8] >> (position % 8) & 1:
                values[self.names[index]] = None
            elif index in partial:
                values[self.names[index]], offset = self._diff(data, offset, index)
            else:
                values[self.names[index]], offset = self.decoders[index](data, offset)
        return values, offset

    def _diff(self, data: bytes, offset: int, index: int) -> tuple[bytes, int]:
        width = self.pack_lengths[index]
        cursor = Cursor(data, offset)
        length = cursor.uint(width, f"column {self.names[index]} diff length")
        return cursor.take(length, f"column {self.names[index]} diffs"), cursor.pos

    def shared_image(self, data: bytes, offset: int) -> tuple[set[int], int]:
        """PARTIAL_UPDATE_ROWS' ``value_options [| partial_columns]``: the JSON columns sent as diffs."""
        cursor = Cursor(data, offset)
        options = cursor.packed_int("value_options")
        if not options & PARTIAL_JSON:
            return set(), cursor.pos
        bits = cursor.take((len(self.json_columns) + 7) // 8, "partial_columns")
        partial = {col for n, col in enumerate(self.json_columns) if bits[n // 8] >> (n % 8) & 1}
        return partial, cursor.pos


def decode_rows(event: RowsEvent, plan: DecodingPlan) -> list[RowChange]:
    """Every row of ``event``; errors are located at the event."""
    if event.column_count != len(plan.names):
        raise _error(event, f"rows event has {event.column_count} columns, its table map {len(plan.names)}")
    before_cols = _present(event.columns_before, event.column_count)
    after_cols = _present(event.columns_after, event.column_count) if event.columns_after is not None else before_cols
    data, offset, rows = event.rows, 0, []
    partial_event = event.type_code == EventType.PARTIAL_UPDATE_ROWS
    try:
        while offset < len(data):
            change = RowChange(event.kind, len(rows))
            if event.kind == "insert":
                change.after, offset = plan.image(data, offset, before_cols)
            elif event.kind == "delete":
                change.before, offset = plan.image(data, offset, before_cols)
            else:
                change.before, offset = plan.image(data, offset, before_cols)
                partial: set[int] = set()
                if partial_event:
                    partial, offset = plan.shared_image(data, offset)
                change.after, offset = plan.image(data, offset, after_cols, partial)
                change.partial = [plan.names[i] for i in sorted(partial) if change.after.get(plan.names[i]) is not None]
            rows.append(change)
    except ShortBody as exc:
        raise _error(event, f"row {len(rows)}: {exc}") from None
    return rows


def _plan(event: RowsEvent, table: TableMap, flavour: str, assume_charset: str | None) -> DecodingPlan:
    """The table's decoding plan; a column it cannot decode is an error located at ``event``."""
    try:
        assumed = None if assume_charset is None else charsets.collation_of_charset(assume_charset, flavour).id
        return DecodingPlan(table, flavour, assumed)
    except (ShortBody, charsets.UnknownCollationError) as exc:
        raise _error(event, f"table {table.database}.{table.table}: {exc}") from None


def _error(event: RowsEvent, message: str) -> CorruptEventError:
    return CorruptEventError(
        message, file=event.file, position=event.pos, event_type=event.type_name, inner_offset=event.inner_offset
    )


@dataclass
class RowRecord:
    """A row change with its context: where it is, which table, which transaction."""

    file: str
    pos: int
    row_index: int
    kind: str
    database: str
    table: str
    gtid: str | None
    timestamp: int
    change: RowChange


def read_rows(
    path,
    *,
    flavour: str | None = None,
    database: str | None = None,
    table: str | None = None,
    assume_charset: str | None = None,
    **reader_options,
):
    """Every row change of a binlog file, in order, with its table and GTID.

    ``flavour`` (``mysql`` or ``mariadb``) picks the collation table; by default
    it follows the server version of the file's format description.
    ``assume_charset`` (such as ``utf8mb4``) reads the character columns of table
    maps that record no charsets (servers before MySQL 8.0.1 and MariaDB 10.5, or
    ``binlog_row_metadata=NO_LOG``): values valid in it become text, the others
    stay bytes. Without it such values stay bytes.
    """
    plans: dict[int, DecodingPlan] = {}
    tables: dict[int, TableMap] = {}
    gtid = None
    for event in read(path, **reader_options):
        if isinstance(event, FormatDescriptionEvent) and flavour is None:
            flavour = "mariadb" if "mariadb" in event.server_version.lower() else "mysql"
        elif isinstance(event, (GtidEvent, MariadbGtidEvent)):
            gtid = event.gtid
        elif isinstance(event, TableMapEvent):
            tables[event.table_id] = decode_table_map(event)
            plans.pop(event.table_id, None)
        elif isinstance(event, RowsEvent):
            mapped = tables.get(event.table_id)
            if mapped is None:
                raise _error(event, f"no TABLE_MAP for table_id {event.table_id} before this rows event")
            if (database and mapped.database != database) or (table and mapped.table != table):
                continue
            plan = plans.get(event.table_id)
            if plan is None:
                plan = plans[event.table_id] = _plan(event, mapped, flavour or "mysql", assume_charset)
            for change in decode_rows(event, plan):
                yield RowRecord(
                    event.file, event.pos, change.row_index, change.kind, mapped.database, mapped.table,
                    gtid, event.header.timestamp, change,
                )
