"""Which warehouse columns are dictionary encoded (spark_jobs.parquet_encoding)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings, strategies as st

from spark_jobs import materialize, parquet_encoding

LEAF_KINDS = st.sampled_from([pa.int64(), pa.string(), pa.binary(), pa.decimal128(20, 0), pa.timestamp("us")])


@st.composite
def kinds(draw, depth: int = 2) -> pa.DataType:
    """A column type: a leaf, or a struct, list or map of them."""
    if depth == 0 or draw(st.booleans()):
        return draw(LEAF_KINDS)
    shape = draw(st.sampled_from(["struct", "list", "map"]))
    if shape == "list":
        return pa.list_(draw(kinds(depth - 1)))
    if shape == "map":
        return pa.map_(pa.string(), draw(kinds(depth - 1)))
    names = draw(st.lists(st.sampled_from("abcde"), min_size=1, max_size=3, unique=True))
    return pa.struct([pa.field(name, draw(kinds(depth - 1))) for name in names])


@settings(max_examples=60, deadline=None)
@given(st.lists(kinds(), min_size=1, max_size=4))
def test_leaf_names_are_the_ones_parquet_writes(tmp_path_factory, types):
    table = pa.table({f"c{i}": pa.nulls(3, kind) for i, kind in enumerate(types)})
    path = tmp_path_factory.mktemp("leaves") / "t.parquet"
    pq.write_table(table, path)
    schema = pq.ParquetFile(path).metadata.schema
    written = [schema.column(i).path for i in range(len(schema))]
    named = [leaf for name, column in zip(table.column_names, table.columns)
             for leaf, _, _ in parquet_encoding.leaves(name, column.combine_chunks())]
    assert named == written


def test_repeating_columns_chosen_distinct_ones_not():
    rows = 10_000
    table = pa.table({
        "id": pa.array(range(rows), pa.int64()),
        "status": pa.array(["new", "paid", "shipped"] * (rows // 3) + ["new"] * (rows % 3)),
        "note": pa.array([f"note {i}" for i in range(rows)]),
        "_present_columns": pa.array([["id", "status", "note"]] * rows),
        "_before": pa.array([{"id": i, "status": "new"} for i in range(rows)]),
        "_unrepresentable": pa.array([[]] * rows, pa.map_(pa.string(), pa.string())),
    })
    chosen = parquet_encoding.dictionary_columns(table)
    assert chosen == ["status", "_present_columns.list.element", "_before.status",
                      "_unrepresentable.key_value.key", "_unrepresentable.key_value.value"]


def test_threshold_is_one_distinct_in_four():
    assert parquet_encoding._repeats(pa.array([1, 1, 1, 1, 2, 2, 2, 2]))  # 2 distinct in 8
    assert not parquet_encoding._repeats(pa.array([1, 2, 3, 1, 1, 1, 1, 1]))  # 3 distinct in 8
    assert parquet_encoding._repeats(pa.array([None, None], pa.string()))  # nothing to judge: cheap either way
    assert not parquet_encoding._repeats(pa.array([0.5, 1.5]))


def test_written_files_use_dictionaries_where_chosen(tmp_path):
    rows = 5_000
    table = pa.table({
        "id": pa.array(range(rows), pa.int64()),
        "_op": pa.array(["c", "u"] * (rows // 2)),
        "_present_columns": pa.array([["id"]] * rows),
        "_before": pa.array([{"id": i} for i in range(rows)]),
        "_unrepresentable": pa.array([[]] * rows, pa.map_(pa.string(), pa.string())),
    })
    target = tmp_path / "changes.parquet"
    materialize.write_parquet(table, str(target))
    metadata = pq.ParquetFile(target).metadata
    encodings = {metadata.schema.column(i).path: metadata.row_group(0).column(i).encodings for i in range(5)}
    assert "RLE_DICTIONARY" not in encodings["id"]
    assert "RLE_DICTIONARY" in encodings["_op"]
    assert "RLE_DICTIONARY" in encodings["_present_columns.list.element"]
    statistics = {metadata.schema.column(i).path: metadata.row_group(0).column(i).is_stats_set for i in range(5)}
    assert statistics == {"id": True, "_op": True, "_present_columns.list.element": False,
                          "_before.id": True, "_unrepresentable.key_value.key": False}
    assert pq.read_table(target).equals(table)


def test_statistics_for_every_leaf_outside_lists_and_maps():
    table = pa.table({
        "a": pa.array([1]),
        "s": pa.array([{"x": 1, "l": [1]}]),
        "l": pa.array([[{"y": 1}]]),
        "m": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64())),
    })
    assert parquet_encoding.statistics_columns(table) == ["a", "s.x"]
