"""Every DAG file loads, and ``binlog_ingest`` has the shape its runs rely on.

The DAG files are loaded with Airflow's ``DagBag`` in a subprocess whose
``AIRFLOW_HOME`` is a temporary folder, so no developer settings leak in; the
subprocess prints what the assertions look at as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DAGS_FOLDER = REPO_ROOT / "dags"
RESULT_MARK = "dag integrity: "
INGEST_TASKS = ["discover", "stage", "decode_and_materialize", "validate", "publish", "report"]

DESCRIBE = """
import json, sys
import pendulum
from airflow.dag_processing.dagbag import DagBag
from airflow.serialization.encoders import coerce_to_core_timetable

bag = DagBag(dag_folder=sys.argv[1])
dags = {}
for dag_id, dag in bag.dags.items():
    timetable = coerce_to_core_timetable(dag.timetable)
    interval = timetable.infer_manual_data_interval(run_after=pendulum.datetime(2026, 3, 4, 5, 6, tz="UTC"))
    condition = getattr(dag.timetable, "asset_condition", None)
    dags[dag_id] = {
        "file": dag.fileloc,
        "description": dag.description,
        "doc_md": dag.doc_md,
        "scheduled_on": None if condition is None else [type(condition).__name__, getattr(condition, "name", None)],
        "timetable": type(dag.timetable).__name__,
        "schedule": getattr(timetable, "summary", None),
        "interval": [interval.start.isoformat(), interval.end.isoformat()],
        "catchup": dag.catchup,
        "max_active_runs": dag.max_active_runs,
        "params": {name: dag.params[name] for name in dag.params},
        "tasks": {
            task.task_id: {
                "upstream": sorted(task.upstream_task_ids),
                "retries": task.retries,
                "retry_delay": task.retry_delay.total_seconds(),
                "trigger_rule": task.trigger_rule.value,
                "outlets": [[type(outlet).__name__, outlet.name] for outlet in task.outlets],
            }
            for task in dag.tasks
        },
        "order": [task.task_id for task in dag.topological_sort()],
    }
print(%r + json.dumps({"errors": {k: str(v) for k, v in bag.import_errors.items()}, "dags": dags}))
""" % RESULT_MARK


@pytest.fixture(scope="module")
def loaded(tmp_path_factory) -> dict:
    """Import errors and a description of every DAG in ``dags/``."""
    home = tmp_path_factory.mktemp("airflow")
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
    }
    done = subprocess.run([sys.executable, "-c", DESCRIBE, str(DAGS_FOLDER)], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300)
    lines = [line[len(RESULT_MARK):] for line in done.stdout.splitlines() if line.startswith(RESULT_MARK)]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(lines[-1])


def test_every_dag_file_loads_without_import_errors(loaded):
    assert loaded["errors"] == {}
    loaded_files = {Path(dag["file"]).name for dag in loaded["dags"].values()}
    assert loaded_files == {path.name for path in DAGS_FOLDER.glob("*.py")}


def test_binlog_ingest_runs_its_tasks_in_order(loaded):
    dag = loaded["dags"]["binlog_ingest"]
    assert dag["order"] == INGEST_TASKS
    upstream = {task: info["upstream"] for task, info in dag["tasks"].items()}
    assert upstream["discover"] == []
    for before, task in zip(INGEST_TASKS, INGEST_TASKS[1:]):
        assert before in upstream[task]
    # report also runs when there was nothing new (the work tasks skipped), never after a failure
    assert dag["tasks"]["report"]["trigger_rule"] == "none_failed"
    assert {info["trigger_rule"] for task, info in dag["tasks"].items() if task != "report"} == {"all_success"}


def test_binlog_ingest_schedules_non_empty_intervals_one_run_at_a_time(loaded):
    dag = loaded["dags"]["binlog_ingest"]
    assert dag["timetable"] == "CronDataIntervalTimetable"
    start, end = (datetime.fromisoformat(moment) for moment in dag["interval"])
    assert start < end <= datetime(2026, 3, 4, 5, 6, tzinfo=timezone.utc)
    assert dag["catchup"] is False and dag["max_active_runs"] == 1


def test_binlog_ingest_takes_source_warehouse_master_and_rebuild_as_params(loaded):
    dag = loaded["dags"]["binlog_ingest"]
    assert set(dag["params"]) == {
        "source_uri", "warehouse_uri", "spark_master", "rebuild", "stream", "accept_gap", "accept_new_series",
        "accept_type_change",
    }
    assert dag["params"].pop("rebuild") is False  # new data, unless a backfill run or asked for
    assert dag["params"].pop("accept_gap") is False and dag["params"].pop("accept_new_series") is False  # never by default
    assert dag["params"].pop("accept_type_change") == []
    assert all(value is None for value in dag["params"].values())  # none: the Variables and environment decide


def test_binlog_ingest_retries_every_task_after_a_short_delay(loaded):
    for task, info in loaded["dags"]["binlog_ingest"]["tasks"].items():
        assert info["retries"] >= 1, task
        assert 0 < info["retry_delay"] <= 120, task


def test_every_dag_says_what_it_does(loaded):
    for dag_id, dag in loaded["dags"].items():
        assert dag["description"] and len(dag["description"]) <= 200, dag_id  # the one line the DAG list shows
        assert dag["doc_md"] and dag_id in dag["doc_md"], dag_id  # the DAG's page: its module text


def test_binlog_ingest_publishes_its_table_events_through_one_alias(loaded):
    tasks = loaded["dags"]["binlog_ingest"]["tasks"]
    assert {task: info["outlets"] for task, info in tasks.items() if info["outlets"]} == {
        "publish": [["AssetAlias", "binlake_tables"]]}


def test_the_example_downstream_dag_is_scheduled_on_that_alias(loaded):
    dag = loaded["dags"]["binlake_downstream_example"]
    assert dag["timetable"] == "AssetTriggeredTimetable"
    assert dag["scheduled_on"] == ["AssetAlias", "binlake_tables"]
