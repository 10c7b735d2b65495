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

Decoding is planned once per table map (:class:`DecodingPlan`): each column's
decoder, and for each image layout met (which columns an image carries and
which of them are NULL) its reading steps, where consecutive columns of fixed
size (integers, DECIMAL, temporal types, ENUM, ...) are read with one
``struct`` call and only the values that need it are converted.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from . import charsets, compiled
from .errors import CorruptEventError
from .event_types import ROWS_TYPES, EventType
from .events import GtidEvent, MariadbGtidEvent, RowsEvent, TableMapEvent, decode
from .reader import BinlogReader, RawEvent
from .table_map import ColumnType, TableMap, decode_table_map
from .values import FixedWidth, ValueDecoder, decoder_of, needs_round_trip, value_layout
from .wire import Cursor, ShortBody

PARTIAL_JSON = 1


@dataclass(slots=True)
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


# A reading step (see ReadingSteps): (unpack_from, size, names, conversions) for a run of columns
# of fixed size, read by one struct call; (None, 0, name, decoder) for one column of variable size.
Step = tuple
# The most null patterns whose steps one image layout keeps.
MAX_NULL_PATTERNS = 256


class ImageColumns(NamedTuple):
    """The columns an image carries, by its column bitmap: ``(index, name, decoder)`` each,
    the size of the image's null bitmap and the mask of its used bits. ``layouts`` are the
    columns' :func:`~binlog_codec.values.value_layout`; ``steps`` caches the reading steps
    of each null bitmap met."""

    columns: tuple[tuple[int, str, ValueDecoder], ...]
    null_size: int
    null_mask: int
    layouts: tuple
    steps: dict[int, tuple[Step, ...]]


def _null(unpacked: bytes) -> None:
    return None


# A NULL value takes no bytes: in a run of fixed-size columns it is a zero-byte field made None.
_NULL_LAYOUT = FixedWidth("0s", _null)


def reading_steps(image: ImageColumns, nulls: int) -> tuple[Step, ...]:
    """How to read an image whose null bitmap is ``nulls``: its columns in order, consecutive
    fixed-size and NULL columns merged into runs read by one ``struct`` call."""
    steps: list[Step] = []
    run: list[tuple[str, FixedWidth]] = []
    for position, ((_, name, decode), layout) in enumerate(zip(image.columns, image.layouts)):
        if nulls >> position & 1:
            run.append((name, _NULL_LAYOUT))
        elif isinstance(layout, FixedWidth):
            run.append((name, layout))
        else:
            if run:
                steps.append(_run_step(run))
                run = []
            steps.append((None, 0, name, decode))
    if run:
        steps.append(_run_step(run))
    return tuple(steps)


def _run_step(run: list[tuple[str, FixedWidth]]) -> Step:
    reader = struct.Struct("<" + "".join(layout.code for _, layout in run))
    conversions = tuple((i, layout.convert) for i, (_, layout) in enumerate(run) if layout.convert is not None)
    return (reader.unpack_from, reader.size, tuple(name for name, _ in run), conversions)


class _RunPastEnd(Exception):
    """A run of fixed-size values goes past the row data: read column by column to say where."""


class DecodingPlan:
    """What decoding a row of one table needs, built once per table map. With ``round_trips``,
    the values of text columns in charsets other than UTF-8 and ASCII are checked by encoding
    them back (:class:`~binlog_codec.charsets.RoundTrips`)."""

    def __init__(
        self,
        table: TableMap,
        flavour: str = "mysql",
        assumed_collation: int | None = None,
        round_trips: charsets.RoundTrips | None = None,
    ) -> None:
        self.table = table
        self.flavour = flavour
        self.names = [column.display_name for column in table.columns]
        self.layouts = [
            value_layout(column, flavour, assumed_collation, self._round_trip(column, flavour, round_trips))
            for column in table.columns
        ]
        self.decoders = [decoder_of(column, layout) for column, layout in zip(table.columns, self.layouts)]
        self.json_columns = [c.index for c in table.columns if c.type_code == ColumnType.JSON]
        self.pack_lengths = [column.pack_length or 4 for column in table.columns]
        self._images: dict[bytes, ImageColumns] = {}
        # The compiled build's plan of this table (binlog_codec.row_text), made on first use.
        self.text_plan = None

    def _round_trip(self, column, flavour: str, round_trips: charsets.RoundTrips | None) -> charsets.RoundTrip | None:
        if round_trips is None or not needs_round_trip(column, flavour):
            return None
        charset = charsets.charset_of(column.collation_id, flavour)
        return round_trips.of(self.table.database, self.table.table, column.display_name, charset)

    def image_columns(self, bitmap: bytes) -> ImageColumns:
        """The columns set in a column bitmap (WL#5092), worked out once per distinct bitmap."""
        found = self._images.get(bitmap)
        if found is None:
            found = self._images[bitmap] = self.columns_of(_present(bitmap, len(self.names)))
        return found

    def columns_of(self, present: list[int]) -> ImageColumns:
        """The image of the columns at the positions ``present``, in order."""
        columns = tuple((i, self.names[i], self.decoders[i]) for i in present)
        layouts = tuple(self.layouts[i] for i in present)
        return ImageColumns(columns, (len(columns) + 7) // 8, (1 << len(columns)) - 1, layouts, {})

    def image(
        self, data: bytes, offset: int, image: ImageColumns, partial: set[int] = frozenset()
    ) -> tuple[dict, int]:
        """Decode one image starting at ``offset``; returns the values and the next offset."""
        start = offset + image.null_size
        if start > len(data):
            raise ShortBody(f"row image null bitmap needs {image.null_size} bytes at row offset {offset}")
        nulls = int.from_bytes(data[offset:start], "little") & image.null_mask
        if partial:
            return self._by_column(data, start, image, nulls, partial)
        steps = image.steps.get(nulls)
        if steps is None:
            if len(image.steps) >= MAX_NULL_PATTERNS:
                image.steps.clear()
            steps = image.steps[nulls] = reading_steps(image, nulls)
        try:
            return read_steps(steps, data, start)
        except _RunPastEnd:
            return self._by_column(data, start, image, nulls, partial)

    def _by_column(
        self, data: bytes, offset: int, image: ImageColumns, nulls: int, partial: set[int]
    ) -> tuple[dict, int]:
        """Decode an image's values one column at a time, from ``offset`` (past its null bitmap)."""
        values: dict[str, Any] = {}
        for position, (index, name, decode) in enumerate(image.columns):
            if nulls >> position & 1:
                values[name] = None
            elif index in partial:
                values[name], offset = self._diff(data, offset, index)
            else:
                values[name], offset = decode(data, offset)
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


def read_steps(steps: tuple[Step, ...], data: bytes, offset: int) -> tuple[dict, int]:
    """The values of an image read by its :func:`reading_steps` from ``offset``, and the next
    offset. Raises ``_RunPastEnd`` when a run of fixed-size values goes past the data."""
    values: dict[str, Any] = {}
    end = len(data)
    for unpack, size, names, conversions in steps:
        if unpack is None:  # one column of variable size: names is its name, conversions its decoder
            values[names], offset = conversions(data, offset)
            continue
        if offset + size > end:
            raise _RunPastEnd
        row = unpack(data, offset)
        offset += size
        if conversions:
            row = list(row)
            for index, convert in conversions:
                row[index] = convert(row[index])
        values.update(zip(names, row))
    return values, offset


def decode_rows(event: RowsEvent, plan: DecodingPlan) -> list[RowChange]:
    """Every row of ``event``; errors are located at the event."""
    if event.column_count != len(plan.names):
        raise _error(event, f"rows event has {event.column_count} columns, its table map {len(plan.names)}")
    before_cols = plan.image_columns(event.columns_before)
    after_cols = plan.image_columns(event.columns_after) if event.columns_after is not None else before_cols
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


class TableVersion:
    """One table map's table and, built when its first rows are decoded, its decoding plan."""

    def __init__(self, table: TableMap) -> None:
        self.table = table
        self._plan: DecodingPlan | None = None

    def plan(
        self, event: RowsEvent, flavour: str, assume_charset: str | None, round_trips: charsets.RoundTrips | None = None
    ) -> DecodingPlan:
        """The plan; a column it cannot decode is an error located at ``event``."""
        if self._plan is None:
            try:
                assumed = None if assume_charset is None else charsets.collation_of_charset(assume_charset, flavour).id
                self._plan = DecodingPlan(self.table, flavour, assumed, round_trips)
            except (ShortBody, charsets.UnknownCollationError) as exc:
                raise _error(event, f"table {self.table.database}.{self.table.table}: {exc}") from None
        return self._plan


class TableVersions:
    """Table maps decoded once. A server logs the table map again in every transaction that
    changes the table; the same map (same id, names, types and metadata) is the same version.

    ``round_trips`` collects the charset round-trip checks of every version's text columns
    (:class:`~binlog_codec.charsets.RoundTrips`); it outlives the versions themselves."""

    def __init__(self, limit: int = 4096) -> None:
        self._versions: dict[tuple, TableVersion] = {}
        self._bodies: dict[tuple, TableVersion] = {}
        self._limit = limit
        self.round_trips = charsets.RoundTrips()

    def version_of(self, raw: RawEvent) -> TableVersion:
        """The version of a framed TABLE_MAP event, decoded only the first time its body is met
        under its format description (which sets the width of the table id)."""
        key = (raw.fde.post_header_length(EventType.TABLE_MAP, 8), bytes(raw.body))
        found = self._bodies.get(key)
        if found is None:
            if len(self._bodies) >= self._limit:
                self._bodies.clear()
            found = self._bodies[key] = self.version(decode(raw))
        return found

    def version(self, event: TableMapEvent) -> TableVersion:
        key = (
            event.table_id, event.database, event.table, tuple(event.column_types),
            event.metadata, event.null_bitmap, event.optional_metadata,
        )
        found = self._versions.get(key)
        if found is None:
            if len(self._versions) >= self._limit:  # many distinct maps: keep memory bounded
                self._versions.clear()
            found = self._versions[key] = TableVersion(decode_table_map(event))
        return found


def _error(event: RowsEvent, message: str) -> CorruptEventError:
    return CorruptEventError(
        message, file=event.file, position=event.pos, event_type=event.type_name, inner_offset=event.inner_offset
    )


@dataclass(slots=True)
class RowRecord:
    """A row change with its context: where it is, which table, which transaction.

    ``pos`` is the start of the rows event, or of the TRANSACTION_PAYLOAD that holds it, in which
    case ``inner_offset`` is the event's offset in the uncompressed payload (None otherwise):
    ``(pos, inner_offset, row_index)`` orders and identifies the rows of a file. ``table_map`` is
    the decoded table map the row was read with (the same object for the same table version).
    """

    file: str
    pos: int
    row_index: int
    kind: str
    database: str
    table: str
    gtid: str | None
    timestamp: int
    change: RowChange
    inner_offset: int | None = None
    table_map: TableMap | None = None


class RowsOfTable(NamedTuple):
    """A rows event of a binlog file with what decoding it needs: the decoded table map of its
    table, that table version's decoding plan, and the GTID of its transaction."""

    event: RowsEvent
    table: TableMap
    plan: DecodingPlan
    gtid: str | None


# The events rows_events meets most, by type code.
_TABLE_MAP = int(EventType.TABLE_MAP)
_MARIADB_GTID = int(EventType.MARIADB_GTID)
_ANNOTATE_ROWS = int(EventType.ANNOTATE_ROWS)
_XID = int(EventType.XID)
_ROWS_CODES = frozenset(int(code) for code in ROWS_TYPES)

if compiled():
    from .frames import mariadb_gtid, rows_event
else:

    def rows_event(raw: RawEvent) -> RowsEvent:
        """The record of a framed rows event (the compiled build decodes the common ones in C)."""
        return decode(raw)

    def mariadb_gtid(raw: RawEvent) -> str:
        """The GTID of a framed MariaDB GTID event (the compiled build reads the common ones in C)."""
        return decode(raw).gtid


def rows_events(
    path,
    *,
    flavour: str | None = None,
    database: str | None = None,
    table: str | None = None,
    assume_charset: str | None = None,
    versions: TableVersions | None = None,
    **reader_options,
):
    """Every rows event of a binlog file, in order, as :class:`RowsOfTable` (arguments as
    for :func:`read_rows`, which decodes their rows).

    Every event is decoded, so that a corrupt one is an error here too; a table map only the
    first time its body is met (:meth:`TableVersions.version_of`), and not the bodies in which
    nothing can be wrong (ANNOTATE_ROWS: any bytes are its text; an XID of 8 bytes). Rows events
    and MariaDB GTIDs go through :func:`rows_event` and :func:`mariadb_gtid`, which the compiled
    build reads in C."""
    current: dict[int, TableVersion] = {}  # table id -> its latest table map
    versions = TableVersions() if versions is None else versions
    gtid = None
    skip_unknown = reader_options.pop("skip_unknown", False)
    for raw in BinlogReader(path, **reader_options):
        code = raw.header.type_code
        if code == _TABLE_MAP:
            version = versions.version_of(raw)
            current[version.table.table_id] = version
            continue
        if flavour is None:
            flavour = "mariadb" if raw.fde.is_mariadb else "mysql"
        if code in _ROWS_CODES:
            event = rows_event(raw)
        elif code == _MARIADB_GTID:
            gtid = mariadb_gtid(raw)
            continue
        elif code == _ANNOTATE_ROWS or (code == _XID and len(raw.body) == 8):
            continue  # nothing in these bodies can be corrupt, and nothing here needs them
        else:
            event = decode(raw, skip_unknown=skip_unknown)
        if isinstance(event, (GtidEvent, MariadbGtidEvent)):
            gtid = event.gtid
        elif isinstance(event, RowsEvent):
            version = current.get(event.table_id)
            if version is None:
                raise _error(event, f"no TABLE_MAP for table_id {event.table_id} before this rows event")
            mapped = version.table
            if (database and mapped.database != database) or (table and mapped.table != table):
                continue
            plan = version.plan(event, flavour or "mysql", assume_charset, versions.round_trips)
            yield RowsOfTable(event, mapped, plan, gtid)


def read_rows(
    path,
    *,
    flavour: str | None = None,
    database: str | None = None,
    table: str | None = None,
    assume_charset: str | None = None,
    versions: TableVersions | None = None,
    **reader_options,
):
    """Every row change of a binlog file, in order, with its table and GTID.

    ``flavour`` (``mysql`` or ``mariadb``) picks the collation table; by default
    it follows the server version of the file's format description.
    ``assume_charset`` (such as ``utf8mb4``) reads the character columns of table
    maps that record no charsets (servers before MySQL 8.0.1 and MariaDB 10.5, or
    ``binlog_row_metadata=NO_LOG``): values valid in it become text, the others
    stay bytes. Without it such values stay bytes. ``versions`` is the table-version cache to
    use; pass one to read its charset round-trip checks afterwards.
    """
    for rows in rows_events(
        path, flavour=flavour, database=database, table=table, assume_charset=assume_charset,
        versions=versions, **reader_options,
    ):
        yield from event_records(rows)


def event_records(rows: RowsOfTable):
    """The row changes of one rows event, as :class:`RowRecord`; errors are located at the event."""
    event, mapped, plan, gtid = rows
    for change in decode_rows(event, plan):
        yield RowRecord(
            event.file, event.pos, change.row_index, change.kind, mapped.database, mapped.table,
            gtid, event.header.timestamp, change, event.inner_offset, mapped,
        )
