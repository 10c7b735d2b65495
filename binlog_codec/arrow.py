"""MySQL column → Arrow type, row images → Arrow record batches of the warehouse's ``changes`` layout.

The types are the "Type mapping" table of the architecture (``docs/ARCHITECTURE.md``,
"Warehouse contract"), chosen so that Spark, DuckDB and pyarrow read a Parquet
file the same way:

=====================================================  =========================================
MySQL (table map type)                                 Arrow
=====================================================  =========================================
TINYINT, SMALLINT, MEDIUMINT, INT, BIGINT signed       int8, int16, int32, int32, int64
TINYINT, SMALLINT, MEDIUMINT, INT unsigned             int16, int32, int32, int64
BIGINT unsigned                                        decimal128(20, 0)
DECIMAL(p,s)                                           decimal128(p, s); string when p > 38
FLOAT, DOUBLE                                          float32, float64
BIT(n)                                                 int64; decimal128(20, 0) when n = 64
YEAR                                                   int16 (the zero year stays 0)
DATE, DATETIME(fsp), TIMESTAMP(fsp)                    date32, timestamp[us], timestamp[us, UTC]
TIME(fsp)                                              string, MySQL's text
CHAR, VARCHAR, TEXT                                    string, decoded from the column's charset
BINARY, VARBINARY, BLOB, GEOMETRY                      binary (GEOMETRY: SRID + WKB as stored)
ENUM, SET                                              string: the label, SET labels comma-joined
JSON                                                   string: MySQL's JSON text form
VECTOR                                                 list<float32>
=====================================================  =========================================

Where that table is silent, this module decides:

* **Signedness unknown** (a table map without the SIGNEDNESS field of WL#4618:
  ``binlog_row_metadata=NO_LOG`` or servers before it): the unsigned column's
  type, which holds every value of either signedness, so that a table's schema
  does not change when its metadata level does. The values are the decoder's
  reading of the bytes, which is signed (:mod:`binlog_codec.values`).
* **ENUM and SET without labels** (labels come with ``binlog_row_metadata=FULL``
  only): the decoder's integer, the 1-based ENUM index or the SET bit mask, as
  int64; a SET of 8 bytes (up to 64 members) as decimal128(20, 0), like BIT(64).
* **Character columns without a recorded charset**: binary, the bytes as
  logged. A ``str`` value there (rows read with ``assume_charset``) is a
  ``TypeError``: re-encoding it would invent bytes.
* **JSON null**: the null document (the decoder's ``JSON_NULL``) is the text
  ``null``; SQL NULL is null.
* **FLOAT**: the 4-byte float itself (the decoder's shortest decimal is the
  same float32); **DECIMAL(p > 38)** as MySQL's plain text, never an exponent.
* Column types no row image holds (the pre-5.0 DECIMAL, NULL, TYPED_ARRAY, BOOL,
  INVALID, the blob type codes a table map never carries) have no Arrow type:
  :func:`arrow_type` raises ``ValueError`` for exactly the types
  :func:`binlog_codec.values.value_decoder` cannot decode. So does a collation
  id the server flavour does not define, as :func:`~binlog_codec.table_map.sql_type` does.

Values (:func:`to_arrow`): decoded values become what pyarrow stores in the
column's type, exactly: ``Decimal`` to decimal128 without rounding, DATETIME
text ``YYYY-MM-DD hh:mm:ss[.ffffff]`` to a naive ``datetime``, TIMESTAMP text
(UTC, as the decoder writes it) to an aware one. A value the type cannot hold
-- zero and partly-zero dates (``0000-00-00``, ``2020-00-15``), the zero
DATETIME/TIMESTAMP, year 0 and days a month does not have -- raises
:class:`UnrepresentableValue` with its MySQL text; in a batch it is null and
its text goes to ``_unrepresentable``.

Batches (:class:`ImageBatchBuilder`, :func:`image_schema`): one row per row
change, the after-image's columns by display name, then the change columns of
the warehouse contract, in its order:

* ``_op`` ``c``/``u``/``d``, or ``r`` for a row of a backup image (a
  :class:`~binlog_codec.rows.RowRecord` of kind ``snapshot``);
  ``_binlog_file`` (the file's name, without its folder, so that where a
  run staged it leaves no trace), ``_binlog_seq`` (its numeric suffix, null for a name without one), ``_binlog_pos`` (start of the
  rows event, or of the TRANSACTION_PAYLOAD that holds it),
  ``_binlog_inner_offset`` (the rows event's offset inside that payload, null
  outside one: a compressed transaction holds several rows events at one
  ``_binlog_pos``), ``_row_index``, ``_gtid``, ``_server_id`` and ``_xid``
  and ``_commit_ts`` (in UTC) of the transaction's :class:`Commit` (without
  one: no server id or XID, and the rows event's header timestamp),
  ``_schema_id`` (the table version, see :func:`schema_id`);
* ``_before``: a struct of the before-image's columns, null for inserts;
  columns the before-image did not carry are null in it;
* ``_present_columns``: the columns the after-image carried (none for a delete);
  ``_partial_columns``: the JSON columns that arrived as WL#2955 diffs, whose
  typed column is null and whose diff bytes are in ``_partial_diffs``;
* ``_unrepresentable``: column → MySQL text; a before-image value is keyed
  ``_before.<column>``.

``(_binlog_seq, _binlog_pos, _binlog_inner_offset, _row_index)`` identifies a
row change. ``_incomplete_columns`` of the contract is not known from a
:class:`~binlog_codec.rows.RowRecord`; materializing adds it.

Table versions (:func:`schema_id`, :func:`table_schema_row`): the ``_schema_id``
of a row is a hash of what its table map says about the table -- database,
table, every column's type, metadata, name, charset, ENUM/SET values,
visibility, the primary key, the metadata level -- and of the server flavour
that gives collation ids their meaning; the table id, which a server hands out
afresh, is no part of it. :func:`table_schema_row` is the row of the
warehouse's ``metadata/table_schemas`` for one version (:data:`TABLE_SCHEMA`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import date, datetime, timezone, tzinfo
from decimal import Decimal
from pathlib import PurePath
from typing import Any, Callable, NamedTuple

import pyarrow as pa

from . import charsets, json_binary, table_map
from .rows import RowRecord
from .table_map import Column, ColumnType, TableMap

Converter = Callable[[Any], Any]

UNSIGNED_BIGINT = pa.decimal128(20, 0)  # 0 to 18446744073709551615, and every signed BIGINT too
MAX_DECIMAL128_PRECISION = 38
OPERATIONS = {"insert": "c", "update": "u", "delete": "d", "snapshot": "r"}  # snapshot: a row of a backup image
BEFORE_PREFIX = "_before."


class UnrepresentableValue(ValueError):
    """A value its column's Arrow type cannot hold; ``text`` is its MySQL text."""

    def __init__(self, text: str) -> None:
        super().__init__(f"{text!r} has no Arrow value")
        self.text = text


@dataclass(frozen=True)
class ArrowMapping:
    """A column's Arrow type and the conversion of its (non-NULL) decoded values to what pyarrow stores."""

    type: pa.DataType
    convert: Converter


# -- values ---------------------------------------------------------------------


def _same(value: Any) -> Any:
    return value


def _expect(kind: type, column: Column, arrow: pa.DataType) -> Converter:
    """Values of ``kind`` as they are; any other is a TypeError naming the column."""

    def convert(value: Any) -> Any:
        if not isinstance(value, kind):
            raise TypeError(
                f"column {column.display_name}: an Arrow {arrow} column takes {kind.__name__}, "
                f"not {type(value).__name__}"
            )
        return value

    return convert


def _decimal_text(value: Decimal) -> str:
    """MySQL's text of a DECIMAL: every digit of its scale, no exponent."""
    return format(value, "f")


_TEMPORAL_TEXT = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?)?")


def datetime_of(text: str, zone: tzinfo | None = None) -> datetime:
    """MySQL's ``YYYY-MM-DD[ hh:mm:ss[.f]]`` (1 to 6 fraction digits) as a datetime in ``zone``.

    Raises :class:`UnrepresentableValue` for a text ``datetime`` cannot hold: zero
    and partly-zero dates, year 0, a day its month has not, hours past 23.
    """
    if text[4:5] == "-" and text[10:11] in ("", " "):  # the forms binlog_codec.values writes
        try:  # ISO 8601's parser reads them, twenty times faster than the pattern below
            return datetime.fromisoformat(text).replace(tzinfo=zone)
        except ValueError:
            pass  # zero dates and the like: the pattern tells them apart
    match = _TEMPORAL_TEXT.fullmatch(text)
    if match is None:
        raise UnrepresentableValue(text)
    *fields, fraction = match.groups()
    year, month, day, hour, minute, second = (int(field or 0) for field in fields)
    try:
        return datetime(year, month, day, hour, minute, second, int((fraction or "").ljust(6, "0")), tzinfo=zone)
    except ValueError:
        raise UnrepresentableValue(text) from None


def _date(text: str) -> date:
    return datetime_of(text).date()


def _timestamp(text: str) -> datetime:
    """TIMESTAMP text is UTC (:func:`binlog_codec.values.timestamp_text`)."""
    return datetime_of(text, timezone.utc)


# -- types ----------------------------------------------------------------------

# (signed type, the type of the unsigned range, which also holds the signed one)
_INTEGERS = {
    ColumnType.TINY: (pa.int8(), pa.int16()),
    ColumnType.SHORT: (pa.int16(), pa.int32()),
    ColumnType.INT24: (pa.int32(), pa.int32()),
    ColumnType.LONG: (pa.int32(), pa.int64()),
    ColumnType.LONGLONG: (pa.int64(), UNSIGNED_BIGINT),
}


def _integer(column: Column) -> ArrowMapping:
    """Signed or unsigned as the table map says; the unsigned type when it does not say."""
    signed, unsigned = _INTEGERS[column.type_code]
    return ArrowMapping(signed if column.unsigned is False else unsigned, _same)


def _unsigned_bits(bits: int) -> ArrowMapping:
    """An unsigned integer of ``bits`` bits (BIT, ENUM index, SET mask): int64 up to 63, else decimal(20,0)."""
    return ArrowMapping(pa.int64() if bits < 64 else UNSIGNED_BIGINT, _same)


def _decimal(column: Column) -> ArrowMapping:
    precision, scale = column.precision or 0, column.scale or 0
    if precision > MAX_DECIMAL128_PRECISION:
        return ArrowMapping(pa.string(), _decimal_text)
    try:
        return ArrowMapping(pa.decimal128(precision, scale), _same)
    except ValueError as exc:
        raise ValueError(f"column {column.display_name}: DECIMAL({precision},{scale}): {exc}") from None


def _binary(column: Column) -> ArrowMapping:
    return ArrowMapping(pa.binary(), _expect(bytes, column, pa.binary()))


def _text(column: Column) -> ArrowMapping:
    return ArrowMapping(pa.string(), _expect(str, column, pa.string()))


def _character(column: Column, flavour: str) -> ArrowMapping:
    """Text in a recorded character set; bytes for the binary one and when none is recorded."""
    collation_id = column.collation_id
    if collation_id is None or charsets.collation(collation_id, flavour).codec is None:
        return _binary(column)
    return _text(column)


def _string(column: Column, flavour: str) -> ArrowMapping:
    """STRING holds CHAR/BINARY, ENUM and SET (told apart by the real type)."""
    if column.real_type not in table_map.ENUM_SET_TYPES:
        return _character(column, flavour)
    if table_map.labels(column, flavour) is None:
        return _unsigned_bits(8 * (column.length or 0))
    return _text(column)


def _fixed(arrow: pa.DataType, convert: Converter = _same) -> Callable[[Column, str], ArrowMapping]:
    """The builder of a type whose mapping does not depend on the column's metadata."""
    mapping = ArrowMapping(arrow, convert)
    return lambda column, flavour: mapping


_BUILDERS: dict[int, Callable[[Column, str], ArrowMapping]] = {
    **{code: lambda column, flavour: _integer(column) for code in _INTEGERS},
    ColumnType.NEWDECIMAL: lambda column, flavour: _decimal(column),
    ColumnType.FLOAT: _fixed(pa.float32()),
    ColumnType.DOUBLE: _fixed(pa.float64()),
    ColumnType.BIT: lambda column, flavour: _unsigned_bits(column.length or 0),
    ColumnType.YEAR: _fixed(pa.int16()),
    ColumnType.DATE: _fixed(pa.date32(), _date),
    ColumnType.NEWDATE: _fixed(pa.date32(), _date),
    ColumnType.DATETIME: _fixed(pa.timestamp("us"), datetime_of),
    ColumnType.DATETIME2: _fixed(pa.timestamp("us"), datetime_of),
    ColumnType.TIMESTAMP: _fixed(pa.timestamp("us", tz="UTC"), _timestamp),
    ColumnType.TIMESTAMP2: _fixed(pa.timestamp("us", tz="UTC"), _timestamp),
    ColumnType.TIME: _fixed(pa.string()),
    ColumnType.TIME2: _fixed(pa.string()),
    ColumnType.VARCHAR: _character,
    ColumnType.VAR_STRING: _character,
    ColumnType.BLOB: _character,
    ColumnType.STRING: _string,
    ColumnType.GEOMETRY: lambda column, flavour: _binary(column),
    ColumnType.JSON: _fixed(pa.string(), json_binary.to_text),
    ColumnType.VECTOR: _fixed(pa.list_(pa.float32())),
}


def column_mapping(column: Column, flavour: str = "mysql") -> ArrowMapping:
    """The Arrow type of ``column`` and the conversion of its values; see the module docstring.

    ``flavour`` ("mysql" or "mariadb") names the collation table of the server
    that wrote the table map. Raises ``ValueError`` for a column type no row
    image holds, a collation id the flavour does not define, or DECIMAL
    metadata no server writes.
    """
    builder = _BUILDERS.get(column.type_code)
    if builder is None:
        raise ValueError(f"column {column.display_name}: column type {column.type_code} has no Arrow type")
    return builder(column, flavour)


def arrow_type(column: Column, flavour: str = "mysql") -> pa.DataType:
    """The Arrow type of ``column`` (``docs/ARCHITECTURE.md``, "Type mapping")."""
    return column_mapping(column, flavour).type


def to_arrow(value: Any, column: Column, flavour: str = "mysql") -> Any:
    """``value``, as :mod:`binlog_codec.values` decodes it for ``column``, as the Python
    value pyarrow stores in :func:`arrow_type`; None (SQL NULL) stays None.

    Raises :class:`UnrepresentableValue` for a value the type cannot hold.
    A batch converts with :func:`column_mapping`, built once per column.
    """
    return None if value is None else column_mapping(column, flavour).convert(value)


# -- table versions -------------------------------------------------------------

# What a table map says about each column, in the order :func:`schema_id` hashes it.
_DEFINITION = (
    "type_code", "real_type", "nullable", "name", "length", "precision", "scale", "fsp", "pack_length",
    "unsigned", "collation_id", "enum_values", "set_values", "geometry_type", "visible", "vector_dimension",
)
SCHEMA_ID_LENGTH = 16


def schema_id(table: TableMap, flavour: str = "mysql") -> str:
    """A stable id of a table version: the first 16 hex digits of the SHA-256 of the table's
    definition as its table map gives it (see the module docstring), the table id left out."""
    definition = [
        flavour,
        table.database,
        table.table,
        table.metadata_level,
        [[getattr(column, name) for name in _DEFINITION] for column in table.columns],
        [list(part) for part in table.primary_key],
    ]
    text = json.dumps(definition, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:SCHEMA_ID_LENGTH]


_SCHEMA_COLUMN = pa.struct([
    pa.field("index", pa.int32(), nullable=False),
    pa.field("name", pa.string(), nullable=False),
    pa.field("sql_type", pa.string(), nullable=False),
    pa.field("arrow_type", pa.string(), nullable=False),
    pa.field("type_code", pa.int32(), nullable=False),
    pa.field("real_type", pa.int32(), nullable=False),
    pa.field("nullable", pa.bool_(), nullable=False),
    pa.field("unsigned", pa.bool_()),
    pa.field("charset", pa.string()),
    pa.field("collation", pa.string()),
    pa.field("collation_id", pa.int32()),
    pa.field("enum_values", pa.list_(pa.string())),
    pa.field("set_values", pa.list_(pa.string())),
    pa.field("geometry_type", pa.string()),
    pa.field("visible", pa.bool_()),
    pa.field("vector_dimension", pa.int32()),
    pa.field("primary_key_position", pa.int32()),
    pa.field("primary_key_prefix", pa.int32()),
])
_KEY_PART = pa.struct([pa.field("column", pa.string(), nullable=False), pa.field("prefix", pa.int32(), nullable=False)])


def _position_fields(which: str) -> list[pa.Field]:
    return [
        pa.field(f"{which}_file", pa.string()),
        pa.field(f"{which}_seq", pa.int64()),
        pa.field(f"{which}_pos", pa.int64()),
        pa.field(f"{which}_inner_offset", pa.int32()),
    ]


# One row per table version (the warehouse's ``metadata/table_schemas``). The
# ``first_*``/``last_*`` positions (the first and last row change seen of the
# version) and ``rows`` are filled in by the step that reads the rows.
TABLE_SCHEMA = pa.schema([
    pa.field("schema_id", pa.string(), nullable=False),
    pa.field("database", pa.string(), nullable=False),
    pa.field("table", pa.string(), nullable=False),
    pa.field("flavour", pa.string(), nullable=False),
    pa.field("metadata_level", pa.string(), nullable=False),
    pa.field("columns", pa.list_(_SCHEMA_COLUMN), nullable=False),
    pa.field("primary_key", pa.list_(_KEY_PART), nullable=False),
    *_position_fields("first"),
    *_position_fields("last"),
    pa.field("rows", pa.int64()),
    # The statement of the last schema change of the table logged before the version's first
    # row change, and where it starts (``file:pos``); None when the log read holds none.
    pa.field("ddl", pa.string()),
    pa.field("ddl_position", pa.string()),
    # The warehouse's runs (their ordinals, in publishing order) that saw the first and the last
    # row change: positions are compared within a run, runs by these.
    pa.field("first_run", pa.int64()),
    pa.field("last_run", pa.int64()),
])


def _schema_column(column: Column, flavour: str) -> dict[str, Any]:
    """:func:`~binlog_codec.table_map.column_description`, named as the row images name the column,
    with its Arrow type and primary-key role."""
    geometry = column.geometry_type
    return {
        **table_map.column_description(column, flavour),
        "name": column.display_name,
        "arrow_type": str(arrow_type(column, flavour)),
        "geometry_type": None if geometry is None else table_map.GEOMETRY_TYPES.get(geometry, str(geometry)),
        "primary_key_position": column.primary_key_position,
        "primary_key_prefix": column.primary_key_prefix,
    }


def table_schema_row(table: TableMap, flavour: str = "mysql") -> dict[str, Any]:
    """The :data:`TABLE_SCHEMA` row of a table version, without its positions and row count.

    Raises ``ValueError`` as :func:`~binlog_codec.table_map.sql_type` and
    :func:`column_mapping` do.
    """
    columns = table.columns
    return {
        "schema_id": schema_id(table, flavour),
        "database": table.database,
        "table": table.table,
        "flavour": flavour,
        "metadata_level": table.metadata_level,
        "columns": [_schema_column(column, flavour) for column in columns],
        "primary_key": [{"column": columns[index].display_name, "prefix": prefix} for index, prefix in table.primary_key],
    }


# -- batches --------------------------------------------------------------------


def _change_fields(before: pa.StructType) -> list[pa.Field]:
    """The warehouse contract's columns after the image's, in its order."""
    return [
        pa.field("_op", pa.string(), nullable=False),
        pa.field("_binlog_file", pa.string(), nullable=False),
        pa.field("_binlog_seq", pa.int64()),
        pa.field("_binlog_pos", pa.int64(), nullable=False),
        pa.field("_binlog_inner_offset", pa.int32()),
        pa.field("_row_index", pa.int32(), nullable=False),
        pa.field("_gtid", pa.string()),
        pa.field("_server_id", pa.int64()),
        pa.field("_xid", UNSIGNED_BIGINT),
        pa.field("_commit_ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("_schema_id", pa.string(), nullable=False),
        pa.field("_before", before),
        pa.field("_present_columns", pa.list_(pa.string()), nullable=False),
        pa.field("_partial_columns", pa.list_(pa.string()), nullable=False),
        pa.field("_partial_diffs", pa.map_(pa.string(), pa.binary()), nullable=False),
        pa.field("_unrepresentable", pa.map_(pa.string(), pa.string()), nullable=False),
    ]


# The names of the warehouse contract's change columns, in order (those after the image's).
CHANGE_COLUMNS = tuple(field.name for field in _change_fields(pa.struct([])))


def image_schema(table: TableMap, flavour: str = "mysql") -> pa.Schema:
    """The Arrow schema of the row changes of one table version: its columns, by
    display name and nullable (an image may not carry them), then the change columns.

    Raises ``ValueError`` as :func:`column_mapping` does, and for a column named
    like one of the change columns.
    """
    image = [pa.field(column.display_name, arrow_type(column, flavour)) for column in table.columns]
    change = _change_fields(pa.struct(image))
    clashes = {field.name for field in image} & {field.name for field in change}
    if clashes:
        raise ValueError(f"table {table.database}.{table.table}: columns {sorted(clashes)} clash with change columns")
    return pa.schema(image + change)


_SEQUENCE = re.compile(r"\.(\d+)\Z")


def binlog_seq(file: str) -> int | None:
    """The numeric suffix of a binlog file's name (``mysql-bin.000042``: 42); None when it has none."""
    match = _SEQUENCE.search(PurePath(file).name)
    return None if match is None else int(match.group(1))


class Commit(NamedTuple):
    """The event that commits a row change's transaction (the XID event, or the COMMIT query):
    its header's timestamp (seconds) and server id, and the XID when it has one."""

    timestamp: int
    server_id: int | None = None
    xid: int | None = None


class ImageBatchBuilder:
    """Row changes of one table version (one :class:`TableMap`) into one Arrow record batch.

    ``append`` each :class:`~binlog_codec.rows.RowRecord` of the table, in log
    order; ``build`` returns the batch of :func:`image_schema` (see the module
    docstring for its columns). Rows are kept as tuples in the schema's column
    order (tuples of strings and numbers, which the cyclic garbage collector
    stops tracking, so that a large batch does not slow its passes down), with
    the decoded values as they are; ``build`` converts the values
    of each column to what pyarrow stores (one pass per column, not one call
    per value) and turns each column into one Arrow array. A value its type
    cannot hold is null and its text goes to ``_unrepresentable``.
    """

    def __init__(self, table: TableMap, flavour: str = "mysql") -> None:
        self.table = table
        self.schema = image_schema(table, flavour)
        self.schema_id = schema_id(table, flavour)
        self._names = [column.display_name for column in table.columns]
        self._positions = {name: index for index, name in enumerate(self._names)}
        self._conversions = [column_mapping(column, flavour).convert for column in table.columns]
        # the image columns whose values need converting: (place in a row, conversion)
        self._converted = [(i, convert) for i, convert in enumerate(self._conversions) if convert is not _same]
        width = len(self._names)
        self._before_at = width + CHANGE_COLUMNS.index("_before")
        self._present_at = width + CHANGE_COLUMNS.index("_present_columns")
        self._partial_at = width + CHANGE_COLUMNS.index("_partial_columns")
        self._unrepresentable_at = width + CHANGE_COLUMNS.index("_unrepresentable")
        self._rows: list[tuple[Any, ...]] = []
        self._file: tuple[str, str, int | None] = ("", "", None)  # the last file seen: path, name, sequence
        self._commit_time: tuple[int | None, datetime | None] = (None, None)  # the last one made: seconds, time

    def __len__(self) -> int:
        return len(self._rows)

    def append(self, record: RowRecord, commit: Commit | None = None) -> None:
        """Add one row change, with the :class:`Commit` of its transaction when known; raises
        ``ValueError`` for a record of another table or with a column the table has not."""
        if record.database != self.table.database or record.table != self.table.table:
            raise ValueError(
                f"row of {record.database}.{record.table} for a batch of {self.table.database}.{self.table.table}"
            )
        change = record.change
        after = change.after or {}
        self._check_names(after)
        if change.before is not None:
            self._check_names(change.before)
        row: list[Any] = list(map(after.get, self._names))  # absent columns are None
        for name in change.partial:  # a diff is no value of its column
            row[self._positions[name]] = None
        if record.file != self._file[0]:
            self._file = (record.file, PurePath(record.file).name, binlog_seq(record.file))
        row += (  # the change columns, in _change_fields' order
            OPERATIONS[record.kind],
            self._file[1],
            self._file[2],
            record.pos,
            record.inner_offset,
            record.row_index,
            record.gtid,
            None if commit is None else commit.server_id,
            None if commit is None or commit.xid is None else Decimal(commit.xid),
            self._commit_datetime(record.timestamp if commit is None else commit.timestamp),
            self.schema_id,
            change.before,  # converted by build
            tuple(after),
            tuple(change.partial),
            tuple((name, after[name]) for name in change.partial),
            None,  # _unrepresentable: found by build
        )
        self._rows.append(tuple(row))

    def _check_names(self, image: dict[str, Any]) -> None:
        if not image.keys() <= self._positions.keys():
            stranger = next(name for name in image if name not in self._positions)
            raise ValueError(f"column {stranger} is not a column of {self.table.database}.{self.table.table}")

    def _commit_datetime(self, seconds: int) -> datetime:
        """The UTC time of ``seconds``; the rows of a transaction share it, so the last one is kept."""
        if self._commit_time[0] != seconds:
            self._commit_time = (seconds, datetime.fromtimestamp(seconds, timezone.utc))
        return self._commit_time[1]

    def build(self) -> pa.RecordBatch:
        """The batch of every row appended so far."""
        columns = [list(values) for values in zip(*self._rows)] if self._rows else [[] for _ in self.schema]
        if self._rows:
            self._convert(columns)
        arrays = [pa.array(values, type=field.type) for values, field in zip(columns, self.schema)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _convert(self, columns: list[list[Any]]) -> None:
        """The decoded values of ``columns`` (the rows, by column) as pyarrow stores them, in place:
        the after-image a column at a time, or a row at a time when some value is unrepresentable;
        then each before-image; then what could not be represented, per row."""
        unrepresentable: list[dict[str, str]] = [{} for _ in self._rows]
        try:
            for index, convert in self._converted:
                columns[index] = [None if value is None else convert(value) for value in columns[index]]
        except UnrepresentableValue:
            for number, found in enumerate(unrepresentable):
                self._convert_after(number, columns, found)
        columns[self._before_at] = [
            None if before is None else self._image(before, BEFORE_PREFIX, found)
            for before, found in zip(columns[self._before_at], unrepresentable)
        ]
        columns[self._unrepresentable_at] = [list(found.items()) for found in unrepresentable]

    def _convert_after(self, number: int, columns: list[list[Any]], unrepresentable: dict[str, str]) -> None:
        """Row ``number``'s after-image values into ``columns``, in the image's order, the text of
        those their type cannot hold into ``unrepresentable``."""
        row = self._rows[number]
        partial = row[self._partial_at]
        for name in row[self._present_at]:
            if name not in partial:
                index = self._positions[name]
                columns[index][number] = self._value(name, row[index], "", unrepresentable)

    def _value(self, name: str, value: Any, prefix: str, unrepresentable: dict[str, str]) -> Any:
        """``value`` of column ``name`` as pyarrow stores it; the text of a value its type cannot
        hold goes into ``unrepresentable`` and the value is None."""
        if value is None:
            return None
        try:
            return self._conversions[self._positions[name]](value)
        except UnrepresentableValue as exc:
            unrepresentable[prefix + name] = exc.text
            return None

    def _image(self, values: dict[str, Any], prefix: str, unrepresentable: dict[str, str]) -> dict[str, Any]:
        """An image's values as pyarrow stores them; the text of those it cannot hold into ``unrepresentable``."""
        return {name: self._value(name, value, prefix, unrepresentable) for name, value in values.items()}

    def flush(self) -> pa.RecordBatch:
        """The batch of the rows appended since the last flush; the builder starts empty again."""
        batch = self.build()
        self._rows = []
        return batch
