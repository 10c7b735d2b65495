"""Two real MariaDB servers with GTID replication, and a failover.

A workload on the primary (server id 1) reaches the replica (server id 2, ``log_slave_updates``)
over GTID replication; the replica's binlog must hold the primary's transactions with their
GTIDs, in order, with server id 1 in the GTIDs and in the event headers and the original
timestamps. Then the primary is killed with SIGKILL, the replica is promoted, and its own
transactions continue the same domain's sequence under server id 2.

Both servers name their binlogs ``mariadb-bin.NNNNNN``, so after the failover the same file names
exist on both servers with different content: ``FLUSH BINARY LOGS`` is not replicated, so the
replica's files are numbered on their own.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from binlog_codec.events import decode
from binlog_codec.event_types import EventType
from binlog_codec.reader import read_events
from binlog_codec.transactions import scan_transactions

pytestmark = pytest.mark.integration

BINLOG_NAME = re.compile(r"^mariadb-bin\.\d{6}$")
# A fixed past time for one transaction (SET TIMESTAMP): the replica must keep it.
PAST = 1_600_000_000


def gtids(files: list[Path]) -> list[str]:
    """The GTID of every transaction of ``files``, in order."""
    out = []
    for path in files:
        for trx in scan_transactions(path):
            assert trx.complete, f"{path.name}: unfinished transaction at {trx.start}"
            out.append(trx.gtid)
    return out


def gtid_headers(files: list[Path]) -> dict[str, list[tuple[int, int]]]:
    """GTID -> (server id, timestamp) of the header of every event of its transaction."""
    out: dict[str, list[tuple[int, int]]] = {}
    for path in files:
        events = [(raw.pos, raw.header.server_id, raw.header.timestamp) for raw in read_events(path)]
        for trx in scan_transactions(path):
            out[trx.gtid] = [(sid, ts) for pos, sid, ts in events if trx.start <= pos < trx.end]
    return out


def gtid_list_at_start(path: Path) -> list[str]:
    """The GTIDs of the GTID_LIST event that opens ``path``."""
    for raw in read_events(path):
        if raw.type_code == EventType.GTID_LIST:
            return decode(raw).gtids
    raise AssertionError(f"{path.name}: no GTID_LIST event")


def names(files: list[Path]) -> list[str]:
    return [path.name for path in files]


def test_gtids_survive_replication_and_failover(mariadb_pair):
    primary, replica = mariadb_pair

    # -- a workload on the primary, over three binlog files -------------------------------
    primary.sql(
        "CREATE DATABASE shop;\n"
        "CREATE TABLE shop.item (id INT PRIMARY KEY, name VARCHAR(40), qty INT) ENGINE=InnoDB;\n"
        "INSERT INTO shop.item VALUES (1, 'apple', 3), (2, 'pear', 5);\n"
    )
    primary.flush_logs()
    primary.sql(
        "BEGIN;\n"
        "UPDATE shop.item SET qty = qty + 1 WHERE id = 1;\n"
        "INSERT INTO shop.item VALUES (3, 'plum', 7);\n"
        "COMMIT;\n"
        f"SET TIMESTAMP = {PAST};\n"
        "INSERT INTO shop.item VALUES (4, 'fig', 1);\n"
    )
    primary.flush_logs()
    primary.sql("DELETE FROM shop.item WHERE id = 2;\nUPDATE shop.item SET name = 'green apple' WHERE id = 1;\n")

    end = replica.wait_caught_up(primary)
    assert end == primary.gtid_binlog_pos()
    primary_files = primary.binlog_files()
    replica_files = replica.binlog_files()
    assert names(primary_files) == ["mariadb-bin.000001", "mariadb-bin.000002", "mariadb-bin.000003"]
    # FLUSH BINARY LOGS is never replicated: the replica's binlog did not rotate.
    assert names(replica_files) == ["mariadb-bin.000001"]

    # -- the replica's binlog holds the primary's GTIDs, in order, under server id 1 -------------
    primary_gtids = gtids(primary_files)
    n = len(primary_gtids)
    assert primary_gtids == [f"0-1-{seq}" for seq in range(1, n + 1)]
    assert n == 7
    assert end == f"0-1-{n}"
    assert gtids(replica_files) == primary_gtids

    # Every event of a replicated transaction keeps the primary's server id and timestamp.
    on_primary = gtid_headers(primary_files)
    on_replica = gtid_headers(replica_files)
    for gtid in primary_gtids:
        assert {sid for sid, _ in on_replica[gtid]} == {1}, gtid
        assert {ts for _, ts in on_replica[gtid]} == {ts for _, ts in on_primary[gtid]}, gtid
    assert {ts for _, ts in on_replica["0-1-5"]} == {PAST}

    # Each file opens with a GTID_LIST of the binlog state before it; the replica's only file
    # starts empty, like the primary's first.
    assert [gtid_list_at_start(p) for p in primary_files] == [[], ["0-1-3"], ["0-1-5"]]
    assert gtid_list_at_start(replica_files[0]) == []
    assert replica.gtid_binlog_state() == f"0-1-{n}"

    # -- failover: the primary dies, the replica takes over ------------------------------------
    primary.kill()
    assert not primary.is_running()
    replica.promote()
    assert replica.slave_status() == {}
    replica.sql("INSERT INTO shop.item VALUES (5, 'kiwi', 2);\nUPDATE shop.item SET qty = 0 WHERE id = 3;\n")
    replica.flush_logs()
    replica.sql("DELETE FROM shop.item WHERE id = 4;\n")

    new_files = replica.binlog_files()
    assert all(BINLOG_NAME.match(name) for name in names(new_files))
    # The same names as the dead primary's first two files, with different content.
    assert names(new_files) == ["mariadb-bin.000001", "mariadb-bin.000002"]

    after = gtids(new_files)
    assert after[:n] == primary_gtids
    assert after[n:] == [f"0-2-{seq}" for seq in range(n + 1, n + 4)]
    headers = gtid_headers(new_files)
    for gtid in after[n:]:
        assert {sid for sid, _ in headers[gtid]} == {2}, gtid

    assert replica.gtid_binlog_pos() == f"0-2-{n + 3}"
    # The binlog state keeps the last GTID of each (domain, server id): both primaries.
    assert replica.gtid_binlog_state() == f"0-1-{n},0-2-{n + 3}"
    assert gtid_list_at_start(new_files[1]) == [f"0-1-{n}", f"0-2-{n + 2}"]
    assert replica.rows("SELECT id, name, qty FROM shop.item ORDER BY id") == [
        ["1", "green apple", "4"],
        ["3", "plum", "0"],
        ["5", "kiwi", "2"],
    ]
