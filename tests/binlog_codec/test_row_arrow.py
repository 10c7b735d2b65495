"""The compiled Arrow builder (:mod:`binlog_codec.row_arrow`) against
:class:`~binlog_codec.arrow.ImageBatchBuilder`: the same record batches for every rows event
it takes, and every event it hands back taken by the Python path in log order
(:class:`~binlog_codec.table_batches.TableBatches`).

Rows events are made of random columns and values by the strategy of ``test_row_text``.
"""

from __future__ import annotations

import dataclasses
import struct
from datetime import date, datetime, timezone
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from test_compiled import require_compiled
from test_row_text import UTF8MB4, one_column_event, rows_event, rows_events
from test_values import column

from binlog_codec.arrow import Commit, ImageBatchBuilder, column_mapping
from binlog_codec.errors import BinlogError
from binlog_codec.event_types import EventType
from binlog_codec.rows import DecodingPlan, RowsOfTable, event_records, rows_events as file_rows_events
from binlog_codec.table_batches import TableBatches
from binlog_codec.table_map import ColumnType, TableMap
from binlog_codec.value_encoder import encode_row_image

COMMIT = Commit(1_700_000_000, 7, 2**64 - 1)


@pytest.fixture(scope="module")
def row_arrow():
    require_compiled()
    from binlog_codec import row_arrow

    return row_arrow


def native_batch(row_arrow, plan: DecodingPlan, events, gtid="0-1-5", commit=COMMIT) -> pa.RecordBatch | None:
    """The compiled builder's batch of ``events``; None when it hands one back."""
    python = ImageBatchBuilder(plan.table)
    conversions = [column_mapping(col).convert for col in plan.table.columns]
    builder = row_arrow.ArrowRows(python.schema, python.schema_id, plan, conversions)
    for event in events:
        if builder.add(event, gtid, commit) < 0:
            return None
    batch = builder.flush()
    batch.validate(full=True)
    assert len(builder) == 0
    return batch


def python_batch(plan: DecodingPlan, events, gtid="0-1-5", commit=COMMIT) -> pa.RecordBatch | str:
    """ImageBatchBuilder's batch of ``events``, or the text of the located error of decoding them."""
    builder = ImageBatchBuilder(plan.table)
    try:
        for event in events:
            for record in event_records(RowsOfTable(event, plan.table, plan, gtid)):
                builder.append(record, commit)
    except BinlogError as exc:
        return str(exc)
    return builder.build()


def has_unrepresentable(batch: pa.RecordBatch) -> bool:
    return any(batch.column("_unrepresentable").to_pylist())


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(rows_events())
def test_rows_events_become_the_batches_image_batch_builder_makes(row_arrow, example):
    plan, event, cut = example
    native = native_batch(row_arrow, plan, [event])
    expected = python_batch(plan, [event])
    if native is not None:
        assert isinstance(expected, pa.RecordBatch), expected
        assert native.equals(expected)
    elif not cut:  # whole events are the compiled builder's, but for what only the Python path stores
        assert isinstance(expected, str) or has_unrepresentable(expected)


def test_change_columns_are_those_of_each_row(row_arrow):
    col = column(ColumnType.LONG, unsigned=False)
    plan, first = one_column_event(col, 5)
    _, second = one_column_event(col, 6, kind="delete")
    second.pos, second.inner_offset, second.file = 900, 33, "logs/mysql-bin.000042"
    batch = native_batch(row_arrow, plan, [first, first, second], gtid=None, commit=None)
    assert batch.equals(python_batch(plan, [first, first, second], gtid=None, commit=None))
    rows = batch.to_pylist()
    assert [row["_op"] for row in rows] == ["c", "c", "d"]
    assert [row["_binlog_file"] for row in rows] == ["t.bin", "t.bin", "mysql-bin.000042"]
    assert [row["_binlog_seq"] for row in rows] == [None, None, 42]
    assert [row["_binlog_inner_offset"] for row in rows] == [None, None, 33]
    assert [row["_present_columns"] for row in rows] == [["c0"], ["c0"], []]
    assert rows[2]["_before"] == {"c0": 6} and rows[2]["c0"] is None
    assert rows[0]["_commit_ts"] == datetime.fromtimestamp(1, timezone.utc)  # the event's own time


def test_an_xid_above_2_63_and_a_bigint_unsigned_are_exact(row_arrow):
    col = column(ColumnType.LONGLONG, unsigned=True)
    plan, event = one_column_event(col, 2**64 - 1)
    batch = native_batch(row_arrow, plan, [event])
    assert batch.equals(python_batch(plan, [event]))
    assert batch.column("c0")[0].as_py() == Decimal(2**64 - 1)
    assert batch.column("_xid")[0].as_py() == Decimal(2**64 - 1)


@pytest.mark.parametrize("col, value, stored", [
    (column(ColumnType.NEWDECIMAL, precision=38, scale=10), Decimal("-1234567890123456789012345678.0123456789"),
     Decimal("-1234567890123456789012345678.0123456789")),
    (column(ColumnType.DATE), "1969-12-31", date(1969, 12, 31)),
    (column(ColumnType.DATETIME2, fsp=3), "9999-12-31 23:59:59.999", datetime(9999, 12, 31, 23, 59, 59, 999000)),
    (column(ColumnType.YEAR), 0, 0),
    (column(ColumnType.STRING, ColumnType.ENUM, length=1, enum_values=["a", "bé"]), "bé", "bé"),
    (column(ColumnType.STRING, length=8, collation_id=63), b"ab", b"ab\0\0\0\0\0\0"),
])
def test_values_are_stored_as_their_arrow_types_hold_them(row_arrow, col, value, stored):
    plan, event = one_column_event(col, value)
    batch = native_batch(row_arrow, plan, [event])
    assert batch.equals(python_batch(plan, [event]))
    assert batch.column("c0")[0].as_py() == stored


@pytest.mark.parametrize("col, value", [
    (column(ColumnType.DATE), "0000-00-00"),
    (column(ColumnType.DATE), "2021-02-29"),
    (column(ColumnType.DATETIME2, fsp=0), "2020-00-15 10:00:00"),
])
def test_a_value_arrow_cannot_hold_goes_to_the_python_path_and_unrepresentable(row_arrow, col, value):
    plan, event = one_column_event(col, value)
    assert native_batch(row_arrow, plan, [event]) is None
    assert python_batch(plan, [event]).column("_unrepresentable").to_pylist() == [[("c0", value)]]


def test_the_zero_timestamp_goes_to_the_python_path(row_arrow):
    col = dataclasses.replace(column(ColumnType.TIMESTAMP2, fsp=0), index=0, name="c0")
    plan = DecodingPlan(TableMap(1, "db", "t", [col]))
    event = rows_event("insert", [col], b"\x00" + struct.pack(">I", 0), [0], None)
    assert native_batch(row_arrow, plan, [event]) is None
    assert python_batch(plan, [event]).column("_unrepresentable").to_pylist() == [[("c0", "0000-00-00 00:00:00")]]


def test_text_that_is_not_utf8_goes_to_the_python_path_and_its_error(row_arrow):
    col = column(ColumnType.VARCHAR, length=20, collation_id=UTF8MB4)
    plan, event = one_column_event(col, "abc")
    event.rows = event.rows.replace(b"abc", b"a\xffc")
    assert native_batch(row_arrow, plan, [event]) is None
    error = python_batch(plan, [event])
    assert "t.bin" in error and "at 4" in error and "WRITE_ROWS" in error


def test_a_refused_event_takes_back_what_it_appended(row_arrow):
    """An event refused in its second row leaves the builder as it was before it."""
    cols = [dataclasses.replace(column(ColumnType.LONG, unsigned=False), index=0, name="c0"),
            dataclasses.replace(column(ColumnType.DATE), index=1, name="c1")]
    plan = DecodingPlan(TableMap(1, "db", "t", cols))
    python = ImageBatchBuilder(plan.table)
    builder = row_arrow.ArrowRows(python.schema, python.schema_id, plan, [column_mapping(c).convert for c in cols])
    ok = encode_row_image(cols, {"c0": 1, "c1": "2020-01-01"}, [0, 1])
    zero = encode_row_image(cols, {"c0": 2, "c1": "0000-00-00"}, [0, 1])
    first = rows_event("insert", cols, ok, [0, 1], None)
    refused = rows_event("insert", cols, ok + zero, [0, 1], None)
    assert builder.add(first, None, None) == 1
    assert builder.add(refused, None, None) == -1
    assert len(builder) == 1
    batch = builder.flush()
    batch.validate(full=True)
    assert batch.equals(python_batch(plan, [first], gtid=None, commit=None))


def test_a_column_bitmap_too_short_for_the_table_is_an_error_not_a_read_past_it(row_arrow):
    """The C builders read a bitmap's bytes without bounds checks: one shorter than the table's
    columns need is refused (a RowsEvent made by hand; the decoders never make one)."""
    cols = [dataclasses.replace(column(ColumnType.LONG, unsigned=False), index=i, name=f"c{i}") for i in range(9)]
    plan = DecodingPlan(TableMap(1, "db", "t", cols))
    python = ImageBatchBuilder(plan.table)
    builder = row_arrow.ArrowRows(python.schema, python.schema_id, plan, [column_mapping(c).convert for c in cols])
    event = rows_event("insert", cols, encode_row_image(cols, {"c0": 1}, [0]), [0], None)
    short = dataclasses.replace(event, columns_before=event.columns_before[:1])
    with pytest.raises(ValueError, match="a column bitmap of 1 bytes for 9 columns"):
        builder.add(short, None, None)


def test_a_flushed_batch_keeps_its_values_while_the_builder_goes_on(row_arrow):
    """flush hands its buffers over without a copy: the next batches are written elsewhere,
    and the batches outlive the builder."""
    cols = [dataclasses.replace(column(ColumnType.LONG, unsigned=False), index=0, name="c0"),
            dataclasses.replace(column(ColumnType.VARCHAR, length=40, collation_id=UTF8MB4), index=1, name="c1")]
    plan = DecodingPlan(TableMap(1, "db", "t", cols))
    python = ImageBatchBuilder(plan.table)
    builder = row_arrow.ArrowRows(python.schema, python.schema_id, plan, [column_mapping(c).convert for c in cols])
    events = [
        rows_event("insert", cols, encode_row_image(cols, {"c0": n, "c1": f"row {n}" * n}, [0, 1]), [0, 1], None)
        for n in range(6)
    ]
    batches = []
    for at in (0, 2, 4):
        for event in events[at:at + 2]:
            assert builder.add(event, "0-1-5", COMMIT) == 1
        batches.append(builder.flush())
    del builder
    for at, batch in zip((0, 2, 4), batches):
        batch.validate(full=True)
        assert batch.equals(python_batch(plan, events[at:at + 2]))
    assert [batch.column("c0").to_pylist() for batch in batches] == [[0, 1], [2, 3], [4, 5]]


def test_table_batches_keep_log_order_across_both_paths(row_arrow):
    """Events the compiled builder takes and events it hands back, interleaved: one table in log order."""
    col = column(ColumnType.DATE)
    plan, good = one_column_event(col, "2020-01-02")
    _, zero = one_column_event(col, "0000-00-00")
    events = [good, zero, zero, good, good, zero]
    native, python = TableBatches(plan.table, native=True), TableBatches(plan.table, native=False)
    for event in events:
        rows = RowsOfTable(event, plan.table, plan, None)
        assert native.add(rows) == python.add(rows) == 1
    assert len(native) == 6 and native.native_rows == 3
    table = native.flush()
    assert table.equals(python.flush())
    assert table.column("c0").to_pylist() == [date(2020, 1, 2), None, None, date(2020, 1, 2), date(2020, 1, 2), None]
    assert table.column("c0").num_chunks == 4  # native, Python, native, Python
    assert len(native) == 0 and native.flush().num_rows == 0


def test_partial_json_updates_go_to_the_python_path(row_arrow):
    col = column(ColumnType.LONG, unsigned=False)
    plan, event = one_column_event(col, 1)
    event.header = event.header._replace(type_code=EventType.PARTIAL_UPDATE_ROWS)
    assert event.type_code == EventType.PARTIAL_UPDATE_ROWS
    batches = TableBatches(plan.table, native=True)
    assert batches.add(RowsOfTable(event, plan.table, plan, None)) == 1
    assert batches.native_rows == 0


def test_the_batches_of_real_binlogs_are_the_python_paths(row_arrow, fixtures_dir):
    """Every rows event of every fixture binlog, through both; most through the compiled builder."""
    compiled_rows = checked_files = 0
    for path in sorted(fixtures_dir.rglob("*")):
        if not path.is_file() or path.suffix in (".md", ".json", ".gz", ".xb", ".txt"):
            continue
        native, python = {}, {}
        try:
            for rows in file_rows_events(path):
                key = id(rows.table)
                if key not in native:
                    native[key] = TableBatches(rows.table, rows.plan.flavour, native=True)
                    python[key] = TableBatches(rows.table, rows.plan.flavour, native=False)
                assert native[key].add(rows, COMMIT) == python[key].add(rows, COMMIT)
        except BinlogError:
            continue  # the fixtures of broken files; their errors are test_rows' business
        for key, batches in native.items():
            compiled_rows += batches.native_rows
            table = batches.flush()
            table.validate(full=True)
            assert table.equals(python[key].flush()), (path, table.schema)
        checked_files += 1
    assert checked_files > 20 and compiled_rows > 0
