# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Framing, and the event bodies the rows path reads most, in C (the compiled build only).

:class:`~binlog_codec.reader.BinlogReader` frames a file event by event, and
:func:`~binlog_codec.events.decode` turns each body into its record; both are
Python. On the rows path of a big file (``rows.rows_events``) that Python work
per event costs as much as decoding the rows themselves. This module does the
common cases in C and gives every other case to the Python code, which then
reads, decodes or reports it exactly as it always does:

* :class:`Frames` reads a binlog file a block at a time and frames ordinary
  events from the block: header, size checks, CRC32, the :class:`RawEvent`.
  The format description, the first event, an event it cannot check in full
  (too short, too long, past the end of the file, a bad checksum) are read by
  ``BinlogReader._read_event`` itself, errors included.
* :func:`rows_event` decodes the header part of an uncompressed rows event
  (``events.rows_header``) and :func:`mariadb_gtid` the GTID of a MariaDB
  GTID event; when a body is anything but plainly well formed they hand the
  event to :func:`~binlog_codec.events.decode`, which decodes it or raises the
  located error.

Tests check that both give the same events (``tests/binlog_codec/test_frames.py``).
"""

cimport cython

import zlib

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint8_t, uint64_t

from binlog_codec.image_bytes cimport little_endian

from .event_types import EventType
from .events import decode
from .events.gtid import FL_COMPLETED_XA, FL_GROUP_COMMIT_ID, FL_PREPARED_XA
from .events.rows_header import RowsEvent
from .reader import CHECKSUM_CRC32, HEADER_V4, EventHeader, RawEvent

# The file is read in blocks of this many bytes (or one event, when it is longer).
cdef Py_ssize_t BLOCK = 1 << 20
cdef Py_ssize_t HEADER_SIZE = HEADER_V4.size
cdef int FORMAT_DESCRIPTION = EventType.FORMAT_DESCRIPTION
cdef int XA_FLAGS = FL_PREPARED_XA | FL_COMPLETED_XA
cdef int COMMIT_ID_FLAG = FL_GROUP_COMMIT_ID

_new_tuple = tuple.__new__


@cython.final
cdef class Frames:
    """The events of a :class:`~binlog_codec.reader.BinlogReader`'s file, framed in C when
    they are ordinary; :meth:`read_event` is the reader's ``_read_event``, faster."""

    cdef object reader
    cdef bytes block          # the bytes of the file from block_start on
    cdef Py_ssize_t block_start
    cdef object view          # a memoryview of block, for the CRC32 of a slice without a copy
    cdef object fde           # the format description the fields below are of
    cdef bint ordinary        # whether its events are framed here: 19-byte headers
    cdef bint crc32           # whether its events end with a CRC32

    def __init__(self, reader):
        self.reader = reader
        self.block = b""
        self.block_start = 0
        self.view = memoryview(self.block)
        self.fde = None
        self.ordinary = False
        self.crc32 = False

    def read_event(self, stream, Py_ssize_t pos):
        """The event at ``pos`` of ``stream`` (the reader's open file), or None at the end of the file."""
        event = self.frame(stream, pos)
        if event is None:  # not an ordinary event: the reader reads it, and says what is wrong with it
            stream.seek(pos)
            event = self.reader._read_event(stream, pos)
        return event

    cdef object frame(self, stream, Py_ssize_t pos):
        """The ordinary event at ``pos``, framed from the block; None for any other."""
        cdef const uint8_t *p
        cdef Py_ssize_t size, at, payload
        cdef uint64_t stored
        reader = self.reader
        if reader.fde is not self.fde:
            self.follow(reader.fde)
        if not self.ordinary:
            return None
        p = self.bytes_at(stream, pos, HEADER_SIZE)
        if p == NULL or p[4] == FORMAT_DESCRIPTION:
            return None
        size = <Py_ssize_t>little_endian(p + 9, 4)
        if size < HEADER_SIZE or size > reader.max_event_size or pos + size > reader.file_size:
            return None
        p = self.bytes_at(stream, pos, size)
        if p == NULL:
            return None
        at = pos - self.block_start
        payload = size - HEADER_SIZE
        checksum = None
        if self.crc32:
            if payload < 4:
                return None
            payload -= 4
            stored = little_endian(p + size - 4, 4)
            if reader.verify_checksums and zlib.crc32(self.view[at:at + size - 4]) != stored:
                return None
            checksum = stored
        header = _new_tuple(EventHeader, (
            <uint64_t>little_endian(p, 4), p[4], <uint64_t>little_endian(p + 5, 4), size,
            <uint64_t>little_endian(p + 13, 4), <int>little_endian(p + 17, 2),
        ))
        body = PyBytes_FromStringAndSize(<const char *>p + HEADER_SIZE, payload)
        return RawEvent(reader.name, pos, pos + size, header, body, checksum, self.fde)

    cdef int follow(self, fde) except -1:
        """Take the format description in force: which of its events are ordinary."""
        self.fde = fde
        self.ordinary = fde is not None and fde.header_length == HEADER_SIZE
        self.crc32 = fde is not None and fde.checksum_alg == CHECKSUM_CRC32
        return 0

    cdef const uint8_t *bytes_at(self, stream, Py_ssize_t pos, Py_ssize_t size) except? NULL:
        """The ``size`` bytes of the file at ``pos``, read into the block when they are not
        there yet; NULL when the file ends before them."""
        cdef Py_ssize_t at = pos - self.block_start
        if at < 0 or at + size > PyBytes_GET_SIZE(self.block):
            stream.seek(pos)
            self.block = stream.read(max(BLOCK, size))
            self.block_start = pos
            self.view = memoryview(self.block)
            at = 0
            if size > PyBytes_GET_SIZE(self.block):
                return NULL
        return <const uint8_t *>PyBytes_AS_STRING(self.block) + at


# -- rows events ---------------------------------------------------------------------------

cdef dict ROWS_KINDS = {
    EventType.WRITE_ROWS_V1: "insert", EventType.UPDATE_ROWS_V1: "update", EventType.DELETE_ROWS_V1: "delete",
    EventType.WRITE_ROWS: "insert", EventType.UPDATE_ROWS: "update", EventType.DELETE_ROWS: "delete",
    EventType.PARTIAL_UPDATE_ROWS: "update",
}
cdef frozenset ROWS_V2 = frozenset({
    EventType.WRITE_ROWS, EventType.UPDATE_ROWS, EventType.DELETE_ROWS, EventType.PARTIAL_UPDATE_ROWS,
})


cdef Py_ssize_t packed_int(const uint8_t *p, Py_ssize_t *at, Py_ssize_t end) noexcept:
    """MySQL's ``net_field_length`` at ``at`` (which it moves past it); -1 when it is not
    one or runs past ``end``."""
    cdef uint8_t first
    cdef int width
    if at[0] >= end:
        return -1
    first = p[at[0]]
    if first < 251:
        at[0] += 1
        return first
    width = 2 if first == 252 else (3 if first == 253 else (8 if first == 254 else 0))
    if width == 0 or at[0] + 1 + width > end:
        return -1
    at[0] += 1 + width
    return <Py_ssize_t>little_endian(p + at[0] - width, width) if width < 8 else -1


cdef bint selects_a_column(const uint8_t *bitmap, Py_ssize_t count) noexcept:
    """Whether a column bitmap (bit i for column i) sets any of its ``count`` columns."""
    cdef Py_ssize_t i
    for i in range(count):
        if bitmap[i >> 3] >> (i & 7) & 1:
            return True
    return False


def rows_event(raw):
    """The :class:`~binlog_codec.events.rows_header.RowsEvent` of a framed rows event, as
    :func:`~binlog_codec.events.decode` makes it."""
    cdef bytes body = raw.body
    cdef const uint8_t *p = <const uint8_t *>PyBytes_AS_STRING(body)
    cdef Py_ssize_t end = PyBytes_GET_SIZE(body), at, extra_end, columns, bitmap
    cdef const uint8_t *before
    cdef const uint8_t *after = NULL
    cdef int id_width
    header = raw.header
    type_code = header.type_code
    kind = ROWS_KINDS.get(type_code)
    if kind is None:  # a compressed one, or not a rows event
        return decode(raw)
    id_width = 4 if raw.fde.post_header_length(type_code, 8) == 6 else 6
    at = id_width + 2
    extra_end = at
    if type_code in ROWS_V2:
        if at + 2 > end:
            return decode(raw)
        extra_end = at + <Py_ssize_t>little_endian(p + at, 2)
        if extra_end < at + 2:
            return decode(raw)
        at = extra_end
    columns = packed_int(p, &at, end)
    if columns < 0:
        return decode(raw)
    bitmap = (columns + 7) // 8
    before = p + at
    at += bitmap
    if kind == "update":
        after = p + at
        at += bitmap
    if at > end or (at < end and not selects_a_column(before, columns)
                    and (after == NULL or not selects_a_column(after, columns))):
        return decode(raw)
    return RowsEvent(
        file=raw.file, pos=raw.pos, end_pos=raw.end_pos, inner_offset=raw.inner_offset, header=header,
        kind=kind,
        table_id=<uint64_t>little_endian(p, id_width),
        flags=<int>little_endian(p + id_width, 2),
        extra_data=body[id_width + 4:extra_end] if extra_end > id_width + 2 else b"",
        column_count=columns,
        columns_before=PyBytes_FromStringAndSize(<const char *>before, bitmap),
        columns_after=None if after == NULL else PyBytes_FromStringAndSize(<const char *>after, bitmap),
        rows=body[at:],
        rows_size=end - at,
    )


def mariadb_gtid(raw):
    """The GTID (``domain-server-sequence``) of a framed MariaDB GTID event, as
    :func:`~binlog_codec.events.decode` reads it."""
    cdef bytes body = raw.body
    cdef const uint8_t *p = <const uint8_t *>PyBytes_AS_STRING(body)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(body)
    cdef uint8_t flags
    # seq_no 8 | domain_id 4 | flags2 1, then commit_id 8 or XA data or up to 6 bytes of padding
    if size >= 13:
        flags = p[12]
        if not flags & XA_FLAGS and (size == 21 if flags & COMMIT_ID_FLAG else size <= 19):
            return f"{little_endian(p + 8, 4)}-{raw.header.server_id}-{little_endian(p, 8)}"
    return decode(raw).gtid
