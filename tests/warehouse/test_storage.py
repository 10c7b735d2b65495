"""Where a warehouse keeps its files: locations, state folders, and an object store reached over HTTP."""

from __future__ import annotations

import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import fs as pafs

from warehouse import catalog, storage


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    for name, value in s3_server.settings().items():
        monkeypatch.setenv(name, value)
    return s3_server


def test_a_location_is_the_warehouse_uri_and_the_relative_path_and_back(tmp_path):
    remote, local = storage.Storage("s3://lake/some/prefix"), storage.Storage(str(tmp_path))
    assert remote.location("current/d/t/r-00000.parquet") == "s3://lake/some/prefix/current/d/t/r-00000.parquet"
    assert local.location("a/b") == f"{tmp_path}/a/b"
    assert remote.relative("s3://lake/some/prefix/a/b") == "a/b"
    assert remote.relative("s3://lake/some/prefixed/a") is None
    assert not remote.is_local and local.is_local


def test_a_location_is_opened_as_it_is_never_percent_decoded(tmp_path):
    filesystem, path = storage.open_file("s3://lake/changes/my%20db/t%2E1/x.parquet")
    assert isinstance(filesystem, pafs.S3FileSystem) and path == "lake/changes/my%20db/t%2E1/x.parquet"
    assert storage.open_file("s3a://lake/k")[1] == "lake/k"
    assert storage.open_file(f"file://{tmp_path}/a%2Eb")[1] == f"{tmp_path}/a%2Eb"
    assert isinstance(storage.open_file("relative/x")[0], pafs.LocalFileSystem)
    with pytest.raises(ValueError, match="expected a local path, file:// or s3://"):
        storage.open_file("gs://bucket/key")


def test_a_local_warehouse_is_its_own_state_folder_and_an_s3_one_has_one_per_prefix(tmp_path, monkeypatch):
    assert storage.state_folder(str(tmp_path)) == tmp_path
    assert storage.state_folder(tmp_path.as_uri()) == tmp_path
    monkeypatch.setenv(storage.STATE_ENV, str(tmp_path / "states"))
    assert storage.state_folder("s3://lake/a/b/") == tmp_path / "states" / "s3" / "lake" / "a" / "b"
    assert storage.state_folder("s3://lake/a", state=tmp_path / "mine") == tmp_path / "mine"
    with pytest.raises(ValueError, match="must be s3://bucket/prefix, a file:// URI or a folder"):
        storage.state_folder("hdfs://namenode/lake")


def test_a_state_folder_keeps_its_warehouse_and_refuses_another(tmp_path):
    root = storage.attach("s3://lake/a/", state=tmp_path)
    assert root == tmp_path and storage.of(root) == storage.Storage("s3://lake/a")
    assert storage.attach("s3a://lake/a", state=tmp_path) == tmp_path  # the same warehouse by Hadoop's name
    with pytest.raises(ValueError, match="belongs to the warehouse s3://lake/a, not s3://lake/b"):
        storage.attach("s3://lake/b", state=tmp_path)
    assert storage.of(tmp_path / "elsewhere") == storage.Storage(str(tmp_path / "elsewhere"))


def test_files_put_into_an_object_store_are_read_back_and_listed(s3_env, tmp_path):
    bucket = s3_env.create_bucket("storage")
    warehouse = storage.Storage(f"s3://{bucket}/lake")
    warehouse.check()
    source = tmp_path / "r-00000.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), source)
    source_size = source.stat().st_size
    warehouse.put(source, "current/my%20db/t/r-00000.parquet")
    assert not source.exists()
    location = warehouse.location("current/my%20db/t/r-00000.parquet")
    assert storage.read_parquet(location).column("a").to_pylist() == [1, 2]
    [found] = warehouse.files("current")
    assert found.location == location and found.size == source_size and found.mtime > 0
    warehouse.delete(location)
    assert warehouse.files("current") == []


def test_a_file_read_whole_from_an_object_store_is_copied_once_and_leaves_no_copy_behind(s3_env, tmp_path,
                                                                                          monkeypatch):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    location = f"s3://{s3_env.create_bucket('whole')}/lake/current/d/t/r-00000.parquet"
    rows = pa.table({"a": list(range(50_000)), "b": [str(n) for n in range(50_000)]})
    storage.write_parquet(rows, location, row_group_size=1_000)
    opened = storage.parquet_file(location, whole=True)
    assert opened.metadata.num_row_groups == 50 and list(scratch.iterdir()) == []  # the copy has no name left
    assert pa.Table.from_batches(opened.iter_batches(columns=["b"])).column("b") == rows.column("b")
    assert storage.parquet_file(location).read().equals(rows)  # in place, a request per row group


def test_a_missing_bucket_and_an_endpoint_that_does_not_answer_are_named(s3_env, monkeypatch):
    from mariadb import free_port

    with pytest.raises(storage.StorageUnavailable, match="s3://absent/lake: the bucket absent does not exist at http"):
        storage.Storage("s3://absent/lake").check()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(storage.StorageUnavailable, match=r"s3://lake/x at http://127\.0\.0\.1:\d+ cannot be read"):
        storage.Storage("s3://lake/x").check()


def test_duckdb_gets_the_s3_settings_quoted(monkeypatch):
    settings = {"endpoint": "http://127.0.0.1:9000", "access_key": "it's", "secret_key": "s", "session_token": None,
                "region": "eu-west-1"}
    statement = catalog._duckdb_secret(settings)
    assert "KEY_ID 'it''s'" in statement and "ENDPOINT '127.0.0.1:9000'" in statement
    assert "USE_SSL false" in statement and "URL_STYLE 'path'" in statement and "REGION 'eu-west-1'" in statement
