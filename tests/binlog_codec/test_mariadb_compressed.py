"""MariaDB's compressed events (log_bin_compress) from a real server, read back exactly."""

from __future__ import annotations

import pytest

from binlog_codec.event_types import EventType
from binlog_codec.events import QueryEvent, RowsEvent, TableMapEvent, read
from binlog_codec.transactions import scan_transactions

pytestmark = pytest.mark.integration

LONG_TEXT = "compressed row text " * 40


def test_compressed_query_and_rows_events(mariadb):
    mariadb.flush_logs()
    mariadb.sql(
        "SET GLOBAL log_bin_compress=ON; SET GLOBAL log_bin_compress_min_len=10;"
    )
    try:
        mariadb.sql(
            "CREATE DATABASE IF NOT EXISTS zipped;"
            "CREATE TABLE zipped.notes (id INT PRIMARY KEY, body TEXT, n BIGINT UNSIGNED) ENGINE=InnoDB;"
            f"INSERT INTO zipped.notes VALUES (1, '{LONG_TEXT}', 18446744073709551615), (2, 'short', 0);"
            "UPDATE zipped.notes SET body = CONCAT(body, '!') WHERE id = 1;"
            "DELETE FROM zipped.notes WHERE id = 2;"
        )
        binlog = mariadb.current_binlog()
        mariadb.flush_logs()
    finally:
        mariadb.sql("SET GLOBAL log_bin_compress=OFF")

    events = list(read(binlog))
    kinds = [e.type_code for e in events]
    assert EventType.QUERY_COMPRESSED in kinds
    compressed_rows = [e for e in events if isinstance(e, RowsEvent) and e.type_code >= EventType.WRITE_ROWS_COMPRESSED_V1]
    assert [e.kind for e in compressed_rows] == ["insert", "update", "delete"]
    queries = [e.query for e in events if isinstance(e, QueryEvent) and e.type_code == EventType.QUERY_COMPRESSED]
    assert any("CREATE TABLE zipped.notes" in q for q in queries)
    table_map = next(e for e in events if isinstance(e, TableMapEvent) and e.table == "notes")
    for rows in compressed_rows:
        assert rows.table_id == table_map.table_id and rows.column_count == 3
    # the inserted text survives decompression inside the row bytes
    assert LONG_TEXT.encode() in compressed_rows[0].rows
    transactions = list(scan_transactions(binlog))
    assert all(t.complete for t in transactions)
    assert len([t for t in transactions if t.gtid]) == 5
