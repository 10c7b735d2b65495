"""Bootstrap a warehouse from a backup image: the rows that existed before the first binlog read.

    python -m spark_jobs.bootstrap --image FILE --warehouse DIR|s3://BUCKET/PREFIX [--state DIR] --source-key URI
                                   [--master URL] [--force]

A change log needs a starting point. A backup image (WL#4063, written by
``binlog-codec backup create``) holds a consistent snapshot of tables and, in
its summary, the binlog position of its validity point: every change
committed before it is in the image, every later one in the binlog from that
position on. One bootstrap run:

1. **Plan** (driver). The image's preamble gives the tables and their CREATE
   TABLE statements, read into table maps
   (:func:`binlog_codec.create_table.table_map_of`) as the image's server
   flavour; its summary (at the image's end) gives the validity point. A
   warehouse that already has a checkpoint for ``source_key`` is refused
   (:class:`AlreadyBootstrapped`) unless ``force`` is given.
2. **Read** (Spark). The image's table data chunks are shared among the tasks
   by chunk: task *k* of *n* takes the chunks whose number in the image is *k*
   modulo *n*, so one table's chunks spread over every task and every task gets
   a share of every large table. The image format is a stream (chunks are cut
   into fragments across blocks, there is no index to seek to), so each task
   streams the whole image and decodes only its share: reading is repeated,
   decoding (the costly part) is not. Each task writes its rows as Parquet, one
   file per table, in :class:`binlog_codec.arrow.ImageBatchBuilder`'s layout,
   into the run's area (:func:`spark_jobs.ingest.run_area`); what comes back
   through Spark is one small row per (task, table). On a cluster writing an
   ``s3://`` warehouse, the area is in the object store and the driver uploads
   the image there first, which each task streams: the nodes need not share a
   folder with the driver.
3. **Materialize** (:func:`spark_jobs.materialize.materialize`) each table
   into the run's output folder (in an object store, ``data/<run id>.<attempt>/``,
   where the files stay; else ``out/`` in its work folder), on no previous state:
   ``current/<db>/<table>/`` is the snapshot, and ``changes/`` holds the same
   rows as snapshot changes.
4. **Publish** (:func:`warehouse.publish.commit`): ``current/`` of every
   table, ``metadata/table_schemas`` (one row per table, from its CREATE TABLE),
   a run record (kind ``bootstrap``) and the checkpoint
   ``{source_key: {"file": <binlog file>, "position": <binlog position>}}`` of
   the validity point, in one commit.

The next ingest of the source (``spark_jobs.ingest`` with the same source key)
starts at that checkpoint: inside the validity point's file, at its position,
so that the transactions of the file's earlier part, which the snapshot
already holds, are not applied twice.

A snapshot row is ``_op = 'r'``, with the validity point as its position:
``_binlog_file``/``_binlog_seq``/``_binlog_pos`` are the summary's binlog
file and position, ``_binlog_inner_offset`` the number of the table's chunk
the row came from and ``_row_index`` its row in that chunk (so the row
changes of a table keep a unique, ordered identity: every change after the
validity point comes later), ``_commit_ts`` the validity point's time, no
GTID, server id or XID.

With ``force``, a warehouse that has a checkpoint for the source is
bootstrapped again: each table's ``current/`` is replaced by the image's
rows (earlier ``changes/`` stay) and the checkpoint moves to the image's
position. An image table without rows gets an empty ``current/`` folder.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import logging
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.pandas.types import from_arrow_schema

from binlog_codec.arrow import TABLE_SCHEMA, ImageBatchBuilder, binlog_seq, table_schema_row
from binlog_codec.backup import BackupReader, MetadataKind, Summary, read_image
from binlog_codec.backup.create import flavour_of
from binlog_codec.create_table import table_map_of
from binlog_codec.rows import RowChange, RowRecord
from binlog_codec.snapshot_rows import decode_rows
from binlog_codec.table_map import TableMap
from spark_jobs.ingest import (
    IngestResult, Input, discard_run, merge_table_schemas, output_discarded_on_error, published_rows, recover,
    run_area, run_ordinal, run_output,
)
from spark_jobs.materialize import materialize
from spark_jobs.session import build_session
from warehouse import publish, storage
from warehouse.layout import path_part
from warehouse.lock import locks_warehouse
from warehouse.run_records import write_run_record

log = logging.getLogger("spark_jobs.bootstrap")

SNAPSHOT_KIND = "snapshot"  # binlog_codec.arrow.OPERATIONS: _op 'r'
RUN_KIND = "bootstrap"

# What a task hands back: per table it read rows of, its file and row count.
TASK_SCHEMA = pa.schema([
    pa.field("task", pa.int32()),
    pa.field("table_number", pa.int32()),
    pa.field("file", pa.string()),
    pa.field("rows", pa.int64()),
])


class AlreadyBootstrapped(RuntimeError):
    """The warehouse already has a checkpoint for the source: bootstrapping again would move it back."""


@dataclass(frozen=True)
class ImageTable:
    """One table of the image: its number in the image's table data, names and table map."""

    number: int
    database: str
    table: str
    table_map: TableMap

    @property
    def name(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def key_columns(self) -> list[str]:
        return [self.table_map.columns[index].display_name for index, _ in self.table_map.primary_key]


@dataclass(frozen=True)
class ValidityPoint:
    """Where the image's snapshot stands in the binlog, and when it was taken."""

    file: str
    position: int
    time: datetime

    @classmethod
    def of(cls, summary: Summary, image: str) -> ValidityPoint:
        if summary.binlog_file is None or summary.binlog_position is None:
            raise ValueError(f"{image}: the image's summary has no binlog position: nothing to go on from")
        return cls(summary.binlog_file, summary.binlog_position, summary.vp_time)


@dataclass
class BootstrapResult:
    """What a bootstrap did: the run, the rows of each table (``db.table``), the checkpoint."""

    run_id: str
    image: str
    flavour: str
    validity_point: dict
    rows: dict[str, int] = field(default_factory=dict)
    checkpoint: dict = field(default_factory=dict)
    seconds: float = 0.0


# -- the image's tables -----------------------------------------------------------------


def image_flavour(reader: BackupReader) -> str:
    return flavour_of(reader.header.server_version)


def image_tables(reader: BackupReader) -> list[ImageTable]:
    """Every table of every snapshot, numbered as its table data chunks are, with the table map of
    its CREATE TABLE; a table without one, or one that does not parse, is an error naming it."""
    flavour = image_flavour(reader)
    statements = {
        (item.snapshot_number, item.position): item.create_statement
        for item in reader.metadata
        if item.kind == MetadataKind.TABLE and item.create_statement
    }
    if len(reader.header.snapshots) > 1:
        raise ValueError(f"{reader.name}: {len(reader.header.snapshots)} snapshots; one is supported")
    tables = []
    for snapshot in range(1, len(reader.header.snapshots) + 1):
        for position, (db_number, table) in enumerate(reader.catalogue.snapshot_tables(snapshot)):
            database = reader.catalogue.databases[db_number].name
            statement = statements.get((snapshot, position))
            if statement is None:
                raise ValueError(f"{reader.name}: table {database}.{table.name} has no CREATE TABLE in the image")
            try:
                table_map = table_map_of(statement, database=database, flavour=flavour)
            except ValueError as exc:
                raise ValueError(f"{reader.name}: table {database}.{table.name}: {exc}") from None
            tables.append(ImageTable(position, database, table.name, table_map))
    return tables


def read_plan(image: str) -> tuple[str, list[ImageTable], ValidityPoint]:
    """The image's flavour, tables and validity point (reading to the end for the summary)."""
    with read_image(image) as reader:
        flavour, tables = image_flavour(reader), image_tables(reader)
        point = ValidityPoint.of(reader.summary, image)
    return flavour, tables, point


# -- the tasks --------------------------------------------------------------------------


def snapshot_records(table: ImageTable, data: bytes, chunk_number: int, point: ValidityPoint, flavour: str):
    """The rows of one table data chunk as row changes of kind ``snapshot`` at the validity point."""
    timestamp = int(point.time.timestamp())
    for index, row in enumerate(decode_rows(table.table_map, data, flavour=flavour)):
        yield RowRecord(
            file=point.file, pos=point.position, row_index=index, kind=SNAPSHOT_KIND,
            database=table.database, table=table.table, gtid=None, timestamp=timestamp,
            change=RowChange(SNAPSHOT_KIND, index, after=row), inner_offset=chunk_number, table_map=table.table_map,
        )


class _TableOutput:
    """One task's Parquet file of one table (at the location ``path``), written a chunk's rows at a time."""

    def __init__(self, table: ImageTable, flavour: str, path: str) -> None:
        self.builder = ImageBatchBuilder(table.table_map, flavour)
        self.path = path
        self.sink = storage.open_output(path)
        self.writer = pq.ParquetWriter(self.sink, self.builder.schema)
        self.rows = 0

    def write(self, records: Iterable[RowRecord]) -> None:
        for record in records:
            self.builder.append(record)
        self.rows += len(self.builder)
        self.writer.write_batch(self.builder.flush())

    def close(self) -> None:
        self.writer.close()
        self.sink.close()  # the writer leaves the stream it was given open; closing it completes the file


def staged_file(staging: str, table: ImageTable, name: str) -> str:
    return f"{staging}/{path_part(table.database)}/{path_part(table.table)}/{name}.parquet"


@contextmanager
def _image_at(location: str, name: str) -> Iterator[BackupReader]:
    """The image at ``location`` (the driver's file, or its copy in the object store, which a
    task on any node reaches), read as a stream; errors name ``name``, the driver's file."""
    filesystem, path = storage.open_file(location)
    with filesystem.open_input_stream(path, compression=None, buffer_size=storage.DOWNLOAD_BYTES) as stream:
        yield BackupReader(stream, name)


def read_share(image: str, name: str, staging: str, task: int, tasks: int, point: ValidityPoint) -> list[dict]:
    """Task ``task`` of ``tasks``: the image's chunks numbered ``task`` modulo ``tasks`` into one
    Parquet file per table (``image``: its location, ``name``: the driver's file; ``staging``: a
    location); one summary row per table it wrote."""
    started = time.monotonic()
    outputs: dict[int, _TableOutput] = {}
    with _image_at(image, name) as reader:
        flavour, tables = image_flavour(reader), {table.number: table for table in image_tables(reader)}
        chunk_numbers: dict[int, int] = {}  # per table: the number of its next chunk
        try:
            for ordinal, chunk in enumerate(reader.table_data()):
                chunk_number = chunk_numbers.get(chunk.table_number, 0)
                chunk_numbers[chunk.table_number] = chunk_number + 1
                if ordinal % tasks != task or not chunk.data:
                    continue
                table = tables[chunk.table_number]
                output = outputs.get(table.number)
                if output is None:
                    output = outputs[table.number] = _TableOutput(
                        table, flavour, staged_file(staging, table, f"part-{task:05d}")
                    )
                output.write(snapshot_records(table, chunk.data, chunk_number, point, flavour))
        finally:
            for output in outputs.values():
                output.close()
    log.info("task %d/%d: %d rows of %d tables in %.1f s", task + 1, tasks,
             sum(o.rows for o in outputs.values()), len(outputs), time.monotonic() - started)
    return [
        {"task": task, "table_number": number, "file": output.path, "rows": output.rows}
        for number, output in sorted(outputs.items())
    ]


def _read_tasks(batches, image: str, name: str, staging: str, tasks: int, point: ValidityPoint) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function: task numbers in, one row per (task, table) out."""
    for batch in batches:
        for task in batch.column("id").to_pylist():
            rows = read_share(image, name, staging, task, tasks, point)
            yield pa.RecordBatch.from_pylist(rows, schema=TASK_SCHEMA)


def read_image_rows(spark, image: str, name: str, staging: str, point: ValidityPoint, tasks: int) -> list[dict]:
    """Step 2: every task's share of the image's rows (at the location ``image``; ``name``: the
    driver's file), staged into the folder at the location ``staging``; the task summaries."""
    storage.share_with(spark)
    reading = functools.partial(_read_tasks, image=image, name=name, staging=staging, tasks=tasks, point=point)
    frame = spark.range(tasks, numPartitions=tasks)
    return frame.mapInArrow(reading, from_arrow_schema(TASK_SCHEMA)).toArrow().to_pylist()


# -- the driver -------------------------------------------------------------------------


def run_id_of(image: Path, point: ValidityPoint) -> str:
    """A name derived from the image: its name and size and its validity point."""
    text = json.dumps([image.name, image.stat().st_size, point.file, point.position])
    return "bootstrap-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def _empty_file(table: ImageTable, flavour: str, staging: str) -> str:
    """A table without rows: a Parquet file of its schema and no rows, so that it gets a ``current/``."""
    location = staged_file(staging, table, "empty")
    storage.write_parquet(pa.Table.from_batches([ImageBatchBuilder(table.table_map, flavour).build()]), location)
    return location


def _table_schemas(root: Path, out: str, run_id: str, tables: Sequence[ImageTable], flavour: str,
                   point: ValidityPoint, rows: dict[str, int]) -> None:
    """``metadata/table_schemas``: one row per table version of the image, at the validity point, merged
    with the warehouse's rows (:func:`spark_jobs.ingest.merge_table_schemas`)."""
    place = {"file": point.file, "seq": binlog_seq(point.file), "pos": point.position, "inner_offset": None,
             "run": run_ordinal(root)}
    new = [
        {
            **table_schema_row(table.table_map, flavour),
            **{f"first_{key}": value for key, value in place.items()},
            **{f"last_{key}": value for key, value in place.items()},
            "rows": rows[table.name],
        }
        for table in tables
    ]
    earlier = published_rows(root, "table_schemas")
    target = f"{out}/metadata/table_schemas/{run_id}.parquet"  # replaces the table
    storage.write_parquet(pa.Table.from_pylist(merge_table_schemas(earlier, new), schema=TABLE_SCHEMA), target)


def _check_not_bootstrapped(checkpoint: dict, source_key: str, force: bool) -> None:
    if source_key in checkpoint and not force:
        raise AlreadyBootstrapped(
            f"the warehouse already has a checkpoint for {source_key}: {checkpoint[source_key]}; bootstrapping "
            "again would replace current/ and move the checkpoint back (pass force / --force to do it anyway)"
        )


def _materialize(
    spark, tables: Sequence[ImageTable], staged: dict[int, list[str]], rows: dict[str, int], out: str, run_id: str,
    scratch: str,
) -> None:
    """Step 3: each table's staged rows into the run's output folder at the location ``out``
    (scratch files in ``scratch``), on no previous state. As the ingest does, tables
    are submitted from several driver threads (up to twice the Spark slots, the largest first), each
    with a session of its own, so that one table's narrow stages leave no slot idle."""

    def one(table: ImageTable) -> None:
        done = materialize(
            spark.newSession(), staged[table.number], database=table.database, table=table.table,
            key_columns=table.key_columns, current=[], target=out, scratch=scratch, run_name=run_id,
        )
        log.info("%s: %d snapshot rows into current/", table.name, done.current_rows)

    threads = max(1, min(len(tables), 2 * spark.sparkContext.defaultParallelism))
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="materialize") as pool:
        for future in [pool.submit(one, table) for table in sorted(tables, key=lambda t: -rows[t.name])]:
            future.result()


def _image_for_tasks(image: Path, area: str) -> str:
    """Where Spark's tasks read the image: where it is, unless the run's ``area`` is in the object
    store (a cluster whose nodes may share no folder with this one, :func:`spark_jobs.ingest.run_area`):
    then a copy uploaded there, which each task streams."""
    if not storage.is_object_store(area):
        return str(image)
    location = f"{area}/image/{image.name}"
    log.info("%s: %d bytes copied to %s for the cluster's tasks", image, image.stat().st_size, location)
    storage.copy_file(str(image), location)
    return location


@locks_warehouse("bootstrap")
def bootstrap(spark, image_path: str, warehouse: str, *, source_key: str, force: bool = False,
              tasks: int | None = None) -> BootstrapResult:
    """Bootstrap ``warehouse`` from the backup image at ``image_path`` (see the module docstring);
    ``source_key`` is the binlog source the image's position belongs to (the checkpoint's key,
    as :func:`spark_jobs.ingest.ingest` is given it). ``tasks``: Spark tasks reading the image
    (default: the default parallelism)."""
    started, clock = datetime.now(timezone.utc), time.monotonic()
    image, root = Path(image_path).resolve(), Path(warehouse).resolve()
    recover(root)
    checkpoint = publish.read_checkpoint(root)
    _check_not_bootstrapped(checkpoint, source_key, force)
    flavour, tables, point = read_plan(str(image))
    run_id = run_id_of(image, point)
    area = run_area(spark, root, run_id)
    discard_run(root, run_id)
    staging, out = f"{area}/staging", run_output(root, area, run_id)
    tasks = max(1, tasks or spark.sparkContext.defaultParallelism)
    log.info("run %s: %d tables of %s (%s), validity point %s:%d, %d tasks",
             run_id, len(tables), image, flavour, point.file, point.position, tasks)
    summaries = read_image_rows(spark, _image_for_tasks(image, area), str(image), staging, point, tasks)
    staged: dict[int, list[str]] = {table.number: [] for table in tables}
    rows: dict[str, int] = {table.name: 0 for table in tables}
    by_number = {table.number: table for table in tables}
    for summary in summaries:
        staged[summary["table_number"]].append(summary["file"])
        rows[by_number[summary["table_number"]].name] += summary["rows"]
    for table in tables:
        if not staged[table.number]:
            staged[table.number].append(_empty_file(table, flavour, staging))
    with output_discarded_on_error(out):
        _materialize(spark, tables, staged, rows, out, run_id, area)
    _table_schemas(root, out, run_id, tables, flavour, point, rows)
    new_checkpoint = {**checkpoint, source_key: {"file": point.file, "position": point.position}}
    record = IngestResult(
        run_id, [Input(str(image), 0)], rows=rows, bytes=image.stat().st_size, checkpoint=new_checkpoint,
        seconds=time.monotonic() - clock, source=source_key, ends={image.name: image.stat().st_size},
        started=started.isoformat(), kind=RUN_KIND,
    )
    write_run_record(out, record)
    publish.commit(root, out, run_id, checkpoint=new_checkpoint)
    discard_run(root, run_id)
    result = BootstrapResult(
        run_id, str(image), flavour, {"file": point.file, "position": point.position, "time": point.time.isoformat()},
        rows, new_checkpoint, time.monotonic() - clock,
    )
    log.info("run %s published: %d rows of %d tables in %.1f s; checkpoint of %s: %s:%d", run_id,
             sum(rows.values()), len(tables), result.seconds, source_key, point.file, point.position)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.bootstrap", description=__doc__.splitlines()[0])
    parser.add_argument("--image", required=True, help="backup image file (binlog-codec backup create)")
    storage.add_arguments(parser)
    parser.add_argument("--source-key", required=True,
                        help="the binlog source the image's position belongs to, as the ingest names it")
    parser.add_argument("--master", help="Spark master URL (default: $SPARK_MASTER, else local[*])")
    parser.add_argument("--force", action="store_true", help="bootstrap even if the source has a checkpoint")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    spark = build_session(args.master, app_name="binlake bootstrap")
    try:
        result = bootstrap(spark, args.image, storage.from_arguments(args), source_key=args.source_key,
                           force=args.force)
    except AlreadyBootstrapped as exc:
        print(f"bootstrap: {exc}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    print(f"run {result.run_id}: {sum(result.rows.values()):,} rows of {len(result.rows)} tables "
          f"in {result.seconds:.1f} s; checkpoint {result.checkpoint[args.source_key]}")
    for table, count in sorted(result.rows.items()):
        print(f"  {table}: {count:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
