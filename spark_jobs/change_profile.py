"""The profile of a table's row changes: what the quality gate's expectations are evaluated over.

:func:`profile_table` reads the changes files of one table once, in batches of
:data:`BATCH_ROWS` rows and only the columns a check needs, and measures, per
file, everything the expectations of :mod:`spark_jobs.expectations` judge:

* ``row_count``: the file's rows;
* ``columns``: each field of the file's schema (``_before``'s fields as
  ``_before.<column>``), its Arrow type and the type ``metadata/table_schemas``
  expects (None for a column the materialize step widened, and for the change
  columns); and, once for the table, each expected field no file has;
* ``range``: per integer column and SQL type range, the values of the rows of
  that range's table versions outside it, compared exactly (Arrow's integer and
  decimal kernels: 2^64 in a BIGINT UNSIGNED ``decimal128(20, 0)`` is caught);
* ``text``: per string column, the values that are not valid UTF-8 or hold
  U+FFFD, the replacement character a decoder puts in place of bytes it could
  not read;
* ``operation``: ``_op`` values other than ``c``, ``u``, ``d``, ``r``;
* ``log_order``: rows whose change key ``(_binlog_seq, _binlog_pos,
  _binlog_inner_offset, _row_index)`` (nulls as -1) is lower than the row's
  before it in the file;
* ``unique_key``: change keys held by more than one row, across the table's
  files (one measurement for the table).

Each measurement is a row of the profile (:data:`PROFILE_COLUMNS`): the count of
offending values in the column named for its check, and the first offending
value (``example``) with where it sits (``at``: binlog file, position, row).

Memory does not grow with the run: the files are read in lockstep, a batch of
each at a time, and the uniqueness of change keys is checked window by window.
Each file is in log order (the ``log_order`` check), so a window holds every
row of every file below the lowest key its files' pending batches reach, and no
later batch can hold a key of an earlier window. A file out of log order fails
the run on its own; its duplicates are then found only within a window. One
change key repeated over more than a batch of rows is held at once (a run
that fails the check).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_jobs.run_facts import BEFORE, IntegerRange, TableFacts
from warehouse.storage import parquet_file

log = logging.getLogger(__name__)

BATCH_ROWS = 65_536
EXAMPLE_TEXT_LENGTH = 60
OPERATIONS = ("c", "u", "d", "r")
KEY = ("_binlog_seq", "_binlog_pos", "_binlog_inner_offset", "_row_index")
NO_KEY_PART = -1  # a null _binlog_seq or _binlog_inner_offset in a change key
POSITION = ("_binlog_file", "_binlog_pos", "_binlog_inner_offset", "_row_index")
SCHEMA_ID = "_schema_id"
OPERATION = "_op"

# The count column of each check's measurements (the others are None in its rows).
COUNTS = {
    "row_count": "rows", "columns": "missing", "range": "outside_range", "text": "invalid_text", "operation": "unknown_op",
    "log_order": "unordered_rows", "unique_key": "duplicate_keys", "charset": "charset_mismatches",
}
PROFILE_COLUMNS = ("check", "file", "field", "arrow_type", "expected_type", "column", *COUNTS.values(),
                   "expected", "example", "at")
# The columns a file must have for its values to be measured; a file without them fails the
# columns check and is measured no further.
MEASURED = (*KEY, *POSITION, OPERATION, SCHEMA_ID)

Key = tuple[int, int, int, int]


def measurement(check: str, **values) -> dict:
    """A row of the profile: ``values`` (see :data:`PROFILE_COLUMNS`), None elsewhere."""
    row = dict.fromkeys(PROFILE_COLUMNS)
    row.update(check=check, **values)
    return row


def profile_table(facts: TableFacts, files: list[tuple[str, str]]) -> list[dict]:
    """The profile of the table ``facts`` describes, from its changes ``files`` ((path, name
    shown in the report) pairs): one measurement per file and check, and one for the
    uniqueness of change keys over all of them."""
    streams = [_FileStream(path, name, facts) for path, name in files]
    duplicates = _Duplicates()
    for window in _windows(streams):
        duplicates.check(window, streams)
    profile = [row for stream in streams for row in stream.measurements()]
    profile.append(duplicates.measurement())
    return profile + _missing(facts, streams)


def _missing(facts: TableFacts, streams: list[_FileStream]) -> list[dict]:
    """A measurement per field the metadata expects and no file of the table has."""
    present = {name for stream in streams for name, _ in _fields(stream.schema)}
    return [measurement("columns", column=name, missing=1, expected="a field of the table's changes")
            for name in facts.expected_fields() if name not in present]


# -- change keys -----------------------------------------------------------------


def _key_arrays(batch: pa.RecordBatch | pa.Table) -> list[pa.Array]:
    """The change key's parts as int64 arrays, nulls as :data:`NO_KEY_PART`."""
    return [pc.fill_null(batch[name], NO_KEY_PART).cast(pa.int64()) for name in KEY]


def _greater(left: list, right: list):
    """Element-wise: is key ``left`` above key ``right`` (each a list of parts: arrays or scalars)?"""
    above = pc.greater(left[-1], right[-1])
    for a, b in zip(reversed(left[:-1]), reversed(right[:-1])):
        above = pc.or_(pc.greater(a, b), pc.and_(pc.equal(a, b), above))
    return above


def _equal(left: list, right: list):
    equal = pc.equal(left[0], right[0])
    for a, b in zip(left[1:], right[1:]):
        equal = pc.and_(equal, pc.equal(a, b))
    return equal


def _key_at(parts: list[pa.Array], index: int) -> Key:
    return tuple(part[index].as_py() for part in parts)


def key_text(key: Key) -> str:
    return f"seq {key[0]}, pos {key[1]}, inner offset {key[2]}, row {key[3]}"


def _first(mask) -> int:
    """The index of the first true value of a boolean array (nulls as false), -1 when none."""
    return pc.index(pc.fill_null(mask, False), True).as_py()


def _count(mask) -> int:
    return pc.sum(pc.fill_null(mask, False).cast(pa.int64())).as_py() or 0


def _position(batch: pa.RecordBatch, index: int) -> str:
    """Where row ``index`` of ``batch`` was logged: binlog file, position (+ inner offset), row."""
    file, pos, inner, row = (batch[name][index].as_py() for name in POSITION)
    return f"{file} at {pos}{'' if inner is None else f'+{inner}'} row {row}"


# -- one file --------------------------------------------------------------------


@dataclass
class _Finding:
    """Offending values of one check and column of a file: how many, the first and where."""

    count: int = 0
    example: str | None = None
    at: str | None = None

    def add(self, count: int, example, at) -> None:
        if count and self.example is None:
            self.example, self.at = example, at
        self.count += count


@dataclass(eq=False)  # a file is itself: compared by identity
class _FileStream:
    """One changes file of the table, read a batch at a time, measured as it is read."""

    path: str
    name: str
    facts: TableFacts
    rows: int = 0
    ordered: bool = True
    pending: pa.Table | None = None  # change keys (and the file's number) not yet in a window
    exhausted: bool = False
    findings: dict[tuple[str, str, str], _Finding] = field(default_factory=dict)  # (check, column, expected)

    def __post_init__(self) -> None:
        source = parquet_file(self.path, whole=True)
        self.schema = source.schema_arrow
        present = set(self.schema.names)
        self.ranges = [(name, bounds, ids) for name, column in self.facts.columns.items() if name in present
                       and _numeric(self.schema.field(name).type) for bounds, ids in column.ranges.items()]
        self.texts = [name for name, column in self.facts.columns.items()
                      if name in present and pa.types.is_string(self.schema.field(name).type)]
        wanted = {*KEY, *POSITION, OPERATION, SCHEMA_ID, *(name for name, _, _ in self.ranges), *self.texts}
        self._batches: Iterator[pa.RecordBatch] = source.iter_batches(
            BATCH_ROWS, columns=[name for name in self.schema.names if name in wanted], use_threads=False)
        self._last: Key | None = None
        if not set(MEASURED) <= present:
            self.rows, self.exhausted = source.metadata.num_rows, True

    def refill(self, number: int) -> None:
        """Read the next batch when the pending keys are used up (or mark the file exhausted)."""
        if self.pending is None or self.pending.num_rows == 0:
            self.read(number)

    def read(self, number: int) -> None:
        """Add the file's next batch to its pending keys; the file is exhausted when it has none."""
        while not self.exhausted:
            batch = next(self._batches, None)
            if batch is None:
                self.exhausted = True
            elif batch.num_rows:
                keys = self._measure(batch)
                read = pa.table({**{name: part for name, part in zip(KEY, keys)},
                                 "file": pa.array(np.full(batch.num_rows, number, dtype=np.int32))})
                self.pending = read if self.pending is None else pa.concat_tables([self.pending, read])
                return

    def highest_pending(self) -> Key:
        """The highest change key among the pending ones."""
        keys = [self.pending[name] for name in KEY]
        if self.ordered:
            return _key_at(keys, self.pending.num_rows - 1)
        order = pc.sort_indices(self.pending, sort_keys=[(name, "descending") for name in KEY])
        return _key_at(keys, order[0].as_py())

    def take(self, bound: Key | None) -> pa.Table:
        """The pending keys below ``bound`` (all of them for None); the rest stay pending."""
        pending, self.pending = self.pending, None
        if bound is None:
            return pending
        below = _greater([pa.scalar(part, pa.int64()) for part in bound], [pending[name] for name in KEY])
        self.pending = pending.filter(pc.invert(below))
        return pending.filter(below)

    def measurements(self) -> list[dict]:
        expected = self.facts.expected_fields()
        rows = [measurement("row_count", file=self.name, rows=self.rows)]
        rows += [measurement("columns", file=self.name, field=name, arrow_type=arrow_type,
                             expected_type=expected.get(name)) for name, arrow_type in _fields(self.schema)]
        for (check, column, wanted), finding in self.findings.items():
            rows.append(measurement(check, file=self.name, column=column, expected=wanted, example=finding.example,
                                    at=finding.at, **{COUNTS[check]: finding.count}))
        return rows

    # -- the checks of one batch

    def _measure(self, batch: pa.RecordBatch) -> list[pa.Array]:
        keys = _key_arrays(batch)
        self._order(batch, keys)
        self._ranges(batch)
        for name in self.texts:
            self._text(batch, name)
        self._operations(batch)
        self.rows += batch.num_rows
        return keys

    def _finding(self, check: str, column: str, expected: str) -> _Finding:
        return self.findings.setdefault((check, column, expected), _Finding())

    def _order(self, batch: pa.RecordBatch, keys: list[pa.Array]) -> None:
        """Rows whose key is below the key of the row before them (the previous batch's last included)."""
        previous = [pa.concat_arrays([pa.array([part], pa.int64()), key.slice(0, len(key) - 1)])
                    for part, key in zip(self._last, keys)] if self._last else [key.slice(0, len(key) - 1) for key in keys]
        current = keys if self._last else [key.slice(1) for key in keys]
        descents = _greater(previous, current)
        count, first = _count(descents), _first(descents)
        finding = self._finding("log_order", "change key", "each row's change key above the one before")
        if count:
            self.ordered = False
            row = first + (0 if self._last else 1)
            finding.add(count, f"({key_text(_key_at(keys, row))}) after ({key_text(_key_at(previous, first))})",
                        f"row {self.rows + row} of {self.name}")
        else:
            finding.add(0, None, None)
        self._last = _key_at(keys, len(keys[0]) - 1)

    def _ranges(self, batch: pa.RecordBatch) -> None:
        versions: dict[tuple[str, ...], pa.Array] = {}
        for name, bounds, ids in self.ranges:
            ours = versions.get(tuple(ids))
            if ours is None:
                ours = versions[tuple(ids)] = pc.is_in(batch[SCHEMA_ID], value_set=pa.array(ids, pa.string()))
            outside = pc.and_(ours, _outside(batch[name], bounds))
            count = _count(outside)
            first = _first(outside) if count else -1
            self._finding("range", name, str(bounds)).add(
                count, str(batch[name][first].as_py()) if count else None, _position(batch, first) if count else None)

    def _text(self, batch: pa.RecordBatch, name: str) -> None:
        values = batch[name]
        bad = pc.or_(_not_utf8(values), pc.match_substring(values.cast(pa.binary()), "\ufffd"))
        count = _count(bad)
        first = _first(bad) if count else -1
        example = _shown_text(values.cast(pa.binary())[first].as_py()) if count else None
        self._finding("text", name, "valid UTF-8 without U+FFFD").add(
            count, example, _position(batch, first) if count else None)

    def _operations(self, batch: pa.RecordBatch) -> None:
        values = batch[OPERATION]
        bad = pc.or_(pc.is_null(values), pc.invert(pc.is_in(values, value_set=pa.array(OPERATIONS))))
        count = _count(bad)
        first = _first(bad) if count else -1
        self._finding("operation", OPERATION, "/".join(OPERATIONS)).add(
            count, repr(values[first].as_py()) if count else None, _position(batch, first) if count else None)


def _fields(schema: pa.Schema) -> list[tuple[str, str]]:
    """The file's fields and their Arrow types, those of ``_before`` as ``_before.<column>``."""
    fields = [(item.name, type_name(item.type)) for item in schema]
    if BEFORE in schema.names and pa.types.is_struct(schema.field(BEFORE).type):
        before = schema.field(BEFORE).type
        fields += [(f"{BEFORE}.{before.field(i).name}", type_name(before.field(i).type)) for i in range(before.num_fields)]
    return fields


def type_name(kind: pa.DataType) -> str:
    """``kind`` as ``metadata/table_schemas`` names Arrow types: a list's values named ``item``, as
    Arrow names them, whatever name the Parquet file gives them (``element``, the Parquet
    specification's name for them, which pyarrow writes by default)."""
    return str(_arrow_named(kind))


def _arrow_named(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        value = kind.value_field
        item = pa.field("item", _arrow_named(value.type), value.nullable, value.metadata)
        if pa.types.is_fixed_size_list(kind):
            return pa.list_(item, kind.list_size)
        return pa.large_list(item) if pa.types.is_large_list(kind) else pa.list_(item)
    if pa.types.is_struct(kind):
        return pa.struct([field.with_type(_arrow_named(field.type)) for field in kind])
    return kind


def _numeric(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_decimal(kind)


def _outside(values: pa.Array, bounds: IntegerRange):
    """Element-wise: is the value outside ``bounds``? Exact: each bound is compared in the
    column's own type, and a bound the type cannot reach leaves that side unchecked."""
    low, high = _representable(values.type)
    checks = [pc.less(values, _scalar(bounds.low, values.type)) if bounds.low > low else None,
              pc.greater(values, _scalar(bounds.high, values.type)) if bounds.high < high else None]
    checks = [check for check in checks if check is not None]
    if not checks:
        return _none(len(values))
    return checks[0] if len(checks) == 1 else pc.or_(*checks)


def _scalar(value: int, kind: pa.DataType) -> pa.Scalar:
    return pa.scalar(Decimal(value) if pa.types.is_decimal(kind) else value, kind)


def _none(length: int) -> pa.Array:
    """An all-false boolean array."""
    return pa.array(np.zeros(length, dtype=bool))


def _representable(kind: pa.DataType) -> tuple[int, int]:
    """The lowest and highest integer an Arrow integer or decimal type holds."""
    if pa.types.is_decimal(kind):
        largest = 10 ** (kind.precision - kind.scale) - 1
        return -largest, largest
    bits = kind.bit_width
    return (0, 2**bits - 1) if pa.types.is_unsigned_integer(kind) else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def _not_utf8(values: pa.Array):
    """Element-wise: is the string not valid UTF-8? Arrow checks a whole array at once; only
    an array that fails is checked value by value."""
    try:
        values.validate(full=True)
    except pa.ArrowInvalid:
        return pa.array([not _is_utf8(value) for value in values.cast(pa.binary()).to_pylist()])
    return _none(len(values))


def _is_utf8(value: bytes | None) -> bool:
    try:
        value is None or value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _shown_text(value: bytes) -> str:
    """A text value as the report shows it: decoded (bytes that are not UTF-8 as U+FFFD), cut."""
    text = value.decode("utf-8", errors="replace")
    return text[:EXAMPLE_TEXT_LENGTH] + ("…" if len(text) > EXAMPLE_TEXT_LENGTH else "")


# -- change keys across files -------------------------------------------------------


def _windows(streams: list[_FileStream]) -> Iterator[pa.Table]:
    """The change keys of every file, in windows: each window holds every pending key below
    the lowest of the highest pending keys of the files that have more to read (every key when
    none has), so that all the rows of a key fall in one window. When no pending key is below
    it, the file that set it reads on (its pending keys are all that one key)."""
    while True:
        for number, stream in enumerate(streams):
            stream.refill(number)
        pending = [stream for stream in streams if stream.pending is not None and stream.pending.num_rows]
        if not pending:
            return
        reading = {stream.highest_pending(): number for number, stream in enumerate(streams)
                   if stream in pending and not stream.exhausted}
        bound = min(reading) if reading else None
        window = pa.concat_tables([stream.take(bound) for stream in pending])
        if window.num_rows:
            yield window
        else:
            streams[reading[bound]].read(reading[bound])


@dataclass
class _Duplicates:
    """Change keys held by more than one row: how many keys, the first and its copies."""

    keys: int = 0
    example: str | None = None
    at: str | None = None

    def check(self, window: pa.Table, streams: list[_FileStream]) -> None:
        if window.num_rows < 2:
            return
        ordered = window.take(pc.sort_indices(window, sort_keys=[(name, "ascending") for name in KEY]))
        parts = [ordered[name].combine_chunks() for name in KEY]
        same = _equal([part.slice(1) for part in parts], [part.slice(0, len(part) - 1) for part in parts])
        repeated = _count(same)
        if not repeated:
            return
        # a key's first repeat starts a run of equal keys: count the runs
        starts = pc.and_(same, pc.invert(pa.concat_arrays([pa.array([False]), same.slice(0, len(same) - 1)])))
        self.keys += _count(starts)
        if self.example is None:
            first = _first(starts)
            copies = 2
            while first + copies - 1 < len(same) and same[first + copies - 1].as_py():
                copies += 1
            self.example = f"({key_text(_key_at(parts, first))}) {copies} times"
            self.at = streams[ordered["file"][first].as_py()].name

    def measurement(self) -> dict:
        return measurement("unique_key", column="change key", duplicate_keys=self.keys,
                           expected="each change key once", example=self.example, at=self.at)

