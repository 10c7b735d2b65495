"""Load: run after run of the ingest in one long-lived driver, with memory and open files flat.

A scheduler's worker runs the ingest again and again in the same process, with
the same Spark session. Each run here adds a new binlog file to the source (a
synthetic MySQL 8 log from :mod:`binlog_codec.corpus`: inserts, updates,
deletes, partial JSON, MINIMAL images, one seed per file) and ingests it. After
two runs of warm-up, what a leak would grow must stay flat: the driver's open
files and resident memory, the Spark JVM's open files, and the resident memory
of the Python workers the tasks run in. Every run must
publish exactly the rows its file holds, and the checkpoint must reach the end
of the last file.

The suite runs :data:`RUNS` runs of small files. The long version,
``BINLAKE_LOAD_MB=N``, adds files of about 25 MB until N MB have been ingested
and prints a line per run (megabytes so far, rows/s, memory, open files).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pyarrow.dataset as ds

from binlog_codec.corpus import write_corpus
from spark_jobs import ingest as pipeline

LOAD_MB = float(os.environ.get("BINLAKE_LOAD_MB", "0"))
RUNS = 6
TRANSACTIONS = 40_000 if LOAD_MB else 1_500  # per file: about 25 MB, or 1 MB
WARM_UP = 2
FILE_SLACK = 8  # open files a run may leave more than the warm-up (sockets Spark opens lazily)
MEMORY_SLACK_MB = 96  # resident memory the driver may grow after the warm-up (allocator pools)


@dataclass(frozen=True)
class Sample:
    """What a leak would grow, after one run."""

    driver_files: int
    driver_mb: float
    jvm_files: int
    worker_mb: float  # the largest Python worker the JVM runs the tasks in


def _resident_mb(pid: int | str) -> float:
    """Resident memory of a process; 0 for one that has ended (gone, or a zombie not yet reaped)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return 0.0
    found = [line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")]
    return int(found[0]) / 1024 if found else 0.0


def _open_files(pid: int | str) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _descendants(pid: int) -> list[int]:
    children = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            children += [int(child) for child in (task / "children").read_text().split()]
    except FileNotFoundError:  # the process (or a thread) ended meanwhile
        pass
    return children + [grandchild for child in children for grandchild in _descendants(child)]


def sample(spark) -> Sample:
    jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    workers = [_resident_mb(pid) for pid in _descendants(jvm)]
    return Sample(_open_files("self"), _resident_mb("self"), _open_files(jvm), max(workers, default=0.0))


def test_many_runs_keep_memory_and_open_files_flat(spark, tmp_path):
    source, warehouse = tmp_path / "source", tmp_path / "warehouse"
    source.mkdir()
    samples: list[Sample] = []
    published, logged, ingested_mb = 0, 0, 0.0
    run = 0
    while run < RUNS or ingested_mb < LOAD_MB:
        run += 1
        binlog = source / f"mysql-bin.{run:06d}"
        summary = write_corpus(binlog, transactions=TRANSACTIONS, seed=run, image="minimal",
                               first_transaction=(run - 1) * TRANSACTIONS)  # one log, going on
        logged += sum(summary.counts[kind] for kind in ("insert", "update", "delete"))

        result = pipeline.ingest(str(source), str(warehouse), spark=spark, validation=False)

        published += sum(result.rows.values())
        ingested_mb += binlog.stat().st_size / 1e6
        samples.append(sample(spark))
        assert [each.name for each in result.inputs] == [binlog.name]
        assert result.checkpoint[str(source.resolve())]["position"] == binlog.stat().st_size
        assert result.checkpoint[str(source.resolve())]["gtids"].endswith(f":1-{run * TRANSACTIONS}")
        if LOAD_MB:
            print(f"run {run}: {ingested_mb:,.0f} MB, {sum(result.rows.values()) / result.seconds:,.0f} rows/s, "
                  f"{samples[-1]}", flush=True)

    assert published == logged
    changes = ds.dataset(warehouse / "changes", format="parquet", partitioning="hive").count_rows()
    assert changes == logged
    settled = samples[WARM_UP - 1]
    for later in samples[WARM_UP:]:
        assert later.driver_files <= settled.driver_files + FILE_SLACK, samples
        assert later.jvm_files <= settled.jvm_files + FILE_SLACK, samples
        assert later.driver_mb <= settled.driver_mb + MEMORY_SLACK_MB, samples
        assert later.worker_mb <= settled.worker_mb + MEMORY_SLACK_MB, samples
