#!/usr/bin/env python3
"""Write and read speed of the online backup image format (``binlog_codec.backup``).

:func:`benchmark` writes an image of about 100 MB (1 MiB table data chunks,
32 KiB blocks) into a directory, reads it back chunk by chunk, and returns
``{"write_mb_per_s", "read_mb_per_s", "bytes"}`` (MB = 10^6 bytes of image).
The image is deleted afterwards.

    python benchmarks/backup_bench.py [DIR]
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from binlog_codec.backup import (  # noqa: E402
    BackupWriter,
    Catalogue,
    Database,
    Header,
    ImageType,
    ServerVersion,
    SnapshotInfo,
    Summary,
    Table,
    read_image,
)

CHUNK_SIZE = 1 << 20
CHUNKS = 100
BLOCK_SIZE = 32 * 1024


def write_image(path: Path, chunk: bytes, chunks: int = CHUNKS) -> int:
    """An image of one table whose data is ``chunks`` copies of ``chunk``; its size in bytes."""
    moment = datetime.now(timezone.utc).replace(microsecond=0)
    header = Header(moment, ServerVersion(10, 11, 6, "10.11.6-MariaDB"), (SnapshotInfo(ImageType.CONSISTENT_SNAPSHOT, 1),))
    with path.open("wb") as stream:
        writer = BackupWriter(stream, header=header, block_size=BLOCK_SIZE)
        writer.write_catalogue(Catalogue(("utf8mb4", "utf8mb4"), ("root",), (Database("bench", (Table("t", 1),)),)))
        writer.write_metadata()
        for index in range(chunks):
            writer.write_table_data(1, 0, chunk, last=index == chunks - 1)
        return writer.finish(Summary(moment, moment, "mariadb-bin.000001", 4, "mariadb-bin.000001", 4))


def read_image_data(path: Path) -> int:
    """Bytes of table data read from the image at ``path``."""
    total = 0
    with read_image(path) as image:
        for chunk in image.table_data():
            total += len(chunk.data)
        image.summary
    return total


def benchmark(path_dir) -> dict:
    """Write then read a ~100 MB image in ``path_dir``: MB/s of each and the image's size."""
    path = Path(path_dir) / "backup_bench.bak"
    path.parent.mkdir(parents=True, exist_ok=True)
    chunk = random.Random(0).randbytes(CHUNK_SIZE)
    try:
        started = time.perf_counter()
        size = write_image(path, chunk)
        written = time.perf_counter()
        data = read_image_data(path)
        read = time.perf_counter()
    finally:
        path.unlink(missing_ok=True)
    assert data == CHUNK_SIZE * CHUNKS
    return {
        "write_mb_per_s": round(size / 1e6 / (written - started), 1),
        "read_mb_per_s": round(size / 1e6 / (read - written), 1),
        "bytes": size,
    }


if __name__ == "__main__":
    if len(sys.argv) > 1:
        print(json.dumps(benchmark(sys.argv[1])))
    else:
        with tempfile.TemporaryDirectory() as directory:
            print(json.dumps(benchmark(directory)))
