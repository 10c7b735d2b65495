"""``binlog-codec backup create`` against a real MariaDB server.

The image it writes must hold, for every table of the workload (every column
type, seven charsets), exactly the rows the server returns, decoded with the
table map of the CREATE TABLE stored in the image; its summary must name the
binlog position the snapshot corresponds to; and the image must be what
``backup inspect`` reads back.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from binlog_codec import server_rows
from binlog_codec.backup import ImageType, MetadataKind, read_image
from binlog_codec.backup.create import _with_last, create_image, flavour_of, server_version
from binlog_codec.create_table import table_map_of
from binlog_codec.snapshot_rows import decode_rows
from cli_run import run
from mariadb_workload import TABLES, statements

DATABASE = "backup_create"
OTHER = "backup_create_other"


# -- without a server -------------------------------------------------------------------


def test_server_version_keeps_the_whole_text_and_tells_the_flavour():
    version = server_version("10.11.19-MariaDB-0+deb12u1-log")
    assert (version.major, version.minor, version.release) == (10, 11, 19)
    assert flavour_of(version) == "mariadb"
    assert flavour_of(server_version("8.4.3")) == "mysql"
    with pytest.raises(ValueError, match="major.minor.release"):
        server_version("unknown")


def test_every_table_gets_a_last_chunk_even_without_rows():
    assert list(_with_last([])) == [(b"", True)]
    assert list(_with_last([b"a"])) == [(b"a", True)]
    assert list(_with_last(iter([b"a", b"b", b"c"]))) == [(b"a", False), (b"b", False), (b"c", True)]


def test_create_needs_a_server_and_a_database(capsys, tmp_path):
    with pytest.raises(SystemExit):
        run(capsys, "backup", "create", "--database", "x", tmp_path / "image.bak")  # neither socket nor host
    status, _, err = run(capsys, "backup", "create", "--socket", tmp_path / "none.sock", "--database", "x",
                         tmp_path / "image.bak")
    assert status == 1 and "backup create" in err
    assert not list(tmp_path.iterdir())


# -- against the server -----------------------------------------------------------------


@pytest.fixture(scope="module")
def workload(mariadb):
    mariadb.sql(statements(DATABASE, "FULL"))
    mariadb.sql(f"CREATE DATABASE `{OTHER}`; CREATE TABLE `{OTHER}`.`empty` (id INT PRIMARY KEY); "
                f"CREATE VIEW `{OTHER}`.`a_view` AS SELECT 1 AS one;")
    return mariadb


@pytest.fixture(scope="module")
def image(workload, tmp_path_factory) -> Path:
    """An image of both databases written by the real command, small chunks so that tables span several."""
    path = tmp_path_factory.mktemp("image") / "snapshot.bak"
    done = subprocess.run(
        [sys.executable, "-m", "binlog_codec.cli", "backup", "create", "--socket", str(workload.socket),
         "--database", DATABASE, "--database", OTHER, "--chunk-mb", "0.05", str(path)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "binlog position at the validity point" in done.stdout
    assert f"table 1/{len(TABLES) + 1} {DATABASE}.bytes" in done.stderr  # progress, one line per table
    return path


@pytest.mark.integration
def test_catalogue_and_metadata_name_every_base_table(image):
    with read_image(image) as reader:
        assert [d.name for d in reader.catalogue.databases] == [DATABASE, OTHER]
        assert [t.name for t in reader.catalogue.databases[0].tables] == sorted(t.name for t in TABLES)
        assert [t.name for t in reader.catalogue.databases[1].tables] == ["empty"]  # the view is not a table
        assert reader.header.snapshots[0].image_type == ImageType.CONSISTENT_SNAPSHOT
        assert flavour_of(reader.header.server_version) == "mariadb"
        tables = [item for item in reader.metadata if item.kind == MetadataKind.TABLE]
        assert [item.position for item in tables] == list(range(len(TABLES) + 1))
        assert all(item.create_statement.startswith("CREATE TABLE") for item in tables)
        databases = [item for item in reader.metadata if item.kind == MetadataKind.GLOBAL]
        assert [item.create_statement.split("`")[1] for item in databases] == [DATABASE, OTHER]


@pytest.mark.integration
def test_table_data_are_the_servers_rows(workload, image):
    with read_image(image) as reader:
        statements_by_number = {item.position: item.create_statement for item in reader.metadata
                                if item.kind == MetadataKind.TABLE}
        tables = reader.catalogue.snapshot_tables(1)
        decoded: dict[int, list[dict]] = {number: [] for number in range(len(tables))}
        chunks: dict[int, int] = {number: 0 for number in range(len(tables))}
        maps = {}
        for chunk in reader.table_data():
            db_number, table = tables[chunk.table_number]
            database = reader.catalogue.databases[db_number].name
            table_map = maps.setdefault(
                chunk.table_number, table_map_of(statements_by_number[chunk.table_number], database=database)
            )
            decoded[chunk.table_number] += decode_rows(table_map, chunk.data, flavour="mariadb")
            chunks[chunk.table_number] += 1
        connection = server_rows.connect(workload.socket)
        try:
            for number, (db_number, table) in enumerate(tables):
                database = reader.catalogue.databases[db_number].name
                wanted = list(server_rows.table_rows(connection, database, table.name, maps.get(number) or
                                                     table_map_of(statements_by_number[number], database=database)))
                assert decoded[number] == wanted, table.name
        finally:
            connection.close()
    assert chunks[[t.name for _, t in tables].index("bytes")] > 1  # rows of 1 MiB blobs: a chunk each
    assert chunks[len(tables) - 1] == 1  # the empty table: one empty last chunk


@pytest.mark.integration
def test_summary_is_the_binlog_position_of_the_snapshot(workload, image):
    with read_image(image) as reader:
        summary = reader.summary
    files = [path.name for path in workload.binlog_files()]
    assert summary.binlog_file in files
    # nothing was written between the backup and now: the snapshot is at the end of the log
    status = dict(workload.rows("SHOW MASTER STATUS") and [workload.rows("SHOW MASTER STATUS")[0][:2]])
    assert status == {summary.binlog_file: str(summary.binlog_position)}
    assert summary.vp_time <= summary.end_time


@pytest.mark.integration
def test_inspect_reads_the_image_back(capsys, image):
    status, out, _ = run(capsys, "backup", "inspect", "--json", image)
    report = json.loads(out)
    assert status == 0
    assert all(table["complete"] and table["rows"] is not None for table in report["tables"])
    by_name = {table["table"]: table for table in report["tables"]}
    assert by_name["empty"]["rows"] == 0 and by_name["numbers"]["rows"] > 0


@pytest.mark.integration
def test_a_missing_database_writes_no_image(workload, tmp_path):
    connection = server_rows.connect(workload.socket)
    try:
        with pytest.raises(ValueError, match="does not exist"):
            create_image(tmp_path / "image.bak", connection, ["no_such_database"])
    finally:
        connection.close()
    assert list(tmp_path.iterdir()) == []
