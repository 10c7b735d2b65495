"""A warehouse in an object store: the MariaDB oracle workload ingested into ``s3://``.

The binlogs of :mod:`mariadb_workload` (every type, seven charsets, FULL, MINIMAL
and NOBLOB images, key changes, deletes, a schema change) are ingested with
validation on into ``s3://<bucket>/lake`` on a private S3 server (moto over HTTP),
the catalog a SQLite file in the warehouse's state folder, and into a local
folder. ``current`` read through pyiceberg and through DuckDB's Iceberg reader
must equal ``SELECT *`` on the server, and both warehouses must hold the same
tables. A missing bucket or an endpoint that does not answer stops the run
before anything is written, naming the warehouse.
"""

from __future__ import annotations

import os
import shutil
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mariadb_workload import EVOLVED_TABLES, assert_current_equals_server, switching_statements, warehouse_rows
from s3_server import ACCESS_KEY, REGION, SECRET_KEY
from spark_jobs.ingest import ingest
from warehouse import catalog, maintenance, publish, storage

pytestmark = pytest.mark.integration

DATABASE = "ingest_s3"
ROW_IMAGES = ("MINIMAL", "NOBLOB", "FULL")


@pytest.fixture(scope="module")
def source(mariadb, tmp_path_factory) -> Path:
    """A folder with the binlog files of the workload."""
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


@pytest.fixture(scope="module")
def s3_settings(s3_server, tmp_path_factory):
    """The server's settings in the standard environment variables, and a state folder, for the module."""
    variables = {"AWS_ENDPOINT_URL": s3_server.endpoint_url, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                 "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION,
                 storage.STATE_ENV: str(tmp_path_factory.mktemp("state"))}
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    yield variables
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="module")
def s3_warehouse(spark, source, s3_server, s3_settings) -> tuple[str, Path]:
    """The workload ingested into ``s3://<bucket>/lake``, validation on: its URI and state folder."""
    uri = f"s3://{s3_server.create_bucket('lake')}/lake"
    result = ingest(str(source), uri, spark=spark, target_bytes=64 << 10)
    assert result.run_id and sum(result.rows.values()) > 0 and result.quality["success"]
    return uri, storage.state_folder(uri)


@pytest.fixture(scope="module")
def local_warehouse(spark, source, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("warehouse")
    ingest(str(source), str(root), spark=spark, target_bytes=64 << 10)
    return root


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


def test_the_s3_and_the_local_warehouse_hold_the_same_tables(s3_warehouse, local_warehouse):
    _, root = s3_warehouse
    for table in EVOLVED_TABLES:
        for area in ("current", "changes"):
            ours = warehouse_rows(root, area, DATABASE, table.name)
            local = warehouse_rows(local_warehouse, area, DATABASE, table.name)
            assert len(ours) == len(local) > 0, (table.name, area)
            assert _sorted_text(ours) == _sorted_text(local), (table.name, area)


def test_a_second_run_finds_nothing_new(spark, source, s3_warehouse):
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
