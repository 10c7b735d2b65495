"""Transaction boundaries from the quick scan, on the shared fixtures."""

from __future__ import annotations

import pytest

from binlog_codec.event_types import GTID_TYPES, EventType
from binlog_codec.events import QueryEvent, read
from binlog_codec.transactions import OUTSIDE, scan_transactions
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
    inside = [e.pos for e in events if e.type_code not in OUTSIDE]
    for position in inside:
        assert any(t.start <= position < t.end for t in transactions), position
    assert sum(t.events for t in transactions) == len(inside)


@pytest.mark.parametrize("name", good_files())
def test_each_transaction_keeps_the_event_that_ends_it(name):
    """The scan keeps, per transaction, the header and XID of the event ending at its end (the
    one a full read finds there), and says when that event is a TRANSACTION_PAYLOAD."""
    ending = {event.end_pos: event for event in read(path(name), unwrap_payloads=False)}
    transactions = list(scan_transactions(path(name)))
    for t in transactions:
        event = ending[t.end]
        assert (t.ending.timestamp, t.ending.server_id, t.ending.type_code) == (
            event.header.timestamp, event.header.server_id, event.type_code)
        assert t.xid == (event.xid if event.type_code == EventType.XID else None)
        assert t.payload == (event.type_code == EventType.TRANSACTION_PAYLOAD)
    assert any(t.xid is not None for t in transactions) or not any(
        event.type_code == EventType.XID for event in ending.values())


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
