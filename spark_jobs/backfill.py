"""Backfill: rebuild the ``changes/`` partitions of past days from their binlogs.

A normal run (:mod:`spark_jobs.ingest`) reads what is new after the checkpoint.
A backfill run is given an interval ``[start, end)`` instead (an Airflow data
interval) and reprocesses the binlogs whose transactions committed in it:

1. **Days.** Changes are partitioned by the UTC day of their commit, so the unit
   rebuilt is a day: every day the interval touches.
2. **Files.** ``metadata/transactions`` says which binlog files hold transactions
   committed on those days; they are decoded again, whole, from the source folder.
3. **Previous state.** For each table, the state of every key when the first day
   starts is read from the warehouse's own ``changes/`` before that day: the
   latest change of each key, unless it deleted the key or moved it to another
   key (an update of the primary key). Spark computes it, and its tasks write
   it into the run's area, from which the fold's tasks read it: on a cluster
   writing an ``s3://`` warehouse, that area is in the object store, and the
   tasks read the binlogs from there too (:mod:`spark_jobs.remote_splits`), so
   the nodes need not share a folder with the driver.
4. **Fold.** The row images committed on those days are folded onto that state
   (:func:`spark_jobs.materialize.materialize`), giving the days' full
   after-images again.
5. **Publish** (:func:`spark_jobs.ingest.publish_run`): each rebuilt
   ``changes/<db>/<table>/commit_date=<day>/`` folder replaces the old one whole,
   so a backfill never adds duplicates. ``current/``, the checkpoint and the other
   metadata tables are left as they are: a backfill never moves the warehouse's
   state backwards, it only rewrites history.

Tables without a primary key are skipped (logged and listed in the run's
``skipped`` tables): the state of a multiset of indistinguishable rows at a
point in time cannot be told from its changes alone. Their partitions are left
as they were. A backfill of an interval in which nothing committed does nothing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import posixpath
import time
from datetime import date, datetime, time as clock, timedelta, timezone
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from binlog_codec.arrow import TABLE_SCHEMA
from spark_jobs import image_files, remote_splits, schema_history
from spark_jobs.decode import DEFAULT_TARGET_BYTES, TRANSACTION_SCHEMA, decode
from spark_jobs.ingest import (
    FACTS_FOLDER, RUN_FILE, IngestResult, Input, discard_run, primary_keys, publish_run, recover, run_area, run_output,
    work_folder,
)
from spark_jobs.materialize import COMMIT_DATE, ORDER, materialize
from spark_jobs.source_files import SourceFile
from warehouse import catalog, publish, storage
from warehouse.layout import path_part
from warehouse.lock import locks_warehouse, warehouse_lock

log = logging.getLogger(__name__)

BACKFILL = "backfill"


def interval_days(start: datetime, end: datetime) -> list[date]:
    """The UTC days that ``[start, end)`` touches, in order (an empty interval touches none)."""
    start, end = start.astimezone(timezone.utc), end.astimezone(timezone.utc)
    if end <= start:
        return []
    last = (end - timedelta(microseconds=1)).date()
    return [start.date() + timedelta(days=n) for n in range((last - start.date()).days + 1)]


def files_of_days(warehouse: Path, days: list[date]) -> list[str]:
    """The binlog file names holding a transaction committed on one of ``days``, from
    the transaction index (``_binlake.transactions``), in log order."""
    paths = catalog.data_files(warehouse, catalog.identifier("transactions"))
    if not paths or not days:
        return []
    index = pa.concat_tables(storage.read_parquet(path, columns=["file", "seq", "commit_ts"]) for path in paths)
    lo, hi = _day_bounds(days)
    hits = index.filter(pc.and_(pc.greater_equal(index["commit_ts"], lo), pc.less(index["commit_ts"], hi)))
    return sorted(set(hits["file"].to_pylist()), key=lambda name: (name.rsplit(".", 1)[0], name))


def _day_bounds(days: list[date]) -> tuple[pa.Scalar, pa.Scalar]:
    """The first day's start and the last day's end, as UTC timestamps."""
    kind = pa.timestamp("us", tz="UTC")
    start = datetime.combine(days[0], clock(), timezone.utc)
    end = datetime.combine(days[-1] + timedelta(days=1), clock(), timezone.utc)
    return pa.scalar(start, kind), pa.scalar(end, kind)


@locks_warehouse("backfill prepare")
def prepare_backfill(
    source: str,
    warehouse: str,
    *,
    start: datetime,
    end: datetime,
    spark,
    target_bytes: int = DEFAULT_TARGET_BYTES,
    source_key: str | None = None,
) -> IngestResult:
    """Steps 1 to 4 into the run's work folder; nothing is published (see the module text).
    The result is saved like :func:`spark_jobs.ingest.prepare`'s, so that
    :func:`~spark_jobs.ingest.validate_run` and :func:`~spark_jobs.ingest.publish_run` take it."""
    started, timer = datetime.now(timezone.utc), time.monotonic()
    root, source_key = Path(warehouse).resolve(), source_key or str(Path(source).resolve())
    recover(root)
    days = interval_days(start, end)
    names = files_of_days(root, days)
    result = IngestResult("", source=source_key, kind=BACKFILL, interval=[start.isoformat(), end.isoformat()])
    if not names:
        log.info("backfill %s - %s: no transaction committed in it", start, end)
        return result
    inputs = [Input(str(_source_file(source, name)), 0) for name in names]
    result.run_id = _run_id(days, inputs)
    result.inputs, result.started = inputs, started.isoformat()
    work = work_folder(root, result.run_id)
    result.area = area = run_area(spark, root, result.run_id)
    result.output = out = run_output(root, area, result.run_id)
    discard_run(root, result.run_id)
    log.info("backfill %s: days %s from %d files", result.run_id, ", ".join(map(str, days)), len(inputs))
    decoded = decode(spark, [i.path for i in inputs], f"{area}/staging", target_bytes,
                     locations=_task_locations(inputs, source_key, area))
    result.bytes = decoded.bytes
    keys = primary_keys(decoded)
    for (database, table), images in sorted(decoded.images.items()):
        name = f"{database}.{table}"
        key = keys.get((database, table))
        if not key:
            log.warning("%s has no primary key: its changes are not rebuilt", name)
            result.skipped.append(name)
            continue
        within = _images_on_days(images, days, f"{area}/days")
        if within:
            prior = _state_before(spark, root, database, table, key, days[0], f"{area}/prior")
            done = materialize(
                spark, within, database=database, table=table, key_columns=key, current=prior,
                target=out, scratch=area, run_name=result.run_id,
            )
            result.rows[name] = done.changes_rows
    storage.remove(f"{out}/current")  # a backfill leaves current/ as it is
    write_facts(decoded, days, set(result.rows), f"{area}/{FACTS_FOLDER}")
    for scratch in ("staging", "days", "prior", remote_splits.COPIES):
        storage.remove(f"{area}/{scratch}")
    result.checkpoint = publish.read_checkpoint(root)
    result.seconds = time.monotonic() - timer
    publish.write_atomically(work / RUN_FILE, json.dumps(result.to_json(), indent=1))
    return result


def write_facts(decoded, days: list[date], tables: set[str], folder: str) -> None:
    """What validation checks the rebuilt ``changes`` against, kept out of the published output:
    the table versions of the rebuilt ``tables`` (``db.table``), the transactions committed on
    ``days`` with their rows of those tables and the schema changes logged on ``days``
    (``metadata/table_schemas``, ``metadata/transactions`` and ``metadata/schema_changes``, as
    :func:`spark_jobs.validate.validate` reads them)."""
    def rebuilt(row: dict) -> bool:
        return f"{row['database']}.{row['table']}" in tables

    versions = [row for row in storage.read_parquet(decoded.table_schemas).to_pylist() if rebuilt(row)] \
        if decoded.table_schemas else []
    lo, hi = _day_bounds(days)
    transactions = []
    for path in decoded.transaction_files:
        index = storage.read_parquet(path)
        index = index.filter(pc.and_(pc.greater_equal(index["commit_ts"], lo), pc.less(index["commit_ts"], hi)))
        for row in index.to_pylist():
            transactions.append({**row, "rows_per_table": [entry for entry in row["rows_per_table"] if rebuilt(entry)]})
    changes = _schema_changes_on(decoded.schema_changes, lo, hi)
    for name, rows, schema in (("table_schemas", versions, TABLE_SCHEMA),
                               ("transactions", transactions, TRANSACTION_SCHEMA),
                               (schema_history.SCHEMA_CHANGES, changes, schema_history.SCHEMA_CHANGES_SCHEMA)):
        storage.write_parquet(pa.Table.from_pylist(rows, schema=schema), f"{folder}/metadata/{name}/{name}.parquet")


def _schema_changes_on(path: str | None, lo: pa.Scalar, hi: pa.Scalar) -> list[dict]:
    """The staged schema changes logged in ``[lo, hi)``."""
    if path is None:
        return []
    changes = storage.read_parquet(path)
    return changes.filter(pc.and_(pc.greater_equal(changes["_commit_ts"], lo), pc.less(changes["_commit_ts"], hi))).to_pylist()


def _source_file(source: str, name: str) -> Path:
    path = Path(source) / name
    if not path.is_file():
        raise FileNotFoundError(f"backfill needs {name}, which {source} no longer holds")
    return path


def _run_id(days: list[date], inputs: list[Input]) -> str:
    text = json.dumps([[str(day) for day in days], [(i.name, Path(i.path).stat().st_size) for i in inputs]])
    return f"{BACKFILL}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def _images_on_days(images: list[str], days: list[date], folder: str) -> list[str]:
    """Copies of the staged image files holding only the rows committed on ``days``, in the folder
    at the location ``folder``."""
    lo, hi = _day_bounds(days)
    kept = []
    for n, location in enumerate(images):
        rows = image_files.read(*storage.open_file(location))
        rows = rows.filter(pc.and_(pc.greater_equal(rows["_commit_ts"], lo), pc.less(rows["_commit_ts"], hi)))
        if rows.num_rows:
            target = f"{folder}/{n:06d}-{posixpath.basename(location)}"
            image_files.write(target, rows)
            kept.append(target)
    return kept


def _task_locations(inputs: list[Input], source_key: str, area: str) -> dict[str, str] | None:
    """Where Spark's tasks read the backfill's binlogs when they may run on nodes that share no
    folder with this one (the run's ``area`` is in an object store): see
    :func:`spark_jobs.remote_splits.split_locations`; None: at their paths here."""
    if not storage.is_object_store(area):
        return None
    files = [SourceFile(Path(each.path).name, each.path) for each in inputs]
    return remote_splits.split_locations(files, {each.path: Path(each.path).stat().st_size for each in inputs},
                                         source_key, area)


def _state_before(spark, root: Path, database: str, table: str, key: list[str], day: date, folder: str) -> list[str]:
    """The state of every key of the table when ``day`` starts, as files in the form of
    ``current`` (none when the table's ``changes`` hold no earlier day), written by the Spark
    tasks that compute it into the folder at the location ``folder`` (:func:`_written`)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    earlier = [path for path in catalog.data_files(root, catalog.changes_table(database, table))
               if Path(path).parent.name.split("=", 1)[1] < str(day)]
    if not earlier:
        return []
    rows = _read_changes(spark, root, earlier)
    moved_away = (  # an update that gives a row another key ends the old key: a tombstone for it
        rows.filter((F.col("_op") == "u") & ~F.struct(*key).eqNullSafe(F.struct(*[F.col(f"_before.{c}") for c in key])))
        .select(*[F.col(f"_before.{c}").alias(c) for c in key], *ORDER, F.lit(True).alias("__gone"))
    )
    events = rows.select("*", (F.col("_op") == "d").alias("__gone"))
    order = [F.col(name).desc_nulls_last() for name in ORDER]
    latest = (
        events.unionByName(moved_away, allowMissingColumns=True)
        .withColumn("__n", F.row_number().over(Window.partitionBy(*key).orderBy(*order)))
        .filter((F.col("__n") == 1) & ~F.col("__gone"))
        .drop("__n", "__gone", COMMIT_DATE)
    )
    return _written(spark, latest, f"{folder}/{path_part(database)}.{path_part(table)}")


def _written(spark, frame, folder: str) -> list[str]:
    """The rows of the Spark frame ``frame`` as Parquet files in the folder at the location
    ``folder``, a file per task that computes some, written by the task itself through
    ``pyarrow.fs`` (so a folder in the object store takes them from any node); their locations."""
    storage.remove(folder)  # what an earlier attempt left
    storage.share_with(spark)
    written = frame.mapInArrow(functools.partial(_write_task_rows, folder), "location string").collect()
    return sorted(row.location for row in written)


def _write_task_rows(folder: str, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One task's share of :func:`_written`: its batches as one Parquet file named after its
    partition (a retried task writes the same name again); yields the file's location, or
    nothing for a task without rows."""
    from pyspark import TaskContext

    location, sink, writer = f"{folder}/part-{TaskContext.get().partitionId():05d}.parquet", None, None
    try:
        for batch in batches:
            if batch.num_rows:
                if writer is None:
                    sink = storage.open_output(location)
                    writer = pq.ParquetWriter(sink, batch.schema)
                writer.write_batch(batch)
    finally:
        if writer is not None:
            writer.close()
            sink.close()  # the writer leaves the stream it was given open; closing it completes the file
    if writer is not None:
        yield pa.RecordBatch.from_pylist([{"location": location}])


def _read_changes(spark, root: Path, files: list[str]):
    """``changes`` files as one Spark frame: read by Spark from a local warehouse; from an object
    store (Spark has no S3 connector here) read with pyarrow and handed to Spark."""
    if storage.of(root).is_local:
        return spark.read.option("mergeSchema", "true").parquet(*files)
    return spark.createDataFrame(pa.concat_tables([storage.read_parquet(path) for path in files],
                                                  promote_options="permissive"))


def main(argv: list[str] | None = None) -> int:
    """``python -m spark_jobs.backfill``: rebuild the days of an interval, validate, publish."""
    import argparse
    import sys

    from spark_jobs.ingest import QualityFailed, validate_run
    from spark_jobs.session import build_session

    parser = argparse.ArgumentParser(prog="python -m spark_jobs.backfill", description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="folder of binlog files")
    storage.add_arguments(parser)
    parser.add_argument("--start", required=True, type=datetime.fromisoformat, help="interval start (ISO 8601, UTC)")
    parser.add_argument("--end", required=True, type=datetime.fromisoformat, help="interval end, excluded")
    parser.add_argument("--master", help="Spark master URL (default: $SPARK_MASTER, else local[*])")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    start, end = (t if t.tzinfo else t.replace(tzinfo=timezone.utc) for t in (args.start, args.end))
    warehouse = storage.from_arguments(args)
    spark = build_session(args.master, app_name="binlake backfill")
    try:
        with warehouse_lock(warehouse, purpose="backfill"):  # no other commit between prepare and publish
            prepared = prepare_backfill(args.source, warehouse, start=start, end=end, spark=spark)
            if not prepared.run_id:
                print("nothing committed in that interval")
                return 0
            validate_run(spark, warehouse, prepared.run_id)
            result = publish_run(warehouse, prepared.run_id)
    except QualityFailed as exc:
        print(exc, file=sys.stderr)
        return 3
    finally:
        spark.stop()
    print(f"backfill {result.run_id}: {sum(result.rows.values()):,} changes rebuilt "
          f"({', '.join(f'{t}: {n:,}' for t, n in sorted(result.rows.items()))}); skipped: {result.skipped or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
