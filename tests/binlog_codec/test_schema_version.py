"""``version_after`` against a real MariaDB server: the table map it logs after an ALTER is the oracle.

Each case creates a table, inserts a row (the table map of the version before), runs its ALTER
statements and inserts another row (the table map of the version after). The binlog is read
with the codec's own reader: ``version_after`` of the first version's ``table_schemas`` row and
the ALTERs' ``schema_changes`` rows (as the schema history builds them from the QUERY events)
must be the second version's row, schema id included, or None where the module documents the
version as not knowable. Some of those cases show why: the server logs a primary key, a
collation or a hidden column the statements do not spell out.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from binlog_codec import ddl
from binlog_codec.arrow import table_schema_row
from binlog_codec.create_table import table_map_of
from binlog_codec.events import QueryEvent, TableMapEvent, read
from binlog_codec.schema_change import TableAltered
from binlog_codec.schema_version import model_of_version, table_default, version_after
from binlog_codec.table_map import table_map
from mariadb import binlog_of
from spark_jobs.schema_history import change_rows

pytestmark = pytest.mark.integration

DATABASE = "schema_version"
TABLE = ("(id INT NOT NULL PRIMARY KEY, a INT, b VARCHAR(20), n INT NOT NULL DEFAULT 0, "
         "e ENUM('a','b') CHARACTER SET latin1 COLLATE latin1_swedish_ci) "
         "DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci")
UTF8 = "CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"


@dataclass(frozen=True)
class Case:
    name: str
    alters: tuple[str, ...]  # what follows ALTER TABLE <table>
    exact: bool  # False: version_after is None
    table: str = TABLE
    first: str = "(id) VALUES (1)"
    then: str = "(id) VALUES (2)"


CASES = [
    Case("add with default", ("ADD COLUMN c INT NOT NULL DEFAULT 7",), True),
    Case("add first", ("ADD COLUMN f DECIMAL(6,2) NOT NULL DEFAULT 1.50 FIRST",), True),
    Case("add after", ("ADD COLUMN g BIGINT UNSIGNED AFTER id",), True),
    Case("nullable add", ("ADD COLUMN h SMALLINT",), True),
    Case("drop column", ("DROP COLUMN a",), True),
    Case("rename column", ("RENAME COLUMN b TO b2",), True),
    Case("change with rename and type", ("CHANGE a a2 BIGINT",), True),
    Case("int to bigint", ("MODIFY a BIGINT",), True),
    Case("int to varchar", (f"MODIFY a VARCHAR(12) {UTF8}",), True),
    Case("varchar length", (f"MODIFY b VARCHAR(40) {UTF8}",), True),
    Case("utf8mb4 and latin1 columns", ("ADD COLUMN u VARCHAR(8) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci "
                                        "NOT NULL DEFAULT 'ü', ADD COLUMN l CHAR(3) CHARACTER SET latin1 COLLATE "
                                        "latin1_bin, ADD COLUMN x TEXT COLLATE utf8mb4_bin",), True),
    Case("enum value added", ("MODIFY e ENUM('a','b','c') CHARACTER SET latin1 COLLATE latin1_swedish_ci",), True),
    Case("enum column added", ("ADD COLUMN k ENUM('x','y''s') CHARACTER SET utf8mb4 COLLATE utf8mb4_bin "
                               "NOT NULL DEFAULT 'x'",), True),
    Case("decimal", ("ADD COLUMN d DECIMAL(12,4), MODIFY a DECIMAL(20,2)",), True),
    Case("dates", ("ADD COLUMN dt DATETIME(3), ADD COLUMN dd DATE NOT NULL DEFAULT '2024-02-29', "
                   "ADD COLUMN tm TIME(6)",), True),
    Case("set default", ("ALTER COLUMN a SET DEFAULT 5",), True),
    Case("add index", ("ADD INDEX (a, b)",), True),
    Case("primary key changed", ("DROP PRIMARY KEY, ADD PRIMARY KEY (id, a)",), True,
         first="(id, a) VALUES (1, 1)", then="(id, a) VALUES (2, 2)"),
    Case("key column type", ("MODIFY id BIGINT NOT NULL",), True),
    Case("not null column type", ("MODIFY n BIGINT NOT NULL DEFAULT 0",), True),
    Case("table default named", ("DEFAULT CHARSET=latin1 COLLATE=latin1_german1_ci, ADD COLUMN w VARCHAR(5)",), True),
    Case("two statements", ("ADD COLUMN c INT AFTER a", "RENAME COLUMN c TO c2, DROP COLUMN b"), True),
    # not knowable
    Case("generated column", ("ADD COLUMN g INT GENERATED ALWAYS AS (a + 1) VIRTUAL",), False),
    Case("charset of the table default", ("MODIFY b VARCHAR(40)",), False),
    Case("collation of a server setting", ("ADD COLUMN u VARCHAR(8) CHARACTER SET utf8mb4",), False),
    Case("timestamp", ("ADD COLUMN ts TIMESTAMP",), False),
    Case("convert to character set", ("CONVERT TO CHARACTER SET latin1 COLLATE latin1_swedish_ci",), False),
    Case("key column without NOT NULL", ("MODIFY id BIGINT",), False),
    Case("primary key dropped", ("DROP PRIMARY KEY",), False),
    Case("a unique key becomes the primary key", ("ADD UNIQUE KEY (n)",), False,
         table="(id INT, n INT NOT NULL) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
         first="(id, n) VALUES (1, 1)", then="(id, n) VALUES (2, 2)"),
    Case("a prefix made whole", (f"MODIFY c VARCHAR(10) {UTF8} NOT NULL",), False,
         table=f"(a INT NOT NULL, c VARCHAR(20) {UTF8} NOT NULL, UNIQUE KEY (a, c(10)))",
         first="(a, c) VALUES (1, 'x')", then="(a, c) VALUES (2, 'y')"),
    Case("a unique key turned into a hash", (f"MODIFY c VARCHAR(1000) {UTF8}",), False,
         table=f"(id INT NOT NULL PRIMARY KEY, c VARCHAR(100) {UTF8}, UNIQUE KEY (c))"),
    Case("a long unique key", ("ADD COLUMN z INT",), False,
         table=f"(id INT NOT NULL PRIMARY KEY, c TEXT {UTF8}, UNIQUE KEY (c))"),
]


def statements(number: int, case: Case) -> str:
    table = f"t{number}"
    lines = [f"CREATE TABLE {table} {case.table}", f"INSERT INTO {table} {case.first}"]
    lines += [f"ALTER TABLE {table} {alter}" for alter in case.alters]
    lines.append(f"INSERT INTO {table} {case.then}")
    return ";\n".join(lines) + ";\n"


def schema_changes(event: QueryEvent) -> list[dict]:
    """The schema_changes rows of an ALTER TABLE event, as the schema history makes them."""
    change = ddl.parse_event(event)
    if not isinstance(change, TableAltered):
        return []
    sql_mode = event.status_vars.get("sql_mode")
    return [{**row, "statement": event.query, "sql_mode": sql_mode}
            for row in change_rows(change, event.database or None, sql_mode)]


@pytest.fixture(scope="module")
def logged(mariadb) -> dict[str, tuple[list[dict], list[dict]]]:
    """Per case name: the table_schemas rows of its table's table maps and its schema_changes rows, in log order."""
    mariadb.sql("SET GLOBAL binlog_row_metadata = FULL")
    workload = f"CREATE DATABASE {DATABASE};\nUSE {DATABASE};\n"
    workload += "".join(statements(number, case) for number, case in enumerate(CASES))
    names = {f"t{number}": case.name for number, case in enumerate(CASES)}
    found: dict[str, tuple[list[dict], list[dict]]] = {case.name: ([], []) for case in CASES}
    for event in read(binlog_of(mariadb, workload)):
        if isinstance(event, TableMapEvent) and event.database == DATABASE:
            found[names[event.table]][0].append(table_schema_row(table_map(event), "mariadb"))
        elif isinstance(event, QueryEvent):
            for row in schema_changes(event):
                found[names[row["table"]]][1].append(row)
    return found


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_the_version_after_the_alters_is_the_one_the_server_logs(logged, case):
    versions, changes = logged[case.name]
    assert len(versions) == 2 and len(changes) == len(case.alters)
    before, after = versions
    assert version_after(before, changes) == (after if case.exact else None)


@pytest.mark.parametrize("name", ["set default", "add index"])
def test_a_change_the_table_map_does_not_show_gives_the_version_itself(logged, name):
    (before, _), changes = logged[name]
    assert version_after(before, changes)["schema_id"] == before["schema_id"]


def test_what_the_none_cases_hide(logged):
    """The server logs what the statements do not say: a UNIQUE key as the primary key, a hash column."""
    before, after = logged["a unique key becomes the primary key"][0]
    assert (before["primary_key"], after["primary_key"]) == ([], [{"column": "n", "prefix": 0}])
    before, after = logged["a prefix made whole"][0]
    assert (before["primary_key"], [part["column"] for part in after["primary_key"]]) == ([], ["a", "c"])
    before, after = logged["a unique key turned into a hash"][0]
    assert [column["name"] for column in after["columns"]] == ["id", "c", "DB_ROW_HASH_1"]


# -- without a server -----------------------------------------------------------------------


def version(statement: str) -> dict:
    return table_schema_row(table_map_of(statement, database="d", flavour="mariadb"), "mariadb")


BASE = version(f"CREATE TABLE t (id INT NOT NULL, a INT, b VARCHAR(20) {UTF8}, PRIMARY KEY (id))")


def altered(statement: str, database: str = "d", sql_mode: int = 0) -> dict:
    return {"statement": statement, "database": database, "sql_mode": sql_mode, "change": "altered", "table": "t"}


def test_only_alter_table_statements_of_the_table_are_followed():
    assert version_after(BASE, [altered("ALTER TABLE t ADD COLUMN c INT")]) is not None
    assert version_after(BASE, [{**altered("TRUNCATE TABLE t"), "change": "truncated"}]) is None
    assert version_after(BASE, [altered("ALTER TABLE t ADD COLUMN c INT", database="other")]) is None
    assert version_after(BASE, [altered("ALTER TABLE t DROP COLUMN missing")]) is None
    assert version_after(BASE, [altered("ALTER TABLE t ADD COLUMN c INT", database="d"),
                                altered("ALTER TABLE t RENAME TO u")]) is not None
    assert version_after(BASE, []) == BASE


def test_a_version_the_model_does_not_reproduce_gives_none():
    assert model_of_version(BASE).primary_key == ("id",)
    prefixed = version(f"CREATE TABLE t (id INT NOT NULL, b VARCHAR(20) {UTF8} NOT NULL, PRIMARY KEY (b(4)))")
    assert version_after(prefixed, []) is None
    assert version_after({**BASE, "metadata_level": "MINIMAL"}, []) is None


@pytest.mark.parametrize("statement", [
    "ALTER TABLE t ADD COLUMN c INT NOT NULL UNIQUE",
    "ALTER TABLE t ADD COLUMN c SERIAL",
    "ALTER TABLE t DROP PRIMARY KEY, ADD COLUMN c INT PRIMARY KEY",
    "ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (b(4))",
    "ALTER TABLE t DROP INDEX i",
    "ALTER TABLE t ENGINE=MyISAM",
    "ALTER TABLE t MODIFY b TEXT COLLATE utf8mb4_bin",
    "ALTER TABLE t MODIFY a INT NOT NULL",
])
def test_what_may_change_the_logged_primary_key_gives_none(statement):
    assert version_after(BASE, [altered(statement)]) is None


def test_the_statements_own_primary_key_lets_a_key_column_change():
    keyed = "ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (id)"
    assert version_after(BASE, [altered(keyed), altered("ALTER TABLE t MODIFY id BIGINT")]) == version(
        f"CREATE TABLE t (id BIGINT NOT NULL, a INT, b VARCHAR(20) {UTF8}, PRIMARY KEY (id))")


def test_a_drop_column_on_mysql_needs_the_primary_key_set():
    mysql = table_schema_row(table_map_of("CREATE TABLE t (id INT NOT NULL, a INT, PRIMARY KEY (id))",
                                          database="d", flavour="mysql"), "mysql")
    assert version_after(mysql, [altered("ALTER TABLE t DROP COLUMN a")]) is None
    assert version_after(mysql, [altered("ALTER TABLE t ADD COLUMN c INT")]) is not None


def test_a_sql_mode_that_renames_types_gives_none():
    assert version_after(BASE, [altered("ALTER TABLE t ADD COLUMN r REAL", sql_mode=1)]) is None
    assert version_after(BASE, [altered("ALTER TABLE t ADD COLUMN r REAL")])["columns"][-1]["sql_type"] == "DOUBLE"


def created(statement: str) -> dict:
    return {"statement": statement, "database": "d", "sql_mode": 0, "change": "created", "table": "t"}


def test_the_table_default_is_what_a_column_declared_without_one_got():
    statement = ("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, l VARCHAR(5) CHARACTER SET latin1, "
                 "y VARCHAR(3) BINARY, b VARCHAR(20)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci")
    first = version(statement)
    assert table_default(created(statement), first) == ("utf8mb4", "utf8mb4_unicode_ci")
    only_named = f"CREATE TABLE t (id INT NOT NULL PRIMARY KEY, b VARCHAR(20) {UTF8})"
    assert table_default(created(only_named), version(only_named)) is None  # no column took the default
    added = version_after(BASE, [altered("ALTER TABLE t ADD COLUMN c VARCHAR(4)")],
                          table_default=("utf8mb4", "utf8mb4_unicode_ci"))
    assert added["columns"][-1]["collation"] == "utf8mb4_unicode_ci"
    assert version_after(BASE, [altered("ALTER TABLE t ADD COLUMN c VARCHAR(4)")]) is None  # the default unknown


def test_a_declared_primary_key_lets_a_not_null_string_change():
    change = altered("ALTER TABLE t MODIFY a VARCHAR(20) NOT NULL")
    assert version_after(BASE, [change], ("utf8mb4", "utf8mb4_general_ci")) is None  # may be a UNIQUE key's
    declared = version_after(BASE, [change], ("utf8mb4", "utf8mb4_general_ci"), primary_key_declared=True)
    assert declared["columns"][1]["sql_type"].startswith("VARCHAR(20)") and declared["primary_key"] == BASE["primary_key"]
