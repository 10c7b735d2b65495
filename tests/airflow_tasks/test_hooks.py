"""airflow_tasks.hooks: Spark memory settings from the Airflow connection ``binlake_spark``; object stores built from the Airflow connection ``binlake_s3`` (defined in
the environment, JSON form) against a real moto server, the fallback to boto3's own
settings without it, and folders that need no connection."""

from __future__ import annotations

import json
import re

import pytest

from airflow_tasks.hooks import spark_settings, store_for
from stage.object_store import FolderStore, S3Store

UNREACHABLE = "http://127.0.0.1:9"  # the discard port: nothing answers there


@pytest.fixture
def bucket(s3_server, request) -> str:
    name = s3_server.create_bucket(request.node.name)
    s3_server.client().put_object(Bucket=name, Key="binlogs/mysql-bin.000001", Body=b"\xfebin")
    return name


def signing_keys(store: S3Store) -> list[str]:
    """The access key ids the store's requests will be signed with (read off each request)."""
    keys: list[str] = []

    def record(request, **_) -> None:
        keys.append(re.search(r"Credential=([^/]+)/", request.headers["Authorization"].decode()).group(1))

    store.client.meta.events.register("before-send.s3", record)
    return keys


def connection_json(endpoint_url: str, login: str = "conn-key", password: str = "conn-secret") -> str:
    return json.dumps(
        {
            "conn_type": "aws",
            "login": login,
            "password": password,
            "extra": {"endpoint_url": endpoint_url, "region_name": "eu-west-1"},
        }
    )


def test_an_s3_store_takes_endpoint_keys_and_region_from_the_connection(s3_server, bucket, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_BINLAKE_S3", connection_json(s3_server.endpoint_url))
    monkeypatch.setenv("AWS_ENDPOINT_URL", UNREACHABLE)  # the connection wins over the environment

    store = store_for(f"s3://{bucket}/binlogs")
    keys = signing_keys(store)

    assert isinstance(store, S3Store)
    assert [obj.name for obj in store.list()] == ["mysql-bin.000001"]
    assert keys == ["conn-key"]
    assert store.client.meta.region_name == "eu-west-1"


def test_another_connection_id_is_honoured(s3_server, bucket, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_BINLAKE_S3", connection_json(UNREACHABLE))
    monkeypatch.setenv("AIRFLOW_CONN_ARCHIVE_S3", connection_json(s3_server.endpoint_url, login="archive-key"))

    store = store_for(f"s3://{bucket}/binlogs", conn_id="archive_s3")
    keys = signing_keys(store)

    assert [obj.name for obj in store.list()] == ["mysql-bin.000001"]
    assert keys == ["archive-key"]


def test_without_the_connection_boto3_settings_come_from_the_environment(s3_server, bucket, monkeypatch):
    monkeypatch.delenv("AIRFLOW_CONN_BINLAKE_S3", raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint_url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "environment-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "environment-secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")

    store = store_for(f"s3://{bucket}/binlogs")
    keys = signing_keys(store)

    assert [obj.name for obj in store.list()] == ["mysql-bin.000001"]
    assert keys == ["environment-key"]


def test_a_folder_needs_no_connection(tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW_CONN_BINLAKE_S3", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    (tmp_path / "mysql-bin.000001").write_bytes(b"\xfebin")

    for uri in (tmp_path.as_uri(), str(tmp_path)):
        store = store_for(uri)
        assert isinstance(store, FolderStore)
        assert [obj.name for obj in store.list()] == ["mysql-bin.000001"]


def test_spark_memory_comes_from_the_binlake_spark_connection(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_BINLAKE_SPARK", json.dumps(
        {"conn_type": "generic", "extra": {"driver_memory": "8g", "executor_memory": "3g", "other": "x"}}))
    assert spark_settings() == {"spark.driver.memory": "8g", "spark.executor.memory": "3g"}
    monkeypatch.setenv("AIRFLOW_CONN_BINLAKE_SPARK", json.dumps({"conn_type": "generic", "extra": {}}))
    assert spark_settings() == {}
    monkeypatch.delenv("AIRFLOW_CONN_BINLAKE_SPARK")
    assert spark_settings() == {}  # no connection: the session's defaults, from the machine


def test_a_warehouse_in_s3_takes_its_settings_from_the_connection(s3_server, monkeypatch, tmp_path):
    from airflow_tasks.settings import warehouse_root
    from warehouse import storage

    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        monkeypatch.setenv(name, "from-the-environment")  # the connection wins; restored after the test
    monkeypatch.setenv("AIRFLOW_CONN_BINLAKE_S3", connection_json(s3_server.endpoint_url))
    monkeypatch.setenv(storage.STATE_ENV, str(tmp_path))
    bucket = s3_server.create_bucket("warehouse-connection")

    root = warehouse_root(f"s3://{bucket}/lake")
    assert root == tmp_path / "s3" / bucket / "lake" and storage.of(root).uri == f"s3://{bucket}/lake"
    assert storage.s3_settings() == {"endpoint": s3_server.endpoint_url, "access_key": "conn-key",
                                     "secret_key": "conn-secret", "session_token": None, "region": "eu-west-1"}
    storage.of(root).check()  # the bucket answers with those settings
    monkeypatch.setenv("AWS_ENDPOINT_URL", UNREACHABLE)
    assert warehouse_root(str(root)) == root  # a task given the state folder gets the settings again
    assert storage.s3_settings()["endpoint"] == s3_server.endpoint_url
