"""spark_jobs.version_lineage: the way of each older table version to the latest one, from the
versions and the DDL logged between them."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

import numpy as np
import pytest

from spark_jobs.table_names import order
from spark_jobs.version_lineage import FromColumn, Unknown, Value, arrow_value, table_lineage


def column(name: str, sql_type: str, arrow_type: str, nullable: bool = True, **extra) -> dict:
    return {"name": name, "sql_type": sql_type, "arrow_type": arrow_type, "nullable": nullable, **extra}


ID = column("id", "int", "int32", False)


def version(schema_id: str, pos: int, *columns: dict, table: str = "t", last: int | None = None) -> dict:
    return {"schema_id": schema_id, "database": "db", "table": table, "columns": [ID, *columns],
            "primary_key": [{"column": "id", "prefix": 0}], "first_seq": 1, "first_file": "b.000001",
            "first_pos": pos, "last_seq": 1, "last_file": "b.000001", "last_pos": last or pos}


def altered(statement: str, pos: int, table: str = "t") -> dict:
    return {"database": "db", "table": table, "change": "altered", "detail": None, "statement": statement, "sql_mode": 0,
            "_binlog_seq": 1, "_binlog_file": "b.000001", "_binlog_pos": pos}


@pytest.mark.parametrize(("value", "col", "expected"), [
    ("dflt", column("e", "varchar(10)", "string"), (True, "dflt")),
    ("ab  ", column("e", "char(4)", "string"), (True, "ab")),
    ("y", column("e", "enum('x','y')", "string", enum_values=["x", "y"]), (True, "y")),
    ("z", column("e", "enum('x','y')", "string", enum_values=["x", "y"]), (False, None)),
    (-5, column("e", "bigint", "int64"), (True, -5)),
    ("42", column("e", "int", "int32"), (True, 42)),
    (300, column("e", "tinyint", "int8"), (False, None)),
    (Decimal("12.5"), column("e", "decimal(6,2)", "decimal128(6, 2)"), (True, Decimal("12.50"))),
    (Decimal("1.005"), column("e", "decimal(6,2)", "decimal128(6, 2)"), (False, None)),
    ("2024-02-29", column("e", "date", "date32[day]"), (True, date(2024, 2, 29))),
    ("2024-02-29 10:11:12", column("e", "datetime", "timestamp[us]"), (True, datetime(2024, 2, 29, 10, 11, 12))),
    ("2024-02-29 10:11:12", column("e", "timestamp", "timestamp[us, tz=UTC]"), (False, None)),
    (1.5, column("e", "double", "double"), (False, None)),
    (b"\x01", column("e", "binary(2)", "binary"), (False, None)),
    (1, column("e", "bit(1)", "int64"), (False, None)),
    (None, column("e", "int", "int32"), (True, None)),
])
def test_a_default_is_held_exactly_or_not_at_all(value, col, expected):
    assert arrow_value(value, col) == expected


def test_added_renamed_and_dropped_columns_lead_to_the_latest_version():
    a, b, c = column("a", "int", "int32"), column("b", "varchar(20)", "string"), column("c", "int", "int32")
    e = column("e", "varchar(10)", "string", False)
    b2, ts = column("b2", "varchar(20)", "string"), column("ts", "datetime", "timestamp[us]", False)
    versions = [version("v1", 100, a, b, c), version("v2", 300, a, b2, c, e), version("v3", 500, b2, e, ts)]
    changes = [
        altered("ALTER TABLE t ADD COLUMN e VARCHAR(10) NOT NULL DEFAULT 'dflt', RENAME COLUMN b TO b2", 200),
        altered("ALTER TABLE t ALTER COLUMN a SET DEFAULT 7", 350),
        altered("ALTER TABLE t DROP COLUMN a, DROP COLUMN c", 400),
        altered("ALTER TABLE t ADD COLUMN ts DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP", 450),
    ]
    lineage = table_lineage(versions, changes, "db", "t")
    assert lineage.latest == "v3" and lineage.columns == ("id", "b2", "e", "ts")
    assert lineage.latest_key == ("v3", 4)  # four schema changes logged before its rows
    first, second = lineage.to_latest(("v1", 0)), lineage.to_latest(("v2", 1))
    assert first[:3] == (FromColumn("id"), FromColumn("b"), Value("dflt")) and isinstance(first[3], Unknown)
    assert second[:3] == (FromColumn("id"), FromColumn("b2"), FromColumn("e")) and isinstance(second[3], Unknown)
    assert lineage.way(("v1", 0), ("v2", 1)) == (FromColumn("id"), FromColumn("a"), FromColumn("b"), FromColumn("c"),
                                                 Value("dflt"))
    assert lineage.way(("v2", 1), ("v2", 1)) is None  # the same version: nothing to carry


def test_a_table_back_in_an_earlier_shape_is_told_apart_by_the_changes_between():
    a, b = column("a", "int", "int32"), column("b", "varchar(20)", "string")
    versions = [version("v1", 100, a, b, last=500), version("v2", 300, a)]
    changes = [altered("ALTER TABLE t DROP COLUMN b", 200),
               altered("ALTER TABLE t ADD COLUMN b VARCHAR(20) DEFAULT 'back'", 400)]
    lineage = table_lineage(versions, changes, "db", "t")
    assert lineage.latest == "v1" and lineage.latest_key == ("v1", 2)
    assert [lineage.epoch(order(1, "b.000001", pos)) for pos in (100, 300, 500)] == [0, 1, 2]
    assert lineage.to_latest(("v1", 0)) == (FromColumn("id"), FromColumn("a"), Value("back"))
    assert lineage.to_latest(("v2", 1)) == (FromColumn("id"), FromColumn("a"), Value("back"))
    no_run = np.full(3, -1)
    assert list(lineage.epochs([1, 1, 1], ["b.000001"] * 3, [100, 300, 500], no_run)) == [0, 1, 2]
    # a file without a number sorts first, as in every log order of the warehouse
    assert list(lineage.epochs([None, 1], ["b.000001"] * 2, [250, 450], no_run[:2])) == [0, 2]
    # a row change of a later run comes after every schema change of the runs before, whatever its position
    assert list(lineage.epochs([1], ["b.000001"], [50], np.array([3]))) == [2]


def test_the_schema_changes_of_the_run_come_after_those_of_the_runs_before():
    """A failover may bring binlogs of lower numbers: the run's own come after the others."""
    a, b = column("a", "int", "int32"), column("b", "varchar(20)", "string")
    versions = [{**version("v1", 100, a), "first_run": 0, "last_run": 0},
                {**version("v2", 50, a, b), "first_run": 1, "last_run": 1}]
    changes = [{**altered("ALTER TABLE t ADD COLUMN b VARCHAR(20) DEFAULT 'new'", 20), "_run": 1}]
    lineage = table_lineage(versions, changes, "db", "t", run=1)
    assert lineage.latest_key == ("v2", 1)
    assert lineage.to_latest(("v1", 0)) == (FromColumn("id"), FromColumn("a"), Value("new"))


def test_without_the_ddl_between_two_versions_the_older_keeps_its_columns_by_name():
    a, e = column("a", "int", "int32"), column("e", "varchar(10)", "string", False)
    lineage = table_lineage([version("v1", 100, a), version("v2", 300, a, e)], [], "db", "t")
    sources = lineage.to_latest(("v1", 0))
    assert sources[:2] == (FromColumn("id"), FromColumn("a")) and isinstance(sources[2], Unknown)


def test_a_type_change_that_is_no_widening_is_not_followed():
    n_int, n_text = column("n", "double", "double"), column("n", "varchar(20)", "string")
    lineage = table_lineage([version("v1", 100, n_int), version("v2", 300, n_text)],
                            [altered("ALTER TABLE t MODIFY n VARCHAR(20)", 200)], "db", "t")
    assert lineage.way(("v1", 0), ("v2", 1)) is None
    assert lineage.to_latest(("v1", 0)) == (FromColumn("id"), FromColumn("n"))  # by name: the fold's own rules decide


def test_a_table_of_one_version_has_no_lineage():
    assert table_lineage([version("v1", 100)], [], "db", "t") is None


def test_numbers_turned_into_text_are_followed_and_merge_as_text():
    import pyarrow as pa

    from spark_jobs.materialize import SchemaConflict, merge_schemas

    n, k = column("n", "decimal(6,2)", "decimal128(6, 2)", False), column("k", "bigint", "int64", False)
    when = column("w", "datetime", "timestamp[us]")
    n2, k2 = column("n", "varchar(10)", "string", False), column("k3", "varchar(20)", "string", False)
    lineage = table_lineage([version("v1", 100, n, k, when), version("v2", 300, n2, k2, when)],
                            [altered("ALTER TABLE t MODIFY n VARCHAR(10) NOT NULL, CHANGE k k3 VARCHAR(20) NOT NULL", 200)],
                            "db", "t")
    assert lineage.to_latest(("v1", 0)) == (FromColumn("id"), FromColumn("n"), FromColumn("k"), FromColumn("w"))
    assert lineage.as_text == {"n", "k", "k3"}
    tail = [pa.field("_op", pa.string()), pa.field("_present_columns", pa.list_(pa.string())),
            pa.field("_unrepresentable", pa.map_(pa.string(), pa.string()))]
    older = pa.schema([pa.field("n", pa.decimal128(6, 2)), pa.field("w", pa.timestamp("us")), *tail])
    newer = pa.schema([pa.field("n", pa.string()), pa.field("w", pa.int64()), *tail])
    assert merge_schemas([older, newer.remove(1)], lineage.as_text).image[0].type == pa.string()
    with pytest.raises(SchemaConflict):
        merge_schemas([older, newer.remove(1)])
    with pytest.raises(SchemaConflict):  # DATETIME to a number: not followed
        merge_schemas([older, newer], lineage.as_text)


def test_a_row_change_of_the_run_before_a_truncate_of_the_run_is_not_kept():
    a = column("a", "int", "int32")
    versions = [{**version("v1", 100, a, last=900), "first_run": 3, "last_run": 3}]
    truncate = {**altered("TRUNCATE TABLE t", 500), "change": "truncated", "_run": 3}
    lineage = table_lineage(versions, [truncate], "db", "t", run=3)
    seqs, files, positions = [1, 1, 2], ["b.000001", "b.000001", "b.000002"], [400, 600, 100]
    assert lineage.kept(["v1"] * 3, seqs, files, positions).tolist() == [False, True, True]
    assert lineage.kept(["v1"] * 2, [None, 1], ["relay", "b.000001"], [400, 600]).tolist() == [False, True]
    # a TRUNCATE of a run before the table's rows: nothing to follow, every row kept as it is
    assert table_lineage(versions, [{**truncate, "_run": 2}], "db", "t", run=3) is None


def test_a_table_created_before_its_rows_has_no_lineage():
    """The usual table: its CREATE TABLE, then rows of one version; the fold does no lineage work."""
    a = column("a", "int", "int32")
    created = {**altered("CREATE TABLE t (id INT NOT NULL PRIMARY KEY, a INT)", 50), "change": "created"}
    assert table_lineage([version("v1", 100, a, last=900)], [created], "db", "t") is None
    truncated = {**altered("TRUNCATE TABLE t", 500), "change": "truncated"}
    assert table_lineage([version("v1", 100, a, last=900)], [created, truncated], "db", "t") is not None
