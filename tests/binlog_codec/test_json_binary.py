"""Binary JSON (WL#8132): real server documents, hand-made layouts, the lazy view, round trips, text form,
bad input, and a parse throughput measurement (printed with ``pytest -s``)."""

from __future__ import annotations

import base64
import json
import math
import random
import struct
import time
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlog_codec.event_types import EventType
from binlog_codec.events import RowsEvent, read
from binlog_codec.json_binary import (
    LARGE_ARRAY,
    LARGE_OBJECT,
    LITERAL,
    MAX_DOCUMENT_SIZE,
    MYSQL_TYPE_DATE,
    MYSQL_TYPE_DATETIME,
    MYSQL_TYPE_NEWDECIMAL,
    MYSQL_TYPE_TIME,
    MYSQL_TYPE_TIMESTAMP,
    MYSQL_TYPE_VAR_STRING,
    SMALL_ARRAY,
    SMALL_OBJECT,
    JsonBinaryError,
    JsonView,
    MysqlTime,
    Opaque,
    check_document_size,
    parse,
    parse_binary,
    serialize,
    to_text,
)
from fixture_facts import expected, facts, path
from typed_values import typed

OPAQUE_FILE = "blackbeam__rust_mysql_common/json-opaque.binlog"
JSON_FILE = "blackbeam__rust_mysql_common/json.binlog.000001"
IMAGES = ("before", "after")


# ---------------------------------------------------------------------------
# Documents written by real MySQL servers (9.0.1 and 8.0.22)


def opaque_file_documents() -> dict[int, bytes]:
    """json-opaque.binlog: table foo.test (a JSON), one row per WRITE_ROWS event.

    Each row image is the null bitmap (1 byte), the JSON length (4 bytes), the document.
    """
    documents = {}
    for event in read(path(OPAQUE_FILE)):
        if isinstance(event, RowsEvent):
            rows = event.rows
            assert rows[0] == 0 and int.from_bytes(rows[1:5], "little") == len(rows) - 5
            documents[event.pos] = rows[5:]
    return documents


def json_file_images(rows: bytes) -> list[bytes]:
    """json.binlog.000001: table mysql.t (id INT, doc JSON, name VARCHAR(100), age INT), no NULLs.

    Each row image: null bitmap (1), id (4), doc length (4) and doc, name length (2) and name, age (4).
    """
    documents, at = [], 0
    while at < len(rows):
        assert rows[at] == 0
        at += 1 + 4
        length = int.from_bytes(rows[at : at + 4], "little")
        documents.append(rows[at + 4 : at + 4 + length])
        at += 4 + length
        at += 2 + int.from_bytes(rows[at : at + 2], "little") + 4
    assert at == len(rows)
    return documents


def json_file_documents() -> dict[int, list[bytes]]:
    """The full-image WRITE_ROWS and UPDATE_ROWS events (the PARTIAL_UPDATE_ROWS one carries diffs)."""
    return {
        event.pos: json_file_images(event.rows)
        for event in read(path(JSON_FILE))
        if isinstance(event, RowsEvent) and event.type_code != EventType.PARTIAL_UPDATE_ROWS
    }


def as_fixture(value):
    """``value`` in expected.json's encoding (its "conventions" entry for JSON)."""
    if isinstance(value, dict):
        return {key: as_fixture(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_fixture(item) for item in value]
    if isinstance(value, float):
        return {"double": repr(value)}
    if isinstance(value, Opaque):
        return opaque_as_fixture(value)
    return value


def opaque_as_fixture(opaque: Opaque) -> dict:
    decoded = opaque.value()
    if isinstance(decoded, Decimal):
        return {"json_opaque_decimal": format(decoded, "f")}
    if opaque.field_type == MYSQL_TYPE_DATE:
        return {"json_opaque_date": str(decoded)}
    if opaque.field_type == MYSQL_TYPE_TIME:
        return {"json_opaque_time": str(decoded)}
    if isinstance(decoded, MysqlTime):
        return {"json_opaque_datetime": str(decoded).replace(" ", "T"), "mysql_type": opaque.field_type}
    return {
        "json_opaque": {
            "mysql_type": opaque.field_type,
            "bytes_hex": decoded.hex(),
            "base64": base64.b64encode(decoded).decode("ascii"),
        }
    }


def test_opaque_values_from_mysql_9_match_the_upstream_assertions():
    documents = opaque_file_documents()
    row_facts = facts(OPAQUE_FILE, "row_value")
    assert len(row_facts) == len(documents) == 8
    for fact in row_facts:
        assert as_fixture(parse(documents[fact["locator"]["event_offset"]])) == fact["value"]["json"]


def test_opaque_values_from_mysql_9_print_as_mysql_does():
    texts = [to_text(parse(document)) for document in opaque_file_documents().values()]
    assert texts == [
        '{"a": "base64:type15:VQ=="}',
        '{"b": "2012-03-18"}',
        '{"c": "2012-03-18 11:30:45.000000"}',
        '{"c": "87:31:46.654321"}',
        '{"d": 123.456}',
        '{"e": 9.00}',
        '{"e": [0, 1, true, false]}',
        '{"e": null}',
    ]


def test_opaque_values_from_mysql_9_decode_exactly():
    documents = list(opaque_file_documents().values())
    assert parse(documents[0]) == {"a": Opaque(15, b"U")}
    assert parse(documents[1])["b"].value() == MysqlTime(MYSQL_TYPE_DATE, False, 2012, 3, 18, 0, 0, 0, 0)
    assert parse(documents[2])["c"].value() == MysqlTime(MYSQL_TYPE_DATETIME, False, 2012, 3, 18, 11, 30, 45, 0)
    assert parse(documents[3])["c"].value() == MysqlTime(MYSQL_TYPE_TIME, False, 0, 0, 0, 87, 31, 46, 654321)
    assert parse(documents[4])["d"].value() == Decimal("123.456")
    assert parse(documents[5])["e"].value().as_tuple() == Decimal("9.00").as_tuple()


@pytest.mark.parametrize("name", [OPAQUE_FILE, JSON_FILE])
def test_server_documents_match_the_derived_rows(name):
    """Every JSON value of both files, as decoded for expected.json (its "derived_rows")."""
    if name == OPAQUE_FILE:
        found = {offset: [document] for offset, document in opaque_file_documents().items()}
        column = "0"
    else:
        found = json_file_documents()
        column = "1"
    wanted = {
        event["offset"]: [row[image][column]["json"] for row in event["rows"] for image in IMAGES if image in row]
        for event in expected()[name]["derived_rows"]["events"]
        if event["event_type"] != EventType.PARTIAL_UPDATE_ROWS
    }
    assert {offset: [as_fixture(parse(d)) for d in documents] for offset, documents in found.items()} == wanted


def server_documents() -> list[bytes]:
    """Every full JSON document of both files."""
    documents = list(opaque_file_documents().values())
    documents += [d for images in json_file_documents().values() for d in images]
    assert len(documents) == 8 + 6 + 6 * 2  # opaque rows; mysql.t: 6 inserted, 6 updated (before, after)
    return documents


def test_server_documents_reserialize_byte_for_byte():
    for document in server_documents():
        assert serialize(parse(document)) == document


def test_server_documents_read_lazily_as_parsed():
    for document in server_documents():
        assert_view_matches(parse_binary(document), parse(document))


def test_encoder_writes_what_mysql_8_wrote():
    first_insert = json_file_documents()[1059][0]
    assert serialize({"name": "Joe", "age": 24, "data": "x" * 10}) == first_insert
    assert first_insert.hex() == (
        "00" "0300" "3300"  # small object, 3 members, 51 bytes
        "1900" "0300" "1c00" "0400" "2000" "0400"  # key entries: age, data, name
        "05" "1800" "0c" "2400" "0c" "2f00"  # int16 24 inlined, two strings at offsets
        "616765" "64617461" "6e616d65"  # the keys, by length then bytewise
        "0a" "78787878787878787878" "03" "4a6f65"
    )


# ---------------------------------------------------------------------------
# Hand-made layouts from the WL#8132 grammar


@pytest.mark.parametrize(
    "document, value",
    [
        # object ::= element-count size key-entry* value-entry* key* value*
        ("00 0100 0c00 0b000100 050100 61", {"a": 1}),
        # array with inlined literals and an int16
        ("02 0400 1000 040100 040200 040000 05feff", [True, False, None, -2]),
        # uint16 inlined in a small array; uint32 inlined in a large one
        ("02 0100 0700 06ffff", [65535]),
        ("03 01000000 0d000000 08ffffffff", [4294967295]),
        # int32 stored at an offset in a small array, inlined in a large one
        ("02 0100 0b00 070700 a0860100", [100000]),
        ("03 03000000 1a000000 0501000000 07a0860100 0c17000000 026162", [1, 100000, "ab"]),
        # large object: key-offset 4 bytes, key-length 2
        ("01 01000000 14000000 130000000100 0401000000 6b", {"k": True}),
        # scalar documents
        ("0401", True),
        ("0400", None),
        ("0500 80", -32768),
        ("0700000080", -(2**31)),
        ("09 0000000000000080", -(2**63)),
        ("0a ffffffffffffffff", 2**64 - 1),
        ("0b 000000000000f83f", 1.5),
        ("0c 03 616263", "abc"),
        ("0f fc 02 0001", Opaque(252, b"\x00\x01")),
    ],
)
def test_hand_made_layouts(document, value):
    assert typed(parse(bytes.fromhex(document.replace(" ", "")))) == typed(value)


def test_string_data_length_takes_seven_bits_a_byte():
    for length, prefix in [(127, "7f"), (128, "8001"), (200, "c801"), (16383, "ff7f"), (16384, "808001")]:
        document = serialize("é" * (length // 2) + "x" * (length % 2))
        assert document[: 1 + len(prefix) // 2].hex() == "0c" + prefix
        assert parse(document) == "é" * (length // 2) + "x" * (length % 2)


def test_object_keys_are_stored_by_length_then_bytewise():
    document = serialize({"é": 4, "b": 1, "aa": 3, "a": 2, "z": 5})
    assert list(parse(document)) == ["a", "b", "z", "aa", "é"]


def test_empty_document_is_null_as_in_mysql():
    assert parse(b"") is None


# ---------------------------------------------------------------------------
# Small and large formats


def test_array_switches_to_large_when_its_size_passes_64_kb():
    # 7 bytes of header, 3 bytes of data-length, the string: size 65535 fits 2 bytes, 65536 does not.
    assert serialize(["x" * 65525])[0] == 0x02
    assert serialize(["x" * 65526])[0] == 0x03
    assert parse(serialize(["x" * 65526])) == ["x" * 65526]


def test_large_object_and_inlined_values_in_the_large_format():
    document = serialize({"t": True, "n": 100000, "m": -5, "k": "x" * 70000})
    assert document[0] == 0x01
    entries = document[1 + 8 + 4 * 6 :][: 4 * 5]  # after the counts and the key entries of k, m, n, t
    assert entries[5:] == bytes.fromhex("05fbffffff" "07a0860100" "0401000000")
    assert parse(document) == {"k": "x" * 70000, "m": -5, "n": 100000, "t": True}


def test_inlined_values_in_the_large_format_are_four_bytes():
    document = serialize(["x" * 70000, 100000, -5, True, None])
    entries = document[9 : 9 + 5 * 5]
    assert entries[5:] == bytes.fromhex("07a0860100" "05fbffffff" "0401000000" "0400000000")
    assert parse(document) == ["x" * 70000, 100000, -5, True, None]


def test_small_child_of_a_large_parent():
    document = serialize([["a"], "x" * 70000])
    assert document[0] == 0x03 and document[9] == 0x02
    assert parse(document) == [["a"], "x" * 70000]


def test_large_child_makes_its_parent_large():
    document = serialize([["x" * 70000]])
    assert document[0] == 0x03 and document[9] == 0x03
    assert parse(document) == [["x" * 70000]]


def test_integer_widths():
    widths = {0: 0x05, -32768: 0x05, 32767: 0x05, 32768: 0x07, -(2**31): 0x07, 2**31: 0x09}
    widths.update({2**63 - 1: 0x09, -(2**63): 0x09, 2**63: 0x0A, 2**64 - 1: 0x0A})
    for number, type_byte in widths.items():
        assert serialize(number)[0] == type_byte
        assert parse(serialize(number)) == number
    for number in (2**64, -(2**63) - 1):
        with pytest.raises(ValueError):
            serialize(number)


def test_values_mysql_refuses_to_store():
    for value in (math.inf, -math.inf, math.nan, [math.nan]):
        with pytest.raises(ValueError):
            serialize(value)
    with pytest.raises(ValueError):
        serialize({"k" * 65536: 1})
    with pytest.raises(ValueError, match="65536 bytes"):
        serialize([{"é" * 32768: 1}])  # the limit is on the key's UTF-8 bytes
    assert parse(serialize({"k" * 65535: 1})) == {"k" * 65535: 1}
    assert parse(serialize({"é" * 32767 + "k": 1})) == {"é" * 32767 + "k": 1}
    for value in (b"bytes", {1: 2}, Decimal(1), (1, 2)):
        with pytest.raises(TypeError):
            serialize(value)


def test_documents_are_smaller_than_4_gb():
    check_document_size(MAX_DOCUMENT_SIZE)  # 4 GB - 1 byte
    with pytest.raises(ValueError, match="4 GB or more"):
        check_document_size(MAX_DOCUMENT_SIZE + 1)


def test_object_restarts_in_the_large_format_when_a_key_offset_outgrows_2_bytes():
    # Three long keys: the value entries' offsets pass 64 KB while the first key still fits.
    value = {"a" * 30000: 1, "b" * 30000: 2, "c" * 30000: [3]}
    document = serialize(value)
    assert document[0] == LARGE_OBJECT
    view = parse_binary(document)
    assert view.lookup("c" * 30000).type == SMALL_ARRAY
    assert parse(document) == value


def nested(levels: int):
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


def hand_made_nested_arrays(levels: int) -> bytes:
    body = b"\x00\x00\x04\x00"  # the innermost empty array: element-count 0, size 4
    for _ in range(levels - 1):
        body = struct.pack("<HH", 1, 7 + len(body)) + b"\x02" + struct.pack("<H", 7) + body
    return b"\x02" + body


def test_nesting_is_limited_to_mysql_100_levels():
    assert serialize(nested(100)) == hand_made_nested_arrays(100)
    assert parse(hand_made_nested_arrays(100)) == nested(100)
    with pytest.raises(JsonBinaryError) as error:
        parse(hand_made_nested_arrays(101))
    assert error.value.offset == 1 + 100 * 7
    with pytest.raises(ValueError):
        serialize(nested(101))
    with pytest.raises(ValueError):
        to_text(nested(101))


# ---------------------------------------------------------------------------
# The lazy view


def assert_view_matches(view: JsonView, value) -> None:
    """``view`` reads as ``value`` through every accessor, at every level.

    Objects: keys in stored order, element(i) under key(i), lookup of every key
    and of keys that are absent. Every value: ``raw()`` is a standalone document
    that parses back to the value and is what :func:`serialize` writes for it.
    """
    assert typed(view.to_python()) == typed(value)
    raw = view.raw()
    assert typed(parse(raw)) == typed(value)
    assert raw == serialize(value)
    if isinstance(value, dict):
        assert view.is_object and not view.is_array
        assert len(view) == view.element_count == len(value)
        assert [view.key(index) for index in range(len(view))] == list(value)
        for index, (key, item) in enumerate(value.items()):
            assert_view_matches(view.element(index), item)
            assert typed(view.lookup(key).to_python()) == typed(item)
        for absent in absent_keys(value):
            assert view.lookup(absent) is None
    elif isinstance(value, list):
        assert view.is_array and not view.is_object
        assert len(view) == len(value)
        for index, item in enumerate(value):
            assert_view_matches(view.element(index), item)
    else:
        assert view.type not in (SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY)


def absent_keys(members: dict) -> list[str]:
    """Keys next to the present ones in MySQL's order: one byte longer, one character shorter, the last one bumped."""
    candidates = {""}
    for key in members:
        candidates.update((key + "\x00", key[:-1], key[:-1] + chr(ord(key[-1]) % 0xD7FF + 1) if key else "x"))
    return sorted(candidates - set(members))


def test_view_reads_only_what_is_asked_for():
    # [1, "ab", <a value entry with type byte 0x0e>]: the first two elements read fine.
    document = bytes.fromhex("02 0300 1000 050100 0c0d00 0e0000 026162".replace(" ", ""))
    view = parse_binary(document)
    assert view.type == SMALL_ARRAY and len(view) == 3
    assert view.element(0).to_python() == 1
    assert view.element(1).to_python() == "ab"
    assert view.element(1).raw() == bytes.fromhex("0c026162")
    with pytest.raises(JsonBinaryError) as error:
        view.element(2)
    assert error.value.offset == 11
    with pytest.raises(JsonBinaryError):
        parse(document)


def test_view_lookup_is_a_binary_search_in_mysql_key_order():
    members = {key: index for index, key in enumerate(["a", "b", "z", "aa", "ab", "é", "zzz", "k" * 300, ""])}
    view = parse_binary(serialize(members))
    assert [view.key(index) for index in range(len(view))] == ["", "a", "b", "z", "aa", "ab", "é", "zzz", "k" * 300]
    for key, index in members.items():
        assert view.lookup(key).to_python() == index
    for absent in ("c", "ac", "zz", "zzzz", "é" + "x", "k" * 299):
        assert view.lookup(absent) is None


def test_view_of_a_large_document_and_its_inlined_values():
    value = ["x" * 70000, 100000, -5, True, None, {"k": [1.5]}]
    view = parse_binary(serialize(value))
    assert view.type == LARGE_ARRAY
    assert view.element(1).raw() == bytes.fromhex("07a0860100")  # int32 inlined in the 4-byte entry
    assert view.element(2).raw() == bytes.fromhex("05fbff")  # int16: its 2 bytes of the entry
    assert view.element(3).raw() == bytes.fromhex("0401")
    assert view.element(5).type == SMALL_OBJECT
    assert view.element(5).lookup("k").element(0).to_python() == 1.5
    assert_view_matches(view, value)


def test_view_over_a_row_image_without_copying():
    row = b"\x00" + struct.pack("<I", 12) + serialize({"a": [1, 2]}) + b"trailing column bytes"
    view = parse_binary(memoryview(row)[5:])
    assert view.lookup("a").element(1).to_python() == 2
    assert view.raw() == serialize({"a": [1, 2]})
    with pytest.raises(JsonBinaryError) as error:
        parse_binary(memoryview(row)[5:10])
    assert error.value.offset == 3  # counted from the view's first byte: the size field


def test_view_of_the_empty_document_is_null():
    view = parse_binary(b"")
    assert view.type == LITERAL and view.to_python() is None and view.raw() == b"\x04\x00"


def test_view_misuse_raises_python_errors():
    array, members, scalar = (parse_binary(serialize(value)) for value in ([1, 2], {"a": 1}, "text"))
    for index in (2, -1):
        with pytest.raises(IndexError):
            array.element(index)
        with pytest.raises(IndexError):
            members.key(index + 1 if index > 0 else index)
    with pytest.raises(TypeError):
        array.lookup("a")
    with pytest.raises(TypeError):
        array.key(0)
    with pytest.raises(TypeError):
        len(scalar)
    with pytest.raises(TypeError):
        scalar.element(0)


def test_view_depth_is_limited_like_parse():
    view = parse_binary(hand_made_nested_arrays(101))
    for _ in range(99):
        view = view.element(0)
    with pytest.raises(JsonBinaryError) as error:
        view.element(0)
    assert error.value.offset == 1 + 100 * 7


# ---------------------------------------------------------------------------
# The text form


TEXT_FORMS = [
    ({"a": 1, "b": [1, 2]}, '{"a": 1, "b": [1, 2]}'),
    ({"bb": 1, "a": {}, "c": []}, '{"a": {}, "c": [], "bb": 1}'),
    ([], "[]"),
    ([None, True, False, -7, 2**64 - 1], "[null, true, false, -7, 18446744073709551615]"),
    ("plain é 😀", '"plain é 😀"'),
    ('q"b\\s\b\f\n\r\t\x00\x01\x1f\x7f', '"q\\"b\\\\s\\b\\f\\n\\r\\t\\u0000\\u0001\\u001f\x7f"'),
    ({"k\n": "v"}, '{"k\\n": "v"}'),
    (1.5, "1.5"),
    (3.0, "3.0"),
    (-0.0, "-0.0"),
    (0.0, "0.0"),
    (0.1, "0.1"),
    (1e100, "1e100"),
    (-1.25e20, "-1.25e20"),
    (1e14, "100000000000000.0"),
    (1e15, "1e15"),
    (123456789012345.6, "123456789012345.6"),
    (1234567890123456.8, "1234567890123456.8"),
    (1.2345678901234568e16, "1.2345678901234568e16"),
    (1e-5, "0.00001"),
    (1.25e-7, "0.000000125"),
    (1e-15, "0.000000000000001"),
    (1.5e15, "1.5e15"),
    (-1.0, "-1.0"),
    (100.0, "100.0"),
    (1.5e-15, "0.0000000000000015"),
    (1e-16, "1e-16"),
    (2.5e-300, "2.5e-300"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e308"),
]


@pytest.mark.parametrize("value, text", TEXT_FORMS)
def test_text_form(value, text):
    assert to_text(value) == text


def packed_datetime(year, month, day, hour, minute, second, microsecond) -> bytes:
    ymd = (year * 13 + month) << 5 | day
    hms = hour << 12 | minute << 6 | second
    return struct.pack("<q", ((ymd << 17 | hms) << 24) + microsecond)


def test_opaque_text_form():
    data = bytes(range(100))
    encoded = base64.b64encode(data).decode("ascii")
    assert to_text(Opaque(252, data)) == f'"base64:type252:{encoded[:76]}\\n{encoded[76:]}"'
    assert to_text(Opaque(16, b"")) == '"base64:type16:"'
    assert to_text(Opaque(MYSQL_TYPE_VAR_STRING, b'ab"c')) == '"ab\\"c"'
    stamp = packed_datetime(1999, 12, 31, 23, 59, 58, 123456)
    assert to_text(Opaque(MYSQL_TYPE_DATETIME, stamp)) == '"1999-12-31 23:59:58.123456"'
    assert to_text(Opaque(MYSQL_TYPE_TIMESTAMP, stamp)) == '"1999-12-31 23:59:58.123456"'
    assert to_text(Opaque(MYSQL_TYPE_DATE, packed_datetime(0, 0, 0, 0, 0, 0, 0))) == '"0000-00-00"'
    negative_time = struct.pack("<q", -(((838 << 12 | 59 << 6 | 58) << 24) + 999999))
    assert to_text(Opaque(MYSQL_TYPE_TIME, negative_time)) == '"-838:59:58.999999"'


@pytest.mark.parametrize(
    "precision_scale_data, decimal",
    [
        # DECIMAL(11,1): 1 digit (1 byte), 9 digits (4 bytes) . 1 digit (1 byte); negative: every byte inverted
        ("0b01 810dfb38d205", "1234567890.5"),
        ("0b01 7ef204c72dfa", "-1234567890.5"),
        ("0500 803039", "12345"),
        ("0403 80007b", "0.123"),
        ("1312 80 0001e240 3ade68b1", "0.000123456987654321"),
    ],
)
def test_decimals(precision_scale_data, decimal):
    opaque = Opaque(MYSQL_TYPE_NEWDECIMAL, bytes.fromhex(precision_scale_data.replace(" ", "")))
    assert opaque.value().as_tuple() == Decimal(decimal).as_tuple()
    assert to_text(opaque) == decimal
    assert parse(serialize([opaque])) == [opaque]


# ---------------------------------------------------------------------------
# Bad input


def shared_string_array() -> bytes:
    """100 value entries pointing at one 200-byte string: 506 bytes that would decode to 20 KB."""
    entries = b"".join(b"\x0c" + struct.pack("<H", 304) for _ in range(100))
    return b"\x02" + struct.pack("<HH", 100, 506) + entries + b"\xc8\x01" + b"x" * 200


BAD_DOCUMENTS = {
    "bad type byte": ("0d", 0),
    "bad type byte in a value entry": ("02 0100 0700 0e0000", 5),
    "truncated int16": ("0501", 1),
    "bad literal": ("0403", 1),
    "truncated element-count": ("0201", 1),
    "truncated large size": ("03 01000000 0900", 5),
    "size beyond the document": ("02 0000 ff00", 3),
    "element-count beyond the size": ("02 ff00 0400", 1),
    "large element-count beyond the size": ("03 ffffffff 08000000", 1),
    "value offset beyond the container": ("02 0100 0700 0c5000", 6),
    "value offset inside the header": ("02 0100 0a00 0c0200 016162", 6),
    "key beyond the object": ("00 0100 0c00 40000100 040000 61", 5),
    "key inside the header": ("00 0100 0c00 02000100 040000 61", 5),
    "duplicate keys": ("00 0200 1400 12000100 13000100 040000 040100 6161", 9),
    "string longer than the document": ("0c 05 6162", 1),
    "data-length of six bytes": ("0c 8080808080 01", 1),
    "data-length of 4 GB": ("0c ffffffff7f", 1),
    "data-length cut short": ("0c 80", 2),
    "string not utf-8": ("0c 02 c328", 2),
    "key not utf-8": ("00 0100 0c00 0b000100 040000 ff", 12),
    "infinite double": ("0b 000000000000f07f", 1),
    "nan double": ("0b 000000000000f87f", 1),
    "opaque DATE of 7 bytes": ("0f 0a 07 00000000000000", 3),
    "opaque TIME of 9 bytes": ("0f 0b 09 000000000000000000", 3),
    "DECIMAL data too short": ("0f f6 03 050280", 3),
    "DECIMAL without precision": ("0f f6 01 05", 3),
    "DECIMAL precision 0": ("0f f6 02 0000", 3),
    "DECIMAL scale above precision": ("0f f6 03 020380", 3),
    "DECIMAL group of 10 digits": ("0f f6 06 0900 bb9aca00", 5),
    "custom-type missing": ("0f", 1),
}


@pytest.mark.parametrize("name", sorted(BAD_DOCUMENTS))
def test_bad_documents(name):
    document, offset = BAD_DOCUMENTS[name]
    with pytest.raises(JsonBinaryError) as error:
        parse(bytes.fromhex(document.replace(" ", "")))
    assert error.value.offset == offset
    assert f"at byte {offset}: expected " in str(error.value)


def shared_nested_arrays(levels: int) -> bytes:
    """Arrays of two entries pointing at one child array: 10 bytes a level that would decode to 2**levels leaves."""
    body = b"\x00\x00\x04\x00"
    for _ in range(levels):
        entry = b"\x02" + struct.pack("<H", 10)
        body = struct.pack("<HH", 2, 10 + len(body)) + entry + entry + body
    return b"\x02" + body


def test_values_sharing_bytes_cannot_inflate_the_output():
    with pytest.raises(JsonBinaryError, match="do not share bytes"):
        parse(shared_string_array())
    assert len(shared_nested_arrays(60)) == 605
    with pytest.raises(JsonBinaryError, match="do not share bytes"):
        parse(shared_nested_arrays(60))
    assert parse(shared_nested_arrays(2)) == [[[], []], [[], []]]  # sharing within the budget reads


def test_every_truncation_of_a_document_is_refused():
    document = serialize({"name": "Joe", "list": [1, 100000, 2**40, 1.5, "é" * 200, None], "x": {"y": True}})
    for length in range(1, len(document)):
        with pytest.raises(JsonBinaryError):
            parse(document[:length])


def test_lying_counts_and_sizes_are_refused_before_reading():
    for document, offset in [
        (b"\x03" + struct.pack("<II", 0xFFFFFFFF, 0xFFFFFFFF), 5),  # size far past the document
        (b"\x01" + struct.pack("<II", 0x10000000, 24) + bytes(16), 1),  # 268 M members in 24 bytes
        (b"\x0c" + bytes.fromhex("ffffffff0f") + b"x", 1),  # 4 GB string, 1 byte there
    ]:
        with pytest.raises(JsonBinaryError) as error:
            parse_binary(document)
        assert error.value.offset == offset


def test_opaque_value_checks_its_bytes():
    with pytest.raises(JsonBinaryError):
        Opaque(MYSQL_TYPE_DATE, b"\x00").value()
    with pytest.raises(JsonBinaryError):
        to_text(Opaque(MYSQL_TYPE_NEWDECIMAL, b"\x05"))


# ---------------------------------------------------------------------------
# Properties

integers = st.one_of(
    st.integers(-(2**15), 2**15 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(2**63, 2**64 - 1),
)
# Long strings: over 127 bytes (2-byte data-length), and over 64 KB in total now and then.
# MySQL stores utf8mb4: any code point but the surrogates, which UTF-8 cannot carry.
chars = st.characters(blacklist_categories=("Cs",))
long_texts = st.builds(lambda char, count: char * count, chars, st.integers(128, 30000))
huge_texts = st.builds(lambda char, count: char * count, chars, st.integers(22000, 30000))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    integers,
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(chars),
    long_texts,
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=8),
        st.dictionaries(st.text(chars, max_size=12), children, max_size=8),
    ),
    max_leaves=40,
)
PROPERTIES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def keys_in_mysql_order(value) -> bool:
    if isinstance(value, dict):
        keys = [key.encode("utf-8") for key in value]
        return keys == sorted(keys, key=lambda key: (len(key), key)) and all(map(keys_in_mysql_order, value.values()))
    if isinstance(value, list):
        return all(map(keys_in_mysql_order, value))
    return True


@PROPERTIES
@given(json_values)
def test_parse_inverts_serialize(value):
    document = serialize(value)
    decoded = parse(document)
    assert typed(decoded) == typed(value)
    assert keys_in_mysql_order(decoded)
    assert serialize(decoded) == document


@PROPERTIES
@given(st.lists(huge_texts, min_size=3, max_size=5), json_values)
def test_large_documents_round_trip(texts, value):
    document = serialize({"texts": texts, "value": value})
    assert document[0] == 0x01  # large object: over 64 KB
    assert typed(parse(document)) == typed({"texts": texts, "value": value})
    assert serialize(parse(document)) == document
    assert_view_matches(parse_binary(document), parse(document))


@PROPERTIES
@given(json_values)
def test_lazy_view_agrees_with_parse(value):
    document = serialize(value)
    assert_view_matches(parse_binary(document), parse(document))


@PROPERTIES
@given(json_values)
def test_parsed_documents_print_as_mysql_prints_them(value):
    assert to_text(parse(serialize(value))) == mysql_text(value)


def mysql_text(value) -> str:
    """MySQL's JSON text (json_dom.cc ``wrapper_to_string``), written apart from to_text to check it.

    Strings escape as JSON requires and nothing more (json.dumps without ASCII
    escaping does exactly that); members by key length, then UTF-8 bytes;
    ", " between items and ": " after keys.
    """
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return mysql_double_text(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(map(mysql_text, value)) + "]"
    keys = sorted(value, key=lambda key: (len(key.encode()), key.encode()))
    return "{" + ", ".join(f"{mysql_text(key)}: {mysql_text(value[key])}" for key in keys) + "}"


def mysql_double_text(number: float) -> str:
    """``my_gcvt(d, MY_GCVT_ARG_DOUBLE, 34)`` then ".0" when neither '.' nor 'e' was written.

    dtoa mode 4 with 34 digits gives the shortest round-trip digits (Python's
    repr digits); with ``point`` the decimal exponent of 0.DIGITS, my_gcvt
    writes them plainly when point >= -14 and (point <= 15 or point < digits),
    else as D.DDDe[-]X.
    """
    exact = Decimal(repr(number)).normalize()
    sign, digits, exponent = exact.as_tuple()
    point = len(digits) + exponent
    if point >= -14 and (point <= 15 or point < len(digits)):
        body = format(abs(exact), "f")
    else:
        text = "".join(map(str, digits))
        body = text[0] + ("." + text[1:] if len(text) > 1 else "") + f"e{point - 1}"
    body = ("-" if sign else "") + body
    return body if "." in body or "e" in body else body + ".0"


def test_mysql_text_prints_the_text_form_table():
    """The test's own printer agrees with the hand-checked table of MySQL texts (opaque values aside)."""
    for value, text in TEXT_FORMS:
        assert mysql_text(value) == text


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=80))
def test_random_bytes_give_a_value_or_json_binary_error(data):
    check_hostile(data)


@settings(max_examples=500, deadline=None)
@given(json_values, st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4))
def test_corrupted_documents_give_a_value_or_json_binary_error(value, changes):
    document = bytearray(serialize(value))
    for position, byte in changes:
        document[position % len(document)] = byte
    check_hostile(bytes(document))


def check_hostile(document: bytes) -> None:
    """Hostile bytes raise JsonBinaryError and nothing else, through parse and every view accessor.

    What parses is a JSON value that serializes and parses back the same.
    """
    try:
        value = parse(document)
    except JsonBinaryError:
        pass
    else:
        assert typed(parse(serialize(value))) == typed(value)
    try:
        view = parse_binary(document)
    except JsonBinaryError:
        return
    assert explore(view) >= 1


def attempt(read, *args):
    """``read(*args)``, or None when it raises JsonBinaryError."""
    try:
        return read(*args)
    except JsonBinaryError:
        return None


def explore(root: JsonView, limit: int = 2000) -> int:
    """Every accessor on every value reachable from ``root`` (at most ``limit`` values); returns how many.

    Where a value decodes, its ``raw()`` bytes decode to the same value on their own.
    """
    pending, reached = [root], 0
    while pending and reached < limit:
        view = pending.pop()
        reached += 1
        value = attempt(view.to_python)
        if value is not None:
            assert typed(parse(view.raw())) == typed(value)
        if view.type not in (SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY):
            continue
        for index in range(len(view)):
            child = attempt(view.element, index)
            if child is not None:
                pending.append(child)
            key = attempt(view.key, index) if view.is_object else None
            if key is not None:
                attempt(view.lookup, key)
    return reached


# ---------------------------------------------------------------------------
# Throughput (a measurement printed with ``pytest -s``, not a timed assertion)


def realistic_documents(count: int, seed: int = 8132) -> list[bytes]:
    """``count`` documents of 1-20 KB: objects holding arrays of user-like records."""
    rng = random.Random(seed)

    def record() -> dict:
        return {
            "id": rng.randrange(10**9),
            "name": f"user{rng.randrange(10**6)}",
            "email": f"user{rng.randrange(10**6)}@example.com",
            "score": rng.random() * 100,
            "active": rng.random() < 0.5,
            "tags": [f"tag{rng.randrange(50)}" for _ in range(rng.randrange(5))],
            "address": {
                "street": f"{rng.randrange(1000)} Main St",
                "city": "Springfield",
                "zip": f"{rng.randrange(10**5):05d}",
            },
            "note": "lorem ipsum dolor " * rng.randrange(1, 10),
            "balance": rng.randrange(-(2**40), 2**40),
            "parent": None,
        }

    documents = []
    for _ in range(count):
        records = [record() for _ in range(rng.randrange(3, 58))]  # about 350 bytes a record
        documents.append(serialize({"items": records, "count": len(records)}))
    return documents


def parse_throughput(documents: list[bytes]) -> dict:
    """Parse every document once: how many, their bytes, the seconds taken and MB/s (10**6 bytes)."""
    started = time.perf_counter()
    parsed = [parse(document) for document in documents]
    seconds = time.perf_counter() - started
    size = sum(map(len, documents))
    return {"documents": len(parsed), "bytes": size, "seconds": seconds, "mb_per_s": size / seconds / 1e6}


def test_parse_throughput_on_realistic_documents():
    documents = realistic_documents(2000)
    assert 900 <= min(map(len, documents)) and max(map(len, documents)) <= 22 * 1024
    measured = parse_throughput(documents)
    assert measured["documents"] == 2000 and measured["bytes"] == sum(map(len, documents))
    print(f"\nbinary JSON parse: {measured['documents']} documents, {measured['bytes'] / 1e6:.1f} MB, "
          f"{measured['seconds']:.2f} s, {measured['mb_per_s']:.1f} MB/s")


@PROPERTIES
@given(json_values)
def test_text_form_is_json_that_reads_back_the_same(value):
    assert typed(json.loads(to_text(value))) == typed(value)


