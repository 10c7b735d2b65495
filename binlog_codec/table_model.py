"""The model of a table a schema history keeps: its columns in order and its primary key.

A :class:`TableModel` is what the DDL a binlog carries says about a table's rows: each
column's name, type (as written, upper-cased: ``VARCHAR(100)``, ``INT UNSIGNED``,
``ENUM('a','b')``; integer types by one name, without display width), NULL or NOT NULL, DEFAULT (a typed value or "not knowable", see
:mod:`binlog_codec.column_default`), character set and collation (as written; None is the
table's default), AUTO_INCREMENT and a generated column's expression, and the columns of
the PRIMARY KEY. It is built from a CREATE TABLE statement by the column-definition grammar
of :mod:`binlog_codec.create_table` (:func:`model_of`) and printed back as one
(:func:`create_statement`). Column names compare without regard to case, as the server's do.

Secondary keys, CHECK constraints, comments and storage options are left out: they do not
change the rows a binlog logs. The primary key is the one the statement names (PRIMARY KEY,
inline or as a key): the server's promotion of a UNIQUE NOT NULL key is not modelled.

The model is what the statements say, not what the server adds on its own: a MySQL 8
functional key part (``INDEX ((expr))``) adds a hidden generated column at the end of the
table map, MariaDB a ``DB_ROW_HASH_n`` column per long UNIQUE key, and a TIMESTAMP column
without explicit_defaults_for_timestamp gets NOT NULL DEFAULT CURRENT_TIMESTAMP; none of
these is in the model (:func:`binlog_codec.create_table.table_map_of` knows the second).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .column_default import Default, default_of
from .create_table import INTEGER_TYPES, ColumnSpec, Table, split_at_commas, sql_text
from .table_map import ColumnType

# The name of each integer type, whatever its synonym (INTEGER, INT4, BOOLEAN, MIDDLEINT...).
_INTEGER_NAMES = {ColumnType.TINY: "TINYINT", ColumnType.SHORT: "SMALLINT", ColumnType.INT24: "MEDIUMINT",
                  ColumnType.LONG: "INT", ColumnType.LONGLONG: "BIGINT"}
# The types whose values have a character set (CONVERT TO CHARACTER SET changes theirs).
_CHARACTER_TYPES = frozenset("CHAR CHARACTER VARCHAR NCHAR NVARCHAR TINYTEXT TEXT MEDIUMTEXT LONGTEXT ENUM SET".split())


@dataclass(frozen=True)
class ColumnModel:
    """One column. ``was`` is the column's name in the model this one was derived from by
    :func:`binlog_codec.schema_apply.apply` (None for a column added there); it does not take
    part in comparisons."""

    name: str
    type: str
    nullable: bool = True
    default: Default | None = None  # None: the definition has no DEFAULT clause
    charset: str | None = None
    collation: str | None = None
    auto_increment: bool = False
    generated: str | None = None  # the expression of a generated column
    was: str | None = field(default=None, compare=False, repr=False)

    @property
    def has_charset(self) -> bool:
        """Whether the column's values are characters of a character set."""
        return self.type.split("(")[0].split()[0] in _CHARACTER_TYPES


@dataclass(frozen=True)
class TableModel:
    """One table: ``database`` None when the statement did not name it and no default was given."""

    database: str | None
    name: str
    columns: tuple[ColumnModel, ...]
    primary_key: tuple[str, ...] = ()
    charset: str | None = None
    collation: str | None = None

    def index(self, name: str) -> int | None:
        """The position of the column called ``name`` (any case), None when there is none."""
        wanted = name.casefold()
        return next((i for i, column in enumerate(self.columns) if column.name.casefold() == wanted), None)

    def column(self, name: str) -> ColumnModel | None:
        index = self.index(name)
        return None if index is None else self.columns[index]


def type_text(spec: ColumnSpec) -> str:
    """``VARCHAR(100)``, ``DECIMAL(10,2) UNSIGNED``, ``ENUM('a','b')``, ``CHAR(3) BINARY``: a type as
    written (with the BINARY attribute, which picks the ``_bin`` collation), canonically spaced;
    integer types by their one name and, like YEAR, without the display width that does not
    change their values (``int(11)`` is ``INT``, ``BOOLEAN`` is ``TINYINT``)."""
    name = _INTEGER_NAMES.get(INTEGER_TYPES.get(spec.type_name), spec.type_name)
    arguments = ",".join(sql_text(part) for part in split_at_commas(spec.arguments))
    widths_only = name in _INTEGER_NAMES.values() or name == "YEAR"
    text = f"{name}({arguments})" if spec.arguments and not widths_only else name
    if spec.unsigned and spec.type_name != "SERIAL":
        text += " UNSIGNED"
    return text + " BINARY" if spec.binary else text


def column_of(spec: ColumnSpec) -> ColumnModel:
    """The model of one column definition."""
    return ColumnModel(
        name=spec.name,
        type=type_text(spec),
        nullable=not (spec.not_null or spec.primary_key),
        default=None if spec.default is None else default_of(spec.default),
        charset=spec.charset,
        collation=spec.collation,
        auto_increment=spec.auto_increment,
        generated=None if spec.generated is None else sql_text(spec.generated),
        was=spec.name,
    )


def model_of(table: Table, database: str | None) -> TableModel:
    """The model of a CREATE TABLE statement read by :mod:`binlog_codec.create_table`; a name the
    statement does not qualify is in ``database``."""
    inline = tuple(spec.name for spec in table.columns if spec.primary_key)
    primary_key = tuple(name for name, _ in table.primary_key) or inline
    in_key = {name.casefold() for name in primary_key}
    columns = tuple(
        replace(column, nullable=False) if column.name.casefold() in in_key else column
        for column in map(column_of, table.columns)
    )
    return TableModel(table.database or database, table.name, columns, primary_key, table.charset, table.collation)


# -- printing -----------------------------------------------------------------------


def _identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def column_definition(column: ColumnModel) -> str:
    """The column as a column definition of CREATE TABLE or ALTER TABLE."""
    parts = [_identifier(column.name), column.type]
    if column.charset:
        parts.append(f"CHARACTER SET {_identifier(column.charset)}")
    if column.collation:
        parts.append(f"COLLATE {_identifier(column.collation)}")
    if column.generated is not None:
        parts.append(f"GENERATED ALWAYS AS ({column.generated})")
    parts.append("NULL" if column.nullable else "NOT NULL")
    if column.default is not None:
        parts.append(f"DEFAULT {column.default.text}")
    if column.auto_increment:
        parts.append("AUTO_INCREMENT")
    return " ".join(parts)


def create_statement(model: TableModel) -> str:
    """``model`` as a CREATE TABLE statement that :func:`model_of` reads back to an equal model."""
    name = _identifier(model.name)
    if model.database is not None:
        name = f"{_identifier(model.database)}.{name}"
    lines = [column_definition(column) for column in model.columns]
    if model.primary_key:
        lines.append(f"PRIMARY KEY ({', '.join(map(_identifier, model.primary_key))})")
    options = ""
    if model.charset:
        options += f" DEFAULT CHARSET={_identifier(model.charset)}"
    if model.collation:
        options += f" COLLATE={_identifier(model.collation)}"
    return f"CREATE TABLE {name} (\n  " + ",\n  ".join(lines) + "\n)" + options
