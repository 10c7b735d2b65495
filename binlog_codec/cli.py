"""``binlog-codec``: read binlog files from the command line.

Subcommands:

* ``events FILE...``: one line per event (position, end position, time, server
  id, type, size, summary), or JSON Lines with ``--json``; with ``-v``, the
  rows of rows events as ``mysqlbinlog -v`` prints them;
* ``verify FILE...``: magic, framing, every checksum and every event body;
  exit status 0 only when all hold (3 when they hold but a file has no events
  or ends inside a transaction);
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

A FILE is a binlog file, ``-`` for standard input, or a gzip or zstd
compressed binlog (:mod:`binlog_codec.cli_input`). ``--start-position``
applies to the first FILE and ``--stop-position`` to the last, as in
``mariadb-binlog``.

``events``, ``rows`` and ``transactions`` select as ``mysqlbinlog`` does:
``--start-datetime`` / ``--stop-datetime`` (:mod:`binlog_codec.cli_time`),
``--include-gtids`` / ``--exclude-gtids`` and, but for ``transactions``,
``--database`` (:mod:`binlog_codec.cli_select`). Options that contradict
each other or the binlog are usage errors (exit status 2).

``-v`` before the subcommand (or ``--progress`` after it) logs progress to
stderr; ``-v`` after ``events`` prints rows; after another subcommand it is a
usage error naming these.

Errors go to stderr as one line naming the file, the position, the event type
and what was wrong; the exit status is then 1. See :data:`EXIT_STATUSES`.
"""

from __future__ import annotations

import argparse
import functools
import json
from decimal import Decimal
import logging
import os
import sys
import time
from contextlib import contextmanager
from typing import Iterable, Iterator, NamedTuple, TextIO

from . import __version__, build_description, compiled, json_binary, json_diff
from .cli_input import binlog_input, check_event_start, display_name
from .cli_select import EventSelection, GtidSelection, OptionMismatch, gtid_set_option
from .cli_time import DATETIME_FORMAT, TimeWindow, event_time, parse_datetime
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


# Exit statuses, as ``--help`` lists them.
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_WARNING, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_STATUSES = f"""exit status:
  {EXIT_OK}    success
  {EXIT_ERROR}    an error (one line on stderr naming the file, position, event type and what was wrong)
  {EXIT_USAGE}    a usage error: options that contradict each other (start after stop) or the binlog (a GTID set of the other flavour)
  {EXIT_WARNING}    verify: every file holds, but one has no events or ends inside a transaction
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)"""

# Seconds between two progress lines.
PROGRESS_INTERVAL = 5.0


class Progress:
    """Logs how far a long run through one file has got, at most every :data:`PROGRESS_INTERVAL`
    seconds, and a last line when it is done (shown with ``-v`` or ``--progress``)."""

    def __init__(self, name: str, total: int, unit: str = "events") -> None:
        self.name, self.total, self.unit = name, total, unit
        self.started = self.last = time.monotonic()
        self.position = self.count = 0

    def update(self, position: int, count: int) -> None:
        self.position, self.count = position, count
        now = time.monotonic()
        if now - self.last < PROGRESS_INTERVAL:
            return
        self.last = now
        share = 100.0 * position / self.total if self.total else 100.0
        log.info(
            "%s: %.1f%% (%d of %d bytes), %d %s, %.1f MB/s",
            self.name, share, position, self.total, count, self.unit, self._rate(now),
        )

    def done(self) -> None:
        """The last line: the whole run, read up to ``total``."""
        self.position = self.total
        now = time.monotonic()
        log.info(
            "%s: done, %d bytes, %d %s in %.1f s, %.1f MB/s",
            self.name, self.total, self.count, self.unit, now - self.started, self._rate(now),
        )

    def _rate(self, now: float) -> float:
        return self.position / max(now - self.started, 1e-9) / 1e6


class _Source(NamedTuple):
    """One FILE of the command line, ready to read: where it is, its name, and the positions
    that apply to it (``--start-position`` to the first FILE, ``--stop-position`` to the last)."""

    path: str
    name: str
    start: int | None
    stop: int | None

    def progress(self, unit: str = "events") -> Progress:
        """A progress log through the file, up to its stop position or its end."""
        size = os.path.getsize(self.path)
        return Progress(self.name, size if self.stop is None else min(size, self.stop), unit)


@contextmanager
def _source(args: argparse.Namespace, index: int) -> Iterator[_Source]:
    """FILE number ``index`` (:func:`~binlog_codec.cli_input.binlog_input`); its start
    position, when it has one, checked to be an event's start."""
    start = getattr(args, "start_position", None) if index == 0 else None
    stop = getattr(args, "stop_position", None) if index == len(args.files) - 1 else None
    with binlog_input(args.files[index]) as given:
        if start is not None:
            check_event_start(given, start)
        yield _Source(given.path, given.name, start, stop)


def _sources(args: argparse.Namespace) -> Iterator[_Source]:
    """Every FILE in order, each open (a temporary copy kept) while the caller reads it, with
    the positions of the position options narrowed to the ``--start-datetime`` /
    ``--stop-datetime`` window (:class:`~binlog_codec.cli_time.TimeWindow`); a file the
    window leaves out is not given, nor any after its stop."""
    window = _time_window(args)
    for index in range(len(args.files)):
        if window is not None and window.stopped:
            return
        with _source(args, index) as source:
            if window is None:
                yield source
                continue
            span = window.span(_reader(source, args, unwrap_payloads=False), source.start, source.stop)
            if span is not None:
                yield source._replace(start=span[0], stop=span[1])


def _time_window(args: argparse.Namespace) -> TimeWindow | None:
    start, stop = getattr(args, "start_datetime", None), getattr(args, "stop_datetime", None)
    return None if start is None and stop is None else TimeWindow(start, stop)


def _gtid_selection(args: argparse.Namespace) -> GtidSelection:
    return GtidSelection(getattr(args, "include_gtids", None), getattr(args, "exclude_gtids", None))


def _reader(source: _Source, args: argparse.Namespace, unwrap_payloads: bool = True) -> BinlogReader:
    """The events of ``source`` between its positions."""
    return BinlogReader(
        source.path,
        verify_checksums=not args.no_verify_checksums,
        start_position=source.start,
        stop_position=source.stop,
        unwrap_payloads=unwrap_payloads,
        name=source.name,
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
            "time": event_time(header.timestamp),
            "server_id": header.server_id,
            "log_pos": header.log_pos,
            "flags": header.flags,
            "summary": summary,
            "fields": event.fields(),
        },
        ensure_ascii=False,
    )


def _event_text(event: Event, summary: str) -> str:
    header = event.header
    return (
        f"{_position_text(event)} {event.end_pos:>10}  {event_time(header.timestamp)} {header.server_id:>10}  "
        f"{event.type_name:<22} {event.size:>8}  {summary}"
    )


_EVENTS_HEADING = f"#{'position':>9} {'end':>10}  {'time (UTC)':<20} {'server_id':>10}  {'type':<22} {'size':>8}  summary\n"


def cmd_events(args: argparse.Namespace, out: TextIO) -> int:
    gtids = _gtid_selection(args)
    for source in _sources(args):
        tables: dict[int, str] = {}
        selection = EventSelection(gtids, args.database)
        row_images = RowImages() if args.verbose_rows else None
        if not args.json:
            out.write(f"# {source.name}\n{_EVENTS_HEADING}")
        progress = source.progress()
        for count, raw in enumerate(_reader(source, args), 1):
            progress.update(raw.end_pos, count)
            event = decode(raw, skip_unknown=args.skip_unknown)
            if not selection.keeps(event):
                continue
            summary = _summary(event, tables)
            out.write((_event_json(event, summary) if args.json else _event_text(event, summary)) + "\n")
            if row_images is not None:
                out.write(row_images.text(event, "mariadb" if raw.fde.is_mariadb else "mysql"))
        progress.done()
    return EXIT_OK


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
    """``OK``, ``WARNING`` (a warning line on stderr) or ``FAILED`` (an error line) per file;
    the exit status is the worst: :data:`EXIT_ERROR`, :data:`EXIT_WARNING` or :data:`EXIT_OK`."""
    statuses = {EXIT_OK}
    for index, given in enumerate(args.files):
        try:
            with _source(args, index) as source:
                summary, warning = _verify_one(source, args)
        except BinlogError as exc:
            statuses.add(_verify_failed(display_name(given), str(exc), out))
            continue
        except OSError as exc:
            statuses.add(_verify_failed(given, f"{given}: {exc.strerror or exc}", out))
            continue
        if warning:
            print(f"binlog-codec: {source.name}: warning: {warning}", file=sys.stderr)
            out.write(f"WARNING {source.name}: {summary}\n")
            statuses.add(EXIT_WARNING)
        else:
            out.write(f"OK {source.name}: {summary}\n")
    return EXIT_ERROR if EXIT_ERROR in statuses else max(statuses)


def _verify_failed(name: str, message: str, out: TextIO) -> int:
    print(f"binlog-codec: {message}", file=sys.stderr)
    out.write(f"FAILED {name}\n")
    return EXIT_ERROR


def _verify_one(source: _Source, args: argparse.Namespace) -> tuple[str, str | None]:
    """What verify says of a file that holds: its summary and a warning or None."""
    reader = _reader(source, args)
    progress = source.progress()
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
        progress.update(raw.end_pos, events)
    progress.done()
    text = f"{events} events"
    if inner:
        text += f" (+{inner} inside transaction payloads)"
    text += f", {reader.file_size} bytes, checksums {checksums or 'none (pre-checksum format)'}"
    if checksums == "CRC32" and not args.no_verify_checksums:
        text += " verified"
    if not events:
        return text, "no events after the 4-byte magic: an empty binlog, or a copy cut short"
    return text, _unfinished_transaction(source, args)


def _unfinished_transaction(source: _Source, args: argparse.Namespace) -> str | None:
    """What to say of the file's last transaction when the file ends inside it, else None.
    Not when a ROTATE or STOP ends the file: the server closed it there, whatever came before."""
    last = None
    for last in scan_transactions(source.path, name=source.name, verify_checksums=not args.no_verify_checksums):
        pass
    if last is None or last.complete or (last.ending is not None and last.ending.type_code in _CLOSING):
        return None
    gtid = f"GTID {last.gtid}, " if last.gtid else ""
    return (
        f"the file ends inside a transaction: the one at {last.start} ({gtid}{last.events} events) "
        f"has no COMMIT, XID or statement end; a copy cut short?"
    )


# The events with which a server closes a binlog file.
_CLOSING = (EventType.ROTATE, EventType.STOP)


def cmd_transactions(args: argparse.Namespace, out: TextIO) -> int:
    gtids = _gtid_selection(args)
    for source in _sources(args):
        progress = source.progress("transactions")
        scan = scan_transactions(
            source.path, name=source.name, verify_checksums=not args.no_verify_checksums,
            start_position=source.start, stop_position=source.stop,
        )
        for count, trx in enumerate(scan, 1):
            progress.update(trx.end, count)
            if not gtids.keeps(trx.gtid, trx.file):
                continue
            if args.json:
                out.write(json.dumps(trx.__dict__) + "\n")
            else:
                state = "" if trx.complete else "  (incomplete)"
                out.write(f"{trx.file} {trx.start:>10} {trx.end:>10} {trx.events:>6}  {trx.gtid or '-'}{state}\n")
        progress.done()
    return EXIT_OK


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
    gtids = _gtid_selection(args)
    file = context = None
    try:
        for source in _sources(args):
            progress = source.progress("rows events")
            for count, rows in enumerate(_rows_events(source, args), 1):
                progress.update(rows.event.end_pos, count)
                event, table = rows.event, rows.table
                if not gtids.keeps(rows.gtid, event.file):
                    continue
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
            progress.done()
    finally:
        lines.flush()  # the rows before an error are printed before it
    return EXIT_OK


def _rows_events(source: _Source, args: argparse.Namespace) -> Iterator[RowsOfTable]:
    return rows_events(
        source.path,
        database=args.database,
        table=args.table,
        assume_charset=args.assume_charset,
        verify_checksums=not args.no_verify_checksums,
        start_position=source.start,
        stop_position=source.stop,
        name=source.name,
    )


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
    for source in _sources(args):
        progress = source.progress()
        for count, raw in enumerate(_reader(source, args), 1):
            progress.update(raw.end_pos, count)
            if raw.type_code != EventType.TABLE_MAP:
                continue
            table = decode_table_map(decode(raw))
            flavour = "mariadb" if raw.fde.is_mariadb else "mysql"
            try:
                text = render(raw, table, flavour)
            except ValueError as exc:  # unknown collation, ENUM/SET value not in its charset, impossible type
                raise raw.error(CorruptEventError, f"table map metadata: {exc}") from None
            out.write(text)
        progress.done()
    return EXIT_OK


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


class _VerboseHere(argparse.Action):
    """``-v`` after a subcommand that prints nothing more with it: a usage error of that
    subcommand naming the options that give progress (``-v`` before the subcommand, or
    ``--progress`` after it)."""

    def __init__(self, option_strings, dest, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        program, command = parser.prog.rsplit(" ", 1)
        parser.error(
            f"{option_string} after the subcommand is for events only (its rows); for progress on stderr "
            f"use '{program} -v {command} ...' or '{parser.prog} --progress ...'"
        )


def _position(text: str) -> int:
    """A byte position option's value: a whole number, not negative."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"a byte position is a whole number from 0, not {text!r}")
    return value


def _option(parse):
    """An argparse ``type`` from a parser raising :class:`ValueError`: its message, as argparse prints it."""

    def convert(text: str):
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = parse.__name__
    return convert


def _selection(sub: argparse.ArgumentParser, database: bool) -> None:
    """The options that select events by time, GTID and (with ``database``) database
    (:mod:`binlog_codec.cli_time`, :mod:`binlog_codec.cli_select`)."""
    when = f"{DATETIME_FORMAT} in the local time zone (TZ), as mariadb-binlog reads it, or with Z or +HH:MM"
    sub.add_argument(
        "--start-datetime", type=_option(parse_datetime), metavar="DATETIME",
        help=f"start at the first event (format descriptions aside) whose time is at or after DATETIME, "
        f"and show every event from there on, as mysqlbinlog; DATETIME is {when}",
    )
    sub.add_argument(
        "--stop-datetime", type=_option(parse_datetime), metavar="DATETIME",
        help="stop at the first event whose time is at or after DATETIME, in whichever FILE, as mysqlbinlog",
    )
    sub.add_argument(
        "--include-gtids", type=_option(gtid_set_option), metavar="GTIDS",
        help="only transactions in this GTID set: MySQL uuid:1-5[:tag:1-3],... or MariaDB D-S-N (seq_no 1 to N "
        "of domain D), D-S-first..last,...; whole transactions",
    )
    sub.add_argument(
        "--exclude-gtids", type=_option(gtid_set_option), metavar="GTIDS",
        help="leave out the transactions in this GTID set (as --include-gtids); mariadb-binlog --start-position=D-S-N "
        "is --exclude-gtids D-S-N",
    )
    if database:
        sub.add_argument(
            "--database", metavar="NAME",
            help="only the table maps and rows events of tables of this database (mysqlbinlog -d for row events; "
            "statements are not filtered by their current database)",
        )
    sub.set_defaults(check=functools.partial(_check_selection, sub))


def _check_selection(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A usage error for selection options that contradict each other."""
    start, stop = args.start_datetime, args.stop_datetime
    if start is not None and stop is not None and start > stop:
        parser.error(f"--start-datetime {event_time(start)} is after --stop-datetime {event_time(stop)}")
    start, stop = args.start_position, args.stop_position
    if len(args.files) == 1 and start is not None and stop is not None and start > stop:
        parser.error(f"--start-position {start} is after --stop-position {stop} in the one FILE")
    include, exclude = args.include_gtids, args.exclude_gtids
    if include is not None and exclude is not None and include.flavour != exclude.flavour:
        parser.error("--include-gtids and --exclude-gtids are GTID sets of different flavours (MySQL and MariaDB)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="binlog-codec",
        description="Read MySQL and MariaDB binary log files. FILE is a binlog, - for standard input, "
        "or a gzip or zstd compressed binlog.",
        epilog=EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"binlog-codec {__version__} ({build_description()})")
    parser.add_argument(
        "-v", "--verbose", action="store_true",
        help="log progress to stderr (before the subcommand; after 'events', -v prints rows)",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def common(sub: argparse.ArgumentParser, verbose_here: bool = False) -> None:
        sub.add_argument(
            "files", nargs="+", metavar="FILE",
            help="binlog files, read in the order given; - is standard input; gzip or zstd bytes are decompressed",
        )
        sub.add_argument(
            "--no-verify-checksums", action="store_true", help="do not check CRC32 checksums (checked by default)"
        )
        sub.add_argument("--progress", action="store_true", help="log progress to stderr (as -v before the subcommand)")
        if not verbose_here:
            sub.add_argument("-v", "--verbose", action=_VerboseHere)

    def positions(sub: argparse.ArgumentParser, first: str) -> None:
        sub.add_argument(
            "--start-position", type=_position, metavar="N",
            help=f"{first} starts at or after byte N of the first FILE; N must be an event's start",
        )
        sub.add_argument(
            "--stop-position", type=_position, metavar="N",
            help="stop before the event that starts at or after byte N of the last FILE",
        )

    events = commands.add_parser("events", help="list every event")
    common(events, verbose_here=True)
    output = events.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="JSON Lines, one object per event")
    output.add_argument(
        "-v", "--verbose-rows", action="store_true",
        help="after each rows event, its rows as mysqlbinlog -v prints them (### UPDATE ..., partial JSON as JSON_REPLACE(...))",
    )
    positions(events, "the first event shown")
    _selection(events, database=True)
    events.add_argument("--skip-unknown", action="store_true", help="report unknown event types as skipped, not as errors")
    events.set_defaults(run=cmd_events)

    verify = commands.add_parser(
        "verify", help="check magic, framing, checksums and event bodies",
        description="Check magic, framing, checksums and event bodies. Exit status 0 when every file holds, "
        "1 when one does not, 3 when every file holds but one has no events or ends inside a transaction.",
    )
    common(verify)
    verify.add_argument("--framing-only", action="store_true", help="check framing and checksums, not event bodies")
    verify.add_argument("--skip-unknown", action="store_true", help="accept unknown event types")
    verify.set_defaults(run=cmd_verify)

    rows = commands.add_parser("rows", help="every row change as JSON Lines")
    common(rows)
    rows.add_argument("--table", help="only rows of this table")
    rows.add_argument(
        "--assume-charset",
        metavar="CHARSET",
        help="read text columns of table maps that record no charsets (MySQL before 8.0, MariaDB before 10.5, "
        "binlog_row_metadata=NO_LOG) in this charset, e.g. utf8mb4; values not valid in it stay bytes",
    )
    positions(rows, "the first rows event")
    _selection(rows, database=True)
    rows.set_defaults(run=cmd_rows)

    transactions = commands.add_parser("transactions", help="list transaction boundaries")
    common(transactions)
    transactions.add_argument("--json", action="store_true", help="JSON Lines, one object per transaction")
    positions(transactions, "the first transaction shown")
    _selection(transactions, database=False)
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
    try:
        args = build_parser().parse_args(list(argv) if argv is not None else None)
        if hasattr(args, "check"):
            args.check(args)
        with _logging(args.verbose or getattr(args, "progress", False)):
            return _run(args)
    except KeyboardInterrupt:
        print("binlog-codec: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _run(args: argparse.Namespace) -> int:
    log.info("binlog-codec %s (%s)", __version__, build_description())
    out = sys.stdout
    try:
        return args.run(args, out)
    except BrokenPipeError:  # the reader of our output went away (| head): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except BinlogError as exc:
        out.flush()
        print(f"binlog-codec: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OptionMismatch as exc:
        out.flush()
        print(f"binlog-codec: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        out.flush()
        print(f"binlog-codec: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR


@contextmanager
def _logging(verbose: bool) -> Iterator[None]:
    """``binlog_codec``'s log lines on stderr while the command runs: warnings, and with
    ``verbose`` progress too. The handler is the command's own, removed after it."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    level, propagate = log.level, log.propagate
    log.addHandler(handler)
    log.setLevel(logging.INFO if verbose else logging.WARNING)
    log.propagate = False
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
        log.propagate = propagate


if __name__ == "__main__":
    sys.exit(main())
