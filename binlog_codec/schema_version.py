"""The table version a server logs after ALTER TABLE statements, derived from the version before them.

binlake learns a table's versions from the table maps of its row changes (the rows of
``metadata/table_schemas``, :func:`binlog_codec.arrow.table_schema_row`). When a log holds an
ALTER TABLE but no row change of the table after it, :func:`version_after` derives the row of
the version the server logs next: a model of the latest known version
(:func:`model_of_version`) takes the statements (:func:`binlog_codec.ddl.parse`,
:func:`binlog_codec.schema_apply.apply`), is printed as CREATE TABLE and becomes the table map a
server with ``binlog_row_metadata=FULL`` logs for it (:func:`binlog_codec.create_table.table_map_of`).

The answer is exact or None. A row only says what the table map says, and an ALTER leaves to
the server what it does not spell out, so the answer is None when:

* the version is not one its model reproduces (the model, printed and read back, must give the
  version itself): a metadata level other than FULL, a column without a name, a primary key
  with a prefix, MySQL's invisible columns, the temporal types before MySQL 5.6; and MariaDB's
  hidden ``DB_ROW_HASH_n`` columns, whose long UNIQUE keys the row does not describe;
* a change is not an ALTER TABLE of the table (CREATE, RENAME TABLE, DROP, TRUNCATE, a statement
  not understood), or the model does not fit it;
* a column's character set or collation is not named: the table's default is not in the row,
  and the default collation of a character set is a server setting (MariaDB's
  character_set_collations, MySQL's default_collation_for_utf8mb4); so is CONVERT TO CHARACTER
  SET, which also widens TEXT types;
* a column is defined by what the model does not keep or the server decides: TIMESTAMP
  (explicit_defaults_for_timestamp decides its NULL), a generated column, visibility, an
  ENUM or SET value with trailing spaces (the server strips them), a VARCHAR past 65535 bytes
  (a TEXT outside strict mode), type names the statement's sql_mode reads as other types
  (REAL_AS_FLOAT, MariaDB's ORACLE and MAXDB);
* the primary key the table map logs may change in a way the row does not tell. A table without
  PRIMARY KEY logs its first UNIQUE key over NOT NULL columns without prefixes as one, and the
  row says neither which it is nor which other keys there are. Unless the statements set the
  PRIMARY KEY themselves, that rules out: an index dropped or altered in a table with a primary
  key; a CHANGE or MODIFY that gives a key column a nullable definition, or leaves a column NOT
  NULL or makes it so, unless it was NOT NULL and old and new type are numbers or dates (a
  shorter string drops a key's prefix); and on MySQL a DROP COLUMN (it narrows the keys over the
  column; MariaDB refuses that when the key has other columns). A primary key dropped and not
  set again is ruled out too. Always ruled out: a UNIQUE key added (also inline, or by SERIAL),
  and a CHANGE or MODIFY to a TEXT or BLOB type or a string past 767 bytes (MariaDB may make a
  UNIQUE key a hash key over a hidden column); a table engine or row format changed (their key
  limits differ); a key part that is an expression (MySQL adds a hidden column); an inline
  PRIMARY KEY and key parts with prefixes (the model keeps neither).

A change that leaves the table map as it was (ADD INDEX, SET DEFAULT) gives the version itself.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Sequence

from . import ddl, schema_apply
from .arrow import table_schema_row
from .create_table import Reader, Token, key_parts, table_map_of, tokens
from .schema_change import (
    AddColumn,
    ChangeColumn,
    ConvertCharset,
    DropColumn,
    NoRowChange,
    Operation,
    SetPrimaryKey,
    TableAltered,
    TableCreated,
    TableName,
)
from .table_map import ColumnType, TableMap
from .table_model import ColumnModel, TableModel, create_statement

ALTERED = "altered"  # the ``change`` of a metadata/schema_changes row of an ALTER TABLE

# sql_mode bits under which a type name means another type: REAL_AS_FLOAT, MariaDB's ORACLE and MAXDB.
_TYPE_MODES = 1 << 0 | 1 << 9 | 1 << 12
_HASH_COLUMN = re.compile(r"DB_ROW_HASH_\d+")
# Types a key part holds whole, in a few bytes: changing a NOT NULL column between them changes no key.
_SHORT_TYPES = frozenset(
    "TINYINT SMALLINT MEDIUMINT INT BIGINT DECIMAL NUMERIC DEC FIXED FLOAT DOUBLE BIT YEAR DATE TIME DATETIME".split()
)
_WIDE_TYPES = frozenset({ColumnType.BLOB, ColumnType.GEOMETRY, ColumnType.JSON, ColumnType.VECTOR})
_MAX_KEY_PART_BYTES = 767  # InnoDB's limit of a key part in its COMPACT and REDUNDANT row formats
_MAX_VARCHAR_BYTES = 65535
_UNMODELLED_WORDS = frozenset({"UNIQUE", "SERIAL", "VISIBLE", "INVISIBLE"})
_KEY_LIMIT_OPTIONS = frozenset({"ENGINE", "TYPE", "ROW_FORMAT"})


def version_after(version: dict, changes: Sequence[dict], table_default: tuple[str, str] | None = None,
                  primary_key_declared: bool = False) -> dict | None:
    """The table_schemas row (binlog_codec.arrow.table_schema_row's dict: schema_id, database, table, flavour,
    metadata_level, columns, primary_key) of the table version the server logs after the schema changes
    ``changes`` (metadata/schema_changes rows: keys statement, database, sql_mode, change, table) applied to
    ``version`` (a table_schemas row); None when that is not known exactly. ``table_default``: the
    table's default character set and collation when known (:func:`table_default`), which a
    column added without its own takes; ``primary_key_declared``: whether the version's primary
    key is one a statement declared (PRIMARY KEY), not a UNIQUE key the server logs as one."""
    flavour = version["flavour"]
    model = _faithful_model(version)
    if model is not None and table_default is not None:
        model = replace(model, charset=table_default[0], collation=table_default[1])
    declared = primary_key_declared  # whether a statement set the PRIMARY KEY the table map logs
    for row in changes:
        if model is None:
            return None
        model, declared = _step(model, row, flavour, declared)
    return model and _version_of(model, flavour)


def table_default(created: dict, first: dict) -> tuple[str, str] | None:
    """The default character set and collation of a table, from its CREATE TABLE statement
    (``created``, a schema_changes row) and the first version the server logged after it
    (``first``, a table_schemas row, no schema change between): those the version shows for a
    character column the statement declared without a character set or collation of its own
    (the table's, whether the statement named them or the database's default gave them). None
    when the statement declares no such column: the log does not say."""
    change = ddl.parse(created["statement"], created["database"], sql_mode=created["sql_mode"] or 0)
    if not isinstance(change, TableCreated):
        return None
    logged = {column["name"].casefold(): column for column in first["columns"] if column["name"]}
    for column in change.model.columns:
        plain = column.has_charset and column.charset is None and column.collation is None
        plain = plain and " BINARY" not in column.type.upper()  # VARCHAR(n) BINARY: the character set's _bin collation
        found = logged.get(column.name.casefold()) if plain else None
        if found is not None and found["charset"] and found["collation"]:
            return found["charset"], found["collation"]
    return None


def model_of_version(version: dict) -> TableModel:
    """The model of a table_schemas row: each column's name, SQL type, NULL or NOT NULL, character
    set and collation, and the primary key. Raises ``ValueError`` for a column whose name or
    ENUM/SET values the row's text does not keep (unnamed, or with a backslash, which stands for
    bytes that are not text too)."""
    columns = tuple(_column(column) for column in version["columns"])
    key = tuple(part["column"] for part in version["primary_key"])
    return TableModel(version["database"], version["table"], columns, key)


def _column(column: dict) -> ColumnModel:
    name = column["name"]
    if name is None or "\\" in name:
        raise ValueError(f"column {column['index']} has no name the row keeps: {name!r}")
    model = ColumnModel(name, _type(column), bool(column["nullable"]), was=name)
    return replace(model, charset=column["charset"], collation=column["collation"]) if model.has_charset else model


def _type(column: dict) -> str:
    """The column's SQL type without its CHARSET clause; ENUM and SET with their values quoted."""
    text = column["sql_type"]
    base = text.split("(")[0].split()[0].upper()
    if base not in ("ENUM", "SET"):
        return text.split(" CHARSET ")[0]
    values = column["enum_values"] if base == "ENUM" else column["set_values"]
    if values is None or any("\\" in value for value in values):
        raise ValueError(f"column {column['name']!r}: {base} values the row does not keep")
    return base + "(" + ",".join("'" + value.replace("'", "''") + "'" for value in values) + ")"


def _faithful_model(version: dict) -> TableModel | None:
    """The model of ``version`` when it gives the version back, else None."""
    try:
        model = model_of_version(version)
    except ValueError:
        return None
    if any(_HASH_COLUMN.fullmatch(column.name) for column in model.columns):
        return None
    again = _version_of(model, version["flavour"])
    return model if again is not None and again == {key: version[key] for key in again} else None


def _version_of(model: TableModel, flavour: str) -> dict | None:
    """The table_schemas row of the table map a ``flavour`` server logs for ``model``; None when
    the model does not decide it."""
    if not all(_collated(column, model) for column in model.columns):
        return None
    try:
        table = table_map_of(create_statement(model), database=model.database, flavour=flavour)
        return table_schema_row(table, flavour) if _fits(table) else None
    except ValueError:
        return None


def _collated(column: ColumnModel, model: TableModel) -> bool:
    """Whether the column's collation is named, by itself or as the table's with no character set of its own."""
    if not column.has_charset or column.collation is not None:
        return True
    return column.charset is None and model.collation is not None


def _fits(table: TableMap) -> bool:
    """No VARCHAR past 65535 bytes (outside strict mode, the server makes it a TEXT)."""
    return all(column.real_type != ColumnType.VARCHAR or column.length <= _MAX_VARCHAR_BYTES
               for column in table.columns)


# -- one statement ----------------------------------------------------------------------


def _step(model: TableModel, row: dict, flavour: str, declared: bool) -> tuple[TableModel | None, bool]:
    """The model after the statement of ``row`` (None when not known exactly), and whether the
    PRIMARY KEY is now one the statements set."""
    try:
        change = _alteration(model, row)
        if change is None:
            return None, declared
        declared = declared or any(isinstance(operation, SetPrimaryKey) for operation in change.operations)
        followed = all(_followed(operation, model, flavour, declared) for operation in change.operations)
        after = schema_apply.apply(model, change) if followed else None
    except ValueError:  # ModelMismatch, a key the grammar does not read, a definition without a table map
        return None, declared
    if after is None or (model.primary_key and not after.primary_key):
        return None, declared  # without its primary key, the table may log a UNIQUE key as one
    return replace(after, columns=tuple(replace(column, was=column.name) for column in after.columns)), declared


def _alteration(model: TableModel, row: dict) -> TableAltered | None:
    """The ALTER TABLE of the model's table that ``row`` logs, when the model can follow it."""
    sql_mode = row["sql_mode"] or 0
    if row["change"] != ALTERED or sql_mode & _TYPE_MODES:
        return None
    change = ddl.parse(row["statement"], row["database"], sql_mode=sql_mode)
    if not isinstance(change, TableAltered) or change.table != TableName(model.database, model.name):
        return None
    items = tokens(row["statement"], ansi_quotes=bool(sql_mode & ddl.ANSI_QUOTES),
                   backslash_escapes=not sql_mode & ddl.NO_BACKSLASH_ESCAPES)
    if any(item.kind == "word" and item.text.upper() in _UNMODELLED_WORDS for item in items):
        return None
    return None if _unmodelled_primary_key(items) else change


def _unmodelled_primary_key(items: list[Token]) -> bool:
    """Whether the statement has an inline PRIMARY KEY or one with a key part the model does not
    keep (a prefix, an expression)."""
    for at, item in enumerate(items[:-1]):
        dropped = at > 0 and items[at - 1].is_word("DROP")
        if dropped or not (item.is_word("PRIMARY") and items[at + 1].is_word("KEY")):
            continue
        reader = Reader(items[at + 2 :], [""], "primary key")
        if reader.take_word("USING"):
            reader.pos += 1
        following = reader.peek()
        if following is None or following.kind != "op" or following.text != "(":
            return True
        parts = key_parts(reader)
        if parts is None or any(prefix for _, prefix in parts):
            return True
    return False


def _followed(operation: Operation, model: TableModel, flavour: str, declared: bool) -> bool:
    """Whether the model follows ``operation`` to the table map the server logs."""
    if isinstance(operation, ConvertCharset):
        return False
    if isinstance(operation, AddColumn):
        return _defined(operation.column)
    if isinstance(operation, ChangeColumn):
        return _defined(operation.column) and not _wide(operation.column, model, flavour) and (
            declared or _keeps_keys(model, operation))
    if isinstance(operation, DropColumn):
        return declared or flavour == "mariadb"
    if isinstance(operation, NoRowChange):
        return _keeps_columns(operation.text, model, declared)
    return True


def _defined(column: ColumnModel) -> bool:
    """Whether a column definition decides the column's table map without the server's settings."""
    base = column.type.split("(")[0].split()[0]
    if column.generated is not None or base == "TIMESTAMP":
        return False
    values = tokens(column.type) if base in ("ENUM", "SET") else []
    return not any(value.kind == "string" and value.text.endswith(" ") for value in values)


def _wide(column: ColumnModel, model: TableModel, flavour: str) -> bool:
    """Whether a UNIQUE key over the column (of the table ``model``, whose default character set
    it may take) may be too long for the engine (MariaDB makes it a hash key)."""
    alone = create_statement(TableModel(None, "t", (column,), (), model.charset, model.collation))
    [mapped] = table_map_of(alone, database="", flavour=flavour).columns
    if mapped.real_type in _WIDE_TYPES:
        return True
    return mapped.real_type in (ColumnType.STRING, ColumnType.VARCHAR) and mapped.length > _MAX_KEY_PART_BYTES


def _keeps_keys(model: TableModel, operation: ChangeColumn) -> bool:
    """Whether a CHANGE or MODIFY leaves which UNIQUE key the server may log as the primary key: a
    nullable column outside the primary key, or a NOT NULL one that was NOT NULL, between short types."""
    old = model.column(operation.old_name)
    new = operation.column
    if old is None:
        return True  # MariaDB's CHANGE of a column the statement adds: in no key
    in_key = old.name.casefold() in {name.casefold() for name in model.primary_key}
    if new.nullable:
        return not in_key
    return not old.nullable and _short(old) and _short(new)


def _short(column: ColumnModel) -> bool:
    return column.type.split("(")[0].split()[0] in _SHORT_TYPES


def _keeps_columns(text: str, model: TableModel, declared: bool) -> bool:
    """Whether a key, constraint or option leaves the table map as it is."""
    items = tokens(text)
    words = [item.text.upper() if item.kind == "word" else None for item in items]
    if _KEY_LIMIT_OPTIONS & set(words):
        return False
    if any(a.text == "(" and b.text == "(" and a.kind == b.kind == "op" for a, b in zip(items, items[1:])):
        return False  # an expression as a key part (MySQL: a hidden generated column)
    drops_index = words[:2] in (["DROP", "INDEX"], ["DROP", "KEY"], ["DROP", "CONSTRAINT"], ["ALTER", "INDEX"],
                                ["ALTER", "KEY"])
    return not drops_index or declared or not model.primary_key
