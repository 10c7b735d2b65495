"""The encoder: binlog events and files, byte for byte as a server writes them.

Used to build synthetic binlogs for tests and corpora, and to prove the reader
exact: re-encoding a real event from its decoded header and body gives back
the original bytes (``tests/binlog_codec/test_writer.py``). The layouts are the
ones :mod:`binlog_codec.reader` documents.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

from .event_types import EventFlag, EventType
from .reader import (
    CHECKSUM_CRC32,
    HEADER_V4,
    MAGIC,
    EventHeader,
    fde_checksum_input,
)

# Post-header lengths a MySQL 8.0 server announces, for type codes 1..42.
MYSQL_8_POST_HEADERS = bytes(
    (0, 13, 0, 8, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 98, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0, 10, 10, 10,
     42, 42, 0, 18, 52, 0, 10, 40, 0, 42)
)


def encode_header(header: EventHeader) -> bytes:
    return HEADER_V4.pack(
        header.timestamp, header.type_code, header.server_id, header.event_size, header.log_pos, header.flags
    )


def encode_event(header: EventHeader, body: bytes, *, checksum: bool) -> bytes:
    """Header, body and (when ``checksum``) the CRC32, with ``event_size`` as the header says."""
    head = encode_header(header)
    if not checksum:
        return head + body
    if header.type_code == EventType.FORMAT_DESCRIPTION:
        crc = zlib.crc32(fde_checksum_input(head, body))
    else:
        crc = zlib.crc32(body, zlib.crc32(head))
    return head + body + crc.to_bytes(4, "little")


def format_description_body(
    server_version: str,
    *,
    checksum_alg: int | None = CHECKSUM_CRC32,
    create_timestamp: int = 0,
    post_header_lengths: bytes = MYSQL_8_POST_HEADERS,
) -> bytes:
    """An FDE body; with ``checksum_alg`` it ends with the algorithm byte (the CRC is added by :func:`encode_event`)."""
    body = (
        (4).to_bytes(2, "little")
        + server_version.encode("ascii").ljust(50, b"\0")
        + create_timestamp.to_bytes(4, "little")
        + bytes((HEADER_V4.size,))
        + post_header_lengths
    )
    if checksum_alg is not None:
        body += bytes((checksum_alg,))
    return body


@dataclass
class BinlogWriter:
    """Builds a binlog file in memory: magic, an FDE, then events with positions filled in."""

    server_version: str = "8.0.40"
    checksum: bool = True
    server_id: int = 1
    timestamp: int = 1_700_000_000
    data: bytearray = field(default_factory=lambda: bytearray(MAGIC))

    def __post_init__(self) -> None:
        alg = CHECKSUM_CRC32 if self.checksum else 0
        self.add(EventType.FORMAT_DESCRIPTION, format_description_body(self.server_version, checksum_alg=alg),
                 checksum=True)

    def add(self, type_code: int, body: bytes, *, flags: int = 0, checksum: bool | None = None) -> int:
        """Append one event; returns its position."""
        with_crc = self.checksum if checksum is None else checksum
        size = HEADER_V4.size + len(body) + (4 if with_crc else 0)
        position = len(self.data)
        header = EventHeader(self.timestamp, int(type_code), self.server_id, size, position + size, flags)
        self.data += encode_event(header, body, checksum=with_crc)
        return position

    def add_ignorable(self, type_code: int, body: bytes) -> int:
        return self.add(type_code, body, flags=EventFlag.IGNORABLE)

    def bytes(self) -> bytes:
        return bytes(self.data)
