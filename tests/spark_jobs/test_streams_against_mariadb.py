"""A stream never loses or repeats a transaction, whatever happens to its source: real MariaDB servers.

Each case ends either with ``current`` equal to ``SELECT *`` on the server (read
with DuckDB, as users read it) or with a refusal naming the problem while the
warehouse stays exactly as it was:

* a gap in the archive, filled by a compressed copy (read in its place), left
  by a deleted file (refused, naming the file and the GTID range; goes on only
  with ``accept gap``), or by a file that only looks like a binlog;
* ``RESET MASTER`` on the source, whose new files reuse the old names;
* a file already read, overwritten with other bytes;
* the same files under a second prefix;
* a failover: the primary dies with its last file never archived, its replica
  is promoted, and the stream goes on from the new primary's binlogs by GTID.
"""

from __future__ import annotations

import gzip
import shutil
import time
from pathlib import Path

import duckdb
import pytest

from mariadb import MariaDBServer, free_port
from spark_jobs.ingest import RUNS_FOLDER, ingest
from spark_jobs.positions import ContinuityError
from spark_jobs.streams import AlreadyIngested, GtidHole, GtidsReused
from warehouse import catalog, publish

pytestmark = pytest.mark.integration

DATABASE = "streams_e2e"
TABLES = {"kv": "id, v", "events": "n, note"}  # a table with a primary key, a keyless one


def start_database(server: MariaDBServer) -> None:
    server.sql(f"DROP DATABASE IF EXISTS {DATABASE}; CREATE DATABASE {DATABASE};"
               f"CREATE TABLE {DATABASE}.kv (id INT PRIMARY KEY, v VARCHAR(40));"
               f"CREATE TABLE {DATABASE}.events (n INT, note VARCHAR(40));")


def write(server: MariaDBServer, files: int, label: str, per_file: int = 6) -> list[str]:
    """``files`` binlog files of transactions (upserts, keyless inserts, an update and a delete
    each), each file closed by a flush; returns their names."""
    first = server.current_binlog().name
    for number in range(files):
        statements = []
        for k in range(per_file):
            key = (number * per_file + k) % 9
            statements.append(
                f"BEGIN; INSERT INTO kv VALUES ({key}, '{label}-{number}-{k}') ON DUPLICATE KEY UPDATE v = "
                f"'{label}-{number}-{k}'; INSERT INTO events VALUES ({number * per_file + k}, '{label}'); COMMIT;")
        statements.append(f"UPDATE kv SET v = CONCAT(v, '+') WHERE id % 3 = {number % 3}; DELETE FROM kv WHERE id = 8;")
        server.sql("\n".join(statements), database=DATABASE)
        server.flush_logs()
    names = [path.name for path in server.binlog_files()]
    return names[names.index(first):-1]


def archive(server: MariaDBServer, names: list[str], folder: Path) -> Path:
    """Copy the server's binlog files ``names`` into ``folder``, as an archiver would."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copyfile(server.binlog_dir / name, folder / name)
    return folder


def current(warehouse: Path, table: str) -> list[tuple]:
    """``current`` of a table as users read it (DuckDB's Iceberg reader, through the catalog), as
    text, sorted."""
    location = catalog.metadata_location(warehouse, catalog.current_table(DATABASE, table))
    query = f"SELECT {TABLES[table]} FROM iceberg_scan('{location}')"
    return sorted(tuple(str(value) for value in row) for row in catalog.duckdb_connection().sql(query).fetchall())


def on_server(server: MariaDBServer, table: str) -> list[tuple]:
    return sorted(tuple(row) for row in server.rows(f"SELECT {TABLES[table]} FROM {DATABASE}.{table}"))


def assert_current_is_the_server(warehouse: Path, server: MariaDBServer) -> None:
    for table in TABLES:
        assert current(warehouse, table) == on_server(server, table), table


def visible(warehouse: Path) -> dict[str, bytes]:
    """Every published file of the warehouse and its bytes (not the work folders, the lock or refusals)."""
    return {str(p.relative_to(warehouse)): p.read_bytes() for p in sorted(warehouse.rglob("*"))
            if p.is_file() and p.relative_to(warehouse).parts[0] not in (RUNS_FOLDER, "_lock", "_refusals")}


def refused(spark, source: Path, warehouse: Path, error: type[ContinuityError], match: str, **options):
    """Ingest, expect the refusal ``error`` matching ``match``, and nothing published."""
    before = visible(warehouse)
    with pytest.raises(error, match=match) as raised:
        ingest(str(source), str(warehouse), spark=spark, validation=False, **options)
    assert visible(warehouse) == before
    return raised.value


@pytest.fixture
def server(tmp_path):
    """A private server of our own: some cases reset its binary log."""
    own = MariaDBServer(tmp_path / "server", port=free_port()).start()
    try:
        start_database(own)
        yield own
    finally:
        own.stop()


def test_a_compressed_file_in_the_archive_is_read_in_its_place(spark, server, tmp_path):
    names = write(server, 5, "gz")
    source, warehouse = archive(server, names[:3], tmp_path / "source"), tmp_path / "warehouse"
    assert ingest(str(source), str(warehouse), spark=spark, validation=False).run_id
    with gzip.open(source / f"{names[3]}.gz", "wb") as packed:
        packed.write((server.binlog_dir / names[3]).read_bytes())
    archive(server, names[4:], source)
    result = ingest(str(source), str(warehouse), spark=spark, validation=False)
    assert [Path(i.path).name for i in result.inputs] == names[3:]
    assert not (warehouse / RUNS_FOLDER).exists()  # the decompressed copy is gone with the published run
    assert_current_is_the_server(warehouse, server)


def test_a_deleted_file_stops_the_run_naming_it_until_the_gap_is_accepted(spark, server, tmp_path):
    names = write(server, 5, "gap")
    source, warehouse = archive(server, names[:3], tmp_path / "source"), tmp_path / "warehouse"
    ingest(str(source), str(warehouse), spark=spark, validation=False)
    archive(server, names[4:], source)
    (source / f"{names[3]}.gz").write_bytes(b"not gzip at all")  # an archiver's broken copy: reported, not read
    error = refused(spark, source, warehouse, GtidHole, rf"{names[4]} starts after .*0-1-\d+\.\.0-1-\d+ are in no file")
    assert names[3] in str(error) and "--accept-gap" in error.way_forward
    checkpoint = publish.read_checkpoint(warehouse)[str(source.resolve())]
    assert checkpoint["file"] == names[2]
    result = ingest(str(source), str(warehouse), spark=spark, validation=False, accept=["gap"])
    assert result.notices == [f"{names[3]}.gz: named like a compressed binlog but its bytes start "
                              "6e 6f 74 20, not 1f 8b; not read"]
    assert "GTID gap" in result.accepted[0] and names[4] in result.accepted[0]
    record = duckdb.sql(f"SELECT accepted, continuity FROM read_parquet('{warehouse}/metadata/runs/*.parquet', "
                        f"union_by_name = true) WHERE run_id = '{result.run_id}'").fetchall()
    assert record == [(result.accepted, "gtid")]  # the decision is kept with the run
    lost = int(server.rows(f"SELECT COUNT(*) FROM {DATABASE}.events")[0][0]) - len(current(warehouse, "events"))
    assert lost == 6  # the accepted gap's inserts, and nothing else


def test_reset_master_reusing_names_is_refused_then_read_as_a_new_series_on_request(spark, server, tmp_path):
    names = write(server, 3, "old")
    source, warehouse = archive(server, names, tmp_path / "source"), tmp_path / "warehouse"
    ingest(str(source), str(warehouse), spark=spark, validation=False)
    time.sleep(1.1)  # a new second: the reused GTIDs' transactions are told apart by their commit time
    server.sql("RESET MASTER")
    reused = write(server, 4, "new")
    assert set(reused[:3]) == set(names)  # the same names, other files
    archive(server, reused, source)
    error = refused(spark, source, warehouse, GtidsReused, r"RESET MASTER")
    assert "--accept-new-series" in error.way_forward
    result = ingest(str(source), str(warehouse), spark=spark, validation=False, accept=["new-series"])
    assert "new series" in result.accepted[0]
    assert_current_is_the_server(warehouse, server)


def test_an_overwritten_file_is_noticed_and_the_gtid_set_decides(spark, mariadb, tmp_path):
    """A file read before now holds other bytes: the log still goes on from the checkpoint by
    GTID, so the run goes on, saying so; the rows are exactly the server's."""
    start_database(mariadb)
    names = write(mariadb, 4, "over")
    source, warehouse = archive(mariadb, names[:2], tmp_path / "source"), tmp_path / "warehouse"
    ingest(str(source), str(warehouse), spark=spark, validation=False)
    shutil.copyfile(mariadb.binlog_dir / names[3], source / names[0])
    archive(mariadb, names[2:], source)
    result = ingest(str(source), str(warehouse), spark=spark, validation=False)
    assert any(names[0] in notice and "other bytes" in notice for notice in result.notices)
    assert [Path(i.path).name for i in result.inputs] == names[2:]
    assert_current_is_the_server(warehouse, mariadb)


def test_the_same_files_under_a_second_prefix_are_not_ingested_twice(spark, mariadb, tmp_path):
    start_database(mariadb)
    names = write(mariadb, 2, "twice")
    first, warehouse = archive(mariadb, names, tmp_path / "a"), tmp_path / "warehouse"
    ingest(str(first), str(warehouse), spark=spark, validation=False)
    second = archive(mariadb, names, tmp_path / "b")
    error = refused(spark, second, warehouse, AlreadyIngested, rf"{names[0]} .* was read by the stream")
    assert str(first.resolve()) in error.way_forward
    again = ingest(str(second), str(warehouse), spark=spark, validation=False, stream=str(first.resolve()))
    assert again.run_id == ""  # the stream knows them: nothing new
    assert_current_is_the_server(warehouse, mariadb)  # the keyless table is not doubled


def test_failover_to_the_promoted_replica_goes_on_by_gtid_each_transaction_once(spark, mariadb_pair, tmp_path):
    primary, replica = mariadb_pair
    start_database(primary)
    names = write(primary, 3, "primary")
    unarchived = "BEGIN; INSERT INTO events VALUES (1000, 'never archived'); COMMIT;"
    primary.sql(unarchived, database=DATABASE)  # in the primary's last file, which is never archived
    replica.wait_caught_up(primary)
    stream, warehouse = "orders-db", tmp_path / "warehouse"
    ingest(str(archive(primary, names, tmp_path / "primary")), str(warehouse), spark=spark, validation=False,
           stream=stream)
    primary.kill()
    replica.promote()
    write(replica, 2, "replica")
    replica_files = [path.name for path in replica.binlog_files()]
    new_primary = archive(replica, replica_files, tmp_path / "replica")
    middle = new_primary / replica_files[1]  # purged before it was archived
    kept = middle.read_bytes()
    middle.unlink()
    error = refused(spark, new_primary, warehouse, GtidHole, r"0-2-\d+\.\.0-2-\d+ are in no file", stream=stream)
    assert replica_files[1] in str(error)
    middle.write_bytes(kept)
    result = ingest(str(new_primary), str(warehouse), spark=spark, validation=False, stream=stream)
    assert result.skipped_transactions > 0 and result.continuity == "gtid"
    assert_current_is_the_server(warehouse, replica)
    assert ("1000", "never archived") in current(warehouse, "events")
    changes = f"iceberg_scan('{catalog.metadata_location(warehouse, catalog.changes_table(DATABASE, 'events'))}')"
    reader = catalog.duckdb_connection()
    twice = reader.sql(f"SELECT _gtid, COUNT(*) FROM {changes} GROUP BY _gtid HAVING COUNT(*) > 1").fetchall()
    assert twice == []  # each transaction inserts one events row: each GTID once
    assert reader.sql(f"SELECT COUNT(*) FROM {changes}").fetchall() == [(len(on_server(replica, "events")),)]
