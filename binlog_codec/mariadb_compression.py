"""MariaDB's compressed binlog events (``log_bin_compress``): the compressed-block format.

QUERY_COMPRESSED_EVENT (165) compresses the statement text, the
``*_ROWS_COMPRESSED_EVENT`` types (166-171) compress the row images (column
count and column bitmaps stay plain). A compressed block is::

    header 1 | uncompressed_length (header & 0x07 bytes, big-endian) | zlib stream

where the header's high bit is always set and bits 4-6 name the algorithm
(0 = zlib, the only one defined). See MariaDB's ``binlog_buf_uncompress``.
"""

from __future__ import annotations

import zlib

from .wire import ShortBody


def uncompress_block(block: bytes, max_size: int) -> bytes:
    """Inflate one compressed block, refusing more than ``max_size`` bytes of output."""
    if not block:
        raise ShortBody("compressed block: empty")
    head = block[0]
    if not head & 0x80:
        raise ShortBody(f"compressed block: header byte 0x{head:02x} lacks the compression bit 0x80")
    algorithm = (head & 0x70) >> 4
    if algorithm != 0:
        raise ShortBody(f"compressed block: unknown algorithm {algorithm} (expected 0, zlib)")
    width = head & 0x07
    if not 1 <= width <= 4 or len(block) < 1 + width:
        raise ShortBody(f"compressed block: invalid length width {width}")
    length = int.from_bytes(block[1 : 1 + width], "big")
    if length > max_size:
        raise ShortBody(f"compressed block: uncompressed length {length} exceeds the {max_size}-byte limit")
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(block[1 + width :], length)
    except zlib.error as exc:
        raise ShortBody(f"compressed block: zlib stream is corrupt ({exc})") from None
    if len(data) != length:
        raise ShortBody(f"compressed block: inflated to {len(data)} bytes, header says {length}")
    return data


def compress_block(data: bytes) -> bytes:
    """The inverse of :func:`uncompress_block`, as MariaDB writes it."""
    width = max(1, (len(data).bit_length() + 7) // 8)
    return bytes((0x80 | width,)) + len(data).to_bytes(width, "big") + zlib.compress(data)
