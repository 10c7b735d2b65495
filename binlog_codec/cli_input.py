"""Where ``binlog-codec`` reads a binlog from, and where in it it may start.

A binlog given on the command line is a file, ``-`` for standard input, or
gzip or zstd bytes under any name (found by their magic, not the name). The
reader seeks and needs the file's size, so standard input is copied to a
temporary file first, and compressed bytes are decompressed, streaming, into
one; messages name what the user gave (``(stdin)`` for ``-``), never the copy.

:func:`check_event_start` tells a ``--start-position`` inside an event from
one at an event's start by walking the event headers up to it, so that such a
position is one clear error rather than the garbage of framing from the
middle of an event.
"""

from __future__ import annotations

import logging
import os
import select
import sys
import tempfile
from contextlib import contextmanager
from typing import BinaryIO, Iterator, NamedTuple

from .compression import COPY_BYTES, compression_of, decompress
from .errors import BinlogError
from .event_types import type_name
from .reader import MAGIC

log = logging.getLogger(__name__)

STDIN = "-"
STDIN_NAME = "(stdin)"
# The bytes of an event header up to and including event_size, in every binlog version.
_SIZE_END = 13
# How long a wait for standard input may leave a Ctrl-C unanswered.
_SIGNAL_CHECK_SECONDS = 0.2


class BinlogInput(NamedTuple):
    """A binlog to read: ``path`` is a file the reader can open and seek, ``name`` what messages call it."""

    path: str
    name: str


@contextmanager
def binlog_input(given: str) -> Iterator[BinlogInput]:
    """The binlog the command line names ``given``: the file itself when it is an uncompressed
    file, else a temporary copy (standard input, decompressed bytes) removed on leaving."""
    with tempfile.TemporaryDirectory(prefix="binlog-codec-") as scratch:
        path, name = given, display_name(given)
        if given == STDIN:
            path = os.path.join(scratch, "stdin")
            log.info("%s: copying standard input to a temporary file", name)
            with open(path, "wb") as target:
                copy_standard_input(target)
        kind = compression_of(path)
        if kind is not None:
            decompressed = os.path.join(scratch, "decompressed")
            decompress(path, decompressed, name=name, kind=kind)
            path = decompressed
        yield BinlogInput(path, name)


def copy_standard_input(target: BinaryIO) -> None:
    """Copy standard input to ``target``, staying interruptible by Ctrl-C.

    A blocking read entered just after SIGINT arrived (the signal caught, its
    Python handler not yet run) would wait for input that may never come;
    waiting in ``select`` with a timeout runs the pending handler within
    :data:`_SIGNAL_CHECK_SECONDS` instead."""
    fd = sys.stdin.fileno()
    while True:
        ready, _, _ = select.select([fd], [], [], _SIGNAL_CHECK_SECONDS)
        if not ready:
            continue
        chunk = os.read(fd, COPY_BYTES)
        if not chunk:
            return
        target.write(chunk)


def display_name(given: str) -> str:
    """How messages name the binlog the command line names ``given``."""
    return STDIN_NAME if given == STDIN else given


def check_event_start(source: BinlogInput, position: int) -> None:
    """Raise a :class:`BinlogError` unless an event starts at ``position``.

    Walks the event headers from the first event (after the magic), reading
    nothing but each ``event_size``. Positions up to the first event's start
    (4), past the end of the file and past corrupt framing are left to the
    reader, which starts at the first event, says the position is past the
    end, or reports the corrupt event."""
    with open(source.path, "rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        if position > size:
            return
        before, before_type, at = None, None, len(MAGIC)
        while at < position:
            head = _header_at(stream, at)
            event_size = int.from_bytes(head[9:_SIZE_END], "little") if len(head) == _SIZE_END else 0
            if event_size < _SIZE_END:
                return
            before, before_type, at = at, head[4], at + event_size
        if at == position or before is None:
            return
        after = _header_at(stream, at)
        after_text = f"{at} ({type_name(after[4])})" if len(after) > 4 else f"{at} (the end of the file)"
        raise BinlogError(
            f"start position {position} is not an event start: it is inside the event at "
            f"{before} ({type_name(before_type)}); the nearest events start at {before} and {after_text}",
            file=source.name,
            position=position,
        )


def _header_at(stream: BinaryIO, position: int) -> bytes:
    """The first bytes of the event header at ``position``, up to ``event_size``."""
    stream.seek(position)
    return stream.read(_SIZE_END)
