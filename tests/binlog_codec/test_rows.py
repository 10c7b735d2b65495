"""Row images of the shared fixtures against the values recorded in expected.json."""

from __future__ import annotations

import calendar
import struct
from decimal import Decimal

import pytest

from binlog_codec.events import RowsEvent, TableMapEvent, read
from binlog_codec.rows import DecodingPlan, decode_rows
from binlog_codec.table_map import ColumnType, table_map
from binlog_codec.values import decode_decimal, decimal_size, time2_packed, time_text
from fixture_facts import expected, good_files, path

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
        return {"vector_f32": value}
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
