"""plugins.binlake_view: the page and the Data Docs files, through FastAPI's TestClient.

The warehouse is built by hand (checkpoint, run records, a Data Docs page) so
that every state the page shows is present at once: a source behind and one
that cannot be listed; runs that passed, failed and were not validated.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

from plugins.binlake_view import BinlakeViewPlugin, create_app
from plugins.object_store import open_store
from spark_jobs.publish import CHECKPOINT

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*"))
FINISHED = datetime(2026, 3, 2, 9, 30, tzinfo=timezone.utc)
DOCS = "quality/runs/run-passed/data_docs/index.html"


class Tables(HTMLParser):
    """The text of every cell of every ``<table id=...>``, and every link, of a page."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.links: dict[str, str] = {}
        self._table = self._href = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("id"), [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th") and self._table is not None:
            self._table[-1].append("")
        elif tag == "a":
            self._href = attrs["href"]

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._table is not None and self._table and self._table[-1]:
            self._table[-1][-1] += data
        if self._href is not None:
            self.links[data] = self._href
            self._href = None

    def rows(self, table: str) -> list[dict[str, str]]:
        """The rows of ``table`` as header → cell text."""
        header, *body = self.tables[table]
        return [dict(zip(header, (" ".join(cell.split()) for cell in row))) for row in body]


@pytest.fixture
def warehouse(tmp_path) -> Path:
    """Two sources (one a folder two files ahead of its checkpoint, one gone) and three runs."""
    source = tmp_path / "binlogs"
    source.mkdir()
    for sample in SAMPLES:
        shutil.copyfile(sample, source / sample.name)
    (source / "mariadb-bin.000003").write_bytes(b"\xfebin" + b"\0" * 996)
    root = tmp_path / "warehouse"
    write_json(root / CHECKPOINT, {
        source.as_uri(): {"file": "mariadb-bin.000002", "position": 2000},
        str(tmp_path / "gone"): {"file": "mysql-bin.000007", "position": 4567},
    })
    write_run(root, "run-passed", FINISHED, {"success": True, "data_docs": DOCS, "tables": [
        {"database": "shop", "table": "orders", "failures": []}]})
    write_run(root, "run-failed", FINISHED - timedelta(hours=1), {"success": False, "tables": [
        {"database": "shop", "table": "orders", "failures": ["amount out of range", "_binlog_pos not unique"]}]})
    write_run(root, "run-unchecked", FINISHED - timedelta(hours=2), None)
    docs = root / DOCS
    docs.parent.mkdir(parents=True)
    docs.write_text("<html><body>Great Expectations report of run-passed</body></html>")
    return root


@pytest.fixture
def page(warehouse) -> Tables:
    reply = TestClient(create_app(warehouse, open_store)).get("/")
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/html")
    return Tables(reply.text)


def test_sources_show_checkpoint_newest_binlog_and_lag(page, warehouse):
    rows = {row["source"]: row for row in page.rows("sources")}
    behind = rows[(warehouse.parent / "binlogs").as_uri()]
    assert (behind["checkpoint file"], behind["position"]) == ("mariadb-bin.000002", "2,000")
    assert behind["newest binlog"] == "mariadb-bin.000003 (1,000 B)"
    assert SAMPLES[1].stat().st_size - 2000 + 1000 == 1272  # the rest of .000002, all of .000003
    assert behind["lag"] == "2 files, 1.2 KiB behind"
    gone = rows[str(warehouse.parent / "gone")]
    assert (gone["checkpoint file"], gone["position"]) == ("mysql-bin.000007", "4,567")
    assert gone["newest binlog"] == "unknown" and gone["lag"].startswith("unknown: cannot list the source")


def test_runs_show_counts_per_table_and_quality_newest_first(page):
    runs = page.rows("runs")
    assert [run["run"] for run in runs] == ["run-passed", "run-failed", "run-unchecked"]
    passed, failed, unchecked = runs
    assert passed["finished"] == "2026-03-02 09:30:00 UTC" and passed["took"] == "12.5 s"
    assert (passed["files"], passed["bytes"], passed["rows"]) == ("2", "5.1 KiB", "17")
    assert passed["rows per table"] == "shop.customers: 6shop.orders: 11"
    assert passed["quality"] == "✓ passed" and passed["Data Docs"] == "Data Docs"
    assert failed["quality"] == "✗ 2 failing" and failed["Data Docs"] == ""
    assert unchecked["quality"] == "not validated"


def test_the_data_docs_link_opens_the_report(page, warehouse):
    link = page.links["Data Docs"]
    assert link == f"/{DOCS}"  # the app's own root; under Airflow it is mounted at /binlake
    reply = TestClient(create_app(warehouse, open_store)).get(link)
    assert reply.status_code == 200 and "Great Expectations report of run-passed" in reply.text


def test_the_data_docs_link_carries_the_mount_prefix(warehouse):
    client = TestClient(create_app(warehouse, open_store), root_path="/binlake")
    assert Tables(client.get("/").text).links["Data Docs"] == f"/binlake/{DOCS}"


@pytest.mark.parametrize("path", ["runs/run-failed/index.html", "../metadata/checkpoint.json", "%2e%2e/metadata/checkpoint.json"])
def test_only_reports_inside_the_quality_folder_are_served(warehouse, path):
    assert TestClient(create_app(warehouse, open_store)).get(f"/quality/{path}").status_code == 404


def test_an_empty_warehouse_says_so(tmp_path):
    text = TestClient(create_app(tmp_path)).get("/").text
    assert "No checkpoint yet" in text and "No runs yet." in text


def test_without_a_fixed_warehouse_the_page_reads_the_settings(warehouse, monkeypatch):
    monkeypatch.delenv("AIRFLOW_VAR_BINLAKE_WAREHOUSE_URI", raising=False)
    monkeypatch.setenv("BINLAKE_WAREHOUSE_URI", warehouse.as_uri())
    client = TestClient(create_app(store_for=open_store))
    assert "run-passed" in client.get("/").text
    monkeypatch.setenv("AIRFLOW_VAR_BINLAKE_WAREHOUSE_URI", str(warehouse.parent / "elsewhere"))  # the Variable wins
    assert "No runs yet." in client.get("/").text
    monkeypatch.setenv("AIRFLOW_VAR_BINLAKE_WAREHOUSE_URI", "s3://bucket/warehouse")
    unusable = client.get("/")
    assert unusable.status_code == 500
    assert "s3:// is not supported" in unusable.text and "binlake_warehouse_uri" in unusable.text


def test_the_plugin_mounts_the_app_under_binlake_and_adds_a_navigation_entry():
    (app,) = BinlakeViewPlugin.fastapi_apps
    (view,) = BinlakeViewPlugin.external_views
    assert app["url_prefix"] == "/binlake" and view["href"] == "/binlake/" and view["destination"] == "nav"


def write_json(path: Path, content: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content))


def write_run(warehouse: Path, run_id: str, finished: datetime, quality: dict | None) -> None:
    """One ``metadata/runs`` record of a run over the two samples (5,262 bytes, 17 row changes)."""
    record = {
        "run_id": run_id, "source": "file:///binlogs", "started": finished - timedelta(seconds=12.5),
        "finished": finished, "seconds": 12.5,
        "inputs": json.dumps([{"file": "mariadb-bin.000001", "start": 0}, {"file": "mariadb-bin.000002", "start": 0}]),
        "bytes": 5262, "rows": 17, "rows_per_table": json.dumps({"shop.customers": 6, "shop.orders": 11}),
        "checkpoint": "{}", "quality": None if quality is None else json.dumps({"run_id": run_id, **quality}),
    }
    folder = warehouse / "metadata" / "runs"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([record]), folder / f"{run_id}.parquet")
