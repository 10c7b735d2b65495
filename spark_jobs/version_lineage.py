"""How the rows of an older table version read in the latest one: the DDL between versions, followed.

A row of ``current`` whose key was last changed before an ALTER TABLE holds the columns of its
version; on the server the ALTER rewrote it: an added column got its DEFAULT, a renamed column
kept its values under the new name, a dropped column went. :func:`table_lineage` takes, per table,
its versions (``metadata/table_schemas`` rows) and its schema changes in log order
(``metadata/schema_changes`` rows). The schema changes cut the log into *epochs*; a row holds
the version of its ``_schema_id`` in the epoch its change was logged in (:data:`VersionKey`), so
that a table that returns to an earlier shape (a column dropped, then added again) does not
pass for its old self. From one version to a later one, :class:`TableLineage` applies the
statements logged between their epochs (:func:`binlog_codec.ddl.parse`,
:func:`binlog_codec.schema_apply.apply`) to a model of the older version built from its columns,
and says for each column of the later version where a row of the older one takes its value
(:class:`FromColumn`, :class:`Value`, :class:`Unknown`).

Where the changes between two versions cannot be followed exactly (none logged in the log read,
a statement not understood, a CREATE or RENAME TABLE in between, a model the statements do not
fit, a type change that is not a widening, a DEFAULT whose value is not exactly known in the
column's Arrow type), the older version keeps its columns by name and the others are unknown.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, replace
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Iterable, Union

import numpy as np
import pyarrow as pa

from binlog_codec import column_lineage, ddl, schema_apply
from binlog_codec.schema_change import (
    ConvertCharset,
    DropPrimaryKey,
    TableAltered,
    TableCreated,
    TableDefaults,
    TablesRenamed,
)
from binlog_codec.schema_version import model_of_version, table_default, version_after

from .schema_history import ALTERED, CREATED, DATABASE_DROPPED, RENAMED, SHAPING
from .table_names import RUN, NameChain, names_of, order as _order, position


@dataclass(frozen=True)
class FromColumn:
    """The value of the older version's column ``name``."""

    name: str


@dataclass(frozen=True)
class Value:
    """A value the ALTER gave every row there (None: NULL), as the column's Arrow type holds it."""

    value: Any


@dataclass(frozen=True)
class Unknown:
    """A value the server computed that the log does not hold (the column is incomplete)."""

    reason: str


Source = Union[FromColumn, Value, Unknown]


# A table version as the rows hold it: its ``_schema_id`` and its epoch, the number of the
# table's schema changes logged before the row change (:meth:`TableLineage.epoch`). A table that
# returns to an earlier shape logs the same ``_schema_id`` again: the epoch tells the two apart.
VersionKey = tuple[str, int]


class TableLineage:
    """The versions of a table and the schema changes logged between them: where each column
    of a later version takes its value in a row of an earlier one (:meth:`way`), and of the
    latest version in particular (:meth:`to_latest`).

    ``latest``: the latest version's ``_schema_id`` (the one whose row change was logged last);
    ``names``: the table's names through RENAME TABLE and the statements that removed its rows
    (:class:`~spark_jobs.table_names.NameChain`); the versions are those of every name.
    ``published``: the latest version as of the warehouse before the run. Each run carries the rows of ``current`` to its latest version, keeping their log positions;
    so a row of that ``_schema_id`` holds that version, whatever the epoch of its position
    (:meth:`row_epochs`).
    ``columns``: its column names in order; ``columns_of``: each version's; ``as_text``: the
    columns (old and new names) an ALTER turned from a number into text -- the server wrote each
    integer or DECIMAL as its decimal text, which is Arrow's cast of the value to a string.
    ``retype``: the user accepted, for this run, the table's type changes whose conversion
    binlake does not follow; ``retyped`` then names each such column (its latest name) with its
    old and new SQL type, and the rows of older versions hold it unknown.
    """

    def __init__(self, versions: dict[str, dict], changes: list[dict], latest: str, names: NameChain,
                 retype: bool = False) -> None:
        self._versions, self._changes, self.names, self.run = versions, changes, names, names.run
        self._retype, self.retyped = retype, {}
        self._boundaries = [position(r) for r in changes]
        self.latest, self.latest_key = latest, (latest, self.epoch(_last(versions[latest])))
        self.published: VersionKey | None = None
        self.columns_of = {schema_id: tuple(c["name"] for c in v["columns"]) for schema_id, v in versions.items()}
        self.columns = self.columns_of[latest]
        self._ways: dict[tuple[VersionKey, VersionKey], tuple[Source, ...] | None] = {}
        self._textual: set[str] = set()
        for old, new in _neighbours(self._candidates()):
            self.way(old, new)
        for old in self._candidates():
            self.way(old, self.latest_key)
        self.as_text = frozenset(self._textual)

    def epoch(self, position: tuple) -> int:
        """The epoch of a row change logged at ``position`` (``_order``'s tuple)."""
        return bisect.bisect_right(self._boundaries, position)

    def epochs(self, seqs: list, files: list, positions: list, runs: np.ndarray) -> np.ndarray:
        """The epoch of each row change, from its ``_binlog_seq``, ``_binlog_file`` and
        ``_binlog_pos`` and the ordinal of the run that read it (``runs``)."""
        if not self._boundaries:
            return np.zeros(len(positions), dtype=np.int64)
        if None not in seqs and all(seq is not None for _, seq, _, _ in self._boundaries):
            # One integer per position: the rank of its (run, file number), then its offset (below
            # 2**40): one sorted search.
            pairs = np.array([(run, seq) for run, seq, _, _ in self._boundaries]
                             + list(zip(np.asarray(runs).tolist(), seqs)), dtype=np.int64).reshape(-1, 2)
            ranks = np.unique(pairs, axis=0, return_inverse=True)[1].reshape(-1)
            offsets = np.array([pos for _, _, _, pos in self._boundaries] + list(positions), dtype=np.int64)
            keys = (ranks << 40) + offsets
            count = len(self._boundaries)
            return np.searchsorted(keys[:count], keys[count:], side="right")
        places = zip(seqs, files, positions, np.asarray(runs).tolist())
        return np.fromiter((self.epoch(_order(*place)) for place in places), dtype=np.int64, count=len(positions))

    def row_epochs(self, schema_ids: np.ndarray, seqs: list, files: list, positions: list,
                   prior: np.ndarray) -> np.ndarray:
        """The epoch of the version each row holds: its position's in the run (``prior``: a row
        of ``current``, logged in a run before), or for a row of the ``published`` version's
        ``_schema_id`` at least that version's (``schema_ids``: per row, whether it has that id)."""
        epochs = self.epochs(seqs, files, positions, np.where(prior, -1, self.run))
        if self.published is not None:
            epochs = np.where(schema_ids, np.maximum(epochs, self.published[1]), epochs)
        return epochs

    def table_of(self, schema_id: str | None) -> str | None:
        """The name the table had when it logged a row change of version ``schema_id``."""
        version = self._versions.get(schema_id)
        return None if version is None else version["table"]

    @property
    def removes_rows(self) -> bool:
        """Whether some row change of the run may not be the table's any more (:meth:`kept`)."""
        removed = self.names.removed(0)
        return len(self.names.segments) > 1 or removed is not None and removed[0] == self.run

    def kept(self, schema_ids: list, seqs: list, files: list, positions: list) -> np.ndarray:
        """Per row change of the run, whether its row is still in the table
        (:meth:`~spark_jobs.table_names.NameChain.kept`)."""
        if not self.removes_rows:
            return np.ones(len(positions), dtype=bool)
        if len(self.names.segments) == 1:  # one name: after the last statement of the run that removed the rows
            removed = self.names.removed(0)
            if None not in seqs and removed[1] > 0:  # a run reads one source: a file number names its file
                seq, pos = np.array(seqs, dtype=np.int64), np.array(positions, dtype=np.int64)
                return (seq > removed[1]) | (seq == removed[1]) & (pos > removed[3])
        names = {schema_id: self.table_of(schema_id) for schema_id in set(schema_ids)}
        return self.names.kept([names[schema_id] for schema_id in schema_ids],
                               [_order(seq, file, pos, self.run) for seq, file, pos in zip(seqs, files, positions)])

    def own(self, schema_ids: list) -> np.ndarray:
        """Per row change, whether it was logged under the table's own name (not one it had
        before a RENAME TABLE: those are the changes of that name)."""
        names = {schema_id: self.table_of(schema_id) for schema_id in set(schema_ids)}
        return np.array([names[schema_id] in (None, self.names.own) for schema_id in schema_ids], dtype=bool)

    @property
    def cleared_in_run(self) -> bool:
        """Whether every row of ``current`` before the run was removed by a statement of the run."""
        return self.names.cleared_in_run

    def _candidates(self) -> list[VersionKey]:
        """The versions the rows may hold: each ``_schema_id`` in each epoch its row changes span."""
        found = []
        for schema_id, version in self._versions.items():
            first, last = self.epoch(_first(version)), self.epoch(_last(version))
            found += [(schema_id, epoch) for epoch in range(first, max(first, last) + 1)]
        return sorted(found, key=lambda key: (key[1], _first(self._versions[key[0]])))

    def way(self, old: VersionKey, new: VersionKey) -> tuple[Source, ...] | None:
        """Per column of version ``new``, its source in a row of version ``old`` logged before it,
        through the schema changes logged between their epochs; None: not followed exactly (or
        the same version)."""
        if old == new or old[0] not in self._versions or new[0] not in self._versions:
            return None
        if (old, new) not in self._ways:
            textual: set[str] = set()
            step = _step(self._versions[old[0]], self._versions[new[0]], self._changes[old[1]:new[1]], textual,
                         self.retyped if self._retype else None)
            if step is not None:
                self._textual |= textual
            self._ways[old, new] = None if step is None else tuple(step[name] for name in self.columns_of[new[0]])
        return self._ways[old, new]

    def sql_types(self, column: str) -> list[str]:
        """The SQL types the column ``column`` had, in the order of the versions' row changes."""
        found: list[str] = []
        for version in sorted(self._versions.values(), key=_first):
            kind = next((c["sql_type"] for c in version["columns"] if c["name"] == column), None)
            if kind is not None and kind not in found[-1:]:
                found.append(kind)
        return found

    def retyped_types(self) -> dict[str, pa.DataType]:
        """The Arrow type of each column in :attr:`retyped`, the latest version's."""
        columns = {c["name"]: c for c in self._versions[self.latest]["columns"]}
        found = {name: arrow_type(columns[name]["arrow_type"]) for name in self.retyped if name in columns}
        return {name: kind for name, kind in found.items() if kind is not None}

    def latest_fields(self) -> list[pa.Field] | None:
        """The latest version's image columns as Arrow fields (from ``table_schemas``' Arrow type
        names), None where a name is not one :func:`arrow_type` reads."""
        fields = [(c["name"], arrow_type(c["arrow_type"])) for c in self._versions[self.latest]["columns"]]
        return None if any(kind is None for _, kind in fields) else [pa.field(name, kind) for name, kind in fields]

    def to_latest(self, old: VersionKey) -> tuple[Source, ...]:
        """Per latest column, its source in a row of version ``old``; where the way is not known:
        its own columns by name, the others unknown."""
        way = self.way(old, self.latest_key)
        if way is not None:
            return way
        own = set(self.columns_of.get(old[0], ()))
        return tuple(FromColumn(name) if name in own else Unknown("no DDL known between the versions")
                     for name in self.columns)


def _first(version: dict) -> tuple:
    return _order(version["first_seq"], version["first_file"], version["first_pos"], version.get("first_run"))


def _last(version: dict) -> tuple:
    if version.get("last_pos") is None:
        return _first(version)
    return _order(version["last_seq"], version["last_file"], version["last_pos"], version.get("last_run"))


def _neighbours(keys: list[VersionKey]) -> list[tuple[VersionKey, VersionKey]]:
    return list(zip(keys, keys[1:]))


_DECIMAL = re.compile(r"decimal128\((\d+), (\d+)\)")
_INTEGER_RANGES = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}


def arrow_value(value: Any, column: dict) -> tuple[bool, Any]:
    """(True, the value as binlake's Arrow type of ``column`` holds it) for a DEFAULT literal the
    type holds exactly, else (False, None). ``column``: a ``table_schemas`` column."""
    if value is None:
        return True, None
    kind, sql = column["arrow_type"], column["sql_type"].lower()
    base = sql.split("(")[0].split()[0]
    if isinstance(value, float) or isinstance(value, bytes):
        return False, None  # floats and hexadecimal literals: left to the server
    if kind in _INTEGER_RANGES or kind == "decimal128(20, 0)" and base in ("bigint",):
        if base not in ("tinyint", "smallint", "mediumint", "int", "bigint"):
            return False, None  # YEAR, BIT: their own conversions
        number = value if isinstance(value, int) else _integer_text(value)
        if number is None or not isinstance(number, int):
            return False, None
        bits = _INTEGER_RANGES.get(kind, 64)
        if kind in _INTEGER_RANGES and not -(2 ** bits) <= number < 2 ** bits:
            return False, None
        return True, number if kind in _INTEGER_RANGES else Decimal(number)
    if (found := _DECIMAL.fullmatch(kind)) and base in ("decimal", "numeric"):
        precision, scale = int(found.group(1)), int(found.group(2))
        try:
            number = Decimal(value) if isinstance(value, (int, Decimal, str)) else None
        except InvalidOperation:
            return False, None
        if number is None or not number.is_finite():
            return False, None
        exact = number.quantize(Decimal(1).scaleb(-scale))
        if exact != number or len(exact.as_tuple().digits) > precision:
            return False, None
        return True, exact
    if kind == "string" and isinstance(value, str):
        if base in ("varchar", "text", "tinytext", "mediumtext", "longtext"):
            return True, value
        if base == "char":
            return True, value.rstrip(" ")  # CHAR is logged (and read) without its trailing spaces
        if base == "enum" and value in (column.get("enum_values") or ()):
            return True, value
        return False, None
    if kind == "date32[day]" and isinstance(value, str):
        try:
            return True, date.fromisoformat(value)
        except ValueError:
            return False, None
    if kind == "timestamp[us]" and isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return False, None
        return (True, parsed) if parsed.tzinfo is None else (False, None)
    return False, None


_ARROW_DECIMAL = re.compile(r"decimal128\((\d+), (\d+)\)")
_ARROW_TIMESTAMP = re.compile(r"timestamp\[(s|ms|us|ns)(?:, tz=([^\]]+))?\]")


def arrow_type(name: str) -> pa.DataType | None:
    """The Arrow type ``str(type)`` printed as ``name`` (the ``arrow_type`` of a
    ``table_schemas`` column), None for one outside binlake's type mapping."""
    if found := _ARROW_DECIMAL.fullmatch(name):
        return pa.decimal128(int(found.group(1)), int(found.group(2)))
    if found := _ARROW_TIMESTAMP.fullmatch(name):
        return pa.timestamp(found.group(1), tz=found.group(2))
    try:
        return pa.type_for_alias(name)
    except ValueError:
        return None


def _integer_text(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else None
    if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value.strip()):
        return int(value.strip())
    return None


def _carried(old: dict, new: dict) -> bool:
    """Whether values of the ``table_schemas`` column ``old`` keep their meaning in ``new``'s Arrow type."""
    from .materialize import SchemaConflict, widen  # the fold's own rule of what keeps every value

    if old["arrow_type"] == new["arrow_type"]:
        return True
    a, b = arrow_type(old["arrow_type"]), arrow_type(new["arrow_type"])
    if a is None or b is None:
        return False
    try:
        return widen(b, a, new["name"]) == b
    except SchemaConflict:
        return False


_INTEGERS = frozenset("tinyint smallint mediumint int integer bigint".split())
_NUMBERS = _INTEGERS | {"decimal", "numeric"}
_TEXTS = frozenset("varchar char text tinytext mediumtext longtext".split())


def _base(column: dict) -> str:
    return column["sql_type"].lower().split("(")[0].split()[0]


def as_text(old: dict, new: dict) -> bool:
    """Whether the server turned values of the ``table_schemas`` column ``old`` into ``new``'s
    text exactly as Arrow casts them to a string: an integer or DECIMAL into a character type."""
    return _base(old) in _NUMBERS and _base(new) in _TEXTS and new["arrow_type"] == "string" and (
        old["arrow_type"] in _INTEGER_RANGES or old["arrow_type"].startswith("decimal128("))


_SQL_DECIMAL = re.compile(r"(?:DECIMAL|NUMERIC)\((\d+)(?:,\s*(\d+))?\)")


def converted_default(value: Any, old_type: str, new_type: str) -> tuple[str, Any]:
    """A DEFAULT value of a column of SQL type ``old_type`` (as the model writes it) after a
    MODIFY/CHANGE to ``new_type``: ("value", v) where the server's conversion is known (an
    integer type widened: the same number; an integer or DECIMAL(p,s) into a character type: its
    decimal text, with the s digits DECIMAL keeps), else ("unknown", why)."""
    old_base, new_base = old_type.split("(")[0].split()[0].lower(), new_type.split("(")[0].split()[0].lower()
    number = _integer_text(value) if old_base in _INTEGERS else None
    if old_base in _INTEGERS and new_base in _INTEGERS and number is not None:
        return "value", number
    if new_base in _TEXTS and old_base in _INTEGERS and number is not None:
        return "value", str(number)
    found = _SQL_DECIMAL.fullmatch(old_type.upper().replace(" UNSIGNED", "").replace(" ZEROFILL", ""))
    if new_base in _TEXTS and found and isinstance(value, (int, Decimal, str)):
        try:
            exact = Decimal(value).quantize(Decimal(1).scaleb(-int(found.group(2) or 0)))
        except InvalidOperation:
            exact = None
        if exact is not None and exact.is_finite() and len(exact.as_tuple().digits) <= int(found.group(1)):
            return "value", str(exact)
    return "unknown", f"a DEFAULT converted from {old_type} to {new_type}"


def _step(old: dict, new: dict, changes: list[dict], textual: set[str],
          retyped: dict[str, tuple[str, str]] | None = None) -> dict[str, Source] | None:
    """Per column of version ``new``, its source in version ``old`` through ``changes`` (None:
    not followed exactly); the names of the columns turned into text are added to ``textual``.
    ``retyped``: when given, a type change whose conversion is not followed is accepted: the
    column is unknown, and added to it with its old and new SQL type."""
    if not changes or any(row["change"] not in (ALTERED, RENAMED) for row in changes):
        return None
    steps: list[list[column_lineage.Source]] = []
    try:
        model = model_of_version(old)  # the same model the server's next version is derived from
        for row in changes:
            change = ddl.parse(row["statement"], row["database"], sql_mode=row["sql_mode"] or 0)
            if not isinstance(change, (TableAltered, TablesRenamed)):
                return None
            after = schema_apply.apply(model, change)
            if after is None:
                return None
            steps.append(column_lineage.lineage(model, after))
            model = replace(after, columns=tuple(replace(c, was=c.name) for c in after.columns))
    except ValueError:  # ModelMismatch, or a model the table_schemas columns do not give
        return None
    new_columns = {c["name"].casefold(): c for c in new["columns"]}
    old_columns = {c["name"].casefold(): c for c in old["columns"]}
    if [c.name.casefold() for c in model.columns] != [c["name"].casefold() for c in new["columns"]]:
        return None  # the statements do not make the version the log shows
    # Compose: per column of each step's model, its source in ``old`` ("column", name) or ("value", v).
    sources: dict[str, tuple] = {c["name"].casefold(): ("column", c["name"]) for c in old["columns"]}
    for lineage in steps:
        following: dict[str, tuple] = {}
        for source in lineage:
            key = source.column.casefold()
            if isinstance(source, column_lineage.AddedWithDefault):
                following[key] = ("value", source.value)
            elif isinstance(source, column_lineage.AddedUnknowable):
                following[key] = ("unknown", f"{source.text or 'no DEFAULT'}: {source.reason}")
            elif isinstance(source, column_lineage.Same):
                following[key] = sources.get(key, ("unknown", "not followed"))
            else:
                earlier = sources.get(source.old_name.casefold(), ("unknown", "not followed"))
                if isinstance(source, column_lineage.TypeChanged) and earlier[0] == "value":
                    earlier = converted_default(earlier[1], source.old_type, source.new_type)
                following[key] = earlier
        sources = following
    result: dict[str, Source] = {}
    for key, column in new_columns.items():
        kind, what = sources[key]
        if kind == "column":
            before = old_columns[what.casefold()]
            if not _carried(before, column) and not as_text(before, column):
                if retyped is None:
                    return None  # a type change the server's conversion of is not followed
                retyped[column["name"]] = (before["sql_type"], column["sql_type"])
                result[column["name"]] = Unknown(f"{before['sql_type']} changed to {column['sql_type']}, accepted "
                                                 "without the server's conversion")
                continue
            if not _carried(before, column):
                textual |= {before["name"], column["name"]}
            result[column["name"]] = FromColumn(what)
        elif kind == "value":
            exact, value = arrow_value(what, column)
            result[column["name"]] = Value(value) if exact else Unknown(f"DEFAULT {what!r} as {column['sql_type']}")
        else:
            result[column["name"]] = Unknown(what)
    return result


def _in_chain(database: str, names: NameChain, table: str, at: tuple, *, until_end: bool = False) -> bool:
    """Whether ``table`` had the rows of the chain ``names`` at ``at`` (``until_end``: the rename
    that ends a segment counts as in it)."""
    return any(segment.name == table and (segment.start is None or at > segment.start)
               and (segment.end is None or at < segment.end or until_end and at == segment.end)
               for segment in names.segments)


def table_lineage(versions: Iterable[dict], changes: Iterable[dict], database: str, table: str,
                  published: Iterable[dict] = (), *, run: int | None = None, retype: bool = False) -> TableLineage | None:
    """The lineage of ``database.table`` from its versions (``table_schemas`` rows of every run),
    schema changes (``schema_changes`` rows) and the versions the warehouse held before the run
    (``published``, the ``table_schemas`` rows of the runs before), over the names it had
    (:func:`~spark_jobs.table_names.names_of`), as the run of ordinal ``run`` reads them; None
    when it has one name, one version and no schema change nor removal of its rows after its
    first row change (the usual table, created before its rows: nothing to follow, and the fold
    skips the work), or no version. ``retype``: see :class:`TableLineage`."""
    changes = list(changes)
    names = names_of(changes, database, table, run)

    def mine(rows: Iterable[dict]) -> dict[str, dict]:
        return {v["schema_id"]: v for v in rows if v["database"] == database and v["first_pos"] is not None
                and _in_chain(database, names, v["table"], _first(v))}

    versions = mine(versions)
    if not versions:
        return None
    rows = sorted((r for r in changes if r["database"] == database and r["change"] in SHAPING and (
        r["table"] is None and r["change"] == DATABASE_DROPPED
        or r["table"] is not None and _in_chain(database, names, r["table"], position(r), until_end=True))), key=position)
    latest = max(versions.values(), key=_last)
    since = _first(latest)
    cleared = names.segments[-1].cleared
    if len(versions) == 1 and len(names.segments) == 1 and (not rows or position(rows[-1]) < since) \
            and (cleared is None or cleared < since):
        return None  # one name, one version, no schema change nor removal of its rows since its first row change
    lineage = TableLineage(versions, rows, latest["schema_id"], names, retype)
    before = mine(published)
    if before:
        newest = max(before.values(), key=_last)
        lineage.published = (newest["schema_id"], lineage.epoch(_last(newest)))
    return lineage


def derived_versions(versions: Iterable[dict], changes: Iterable[dict]) -> list[dict]:
    """The versions ALTER TABLE statements made that no row change of the log read shows yet: per
    table, :func:`binlog_codec.schema_version.version_after` of its latest version and the
    ALTERs logged after that version's last row change (when nothing else was), as a
    ``table_schemas`` row first and last seen where the last ALTER was logged, without rows."""
    changes = sorted(changes, key=position)
    latest: dict[tuple[str, str], dict] = {}
    for version in versions:
        key = (version["database"], version["table"])
        if version["first_pos"] is not None and (key not in latest or _last(version) > _last(latest[key])):
            latest[key] = version
    found = []
    for (database, table), version in sorted(latest.items()):
        after = [r for r in changes if r["database"] == database and r["table"] in (table, None)
                 and r["change"] in SHAPING and position(r) > _last(version)]
        if not after or any(r["change"] != ALTERED or r["table"] != table for r in after):
            continue
        row = version_after(version, after, *_creation(versions, changes, database, table))
        if row is not None and row["schema_id"] != version["schema_id"]:  # not an ALTER that left the rows' shape
            found.append(_seen_at(row, after[-1]))
    return found


def _creation(versions: Iterable[dict], changes: list[dict], database: str, table: str) -> tuple[tuple[str, str] | None, bool]:
    """What the table's last CREATE TABLE in ``changes`` (log order) says that its table maps do
    not: its default character set and collation (from the version logged right after it,
    :func:`binlog_codec.schema_version.table_default`; None when the log does not say, or an
    ALTER since changed them), and whether it declared its PRIMARY KEY (no ALTER since dropped it)."""
    mine = [r for r in changes if r["database"] == database and r["table"] == table and r["change"] in SHAPING]
    at = next((at for at in range(len(mine) - 1, -1, -1) if mine[at]["change"] == CREATED), None)
    if at is None:
        return None, False
    created, since = mine[at], [_operations(row) for row in mine[at + 1:]]
    change = ddl.parse(created["statement"], created["database"], sql_mode=created["sql_mode"] or 0)
    declared = isinstance(change, TableCreated) and bool(change.model.primary_key) and not any(
        isinstance(operation, DropPrimaryKey) for operations in since for operation in operations)
    if any(isinstance(operation, (TableDefaults, ConvertCharset)) for operations in since for operation in operations):
        return None, declared
    end = position(mine[at + 1]) if at + 1 < len(mine) else None
    first = [v for v in versions if v["database"] == database and v["table"] == table and v["first_pos"] is not None
             and position(created) < _first(v) and (end is None or _first(v) < end)]
    return (None if not first else table_default(created, min(first, key=_first))), declared


def _operations(row: dict) -> tuple:
    """The operations of an ALTER TABLE row (none for another statement)."""
    if row["change"] != ALTERED:
        return ()
    change = ddl.parse(row["statement"], row["database"], sql_mode=row["sql_mode"] or 0)
    return change.operations if isinstance(change, TableAltered) else ()


def _seen_at(row: dict, change: dict) -> dict:
    """A derived version's ``table_schemas`` row, seen (first and last) where ``change`` was logged."""
    seen = {"file": change["_binlog_file"], "seq": change["_binlog_seq"], "pos": change["_binlog_pos"], "inner_offset": None,
            "run": change.get(RUN)}
    positions = {f"{which}_{part}": value for which in ("first", "last") for part, value in seen.items()}
    return {**row, **positions, "rows": 0, "ddl": change["statement"],
            "ddl_position": f"{change['_binlog_file']}:{change['_binlog_pos']}"}
