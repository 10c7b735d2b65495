"""One decoder per MySQL column type: the bytes of a value in a row image to a Python value.

The on-disk layouts are the storage formats the server copies into row events
(``Field::pack`` of each type; temporal formats of ``my_time.cc``). Values come
out exact: integers as ``int`` with the column's signedness, DECIMAL as
``decimal.Decimal`` with its scale, temporal values as MySQL's own text (zero
and partly-zero dates kept, never turned into None or 1970), character data
decoded from the column's charset (``bytes`` for the binary charset), JSON as
the parsed document, VECTOR as a list of floats.

:func:`value_decoder` builds, once per column, a function
``decode(data, offset) -> (value, next_offset)``; every decoder checks that its
bytes are there. Most types take a fixed number of bytes: for those,
:func:`fixed_width` gives their :class:`FixedWidth` layout (a ``struct`` format
code and the conversion of what it unpacks), from which their decoder is
built, and which lets the row decoder unpack runs of such columns with one
``struct`` call (:class:`binlog_codec.rows.DecodingPlan`).

Layouts of the common types also carry a *native* description, a tuple such as
``("int", 4, True)`` or ``("utf8", 2)``: ``FixedWidth.native`` for fixed-size
values, the ``native`` attribute of a length-prefixed decoder. The compiled
build's row writers (:mod:`binlog_codec.row_text`) read those values in C;
a layout without one (None) is read through its Python decoder there too.
"""

from __future__ import annotations

import struct
import time
from decimal import Decimal
from functools import lru_cache
from typing import Any, Callable, NamedTuple

from . import charsets, json_binary, table_map
from .json_binary import DIG2BYTES
from .table_map import Column, ColumnType
from .wire import ShortBody

ValueDecoder = Callable[[bytes, int], tuple[Any, int]]

TIMEF_INT_OFS = 0x800000
TIMEF_OFS = 0x800000000000
DATETIMEF_INT_OFS = 0x8000000000


def _short(column: Column, data: bytes, offset: int, size: int) -> ShortBody:
    """The error of a value whose ``size`` bytes at ``offset`` run past the row data.

    Decoders compare ``offset + size`` with ``len(data)`` inline (the hot path
    of row decoding) and raise this when it fails.
    """
    return ShortBody(
        f"column {column.display_name}: value needs {size} bytes at row offset {offset}, {len(data) - offset} left"
    )


class FixedWidth(NamedTuple):
    """The layout of a value of a fixed number of bytes: the little-endian ``struct`` format
    ``code`` that reads it (``"Q"``, ``"5s"``, ...) and ``convert``, which makes the value of
    what ``struct`` unpacks (None: the unpacked value is the value)."""

    code: str
    convert: Callable[[Any], Any] | None = None
    native: tuple | None = None

    @property
    def size(self) -> int:
        return struct.calcsize("<" + self.code)


def fixed_decoder(column: Column, layout: FixedWidth) -> ValueDecoder:
    """The decoder of a column whose values have the fixed ``layout``."""
    size = layout.size
    unpack = struct.Struct("<" + layout.code).unpack_from
    convert = layout.convert
    if convert is None:
        def decode_plain(data: bytes, offset: int) -> tuple[Any, int]:
            end = offset + size
            if end > len(data):
                raise _short(column, data, offset, size)
            return unpack(data, offset)[0], end

        return decode_plain

    def decode(data: bytes, offset: int) -> tuple[Any, int]:
        end = offset + size
        if end > len(data):
            raise _short(column, data, offset, size)
        return convert(unpack(data, offset)[0]), end

    return decode


_INTEGER_CODES = {(1, True): "b", (1, False): "B", (2, True): "h", (2, False): "H",
                  (4, True): "i", (4, False): "I", (8, True): "q", (8, False): "Q"}


def _integer(size: int, column: Column) -> FixedWidth:
    """Little-endian integers of 1, 2, 3, 4 or 8 bytes; unsigned unless SIGNEDNESS says so."""
    signed = not column.unsigned
    code = _INTEGER_CODES.get((size, signed))
    if code is None:  # MEDIUMINT: 3 bytes, no struct format of its own
        return _bytes_as_int(size, "little", signed)
    return FixedWidth(code, None, ("int", size, signed))


def _bytes_as_int(size: int, byteorder: str, signed: bool = False) -> FixedWidth:
    """An integer of ``size`` bytes in ``byteorder``, any size."""

    def convert(raw: bytes) -> int:
        return int.from_bytes(raw, byteorder, signed=signed)

    native = ("int", size, signed) if byteorder == "little" and size <= 8 else None
    return FixedWidth(f"{size}s", convert, native)


def _float(column: Column) -> FixedWidth:
    return FixedWidth("4s", shortest_float32)


def shortest_float32(raw: bytes) -> float:
    """The shortest decimal that reads back as the same 4-byte float (what MySQL prints)."""
    value = struct.unpack("<f", raw)[0]
    if value != value or value in (float("inf"), float("-inf")):
        return value
    for digits in range(1, 10):
        candidate = float(f"{value:.{digits}g}")
        try:
            if struct.pack("<f", candidate) == raw:
                return candidate
        except OverflowError:  # rounds beyond the largest float: more digits needed
            continue
    return value


def _double(column: Column) -> FixedWidth:
    return FixedWidth("d", None, ("double",))


def decimal_size(precision: int, scale: int) -> int:
    integral = precision - scale
    return (integral // 9) * 4 + DIG2BYTES[integral % 9] + (scale // 9) * 4 + DIG2BYTES[scale % 9]


def _decimal_groups(precision: int, scale: int) -> list[tuple[int, int]]:
    """(bytes, digits) of each group, most significant first: a short leading group of the
    integral part, whole 9-digit groups of 4 bytes, a short trailing group of the fraction."""
    integral = precision - scale
    groups = [(DIG2BYTES[integral % 9], integral % 9)] if integral % 9 else []
    groups += [(4, 9)] * (integral // 9 + scale // 9)
    return groups + ([(DIG2BYTES[scale % 9], scale % 9)] if scale % 9 else [])


@lru_cache(maxsize=None)
def decimal_reader(precision: int, scale: int) -> Callable[[bytes], Decimal]:
    """MySQL's binary DECIMAL (``decimal2bin``): big-endian groups of 9 digits (4 bytes each,
    fewer for a short leading or trailing group), the sign in the top bit (set for positive
    numbers), every byte inverted for negative ones. Returns a reader of such bytes."""
    steps, shift = [], 0
    for size, digits in reversed(_decimal_groups(precision, scale)):
        steps.append((shift, (1 << 8 * size) - 1, 10**digits))
        shift += 8 * size
    steps.reverse()
    sign_bit, all_ones = 1 << (shift - 1), (1 << shift) - 1

    def read(raw: bytes) -> Decimal:
        packed = int.from_bytes(raw, "big")
        negative = not packed & sign_bit
        packed ^= (all_ones if negative else 0) ^ sign_bit
        number = 0
        for group_shift, mask, base in steps:
            number = number * base + (packed >> group_shift & mask)
        return Decimal(f"{'-' if negative else ''}{number}E-{scale}")

    return read


def decode_decimal(raw: bytes, precision: int, scale: int) -> Decimal:
    """One binary DECIMAL value (see :func:`decimal_reader`), with exponent ``-scale``."""
    return decimal_reader(precision, scale)(raw)


def _newdecimal(column: Column) -> FixedWidth:
    precision, scale = column.precision or 0, column.scale or 0
    if not (1 <= precision <= 65 and 0 <= scale <= min(precision, 30)):
        raise ShortBody(f"column {column.display_name}: DECIMAL({precision},{scale}) is not a DECIMAL a server writes")
    return FixedWidth(
        f"{decimal_size(precision, scale)}s", decimal_reader(precision, scale), ("decimal", precision, scale)
    )


def _year_of(raw: int) -> int:
    return 1900 + raw if raw else 0


def _year(column: Column) -> FixedWidth:
    return FixedWidth("B", _year_of, ("year",))


def _date_text(raw: bytes) -> str:
    packed = int.from_bytes(raw, "little")
    return f"{packed >> 9:04d}-{(packed >> 5) & 15:02d}-{packed & 31:02d}"


def _date(column: Column) -> FixedWidth:
    return FixedWidth("3s", _date_text, ("date",))


def _fsp(column: Column) -> int:
    """The fractional-second digits of a TIME2/DATETIME2/TIMESTAMP2 column: 0 to 6."""
    fsp = column.fsp or 0
    if fsp > 6:
        raise ShortBody(f"column {column.display_name}: {fsp} fractional digits, at most 6 exist")
    return fsp


def _fraction(micro: int, fsp: int) -> str:
    return f".{micro:06d}"[: fsp + 1] if fsp else ""


def frac_bytes(fsp: int) -> int:
    """Bytes of the fractional seconds of a TIME2/DATETIME2/TIMESTAMP2 with ``fsp`` digits (WL#946)."""
    return (fsp + 1) // 2


def _frac_scale(fsp: int) -> int:
    """What the big-endian integer of a value's fraction bytes is multiplied by to give microseconds."""
    return 10 ** (6 - 2 * frac_bytes(fsp))


def _datetime2(column: Column) -> FixedWidth:
    """DATETIME(fsp): 5 big-endian bytes of packed year*13+month, day, hour, minute, second, then the fraction."""
    fsp = _fsp(column)
    scale = _frac_scale(fsp)

    def convert(raw: bytes) -> str:
        packed = int.from_bytes(raw[:5], "big") - DATETIMEF_INT_OFS
        ymd, hms = packed >> 17, packed % (1 << 17)
        year_month = ymd >> 5
        text = (
            f"{year_month // 13:04d}-{year_month % 13:02d}-{ymd % 32:02d} "
            f"{hms >> 12:02d}:{(hms >> 6) % 64:02d}:{hms % 64:02d}"
        )
        if not fsp:
            return text
        return text + _fraction(int.from_bytes(raw[5:], "big") * scale, fsp)

    return FixedWidth(f"{5 + frac_bytes(fsp)}s", convert, ("datetime2", fsp))


def _timestamp2(column: Column) -> FixedWidth:
    """TIMESTAMP(fsp): big-endian seconds since the epoch (UTC) and the fraction; 0 is the zero timestamp."""
    fsp = _fsp(column)
    scale = _frac_scale(fsp)

    def convert(raw: bytes) -> str:
        return timestamp_text(int.from_bytes(raw[:4], "big"), int.from_bytes(raw[4:], "big") * scale, fsp)

    return FixedWidth(f"{4 + frac_bytes(fsp)}s", convert, ("timestamp2", fsp))


def timestamp_text(seconds: int, micro: int, fsp: int) -> str:
    if seconds == 0 and micro == 0:
        return "0000-00-00 00:00:00" + _fraction(0, fsp)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds)) + _fraction(micro, fsp)


def _time2(column: Column) -> FixedWidth:
    fsp = _fsp(column)

    def convert(raw: bytes) -> str:
        return time_text(time2_packed(raw, fsp), fsp)

    return FixedWidth(f"{3 + frac_bytes(fsp)}s", convert)


def time2_packed(raw: bytes, fsp: int) -> int:
    """``my_time_packed_from_binary``: TIME2 bytes to the packed ``(hms << 24) + microseconds``.

    The fraction bytes are unsigned. A negative time with a fraction stores the next lower
    whole second and ``0x100 - fraction`` (``0x10000 - ...`` for 3-4 digits), which are
    shifted back here: ``-00:00:00.5`` is stored as -1 second and 0xCE.
    """
    if fsp >= 5:
        return int.from_bytes(raw[:6], "big") - TIMEF_OFS
    intpart = int.from_bytes(raw[:3], "big") - TIMEF_INT_OFS
    if fsp == 0:
        return intpart << 24
    if fsp <= 2:
        frac = raw[3]
        if intpart < 0 and frac:
            intpart += 1
            frac -= 0x100
        return (intpart << 24) + frac * 10000
    frac = int.from_bytes(raw[3:5], "big")
    if intpart < 0 and frac:
        intpart += 1
        frac -= 0x10000
    return (intpart << 24) + frac * 100


def time_text(packed: int, fsp: int) -> str:
    sign = "-" if packed < 0 else ""
    packed = abs(packed)
    hms, micro = packed >> 24, packed % (1 << 24)
    hours, minutes, seconds = (hms >> 12) % (1 << 10), (hms >> 6) % 64, hms % 64
    return f"{sign}{hours:02d}:{minutes:02d}:{seconds:02d}" + _fraction(micro, fsp)


def _old_time_text(raw: bytes) -> str:
    """TIME before MySQL 5.6: 3 little-endian bytes, signed, of hhmmss as a decimal number."""
    number = int.from_bytes(raw, "little", signed=True)
    sign, number = ("-" if number < 0 else ""), abs(number)
    return f"{sign}{number // 10000:02d}:{number // 100 % 100:02d}:{number % 100:02d}"


def _old_time(column: Column) -> FixedWidth:
    return FixedWidth("3s", _old_time_text)


def _old_datetime_text(number: int) -> str:
    """DATETIME before MySQL 5.6: YYYYMMDDhhmmss as an 8-byte little-endian number."""
    day, clock = divmod(number, 1_000_000)
    return (
        f"{day // 10000:04d}-{day // 100 % 100:02d}-{day % 100:02d} "
        f"{clock // 10000:02d}:{clock // 100 % 100:02d}:{clock % 100:02d}"
    )


def _old_datetime(column: Column) -> FixedWidth:
    return FixedWidth("Q", _old_datetime_text)


def _old_timestamp_text(seconds: int) -> str:
    return timestamp_text(seconds, 0, 0)


def _old_timestamp(column: Column) -> FixedWidth:
    return FixedWidth("I", _old_timestamp_text)


def _text_decoder(
    column: Column, flavour: str, assumed: int | None = None, round_trip: charsets.RoundTrip | None = None
) -> Callable[[bytes], Any]:
    """Text columns decode from their charset; binary ones stay bytes. A column whose table map
    records no charset stays bytes too, unless the caller ``assumed`` a collation: then its
    values are text when valid in it, bytes when not (it may be a BINARY or BLOB column).
    ``round_trip`` counts each value encoded back to its charset against the logged bytes."""
    collation_id = column.collation_id
    if collation_id is None and assumed is not None:
        return _assumed_text(assumed, flavour)
    if collation_id is None or charsets.is_binary(collation_id):
        return bytes
    try:
        read = charsets.decoder(collation_id, flavour, column=column.display_name, round_trip=round_trip)
    except charsets.UnknownCollationError as exc:
        raise ShortBody(f"column {column.display_name}: {exc}") from None

    def convert(raw: bytes) -> Any:
        try:
            return read(raw)
        except charsets.CharsetError as exc:
            raise ShortBody(str(exc)) from None

    if round_trip is None and charsets.collation(collation_id, flavour).codec == "utf-8":
        return _utf8(convert)
    return convert


def _utf8(checked: Callable[[bytes], Any]) -> Callable[[bytes], str]:
    """UTF-8 text (utf8mb4, the most common charset) decoded by Python's own codec in one call;
    bytes that are not UTF-8 go to ``checked``, which raises the located error."""

    def convert(raw: bytes) -> str:
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError:
            return checked(raw)

    convert.native_payload = ("utf8",)
    return convert


def _assumed_text(collation_id: int, flavour: str) -> Callable[[bytes], Any]:
    def convert(raw: bytes) -> Any:
        try:
            return charsets.decode(raw, collation_id, flavour)
        except charsets.CharsetError:
            return bytes(raw)

    return convert


def _length_prefixed(column: Column, width: int, convert: Callable[[bytes], Any]) -> ValueDecoder:
    def decode(data: bytes, offset: int) -> tuple[Any, int]:
        start = offset + width
        if start > len(data):
            raise _short(column, data, offset, width)
        end = start + int.from_bytes(data[offset:start], "little")
        if end > len(data):
            raise _short(column, data, start, end - start)
        return convert(data[start:end]), end

    decode.native = _prefixed_native(width, convert)
    return decode


def _prefixed_native(width: int, convert: Callable[[bytes], Any]) -> tuple | None:
    """The native description of a length-prefixed value (see the module's docstring): the
    payload's kind and the width of its length. Binary payloads are ``("hex", width)``."""
    if convert is bytes:
        return ("hex", width)
    payload = getattr(convert, "native_payload", None)
    return None if payload is None else (payload[0], width, *payload[1:])


def _varchar(column: Column, convert: Callable[[bytes], Any]) -> ValueDecoder:
    """VARCHAR/VARBINARY: a 1-byte length below 256 bytes of declared length, else 2 bytes."""
    return _length_prefixed(column, 1 if (column.length or 0) < 256 else 2, convert)


def _string(column: Column, flavour: str, text: Callable[[], Callable[[bytes], Any]]) -> FixedWidth | ValueDecoder:
    """CHAR/BINARY, and ENUM and SET, which the table map logs as STRING with their real type
    in the metadata. ``text`` builds the payload converter of a character column."""
    real = column.real_type
    length = column.length or 0
    if real == ColumnType.ENUM:
        return _enum(column, length, _labels(column, flavour))
    if real == ColumnType.SET:
        return _set(column, length, _labels(column, flavour))
    binary = column.collation_id is not None and charsets.is_binary(column.collation_id)
    return _length_prefixed(column, 1 if length < 256 else 2, _zero_padded(length) if binary else text())


def _zero_padded(length: int) -> Callable[[bytes], bytes]:
    """BINARY(n) (and MariaDB's INET6/UUID, logged as BINARY(16)): the server strips the trailing
    zero bytes when it packs the value into the row image (``Field_string::pack`` drops trailing
    pad characters, and the pad character of ``binary`` is 0x00); the column holds n bytes."""

    def pad(raw: bytes) -> bytes:
        return raw.ljust(length, b"\0")

    pad.native_payload = ("padded_hex", length)
    return pad


def _labels(column: Column, flavour: str) -> list[str] | None:
    try:
        return table_map.labels(column, flavour)
    except (charsets.CharsetError, charsets.UnknownCollationError) as exc:
        raise ShortBody(f"column {column.display_name}: ENUM/SET values: {exc}") from None


def _unsigned(size: int) -> FixedWidth:
    """An unsigned little-endian integer of ``size`` bytes (ENUM index, SET bitmask)."""
    code = _INTEGER_CODES.get((size, False))
    return _bytes_as_int(size, "little") if code is None else FixedWidth(code, None, ("int", size, False))


def _enum(column: Column, size: int, labels: list[str] | None) -> FixedWidth:
    """ENUM: the 1- or 2-byte index of the value, 1-based; 0 is the empty error value."""
    index_layout = _unsigned(size)
    if labels is None:
        return index_layout
    as_int = index_layout.convert

    def label(raw: Any) -> str:
        index = raw if as_int is None else as_int(raw)
        if index == 0:
            return ""
        if index > len(labels):
            raise ShortBody(f"column {column.display_name}: ENUM index {index} beyond its {len(labels)} labels")
        return labels[index - 1]

    return FixedWidth(index_layout.code, label, ("enum", size, tuple(labels)))


def _set(column: Column, size: int, labels: list[str] | None) -> FixedWidth:
    """SET: a bitmask of 1 to 8 bytes, bit i for the i-th value."""
    mask_layout = _unsigned(size)
    if labels is None:
        return mask_layout
    as_int = mask_layout.convert

    def members(raw: Any) -> str:
        mask = raw if as_int is None else as_int(raw)
        return ",".join(label for bit, label in enumerate(labels) if mask >> bit & 1)

    return FixedWidth(mask_layout.code, members)


def _bit(column: Column) -> FixedWidth:
    return _bytes_as_int(((column.length or 0) + 7) // 8, "big")


def _json(column: Column) -> ValueDecoder:
    """JSON: the WL#8132 binary document; the null document is ``JSON_NULL``, not SQL NULL's None."""

    def convert(raw: bytes) -> Any:
        try:
            document = json_binary.parse(raw)
        except json_binary.JsonBinaryError as exc:
            raise ShortBody(f"column {column.display_name}: {exc}") from None
        return json_binary.JSON_NULL if document is None else document

    return _length_prefixed(column, column.pack_length or 4, convert)


def _vector(column: Column) -> ValueDecoder:
    def convert(raw: bytes) -> list[float]:
        if len(raw) % 4:
            raise ShortBody(f"column {column.display_name}: VECTOR of {len(raw)} bytes is not whole floats")
        return [shortest_float32(raw[i : i + 4]) for i in range(0, len(raw), 4)]

    return _length_prefixed(column, column.pack_length or 4, convert)


def is_text(column: Column) -> bool:
    """Whether ``column`` holds character data (CHAR, VARCHAR, TEXT: not ENUM or SET)."""
    kind = column.type_code
    if kind == ColumnType.STRING:
        return column.real_type not in (ColumnType.ENUM, ColumnType.SET)
    return kind in (ColumnType.VARCHAR, ColumnType.VAR_STRING, ColumnType.BLOB)


def needs_round_trip(column: Column, flavour: str = "mysql") -> bool:
    """Whether ``column``'s values are text of a charset whose decoding is worth checking by
    encoding back (see :func:`binlog_codec.charsets.needs_round_trip`)."""
    collation_id = column.collation_id
    return (
        is_text(column) and collation_id is not None and not charsets.is_binary(collation_id)
        and charsets.needs_round_trip(collation_id, flavour)
    )


def value_decoder(
    column: Column,
    flavour: str = "mysql",
    assumed_collation: int | None = None,
    round_trip: charsets.RoundTrip | None = None,
) -> ValueDecoder:
    """The decoder of ``column``'s values, built once per table map. ``assumed_collation``
    reads the character columns of a table map that records no charsets, and
    ``round_trip`` checks the values of a text column (see :func:`_text_decoder`)."""
    return decoder_of(column, value_layout(column, flavour, assumed_collation, round_trip))


def decoder_of(column: Column, layout: FixedWidth | ValueDecoder) -> ValueDecoder:
    """The decoder of ``column`` from what :func:`value_layout` gave."""
    return fixed_decoder(column, layout) if isinstance(layout, FixedWidth) else layout


def value_layout(
    column: Column,
    flavour: str = "mysql",
    assumed_collation: int | None = None,
    round_trip: charsets.RoundTrip | None = None,
) -> FixedWidth | ValueDecoder:
    """How ``column``'s values are read: the :class:`FixedWidth` layout of a type whose values
    take a fixed number of bytes, else the decoder (arguments as for :func:`value_decoder`)."""

    def text() -> Callable[[bytes], Any]:
        return _text_decoder(column, flavour, assumed_collation, round_trip)

    kind = column.type_code
    fixed = {
        ColumnType.TINY: 1,
        ColumnType.SHORT: 2,
        ColumnType.INT24: 3,
        ColumnType.LONG: 4,
        ColumnType.LONGLONG: 8,
    }
    if kind in fixed:
        return _integer(fixed[kind], column)
    builders: dict[int, Callable[[], FixedWidth | ValueDecoder]] = {
        ColumnType.FLOAT: lambda: _float(column),
        ColumnType.DOUBLE: lambda: _double(column),
        ColumnType.NEWDECIMAL: lambda: _newdecimal(column),
        ColumnType.YEAR: lambda: _year(column),
        ColumnType.DATE: lambda: _date(column),
        ColumnType.NEWDATE: lambda: _date(column),
        ColumnType.TIME: lambda: _old_time(column),
        ColumnType.TIME2: lambda: _time2(column),
        ColumnType.DATETIME: lambda: _old_datetime(column),
        ColumnType.DATETIME2: lambda: _datetime2(column),
        ColumnType.TIMESTAMP: lambda: _old_timestamp(column),
        ColumnType.TIMESTAMP2: lambda: _timestamp2(column),
        ColumnType.VARCHAR: lambda: _varchar(column, text()),
        ColumnType.VAR_STRING: lambda: _varchar(column, text()),
        ColumnType.STRING: lambda: _string(column, flavour, text),
        ColumnType.BIT: lambda: _bit(column),
        ColumnType.BLOB: lambda: _length_prefixed(column, column.pack_length or 2, text()),
        ColumnType.GEOMETRY: lambda: _length_prefixed(column, column.pack_length or 4, bytes),
        ColumnType.JSON: lambda: _json(column),
        ColumnType.VECTOR: lambda: _vector(column),
    }
    builder = builders.get(kind)
    if builder is None:
        raise ShortBody(f"column {column.display_name}: no decoder for column type {kind}")
    return builder()

