"""The ingest scenarios of the benchmark: their binlogs' SQL and cache, the runs before the measured
one, the log lines that tell of trouble, and the targets they are held to."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import run  # noqa: E402
import scenario_binlogs  # noqa: E402


# -- the binlogs ------------------------------------------------------------------------

def test_the_incremental_changes_update_each_of_the_newest_rows_once_and_insert_new_ones():
    sql = scenario_binlogs.incremental_changes_sql(base_rows=500, updates=60, inserts=6)

    ranges = [(int(a), int(b)) for a, b in re.findall(r"WHERE id BETWEEN (\d+) AND (\d+);", sql)]
    updated = [key for first, last in ranges for key in range(first, last + 1)]
    assert sorted(updated) == list(range(441, 501))
    assert sql.count("BEGIN;") == sql.count("COMMIT;") == 6
    assert sql.count("INSERT INTO items (sku, price, stock, status, updated_at, note) VALUES") == 6
    assert "id" not in sql.split("VALUES")[0].split("INSERT INTO items")[1]  # new keys from AUTO_INCREMENT


def test_the_base_rows_are_given_their_keys_one_to_n_in_transactions():
    sql = scenario_binlogs.incremental_base_sql(rows=2500, per_transaction=1000)

    starts = [int(n) for n in re.findall(r"INSERT INTO items SELECT (\d+) \+ seq", sql)]
    assert starts == [0, 1000, 2000]
    assert sql.count("FROM seq_1_to_1000;") == 2 and sql.count("FROM seq_1_to_500;") == 1
    assert sql.count("BEGIN;") == 3


def test_the_big_transaction_is_one_transaction_of_inserts_and_an_update_of_every_row():
    sql = scenario_binlogs.big_transaction_sql(rows=10)

    transaction = sql[sql.index("BEGIN;"):]
    assert sql.count("BEGIN;") == sql.count("COMMIT;") == 1 and transaction.rstrip().endswith("COMMIT;")
    assert "FROM seq_1_to_10;" in transaction
    assert re.search(r"UPDATE wide SET [^;]*;", transaction) and "WHERE" not in transaction.split("UPDATE")[1]


GOOD_SERVER = {"binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL",
               "binlog_checksum": "CRC32", "max_binlog_cache_size": str(16 * 2**30),
               "max_binlog_size": str(2**30), "binlog_cache_size": str(2**20)}


def test_a_server_with_the_benchmark_settings_can_write_the_scenarios():
    assert scenario_binlogs.settings_problems(GOOD_SERVER) == []


@pytest.mark.parametrize("name, value, problem", [
    ("binlog_format", "MIXED", "binlog_format is 'MIXED'"),
    ("binlog_row_image", "MINIMAL", "binlog_row_image is 'MINIMAL'"),
    ("binlog_row_metadata", "NO_LOG", "binlog_row_metadata is 'NO_LOG'"),
    ("max_binlog_cache_size", str(2**30), "max_binlog_cache_size is 1073741824"),
    ("max_binlog_cache_size", "", "max_binlog_cache_size is None"),
])
def test_a_server_that_cannot_write_them_is_named_with_the_setting(name, value, problem):
    problems = scenario_binlogs.settings_problems({**GOOD_SERVER, name: value})
    assert len(problems) == 1 and problems[0].startswith(problem)


def _stamped(tmp_path, monkeypatch, sizes: list[int], version: int = scenario_binlogs.GENERATOR_VERSION):
    monkeypatch.setattr(scenario_binlogs, "SCENARIO_DIR", tmp_path)
    scenario = scenario_binlogs.Scenario("s", ("one;", "two;"), ({}, {}))
    scenario.directory.mkdir()
    files = []
    for n, size in enumerate(sizes, 1):
        (scenario.directory / f"mariadb-bin.00000{n}").write_bytes(b"x" * 10)
        files.append({"file": f"mariadb-bin.00000{n}", "size": size})
    scenario.stamp.write_text(json.dumps({"generator_version": version, "files": files}))
    return scenario


def test_cached_files_are_reused_while_the_stamp_matches_them(tmp_path, monkeypatch):
    scenario = _stamped(tmp_path, monkeypatch, [10, 10])

    assert [f["file"] for f in scenario_binlogs.read_stamp(scenario)["files"]] == ["mariadb-bin.000001",
                                                                                   "mariadb-bin.000002"]
    assert scenario_binlogs.ensure_files(scenario, quiet=True) == [
        tmp_path / "s" / "mariadb-bin.000001", tmp_path / "s" / "mariadb-bin.000002"]


@pytest.mark.parametrize("sizes, version", [([10, 11], None), ([10], None), ([10, 10], 0)])
def test_cached_files_are_made_again_when_a_size_a_file_or_the_version_differs(tmp_path, monkeypatch, sizes, version):
    version = scenario_binlogs.GENERATOR_VERSION if version is None else version
    scenario = _stamped(tmp_path, monkeypatch, sizes, version)

    assert scenario_binlogs.read_stamp(scenario) is None


# -- running a scenario -----------------------------------------------------------------

def _fake_ingests(monkeypatch, fail: str | None = None) -> list[tuple[list[str], str, bool]]:
    """run.run_ingest replaced: records the source folder's files, the log's name and the gate;
    the run whose log is ``fail`` fails."""
    calls = []

    def fake(source, warehouse, log_path, master, timeout, cpus=None, validation=False):
        calls.append((sorted(p.name for p in source.iterdir()), log_path.name, validation))
        assert master == run.SCENARIO_MASTER and Path(warehouse).name.startswith("warehouse-")
        if log_path.name == fail:
            raise run.IngestFailed("exit 1 (log in x):\nTraceback ...", 12.34, {"driver": 1.0},
                                   {"out_of_memory": 2, "error": 3})
        return 5.0, {"rows": 7, "validation_seconds": 0.4 if validation else None, "log_problems": {}}

    monkeypatch.setattr(run, "run_ingest", fake)
    return calls


def _files(tmp_path, count: int) -> list[Path]:
    files = [tmp_path / "binlogs" / f"mariadb-bin.00000{n}" for n in range(1, count + 1)]
    files[0].parent.mkdir()
    for file in files:
        file.write_bytes(b"\xfebin")
    return files


def test_the_files_before_the_last_are_ingested_first_then_the_last_one_is_measured(tmp_path, monkeypatch):
    calls = _fake_ingests(monkeypatch)
    workdir = tmp_path / "work"
    (workdir / "warehouse-t").mkdir(parents=True)  # a former run's, removed
    (workdir / "warehouse-t" / "old").write_text("x")

    result = run.scenario_variant(_files(tmp_path, 3), workdir, "t", True, 60)

    assert calls == [(["mariadb-bin.000001", "mariadb-bin.000002"], "t-before.log", True),
                     (["mariadb-bin.000001", "mariadb-bin.000002", "mariadb-bin.000003"], "t.log", True)]
    assert result == {"seconds": 5.0, "rows": 7, "validation_seconds": 0.4, "log_problems": {}}
    assert not (workdir / "warehouse-t" / "old").exists()


def test_a_single_file_is_measured_alone(tmp_path, monkeypatch):
    calls = _fake_ingests(monkeypatch)

    run.scenario_variant(_files(tmp_path, 1), tmp_path / "work", "t", False, 60)

    assert calls == [(["mariadb-bin.000001"], "t.log", False)]


@pytest.mark.parametrize("failing, step", [("t-before.log", "the run before"), ("t.log", "the measured run")])
def test_a_failed_run_is_recorded_with_its_step_its_memory_and_its_log_problems(tmp_path, monkeypatch, failing, step):
    _fake_ingests(monkeypatch, fail=failing)

    result = run.scenario_variant(_files(tmp_path, 2), tmp_path / "work", "t", True, 60)

    assert result["error"].startswith(f"{step}: exit 1")
    assert result["failed_after_s"] == 12.34 and result["peak_rss_mb"] == {"driver": 1.0}
    assert result["log_problems"] == {"out_of_memory": 2, "error": 3}
    assert "seconds" not in result


def test_log_problems_counts_out_of_memory_errors_and_error_lines():
    log = "\n".join([
        "2026-11-27 17:00:00,000 INFO spark_jobs.decode: decoded 1 files",
        "26/11/27 17:00:01 ERROR Executor: Exception in task 0.0 in stage 3.0 (TID 7)",
        "java.lang.OutOfMemoryError: Java heap space",
        "26/11/27 17:00:02 ERROR SparkUncaughtExceptionHandler: Uncaught exception: java.lang.OutOfMemoryError",
        "2026-11-27 17:00:03,000 INFO spark_jobs.validate: 0 ERRORS, 0 failed",
        "ERROR at the start of a line",
    ])

    assert run.log_problems(log) == {"out_of_memory": 2, "error": 2}
    assert run.log_problems("") == {"out_of_memory": 0, "error": 0}


@pytest.mark.parametrize("runs, ratio", [
    ({run.VALIDATED: {"seconds": 12.5}, run.UNVALIDATED: {"seconds": 10.0}}, 1.25),
    ({run.VALIDATED: {"error": "exit 1"}, run.UNVALIDATED: {"seconds": 10.0}}, None),
    ({run.VALIDATED: {"seconds": 12.5}}, None),
])
def test_the_validation_ratio_needs_both_runs(runs, ratio):
    assert run.validation_ratio(runs) == ratio


# -- targets ----------------------------------------------------------------------------

def _incremental(validation_seconds) -> dict:
    validated = {"seconds": 9.0, "validation_seconds": validation_seconds, "rows": 1100}
    return {run.INCREMENTAL: {"runs": {run.VALIDATED: validated, run.UNVALIDATED: {"seconds": 7.0, "rows": 1100}}}}


def _big(ratio, out_of_memory=(0, 0)) -> dict:
    runs = {variant: {"all_log_problems": [{"out_of_memory": 0, "error": 1}, {"out_of_memory": n, "error": 0}]}
            for variant, n in zip(run.VARIANTS, out_of_memory)}
    return {run.BIG_TRANSACTION: {"runs": runs, "seconds_validated_over_unvalidated": ratio}}


def test_scenario_targets_are_not_judged_when_the_scenarios_did_not_run():
    met = run.scenario_targets_met({})
    assert met == {"incremental_validation_seconds_met": None,
                   "big_transaction_validated_vs_unvalidated_met": None,
                   "big_transaction_out_of_memory_lines_met": None}


@pytest.mark.parametrize("validation_seconds, met", [(0.5, True), (3.0, True), (3.01, False), (None, False)])
def test_the_incremental_run_validates_in_three_seconds_at_most(validation_seconds, met):
    assert run.scenario_targets_met(_incremental(validation_seconds))["incremental_validation_seconds_met"] is met


@pytest.mark.parametrize("ratio, met", [(1.1, True), (1.25, True), (1.3, False), (None, False)])
def test_the_gate_adds_a_quarter_at_most_to_the_big_transaction(ratio, met):
    assert run.scenario_targets_met(_big(ratio))["big_transaction_validated_vs_unvalidated_met"] is met


@pytest.mark.parametrize("out_of_memory, met", [((0, 0), True), ((0, 1), False), ((2, 0), False)])
def test_no_out_of_memory_error_in_either_log_of_the_big_transaction(out_of_memory, met):
    assert run.scenario_targets_met(_big(1.1, out_of_memory))["big_transaction_out_of_memory_lines_met"] is met


@pytest.mark.parametrize("broken", ["no log problems", "no variant"])
def test_an_out_of_memory_count_is_missing_when_a_run_left_no_log_problems(broken):
    big = _big(1.1)
    if broken == "no log problems":
        big[run.BIG_TRANSACTION]["runs"][run.UNVALIDATED]["all_log_problems"][1] = None
    else:
        del big[run.BIG_TRANSACTION]["runs"][run.UNVALIDATED]

    assert run.scenario_targets_met(big)["big_transaction_out_of_memory_lines_met"] is False


def test_the_fastest_run_of_a_variant_is_kept_with_every_runs_seconds_and_log_problems():
    runs = [{"seconds": 9.0, "log_problems": {"out_of_memory": 1}},
            {"seconds": 7.5, "log_problems": {"out_of_memory": 0}}]

    best = run.best_run(runs)

    assert best["seconds"] == 7.5 and best["log_problems"] == {"out_of_memory": 0}
    assert best["all_seconds"] == [9.0, 7.5]
    assert best["all_log_problems"] == [{"out_of_memory": 1}, {"out_of_memory": 0}]


def test_a_failed_run_of_a_variant_is_kept_over_faster_ones():
    runs = [{"seconds": 7.5}, {"error": "the measured run: exit 1", "log_problems": {"out_of_memory": 2}},
            {"seconds": 7.0}]

    best = run.best_run(runs)

    assert best["error"] == "the measured run: exit 1" and "seconds" not in best
    assert best["all_seconds"] == [7.5, 7.0]


def test_the_report_targets_include_the_scenarios():
    met = run.targets_met(_incremental(0.5), {})
    assert met["incremental_validation_seconds"] == 3.0 and met["incremental_validation_seconds_met"] is True
    assert met["big_transaction_validated_vs_unvalidated_met"] is None


# -- the report -------------------------------------------------------------------------

def test_scenario_lines_give_each_variant_and_a_failure_as_it_happened():
    result = {"name": run.BIG_TRANSACTION, "seconds_validated_over_unvalidated": None, "runs": {
        run.VALIDATED: {"error": "the measured run: exit 1 (log in l):\nTraceback", "failed_after_s": 80.5,
                        "peak_rss_mb": {"driver": 300.0, "jvm": 5900.0, "python_worker": 1200.0},
                        "log_problems": {"out_of_memory": 3, "error": 4}},
        run.UNVALIDATED: {"seconds": 60.0, "validation_seconds": None, "rows": 4_000_000,
                          "peak_rss_mb": {"driver": 200.0, "jvm": 900.0, "python_worker": 1100.0},
                          "log_problems": {"out_of_memory": 0, "error": 0}},
    }}

    lines = run.scenario_lines(result)

    assert lines[0] == f"{run.BIG_TRANSACTION}:"
    assert lines[1] == ("  validation on: FAILED after 80.5 s: the measured run: exit 1 (log in l):; "
                        "peak MB 300 / 5,900 / 1,200; OutOfMemoryError lines 3, ERROR lines 4")
    assert lines[2].startswith("  --no-validation: 60.00 s, 4,000,000 row changes;")
    assert lines[3] == "  validation on / --no-validation: ?x"


def test_only_a_scenario_runs_without_the_mariadb_binlog(tmp_path, monkeypatch):
    monkeypatch.setattr(run, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(run, "RESULTS", tmp_path / "results.json")
    monkeypatch.setattr(run, "PLOT", tmp_path / "results.svg")
    monkeypatch.setattr(run, "benchmark_file", lambda *a: pytest.fail("the MariaDB binlog is not needed"))
    monkeypatch.setattr(run, "two_process_speedup", lambda: 1.8)
    measured = []

    def fake_scenario(bench, repeat, timeout):
        measured.append((bench["name"], repeat))
        return {"name": bench["name"], **_incremental(0.5)[run.INCREMENTAL],
                "seconds_validated_over_unvalidated": 1.29}

    monkeypatch.setattr(run, "measure_scenario", fake_scenario)

    assert run.main(["--only", run.INCREMENTAL, "--no-json", "--no-backup", "--ingest-repeat", "2"]) == 0

    report = json.loads((tmp_path / "results.json").read_text())
    assert measured == [(run.INCREMENTAL, 2)]
    assert report["results"] == [] and "file" not in report and report["binlog_source"] is None
    assert [s["name"] for s in report["scenarios"]] == [run.INCREMENTAL]
    assert report["targets"]["incremental_validation_seconds_met"] is True
