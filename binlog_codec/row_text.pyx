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
from array import array

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy


cdef extern from "Python.h":
    char *PyOS_double_to_string(double val, char format_code, int precision, int flags, int *ptype) except NULL
    int Py_DTSF_ADD_DOT_0


cdef extern from "math.h":
    bint isnan(double x) nogil
    bint isinf(double x) nogil


# Column kinds: the native descriptions of binlog_codec.values, and PYTHON for the others.
cdef enum Kind:
    PYTHON = 0
    INT = 1
    DOUBLE = 2
    DECIMAL = 3
    YEAR = 4
    DATE = 5
    DATETIME2 = 6
    TIMESTAMP2 = 7
    ENUM = 8
    UTF8 = 9
    HEX = 10
    PADDED_HEX = 11


cdef struct ColumnPlan:
    int kind
    int size      # bytes of a fixed-size value; bytes of the length of a length-prefixed one
    int signed_   # INT: signed
    int fsp       # DATETIME2, TIMESTAMP2: fractional digits
    int precision # DECIMAL
    int scale     # DECIMAL
    int pad       # PADDED_HEX: the column's length


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
cdef int *DIG2BYTES = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4]
cdef uint32_t *POWERS_OF_TEN = [1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000]

# A value this writer does not format: the caller takes the Python path.
cdef Py_ssize_t NOT_HERE = -1


cdef struct Out:
    char *data
    Py_ssize_t length
    Py_ssize_t capacity


cdef int grow(Out *out, Py_ssize_t more) except -1:
    cdef Py_ssize_t wanted = out.length + more
    cdef Py_ssize_t capacity = out.capacity if out.capacity else 65536
    cdef char *grown
    if wanted <= out.capacity:
        return 0
    while capacity < wanted:
        capacity *= 2
    grown = <char *>PyMem_Realloc(out.data, capacity)
    if grown == NULL:
        raise MemoryError()
    out.data = grown
    out.capacity = capacity
    return 0


cdef inline int put(Out *out, const char *text, Py_ssize_t size) except -1:
    if out.length + size > out.capacity:
        grow(out, size)
    memcpy(out.data + out.length, text, size)
    out.length += size
    return 0


cdef inline int put_bytes(Out *out, bytes text) except -1:
    return put(out, PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text))


cdef inline int put_char(Out *out, char c) except -1:
    if out.length + 1 > out.capacity:
        grow(out, 1)
    out.data[out.length] = c
    out.length += 1
    return 0


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


cdef inline uint64_t little_endian(const uint8_t *p, int size) nogil:
    cdef uint64_t value = 0
    cdef int i
    for i in range(size - 1, -1, -1):
        value = value << 8 | p[i]
    return value


cdef inline uint64_t big_endian(const uint8_t *p, int size) nogil:
    cdef uint64_t value = 0
    cdef int i
    for i in range(size):
        value = value << 8 | p[i]
    return value


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


cdef inline uint64_t fraction_micro(const uint8_t *p, int fsp) nogil:
    """Microseconds of the big-endian fraction bytes of a TIME2/DATETIME2/TIMESTAMP2 value."""
    cdef int size = (fsp + 1) // 2
    return big_endian(p, size) * (1 if size == 3 else (100 if size == 2 else 10000))


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
    cdef int64_t packed = <int64_t>big_endian(p, 5) - <int64_t>0x8000000000
    cdef uint64_t ymd, hms, year_month
    if packed < 0:
        return 0
    ymd = <uint64_t>packed >> 17
    hms = <uint64_t>packed & 0x1FFFF
    year_month = ymd >> 5
    put_char(out, b'"')
    put_day(out, year_month // 13, year_month % 13, ymd & 31)
    put_char(out, b' ')
    put_clock(out, hms >> 12, (hms >> 6) & 63, hms & 63)
    if fsp:
        put_fraction(out, fraction_micro(p + 5, fsp), fsp)
    put_char(out, b'"')
    return 1


cdef void civil_from_days(int64_t days, int64_t *year, int *month, int *day) noexcept nogil:
    """The proleptic Gregorian date ``days`` after 1970-01-01 (H. Hinnant's ``civil_from_days``)."""
    cdef int64_t z = days + 719468
    cdef int64_t era = (z if z >= 0 else z - 146096) // 146097
    cdef int64_t doe = z - era * 146097
    cdef int64_t yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    cdef int64_t doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    cdef int64_t mp = (5 * doy + 2) // 153
    day[0] = <int>(doy - (153 * mp + 2) // 5 + 1)
    month[0] = <int>(mp + 3 if mp < 10 else mp - 9)
    year[0] = yoe + era * 400 + (1 if month[0] <= 2 else 0)


cdef int put_timestamp2(Out *out, const uint8_t *p, int fsp) except -1:
    """TIMESTAMP(fsp) as values.py ``timestamp_text`` writes it: UTC, the zero timestamp kept."""
    cdef uint64_t seconds = big_endian(p, 4)
    cdef uint64_t micro = fraction_micro(p + 4, fsp) if fsp else 0
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
    cdef uint8_t raw[40]
    cdef uint32_t groups[16]
    cdef int digits[16]
    cdef int integral = precision - scale
    cdef int count = 0, integral_groups, size = 0, at = 0, i, g, width
    cdef bint negative, started = False
    if integral % 9:
        digits[count] = integral % 9
        count += 1
    for i in range(integral // 9):
        digits[count] = 9
        count += 1
    integral_groups = count
    for i in range(scale // 9):
        digits[count] = 9
        count += 1
    if scale % 9:
        digits[count] = scale % 9
        count += 1
    for g in range(count):
        size += DIG2BYTES[digits[g]]
    if not 0 < size <= 40:
        return 0
    memcpy(raw, p, size)
    negative = not (raw[0] & 0x80)
    raw[0] ^= 0x80
    if negative:
        for i in range(size):
            raw[i] ^= 0xFF
    for g in range(count):
        width = DIG2BYTES[digits[g]]
        groups[g] = <uint32_t>big_endian(raw + at, width)
        at += width
        if groups[g] >= POWERS_OF_TEN[digits[g]]:
            return 0
    put_char(out, b'"')
    if negative:
        put_char(out, b'-')
    for g in range(integral_groups):
        if started:
            put_unsigned(out, groups[g], digits[g])
        elif groups[g]:
            put_unsigned(out, groups[g], 1)
            started = True
    if not started:
        put_char(out, b'0')
    if scale:
        put_char(out, b'.')
        for g in range(integral_groups, count):
            put_unsigned(out, groups[g], digits[g])
    put_char(out, b'"')
    return 1


cdef inline int continuation(uint8_t byte) nogil:
    return (byte & 0xC0) == 0x80


cdef Py_ssize_t utf8_sequence(const uint8_t *p, Py_ssize_t left) nogil:
    """The length of the UTF-8 sequence at ``p`` as Python's strict decoder accepts it
    (no overlong forms, no surrogates, nothing past U+10FFFF); 0 when it is not one."""
    cdef uint8_t first = p[0]
    if 0xC2 <= first <= 0xDF:
        return 2 if left >= 2 and continuation(p[1]) else 0
    if 0xE0 <= first <= 0xEF:
        if left < 3 or not continuation(p[1]) or not continuation(p[2]):
            return 0
        if (first == 0xE0 and p[1] < 0xA0) or (first == 0xED and p[1] > 0x9F):
            return 0
        return 3
    if 0xF0 <= first <= 0xF4:
        if left < 4 or not continuation(p[1]) or not continuation(p[2]) or not continuation(p[3]):
            return 0
        if (first == 0xF0 and p[1] < 0x90) or (first == 0xF4 and p[1] > 0x8F):
            return 0
        return 4
    return 0


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
    cdef dict present

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
            self.extras.append(self._describe(&self.columns[index], layout, decoder))

    cdef object _describe(self, ColumnPlan *column, object layout, object decoder):
        """Fill ``column`` from a layout's native description; returns the column's extra."""
        native = getattr(layout, "native", None)
        column.kind = PYTHON
        column.size = layout.size if native is not None and isinstance(layout, tuple) else 0
        if native is None:
            return decoder
        name = native[0]
        if name == "int":
            column.kind, column.size, column.signed_ = INT, native[1], native[2]
        elif name == "double":
            column.kind = DOUBLE
        elif name == "decimal":
            column.kind, column.precision, column.scale = DECIMAL, native[1], native[2]
        elif name == "year":
            column.kind = YEAR
        elif name == "date":
            column.kind = DATE
        elif name == "datetime2":
            column.kind, column.fsp = DATETIME2, native[1]
        elif name == "timestamp2":
            column.kind, column.fsp = TIMESTAMP2, native[1]
        elif name == "enum":
            column.kind, column.size = ENUM, native[1]
            return [self.encode(label).encode() for label in native[2]]
        elif name == "utf8":
            column.kind, column.size = UTF8, native[1]
        elif name == "hex":
            column.kind, column.size = HEX, native[1]
        elif name == "padded_hex":
            column.kind, column.size, column.pad = PADDED_HEX, native[1], native[2]
        return decoder

    cdef object columns_of(self, object bitmap):
        """The columns a column bitmap (WL#5092) selects, as an ``array('i')``, once per bitmap."""
        key = bytes(bitmap)
        found = self.present.get(key)
        if found is None:
            found = self.present[key] = array("i", [i for i in range(self.count) if key[i // 8] >> (i % 8) & 1])
        return found

    cdef Py_ssize_t value(self, Out *out, object data, const uint8_t *p, Py_ssize_t at, Py_ssize_t end,
                          int index) except -2:
        """Write column ``index``'s value at ``at``; returns the offset after it, or NOT_HERE."""
        cdef ColumnPlan *column = &self.columns[index]
        cdef int kind = column.kind
        cdef uint64_t raw, length
        cdef Py_ssize_t start
        if kind == PYTHON:
            return self.python_value(out, data, at, index)
        if kind == UTF8 or kind == HEX or kind == PADDED_HEX:
            start = at + column.size
            if start > end:
                return NOT_HERE
            length = little_endian(p + at, column.size)
            if <uint64_t>(end - start) < length:
                return NOT_HERE
            if kind == UTF8:
                if not put_utf8_string(out, p + start, <Py_ssize_t>length):
                    return NOT_HERE
            else:
                put_hex(out, p + start, <Py_ssize_t>length,
                        column.pad - <Py_ssize_t>length if kind == PADDED_HEX and column.pad > <Py_ssize_t>length else 0)
            return start + <Py_ssize_t>length
        if at + column.size > end:
            return NOT_HERE
        p += at
        if kind == INT:
            raw = little_endian(p, column.size)
            if column.signed_ and column.size < 8 and raw >> (8 * column.size - 1):
                raw |= ~((<uint64_t>1 << (8 * column.size)) - 1)
            if column.signed_:
                put_signed(out, <int64_t>raw)
            else:
                put_unsigned(out, raw, 1)
        elif kind == DOUBLE:
            put_double(out, p)
        elif kind == DECIMAL:
            if not put_decimal(out, p, column.precision, column.scale):
                return NOT_HERE
        elif kind == YEAR:
            put_unsigned(out, 1900 + p[0] if p[0] else 0, 1)
        elif kind == DATE:
            raw = little_endian(p, 3)
            put_char(out, b'"')
            put_day(out, raw >> 9, (raw >> 5) & 15, raw & 31)
            put_char(out, b'"')
        elif kind == DATETIME2:
            if not put_datetime2(out, p, column.fsp):
                return NOT_HERE
        elif kind == TIMESTAMP2:
            put_timestamp2(out, p, column.fsp)
        elif kind == ENUM:
            raw = little_endian(p, column.size)
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
    before = plan.columns_of(event.columns_before)
    after = before if event.columns_after is None else plan.columns_of(event.columns_after)
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
