"""The binlog files of a source folder: what is a binlog, what only looks like one, what is compressed.

A source folder (a staging folder the DAG filled from object storage, or any
folder given to ``python -m spark_jobs.ingest``) holds what an archiver put
there: binlog files named ``<base>.<digits>``, often an index file, sometimes
compressed copies and stray files. :func:`list_source` sorts them out:

* a file named ``<base>.<digits>`` that starts with the binlog magic is a
  binlog file;
* ``<base>.<digits>.gz`` / ``.zst`` (gzip, Zstandard: what archivers write) is
  read as the binlog file it holds: it is decompressed, streaming, into the
  ``inflated`` folder (once: a copy whose source's size and modification time
  are unchanged is reused) and listed under the binlog name. A compressed copy
  next to the plain file of the same name is not needed and is left aside;
* a file that *looks* like a binlog but is not one is **reported**: a binlog
  name whose bytes do not start with the magic (a ``.gz`` renamed, a file cut
  short, another format), and a file with the magic under another name
  (``mariadb-bin.000004.bak``). Reported files are never read; when one stands
  where the log needs a file, the gap check (:mod:`spark_jobs.positions`)
  stops the run and names it.

Anything else (``mariadb-bin.index``, ``_staged.json``, hidden files) is not a
binlog and is passed over silently.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from binlog_codec.compression import GZIP_MAGIC, ZSTD_MAGIC, compression_of, decompress
from binlog_codec.reader import MAGIC
from spark_jobs.positions import binlog_name_of

log = logging.getLogger(__name__)

_INFLATED_RECORD = "_inflated.json"


@dataclass(frozen=True)
class SourceFile:
    """One binlog file of a source: its binlog ``name``, the ``path`` to read (the decompressed
    copy for a compressed one) and, for those, the ``compressed`` object it came from."""

    name: str
    path: str
    compressed: str | None = None


@dataclass
class SourceListing:
    """The binlog files of a folder (any order) and the files that look like binlogs but are not
    (``reported``: one line each, saying why)."""

    files: list[SourceFile] = field(default_factory=list)
    reported: list[str] = field(default_factory=list)


def list_source(folder: str | os.PathLike[str], inflated: str | os.PathLike[str]) -> SourceListing:
    """Sort out the files of ``folder`` (see the module text); compressed binlogs are decompressed
    into ``inflated``."""
    listing, compressed = SourceListing(), []
    for path in sorted(Path(folder).iterdir()):
        if not path.is_file() or path.name.startswith("."):
            continue
        kind = _kind(path)
        if kind == "binlog":
            listing.files.append(SourceFile(path.name, str(path)))
        elif kind == "compressed":
            compressed.append(path)
        elif kind:
            listing.reported.append(f"{path.name}: {kind}; not read")
    plain = {file.name for file in listing.files}
    for path in compressed:
        name = binlog_name_of(path.name)
        if name in plain:
            log.info("%s: the plain file %s is there too; the compressed copy is not needed", path.name, name)
            continue
        listing.files.append(SourceFile(name, str(inflate(path, Path(inflated) / name)), compressed=path.name))
    for line in listing.reported:
        log.warning("%s: %s", folder, line)
    return listing


def plain_binlogs(folder: str | os.PathLike[str]) -> list[SourceFile]:
    """The binlog files of ``folder`` that need no decompression, without reporting anything."""
    return [SourceFile(path.name, str(path)) for path in sorted(Path(folder).iterdir())
            if path.is_file() and not path.name.startswith(".") and _kind(path) == "binlog"]


def _kind(path: Path) -> str | None:
    """``binlog``, ``compressed``, why the file only looks like a binlog, or None (not one)."""
    with open(path, "rb") as handle:
        start = handle.read(len(MAGIC))
    name = binlog_name_of(path.name)
    if name is None:
        return "starts with the binlog magic but is not named <base>.<digits>" if start == MAGIC else None
    if name != path.name:
        expected = GZIP_MAGIC if path.name.endswith(".gz") else ZSTD_MAGIC
        if start.startswith(expected):
            return "compressed"
        return f"named like a compressed binlog but its bytes start {start.hex(' ') or '(empty)'}, not {expected.hex(' ')}"
    if start == MAGIC:
        return "binlog"
    return (f"named like a binlog file but starts {start.hex(' ') or '(empty file)'}, not the binlog magic "
            f"{MAGIC.hex(' ')}{_what_it_is(start)}")


def _what_it_is(start: bytes) -> str:
    if start.startswith(GZIP_MAGIC):
        return " (it is gzip-compressed: name it .gz to have it read)"
    if start.startswith(ZSTD_MAGIC):
        return " (it is Zstandard-compressed: name it .zst to have it read)"
    return ""


def inflate(compressed: Path, target: Path) -> Path:
    """``target``: the decompressed bytes of ``compressed`` (gzip or Zstandard, by its magic),
    written through a temporary file; reused when ``compressed`` is unchanged since. Bytes that do
    not decompress are a :class:`~binlog_codec.errors.BinlogError` naming the file."""
    stamp = _stamp(compressed)
    record_path = target.parent / _INFLATED_RECORD
    record = json.loads(record_path.read_text()) if record_path.exists() else {}
    if target.exists() and record.get(target.name) == stamp:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.partial")
    try:
        decompress(compressed, temporary, name=str(compressed), kind=compression_of(compressed))
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    record[target.name] = stamp
    record_path.write_text(json.dumps(record, indent=1, sort_keys=True))
    return target


def _stamp(path: Path) -> list[int]:
    found = path.stat()
    return [found.st_size, found.st_mtime_ns]

