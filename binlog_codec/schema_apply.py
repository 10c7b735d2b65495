"""A table's model after a change: :func:`apply`.

The operations of an ALTER TABLE are applied in the order written, each to the result of
the one before, as the server reads them: ``ADD`` puts a column last, ``FIRST`` or ``AFTER``
the named column (among the columns as they are at that point); ``CHANGE``/``MODIFY`` keep
the column where it was unless ``FIRST``/``AFTER`` says otherwise; a renamed column keeps
its place in the primary key; a dropped column leaves the key; the columns of a primary key
become NOT NULL. Each column of the result records in ``was`` its name in ``model`` (None for
a column added), which :func:`binlog_codec.column_lineage.lineage` reads.

A change that does not fit the model (a column that is not there without ``IF EXISTS``,
one added twice without ``IF NOT EXISTS``, a NotUnderstood statement) raises
:class:`ModelMismatch`: the server would have refused the statement, so the model is not
the server's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from .schema_change import (
    AddColumn,
    After,
    AlterDefault,
    Change,
    ChangeColumn,
    ConvertCharset,
    DatabaseDropped,
    DropColumn,
    DropPrimaryKey,
    First,
    NoRowChange,
    NotSchemaChange,
    Operation,
    Position,
    RenameColumn,
    RenameTable,
    SetPrimaryKey,
    TableAltered,
    TableCreated,
    TableCreatedLike,
    TableDefaults,
    TablesDropped,
    TablesRenamed,
    TableTruncated,
)
from .table_model import ColumnModel, TableModel


class ModelMismatch(ValueError):
    """The change cannot apply to the model: the server's table was not the one modelled."""


def apply(model: TableModel | None, change: Change) -> TableModel | None:
    """The model of the table after ``change``; None when the change drops it.

    ``model`` is the table the change is about (None before it is created), except for
    :class:`TableCreatedLike`, where it is the model of the table copied."""
    if isinstance(change, TableCreated):
        return model if change.if_not_exists and model is not None else _fresh(change.model)
    if isinstance(change, TableCreatedLike):
        return _fresh(replace(_existing(model, change), database=change.table.database, name=change.table.name))
    if isinstance(change, (TablesDropped, DatabaseDropped)):
        return None
    if isinstance(change, (NotSchemaChange, TableTruncated)):
        return model
    if isinstance(change, TablesRenamed):
        return _renamed(_existing(model, change), change)
    if isinstance(change, TableAltered):
        result = _fresh(_existing(model, change))
        for operation in change.operations:
            result = _OPERATIONS[type(operation)](result, operation)
        return result
    raise ModelMismatch(f"{type(change).__name__} cannot be applied to a model: {change}")


def _existing(model: TableModel | None, change: Change) -> TableModel:
    if model is None:
        raise ModelMismatch(f"no table to apply {type(change).__name__} to")
    return model


def _fresh(model: TableModel) -> TableModel:
    """``model`` with each column's ``was`` its own name."""
    return replace(model, columns=tuple(replace(column, was=column.name) for column in model.columns))


def _renamed(model: TableModel, change: TablesRenamed) -> TableModel:
    """The renames are done in order: the model follows those that start at its name."""
    for old, new in change.renames:
        if (old.database, old.name) == (model.database, model.name):
            model = replace(model, database=new.database, name=new.name)
    return model


# -- operations ----------------------------------------------------------------------


def _index(model: TableModel, name: str) -> int:
    index = model.index(name)
    if index is None:
        raise ModelMismatch(f"table {model.name!r} has no column {name!r}")
    return index


def _insert(model: TableModel, column: ColumnModel, position: Position, default_index: int) -> TableModel:
    columns = list(model.columns)
    if isinstance(position, First):
        index = 0
    elif isinstance(position, After):
        index = _index(model, position.column) + 1
    else:
        index = default_index
    columns.insert(index, column)
    return _keyed(replace(model, columns=tuple(columns)))


def _keyed(model: TableModel) -> TableModel:
    """The columns of the primary key made NOT NULL, as the server makes them."""
    key = {name.casefold() for name in model.primary_key}
    columns = tuple(replace(c, nullable=False) if c.name.casefold() in key else c for c in model.columns)
    return replace(model, columns=columns)


def _without(model: TableModel, index: int) -> TableModel:
    """``model`` without its column at ``index``, also left out of the primary key."""
    name = model.columns[index].name.casefold()
    return replace(
        model,
        columns=model.columns[:index] + model.columns[index + 1 :],
        primary_key=tuple(key for key in model.primary_key if key.casefold() != name),
    )


def _renamed_in_key(model: TableModel, old: str, new: str) -> tuple[str, ...]:
    return tuple(new if key.casefold() == old.casefold() else key for key in model.primary_key)


def _add(model: TableModel, operation: AddColumn) -> TableModel:
    if model.index(operation.column.name) is not None:
        if operation.if_not_exists:
            return model
        raise ModelMismatch(f"table {model.name!r} already has a column {operation.column.name!r}")
    return _insert(model, replace(operation.column, was=None), operation.position, len(model.columns))


def _drop(model: TableModel, operation: DropColumn) -> TableModel:
    if operation.if_exists and model.index(operation.name) is None:
        return model
    return _without(model, _index(model, operation.name))


def _change(model: TableModel, operation: ChangeColumn) -> TableModel:
    if operation.if_exists and model.index(operation.old_name) is None:
        return model
    index = _index(model, operation.old_name)
    old = model.columns[index]
    clash = model.index(operation.column.name)
    if clash not in (None, index):
        raise ModelMismatch(f"table {model.name!r} already has a column {operation.column.name!r}")
    key = _renamed_in_key(model, old.name, operation.column.name)
    rest = replace(_without(model, index), primary_key=key)
    return _insert(rest, replace(operation.column, was=old.was), operation.position, index)


def _rename_column(model: TableModel, operation: RenameColumn) -> TableModel:
    if operation.if_exists and model.index(operation.old_name) is None:
        return model
    old = model.columns[_index(model, operation.old_name)]
    return _change(model, ChangeColumn(old.name, replace(old, name=operation.new_name)))


def _alter_default(model: TableModel, operation: AlterDefault) -> TableModel:
    if operation.if_exists and model.index(operation.name) is None:
        return model
    index = _index(model, operation.name)
    columns = list(model.columns)
    columns[index] = replace(columns[index], default=operation.default)
    return replace(model, columns=tuple(columns))


def _rename_table(model: TableModel, operation: RenameTable) -> TableModel:
    return replace(model, database=operation.new.database, name=operation.new.name)


def _set_primary_key(model: TableModel, operation: SetPrimaryKey) -> TableModel:
    names = tuple(model.columns[_index(model, name)].name for name in operation.columns)
    return _keyed(replace(model, primary_key=names))


def _drop_primary_key(model: TableModel, operation: DropPrimaryKey) -> TableModel:
    return replace(model, primary_key=())


def _convert(model: TableModel, operation: ConvertCharset) -> TableModel:
    """Every character column gets the character set and collation; so does the table."""
    columns = tuple(
        replace(c, charset=operation.charset, collation=operation.collation) if c.has_charset else c
        for c in model.columns
    )
    return replace(model, columns=columns, charset=operation.charset, collation=operation.collation)


def _table_defaults(model: TableModel, operation: TableDefaults) -> TableModel:
    if operation.charset and not operation.collation:
        return replace(model, charset=operation.charset, collation=None)
    return replace(model, charset=operation.charset or model.charset, collation=operation.collation)


def _unchanged(model: TableModel, operation: NoRowChange) -> TableModel:
    return model


_OPERATIONS: dict[type, Callable[[TableModel, Operation], TableModel]] = {
    AddColumn: _add,
    DropColumn: _drop,
    ChangeColumn: _change,
    RenameColumn: _rename_column,
    AlterDefault: _alter_default,
    RenameTable: _rename_table,
    SetPrimaryKey: _set_primary_key,
    DropPrimaryKey: _drop_primary_key,
    ConvertCharset: _convert,
    TableDefaults: _table_defaults,
    NoRowChange: _unchanged,
}
