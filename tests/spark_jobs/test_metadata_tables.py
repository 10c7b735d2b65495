"""The warehouse reads the same in pyiceberg, DuckDB and Spark, and its metadata agrees with ``binlog-codec``.

One ingest run per fixture binlog into a fresh warehouse: each is another
server's log, so each is copied into a source folder of its own (as
``mysql-bin.000001``, ``mysql-bin.000002``, ..., names that stay apart in the
warehouse) and ingested as a stream of its own. Then:

* every metadata table (``table_schemas``, ``transactions``, ``schema_changes``, ``runs``) and
  every table's ``changes`` and ``current`` give the same column names, row
  count and values read through the Iceberg catalog by pyiceberg, by DuckDB's
  ``iceberg_scan`` and by ``spark.read.parquet`` of the snapshot's files, compared in a
  canonical form that keeps each value's kind (decimal, timestamp with or
  without zone, date, bytes);
* ``metadata/table_schemas`` holds one row per distinct table version that
  ``binlog-codec metadata --json`` prints for the same files (columns, SQL
  types, charset and collation, signedness, ENUM/SET values, visibility,
  vector dimension, primary key, metadata level), with the first and last row
  and the row count ``binlog-codec rows`` gives, and Arrow types that are the
  types of the ``changes`` columns;
* ``metadata/transactions`` holds exactly the complete transactions of
  ``binlog-codec transactions --json``, with the rows per table that
  ``binlog-codec rows`` counts inside them, summing to the ``changes`` rows;
* ``metadata/schema_changes`` holds a row per table each DDL event of the files
  changes (every QUERY event of a complete transaction that ``binlog_codec.ddl`` reads
  as a schema change), and each table version names its table's last CREATE TABLE
  before its first row;
* ``metadata/runs`` holds one row per run: the inputs, the bytes and rows,
  the checkpoint, which stops where an unfinished transaction starts.

The files are small ones with few tables (materializing costs seconds per
table) chosen for what their table maps hold; see :data:`SOURCES`.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import shutil
from collections import Counter
from datetime import date, datetime, time, timezone
from decimal import Decimal
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import types as T

from binlog_codec import ddl
from binlog_codec.cli import main as binlog_codec
from binlog_codec.schema_change import NotSchemaChange
from fixture_facts import path
from spark_jobs.ingest import ingest
from spark_jobs.schema_history import change_rows
from warehouse import catalog, publish
from warehouse.lock import LOCK_FILE

# Fixture binlogs in log order, each copied in as mysql-bin.<n>, and what each brings.
SOURCES = [
    ("EasyPost__rust-mysql-binlog/bin-log.000001", "MySQL 5.7, no row metadata: @n names, signedness unknown"),
    ("blackbeam__rust_mysql_common/json.binlog.000001", "MINIMAL metadata, JSON: mysql.t, first version"),
    ("blackbeam__rust_mysql_common/mysql-enum-string-set.000001", "FULL, ENUM and SET labels: mysql.t, second version"),
    ("blackbeam__rust_mysql_common/binlog-invisible-columns.000001", "FULL, invisible and unsigned columns"),
    ("osheroff__mysql-binlog-connector-java/mysql-bin.compressed", "rows inside a compressed transaction payload"),
    ("blackbeam__rust_mysql_common/mariadb-bin.000001", "MariaDB FULL: primary key, ENUM, TIMESTAMP"),
    ("blackbeam__rust_mysql_common/vector.binlog", "MySQL 9 VECTOR columns, primary keys, six table maps"),
    ("osheroff__mysql-binlog-connector-java/mysql-bin.aurora-padding", "ends inside a transaction"),
]
METADATA_TABLES = ("table_schemas", "transactions", "schema_changes", "runs")
# The second fixture's CREATE TABLE t removes the rows of the first's; its insert, update and
# delete leave none.
EMPTY = {("mysql", "t")}
PARTITION_COLUMNS = {"commit_date"}
# What binlog-codec metadata --json says about a column, compared with table_schemas as it is.
COLUMN_FIELDS = (
    "index", "sql_type", "type_code", "real_type", "nullable", "unsigned", "charset", "collation", "collation_id",
    "enum_values", "set_values", "geometry_type", "visible", "vector_dimension",
)


def file_name(index: int) -> str:
    return f"mysql-bin.{index + 1:06d}"


# -- binlog-codec, run in-process ------------------------------------------------------


def codec_lines(*args) -> list[dict]:
    """The JSON lines ``binlog-codec ARGS...`` prints; it must succeed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = binlog_codec([str(arg) for arg in args])
    assert status == 0, f"binlog-codec {' '.join(map(str, args))} failed"
    return [json.loads(line) for line in out.getvalue().splitlines()]


def display_name(index: int, name: str | None) -> str:
    """The warehouse's name of a column the CLI prints ``name: null`` for (no names logged)."""
    return f"@{index + 1}" if name is None else name


def cli_version(table_map: dict, flavour: str) -> dict:
    """A table version as ``binlog-codec metadata --json`` prints it, in the form of a
    ``table_schemas`` row (without its id, positions and rows)."""
    key = {part["index"]: position for position, part in enumerate(table_map["primary_key"])}
    prefixes = {part["index"]: part["prefix"] for part in table_map["primary_key"]}
    return {
        "database": table_map["database"],
        "table": table_map["table"],
        "flavour": flavour,
        "metadata_level": table_map["metadata_level"],
        "columns": [
            {
                **{name: column[name] for name in COLUMN_FIELDS},
                "name": display_name(column["index"], column["name"]),
                "primary_key_position": key.get(column["index"]),
                "primary_key_prefix": prefixes.get(column["index"]),
            }
            for column in table_map["columns"]
        ],
        "primary_key": [
            {"column": display_name(part["index"], part["name"]), "prefix": part["prefix"]}
            for part in table_map["primary_key"]
        ],
    }


def warehouse_version(row: dict) -> dict:
    """A ``table_schemas`` row in the form of :func:`cli_version`."""
    return {
        "database": row["database"],
        "table": row["table"],
        "flavour": row["flavour"],
        "metadata_level": row["metadata_level"],
        "columns": [
            {name: column[name] for name in (*COLUMN_FIELDS, "name", "primary_key_position", "primary_key_prefix")}
            for column in row["columns"]
        ],
        "primary_key": row["primary_key"],
    }


def as_key(value) -> str:
    return json.dumps(value, sort_keys=True)


# -- the three readers ---------------------------------------------------------------


def canonical(value, column: str | None = None):
    """A value as JSON that keeps its kind: decimals, timestamps (with or without zone),
    dates and bytes are tagged, so that a reader giving another kind shows as a difference."""
    if column in PARTITION_COLUMNS and value is not None:
        # pyarrow's partitioning infers no dates: the partition comes back as its text.
        return {"partition": value.isoformat() if isinstance(value, date) else str(value)}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return {"float": "nan" if math.isnan(value) else repr(value)}
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"bytes": bytes(value).hex()}
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return {"timestamp": value.isoformat()}
        return {"timestamp_utc": value.astimezone(timezone.utc).isoformat()}
    if isinstance(value, date):
        return {"date": value.isoformat()}
    if isinstance(value, time):
        return {"time": value.isoformat()}
    if isinstance(value, dict):
        return {str(key): canonical(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(item) for item in value]
    raise TypeError(f"no canonical form for {type(value).__name__}")


def canonical_rows(rows: list[dict]) -> list[str]:
    return sorted(as_key({name: canonical(value, name) for name, value in row.items()}) for row in rows)


def read_pyiceberg(warehouse: Path, table: tuple[str, str]) -> tuple[list[str], list[dict]]:
    """A table as pyiceberg reads it through the catalog."""
    rows = catalog.read(warehouse, table)
    return rows.column_names, rows.to_pylist(maps_as_pydicts="strict")


def read_duckdb(warehouse: Path, table: tuple[str, str]) -> tuple[list[str], list[dict]]:
    """A table as DuckDB's Iceberg reader reads it."""
    with catalog.duckdb_connection() as connection:
        connection.execute("SET TimeZone = 'UTC'")
        relation = connection.sql(f"SELECT * FROM iceberg_scan('{catalog.metadata_location(warehouse, table)}')")
        names = list(relation.columns)
        return names, [dict(zip(names, row)) for row in relation.fetchall()]


def spark_value(value, data_type: T.DataType):
    """A collected Spark value as plain Python; a TIMESTAMP (with local time zone) comes back as
    a naive datetime in the Python process's zone and is made aware again."""
    if value is None:
        return None
    if isinstance(data_type, T.TimestampType):
        return value.astimezone(timezone.utc)
    if isinstance(data_type, T.StructType):
        return {field.name: spark_value(value[field.name], field.dataType) for field in data_type.fields}
    if isinstance(data_type, T.ArrayType):
        return [spark_value(item, data_type.elementType) for item in value]
    if isinstance(data_type, T.MapType):
        return {key: spark_value(item, data_type.valueType) for key, item in value.items()}
    return value


def read_spark(spark, warehouse: Path, table: tuple[str, str]) -> tuple[list[str], list[dict]]:
    """A table as Spark reads the files of its snapshot, by column name."""
    frame = spark.read.option("mergeSchema", "true").parquet(*catalog.data_files(warehouse, table))
    return frame.columns, [spark_value(row, frame.schema) for row in frame.collect()]


# -- the run ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> list[Path]:
    """Per fixture, a source folder holding it alone."""
    folders = []
    for index, (name, _) in enumerate(SOURCES):
        folder = tmp_path_factory.mktemp(f"source-{index}")
        shutil.copyfile(path(name), folder / file_name(index))
        folders.append(folder)
    return folders


def binlog(sources: list[Path], index: int) -> Path:
    return sources[index] / file_name(index)


@pytest.fixture(scope="module")
def run(spark, sources, tmp_path_factory):
    """The warehouse root and the :class:`~spark_jobs.ingest.IngestResult` of each run, in order."""
    root = tmp_path_factory.mktemp("warehouse")
    results = [ingest(str(source), str(root), spark=spark, validation=False) for source in sources]
    assert all(result.run_id for result in results)
    return root, results


@pytest.fixture(scope="module")
def warehouse(run) -> Path:
    return run[0]


@pytest.fixture(scope="module")
def codec(sources) -> dict[str, dict[str, list[dict]]]:
    """Per copied file, what ``binlog-codec metadata|transactions|rows --json`` and ``events --json`` print."""
    found = {}
    for index in range(len(SOURCES)):
        file = binlog(sources, index)
        found[file.name] = {
            "metadata": codec_lines("metadata", "--json", file),
            "transactions": codec_lines("transactions", "--json", file),
            "rows": codec_lines("rows", file),
            "events": codec_lines("events", "--json", file),
        }
    return found


def flavour_of(codec_file: dict) -> str:
    server = next(e for e in codec_file["events"] if e["type"] == "FORMAT_DESCRIPTION")["fields"]["server_version"]
    return "mariadb" if "MariaDB" in server else "mysql"


def metadata_rows(warehouse: Path, table: str) -> list[dict]:
    return read_pyiceberg(warehouse, catalog.identifier(table))[1]


def source_tables(warehouse: Path) -> list[tuple[str, str]]:
    """The source tables of the warehouse (those with a ``current`` table in the catalog)."""
    tables = catalog.open_catalog(warehouse)
    return sorted((database, name) for (database,) in tables.list_namespaces() if database != catalog.NAMESPACE
                  for name in catalog.tables_of_database(warehouse, database))


def changes_rows(warehouse: Path) -> dict[tuple[str, str], int]:
    """Per table, the rows of its ``changes``."""
    return {table: catalog.read(warehouse, catalog.changes_table(*table)).num_rows for table in source_tables(warehouse)}


# -- every table, three readers ----------------------------------------------------------


def tables_of(warehouse: Path, area: str) -> list[tuple[str, str]]:
    if area == "metadata":
        return [catalog.identifier(table) for table in METADATA_TABLES]
    name = catalog.changes_table if area == "changes" else catalog.current_table
    return [name(*table) for table in source_tables(warehouse)]


@pytest.mark.parametrize("area", ["metadata", "changes", "current"])
def test_pyiceberg_duckdb_and_spark_read_the_same(spark, warehouse, area):
    tables = tables_of(warehouse, area)
    assert len(tables) == (len(METADATA_TABLES) if area == "metadata" else 7)
    for table in tables:
        where = ".".join(table)
        names, rows = read_pyiceberg(warehouse, table)
        assert bool(rows) != (table in EMPTY), f"{where}: {len(rows)} rows"
        expected = canonical_rows(rows)
        for reader, (other_names, other_rows) in {
            "DuckDB": read_duckdb(warehouse, table),
            "Spark": read_spark(spark, warehouse, table),
        }.items():
            assert other_names == names, f"{where}: {reader} reads other columns"
            assert len(other_rows) == len(rows), f"{where}: {reader} reads {len(other_rows)} rows, pyiceberg {len(rows)}"
            different = [(a, b) for a, b in zip(expected, canonical_rows(other_rows)) if a != b]
            assert not different, f"{where}: {reader} reads other values; first (pyiceberg, {reader}): {different[0]}"


# -- table_schemas ------------------------------------------------------------------------


def test_table_schemas_are_the_distinct_table_versions_of_binlog_codec_metadata(warehouse, codec):
    printed = {}
    for file, lines in codec.items():
        for table_map in lines["metadata"]:
            printed.setdefault(as_key(cli_version(table_map, flavour_of(lines))), []).append(table_map)
    rows = metadata_rows(warehouse, "table_schemas")
    stored = Counter(as_key(warehouse_version(row)) for row in rows)

    assert sum(len(maps) for maps in printed.values()) == 23  # table maps, several of one version
    assert len(rows) == len(printed) == 8
    assert stored == Counter(printed.keys())
    assert len({row["schema_id"] for row in rows}) == len(rows)
    versions = Counter((row["database"], row["table"]) for row in rows)
    assert versions[("mysql", "t")] == 2 and set(versions.values()) == {1, 2}


def test_table_schemas_show_what_the_table_maps_carry(warehouse):
    """Spot checks: the features the fixtures were chosen for are in the table."""
    rows = {(r["database"], r["table"], r["metadata_level"]): r for r in metadata_rows(warehouse, "table_schemas")}
    columns = {key: {c["name"]: c for c in row["columns"]} for key, row in rows.items()}

    bltest = columns["bltest", "foo", "NONE"]
    assert list(bltest) == ["@1", "@2", "@3"] and bltest["@1"]["unsigned"] is None
    assert bltest["@1"]["arrow_type"] == "decimal128(20, 0)"  # signedness unknown: the unsigned type
    enum_set = columns["mysql", "t", "FULL"]
    assert enum_set["f3"]["enum_values"] == ["var1", "variant2", "foo"]
    assert enum_set["f4"]["set_values"] == ["one", "two", "three", "four"]
    assert enum_set["f4"]["charset"] == "utf8mb4" and enum_set["f4"]["collation"] == "utf8mb4_0900_ai_ci"
    invisible = columns["mysql", "t1", "FULL"]
    assert [name for name, c in invisible.items() if c["visible"] is False] == ["f1", "f2", "f6"]
    assert invisible["f6"]["sql_type"] == "BIGINT UNSIGNED" and invisible["f3"]["unsigned"] is False
    outbox = rows["toddy_test", "outbox", "FULL"]
    assert outbox["flavour"] == "mariadb" and outbox["primary_key"] == [{"column": "id", "prefix": 0}]
    assert columns["toddy_test", "outbox", "FULL"]["event_type"]["enum_values"] == ["BLOB", "JSON", "PROTOBUF"]
    bar = columns["dtb", "bar", "FULL"]
    assert bar["vector_column2"]["vector_dimension"] == 4 and bar["vector_column2"]["sql_type"] == "VECTOR(4)"
    assert bar["id"]["primary_key_position"] == 0


def test_table_schemas_positions_and_rows_are_those_of_binlog_codec_rows(warehouse, codec):
    rows = metadata_rows(warehouse, "table_schemas")
    for row in rows:
        version = as_key(warehouse_version(row))
        files = [
            file for file, lines in codec.items()
            if any(as_key(cli_version(m, flavour_of(lines))) == version for m in lines["metadata"])
        ]
        changes = [
            (file, change["pos"])
            for file in sorted(files)
            for change in codec[file]["rows"]
            if (change["db"], change["table"]) == (row["database"], row["table"])
        ]
        what = f"{row['database']}.{row['table']} ({row['metadata_level']})"
        assert row["rows"] == len(changes), what
        assert (row["first_file"], row["first_pos"]) == changes[0], what
        assert (row["last_file"], row["last_pos"]) == changes[-1], what
        assert row["first_seq"] == int(row["first_file"].rsplit(".", 1)[1]), what
        assert row["last_seq"] == int(row["last_file"].rsplit(".", 1)[1]), what
    # rows per table sum to the changes rows
    per_table = Counter()
    for row in rows:
        per_table[row["database"], row["table"]] += row["rows"]
    assert dict(per_table) == changes_rows(warehouse)


def test_table_schemas_arrow_types_are_the_changes_column_types(warehouse):
    """Each table version's types are those of the ``changes`` files holding its rows (files of
    different runs keep their own version's columns)."""
    for row in metadata_rows(warehouse, "table_schemas"):
        files = catalog.data_files(warehouse, catalog.changes_table(row["database"], row["table"]))
        holding = [file for file in files
                   if row["schema_id"] in pq.read_table(file, columns=["_schema_id"])["_schema_id"].to_pylist()]
        assert holding, row["schema_id"]
        for schema in (pq.read_schema(file) for file in holding):
            for column in row["columns"]:
                # Parquet names a list's values "element" where Arrow names them "item": same type.
                read = str(schema.field(column["name"]).type).replace("list<element: ", "list<item: ")
                assert read == column["arrow_type"], f"{row['database']}.{row['table']}.{column['name']}"


# -- transactions -------------------------------------------------------------------------


def test_transactions_are_the_complete_ones_of_binlog_codec_transactions(warehouse, codec):
    stored = metadata_rows(warehouse, "transactions")
    printed = [
        {"file": file, "start": t["start"], "end": t["end"], "gtid": t["gtid"], "events": t["events"]}
        for file, lines in codec.items()
        for t in lines["transactions"]
        if t["complete"]
    ]
    assert all(row["complete"] for row in stored)
    assert Counter(row["file"] for row in stored) == Counter(t["file"] for t in printed)
    fields = ("file", "start", "end", "gtid", "events")
    assert sorted(as_key({f: row[f] for f in fields}) for row in stored) == sorted(map(as_key, printed))
    assert len(stored) == 34
    # the one transaction the last file does not finish is left for the next run
    unfinished = [t for lines in codec.values() for t in lines["transactions"] if not t["complete"]]
    assert [(t["start"], t["end"]) for t in unfinished] == [(216, 1294)]
    for row in stored:
        assert row["seq"] == int(row["file"].rsplit(".", 1)[1])
        assert row["commit_ts"] is not None and row["commit_ts"].tzinfo is not None


def test_transaction_rows_per_table_are_those_of_binlog_codec_rows_and_changes(warehouse, codec):
    stored = metadata_rows(warehouse, "transactions")
    total = Counter()
    for row in stored:
        counted = Counter(
            (change["db"], change["table"])
            for change in codec[row["file"]]["rows"]
            if row["start"] <= change["pos"] < row["end"]
        )
        per_table = {(part["database"], part["table"]): part["rows"] for part in row["rows_per_table"]}
        assert per_table == dict(counted), f"{row['file']} {row['start']}-{row['end']}"
        assert row["rows"] == sum(per_table.values())
        total.update(per_table)
    assert dict(total) == changes_rows(warehouse)
    assert sum(total.values()) == sum(len(lines["rows"]) for lines in codec.values()) == 39


# -- schema changes ----------------------------------------------------------------------


def logged_ddl(codec_file: dict) -> list[tuple[int, str, int]]:
    """The QUERY events of complete transactions that binlog_codec.ddl reads as schema changes:
    position, statement and how many tables each changes."""
    complete = [(t["start"], t["end"]) for t in codec_file["transactions"] if t["complete"]]
    found = []
    for event in codec_file["events"]:
        fields = event["fields"]
        if event["type"] not in ("QUERY", "QUERY_COMPRESSED") or not any(s <= event["pos"] < e for s, e in complete):
            continue
        change = ddl.parse(fields["query"], fields["database"] or None,
                           sql_mode=(fields["status_vars"] or {}).get("sql_mode", 0))
        if not isinstance(change, NotSchemaChange):
            found.append((event["pos"], fields["query"], len(change_rows(change, fields["database"] or None))))
    return found


def test_schema_changes_are_every_ddl_event_of_binlog_codec_events(warehouse, codec):
    stored = metadata_rows(warehouse, "schema_changes")
    for name, lines in codec.items():
        mine = [row for row in stored if row["_binlog_file"] == name]
        expected = logged_ddl(lines)
        assert [(row["_binlog_pos"], row["statement"]) for row in mine] == \
            [(pos, statement) for pos, statement, tables in expected for _ in range(tables)], name
        assert all(row["_binlog_seq"] == int(name.rsplit(".", 1)[1]) and row["_commit_ts"] is not None for row in mine)
    assert {row["change"] for row in stored} >= {"created", "database_dropped"}


def test_table_versions_name_the_create_table_before_their_rows(warehouse):
    """Every change of these files creates or drops: a version is named by its table's last
    CREATE TABLE before its first row, in its file (each file is a server of its own)."""
    changes = metadata_rows(warehouse, "schema_changes")
    named = 0
    for version in metadata_rows(warehouse, "table_schemas"):
        before = [row for row in changes if row["change"] == "created" and row["_binlog_file"] == version["first_file"]
                  and (row["database"], row["table"]) == (version["database"], version["table"])
                  and row["_binlog_pos"] < version["first_pos"]]
        assert (version["ddl"], version["ddl_position"]) == (
            (before[-1]["statement"], f"{version['first_file']}:{before[-1]['_binlog_pos']}") if before else (None, None))
        named += bool(before)
    assert named >= 5


# -- runs --------------------------------------------------------------------------------


def test_runs_hold_a_row_each_with_the_inputs_and_the_checkpoint(run, sources, codec):
    warehouse, results = run
    records = {record["run_id"]: record for record in metadata_rows(warehouse, "runs")}
    assert sorted(records) == sorted(result.run_id for result in results)
    per_table = changes_rows(warehouse)
    assert sum(record["rows"] for record in records.values()) == sum(per_table.values())
    checkpoint = publish.read_checkpoint(warehouse)
    for index, result in enumerate(results):
        record, name, stream = records[result.run_id], file_name(index), str(sources[index].resolve())
        transactions = codec[name]["transactions"]
        # the file read from its start up to its end, or up to its unfinished transaction
        unfinished = [t["start"] for t in transactions if not t["complete"]]
        end = unfinished[0] if unfinished else binlog(sources, index).stat().st_size
        assert json.loads(record["inputs"]) == [{"file": name, "start": 0, "end": end}]
        # bytes read: from its first transaction to the end of its last complete one
        done = [t for t in transactions if t["complete"]]
        assert record["bytes"] == result.bytes == (max(t["end"] for t in done) - min(t["start"] for t in done) if done else 0)
        assert record["rows"] == sum(json.loads(record["rows_per_table"]).values()) == sum(result.rows.values())
        # the stream's checkpoint: where the next run goes on, and the file's identity
        assert (checkpoint[stream]["file"], checkpoint[stream]["position"]) == (name, end)
        assert json.loads(record["checkpoint"])[stream] == checkpoint[stream]
        assert checkpoint[stream]["files"][name]["identity"]["head"]
        assert record["started"] <= record["finished"] and record["seconds"] > 0
        assert record["source"] == record["stream"] == stream and record["quality"] is None  # without validation
    assert [p["position"] for p in checkpoint.values()] and len(checkpoint) == len(SOURCES)
    assert any(t["complete"] is False for t in codec[file_name(len(SOURCES) - 1)]["transactions"])


def test_the_warehouse_holds_only_published_files(warehouse):
    """Nothing of the run's work is left behind (the commit's journal folder, if there, is empty;
    the lock file stays, unlocked; the Iceberg catalog's folder holds its tables)."""
    tops = sorted(p.name for p in warehouse.iterdir() if p.name not in (publish.JOURNAL, LOCK_FILE))
    assert tops == [catalog.FOLDER, "changes", "current", "metadata"]
    assert not any((warehouse / publish.JOURNAL).glob("*"))
    assert sorted(p.name for p in (warehouse / "metadata").iterdir()) == sorted(["checkpoint.json", *METADATA_TABLES])
