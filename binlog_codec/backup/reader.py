"""Reading an online backup image: :class:`BackupReader` and :func:`read_image`.

The preamble (header, catalogue, meta-data and, when stored there, the
summary) is read when the reader is created; the table data is read on
demand, one chunk at a time, by :meth:`BackupReader.table_data`, so that an
image larger than memory can be read::

    with read_image("snapshot.bak") as image:
        print(image.header.server_version, image.catalogue.databases)
        for chunk in image.table_data():
            load(chunk.snapshot_number, chunk.table_number, chunk.data)
        print(image.summary.binlog_file, image.summary.binlog_position)

Every chunk is checked as it is read: sequence numbers without gaps, snapshot
and table numbers inside the catalogue, no data for a table after its last
chunk. Errors are :class:`~binlog_codec.backup.errors.BackupImageError`
subclasses naming the file and the byte offset.
"""

from __future__ import annotations

import logging
from typing import BinaryIO, Iterator

from .errors import CatalogueReferenceError, CorruptImageError, SequenceGapError, TruncatedImageError
from .image import (
    SUMMARY_MARKER,
    decode_catalogue,
    decode_data_chunk_head,
    decode_header,
    decode_metadata,
    decode_snapshot,
    decode_summary,
)
from .model import (
    FLAG_BIG_ENDIAN,
    FLAG_HAS_BINLOG_POSITION,
    FLAG_SUMMARY_IN_PREAMBLE,
    KNOWN_HEADER_FLAGS,
    Catalogue,
    Header,
    MetadataItem,
    Summary,
    TableDataChunk,
)
from .transport import Chunk, ChunkReader

log = logging.getLogger(__name__)


class BackupReader:
    """Reads a backup image from a binary ``stream``; ``name`` (the file name) is used in errors."""

    def __init__(self, stream: BinaryIO, name: str | None = None) -> None:
        self._stream = stream
        self._chunks = ChunkReader(stream, name or getattr(stream, "name", None) or "<backup image>")
        self.name = self._chunks.name
        self.header: Header = self._read_header()
        self._summary: Summary | None = None
        if self.header.summary_in_preamble:
            chunk = self._require_chunk("the summary")
            self._summary = decode_summary(chunk, self._chunks.error, self.header.has_binlog_position, marker=False)
        self.catalogue: Catalogue = decode_catalogue(
            self._require_chunk("the catalogue"), self._require_chunk, self._chunks.error, self.header.snapshots
        )
        self.metadata: list[MetadataItem] = decode_metadata(
            self._require_chunk("the meta-data"), self._require_chunk, self._chunks.error, self.catalogue
        )
        self._table_data: Iterator[TableDataChunk] | None = None
        log.debug("%s: preamble read: %d databases, %d meta-data entries",
                  self.name, len(self.catalogue.databases), len(self.metadata))

    @property
    def format_version(self) -> int:
        return self._chunks.format_version

    @property
    def block_size(self) -> int:
        return self._chunks.block_size

    def _require_chunk(self, what: str) -> Chunk:
        chunk = self._chunks.next_chunk()
        if chunk is None:
            raise self._chunks.error(
                TruncatedImageError, f"image ends (end-of-stream marker) where {what} was expected",
                self._chunks.end_of_stream_offset,
            )
        return chunk

    def _read_header(self) -> Header:
        chunk = self._require_chunk("the header")
        flags, created, version, count, extra = decode_header(chunk, self._chunks.error)
        if flags & ~KNOWN_HEADER_FLAGS:
            log.warning("%s: header flags 0x%04x include bits this reader does not know", self.name, flags)
        snapshots = tuple(
            decode_snapshot(self._require_chunk(f"snapshot description {number}"), self._chunks.error, number)
            for number in range(1, count + 1)
        )
        return Header(
            creation_time=created,
            server_version=version,
            snapshots=snapshots,
            summary_in_preamble=bool(flags & FLAG_SUMMARY_IN_PREAMBLE),
            has_binlog_position=bool(flags & FLAG_HAS_BINLOG_POSITION),
            big_endian=bool(flags & FLAG_BIG_ENDIAN),
            extra_data=extra,
        )

    def table_data(self) -> Iterator[TableDataChunk]:
        """The table data chunks in stream order, read one at a time; can be iterated once."""
        if self._table_data is not None:
            raise ValueError("the table data has already been read (it is read once, as a stream)")
        self._table_data = self._read_table_data()
        return self._table_data

    @property
    def summary(self) -> Summary:
        """The summary. When it is at the end of the image, the table data not read yet is read
        (and dropped) to get there."""
        if self._summary is None:
            remaining = self._table_data if self._table_data is not None else self.table_data()
            skipped = sum(1 for _ in remaining)
            if skipped:
                log.info("%s: skipped %d table data chunks to reach the summary", self.name, skipped)
        return self._summary

    def _read_table_data(self) -> Iterator[TableDataChunk]:
        table_counts = {
            number: len(self.catalogue.snapshot_tables(number)) for number in range(1, len(self.header.snapshots) + 1)
        }
        sequences: dict[int, int] = {}
        finished: set[tuple[int, int]] = set()
        error = self._chunks.error
        while True:
            chunk = self._chunks.next_chunk()
            if chunk is None:
                self._end_without_summary()
                return
            if chunk.data[:1] == bytes((SUMMARY_MARKER,)):
                self._read_final_summary(chunk)
                return
            snapshot, sequence, last, table, data_start = decode_data_chunk_head(chunk, error)
            if table >= table_counts.get(snapshot, 0):
                raise error(
                    CatalogueReferenceError,
                    f"table data chunk for table {table} of snapshot {snapshot}: the catalogue has "
                    f"{table_counts.get(snapshot, 0)} tables in snapshot {snapshot} "
                    f"(snapshots 1..{len(table_counts)})",
                    chunk.offset,
                )
            expected = sequences.get(snapshot, 0)
            if sequence != expected:
                raise error(
                    SequenceGapError,
                    f"table data chunk of snapshot {snapshot} has sequence number {sequence}, expected {expected} "
                    "(chunks are missing or out of order)",
                    chunk.file_offset(1),
                )
            sequences[snapshot] = (sequence + 1) & 0xFFFF
            if (snapshot, table) in finished:
                raise error(
                    CorruptImageError,
                    f"table data chunk for table {table} of snapshot {snapshot} after that table's last chunk",
                    chunk.offset,
                )
            if last:
                finished.add((snapshot, table))
            yield TableDataChunk(snapshot, table, chunk.data[data_start:], last, sequence, chunk.offset)

    def _end_without_summary(self) -> None:
        if self._summary is None:
            raise self._chunks.error(
                TruncatedImageError,
                "image ends without its summary: the header puts it at the end, after the table data "
                "(a chunk starting with 0x00 was expected)",
                self._chunks.end_of_stream_offset,
            )

    def _read_final_summary(self, chunk: Chunk) -> None:
        if self._summary is not None:
            raise self._chunks.error(
                CorruptImageError,
                "a summary after the table data, but the header puts the summary in the preamble "
                "(a table data chunk or the end of the stream was expected)",
                chunk.offset,
            )
        self._summary = decode_summary(chunk, self._chunks.error, self.header.has_binlog_position, marker=True)
        extra = self._chunks.next_chunk()
        if extra is not None:
            raise self._chunks.error(
                CorruptImageError, "a chunk after the summary, the end-of-stream marker was expected", extra.offset
            )

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> BackupReader:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def read_image(path) -> BackupReader:
    """A :class:`BackupReader` over the file at ``path``; closing the reader closes the file."""
    stream = open(path, "rb")
    try:
        return BackupReader(stream, str(path))
    except BaseException:
        stream.close()
        raise
