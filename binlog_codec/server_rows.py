"""Reading a table's rows from a live MariaDB or MySQL server, for a backup image.

``backup create`` takes a consistent snapshot (:func:`consistent_snapshot`),
reads every table with :func:`table_rows` in that snapshot's transaction and
writes the rows with :func:`binlog_codec.snapshot_rows.encode_rows`. The
values are those :mod:`binlog_codec.values` decodes from a row image of the
same row, so the snapshot and the binlog changes after it agree value for
value.

Each column is selected in a form that comes back exactly, whatever the
connection's character set:

* character and binary strings, GEOMETRY and VECTOR as ``HEX(col)``: the
  stored bytes, decoded here from the column's character set (``bytes`` for
  the binary one), so no conversion happens on the wire;
* ENUM and SET as ``CAST(col AS UNSIGNED)``: the index or bit mask, turned into
  the label by the table map's values, as the row decoder does;
* integers and DECIMAL as their text; BIT and YEAR as numbers;
* FLOAT widened to DOUBLE (exact) and DOUBLE as the server's shortest text
  that reads back as the same double;
* temporal values as MySQL's text, TIMESTAMP in UTC (the session's time zone
  is set to ``+00:00``), zero dates kept;
* JSON (MySQL) as its text, read with :func:`binlog_codec.json_text.from_text`:
  dates, times and opaque values inside a document come out as their text.

MariaDB's hidden ``DB_ROW_HASH_n`` columns (of ``UNIQUE ... USING HASH`` keys)
cannot be selected: their value is None.

Rows stream through an unbuffered (server-side) cursor, ``batch_size`` rows at
a time; the connection is busy until the last row of the table is read.
"""

from __future__ import annotations

import logging
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable

import pymysql
import pymysql.cursors

from . import charsets, json_binary, json_text
from .table_map import Column, ColumnType, TableMap
from .values import shortest_float32, value_decoder

log = logging.getLogger(__name__)

Converter = Callable[[str], Any]
HIDDEN_HASH_COLUMN = re.compile(r"DB_ROW_HASH_[0-9]+")


# -- connections -----------------------------------------------------------------------


def connect(
    socket: str | os.PathLike | None = None,
    *,
    host: str | None = None,
    port: int = 3306,
    user: str = "root",
    password: str = "",
) -> pymysql.connections.Connection:
    """A connection for reading rows: over the Unix ``socket`` or TCP to ``host``:``port``,
    utf8mb4, autocommit off (reads happen in the snapshot's transaction)."""
    options: dict[str, Any] = {"user": user, "password": password, "charset": "utf8mb4", "autocommit": False}
    if socket is not None:
        options["unix_socket"] = os.fspath(socket)
    else:
        options.update(host=host or "localhost", port=port)
    return pymysql.connect(**options)


def _connection(connection_or_socket) -> pymysql.connections.Connection:
    if isinstance(connection_or_socket, pymysql.connections.Connection):
        return connection_or_socket
    return connect(connection_or_socket)


# -- the consistent snapshot ------------------------------------------------------------


@dataclass(frozen=True)
class SnapshotPosition:
    """Where the binlog stood when the snapshot was taken: its changes start at ``file``:``position``.
    ``gtid_set`` is MySQL's executed GTID set at that point (None on MariaDB or without GTIDs)."""

    file: str
    position: int
    gtid_set: str | None = None


def _status(cursor, statement: str) -> dict[str, str]:
    cursor.execute(statement)
    return {str(name): str(value) for name, value in cursor.fetchall()}


def consistent_snapshot(connection: pymysql.connections.Connection, *, flavour: str = "mariadb") -> SnapshotPosition:
    """Start a ``REPEATABLE READ`` transaction ``WITH CONSISTENT SNAPSHOT`` on ``connection``
    and return the binlog position it corresponds to: every change committed before it is in
    the snapshot, every later one in the binlog from that position on. Read the tables with
    :func:`table_rows` on the same connection, then end the transaction (``connection.commit()``).

    MariaDB: the snapshot's position is ``binlog_snapshot_file`` and
    ``binlog_snapshot_position`` of ``SHOW STATUS``, which the server records when the
    transaction starts, without locking.
    MySQL: the server records no such position, so commits are stopped for the moment it
    takes: ``FLUSH TABLES WITH READ LOCK`` (RELOAD privilege), the transaction, ``SHOW BINARY
    LOG STATUS`` (``SHOW MASTER STATUS`` before 8.2), ``UNLOCK TABLES``.
    """
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        if flavour == "mariadb":
            cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            status = _status(cursor, "SHOW STATUS LIKE 'binlog_snapshot_%'")
            position = SnapshotPosition(status["Binlog_snapshot_file"], int(status["Binlog_snapshot_position"]))
        else:
            position = _mysql_snapshot(cursor)
    log.info("consistent snapshot at %s:%d", position.file, position.position)
    return position


def _mysql_snapshot(cursor) -> SnapshotPosition:
    cursor.execute("FLUSH TABLES WITH READ LOCK")
    try:
        cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        try:
            cursor.execute("SHOW BINARY LOG STATUS")
        except pymysql.err.ProgrammingError:  # before MySQL 8.2
            cursor.execute("SHOW MASTER STATUS")
        names = [description[0] for description in cursor.description]
        row = dict(zip(names, cursor.fetchone() or ()))
    finally:
        cursor.execute("UNLOCK TABLES")
    if not row:
        raise RuntimeError("the server writes no binary log (log_bin is off)")
    return SnapshotPosition(row["File"], int(row["Position"]), row.get("Executed_Gtid_Set") or None)


# -- per-column selection ---------------------------------------------------------------


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _text(column: Column, flavour: str) -> Converter:
    """Hex of stored bytes to the decoder's value: text in the column's charset, or bytes."""
    collation_id = column.collation_id
    if collation_id is None or charsets.is_binary(collation_id):
        return bytes.fromhex
    return lambda hexed: charsets.decode(bytes.fromhex(hexed), collation_id, flavour, column=column.display_name)


def _label(column: Column, flavour: str) -> Converter:
    """An ENUM index or SET mask to its label(s), through the row decoder of the column."""
    decode = value_decoder(column, flavour)
    size = column.length or 1
    return lambda number: decode(int(number).to_bytes(size, "little"), 0)[0]


def _float(text: str) -> float:
    return shortest_float32(struct.pack("<f", float(text)))


def _vector(hexed: str) -> list[float]:
    raw = bytes.fromhex(hexed)
    return [shortest_float32(raw[i : i + 4]) for i in range(0, len(raw), 4)]


def _json(text: str) -> Any:
    document = json_text.from_text(text)
    return json_binary.JSON_NULL if document is None else document


_INTEGER_TYPES = (ColumnType.TINY, ColumnType.SHORT, ColumnType.INT24, ColumnType.LONG, ColumnType.LONGLONG)
_TEMPORAL_TYPES = (
    ColumnType.DATE, ColumnType.NEWDATE, ColumnType.TIME, ColumnType.TIME2, ColumnType.DATETIME,
    ColumnType.DATETIME2, ColumnType.TIMESTAMP, ColumnType.TIMESTAMP2,
)
_BYTE_TYPES = (ColumnType.STRING, ColumnType.VAR_STRING, ColumnType.VARCHAR, ColumnType.BLOB, ColumnType.GEOMETRY)


def column_reading(column: Column, flavour: str = "mariadb") -> tuple[str, Converter]:
    """How to read ``column``: the SELECT expression (text on the wire) and the function that
    turns its text into the value :mod:`binlog_codec.values` decodes."""
    name, kind = _quoted(column.display_name), column.type_code
    as_text = f"CAST({name} AS CHAR)"
    if column.real_type in (ColumnType.ENUM, ColumnType.SET) or kind == ColumnType.BIT:
        reading = _label(column, flavour) if kind != ColumnType.BIT else int
        return f"CAST(CAST({name} AS UNSIGNED) AS CHAR)", reading
    if kind in _INTEGER_TYPES:
        return as_text, int
    if kind == ColumnType.NEWDECIMAL:
        return as_text, Decimal
    if kind == ColumnType.FLOAT:
        return f"CAST({name} + 0e0 AS CHAR)", _float
    if kind == ColumnType.DOUBLE:
        return as_text, float
    if kind == ColumnType.YEAR:
        return f"CAST({name} + 0 AS CHAR)", int
    if kind in _TEMPORAL_TYPES:
        return as_text, str
    if kind in _BYTE_TYPES:
        return f"HEX({name})", _text(column, flavour)
    if kind == ColumnType.VECTOR:
        return f"HEX({name})", _vector
    if kind == ColumnType.JSON:
        return as_text, _json
    raise ValueError(f"column {column.display_name}: no way to read column type {kind} from the server")


@dataclass(frozen=True)
class _Reading:
    """One column of the table: its name and, unless it cannot be selected, expression and converter."""

    name: str
    expression: str | None
    convert: Converter | None


def _readings(table_map: TableMap, flavour: str) -> list[_Reading]:
    readings = []
    for column in table_map.columns:
        name = column.display_name
        if flavour == "mariadb" and HIDDEN_HASH_COLUMN.fullmatch(name):
            readings.append(_Reading(name, None, None))
        else:
            readings.append(_Reading(name, *column_reading(column, flavour)))
    return readings


# -- rows -------------------------------------------------------------------------------


def table_rows(
    connection_or_socket,
    database: str,
    table: str,
    table_map: TableMap,
    *,
    flavour: str = "mariadb",
    batch_size: int = 1000,
) -> Iterator[dict[str, Any]]:
    """The rows of ``database.table`` as dicts of column name to value (None for NULL), in
    primary key order when the table map has a key, streamed ``batch_size`` at a time.

    ``connection_or_socket`` is a PyMySQL connection (in a :func:`consistent_snapshot`) or the
    path of a server's Unix socket (a connection of its own, as root). ``table_map`` is the
    table's, usually :func:`binlog_codec.create_table.table_map_of` of its CREATE statement.
    The session's time zone is set to UTC and PAD_CHAR_TO_FULL_LENGTH cleared.
    """
    connection = _connection(connection_or_socket)
    readings = _readings(table_map, flavour)
    expressions = [reading.expression for reading in readings if reading.expression is not None]
    order = ", ".join(_quoted(table_map.columns[index].display_name) for index, _ in table_map.primary_key)
    query = (
        f"SELECT {', '.join(expressions)} FROM {_quoted(database)}.{_quoted(table)}"
        + (f" ORDER BY {order}" if order else "")
    )
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION time_zone = '+00:00'")
        cursor.execute("SET SESSION sql_mode = REPLACE(@@sql_mode, 'PAD_CHAR_TO_FULL_LENGTH', '')")
    log.info("reading %s.%s (%d columns)", database, table, len(readings))
    count = 0
    with connection.cursor(pymysql.cursors.SSCursor) as cursor:
        cursor.execute(query)
        while batch := cursor.fetchmany(batch_size):
            for values in batch:
                yield _row(readings, values)
            count += len(batch)
    log.info("read %d rows of %s.%s", count, database, table)


def _row(readings: list[_Reading], values: tuple) -> dict[str, Any]:
    """A fetched row (the selected columns' text) as the values of every column."""
    row: dict[str, Any] = {}
    fetched = iter(values)
    for reading in readings:
        text = None if reading.expression is None else next(fetched)
        if isinstance(text, (bytes, bytearray)):
            text = text.decode("ascii")
        row[reading.name] = None if text is None else reading.convert(text)
    return row
