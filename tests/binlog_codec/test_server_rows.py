"""``server_rows`` against a real MariaDB server: the binlog is the oracle.

After the workload of every column type, the rows ``table_rows`` reads must be
the rows the binlog's changes replay to, value for value and type for type, and
survive ``snapshot_rows`` unchanged. A consistent snapshot plus the binlog
from its position must give the table as it ends.
"""

from __future__ import annotations

import pytest

from binlog_codec import server_rows
from binlog_codec.create_table import table_map_of
from binlog_codec.rows import read_rows
from binlog_codec.snapshot_rows import decode_rows, encode_rows
from mariadb import binlog_of
from mariadb_workload import TABLES, statements
from test_create_table import show_create
from typed_values import typed

pytestmark = pytest.mark.integration
DATABASE = "server_rows_workload"


def replayed(records, tables: dict[str, dict] | None = None) -> dict[str, dict]:
    """Table -> primary key -> the row the binlog's FULL images leave, applied to ``tables``."""
    tables = {} if tables is None else tables
    for record in records:
        rows = tables.setdefault(record.table, {})
        change = record.change
        if change.before is not None:
            del rows[change.before["id"]]
        if change.after is not None:
            rows[change.after["id"]] = change.after
    return tables


@pytest.fixture(scope="module")
def workload(mariadb):
    """(table maps as logged, rows as replayed from the binlog) after the workload."""
    records = list(read_rows(binlog_of(mariadb, statements(DATABASE, "FULL")), database=DATABASE))
    maps = {}
    for record in records:
        maps.setdefault(record.table, record.table_map)
    return maps, replayed(records)


@pytest.fixture
def connection(mariadb):
    connection = server_rows.connect(mariadb.socket)
    yield connection
    connection.close()


@pytest.mark.parametrize("name", [table.name for table in TABLES])
def test_rows_are_the_values_the_binlog_decodes_to(connection, workload, name):
    maps, tables = workload
    rows = list(server_rows.table_rows(connection, DATABASE, name, maps[name]))
    wanted = [tables[name][key] for key in sorted(tables[name])]
    assert len(rows) == len(wanted) > 1
    assert typed(rows) == typed(wanted)


@pytest.mark.parametrize("name", [table.name for table in TABLES])
def test_rows_survive_the_backup_row_format(mariadb, connection, name, workload):
    """Read against the table map of SHOW CREATE TABLE, as a backup does."""
    table = table_map_of(show_create(mariadb, DATABASE, name), database=DATABASE)
    rows = list(server_rows.table_rows(mariadb.socket, DATABASE, name, table, batch_size=2))
    assert len(rows) > 1
    assert typed(list(decode_rows(table, encode_rows(table, rows)))) == typed(rows)


def test_snapshot_and_the_binlog_after_it_give_the_table(mariadb, connection):
    """Rows committed after the snapshot are not in it; the binlog from its position holds exactly them."""
    mariadb.sql("CREATE DATABASE snap; CREATE TABLE snap.t (id INT PRIMARY KEY, v VARCHAR(10)) CHARSET utf8mb4;"
                "INSERT INTO snap.t VALUES (1, 'before'), (2, 'before');")
    table = table_map_of(show_create(mariadb, "snap", "t"), database="snap")
    position = server_rows.consistent_snapshot(connection)
    mariadb.sql("UPDATE snap.t SET v = 'after' WHERE id = 2; INSERT INTO snap.t VALUES (3, 'after');")
    snapshot = list(server_rows.table_rows(connection, "snap", "t", table))
    connection.commit()
    assert snapshot == [{"id": 1, "v": "before"}, {"id": 2, "v": "before"}]

    mariadb.flush_logs()
    binlog = mariadb.binlog_dir / position.file
    changes = [r for r in read_rows(binlog, database="snap", start_position=position.position)]
    state = replayed(changes, {"t": {row["id"]: row for row in snapshot}})["t"]
    assert [c.kind for c in changes] == ["update", "insert"]
    now = list(server_rows.table_rows(mariadb.socket, "snap", "t", table))
    assert [state[key] for key in sorted(state)] == now == [
        {"id": 1, "v": "before"}, {"id": 2, "v": "after"}, {"id": 3, "v": "after"}
    ]

