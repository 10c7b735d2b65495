"""Basic types of the backup image format ("Formats for basic types", WL#4063).

* fixed-width numbers of 1, 2 and 4 bytes, least significant byte first
  (read with :class:`~binlog_codec.wire.Cursor`'s ``u8``/``u16``/``u32``);
* variable-length numbers: 7 bits per byte, least significant group first,
  the high bit set on every byte but the last. The specification's example,
  0b100101011101011010110100011110, is ``9E DA D6 AB 02``;
* strings: [ size ! bytes:(size) ], the size a variable-length number. The
  text is UTF-8 (the image's first charset); bytes that are not UTF-8 are
  kept as surrogate escapes so that any name reads and writes back unchanged;
* times: [ year and month:2 ! day:1 ! hour:1 ! min:1 ! sec:1 ], the 2-byte
  number holding the year in its high 12 bits and the month (1-12) in its low
  4 bits. Times are UTC.

Readers take a :class:`~binlog_codec.wire.Cursor` over one chunk and raise
:class:`~binlog_codec.wire.ShortBody` when the chunk ends inside a field, or
:class:`BadField` (naming the field's start) when a field holds an impossible
value; :mod:`binlog_codec.backup.image` turns both into located errors.
"""

from __future__ import annotations

import struct
from datetime import datetime, timezone

from ..wire import Cursor, ShortBody

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
# Variable-length numbers longer than this (64 bits of value) are refused.
MAX_NUMBER_BYTES = 10


class BadField(ShortBody):
    """A field holds a value the format does not allow; ``at`` is the field's start in the chunk."""

    def __init__(self, message: str, at: int) -> None:
        super().__init__(message)
        self.at = at


def pack_int2(value: int) -> bytes:
    return _U16.pack(value)


def pack_int4(value: int) -> bytes:
    return _U32.pack(value)


def pack_number(value: int) -> bytes:
    """A variable-length number (inverse of :func:`read_number`)."""
    if value < 0:
        raise ValueError(f"only unsigned numbers are stored, not {value}")
    out = bytearray()
    while value > 0x7F:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    out.append(value)
    return bytes(out)


def read_number(cursor: Cursor, what: str) -> int:
    """A variable-length number of at most :data:`MAX_NUMBER_BYTES` bytes."""
    start = cursor.pos
    value = shift = 0
    for _ in range(MAX_NUMBER_BYTES):
        byte = cursor.u8(what)
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value
        shift += 7
    raise BadField(f"{what}: variable-length number longer than {MAX_NUMBER_BYTES} bytes", start)


def pack_string(text: str) -> bytes:
    """[ size ! bytes ] of ``text`` in UTF-8 (inverse of :func:`read_string`)."""
    data = text.encode("utf-8", "surrogateescape")
    return pack_number(len(data)) + data


def read_string(cursor: Cursor, what: str) -> str:
    """A string; its size is checked against the bytes left in the chunk before anything is copied."""
    start = cursor.pos
    size = read_number(cursor, f"{what} size")
    if size > cursor.remaining:
        raise BadField(f"{what}: size {size}, but the chunk has {cursor.remaining} bytes left", start)
    return cursor.take(size, what).decode("utf-8", "surrogateescape")


def pack_time(moment: datetime) -> bytes:
    """[time] of ``moment`` (a naive datetime is taken as UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    if moment.year > 0xFFF:
        raise ValueError(f"year {moment.year} does not fit the 12 bits of [time]")
    return pack_int2(moment.year << 4 | moment.month) + bytes((moment.day, moment.hour, moment.minute, moment.second))


def read_time(cursor: Cursor, what: str) -> datetime:
    """A [time] as a UTC datetime."""
    start = cursor.pos
    year_month = cursor.u16(what)
    day, hour, minute, second = cursor.take(4, what)
    try:
        return datetime(year_month >> 4, year_month & 0x0F, day, hour, minute, second, tzinfo=timezone.utc)
    except ValueError as exc:
        fields = f"{year_month >> 4:04}-{year_month & 0x0F:02}-{day:02} {hour:02}:{minute:02}:{second:02}"
        raise BadField(f"{what}: {fields} is not a valid time ({exc})", start) from None
