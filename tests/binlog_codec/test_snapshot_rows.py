"""``snapshot_rows``: the row format of backup table data, read by the rows events' decoder."""

from __future__ import annotations

import dataclasses
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlog_codec.create_table import table_map_of
from binlog_codec.rows import DecodingPlan
from binlog_codec.snapshot_rows import decode_rows, encode_chunks, encode_rows
from binlog_codec.table_map import ColumnType, TableMap
from binlog_codec.values import shortest_float32
from test_values import KINDS
from typed_values import typed


def decoded_form(column, value):
    """A drawn value as the decoder returns it: FLOAT (and VECTOR) values as the shortest
    decimal of their 4-byte float."""
    if value is None:
        return None
    if column.type_code == ColumnType.FLOAT:
        return shortest_float32(struct.pack("<f", value))
    if column.type_code == ColumnType.VECTOR:
        return [shortest_float32(struct.pack("<f", item)) for item in value]
    return value


@st.composite
def tables_and_rows(draw):
    """A table of random column types and rows for it, from the (column, value) strategies of
    test_values: a row takes a drawn value where the drawn column is the table's, else NULL."""
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=10))
    count = draw(st.integers(1, 5))
    columns, rows = [], [{} for _ in range(count)]
    for index, kind in enumerate(kinds):
        pairs = [draw(KINDS[kind]) for _ in range(count)]
        column = dataclasses.replace(pairs[0][0], index=index, name=f"c{index}", nullable=True)
        columns.append(column)
        for row, (drawn, value) in zip(rows, pairs):
            same = dataclasses.replace(drawn, index=index, name=column.name, nullable=True) == column
            keep = same and draw(st.integers(0, 5)) > 0
            row[column.name] = decoded_form(column, value) if keep else None
    return TableMap(1, "db", "t", columns, metadata_level="FULL"), rows


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables_and_rows())
def test_decode_inverts_encode(case):
    table, rows = case
    data = encode_rows(table, rows, flavour="mysql")
    assert typed(list(decode_rows(table, data, flavour="mysql"))) == typed(rows)


TABLE = table_map_of(
    "CREATE TABLE t (id int NOT NULL, name varchar(10) CHARSET utf8mb4, price decimal(5,2), PRIMARY KEY (id))",
    database="shop",
)


def test_a_row_is_a_full_write_rows_image():
    """Null bitmap over every column (bit i for column i, unused bits 0), then the non-NULL values."""
    data = encode_rows(TABLE, [{"id": 7, "name": None, "price": None}, {"id": -1, "name": "né", "price": None}])
    assert data == bytes([0b110]) + (7).to_bytes(4, "little") + bytes([0b100]) + (-1).to_bytes(
        4, "little", signed=True
    ) + bytes([3]) + "né".encode()
    plan = DecodingPlan(TABLE, "mariadb")
    assert plan.image(data, 0, plan.columns_of([0, 1, 2])) == ({"id": 7, "name": None, "price": None}, 5)


def test_chunks_hold_whole_rows():
    rows = [{"id": n, "name": "x" * n, "price": None} for n in range(10)]
    chunks = list(encode_chunks(TABLE, rows, chunk_size=20))
    assert len(chunks) > 1
    assert [row for chunk in chunks for row in decode_rows(TABLE, chunk)] == rows
    assert b"".join(chunks) == encode_rows(TABLE, rows)
    assert list(encode_chunks(TABLE, [])) == []


def test_a_cut_row_is_an_error_naming_it():
    data = encode_rows(TABLE, [{"id": 1, "name": "abc", "price": None}] * 2)
    with pytest.raises(ValueError, match=r"table shop.t: row 1 at chunk offset 9: .*name"):
        list(decode_rows(TABLE, data[:-1]))


def test_a_row_must_give_every_column():
    with pytest.raises(ValueError, match="absent is not NULL"):
        encode_rows(TABLE, [{"id": 1, "name": "a"}])
