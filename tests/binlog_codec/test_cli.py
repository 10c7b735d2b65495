"""The ``binlog-codec`` command line: output formats, options and exit status."""

from __future__ import annotations

import json

import pytest

from binlog_codec.cli import main
from cli_run import run
from fixture_facts import BAD_FILES, expected, good_files, path

MARIADB = "blackbeam__rust_mysql_common/mariadb-bin.000001"
COMPRESSED = "blackbeam__rust_mysql_common/transaction_compression.000001"


def test_events_text(capsys):
    status, out, err = run(capsys, "events", path(MARIADB))
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"# {path(MARIADB)}"
    assert lines[2].split()[:4] == ["4", "256", "FORMAT_DESCRIPTION", "252"]
    assert "GTID 0-1-1" in lines[5]
    assert lines[8].split()[2] == "WRITE_ROWS_V1" and "`toddy_test`.`outbox`: insert" in lines[8]
    assert len(lines) == 2 + expected()[MARIADB]["measured"]["event_count"]


def test_events_json_contract(capsys):
    status, out, _ = run(capsys, "events", "--json", path(COMPRESSED))
    records = [json.loads(line) for line in out.splitlines()]
    assert status == 0
    assert [(r["pos"], r["type_code"], r["size"]) for r in records if r["inner_offset"] is None] == [
        tuple(e) for e in expected()[COMPRESSED]["measured"]["events"]
    ]
    inner = [r for r in records if r["inner_offset"] is not None]
    assert [(r["pos"], r["inner_offset"], r["type"]) for r in inner] == [
        (274, 0, "QUERY"),
        (274, 71, "TABLE_MAP"),
        (274, 116, "WRITE_ROWS"),
        (274, 152, "XID"),
    ]
    assert inner[0]["fields"]["query"] == "BEGIN"
    assert inner[1]["fields"]["table"] == "tb1"
    for record in records:
        assert set(record) >= {"file", "pos", "end_pos", "type", "type_code", "size", "summary", "fields"}


def test_events_positions(capsys):
    name = "osheroff__mysql-binlog-connector-java/mysql-bin.checksum-crc32"
    events = expected()[name]["measured"]["events"]
    start, stop = events[20][0], events[30][0]
    status, out, _ = run(capsys, "events", "--json", "--start-position", start, "--stop-position", stop, path(name))
    assert status == 0
    assert [json.loads(line)["pos"] for line in out.splitlines()] == [e[0] for e in events[20:30]]


def test_verify_good_files(capsys):
    status, out, err = run(capsys, "verify", *[path(n) for n in good_files()])
    assert status == 0 and err == ""
    assert len(out.splitlines()) == len(good_files())
    assert all(line.startswith("OK ") for line in out.splitlines())
    assert f"OK {path(COMPRESSED)}: 5 events (+4 inside transaction payloads)" in out


def test_verify_reports_every_bad_file_and_fails(capsys):
    names = [MARIADB, *sorted(BAD_FILES)]
    status, out, err = run(capsys, "verify", *[path(n) for n in names])
    assert status == 1
    assert out.splitlines()[0].startswith("OK ")
    assert out.count("FAILED ") == len(BAD_FILES)
    errors = err.strip().splitlines()
    assert len(errors) == len(BAD_FILES)
    for line, name in zip(errors, sorted(BAD_FILES)):
        assert line.startswith(f"binlog-codec: {path(name)}: at {BAD_FILES[name][1]} ({BAD_FILES[name][2]}): ")


def test_verify_framing_only_accepts_a_bad_body(capsys):
    name = "blackbeam__rust_mysql_common/corrupt-relay-bin.000624"
    assert run(capsys, "verify", "--framing-only", path(name))[0] == 0
    assert run(capsys, "verify", path(name))[0] == 1


def test_transactions_json(capsys):
    status, out, _ = run(capsys, "transactions", "--json", path(MARIADB))
    assert status == 0
    assert [(t["start"], t["end"], t["gtid"]) for t in map(json.loads, out.splitlines())] == [
        (330, 702, "0-1-1"),
        (702, 1074, "0-1-2"),
    ]


def test_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["events"])
    assert caught.value.code == 2


def test_rows_json_lines(capsys):
    status, out, _ = run(capsys, "rows", path("blackbeam__rust_mysql_common/minimal_row_metadata.000001"))
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert status == 0
    assert (record["type"], record["row_index"], record["before"]) == ("insert", 0, None)
    assert record["after"] == {"@1": 1, "@3": "a", "@5": 3230202323}  # absent columns are absent
    status, out, _ = run(capsys, "rows", "--table", "nope", path(MARIADB))
    assert status == 0 and out == ""


def test_rows_of_every_good_fixture_decode(capsys):
    for name in good_files():
        status, out, err = run(capsys, "rows", path(name))
        assert status == 0 and err == "", name
        rows = expected()[name].get("derived_rows", {}).get("rows_total")
        if rows is not None:
            assert len(out.splitlines()) == rows, name


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_rows_of_a_bad_fixture_is_a_located_error(capsys, name):
    status, _, err = run(capsys, "rows", path(name))
    assert status == 1
    assert err.startswith(f"binlog-codec: {path(name)}: at {BAD_FILES[name][1]} ({BAD_FILES[name][2]}): ")


def test_rows_assume_charset_for_table_maps_without_charsets(capsys):
    name = "EasyPost__rust-mysql-binlog/bin-log.000001"
    status, out, _ = run(capsys, "rows", path(name))
    assert status == 0 and json.loads(out.splitlines()[0])["after"]["@3"] == {"hex": b"zero point one".hex()}
    status, out, _ = run(capsys, "rows", "--assume-charset", "utf8mb4", path(name))
    assert status == 0 and json.loads(out.splitlines()[0])["after"] == {"@1": 1, "@2": "0.10000", "@3": "zero point one"}
    status, _, err = run(capsys, "rows", "--assume-charset", "klingon", path(name))
    assert status == 1 and "at 652 (WRITE_ROWS)" in err and "unknown character set 'klingon'" in err
