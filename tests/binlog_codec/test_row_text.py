"""The compiled JSON Lines writer (:mod:`binlog_codec.row_text`) against the Python path of
``binlog-codec rows``: the same bytes for every rows event it writes, and the Python path
(with its located error) for every event it hands back.

Rows events are made of random columns and values (the strategies of ``test_values``) by
:func:`binlog_codec.value_encoder.encode_row_image`. ``test_compiled`` compares the whole
command on every fixture binlog, compiled and pure Python.
"""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal
import struct

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_compiled import require_compiled
from test_values import KINDS, column

from binlog_codec import cli
from binlog_codec.errors import BinlogError
from binlog_codec.event_types import EventType
from binlog_codec.events import RowsEvent
from binlog_codec.reader import EventHeader
from binlog_codec.rows import DecodingPlan, RowsOfTable
from binlog_codec.table_map import ColumnType, TableMap
from binlog_codec.value_encoder import encode_row_image

HEAD = '{"file": "t.bin", "pos": 4, "row_index": '
MIDDLE = ', "type": "x", "db": "db", "table": "t", "gtid": null, "timestamp": 1, '
UTF8MB4 = 45
TYPE_OF_KIND = {"insert": EventType.WRITE_ROWS, "update": EventType.UPDATE_ROWS, "delete": EventType.DELETE_ROWS}

_chunks = cli._rows_encoder()


def encode(value) -> str:
    return "".join(_chunks(value, 0))


@pytest.fixture(scope="module")
def row_text():
    require_compiled()
    from binlog_codec import row_text

    return row_text


def rows_event(kind: str, columns, rows: bytes, before: list[int], after: list[int] | None) -> RowsEvent:
    def bitmap(present: list[int]) -> bytes:
        return sum(1 << i for i in present).to_bytes((len(columns) + 7) // 8, "little")

    header = EventHeader(1, TYPE_OF_KIND[kind], 1, 100 + len(rows), 0, 0)
    return RowsEvent(
        file="t.bin", pos=4, end_pos=104 + len(rows), header=header, kind=kind, table_id=1, flags=0,
        extra_data=b"", column_count=len(columns), columns_before=bitmap(before),
        columns_after=None if after is None else bitmap(after), rows=rows, rows_size=len(rows),
    )


def compiled_text(row_text, plan: DecodingPlan, event: RowsEvent) -> bytes | None:
    lines = row_text.Lines()
    lines.add(b"[earlier line]\n")
    written = lines.rows(row_text.TextPlan(plan, encode), event, HEAD.encode(), MIDDLE.encode())
    text = lines.take()
    assert text.startswith(b"[earlier line]\n")  # a refused event adds nothing
    return text[len(b"[earlier line]\n"):] if written else None


def python_text(plan: DecodingPlan, event: RowsEvent) -> bytes | str:
    """The Python path's lines, or the text of the located error it raises."""
    try:
        return "".join(cli._python_lines(RowsOfTable(event, plan.table, plan, None), HEAD, MIDDLE, encode)).encode()
    except BinlogError as exc:
        return str(exc)


@st.composite
def rows_events(draw):
    """A table of random columns, and a rows event of 1-3 rows of a random value per column
    (each NULL in some images), sometimes cut short. Returns the plan, the event and whether
    it was cut."""
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=8))
    columns, values = [], []
    for index, kind in enumerate(kinds):
        col, value = draw(KINDS[kind])
        columns.append(dataclasses.replace(col, index=index, name=f"c{index}"))
        values.append(value)
    plan = DecodingPlan(TableMap(1, "db", "t", columns))
    kind = draw(st.sampled_from(sorted(TYPE_OF_KIND)))

    def image(present: list[int]) -> bytes:
        nulls = {i for i in present if draw(st.integers(0, 4)) == 0}
        return encode_row_image(
            columns, {columns[i].display_name: None if i in nulls else values[i] for i in present}, present
        )

    def present() -> list[int]:
        return sorted(draw(st.sets(st.integers(0, len(columns) - 1), min_size=1)))

    before = present()
    after = present() if kind == "update" else None
    rows = b"".join(image(before) + (image(after) if after else b"") for _ in range(draw(st.integers(1, 3))))
    cut = draw(st.one_of(st.just(len(rows)), st.integers(1, len(rows))))
    return plan, rows_event(kind, columns, rows[:cut], before, after), cut < len(rows)


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(rows_events())
def test_rows_events_are_written_as_the_python_path_writes_them(row_text, example):
    plan, event, cut = example
    compiled = compiled_text(row_text, plan, event)
    expected = python_text(plan, event)
    if compiled is not None:
        assert compiled == expected
    elif not cut:  # whole events of valid values are all the compiled writer's
        assert isinstance(expected, str), "the compiled writer refused an event the Python path writes"


def one_column_event(col, value, kind: str = "insert") -> tuple[DecodingPlan, RowsEvent]:
    col = dataclasses.replace(col, index=0, name="c0")
    image = encode_row_image([col], {"c0": value}, [0])
    return DecodingPlan(TableMap(1, "db", "t", [col])), rows_event(kind, [col], image, [0], None)


def written_value(row_text, col, value) -> str:
    plan, event = one_column_event(col, value)
    text = compiled_text(row_text, plan, event)
    assert text == python_text(plan, event)
    return json.loads(text)["after"]["c0"], text.decode().split('"c0": ', 1)[1].split("}", 1)[0]


DOUBLE = column(ColumnType.DOUBLE)


@given(st.floats(allow_nan=True, allow_infinity=True))
@example(0.1 + 0.2)
@example(1e-4)
@example(0.99999e-4)
@example(999999999999999.9)
@example(1e15)
@example(1e16)
@example(-0.0)
@example(5e-324)
@example(2.0**53)
@example(1 / 3)
@example(123456.789)
@settings(max_examples=2000, deadline=None)
def test_a_double_is_written_as_repr_writes_it(row_text, value):
    _, text = written_value(row_text, DOUBLE, value)
    assert text == json.dumps(value)


@given(st.integers(-10**9, 10**9), st.integers(0, 6))
@settings(max_examples=1000, deadline=None)
def test_a_short_decimal_double_is_written_with_its_digits(row_text, digits, scale):
    value = digits / 10**scale  # what a workload stores: amounts, scores, ratios
    _, text = written_value(row_text, DOUBLE, value)
    assert text == repr(value) and float(text) == value


def test_text_that_is_not_utf8_goes_to_the_python_path_and_its_error(row_text):
    col = column(ColumnType.VARCHAR, length=20, collation_id=UTF8MB4)
    plan, event = one_column_event(col, "abc")
    event.rows = event.rows.replace(b"abc", b"a\xffc")
    assert compiled_text(row_text, plan, event) is None
    error = python_text(plan, event)
    assert "t.bin" in error and "at 4" in error and "WRITE_ROWS" in error


def test_an_enum_index_beyond_its_labels_goes_to_the_python_path(row_text):
    col = column(ColumnType.STRING, ColumnType.ENUM, length=1, enum_values=["a", "b"])
    plan, event = one_column_event(col, "b")
    assert json.loads(compiled_text(row_text, plan, event))["after"] == {"c0": "b"}
    event.rows = event.rows[:-1] + b"\x03"
    assert compiled_text(row_text, plan, event) is None
    assert "ENUM index 3 beyond its 2 labels" in python_text(plan, event)


def test_a_decimal_digit_group_out_of_range_goes_to_the_python_path(row_text):
    col = column(ColumnType.NEWDECIMAL, precision=4, scale=2)
    plan, event = one_column_event(col, Decimal("12.34"))
    assert json.loads(compiled_text(row_text, plan, event))["after"] == {"c0": "12.34"}
    event.rows = event.rows[:-1] + bytes([0xFF])  # fraction group 255 > 99
    assert compiled_text(row_text, plan, event) is None
    assert python_text(plan, event) != b""


def test_control_characters_and_quotes_are_escaped_as_json_escapes_them(row_text):
    col = column(ColumnType.BLOB, pack_length=2, collation_id=UTF8MB4)
    value = "".join(map(chr, range(0x20))) + '"\\/\x7f é 😀 \u2028'
    decoded, text = written_value(row_text, col, value)
    assert decoded == value
    assert text == json.dumps(value, ensure_ascii=False)


@pytest.mark.parametrize("special", ['"', "\\", "\n", "\x1f", "\x7f", "é", "😀"])
def test_a_character_to_escape_is_found_at_any_position_of_a_long_string(row_text, special):
    col = column(ColumnType.BLOB, pack_length=2, collation_id=UTF8MB4)
    for at in range(24):
        value = "abcdefghijklmnopqrstuvwx"[:at] + special + "ABCDEFGHIJKLMNOPQRSTUVWX"[at:]
        assert written_value(row_text, col, value)[1] == json.dumps(value, ensure_ascii=False)


def test_binary_values_are_hex_and_binary_n_is_padded(row_text):
    blob = column(ColumnType.BLOB, pack_length=2, collation_id=63)
    assert written_value(row_text, blob, bytes(range(256)))[0] == {"hex": bytes(range(256)).hex()}
    binary = column(ColumnType.STRING, length=8, collation_id=63)
    assert written_value(row_text, binary, b"ab")[0] == {"hex": "6162000000000000"}


@pytest.mark.parametrize("raw, text", [
    (struct.pack(">I", 0), '"0000-00-00 00:00:00"'),
    (struct.pack(">I", 1), '"1970-01-01 00:00:01"'),
    (struct.pack(">I", 951782400), '"2000-02-29 00:00:00"'),
    (struct.pack(">I", 2**32 - 1), '"2106-02-07 06:28:15"'),
])
def test_timestamps_are_utc_calendar_dates(row_text, raw, text):
    col = dataclasses.replace(column(ColumnType.TIMESTAMP2, fsp=0), index=0, name="c0")
    plan = DecodingPlan(TableMap(1, "db", "t", [col]))
    event = rows_event("insert", [col], b"\x00" + raw, [0], None)
    written = compiled_text(row_text, plan, event)
    assert written == python_text(plan, event)
    assert f'"c0": {text}' in written.decode()


def test_the_lines_of_a_real_binlog_are_the_python_paths(row_text, fixtures_dir):
    """Every rows event of a MariaDB fixture, written by both; most by the compiled writer."""
    from binlog_codec.rows import rows_events

    path = next(p for p in sorted(fixtures_dir.rglob("mariadb-bin.*")) if p.suffix not in (".md", ".json"))
    compiled_events = 0
    for rows in rows_events(path):
        if rows.event.type_code == EventType.PARTIAL_UPDATE_ROWS:
            continue
        text = compiled_text(row_text, rows.plan, rows.event)
        if text is not None:
            compiled_events += 1
            assert text == python_text(rows.plan, rows.event)
    assert compiled_events > 0
