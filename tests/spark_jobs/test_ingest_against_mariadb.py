"""``python -m spark_jobs.ingest`` end to end: a real MariaDB server is the oracle.

The workload of :mod:`mariadb_workload` (every MariaDB column type, seven
charsets, extremes, NULLs, zero dates, key changes, updates of a few columns,
deletes) runs with binlog_row_image switched mid-stream, MINIMAL, then NOBLOB,
then FULL, each part in a binlog file of its own, and ends with a schema change
(a widened column and a new one) and changes that use it. The warehouse's ``current``
of every table must equal ``SELECT`` on the server value for value, and
``changes`` must hold exactly one row per row change, in log order, each with
the whole after-image.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mariadb_workload import (
    EVOLVED_TABLES,
    TEXT,
    assert_current_equals_server,
    evolution_operations,
    operations,
    switching_statements,
    warehouse_rows,
)
from spark_jobs.ingest import ingest
from warehouse import catalog, publish

pytestmark = pytest.mark.integration

DATABASE = "ingest_e2e"
ROW_IMAGES = ("MINIMAL", "NOBLOB", "FULL")


@pytest.fixture(scope="module")
def source(mariadb, tmp_path_factory) -> Path:
    """A folder with the binlog files of the workload, as object storage would hold them."""
    mariadb.sql("SET GLOBAL binlog_row_metadata = FULL")
    mariadb.flush_logs()
    first = mariadb.current_binlog()
    mariadb.sql(switching_statements(DATABASE, ROW_IMAGES, evolve=True))
    mariadb.flush_logs()
    folder = tmp_path_factory.mktemp("source")
    for binlog in mariadb.binlog_files():
        if first <= binlog < mariadb.current_binlog():
            shutil.copyfile(binlog, folder / binlog.name)
    return folder


def table_rows(warehouse: Path, area: str, table: str) -> list[dict]:
    return warehouse_rows(warehouse, area, DATABASE, table)


@pytest.fixture(scope="module")
def warehouse(spark, source, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("warehouse")
    result = ingest(str(source), str(root), spark=spark, target_bytes=64 << 10, validation=False)
    assert result.run_id and sum(result.rows.values()) > 0
    return root


def test_current_equals_select(mariadb, warehouse):
    assert_current_equals_server(mariadb, warehouse, DATABASE, EVOLVED_TABLES)


def test_every_latin1_and_cp1251_value_round_trips_to_its_logged_bytes(warehouse):
    checks = pa.concat_tables(
        pq.read_table(f) for f in sorted((warehouse / "metadata" / "charset_checks").glob("*.parquet"))
    ).to_pylist()
    by_column = {(c["table"], c["column"]): c for c in checks}
    wanted = {
        (table.name, column.name)
        for table in EVOLVED_TABLES for column in table.columns
        if column.kind == TEXT and re.search(r"CHARSET (latin1|cp1251)", column.ddl)
    }
    assert wanted and set(wanted) <= set(by_column)
    assert all(check["checked"] > 0 and check["mismatches"] == 0 and check["example"] is None for check in checks)
    assert {c["charset"] for c in checks} >= {"latin1", "cp1251"}


def test_changes_hold_one_row_per_row_change_in_log_order(warehouse):
    ops = operations() + evolution_operations()
    for table in EVOLVED_TABLES:
        changes = table_rows(warehouse, "changes", table.name)
        order = [(c["_binlog_seq"], c["_binlog_pos"], c["_binlog_inner_offset"] or 0, c["_row_index"]) for c in changes]
        changes = [c for _, c in sorted(zip(order, changes), key=lambda pair: pair[0])]
        mine = [op for op in ops if op.table.name == table.name]
        assert [c["_op"] for c in changes] == [{"insert": "c", "update": "u", "delete": "d"}[op.kind] for op in mine]
        assert len(set(order)) == len(order)
        for change, op in zip(changes, mine):
            if op.kind != "delete":
                assert change["id"] == int(op.values.get("id", op.id))
            # MINIMAL inserts that left columns to their DEFAULT are the only incomplete images
            given = set(op.values) | {"id"}
            incomplete = set(change["_incomplete_columns"] or [])
            assert incomplete <= {c.name for c in table.columns} - given or op.kind != "insert"


def test_a_second_run_finds_nothing_new_and_changes_nothing(spark, source, warehouse):
    before = {p: p.read_bytes() for p in sorted(warehouse.rglob("*.parquet"))}
    assert ingest(str(source), str(warehouse), spark=spark, validation=False).run_id == ""
    assert {p: p.read_bytes() for p in sorted(warehouse.rglob("*.parquet"))} == before


def test_two_runs_split_at_a_file_boundary_give_the_same_tables(spark, source, warehouse, tmp_path):
    files = sorted(source.iterdir())
    partial_source, root = tmp_path / "source", tmp_path / "warehouse"
    partial_source.mkdir()
    for binlog in files[:2]:
        shutil.copyfile(binlog, partial_source / binlog.name)
    assert ingest(str(partial_source), str(root), spark=spark, validation=False).run_id
    for binlog in files[2:]:
        shutil.copyfile(binlog, partial_source / binlog.name)
    assert ingest(str(partial_source), str(root), spark=spark, validation=False).run_id
    for table in EVOLVED_TABLES:
        for area in ("current", "changes"):
            key = (lambda r: (r["_binlog_seq"], r["_binlog_pos"], r["_row_index"]))
            ours = sorted(table_rows(root, area, table.name), key=key)
            once = sorted(table_rows(warehouse, area, table.name), key=key)
            assert ours == once, (table.name, area)
    # one row per table version, whichever run saw it first or last (the runs' ordinals aside)
    tables = [catalog.read(each, catalog.identifier("table_schemas")).to_pylist() for each in (root, warehouse)]
    versions = [[{k: v for k, v in row.items() if k not in ("first_run", "last_run")} for row in rows] for rows in tables]
    assert versions[0] == versions[1] and len({v["schema_id"] for v in versions[0]}) == len(versions[0])
    runs = tables[0]
    assert {(row["first_run"], row["last_run"]) for row in runs} <= {(0, 0), (0, 1), (1, 1)}
    assert publish.read_checkpoint(root)[str(partial_source.resolve())]["file"] == files[-1].name
