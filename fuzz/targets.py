"""Fuzz targets: one function per binlake decoder.

Each target takes arbitrary bytes, runs one decoder over them the way the
product does, and returns ``None``. The decoder may refuse the bytes, but only
with its documented error (:data:`DOCUMENTED_ERRORS`), which the target lets
through; anything else it raises is a finding:

=================  ==========================================================  ===================
target             what it runs                                                documented error
=================  ==========================================================  ===================
``binlog_events``  framing, every event decoded, summarized and turned into    ``BinlogError``
                   fields (``binlog-codec events --json``), the transaction
                   scan that cuts Spark splits
``table_map``      a TABLE_MAP body: the event, its column metadata and        ``BinlogError``
                   optional metadata (WL#4618), the decoding plan of its
                   columns, the ``# Columns(...)`` text
``row_images``     every row change of a binlog (``read_rows``), partial JSON  ``BinlogError``
                   diffs decoded and applied as ``binlog-codec rows`` does
``binary_json``    a WL#8132 document: eager parse, MySQL's text form, the     ``JsonBinaryError``
                   lazy view's lookups and raw sub-documents
``json_diffs``     a WL#2955 diff vector: decoded, applied to the base         ``BinlogError``
                   documents, rendered as ``mysqlbinlog -v`` prints it
``backup_image``   a WL#4063 backup image: prefix, blocks, fragments, header,  ``BackupImageError``
                   catalogue, meta-data, every table data chunk, the summary
=================  ==========================================================  ===================

Binlog targets read with checksums off, so that a mutated byte reaches the
event decoders instead of failing the event's CRC32.
"""

from __future__ import annotations

import atexit
import io
import random
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from binlog_codec import events, json_binary, json_diff
from binlog_codec.backup import BackupImageError, BackupReader
from binlog_codec.corpus import order_document, settings_document
from binlog_codec.errors import BinlogError
from binlog_codec.event_types import EventType
from binlog_codec.reader import CHECKSUM_SIZE, HEADER_V4, EventHeader, RawEvent, parse_format_description
from binlog_codec.rows import TableVersion, read_rows
from binlog_codec.table_map import TableMap, column_description, decode_table_map, metadata_comment
from binlog_codec.transactions import scan_transactions
from binlog_codec.writer import format_description_body

FLAVOURS = ("mysql", "mariadb")
# The format description a TABLE_MAP body is read with: MySQL 8.0's (6-byte table ids).
TABLE_MAP_FDE = parse_format_description(format_description_body("8.0.40") + bytes(CHECKSUM_SIZE))
# The documents the json_diffs target applies diff vectors to (its seeds are diffs of them).
BASE_DOCUMENTS = (order_document(random.Random(4)), settings_document(random.Random(2)))
# Lookups the binary_json target makes in each object of a document, at most.
LOOKUPS = 16
# The memory promise: what decoding an input may allocate at its peak is at most this many bytes
# per byte of input (Python objects for decoded rows and values) plus a constant.
MEMORY_PER_INPUT_BYTE = 400
MEMORY_ALLOWANCE = 8 << 20

_scratch: Path | None = None


def _as_file(data: bytes) -> Path:
    """``data`` as the binlog file the readers open (one scratch file per process, rewritten)."""
    global _scratch
    if _scratch is None:
        _scratch = Path(tempfile.mkdtemp(prefix="binlake-fuzz-"))
        atexit.register(shutil.rmtree, _scratch, True)
    path = _scratch / "fuzzed-bin.000001"
    path.write_bytes(data)
    return path


def binlog_events(data: bytes) -> None:
    """Every event of ``data`` as a binlog file, as ``binlog-codec events --json`` reads it,
    then the transaction scan."""
    path = _as_file(data)
    for event in events.read(path, verify_checksums=False):
        event.summary()
        event.fields()
    for _ in scan_transactions(path, verify_checksums=False):
        pass


def table_map(data: bytes) -> None:
    """``data`` as the body of a TABLE_MAP event: decoded, its columns planned for decoding
    rows in each flavour, and described as ``binlog-codec metadata`` prints them."""
    size = HEADER_V4.size + len(data)
    header = EventHeader(0, EventType.TABLE_MAP, 1, size, 4 + size, 0)
    event = events.decode(RawEvent("table_map", 4, 4 + size, header, data, None, TABLE_MAP_FDE))
    table = decode_table_map(event)
    for flavour in FLAVOURS:
        TableVersion(table).plan(event, flavour, None)  # what it cannot plan is an error located at the map
        _describe(table, flavour)


def _describe(table: TableMap, flavour: str) -> None:
    """The text and data of every column. :func:`~binlog_codec.table_map.sql_type` documents a
    ValueError for a collation the flavour does not define, an ENUM/SET value invalid in its
    charset, or type metadata no server writes: the ``metadata`` command reports it."""
    try:
        metadata_comment(table, flavour)
        for column in table.columns:
            column_description(column, flavour)
    except ValueError:
        pass


def row_images(data: bytes) -> None:
    """Every row change of ``data`` as a binlog file; partial JSON columns decoded, and applied
    to the before-image's document when it holds one (as ``binlog-codec rows`` does)."""
    for record in read_rows(_as_file(data), verify_checksums=False):
        change = record.change
        for name in change.partial:
            diffs = json_diff.decode_diffs(change.after[name], column=name)
            before = (change.before or {}).get(name)
            if before is not None:
                json_diff.apply(before, diffs, column=name)


def binary_json(data: bytes) -> None:
    """``data`` as a binary JSON document: parsed, printed, and walked through its lazy view."""
    json_binary.to_text(json_binary.parse(data))
    view = json_binary.parse_binary(data)
    if view.is_object:
        for index in range(min(len(view), LOOKUPS)):
            found = view.lookup(view.key(index))
            if found is not None:
                found.raw()
    elif view.is_array:
        for index in range(min(len(view), LOOKUPS)):
            view.element(index).raw()


def json_diffs(data: bytes) -> None:
    """``data`` as a column's diff vector: decoded, applied to each base document, rendered."""
    diffs = json_diff.decode_diffs(data, column="doc")
    json_diff.render("@5", diffs)
    for document in BASE_DOCUMENTS:
        try:
            json_diff.apply(document, diffs, column="doc")
        except json_diff.JsonDiffError:
            continue  # diffs of another document: refused, the next base document may fit


def backup_image(data: bytes) -> None:
    """``data`` as a backup image: preamble, every table data chunk, the summary."""
    with BackupReader(io.BytesIO(data), "fuzzed.bak") as image:
        for _ in image.table_data():
            pass
        image.summary


TARGETS: dict[str, Callable[[bytes], None]] = {
    "binlog_events": binlog_events,
    "table_map": table_map,
    "row_images": row_images,
    "binary_json": binary_json,
    "json_diffs": json_diffs,
    "backup_image": backup_image,
}
DOCUMENTED_ERRORS: dict[str, tuple[type[BaseException], ...]] = {
    "binlog_events": (BinlogError,),
    "table_map": (BinlogError,),
    "row_images": (BinlogError,),
    "binary_json": (json_binary.JsonBinaryError,),
    "json_diffs": (BinlogError,),
    "backup_image": (BackupImageError,),
}


def run(target: str, data: bytes) -> BaseException | None:
    """Run ``target`` over ``data``: the documented error it refused the input with, or None.
    Any other exception propagates (a finding)."""
    try:
        TARGETS[target](data)
    except DOCUMENTED_ERRORS[target] as exc:
        return exc
    return None
