"""``binlog-codec``'s selection options: datetimes (:mod:`binlog_codec.cli_time`), GTID sets and
``--database`` (:mod:`binlog_codec.cli_select`), and the usage errors of contradictory ones.

The datetime window is checked against a transcription of ``mysqlbinlog``'s own
per-event rule (``client/mysqlbinlog.cc``, ``process_event``); GTID filters
against the transactions ``binlog-codec transactions`` finds without them.
``test_cli_habits_against_mariadb.py`` compares all of them with mariadb-binlog.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlog_codec.cli import main
from binlog_codec.cli_select import gtid_set_option
from binlog_codec.cli_time import TimeWindow, event_time, parse_datetime
from binlog_codec.event_types import EventType
from binlog_codec.transactions import OUTSIDE
from cli_run import run
from fixture_facts import path
from test_gtid_set import by_gtids, mariadb_elements, mysql_elements

PROPERTIES = settings(max_examples=200, deadline=None)
REPO = Path(__file__).resolve().parents[2]
SAMPLES = [str(REPO / "samples" / "mariadb-bin.000001"), str(REPO / "samples" / "mariadb-bin.000002")]
WITH_GTID = str(path("blackbeam__rust_mysql_common/binlog_transaction_with_GTID.000001"))
WITH_TAG = str(path("blackbeam__rust_mysql_common/binlog_transaction_with_GTID_TAG.000001"))
ANONYMOUS = str(path("blackbeam__rust_mysql_common/binlog_transaction_with_anonymous_GTID.000001"))
COMPRESSED = str(path("blackbeam__rust_mysql_common/transaction_compression.000001"))  # one TRANSACTION_PAYLOAD
UUID = "006c2cf2-b1ea-11e4-9057-8c705a3d3e78"
TAGGED_UUID = "55778904-0299-11f1-b1b8-4ef0c4956feb"


# -- datetimes ---------------------------------------------------------------------------


@contextmanager
def time_zone(zone: str):
    """The process's local time zone is ``zone`` (a POSIX TZ) inside the block."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


@PROPERTIES
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_an_events_time_reads_back_as_the_same_instant(timestamp):
    text = event_time(timestamp)
    assert text.endswith("Z") and len(text) == 20
    for zone in ("UTC", "UTC-9", "UTC+5"):
        with time_zone(zone):
            assert parse_datetime(text) == timestamp


@PROPERTIES
@given(st.integers(min_value=0, max_value=2**31 - 1), st.sampled_from(["UTC", "UTC-9", "UTC+5", "UTC-5:30"]))
def test_a_datetime_without_an_offset_is_local_time(timestamp, zone):
    with time_zone(zone):
        assert parse_datetime(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))) == timestamp


def test_offsets_and_dates():
    with time_zone("UTC-9"):  # nine hours ahead of UTC
        assert parse_datetime("2024-05-01 19:00:00") == parse_datetime("2024-05-01T10:00:00Z") == 1714557600
        assert parse_datetime("2024-05-01 19:00:00+09:00") == parse_datetime("2024-05-01T05:00:00-05:00")
        assert parse_datetime("2024-05-02") == parse_datetime("2024-05-01T15:00:00Z")


@pytest.mark.parametrize(
    "text", ["2024-05-01 10:00", "yesterday", "2024-13-01 00:00:00", "2024-05-01 10:00:00.5", "", " 2024-05-01"]
)
def test_what_is_no_datetime(text):
    with pytest.raises(ValueError, match="date and time"):
        parse_datetime(text)


class Header(NamedTuple):
    timestamp: int


class Raw(NamedTuple):
    pos: int
    type_code: int
    header: Header


FDE = EventType.FORMAT_DESCRIPTION
TIMES = st.integers(min_value=0, max_value=20)
files_of_events = st.lists(
    st.lists(st.tuples(st.sampled_from([FDE, EventType.QUERY, EventType.XID, EventType.ROTATE]), TIMES), max_size=8),
    min_size=1, max_size=3,
).map(lambda files: [
    [Raw(4 + 10 * n, code, Header(when)) for n, (code, when) in enumerate([(FDE, times[0][1] if times else 0), *times])]
    for times in files
])


def mysqlbinlog_shows(files: list[list[Raw]], start: int | None, stop: int | None) -> list[tuple[int, int]]:
    """The events mysqlbinlog prints with these datetimes: ``process_event`` transcribed (an
    event at or after the start, or a format description, goes on; the first one on that is
    at or after the stop ends the run)."""
    shown, started = [], start is None
    for index, events in enumerate(files):
        for raw in events:
            fde = raw.type_code == FDE
            if not (fde or started or raw.header.timestamp >= start):
                continue
            started = started or not fde
            if stop is not None and raw.header.timestamp >= stop:
                return shown
            shown.append((index, raw.pos))
    return shown


def window_shows(files: list[list[Raw]], start: int | None, stop: int | None) -> list[tuple[int, int]]:
    """The events within the byte ranges :class:`TimeWindow` gives, file by file."""
    window, shown = TimeWindow(start, stop), []
    for index, events in enumerate(files):
        span = window.span(events, None, None)
        if span is not None:
            first, last = span
            shown += [(index, raw.pos) for raw in events if (first is None or raw.pos >= first) and (last is None or raw.pos < last)]
    return shown


@PROPERTIES
@given(files_of_events, st.none() | TIMES, st.none() | TIMES)
def test_the_window_is_mysqlbinlogs_rule(files, start, stop):
    """The same events, format descriptions aside: mysqlbinlog prints each file's whatever its
    time, to decode what follows; binlog-codec shows those the window holds."""
    if start is not None and stop is not None and start > stop:
        start, stop = stop, start
    fdes = {(index, raw.pos) for index, events in enumerate(files) for raw in events if raw.type_code == FDE}
    want = [event for event in mysqlbinlog_shows(files, start, stop) if event not in fdes]
    assert [event for event in window_shows(files, start, stop) if event not in fdes] == want


def test_format_descriptions_do_not_start_the_window_but_stop_it():
    first = [Raw(4, FDE, Header(9)), Raw(14, EventType.QUERY, Header(1)), Raw(24, EventType.QUERY, Header(6))]
    second = [Raw(4, FDE, Header(8)), Raw(14, EventType.QUERY, Header(2))]
    window = TimeWindow(5, None)
    assert window.span(first, None, None) == (24, None)
    assert window.span(second, None, None) == (None, None)  # started: every event after
    window = TimeWindow(None, 7)
    assert window.span(first, 4, None) is None and window.stopped  # nothing, and no file after
    assert window.span(second, None, None) is None
    window = TimeWindow(None, 7)
    assert window.span(first[1:], 14, None) == (14, None)
    assert window.span(second, None, 1000) is None and window.stopped  # its format description is at 8


# -- the datetime options on the command line --------------------------------------------


def _usage_error(capsys, *args) -> str:
    """The last stderr line of ``binlog-codec ARGS``, which must be a usage error."""
    with pytest.raises(SystemExit) as caught:
        main([str(a) for a in args])
    assert caught.value.code == 2
    return capsys.readouterr().err.splitlines()[-1]


@pytest.mark.parametrize("command", ["events", "rows", "transactions"])
def test_contradictory_options_are_usage_errors(capsys, command):
    assert _usage_error(
        capsys, command, "--start-datetime", "2024-05-01 10:00:01Z", "--stop-datetime", "2024-05-01T10:00:00Z", SAMPLES[0]
    ) == (
        f"binlog-codec {command}: error: --start-datetime 2024-05-01T10:00:01Z is after --stop-datetime 2024-05-01T10:00:00Z"
    )
    assert _usage_error(capsys, command, "--start-position", 2122, "--stop-position", 1052, SAMPLES[0]) == (
        f"binlog-codec {command}: error: --start-position 2122 is after --stop-position 1052 in the one FILE"
    )
    assert run(capsys, command, "--start-position", 2122, "--stop-position", 1052, *SAMPLES)[0] == 0
    assert _usage_error(capsys, command, "--start-datetime", "yesterday", SAMPLES[0]) == (
        f"binlog-codec {command}: error: argument --start-datetime: a date and time is YYYY-MM-DD HH:MM:SS "
        "(local time) or YYYY-MM-DD HH:MM:SSZ / +HH:MM, not 'yesterday'"
    )
    assert _usage_error(capsys, command, "--include-gtids", "0-1-x", SAMPLES[0]).startswith(
        f"binlog-codec {command}: error: argument --include-gtids: malformed MariaDB GTID set '0-1-x': "
    )
    assert _usage_error(capsys, command, "--include-gtids", f"{UUID}:1", "--exclude-gtids", "0-1-2", SAMPLES[0]) == (
        f"binlog-codec {command}: error: --include-gtids and --exclude-gtids are GTID sets of different flavours "
        "(MySQL and MariaDB)"
    )


def test_help_names_the_time_zone(capsys):
    with pytest.raises(SystemExit):
        main(["events", "--help"])
    help_text = "".join(capsys.readouterr().out.split())
    assert "YYYY-MM-DDHH:MM:SSinthelocaltimezone(TZ),asmariadb-binlogreadsit,orwithZor+HH:MM" in help_text


def test_stop_datetime_on_a_sample(capsys):
    """Every event of the samples is of 20:01:59 but the second file's last two (20:02:00)."""
    status, out, _ = run(capsys, "events", "--json", "--stop-datetime", "2026-11-21T20:02:00Z", *SAMPLES)
    shown = [(Path(e["file"]).name, e["pos"], e["time"]) for e in map(json.loads, out.splitlines())]
    assert status == 0 and shown[-1] == ("mariadb-bin.000002", 2173, "2026-11-21T20:01:59Z")
    assert len(shown) == len(run(capsys, "events", "--json", *SAMPLES)[1].splitlines()) - 2
    status, out, _ = run(capsys, "events", "--json", "--start-datetime", "2026-11-21T20:02:00Z", *SAMPLES)
    assert [(Path(e["file"]).name, e["pos"]) for e in map(json.loads, out.splitlines())] == [
        ("mariadb-bin.000002", 2204), ("mariadb-bin.000002", 2249)
    ]


# -- GTID sets -----------------------------------------------------------------------------


@PROPERTIES
@given(st.sampled_from(["mysql", "mariadb"]).flatmap(
    lambda flavour: (mysql_elements if flavour == "mysql" else mariadb_elements).map(lambda e: by_gtids(flavour, e))
))
def test_a_gtid_set_option_is_read_in_the_flavour_of_its_text(gtids):
    if gtids:  # the empty text is MariaDB's empty set
        assert gtid_set_option(str(gtids)) == gtids


def _json(capsys, *args) -> list[dict]:
    status, out, err = run(capsys, *args)
    assert status == 0, err
    return [json.loads(line) for line in out.splitlines()]


def _kept(capsys, files: list[str], option: str, text: str) -> list[tuple]:
    """What the GTID option keeps of ``files``' events: the events outside transactions, and the
    events of the transactions (as ``transactions`` finds them) whose GTID is, or is not, in the set."""
    gtids = gtid_set_option(text)
    kept_transactions = [
        (t["file"], t["start"], t["end"])
        for t in _json(capsys, "transactions", "--json", *files)
        if (t["gtid"] is not None and t["gtid"] in gtids) == (option == "--include-gtids")
    ]
    return [
        (e["file"], e["pos"], e["inner_offset"])
        for e in _json(capsys, "events", "--json", *files)
        if e["type_code"] in OUTSIDE or any(f == e["file"] and s <= e["pos"] < end for f, s, end in kept_transactions)
    ]


@pytest.mark.parametrize(
    "files, option, text",
    [
        ([WITH_GTID], "--include-gtids", f"{UUID}:2"),
        ([WITH_GTID], "--exclude-gtids", f"{UUID}:1:3"),
        ([WITH_TAG], "--include-gtids", f"{TAGGED_UUID}:mytag:1-3"),
        ([WITH_TAG], "--include-gtids", f"{TAGGED_UUID}:1-3"),  # untagged: another GTID
        ([ANONYMOUS], "--exclude-gtids", f"{UUID}:1-100"),
        ([COMPRESSED], "--include-gtids", f"{UUID}:1-100"),  # the payload's inner events go with it
        (SAMPLES, "--include-gtids", "0-1-3..5,0-1-8..8"),
        (SAMPLES, "--exclude-gtids", "0-1-7"),
    ],
)
def test_gtid_sets_keep_or_drop_whole_transactions(capsys, files, option, text):
    want = _kept(capsys, files, option, text)
    assert [(e["file"], e["pos"], e["inner_offset"]) for e in _json(capsys, "events", "--json", option, text, *files)] == want
    want_rows = {(file, pos) for file, pos, _ in want}
    all_rows = _json(capsys, "rows", *files)
    assert _json(capsys, "rows", option, text, *files) == [r for r in all_rows if (r["file"], r["pos"]) in want_rows]


def test_transactions_by_gtid_and_position(capsys):
    def starts(*args):
        return [t["start"] for t in _json(capsys, "transactions", "--json", *args)]

    assert starts(WITH_GTID) == [151, 297, 603]
    assert starts("--include-gtids", f"{UUID}:1-2", WITH_GTID) == [151, 297]
    assert starts("--exclude-gtids", f"{UUID}:2", WITH_GTID) == [151, 603]
    assert starts("--start-position", 297, "--stop-position", 603, WITH_GTID) == [297]
    assert starts("--include-gtids", f"{UUID}:1-100", ANONYMOUS) == []


def test_a_gtid_set_of_the_other_flavour_is_a_usage_error(capsys):
    status, out, err = run(capsys, "rows", "--include-gtids", "0-1-1", WITH_TAG)
    assert status == 2 and out == ""
    assert err == (
        f"binlog-codec: {WITH_TAG}: --include-gtids is a MariaDB GTID set, and this binlog logs MySQL GTIDs "
        f"({TAGGED_UUID}:mytag:3)\n"
    )
    status, _, err = run(capsys, "events", "--exclude-gtids", f"{UUID}:1", SAMPLES[0])
    assert status == 2 and "--exclude-gtids is a MySQL GTID set, and this binlog logs MariaDB GTIDs (0-1-1)" in err


# -- --database ----------------------------------------------------------------------------


def test_database_keeps_the_table_maps_and_rows_events_of_its_tables(capsys):
    everything = _json(capsys, "events", "--json", *SAMPLES)
    assert _json(capsys, "events", "--json", "--database", "shop", *SAMPLES) == everything
    rows_events = {"TABLE_MAP", "WRITE_ROWS_V1", "UPDATE_ROWS_V1", "DELETE_ROWS_V1"}
    others = [e for e in everything if e["type"] not in rows_events]
    assert len(others) < len(everything)
    assert _json(capsys, "events", "--json", "--database", "nope", *SAMPLES) == others
    assert _json(capsys, "rows", "--database", "nope", *SAMPLES) == []
