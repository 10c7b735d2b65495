"""Run records written into a warehouse as a run commits them: a file of ``metadata/runs`` in the
run record's own types (``RUNS_SCHEMA``; a column no version had is text), registered in the
warehouse's catalog (``_binlake.runs``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from warehouse import catalog
from warehouse.run_records import RUNS_SCHEMA


def commit_run_record(warehouse: Path, record: dict) -> None:
    """``record`` (a run record, or the columns an older version wrote) committed to ``warehouse``."""
    relative = f"metadata/runs/{record['run_id']}.parquet"
    schema = pa.schema([RUNS_SCHEMA.field(name) if name in RUNS_SCHEMA.names else pa.field(name, pa.string())
                        for name in record])
    (warehouse / relative).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([record], schema=schema), warehouse / relative)
    catalog.sync(warehouse, record["run_id"], {}, catalog.plan_tables([relative]))
