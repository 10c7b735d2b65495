# cython: language_level=3
"""The byte layouts of row image values, read in C: what the compiled build's row writers
(binlog_codec.row_text, binlog_codec.row_arrow) share.

A rows event's image is a null bitmap, then the values of its non-NULL columns in column
order (WL#5092). Each column's layout is the one binlog_codec.values chose for it; its
*native* description (a tuple such as ("int", 4, True)) says how to read it here and
describe_column turns it into a ColumnPlan. Columns without one are read by their Python
decoder. Everything here is inline C; a writer adds what it makes of the values.
"""

from cpython cimport array
from cpython.mem cimport PyMem_Realloc
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy


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


cdef inline object describe_column(ColumnPlan *column, object layout):
    """Fill ``column`` from the native description of a column's layout (``FixedWidth.native``,
    or the ``native`` attribute of a length-prefixed decoder); returns that description, None
    for a column of kind PYTHON."""
    native = getattr(layout, "native", None)
    column.kind, column.size, column.signed_, column.fsp = PYTHON, 0, 0, 0
    column.precision, column.scale, column.pad = 0, 0, 0
    if native is None:
        return None
    name = native[0]
    if name == "int":
        column.kind, column.signed_ = INT, native[2]
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
        column.kind = ENUM
    elif name == "utf8":
        column.kind = UTF8
    elif name == "hex":
        column.kind = HEX
    elif name == "padded_hex":
        column.kind, column.pad = PADDED_HEX, native[2]
    else:
        return None
    # the bytes of a fixed-size value (FixedWidth is a tuple), or of a payload's length
    column.size = layout.size if isinstance(layout, tuple) else native[1]
    return native


cdef inline array.array columns_of(dict chosen, object bitmap, Py_ssize_t count):
    """The columns a column bitmap (WL#5092) of a table of ``count`` columns selects, in
    order, as an ``array('i')``: worked out once per bitmap, and kept in ``chosen``. A bitmap
    too short for ``count`` columns is a ValueError (its bytes are read without bounds checks)."""
    cdef bytes key = bytes(bitmap)
    found = chosen.get(key)
    if found is None:
        if len(key) < (count + 7) // 8:
            raise ValueError(f"a column bitmap of {len(key)} bytes for {count} columns")
        found = chosen[key] = array.array("i", [i for i in range(count) if key[i >> 3] >> (i & 7) & 1])
    return found


# -- a growing byte buffer ---------------------------------------------------------------


cdef struct Out:
    char *data
    Py_ssize_t length
    Py_ssize_t capacity


cdef inline int grow(Out *out, Py_ssize_t more) except -1:
    """Room for ``more`` bytes after the buffer's contents (doubling, from 64 KiB)."""
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


cdef inline int put(Out *out, const void *data, Py_ssize_t size) except -1:
    if out.length + size > out.capacity:
        grow(out, size)
    memcpy(out.data + out.length, data, size)
    out.length += size
    return 0


cdef inline int put_char(Out *out, char c) except -1:
    if out.length + 1 > out.capacity:
        grow(out, 1)
    out.data[out.length] = c
    out.length += 1
    return 0


# -- integers ----------------------------------------------------------------------------


cdef inline uint64_t little_endian(const uint8_t *p, int size) noexcept nogil:
    cdef uint64_t value = 0
    cdef int i
    for i in range(size - 1, -1, -1):
        value = value << 8 | p[i]
    return value


cdef inline uint64_t big_endian(const uint8_t *p, int size) noexcept nogil:
    cdef uint64_t value = 0
    cdef int i
    for i in range(size):
        value = value << 8 | p[i]
    return value


cdef inline int64_t integer(const uint8_t *p, int size, bint signed_) noexcept nogil:
    """A little-endian integer of ``size`` bytes (1 to 8), sign-extended when ``signed_``;
    an unsigned 8-byte value above 2**63 comes back as its two's complement."""
    cdef uint64_t raw = little_endian(p, size)
    if signed_ and size < 8 and raw >> (8 * size - 1):
        raw |= ~((<uint64_t>1 << (8 * size)) - 1)
    return <int64_t>raw


cdef inline Py_ssize_t prefixed(const uint8_t *p, Py_ssize_t at, Py_ssize_t end, int width,
                                Py_ssize_t *start) noexcept nogil:
    """The length of the length-prefixed value at ``at`` (a ``width``-byte length, then the
    payload, which begins at ``start``); -1 when either runs past ``end``."""
    cdef uint64_t length
    start[0] = at + width
    if start[0] > end:
        return -1
    length = little_endian(p + at, width)
    if <uint64_t>(end - start[0]) < length:
        return -1
    return <Py_ssize_t>length


# -- temporal values ---------------------------------------------------------------------


cdef struct Moment:
    int64_t year
    int month
    int day
    int hour
    int minute
    int second
    uint64_t micro


cdef inline uint64_t fraction_micro(const uint8_t *p, int fsp) noexcept nogil:
    """Microseconds of the big-endian fraction bytes of a TIME2/DATETIME2/TIMESTAMP2 value."""
    cdef int size = (fsp + 1) // 2
    if size == 0:
        return 0
    return big_endian(p, size) * (1 if size == 3 else (100 if size == 2 else 10000))


cdef inline void date_fields(const uint8_t *p, Moment *moment) noexcept nogil:
    """DATE: 3 bytes little-endian, ``year << 9 | month << 5 | day``."""
    cdef uint64_t raw = little_endian(p, 3)
    moment.year, moment.month, moment.day = <int64_t>(raw >> 9), <int>((raw >> 5) & 15), <int>(raw & 31)
    moment.hour, moment.minute, moment.second, moment.micro = 0, 0, 0, 0


cdef inline bint datetime2_fields(const uint8_t *p, int fsp, Moment *moment) noexcept nogil:
    """DATETIME2 (``TIME_to_longlong_datetime_packed``): 5 big-endian bytes less 0x8000000000,
    ``year * 13 + month`` then day, hour, minute, second bit fields, then the fraction.
    False for a negative packed value."""
    cdef int64_t packed = <int64_t>big_endian(p, 5) - <int64_t>0x8000000000
    cdef uint64_t ymd, hms, year_month
    if packed < 0:
        return False
    ymd = <uint64_t>packed >> 17
    hms = <uint64_t>packed & 0x1FFFF
    year_month = ymd >> 5
    moment.year, moment.month, moment.day = <int64_t>(year_month // 13), <int>(year_month % 13), <int>(ymd & 31)
    moment.hour, moment.minute, moment.second = <int>(hms >> 12), <int>((hms >> 6) & 63), <int>(hms & 63)
    moment.micro = fraction_micro(p + 5, fsp)
    return True


cdef inline void civil_from_days(int64_t days, int64_t *year, int *month, int *day) noexcept nogil:
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


cdef inline int64_t days_from_civil(int64_t year, int month, int day) noexcept nogil:
    """Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's ``days_from_civil``)."""
    cdef int64_t y = year - (1 if month <= 2 else 0)
    cdef int64_t era = (y if y >= 0 else y - 399) // 400
    cdef int64_t yoe = y - era * 400
    cdef int64_t doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    cdef int64_t doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


# -- DECIMAL -----------------------------------------------------------------------------


cdef inline int digit_bytes(int digits) noexcept nogil:
    """Bytes of a group of 0 to 9 decimal digits in binary DECIMAL (``dig2bytes``)."""
    return 4 if digits == 9 else (digits + 1) // 2


cdef inline int decimal_size(int precision, int scale) noexcept nogil:
    """Bytes of a binary DECIMAL(precision, scale) (``decimal_bin_size``)."""
    cdef int integral = precision - scale
    return (integral // 9) * 4 + digit_bytes(integral % 9) + (scale // 9) * 4 + digit_bytes(scale % 9)


cdef struct DecimalGroups:
    uint32_t groups[16]   # the digit groups, most significant first
    int digits[16]        # how many decimal digits each holds
    int count
    int integral          # how many of them are the integral part's
    bint negative


cdef inline bint decimal_groups(const uint8_t *p, int precision, int scale, DecimalGroups *out) noexcept nogil:
    """A binary DECIMAL (``decimal2bin``: groups of 9 digits in 4 big-endian bytes, the partial
    groups at the outer ends in fewer bytes, the first bit flipped, every bit flipped when
    negative) into its groups. False when a group is out of its range or the layout too long."""
    cdef uint8_t raw[40]
    cdef int integral = precision - scale
    cdef int size = decimal_size(precision, scale), at = 0, i, g, width
    cdef uint32_t limit
    out.count = 0
    if not 0 < size <= 40 or integral // 9 + scale // 9 + 2 > 16:
        return False
    if integral % 9:
        out.digits[out.count] = integral % 9
        out.count += 1
    for i in range(integral // 9):
        out.digits[out.count] = 9
        out.count += 1
    out.integral = out.count
    for i in range(scale // 9):
        out.digits[out.count] = 9
        out.count += 1
    if scale % 9:
        out.digits[out.count] = scale % 9
        out.count += 1
    memcpy(raw, p, size)
    out.negative = not (raw[0] & 0x80)
    raw[0] ^= 0x80
    if out.negative:
        for i in range(size):
            raw[i] ^= 0xFF
    for g in range(out.count):
        width = digit_bytes(out.digits[g])
        out.groups[g] = <uint32_t>big_endian(raw + at, width)
        at += width
        limit = 1
        for i in range(out.digits[g]):
            limit *= 10
        if out.groups[g] >= limit:
            return False
    return True


# -- UTF-8 -------------------------------------------------------------------------------


cdef inline bint continuation(uint8_t byte) noexcept nogil:
    return (byte & 0xC0) == 0x80


cdef inline Py_ssize_t utf8_sequence(const uint8_t *p, Py_ssize_t left) noexcept nogil:
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


cdef inline bint ascii_word(const uint8_t *p) noexcept nogil:
    """Whether the 8 bytes at ``p`` are all below 0x80."""
    cdef uint64_t word, highs = 0x8080808080808080
    memcpy(&word, p, 8)
    return not (word & highs)


cdef inline bint valid_utf8(const uint8_t *p, Py_ssize_t size) noexcept nogil:
    """Whether ``size`` bytes at ``p`` are UTF-8 as Python's strict decoder accepts it."""
    cdef Py_ssize_t i = 0, sequence
    while i < size:
        if i + 8 <= size and ascii_word(p + i):
            i += 8
        elif p[i] < 0x80:
            i += 1
        else:
            sequence = utf8_sequence(p + i, size - i)
            if sequence == 0:
                return False
            i += sequence
    return True
