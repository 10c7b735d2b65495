"""The Arrow side of the warehouse (:mod:`binlog_codec.arrow`) against docs/ARCHITECTURE.md, "Type mapping".

* Types: every column type a row image holds, signed, unsigned and of unknown
  signedness, with and without charsets and ENUM/SET labels; the others have none.
* Values: the extremes of each type exactly; zero and partly-zero dates are
  unrepresentable and keep their MySQL text; random values of every type,
  encoded and decoded as a row image holds them, come back from Arrow as the
  Python value worked out here without the module.
* Batches: a table of every type (values encoded and decoded as a row image
  holds them: latin1 and cp1251 text, zero dates, MINIMAL images, a partial
  JSON update), every good fixture's rows per table version, and both through
  Parquet and back; rows events inside one compressed transaction told apart
  by their offset in it.
* Table versions: the schema id is stable, ignores the table id and changes
  with anything the table map says about the table; the table schema row of
  every fixture's table versions fits the ``table_schemas`` layout.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import struct
from datetime import date, datetime, timezone
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlog_codec import charsets, json_binary
from binlog_codec.arrow import (
    TABLE_SCHEMA,
    Commit,
    ImageBatchBuilder,
    UnrepresentableValue,
    arrow_type,
    binlog_seq,
    image_schema,
    schema_id,
    table_schema_row,
    to_arrow,
)
from binlog_codec.events import FormatDescriptionEvent, RowsEvent, TableMapEvent, read
from binlog_codec.rows import RowChange, RowRecord, read_rows
from binlog_codec.table_map import Column, ColumnType, TableMap, table_map
from binlog_codec.value_encoder import value_encoder
from binlog_codec.values import value_decoder
from fixture_facts import good_files, path
from typed_values import typed

PROPERTIES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

LATIN1, CP1251, UTF8MB4, BINARY = 8, 51, 255, 63
UNSIGNED_BIGINT = pa.decimal128(20, 0)
UTC = pa.timestamp("us", tz="UTC")


def column(type_code: int, real_type: int | None = None, *, name: str = "c", index: int = 0, **metadata) -> Column:
    return Column(index, type_code, type_code if real_type is None else real_type, True, name=name, **metadata)


def enum(labels=None, length=1) -> Column:
    return column(ColumnType.STRING, ColumnType.ENUM, length=length, enum_values=labels, collation_id=UTF8MB4)


def set_(labels=None, length=1) -> Column:
    return column(ColumnType.STRING, ColumnType.SET, length=length, set_values=labels, collation_id=UTF8MB4)


def stored(value, col: Column):
    """``value`` converted for ``col``, stored in an Arrow array and read back."""
    return pa.array([to_arrow(value, col)], type=arrow_type(col))[0].as_py()


# ---------------------------------------------------------------------------
# Types

TYPE_CASES = {
    "TINYINT": (column(ColumnType.TINY, unsigned=False), pa.int8()),
    "TINYINT UNSIGNED": (column(ColumnType.TINY, unsigned=True), pa.int16()),
    "TINYINT signedness unknown": (column(ColumnType.TINY), pa.int16()),
    "SMALLINT": (column(ColumnType.SHORT, unsigned=False), pa.int16()),
    "SMALLINT UNSIGNED": (column(ColumnType.SHORT, unsigned=True), pa.int32()),
    "SMALLINT signedness unknown": (column(ColumnType.SHORT), pa.int32()),
    "MEDIUMINT": (column(ColumnType.INT24, unsigned=False), pa.int32()),
    "MEDIUMINT UNSIGNED": (column(ColumnType.INT24, unsigned=True), pa.int32()),
    "MEDIUMINT signedness unknown": (column(ColumnType.INT24), pa.int32()),
    "INT": (column(ColumnType.LONG, unsigned=False), pa.int32()),
    "INT UNSIGNED": (column(ColumnType.LONG, unsigned=True), pa.int64()),
    "INT signedness unknown": (column(ColumnType.LONG), pa.int64()),
    "BIGINT": (column(ColumnType.LONGLONG, unsigned=False), pa.int64()),
    "BIGINT UNSIGNED": (column(ColumnType.LONGLONG, unsigned=True), UNSIGNED_BIGINT),
    "BIGINT signedness unknown": (column(ColumnType.LONGLONG), UNSIGNED_BIGINT),
    "DECIMAL(10,2)": (column(ColumnType.NEWDECIMAL, precision=10, scale=2), pa.decimal128(10, 2)),
    "DECIMAL(38,30)": (column(ColumnType.NEWDECIMAL, precision=38, scale=30), pa.decimal128(38, 30)),
    "DECIMAL(39,0)": (column(ColumnType.NEWDECIMAL, precision=39, scale=0), pa.string()),
    "DECIMAL(65,30)": (column(ColumnType.NEWDECIMAL, precision=65, scale=30), pa.string()),
    "FLOAT": (column(ColumnType.FLOAT, pack_length=4), pa.float32()),
    "DOUBLE": (column(ColumnType.DOUBLE, pack_length=8), pa.float64()),
    "BIT(1)": (column(ColumnType.BIT, length=1), pa.int64()),
    "BIT(63)": (column(ColumnType.BIT, length=63), pa.int64()),
    "BIT(64)": (column(ColumnType.BIT, length=64), UNSIGNED_BIGINT),
    "YEAR": (column(ColumnType.YEAR, unsigned=True), pa.int16()),
    "DATE": (column(ColumnType.DATE), pa.date32()),
    "DATE (NEWDATE)": (column(ColumnType.NEWDATE), pa.date32()),
    "DATETIME (pre-5.6)": (column(ColumnType.DATETIME), pa.timestamp("us")),
    "DATETIME(6)": (column(ColumnType.DATETIME2, fsp=6), pa.timestamp("us")),
    "TIMESTAMP (pre-5.6)": (column(ColumnType.TIMESTAMP), UTC),
    "TIMESTAMP(6)": (column(ColumnType.TIMESTAMP2, fsp=6), UTC),
    "TIME (pre-5.6)": (column(ColumnType.TIME), pa.string()),
    "TIME(3)": (column(ColumnType.TIME2, fsp=3), pa.string()),
    "VARCHAR latin1": (column(ColumnType.VARCHAR, length=40, collation_id=LATIN1), pa.string()),
    "VARCHAR utf8mb4": (column(ColumnType.VARCHAR, length=40, collation_id=UTF8MB4), pa.string()),
    "VARBINARY": (column(ColumnType.VARCHAR, length=40, collation_id=BINARY), pa.binary()),
    "VARCHAR charset unknown": (column(ColumnType.VARCHAR, length=40), pa.binary()),
    "VAR_STRING cp1251": (column(ColumnType.VAR_STRING, length=40, collation_id=CP1251), pa.string()),
    "CHAR cp1251": (column(ColumnType.STRING, length=20, collation_id=CP1251), pa.string()),
    "BINARY(16)": (column(ColumnType.STRING, length=16, collation_id=BINARY), pa.binary()),
    "CHAR charset unknown": (column(ColumnType.STRING, length=16), pa.binary()),
    "TEXT utf8mb4": (column(ColumnType.BLOB, pack_length=2, collation_id=UTF8MB4), pa.string()),
    "BLOB": (column(ColumnType.BLOB, pack_length=2, collation_id=BINARY), pa.binary()),
    "TEXT charset unknown": (column(ColumnType.BLOB, pack_length=2), pa.binary()),
    "ENUM": (enum(["a", "b"]), pa.string()),
    "ENUM labels unknown": (enum(), pa.int64()),
    "ENUM labels unknown, 2 bytes": (enum(length=2), pa.int64()),
    "SET": (set_(["a", "b"]), pa.string()),
    "SET labels unknown": (set_(length=4), pa.int64()),
    "SET labels unknown, 8 bytes": (set_(length=8), UNSIGNED_BIGINT),
    "GEOMETRY": (column(ColumnType.GEOMETRY, pack_length=4, collation_id=BINARY), pa.binary()),
    "JSON": (column(ColumnType.JSON, pack_length=4), pa.string()),
    "VECTOR": (column(ColumnType.VECTOR, pack_length=4, vector_dimension=3), pa.list_(pa.float32())),
}


@pytest.mark.parametrize("name", sorted(TYPE_CASES))
def test_type_mapping(name):
    col, expected = TYPE_CASES[name]
    assert arrow_type(col) == expected
    assert arrow_type(col, "mariadb") == expected


def _decodable(code: int) -> bool:
    try:
        value_decoder(column(code, precision=10, scale=2, length=8, pack_length=2))
    except ValueError:
        return False
    return True


def test_every_type_a_row_image_holds_is_mapped_and_no_other():
    decodable = {code for code in ColumnType if _decodable(code)}
    assert {col.type_code for col, _ in TYPE_CASES.values()} == decodable
    for code in set(ColumnType) - decodable:  # old DECIMAL, NULL, TYPED_ARRAY, BOOL, INVALID, *_BLOB, ENUM, SET
        with pytest.raises(ValueError, match="has no Arrow type"):
            arrow_type(column(code, precision=10, scale=2, length=8, pack_length=2))


def test_a_collation_the_flavour_does_not_define_has_no_type():
    with pytest.raises(charsets.UnknownCollationError):
        arrow_type(column(ColumnType.VARCHAR, length=40, collation_id=2047))


def test_decimal_metadata_no_server_writes_has_no_type():
    with pytest.raises(ValueError, match="DECIMAL"):
        arrow_type(column(ColumnType.NEWDECIMAL))


# ---------------------------------------------------------------------------
# Values


@pytest.mark.parametrize(
    "col, value, expected",
    [
        (TYPE_CASES["BIGINT UNSIGNED"][0], 18446744073709551615, Decimal("18446744073709551615")),
        (TYPE_CASES["BIGINT signedness unknown"][0], -(2**63), Decimal(-(2**63))),
        (TYPE_CASES["BIGINT"][0], 2**63 - 1, 2**63 - 1),
        (TYPE_CASES["BIT(64)"][0], 2**64 - 1, Decimal(2**64 - 1)),
        (TYPE_CASES["SET labels unknown, 8 bytes"][0], 2**64 - 1, Decimal(2**64 - 1)),
        (TYPE_CASES["TINYINT UNSIGNED"][0], 255, 255),
        (TYPE_CASES["INT UNSIGNED"][0], 4294967295, 4294967295),
        (TYPE_CASES["DECIMAL(38,30)"][0], Decimal("-99999999.999999999999999999999999999999"),
         Decimal("-99999999.999999999999999999999999999999")),
        (TYPE_CASES["DECIMAL(10,2)"][0], Decimal("0.00"), Decimal("0.00")),
        (TYPE_CASES["DECIMAL(65,30)"][0], Decimal("99999999999999999999999999999999999.999999999999999999999999999999"),
         "99999999999999999999999999999999999.999999999999999999999999999999"),
        (TYPE_CASES["DECIMAL(65,30)"][0], Decimal("-0.000000000000000000000000000001"),
         "-0.000000000000000000000000000001"),
        (TYPE_CASES["DECIMAL(39,0)"][0], Decimal("0"), "0"),
        (TYPE_CASES["FLOAT"][0], 3.4028235e38, struct.unpack("<f", bytes.fromhex("ffff7f7f"))[0]),
        (TYPE_CASES["FLOAT"][0], 0.1, struct.unpack("<f", struct.pack("<f", 0.1))[0]),
        (TYPE_CASES["DOUBLE"][0], -1.7976931348623157e308, -1.7976931348623157e308),
        (TYPE_CASES["YEAR"][0], 0, 0),
        (TYPE_CASES["YEAR"][0], 2155, 2155),
        (TYPE_CASES["DATE"][0], "9999-12-31", date(9999, 12, 31)),
        (TYPE_CASES["DATE"][0], "0001-01-01", date(1, 1, 1)),
        (TYPE_CASES["DATETIME(6)"][0], "9999-12-31 23:59:59.999999", datetime(9999, 12, 31, 23, 59, 59, 999999)),
        (TYPE_CASES["DATETIME(6)"][0], "1000-01-01 00:00:00.000001", datetime(1000, 1, 1, 0, 0, 0, 1)),
        (column(ColumnType.DATETIME2, fsp=1), "2020-02-29 12:30:45.5", datetime(2020, 2, 29, 12, 30, 45, 500000)),
        (TYPE_CASES["TIMESTAMP(6)"][0], "2038-01-19 03:14:07.999999",
         datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=timezone.utc)),
        (TYPE_CASES["TIMESTAMP (pre-5.6)"][0], "1970-01-01 00:00:01",
         datetime(1970, 1, 1, 0, 0, 1, tzinfo=timezone.utc)),
        (TYPE_CASES["TIME(3)"][0], "-838:59:59.000", "-838:59:59.000"),
        (TYPE_CASES["ENUM labels unknown"][0], 0, 0),
        (TYPE_CASES["JSON"][0], {"b": [1, 2.5, None], "a": "x"}, '{"a": "x", "b": [1, 2.5, null]}'),
        (TYPE_CASES["JSON"][0], None, None),
        (TYPE_CASES["VECTOR"][0], [0.1, -3.4028235e38],
         struct.unpack("<2f", struct.pack("<2f", 0.1, -3.4028235e38))),
    ],
    ids=repr,
)
def test_extremes_come_back_exactly(col, value, expected):
    expected = list(expected) if isinstance(expected, tuple) else expected
    assert typed(stored(value, col)) == typed(expected)


ZERO_DATES = [
    ("DATE", "0000-00-00"),
    ("DATE", "2020-00-15"),
    ("DATE", "2020-05-00"),
    ("DATE", "0000-01-01"),
    ("DATE", "2019-02-29"),
    ("DATETIME (pre-5.6)", "0000-00-00 00:00:00"),
    ("DATETIME(6)", "0000-00-00 00:00:00.000000"),
    ("DATETIME(6)", "2020-00-15 10:00:00.500000"),
    ("TIMESTAMP(6)", "0000-00-00 00:00:00.000000"),
    ("TIMESTAMP (pre-5.6)", "0000-00-00 00:00:00"),
]


@pytest.mark.parametrize("kind, text", ZERO_DATES)
def test_zero_and_partly_zero_dates_are_unrepresentable(kind, text):
    with pytest.raises(UnrepresentableValue) as raised:
        to_arrow(text, TYPE_CASES[kind][0])
    assert raised.value.text == text


def test_text_for_a_binary_column_is_refused():
    """Rows read with ``assume_charset`` hold text in columns without a charset: their bytes are gone."""
    with pytest.raises(TypeError, match="column c: an Arrow binary column takes bytes, not str"):
        to_arrow("abc", TYPE_CASES["VARCHAR charset unknown"][0])


@pytest.mark.parametrize(
    "file, sequence",
    [("/staging/run-7/mysql-bin.000042", 42), ("bug32407.001", 1), ("mariadb-bin.999999", 999999),
     ("json-opaque.binlog", None), ("mysql-bin.aurora-padding", None)],
)
def test_binlog_seq_is_the_numeric_suffix(file, sequence):
    assert binlog_seq(file) == sequence


# -- property: random values of every type --------------------------------------

UNREPRESENTABLE = object()
INTEGER_SIZES = {
    ColumnType.TINY: 1, ColumnType.SHORT: 2, ColumnType.INT24: 3, ColumnType.LONG: 4, ColumnType.LONGLONG: 8,
}


@functools.cache
def edges(low: int, high: int) -> st.SearchStrategy[int]:
    """Any integer of [low, high], the bounds often."""
    return st.one_of(st.sampled_from([low, high]), st.integers(low, high))


@functools.cache
def zero_or(low: int, high: int) -> st.SearchStrategy[int]:
    return st.one_of(st.just(0), edges(low, high))


@st.composite
def integers(draw):
    code, size = draw(st.sampled_from(sorted(INTEGER_SIZES.items())))
    unsigned = draw(st.sampled_from([False, True, None]))
    bits = 8 * size
    value = draw(edges(0, 2**bits - 1) if unsigned else edges(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1))
    wide = code == ColumnType.LONGLONG and unsigned is not False
    return column(code, unsigned=unsigned), value, Decimal(value) if wide else value


def plain(digits: int, scale: int) -> str:
    """The text of ``digits`` * 10**-scale, every fraction digit written."""
    text = str(abs(digits)).rjust(scale + 1, "0")
    return ("-" if digits < 0 else "") + (text[:-scale] + "." + text[-scale:] if scale else text)


@st.composite
def decimals(draw):
    precision = draw(st.integers(1, 65))
    scale = draw(st.integers(0, min(precision, 30)))
    digits = draw(edges(-(10**precision) + 1, 10**precision - 1))
    value = Decimal(f"{digits}E-{scale}")
    return column(ColumnType.NEWDECIMAL, precision=precision, scale=scale), value, (
        value if precision <= 38 else plain(digits, scale)
    )


@st.composite
def floats(draw):
    value = draw(st.floats(width=32, allow_nan=False, allow_infinity=False))
    return column(ColumnType.FLOAT, pack_length=4), value, value


@st.composite
def doubles(draw):
    value = draw(st.floats(allow_nan=False, allow_infinity=False))
    return column(ColumnType.DOUBLE, pack_length=8), value, value


@st.composite
def bits(draw):
    width = draw(st.integers(1, 64))
    value = draw(edges(0, 2**width - 1))
    return column(ColumnType.BIT, length=width), value, value if width < 64 else Decimal(value)


@st.composite
def years(draw):
    value = draw(st.one_of(st.just(0), edges(1901, 2155)))
    return column(ColumnType.YEAR, unsigned=True), value, value


def when(make, *fields):
    """``make(*fields)``, or UNREPRESENTABLE where Python has no such date or time."""
    try:
        return make(*fields)
    except ValueError:
        return UNREPRESENTABLE


@st.composite
def calendar_days(draw) -> tuple[int, int, int]:
    """Any year, month and day MySQL stores, zero parts and days beyond the month's included."""
    return draw(zero_or(1, 9999)), draw(zero_or(1, 12)), draw(zero_or(1, 31))


@st.composite
def dates(draw):
    year, month, day = draw(calendar_days())
    code = draw(st.sampled_from([ColumnType.DATE, ColumnType.NEWDATE]))
    return column(code), f"{year:04d}-{month:02d}-{day:02d}", when(date, year, month, day)


@st.composite
def fractions(draw, fsp: int) -> tuple[str, int]:
    """The fraction text of ``fsp`` digits and its microseconds."""
    digits = draw(edges(0, 10**fsp - 1))
    return (f".{digits:0{fsp}d}", digits * 10 ** (6 - fsp)) if fsp else ("", 0)


def temporal_columns(fractional: int, old: int, fsp: int) -> st.SearchStrategy[Column]:
    """The 5.6.4 type at ``fsp`` digits, and at 0 digits the older type too."""
    return st.sampled_from([column(fractional, fsp=fsp)] + ([] if fsp else [column(old)]))


@st.composite
def datetimes(draw):
    fsp = draw(st.integers(0, 6))
    col = draw(temporal_columns(ColumnType.DATETIME2, ColumnType.DATETIME, fsp))
    year, month, day = draw(calendar_days())
    hour, minute, second = draw(zero_or(1, 23)), draw(zero_or(1, 59)), draw(zero_or(1, 59))
    fraction, micro = draw(fractions(fsp))
    text = f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}{fraction}"
    return col, text, when(datetime, year, month, day, hour, minute, second, micro)


@st.composite
def timestamps(draw):
    """MySQL's TIMESTAMP range, '1970-01-01 00:00:01' to '2038-01-19 03:14:07' UTC, and the zero timestamp."""
    fsp = draw(st.integers(0, 6))
    col = draw(temporal_columns(ColumnType.TIMESTAMP2, ColumnType.TIMESTAMP, fsp))
    fraction, micro = draw(fractions(fsp))
    if draw(st.integers(0, 9)) == 0:
        return col, "0000-00-00 00:00:00" + (f".{0:0{fsp}d}" if fsp else ""), UNREPRESENTABLE
    moment = datetime.fromtimestamp(draw(edges(1, 2**31 - 1)), timezone.utc).replace(microsecond=micro)
    return col, moment.strftime("%Y-%m-%d %H:%M:%S") + fraction, moment


@st.composite
def times(draw):
    fsp = draw(st.integers(0, 6))
    hours, minutes, seconds = draw(zero_or(1, 838)), draw(zero_or(1, 59)), draw(zero_or(1, 59))
    fraction, micro = draw(fractions(fsp))
    negative = draw(st.booleans()) and bool(hours or minutes or seconds or micro)
    text = f"{'-' if negative else ''}{hours:02d}:{minutes:02d}:{seconds:02d}{fraction}"
    return draw(temporal_columns(ColumnType.TIME2, ColumnType.TIME, fsp)), text, text


@functools.cache
def single_byte_alphabet(collation_id: int) -> list[str]:
    found = []
    for byte in range(256):
        try:
            found.append(charsets.decode(bytes([byte]), collation_id))
        except charsets.CharsetError:
            continue
    return found


def texts_of(collation_id: int | None) -> st.SearchStrategy:
    if collation_id in (None, BINARY):
        return st.binary(max_size=40)
    if collation_id == UTF8MB4:
        return st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
    return st.lists(st.sampled_from(single_byte_alphabet(collation_id)), max_size=40).map("".join)


@st.composite
def characters(draw):
    """VARCHAR, CHAR (BINARY) and TEXT (BLOB) in latin1, cp1251, utf8mb4, binary, and without a charset."""
    collation_id = draw(st.sampled_from([LATIN1, CP1251, UTF8MB4, BINARY, None]))
    code = draw(st.sampled_from([ColumnType.VARCHAR, ColumnType.STRING, ColumnType.BLOB]))
    value = draw(texts_of(collation_id))
    if code == ColumnType.STRING:  # the server strips CHAR's trailing pad; BINARY(n) reads back n bytes
        value = value.rstrip(b"\0" if isinstance(value, bytes) else " ")
        col = column(code, length=160, collation_id=collation_id)
        return col, value, value.ljust(160, b"\0") if collation_id == BINARY else value
    col = column(code, length=160, pack_length=2, collation_id=collation_id)
    return col, value, value


labels = st.lists(
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters=","), min_size=1, max_size=5),
    min_size=1, max_size=10, unique=True,
)


@st.composite
def enums(draw):
    names = draw(st.one_of(st.none(), labels))
    if names is None:
        length = draw(st.sampled_from([1, 2]))
        value = draw(edges(0, 2 ** (8 * length) - 1))
        return enum(length=length), value, value
    value = draw(st.sampled_from(["", *names]))
    return enum(names), value, value


@st.composite
def sets(draw):
    names = draw(st.one_of(st.none(), labels))
    if names is None:
        length = draw(st.sampled_from([1, 2, 3, 4, 8]))
        value = draw(edges(0, 2 ** (8 * length) - 1))
        return set_(length=length), value, value if length < 8 else Decimal(value)
    chosen = draw(st.sets(st.sampled_from(names)))
    value = ",".join(name for name in names if name in chosen)
    return set_(names, length=(len(names) + 7) // 8), value, value


json_documents = st.recursive(
    st.one_of(
        st.none(), st.booleans(), edges(-(2**63), 2**64 - 1),
        st.floats(allow_nan=False, allow_infinity=False), st.text(st.characters(exclude_categories=("Cs",))),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.text(st.characters(exclude_categories=("Cs",)), max_size=6), children, max_size=5),
    ),
    max_leaves=20,
).filter(lambda document: document is not None)  # the null document decodes as None, which is SQL NULL


@st.composite
def jsons(draw):
    document = draw(json_documents)
    return column(ColumnType.JSON, pack_length=4), document, json_binary.to_text(document)


@st.composite
def vectors(draw):
    values = draw(st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), max_size=16))
    return column(ColumnType.VECTOR, pack_length=4), values, values


@st.composite
def geometries(draw):
    value = draw(st.binary(max_size=60))
    return column(ColumnType.GEOMETRY, pack_length=4, collation_id=BINARY), value, value


KINDS = {
    "integer": integers(),
    "decimal": decimals(),
    "float": floats(),
    "double": doubles(),
    "bit": bits(),
    "year": years(),
    "date": dates(),
    "datetime": datetimes(),
    "timestamp": timestamps(),
    "time": times(),
    "character": characters(),
    "enum": enums(),
    "set": sets(),
    "json": jsons(),
    "vector": vectors(),
    "geometry": geometries(),
}


def as_decoded(col: Column, value):
    """``value`` as a row image holds it and the decoder reads it back."""
    return value_decoder(col)(value_encoder(col)(value), 0)[0]


@pytest.mark.parametrize("kind", sorted(KINDS))
@PROPERTIES
@given(data=st.data())
def test_values_come_back_from_arrow(kind, data):
    col, value, expected = data.draw(KINDS[kind])
    decoded = as_decoded(col, value)
    if expected is UNREPRESENTABLE:
        with pytest.raises(UnrepresentableValue) as raised:
            to_arrow(decoded, col)
        assert raised.value.text == decoded
    else:
        assert typed(stored(decoded, col)) == typed(expected)


@PROPERTIES
@given(json_documents)
def test_json_is_text_that_parses_back_to_the_document(document):
    text = stored(document, TYPE_CASES["JSON"][0])
    assert json.loads(text) == document


# ---------------------------------------------------------------------------
# Batches of a table of every type

TABLE = TableMap(
    7, "shop", "everything",
    [
        dataclasses.replace(col, index=index)
        for index, col in enumerate([
            column(ColumnType.LONGLONG, name="id", unsigned=True),
            column(ColumnType.TINY, name="tiny", unsigned=False),
            column(ColumnType.SHORT, name="small", unsigned=True),
            column(ColumnType.INT24, name="medium"),
            column(ColumnType.NEWDECIMAL, name="price", precision=10, scale=2, unsigned=False),
            column(ColumnType.NEWDECIMAL, name="huge", precision=65, scale=30, unsigned=False),
            column(ColumnType.FLOAT, name="ratio", pack_length=4, unsigned=False),
            column(ColumnType.BIT, name="flags", length=64),
            column(ColumnType.DATE, name="born"),
            column(ColumnType.DATETIME2, name="seen", fsp=6),
            column(ColumnType.TIMESTAMP2, name="changed", fsp=6),
            column(ColumnType.TIME2, name="took", fsp=3),
            column(ColumnType.VARCHAR, name="name", length=40, collation_id=LATIN1),
            column(ColumnType.STRING, name="title", length=20, collation_id=CP1251),
            column(ColumnType.VARCHAR, name="raw", length=8, collation_id=BINARY),
            dataclasses.replace(enum(["sad", "ok"]), name="mood"),
            column(ColumnType.JSON, name="doc", pack_length=4),
            column(ColumnType.VECTOR, name="embedding", pack_length=4),
        ])
    ],
    metadata_level="FULL",
)
NAMES = [col.name for col in TABLE.columns]
BY_NAME = {col.name: col for col in TABLE.columns}
FULL_ROW = {
    "id": 18446744073709551615,
    "tiny": -128,
    "small": 65535,
    "medium": -8388608,
    "price": Decimal("-12345678.90"),
    "huge": Decimal("-99999999999999999999999999999999999.999999999999999999999999999999"),
    "ratio": 0.1,
    "flags": 2**64 - 1,
    "born": "1999-12-31",
    "seen": "2024-02-29 23:59:59.999999",
    "changed": "2038-01-19 03:14:07.999999",
    "took": "-838:59:59.000",
    "name": "Déjà vu ÿ",
    "title": "Привет",
    "raw": b"\x00\xff\x01",
    "mood": "ok",
    "doc": {"name": "Joe", "age": 25},
    "embedding": [0.5, -1.25],
}
ZERO_ROW = {
    **dict.fromkeys(NAMES),
    "id": 1,
    "born": "0000-00-00",
    "seen": "2020-00-15 10:00:00.000000",
    "changed": "0000-00-00 00:00:00.000000",
}
DIFF = b"\x00\x05$.age\x03\x05\x1a\x00"  # WL#2955: REPLACE $.age with 26 (fixture json.binlog.000001)
FILE = "/staging/run-7/mysql-bin.000042"


def image(values: dict, partial: tuple[str, ...] = ()) -> dict:
    """An image of ``values`` (absent columns left out) as the decoder reads it; ``partial`` JSON columns hold diffs."""
    return {
        name: value if value is None or name in partial else as_decoded(BY_NAME[name], value)
        for name, value in values.items()
    }


def record(kind: str, row_index: int, **images) -> RowRecord:
    change = RowChange(kind, row_index, **images)
    return RowRecord(FILE, 1234, row_index, kind, "shop", "everything", "3e11fa47-71ca-11e1-9e33-c80aa9429562:23",
                     1_700_000_000, change)


def everything_records() -> list[RowRecord]:
    return [
        record("insert", 0, after=image(FULL_ROW)),
        record("insert", 1, after=image(ZERO_ROW)),
        record("update", 2, before=image({"id": 1, "born": "2020-05-00"}),
               after=image({"id": 1, "doc": DIFF, "name": "Ä"}, partial=("doc",)), partial=["doc"]),
        record("delete", 3, before=image({"id": 18446744073709551615})),
    ]


@pytest.fixture(scope="module")
def everything() -> pa.RecordBatch:
    builder = ImageBatchBuilder(TABLE)
    for each in everything_records():
        builder.append(each)
    assert len(builder) == 4
    return builder.build()


def test_batch_has_the_contract_columns(everything):
    assert everything.schema == image_schema(TABLE)
    assert everything.schema.names == NAMES + [
        "_op", "_binlog_file", "_binlog_seq", "_binlog_pos", "_binlog_inner_offset", "_row_index", "_gtid",
        "_server_id", "_xid", "_commit_ts", "_schema_id", "_before", "_present_columns", "_partial_columns",
        "_partial_diffs", "_unrepresentable",
    ]
    assert everything.schema.field("_before").type == pa.struct([everything.schema.field(name) for name in NAMES])
    rows = everything.to_pylist()
    assert [row["_op"] for row in rows] == ["c", "c", "u", "d"]
    assert {row["_binlog_file"] for row in rows} == {"mysql-bin.000042"}
    assert {(row["_binlog_seq"], row["_binlog_pos"]) for row in rows} == {(42, 1234)}
    assert [row["_row_index"] for row in rows] == [0, 1, 2, 3]
    assert {row["_commit_ts"] for row in rows} == {datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc)}
    assert {row["_gtid"] for row in rows} == {"3e11fa47-71ca-11e1-9e33-c80aa9429562:23"}
    assert {row["_binlog_inner_offset"] for row in rows} == {None}
    assert {row["_schema_id"] for row in rows} == {schema_id(TABLE)}
    assert {(row["_server_id"], row["_xid"]) for row in rows} == {(None, None)}  # no commit given


def test_the_commit_gives_server_id_xid_and_commit_time():
    builder = ImageBatchBuilder(TABLE)
    first = next(iter(everything_records()))
    builder.append(first, Commit(1_700_000_123, 7, 2**64 - 1))
    (row,) = builder.build().to_pylist()
    assert (row["_server_id"], row["_xid"]) == (7, Decimal(2**64 - 1))
    assert row["_commit_ts"] == datetime.fromtimestamp(1_700_000_123, timezone.utc)


def test_full_row_values_are_exact(everything):
    row = everything.to_pylist()[0]
    assert {name: row[name] for name in NAMES} == {
        **FULL_ROW,
        "id": Decimal("18446744073709551615"),
        "huge": "-99999999999999999999999999999999999.999999999999999999999999999999",
        "ratio": struct.unpack("<f", struct.pack("<f", 0.1))[0],
        "flags": Decimal(2**64 - 1),
        "born": date(1999, 12, 31),
        "seen": datetime(2024, 2, 29, 23, 59, 59, 999999),
        "changed": datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=timezone.utc),
        "doc": '{"age": 25, "name": "Joe"}',
    }
    assert row["_present_columns"] == NAMES
    assert row["_before"] is None
    assert row["_partial_columns"] == [] and row["_partial_diffs"] == [] and row["_unrepresentable"] == []


def test_latin1_and_cp1251_text_is_read_in_its_charset():
    """The row image holds the single-byte latin1 and cp1251 bytes; the batch holds the text."""
    values = {"id": 5, "name": "Déjà vu ÿ", "title": "Привет"}
    assert value_encoder(BY_NAME["name"])(values["name"]) == b"\x09" + "Déjà vu ÿ".encode("latin1")
    assert value_encoder(BY_NAME["title"])(values["title"]) == b"\x06" + "Привет".encode("cp1251")
    builder = ImageBatchBuilder(TABLE)
    builder.append(record("insert", 0, after=image(values)))
    row = builder.build().to_pylist()[0]
    assert (row["name"], row["title"]) == ("Déjà vu ÿ", "Привет")


def test_zero_dates_are_null_with_their_text(everything):
    row = everything.to_pylist()[1]
    assert (row["born"], row["seen"], row["changed"]) == (None, None, None)
    assert dict(row["_unrepresentable"]) == {
        "born": "0000-00-00",
        "seen": "2020-00-15 10:00:00.000000",
        "changed": "0000-00-00 00:00:00.000000",
    }
    assert row["_present_columns"] == NAMES  # present, and NULL where the image says so
    assert row["name"] is None and row["id"] == Decimal(1)


def test_update_with_minimal_images_and_a_partial_json_column(everything):
    row = everything.to_pylist()[2]
    assert row["_present_columns"] == ["id", "doc", "name"]
    assert row["_partial_columns"] == ["doc"]
    assert row["_partial_diffs"] == [("doc", DIFF)]
    assert row["doc"] is None and row["name"] == "Ä"
    assert row["price"] is None  # absent: _present_columns tells it from NULL
    assert row["_before"] == {**dict.fromkeys(NAMES), "id": Decimal(1)}
    assert dict(row["_unrepresentable"]) == {"_before.born": "2020-05-00"}


def test_delete_has_an_empty_after_image(everything):
    row = everything.to_pylist()[3]
    assert row["_present_columns"] == [] and all(row[name] is None for name in NAMES)
    assert row["_before"] == {**dict.fromkeys(NAMES), "id": Decimal("18446744073709551615")}


def test_parquet_round_trip_keeps_types_and_values(everything, tmp_path):
    pq.write_table(pa.Table.from_batches([everything]), tmp_path / "everything.parquet")
    back = pq.read_table(tmp_path / "everything.parquet")
    assert back.schema == everything.schema
    assert back.to_pylist() == everything.to_pylist()


def test_a_record_of_another_table_is_refused():
    builder = ImageBatchBuilder(TABLE)
    stranger = record("insert", 0, after={"id": 1})
    stranger.table = "elsewhere"
    with pytest.raises(ValueError, match="shop.elsewhere"):
        builder.append(stranger)
    with pytest.raises(ValueError, match="column nope"):
        builder.append(record("insert", 0, after={"nope": 1}))


def test_a_column_named_like_a_change_column_is_refused():
    table = TableMap(1, "db", "t", [column(ColumnType.LONG, name="_op")])
    with pytest.raises(ValueError, match="_op"):
        image_schema(table)


def test_an_empty_batch_has_the_schema():
    batch = ImageBatchBuilder(TABLE).build()
    assert batch.num_rows == 0 and batch.schema == image_schema(TABLE)


def test_flush_returns_the_rows_since_the_last_flush():
    builder = ImageBatchBuilder(TABLE)
    records = everything_records()
    for each in records[:3]:
        builder.append(each)
    first = builder.flush()
    assert first.num_rows == 3 and len(builder) == 0
    builder.append(records[3])
    second = builder.flush()
    assert [row["_row_index"] for row in second.to_pylist()] == [3]
    assert builder.flush().num_rows == 0


def test_rows_events_inside_one_compressed_transaction_are_told_apart():
    """Two rows events in one TRANSACTION_PAYLOAD share its position: the offset inside it keeps rows apart."""
    builder = ImageBatchBuilder(TABLE)
    for offset in (116, 188):
        each = record("insert", 0, after=image({"id": offset}))
        each.inner_offset = offset
        builder.append(each)
    rows = builder.build().to_pylist()
    assert len({(row["_binlog_pos"], row["_row_index"]) for row in rows}) == 1
    assert [(row["_binlog_pos"], row["_binlog_inner_offset"], row["_row_index"]) for row in rows] == [
        (1234, 116, 0), (1234, 188, 0)
    ]


# ---------------------------------------------------------------------------
# Table versions


def test_schema_id_is_stable_and_ignores_the_table_id():
    assert schema_id(TABLE) == "c0624aef41071253"
    assert schema_id(dataclasses.replace(TABLE, table_id=99)) == schema_id(TABLE)
    copy = dataclasses.replace(TABLE, columns=[dataclasses.replace(c) for c in TABLE.columns])
    assert schema_id(copy) == schema_id(TABLE)


def _with_column(change: dict, index: int = 0) -> TableMap:
    columns = list(TABLE.columns)
    columns[index] = dataclasses.replace(columns[index], **change)
    return dataclasses.replace(TABLE, columns=columns)


@pytest.mark.parametrize(
    "variant",
    [
        _with_column({"name": "key"}),
        _with_column({"unsigned": False}),
        _with_column({"nullable": False}),
        _with_column({"collation_id": CP1251}, index=12),
        _with_column({"length": 80}, index=12),
        _with_column({"enum_values": ["sad", "ok", "great"]}, index=15),
        _with_column({"visible": False}),
        dataclasses.replace(TABLE, table="everything_else"),
        dataclasses.replace(TABLE, database="shop2"),
        dataclasses.replace(TABLE, metadata_level="MINIMAL"),
        dataclasses.replace(TABLE, primary_key=[(0, 0)]),
    ],
    ids=["name", "signedness", "nullability", "collation", "length", "enum values", "visibility", "table",
         "database", "metadata level", "primary key"],
)
def test_schema_id_changes_with_the_table_definition(variant):
    assert schema_id(variant) != schema_id(TABLE)


def test_schema_id_depends_on_the_flavour_that_gives_collations_their_meaning():
    assert schema_id(TABLE, "mariadb") != schema_id(TABLE, "mysql")


def test_table_schema_row_describes_every_column():
    keyed = dataclasses.replace(
        TABLE,
        primary_key=[(0, 0), (12, 4)],
        columns=[dataclasses.replace(c, primary_key_position={0: 0, 12: 1}.get(c.index),
                                     primary_key_prefix={0: 0, 12: 4}.get(c.index)) for c in TABLE.columns],
    )
    row = table_schema_row(keyed)
    table = pa.Table.from_pylist([row], schema=TABLE_SCHEMA)
    assert table.num_rows == 1 and row["schema_id"] == schema_id(keyed)
    columns = {column["name"]: column for column in row["columns"]}
    assert list(columns) == NAMES
    assert columns["id"]["sql_type"] == "BIGINT UNSIGNED" and columns["id"]["arrow_type"] == "decimal128(20, 0)"
    assert (columns["name"]["charset"], columns["name"]["collation"]) == ("latin1", "latin1_swedish_ci")
    assert columns["mood"]["enum_values"] == ["sad", "ok"] and columns["mood"]["set_values"] is None
    assert columns["name"]["primary_key_position"] == 1 and columns["name"]["primary_key_prefix"] == 4
    assert row["primary_key"] == [{"column": "id", "prefix": 0}, {"column": "name", "prefix": 4}]


# ---------------------------------------------------------------------------
# Batches of the shared fixtures


@functools.cache
def fixture_batches(name: str) -> tuple[list[RowRecord], list[tuple[TableMap, list[RowRecord], pa.RecordBatch]]]:
    """Every row of ``name`` (read_rows), and per table version its table map, its rows and their batch.

    Rows go with the table map of their rows event: the rows events that hold
    rows, in log order, each give read_rows' rows from a row_index 0 on.
    """
    flavour, tables, rows_events = None, {}, []
    for event in read(path(name)):
        if isinstance(event, FormatDescriptionEvent) and flavour is None:
            flavour = "mariadb" if "mariadb" in event.server_version.lower() else "mysql"
        elif isinstance(event, TableMapEvent):
            tables[event.table_id] = table_map(event)
        elif isinstance(event, RowsEvent) and event.rows:
            rows_events.append((event.pos, tables[event.table_id]))
    records = list(read_rows(path(name)))
    versions: dict[tuple, tuple[ImageBatchBuilder, list[RowRecord]]] = {}
    events = iter(rows_events)
    for each in records:
        if each.row_index == 0:
            position, table = next(events)
        assert each.pos == position
        key = (table.database, table.table, repr(table.columns))
        if key not in versions:
            versions[key] = (ImageBatchBuilder(table, flavour or "mysql"), [])
        versions[key][0].append(each)
        versions[key][1].append(each)
    assert next(events, None) is None
    return records, [(builder.table, rows, builder.build()) for builder, rows in versions.values()]


@functools.cache
def fixture_flavour(name: str) -> str:
    """The flavour :func:`fixture_batches` built the batches of ``name`` with: its first format description's."""
    for event in read(path(name)):
        if isinstance(event, FormatDescriptionEvent):
            return "mariadb" if "mariadb" in event.server_version.lower() else "mysql"
    return "mysql"


def plain_value(col: Column, arrow: pa.DataType, value):
    """What Arrow holds for a decoded integer, Decimal, text or bytes; None for the types the properties cover."""
    if col.type_code == ColumnType.JSON or not isinstance(value, (int, Decimal, str, bytes)):
        return None
    if pa.types.is_string(arrow):
        return format(value, "f") if isinstance(value, Decimal) else value
    if pa.types.is_integer(arrow) or pa.types.is_decimal(arrow) or pa.types.is_binary(arrow):
        return value
    return None


@pytest.mark.parametrize("name", good_files())
def test_fixture_rows_build_into_batches_per_table_version(name):
    records, batches = fixture_batches(name)
    assert sum(batch.num_rows for _, _, batch in batches) == len(records)
    keys = [
        (row["_binlog_seq"], row["_binlog_pos"], row["_binlog_inner_offset"], row["_row_index"])
        for *_, b in batches
        for row in b.to_pylist()
    ]
    assert len(set(keys)) == len(keys)
    for table, rows, batch in batches:
        columns = {col.display_name: (col, batch.schema.field(col.display_name).type) for col in table.columns}
        for each, row in zip(rows, batch.to_pylist(), strict=True):
            after = each.change.after or {}
            assert (row["_op"], row["_binlog_pos"], row["_binlog_inner_offset"], row["_row_index"], row["_gtid"]) == (
                {"insert": "c", "update": "u", "delete": "d"}[each.kind], each.pos, each.inner_offset,
                each.row_index, each.gtid,
            )
            assert row["_schema_id"] == schema_id(table, fixture_flavour(name))
            assert row["_present_columns"] == list(after) and row["_partial_columns"] == each.change.partial
            assert (row["_before"] is None) == (each.change.before is None)
            for column_name, value in after.items():
                expected = plain_value(*columns[column_name], value)
                if expected is not None and column_name not in each.change.partial:
                    assert row[column_name] == expected, column_name


@pytest.mark.parametrize("name", good_files())
def test_fixture_batches_round_trip_through_parquet(name, tmp_path):
    for number, (*_, batch) in enumerate(fixture_batches(name)[1]):
        target = tmp_path / f"{number}.parquet"
        pq.write_table(pa.Table.from_batches([batch]), target)
        back = pq.read_table(target)
        assert back.schema == batch.schema
        assert back.equals(pa.Table.from_batches([batch]))


@pytest.mark.parametrize("name", good_files())
def test_fixture_table_versions_have_a_table_schema_row(name):
    flavour = fixture_flavour(name)
    for table, _, batch in fixture_batches(name)[1]:
        row = table_schema_row(table, flavour)
        assert pa.Table.from_pylist([row], schema=TABLE_SCHEMA).num_rows == 1
        assert [column["name"] for column in row["columns"]] == [c.display_name for c in table.columns]
        assert [column["arrow_type"] for column in row["columns"]] == [
            str(batch.schema.field(c.display_name).type) for c in table.columns
        ]


def test_rows_inside_a_compressed_transaction_carry_their_offset_in_it():
    _, batches = fixture_batches("osheroff__mysql-binlog-connector-java/mysql-bin.compressed")
    offsets = [row["_binlog_inner_offset"] for *_, b in batches for row in b.to_pylist()]
    assert offsets and all(offset is not None and offset > 0 for offset in offsets)


def test_a_partial_json_update_of_a_fixture_keeps_its_diffs():
    records, batches = fixture_batches("blackbeam__rust_mysql_common/json.binlog.000001")
    diffs = [(row["_partial_columns"], row["_partial_diffs"]) for *_, b in batches for row in b.to_pylist()
             if row["_partial_columns"]]
    assert diffs and all(columns == ["@2"] and [c for c, _ in found] == ["@2"] for columns, found in diffs)
    assert {found[0][1] for _, found in diffs} == {r.change.after["@2"] for r in records if r.change.partial}


def test_the_null_json_document_is_text_and_sql_null_is_null():
    from binlog_codec.json_binary import JSON_NULL, serialize
    from binlog_codec.values import value_decoder

    column = Column(0, ColumnType.JSON, ColumnType.JSON, True, "doc", pack_length=4)
    raw = serialize(None)
    decoded, _ = value_decoder(column)(len(raw).to_bytes(4, "little") + raw, 0)
    assert decoded is JSON_NULL
    assert to_arrow(decoded, column) == "null" and to_arrow(None, column) is None
