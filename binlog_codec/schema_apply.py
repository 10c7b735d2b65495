"""A table's model after a change: :func:`apply`.

An ALTER TABLE is applied as the server applies it (``mysql_prepare_alter_table`` in
MySQL's and MariaDB's ``sql_table.cc``), not operation by operation:

1. the columns of the table before the statement, in order: those DROPped are left out
   (DROP is matched first); one CHANGEd or MODIFYed takes its new definition there, unless
   it has a position; one neither is kept, with the RENAME COLUMN and ALTER COLUMN SET/DROP
   DEFAULT that name it as it was (so ``RENAME COLUMN a TO b, RENAME COLUMN b TO a`` swaps);
2. then, in the order written, each added column goes last or where its ``FIRST``/``AFTER``
   says (``AFTER`` names a column of the new table), and so does each CHANGE/MODIFY with a
   position. MariaDB also accepts a CHANGE/MODIFY whose old column is not in the table (or
   is dropped) when its new name is a column the statement adds: that definition replaces
   the added one; and an ALTER COLUMN ... DEFAULT of a column added or moved here.

``IF EXISTS`` looks at the table before the statement (and skips a DROP of a column dropped
already); ``ADD COLUMN IF NOT EXISTS`` also at the columns the statement defines before it.
The first CHANGE naming a column is matched to it, a later one is about an added column.
The primary key follows its columns by their old names (a column dropped and added again
under its name stays in it) and loses those dropped; DROP PRIMARY KEY is done before ADD
PRIMARY KEY, and the columns of the primary key become NOT NULL. Each column of the result records in
``was`` its name in ``model`` (None for a column added), which
:func:`binlog_codec.column_lineage.lineage` reads. The tests check these rules against a
MariaDB server with generated statements.

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
_Alters = list[AlterDefault | RenameColumn]  # RENAME COLUMN and SET/DROP DEFAULT not yet matched to a column


def _altered(model: TableModel, operations: tuple[Operation, ...]) -> TableModel:
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


def _targets(
    model: TableModel, operations: list[Operation], kind: type, added: frozenset[str] = frozenset()
) -> dict[str, Operation]:
    """The operations of ``kind`` (DROP or CHANGE/MODIFY) by the column of ``model``
    they name; one naming no column is skipped with IF EXISTS, left for later when it is a
    CHANGE about a column in ``added`` (see :func:`_change_added`), and refused otherwise;
    the first operation naming a column is the one matched to it."""
    found: dict[str, Operation] = {}
    names = {_key(column.name) for column in model.columns}
    for operation in operations:
        if not isinstance(operation, kind):
            continue
        name = operation.name if isinstance(operation, DropColumn) else operation.old_name
        if _key(name) in found and (operation.if_exists or kind is ChangeColumn):
            continue  # a DROP IF EXISTS of a column dropped already is skipped, a second CHANGE left for later
        if _key(name) in found:
            raise ModelMismatch(f"column {name!r} of table {model.name!r} is named by two operations")
        if _key(name) in names:
            found[_key(name)] = operation
        elif not (operation.if_exists or (kind is ChangeColumn and _key(operation.column.name) in added)):
            raise ModelMismatch(f"table {model.name!r} has no column {name!r}")
    return found


def _columns(model: TableModel, operations: list[Operation]) -> tuple[ColumnModel, ...]:
    """The columns after the column operations of one ALTER TABLE (see the module's docstring)."""
    added = frozenset(_key(op.column.name) for op in operations if isinstance(op, AddColumn))
    dropped = _targets(model, operations, DropColumn)
    # DROP is matched first: a CHANGE of a dropped column is about a column the statement adds
    changes = {name: op for name, op in _targets(model, operations, ChangeColumn, added).items() if name not in dropped}
    alters = [operation for operation in operations if isinstance(operation, (AlterDefault, RenameColumn))]
    placed: list[ColumnModel] = []
    for column in model.columns:
        change = changes.get(_key(column.name))
        if _key(column.name) in dropped or (change is not None and change.position is not None):
            continue
        kept = _kept(column, alters) if change is None else change.column
        placed.append(replace(kept, was=column.name))
    originals = {_key(column.name) for column in model.columns}
    known = set(originals)  # what ADD COLUMN IF NOT EXISTS looks at: the table, and the columns defined before it
    for operation in operations:
        if isinstance(operation, AddColumn):
            if not (operation.if_not_exists and _key(operation.column.name) in known):
                _place(placed, _defaulted(replace(operation.column, was=None), alters), operation.position)
            known.add(_key(operation.column.name))
        elif isinstance(operation, ChangeColumn):
            known.add(_key(operation.column.name))  # even when IF EXISTS skips it, as MariaDB checks ADD first
            if operation.if_exists and _key(operation.old_name) not in originals:
                continue
            if changes.get(_key(operation.old_name)) is not operation:
                _change_added(placed, operation, alters)
            elif operation.position:
                column = replace(operation.column, was=model.column(operation.old_name).name)
                _place(placed, _defaulted(column, alters), operation.position)
    _refuse_unused(model, alters)
    _unique(model, placed)
    return tuple(placed)


def _named(operation: AlterDefault | RenameColumn) -> str:
    return _key(operation.name if isinstance(operation, AlterDefault) else operation.old_name)


def _kept(column: ColumnModel, alters: _Alters) -> ColumnModel:
    """A column neither dropped nor changed, with the RENAME COLUMN and SET/DROP DEFAULT that name
    it as it was (so that renames can swap names), which are used up."""
    for operation in [operation for operation in alters if _named(operation) == _key(column.name)]:
        alters.remove(operation)
        if isinstance(operation, RenameColumn):
            column = replace(column, name=operation.new_name)
        else:
            column = replace(column, default=operation.default)
    return column


def _defaulted(column: ColumnModel, alters: _Alters) -> ColumnModel:
    """A column added or moved, with the first SET/DROP DEFAULT naming it, which is used up
    (MariaDB; MySQL refuses these)."""
    found = next((op for op in alters if isinstance(op, AlterDefault) and _named(op) == _key(column.name)), None)
    if found is None:
        return column
    alters.remove(found)
    return replace(column, default=found.default)


def _refuse_unused(model: TableModel, alters: _Alters) -> None:
    unused = [operation for operation in alters if not operation.if_exists]
    if unused:
        raise ModelMismatch(f"table {model.name!r} has no column {_named(unused[0])!r} for {unused[0]}")


def _change_added(columns: list[ColumnModel], operation: ChangeColumn, alters: _Alters) -> None:
    """MariaDB's CHANGE or MODIFY naming no column of the table (or one it drops) whose new name
    is a column the same statement adds: the new definition replaces the added one, last or
    where its position says (``mysql_prepare_alter_table``; MySQL refuses the statement)."""
    name = _key(operation.column.name)
    index = next((i for i, c in enumerate(columns) if c.was is None and _key(c.name) == name), None)
    if index is None:
        if operation.if_exists:
            return
        raise ModelMismatch(f"no column {operation.column.name!r} added for {operation.old_name!r} to change")
    del columns[index]
    _place(columns, _defaulted(replace(operation.column, was=None), alters), operation.position)


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
    """The primary key with its columns' new names, without the columns dropped: each key part
    is the first new column whose old name, or own name if it is added, is the part's (so a
    column dropped and added again under its name stays in the key, as on the server)."""
    sources: dict[str, str] = {}
    for column in columns:
        sources.setdefault(_key(column.name if column.was is None else column.was), column.name)
    return tuple(sources[_key(name)] for name in model.primary_key if _key(name) in sources)


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
