"""Real runs of the ``binlog_ingest`` DAG: Airflow on SQLite, the sample binlogs in a moto S3 server.

Each DAG run is ``dag.test()`` in a subprocess of its own (this file run as a
script, see :func:`main`), so that Airflow reads the test's ``AIRFLOW_HOME``,
database and ``binlake_s3`` connection from the environment before it is
imported. The module tells one story against one bucket and one warehouse:

1. the bucket holds ``mariadb-bin.000001`` cut at a transaction boundary: the
   first run ingests it;
2. a second run with nothing new changes nothing;
3. the whole ``mariadb-bin.000001`` (grown) and ``mariadb-bin.000002`` arrive;
   the third run's commit is killed half way once, Airflow retries the publish
   task and the run publishes once;
4. a run for a past data interval in which nothing committed finds nothing to
   do and changes nothing;
5. a rebuild run (what a backfill run does) for the day the binlogs were
   written rebuilds that day's ``changes/`` partitions: the same rows, no
   duplicates, ``current/`` and the checkpoint untouched;
6. the same binlogs copied under another prefix: the run is refused at once
   (no retries), naming the stream that read them and the ``stream`` param
   that would go on, and publishes nothing; run with that param, it finds
   nothing new.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DAGS_FOLDER = REPO_ROOT / "dags"
DAG_ID = "binlog_ingest"
SAMPLES = sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*"))
RESULT_MARK = "binlog_ingest test run: "
KEY = ("_binlog_seq", "_binlog_pos", "_binlog_inner_offset", "_row_index")
RUN_TIMEOUT = 900
BACKFILL_DATE = datetime(2026, 2, 1, 12, 30, tzinfo=timezone.utc)  # long before the binlogs arrive
SAMPLES_DAY = datetime(2026, 11, 21, 12, 30, tzinfo=timezone.utc)  # when the bundled samples were written


# ---------------------------------------------------------------- the expected content


def logged_changes(path: Path, stop: int | None = None) -> list:
    """The row changes ``binlog_codec`` reads from a binlog file (those before ``stop``, when given)."""
    from binlog_codec.rows import read_rows

    return [row for row in read_rows(str(path)) if stop is None or row.pos < stop]


def transaction_boundary(path: Path, after_transactions: int) -> int:
    """The end position of the file's ``after_transactions``-th transaction."""
    from binlog_codec.transactions import scan_transactions

    return list(scan_transactions(str(path)))[after_transactions - 1].end


def expected_current(changes: list) -> dict[str, set[int]]:
    """Per ``db.table``, the primary keys left after applying the changes in order."""
    keys: dict[str, set[int]] = {}
    for row in changes:
        table = keys.setdefault(f"{row.database}.{row.table}", set())
        if row.kind == "delete":
            table.discard(row.change.before["id"])
        else:
            if row.change.before is not None:
                table.discard(row.change.before["id"])
            table.add(row.change.after["id"])
    return keys


# ---------------------------------------------------------------- reading the warehouse


def warehouse_files(warehouse: Path) -> dict[str, bytes]:
    """Every published file of the warehouse and its bytes."""
    return {
        str(p.relative_to(warehouse)): p.read_bytes()
        for p in sorted(warehouse.rglob("*"))
        if p.is_file() and not p.relative_to(warehouse).parts[0].startswith("_")
    }


# Read through the catalog, imported here: the DAG run's own process imports this module too.


def changes_of(warehouse: Path, table: str) -> list[dict]:
    """The ``changes`` rows of ``db.table``."""
    from mariadb_workload import warehouse_rows

    return warehouse_rows(warehouse, "changes", *table.split("."))


def current_ids(warehouse: Path, table: str) -> set[int]:
    """The primary keys in ``current`` of ``db.table``."""
    from mariadb_workload import warehouse_rows

    return {row["id"] for row in warehouse_rows(warehouse, "current", *table.split("."))}


def run_records(warehouse: Path) -> list[dict]:
    from warehouse import catalog

    return catalog.read(warehouse, catalog.identifier("runs")).to_pylist()


# ---------------------------------------------------------------- running the DAG


def run_dag(env: dict[str, str], conf: dict, log: Path, *, logical_date: datetime | None = None,
            kill_commit_once: bool = False) -> dict:
    """One DAG run in a subprocess, its output kept in ``log``; returns its state, each task's state
    and tries, and the report."""
    request = {
        "conf": conf,
        "logical_date": logical_date.isoformat() if logical_date else None,
        "kill_commit_once": kill_commit_once,
    }
    done = subprocess.run(
        [sys.executable, __file__, json.dumps(request)],
        env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT,
    )
    log.write_text(done.stdout + done.stderr, encoding="utf-8")
    results = [line[len(RESULT_MARK):] for line in done.stdout.splitlines() if line.startswith(RESULT_MARK)]
    if done.returncode != 0 or not results:
        raise AssertionError(f"the DAG run did not finish (exit {done.returncode}), see {log}:\n"
                             f"{done.stdout[-6000:]}\n{done.stderr[-6000:]}")
    return {**json.loads(results[-1]), "log": str(log)}


def main(request: dict) -> None:
    """In the subprocess: ``dag.test()`` of the DAG as the dags folder defines it, then one line
    with the outcome. Retries wait one second instead of the DAG's delay, to keep the test short."""
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=str(DAGS_FOLDER)).dags[DAG_ID]
    for task in dag.tasks:
        task.retry_delay = timedelta(seconds=1)
    if request["kill_commit_once"]:
        _kill_the_first_commit_half_way()
    logical_date = datetime.fromisoformat(request["logical_date"]) if request["logical_date"] else None
    started = time.monotonic()
    run = dag.test(run_conf=request["conf"], **({"logical_date": logical_date} if logical_date else {}))
    seconds = time.monotonic() - started
    tasks = {ti.task_id: {"state": str(ti.state), "tries": ti.try_number} for ti in run.get_task_instances()}
    outcome = {
        "state": str(run.state),
        "seconds": round(seconds, 1),
        "tasks": tasks,
        "interval": [str(run.data_interval_start), str(run.data_interval_end)],
        "report": _return_value(run, "report"),
    }
    print(RESULT_MARK + json.dumps(outcome, default=str), flush=True)


def _kill_the_first_commit_half_way() -> None:
    """The first commit applies half of its journal's moves, then dies; later ones run normally
    (the retried task rolls the journal forward, as after a crash)."""
    from warehouse import publish

    real_apply = publish._apply
    killed = []

    def apply_half_and_die(warehouse: Path, journal: Path) -> None:
        if killed:
            return real_apply(warehouse, journal)
        killed.append(journal)
        moves = publish.Plan.from_json(json.loads(journal.read_text(encoding="utf-8"))).moves
        for move in moves[: len(moves) // 2]:
            move.apply(warehouse)
        raise RuntimeError(f"killed after {len(moves) // 2} of {len(moves)} moves of the commit")

    publish._apply = apply_half_and_die


def _return_value(run, task_id: str):
    """What ``task_id`` returned in ``run`` (None when it did not run)."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        xcom = session.scalars(
            select(XComModel).where(
                XComModel.dag_id == run.dag_id, XComModel.run_id == run.run_id,
                XComModel.task_id == task_id, XComModel.key == "return_value",
            )
        ).first()
        return None if xcom is None else XComModel.deserialize_value(xcom)


# ---------------------------------------------------------------- the story


@pytest.fixture(scope="module")
def airflow_env(tmp_path_factory, s3_server) -> dict[str, str]:
    """The environment of the module's DAG runs: a fresh ``AIRFLOW_HOME`` with a migrated SQLite
    database, the repository's dags, the ``binlake_s3`` connection to the test S3 server."""
    from s3_server import ACCESS_KEY, REGION, SECRET_KEY

    home = tmp_path_factory.mktemp("airflow")
    connection = {"conn_type": "aws", "login": ACCESS_KEY, "password": SECRET_KEY,
                  "extra": {"endpoint_url": s3_server.endpoint_url, "region_name": REGION}}
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW_CONN_BINLAKE_S3": json.dumps(connection),
        "BINLAKE_STAGING_DIR": str(home / "staging"),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
    }
    migrated = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=env,
                              capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert migrated.returncode == 0, migrated.stdout[-3000:] + migrated.stderr[-3000:]
    return env


@pytest.fixture(scope="module")
def story(airflow_env, s3_server, tmp_path_factory) -> dict:
    """The four runs of the module text; per step, the DAG run's outcome, a copy of the warehouse
    after it and its files' bytes; and the row changes the binlogs hold."""
    first, second = SAMPLES
    cut = transaction_boundary(first, 5)
    assert 0 < cut < first.stat().st_size
    bucket = s3_server.create_bucket("binlog-ingest")
    client = s3_server.client()
    client.put_object(Bucket=bucket, Key=f"binlogs/{first.name}", Body=first.read_bytes()[:cut])
    warehouse = tmp_path_factory.mktemp("warehouse")
    conf = {"source_uri": f"s3://{bucket}/binlogs", "warehouse_uri": warehouse.as_uri(), "spark_master": "local[2]"}

    snapshots = tmp_path_factory.mktemp("snapshots")
    steps = {}

    def run(step: str, conf: dict = conf, **options) -> None:
        steps[step] = run_dag(airflow_env, conf, snapshots / f"{step.replace(' ', '_')}.log", **options)
        steps[step]["warehouse"] = shutil.copytree(warehouse, snapshots / step.replace(" ", "_"))
        steps[step]["files"] = warehouse_files(warehouse)

    run("first")
    run("nothing new")
    client.upload_file(str(first), bucket, f"binlogs/{first.name}")
    client.upload_file(str(second), bucket, f"binlogs/{second.name}")
    run("new and grown", kill_commit_once=True)
    run("backfill", logical_date=BACKFILL_DATE, conf={**conf, "rebuild": True})
    run("rebuild", logical_date=SAMPLES_DAY, conf={**conf, "rebuild": True})
    for sample in SAMPLES:
        client.upload_file(str(sample), bucket, f"copy/{sample.name}")
    run("copy", conf={**conf, "source_uri": f"s3://{bucket}/copy"})
    run("copy as the stream", conf={**conf, "source_uri": f"s3://{bucket}/copy", "stream": conf["source_uri"]})
    return {
        "steps": steps,
        "before_cut": logged_changes(first, cut),
        "all": logged_changes(first) + logged_changes(second),
    }


def table_counts(changes: list) -> dict[str, int]:
    return dict(Counter(f"{row.database}.{row.table}" for row in changes))


def assert_succeeded(step: dict, ran: set[str]) -> None:
    """The run succeeded, and exactly the tasks ``ran`` did their work (the others were skipped)."""
    states = {task: info["state"] for task, info in step["tasks"].items()}
    errors = [line for line in Path(step["log"]).read_text(encoding="utf-8").splitlines() if "[error" in line]
    assert step["state"] == "success", (states, step["log"], errors[:5])
    assert {task for task, state in states.items() if state == "success"} == ran, states


ALL_TASKS = {"discover", "stage", "decode_and_materialize", "validate", "publish", "report"}


def test_the_first_run_ingests_every_row_change_of_the_binlog(story):
    step = story["steps"]["first"]
    warehouse = step["warehouse"]
    assert_succeeded(step, ALL_TASKS)
    expected = table_counts(story["before_cut"])
    assert expected and step["report"]["rows"] == expected
    for table, count in expected.items():
        assert len(changes_of(warehouse, table)) == count
    for table, keys in expected_current(story["before_cut"]).items():
        assert current_ids(warehouse, table) == keys
    (record,) = [r for r in run_records(warehouse) if r["run_id"] == step["report"]["run_id"]]
    assert json.loads(record["quality"])["success"] is True
    assert Path(step["report"]["quality"]["data_docs"]).is_file()
    assert step["report"]["checkpoint"]["file"] == SAMPLES[0].name


def test_a_run_with_nothing_new_skips_the_work_and_changes_nothing(story):
    step = story["steps"]["nothing new"]
    assert_succeeded(step, {"discover", "report"})
    assert {step["tasks"][t]["state"] for t in ALL_TASKS - {"discover", "report"}} == {"skipped"}
    assert step["report"]["run_id"] == ""
    assert step["files"] == story["steps"]["first"]["files"]


def test_new_binlogs_and_a_grown_file_add_exactly_the_new_transactions(story):
    step = story["steps"]["new and grown"]
    warehouse = step["warehouse"]
    assert_succeeded(step, ALL_TASKS)
    assert step["report"]["rows"] == {
        table: count - table_counts(story["before_cut"]).get(table, 0)
        for table, count in table_counts(story["all"]).items()
    }
    for table, count in table_counts(story["all"]).items():
        changes = changes_of(warehouse, table)
        keys = [tuple(change[k] for k in KEY) for change in changes]
        assert len(keys) == len(set(keys)) == count
    for table, keys in expected_current(story["all"]).items():
        assert current_ids(warehouse, table) == keys
    assert step["report"]["checkpoint"] == {"file": SAMPLES[1].name, "position": SAMPLES[1].stat().st_size,
                                            "gtids": "0-1-9", "continuity": "gtid"}
    (record,) = [r for r in run_records(warehouse) if r["run_id"] == step["report"]["run_id"]]
    assert (record["stream"], record["gtid_set"], record["continuity"]) == (
        step["report"]["source"], "0-1-9", "gtid")


def test_a_commit_killed_half_way_is_retried_and_publishes_once(story):
    step = story["steps"]["new and grown"]
    warehouse = step["warehouse"]
    assert step["tasks"]["publish"]["tries"] == 2
    assert all(info["tries"] == 1 for task, info in step["tasks"].items() if task != "publish")
    runs = run_records(warehouse)
    assert len(runs) == len({r["run_id"] for r in runs}) == 2
    assert not (warehouse / "_journal").exists() or not any((warehouse / "_journal").iterdir())


def test_a_rebuild_of_the_binlogs_day_gives_the_same_changes_and_leaves_current_alone(story):
    step = story["steps"]["rebuild"]
    warehouse, before = step["warehouse"], story["steps"]["backfill"]["warehouse"]
    assert_succeeded(step, ALL_TASKS)
    assert step["report"]["run_id"].startswith("backfill-")
    drop = {"_incomplete_columns"}
    for table, count in table_counts(story["all"]).items():
        rebuilt, earlier = changes_of(warehouse, table), changes_of(before, table)
        keys = [tuple(change[k] for k in KEY) for change in rebuilt]
        assert len(keys) == len(set(keys)) == count
        ordered = lambda rows: sorted(({k: v for k, v in r.items() if k not in drop} for r in rows),
                                      key=lambda r: tuple(r[k] or 0 for k in KEY))
        assert ordered(rebuilt) == ordered(earlier), table
    rewritten = ("changes/", "metadata/runs/", "quality/")  # the rebuilt days, its run record, its report
    unchanged = {name: data for name, data in step["files"].items() if not name.startswith(rewritten)}
    assert unchanged == {name: data for name, data in story["steps"]["backfill"]["files"].items()
                         if not name.startswith(rewritten)}
    (record,) = [r for r in run_records(warehouse) if r["run_id"] == step["report"]["run_id"]]
    assert record["kind"] == "backfill" and json.loads(record["quality"])["success"] is True


def test_a_backfill_run_for_an_interval_without_transactions_changes_nothing(story):
    step = story["steps"]["backfill"]
    start, end = (datetime.fromisoformat(moment) for moment in step["interval"])
    assert start < end <= BACKFILL_DATE
    assert_succeeded(step, {"discover", "report"})
    assert step["report"]["run_id"] == ""
    assert step["files"] == story["steps"]["new and grown"]["files"]


def test_the_same_binlogs_under_another_prefix_are_refused_until_named_as_the_stream(story):
    refused, before = story["steps"]["copy"], story["steps"]["rebuild"]
    assert refused["state"] == "failed"
    assert refused["tasks"]["decode_and_materialize"] == {"state": "failed", "tries": 1}  # no retries
    log, stream = Path(refused["log"]).read_text(encoding="utf-8"), story["steps"]["first"]["report"]["source"]
    assert "refused, nothing published" in log and f"was read by the stream '{stream}'" in log
    assert f"run with --stream '{stream}' (DAG param stream)" in log
    assert refused["files"] == before["files"]
    named = story["steps"]["copy as the stream"]
    assert_succeeded(named, {"discover", "report"})
    assert named["report"]["run_id"] == "" and named["files"] == before["files"]


def test_a_warehouse_in_s3_gets_the_same_tables_and_a_rebuild_of_its_day(airflow_env, s3_server, tmp_path,
                                                                          monkeypatch):
    """The samples ingested by a DAG run into ``s3://`` (the ``binlake_s3`` connection's settings,
    a state folder under ``BINLAKE_STATE_DIR``), then their day rebuilt there."""
    from warehouse import catalog, storage

    bucket = s3_server.create_bucket("s3-warehouse")
    for sample in SAMPLES:
        s3_server.client().upload_file(str(sample), bucket, f"binlogs/{sample.name}")
    env = {**airflow_env, storage.STATE_ENV: str(tmp_path / "state")}
    conf = {"source_uri": f"s3://{bucket}/binlogs", "warehouse_uri": f"s3://{bucket}/lake", "spark_master": "local[2]"}
    ingested = run_dag(env, conf, tmp_path / "ingest.log")
    rebuilt = run_dag(env, {**conf, "rebuild": True}, tmp_path / "rebuild.log", logical_date=SAMPLES_DAY)
    assert_succeeded(ingested, ALL_TASKS)
    assert_succeeded(rebuilt, ALL_TASKS)
    assert rebuilt["report"]["run_id"].startswith("backfill-")
    for name, value in s3_server.settings().items():
        monkeypatch.setenv(name, value)
    warehouse = storage.state_folder(conf["warehouse_uri"], base=tmp_path / "state")
    logged = [change for sample in SAMPLES for change in logged_changes(sample)]
    for table, count in table_counts(logged).items():
        changes = changes_of(warehouse, table)
        keys = [tuple(change[k] for k in KEY) for change in changes]
        assert len(keys) == len(set(keys)) == count, table
        assert changes_of(warehouse, table) and all(
            path.startswith(f"s3://{bucket}/lake/") for path in catalog.data_files(warehouse, ("shop", "orders")))
    for table, keys in expected_current(logged).items():
        assert current_ids(warehouse, table) == keys
    assert [r["kind"] for r in sorted(run_records(warehouse), key=lambda r: r["finished"])] == ["ingest", "backfill"]
    assert not list(warehouse.rglob("*.parquet")), "table files left in the state folder"


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
