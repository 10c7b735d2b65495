"""Binary log file framing: magic, event headers, format description, CRC32, positions.

A binlog file is the 4-byte magic ``\\xfebin`` followed by events laid end to
end. Every event starts with the common header; in binlog version 4 (MySQL 5.0
and later, every MariaDB) it is 19 bytes::

    timestamp 4 | type_code 1 | server_id 4 | event_size 4 | log_pos 4 | flags 2

``event_size`` covers header, body and checksum, so the next event starts at
``position + event_size`` -- framing never trusts ``log_pos``, which in relay
logs points into the source server's file. The first event is the
FORMAT_DESCRIPTION_EVENT (FDE), which announces the server version, the length
of each event type's post-header and, from MySQL 5.6.1 and MariaDB 5.3 on, the
checksum algorithm; a later FDE (relay logs) replaces it from there on. Files
of binlog version 1 and 3 (MySQL 3.23 and 4.0) start with a START_EVENT_V3
instead, with a 13-byte (v1) or 19-byte (v3) header and no post-header table.

With CRC32 checksums every event ends with the CRC32 of its header and body.
The FDE is checksummed with the ``LOG_EVENT_BINLOG_IN_USE_F`` flag cleared,
because the server clears that flag when it closes the file without
recomputing the checksum.

A TRANSACTION_PAYLOAD_EVENT (MySQL 8.0.20+) carries a whole transaction,
zstd-compressed or stored; the reader yields the payload event and then each
inner event, unwrapped in place, with the payload's position and the inner
event's offset inside the uncompressed payload. Inner events carry no checksum.

The reader streams: it holds one event at a time, never the whole file, and it
refuses an event longer than ``max_event_size`` (1 GiB by default, the largest
``max_allowed_packet`` a server accepts) before allocating anything for it.
With the compiled build, :class:`binlog_codec.frames.Frames` frames the ordinary
events in C from 1 MiB blocks of the file, and hands every other one to this
module's code (see :meth:`BinlogReader._event_reader`).
"""

from __future__ import annotations

import io
import logging
import os
import re
import struct
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterator, NamedTuple

from . import compiled
from .errors import (
    BadMagicError,
    BinlogError,
    ChecksumError,
    CorruptEventError,
    TruncatedError,
)
from .event_types import EventFlag, EventType, type_name
from .payload import open_payload, parse_payload_header
from .wire import Cursor, ShortBody

log = logging.getLogger(__name__)

MAGIC = b"\xfebin"
HEADER_V4 = struct.Struct("<IBIIIH")
HEADER_V1 = struct.Struct("<IBII")
CHECKSUM_SIZE = 4
MAX_EVENT_SIZE = 1 << 30

CHECKSUM_OFF = 0
CHECKSUM_CRC32 = 1
CHECKSUM_NAMES = {CHECKSUM_OFF: "OFF", CHECKSUM_CRC32: "CRC32"}

# Servers from these versions on end the FDE body with the checksum algorithm
# byte (and the FDE with a checksum): MySQL 5.6.1, MariaDB 5.3.0.
_CHECKSUM_VERSION_MYSQL = (5, 6, 1)
_CHECKSUM_VERSION_MARIADB = (5, 3, 0)
_SERVER_VERSION_LEN = 50
_VERSION_RE = re.compile(rb"^(\d+)\.(\d+)\.(\d+)")

# Post-header lengths of binlog versions 1 and 3 (no FDE to announce them),
# indexed by type code - 1 as in an FDE: START_V3, QUERY, STOP, ROTATE, INTVAR,
# LOAD, SLAVE, CREATE_FILE, APPEND_BLOCK, EXEC_LOAD, DELETE_FILE, NEW_LOAD, RAND, USER_VAR.
_OLD_POST_HEADERS = {
    1: bytes((56, 11, 0, 0, 0, 18, 0, 0, 0, 0, 0, 0, 0, 0)),
    3: bytes((56, 11, 0, 8, 0, 18, 0, 4, 4, 4, 4, 18, 0, 0)),
}


class EventHeader(NamedTuple):
    """The common event header (19 bytes in binlog v3 and v4)."""

    timestamp: int
    type_code: int
    server_id: int
    event_size: int
    log_pos: int
    flags: int

    @property
    def type_name(self) -> str:
        return type_name(self.type_code)


@dataclass(frozen=True)
class FormatDescription:
    """What the FORMAT_DESCRIPTION_EVENT (or START_EVENT_V3) says about the events after it.

    ``checksum_alg`` is ``None`` for servers that predate checksums (the FDE
    has no algorithm byte), else 0 (OFF) or 1 (CRC32).
    """

    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_lengths: bytes
    checksum_alg: int | None

    @property
    def is_mariadb(self) -> bool:
        return "mariadb" in self.server_version.lower()

    @property
    def checksum_size(self) -> int:
        return CHECKSUM_SIZE if self.checksum_alg == CHECKSUM_CRC32 else 0

    @property
    def checksum_name(self) -> str | None:
        if self.checksum_alg is None:
            return None
        return CHECKSUM_NAMES.get(self.checksum_alg, f"UNKNOWN_{self.checksum_alg}")

    def post_header_length(self, type_code: int, default: int = 0) -> int:
        """Post-header length of ``type_code`` as announced, ``default`` when not announced."""
        index = type_code - 1
        if 0 <= index < len(self.post_header_lengths):
            return self.post_header_lengths[index]
        return default


@dataclass(slots=True)
class RawEvent:
    """One framed event: header, body (checksum removed) and where it was found.

    ``pos`` and ``end_pos`` are byte offsets in ``file``. For an event unwrapped
    from a TRANSACTION_PAYLOAD_EVENT they are the payload event's, and
    ``inner_offset`` is the event's offset inside the uncompressed payload.
    ``fde`` is the format description in force for this event.
    """

    file: str
    pos: int
    end_pos: int
    header: EventHeader
    body: bytes
    checksum: int | None
    fde: FormatDescription
    inner_offset: int | None = None

    @property
    def type_code(self) -> int:
        return self.header.type_code

    @property
    def type_name(self) -> str:
        return self.header.type_name

    @property
    def size(self) -> int:
        return self.header.event_size

    def error(self, cls: type[BinlogError], message: str) -> BinlogError:
        """A located error about this event."""
        return cls(
            message,
            file=self.file,
            position=self.pos,
            event_type=self.type_name,
            inner_offset=self.inner_offset,
        )


def server_version_tuple(version: str) -> tuple[int, int, int]:
    match = _VERSION_RE.match(version.encode())
    if not match:
        return (0, 0, 0)
    return tuple(int(part) for part in match.groups())  # type: ignore[return-value]


def parse_format_description(body: bytes) -> FormatDescription:
    """Decode an FDE body (header removed, checksum still attached when present).

    Layout: ``binlog_version 2 | server_version 50 | create_timestamp 4 |
    header_length 1 | post_header_lengths N`` and, from the checksum versions
    on, ``checksum_alg 1 | crc32 4`` at the end.
    """
    cursor = Cursor(body)
    binlog_version = cursor.u16("binlog_version")
    raw_version = cursor.take(_SERVER_VERSION_LEN, "server_version")
    server_version = raw_version.split(b"\0", 1)[0].decode("ascii", "replace")
    create_timestamp = cursor.u32("create_timestamp")
    header_length = cursor.u8("header_length")
    version = server_version_tuple(server_version)
    split = _CHECKSUM_VERSION_MARIADB if "mariadb" in server_version.lower() else _CHECKSUM_VERSION_MYSQL
    checksum_alg: int | None = None
    end = len(body)
    if version >= split:
        if cursor.remaining < 1 + CHECKSUM_SIZE:
            raise ShortBody("checksum algorithm: FDE body too short for algorithm byte and checksum")
        checksum_alg = body[end - 1 - CHECKSUM_SIZE]
        end -= 1 + CHECKSUM_SIZE
    post_header_lengths = bytes(body[cursor.pos : end])
    if binlog_version != 4 or header_length < HEADER_V4.size:
        raise ShortBody(
            f"binlog_version {binlog_version} with header_length {header_length}: "
            "a FORMAT_DESCRIPTION_EVENT needs binlog version 4 and a 19-byte header"
        )
    return FormatDescription(
        binlog_version, server_version, create_timestamp, header_length, post_header_lengths, checksum_alg
    )


def parse_start_v3(body: bytes, header_length: int) -> FormatDescription:
    """Decode a START_EVENT_V3 body: ``binlog_version 2 | server_version 50 | created 4``."""
    cursor = Cursor(body)
    binlog_version = cursor.u16("binlog_version")
    server_version = cursor.take(_SERVER_VERSION_LEN, "server_version").split(b"\0", 1)[0]
    create_timestamp = cursor.u32("create_timestamp")
    post_headers = _OLD_POST_HEADERS.get(binlog_version, _OLD_POST_HEADERS[3])
    return FormatDescription(
        binlog_version,
        server_version.decode("ascii", "replace"),
        create_timestamp,
        header_length,
        post_headers,
        None,
    )


def fde_checksum_input(header_bytes: bytes, body_without_crc: bytes) -> bytes:
    """The bytes an FDE's CRC32 covers: header with the in-use flag cleared, then body."""
    flags = int.from_bytes(header_bytes[17:19], "little") & ~EventFlag.BINLOG_IN_USE
    return header_bytes[:17] + flags.to_bytes(2, "little") + header_bytes[19:] + body_without_crc


class BinlogReader:
    """Iterate over the events of one binlog file, verified and located.

    Yields :class:`RawEvent` in file order. Options:

    * ``verify_checksums`` (default on): every CRC32 is checked; a mismatch is a
      :class:`ChecksumError`.
    * ``start_position`` / ``stop_position``: yield only events whose header
      starts at or after ``start_position`` and before ``stop_position``. The
      FDE is always read first (it defines the format) but yielded only when in
      range. ``start_position`` must be the start of an event.
    * ``unwrap_payloads`` (default on): after a TRANSACTION_PAYLOAD_EVENT, yield
      its inner events.
    * ``max_event_size``: events claiming more bytes are refused.
    * ``name``: how errors name the file (defaults to the path).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        verify_checksums: bool = True,
        start_position: int | None = None,
        stop_position: int | None = None,
        unwrap_payloads: bool = True,
        max_event_size: int = MAX_EVENT_SIZE,
        name: str | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self.name = name or self.path
        self.verify_checksums = verify_checksums
        self.start_position = start_position
        self.stop_position = stop_position
        self.unwrap_payloads = unwrap_payloads
        self.max_event_size = max_event_size
        self.fde: FormatDescription | None = None
        self.file_size = 0

    def __iter__(self) -> Iterator[RawEvent]:
        with open(self.path, "rb", buffering=1 << 20) as stream:
            self.file_size = os.fstat(stream.fileno()).st_size
            yield from self._events(stream)

    # -- framing ---------------------------------------------------------

    def _error(self, cls: type[BinlogError], message: str, position: int, type_code: int | None = None) -> BinlogError:
        return cls(
            message,
            file=self.name,
            position=position,
            event_type=type_name(type_code) if type_code is not None else None,
        )

    def _events(self, stream: BinaryIO) -> Iterator[RawEvent]:
        magic = stream.read(len(MAGIC))
        if magic != MAGIC:
            raise self._error(
                BadMagicError,
                f"not a binlog file: expected magic fe 62 69 6e, found {magic.hex(' ') or 'an empty file'}",
                0,
            )
        pos = len(MAGIC)
        start = self.start_position
        read_event = self._event_reader()
        while True:
            if start is not None and self.fde is not None and pos < start:
                pos = self._seek(stream, start)
            if self.stop_position is not None and pos >= self.stop_position:
                return
            event = read_event(stream, pos)
            if event is None:
                return
            pos = event.end_pos
            in_range = start is None or event.pos >= start
            if in_range:
                yield event
            if event.type_code == EventType.TRANSACTION_PAYLOAD and self.unwrap_payloads and in_range:
                yield from self._payload_events(event)

    def _event_reader(self):
        """How each event is read: by :meth:`_read_event`, or with the compiled build by
        :class:`binlog_codec.frames.Frames`, which frames the ordinary events in C (the same
        events) and has :meth:`_read_event` read the others."""
        if not compiled():
            return self._read_event
        from .frames import Frames

        return Frames(self).read_event

    def _seek(self, stream: BinaryIO, position: int) -> int:
        if position > self.file_size:
            raise self._error(
                BinlogError, f"start position {position} is past the end of the file ({self.file_size} bytes)", position
            )
        stream.seek(position)
        return position

    def _read_event(self, stream: BinaryIO, pos: int) -> RawEvent | None:
        header_length = self.fde.header_length if self.fde else self._first_header_length(stream, pos)
        head = stream.read(header_length)
        if not head:
            return None
        if len(head) < header_length:
            raise self._error(
                TruncatedError,
                f"truncated event header: {len(head)} of {header_length} bytes before end of file",
                pos,
                head[4] if len(head) > 4 else None,
            )
        header = self._parse_header(head, header_length)
        size = header.event_size
        if size < header_length:
            raise self._error(
                CorruptEventError,
                f"event_size {size} is smaller than the {header_length}-byte event header",
                pos,
                header.type_code,
            )
        if size > self.max_event_size:
            raise self._error(
                CorruptEventError,
                f"event_size {size} exceeds the {self.max_event_size}-byte limit for one event",
                pos,
                header.type_code,
            )
        if pos + size > self.file_size:
            raise self._error(
                TruncatedError,
                f"event_size {size} runs past the end of the file: "
                f"{self.file_size - pos} bytes left from this position",
                pos,
                header.type_code,
            )
        body_size = size - header_length
        trailer = self._checksum_size(header.type_code, body_size)
        payload = stream.read(body_size - trailer)
        stored = stream.read(trailer) if trailer else b""
        if len(payload) + len(stored) != body_size:
            raise self._error(
                TruncatedError,
                f"file ended inside the event body ({len(payload) + len(stored)} of {body_size} bytes)",
                pos,
                header.type_code,
            )
        return self._frame(pos, head, header, payload, stored)

    def _checksum_size(self, type_code: int, body_size: int) -> int:
        """The bytes of CRC32 that end an event's body, read apart from it: 4 under a format
        description with CRC32, except in the format description itself (which says whether
        it has one) and in a body too short to hold one (an error :meth:`_frame` reports)."""
        fde = self.fde
        if fde is None or type_code == EventType.FORMAT_DESCRIPTION or fde.checksum_alg != CHECKSUM_CRC32:
            return 0
        return CHECKSUM_SIZE if body_size >= CHECKSUM_SIZE else 0

    def _first_header_length(self, stream: BinaryIO, pos: int) -> int:
        """Header length for the first event: 13 for a binlog v1 START_EVENT_V3, else 19."""
        peek = stream.peek(HEADER_V4.size + 2)[: HEADER_V4.size + 2]  # type: ignore[attr-defined]
        if len(peek) >= 15 and peek[4] == EventType.START_V3:
            version = int.from_bytes(peek[13:15], "little")
            if version == 1:
                return HEADER_V1.size
        return HEADER_V4.size

    @staticmethod
    def _parse_header(head: bytes, header_length: int) -> EventHeader:
        if header_length == HEADER_V1.size:
            timestamp, type_code, server_id, size = HEADER_V1.unpack_from(head)
            return EventHeader(timestamp, type_code, server_id, size, 0, 0)
        return tuple.__new__(EventHeader, HEADER_V4.unpack_from(head))

    def _frame(self, pos: int, head: bytes, header: EventHeader, payload: bytes, stored: bytes) -> RawEvent:
        """The event whose ``payload`` follows ``head``; ``stored`` is its CRC32 when it has one
        (see :meth:`_checksum_size`)."""
        type_code = header.type_code
        if type_code == EventType.FORMAT_DESCRIPTION:
            return self._frame_fde(pos, head, header, payload)
        if self.fde is None:
            if type_code == EventType.START_V3:
                self.fde = self._decode_format(pos, type_code, lambda: parse_start_v3(payload, len(head)))
                return RawEvent(self.name, pos, pos + header.event_size, header, payload, None, self.fde)
            raise self._error(
                CorruptEventError,
                "expected a FORMAT_DESCRIPTION_EVENT (or START_EVENT_V3) as the first event",
                pos,
                type_code,
            )
        checksum = None
        if self.fde.checksum_alg == CHECKSUM_CRC32:
            if not stored:
                raise self._error(
                    CorruptEventError,
                    f"event_size {header.event_size} leaves no room for the 4-byte CRC32",
                    pos,
                    type_code,
                )
            checksum = int.from_bytes(stored, "little")
            if self.verify_checksums:
                self._check_crc(pos, type_code, zlib.crc32(payload, zlib.crc32(head)), checksum)
        return RawEvent(self.name, pos, pos + header.event_size, header, payload, checksum, self.fde)

    def _frame_fde(self, pos: int, head: bytes, header: EventHeader, payload: bytes) -> RawEvent:
        fde = self._decode_format(pos, header.type_code, lambda: parse_format_description(payload))
        checksum = None
        body = payload
        if fde.checksum_alg is not None:
            body = payload[:-CHECKSUM_SIZE]
            checksum = int.from_bytes(payload[-CHECKSUM_SIZE:], "little")
            # With checksums OFF the server still writes the FDE's own CRC32 (a zero one is
            # the "not computed" value some relay-log writers leave).
            if self.verify_checksums and (fde.checksum_alg == CHECKSUM_CRC32 or checksum != 0):
                self._check_crc(pos, header.type_code, zlib.crc32(fde_checksum_input(head, body)), checksum)
        self.fde = fde
        return RawEvent(self.name, pos, pos + header.event_size, header, body, checksum, fde)

    def _decode_format(self, pos: int, type_code: int, parse) -> FormatDescription:
        try:
            return parse()
        except ShortBody as exc:
            raise self._error(CorruptEventError, str(exc), pos, type_code) from None

    def _check_crc(self, pos: int, type_code: int, computed: int, stored: int) -> None:
        if computed != stored:
            raise self._error(
                ChecksumError,
                f"CRC32 mismatch: event says 0x{stored:08x}, bytes give 0x{computed:08x}",
                pos,
                type_code,
            )

    # -- transaction payloads --------------------------------------------

    def _payload_events(self, outer: RawEvent) -> Iterator[RawEvent]:
        try:
            header = parse_payload_header(outer.body)
        except ShortBody as exc:
            raise outer.error(CorruptEventError, str(exc)) from None
        if header.uncompressed_size > self.max_event_size:
            raise outer.error(
                CorruptEventError,
                f"uncompressed size {header.uncompressed_size} exceeds the {self.max_event_size}-byte limit",
            )
        stream = open_payload(outer.body, header)
        offset = 0
        try:
            while offset < header.uncompressed_size:
                inner = self._payload_event(outer, stream, offset)
                yield inner
                offset += inner.size
            if _read_exact(stream, 1):
                raise outer.error(
                    CorruptEventError, f"payload holds more than its uncompressed size {header.uncompressed_size}"
                )
        except BinlogError:
            raise
        except Exception as exc:  # a corrupt zstd frame
            raise outer.error(CorruptEventError, f"payload does not decompress: {exc}") from None

    def _payload_event(self, outer: RawEvent, stream: BinaryIO, offset: int) -> RawEvent:
        head = _read_exact(stream, HEADER_V4.size)
        if len(head) < HEADER_V4.size:
            raise outer.error(TruncatedError, f"payload ends inside an event header at payload offset {offset}")
        header = EventHeader(*HEADER_V4.unpack_from(head))
        if not HEADER_V4.size <= header.event_size <= self.max_event_size:
            raise outer.error(
                CorruptEventError,
                f"inner event at payload offset {offset} has impossible event_size {header.event_size}",
            )
        body = _read_exact(stream, header.event_size - HEADER_V4.size)
        if len(body) != header.event_size - HEADER_V4.size:
            raise outer.error(TruncatedError, f"payload ends inside the event at payload offset {offset}")
        return RawEvent(outer.file, outer.pos, outer.end_pos, header, body, None, outer.fde, offset)


# Payload streams are read in pieces of at most this many bytes: a zstd reader allocates all it is
# asked for, so asking for a lying event_size at once would allocate it whatever the bytes behind it.
_READ_PIECE = 1 << 20


def _read_exact(stream: io.RawIOBase | BinaryIO, n: int) -> bytes:
    """Up to ``n`` bytes of ``stream`` (fewer at its end), never allocating more than it yields."""
    chunks = []
    while n > 0:
        chunk = stream.read(min(n, _READ_PIECE))
        if not chunk:
            break
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_events(path: str | os.PathLike[str], **options) -> Iterator[RawEvent]:
    """Shorthand for ``iter(BinlogReader(path, **options))``."""
    return iter(BinlogReader(path, **options))
