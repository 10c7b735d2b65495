"""The whole pipeline without Airflow: binlog files in, a published warehouse run out.

    python -m spark_jobs.ingest --source DIR --warehouse DIR [--master URL] [--split-mb 64]

(or the same arguments to ``spark-submit spark_jobs/ingest.py``). One run:

1. **Recover and read the checkpoint.** A commit a dead run left half done is
   finished first (:func:`spark_jobs.publish.recover`); the checkpoint says,
   per source, the last committed file and the position to go on from.
2. **Discover.** The source folder's binlog files (name ``<base>.<digits>``,
   starting with the binlog magic) after the checkpoint, in log order; the
   checkpoint's own file again when it has grown past the committed position.
3. **Decode** (:mod:`spark_jobs.decode`) into the run's staging folder.
4. **Materialize** each table (:mod:`spark_jobs.materialize`): its changes are
   folded onto the warehouse's ``current`` rows.
5. **Validate** (:mod:`spark_jobs.validate`): Great Expectations over the run's
   output; a failed expectation fails the run and nothing is published.
6. **Publish** (:mod:`spark_jobs.publish`): changes, current, the metadata
   tables, the run record and the new checkpoint, in one commit.

Steps 1-4 are :func:`prepare`, 5 is :func:`validate_run` and 6 is
:func:`publish_run`: the Airflow DAG runs them as separate tasks, handing the
run id from one to the next (the run's state is kept in its work folder,
``_runs/<run id>/``); :func:`ingest` runs all of them.

A run's name is derived from its input (each file's name and the byte range
read), so the same input gives the same output file names: ingesting it again
replaces files with identical ones and adds no rows. A run that fails before
its commit publishes nothing and leaves the checkpoint where it was.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import shutil
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from binlog_codec.arrow import TABLE_SCHEMA
from binlog_codec.reader import MAGIC
from spark_jobs import publish
from spark_jobs.decode import DEFAULT_TARGET_BYTES, DecodeResult, decode
from spark_jobs.layout import table_folder
from spark_jobs.lock import locks_warehouse
from spark_jobs.materialize import materialize
from spark_jobs.positions import after_checkpoint, is_binlog_name
from spark_jobs.session import build_session
from spark_jobs.splits import scan_ahead

log = logging.getLogger("spark_jobs.ingest")

RUNS_FOLDER = "_runs"
RUN_FILE = "run.json"
RUN_RECORDS = Path("metadata") / "runs"
RUNS_SCHEMA = pa.schema([
    pa.field("run_id", pa.string()),
    pa.field("source", pa.string()),
    pa.field("started", pa.timestamp("us", tz="UTC")),
    pa.field("finished", pa.timestamp("us", tz="UTC")),
    pa.field("seconds", pa.float64()),
    pa.field("inputs", pa.string()),
    pa.field("bytes", pa.int64()),
    pa.field("rows", pa.int64()),
    pa.field("rows_per_table", pa.string()),
    pa.field("checkpoint", pa.string()),
    pa.field("quality", pa.string()),
    pa.field("kind", pa.string()),
    pa.field("interval", pa.list_(pa.string())),
])


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
    ``skipped``). ``start_position`` is the source's checkpoint the run was planned from.
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


def is_binlog(path: Path) -> bool:
    """A file named ``<base>.<digits>`` that starts with the binlog magic."""
    if not path.is_file() or not is_binlog_name(path.name):
        return False
    with open(path, "rb") as handle:
        return handle.read(len(MAGIC)) == MAGIC


def discover(source: str | os.PathLike[str], position: dict | None) -> list[Input]:
    """The source's binlog files to read, in log order, after the committed ``position``
    (``{"file": name, "position": n}``; None: from the start); see :mod:`spark_jobs.positions`."""
    files = [p for p in Path(source).iterdir() if is_binlog(p)]
    pending = after_checkpoint(
        files, position, name=lambda p: p.name, size=lambda p: p.stat().st_size, where=str(source)
    )
    return [Input(str(path), start) for path, start in pending]


def run_id_of(inputs: Sequence[Input]) -> str:
    """A name derived from the input: each file's name, start and size."""
    text = json.dumps([(i.name, i.start, Path(i.path).stat().st_size) for i in inputs])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def primary_keys(decoded: DecodeResult) -> dict[tuple[str, str], list[str]]:
    """Per table, the primary key columns of its latest table version (none: key on every column)."""
    keys: dict[tuple[str, str], list[str]] = {}
    if decoded.table_schemas is None:
        return keys
    versions = pq.read_table(decoded.table_schemas).to_pylist()
    for version in sorted(versions, key=lambda v: (v["last_seq"] or 0, v["last_pos"] or 0)):
        keys[(version["database"], version["table"])] = [part["column"] for part in version["primary_key"]]
    return keys


def _copy_metadata(decoded: DecodeResult, root: Path, out: Path, run_id: str) -> None:
    """The transaction index and the charset checks under names derived from the run; the table
    versions merged with the warehouse's (:func:`merge_table_schemas`), to replace them."""
    transactions = out / "metadata" / "transactions"
    transactions.mkdir(parents=True, exist_ok=True)
    for path in decoded.transaction_files:
        shutil.copyfile(path, transactions / Path(path).name)
    if decoded.charset_checks is not None:
        (out / "metadata" / "charset_checks").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(decoded.charset_checks, out / "metadata" / "charset_checks" / f"{run_id}.parquet")
    if decoded.table_schemas is not None:
        published = sorted((root / "metadata" / "table_schemas").glob("*.parquet"))
        earlier = [row for path in published for row in pq.read_table(path).to_pylist()]
        merged = merge_table_schemas(earlier, pq.read_table(decoded.table_schemas).to_pylist())
        target = out / "metadata" / "table_schemas" / "table_schemas.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(merged, schema=TABLE_SCHEMA), target)


def merge_table_schemas(earlier: list[dict], new: list[dict]) -> list[dict]:
    """One row per table version (``schema_id``) over every run: a version already known keeps
    its first position and takes the new run's last position, its row counts added up."""
    rows = {row["schema_id"]: dict(row) for row in earlier}
    for row in new:
        known = rows.get(row["schema_id"])
        if known is None:
            rows[row["schema_id"]] = dict(row)
        else:
            known.update({key: value for key, value in row.items() if key.startswith("last_")})
            known["rows"] = (known["rows"] or 0) + (row["rows"] or 0)
    return sorted(rows.values(), key=lambda r: (
        r["first_seq"] or 0, r["first_file"] or "", r["first_pos"] or 0, r["first_inner_offset"] or 0,
    ))


def _materialize_tables(
    spark, decoded: DecodeResult, keys: dict[tuple[str, str], list[str]], root: Path, out: Path, run_id: str
) -> dict[str, int]:
    """Every table of the run materialized into ``out``; changes per table. Tables are submitted
    from several driver threads at once (up to twice the Spark slots), the largest first, so that
    Spark runs one table's tasks in the slots another table's driver-side steps or last tasks
    leave idle, and the longest table is not the last to start. A table is cut into buckets (fold
    tasks) only where it holds more than one slot's share of the run's row changes."""

    def one(table_key: tuple[str, str], images: list[str]) -> int:
        database, table = table_key
        done = materialize(
            spark, images, database=database, table=table, key_columns=keys.get(table_key),
            current=table_folder(root, "current", database, table), target=str(out), run_name=run_id,
            slot_rows=slot_rows,
        )
        log.info("%s.%s: %d changes, %d current rows", database, table, done.changes_rows, done.current_rows)
        return done.changes_rows

    tables = sorted(decoded.images.items(), key=lambda item: (-decoded.rows.get(item[0], 0), item[0]))
    slots = max(1, spark.sparkContext.defaultParallelism)
    slot_rows = max(1, -(-sum(decoded.rows.values()) // slots))  # one slot's share of the run's row changes
    threads = min(len(tables), 2 * slots)
    with ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="materialize") as pool:
        futures = [(table_key, pool.submit(one, table_key, images)) for table_key, images in tables]
        return {f"{database}.{table}": future.result() for (database, table), future in sorted(futures)}


def _checkpoint(previous: dict, source: str, decoded: DecodeResult, inputs: Sequence[Input]) -> dict:
    """The checkpoint after this run: the last input file and where the next run goes on."""
    last = inputs[-1]
    position = decoded.resume_positions.get(last.path, Path(last.path).stat().st_size)
    return {**previous, source: {"file": last.name, "position": position}}


def _write_run_record(out: Path, result: IngestResult) -> None:
    record = {
        "run_id": result.run_id,
        "source": result.source,
        "started": datetime.fromisoformat(result.started),
        "finished": datetime.now(timezone.utc),
        "seconds": result.seconds,
        "inputs": json.dumps([{"file": i.name, "start": i.start, "end": result.ends.get(i.name)} for i in result.inputs]),
        "bytes": result.bytes,
        "rows": sum(result.rows.values()),
        "rows_per_table": json.dumps(result.rows, sort_keys=True),
        "checkpoint": json.dumps(result.checkpoint, sort_keys=True),
        "quality": None if result.quality is None else json.dumps(result.quality, sort_keys=True),
        "kind": result.kind,
        "interval": result.interval,
    }
    folder = out / RUN_RECORDS
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([record], schema=RUNS_SCHEMA), folder / f"{result.run_id}.parquet")


def work_folder(warehouse: str | os.PathLike[str], run_id: str) -> Path:
    """Where a run keeps its staging and its not yet published output (``out/``)."""
    return Path(warehouse).resolve() / RUNS_FOLDER / run_id


@locks_warehouse("prepare")
def prepare(
    source: str,
    warehouse: str,
    *,
    spark,
    target_bytes: int = DEFAULT_TARGET_BYTES,
    source_key: str | None = None,
    scanned: dict[str, Future] | None = None,
) -> IngestResult:
    """Steps 1 to 4: decode and materialize the new input into the run's work folder, publish
    nothing. ``source_key`` names the source in the checkpoint (default: the resolved folder;
    the DAGs pass the object-store URI the folder was staged from). The result is also saved
    as ``run.json`` in the work folder, for :func:`publish_run` in another process.
    ``scanned``: transaction scans of the input started ahead (:func:`pending_scans`)."""
    started, clock = datetime.now(timezone.utc), time.monotonic()
    source_key, root = source_key or str(Path(source).resolve()), Path(warehouse).resolve()
    publish.recover(root)
    checkpoint = publish.read_checkpoint(root)
    inputs = discover(source, checkpoint.get(source_key))
    if not inputs:
        log.info("nothing new in %s after %s", source, checkpoint.get(source_key))
        return IngestResult("", checkpoint=checkpoint, source=source_key)
    run_id = run_id_of(inputs)
    work = work_folder(root, run_id)
    shutil.rmtree(work, ignore_errors=True)
    out = work / "out"
    log.info("run %s: %d files from %s", run_id, len(inputs), source)
    decoded = decode(
        spark, [i.path for i in inputs], work / "staging", target_bytes,
        start_positions={i.path: i.start for i in inputs}, scanned=scanned,
    )
    keys = primary_keys(decoded)
    result = IngestResult(run_id, inputs, bytes=decoded.bytes, source=source_key, started=started.isoformat())
    result.ends = {Path(path).name: position for path, position in decoded.resume_positions.items()}
    result.rows = _materialize_tables(spark, decoded, keys, root, out, run_id)
    _copy_metadata(decoded, root, out, run_id)
    shutil.rmtree(work / "staging", ignore_errors=True)
    result.checkpoint = _checkpoint(checkpoint, source_key, decoded, inputs)
    result.start_position = checkpoint.get(source_key)
    result.seconds = time.monotonic() - clock
    publish.write_atomically(work / RUN_FILE, json.dumps(result.to_json(), indent=1))
    return result


@locks_warehouse("validate")
def validate_run(spark, warehouse: str, run_id: str) -> dict:
    """Step 5: Great Expectations over the run's output (:mod:`spark_jobs.validate`); the
    outcome is saved with the run and returned as JSON."""
    from spark_jobs.validate import validate  # Great Expectations is slow to import

    work = work_folder(warehouse, run_id)
    result = IngestResult.from_json(json.loads((work / RUN_FILE).read_text()))
    outcome = validate(spark, work / "out", Path(warehouse).resolve(), run_id).to_json()
    result.quality = outcome
    publish.write_atomically(work / RUN_FILE, json.dumps(result.to_json(), indent=1))
    return outcome


@locks_warehouse("publish")
def publish_run(warehouse: str, run_id: str) -> IngestResult:
    """Step 6: commit a prepared run: its changes, current, metadata tables, the run record and the
    new checkpoint, in one step. A run that failed validation raises :class:`QualityFailed` and
    publishes nothing, and so does a run planned from a checkpoint another run has moved since
    (:class:`StaleRun`). Publishing a run that is already published does nothing."""
    root = Path(warehouse).resolve()
    recovered = publish.recover(root)
    work = work_folder(root, run_id)
    if not (work / RUN_FILE).exists():
        log.info("run %s: nothing to publish (already published?)", run_id)
        return IngestResult(run_id, checkpoint=publish.read_checkpoint(root))
    if run_id in recovered:  # an earlier attempt died inside the commit: the recovery finished it
        log.info("run %s: already published", run_id)
        shutil.rmtree(work, ignore_errors=True)
        return IngestResult(run_id, checkpoint=publish.read_checkpoint(root))
    result = IngestResult.from_json(json.loads((work / RUN_FILE).read_text()))
    if result.quality is not None and not result.quality["success"]:
        raise QualityFailed(run_id, result.quality)
    out = work / "out"
    _write_run_record(out, result)
    if result.kind == "backfill":  # its day partitions replace the old ones; the checkpoint stays
        publish.commit(root, out, run_id, replaced=publish.REPLACED_FOLDERS + (publish.DAY_PARTITIONS,))
    else:
        committed = publish.read_checkpoint(root)
        if committed.get(result.source) != result.start_position:
            shutil.rmtree(work, ignore_errors=True)
            raise StaleRun(
                f"run {run_id} was planned from {result.source} at {result.start_position}, but the checkpoint is "
                f"now {committed.get(result.source)}: nothing published; prepare the run again"
            )
        checkpoint = {**committed, result.source: result.checkpoint[result.source]}  # other sources as they are now
        publish.write_atomically(out / publish.CHECKPOINT, json.dumps(checkpoint, indent=1, sort_keys=True))
        publish.commit(root, out, run_id)
    shutil.rmtree(work, ignore_errors=True)
    _remove_if_empty(root / RUNS_FOLDER)
    return result


@locks_warehouse("ingest")
def ingest(
    source: str,
    warehouse: str,
    *,
    spark,
    target_bytes: int = DEFAULT_TARGET_BYTES,
    source_key: str | None = None,
    validation: bool = True,
    scanned: dict[str, Future] | None = None,
) -> IngestResult:
    """One run over ``source`` into ``warehouse``: :func:`prepare`, :func:`validate_run` (unless
    ``validation`` is off), :func:`publish_run`."""
    result = prepare(
        source, warehouse, spark=spark, target_bytes=target_bytes, source_key=source_key, scanned=scanned
    )
    if not result.run_id:
        return result
    if validation:
        validate_run(spark, warehouse, result.run_id)
    return publish_run(warehouse, result.run_id)


def pending_scans(source: str, warehouse: str) -> dict[str, Future]:
    """The transaction scans of the files a run would read now, started in the background
    (:func:`spark_jobs.splits.scan_ahead`), for a caller about to do something slow first (start
    Spark). Planning uses a scan only if its file has not changed since; nothing if the source or
    checkpoint cannot be read now (the run itself then reports why)."""
    try:
        checkpoint = publish.read_checkpoint(Path(warehouse).resolve())
        return scan_ahead(i.path for i in discover(source, checkpoint.get(str(Path(source).resolve()))))
    except (OSError, ValueError) as exc:
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
    lines = [f"run {result.run_id}: {len(result.inputs)} files, {result.bytes:,} bytes, "
             f"{sum(result.rows.values()):,} row changes in {result.seconds:.1f} s"]
    lines += [f"  {table}: {rows:,}" for table, rows in sorted(result.rows.items())]
    if result.quality is not None:
        checks = sum(t["expectations"] for t in result.quality["tables"])
        lines.append(f"quality: {'passed' if result.quality['success'] else 'FAILED'} ({checks} expectations), "
                     f"Data Docs: {result.quality['data_docs']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.ingest", description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="folder of binlog files")
    parser.add_argument("--warehouse", required=True, help="warehouse folder")
    parser.add_argument("--master", help="Spark master URL (default: $SPARK_MASTER, else local[*])")
    parser.add_argument("--split-mb", type=float, default=DEFAULT_TARGET_BYTES / 2**20, help="split size target")
    parser.add_argument(
        "--no-validation", action="store_true", help="publish without the Great Expectations checks (not recommended)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    scanned = pending_scans(args.source, args.warehouse)  # they run while the JVM starts
    spark = build_session(args.master, app_name="binlake ingest")
    try:
        result = ingest(
            args.source, args.warehouse, spark=spark, target_bytes=int(args.split_mb * 2**20),
            validation=not args.no_validation, scanned=scanned,
        )
    except QualityFailed as exc:
        print(exc, file=sys.stderr)
        return 3
    finally:
        spark.stop()
    print(_summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
