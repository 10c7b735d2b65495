"""The row format of table data in a backup image.

A backup image (WL#4063) carries each table's rows in table data chunks whose
layout the worklog leaves to the backup driver. Ours is the row format of the
binary log, so that one decoder reads both the snapshot and the changes after
it.

Specification
-------------
The rows of a table are read against the table map of the table's
``CREATE TABLE`` statement in the image's metadata:
:func:`binlog_codec.create_table.table_map_of` gives the
:class:`~binlog_codec.table_map.TableMap` a server with
``binlog_row_metadata=FULL`` logs for the table (column types, metadata,
collations, signedness, ENUM/SET values), for the image's server flavour.

A table data chunk is a sequence of whole rows, nothing before, between or
after them; a row never continues into the next chunk, and a chunk may hold
any number of rows (an empty chunk holds none). Each row is one WL#5092 FULL
row image, exactly as a WRITE_ROWS event of that table map lays out the row
it inserts under ``binlog_row_image=FULL``::

    null bitmap   (columns + 7) / 8 bytes; bit i (least significant first)
                  set when column i is NULL; the unused bits of the last
                  byte are written 0 and ignored on reading
    values        each non-NULL column's value in column order, in its
                  storage format (``Field::pack``): see
                  :mod:`binlog_codec.value_encoder` for every type

Every column of the table map is in every row (a FULL image has no absent
columns). Values are those of :mod:`binlog_codec.values`: ``int``,
``float``, ``decimal.Decimal``, MySQL's text of temporal values, ``str`` for
text and ENUM/SET labels, ``bytes`` for binary strings and GEOMETRY, the
parsed document for JSON, a list of floats for VECTOR; ``None`` is NULL.
Rows are dicts keyed by column name.

:func:`encode_rows` writes rows (with
:func:`binlog_codec.value_encoder.encode_row_image`), :func:`decode_rows`
reads them (with :class:`binlog_codec.rows.DecodingPlan`, the rows events'
decoder) and :func:`encode_chunks` cuts a table's rows into chunks of about a
given size.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .rows import DecodingPlan
from .table_map import TableMap
from .value_encoder import encode_row_image
from .wire import ShortBody

log = logging.getLogger(__name__)

DEFAULT_CHUNK_SIZE = 1 << 20


def encode_row(table: TableMap, row: Mapping[str, Any], *, flavour: str = "mariadb") -> bytes:
    """One row as a FULL row image. ``row`` maps every column's name to its value (None for
    NULL); a missing or extra column, or a value its column cannot hold, raises ``ValueError``."""
    return encode_row_image(table, row, range(len(table.columns)), flavour=flavour)


def encode_rows(table: TableMap, rows: Iterable[Mapping[str, Any]], *, flavour: str = "mariadb") -> bytes:
    """The rows as one table data chunk: their FULL row images, one after the other."""
    return b"".join(encode_row(table, row, flavour=flavour) for row in rows)


def encode_chunks(
    table: TableMap, rows: Iterable[Mapping[str, Any]], *, chunk_size: int = DEFAULT_CHUNK_SIZE, flavour: str = "mariadb"
) -> Iterator[bytes]:
    """The rows as table data chunks of whole rows: each chunk grows until it reaches
    ``chunk_size`` bytes (a row larger than that is a chunk of its own). Yields no chunk for no rows."""
    chunk = bytearray()
    count = 0
    for row in rows:
        chunk += encode_row(table, row, flavour=flavour)
        count += 1
        if len(chunk) >= chunk_size:
            log.debug("%s.%s: chunk of %d rows, %d bytes", table.database, table.table, count, len(chunk))
            yield bytes(chunk)
            chunk, count = bytearray(), 0
    if chunk:
        log.debug("%s.%s: last chunk of %d rows, %d bytes", table.database, table.table, count, len(chunk))
        yield bytes(chunk)


def decode_rows(table: TableMap, data: bytes, *, flavour: str = "mariadb") -> Iterator[dict[str, Any]]:
    """The rows of one table data chunk, in order. Bytes that do not end on a row's end, or
    values that do not decode, raise ``ValueError`` naming the table, the row and its offset."""
    plan = DecodingPlan(table, flavour)
    image = plan.columns_of(list(range(len(table.columns))))
    offset, index = 0, 0
    while offset < len(data):
        try:
            row, next_offset = plan.image(data, offset, image)
        except ShortBody as exc:
            raise ValueError(
                f"table {table.database}.{table.table}: row {index} at chunk offset {offset}: {exc}"
            ) from None
        yield row
        offset, index = next_offset, index + 1
