"""One encoder per MySQL column type: a Python value to its bytes in a row image.

The exact inverse of :mod:`binlog_codec.values`: ``decode(encode(v)) == v``
for every value a decoder returns, and the bytes are the storage formats the
server copies into row events (``Field::pack`` of each type), byte for byte
what MySQL 5.1 to 9.x and MariaDB write for the same values:

* TINY/SHORT/INT24/LONG/LONGLONG: 1/2/3/4/8 bytes little-endian, two's
  complement unless the column is UNSIGNED;
* FLOAT/DOUBLE: IEEE 754 single/double, little-endian (``float4store``);
* NEWDECIMAL: ``decimal2bin`` of ``strings/decimal.cc``: the integral digits
  then the fraction digits in big-endian groups of 9 digits (4 bytes), a
  shorter group (``dig2bytes``) first in the integral part and last in the
  fraction; a negative number has every byte inverted; the top bit of the first
  byte is then flipped, so that the bytes sort as the numbers do;
* YEAR: 1 byte, the year minus 1900, 0 for the zero year;
* DATE (``Field_newdate``): 3 bytes little-endian ``year << 9 | month << 5 | day``;
* TIME2, DATETIME2, TIMESTAMP2 (``my_time.cc``: ``my_time_packed_to_binary``,
  ``my_datetime_packed_to_binary``, ``my_timestamp_to_binary``): big-endian
  integral part (3, 5 and 4 bytes) then ``(fsp + 1) / 2`` bytes of fraction;
  a negative TIME stores its fraction as the C remainder of the packed value,
  two's complement in its bytes (``-00:00:00.5`` at fsp 1 is ``7fffff ce``);
* the pre-5.6.4 TIME, DATETIME, TIMESTAMP: ``HHMMSS`` as 3 bytes signed,
  ``YYYYMMDDhhmmss`` as 8 bytes, seconds since the epoch as 4 bytes, all
  little-endian;
* VARCHAR, CHAR (``Field_varstring::pack``, ``Field_string::pack``): a 1-byte
  length below 256 bytes of declared length, else 2 bytes, then the bytes in
  the column's character set; CHAR and BINARY drop their trailing pad
  characters (spaces, zero bytes), which the decoder of BINARY(n) pads back;
* ENUM and SET: the 1-based label index (0 for the error value ``''``) or the
  label bit mask, little-endian in the column's 1-8 bytes; the labels are the
  table map's, read in the column's character set as the decoder reads them;
* BLOB/TEXT, GEOMETRY, JSON, VECTOR (``Field_blob::pack``): a little-endian
  length of ``pack_length`` (1-4) bytes, then the bytes: text in the column's
  character set, WKB, binary JSON (:func:`binlog_codec.json_binary.serialize`),
  little-endian floats;
* BIT: ``(bits + 7) / 8`` bytes big-endian.

The values are the decoders' own: ``int``, ``float``, ``decimal.Decimal``
(exactly ``scale`` fraction digits or fewer, never rounded), MySQL's text for
temporal values (zero and partly-zero dates included, a fraction of at most
``fsp`` digits), ``str`` for text and ENUM/SET labels (``int`` index or mask
when the table map records no labels), ``bytes`` for binary columns, a parsed
JSON document, a list of floats for VECTOR.

:func:`value_encoder` builds, once per column, ``encode(value) -> bytes``;
:func:`encode_row_image` writes a whole row image, the inverse of
:meth:`binlog_codec.rows.DecodingPlan.image`. A value its column cannot hold
raises ``ValueError`` naming the column (:class:`~binlog_codec.charsets.CharsetError`
for text its character set has no bytes for): nothing is truncated, rounded or
clamped.
"""

from __future__ import annotations

import calendar
import re
import struct
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, Callable

from . import charsets, json_binary, table_map
from .rows import DecodingPlan
from .table_map import Column, ColumnType, TableMap
from .values import DATETIMEF_INT_OFS, DIG2BYTES, TIMEF_INT_OFS, TIMEF_OFS, frac_bytes

ValueEncoder = Callable[[Any], bytes]

_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_DATETIME = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?")
_TIME = re.compile(r"(-?)([0-9]{2,3}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?")
TIME_MAX_HOURS = 838
_INTEGER_SIZES = {
    ColumnType.TINY: 1,
    ColumnType.SHORT: 2,
    ColumnType.INT24: 3,
    ColumnType.LONG: 4,
    ColumnType.LONGLONG: 8,
}


def _within(value: int, low: int, high: int, what: str) -> int:
    if not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{what} {value} is outside {low}..{high}")
    return value


def _unsigned(value: int, size: int, what: str) -> bytes:
    return _within(value, 0, (1 << 8 * size) - 1, what).to_bytes(size, "little")


def _integer(size: int, column: Column) -> ValueEncoder:
    """Little-endian, signed unless the column is UNSIGNED (as the decoder reads it)."""
    signed = not column.unsigned
    bits = 8 * size
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)

    def encode(value: int) -> bytes:
        return _within(value, low, high, "integer").to_bytes(size, "little", signed=signed)

    return encode


def _float() -> ValueEncoder:
    return struct.Struct("<f").pack


def _double() -> ValueEncoder:
    return struct.Struct("<d").pack


def _digits(number: int, count: int) -> str:
    return f"{number:0{count}d}" if count else ""


def _digit_groups(digits: str, short_first: bool) -> bytes:
    """Groups of 9 digits in 4 bytes big-endian; the short group (``dig2bytes``) leads
    the integral part and ends the fraction."""
    start = len(digits) % 9 if short_first else 0
    groups = [digits[:start]] + [digits[i : i + 9] for i in range(start, len(digits), 9)]
    return b"".join(int(group).to_bytes(DIG2BYTES[len(group)], "big") for group in groups if group)


def _scaled(number: Decimal, scale: int) -> int:
    """``abs(number) * 10**scale`` exactly; raises when that would drop nonzero digits."""
    _, digits, exponent = number.as_tuple()
    coefficient, shift = int("".join(map(str, digits))), exponent + scale
    if coefficient == 0:
        return 0
    if shift >= 0:
        return coefficient * 10**shift
    if -shift > len(digits) or coefficient % 10**-shift:
        raise ValueError(f"{number} has more than {scale} fraction digits")
    return coefficient // 10**-shift


def encode_decimal(value: Decimal | int, precision: int, scale: int) -> bytes:
    """MySQL's binary DECIMAL (``decimal2bin``), the inverse of :func:`~binlog_codec.values.decode_decimal`.

    ``decimal.cc`` documents the layout with DECIMAL(14,4): 1234567890.1234 is
    ``81 0D FB 38 D2 04 D2``, -1234567890.1234 is ``7E F2 04 C7 2D FB 2D``.
    """
    if precision < 1 or not 0 <= scale <= precision:
        raise ValueError(f"DECIMAL({precision},{scale}) is not a decimal type")
    if not isinstance(value, (Decimal, int)) or isinstance(value, bool):
        raise TypeError(f"DECIMAL takes Decimal or int, not {type(value).__name__}")
    number = Decimal(value)
    if not number.is_finite():
        raise ValueError(f"DECIMAL has no {number}")
    if number and number.adjusted() >= precision - scale:
        raise ValueError(f"{number} does not fit DECIMAL({precision},{scale})")
    integral, fraction = divmod(_scaled(number, scale), 10**scale)
    raw = _digit_groups(_digits(integral, precision - scale), short_first=True) + _digit_groups(
        _digits(fraction, scale), short_first=False
    )
    if number < 0:
        raw = bytes(byte ^ 0xFF for byte in raw)
    return bytes((raw[0] ^ 0x80,)) + raw[1:]


def _newdecimal(column: Column) -> ValueEncoder:
    precision, scale = column.precision or 0, column.scale or 0
    return lambda value: encode_decimal(value, precision, scale)


def _year() -> ValueEncoder:
    """0 for the zero year, else the year minus 1900 (1901-2155)."""

    def encode(value: int) -> bytes:
        return bytes((0 if value == 0 else _within(value, 1901, 2155, "YEAR") - 1900,))

    return encode


def _fields(pattern: re.Pattern, text: str, form: str) -> tuple[str, ...]:
    if not isinstance(text, str):
        raise TypeError(f"{form} takes text, not {type(text).__name__}")
    match = pattern.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not {form}")
    return match.groups()


def _date_parts(year: str, month: str, day: str) -> tuple[int, int, int]:
    """Year 0-9999, month 0-12, day 0-31: zero and partly-zero dates are kept (not checked against the calendar)."""
    return _within(int(year), 0, 9999, "year"), _within(int(month), 0, 12, "month"), _within(int(day), 0, 31, "day")


def _clock_parts(hours: str, minutes: str, seconds: str, max_hours: int) -> tuple[int, int, int]:
    hour = _within(int(hours), 0, max_hours, "hour")
    return hour, _within(int(minutes), 0, 59, "minute"), _within(int(seconds), 0, 59, "second")


def _micro(digits: str | None, fsp: int) -> int:
    """The microseconds of a fraction of at most ``fsp`` digits (the decoders write exactly ``fsp``)."""
    digits = digits or ""
    if len(digits) > fsp:
        raise ValueError(f"fraction .{digits} has more than the column's {fsp} digits")
    return int(digits.ljust(6, "0"))


def _datetime_parts(text: str, fsp: int) -> tuple[int, int, int, int, int, int, int]:
    """``YYYY-MM-DD hh:mm:ss[.fraction]`` as (year, month, day, hour, minute, second, microseconds)."""
    *date_clock, fraction = _fields(_DATETIME, text, "YYYY-MM-DD hh:mm:ss[.fraction]")
    return _date_parts(*date_clock[:3]) + _clock_parts(*date_clock[3:], max_hours=23) + (_micro(fraction, fsp),)


def _date() -> ValueEncoder:
    def encode(text: str) -> bytes:
        year, month, day = _date_parts(*_fields(_DATE, text, "YYYY-MM-DD"))
        return (year << 9 | month << 5 | day).to_bytes(3, "little")

    return encode


def _frac_binary(micro: int, fsp: int) -> bytes:
    """The fraction of a temporal value: ``(fsp + 1) / 2`` bytes big-endian, in units of 10**(6 - 2 * bytes) µs."""
    size = frac_bytes(fsp)
    return (micro // 10 ** (6 - 2 * size)).to_bytes(size, "big")


def _datetime2(column: Column) -> ValueEncoder:
    """``my_datetime_packed_to_binary``: ``((year * 13 + month) << 5 | day) << 17 | hour << 12 | minute << 6 | second``
    plus DATETIMEF_INT_OFS in 5 bytes, then the fraction."""
    fsp = column.fsp or 0

    def encode(text: str) -> bytes:
        year, month, day, hour, minute, second, micro = _datetime_parts(text, fsp)
        ymd = (year * 13 + month) << 5 | day
        hms = hour << 12 | minute << 6 | second
        return ((ymd << 17 | hms) + DATETIMEF_INT_OFS).to_bytes(5, "big") + _frac_binary(micro, fsp)

    return encode


def timestamp_seconds(text: str, fsp: int) -> tuple[int, int]:
    """The inverse of :func:`~binlog_codec.values.timestamp_text`: seconds since the epoch (UTC) and
    microseconds; the zero timestamp ``0000-00-00 00:00:00`` is (0, 0).

    ``1970-01-01 00:00:00`` itself has no bytes of its own (they are the zero
    timestamp's) and raises, as do instants outside the 4-byte seconds.
    """
    parts = _datetime_parts(text, fsp)
    if not any(parts):
        return 0, 0
    *clock, micro = parts
    try:
        moment = datetime(*clock)
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a timestamp: {exc}") from None
    seconds = calendar.timegm(moment.timetuple())
    if seconds == 0 and micro == 0:
        raise ValueError(f"{text!r} is stored as the zero timestamp")
    return _within(seconds, 0, 0xFFFFFFFF, "timestamp seconds"), micro


def _timestamp2(column: Column) -> ValueEncoder:
    """``my_timestamp_to_binary``: big-endian seconds since the epoch (UTC), then the fraction."""
    fsp = column.fsp or 0

    def encode(text: str) -> bytes:
        seconds, micro = timestamp_seconds(text, fsp)
        return seconds.to_bytes(4, "big") + _frac_binary(micro, fsp)

    return encode


def _time_parts(text: str, fsp: int) -> tuple[bool, int, int, int, int]:
    """``[-]hhh:mm:ss[.fraction]`` (hours 0-838) as (negative, hour, minute, second, microseconds)."""
    sign, hours, minutes, seconds, fraction = _fields(_TIME, text, "[-]hh:mm:ss[.fraction]")
    return (sign == "-",) + _clock_parts(hours, minutes, seconds, max_hours=TIME_MAX_HOURS) + (_micro(fraction, fsp),)


def time_packed(text: str, fsp: int) -> int:
    """The inverse of :func:`~binlog_codec.values.time_text`: the packed
    ``(hour << 12 | minute << 6 | second) << 24 | microseconds``, negated for a negative
    time (``TIME_to_longlong_time_packed``). ``-00:00:00`` is zero."""
    negative, hour, minute, second, micro = _time_parts(text, fsp)
    packed = (hour << 12 | minute << 6 | second) << 24 | micro
    return -packed if negative else packed


def time2_binary(packed: int, fsp: int) -> bytes:
    """``my_time_packed_to_binary``: the inverse of :func:`~binlog_codec.values.time2_packed`.

    fsp 5-6: the packed value plus TIMEF_OFS in 6 bytes. Otherwise the integral
    part ``packed >> 24`` (arithmetic shift) plus TIMEF_INT_OFS in 3 bytes, then
    the fraction ``packed % (1 << 24)`` with C's remainder (the sign of
    ``packed``) divided by 10000 (fsp 1-2, 1 byte) or 100 (fsp 3-4, 2 bytes),
    two's complement: MySQL's comment table reads ``7FFFFF.FF`` as
    ``-00:00:00.01`` and ``7FFFFE.F6`` as ``-00:00:01.10``.
    """
    if fsp >= 5:
        return (packed + TIMEF_OFS).to_bytes(6, "big")
    head = ((packed >> 24) + TIMEF_INT_OFS).to_bytes(3, "big")
    size = frac_bytes(fsp)
    sign = -1 if packed < 0 else 1
    frac = sign * (abs(packed) % (1 << 24) // 10 ** (6 - 2 * size))
    return head + (frac % (1 << 8 * size)).to_bytes(size, "big")


def _time2(column: Column) -> ValueEncoder:
    fsp = column.fsp or 0
    return lambda text: time2_binary(time_packed(text, fsp), fsp)


def _old_time() -> ValueEncoder:
    """``[-]HHMMSS`` as a signed 3-byte little-endian integer (``Field_time``)."""

    def encode(text: str) -> bytes:
        negative, hour, minute, second, _ = _time_parts(text, 0)
        number = hour * 10000 + minute * 100 + second
        return (-number if negative else number).to_bytes(3, "little", signed=True)

    return encode


def _old_datetime() -> ValueEncoder:
    """``YYYYMMDDhhmmss`` as an 8-byte little-endian integer (``Field_datetime``)."""

    def encode(text: str) -> bytes:
        year, month, day, hour, minute, second, _ = _datetime_parts(text, 0)
        day_number = (year * 100 + month) * 100 + day
        return (day_number * 1_000_000 + (hour * 100 + minute) * 100 + second).to_bytes(8, "little")

    return encode


def _old_timestamp() -> ValueEncoder:
    """Seconds since the epoch (UTC), 4 bytes little-endian (``Field_timestamp``)."""
    return lambda text: timestamp_seconds(text, 0)[0].to_bytes(4, "little")


def _bytes(value: bytes) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"a binary value is bytes, not {type(value).__name__}")
    return bytes(value)


def _text_encoder(column: Column, flavour: str, assumed: int | None = None) -> Callable[[Any], bytes]:
    """Text in the column's charset; binary columns take bytes. A column whose table map records
    no charset takes bytes too, and text in the ``assumed`` collation when the decoder assumed one."""
    collation_id = column.collation_id
    if collation_id is None and assumed is not None:
        return _assumed_text(column, assumed, flavour)
    if collation_id is None or charsets.is_binary(collation_id):
        return _bytes

    def convert(text: str) -> bytes:
        if not isinstance(text, str):
            raise TypeError(f"a text value is str, not {type(text).__name__}")
        return charsets.encode(text, collation_id, flavour, column=column.display_name)

    return convert


def _assumed_text(column: Column, collation_id: int, flavour: str) -> Callable[[Any], bytes]:
    def convert(value: str | bytes) -> bytes:
        if isinstance(value, str):
            return charsets.encode(value, collation_id, flavour, column=column.display_name)
        return _bytes(value)

    return convert


def _length_prefixed(width: int, convert: Callable[[Any], bytes], limit: int | None = None) -> ValueEncoder:
    """A ``width``-byte little-endian length, then the bytes (at most ``limit`` of them when given)."""

    def encode(value: Any) -> bytes:
        raw = convert(value)
        if limit is not None and len(raw) > limit:
            raise ValueError(f"{len(raw)} bytes exceed the declared {limit}")
        return _unsigned(len(raw), width, "length") + raw

    return encode


def _declared(column: Column, convert: Callable[[Any], bytes]) -> ValueEncoder:
    """A 1-byte length below 256 bytes of declared length, else 2 bytes, then at most that many bytes."""
    length = column.length or 0
    return _length_prefixed(1 if length < 256 else 2, convert, column.length)


def _varchar(column: Column, flavour: str, assumed: int | None) -> ValueEncoder:
    """VARCHAR/VARBINARY (``Field_varstring::pack``)."""
    return _declared(column, _text_encoder(column, flavour, assumed))


def _string(column: Column, flavour: str, assumed: int | None) -> ValueEncoder:
    """CHAR/BINARY (``Field_string::pack``), ENUM and SET."""
    real = column.real_type
    length = column.length or 0
    if real == ColumnType.ENUM:
        return _enum(column, length, table_map.labels(column, flavour))
    if real == ColumnType.SET:
        return _set(column, length, table_map.labels(column, flavour))
    return _declared(column, _unpadded(column.collation_id, _text_encoder(column, flavour, assumed)))


def _unpadded(collation_id: int | None, convert: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """``Field_string::pack`` drops the trailing pad characters: zero bytes of BINARY(n) (the decoder
    pads them back to n bytes), spaces of CHAR(n) (which MySQL never returns). Kept as they are
    when the table map records no charset, as the pad character is not known then."""
    if collation_id is None:
        return convert
    if charsets.is_binary(collation_id):
        return lambda value: convert(value).rstrip(b"\0")
    return lambda text: convert(text.rstrip(" ") if isinstance(text, str) else text)


def _enum(column: Column, size: int, labels: list[str] | None) -> ValueEncoder:
    """The 1-based index of the label; ``''`` that is no label is the error value 0."""

    def encode(value: Any) -> bytes:
        if labels is None:
            return _unsigned(value, size, "ENUM index")
        if value in labels:
            return _unsigned(labels.index(value) + 1, size, "ENUM index")
        if value == "":
            return bytes(size)
        raise ValueError(f"{value!r} is none of its {len(labels)} ENUM labels")

    return encode


def _set(column: Column, size: int, labels: list[str] | None) -> ValueEncoder:
    """Bit i for the i-th label of the comma-separated ``value``."""

    def encode(value: Any) -> bytes:
        if labels is None:
            return _unsigned(value, size, "SET mask")
        if not isinstance(value, str):
            raise TypeError(f"a SET value is str, not {type(value).__name__}")
        names = value.split(",") if value else []
        unknown = [name for name in names if name not in labels]
        if unknown:
            raise ValueError(f"{unknown!r} are none of its {len(labels)} SET labels")
        return _unsigned(sum({1 << labels.index(name) for name in names}), size, "SET mask")

    return encode


def _bit(column: Column) -> ValueEncoder:
    bits = column.length or 0

    def encode(value: int) -> bytes:
        return _within(value, 0, (1 << bits) - 1, f"BIT({bits})").to_bytes((bits + 7) // 8, "big")

    return encode


def _json(column: Column) -> ValueEncoder:
    return _length_prefixed(column.pack_length or 4, json_binary.serialize)


def _vector(column: Column) -> ValueEncoder:
    def convert(values: Sequence[float]) -> bytes:
        return struct.pack(f"<{len(values)}f", *values)

    return _length_prefixed(column.pack_length or 4, convert)


def _naming(column: Column, encode: ValueEncoder) -> ValueEncoder:
    """``encode`` with its errors as ValueError naming the column (a CharsetError names it already)."""

    def named(value: Any) -> bytes:
        try:
            return encode(value)
        except charsets.CharsetError:
            raise
        except (TypeError, ValueError, OverflowError, struct.error) as exc:
            raise ValueError(f"column {column.display_name}: {exc}") from None

    return named


def value_encoder(column: Column, flavour: str = "mysql", assumed_collation: int | None = None) -> ValueEncoder:
    """The encoder of ``column``'s values, the inverse of :func:`~binlog_codec.values.value_decoder`
    with the same ``flavour`` and ``assumed_collation``."""
    assumed = assumed_collation
    kind = column.type_code
    builders: dict[int, Callable[[], ValueEncoder]] = {
        **{size_type: (lambda size=size: _integer(size, column)) for size_type, size in _INTEGER_SIZES.items()},
        ColumnType.FLOAT: _float,
        ColumnType.DOUBLE: _double,
        ColumnType.NEWDECIMAL: lambda: _newdecimal(column),
        ColumnType.YEAR: _year,
        ColumnType.DATE: _date,
        ColumnType.NEWDATE: _date,
        ColumnType.TIME: _old_time,
        ColumnType.TIME2: lambda: _time2(column),
        ColumnType.DATETIME: _old_datetime,
        ColumnType.DATETIME2: lambda: _datetime2(column),
        ColumnType.TIMESTAMP: _old_timestamp,
        ColumnType.TIMESTAMP2: lambda: _timestamp2(column),
        ColumnType.VARCHAR: lambda: _varchar(column, flavour, assumed),
        ColumnType.VAR_STRING: lambda: _varchar(column, flavour, assumed),
        ColumnType.STRING: lambda: _string(column, flavour, assumed),
        ColumnType.BIT: lambda: _bit(column),
        ColumnType.BLOB: lambda: _length_prefixed(column.pack_length or 2, _text_encoder(column, flavour, assumed)),
        ColumnType.GEOMETRY: lambda: _length_prefixed(column.pack_length or 4, _bytes),
        ColumnType.JSON: lambda: _json(column),
        ColumnType.VECTOR: lambda: _vector(column),
    }
    builder = builders.get(kind)
    if builder is None:
        raise ValueError(f"column {column.display_name}: no encoder for column type {kind}")
    return _naming(column, builder())


def _columns(plan_or_columns: DecodingPlan | TableMap | Sequence[Column]) -> Sequence[Column]:
    if isinstance(plan_or_columns, DecodingPlan):
        return plan_or_columns.table.columns
    if isinstance(plan_or_columns, TableMap):
        return plan_or_columns.columns
    return plan_or_columns


def _diff(column: Column, diffs: bytes) -> bytes:
    """A WL#2955 partial JSON value: ``length | diff_1 ... diff_N`` as :meth:`DecodingPlan._diff` reads it."""
    return _unsigned(len(diffs), column.pack_length or 4, f"column {column.display_name} diff length") + _bytes(diffs)


def encode_row_image(
    plan_or_columns: DecodingPlan | TableMap | Sequence[Column],
    values_by_name: Mapping[str, Any],
    present: Sequence[int],
    *,
    flavour: str = "mysql",
    assumed_collation: int | None = None,
    partial: Collection[int] = frozenset(),
    unused_null_bits: int = 0,
) -> bytes:
    """One row image as :meth:`DecodingPlan.image` reads it (WL#5092)::

        null bitmap ((len(present) + 7) / 8 bytes, bit i for the i-th present column)
        | values of the present, non-NULL columns, in ``present`` order

    The bits of the last null byte beyond the present columns, which readers
    ignore, are ``unused_null_bits``: 0 as MySQL 8.0 and later write them, 1 as
    MySQL 5.x and MariaDB do (``pack_row`` starts each null byte all ones and
    clears the bit of every non-NULL column).

    ``values_by_name`` maps the display name of every present column, and of no
    other (absent is not NULL), to its value, None for NULL. The JSON columns
    in ``partial`` take WL#2955 diffs (bytes), as in a PARTIAL_UPDATE_ROWS after-image.
    ``flavour`` and ``assumed_collation`` are those of the :class:`DecodingPlan` that reads the image.
    """
    columns = _columns(plan_or_columns)
    wanted = {columns[index].display_name for index in present}
    if wanted != set(values_by_name):
        raise ValueError(
            f"row image of columns {sorted(wanted)} given values of {sorted(values_by_name)} (absent is not NULL)"
        )
    nulls = bytearray((len(present) + 7) // 8)
    if nulls and unused_null_bits:
        nulls[-1] = 0xFF << (len(present) - 8 * (len(nulls) - 1)) & 0xFF
    values = bytearray()
    for position, index in enumerate(present):
        column = columns[index]
        value = values_by_name[column.display_name]
        if value is None:
            nulls[position // 8] |= 1 << (position % 8)
        elif index in partial:
            values += _diff(column, value)
        else:
            values += _encoder_of(column, flavour, assumed_collation)(value)
    return bytes(nulls) + bytes(values)


_ENCODERS: dict[tuple[int, str, int | None], tuple[Column, ValueEncoder]] = {}
_ENCODERS_LIMIT = 4096


def _encoder_of(column: Column, flavour: str, assumed_collation: int | None) -> ValueEncoder:
    """:func:`value_encoder`, built once per column object (rows of one table share their columns).
    The cache keeps each column it holds alive, so an id never stands for another column."""
    key = (id(column), flavour, assumed_collation)
    found = _ENCODERS.get(key)
    if found is None or found[0] is not column:
        if len(_ENCODERS) >= _ENCODERS_LIMIT:
            _ENCODERS.clear()
        found = _ENCODERS[key] = (column, value_encoder(column, flavour, assumed_collation))
    return found[1]
