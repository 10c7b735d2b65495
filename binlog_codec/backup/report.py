"""What ``binlog-codec backup inspect`` shows of a backup image, as plain data.

:func:`image_report` reads an image once, front to back, and returns its
header, summary, catalogue and, per table, how many table data chunks and
bytes it has. Rows are counted too when they can be: the table's meta-data
entry holds its ``CREATE TABLE`` statement and every chunk decodes in the
row format of :mod:`binlog_codec.snapshot_rows` (read as the image's server
flavour, MariaDB when its version string says so, else MySQL). Otherwise the
row count is ``None``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..create_table import table_map_of
from ..snapshot_rows import decode_rows
from ..table_map import TableMap
from .model import Header, MetadataKind, Summary
from .reader import BackupReader, read_image

log = logging.getLogger(__name__)


@dataclass
class TableCounts:
    """Chunks, bytes and (when countable) rows of one table of one snapshot."""

    database: str
    table: str
    snapshot: int
    table_number: int
    table_map: TableMap | None = field(default=None, repr=False)
    chunks: int = 0
    bytes: int = 0
    rows: int | None = None
    last_seen: bool = False

    def add(self, data: bytes, last: bool, flavour: str) -> None:
        self.chunks += 1
        self.bytes += len(data)
        self.last_seen = self.last_seen or last
        if self.table_map is None:
            return
        try:
            self.rows = (self.rows or 0) + sum(1 for _ in decode_rows(self.table_map, data, flavour=flavour))
        except ValueError as exc:
            log.warning("%s.%s: rows not counted: %s", self.database, self.table, exc)
            self.table_map, self.rows = None, None


def _time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _flavour(header: Header) -> str:
    return "mariadb" if "mariadb" in header.server_version.extra.lower() else "mysql"


def _header_report(header: Header) -> dict[str, Any]:
    version = header.server_version
    return {
        "creation_time": _time(header.creation_time),
        "server_version": f"{version.major}.{version.minor}.{version.release}",
        "server_version_string": version.extra,
        "flags": header.flags,
        "summary_in_preamble": header.summary_in_preamble,
        "has_binlog_position": header.has_binlog_position,
        "big_endian": header.big_endian,
        "snapshots": [
            {
                "snapshot": number,
                "image_type": info.image_type.name,
                "format_version": info.format_version,
                "options": info.options,
                "tables": info.table_count,
                "engine": info.engine_name,
                "engine_version": None if info.engine_version is None else ".".join(map(str, info.engine_version)),
            }
            for number, info in enumerate(header.snapshots, 1)
        ],
    }


def _summary_report(summary: Summary) -> dict[str, Any]:
    return {
        "vp_time": _time(summary.vp_time),
        "end_time": _time(summary.end_time),
        "binlog_file": summary.binlog_file,
        "binlog_position": summary.binlog_position,
        "binlog_group_file": summary.binlog_group_file,
        "binlog_group_position": summary.binlog_group_position,
    }


def _table_counts(reader: BackupReader) -> dict[tuple[int, int], TableCounts]:
    """One entry per table of every snapshot, with the table map of its CREATE TABLE when it parses."""
    catalogue, flavour = reader.catalogue, _flavour(reader.header)
    statements = {
        (item.snapshot_number, item.position): item.create_statement
        for item in reader.metadata
        if item.kind == MetadataKind.TABLE and item.create_statement
    }
    counts = {}
    for number in range(1, len(reader.header.snapshots) + 1):
        for position, (db_number, table) in enumerate(catalogue.snapshot_tables(number)):
            database = catalogue.databases[db_number].name
            entry = counts[number, position] = TableCounts(database, table.name, number, position)
            statement = statements.get((number, position))
            if statement is None:
                continue
            try:
                entry.table_map, entry.rows = table_map_of(statement, database=database, flavour=flavour), 0
            except ValueError as exc:
                log.info("%s.%s: rows not counted, CREATE TABLE not understood: %s", database, table.name, exc)
    return counts


def image_report(path) -> dict[str, Any]:
    """Header, summary, catalogue and per-table counts of the image at ``path`` (read to its end)."""
    with read_image(path) as reader:
        counts = _table_counts(reader)
        flavour = _flavour(reader.header)
        for chunk in reader.table_data():
            counts[chunk.snapshot_number, chunk.table_number].add(chunk.data, chunk.last, flavour)
        summary = reader.summary
        catalogue = reader.catalogue
        return {
            "file": str(path),
            "format_version": reader.format_version,
            "block_size": reader.block_size,
            "header": _header_report(reader.header),
            "summary": _summary_report(summary),
            "catalogue": {
                "charsets": list(catalogue.charsets),
                "users": list(catalogue.users),
                "databases": [
                    {
                        "name": database.name,
                        "items": [
                            {"type": item.type.name, "name": item.name,
                             "snapshot": getattr(item, "snapshot_number", None)}
                            for item in database.items
                        ],
                    }
                    for database in catalogue.databases
                ],
            },
            "metadata_entries": len(reader.metadata),
            "tables": [
                {
                    "database": entry.database,
                    "table": entry.table,
                    "snapshot": entry.snapshot,
                    "table_number": entry.table_number,
                    "chunks": entry.chunks,
                    "bytes": entry.bytes,
                    "rows": entry.rows,
                    "complete": entry.last_seen,
                }
                for entry in counts.values()
            ],
        }
