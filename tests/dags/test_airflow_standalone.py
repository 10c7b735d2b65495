"""``binlog_ingest`` in a real ``airflow standalone``, triggered the four ways a user triggers it.

One Airflow for the module (``infra/airflow.sh start``, :mod:`airflow_standalone`), every
DAG unpaused as it appears, the Variables ``binlake_source_uri`` (an empty folder: the
scheduled run the unpausing creates finds nothing new) and ``binlake_warehouse_uri`` (a
fresh warehouse) given as ``AIRFLOW_VAR_...`` environment variables. The source is a folder
(``file://``) that grows between the runs, so that each one publishes row changes:

1. the CLI, without a logical date (``airflow dags trigger -c``): the first sample binlog,
   cut after its fifth transaction;
2. the REST API (``POST /api/v2/dags/binlog_ingest/dagRuns``, ``logical_date`` null): the
   whole first file (it grew);
3. what the UI's trigger form sends with only ``source_uri`` filled in (the other params
   as the form shows them: null or false): the second sample binlog;
4. ``airflow backfill create`` over the hour the samples were written: a rebuild of their day.

Each run must succeed, its run record in the warehouse must show the quality gate passed
with expectations, it must emit one asset event per table it published rows of (on
``binlake://localhost/<warehouse>/<db>/<table>``, through the alias ``binlake_tables``),
the example DAG ``binlake_downstream_example``, scheduled on that alias, must run after
it, and its task logs must hold no record at WARNING or above (:data:`ALLOWED_WARNINGS`).
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from airflow_standalone import WARNING_LEVELS, AirflowStandalone, log_records, record_text

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*"))
DAG_ID, DOWNSTREAM = "binlog_ingest", "binlake_downstream_example"
RUN_TIMEOUT = 600  # seconds for one DAG run on a busy 2-core machine
TABLES = {"shop.customers", "shop.orders"}  # what the samples change, in every step below

# Records at WARNING or above a passing run's task log may hold, each with why it is there.
ALLOWED_WARNINGS = {
    # Airflow's DAG bundle reads .airflowignore patterns with pathspec's 'gitwildmatch', which the
    # installed pathspec deprecates: Airflow's own code, logged in every task before binlake's.
    ("py.warnings", "GitWildMatchPattern ('gitwildmatch') is deprecated"),
}


def cut_after(path: Path, transactions: int) -> bytes:
    """The first bytes of a binlog file, up to the end of its ``transactions``-th transaction."""
    from binlog_codec.transactions import scan_transactions

    return path.read_bytes()[:list(scan_transactions(str(path)))[transactions - 1].end]


def samples_hour() -> datetime:
    """The start of the UTC hour the samples' first transaction committed in."""
    from binlog_codec.transactions import scan_transactions

    first = min(t.ending.timestamp for t in scan_transactions(str(SAMPLES[0])))
    return datetime.fromtimestamp(first, timezone.utc).replace(minute=0, second=0, microsecond=0)


def run_records(warehouse: Path) -> dict[str, dict]:
    """The warehouse's run records (``metadata/runs``) by run id."""
    from warehouse import catalog

    return {record["run_id"]: record for record in catalog.read(warehouse, catalog.identifier("runs")).to_pylist()}


def table_uri(warehouse: Path, table: str) -> str:
    """The documented Asset URI of a warehouse table (written out here, not asked of the code)."""
    database, name = table.split(".")
    return f"binlake://localhost{warehouse}/{database}/{name}"


# ---------------------------------------------------------------- the four triggers


def trigger_by_cli(airflow: AirflowStandalone, conf: dict) -> str:
    """``airflow dags trigger binlog_ingest -c CONF`` (no logical date); the new run's id."""
    printed = airflow.cli("dags", "trigger", DAG_ID, "-c", json.dumps(conf), "-o", "json")
    (run,) = json.loads(printed.splitlines()[-1])  # after Airflow's own log lines
    assert run["logical_date"] in (None, "None"), run
    return run["dag_run_id"]


def trigger_by_api(airflow: AirflowStandalone, conf: dict) -> str:
    """``POST /api/v2/dags/binlog_ingest/dagRuns`` with ``logical_date`` null; the new run's id."""
    run = airflow.api(f"dags/{DAG_ID}/dagRuns", "POST", {"logical_date": None, "conf": conf})
    assert run["logical_date"] is None, run
    return run["dag_run_id"]


def form_conf(airflow: AirflowStandalone, **filled) -> dict:
    """The conf the UI's trigger form sends: every param as the form shows it (its default:
    null for the empty text fields, false for the switches), with the ``filled`` ones changed."""
    params = airflow.api(f"dags/{DAG_ID}/details")["params"]
    return {name: param["value"] for name, param in params.items()} | filled


def trigger_by_form(airflow: AirflowStandalone, conf: dict) -> str:
    """The request the UI's trigger form makes (no logical date, run id or note); the new run's id."""
    body = {"conf": conf, "logical_date": None, "data_interval_start": None, "data_interval_end": None}
    return airflow.api(f"dags/{DAG_ID}/dagRuns", "POST", body)["dag_run_id"]


def backfill(airflow: AirflowStandalone, start: datetime, conf: dict) -> str:
    """``airflow backfill create`` from ``start`` to half an hour later: one hourly run; its id."""
    before = {run["dag_run_id"] for run in airflow.dag_runs(DAG_ID)}
    airflow.cli("backfill", "create", "--dag-id", DAG_ID, "--from-date", start.isoformat(),
                "--to-date", (start + timedelta(minutes=30)).isoformat(), "--dag-run-conf", json.dumps(conf))

    def created() -> list[str]:
        return [run["dag_run_id"] for run in airflow.dag_runs(DAG_ID)
                if run["run_type"] == "backfill" and run["dag_run_id"] not in before]

    (run_id,) = airflow.wait_for("the backfill's run", created, timeout=120)
    return run_id


# ---------------------------------------------------------------- the story


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """The module's running Airflow (see the module text), with the folders it reads; stopped at the end."""
    folders = {name: tmp_path_factory.mktemp(name) for name in ("binlogs", "empty", "warehouse", "airflow")}
    airflow = AirflowStandalone(folders["airflow"], {
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW_VAR_BINLAKE_SOURCE_URI": folders["empty"].as_uri(),
        "AIRFLOW_VAR_BINLAKE_WAREHOUSE_URI": folders["warehouse"].as_uri(),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "AIRFLOW_STOP_TIMEOUT": "10",  # seconds before infra/airflow.sh stop kills what is left
    })
    for inherited in ("BINLAKE_WAREHOUSE_URI", "BINLAKE_STAGING_DIR", "SPARK_MASTER", "AIRFLOW_CONN_BINLAKE_S3"):
        airflow.env.pop(inherited, None)
    airflow.start()
    try:
        yield airflow, folders
    finally:
        airflow.stop()


@pytest.fixture(scope="module")
def story(standalone) -> dict:
    """The four runs, each after the source grew; per run, its id, its report and its asset events."""
    airflow, folders = standalone
    source, warehouse = folders["binlogs"], folders["warehouse"]
    first, second = SAMPLES
    conf = {"source_uri": source.as_uri(), "warehouse_uri": warehouse.as_uri(), "spark_master": "local[2]"}
    steps = {}

    def run(step: str, trigger) -> None:
        run_id = trigger()
        airflow.wait_for_run(DAG_ID, run_id, timeout=RUN_TIMEOUT)
        steps[step] = {"run_id": run_id, "report": airflow.xcom(DAG_ID, run_id, "report")}

    (source / first.name).write_bytes(cut_after(first, 5))
    run("cli", lambda: trigger_by_cli(airflow, conf))
    shutil.copyfile(first, source / first.name)
    run("api", lambda: trigger_by_api(airflow, conf))
    shutil.copyfile(second, source / second.name)
    run("form", lambda: trigger_by_form(airflow, form_conf(airflow, source_uri=source.as_uri())))
    run("backfill", lambda: backfill(airflow, samples_hour(), conf))
    scheduled = [r for r in airflow.dag_runs(DAG_ID) if r["run_type"] == "scheduled"]
    for step in scheduled:
        airflow.wait_for_run(DAG_ID, step["dag_run_id"], timeout=RUN_TIMEOUT)
    for step in steps.values():
        step["events"] = airflow.api("assets/events", source_dag_id=DAG_ID, source_run_id=step["run_id"])["asset_events"]
    return {"steps": steps, "scheduled": scheduled, "warehouse": warehouse, "airflow": airflow, "conf": conf}


STEPS = ["cli", "api", "form", "backfill"]


@pytest.mark.parametrize("step", STEPS)
def test_each_trigger_publishes_rows_that_passed_the_quality_gate(story, step):
    report = story["steps"][step]["report"]
    assert report["run_id"] and set(report["rows"]) == TABLES and all(report["rows"].values()), report
    record = run_records(story["warehouse"])[report["run_id"]]
    quality = json.loads(record["quality"])
    assert quality["success"] is True
    assert sum(table["expectations"] for table in quality["tables"]) > 0
    assert json.loads(record["rows_per_table"]) == report["rows"]
    assert report["warehouse"] == str(story["warehouse"])  # the form's run: from the Variable


def test_the_runs_take_what_the_source_gained_in_turn(story):
    steps = story["steps"]
    assert [steps[step]["report"]["checkpoint"]["file"] for step in ("cli", "api", "form")] == [
        SAMPLES[0].name, SAMPLES[0].name, SAMPLES[1].name]
    assert steps["cli"]["report"]["checkpoint"]["position"] < steps["api"]["report"]["checkpoint"]["position"]
    assert steps["backfill"]["report"]["run_id"].startswith("backfill-")
    assert run_records(story["warehouse"])[steps["backfill"]["report"]["run_id"]]["kind"] == "backfill"


def test_the_form_sends_null_for_the_params_left_empty(story):
    sent = story["airflow"].api(f"dags/{DAG_ID}/dagRuns/{story['steps']['form']['run_id']}")["conf"]
    assert sent["source_uri"] == story["conf"]["source_uri"]
    assert {name: value for name, value in sent.items() if name != "source_uri"} == {
        "warehouse_uri": None, "spark_master": None, "stream": None,
        "rebuild": False, "accept_gap": False, "accept_new_series": False, "accept_type_change": []}


@pytest.mark.parametrize("step", STEPS)
def test_each_run_emits_an_asset_event_per_table_it_published(story, step):
    events, report = story["steps"][step]["events"], story["steps"][step]["report"]
    assert sorted(event["uri"] for event in events) == sorted(table_uri(story["warehouse"], t) for t in report["rows"])
    for event in events:
        assert event["name"] == event["uri"] and event["source_task_id"] == "publish"
        table = f"{event['extra']['database']}.{event['extra']['table']}"
        assert event["uri"] == table_uri(story["warehouse"], table)
        assert (event["extra"]["rows"], event["extra"]["run_id"]) == (report["rows"][table], report["run_id"])


def test_a_run_with_nothing_new_emits_no_asset_event(story):
    airflow = story["airflow"]
    assert story["scheduled"], "unpausing the DAG created no scheduled run"
    for run in story["scheduled"]:
        assert airflow.xcom(DAG_ID, run["dag_run_id"], "report")["run_id"] == ""
        assert airflow.api("assets/events", source_dag_id=DAG_ID, source_run_id=run["dag_run_id"])["asset_events"] == []


def test_the_downstream_dag_scheduled_on_the_alias_runs_after_each_ingest(story):
    airflow = story["airflow"]
    published = {step["report"]["run_id"] for step in story["steps"].values()}

    def reported() -> set[str] | None:
        lines = [line for run in airflow.dag_runs(DOWNSTREAM) if run["state"] == "success"
                 for line in airflow.xcom(DOWNSTREAM, run["dag_run_id"], "tables_changed")]
        return published if all(any(f"run {run_id} " in line for line in lines) for run_id in published) else None

    airflow.wait_for(f"{DOWNSTREAM} runs reporting the ingest runs {sorted(published)}", reported, timeout=RUN_TIMEOUT)
    runs = airflow.dag_runs(DOWNSTREAM)
    assert {run["run_type"] for run in runs} == {"asset_triggered"}
    failed = [run["dag_run_id"] for run in runs if run["state"] == "failed"]
    assert not failed, "\n".join(airflow.describe_run(DOWNSTREAM, run_id) for run_id in failed)
    # The downstream DAG is scheduled on the alias only: each table event came through it.
    for step in story["steps"].values():
        for event in airflow.api("assets/events", source_dag_id=DAG_ID, source_run_id=step["run_id"])["asset_events"]:
            assert DOWNSTREAM in {run["dag_id"] for run in event["created_dagruns"]}, event


def warnings_in(airflow: AirflowStandalone, dag_id: str, run_id: str) -> list[str]:
    """The records at WARNING or above in the task logs of one run, but for :data:`ALLOWED_WARNINGS`."""
    found = []
    for path in airflow.task_logs(dag_id, run_id):
        for record in log_records(path):
            allowed = any(record.get("logger") == logger and text in str(record.get("event"))
                          for logger, text in ALLOWED_WARNINGS)
            if record.get("level") in WARNING_LEVELS and not allowed:
                found.append(f"{path.relative_to(airflow.home)}: {record_text(record)}")
    return found


@pytest.mark.parametrize("step", STEPS)
def test_the_task_logs_of_a_passing_run_hold_no_warning(story, step):
    airflow, run_id = story["airflow"], story["steps"][step]["run_id"]
    logs = airflow.task_logs(DAG_ID, run_id)
    assert {path.parent.name for path in logs} >= {"task_id=decode_and_materialize", "task_id=validate"}
    assert warnings_in(airflow, DAG_ID, run_id) == []
    jvm = [record for path in logs for record in log_records(path) if record.get("logger") == "task.stderr"]
    assert jvm == [], "the task printed on standard error: " + "; ".join(map(record_text, jvm[:5]))


def test_the_downstream_task_logs_hold_no_warning(story):
    airflow = story["airflow"]
    for run in airflow.dag_runs(DOWNSTREAM):
        assert warnings_in(airflow, DOWNSTREAM, run["dag_run_id"]) == []

