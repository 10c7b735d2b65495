"""What one statement of a QUERY event does to the tables: the outcomes of :func:`binlog_codec.ddl.parse`.

Each statement gives exactly one outcome:

* :class:`TableCreated` (CREATE TABLE with its columns), :class:`TableCreatedLike`
  (``CREATE TABLE ... LIKE other``: the model is the other table's),
  :class:`TableAltered` (ALTER TABLE, CREATE INDEX, DROP INDEX: its operations in order),
  :class:`TablesRenamed`, :class:`TablesDropped`, :class:`DatabaseDropped`,
  :class:`TableTruncated` (no change to the model, but every row of the table is gone);
* :class:`NotSchemaChange`: the statement changes no table's columns (DML, BEGIN/COMMIT,
  CREATE DATABASE, views, routines, users...);
* :class:`NotUnderstood`: the statement may change a table but is not read here, with the
  reason and the offset in the statement where reading stopped. A history that meets one
  cannot know the table's shape from the binlog alone; it must say so, never guess.

Operations of :class:`TableAltered` (MySQL's "ALTER TABLE Statement", MariaDB's "ALTER TABLE"):
:class:`AddColumn`, :class:`DropColumn`, :class:`ChangeColumn` (CHANGE and MODIFY),
:class:`RenameColumn`, :class:`AlterDefault` (SET/DROP DEFAULT), :class:`RenameTable`,
:class:`SetPrimaryKey` / :class:`DropPrimaryKey`, :class:`ConvertCharset` (CONVERT TO CHARACTER
SET), :class:`TableDefaults` (DEFAULT CHARSET / COLLATE of later columns) and
:class:`NoRowChange` (secondary keys, constraints, storage options, ALGORITHM, LOCK, FORCE).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from .column_default import Default
from .table_model import ColumnModel, TableModel


@dataclass(frozen=True)
class TableName:
    """A table: ``database`` is the statement's qualifier, else the QUERY event's database."""

    database: str | None
    name: str


# -- where a column goes ------------------------------------------------------------


@dataclass(frozen=True)
class First:
    """``FIRST``: the column becomes the table's first."""


@dataclass(frozen=True)
class After:
    """``AFTER column``."""

    column: str


Position = Union[First, After, None]  # None: last for ADD, where it was for CHANGE/MODIFY


# -- ALTER TABLE operations ---------------------------------------------------------


@dataclass(frozen=True)
class AddColumn:
    column: ColumnModel
    position: Position = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropColumn:
    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class ChangeColumn:
    """``CHANGE old new definition`` (``old`` may be ``new``) and ``MODIFY definition``."""

    old_name: str
    column: ColumnModel
    position: Position = None
    if_exists: bool = False


@dataclass(frozen=True)
class RenameColumn:
    old_name: str
    new_name: str
    if_exists: bool = False


@dataclass(frozen=True)
class AlterDefault:
    """``ALTER COLUMN c SET DEFAULT x`` (``default``) or ``DROP DEFAULT`` (None)."""

    name: str
    default: Default | None
    if_exists: bool = False


@dataclass(frozen=True)
class RenameTable:
    new: TableName


@dataclass(frozen=True)
class SetPrimaryKey:
    columns: tuple[str, ...]


@dataclass(frozen=True)
class DropPrimaryKey:
    pass


@dataclass(frozen=True)
class ConvertCharset:
    """``CONVERT TO CHARACTER SET charset [COLLATE collation]``: every character column's
    (CHAR, VARCHAR, TEXT, ENUM, SET) character set and collation change, and the table's."""

    charset: str
    collation: str | None = None


@dataclass(frozen=True)
class TableDefaults:
    """``[DEFAULT] CHARACTER SET`` / ``COLLATE`` options: the defaults of columns added later."""

    charset: str | None
    collation: str | None


@dataclass(frozen=True)
class NoRowChange:
    """A key, constraint or table option that leaves the rows as they are; ``text`` as written."""

    text: str


Operation = Union[
    AddColumn, DropColumn, ChangeColumn, RenameColumn, AlterDefault, RenameTable, SetPrimaryKey, DropPrimaryKey,
    ConvertCharset, TableDefaults, NoRowChange,
]


# -- outcomes -----------------------------------------------------------------------


@dataclass(frozen=True)
class TableCreated:
    model: TableModel
    if_not_exists: bool = False
    or_replace: bool = False

    @property
    def table(self) -> TableName:
        return TableName(self.model.database, self.model.name)


@dataclass(frozen=True)
class TableCreatedLike:
    table: TableName
    source: TableName
    if_not_exists: bool = False
    or_replace: bool = False


@dataclass(frozen=True)
class TableAltered:
    table: TableName
    operations: tuple[Operation, ...]
    if_exists: bool = False


@dataclass(frozen=True)
class TablesRenamed:
    """``RENAME TABLE a TO b, c TO d``: done in order, so ``a TO tmp, b TO a, tmp TO b`` swaps."""

    renames: tuple[tuple[TableName, TableName], ...]


@dataclass(frozen=True)
class TablesDropped:
    tables: tuple[TableName, ...]
    if_exists: bool = False


@dataclass(frozen=True)
class DatabaseDropped:
    """``DROP DATABASE``: every table of the database is gone."""

    database: str


@dataclass(frozen=True)
class TableTruncated:
    """``TRUNCATE TABLE``: the model stays, every row is removed (no row events say so)."""

    table: TableName


@dataclass(frozen=True)
class NotSchemaChange:
    """A statement that changes no table's columns; ``what`` names its kind (``BEGIN``, ``INSERT``...)."""

    what: str


@dataclass(frozen=True)
class NotUnderstood:
    """A statement not read: ``reason`` says what was not understood, ``position`` the offset
    in ``statement`` where reading stopped."""

    statement: str
    reason: str
    position: int


Change = Union[
    TableCreated, TableCreatedLike, TableAltered, TablesRenamed, TablesDropped, DatabaseDropped, TableTruncated,
    NotSchemaChange, NotUnderstood,
]
