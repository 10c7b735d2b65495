"""``current`` follows the DDL as the server applies it to the rows already there: MariaDB is the oracle.

A table of 100 rows goes through ADD COLUMN ... NOT NULL DEFAULT 'dflt' AFTER, a numeric
DEFAULT added FIRST with a nullable column without DEFAULT, RENAME COLUMN, CHANGE COLUMN with a
rename, SET DEFAULT followed by an ADD of CHAR, DATE and ENUM columns with defaults, DROP
COLUMN, and BIGINT and DECIMAL columns turned into VARCHAR (one renamed by CHANGE), each
followed by a few row changes, so that 90+ rows are never touched after the first ALTER. Each
statement after the tables' creation is logged in a binlog file of its own. Ingested in one run,
and in one run per statement: after every run, ``current`` has the server's columns, in its
order, and equals ``SELECT *`` value for value, no column incomplete. A column added with
``DEFAULT CURRENT_TIMESTAMP`` is named incomplete in the rows that were there before it. The
workload runs twice: with FULL row images, and with the updates and deletes under MINIMAL, whose
after-images carry only the columns set, so that the state they are folded onto is a row of an
older version carried through the DDL (inserts stay FULL: a MINIMAL insert leaves its DEFAULTs
unknown).
"""

from __future__ import annotations

import shutil
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from mariadb_workload import warehouse_rows
from spark_jobs.ingest import ingest

pytestmark = pytest.mark.integration

ROWS = 100
FIRST = [
    "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, a INT, b VARCHAR(20), c INT, d INT)",
    "CREATE TABLE u (id INT NOT NULL PRIMARY KEY, a INT)",
    "INSERT INTO t VALUES " + ", ".join(f"({i}, {i}, 'b{i}', {10 * i}, {100 * i})" for i in range(1, ROWS + 1)),
    "INSERT INTO u VALUES " + ", ".join(f"({i}, {i})" for i in range(1, 11)),
]
# Each step: a schema change and the row changes after it (its table's new version has rows).
STEPS = [
    ["ALTER TABLE t ADD COLUMN e VARCHAR(10) NOT NULL DEFAULT 'dflt' AFTER d",
     "UPDATE t SET c = -1 WHERE id = 1", "INSERT INTO t (id, a, b, c, d) VALUES (101, 1, 'x', 1, 1)"],
    ["ALTER TABLE t ADD COLUMN n DECIMAL(6,2) NOT NULL DEFAULT 12.5 FIRST, ADD COLUMN z INT",
     "UPDATE t SET a = -2 WHERE id = 2"],
    ["ALTER TABLE t RENAME COLUMN b TO b2", "INSERT INTO t (id, b2) VALUES (102, 'renamed')"],
    ["ALTER TABLE t CHANGE COLUMN c c2 INT NULL", "UPDATE t SET c2 = -3 WHERE id = 3"],
    ["ALTER TABLE t ALTER COLUMN a SET DEFAULT 7", "INSERT INTO t (id) VALUES (103)"],
    ["ALTER TABLE t ADD COLUMN f CHAR(4) NOT NULL DEFAULT 'ab', ADD COLUMN g DATE DEFAULT '2024-02-29', "
     "ADD COLUMN h ENUM('x','y') NOT NULL DEFAULT 'y' AFTER a, ADD COLUMN k BIGINT NOT NULL DEFAULT -5",
     "UPDATE t SET e = 'four' WHERE id = 4"],
    ["ALTER TABLE t DROP COLUMN d", "DELETE FROM t WHERE id = 5", "INSERT INTO t (id, b2) VALUES (104, 'late')"],
    ["ALTER TABLE t MODIFY k VARCHAR(20) NOT NULL, MODIFY n VARCHAR(10) NOT NULL, CHANGE c2 c3 VARCHAR(12)",
     "UPDATE t SET e = 'six' WHERE id = 6"],
    ["ALTER TABLE u ADD COLUMN ts DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP", "INSERT INTO u (id) VALUES (11)"],
]


def logged_as(statement: str, image: str) -> str:
    """``statement`` under the row image of the workload (inserts: FULL, see the module docstring)."""
    if image == "FULL" or statement.startswith(("CREATE", "ALTER")):
        return statement
    return f"SET SESSION binlog_row_image = {'FULL' if statement.startswith('INSERT') else image};\n{statement}"


def server_table(mariadb, database: str, table: str) -> tuple[list[str], dict[str, list[str]]]:
    """``SELECT *`` of a table: its column names, and its rows (text, NULL as ``NULL``) by id."""
    lines = mariadb.sql(f"SELECT * FROM {table} ORDER BY id", database=database).splitlines()
    names = lines[0].split("\t")
    return names, {line.split("\t")[names.index("id")]: line.split("\t") for line in lines[1:]}


def as_text(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (date, Decimal, int)):
        return str(value)
    return value


@pytest.fixture(scope="module", params=["FULL", "MINIMAL"])
def workload(request, mariadb, tmp_path_factory) -> tuple[str, list[Path], list[tuple]]:
    """The database, the binlog files (one for the tables' creation and rows, then one per
    statement) and, after each, ``SELECT *`` of ``t``."""
    database = f"lineage_{request.param.lower()}"
    mariadb.sql("SET GLOBAL binlog_row_metadata = FULL")
    mariadb.flush_logs()
    first = mariadb.current_binlog()
    mariadb.sql(f"CREATE DATABASE {database}")
    states = []
    for part in [FIRST] + [[statement] for step in STEPS for statement in step]:
        mariadb.sql(";\n".join(logged_as(statement, request.param) for statement in part) + ";", database=database)
        states.append(server_table(mariadb, database, "t"))
        mariadb.flush_logs()
    files = mariadb.copy_closed_binlogs(first, tmp_path_factory.mktemp("lineage-source"))
    assert len(files) == len(states)
    return database, files, states


def assert_current_is(warehouse: Path, database: str, state: tuple[list[str], dict[str, list[str]]],
                      where: str) -> None:
    names, wanted = state
    rows = warehouse_rows(warehouse, "current", database, "t")
    columns = [name for name in rows[0] if not name.startswith("_")]
    assert columns == names, where
    assert sorted(str(row["id"]) for row in rows) == sorted(wanted), where
    for row in rows:
        assert not row["_incomplete_columns"], (where, row["id"], row["_incomplete_columns"])
        assert [as_text(row[name]) for name in names] == wanted[str(row["id"])], (where, row["id"])


def test_one_run_gives_the_server_table(spark, workload, tmp_path):
    database, files, states = workload
    source = files[0].parent
    assert ingest(str(source), str(tmp_path), spark=spark, validation=False).run_id
    assert_current_is(tmp_path, database, states[-1], "one run")
    untouched = [row for row in warehouse_rows(tmp_path, "current", database, "t") if row["id"] > 10 and row["id"] <= ROWS]
    assert len(untouched) >= 90 and {row["e"] for row in untouched} == {"dflt"}


def test_a_run_per_statement_gives_the_server_table_after_each(spark, workload, tmp_path):
    database, files, states = workload
    source, root = tmp_path / "source", tmp_path / "warehouse"
    source.mkdir()
    for number, (binlog, state) in enumerate(zip(files, states)):
        shutil.copyfile(binlog, source / binlog.name)
        assert ingest(str(source), str(root), spark=spark, validation=False).run_id
        assert_current_is(root, database, state, f"after run {number}")


def test_a_default_the_server_computes_is_incomplete_in_the_rows_before_it(spark, workload, tmp_path):
    database, files, _ = workload
    assert ingest(str(files[0].parent), str(tmp_path), spark=spark, validation=False).run_id
    rows = {row["id"]: row for row in warehouse_rows(tmp_path, "current", database, "u")}
    assert [name for name in rows[1] if not name.startswith("_")] == ["id", "a", "ts"]
    for key in range(1, 11):
        assert rows[key]["_incomplete_columns"] == ["ts"] and rows[key]["ts"] is None
    assert not rows[11]["_incomplete_columns"] and rows[11]["ts"] is not None
