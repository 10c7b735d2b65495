"""The ``binlog-codec`` command line: output formats, options and exit status."""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from binlog_codec import cli, cli_time
from binlog_codec.cli import main
from binlog_codec.event_types import EventType
from binlog_codec.json_diff import JsonDiff
from binlog_codec.rows import RowChange
from binlog_codec.table_map import Column, ColumnType, TableMap
from binlog_codec.writer import BinlogWriter, JsonUpdate, rows_event_body_for, table_map_event_body
from cli_run import run
from fixture_facts import BAD_FILES, expected, good_files, path

REPO = Path(__file__).resolve().parents[2]
MARIADB = "blackbeam__rust_mysql_common/mariadb-bin.000001"
COMPRESSED = "blackbeam__rust_mysql_common/transaction_compression.000001"
AURORA = "osheroff__mysql-binlog-connector-java/mysql-bin.aurora-padding"


def test_events_text(capsys):
    status, out, err = run(capsys, "events", path(MARIADB))
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"# {path(MARIADB)}"
    assert lines[1].split() == ["#", "position", "end", "time", "(UTC)", "server_id", "type", "size", "summary"]
    assert lines[2].split()[:6] == ["4", "256", "2022-04-20T22:17:51Z", "1", "FORMAT_DESCRIPTION", "252"]
    assert "GTID 0-1-1" in lines[5]
    assert lines[8].split()[4] == "WRITE_ROWS_V1" and "`toddy_test`.`outbox`: insert" in lines[8]
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
        assert record["time"] == cli_time.event_time(record["timestamp"]) and isinstance(record["server_id"], int)


def test_events_positions(capsys):
    name = "osheroff__mysql-binlog-connector-java/mysql-bin.checksum-crc32"
    events = expected()[name]["measured"]["events"]
    start, stop = events[20][0], events[30][0]
    status, out, _ = run(capsys, "events", "--json", "--start-position", start, "--stop-position", stop, path(name))
    assert status == 0
    assert [json.loads(line)["pos"] for line in out.splitlines()] == [e[0] for e in events[20:30]]


def test_verify_good_files(capsys):
    """Every good fixture holds; the Aurora excerpt ends after its BEGIN: a warning, exit status 3."""
    cut = path(AURORA)
    status, out, err = run(capsys, "verify", *[path(n) for n in good_files()])
    assert status == 3
    assert err == (
        f"binlog-codec: {cut}: warning: the file ends inside a transaction: the one at 216 "
        "(GTID ANONYMOUS, 3 events) has no COMMIT, XID or statement end; a copy cut short?\n"
    )
    assert len(out.splitlines()) == len(good_files())
    assert [line for line in out.splitlines() if not line.startswith("OK ")] == [
        f"WARNING {cut}: 5 events, 1294 bytes, checksums CRC32 verified"
    ]
    assert f"OK {path(COMPRESSED)}: 5 events (+4 inside transaction payloads)" in out
    others = [path(n) for n in good_files() if n != AURORA]
    assert run(capsys, "verify", *others)[0] == 0


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


# -- partial JSON (WL#2955): events -v and rows -------------------------------------------------

JSON_FIXTURE = "blackbeam__rust_mysql_common/json.binlog.000001"


def _row_blocks(out: str, position: int) -> list[list[str]]:
    """The ``###`` lines printed after the event at ``position``, one list per row."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [str(position)]) + 1
    blocks: list[list[str]] = []
    for line in lines[start:]:
        if not line.startswith("### "):
            break
        if not line.startswith("###  ") and line.split()[1] in ("INSERT", "UPDATE", "DELETE"):
            blocks.append([])
        blocks[-1].append(line)
    return blocks


def test_events_verbose_rows_print_partial_json_as_mysqlbinlog(capsys):
    status, out, err = run(capsys, "events", "-v", path(JSON_FIXTURE))
    assert status == 0 and err == ""
    partial = _row_blocks(out, 3750)
    assert len(partial) == 6
    assert partial[0] == [
        "### UPDATE `mysql`.`t`",
        "### WHERE",
        "###   @1=1",
        "### SET",
        "###   @2=JSON_REPLACE(@2, '$.age', 26)",
        "###   @3='Joe'",
        "###   @4=26",
    ]
    assert [block[4] for block in partial[1:]] == [
        f"###   @2=JSON_REPLACE(@2, '$.age', {age})" for age in (34, 42, 26, 34, 42)
    ]
    (first_insert,) = _row_blocks(out, 1059)
    assert first_insert == [
        "### INSERT INTO `mysql`.`t`",
        "### SET",
        "###   @1=1",
        "###   @2='{\"age\": 24, \"data\": \"xxxxxxxxxx\", \"name\": \"Joe\"}'",
        "###   @3='Joe'",
        "###   @4=24",
    ]
    full_update = _row_blocks(out, 2612)
    assert len(full_update) == 6 and full_update[0][1] == "### WHERE" and full_update[0][6] == "### SET"
    # Without -v the listing is the same, less the row lines.
    status, plain, _ = run(capsys, "events", path(JSON_FIXTURE))
    assert [line for line in out.splitlines() if not line.startswith("### ")] == plain.splitlines()


def test_events_verbose_rows_beside_the_global_verbose_flag(capsys):
    status, out, _ = run(capsys, "-v", "events", "-v", path(JSON_FIXTURE))
    assert status == 0 and "JSON_REPLACE(@2, '$.age', 26)" in out
    status, out, _ = run(capsys, "-v", "events", path(JSON_FIXTURE))
    assert status == 0 and "###" not in out
    with pytest.raises(SystemExit) as caught:
        main(["events", "--json", "-v", str(path(JSON_FIXTURE))])
    assert caught.value.code == 2


def test_rows_partial_json_without_the_document_is_the_diff_list(capsys):
    status, out, _ = run(capsys, "rows", path(JSON_FIXTURE))
    partial = [json.loads(line) for line in out.splitlines() if json.loads(line)["pos"] == 3750]
    assert status == 0 and len(partial) == 6
    assert partial[0]["before"] == {"@1": 1}
    assert partial[0]["after"] == {"@2": {"json_diff": [{"op": "REPLACE", "path": "$.age", "value": 26}]}, "@3": "Joe", "@4": 26}
    assert all(record["partial"] == ["@2"] for record in partial)


def _partial_update_binlog(tmp_path, before_document, update, *, raw_diffs=None):
    """A binlog with one PARTIAL_UPDATE_ROWS_EVENT of table ``db.t (INT, JSON)``, FULL images, no column names.
    ``update`` is the new value of ``@2`` (a JsonUpdate); ``raw_diffs`` logs these bytes as its diffs instead."""
    columns = [Column(0, ColumnType.LONG, ColumnType.LONG, False, unsigned=False),
               Column(1, ColumnType.JSON, ColumnType.JSON, True, pack_length=4)]
    table = TableMap(7, "db", "t", columns)
    after = {"@1": 1, "@2": update if raw_diffs is None else raw_diffs}
    change = RowChange("update", 0, before={"@1": 1, "@2": before_document}, after=after,
                       partial=[] if raw_diffs is None else ["@2"])
    writer = BinlogWriter()
    writer.add(EventType.TABLE_MAP, table_map_event_body(table))
    type_code, body = rows_event_body_for(table, "update", [change], partial_json=True)
    position = writer.add(type_code, body)
    target = tmp_path / "partial.000001"
    target.write_bytes(writer.bytes())
    return target, position


def test_rows_partial_json_with_a_full_before_image_is_the_new_document(tmp_path, capsys):
    document = {"a": [1, 2], "b": "x" * 60}
    diffs = [JsonDiff("INSERT", "$.a[1]", 9), JsonDiff("REPLACE", "$.b", "y")]
    new = {"a": [1, 9, 2], "b": "y"}
    target, position = _partial_update_binlog(tmp_path, document, JsonUpdate(new, diffs))
    status, out, _ = run(capsys, "rows", target)
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert status == 0
    assert record["before"] == {"@1": 1, "@2": document}
    assert record["after"] == {"@1": 1, "@2": new} and record["partial"] == []
    status, out, _ = run(capsys, "events", "-v", target)
    assert status == 0
    (block,) = _row_blocks(out, position)
    assert block == [
        "### UPDATE `db`.`t`",
        "### WHERE",
        "###   @1=1",
        "###   @2='{\"a\": [1, 2], \"b\": \"" + "x" * 60 + "\"}'",
        "### SET",
        "###   @1=1",
        "###   @2=JSON_REPLACE(",
        "###      JSON_ARRAY_INSERT(@2, '$.a[1]', 9),",
        "###      '$.b', 'y')",
    ]


def test_rows_diffs_that_do_not_fit_the_before_image_are_a_located_error(tmp_path, capsys):
    document = {"a": 1, "pad": "x" * 60}
    update = JsonUpdate({"a": 1, "b": 2, "pad": "x" * 60}, [JsonDiff("REPLACE", "$.b", 2)])
    target, position = _partial_update_binlog(tmp_path, document, update)
    status, _, err = run(capsys, "rows", target)
    assert status == 1
    assert err == (
        f"binlog-codec: {target}: at {position} (PARTIAL_UPDATE_ROWS): "
        "column @2, JSON diff 0: REPLACE at '$.b': no value at this path to replace\n"
    )


@pytest.mark.parametrize("command", [["rows"], ["events", "-v"]])
def test_corrupt_diffs_are_a_located_error(tmp_path, capsys, command):
    target, position = _partial_update_binlog(tmp_path, {"a": 1}, None, raw_diffs=b"\x00\x03$.a")
    status, _, err = run(capsys, *command, target)
    assert status == 1
    assert err.startswith(f"binlog-codec: {target}: at {position} (PARTIAL_UPDATE_ROWS): column @2, JSON diff 0: ")
    assert "value length" in err


# -- backup inspect ---------------------------------------------------------------

ORDERS = (
    "CREATE TABLE `orders` (\n  `id` int(11) NOT NULL,\n  `note` varchar(20) DEFAULT NULL,\n"
    "  PRIMARY KEY (`id`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
)


def _backup_image(tmp_path):
    """A MariaDB backup image: `shop`.`orders` (4 rows in 2 chunks) and `shop`.`blobs` (opaque data)."""
    from datetime import datetime, timezone

    from binlog_codec.backup import (
        BackupWriter, Catalogue, Database, Header, ImageType, ItemType, MetadataItem, MetadataKind, ServerVersion,
        SnapshotInfo, Summary, Table,
    )
    from binlog_codec.create_table import table_map_of
    from binlog_codec.snapshot_rows import encode_rows

    moment = datetime(2026, 11, 22, 1, 2, 3, tzinfo=timezone.utc)
    orders = table_map_of(ORDERS, database="shop", flavour="mariadb")
    target = tmp_path / "snapshot.bak"
    with target.open("wb") as stream:
        writer = BackupWriter(stream, block_size=4096, header=Header(
            moment, ServerVersion(10, 11, 6, "10.11.6-MariaDB"), (SnapshotInfo(ImageType.CONSISTENT_SNAPSHOT, 2),)
        ))
        writer.write_catalogue(Catalogue(("utf8mb4", "utf8mb4"), ("root",),
                                         (Database("shop", (Table("orders", 1), Table("blobs", 1))),)))
        writer.write_metadata([
            MetadataItem(MetadataKind.GLOBAL, ItemType.DATABASE, 0, create_statement="CREATE DATABASE shop"),
            MetadataItem(MetadataKind.TABLE, ItemType.TABLE, 0, database=0, snapshot_number=1, create_statement=ORDERS),
            MetadataItem(MetadataKind.TABLE, ItemType.TABLE, 1, database=0, snapshot_number=1),
        ])
        writer.write_table_data(1, 0, encode_rows(orders, [{"id": i, "note": f"n{i}"} for i in range(3)]))
        writer.write_table_data(1, 1, b"opaque", last=True)
        writer.write_table_data(1, 0, encode_rows(orders, [{"id": 9, "note": None}]), last=True)
        writer.finish(Summary(moment, moment, "mariadb-bin.000003", 1234, "mariadb-bin.000003", 1000))
    return target


def test_backup_inspect_text(tmp_path, capsys):
    target = _backup_image(tmp_path)
    status, out, err = run(capsys, "backup", "inspect", target)
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[:3] == [
        f"# {target}",
        "format version 1, block size 4096",
        "created 2026-11-22 01:02:03 by server 10.11.6 (10.11.6-MariaDB); "
        "flags 0x0004: summary at the end, binlog position, little-endian server",
    ]
    assert "summary: validity point 2026-11-22 01:02:03, end 2026-11-22 01:02:03, " \
           "binlog mariadb-bin.000003:1234 (group mariadb-bin.000003:1000)" in lines
    assert "database shop: table orders, table blobs" in lines
    assert lines[-2].split() == ["1", "0", "2", "29", "4", "`shop`.`orders`"]
    assert lines[-1].split() == ["1", "1", "1", "6", "-", "`shop`.`blobs`"]


def test_backup_inspect_json(tmp_path, capsys):
    status, out, _ = run(capsys, "backup", "inspect", "--json", _backup_image(tmp_path))
    report = json.loads(out)
    assert status == 0
    assert report["summary"]["binlog_file"] == "mariadb-bin.000003" and report["summary"]["binlog_position"] == 1234
    assert report["header"]["snapshots"] == [{
        "snapshot": 1, "image_type": "CONSISTENT_SNAPSHOT", "format_version": 1, "options": 0, "tables": 2,
        "engine": None, "engine_version": None,
    }]
    assert [(t["table"], t["chunks"], t["bytes"], t["rows"], t["complete"]) for t in report["tables"]] == [
        ("orders", 2, 29, 4, True), ("blobs", 1, 6, None, True),
    ]


def test_backup_inspect_damaged_image_is_a_located_error(tmp_path, capsys):
    target = _backup_image(tmp_path)
    data = target.read_bytes()
    target.write_bytes(data[:20])
    status, out, err = run(capsys, "backup", "inspect", target)
    assert status == 1 and out == ""
    assert err.startswith(f"binlog-codec: {target}: at 15: image ends at 20, inside a fragment of ")


# -- several files, positions, inputs, -v, Ctrl-C, verify warnings ------------------------------

SAMPLES = [REPO / "samples" / "mariadb-bin.000001", REPO / "samples" / "mariadb-bin.000002"]


def _positions(out: str) -> list[tuple[str, int]]:
    return [(Path(r["file"]).name, r["pos"]) for r in map(json.loads, out.splitlines())]


def test_start_position_is_the_first_files_stop_position_the_last_files(capsys):
    status, out, err = run(capsys, "events", "--json", "--start-position", 2122, "--stop-position", 1052, *SAMPLES)
    assert status == 0 and err == ""
    got = _positions(out)
    assert got[0] == ("mariadb-bin.000001", 2122) and got[-1] == ("mariadb-bin.000002", 943)
    assert ("mariadb-bin.000002", 4) in got  # the second file is read from its start
    status, out, _ = run(capsys, "rows", "--start-position", 2122, "--stop-position", 1052, *SAMPLES)
    assert status == 0
    assert [(Path(r["file"]).name, r["pos"]) for r in map(json.loads, out.splitlines())] == [
        ("mariadb-bin.000001", 2392), ("mariadb-bin.000001", 2392), ("mariadb-bin.000001", 2782),
        ("mariadb-bin.000001", 3309), ("mariadb-bin.000001", 3644), ("mariadb-bin.000002", 609),
        ("mariadb-bin.000002", 943),
    ]


def test_one_file_takes_both_positions(capsys):
    status, out, _ = run(capsys, "events", "--json", "--start-position", 2122, "--stop-position", 2544, SAMPLES[0])
    assert status == 0 and [pos for _, pos in _positions(out)] == [2122, 2164, 2243, 2392]


@pytest.mark.parametrize("command", ["events", "rows"])
def test_start_position_inside_an_event_is_one_error(capsys, command):
    status, out, err = run(capsys, command, "--start-position", 2125, *SAMPLES)
    assert status == 1 and out == ""
    assert err == (
        f"binlog-codec: {SAMPLES[0]}: at 2125: start position 2125 is not an event start: it is inside the event "
        "at 2122 (MARIADB_GTID); the nearest events start at 2122 and 2164 (ANNOTATE_ROWS)\n"
    )


def test_start_positions_the_reader_reports_itself(capsys):
    size = SAMPLES[0].stat().st_size
    status, out, _ = run(capsys, "events", "--json", "--start-position", 2, SAMPLES[0])
    assert status == 0 and _positions(out)[0] == ("mariadb-bin.000001", 4)  # as mariadb-binlog: from the start
    status, out, _ = run(capsys, "events", "--json", "--start-position", size, SAMPLES[0])
    assert status == 0 and out == ""
    status, _, err = run(capsys, "events", "--start-position", size + 1, SAMPLES[0])
    assert status == 1 and "past the end of the file" in err
    with pytest.raises(SystemExit) as caught:
        main(["events", "--start-position", "-1", str(SAMPLES[0])])
    assert caught.value.code == 2
    assert "argument --start-position: a byte position is a whole number from 0, not '-1'" in capsys.readouterr().err


@pytest.fixture
def stdin(monkeypatch, tmp_path):
    """``stdin(data)`` makes standard input a real file holding ``data``: the command reads
    its file descriptor, as it does a pipe's."""
    with contextlib.ExitStack() as opened:
        def given(data: bytes) -> None:
            path = tmp_path / "stdin"
            path.write_bytes(data)
            monkeypatch.setattr(sys, "stdin", opened.enter_context(open(path)))
        yield given


def test_stdin_is_a_binlog(capsys, stdin):
    stdin(SAMPLES[1].read_bytes())
    status, out, err = run(capsys, "events", "--json", "-")
    assert status == 0 and err == ""
    assert {r["file"] for r in map(json.loads, out.splitlines())} == {"(stdin)"}
    assert len(out.splitlines()) == len(run(capsys, "events", "--json", SAMPLES[1])[1].splitlines())


def test_stdin_that_is_no_binlog_is_named(capsys, stdin):
    stdin(b"hello")
    status, out, err = run(capsys, "verify", "-")
    assert status == 1 and out == "FAILED (stdin)\n" and err == "binlog-codec: (stdin): at 0: not a binlog file: expected magic fe 62 69 6e, found 68 65 6c 6c\n"


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
def test_compressed_binlogs_are_read(tmp_path, capsys, stdin, kind):
    data = SAMPLES[0].read_bytes()
    packed = gzip.compress(data) if kind == "gzip" else zstandard.ZstdCompressor().compress(data)
    named = tmp_path / f"mariadb-bin.000001.{'gz' if kind == 'gzip' else 'zst'}"
    unnamed = tmp_path / "mariadb-bin.copy"
    named.write_bytes(packed)
    unnamed.write_bytes(packed)
    want = run(capsys, "rows", SAMPLES[0])[1].replace(str(SAMPLES[0]), "X")
    for target in (named, unnamed):
        status, out, err = run(capsys, "rows", target)
        assert status == 0 and err == "" and out.replace(str(target), "X") == want
    stdin(packed)
    status, out, _ = run(capsys, "verify", "-")
    assert status == 0 and out == "OK (stdin): 36 events, 3781 bytes, checksums CRC32 verified\n"


def test_damaged_gzip_is_one_line(tmp_path, capsys):
    target = tmp_path / "cut.gz"
    target.write_bytes(gzip.compress(SAMPLES[0].read_bytes())[:200])
    status, out, err = run(capsys, "events", target)
    assert status == 1
    assert err.startswith(f"binlog-codec: {target}: gzip-compressed, and its gzip data does not decompress: ")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("command", ["rows", "verify", "transactions", "metadata"])
def test_v_after_a_subcommand_without_verbose_output_names_the_progress_options(capsys, command):
    with pytest.raises(SystemExit) as caught:
        main([command, "-v", str(SAMPLES[0])])
    err = capsys.readouterr().err
    assert caught.value.code == 2
    assert err.startswith(f"usage: binlog-codec {command} ")
    assert f"'binlog-codec -v {command} ...' or 'binlog-codec {command} --progress ...'" in err


@pytest.mark.parametrize("command", ["events", "rows", "verify", "transactions", "metadata"])
def test_progress_on_stderr_for_every_file_command(capsys, monkeypatch, command):
    monkeypatch.setattr(cli, "PROGRESS_INTERVAL", 0.0)
    size = SAMPLES[0].stat().st_size
    for options in (["-v", command], [command, "--progress"]):
        status, out, err = run(capsys, *options, SAMPLES[0])
        assert status == 0
        lines = err.splitlines()
        assert lines[0].startswith("binlog-codec ")  # version and build
        assert any(re.match(rf"{SAMPLES[0]}: \d+\.\d% \(\d+ of {size} bytes\), [1-9]", line) for line in lines)
        assert lines[-1].startswith(f"{SAMPLES[0]}: done, {size} bytes, ")
    status, _, err = run(capsys, command, SAMPLES[0])
    assert status == 0 and err == ""


def test_ctrl_c_exits_130_without_a_traceback():
    """SIGINT while binlog-codec waits for standard input, once it says it reads it. The command
    starts with SIGINT's default action, as from a terminal: a process started in the background
    by a shell inherits SIGINT ignored, and Python then never raises KeyboardInterrupt."""
    process = subprocess.Popen(
        [sys.executable, "-m", "binlog_codec.cli", "-v", "events", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert b"copying standard input" in _stderr_line_with(process, b"copying standard input")
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)  # standard input still open: only the signal can end the copy
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
        process.stdin.close()
    assert process.returncode == 130
    assert b"Traceback" not in err and err.strip().endswith(b"binlog-codec: interrupted")


def _stderr_line_with(process: subprocess.Popen, text: bytes) -> bytes:
    """The first stderr line of ``process`` holding ``text`` (every line up to it, read)."""
    for line in iter(process.stderr.readline, b""):
        if text in line:
            return line
    return b""


def _cut(tmp_path, size: int) -> Path:
    target = tmp_path / f"cut-{size}.000001"
    target.write_bytes(SAMPLES[0].read_bytes()[:size])
    return target


def test_verify_warns_of_a_file_that_is_only_the_magic(tmp_path, capsys):
    target = _cut(tmp_path, 4)
    status, out, err = run(capsys, "verify", target)
    assert status == 3
    assert out == f"WARNING {target}: 0 events, 4 bytes, checksums none (pre-checksum format)\n"
    assert err == f"binlog-codec: {target}: warning: no events after the 4-byte magic: an empty binlog, or a copy cut short\n"


def test_verify_warns_of_a_file_cut_inside_a_transaction(tmp_path, capsys):
    inside, between = _cut(tmp_path, 2544), _cut(tmp_path, 2879)  # before the XID at 2848; after it
    status, out, err = run(capsys, "verify", inside, between)
    assert status == 3
    assert out.splitlines() == [
        f"WARNING {inside}: 21 events, 2544 bytes, checksums CRC32 verified",
        f"OK {between}: 25 events, 2879 bytes, checksums CRC32 verified",
    ]
    assert err == (
        f"binlog-codec: {inside}: warning: the file ends inside a transaction: the one at 2122 (GTID 0-1-5, "
        "4 events) has no COMMIT, XID or statement end; a copy cut short?\n"
    )
    bad = path(sorted(BAD_FILES)[0])
    assert run(capsys, "verify", inside, bad)[0] == 1  # an error outweighs a warning


def test_help_lists_the_exit_statuses(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "exit status:" in out and "130  interrupted" in out and "3    verify:" in out
