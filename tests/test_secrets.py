"""Credentials never leak: a run with an S3 secret key planted in the Airflow connection writes it
nowhere, neither in its logs nor in the warehouse (Parquet data and metadata, Data Docs, run
records, checkpoint) nor in the staging folder."""

from __future__ import annotations

import json
import logging
import secrets
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from airflow_tasks import ingest
from mariadb import REPO_ROOT
from s3_server import ACCESS_KEY

SAMPLES = sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*"))


def files_holding(folder: Path, secret: bytes) -> list[str]:
    """The files under ``folder`` whose bytes hold ``secret``."""
    return [str(path) for path in sorted(folder.rglob("*")) if path.is_file() and secret in path.read_bytes()]


def parquet_texts(folder: Path) -> list[str]:
    """Every Parquet file's key-value metadata, schema and rows, as text."""
    texts = []
    for path in sorted(folder.rglob("*.parquet")):
        parquet = pq.ParquetFile(path)
        texts.append(repr(parquet.metadata.metadata) + parquet.schema_arrow.to_string())
        texts.append(json.dumps(parquet.read().to_pylist(), default=str))
    return texts


@pytest.fixture
def run_log(tmp_path):
    """Every log record of the test, at INFO and above, into a file: what a log handler of the
    user's would write (Airflow may have put its own handlers on the root logger before)."""
    path = tmp_path / "logs" / "handler.log"
    path.parent.mkdir()
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s %(args)s"))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield path
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        handler.close()


def test_a_planted_secret_key_is_written_nowhere(s3_server, tmp_path, monkeypatch, capfd, run_log):
    """The run's logs: what it prints (Airflow's log handler writes to stdout, Spark to stderr) and
    what a log handler receives."""
    secret = f"planted-{secrets.token_hex(16)}"
    bucket = s3_server.create_bucket("secrets")
    for sample in SAMPLES:
        s3_server.client().upload_file(str(sample), bucket, f"binlogs/{sample.name}")
    source, warehouse = f"s3://{bucket}/binlogs", tmp_path / "warehouse"
    connection = {"conn_type": "aws", "login": ACCESS_KEY, "password": secret,
                  "extra": {"endpoint_url": s3_server.endpoint_url, "region_name": "us-east-1"}}
    monkeypatch.setenv("AIRFLOW_CONN_BINLAKE_S3", json.dumps(connection))
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "airflow"))
    monkeypatch.setenv("BINLAKE_STAGING_DIR", str(tmp_path / "staging"))
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    store = ingest.open_source(source)
    assert store.client._request_signer._credentials.secret_key == secret  # the run signs with the planted key

    found = ingest.discover(source, warehouse)
    staged = ingest.stage_source(source, warehouse)
    prepared = ingest.decode_and_materialize(source, warehouse, "local[1]")
    quality = ingest.validate(warehouse, prepared["run_id"], "local[1]")
    ingest.publish_run(warehouse, prepared["run_id"])
    ingest.report(source, warehouse, prepared, quality)
    output = capfd.readouterr()
    logs = tmp_path / "logs" / "run.log"
    logs.write_text(output.out + output.err + run_log.read_text(encoding="utf-8"))

    assert len(found["pending"]) == len(SAMPLES) and staged["files"] == [s.name for s in SAMPLES]
    assert quality["success"] and (warehouse / quality["data_docs"]).exists()
    text = logs.read_text()
    assert "S3 settings from the Airflow connection binlake_s3" in text and f"run {prepared['run_id']}" in text
    assert files_holding(tmp_path, secret.encode()) == []
    assert [text for text in parquet_texts(warehouse) if secret in text] == []
