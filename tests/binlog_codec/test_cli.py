"""The ``binlog-codec`` command line: output formats, options and exit status."""

from __future__ import annotations

import json

import pytest

from binlog_codec.cli import main
from binlog_codec.event_types import EventType
from binlog_codec.json_diff import JsonDiff
from binlog_codec.rows import RowChange
from binlog_codec.table_map import Column, ColumnType, TableMap
from binlog_codec.writer import BinlogWriter, JsonUpdate, rows_event_body_for, table_map_event_body
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
