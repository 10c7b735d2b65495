"""binlog-codec's mysqlbinlog habits against mariadb-binlog on the same MariaDB-written binlogs.

A workload whose statements carry chosen times (``SET timestamp``: times that
go back inside and between transactions, a transaction whose COMMIT is later
than its rows, a jump back of two days), two databases, a second GTID domain
and a second server id is logged over two files. For each way of selecting
(``--start-datetime`` / ``--stop-datetime``, positions with datetimes, GTID
sets against mariadb-binlog's GTID positions and domain filters, ``--database``
against ``-d``, standard input and gzip), the table maps and rows events
``binlog-codec events`` shows, and the rows events ``binlog-codec rows`` reads,
are those mariadb-binlog prints. Both tools run with ``TZ=UTC``.

mariadb-binlog prints a ``# at N`` line for events it filters out, so what it
printed is read from its event header lines (``#YYMMDD HH:MM:SS server id N
end_log_pos M``): ``end_log_pos`` names the event, whose start and type come
from the file's own framing (:func:`mariadb.raw_frames`).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

import pytest

from mariadb import HEADER_RE, REPO_ROOT, ROWS_TYPES, mariadb_binlog_path, raw_frames, run_mariadb_binlog

pytestmark = pytest.mark.integration

TABLE_MAP = 19
MARIADB_GTID = 162
ROW_EVENTS = {TABLE_MAP: "TABLE_MAP", **{code: "ROWS" for code in ROWS_TYPES}}
DAY = 86400
WHOLE_DOMAIN = 2**64 - 1  # the largest seq_no: D-S-WHOLE_DOMAIN holds all of domain D

# The first file has no ANNOTATE_ROWS events: a statement's table map is its first event.
FIRST_FILE = """
SET SESSION binlog_annotate_row_events = OFF;
SET timestamp = {T};
CREATE DATABASE habits_shop;
CREATE DATABASE habits_crm;
CREATE TABLE habits_shop.orders (id INT PRIMARY KEY, note VARCHAR(20)) ENGINE=InnoDB;
CREATE TABLE habits_crm.contacts (id INT PRIMARY KEY, name VARCHAR(20)) ENGINE=InnoDB;
SET timestamp = {T} + 10;
INSERT INTO habits_shop.orders VALUES (1, 'a');
SET timestamp = {T} + 20;
BEGIN;
INSERT INTO habits_shop.orders VALUES (2, 'b');
SET timestamp = {T} + 25;
INSERT INTO habits_crm.contacts VALUES (1, 'x');
SET timestamp = {T} + 30;
COMMIT;
SET timestamp = {T} + 15;
INSERT INTO habits_crm.contacts VALUES (2, 'y');
SET timestamp = {T} + 40;
SET SESSION gtid_domain_id = 5;
INSERT INTO habits_shop.orders VALUES (3, 'c');
SET SESSION gtid_domain_id = 0;
SET SESSION server_id = 7;
SET timestamp = {T} + 50;
USE habits_crm;
INSERT INTO habits_shop.orders VALUES (4, 'd');
"""

SECOND_FILE = """
SET timestamp = {T} + 60;
USE habits_shop;
INSERT INTO habits_crm.contacts VALUES (3, 'z');
SET timestamp = {T} + 70;
UPDATE habits_shop.orders SET note = 'e' WHERE id = 1;
SET timestamp = {T} - 2 * 86400;
INSERT INTO habits_shop.orders VALUES (5, 'f');
SET timestamp = {T} + 80;
DELETE FROM habits_crm.contacts WHERE id = 3;
"""


class Habits(NamedTuple):
    files: list[Path]
    base: int  # the time of the first statement; the files' own header events carry the time they were opened


@pytest.fixture(scope="module")
def habits(mariadb) -> Habits:
    """The workload's two closed binlog files; its statements are a day ahead of the clock."""
    base = int(time.time()) + DAY
    mariadb.flush_logs()
    first = mariadb.binlog_files()[-1]
    mariadb.sql(FIRST_FILE.format(T=base))
    mariadb.flush_logs()
    mariadb.sql(SECOND_FILE.format(T=base))
    mariadb.flush_logs()
    mariadb.wait_settled()
    files = [f for f in mariadb.binlog_files() if f.name >= first.name][:-1]  # the last is current and empty
    assert len(files) == 2, files
    return Habits(files, base)


def _utc(moment: int) -> str:
    return datetime.fromtimestamp(moment, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _datetimes(habits: Habits, start: int | None, stop: int | None) -> list[str]:
    """The datetime options for these seconds after the workload's first statement (None: no option)."""
    options = [f"--start-datetime={_utc(habits.base + start)}"] if start is not None else []
    return options + ([f"--stop-datetime={_utc(habits.base + stop)}"] if stop is not None else [])


# -- what each tool selects --------------------------------------------------------------


def reference(files: list[Path], *options: str, kinds: dict[int, str] = ROW_EVENTS) -> list[tuple[int, int, str]]:
    """``(file index, position, kind)`` of the events of the types ``kinds`` names (by default
    table maps, ``TABLE_MAP``, and rows events, ``ROWS``) mariadb-binlog prints of ``files``
    with ``options``, in order. A file starts with its format description (``Start:``), which
    mariadb-binlog prints of every file it reads."""
    proc = subprocess.run(
        [mariadb_binlog_path(), *options, *map(str, files)], capture_output=True, timeout=300, env=_env()
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    frames = [{end: (pos, code) for pos, code, _, end in raw_frames(path)} for path in files]
    index, selected = -1, []
    for line in proc.stdout.decode("utf-8").splitlines():
        header = HEADER_RE.match(line)
        if header is None:
            continue
        index += header.group(6).startswith("Start: binlog")
        pos, code = frames[index][int(header.group(4))]
        if code in kinds:
            selected.append((index, pos, kinds[code]))
    return selected


def ours(names: list[str], *options: str, stdin: bytes | None = None) -> list[tuple[int, int, str]]:
    """What ``binlog-codec events --json`` shows of the same events; ``names`` are the files as
    given, or as the output names them (``(stdin)`` for ``-``)."""
    shown = []
    for event in _codec("events", "--json", *options, *names, stdin=stdin):
        if event["type_code"] in ROW_EVENTS:
            shown.append((_index(names, event["file"]), event["pos"], ROW_EVENTS[event["type_code"]]))
    return shown


def our_rows(names: list[str], *options: str, stdin: bytes | None = None) -> list[tuple[int, int, str]]:
    """The rows events ``binlog-codec rows`` reads rows from, in order."""
    seen = [(_index(names, row["file"]), row["pos"], "ROWS") for row in _codec("rows", *options, *names, stdin=stdin)]
    return sorted(set(seen), key=seen.index)


def _index(names: list[str], file: str) -> int:
    return names.index("-" if file == "(stdin)" else file)


def _env() -> dict:
    return dict(os.environ, TZ="UTC", PYTHONPATH=str(REPO_ROOT))


def _codec(*args: str, stdin: bytes | None = None) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "binlog_codec.cli", *args],
        input=stdin, capture_output=True, timeout=300, env=_env(), cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return [json.loads(line) for line in proc.stdout.decode("utf-8").splitlines()]


def assert_same_selection(files: list[Path], options: list[str], reference_options: list[str] | None = None) -> None:
    """``events`` and ``rows`` with ``options`` select what mariadb-binlog prints with
    ``reference_options`` (the same options unless given)."""
    want = reference(files, *(options if reference_options is None else reference_options))
    names = [str(path) for path in files]
    assert ours(names, *options) == want, options
    assert our_rows(names, *options) == [event for event in want if event[2] == "ROWS"], options


# -- the workload itself -----------------------------------------------------------------


def test_the_workload_has_what_the_comparisons_need(habits):
    """Every file's table maps and rows events, times going back, two domains, two server ids."""
    everything = reference(habits.files)
    assert {kind for _, _, kind in everything} == {"TABLE_MAP", "ROWS"} and len(everything) == 20
    events = [event for path in habits.files for event in run_mariadb_binlog(path)]
    assert {event.server_id for event in events} == {1, 7}
    gtids = [event.info["gtid"] for event in events if event.family == "MARIADB_GTID"]
    assert {gtid.split("-")[0] for gtid in gtids} == {"0", "5"}


# -- --start-datetime and --stop-datetime ------------------------------------------------


@pytest.mark.parametrize(
    "start, stop",
    [
        (22, None),  # the first event at or after: the GTID of a transaction whose COMMIT (+30) is after its rows
        (None, 22),  # stops at that GTID event
        (12, 45),
        (45, None),  # from the last transaction of the first file
        (55, None),  # nothing of the first file
        (65, 75),  # the second file's middle
        (-DAY - 1, None),  # before the data, after the header events: from the first file's GTID list
        (None, -DAY - 3600),  # before the header events: nothing at all
        (-3 * DAY, 75),
    ],
)
def test_datetimes_select_what_mariadb_binlog_prints(habits, start, stop):
    assert_same_selection(habits.files, _datetimes(habits, start, stop))


@pytest.mark.parametrize("start, stop", [(22, None), (None, 22), (65, 75)])
def test_transactions_in_a_time_window_start_at_the_gtids_mariadb_binlog_prints(habits, start, stop):
    options = _datetimes(habits, start, stop)
    names = [str(path) for path in habits.files]
    starts = [(_index(names, t["file"]), t["start"], "GTID") for t in _codec("transactions", "--json", *options, *names)]
    assert starts == reference(habits.files, *options, kinds={MARIADB_GTID: "GTID"}) != []


@pytest.mark.parametrize("start, stop", [(12, None), (None, 22)])
def test_datetimes_with_positions_as_mariadb_binlog(habits, start, stop):
    """From the first table map of the transaction committed at +30 (after its GTID event):
    a stop at +22 is its second table map (+25)."""
    first = reference(habits.files)[2][1]
    options = [f"--start-position={first}", "--stop-position=600", *_datetimes(habits, start, stop)]
    assert_same_selection(habits.files, options)
    assert len(reference(habits.files, *options)) == (2 if stop else 12)


def test_a_datetime_with_an_offset_is_that_instant(habits):
    """Nine hours ahead of UTC, with ``+09:00``, is the UTC time mariadb-binlog reads under TZ=UTC."""
    moment = habits.base + 22
    ahead = datetime.fromtimestamp(moment + 9 * 3600, timezone.utc).strftime("%Y-%m-%d %H:%M:%S+09:00")
    names = [str(path) for path in habits.files]
    assert ours(names, f"--start-datetime={ahead}") == reference(habits.files, f"--start-datetime={_utc(moment)}")
    assert ours(names, f"--start-datetime={ahead}") != ours(names)


# -- GTID sets ---------------------------------------------------------------------------


def _gtids(habits: Habits) -> tuple[list[str], list[str]]:
    """The GTID list the first file opens with, and the GTIDs of the workload's transactions."""
    opening = next(e for e in run_mariadb_binlog(habits.files[0]) if e.family == "GTID_LIST").info["gtids"]
    logged = [e.info["gtid"] for path in habits.files for e in run_mariadb_binlog(path) if e.family == "MARIADB_GTID"]
    return opening, logged


def _after(opening: list[str], gtid: str) -> str:
    """The GTID position list of ``opening`` with ``gtid``'s domain at ``gtid``."""
    domain = gtid.split("-")[0]
    return ",".join([g for g in opening if g.split("-")[0] != domain] + [gtid])


def test_exclude_gtids_is_mariadb_binlogs_gtid_start_position(habits):
    opening, logged = _gtids(habits)
    start = _after(opening, [g for g in logged if g.startswith("0-")][2])
    assert_same_selection(habits.files, [f"--exclude-gtids={start}"], [f"--start-position={start}"])


def test_include_gtids_is_mariadb_binlogs_gtid_stop_position(habits):
    _, logged = _gtids(habits)
    stop = [g for g in logged if g.startswith("0-")][-2]
    assert_same_selection(habits.files, [f"--include-gtids={stop}"], [f"--stop-position={stop}"])


def test_a_range_of_gtids_is_mariadb_binlogs_gtid_start_and_stop_positions(habits):
    opening, logged = _gtids(habits)
    domain0 = [g for g in logged if g.startswith("0-")]
    start, stop = domain0[1], domain0[-2]
    window = f"{stop.rsplit('-', 1)[0]}-{int(start.rsplit('-', 1)[1]) + 1}..{stop.rsplit('-', 1)[1]}"
    assert_same_selection(
        habits.files, [f"--include-gtids={window}"],
        [f"--start-position={_after(opening, start)}", f"--stop-position={stop}"],
    )


@pytest.mark.parametrize("option, reference_option", [("--include-gtids", "--do-domain-ids"), ("--exclude-gtids", "--ignore-domain-ids")])
def test_a_whole_domain_is_mariadb_binlogs_domain_filter(habits, option, reference_option):
    assert_same_selection(habits.files, [f"{option}=5-1-{WHOLE_DOMAIN}"], [f"{reference_option}=5"])
    assert reference(habits.files, f"{reference_option}=5") != reference(habits.files)


# -- --database --------------------------------------------------------------------------


@pytest.mark.parametrize("database", ["habits_shop", "habits_crm"])
def test_database_is_mariadb_binlogs_d_for_row_events(habits, database):
    """Also where the session's current database (USE) is the other one."""
    assert_same_selection(habits.files, [f"--database={database}"], ["-d", database])


# -- standard input and gzip -------------------------------------------------------------


def test_stdin_and_gzip_select_as_the_files_themselves(habits, tmp_path):
    packed = tmp_path / "first.gz"
    packed.write_bytes(gzip.compress(habits.files[0].read_bytes()))
    options = [f"--start-datetime={_utc(habits.base + 22)}", f"--stop-datetime={_utc(habits.base + 75)}"]
    want = reference(habits.files, *options)
    stdin = gzip.compress(habits.files[1].read_bytes())
    assert ours([str(packed), "-"], *options, stdin=stdin) == want
    assert our_rows([str(packed), "-"], *options, stdin=stdin) == [event for event in want if event[2] == "ROWS"]
