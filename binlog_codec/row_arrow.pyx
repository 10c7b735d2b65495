# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Rows events decoded straight into Arrow column buffers, in C (the compiled build only).

:class:`binlog_codec.arrow.ImageBatchBuilder` makes the Arrow record batches of
the warehouse's ``changes`` layout from row changes decoded into Python objects.
:class:`ArrowRows` makes the very same batches from the bytes of whole rows
events: it walks their row images (WL#5092: a null bitmap of the image's
columns, then the values of its non-NULL columns, in column order) and appends
each value to its column's buffers -- a validity byte per row, then fixed-width
values (integers, float64, decimal128, date32, timestamp[us]) or offsets and
bytes (string, binary). The change columns are the same for every row of an
event (``_op``, file, position, GTID, commit, schema id, present columns) and
are appended once per event; ``_row_index`` counts up.

What a column's bytes mean comes from the native description
:mod:`binlog_codec.values` gives its layout (:func:`image_bytes.describe_column`);
what it becomes in Arrow, from :func:`binlog_codec.arrow.column_mapping`. A
column whose native kind and Arrow type do not meet in one of the buffers
below is read by its Python decoder and converted by that mapping's conversion,
value by value, into a list that pyarrow turns into its array.

Whenever this builder meets a value it would not store exactly as
``ImageBatchBuilder`` does -- bytes past the end of the image, text that is
not UTF-8, an ENUM index beyond its labels, a DECIMAL digit group out of range,
a date or time Arrow cannot hold (those go to ``_unrepresentable`` there), an
error of a Python decoder -- :meth:`ArrowRows.add` takes back what it appended
of the event and returns -1: the caller decodes that event through the Python
path. Tests check both give the same batches (``tests/binlog_codec/test_row_arrow.py``).
"""

cimport cython

from array import array
from pathlib import PurePath

import pyarrow as pa

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t, uintptr_t
from libc.string cimport memcpy, memset

from binlog_codec.image_bytes cimport (
    DATE, DATETIME2, DECIMAL, DOUBLE, ENUM, HEX, INT, PADDED_HEX, PYTHON, TIMESTAMP2, UTF8, YEAR,
    ColumnPlan, DecimalGroups, Moment, Out, big_endian, columns_of, date_fields, datetime2_fields, days_from_civil,
    decimal_groups, describe_column, fraction_micro, grow, integer, prefixed, put, put_char, valid_utf8,
)

from .arrow import CHANGE_COLUMNS, OPERATIONS, binlog_seq


cdef extern from *:
    ctypedef long long int128 "__int128"


# How a column's values are kept (ColumnBuffers.layout).
cdef enum Layout:
    FIXED = 0     # validity, then ``width`` bytes per value
    VARIABLE = 1  # validity, int32 offsets, bytes (string, binary)
    OBJECTS = 2   # Python values in a list, None for null
    STRUCT = 3    # validity alone; the values are the children's

cdef Py_ssize_t NOT_HERE = -1
cdef int64_t MICROS_PER_DAY = 86400000000
cdef int32_t MAX_OFFSET = 2147483647


cdef inline bint leap(int64_t year) noexcept nogil:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


cdef inline bint real_day(int64_t year, int month, int day) noexcept nogil:
    """Whether the date exists in the years a Python ``date`` holds (1 to 9999): no zero or
    partly-zero dates, no 30 February."""
    cdef int last
    if year < 1 or year > 9999 or month < 1 or month > 12 or day < 1:
        return False
    if month == 2:
        last = 29 if leap(year) else 28
    elif month == 4 or month == 6 or month == 9 or month == 11:
        last = 30
    else:
        last = 31
    return day <= last


cdef inline uint64_t truncated_micro(uint64_t micro, int fsp) noexcept nogil:
    """Microseconds cut to ``fsp`` digits, as the value's text (``values._fraction``) has them."""
    cdef uint64_t unit = 1
    cdef int i
    for i in range(6 - fsp):
        unit *= 10
    return micro - micro % unit


@cython.final
cdef class ColumnBuffers:
    """The Arrow array of one column being built (see :class:`Layout`)."""

    cdef Out validity   # one byte per row: 1 valid, 0 null
    cdef Out values     # FIXED: the values; VARIABLE: int32 offsets, starting with 0
    cdef Out data       # VARIABLE: the bytes of the values
    cdef Py_ssize_t length
    cdef int layout
    cdef int width
    cdef list objects
    cdef object type

    def __cinit__(self):
        self.validity = Out(NULL, 0, 0)
        self.values = Out(NULL, 0, 0)
        self.data = Out(NULL, 0, 0)

    def __dealloc__(self):
        PyMem_Free(self.validity.data)
        PyMem_Free(self.values.data)
        PyMem_Free(self.data.data)

    def __init__(self, arrow_type, int layout, int width=0):
        self.type = arrow_type
        self.layout = layout
        self.width = width
        self.objects = []
        self.reset()

    cdef reset(self):
        cdef int32_t zero = 0
        self.length = 0
        self.validity.length = self.values.length = self.data.length = 0
        del self.objects[:]
        if self.layout == VARIABLE:
            put(&self.values, &zero, 4)

    cdef inline char *fixed(self) except NULL:
        """Room for the next FIXED value, marked valid; the caller writes ``width`` bytes there."""
        cdef char *at
        put_char(&self.validity, 1)
        if self.values.length + self.width > self.values.capacity:
            grow(&self.values, self.width)
        at = self.values.data + self.values.length
        self.values.length += self.width
        self.length += 1
        return at

    cdef inline int bytes_value(self, const void *p, Py_ssize_t size, Py_ssize_t zeros) except -1:
        """The next VARIABLE value: ``size`` bytes at ``p``, then ``zeros`` zero bytes.
        Returns 0 when the column's bytes would pass the 2 GiB of int32 offsets."""
        cdef int32_t end
        if self.data.length + size + zeros > MAX_OFFSET:
            return 0
        put(&self.data, p, size)
        if zeros:
            grow(&self.data, zeros)
            memset(self.data.data + self.data.length, 0, zeros)
            self.data.length += zeros
        end = <int32_t>self.data.length
        put(&self.values, &end, 4)
        put_char(&self.validity, 1)
        self.length += 1
        return 1

    cdef int repeat_bytes(self, bytes value, Py_ssize_t count) except -1:
        """``count`` times the same string or binary ``value``; None is null."""
        cdef Py_ssize_t i, size
        cdef int32_t end
        if value is None:
            return self.nulls(count)
        size = PyBytes_GET_SIZE(value)
        if self.data.length + size * count > MAX_OFFSET:
            raise OverflowError("a change column passed 2 GiB in one batch")
        grow(&self.data, size * count)
        grow(&self.values, 4 * count)
        for i in range(count):
            memcpy(self.data.data + self.data.length, PyBytes_AS_STRING(value), size)
            self.data.length += size
            end = <int32_t>self.data.length
            memcpy(self.values.data + self.values.length, &end, 4)
            self.values.length += 4
        return self.mark(True, count)

    cdef int repeat_integer(self, value, Py_ssize_t count) except -1:
        """``count`` times the same integer of a FIXED column of width 4, 8 or 16 (an unsigned
        value as decimal128, such as an XID); None is null."""
        cdef int128 wide
        cdef int64_t whole
        cdef Py_ssize_t i
        if value is None:
            return self.nulls(count)
        if self.width == 16:
            wide = <int128><uint64_t>value
            for i in range(count):
                memcpy(self.fixed(), &wide, 16)
        else:
            whole = value
            for i in range(count):
                memcpy(self.fixed(), &whole, self.width)
        return 0

    cdef bint bytes_run(self, bytes values, const int32_t[::1] ends) except -1:
        """The values of ``values``, one after the other, each ending at its entry of ``ends``
        (relative to the start of ``values``). False past the 2 GiB of int32 offsets."""
        cdef Py_ssize_t i, count = ends.shape[0]
        cdef int32_t base = <int32_t>self.data.length, end
        if self.data.length + PyBytes_GET_SIZE(values) > MAX_OFFSET:
            return False
        put(&self.data, PyBytes_AS_STRING(values), PyBytes_GET_SIZE(values))
        grow(&self.values, 4 * count)
        grow(&self.validity, count)
        for i in range(count):
            end = base + ends[i]
            memcpy(self.values.data + self.values.length, &end, 4)
            self.values.length += 4
            self.validity.data[self.validity.length] = 1
            self.validity.length += 1
        self.length += count
        return True

    cdef int mark(self, bint valid, Py_ssize_t count) except -1:
        """The next ``count`` rows, valid or null, their values written apart: a STRUCT's rows
        (its children get a value or a null each), or values already in the buffers."""
        grow(&self.validity, count)
        memset(self.validity.data + self.validity.length, valid, count)
        self.validity.length += count
        self.length += count
        return 0

    cdef int null(self) except -1:
        cdef int32_t end
        put_char(&self.validity, 0)
        if self.layout == FIXED:
            grow(&self.values, self.width)
            memset(self.values.data + self.values.length, 0, self.width)
            self.values.length += self.width
        elif self.layout == VARIABLE:
            end = <int32_t>self.data.length
            put(&self.values, &end, 4)
        else:
            self.objects.append(None)
        self.length += 1
        return 0

    cdef int nulls(self, Py_ssize_t count) except -1:
        """``count`` nulls at once."""
        cdef Py_ssize_t i
        cdef int32_t end
        if self.layout == OBJECTS:
            self.objects.extend([None] * count)
        else:
            grow(&self.validity, count)
            memset(self.validity.data + self.validity.length, 0, count)
            self.validity.length += count
        if self.layout == FIXED:
            grow(&self.values, count * self.width)
            memset(self.values.data + self.values.length, 0, count * self.width)
            self.values.length += count * self.width
        elif self.layout == VARIABLE:
            end = <int32_t>self.data.length
            grow(&self.values, 4 * count)
            for i in range(count):
                memcpy(self.values.data + self.values.length + 4 * i, &end, 4)
            self.values.length += 4 * count
        self.length += count
        return 0

    cdef int truncate(self, Py_ssize_t length) except -1:
        """Back to the first ``length`` values (taking back a rows event's values)."""
        cdef int32_t end
        if length >= self.length:
            return 0
        self.validity.length = length
        if self.layout == FIXED:
            self.values.length = length * self.width
        elif self.layout == VARIABLE:
            self.values.length = (length + 1) * 4
            memcpy(&end, self.values.data + length * 4, 4)
            self.data.length = end
        else:
            del self.objects[length:]
        self.length = length
        return 0

    cdef object validity_buffer(self):
        """The validity bitmap (None when every value is there) and the null count."""
        cdef Py_ssize_t i, nulls = 0
        cdef bytearray bits
        cdef uint8_t *b
        for i in range(self.length):
            nulls += not self.validity.data[i]
        if nulls == 0:
            return None, 0
        bits = bytearray((self.length + 7) // 8)
        b = <uint8_t *>(<char *>bits)
        for i in range(self.length):
            if self.validity.data[i]:
                b[i >> 3] |= 1 << (i & 7)
        return pa.py_buffer(bits), nulls

    cdef object array(self, children=None):
        """The column's Arrow array (a struct's with its ``children``); the buffers start empty again."""
        if self.layout == OBJECTS:
            built = pa.array(self.objects, type=self.type)
        else:
            validity, nulls = self.validity_buffer()
            buffers = [validity] if self.layout == STRUCT else [validity, _buffer(&self.values)]
            if self.layout == VARIABLE:
                buffers.append(_buffer(&self.data))
            built = pa.Array.from_buffers(self.type, self.length, buffers, null_count=nulls, children=children)
        self.reset()
        return built


cdef object _buffer(Out *out):
    """The contents of ``out`` copied into a buffer of Arrow's memory pool; ``out`` keeps its
    room for the next batch. (Handing the block itself to Arrow saved the copy but left the C
    allocator's heap to grow with every batch in a long-lived process.)"""
    buffer = pa.allocate_buffer(out.length)
    if out.length:
        memcpy(<char *><uintptr_t>buffer.address, out.data, out.length)
    return buffer


@cython.final
cdef class ImageBuffers:
    """The buffers of every column of an image (the after-image's top-level columns, or the
    ``_before`` struct's children), and how to read each column's bytes into them."""

    cdef ColumnPlan *columns
    cdef int count
    cdef list buffers
    cdef list extras       # ENUM: its labels as UTF-8; PYTHON: (decoder, conversion)

    def __cinit__(self):
        self.columns = NULL

    def __dealloc__(self):
        PyMem_Free(self.columns)

    def __init__(self, plan, fields, conversions):
        self.count = len(fields)
        self.columns = <ColumnPlan *>_allocate(max(self.count, 1) * sizeof(ColumnPlan))
        self.buffers = []
        self.extras = []
        for index, (field, layout, decoder, convert) in enumerate(zip(fields, plan.layouts, plan.decoders, conversions)):
            native = describe_column(&self.columns[index], layout)
            width = _native_width(&self.columns[index], field.type)
            if width is None:  # kind and type do not meet: the Python decoder and conversion
                self.columns[index].kind = PYTHON
                self.buffers.append(ColumnBuffers(field.type, OBJECTS))
                self.extras.append((decoder, convert))
                continue
            self.buffers.append(ColumnBuffers(field.type, VARIABLE if width == 0 else FIXED, width))
            self.extras.append([label.encode() for label in native[2]] if self.columns[index].kind == ENUM else None)

    cdef int nulls(self, Py_ssize_t count) except -1:
        cdef ColumnBuffers buffers
        for buffers in self.buffers:
            buffers.nulls(count)
        return 0

    cdef int truncate(self, Py_ssize_t length) except -1:
        cdef ColumnBuffers buffers
        for buffers in self.buffers:
            buffers.truncate(length)
        return 0

    cdef list arrays(self):
        cdef ColumnBuffers buffers
        return [buffers.array() for buffers in self.buffers]

    cdef Py_ssize_t image(self, object data, const uint8_t *p, Py_ssize_t at, Py_ssize_t end,
                          const int *present, Py_ssize_t count) except -2:
        """One image at ``at`` (null bitmap, then values) appended, a null for each column it does
        not carry; the offset after it, or NOT_HERE."""
        cdef Py_ssize_t position
        cdef int index, next_column = 0
        cdef const uint8_t *null_bits = p + at
        at += (count + 7) // 8
        if count == 0 or at > end:
            return NOT_HERE
        for position in range(count):
            index = present[position]
            while next_column < index:
                (<ColumnBuffers>self.buffers[next_column]).null()
                next_column += 1
            next_column = index + 1
            if null_bits[position >> 3] >> (position & 7) & 1:
                (<ColumnBuffers>self.buffers[index]).null()
                continue
            at = self.value(data, p, at, end, index)
            if at == NOT_HERE:
                return NOT_HERE
        while next_column < self.count:
            (<ColumnBuffers>self.buffers[next_column]).null()
            next_column += 1
        return at

    cdef Py_ssize_t value(self, object data, const uint8_t *p, Py_ssize_t at, Py_ssize_t end,
                          int index) except -2:
        """Append column ``index``'s value at ``at``; returns the offset after it, or NOT_HERE."""
        cdef ColumnPlan *column = &self.columns[index]
        cdef ColumnBuffers buffers = <ColumnBuffers>self.buffers[index]
        cdef int kind = column.kind
        cdef Py_ssize_t start, length
        if kind == PYTHON:
            return self.python_value(buffers, data, at, index)
        if kind == UTF8 or kind == HEX or kind == PADDED_HEX:
            length = prefixed(p, at, end, column.size, &start)
            if length < 0 or (kind == UTF8 and not valid_utf8(p + start, length)):
                return NOT_HERE
            if not buffers.bytes_value(p + start, length,
                                       column.pad - length if kind == PADDED_HEX and column.pad > length else 0):
                return NOT_HERE
            return start + length
        if at + column.size > end:
            return NOT_HERE
        if kind == ENUM:
            if not self.enum_value(buffers, p + at, column.size, <list>self.extras[index]):
                return NOT_HERE
        elif not fixed_value(buffers, column, p + at):
            return NOT_HERE
        return at + column.size

    cdef bint enum_value(self, ColumnBuffers buffers, const uint8_t *p, int size, list labels) except -1:
        """The label of a 1-based ENUM index; '' for 0. False for an index beyond the labels."""
        cdef uint64_t raw = <uint64_t>integer(p, size, False)
        cdef bytes label
        if raw == 0:
            return buffers.bytes_value(b"", 0, 0)
        if raw > <uint64_t>len(labels):
            return False
        label = <bytes>labels[raw - 1]
        return buffers.bytes_value(PyBytes_AS_STRING(label), PyBytes_GET_SIZE(label), 0)

    cdef Py_ssize_t python_value(self, ColumnBuffers buffers, object data, Py_ssize_t at, int index) except -2:
        """A column read by its Python decoder and converted as ImageBatchBuilder converts it."""
        decoder, convert = self.extras[index]
        try:
            value, after = decoder(data, at)
            buffers.objects.append(convert(value))
        except Exception:  # an unrepresentable value, or the located error the Python path raises
            return NOT_HERE
        buffers.length += 1
        return after


cdef bint fixed_value(ColumnBuffers buffers, ColumnPlan *column, const uint8_t *p) except -1:
    """Append a fixed-size value (``column.size`` bytes at ``p``) as its column's Arrow type
    stores it. False when that type cannot hold it as the Python path would."""
    cdef int kind = column.kind
    cdef int64_t whole
    cdef int128 wide
    cdef DecimalGroups decimal
    cdef Moment moment
    cdef uint64_t seconds, micro
    cdef int g, i
    if kind == INT:
        whole = integer(p, column.size, column.signed_)
        if buffers.width == 16:  # decimal128(20, 0): BIGINT UNSIGNED and its like
            wide = <int128>whole if column.signed_ else <int128><uint64_t>whole
            memcpy(buffers.fixed(), &wide, 16)
        else:
            memcpy(buffers.fixed(), &whole, buffers.width)  # little-endian: the low bytes
    elif kind == DOUBLE:
        memcpy(buffers.fixed(), p, 8)
    elif kind == DECIMAL:
        if not decimal_groups(p, column.precision, column.scale, &decimal):
            return False
        wide = 0
        for g in range(decimal.count):
            for i in range(decimal.digits[g]):
                wide *= 10
            wide += decimal.groups[g]
        if decimal.negative:
            wide = -wide
        memcpy(buffers.fixed(), &wide, 16)
    elif kind == YEAR:
        whole = 1900 + p[0] if p[0] else 0
        memcpy(buffers.fixed(), &whole, 2)
    elif kind == DATE:
        date_fields(p, &moment)
        if not real_day(moment.year, moment.month, moment.day):
            return False
        whole = days_from_civil(moment.year, moment.month, moment.day)
        memcpy(buffers.fixed(), &whole, 4)
    elif kind == DATETIME2:
        if not datetime2_fields(p, column.fsp, &moment) or not real_day(moment.year, moment.month, moment.day):
            return False
        if moment.hour > 23 or moment.minute > 59 or moment.second > 59 or moment.micro >= 1000000:
            return False
        whole = days_from_civil(moment.year, moment.month, moment.day) * MICROS_PER_DAY
        whole += ((moment.hour * 60 + moment.minute) * 60 + moment.second) * <int64_t>1000000
        whole += <int64_t>truncated_micro(moment.micro, column.fsp)
        memcpy(buffers.fixed(), &whole, 8)
    elif kind == TIMESTAMP2:
        seconds = big_endian(p, 4)
        micro = fraction_micro(p + 4, column.fsp)
        if (seconds == 0 and micro == 0) or micro >= 1000000:  # the zero timestamp has no Arrow value
            return False
        whole = <int64_t>seconds * 1000000 + <int64_t>truncated_micro(micro, column.fsp)
        memcpy(buffers.fixed(), &whole, 8)
    else:
        return False
    return True


cdef void *_allocate(size_t size) except NULL:
    cdef void *block = PyMem_Malloc(size)
    if block == NULL:
        raise MemoryError()
    return block


# The Arrow type each native kind is stored in, by the bytes of one value (0: offsets and bytes).
_INTEGER_WIDTHS = {pa.int8(): 1, pa.int16(): 2, pa.int32(): 4, pa.int64(): 8, pa.decimal128(20, 0): 16}


cdef object _native_width(ColumnPlan *column, arrow_type):
    """The width of the buffers a column of this native kind has in ``arrow_type``; None
    when they do not meet (the column is then read through Python)."""
    kind = column.kind
    if kind == INT:
        return _INTEGER_WIDTHS.get(arrow_type)
    if kind == DOUBLE and arrow_type == pa.float64():
        return 8
    if kind == DECIMAL and pa.types.is_decimal128(arrow_type):  # not DECIMAL(p > 38), which is text
        return 16
    if kind == YEAR and arrow_type == pa.int16():
        return 2
    if kind == DATE and arrow_type == pa.date32():
        return 4
    if kind == DATETIME2 and arrow_type == pa.timestamp("us"):
        return 8
    if kind == TIMESTAMP2 and arrow_type == pa.timestamp("us", tz="UTC"):
        return 8
    if (kind == UTF8 or kind == ENUM) and arrow_type == pa.string():
        return 0
    if (kind == HEX or kind == PADDED_HEX) and arrow_type == pa.binary():
        return 0
    return None


_NO_ENDS = array("i")


cdef str _name(str path):
    return PurePath(path).name


cdef object _empty_lists(list_type, Py_ssize_t length):
    """``length`` empty lists (or maps) of ``list_type``."""
    if isinstance(list_type, pa.MapType):
        entries = pa.nulls(0, pa.struct([list_type.key_field, list_type.item_field]))
    else:
        entries = pa.nulls(0, list_type.value_type)
    offsets = pa.py_buffer(bytes(4 * (length + 1)))
    return pa.Array.from_buffers(list_type, length, [None, offsets], children=[entries])


@cython.final
cdef class ArrowRows:
    """Rows events of one table version into record batches of its
    :func:`~binlog_codec.arrow.image_schema`, exactly as
    :class:`~binlog_codec.arrow.ImageBatchBuilder` makes them from the same rows.

    ``plan`` is the table's :class:`~binlog_codec.rows.DecodingPlan`, ``conversions``
    the :func:`~binlog_codec.arrow.column_mapping` conversion of each column."""

    cdef readonly object schema
    cdef bytes schema_id
    cdef int count
    cdef ImageBuffers after
    cdef ImageBuffers before
    cdef ColumnBuffers before_rows, op, file, seq, pos, inner_offset, row_index, gtid, server_id, xid
    cdef ColumnBuffers commit_ts, schema_ids, present_names
    cdef Out present_offsets
    cdef Py_ssize_t rows
    cdef list names         # each column's display name, as UTF-8
    cdef dict images        # column bitmap -> the columns it selects (image_bytes.columns_of)
    cdef dict present       # column bitmap -> its _present_columns (see present_of)
    cdef tuple file_name    # the last file met: (path, name as UTF-8, sequence)

    def __cinit__(self):
        self.present_offsets = Out(NULL, 0, 0)

    def __dealloc__(self):
        PyMem_Free(self.present_offsets.data)

    def __init__(self, schema, str schema_id, plan, conversions):
        cdef int32_t zero = 0
        self.schema = schema
        self.schema_id = schema_id.encode()
        self.count = len(plan.names)
        image_fields = list(schema)[:self.count]
        self.after = ImageBuffers(plan, image_fields, conversions)
        self.before = ImageBuffers(plan, image_fields, conversions)
        self.names = [name.encode() for name in plan.names]
        self.images = {}
        self.present = {}
        self.file_name = (None, b"", None)
        field = {name: schema.field(name).type for name in CHANGE_COLUMNS}
        self.before_rows = ColumnBuffers(field["_before"], STRUCT)
        self.op = ColumnBuffers(field["_op"], VARIABLE)
        self.file = ColumnBuffers(field["_binlog_file"], VARIABLE)
        self.seq = ColumnBuffers(field["_binlog_seq"], FIXED, 8)
        self.pos = ColumnBuffers(field["_binlog_pos"], FIXED, 8)
        self.inner_offset = ColumnBuffers(field["_binlog_inner_offset"], FIXED, 4)
        self.row_index = ColumnBuffers(field["_row_index"], FIXED, 4)
        self.gtid = ColumnBuffers(field["_gtid"], VARIABLE)
        self.server_id = ColumnBuffers(field["_server_id"], FIXED, 8)
        self.xid = ColumnBuffers(field["_xid"], FIXED, 16)
        self.commit_ts = ColumnBuffers(field["_commit_ts"], FIXED, 8)
        self.schema_ids = ColumnBuffers(field["_schema_id"], VARIABLE)
        self.present_names = ColumnBuffers(field["_present_columns"].value_type, VARIABLE)
        put(&self.present_offsets, &zero, 4)
        self.rows = 0

    def __len__(self):
        return self.rows

    def add(self, event, gtid, commit):
        """Append every row of ``event`` (a rows event of this table version; not a
        PARTIAL_UPDATE_ROWS one) with its transaction's GTID and
        :class:`~binlog_codec.arrow.Commit` (None when unknown). Returns how many rows it
        holds, or -1, having appended nothing, when the Python path must decode it (see the
        module's docstring)."""
        if event.column_count != self.count:
            return -1
        added = self.image_rows(event)
        if added < 0:
            self.truncate(self.rows)
            return -1
        self.change_rows(event, added, gtid, commit)
        self.rows += added
        return added

    cdef Py_ssize_t image_rows(self, event) except -2:
        """The images of every row of ``event`` appended; how many rows, or -1."""
        cdef const uint8_t[::1] view
        cdef const int[::1] before, after
        cdef const uint8_t *p
        cdef Py_ssize_t at = 0, end, added = 0
        cdef bint insert = event.kind == "insert", delete = event.kind == "delete"
        data = event.rows
        view = data
        end = view.shape[0]
        if end == 0:
            return 0
        p = &view[0]
        before = columns_of(self.images, event.columns_before, self.count)
        after = before if event.columns_after is None else columns_of(self.images, event.columns_after, self.count)
        while at < end:
            if insert:
                at = self.after.image(data, p, at, end, &before[0], before.shape[0])
            else:
                at = self.before.image(data, p, at, end, &before[0], before.shape[0])
                if at != NOT_HERE and not delete:
                    at = self.after.image(data, p, at, end, &after[0], after.shape[0])
            if at == NOT_HERE:
                return -1
            added += 1
        # the image an insert or a delete has not: nulls, and the struct of the before-image's
        if insert:
            self.before.nulls(added)
        elif delete:
            self.after.nulls(added)
        self.before_rows.mark(not insert, added)
        return added

    cdef int truncate(self, Py_ssize_t length) except -1:
        self.after.truncate(length)
        self.before.truncate(length)
        self.before_rows.truncate(length)
        return 0

    cdef int change_rows(self, event, Py_ssize_t added, gtid, commit) except -1:
        """The change columns of ``added`` rows of ``event``: the same for each but ``_row_index``."""
        cdef int32_t index
        if event.file != self.file_name[0]:
            self.file_name = (event.file, _name(event.file).encode(), binlog_seq(event.file))
        self.op.repeat_bytes(OPERATIONS[event.kind].encode(), added)
        self.file.repeat_bytes(self.file_name[1], added)
        self.seq.repeat_integer(self.file_name[2], added)
        self.pos.repeat_integer(event.pos, added)
        self.inner_offset.repeat_integer(event.inner_offset, added)
        for index in range(<int32_t>added):
            memcpy(self.row_index.fixed(), &index, 4)
        self.gtid.repeat_bytes(None if gtid is None else (<str>gtid).encode(), added)
        self.server_id.repeat_integer(None if commit is None else commit.server_id, added)
        self.xid.repeat_integer(None if commit is None else commit.xid, added)
        self.commit_ts.repeat_integer((event.header.timestamp if commit is None else commit.timestamp) * 1000000, added)
        self.schema_ids.repeat_bytes(self.schema_id, added)
        if event.kind == "delete":
            return self.present_rows(b"", _NO_ENDS, added)
        names, ends = self.present_of(event.columns_after if event.columns_after is not None else event.columns_before)
        return self.present_rows(names, ends, added)

    cdef tuple present_of(self, object bitmap):
        """The names of the columns a column bitmap selects, one after the other as UTF-8, and
        where each ends (``_present_columns`` of a row), once per bitmap."""
        key = bytes(bitmap)
        found = self.present.get(key)
        if found is None:
            names = [self.names[column] for column in columns_of(self.images, key, self.count)]
            ends = array("i", [sum(len(name) for name in names[:at + 1]) for at in range(len(names))])
            found = self.present[key] = (b"".join(names), ends)
        return found

    cdef int present_rows(self, bytes names, const int32_t[::1] ends, Py_ssize_t added) except -1:
        """``added`` rows of ``_present_columns``: each the names of ``names``, ending at ``ends``."""
        cdef Py_ssize_t row
        cdef int32_t end
        for row in range(added):
            if not self.present_names.bytes_run(names, ends):
                raise OverflowError("_present_columns passed 2 GiB in one batch")
            end = <int32_t>self.present_names.length
            put(&self.present_offsets, &end, 4)
        return 0

    def flush(self):
        """The record batch of the rows added since the last flush; the builder starts empty again."""
        cdef int32_t zero = 0
        cdef Py_ssize_t length = self.rows
        before = self.before_rows.array(self.before.arrays())
        offsets = _buffer(&self.present_offsets)
        present = pa.Array.from_buffers(self.schema.field("_present_columns").type, length, [None, offsets],
                                        children=[self.present_names.array()])
        self.present_offsets.length = 0
        put(&self.present_offsets, &zero, 4)
        arrays = self.after.arrays() + [
            self.op.array(), self.file.array(), self.seq.array(), self.pos.array(), self.inner_offset.array(),
            self.row_index.array(), self.gtid.array(), self.server_id.array(), self.xid.array(),
            self.commit_ts.array(), self.schema_ids.array(), before, present,
            *(_empty_lists(self.schema.field(name).type, length)
              for name in ("_partial_columns", "_partial_diffs", "_unrepresentable")),
        ]
        self.rows = 0
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)
