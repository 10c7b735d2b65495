"""The decode step through Spark (local[2]): staged images, table versions and transaction index.

* Every good fixture decodes to exactly the row images ``read_rows`` gives
  (built with ImageBatchBuilder), per table version, read back with pyarrow.
* The transaction index agrees with the scan and the XID events, and counts
  the rows; the table versions carry the SQL types and the positions seen.
* One transaction per split stages the same content as one split per file;
  decoding the same input again gives the same file names and bytes.
* A binlog written by a real MariaDB decodes.
* Bad fixtures fail with the codec's located error, and nothing becomes visible.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import fs as pafs

from binlog_codec import ddl, errors
from binlog_codec.arrow import Commit, ImageBatchBuilder, schema_id
from binlog_codec.events import FormatDescriptionEvent, XidEvent, read
from binlog_codec.rows import read_rows
from binlog_codec.schema_change import NotSchemaChange
from binlog_codec.table_map import sql_type
from binlog_codec.transactions import scan_transactions
from fixture_facts import BAD_FILES, good_files, path
from mariadb import binlog_of
from spark_jobs import image_files
from spark_jobs.decode import TRANSACTION_SCHEMA, decode
from warehouse.layout import name_of, path_part

KEY = [("_binlog_file", "ascending"), ("_binlog_pos", "ascending"), ("_binlog_inner_offset", "ascending"),
       ("_row_index", "ascending")]
# Decoded with one transaction per split as well (24 splits).
SMALL_SPLITS = [
    "osheroff__mysql-binlog-connector-java/mysql-bin.compressed",
    "blackbeam__rust_mysql_common/json.binlog.000001",
    "blackbeam__rust_mysql_common/mariadb-bin.000001",
    "blackbeam__rust_mysql_common/vector.binlog",
    "EasyPost__rust-mysql-binlog/bin-log.000001",
]
SAKILA = "osheroff__mysql-binlog-connector-java/mysql-bin.sakila"


def flavour_of(file: Path) -> str:
    first = next(event for event in read(file) if isinstance(event, FormatDescriptionEvent))
    return "mariadb" if "mariadb" in first.server_version.lower() else "mysql"


def complete_part(file: Path) -> int | None:
    """Where the file's complete transactions end, None for the whole file."""
    transactions = list(scan_transactions(file))
    return transactions[-1].start if transactions and not transactions[-1].complete else None


def commits_of(file: Path) -> list[tuple[int, int, Commit]]:
    """Each complete transaction's (start, end, commit): its last event, with its XID if it is one."""
    events = list(read(file))
    commits = []
    for transaction in scan_transactions(file):
        if transaction.complete:
            last = [e for e in events if transaction.start <= e.pos < transaction.end][-1]
            xid = last.xid if isinstance(last, XidEvent) else None
            commits.append((transaction.start, transaction.end, Commit(last.header.timestamp, last.header.server_id, xid)))
    return commits


def expected_images(files: list[Path]) -> tuple[dict[str, pa.Table], Counter]:
    """Per schema id, the rows ``read_rows`` gives, as ImageBatchBuilder builds them with the commit
    of their transaction, in key order; the rows per (database, table)."""
    builders: dict[str, ImageBatchBuilder] = {}
    counts = Counter()
    for file in files:
        flavour = flavour_of(file)
        commits = commits_of(file)
        for record in read_rows(file, stop_position=complete_part(file)):
            key = schema_id(record.table_map, flavour)
            (commit,) = [c for start, end, c in commits if start <= record.pos < end]
            builders.setdefault(key, ImageBatchBuilder(record.table_map, flavour)).append(record, commit)
            counts[record.database, record.table] += 1
    return {key: pa.Table.from_batches([b.build()]).sort_by(KEY) for key, b in builders.items()}, counts


def read_staged(name: str) -> pa.Table:
    """A staged image file, as the materialize step reads it."""
    return image_files.read(pafs.LocalFileSystem(), name)


def staged_images(result, files: list[Path] | None = None) -> dict[str, pa.Table]:
    """Per schema id, the staged rows (of ``files`` only, when given) in key order."""
    parts: dict[str, list[pa.Table]] = {}
    for paths in result.images.values():
        for staged in paths:
            parts.setdefault(Path(staged).parent.name.removeprefix("schema_id="), []).append(read_staged(staged))
    tables = {key: pa.concat_tables(found).sort_by(KEY) for key, found in parts.items()}
    if files is None:
        return tables
    names = pa.array([file.name for file in files])
    tables = {key: table.filter(pa.compute.is_in(table["_binlog_file"], names)) for key, table in tables.items()}
    return {key: table for key, table in tables.items() if table.num_rows}


def visible(staging: Path) -> list[str]:
    return sorted(str(p.relative_to(staging)) for p in staging.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def good(spark, tmp_path_factory):
    """Every good fixture decoded in one job, one split per file."""
    staging = tmp_path_factory.mktemp("staging")
    files = [path(name) for name in good_files()]
    return files, decode(spark, files, staging), staging


def test_every_good_fixture_decodes_to_the_rows_of_read_rows(good):
    files, result, _ = good
    expected, counts = expected_images(files)
    staged = staged_images(result)
    assert sorted(staged) == sorted(expected)
    for key, table in expected.items():
        assert staged[key].schema == table.schema
        assert staged[key].equals(table), key
    assert result.rows == dict(counts) and result.total_rows == 47_466
    assert result.splits == sum(1 for f in files if any(t.complete for t in scan_transactions(f)))
    assert result.resume_positions == {str(f): complete_part(f) or f.stat().st_size for f in files}
    assert result.bytes == sum(s.size for plan in result.files for s in plan.splits)


def test_values_read_back_from_the_staged_files(good):
    _, result, _ = good
    (rental,) = result.images["sakila", "rental"]
    assert rental.endswith(".arrow")
    table = read_staged(rental)
    assert table.num_rows == 16044 and set(table["_op"].to_pylist()) == {"c"}
    first = table.slice(0, 1).to_pylist()[0]
    assert (first["@1"], first["@3"], first["@4"]) == (1, 367, 130)  # MySQL 5.5: no column names
    assert str(first["@2"]) == "2005-05-24 22:53:30" and first["_binlog_file"] == "mysql-bin.sakila"
    offsets = [
        row["_binlog_inner_offset"]
        for paths in result.images.values() for staged in paths if "mysql-bin.compressed" in staged
        for row in read_staged(staged).to_pylist()
    ]
    assert offsets and all(offset > 0 for offset in offsets)


def test_the_transaction_index_agrees_with_the_scan_and_counts_the_rows(good):
    files, result, _ = good
    index = pa.concat_tables(pq.read_table(f) for f in result.transaction_files)
    assert index.schema == TRANSACTION_SCHEMA and index.num_rows == result.transactions
    rows = index.to_pylist()
    per_table = Counter()
    for row in rows:
        assert row["rows"] == sum(part["rows"] for part in row["rows_per_table"])
        per_table.update({(part["database"], part["table"]): part["rows"] for part in row["rows_per_table"]})
    assert dict(per_table) == result.rows
    for file in files:
        scanned = [t for t in scan_transactions(file) if t.complete or t.end < file.stat().st_size]
        staged = [row for row in rows if row["file"] == file.name]
        assert [(r["start"], r["end"], r["gtid"]) for r in staged] == [(t.start, t.end, t.gtid) for t in scanned]
    crc32 = path("osheroff__mysql-binlog-connector-java/mysql-bin.checksum-crc32")
    xids = {e.end_pos: e for e in read(crc32) if isinstance(e, XidEvent)}
    staged = [row for row in rows if row["file"] == crc32.name]
    assert len(staged) == 60 and all(row["end"] in xids for row in staged)
    for row in staged:
        event = xids[row["end"]]
        assert row["xid"] == event.xid and row["commit_ts"].timestamp() == event.header.timestamp
        assert row["server_id"] == event.header.server_id and row["complete"]


def test_table_versions_carry_sql_types_and_the_positions_seen(good):
    files, result, _ = good
    versions = pq.read_table(result.table_schemas).to_pylist()
    staged = staged_images(result)
    assert sorted(v["schema_id"] for v in versions) == sorted(staged)
    flavours = {file: flavour_of(file) for file in files}
    maps = {schema_id(r.table_map, flavours[f]): (r.table_map, flavours[f]) for f in files for r in read_rows(f)}
    for version in versions:
        table, flavour = maps[version["schema_id"]]
        assert (version["database"], version["table"]) == (table.database, table.table)
        assert [c["sql_type"] for c in version["columns"]] == [sql_type(c, flavour) for c in table.columns]
        assert version["metadata_level"] == table.metadata_level and version["flavour"] == flavour
        rows = staged[version["schema_id"]].to_pylist()
        assert version["rows"] == len(rows)
        if len({row["_binlog_file"] for row in rows}) == 1:
            assert version["first_pos"] == min(row["_binlog_pos"] for row in rows)
            assert version["last_pos"] == max(row["_binlog_pos"] for row in rows)
    sakila = next(v for v in versions if (v["database"], v["table"]) == ("sakila", "film_actor"))
    assert (sakila["metadata_level"], sakila["primary_key"], sakila["first_file"]) == ("NONE", [], "mysql-bin.sakila")


def transaction_index(result, files: list[Path]) -> pa.Table:
    index = pa.concat_tables(pq.read_table(f) for f in result.transaction_files)
    index = index.filter(pa.compute.is_in(index["file"], pa.array([f.name for f in files])))
    return index.sort_by([("file", "ascending"), ("start", "ascending")])


def assert_same_staged_content(result, whole, files: list[Path]) -> None:
    by_file = staged_images(whole, files)
    by_split = staged_images(result)
    assert sorted(by_split) == sorted(by_file)
    for key, table in by_file.items():
        assert by_split[key].equals(table), key
    assert transaction_index(result, files).equals(transaction_index(whole, files))


def test_one_transaction_per_split_stages_what_one_split_per_file_does(spark, good, tmp_path):
    files = [path(name) for name in SMALL_SPLITS]
    small = decode(spark, files, tmp_path, target_bytes=1)
    assert small.splits == 24 == small.transactions
    assert_same_staged_content(small, good[1], files)


def test_splits_of_several_transactions_stage_what_one_split_per_file_does(spark, good, tmp_path):
    files = [path(SAKILA)]
    result = decode(spark, files, tmp_path, target_bytes=64 << 10)
    assert result.splits == 10 and any(split.transactions > 1 for split in result.files[0].splits)
    assert_same_staged_content(result, good[1], files)


def test_decoding_again_gives_the_same_names_and_bytes(spark, tmp_path):
    files = [path(name) for name in SMALL_SPLITS[:3]]
    first = decode(spark, files, tmp_path, target_bytes=1)
    contents = {name: (tmp_path / name).read_bytes() for name in visible(tmp_path)}
    again = decode(spark, files, tmp_path, target_bytes=1)
    assert again.images == first.images and again.transaction_files == first.transaction_files
    assert {name: (tmp_path / name).read_bytes() for name in visible(tmp_path)} == contents
    assert all(name.startswith(("images/", "transactions/", "table_schemas/", "schema_changes/")) for name in contents)


DDL_FILES = ["blackbeam__rust_mysql_common/binlog_transaction_with_GTID.000001", "blackbeam__rust_mysql_common/vector.binlog",
             "blackbeam__rust_mysql_common/bug33029-slave-relay-bin.000001"]


def test_one_transaction_per_split_stages_each_schema_change_once(spark, tmp_path):
    """Every DDL event is read by exactly one split: one split per transaction stages the same
    schema changes as one split per file, and they are the QUERY events binlog_codec.ddl reads as
    schema changes, in log order."""
    files = [path(name) for name in DDL_FILES]
    whole = decode(spark, files, tmp_path / "whole")
    small = decode(spark, files, tmp_path / "small", target_bytes=1)
    assert small.splits > whole.splits
    staged = pq.read_table(whole.schema_changes).to_pylist()
    assert pq.read_table(small.schema_changes).to_pylist() == staged
    logged = [
        (Path(name).name, event.pos) for name in files for event in read(name)
        if isinstance(getattr(event, "query", None), str)
        and not isinstance(ddl.parse_event(event), NotSchemaChange)
    ]
    assert [(row["_binlog_file"], row["_binlog_pos"]) for row in staged] == \
        [place for place in logged for _ in range(2 if place == ("bug33029-slave-relay-bin.000001", 236) else 1)]
    assert {row["change"] for row in staged} == {"created", "dropped", "database_dropped"}


def test_no_complete_transaction_means_no_job_and_nothing_staged(spark, tmp_path):
    padding = path("osheroff__mysql-binlog-connector-java/mysql-bin.aurora-padding")
    result = decode(spark, [padding], tmp_path)
    assert (result.splits, result.rows, result.transactions) == (0, {}, 0)
    assert result.resume_positions == {str(padding): 216} and visible(tmp_path) == []


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_bad_file_fails_with_the_located_error_and_stages_nothing(spark, tmp_path, name):
    kind, position, event_type = BAD_FILES[name]
    (tmp_path / "earlier.txt").write_text("left alone")
    with pytest.raises(errors.BinlogError) as caught:
        decode(spark, [path("blackbeam__rust_mysql_common/mariadb-bin.000001"), path(name)], tmp_path)
    error = caught.value
    assert type(error).__name__ == kind
    assert (error.file, error.position, error.event_type) == (str(path(name)), position, event_type)
    assert str(path(name)) in str(error) and f"at {position}" in str(error)
    assert visible(tmp_path) == ["earlier.txt"] and not (tmp_path / "_temporary").exists()


def test_database_and_table_names_are_one_path_component_each():
    names = ["sakila", "a/b", "..", "x.y", "100%", "with space"]
    assert [path_part(name) for name in names] == ["sakila", "a%2Fb", "%2E%2E", "x%2Ey", "100%25", "with space"]
    assert [name_of(path_part(name)) for name in names] == names


@pytest.mark.integration
def test_a_mariadb_binlog_decodes(spark, mariadb, tmp_path):
    statements = """
        CREATE DATABASE IF NOT EXISTS spark_decode;
        USE spark_decode;
        CREATE TABLE items (
            id INT UNSIGNED PRIMARY KEY, name VARCHAR(20) CHARACTER SET latin1, price DECIMAL(8,2),
            seen DATETIME(3), tags SET('a','b','c'), doc JSON
        );
        INSERT INTO items VALUES (1, 'café', 9.99, '2024-02-29 12:00:00.125', 'a,c', '{"k": [1, 2]}'),
                                 (2, 'tea', 1.50, NULL, '', NULL), (3, 'x', 0, '2000-01-01', 'b', '[]');
        UPDATE items SET price = price * 2 WHERE id <= 2;
        DELETE FROM items WHERE id = 3;
    """
    binlog = binlog_of(mariadb, statements)
    result = decode(spark, [binlog], tmp_path, target_bytes=1)
    assert result.rows == {("spark_decode", "items"): 6}
    (staged,) = staged_images(result).values()
    (expected,) = expected_images([binlog])[0].values()
    assert staged.equals(expected)
    rows = staged.to_pylist()
    assert [row["_op"] for row in rows] == ["c", "c", "c", "u", "u", "d"]
    assert rows[0]["name"] == "café" and str(rows[0]["price"]) == "9.99" and rows[0]["tags"] == "a,c"
    assert str(rows[3]["price"]) == "19.98" and rows[3]["_before"]["price"] == rows[0]["price"]
    index = pa.concat_tables(pq.read_table(f) for f in result.transaction_files).to_pylist()
    with_rows = [row for row in index if row["rows"]]
    assert [row["rows"] for row in with_rows] == [3, 2, 1]
    assert all(row["gtid"] and row["gtid"].startswith("0-") for row in index)
    (version,) = pq.read_table(result.table_schemas).to_pylist()
    assert [c["sql_type"] for c in version["columns"]][:3] == [
        "INT UNSIGNED", "VARCHAR(20) CHARSET latin1 COLLATE latin1_swedish_ci", "DECIMAL(8,2)"
    ]
    assert version["primary_key"] == [{"column": "id", "prefix": 0}] and version["metadata_level"] == "FULL"
