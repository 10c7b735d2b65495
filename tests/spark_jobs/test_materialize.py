"""Materialize (:mod:`spark_jobs.materialize`): row images folded onto the previous state of each key.

* The fold's rules (WL#5092 image contents), in memory: MINIMAL updates rebuilt
  from an earlier insert, NOBLOB blobs kept, primary key changes, delete then
  re-insert, unknown previous state named in ``_incomplete_columns``, zero dates
  carried along, partial JSON diffs applied to the previous document, folding onto
  an existing ``current``, tables without a primary key, table versions with
  added, dropped and widened columns.
* Properties: random change sequences under random row images, folded in one
  batch or in two split anywhere, give the same ``current``; it matches a plain
  Python reference fold, and every value not named incomplete is the source
  table's true value.
* Real fixture files through the fold.
* Spark (local[2]): the same rows as the in-memory fold, with key-change chains
  across partitions and table versions; the run folder's layout and names; a
  rerun gives the same files.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from datetime import date
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlog_codec.arrow import ImageBatchBuilder
from binlog_codec.json_diff import JsonDiff, encode_diffs
from binlog_codec.rows import RowChange, RowRecord, read_rows
from binlog_codec.table_map import Column, ColumnType, TableMap
from fixture_facts import path
import spark_jobs.materialize as materialize_module
from spark_jobs.materialize import (
    COMMIT_DATE,
    INCOMPLETE,
    PRESENT,
    MergedSchema,
    SchemaConflict,
    materialize,
    materialize_tables,
    merge_schemas,
    widen,
)

UTF8MB4, BINARY = 255, 63
ORDER = ["_binlog_seq", "_binlog_pos", "_binlog_inner_offset", "_row_index"]


def column(index: int, type_code: int, name: str, nullable: bool = True, **metadata) -> Column:
    return Column(index, type_code, type_code, nullable, name=name, **metadata)


def table_map(name: str, columns: list[Column], primary_key=((0, 0),)) -> TableMap:
    return TableMap(1, "shop", name, columns, primary_key=list(primary_key), metadata_level="FULL")


ID = column(0, ColumnType.LONG, "id", False, unsigned=False)
NAME = column(1, ColumnType.VARCHAR, "name", length=40, collation_id=UTF8MB4)
QTY = column(2, ColumnType.LONG, "qty", unsigned=False)
PHOTO = column(3, ColumnType.BLOB, "photo", pack_length=2, collation_id=BINARY)
BORN = column(4, ColumnType.DATE, "born")
DOC = column(5, ColumnType.JSON, "doc", pack_length=4)
ITEMS = table_map("items", [ID, NAME, QTY, PHOTO, BORN, DOC])
ITEM_COLUMNS = [c.name for c in ITEMS.columns]


class Log:
    """Row changes of one table, written one after the other into a binlog file."""

    def __init__(self, table: TableMap = ITEMS, file: str = "/staging/mysql-bin.000007", pos: int = 4) -> None:
        self.table, self.file, self.pos = table, file, pos
        self.timestamp = 1_700_000_000  # 2023-11-14 22:13:20 UTC

    def _record(self, kind: str, before=None, after=None, partial=()) -> RowRecord:
        self.pos += 100
        change = RowChange(kind, 0, before, after, list(partial))
        return RowRecord(self.file, self.pos, 0, kind, self.table.database, self.table.table, None, self.timestamp,
                         change, None, self.table)

    def insert(self, **after) -> RowRecord:
        return self._record("insert", after=after)

    def update(self, before: dict, after: dict, partial=()) -> RowRecord:
        return self._record("update", before=before, after=after, partial=partial)

    def delete(self, **before) -> RowRecord:
        return self._record("delete", before=before)


def staged(records: list[RowRecord], table: TableMap | None = None) -> pa.Table:
    builder = ImageBatchBuilder(table or records[0].table_map)
    for record in records:
        builder.append(record)
    return pa.Table.from_batches([builder.build()])


def by_key(table: pa.Table, key: str = "id") -> dict:
    return {row[key]: row for row in table.to_pylist()}


def image(row: dict, columns=ITEM_COLUMNS) -> dict:
    return {name: row[name] for name in columns}


FULL = {"id": 1, "name": "pen", "qty": 5, "photo": b"\x89PNG", "born": "2020-02-29", "doc": {"a": 1}}
FULL_ARROW = {**FULL, "born": date(2020, 2, 29), "doc": '{"a": 1}'}


# ---------------------------------------------------------------------------
# The rules, in memory


def test_minimal_update_is_rebuilt_from_an_earlier_insert():
    log = Log()
    result = materialize_tables([staged([log.insert(**FULL), log.update({"id": 1}, {"qty": 6})])], ["id"])
    insert, update = result.changes.to_pylist()
    assert image(update) == {**FULL_ARROW, "qty": 6}
    assert update["_present_columns"] == ["qty"] and update[INCOMPLETE] == [] and update["_op"] == "u"
    assert update["_before"]["id"] == 1 and update["_before"]["name"] is None  # as logged
    assert image(by_key(result.current)[1]) == {**FULL_ARROW, "qty": 6}
    assert by_key(result.current)[1]["_binlog_pos"] == update["_binlog_pos"]  # the contract columns of the last change


def test_noblob_update_keeps_the_blob_of_the_earlier_state():
    log = Log()
    non_blob = {name: value for name, value in FULL.items() if name != "photo"}
    records = [log.insert(**FULL), log.update(non_blob, {**non_blob, "name": "ink"})]
    result = materialize_tables([staged(records)], ["id"])
    assert image(result.changes.to_pylist()[1]) == {**FULL_ARROW, "name": "ink"}
    assert result.changes.to_pylist()[1][INCOMPLETE] == []


def test_primary_key_change_moves_the_state():
    log = Log()
    records = [log.insert(**FULL), log.update({"id": 1}, {"id": 2}), log.update({"id": 2}, {"name": "ink"})]
    result = materialize_tables([staged(records)], ["id"])
    current = by_key(result.current)
    assert list(current) == [2]
    assert image(current[2]) == {**FULL_ARROW, "id": 2, "name": "ink"} and current[2][INCOMPLETE] == []


def test_delete_then_reinsert_starts_from_nothing():
    log = Log()
    records = [log.insert(**FULL), log.delete(id=1), log.insert(id=1, name="new")]
    result = materialize_tables([staged(records)], ["id"])
    deleted = result.changes.to_pylist()[1]
    assert deleted["_op"] == "d" and image(deleted) == FULL_ARROW  # the state it deleted
    row = by_key(result.current)[1]
    assert image(row) == {**dict.fromkeys(ITEM_COLUMNS), "id": 1, "name": "new"}
    assert row[INCOMPLETE] == ["qty", "photo", "born", "doc"]  # DEFAULTs the log does not hold


def test_unknown_previous_state_is_incomplete_never_invented():
    log = Log()
    records = [log.update({"id": 7}, {"qty": 1}), log.delete(id=8, name="old", qty=None)]
    update, delete = materialize_tables([staged(records)], ["id"]).changes.to_pylist()
    assert image(update) == {**dict.fromkeys(ITEM_COLUMNS), "id": 7, "qty": 1}
    assert update[INCOMPLETE] == ["name", "photo", "born", "doc"]
    # a null before value may be a column the image did not carry: not known
    assert image(delete) == {**dict.fromkeys(ITEM_COLUMNS), "id": 8, "name": "old"}
    assert delete[INCOMPLETE] == ["qty", "photo", "born", "doc"]


def test_folding_onto_an_existing_current_table():
    log = Log()
    first = materialize_tables([staged([log.insert(**FULL), log.insert(**{**FULL, "id": 2})])], ["id"])
    second = materialize_tables([staged([log.update({"id": 2}, {"qty": 9})])], ["id"], first.current)
    assert [row["_op"] for row in second.changes.to_pylist()] == ["u"]
    assert image(second.changes.to_pylist()[0]) == {**FULL_ARROW, "id": 2, "qty": 9}
    current = by_key(second.current)
    assert image(current[1]) == FULL_ARROW and current[1] == by_key(first.current)[1]  # untouched: as it was
    assert image(current[2]) == {**FULL_ARROW, "id": 2, "qty": 9}


def test_zero_dates_are_carried_along_the_fold():
    log = Log()
    records = [log.insert(**{**FULL, "born": "0000-00-00"}), log.update({"id": 1, "born": "2021-04-00"}, {"qty": 2})]
    insert, update = materialize_tables([staged(records)], ["id"]).changes.to_pylist()
    assert insert["born"] is None and dict(insert["_unrepresentable"]) == {"born": "0000-00-00"}
    # the before-image's partly-zero date is known (it was logged), so it wins over the earlier state
    assert update["born"] is None and update[INCOMPLETE] == []
    assert dict(update["_unrepresentable"]) == {"born": "2021-04-00", "_before.born": "2021-04-00"}


def test_partial_json_is_applied_to_the_previous_document():
    log = Log()
    diff = encode_diffs([JsonDiff("REPLACE", "$.a", 2), JsonDiff("INSERT", '$."new key"', [1, "x"])])
    records = [
        log.insert(**FULL),
        log.update({"id": 1}, {"doc": diff, "qty": 3}, partial=["doc"]),
        log.update({"id": 1}, {"name": "ink"}),
        log.update({"id": 1}, {"doc": encode_diffs([JsonDiff("REMOVE", "$.a")])}, partial=["doc"]),
        log.update({"id": 1}, {"doc": {"a": 3}}),
    ]
    changes = materialize_tables([staged(records)], ["id"]).changes.to_pylist()
    assert [row["doc"] for row in changes] == [
        '{"a": 1}', '{"a": 2, "new key": [1, "x"]}', '{"a": 2, "new key": [1, "x"]}', '{"new key": [1, "x"]}',
        '{"a": 3}',
    ]
    assert [row[INCOMPLETE] for row in changes] == [[], [], [], [], []]
    assert dict(changes[1]["_partial_diffs"]) == {"doc": diff} and changes[1]["qty"] == 3


def test_partial_json_without_a_previous_document_is_incomplete_until_a_whole_one():
    log = Log()
    diff = encode_diffs([JsonDiff("REPLACE", "$.a", 2)])
    records = [
        log.update({"id": 1}, {"doc": diff}, partial=["doc"]),  # the key's earlier changes are not in the log
        log.update({"id": 1}, {"doc": diff}, partial=["doc"]),
        log.update({"id": 1}, {"doc": {"a": 3}}),
        log.update({"id": 1}, {"doc": diff}, partial=["doc"]),
    ]
    changes = materialize_tables([staged(records)], ["id"]).changes.to_pylist()
    assert [row["doc"] for row in changes] == [None, None, '{"a": 3}', '{"a": 2}']
    assert [("doc" in row[INCOMPLETE]) for row in changes] == [True, True, False, False]


def test_a_diff_that_does_not_fit_the_previous_document_is_an_error_naming_where():
    log = Log()
    records = [log.insert(**FULL), log.update({"id": 1}, {"doc": encode_diffs([JsonDiff("REMOVE", "$.gone")])}, partial=["doc"])]
    with pytest.raises(ValueError, match=r"column doc.*\$\.gone.*_binlog_pos"):
        materialize_tables([staged(records)], ["id"])


V1 = table_map("items", [ID, NAME, QTY, PHOTO])
V2 = table_map("items", [ID, NAME, column(2, ColumnType.LONGLONG, "qty", unsigned=False),
                         column(3, ColumnType.VARCHAR, "tag", length=10, collation_id=UTF8MB4)])


def test_table_versions_added_dropped_and_widened_columns():
    log = Log(V1)
    first = staged([log.insert(id=1, name="pen", qty=5, photo=b"p"), log.insert(id=2, name="ink", qty=1, photo=b"i")])
    log.table = V2
    second = staged([log.update({"id": 1}, {"tag": "new"}), log.insert(id=3, name="cap", qty=2**40, tag="t")])
    result = materialize_tables([first, second], ["id"])
    assert result.merged.schema.names[:5] == ["id", "name", "qty", "photo", "tag"]
    assert result.merged.schema.field("qty").type == pa.int64()
    assert result.merged.schema.field("_before").type == pa.struct(result.merged.image)
    current = by_key(result.current)
    # photo is not a column of V2: null, not incomplete; qty widened, kept from V1's insert
    assert image(current[1], ["id", "name", "qty", "photo", "tag"]) == {
        "id": 1, "name": "pen", "qty": 5, "photo": None, "tag": "new"}
    assert current[1][INCOMPLETE] == []
    assert image(current[2], ["photo", "tag"]) == {"photo": b"i", "tag": None} and current[2][INCOMPLETE] == []
    assert current[3]["qty"] == 2**40
    # a key last seen before V2 added a column: that column's DEFAULT is unknown
    changed = materialize_tables([first, staged([log.update({"id": 2}, {"qty": 4})])], ["id"]).changes.to_pylist()[-1]
    assert image(changed, ["id", "name", "qty", "photo", "tag"]) == {
        "id": 2, "name": "ink", "qty": 4, "photo": None, "tag": None}
    assert changed[INCOMPLETE] == ["tag"]


@pytest.mark.parametrize("a, b, expected", [
    (pa.int8(), pa.int32(), pa.int32()),
    (pa.int64(), pa.decimal128(20, 0), pa.decimal128(20, 0)),
    (pa.int32(), pa.decimal128(5, 2), pa.decimal128(12, 2)),
    (pa.decimal128(10, 2), pa.decimal128(12, 4), pa.decimal128(12, 4)),
    (pa.float32(), pa.float64(), pa.float64()),
    (pa.date32(), pa.timestamp("us"), pa.timestamp("us")),
    (pa.null(), pa.string(), pa.string()),
    (pa.list_(pa.float32()), pa.list_(pa.float64()), pa.list_(pa.float64())),
])
def test_safe_widening(a, b, expected):
    assert widen(a, b) == expected and widen(b, a) == expected


@pytest.mark.parametrize("a, b", [
    (pa.int32(), pa.string()),
    (pa.string(), pa.binary()),
    (pa.int64(), pa.float64()),
    (pa.timestamp("us"), pa.timestamp("us", tz="UTC")),
    (pa.decimal128(38, 0), pa.decimal128(10, 5)),
])
def test_unsafe_type_changes_are_conflicts(a, b):
    with pytest.raises(SchemaConflict):
        widen(a, b)
    first = staged([Log(table_map("t", [column(0, ColumnType.LONG, "id", unsigned=False)])).insert(id=1)])
    other = first.schema.set(0, pa.field("id", b))
    with pytest.raises(SchemaConflict, match="column id"):
        merge_schemas([first.schema.set(0, pa.field("id", a)), other])


def test_a_column_named_like_an_output_column_is_refused():
    table = table_map("t", [ID, column(1, ColumnType.DATE, "commit_date")])
    with pytest.raises(ValueError, match="commit_date"):
        merge_schemas([staged([Log(table).insert(id=1)]).schema])


def test_without_primary_key_every_column_is_the_key_and_rows_may_repeat():
    table = table_map("log", [column(0, ColumnType.LONG, "a", unsigned=False), NAME], primary_key=())
    log = Log(table)
    records = [
        log.insert(a=1, name="x"), log.insert(a=1, name="x"), log.insert(a=2, name=None),
        log.update({"a": 1, "name": "x"}, {"a": 1, "name": "y"}),
        log.delete(a=2, name=None),
    ]
    result = materialize_tables([staged(records)], None)
    assert Counter((row["a"], row["name"]) for row in result.current.to_pylist()) == {(1, "x"): 1, (1, "y"): 1}
    assert all(row[INCOMPLETE] == [] for row in result.changes.to_pylist())
    assert result.changes.to_pylist()[-1]["name"] is None  # the key names every column, NULLs too


def test_unknown_key_columns_are_refused():
    with pytest.raises(ValueError, match="nope"):
        materialize_tables([staged([Log().insert(**FULL)])], ["nope"])


@pytest.mark.parametrize("key", [["id"], None])
def test_an_unknown_change_kind_is_refused(key):
    log = Log()
    rows = staged([log.insert(**FULL), log.insert(**{**FULL, "id": 2})])
    rows = rows.set_column(rows.schema.get_field_index("_op"), "_op", pa.array(["c", "x"], rows.schema.field("_op").type))
    with pytest.raises(ValueError, match="unknown _op 'x'"):
        materialize_tables([rows], key)


# ---------------------------------------------------------------------------
# Properties: split anywhere, a reference fold, the source table's truth

SIM_PK = table_map("sim", [
    ID, column(1, ColumnType.LONG, "a", unsigned=False), column(2, ColumnType.VARCHAR, "s", length=8, collation_id=UTF8MB4),
    column(3, ColumnType.BLOB, "b", pack_length=2, collation_id=BINARY), column(4, ColumnType.DATE, "d"),
])
SIM_NO_PK = table_map("sim", SIM_PK.columns, primary_key=())
SIM_COLUMNS = [c.name for c in SIM_PK.columns]
BLOBS = {"b"}
VALUES = {
    "a": st.sampled_from([None, 0, 1, 2]),
    "s": st.sampled_from([None, "x", "é"]),
    "b": st.sampled_from([None, b"", b"\x00z"]),
    "d": st.sampled_from([None, "2020-01-01", "0000-00-00"]),
}
PK_DEFAULTS = {"a": 99, "s": "dflt", "b": b"dflt", "d": "1999-09-09"}  # what the server filled in: never in the log


def _after_columns(mode: str, given: set[str]) -> list[str]:
    """WL#5092 R1: the after-image of an insert/update holds the columns given a value (MINIMAL),
    those and every non-blob column (NOBLOB), or every column (FULL)."""
    return [c for c in SIM_COLUMNS if mode == "full" or c in given or (mode == "noblob" and c not in BLOBS)]


def _before_columns(mode: str, key: list[str]) -> list[str]:
    """WL#5092 R1: the before-image of an update/delete: the PKE (MINIMAL), it and every non-blob
    column (NOBLOB), every column (FULL)."""
    return [c for c in SIM_COLUMNS if mode == "full" or c in key or (mode == "noblob" and c not in BLOBS)]


@st.composite
def histories(draw):
    """(unique key?, records, the source table's rows at the end: a list of dicts)."""
    unique = draw(st.booleans())
    table, key = (SIM_PK, ["id"]) if unique else (SIM_NO_PK, SIM_COLUMNS)
    log, rows, records, next_id, deleted = Log(table), [], [], 1, []
    for _ in range(draw(st.integers(1, 14))):
        mode = draw(st.sampled_from(["full", "minimal", "noblob"]))
        kind = draw(st.sampled_from(["insert", "update", "delete"] if rows else ["insert"]))
        if kind == "insert":
            given = {"id"} | {c for c in VALUES if draw(st.booleans())}
            defaults = PK_DEFAULTS if unique else dict.fromkeys(VALUES)
            if deleted and draw(st.booleans()):  # a key that was deleted comes back
                row_id = deleted.pop()
            else:
                row_id, next_id = next_id, next_id + 1
            row = {"id": row_id, **{c: draw(VALUES[c]) if c in given else defaults[c] for c in VALUES}}
            rows.append(row)
            records.append(log.insert(**{c: row[c] for c in _after_columns(mode, given)}))
            continue
        at = draw(st.integers(0, len(rows) - 1))
        old = rows[at]
        before = {c: old[c] for c in _before_columns(mode, key)}
        if kind == "delete":
            deleted.append(rows.pop(at)["id"])
            records.append(log.delete(**before))
            continue
        given = {c for c in VALUES if draw(st.booleans())} | ({"id"} if draw(st.integers(0, 4)) == 0 else set())
        new = {**old, **{c: draw(VALUES[c]) for c in given if c != "id"}}
        if "id" in given:
            new["id"], next_id = next_id, next_id + 1
        rows[at] = new
        records.append(log.update(before, {c: new[c] for c in _after_columns(mode, given)}))
    return unique, records, rows


def reference_fold(records: list[RowRecord], key: list[str], unique: bool) -> list[tuple[dict, list[str]]]:
    """The fold's rules in plain Python on decoded values: (row, incomplete columns) per current row."""
    state: dict[tuple, list[tuple[dict, set[str]]]] = {}

    def take(k):
        found = state.get(k)
        return found.pop() if found else ({c: None for c in SIM_COLUMNS}, set(SIM_COLUMNS))

    def put(k, entry):
        state[k] = [entry] if unique else [*state.get(k, []), entry]

    for record in records:
        change = record.change
        if change.kind == "insert":
            values, unknown = {c: change.after.get(c) for c in SIM_COLUMNS}, set(SIM_COLUMNS) - set(change.after)
            put(tuple(values[c] for c in key), (values, unknown))
            continue
        values, unknown = take(tuple(change.before.get(c) for c in key))
        values, unknown = dict(values), set(unknown)
        known_before = {c: v for c, v in change.before.items() if v is not None or c in key}
        values.update(known_before)
        values.update(change.after or {})
        unknown -= set(known_before) | set(change.after or {})
        if change.kind == "update":
            put(tuple(values[c] for c in key), (values, unknown))
    return [(values, sorted(unknown, key=SIM_COLUMNS.index)) for entries in state.values() for values, unknown in entries]


def decoded(row: dict) -> dict:
    """An output row's image as the decoder's values: dates as text, zero dates from ``_unrepresentable``."""
    texts = dict(row["_unrepresentable"])
    values = {c: row[c] for c in SIM_COLUMNS}
    values["d"] = texts.get("d", values["d"].isoformat() if values["d"] else None)
    return values


def ordered(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda row: [row[name] or 0 for name in ORDER])


PROPERTIES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTIES
@given(histories(), st.data())
def test_two_batches_split_anywhere_give_the_same_current_as_one(history, data):
    unique, records, truth = history
    key = ["id"] if unique else None
    whole = materialize_tables([staged(records)], key)
    split = data.draw(st.integers(1, len(records)))
    first = materialize_tables([staged(records[:split])], key)
    rest = records[split:]
    second = materialize_tables([staged(rest)], key, first.current) if rest else first
    assert ordered(second.current) == ordered(whole.current)
    assert len(whole.changes) == len(records)
    assert [row["_binlog_pos"] for row in whole.changes.to_pylist()] == [r.pos for r in records]

    expected = reference_fold(records, ["id"] if unique else SIM_COLUMNS, unique)
    found = [(decoded(row), row[INCOMPLETE]) for row in whole.current.to_pylist()]
    assert sorted(map(repr, found)) == sorted(map(repr, expected))
    for row in whole.current.to_pylist():
        assert all(row[c] is None for c in row[INCOMPLETE])
    if unique:  # every value not named incomplete is the source table's
        true_rows = {row["id"]: row for row in truth}
        assert {row["id"] for row in whole.current.to_pylist()} == set(true_rows)
        for row in whole.current.to_pylist():
            values = decoded(row)
            assert {c: values[c] for c in SIM_COLUMNS if c not in row[INCOMPLETE]} == {
                c: true_rows[row["id"]][c] for c in SIM_COLUMNS if c not in row[INCOMPLETE]}


@PROPERTIES
@given(histories(), st.data())
def test_rows_settled_at_once_fold_as_the_row_loop_does(history, data):
    """Under a primary key, rows whose output is their own are settled without the row loop
    (``_Fold._settle``): every output column equals the row loop's, for histories that mix them
    with rows that need the previous state, across a current table."""
    unique, records, _ = history
    split = data.draw(st.integers(1, len(records)))
    first, rest = staged(records[:split]), [staged(records[split:])] if records[split:] else []
    settled = materialize_tables([first], ["id"])
    settled = (settled, materialize_tables(rest, ["id"], settled.current) if rest else settled)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(materialize_module._Fold, "_settle", lambda self: False)
        looped = materialize_tables([first], ["id"])
        looped = (looped, materialize_tables(rest, ["id"], looped.current) if rest else looped)
    for a, b in zip(settled, looped):
        assert a.changes.equals(b.changes) and a.current.equals(b.current)


# ---------------------------------------------------------------------------
# Fixture files


def fixture_batches(name: str, database: str, table: str) -> list[pa.Table]:
    """The rows of one table of a fixture file, staged per table version in log order."""
    builders: dict[int, ImageBatchBuilder] = {}
    for record in read_rows(path(name)):
        if (record.database, record.table) == (database, table):
            builders.setdefault(id(record.table_map), ImageBatchBuilder(record.table_map)).append(record)
    return [pa.Table.from_batches([builder.build()]) for builder in builders.values()]


def test_fixture_minimal_update_is_rebuilt():
    """update-partial-row.binlog: a MINIMAL update and delete of test.ba after FULL inserts."""
    result = materialize_tables(fixture_batches("blackbeam__rust_mysql_common/update-partial-row.binlog", "test", "ba"),
                                ["@1"])
    assert {row["@1"]: (row["@2"], row["@3"], row[INCOMPLETE]) for row in result.current.to_pylist()} == {
        1: (1, 1, []), 3: (3, 3, []), 4: (4, 40, [])}
    assert result.changes.column("_op").to_pylist() == ["c", "c", "c", "c", "u", "d"]
    assert result.changes.to_pylist()[-1]["@2"] == 2  # the deleted row's state


def test_fixture_minimal_insert_is_incomplete():
    result = materialize_tables(fixture_batches("blackbeam__rust_mysql_common/minimal_row_metadata.000001", "noria", "t1"),
                                ["@1"])
    (row,) = result.current.to_pylist()
    assert row[INCOMPLETE] == ["@2", "@4"] and row["@2"] is None and row["@3"] == "a"


def test_fixture_partial_json_updates():
    result = materialize_tables(fixture_batches("blackbeam__rust_mysql_common/json.binlog.000001", "mysql", "t"), ["@1"])
    current = by_key(result.current, "@1")
    assert {k: (row["@3"], row["@4"], row[INCOMPLETE]) for k, row in current.items()} == {
        1: ("Joe", 26, []), 2: ("Sue", 34, []), 3: ("Pete", 42, []),
        4: ("Joe", 26, []), 5: ("Sue", 34, []), 6: ("Pete", 42, [])}
    # the diff REPLACE $.age applied: the document's age is the one the server's generated column @4 computed
    assert all(json.loads(row["@2"])["age"] == row["@4"] for row in current.values())


CRC32 = "osheroff__mysql-binlog-connector-java/mysql-bin.checksum-crc32"


@pytest.mark.parametrize("key", [["@1"], None])
def test_fixture_full_images_fold_completely(key):
    batches = fixture_batches(CRC32, "simu_file_dev", "file")
    result = materialize_tables(batches, key)
    rows = sum(batch.num_rows for batch in batches)
    assert len(result.changes) == rows == 31
    inserted = {row["@1"] for row in result.changes.to_pylist() if row["_op"] == "c"}
    assert all(row[INCOMPLETE] == [] for row in result.changes.to_pylist() if row["@1"] in inserted)
    assert len({row["@1"] for row in result.current.to_pylist()}) == len(result.current)
    if key is None:  # every before-image column is the key: known, so the same rows as under the key @1
        assert ordered(result.current) == ordered(materialize_tables(batches, ["@1"]).current)


# ---------------------------------------------------------------------------
# Spark


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable  # Python workers with this interpreter's packages
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]").appName("test_materialize")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4").config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def write_staged(folder: Path, tables: list[pa.Table]) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for number, table in enumerate(tables):
        names.append(str(folder / f"batch-{number}.parquet"))
        pq.write_table(table, names[-1])
    return names


def read_files(files: list[str]) -> pa.Table:
    return pa.concat_tables([pq.read_table(name) for name in files]) if files else None


def comparable(table: pa.Table, merged: MergedSchema) -> list[dict]:
    """The rows in log order (the files of a run split the keys between them)."""
    return ordered(table.select(merged.schema.names))


def in_log_order(files: list[str]) -> bool:
    return all(pq.read_table(name).to_pylist() == ordered(pq.read_table(name)) for name in files)


def spark_history() -> tuple[list[pa.Table], list[pa.Table]]:
    """Two runs of a table: the first in V1; the second in V1 then V2, with a key-change chain,
    a delete and changes on another day."""
    log = Log(V1)
    first = [staged([log.insert(id=i, name=f"n{i}", qty=i, photo=b"p%d" % i) for i in range(1, 7)]
                    + [log.update({"id": 2}, {"id": 20}), log.delete(id=3)])]
    log.file = "/staging/mysql-bin.000008"
    second_v1 = staged([log.update({"id": 20}, {"qty": 200}), log.update({"id": 20}, {"id": 21})])
    log.table, log.timestamp = V2, log.timestamp + 86_400
    second_v2 = staged([
        log.update({"id": 21}, {"id": 22, "tag": "moved"}), log.update({"id": 1}, {"tag": "t"}),
        log.update({"id": 4}, {"name": "four"}), log.insert(id=7, name="n7", qty=2**40, tag="x"), log.delete(id=5),
        log.update({"id": 22}, {"id": 4000}),
    ])
    return first, [second_v1, second_v2]


def test_spark_matches_the_in_memory_fold_and_reruns_give_the_same_files(spark, tmp_path):
    first, second = spark_history()
    run1 = materialize(spark, write_staged(tmp_path / "stage1", first), database="shop", table="items",
                       key_columns=["id"], current=[],
                       target=str(tmp_path / "run1"), run_name="run-1", rows_per_file=3)
    # 3 buckets of about 3 rows for memory, made 4 for the two slots
    assert 1 < len(run1.changes_files) <= 4 and 1 < len(run1.current_files) <= 4
    assert in_log_order(run1.changes_files + run1.current_files)
    memory1 = materialize_tables(first, ["id"])
    assert comparable(read_files(run1.changes_files), run1.merged) == comparable(memory1.changes, memory1.merged)
    assert comparable(read_files(run1.current_files), run1.merged) == comparable(memory1.current, memory1.merged)

    staged2 = write_staged(tmp_path / "stage2", second)
    current = run1.current_files
    run2 = materialize(spark, staged2, database="shop", table="items", key_columns=["id"], current=current,
                       target=str(tmp_path / "run2"), run_name="run-2", partitions=4)  # the key chain crosses buckets
    memory2 = materialize_tables(second, ["id"], memory1.current)
    assert run2.merged == memory2.merged and run2.key_changes == 3
    changes = read_files(run2.changes_files)
    assert comparable(changes, run2.merged) == comparable(memory2.changes.drop_columns(["commit_date"]), run2.merged)
    assert comparable(read_files(run2.current_files), run2.merged) == comparable(memory2.current, run2.merged)
    assert sorted(by_key(memory2.current)) == [1, 4, 6, 7, 4000]
    assert image(by_key(memory2.current)[4000], ["id", "name", "qty", "photo", "tag"]) == {
        "id": 4000, "name": "n2", "qty": 200, "photo": None, "tag": "moved"}

    relative = [str(Path(name).relative_to(tmp_path / "run2")) for name in run2.changes_files + run2.current_files]
    assert {re.sub(r"-\d{5}\.parquet$", "-N.parquet", name) for name in relative} == {
        "changes/shop/items/commit_date=2023-11-14/run-2-N.parquet",
        "changes/shop/items/commit_date=2023-11-15/run-2-N.parquet",
        "current/shop/items/run-2-N.parquet",
    }
    assert sorted(p.name for p in (tmp_path / "run2").iterdir()) == ["changes", "current"]  # no scratch left
    before = {name: pq.read_table(name) for name in run2.changes_files + run2.current_files}
    again = materialize(spark, staged2, database="shop", table="items", key_columns=["id"], current=current,
                        target=str(tmp_path / "run2"), run_name="run-2", partitions=4)
    assert again.changes_files + again.current_files == list(before)
    assert all(pq.read_table(name).equals(table) for name, table in before.items())


def test_a_target_whose_current_holds_the_inputs_is_refused_and_left_as_it_was(spark, tmp_path):
    """Fold tasks write straight into the target's folders, emptying ``current`` first: a target
    that holds the table's own ``current`` (the command line given the warehouse) would lose it."""
    first, second = spark_history()
    run1 = materialize(spark, write_staged(tmp_path / "stage1", first), database="shop", table="items",
                       key_columns=["id"], current=[], target=str(tmp_path / "run1"), run_name="run-1")
    before = {name: pq.read_table(name) for name in run1.current_files}
    with pytest.raises(ValueError, match=r"an input of the fold is in the folder its output replaces"):
        materialize(spark, write_staged(tmp_path / "stage2", second), database="shop", table="items",
                    key_columns=["id"], current=run1.current_files, target=str(tmp_path / "run1"), run_name="run-2")
    assert all(pq.read_table(name).equals(rows) for name, rows in before.items())


def test_spark_fixture_without_primary_key(spark, tmp_path):
    """Every update of a table without a key changes its key: chains of key changes through Spark."""
    batches = fixture_batches(CRC32, "simu_file_dev", "file")
    result = materialize(spark, write_staged(tmp_path / "stage", batches), database="simu_file_dev", table="file",
                         key_columns=None, current=[], target=str(tmp_path / "run"), run_name="r", partitions=3)
    memory = materialize_tables(batches, None)
    assert result.key_changes == 18 and not result.unique_key
    assert comparable(read_files(result.changes_files), result.merged) == comparable(
        memory.changes.drop_columns(["commit_date"]), result.merged)
    assert comparable(read_files(result.current_files), result.merged) == comparable(memory.current, result.merged)


def test_spark_buckets_keep_every_key_whole(spark, tmp_path):
    """Integer keys without key changes are bucketed by their hash: every change of a key lands in
    the same bucket (so in one file), and the buckets together are the in-memory fold."""
    log = Log(V1)
    first = staged([log.insert(id=i, name=f"n{i}", qty=i, photo=None) for i in range(1, 41)])
    second = staged([log.update({"id": i}, {"qty": -i}) for i in range(1, 41, 3)] + [log.delete(id=i) for i in range(2, 41, 5)])
    result = materialize(spark, write_staged(tmp_path / "stage", [first, second]), database="shop", table="items",
                         key_columns=["id"], current=[], target=str(tmp_path / "run"), run_name="r", partitions=3)
    memory = materialize_tables([first, second], ["id"])
    assert result.key_changes == 0 and len(result.changes_files) == 3 and in_log_order(result.changes_files)
    assert comparable(read_files(result.changes_files), result.merged) == comparable(memory.changes, memory.merged)
    assert comparable(read_files(result.current_files), result.merged) == comparable(memory.current, memory.merged)
    files_of_key: dict[int, set[str]] = {}
    for name in result.changes_files:
        for row in pq.read_table(name).to_pylist():
            files_of_key.setdefault(row["id"] if row["_op"] == "c" else row["_before"]["id"], set()).add(name)
    assert len(files_of_key) == 40 and all(len(files) == 1 for files in files_of_key.values())


def test_bucket_counts_bound_memory_and_share_the_slots():
    """A bucket holds at most rows_per_file rows; a large table alone gets a bucket per slot; beside
    other tables, buckets of one slot's share of the run; a small table is never cut."""
    from types import SimpleNamespace

    from spark_jobs.materialize import SPREAD_ROWS, _bucket_count

    two_slots = SimpleNamespace(sparkContext=SimpleNamespace(defaultParallelism=2))
    assert _bucket_count(two_slots, 5_500_000, 1_000_000, None) == 6  # memory first
    assert _bucket_count(two_slots, 4_500_000, 1_000_000, 4_500_000) == 6  # 5 for memory: both slots to the end
    one_slot = SimpleNamespace(sparkContext=SimpleNamespace(defaultParallelism=1))
    assert _bucket_count(one_slot, 4_500_000, 1_000_000, 4_500_000) == 5
    assert _bucket_count(two_slots, 900_000, 1_000_000, None) == 2  # alone: both slots fold it
    assert _bucket_count(two_slots, 900_000, 1_000_000, 910_000) == 1  # one slot's share: the other folds others
    assert _bucket_count(two_slots, 1_800_000, 1_000_000, 600_000) == 3
    assert _bucket_count(two_slots, SPREAD_ROWS - 1, 1_000_000, None) == 1  # too small to cut


def test_key_values_read_the_same_in_every_batch():
    """Whole-number decimals (BIGINT UNSIGNED is decimal(20,0)) become ints whether or not a batch's
    values fit 64 bits, so a key hashes and compares alike in every batch."""
    from decimal import Decimal

    from spark_jobs.materialize import _python_values

    unsigned = pa.decimal128(20, 0)
    assert _python_values(pa.array([Decimal(5), None], unsigned)) == [5, None]
    assert _python_values(pa.array([Decimal(2**64 - 1), Decimal(5)], unsigned)) == [2**64 - 1, 5]
    assert _python_values(pa.array([Decimal(-(10**25)), Decimal(5)], pa.decimal128(38, 0))) == [-(10**25), 5]
    assert [type(v) for v in _python_values(pa.array([Decimal(10**25), Decimal(5)], pa.decimal128(38, 0)))] == [int, int]
    assert _python_values(pa.array([1, None, 3], pa.int16())) == [1, None, 3]
    assert _python_values(pa.array([Decimal("1.50")], pa.decimal128(5, 2))) == [Decimal("1.50")]


def test_number_keys_hash_by_value_whatever_the_array():
    """Bucketing hashes integer and decimal keys (BIGINT UNSIGNED above 2^63 included) by value:
    the same key in another batch, at another offset, hashes the same; a null apart from zero."""
    values = [0, 1, 2**64 - 1, None, 5, 2**63]
    wide = pa.array([7, *values, 9], pa.decimal128(20, 0))
    whole = materialize_module._number_hash([pa.array(values, pa.decimal128(20, 0))])
    sliced = materialize_module._number_hash([wide.slice(1, len(values))])
    assert whole.tolist() == sliced.tolist() and len(set(whole.tolist())) == len(values)
    pairs = [pa.array([1, 1, None, 2], pa.int64()), pa.array([3, 3, 3, None], pa.decimal128(10, 0))]
    hashed = materialize_module._number_hash(pairs).tolist()
    assert hashed[0] == hashed[1] and len(set(hashed[1:])) == 3


LOG_ORDER = ["_binlog_seq", "_binlog_file", "_binlog_pos", "_binlog_inner_offset", "_row_index"]


@PROPERTIES
@given(st.lists(st.tuples(
    st.booleans(), st.sampled_from([None, 1, 2]), st.sampled_from(["b.1", "a.2", "a.10"]), st.integers(0, 3),
    st.sampled_from([None, 0, 7]), st.integers(0, 2),
), max_size=30))
def test_log_order_sorts_nulls_first_current_rows_first_and_keeps_ties(rows):
    """_sorted: the rows of current first, then log order with nulls first (file names as text);
    rows with equal positions keep their order; rows already in order come back as they are."""
    table = pa.table({
        "__prior": pa.array([row[0] for row in rows], pa.bool_()),
        **{name: pa.array([row[i + 1] for row in rows], kind) for i, (name, kind) in enumerate(zip(
            LOG_ORDER, [pa.int64(), pa.string(), pa.int64(), pa.int32(), pa.int32()]))},
        "n": pa.array(range(len(rows)), pa.int64()),
    })
    result = materialize_module._sorted(table, prior_first=True)

    def key(row):
        return (not row["__prior"], *((row[name] is not None, row[name] or 0) for name in LOG_ORDER), row["n"])

    assert result.to_pylist() == sorted(table.to_pylist(), key=key)
    assert materialize_module._sorted(result, prior_first=True) is result


NAMES = ["id", "name", "qty", "tag", "doc"]
WIDE = [f"c{number}" for number in range(130)]  # a set of names spans three 64-bit words


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([NAMES, WIDE]), st.data(), st.integers(0, 5))
def test_indexed_names_read_back_and_shape_like_the_names(names, data, cut):
    """Lists of present columns as dictionary indices: the same lists back as strings, the same
    shapes (one id per set of names, nulls -1) as the lists of strings, also for a sliced column
    and for tables of more columns than a 64-bit word has bits."""
    lists = data.draw(st.lists(st.one_of(st.none(), st.lists(st.sampled_from(names), unique=True)), min_size=1, max_size=40))
    strings = pa.array(lists, pa.list_(pa.string())).slice(min(cut, len(lists) - 1))
    indexed = materialize_module.indexed_names(strings, names)
    back = materialize_module.named(pa.chunked_array([indexed]))
    assert back.type == pa.list_(pa.string()) and back.to_pylist() == strings.to_pylist()
    ids, shapes = materialize_module._list_shapes(pa.chunked_array([indexed]))
    text_ids, text_shapes = materialize_module._list_shapes(pa.chunked_array([strings]))
    for row, given in enumerate(strings.to_pylist()):
        assert (ids[row] == -1) == (given is None)
        assert set(shapes[ids[row]]) == set(given or []) == set(text_shapes[text_ids[row]])
        assert list(shapes[ids[row]]) == [name for name in names if name in (given or [])]  # dictionary order
    distinct = {None if given is None else frozenset(given) for given in strings.to_pylist()}
    assert len(set(ids)) == len(distinct)  # one id per set of names: their order is the table's anyway
    for name in names:
        assert (materialize_module._carries(pa.chunked_array([indexed]), name)
                == materialize_module._carries(pa.chunked_array([strings]), name)).all()


@pytest.mark.parametrize("names", [["id", "name", "doc"], ["doc", "id", "name"], []])
def test_indexed_names_of_one_list_in_every_row_are_one_shape(names):
    """Full row images: every row lists the same names (in any order), one shape, in table order."""
    indexed = materialize_module.indexed_names(pa.array([names] * 5, pa.list_(pa.string())), NAMES)
    ids, shapes = materialize_module._list_shapes(pa.chunked_array([indexed]))
    assert ids.tolist() == [0] * 5 and shapes[0] == tuple(name for name in NAMES if name in names)


def test_indexed_names_refuse_a_column_the_table_does_not_have():
    with pytest.raises(ValueError, match=r"_present_columns names columns the table does not have: \['colour'\]"):
        materialize_module.indexed_names(pa.array([["id"], ["colour", "id"]]), NAMES)


def test_a_written_bucket_reads_back_with_the_contract_types(tmp_path):
    """The fold's output as a bucket writes it: lists of present columns written from their
    dictionary indices, read back as lists of strings; every other column with its Arrow type
    (tz-aware and naive timestamps, dates, decimals, maps) from Parquet's own types."""
    log = Log(ITEMS)
    records = [log.insert(id=1, name="a", born="2024-02-29"), log.update({"id": 1}, {"id": 1, "qty": 3}), log.delete(id=1)]
    rows, plan, _ = materialize_module.fold_input([staged(records)], ["id"])
    folded = materialize_module.fold_table(rows, plan).drop_columns([COMMIT_DATE, "__final", "__prior"])
    assert pa.types.is_dictionary(folded.schema.field(PRESENT).type.value_type)
    materialize_module.write_parquet(folded, str(tmp_path / "bucket.parquet"))
    back = pq.read_table(tmp_path / "bucket.parquet")
    expected = folded.set_column(folded.schema.get_field_index(PRESENT), PRESENT, materialize_module.named(folded.column(PRESENT)))
    assert back.schema.remove_metadata() == expected.schema.remove_metadata()
    assert back.to_pylist() == expected.to_pylist()
    assert back.column(PRESENT).to_pylist()[0] == ["id", "name", "born"]


@pytest.mark.parametrize("key", [["id"], None])
def test_no_rows_fold_to_no_rows(key):
    """A staged table without rows (also one of no chunks at all) gives no changes and no current rows."""
    empty = staged([Log(ITEMS).insert(id=1, name="a")]).slice(0, 0)
    no_chunks = pa.table({name: pa.chunked_array([], empty.schema.field(name).type) for name in empty.column_names})
    for rows in (empty, no_chunks):
        result = materialize_tables([rows], key)
        assert (result.changes.num_rows, result.current.num_rows) == (0, 0)
        assert result.current.column_names[: len(ITEM_COLUMNS)] == ITEM_COLUMNS
