"""The Assets ``binlog_ingest`` announces its tables on, and how Spark's JVM output is logged.

Without a running Airflow: :func:`airflow_tasks.ingest.announce_tables` is given a stand-in for
the publish task's ``outlet_events[alias]``, and :mod:`spark_jobs.session`'s reading of the
JVM's standard error is fed the lines a JVM prints. ``test_airflow_standalone`` shows both
in a real Airflow.
"""

from __future__ import annotations

import io
import logging

import pytest
from airflow.sdk import Asset

from airflow_tasks import ingest
from spark_jobs import session

PREPARED = {"run_id": "a3dcc660ff21bbff", "rows": {"shop.customers": 6, "shop.orders": 11, "shop.audit": 0}}


class Events:
    """Collects what a task adds to an asset alias's outlet events."""

    def __init__(self) -> None:
        self.added: list[tuple[Asset, dict]] = []

    def add(self, asset: Asset, extra: dict | None = None) -> None:
        self.added.append((asset, extra))


def test_a_table_asset_is_named_by_its_uri_under_the_warehouse_folder(tmp_path):
    asset = ingest.table_asset(tmp_path.as_uri(), "shop", "orders")
    assert asset.uri == asset.name == f"binlake://localhost{tmp_path}/shop/orders"
    assert Asset(asset.uri) == asset  # what a downstream DAG writes is the same Asset


def test_the_warehouse_given_as_a_path_or_a_file_uri_names_the_same_asset(tmp_path):
    assert ingest.table_asset_uri(str(tmp_path / "." / "x" / ".."), "shop", "orders") == \
        ingest.table_asset_uri(tmp_path.as_uri(), "shop", "orders")


def test_database_and_table_names_are_percent_encoded_as_the_last_two_segments(tmp_path):
    folder = tmp_path / "my warehouse"
    uri = ingest.table_asset_uri(folder, "web shop", "a/b?c#d")
    assert uri == f"binlake://localhost{str(folder).replace(' ', '%20')}/web%20shop/a%2Fb%3Fc%23d"
    assert Asset(uri).uri == uri  # nothing Airflow would normalise away


def test_a_warehouse_in_an_object_store_names_its_assets_by_bucket_and_prefix(tmp_path, monkeypatch):
    from warehouse import storage

    monkeypatch.delenv("AIRFLOW_CONN_BINLAKE_S3", raising=False)
    monkeypatch.setenv(storage.STATE_ENV, str(tmp_path))
    uri = ingest.table_asset_uri("s3://lake/some prefix", "shop", "orders")
    assert uri == "binlake://lake/some%20prefix/shop/orders" and Asset(uri).uri == uri
    state = storage.state_folder("s3://lake/some prefix")  # a later task is handed the state folder
    assert ingest.table_asset_uri(state, "shop", "orders") == uri


def test_a_run_announces_each_table_it_published_rows_of(tmp_path):
    events = Events()
    uris = ingest.announce_tables(events, tmp_path, PREPARED)
    assert uris == [ingest.table_asset_uri(tmp_path, "shop", t) for t in ("customers", "orders")]
    assert [extra for _, extra in events.added] == [
        {"database": "shop", "table": table, "rows": rows, "run_id": PREPARED["run_id"], "warehouse": str(tmp_path)}
        for table, rows in (("customers", 6), ("orders", 11))
    ]


@pytest.mark.parametrize("prepared", [None, {"run_id": "", "rows": {}}, {"run_id": "r", "rows": {"shop.t": 0}}])
def test_a_run_that_published_nothing_announces_nothing(tmp_path, prepared):
    events = Events()
    assert ingest.announce_tables(events, tmp_path, prepared) == [] and events.added == []


def test_the_lines_of_a_downstream_run_name_table_rows_and_run(tmp_path):
    events = Events()
    ingest.announce_tables(events, tmp_path, PREPARED)

    class Event:  # what triggering_asset_events holds: the asset and the event's extra
        def __init__(self, asset, extra):
            self.asset, self.extra = asset, extra

    lines = ingest.table_event_lines([Event(*added) for added in events.added])
    assert lines[1] == (f"shop.orders: 11 row changes published by run {PREPARED['run_id']} into {tmp_path} "
                        f"(binlake://localhost{tmp_path}/shop/orders)")


JVM_OUTPUT = b"""\
WARNING: Using incubator modules: jdk.incubator.vector
WARN TaskSetManager: Lost task 0.0 in stage 1.0: java.io.IOException: disk full
\tat org.apache.spark.SomeClass.method(SomeClass.scala:1)
ERROR Executor: Exception in task 0.0
INFO SparkContext: Running Spark version 4.3.0
"""


def test_the_jvm_output_is_logged_at_the_level_log4j_gave_it(caplog):
    with caplog.at_level(logging.DEBUG, logger=session.jvm_log.name):
        session.log_jvm_output(io.BytesIO(JVM_OUTPUT))
    assert [r.getMessage() for r in caplog.records] == JVM_OUTPUT.decode().splitlines()
    assert [r.levelno for r in caplog.records] == [
        logging.DEBUG,  # the java launcher's notice on every start
        logging.WARNING,
        logging.WARNING,  # a stack trace keeps its record's level
        logging.ERROR,
        logging.INFO,
    ]


def test_sessions_start_their_jvm_with_binlake_log4j_configuration():
    options = session.with_log_config("-Xmx1g")
    assert options.startswith("-Xmx1g -Dlog4j2.configurationFile=")
    config = session.log4j2_config()
    assert str(config) in options and config.read_text() == session.LOG4J2_PROPERTIES
    assert session.with_log_config("-Dlog4j2.configurationFile=/mine.xml") == "-Dlog4j2.configurationFile=/mine.xml"
