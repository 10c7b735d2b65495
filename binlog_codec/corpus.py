"""A synthetic MySQL 8.0 binlog: JSON columns, partial JSON updates, every row image.

No MySQL 8 server runs where the codec is tested, yet only MySQL 8 writes
binary JSON columns and PARTIAL_UPDATE_ROWS_EVENT. :func:`write_corpus` writes
a binlog file a MySQL 8.0.40 server could have written with
``binlog_format=ROW``, ``binlog_row_metadata=FULL``,
``binlog_row_value_options=PARTIAL_JSON`` and the chosen ``binlog_row_image``,
built on :mod:`binlog_codec.writer`:

* two tables, each with JSON columns (one of them nullable) and a few other
  types: BIGINT, INT UNSIGNED, VARCHAR, DECIMAL, DATETIME, ENUM, TEXT;
* transactions of ``GTID | BEGIN | TABLE_MAP... | rows events | XID``, optionally
  inside a zstd TRANSACTION_PAYLOAD (``compress=True``);
* inserts with full documents; updates as PARTIAL_UPDATE_ROWS whose JSON
  columns change through diffs (REPLACE, INSERT, REMOVE; nested paths; array
  inserts), logged as diffs or in full by the "Def1 < Def2" rule of WL#2955,
  plus updates of plain columns, JSON set to and from NULL and whole-document
  rewrites; deletes;
* row images per WL#5092: FULL (every column in both images), MINIMAL (the
  primary key before, the changed columns after) or NOBLOB (every column but
  the unchanged TEXT/JSON ones).

The file is written event by event and at most ``max_rows`` rows per table
are alive at any time, so memory stays bounded however many transactions (or
however many bytes, ``target_bytes``) are asked for. The same ``seed`` gives the same bytes. The returned
:class:`CorpusSummary` holds the final row of every live row per table (what
applying the file must give) and counts of what was written.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import random
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from .event_types import EventFlag, EventType
from .json_diff import INSERT, REMOVE, REPLACE, JsonDiff, apply
from .rows import RowChange
from .table_map import Column, ColumnType, TableMap
from .writer import BinlogWriter, Gtid, JsonUpdate, choose_json_format, gtid_body, query_body
from .writer import rows_event_body_for, table_map_event_body, transaction_payload_body, xid_body

log = logging.getLogger(__name__)

IMAGES = ("full", "minimal", "noblob")
SERVER_VERSION = "8.0.40"
SERVER_ID = 1
SOURCE_UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
UTF8MB4_0900_AI_CI = 255
BINARY = 63
START_TIMESTAMP = 1_700_000_000
# Types whose unchanged values NOBLOB leaves out of the images (Field_blob and its subclass Field_json).
BLOB_TYPES = frozenset({ColumnType.BLOB, ColumnType.JSON})


def _column(index: int, name: str, type_code: int, *, nullable: bool = False, **attributes: Any) -> Column:
    return Column(index, type_code, attributes.pop("real_type", type_code), nullable, name=name, visible=True, **attributes)


def _orders() -> TableMap:
    """``shop.orders (id BIGINT PRIMARY KEY, customer VARCHAR(64), total DECIMAL(10,2),
    placed DATETIME, doc JSON, extra JSON NULL)``."""
    columns = [
        _column(0, "id", ColumnType.LONGLONG, unsigned=False),
        _column(1, "customer", ColumnType.VARCHAR, length=256, collation_id=UTF8MB4_0900_AI_CI),
        _column(2, "total", ColumnType.NEWDECIMAL, precision=10, scale=2, unsigned=False),
        _column(3, "placed", ColumnType.DATETIME2, fsp=0),
        _column(4, "doc", ColumnType.JSON, pack_length=4),
        _column(5, "extra", ColumnType.JSON, nullable=True, pack_length=4),
    ]
    return TableMap(108, "shop", "orders", columns, primary_key=[(0, 0)], metadata_level="FULL")


def _profiles() -> TableMap:
    """``shop.profiles (id INT UNSIGNED PRIMARY KEY, kind ENUM('user','admin','bot'),
    note TEXT NULL, settings JSON)``."""
    columns = [
        _column(0, "id", ColumnType.LONG, unsigned=True),
        _column(1, "kind", ColumnType.STRING, real_type=ColumnType.ENUM, length=1,
                collation_id=UTF8MB4_0900_AI_CI, enum_values=["user", "admin", "bot"]),
        _column(2, "note", ColumnType.BLOB, nullable=True, pack_length=2, collation_id=UTF8MB4_0900_AI_CI),
        _column(3, "settings", ColumnType.JSON, pack_length=4),
    ]
    return TableMap(109, "shop", "profiles", columns, primary_key=[(0, 0)], metadata_level="FULL")


# -- documents and their changes ----------------------------------------------------------

_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")


def _word(rng: random.Random) -> str:
    return rng.choice(_WORDS)


def _scalar(rng: random.Random) -> Any:
    kind = rng.randrange(6)
    if kind == 0:
        return rng.randrange(-1000, 100_000)
    if kind == 1:
        return round(rng.uniform(-100, 100), 3)
    if kind == 2:
        return rng.random() < 0.5
    if kind == 3:
        return None
    return " ".join(_word(rng) for _ in range(rng.randrange(1, 4)))


def order_document(rng: random.Random) -> dict:
    """An order: nested objects, an array of objects, scalars of every JSON kind."""
    items = [{"sku": f"{_word(rng)}-{rng.randrange(1000)}", "qty": rng.randrange(1, 9)} for _ in range(rng.randrange(1, 4))]
    doc = {
        "status": rng.choice(("new", "paid", "shipped")),
        "customer": {"name": _word(rng).title(), "tier": rng.randrange(4), "address": {"city": _word(rng)}},
        "items": items,
        "tags": [_word(rng) for _ in range(rng.randrange(4))],
        "note": _scalar(rng),
    }
    return doc


def settings_document(rng: random.Random) -> dict:
    return {
        "theme": rng.choice(("dark", "light")),
        "limits": {"daily": rng.randrange(100), "burst": rng.randrange(10)},
        "flags": [rng.random() < 0.5 for _ in range(rng.randrange(1, 4))],
    }


def _paths(node: Any, path: str = "$") -> list[tuple[str, Any]]:
    """Every (path, value) below ``node``, in document order."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            child = f"{path}.{key}"
            found.append((child, value))
            found += _paths(value, child)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            child = f"{path}[{index}]"
            found.append((child, value))
            found += _paths(value, child)
    return found


def _one_diff(rng: random.Random, document: Any) -> JsonDiff | None:
    """A REPLACE, INSERT (member or array element) or REMOVE that fits ``document``."""
    paths = _paths(document)
    operation = rng.choice((REPLACE, REPLACE, INSERT, INSERT, REMOVE))
    if operation == REPLACE and paths:
        return JsonDiff(REPLACE, rng.choice(paths)[0], _scalar(rng))
    if operation == REMOVE and paths:
        return JsonDiff(REMOVE, rng.choice(paths)[0])
    containers = [("$", document)] + [(p, v) for p, v in paths if isinstance(v, (dict, list))]
    path, target = rng.choice(containers)
    if isinstance(target, list):
        return JsonDiff(INSERT, f"{path}[{rng.randrange(len(target) + 2)}]", _scalar(rng))
    if isinstance(target, dict):
        key = f"k{rng.randrange(10_000)}"
        return None if key in target else JsonDiff(INSERT, f"{path}.{key}", _scalar(rng))
    return None


def json_changes(rng: random.Random, document: Any) -> list[JsonDiff]:
    """Diffs a chain of JSON_SET/JSON_INSERT/JSON_REMOVE could log for ``document``. One in five
    rewrites the same member again and again with long text, so that its diff vector outgrows the
    document and the server logs the document instead (WL#2955 FR12)."""
    if rng.random() < 0.2 and isinstance(document, dict) and document:
        key = next(iter(document))
        return [JsonDiff(REPLACE, f"$.{key}", " ".join(_word(rng) for _ in range(12))) for _ in range(6)]
    diffs = []
    for _ in range(rng.randrange(1, 4)):
        diff = _one_diff(rng, apply(document, diffs))
        if diff is not None:
            diffs.append(diff)
    return diffs


# -- rows ----------------------------------------------------------------------------------


def _placed(rng: random.Random) -> str:
    seconds = rng.randrange(0, 365 * 86400)
    day, rest = divmod(seconds, 86400)
    month, day = divmod(day, 28)
    return f"2024-{month % 12 + 1:02d}-{day + 1:02d} {rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}"


def new_row(rng: random.Random, table: TableMap, row_id: int) -> dict[str, Any]:
    """A row to insert, with full documents."""
    if table.table == "orders":
        return {
            "id": row_id,
            "customer": f"{_word(rng)} {_word(rng)} ✓",
            "total": Decimal(rng.randrange(0, 10**8)) / 100,
            "placed": _placed(rng),
            "doc": order_document(rng),
            "extra": None if rng.random() < 0.5 else {"gift": rng.random() < 0.5},
        }
    return {
        "id": row_id,
        "kind": rng.choice(("user", "admin", "bot")),
        "note": None if rng.random() < 0.3 else " ".join(_word(rng) for _ in range(rng.randrange(1, 20))),
        "settings": settings_document(rng),
    }


def changed_values(rng: random.Random, table: TableMap, row: dict[str, Any]) -> dict[str, Any]:
    """The new values of the columns an UPDATE changes: JSON columns mostly through diffs
    (:class:`JsonUpdate`), sometimes set to or from NULL or rewritten whole; plain columns too."""
    changes: dict[str, Any] = {}
    for column in table.columns:
        name = column.display_name
        if column.primary_key_position is not None or rng.random() < 0.5:
            continue
        if column.type_code == ColumnType.JSON:
            changes[name] = _json_change(rng, column, row[name])
        elif name in ("total", "customer", "note", "kind", "placed"):
            changes[name] = new_row(rng, table, row["id"])[name]
    if not changes:
        json_column = next(c for c in table.columns if c.type_code == ColumnType.JSON and not c.nullable)
        changes[json_column.display_name] = _json_change(rng, json_column, row[json_column.display_name])
    return changes


def _json_change(rng: random.Random, column: Column, document: Any) -> Any:
    if document is None:
        return {"since": rng.randrange(2000, 2030)}
    if column.nullable and rng.random() < 0.15:
        return None
    if rng.random() < 0.1:
        return settings_document(rng)  # a whole new document: no diffs
    diffs = json_changes(rng, document)
    return JsonUpdate(apply(document, diffs), diffs)


def document_of(value: Any) -> Any:
    """The value a column holds after the update: the document of a :class:`JsonUpdate`."""
    return value.document if isinstance(value, JsonUpdate) else value


# -- row images (WL#5092) --------------------------------------------------------------------


def image_columns(table: TableMap, kind: str, image: str, changed: set[int] = frozenset()) -> tuple[list[int], list[int]]:
    """The before- and after-image columns of a ``kind`` row change under ``binlog_row_image``."""
    everything = [column.index for column in table.columns]
    key = [index for index, _ in table.primary_key]
    unchanged_blobs = {c.index for c in table.columns if c.type_code in BLOB_TYPES and c.index not in changed}
    if image == "full" or kind == "insert":
        return everything, everything
    if image == "minimal":
        return key, sorted(changed)
    not_blob = [index for index in everything if index not in unchanged_blobs or index in key]
    return [i for i in everything if i in key or table.columns[i].type_code not in BLOB_TYPES], not_blob


def _only(values: dict[str, Any], table: TableMap, present: list[int]) -> dict[str, Any]:
    return {table.columns[i].display_name: values[table.columns[i].display_name] for i in present}


# -- transactions ------------------------------------------------------------------------------


@dataclass
class CorpusSummary:
    """What :func:`write_corpus` wrote: ``final_rows[table][id]`` is each live row after the last
    transaction (column name -> value, documents in full); ``counts`` counts transactions, rows
    by kind, JSON columns logged as diffs (``partial_json``) or in full despite diffs
    (``full_json_fallback``), and JSON diff operations by name."""

    path: str
    transactions: int
    final_rows: dict[str, dict[int, dict[str, Any]]]
    counts: Counter = field(default_factory=Counter)


class _CorpusWriter:
    """Writes the transactions of one corpus file and tracks the live rows."""

    def __init__(self, writer: BinlogWriter, rng: random.Random, image: str, compress: bool, max_rows: int) -> None:
        self.writer, self.rng, self.image, self.compress, self.max_rows = writer, rng, image, compress, max_rows
        self.tables = [_orders(), _profiles()]
        for table in self.tables:
            for position, (index, _) in enumerate(table.primary_key):
                table.columns[index].primary_key_position = position
        self.rows: dict[str, dict[int, dict[str, Any]]] = {table.table: {} for table in self.tables}
        self.next_id = 1
        self.counts: Counter = Counter()

    def transaction(self, number: int) -> None:
        """One transaction: a few statements on one or both tables, then the commit."""
        self.writer.timestamp = START_TIMESTAMP + number
        events: list[tuple[int, bytes, int]] = [(EventType.QUERY, query_body("BEGIN"), EventFlag.SUPPRESS_USE)]
        mapped = set()
        for _ in range(self.rng.randrange(1, 4)):
            table = self.rng.choice(self.tables)
            if table.table not in mapped:
                events.append((EventType.TABLE_MAP, table_map_event_body(table), 0))
                mapped.add(table.table)
            events.append(self.statement(table))
        events.append((EventType.XID, xid_body(1000 + number), 0))
        self.commit(number, events)
        self.counts["transactions"] += 1

    def statement(self, table: TableMap) -> tuple[int, bytes, int]:
        live = self.rows[table.table]
        roll = self.rng.random()
        if not live or (roll < 0.35 and len(live) < self.max_rows):
            return self.insert(table)
        if roll < 0.85 or len(live) < 2:
            return self.update(table)
        return self.delete(table)

    def insert(self, table: TableMap) -> tuple[int, bytes, int]:
        changes = []
        room = self.max_rows - len(self.rows[table.table])
        for _ in range(min(self.rng.randrange(1, 4), room)):
            row = new_row(self.rng, table, self.next_id)
            self.next_id += 1
            self.rows[table.table][row["id"]] = row
            changes.append(RowChange("insert", len(changes), after=row))
        self.counts["insert"] += len(changes)
        return self.rows_event(table, "insert", changes, *image_columns(table, "insert", self.image))

    def update(self, table: TableMap) -> tuple[int, bytes, int]:
        row_id = self.rng.choice(sorted(self.rows[table.table]))
        row = self.rows[table.table][row_id]
        changes = changed_values(self.rng, table, row)
        changed = {c.index for c in table.columns if c.display_name in changes}
        before, after = image_columns(table, "update", self.image, changed)
        new = {**row, **changes}
        self.count_json(table, changes, after)
        change = RowChange("update", 0, before=_only(row, table, before), after=_only(new, table, after))
        self.rows[table.table][row_id] = {name: document_of(value) for name, value in new.items()}
        self.counts["update"] += 1
        return self.rows_event(table, "update", [change], before, after)

    def delete(self, table: TableMap) -> tuple[int, bytes, int]:
        row_id = self.rng.choice(sorted(self.rows[table.table]))
        row = self.rows[table.table].pop(row_id)
        before, _ = image_columns(table, "delete", self.image)
        self.counts["delete"] += 1
        return self.rows_event(table, "delete", [RowChange("delete", 0, before=_only(row, table, before))], before, None)

    def count_json(self, table: TableMap, changes: dict[str, Any], after: list[int]) -> None:
        for column in table.columns:
            value = changes.get(column.display_name)
            if not isinstance(value, JsonUpdate) or column.index not in after:
                continue
            self.counts.update(diff.operation for diff in value.diffs)
            partial = choose_json_format(value, column.pack_length or 4) is not None
            self.counts["partial_json" if partial else "full_json_fallback"] += 1

    def rows_event(self, table, kind, changes, before, after) -> tuple[int, bytes, int]:
        type_code, body = rows_event_body_for(table, kind, changes, before=before, after=after, partial_json=True)
        return type_code, body, 0

    def commit(self, number: int, events: list[tuple[int, bytes, int]]) -> None:
        """The GTID, then the events as they are or inside a TRANSACTION_PAYLOAD."""
        writer = self.writer
        if self.compress:
            inner = b"".join(writer.inner_event(code, body, flags=flags) for code, body, flags in events)
            events = [(EventType.TRANSACTION_PAYLOAD, transaction_payload_body(inner), 0)]
        rest = sum(writer.event_size(body) for _, body, _ in events)
        writer.add(EventType.GTID, gtid_body(self.gtid(number, rest)))
        for code, body, flags in events:
            writer.add(code, body, flags=flags)

    def gtid(self, number: int, rest: int) -> Gtid:
        """The GTID of transaction ``number``; ``transaction_length`` counts the GTID event itself too."""
        commit_us = (START_TIMESTAMP + number) * 1_000_000 + number % 1_000_000
        gtid = Gtid(SOURCE_UUID, number + 1, 1, number, number + 1, commit_us, commit_us, 0, 80040, 80040)
        for _ in range(3):  # the length's own packed size can change the GTID event's size
            length = rest + self.writer.event_size(gtid_body(gtid))
            gtid = dataclasses.replace(gtid, transaction_length=length)
        return gtid


def write_corpus(
    path: str | os.PathLike[str],
    *,
    transactions: int | None = None,
    seed: int,
    image: str = "minimal",
    compress: bool = False,
    max_rows: int = 200,
    target_bytes: int | None = None,
    first_transaction: int = 0,
) -> CorpusSummary:
    """Write a synthetic MySQL 8.0 binlog to ``path``: ``transactions`` transactions, or as many
    as it takes for the file to reach ``target_bytes`` (whichever comes first when both are given).
    Transactions are numbered (GTID, XID, commit time) from ``first_transaction``: a file that
    goes on from another one's last transaction continues that log.

    ``image`` is ``binlog_row_image`` (full, minimal or noblob); ``compress`` wraps each
    transaction in a zstd TRANSACTION_PAYLOAD_EVENT; at most ``max_rows`` rows per table are
    alive at once. Returns the expected final rows and the counts (:class:`CorpusSummary`).
    """
    if image not in IMAGES:
        raise ValueError(f"image must be one of {', '.join(IMAGES)}, got {image!r}")
    if transactions is None and target_bytes is None:
        raise ValueError("give transactions, target_bytes or both")
    rng = random.Random(seed)
    with open(path, "wb") as stream:
        writer = BinlogWriter(SERVER_VERSION, server_id=SERVER_ID, timestamp=START_TIMESTAMP, stream=stream)
        corpus = _CorpusWriter(writer, rng, image, compress, max_rows)
        number = 0
        while _wanted(number, transactions, writer.position, target_bytes):
            corpus.transaction(first_transaction + number)
            number += 1
        size = writer.position
    log.info(
        "wrote %s: %d transactions, %d bytes, image %s%s; %s",
        os.fspath(path), number, size, image, ", compressed" if compress else "", dict(sorted(corpus.counts.items())),
    )
    return CorpusSummary(os.fspath(path), number, corpus.rows, corpus.counts)


def _wanted(number: int, transactions: int | None, size: int, target_bytes: int | None) -> bool:
    """Whether another transaction is to be written: neither the count nor the size is reached."""
    return (transactions is None or number < transactions) and (target_bytes is None or size < target_bytes)
