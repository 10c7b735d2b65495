# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Rows events written straight as JSON Lines text, in C (the compiled build only).

``binlog-codec rows`` prints one JSON object per row change (see
:func:`binlog_codec.cli.cmd_rows`). Its Python path decodes every value into a
Python object (:mod:`binlog_codec.rows`, :mod:`binlog_codec.values`) and
encodes them with :mod:`json`. This module writes the very same text without
making those objects: it walks the row images of a rows event (WL#5092: a null
bitmap of the image's columns, then the values of its non-NULL columns, in
column order) and formats each value from its bytes.

What a column's bytes mean comes from the layout :mod:`binlog_codec.values`
chose for it: its *native* description (integers, DOUBLE, DECIMAL, YEAR,
DATE, DATETIME2, TIMESTAMP2, ENUM with labels, UTF-8 text, binary strings).
Any other column (JSON, FLOAT, SET, BIT, text of other charsets, ...) is
decoded by its Python decoder and encoded by the same JSON encoder as the
Python path, value by value.

Whenever this writer meets something it does not format exactly as the
Python path would (bytes past the end of the image, text that is not UTF-8,
an ENUM index beyond its labels, a DECIMAL digit group out of range, any
error of a Python decoder), :meth:`Lines.rows` returns False and the caller
decodes the event through the Python path, which gives the located error or
the value. Tests check both paths give the same bytes
(``tests/binlog_codec/test_row_text.py``).
"""

import json

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memcpy

from binlog_codec.image_bytes cimport (
    DATE, DATETIME2, DECIMAL, DOUBLE, ENUM, HEX, INT, PADDED_HEX, PYTHON, TIMESTAMP2, UTF8, YEAR,
    ColumnPlan, DecimalGroups, Moment, Out, big_endian, civil_from_days, columns_of, date_fields, datetime2_fields,
    decimal_groups, describe_column, fraction_micro, grow, integer, prefixed, put, put_char,
    utf8_sequence,
)


cdef extern from "Python.h":
    char *PyOS_double_to_string(double val, char format_code, int precision, int flags, int *ptype) except NULL
    int Py_DTSF_ADD_DOT_0


cdef extern from "math.h":
    bint isnan(double x) nogil
    bint isinf(double x) nogil


cdef const char *HEX_DIGITS = b"0123456789abcdef"
# The two decimal digits of 0 to 99, one pair after the other.
cdef char DIGIT_PAIRS[200]
for _number in range(100):
    DIGIT_PAIRS[2 * _number] = 48 + _number // 10
    DIGIT_PAIRS[2 * _number + 1] = 48 + _number % 10
# What json writes for each ASCII character it escapes (``\\"``, ``\\n``, ``\\u001f``, ...), taken from
# json itself; ESCAPE_SIZES is 0 for the characters it writes as they are.
cdef char ESCAPES[128][6]
cdef Py_ssize_t ESCAPE_SIZES[128]
for _byte in range(128):
    _quoted = json.dumps(chr(_byte), ensure_ascii=False)
    _escape = _quoted[1:len(_quoted) - 1].encode()
    ESCAPE_SIZES[_byte] = len(_escape) if len(_escape) > 1 else 0
    for _at, _char in enumerate(_escape if len(_escape) > 1 else b""):
        ESCAPES[_byte][_at] = _char
# The two hex digits of every byte value, one pair after the other.
cdef char HEX_PAIRS[512]
for _byte in range(256):
    HEX_PAIRS[2 * _byte] = HEX_DIGITS[_byte >> 4]
    HEX_PAIRS[2 * _byte + 1] = HEX_DIGITS[_byte & 15]

# A value this writer does not format: the caller takes the Python path.
cdef Py_ssize_t NOT_HERE = -1


cdef inline int put_bytes(Out *out, bytes text) except -1:
    return put(out, PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text))


cdef int put_unsigned(Out *out, uint64_t value, int width) except -1:
    """``value`` in decimal, zero-padded to at least ``width`` digits (Python's ``%0{width}d``),
    two digits at a time."""
    cdef char digits[24]
    cdef int at = 24
    cdef uint64_t pair
    while value >= 100:
        pair = value % 100
        value //= 100
        at -= 2
        memcpy(&digits[at], &DIGIT_PAIRS[2 * pair], 2)
    if value >= 10:
        at -= 2
        memcpy(&digits[at], &DIGIT_PAIRS[2 * value], 2)
    else:
        at -= 1
        digits[at] = <char>(48 + value)
    while 24 - at < width:
        at -= 1
        digits[at] = b'0'
    return put(out, &digits[at], 24 - at)


cdef inline int put_signed(Out *out, int64_t value) except -1:
    if value < 0:
        put_char(out, b'-')
        return put_unsigned(out, <uint64_t>0 - <uint64_t>value, 1)
    return put_unsigned(out, <uint64_t>value, 1)


cdef int put_fraction(Out *out, uint64_t micro, int fsp) except -1:
    """``f".{micro:06d}"[:fsp + 1]``, nothing when ``fsp`` is 0 (values.py ``_fraction``)."""
    cdef char digits[24]
    cdef int n = 0
    if fsp == 0:
        return 0
    while True:
        digits[23 - n] = <char>(48 + micro % 10)
        micro //= 10
        n += 1
        if micro == 0 and n >= 6:
            break
    put_char(out, b'.')
    return put(out, &digits[24 - n], fsp if fsp < n else n)


cdef int put_clock(Out *out, uint64_t hour, uint64_t minute, uint64_t second) except -1:
    put_unsigned(out, hour, 2)
    put_char(out, b':')
    put_unsigned(out, minute, 2)
    put_char(out, b':')
    return put_unsigned(out, second, 2)


cdef int put_day(Out *out, uint64_t year, uint64_t month, uint64_t day) except -1:
    put_unsigned(out, year, 4)
    put_char(out, b'-')
    put_unsigned(out, month, 2)
    put_char(out, b'-')
    return put_unsigned(out, day, 2)


cdef int put_datetime2(Out *out, const uint8_t *p, int fsp) except -1:
    """DATETIME(fsp) as values.py ``_datetime2`` writes it. Returns 1 when written, 0 when not."""
    cdef Moment moment
    if not datetime2_fields(p, fsp, &moment):
        return 0
    put_char(out, b'"')
    put_day(out, <uint64_t>moment.year, moment.month, moment.day)
    put_char(out, b' ')
    put_clock(out, moment.hour, moment.minute, moment.second)
    put_fraction(out, moment.micro, fsp)
    put_char(out, b'"')
    return 1


cdef int put_timestamp2(Out *out, const uint8_t *p, int fsp) except -1:
    """TIMESTAMP(fsp) as values.py ``timestamp_text`` writes it: UTC, the zero timestamp kept."""
    cdef uint64_t seconds = big_endian(p, 4)
    cdef uint64_t micro = fraction_micro(p + 4, fsp)
    cdef int64_t year
    cdef int month, day
    put_char(out, b'"')
    if seconds == 0 and micro == 0:
        put(out, b"0000-00-00 00:00:00", 19)
    else:
        civil_from_days(<int64_t>(seconds // 86400), &year, &month, &day)
        put_day(out, <uint64_t>year, month, day)
        put_char(out, b' ')
        seconds %= 86400
        put_clock(out, seconds // 3600, seconds // 60 % 60, seconds % 60)
    put_fraction(out, micro, fsp)
    return put_char(out, b'"')


cdef int put_short_decimal(Out *out, double value) except -1:
    """``repr(value)`` for a value ``repr`` writes in fixed notation (1e-4 <= |value| < 1e15)
    with few digits, the common case; returns 0 (writing nothing) for the others.

    ``repr`` writes the shortest decimal that reads back as ``value``. Fewer fractional
    digits mean fewer digits, so the first ``k`` for which the integer ``m`` nearest to
    ``value * 10**k`` reads back (``m / 10**k == value``, exact IEEE arithmetic while ``m``
    and ``10**k`` are exact doubles) gives it: while ``|value| * 10**k < 2**50`` the product
    is within 1/16 of its true value, and any decimal that reads back within 1/16 of ``m``."""
    cdef double magnitude = -value if value < 0 else value
    cdef double scaled, power = 1.0
    cdef int64_t m
    cdef int k
    if not (1e-4 <= magnitude < 1e15):
        return 0
    for k in range(18):
        scaled = magnitude * power
        if scaled >= 1125899906842624.0:  # 2**50
            return 0
        m = <int64_t>(scaled + 0.5)
        if <double>m / power == magnitude:
            if value < 0:
                put_char(out, b'-')
            put_unsigned(out, <uint64_t>(m // <int64_t>power), 1)
            put_char(out, b'.')
            put_unsigned(out, <uint64_t>(m % <int64_t>power), k if k else 1)  # 12.0 for k == 0
            return 1
        power *= 10.0
    return 0


cdef int put_double(Out *out, const uint8_t *p) except -1:
    """A DOUBLE as :mod:`json` writes a float: ``repr``, or NaN/Infinity/-Infinity."""
    cdef double value
    cdef char *text
    memcpy(&value, p, 8)
    if isnan(value):
        return put(out, b"NaN", 3)
    if isinf(value):
        return put(out, b"Infinity", 8) if value > 0 else put(out, b"-Infinity", 9)
    if put_short_decimal(out, value):
        return 0
    text = PyOS_double_to_string(value, b'r', 0, Py_DTSF_ADD_DOT_0, NULL)
    try:
        n = 0
        while text[n]:
            n += 1
        put(out, text, n)
    finally:
        PyMem_Free(text)
    return 0


cdef int put_decimal(Out *out, const uint8_t *p, int precision, int scale) except -1:
    """A binary DECIMAL (``decimal2bin``) as values.py writes it: ``format(Decimal, "f")`` in
    quotes. Returns 1 when written, 0 when a digit group is out of its range."""
    cdef DecimalGroups decimal
    cdef int g
    cdef bint started = False
    if not decimal_groups(p, precision, scale, &decimal):
        return 0
    put_char(out, b'"')
    if decimal.negative:
        put_char(out, b'-')
    for g in range(decimal.integral):
        if started:
            put_unsigned(out, decimal.groups[g], decimal.digits[g])
        elif decimal.groups[g]:
            put_unsigned(out, decimal.groups[g], 1)
            started = True
    if not started:
        put_char(out, b'0')
    if scale:
        put_char(out, b'.')
        for g in range(decimal.integral, decimal.count):
            put_unsigned(out, decimal.groups[g], decimal.digits[g])
    put_char(out, b'"')
    return 1


cdef inline bint plain_ascii_word(const uint8_t *p) noexcept nogil:
    """Whether the 8 bytes at ``p`` are ASCII that JSON writes as is: none at or above 0x80,
    below 0x20, ``"`` or ``\\`` (tested all at once, a bit per byte: Anderson's "has zero byte")."""
    cdef uint64_t word, ones = 0x0101010101010101, highs = 0x8080808080808080
    cdef uint64_t quote, backslash
    memcpy(&word, p, 8)
    quote = word ^ (0x22 * ones)
    backslash = word ^ (0x5C * ones)
    return not ((word | (word - 0x20 * ones) | (quote - ones) & ~quote | (backslash - ones) & ~backslash) & highs)


cdef int put_utf8_string(Out *out, const uint8_t *p, Py_ssize_t size) except -1:
    """UTF-8 bytes as a JSON string the way ``json`` writes the str (``ensure_ascii=False``):
    ``"`` and ``\\`` escaped, control characters as ``\\n``... or ``\\u00XX``, the rest as is.
    Returns 1 when written, 0 when the bytes are not valid UTF-8."""
    cdef Py_ssize_t i = 0, run = 0, sequence
    cdef uint8_t byte
    grow(out, size + 2)
    put_char(out, b'"')
    while i < size:
        if i + 8 <= size and plain_ascii_word(p + i):
            i += 8
            continue
        byte = p[i]
        if byte >= 0x80:
            sequence = utf8_sequence(p + i, size - i)
            if sequence == 0:
                return 0
            i += sequence
            continue
        if byte >= 0x20 and byte != 0x22 and byte != 0x5C:
            i += 1
            continue
        put(out, <const char *>p + run, i - run)
        put(out, ESCAPES[byte], ESCAPE_SIZES[byte])
        i += 1
        run = i
    put(out, <const char *>p + run, size - run)
    put_char(out, b'"')
    return 1


cdef int put_hex(Out *out, const uint8_t *p, Py_ssize_t size, Py_ssize_t zeros) except -1:
    """Bytes as ``{"hex": "..."}``, with ``zeros`` zero bytes after them (BINARY(n) padding)."""
    cdef Py_ssize_t i
    cdef char *at
    grow(out, 2 * (size + zeros) + 12)
    put(out, b'{"hex": "', 9)
    at = out.data + out.length
    for i in range(size):
        memcpy(at + 2 * i, &HEX_PAIRS[2 * p[i]], 2)
    for i in range(size, size + zeros):
        at[2 * i] = b'0'
        at[2 * i + 1] = b'0'
    out.length += 2 * (size + zeros)
    return put(out, b'"}', 2)


cdef class TextPlan:
    """How to write the rows of one table: per column, its kind and parameters, its key text
    (``"name": ``), and its ENUM labels (as JSON strings) or Python decoder."""

    cdef ColumnPlan *columns
    cdef int count
    cdef list keys
    cdef list extras
    cdef object encode
    cdef dict present  # column bitmap -> the columns it selects (image_bytes.columns_of)

    def __cinit__(self):
        self.columns = NULL

    def __dealloc__(self):
        PyMem_Free(self.columns)

    def __init__(self, plan, encode):
        """``plan``: the table's :class:`~binlog_codec.rows.DecodingPlan`; ``encode``: the Python
        path's JSON encoder of one value (object -> str)."""
        self.count = len(plan.names)
        self.columns = <ColumnPlan *>PyMem_Malloc(max(self.count, 1) * sizeof(ColumnPlan))
        if self.columns == NULL:
            raise MemoryError()
        self.encode = encode
        self.present = {}
        self.keys = [(encode(name) + ": ").encode() for name in plan.names]
        self.extras = []
        for index, (layout, decoder) in enumerate(zip(plan.layouts, plan.decoders)):
            native = describe_column(&self.columns[index], layout)
            if self.columns[index].kind == ENUM:  # its labels, as JSON strings
                self.extras.append([self.encode(label).encode() for label in native[2]])
            else:
                self.extras.append(decoder)

    cdef Py_ssize_t value(self, Out *out, object data, const uint8_t *p, Py_ssize_t at, Py_ssize_t end,
                          int index) except -2:
        """Write column ``index``'s value at ``at``; returns the offset after it, or NOT_HERE."""
        cdef ColumnPlan *column = &self.columns[index]
        cdef int kind = column.kind
        cdef uint64_t raw
        cdef Moment day
        cdef Py_ssize_t start, length
        if kind == PYTHON:
            return self.python_value(out, data, at, index)
        if kind == UTF8 or kind == HEX or kind == PADDED_HEX:
            length = prefixed(p, at, end, column.size, &start)
            if length < 0:
                return NOT_HERE
            if kind == UTF8:
                if not put_utf8_string(out, p + start, length):
                    return NOT_HERE
            else:
                put_hex(out, p + start, length, column.pad - length if kind == PADDED_HEX and column.pad > length else 0)
            return start + length
        if at + column.size > end:
            return NOT_HERE
        p += at
        if kind == INT:
            if column.signed_:
                put_signed(out, integer(p, column.size, True))
            else:
                put_unsigned(out, <uint64_t>integer(p, column.size, False), 1)
        elif kind == DOUBLE:
            put_double(out, p)
        elif kind == DECIMAL:
            if not put_decimal(out, p, column.precision, column.scale):
                return NOT_HERE
        elif kind == YEAR:
            put_unsigned(out, 1900 + p[0] if p[0] else 0, 1)
        elif kind == DATE:
            date_fields(p, &day)
            put_char(out, b'"')
            put_day(out, <uint64_t>day.year, day.month, day.day)
            put_char(out, b'"')
        elif kind == DATETIME2:
            if not put_datetime2(out, p, column.fsp):
                return NOT_HERE
        elif kind == TIMESTAMP2:
            put_timestamp2(out, p, column.fsp)
        elif kind == ENUM:
            raw = <uint64_t>integer(p, column.size, False)
            labels = <list>self.extras[index]
            if raw == 0:
                put(out, b'""', 2)
            elif raw > <uint64_t>len(labels):
                return NOT_HERE
            else:
                put_bytes(out, <bytes>labels[raw - 1])
        return at + column.size

    cdef Py_ssize_t python_value(self, Out *out, object data, Py_ssize_t at, int index) except -2:
        """A column without a native layout: its Python decoder, then the Python path's encoder."""
        try:
            value, after = self.extras[index](data, at)
        except Exception:  # the Python path raises it again, located at the event
            return NOT_HERE
        put_bytes(out, (<str>self.encode(value)).encode())
        return after

    cdef Py_ssize_t image(self, Out *out, object data, const uint8_t *p, Py_ssize_t at, Py_ssize_t end,
                          const int[::1] columns) except -2:
        """One image (null bitmap, then values) as a JSON object; the offset after it, or NOT_HERE."""
        cdef Py_ssize_t count = columns.shape[0], position
        cdef const uint8_t *nulls = p + at
        at += (count + 7) // 8
        if count == 0 or at > end:
            return NOT_HERE
        put_char(out, b'{')
        for position in range(count):
            if position:
                put(out, b", ", 2)
            put_bytes(out, <bytes>self.keys[columns[position]])
            if nulls[position >> 3] >> (position & 7) & 1:
                put(out, b"null", 4)
                continue
            at = self.value(out, data, p, at, end, columns[position])
            if at == NOT_HERE:
                return NOT_HERE
        put_char(out, b'}')
        return at


cdef class Lines:
    """JSON Lines gathered as UTF-8 bytes: the rows events :meth:`rows` writes, the lines
    the Python path gives to :meth:`add`, in order; :meth:`take` hands them over."""

    cdef Out out

    def __cinit__(self):
        self.out.data, self.out.length, self.out.capacity = NULL, 0, 0

    def __dealloc__(self):
        PyMem_Free(self.out.data)

    @property
    def size(self):
        return self.out.length

    def add(self, bytes text):
        put_bytes(&self.out, text)

    def take(self):
        """The bytes gathered so far; the buffer is emptied."""
        text = PyBytes_FromStringAndSize(self.out.data, self.out.length)
        self.out.length = 0
        return text

    def rows(self, TextPlan plan, event, bytes head, bytes middle):
        """Add the line of every row of ``event`` (a rows event of ``plan``'s table):
        ``head + row_index + middle + '"before": ..., "after": ..., "partial": []}'``.
        Returns False, adding nothing, when the Python path must write them (see the
        module's docstring)."""
        cdef Py_ssize_t mark = self.out.length
        if write_rows(&self.out, plan, event, head, middle):
            return True
        self.out.length = mark
        return False


cdef bint write_rows(Out *out, TextPlan plan, event, bytes head, bytes middle) except -1:
    cdef const uint8_t[::1] view
    cdef const uint8_t *p
    cdef Py_ssize_t at = 0, end, row = 0
    cdef bint insert = event.kind == "insert", delete = event.kind == "delete"
    if event.column_count != plan.count:
        return False
    data = event.rows
    before = columns_of(plan.present, event.columns_before, plan.count)
    after = before if event.columns_after is None else columns_of(plan.present, event.columns_after, plan.count)
    view = data
    end = view.shape[0]
    if end == 0:
        return True
    p = &view[0]
    while at < end:
        put_bytes(out, head)
        put_unsigned(out, <uint64_t>row, 1)
        put_bytes(out, middle)
        if insert:
            put(out, b'"before": null, "after": ', 25)
        else:
            put(out, b'"before": ', 10)
        at = plan.image(out, data, p, at, end, before)
        if at == NOT_HERE:
            return False
        if delete:
            put(out, b', "after": null', 15)
        elif not insert:
            put(out, b', "after": ', 11)
            at = plan.image(out, data, p, at, end, after)
            if at == NOT_HERE:
                return False
        put(out, b', "partial": []}\n', 17)
        row += 1
    return True
