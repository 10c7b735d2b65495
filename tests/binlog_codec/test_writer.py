"""The writer re-encodes real events byte for byte, and the reader reads what it writes.

Every table map, rows event (v1, v2, PARTIAL_UPDATE_ROWS), GTID, QUERY and XID
of the fixtures -- those inside compressed transaction payloads included -- is
decoded and encoded again from what was decoded; the bytes must be the
server's. TRANSACTION_PAYLOAD events are compressed again from their inner
events and must give the server's zstd frame too.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlog_codec import json_binary
from binlog_codec.event_types import ROWS_TYPES, EventType
from binlog_codec.events import GtidEvent, QueryEvent, RowsEvent, TableMapEvent, XidEvent, decode, read
from binlog_codec.json_diff import REPLACE, JsonDiff, apply, decode_diffs, encode_diffs
from binlog_codec.reader import BinlogReader, RawEvent, server_version_tuple
from binlog_codec.rows import DecodingPlan, RowChange, decode_rows, read_rows
from binlog_codec.table_map import Column, ColumnType, TableMap, table_map
from binlog_codec.writer import (
    BinlogWriter,
    Gtid,
    JsonUpdate,
    choose_json_format,
    encode_event,
    gtid_body,
    query_body,
    rows_body,
    rows_data,
    rows_event_body_for,
    table_map_body,
    table_map_event_body,
    transaction_payload_body,
    xid_body,
)
from fixture_facts import good_files, path

UTF8MB4 = 255
# The decoder gives the TEXT column of vector.binlog's `bar` the binary collation: it leaves VECTOR
# columns out of the columns DEFAULT_CHARSET covers, so the override (index 1 -> 255) lands nowhere.


def _events(name: str):
    """(raw event, decoded event, flavour) of every event of fixture ``name``, payload contents included."""
    flavour = "mysql"
    for raw in BinlogReader(path(name)):
        if raw.type_code == EventType.FORMAT_DESCRIPTION:
            flavour = "mariadb" if raw.fde.is_mariadb else "mysql"
        yield raw, decode(raw, skip_unknown=True), flavour


def _table_id_size(raw: RawEvent) -> int:
    return 4 if raw.fde.post_header_length(raw.type_code, 8) == 6 else 6


def _files_with(*type_codes: int) -> list[str]:
    return [name for name in good_files() if any(raw.type_code in type_codes for raw in BinlogReader(path(name)))]


@pytest.mark.parametrize("name", good_files())
def test_every_real_event_reencodes_to_identical_bytes(name):
    data = path(name).read_bytes()
    count = 0
    for event in BinlogReader(path(name)):
        if event.inner_offset is not None:
            continue
        assert encode_event(event.header, event.body, checksum=event.checksum is not None) == data[event.pos : event.end_pos]
        count += 1
    assert count > 0


@pytest.mark.parametrize("name", _files_with(EventType.TABLE_MAP))
def test_every_table_map_reencodes_from_its_parts(name):
    count = 0
    for raw, event, _ in _events(name):
        if isinstance(event, TableMapEvent):
            parts = (event.table_id, event.flags, event.database, event.table, event.column_types, event.metadata)
            body = table_map_body(*parts, event.null_bitmap, event.optional_metadata, table_id_size=_table_id_size(raw))
            assert body == raw.body, f"table map at {raw.pos}"
            count += 1
    assert count > 0


@pytest.mark.parametrize("name", _files_with(EventType.TABLE_MAP))
def test_every_table_map_reencodes_from_its_decoded_table(name):
    """Column metadata and the WL#4618 optional metadata, rebuilt from the :class:`TableMap`
    model: the server's field order and its choice of DEFAULT_CHARSET or COLUMN_CHARSET."""
    count = 0
    for raw, event, _ in _events(name):
        if isinstance(event, TableMapEvent):
            body = table_map_event_body(table_map(event), flags=event.flags, table_id_size=_table_id_size(raw))
            assert body.hex() == raw.body.hex(), f"table map at {raw.pos}"
            count += 1
    assert count > 0


def _unused_null_bits(raw: RawEvent, flavour: str) -> int:
    """MySQL 8.0 leaves the unused bits of the last null byte clear; MySQL 5.x and MariaDB set them."""
    return 0 if flavour == "mysql" and server_version_tuple(raw.fde.server_version) >= (8, 0, 0) else 1


@pytest.mark.parametrize("name", _files_with(*ROWS_TYPES, EventType.TRANSACTION_PAYLOAD))
def test_every_rows_event_reencodes_from_its_decoded_rows(name):
    """The rows re-encoded from the decoded values (the shared-image and diff vectors of
    PARTIAL_UPDATE_ROWS included), then the whole body from its parts."""
    tables, count = {}, 0
    for raw, event, flavour in _events(name):
        if isinstance(event, TableMapEvent):
            tables[event.table_id] = table_map(event)
        elif isinstance(event, RowsEvent):
            table = tables[event.table_id]
            changes = decode_rows(event, DecodingPlan(table, flavour))
            rows = rows_data(
                table, changes, event.columns_before, event.columns_after,
                partial_update=raw.type_code == EventType.PARTIAL_UPDATE_ROWS,
                unused_null_bits=_unused_null_bits(raw, flavour), flavour=flavour,
            )
            assert rows.hex() == event.rows.hex(), f"rows event at {raw.pos}+{raw.inner_offset}"
            body = rows_body(
                raw.type_code, event.table_id, event.flags, event.column_count, event.columns_before,
                event.columns_after, rows, extra_data=event.extra_data, table_id_size=_table_id_size(raw),
            )
            assert body == raw.body
            count += 1
    assert count > 0


def test_the_fixtures_hold_every_rows_event_kind():
    """The byte-identity tests above cover v1 and v2 of each kind and PARTIAL_UPDATE_ROWS, also inside payloads."""
    kinds = Counter()
    for name in _files_with(*ROWS_TYPES, EventType.TRANSACTION_PAYLOAD):
        kinds.update((raw.type_code, raw.inner_offset is not None) for raw in BinlogReader(path(name)) if raw.type_code in ROWS_TYPES)
    assert {code for code, _ in kinds} >= {23, 24, 25, 30, 31, 32, 39}
    assert any(inside for _, inside in kinds)


@pytest.mark.parametrize("name", _files_with(EventType.GTID, EventType.ANONYMOUS_GTID, EventType.QUERY, EventType.XID))
def test_gtid_query_and_xid_events_reencode(name):
    count = 0
    for raw, event, _ in _events(name):
        if isinstance(event, GtidEvent) and raw.type_code != EventType.GTID_TAGGED:
            fields = {f.name: getattr(event, f.name) for f in dataclasses.fields(Gtid)}
            assert gtid_body(Gtid(**fields)) == raw.body
        elif isinstance(event, QueryEvent) and raw.type_code == EventType.QUERY and raw.fde.post_header_length(2) == 13:
            try:
                body = query_body(
                    event.query, database=event.database, status_vars=event.status_vars,
                    thread_id=event.thread_id, exec_time=event.exec_time, error_code=event.error_code,
                )
            except UnicodeEncodeError:  # statement text that is not UTF-8 is decoded with escapes
                continue
            assert body == raw.body, f"QUERY at {raw.pos}"
        elif isinstance(event, XidEvent):
            assert xid_body(event.xid) == raw.body
        else:
            continue
        count += 1
    assert count > 0


@pytest.mark.parametrize("name", _files_with(EventType.TRANSACTION_PAYLOAD))
def test_transaction_payloads_compress_to_the_servers_bytes(name):
    """zstd at level 3, flushed then ended, as MySQL 8.0.28 and 8.0.32 compress a transaction."""
    payload, inner = None, b""
    checked = 0
    for raw in list(BinlogReader(path(name))) + [None]:
        if payload is not None and (raw is None or raw.inner_offset is None):
            assert transaction_payload_body(inner) == payload.body
            payload, inner, checked = None, b"", checked + 1
        if raw is None:
            break
        if raw.type_code == EventType.TRANSACTION_PAYLOAD and raw.inner_offset is None:
            payload = raw
        elif raw.inner_offset is not None:
            inner += encode_event(raw.header, raw.body, checksum=False)
    assert checked > 0


@given(
    st.lists(st.tuples(st.sampled_from([EventType.ROWS_QUERY, EventType.XID]), st.binary(max_size=300)), max_size=20),
    st.booleans(),
)
def test_reader_reads_what_the_writer_writes(tmp_path_factory, events, checksum):
    writer = BinlogWriter(checksum=checksum)
    positions = []
    for type_code, payload in events:
        body = b"\0" + payload if type_code == EventType.ROWS_QUERY else payload[:8].ljust(8, b"\0")
        positions.append((writer.add(type_code, body), body))
    target = tmp_path_factory.mktemp("w") / "written.000001"
    target.write_bytes(writer.bytes())
    raws = list(BinlogReader(target))[1:]
    assert [(r.pos, r.body) for r in raws] == positions
    assert all(r.header.log_pos == r.end_pos for r in raws)
    decoded = list(read(target))
    assert decoded[0].checksum == ("CRC32" if checksum else "OFF")


# -- writer -> reader round trips of random tables, images and partial updates -------------------

_json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**31), 2**31), st.text(max_size=30))
_documents = st.dictionaries(
    st.from_regex(r"[a-z]{1,8}", fullmatch=True),
    st.one_of(_json_scalars, st.lists(_json_scalars, max_size=4)),
    max_size=6,
)


def _json_update(document: dict):
    """A strategy of REPLACE diff vectors for ``document``'s members and the document they give."""
    keys = sorted(document)
    if not keys:
        return st.just(document)
    diffs = st.lists(st.builds(lambda k, v: JsonDiff(REPLACE, f"$.{k}", v), st.sampled_from(keys), _json_scalars), max_size=4)
    return diffs.map(lambda d: JsonUpdate(apply(document, d), d))


COLUMN_KINDS = {
    "bigint": (dict(type_code=ColumnType.LONGLONG, unsigned=False), st.integers(-(2**63), 2**63 - 1)),
    "int unsigned": (dict(type_code=ColumnType.LONG, unsigned=True), st.integers(0, 2**32 - 1)),
    "varchar": (dict(type_code=ColumnType.VARCHAR, length=120, collation_id=UTF8MB4), st.text(max_size=30)),
    "decimal": (
        dict(type_code=ColumnType.NEWDECIMAL, precision=12, scale=3, unsigned=False),
        st.decimals(min_value=Decimal("-999999999.999"), max_value=Decimal("999999999.999"), places=3),
    ),
    "datetime": (
        dict(type_code=ColumnType.DATETIME2, fsp=0),
        st.datetimes().map(lambda moment: moment.strftime("%Y-%m-%d %H:%M:%S").rjust(19, "0")),
    ),
    "text": (dict(type_code=ColumnType.BLOB, pack_length=2, collation_id=UTF8MB4), st.text(max_size=60)),
    "json": (dict(type_code=ColumnType.JSON, pack_length=4), _documents),
}


@st.composite
def tables_and_changes(draw):
    """A table with a primary key and random columns (JSON among them), a row image per WL#5092
    (random column subsets), and updates whose JSON values may be diff vectors."""
    kinds = ["bigint"] + draw(st.lists(st.sampled_from(sorted(COLUMN_KINDS)), min_size=1, max_size=8))
    columns = []
    for index, kind in enumerate(kinds):
        attributes, _ = COLUMN_KINDS[kind]
        columns.append(Column(index, real_type=attributes["type_code"], nullable=index > 0, name=f"c{index}",
                              visible=True, **attributes))
    table = TableMap(draw(st.integers(1, 2**48 - 1)), "db", "t", columns, primary_key=[(0, 0)], metadata_level="FULL")
    columns[0].primary_key_position = 0
    subset = lambda: sorted({0} | set(draw(st.lists(st.integers(0, len(columns) - 1), max_size=len(columns)))))  # noqa: E731
    before, after = subset(), subset()
    changes = []
    for number in range(draw(st.integers(1, 4))):
        old = {c.display_name: draw(COLUMN_KINDS[kinds[c.index]][1]) for c in columns}
        new = {c.display_name: draw(COLUMN_KINDS[kinds[c.index]][1]) for c in columns}
        for column in columns:
            if column.index and draw(st.integers(0, 4)) == 0:
                new[column.display_name] = None
            elif column.type_code == ColumnType.JSON and draw(st.booleans()):
                new[column.display_name] = draw(_json_update(old[column.display_name]))
        pick = lambda values, present: {columns[i].display_name: values[columns[i].display_name] for i in present}  # noqa: E731
        changes.append(RowChange("update", number, before=pick(old, before), after=pick(new, after)))
    return table, before, after, changes


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tables_and_changes(), st.sampled_from(["insert", "update", "delete"]), st.booleans())
def test_reader_decodes_the_rows_the_writer_writes(tmp_path, case, kind, partial_json):
    table, before, after, changes = case
    if kind == "insert":  # an insert logs whole documents
        changes = [RowChange(kind, c.row_index, after={k: _document(v) for k, v in c.after.items()}) for c in changes]
    elif kind == "delete":
        changes = [RowChange(kind, c.row_index, before=c.before) for c in changes]
    writer = BinlogWriter()
    writer.add(EventType.TABLE_MAP, table_map_event_body(table))
    type_code, body = rows_event_body_for(table, kind, changes, before=before, after=after, partial_json=partial_json)
    writer.add(type_code, body)
    target = tmp_path / "written.000001"
    target.write_bytes(writer.bytes())
    records = list(read_rows(target))
    assert [r.kind for r in records] == [kind] * len(changes)
    pack_lengths = {c.display_name: c.pack_length for c in table.columns}
    for record, written in zip(records, changes):
        assert record.change.before == written.before
        if written.after is None:
            assert record.change.after is None
            continue
        assert set(record.change.after) == set(written.after)
        for name, value in written.after.items():
            got = record.change.after[name]
            if isinstance(value, JsonUpdate):
                diffs = choose_json_format(value, pack_lengths[name]) if type_code == EventType.PARTIAL_UPDATE_ROWS else None
                assert (name in record.change.partial) == (diffs is not None)
                assert got == (diffs if diffs is not None else value.document)
                if diffs is not None:
                    assert decode_diffs(got) == list(value.diffs)
            else:
                assert got == value and name not in record.change.partial


def _document(value):
    return value.document if isinstance(value, JsonUpdate) else value


def test_partial_json_follows_def1_smaller_than_def2():
    """WL#2955 FR11/FR12: diffs when smaller than the document, the document otherwise; with no
    column logged as a diff, the shared-image is value_options 0 without partial_columns."""
    document = {"a": 1, "b": "x" * 40}
    small = JsonUpdate(apply(document, [JsonDiff(REPLACE, "$.a", 2)]), [JsonDiff(REPLACE, "$.a", 2)])
    big_diffs = [JsonDiff(REPLACE, "$.a", "y" * 40)] * 3
    big = JsonUpdate(apply(document, big_diffs), big_diffs)
    assert choose_json_format(small) == encode_diffs(small.diffs)
    assert len(encode_diffs(big.diffs)) >= len(json_binary.serialize(big.document))
    assert choose_json_format(big) is None

    columns = [Column(0, ColumnType.LONG, ColumnType.LONG, False, name="id", unsigned=False),
               Column(1, ColumnType.JSON, ColumnType.JSON, True, name="j", pack_length=4)]
    table = TableMap(7, "db", "t", columns)
    for update, shared in ((small, "01" "01"), (big, "00")):
        change = RowChange("update", 0, before={"id": 1}, after={"j": update})
        rows = rows_data(table, [change], b"\x01", b"\x02", partial_update=True)
        assert rows.hex().startswith("00" "01000000" + shared)  # before-image: null bits, id 1; then the shared-image
