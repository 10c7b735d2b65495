#!/usr/bin/env python3
"""Decode a binlog's row changes into Arrow record batches, as a Spark decode task does, and drop them.

    python benchmarks/arrow_decode.py BINLOG [--batch-rows 65536]

One :class:`binlog_codec.table_batches.TableBatches` per table version, fed a
rows event at a time (the compiled build decodes them in C, the pure-Python
build through ``ImageBatchBuilder``); its rows are taken as one Arrow table
whenever it holds ``--batch-rows`` rows, and at the end. Prints the number of
row changes, of tables, and of the rows the compiled builder took. Python's
cyclic garbage collector is paused, as in a decode task (``spark_jobs.gc_pause``). The codec's
speed without JSON text or Parquet: what the Spark path pays before writing its
staged files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from binlog_codec.rows import rows_events  # noqa: E402
from binlog_codec.table_batches import TableBatches  # noqa: E402
from spark_jobs.gc_pause import paused_gc  # noqa: E402


def decode_to_arrow(path: str, batch_rows: int = 65536) -> tuple[int, int, int]:
    """(row changes, Arrow tables, rows the compiled builder took) of the file."""
    builders: dict[int, TableBatches] = {}
    rows = tables = 0
    for event in rows_events(path):
        builder = builders.get(id(event.table))
        if builder is None:
            builder = builders[id(event.table)] = TableBatches(event.table, event.plan.flavour)
        rows += builder.add(event)
        if len(builder) >= batch_rows:
            builder.flush()
            tables += 1
    for builder in builders.values():
        if len(builder):
            builder.flush()
            tables += 1
    return rows, tables, sum(builder.native_rows for builder in builders.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binlog")
    parser.add_argument("--batch-rows", type=int, default=65536)
    args = parser.parse_args(argv)
    with paused_gc():  # as a Spark decode task runs
        rows, tables, native = decode_to_arrow(args.binlog, args.batch_rows)
    print(f"{rows} rows in {tables} tables ({native} decoded by the compiled builder)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
