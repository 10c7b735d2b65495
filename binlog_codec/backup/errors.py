"""Errors raised while reading an online backup image (WL#4063).

Each is a :class:`~binlog_codec.errors.BinlogError`: ``str(error)`` reads
``FILE: at OFFSET: what was found, what was expected``, where ``OFFSET`` is
the byte offset in the image file of the offending byte (a fragment header,
a block's size field, the first byte of a field inside a chunk).
"""

from __future__ import annotations

from ..errors import BinlogError, TruncatedError


class BackupImageError(BinlogError):
    """An image is not what the backup stream format (version 1) requires."""


class BadPrefixError(BackupImageError):
    """The 10-byte prefix holds the wrong magic number or an unsupported format version."""


class BlockSizeError(BackupImageError):
    """A block size outside the format's range, or one that disagrees between the first blocks."""


class FragmentError(BackupImageError):
    """A fragment header announces more bytes than are left in its block, or an end-of-stream
    marker cuts a chunk short."""


class TruncatedImageError(BackupImageError, TruncatedError):
    """The image ends before its end-of-stream marker, inside a block header or a fragment,
    or without the summary its header announces at the end."""


class SequenceGapError(BackupImageError):
    """A table data chunk's sequence number is not the one following the snapshot's previous chunk."""


class CatalogueReferenceError(BackupImageError):
    """A position (snapshot, database, table, item) points past the list it indexes, or the
    catalogue disagrees with the snapshot descriptions of the header."""


class CorruptImageError(BackupImageError):
    """A field holds a value the format does not allow, or a chunk is shorter or longer than its
    contents."""
