"""``spark_jobs.catalog``: the metadata tables as Iceberg tables of the warehouse's catalog.

Two runs of the bundled samples (a file each): read through the catalog, with pyiceberg and
with DuckDB's Iceberg reader loaded by path, each table holds what its Parquet folder holds;
each run is a snapshot whose summary names the run and the checkpoint it committed. A commit
that dies among the tables is finished by its recovery without adding a run twice, a catalog
that does not answer holds the commit until it does, and a warehouse kept in one catalog
refuses another.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mariadb import REPO_ROOT
from spark_jobs import catalog, publish
from spark_jobs.ingest import ingest

SAMPLES = sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*"))


def multiset(rows: list[dict]) -> Counter:
    return Counter(json.dumps(row, sort_keys=True, default=str) for row in rows)


def folder_rows(warehouse: Path, name: str) -> list[dict]:
    return pq.read_table(warehouse / "metadata" / name).to_pylist()


def catalog_rows(warehouse: Path, name: str) -> list[dict]:
    return catalog.open_catalog(warehouse).load_table(catalog.identifier(name)).scan().to_arrow().to_pylist()


def ingest_file(spark, sample: Path, source: Path, warehouse: Path):
    source.mkdir(exist_ok=True)
    shutil.copyfile(sample, source / sample.name)
    return ingest(str(source), str(warehouse), spark=spark, validation=False)


@pytest.fixture(scope="module")
def two_runs(spark, tmp_path_factory):
    folder = tmp_path_factory.mktemp("catalog")
    runs, checkpoints = [], []
    for sample in SAMPLES:
        runs.append(ingest_file(spark, sample, folder / "source", folder / "warehouse").run_id)
        checkpoints.append(publish.read_checkpoint(folder / "warehouse"))
    return folder / "warehouse", runs, checkpoints


def test_the_metadata_tables_read_through_the_catalog_hold_their_folders_rows(two_runs):
    warehouse, _, _ = two_runs
    for name in ("transactions", "runs", "schema_changes"):
        assert multiset(catalog_rows(warehouse, name)) == multiset(folder_rows(warehouse, name)), name
    assert len(folder_rows(warehouse, "runs")) == 2


def test_duckdb_reads_them_offline_through_the_extension_loaded_by_path(two_runs):
    warehouse, _, _ = two_runs
    connection = catalog.duckdb_connection()
    location = catalog.metadata_location(warehouse, "transactions")
    read = connection.execute(f"SELECT file, start, \"end\" FROM iceberg_scan('{location}') ORDER BY file, start").fetchall()
    assert read == sorted((row["file"], row["start"], row["end"]) for row in folder_rows(warehouse, "transactions"))


def test_each_run_is_a_snapshot_naming_the_run_and_its_checkpoint(two_runs):
    warehouse, runs, checkpoints = two_runs
    table = catalog.open_catalog(warehouse).load_table(catalog.identifier("runs"))
    summaries = [snapshot.summary.additional_properties for snapshot in table.snapshots()]
    assert [summary[catalog.RUN_ID] for summary in summaries] == runs
    assert [json.loads(summary[catalog.CHECKPOINT]) for summary in summaries] == checkpoints
    first = table.scan(snapshot_id=table.snapshots()[0].snapshot_id).to_arrow().to_pylist()
    assert [row["run_id"] for row in first] == runs[:1]  # time travel to the first run


def test_a_sync_repeated_adds_nothing(two_runs):
    warehouse, runs, checkpoints = two_runs
    assert catalog.sync(warehouse, runs[-1], checkpoints[-1]) == {"transactions": 0, "runs": 0, "schema_changes": 0}


def test_a_commit_that_dies_among_the_tables_is_finished_once_by_its_recovery(spark, tmp_path, monkeypatch):
    """The process dies after the first table's snapshot: the checkpoint has not moved, the
    journal is there; the recovery syncs the other tables and moves the checkpoint, and no table
    holds the run twice."""
    warehouse = tmp_path / "warehouse"
    ingest_file(spark, SAMPLES[0], tmp_path / "source", warehouse)
    before = publish.read_checkpoint(warehouse)
    add = catalog._add_new_files

    def dies_after_one_table(catalog_, warehouse_, name, files, summary):
        added = add(catalog_, warehouse_, name, files, summary)
        if name == "runs":
            raise SystemExit("killed")
        return added

    monkeypatch.setattr(catalog, "_add_new_files", dies_after_one_table)
    with pytest.raises(SystemExit):
        ingest_file(spark, SAMPLES[1], tmp_path / "source", warehouse)
    assert publish.read_checkpoint(warehouse) == before and list((warehouse / publish.JOURNAL).glob("*.json"))
    monkeypatch.setattr(catalog, "_add_new_files", add)
    [finished] = publish.recover(warehouse)
    assert publish.read_checkpoint(warehouse) != before
    for name in ("transactions", "runs", "schema_changes"):
        assert multiset(catalog_rows(warehouse, name)) == multiset(folder_rows(warehouse, name)), name
    summaries = [s.summary.additional_properties[catalog.RUN_ID]
                 for s in catalog.open_catalog(warehouse).load_table(catalog.identifier("runs")).snapshots()]
    assert summaries[-1] == finished and summaries.count(finished) == 1


def test_a_warehouse_kept_in_one_catalog_refuses_another(tmp_path):
    catalog.configure(tmp_path, "postgresql://binlake:secret@db.example/lake")
    catalog.configure(tmp_path, "postgresql://binlake:secret@db.example/lake")  # the same again: fine
    with pytest.raises(ValueError, match=r"registered in the catalog postgresql://binlake:\*\*\*@db.example/lake"):
        catalog.configure(tmp_path, "sqlite:///elsewhere.db")
    assert catalog.uri_of(tmp_path) == "postgresql://binlake:secret@db.example/lake"
    assert catalog.uri_of(tmp_path / "other") == f"sqlite:///{(tmp_path / 'other').resolve()}/_iceberg/catalog.db"


def test_a_catalog_that_does_not_answer_holds_the_commit_until_it_does(spark, tmp_path):
    """The catalog's file out of reach: the run says so and its checkpoint does not move, nor does
    any run's until the catalog is back; the next run then finishes the commit, once."""
    warehouse, home, away = tmp_path / "warehouse", tmp_path / "catalog", tmp_path / "away"
    home.mkdir()
    catalog.configure(warehouse, f"sqlite:///{home / 'catalog.db'}")
    ingest_file(spark, SAMPLES[0], tmp_path / "source", warehouse)
    before = publish.read_checkpoint(warehouse)
    home.rename(away)
    with pytest.raises(catalog.CatalogUnavailable, match=r"did not take the run .*the checkpoint has not moved"):
        ingest_file(spark, SAMPLES[1], tmp_path / "source", warehouse)
    with pytest.raises(catalog.CatalogUnavailable):  # every run waits for it
        ingest(str(tmp_path / "source"), str(warehouse), spark=spark, validation=False)
    assert publish.read_checkpoint(warehouse) == before
    away.rename(home)
    assert ingest(str(tmp_path / "source"), str(warehouse), spark=spark, validation=False).run_id == ""  # finished
    assert publish.read_checkpoint(warehouse) != before
    assert not (warehouse / "_runs").exists() and not (warehouse / publish.JOURNAL).exists()
    for name in ("transactions", "runs", "schema_changes"):
        assert multiset(catalog_rows(warehouse, name)) == multiset(folder_rows(warehouse, name)), name
    assert len(folder_rows(warehouse, "runs")) == 2
