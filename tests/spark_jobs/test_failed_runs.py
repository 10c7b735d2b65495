"""Runs that do not publish leave a record (``warehouse.refusals``): their failure, with the step,
the first error and the Airflow run, until a later run of their stream succeeds.

Real runs over the bundled samples: one whose output fails Great Expectations
(a row of its changes dropped before validation, so a table holds fewer row
changes than its transactions logged), and the command line over a binlog cut
inside an event, then made whole.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from mariadb import REPO_ROOT
from spark_jobs import ingest as pipeline
from spark_jobs.positions import MissingFiles
from warehouse import publish, refusals, run_records

SAMPLES = sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*"))
AIRFLOW_RUN = ("binlog_ingest", "scheduled__2026-11-27T10:00:00+00:00")


@pytest.fixture
def source(tmp_path):
    folder = tmp_path / "source"
    folder.mkdir()
    for sample in SAMPLES:
        shutil.copyfile(sample, folder / sample.name)
    return folder


def drop_a_row_change(out) -> None:
    """The first row of the run's first changes file dropped: its table now holds fewer row
    changes than its transactions logged."""
    first = sorted((out / "changes").rglob("*.parquet"))[0]
    pq.write_table(pq.read_table(first).slice(1), first)


def test_a_run_failing_validation_is_kept_with_its_first_failing_check_until_a_run_succeeds(
        spark, source, tmp_path, monkeypatch):
    warehouse = tmp_path / "warehouse"
    monkeypatch.setenv(pipeline.AIRFLOW_DAG_ID, AIRFLOW_RUN[0])  # as Airflow exports them to its task
    monkeypatch.setenv(pipeline.AIRFLOW_RUN_ID, AIRFLOW_RUN[1])
    prepared = pipeline.prepare(str(source), str(warehouse), spark=spark)
    drop_a_row_change(pipeline.work_folder(warehouse, prepared.run_id) / "out")
    outcome = pipeline.validate_run(spark, str(warehouse), prepared.run_id)
    first_failure = next(f"{t['database']}.{t['table']}: {t['failures'][0]}" for t in outcome["tables"] if t["failures"])
    (failed,) = refusals.failing(warehouse)
    assert (failed["run_id"], failed["step"], failed["airflow_run"]) == (prepared.run_id, "validate",
                                                                         "/".join(AIRFLOW_RUN))
    assert failed["error"].startswith(f"failed validation: {first_failure}")
    assert (failed["stream"], failed["source"]) == (prepared.stream, str(source.resolve()))
    assert failed["seen"] == prepared.seen and failed["seen"]["file"] == SAMPLES[-1].name
    with pytest.raises(pipeline.QualityFailed):
        pipeline.publish_run(str(warehouse), prepared.run_id)
    assert refusals.failing(warehouse) == [failed]  # kept once, at the step that found it
    assert publish.read_checkpoint(warehouse) == {}

    monkeypatch.delenv(pipeline.AIRFLOW_DAG_ID)
    monkeypatch.delenv(pipeline.AIRFLOW_RUN_ID)
    pipeline.ingest(str(source), str(warehouse), spark=spark)  # the same input, whole this time
    assert refusals.failing(warehouse) == []
    assert not list((warehouse / refusals.FOLDER / refusals.FAILED).glob("*.json"))


def test_the_command_keeps_a_failure_and_the_airflow_run_it_is_told(source, tmp_path):
    """``--airflow-run`` names the run's Airflow run, in its failure and in its run record."""
    from binlog_codec.reader import BinlogReader

    warehouse, sample = tmp_path / "warehouse", SAMPLES[0]
    for other in SAMPLES[1:]:
        (source / other.name).unlink()
    last = list(BinlogReader(sample))[-1]
    (source / sample.name).write_bytes(sample.read_bytes()[: last.pos + last.size // 2])

    def command() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "spark_jobs.ingest", "--source", str(source), "--warehouse", str(warehouse),
             "--master", "local[2]", "--no-validation", "--airflow-run", "/".join(AIRFLOW_RUN)],
            capture_output=True, text=True, cwd=REPO_ROOT, timeout=600,
        )

    broken = command()
    assert broken.returncode != 0 and "TruncatedError" in broken.stderr
    (failed,) = refusals.failing(warehouse)
    assert (failed["run_id"], failed["step"], failed["airflow_run"]) == (None, "plan", "/".join(AIRFLOW_RUN))
    assert failed["error"].startswith(f"TruncatedError: {source.resolve() / sample.name}: at {last.pos}")
    shutil.copyfile(sample, source / sample.name)
    whole = command()
    assert whole.returncode == 0, whole.stderr[-3000:]
    assert refusals.failing(warehouse) == []
    (record,) = pq.read_table(warehouse / run_records.RUN_RECORDS).to_pylist()
    assert record["airflow_run"] == "/".join(AIRFLOW_RUN)
    assert (record["source_newest_file"], record["source_newest_size"]) == (sample.name, sample.stat().st_size)


def test_a_refusal_is_kept_as_the_streams_refusal_not_as_a_failure(tmp_path):
    gap = MissingFiles("s lacks b.000002", "Bring it back", ["b.000002"])
    with pytest.raises(MissingFiles):
        with refusals.Attempt(tmp_path, "s", "file:///s").step("plan"):
            raise gap
    assert [refusal["problem"] for refusal in refusals.waiting(tmp_path)] == ["s lacks b.000002"]
    assert refusals.failing(tmp_path) == []


def test_an_expected_error_is_not_kept_and_a_failure_again_replaces_the_earlier(tmp_path):
    attempt = refusals.Attempt(tmp_path, "s", "file:///s", run_id="r1")
    with pytest.raises(pipeline.StaleRun):
        with attempt.step("publish", expected=(pipeline.StaleRun,)):
            raise pipeline.StaleRun("another run published first")
    assert refusals.failing(tmp_path) == []
    for step in ("decode", "materialize"):
        with pytest.raises(OSError):
            with attempt.step(step):
                raise OSError(f"disk full while at {step}")
    assert [(f["step"], f["error"]) for f in refusals.failing(tmp_path)] == [
        ("materialize", "OSError: disk full while at materialize")]
    refusals.clear_failures(tmp_path, "another stream")
    assert len(refusals.failing(tmp_path)) == 1
    refusals.clear_failures(tmp_path, "s")
    assert refusals.failing(tmp_path) == []


@pytest.mark.parametrize(("error", "first"), [
    (RuntimeError("one\ntwo"), "RuntimeError: one"),
    (RuntimeError("\n  \nlater"), "RuntimeError: later"),
    (ValueError(""), "ValueError: (no message)"),
    (RuntimeError("An error occurred while calling o81.parquet.\n: org.apache.spark.SparkException: Job aborted.\n"
                  "\tat org.apache.spark..."), "RuntimeError: org.apache.spark.SparkException: Job aborted."),
    (RuntimeError("x" * 600), "RuntimeError: " + "x" * (refusals.MAX_ERROR_CHARS - 17) + "..."),
])
def test_the_first_error_is_the_first_line_that_says_something(error, first):
    assert refusals.first_error(error) == first


def test_a_quality_failure_names_its_first_failing_check():
    quality = {"tables": [{"database": "db", "table": "t", "failures": ["column u: 1 value below 0", "row count"]},
                          {"database": "db", "table": "v", "failures": ["column w: type"]}]}
    failed = pipeline.QualityFailed("r1", quality)
    assert refusals.first_error(failed) == "failed validation: db.t: column u: 1 value below 0 (and 2 more)"
