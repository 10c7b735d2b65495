"""``binlog-codec``: read binlog files from the command line.

Subcommands:

* ``events FILE...``: one line per event (position, end position, type, size,
  summary), or JSON Lines with ``--json``; with ``-v``, the rows of rows events
  as ``mysqlbinlog -v`` prints them;
* ``verify FILE...``: magic, framing, every checksum and every event body;
  exit status 0 only when all hold;
* ``transactions FILE...``: transaction boundaries from a quick scan;
* ``metadata FILE...``: each table map's columns and primary key as WL#4618
  I3 prints them (``mariadb-binlog --print-table-metadata``), or JSON Lines
  with ``--json``;
* ``backup inspect IMAGE``: an online backup image's (WL#4063) header,
  summary, catalogue and per-table chunk, byte and row counts, or one JSON
  object with ``--json``;
* ``backup create --database DB ... OUTPUT``: a backup image of a live MariaDB
  or MySQL server's databases, from a consistent snapshot, with the binlog
  position of its validity point (:mod:`binlog_codec.backup.create`).

Errors go to stderr as one line naming the file, the position, the event type
and what was wrong; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import json
from decimal import Decimal
import logging
import os
import sys
import time
from typing import Iterable, TextIO

from . import __version__, build_description, compiled, json_binary, json_diff
from .errors import BinlogError, CorruptEventError
from .event_types import EventType
from .events import Event, RowsEvent, TableMapEvent, decode
from .reader import BinlogReader, RawEvent
from .rows import RowChange, RowRecord, RowsOfTable, TableVersion, TableVersions, decode_rows, rows_events
from .table_map import (
    Column,
    ColumnType,
    TableMap,
    column_description,
    decode_table_map,
    metadata_comment,
    printable,
)
from .transactions import scan_transactions
from .backup.report import image_report

log = logging.getLogger("binlog_codec")


class Progress:
    """Logs how far a long run has got, at most every ``interval`` seconds."""

    def __init__(self, name: str, total: int, interval: float = 5.0) -> None:
        self.name, self.total, self.interval = name, total, interval
        self.started = self.last = time.monotonic()

    def update(self, position: int, events: int) -> None:
        now = time.monotonic()
        if now - self.last < self.interval:
            return
        self.last = now
        share = 100.0 * position / self.total if self.total else 100.0
        rate = position / (now - self.started) / 1e6
        log.info("%s: %.1f%% (%d of %d bytes), %d events, %.1f MB/s", self.name, share, position, self.total, events, rate)


def _reader(path: str, args: argparse.Namespace) -> BinlogReader:
    return BinlogReader(
        path,
        verify_checksums=not args.no_verify_checksums,
        start_position=getattr(args, "start_position", None),
        stop_position=getattr(args, "stop_position", None),
    )


def _position_text(event: Event) -> str:
    if event.inner_offset is None:
        return f"{event.pos:>10}"
    return f"{event.pos}+{event.inner_offset}".rjust(10)


def _summary(event: Event, tables: dict[int, str]) -> str:
    if isinstance(event, TableMapEvent):
        tables[event.table_id] = f"`{event.database}`.`{event.table}`"
    if isinstance(event, RowsEvent) and event.table_id in tables:
        return f"{tables[event.table_id]}: {event.summary()}"
    return event.summary()


def _event_json(event: Event, summary: str) -> str:
    header = event.header
    return json.dumps(
        {
            "file": event.file,
            "pos": event.pos,
            "end_pos": event.end_pos,
            "type": event.type_name,
            "type_code": event.type_code,
            "size": event.size,
            "inner_offset": event.inner_offset,
            "timestamp": header.timestamp,
            "server_id": header.server_id,
            "log_pos": header.log_pos,
            "flags": header.flags,
            "summary": summary,
            "fields": event.fields(),
        },
        ensure_ascii=False,
    )


def _event_text(event: Event, summary: str) -> str:
    return f"{_position_text(event)} {event.end_pos:>10}  {event.type_name:<22} {event.size:>8}  {summary}"


def cmd_events(args: argparse.Namespace, out: TextIO) -> int:
    for path in args.files:
        reader = _reader(path, args)
        tables: dict[int, str] = {}
        row_images = RowImages() if args.verbose_rows else None
        if not args.json:
            out.write(f"# {path}\n#{'position':>9} {'end':>10}  {'type':<22} {'size':>8}  summary\n")
        progress = None
        for count, raw in enumerate(reader, 1):
            event = decode(raw, skip_unknown=args.skip_unknown)
            summary = _summary(event, tables)
            out.write((_event_json(event, summary) if args.json else _event_text(event, summary)) + "\n")
            if row_images is not None:
                out.write(row_images.text(event, "mariadb" if raw.fde.is_mariadb else "mysql"))
            progress = progress or Progress(path, reader.file_size)
            progress.update(raw.end_pos, count)
    return 0


def _quoted_table(database: str, table: str) -> str:
    """```db`.`table``` with backticks doubled, as mysqlbinlog quotes names."""
    return "`{}`.`{}`".format(*(part.replace("`", "``") for part in (database, table)))


class RowImages:
    """The rows of rows events as ``mysqlbinlog -v`` prints them (log_event.cc ``print_verbose``)::

        ### UPDATE `db`.`t`
        ### WHERE
        ###   @1=1
        ### SET
        ###   @2=JSON_REPLACE(@2, '$.age', 26)

    Columns are ``@N`` by position, absent columns are left out, partial JSON
    columns are printed as JSON function calls (WL#2955 section 6). Values
    are printed from their decoded form: see :func:`sql_value`. Needs the
    table maps of the file, in order, to decode the rows that follow them.
    """

    _CLAUSES = {
        "insert": ("INSERT INTO", (("SET", "after"),)),
        "delete": ("DELETE FROM", (("WHERE", "before"),)),
        "update": ("UPDATE", (("WHERE", "before"), ("SET", "after"))),
    }

    def __init__(self) -> None:
        self._versions = TableVersions()
        self._tables: dict[int, TableVersion] = {}

    def text(self, event: Event, flavour: str) -> str:
        """The lines for ``event`` (a rows event; nothing for other events), each ending in a newline."""
        if isinstance(event, TableMapEvent):
            self._tables[event.table_id] = self._versions.version(event)
            return ""
        if not isinstance(event, RowsEvent):
            return ""
        version = self._tables.get(event.table_id)
        if version is None:
            return f"### Row event for unknown table #{event.table_id}\n"
        table = version.table
        command, clauses = self._CLAUSES[event.kind]
        name = _quoted_table(table.database, table.table)
        if event.kind == "insert" and not event.rows:
            return f"### INSERT INTO {name} VALUES ()\n"
        lines = []
        for change in decode_rows(event, version.plan(event, flavour, None)):
            lines.append(f"### {command} {name}")
            for clause, image in clauses:
                lines.append(f"### {clause}")
                lines.extend(self._columns(event, table, change, image))
        return "".join(line + "\n" for line in lines)

    @staticmethod
    def _columns(event: RowsEvent, table: TableMap, change: RowChange, image: str) -> list[str]:
        values = getattr(change, image)
        partial = change.partial if image == "after" else ()
        lines = []
        for column in table.columns:
            name = column.display_name
            if name not in values:
                continue
            sql_name = f"@{column.index + 1}"
            if name in partial:
                diffs = _located(event, lambda: json_diff.decode_diffs(values[name], column=name))
                text = json_diff.render(sql_name, diffs)
            else:
                text = sql_value(values[name], column)
            lines.append(f"###   {sql_name}={text}")
        return lines


def _located(where: Event | RowRecord, work):
    """``work()``, its :class:`~binlog_codec.json_diff.JsonDiffError` placed at the rows event ``where``
    is or came from (only PARTIAL_UPDATE_ROWS events hold JSON diffs)."""
    try:
        return work()
    except json_diff.JsonDiffError as exc:
        raise exc.located(
            file=where.file, position=where.pos, event_type=EventType.PARTIAL_UPDATE_ROWS.name,
            inner_offset=where.inner_offset,
        ) from None


def sql_value(value, column: Column) -> str:
    """A decoded column value as ``mysqlbinlog -v`` prints it, as far as the decoded value tells.

    NULL; numbers as digits (FLOAT as ``%-20g``, DOUBLE as ``%.20g``, as
    mysqlbinlog formats them); BIT as ``b'0101'``; a JSON document as its
    quoted text (a string document unquoted inside); text, temporal values,
    ENUM and SET labels and bytes as quoted strings (bytes above 0x7F as
    ``\\xNN``). mysqlbinlog prints some types from their stored form instead:
    ENUM and SET as numbers, DATE as ``'YYYY:MM:DD'``, TIMESTAMP as seconds.
    """
    if value is None:
        return "NULL"
    kind = column.type_code
    if kind == ColumnType.JSON:
        text = json_binary.to_text(value)
        return json_diff.sql_string(json.loads(text) if text.startswith('"') else text)
    if kind == ColumnType.FLOAT:
        return "%-20g" % value
    if kind == ColumnType.DOUBLE:
        return "%.20g" % value
    if kind == ColumnType.BIT:
        return f"b'{value:0{column.length or 1}b}'"
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (str, bytes)):
        return json_diff.sql_string(value)
    return json_diff.sql_string(json.dumps(value))


def cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    failed = 0
    for path in args.files:
        try:
            summary = _verify_one(path, args)
        except BinlogError as exc:
            failed += 1
            print(f"binlog-codec: {exc}", file=sys.stderr)
            out.write(f"FAILED {path}\n")
            continue
        except OSError as exc:
            failed += 1
            print(f"binlog-codec: {path}: {exc.strerror or exc}", file=sys.stderr)
            out.write(f"FAILED {path}\n")
            continue
        out.write(f"OK {path}: {summary}\n")
    return 1 if failed else 0


def _verify_one(path: str, args: argparse.Namespace) -> str:
    reader = _reader(path, args)
    progress = Progress(path, 0)
    events = inner = 0
    checksums = None
    for raw in reader:
        if raw.inner_offset is None:
            events += 1
        else:
            inner += 1
        if raw.type_code == EventType.FORMAT_DESCRIPTION:
            checksums = raw.fde.checksum_name
        if not args.framing_only:
            decode(raw, skip_unknown=args.skip_unknown)
        progress.total = reader.file_size
        progress.update(raw.end_pos, events)
    text = f"{events} events"
    if inner:
        text += f" (+{inner} inside transaction payloads)"
    text += f", {reader.file_size} bytes, checksums {checksums or 'none (pre-checksum format)'}"
    if checksums == "CRC32" and not args.no_verify_checksums:
        text += " verified"
    return text


def cmd_transactions(args: argparse.Namespace, out: TextIO) -> int:
    for path in args.files:
        for trx in scan_transactions(path, verify_checksums=not args.no_verify_checksums):
            if args.json:
                out.write(json.dumps(trx.__dict__) + "\n")
            else:
                state = "" if trx.complete else "  (incomplete)"
                out.write(f"{trx.file} {trx.start:>10} {trx.end:>10} {trx.events:>6}  {trx.gtid or '-'}{state}\n")
    return 0


def _rows_default(value):
    """The ``rows`` JSON form of what ``json`` cannot encode by itself: ``{"hex": ...}`` for bytes,
    exact text for DECIMAL, JSON opaque scalars (dates, decimals, ...) as MySQL prints them
    inside a document. Called by the encoder wherever such a value is, also inside JSON documents."""
    if isinstance(value, (bytes, bytearray)):
        return {"hex": value.hex()}
    if isinstance(value, Decimal):
        return format(value, "f")  # fixed point with the column's scale, never 1E-30
    return json.loads(json_binary.to_text(value))


def _rows_encoder():
    """``chunks(obj, 0)``: the text of ``json.dumps(obj, ensure_ascii=False, default=_rows_default)``
    in pieces to join, from an encoder built once rather than once per row."""
    encoder = json.JSONEncoder(ensure_ascii=False, check_circular=False, default=_rows_default)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator: the pure-Python encoder, same text
        return encoder.iterencode
    return make(
        None, encoder.default, json.encoder.encode_basestring, None,
        encoder.key_separator, encoder.item_separator, False, False, True,
    )


# Bytes gathered before each write() call.
_WRITE_BYTES = 1 << 20


class _RowLines:
    """Where ``rows`` writes its lines: UTF-8 bytes gathered and written a megabyte at a time,
    to the binary buffer under ``out`` when it has one. With the compiled build, most rows
    events are written by :mod:`binlog_codec.row_text` (:meth:`compiled_rows`)."""

    def __init__(self, out: TextIO, encode) -> None:
        self._out = out
        self._binary = getattr(out, "buffer", None)
        self._encode = encode
        if compiled():
            from . import row_text

            self._row_text = row_text
            self._lines = row_text.Lines()
        else:
            self._row_text = None
            self._lines = _PythonLines()

    def compiled_rows(self, rows: RowsOfTable, head: str, middle: str) -> bool:
        """Add the lines of a rows event from the compiled writer; False when the Python path
        must write them (partial JSON updates, values it leaves to Python, the pure-Python build)."""
        if self._row_text is None or rows.event.type_code == EventType.PARTIAL_UPDATE_ROWS:
            return False
        plan = rows.plan
        if plan.text_plan is None:
            plan.text_plan = self._row_text.TextPlan(plan, self._encode)
        written = self._lines.rows(plan.text_plan, rows.event, head.encode(), middle.encode())
        if self._lines.size >= _WRITE_BYTES:
            self.flush()
        return written

    def add(self, line: str) -> None:
        self._lines.add(line.encode())
        if self._lines.size >= _WRITE_BYTES:
            self.flush()

    def flush(self) -> None:
        data = self._lines.take()
        if self._binary is None:
            self._out.write(data.decode("utf-8"))
        else:
            self._out.flush()
            self._binary.write(data)


class _PythonLines:
    """The pure-Python build's stand-in for ``row_text.Lines``: bytes gathered in a list."""

    def __init__(self) -> None:
        self._pending: list[bytes] = []
        self.size = 0

    def add(self, text: bytes) -> None:
        self._pending.append(text)
        self.size += len(text)

    def take(self) -> bytes:
        data = b"".join(self._pending)
        self._pending.clear()
        self.size = 0
        return data


def cmd_rows(args: argparse.Namespace, out: TextIO) -> int:
    """One JSON object per row change::

        {"file": ..., "pos": ..., "row_index": ..., "type": ..., "db": ..., "table": ...,
         "gtid": ..., "timestamp": ..., "before": {...}, "after": {...}, "partial": [...]}

    A partial JSON column (WL#2955) is the whole document when the before-image
    holds the document the diffs apply to, else ``{"json_diff": [...]}`` listed
    in ``partial`` (:func:`_partial_images`).

    The fields before ``row_index`` and between it and the images are the same
    for every row of a rows event: they are encoded once per event, and again only
    when they change. With the
    compiled build, the lines of most events are written by
    :mod:`binlog_codec.row_text`, the same text without a Python object per value.
    """
    chunks = _rows_encoder()
    join = "".join

    def encode(obj) -> str:
        return join(chunks(obj, 0))

    lines = _RowLines(out, encode)
    file = context = None
    try:
        for path in args.files:
            for rows in rows_events(
                path,
                database=args.database,
                table=args.table,
                assume_charset=args.assume_charset,
                verify_checksums=not args.no_verify_checksums,
                start_position=args.start_position,
                stop_position=args.stop_position,
            ):
                event, table = rows.event, rows.table
                if event.file != file:
                    file = event.file
                    file_head = '{"file": %s, "pos": ' % encode(file)
                head = f'{file_head}{event.pos}, "row_index": '
                fields = (event.kind, table.database, table.table, rows.gtid, event.header.timestamp)
                if fields != context:
                    context = fields
                    middle = ', "type": %s, "db": %s, "table": %s, "gtid": %s, "timestamp": %s, ' % tuple(
                        encode(field) for field in fields
                    )
                if lines.compiled_rows(rows, head, middle):
                    continue
                for line in _python_lines(rows, head, middle, encode):
                    lines.add(line)
    finally:
        lines.flush()  # the rows before an error are printed before it
    return 0


def _python_lines(rows: RowsOfTable, head: str, middle: str, encode):
    """The lines of a rows event, each value decoded to a Python object and encoded by ``json``."""
    event, table = rows.event, rows.table
    for change in decode_rows(event, rows.plan):
        if change.partial:
            record = RowRecord(
                event.file, event.pos, change.row_index, change.kind, table.database, table.table,
                rows.gtid, event.header.timestamp, change, event.inner_offset, table,
            )
            images = encode(_partial_images(record))[1:]
        else:
            images = f'"before": {encode(change.before)}, "after": {encode(change.after)}, "partial": []}}'
        yield f"{head}{change.row_index}{middle}{images}\n"


def _partial_images(record: RowRecord) -> dict:
    """The images of a row whose after-image holds JSON diffs (WL#2955).

    A column whose before-image holds the document (``binlog_row_image=FULL``)
    gets the document the diffs make of it, as a replica computes it; the
    others get ``{"json_diff": [{"op": ..., "path": ..., "value": ...}, ...]}``
    and stay listed in ``partial``.
    """
    change = record.change
    before = change.before or {}
    after = dict(change.after)
    still_partial = []
    for name in change.partial:
        diffs = _located(record, lambda: json_diff.decode_diffs(after[name], column=name))
        if before.get(name) is not None:
            after[name] = _located(record, lambda: json_diff.apply(before[name], diffs, column=name))
        else:
            after[name] = {"json_diff": [_diff_json(diff) for diff in diffs]}
            still_partial.append(name)
    return {"before": change.before, "after": after, "partial": still_partial}


def _diff_json(diff: json_diff.JsonDiff) -> dict:
    if diff.operation == json_diff.REMOVE:
        return {"op": diff.operation, "path": diff.path}
    return {"op": diff.operation, "path": diff.path, "value": diff.value}


def _column_name(column: Column) -> str | None:
    return None if column.name is None else printable(column.name)


def _metadata_json(raw: RawEvent, table: TableMap, flavour: str) -> str:
    return json.dumps(
        {
            "file": raw.file,
            "pos": raw.pos,
            "inner_offset": raw.inner_offset,
            "table_id": table.table_id,
            "database": table.database,
            "table": table.table,
            "metadata_level": table.metadata_level,
            "columns": [column_description(column, flavour) for column in table.columns],
            "primary_key": [
                {"index": index, "name": _column_name(table.columns[index]), "prefix": prefix}
                for index, prefix in table.primary_key
            ],
        },
        ensure_ascii=False,
    ) + "\n"


def _metadata_text(raw: RawEvent, table: TableMap, flavour: str) -> str:
    where = raw.pos if raw.inner_offset is None else f"{raw.pos}+{raw.inner_offset}"
    name = _quoted_table(table.database, table.table)
    return f"# at {where}: Table_map {name} mapped to number {table.table_id}\n" + metadata_comment(table, flavour)


def cmd_metadata(args: argparse.Namespace, out: TextIO) -> int:
    render = _metadata_json if args.json else _metadata_text
    for path in args.files:
        for raw in _reader(path, args):
            if raw.type_code != EventType.TABLE_MAP:
                continue
            table = decode_table_map(decode(raw))
            flavour = "mariadb" if raw.fde.is_mariadb else "mysql"
            try:
                text = render(raw, table, flavour)
            except ValueError as exc:  # unknown collation, ENUM/SET value not in its charset, impossible type
                raise raw.error(CorruptEventError, f"table map metadata: {exc}") from None
            out.write(text)
    return 0


def _backup_flags(header: dict) -> str:
    where = "summary in the preamble" if header["summary_in_preamble"] else "summary at the end"
    binlog = "binlog position" if header["has_binlog_position"] else "no binlog position"
    order = "big-endian" if header["big_endian"] else "little-endian"
    return f"flags 0x{header['flags']:04x}: {where}, {binlog}, {order} server"


def _backup_text(report: dict) -> str:
    """The text of ``backup inspect``: header, summary, catalogue, then one line per table."""
    header, summary, catalogue = report["header"], report["summary"], report["catalogue"]
    lines = [
        f"# {report['file']}",
        f"format version {report['format_version']}, block size {report['block_size']}",
        f"created {header['creation_time']} by server {header['server_version']} "
        f"({header['server_version_string']}); {_backup_flags(header)}",
    ]
    for snapshot in header["snapshots"]:
        engine = f" {snapshot['engine']} {snapshot['engine_version']}" if snapshot["engine"] is not None else ""
        lines.append(f"snapshot {snapshot['snapshot']}: {snapshot['image_type']}{engine}, "
                     f"format {snapshot['format_version']}, {snapshot['tables']} tables")
    binlog = "no binlog position"
    if summary["binlog_file"] is not None:
        binlog = (f"binlog {summary['binlog_file']}:{summary['binlog_position']} "
                  f"(group {summary['binlog_group_file']}:{summary['binlog_group_position']})")
    lines.append(f"summary: validity point {summary['vp_time']}, end {summary['end_time']}, {binlog}")
    charsets = catalogue["charsets"]
    lines.append(f"charsets: {charsets[0]} (preamble), {charsets[1]} (server default)"
                 + "".join(f", {name}" for name in charsets[2:]))
    lines.append(f"users: {', '.join(catalogue['users']) or '-'}")
    for database in catalogue["databases"]:
        items = ", ".join(f"{item['type'].lower()} {item['name']}" for item in database["items"]) or "empty"
        lines.append(f"database {database['name']}: {items}")
    lines.append(f"meta-data entries: {report['metadata_entries']}")
    lines.append(f"#{'snapshot':>8} {'table':>6} {'chunks':>8} {'bytes':>14} {'rows':>12}  name")
    for table in report["tables"]:
        rows = "-" if table["rows"] is None else table["rows"]
        state = "" if table["complete"] or not table["chunks"] else "  (no last chunk)"
        lines.append(f"{table['snapshot']:>9} {table['table_number']:>6} {table['chunks']:>8} {table['bytes']:>14} "
                     f"{rows:>12}  {_quoted_table(table['database'], table['table'])}{state}")
    return "\n".join(lines) + "\n"


def cmd_backup_inspect(args: argparse.Namespace, out: TextIO) -> int:
    report = image_report(args.image)
    out.write(json.dumps(report, ensure_ascii=False) + "\n" if args.json else _backup_text(report))
    return 0


def cmd_backup_create(args: argparse.Namespace, out: TextIO) -> int:
    from . import server_rows
    from .backup import create

    logging.getLogger(create.__name__).setLevel(logging.INFO)  # one line per table: the backup's progress
    import pymysql

    password = os.environ.get(args.password_env, "") if args.password_env else ""
    try:
        connection = server_rows.connect(args.socket, host=args.host, port=args.port, user=args.user, password=password)
        try:
            image = create.create_image(args.output, connection, args.database, chunk_size=int(args.chunk_mb * 2**20))
        finally:
            connection.close()
    except (pymysql.MySQLError, ValueError) as exc:
        print(f"binlog-codec: backup create: {exc}", file=sys.stderr)
        return 1
    summary = image.summary
    out.write(
        f"{image.path}: {len(image.tables)} tables, {sum(t.rows for t in image.tables)} rows, {image.size} bytes; "
        f"binlog position at the validity point: {summary.binlog_file}:{summary.binlog_position}\n"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="binlog-codec", description="Read MySQL and MariaDB binary log files.")
    parser.add_argument("--version", action="version", version=f"binlog-codec {__version__} ({build_description()})")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr on long files")
    commands = parser.add_subparsers(dest="command", required=True)

    def common(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("files", nargs="+", metavar="FILE", help="binlog files, read in the order given")
        sub.add_argument(
            "--no-verify-checksums", action="store_true", help="do not check CRC32 checksums (checked by default)"
        )

    events = commands.add_parser("events", help="list every event")
    common(events)
    output = events.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="JSON Lines, one object per event")
    output.add_argument(
        "-v", "--verbose-rows", action="store_true",
        help="after each rows event, its rows as mysqlbinlog -v prints them (### UPDATE ..., partial JSON as JSON_REPLACE(...))",
    )
    events.add_argument("--start-position", type=int, help="first event to show starts at or after this byte")
    events.add_argument("--stop-position", type=int, help="stop before the event that starts at or after this byte")
    events.add_argument("--skip-unknown", action="store_true", help="report unknown event types as skipped, not as errors")
    events.set_defaults(run=cmd_events)

    verify = commands.add_parser("verify", help="check magic, framing, checksums and event bodies")
    common(verify)
    verify.add_argument("--framing-only", action="store_true", help="check framing and checksums, not event bodies")
    verify.add_argument("--skip-unknown", action="store_true", help="accept unknown event types")
    verify.set_defaults(run=cmd_verify)

    rows = commands.add_parser("rows", help="every row change as JSON Lines")
    common(rows)
    rows.add_argument("--database", help="only rows of this database")
    rows.add_argument("--table", help="only rows of this table")
    rows.add_argument(
        "--assume-charset",
        metavar="CHARSET",
        help="read text columns of table maps that record no charsets (MySQL before 8.0, MariaDB before 10.5, "
        "binlog_row_metadata=NO_LOG) in this charset, e.g. utf8mb4; values not valid in it stay bytes",
    )
    rows.add_argument("--start-position", type=int, help="first rows event starts at or after this byte")
    rows.add_argument("--stop-position", type=int, help="stop before the event that starts at or after this byte")
    rows.set_defaults(run=cmd_rows)

    transactions = commands.add_parser("transactions", help="list transaction boundaries")
    common(transactions)
    transactions.add_argument("--json", action="store_true", help="JSON Lines, one object per transaction")
    transactions.set_defaults(run=cmd_transactions)

    metadata = commands.add_parser("metadata", help="columns and primary key of every table map (WL#4618)")
    common(metadata)
    metadata.add_argument("--json", action="store_true", help="JSON Lines, one object per table map")
    metadata.set_defaults(run=cmd_metadata)

    backup = commands.add_parser("backup", help="online backup images (WL#4063)")
    backup_commands = backup.add_subparsers(dest="backup_command", required=True)
    inspect = backup_commands.add_parser(
        "inspect", help="header, summary, catalogue and per-table chunk, byte and row counts of a backup image"
    )
    inspect.add_argument("image", metavar="IMAGE", help="a backup image file")
    inspect.add_argument("--json", action="store_true", help="one JSON object")
    inspect.set_defaults(run=cmd_backup_inspect)
    create = backup_commands.add_parser(
        "create", help="write a backup image of a live server's databases (consistent snapshot, binlog position)"
    )
    server = create.add_mutually_exclusive_group(required=True)
    server.add_argument("--socket", help="the server's Unix socket")
    server.add_argument("--host", help="the server's host (TCP)")
    create.add_argument("--port", type=int, default=3306, help="TCP port (default 3306)")
    create.add_argument("--user", default="root", help="user (default root): needs SELECT, SHOW VIEW and, on MySQL, RELOAD")
    create.add_argument("--password-env", metavar="VAR", help="the environment variable that holds the password")
    create.add_argument(
        "--database", action="append", required=True, metavar="DB", help="a database to back up (repeat for more)"
    )
    create.add_argument("--chunk-mb", type=float, default=1.0, help="table data chunk size target in MiB (default 1)")
    create.add_argument("output", metavar="OUTPUT", help="the image file to write")
    create.set_defaults(run=cmd_backup_create)
    return parser


def main(argv: Iterable[str] | None = None) -> int:
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    log.info("binlog-codec %s (%s)", __version__, build_description())
    out = sys.stdout
    try:
        return args.run(args, out)
    except BrokenPipeError:  # the reader of our output went away (| head): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except BinlogError as exc:
        out.flush()
        print(f"binlog-codec: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        out.flush()
        print(f"binlog-codec: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
