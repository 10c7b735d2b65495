"""The run record: one row of ``_binlake.runs`` per committed run, written into the run's output
with its data, so that the commit that publishes the run publishes its record (docs/ARCHITECTURE.md,
"Warehouse contract")."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa

from warehouse import storage

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
    pa.field("stream", pa.string()),
    pa.field("continuity", pa.string()),
    pa.field("gtid_set", pa.string()),
    pa.field("accepted", pa.list_(pa.string())),
    pa.field("notices", pa.list_(pa.string())),
    pa.field("skipped_transactions", pa.int64()),
    pa.field("airflow_run", pa.string()),
    pa.field("source_newest_event", pa.timestamp("us", tz="UTC")),
    pa.field("source_newest_file", pa.string()),
    pa.field("source_newest_size", pa.int64()),
])

def write_run_record(out: str | os.PathLike[str], result) -> None:
    """The run record (``metadata/runs``, one row) of ``result`` (a
    :class:`spark_jobs.ingest.IngestResult`) in the run's output folder at the location ``out``."""
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
        "stream": result.stream or result.source,
        "continuity": result.continuity or None,
        "gtid_set": result.gtids,
        "accepted": result.accepted,
        "notices": result.notices,
        "skipped_transactions": result.skipped_transactions,
        "airflow_run": result.airflow_run,
        **_seen_columns(result.seen),
    }
    storage.write_parquet(pa.Table.from_pylist([record], schema=RUNS_SCHEMA),
                          f"{str(out).rstrip('/')}/{RUN_RECORDS}/{result.run_id}.parquet")


def _seen_columns(seen: dict | None) -> dict:
    """The run record's columns of what the run saw of its source's newest event."""
    seen = seen or {}
    event = seen.get("event_time")
    return {"source_newest_event": datetime.fromisoformat(event) if event else None,
            "source_newest_file": seen.get("file"), "source_newest_size": seen.get("size")}
