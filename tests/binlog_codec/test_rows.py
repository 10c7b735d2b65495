"""Row images of the shared fixtures against the values recorded in expected.json."""

from __future__ import annotations

import calendar
import struct
from decimal import Decimal

import pytest

from binlog_codec.events import Event, OpaqueEvent, RotateEvent, RowsEvent, TableMapEvent, read
from binlog_codec.rows import DecodingPlan, decode_rows, read_rows
from binlog_codec.table_map import ColumnType, decode_table_map, table_map
from binlog_codec.values import decode_decimal, decimal_size, time2_packed, time_text
from fixture_facts import expected, facts, files_with_fact, good_files, path

ROW_FILES = [name for name in good_files() if "events" in expected()[name].get("derived_rows", {})]


def decoded_events(name: str):
    flavour = "mariadb" if "MariaDB" in expected()[name]["measured"]["server_version"] else "mysql"
    plans = {}
    for event in read(path(name)):
        if isinstance(event, TableMapEvent):
            plans[event.table_id] = DecodingPlan(table_map(event), flavour)
        elif isinstance(event, RowsEvent):
            yield event, plans[event.table_id], decode_rows(event, plans[event.table_id])


def as_convention(value, column):
    """Our value in expected.json's typing (see its ``conventions``)."""
    kind = column.type_code
    if value is None:
        return None
    if kind == ColumnType.BIT:
        return {"bytes_hex": value.to_bytes(((column.length or 0) + 7) // 8, "big").hex()}
    if column.real_type == ColumnType.ENUM:
        return {"enum_index": column.enum_values.index(value) + 1 if column.enum_values and value else value}
    if column.real_type == ColumnType.SET:
        if column.set_values is None:
            return {"set_bits": value}
        labels = value.split(",") if value else []
        return {"set_bits": sum(1 << column.set_values.index(label) for label in labels)}
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    if kind == ColumnType.YEAR:
        return {"year": value}
    if kind in (ColumnType.DATETIME, ColumnType.DATETIME2):
        return {"datetime": value.replace(" ", "T")}
    if kind in (ColumnType.DATE, ColumnType.NEWDATE):
        return {"date": value}
    if kind in (ColumnType.TIME, ColumnType.TIME2):
        return {"time": value}
    if kind in (ColumnType.TIMESTAMP, ColumnType.TIMESTAMP2):
        whole, _, fraction = value.partition(".")
        seconds = calendar.timegm(tuple(int(p) for p in whole.replace("-", " ").replace(":", " ").split()) + (0, 0, 0))
        return {"timestamp_epoch": f"{seconds}.{fraction}" if fraction else str(seconds)}
    if kind == ColumnType.FLOAT:
        return {"float": value}
    if kind == ColumnType.DOUBLE:
        return {"double": value}
    if kind == ColumnType.VECTOR:
        return {"vector_f32": value, "bytes_hex": struct.pack(f"<{len(value)}f", *value).hex()}
    if kind == ColumnType.JSON:
        return "json"
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"bytes_hex": value.hex()}
    return value


def same(ours, wanted) -> bool:
    if ours == "json":
        return "json" in wanted or "json_diff" in wanted
    if isinstance(wanted, dict) and "float" in wanted:
        return struct.pack("<f", ours["float"]) == struct.pack("<f", float(wanted["float"]))
    if isinstance(wanted, dict) and "double" in wanted:
        return ours["double"] == float(wanted["double"])
    if isinstance(wanted, dict) and isinstance(ours, dict) and "vector_f32" in ours and "bytes_hex" in wanted:
        return ours["bytes_hex"] == wanted["bytes_hex"]
    if isinstance(wanted, dict) and "vector_f32" in wanted:
        return [struct.pack("<f", v) for v in ours["vector_f32"]] == [struct.pack("<f", v) for v in wanted["vector_f32"]]
    if isinstance(wanted, dict) and "bytes_hex" in wanted and isinstance(ours, str):
        return ours.encode("utf-8").hex() == wanted["bytes_hex"]
    return ours == wanted


@pytest.mark.parametrize("name", ROW_FILES)
def test_row_values_match_expected(name):
    wanted_events = expected()[name]["derived_rows"]["events"]
    got = list(decoded_events(name))
    assert len(got) == len(wanted_events)
    for (event, plan, rows), wanted in zip(got, wanted_events):
        assert event.pos == wanted["offset"] or wanted.get("inside_transaction_payload")
        assert len(rows) == len(wanted["rows"])
        for row, wanted_row in zip(rows, wanted["rows"]):
            for image in ("before", "after"):
                ours = getattr(row, image)
                if image not in wanted_row:
                    assert ours is None or image == "after" and event.kind == "update" and not wanted_row.get(image)
                    continue
                assert ours is not None
                expected_image = wanted_row[image]
                assert len(ours) == len(expected_image), (image, ours, expected_image)
                for index_text, value in expected_image.items():
                    column = plan.table.columns[int(index_text)]
                    converted = as_convention(ours[column.display_name], column)
                    assert same(converted, value), (name, event.pos, image, column.display_name, converted, value)


def test_minimal_image_keeps_absent_columns_absent():
    (event, plan, rows), = decoded_events("blackbeam__rust_mysql_common/minimal_row_metadata.000001")
    (row,) = rows
    assert len(row.after) == 3 and len(plan.names) == 5  # the MINIMAL image carried 3 of 5 columns
    assert row.after["@5"] == 3230202323  # INT UNSIGNED above 2^31, named by position


def test_negative_time_and_partial_update():
    (_, _, rows), = decoded_events("blackbeam__rust_mysql_common/time_issue.000001")
    assert rows[0].after == {"@1": "-507:48:27"}
    partial = [rows for event, _, rows in decoded_events("blackbeam__rust_mysql_common/json.binlog.000001") if event.type_code == 39]
    (changes,) = partial
    assert changes and all(change.partial == ["@2"] for change in changes)
    assert all(isinstance(change.after["@2"], bytes) and "@2" not in change.before for change in changes)  # MINIMAL before-image: absent, not NULL


@pytest.mark.parametrize(
    "precision, scale, raw, text",
    [(10, 5, "800000002710", "0.10000"), (4, 2, "8132", "1.50"), (4, 2, "7ecd", "-1.50"), (5, 0, "800000", "0")],
)
def test_decimal_layout(precision, scale, raw, text):
    assert decimal_size(precision, scale) == len(raw) // 2
    assert str(decode_decimal(bytes.fromhex(raw), precision, scale)) == text


@pytest.mark.parametrize(
    "raw, fsp, text",
    [("800000", 0, "00:00:00"), ("7fffff", 0, "-00:00:01"), ("800001" "01", 2, "00:00:01.01"), ("7fffff" "00", 1, "-00:00:01.0")],
)
def test_time2_layout(raw, fsp, text):
    assert time_text(time2_packed(bytes.fromhex(raw), fsp), fsp) == text


# -- the facts upstream tests assert, through the public row API ---------------


def rows_at(name: str, offset: int, **options):
    """The row records of the rows event at ``offset``, with the table they belong to."""
    tables = {}
    for event in read(path(name)):
        if isinstance(event, TableMapEvent):
            tables[event.table_id] = decode_table_map(event)
    records = [record for record in read_rows(path(name), **options) if record.pos == offset]
    assert records, f"no rows event at {offset}"
    return records, next(t for t in tables.values() if (t.database, t.table) == (records[0].database, records[0].table))


def assert_image(ours: dict, wanted: dict, table) -> None:
    assert len(ours) == len(wanted) or len(wanted) < len(table.columns)
    for index_text, value in wanted.items():
        column = table.columns[int(index_text)]
        converted = as_convention(ours[column.display_name], column)
        assert same(converted, value), (column.display_name, converted, value)


@pytest.mark.parametrize("name", files_with_fact("row_values"))
def test_row_values_facts(name):
    for fact in facts(name, "row_values"):
        records, table = rows_at(name, fact["locator"]["event_offset"])
        assert f"{table.database}.{table.table}" == fact["table"]
        assert len(records) == len(fact["rows"])
        for record, wanted in zip(records, fact["rows"]):
            change = record.change
            if "values" in wanted:  # {"image": ..., "values": ...}
                assert_image(getattr(change, wanted["image"]), wanted["values"], table)
                assert change.before is None or not wanted.get("before_image_absent")
                continue
            assert record.kind == fact.get("op", record.kind)
            for image in ("before", "after"):
                if image in wanted:
                    assert_image(getattr(change, image), wanted[image], table)
                elif fact.get(f"expect_{image}_image", "") is None:
                    assert getattr(change, image) is None


@pytest.mark.parametrize("name", files_with_fact("row_value"))
def test_row_value_facts_outside_json(name):
    """Scalar ``row_value`` facts; the JSON ones are asserted in test_json_binary.py."""
    for fact in facts(name, "row_value"):
        if isinstance(fact["value"], dict) and "json" in fact["value"]:
            continue
        records, table = rows_at(name, fact["locator"]["event_offset"])
        column = table.columns[fact["column"]]
        ours = getattr(records[fact["row"]].change, fact["image"])[column.display_name]
        assert same(as_convention(ours, column), fact["value"])


def test_rows_event_fact():
    name = "EasyPost__rust-mysql-binlog/bin-log.000001"
    (fact,) = facts(name, "rows_event")
    (record,), table = rows_at(name, fact["locator"]["event_offset"], assume_charset="utf8mb4")
    assert (record.timestamp, record.gtid, record.database, record.table) == (
        fact["timestamp"], fact["gtid"], fact["schema"], fact["table"]
    )
    after = [record.change.after[c.display_name] for c in table.columns]
    assert after[0] == fact["row0_after"]["0"]
    assert after[1] == Decimal(fact["row0_after"]["1"]["decimal_numeric_equals"])
    assert str(after[1]) == fact["decimal_text_with_column_scale"]["value"]["decimal"]
    assert isinstance(after[2], str)  # the table map records no charset: text only as assumed
    (plain,), _ = rows_at(name, fact["locator"]["event_offset"])
    assert plain.change.after["@3"] == after[2].encode()


def test_assumed_charset_keeps_what_is_not_text_as_bytes():
    records = list(read_rows(path("osheroff__mysql-binlog-connector-java/mysql-bin.sakila"), assume_charset="utf8mb4"))
    values = [v for r in records for v in r.change.after.values()]
    assert any(isinstance(v, bytes) and v.startswith(b"\x89PNG") for v in values)  # the staff picture BLOB
    assert any(v == "PENELOPE" for v in values)


def test_row_columns_fact():
    name = "blackbeam__rust_mysql_common/mariadb-bin.000001"
    (fact,) = facts(name, "row_columns")
    tables = [decode_table_map(e) for e in read(path(name)) if isinstance(e, TableMapEvent)]
    assert tables and all((t.database, t.table) == (fact["schema"], fact["table"]) for t in tables)
    for table in tables:
        assert [c.name for c in table.columns] == fact["column_names"]
        assert [("PRI_KEY" if c.primary_key_position is not None else None) for c in table.columns] == fact["column_flags"]
        assert [c.collation_id or 0 for c in table.columns] == fact["column_collation_ids"]
    assert all(set(r.change.after) == set(fact["column_names"]) for r in read_rows(path(name)))


def test_row_column_collation_fact():
    name = "blackbeam__rust_mysql_common/minimal_row_metadata.000001"
    (fact,) = facts(name, "row_column_collation")
    (table,) = [decode_table_map(e) for e in read(path(name)) if isinstance(e, TableMapEvent)]
    assert table.columns[fact["column"]].collation_id == fact["collation_id"]
    assert table.columns[fact["column"]].name is None  # no COLUMN_NAME: the rows name it @3 (1-based)


def test_column_count_fact():
    name = "blackbeam__rust_mysql_common/mysql-enum-string-set.000001"
    (fact,) = facts(name, "column_count")
    images = [image for r in read_rows(path(name)) for image in (r.change.before, r.change.after) if image is not None]
    assert images and all(len(image) == fact["value"] for image in images)


@pytest.mark.parametrize("name", files_with_fact("table_map_optional_metadata"))
def test_table_map_optional_metadata_facts(name):
    tables = [decode_table_map(e) for e in read(path(name)) if isinstance(e, TableMapEvent)]
    for fact in facts(name, "table_map_optional_metadata"):
        assert fact["field"] == "VECTOR_DIMENSIONALITY"
        mine = [t for t in tables if t.table == fact["table"]]
        assert mine
        for table in mine:
            assert [c.vector_dimension for c in table.columns if c.type_code == ColumnType.VECTOR] == fact["value"]


@pytest.mark.parametrize("name", files_with_fact("table_map_optional_metadata_parses"))
def test_every_optional_metadata_field_parses(name):
    tables = [decode_table_map(e) for e in read(path(name)) if isinstance(e, TableMapEvent)]
    assert tables and all(t.metadata_level == "FULL" and not t.unknown_fields for t in tables)
    assert any(c.visible is False for t in tables for c in t.columns)  # COLUMN_VISIBILITY read


def test_mariadb_event_kinds_are_decoded():
    name = "blackbeam__rust_mysql_common/mariadb-bin.000001"
    (fact,) = facts(name, "unknown_event_kinds_tolerated")
    events: list[Event] = list(read(path(name)))
    kinds = {e.type_code for e in events}
    assert set(fact["event_types_inferred"]["value"]) <= kinds
    assert not any(isinstance(e, OpaqueEvent) for e in events)  # each has its typed record
    (rotate_check,) = facts(name, "rotate_name_check")
    assert rotate_check["vacuous"] and not any(isinstance(e, RotateEvent) for e in events)


def test_records_carry_their_table_version_and_place_inside_a_payload():
    records = list(read_rows(path("osheroff__mysql-binlog-connector-java/mysql-bin.compressed")))
    assert records and all(r.inner_offset is not None and r.inner_offset > 0 for r in records)
    plain = list(read_rows(path("osheroff__mysql-binlog-connector-java/mysql-bin.checksum-crc32")))
    assert all(r.inner_offset is None for r in plain)
    keys = {(r.pos, r.inner_offset, r.row_index) for r in plain}
    assert len(keys) == len(plain)
    by_table = {}
    for record in plain:
        by_table.setdefault((record.database, record.table), set()).add(id(record.table_map))
    assert all(len(ids) == 1 for ids in by_table.values())  # the map logged per transaction is one version
    assert all(r.table_map.table == r.table for r in plain)


def test_a_table_map_body_met_again_is_the_same_version_decoded_once():
    """Servers log the table map again in every transaction: its body is decoded the first time."""
    from dataclasses import replace

    from binlog_codec.event_types import EventType
    from binlog_codec.reader import BinlogReader
    from binlog_codec.rows import TableVersions

    maps = [raw for name in good_files() for raw in BinlogReader(path(name)) if raw.type_code == EventType.TABLE_MAP]
    first, again = next(
        (a, b) for i, a in enumerate(maps) for b in maps[i + 1:] if a.body == b.body and a.pos != b.pos
    )
    versions = TableVersions()
    version = versions.version_of(first)
    assert versions.version_of(again) is version
    other_id = replace(again, body=bytes([(again.body[0] + 1) % 256]) + again.body[1:])
    other = versions.version_of(other_id)
    assert other is not version and other.table.table_id != version.table.table_id
    assert other.table.columns == version.table.columns
