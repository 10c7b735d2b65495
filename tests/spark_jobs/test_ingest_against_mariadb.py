"""``python -m spark_jobs.ingest`` end to end: a real MariaDB server is the oracle.

The workload of :mod:`mariadb_workload` (every MariaDB column type, seven
charsets, extremes, NULLs, zero dates, key changes, updates of a few columns,
deletes) runs with binlog_row_image switched mid-stream, MINIMAL, then NOBLOB,
then FULL, each part in a binlog file of its own, and ends with a schema change
(a widened column and a new one) and changes that use it. The warehouse's ``current``
of every table must equal ``SELECT`` on the server value for value, and
``changes`` must hold exactly one row per row change, in log order, each with
the whole after-image.

The same binlogs are ingested, validation on, into ``s3://<bucket>/lake`` on a
private S3 server (moto over HTTP; the catalog a SQLite file in the warehouse's
state folder): ``current`` read through pyiceberg and through DuckDB's Iceberg
reader must equal ``SELECT *`` on the server, both warehouses must hold the same
tables, and maintenance there removes what no snapshot names. A missing bucket
or an endpoint that does not answer stops the run before anything is written,
naming the warehouse.
"""

from __future__ import annotations

import re
import shutil
from datetime import timedelta
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
from warehouse import catalog, maintenance, publish, storage

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


# -- the same workload into a warehouse in an object store -------------------------------------


@pytest.fixture(scope="module")
def s3_settings(s3_server, tmp_path_factory):
    """The server's settings in the standard environment variables, and a state folder, for the module."""
    variables = {**s3_server.settings(), storage.STATE_ENV: str(tmp_path_factory.mktemp("state"))}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in variables.items():
            patch.setenv(name, value)
        yield variables


@pytest.fixture(scope="module")
def s3_warehouse(spark, source, s3_server, s3_settings) -> tuple[str, Path]:
    """The workload ingested into ``s3://<bucket>/lake``, validation on: its URI and state folder."""
    uri = f"s3://{s3_server.create_bucket('lake')}/lake"
    result = ingest(str(source), uri, spark=spark, target_bytes=64 << 10)
    assert result.run_id and sum(result.rows.values()) > 0 and result.quality["success"]
    return uri, storage.state_folder(uri)


def test_current_in_s3_read_through_pyiceberg_equals_select(mariadb, s3_warehouse):
    assert_current_equals_server(mariadb, s3_warehouse[1], DATABASE, EVOLVED_TABLES)


def test_duckdb_reads_the_s3_tables_as_pyiceberg_does(s3_warehouse):
    _, root = s3_warehouse
    connection = catalog.duckdb_connection(root)
    for table in EVOLVED_TABLES:
        location = catalog.metadata_location(root, catalog.current_table(DATABASE, table.name))
        assert location.startswith("s3://")
        ours = connection.sql(f"SELECT * FROM iceberg_scan('{location}')").arrow().read_all()
        theirs = catalog.read(root, catalog.current_table(DATABASE, table.name))
        assert ours.num_rows == theirs.num_rows > 0, table.name
        ours, theirs = (sorted(rows.to_pylist(maps_as_pydicts="strict"), key=lambda row: str(row["id"]))
                        for rows in (ours, theirs))
        for mine, expected in zip(ours, theirs):
            for name in expected:
                assert mine[name] == expected[name], (table.name, name, mine[name], expected[name])


def test_the_tables_files_are_objects_under_the_prefix_and_the_state_folder_holds_none(s3_server, s3_warehouse):
    uri, root = s3_warehouse
    bucket = uri.split("/")[2]
    objects = {item["Key"] for page in s3_server.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
               for item in page.get("Contents", [])}
    for table in EVOLVED_TABLES:
        for name in (catalog.current_table(DATABASE, table.name), catalog.changes_table(DATABASE, table.name)):
            files = catalog.data_files(root, name)
            assert files and all(path.startswith(f"{uri}/") for path in files), name
            assert {path.split("/", 3)[3] for path in files} <= objects, name
    assert any(key.startswith("lake/_iceberg/") and key.endswith(".metadata.json") for key in objects)
    assert not list(root.rglob("*.parquet")), "table files left in the state folder"
    assert publish.read_checkpoint(root), "the checkpoint is in the state folder"


def test_the_s3_and_the_local_warehouse_hold_the_same_tables(s3_warehouse, warehouse):
    _, root = s3_warehouse
    for table in EVOLVED_TABLES:
        for area in ("current", "changes"):
            ours = warehouse_rows(root, area, DATABASE, table.name)
            local = warehouse_rows(warehouse, area, DATABASE, table.name)
            assert len(ours) == len(local) > 0, (table.name, area)
            assert _sorted_text(ours) == _sorted_text(local), (table.name, area)


def test_a_second_run_into_s3_finds_nothing_new(spark, source, s3_warehouse):
    uri, root = s3_warehouse
    checkpoint = publish.read_checkpoint(root)
    assert ingest(str(source), uri, spark=spark).run_id == ""
    assert publish.read_checkpoint(root) == checkpoint


def test_a_missing_bucket_stops_the_run_naming_the_warehouse(spark, source, s3_settings):
    uri = "s3://no-such-bucket-here/lake"
    with pytest.raises(storage.StorageUnavailable, match="s3://no-such-bucket-here/lake.*bucket no-such-bucket-here "
                                                         "does not exist.*nothing was published"):
        ingest(str(source), uri, spark=spark)
    assert publish.read_checkpoint(storage.state_folder(uri)) == {}


def test_an_endpoint_that_does_not_answer_stops_the_run_in_seconds(spark, source, s3_settings, monkeypatch):
    from mariadb import free_port

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    uri = "s3://lake/unreachable"
    with pytest.raises(storage.StorageUnavailable, match="s3://lake/unreachable at http://127.0.0.1:.*cannot be read"):
        ingest(str(source), uri, spark=spark)
    assert publish.read_checkpoint(storage.state_folder(uri)) == {}


def test_maintenance_removes_an_orphan_object_and_keeps_every_table(mariadb, s3_server, s3_warehouse):
    uri, root = s3_warehouse
    bucket, prefix = uri.split("/", 3)[2:]
    table = EVOLVED_TABLES[0].name
    orphan = f"{prefix}/current/{DATABASE}/{table}/dead-00000.parquet"
    buffer = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [1]}), buffer)
    s3_server.client().put_object(Bucket=bucket, Key=orphan, Body=buffer.getvalue().to_pybytes())
    referenced = {path for each in EVOLVED_TABLES for path in catalog.data_files(root, catalog.current_table(
        DATABASE, each.name))}
    removed = maintenance.remove_orphan_files(root, older_than=timedelta(0))
    assert removed[f"{DATABASE}.{table}"].paths == [f"s3://{bucket}/{orphan}"]
    assert not set().union(*(each.paths for each in removed.values())) & referenced
    assert "Contents" not in s3_server.client().list_objects_v2(Bucket=bucket, Prefix=orphan)
    assert maintenance.remove_orphan_files(root, older_than=timedelta(0))[f"{DATABASE}.{table}"].files == 0
    assert_current_equals_server(mariadb, root, DATABASE, EVOLVED_TABLES)


def _sorted_text(rows: list[dict]) -> list[str]:
    return sorted(str(sorted(row.items())) for row in rows)