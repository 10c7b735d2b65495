"""Partial JSON updates (WL#2955): decode, encode, apply and print JSON diff vectors.

With ``binlog_row_value_options=PARTIAL_JSON`` a MySQL 8 server logs updates as
PARTIAL_UPDATE_ROWS_EVENT, whose after-image may carry, for a JSON column, the
changes made to the document instead of the whole document (WL#2955 F3)::

    vector ::= length diff*           (length: the column's pack length, 4 bytes)
    diff   ::= operation path-length path [value-length value]

``operation`` is one byte (REPLACE=0, INSERT=1, REMOVE=2); ``path-length`` and
``value-length`` are packed integers (``net_field_length``); ``path`` is a JSON
path in MySQL's text form (``$.a."b c"[2]``); ``value`` is a binary JSON
document (WL#8132) and is absent exactly for REMOVE. The row decoder
(:mod:`binlog_codec.rows`) keeps each column's diffs as bytes, without the
length; this module makes sense of them:

* :func:`decode_diffs` and :func:`encode_diffs` read and write the bytes;
* :func:`parse_path` and :func:`format_path` read and write JSON paths;
* :func:`apply` applies diffs to a document as a replica does
  (``apply_json_diffs`` in MySQL's ``sql/json_diff.cc``);
* :func:`render` prints them as ``mysqlbinlog -v`` does (WL#2955 section 6,
  ``print_json_diff`` in ``sql/log_event.cc``).

Errors are :class:`JsonDiffError` (a :class:`~binlog_codec.errors.BinlogError`)
naming the column and the diff's index in its vector; malformed bytes are the
subclass :class:`CorruptJsonDiffError`, also a
:class:`~binlog_codec.errors.CorruptEventError`. Callers that know the event
add its location with :meth:`JsonDiffError.located`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Callable, NamedTuple, Union

from . import json_binary
from .errors import BinlogError, CorruptEventError
from .json_binary import JsonValue
from .wire import Cursor, ShortBody, pack_int

log = logging.getLogger(__name__)

REPLACE = "REPLACE"
INSERT = "INSERT"
REMOVE = "REMOVE"
# enum_json_diff_operation: the byte that encodes an operation is its index here.
OPERATIONS = (REPLACE, INSERT, REMOVE)

# Array indexes in paths are 32-bit (json_path.cc parse_array_index).
_MAX_ARRAY_INDEX = 0xFFFFFFFF


# ---------------------------------------------------------------------------
# Errors


class JsonDiffError(BinlogError):
    """A JSON diff vector could not be read or applied.

    ``column`` is the column the vector belongs to and ``diff_index`` the
    0-based place of the offending diff in it, when known.
    """

    def __init__(self, message: str, *, column: str | None = None, diff_index: int | None = None) -> None:
        where = []
        if column is not None:
            where.append(f"column {column}")
        if diff_index is not None:
            where.append(f"JSON diff {diff_index}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)
        self.column = column
        self.diff_index = diff_index

    def located(
        self, *, file: str | None, position: int | None, event_type: str | None, inner_offset: int | None = None
    ) -> JsonDiffError:
        """This error, placed at the rows event it came from (see :class:`~binlog_codec.errors.BinlogError`)."""
        self.file, self.position, self.event_type, self.inner_offset = file, position, event_type, inner_offset
        return self


class CorruptJsonDiffError(JsonDiffError, CorruptEventError):
    """The bytes of a JSON diff vector do not follow WL#2955 F3 (MySQL's ER_CORRUPTED_JSON_DIFF)."""


class JsonPathError(ValueError):
    """A JSON path that is not one a JSON diff can hold: ``offset`` is where in ``text`` it went wrong."""

    def __init__(self, text: str, offset: int, reason: str) -> None:
        super().__init__(f"invalid JSON path {text!r} at character {offset}: {reason}")
        self.text = text
        self.offset = offset
        self.reason = reason


# ---------------------------------------------------------------------------
# Diffs and paths


@dataclass(frozen=True)
class JsonDiff:
    """One change to a JSON document: ``operation`` (REPLACE, INSERT or REMOVE) at ``path``
    (MySQL's text form, as logged), with the new ``value`` (None for REMOVE)."""

    operation: str
    path: str
    value: JsonValue = None

    def __post_init__(self) -> None:
        if self.operation not in OPERATIONS:
            raise ValueError(f"JSON diff operation must be one of {', '.join(OPERATIONS)}, got {self.operation!r}")
        if self.operation == REMOVE and self.value is not None:
            raise ValueError("a REMOVE JSON diff has no value")


class Member(NamedTuple):
    """Path leg ``.name``: the member ``name`` of an object."""

    name: str


class Cell(NamedTuple):
    """Path leg ``[index]``, or ``[last-index]`` when ``from_end``: one element of an array."""

    index: int
    from_end: bool = False

    def position(self, size: int) -> tuple[int, bool]:
        """Where this leg points in an array of ``size`` elements, and whether that is an element.

        Outside the array, the position is clamped to 0 or ``size`` (json_path.h ``Json_array_index``).
        """
        inside = self.index < size
        if self.from_end:
            return (size - 1 - self.index if inside else 0), inside
        return min(self.index, size), inside


Leg = Union[Member, Cell]

_WHITESPACE = " \t\n\v\f\r"
_MEMBER_END = _WHITESPACE + "[.*"
_CONNECTOR_PUNCTUATION = frozenset("_\u203f\u2040\u2054\ufe33\ufe34\ufe4d\ufe4e\ufe4f\uff3f")
_JOINERS = frozenset("\u200c\u200d")


def parse_path(text: str) -> list[Leg]:
    """The legs of a JSON path as MySQL writes them in diffs (json_path.cc ``parse_path``).

    ``$`` followed by member legs (``.name``, or ``."any name"`` with JSON
    escapes) and array legs (``[3]``, ``[last]``, ``[last-2]``), whitespace
    allowed between tokens. Wildcards (``.*``, ``[*]``, ``**``) and ranges
    (``[1 to 3]``) select many values, which no diff does: they are refused,
    like anything else, with :class:`JsonPathError`.
    """
    return _PathParser(text).path()


class _PathParser:
    """A cursor over a path's text, one method per grammar rule."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def fail(self, reason: str) -> JsonPathError:
        return JsonPathError(self.text, self.at, reason)

    def peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def skip_whitespace(self) -> None:
        while self.peek() and self.peek() in _WHITESPACE:
            self.at += 1

    def expect(self, char: str) -> None:
        self.skip_whitespace()
        if self.peek() != char:
            raise self.fail(f"expected {char!r}")
        self.at += 1

    def path(self) -> list[Leg]:
        self.expect("$")
        legs: list[Leg] = []
        self.skip_whitespace()
        while self.peek():
            legs.append(self.leg())
            self.skip_whitespace()
        return legs

    def leg(self) -> Leg:
        char = self.peek()
        if char == "[":
            return self.cell()
        if char == ".":
            return self.member()
        if char == "*":
            raise self.fail("'**' matches many values; a JSON diff path names one")
        raise self.fail("expected '.' or '['")

    def cell(self) -> Cell:
        self.at += 1  # [
        self.skip_whitespace()
        if self.peek() == "*":
            raise self.fail("'[*]' matches many values; a JSON diff path names one")
        index, from_end = self.array_index()
        self.skip_whitespace()
        if self.text.startswith("to", self.at) and self.text[self.at - 1] in _WHITESPACE:
            raise self.fail("a range matches many values; a JSON diff path names one")
        self.expect("]")
        return Cell(index, from_end)

    def array_index(self) -> tuple[int, bool]:
        from_end = self.text.startswith("last", self.at)
        if from_end:
            self.at += 4
            self.skip_whitespace()
            if self.peek() != "-":
                return 0, True
            self.at += 1
            self.skip_whitespace()
        start = self.at
        while self.peek() and self.peek() in "0123456789":
            self.at += 1
        if start == self.at:
            raise self.fail("expected an array index: digits, 'last' or 'last-N'")
        index = int(self.text[start : self.at])
        if index > _MAX_ARRAY_INDEX:
            raise self.fail(f"array index {index} is above {_MAX_ARRAY_INDEX}")
        return index, from_end

    def member(self) -> Member:
        self.at += 1  # .
        self.skip_whitespace()
        if self.peek() == "*":
            raise self.fail("'.*' matches many values; a JSON diff path names one")
        start = self.at
        if self.peek() == '"':
            self.at = self.quoted_end()
            return Member(self.member_name(self.text[start : self.at], start))
        while self.peek() and self.peek() not in _MEMBER_END:
            self.at += 1
        name = self.member_name(f'"{self.text[start:self.at]}"', start)
        if not is_ecmascript_identifier(name):
            raise JsonPathError(self.text, start, f"{name!r} must be double-quoted: it is not an identifier")
        return Member(name)

    def quoted_end(self) -> int:
        """The position after the closing quote of the quoted name starting here (end of text if none)."""
        at = self.at + 1
        while at < len(self.text):
            char = self.text[at]
            at += 2 if char == "\\" else 1
            if char == '"':
                return at
        return len(self.text)

    def member_name(self, quoted: str, start: int) -> str:
        """The name a JSON string literal spells, escapes resolved (MySQL runs it through its JSON parser)."""
        try:
            name = json.loads(quoted)
        except ValueError as exc:
            raise JsonPathError(self.text, start, f"member name {quoted} is not a JSON string: {exc}") from None
        if not isinstance(name, str):
            raise JsonPathError(self.text, start, f"member name {quoted} is not a JSON string")
        return name


def is_ecmascript_identifier(name: str) -> bool:
    """Whether a member name can go unquoted in a path (ECMAScript 5 IdentifierName, json_path.cc).

    Letters, ``$`` and ``_`` anywhere; after the first character also digits,
    combining marks (U+0300 to U+036F), connector punctuation, ZWNJ and ZWJ.
    """
    if not name:
        return False
    for position, char in enumerate(name):
        combining = "\u0300" <= char <= "\u036f"
        if (char.isalpha() and not combining) or char in "$_":
            continue
        if position == 0:
            return False
        if not (combining or char.isdecimal() or char in _CONNECTOR_PUNCTUATION or char in _JOINERS):
            return False
    return True


def format_path(legs: list[Leg]) -> str:
    """A path's text as MySQL writes it (json_path.cc ``Json_path::to_string``); inverse of :func:`parse_path`."""
    parts = ["$"]
    for leg in legs:
        if isinstance(leg, Member):
            parts.append("." + (leg.name if is_ecmascript_identifier(leg.name) else json_binary.to_text(leg.name)))
        elif leg.from_end:
            parts.append(f"[last-{leg.index}]" if leg.index else "[last]")
        else:
            parts.append(f"[{leg.index}]")
    return "".join(parts)


# ---------------------------------------------------------------------------
# Binary form


def decode_diffs(data: bytes, *, column: str | None = None, pack_length: int | None = None) -> list[JsonDiff]:
    """The diffs of one column's diff vector (WL#2955 F3).

    ``data`` is the vector as :class:`~binlog_codec.rows.RowChange` keeps it:
    the diffs, without the length. With ``pack_length`` (the column's, 4 for
    JSON), ``data`` starts with that many bytes of little-endian length, as in
    a row image, and the length must be exactly the size of what follows.
    Every length is checked against the bytes left and every path parsed;
    anything wrong raises :class:`CorruptJsonDiffError` naming ``column`` and
    the diff.
    """
    cursor = Cursor(bytes(data))
    if pack_length is not None:
        _check_declared_length(cursor, pack_length, column)
    diffs: list[JsonDiff] = []
    while cursor.remaining:
        diffs.append(_decode_diff(cursor, column, len(diffs)))
    log.debug("column %s: %d JSON diffs in %d bytes", column, len(diffs), len(data))
    return diffs


def _check_declared_length(cursor: Cursor, pack_length: int, column: str | None) -> None:
    try:
        declared = cursor.uint(pack_length, "diff vector length")
    except ShortBody as exc:
        raise CorruptJsonDiffError(str(exc), column=column) from None
    if declared != cursor.remaining:
        raise CorruptJsonDiffError(
            f"diff vector declares {declared} bytes after its {pack_length}-byte length, holds {cursor.remaining}",
            column=column,
        )


def _decode_diff(cursor: Cursor, column: str | None, index: int) -> JsonDiff:
    """One diff at the cursor: ``operation path-length path [value-length value]``."""
    start = cursor.pos
    try:
        code = cursor.u8("operation")
        if code >= len(OPERATIONS):
            raise CorruptJsonDiffError(
                f"diff at byte {start}: unknown operation {code} (REPLACE=0, INSERT=1, REMOVE=2)",
                column=column, diff_index=index,
            )
        operation = OPERATIONS[code]
        path = cursor.take(cursor.packed_int("path length"), "path").decode("utf-8")
        parse_path(path)
        if operation == REMOVE:
            return JsonDiff(operation, path)
        value = json_binary.parse(cursor.take(cursor.packed_int("value length"), "value"))
    except (ShortBody, UnicodeDecodeError, JsonPathError, json_binary.JsonBinaryError) as exc:
        raise CorruptJsonDiffError(f"diff at byte {start}: {exc}", column=column, diff_index=index) from None
    return JsonDiff(operation, path, value)


def encode_diffs(diffs: list[JsonDiff], *, pack_length: int | None = None) -> bytes:
    """The bytes of a diff vector, as MySQL writes them (``Json_diff_vector::write_binary``).

    Inverse of :func:`decode_diffs`: with ``pack_length`` the vector starts with
    its length in that many bytes. Raises ValueError for an invalid path, a
    value :func:`~binlog_codec.json_binary.serialize` refuses, or a vector too
    long for its length prefix.
    """
    body = b"".join(_encode_diff(diff) for diff in diffs)
    if pack_length is None:
        return body
    if len(body) >= 1 << (8 * pack_length):
        raise ValueError(f"a diff vector of {len(body)} bytes does not fit a {pack_length}-byte length")
    return len(body).to_bytes(pack_length, "little") + body


def _encode_diff(diff: JsonDiff) -> bytes:
    parse_path(diff.path)
    path = diff.path.encode("utf-8")
    head = bytes([OPERATIONS.index(diff.operation)]) + pack_int(len(path)) + path
    if diff.operation == REMOVE:
        return head
    value = json_binary.serialize(diff.value)
    return head + pack_int(len(value)) + value


# ---------------------------------------------------------------------------
# Applying diffs


class _Rejected(Exception):
    """A diff that does not fit the document: MySQL's enum_json_diff_status::REJECTED."""


def apply(document: JsonValue, diffs: list[JsonDiff], *, column: str | None = None) -> JsonValue:
    """The document after ``diffs``, applied in order as a MySQL replica applies them.

    * REPLACE: the path must lead to a value, which is replaced;
    * INSERT: the path's parent must exist; in an object the member must not
      exist yet and is added; in an array the value goes in at the index (at
      the end when the index is past it);
    * REMOVE: the path must lead to a value, which is removed.

    Paths are followed exactly: no auto-wrapping of scalars into arrays. A
    diff at ``$`` itself is refused, as MySQL refuses it (the server logs a
    whole document instead). A diff that does not fit the document -- the
    sign of a replica that diverged (WL#2955 section 7) -- raises
    :class:`JsonDiffError`. ``document`` is not changed: the containers on
    the changed paths are copied, the rest is shared with the result.
    """
    for index, diff in enumerate(diffs):
        try:
            document = _apply_diff(document, diff)
        except _Rejected as exc:
            raise JsonDiffError(f"{diff.operation} at {diff.path!r}: {exc}", column=column, diff_index=index) from None
        except JsonPathError as exc:
            raise JsonDiffError(str(exc), column=column, diff_index=index) from None
    return document


def _apply_diff(document: JsonValue, diff: JsonDiff) -> JsonValue:
    legs = parse_path(diff.path)
    if not legs:
        raise _Rejected("a diff cannot change the whole document ('$'); MySQL logs the full document instead")
    change = {REPLACE: _replace, INSERT: _insert, REMOVE: _remove}[diff.operation]
    return _change_at(document, legs[:-1], lambda parent: change(parent, legs[-1], diff.value))


def _change_at(node: JsonValue, legs: list[Leg], change: Callable[[JsonValue], JsonValue]) -> JsonValue:
    """A copy of ``node`` in which ``change`` has replaced the value at ``legs``; the value must exist."""
    if not legs:
        return change(node)
    slot = _slot(node, legs[0])
    if slot is None:
        raise _Rejected(f"no value at {format_path(legs[:1])} on the way (the path's parent does not exist)")
    copy = _shallow_copy(node)
    copy[slot] = _change_at(node[slot], legs[1:], change)
    return copy


def _slot(node: JsonValue, leg: Leg) -> str | int | None:
    """The key or index ``leg`` names in ``node`` when it holds a value there (json_diff.cc seek_exact_path)."""
    if isinstance(node, dict) and isinstance(leg, Member):
        return leg.name if leg.name in node else None
    if isinstance(node, list) and isinstance(leg, Cell):
        position, inside = leg.position(len(node))
        return position if inside else None
    return None


def _shallow_copy(node: JsonValue) -> dict | list:
    return dict(node) if isinstance(node, dict) else list(node)


def _replace(parent: JsonValue, leg: Leg, value: JsonValue) -> JsonValue:
    slot = _slot(parent, leg)
    if slot is None:
        raise _Rejected("no value at this path to replace")
    copy = _shallow_copy(parent)
    copy[slot] = value
    return copy


def _insert(parent: JsonValue, leg: Leg, value: JsonValue) -> JsonValue:
    if isinstance(parent, dict) and isinstance(leg, Member):
        if leg.name in parent:
            raise _Rejected(f"member {leg.name!r} exists already")
        return _in_key_order({**parent, leg.name: value})
    if isinstance(parent, list) and isinstance(leg, Cell):
        copy = list(parent)
        copy.insert(leg.position(len(parent))[0], value)
        return copy
    raise _Rejected(f"cannot insert {_leg_kind(leg)} into {_kind(parent)}")


def _remove(parent: JsonValue, leg: Leg, _value: JsonValue) -> JsonValue:
    slot = _slot(parent, leg)
    if slot is None:
        raise _Rejected("no value at this path to remove")
    copy = _shallow_copy(parent)
    del copy[slot]
    return copy


def _in_key_order(members: dict) -> dict:
    """The members in the order MySQL keeps them (by key length in bytes, then bytewise: WL#8132)."""
    return dict(sorted(members.items(), key=lambda member: (len(key := member[0].encode("utf-8")), key)))


def _leg_kind(leg: Leg) -> str:
    return "a member" if isinstance(leg, Member) else "an array element"


def _kind(value: JsonValue) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return "a scalar"


# ---------------------------------------------------------------------------
# mysqlbinlog -v


# What separates nested functions and arguments (WL#2955 section 6 NEWLINE, less its comma).
_LINE = "\n###      "

_SQL_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\", "'": "\\'"}


def render(column: str, diffs: list[JsonDiff]) -> str:
    """What ``mysqlbinlog -v`` prints after ``###   @N=`` for a column logged as diffs.

    ``column`` is the column as mysqlbinlog names it (``@2``). Each diff
    becomes a function (JSON_REPLACE, JSON_REMOVE, JSON_INSERT, or
    JSON_ARRAY_INSERT for an INSERT whose path ends in ``]``); consecutive
    diffs of the same function share one call; calls nest, so the function
    names appear in reverse order, one per line, and the (path, value)
    arguments in order. No diffs print the column alone.
    """
    names = [_function_name(diff) for diff in diffs]
    calls = [f"{names[i]}(" for i in reversed(range(len(names))) if i == 0 or names[i - 1] != names[i]]
    text = [_LINE.join(calls), column]
    for index, diff in enumerate(diffs):
        text.append(", " if index == 0 else "," + _LINE)
        text.append(sql_string(diff.path))
        if diff.operation != REMOVE:
            text.append(", " + sql_value(diff.value))
        if index + 1 == len(diffs) or names[index + 1] != names[index]:
            text.append(")")
    return "".join(text)


def _function_name(diff: JsonDiff) -> str:
    if diff.operation == REPLACE:
        return "JSON_REPLACE"
    if diff.operation == REMOVE:
        return "JSON_REMOVE"
    return "JSON_ARRAY_INSERT" if diff.path.endswith("]") else "JSON_INSERT"


def sql_value(value: JsonValue) -> str:
    """A JSON value as an SQL expression a JSON function reads back as the same JSON value
    (log_event.cc ``json_wrapper_to_string``).

    Numbers, booleans and null as MySQL prints them; strings, dates, times and
    other opaque values as quoted strings; objects and arrays as
    ``CAST('<json text>' AS JSON)``.
    """
    if isinstance(value, (dict, list)):
        return f"CAST({sql_string(json_binary.to_text(value))} AS JSON)"
    if isinstance(value, str):
        return sql_string(value)
    text = json_binary.to_text(value)
    if isinstance(value, json_binary.Opaque) and text.startswith('"'):
        return sql_string(json.loads(text))
    return text


def sql_string(text: str | bytes) -> str:
    """``text`` as a quoted SQL string the way mysqlbinlog writes it (log_event.cc ``my_b_write_quoted``).

    ``\\b \\f \\n \\r \\t \\\\ \\'`` escaped, other control characters as
    ``\\xNN``, the rest as is. Bytes are quoted byte by byte; those above
    0x7F, which mysqlbinlog writes raw, are written ``\\xNN`` too so that the
    result is text.
    """
    if isinstance(text, (bytes, bytearray)):
        return "'" + "".join(_sql_char(chr(byte)) if byte < 0x80 else f"\\x{byte:02x}" for byte in text) + "'"
    return "'" + "".join(_sql_char(char) for char in text) + "'"


def _sql_char(char: str) -> str:
    escaped = _SQL_ESCAPES.get(char)
    if escaped is not None:
        return escaped
    return f"\\x{ord(char):02x}" if char < " " else char
