"""``binlake_maintenance`` loads, runs daily with its parameters, expire_snapshots →
remove_orphan_files → remove_abandoned_runs → prune_staged → report; its task helpers work on the configured
warehouse and staging folder.

The DAG file is loaded as ``test_dag_integrity`` loads every DAG (``DagBag`` in a
subprocess with a temporary ``AIRFLOW_HOME``); the helpers are called directly.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_tasks import maintenance
from warehouse.catalog import open_catalog
from test_dag_integrity import loaded  # noqa: F401  (the module fixture: every DAG, described)

TASKS = ["expire_snapshots", "remove_orphan_files", "remove_abandoned_runs", "prune_staged", "report"]


def test_binlake_maintenance_runs_its_steps_in_order(loaded):  # noqa: F811
    dag = loaded["dags"]["binlake_maintenance"]
    assert dag["order"] == TASKS
    upstream = {task: info["upstream"] for task, info in dag["tasks"].items()}
    assert upstream == {"expire_snapshots": [], "remove_orphan_files": ["expire_snapshots"],
                        "remove_abandoned_runs": ["remove_orphan_files"], "prune_staged": ["remove_abandoned_runs"],
                        "report": ["expire_snapshots", "prune_staged", "remove_abandoned_runs", "remove_orphan_files"]}
    assert {info["trigger_rule"] for info in dag["tasks"].values()} == {"all_success"}
    assert all(info["retries"] >= 1 for info in dag["tasks"].values())


def test_binlake_maintenance_runs_daily_one_run_at_a_time(loaded):  # noqa: F811
    dag = loaded["dags"]["binlake_maintenance"]
    assert dag["timetable"] == "CronTriggerTimetable"
    assert dag["schedule"] == "30 3 * * *"
    assert dag["catchup"] is False and dag["max_active_runs"] == 1


def test_binlake_maintenance_takes_retention_keep_last_orphan_age_and_dry_run(loaded):  # noqa: F811
    assert loaded["dags"]["binlake_maintenance"]["params"] == {
        "retention_days": 7, "keep_last": 5, "orphan_age_hours": 24, "dry_run": False}


def test_the_tasks_maintain_the_configured_warehouse(tmp_path, monkeypatch):
    warehouse = tmp_path / "warehouse"
    monkeypatch.setenv("BINLAKE_WAREHOUSE_URI", warehouse.as_uri())
    monkeypatch.setenv("BINLAKE_STAGING_DIR", str(tmp_path / "no staging yet"))
    catalog = open_catalog(warehouse)
    catalog.create_namespace("db")
    table = catalog.create_table(("db", "t"), schema=pa.schema([("id", pa.int64())]),
                                 location=(warehouse / "_iceberg" / "db" / "t").as_uri())
    for run in ("r1", "r2"):
        path = warehouse / "changes" / "db" / "t" / f"{run}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), path)
        table.add_files([f"file://{path}"])
    assert maintenance.expire_snapshots(0, 1, dry_run=True) == {"db.t": 1}
    assert maintenance.expire_snapshots(0, 1, dry_run=False) == {"db.t": 1}
    assert maintenance.remove_orphan_files(24, dry_run=False) == {"db.t": {"files": 0, "bytes": 0}}
    assert maintenance.prune_staged(dry_run=False) == {}
    left = warehouse / "_runs" / "failed-run" / "staging" / "transactions" / "part-1.parquet"
    left.parent.mkdir(parents=True)
    left.write_bytes(b"x" * 7)
    assert maintenance.remove_abandoned_runs(0, dry_run=False) == {"files": 1, "bytes": 7} and not left.exists()
    assert maintenance.report({"db.t": 1}, {"db.t": {"files": 0, "bytes": 0}}, {"files": 1, "bytes": 7}, {},
                              dry_run=False) == [
        "db.t: 1 snapshots expired, 0 files removed (0 bytes)", "abandoned runs: 1 files removed (7 bytes)",
        "total: 1 snapshots expired, 1 files removed (7 bytes)"]
