"""``current`` follows table DDL as the server applies it: MariaDB is the oracle.

A database of its own gets the tables ``t`` and ``k`` (100 rows each) and ``w`` and ``x``
(20 rows each), then goes through these statements, with row changes in between, so that most
rows are never touched after the DDL:

- ``t`` returns to an earlier shape: ``DROP COLUMN b``, a row change, then ``ADD COLUMN b`` with
  the definition ``b`` had at first (the table map equals the first version's) and a change of
  one row. Every other row must show the server's DEFAULT ``'back'``, not its old ``b``.
- an ALTER of ``t`` alone (``ADD COLUMN e ... NOT NULL DEFAULT 'dflt'``, no row change of ``t``
  after it in its file): every row of ``t`` shows ``'dflt'``. The column names its character set
  and collation: the version an ALTER makes is derived from the log only when it is exact
  (:mod:`binlog_codec.schema_version`), and the table's default collation is not in the log.
- ``RENAME TABLE t TO t2`` and row changes of ``t2``: ``t2`` holds the rows of ``t``, ``t`` none.
- ``CREATE TABLE v LIKE t2`` and inserts into ``v``.
- the primary key of ``k`` widened (``MODIFY id BIGINT``), then updates, deletes and a key
  change by that key.
- ``TRUNCATE TABLE w`` (in a file of its own), then inserts, one of a key ``w`` had before.
- ``DROP TABLE x`` (in a file of its own), then ``CREATE TABLE x`` again with another shape and
  rows.

After the tables are created and filled (one binlog file), each statement is logged in a
binlog file of its own. The log is ingested in one run, and in one run per binlog file, that
is one run per statement. After every run, for every
table the server has, ``current`` has the server's columns in its order and equals ``SELECT *``
value for value, no column named in ``_incomplete_columns``; a table dropped or renamed away
holds no rows in ``current`` (no folder counts as no rows). The workload runs twice: with FULL
row images, and with the updates and deletes under MINIMAL (inserts stay FULL), whose images
carry only the key and the columns set, so they are folded onto rows carried through the DDL.

Besides the two tests over every table, one test per statement above and way of ingesting
checks only the tables, columns and runs that statement concerns, so that a failure names the
DDL not followed (the one run for the two ALTERs of ``t`` reads the log up to the ALTER's file,
before the RENAME moves the rows). A failure lists the differences, those of one run, table and
column on one line: the run (its number and binlog file), the table, the row ids, the column,
and for the first row the value in ``current`` and the server's.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from mariadb_workload import warehouse_rows
from spark_jobs.ingest import ingest
from warehouse.layout import table_folder
from test_schema_lineage_against_mariadb import as_text, logged_as, server_table

pytestmark = pytest.mark.integration

ROWS = 100
FIRST = [
    # b last and with its DEFAULT, so that dropping and adding it again gives the first shape back
    "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, a INT, c INT, b VARCHAR(20) DEFAULT 'back')",
    "CREATE TABLE k (id INT NOT NULL PRIMARY KEY, a INT, s VARCHAR(10))",
    "CREATE TABLE w (id INT NOT NULL PRIMARY KEY, a VARCHAR(10))",
    "CREATE TABLE x (id INT NOT NULL PRIMARY KEY, a INT, s VARCHAR(5))",
    "INSERT INTO t VALUES " + ", ".join(f"({i}, {i}, {10 * i}, 'b{i}')" for i in range(1, ROWS + 1)),
    "INSERT INTO k VALUES " + ", ".join(f"({i}, {i}, 's{i}')" for i in range(1, ROWS + 1)),
    "INSERT INTO w VALUES " + ", ".join(f"({i}, 'w{i}')" for i in range(1, 21)),
    "INSERT INTO x VALUES " + ", ".join(f"({i}, {i}, 'x{i}')" for i in range(1, 21)),
]
# (label, statements): the first entry in one binlog file, then a binlog file per statement.
FILES = [
    ("create and fill t, k, w, x", FIRST),
    ("t: DROP COLUMN b", ["ALTER TABLE t DROP COLUMN b", "UPDATE t SET a = -1 WHERE id = 1"]),
    ("t: ADD COLUMN b again", ["ALTER TABLE t ADD COLUMN b VARCHAR(20) DEFAULT 'back'",
                               "UPDATE t SET c = -2 WHERE id = 2"]),
    ("row changes of k, w, x", ["UPDATE k SET a = -3 WHERE id = 3", "UPDATE w SET a = 'w-3' WHERE id = 3",
                                "UPDATE x SET s = 'x-3' WHERE id = 3", "DELETE FROM x WHERE id = 4"]),
    ("t: ADD COLUMN e, no row change of t", ["ALTER TABLE t ADD COLUMN e VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci "
                                             "NOT NULL DEFAULT 'dflt'",
                                             "INSERT INTO w VALUES (21, 'w21')"]),
    ("RENAME TABLE t TO t2", ["RENAME TABLE t TO t2", "UPDATE t2 SET a = -5 WHERE id = 5",
                              "DELETE FROM t2 WHERE id = 6", "INSERT INTO t2 (id, a) VALUES (101, 101)"]),
    ("CREATE TABLE v LIKE t2", ["CREATE TABLE v LIKE t2", "INSERT INTO v (id, a) VALUES (1, 1), (2, 2)",
                                "INSERT INTO v VALUES (3, 3, 30, 'three', 'e3')", "UPDATE v SET c = 7 WHERE id = 1"]),
    ("k: MODIFY id BIGINT", ["ALTER TABLE k MODIFY id BIGINT NOT NULL", "UPDATE k SET a = -7 WHERE id = 7",
                             "DELETE FROM k WHERE id = 8", "INSERT INTO k VALUES (5000000000, 1, 'big')",
                             "UPDATE k SET id = 6000000000 WHERE id = 10", "UPDATE k SET s = 'big2' WHERE id = 5000000000"]),
    ("TRUNCATE TABLE w", ["TRUNCATE TABLE w"]),
    ("w: inserts after TRUNCATE", ["INSERT INTO w VALUES (1, 'new1'), (30, 'new30')",
                                   "UPDATE w SET a = 'upd' WHERE id = 30"]),
    ("DROP TABLE x", ["DROP TABLE x"]),
    ("CREATE TABLE x again", ["CREATE TABLE x (id INT NOT NULL PRIMARY KEY, name VARCHAR(10) NOT NULL, qty DECIMAL(6,2))",
                              "INSERT INTO x VALUES (1, 'one', 1.50), (2, 'two', NULL), (50, 'fifty', 50)",
                              "UPDATE x SET qty = 2.25 WHERE id = 2"]),
    ("row changes of t2, k, v", ["UPDATE t2 SET c = -9 WHERE id = 9", "UPDATE k SET a = -11 WHERE id = 11",
                                 "DELETE FROM k WHERE id = 12", "UPDATE v SET b = 'vb' WHERE id = 2"]),
]
LABELS = [label for label, _ in FILES]

# Pseudo-columns of a difference that is not one column's value.
COLUMNS, ROWSET, RUN = "(columns)", "(rows)", "(run)"


@dataclass(frozen=True)
class Difference:
    run: str  # "run 3 (label)" or "one run"
    number: int  # the run's index in FILES (the last one for the one run)
    table: str  # "*" for the run itself
    key: str | None
    column: str
    current: object
    server: object

    def __str__(self) -> str:
        row = f" id={self.key}" if self.key is not None else ""
        return f"{self.run}: {self.table}{row} {self.column}: current {self.current!r}, server {self.server!r}"


@dataclass(frozen=True)
class Workload:
    database: str
    files: list[Path]  # the first entry of FILES in one file, then a file per statement
    entries: list[int]  # per file, its entry of FILES
    states: list[dict[str, tuple[list[str], dict[str, list[str]]]]]  # after each file: SELECT * per table
    gone: list[set[str]]  # after each file: the tables the server had and has no more

    def last_file(self, entry: int) -> int:
        """The last file of an entry of FILES."""
        return max(at for at, each in enumerate(self.entries) if each == entry)


@pytest.fixture(scope="module", params=["FULL", "MINIMAL"])
def workload(request, mariadb, tmp_path_factory) -> Workload:
    """The database, its binlog files (the first entry of ``FILES`` in one, then one per statement)
    and the server's tables after each."""
    database = f"table_ddl_{request.param.lower()}"
    mariadb.sql("SET GLOBAL binlog_row_metadata = FULL")
    mariadb.flush_logs()
    first = mariadb.current_binlog()
    mariadb.sql(f"CREATE DATABASE {database}")
    entries, states, gone, seen = [], [], [], set()
    for entry, (_, statements) in enumerate(FILES):
        for part in [statements] if entry == 0 else [[statement] for statement in statements]:
            mariadb.sql(";\n".join(logged_as(s, request.param) for s in part) + ";", database=database)
            tables = mariadb.sql("SHOW TABLES", database=database).splitlines()[1:]
            seen.update(tables)
            entries.append(entry)
            states.append({table: server_rows(mariadb, database, table) for table in tables})
            gone.append(seen - set(tables))
            mariadb.flush_logs()
    files = mariadb.copy_closed_binlogs(first, tmp_path_factory.mktemp("table-ddl-source"))
    assert len(files) == len(states), files
    return Workload(database, files, entries, states, gone)


def server_rows(mariadb, database: str, table: str) -> tuple[list[str], dict[str, list[str]]]:
    """``SELECT *`` of a table as :func:`server_table` gives it, also when it has no rows (the
    client prints no header for an empty result)."""
    if mariadb.sql(f"SELECT 1 FROM {table} LIMIT 1", database=database).strip():
        return server_table(mariadb, database, table)
    lines = mariadb.sql(f"SHOW COLUMNS FROM {table}", database=database).splitlines()[1:]
    return [line.split("\t")[0] for line in lines], {}


def current_rows(root: Path, database: str, table: str) -> list[dict]:
    """The rows of ``current`` of a table; none when it has no Parquet file (or no folder)."""
    if not any(Path(table_folder(root, "current", database, table)).rglob("*.parquet")):
        return []
    return warehouse_rows(root, "current", database, table)


def differences(root: Path, workload: Workload, at: int, run: str) -> list[Difference]:
    """Every way ``current`` differs from the server after file ``at``."""
    found, number = [], workload.entries[at]

    def differ(table, key, column, current, server):
        found.append(Difference(run, number, table, key, column, current, server))

    for table, (names, wanted) in sorted(workload.states[at].items()):
        rows = current_rows(root, workload.database, table)
        if rows:
            columns = [name for name in rows[0] if not name.startswith("_")]
            if columns != names:
                differ(table, None, COLUMNS, columns, names)
        ours: dict[str, dict] = {}
        for row in rows:
            key = str(row.get("id"))
            if key in ours:
                differ(table, key, ROWSET, "two rows of this id", "one")
            ours[key] = row
        for key in sorted(set(wanted) - set(ours), key=_by_number):
            differ(table, key, ROWSET, "no such row", wanted[key])
        for key in sorted(set(ours) - set(wanted), key=_by_number):
            differ(table, key, ROWSET, {n: v for n, v in ours[key].items() if not n.startswith("_")}, "no such row")
        for key in sorted(set(ours) & set(wanted), key=_by_number):
            row = ours[key]
            incomplete = set(row.get("_incomplete_columns") or [])
            for name, server in zip(names, wanted[key]):
                value = as_text(row[name]) if name in row else "<no such column>"
                if value != server or name in incomplete:
                    differ(table, key, name, value + (" (named in _incomplete_columns)" if name in incomplete else ""),
                           server)
            for name in sorted(incomplete - set(names)):
                differ(table, key, name, "named in _incomplete_columns", "no such column")
    for table in sorted(workload.gone[at]):
        rows = current_rows(root, workload.database, table)
        if rows:
            keys = sorted((str(row.get("id")) for row in rows), key=_by_number)
            differ(table, None, ROWSET, f"{len(rows)} rows (ids {', '.join(keys[:10])}{' ...' if len(keys) > 10 else ''})",
                   "no such table")
    return found


def _by_number(key: str):
    return (0, int(key)) if key.lstrip("-").isdigit() else (1, key)


def ingested(spark, source: Path, root: Path, run: str, number: int) -> list[Difference]:
    """An ingest of ``source`` into ``root``: no difference, or the one saying why it published nothing."""
    try:
        result = ingest(str(source), str(root), spark=spark, validation=False)
    except Exception as exc:  # noqa: BLE001 - reported as the run's difference
        first_line = (str(exc).strip().splitlines() or [""])[0]
        return [Difference(run, number, "*", None, RUN, f"failed: {type(exc).__name__}: {first_line[:500]}", "published")]
    if not result.run_id:
        return [Difference(run, number, "*", None, RUN, "published nothing", "published")]
    return []


@pytest.fixture(scope="module")
def one_run(spark, workload, tmp_path_factory) -> list[Difference]:
    """The differences after ingesting every file in one run."""
    root = tmp_path_factory.mktemp("table-ddl-one-run")
    last = len(workload.files) - 1
    failed = ingested(spark, workload.files[0].parent, root, "one run", len(FILES) - 1)
    return failed or differences(root, workload, last, "one run")


@pytest.fixture(scope="module")
def run_per_file(spark, workload, tmp_path_factory) -> list[Difference]:
    """The differences after each of the runs, one per binlog file: a run per statement. After a
    run that fails, the later runs are not made (each is a difference)."""
    source, root = tmp_path_factory.mktemp("table-ddl-source-growing"), tmp_path_factory.mktemp("table-ddl-runs")
    found: list[Difference] = []
    for at, binlog in enumerate(workload.files):
        number = workload.entries[at]
        run = f"run {at} ({binlog.name}: {LABELS[number]}, statement {at - workload.entries.index(number) + 1})"
        shutil.copyfile(binlog, source / binlog.name)
        failed = ingested(spark, source, root, run, number)
        found += failed or differences(root, workload, at, run)
        if failed:
            for later in range(at + 1, len(workload.files)):
                entry = workload.entries[later]
                found.append(Difference(f"run {later} ({LABELS[entry]})", entry, "*", None, RUN,
                                        f"not made: run {at} failed", "published"))
            break
    return found


def report(found: list[Difference], limit: int = 40) -> str:
    """The differences, those of one run, table and column of the same kind (rows missing, rows
    too many, values) on one line: how many, their ids and the first one's values."""
    groups: dict[tuple, list[Difference]] = {}
    for difference in found:
        kind = "missing" if difference.current == "no such row" else "extra" if difference.server == "no such row" else ""
        groups.setdefault((difference.number, difference.run, difference.table, difference.column, kind), []).append(difference)
    lines = []
    for (_, run, table, column, kind), group in list(groups.items())[:limit]:
        if len(group) == 1:
            lines.append(str(group[0]))
            continue
        keys = [difference.key for difference in group]
        what = {"missing": "rows missing from current", "extra": "rows in current the server does not have"}.get(
            kind, "rows differ")
        lines.append(f"{run}: {table} {column}: {len(group)} {what} (ids {', '.join(keys[:12])}"
                     f"{' ...' if len(keys) > 12 else ''}), first: {group[0]}")
    if len(groups) > limit:
        lines.append(f"... and {len(groups) - limit} more groups")
    return f"{len(found)} differences between current and the server:\n" + "\n".join(lines)


def test_one_run_gives_the_server_tables(one_run):
    assert not one_run, report(one_run)


def test_a_run_per_file_gives_the_server_tables_after_each(run_per_file):
    assert not run_per_file, report(run_per_file)


@dataclass(frozen=True)
class Case:
    """The differences a DDL statement concerns: of ``tables``, in the runs of files ``first`` to
    ``last`` (labels; ``None``: to the end), in ``columns`` only (``None``: all but ``ignore``).
    The differences of the run itself (a failure) and of the row set and column order always count.
    The one run of the case is over every file, or with ``one_run_to`` over the files up to that one
    (so that the case is checked before a later statement, a RENAME, moves its table)."""
    tables: frozenset[str]
    first: str
    last: str | None = None
    columns: frozenset[str] | None = None
    ignore: frozenset[str] = frozenset()
    one_run_to: str | None = None

    def concerns(self, difference: Difference, one_run: bool) -> bool:
        if difference.table not in self.tables | {"*"}:
            return False
        if not one_run:
            last = LABELS.index(self.last) if self.last else len(LABELS) - 1
            if not LABELS.index(self.first) <= difference.number <= last:
                return False
        if difference.column in (COLUMNS, ROWSET, RUN):
            return True
        if self.columns is not None:
            return difference.column in self.columns
        return difference.column not in self.ignore


T = frozenset({"t", "t2"})
CASES = {
    # each up to the file before the next DDL of t; the rows of t after the rename are checked in
    # t2 by "rename_table"
    "earlier_shape_gets_the_server_default": Case(T, "t: DROP COLUMN b", "row changes of k, w, x",
                                                  columns=frozenset({"b"}), one_run_to="row changes of k, w, x"),
    "alter_without_row_change": Case(T, "t: ADD COLUMN e, no row change of t", "t: ADD COLUMN e, no row change of t",
                                     columns=frozenset({"e"}), one_run_to="t: ADD COLUMN e, no row change of t"),
    "rename_table": Case(T, "RENAME TABLE t TO t2", ignore=frozenset({"b", "e"})),
    "create_table_like": Case(frozenset({"v"}), "CREATE TABLE v LIKE t2"),
    "primary_key_widened": Case(frozenset({"k"}), "k: MODIFY id BIGINT"),
    "truncate_table": Case(frozenset({"w"}), "TRUNCATE TABLE w"),
    "drop_and_create_again": Case(frozenset({"x"}), "DROP TABLE x"),
}


@pytest.mark.parametrize("case", CASES)
def test_one_run_follows(case, one_run, spark, workload, tmp_path):
    """The tables ``case`` concerns after one run over every file (or up to its ``one_run_to``)."""
    if CASES[case].one_run_to:
        entry = LABELS.index(CASES[case].one_run_to)
        last = workload.last_file(entry)
        source = tmp_path / "source"
        source.mkdir()
        for binlog in workload.files[:last + 1]:
            shutil.copyfile(binlog, source / binlog.name)
        run = f"one run over files 0-{last} ({workload.files[0].name}-{workload.files[last].name})"
        one_run = ingested(spark, source, tmp_path / "warehouse", run, entry) or differences(
            tmp_path / "warehouse", workload, last, run)
    found = [difference for difference in one_run if CASES[case].concerns(difference, one_run=True)]
    assert not found, report(found)


@pytest.mark.parametrize("case", CASES)
def test_each_run_follows(case, run_per_file):
    """The tables ``case`` concerns after each run from the one of its DDL."""
    found = [difference for difference in run_per_file if CASES[case].concerns(difference, one_run=False)]
    assert not found, report(found)


ALONE = ("t: ADD COLUMN e, no row change of t", "TRUNCATE TABLE w", "DROP TABLE x")  # a run of the DDL alone


def test_a_run_of_a_statement_alone_passes_validation(spark, workload, tmp_path):
    """As users run it, validation on: each run that holds only an ALTER, a TRUNCATE or a DROP
    TABLE is checked and published, and ``current`` is the server's after it."""
    source, root = tmp_path / "source", tmp_path / "warehouse"
    source.mkdir()
    alone = {workload.entries.index(LABELS.index(label)) for label in ALONE}
    for at, binlog in enumerate(workload.files):
        shutil.copyfile(binlog, source / binlog.name)
        result = ingest(str(source), str(root), spark=spark, validation=at in alone)
        assert result.run_id, binlog.name
        if at in alone:
            assert result.quality["success"], (binlog.name, result.quality)
            found = differences(root, workload, at, f"validated run {at} ({LABELS[workload.entries[at]]})")
            assert not found, report(found)
