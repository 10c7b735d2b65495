"""The whole pipeline without Airflow: binlog files in, a published warehouse run out.

    python -m spark_jobs.ingest --source DIR --warehouse DIR|s3://BUCKET/PREFIX [--state DIR] [--stream NAME]
                                [--master URL] [--split-mb 64]

(or the same arguments to ``spark-submit spark_jobs/ingest.py``). One run:

1. **Recover and read the checkpoint.** A commit a dead run left half done is
   finished first (:func:`warehouse.publish.recover`); the checkpoint says,
   per stream (:mod:`spark_jobs.streams`), the files read by their identity,
   the last file and position, and the GTID set read.
2. **Plan.** The source folder's binlog files (:mod:`spark_jobs.source_files`:
   compressed ones decompressed, look-alikes reported) that continue the
   stream, in log order, and the transactions among them already read (by
   GTID). A gap, a replaced file, reused GTIDs or files another stream has
   read stop the run here with a :class:`~spark_jobs.positions.ContinuityError`
   naming the problem and the way forward (``--accept-gap``,
   ``--accept-new-series``: the user's decision, kept in the run record).
3. **Decode** (:mod:`spark_jobs.decode`) into the run's staging folder.
4. **Materialize** each table (:mod:`spark_jobs.materialize`): its changes are
   folded onto the warehouse's ``current`` rows, following its schema changes
   (:mod:`spark_jobs.version_lineage`). A type change whose conversion binlake
   does not follow stops the run with a
   :class:`~spark_jobs.materialize.SchemaConflict` naming the table, the column,
   both types and the way forward (``--accept-type-change db.table``, kept in
   the run record, or a bootstrap from a snapshot).
5. **Validate** (:mod:`spark_jobs.validate`): Great Expectations over the run's
   output; a failed expectation fails the run and nothing is published.
6. **Publish** (:mod:`warehouse.publish`): changes, current, the metadata
   tables, the run record and the new checkpoint, in one commit.

Steps 1-4 are :func:`prepare`, 5 is :func:`validate_run` and 6 is
:func:`publish_run`: the Airflow DAG runs them as separate tasks, handing the
run id from one to the next (the run's state is kept in its work folder,
``_runs/<run id>/``); :func:`ingest` runs all of them. A run that does not
publish leaves a record outside the commit (:mod:`warehouse.refusals`): its
refusal, or its failure with the step and first error; the run record and the
failure name the Airflow run (``--airflow-run``, by default the one whose task
runs the job) and what the run saw of the source's newest event.

A run's name is derived from the stream and the transactions it holds (the
files' identities, the byte ranges read, the GTID set after it), never from
paths (:meth:`spark_jobs.streams.StreamPlan.run_id`). A run that fails before
its commit publishes nothing and leaves the checkpoint where it was.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import posixpath
import shutil
import sys
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Sequence

import pyarrow as pa

from binlog_codec.arrow import TABLE_SCHEMA
from spark_jobs import remote_splits, schema_history, version_lineage
from spark_jobs.decode import DEFAULT_TARGET_BYTES, DecodeResult, decode
from spark_jobs.expectations import verdict
from spark_jobs.materialize import Inherited, SchemaConflict, materialize
from spark_jobs.positions import ContinuityError, after_checkpoint
from spark_jobs.session import DRIVER_MEMORY, build_session, spark_failure, stop
from spark_jobs.source_files import list_source, plain_binlogs
from spark_jobs.splits import scan_ahead, scanned_file
from spark_jobs.table_names import RUN
from spark_jobs.streams import (
    ACCEPT_GAP_CHOICE, ACCEPT_NEW_SERIES_CHOICE, StreamPlan, StreamState, default_stream, plan_stream, position_text,
)
from warehouse import catalog, publish, refusals, storage
from warehouse.layout import INFLATED_FOLDER, RUNS_FOLDER, output_folder
from warehouse.lock import locks_warehouse
from warehouse.run_records import write_run_record

log = logging.getLogger("spark_jobs.ingest")
SPARK_FAILED = 5  # exit status when Spark itself failed: its driver JVM out of memory, or dead

# The user's choice, for one run, to take a table's type changes binlake does not follow
# without the server's conversion (the rows from before hold the column unknown): the prefix,
# then ``db.table``.
ACCEPT_TYPE_CHANGE = "type-change:"


def type_changes_accepted(accept: Sequence[str]) -> frozenset[str]:
    """The tables (``db.table``) whose type changes ``accept`` takes (:data:`ACCEPT_TYPE_CHANGE`)."""
    return frozenset(choice[len(ACCEPT_TYPE_CHANGE):] for choice in accept if choice.startswith(ACCEPT_TYPE_CHANGE))
RUN_FILE = "run.json"
FACTS_FOLDER = "facts"  # in a backfill's work folder: what validation checks its output against
AIRFLOW_DAG_ID, AIRFLOW_RUN_ID = "AIRFLOW_CTX_DAG_ID", "AIRFLOW_CTX_DAG_RUN_ID"  # what Airflow exports to a task


@dataclass(frozen=True)
class Input:
    """One binlog file of a run and where reading it starts."""

    path: str
    start: int

    @property
    def name(self) -> str:
        return Path(self.path).name


@dataclass
class IngestResult:
    """What a run did; ``run_id`` is empty when there was nothing new.

    ``ends`` gives, per input file name, the position the run read it up to
    (the end of its last complete transaction); ``quality`` is the outcome of
    the validation (:meth:`spark_jobs.validate.QualityOutcome.to_json`), None
    when the run was not validated. ``kind`` is ``ingest``, or ``backfill`` for
    a run of :mod:`spark_jobs.backfill` (with its ``interval`` and the tables it
    ``skipped``). ``stream`` owns the checkpoint (``start_position``: its entry the run was planned
    from); ``continuity`` is ``gtid`` or ``file-position``, ``gtids`` the stream's GTID set after
    the run, ``accepted`` what the user accepted for it (a gap, a new series), ``notices`` what
    the planning noticed without stopping, and
    ``skipped_transactions`` how many transactions were already read (by GTID). ``airflow_run`` is
    the Airflow run it belongs to (``dag_id/run_id``, None outside Airflow) and ``seen`` what it saw
    of the source's newest event (:func:`source_seen`). ``area`` is where the run keeps its staging
    (:func:`run_area`), ``output`` where it writes its files (:func:`run_output`).
    """

    run_id: str
    inputs: list[Input] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    checkpoint: dict = field(default_factory=dict)
    seconds: float = 0.0
    source: str = ""
    ends: dict[str, int] = field(default_factory=dict)
    started: str = ""
    quality: dict | None = None
    kind: str = "ingest"
    interval: list[str] | None = None
    skipped: list[str] = field(default_factory=list)
    start_position: dict | None = None
    stream: str = ""
    continuity: str = ""
    gtids: str | None = None
    accepted: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    skipped_transactions: int = 0
    airflow_run: str | None = None
    seen: dict | None = None
    area: str = ""
    output: str = ""

    def to_json(self) -> dict:
        """JSON-serialisable; :meth:`from_json` reads it back."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "IngestResult":
        return cls(**{**data, "inputs": [Input(**i) for i in data["inputs"]]})


class StaleRun(RuntimeError):
    """The run was planned from a checkpoint another run has moved since: publishing it would add
    its changes a second time. Nothing was published; the run must be prepared again."""


class QualityFailed(RuntimeError):
    """The run's data failed validation: nothing was published."""

    def __init__(self, run_id: str, quality: dict) -> None:
        failures = [f"{t['database']}.{t['table']}: {line}" for t in quality["tables"] for line in t["failures"]]
        super().__init__(f"run {run_id} failed validation, nothing published:\n  " + "\n  ".join(failures))
        self.quality = quality
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        self.first_error = f"failed validation: {failures[0]}{more}" if failures else "failed validation"


def discover(source: str | os.PathLike[str], position: dict | None) -> list[Input]:
    """The plain binlog files of the source folder after the committed ``position`` by their names
    alone (``{"file": name, "position": n}``; None: from the start), for scans started ahead; the
    run itself plans with :func:`spark_jobs.streams.plan_stream`."""
    files = plain_binlogs(source)
    pending = after_checkpoint(
        files, position, name=lambda f: f.name, size=lambda f: os.path.getsize(f.path), where=str(source),
        accept_gap=True,
    )
    return [Input(file.path, start) for file, start in pending]


def primary_keys(decoded: DecodeResult) -> dict[tuple[str, str], list[str]]:
    """Per table of a decoded run, the primary key columns of its latest table version (none: key
    on every column)."""
    return latest_keys(_staged_rows(decoded.table_schemas))


def latest_keys(versions: Iterable[dict]) -> dict[tuple[str, str], list[str]]:
    """Per table, the primary key columns of its latest version among ``table_schemas`` rows (the
    last seen: by run, then position)."""
    keys: dict[tuple[str, str], list[str]] = {}
    for version in sorted(versions, key=lambda v: (-1 if v.get("last_run") is None else v["last_run"],
                                                   v["last_seq"] or 0, v["last_pos"] or 0)):
        keys[(version["database"], version["table"])] = [part["column"] for part in version["primary_key"]]
    return keys


def tables_changed(changes: Iterable[dict], root: Path) -> set[tuple[str, str]]:
    """The tables ``schema_changes`` rows change: of the warehouse's (those with a ``current``
    table in the catalog), the table a row names and every table of a dropped database; and the
    new name of a table renamed (it takes over the rows)."""
    found, renamed = set(), set()
    for row in changes:
        if row["table"] is not None:
            found.add((row["database"], row["table"]))
            renamed |= {(database or row["database"], name) for database, name in schema_history.renamed_to(row)}
        elif row["change"] == schema_history.DATABASE_DROPPED and row["database"] is not None:
            found |= {(row["database"], name) for name in catalog.tables_of_database(root, row["database"])}
    return {key for key in found if catalog.data_files(root, catalog.current_table(*key))} | renamed


def _copy_metadata(decoded: DecodeResult, schemas: RunSchemas, out: str, run_id: str) -> None:
    """The transaction index, the schema changes and the charset checks under names derived from
    the run; the table versions merged with the warehouse's (:func:`merge_table_schemas`) and named
    by their DDL over the whole schema history (:func:`spark_jobs.schema_history.name_versions`),
    to replace them. ``out``: the location of the run's output folder."""
    for path in decoded.transaction_files:
        storage.copy_file(path, f"{out}/metadata/transactions/{posixpath.basename(path)}")
    if decoded.charset_checks is not None:
        storage.copy_file(decoded.charset_checks, f"{out}/metadata/charset_checks/{run_id}.parquet")
    if decoded.schema_changes is not None:  # with the run's ordinal
        changes = pa.Table.from_pylist(schemas.staged_changes, schema=schema_history.SCHEMA_CHANGES_SCHEMA)
        storage.write_parquet(changes, f"{out}/metadata/{schema_history.SCHEMA_CHANGES}/"
                                       f"{posixpath.basename(decoded.schema_changes)}")
    if decoded.table_schemas is not None or schemas.derived:
        named = schema_history.name_versions(schemas.versions, schemas.history)  # replaces the table
        storage.write_parquet(pa.Table.from_pylist(named, schema=TABLE_SCHEMA),
                              f"{out}/metadata/table_schemas/{run_id}.parquet")


@dataclass(frozen=True)
class RunSchemas:
    """The table versions and schema changes of the warehouse with a run's: ``run`` (the run's
    ordinal, :func:`run_ordinal`), ``published`` (the ``table_schemas`` rows before the run),
    ``versions`` (merged with the run's, and with the versions derived from ALTER statements no
    row change followed, ``derived``), ``history`` (every ``schema_changes`` row) and
    ``staged_changes`` (the run's)."""

    run: int
    published: list[dict]
    versions: list[dict]
    derived: list[dict]
    history: list[dict]
    staged_changes: list[dict]


def run_ordinal(root: Path) -> int:
    """The ordinal of the next run of the warehouse: the number of runs it has published."""
    return len(catalog.data_files(root, catalog.identifier("runs")))


def run_schemas(decoded: DecodeResult, root: Path) -> RunSchemas:
    """The run's :class:`RunSchemas`. The run's own schema changes and table versions take the
    run's ordinal (``_run``, ``first_run``/``last_run``): they come after those of every run
    before, whatever their positions."""
    run, published = run_ordinal(root), published_rows(root, "table_schemas")
    staged_changes = [{**row, RUN: run} for row in _staged_rows(decoded.schema_changes)]
    history = published_rows(root, schema_history.SCHEMA_CHANGES) + staged_changes
    staged = [{**row, "first_run": run, "last_run": run} for row in _staged_rows(decoded.table_schemas)]
    versions = merge_table_schemas(published, staged)
    derived = version_lineage.derived_versions(versions, history)
    if derived:
        versions = merge_table_schemas(versions, derived)
        log.info("table versions derived from ALTER TABLE statements no row change followed: %s",
                 ", ".join(f"{v['database']}.{v['table']}" for v in derived))
    return RunSchemas(run, published, versions, derived, history, staged_changes)


def published_rows(root: Path, table: str) -> list[dict]:
    """The rows of the warehouse's metadata table ``_binlake.<table>``, file by file in name order."""
    return [row for path in catalog.data_files(root, catalog.identifier(table)) for row in storage.read_parquet(path).to_pylist()]


def _staged_rows(location: str | None) -> list[dict]:
    return [] if location is None else storage.read_parquet(location).to_pylist()


def merge_table_schemas(earlier: list[dict], new: list[dict]) -> list[dict]:
    """One row per table version (``schema_id``) over every run, in the order of the runs and
    positions that first saw them: a version already known keeps its first position (and run)
    and its ``ddl`` and takes the new run's last position (and run), its row counts added
    up (a known version without a ``ddl`` gets none from the new run: that run's is named after
    its later first row; :func:`~spark_jobs.schema_history.name_versions` names it from the whole
    history)."""
    rows = {row["schema_id"]: dict(row) for row in earlier}
    for row in new:
        known = rows.get(row["schema_id"])
        if known is None:
            rows[row["schema_id"]] = dict(row)
        else:
            known.update({key: value for key, value in row.items() if key.startswith("last_")})
            known["rows"] = (known["rows"] or 0) + (row["rows"] or 0)
    return sorted(rows.values(), key=lambda r: (
        -1 if r.get("first_run") is None else r["first_run"], r["first_seq"] or 0, r["first_file"] or "",
        r["first_pos"] or 0, r["first_inner_offset"] or 0,
    ))


def _materialize_tables(spark, decoded: DecodeResult, schemas: RunSchemas, root: Path, out: str, area: str,
                        run_id: str, retype: frozenset[str] = frozenset()) -> tuple[dict[str, int], list[str]]:
    """Every table of the run materialized into ``out`` (scratch files in the run's ``area``);
    changes per table. Tables are submitted
    from several driver threads at once (up to twice the Spark slots), the largest first, so that
    Spark runs one table's tasks in the slots another table's driver-side steps or last tasks
    leave idle, and the longest table is not the last to start. A table is cut into buckets (fold
    tasks) only where it holds more than one slot's share of the run's row changes. A table of the
    warehouse a schema change of the run changes is materialized too, without row changes: its
    ``current`` follows the change. ``retype``: the tables (``db.table``) whose type changes the
    user accepted for this run (:data:`ACCEPT_TYPE_CHANGE`). Returns the changes per table and
    what was accepted."""

    keys = latest_keys(schemas.versions)
    images = {key: [] for key in tables_changed(schemas.staged_changes, root)} | decoded.images

    def current_files(database: str, table: str) -> list[str]:
        return catalog.data_files(root, catalog.current_table(database, table))

    accepted: list[str] = []

    def one(table_key: tuple[str, str], images: list[str]) -> int:
        database, table = table_key
        lineage = version_lineage.table_lineage(schemas.versions, schemas.history, database, table, schemas.published,
                                                run=schemas.run, retype=f"{database}.{table}" in retype)
        segments = [] if lineage is None else lineage.names.inherited()
        inherited = [Inherited(decoded.images.get((database, segment.name), []),
                               current_files(database, segment.name) if along else [],
                               segment.start, segment.end) for segment, along in segments]
        current = current_files(database, table)
        if not images and not any(each.staged or each.current for each in inherited) and not current:
            return 0  # renamed to a name the warehouse has no rows of yet
        names = [table] + [segment.name for segment, _ in reversed(segments)]  # its key: the latest name's
        done = materialize(
            spark, images, database=database, table=table,
            key_columns=next((keys[database, name] for name in names if (database, name) in keys), None),
            current=current, target=out, scratch=area, run_name=run_id, slot_rows=slot_rows, lineage=lineage,
            inherited=inherited,
        )
        log.info("%s.%s: %d changes, %d current rows", database, table, done.changes_rows, done.current_rows)
        if lineage is not None and lineage.retyped:
            accepted.append(f"type change of {database}.{table} without the server's conversion: " + ", ".join(
                f"{column} {old} to {new}" for column, (old, new) in sorted(lineage.retyped.items())))
        return done.changes_rows

    tables = sorted(images.items(), key=lambda item: (-decoded.rows.get(item[0], 0), item[0]))
    slots = max(1, spark.sparkContext.defaultParallelism)
    slot_rows = max(1, -(-sum(decoded.rows.values()) // slots))  # one slot's share of the run's row changes
    threads = min(len(tables), 2 * slots)
    with ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="materialize") as pool:
        futures = [(table_key, pool.submit(one, table_key, images)) for table_key, images in tables]
        rows = {f"{database}.{table}": future.result() for (database, table), future in sorted(futures)}
    return rows, sorted(accepted)


def airflow_run_of_context() -> str | None:
    """The Airflow run this process is a task of (``dag_id/run_id``, from the variables Airflow
    exports to a task's environment), None outside Airflow."""
    dag_id, run_id = os.environ.get(AIRFLOW_DAG_ID), os.environ.get(AIRFLOW_RUN_ID)
    return f"{dag_id}/{run_id}" if dag_id and run_id else None


def source_seen(plan: StreamPlan, scans: dict[str, Future]) -> dict | None:
    """What a run saw of its source's end: the last file it planned (``file``, ``size``) and the
    commit time of the newest transaction in the files it scanned (``event_time``, ISO 8601 UTC;
    None without a complete one). The binlake view sets it against the checkpoint's last commit
    time: the stream's lag in time."""
    if not plan.reads:
        return None
    times = [transaction.ending.timestamp for read in plan.reads
             for transaction in scans[read.file.path].result()[1] if transaction.ending is not None]
    last = plan.reads[-1]
    event = datetime.fromtimestamp(max(times), timezone.utc).isoformat() if times else None
    return {"file": last.file.name, "size": last.size, "event_time": event}


def work_folder(warehouse: str | os.PathLike[str], run_id: str) -> Path:
    """Where, in the warehouse's state folder, a run in progress keeps its ``run.json``."""
    return Path(warehouse).resolve() / RUNS_FOLDER / run_id


def run_area(spark, warehouse: str | os.PathLike[str], run_id: str) -> str:
    """Where a run keeps its staging and its not yet published output (``out/``): its work folder,
    on the machine that runs the job, when Spark's tasks run there too (a ``local`` master) or the
    warehouse is a local folder (which a cluster's nodes then share); else ``_runs/<run id>`` in
    the warehouse's object store, which the tasks of a cluster reach from any node."""
    files = storage.of(warehouse)
    if files.is_local or spark.sparkContext.master.startswith("local"):
        return str(work_folder(warehouse, run_id))
    return files.location(f"{RUNS_FOLDER}/{run_id}")


def area_of(warehouse: str | os.PathLike[str], result: IngestResult) -> str:
    """The area the prepared run ``result`` was given (:func:`run_area`)."""
    return result.area or str(work_folder(warehouse, result.run_id))


def run_output(warehouse: str | os.PathLike[str], area: str, run_id: str) -> str:
    """Where a run writes the files it publishes, laid out like the warehouse: in an object store,
    an output folder of its own in the warehouse's storage (:func:`warehouse.layout.output_folder`,
    new for each attempt), where Spark's tasks write each file once and the commit registers it;
    in a local warehouse, ``out/`` in its ``area``, renamed into place by the commit."""
    files = storage.of(warehouse)
    if files.is_local:
        return f"{area}/out"
    return files.location(output_folder(run_id, uuid.uuid4().hex[:12]))


def output_of(warehouse: str | os.PathLike[str], result: IngestResult) -> str:
    """Where the prepared run ``result`` wrote its files (:func:`run_output`)."""
    return result.output or f"{area_of(warehouse, result)}/out"


@contextmanager
def output_discarded_on_error(output: str):
    """Remove the files written so far into the run's output folder ``output`` if the block
    fails (:func:`discard_output`)."""
    try:
        yield
    except BaseException:
        discard_output(output)
        raise


def discard_output(output: str) -> None:
    """Remove a run's output folder in the object store (:func:`run_output`) whose run is not
    published and never will be (an output in a work folder goes with it, :func:`discard_run`)."""
    if storage.is_object_store(output):
        storage.remove(output)


def discard_run(warehouse: str | os.PathLike[str], run_id: str) -> None:
    """Remove what a run in progress keeps: its work folder, and its area in an object store."""
    shutil.rmtree(work_folder(warehouse, run_id), ignore_errors=True)
    files = storage.of(warehouse)
    if not files.is_local:
        storage.remove(files.location(f"{RUNS_FOLDER}/{run_id}"))


@locks_warehouse("prepare")
def prepare(
    source: str,
    warehouse: str,
    *,
    spark,
    target_bytes: int = DEFAULT_TARGET_BYTES,
    source_key: str | None = None,
    stream: str | None = None,
    accept: Sequence[str] = (),
    scanned: dict[str, Future] | None = None,
    airflow_run: str | None = None,
) -> IngestResult:
    """Steps 1 to 4: decode and materialize the new input into the run's work folder, publish
    nothing. ``source_key`` names the source (default: the resolved folder; the DAGs pass the
    object-store URI the folder was staged from); ``stream`` owns the checkpoint (default: from
    the source, :func:`spark_jobs.streams.default_stream`); ``accept``: the user's decisions for
    this run (``gap``, ``new-series``). The result is also saved as ``run.json`` in the work
    folder, for :func:`publish_run` in another process. ``scanned``: transaction scans of the
    input started ahead (:func:`pending_scans`); ``airflow_run``: the Airflow run it belongs to
    (``dag_id/run_id``; default: the one this process is a task of). Raises a
    :class:`~spark_jobs.positions.ContinuityError` when the source does not continue the stream
    (kept as the stream's refusal); any other error is kept as the run's failure
    (:mod:`warehouse.refusals`)."""
    started, clock = datetime.now(timezone.utc), time.monotonic()
    source_key, root = source_key or str(Path(source).resolve()), Path(warehouse).resolve()
    stream = stream or default_stream(source_key)
    recover(root)
    checkpoint = publish.read_checkpoint(root)
    attempt = refusals.Attempt(root, stream, source_key, airflow_run or airflow_run_of_context())
    with attempt.step("plan"):
        plan, scans = plan_run(source, root, checkpoint, stream=stream, source_key=source_key, accept=accept,
                               scanned=scanned)
    refusals.clear(root, stream)  # the source continues the stream now: no decision is waiting
    if not plan.reads:
        log.info("stream %s: nothing new in %s after %s", stream, source, position_text(checkpoint.get(stream)))
        refusals.clear_failures(root, stream)
        return IngestResult("", checkpoint=checkpoint, source=source_key, stream=stream)
    attempt.run_id, attempt.seen = plan.run_id(), source_seen(plan, scans)
    result = IngestResult(attempt.run_id, [Input(read.file.path, read.start) for read in plan.reads],
                          source=source_key, started=started.isoformat(), stream=stream,
                          continuity=plan.state.continuity, gtids=plan.state.gtids, accepted=plan.accepted,
                          notices=plan.notices, skipped_transactions=plan.skipped, airflow_run=attempt.airflow_run,
                          seen=attempt.seen)
    work = work_folder(root, result.run_id)
    result.area = area = run_area(spark, root, result.run_id)
    discard_run(root, result.run_id)
    log.info("run %s of stream %s (%s): %d files from %s, %d transactions already read skipped", result.run_id,
             stream, plan.mode, len(result.inputs), source, plan.skipped)
    with attempt.step("decode"):
        decoded = _decode_plan(spark, plan, scans, area, target_bytes, _task_locations(plan, source_key, area))
    result.notices += schema_history.warn_not_understood(_staged_rows(decoded.schema_changes))
    result.bytes = decoded.bytes
    result.ends = {read.file.name: read.resume for read in plan.reads}
    result.output = out = run_output(root, area, result.run_id)
    with attempt.step("materialize"), output_discarded_on_error(out):
        schemas = run_schemas(decoded, root)
        result.rows, retyped = _materialize_tables(spark, decoded, schemas, root, out, area, result.run_id,
                                                   type_changes_accepted(accept))
        result.accepted += retyped
        _copy_metadata(decoded, schemas, out, result.run_id)
    storage.remove(f"{area}/staging")
    storage.remove(f"{area}/{remote_splits.COPIES}")
    result.checkpoint = {**checkpoint, stream: plan.state.to_json()}
    result.start_position = checkpoint.get(stream)
    result.seconds = time.monotonic() - clock
    publish.write_atomically(work / RUN_FILE, json.dumps(result.to_json(), indent=1))
    return result


def _task_locations(plan: StreamPlan, source_key: str, area: str) -> dict[str, str] | None:
    """Where Spark's tasks read the run's binlog files (:func:`spark_jobs.remote_splits.split_locations`)
    when they may run on nodes that share no folder with this one (the run's ``area`` is in an
    object store, :func:`run_area`); None: at their paths here."""
    if not storage.is_object_store(area):
        return None
    return remote_splits.split_locations([read.file for read in plan.reads],
                                         {read.file.path: read.size for read in plan.reads}, source_key, area)


def _decode_plan(spark, plan: StreamPlan, scans: dict[str, Future], area: str, target_bytes: int,
                 locations: dict[str, str] | None) -> DecodeResult:
    """The planned reads decoded into the run's staging folder, exactly as far as planned (a file
    written on meanwhile is read to its planned size); a run whose decoded ends differ from its
    plan fails: the checkpoint could otherwise fall short of what was published or pass it.
    ``locations``: where the tasks read the files (:func:`_task_locations`)."""
    decoded = decode(
        spark, [read.file.path for read in plan.reads], f"{area}/staging", target_bytes, locations=locations,
        start_positions={read.file.path: read.start for read in plan.reads}, scanned=scans,
        skipped={read.file.path: read.skipped for read in plan.reads},
        sizes={read.file.path: read.size for read in plan.reads},  # a file written meanwhile: what was planned
    )
    planned = {read.file.path: read.resume for read in plan.reads}
    if decoded.resume_positions != planned:  # never checkpoint past or short of what was decoded
        raise RuntimeError(f"run {plan.run_id()}: decoded up to {decoded.resume_positions}, planned {planned}; "
                           "nothing published, run again")
    return decoded


def inflated_folder(root: Path, stream: str) -> Path:
    """Where the compressed binlogs of a stream's source are decompressed to be read (kept until
    a run of the stream is published, so that a retried run does not decompress them again)."""
    return root / RUNS_FOLDER / INFLATED_FOLDER / hashlib.sha256(stream.encode()).hexdigest()[:16]


def plan_run(
    source: str,
    root: Path,
    checkpoint: dict,
    *,
    stream: str,
    source_key: str,
    accept: Sequence[str] = (),
    scanned: dict[str, Future] | None = None,
) -> tuple[StreamPlan, dict[str, Future]]:
    """The stream's plan over the source folder (:func:`spark_jobs.streams.plan_stream`), and the
    transaction scans it made (to be reused by the decoder)."""
    listing = list_source(source, inflated_folder(root, stream))
    scans = dict(scanned or {})

    def scan(path: str) -> tuple[int, list]:
        scans[path] = scanned_file(path, scans.get(path))
        stamp, transactions = scans[path].result()
        return stamp[0], transactions

    others = {name: StreamState.from_json(entry) for name, entry in checkpoint.items() if name != stream}
    plan = plan_stream(stream, source_key, listing.files, StreamState.from_json(checkpoint.get(stream)),
                       scan=scan, others=others, accept=accept)
    plan.notices += listing.reported
    return plan, scans


@locks_warehouse("validate")
def validate_run(spark, warehouse: str, run_id: str) -> dict:
    """Step 5: Great Expectations over the run's output (:mod:`spark_jobs.validate`); the
    outcome is saved with the run and returned as JSON. An outcome that failed is kept as the
    run's failure with its first failing check (:mod:`warehouse.refusals`), and so is an error."""
    from spark_jobs.validate import validate  # Great Expectations is slow to import

    work = work_folder(warehouse, run_id)
    result = IngestResult.from_json(json.loads((work / RUN_FILE).read_text()))
    area = area_of(warehouse, result)
    attempt = _attempt_of(Path(warehouse).resolve(), result)
    with attempt.step("validate"):
        facts = f"{area}/{FACTS_FOLDER}" if result.kind == "backfill" else None  # a backfill publishes no metadata
        outcome = validate(spark, output_of(warehouse, result), Path(warehouse).resolve(), run_id,
                           facts=facts).to_json()
    result.quality = outcome
    publish.write_atomically(work / RUN_FILE, json.dumps(result.to_json(), indent=1))
    if not outcome["success"]:
        attempt.failed("validate", QualityFailed(run_id, outcome))
    return outcome


def _attempt_of(root: Path, result: IngestResult) -> refusals.Attempt:
    """The prepared run ``result`` as an attempt whose failures are kept; its Airflow run is the one
    this process is a task of, else the one that prepared it."""
    return refusals.Attempt(root, result.stream or result.source, result.source,
                            airflow_run_of_context() or result.airflow_run, result.run_id, result.seen)


@locks_warehouse("publish")
def publish_run(warehouse: str, run_id: str) -> IngestResult:
    """Step 6: commit a prepared run: its changes, current, metadata tables, the run record and the
    new checkpoint, in one step. A run that failed validation raises :class:`QualityFailed` and
    publishes nothing, and so does a run planned from a checkpoint another run has moved since
    (:class:`StaleRun`). Publishing a run that is already published does nothing. Another error is
    kept as the run's failure (:mod:`warehouse.refusals`); once the run is published, the earlier
    failures of its stream no longer stand."""
    root = Path(warehouse).resolve()
    recovered = recover(root)
    work = work_folder(root, run_id)
    if run_id in recovered:  # an earlier attempt died inside the commit: the recovery finished it
        log.info("run %s: already published", run_id)
        return IngestResult(run_id, checkpoint=publish.read_checkpoint(root))
    if not (work / RUN_FILE).exists():
        log.info("run %s: nothing to publish (already published?)", run_id)
        return IngestResult(run_id, checkpoint=publish.read_checkpoint(root))
    result = IngestResult.from_json(json.loads((work / RUN_FILE).read_text()))
    # a quality failure was kept when validated; a stale run's stream has published since
    with _attempt_of(root, result).step("publish", expected=(QualityFailed, StaleRun)):
        _commit_run(root, result)
    refusals.clear_failures(root, result.stream or result.source)
    discard_run(root, run_id)
    _remove_if_empty(root / RUNS_FOLDER)
    return result


def recover(warehouse: Path) -> list[str]:
    """Finish the commits dead processes left half done (:func:`warehouse.publish.recover`) and
    remove those runs' work folders; returns their run ids."""
    recovered = publish.recover(warehouse)
    for run_id in recovered:
        discard_run(warehouse, run_id)
    if recovered:
        _remove_if_empty(Path(warehouse) / RUNS_FOLDER)
    return recovered


def _commit_run(root: Path, result: IngestResult) -> None:
    """The prepared run ``result`` committed (see :func:`publish_run`)."""
    run_id = result.run_id
    if result.quality is not None and not result.quality["success"]:
        raise QualityFailed(run_id, result.quality)
    out = output_of(root, result)
    write_run_record(out, result)
    if result.kind == "backfill":  # its day partitions replace the old ones; the checkpoint stays
        publish.commit(root, out, run_id, replaced=(publish.DAY_PARTITIONS,))
    else:
        stream = result.stream or result.source
        committed = publish.read_checkpoint(root)
        if committed.get(stream) != result.start_position:
            discard_output(output_of(root, result))
            discard_run(root, run_id)
            raise StaleRun(
                f"run {run_id} was planned from stream {stream} at {position_text(result.start_position)}, but its "
                f"checkpoint is now {position_text(committed.get(stream))}: nothing published; prepare the run again"
            )
        checkpoint = {**committed, stream: result.checkpoint[stream]}  # other streams as they are now
        publish.commit(root, out, run_id, checkpoint=checkpoint)
        shutil.rmtree(inflated_folder(root, stream), ignore_errors=True)  # read: the next run goes on after them
        _remove_if_empty(root / RUNS_FOLDER / INFLATED_FOLDER)


@locks_warehouse("ingest")
def ingest(
    source: str,
    warehouse: str,
    *,
    spark,
    target_bytes: int = DEFAULT_TARGET_BYTES,
    source_key: str | None = None,
    stream: str | None = None,
    accept: Sequence[str] = (),
    validation: bool = True,
    scanned: dict[str, Future] | None = None,
    airflow_run: str | None = None,
) -> IngestResult:
    """One run over ``source`` into ``warehouse``: :func:`prepare`, :func:`validate_run` (unless
    ``validation`` is off), :func:`publish_run`. A run that does not publish leaves its refusal or
    failure (:mod:`warehouse.refusals`), for the binlake view."""
    catalog.import_in_background()  # pyiceberg and Great Expectations: while the run decodes
    if validation:
        from spark_jobs.validate import import_in_background

        import_in_background()  # Great Expectations takes seconds to import: not after the run's work
    result = prepare(
        source, warehouse, spark=spark, target_bytes=target_bytes, source_key=source_key, stream=stream,
        accept=accept, scanned=scanned, airflow_run=airflow_run,
    )
    if not result.run_id:
        return result
    if validation:
        validate_run(spark, warehouse, result.run_id)
    return publish_run(warehouse, result.run_id)


def pending_scans(source: str, warehouse: str, stream: str | None = None) -> dict[str, Future]:
    """The transaction scans of the files a run would read now, started in the background
    (:func:`spark_jobs.splits.scan_ahead`), for a caller about to do something slow first (start
    Spark). Planning uses a scan only if its file has not changed since; nothing if the source or
    checkpoint cannot be read now (the run itself then reports why)."""
    try:
        checkpoint = publish.read_checkpoint(Path(warehouse).resolve())
        entry = checkpoint.get(stream or default_stream(str(Path(source).resolve())))
        return scan_ahead(i.path for i in discover(source, entry))
    except (OSError, ValueError, ContinuityError) as exc:
        log.debug("no scans ahead: %s", exc)
        return {}


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:  # not empty: another run's work, or not there
        pass


def _summary(result: IngestResult) -> str:
    if not result.run_id:
        return "nothing new to ingest"
    validation = (result.quality or {}).get("seconds", 0.0)
    lines = [f"run {result.run_id} of stream {result.stream}: {len(result.inputs)} files, {result.bytes:,} bytes, "
             f"{sum(result.rows.values()):,} row changes in {result.seconds + validation:.1f} s"
             + (f" (validation {validation:.1f} s)" if result.quality is not None else "")]
    if result.skipped_transactions:
        lines.append(f"  {result.skipped_transactions:,} transactions already ingested (by GTID), skipped")
    lines += [f"  accepted: {choice}" for choice in result.accepted]
    lines += [f"  notice: {notice}" for notice in result.notices]
    lines += [f"  {table}: {rows:,}" for table, rows in sorted(result.rows.items())]
    if result.quality is not None:
        checks = sum(t["expectations"] for t in result.quality["tables"])
        lines.append(f"quality: {verdict(result.quality['success'], checks)} ({checks} expectations), "
                     f"Data Docs: {result.quality['data_docs']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.ingest", description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="folder of binlog files")
    storage.add_arguments(parser)
    parser.add_argument(
        "--stream", help="name of the stream that owns the checkpoint (default: the source folder); point a stream "
        "at another source (a new primary's binlogs) to go on by GTID")
    parser.add_argument(
        "--accept-gap", action="store_true", help="go on over missing files or GTIDs (a deliberate purge); kept in "
        "the run record")
    parser.add_argument(
        "--accept-new-series", action="store_true", help="take a replaced log (RESET MASTER, a restore) as a new "
        "series, read from its first file; kept in the run record")
    parser.add_argument(
        "--accept-type-change", action="append", default=[], metavar="DB.TABLE", help="take the table's type changes "
        "binlake cannot convert as the server did: the values from before the change are unknown in current "
        "(null, named in _incomplete_columns); repeat for several tables; kept in the run record")
    parser.add_argument(
        "--catalog", metavar="URI", help="the Iceberg catalog of the warehouse's tables, a SQLAlchemy URL (e.g. "
        "postgresql://user@host/db); kept by the warehouse at its first run (default: the SQLite file "
        "_iceberg/catalog.db in the warehouse)")
    parser.add_argument("--master", help="Spark master URL (default: $SPARK_MASTER, else local[*])")
    parser.add_argument(
        "--driver-memory", metavar="SIZE", help="the Spark driver JVM's heap, e.g. 8g (default: "
        "$SPARK_DRIVER_MEMORY, else a quarter of the machine's memory, 1 to 16 GiB); in local mode every task's")
    parser.add_argument("--split-mb", type=float, default=DEFAULT_TARGET_BYTES / 2**20, help="split size target")
    parser.add_argument(
        "--no-validation", action="store_true", help="publish without the Great Expectations checks (not recommended)"
    )
    parser.add_argument(
        "--airflow-run", metavar="DAG_ID/RUN_ID", help="the Airflow run this run belongs to, kept in its run record "
        "or failure for the binlake view's link (default: the one this process is a task of, if any)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    accept = [choice for choice, given in ((ACCEPT_GAP_CHOICE, args.accept_gap),
                                           (ACCEPT_NEW_SERIES_CHOICE, args.accept_new_series)) if given]
    accept += [ACCEPT_TYPE_CHANGE + table for table in args.accept_type_change]
    try:
        warehouse = storage.from_arguments(args)
        if args.catalog:
            catalog.configure(Path(warehouse), args.catalog)
    except ValueError as exc:
        print(f"refused, nothing published: {exc}", file=sys.stderr)
        return 4
    scanned = pending_scans(args.source, warehouse, args.stream)  # they run while the JVM starts
    spark = build_session(args.master, app_name="binlake ingest",
                          conf={DRIVER_MEMORY: args.driver_memory} if args.driver_memory else None)
    try:
        status, verdict = 0, _summary(ingest(
            args.source, warehouse, spark=spark, target_bytes=int(args.split_mb * 2**20),
            stream=args.stream, accept=accept, validation=not args.no_validation, scanned=scanned,
            airflow_run=args.airflow_run,
        ))
    except Exception as exc:
        status, verdict = _failure(exc, args.driver_memory)
    finally:
        stop(spark)  # before the verdict: whatever Spark says while it stops is not the last word
    print(verdict, file=sys.stderr if status else sys.stdout)
    return status


def _failure(exc: Exception, driver_memory: str | None) -> tuple[int, str]:
    """The exit status and the one line a failed run ends with; an error that is neither a refusal
    nor Spark's own is raised again, with its traceback."""
    if isinstance(exc, QualityFailed):
        return 3, str(exc)
    if isinstance(exc, (ContinuityError, SchemaConflict, catalog.TypeChangeRefused, catalog.CommitConflict,
                        publish.CheckpointMismatch)):
        return 4, f"refused, nothing published: {exc}"
    if isinstance(exc, (catalog.CatalogUnavailable, storage.StorageUnavailable)):
        return 1, str(exc)
    failure = spark_failure(exc, driver_memory)
    if failure is None:
        raise exc
    log.error("Spark failed", exc_info=exc)
    return SPARK_FAILED, f"Spark failed, nothing published: {failure}"

if __name__ == "__main__":
    sys.exit(main())
