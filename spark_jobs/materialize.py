"""Materialize one source table: fold its row images onto the previous state of each key.

The decode step stages a table's row changes as Parquet in the layout of
:class:`binlog_codec.arrow.ImageBatchBuilder`: one row per row change, the
after-image's columns, then the change columns (``_op`` ... ``_unrepresentable``).
Under ``binlog_row_image=MINIMAL`` or ``NOBLOB`` an image carries only some of
the table's columns (WL#5092, "SOLUTION" and "REQUIREMENTS / Logging", R1):

==========  ==============================  =====================================
option      before image                    after image
==========  ==============================  =====================================
minimal     PKE                             the columns a value was given for
noblob      PKE + every non-blob column     those, and every non-blob column
full        every column                    every column
==========  ==============================  =====================================

where the PKE ("Primary Key Equivalent") is the primary key, else a unique key
whose columns are all NOT NULL, else every column. This step turns those images
into whole rows the way a replica does ("DEFAULT VALUES", R2: an update is
unpacked "on top of a row fetched from the storage engine"; fields without a
value in the after-image "keep their previous value"), except that the row
fetched is the previous state this step knows of the same key: the earlier change
of the key in the same run, else the row of the table's ``current``.

Outputs, for one table, under a run folder laid out like the warehouse
(docs/ARCHITECTURE.md, "Warehouse contract"):

* ``changes/<db>/<table>/commit_date=YYYY-MM-DD/<run>-<part>.parquet``: exactly
  one row per row change, in log order, with the *full* after-image:

  - insert (``c``, and a snapshot row ``r``): the columns it carries; a column it
    does not carry got the server's DEFAULT, which the log does not say
    (WL#5092 "DEFAULT VALUES", R1), so it is null and *incomplete*;
  - update (``u``): the previous state of the key named by the before-image
    (``_before``; a MINIMAL before-image holds just the PKE), overlaid with the
    before-image's known values, overlaid with the after-image's columns
    (``_present_columns``); a new key in the after-image moves the state to it;
  - delete (``d``): the previous state overlaid with the before-image's known
    values; the key leaves the state.

  A column whose value cannot be known (no previous state holds it and no image
  carries it) stays null and is named in ``_incomplete_columns`` (list of
  strings, in column order): values are never invented. A before-image value is
  *known* when it is not null, or when the column belongs to the key (the PKE is
  always logged, WL#5092 "BLOBS" R1 and the tables above); a null non-key value
  of a before-image may be a column the image did not carry, so it is not used.

* ``current/<db>/<table>/<run>-<part>.parquet``: the latest row of every key
  (deleted keys removed): the row of its last change, with that change's
  contract columns; the rows of keys this run does not touch are copied.

Partial JSON (WL#2955): a column in ``_partial_columns`` arrived as a diff
vector (``_partial_diffs``). It is applied (:func:`binlog_codec.json_diff.apply`)
to the previous document of the row -- the before-image's when it carries the
column, else the previous state's -- giving the whole document after the
update, in MySQL's text form. Without a previous document (the key has no known
state, its document is itself incomplete, or the value known is NULL) the column keeps the previous value
and is named in ``_incomplete_columns`` until a change carries the whole
document again. A diff that does not fit the previous document (a path that is
not there) is an error naming the table, column and position: never a guess
(WL#2955 §7).

Zero dates and other values Parquet cannot hold travel with their value: a column
taken from an earlier change (or from ``current``) keeps that change's
``_unrepresentable`` text; a row's own ``_before.<column>`` entries stay with it.

Keys. ``key_columns`` are the table's primary key (``TableMap.primary_key``; a
unique NOT NULL key, the second PKE rule, is passed the same way);
without one, every column is the key (the third PKE rule) and the state of a key
is a multiset: indistinguishable rows may exist, and an update or delete takes
one of them ("Should there be indistinguishable rows, searching and updating
either one in any given order leads to a correct state"). Under a primary key
an insert of a key that has a state replaces it.

Table versions. The staged files may hold several table versions (different
column sets and types). The output schema is the union of every version's
columns and of the ``current`` table's, in order of first appearance, types
widened where every value keeps its meaning (:func:`widen`: integers to wider
integers or decimals, decimals to decimals of enough digits, FLOAT to DOUBLE, DATE
to DATETIME); any other change of type is a :class:`SchemaConflict`. A column
a row's version does not have is null in that row and not incomplete (it does
not exist there); a column the version added is incomplete in the rows of keys
last seen before it (the ALTER gave them a DEFAULT the log does not hold). This
step records nothing about schemas (``metadata/table_schemas`` is written
elsewhere); :class:`MergedSchema` is the merged schema it used.

Following the DDL (``lineage``, :func:`in_latest_version`). A table version is
its ``_schema_id`` in an epoch of the table's schema changes
(:data:`~spark_jobs.version_lineage.VersionKey`), so that a table back in an
earlier shape is carried through the DDL between. Given the table's
:class:`~spark_jobs.version_lineage.TableLineage` (its versions and the ALTER
TABLE statements logged between them, from ``metadata/table_schemas`` and
``metadata/schema_changes``), ``current`` holds the latest version's columns
only, in its order -- what ``SELECT *`` on the server returns -- and each of its
rows of an older ``_schema_id`` is carried to the latest version as the server
carried it: a column added with a literal DEFAULT holds it (converted to the
column's Arrow type; a nullable column without DEFAULT: NULL), a renamed column
(RENAME COLUMN, CHANGE) the old column's values, a widened one its values
widened, an integer or DECIMAL column turned into text its decimal text (the
column is text in every row of the merged schema then, ``as_text`` of the
lineage; any other type change that is no widening is a :class:`SchemaConflict`
naming the table, column, both types and the way forward, unless the user
accepted it for the run: then the column has the latest type and its values of
other types are null, their text in ``_unrepresentable``, unknown in ``current``,
``merged.retyped``), a dropped column is gone; a DEFAULT the server computed
(CURRENT_TIMESTAMP, an expression, AUTO_INCREMENT, a NOT NULL column without
DEFAULT, a literal whose conversion is not exactly known) is null and named in
``_incomplete_columns``. Such a row takes the latest ``_schema_id`` (the
version whose columns it now holds), and its ``_incomplete_columns``,
``_unrepresentable`` and ``_present_columns`` name its columns by their new
names. A version whose way to the latest is not known keeps its values by name,
the latest columns it lacks incomplete. The fold follows the same lineage when a
change's previous state is of an older ``_schema_id`` (a MINIMAL or NOBLOB
update or delete of a key last seen before an ALTER): the state is carried to the
change's version first (``FoldPlan.lineage``). ``changes`` rows are never rewritten:
each has the columns of the version it was logged under. Without a lineage (a
table of one version) ``current`` has every version's columns, as above.

Statements that remove every row (TRUNCATE, DROP TABLE, DROP DATABASE, CREATE
TABLE, a RENAME TABLE away, :mod:`spark_jobs.table_names`) leave out of
``current`` each row last changed before them (:func:`kept`); one of the run
leaves the ``current`` files out of the fold. A table renamed in the run
(``inherited``) folds the rows of its earlier names as state: their ``current``
files and the run's row changes logged under them before the rename, which stay
the changes of the old name (:func:`own_changes`).

How (Spark, :func:`materialize`). Spark runs three waves of Python tasks over
the table's files (staged files and the ``current`` files, grouped by Parquet
schema from their footers); the rows never pass through the JVM:

1. *Key changes*: the updates whose after-image moves the row to another key
   (rare under a primary key; every real update of a table without one). The
   driver joins them, in log order, into connected components (union-find), so
   that all changes of one row -- across key changes -- share a group, named by
   its first key.
2. *Buckets*, file by file: each row, projected onto the merged schema, goes
   to the bucket of its group (a hash of the group's key that every process
   agrees on), an Arrow file per bucket and input. A table small enough for one
   bucket skips both waves.

   Without a primary key, wave 1 reads only the key columns of each staged
   file, before wave 2. Under one, wave 2 runs first, bucketing each row by its
   own key and finding the key changes in the same read; only when it finds
   some does it run again, by their groups. Both waves deal the files into a
   few tasks per Spark slot (:func:`spark_jobs.tasks.run_in_groups`).
3. *Fold*, a task per bucket: the bucket's rows sorted in log order
   (``_binlog_seq``, ``_binlog_file``, ``_binlog_pos``, ``_binlog_inner_offset``
   nulls first, ``_row_index``; the ``current`` rows before them) and folded
   (:func:`fold_table`), its changes written a file per commit date, its latest
   rows a file, each straight under its final name in the run folder. The
   fold never turns values into Python objects: it tracks, per
   key and column, *which input value* holds the state (an after-image or
   before-image value of an input row) and builds each output column with one
   ``take``. Only keys and the column lists are read into Python. Under a
   primary key, the rows whose output is their own (inserts, updates with whole
   after-images that keep their key, deletes with whole before-images, rows of
   ``current``) are settled at once, with array operations, for every key no
   other row names; only the rest go through the loop row by row.

A bucket holds at most about ``rows_per_file`` rows, so memory per task is
bounded, and a large table is cut into a bucket per slot -- or, when several
tables are folded side by side, into buckets of one slot's share of the whole
run -- so that every slot folds to the end without cutting what needs no cut.
Each output file is in log order; the files of one run split the keys between
them (query with ``ORDER BY`` the change key for one log order across files).

Limits, each a consequence of what the staged rows do not say:

* A before-image does not record which columns it carried, so a null non-key
  value in it is not used: a FULL delete of a key with no previous state names
  its NULL columns incomplete.
* Without a primary key, a MINIMAL insert that leaves columns out (their DEFAULTs
  unknown) cannot be found by later before-images, which hold those DEFAULTs; its
  row stays in ``current`` beside the updated one. Float keys that are NaN never
  match.

Determinism: the same inputs and run name give the same files with the same rows
in the same order on the same number of Spark slots: each output is sorted
(changes in log order, current by the log position of each row's last change)
and files are named ``<run>-<bucket>.parquet``; a rerun first removes the files
an earlier attempt of the same run left. A large table has a bucket per slot, so
on another number of slots the same rows are cut into other files.

:func:`materialize_tables` runs the same fold on in-memory Arrow tables without
Spark (small tables, tests).
"""

from __future__ import annotations

import argparse
import functools
import logging
import posixpath
import re
import sys
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from binlog_codec import json_binary, json_diff, json_text
from binlog_codec.arrow import BEFORE_PREFIX

from .gc_pause import paused_gc
from . import image_files, parquet_encoding, tasks
from .table_names import order
from .version_lineage import FromColumn, TableLineage, Unknown, Value, VersionKey
from warehouse.layout import table_folder
from warehouse.storage import open_file

log = logging.getLogger(__name__)

# Change columns of the warehouse contract this step reads or writes.
FIRST_CHANGE_COLUMN = "_op"
OP, BEFORE, PRESENT, PARTIAL = "_op", "_before", "_present_columns", "_partial_columns"
DIFFS = "_partial_diffs"
UNREPRESENTABLE, INCOMPLETE, COMMIT_TS = "_unrepresentable", "_incomplete_columns", "_commit_ts"
INNER_OFFSET = "_binlog_inner_offset"
SCHEMA_ID = "_schema_id"
SEQ, FILE, POS = "_binlog_seq", "_binlog_file", "_binlog_pos"
ORDER = (SEQ, FILE, POS, INNER_OFFSET, "_row_index")
COMMIT_DATE = "commit_date"
INSERTS, UPDATE, DELETE = ("c", "r"), "u", "d"

# Columns of the fold's input and output only.
VERSION, PRIOR, FINAL = "__version", "__prior", "__final"
RESERVED = {COMMIT_DATE, INCOMPLETE, VERSION, PRIOR, FINAL}

ROWS_PER_FILE = 1_000_000  # about how many rows an output file holds
SPREAD_ROWS = 250_000  # from this many rows on, an output is written by every Spark slot (a file each)
BATCH_ROWS = 65536  # rows read from an input file at a time
ROW_GROUP_ROWS = 131072  # rows of a Parquet row group in the output files
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # the commit_date folder of rows without a commit time (Hive's name)
MICROS_PER_DAY = 86_400_000_000
_RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._=-]*")


class SchemaConflict(ValueError):
    """Two versions of a column whose types have no common type that keeps every value."""

    def __init__(self, message: str, column: str | None = None) -> None:
        super().__init__(message)
        self.column = column


# -- schemas --------------------------------------------------------------------


def split_schema(schema: pa.Schema) -> tuple[list[pa.Field], list[pa.Field]]:
    """The image columns (those before ``_op``) and the change columns (``_op`` on)."""
    if FIRST_CHANGE_COLUMN not in schema.names:
        raise ValueError(f"not a row-change schema: no {FIRST_CHANGE_COLUMN} column in {schema.names}")
    cut = schema.names.index(FIRST_CHANGE_COLUMN)
    return list(schema)[:cut], list(schema)[cut:]


_INTEGER_DIGITS = {8: 3, 16: 5, 32: 10, 64: 19}
MAX_DECIMAL_PRECISION = 38


def _is_exact(kind: pa.DataType) -> bool:
    return pa.types.is_signed_integer(kind) or pa.types.is_decimal128(kind)


def _as_decimal(kind: pa.DataType) -> tuple[int, int]:
    """(integer digits, scale) a value of ``kind`` may need."""
    if pa.types.is_decimal(kind):
        return kind.precision - kind.scale, kind.scale
    return _INTEGER_DIGITS[kind.bit_width], 0


def _widen_exact(a: pa.DataType, b: pa.DataType, column: str) -> pa.DataType:
    if pa.types.is_signed_integer(a) and pa.types.is_signed_integer(b):
        return a if a.bit_width >= b.bit_width else b
    (digits_a, scale_a), (digits_b, scale_b) = _as_decimal(a), _as_decimal(b)
    digits, scale = max(digits_a, digits_b), max(scale_a, scale_b)
    if digits + scale > MAX_DECIMAL_PRECISION:
        raise SchemaConflict(f"column {column}: {a} and {b} need decimal({digits + scale},{scale}), wider than 38 digits",
                             column)
    return pa.decimal128(digits + scale, scale)


def _is_naive_timestamp(kind: pa.DataType) -> bool:
    return pa.types.is_timestamp(kind) and kind.tz is None


def widen(a: pa.DataType, b: pa.DataType, column: str = "?") -> pa.DataType:
    """The type that holds every value of ``a`` and of ``b`` with its meaning, or :class:`SchemaConflict`.

    Safe: the same type; null with anything; signed integers and decimals
    (decimal(p,s) with enough integer digits and scale, at most 38 digits);
    float32 and float64; DATE (date32) and DATETIME (naive timestamp); TIMESTAMP
    in any zone (an instant); lists, maps and structs member by member (structs:
    the union of their fields).
    """
    if a == b or pa.types.is_null(b):
        return a
    if pa.types.is_null(a):
        return b
    if _is_exact(a) and _is_exact(b):
        return _widen_exact(a, b, column)
    if pa.types.is_floating(a) and pa.types.is_floating(b) and pa.float16() not in (a, b):
        return pa.float64()
    if {pa.types.is_date32(a), _is_naive_timestamp(b)} == {True} or {pa.types.is_date32(b), _is_naive_timestamp(a)} == {True}:
        return a if pa.types.is_timestamp(a) else b
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b) and a.unit == b.unit and None not in (a.tz, b.tz):
        return a
    if pa.types.is_list(a) and pa.types.is_list(b):
        return pa.list_(widen(a.value_type, b.value_type, column))
    if pa.types.is_map(a) and pa.types.is_map(b):
        return pa.map_(widen(a.key_type, b.key_type, column), widen(a.item_type, b.item_type, column))
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        return pa.struct(merge_fields([list(a), list(b)]))
    raise SchemaConflict(f"column {column}: {a} and {b} have no common type that keeps every value", column)


def _is_numeric(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_decimal(kind)


def as_text(a: pa.DataType, b: pa.DataType) -> bool:
    """Whether one of ``a`` and ``b`` is a string and the other a number: values an ALTER turned
    into text (see :attr:`~spark_jobs.version_lineage.TableLineage.as_text`)."""
    return (pa.types.is_string(a) and _is_numeric(b)) or (pa.types.is_string(b) and _is_numeric(a))


def merge_fields(field_lists: Iterable[Iterable[pa.Field]], textual: frozenset[str] = frozenset(),
                 retyped: Mapping[str, pa.DataType] | None = None) -> list[pa.Field]:
    """The union of the fields by name, in order of first appearance, types widened; all nullable.
    A column of ``textual`` that is a number in some and text in others is text; a column of
    ``retyped`` has the type given there."""
    merged: dict[str, pa.DataType] = {}
    retyped = retyped or {}
    for fields in field_lists:
        for each in fields:
            known = merged.get(each.name)
            if each.name in retyped:
                merged[each.name] = retyped[each.name]
            elif known is not None and each.name in textual and as_text(known, each.type):
                merged[each.name] = pa.string()
            else:
                merged[each.name] = each.type if known is None else widen(known, each.type, each.name)
    return [pa.field(name, kind) for name, kind in merged.items()]


def _placed(fields: list[pa.Field], new: pa.Field, before: str) -> list[pa.Field]:
    """``fields`` with ``new`` in place of its namesake, else before the field named ``before``, else last."""
    names = [each.name for each in fields]
    if new.name in names:
        return [new if each.name == new.name else each for each in fields]
    at = names.index(before) if before in names else len(fields)
    return fields[:at] + [new] + fields[at:]


@dataclass(frozen=True)
class MergedSchema:
    """The schema of a table's output rows: every version's image columns, then the change columns."""

    image: tuple[pa.Field, ...]
    changes: tuple[pa.Field, ...]
    retyped: frozenset[str] = frozenset()  # columns whose values of another type are not carried (accepted)

    @property
    def names(self) -> list[str]:
        """The image columns' names."""
        return [each.name for each in self.image]

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([*self.image, *self.changes])


def with_latest(schemas: list[pa.Schema], lineage: TableLineage | None) -> list[pa.Schema]:
    """``schemas``, and where the latest table version has columns none of them has (a version
    derived from an ALTER no row change followed), a schema of those columns after them."""
    if lineage is None or not schemas:
        return schemas
    names = {each.name for schema in schemas for each in split_schema(schema)[0]}
    fields = lineage.latest_fields()
    missing = [each for each in fields or () if each.name not in names]
    return schemas + [pa.schema(missing + split_schema(schemas[0])[1])] if missing else schemas


def merge_for(schemas: list[pa.Schema], lineage: TableLineage | None) -> MergedSchema:
    """:func:`merge_schemas` of a table's inputs, following its lineage: the latest version's
    columns (:func:`with_latest`), numbers turned into text, the type changes accepted."""
    if lineage is None:
        return merge_schemas(schemas)
    return merge_schemas(with_latest(schemas, lineage), lineage.as_text, lineage.retyped_types())


def merge_schemas(schemas: Sequence[pa.Schema], textual: frozenset[str] = frozenset(),
                  retyped: Mapping[str, pa.DataType] | None = None) -> MergedSchema:
    """The union of row-change schemas (staged batches and ``current`` tables), see :func:`widen`.

    The change columns are those of the inputs, plus ``_binlog_inner_offset``
    (int32) and ``_incomplete_columns`` (list of strings) where they lack them;
    ``_before`` is a struct of every image column. Raises :class:`SchemaConflict`
    for types without a safe common type, ``ValueError`` for an image column
    named like an output column (``commit_date``, ``_incomplete_columns``, ...). ``textual``:
    columns an ALTER turned from numbers into text, ``retyped``: columns whose type change the
    user accepted, with their type (:func:`merge_fields`; :func:`project_table` leaves their
    values of other types null and keeps their text in ``_unrepresentable``).
    """
    if not schemas:
        raise ValueError("no schema to merge")
    parts = [split_schema(schema) for schema in schemas]
    image = merge_fields((part[0] for part in parts), textual, retyped)
    clashes = sorted({each.name for each in image} & RESERVED)
    if clashes:
        raise ValueError(f"image columns {clashes} are named like columns this step writes")
    changes = merge_fields([each for each in part[1] if each.name != BEFORE] for part in parts)  # _before: below
    changes = _placed(changes, pa.field(INNER_OFFSET, pa.int32()), "_row_index")
    changes = _placed(changes, pa.field(BEFORE, pa.struct(image)), PRESENT)
    changes = _placed(changes, pa.field(INCOMPLETE, pa.list_(pa.string())), UNREPRESENTABLE)
    return MergedSchema(tuple(image), tuple(changes), frozenset(retyped or ()))


# -- projecting a table onto the merged schema (in-memory path) -----------------


def _cast(values: pa.ChunkedArray | pa.Array, kind: pa.DataType) -> pa.Array:
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    return values if values.type == kind else pc.cast(values, kind)


def _project_before(table: pa.Table, merged: MergedSchema) -> pa.Array:
    kind = dict(zip(merged.schema.names, merged.schema.types))[BEFORE]
    if BEFORE not in table.column_names:
        return pa.nulls(table.num_rows, kind)
    before = table.column(BEFORE).combine_chunks()
    names = [each.name for each in before.type]
    children = [
        _cast(before.field(names.index(each.name)), each.type) if each.name in names and _carries_type(
            before.type.field(names.index(each.name)).type, each, merged) else pa.nulls(len(before), each.type)
        for each in merged.image
    ]
    return pa.StructArray.from_arrays(children, fields=list(merged.image), mask=before.is_null())


def _carries_type(kind: pa.DataType, target: pa.Field, merged: MergedSchema) -> bool:
    """Whether values of ``kind`` are cast to the merged column ``target``: always, but for a
    column of ``merged.retyped`` whose type change does not keep them (:func:`widen`)."""
    if target.name not in merged.retyped or kind == target.type:
        return True
    try:
        return widen(target.type, kind, target.name) == target.type
    except SchemaConflict:
        return False


def project_table(table: pa.Table, merged: MergedSchema) -> pa.Table:
    """``table`` with the columns of ``merged``: cast where widened, null where it lacks them. A
    column whose type change the user accepted (``merged.retyped``) is null where its values are
    of another type, their text kept in ``_unrepresentable``."""
    arrays, texts = [], {}
    for each in merged.schema:
        if each.name == BEFORE:
            arrays.append(_project_before(table, merged))
        elif each.name in table.column_names and _carries_type(table.schema.field(each.name).type, each, merged):
            arrays.append(_cast(table.column(each.name), each.type))
        else:
            if each.name in table.column_names:
                texts[each.name] = table.column(each.name)
            arrays.append(pa.nulls(table.num_rows, each.type))
    if texts:
        at = merged.schema.get_field_index(UNREPRESENTABLE)
        arrays[at] = _with_texts(arrays[at], texts)
    return pa.Table.from_arrays(arrays, schema=merged.schema)


def _with_texts(maps: pa.Array | pa.ChunkedArray, values: Mapping[str, pa.ChunkedArray]) -> pa.Array:
    """``_unrepresentable`` maps with, per column of ``values``, the text of each row's value added."""
    rows = maps.to_pylist()
    for name, column in values.items():
        try:
            texts = pc.cast(column, pa.string()).to_pylist()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            texts = [None if value is None else str(value) for value in column.to_pylist()]
        for r, text in enumerate(texts):
            if text is not None:
                rows[r] = [*(rows[r] or []), (name, text)]
    return pa.array(rows, maps.type)


# -- the fold -------------------------------------------------------------------


@dataclass(frozen=True)
class FoldPlan:
    """What the fold needs besides the rows: the image columns (merged order), the key
    columns, whether a key names one row (a primary key) or a multiset (every column),
    and the image columns of each table version, by the rows' ``__version``."""

    image: tuple[str, ...]
    key: tuple[str, ...]
    unique: bool
    versions: tuple[tuple[str, ...], ...]
    lineage: TableLineage | None = None  # how a state of one ``_schema_id`` reads in a later one


def indexed_names(values: pa.ChunkedArray | pa.Array, names: Sequence[str]) -> pa.Array:
    """A column of lists of image column names (``_present_columns``) as lists of dictionary indices
    into ``names``: ``list<dictionary<int16, string>>``. Taking, writing and reading a row then
    moves two bytes per name instead of the name (on the benchmark's orders table, the lists were
    half of the cost of bucketing the rows), and :func:`_list_shapes` reads each row's names from
    the indices. A name not among ``names`` is an error: the rows are of another table."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    dictionary = pa.array(list(names), pa.string())
    flat = pc.list_flatten(values)
    indices = pc.index_in(flat, value_set=dictionary)
    if indices.null_count != flat.null_count:
        unknown = set(pc.filter(flat, pc.is_null(indices)).to_pylist()) - {None}
        raise ValueError(f"{PRESENT} names columns the table does not have: {sorted(unknown)[:5]}")
    lengths = values.value_lengths().fill_null(0).to_numpy(zero_copy_only=False)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
    items = pa.DictionaryArray.from_arrays(indices.cast(pa.int16()), dictionary)
    return pa.ListArray.from_arrays(offsets, items, mask=values.is_null() if values.null_count else None)


def named(values: pa.ChunkedArray) -> pa.ChunkedArray:
    """Lists of names as :func:`indexed_names` made them, as lists of strings again (other columns as they are)."""
    if pa.types.is_list(values.type) and pa.types.is_dictionary(values.type.value_type):
        return pc.cast(values, pa.list_(values.type.value_type.value_type))
    return values


def _list_shapes(values: pa.ChunkedArray) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    """Per row, an id of its list of names, and each id's names (lists of names are few and repeat);
    lists of :func:`indexed_names` give their names in the dictionary's order."""
    if not sum(len(chunk.values) for chunk in values.chunks):  # every list empty (or null): the usual case
        nulls = values.is_null().to_numpy(zero_copy_only=False)
        return -nulls.astype(np.int64), [(), ()]
    if pa.types.is_dictionary(values.type.value_type):
        return _indexed_shapes(values.combine_chunks())
    joined = pc.binary_join(values, "\x00")  # MySQL identifiers never hold NUL
    encoded = (joined.combine_chunks() if isinstance(joined, pa.ChunkedArray) else joined).dictionary_encode()
    ids = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    shapes = [tuple(text.split("\x00")) if text else () for text in encoded.dictionary.to_pylist()]
    return ids, shapes + [()]  # id -1 (a null list) is the last


def _indexed_shapes(values: pa.ListArray) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    """:func:`_list_shapes` of lists of dictionary indices. When every row holds the same list (full
    row images: every column, in the same order), one comparison says so. Else a row's set of
    indices becomes bits of 64-bit words (index i: bit i % 64 of word i // 64, OR-ed over the
    row's list), and :func:`_distinct_rows` finds the distinct rows of words."""
    flat = pc.list_flatten(values)
    names = flat.dictionary.to_pylist()
    indices = flat.indices.to_numpy(zero_copy_only=False)
    lengths = values.value_lengths().fill_null(0).to_numpy(zero_copy_only=False)
    if len(values) and not values.null_count and (lengths == lengths[0]).all():
        grid = indices.reshape(len(values), int(lengths[0]))
        if (grid == grid[0]).all():
            return np.zeros(len(values), dtype=np.int64), [tuple(names[i] for i in sorted(set(grid[0].tolist()))), ()]
    starts = np.cumsum(lengths) - lengths
    words = np.zeros((len(values), -(-len(names) // 64)), dtype=np.uint64)
    for word in range(words.shape[1]):
        inside = indices // 64 == word
        bits = np.where(inside, np.left_shift(np.uint64(1), (indices % 64).astype(np.uint64)), np.uint64(0))
        bits = np.append(bits, np.uint64(0))  # a start at the end (empty lists last) is inside for reduceat
        words[:, word] = np.where(lengths > 0, np.bitwise_or.reduceat(bits, starts), np.uint64(0))
    ids, patterns = _distinct_rows(words)
    ids[values.is_null().to_numpy(zero_copy_only=False)] = -1
    shapes = [tuple(names[i] for i in range(len(names)) if int(row[i // 64]) >> (i % 64) & 1) for row in patterns]
    return ids, shapes + [()]


def _sparse_maps(values: pa.ChunkedArray) -> dict[int, dict[str, str]]:
    """The rows whose map is not empty, as dicts."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    rows = np.flatnonzero(np.diff(values.offsets.to_numpy(zero_copy_only=False)))
    return dict(zip(rows.tolist(), (dict(entries) for entries in values.take(rows).to_pylist())))


def _row_patterns(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a boolean matrix the id of its pattern, and the distinct patterns (rows packed
    into 64-bit words first, so that finding the distinct rows sorts words, not bits)."""
    packed = np.packbits(matrix, axis=1)
    words = np.zeros((len(matrix), -(-packed.shape[1] // 8) * 8), dtype=np.uint8)
    words[:, : packed.shape[1]] = packed
    ids, distinct = _distinct_rows(words.view(np.uint64))
    return ids, np.unpackbits(distinct.view(np.uint8), axis=1)[:, : matrix.shape[1]].astype(bool)


def _distinct_rows(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a matrix of 64-bit words the id of its distinct row, and the distinct rows."""
    if words.shape[1] == 1:
        distinct, ids = np.unique(words[:, 0], return_inverse=True)
        return ids.reshape(-1), distinct[:, None]
    distinct, ids = np.unique(words, axis=0, return_inverse=True)
    return ids.reshape(-1), distinct


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(each) for each in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


def _python_values(array: pa.Array) -> list:
    """``array.to_pylist()``, for integers through NumPy (many times faster); whole-number decimals
    (scale 0: BIGINT UNSIGNED, DECIMAL(n,0)) as ints, whatever their size, so that a key reads
    the same in every batch."""
    if pa.types.is_decimal(array.type) and array.type.scale == 0:
        for kind in (pa.int64(), pa.uint64()):
            try:
                return _python_values(pc.cast(array, kind))
            except pa.ArrowInvalid:  # a value out of its range
                continue
        return [None if value is None else int(value) for value in array.to_pylist()]
    if not pa.types.is_integer(array.type):
        return array.to_pylist()
    values = array.fill_null(0).to_numpy(zero_copy_only=False)
    if not array.null_count:
        return values.tolist()
    values = values.astype(object)
    values[array.is_null().to_numpy(zero_copy_only=False)] = None
    return values.tolist()


def _keys(arrays: list[pa.Array], convert: bool) -> list[tuple]:
    columns = [_python_values(array) for array in arrays]
    if convert:
        columns = [[_hashable(value) for value in column] for column in columns]
    return list(zip(*columns))


def row_keys(table: pa.Table, key: Sequence[str], rows: np.ndarray | None = None) -> tuple[list[tuple], list[tuple]]:
    """Per row (``rows``: of these rows only, in their order), the values of the key columns in
    its after-image and in its before-image (nested values made hashable; a row without a
    before-image: nulls)."""
    before = table.column(BEFORE).combine_chunks()
    before_columns = dict(zip((each.name for each in before.type), before.flatten()))
    after = [table.column(name).combine_chunks() for name in key]
    before = [before_columns[name] for name in key]
    if rows is not None:
        chosen = pa.array(rows, pa.int64())
        after, before = [array.take(chosen) for array in after], [array.take(chosen) for array in before]
    convert = any(pa.types.is_nested(array.type) for array in after)
    return _keys(after, convert), _keys(before, convert)


class _Entry:
    """The state of one row: per image column a pointer to the value (row r's after-image:
    r; its before-image: n + r; the k-th document a diff vector gave the column: 2n + k;
    unknown: -1), the columns whose value is stale (partial JSON without a previous
    document), the table version, and the output row it was last written to."""

    __slots__ = ("pointers", "stale", "version", "out")

    def __init__(self, pointers: list[int], stale: set[int], version: int, out: int) -> None:
        self.pointers, self.stale, self.version, self.out = pointers, stale, version, out


class _Fold:
    """One fold over rows sorted by log order (``current`` rows first); see :func:`fold_table`."""

    def __init__(self, table: pa.Table, plan: FoldPlan) -> None:
        self.table, self.plan = table, plan
        self.n, self.m = table.num_rows, len(plan.image)
        self.after = [table.column(name) for name in plan.image]  # chunked as read: combining them would copy
        self.before = table.column(BEFORE).flatten()
        self.index = {name: j for j, name in enumerate(plan.image)}
        self.key_index = [self.index[name] for name in plan.key]
        self.in_version = np.array([[name in set(v) for name in plan.image] for v in plan.versions], dtype=bool)
        self.version_masks = self.in_version.tolist()
        self.version_sets = [set(np.flatnonzero(row).tolist()) for row in self.in_version]
        ops = table.column(OP).combine_chunks().dictionary_encode()
        self.op_codes = ops.indices.fill_null(-1).to_numpy(zero_copy_only=False)  # per row, into op_names
        self.op_names = ops.dictionary.to_pylist() + [None]  # a null _op (code -1) is the last
        self.prior = table.column(PRIOR).to_numpy(zero_copy_only=False).astype(bool)
        self.versions = table.column(VERSION).to_numpy(zero_copy_only=False).astype(np.int64)
        self.present_ids, self.present_shapes = _list_shapes(table.column(PRESENT))
        self.partial_ids, self.partial_shapes = _list_shapes(table.column(PARTIAL))
        self.incomplete_ids, self.incomplete_shapes = _list_shapes(table.column(INCOMPLETE))
        self.unrepresentable = _sparse_maps(table.column(UNREPRESENTABLE))
        self.diffs = _sparse_maps(table.column(DIFFS))
        self.applied: dict[int, list[str]] = {}  # per column, the documents diff vectors gave it
        self.keys_after: list = []  # per row, its keys (row_keys), read by _read_keys
        self.keys_before: list = []
        self._known_before()
        self._columns_of = functools.lru_cache(maxsize=None)(self._columns)
        self.states: dict[tuple, list[_Entry]] = {}
        self.out_pointers = np.full((self.n, self.m), -1, dtype=np.int64)  # per output row, per column
        self.settled = np.zeros(self.n, dtype=bool)  # rows the row loop skips: their output is set at once
        self.settled_final = np.zeros(self.n, dtype=bool)  # those of them that are their key's latest row
        self.out_stale: dict[int, set[int]] = {}
        self.version_keys: list[VersionKey] | None = None  # per row, its table version (only with a lineage)
        if plan.lineage is not None and SCHEMA_ID in table.column_names:
            codes, keys = row_versions(table, plan.lineage, self.prior)
            self.version_keys = [keys[code] for code in codes.tolist()]

    # -- inputs ---------------------------------------------------------------

    def _known_before(self) -> None:
        """Per row, the before-image columns whose value is known: not null, or part of the key."""
        known = np.zeros((self.n, self.m), dtype=bool)
        for j, values in enumerate(self.before):
            known[:, j] = values.is_valid().to_numpy(zero_copy_only=False)
        exists = self.table.column(BEFORE).is_valid().to_numpy(zero_copy_only=False)
        known[:, self.key_index] |= exists[:, None]  # the PKE is in every before-image
        known &= self.in_version[self.versions]
        self.known_before = known
        ids, patterns = _row_patterns(known)
        self.known_before_ids = ids.tolist()
        self.known_before_patterns = [np.flatnonzero(row).tolist() for row in patterns]

    def _columns(self, version: int, present_id: int, partial_id: int) -> tuple[list[int], list[int], list[bool]]:
        """The after-image's whole values (column indices), its partial JSON columns, and per key
        column whether the after-image carries it, for one table version and shape of image."""
        partial = {self.index[name] for name in self.partial_shapes[partial_id]}
        present = [self.index[name] for name in self.present_shapes[present_id]]
        whole = [j for j in present if j not in partial and self.version_masks[version][j]]
        return whole, sorted(partial), [j in whole for j in self.key_index]

    def _before_columns(self, r: int) -> list[int]:
        known = self.known_before_patterns[self.known_before_ids[r]]
        texts = self.unrepresentable.get(r)
        if texts:  # an unrepresentable before value (null with a text) is known too
            extra = [self.index[k[len(BEFORE_PREFIX):]] for k in texts if k.startswith(BEFORE_PREFIX)]
            known = sorted(set(known) | {j for j in extra if self.version_masks[self.versions[r]][j]})
        return known

    # -- state ----------------------------------------------------------------

    def _take(self, key: tuple) -> _Entry | None:
        entries = self.states.get(key)
        if not entries:
            return None
        entry = entries.pop()
        if not entries:
            del self.states[key]
        return entry

    def _put(self, key: tuple, entry: _Entry) -> None:
        if self.plan.unique:
            self.states[key] = [entry]
        else:
            self.states.setdefault(key, []).append(entry)

    def _emit(self, r: int, pointers: list[int], stale: set[int]) -> int:
        """Row ``r``'s output (every input row has one, in input order)."""
        self.out_pointers[r] = pointers
        if stale:
            self.out_stale[r] = stale
        return r

    def _previous(self, entry: _Entry | None, version: int, r: int = -1) -> tuple[list[int], set[int]]:
        """A state's pointers and stale columns in ``version`` (columns it lacks: null), carried
        through the DDL between its table version and row ``r``'s where the lineage knows it;
        none: unknown."""
        if entry is None:
            return [-1] * self.m, set()
        if self.version_keys is not None and r >= 0:
            later = self.version_keys[r]
            way = self.plan.lineage.way(self.version_keys[entry.out], later)
            if way is not None:
                return self._carried(entry, self.plan.lineage.columns_of[later[0]], way)
        if entry.version == version:
            return entry.pointers[:], set(entry.stale)
        mask = self.version_masks[version]
        return [p if keep else -1 for p, keep in zip(entry.pointers, mask)], entry.stale & self.version_sets[version]

    def _carried(self, entry: _Entry, names: Sequence[str], way: Sequence[Any]) -> tuple[list[int], set[int]]:
        """A state of an older table version as the server carried it to a later one: a column
        from its old column (renamed: the value, as a document of the new column), an added
        column its DEFAULT, unknown where the server computed it."""
        pointers, stale = [-1] * self.m, set()
        for name, source in zip(names, way):
            j = self.index.get(name)
            if j is None:
                continue
            if isinstance(source, FromColumn) and source.name in self.index:
                old = self.index[source.name]
                pointer = entry.pointers[old]
                if old in entry.stale:
                    stale.add(j)
                if pointer < 0 or old == j:
                    pointers[j] = pointer
                    continue
                value = self._value(pointer, old)
            elif isinstance(source, Value):
                value = source.value
            else:
                continue
            if isinstance(value, (int, Decimal)) and not isinstance(value, bool) and pa.types.is_string(self.after[j].type):
                value = str(value)  # an ALTER turned the number into its decimal text (the column is text by now)
            documents = self.applied.setdefault(j, [])
            documents.append(value)
            pointers[j] = 2 * self.n + len(documents) - 1
        return pointers, stale

    # -- one row --------------------------------------------------------------

    def _current_row(self, r: int, version: int) -> None:
        """A row of ``current``: a state whose incomplete columns stay incomplete."""
        mask = self.version_masks[version]
        stale = {self.index[name] for name in self.incomplete_shapes[self.incomplete_ids[r]] if name in self.index}
        pointers = [r if keep else -1 for keep in mask]
        self._put(self.keys_after[r], _Entry(pointers, stale, version, self._emit(r, pointers, stale)))

    def _insert(self, r: int, version: int) -> None:
        whole, _, _ = self._columns_of(version, self.present_ids[r], self.partial_ids[r])
        pointers = [-1] * self.m
        for j in whole:
            pointers[j] = r
        self._put(self.keys_after[r], _Entry(pointers, set(), version, self._emit(r, pointers, set())))

    def _update(self, r: int, version: int) -> None:
        whole, partial, _ = self._columns_of(version, self.present_ids[r], self.partial_ids[r])
        pointers, stale = self._previous(self._take(self.keys_before[r]), version, r)
        for j in self._before_columns(r):
            pointers[j] = self.n + r
            stale.discard(j)
        for j in whole:
            pointers[j] = r
            stale.discard(j)
        for j in partial:
            applied = None if j in stale or pointers[j] < 0 else self._apply(r, j, pointers[j])
            if applied is None:
                stale.add(j)  # no previous document: the previous value stays, incomplete
            else:
                pointers[j] = applied
        self._put(self._key_after(r, version), _Entry(pointers, stale, version, self._emit(r, pointers, stale)))

    def _key_after(self, r: int, version: int) -> tuple:
        """An update's key after it: the after-image's key columns, the before-image's where it does not carry them."""
        _, _, key_present = self._columns_of(version, self.present_ids[r], self.partial_ids[r])
        return tuple(a if carried else b for a, b, carried in zip(self.keys_after[r], self.keys_before[r], key_present))

    def _read_keys(self, rows: np.ndarray | None = None) -> None:
        """The keys of every row (``rows``: of these only, the others None): only the rows the
        row loop visits need them."""
        if rows is None:
            self.keys_after, self.keys_before = row_keys(self.table, self.plan.key)
            return
        self.keys_after, self.keys_before = [None] * self.n, [None] * self.n
        for r, after, before in zip(rows.tolist(), *row_keys(self.table, self.plan.key, rows)):
            self.keys_after[r], self.keys_before[r] = after, before

    def key_changes(self) -> list[tuple[tuple, tuple]]:
        """(key before, key after) of every row, all updates."""
        self._read_keys()
        return [(self.keys_before[r], self._key_after(r, version)) for r, version in enumerate(self.versions.tolist())]

    def _value(self, pointer: int, j: int) -> Any:
        if pointer < self.n:
            return self.after[j][pointer].as_py()
        if pointer < 2 * self.n:
            return self.before[j][pointer - self.n].as_py()
        return self.applied[j][pointer - 2 * self.n]

    def _apply(self, r: int, j: int, previous: int) -> int | None:
        """Row ``r``'s diff vector of column ``j`` applied to the document at ``previous``; the
        pointer to the new document (None when the previous value is NULL: no document)."""
        name = self.plan.image[j]
        document = self._value(previous, j)
        if document is None:
            return None
        try:
            diffs = json_diff.decode_diffs(self.diffs[r][name], column=name)
            text = json_binary.to_text(json_diff.apply(json_text.from_text(document), diffs, column=name))
        except (json_diff.JsonDiffError, ValueError) as exc:
            message = str(exc) if isinstance(exc, json_diff.JsonDiffError) else f"column {name}: {exc}"
            where = ", ".join(f"{c} {self.table.column(c)[r].as_py()}" for c in ("_binlog_file", "_binlog_pos", "_row_index"))
            raise ValueError(f"{message} ({where})") from None
        documents = self.applied.setdefault(j, [])
        documents.append(text)
        return 2 * self.n + len(documents) - 1

    def _delete(self, r: int, version: int) -> None:
        pointers, stale = self._previous(self._take(self.keys_before[r]), version, r)
        for j in self._before_columns(r):
            pointers[j] = self.n + r
            stale.discard(j)
        self._emit(r, pointers, stale)

    def _lone_inserts(self, versions: list[int], prior: list[bool]) -> None:
        """Settle the inserts of a key no other row names: each is its key's whole story, its output
        its own after-image, set for all of them at once. What :meth:`_settle` does for a primary
        key of exact types, for every other key (a multiset of rows, floats, nested values)."""
        self._read_keys()
        ops = [self.op_names[code] for code in self.op_codes.tolist()]
        named = [self.keys_after[r] if prior[r] or op in INSERTS else self.keys_before[r] for r, op in enumerate(ops)]
        named += [self._key_after(r, versions[r]) for r, op in enumerate(ops) if op == UPDATE and not prior[r]]
        times = Counter(named)
        shapes: dict[tuple[int, int, int], list[int]] = {}
        for r, op in enumerate(ops):
            if op in INSERTS and not prior[r] and times[self.keys_after[r]] == 1:
                shapes.setdefault((versions[r], self.present_ids[r], self.partial_ids[r]), []).append(r)
        for (version, present, partial), rows in shapes.items():
            whole, _, _ = self._columns_of(version, present, partial)
            rows = np.asarray(rows)
            self.settled[rows] = self.settled_final[rows] = True
            self.out_pointers[np.ix_(rows, whole)] = rows[:, None]

    def _image_shapes(self) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
        """Per row, the id of its (table version, present columns, partial columns), and the distinct ones."""
        present, partial = self.present_ids + 1, self.partial_ids + 1  # a null list is -1
        combined = (self.versions * (len(self.present_shapes) + 1) + present) * (len(self.partial_shapes) + 1) + partial
        if self.n and (combined == combined[0]).all():  # one shape (one version, full images): the usual case
            ids = np.zeros(self.n, dtype=np.int64)
        else:
            ids, _ = _dense_ids(pa.array(combined))
        rows = np.zeros(ids.max(initial=-1) + 1, dtype=np.int64)
        rows[ids] = np.arange(self.n)  # a row of each id (which one does not matter: they share the shape)
        return ids, [(int(self.versions[r]), int(self.present_ids[r]), int(self.partial_ids[r])) for r in rows.tolist()]

    def _settle(self) -> bool:
        """Under a primary key, settle at once every row whose output is its own and whose key no
        other kind of row names; False (nothing settled) when the key's types have no exact
        vectorized equality (:func:`key_ids`).

        A row's output is its own when it is a row of ``current``, an insert, an update whose
        after-image carries every column of its version as a whole value, or a delete whose
        before-image knows every column; and it keeps its key (an update's key before and after
        are equal). The keys any other row names (before or after) are left to the row loop, with
        every row that names them; every other key's rows are settled here, its latest row (if not
        a delete) final.
        """
        shape_ids, shapes = self._image_shapes()
        columns = [self._columns_of(*shape) for shape in shapes]
        whole = np.zeros((len(shapes), self.m), dtype=bool)
        for number, (columns_whole, _, _) in enumerate(columns):
            whole[number, columns_whole] = True
        carried = np.array([key_present for _, _, key_present in columns], dtype=bool).reshape(len(shapes), len(self.key_index))
        prior = self.prior
        insert, update, delete = (self._ops_in(names) & ~prior for names in (INSERTS, (UPDATE,), (DELETE,)))
        named, after = [], []
        for k, j in enumerate(self.key_index):
            named.append(_choose(update | delete, self.before[j], self.after[j]))
            after.append(_choose(delete | (update & ~carried[shape_ids, k]), self.before[j], self.after[j]))
        ids = key_ids([_joined(a.chunks + b.chunks, a.type) for a, b in zip(named, after)])
        if ids is None:
            return False
        named_id, after_id = ids[: self.n], ids[self.n :]
        version_mask = self.in_version[self.versions]
        whole_rows = whole[shape_ids]
        known_rows = self.known_before
        own = prior | insert  # any other _op is left to the loop, which refuses it
        own |= update & ~(version_mask & ~whole_rows).any(axis=1)
        own |= delete & ~(version_mask & ~known_rows).any(axis=1)
        dependent = ~own | (update & (named_id != after_id))
        looped = np.zeros(ids.max(initial=-1) + 1, dtype=bool)
        looped[named_id[dependent]] = looped[after_id[dependent]] = True
        settled = ~(looped[named_id] | looped[after_id])
        self._settle_rows(settled, prior, delete, version_mask, whole_rows)
        last = _last_of_each(named_id, np.flatnonzero(settled))
        self.settled_final[last[~delete[last]]] = True
        return True

    def _settle_rows(self, settled: np.ndarray, prior: np.ndarray, delete: np.ndarray, version_mask: np.ndarray,
                     whole_rows: np.ndarray) -> None:
        """The outputs of settled rows: a ``current`` row itself (its incomplete columns stay so), a
        delete its before-image, any other its after-image's whole values."""
        self.settled |= settled
        rows = np.arange(self.n)[:, None]
        from_after = (settled & ~delete)[:, None] & np.where(prior[:, None], version_mask, whole_rows)
        np.copyto(self.out_pointers, rows, where=from_after)
        np.copyto(self.out_pointers, self.n + rows, where=(settled & delete)[:, None] & version_mask)
        for r in np.flatnonzero(settled & prior & (self.incomplete_ids >= 0)).tolist():
            names = self.incomplete_shapes[self.incomplete_ids[r]]
            stale = {self.index[name] for name in names if name in self.index}
            if stale:
                self.out_stale[r] = stale

    def _ops_in(self, names: Sequence[str]) -> np.ndarray:
        """Per row, whether its ``_op`` is one of ``names``."""
        return np.isin(self.op_codes, [code for code, name in enumerate(self.op_names[:-1]) if name in names])

    def run(self) -> None:
        handlers = {**dict.fromkeys(INSERTS, self._insert), UPDATE: self._update, DELETE: self._delete}
        versions, prior = self.versions.tolist(), self.prior.tolist()
        if self.plan.unique and self._settle():
            self._read_keys(np.flatnonzero(~self.settled))
        else:
            self._lone_inserts(versions, prior)
        looped = np.flatnonzero(~self.settled)
        for r, code in zip(looped.tolist(), self.op_codes[looped].tolist()):
            if prior[r]:
                self._current_row(r, versions[r])
            else:
                handler = handlers.get(self.op_names[code])
                if handler is None:
                    raise ValueError(f"row {r}: unknown _op {self.op_names[code]!r}")
                handler(r, versions[r])

    # -- output ---------------------------------------------------------------

    def _image_columns(self, pointers: np.ndarray) -> list[pa.Array]:
        """Each output image column from the values its pointers name: a row's after-image value
        (``r``), a before-image value (``n + r``), a document a diff gave (``2n + k``), or none
        (-1). Where every row takes its own after-image value (or, for some, its own before-image
        value: the rows settled at once), the column is that (or a choice between the two);
        else one ``take``."""
        columns = []
        rows = np.arange(self.n)
        for j in range(self.m):
            own_after = pointers[:, j] == rows
            if own_after.all():
                columns.append(self.after[j])
                continue
            own_before = pointers[:, j] == rows + self.n
            if (own_after | own_before).all():
                columns.append(_choose(own_before, self.before[j], self.after[j]))
                continue
            parts = self.after[j].chunks + self.before[j].chunks
            if j in self.applied:
                parts.append(pa.array(self.applied[j], type=self.after[j].type))
            values = _joined(parts, self.after[j].type)
            index = pointers[:, j]
            columns.append(values.take(pa.array(index, mask=index < 0)))
        return columns

    def _incomplete(self, pointers: np.ndarray) -> pa.Array:
        unknown = (pointers < 0) & self.in_version[self.versions]
        names: dict[int, list[str]] = {}
        for i in np.flatnonzero(unknown.any(axis=1)).tolist() + list(self.out_stale):
            columns = set(np.flatnonzero(unknown[i]).tolist()) | self.out_stale.get(i, set())
            names[i] = [self.plan.image[j] for j in sorted(columns)]
        return _sparse_lists(self.n, names, self.table.schema.field(INCOMPLETE).type)

    def _text(self, pointer: int, j: int) -> str | None:
        row, prefix = (pointer, "") if pointer < self.n else (pointer - self.n, BEFORE_PREFIX)
        return self.unrepresentable.get(row, {}).get(prefix + self.plan.image[j])

    def _unrepresentable(self, pointers: np.ndarray) -> pa.Array:
        """Each output value's text where its source had one, then the row's own ``_before.`` texts."""
        kind = self.table.schema.field(UNREPRESENTABLE).type
        entries: dict[int, list[tuple[str, str]]] = {}
        if self.unrepresentable:
            has_text = np.zeros(2 * self.n, dtype=bool)
            has_text[list(self.unrepresentable)] = True
            has_text[[self.n + r for r in self.unrepresentable]] = True
            inputs = (pointers >= 0) & (pointers < 2 * self.n)  # an applied document has no text
            flagged = has_text[np.where(inputs, pointers, 0)] & inputs
            for i in np.flatnonzero(flagged.any(axis=1) | has_text[: self.n]).tolist():
                found = [(self.plan.image[j], self._text(int(pointers[i, j]), j)) for j in np.flatnonzero(flagged[i])]
                own = self.unrepresentable.get(i, {})
                entries[i] = [e for e in found if e[1] is not None] + [e for e in own.items() if e[0].startswith(BEFORE_PREFIX)]
        return _sparse_lists(self.n, entries, kind)

    def _commit_dates(self) -> pa.Array:
        stamps = self.table.column(COMMIT_TS).combine_chunks()
        micros = pc.cast(pc.cast(stamps, pa.timestamp("us", stamps.type.tz)), pa.int64()).fill_null(0)
        days = np.floor_divide(micros.to_numpy(zero_copy_only=False), MICROS_PER_DAY).astype(np.int32)
        return pa.array(days, mask=stamps.is_null().to_numpy(zero_copy_only=False)).cast(pa.date32())

    def output(self) -> pa.Table:
        """The output rows: every change, and the ``current`` rows that stayed the latest of their key
        (``_present_columns`` as the input has it: lists of names as :func:`indexed_names` makes them
        stay so, for :func:`write_parquet`)."""
        pointers = self.out_pointers
        final = self.settled_final.copy()
        final[[entry.out for entries in self.states.values() for entry in entries]] = True
        arrays, names = self._image_columns(pointers), list(self.plan.image)
        computed = {INCOMPLETE: self._incomplete(pointers), UNREPRESENTABLE: self._unrepresentable(pointers)}
        changes = split_schema(self.table.schema)[1]
        for each in changes:
            if each.name in (VERSION, PRIOR):
                continue
            arrays.append(computed[each.name] if each.name in computed else self.table.column(each.name))
            names.append(each.name)
        arrays += [self._commit_dates(), pa.array(final), pa.array(self.prior)]
        names += [COMMIT_DATE, FINAL, PRIOR]
        return _where(pa.Table.from_arrays(arrays, names=names), ~self.prior | final)


def _joined(parts: Sequence[pa.Array], kind: pa.DataType) -> pa.Array:
    """The arrays ``parts`` one after the other, as one array (none: an empty one)."""
    return pa.chunked_array(parts, type=kind).combine_chunks()


def _sparse_lists(n: int, entries: dict[int, list], kind: pa.DataType) -> pa.Array:
    """``n`` lists (or maps) of type ``kind``, empty but in the rows ``entries`` gives: built from
    those rows alone, so that the empty ones cost no Python object each."""
    rows = sorted(entries)
    given = pa.array([entries[r] for r in rows] + [[]], type=kind)
    index = np.full(n, len(rows), dtype=np.int64)  # the empty list after the given ones
    index[rows] = np.arange(len(rows))
    return given.take(pa.array(index))


def _choose(condition: np.ndarray, yes: pa.Array, no: pa.Array) -> pa.Array:
    """Per row, ``yes`` where ``condition`` holds, else ``no``."""
    return pc.if_else(pa.array(condition), yes, no)


# Key types whose values Arrow's hashing finds equal exactly when Python does (not floats: NaN, -0.0).
_EXACT_KEY_TYPES = (
    pa.types.is_integer, pa.types.is_decimal, pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
    pa.types.is_large_binary, pa.types.is_fixed_size_binary, pa.types.is_temporal, pa.types.is_boolean,
)


def key_ids(columns: Sequence[pa.Array]) -> np.ndarray | None:
    """A number per row, shared by two rows exactly when their values in every column are equal
    (two nulls are equal); None when a column's type is not one of :data:`_EXACT_KEY_TYPES`."""
    if not all(any(test(column.type) for test in _EXACT_KEY_TYPES) for column in columns):
        return None
    ids, count = _dense_ids(columns[0])
    for column in columns[1:]:
        codes, size = _dense_ids(column)
        ids, count = _dense_ids(pa.array(ids * size + codes))
    return ids


def _dense_ids(values: pa.Array) -> tuple[np.ndarray, int]:
    """Per value a number from 0 up, shared by equal values (nulls too), and how many there are
    (hashing, not sorting)."""
    encoded = pc.dictionary_encode(values, null_encoding="encode")
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), len(encoded.dictionary)


def _last_of_each(ids: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The last of ``rows`` (ascending) of each id."""
    grouped = pa.table({"id": ids[rows], "row": rows}).group_by("id", use_threads=False).aggregate([("row", "max")])
    return np.sort(grouped.column("row_max").to_numpy())


def _flags(values: pa.Table | pa.ChunkedArray | pa.Array, column: str | None = None) -> np.ndarray:
    """A boolean column (of a table: the one named ``column``) as a NumPy array."""
    values = values.column(column) if column is not None else values
    return values.to_numpy(zero_copy_only=False).astype(bool)


def _where(table: pa.Table, keep: np.ndarray) -> pa.Table:
    """The rows of ``table`` where ``keep`` is true; the table itself when that is every row (no copy)."""
    return table if keep.all() else table.filter(pa.array(keep))


def fold_table(table: pa.Table, plan: FoldPlan) -> pa.Table:
    """Fold row changes onto the previous state of their keys (see the module docstring).

    ``table``: rows of the merged schema plus ``__version`` (int, index into
    ``plan.versions``) and ``__prior`` (true for rows of ``current``), sorted so
    that every key's rows -- and all keys one key change links -- come in log
    order, ``current`` rows first. Returns every change with its whole
    after-image, ``_incomplete_columns`` and ``_unrepresentable`` worked out, and
    the ``current`` rows no change replaced; with ``commit_date`` (UTC date of
    ``_commit_ts``), ``__final`` (the row is its key's latest) and ``__prior``.
    """
    with paused_gc():
        fold = _Fold(table, plan)
        fold.run()
        return fold.output()


# -- rows of older versions in the latest one --------------------------------------


def latest_schema(merged: MergedSchema, lineage: TableLineage | None) -> pa.Schema:
    """The schema of ``current``: the latest version's columns when its lineage is known (the
    server's columns), else every version's (``merged``)."""
    if lineage is None or not set(lineage.columns) <= set(merged.names):
        return merged.schema
    types = dict(zip(merged.names, (each.type for each in merged.image)))
    return pa.schema([pa.field(name, types[name]) for name in lineage.columns] + list(merged.changes))


def _cast_or_none(values: pa.ChunkedArray, kind: pa.DataType) -> pa.Array | None:
    """``values`` in ``kind`` when that is a widening of their type (:func:`widen`), else None."""
    try:
        exact = as_text(kind, values.type) and pa.types.is_string(kind) or widen(kind, values.type) == kind
        return _cast(values, kind) if exact else None
    except (SchemaConflict, pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def kept(rows: pa.Table, lineage: TableLineage, prior: np.ndarray) -> np.ndarray:
    """Per latest row, whether it is still in the table: a row of ``current`` (``prior``; those
    a statement of the run removed are not read), or one whose last change was logged under a
    name of the table and after every statement that removed its rows
    (:meth:`~spark_jobs.version_lineage.TableLineage.kept`)."""
    if prior.all() or not lineage.removes_rows:
        return np.ones(rows.num_rows, dtype=bool)
    return prior | lineage.kept(_schema_ids(rows), rows.column(SEQ).to_pylist(), rows.column(FILE).to_pylist(),
                                rows.column(POS).to_pylist())


def own_changes(rows: pa.Table, lineage: TableLineage | None) -> np.ndarray:
    """Per row change, whether it is one of the table's own (see
    :meth:`~spark_jobs.version_lineage.TableLineage.own`)."""
    if lineage is None or len(lineage.names.segments) == 1:
        return np.ones(rows.num_rows, dtype=bool)
    return lineage.own(_schema_ids(rows))


def _schema_ids(rows: pa.Table) -> list[str | None]:
    ids = rows.column(SCHEMA_ID)
    return (pc.cast(ids, pa.string()) if pa.types.is_dictionary(ids.type) else ids).to_pylist()


def row_versions(rows: pa.Table, lineage: TableLineage, prior: np.ndarray) -> tuple[np.ndarray, list[VersionKey]]:
    """Per row, the number of its table version in the list returned: its ``_schema_id`` in the
    epoch of its log position (:meth:`~spark_jobs.version_lineage.TableLineage.row_epochs`;
    ``prior``: per row, whether it is a row of ``current``, logged before the run)."""
    ids = rows.column(SCHEMA_ID)
    ids = pc.cast(ids, pa.string()) if pa.types.is_dictionary(ids.type) else ids
    encoded = pc.dictionary_encode(ids.combine_chunks()) if rows.num_rows else pa.array([], pa.dictionary(pa.int32(), pa.string()))
    names = encoded.dictionary.to_pylist() + [None]
    id_codes = encoded.indices.fill_null(len(names) - 1).to_numpy(zero_copy_only=False).astype(np.int64)
    published = np.zeros(len(id_codes), dtype=bool)
    if lineage.published is not None and lineage.published[0] in names:
        published = id_codes == names.index(lineage.published[0])
    epochs = lineage.row_epochs(published, rows.column(SEQ).to_pylist(), rows.column(FILE).to_pylist(),
                                rows.column(POS).to_pylist(), prior)
    width = int(epochs.max(initial=0)) + 1
    distinct, codes = np.unique(id_codes * width + epochs, return_inverse=True)
    return codes.reshape(-1), [(names[pair // width], int(pair % width)) for pair in distinct.tolist()]


def in_latest_version(rows: pa.Table, lineage: TableLineage | None, prior: np.ndarray | None = None) -> pa.Table:
    """The latest rows of a table (image columns, then change columns) as the server reads them after
    the DDL logged since each row's version: per :class:`~spark_jobs.version_lineage.TableLineage`,
    a column a later ALTER added takes its DEFAULT (named in ``_incomplete_columns`` where that is
    not knowable), a renamed column its old values, a dropped column goes; such a row's
    ``_schema_id`` becomes the latest version's, whose columns it now holds. ``prior``: per row,
    whether it is a row of ``current`` the run did not change (None: none is). Without a lineage
    (one version, or a column of the latest one missing) the rows are returned as they are."""
    if lineage is None or not set(lineage.columns) <= set(rows.column_names) or SCHEMA_ID not in rows.column_names:
        return rows
    image, changes = split_schema(rows.schema)
    types = {each.name: each.type for each in image}
    ids = rows.column(SCHEMA_ID)
    if pa.types.is_dictionary(ids.type):
        ids = pc.cast(ids, ids.type.value_type)
    codes, keys = row_versions(rows, lineage, np.zeros(rows.num_rows, dtype=bool) if prior is None else prior)
    masks = {key: pa.array(codes == code) for code, key in enumerate(keys) if key != lineage.latest_key}
    columns = {name: rows.column(name).combine_chunks() for name in lineage.columns}
    unknown: dict[VersionKey, list[str]] = {}  # per version, the latest columns it cannot know
    renames: dict[VersionKey, dict[str, str]] = {}  # per version, old name -> latest name
    for version, mask in masks.items():
        unknown[version], renames[version] = [], {}
        for name, source in zip(lineage.columns, lineage.to_latest(version)):
            kind = types[name]
            if isinstance(source, FromColumn) and source.name in rows.column_names:
                values = _cast_or_none(rows.column(source.name), kind)
                if values is None:
                    source = Unknown(f"{source.name} in another type")
                else:
                    renames[version][source.name] = name
                    columns[name] = pc.if_else(mask, values, columns[name])
                    continue
            if isinstance(source, Value):
                try:
                    value = pa.scalar(source.value, kind)
                except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
                    value, source = pa.scalar(None, kind), Unknown("DEFAULT not held by the type")
                columns[name] = pc.if_else(mask, value, columns[name])
                if not isinstance(source, Unknown):
                    continue
            columns[name] = pc.if_else(mask, pa.scalar(None, kind), columns[name])
            unknown[version].append(name)
    arrays = [columns[name] for name in lineage.columns]
    fields = [pa.field(name, types[name]) for name in lineage.columns]
    position = {name: at for at, name in enumerate(lineage.columns)}
    row_version: dict[int, VersionKey] = {}
    for version, mask in masks.items():
        for r in np.flatnonzero(mask.to_numpy(zero_copy_only=False)).tolist():
            row_version[r] = version
    converted = np.array(sorted(row_version), dtype=np.int64)
    old_lists = named(rows.column(INCOMPLETE)).take(pa.array(converted)).to_pylist()
    incomplete: dict[int, list[str]] = {}
    for r, names in zip(converted.tolist(), old_lists):
        version = row_version[r]
        moved = renames[version]
        carried = {moved[name] for name in names or () if name in moved}
        incomplete[r] = sorted(carried | set(unknown[version]), key=position.__getitem__)
    lists = rows.column(INCOMPLETE)
    has_incomplete = np.concatenate([np.diff(c.offsets.to_numpy()) > 0 for c in lists.chunks] or [np.zeros(0, bool)])
    for r in np.flatnonzero(has_incomplete).tolist():
        if r not in row_version:
            incomplete[r] = named(rows.column(INCOMPLETE).slice(r, 1)).to_pylist()[0]
    texts = rows.column(UNREPRESENTABLE)
    unrepresentable: dict[int, list] = {}
    chunks = texts.chunks if isinstance(texts, pa.ChunkedArray) else [texts]
    has_text = np.concatenate([np.diff(chunk.offsets.to_numpy()) > 0 for chunk in chunks] or [np.zeros(0, bool)])
    for r in np.flatnonzero(has_text).tolist():
        entries = texts[r].as_py() or []
        if not entries:
            continue
        version = row_version.get(r)
        if version is not None:
            moved = renames[version]
            entries = [(moved[k], v) for k, v in entries if k in moved] + [
                (BEFORE_PREFIX + moved[k[len(BEFORE_PREFIX):]], v) for k, v in entries
                if k.startswith(BEFORE_PREFIX) and k[len(BEFORE_PREFIX):] in moved]
        unrepresentable[r] = entries
    present = named(rows.column(PRESENT))
    flat = pc.list_flatten(present)
    foreign = pc.invert(pc.is_in(flat, value_set=pa.array(list(lineage.columns), pa.string())))
    parents = pc.list_parent_indices(present)
    redo = set(np.unique(parents.filter(foreign).to_numpy(zero_copy_only=False)).tolist()) | set(row_version)
    if redo:  # the columns the row's last image carried, by their latest names
        chosen = np.array(sorted(redo), dtype=np.int64)
        given = []
        for r, names in zip(chosen.tolist(), present.take(pa.array(chosen)).to_pylist()):
            moved = renames.get(row_version.get(r), {name: name for name in lineage.columns})
            given.append(None if names is None else
                         sorted({moved[name] for name in names if name in moved}, key=position.__getitem__))
        index = np.arange(rows.num_rows)
        index[chosen] = rows.num_rows + np.arange(len(chosen))
        present = _joined(present.chunks + [pa.array(given, present.type)], present.type).take(pa.array(index))
    carried = np.zeros(rows.num_rows, dtype=bool)
    carried[converted] = True
    latest_ids = pc.if_else(pa.array(carried), pa.scalar(lineage.latest, ids.type), ids)
    computed = {
        INCOMPLETE: _sparse_lists(rows.num_rows, incomplete, rows.schema.field(INCOMPLETE).type),
        UNREPRESENTABLE: _sparse_lists(rows.num_rows, unrepresentable, rows.schema.field(UNREPRESENTABLE).type),
        SCHEMA_ID: pc.cast(latest_ids, rows.schema.field(SCHEMA_ID).type),
        PRESENT: present,
    }
    changes = [pa.field(PRESENT, present.type) if each.name == PRESENT else each for each in changes]
    arrays += [computed.get(each.name, rows.column(each.name)) for each in changes]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields + changes))


# -- in memory ------------------------------------------------------------------


@dataclass(frozen=True)
class FoldResult:
    """What :func:`materialize_tables` returns."""

    changes: pa.Table
    current: pa.Table
    merged: MergedSchema


def table_keys(key_columns: Sequence[str] | None, merged: MergedSchema) -> tuple[tuple[str, ...], bool]:
    """The key columns and whether they are a primary key; no key columns: every column, a multiset."""
    if not key_columns:
        return tuple(merged.names), False
    missing = [name for name in key_columns if name not in merged.names]
    if missing:
        raise ValueError(f"key columns {missing} are not columns of the table ({merged.names})")
    return tuple(key_columns), True


def _image_names(schema: pa.Schema) -> tuple[str, ...]:
    return tuple(each.name for each in split_schema(schema)[0])


def _tagged(table: pa.Table, merged: MergedSchema, version: int, prior: bool) -> pa.Table:
    """``table`` projected onto ``merged``, its lists of present columns indexed (:func:`indexed_names`),
    tagged with its version and origin."""
    projected = project_table(table, merged)
    position = projected.schema.get_field_index(PRESENT)
    present = indexed_names(projected.column(position), merged.names)
    projected = projected.set_column(position, PRESENT, present)
    projected = projected.append_column(VERSION, pa.array(np.full(table.num_rows, version, dtype=np.int32)))
    return projected.append_column(PRIOR, pa.array(np.full(table.num_rows, prior)))


def _sort_keys(values: pa.ChunkedArray) -> list[np.ndarray]:
    """Numbers that sort like ``values`` with nulls first: whether each is valid, then its value
    (text: its rank)."""
    values = values.combine_chunks()
    valid = values.is_valid().to_numpy(zero_copy_only=False)
    if pa.types.is_integer(values.type):
        numbers = values.fill_null(0).to_numpy(zero_copy_only=False)
    else:  # the rank of its value among the distinct values (file names: a few)
        encoded = pc.dictionary_encode(values)
        ranks = pc.rank(encoded.dictionary, sort_keys="ascending", tiebreaker="dense").to_numpy()
        numbers = ranks[encoded.indices.fill_null(0).to_numpy(zero_copy_only=False)]
    return [valid, numbers]


def _in_order(keys: Sequence[np.ndarray]) -> bool:
    """Whether the rows are already sorted by ``keys`` (the first key first): each row's keys, at
    the first that differs from the next row's, are smaller."""
    undecided = np.ones(max(len(keys[0]) - 1, 0), dtype=bool)
    for key in keys:
        before, after = key[:-1], key[1:]
        if (undecided & (before > after)).any():
            return False
        undecided &= before == after
    return True


def _order_keys(table: pa.Table) -> list[np.ndarray]:
    """Numbers that sort the rows of ``table`` in log order (:data:`ORDER`, nulls first)."""
    return [key for name in ORDER for key in _sort_keys(table.column(name))]


def _sorted(table: pa.Table, *, prior_first: bool = False) -> pa.Table:
    """``table`` in log order (:data:`ORDER`, nulls first); ``prior_first``: the rows of ``current``
    before the changes. A table already in that order is returned as it is."""
    keys = _order_keys(table)
    if prior_first:
        keys.insert(0, ~table.column(PRIOR).to_numpy(zero_copy_only=False).astype(bool))
    if _in_order(keys):
        return table
    return table.take(np.lexsort(keys[::-1]))  # lexsort's last key is the first one sorted on


def fold_input(
    staged: Sequence[pa.Table | pa.RecordBatch],
    key_columns: Sequence[str] | None,
    current: pa.Table | None = None,
    lineage: TableLineage | None = None,
) -> tuple[pa.Table, FoldPlan, MergedSchema]:
    """The input of :func:`fold_table` for staged batches and an optional ``current`` table in
    memory: projected onto the merged schema, tagged with versions, in fold order."""
    inputs = [pa.Table.from_batches([each]) if isinstance(each, pa.RecordBatch) else each for each in staged]
    schemas = ([current.schema] if current is not None else []) + [each.schema for each in inputs]
    merged = merge_for(schemas, lineage)
    key, unique = table_keys(key_columns, merged)
    parts = [_tagged(current, merged, 0, True)] if current is not None else []
    parts += [_tagged(each, merged, len(parts) + number, False) for number, each in enumerate(inputs)]
    rows = _sorted(pa.concat_tables(parts), prior_first=True)
    plan = FoldPlan(tuple(merged.names), key, unique, tuple(_image_names(schema) for schema in schemas), lineage)
    return rows, plan, merged


def materialize_tables(
    staged: Sequence[pa.Table | pa.RecordBatch],
    key_columns: Sequence[str] | None,
    current: pa.Table | None = None,
    lineage: TableLineage | None = None,
) -> FoldResult:
    """The fold of :func:`materialize` on Arrow tables in memory, without Spark.

    ``staged``: batches of ImageBatchBuilder's schema (any table versions);
    ``current``: the previous ``current`` table, or None. Returns the changes
    (log order, with ``commit_date``) and the new current table (in the log order
    of each row's last change); ``lineage``: the table's versions' way to the latest one
    (:func:`in_latest_version`).
    """
    rows, plan, merged = fold_input(staged, key_columns, current, lineage)
    folded = fold_table(rows, plan)
    folded = folded.set_column(folded.schema.get_field_index(PRESENT), PRESENT, named(folded.column(PRESENT)))
    prior = folded.column(PRIOR)
    changes = folded.filter(pc.invert(prior)).drop_columns([FINAL, PRIOR])
    latest = _sorted(folded.filter(folded.column(FINAL)).drop_columns([COMMIT_DATE, FINAL]))
    if lineage is not None:
        latest = _where(latest, kept(latest, lineage, _flags(latest, PRIOR)))
    return FoldResult(changes, in_latest_version(latest.drop_columns([PRIOR]), lineage, _flags(latest, PRIOR)), merged)


# -- files ----------------------------------------------------------------------




def _schema_groups(files: Sequence[str]) -> list[tuple[pa.Schema, list[str]]]:
    """Files grouped by schema (headers or footers only), groups in order of first appearance."""
    groups: dict[pa.Schema, list[str]] = {}
    for name in files:
        groups.setdefault(image_files.schema(*open_file(name)), []).append(name)
    return list(groups.items())


def _is_run_file(run_name: str, name: str) -> bool:
    return re.fullmatch(re.escape(run_name) + r"-\d{5,}(?:-c\d{3,})?\.parquet", name) is not None


def _clear_outputs(changes: str, current: str, run_name: str, inputs: Sequence[str]) -> None:
    """Make room for a table's outputs: ``current`` (replaced whole) is emptied, and the files an
    earlier attempt of this run left in ``changes`` (which other runs' files may share) are removed.
    An input file in ``current`` (a target that holds the table's own state) is refused: emptying
    the folder before the fold reads it would lose the table's rows."""
    inside = [name for name in inputs if name.startswith(current.rstrip("/") + "/")]
    if inside:
        raise ValueError(f"{inside[0]}: an input of the fold is in the folder its output replaces ({current}); "
                         "write the output into a folder of its own (a run folder), nothing was changed")
    filesystem, target = open_file(current)
    filesystem.delete_dir_contents(target, missing_dir_ok=True)
    _, target = open_file(changes)
    old = filesystem.get_file_info(pafs.FileSelector(target, recursive=True, allow_not_found=True))
    for info in old:
        if info.type == pafs.FileType.File and _is_run_file(run_name, posixpath.basename(info.path)):
            filesystem.delete_file(info.path)


def _rows(files: Sequence[str]) -> int:
    """Rows of staged or Parquet files."""
    return sum(image_files.row_count(*open_file(name)) for name in files)


def _remove(folder: str) -> None:
    filesystem, path = open_file(folder)
    if filesystem.get_file_info(path).type != pafs.FileType.NotFound:
        filesystem.delete_dir(path)


# -- Spark ----------------------------------------------------------------------


@dataclass(frozen=True)
class MaterializeResult:
    """What one :func:`materialize` did: the merged schema, the keys, counts and files."""

    merged: MergedSchema
    key_columns: tuple[str, ...]
    unique_key: bool
    changes_rows: int
    current_rows: int
    key_changes: int | None  # None: not looked for (one bucket holds every key)
    changes_files: list[str]
    current_files: list[str]
    seconds: float


@dataclass(frozen=True)
class Inherited:
    """Rows a table takes over from a name it had before a RENAME TABLE of the run: that name's
    staged files, of which only the rows logged after ``since`` (None: any time) and before
    ``until`` (the rename) are the table's, and its ``current`` files when its rows came along."""

    staged: Sequence[str]
    current: Sequence[str]
    since: tuple | None
    until: tuple


@dataclass(frozen=True)
class _Input:
    """One input file of a table: its path, its table version (index into ``FoldPlan.versions``),
    whether it is a file of ``current``, and for a file of a name the table had before a RENAME
    TABLE, the stretch of the log that name held its rows (:class:`Inherited`)."""

    path: str
    version: int
    prior: bool
    window: tuple[tuple | None, tuple, int | None] | None = None  # rows logged after [0], before [1], in run [2]


@dataclass(frozen=True)
class _Table:
    """What every task of one table needs: the merged schema, the fold plan, the number of buckets,
    the scratch folder of the buckets' parts, and the folders its ``changes`` and ``current`` files
    are written to, at their final names."""

    merged: MergedSchema
    plan: FoldPlan
    buckets: int
    scratch: str
    run_name: str
    changes: str
    current: str
    lineage: TableLineage | None = None


def _batches(source: _Input, columns: Iterable[str] | None = None, before: Sequence[str] = ()) -> Iterator[pa.Table]:
    """An input file in batches of :data:`BATCH_ROWS` rows, as stored (``columns``: only these;
    ``before``: with ``_before`` holding only these of its fields, else all of them)."""
    filesystem, path = open_file(source.path)
    names = None if columns is None else [name for name in image_files.schema(filesystem, path).names if name in set(columns)]
    if names is not None and BEFORE in names and before and not any("." in name for name in before):
        names.remove(BEFORE)  # a column path names a field by "_before.<name>": a name with a dot reads it all
        names += [f"{BEFORE}.{name}" for name in before]
    if names is not None and source.window is not None:
        names += [name for name in (SEQ, FILE, POS) if name not in names]
    for rows in image_files.batches(filesystem, path, BATCH_ROWS, names):
        yield rows if source.window is None else _where(rows, _within(rows, *source.window))


def _within(rows: pa.Table, since: tuple | None, until: tuple, run: int | None) -> np.ndarray:
    """Per row (of the run of ordinal ``run``), whether it was logged after ``since`` (None: any
    time) and before ``until``."""
    places = zip(rows.column(SEQ).to_pylist(), rows.column(FILE).to_pylist(), rows.column(POS).to_pylist())
    return np.array([(since is None or place > since) and place < until
                     for place in (order(*each, run) for each in places)], dtype=bool)


def _read_input(source: _Input, merged: MergedSchema) -> Iterator[pa.Table]:
    """An input file in batches, projected onto ``merged`` and tagged with its version and origin."""
    for rows in _batches(source):
        yield _tagged(rows, merged, source.version, source.prior)


def _same(a: pa.ChunkedArray, b: pa.ChunkedArray) -> np.ndarray:
    """Per row, whether two columns hold the same value (two nulls are the same)."""
    equal = pc.fill_null(pc.equal(a, b), False)
    return _flags(pc.or_(equal, pc.and_(pc.is_null(a), pc.is_null(b))))


def _carries(present: pa.ChunkedArray, name: str) -> np.ndarray:
    """Per row, whether its list of present columns names ``name``."""
    present = present.combine_chunks()
    flat = pc.list_flatten(present)
    if pa.types.is_dictionary(flat.type):  # lists of indices (indexed_names)
        position = flat.dictionary.index(name).as_py()
        hits = flat.indices.to_numpy(zero_copy_only=False) == position
    else:
        hits = _flags(pc.equal(flat, name))
    parents = pc.list_parent_indices(present).to_numpy(zero_copy_only=False)
    return np.bincount(parents[hits], minlength=len(present)) > 0


def _may_move(updates: pa.Table, plan: FoldPlan) -> np.ndarray:
    """Per update, false where it surely keeps its key: for every key column, the after-image does
    not carry it or carries the before-image's value. Only updates left true need the exact check
    (:meth:`_Fold.key_changes`); without a primary key, or for key types Arrow cannot compare, all."""
    may = np.zeros(updates.num_rows, dtype=bool)
    if not plan.unique:
        return ~may
    before = updates.column(BEFORE)
    try:
        for name in plan.key:
            changed = ~_same(updates.column(name), pc.struct_field(before, name))
            may |= changed & _carries(updates.column(PRESENT), name)
    except pa.ArrowNotImplementedError:
        return np.ones(updates.num_rows, dtype=bool)
    return may


def _moves(rows: pa.Table, plan: FoldPlan) -> list[tuple[tuple, Any, Any]]:
    """The updates among ``rows`` (projected and tagged) whose after-image moves the row to another
    key, as (log order, before key, after key); only the updates that may move a key
    (:func:`_may_move`) are looked at row by row."""
    updates = rows.filter(pc.and_(pc.invert(rows.column(PRIOR)), pc.equal(rows.column(OP), UPDATE)))
    updates = _where(updates, _may_move(updates, plan))
    if not updates.num_rows:
        return []
    order = zip(*(updates.column(name).to_pylist() for name in ORDER))
    moves = _Fold(updates, plan).key_changes()
    return [(_log_order(position), before, after) for position, (before, after) in zip(order, moves) if before != after]


def _key_changes(source: _Input, table: _Table) -> list[tuple[tuple, Any, Any]]:
    """The key changes (:func:`_moves`) of a staged file, reading only the columns that say so."""
    if source.prior:
        return []
    columns = {*table.plan.key, OP, BEFORE, PRESENT, PARTIAL, *ORDER}
    found = []
    for rows in _batches(source, columns, before=table.plan.key):
        updates = rows.filter(pc.equal(rows.column(OP), UPDATE))  # only they move keys: tag no other row
        found += _moves(_tagged(updates, table.merged, source.version, False), table.plan)
    return found


def _log_order(position: tuple) -> tuple:
    """A sort key of log order (nulls first) for a tuple of :data:`ORDER` values."""
    return tuple((value is not None, value) for value in position)


def _bucket_numbers(rows: pa.Table, plan: FoldPlan, roots: dict, buckets: int) -> np.ndarray:
    """Per row, the bucket of its key's group: the root of the key changes linking its key (the
    key naming its previous state: the before-image's for updates and deletes, else its own),
    hashed so that every process agrees (:func:`_number_hash`, else CRC-32 of the key's text)."""
    moved = pc.and_(pc.invert(rows.column(PRIOR)), pc.is_in(rows.column(OP), pa.array([UPDATE, DELETE])))
    before = rows.column(BEFORE)
    arrays = [pc.if_else(moved, pc.struct_field(before, name), rows.column(name)).combine_chunks() for name in plan.key]
    if not roots and all(_is_number(array.type) for array in arrays):
        return (_number_hash(arrays) % np.uint64(buckets)).astype(np.int64)
    keys = _keys(arrays, any(pa.types.is_nested(array.type) for array in arrays))
    return np.fromiter(
        (zlib.crc32(repr(roots.get(key, key)).encode()) % buckets for key in keys), dtype=np.int64, count=len(keys)
    )


def _is_number(kind: pa.DataType) -> bool:
    """Integers and whole-number decimals (BIGINT UNSIGNED, DECIMAL(n,0)): keys hashed as numbers."""
    return pa.types.is_integer(kind) or pa.types.is_decimal128(kind)


def _words(array: pa.Array) -> list[np.ndarray]:
    """The 64-bit words of each value of an integer or decimal128 array (nulls: zeros)."""
    nulls = array.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_integer(array.type):
        return [array.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64)]
    data = np.frombuffer(array.buffers()[1], dtype=np.uint64)[2 * array.offset : 2 * (array.offset + len(array))]
    data = np.where(nulls[:, None], np.uint64(0), data.reshape(-1, 2))  # a decimal128: two little-endian words
    return [data[:, 0], data[:, 1]]


def _number_hash(arrays: Sequence[pa.Array]) -> np.ndarray:
    """A 64-bit hash per row of integer or decimal128 columns (nulls hash apart from every value):
    each 64-bit word of a value multiplied by a large odd constant, mixed into the row's hash
    (the FNV-1a pattern), then folded so the low bits depend on the high ones."""
    hashed = np.full(len(arrays[0]), 0xCBF29CE484222325, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for array in arrays:
            nulls = array.is_null().to_numpy(zero_copy_only=False)
            for word in _words(array):
                hashed = (hashed ^ (word * np.uint64(0x9E3779B97F4A7C15) + nulls)) * np.uint64(0x100000001B3)
        return hashed ^ (hashed >> np.uint64(29))


def _part_file(table: _Table, bucket: int, source: int) -> str:
    return f"{table.scratch}/parts/{bucket:05d}/{source:05d}.arrow"


def _partition(number: int, source: _Input, table: _Table, roots: dict, moves: bool = False) -> tuple[list[int], list]:
    """One input file's rows, projected and tagged, written into an Arrow file per bucket; rows per
    bucket, and (``moves``) the key changes among them (:func:`_moves`), found in the same read."""
    filesystem, _ = open_file(table.scratch)
    writers: dict[int, pa.ipc.RecordBatchFileWriter] = {}
    counts = [0] * table.buckets
    found = []
    try:
        for rows in _read_input(source, table.merged):
            if moves and not source.prior:
                found += _moves(rows, table.plan)
            numbers = _bucket_numbers(rows, table.plan, roots, table.buckets)
            order = np.argsort(numbers, kind="stable")
            rows, numbers = rows.take(order), numbers[order]
            starts = np.searchsorted(numbers, np.arange(table.buckets + 1))
            for bucket in np.flatnonzero(np.diff(starts)).tolist():
                if bucket not in writers:
                    _, path = open_file(_part_file(table, bucket, number))
                    filesystem.create_dir(posixpath.dirname(path), recursive=True)
                    writers[bucket] = pa.ipc.new_file(
                        filesystem.open_output_stream(path), rows.schema, options=image_files.WRITE_OPTIONS
                    )
                writers[bucket].write_table(rows.slice(starts[bucket], starts[bucket + 1] - starts[bucket]))
                counts[bucket] += int(starts[bucket + 1] - starts[bucket])
    finally:
        for writer in writers.values():
            writer.close()
    return counts, found


def _bucket_rows(bucket: int, inputs: Sequence[_Input], table: _Table) -> pa.Table:
    """The rows of one bucket: its Arrow parts, or every input when the table is one bucket."""
    if table.buckets == 1:
        parts = [rows for source in inputs for rows in _read_input(source, table.merged)]
    else:
        filesystem, folder = open_file(f"{table.scratch}/parts/{bucket:05d}")
        found = filesystem.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
        parts = []
        for info in sorted(found, key=lambda each: each.path):
            with filesystem.open_input_file(info.path) as handle:
                parts.append(pa.ipc.open_file(handle).read_all())
    return pa.concat_tables(parts) if parts else pa.table({PRIOR: pa.array([], pa.bool_())})


def write_parquet(rows: pa.Table, name: str, keep: np.ndarray | None = None) -> None:
    """Write ``rows`` (``keep``: only the rows it marks) as a Parquet file, a row group at a time,
    so that the rows kept are copied a row group at a time, never all at once; columns whose
    values repeat are dictionary encoded, and values inside lists and maps get no statistics
    (:mod:`spark_jobs.parquet_encoding`).

    The file holds Parquet's own types, not a copy of the Arrow schema: every Arrow type of the
    warehouse reads back the same from them, but for the lists of names of :func:`indexed_names`,
    which are written from their dictionary as they are (half the cost of writing them as text)
    and read back as lists of strings, the type the warehouse contract gives them."""
    filesystem, path = open_file(name)
    filesystem.create_dir(posixpath.dirname(path), recursive=True)
    with pq.ParquetWriter(
        path, rows.schema, filesystem=filesystem, compression="snappy", store_schema=False,
        use_dictionary=parquet_encoding.dictionary_columns(rows),
        write_statistics=parquet_encoding.statistics_columns(rows),
    ) as writer:
        for start in range(0, rows.num_rows, ROW_GROUP_ROWS):
            part = rows.slice(start, ROW_GROUP_ROWS)
            part = part if keep is None else _where(part, keep[start : start + ROW_GROUP_ROWS])
            if part.num_rows:
                writer.write_table(part, row_group_size=ROW_GROUP_ROWS)


def _fold_bucket(bucket: int, inputs: Sequence[_Input], table: _Table) -> tuple[int, int, list[str]]:
    """Fold one bucket's rows in log order (``current`` rows first) and write its changes (a file per
    commit date, the date a folder ``commit_date=...``, not a column) and its latest rows; returns
    the number of each, and the files written."""
    rows = _bucket_rows(bucket, inputs, table)
    if not rows.num_rows:
        return 0, 0, []
    folded = fold_table(_sorted(rows, prior_first=True), table.plan)
    name = f"{table.run_name}-{bucket:05d}.parquet"
    prior = _flags(folded, PRIOR)
    change = ~prior & own_changes(folded, table.lineage)
    days = folded.column(COMMIT_DATE)
    output = folded.drop_columns([COMMIT_DATE, FINAL, PRIOR])
    written: list[str] = []
    for day in sorted(pc.unique(days.filter(pa.array(change))).to_pylist(), key=lambda each: (each is None, each)):
        chosen = _flags(pc.is_null(days) if day is None else pc.equal(days, pa.scalar(day, days.type))) & change
        folder = f"commit_date={NULL_PARTITION if day is None else day.isoformat()}"
        written.append(f"{table.changes}/{folder}/{name}")
        write_parquet(output, written[-1], keep=chosen)
    final = _flags(folded, FINAL)
    if final.any() and table.lineage is not None:
        final &= kept(output, table.lineage, prior)
    if final.any() and table.lineage is not None:
        latest = _where(output.append_column(PRIOR, pa.array(prior)), final)
        latest = latest if _in_order(_order_keys(latest)) else _sorted(latest)
        write_parquet(in_latest_version(latest.drop_columns([PRIOR]), table.lineage, _flags(latest, PRIOR)),
                      f"{table.current}/{name}")
    elif final.any():
        if _in_order([key[final] for key in _order_keys(output)]):
            write_parquet(output, f"{table.current}/{name}", keep=final)
        else:
            write_parquet(_sorted(_where(output, final)), f"{table.current}/{name}")
    if final.any():
        written.append(f"{table.current}/{name}")
    return int(change.sum()), int(final.sum()), written


def _hashable_row(value: Any) -> Any:
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, tuple)):
        return tuple(_hashable_row(each) for each in value)
    return _hashable(value)


def _components(edges: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Union-find over key changes in log order: (key, root) for every key whose root is another
    key; a component's root is the first key of its first change (deterministic)."""
    parent: dict[Any, Any] = {}
    original: dict[Any, Any] = {}

    def find(key):
        parent.setdefault(key, key)
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    for before, after in edges:
        a, b = _hashable_row(before), _hashable_row(after)
        original.setdefault(a, before)
        original.setdefault(b, after)
        root_a, root_b = find(a), find(b)
        if root_a != root_b:
            parent[root_b] = root_a
    return [(original[key], original[find(key)]) for key in parent if find(key) != key]


def _key_roots(found: list[tuple[tuple, Any, Any]]) -> dict:
    """Per key that the key changes ``found`` (in any order) link to an earlier key, the root of its
    component (see :func:`_components`)."""
    found = sorted(found, key=lambda move: move[0])
    mapping = _components([(before, after) for _, before, after in found])
    log.info("%d key changes link %d keys to an earlier key", len(found), len(mapping))
    return {_hashable_row(key): _hashable_row(root) for key, root in mapping}


def _bucketed(spark, inputs: Sequence[_Input], table: _Table) -> tuple[list[int], int]:
    """Every input's rows into the parts of their buckets (waves 1 and 2 of :func:`materialize`);
    the rows per bucket and the number of key changes.

    Under a primary key, key changes are rare: the rows are bucketed by their own keys while the
    key changes are looked for in the same read, and only if there are any is the bucketing done
    again, by the roots they give. Without one, every real update is a key change, so they are
    looked for first (reading only the key columns)."""
    def wave(roots: dict, moves: bool) -> tuple[list[int], list]:
        per_input = tasks.run_in_groups(
            spark, lambda item: _partition(*item, table=table, roots=roots, moves=moves), list(enumerate(inputs))
        )
        return [sum(counts) for counts in zip(*(counts for counts, _ in per_input))], [
            move for _, found in per_input for move in found
        ]

    if table.plan.unique:
        per_bucket, found = wave({}, moves=True)
        if not found:
            return per_bucket, 0
        _remove(f"{table.scratch}/parts")
    else:
        changes = tasks.run_in_groups(spark, functools.partial(_key_changes, table=table), inputs)
        found = [move for moves in changes for move in moves]
    per_bucket, _ = wave(_key_roots(found), moves=False)
    return per_bucket, len(found)


def _bucket_count(spark, rows: int, rows_per_file: int, slot_rows: int | None) -> int:
    """Buckets (fold tasks, and files per output) for ``rows`` input rows: about ``rows_per_file``
    rows each at most, and enough to give each Spark slot its share of the work: ``slot_rows``
    rows (the share of this table alone when None), never fewer than :data:`SPREAD_ROWS` a bucket.
    A table cut for memory is cut into a multiple of the slots, so that its last buckets are not
    folded by one slot while the others wait."""
    slots = max(1, spark.sparkContext.defaultParallelism)
    share = round(rows / slot_rows) if slot_rows else slots
    for_memory = -(-rows // rows_per_file)
    if for_memory > 1:
        for_memory = -(-for_memory // slots) * slots
    return max(1, for_memory, min(share, rows // SPREAD_ROWS))


def materialize(
    spark,
    staged_files: Sequence[str],
    *,
    database: str,
    table: str,
    key_columns: Sequence[str] | None,
    current: Sequence[str],
    target: str,
    run_name: str,
    scratch: str | None = None,
    partitions: int | None = None,
    rows_per_file: int = ROWS_PER_FILE,
    slot_rows: int | None = None,
    lineage: TableLineage | None = None,
    inherited: Sequence[Inherited] = (),
) -> MaterializeResult:
    """Fold the staged row changes of ``database.table`` onto its ``current`` folder (see the module docstring).

    ``staged_files``: Arrow (:mod:`spark_jobs.image_files`) or Parquet files of ImageBatchBuilder's schema, any table
    versions, any order; ``key_columns``: the primary key's columns, or
    None/empty for a table without one; ``current``: the files of the table's
    ``current`` (:func:`warehouse.catalog.data_files`; none for a new table); ``target``: the run folder
    (laid out like the warehouse); ``run_name``: the stem of the output files'
    names, derived by the caller from the run's input; ``scratch``: where the buckets' parts are
    written meanwhile, a location every task reaches (default: ``target``). ``partitions``: buckets
    (fold tasks); default: about ``rows_per_file`` rows each, and for a large
    table one per ``slot_rows`` rows, the share of one Spark slot in a run that
    folds several tables side by side (None: this table alone, a bucket per slot).
    ``lineage``: how the rows of each older table version read in the latest one
    (:func:`spark_jobs.version_lineage.table_lineage`); ``current`` then holds the latest
    version's columns (:func:`in_latest_version`). None: every version's columns, rows as they are.
    ``inherited``: the rows the table takes over from names it had before a RENAME TABLE of the
    run (with ``lineage``, whose names they are): read as state, never written as its changes.
    """
    if not _RUN_NAME.fullmatch(run_name):
        raise ValueError(f"run name {run_name!r}: letters, digits and ._=- only")
    started = time.monotonic()
    windows = {path: (each.since, each.until, lineage.run if lineage else None) for each in inherited for path in each.staged}
    staged = _schema_groups([*staged_files, *windows])
    prior_groups = _schema_groups(current)
    if prior_groups and lineage is not None and lineage.cleared_in_run:
        log.info("%s.%s: every row of current removed by a statement of the run", database, table)
        if not staged and not any(each.current for each in inherited):
            return _cleared(database, table, prior_groups, lineage, target, run_name, started)
        prior_groups = []
    prior_groups += _schema_groups([path for each in inherited for path in each.current])
    versions = [schema for schema, _ in staged + prior_groups]  # the inputs' versions: staged files first
    if not versions:
        raise ValueError(f"{database}.{table}: neither staged files nor a current table")
    try:  # current's column order first
        merged = merge_for([schema for schema, _ in prior_groups + staged], lineage)
    except SchemaConflict as exc:
        types = lineage.sql_types(exc.column) if lineage is not None and exc.column else []
        changed = f"column {exc.column} changed from {' to '.join(types)} ({exc})" if len(types) > 1 else str(exc)
        raise SchemaConflict(
            f"{database}.{table}: {changed}, and binlake does not follow how the server converted the rows already "
            f"there; to go on, accept it for one run (--accept-type-change {database}.{table}: the values from "
            f"before the change are then unknown in current) or bootstrap {database}.{table} from a snapshot "
            f"taken after the change (python -m spark_jobs.bootstrap)"
        ) from None
    key, unique = table_keys(key_columns, merged)
    plan = FoldPlan(tuple(merged.names), key, unique, tuple(_image_names(schema) for schema in versions), lineage)
    inputs = [_Input(name, version, version >= len(staged), windows.get(name))
              for version, (_, files) in enumerate(staged + prior_groups) for name in files]
    rows = _rows([source.path for source in inputs])
    scratch = f"{(scratch or target).rstrip('/')}/_materialize-{run_name}-{database}.{table}"
    _remove(scratch)  # what an earlier attempt of this run left
    changes_folder, current_folder = (table_folder(target, area, database, table) for area in ("changes", "current"))
    _clear_outputs(changes_folder, current_folder, run_name, [source.path for source in inputs])
    work = _Table(merged, plan, partitions or _bucket_count(spark, rows, rows_per_file, slot_rows), scratch, run_name,
                  changes_folder, current_folder, lineage)
    log.info(
        "%s.%s: %d staged files in %d table versions, %d current files, %d rows in %d buckets; %d columns, key %s%s",
        database, table, sum(not each.prior for each in inputs), len(staged), sum(each.prior for each in inputs), rows, work.buckets,
        len(merged.image), list(key), "" if unique else " (no primary key: every column)",
    )
    key_changes = None
    if work.buckets > 1:
        per_bucket, key_changes = _bucketed(spark, inputs, work)
        log.info("%s.%s: %d key changes; rows per bucket %s", database, table, key_changes, per_bucket)
    counts = tasks.run(spark, lambda bucket: _fold_bucket(bucket, inputs, work), range(work.buckets))
    _remove(scratch)
    written = sorted(name for _, _, names in counts for name in names)
    current_files = [name for name in written if name.startswith(current_folder + "/")]
    if not current_files:  # every row deleted: the table keeps its schema
        current_files = [_empty_current(merged, lineage, current_folder, run_name)]
    changes_files = [name for name in written if name.startswith(changes_folder + "/")]
    result = MaterializeResult(
        merged, key, unique, sum(c for c, _, _ in counts), sum(latest for _, latest, _ in counts), key_changes,
        changes_files, current_files, time.monotonic() - started,
    )
    log.info(
        "%s.%s: %d changes into %d files, %d current rows into %d files, %.1f s",
        database, table, result.changes_rows, len(changes_files), result.current_rows, len(current_files), result.seconds,
    )
    return result


def _cleared(database: str, table: str, prior_groups: list, lineage: TableLineage, target: str, run_name: str,
             started: float) -> MaterializeResult:
    """The result of a run that removed every row of the table and logged none since: an empty
    ``current`` in the latest version's columns (the table's own, or, dropped, its last ones)."""
    merged = merge_for([schema for schema, _ in prior_groups], lineage)
    changes_folder, current_folder = (table_folder(target, area, database, table) for area in ("changes", "current"))
    _clear_outputs(changes_folder, current_folder, run_name, [name for _, files in prior_groups for name in files])
    current_files = [_empty_current(merged, lineage, current_folder, run_name)]
    return MaterializeResult(merged, (), True, 0, 0, None, [], current_files, time.monotonic() - started)


def _empty_current(merged: MergedSchema, lineage: TableLineage | None, folder: str, run_name: str) -> str:
    """A ``current`` file without rows, in the latest version's columns: a table whose every row
    is deleted keeps its schema. Returns its location."""
    name = f"{folder}/{run_name}-{0:05d}.parquet"
    write_parquet(latest_schema(merged, lineage).empty_table(), name)
    return name


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m spark_jobs.materialize``: one table's staged files into a run folder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("staged", nargs="*", help="staged image files of the table (Arrow or Parquet)")
    parser.add_argument("--database", required=True)
    parser.add_argument("--table", required=True)
    parser.add_argument("--key", action="append", default=[], help="a primary key column (repeat); none: every column")
    parser.add_argument("--current", action="append", default=[], help="a file of the table's current (repeat)")
    parser.add_argument("--target", required=True, help="the run folder")
    parser.add_argument("--run-name", required=True)
    parser.add_argument("--partitions", type=int)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName(f"binlake materialize {args.database}.{args.table}").getOrCreate()
    result = materialize(
        spark, args.staged, database=args.database, table=args.table, key_columns=args.key, current=args.current,
        target=args.target, run_name=args.run_name, partitions=args.partitions,
    )
    print(f"{result.changes_rows} changes, {result.current_rows} current rows, {result.seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
