"""The same ingest on a Spark standalone cluster (a master and two workers on loopback,
started from the pyspark installation by ``infra/spark_cluster.sh``) as in local mode."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from fixture_facts import path
from mariadb import REPO_ROOT
from spark_jobs.ingest import ingest

SCRIPT = REPO_ROOT / "infra" / "spark_cluster.sh"
FIXTURES = ["osheroff__mysql-binlog-connector-java/mysql-bin.checksum-crc32", "blackbeam__rust_mysql_common/vector.binlog"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cluster")
    env = dict(os.environ, PYTHON=sys.executable)
    started = subprocess.run(["bash", str(SCRIPT), "start", str(folder), "2", "1"], capture_output=True, text=True, env=env,
                             timeout=300)
    assert started.returncode == 0, started.stderr
    details = dict(line.split("=", 1) for line in started.stdout.splitlines() if "=" in line)
    try:
        yield details
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], capture_output=True, env=env, timeout=60)


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> list[Path]:
    """The samples, and each fixture (another server's log) in a source of its own."""
    samples = tmp_path_factory.mktemp("samples")
    for sample in sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*")):
        shutil.copyfile(sample, samples / sample.name)
    folders = [samples]
    for name in FIXTURES:
        folder = tmp_path_factory.mktemp("fixture")
        shutil.copyfile(path(name), folder / "fixture-bin.000001")
        folders.append(folder)
    return folders


def contents(warehouse: Path) -> dict[str, list]:
    """Every table of ``changes`` and ``current``, rows in log order."""
    tables = {}
    for area in ("changes", "current"):
        for folder in sorted((warehouse / area).glob("*/*")):
            rows = ds.dataset(folder, format="parquet", partitioning="hive").to_table().to_pylist()
            tables[f"{area}/{folder.parent.name}/{folder.name}"] = sorted(
                rows, key=lambda r: (r["_binlog_file"], r["_binlog_pos"], r["_binlog_inner_offset"] or 0, r["_row_index"])
            )
    return tables


def test_a_standalone_cluster_gives_what_local_mode_gives(spark, cluster, sources, tmp_path):
    local, remote = tmp_path / "local", tmp_path / "cluster"
    for source in sources:
        ingest(str(source), str(local), spark=spark, target_bytes=10 << 10, validation=False)
        run = subprocess.run(
            [sys.executable, "-m", "spark_jobs.ingest", "--source", str(source), "--warehouse", str(remote),
             "--master", cluster["master"], "--split-mb", "0.01", "--no-validation"],
            capture_output=True, text=True, cwd=REPO_ROOT, env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"),
            timeout=900,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        assert "row changes" in run.stdout
    ours, theirs = contents(remote), contents(local)
    assert ours.keys() == theirs.keys() and len(ours) >= 4
    assert sum(len(rows) for rows in ours.values()) > 100
    for name in ours:
        assert ours[name] == theirs[name], name
