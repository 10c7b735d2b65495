"""A type change binlake cannot convert as the server did stops the run, until the user decides.

MariaDB logs ``ALTER TABLE t MODIFY d VARCHAR(20)`` (a DOUBLE column) and rewrites every row's
``d`` as its own text of the double, which the binlog does not hold. The next run of
``python -m spark_jobs.ingest`` stops with exit status 4 and one line naming the table, the
column, both SQL types and the two ways forward, and publishes nothing: the checkpoint stays,
and the row inserted into another table in the same run is not in the warehouse. The same run
with ``--accept-type-change`` publishes: every table equals ``SELECT *`` but for ``d`` in the
rows last changed before the ALTER, which is null and named in ``_incomplete_columns`` (their
``changes`` rows keep the double's text in ``_unrepresentable``); the run record names the
decision. The run after it is not blocked.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mariadb_workload import warehouse_rows
from warehouse import publish
from test_schema_lineage_against_mariadb import as_text, server_table

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
DATABASE = "type_change"
ROWS = 30


def ingest_command(source: Path, warehouse: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "spark_jobs.ingest", "--source", str(source), "--warehouse", str(warehouse),
         "--master", "local[2]", "--no-validation", *extra],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=600,
    )


def copy_new_binlogs(mariadb, source: Path, since: Path) -> None:
    mariadb.flush_logs()
    mariadb.copy_closed_binlogs(since, source)


def run_records(warehouse: Path) -> list[dict]:
    return [row for path in sorted((warehouse / "metadata" / "runs").glob("*.parquet"))
            for row in pq.read_table(path).to_pylist()]


def test_a_type_change_stops_the_run_until_it_is_accepted(mariadb, tmp_path):
    source, warehouse = tmp_path / "source", tmp_path / "warehouse"
    source.mkdir()
    mariadb.sql("SET GLOBAL binlog_row_metadata = FULL")
    mariadb.flush_logs()
    first = mariadb.current_binlog()
    mariadb.sql(f"CREATE DATABASE {DATABASE}")
    mariadb.sql(";\n".join([
        "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, d DOUBLE, n INT)",
        "CREATE TABLE u (id INT NOT NULL PRIMARY KEY, a VARCHAR(10))",
        "INSERT INTO t VALUES " + ", ".join(f"({i}, {i}.25, {i})" for i in range(1, ROWS + 1)),
        "INSERT INTO u VALUES (1, 'one')",
    ]) + ";", database=DATABASE)
    copy_new_binlogs(mariadb, source, first)
    assert ingest_command(source, warehouse).returncode == 0

    second = mariadb.current_binlog()
    mariadb.sql("UPDATE t SET n = -2 WHERE id = 2; ALTER TABLE t MODIFY d VARCHAR(20); "
                "UPDATE t SET d = 'text' WHERE id = 1; "
                "INSERT INTO u VALUES (2, 'two');", database=DATABASE)
    copy_new_binlogs(mariadb, source, second)
    checkpoint = publish.read_checkpoint(warehouse)

    refused = ingest_command(source, warehouse)
    assert refused.returncode == 4, refused.stderr[-2000:]
    line = refused.stderr.strip().splitlines()[-1]
    assert line.startswith("refused, nothing published: type_change.t: column d changed from DOUBLE to VARCHAR(20)")
    assert "--accept-type-change type_change.t" in line and "spark_jobs.bootstrap" in line
    assert publish.read_checkpoint(warehouse) == checkpoint
    assert [row["id"] for row in warehouse_rows(warehouse, "current", DATABASE, "u")] == [1]

    accepted = ingest_command(source, warehouse, "--accept-type-change", f"{DATABASE}.t")
    assert accepted.returncode == 0, accepted.stderr[-2000:]
    names, server = server_table(mariadb, DATABASE, "t")
    rows = {row["id"]: row for row in warehouse_rows(warehouse, "current", DATABASE, "t")}
    assert [name for name in rows[1] if not name.startswith("_")] == names == ["id", "d", "n"]
    assert sorted(map(str, rows)) == sorted(server)
    assert rows[1]["d"] == "text" and not rows[1]["_incomplete_columns"]
    for key in range(2, ROWS + 1):
        row = rows[key]
        assert (row["d"], row["_incomplete_columns"]) == (None, ["d"]), row
        assert [as_text(row[name]) for name in ("id", "n")] == [server[str(key)][0], server[str(key)][2]]
    # the changes logged before the change read in the new type (the earlier file rewritten with d as its
    # text), the one logged after it keeps the value it could not convert in _unrepresentable
    changes = [row for row in warehouse_rows(warehouse, "changes", DATABASE, "t") if row["id"] == 2]
    assert sorted((str(row["d"]), sorted(row["_unrepresentable"])) for row in changes) == [
        ("2.25", []), ("None", [("d", "2.25")])]
    assert sorted(row["id"] for row in warehouse_rows(warehouse, "current", DATABASE, "u")) == [1, 2]
    (record,) = [row for row in run_records(warehouse) if row["accepted"]]
    assert record["accepted"] == ["type change of type_change.t without the server's conversion: "
                                  "d DOUBLE to VARCHAR(20) CHARSET utf8mb4 COLLATE utf8mb4_general_ci"]
    assert json.loads(record["rows_per_table"]) == {f"{DATABASE}.t": 2, f"{DATABASE}.u": 1}

    third = mariadb.current_binlog()
    mariadb.sql("UPDATE t SET d = 'later' WHERE id = 3", database=DATABASE)
    copy_new_binlogs(mariadb, source, third)
    later = ingest_command(source, warehouse)
    assert later.returncode == 0, later.stderr[-2000:]
    rows = {row["id"]: row for row in warehouse_rows(warehouse, "current", DATABASE, "t")}
    assert (rows[3]["d"], rows[3]["_incomplete_columns"]) == ("later", [])
    assert (rows[4]["d"], rows[4]["_incomplete_columns"]) == (None, ["d"])
