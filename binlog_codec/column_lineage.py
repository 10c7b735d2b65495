"""Where the values of each column of a table come from after a schema change: :func:`lineage`.

Given the model before a change and the model :func:`binlog_codec.schema_apply.apply` made
of it, each column of the new model is one of:

* :class:`Same`: the same column, values unchanged;
* :class:`Renamed`: the values of the column called ``old_name`` before;
* :class:`TypeChanged`: the values of ``old_name`` converted by the server from ``old_type``
  to ``new_type`` (which may also rename it);
* :class:`CharsetChanged`: the same characters in another character set or collation
  (CONVERT TO CHARACTER SET, or a CHANGE/MODIFY naming another one);
* :class:`AddedWithDefault`: a new column whose value in the rows already there is
  ``value`` (NULL for a nullable column without DEFAULT);
* :class:`AddedUnknowable`: a new column whose value in the rows already there the server
  computed (CURRENT_TIMESTAMP, an expression, AUTO_INCREMENT, a generated column, or the
  implicit default of a NOT NULL column without DEFAULT, which depends on sql_mode).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from .column_default import Default, Literal, Unknowable, Value
from .table_model import ColumnModel, TableModel


@dataclass(frozen=True)
class Same:
    column: str


@dataclass(frozen=True)
class Renamed:
    column: str
    old_name: str


@dataclass(frozen=True)
class TypeChanged:
    column: str
    old_name: str
    old_type: str
    new_type: str


@dataclass(frozen=True)
class CharsetChanged:
    column: str
    old_name: str
    old: tuple[str | None, str | None]  # (character set, collation) as written; None: the table's
    new: tuple[str | None, str | None]


@dataclass(frozen=True)
class AddedWithDefault:
    column: str
    value: Value


@dataclass(frozen=True)
class AddedUnknowable:
    column: str
    text: str
    reason: str


Source = Union[Same, Renamed, TypeChanged, CharsetChanged, AddedWithDefault, AddedUnknowable]


def value_of_added(column: ColumnModel) -> Default:
    """The value a column added to a table has in the rows already there."""
    if column.generated is not None:
        return Unknowable(column.generated, "a generated column, computed from other columns")
    if column.auto_increment:
        return Unknowable("AUTO_INCREMENT", "numbered by the server")
    if column.default is not None:
        return column.default
    if column.nullable:
        return Literal(None, "NULL")
    return Unknowable("", "NOT NULL without DEFAULT: the type's implicit default, which depends on sql_mode")


def _added(column: ColumnModel) -> Source:
    value = value_of_added(column)
    if isinstance(value, Literal):
        return AddedWithDefault(column.name, value.value)
    return AddedUnknowable(column.name, value.text, value.reason)


def _source(old: ColumnModel, column: ColumnModel) -> Source:
    if old.type != column.type:
        return TypeChanged(column.name, old.name, old.type, column.type)
    if (old.charset, old.collation) != (column.charset, column.collation):
        return CharsetChanged(column.name, old.name, (old.charset, old.collation), (column.charset, column.collation))
    if old.name != column.name:
        return Renamed(column.name, old.name)
    return Same(column.name)


def lineage(old: TableModel, new: TableModel) -> list[Source]:
    """For each column of ``new`` (in order), where its values come from in ``old``."""
    sources = []
    for column in new.columns:
        before = None if column.was is None else old.column(column.was)
        sources.append(_added(column) if before is None else _source(before, column))
    return sources
