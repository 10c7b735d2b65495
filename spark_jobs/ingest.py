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
5. **Publish** (:mod:`spark_jobs.publish`): changes, current, the metadata
   tables, the run record and the new checkpoint, in one commit.

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
import re
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from binlog_codec.reader import MAGIC
from spark_jobs import publish
from spark_jobs.decode import DEFAULT_TARGET_BYTES, DecodeResult, decode
from spark_jobs.layout import table_folder
from spark_jobs.materialize import materialize
from spark_jobs.session import build_session

log = logging.getLogger("spark_jobs.ingest")

BINLOG_NAME = re.compile(r"^(?P<base>.+)\.(?P<seq>\d+)$")
RUNS_FOLDER = "_runs"


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
    """What a run did; ``run_id`` is empty when there was nothing new."""

    run_id: str
    inputs: list[Input] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    checkpoint: dict = field(default_factory=dict)
    seconds: float = 0.0


def is_binlog(path: Path) -> bool:
    """A file named ``<base>.<digits>`` that starts with the binlog magic."""
    if not path.is_file() or not BINLOG_NAME.match(path.name):
        return False
    with open(path, "rb") as handle:
        return handle.read(len(MAGIC)) == MAGIC


def discover(source: str | os.PathLike[str], position: dict | None) -> list[Input]:
    """The source's binlog files to read, in log order, after the committed ``position``
    (``{"file": name, "position": n}``; None: from the start)."""
    files = sorted(
        (p for p in Path(source).iterdir() if is_binlog(p)),
        key=lambda p: (BINLOG_NAME.match(p.name)["base"], int(BINLOG_NAME.match(p.name)["seq"])),
    )
    if position is None:
        return [Input(str(p), 0) for p in files]
    names = [p.name for p in files]
    if position["file"] not in names:
        raise ValueError(f"the checkpoint's file {position['file']} is not in {source} any more")
    at = names.index(position["file"])
    current = files[at]
    pending = [Input(str(current), position["position"])] if current.stat().st_size > position["position"] else []
    return pending + [Input(str(p), 0) for p in files[at + 1 :]]


def run_id_of(inputs: Sequence[Input]) -> str:
    """A name derived from the input: each file's name, start and size."""
    text = json.dumps([(i.name, i.start, Path(i.path).stat().st_size) for i in inputs])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _primary_keys(decoded: DecodeResult) -> dict[tuple[str, str], list[str]]:
    """Per table, the primary key columns of its latest table version (none: key on every column)."""
    keys: dict[tuple[str, str], list[str]] = {}
    if decoded.table_schemas is None:
        return keys
    versions = pq.read_table(decoded.table_schemas).to_pylist()
    for version in sorted(versions, key=lambda v: (v["last_seq"] or 0, v["last_pos"] or 0)):
        keys[(version["database"], version["table"])] = [part["column"] for part in version["primary_key"]]
    return keys


def _copy_metadata(decoded: DecodeResult, out: Path, run_id: str) -> None:
    """The transaction index and the table versions, under names derived from the run."""
    transactions = out / "metadata" / "transactions"
    transactions.mkdir(parents=True, exist_ok=True)
    for path in decoded.transaction_files:
        shutil.copyfile(path, transactions / Path(path).name)
    if decoded.table_schemas is not None:
        schemas = out / "metadata" / "table_schemas"
        schemas.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(decoded.table_schemas, schemas / f"{run_id}.parquet")


def _checkpoint(previous: dict, source: str, decoded: DecodeResult, inputs: Sequence[Input]) -> dict:
    """The checkpoint after this run: the last input file and where the next run goes on."""
    last = inputs[-1]
    position = decoded.resume_positions.get(last.path, Path(last.path).stat().st_size)
    return {**previous, source: {"file": last.name, "position": position}}


def _write_run_record(out: Path, result: IngestResult, started: datetime) -> None:
    record = {
        "run_id": result.run_id,
        "started": started,
        "finished": datetime.now(timezone.utc),
        "seconds": result.seconds,
        "inputs": json.dumps([asdict(i) | {"path": i.name} for i in result.inputs]),
        "bytes": result.bytes,
        "rows": sum(result.rows.values()),
        "rows_per_table": json.dumps(result.rows, sort_keys=True),
        "checkpoint": json.dumps(result.checkpoint, sort_keys=True),
    }
    folder = out / "metadata" / "runs"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([record]), folder / f"{result.run_id}.parquet")


def ingest(source: str, warehouse: str, *, spark, target_bytes: int = DEFAULT_TARGET_BYTES) -> IngestResult:
    """One run over ``source`` into ``warehouse`` (see the module docstring)."""
    started, clock = datetime.now(timezone.utc), time.monotonic()
    source_key, root = str(Path(source).resolve()), Path(warehouse).resolve()
    publish.recover(root)
    checkpoint = publish.read_checkpoint(root)
    inputs = discover(source, checkpoint.get(source_key))
    if not inputs:
        log.info("nothing new in %s after %s", source, checkpoint.get(source_key))
        return IngestResult("", checkpoint=checkpoint)
    run_id = run_id_of(inputs)
    work = root / RUNS_FOLDER / run_id
    shutil.rmtree(work, ignore_errors=True)
    out = work / "out"
    log.info("run %s: %d files from %s", run_id, len(inputs), source)
    decoded = decode(
        spark, [i.path for i in inputs], work / "staging", target_bytes,
        start_positions={i.path: i.start for i in inputs},
    )
    keys = _primary_keys(decoded)
    result = IngestResult(run_id, inputs, bytes=decoded.bytes)
    for (database, table), images in sorted(decoded.images.items()):
        done = materialize(
            spark, images, database=database, table=table, key_columns=keys.get((database, table)),
            current=table_folder(root, "current", database, table), target=str(out), run_name=run_id,
        )
        result.rows[f"{database}.{table}"] = done.changes_rows
        log.info("%s.%s: %d changes, %d current rows", database, table, done.changes_rows, done.current_rows)
    _copy_metadata(decoded, out, run_id)
    result.checkpoint = _checkpoint(checkpoint, source_key, decoded, inputs)
    result.seconds = time.monotonic() - clock
    _write_run_record(out, result, started)
    publish.write_atomically(out / publish.CHECKPOINT, json.dumps(result.checkpoint, indent=1, sort_keys=True))
    publish.commit(root, out, run_id)
    shutil.rmtree(work, ignore_errors=True)
    _remove_if_empty(root / RUNS_FOLDER)
    return result


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
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.ingest", description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="folder of binlog files")
    parser.add_argument("--warehouse", required=True, help="warehouse folder")
    parser.add_argument("--master", help="Spark master URL (default: $SPARK_MASTER, else local[*])")
    parser.add_argument("--split-mb", type=float, default=DEFAULT_TARGET_BYTES / 2**20, help="split size target")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    spark = build_session(args.master, app_name="binlake ingest")
    try:
        result = ingest(args.source, args.warehouse, spark=spark, target_bytes=int(args.split_mb * 2**20))
    finally:
        spark.stop()
    print(_summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
