"""Event bodies of every shared fixture against the facts in expected.json."""

from __future__ import annotations

import pytest

from binlog_codec.event_types import ROWS_TYPES
from binlog_codec.events import (
    GtidEvent,
    MariadbGtidEvent,
    OpaqueEvent,
    PreviousGtidsEvent,
    QueryEvent,
    RowsEvent,
    TableMapEvent,
    read,
)
from fixture_facts import expected, facts, files_with_fact, files_with_measured, good_files, path


def events_of(name: str, **options):
    return list(read(path(name), **options))


@pytest.mark.parametrize("name", good_files())
def test_every_event_decodes(name):
    events = events_of(name)
    assert len([e for e in events if e.inner_offset is None]) == expected()[name]["measured"]["event_count"]
    assert all(e.summary() is not None for e in events)
    assert all(isinstance(e.fields(), dict) for e in events)


@pytest.mark.parametrize("name", files_with_measured("gtids"))
def test_gtids(name):
    wanted = expected()[name]["measured"]["gtids"]
    found = [e for e in events_of(name) if isinstance(e, (GtidEvent, MariadbGtidEvent))]
    assert [e.pos for e in found] == [g["offset"] for g in wanted]
    for event, gtid in zip(found, wanted):
        assert event.gtid == gtid.get("gtid", gtid.get("mariadb_gtid"))
        if "last_committed" in gtid:
            assert (event.last_committed, event.sequence_number) == (gtid["last_committed"], gtid["sequence_number"])


@pytest.mark.parametrize("name", files_with_measured("previous_gtids"))
def test_previous_gtids_measured(name):
    wanted = expected()[name]["measured"]["previous_gtids"]
    found = [e for e in events_of(name) if isinstance(e, PreviousGtidsEvent)]
    assert [e.pos for e in found] == [p["offset"] for p in wanted]
    for event, entry in zip(found, wanted):
        assert [(s.sid, s.intervals) for s in event.sids] == [(s["sid"], s["intervals"]) for s in entry["sids"]]


@pytest.mark.parametrize("name", files_with_fact("previous_gtids"))
def test_previous_gtids_facts(name):
    (fact,) = facts(name, "previous_gtids")
    (event,) = [e for e in events_of(name) if isinstance(e, PreviousGtidsEvent)]
    assert [{"sid": s.sid, "tag": s.tag, "intervals": s.intervals} for s in event.sids] == fact["value"]


def test_tagged_gtid_and_gtid_set_text():
    name = "blackbeam__rust_mysql_common/binlog_transaction_with_GTID_TAG.000001"
    (fact,) = facts(name, "gtid_tagged_event")
    events = events_of(name)
    (gtid,) = [e for e in events if e.type_code == fact["event_type"]]
    assert gtid.pos == fact["locator"]["event_offset"]
    assert (gtid.tag, gtid.sid, gtid.gno) == (fact["value"]["tag"], fact["value"]["sid"], fact["value"]["gno"])
    assert gtid.gtid == "55778904-0299-11f1-b1b8-4ef0c4956feb:mytag:3"
    (previous,) = [e for e in events if isinstance(e, PreviousGtidsEvent)]
    assert previous.gtid_set == (
        "55778904-0299-11f1-b1b8-4ef0c4956feb:1-13,55778904-0299-11f1-b1b8-4ef0c4956feb:mytag:1-2"
    )


def test_commit_timestamps_and_transaction_length_of_mysql8_gtid():
    name = "blackbeam__rust_mysql_common/mysql-enum-string-set.000001"
    gtids = [e for e in events_of(name) if isinstance(e, GtidEvent)]
    first = gtids[0]
    assert first.immediate_commit_timestamp == first.original_commit_timestamp > 1_600_000_000_000_000
    assert first.transaction_length == gtids[1].pos - first.pos
    assert first.immediate_server_version == 80028


@pytest.mark.parametrize("name", files_with_fact("query"))
def test_query_texts(name):
    queries = [e for e in events_of(name) if isinstance(e, QueryEvent)]
    for fact in facts(name, "query"):
        event = queries[fact["result_index0"]]
        assert event.query == fact["value"]
        if "locator" in fact:
            assert event.pos == fact["locator"]["event_offset"]


@pytest.mark.parametrize("name", files_with_fact("filtered_event_count"))
def test_query_and_rows_event_count(name):
    for fact in facts(name, "filtered_event_count"):
        kept = [e for e in events_of(name) if isinstance(e, (QueryEvent, RowsEvent))]
        assert len(kept) == fact["value"]


@pytest.mark.parametrize("name", files_with_fact("rows_event_positions"))
def test_rows_event_positions(name):
    (fact,) = facts(name, "rows_event_positions")
    events = events_of(name)
    assert [i + 1 for i, e in enumerate(events) if e.type_code in ROWS_TYPES] == fact["event_indices_1based"]


@pytest.mark.parametrize("name", files_with_fact("contains_event_types"))
def test_contains_event_types(name):
    (fact,) = facts(name, "contains_event_types")
    names = {e.type_name for e in events_of(name)}
    assert set(fact["value"]) <= names


def test_unknown_ignorable_event_is_skipped_and_reader_stays_in_sync():
    name = "osheroff__mysql-binlog-connector-java/mysql-bin.aurora-padding"
    (listing,) = facts(name, "event_listing")
    (recovery,) = facts(name, "unknown_event_recovery")
    events = events_of(name)
    assert [(e.pos, e.end_pos) for e in events] == [(e["pos"], e["end_log_pos"]) for e in listing["events"]]
    padding = events[3]
    assert isinstance(padding, OpaqueEvent)
    locator = recovery["locator"]
    assert (padding.type_code, padding.pos, padding.size, padding.header.flags) == (
        locator["unknown_event_type"],
        locator["unknown_event_offset"],
        locator["unknown_event_size"],
        locator["unknown_event_flags"],
    )
    assert "ignorable" in padding.summary()
    assert events[4].type_name == recovery["expect"]["fifth_event_type"] and events[4].query == "BEGIN"
    assert events[0].server_version == "5.7.12-log"


@pytest.mark.parametrize("name", files_with_measured("table_maps"))
def test_table_map_headers(name):
    wanted = expected()[name]["measured"]["table_maps"]
    maps = [e for e in events_of(name) if isinstance(e, TableMapEvent)]
    for table in wanted:
        matching = [m for m in maps if (m.database, m.table) == (table["schema"], table["table"])]
        assert len(matching) == table["occurrences"]
        assert sorted({m.table_id for m in matching}) == sorted(table["table_ids"])
        first = matching[0]
        assert first.column_types == [c["type"] for c in table["columns"]]
        assert first.flags == table["flags"]
        nullable = [bool(first.null_bitmap[i // 8] >> (i % 8) & 1) for i in range(first.column_count)]
        assert nullable == [c["nullable"] for c in table["columns"]]


@pytest.mark.parametrize("name", [n for n in good_files() if "derived_rows" in expected()[n]])
def test_rows_events_point_at_their_table(name):
    derived = expected()[name]["derived_rows"]
    maps: dict[int, str] = {}
    tables = []
    for event in events_of(name):
        if isinstance(event, TableMapEvent):
            maps[event.table_id] = f"{event.database}.{event.table}"
        elif isinstance(event, RowsEvent):
            tables.append(maps[event.table_id])
    assert len(tables) == derived["rows_events"]
    if "events" in derived:
        assert tables == [e["table"] for e in derived["events"]]


def test_mariadb_events():
    name = "blackbeam__rust_mysql_common/mariadb-bin.000001"
    events = events_of(name)
    kinds = [e.type_name for e in events]
    assert kinds[:4] == ["FORMAT_DESCRIPTION", "GTID_LIST", "BINLOG_CHECKPOINT", "MARIADB_GTID"]
    assert events[2].file_name == "mariadb-bin.000001"
    gtid = events[3]
    assert (gtid.domain_id, gtid.server_id, gtid.seq_no, gtid.standalone) == (0, 1, 1, False)
    assert events[4].query.startswith("insert into outbox")
    assert events[7].type_name == "XID" and events[7].xid == 800


def test_query_status_variables():
    name = "blackbeam__rust_mysql_common/rpl_cross_version_default_utf8mb4_collation.000001"
    queries = [e for e in events_of(name) if isinstance(e, QueryEvent)]
    assert all(q.unknown_status_var is None for q in queries)
    charsets = {q.status_vars["charset"]["character_set_client"] for q in queries if "charset" in q.status_vars}
    assert charsets  # every 5.7 statement logs its client charset
    assert any("default_collation_for_utf8mb4" in q.status_vars or "sql_mode" in q.status_vars for q in queries)
