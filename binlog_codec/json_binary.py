"""MySQL's binary JSON format (WL#8132): decode, encode, and print as MySQL does.

A JSON column holds one binary document (WL#8132, ``doc ::= type value``)::

    object ::= element-count size key-entry* value-entry* key* value*
    array  ::= element-count size value-entry* value*
    key-entry   ::= key-offset key-length
    value-entry ::= type offset-or-inlined-value
    string      ::= data-length utf8mb4-data
    custom-data ::= custom-type data-length binary-data

``element-count``, ``size``, ``key-offset`` and ``offset-or-inlined-value`` take
2 bytes in the small formats (types 0x00, 0x02) and 4 bytes in the large ones
(0x01, 0x03); offsets are relative to the start of their object or array.

* :func:`parse_binary` gives a lazy :class:`JsonView` of a document (the bytes
  after the column's length prefix in a row image): its type, element count,
  elements, keys, a binary-search lookup by key and the raw bytes of any
  sub-document, each read only when asked for (WL#8132 ``json_binary::Value``).
* :func:`parse` turns a whole document into Python values: dict (keys in stored
  order), list, True, False, None, int, float, str, and :class:`Opaque` for
  custom data. It walks the same views, so both share every bounds check.
* :func:`to_text` prints a value as MySQL prints JSON (``SELECT json_col``).
* :func:`serialize` is the inverse of :func:`parse`, byte for byte what MySQL
  stores for the same document.

Details the worklog leaves to the code follow MySQL: ``sql-common/json_binary.cc``
(inlined values, bounds checks, the small-then-large retry), ``json_dom.cc``
(the text form, opaque DECIMAL and date/time values) and ``my_time.cc`` (the
packed date/time format).

Malformed input raises :class:`JsonBinaryError` with the byte offset and what
was expected there. Decoding is bounded: nesting is limited to MySQL's 100
levels, and value offsets that share or overlap bytes cannot make the output
larger than the input (each decoded element spends a budget of the document's
size). As in MySQL's ``parse_binary``, an empty document is the JSON null and
bytes after the document's value are not read.
"""

from __future__ import annotations

import base64
import math
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import NoReturn, Union

# WL#8132 ``type``.
SMALL_OBJECT = 0x00
LARGE_OBJECT = 0x01
SMALL_ARRAY = 0x02
LARGE_ARRAY = 0x03
LITERAL = 0x04
INT16 = 0x05
UINT16 = 0x06
INT32 = 0x07
UINT32 = 0x08
INT64 = 0x09
UINT64 = 0x0A
DOUBLE = 0x0B
STRING = 0x0C
OPAQUE = 0x0F

# WL#8132 ``literal``.
NULL_LITERAL = 0x00
TRUE_LITERAL = 0x01
FALSE_LITERAL = 0x02

# MySQL enum_field_types of the custom data json_dom.cc gives a meaning to.
MYSQL_TYPE_TIMESTAMP = 7
MYSQL_TYPE_DATE = 10
MYSQL_TYPE_TIME = 11
MYSQL_TYPE_DATETIME = 12
MYSQL_TYPE_NEWDECIMAL = 246
MYSQL_TYPE_VAR_STRING = 253

# JSON_DOCUMENT_MAX_DEPTH: objects and arrays nest at most this deep.
MAX_DEPTH = 100
# WL#8132 LIMITATIONS: a document is smaller than 4 GB, a key smaller than 64 KB.
MAX_DOCUMENT_SIZE = 0xFFFFFFFF
MAX_KEY_LENGTH = 0xFFFF

_CONTAINERS = {SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY}
_TYPES = _CONTAINERS | {LITERAL, INT16, UINT16, INT32, UINT32, INT64, UINT64, DOUBLE, STRING, OPAQUE}
_FIXED = {
    INT16: struct.Struct("<h"),
    UINT16: struct.Struct("<H"),
    INT32: struct.Struct("<i"),
    UINT32: struct.Struct("<I"),
    INT64: struct.Struct("<q"),
    UINT64: struct.Struct("<Q"),
    DOUBLE: struct.Struct("<d"),
}
_LITERALS = {NULL_LITERAL: None, TRUE_LITERAL: True, FALSE_LITERAL: False}
_U8 = struct.Struct("B")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_TEMPORAL = {
    MYSQL_TYPE_DATE: "DATE",
    MYSQL_TYPE_TIME: "TIME",
    MYSQL_TYPE_DATETIME: "DATETIME",
    MYSQL_TYPE_TIMESTAMP: "TIMESTAMP",
}
# Bytes decimal2bin uses for a group of 0..9 decimal digits (dig2bytes in decimal.cc).
DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_DIGITS_PER_WORD = 9


class JsonBinaryError(ValueError):
    """A binary JSON document is malformed: ``offset`` is the byte where, ``expected`` what should be there."""

    def __init__(self, offset: int, expected: str) -> None:
        super().__init__(f"binary JSON at byte {offset}: expected {expected}")
        self.offset = offset
        self.expected = expected


def _fail(offset: int, expected: str) -> NoReturn:
    raise JsonBinaryError(offset, expected)


@dataclass(frozen=True)
class MysqlTime:
    """A MYSQL_TIME as TIME_from_longlong_{time,date,datetime}_packed fills it (my_time.cc).

    ``field_type`` is MYSQL_TYPE_DATE, _TIME, _DATETIME or _TIMESTAMP; TIME uses
    the hour, minute, second and microsecond fields only.
    """

    field_type: int
    negative: bool
    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    microsecond: int

    def __str__(self) -> str:
        """MySQL's text, as ``my_TIME_to_str(t, 6)`` writes it for JSON (json_dom.cc wrapper_to_string)."""
        date = f"{self.year:04d}-{self.month:02d}-{self.day:02d}"
        if self.field_type == MYSQL_TYPE_DATE:
            return date
        clock = f"{self.hour:02d}:{self.minute:02d}:{self.second:02d}.{self.microsecond:06d}"
        if self.field_type == MYSQL_TYPE_TIME:
            return "-" + clock if self.negative else clock
        return f"{date} {clock}"


@dataclass(frozen=True)
class Opaque:
    """WL#8132 ``custom-data``: any MySQL value, as its field type and bytes."""

    field_type: int
    data: bytes

    def value(self) -> MysqlTime | Decimal | bytes:
        """DATE, TIME, DATETIME, TIMESTAMP as :class:`MysqlTime`; NEWDECIMAL as Decimal; the rest as bytes.

        Raises :class:`JsonBinaryError` (offsets counted in ``data``) when the bytes
        do not hold a value of the field type.
        """
        return _opaque_value(self.field_type, self.data, 0)


class JsonNull:
    """A JSON column whose whole document is the JSON null literal. Inside a document JSON null
    is ``None``; as a column's value ``None`` is SQL NULL, so the decoder of a JSON column
    (:mod:`binlog_codec.values`) gives :data:`JSON_NULL` for the null document, keeping the two
    apart. It prints as ``null`` and serializes as the null literal."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "JSON_NULL"


JSON_NULL = JsonNull()

JsonValue = Union[None, bool, int, float, str, Opaque, "list[JsonValue]", "dict[str, JsonValue]"]


# ---------------------------------------------------------------------------
# Lazy reading (json_binary.cc ``Value``)

# The document MySQL's parse_binary reads an empty document as: the null literal.
_NULL_DOCUMENT = bytes([LITERAL, NULL_LITERAL])
# Bytes of the scalars with a fixed width, and how they are read.
_SCALAR_LAYOUTS = {LITERAL: _U8, **_FIXED}


def parse_binary(document: bytes | bytearray | memoryview) -> JsonView:
    """A lazy view of one binary JSON document (WL#8132 ``parse_binary``).

    Only the type byte, and for an object or array its element count and size,
    are read now; nested values are read when asked for. ``document`` is not
    copied: a memoryview over a row image works, and error offsets count from
    its first byte. An empty document is the JSON null, as in MySQL.
    """
    if not isinstance(document, bytes):
        document = memoryview(document).cast("B")
    if not len(document):
        document = _NULL_DOCUMENT
    _check_type(document[0], 0)
    return JsonView(document, document[0], 1, len(document), 1)


def parse(data: bytes | bytearray | memoryview) -> JsonValue:
    """Decode one binary JSON document (WL#8132 ``doc ::= type value``) into Python values.

    The eager form of :func:`parse_binary`: ``parse_binary(data).to_python()``.
    """
    return parse_binary(data).to_python()


def _check_type(type_: int, at: int) -> None:
    if type_ not in _TYPES:
        _fail(at, f"a type byte 0x00-0x0c or 0x0f, got 0x{type_:02x}")


def _inlined(type_: int, large: bool) -> bool:
    """``offset-or-inlined-value`` holds the value itself: literals and [u]int16, and [u]int32 when large."""
    return type_ in (LITERAL, INT16, UINT16) or (large and type_ in (INT32, UINT32))


def _read(data: bytes, layout: struct.Struct, at: int, end: int, what: str) -> int:
    """The number ``layout`` reads at ``at``, which must fit before ``end``."""
    if at + layout.size > end:
        _fail(at, f"{what} ({layout.size} bytes), {max(end - at, 0)} bytes left")
    return layout.unpack_from(data, at)[0]


class JsonView:
    """One value inside a binary JSON document, read on demand (WL#8132 ``json_binary::Value``).

    Get one from :func:`parse_binary`. ``type`` is the WL#8132 type byte
    (:data:`SMALL_OBJECT` ... :data:`OPAQUE`). Objects and arrays offer
    ``len()``, :meth:`element`, and for objects :meth:`key` and :meth:`lookup`;
    every value offers :meth:`raw` and :meth:`to_python`.

    A view is checked when it is made: its bytes lie inside its container
    (objects and arrays: their counts, size and header; scalars: their width
    or data-length), and objects and arrays nest at most :data:`MAX_DEPTH`
    deep. Element and key entries are checked when read. What fails raises
    :class:`JsonBinaryError`.
    """

    # _start, _stop: the value's bytes after its type byte. Objects and arrays: _depth (their nesting),
    # _count, _large, _offset (how offsets and sizes are read: 2 or 4 bytes) and _header (bytes of the
    # counts and entries). Strings and custom data: _payload, where the bytes after the data-length start.
    __slots__ = ("_data", "type", "_start", "_stop", "_depth", "_count", "_large", "_offset", "_header", "_payload")

    def __init__(self, data: bytes | memoryview, type_: int, start: int, end: int, depth: int) -> None:
        """The value of ``type_`` whose bytes start at ``start`` and lie before ``end``.

        ``depth`` is the nesting level an object or array here would have (1 at the top).
        """
        self._data = data
        self.type = type_
        self._start = start
        self._depth = depth
        if type_ in _CONTAINERS:
            self._read_header(end)
        else:
            self._stop, self._payload = self._scalar_extent(end)

    def _read_header(self, end: int) -> None:
        """WL#8132 ``element-count size``, checked: the size fits ``end``, the entries fit the size."""
        start, data = self._start, self._data
        if self._depth > MAX_DEPTH:
            _fail(start, f"objects and arrays nested at most {MAX_DEPTH} deep")
        self._large = large = self.type in (LARGE_OBJECT, LARGE_ARRAY)
        self._offset = layout = _U32 if large else _U16
        self._count = count = _read(data, layout, start, end, "element-count")
        size = _read(data, layout, start + layout.size, end, "size")
        if size > end - start:
            _fail(start + layout.size, f"a size within the {end - start} bytes left, got {size}")
        key_entries = count * (layout.size + 2) if self.is_object else 0
        self._header = 2 * layout.size + key_entries + count * (1 + layout.size)
        if self._header > size:
            _fail(start, f"an element-count whose entries fit in size {size}, got {count}")
        self._stop = start + size

    def _scalar_extent(self, end: int) -> tuple[int, int]:
        """Where the scalar's bytes stop, and where its string or custom data starts."""
        data, start = self._data, self._start
        if self.type == STRING:
            length, at = _counted(data, start, end)
            return at + length, at
        if self.type == OPAQUE:
            _read(data, _U8, start, end, "custom-type")
            length, at = _counted(data, start + 1, end)
            return at + length, at
        layout = _SCALAR_LAYOUTS[self.type]
        _read(data, layout, start, end, "literal" if self.type == LITERAL else "number")
        return start + layout.size, start

    # -- objects and arrays --------------------------------------------------

    @property
    def is_object(self) -> bool:
        return self.type in (SMALL_OBJECT, LARGE_OBJECT)

    @property
    def is_array(self) -> bool:
        return self.type in (SMALL_ARRAY, LARGE_ARRAY)

    @property
    def element_count(self) -> int:
        """WL#8132 ``element-count``: members of an object, elements of an array."""
        if self.type not in _CONTAINERS:
            raise TypeError(f"a JSON scalar (type 0x{self.type:02x}) has no elements")
        return self._count

    def __len__(self) -> int:
        return self.element_count

    def element(self, index: int) -> JsonView:
        """The ``index``-th element of an array, or value of an object (in key order)."""
        if not 0 <= index < self.element_count:
            raise IndexError(f"element {index} of a JSON {'object' if self.is_object else 'array'} of {self._count}")
        return self._element(index)

    def key(self, index: int) -> str:
        """The ``index``-th key of an object (keys are stored by length, then bytewise)."""
        if not 0 <= index < self._object_count():
            raise IndexError(f"key {index} of a JSON object of {self._count}")
        at, length = self._key_entry(index)
        return _utf8(self._data, at, length, "key")

    def lookup(self, key: str) -> JsonView | None:
        """The value of ``key`` in an object, or None: a binary search on the key entries.

        Keys are ordered by length first, so most probes compare only the
        key-length of an entry (json_binary.cc ``Value::lookup_index``).
        """
        wanted = key.encode("utf-8")
        low, high = 0, self._object_count()
        while low < high:
            middle = (low + high) // 2
            at, length = self._key_entry(middle)
            if length == len(wanted):
                stored = bytes(self._data[at : at + length])
                if stored == wanted:
                    return self._element(middle)
                before = stored < wanted
            else:
                before = length < len(wanted)
            if before:
                low = middle + 1
            else:
                high = middle
        return None

    def _object_count(self) -> int:
        if not self.is_object:
            raise TypeError(f"keys belong to JSON objects, not type 0x{self.type:02x}")
        return self._count

    def _element(self, index: int) -> JsonView:
        """WL#8132 ``value-entry ::= type offset-or-inlined-value`` of an element that exists.

        An inlined value lies in the entry; any other at an offset past the
        header and inside this object or array.
        """
        data, start, offset_layout = self._data, self._start, self._offset
        entry = start + self._header - (self._count - index) * (1 + offset_layout.size)
        type_ = data[entry]
        _check_type(type_, entry)
        if _inlined(type_, self._large):
            return JsonView(data, type_, entry + 1, entry + 1 + offset_layout.size, self._depth + 1)
        offset = offset_layout.unpack_from(data, entry + 1)[0]
        if not self._header <= offset < self._stop - start:
            _fail(entry + 1, f"a value offset in [{self._header}, {self._stop - start}), got {offset}")
        return JsonView(data, type_, start + offset, self._stop, self._depth + 1)

    def _key_entry(self, index: int) -> tuple[int, int]:
        """WL#8132 ``key-entry ::= key-offset key-length`` of a member that exists: the key's start and length.

        The key lies past the header and inside the object.
        """
        entry = self._key_entry_position(index)
        offset = self._offset.unpack_from(self._data, entry)[0]
        length = _U16.unpack_from(self._data, entry + self._offset.size)[0]
        if offset < self._header or offset + length > self._stop - self._start:
            _fail(entry, f"a key within [{self._header}, {self._stop - self._start}), got {length} bytes at {offset}")
        return self._start + offset, length

    def _key_entry_position(self, index: int) -> int:
        return self._start + 2 * self._offset.size + index * (self._offset.size + 2)

    # -- any value -----------------------------------------------------------

    def raw(self) -> bytes:
        """This value as a standalone binary document: its type byte, then its bytes.

        Offsets inside a document are relative to their object or array, so
        the bytes of a nested value parse on their own (WL#8132).
        """
        return bytes([self.type]) + bytes(self._data[self._start : self._stop])

    def to_python(self) -> JsonValue:
        """The value as dict (keys in stored order), list, None, bool, int, float, str or :class:`Opaque`.

        Raises :class:`JsonBinaryError` for anything malformed below this value.
        """
        return _Decoder(self._stop - self._start + 1).value(self)

    def _scalar(self) -> JsonValue:
        """WL#8132 ``literal``, ``number``, ``string`` or ``custom-data``, from the checked extent."""
        data, type_ = self._data, self.type
        if type_ == STRING:
            return _utf8(data, self._payload, self._stop - self._payload, "string")
        if type_ == OPAQUE:
            opaque = Opaque(data[self._start], bytes(data[self._payload : self._stop]))
            _opaque_value(opaque.field_type, opaque.data, self._payload)
            return opaque
        number = _SCALAR_LAYOUTS[type_].unpack_from(data, self._start)[0]
        if type_ == LITERAL:
            if number not in _LITERALS:
                _fail(self._start, f"literal 0x00 (null), 0x01 (true) or 0x02 (false), got 0x{number:02x}")
            return _LITERALS[number]
        if type_ == DOUBLE and not math.isfinite(number):
            _fail(self._start, f"a finite double, got {number}")
        return number

    def __repr__(self) -> str:
        return f"JsonView(type=0x{self.type:02x}, bytes {self._start - 1}..{self._stop})"


class _Decoder:
    """Turns a view into Python values, within a budget of the view's size.

    Each element spends 1 plus its key and string or custom data bytes. A
    document whose values own their bytes (as every serialized one does) never
    spends more than its size; one whose offsets share bytes would, and is refused.
    """

    def __init__(self, budget: int) -> None:
        self.size = self.budget = budget

    def charge(self, at: int, amount: int) -> None:
        self.budget -= amount
        if self.budget < 0:
            _fail(at, f"values that do not share bytes: decoding exceeds the document's {self.size} bytes")

    def value(self, view: JsonView) -> JsonValue:
        if view.type not in _CONTAINERS:
            return view._scalar()
        if view.is_array:
            return [self.element(view, index) for index in range(view._count)]
        return self.members(view)

    def element(self, view: JsonView, index: int) -> JsonValue:
        child = view._element(index)
        self.charge(child._start, 1 + (child._stop - child._payload if child.type in (STRING, OPAQUE) else 0))
        return self.value(child)

    def members(self, view: JsonView) -> dict:
        """The object's members in stored order; a key stored twice is malformed."""
        members: dict[str, JsonValue] = {}
        for index in range(view._count):
            at, length = view._key_entry(index)
            self.charge(at, length)
            key = _utf8(view._data, at, length, "key")
            if key in members:
                _fail(view._key_entry_position(index), f"distinct keys, got {key!r} twice")
            members[key] = self.element(view, index)
        return members


def _utf8(data: bytes | memoryview, at: int, length: int, what: str) -> str:
    try:
        return str(data[at : at + length], "utf-8")
    except UnicodeDecodeError as exc:
        _fail(at + exc.start, f"utf8mb4 {what} data")


def _counted(data: bytes | memoryview, start: int, end: int) -> tuple[int, int]:
    """A ``data-length`` and the bytes it counts, before ``end``: returns the length and where they start."""
    length, width = _data_length_at(data, start, end)
    at = start + width
    if length > end - at:
        _fail(start, f"a data-length within the {end - at} bytes left, got {length}")
    return length, at


def _data_length_at(data: bytes | memoryview, start: int, end: int) -> tuple[int, int]:
    """WL#8132 ``data-length ::= uint8*``: 7 bits a byte, low bits first, high bit set = continued.

    At most 5 bytes and below 4 GB (json_binary.cc ``read_variable_length``).
    """
    length = 0
    for index in range(5):
        at = start + index
        if at >= end:
            _fail(at, "another data-length byte, the document ends")
        length |= (data[at] & 0x7F) << (7 * index)
        if not data[at] & 0x80:
            if length > 0xFFFFFFFF:
                _fail(start, f"a data-length below 4 GB, got {length}")
            return length, index + 1
    _fail(start, "a data-length of at most 5 bytes")


def _opaque_value(field_type: int, data: bytes, offset: int) -> MysqlTime | Decimal | bytes:
    """Interpret custom data as json_dom.cc ``json_binary_to_dom_template`` does."""
    if field_type in _TEMPORAL:
        return _temporal(field_type, data, offset)
    if field_type == MYSQL_TYPE_NEWDECIMAL:
        return _decimal(data, offset)
    return data


def _temporal(field_type: int, data: bytes, offset: int) -> MysqlTime:
    """The packed 8-byte longlong of ``TIME_to_longlong_packed`` (my_time.cc).

    Its low 24 bits are the microseconds, the rest: hour << 12 | minute << 6 | second
    for TIME, ((year * 13 + month) << 5 | day) << 17 | hour << 12 | minute << 6 | second
    for the others; negative values are negated.
    """
    if len(data) != 8:
        _fail(offset, f"8 bytes of packed {_TEMPORAL[field_type]}, got {len(data)}")
    packed = int.from_bytes(data, "little", signed=True)
    whole, microsecond = divmod(abs(packed), 1 << 24)
    if field_type == MYSQL_TYPE_TIME:
        hour = (whole >> 12) % (1 << 10)
        return MysqlTime(field_type, packed < 0, 0, 0, 0, hour, (whole >> 6) % 64, whole % 64, microsecond)
    ymd, hms = whole >> 17, whole % (1 << 17)
    year, month = divmod(ymd >> 5, 13)
    return MysqlTime(field_type, packed < 0, year, month, ymd % 32, hms >> 12, (hms >> 6) % 64, hms % 64, microsecond)


def _decimal(data: bytes, offset: int) -> Decimal:
    """A JSON DECIMAL: precision byte, scale byte, then MySQL's ``decimal2bin`` (json_dom.cc Json_decimal).

    ``decimal2bin`` writes big-endian groups of up to 9 digits (integer part:
    leading partial group first; fraction: trailing partial group last), flips
    the top bit of the first byte, and inverts every byte of a negative value.
    """
    if len(data) < 2:
        _fail(offset, f"a DECIMAL's precision and scale bytes, got {len(data)} bytes")
    precision, scale = data[0], data[1]
    if not (1 <= precision <= 65 and scale <= min(precision, 30)):
        _fail(offset, f"DECIMAL precision 1-65 and scale 0-30 within it, got ({precision}, {scale})")
    integer_groups = _digit_groups(precision - scale)
    groups = integer_groups + _digit_groups(scale)[::-1]
    widths = [DIG2BYTES[digits] for digits in groups]
    if sum(widths) != len(data) - 2:
        _fail(offset, f"{sum(widths) + 2} bytes of DECIMAL({precision},{scale}), got {len(data)}")
    raw = bytearray(data[2:])
    negative = not raw[0] & 0x80
    raw[0] ^= 0x80
    if negative:
        raw = bytearray(byte ^ 0xFF for byte in raw)
    text, at = [], 0
    for digits, width in zip(groups, widths):
        group = int.from_bytes(raw[at : at + width], "big")
        if group >= 10**digits:
            _fail(offset + 2 + at, f"a group of {digits} decimal digits, got {group}")
        text.append(f"{group:0{digits}d}")
        at += width
    split = len(integer_groups)
    integer, fraction = "".join(text[:split]) or "0", "".join(text[split:])
    return Decimal(("-" if negative else "") + integer + ("." + fraction if scale else ""))


def _digit_groups(digits: int) -> list[int]:
    """Digits per group of an integer part, most significant first: the partial group, then nines."""
    whole, partial = divmod(digits, _DIGITS_PER_WORD)
    return ([partial] if partial else []) + [_DIGITS_PER_WORD] * whole


# ---------------------------------------------------------------------------
# Text form


def to_text(value: JsonValue) -> str:
    """``value`` as MySQL prints JSON (json_dom.cc ``Json_wrapper::to_string``).

    Members print in MySQL's key order (WL#8132: by length, then bytewise),
    separated by ``", "``, keys followed by ``": "``.
    """
    return _text(value, 0)


def _check_depth(depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"JSON objects and arrays nest at most {MAX_DEPTH} deep")


def _text(value: JsonValue, depth: int) -> str:
    if value is None or value is JSON_NULL:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _double_text(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, Opaque):
        return _opaque_text(value)
    _check_depth(depth + 1)
    if isinstance(value, list):
        return "[" + ", ".join(_text(item, depth + 1) for item in value) + "]"
    if isinstance(value, dict):
        members = sorted(value.items(), key=lambda member: _key_order(_key_bytes(member[0])))
        return "{" + ", ".join(f"{_quote(key)}: {_text(item, depth + 1)}" for key, item in members) + "}"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _quote(text: str) -> str:
    """json_dom.cc ``double_quote``: \\" \\\\ \\b \\f \\n \\r \\t, other controls as \\u00xx, the rest as is."""
    return '"' + "".join(_ESCAPES.get(char, f"\\u{ord(char):04x}" if char < " " else char) for char in text) + '"'


def _double_text(value: float) -> str:
    """``my_gcvt(d, MY_GCVT_ARG_DOUBLE, 34)`` plus ".0" when it wrote neither '.' nor 'e' (json_dom.cc).

    my_gcvt takes dtoa's shortest round-trip digits (value = 0.DIGITS * 10**point)
    and writes them plainly when -14 <= point <= 15 or the point falls inside
    the digits, otherwise as d.ddd, 'e' and the exponent (no '+', no padding).
    """
    if not math.isfinite(value):
        raise ValueError(f"JSON has no {value} double")
    digits, point = _shortest_digits(value)
    if -14 <= point <= 15 or 0 < point < len(digits):
        if point <= 0:
            body = "0." + "0" * -point + digits
        elif point < len(digits):
            body = digits[:point] + "." + digits[point:]
        else:
            body = digits + "0" * (point - len(digits))
    else:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "") + f"e{point - 1}"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    return sign + body + ("" if "." in body or "e" in body else ".0")


def _shortest_digits(value: float) -> tuple[str, int]:
    """dtoa's shortest digits of |value| and its decimal point: value = 0.DIGITS * 10**point."""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    combined = whole + fraction
    digits = combined.lstrip("0")
    point = len(whole) + int(exponent or 0) - (len(combined) - len(digits))
    return (digits.rstrip("0"), point) if digits else ("0", 1)


def _opaque_text(opaque: Opaque) -> str:
    """Dates and times quoted, decimals as numbers, VAR_STRING as a string, the rest as base64 (json_dom.cc)."""
    value = opaque.value()
    if isinstance(value, MysqlTime):
        return f'"{value}"'
    if isinstance(value, Decimal):
        return format(value, "f")
    if opaque.field_type == MYSQL_TYPE_VAR_STRING:
        return _quote(value.decode("utf-8", "replace"))
    encoded = base64.b64encode(value).decode("ascii")
    lines = "\n".join(encoded[at : at + 76] for at in range(0, len(encoded), 76))
    return _quote(f"base64:type{opaque.field_type}:{lines}")


# ---------------------------------------------------------------------------
# Encoding


class _ValueTooBig(Exception):
    """An offset or size does not fit the format being tried (json_binary.cc VALUE_TOO_BIG)."""


def serialize(value: JsonValue) -> bytes:
    """The binary document MySQL stores for ``value`` (json_binary.cc ``serialize``).

    Python ints are MySQL signed integers (int16, int32 or int64 by size),
    and uint64 above the int64 range, as in a document built from SQL values
    (MySQL's JSON text parser instead stores positive integers above
    2**32 - 1 as uint64); floats are doubles. Raises ValueError for
    what MySQL refuses: non-finite doubles, integers outside int64/uint64,
    keys of 64 KB or more, nesting deeper than 100, documents of 4 GB or more;
    TypeError for values that are not JSON.
    """
    if value is JSON_NULL:
        value = None
    try:
        type_, body = _encode(value, 0, small_parent=False)
    except _ValueTooBig:
        raise ValueError("JSON document of 4 GB or more (WL#8132 LIMITATIONS)") from None
    check_document_size(1 + len(body))
    return bytes([type_]) + body


def check_document_size(size: int) -> None:
    """Raise ValueError for a document of ``size`` bytes: 4 GB or more (WL#8132 LIMITATIONS).

    Offsets and sizes inside a large object or array take 4 bytes; a document
    that big could not be stored in a LONGBLOB either.
    """
    if size > MAX_DOCUMENT_SIZE:
        raise ValueError(f"JSON document of {size} bytes: 4 GB or more (WL#8132 LIMITATIONS)")


def _encode(value: JsonValue, depth: int, small_parent: bool) -> tuple[int, bytes]:
    """The type and bytes of ``value`` (json_binary.cc ``serialize_json_value``)."""
    if isinstance(value, (dict, list)):
        return _encode_container(value, depth + 1, small_parent)
    return _encode_scalar(value)


def _encode_container(value: dict | list, depth: int, small_parent: bool) -> tuple[int, bytes]:
    """Small format first; large when an offset or size outgrows 2 bytes (WL#8132 "Serialization").

    A container inside a small one must be small too: its overflow restarts
    the parent in the large format.
    """
    _check_depth(depth)
    small, large = (SMALL_OBJECT, LARGE_OBJECT) if isinstance(value, dict) else (SMALL_ARRAY, LARGE_ARRAY)
    try:
        return small, _container_body(value, False, depth)
    except _ValueTooBig:
        if small_parent:
            raise
    return large, _container_body(value, True, depth)


def _key_order(key: bytes) -> tuple[int, bytes]:
    """WL#8132: keys sorted on length, then bytewise (json_dom.cc ``json_key_less``)."""
    return len(key), key


def _fits(offset_or_size: int, large: bool) -> int:
    """``offset_or_size`` if it fits 2 bytes (small format) or 4 (large), else :class:`_ValueTooBig`."""
    if offset_or_size > (MAX_DOCUMENT_SIZE if large else 0xFFFF):
        raise _ValueTooBig
    return offset_or_size


def _container_body(value: dict | list, large: bool, depth: int) -> bytes:
    """WL#8132 ``object`` or ``array`` without its type byte, in one format."""
    layout = _U32 if large else _U16
    if isinstance(value, dict):
        members = sorted(((_key_bytes(key), item) for key, item in value.items()), key=lambda m: _key_order(m[0]))
        keys, items = [key for key, _ in members], [item for _, item in members]
    else:
        keys, items = [], value
    entry_size = 1 + layout.size
    header = 2 * layout.size + len(keys) * (layout.size + 2) + len(items) * entry_size
    body = bytearray(header)
    layout.pack_into(body, 0, _fits(len(items), large))
    _key_entries(body, keys, layout, large)
    for index, item in enumerate(items):
        _value_entry(body, header - (len(items) - index) * entry_size, item, layout, large, depth)
    layout.pack_into(body, layout.size, _fits(len(body), large))
    return bytes(body)


def _key_bytes(key: str) -> bytes:
    if not isinstance(key, str):
        raise TypeError(f"JSON object keys are str, got {type(key).__name__}")
    encoded = key.encode("utf-8")
    if len(encoded) > MAX_KEY_LENGTH:
        raise ValueError(f"JSON object key of {len(encoded)} bytes: key-length is 2 bytes (WL#8132 LIMITATIONS)")
    return encoded


def _key_entries(body: bytearray, keys: list[bytes], layout: struct.Struct, large: bool) -> None:
    """WL#8132 ``key-entry*`` then ``key*``: the keys follow the value entries."""
    offset = len(body)
    for index, key in enumerate(keys):
        entry = 2 * layout.size + index * (layout.size + 2)
        layout.pack_into(body, entry, _fits(offset, large))
        _U16.pack_into(body, entry + layout.size, len(key))
        offset += len(key)
    body += b"".join(keys)


def _value_entry(body: bytearray, entry: int, item: JsonValue, layout: struct.Struct, large: bool, depth: int) -> None:
    """WL#8132 ``value-entry``: the value inlined (``attempt_inline_value``), or appended at an offset."""
    inlined = _inline(item, large)
    if inlined is not None:
        body[entry] = inlined[0]
        layout.pack_into(body, entry + 1, inlined[1] & (0xFFFFFFFF if large else 0xFFFF))
        return
    offset = _fits(len(body), large)
    type_, data = _encode(item, depth, small_parent=not large)
    body[entry] = type_
    layout.pack_into(body, entry + 1, offset)
    body += data


def _inline(item: JsonValue, large: bool) -> tuple[int, int] | None:
    """The type and value of an inlined ``offset-or-inlined-value``, or None when stored at an offset."""
    if item is None:
        return LITERAL, NULL_LITERAL
    if isinstance(item, bool):
        return LITERAL, TRUE_LITERAL if item else FALSE_LITERAL
    if isinstance(item, int) and -(1 << 15) <= item < 1 << 15:
        return INT16, item
    if large and isinstance(item, int) and -(1 << 31) <= item < 1 << 31:
        return INT32, item
    return None


def _encode_scalar(value: JsonValue) -> tuple[int, bytes]:
    """WL#8132 ``literal``, ``number``, ``string`` or ``custom-data``."""
    if value is None or isinstance(value, bool):
        type_, literal = _inline(value, False)
        return type_, bytes([literal])
    if isinstance(value, int):
        return _encode_int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"JSON has no {value} double")
        return DOUBLE, _FIXED[DOUBLE].pack(value)
    if isinstance(value, str):
        data = value.encode("utf-8")
        return STRING, _data_length(len(data)) + data
    if isinstance(value, Opaque):
        return OPAQUE, bytes([value.field_type]) + _data_length(len(value.data)) + value.data
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def _encode_int(value: int) -> tuple[int, bytes]:
    """The narrowest of int16, int32, int64 (Json_int), uint64 above (Json_uint)."""
    for type_ in (INT16, INT32, INT64, UINT64):
        try:
            return type_, _FIXED[type_].pack(value)
        except struct.error:
            continue
    raise ValueError(f"JSON integers are int64 or uint64, got {value}")


def _data_length(length: int) -> bytes:
    """WL#8132 ``data-length``: 7 bits a byte, low bits first, high bit set when more follow."""
    out = bytearray()
    while True:
        length, low = length >> 7, length & 0x7F
        out.append(low | (0x80 if length else 0))
        if not length:
            return bytes(out)
