"""Staged image files: what the decode step writes, the materialize step reads back, the same
for Arrow files and for Parquet ones."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import fs as pafs

from spark_jobs import image_files

LOCAL = pafs.LocalFileSystem()
BEFORE = pa.struct([("id", pa.int64()), ("name", pa.string())])


def rows(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"n{i}" if i % 3 else None for i in ids]),
        "_op": pa.array(["u"] * count),
        "_before": pa.array([{"id": i - 1, "name": None} if i % 2 else None for i in ids], BEFORE),
    })


@pytest.fixture(params=["arrow", "parquet"])
def staged(request, tmp_path):
    """(path, the rows it holds): written in three batches, as the decode step writes."""
    parts = [rows(0, 5), rows(5, 7), rows(12, 4)]
    if request.param == "arrow":
        path = str(tmp_path / f"part{image_files.SUFFIX}")
        writer = image_files.ImageFileWriter(path, parts[0].schema)
        for part in parts:
            writer.write(part)
        writer.close()
    else:
        path = str(tmp_path / "part.parquet")
        pq.write_table(pa.concat_tables(parts), path)
    return path, pa.concat_tables(parts)


def test_schema_rows_and_whole_file_read_back(staged):
    path, expected = staged
    assert image_files.is_arrow(path) == path.endswith(".arrow")
    assert image_files.schema(LOCAL, path) == expected.schema
    assert image_files.row_count(LOCAL, path) == 16
    assert image_files.read(LOCAL, path).equals(expected)


@pytest.mark.parametrize("batch_rows", [1, 6, 100])
def test_batches_hold_about_batch_rows_rows_in_file_order(staged, batch_rows):
    path, expected = staged
    tables = list(image_files.batches(LOCAL, path, batch_rows))
    assert pa.concat_tables(tables).combine_chunks().equals(expected.combine_chunks())
    assert all(table.num_rows >= min(batch_rows, 4) for table in tables[:-1])
    assert len(tables) <= -(-16 // batch_rows) + 2  # the Arrow file's batches are not cut


def test_columns_and_a_field_of_the_before_image(staged):
    path, expected = staged
    (table,) = image_files.batches(LOCAL, path, 100, ["_op", "_before.id", "id"])
    assert sorted(table.column_names) == ["_before", "_op", "id"]
    assert table.column("id").equals(expected.column("id"))
    ids = [row and row["id"] for row in table.column("_before").to_pylist()]
    assert ids == [row and row["id"] for row in expected.column("_before").to_pylist()] and None in ids
    names = [field.name for field in table.schema.field("_before").type]
    assert names == (["id", "name"] if image_files.is_arrow(path) else ["id"])  # Parquet reads the field alone
