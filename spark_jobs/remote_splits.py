"""A split read where the driver's binlog file cannot be seen: fetched from object storage.

On a Spark cluster whose nodes share no folder, a decode task cannot open the
binlog file the driver planned from. Its :class:`~spark_jobs.splits.Split` then
carries the file's ``location`` in object storage (the object the file was
staged from, or a copy of it the run put in the warehouse's storage,
:func:`split_locations`), and the task fetches what the binlog reader needs
into node-local scratch: the file's head (the magic number and the format
description event that defines the file's format: the backup stream worklog,
"binlog file layout") and the split's bytes from where reading starts to its
end, each at its own offset in a sparse file as long as the split's end.
The driver gives each such split the CRC-32 of those bytes in its own file
(:func:`located`) and the task checks what it fetched against it: an object
rewritten since the run was planned (a binlog name reused after ``RESET
MASTER``, an archive overwritten) is refused, never decoded in its place.
:class:`~binlog_codec.reader.BinlogReader` reads the format description, then
seeks to the split: nothing else of the file is read. The scratch file is
removed when the task is done with it, and any node can fetch it again.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tempfile
import zlib
from contextlib import contextmanager
from typing import Iterator, Mapping

from binlog_codec import errors
from warehouse import storage

from .source_files import SourceFile
from .splits import Split

log = logging.getLogger(__name__)

HEAD_BYTES = 1 << 16  # holds the magic number and the format description event (a few hundred bytes)
CHUNK_BYTES = 8 << 20  # one ranged read
COPIES = "binlogs"  # the folder of a run's area that holds the copies it uploads


def ranges(split: Split) -> list[tuple[int, int]]:
    """The byte ranges ``[start, end)`` of its file a split is read from: the head, then the split."""
    head = (0, min(HEAD_BYTES, split.end))
    if split.read_from <= head[1]:
        return [(0, split.end)]
    return [head, (split.read_from, split.end)]


def _pieces(split: Split) -> Iterator[tuple[int, int]]:
    """The reads of :func:`ranges`, as (offset, size), one chunk at a time."""
    for start, end in ranges(split):
        for offset in range(start, end, CHUNK_BYTES):
            yield offset, min(CHUNK_BYTES, end - offset)


def located(split: Split, location: str) -> Split:
    """``split`` to be read from ``location``, with the CRC-32 of the bytes the task reads there
    (:func:`ranges`) as the driver's file holds them."""
    crc = 0
    with open(split.path, "rb") as source:
        for offset, size in _pieces(split):
            source.seek(offset)
            crc = zlib.crc32(source.read(size), crc)
    return dataclasses.replace(split, location=location, crc32=crc)


@contextmanager
def readable(split: Split) -> Iterator[Split]:
    """``split`` as a task can read it: as it is without a ``location``; else a copy of it whose
    ``path`` is a node-local file holding its :func:`ranges`, removed afterwards. An object
    shorter than the split raises :class:`~binlog_codec.errors.TruncatedError`, one whose bytes are
    not those the driver planned from a :class:`~binlog_codec.errors.ChecksumError`, naming the
    file."""
    if split.location is None:
        yield split
        return
    with tempfile.TemporaryDirectory(prefix="binlake-split-") as scratch:
        local = os.path.join(scratch, split.file_name)
        _fetch(split, local)
        yield dataclasses.replace(split, path=local, location=None)


def _fetch(split: Split, local: str) -> None:
    filesystem, path = storage.open_file(split.location)
    with filesystem.open_input_file(path) as source, open(local, "wb") as target:
        if source.size() < split.end:
            raise errors.TruncatedError(
                f"{split.location} holds {source.size()} bytes, but the split was planned up to byte {split.end} "
                "of the file: the object is shorter than the file the run planned from", file=split.path,
                position=source.size())
        target.truncate(split.end)
        crc = 0
        for offset, size in _pieces(split):
            piece = source.read_at(size, offset)
            crc = zlib.crc32(piece, crc)
            target.seek(offset)
            target.write(piece)
    if split.crc32 is not None and crc != split.crc32:
        raise errors.ChecksumError(
            f"{split.location}: bytes {ranges(split)} hold CRC-32 {crc:08x}, but the file the run planned from "
            f"holds {split.crc32:08x} there: the object was rewritten since; nothing of the run is published",
            file=split.path, position=split.read_from)


def split_locations(files: list[SourceFile], sizes: Mapping[str, int], source_key: str, area: str) -> dict[str, str]:
    """Per input file (its path on the driver), the object a task on any node reads it from: the
    object it was staged from when the source is an ``s3://`` prefix and the file is not an
    inflated copy of a compressed one, else a copy of its first ``sizes[path]`` bytes uploaded to
    ``<area>/binlogs/`` (:data:`COPIES`) (``area``: the run's folder in the warehouse's storage)."""
    locations = {}
    for file in files:
        if storage.is_object_store(source_key) and not file.compressed:
            locations[file.path] = f"{source_key.rstrip('/')}/{file.name}"
        else:
            locations[file.path] = f"{area}/{COPIES}/{file.name}"
            log.info("%s: %d bytes copied to %s for the cluster's tasks", file.path, sizes[file.path],
                     locations[file.path])
            _upload(file.path, sizes[file.path], locations[file.path])
    return locations


def _upload(path: str, size: int, location: str) -> None:
    with open(path, "rb") as source, storage.open_output(location) as target:
        for offset in range(0, size, CHUNK_BYTES):
            target.write(source.read(min(CHUNK_BYTES, size - offset)))
