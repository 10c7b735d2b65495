"""Rows events of one table version into Arrow record batches, event by event.

:class:`TableBatches` makes the batches of
:func:`~binlog_codec.arrow.image_schema` that
:class:`~binlog_codec.arrow.ImageBatchBuilder` makes from row changes, but takes
whole rows events (:class:`~binlog_codec.rows.RowsOfTable`). With the compiled
build, :class:`binlog_codec.row_arrow.ArrowRows` decodes most events straight
into Arrow buffers; the events it hands back (PARTIAL_UPDATE_ROWS, values the
Python path stores differently, such as zero dates, which go to
``_unrepresentable``, and every event it cannot read) and every event of the
pure-Python build go through ``ImageBatchBuilder``. Log order is kept: each
builder's rows become a batch of their own before the other one takes over,
and :meth:`TableBatches.flush` hands all of them over as one table.
"""

from __future__ import annotations

import pyarrow as pa

from . import compiled
from .arrow import Commit, ImageBatchBuilder, column_mapping
from .event_types import EventType
from .rows import RowsOfTable, event_records
from .table_map import TableMap


class TableBatches:
    """The row changes of one table version (one :class:`TableMap`), added a rows event at a time."""

    def __init__(self, table: TableMap, flavour: str = "mysql", native: bool | None = None) -> None:
        """``native``: whether to use the compiled builder (by default when the compiled build is in use)."""
        self.table = table
        self.flavour = flavour
        self.python = ImageBatchBuilder(table, flavour)
        self.schema = self.python.schema
        self.schema_id = self.python.schema_id
        self._use_native = compiled() if native is None else native
        self._native = None  # the compiled builder, made with the first event's decoding plan
        self._parts: list[pa.RecordBatch] = []
        self._rows = 0
        self.native_rows = 0  # rows the compiled builder took, since this builder was made

    def __len__(self) -> int:
        """The rows added since the last flush."""
        return self._rows

    def add(self, rows: RowsOfTable, commit: Commit | None = None) -> int:
        """Add every row of a rows event of this table version, with its transaction's
        :class:`Commit` when known; returns how many rows it holds. Decoding errors are
        those of :func:`~binlog_codec.rows.decode_rows`, located at the event."""
        added = self._native_rows(rows, commit)
        if added < 0:
            added = self._python_rows(rows, commit)
        else:
            self.native_rows += added
        self._rows += added
        return added

    def _native_rows(self, rows: RowsOfTable, commit: Commit | None) -> int:
        """The event through the compiled builder; -1 when it is the Python path's."""
        if not self._use_native or rows.event.type_code == EventType.PARTIAL_UPDATE_ROWS:
            return -1
        if self._native is None:
            from . import row_arrow

            conversions = [column_mapping(column, self.flavour).convert for column in self.table.columns]
            self._native = row_arrow.ArrowRows(self.schema, self.schema_id, rows.plan, conversions)
        added = self._native.add(rows.event, rows.gtid, commit)
        if added >= 0 and len(self.python):  # only one builder holds rows: those came first
            self._parts.append(self.python.flush())
        return added

    def _python_rows(self, rows: RowsOfTable, commit: Commit | None) -> int:
        if self._native is not None and len(self._native):
            self._parts.append(self._native.flush())
        added = 0
        for record in event_records(rows):
            self.python.append(record, commit)
            added += 1
        return added

    def flush(self) -> pa.Table:
        """The rows added since the last flush, in log order, as one table; the builder starts empty again."""
        for builder in (self._native, self.python):
            if builder is not None and len(builder):
                self._parts.append(builder.flush())
        table = pa.Table.from_batches(self._parts, schema=self.schema)
        self._parts = []
        self._rows = 0
        return table
