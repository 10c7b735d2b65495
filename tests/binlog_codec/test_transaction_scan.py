"""The compiled transaction scan (:class:`binlog_codec.frames.TransactionScan`) against the
Python scan it stands in for (:func:`binlog_codec.transactions.scan_events` over the events
the reader frames in Python): the same transactions, every field of them, and the same
errors, for whole files and parts of them, for files cut or with bytes changed anywhere, and
for files made of any sequence of the events that start, end or make up transactions."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_compiled import damaged_copies, fixture_files, require_compiled

from binlog_codec import transactions
from binlog_codec.errors import BinlogError
from binlog_codec.event_types import EventType
from binlog_codec.reader import BinlogReader
from binlog_codec.transactions import scan_events, scan_transactions
from binlog_codec.writer import BinlogWriter, Gtid, gtid_body, query_body

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples").glob("mariadb-bin.*"))
SAMPLE = SAMPLES[0].read_bytes()
FILES = SAMPLES + fixture_files()


@pytest.fixture(scope="module")
def frames():
    require_compiled()
    from binlog_codec import frames

    return frames


def outcome(scan) -> tuple[list, str | None]:
    """The transactions a scan yields and the error that stopped it."""
    found = []
    try:
        found.extend(scan)
    except BinlogError as exc:
        return found, f"{type(exc).__name__}: {exc}"
    return found, None


def python_scan(path, **options) -> tuple[list, str | None]:
    """The outcome of the Python scan over events the reader frames in Python."""
    reader = BinlogReader(path, unwrap_payloads=False, **options)
    reader._event_reader = lambda: reader._read_event
    return outcome(scan_events(reader))


def same_scan(frames, path, **options) -> tuple[list, str | None]:
    """The outcome of the compiled scan of ``path``, checked to be the Python scan's."""
    compiled = outcome(frames.TransactionScan(BinlogReader(path, unwrap_payloads=False, **options)))
    assert compiled == python_scan(path, **options)
    return compiled


def test_scan_transactions_scans_in_c(frames, monkeypatch):
    def python_scan_used(reader):
        raise AssertionError("the compiled build scanned in Python")

    monkeypatch.setattr(transactions, "scan_events", python_scan_used)
    assert list(scan_transactions(SAMPLES[0])) == same_scan(frames, SAMPLES[0])[0]


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
def test_every_file_is_scanned_the_same(frames, path):
    found, _ = same_scan(frames, path)
    same_scan(frames, path, verify_checksums=False)
    if len(found) > 2:
        middle, last = found[len(found) // 2], found[-1]
        same_scan(frames, path, start_position=middle.start, stop_position=last.start)
        same_scan(frames, path, start_position=middle.start, stop_position=middle.end + 1)
    events = [raw.pos for raw in BinlogReader(path, unwrap_payloads=False)] if found else []
    if len(events) > 4:  # from any event to any event, not only at transactions' bounds
        same_scan(frames, path, start_position=events[len(events) // 3], stop_position=events[-2])


def test_the_files_have_every_kind_of_transaction(frames):
    """The files compared above hold what the scan tells apart."""
    outcomes = [same_scan(frames, path) for path in FILES]
    found = [transaction for transactions_found, _ in outcomes for transaction in transactions_found]
    errors = [error for _, error in outcomes if error is not None]
    assert any(t.payload for t in found) and any(t.xid is not None for t in found)
    assert any(t.gtid and ":" in t.gtid for t in found) and any(t.gtid and "-" in t.gtid for t in found)
    assert any(t.gtid is None and t.events > 1 for t in found)  # BEGIN ... COMMIT without GTIDs
    assert any(not t.complete for t in found)
    assert len(errors) >= 3


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=damaged_copies(SAMPLE))
def test_a_damaged_file_is_scanned_and_reported_the_same(frames, tmp_path, case):
    data, verify = case
    path = tmp_path / "damaged.000001"
    path.write_bytes(data)
    same_scan(frames, path, verify_checksums=verify)


def test_a_bad_checksum_is_still_an_error(frames, tmp_path):
    path = tmp_path / "bad-crc.000001"
    path.write_bytes(SAMPLE)
    found, _ = same_scan(frames, path)
    middle = found[len(found) // 2]
    damaged = bytearray(SAMPLE)
    damaged[middle.end - 1] ^= 0xFF  # the last byte of the CRC32 of the event that ends it
    path.write_bytes(bytes(damaged))
    scanned, error = same_scan(frames, path)
    assert error.startswith("ChecksumError") and f"at {middle.end - middle.ending.event_size}" in error
    assert scanned == found[: len(found) // 2]
    assert same_scan(frames, path, verify_checksums=False) == (found, None)


# -- files of any events -----------------------------------------------------------------------

# Statements the scan reads: beginnings and ends in any case and spacing, and look-alikes.
STATEMENTS = [
    "BEGIN", "begin", " \tBegin", "BEGINNING", "XA START 'x'", "xa begin 'x'", "XA  START",
    "COMMIT", "commit work", "\nCOMMIT\t", "COMMITTED", "ROLLBACK", "rollback to s1", "ROLLBACK TO",
    "ROLLBACK\tTO s1", "ROLLBACK TOO", "XA COMMIT 'x'", "xa rollback 'x'", "XA  COMMIT 'x'",
    "INSERT INTO t VALUES (1)", "", "   ", "\x0bCOMMIT", "\rROLLBACK\x0cTO s1", "COMMIT\r",
]
MARIADB_FLAGS = [0, 1, 2, 3, 8, 9, 14, 64, 128]
# How a transaction opens: with a MariaDB GTID (explicit), a BEGIN, or with its first statement.
OPENINGS = {
    "mariadb-gtid": (EventType.MARIADB_GTID, bytes(12) + bytes(7)),
    "begin": (EventType.QUERY, query_body("BEGIN", status_vars={})),
    "statement": (EventType.QUERY, query_body("INSERT INTO t VALUES (1)", database="shop", status_vars={})),
}


def write_events(path: Path, made, server: str = "10.11.6-MariaDB-log", checksum: bool = True, cut: int = 0) -> None:
    """A binlog file of the events ``made`` (type codes and bodies), its last ``cut`` bytes cut off."""
    writer = BinlogWriter(server_version=server, checksum=checksum)
    for code, body in made:
        writer.add(code, body)
    data = writer.bytes()
    path.write_bytes(data[: len(data) - cut])


@pytest.mark.parametrize("opening", OPENINGS)
@pytest.mark.parametrize("statement", STATEMENTS, ids=repr)
def test_each_statement_is_read_the_same(frames, tmp_path, statement, opening):
    path = tmp_path / "statement.000001"
    write_events(path, [OPENINGS[opening], (EventType.QUERY, query_body(statement, status_vars={})),
                        (EventType.TABLE_MAP, bytes(8)), (EventType.XID, bytes(8))])
    assert same_scan(frames, path)[0]


SIDS = ["3e11fa47-71ca-11e1-9e33-c80aa9429562", "00000000-0000-0000-0000-000000000001"]


def mysql_gtid_body(draw) -> bytes:
    """A MySQL GTID body with any of its optional parts, whole, cut short or followed by more bytes."""
    gtid = Gtid(
        sid=draw(st.sampled_from(SIDS)),
        gno=draw(st.integers(1, 1 << 63)),
        last_committed=draw(st.none() | st.integers(0, 99)),
        immediate_commit_timestamp=draw(st.none() | st.integers(0, (1 << 55) - 1)),
        original_commit_timestamp=draw(st.none() | st.integers(0, (1 << 55) - 1)),
        transaction_length=draw(st.none() | st.sampled_from([0, 250, 251, 70_000, 1 << 30, 1 << 40])),
        immediate_server_version=draw(st.none() | st.sampled_from([80040, 90100])),
        original_server_version=draw(st.none() | st.sampled_from([80040, 50700])),
        commit_group_ticket=draw(st.none() | st.integers(0, 1 << 63)),
    )
    body = gtid_body(gtid)
    cut = draw(st.sampled_from([None, None, None, -1, -4, -7, 24, 25, 26, 41, 42]))
    return body[:cut] + draw(st.sampled_from([b"", b"", b"\x00", b"\xfb", b"\xfe\x01", bytes(12)]))


def gtid_event(draw) -> tuple[int, bytes]:
    kind = draw(st.sampled_from(["mysql"] * 3 + ["anonymous"] + ["mariadb"] * 4 + ["tagged", "short"]))
    if kind in ("mysql", "anonymous"):
        return (EventType.GTID if kind == "mysql" else EventType.ANONYMOUS_GTID), mysql_gtid_body(draw)
    if kind == "mariadb":
        body = draw(st.binary(min_size=12, max_size=12)) + bytes([draw(st.sampled_from(MARIADB_FLAGS))])
        return EventType.MARIADB_GTID, body + draw(st.sampled_from([b"", bytes(6), bytes(8)]) | st.binary(max_size=12))
    code = EventType.GTID_TAGGED if kind == "tagged" else draw(st.sampled_from([EventType.GTID, EventType.MARIADB_GTID]))
    return code, draw(st.binary(max_size=30))


@st.composite
def events(draw) -> tuple[int, bytes]:
    """One event (type code and body) of the kinds the scan tells apart, well formed or not."""
    kind = draw(st.sampled_from(["gtid", "gtid", "query", "query", "query", "statement", "xid", "rows", "rows",
                                 "ends", "inside", "outside"]))
    if kind == "gtid":
        return gtid_event(draw)
    if kind == "query":
        text = draw(st.sampled_from(STATEMENTS) | st.text(alphabet="BEGINCOMITRLAXSTO \t\n\r\x0b\x0c", max_size=14))
        body = query_body(text, database=draw(st.sampled_from(["", "shop"])), status_vars={})
        cut = draw(st.sampled_from([None, None, None, 0, 5, 12, 13, 14]))
        return EventType.QUERY, body[:cut]
    if kind == "xid":
        size = draw(st.sampled_from([8, 8, 8, 8, 0, 7, 9]))
        return EventType.XID, draw(st.binary(min_size=size, max_size=size))
    codes = {
        "statement": [EventType.QUERY_COMPRESSED, EventType.EXECUTE_LOAD_QUERY],
        "rows": [EventType.WRITE_ROWS, EventType.UPDATE_ROWS_V1, EventType.DELETE_ROWS_COMPRESSED],
        "ends": [EventType.XA_PREPARE, EventType.TRANSACTION_PAYLOAD],
        "inside": [EventType.TABLE_MAP, EventType.INTVAR, EventType.ANNOTATE_ROWS, 99],
        "outside": [EventType.ROTATE, EventType.GTID_LIST, EventType.STOP, EventType.PREVIOUS_GTIDS],
    }[kind]
    return draw(st.sampled_from(codes)), draw(st.binary(max_size=12))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    made=st.lists(events(), min_size=2, max_size=40),
    server=st.sampled_from(["8.0.40", "10.11.6-MariaDB-log"]),
    checksum=st.booleans(),
    cut=st.sampled_from([0, 0, 0, 1, 5, 20]),
)
def test_any_events_are_scanned_the_same(frames, tmp_path, made, server, checksum, cut):
    path = tmp_path / "made.000001"
    write_events(path, made, server, checksum, cut)
    same_scan(frames, path)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_gtid_is_read_or_refused_the_same(frames, tmp_path, data):
    """GTID events of every shape, each starting a transaction the next XID ends."""
    made = []
    for _ in range(data.draw(st.integers(1, 6))):
        made += [gtid_event(data.draw), (EventType.XID, bytes(8))]
    path = tmp_path / "gtids.000001"
    write_events(path, made)
    same_scan(frames, path)
