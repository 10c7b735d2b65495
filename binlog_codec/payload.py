"""TRANSACTION_PAYLOAD_EVENT (MySQL 8.0.20+): a whole transaction in one event.

The body starts with a header of fields, each ``type | length | value`` where
type and length are packed integers and the value is a packed integer of
``length`` bytes; field type 0 ends the header and the payload follows:

=====  ======================  ===========================================
 type  field                   meaning
=====  ======================  ===========================================
 1     payload size            bytes of payload after the header
 2     compression type        0 = zstd, 255 = none
 3     uncompressed size       bytes of events after decompression
=====  ======================  ===========================================

The uncompressed payload is a sequence of ordinary v4 events without
checksums. This module reads the header and opens the payload as a stream, so
a large transaction is inflated one event at a time.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import BinaryIO

from .wire import Cursor, ShortBody

HEADER_END_MARK = 0
PAYLOAD_SIZE_FIELD = 1
COMPRESSION_TYPE_FIELD = 2
UNCOMPRESSED_SIZE_FIELD = 3

COMPRESSION_ZSTD = 0
COMPRESSION_NONE = 255
COMPRESSION_NAMES = {COMPRESSION_ZSTD: "ZSTD", COMPRESSION_NONE: "NONE"}


@dataclass(frozen=True)
class PayloadHeader:
    compression_type: int
    payload_size: int
    uncompressed_size: int
    data_offset: int

    @property
    def compression_name(self) -> str:
        return COMPRESSION_NAMES.get(self.compression_type, f"UNKNOWN_{self.compression_type}")


def parse_payload_header(body: bytes) -> PayloadHeader:
    """Read the field header of a TRANSACTION_PAYLOAD_EVENT body."""
    cursor = Cursor(body)
    values = {PAYLOAD_SIZE_FIELD: None, COMPRESSION_TYPE_FIELD: COMPRESSION_NONE, UNCOMPRESSED_SIZE_FIELD: 0}
    while True:
        field_type = cursor.packed_int("payload header field type")
        if field_type == HEADER_END_MARK:
            break
        length = cursor.packed_int("payload header field length")
        value = Cursor(cursor.take(length, f"payload header field {field_type}"))
        if field_type in values:
            values[field_type] = value.packed_int(f"payload header field {field_type} value")
    data_offset = cursor.pos
    payload_size = values[PAYLOAD_SIZE_FIELD]
    if payload_size is None:
        payload_size = len(body) - data_offset
    if payload_size != len(body) - data_offset:
        raise ShortBody(
            f"payload size field says {payload_size} bytes, the event holds {len(body) - data_offset}"
        )
    compression = values[COMPRESSION_TYPE_FIELD]
    if compression not in COMPRESSION_NAMES:
        raise ShortBody(f"unknown compression type {compression} (expected 0 zstd or 255 none)")
    return PayloadHeader(compression, payload_size, values[UNCOMPRESSED_SIZE_FIELD], data_offset)


def open_payload(body: bytes, header: PayloadHeader) -> BinaryIO:
    """A stream of the uncompressed payload bytes."""
    data = io.BytesIO(body[header.data_offset :])
    if header.compression_type == COMPRESSION_NONE:
        return data
    import zstandard

    return zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
