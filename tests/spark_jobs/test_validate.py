"""``spark_jobs.validate``: Great Expectations over a run folder.

A real run (the MariaDB workload of every column type, latin1 and cp1251 text,
BIGINT UNSIGNED at its maximum, a schema change) passes every expectation; a
copy of one of its tables made wrong in one way fails exactly the expectation
that guards against it, and the failure names the column and shows the bad
value. A run of the shared fixture binlogs (a compressed transaction among
them) passes too, without MariaDB.
"""

from __future__ import annotations

import html
import json
import logging
import re
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from binlog_codec.table_map import ColumnType
from spark_jobs.expectations import verdict
from spark_jobs.ingest import ingest
from spark_jobs.run_facts import IntegerRange, integer_range
from spark_jobs.validate import QualityOutcome, validate
from warehouse.layout import table_folder

DATABASE = "validate_e2e"
FIXTURES = (
    "blackbeam__rust_mysql_common/transaction_compression.000001",
    "blackbeam__rust_mysql_common/mysql-enum-string-set.000001",
    "blackbeam__rust_mysql_common/minimal_row_metadata.000001",
)
CHARSET_SCHEMA = pa.schema([
    pa.field("database", pa.string()), pa.field("table", pa.string()), pa.field("column", pa.string()),
    pa.field("charset", pa.string()), pa.field("checked", pa.int64()), pa.field("mismatches", pa.int64()),
    pa.field("example", pa.string()),
])


# -- a real run ------------------------------------------------------------------


@pytest.fixture(scope="module")
def warehouse(mariadb, spark, tmp_path_factory) -> Path:
    """The MariaDB workload (row images MINIMAL, NOBLOB, FULL, then a schema change) ingested
    without validation: a warehouse laid out like a run folder."""
    from mariadb_workload import switching_statements

    mariadb.sql("SET GLOBAL binlog_row_metadata = FULL")
    mariadb.flush_logs()
    first = mariadb.current_binlog()
    mariadb.sql(switching_statements(DATABASE, ("MINIMAL", "NOBLOB", "FULL"), evolve=True))
    mariadb.flush_logs()
    source = tmp_path_factory.mktemp("source")
    for binlog in mariadb.binlog_files():
        if first <= binlog < mariadb.current_binlog():
            shutil.copyfile(binlog, source / binlog.name)
    root = tmp_path_factory.mktemp("warehouse")
    result = ingest(str(source), str(root), spark=spark, validation=False)
    assert result.run_id and result.rows[f"{DATABASE}.numbers"] > 0
    return root


@pytest.fixture(scope="module")
def outcome(spark, warehouse) -> QualityOutcome:
    return validate(spark, run_folder=warehouse, warehouse=warehouse, run_id="real")


def suite_results(warehouse: Path, run_id: str, suite: str = "*") -> list[dict]:
    """The stored validation results of a run's suites (``<db>:<table>`` of the tables, or
    ``charset_checks``): the JSON documents Great Expectations wrote."""
    files = sorted((warehouse / "quality" / "runs" / run_id / "validation_results").glob(f"{suite}/*/*.json"))
    assert files, f"no validation results of {suite}"
    return [result for file in files for result in json.loads(file.read_text())["results"]]


def checks(results: list[dict]) -> dict[str, dict]:
    """The evaluated expectations by the check they make (their meta)."""
    return {r["expectation_config"]["meta"]["check"]: r["expectation_config"]["meta"] for r in results}


@pytest.mark.integration
def test_the_real_run_passes_every_expectation(outcome, warehouse):
    failures = {f"{t.database}.{t.table}": t.failures for t in outcome.tables if t.failures}
    assert outcome.success, failures
    tables = {t.table: t for t in outcome.tables}
    assert set(tables) == {"numbers", "temporal", "texts", "bytes", "choices", "shapes", "others"}
    assert all(t.success and t.rows > 0 and t.expectations >= 7 for t in tables.values())

    numbers = checks(suite_results(warehouse, "real", f"{DATABASE}:numbers"))
    assert {"columns", "type", "range", "operation", "unique_key", "log_order", "row_count"} <= set(numbers)
    ranges = {each["column"]: each for each in numbers["range"]["columns"]}
    assert ranges["biu"] == {"column": "biu", "sql_type": "BIGINT UNSIGNED", "low": "0", "high": str(2**64 - 1)}
    assert ranges["b64"]["high"] == str(2**64 - 1) and ranges["tiu"]["high"] == "255"
    assert (ranges["i"]["low"], ranges["i"]["high"]) == (str(-(2**31)), str(2**31 - 1))
    assert numbers["type"]["columns"]["biu"] == "decimal128(20, 0)"
    assert "ti" not in numbers["type"]["columns"]  # TINYINT, then SMALLINT: widened, not one type

    texts = checks(suite_results(warehouse, "real", f"{DATABASE}:texts"))
    assert {"c_latin1", "t_cp1251"} <= set(texts["text"]["columns"])
    if (warehouse / "metadata" / "charset_checks").is_dir():  # written by decoders that check round trips
        assert "charset" in texts


@pytest.mark.integration
def test_each_run_keeps_its_data_docs_and_the_outcome_round_trips(outcome, warehouse):
    assert outcome.data_docs == "quality/runs/real/data_docs/index.html"
    index = (warehouse / outcome.data_docs).read_text()
    assert "numbers" in index and "texts" in index
    assert (warehouse / "quality" / "gx" / "great_expectations.yml").exists()
    data = json.loads(json.dumps(outcome.to_json()))
    assert QualityOutcome.from_json(data) == outcome


# -- wrong copies ----------------------------------------------------------------


def one_table_run(warehouse: Path, table: str, target: Path) -> Path:
    """A run folder of one table of ``warehouse``: its changes, its table versions, the
    transaction index restricted to it."""
    shutil.copytree(table_folder(warehouse, "changes", DATABASE, table), table_folder(target, "changes", DATABASE, table))

    def ours(entry: dict) -> bool:
        return (entry["database"], entry["table"]) == (DATABASE, table)

    copy_metadata(warehouse, target, "table_schemas", lambda rows: [row for row in rows if ours(row)])
    copy_metadata(warehouse, target, "transactions", lambda rows: [
        {**row, "rows_per_table": [entry for entry in row["rows_per_table"] if ours(entry)]} for row in rows
    ])
    return target


def copy_metadata(warehouse: Path, target: Path, name: str, keep: Callable[[list[dict]], list[dict]]) -> None:
    """Copy the metadata table ``name``, each file's rows passed through ``keep``."""
    folder = target / "metadata" / name
    folder.mkdir(parents=True)
    for file in sorted((warehouse / "metadata" / name).glob("*.parquet")):
        data = pq.read_table(file)
        pq.write_table(pa.Table.from_pylist(keep(data.to_pylist()), schema=data.schema), folder / file.name)


def change_files(run: Path, table: str) -> list[Path]:
    return sorted(Path(table_folder(run, "changes", DATABASE, table)).rglob("*.parquet"))


def rewrite(run: Path, table: str, change: Callable[[pa.Table], pa.Table]) -> None:
    """Rewrite the table's (first) changes file with ``change`` applied."""
    file = change_files(run, table)[0]
    pq.write_table(change(pq.read_table(file)), file)


def with_value(data: pa.Table, column: str, pick: Callable[[object], bool], value: Callable[[object], object]) -> pa.Table:
    """``data`` with the first value of ``column`` that ``pick`` accepts replaced by ``value(it)``, same schema."""
    values = data[column].to_pylist()
    at = next(i for i, v in enumerate(values) if pick(v))
    values[at] = value(values[at])
    index = data.schema.get_field_index(column)
    return data.set_column(index, data.schema.field(index), pa.array(values, data.schema.field(index).type))


def rows_at(data: pa.Table, order: list[int]) -> pa.Table:
    return data.take(pa.array(order))


def negated_unsigned(run: Path) -> None:
    rewrite(run, "numbers", lambda d: with_value(d, "iu", lambda v: v is not None and v > 0, lambda v: -v))


def unsigned_bigint_2_64(run: Path) -> None:
    rewrite(run, "numbers", lambda d: with_value(d, "biu", lambda v: v is not None, lambda v: Decimal(2**64)))


def latin1_read_as_utf8(run: Path) -> None:
    rewrite(run, "texts", lambda d: with_value(
        d, "c_latin1", lambda v: v and not v.isascii(),
        lambda v: v.encode("latin1").decode("utf-8", errors="replace"),
    ))


def charset_mismatch(run: Path) -> None:
    folder = run / "metadata" / "charset_checks"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rows = [
        {"database": DATABASE, "table": "texts", "column": "c_cp1251", "charset": "cp1251", "checked": 7,
         "mismatches": 0, "example": None},
        {"database": DATABASE, "table": "texts", "column": "c_latin1", "charset": "latin1", "checked": 7,
         "mismatches": 1, "example": "636166e9"},
    ]
    pq.write_table(pa.Table.from_pylist(rows, schema=CHARSET_SCHEMA), folder / "part-0.parquet")


def duplicate_position(run: Path) -> None:
    rewrite(run, "temporal", lambda d: rows_at(d, [0, 0, *range(2, d.num_rows)]))


def out_of_order(run: Path) -> None:
    rewrite(run, "temporal", lambda d: rows_at(d, [1, 0, *range(2, d.num_rows)]))


def unknown_operation(run: Path) -> None:
    rewrite(run, "temporal", lambda d: with_value(d, "_op", lambda v: v == "u", lambda v: "x"))


def with_schema_changed(run: Path, table: str, change: Callable[[pa.Table], pa.Table]) -> None:
    """Every changes file of the table rewritten with ``change``, without the Spark schema the
    footer carries (it would win over the file's own schema when Spark reads it)."""
    for file in change_files(run, table):
        pq.write_table(change(pq.read_table(file)).replace_schema_metadata(None), file)


def dropped_column(run: Path) -> None:
    with_schema_changed(run, "bytes", lambda d: d.drop_columns(["vb"]))


def changed_type(run: Path) -> None:
    with_schema_changed(run, "numbers", lambda d: d.set_column(
        d.schema.get_field_index("i"), pa.field("i", pa.int64()), d["i"].cast(pa.int64()),
    ))


def row_missing(run: Path) -> None:
    rewrite(run, "temporal", lambda d: d.slice(1))


# (how the copy is made wrong, its table, the check that must fail, what its failure line names,
# what the table's page of the Data Docs shows: the column and the class of the bad values)
WRONG = {
    "unsigned value negated": (negated_unsigned, "numbers", "range",
                               ["column iu", "INT UNSIGNED", "[0, 4294967295]", "= -"],
                               ["iu", "INT UNSIGNED [0, 4294967295]", "-"]),
    "BIGINT UNSIGNED of 2^64": (unsigned_bigint_2_64, "numbers", "range", ["column biu", str(2**64)],
                                ["biu", "BIGINT UNSIGNED [0, 18446744073709551615]", str(2**64)]),
    "latin1 decoded as UTF-8": (latin1_read_as_utf8, "texts", "text", ["column c_latin1", "\ufffd"],
                                ["c_latin1", "valid UTF-8 without U+FFFD", "caf\ufffd"]),
    "charset round trip mismatch": (charset_mismatch, "texts", "charset", ["column c_latin1", "latin1", "636166e9"],
                                    ["c_latin1", "latin1", "636166e9"]),
    "duplicate position": (duplicate_position, "temporal", "unique_key", ["_row_index", "2 times"],
                           ["change key", "each change key once", "2 times"]),
    "rows out of order": (out_of_order, "temporal", "log_order", ["_binlog_pos", "out of log order", "row 0"],
                          ["change key", "after"]),
    "_op of x": (unknown_operation, "temporal", "operation", ["column _op", "'x'"], ["_op", "c/u/d/r", "'x'"]),
    "dropped column": (dropped_column, "bytes", "columns", ["missing ['vb']"], ["vb"]),
    "changed column type": (changed_type, "numbers", "type", ["column i: type int64", "says int32"],
                            ["int64", "int32"]),
    "row count off the transaction index": (row_missing, "temporal", "row_count", ["change rows", "logged"],
                                            ["21", "22"]),
}


def page_text(warehouse: Path, run_id: str, table: str) -> str:
    """The text of the table's validation page in the run's Data Docs, without markup."""
    [page] = (warehouse / "quality" / "runs" / run_id / "data_docs" / "validations").glob(f"*:{table}/**/*.html")
    text = re.sub(r"<script.*?</script>|<style.*?</style>", " ", page.read_text(), flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", text)))


@pytest.mark.integration
@pytest.mark.parametrize("case", list(WRONG))
def test_a_wrong_copy_fails_the_expectation_that_guards_it(spark, warehouse, tmp_path, case):
    make_wrong, table, check, named, shown = WRONG[case]
    run = one_table_run(warehouse, table, tmp_path / "run")
    make_wrong(run)
    result = validate(spark, run_folder=run, warehouse=tmp_path / "warehouse", run_id="wrong")
    assert not result.success
    [outcome] = result.tables
    assert (outcome.database, outcome.table, outcome.success) == (DATABASE, table, False)
    failed = [r for r in suite_results(tmp_path / "warehouse", "wrong") if not r["success"]]
    assert check in {r["expectation_config"]["meta"]["check"] for r in failed}
    line = next(line for line in outcome.failures if all(part in line for part in named))
    assert line, outcome.failures
    assert (tmp_path / "warehouse" / result.data_docs).exists()  # the failed run's report stays
    page = page_text(tmp_path / "warehouse", "wrong", table)
    assert all(part in page for part in shown), [part for part in shown if part not in page]
    assert (tmp_path / "warehouse" / "quality" / "static").is_dir()  # with the static files it loads


# -- shared fixtures -------------------------------------------------------------


def test_a_run_of_the_fixture_binlogs_passes(spark, fixtures_dir, tmp_path):
    root = tmp_path / "warehouse"
    for number, name in enumerate(FIXTURES):  # each another server's log: a source and a stream of its own
        source = tmp_path / f"source-{number}"
        source.mkdir()
        shutil.copyfile(fixtures_dir / name, source / Path(name).name)
        ingest(str(source), str(root), spark=spark, validation=False)
    result = validate(spark, run_folder=root, warehouse=root, run_id="fixtures")
    assert result.success, [t.failures for t in result.tables]
    assert {(t.table, t.rows) for t in result.tables} >= {("t1", 1)}
    assert all(t.expectations >= 7 for t in result.tables)
    compressed = [row for file in root.rglob("changes/**/*.parquet") for row in pq.read_table(file).to_pylist()
                  if row["_binlog_inner_offset"] is not None]
    assert compressed  # the change key with and without an inner offset
    assert (root / result.data_docs).exists()
    [shared] = (root / "quality" / "static").iterdir()  # the pages' static files, shared by the runs
    assert not (root / result.data_docs).parent.joinpath("static").exists()
    assert f"../../../static/{shared.name}/vendor/" in (root / result.data_docs).read_text()


# -- what the expectations are made of ----------------------------------------------


def test_integer_ranges_follow_the_sql_type_width():
    def column(sql_type: str, type_code: int, unsigned: bool | None) -> dict:
        return {"sql_type": sql_type, "type_code": type_code, "unsigned": unsigned}

    assert integer_range(column("BIGINT UNSIGNED", ColumnType.LONGLONG, True)) == IntegerRange(
        "BIGINT UNSIGNED", 0, 18446744073709551615)
    assert integer_range(column("MEDIUMINT", ColumnType.INT24, False)) == IntegerRange("MEDIUMINT", -8388608, 8388607)
    assert integer_range(column("BIT(9)", ColumnType.BIT, None)) == IntegerRange("BIT(9)", 0, 511)
    # signedness not logged: the decoder's signed reading and the unsigned range are both possible
    assert integer_range(column("TINYINT", ColumnType.TINY, None)) == IntegerRange("TINYINT", -128, 255)
    assert integer_range(column("YEAR", ColumnType.YEAR, None)) is None


def test_row_changes_no_expectation_checked_fail_the_run(spark, tmp_path):
    """A run folder with changes but no table version or transaction to check them against: the
    gate checked nothing, so it does not pass."""
    run_folder = tmp_path / "run"
    folder = run_folder / "changes" / "shop" / "orders" / "commit_date=2026-03-02"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"id": [1, 2, 3]}), folder / "part.parquet")
    result = validate(spark, run_folder=run_folder, warehouse=tmp_path / "warehouse", run_id="unchecked")
    assert not result.success
    assert [(t.database, t.table, t.rows, t.expectations) for t in result.tables] == [("shop", "orders", 3, 0)]
    assert result.tables[0].failures == ["3 row changes that no expectation checked: the run holds no table version "
                                         "or transaction of the table to check them against"]
    assert verdict(True, 0) == "nothing to check" and verdict(True, 5) == "passed" and verdict(False, 5) == "FAILED"


def test_a_validation_logs_what_a_user_can_act_on_not_great_expectations_internals(spark, tmp_path, caplog):
    run_folder = tmp_path / "run"
    folder = run_folder / "changes" / "shop" / "orders" / "commit_date=2026-03-02"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"id": [1]}), folder / "part.parquet")
    with caplog.at_level(logging.INFO):
        validate(spark, run_folder=run_folder, warehouse=tmp_path / "warehouse", run_id="quiet")
    noisy = [r.getMessage() for r in caplog.records if r.name.startswith("great_expectations") and r.levelno < logging.WARNING]
    assert noisy == []
    assert any(r.name == "spark_jobs.validate" and "quality FAILED" in r.getMessage() for r in caplog.records)
