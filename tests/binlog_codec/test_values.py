"""The value decoders (:mod:`binlog_codec.values`) against their inverse (:mod:`binlog_codec.value_encoder`).

* Round trips: for random values over each column type's documented range,
  ``decode(encode(v)) == v``, the decoder consumes exactly the encoded bytes
  and ``encode(decode(b)) == b``.
* Known bytes: layouts MySQL documents (``decimal.cc``, ``my_time.cc``) and
  values servers wrote into the shared fixtures, read and written both ways.
* Row images (WL#5092): random column subsets with NULLs round-trip through
  :func:`encode_row_image` and :meth:`DecodingPlan.image`; absent columns stay absent.
* Hostile bytes: every truncation of an image, random bytes, bytes invalid in
  a character set raise :class:`ShortBody` (naming the column), nothing else.
"""

from __future__ import annotations

import dataclasses
import functools
import struct
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from binlog_codec import charsets
from binlog_codec.event_types import EventType
from binlog_codec.events import FormatDescriptionEvent, RowsEvent, TableMapEvent, read
from binlog_codec.json_binary import Opaque
from binlog_codec.rows import DecodingPlan
from binlog_codec.table_map import Column, ColumnType, TableMap, table_map
from binlog_codec.value_encoder import encode_decimal, encode_row_image, time2_binary, time_packed, value_encoder
from binlog_codec.json_binary import JSON_NULL
from binlog_codec.values import decimal_size, value_decoder
from binlog_codec.wire import ShortBody
from fixture_facts import good_files, path
from typed_values import typed

PROPERTIES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

LATIN1, CP1251, UTF8MB4, UCS2, UTF16, GBK, BINARY = 8, 51, 255, 35, 54, 28, 63
CHARSETS = {
    "latin1": LATIN1,
    "cp1251": CP1251,
    "utf8mb4": UTF8MB4,
    "ucs2": UCS2,
    "utf16": UTF16,
    "gbk": GBK,
    "binary": BINARY,
}


def column(type_code: int, real_type: int | None = None, *, name: str | None = "c", **metadata) -> Column:
    return Column(0, type_code, type_code if real_type is None else real_type, True, name=name, **metadata)


def float32s(values) -> list[bytes]:
    return [struct.pack("<f", value) for value in values]


def same(col: Column, decoded, value) -> bool:
    """FLOAT and VECTOR decode to a decimal of the same 4-byte float (see
    :func:`test_float_decodes_to_its_shortest_decimal`); the null JSON document (written from
    None) to JSON_NULL; all else exactly."""
    if col.type_code == ColumnType.JSON and value is None:
        return decoded is JSON_NULL
    if col.type_code == ColumnType.FLOAT:
        return float32s([decoded]) == float32s([value])
    if col.type_code == ColumnType.VECTOR:
        return float32s(decoded) == float32s(value)
    return typed(decoded) == typed(value)


def round_trip(col: Column, value, flavour: str = "mysql", assumed: int | None = None) -> bytes:
    """Encode ``value``, decode it back (bytes after it stay unread), re-encode what was decoded."""
    raw = value_encoder(col, flavour, assumed)(value)
    decoded, end = value_decoder(col, flavour, assumed)(raw + b"\x5a\xa5", 0)
    assert end == len(raw)
    assert same(col, decoded, value), (decoded, value)
    assert value_encoder(col, flavour, assumed)(decoded) == raw
    return raw


def decode_hex(col: Column, hex_bytes: str, flavour: str = "mysql"):
    raw = bytes.fromhex(hex_bytes)
    value, end = value_decoder(col, flavour)(raw, 0)
    assert end == len(raw)
    return value


@functools.cache
def edges(low: int, high: int, *special: int) -> st.SearchStrategy[int]:
    """Any integer of [low, high], the bounds (and ``special``) often."""
    return st.one_of(st.sampled_from([low, high, *special]), st.integers(low, high))


# ---------------------------------------------------------------------------
# Strategies: (column, value) of each column type over its documented range

INTEGER_TYPES = {
    "tinyint": (ColumnType.TINY, 1),
    "smallint": (ColumnType.SHORT, 2),
    "mediumint": (ColumnType.INT24, 3),
    "int": (ColumnType.LONG, 4),
    "bigint": (ColumnType.LONGLONG, 8),
}


def integer_range(size: int, unsigned: bool | None) -> tuple[int, int]:
    bits = 8 * size
    return (0, 2**bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


@st.composite
def integers(draw, type_code: int, size: int):
    unsigned = draw(st.sampled_from([False, True, None]))  # None: no SIGNEDNESS metadata, read signed
    low, high = integer_range(size, unsigned)
    return column(type_code, unsigned=unsigned), draw(edges(low, high, 0, 1, -1 if low else 1))


@st.composite
def decimals(draw):
    precision = draw(st.integers(1, 65))
    scale = draw(st.integers(0, min(precision, 30)))
    largest = 10**precision - 1
    digits = draw(edges(-largest, largest, 0, 1, -1))
    return column(ColumnType.NEWDECIMAL, precision=precision, scale=scale), Decimal(f"{digits}E-{scale}")


@st.composite
def floats(draw):
    return column(ColumnType.FLOAT, pack_length=4), draw(st.floats(width=32, allow_nan=False, allow_infinity=False))


@st.composite
def doubles(draw):
    return column(ColumnType.DOUBLE, pack_length=8), draw(st.floats(allow_nan=False, allow_infinity=False))


@st.composite
def bits(draw):
    width = draw(st.integers(1, 64))
    return column(ColumnType.BIT, length=width), draw(edges(0, 2**width - 1))


@st.composite
def years(draw):
    return column(ColumnType.YEAR), draw(st.one_of(st.just(0), edges(1901, 2155)))


@functools.cache
def zero_or(low: int, high: int) -> st.SearchStrategy[int]:
    """Zero often (zero and partly-zero dates), else any of [low, high]."""
    return st.one_of(st.just(0), edges(low, high))


@st.composite
def date_texts(draw) -> str:
    return f"{draw(zero_or(1, 9999)):04d}-{draw(zero_or(1, 12)):02d}-{draw(zero_or(1, 31)):02d}"


@st.composite
def fractions(draw, fsp: int) -> str:
    return f".{draw(edges(0, 10**fsp - 1)):0{fsp}d}" if fsp else ""


@st.composite
def dates(draw):
    return column(draw(st.sampled_from([ColumnType.DATE, ColumnType.NEWDATE]))), draw(date_texts())


@st.composite
def datetime_texts(draw, fsp: int) -> str:
    clock = f"{draw(zero_or(1, 23)):02d}:{draw(zero_or(1, 59)):02d}:{draw(zero_or(1, 59)):02d}"
    return f"{draw(date_texts())} {clock}{draw(fractions(fsp))}"


@st.composite
def datetime2s(draw, fsp: int):
    return column(ColumnType.DATETIME2, fsp=fsp), draw(datetime_texts(fsp))


@st.composite
def old_datetimes(draw):
    return column(ColumnType.DATETIME), draw(datetime_texts(0))


@st.composite
def timestamp_texts(draw, fsp: int) -> str:
    """MySQL's TIMESTAMP range, '1970-01-01 00:00:01' to '2038-01-19 03:14:07' UTC, and the zero timestamp."""
    if draw(st.integers(0, 9)) == 0:
        return "0000-00-00 00:00:00" + (f".{0:0{fsp}d}" if fsp else "")
    seconds = draw(edges(1, 2**31 - 1))
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M:%S") + draw(fractions(fsp))


@st.composite
def timestamp2s(draw, fsp: int):
    return column(ColumnType.TIMESTAMP2, fsp=fsp), draw(timestamp_texts(fsp))


@st.composite
def old_timestamps(draw):
    return column(ColumnType.TIMESTAMP), draw(timestamp_texts(0))


@st.composite
def time_texts(draw, fsp: int) -> str:
    """[-838:59:59.999999, 838:59:59.999999] at ``fsp`` digits; never ``-00:00:00``."""
    hours, minutes, seconds = draw(zero_or(1, 838)), draw(zero_or(1, 59)), draw(zero_or(1, 59))
    fraction = draw(fractions(fsp))
    negative = draw(st.booleans()) and bool(hours or minutes or seconds or fraction.strip(".0"))
    return f"{'-' if negative else ''}{hours:02d}:{minutes:02d}:{seconds:02d}{fraction}"


@st.composite
def time2s(draw, fsp: int):
    return column(ColumnType.TIME2, fsp=fsp), draw(time_texts(fsp))


@st.composite
def old_times(draw):
    return column(ColumnType.TIME), draw(time_texts(0))


@functools.cache
def alphabet(collation_id: int) -> list[str]:
    """The characters a one- or two-byte character set has, found by decoding every such sequence."""
    sequences = [bytes([first]) for first in range(256)]
    if charsets.collation(collation_id).maxlen > 1:
        sequences += [bytes([first, second]) for first in range(0x80, 0x100) for second in range(256)]
    found = set()
    for sequence in sequences:
        try:
            found.add(charsets.decode(sequence, collation_id))
        except charsets.CharsetError:
            continue
    return sorted(char for char in found if len(char) == 1)


@functools.cache
def texts(collation_id: int, max_size: int) -> st.SearchStrategy:
    """Values of a column of ``collation_id``: bytes for binary; MySQL's latin1 from any bytes (cp1252
    with its five undefined bytes as C1 controls); surrogate-free text for the Unicode sets."""
    if collation_id == BINARY:
        return st.binary(max_size=max_size)
    if collation_id == LATIN1:
        return st.binary(max_size=max_size).map(lambda raw: charsets.decode(raw, LATIN1))
    if collation_id in (UTF8MB4, UTF16):
        return st.text(st.characters(exclude_categories=("Cs",)), max_size=max_size)
    if collation_id == UCS2:
        return st.text(st.characters(exclude_categories=("Cs",), max_codepoint=0xFFFF), max_size=max_size)
    return st.lists(st.sampled_from(alphabet(collation_id)), max_size=max_size).map("".join)


TEXT_TYPES = ["varchar", "char", "blob"]


@st.composite
def text_values(draw, collation_id: int | None = None, kind: str | None = None):
    """A VARCHAR/CHAR (1- or 2-byte length) or BLOB/TEXT (pack length 1-4) column and a value that fits it."""
    collation_id = draw(st.sampled_from(sorted(CHARSETS.values()))) if collation_id is None else collation_id
    kind = draw(st.sampled_from(TEXT_TYPES)) if kind is None else kind
    long_prefix = kind != "blob" and draw(st.booleans())
    value = draw(texts(collation_id, 300 if long_prefix else 60))
    if kind == "char" and collation_id == BINARY:  # BINARY(n) values are n bytes (the decoder pads them)
        value = value.ljust(256 if long_prefix else 0, b"\xff")
        return column(ColumnType.STRING, length=len(value), collation_id=collation_id), value
    if kind == "char":  # CHAR values end in no space (the server strips them)
        value = value.rstrip(" ")
    size = len(value if isinstance(value, bytes) else charsets.encode(value, collation_id))
    if kind == "blob":
        pack_length = draw(st.integers(1 if size < 256 else 2, 4))
        return column(ColumnType.BLOB, pack_length=pack_length, collation_id=collation_id), value
    length = draw(st.integers(max(size, 256), 65535) if long_prefix else st.integers(size, 255))
    type_code = ColumnType.VARCHAR if kind == "varchar" else ColumnType.STRING
    return column(type_code, length=length, collation_id=collation_id), value


labels = st.text(st.characters(exclude_categories=("Cs",), exclude_characters=","), min_size=1, max_size=6)


@st.composite
def label_lists(draw, at_most: int) -> list[str]:
    names = draw(st.lists(labels, min_size=1, max_size=min(at_most, 12), unique=True))
    if at_most > 255 and draw(st.booleans()):  # more than 255 labels: a 2-byte index
        names += [f"#{index}" for index in range(draw(st.integers(256, 300)))]
    return list(dict.fromkeys(names))[:at_most]


@st.composite
def enums(draw):
    names = draw(st.one_of(st.none(), label_lists(65535)))
    size = 1 if names is None or len(names) < 256 else 2
    col = column(ColumnType.STRING, ColumnType.ENUM, length=size, enum_values=names)
    if names is None:
        return col, draw(edges(0, 255))
    return col, draw(st.one_of(st.just(""), st.sampled_from(names)))


@st.composite
def sets(draw):
    names = draw(st.one_of(st.none(), label_lists(64)))
    count = 64 if names is None else len(names)
    size = (count + 7) // 8 if count <= 32 else 8  # 1, 2, 3, 4 or 8 bytes
    col = column(ColumnType.STRING, ColumnType.SET, length=size, set_values=names)
    if names is None:
        return col, draw(edges(0, 2 ** (8 * size) - 1))
    chosen = draw(st.sets(st.sampled_from(names)))
    return col, ",".join(name for name in names if name in chosen)


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    edges(-(2**63), 2**64 - 1, -(2**15), 2**15, -(2**31), 2**31, 2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(exclude_categories=("Cs",))),
    st.builds(Opaque, st.sampled_from([ColumnType.VARCHAR, ColumnType.BLOB]), st.binary(max_size=12)),
    st.builds(Opaque, st.sampled_from([ColumnType.DATE, ColumnType.DATETIME]), st.binary(min_size=8, max_size=8)),
    st.just(Opaque(ColumnType.NEWDECIMAL, bytes.fromhex("0603807b01c8"))),  # MySQL 9.0, fixture json-opaque
)
json_documents = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=6),
        st.dictionaries(st.text(st.characters(exclude_categories=("Cs",)), max_size=8), children, max_size=6),
    ),
    max_leaves=25,
)


@st.composite
def jsons(draw):
    return column(ColumnType.JSON, pack_length=draw(st.sampled_from([4, 3]))), draw(json_documents)


@st.composite
def vectors(draw):
    values = st.floats(width=32, allow_nan=False, allow_infinity=False)
    return column(ColumnType.VECTOR, pack_length=4), draw(st.lists(values, max_size=16))


@st.composite
def geometries(draw):
    col = column(ColumnType.GEOMETRY, pack_length=draw(st.integers(1, 4)), collation_id=BINARY)
    return col, draw(st.binary(max_size=100))


KINDS: dict[str, st.SearchStrategy] = {
    **{name: integers(type_code, size) for name, (type_code, size) in INTEGER_TYPES.items()},
    "decimal": decimals(),
    "float": floats(),
    "double": doubles(),
    "bit": bits(),
    "year": years(),
    "date": dates(),
    "time": old_times(),
    "datetime": old_datetimes(),
    "timestamp": old_timestamps(),
    **{f"time2({fsp})": time2s(fsp) for fsp in range(7)},
    **{f"datetime2({fsp})": datetime2s(fsp) for fsp in range(7)},
    **{f"timestamp2({fsp})": timestamp2s(fsp) for fsp in range(7)},
    **{kind: text_values(kind=kind) for kind in TEXT_TYPES},
    "enum": enums(),
    "set": sets(),
    "json": jsons(),
    "vector": vectors(),
    "geometry": geometries(),
}

# ---------------------------------------------------------------------------
# Round trips


@pytest.mark.parametrize("kind", sorted(KINDS))
@PROPERTIES
@given(data=st.data())
def test_decode_inverts_encode(kind, data):
    col, value = data.draw(KINDS[kind])
    round_trip(col, value)


@PROPERTIES
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
@example(0.1)
@example(1.17549435e-38)
def test_float_decodes_to_its_shortest_decimal(value):
    """The fewest significant digits that read back as the same 4-byte float."""
    raw = struct.pack("<f", value)
    got = decode_hex(column(ColumnType.FLOAT), raw.hex())
    digits = len(Decimal(repr(got)).normalize().as_tuple().digits)
    assert struct.pack("<f", got) == raw and digits <= 9
    assert digits == 1 or struct.pack("<f", float(f"{value:.{digits - 1}g}")) != raw


@pytest.mark.parametrize("raw, value", [("ffff7f7f", 3.4028235e38), ("ffff7fff", -3.4028235e38)])
def test_float_maximum_decodes_to_its_shortest_decimal(raw, value):
    assert struct.pack("<f", value).hex() == raw
    assert repr(decode_hex(column(ColumnType.FLOAT), raw)) == repr(value)


@pytest.mark.parametrize("charset", sorted(CHARSETS))
@PROPERTIES
@given(data=st.data())
def test_text_round_trips_in_its_charset(charset, data):
    col, value = data.draw(text_values(CHARSETS[charset]))
    raw = round_trip(col, value)
    stored = value.rstrip(b"\0") if col.type_code == ColumnType.STRING and isinstance(value, bytes) else value
    stored = stored if isinstance(stored, bytes) else charsets.encode(stored, col.collation_id)
    assert raw.endswith(stored) and int.from_bytes(raw[: len(raw) - len(stored)], "little") == len(stored)


# ---------------------------------------------------------------------------
# Known bytes: MySQL's documented layouts and what servers wrote


@pytest.mark.parametrize(
    "type_code, unsigned, value, raw",
    [
        (ColumnType.TINY, False, -128, "80"),
        (ColumnType.TINY, True, 255, "ff"),
        (ColumnType.SHORT, False, -2, "feff"),
        (ColumnType.INT24, True, 16777215, "ffffff"),
        (ColumnType.INT24, False, -8388608, "000080"),
        (ColumnType.LONG, False, -1, "ffffffff"),
        (ColumnType.LONGLONG, True, 2**64 - 1, "ffffffffffffffff"),
        (ColumnType.LONGLONG, False, -(2**63), "0000000000000080"),
        (ColumnType.LONGLONG, True, 6000000000, "00bca06501000000"),  # MySQL 8.0.26, fixture binlog-invisible-columns
    ],
)
def test_integer_layout(type_code, unsigned, value, raw):
    col = column(type_code, unsigned=unsigned)
    assert value_encoder(col)(value).hex() == raw and decode_hex(col, raw) == value


@pytest.mark.parametrize(
    "precision, scale, text, raw",
    [
        (14, 4, "1234567890.1234", "810dfb38d204d2"),  # decimal.cc, the decimal2bin comment
        (14, 4, "-1234567890.1234", "7ef204c72dfb2d"),  # idem
        (10, 5, "0.10000", "800000002710"),  # MySQL 5.7, fixture bin-log.000001
        (10, 2, "250.00", "800000fa00"),  # MySQL 9.6, fixture binlog_transaction_with_GTID_TAG
        (5, 2, "20.99", "801463"),  # MySQL 5.5, fixture sakila
        (4, 2, "-1.50", "7ecd"),
        (17, 2, "0.00", "8000000000000000"),
        (1, 0, "9", "89"),
        (2, 2, "-0.99", "1c"),
        (18, 9, "999999999.999999999", "bb9ac9ff3b9ac9ff"),
        (18, 9, "-999999999.999999999", "44653600c4653600"),
    ],
)
def test_decimal_layout(precision, scale, text, raw):
    col = column(ColumnType.NEWDECIMAL, precision=precision, scale=scale)
    assert len(raw) // 2 == decimal_size(precision, scale)
    assert encode_decimal(Decimal(text), precision, scale).hex() == raw
    assert str(decode_hex(col, raw)) == text


def test_decimal_zero_is_positive_and_digits_are_never_rounded():
    assert encode_decimal(Decimal("-0.00"), 4, 2) == encode_decimal(0, 4, 2) == bytes.fromhex("8000")
    col = column(ColumnType.NEWDECIMAL, precision=4, scale=2, name="price")
    for bad in (Decimal("1.005"), Decimal("100"), Decimal("NaN"), 1.5):
        with pytest.raises(ValueError, match="column price"):
            value_encoder(col)(bad)


@pytest.mark.parametrize(
    "fsp, text, raw",
    [
        (0, "00:00:00", "800000"),
        (0, "838:59:59", "b46efb"),
        (0, "-838:59:59", "4b9105"),
        (0, "-507:48:27", "6043e5"),  # MySQL 8.0.40, fixture time_issue
        (2, "00:00:00.00", "80000000"),  # my_time.cc, the my_time_packed_from_binary table
        (2, "-00:00:01.00", "7fffff00"),  # idem
        (1, "-00:00:01.0", "7fffff00"),
        (6, "-00:00:00.000001", "7fffffffffff"),
        (5, "-00:00:01.00001", "7ffffefffff6"),
        (6, "838:59:59.999999", "b46efb0f423f"),
    ],
)
def test_time2_layout(fsp, text, raw):
    col = column(ColumnType.TIME2, fsp=fsp)
    assert value_encoder(col)(text).hex() == raw and decode_hex(col, raw) == text


# my_time.cc's table of negative TIME(2) values (disk value, time value), and the same at fsp 1, 3, 4.
NEGATIVE_FRACTIONS = [
    (2, "-00:00:00.01", "7fffffff"),
    (2, "-00:00:00.99", "7fffff9d"),
    (2, "-00:00:01.01", "7ffffeff"),
    (2, "-00:00:01.10", "7ffffef6"),
    (1, "-00:00:00.5", "7fffffce"),
    (3, "-838:59:59.999", "4b9104d8fa"),
    (4, "-00:00:00.0001", "7fffffffff"),
]


@pytest.mark.parametrize("fsp, text, raw", NEGATIVE_FRACTIONS)
def test_negative_time2_fractions_as_my_time_cc_documents(fsp, text, raw):
    assert time2_binary(time_packed(text, fsp), fsp).hex() == raw
    assert decode_hex(column(ColumnType.TIME2, fsp=fsp), raw) == text


@pytest.mark.parametrize(
    "type_code, fsp, text, raw",
    [
        (ColumnType.DATETIME2, 0, "2018-10-30 18:02:09", "99a13d2089"),  # MySQL 5.7, fixture checksum-none
        (ColumnType.DATETIME2, 0, "0000-00-00 00:00:00", "8000000000"),
        (ColumnType.DATETIME2, 0, "2020-00-00 00:00:00", "99a5000000"),
        (ColumnType.DATETIME2, 0, "9999-12-31 23:59:59", "fef3ff7efb"),
        (ColumnType.DATETIME2, 1, "2018-10-30 18:02:09.5", "99a13d208932"),
        (ColumnType.DATETIME2, 3, "2018-10-30 18:02:09.123", "99a13d208904ce"),
        (ColumnType.DATETIME2, 5, "2018-10-30 18:02:09.12345", "99a13d208901e23a"),
        (ColumnType.TIMESTAMP2, 0, "2022-04-20 22:18:04", "6260869c"),  # MariaDB 10.5, fixture mariadb-bin
        (ColumnType.TIMESTAMP2, 0, "0000-00-00 00:00:00", "00000000"),
        (ColumnType.TIMESTAMP2, 3, "0000-00-00 00:00:00.000", "000000000000"),
        (ColumnType.TIMESTAMP2, 1, "1970-01-01 00:00:01.5", "0000000132"),
        (ColumnType.TIMESTAMP2, 6, "2038-01-19 03:14:07.999999", "7fffffff0f423f"),
        (ColumnType.TIMESTAMP, 0, "2006-02-15 03:34:33", "49a1f243"),  # MySQL 5.5, fixture sakila
        (ColumnType.DATETIME, 0, "2006-02-14 22:04:36", "9456f1a13e120000"),  # idem
        (ColumnType.DATE, 0, "2020-01-31", "3fc80f"),
        (ColumnType.DATE, 0, "0000-00-00", "000000"),
        (ColumnType.DATE, 0, "9999-12-31", "9f1f4e"),
        (ColumnType.TIME, 0, "-00:00:01", "ffffff"),
        (ColumnType.TIME, 0, "838:59:59", "a7f57f"),
        (ColumnType.TIME, 0, "-838:59:59", "590a80"),
    ],
)
def test_temporal_layout(type_code, fsp, text, raw):
    col = column(type_code, fsp=fsp)
    assert value_encoder(col)(text).hex() == raw and decode_hex(col, raw) == text


@pytest.mark.parametrize(
    "type_code, bad",
    [
        (ColumnType.TIMESTAMP2, "1970-01-01 00:00:00"),  # its bytes are the zero timestamp's
        (ColumnType.TIMESTAMP2, "2020-02-30 00:00:00"),
        (ColumnType.TIMESTAMP2, "0000-00-00 00:00:00.5"),
        (ColumnType.DATETIME2, "2020-13-01 00:00:00"),
        (ColumnType.DATETIME2, "2020-01-01 24:00:00"),
        (ColumnType.DATETIME2, "2020-01-01 00:00:00.1234"),  # more digits than fsp 3
        (ColumnType.TIME2, "839:00:00"),
        (ColumnType.TIME2, "00:60:00"),
        (ColumnType.DATE, "2020-1-1"),
        (ColumnType.YEAR, 1900),
        (ColumnType.YEAR, 2156),
        (ColumnType.TINY, 128),
        (ColumnType.LONGLONG, 2**63),
        (ColumnType.SHORT, "1"),
        (ColumnType.BIT, 1),  # BIT(0)
        (ColumnType.FLOAT, 1e39),
    ],
)
def test_values_a_column_cannot_hold_raise_naming_it(type_code, bad):
    with pytest.raises(ValueError, match="column when"):
        value_encoder(column(type_code, fsp=3, name="when"))(bad)


@pytest.mark.parametrize(
    "col, value, raw",
    [
        (column(ColumnType.YEAR), 2006, "6a"),  # MySQL 5.5, fixture sakila
        (column(ColumnType.YEAR), 0, "00"),
        (column(ColumnType.YEAR), 2155, "ff"),
        (column(ColumnType.BIT, length=10), 0b1000000001, "0201"),
        (column(ColumnType.BIT, length=64), 2**64 - 1, "ffffffffffffffff"),
        (column(ColumnType.BIT, length=3), 4, "04"),  # MySQL 8.0.26, fixture mysql_type_bit
        (column(ColumnType.FLOAT), 1.0, "0000803f"),
        (column(ColumnType.DOUBLE), 449847.0, "00000000dc741b41"),  # MySQL 5.7, fixture checksum-crc32
        # MySQL 9.0, fixture vector.binlog
        (column(ColumnType.VECTOR, pack_length=4), [1.1, 2.2, 3.3], "0c000000cdcc8c3fcdcc0c4033335340"),
        # SRID 0, then the WKB of POINT(1 2)
        (
            column(ColumnType.GEOMETRY, pack_length=4),
            bytes.fromhex("00000000" "0101000000" "000000000000f03f" "0000000000000040"),
            "19000000" "00000000" "0101000000" "000000000000f03f" "0000000000000040",
        ),
        # WL#8132: small object, 1 member, 12 bytes; key entry (offset 11, length 1); int16 1 inlined; "a"
        (column(ColumnType.JSON, pack_length=4), {"a": 1}, "0d000000" "00" "0100" "0c00" "0b000100" "050100" "61"),
        (column(ColumnType.JSON, pack_length=4), {"age": 24, "data": "xxxxxxxxxx", "name": "Joe"},
         "340000000003003300190003001c000400200004000518000c24000c2f00616765646174616e616d65"
         "0a78787878787878787878034a6f65"),  # MySQL 8.0.22, fixture json.binlog
        (column(ColumnType.STRING, ColumnType.ENUM, length=1, enum_values=["a", "b", "c"]), "b", "02"),
        (column(ColumnType.STRING, ColumnType.ENUM, length=1, enum_values=["a", "b"]), "", "00"),
        (column(ColumnType.STRING, ColumnType.ENUM, length=2, enum_values=[str(i) for i in range(300)]), "299", "2c01"),
        (column(ColumnType.STRING, ColumnType.SET, length=1, set_values=["one", "two", "three"]), "one,three", "05"),
        (column(ColumnType.STRING, ColumnType.SET, length=8, set_values=[f"s{i}" for i in range(64)]),
         ",".join(f"s{i}" for i in range(64)), "ffffffffffffffff"),
    ],
)
def test_layout(col, value, raw):
    assert value_encoder(col)(value).hex() == raw and same(col, decode_hex(col, raw), value)


@pytest.mark.parametrize(
    "collation_id, length, text, raw",
    [
        (LATIN1, 10, "€é", "0280e9"),  # MySQL's latin1 is cp1252...
        (LATIN1, 10, "\x81\x8d\x8f\x90\x9d", "05818d8f909d"),  # ...with its five undefined bytes as C1 controls
        (CP1251, 10, "Жя", "02c6ff"),
        (UTF8MB4, 40, "😀é", "06f09f9880c3a9"),
        (UTF8MB4, 1020, "😀é", "0600f09f9880c3a9"),  # a declared length of 256 bytes or more: 2-byte length
        (UCS2, 20, "é€", "0400e920ac"),
        (UTF16, 40, "😀", "04d83dde00"),
        (GBK, 20, "中文", "04d6d0cec4"),
        (BINARY, 10, b"\x00\xff", "0200ff"),
        (None, 10, b"ab", "026162"),  # no charset metadata: bytes
    ],
)
def test_varchar_layout(collation_id, length, text, raw):
    col = column(ColumnType.VARCHAR, length=length, collation_id=collation_id)
    assert value_encoder(col)(text).hex() == raw and decode_hex(col, raw) == text


@pytest.mark.parametrize(
    "collation_id, length, value, raw, back",
    [
        (BINARY, 4, b"ab\0\0", "026162", b"ab\0\0"),  # Field_string::pack drops the zero bytes BINARY pads with
        (BINARY, 4, b"ab", "026162", b"ab\0\0"),
        (BINARY, 4, b"\0\0\0\0", "00", b"\0\0\0\0"),
        (LATIN1, 10, "ab  ", "026162", "ab"),  # ...and the spaces CHAR pads with
        (UCS2, 20, "é ", "0200e9", "é"),
        (None, 4, b"ab\0 ", "04616200" "20", b"ab\0 "),  # no charset recorded: no pad character known
    ],
)
def test_char_drops_its_pad_characters(collation_id, length, value, raw, back):
    col = column(ColumnType.STRING, length=length, collation_id=collation_id)
    assert value_encoder(col)(value).hex() == raw and decode_hex(col, raw) == back


def test_enum_and_set_labels_are_text_in_the_column_charset():
    """A table map records ENUM/SET values in the column charset; they are read as UTF-8 first."""
    col = column(ColumnType.STRING, ColumnType.ENUM, length=1, enum_values=["\udcc6", "\udcff"], collation_id=CP1251)
    assert value_encoder(col)("я").hex() == "02" and decode_hex(col, "02") == "я"
    col = column(ColumnType.STRING, ColumnType.SET, length=1, set_values=["\udcc6", "\udcff"], collation_id=CP1251)
    assert value_encoder(col)("Ж,я").hex() == "03" and decode_hex(col, "03") == "Ж,я"


@pytest.mark.parametrize("value", ["é€", "", b"\xff\xfe", b"\xc3"])
def test_text_in_an_assumed_collation_round_trips(value):
    """A table map without charsets: text in the collation the reader assumes, bytes not valid in it."""
    for col in (
        column(ColumnType.VARCHAR, length=100),
        column(ColumnType.STRING, length=100),
        column(ColumnType.BLOB, pack_length=2),
    ):
        round_trip(col, value, assumed=UTF8MB4)


@pytest.mark.parametrize(
    "pack_length, raw", [(1, "03616263"), (2, "0300616263"), (3, "030000616263"), (4, "03000000616263")]
)
def test_blob_length_takes_pack_length_bytes(pack_length, raw):
    col = column(ColumnType.BLOB, pack_length=pack_length, collation_id=UTF8MB4)
    assert value_encoder(col)("abc").hex() == raw and decode_hex(col, raw) == "abc"


def test_text_too_long_for_its_column_or_charset_raises_naming_it():
    with pytest.raises(ValueError, match="column title"):
        value_encoder(column(ColumnType.VARCHAR, length=3, collation_id=UTF8MB4, name="title"))("abcd")
    with pytest.raises(ValueError, match="column title"):
        value_encoder(column(ColumnType.BLOB, pack_length=1, collation_id=BINARY, name="title"))(bytes(256))
    with pytest.raises(charsets.CharsetError, match="title"):
        value_encoder(column(ColumnType.VARCHAR, length=30, collation_id=LATIN1, name="title"))("中")
    with pytest.raises(ValueError, match="column tag"):
        value_encoder(column(ColumnType.STRING, ColumnType.SET, length=1, set_values=["a"], name="tag"))("a,b")
    with pytest.raises(ValueError, match="column tag"):
        value_encoder(column(ColumnType.STRING, ColumnType.ENUM, length=1, enum_values=["a"], name="tag"))("b")


# ---------------------------------------------------------------------------
# Row images (WL#5092)

ROW_KINDS = sorted(KINDS)


@st.composite
def row_images(draw):
    """A table of random columns, the present ones (a random subset), their values with NULLs."""
    columns, values = [], []
    for index in range(draw(st.integers(1, 20))):
        col, value = draw(KINDS[draw(st.sampled_from(ROW_KINDS))])
        columns.append(dataclasses.replace(col, index=index, name=draw(st.sampled_from([f"c{index}", None]))))
        values.append(value)
    present = [index for index in range(len(columns)) if draw(st.booleans())]
    nulls = {index for index in present if draw(st.integers(0, 3)) == 0}
    by_name = {columns[i].display_name: None if i in nulls else values[i] for i in present}
    return TableMap(1, "db", "t", columns), present, by_name


@PROPERTIES
@given(row_images())
def test_row_image_round_trips_with_nulls_and_absent_columns(case):
    table, present, values = case
    plan = DecodingPlan(table)
    image = encode_row_image(plan, values, present)
    got, end = plan.image(image + b"\x00", 0, plan.columns_of(present))
    assert end == len(image)
    assert set(got) == {table.columns[i].display_name for i in present}  # absent columns are absent, not NULL
    for index in present:
        name = table.columns[index].display_name
        assert (got[name] is None) == (values[name] is None)
        assert got[name] is None or same(table.columns[index], got[name], values[name])
    null_bitmap = int.from_bytes(image[: (len(present) + 7) // 8], "little")  # bit i: the i-th present column
    names = [table.columns[index].display_name for index in present]
    assert null_bitmap == sum(1 << i for i, name in enumerate(names) if values[name] is None)


@PROPERTIES
@given(row_images())
def test_every_truncation_of_an_image_is_short_body(case):
    table, present, values = case
    plan = DecodingPlan(table)
    image = encode_row_image(plan, values, present)
    for cut in range(len(image)):
        with pytest.raises(ShortBody):
            plan.image(image[:cut], 0, plan.columns_of(present))


def test_row_image_layout():
    columns = [
        column(ColumnType.LONG, name="id"),
        column(ColumnType.VARCHAR, length=10, collation_id=UTF8MB4, name="name"),
        column(ColumnType.LONG, name="n"),
        column(ColumnType.JSON, pack_length=4, name="doc"),
    ]
    columns = [dataclasses.replace(col, index=index) for index, col in enumerate(columns)]
    table = TableMap(1, "db", "t", columns)
    values = {"id": 1, "n": None, "doc": b"\x00\x01"}
    image = encode_row_image(columns, values, [0, 2, 3], partial={3})
    assert image.hex() == "02" + "01000000" + "02000000" "0001"  # n NULL: bit 1 of the present columns
    assert DecodingPlan(table).image(image, 0, DecodingPlan(table).columns_of([0, 2, 3]), partial={3}) == (values, len(image))
    # MySQL 5.x and MariaDB set the bits after the last present column (MySQL 5.5, fixture bug32407)
    assert encode_row_image(table, {"id": 1}, [0], unused_null_bits=1).hex() == "fe" "01000000"
    assert encode_row_image(table, {"n": None}, [2], unused_null_bits=1).hex() == "ff"
    with pytest.raises(ValueError, match="absent is not NULL"):
        encode_row_image(table, {"id": 1}, [0, 2])
    with pytest.raises(ValueError, match="absent is not NULL"):
        encode_row_image(table, {"id": 1, "name": None}, [0])


def present(bitmap: bytes, count: int) -> list[int]:
    return [index for index in range(count) if bitmap[index // 8] >> (index % 8) & 1]


def server_images(name: str, per_table: int = 150):
    """(plan, flavour, unused null bits, image bytes, present columns, partial JSON columns) of the
    row images of a fixture file, the first ``per_table`` rows of each table."""
    flavour, plans, taken, ones = "mysql", {}, {}, 0
    for event in read(path(name)):
        if isinstance(event, FormatDescriptionEvent):
            flavour = "mariadb" if "mariadb" in event.server_version.lower() else "mysql"
            ones = int(flavour == "mariadb" or int(event.server_version.split(".")[0]) < 8)
        elif isinstance(event, TableMapEvent):
            plans[event.table_id] = DecodingPlan(table_map(event), flavour)
        elif isinstance(event, RowsEvent) and taken.get(event.table_id, 0) < per_table:
            plan, data, offset = plans[event.table_id], event.rows, 0
            before = present(event.columns_before, event.column_count)
            after = before if event.columns_after is None else present(event.columns_after, event.column_count)
            while offset < len(data):
                images, partial = ([before, after] if event.kind == "update" else [before]), set()
                for number, columns in enumerate(images):
                    if number and event.type_code == EventType.PARTIAL_UPDATE_ROWS:
                        partial, offset = plan.shared_image(data, offset)
                    start = offset
                    _, offset = plan.image(data, offset, plan.columns_of(columns), partial)
                    yield plan, flavour, ones, data[start:offset], columns, partial
                taken[event.table_id] = taken.get(event.table_id, 0) + 1


@pytest.mark.parametrize("name", good_files())
def test_row_images_servers_wrote_encode_back_byte_for_byte(name):
    """MySQL 5.1-9.6 and MariaDB images: every value decoded and encoded again gives the server's bytes."""
    for plan, flavour, ones, image, columns, partial in server_images(name):
        values, _ = plan.image(image, 0, plan.columns_of(columns), partial)
        encoded = encode_row_image(plan, values, columns, flavour=flavour, partial=partial, unused_null_bits=ones)
        assert encoded == image, values


# ---------------------------------------------------------------------------
# Hostile bytes


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(max_examples=50, deadline=None)
@given(data=st.data(), raw=st.binary(max_size=24))
def test_random_bytes_decode_or_raise_short_body(kind, data, raw):
    col, _ = data.draw(KINDS[kind])
    try:
        _, end = value_decoder(col)(raw, 0)
    except ShortBody:
        return
    assert end <= len(raw)


@pytest.mark.parametrize(
    "collation_id, raw, charset",
    [
        (UTF8MB4, "ff", "utf8mb4"),
        (UTF8MB4, "c3", "utf8mb4"),  # truncated sequence
        (UTF8MB4, "eda080", "utf8mb4"),  # a surrogate
        (UTF8MB4, "c0af", "utf8mb4"),  # overlong
        (UCS2, "00", "ucs2"),  # half a character
        (UCS2, "d83dde00", "ucs2"),  # ucs2 has no characters beyond U+FFFF
        (UTF16, "d83d", "utf16"),  # a lone high surrogate
        (GBK, "81", "gbk"),  # a lead byte alone
        (CP1251, "98", "cp1251"),  # the byte cp1251 leaves undefined
    ],
)
def test_bytes_invalid_in_the_charset_raise_short_body_naming_the_column(collation_id, raw, charset):
    data = bytes.fromhex(raw)
    for col in (
        column(ColumnType.VARCHAR, length=40, collation_id=collation_id, name="title"),
        column(ColumnType.BLOB, pack_length=2, collation_id=collation_id, name="title"),
    ):
        width = 1 if col.type_code == ColumnType.VARCHAR else 2
        with pytest.raises(ShortBody, match=f"column 'title'.*{charset}"):
            value_decoder(col)(len(data).to_bytes(width, "little") + data, 0)


def test_latin1_has_no_invalid_byte():
    col = column(ColumnType.BLOB, pack_length=2, collation_id=LATIN1)
    assert len(decode_hex(col, "0001" + bytes(range(256)).hex())) == 256


@pytest.mark.parametrize(
    "col, raw, message",
    [
        (column(ColumnType.STRING, ColumnType.ENUM, length=1, enum_values=["a", "b"], name="v"), "03", "ENUM index 3"),
        (column(ColumnType.JSON, pack_length=4, name="v"), "02000000" "0c05", "binary JSON at byte 1"),
        (column(ColumnType.VECTOR, pack_length=4, name="v"), "05000000" "0000803f00", "VECTOR of 5 bytes"),
    ],
)
def test_values_no_server_writes_are_short_body_naming_the_column(col, raw, message):
    with pytest.raises(ShortBody, match=f"column v: {message}"):
        value_decoder(col)(bytes.fromhex(raw), 0)


@settings(max_examples=200, deadline=None)
@given(precision=st.integers(0, 255), scale=st.integers(0, 255), raw=st.binary(max_size=40))
@example(precision=0, scale=9, raw=b"\x80")
def test_decimal_metadata_no_server_writes_is_short_body(precision, scale, raw):
    col = column(ColumnType.NEWDECIMAL, precision=precision, scale=scale)
    try:
        value_decoder(col)(raw, 0)
    except ShortBody:
        pass


@settings(max_examples=200, deadline=None)
@given(
    type_code=st.sampled_from([ColumnType.TIME2, ColumnType.DATETIME2, ColumnType.TIMESTAMP2]),
    fsp=st.integers(0, 255),
    raw=st.binary(min_size=10, max_size=140),
)
@example(type_code=ColumnType.DATETIME2, fsp=7, raw=bytes.fromhex("99a13d2089") + bytes(5))
def test_fsp_metadata_no_server_writes_is_short_body(type_code, fsp, raw):
    try:
        value_decoder(column(type_code, fsp=fsp))(raw, 0)
    except ShortBody:
        pass
