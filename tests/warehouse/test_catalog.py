"""``warehouse.catalog``: every table of the warehouse as an Iceberg table of its catalog.

Two runs of the bundled samples (a file each): read through the catalog, with pyiceberg and
with DuckDB's Iceberg reader loaded by path, ``current`` holds what one run of both files gives
and the metadata tables what their folders hold; each run is a snapshot whose summary names the
run and the checkpoint it committed, and the first run's snapshot still reads after the second
replaced ``current``. A commit that dies among the tables is finished by its recovery without
adding a run twice, a catalog that does not answer holds the commit until it does, and a
warehouse kept in one catalog refuses another. Type changes Iceberg cannot promote: a replaced
table takes the new type, an appended one has its earlier files rewritten in it.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mariadb import REPO_ROOT
from spark_jobs.ingest import ingest
from warehouse import catalog, publish
from warehouse.layout import path_part

SAMPLES = sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*"))


def multiset(rows: list[dict]) -> Counter:
    return Counter(json.dumps(row, sort_keys=True, default=str) for row in rows)


def folder_rows(warehouse: Path, name: str) -> list[dict]:
    return pq.read_table(warehouse / "metadata" / name).to_pylist()


def catalog_rows(warehouse: Path, name: str | tuple) -> list[dict]:
    table = catalog.identifier(name) if isinstance(name, str) else name
    return catalog.open_catalog(warehouse).load_table(table).scan().to_arrow().to_pylist()


SOURCE_TABLES = [("shop", "customers"), ("shop", "orders")]


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


@pytest.fixture(scope="module")
def one_run(spark, tmp_path_factory):
    """Both sample files in one run."""
    folder = tmp_path_factory.mktemp("one-run")
    (folder / "source").mkdir()
    for sample in SAMPLES:
        shutil.copyfile(sample, folder / "source" / sample.name)
    ingest(str(folder / "source"), str(folder / "warehouse"), spark=spark, validation=False)
    return folder / "warehouse"


def test_current_and_changes_read_through_the_catalog_are_those_of_one_run(two_runs, one_run):
    warehouse, _, _ = two_runs
    for database, table in SOURCE_TABLES:
        for name in (catalog.current_table(database, table), catalog.changes_table(database, table)):
            assert multiset(catalog_rows(warehouse, name)) == multiset(catalog_rows(one_run, name)), name
            assert catalog_rows(warehouse, name), name


def test_the_first_runs_current_still_reads_after_the_second_replaced_it(two_runs, spark, tmp_path):
    warehouse, runs, _ = two_runs
    ingest_file(spark, SAMPLES[0], tmp_path / "source", tmp_path / "first")
    table = catalog.open_catalog(warehouse).load_table(catalog.current_table("shop", "orders"))
    [snapshot] = [each for each in table.snapshots() if each.summary.additional_properties[catalog.RUN_ID] == runs[0]]
    assert multiset(table.scan(snapshot_id=snapshot.snapshot_id).to_arrow().to_pylist()) == multiset(
        catalog_rows(tmp_path / "first", catalog.current_table("shop", "orders")))
    assert len(table.snapshots()) == 2 and len(catalog.data_files(warehouse, catalog.current_table("shop", "orders"))) == 1


def test_duckdb_reads_current_as_pyiceberg_does(two_runs):
    warehouse, _, _ = two_runs
    connection = catalog.duckdb_connection()
    for name in SOURCE_TABLES:
        location = catalog.metadata_location(warehouse, catalog.current_table(*name))
        read = connection.execute(f"SELECT * FROM iceberg_scan('{location}')").to_arrow_table().to_pylist()
        assert multiset(read) == multiset(catalog_rows(warehouse, catalog.current_table(*name))), name


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


def test_changes_are_partitioned_by_the_day_of_their_commit_and_queries_on_it_prune_files(two_runs):
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan
    from pyiceberg.transforms import DayTransform

    warehouse, _, _ = two_runs
    table = catalog.open_catalog(warehouse).load_table(catalog.changes_table("shop", "orders"))
    (field,) = table.spec().fields
    assert (field.name, field.transform, table.schema().find_field(field.source_id).name) == (
        "commit_date", DayTransform(), "_commit_ts")
    tasks = list(table.scan().plan_files())
    days = {task.file.file_path.split("commit_date=")[1].split("/")[0] for task in tasks}
    assert len(days) == 1 and len(tasks) == 2  # a file per run, both of the day the samples were written
    (day,) = days
    for task in tasks:  # the partition value: days since 1970-01-01, that of the file's folder
        assert str(date(1970, 1, 1) + timedelta(days=task.file.partition[0])) == day
    next_day = str(date.fromisoformat(day) + timedelta(days=1))
    on_the_day = And(GreaterThanOrEqual("_commit_ts", f"{day}T00:00:00+00:00"),
                     LessThan("_commit_ts", f"{next_day}T00:00:00+00:00"))
    assert len(list(table.scan(row_filter=on_the_day).plan_files())) == 2
    assert list(table.scan(row_filter=GreaterThanOrEqual("_commit_ts", f"{next_day}T00:00:00+00:00")).plan_files()) == []


def test_each_run_is_a_snapshot_naming_the_run_and_its_checkpoint(two_runs):
    warehouse, runs, checkpoints = two_runs
    table = catalog.open_catalog(warehouse).load_table(catalog.identifier("runs"))
    summaries = [snapshot.summary.additional_properties for snapshot in table.snapshots()]
    assert [summary[catalog.RUN_ID] for summary in summaries] == runs
    assert [json.loads(summary[catalog.CHECKPOINT]) for summary in summaries] == checkpoints
    first = table.scan(snapshot_id=table.snapshots()[0].snapshot_id).to_arrow().to_pylist()
    assert [row["run_id"] for row in first] == runs[:1]  # time travel to the first run


def test_a_sync_repeated_adds_nothing(spark, tmp_path, monkeypatch):
    asked, sync = [], catalog.sync
    monkeypatch.setattr(catalog, "sync", lambda *args: asked.append(args) or sync(*args))
    ingest_file(spark, SAMPLES[0], tmp_path / "source", tmp_path / "warehouse")
    [(warehouse, run_id, checkpoint, commits, fence)] = asked
    assert {table.table for table in commits} >= {("_binlake", "runs"), ("shop", "orders"), ("shop", "orders__changes")}
    assert fence == catalog.Fence(None)  # the warehouse's first commit
    assert set(sync(warehouse, run_id, checkpoint, commits, fence).values()) == {0}  # its own run: the fence holds


def test_a_commit_that_dies_among_the_tables_is_finished_once_by_its_recovery(spark, tmp_path, monkeypatch):
    """The process dies after the first table's snapshot: the checkpoint has not moved, the
    journal is there; the recovery syncs the other tables and moves the checkpoint, and no table
    holds the run twice."""
    warehouse = tmp_path / "warehouse"
    ingest_file(spark, SAMPLES[0], tmp_path / "source", warehouse)
    before = publish.read_checkpoint(warehouse)
    add = catalog._commit_table

    def dies_after_one_table(catalog_, warehouse_, commit, summary, fence=None):
        added = add(catalog_, warehouse_, commit, summary, fence)
        if commit.table == catalog.identifier("runs"):
            raise SystemExit("killed")
        return added

    monkeypatch.setattr(catalog, "_commit_table", dies_after_one_table)
    with pytest.raises(SystemExit):
        ingest_file(spark, SAMPLES[1], tmp_path / "source", warehouse)
    assert publish.read_checkpoint(warehouse) == before and list((warehouse / publish.JOURNAL).glob("*.json"))
    monkeypatch.setattr(catalog, "_commit_table", add)
    [finished] = publish.recover(warehouse)
    assert publish.read_checkpoint(warehouse) != before
    for name in ("transactions", "runs", "schema_changes"):
        assert multiset(catalog_rows(warehouse, name)) == multiset(folder_rows(warehouse, name)), name
    summaries = [s.summary.additional_properties[catalog.RUN_ID]
                 for s in catalog.open_catalog(warehouse).load_table(catalog.identifier("runs")).snapshots()]
    assert summaries[-1] == finished and summaries.count(finished) == 1


def test_a_run_another_writer_overtook_is_refused_before_any_table_holds_it(spark, tmp_path, monkeypatch):
    """Two writers on one catalog: another commits a run after this run's commit began (its fence
    taken, its journal not yet written). The commit is refused before any table holds the run,
    its journal dropped (never rolled forward over the other run), the checkpoint unchanged; the
    next run is refused too, the state folder's checkpoint no longer being the catalog's."""
    warehouse = tmp_path / "warehouse"
    first = ingest_file(spark, SAMPLES[0], tmp_path / "source", warehouse).run_id
    checkpoint, current = publish.read_checkpoint(warehouse), catalog_rows(warehouse, ("shop", "orders"))
    [record] = catalog.data_files(warehouse, catalog.identifier("runs"))
    check = catalog.check_type_changes

    def another_writer_commits(*args):
        rows = pq.read_table(record)
        commit_files(warehouse, "other", {"metadata/runs/other.parquet": rows.set_column(
            rows.schema.get_field_index("run_id"), "run_id", pa.array(["other"]))})
        return check(*args)

    monkeypatch.setattr(catalog, "check_type_changes", another_writer_commits)
    with pytest.raises(catalog.CommitConflict, match=r"another writer committed run other to the catalog after this "
                                                     r"run's commit began .*nothing of this run was published"):
        ingest_file(spark, SAMPLES[1], tmp_path / "source", warehouse)
    assert not list((warehouse / publish.JOURNAL).glob("*.json")) and publish.read_checkpoint(warehouse) == checkpoint
    assert catalog_rows(warehouse, ("shop", "orders")) == current
    assert sorted(row["run_id"] for row in catalog_rows(warehouse, "runs")) == sorted([first, "other"])
    monkeypatch.setattr(catalog, "check_type_changes", check)
    with pytest.raises(publish.CheckpointMismatch):
        ingest_file(spark, SAMPLES[1], tmp_path / "source", warehouse)


def test_a_state_folder_that_lost_its_checkpoint_is_refused_before_it_publishes_rows_twice(spark, tmp_path):
    """The checkpoint file gone (a state folder lost or restored from an older copy) while the
    catalog's tables hold the run: the run read again from the start would append its rows a
    second time. It is refused at its commit, and the tables stay as they were."""
    warehouse = tmp_path / "warehouse"
    ingest_file(spark, SAMPLES[0], tmp_path / "source", warehouse)
    before = {name: catalog_rows(warehouse, name) for name in (("shop", "orders__changes"), ("shop", "orders"))}
    (warehouse / publish.CHECKPOINT).unlink()
    with pytest.raises(publish.CheckpointMismatch, match=r"is not the one the catalog's tables were last committed "
                                                         r"with .*nothing was published"):
        ingest_file(spark, SAMPLES[0], tmp_path / "source", warehouse)
    assert {name: catalog_rows(warehouse, name) for name in before} == before
    assert not (warehouse / publish.JOURNAL).exists()


def test_a_warehouse_kept_in_one_catalog_refuses_another(tmp_path):
    catalog.configure(tmp_path, "postgresql://binlake:secret@db.example/lake")
    catalog.configure(tmp_path, "postgresql://binlake:secret@db.example/lake")  # the same again: fine
    with pytest.raises(ValueError, match=r"registered in the catalog postgresql://binlake:\*\*\*@db.example/lake"):
        catalog.configure(tmp_path, "sqlite:///elsewhere.db")
    assert catalog.uri_of(tmp_path) == "postgresql://binlake:secret@db.example/lake"
    assert catalog.uri_of(tmp_path / "other") == f"sqlite:///{(tmp_path / 'other').resolve()}/_iceberg/catalog.db"


def test_a_catalog_that_refuses_the_commit_holds_it_until_it_takes_it(spark, tmp_path):
    """Another writer holds the catalog's write lock while a run commits: the run says so and its
    checkpoint does not move, nor does any run's until the lock is gone; the next run then
    finishes the commit, once."""
    warehouse = tmp_path / "warehouse"
    ingest_file(spark, SAMPLES[0], tmp_path / "source", warehouse)
    before = publish.read_checkpoint(warehouse)
    other_writer = sqlite3.connect(warehouse / catalog.FOLDER / "catalog.db")
    other_writer.execute("BEGIN IMMEDIATE")  # readers go on, writers wait, then give up
    with pytest.raises(catalog.CatalogUnavailable, match=r"did not take the run .*locked.*the checkpoint has not moved"):
        ingest_file(spark, SAMPLES[1], tmp_path / "source", warehouse)
    with pytest.raises(catalog.CatalogUnavailable):  # every run waits for it
        ingest(str(tmp_path / "source"), str(warehouse), spark=spark, validation=False)
    assert publish.read_checkpoint(warehouse) == before
    other_writer.rollback()
    other_writer.close()
    assert ingest(str(tmp_path / "source"), str(warehouse), spark=spark, validation=False).run_id == ""  # finished
    assert publish.read_checkpoint(warehouse) != before
    assert not (warehouse / "_runs").exists() and not (warehouse / publish.JOURNAL).exists()
    for name in ("transactions", "runs", "schema_changes"):
        assert multiset(catalog_rows(warehouse, name)) == multiset(folder_rows(warehouse, name)), name
    assert len(folder_rows(warehouse, "runs")) == 2


def test_a_catalog_out_of_reach_stops_the_run_before_it_writes(spark, tmp_path):
    warehouse, home = tmp_path / "warehouse", tmp_path / "catalog"
    home.mkdir()
    catalog.configure(warehouse, f"sqlite:///{home / 'catalog.db'}")
    ingest_file(spark, SAMPLES[0], tmp_path / "source", warehouse)
    before = publish.read_checkpoint(warehouse)
    home.rename(tmp_path / "away")
    with pytest.raises(catalog.CatalogUnavailable, match=rf"the catalog sqlite:///{home}/catalog.db did not answer "
                                                         r"while .*nothing was published"):
        ingest_file(spark, SAMPLES[1], tmp_path / "source", warehouse)
    assert publish.read_checkpoint(warehouse) == before and not (warehouse / publish.JOURNAL).exists()


def commit_files(warehouse: Path, run_id: str, files: dict[str, pa.Table]) -> None:
    """Write ``files`` (path relative to the warehouse: rows) and sync them as run ``run_id``."""
    for relative, rows in files.items():
        (warehouse / relative).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(rows, warehouse / relative)
    catalog.sync(warehouse, run_id, {"run": run_id}, catalog.plan_tables(list(files)))


def test_a_type_iceberg_cannot_promote_replaces_the_column_of_current_and_rewrites_changes(tmp_path):
    """BIGINT to VARCHAR, and the ``_before`` struct with it: ``current`` (replaced) takes the new
    type; ``changes`` (appended) has its earlier file rewritten with the numbers' decimal text."""
    before = pa.struct([("c", pa.int64())])
    old = pa.table({"id": pa.array([1, 2], pa.int32()), "c": pa.array([1, 2**40]),
                    "_before": pa.array([{"c": 5}, None], before)})
    new = pa.table({"id": pa.array([3], pa.int32()), "c": pa.array(["x"]),
                    "_before": pa.array([{"c": "y"}], pa.struct([("c", pa.string())]))})
    commit_files(tmp_path, "r1", {"current/d/t/r1-0.parquet": old, "changes/d/t/commit_date=1/r1-0.parquet": old})
    commit_files(tmp_path, "r2", {"current/d/t/r2-0.parquet": new.drop_columns(["_before"]),
                                  "changes/d/t/commit_date=1/r2-0.parquet": new})
    assert catalog_rows(tmp_path, ("d", "t")) == [{"id": 3, "c": "x"}]
    assert sorted(catalog_rows(tmp_path, ("d", "t__changes")), key=lambda row: row["id"]) == [
        {"id": 1, "c": "1", "_before": {"c": "5"}}, {"id": 2, "c": "1099511627776", "_before": None},
        {"id": 3, "c": "x", "_before": {"c": "y"}}]
    assert [Path(path).name for path in catalog.data_files(tmp_path, ("d", "t__changes"))] == [
        "r2-0.parquet", "r2-retyped-r1-0.parquet"]
    table = catalog.open_catalog(tmp_path).load_table(("d", "t"))
    assert table.scan(snapshot_id=table.snapshots()[0].snapshot_id).to_arrow().num_rows == 2  # the older snapshot


def test_a_type_change_earlier_rows_cannot_take_is_refused_before_the_commit_starts(tmp_path):
    """VARCHAR to INT in a table runs append to: its earlier file holds ``abc``, which no INT
    holds; the run is refused before its journal, naming the table, the column and both types,
    and the tables stay as they were. The same change over convertible text goes through."""
    old = pa.table({"id": pa.array([1, 2], pa.int32()), "c": pa.array(["7", "abc"])})
    commit_files(tmp_path, "r1", {"changes/d/t/commit_date=1/r1-0.parquet": old})
    run = _run_folder(tmp_path, "r2", "changes/d/t/commit_date=1/r2-0.parquet",
                      pa.table({"id": pa.array([3], pa.int32()), "c": pa.array([3])}))
    with pytest.raises(catalog.TypeChangeRefused, match=r"d\.t__changes: column c changes from string to int64, "
                                                        r"and its earlier rows .*r1-0\.parquet.*nothing was published"):
        publish.commit(tmp_path, run, "r2")
    assert not (tmp_path / publish.JOURNAL).exists() and (run / "changes/d/t/commit_date=1/r2-0.parquet").exists()
    assert sorted(row["c"] for row in catalog_rows(tmp_path, ("d", "t__changes"))) == ["7", "abc"]
    commit_files(tmp_path, "r3", {"changes/d/u/commit_date=1/r3-0.parquet": old.filter(pa.array([True, False]))})
    publish.commit(tmp_path, _run_folder(tmp_path, "r4", "changes/d/u/commit_date=1/r4-0.parquet",
                                         pa.table({"id": pa.array([3], pa.int32()), "c": pa.array([3])})), "r4")
    assert sorted(row["c"] for row in catalog_rows(tmp_path, ("d", "u__changes"))) == [3, 7]


def test_a_run_written_in_its_output_folder_is_registered_where_it_is(tmp_path):
    """Into an object store, a run writes its files once, in ``data/<run id>.<attempt>/``, and the
    commit names them there: nothing moves, and a table replaced whole (``current``) or by days
    (a backfill's ``changes``) drops its files wherever they are, at the root or in an output folder."""
    day = pa.table({"id": pa.array([1], pa.int32())})
    commit_files(tmp_path, "r1", {"current/d/t/r1-0.parquet": day, "changes/d/t/commit_date=1/r1-0.parquet": day})
    for run, replaced in (("r2", ()), ("r3", ()), ("r4", (publish.DAY_PARTITIONS,))):
        folder = tmp_path / "data" / f"{run}.a1"
        rows = pa.table({"id": pa.array([int(run[1])], pa.int32())})
        for relative in (f"current/d/t/{run}-0.parquet", f"changes/d/t/commit_date=1/{run}-0.parquet"):
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(rows, folder / relative)
        written = sorted(path for path in folder.rglob("*") if path.is_file())
        assert publish.commit(tmp_path, folder, run, replaced=replaced) == 0  # no move
        assert sorted(path for path in folder.rglob("*") if path.is_file()) == written
    assert catalog.data_files(tmp_path, ("d", "t")) == [str(tmp_path / "data/r4.a1/current/d/t/r4-0.parquet")]
    assert catalog_rows(tmp_path, ("d", "t")) == [{"id": 4}]
    assert catalog_rows(tmp_path, ("d", "t__changes")) == [{"id": 4}]  # the backfill replaced day 1 whole
    history = catalog.open_catalog(tmp_path).load_table(("d", "t__changes"))
    assert sorted(row["id"] for row in history.scan(snapshot_id=history.snapshots()[2].snapshot_id)
                  .to_arrow().to_pylist()) == [1, 2, 3]


def _run_folder(warehouse: Path, run_id: str, relative: str, rows: pa.Table) -> Path:
    folder = warehouse / "_runs" / run_id / "out"
    (folder / relative).parent.mkdir(parents=True)
    pq.write_table(rows, folder / relative)
    return folder


def test_a_column_iceberg_can_promote_is_promoted_and_a_narrower_file_read_in_the_wider_type(tmp_path):
    commit_files(tmp_path, "r1", {"changes/d/t/commit_date=1/r1-0.parquet": pa.table({"c": pa.array([1], pa.int32())})})
    commit_files(tmp_path, "r2", {"changes/d/t/commit_date=1/r2-0.parquet": pa.table({"c": pa.array([2**40])})})
    commit_files(tmp_path, "r3", {"changes/d/t/commit_date=1/r3-0.parquet": pa.table({"c": pa.array([3], pa.int16())})})
    assert sorted(row["c"] for row in catalog_rows(tmp_path, ("d", "t__changes"))) == [1, 3, 2**40]
    assert len(catalog.data_files(tmp_path, ("d", "t__changes"))) == 3  # nothing rewritten


def test_a_replaced_table_takes_the_new_files_columns_in_their_order(tmp_path):
    commit_files(tmp_path, "r1", {"current/d/t/r1-0.parquet": pa.table({"a": [1], "b": [2]})})
    commit_files(tmp_path, "r2", {"current/d/t/r2-0.parquet": pa.table({"z": [0], "a": [1]})})
    table = catalog.open_catalog(tmp_path).load_table(("d", "t"))
    assert [column.name for column in table.schema().columns] == ["z", "a"]
    assert catalog_rows(tmp_path, ("d", "t")) == [{"z": 0, "a": 1}]


READER_RUNS = 6


@pytest.mark.integration
def test_a_reader_scanning_current_while_runs_commit_sees_only_whole_runs(spark, mariadb, tmp_path):
    """Run k of a real server's log inserts row 100+k and sets every row's ``v`` to k, so the only
    states ``current`` may show are "rows 100..100+k, all v = k". A reader scans the table through
    the catalog in a loop while the runs commit one after the other."""
    database = "reader_loop"
    mariadb.sql(f"DROP DATABASE IF EXISTS {database}; CREATE DATABASE {database}; "
                f"CREATE TABLE {database}.t (id INT PRIMARY KEY, v INT)")
    mariadb.flush_logs()
    first = mariadb.current_binlog()
    for k in range(READER_RUNS):
        mariadb.sql(f"USE {database}; INSERT INTO t VALUES ({100 + k}, {k}); UPDATE t SET v = {k};")
        mariadb.flush_logs()
    binlogs = [binlog for binlog in mariadb.binlog_files() if first <= binlog < mariadb.current_binlog()]
    assert len(binlogs) == READER_RUNS
    warehouse, source, seen, done = tmp_path / "warehouse", tmp_path / "source", [], threading.Event()

    def reader() -> None:
        while not done.is_set():
            rows = catalog.read(warehouse, (database, "t")) if catalog.has_catalog(warehouse) else None
            seen.append(None if rows is None else sorted((row["id"], row["v"]) for row in rows.to_pylist()))

    scanning = threading.Thread(target=reader)
    scanning.start()
    try:
        source.mkdir()
        for binlog in binlogs:
            shutil.copyfile(binlog, source / binlog.name)
            assert ingest(str(source), str(warehouse), spark=spark, validation=False).run_id
    finally:
        done.set()
        scanning.join()
    whole = [sorted((100 + n, k) for n in range(k + 1)) for k in range(READER_RUNS)]
    mixed = [state for state in seen if state is not None and state not in whole]
    assert not mixed, f"{len(mixed)} of {len(seen)} scans saw a mixed state, e.g. {mixed[0]}"
    states = {json.dumps(state) for state in seen if state is not None}
    assert len(states) >= 3 and json.dumps(whole[-1]) in states, f"the scans saw {len(states)} states"


@pytest.mark.parametrize("database, table", [("my db", "a/b%c"), ("dotted.db", "t.1")])
def test_names_a_path_cannot_hold_are_tables_every_reader_finds(tmp_path, database, table):
    relative = f"current/{path_part(database)}/{path_part(table)}/r1-0.parquet"
    commit_files(tmp_path, "r1", {relative: pa.table({"a": [1]})})
    assert catalog.data_files(tmp_path, (database, table)) == [str(tmp_path / relative)]
    assert catalog.tables_of_database(tmp_path, database) == [table]
    assert catalog_rows(tmp_path, (database, table)) == [{"a": 1}]
    location = catalog.metadata_location(tmp_path, (database, table))
    assert catalog.duckdb_connection().sql(f"SELECT a FROM iceberg_scan('{location}')").fetchall() == [(1,)]


def forget_folder_tables(warehouse: Path, metadata_too: bool) -> None:
    """The catalog without the source tables and table_schemas; ``metadata_too``: their Iceberg
    metadata folders gone as well."""
    names = [name for database, table in SOURCE_TABLES
             for name in (catalog.current_table(database, table), catalog.changes_table(database, table))]
    with catalog.connected(warehouse) as tables:
        for name in names + [catalog.identifier("table_schemas")]:
            tables.drop_table(name)
            if metadata_too:
                shutil.rmtree(warehouse / catalog.FOLDER / name[0] / name[1])


def test_a_table_the_catalog_lost_is_refused_not_registered_again(spark, tmp_path):
    """The tables' folders hold their older snapshots' files: registering them whole would double
    rows, so a catalog that lost tables of this layout stops the run."""
    warehouse = tmp_path / "warehouse"
    ingest_file(spark, SAMPLES[0], tmp_path / "source", warehouse)
    before = publish.read_checkpoint(warehouse)
    forget_folder_tables(warehouse, metadata_too=False)
    with pytest.raises(catalog.TableLost, match=r"does not know the tables .*shop\.orders.*nothing was published"):
        ingest_file(spark, SAMPLES[1], tmp_path / "source", warehouse)
    assert publish.read_checkpoint(warehouse) == before


def test_a_warehouse_of_the_earlier_layout_has_its_folders_registered_before_its_next_run(spark, tmp_path, one_run):
    """A warehouse written when ``current``, ``changes`` and ``table_schemas`` were folders only:
    the next run registers them first, folds onto them, and ends where one run of both files does."""
    warehouse = tmp_path / "warehouse"
    ingest_file(spark, SAMPLES[0], tmp_path / "source", warehouse)
    forget_folder_tables(warehouse, metadata_too=True)  # as the earlier version left it: no such tables
    ingest_file(spark, SAMPLES[1], tmp_path / "source", warehouse)
    for database, table in SOURCE_TABLES:
        for name in (catalog.current_table(database, table), catalog.changes_table(database, table)):
            assert multiset(catalog_rows(warehouse, name)) == multiset(catalog_rows(one_run, name)), name
        runs = [snapshot.summary.additional_properties[catalog.RUN_ID] for snapshot in
                catalog.open_catalog(warehouse).load_table(catalog.current_table(database, table)).snapshots()]
        assert runs[0] == catalog.ADOPTED and len(runs) == 2
    assert catalog.adopt(warehouse, publish.read_checkpoint(warehouse)) == {}


def test_the_manifests_of_a_table_runs_append_to_are_merged_once_they_are_many(tmp_path):
    """Each append adds a manifest, and a commit reads them all: past 100 they are merged."""
    for run in range(105):
        commit_files(tmp_path, f"r{run}", {f"changes/d/t/commit_date=1/r{run}-0.parquet": pa.table({"n": [run]})})
    table = catalog.open_catalog(tmp_path).load_table(("d", "t__changes"))
    assert len(table.current_snapshot().manifests(table.io)) < 10
    assert sorted(row["n"] for row in catalog_rows(tmp_path, ("d", "t__changes"))) == list(range(105))
    assert len(catalog.data_files(tmp_path, ("d", "t__changes"))) == 105
