"""``backup_bootstrap`` loads, takes its parameters and runs stage_image → bootstrap → report.

The DAG file is loaded as ``test_dag_integrity`` loads every DAG (``DagBag`` in a
subprocess with a temporary ``AIRFLOW_HOME``); the task helpers that need no
Spark are checked directly.
"""

from __future__ import annotations

import pytest

from airflow_tasks.bootstrap import split_image_uri, stage_image
from test_dag_integrity import loaded  # noqa: F401  (the module fixture: every DAG, described)

TASKS = ["stage_image", "bootstrap", "report"]


def test_backup_bootstrap_runs_its_three_tasks_in_order(loaded):  # noqa: F811
    dag = loaded["dags"]["backup_bootstrap"]
    assert dag["order"] == TASKS
    upstream = {task: info["upstream"] for task, info in dag["tasks"].items()}
    assert upstream == {"stage_image": [], "bootstrap": ["stage_image"], "report": ["bootstrap"]}
    assert {info["trigger_rule"] for info in dag["tasks"].values()} == {"all_success"}
    assert all(info["retries"] >= 1 for info in dag["tasks"].values())


def test_backup_bootstrap_is_triggered_by_hand_one_run_at_a_time(loaded):  # noqa: F811
    dag = loaded["dags"]["backup_bootstrap"]
    assert dag["timetable"] == "NullTimetable"
    assert dag["max_active_runs"] == 1 and dag["catchup"] is False


def test_backup_bootstrap_takes_image_source_warehouse_and_master(loaded):  # noqa: F811
    params = loaded["dags"]["backup_bootstrap"]["params"]
    assert params == {"image_uri": "", "source_uri": "", "warehouse_uri": "", "spark_master": ""}


@pytest.mark.parametrize(
    "uri, parts",
    [
        ("s3://backups/mariadb/2026-03-04.bak", ("s3://backups/mariadb", "2026-03-04.bak")),
        ("s3://backups/snapshot.bak", ("s3://backups", "snapshot.bak")),
        ("file:///srv/backups/snapshot.bak", ("file:///srv/backups", "snapshot.bak")),
    ],
)
def test_an_image_uri_is_a_store_and_an_object_name(uri, parts):
    assert split_image_uri(uri) == parts


@pytest.mark.parametrize("uri", ["", "s3://backups", "s3://backups/", "file:///", "file:///x.bak", "http://h/x.bak"])
def test_an_image_uri_without_a_store_or_a_name_is_refused(uri):
    with pytest.raises(ValueError, match="expected s3://bucket"):
        split_image_uri(uri)


def test_stage_image_copies_and_verifies_the_image(tmp_path, monkeypatch):
    monkeypatch.setenv("BINLAKE_STAGING_DIR", str(tmp_path / "staging"))
    backups = tmp_path / "backups"
    backups.mkdir()
    (backups / "snapshot.bak").write_bytes(b"image bytes" * 1000)
    staged = stage_image(f"file://{backups}/snapshot.bak")
    assert staged["bytes"] == 11000
    assert open(staged["path"], "rb").read() == (backups / "snapshot.bak").read_bytes()
    assert staged["path"].startswith(str(tmp_path / "staging"))
