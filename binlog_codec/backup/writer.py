"""Writing an online backup image: :class:`BackupWriter`.

The parts go out in the order the format stores them::

    writer = BackupWriter(stream, header=header)        # prefix, header, snapshot descriptions
    writer.write_catalogue(catalogue)
    writer.write_metadata(items)
    writer.write_table_data(1, 0, b"...", last=True)    # any number of chunks, any sizes
    writer.finish(summary)                              # summary, end-of-stream marker

When the header says the summary is in the preamble
(``Header(summary_in_preamble=True)``), it is given to the constructor
instead, written right after the header, and :meth:`BackupWriter.finish`
takes none: use that when the summary is known before the table data is
written; otherwise the summary goes at the end of the image.
"""

from __future__ import annotations

import logging
from typing import BinaryIO, Iterable

from .image import (
    SUMMARY_MARKER,
    check_catalogue,
    encode_catalogue,
    encode_data_chunk_head,
    encode_header,
    encode_metadata,
    encode_summary,
)
from .model import Catalogue, Header, MetadataItem, Summary, TableDataChunk
from .transport import DEFAULT_BLOCK_SIZE, ChunkWriter

log = logging.getLogger(__name__)

# What the image expects next; any number of table data chunks, then finish().
_STEPS = ("catalogue", "metadata", "table data", "finished")


class BackupWriter:
    """Writes one backup image to a binary ``stream``; blocks are written as they fill up."""

    def __init__(
        self,
        stream: BinaryIO,
        *,
        header: Header,
        block_size: int = DEFAULT_BLOCK_SIZE,
        summary: Summary | None = None,
    ) -> None:
        if header.summary_in_preamble and summary is None:
            raise ValueError("the header puts the summary in the preamble: pass it to BackupWriter(summary=...)")
        if not header.summary_in_preamble and summary is not None:
            raise ValueError("the header puts the summary at the end of the image: pass it to finish()")
        self.header = header
        self.catalogue: Catalogue | None = None
        self._chunks = ChunkWriter(stream, block_size)
        self._step = 0
        self._sequence: dict[int, int] = {}
        self._finished_tables: set[tuple[int, int]] = set()
        self._table_counts: dict[int, int] = {}
        for chunk in encode_header(header):
            self._chunks.write_chunk(chunk)
        if summary is not None:
            self._chunks.write_chunk(encode_summary(summary, header.has_binlog_position))

    @property
    def block_size(self) -> int:
        return self._chunks.block_size

    @property
    def bytes_written(self) -> int:
        """Bytes handed to the stream so far (whole blocks, then the last one at :meth:`finish`)."""
        return self._chunks.bytes_written

    def _expect(self, step: str) -> None:
        if _STEPS[self._step] != step:
            raise ValueError(f"cannot write the {step} now: the image is at the {_STEPS[self._step]} step")

    def _advance(self, step: str) -> None:
        self._expect(step)
        self._step += 1

    def write_catalogue(self, catalogue: Catalogue) -> None:
        """The catalogue: its snapshot numbers and table counts must agree with the header's snapshots."""
        check_catalogue(catalogue, self.header)
        chunks = encode_catalogue(catalogue)
        self._advance("catalogue")
        for chunk in chunks:
            self._chunks.write_chunk(chunk)
        self.catalogue = catalogue
        self._table_counts = {
            number: len(catalogue.snapshot_tables(number)) for number in range(1, len(self.header.snapshots) + 1)
        }

    def write_metadata(self, items: Iterable[MetadataItem] = ()) -> None:
        """The meta-data entries; they are stored by section (global, tables by database, per-db,
        per-table), in the given order inside each."""
        self._expect("metadata")
        chunks = encode_metadata(list(items), self.catalogue)
        self._advance("metadata")
        for chunk in chunks:
            self._chunks.write_chunk(chunk)

    def write_table_data(self, snapshot_number: int, table_number: int, data: bytes, *, last: bool = False) -> TableDataChunk:
        """One chunk of table ``table_number`` (its position in the snapshot's table list) of
        snapshot ``snapshot_number``; ``last``: no more data for that table follows."""
        self._expect("table data")
        if table_number >= self._table_counts.get(snapshot_number, 0):
            raise ValueError(
                f"table {table_number} of snapshot {snapshot_number} is not in the catalogue "
                f"(snapshot {snapshot_number} has {self._table_counts.get(snapshot_number, 0)} tables)"
            )
        if (snapshot_number, table_number) in self._finished_tables:
            raise ValueError(f"table {table_number} of snapshot {snapshot_number} already had its last chunk")
        sequence = self._sequence.get(snapshot_number, 0)
        self._chunks.write_chunk(encode_data_chunk_head(snapshot_number, sequence, last, table_number), data)
        self._sequence[snapshot_number] = (sequence + 1) & 0xFFFF
        if last:
            self._finished_tables.add((snapshot_number, table_number))
        return TableDataChunk(snapshot_number, table_number, data, last, sequence)

    def finish(self, summary: Summary | None = None) -> int:
        """Write the summary (unless it is in the preamble) and the end-of-stream marker; the image's size."""
        self._expect("table data")
        if self.header.summary_in_preamble:
            if summary is not None:
                raise ValueError("the summary is in the preamble, already written")
        else:
            if summary is None:
                raise ValueError("the header puts the summary at the end of the image: finish(summary) needs it")
            self._chunks.write_chunk(bytes((SUMMARY_MARKER,)), encode_summary(summary, self.header.has_binlog_position))
        self._step = _STEPS.index("finished")
        self._chunks.close()
        log.info("backup image written: %d bytes, block size %d", self.bytes_written, self.block_size)
        return self.bytes_written
