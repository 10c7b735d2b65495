"""The online backup stream format of MySQL 6.0 (WL#4063), read and written.

A backup image holds a snapshot of databases: a catalogue of databases and
tables, their CREATE statements, the table data, and in its summary the
binlog position at the validity point. binlake uses it for the rows that
existed before the first binlog it reads.

* :mod:`~binlog_codec.backup.transport`: the 10-byte prefix, blocks and
  fragments that carry chunks;
* :mod:`~binlog_codec.backup.encoding`: numbers, strings and times;
* :mod:`~binlog_codec.backup.image`: header, summary, catalogue, meta-data
  and table data chunks;
* :mod:`~binlog_codec.backup.model`: what they hold, as dataclasses;
* :class:`BackupWriter` and :class:`BackupReader` / :func:`read_image`.

Table data is opaque bytes here: its row format is defined elsewhere.
"""

from .errors import (
    BackupImageError,
    BadPrefixError,
    BlockSizeError,
    CatalogueReferenceError,
    CorruptImageError,
    FragmentError,
    SequenceGapError,
    TruncatedImageError,
)
from .model import (
    Catalogue,
    Database,
    DbItem,
    Header,
    ImageType,
    ItemType,
    MetadataItem,
    MetadataKind,
    ServerVersion,
    SnapshotInfo,
    Summary,
    Table,
    TableDataChunk,
)
from .reader import BackupReader, read_image
from .transport import DEFAULT_BLOCK_SIZE, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE
from .writer import BackupWriter

__all__ = [
    "BackupImageError", "BadPrefixError", "BlockSizeError", "CatalogueReferenceError", "CorruptImageError",
    "FragmentError", "SequenceGapError", "TruncatedImageError",
    "Catalogue", "Database", "DbItem", "Header", "ImageType", "ItemType", "MetadataItem", "MetadataKind",
    "ServerVersion", "SnapshotInfo", "Summary", "Table", "TableDataChunk",
    "BackupReader", "read_image", "BackupWriter", "DEFAULT_BLOCK_SIZE", "MAX_BLOCK_SIZE", "MIN_BLOCK_SIZE",
]
