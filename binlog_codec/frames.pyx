# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Framing, the event bodies the rows path reads most, and the transaction scan, in C (the
compiled build only).

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
* :class:`TransactionScan` is the loop of
  :func:`~binlog_codec.transactions.scan_transactions`: it frames events with
  :class:`Frames` without making a :class:`RawEvent`, weighs each one in C (GTID,
  BEGIN, COMMIT, XID, STMT_END_F) and makes Python objects per transaction; the
  GTID and XID bodies it cannot read plainly go to ``decode``.

Tests check that both give the same events (``tests/binlog_codec/test_frames.py``)
and the same transactions (``tests/binlog_codec/test_transaction_scan.py``).
"""

cimport cython

import os
import zlib

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.pyport cimport PY_SSIZE_T_MAX
from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memcmp

from binlog_codec.image_bytes cimport little_endian

from . import transactions
from .event_types import GTID_TYPES, ROWS_TYPES, EventType
from .events import decode
from .events import gtid as gtid_events
from .events.base import uuid_text
from .events.gtid import FL_COMPLETED_XA, FL_GROUP_COMMIT_ID, FL_PREPARED_XA, FL_STANDALONE, LOGICAL_TIMESTAMP_TYPECODE
from .events.rows_header import RowsEvent
from .reader import CHECKSUM_CRC32, HEADER_V4, EventHeader, RawEvent
from .transactions import BEGIN_WORDS, ENDING_WORDS, STMT_END_F, XA_END_WORDS, Transaction

# The file is read in blocks of this many bytes (or one event, when it is longer).
cdef Py_ssize_t BLOCK = 1 << 20
cdef Py_ssize_t HEADER_SIZE = HEADER_V4.size
cdef int FORMAT_DESCRIPTION = EventType.FORMAT_DESCRIPTION
cdef int XA_FLAGS = FL_PREPARED_XA | FL_COMPLETED_XA
cdef int COMMIT_ID_FLAG = FL_GROUP_COMMIT_ID

_new_tuple = tuple.__new__

# Where TransactionScan.scan starts and where it stops.
cdef enum:
    BEFORE_FIRST = -1
    END = -2


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
        return self.read_unusual(stream, pos) if event is None else event

    cdef object read_unusual(self, stream, Py_ssize_t pos):
        """The event at ``pos`` that is not ordinary: the reader reads it, and says what is wrong with it."""
        stream.seek(pos)
        return self.reader._read_event(stream, pos)

    cdef object frame(self, stream, Py_ssize_t pos):
        """The ordinary event at ``pos``, framed from the block; None for any other."""
        cdef const uint8_t *p = self.checked(stream, pos)
        return None if p == NULL else self.raw_event(pos, p)

    cdef const uint8_t *checked(self, stream, Py_ssize_t pos) except? NULL:
        """The bytes of the ordinary event at ``pos`` in the block, its size and CRC32 checked;
        NULL for any other event."""
        cdef const uint8_t *p
        cdef Py_ssize_t size, at
        reader = self.reader
        if reader.fde is not self.fde:
            self.follow(reader.fde)
        if not self.ordinary:
            return NULL
        p = self.bytes_at(stream, pos, HEADER_SIZE)
        if p == NULL or p[4] == FORMAT_DESCRIPTION:
            return NULL
        size = <Py_ssize_t>little_endian(p + 9, 4)
        if size < HEADER_SIZE + 4 * self.crc32 or size > reader.max_event_size or pos + size > reader.file_size:
            return NULL
        p = self.bytes_at(stream, pos, size)
        if p == NULL:
            return NULL
        if self.crc32 and reader.verify_checksums:
            at = pos - self.block_start
            if zlib.crc32(self.view[at:at + size - 4]) != little_endian(p + size - 4, 4):
                return NULL
        return p

    cdef object raw_event(self, Py_ssize_t pos, const uint8_t *p):
        """The :class:`RawEvent` of the ordinary event whose bytes :meth:`checked` gave."""
        cdef Py_ssize_t size = <Py_ssize_t>little_endian(p + 9, 4)
        cdef Py_ssize_t payload = size - HEADER_SIZE - 4 * self.crc32
        checksum = <uint64_t>little_endian(p + size - 4, 4) if self.crc32 else None
        header = _new_tuple(EventHeader, (
            <uint64_t>little_endian(p, 4), p[4], <uint64_t>little_endian(p + 5, 4), size,
            <uint64_t>little_endian(p + 13, 4), <int>little_endian(p + 17, 2),
        ))
        body = PyBytes_FromStringAndSize(<const char *>p + HEADER_SIZE, payload)
        return RawEvent(self.reader.name, pos, pos + size, header, body, checksum, self.fde)

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


cdef object mariadb_gtid_text(const uint8_t *p, Py_ssize_t size, server_id):
    """The GTID (``domain-server-sequence``) of a MariaDB GTID event body of the common shapes;
    None for any other, which :func:`~binlog_codec.events.decode` reads or refuses."""
    cdef uint8_t flags
    # seq_no 8 | domain_id 4 | flags2 1, then commit_id 8 or XA data or up to 6 bytes of padding
    if size >= 13:
        flags = p[12]
        if not flags & XA_FLAGS and (size == 21 if flags & COMMIT_ID_FLAG else size <= 19):
            return f"{little_endian(p + 8, 4)}-{server_id}-{little_endian(p, 8)}"
    return None


def mariadb_gtid(raw):
    """The GTID (``domain-server-sequence``) of a framed MariaDB GTID event, as
    :func:`~binlog_codec.events.decode` reads it."""
    cdef bytes body = raw.body
    gtid = mariadb_gtid_text(<const uint8_t *>PyBytes_AS_STRING(body), PyBytes_GET_SIZE(body), raw.header.server_id)
    return decode(raw).gtid if gtid is None else gtid


# -- the transaction scan --------------------------------------------------------------------

# What the scan makes of an event, by type code (binlog_codec.transactions says why).
cdef enum Role:
    INSIDE = 0            # an event of a transaction that neither starts nor ends it
    OUTSIDE = 1           # an event of no transaction
    STARTS_MYSQL = 2      # a MySQL GTID or anonymous GTID event: starts one
    STARTS_MARIADB = 3    # a MariaDB GTID event: starts one, explicit unless flagged standalone
    STARTS = 4            # a tagged GTID event: starts one
    ENDS_WITH_XID = 5     # an XID event: ends one
    ENDS = 6              # XA_PREPARE, TRANSACTION_PAYLOAD: end one
    QUERY = 7             # BEGIN, COMMIT, ROLLBACK, ... or a statement: ends one outside BEGIN
    STATEMENT = 8         # QUERY_COMPRESSED, EXECUTE_LOAD_QUERY: a statement
    ROWS = 9              # ends the statement outside BEGIN whose last rows event it is

# What the text of a QUERY event says.
cdef enum Words:
    OTHER_WORDS = 0
    BEGIN_WORD = 1        # one of transactions.BEGIN_WORDS
    END_WORD = 2          # COMMIT or ROLLBACK (not ROLLBACK TO), XA COMMIT or XA ROLLBACK

cdef uint8_t ROLES[256]
cdef int QUERY_CODE = EventType.QUERY
cdef int ANONYMOUS_CODE = EventType.ANONYMOUS_GTID
cdef int PAYLOAD_CODE = EventType.TRANSACTION_PAYLOAD
cdef int STANDALONE_FLAG = FL_STANDALONE
cdef int LOGICAL_TIMESTAMP = LOGICAL_TIMESTAMP_TYPECODE
cdef uint64_t COMMIT_TS_ORIGINAL_FOLLOWS = gtid_events.COMMIT_TS_ORIGINAL_FOLLOWS
cdef uint64_t SERVER_VERSION_ORIGINAL_FOLLOWS = gtid_events.SERVER_VERSION_ORIGINAL_FOLLOWS


cdef int role_of(code) except -1:
    """The role of the events of type ``code``, from the event-type sets of binlog_codec.transactions."""
    if code == EventType.MARIADB_GTID:
        return STARTS_MARIADB
    if code in (EventType.GTID, EventType.ANONYMOUS_GTID):
        return STARTS_MYSQL
    if code in GTID_TYPES:
        return STARTS
    if code in transactions.OUTSIDE:
        return OUTSIDE
    if code == EventType.XID:
        return ENDS_WITH_XID
    if code in transactions.COMMITS:
        return ENDS
    if code == EventType.QUERY:
        return QUERY
    if code in transactions.STATEMENTS:
        return STATEMENT
    return ROWS if code in ROWS_TYPES else INSIDE


cdef int learn_roles() except -1:
    """Fill ROLES, the role of each type code."""
    cdef int code
    for code in range(256):
        ROLES[code] = role_of(code)
    return 0


learn_roles()


# One event as the scan sees it: where it is, its header fields and its body.
cdef struct Event:
    Py_ssize_t pos
    Py_ssize_t end
    uint64_t timestamp
    int type_code
    uint64_t server_id
    Py_ssize_t size
    uint64_t log_pos
    int flags
    const uint8_t *head   # the event's bytes in the block; NULL for an event the reader framed
    const uint8_t *body
    Py_ssize_t body_size


cdef inline void framed_event(Event *event, Py_ssize_t pos, const uint8_t *p, bint crc32) noexcept:
    """``event``: the ordinary event at ``pos`` whose bytes (checked) are ``p``."""
    event.pos = pos
    event.size = <Py_ssize_t>little_endian(p + 9, 4)
    event.end = pos + event.size
    event.timestamp = little_endian(p, 4)
    event.type_code = p[4]
    event.server_id = little_endian(p + 5, 4)
    event.log_pos = little_endian(p + 13, 4)
    event.flags = <int>little_endian(p + 17, 2)
    event.head = p
    event.body = p + HEADER_SIZE
    event.body_size = event.size - HEADER_SIZE - 4 * crc32


cdef inline bint is_space(uint8_t c) noexcept:
    """ASCII whitespace, as ``bytes.split`` and ``bytes.strip`` see it."""
    return c == 32 or 9 <= c <= 13


cdef inline Py_ssize_t after_spaces(const uint8_t *text, Py_ssize_t at, Py_ssize_t end) noexcept:
    while at < end and is_space(text[at]):
        at += 1
    return at


cdef inline Py_ssize_t after_word(const uint8_t *text, Py_ssize_t at, Py_ssize_t end) noexcept:
    while at < end and not is_space(text[at]):
        at += 1
    return at


cdef bint starts_with(const uint8_t *text, Py_ssize_t size, bytes prefix) noexcept:
    """Whether ``text``, its ASCII letters in upper case, starts with ``prefix``."""
    cdef const uint8_t *word = <const uint8_t *>PyBytes_AS_STRING(prefix)
    cdef Py_ssize_t i, length = PyBytes_GET_SIZE(prefix)
    cdef uint8_t c
    if length > size:
        return False
    for i in range(length):
        c = text[i]
        if (c - 32 if 97 <= c <= 122 else c) != word[i]:
            return False
    return True


cdef bint starts_with_any(const uint8_t *text, Py_ssize_t size, tuple prefixes) except -1:
    cdef bytes prefix
    for prefix in prefixes:
        if starts_with(text, size, prefix):
            return True
    return False


cdef inline bint is_word(const uint8_t *text, Py_ssize_t size, bytes word) noexcept:
    """Whether ``text`` is ``word`` (upper case), in any case."""
    return size == PyBytes_GET_SIZE(word) and starts_with(text, size, word)


cdef int query_words(const uint8_t *body, Py_ssize_t size, Py_ssize_t post_header) except -1:
    """What the statement of a QUERY event body says, as ``transactions._query_text``,
    ``_is_commit`` and the ``BEGIN_WORDS`` read it: BEGIN_WORD, END_WORD or OTHER_WORDS."""
    cdef Py_ssize_t at, word_end
    cdef bytes word
    if size < 13:
        return OTHER_WORDS
    at = after_spaces(body, post_header + <Py_ssize_t>little_endian(body + 11, 2) + body[8] + 1, size)
    if at >= size:
        return OTHER_WORDS
    if starts_with_any(body + at, size - at, BEGIN_WORDS):
        return BEGIN_WORD
    word_end = after_word(body, at, size)
    for word in ENDING_WORDS:
        if is_word(body + at, word_end - at, word):  # COMMIT or ROLLBACK, and not ROLLBACK TO
            at = after_spaces(body, word_end, size)
            return OTHER_WORDS if is_word(body + at, after_word(body, at, size) - at, b"TO") else END_WORD
    return END_WORD if starts_with_any(body + at, size - at, XA_END_WORDS) else OTHER_WORDS


cdef bint statement_end(const Event *event, int post_header) noexcept:
    """Whether a rows event carries STMT_END_F (``transactions._statement_end``)."""
    cdef Py_ssize_t width = 4 if post_header == 6 else 6
    cdef Py_ssize_t present = min(max(event.body_size - width, 0), 2)
    return present > 0 and little_endian(event.body + width, <int>present) & STMT_END_F


cdef bint mysql_gtid_reads(const uint8_t *p, Py_ssize_t size) except -1:
    """Whether ``events.gtid`` reads a MySQL GTID or anonymous GTID event body without an error,
    its optional parts each whole (the layout is in ``events.gtid``); an 8-byte transaction
    length is left to it too."""
    cdef Py_ssize_t at = 25  # flags 1 | sid 16 | gno 8
    if size < at:
        return False
    if at == size or p[at] != LOGICAL_TIMESTAMP:
        return True
    at += 17  # lt_type 1 | last_committed 8 | sequence_number 8
    if at > size:
        return False
    if size - at >= 7:  # commit timestamps
        at += 14 if little_endian(p + at, 7) & COMMIT_TS_ORIGINAL_FOLLOWS else 7
        if at > size:
            return False
    if at < size and packed_int(p, &at, size) < 0:  # transaction length
        return False
    if size - at >= 4:  # server versions
        at += 8 if little_endian(p + at, 4) & SERVER_VERSION_ORIGINAL_FOLLOWS else 4
    return at <= size


@cython.final
cdef class TransactionScan:
    """The transactions of a :class:`~binlog_codec.reader.BinlogReader`'s file (one that does
    not unwrap payloads), as :func:`~binlog_codec.transactions.scan_events` finds them: the same
    transactions and errors, but events are read and weighed in C and Python objects are made
    per transaction.

    The reader's own loop reads the file's magic and its first event (its format
    description, which it reads before seeking to ``start_position``). From there on events
    are read here: the ordinary ones by :class:`Frames` from its blocks, any other (a format
    description, a bad checksum, anything to report) by the reader. An event's body is decoded
    only when its XID or GTID is not of the common shapes, by :func:`~binlog_codec.events.decode`.
    """

    cdef object reader
    cdef Frames frames
    cdef object fde                # the format description post_headers is of
    cdef bytes post_headers
    cdef list found                # transactions found and not yet yielded
    # the transaction being read
    cdef bint open
    cdef Py_ssize_t start
    cdef object gtid
    cdef bint explicit             # inside BEGIN ... COMMIT (or a MariaDB non-standalone group)
    cdef Py_ssize_t events
    # the last event read: it ends the transaction ending where it ends
    cdef bint has_last
    cdef Event last
    cdef object last_xid
    # the server UUID of the last MySQL GTID read, as bytes and as text
    cdef bytes sid
    cdef str sid_text

    def __init__(self, reader):
        self.reader = reader

    def __iter__(self):
        """The transactions in order; a trailing unfinished one has ``complete=False``."""
        cdef Py_ssize_t pos = BEFORE_FIRST
        reader = self.reader
        with open(reader.path, "rb") as stream:
            reader.file_size = os.fstat(stream.fileno()).st_size
            self.frames = Frames(reader)
            self.found = []
            self.open = False
            self.has_last = False
            while pos != END:
                try:
                    pos = self.scan(stream, pos)
                except Exception:
                    yield from self.take_found()  # the transactions before the error come first
                    raise
                yield from self.take_found()

    cdef list take_found(self):
        found, self.found = self.found, []
        return found

    cdef Py_ssize_t scan(self, stream, Py_ssize_t pos) except? -3:
        """Read the events from ``pos`` until a transaction is found; where the next event
        starts, or END after the last event (at the end of the file or ``stop_position``)."""
        cdef Event event
        cdef const uint8_t *p
        cdef Py_ssize_t stop = PY_SSIZE_T_MAX
        reader = self.reader
        if reader.stop_position is not None:
            stop = reader.stop_position
        if pos == BEFORE_FIRST:
            pos = self.scan_first(stream)
        while pos != END and not self.found:
            if pos >= stop:
                pos = END
                break
            p = self.frames.checked(stream, pos)
            if p == NULL:
                pos = self.scan_unusual(self.frames.read_unusual(stream, pos))
                continue
            framed_event(&event, pos, p, self.frames.crc32)
            self.step(&event, None)
            pos = event.end
        if pos == END and self.open:
            self.close(reader.file_size, False)
        return pos

    cdef Py_ssize_t scan_first(self, stream) except? -3:
        """Have the reader's loop read the magic and the first event in range, and scan it."""
        events = self.reader._events(stream)
        try:
            raw = next(events, None)
        finally:
            events.close()
        return self.scan_unusual(raw)

    cdef Py_ssize_t scan_unusual(self, raw) except? -3:
        """Scan the event ``raw`` the reader framed (None at the end of the file); where the next starts."""
        cdef Event event
        cdef bytes body
        if raw is None:
            return END
        body = raw.body
        header = raw.header
        event.pos, event.end = raw.pos, raw.end_pos
        event.timestamp, event.type_code, event.server_id = header.timestamp, header.type_code, header.server_id
        event.size, event.log_pos, event.flags = header.event_size, header.log_pos, header.flags
        event.head = NULL
        event.body = <const uint8_t *>PyBytes_AS_STRING(body)
        event.body_size = PyBytes_GET_SIZE(body)
        self.step(&event, raw)
        return event.end

    cdef int step(self, Event *event, raw) except -1:
        """Take one event (``raw``: its RawEvent, None when framed here), as ``scan_events`` does."""
        cdef int role = ROLES[event.type_code]
        if role == STARTS or role == STARTS_MARIADB or role == STARTS_MYSQL:
            if self.open:
                self.close(event.pos, False)
            self.begin_with_gtid(event, raw, role)
        elif not self.open and role != OUTSIDE:
            self.begin(event.pos, None, False)
        self.last_xid = self.xid(event, raw) if role == ENDS_WITH_XID else None
        self.last = event[0]
        self.has_last = True
        if not self.open:
            return 0
        if role != OUTSIDE:
            self.events += 1
        if self.ends(event, raw, role):
            self.close(event.end, True)
        return 0

    cdef int begin(self, Py_ssize_t start, gtid, bint explicit) except -1:
        self.open = True
        self.start = start
        self.gtid = gtid
        self.explicit = explicit
        self.events = 0
        return 0

    cdef int begin_with_gtid(self, const Event *event, raw, int role) except -1:
        """Begin the transaction of a GTID event, its GTID read here when of the common shapes."""
        if role == STARTS_MARIADB:
            gtid = mariadb_gtid_text(event.body, event.body_size, event.server_id)
            if gtid is not None:
                return self.begin(event.pos, gtid, not event.body[12] & STANDALONE_FLAG)
        elif role == STARTS_MYSQL and mysql_gtid_reads(event.body, event.body_size):
            return self.begin(event.pos, self.mysql_gtid(event), False)
        record = decode(self.raw_event(event, raw))
        return self.begin(event.pos, record.gtid, role == STARTS_MARIADB and not record.flags & STANDALONE_FLAG)

    cdef str mysql_gtid(self, const Event *event):
        """The GTID of a MySQL GTID event (``sid:gno``) or ``ANONYMOUS``, as ``events.gtid`` reads it."""
        if event.type_code == ANONYMOUS_CODE:
            return "ANONYMOUS"
        if self.sid is None or memcmp(PyBytes_AS_STRING(self.sid), event.body + 1, 16) != 0:
            self.sid = PyBytes_FromStringAndSize(<const char *>event.body + 1, 16)
            self.sid_text = uuid_text(self.sid)
        return f"{self.sid_text}:{little_endian(event.body + 17, 8)}"

    cdef object xid(self, const Event *event, raw):
        """The XID of an XID event (``xid 8``); a body of any other size is decode's to refuse."""
        if event.body_size == 8:
            return little_endian(event.body, 8)
        return decode(self.raw_event(event, raw)).xid

    cdef object raw_event(self, const Event *event, raw):
        """The RawEvent of ``event``, for decode."""
        return raw if raw is not None else self.frames.raw_event(event.pos, event.head)

    cdef bint ends(self, const Event *event, raw, int role) except -1:
        """Whether ``event`` ends the open transaction (``transactions._ends``; a BEGIN makes it explicit)."""
        cdef int words = OTHER_WORDS
        if role == ENDS_WITH_XID or role == ENDS:
            return True
        if role == QUERY or role == STATEMENT:
            if role == QUERY:
                words = query_words(event.body, event.body_size, self.post_header(event, raw, QUERY_CODE, 13))
            if words == BEGIN_WORD:
                self.explicit = True
                return False
            return words == END_WORD or not self.explicit
        if role == ROWS:
            return not self.explicit and statement_end(event, self.post_header(event, raw, event.type_code, 8))
        return False

    cdef int post_header(self, const Event *event, raw, int type_code, int default) except -1:
        """The post-header length of ``type_code`` in the format description of ``event``."""
        fde = self.frames.fde if raw is None else raw.fde
        if fde is not self.fde:
            self.fde = fde
            self.post_headers = fde.post_header_lengths
        if 0 < type_code <= PyBytes_GET_SIZE(self.post_headers):
            return self.post_headers[type_code - 1]
        return default

    cdef int close(self, Py_ssize_t end, bint complete) except -1:
        """Add the open transaction, ending at ``end``, to those found; with the last event
        read when it ends there (``transactions._transaction``)."""
        cdef Event *last = &self.last
        name = self.reader.name
        if not self.has_last or last.end != end:
            found = Transaction(name, self.start, end, self.gtid, self.events, complete)
        else:
            header = _new_tuple(EventHeader, (
                last.timestamp, last.type_code, last.server_id, last.size, last.log_pos, last.flags,
            ))
            found = Transaction(name, self.start, end, self.gtid, self.events, complete,
                                header, self.last_xid, last.type_code == PAYLOAD_CODE)
        self.found.append(found)
        self.open = False
        self.gtid = None
        return 0
