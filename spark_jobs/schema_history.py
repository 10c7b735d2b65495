"""Schema history: the schema changes a run's binlogs log, as ``metadata/schema_changes`` rows.

A schema change is a QUERY event whose statement :func:`binlog_codec.ddl.parse_event` reads
as anything but :class:`~binlog_codec.schema_change.NotSchemaChange`, a statement it could not
read (:class:`~binlog_codec.schema_change.NotUnderstood`) included. MySQL and MariaDB log a DDL
statement as the first event of a transaction of its own, after its GTID event (MySQL 8.4
manual, "Statements That Cause an Implicit Commit"; MariaDB's "SQL statements That Cause an
Implicit Commit"): alone, or followed by the rows it writes (``CREATE TABLE ... SELECT``, which
MySQL 8.0.21+ and MariaDB log as the CREATE TABLE and then its rows). So the decoder does not
look at the row path's events at all: :func:`split_schema_changes` peeks, for each of the
split's transactions the scan already found, at the event after the GTID (small reads of one
open file), and decodes and parses only a QUERY event that neither opens an explicit
transaction (``BEGIN``) nor changes rows (``INSERT``...: statement-based logging). A split
holds whole transactions (:mod:`spark_jobs.splits`), so each DDL event is read by exactly one
split.

One row per (DDL event, table it changes) (:data:`SCHEMA_CHANGES_SCHEMA`): a ``RENAME TABLE
a TO b, c TO d`` gives a row per pair (the table renamed, ``detail`` its new name), ``DROP
TABLE a, b`` a row per table, ``DROP DATABASE`` one row without a table, a statement not
understood one row with the table when its head names one, ``detail`` the reason. ``change``
is the kind (:data:`KINDS`), ``detail`` the operations as SQL text (:func:`operation_text`).
The position columns are the row changes' (:mod:`binlog_codec.arrow`): ``_binlog_file``,
``_binlog_seq`` (the file's number), ``_binlog_pos`` (where the QUERY event starts); then
the transaction's GTID, the event's server id and timestamp (``_commit_ts``), the event's
database, statement and ``sql_mode``.

:func:`name_versions` gives each ``metadata/table_schemas`` row (a table version) the
statement of the last schema change of its table logged before the version's first row
change: ``ddl`` and ``ddl_position`` (``file:pos``); none when the log read holds none.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Iterable, Iterator, Sequence

import pyarrow as pa

from binlog_codec import ddl
from binlog_codec.arrow import binlog_seq
from binlog_codec.create_table import DefinitionError, Reader, qualified_name, tokens
from binlog_codec.event_types import GTID_TYPES, EventType
from binlog_codec.events import decode as decode_event
from binlog_codec.reader import BinlogReader
from binlog_codec.schema_change import (
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
    NotUnderstood,
    Operation,
    Position,
    RenameColumn,
    RenameTable,
    SetPrimaryKey,
    TableAltered,
    TableCreated,
    TableCreatedLike,
    TableDefaults,
    TableName,
    TablesDropped,
    TablesRenamed,
    TableTruncated,
)
from binlog_codec.table_model import column_definition
from binlog_codec.transactions import STATEMENTS, Transaction

from .splits import Split

log = logging.getLogger(__name__)

SCHEMA_CHANGES = "schema_changes"
SCHEMA_CHANGES_SCHEMA = pa.schema([
    pa.field("database", pa.string()),
    pa.field("table", pa.string()),
    pa.field("change", pa.string(), nullable=False),
    pa.field("detail", pa.string()),
    pa.field("statement", pa.string(), nullable=False),
    pa.field("sql_mode", pa.int64()),
    pa.field("_binlog_file", pa.string(), nullable=False),
    pa.field("_binlog_seq", pa.int64()),
    pa.field("_binlog_pos", pa.int64(), nullable=False),
    pa.field("_gtid", pa.string()),
    pa.field("_server_id", pa.int64()),
    pa.field("_commit_ts", pa.timestamp("us", tz="UTC")),
    # The ordinal of the warehouse run that read it (runs in publishing order).
    pa.field("_run", pa.int64()),
])
CREATED, CREATED_LIKE, ALTERED, RENAMED = "created", "created_like", "altered", "renamed"
DROPPED, TRUNCATED, DATABASE_DROPPED, NOT_UNDERSTOOD = "dropped", "truncated", "database_dropped", "not_understood"
KINDS = (CREATED, CREATED_LIKE, ALTERED, RENAMED, DROPPED, TRUNCATED, DATABASE_DROPPED, NOT_UNDERSTOOD)
# Kinds that give a table the shape its later rows have (a TRUNCATE keeps the shape).
SHAPING = frozenset(KINDS) - {TRUNCATED}
_STATEMENT_TYPES = frozenset(int(event_type) for event_type in STATEMENTS)
_ENDINGS = ("COMMIT", "ROLLBACK", "XA ")
# First words of the statements that end a transaction or change rows: never parsed.
_NOT_DDL = frozenset(b"COMMIT ROLLBACK XA BEGIN INSERT UPDATE DELETE REPLACE LOAD".split())
_HEADER_LENGTH, _QUERY_POST_HEADER = 19, 13  # binlog v4 (MySQL 5.0+, every MariaDB)
_PEEK_BYTES = 256  # a GTID event and the head of the statement after it


# -- reading the DDL events of a split ------------------------------------------------


def _peek(fd: int, position: int, size: int) -> bytes:
    return os.pread(fd, size, position)


def _opening_statement(fd: int, transaction: Transaction) -> tuple[int, int, bytes] | None:
    """The statement event that opens ``transaction``, after its GTID event: where it starts, its
    size and the bytes of its head read so far (None when another kind of event opens it), from
    the event headers' bytes (MySQL Internals, "Binlog Event Header": the type at offset 4, the
    size at 9)."""
    head = _peek(fd, transaction.start, _PEEK_BYTES)
    at = int.from_bytes(head[9:13], "little") if len(head) > 13 and head[4] in GTID_TYPES else 0
    if at + _HEADER_LENGTH > len(head):
        head = _peek(fd, transaction.start, at + _HEADER_LENGTH)
    if len(head) < at + _HEADER_LENGTH or head[at + 4] not in _STATEMENT_TYPES or transaction.start + at >= transaction.end:
        return None
    return transaction.start + at, int.from_bytes(head[at + 9:at + 13], "little"), head[at:]


def _first_word(fd: int, position: int, size: int, event: bytes) -> bytes | None:
    """The first word of the QUERY event at ``position`` (``event``: its first bytes, read
    again when too few), upper case, read from its bytes alone (MySQL Internals, "QUERY_EVENT":
    a 19-byte header, a 13-byte post-header holding the database's length at 8 and the status
    variables' at 11, the status variables, the database and a NUL, then the statement); None
    when they do not tell (another statement event, a long head): the event is then read whole."""
    if event[4] != EventType.QUERY:
        return None
    if len(event) < min(size, _PEEK_BYTES):
        event = _peek(fd, position, min(size, _PEEK_BYTES))
    body = event[_HEADER_LENGTH:size]
    if len(body) < _QUERY_POST_HEADER:
        return None
    start = _QUERY_POST_HEADER + int.from_bytes(body[11:13], "little") + body[8] + 1
    words = body[start:].split(None, 1)
    whole = len(event) >= size or (words and start + len(words[0]) < len(body))
    return words[0].upper() if words and whole else None


def _candidates(split: Split, transactions: Sequence[Transaction]) -> Iterator[tuple[Transaction, int]]:
    """The transactions of ``transactions`` that a statement opens (after the GTID event) that
    may be a schema change, with where it starts: not a ``BEGIN`` nor one that changes rows
    (:data:`_NOT_DDL`). Only the heads of the events are read (mostly one read of
    :data:`_PEEK_BYTES` per transaction), with one open file for the split."""
    fd = os.open(split.path, os.O_RDONLY)
    try:
        for transaction in transactions:
            found = _opening_statement(fd, transaction)
            if found is not None and _first_word(fd, *found) not in _NOT_DDL:
                yield transaction, found[0]
    finally:
        os.close(fd)


def _event_at(split: Split, position: int):
    """The decoded event at ``position``, read alone (from the split's format description when a
    later one frames it: :attr:`Split.read_from`)."""
    start = position if split.read_from == split.start else split.read_from
    for raw in BinlogReader(split.path, start_position=start, stop_position=position + 1, unwrap_payloads=False):
        if raw.pos == position:
            return decode_event(raw)
    return None


def statement_of(event) -> str | None:
    """The statement of a QUERY event that may change a schema: None for one that ends a
    transaction (``COMMIT``, ``ROLLBACK``, ``XA COMMIT``...), which is never parsed."""
    query = getattr(event, "query", None)
    if query is None or query.lstrip()[:9].upper().startswith(_ENDINGS):
        return None
    return query


def split_schema_changes(split: Split, transactions: Sequence[Transaction]) -> list[dict[str, Any]]:
    """The :data:`SCHEMA_CHANGES_SCHEMA` rows of the DDL events among ``transactions`` (the
    split's, in log order)."""
    rows: list[dict[str, Any]] = []
    place = {"_binlog_file": split.file_name, "_binlog_seq": binlog_seq(split.path)}
    for transaction, position in _candidates(split, transactions):
        event = _event_at(split, position)
        if event is None or statement_of(event) is None:
            continue
        change = ddl.parse_event(event)
        if isinstance(change, NotSchemaChange):
            continue
        logged = {
            "statement": event.query,
            "sql_mode": event.status_vars.get("sql_mode"),
            **place,
            "_binlog_pos": event.pos,
            "_gtid": transaction.gtid,
            "_server_id": event.header.server_id,
            "_commit_ts": event.header.timestamp * 1_000_000,
        }
        rows += [{**table, **logged} for table in change_rows(change, event.database or None, logged["sql_mode"])]
    return rows


# -- one row per table a change touches ---------------------------------------------------


def _row(table: TableName | None, change: str, detail: str | None, database: str | None = None) -> dict[str, Any]:
    return {
        "database": table.database if table is not None else database,
        "table": None if table is None else table.name,
        "change": change,
        "detail": detail,
    }


def change_rows(change: Change, database: str | None = None, sql_mode: int | None = None) -> list[dict[str, Any]]:
    """The ``database``, ``table``, ``change`` and ``detail`` of each table ``change`` touches;
    ``database`` and ``sql_mode`` are the event's (for the table a statement not understood names)."""
    if isinstance(change, TableCreated):
        return [_row(change.table, CREATED, _create_text(change))]
    if isinstance(change, TableCreatedLike):
        return [_row(change.table, CREATED_LIKE, f"LIKE {table_text(change.source)}")]
    if isinstance(change, TableAltered):
        return [_row(change.table, ALTERED, "; ".join(map(operation_text, change.operations)) or None)]
    if isinstance(change, TablesRenamed):
        return [_row(old, RENAMED, f"TO {table_text(new)}") for old, new in change.renames]
    if isinstance(change, TablesDropped):
        return [_row(table, DROPPED, None) for table in change.tables]
    if isinstance(change, DatabaseDropped):
        return [_row(None, DATABASE_DROPPED, None, change.database)]
    if isinstance(change, TableTruncated):
        return [_row(change.table, TRUNCATED, None)]
    if isinstance(change, NotUnderstood):
        return [_row(named_table(change.statement, database, sql_mode or 0), NOT_UNDERSTOOD, change.reason, database)]
    return []


_NAMED_OBJECTS = ("TABLE", "SEQUENCE")  # a MariaDB sequence is a table
_HEAD_WORDS = frozenset("CREATE ALTER DROP RENAME TRUNCATE OR REPLACE TEMPORARY ONLINE OFFLINE IGNORE TABLE "
                        "IF NOT EXISTS".split())


def named_table(statement: str, database: str | None, sql_mode: int = 0) -> TableName | None:
    """The table the head of a DDL statement names (``ALTER [ONLINE] [IGNORE] TABLE [IF EXISTS]
    [db.]name ...``, ``CREATE [OR REPLACE] [TEMPORARY] TABLE|SEQUENCE ...``), None when it names none."""
    items = tokens(statement, ansi_quotes=bool(sql_mode & ddl.ANSI_QUOTES))
    words = [item.text.upper() if item.kind == "word" else None for item in items]
    kind = next((word for word in words[:6] if word in _NAMED_OBJECTS), None)
    if kind is None:
        return None
    at = words.index(kind) + 1
    while at < len(items) and words[at] in _HEAD_WORDS:
        at += 1
    try:
        qualifier, name = qualified_name(Reader(items[at:], statement.splitlines() or [""], "statement"), "a table")
    except DefinitionError:
        return None
    return TableName(qualifier or database, name)


# -- the text of operations --------------------------------------------------------------


def _identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def table_text(table: TableName) -> str:
    """``db``.``name`` (``name`` alone when no database qualifies it)."""
    name = _identifier(table.name)
    return name if table.database is None else f"{_identifier(table.database)}.{name}"


def _position_text(position: Position) -> str:
    if isinstance(position, First):
        return " FIRST"
    if isinstance(position, After):
        return f" AFTER {_identifier(position.column)}"
    return ""


def _if(flag: bool, words: str) -> str:
    return f"{words} " if flag else ""


def _change_text(operation: ChangeColumn) -> str:
    definition = column_definition(operation.column) + _position_text(operation.position)
    if operation.old_name == operation.column.name:
        return f"MODIFY COLUMN {_if(operation.if_exists, 'IF EXISTS')}{definition}"
    return f"CHANGE COLUMN {_if(operation.if_exists, 'IF EXISTS')}{_identifier(operation.old_name)} {definition}"


def _default_text(operation: AlterDefault) -> str:
    action = "DROP DEFAULT" if operation.default is None else f"SET DEFAULT {operation.default.text}"
    return f"ALTER COLUMN {_if(operation.if_exists, 'IF EXISTS')}{_identifier(operation.name)} {action}"


def _charset_text(charset: str | None, collation: str | None) -> str:
    parts = ([f"CHARACTER SET {charset}"] if charset else []) + ([f"COLLATE {collation}"] if collation else [])
    return " ".join(parts)


def operation_text(operation: Operation) -> str:
    """One ALTER TABLE operation as SQL (names quoted, the column as
    :func:`binlog_codec.table_model.column_definition` writes it)."""
    if isinstance(operation, AddColumn):
        definition = column_definition(operation.column) + _position_text(operation.position)
        return f"ADD COLUMN {_if(operation.if_not_exists, 'IF NOT EXISTS')}{definition}"
    if isinstance(operation, DropColumn):
        return f"DROP COLUMN {_if(operation.if_exists, 'IF EXISTS')}{_identifier(operation.name)}"
    if isinstance(operation, ChangeColumn):
        return _change_text(operation)
    if isinstance(operation, RenameColumn):
        return (f"RENAME COLUMN {_if(operation.if_exists, 'IF EXISTS')}{_identifier(operation.old_name)} "
                f"TO {_identifier(operation.new_name)}")
    if isinstance(operation, AlterDefault):
        return _default_text(operation)
    if isinstance(operation, RenameTable):
        return f"RENAME TO {table_text(operation.new)}"
    if isinstance(operation, SetPrimaryKey):
        return f"ADD PRIMARY KEY ({', '.join(map(_identifier, operation.columns))})"
    if isinstance(operation, DropPrimaryKey):
        return "DROP PRIMARY KEY"
    if isinstance(operation, ConvertCharset):
        return f"CONVERT TO {_charset_text(operation.charset, operation.collation)}"
    if isinstance(operation, TableDefaults):
        return f"DEFAULT {_charset_text(operation.charset, operation.collation)}"
    if isinstance(operation, NoRowChange):
        return operation.text
    raise TypeError(f"not an ALTER TABLE operation: {operation!r}")


def _create_text(change: TableCreated) -> str:
    """The columns of CREATE TABLE, then its primary key."""
    model = change.model
    parts = [column_definition(column) for column in model.columns]
    if model.primary_key:
        parts.append(f"PRIMARY KEY ({', '.join(map(_identifier, model.primary_key))})")
    return ", ".join(parts)


# -- table versions named by their DDL -------------------------------------------------


def _order(seq: int | None, file: str | None, pos: int | None) -> tuple:
    return (seq or 0, file or "", pos or 0)


def _names_after(row: dict[str, Any]) -> list[tuple[str | None, str]]:
    """The tables a schema change row is about: its table, and the new name of one it renames."""
    names = [(row["database"], row["table"])] if row["table"] is not None else []
    return names + renamed_to(row)


def renamed_to(row: dict[str, Any]) -> list[tuple[str | None, str]]:
    """The new name a schema change row gives its table (``TO name`` of a rename, ``RENAME TO
    name`` of an ALTER, as :func:`table_text` wrote it), as (database, table); none for the rest."""
    if row["change"] in (RENAMED, ALTERED) and row["detail"]:
        return _renamed_to(row["detail"])
    return []


def _renamed_to(detail: str) -> list[tuple[str | None, str]]:
    items = tokens(detail)
    found = []
    for at, item in enumerate(items):
        if item.is_word("TO") and (at == 0 or items[at - 1].is_word("RENAME")):
            reader = Reader(items[at + 1:], [detail], "detail")
            found.append(qualified_name(reader, "a table"))
    return found


def _shaping_changes(changes: Iterable[dict[str, Any]]) -> dict[tuple[str | None, str], list[tuple[tuple, dict]]]:
    """Per table, the changes that shaped it, in log order."""
    found: dict[tuple[str | None, str], list[tuple[tuple, dict]]] = {}
    for row in changes:
        if row["change"] not in SHAPING:
            continue
        place = _order(row["_binlog_seq"], row["_binlog_file"], row["_binlog_pos"])
        for name in _names_after(row):
            found.setdefault(name, []).append((place, row))
    for entries in found.values():
        entries.sort(key=lambda entry: entry[0])
    return found


def name_versions(versions: list[dict[str, Any]], changes: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``versions`` (``metadata/table_schemas`` rows), each without a ``ddl`` given the last of
    ``changes`` (``metadata/schema_changes`` rows) that shaped its table before its first row
    change; a version that has one keeps it."""
    by_table = _shaping_changes(changes)
    for version in versions:
        if version.get("ddl") is not None:
            continue
        first = _order(version["first_seq"], version["first_file"], version["first_pos"])
        before = [row for place, row in by_table.get((version["database"], version["table"]), []) if place < first]
        if before:
            version["ddl"] = before[-1]["statement"]
            version["ddl_position"] = f"{before[-1]['_binlog_file']}:{before[-1]['_binlog_pos']}"
    return versions


# -- what a user can act on ------------------------------------------------------------------


def not_understood_notices(changes: Iterable[dict[str, Any]]) -> list[str]:
    """One notice per schema change not understood: which table binlake does not follow, and why."""
    notices = []
    for row in changes:
        if row["change"] == NOT_UNDERSTOOD:
            table = "an unknown table" if row["table"] is None else f"{row['database']}.{row['table']}"
            notices.append(f"schema change at {row['_binlog_file']}:{row['_binlog_pos']} not understood, "
                           f"{table} is not followed through it: {row['detail']}")
    return notices


def warn_not_understood(changes: Iterable[dict[str, Any]]) -> list[str]:
    """:func:`not_understood_notices`, each logged at WARNING; the notices."""
    notices = not_understood_notices(changes)
    for notice in notices:
        log.warning("%s", notice)
    return notices
