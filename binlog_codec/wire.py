"""Little-endian primitives of the binlog wire format, read from an event body.

A :class:`Cursor` walks a body front to back. Every read checks the bytes are
there and raises :class:`ShortBody` (naming what it was reading) when they are
not, so that decoders never index past the end of hostile input. The caller
(``events.decode``) turns that into a located :class:`~binlog_codec.errors.BinlogError`.

Two variable-length integer encodings occur:

* the *packed integer* (``net_field_length`` in MySQL): first byte < 251 is the
  value; 252, 253 and 254 announce 2, 3 and 8 little-endian bytes;
* the *serialization varlen* of MySQL's serialization library (tagged GTIDs):
  the number of trailing one-bits of the first byte, plus one, is the total
  length; the value is the remaining bits, little-endian.
"""

from __future__ import annotations

import struct

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


class ShortBody(ValueError):
    """A read ran past the end of the body, or a field holds an impossible value."""


class Cursor:
    """Sequential reader over ``data`` starting at ``pos``."""

    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _advance(self, n: int, what: str) -> int:
        start = self.pos
        if n < 0 or start + n > self.end:
            raise ShortBody(
                f"{what}: needs {n} bytes at body offset {start}, {self.end - start} left"
            )
        self.pos = start + n
        return start

    def take(self, n: int, what: str = "bytes") -> bytes:
        start = self._advance(n, what)
        return bytes(self.data[start : start + n])

    def skip(self, n: int, what: str = "bytes") -> None:
        self._advance(n, what)

    def rest(self) -> bytes:
        start = self.pos
        self.pos = self.end
        return bytes(self.data[start : self.end])

    def u8(self, what: str = "u8") -> int:
        return self.data[self._advance(1, what)]

    def u16(self, what: str = "u16") -> int:
        return _U16.unpack_from(self.data, self._advance(2, what))[0]

    def u24(self, what: str = "u24") -> int:
        return self.uint(3, what)

    def u32(self, what: str = "u32") -> int:
        return _U32.unpack_from(self.data, self._advance(4, what))[0]

    def u64(self, what: str = "u64") -> int:
        return _U64.unpack_from(self.data, self._advance(8, what))[0]

    def uint(self, n: int, what: str = "uint") -> int:
        """An unsigned little-endian integer of ``n`` bytes."""
        start = self._advance(n, what)
        return int.from_bytes(self.data[start : start + n], "little")

    def packed_int(self, what: str = "packed integer") -> int:
        """MySQL's ``net_field_length``: 1, 3, 4 or 9 bytes."""
        first = self.u8(what)
        if first < 251:
            return first
        if first == 252:
            return self.uint(2, what)
        if first == 253:
            return self.uint(3, what)
        if first == 254:
            return self.uint(8, what)
        raise ShortBody(f"{what}: invalid packed integer prefix 0x{first:02x}")

    def cstring(self, what: str = "string") -> bytes:
        """Bytes up to (not including) a NUL terminator, which is consumed."""
        nul = self.data.find(b"\0", self.pos, self.end)
        if nul < 0:
            raise ShortBody(f"{what}: no NUL terminator before end of body")
        value = bytes(self.data[self.pos : nul])
        self.pos = nul + 1
        return value

    def varlen_uint(self, what: str = "varlen integer") -> int:
        """An unsigned integer of MySQL's serialization library (1 to 9 bytes)."""
        first = self.u8(what)
        length = 1
        while length < 9 and first & (1 << (length - 1)):
            length += 1
        if length == 1:
            return first >> 1
        tail = self.uint(length - 1, what)
        if length == 9:
            return tail
        return (first >> length) | (tail << (8 - length))

    def varlen_int(self, what: str = "varlen integer") -> int:
        """A signed (zig-zag) integer of MySQL's serialization library."""
        raw = self.varlen_uint(what)
        return -(raw >> 1) - 1 if raw & 1 else raw >> 1


def pack_int(value: int) -> bytes:
    """Encode ``value`` as MySQL's packed integer (inverse of :meth:`Cursor.packed_int`)."""
    if value < 251:
        return bytes((value,))
    if value < 1 << 16:
        return b"\xfc" + value.to_bytes(2, "little")
    if value < 1 << 24:
        return b"\xfd" + value.to_bytes(3, "little")
    return b"\xfe" + value.to_bytes(8, "little")


def pack_varlen_uint(value: int) -> bytes:
    """Encode ``value`` as a serialization-library varlen (inverse of :meth:`Cursor.varlen_uint`)."""
    length = ((value.bit_length() * 575) >> 12) + 1
    if length == 1:
        return bytes((value << 1,))
    if length == 9:
        return b"\xff" + value.to_bytes(8, "little")
    first = ((1 << (length - 1)) - 1) | ((value << length) & 0xFF)
    return bytes((first,)) + (value >> (8 - length)).to_bytes(length - 1, "little")


def pack_varlen_int(value: int) -> bytes:
    """Zig-zag encode a signed ``value`` (inverse of :meth:`Cursor.varlen_int`)."""
    return pack_varlen_uint((value << 1) if value >= 0 else ((-value - 1) << 1) | 1)
