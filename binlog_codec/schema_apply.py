"""A table's model after a change: :func:`apply`.

An ALTER TABLE is applied as the server applies it (``mysql_prepare_alter_table`` in
MySQL's and MariaDB's ``sql_table.cc``), not operation by operation: the columns named by
DROP, CHANGE, MODIFY, RENAME COLUMN and ALTER COLUMN are those of the table before the
statement (so ``RENAME COLUMN a TO b, RENAME COLUMN b TO a`` swaps two columns, and
``IF [NOT] EXISTS`` looks at the table before it). The columns kept go first, in their
order, each changed where its CHANGE or MODIFY has no position; then, in the order written,
each added column goes last or where its ``FIRST``/``AFTER`` says, and so does each changed
column with a position (``AFTER`` names a column of the new table). The primary key follows
its columns' renames and loses those dropped; DROP PRIMARY KEY is done before ADD PRIMARY
KEY, and the columns of the primary key become NOT NULL. Each column of the result records
in ``was`` its name in ``model`` (None for a column added), which
:func:`binlog_codec.column_lineage.lineage` reads.

A change that does not fit the model (a column that is not there without ``IF EXISTS``,
one added twice without ``IF NOT EXISTS``, a NotUnderstood statement) raises
:class:`ModelMismatch`: the server would have refused the statement, so the model is not
the server's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable

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
        return _altered(_existing(model, change), change.operations)
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


# -- ALTER TABLE -------------------------------------------------------------------------

_COLUMN_OPERATIONS = (AddColumn, DropColumn, ChangeColumn, RenameColumn, AlterDefault)


def _altered(model: TableModel, operations: Iterable[Operation]) -> TableModel:
    operations = list(operations)
    columns = _columns(model, [op for op in operations if isinstance(op, _COLUMN_OPERATIONS)])
    result = replace(model, columns=columns, primary_key=_key_followed(model, columns))
    if any(isinstance(op, DropPrimaryKey) for op in operations):
        result = replace(result, primary_key=())
    for operation in operations:
        if not isinstance(operation, (*_COLUMN_OPERATIONS, DropPrimaryKey)):
            result = _TABLE_OPERATIONS[type(operation)](result, operation)
    return _keyed(result)


def _key(name: str) -> str:
    return name.casefold()


def _targets(model: TableModel, operations: list[Operation], kind: type) -> dict[str, Operation]:
    """The operations of ``kind`` by the column of ``model`` they name; one naming no column
    is skipped with IF EXISTS and refused without."""
    found: dict[str, Operation] = {}
    names = {_key(column.name) for column in model.columns}
    for operation in operations:
        if not isinstance(operation, kind):
            continue
        name = operation.name if isinstance(operation, (DropColumn, AlterDefault)) else operation.old_name
        if _key(name) in found:
            raise ModelMismatch(f"column {name!r} of table {model.name!r} is named by two operations")
        if _key(name) in names:
            found[_key(name)] = operation
        elif not operation.if_exists:
            raise ModelMismatch(f"table {model.name!r} has no column {name!r}")
    return found


def _as_change(model: TableModel, operation: ChangeColumn | RenameColumn) -> ChangeColumn:
    """RENAME COLUMN as the CHANGE that keeps the column's definition."""
    if isinstance(operation, ChangeColumn):
        return operation
    column = model.column(operation.old_name)
    return ChangeColumn(operation.old_name, replace(column, name=operation.new_name))


def _columns(model: TableModel, operations: list[Operation]) -> tuple[ColumnModel, ...]:
    """The columns after the column operations of one ALTER TABLE (see the module's docstring)."""
    dropped = _targets(model, operations, DropColumn)
    named = _targets(model, operations, (ChangeColumn, RenameColumn))
    changes = {name: _as_change(model, operation) for name, operation in named.items()}
    defaults = _targets(model, operations, AlterDefault)
    placed: list[ColumnModel] = []
    for column in model.columns:
        name = _key(column.name)
        change = changes.get(name)
        if name in dropped or (change is not None and change.position is not None):
            continue
        kept = column if change is None else change.column
        default = defaults.get(name)
        placed.append(replace(kept, was=column.name, default=kept.default if default is None else default.default))
    known = {_key(column.name) for column in model.columns}  # what IF NOT EXISTS looks at
    for operation in operations:
        if isinstance(operation, AddColumn) and not (operation.if_not_exists and _key(operation.column.name) in known):
            _place(placed, replace(operation.column, was=None), operation.position)
            known.add(_key(operation.column.name))
        elif isinstance(operation, ChangeColumn) and operation.position and _key(operation.old_name) in changes:
            _place(placed, replace(operation.column, was=model.column(operation.old_name).name), operation.position)
    _unique(model, placed)
    return tuple(placed)


def _place(columns: list[ColumnModel], column: ColumnModel, position: Position) -> None:
    if isinstance(position, First):
        columns.insert(0, column)
    elif isinstance(position, After):
        index = next((i for i, c in enumerate(columns) if _key(c.name) == _key(position.column)), None)
        if index is None:
            raise ModelMismatch(f"no column {position.column!r} to put {column.name!r} after")
        columns.insert(index + 1, column)
    else:
        columns.append(column)


def _unique(model: TableModel, columns: list[ColumnModel]) -> None:
    seen: set[str] = set()
    for column in columns:
        if _key(column.name) in seen:
            raise ModelMismatch(f"table {model.name!r} would have two columns {column.name!r}")
        seen.add(_key(column.name))


def _key_followed(model: TableModel, columns: tuple[ColumnModel, ...]) -> tuple[str, ...]:
    """The primary key with its columns' new names, without the columns dropped."""
    renamed = {_key(column.was): column.name for column in columns if column.was is not None}
    return tuple(renamed[_key(name)] for name in model.primary_key if _key(name) in renamed)


def _keyed(model: TableModel) -> TableModel:
    """The columns of the primary key made NOT NULL, as the server makes them."""
    key = {_key(name) for name in model.primary_key}
    columns = tuple(replace(c, nullable=False) if _key(c.name) in key else c for c in model.columns)
    return replace(model, columns=columns)


def _rename_table(model: TableModel, operation: RenameTable) -> TableModel:
    return replace(model, database=operation.new.database, name=operation.new.name)


def _set_primary_key(model: TableModel, operation: SetPrimaryKey) -> TableModel:
    columns = [model.column(name) for name in operation.columns]
    if None in columns:
        raise ModelMismatch(f"table {model.name!r} has no column for its primary key {operation.columns}")
    return replace(model, primary_key=tuple(column.name for column in columns))


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


_TABLE_OPERATIONS: dict[type, Callable[[TableModel, Operation], TableModel]] = {
    RenameTable: _rename_table,
    SetPrimaryKey: _set_primary_key,
    ConvertCharset: _convert,
    TableDefaults: _table_defaults,
    NoRowChange: _unchanged,
}
