"""Writing a backup image from a live MariaDB or MySQL server: ``binlog-codec backup create``.

:func:`create_image` takes a consistent snapshot of the given databases and
writes it as one online backup image (WL#4063)::

    header        the server's version; one snapshot (consistent snapshot
                  driver, every table of the image)
    catalogue     the databases and their base tables, in name order
    meta-data     each database's CREATE DATABASE and each table's CREATE TABLE,
                  as SHOW CREATE prints them
    table data    each table's rows in the row format of
                  binlog_codec.snapshot_rows, cut into chunks of about
                  ``chunk_size`` bytes, the last one flagged
    summary       the validity point: its time and the binlog file and position
                  the snapshot corresponds to; the end time

The validity point is the start of the snapshot's transaction
(:func:`binlog_codec.server_rows.consistent_snapshot`): every change committed
before it is in the table data, every later one in the binlog from the
summary's position on. So a consumer of the image goes on reading the binlog
exactly there.

Rows stream from the server (an unbuffered cursor) through the encoder into
the image's blocks: at most one chunk of one table is held in memory. The image
is written to ``<output>.partial`` and renamed to ``output`` once complete, so
a backup that fails leaves no image that looks whole.

Tables are read in the order of the catalogue, with one log line per table
(rows, chunks, bytes) so that a long backup shows its progress.
"""

from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator, Sequence

from ..create_table import table_map_of
from ..server_rows import SnapshotPosition, consistent_snapshot, table_rows
from ..snapshot_rows import DEFAULT_CHUNK_SIZE, encode_chunks
from .model import (
    Catalogue,
    Database,
    Header,
    ImageType,
    ItemType,
    MetadataItem,
    MetadataKind,
    ServerVersion,
    SnapshotInfo,
    Summary,
    Table,
)
from .transport import DEFAULT_BLOCK_SIZE
from .writer import BackupWriter

log = logging.getLogger(__name__)

SNAPSHOT = 1  # the image's only snapshot: every table is in it
PREAMBLE_CHARSET = "utf8mb4"  # the charset of the image's names and statements (the connection's)


@dataclass(frozen=True)
class TableWritten:
    """What the image holds of one table."""

    database: str
    table: str
    rows: int
    chunks: int
    bytes: int


@dataclass(frozen=True)
class CreatedImage:
    """What :func:`create_image` wrote: the image's file and size, the validity point, every table."""

    path: Path
    size: int
    summary: Summary
    tables: tuple[TableWritten, ...]


@dataclass(frozen=True)
class _SourceTable:
    """A table to back up: its names, its CREATE TABLE and the table map derived from it."""

    database: str
    name: str
    create_statement: str

    def table_map(self, flavour: str):
        return table_map_of(self.create_statement, database=self.database, flavour=flavour)


# -- what the server is and holds -------------------------------------------------------


def _one(cursor, statement: str, arguments: tuple = ()) -> tuple:
    cursor.execute(statement, arguments)
    return cursor.fetchone()


def server_version(version_text: str) -> ServerVersion:
    """``VERSION()`` as the header's server version: ``10.11.6-MariaDB-log`` is 10.11.6, the whole
    text kept as the extra string (readers tell MariaDB from MySQL by it)."""
    match = re.match(r"(\d+)\.(\d+)\.(\d+)", version_text)
    if match is None:
        raise ValueError(f"server version {version_text!r} does not start with major.minor.release")
    major, minor, release = (int(part) for part in match.groups())
    return ServerVersion(major, minor, release, version_text)


def flavour_of(version: ServerVersion) -> str:
    """``mariadb`` when the version text says so, else ``mysql`` (as the image's readers decide)."""
    return "mariadb" if "mariadb" in version.extra.lower() else "mysql"


def _base_tables(cursor, database: str) -> list[str]:
    cursor.execute(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_TYPE = 'BASE TABLE' "
        "ORDER BY TABLE_NAME",
        (database,),
    )
    return [str(name) for (name,) in cursor.fetchall()]


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _source_tables(cursor, databases: Sequence[str]) -> tuple[dict[str, str], list[_SourceTable]]:
    """CREATE DATABASE per database and the base tables with their CREATE TABLE, in catalogue order.
    A database that does not exist is an error (a backup of nothing is not what was asked)."""
    creates, tables = {}, []
    for database in databases:
        if _one(cursor, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (database,))[0] == 0:
            raise ValueError(f"database {database!r} does not exist on the server")
        creates[database] = _one(cursor, f"SHOW CREATE DATABASE {_quoted(database)}")[1]
        for name in _base_tables(cursor, database):
            statement = _one(cursor, f"SHOW CREATE TABLE {_quoted(database)}.{_quoted(name)}")[1]
            tables.append(_SourceTable(database, name, statement))
    return creates, tables


# -- the image's parts ------------------------------------------------------------------


def catalogue_of(databases: Sequence[str], tables: Sequence[_SourceTable], default_charset: str) -> Catalogue:
    """The databases in the given order, each with its tables (all in the one snapshot)."""
    return Catalogue(
        charsets=(PREAMBLE_CHARSET, default_charset),
        users=("root",),
        databases=tuple(
            Database(name, tuple(Table(table.name, SNAPSHOT) for table in tables if table.database == name))
            for name in databases
        ),
    )


def metadata_of(
    databases: Sequence[str], creates: dict[str, str], tables: Sequence[_SourceTable]
) -> list[MetadataItem]:
    """CREATE DATABASE (global items, by database number) and CREATE TABLE (by position in the
    snapshot's table list, which is catalogue order)."""
    numbers = {name: number for number, name in enumerate(databases)}
    items = [
        MetadataItem(MetadataKind.GLOBAL, ItemType.DATABASE, numbers[name], create_statement=creates[name])
        for name in databases
    ]
    items += [
        MetadataItem(
            MetadataKind.TABLE, ItemType.TABLE, position, database=numbers[table.database],
            snapshot_number=SNAPSHOT, create_statement=table.create_statement,
        )
        for position, table in enumerate(tables)
    ]
    return items


def _with_last(chunks: Iterable[bytes]) -> Iterator[tuple[bytes, bool]]:
    """Each chunk with whether it is the last; no chunks at all is one empty last chunk, so that
    every table of the image has its last chunk."""
    previous = None
    for chunk in chunks:
        if previous is not None:
            yield previous, False
        previous = chunk
    yield (previous if previous is not None else b""), True


class _Counted:
    """Rows passed through, counted."""

    def __init__(self, rows: Iterable) -> None:
        self._rows, self.count = rows, 0

    def __iter__(self):
        for row in self._rows:
            self.count += 1
            yield row


def _write_table(
    writer: BackupWriter, connection, number: int, table: _SourceTable, flavour: str, chunk_size: int
) -> TableWritten:
    table_map = table.table_map(flavour)
    rows = _Counted(table_rows(connection, table.database, table.name, table_map, flavour=flavour))
    chunks = size = 0
    for data, last in _with_last(encode_chunks(table_map, rows, chunk_size=chunk_size, flavour=flavour)):
        writer.write_table_data(SNAPSHOT, number, data, last=last)
        chunks, size = chunks + 1, size + len(data)
    return TableWritten(table.database, table.name, rows.count, chunks, size)


def _server_now(cursor) -> datetime:
    return _one(cursor, "SELECT UTC_TIMESTAMP(6)")[0].replace(tzinfo=timezone.utc)


def write_image(
    stream: BinaryIO,
    connection,
    databases: Sequence[str],
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    block_size: int = DEFAULT_BLOCK_SIZE,
) -> tuple[Summary, tuple[TableWritten, ...], int]:
    """Back up ``databases`` over ``connection`` (a PyMySQL connection, see
    :func:`binlog_codec.server_rows.connect`) into ``stream``: the summary, the tables written
    and the image's size. The snapshot's transaction is ended (committed) before returning."""
    with connection.cursor() as cursor:
        version = server_version(_one(cursor, "SELECT VERSION()")[0])
        flavour = flavour_of(version)
        default_charset = _one(cursor, "SELECT @@character_set_server")[0]
    position: SnapshotPosition = consistent_snapshot(connection, flavour=flavour)
    try:
        with connection.cursor() as cursor:
            vp_time = _server_now(cursor)
            creates, tables = _source_tables(cursor, databases)
        header = Header(
            creation_time=vp_time.replace(microsecond=0),
            server_version=version,
            snapshots=(SnapshotInfo(ImageType.CONSISTENT_SNAPSHOT, len(tables)),),
        )
        writer = BackupWriter(stream, header=header, block_size=block_size)
        writer.write_catalogue(catalogue_of(databases, tables, default_charset))
        writer.write_metadata(metadata_of(databases, creates, tables))
        written = []
        for number, table in enumerate(tables):
            started = time.monotonic()
            done = _write_table(writer, connection, number, table, flavour, chunk_size)
            written.append(done)
            log.info(
                "table %d/%d %s.%s: %d rows, %d chunks, %d bytes in %.1f s",
                number + 1, len(tables), table.database, table.name, done.rows, done.chunks, done.bytes,
                time.monotonic() - started,
            )
        with connection.cursor() as cursor:
            end_time = _server_now(cursor)
    finally:
        connection.commit()  # ends the snapshot's transaction, whatever happened
    summary = Summary(
        vp_time=vp_time, end_time=end_time,
        binlog_file=position.file, binlog_position=position.position,
        binlog_group_file=position.file, binlog_group_position=position.position,
    )
    size = writer.finish(summary)
    return summary, tuple(written), size


def create_image(
    output: str | os.PathLike[str],
    connection,
    databases: Sequence[str],
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    block_size: int = DEFAULT_BLOCK_SIZE,
) -> CreatedImage:
    """Back up ``databases`` into the image file ``output`` (see the module docstring); the
    file appears only when the image is complete."""
    if not databases:
        raise ValueError("no database to back up")
    output = Path(output)
    partial = output.with_name(output.name + ".partial")
    log.info("backing up %s into %s", ", ".join(databases), output)
    try:
        with open(partial, "wb") as stream:
            summary, tables, size = write_image(
                stream, connection, databases, chunk_size=chunk_size, block_size=block_size
            )
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(partial, output)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    log.info(
        "%s: %d tables, %d rows, %d bytes; validity point %s at binlog %s:%d",
        output, len(tables), sum(t.rows for t in tables), size, summary.vp_time.isoformat(),
        summary.binlog_file, summary.binlog_position,
    )
    return CreatedImage(output, size, summary, tables)
