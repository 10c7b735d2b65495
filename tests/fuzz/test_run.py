"""A short coverage-guided run of every fuzz target (``python -m fuzz.run``), as ``make fuzz``
runs the long one: atheris over each decoder in its own memory-limited process, seeded from
the committed corpus and the real binlogs. It must find nothing.

The run is a fixed number of inputs with a fixed libFuzzer seed (``--runs``, ``--seed``), so it
does the same work on any machine, however loaded.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from ci import in_ci
from mariadb import REPO_ROOT

TARGETS = ["binlog_events", "table_map", "row_images", "binary_json", "json_diffs", "backup_image"]
RUNS = 2000


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    """The JSON summary of a short run of every target, and its exit status."""
    if importlib.util.find_spec("atheris") is None:
        reason = "atheris is not installed (it is pinned in requirements.lock: make setup)"
        if in_ci():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("fuzz")
    finished = subprocess.run(
        [sys.executable, "-m", "fuzz.run", "--all", "--runs", str(RUNS), "--seed", "1", "--work", str(work)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800,
    )
    summary = json.loads((work / "summary.json").read_text())
    return {result["target"]: result for result in summary["targets"]}, finished


def test_a_short_run_of_every_target_finds_nothing(short_run):
    results, finished = short_run
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert sorted(results) == sorted(TARGETS)
    for target, result in results.items():
        assert result["findings"] == [], (target, result["findings"])
        assert result["processes"] == 1, target  # never stopped by a hang or runaway memory


def test_the_run_reports_executions_coverage_and_memory(short_run):
    results, _ = short_run
    for target, result in results.items():
        assert result["executions"] >= RUNS, (target, result)
        assert result["coverage"] > 50 and result["features"] > result["coverage"], (target, result)
        assert 0 < result["peak_rss_mb"] < 2048, (target, result)
