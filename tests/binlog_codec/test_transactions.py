"""Transaction boundaries from the quick scan, on the shared fixtures."""

from __future__ import annotations

import pytest

from binlog_codec.event_types import GTID_TYPES, EventType
from binlog_codec.events import QueryEvent, read
from binlog_codec.transactions import _OUTSIDE, scan_transactions
from fixture_facts import expected, files_with_measured, good_files, path


def _check_ordered(transactions):
    for before, after in zip(transactions, transactions[1:]):
        assert before.end <= after.start
    assert all(t.start < t.end for t in transactions)


@pytest.mark.parametrize("name", files_with_measured("gtids"))
def test_each_gtid_starts_one_transaction(name):
    gtids = expected()[name]["measured"]["gtids"]
    transactions = list(scan_transactions(path(name)))
    assert [t.start for t in transactions] == [g["offset"] for g in gtids]
    assert [t.gtid for t in transactions] == [g.get("gtid", g.get("mariadb_gtid")) for g in gtids]
    _check_ordered(transactions)


@pytest.mark.parametrize("name", good_files())
def test_transactions_cover_every_commit(name):
    events = list(read(path(name), unwrap_payloads=False))
    transactions = list(scan_transactions(path(name)))
    _check_ordered(transactions)
    ends = {t.end for t in transactions}
    for event in events:
        if event.type_code in (EventType.XID, EventType.TRANSACTION_PAYLOAD):
            assert event.end_pos in ends
        if isinstance(event, QueryEvent) and event.query.upper() in ("COMMIT", "ROLLBACK"):
            assert event.end_pos in ends
        if event.type_code in GTID_TYPES:
            assert event.pos in {t.start for t in transactions}
    inside = [e.pos for e in events if e.type_code not in _OUTSIDE]
    for position in inside:
        assert any(t.start <= position < t.end for t in transactions), position
    assert sum(t.events for t in transactions) == len(inside)


def test_statement_log_without_gtids():
    name = "blackbeam__rust_mysql_common/binlog_transaction.000001"
    transactions = list(scan_transactions(path(name)))
    assert [(t.start, t.end, t.events) for t in transactions if t.events > 1] == [
        (299, 580, 4),
        (781, 1107, 4),
        (1302, 1626, 4),
    ]
    savepoints = list(scan_transactions(path("blackbeam__rust_mysql_common/binlog_savepoint.000001")))
    assert [(t.start, t.end, t.events) for t in savepoints] == [(252, 1014, 9)]  # ROLLBACK TO does not end it
    assert all(t.complete for t in transactions)


def test_unfinished_transaction_at_end_of_file(tmp_path):
    name = "osheroff__mysql-binlog-connector-java/mysql-bin.aurora-padding"  # ends right after BEGIN
    transactions = list(scan_transactions(path(name)))
    assert [(t.start, t.end, t.complete) for t in transactions] == [(216, 1294, False)]
