"""``warehouse.maintenance`` on a small real warehouse: Iceberg tables of a pyiceberg SQL
catalog over Parquet files, replaced and appended to as commits do; snapshots expired,
unreferenced files removed, committed staged binlog files pruned. No Spark.

The warehouse: ``db.t`` (``current/db/t/``) holds ``r1`` then is replaced by ``r2``, then by
``r3`` (three snapshots); ``db.t__changes`` gets ``r1`` then ``r2`` appended, in two day
folders; ``_binlake.runs`` one file.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from binlog_codec.file_identity import read_identity
from mariadb import REPO_ROOT
from stage.staging import MANIFEST
from warehouse import maintenance
from warehouse.catalog import FOLDER, open_catalog

DAY = 86400
SAMPLES = sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*"))


def write(warehouse: Path, relative: str, ids: list[int]) -> str:
    path = warehouse / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), path)
    return str(path)


def create(catalog, warehouse: Path, namespace: str, name: str):
    catalog.create_namespace_if_not_exists(namespace)
    location = warehouse / FOLDER / namespace / name
    return catalog.create_table((namespace, name), schema=pa.schema([("id", pa.int64())]), location=location.as_uri())


def replace(table, path: str) -> None:
    """One overwrite snapshot: the table's files out, ``path`` in (as a commit replaces ``current``)."""
    from pyiceberg.io.pyarrow import parquet_file_to_data_file

    old = [task.file for task in table.scan().plan_files()]
    with table.transaction() as transaction:
        with transaction.update_snapshot().overwrite() as overwrite:
            for data in old:
                overwrite.delete_data_file(data)
            overwrite.append_data_file(parquet_file_to_data_file(table.io, table.metadata, f"file://{path}"))


def ids(table, snapshot_id: int | None = None) -> list[int]:
    return sorted(table.scan(snapshot_id=snapshot_id).to_arrow()["id"].to_pylist())


def age(root: Path, seconds: float, skip: set[Path] = frozenset()) -> None:
    """Every file under ``root`` (but ``skip``) modified ``seconds`` ago."""
    then = time.time() - seconds
    for path in root.rglob("*"):
        if path.is_file() and path not in skip:
            os.utime(path, (then, then))


@pytest.fixture
def warehouse(tmp_path) -> Path:
    warehouse = tmp_path / "warehouse"
    catalog = open_catalog(warehouse)
    current = create(catalog, warehouse, "db", "t")
    current.add_files([f"file://{write(warehouse, 'current/db/t/r1-0.parquet', [1, 2])}"])
    replace(current, write(warehouse, "current/db/t/r2-0.parquet", [1, 2, 3]))
    replace(current, write(warehouse, "current/db/t/r3-0.parquet", [1, 2, 3, 4]))
    changes = create(catalog, warehouse, "db", "t__changes")
    for run, day, rows in (("r1", "2026-01-01", [1, 2]), ("r2", "2026-01-02", [3])):
        changes.add_files([f"file://{write(warehouse, f'changes/db/t/commit_date={day}/{run}-0.parquet', rows)}"])
    runs = create(catalog, warehouse, "_binlake", "runs")
    runs.add_files([f"file://{write(warehouse, 'metadata/runs/r1.parquet', [7])}"])
    (warehouse / "metadata" / "checkpoint.json").write_text("{}")
    time.sleep(0.01)  # every snapshot strictly older than "now"
    return warehouse


def table(warehouse: Path, name: tuple[str, str]):
    return open_catalog(warehouse).load_table(name)


def snapshot_ids(loaded) -> list[int]:
    return [snapshot.snapshot_id for snapshot in sorted(loaded.snapshots(), key=lambda s: s.timestamp_ms)]


# -- expiry -------------------------------------------------------------------


def test_expiry_keeps_the_newest_snapshots_and_time_travel_to_them(warehouse):
    first, second, third = snapshot_ids(table(warehouse, ("db", "t")))
    assert maintenance.expire_snapshots(warehouse, timedelta(0), keep_last=2) == {
        "db.t": 1, "db.t__changes": 0, "_binlake.runs": 0}
    current = table(warehouse, ("db", "t"))
    assert snapshot_ids(current) == [second, third]
    assert current.current_snapshot().snapshot_id == third
    assert ids(current) == [1, 2, 3, 4] and ids(current, second) == [1, 2, 3]
    assert len(table(warehouse, ("db", "t__changes")).snapshots()) == 2


def test_expiry_never_takes_the_current_snapshot_nor_a_young_one(warehouse):
    assert maintenance.expire_snapshots(warehouse, timedelta(days=1), keep_last=1) == {
        "db.t": 0, "db.t__changes": 0, "_binlake.runs": 0}
    assert maintenance.expire_snapshots(warehouse, timedelta(0), keep_last=1) == {
        "db.t": 2, "db.t__changes": 1, "_binlake.runs": 0}
    assert ids(table(warehouse, ("db", "t"))) == [1, 2, 3, 4]
    assert ids(table(warehouse, ("db", "t__changes"))) == [1, 2, 3]
    with pytest.raises(ValueError, match="keep_last must be at least 1"):
        maintenance.expire_snapshots(warehouse, timedelta(0), keep_last=0)


def test_a_dry_run_expires_nothing(warehouse):
    assert maintenance.expire_snapshots(warehouse, timedelta(0), keep_last=1, dry_run=True)["db.t"] == 2
    assert len(table(warehouse, ("db", "t")).snapshots()) == 3


# -- orphan files -------------------------------------------------------------


def plant(warehouse: Path) -> dict[str, Path]:
    """Files beside the tables' own: orphans, a pending commit's, a young one, foreign ones."""
    files = {
        "orphan": write(warehouse, "current/db/t/r0-0.parquet", [0]),
        "old day": write(warehouse, "changes/db/t/commit_date=2025-12-31/r0-0.parquet", [0]),
        "pending": write(warehouse, "current/db/t/r9-0.parquet", [9]),
        "pending source": write(warehouse, "_runs/r9/current/db/t/r9-1.parquet", [9]),
        "young": write(warehouse, "current/db/t/r8-0.parquet", [8]),
        "unknown table": write(warehouse, "current/db/gone/r1-0.parquet", [1]),
        "quality": write(warehouse, "_quality/r1/x.parquet", [1]),
    }
    journal = {"moves": [{"source": files["pending source"], "target": "current/db/t/r9-1.parquet"},
                         {"source": str(warehouse / "_runs/r9/x.parquet"), "target": "current/db/t/r9-0.parquet"}],
               "tables": []}
    (warehouse / "_journal").mkdir()
    (warehouse / "_journal" / "r9.json").write_text(json.dumps(journal))
    age(warehouse, 2 * DAY, skip={Path(files["young"])})
    return {name: Path(path) for name, path in files.items()}


def metadata_of(loaded) -> tuple[set[str], set[str]]:
    """The manifest lists and the manifests of every snapshot of ``loaded``."""
    lists = {snapshot.manifest_list.removeprefix("file://") for snapshot in loaded.snapshots()}
    manifests = {path.removeprefix("file://") for path in loaded.inspect.all_manifests()["path"].to_pylist()}
    return lists, manifests


def test_orphan_removal_takes_exactly_the_old_unreferenced_files(warehouse):
    planted = plant(warehouse)
    before = metadata_of(table(warehouse, ("db", "t")))
    maintenance.expire_snapshots(warehouse, timedelta(0), keep_last=2)
    after = metadata_of(table(warehouse, ("db", "t")))
    age(warehouse / FOLDER, 2 * DAY)  # the metadata files too
    sizes = {path: path.stat().st_size for path in warehouse.rglob("*") if path.is_file()}

    removed = maintenance.remove_orphan_files(warehouse, timedelta(days=1))

    gone_metadata = {Path(p) for p in (before[0] - after[0]) | (before[1] - after[1])}
    assert gone_metadata  # the expired snapshot's manifest list at least
    expected = {warehouse / "current/db/t/r1-0.parquet", planted["orphan"], planted["old day"]} | gone_metadata
    assert {Path(p) for each in removed.values() for p in each.paths} == expected
    assert set(sizes) - {path for path in warehouse.rglob("*") if path.is_file()} == expected
    assert set(removed) == {"db.t", "db.t__changes", "_binlake.runs"}
    assert removed["db.t__changes"].paths == [str(planted["old day"])]
    assert removed["_binlake.runs"].files == 0
    assert sum(each.bytes for each in removed.values()) == sum(sizes[path] for path in expected)
    assert not (warehouse / "changes/db/t/commit_date=2025-12-31").exists()  # emptied folder removed
    current = table(warehouse, ("db", "t"))
    assert ids(current) == [1, 2, 3, 4] and ids(current, snapshot_ids(current)[0]) == [1, 2, 3]
    assert ids(table(warehouse, ("db", "t__changes"))) == [1, 2, 3]
    assert ids(table(warehouse, ("_binlake", "runs"))) == [7]


def test_a_second_removal_finds_nothing_and_a_dry_run_removes_nothing(warehouse):
    plant(warehouse)
    maintenance.expire_snapshots(warehouse, timedelta(0), keep_last=1)
    age(warehouse / FOLDER, 2 * DAY)
    everything = {path for path in warehouse.rglob("*") if path.is_file()}
    planned = maintenance.remove_orphan_files(warehouse, timedelta(days=1), dry_run=True)
    assert {path for path in warehouse.rglob("*") if path.is_file()} == everything
    done = maintenance.remove_orphan_files(warehouse, timedelta(days=1))
    assert {name: each.paths for name, each in done.items()} == {name: each.paths for name, each in planned.items()}
    assert warehouse / "current/db/t/r2-0.parquet" not in {path for path in warehouse.rglob("*")}
    assert sum(each.files for each in maintenance.remove_orphan_files(warehouse, timedelta(days=1)).values()) == 0
    assert ids(table(warehouse, ("db", "t"))) == [1, 2, 3, 4]


def test_young_files_are_kept_whatever_they_are(warehouse):
    maintenance.expire_snapshots(warehouse, timedelta(0), keep_last=1)
    removed = maintenance.remove_orphan_files(warehouse, timedelta(days=1))  # nothing aged
    assert sum(each.files for each in removed.values()) == 0
    assert (warehouse / "current/db/t/r1-0.parquet").exists()


# -- staged binlog files ------------------------------------------------------


def staged(folder: Path, files: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True)
    for name, content in files.items():
        (folder / name).write_bytes(content)
    manifest = {name: {"size": len(content), "etag": None, "md5": "m"} for name, content in files.items()}
    (folder / MANIFEST).write_text(json.dumps(manifest))
    return folder


@pytest.fixture
def staging(tmp_path, warehouse) -> Path:
    """Two sources' staging folders; the checkpoint's stream has read the second sample."""
    first, second = (sample.read_bytes() for sample in SAMPLES)
    root = tmp_path / "staging"
    staged(root / "source-a", {"mariadb-bin.000001": first, "mariadb-bin.000002": second,
                               "mariadb-bin.000003": b"later", "other-bin.000001": b"another log"})
    # another server's files under the same names: not the stream's
    staged(root / "source-b", {"mariadb-bin.000001": first, "mariadb-bin.000002": first})
    identity = read_identity(SAMPLES[1]).to_json()
    checkpoint = {"s3://bucket/a": {"file": "mariadb-bin.000002", "position": 400, "source": "s3://bucket/a",
                                    "files": {"mariadb-bin.000002": {"identity": identity, "position": 400}}}}
    (warehouse / "metadata" / "checkpoint.json").write_text(json.dumps(checkpoint))
    return root


def test_prune_removes_the_files_before_the_checkpoint_file_of_its_stream(staging, warehouse):
    pruned = maintenance.prune_staged(staging, warehouse)
    assert {folder: each.paths for folder, each in pruned.items()} == {
        str(staging / "source-a"): [str(staging / "source-a" / "mariadb-bin.000001")]}
    assert pruned[str(staging / "source-a")].bytes == SAMPLES[0].stat().st_size
    assert sorted(p.name for p in (staging / "source-a").iterdir()) == [
        MANIFEST, "mariadb-bin.000002", "mariadb-bin.000003", "other-bin.000001"]
    manifest = json.loads((staging / "source-a" / MANIFEST).read_text())
    assert {name for name, entry in manifest.items() if entry.get("pruned")} == {"mariadb-bin.000001"}
    assert sorted(p.name for p in (staging / "source-b").iterdir()) == [
        MANIFEST, "mariadb-bin.000001", "mariadb-bin.000002"]


def test_prune_takes_one_source_folder_and_a_dry_run_removes_nothing(staging, warehouse):
    folder = staging / "source-a"
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert maintenance.prune_staged(folder, warehouse, dry_run=True)[str(folder)].files == 1
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert maintenance.prune_staged(folder, warehouse)[str(folder)].files == 1
    assert maintenance.prune_staged(folder, warehouse)[str(folder)].files == 0


def test_a_folder_without_the_checkpoint_file_is_left_alone(staging, warehouse):
    shutil.rmtree(staging / "source-b")
    (staging / "source-a" / "mariadb-bin.000002").unlink()
    assert maintenance.prune_staged(staging, warehouse) == {}
    assert (staging / "source-a" / "mariadb-bin.000001").exists()


# -- the command line ---------------------------------------------------------


def test_the_command_line_prints_a_line_per_table_and_a_total(warehouse, staging, capsys):
    age(warehouse, 2 * DAY)
    arguments = [str(warehouse), "--staging", str(staging), "--retention-days", "0", "--keep-last", "1"]
    assert maintenance.main(arguments + ["--dry-run"]) == 0
    dry = capsys.readouterr().out.splitlines()
    assert dry[0] == "_binlake.runs: 0 snapshots to expire, 0 files to remove (0 bytes)"
    assert dry[-1].endswith("(dry run: nothing changed)")
    assert maintenance.main(arguments) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "_binlake.runs", "db.t", "db.t__changes", f"staged {staging / 'source-a'}", "total"]
    assert lines[1].startswith("db.t: 2 snapshots expired, ")
    assert lines[3].startswith(f"staged {staging / 'source-a'}: 1 binlog files removed")
    assert lines[-1].startswith("total: 3 snapshots expired, ")


# -- abandoned runs -----------------------------------------------------------------


def test_the_work_areas_of_runs_never_published_go_once_old_and_nothing_else(warehouse):
    planted = {
        "abandoned": ["_runs/old/staging/images/db/t/part-1.arrow", "_runs/old/out/current/db/t/old-0.parquet",
                      "_runs/old/run.json"],
        "young": ["_runs/young/staging/transactions/part-1.parquet"],
        "pending": ["_runs/pending/out/current/db/t/pending-0.parquet"],
        "inflated": ["_runs/_inflated/0123456789abcdef/mariadb-bin.000001"],
    }
    for paths in planted.values():
        for relative in paths:
            (warehouse / relative).parent.mkdir(parents=True, exist_ok=True)
            (warehouse / relative).write_bytes(b"x" * 10)
    (warehouse / "_journal").mkdir()
    (warehouse / "_journal" / "pending.json").write_text(json.dumps({"moves": [], "tables": []}))
    age(warehouse, 2 * DAY, skip={warehouse / "_runs/young/staging/transactions/part-1.parquet"})
    dry = maintenance.remove_abandoned_runs(warehouse, dry_run=True)
    assert (dry.files, dry.bytes) == (3, 30) and all((warehouse / p).exists() for p in planted["abandoned"])
    removed = maintenance.remove_abandoned_runs(warehouse)
    assert sorted(removed.paths) == sorted(str(warehouse / p) for p in planted["abandoned"])
    assert not (warehouse / "_runs/old").exists()
    assert all((warehouse / p).exists() for name in ("young", "pending", "inflated") for p in planted[name])
    assert maintenance.remove_abandoned_runs(warehouse).files == 0


def test_output_folders_no_snapshot_names_go_once_old_and_named_ones_stay(warehouse):
    """Run outputs registered where they were written (``data/<run>.<attempt>/``): a file of one no
    snapshot names goes with the orphans; a folder none of whose files a snapshot or a pending
    journal names goes with the abandoned runs, and one of a table the catalog never had too."""
    published = write(warehouse, "data/r4.aa/changes/db/t/commit_date=2026-01-03/r4-0.parquet", [4])
    superseded = write(warehouse, "data/r4.aa/current/db/t/r4-0.parquet", [9])
    table(warehouse, ("db", "t__changes")).add_files([f"file://{published}"])
    failed = [write(warehouse, "data/r5.bb/current/db/t/r5-0.parquet", [5]),
              write(warehouse, "data/r5.bb/current/db/new/r5-0.parquet", [5])]
    pending = write(warehouse, "data/r6.cc/current/db/t/r6-0.parquet", [6])
    (warehouse / "_journal").mkdir()
    (warehouse / "_journal" / "r6.json").write_text(json.dumps(
        {"moves": [], "tables": [{"table": ["db", "t"], "files": ["data/r6.cc/current/db/t/r6-0.parquet"],
                                  "replaced": ["current/db/t"], "whole": True}]}))
    age(warehouse / "data", 2 * DAY)

    orphans = maintenance.remove_orphan_files(warehouse, timedelta(days=1))
    assert orphans["db.t"].paths == [superseded, failed[0]]  # db/new: no table of the catalog, left
    abandoned = maintenance.remove_abandoned_runs(warehouse, timedelta(days=1))
    assert abandoned.paths == [failed[1]] and not (warehouse / "data/r5.bb").exists()
    assert Path(published).exists() and Path(pending).exists()
    assert ids(table(warehouse, ("db", "t__changes"))) == [1, 2, 3, 4]
    assert maintenance.remove_abandoned_runs(warehouse, timedelta(days=1)).files == 0
