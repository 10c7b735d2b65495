"""Table maps of the shared fixtures: column metadata and WL#4618 optional metadata."""

from __future__ import annotations

import pytest

from binlog_codec.events import TableMapEvent, read
from binlog_codec.table_map import ColumnType, table_map
from binlog_codec.wire import ShortBody
from fixture_facts import expected, files_with_measured, path


def maps_of(name: str) -> dict:
    found = {}
    for event in read(path(name)):
        if isinstance(event, TableMapEvent):
            found.setdefault((event.database, event.table), table_map(event))
    return found


def _charsets(columns, enum_set: bool):
    kinds = (ColumnType.ENUM, ColumnType.SET)
    return [c.collation_id for c in columns if c.collation_id is not None and (c.real_type in kinds) == enum_set]


@pytest.mark.parametrize("name", files_with_measured("table_maps"))
def test_optional_metadata(name):
    maps = maps_of(name)
    for wanted in expected()[name]["measured"]["table_maps"]:
        table = maps[(wanted["schema"], wanted["table"])]
        columns = table.columns
        assert [c.type_code for c in columns] == [c["type"] for c in wanted["columns"]]
        assert [c.nullable for c in columns] == [c["nullable"] for c in wanted["columns"]]
        meta = wanted.get("optional_metadata", {})
        assert [c.name for c in columns] == meta.get("COLUMN_NAME", [None] * len(columns))
        assert [c.unsigned for c in columns if c.unsigned is not None] == meta.get("SIGNEDNESS", [])
        if "COLUMN_CHARSET" in meta:
            assert _charsets(columns, enum_set=False) == meta["COLUMN_CHARSET"]
        for key, enum_set in (("DEFAULT_CHARSET", False), ("ENUM_AND_SET_DEFAULT_CHARSET", True)):
            if key in meta:
                default = meta[key]["default"]
                overrides = dict((int(i), c) for i, c in meta[key]["overrides"])
                covered = _charsets(columns, enum_set)
                assert covered == [overrides.get(i, default) for i in range(len(covered))]
        assert [c.enum_values for c in columns if c.enum_values] == meta.get("ENUM_STR_VALUE", [])
        assert [c.set_values for c in columns if c.set_values] == meta.get("SET_STR_VALUE", [])
        assert [i for i, _ in table.primary_key] == meta.get("SIMPLE_PRIMARY_KEY", [])
        if "COLUMN_VISIBILITY" in meta:
            assert [c.visible for c in columns] == meta["COLUMN_VISIBILITY"]
        assert [c.vector_dimension for c in columns if c.vector_dimension] == meta.get("VECTOR_DIMENSIONALITY", [])
        assert table.metadata_level == ("FULL" if "COLUMN_NAME" in meta else "MINIMAL" if meta else "NONE")


def test_long_char_metadata_borrows_type_bits():
    """CHAR(128) in utf8mb4 is 512 bytes: metadata ``de00`` folds the high length bits into the type byte."""
    maps = maps_of("blackbeam__rust_mysql_common/mysql-enum-string-set.000001")
    columns = next(iter(maps.values())).columns
    assert (columns[0].real_type, columns[0].length) == (ColumnType.STRING, 512)
    assert (columns[1].real_type, columns[1].length) == (ColumnType.VARCHAR, 1200)
    assert [c.real_type for c in columns[2:4]] == [ColumnType.ENUM, ColumnType.SET]


def test_mariadb_columns_and_primary_key():
    (table,) = maps_of("blackbeam__rust_mysql_common/mariadb-bin.000001").values()
    assert [c.name for c in table.columns] == ["id", "topic", "event_type", "event", "created"]
    assert table.columns[0].primary_key_position == 0 and table.columns[0].unsigned is False
    assert table.columns[2].enum_values == ["BLOB", "JSON", "PROTOBUF"]
    assert table.columns[2].collation_id == 45
    assert (table.columns[1].length, table.columns[3].pack_length, table.columns[4].fsp) == (1020, 2, 0)


def test_table_map_without_optional_metadata_names_columns_by_position():
    sakila = maps_of("osheroff__mysql-binlog-connector-java/mysql-bin.sakila")
    actor = sakila[("sakila", "actor")]
    assert [c.display_name for c in actor.columns] == ["@1", "@2", "@3", "@4"]
    assert {c.unsigned for c in actor.columns} == {None}
    assert actor.metadata_level == "NONE"


@pytest.mark.parametrize(
    "optional, message",
    [
        (b"\x04\x05\x03abcdef", "left over|needs"),
        (b"\x01\x00", "cannot hold"),
        (b"\x08\x01\x09", "primary key names column 9"),
        (b"\x09\x01\x00", "odd number"),
    ],
)
def test_hostile_optional_metadata(optional, message):
    event = next(e for e in read(path("blackbeam__rust_mysql_common/mariadb-bin.000001")) if isinstance(e, TableMapEvent))
    event.optional_metadata = optional
    with pytest.raises(ShortBody, match=message):
        table_map(event)


def test_located_error_for_a_corrupt_table_map():
    from binlog_codec.errors import CorruptEventError
    from binlog_codec.table_map import decode_table_map

    event = next(e for e in read(path("blackbeam__rust_mysql_common/mariadb-bin.000001")) if isinstance(e, TableMapEvent))
    event.optional_metadata = b"\x01\x00"
    with pytest.raises(CorruptEventError) as caught:
        decode_table_map(event)
    assert (caught.value.position, caught.value.event_type) == (476, "TABLE_MAP")


def test_unknown_optional_field_is_skipped_by_length():
    event = next(e for e in read(path("blackbeam__rust_mysql_common/mariadb-bin.000001")) if isinstance(e, TableMapEvent))
    event.optional_metadata = b"\x63\x03xyz" + event.optional_metadata
    table = table_map(event)
    assert table.unknown_fields == [0x63]
    assert table.columns[0].name == "id"
