"""Times on the ``binlog-codec`` command line: ``--start-datetime``, ``--stop-datetime`` and the
time ``events`` shows of each event.

An event header's timestamp is whole seconds since the epoch, UTC (the
common header of binlog v4). ``events`` shows it as ISO-8601 UTC,
``2024-05-01T10:00:00Z``: text the datetime options read back as the same
instant, whatever the time zone.

A datetime option is ``YYYY-MM-DD HH:MM:SS`` (or ``YYYY-MM-DD``, midnight; a
``T`` may stand for the space), as ``mysqlbinlog --start-datetime`` takes it,
read in the local time zone (``TZ``) as ``mysqlbinlog`` and ``mariadb-binlog``
read it; with ``Z`` or an offset ``+HH:MM`` / ``-HH:MM`` at its end it is that
instant wherever it is read.

:class:`TimeWindow` is which events the two options select. ``mysqlbinlog``
(``client/mysqlbinlog.cc``, ``process_event``) does not pick events by their
own time: it starts at the first event, format descriptions aside, whose time
is at or after the start and shows every event from there on, whatever its time
(a MariaDB transaction's GTID event carries the time of its COMMIT, its rows
events the times of their statements, so times go back and forth); it stops at
the first event, of any type, whose time is at or after the stop, and reads no
further file. A file's header events (format description, GTID list, binlog
checkpoint) carry the time the file was opened.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Iterable

from .event_types import EventType
from .reader import RawEvent

_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}:\d{2})?(?:Z|[+-]\d{2}:\d{2})?")
DATETIME_FORMAT = "YYYY-MM-DD HH:MM:SS"


def parse_datetime(text: str) -> int:
    """The instant ``text`` names, in seconds since the epoch; a :class:`ValueError` naming
    the text when it is no date and time of the forms the module describes."""
    if _DATETIME.fullmatch(text) is None:
        raise ValueError(
            f"a date and time is {DATETIME_FORMAT} (local time) or {DATETIME_FORMAT}Z / +HH:MM, not {text!r}"
        )
    try:
        return int(datetime.fromisoformat(text).timestamp())  # without an offset: local time (mktime)
    except (ValueError, OverflowError, OSError) as exc:
        raise ValueError(f"{text!r} is no date and time: {exc}") from None


def event_time(timestamp: int) -> str:
    """An event header's timestamp as ISO-8601 UTC, ``YYYY-MM-DDTHH:MM:SSZ``."""
    return datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class TimeWindow:
    """The events ``--start-datetime`` and ``--stop-datetime`` select, file by file, as the byte
    range of each file to read (the rule of ``mysqlbinlog``: see the module).

    Call :meth:`span` for the files in order: the start, once found, holds for the files
    after it, and the stop ends the whole run (:attr:`stopped`)."""

    def __init__(self, start: int | None, stop: int | None) -> None:
        self.start, self.stop = start, stop
        self._started = start is None
        self.stopped = False

    def span(self, events: Iterable[RawEvent], first: int | None, last: int | None) -> tuple[int | None, int | None] | None:
        """The ``(start, stop)`` positions to read of a file whose ``events`` are those between
        ``first`` and ``last`` (positions as the reader takes them); None when none is selected."""
        if self.stopped:
            return None
        if self._started and self.stop is None:
            return first, last
        begin, selected = first, False
        for raw in events:
            if self.stop is not None and raw.header.timestamp >= self.stop:
                self.stopped = True
                return (begin, raw.pos) if selected else None
            if not self._started and raw.type_code != EventType.FORMAT_DESCRIPTION and raw.header.timestamp >= self.start:
                self._started = True
                begin = raw.pos
            selected = selected or self._started
        return (begin, last) if self._started else None
