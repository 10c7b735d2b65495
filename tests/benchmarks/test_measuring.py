"""Running a measured command: its peak memory, its failures, and the row changes it prints."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from measuring import CommandFailed, count_row_lines, mariadb_row_kind, run_command  # noqa: E402


def test_run_command_reports_the_peak_memory_of_the_process():
    seconds, peak_mb = run_command([sys.executable, "-c", "block = bytearray(300_000_000); block[::4096] = b'x' * len(block[::4096])"], 60)
    assert seconds > 0
    assert 290 < peak_mb < 600


def test_a_failing_command_raises_with_its_status_and_message():
    with pytest.raises(CommandFailed) as failed:
        run_command(["sh", "-c", r"printf '\aNo such charset #255\n' >&2; exit 3"], 60)
    assert failed.value.returncode == 3
    assert failed.value.stderr == "No such charset #255"  # the bell left out


def test_row_lines_are_counted_by_kind():
    output = "\\n".join([
        "### INSERT INTO `shop`.`orders`", "### SET", "###   @1=1",
        "### UPDATE `shop`.`orders`", "### WHERE", "###   @1=1",
        "### INSERT INTO `shop`.`orders`", "### DELETE FROM `shop`.`orders`", "# at 400",
    ])
    counts = count_row_lines(["printf", output + "\\n"], mariadb_row_kind)
    assert counts == {"rows": 4, "insert": 2, "update": 1, "delete": 1}


def test_counting_the_rows_of_a_failing_command_raises():
    with pytest.raises(CommandFailed, match="exit 2"):
        count_row_lines(["sh", "-c", "echo '### INSERT INTO t'; exit 2"], mariadb_row_kind)
