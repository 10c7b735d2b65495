"""How the rows of an older table version read in the latest one: the DDL between versions, followed.

A row of ``current`` whose key was last changed before an ALTER TABLE holds the columns of its
version; on the server the ALTER rewrote it: an added column got its DEFAULT, a renamed column
kept its values under the new name, a dropped column went. :func:`table_lineage` finds, per table,
its versions in log order (``metadata/table_schemas`` rows, by first position) and the schema
changes logged between each two (``metadata/schema_changes`` rows), applies those statements
(:func:`binlog_codec.ddl.parse`, :func:`binlog_codec.schema_apply.apply`) to a model of the older
version built from its columns, and says for each column of the latest version where a row of
each older version takes its value (:class:`FromColumn`, :class:`Value`, :class:`Unknown`).

Where the changes between two versions cannot be followed exactly (none logged in the log read,
a statement not understood, a CREATE or RENAME TABLE in between, a model the statements do not
fit, a type change that is not a widening, a DEFAULT whose value is not exactly known in the
column's Arrow type), that version has no lineage and its rows are left as they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Iterable, Union

from binlog_codec import column_lineage, ddl, schema_apply
from binlog_codec.column_default import Literal
from binlog_codec.schema_change import TableAltered
from binlog_codec.table_model import ColumnModel, TableModel

ALTERED = "altered"


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


@dataclass(frozen=True)
class TableLineage:
    """The latest version of a table (its id and column names, in order) and, per older version
    whose way to it is known, where each latest column's value comes from."""

    latest: str
    columns: tuple[str, ...]
    sources: dict[str, tuple[Source, ...]]
    # Per (older version, later version), where each of the later version's columns
    # (``columns_of``) takes its value in a row of the older one: how the fold carries a row's
    # state to the version of the change that follows it.
    between: dict[tuple[str, str], tuple[Source, ...]] = field(default_factory=dict)
    columns_of: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The columns (old and new names) an ALTER turned from a number into text: the server wrote
    # each integer or DECIMAL as its decimal text, which is Arrow's cast of the value to a string.
    as_text: frozenset[str] = frozenset()


def _order(seq: Any, file: Any, pos: Any) -> tuple:
    return (seq or 0, file or "", pos or 0)


def _model(version: dict) -> TableModel:
    columns = tuple(ColumnModel(c["name"], c["sql_type"].upper(), bool(c["nullable"]), was=c["name"])
                    for c in version["columns"])
    key = tuple(part["column"] for part in version["primary_key"] or ())
    return TableModel(version["database"], version["table"], columns, key)


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


def _integer_text(value: Any) -> int | None:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else None
    if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value.strip()):
        return int(value.strip())
    return None


def _carried(old: dict, new: dict) -> bool:
    """Whether values of the ``table_schemas`` column ``old`` keep their meaning in ``new``'s Arrow type."""
    from .materialize import SchemaConflict, widen  # the fold's own rule of what keeps every value
    import pyarrow as pa

    if old["arrow_type"] == new["arrow_type"]:
        return True
    try:
        a, b = pa.type_for_alias(old["arrow_type"]), pa.type_for_alias(new["arrow_type"])
    except ValueError:
        return False
    try:
        return widen(b, a, new["name"]) == b
    except SchemaConflict:
        return False


_NUMBERS = frozenset("tinyint smallint mediumint int integer bigint decimal numeric".split())
_TEXTS = frozenset("varchar char text tinytext mediumtext longtext".split())


def _base(column: dict) -> str:
    return column["sql_type"].lower().split("(")[0].split()[0]


def as_text(old: dict, new: dict) -> bool:
    """Whether the server turned values of the ``table_schemas`` column ``old`` into ``new``'s
    text exactly as Arrow casts them to a string: an integer or DECIMAL into a character type."""
    return _base(old) in _NUMBERS and _base(new) in _TEXTS and new["arrow_type"] == "string" and (
        old["arrow_type"] in _INTEGER_RANGES or old["arrow_type"].startswith("decimal128("))


def _step(old: dict, new: dict, changes: list[dict], textual: set[str]) -> dict[str, Source] | None:
    """Per column of version ``new``, its source in version ``old`` through ``changes`` (None:
    not followed exactly); the names of the columns turned into text are added to ``textual``."""
    if not changes or any(row["change"] != ALTERED for row in changes):
        return None
    model = _model(old)
    steps: list[list[column_lineage.Source]] = []
    try:
        for row in changes:
            change = ddl.parse(row["statement"], row["database"], sql_mode=row["sql_mode"] or 0)
            if not isinstance(change, TableAltered):
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
                    earlier = ("unknown", f"a DEFAULT converted from {source.old_type} to {source.new_type}")
                following[key] = earlier
        sources = following
    result: dict[str, Source] = {}
    for key, column in new_columns.items():
        kind, what = sources[key]
        if kind == "column":
            before = old_columns[what.casefold()]
            if not _carried(before, column):
                if not as_text(before, column):
                    return None  # a type change the server's conversion of is not followed
                textual |= {before["name"], column["name"]}
            result[column["name"]] = FromColumn(what)
        elif kind == "value":
            exact, value = arrow_value(what, column)
            result[column["name"]] = Value(value) if exact else Unknown(f"DEFAULT {what!r} as {column['sql_type']}")
        else:
            result[column["name"]] = Unknown(what)
    return result


def table_lineage(versions: Iterable[dict], changes: Iterable[dict], database: str, table: str) -> TableLineage | None:
    """The lineage of ``database.table`` from its versions (``table_schemas`` rows of every run)
    and schema changes (``schema_changes`` rows); None when it has one version or none."""
    versions = list(versions)
    mine = sorted((v for v in versions if v["database"] == database and v["table"] == table and v["first_pos"] is not None),
                  key=lambda v: _order(v["first_seq"], v["first_file"], v["first_pos"]))
    if len(mine) < 2:
        return None
    rows = sorted(
        (r for r in changes if r["database"] == database and r["table"] == table and r["change"] != "truncated"),
        key=lambda r: _order(r["_binlog_seq"], r["_binlog_file"], r["_binlog_pos"]),
    )
    steps, textual = [], set()
    for old, new in zip(mine, mine[1:]):
        start = _order(old["first_seq"], old["first_file"], old["first_pos"])
        end = _order(new["first_seq"], new["first_file"], new["first_pos"])
        logged = [r for r in rows if start < _order(r["_binlog_seq"], r["_binlog_file"], r["_binlog_pos"]) < end]
        found_text: set[str] = set()
        steps.append(step := _step(old, new, logged, found_text))
        if step is not None:
            textual |= found_text
    columns_of = {v["schema_id"]: tuple(c["name"] for c in v["columns"]) for v in mine}
    between: dict[tuple[str, str], tuple[Source, ...]] = {}
    for target in range(1, len(mine)):
        for old_id, sources in _ways_to(mine, steps, target).items():
            between[(old_id, mine[target]["schema_id"])] = sources
    latest = mine[-1]
    found = {old: sources for (old, new), sources in between.items() if new == latest["schema_id"]}
    return TableLineage(latest["schema_id"], columns_of[latest["schema_id"]], found, between, columns_of,
                        frozenset(textual))


def _in(source: Source, column: dict) -> Source:
    """``source`` for ``column`` of a later version: a DEFAULT given in an earlier version, in the
    column's type now (a number a later ALTER turned into text: its decimal text, as the server
    wrote it); unknown where that is not exact."""
    if not isinstance(source, Value) or source.value is None:
        return source
    value = source.value
    if column["arrow_type"] == "string" and isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, datetime):
        return source if column["arrow_type"] == "timestamp[us]" else Unknown(f"DEFAULT {value} as {column['sql_type']}")
    if isinstance(value, date):
        if column["arrow_type"] == "date32[day]":
            return source
        if column["arrow_type"] == "timestamp[us]":  # DATE widened to DATETIME: midnight
            return Value(datetime(value.year, value.month, value.day))
        return Unknown(f"DEFAULT {value} as {column['sql_type']}")
    exact, converted = arrow_value(value, column)
    return Value(converted) if exact else Unknown(f"DEFAULT {source.value!r} as {column['sql_type']}")


def _ways_to(mine: list[dict], steps: list, target: int) -> dict[str, tuple[Source, ...]]:
    """Per version before ``mine[target]``, where each of its columns takes its value; a version
    whose way is not known: its own columns by name, the others unknown."""
    names = tuple(c["name"] for c in mine[target]["columns"])
    columns = {c["name"]: c for c in mine[target]["columns"]}
    found: dict[str, tuple[Source, ...]] = {}
    to_target: dict[str, Source] | None = {name: FromColumn(name) for name in names}
    for old, step in zip(reversed(mine[:target]), reversed(steps[:target])):
        if step is None or to_target is None:
            break
        to_target = {name: step[via.name] if isinstance(via, FromColumn) else via for name, via in to_target.items()}
        found.setdefault(old["schema_id"], tuple(_in(to_target[name], columns[name]) for name in names))
    for old in mine[:target]:
        own = {c["name"] for c in old["columns"]}
        found.setdefault(old["schema_id"], tuple(
            FromColumn(name) if name in own else Unknown("no DDL known between the versions") for name in names))
    return found
