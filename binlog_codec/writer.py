"""The encoder: binlog events and files, byte for byte as a server writes them.

Used to build synthetic binlogs (:mod:`binlog_codec.corpus`) and to prove the
reader exact: re-encoding a real event from its decoded header and body gives
back the original bytes (``tests/binlog_codec/test_writer.py``). Each encoder is
the inverse of the decoder named in its docstring; the layouts are the ones
:mod:`binlog_codec.reader`, :mod:`binlog_codec.events` and
:mod:`binlog_codec.rows` document:

* framing: the common header, CRC32 (:func:`encode_event`), the FDE body;
* TABLE_MAP_EVENT: the fixed part, the per-column metadata block and the
  optional metadata fields of WL#4618 (I2), in the order and the form a MySQL
  server writes them (``Table_map_log_event::init_metadata_fields``);
* rows events v1 and v2 and PARTIAL_UPDATE_ROWS_EVENT, whose update rows carry
  the shared-image of WL#2955 (F2) and, per JSON column, either a diff vector
  (F3) or the full document, whichever is smaller ("Def1 < Def2", FR11/FR12);
* GTID (MySQL 8 logical clock and commit timestamps), QUERY, XID and
  TRANSACTION_PAYLOAD (zstd as a server compresses it);
* :class:`BinlogWriter`, which lays events end to end with positions filled in,
  in memory or streamed to a file.
"""

from __future__ import annotations

import logging
import uuid
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from . import json_binary
from .event_types import ROWS_V1_TYPES, EventFlag, EventType
from .events.statement import OVER_MAX_DBS_IN_EVENT_MTS
from .events.gtid import COMMIT_TS_ORIGINAL_FOLLOWS, LOGICAL_TIMESTAMP_TYPECODE, SERVER_VERSION_ORIGINAL_FOLLOWS
from .payload import COMPRESSION_NONE, COMPRESSION_TYPE_FIELD, COMPRESSION_ZSTD, HEADER_END_MARK
from .payload import PAYLOAD_SIZE_FIELD, UNCOMPRESSED_SIZE_FIELD
from .reader import CHECKSUM_CRC32, HEADER_V4, MAGIC, EventHeader, fde_checksum_input
from .rows import PARTIAL_JSON, RowChange
from .table_map import (
    Column,
    ColumnType,
    OptionalField,
    TableMap,
    _is_character,
    _is_enum_or_set,
    _is_numeric,
)
from .value_encoder import encode_row_image
from .wire import pack_int

log = logging.getLogger(__name__)

# Post-header lengths a MySQL 8.0 server announces, for type codes 1..42.
MYSQL_8_POST_HEADERS = bytes(
    (0, 13, 0, 8, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 98, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0, 10, 10, 10,
     42, 42, 0, 18, 52, 0, 10, 40, 0, 42)
)
# Rows-event flags (``rows_event.h``): the last rows event of a statement.
STMT_END_F = 1
# Table-map flags: MySQL sets TM_BIT_LEN_EXACT_F on every table map.
TM_BIT_LEN_EXACT_F = 1
# The zstd level of ``binlog_transaction_compression_level_zstd`` (default 3).
ZSTD_DEFAULT_LEVEL = 3


# -- framing -------------------------------------------------------------------


def encode_header(header: EventHeader) -> bytes:
    return HEADER_V4.pack(
        header.timestamp, header.type_code, header.server_id, header.event_size, header.log_pos, header.flags
    )


def encode_event(header: EventHeader, body: bytes, *, checksum: bool) -> bytes:
    """Header, body and (when ``checksum``) the CRC32, with ``event_size`` as the header says."""
    head = encode_header(header)
    if not checksum:
        return head + body
    if header.type_code == EventType.FORMAT_DESCRIPTION:
        crc = zlib.crc32(fde_checksum_input(head, body))
    else:
        crc = zlib.crc32(body, zlib.crc32(head))
    return head + body + crc.to_bytes(4, "little")


def format_description_body(
    server_version: str,
    *,
    checksum_alg: int | None = CHECKSUM_CRC32,
    create_timestamp: int = 0,
    post_header_lengths: bytes = MYSQL_8_POST_HEADERS,
) -> bytes:
    """An FDE body; with ``checksum_alg`` it ends with the algorithm byte (the CRC is added by :func:`encode_event`)."""
    body = (
        (4).to_bytes(2, "little")
        + server_version.encode("ascii").ljust(50, b"\0")
        + create_timestamp.to_bytes(4, "little")
        + bytes((HEADER_V4.size,))
        + post_header_lengths
    )
    if checksum_alg is not None:
        body += bytes((checksum_alg,))
    return body


# -- TABLE_MAP_EVENT --------------------------------------------------------------


def _counted_name(name: str) -> bytes:
    """``length 1 | name | NUL``, as the table map stores the database and table names."""
    raw = name.encode("utf-8", "surrogateescape")
    return bytes((len(raw),)) + raw + b"\0"


def table_map_body(
    table_id: int,
    flags: int,
    database: str,
    table: str,
    column_types: Sequence[int],
    metadata: bytes,
    null_bitmap: bytes,
    optional_metadata: bytes = b"",
    *,
    table_id_size: int = 6,
) -> bytes:
    """A TABLE_MAP_EVENT body from its parts (inverse of ``events.rows_header._table_map``)::

        table_id 6 (4 under a 6-byte post-header) | flags 2 | db_len 1 | db | NUL | table_len 1 | table | NUL |
        column_count packed | column_types | metadata_len packed | metadata | null_bitmap | optional metadata
    """
    return (
        table_id.to_bytes(table_id_size, "little")
        + flags.to_bytes(2, "little")
        + _counted_name(database)
        + _counted_name(table)
        + pack_int(len(column_types))
        + bytes(column_types)
        + pack_int(len(metadata))
        + metadata
        + null_bitmap
        + optional_metadata
    )


def _string_metadata(column: Column) -> bytes:
    """CHAR/BINARY/ENUM/SET: ``real_type 1 | length 1``; lengths above 255 fold their bits 8-9,
    inverted, into bits 4-5 of the type byte (``Field_string::save_field_metadata``)."""
    length = column.length or 0
    first = (column.real_type & ~0x30) | (((length >> 8) << 4) ^ 0x30)
    return bytes((first, length & 0xFF))


def _column_metadata(column: Column) -> bytes:
    """One column's part of the metadata block (``save_field_metadata`` of its type)."""
    kind = column.type_code
    if kind in (ColumnType.STRING, ColumnType.ENUM, ColumnType.SET):
        return _string_metadata(column)
    if kind in (ColumnType.VARCHAR, ColumnType.VAR_STRING):
        return (column.length or 0).to_bytes(2, "little")
    if kind == ColumnType.BIT:
        length = column.length or 0
        return bytes((length % 8, length // 8))
    if kind == ColumnType.NEWDECIMAL:
        return bytes((column.precision or 0, column.scale or 0))
    if kind in (ColumnType.TIMESTAMP2, ColumnType.DATETIME2, ColumnType.TIME2):
        return bytes((column.fsp or 0,))
    if kind in _PACK_LENGTH_TYPES:
        return bytes((column.pack_length or 0,))
    return b""


_PACK_LENGTH_TYPES = frozenset(
    {
        ColumnType.FLOAT,
        ColumnType.DOUBLE,
        ColumnType.BLOB,
        ColumnType.TINY_BLOB,
        ColumnType.MEDIUM_BLOB,
        ColumnType.LONG_BLOB,
        ColumnType.GEOMETRY,
        ColumnType.JSON,
        ColumnType.VECTOR,
    }
)


def column_metadata(columns: Sequence[Column]) -> bytes:
    """The table map's metadata block (inverse of ``table_map._columns``)."""
    return b"".join(_column_metadata(column) for column in columns)


def _bits_lsb_first(flags: Sequence[bool]) -> bytes:
    """Bit i of byte i / 8 for the i-th flag: null bitmaps, column bitmaps, partial_columns."""
    out = bytearray((len(flags) + 7) // 8)
    for index, flag in enumerate(flags):
        if flag:
            out[index // 8] |= 1 << (index % 8)
    return bytes(out)


def _bits_msb_first(flags: Sequence[bool]) -> bytes:
    """Bit 7 - i % 8 of byte i / 8 for the i-th flag: SIGNEDNESS and COLUMN_VISIBILITY (WL#4618 I2)."""
    out = bytearray((len(flags) + 7) // 8)
    for index, flag in enumerate(flags):
        if flag:
            out[index // 8] |= 0x80 >> (index % 8)
    return bytes(out)


def _tlv(kind: int, value: bytes) -> bytes:
    """One optional metadata field (WL#4618 I2): ``type 1 | length packed | value``."""
    return bytes((kind,)) + pack_int(len(value)) + value


def _packed_list(values: Iterable[int]) -> bytes:
    return b"".join(pack_int(value) for value in values)


def _counted_text(text: str) -> bytes:
    raw = text.encode("utf-8", "surrogateescape")
    return pack_int(len(raw)) + raw


def _charset_columns(columns: Sequence[Column]) -> list[tuple[Column, int | None]]:
    """The columns DEFAULT_CHARSET / COLUMN_CHARSET cover (VECTOR among them: a binary string
    in MySQL 9.0) and their collations."""
    return [(column, column.collation_id) for column in columns if _is_character(column)]


def _charset_field(collations: Sequence[int | None], default_kind: int, per_column_kind: int) -> bytes:
    """DEFAULT_CHARSET (``default | (index | collation)...`` for the columns that differ, indexes
    counted among the covered columns) or COLUMN_CHARSET (one collation per column), whichever the
    server picks: ``init_charset_field`` takes the most used collation (the lowest id among equals)
    as the default and logs the per-column list only when it is shorter, counting one byte per number."""
    if not collations or None in collations:
        return b""
    counts: dict[int, int] = {}
    for collation in collations:
        counts[collation] = counts.get(collation, 0) + 1
    default = max(sorted(counts), key=lambda collation: counts[collation])
    if len(collations) < 1 + (len(collations) - counts[default]) * 2:
        return _tlv(per_column_kind, _packed_list(collations))
    overrides = [(index, collation) for index, collation in enumerate(collations) if collation != default]
    return _tlv(default_kind, pack_int(default) + b"".join(pack_int(i) + pack_int(c) for i, c in overrides))


def _per_column_field(kind: int, columns: Sequence[Column], attribute: str, encode) -> bytes:
    """A field holding one value per column, when the table map records that value for every one."""
    values = [getattr(column, attribute) for column in columns]
    if not values or None in values:
        return b""
    return _tlv(kind, encode(values))


def _labels(values: list[list[str]]) -> bytes:
    return b"".join(pack_int(len(labels)) + b"".join(_counted_text(label) for label in labels) for labels in values)


def _primary_key_field(table: TableMap) -> bytes:
    """SIMPLE_PRIMARY_KEY (column indexes) or, when a key part is a prefix, PRIMARY_KEY_WITH_PREFIX (pairs)."""
    if not table.primary_key:
        return b""
    if all(prefix == 0 for _, prefix in table.primary_key):
        return _tlv(OptionalField.SIMPLE_PRIMARY_KEY, _packed_list(index for index, _ in table.primary_key))
    pairs = (number for pair in table.primary_key for number in pair)
    return _tlv(OptionalField.PRIMARY_KEY_WITH_PREFIX, _packed_list(pairs))


def optional_metadata(table: TableMap) -> bytes:
    """The optional metadata fields of WL#4618 (I2) for ``table``, in the order a MySQL server
    writes them (``Table_map_log_event::init_metadata_fields``): SIGNEDNESS, DEFAULT_CHARSET or
    COLUMN_CHARSET, GEOMETRY_TYPE, VECTOR_DIMENSIONALITY (MySQL 9.0), then with
    ``binlog_row_metadata=FULL`` COLUMN_NAME, ENUM_AND_SET_DEFAULT_CHARSET or
    ENUM_AND_SET_COLUMN_CHARSET, SET_STR_VALUE, ENUM_STR_VALUE, the primary key and COLUMN_VISIBILITY.

    A field is written when the table records its values (as :func:`binlog_codec.table_map.table_map`
    decodes them: ``unsigned``, ``collation_id``, ``name``... not None) and has columns it covers;
    a table whose ``metadata_level`` is NONE gets none.
    """
    if table.metadata_level == "NONE":
        return b""
    columns = table.columns
    of_type = lambda *types: [c for c in columns if c.real_type in types]  # noqa: E731
    fields = [
        _per_column_field(OptionalField.SIGNEDNESS, [c for c in columns if _is_numeric(c)], "unsigned", _bits_msb_first),
        _charset_field([collation for _, collation in _charset_columns(columns)],
                       OptionalField.DEFAULT_CHARSET, OptionalField.COLUMN_CHARSET),
        _per_column_field(OptionalField.GEOMETRY_TYPE, [c for c in columns if c.type_code == ColumnType.GEOMETRY],
                          "geometry_type", _packed_list),
        _per_column_field(OptionalField.VECTOR_DIMENSIONALITY, [c for c in columns if c.type_code == ColumnType.VECTOR],
                          "vector_dimension", _packed_list),
    ]
    if table.metadata_level == "FULL":
        fields += [
            _per_column_field(OptionalField.COLUMN_NAME, columns, "name", lambda names: b"".join(map(_counted_text, names))),
            _charset_field([c.collation_id for c in columns if _is_enum_or_set(c)],
                           OptionalField.ENUM_AND_SET_DEFAULT_CHARSET, OptionalField.ENUM_AND_SET_COLUMN_CHARSET),
            _per_column_field(OptionalField.SET_STR_VALUE, of_type(ColumnType.SET), "set_values", _labels),
            _per_column_field(OptionalField.ENUM_STR_VALUE, of_type(ColumnType.ENUM), "enum_values", _labels),
            _primary_key_field(table),
            _per_column_field(OptionalField.COLUMN_VISIBILITY, columns, "visible", _bits_msb_first),
        ]
    return b"".join(fields)


def table_map_event_body(table: TableMap, *, flags: int = TM_BIT_LEN_EXACT_F, table_id_size: int = 6) -> bytes:
    """The TABLE_MAP_EVENT body of a :class:`TableMap` (inverse of :func:`binlog_codec.table_map.table_map`)."""
    columns = table.columns
    return table_map_body(
        table.table_id,
        flags,
        table.database,
        table.table,
        [column.type_code for column in columns],
        column_metadata(columns),
        _bits_lsb_first([column.nullable for column in columns]),
        optional_metadata(table),
        table_id_size=table_id_size,
    )


# -- rows events ------------------------------------------------------------------


def rows_body(
    type_code: int,
    table_id: int,
    flags: int,
    column_count: int,
    columns_before: bytes,
    columns_after: bytes | None,
    rows: bytes,
    *,
    extra_data: bytes = b"",
    table_id_size: int = 6,
) -> bytes:
    """A rows event body from its parts (inverse of ``events.rows_header._rows``)::

        table_id 6 | flags 2 [| extra_data_len 2 | extra_data]   (v2 and PARTIAL_UPDATE_ROWS only)
        | column_count packed | columns_before_image [| columns_after_image] | rows
    """
    head = table_id.to_bytes(table_id_size, "little") + flags.to_bytes(2, "little")
    if type_code not in ROWS_V1_TYPES:
        head += (len(extra_data) + 2).to_bytes(2, "little") + extra_data
    bitmaps = columns_before + (columns_after if columns_after is not None else b"")
    return head + pack_int(column_count) + bitmaps + rows


def column_bitmap(present: Sequence[int], column_count: int) -> bytes:
    """An image's column bitmap (WL#5092): bit i set when column i is in the image."""
    wanted = set(present)
    return _bits_lsb_first([index in wanted for index in range(column_count)])


def present_columns(bitmap: bytes, column_count: int) -> list[int]:
    """The columns set in a column bitmap, in order."""
    return [index for index in range(column_count) if bitmap[index // 8] >> (index % 8) & 1]


@dataclass(frozen=True)
class JsonUpdate:
    """The new value of a JSON column in an update a server may log partially (WL#2955): the full
    ``document`` and the ``diffs`` (:class:`binlog_codec.json_diff.JsonDiff`) that turn the old
    document into it."""

    document: Any
    diffs: Sequence[Any]


def choose_json_format(update: JsonUpdate, pack_length: int = 4) -> bytes | None:
    """WL#2955 section 2 rule 6 and FR11/FR12 ("Def1 < Def2"): the diff vector ``length | diffs``
    when it is smaller than the full value ``length | document``, else None (log the document)."""
    from .json_diff import encode_diffs

    diffs = encode_diffs(update.diffs)
    full = json_binary.serialize(update.document)
    return diffs if pack_length + len(diffs) < pack_length + len(full) else None


def _shared_image(json_columns: Sequence[int], partial: set[int]) -> bytes:
    """WL#2955 F2: ``value_options packed`` and, when some column is partial, ``partial_columns``
    (one bit per JSON column of the table). value_options is PARTIAL_JSON only when at least one
    column is logged as a diff (``pack_row``: ``has_any_json_diff``)."""
    if not partial:
        return pack_int(0)
    return pack_int(PARTIAL_JSON) + _bits_lsb_first([index in partial for index in json_columns])


def _after_image_values(
    table: TableMap, after: Mapping[str, Any], partial_update: bool
) -> tuple[dict[str, Any], set[int]]:
    """Resolve the :class:`JsonUpdate` values of an after-image into a diff vector (only in a
    PARTIAL_UPDATE_ROWS event) or the document."""
    values, partial = {}, set()
    for index, column in enumerate(table.columns):
        name = column.display_name
        if name not in after:
            continue
        value = after[name]
        if isinstance(value, JsonUpdate):
            diffs = choose_json_format(value, column.pack_length or 4) if partial_update else None
            if diffs is None:
                value = value.document
            else:
                value = diffs
                partial.add(index)
        values[name] = value
    return values, partial


def rows_data(
    table: TableMap,
    changes: Iterable[RowChange],
    columns_before: bytes,
    columns_after: bytes | None = None,
    *,
    partial_update: bool = False,
    unused_null_bits: int = 0,
    flavour: str = "mysql",
) -> bytes:
    """The rows part of a rows event (inverse of :func:`binlog_codec.rows.decode_rows`): per row the
    before-image (update, delete), for PARTIAL_UPDATE_ROWS the shared-image, then the after-image
    (insert, update). An after value may be a :class:`JsonUpdate` (logged as a diff or in full by
    the Def1 < Def2 rule) or, for the columns named in ``change.partial``, an encoded diff vector.
    ``unused_null_bits`` is 0 for MySQL 8.0 and later, 1 for MySQL 5.x and MariaDB.
    """
    count = len(table.columns)
    before = present_columns(columns_before, count)
    after = present_columns(columns_after, count) if columns_after is not None else before
    json_columns = [c.index for c in table.columns if c.type_code == ColumnType.JSON]
    out = bytearray()
    image = lambda values, present, partial=frozenset(): encode_row_image(  # noqa: E731
        table, values, present, flavour=flavour, partial=partial, unused_null_bits=unused_null_bits
    )
    for change in changes:
        if change.before is not None:
            out += image(change.before, before)
        if change.after is None:
            continue
        values, partial = _after_image_values(table, change.after, partial_update)
        partial |= {i for i in json_columns if table.columns[i].display_name in change.partial}
        if partial_update:
            out += _shared_image(json_columns, partial)
        out += image(values, after, partial)
    return bytes(out)


_ROWS_TYPES = {
    (2, "insert"): EventType.WRITE_ROWS,
    (2, "update"): EventType.UPDATE_ROWS,
    (2, "delete"): EventType.DELETE_ROWS,
    (1, "insert"): EventType.WRITE_ROWS_V1,
    (1, "update"): EventType.UPDATE_ROWS_V1,
    (1, "delete"): EventType.DELETE_ROWS_V1,
}


def rows_event_type(kind: str, *, version: int = 2, partial_json: bool = False) -> int:
    """The type code of a rows event: v1 (23-25), v2 (30-32), or PARTIAL_UPDATE_ROWS (39) for
    updates under ``binlog_row_value_options=PARTIAL_JSON`` (v2 only, WL#2955 F1)."""
    if partial_json and kind == "update" and version == 2:
        return EventType.PARTIAL_UPDATE_ROWS
    return _ROWS_TYPES[(version, kind)]


def rows_event_body_for(
    table: TableMap,
    kind: str,
    changes: Sequence[RowChange],
    *,
    before: Sequence[int] | None = None,
    after: Sequence[int] | None = None,
    version: int = 2,
    partial_json: bool = False,
    flags: int = STMT_END_F,
    table_id_size: int = 6,
) -> tuple[int, bytes]:
    """A rows event of ``table`` holding ``changes`` (all of ``kind``): its type code and body.

    ``before`` and ``after`` are the columns of each image (all columns by default: FULL); an
    insert has only an after-image, a delete only a before-image.
    """
    count = len(table.columns)
    everything = range(count)
    type_code = rows_event_type(kind, version=version, partial_json=partial_json)
    first = after if kind == "insert" else before
    columns_first = column_bitmap(everything if first is None else first, count)
    columns_after = column_bitmap(everything if after is None else after, count) if kind == "update" else None
    data = rows_data(
        table, changes, columns_first, columns_after, partial_update=type_code == EventType.PARTIAL_UPDATE_ROWS
    )
    body = rows_body(type_code, table.table_id, flags, count, columns_first, columns_after, data, table_id_size=table_id_size)
    return type_code, body


# -- transaction events -----------------------------------------------------------------


@dataclass(frozen=True)
class Gtid:
    """The fields of a MySQL GTID_LOG_EVENT / ANONYMOUS_GTID_LOG_EVENT body (``control_events.h``)."""

    sid: str = "00000000-0000-0000-0000-000000000000"
    gno: int = 0
    flags: int = 1
    last_committed: int | None = 0
    sequence_number: int | None = 1
    immediate_commit_timestamp: int | None = None
    original_commit_timestamp: int | None = None
    transaction_length: int | None = None
    immediate_server_version: int | None = None
    original_server_version: int | None = None
    commit_group_ticket: int | None = None


def _with_original(immediate: int, original: int | None, follows: int, size: int) -> bytes:
    """``immediate`` with the "original follows" bit and the original value when they differ."""
    if original is None or original == immediate:
        return immediate.to_bytes(size, "little")
    return (immediate | follows).to_bytes(size, "little") + original.to_bytes(size, "little")


def gtid_body(gtid: Gtid) -> bytes:
    """A GTID (33) / ANONYMOUS_GTID (34) body (inverse of ``events.gtid._gtid``)::

        flags 1 | sid 16 | gno 8 [| lt_type 1 (=2) | last_committed 8 | sequence_number 8]   5.7+
        [| immediate_commit_timestamp 7 (bit 55: original follows) [| original 7]]            8.0.1+
        [| transaction_length packed] [| immediate_server_version 4 (bit 31) [| original 4]]  8.0.2+, 8.0.14+
        [| commit_group_ticket 8]                                                              8.0.33+
    """
    body = bytes((gtid.flags,)) + uuid.UUID(gtid.sid).bytes + gtid.gno.to_bytes(8, "little")
    if gtid.last_committed is None:
        return body
    body += bytes((LOGICAL_TIMESTAMP_TYPECODE,))
    body += gtid.last_committed.to_bytes(8, "little") + gtid.sequence_number.to_bytes(8, "little")
    if gtid.immediate_commit_timestamp is not None:
        body += _with_original(gtid.immediate_commit_timestamp, gtid.original_commit_timestamp, COMMIT_TS_ORIGINAL_FOLLOWS, 7)
    if gtid.transaction_length is not None:
        body += pack_int(gtid.transaction_length)
    if gtid.immediate_server_version is not None:
        body += _with_original(
            gtid.immediate_server_version, gtid.original_server_version, SERVER_VERSION_ORIGINAL_FOLLOWS, 4
        )
    if gtid.commit_group_ticket is not None:
        body += gtid.commit_group_ticket.to_bytes(8, "little")
    return body


def _status_catalog(text: str) -> bytes:
    return bytes((len(text),)) + text.encode()


def _status_text(text: str) -> bytes:
    raw = text.encode("utf-8")
    return bytes((len(raw),)) + raw


def _updated_db_names(names: list[str] | None) -> bytes:
    """``count 1 | (name NUL)...``; None is the count 254 (OVER_MAX_DBS_IN_EVENT_MTS) with no names."""
    if names is None:
        return bytes((OVER_MAX_DBS_IN_EVENT_MTS,))
    return bytes((len(names),)) + b"".join(name.encode("utf-8") + b"\0" for name in names)


# Status variables (``Q_*`` of ``statement_events.h``) a MySQL 5.7/8.0 server writes: name ->
# (code, encoder). ``catalog`` is the 5.0.4+ Q_CATALOG_NZ_CODE form.
_STATUS_VAR_ENCODERS = {
    "flags2": (0, lambda v: v.to_bytes(4, "little")),
    "sql_mode": (1, lambda v: v.to_bytes(8, "little")),
    "catalog": (6, _status_catalog),
    "auto_increment": (3, lambda v: v["increment"].to_bytes(2, "little") + v["offset"].to_bytes(2, "little")),
    "charset": (4, lambda v: b"".join(
        v[key].to_bytes(2, "little") for key in ("character_set_client", "collation_connection", "collation_server")
    )),
    "time_zone": (5, _status_text),
    "lc_time_names": (7, lambda v: v.to_bytes(2, "little")),
    "charset_database": (8, lambda v: v.to_bytes(2, "little")),
    "table_map_for_update": (9, lambda v: v.to_bytes(8, "little")),
    "invoker": (11, lambda v: _status_text(v["user"]) + _status_text(v["host"])),
    "updated_db_names": (12, _updated_db_names),
    "microseconds": (13, lambda v: v.to_bytes(3, "little")),
    "ddl_xid": (17, lambda v: v.to_bytes(8, "little")),
    "default_collation_for_utf8mb4": (18, lambda v: v.to_bytes(2, "little")),
    "sql_require_primary_key": (19, lambda v: bytes((v,))),
    "default_table_encryption": (20, lambda v: bytes((v,))),
}

# The status variables of a MySQL 8.0 ``BEGIN`` (default session settings, utf8mb4 client).
MYSQL_8_STATUS_VARS: dict[str, Any] = {
    "flags2": 0,
    "sql_mode": 1168113696,
    "catalog": "std",
    "charset": {"character_set_client": 255, "collation_connection": 255, "collation_server": 255},
    "default_collation_for_utf8mb4": 255,
}


def status_vars_block(status_vars: Mapping[str, Any]) -> bytes:
    """A QUERY status-variable block, in the mapping's order (inverse of ``parse_status_vars``
    for the variables of MySQL 5.7 and 8.0)."""
    out = bytearray()
    for name, value in status_vars.items():
        code, encode = _STATUS_VAR_ENCODERS[name]
        out += bytes((code,)) + encode(value)
    return bytes(out)


def query_body(
    query: str,
    *,
    database: str = "",
    status_vars: Mapping[str, Any] = MYSQL_8_STATUS_VARS,
    thread_id: int = 0,
    exec_time: int = 0,
    error_code: int = 0,
) -> bytes:
    """A QUERY_EVENT body (inverse of ``events.statement._query``)::

        thread_id 4 | exec_time 4 | db_len 1 | error_code 2 | status_vars_len 2 | status_vars | db | NUL | query
    """
    status = status_vars_block(status_vars)
    db = database.encode("utf-8")
    return (
        thread_id.to_bytes(4, "little")
        + exec_time.to_bytes(4, "little")
        + bytes((len(db),))
        + error_code.to_bytes(2, "little")
        + len(status).to_bytes(2, "little")
        + status
        + db
        + b"\0"
        + query.encode("utf-8")
    )


def xid_body(xid: int) -> bytes:
    """An XID_EVENT body: ``xid 8``."""
    return xid.to_bytes(8, "little")


def zstd_compress(data: bytes, level: int = ZSTD_DEFAULT_LEVEL) -> bytes:
    """Compress as MySQL's ``binary_log::transaction::compression::Zstd_comp`` does: one streaming
    frame of unknown content size, flushed (the data blocks), then ended (an empty last block).
    For the payloads of MySQL 8.0.28 and 8.0.32 in the fixtures this gives the server's bytes.
    """
    import zstandard

    compressor = zstandard.ZstdCompressor(level=level).compressobj()
    return (
        compressor.compress(data)
        + compressor.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
        + compressor.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)
    )


def _payload_field(field_type: int, value: int) -> bytes:
    encoded = pack_int(value)
    return pack_int(field_type) + pack_int(len(encoded)) + encoded


def transaction_payload_body(events: bytes, compression_type: int = COMPRESSION_ZSTD) -> bytes:
    """A TRANSACTION_PAYLOAD_EVENT body (inverse of :func:`binlog_codec.payload.parse_payload_header`
    and the inflation of the payload): the header fields in a server's order, compression type,
    uncompressed size, payload size, the end mark, then ``events`` (inner events, no checksums)
    compressed by :func:`zstd_compress` or stored."""
    data = zstd_compress(events) if compression_type == COMPRESSION_ZSTD else events
    if compression_type not in (COMPRESSION_ZSTD, COMPRESSION_NONE):
        raise ValueError(f"compression type {compression_type}: expected 0 (zstd) or 255 (none)")
    return (
        _payload_field(COMPRESSION_TYPE_FIELD, compression_type)
        + _payload_field(UNCOMPRESSED_SIZE_FIELD, len(events))
        + _payload_field(PAYLOAD_SIZE_FIELD, len(data))
        + pack_int(HEADER_END_MARK)
        + data
    )


# -- files ---------------------------------------------------------------------------------


@dataclass
class BinlogWriter:
    """Builds a binlog file: magic, an FDE, then events with positions filled in.

    In memory by default (:meth:`bytes`); with ``stream`` every event goes straight to that
    binary file object, so a large file never sits in memory.
    """

    server_version: str = "8.0.40"
    checksum: bool = True
    server_id: int = 1
    timestamp: int = 1_700_000_000
    data: bytearray = field(default_factory=bytearray)
    stream: BinaryIO | None = None
    position: int = 0

    def __post_init__(self) -> None:
        self._write(MAGIC)
        alg = CHECKSUM_CRC32 if self.checksum else 0
        self.add(EventType.FORMAT_DESCRIPTION, format_description_body(self.server_version, checksum_alg=alg),
                 checksum=True)

    def _write(self, chunk: bytes) -> None:
        if self.stream is None:
            self.data += chunk
        else:
            self.stream.write(chunk)
        self.position += len(chunk)

    def event_size(self, body: bytes, *, checksum: bool | None = None) -> int:
        """The size an event of ``body`` takes in this file."""
        with_crc = self.checksum if checksum is None else checksum
        return HEADER_V4.size + len(body) + (4 if with_crc else 0)

    def add(self, type_code: int, body: bytes, *, flags: int = 0, checksum: bool | None = None) -> int:
        """Append one event; returns its position."""
        with_crc = self.checksum if checksum is None else checksum
        size = self.event_size(body, checksum=with_crc)
        position = self.position
        header = EventHeader(self.timestamp, int(type_code), self.server_id, size, position + size, flags)
        self._write(encode_event(header, body, checksum=with_crc))
        return position

    def add_ignorable(self, type_code: int, body: bytes) -> int:
        return self.add(type_code, body, flags=EventFlag.IGNORABLE)

    def inner_event(self, type_code: int, body: bytes, *, flags: int = 0) -> bytes:
        """An event as it sits inside a TRANSACTION_PAYLOAD: no checksum, ``log_pos`` 0."""
        header = EventHeader(self.timestamp, int(type_code), self.server_id, HEADER_V4.size + len(body), 0, flags)
        return encode_event(header, body, checksum=False)

    def bytes(self) -> bytes:
        if self.stream is not None:
            raise ValueError("the events went to a stream; read them from there")
        return bytes(self.data)
