"""binlog-codec against a real MariaDB server and its own mariadb-binlog.

A scripted workload (DDL, multi-statement transactions, auto-commit
statements, a non-transactional table, statement-format events, a second
GTID domain, an XA transaction, a big multi-event insert, binlog rotations
and a server restart) runs on a private server.  For every binlog file it
wrote, ``binlog-codec events --json`` must agree with ``mariadb-binlog`` on
every event's start and end position, its type, the GTIDs, the query texts
and the decoded header fields, and ``binlog-codec verify`` must accept it.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mariadb import (
    REPO_ROOT,
    ReferenceEvent,
    expected_type,
    mariadb_binlog_path,
    parse_mariadb_binlog,
    raw_frames,
    raw_gtid_list,
    run_mariadb_binlog,
)

pytestmark = pytest.mark.integration

# ---------------------------------------------------------------------------
# Workload
# ---------------------------------------------------------------------------

SETUP_AND_FIRST_TRANSACTIONS = """
CREATE DATABASE shop;
USE shop;
CREATE TABLE customers (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(64) NOT NULL,
  email VARCHAR(128) NULL,
  created_at DATETIME(3) NOT NULL,
  balance DECIMAL(12,2) NOT NULL DEFAULT 0,
  notes TEXT
) ENGINE=InnoDB COMMENT='café customers';
CREATE TABLE orders (
  id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
  customer_id INT NOT NULL,
  status ENUM('new','paid','shipped') NOT NULL DEFAULT 'new',
  total DOUBLE,
  placed_on DATE,
  payload MEDIUMBLOB
) ENGINE=InnoDB;
CREATE TABLE audit (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  msg VARCHAR(255)
) ENGINE=MyISAM;
START TRANSACTION;
INSERT INTO customers (name, email, created_at, balance, notes) VALUES
  ('Ada', 'ada@example.com', '2024-01-02 03:04:05.678', 10.50, NULL),
  ('Zoë ✓', NULL, '2024-02-03 04:05:06.000', 99.99, 'likes unicode'),
  ('Bob', 'bob@example.com', '2024-03-04 05:06:07.123', 0, REPEAT('n', 500));
INSERT INTO orders VALUES
  (1, 1, 'new', 12.5, '2024-01-03', x'00ff10'),
  (2, 2, 'paid', 99.0, '2024-02-04', NULL),
  (3, 3, 'new', 1e10, '2024-03-05', REPEAT('b', 300));
COMMIT;
INSERT INTO orders (id, customer_id, total) VALUES (4, 1, 7.25);
INSERT INTO audit (msg) VALUES ('non-transactional table'), ('second row');
"""

AFTER_FIRST_FLUSH = """
USE shop;
BEGIN;
UPDATE customers SET balance = balance + 1.25 WHERE id IN (1, 2);
DELETE FROM orders WHERE id = 2;
INSERT INTO orders (id, customer_id, status) VALUES (5, 2, 'paid'), (6, 3, 'new');
COMMIT;
ALTER TABLE customers ADD COLUMN tier TINYINT NOT NULL DEFAULT 0 AFTER balance;
START TRANSACTION;
UPDATE customers
   SET tier = 2
 WHERE balance > 50;
DELETE FROM orders WHERE status = 'new' AND customer_id = 3;
COMMIT;
BEGIN;
INSERT INTO orders (id, customer_id, total)
  SELECT 1000 + seq, 1 + seq % 3, seq / 7 FROM seq_1_to_3000;
COMMIT;
INSERT INTO orders (id, customer_id, payload) VALUES (9000, 1, REPEAT('x', 100000));
BEGIN;
INSERT INTO customers (name, created_at) VALUES ('rolled back', NOW());
ROLLBACK;
"""

# Statement-based logging in one session gives INTVAR, RAND and USER_VAR events.
STATEMENT_FORMAT = """
USE shop;
CREATE TABLE notes (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  who VARCHAR(32),
  score DOUBLE,
  body TEXT
) ENGINE=InnoDB;
SET SESSION binlog_format = 'STATEMENT';
SET @who = 'nightly-job';
BEGIN;
INSERT INTO notes (who, score, body) VALUES (@who, RAND(), 'seeded');
INSERT INTO notes (who, score, body) VALUES ('plain', 1.5, 'first line
second line');
COMMIT;
"""

DOMAIN_AND_XA = """
USE shop;
SET SESSION gtid_domain_id = 5;
INSERT INTO orders (id, customer_id) VALUES (7, 1);
SET SESSION gtid_domain_id = 0;
XA START 'batch-1';
UPDATE orders SET status = 'shipped' WHERE id = 1;
XA END 'batch-1';
XA PREPARE 'batch-1';
XA COMMIT 'batch-1';
DROP TABLE audit;
"""

AFTER_SECOND_FLUSH = """
INSERT INTO shop.orders (id, customer_id) VALUES (8, 2);
TRUNCATE TABLE shop.notes;
"""

AFTER_RESTART = """
UPDATE shop.customers SET email = 'ada@example.org' WHERE id = 1;
"""

WORKLOAD = [
    ("sql", SETUP_AND_FIRST_TRANSACTIONS),
    ("flush", None),
    ("sql", AFTER_FIRST_FLUSH),
    ("sql", STATEMENT_FORMAT),
    ("sql", DOMAIN_AND_XA),
    ("flush", None),
    ("sql", AFTER_SECOND_FLUSH),
    ("restart", None),  # a clean shutdown ends the file with a STOP event
    ("sql", AFTER_RESTART),
]

# Every one of these must show up somewhere in the workload's files.
EXPECTED_TYPES = {
    "FORMAT_DESCRIPTION",
    "GTID_LIST",
    "BINLOG_CHECKPOINT",
    "MARIADB_GTID",
    "QUERY",
    "ANNOTATE_ROWS",
    "TABLE_MAP",
    "WRITE_ROWS_V1",
    "UPDATE_ROWS_V1",
    "DELETE_ROWS_V1",
    "XID",
    "ROTATE",
    "STOP",
    "INTVAR",
    "RAND",
    "USER_VAR",
    "XA_PREPARE",
}

COMPRESSED_WORKLOAD = """
USE shop;
BEGIN;
INSERT INTO orders (id, customer_id, payload) VALUES (20000, 1, REPEAT('z', 400));
UPDATE orders SET payload = REPEAT('y', 400) WHERE id = 20000;
DELETE FROM orders WHERE id = 20000;
COMMIT;
CREATE TABLE compressed_ddl (id INT PRIMARY KEY, note VARCHAR(100))
  COMMENT 'a statement long enough to be compressed in the binary log';
"""


def _files_from(server, first: Path) -> list[Path]:
    return [f for f in server.binlog_files() if f.name >= first.name]


@pytest.fixture(scope="module")
def workload_files(mariadb) -> list[Path]:
    """Runs the workload; returns the binlog files it wrote, oldest first.
    All but the last are closed; the last is the server's current (empty,
    in-use) file."""
    mariadb.flush_logs()
    first = mariadb.binlog_files()[-1]
    for kind, text in WORKLOAD:
        if kind == "sql":
            mariadb.sql(text)
        elif kind == "flush":
            mariadb.flush_logs()
        elif kind == "restart":
            mariadb.restart()
    mariadb.flush_logs()
    mariadb.wait_settled()  # the current file must not change while compared
    files = _files_from(mariadb, first)
    assert len(files) >= 3, files
    return files


@pytest.fixture(scope="module")
def compressed_files(mariadb, workload_files) -> list[Path]:
    """Binlog files written with log_bin_compress=ON."""
    (old_min_len,) = mariadb.rows("SELECT @@GLOBAL.log_bin_compress_min_len")[0]
    mariadb.flush_logs()
    first = mariadb.binlog_files()[-1]
    try:
        mariadb.sql("SET GLOBAL log_bin_compress_min_len = 10; SET GLOBAL log_bin_compress = ON")
        mariadb.sql(COMPRESSED_WORKLOAD)
    finally:
        mariadb.sql(
            f"SET GLOBAL log_bin_compress = OFF; SET GLOBAL log_bin_compress_min_len = {old_min_len}"
        )
    mariadb.flush_logs()
    mariadb.wait_settled()
    return _files_from(mariadb, first)[:-1]  # the last one is empty and current


# ---------------------------------------------------------------------------
# Running both tools
# ---------------------------------------------------------------------------

_CLI = "import sys; from binlog_codec.cli import main; sys.exit(main())"


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``binlog-codec ARGS`` from this checkout, with this interpreter."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p
    )
    return subprocess.run(
        [sys.executable, "-c", _CLI, *args],
        capture_output=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=timeout,
    )


def parse_json_lines(out: bytes, what: str) -> list[dict]:
    events = []
    for n, line in enumerate(out.decode("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            pytest.fail(f"{what}: line {n} is not JSON ({exc}): {line[:200]!r}")
        assert isinstance(obj, dict), f"{what}: line {n} is not an object"
        events.append(obj)
    return events


@functools.lru_cache(maxsize=None)
def codec_events(path: Path) -> tuple[dict, ...]:
    proc = run_cli("events", "--json", str(path))
    assert proc.returncode == 0, (
        f"binlog-codec events --json {path.name} exited {proc.returncode}:\n"
        f"{proc.stderr.decode(errors='replace')[-3000:]}"
    )
    return tuple(parse_json_lines(proc.stdout, f"events --json {path.name}"))


@functools.lru_cache(maxsize=None)
def reference_events(path: Path) -> tuple[ReferenceEvent, ...]:
    return tuple(run_mariadb_binlog(path))


@functools.lru_cache(maxsize=None)
def frames(path: Path) -> dict[int, tuple[int, int, int, int]]:
    return {f[0]: f for f in raw_frames(path)}


def reference_type(path: Path, ev: ReferenceEvent) -> str:
    return expected_type(ev, frames(path)[ev.pos][1])


def paired(path: Path) -> list[tuple[ReferenceEvent, dict]]:
    """Reference and codec events of one file, paired by position (the
    positions themselves are checked by test_positions_and_types)."""
    ours = {e.get("pos"): e for e in codec_events(path)}
    missing = [ev.pos for ev in reference_events(path) if ev.pos not in ours]
    assert not missing, f"{path.name}: binlog-codec has no event at {missing[:10]}"
    return [(ev, ours[ev.pos]) for ev in reference_events(path)]


def check_all(files, check) -> None:
    """Run ``check(path)`` -> list of problems for every file; fail listing
    the first problems of each file."""
    report = []
    for path in files:
        problems = check(path)
        if problems:
            report.append(f"{path.name}: {len(problems)} mismatch(es)")
            report.extend("  " + p for p in problems[:15])
    assert not report, "\n".join(report)


# ---------------------------------------------------------------------------
# The reference itself (runs without binlog_codec)
# ---------------------------------------------------------------------------


def test_reference_reading_matches_raw_framing(workload_files):
    """Our reading of mariadb-binlog's text agrees with the raw v4 headers,
    every printed event maps to a known type, and the workload produced
    every event type it is meant to cover."""
    seen = set()

    def check(path):
        problems = []
        refs = reference_events(path)
        raw = raw_frames(path)
        if [e.pos for e in refs] != [f[0] for f in raw]:
            problems.append(
                f"positions: mariadb-binlog {[e.pos for e in refs]} raw {[f[0] for f in raw]}"
            )
        for ev in refs:
            f = frames(path).get(ev.pos)
            if f is None:
                continue
            if ev.end_pos != f[3]:
                problems.append(f"at {ev.pos}: end_log_pos {ev.end_pos}, header says {f[3]}")
            if ev.end_pos != ev.pos + f[2]:
                problems.append(f"at {ev.pos}: end {ev.end_pos} != pos + size {f[2]}")
            if ev.family == "GTID_LIST" and sorted(raw_gtid_list(path, ev.pos)) != sorted(
                ev.info["gtids"]
            ):
                problems.append(f"at {ev.pos}: GTID list {ev.info['gtids']} vs raw")
            t = reference_type(path, ev)
            if t.startswith("<") or ev.family.startswith("UNKNOWN"):
                problems.append(f"at {ev.pos}: unmapped event {ev.header!r} ({t})")
            seen.add(t)
        return problems

    check_all(workload_files, check)
    missing = EXPECTED_TYPES - seen
    assert not missing, f"workload did not produce {sorted(missing)}"
    assert any(
        len(ev.info["gtids"]) >= 2
        for f in workload_files
        for ev in reference_events(f)
        if ev.family == "GTID_LIST"
    ), "expected a GTID list with two domains"
    last = reference_events(workload_files[-1])
    assert last[0].info["in_use"], "the current binlog should be flagged in use"
    assert all(reference_events(f)[-1].family == "ROTATE" or
               reference_events(f)[-1].family == "STOP" for f in workload_files[:-1])


# ---------------------------------------------------------------------------
# binlog-codec against mariadb-binlog
# ---------------------------------------------------------------------------


def _check_framing(path: Path) -> list[str]:
    problems = []
    refs = reference_events(path)
    ours = codec_events(path)
    ref_pos = [e.pos for e in refs]
    our_pos = [e.get("pos") for e in ours]
    if our_pos != ref_pos:
        problems.append(f"start positions differ:\n    ours   {our_pos}\n    theirs {ref_pos}")
    if [e.get("end_pos") for e in ours] != [e.end_pos for e in refs]:
        problems.append(
            "end positions differ:\n"
            f"    ours   {[e.get('end_pos') for e in ours]}\n"
            f"    theirs {[e.end_pos for e in refs]}"
        )
    for ev, our in paired(path):
        want = reference_type(path, ev)
        code = frames(path)[ev.pos][1]
        where = f"at {ev.pos} ({ev.header[:40]!r})"
        if our.get("type") != want:
            problems.append(f"{where}: type {our.get('type')!r}, expected {want!r}")
        if our.get("type_code") != code:
            problems.append(f"{where}: type_code {our.get('type_code')!r}, expected {code}")
        if our.get("size") != ev.end_pos - ev.pos:
            problems.append(f"{where}: size {our.get('size')!r}, expected {ev.end_pos - ev.pos}")
        if our.get("inner_offset") is not None:
            problems.append(f"{where}: inner_offset {our.get('inner_offset')!r}, expected null")
        if Path(str(our.get("file"))).name != path.name:
            problems.append(f"{where}: file {our.get('file')!r}, expected {path.name!r}")
        if not isinstance(our.get("summary"), str):
            problems.append(f"{where}: summary is not a string")
        if not isinstance(our.get("fields"), dict):
            problems.append(f"{where}: fields is not an object")
    return problems


def test_positions_and_types(workload_files):
    check_all(workload_files, _check_framing)


def test_gtids_in_order(workload_files):
    theirs, ours = [], []
    for path in workload_files:
        theirs += [e.info["gtid"] for e in reference_events(path) if e.family == "MARIADB_GTID"]
        ours += [
            e.get("fields", {}).get("gtid")
            for e in codec_events(path)
            if e.get("type") == "MARIADB_GTID"
        ]
    assert len(theirs) > 10
    assert ours == theirs

    def check(path):
        problems = []
        for ev, our in paired(path):
            if ev.family != "MARIADB_GTID":
                continue
            f = our.get("fields", {})
            for key in ("domain_id", "server_id", "seq_no", "standalone"):
                if f.get(key) != ev.info[key]:
                    problems.append(
                        f"GTID {ev.info['gtid']} at {ev.pos}: {key} {f.get(key)!r}, "
                        f"expected {ev.info[key]!r}"
                    )
        return problems

    check_all(workload_files, check)


def _texts(path: Path) -> tuple[list, list]:
    theirs, ours = [], []
    for ev, our in paired(path):
        if ev.family in ("QUERY", "QUERY_COMPRESSED", "ANNOTATE_ROWS"):
            theirs.append((ev.pos, ev.family, ev.info["query"]))
            ours.append((our.get("pos"), our.get("type"), our.get("fields", {}).get("query")))
    return theirs, ours


def test_query_texts_in_order(workload_files):
    def check(path):
        theirs, ours = _texts(path)
        return [
            f"at {t[0]} {t[1]}: ours {o[2]!r}\n    theirs {t[2]!r}"
            for t, o in zip(theirs, ours)
            if t != o
        ]

    check_all(workload_files, check)
    all_texts = [t[2] for f in workload_files for t in _texts(f)[0]]
    # Spot checks that the workload's interesting statements were compared.
    assert any(t.startswith("ALTER TABLE customers ADD COLUMN tier") for t in all_texts)
    assert any("first line\nsecond line" in t for t in all_texts)
    assert any("Zoë ✓" in t for t in all_texts)
    assert "COMMIT" in all_texts  # the MyISAM statement's COMMIT query event
    assert any(t.startswith("XA COMMIT") for t in all_texts)


def _check_fields(path: Path) -> list[str]:
    problems = []

    def expect(ev, our, key, want):
        got = our.get("fields", {}).get(key)
        if got != want:
            problems.append(
                f"at {ev.pos} {our.get('type')}: fields.{key} {got!r}, expected {want!r}"
            )

    for ev, our in paired(path):
        fam = ev.family
        if fam == "FORMAT_DESCRIPTION":
            expect(ev, our, "binlog_version", ev.info["binlog_version"])
            expect(ev, our, "server_version", ev.info["server_version"])
            expect(ev, our, "checksum", "CRC32" if ev.crc32 else "OFF")
        elif fam in ("QUERY", "QUERY_COMPRESSED"):
            for key in ("thread_id", "exec_time", "error_code"):
                expect(ev, our, key, ev.info[key])
            if fam == "QUERY" and not isinstance(our.get("fields", {}).get("status_vars"), dict):
                problems.append(f"at {ev.pos}: QUERY fields.status_vars is not an object")
            uses = [s for s in ev.statements() if s.startswith("use `")]
            if uses:  # mariadb-binlog prints "use" only when the database changes
                expect(ev, our, "database", uses[-1][len("use `") : -1].replace("``", "`"))
        elif fam == "TABLE_MAP":
            for key in ("table_id", "database", "table"):
                expect(ev, our, key, ev.info[key])
            if not isinstance(our.get("fields", {}).get("column_count"), int):
                problems.append(f"at {ev.pos}: TABLE_MAP fields.column_count is not an int")
        elif fam.startswith("ROWS:"):
            expect(ev, our, "table_id", ev.info["table_id"])
            flags = our.get("fields", {}).get("flags")
            end = "STMT_END_F" in ev.info["flag_words"]
            if not isinstance(flags, int) or bool(flags & 1) != end:
                problems.append(
                    f"at {ev.pos}: rows flags {flags!r}, STMT_END_F expected {end}"
                )
        elif fam == "XID":
            expect(ev, our, "xid", ev.info["xid"])
        elif fam == "ROTATE":
            expect(ev, our, "next_file", ev.info["next_file"])
            expect(ev, our, "position", ev.info["position"])
        elif fam == "BINLOG_CHECKPOINT":
            expect(ev, our, "file_name", ev.info["file"])
        elif fam == "GTID_LIST":
            # In stored order; mariadb-binlog sorts by domain when printing,
            # so its list was cross-checked against the raw bytes above.
            expect(ev, our, "gtids", raw_gtid_list(path, ev.pos))
    return problems


def test_event_fields(workload_files):
    check_all(workload_files, _check_fields)


def test_several_files_in_one_call(workload_files):
    """Events of several files in one call come out file by file, in order."""
    proc = run_cli("events", "--json", *map(str, workload_files))
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    got = parse_json_lines(proc.stdout, "events --json (all files)")
    want = [e for path in workload_files for e in codec_events(path)]
    assert [(Path(e["file"]).name, e["pos"]) for e in got] == [
        (Path(e["file"]).name, e["pos"]) for e in want
    ]


def test_verify_accepts_every_file(workload_files):
    proc = run_cli("verify", *map(str, workload_files))
    assert proc.returncode == 0, (
        f"verify exited {proc.returncode}:\n{proc.stdout.decode(errors='replace')[-2000:]}"
        f"{proc.stderr.decode(errors='replace')[-2000:]}"
    )
    for path in workload_files:
        proc = run_cli("verify", str(path))
        assert proc.returncode == 0, f"verify {path.name} exited {proc.returncode}"


# ---------------------------------------------------------------------------
# log_bin_compress=ON: compressed query and rows events
# ---------------------------------------------------------------------------


def test_compressed_reference(compressed_files):
    kinds = {
        reference_type(path, ev)
        for path in compressed_files
        for ev in reference_events(path)
    }
    assert {
        "QUERY_COMPRESSED",
        "WRITE_ROWS_COMPRESSED_V1",
        "UPDATE_ROWS_COMPRESSED_V1",
        "DELETE_ROWS_COMPRESSED_V1",
    } <= kinds, kinds


def test_compressed_positions_and_types(compressed_files):
    check_all(compressed_files, _check_framing)


def test_compressed_fields_and_texts(compressed_files):
    def check(path):
        problems = _check_fields(path)
        theirs, ours = _texts(path)
        for t, o in zip(theirs, ours):
            # The contract fixes query texts for QUERY and ANNOTATE_ROWS; a
            # decompressed text, when given, must match too.
            if t[1] == "QUERY_COMPRESSED" and o[2] is None:
                continue
            if t != o:
                problems.append(f"at {t[0]} {t[1]}: ours {o[2]!r}\n    theirs {t[2]!r}")
        return problems

    check_all(compressed_files, check)


def test_verify_accepts_compressed_files(compressed_files):
    proc = run_cli("verify", *map(str, compressed_files))
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]


# ---------------------------------------------------------------------------
# --start-position and --stop-position over several files
# ---------------------------------------------------------------------------

SAMPLES = [REPO_ROOT / "samples" / "mariadb-bin.000001", REPO_ROOT / "samples" / "mariadb-bin.000002"]


def _reference_positions(files, start: int, stop: int) -> list[int]:
    """The events mariadb-binlog prints of ``files`` with these positions, less the first
    file's format description, which it prints whatever the start position."""
    proc = subprocess.run(
        [mariadb_binlog_path(), f"--start-position={start}", f"--stop-position={stop}", *map(str, files)],
        capture_output=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    events = [(e.pos, e.family) for e in parse_mariadb_binlog(proc.stdout.decode("utf-8"))]
    assert events[0] == (4, "FORMAT_DESCRIPTION")
    return [pos for pos, _ in events[1:]] if start > 4 else [pos for pos, _ in events]


def _codec_positions(files, start: int, stop: int) -> list[int]:
    proc = run_cli("events", "--json", "--start-position", str(start), "--stop-position", str(stop), *map(str, files))
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return [e["pos"] for e in parse_json_lines(proc.stdout, "events --json with positions")]


def test_positions_apply_to_the_first_and_last_file_as_in_mariadb_binlog():
    """--start-position in the first file, --stop-position in the last, the files between whole."""
    for start, stop in ((2122, 1052), (4, 1052), (2122, 100000), (3732, 256)):
        assert _codec_positions(SAMPLES, start, stop) == _reference_positions(SAMPLES, start, stop), (start, stop)


def test_positions_over_the_workload_files_as_in_mariadb_binlog(workload_files):
    first, last = reference_events(workload_files[0]), reference_events(workload_files[-1])
    start, stop = first[len(first) // 2].pos, last[-1].pos
    assert _codec_positions(workload_files, start, stop) == _reference_positions(workload_files, start, stop)


def test_start_inside_an_event_fails_in_both_tools():
    """mariadb-binlog prints a garbage event and 'Could not read entry'; binlog-codec says where events start."""
    theirs = subprocess.run([mariadb_binlog_path(), "--start-position=2125", str(SAMPLES[0])], capture_output=True)
    assert b"Could not read entry at offset 2125" in theirs.stdout + theirs.stderr
    ours = run_cli("events", "--start-position", "2125", str(SAMPLES[0]), str(SAMPLES[1]))
    assert ours.returncode == 1 and ours.stdout == b""
    assert ours.stderr.decode().splitlines() == [
        f"binlog-codec: {SAMPLES[0]}: at 2125: start position 2125 is not an event start: it is inside the event "
        "at 2122 (MARIADB_GTID); the nearest events start at 2122 and 2164 (ANNOTATE_ROWS)"
    ]
