#!/usr/bin/env python3
"""Decode a binlog's row changes into Arrow record batches, as a Spark decode task does, and drop them.

    python benchmarks/arrow_decode.py BINLOG [--batch-rows 65536]

One :class:`binlog_codec.arrow.ImageBatchBuilder` per table version; a batch is
built whenever a builder holds ``--batch-rows`` rows, and at the end. Prints the
number of row changes and of batches. The codec's speed without JSON text or
Parquet: what the Spark path pays before writing its staged files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from binlog_codec.arrow import ImageBatchBuilder  # noqa: E402
from binlog_codec.rows import read_rows  # noqa: E402


def decode_to_arrow(path: str, batch_rows: int = 65536) -> tuple[int, int]:
    """(row changes, Arrow batches) of the file."""
    builders: dict[int, ImageBatchBuilder] = {}
    rows = batches = 0
    for record in read_rows(path):
        builder = builders.get(id(record.table_map))
        if builder is None:
            builder = builders[id(record.table_map)] = ImageBatchBuilder(record.table_map)
        builder.append(record)
        rows += 1
        if len(builder) >= batch_rows:
            builder.flush()
            batches += 1
    for builder in builders.values():
        if len(builder):
            builder.flush()
            batches += 1
    return rows, batches


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binlog")
    parser.add_argument("--batch-rows", type=int, default=65536)
    args = parser.parse_args(argv)
    rows, batches = decode_to_arrow(args.binlog, args.batch_rows)
    print(f"{rows} rows in {batches} batches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
