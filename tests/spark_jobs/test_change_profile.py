"""``spark_jobs.change_profile``: what the quality gate measures in a table's changes files.

The counts are checked against a brute-force reading of the same rows (duplicate change
keys across files, rows out of order across batch boundaries), the ranges at the edges of
their types (2^64 in a ``decimal128(20, 0)``), text that is not UTF-8, and the memory a
profile takes, which must not grow with the rows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

from mariadb import REPO_ROOT
from spark_jobs import change_profile
from spark_jobs.change_profile import profile_table, type_name
from spark_jobs.run_facts import IntegerRange, SourceColumn, TableFacts

ORDERED = "each row's change key above the one before"


def changes(keys: list[tuple], **columns) -> pa.Table:
    """Change rows with the given change keys (seq, pos, inner offset or None, row) and source columns."""
    seq, pos, inner, row = (list(part) for part in zip(*keys)) if keys else ([], [], [], [])
    return pa.table({
        **columns,
        "_op": pa.array(["c"] * len(keys)),
        "_binlog_file": pa.array(["mariadb-bin.000001"] * len(keys)),
        "_binlog_seq": pa.array(seq, pa.int64()), "_binlog_pos": pa.array(pos, pa.int64()),
        "_binlog_inner_offset": pa.array(inner, pa.int32()), "_row_index": pa.array(row, pa.int32()),
        "_schema_id": pa.array(["v1"] * len(keys)),
    })


def profile(tmp_path: Path, tables: list[pa.Table], facts: TableFacts | None = None) -> dict[tuple, dict]:
    """The profile of ``tables`` written as files ``0.parquet``, ``1.parquet``...; by (check, file, column
    or field, expected)."""
    files = []
    for number, table in enumerate(tables):
        pq.write_table(table, tmp_path / f"{number}.parquet")
        files.append((str(tmp_path / f"{number}.parquet"), f"{number}.parquet"))
    rows = profile_table(facts or TableFacts("db", "t"), files)
    return {(row["check"], row["file"], row["column"] or row["field"], row["expected"]): row for row in rows}


keys = st.tuples(st.integers(1, 2), st.integers(4, 9), st.none() | st.integers(0, 2), st.integers(0, 3))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(keys, st.integers(0, 3)), max_size=60), st.integers(1, 5))
def test_duplicate_change_keys_are_counted_across_files_exactly(tmp_path_factory, placed, batch_rows):
    """Keys dealt to up to four files, each in log order, read a few rows at a time: the profile
    counts the keys held more than once, as a count over all rows does."""
    folder = tmp_path_factory.mktemp("files")
    per_file = [sorted((k for k, f in placed if f == number), key=lambda k: (k[0], k[1], -1 if k[2] is None else k[2], k[3]))
                for number in range(4)]
    normal = Counter((k[0], k[1], -1 if k[2] is None else k[2], k[3]) for k, _ in placed)
    original = change_profile.BATCH_ROWS
    change_profile.BATCH_ROWS = batch_rows
    try:
        measured = profile(folder, [changes(file) for file in per_file])
    finally:
        change_profile.BATCH_ROWS = original
    unique = measured[("unique_key", None, "change key", "each change key once")]
    assert unique["duplicate_keys"] == sum(1 for count in normal.values() if count > 1)
    assert all(measured[("log_order", f"{n}.parquet", "change key", ORDERED)]["unordered_rows"] == 0
               for n in range(4) if per_file[n])
    assert sum(measured[("row_count", f"{n}.parquet", None, None)]["rows"] for n in range(4)) == len(placed)
    if unique["duplicate_keys"]:
        assert "times" in unique["example"] and unique["at"].endswith(".parquet")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=40), st.integers(1, 4))
def test_rows_out_of_log_order_are_counted_across_batches(tmp_path_factory, positions, batch_rows):
    folder = tmp_path_factory.mktemp("files")
    original = change_profile.BATCH_ROWS
    change_profile.BATCH_ROWS = batch_rows
    try:
        measured = profile(folder, [changes([(1, pos, None, 0) for pos in positions])])
    finally:
        change_profile.BATCH_ROWS = original
    descents = sum(1 for before, after in zip(positions, positions[1:]) if before > after)
    if positions:
        assert measured[("log_order", "0.parquet", "change key", ORDERED)]["unordered_rows"] == descents


def facts_of(**ranges: IntegerRange) -> TableFacts:
    facts = TableFacts("db", "t")
    for name, bounds in ranges.items():
        facts.columns[name] = SourceColumn(name, {"x"}, {bounds: ["v1"]})
    return facts


def test_integer_ranges_are_exact_at_the_edges_of_their_types(tmp_path):
    unsigned_bigint = IntegerRange("BIGINT UNSIGNED", 0, 2**64 - 1)
    rows = [(1, 10 + n, None, 0) for n in range(4)]
    data = changes(rows, biu=pa.array([Decimal(0), Decimal(2**64 - 1), Decimal(2**64), None], pa.decimal128(20, 0)),
                   iu=pa.array([0, -1, 2**32 - 1, 2**32], pa.int64()), ti=pa.array([-128, 127, 0, 1], pa.int8()))
    facts = facts_of(biu=unsigned_bigint, iu=IntegerRange("INT UNSIGNED", 0, 2**32 - 1),
                     ti=IntegerRange("TINYINT", -128, 127))
    measured = profile(tmp_path, [data], facts)
    biu = measured[("range", "0.parquet", "biu", str(unsigned_bigint))]
    assert (biu["outside_range"], biu["example"], biu["expected"]) == (1, str(2**64), str(unsigned_bigint))
    assert biu["at"] == "mariadb-bin.000001 at 12 row 0"
    iu = measured[("range", "0.parquet", "iu", "INT UNSIGNED [0, 4294967295]")]
    assert (iu["outside_range"], iu["example"]) == (2, "-1")
    assert measured[("range", "0.parquet", "ti", "TINYINT [-128, 127]")]["outside_range"] == 0


def test_a_range_applies_to_the_rows_of_its_table_versions_only(tmp_path):
    data = changes([(1, 10, None, 0), (1, 11, None, 0)], ti=pa.array([300, 300], pa.int16()))
    data = data.set_column(data.schema.get_field_index("_schema_id"), "_schema_id", pa.array(["v1", "v2"]))
    facts = TableFacts("db", "t", {"ti": SourceColumn("ti", {"int16"}, {
        IntegerRange("TINYINT", -128, 127): ["v1"], IntegerRange("SMALLINT", -32768, 32767): ["v2"]})})
    measured = profile(tmp_path, [data], facts)
    assert measured[("range", "0.parquet", "ti", "TINYINT [-128, 127]")]["outside_range"] == 1  # the v1 row
    assert measured[("range", "0.parquet", "ti", "SMALLINT [-32768, 32767]")]["outside_range"] == 0  # v2's


def invalid_utf8_strings(values: list[bytes]) -> pa.Array:
    """A string array holding ``values`` as they are, UTF-8 or not (Arrow checks nothing here)."""
    binary = pa.array(values, pa.binary())
    return pa.Array.from_buffers(pa.string(), len(binary), binary.buffers())


def test_text_that_is_not_utf8_or_holds_the_replacement_character_is_counted(tmp_path):
    text = invalid_utf8_strings([b"caf\xc3\xa9", b"caf\xe9", "caf\ufffd".encode(), b"plain"])
    facts = TableFacts("db", "t", {"c": SourceColumn("c", {"string"})})
    measured = profile(tmp_path, [changes([(1, 10 + n, None, 0) for n in range(4)], c=text)], facts)
    c = measured[("text", "0.parquet", "c", "valid UTF-8 without U+FFFD")]
    assert (c["invalid_text"], c["example"], c["at"]) == (2, "caf\ufffd", "mariadb-bin.000001 at 11 row 0")


def test_a_file_without_the_change_columns_is_counted_and_measured_no_further(tmp_path):
    measured = profile(tmp_path, [pa.table({"id": [1, 2, 3]})], TableFacts("db", "t"))
    assert measured[("row_count", "0.parquet", None, None)]["rows"] == 3
    assert {check for check, _, _, _ in measured} == {"row_count", "columns", "unique_key"}


MEASURE_MEMORY = r"""
import json, re, sys
from spark_jobs import change_profile
from spark_jobs.change_profile import profile_table
change_profile.BATCH_ROWS = 8192  # both runs many batches long: the steady state of any run
from spark_jobs.run_facts import IntegerRange, SourceColumn, TableFacts
facts = TableFacts("db", "t", {"id": SourceColumn("id", {"int64"}, {IntegerRange("BIGINT", -2**63, 2**63 - 1): ["v1"]}),
                               "note": SourceColumn("note", {"string"})})
rows = profile_table(facts, [(path, path) for path in sys.argv[1:]])
# the peak resident memory of this process's own image (ru_maxrss would count the forking parent's)
peak = int(re.search(r"VmHWM:\s+(\d+) kB", open("/proc/self/status").read()).group(1)) * 1024
print(json.dumps({"peak": peak,
                  "rows": sum(row["rows"] for row in rows if row["check"] == "row_count")}))
"""


ROW_GROUP_ROWS = 10_000


def bucketed_files(folder: Path, total: int, files: int = 3) -> list[str]:
    """``total`` change rows of a 100-byte text column dealt round robin to ``files`` files (as the
    materialize step buckets keys), each in log order, in row groups of ROW_GROUP_ROWS rows (a run of any size has row groups of one size)."""
    paths = []
    for number in range(files):
        positions = pa.array(range(number, total, files), pa.int64())
        count = len(positions)
        data = pa.table({
            "id": positions, "note": pa.array([f"{n:0100d}" for n in range(count)]),
            "_op": pa.array(["u"] * count), "_binlog_file": pa.array(["mariadb-bin.000001"] * count),
            "_binlog_seq": pa.array([1] * count, pa.int64()), "_binlog_pos": positions,
            "_binlog_inner_offset": pa.nulls(count, pa.int32()), "_row_index": pa.array([0] * count, pa.int32()),
            "_schema_id": pa.array(["v1"] * count),
        })
        paths.append(str(folder / f"{number}.parquet"))
        pq.write_table(data, paths[-1], row_group_size=ROW_GROUP_ROWS)
    return paths


def peak_memory(files: list[str]) -> dict:
    run = subprocess.run([sys.executable, "-c", MEASURE_MEMORY, *files], capture_output=True, text=True,
                         cwd=REPO_ROOT, timeout=600, check=True)
    return json.loads(run.stdout)


@pytest.mark.integration
def test_memory_stays_flat_as_the_run_grows(tmp_path):
    """A profile of 1,000,000 rows takes about the memory of one of 200,000: the files are read a
    batch at a time, and the change keys checked window by window."""
    (tmp_path / "small").mkdir()
    (tmp_path / "large").mkdir()
    small = peak_memory(bucketed_files(tmp_path / "small", 200_000))
    large = peak_memory(bucketed_files(tmp_path / "large", 1_000_000))
    assert (small["rows"], large["rows"]) == (200_000, 1_000_000)
    # the rows' own text alone is 100 MB at 1M rows: a profile holding them would grow by that much
    assert large["peak"] - small["peak"] < 25 * 2**20, (small, large)


@pytest.mark.parametrize("kind", [
    pa.list_(pa.float32()), pa.list_(pa.field("item", pa.float32(), nullable=False)), pa.large_list(pa.int64()),
    pa.list_(pa.float32(), 3), pa.struct([("v", pa.list_(pa.float32())), ("n", pa.int8())]), pa.list_(pa.list_(pa.utf8())),
])
def test_a_column_type_read_back_from_parquet_is_named_as_arrow_names_it(tmp_path, kind):
    """pyarrow writes a list's values as ``element`` (the Parquet specification's name): read back,
    a VECTOR column's type is ``list<element: float>``, which metadata/table_schemas names
    ``list<item: float>``; the profile names it the same way, so the schema check holds."""
    pq.write_table(pa.table({"c": pa.array([], kind)}), tmp_path / "f.parquet")
    read_back = pq.read_schema(tmp_path / "f.parquet").field("c").type
    assert "element" in str(read_back)
    assert type_name(read_back) == str(kind)
