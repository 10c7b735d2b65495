"""Compressed binlog files: gzip and Zstandard, as archivers write them.

A binlog archived as ``mariadb-bin.000004.gz`` or ``.zst`` is the same binlog:
:func:`compression_of` tells the format by the file's first bytes (the gzip
magic ``1f 8b``, RFC 1952; the Zstandard frame magic ``28 b5 2f fd``, RFC 8878),
whatever the file is called, and :func:`decompress` writes the binlog back out,
streaming, in bounded memory.
"""

from __future__ import annotations

import gzip
import logging
import os
import shutil
import zlib
from typing import BinaryIO

import zstandard

from .errors import BinlogError

log = logging.getLogger(__name__)

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
MAGICS = {"gzip": GZIP_MAGIC, "zstd": ZSTD_MAGIC}
COPY_BYTES = 1 << 20


def compression_of(path: str | os.PathLike[str]) -> str | None:
    """``"gzip"`` or ``"zstd"`` when the file starts with that format's magic, else None."""
    with open(path, "rb") as stream:
        head = stream.read(len(ZSTD_MAGIC))
    return next((kind for kind, magic in MAGICS.items() if head.startswith(magic)), None)


def decompress(path: str | os.PathLike[str], target: str | os.PathLike[str], *, name: str, kind: str) -> None:
    """Write the decompressed bytes of the ``kind`` file at ``path`` to ``target``; a
    :class:`~binlog_codec.errors.BinlogError` naming the file ``name`` when they do not decompress."""
    log.info("%s: %s-compressed, decompressing", name, kind)
    with open(path, "rb") as compressed, open(target, "wb") as out:
        try:
            shutil.copyfileobj(_decompressing(compressed, kind), out, COPY_BYTES)
        except (EOFError, OSError, zlib.error, zstandard.ZstdError) as exc:
            raise BinlogError(f"{kind}-compressed, and its {kind} data does not decompress: {exc}", file=name) from None


def _decompressing(stream: BinaryIO, kind: str) -> BinaryIO:
    if kind == "gzip":
        return gzip.GzipFile(fileobj=stream)
    return zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True)
