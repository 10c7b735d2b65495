"""spark_jobs.schema_history without Spark: rows and their text per kind of change, the table a
statement not understood names, and table versions named by the history."""

from __future__ import annotations

import pytest

from binlog_codec import ddl
from spark_jobs.schema_history import change_rows, name_versions, not_understood_notices


def rows_of(statement: str, database: str | None = "db", sql_mode: int = 0) -> list[tuple]:
    change = ddl.parse(statement, database, sql_mode=sql_mode)
    return [(r["database"], r["table"], r["change"], r["detail"]) for r in change_rows(change, database, sql_mode)]


@pytest.mark.parametrize("statement, detail", [
    ("ALTER TABLE t ADD COLUMN a INT FIRST, DROP COLUMN IF EXISTS b",
     "ADD COLUMN `a` INT NULL FIRST; DROP COLUMN IF EXISTS `b`"),
    ("ALTER TABLE t ALTER COLUMN a DROP DEFAULT, DROP PRIMARY KEY, ADD PRIMARY KEY (a, b)",
     "ALTER COLUMN `a` DROP DEFAULT; DROP PRIMARY KEY; ADD PRIMARY KEY (`a`, `b`)"),
    ("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
     "CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"),
    ("ALTER TABLE t RENAME TO other.t2", "RENAME TO `other`.`t2`"),
    ("ALTER TABLE t CHANGE a `a b` VARCHAR(3) NOT NULL DEFAULT 'x' AFTER c",
     "CHANGE COLUMN `a` `a b` VARCHAR(3) NOT NULL DEFAULT 'x' AFTER `c`"),
])
def test_alter_detail_is_its_operations_as_sql(statement, detail):
    assert rows_of(statement) == [("db", "t", "altered", detail)]


def test_a_row_per_table_renamed_or_dropped():
    assert rows_of("RENAME TABLE a TO b, x.c TO x.d") == [
        ("db", "a", "renamed", "TO `db`.`b`"), ("x", "c", "renamed", "TO `x`.`d`")]
    assert rows_of("DROP TABLE IF EXISTS a, x.b") == [("db", "a", "dropped", None), ("x", "b", "dropped", None)]
    assert rows_of("DROP DATABASE x") == [("x", None, "database_dropped", None)]
    assert rows_of("SELECT 1") == []


@pytest.mark.parametrize("statement, table", [
    ("ALTER ONLINE IGNORE TABLE IF EXISTS x.`t 1` ADD SYSTEM VERSIONING", ("x", "t 1")),
    ("CREATE OR REPLACE TABLE t2 SELECT 1 AS a", ("db", "t2")),
    ("CREATE SEQUENCE s", ("db", "s")),
    ("FROB THE TABLES", (None, None)),
])
def test_a_statement_not_understood_names_its_table_when_its_head_does(statement, table):
    [(database, name, change, detail)] = rows_of(statement)
    assert (change, (database, name) if name else (None, None)) == ("not_understood", table)
    assert detail == ddl.parse(statement, "db").reason
    notice = not_understood_notices([{"database": database, "table": name, "change": change, "detail": detail,
                                      "_binlog_file": "f.000001", "_binlog_pos": 4}])
    assert notice == [f"schema change at f.000001:4 not understood, "
                      f"{f'{database}.{name}' if name else 'an unknown table'} is not followed through it: {detail}"]


def change(statement: str, pos: int, file: str = "b.000001") -> list[dict]:
    found = ddl.parse(statement, "db")
    place = {"statement": statement, "sql_mode": 0, "_binlog_file": file, "_binlog_seq": int(file[-6:]),
             "_binlog_pos": pos}
    return [{**row, **place} for row in change_rows(found, "db")]


def version(table: str, pos: int, ddl_text: str | None = None, file: str = "b.000001") -> dict:
    return {"database": "db", "table": table, "first_file": file, "first_seq": int(file[-6:]), "first_pos": pos,
            "ddl": ddl_text, "ddl_position": None if ddl_text is None else "kept"}


def test_versions_name_the_last_change_that_shaped_their_table_before_their_first_row():
    history = (change("CREATE TABLE t (a INT)", 100) + change("ALTER TABLE t ADD b INT", 200)
               + change("TRUNCATE TABLE t", 300) + change("RENAME TABLE t TO u", 400)
               + change("ALTER TABLE u RENAME TO v", 100, "b.000002"))
    named = name_versions([version("t", 150), version("t", 250), version("t", 350), version("u", 450),
                           version("v", 50, file="b.000002"), version("v", 150, file="b.000002"),
                           version("old", 10), version("t", 500, "kept statement")], history)
    assert [(v["ddl"], v["ddl_position"]) for v in named] == [
        ("CREATE TABLE t (a INT)", "b.000001:100"),
        ("ALTER TABLE t ADD b INT", "b.000001:200"),
        ("ALTER TABLE t ADD b INT", "b.000001:200"),  # a TRUNCATE keeps the shape
        ("RENAME TABLE t TO u", "b.000001:400"),
        (None, None),  # before the rename that made it, in its file
        ("ALTER TABLE u RENAME TO v", "b.000002:100"),
        (None, None),  # created before the log
        ("kept statement", "kept"),  # named by an earlier run
    ]


def test_a_table_renamed_from_another_database_is_named_by_the_rename():
    history = change("RENAME TABLE x.a TO b", 600) + change("ALTER TABLE x.c RENAME TO `d``e`", 700)
    named = name_versions([version("b", 650), version("d`e", 750)], history)
    assert [(v["ddl"], v["ddl_position"]) for v in named] == [
        ("RENAME TABLE x.a TO b", "b.000001:600"), ("ALTER TABLE x.c RENAME TO `d``e`", "b.000001:700")]
