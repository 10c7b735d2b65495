"""The transport layer of the backup stream format (WL#4063, "Transport layer format").

It turns a byte stream into a sequence of chunks and back; what the chunks
mean is :mod:`binlog_codec.backup.image`'s business.

**Prefix.** Every backup stream starts with 10 bytes: the magic number
``E0 F8 7F 7E 7E 5F 0F 03`` and the format version, 2 bytes (1).

**Blocks.** The stream is cut into blocks of ``block_size`` bytes (16 to
65535), counted from the start of the stream: the prefix is the beginning of
the first block. The block size is written in the first several blocks, as
redundancy against corruption::

    first block   = [ prefix:10 ! block_size:4 ! #of initial blocks:1 ! block data ]
    initial block = [ block_size:4 ! block data ]      (the next #of initial blocks blocks)
    regular block = [ block data ]

The last block ends right after the end-of-stream marker; it is not padded
(bytes after the marker are ignored, with a warning).

**Fragments.** A chunk can span several blocks and a block can hold several
chunks, so chunks are cut into fragments, each inside one block. A fragment
starts with a one-byte header (the values after the post-review changes)::

    0x80                 EOC marker: ends the chunk (an EOC where a chunk would
                         start is an empty chunk)
    0xC0                 EOS marker: end of the stream
    0x40 ! payload       payload to the end of the block, last of its chunk
    0x00 ! payload       payload to the end of the block, more follow
    00vvvvvv ! payload   small fragment of v bytes (v > 0), more follow
    01vvvvvv ! payload   small fragment of v bytes, last of its chunk
    10vvvvvv ! payload   big fragment of v << 6 bytes, more follow
    11vvvvvv ! payload   huge fragment of v << 12 bytes, more follow

A chunk cannot end with a big or huge fragment: the writer follows one with
an EOC marker when it ends a chunk. A header that is the last byte of its
block announces an empty fragment: the writer puts ``0x00`` there when only
one byte is left. The writer cuts a chunk's data into the largest fragments
the headers can describe and fills every block to its end.
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import BinaryIO

from .encoding import pack_int2, pack_int4
from .errors import BadPrefixError, BlockSizeError, FragmentError, TruncatedImageError

log = logging.getLogger(__name__)

MAGIC = bytes((0xE0, 0xF8, 0x7F, 0x7E, 0x7E, 0x5F, 0x0F, 0x03))
FORMAT_VERSION = 1
PREFIX = MAGIC + pack_int2(FORMAT_VERSION)
PREFIX_SIZE = len(PREFIX)
MIN_BLOCK_SIZE = 16  # the first block's 15 bytes of prefix and headers, and one more
MAX_BLOCK_SIZE = 0xFFFF
DEFAULT_BLOCK_SIZE = 32 * 1024
# Blocks after the first that repeat the block size (as MySQL's stream library writes).
INITIAL_BLOCKS = 2
FIRST_BLOCK_HEADER_SIZE = 5  # block_size:4 ! #of initial blocks:1
INITIAL_BLOCK_HEADER_SIZE = 4  # block_size:4

EOC = 0x80
EOS = 0xC0
LAST = 0x40  # flag of small fragments and of fragments to the end of the block
TO_END_MORE = 0x00
TO_END_LAST = 0x40
BIG = 0x80
HUGE = 0xC0
VALUE_MASK = 0x3F
BIG_SHIFT = 6
HUGE_SHIFT = 12


def check_block_size(block_size: int) -> None:
    if not MIN_BLOCK_SIZE <= block_size <= MAX_BLOCK_SIZE:
        raise ValueError(f"block size {block_size} is outside {MIN_BLOCK_SIZE}..{MAX_BLOCK_SIZE}")


def limited_fragment(remaining: int) -> tuple[int, int]:
    """(header, size) of the largest small, big or huge fragment holding at most ``remaining`` bytes;
    a small fragment is flagged last (it holds all that remains)."""
    if remaining >> HUGE_SHIFT:
        value = min(remaining >> HUGE_SHIFT, VALUE_MASK)
        return HUGE | value, value << HUGE_SHIFT
    if remaining >> BIG_SHIFT:
        value = remaining >> BIG_SHIFT
        return BIG | value, value << BIG_SHIFT
    return LAST | remaining, remaining


def fragment_size(header: int) -> int:
    """Payload size announced by a limited-size fragment header (value bits not zero)."""
    value = header & VALUE_MASK
    if header & 0x80:
        return value << (HUGE_SHIFT if header & 0x40 else BIG_SHIFT)
    return value


# -- writing ---------------------------------------------------------------------


class _Payload:
    """The bytes of one chunk, given in parts, handed out front to back without joining them."""

    def __init__(self, parts) -> None:
        self._parts = [memoryview(part).cast("B") for part in parts if len(part)]
        self._index = 0
        self.remaining = sum(len(part) for part in self._parts)

    def take(self, size: int) -> list[memoryview]:
        views = []
        self.remaining -= size
        while size:
            part = self._parts[self._index]
            if len(part) <= size:
                views.append(part)
                size -= len(part)
                self._index += 1
            else:
                views.append(part[:size])
                self._parts[self._index] = part[size:]
                size = 0
        return views


class ChunkWriter:
    """Writes the prefix, then chunks cut into fragments and packed into blocks of ``block_size``."""

    def __init__(self, stream: BinaryIO, block_size: int = DEFAULT_BLOCK_SIZE) -> None:
        check_block_size(block_size)
        self.block_size = block_size
        self.bytes_written = 0
        self._stream = stream
        self._blocks = 0  # blocks written so far
        self._block = bytearray()
        self._closed = False
        self._start_block()

    def _start_block(self) -> None:
        block = self._block = bytearray()
        if self._blocks == 0:
            block += PREFIX + pack_int4(self.block_size) + bytes((INITIAL_BLOCKS,))
        elif self._blocks <= INITIAL_BLOCKS:
            block += pack_int4(self.block_size)

    def _emit_block(self) -> None:
        self._stream.write(self._block)
        self.bytes_written += len(self._block)
        self._blocks += 1
        self._start_block()

    def _free(self) -> int:
        """Bytes left in the current block (at least 1: a full block is written out first)."""
        if len(self._block) == self.block_size:
            self._emit_block()
        return self.block_size - len(self._block)

    def _put(self, header: int, views: list[memoryview]) -> None:
        block = self._block
        block.append(header)
        for view in views:
            block += view

    def write_chunk(self, *parts: bytes) -> None:
        """Write one chunk made of ``parts`` (joined; each may be empty, all may be empty)."""
        if self._closed:
            raise ValueError("the stream is closed")
        payload = _Payload(parts)
        if not payload.remaining:
            self._free()
            self._block.append(EOC)
            return
        while payload.remaining:
            free = self._free()
            if free == 1:  # no room for a payload byte: an empty fragment to the end of the block
                self._block.append(TO_END_MORE)
                continue
            room = free - 1
            if payload.remaining >= room:
                last = payload.remaining == room
                self._put(TO_END_LAST if last else TO_END_MORE, payload.take(room))
                if last:
                    return
                continue
            header, size = limited_fragment(payload.remaining)
            self._put(header, payload.take(size))
            if header & 0xC0 == LAST:
                return
        self._free()
        self._block.append(EOC)  # the chunk ended with a big or huge fragment

    def close(self) -> None:
        """Write the end-of-stream marker and the last, partly filled block."""
        if self._closed:
            return
        self._free()
        self._block.append(EOS)
        self._stream.write(self._block)
        self.bytes_written += len(self._block)
        self._block = bytearray()
        self._closed = True
        log.debug("backup stream closed: %d bytes in blocks of %d", self.bytes_written, self.block_size)


# -- reading ---------------------------------------------------------------------


@dataclass
class Chunk:
    """One chunk's bytes, with where each of its fragments' payload lies in the file."""

    data: bytes
    offset: int  # file offset of the chunk's first fragment header
    pieces: list[tuple[int, int]] = field(default_factory=list)  # (index in data, file offset)
    end_offset: int = 0  # file offset just past the chunk's last header or payload byte

    def file_offset(self, index: int) -> int:
        """File offset of ``data[index]`` (``index == len(data)``: just past the chunk's data)."""
        if not self.pieces:
            return self.offset
        if index >= len(self.data):
            return self.end_offset
        start, at = self.pieces[bisect_right(self.pieces, (index, float("inf"))) - 1]
        return at + index - start


def _read_exact(stream: BinaryIO, size: int) -> bytes:
    """Up to ``size`` bytes: fewer only at the end of the stream."""
    data = stream.read(size)
    if data is None:
        data = b""
    if len(data) == size or not data:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = stream.read(size - got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


class ChunkReader:
    """Reads the prefix and hands out chunks one at a time, one block in memory.

    ``name`` is used in error messages (the file name).
    """

    def __init__(self, stream: BinaryIO, name: str = "<backup image>") -> None:
        self.name = name
        self._stream = stream
        self.format_version = self._read_prefix()
        self.block_size, self.initial_blocks = self._read_first_block_header()
        self._block_index = 0
        self._base = PREFIX_SIZE + FIRST_BLOCK_HEADER_SIZE  # file offset of self._buf[0]
        self._load_block_data(self.block_size - self._base)
        self._eos = False
        self.end_of_stream_offset: int | None = None

    def error(self, cls, message: str, offset: int) -> Exception:
        return cls(message, file=self.name, position=offset)

    def _read_prefix(self) -> int:
        prefix = _read_exact(self._stream, PREFIX_SIZE)
        magic = prefix[: len(MAGIC)]
        if magic != MAGIC[: len(magic)] or not prefix:
            raise self.error(
                BadPrefixError,
                f"not a backup image: expected the magic number {MAGIC.hex(' ')}, found {magic.hex(' ') or 'nothing'}",
                0,
            )
        if len(prefix) < PREFIX_SIZE:
            raise self.error(
                TruncatedImageError, f"image ends after {len(prefix)} bytes, inside the 10-byte prefix", len(prefix)
            )
        version = int.from_bytes(prefix[8:10], "little")
        if version != FORMAT_VERSION:
            raise self.error(
                BadPrefixError, f"unsupported backup image format version {version} (expected {FORMAT_VERSION})", 8
            )
        return version

    def _read_block_size(self, offset: int, block: str) -> int:
        field_bytes = _read_exact(self._stream, 4)
        if not field_bytes and offset > PREFIX_SIZE:
            raise self.error(
                TruncatedImageError, f"image ends before the {block} without its end-of-stream marker (0xC0)", offset
            )
        if len(field_bytes) < 4:
            raise self.error(
                TruncatedImageError, f"image ends inside the block size of the {block} (4 bytes expected)", offset
            )
        return int.from_bytes(field_bytes, "little")

    def _read_first_block_header(self) -> tuple[int, int]:
        block_size = self._read_block_size(PREFIX_SIZE, "first block")
        if not MIN_BLOCK_SIZE <= block_size <= MAX_BLOCK_SIZE:
            raise self.error(
                BlockSizeError,
                f"block size {block_size} in the first block, expected {MIN_BLOCK_SIZE}..{MAX_BLOCK_SIZE}",
                PREFIX_SIZE,
            )
        count = _read_exact(self._stream, 1)
        if not count:
            raise self.error(TruncatedImageError, "image ends before the number of initial blocks", PREFIX_SIZE + 4)
        log.debug("%s: backup image version 1, block size %d, %d initial blocks", self.name, block_size, count[0])
        return block_size, count[0]

    def _load_block_data(self, size: int) -> None:
        data = _read_exact(self._stream, size)
        self._buf = data
        self._view = memoryview(data)
        self._pos = 0
        self._full = len(data) == size

    def _next_block(self) -> None:
        """Move to the next block, checking the block size it repeats if it is an initial block."""
        block_start = self._base + len(self._buf)
        self._block_index += 1
        header = 0
        if self._block_index <= self.initial_blocks:
            header = INITIAL_BLOCK_HEADER_SIZE
            size = self._read_block_size(block_start, f"initial block {self._block_index}")
            if size != self.block_size:
                raise self.error(
                    BlockSizeError,
                    f"block size {size} in initial block {self._block_index} disagrees with the first block's "
                    f"{self.block_size}",
                    block_start,
                )
        self._base = block_start + header
        self._load_block_data(self.block_size - header)

    def _block_end(self) -> int:
        """File offset where the current block ends (were it complete)."""
        return (self._block_index + 1) * self.block_size

    def next_chunk(self) -> Chunk | None:
        """The next chunk, or ``None`` after the end-of-stream marker."""
        if self._eos:
            return None
        parts: list[memoryview] = []
        pieces: list[tuple[int, int]] = []
        length = 0
        start = None
        while True:
            if self._pos >= len(self._buf):
                if not self._full:
                    raise self.error(
                        TruncatedImageError,
                        "image ends without its end-of-stream marker (0xC0): a fragment header was expected",
                        self._base + len(self._buf),
                    )
                self._next_block()
                continue
            at = self._base + self._pos
            if start is None:
                start = at
            header = self._buf[self._pos]
            self._pos += 1
            if header == EOS:
                if length:
                    raise self.error(
                        FragmentError,
                        f"end-of-stream marker inside a chunk ({length} bytes of it read): "
                        "a fragment or an end-of-chunk marker was expected",
                        at,
                    )
                self._eos = True
                self.end_of_stream_offset = at
                self._warn_trailing_bytes(at)
                return None
            if header == EOC:
                return Chunk(b"".join(parts), start, pieces, at + 1 if not pieces else pieces[-1][1] + len(parts[-1]))
            payload, last = self._fragment(header, at)
            if payload:
                pieces.append((length, at + 1))
                parts.append(payload)
                length += len(payload)
            if last:
                return Chunk(b"".join(parts), start, pieces, at + 1 + len(payload))

    def _warn_trailing_bytes(self, marker: int) -> None:
        if self._pos < len(self._buf) or self._stream.read(1):
            log.warning("%s: bytes after the end-of-stream marker at %d are ignored", self.name, marker)

    def _fragment(self, header: int, at: int) -> tuple[memoryview, bool]:
        """The payload of the fragment whose header (at file offset ``at``) was just read, and
        whether it is the last of its chunk."""
        if header & VALUE_MASK == 0:  # 0x00 or 0x40: to the end of the block
            if not self._full:
                raise self.error(
                    TruncatedImageError,
                    f"image ends at {self._base + len(self._buf)}, inside a fragment that extends to the end "
                    f"of its block at {self._block_end()}",
                    at,
                )
            payload = self._view[self._pos :]
            self._pos = len(self._buf)
            return payload, bool(header & LAST)
        size = fragment_size(header)
        end = self._pos + size
        if end > len(self._buf):
            if self._full or at + 1 + size > self._block_end():
                raise self.error(
                    FragmentError,
                    f"fragment header 0x{header:02x} announces {size} bytes, running past the end of its block at "
                    f"{self._block_end()}: at most {self._block_end() - at - 1} bytes expected",
                    at,
                )
            raise self.error(
                TruncatedImageError,
                f"image ends at {self._base + len(self._buf)}, inside a fragment of {size} bytes",
                at,
            )
        payload = self._view[self._pos : end]
        self._pos = end
        return payload, header & 0xC0 == LAST
