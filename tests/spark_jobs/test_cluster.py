"""The ingest, a backfill and a bootstrap on a Spark standalone cluster whose workers share no
folder with the driver give what local mode gives.

``infra/spark_cluster.sh`` starts a master and two workers on loopback, each worker with its own
work and temporary folders, in a mount namespace where this test session's temporary folder
(the binlog sources, the state folders, the local warehouse) is an empty tmpfs: the workers
cannot open a file of the driver's, as on a cluster of several hosts. They read the binlogs and
write the run's staging and output through the object store (moto over HTTP).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from ci import in_ci
from fixture_facts import path
from mariadb import REPO_ROOT
from spark_jobs.bootstrap import bootstrap
from spark_jobs.ingest import ingest
from warehouse import catalog

SCRIPT = REPO_ROOT / "infra" / "spark_cluster.sh"
FIXTURES = ["osheroff__mysql-binlog-connector-java/mysql-bin.checksum-crc32", "blackbeam__rust_mysql_common/vector.binlog"]
LOG_ORDER = ("_binlog_file", "_binlog_pos", "_binlog_inner_offset", "_row_index")


def namespaces_can_be_private() -> bool:
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A master and two workers that cannot see this session's temporary folder."""
    if not namespaces_can_be_private():
        reason = "hiding the driver's folders from the workers needs a mount namespace (unshare --mount)"
        if in_ci():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    folder = tempfile.mkdtemp(prefix="binlake-cluster-")  # outside the folder the workers do not see
    env = dict(os.environ, PYTHON=sys.executable, SPARK_CLUSTER_HIDE=str(tmp_path_factory.getbasetemp()))
    started = subprocess.run(["bash", str(SCRIPT), "start", folder, "2", "1"], capture_output=True, text=True, env=env,
                             timeout=300)
    assert started.returncode == 0, started.stderr
    details = dict(line.split("=", 1) for line in started.stdout.splitlines() if "=" in line)
    try:
        yield details
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", folder], capture_output=True, env=env, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


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


def contents(root: Path) -> dict[tuple[str, str], list[dict]]:
    """Every source table's ``current`` and ``changes`` as the catalog gives them, rows in log order."""
    tables = catalog.open_catalog(root)
    found = {}
    for namespace in tables.list_namespaces():
        if namespace == catalog.identifier("runs")[:1]:
            continue
        for name in tables.list_tables(namespace):
            rows = tables.load_table(name).scan().to_arrow().to_pylist()
            found[tuple(name)] = sorted(rows, key=lambda r: tuple(r[c] or 0 for c in LOG_ORDER))
    return found


def test_a_cluster_whose_workers_see_no_folder_of_the_driver_ingests_into_s3_as_local_mode_does(
        spark, cluster, sources, s3_server, tmp_path, monkeypatch):
    local, state = tmp_path / "local", tmp_path / "state"
    uri = f"s3://{s3_server.create_bucket('cluster')}/lake"
    for name, value in s3_server.settings().items():  # for the command, and for reading its tables here
        monkeypatch.setenv(name, value)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    for source in sources:
        ingest(str(source), str(local), spark=spark, target_bytes=10 << 10, validation=False)
        run = subprocess.run(
            [sys.executable, "-m", "spark_jobs.ingest", "--source", str(source), "--warehouse", uri, "--state",
             str(state), "--master", cluster["master"], "--split-mb", "0.01"],
            capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=900,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        assert "row changes" in run.stdout and "quality: passed" in run.stdout
        # the driver's files reach the workers through the object store only
        assert f"copied to {uri}/_runs/" in run.stderr
    ours, theirs = contents(state), contents(local)
    assert ours.keys() == theirs.keys() and len(ours) >= 8
    assert sum(len(rows) for rows in ours.values()) > 100
    for name in ours:
        assert ours[name] == theirs[name], name
    leftovers = [key["Key"] for key in s3_server.client().list_objects_v2(Bucket=uri.split("/")[2]).get("Contents", [])
                 if "/_runs/" in key["Key"] and not key["Key"].endswith("/")]  # but an empty folder's marker
    assert leftovers == []  # the runs' staging and output were removed once committed


DAYS = [date(2026, 4, 1), date(2026, 4, 2)]


def at(day: date, hour: int) -> int:
    return int(datetime(day.year, day.month, day.day, hour, tzinfo=timezone.utc).timestamp())


@pytest.fixture(scope="module")
def two_days(mariadb, tmp_path_factory) -> Path:
    """A real server's log of two days in MINIMAL row images: the second day's after-images need
    the rows of the first (a backfill of it folds onto the state the first day left)."""
    folder = tmp_path_factory.mktemp("two-days")
    mariadb.logged(f"""
CREATE DATABASE cluster_days;
USE cluster_days;
CREATE TABLE item (id INT PRIMARY KEY, name VARCHAR(20), qty INT);
SET timestamp = {at(DAYS[0], 10)};
INSERT INTO item VALUES (1, 'one', 1), (2, 'two', 2), (3, 'three', 3);
SET timestamp = {at(DAYS[1], 9)};
UPDATE item SET qty = 20 WHERE id = 2;
UPDATE item SET id = 30 WHERE id = 3;
DELETE FROM item WHERE id = 1;
SET timestamp = DEFAULT;
""", folder, row_image="MINIMAL")
    return folder


def test_a_backfill_on_the_cluster_rebuilds_a_day_from_the_state_before_it_as_local_mode_does(
        spark, cluster, two_days, s3_server, tmp_path, monkeypatch):
    """The second day rebuilt on the cluster: its binlogs and the first day's state reach the
    workers through the object store only, and the day's changes come back whole, as the ingest
    gave them (a state the tasks could not read would leave their columns unknown)."""
    local, state = tmp_path / "local", tmp_path / "state"
    uri = f"s3://{s3_server.create_bucket('cluster-backfill')}/lake"
    for name, value in s3_server.settings().items():
        monkeypatch.setenv(name, value)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    ingest(str(two_days), str(local), spark=spark, validation=False)
    common = ["--source", str(two_days), "--warehouse", uri, "--state", str(state), "--master", cluster["master"]]
    run = subprocess.run([sys.executable, "-m", "spark_jobs.ingest", *common], capture_output=True, text=True,
                         cwd=REPO_ROOT, env=env, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    backfill = subprocess.run(
        [sys.executable, "-m", "spark_jobs.backfill", *common, "--start", f"{DAYS[1]}T00:00:00+00:00",
         "--end", f"{DAYS[1] + timedelta(days=1)}T00:00:00+00:00"], capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=900)
    assert backfill.returncode == 0, backfill.stderr[-3000:]
    assert "3 changes rebuilt (cluster_days.item: 3)" in backfill.stdout
    assert f"copied to {uri}/_runs/backfill-" in backfill.stderr  # the binlogs, for the workers
    rebuilt, wanted = contents(state), contents(local)
    item = wanted[("cluster_days", "item__changes")]
    assert [row["_op"] for row in item] == ["c", "c", "c", "u", "u", "d"] and item[3]["name"] == "two"
    assert rebuilt == wanted


@pytest.fixture(scope="module")
def image(mariadb, tmp_path_factory) -> Path:
    """A backup image of a real server's database, in chunks small enough to spread over tasks."""
    mariadb.sql("CREATE DATABASE cluster_image; USE cluster_image; "
                "CREATE TABLE item (id INT PRIMARY KEY, name VARCHAR(40), qty INT); "
                "INSERT INTO item SELECT seq, CONCAT('item ', seq), seq % 7 FROM seq_1_to_3000;")
    target = tmp_path_factory.mktemp("image") / "snapshot.bak"
    done = subprocess.run([sys.executable, "-m", "binlog_codec.cli", "backup", "create", "--socket",
                           str(mariadb.socket), "--database", "cluster_image", "--chunk-mb", "0.01", str(target)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return target


def test_a_bootstrap_on_the_cluster_gives_the_tables_local_mode_gives(spark, cluster, image, s3_server, tmp_path,
                                                                      monkeypatch):
    """The image reaches the workers through the object store only (a copy the driver uploads)."""
    local, state = tmp_path / "local", tmp_path / "state"
    uri = f"s3://{s3_server.create_bucket('cluster-bootstrap')}/lake"
    for name, value in s3_server.settings().items():
        monkeypatch.setenv(name, value)
    bootstrap(spark, str(image), str(local), source_key="s3://binlogs/cluster-image")
    run = subprocess.run(
        [sys.executable, "-m", "spark_jobs.bootstrap", "--image", str(image), "--warehouse", uri, "--state", str(state),
         "--source-key", "s3://binlogs/cluster-image", "--master", cluster["master"]],
        capture_output=True, text=True, cwd=REPO_ROOT, env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"), timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"copied to {uri}/_runs/bootstrap-" in run.stderr
    ours, theirs = contents(state), contents(local)
    assert len(theirs[("cluster_image", "item")]) == 3000 and ours == theirs
