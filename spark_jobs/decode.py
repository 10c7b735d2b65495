"""Decode: binlog files into staged row images, table versions and a transaction index.

:func:`decode` plans the splits on the driver (:mod:`spark_jobs.splits`) and
runs one Spark task per split (:func:`spark_jobs.tasks.run`). A task decodes its
split with ``binlog_codec`` and writes its files itself; what comes back through
Spark is one small summary per split (:data:`SUMMARY_SCHEMA`), never a row
change. The staging folder then holds::

    images/<db>/<table>/schema_id=<id>/part-<file>-<start>-<end>.arrow
        the row changes of one table version in one split, in log order, as
        binlog_codec.table_batches.TableBatches builds them, a rows event at a
        time (the warehouse's change columns, _schema_id and _binlog_inner_offset
        included), in an Arrow file (spark_jobs.image_files)
    transactions/part-<file>-<start>-<end>.parquet
        one row per transaction of the split (TRANSACTION_SCHEMA): file, start
        and end position, GTID, XID, commit time (the timestamp of the XID or
        COMMIT event that ends it, or of the statement that is a transaction of
        its own), server id, row counts per table
    charset_checks/part-<first file>-<start>-<last file>-<end>.parquet
        one row per text column in a charset other than UTF-8 and ASCII
        (CHARSET_CHECK_SCHEMA): how many of its values were encoded back to
        the charset and compared with the logged bytes, how many differed,
        and the first that did (binlog_codec.charsets.RoundTrips)
    table_schemas/part-<first file>-<start>-<last file>-<end>.parquet
        one row per table version seen (binlog_codec.arrow.TABLE_SCHEMA):
        columns with exact SQL type, nullability, signedness, charset and
        collation, ENUM/SET values, geometry type, visibility, primary key
        with prefixes, metadata level, first and last row position, rows, and the
        statement of the last schema change of the table before its first row
        (ddl, ddl_position: spark_jobs.schema_history.name_versions)
    schema_changes/part-<first file>-<start>-<last file>-<end>.parquet
        one row per schema change and table it changes, in log order
        (spark_jobs.schema_history.SCHEMA_CHANGES_SCHEMA): the QUERY events that
        open a transaction of their own (after its GTID) and that binlog_codec.ddl
        reads as a schema change or cannot read (not_understood, with the reason)

``<file>`` is the binlog file's name and ``<start>-<end>`` the split's byte
range, so decoding the same input again gives the same names (and the same
bytes). ``<db>`` and ``<table>`` are percent-encoded where they hold
characters a path cannot (``/``, ``.``, ...).

The split size is the target (64 MB by default), or smaller when that keeps
every Spark task slot busy to the end (:func:`spark_jobs.splits.balanced_target`).

The staging folder is a run's own scratch space (``staging/`` in the run's
area, :func:`spark_jobs.ingest.run_area`): tasks write their files there
directly, through ``pyarrow.fs``, so it is a folder of the machine that runs
the job with a ``local`` master (or a local warehouse), and a prefix of the
warehouse's object store on a cluster, which every node reaches.
What the run goes on with comes from :class:`DecodeResult`, never from listing
the folder: a file a failed task attempt left is written again by the next
attempt, under the same name (Spark never runs two attempts of a task at
once here: :data:`spark_jobs.session.FIXED_CONF`). When a split fails to decode, the driver raises
the ``binlog_codec`` error of the first failing split in log order (same class,
file, position, event type; a corrupt event in a file's unfinished last
transaction, found while planning, counts as the file's last split) and
removes the files the other splits wrote. A file whose framing is broken fails
already in planning, on the driver.

A task reads its split from the binlog file at the path the driver planned
from, or, where it has a ``location`` (``locations``: a cluster whose nodes
share no folder), from object storage (:mod:`spark_jobs.remote_splits`).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections import Counter
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import AbstractSet, Any, Iterable, Mapping

import pyarrow as pa

from binlog_codec import errors
from binlog_codec.arrow import TABLE_SCHEMA, Commit, UNSIGNED_BIGINT, binlog_seq, table_schema_row
from binlog_codec.event_types import EventType
from binlog_codec.events import decode as decode_event
from binlog_codec.reader import BinlogReader, EventHeader
from binlog_codec.rows import RowsOfTable, TableVersions
from binlog_codec.table_batches import TableBatches
from binlog_codec.table_map import TableMap
from binlog_codec.transactions import Transaction

from . import image_files, remote_splits, schema_history, tasks
from .gc_pause import paused_gc
from warehouse import storage
from warehouse.layout import path_part
from .splits import DEFAULT_TARGET_BYTES, balanced_target, FilePlan, Split, SplitPlan, plan_splits, split_events, split_transactions

log = logging.getLogger(__name__)

BATCH_ROWS = 16_384  # rows of one table version buffered before they are written (memory per task)
IMAGES, TRANSACTIONS, TABLE_SCHEMAS, CHARSET_CHECKS = "images", "transactions", "table_schemas", "charset_checks"

_TABLE_ROWS = pa.struct([
    pa.field("database", pa.string(), nullable=False),
    pa.field("table", pa.string(), nullable=False),
    pa.field("rows", pa.int64(), nullable=False),
])
TRANSACTION_SCHEMA = pa.schema([
    pa.field("file", pa.string(), nullable=False),
    pa.field("seq", pa.int64()),
    pa.field("start", pa.int64(), nullable=False),
    pa.field("end", pa.int64(), nullable=False),
    pa.field("gtid", pa.string()),
    pa.field("xid", UNSIGNED_BIGINT),
    pa.field("commit_ts", pa.timestamp("us", tz="UTC")),
    pa.field("server_id", pa.int64()),
    pa.field("complete", pa.bool_(), nullable=False),
    pa.field("events", pa.int32(), nullable=False),
    pa.field("rows", pa.int64(), nullable=False),
    pa.field("rows_per_table", pa.list_(_TABLE_ROWS), nullable=False),
])

_VERSION = pa.struct([
    pa.field("database", pa.string()),
    pa.field("table", pa.string()),
    pa.field("schema_id", pa.string()),
    pa.field("rows", pa.int64()),
    pa.field("path", pa.string()),
    pa.field("first_pos", pa.int64()),
    pa.field("first_inner_offset", pa.int64()),
    pa.field("last_pos", pa.int64()),
    pa.field("last_inner_offset", pa.int64()),
    pa.field("table_schema", pa.string()),
])
_ERROR = pa.struct([
    pa.field("kind", pa.string()),
    pa.field("message", pa.string()),
    pa.field("file", pa.string()),
    pa.field("position", pa.int64()),
    pa.field("event_type", pa.string()),
    pa.field("inner_offset", pa.int64()),
])
# What a task sends back about its split.
CHARSET_CHECK_SCHEMA = pa.schema([
    pa.field("database", pa.string(), nullable=False),
    pa.field("table", pa.string(), nullable=False),
    pa.field("column", pa.string(), nullable=False),
    pa.field("charset", pa.string(), nullable=False),
    pa.field("checked", pa.int64(), nullable=False),
    pa.field("mismatches", pa.int64(), nullable=False),
    pa.field("example", pa.string()),
])
SUMMARY_SCHEMA = pa.schema([
    pa.field("split", pa.int64()),
    pa.field("transactions", pa.int64()),
    pa.field("rows", pa.int64()),
    pa.field("seconds", pa.float64()),
    pa.field("transactions_path", pa.string()),
    pa.field("versions", pa.list_(_VERSION)),
    pa.field("charset_checks", pa.list_(pa.struct(list(CHARSET_CHECK_SCHEMA)))),
    pa.field("schema_changes", pa.list_(pa.struct(list(schema_history.SCHEMA_CHANGES_SCHEMA)))),
    pa.field("error", _ERROR),
])


@dataclass
class DecodeResult:
    """What :func:`decode` staged. Locations are absolute paths or ``s3://`` URIs; tables are
    ``(database, table)``."""

    staging_dir: str
    files: list[FilePlan]
    splits: int
    bytes: int
    transactions: int
    rows: dict[tuple[str, str], int] = field(default_factory=dict)
    images: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    schema_ids: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    transaction_files: list[str] = field(default_factory=list)
    table_schemas: str | None = None
    charset_checks: str | None = None
    schema_changes: str | None = None
    seconds: float = 0.0

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())

    @property
    def resume_positions(self) -> dict[str, int]:
        """Per input file, the position the next run reads it from (see :mod:`spark_jobs.splits`)."""
        return {plan.path: plan.resume_position for plan in self.files}

    @property
    def megabytes_per_second(self) -> float:
        return self.bytes / 1e6 / self.seconds if self.seconds else 0.0


# -- executors: one split ---------------------------------------------------------


class _VersionFile:
    """The staged file of one table version's rows in one split, written in batches."""

    def __init__(self, table: TableMap, split: Split, staging: str, batch_rows: int) -> None:
        self.batches = TableBatches(table, split.flavour)
        self.table = table
        self.flavour = split.flavour
        self.relative = "/".join([
            IMAGES, path_part(table.database), path_part(table.table),
            f"schema_id={self.batches.schema_id}", f"part-{split.stem}{image_files.SUFFIX}",
        ])
        self.target = f"{staging}/{self.relative}"
        self.batch_rows = batch_rows
        self.rows = 0
        self.first: tuple[int, int | None] | None = None  # (position, inner offset) of the first row
        self.last: tuple[int, int | None] | None = None
        self._writer: image_files.ImageFileWriter | None = None

    def append(self, rows: RowsOfTable, commit: Commit | None) -> int:
        """Add the rows of one rows event; how many it holds."""
        added = self.batches.add(rows, commit)
        if added:
            self.rows += added
            self.last = (rows.event.pos, rows.event.inner_offset)
            if self.first is None:
                self.first = self.last
        if len(self.batches) >= self.batch_rows:
            self._write()
        return added

    def _write(self) -> None:
        if self._writer is None:
            self._writer = image_files.ImageFileWriter(self.target, self.batches.schema)
        self._writer.write(self.batches.flush())

    def close(self) -> dict[str, Any]:
        """Write the rest and close the file; its entry of the task summary."""
        self._write()
        self._writer.close()
        return {
            "database": self.table.database,
            "table": self.table.table,
            "schema_id": self.batches.schema_id,
            "rows": self.rows,
            "path": self.relative,
            "first_pos": self.first[0],
            "first_inner_offset": self.first[1],
            "last_pos": self.last[0],
            "last_inner_offset": self.last[1],
            "table_schema": json.dumps(table_schema_row(self.table, self.flavour)),
        }

    def discard(self) -> None:
        if self._writer is not None:
            self._writer.close()
            storage.remove(self.target)


class _ImageFiles:
    """The image files of one split, one per table version."""

    def __init__(self, split: Split, staging: str, batch_rows: int) -> None:
        self.split = split
        self.staging = staging
        self.batch_rows = batch_rows
        self._by_map: dict[int, tuple[TableMap, _VersionFile]] = {}  # the map is kept so its id stays its own
        self._by_schema: dict[str, _VersionFile] = {}

    def append(self, rows: RowsOfTable, commit: Commit | None) -> int:
        """Add the rows of one rows event to its table version's file; how many it holds."""
        found = self._by_map.get(id(rows.table))
        if found is None:
            found = self._by_map[id(rows.table)] = (rows.table, self._file(rows.table))
        return found[1].append(rows, commit)

    def _file(self, table: TableMap) -> _VersionFile:
        candidate = _VersionFile(table, self.split, self.staging, self.batch_rows)
        return self._by_schema.setdefault(candidate.batches.schema_id, candidate)

    def close(self) -> list[dict[str, Any]]:
        return [version.close() for version in self._by_schema.values()]

    def discard(self) -> None:
        for version in self._by_schema.values():
            version.discard()


def _commit_events(split: Split, ends: set[int]) -> dict[int, tuple[EventHeader, int | None]]:
    """Per end of a transaction a TRANSACTION_PAYLOAD ends: the header of the event that commits
    it and its XID, read from the payload's events (the last event inside the payload, its XID).
    The scan (:class:`~binlog_codec.transactions.Transaction`) gives every other transaction's."""
    found: dict[int, tuple[EventHeader, int | None]] = {}
    for raw in BinlogReader(split.path, start_position=split.read_from, stop_position=split.end):
        if raw.end_pos in ends and raw.pos >= split.start:
            xid = decode_event(raw).xid if raw.type_code == EventType.XID else None
            found[raw.end_pos] = (raw.header, xid)
    return found


def _commit(found: tuple[EventHeader, int | None] | None) -> Commit | None:
    return None if found is None else Commit(found[0].timestamp, found[0].server_id, found[1])


class _TransactionIndex:
    """The transactions of one split, the event that commits each, and the rows of each,
    counted per table."""

    def __init__(self, split: Split) -> None:
        self.split = split
        self.transactions: list[Transaction] = list(split_transactions(split))
        self.counts: list[Counter] = [Counter() for _ in self.transactions]
        self.commits = {t.end: (t.ending, t.xid) for t in self.transactions if t.ending is not None}
        compressed = {t.end for t in self.transactions if t.payload}
        if compressed:  # committed by the last event inside the payload: read them
            self.commits.update(_commit_events(split, compressed))
        self._commit_of = [_commit(self.commits.get(t.end)) for t in self.transactions]
        self._current = 0

    def commit_at(self, position: int) -> Commit | None:
        """The :class:`Commit` of the transaction holding the event at ``position``, when it has
        one; that transaction is the one :meth:`count` counts in (positions come in log order)."""
        while position >= self.transactions[self._current].end:
            self._current += 1
        return self._commit_of[self._current]

    def count(self, table: TableMap, rows: int) -> None:
        """Count ``rows`` row changes of ``table`` in the transaction of the last :meth:`commit_at`."""
        if rows:
            self.counts[self._current][(table.database, table.table)] += rows

    def rows(self) -> list[dict[str, Any]]:
        name, seq = self.split.file_name, binlog_seq(self.split.path)
        return [
            _transaction_row(name, seq, transaction, self.commits.get(transaction.end), counts)
            for transaction, counts in zip(self.transactions, self.counts)
        ]

    def write(self, staging: str) -> str:
        relative = f"{TRANSACTIONS}/part-{self.split.stem}.parquet"
        storage.write_parquet(pa.Table.from_pylist(self.rows(), schema=TRANSACTION_SCHEMA), f"{staging}/{relative}")
        return relative


def _transaction_row(
    name: str, seq: int | None, transaction: Transaction, commit: tuple[EventHeader, int | None] | None, counts: Counter
) -> dict[str, Any]:
    header, xid = commit or (None, None)
    return {
        "file": name,
        "seq": seq,
        "start": transaction.start,
        "end": transaction.end,
        "gtid": transaction.gtid,
        "xid": xid,
        "commit_ts": None if header is None else header.timestamp * 1_000_000,
        "server_id": None if header is None else header.server_id,
        "complete": transaction.complete,
        "events": transaction.events,
        "rows": sum(counts.values()),
        "rows_per_table": [{"database": db, "table": table, "rows": rows} for (db, table), rows in counts.items()],
    }


def _error_fields(exc: errors.BinlogError, split: Split, read: str) -> dict[str, Any]:
    """The summary's ``error`` of ``exc``, raised reading ``split`` at the path ``read`` (a
    node-local copy of a split fetched from object storage is named as the driver's file)."""
    return {
        "kind": type(exc).__name__,
        "message": exc.message.replace(read, split.path),
        "file": split.path if exc.file == read else exc.file,
        "position": exc.position,
        "event_type": exc.event_type,
        "inner_offset": exc.inner_offset,
    }


def decode_split(split: Split, staging: str | os.PathLike[str], batch_rows: int = BATCH_ROWS) -> dict[str, Any]:
    """Decode one split into the staging folder at the location ``staging`` (paths in the summary
    are relative to it).

    A ``binlog_codec`` error is returned in the summary's ``error`` (and the
    split's files are removed), so that the driver can raise it as it was.
    """
    started = time.perf_counter()
    work = _absolute(staging)
    images = _ImageFiles(split, work, batch_rows)
    summary: dict[str, Any] = {"split": split.index, "transactions": 0, "rows": 0, "versions": []}
    versions = TableVersions()
    read = split.path
    try:
        with remote_splits.readable(split) as readable:
            read = readable.path
            index = _TransactionIndex(readable)
            with paused_gc():
                for rows in split_events(readable, versions=versions):
                    index.count(rows.table, images.append(rows, index.commit_at(rows.event.pos)))
            summary["schema_changes"] = schema_history.split_schema_changes(readable, index.transactions)
        summary["versions"] = images.close()
        summary["charset_checks"] = versions.round_trips.rows()
        summary["transactions_path"] = index.write(work)
        summary["transactions"] = len(index.transactions)
        summary["rows"] = sum(version["rows"] for version in summary["versions"])
    except errors.BinlogError as exc:
        images.discard()
        summary.update(versions=[], error=_error_fields(exc, split, read))
        log.warning("split %d failed: %s", split.index, exc)
    summary["seconds"] = time.perf_counter() - started
    log.info("split %d (%s %d-%d): %d rows in %.2fs", split.index, split.file_name, split.start, split.end,
             summary["rows"], summary["seconds"])
    return summary


def _decode_task(index: int, splits: list[Split], staging: str, batch_rows: int) -> dict[str, Any]:
    """One task: split number ``index`` decoded; its summary, shaped by :data:`SUMMARY_SCHEMA`."""
    summary = decode_split(splits[index], staging, batch_rows)
    return pa.Table.from_pylist([summary], schema=SUMMARY_SCHEMA).to_pylist()[0]


# -- driver ---------------------------------------------------------------------------


def _run_tasks(spark, splits: list[Split], staging: str, batch_rows: int) -> list[dict[str, Any]]:
    """One task per split; the summaries, in split order."""
    task = functools.partial(_decode_task, splits=splits, staging=staging, batch_rows=batch_rows)
    return tasks.run(spark, task, range(len(splits)))


def _as_error(failed: dict[str, Any]) -> errors.BinlogError:
    """A task's error as the ``binlog_codec`` class that raised it."""
    kind = getattr(errors, failed["kind"], None)
    if not (isinstance(kind, type) and issubclass(kind, errors.BinlogError)):
        kind = errors.BinlogError
    return kind(
        failed["message"],
        file=failed["file"],
        position=failed["position"],
        event_type=failed["event_type"],
        inner_offset=failed["inner_offset"],
    )


def _first_error(plan: SplitPlan, summaries: list[dict[str, Any]]) -> errors.BinlogError | None:
    """The first error in log order: of a split, or of the unfinished tail of a file."""
    failed = {summary["split"]: summary["error"] for summary in summaries if summary["error"] is not None}
    for file_plan in plan.files:
        for split in file_plan.splits:
            if split.index in failed:
                return _as_error(failed[split.index])
        if file_plan.tail_error is not None:
            return file_plan.tail_error
    return None


def _table_schema_rows(plan: SplitPlan, summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per table version: its definition, the first and last row seen, the rows."""
    rows: dict[str, dict[str, Any]] = {}
    for summary in summaries:  # in log order
        split = plan[summary["split"]]
        place = {"file": split.file_name, "seq": binlog_seq(split.path)}
        for version in summary["versions"]:
            last = {**place, "pos": version["last_pos"], "inner_offset": version["last_inner_offset"]}
            row = rows.get(version["schema_id"])
            if row is None:
                first = {**place, "pos": version["first_pos"], "inner_offset": version["first_inner_offset"]}
                row = rows[version["schema_id"]] = json.loads(version["table_schema"])
                row.update({f"first_{key}": value for key, value in first.items()}, rows=0)
            row.update({f"last_{key}": value for key, value in last.items()})
            row["rows"] += version["rows"]
    return list(rows.values())


def _schema_change_rows(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The splits' schema changes, in log order (summaries come in split order)."""
    return [row for summary in summaries for row in summary["schema_changes"] or []]


def _charset_check_rows(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The splits' round-trip checks added up per (database, table, column, charset)."""
    rows: dict[tuple, dict[str, Any]] = {}
    for summary in summaries:  # in log order: the example is the first mismatch of the run
        for check in summary["charset_checks"] or []:
            key = (check["database"], check["table"], check["column"], check["charset"])
            row = rows.setdefault(key, {**check, "checked": 0, "mismatches": 0, "example": None})
            row["checked"] += check["checked"]
            row["mismatches"] += check["mismatches"]
            row["example"] = row["example"] or check["example"]
    return [rows[key] for key in sorted(rows)]


def _write_run_table(
    folder: str, rows: list[dict[str, Any]], schema: pa.Schema, plan: SplitPlan, staging: str
) -> str | None:
    """One Parquet file of ``rows`` for the whole run (None when there are none), named by its input."""
    if not rows:
        return None
    first, last = plan[0], plan[-1]
    relative = f"{folder}/part-{first.file_name}-{first.start}-{last.file_name}-{last.end}.parquet"
    storage.write_parquet(pa.Table.from_pylist(rows, schema=schema), f"{staging}/{relative}")
    return relative


def _write_run_tables(plan: SplitPlan, summaries: list[dict[str, Any]], staging: str) -> dict[str, str | None]:
    """The run's table versions (named by the run's schema changes), charset checks and schema
    changes, each one file for the run; their relative paths by folder."""
    changes = _schema_change_rows(summaries)
    versions = schema_history.name_versions(_table_schema_rows(plan, summaries), changes)
    return {
        TABLE_SCHEMAS: _write_run_table(TABLE_SCHEMAS, versions, TABLE_SCHEMA, plan, staging),
        CHARSET_CHECKS: _write_run_table(CHARSET_CHECKS, _charset_check_rows(summaries), CHARSET_CHECK_SCHEMA, plan,
                                         staging),
        schema_history.SCHEMA_CHANGES: _write_run_table(schema_history.SCHEMA_CHANGES, changes,
                                                        schema_history.SCHEMA_CHANGES_SCHEMA, plan, staging),
    }


def _written(summaries: list[dict[str, Any]]) -> list[str]:
    """The files the tasks wrote, relative to the staging folder."""
    return [path for summary in summaries
            for path in [summary["transactions_path"], *(version["path"] for version in summary["versions"])] if path]


def _result(plan: SplitPlan, summaries: list[dict[str, Any]], staging: str, written: dict[str, str | None]) -> DecodeResult:
    """What was staged; ``written``: the run tables' relative paths by folder (None: no rows)."""
    staged = {folder: None if path is None else f"{staging}/{path}" for folder, path in written.items()}
    result = DecodeResult(
        staging_dir=staging,
        files=plan.files,
        splits=len(plan),
        bytes=plan.bytes,
        transactions=sum(summary["transactions"] for summary in summaries),
        transaction_files=[f"{staging}/{summary['transactions_path']}" for summary in summaries],
        table_schemas=staged.get(TABLE_SCHEMAS),
        charset_checks=staged.get(CHARSET_CHECKS),
        schema_changes=staged.get(schema_history.SCHEMA_CHANGES),
    )
    for summary in summaries:
        for version in summary["versions"]:
            key = (version["database"], version["table"])
            result.rows[key] = result.rows.get(key, 0) + version["rows"]
            result.images.setdefault(key, []).append(f"{staging}/{version['path']}")
            ids = result.schema_ids.setdefault(key, [])
            if version["schema_id"] not in ids:
                ids.append(version["schema_id"])
    return result


def _log_result(result: DecodeResult) -> None:
    log.info(
        "decoded %d files, %d splits, %d bytes: %d transactions, %d rows of %d tables in %.2fs (%.2f MB/s)",
        len(result.files), result.splits, result.bytes, result.transactions, result.total_rows,
        len(result.rows), result.seconds, result.megabytes_per_second,
    )
    for (database, table), rows in sorted(result.rows.items()):
        log.info("  %s.%s: %d rows, %d table versions", database, table, rows, len(result.schema_ids[database, table]))
    for plan in result.files:
        if not plan.complete:
            log.info("  %s ends inside a transaction: resume at %d of %d bytes", plan.path, plan.resume_position, plan.size)


def decode(
    spark,
    files: Iterable[str | os.PathLike[str]],
    staging_dir: str | os.PathLike[str],
    target_bytes: int = DEFAULT_TARGET_BYTES,
    *,
    start_positions: Mapping[str, int] | None = None,
    batch_rows: int = BATCH_ROWS,
    scanned: Mapping[str, Future] | None = None,
    skipped: Mapping[str, AbstractSet[int]] | None = None,
    sizes: Mapping[str, int] | None = None,
    locations: Mapping[str, str] | None = None,
) -> DecodeResult:
    """Decode ``files`` (in log order) into the staging folder at the location ``staging_dir``;
    see the module docstring. ``start_positions``: per file path, the transaction boundary to
    start at (default 0); ``scanned``: transaction scans started ahead
    (:func:`spark_jobs.splits.scan_ahead`); ``skipped``: per file path, the starts of
    transactions not to decode (already ingested); ``sizes``: per file path, how much of it to
    decode (the size it was planned at); ``locations``: per file path, the object the tasks read
    it from (:mod:`spark_jobs.remote_splits`).

    Raises the ``binlog_codec`` error of the first split (or file) that cannot
    be decoded; nothing the run wrote is then left in ``staging_dir``.
    """
    started = time.monotonic()
    staging = _absolute(staging_dir)
    files = list(files)
    slots = spark.sparkContext.defaultParallelism
    plan = plan_splits(files, balanced_target(files, target_bytes, slots, start_positions), start_positions, scanned, skipped,
                       sizes)
    locations = locations or {}
    splits = [remote_splits.located(split, locations[split.path]) if split.path in locations else split
              for split in plan]
    summaries: list[dict[str, Any]] = []
    written: dict[str, str | None] = {}
    if plan:
        log.info("decoding %d splits of %d files (%d bytes)", len(plan), len(plan.files), plan.bytes)
        summaries = _run_tasks(spark, splits, staging, batch_rows)
    error = _first_error(plan, summaries)
    if error is not None:
        for path in _written(summaries):
            storage.remove(f"{staging}/{path}")
        raise error
    if plan:
        written = _write_run_tables(plan, summaries, staging)
    result = _result(plan, summaries, staging, written)
    result.seconds = time.monotonic() - started
    _log_result(result)
    return result


def _absolute(location: str | os.PathLike[str]) -> str:
    """``location`` as an absolute path, or the URI it is."""
    location = str(location)
    return location.rstrip("/") if "://" in location else os.path.abspath(location)
