"""A table's names through RENAME TABLE, and the statements that removed its rows.

A table's rows may have been logged under other names: ``RENAME TABLE t TO t2`` (or ``ALTER
TABLE t RENAME TO t2``) moves the rows of ``t`` to ``t2``, whose later row changes the log names
``t2``. :func:`names_of` follows a table's name back through the renames in its schema history
(``metadata/schema_changes`` rows) to a chain of :class:`Segment` s: each name and the stretch
of the log it held the rows, oldest first, the table's own name last.

Some statements remove every row of the table they name (:func:`clears`): TRUNCATE, DROP TABLE,
DROP DATABASE, a CREATE TABLE without IF NOT EXISTS (the table was not there) and a rename of
it to another name (its rows go with the new name). A row last changed before such a statement,
in its segment or any later one, is not in the table any more (:meth:`NameChain.kept`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from binlog_codec import ddl
from binlog_codec.schema_change import TableCreated, TableCreatedLike

from .schema_history import ALTERED, CREATED, CREATED_LIKE, DATABASE_DROPPED, DROPPED, RENAMED, TRUNCATED, renamed_to

MAX_RENAMES = 64  # a chain longer than this is cut there (its older names' rows are not followed)
# The ``schema_changes`` column of the ordinal of the warehouse run that read the row. Runs come
# in that order, whatever their positions (a failover may bring lower file numbers): positions
# are only compared within a run.
RUN = "_run"


def order(seq: int | None, file: str | None, pos: int | None, run: int | None = None) -> tuple:
    """A log position as a tuple that sorts in log order: by the ordinal of the run that read it
    (None, of a warehouse older than ordinals, first), then by file number (a file without one
    first), file and offset."""
    return (-1 if run is None else run, seq or 0, file or "", pos or 0)


def position(row: dict) -> tuple:
    """Where a ``schema_changes`` row was logged (:func:`order`)."""
    return order(row["_binlog_seq"], row["_binlog_file"], row["_binlog_pos"], row.get(RUN))


@dataclass(frozen=True)
class Segment:
    """A stretch of the log in which the table's rows had the name ``name``: from ``start``
    (where a rename gave it the name; None: before the log read) to ``end`` (where a rename took
    the name away; None: it has it still). ``cleared``: the last statement in that stretch that
    removed every row (:func:`clears`), None when there is none."""

    name: str
    start: tuple | None
    end: tuple | None
    cleared: tuple | None

    def holds(self, at: tuple) -> bool:
        return (self.start is None or at > self.start) and (self.end is None or at < self.end)


def clears(row: dict, database: str, table: str) -> bool:
    """Whether the ``schema_changes`` row removed every row of ``database.table``."""
    if row["database"] != database:
        return False
    if row["change"] == DATABASE_DROPPED:
        return True
    if row["table"] != table:
        return False
    if row["change"] in (TRUNCATED, DROPPED, RENAMED):
        return True
    if row["change"] == ALTERED:  # ALTER TABLE ... RENAME TO another name
        return any((new_database or database, new) != (database, table) for new_database, new in renamed_to(row))
    if row["change"] in (CREATED, CREATED_LIKE):  # IF NOT EXISTS: a no-op where the table was there
        created = ddl.parse(row["statement"], row["database"], sql_mode=row["sql_mode"] or 0)
        return isinstance(created, (TableCreated, TableCreatedLike)) and not created.if_not_exists
    return False


def _renamed_into(changes: Sequence[dict], database: str, table: str, before: int) -> int | None:
    """Where in ``changes`` (log order; the rows of one statement in its order) the last rename
    that gave ``database.table`` its name before ``changes[before]`` is, None when there is none."""
    for index in range(before - 1, -1, -1):
        row = changes[index]
        if row["database"] == database and row["table"] != table and any(
                (new_database or database, new) == (database, table) for new_database, new in renamed_to(row)):
            return index
    return None


class NameChain:
    """The names of one table's rows, oldest first (:class:`Segment`), as a run (ordinal ``run``)
    reads them."""

    def __init__(self, segments: Sequence[Segment], run: int | None = None) -> None:
        self.segments, self.run = tuple(segments), run
        self.own = self.segments[-1].name
        # Per segment, the last statement in it or a later one that removed every row.
        later: tuple | None = None
        self._removed: list[tuple | None] = []
        for segment in reversed(self.segments):
            later = max((at for at in (segment.cleared, later) if at is not None), default=None)
            self._removed.insert(0, later)

    @property
    def names(self) -> set[str]:
        return {segment.name for segment in self.segments}

    def kept(self, names: Sequence[str | None], positions: Sequence[tuple]) -> np.ndarray:
        """Per row change of the run (logged under ``names``, None: the table's own name, at
        ``positions``), whether its row is still in the table: logged in a segment of the chain
        and after every statement that removed the rows since."""
        if len(self.segments) == 1 and self._removed[0] is None:
            return np.ones(len(positions), dtype=bool)
        keep = np.zeros(len(positions), dtype=bool)
        for at, (name, where) in enumerate(zip(names, positions)):
            index = self._segment(name or self.own, where)
            keep[at] = index is not None and (self._removed[index] is None or where > self._removed[index])
        return keep

    def removed(self, index: int) -> tuple | None:
        """Where the last statement that removed the rows of segment ``index`` (in it or a later
        segment) was logged; None when none did."""
        return self._removed[index]

    def _segment(self, name: str, at: tuple) -> int | None:
        return next((i for i, segment in enumerate(self.segments) if segment.name == name and segment.holds(at)), None)

    def _in_run(self, at: tuple | None) -> bool:
        return at is not None and self.run is not None and at[0] == self.run

    @property
    def cleared_in_run(self) -> bool:
        """Whether a statement of the run removed every row the table held under its own name:
        every row of its ``current``, all logged before the run."""
        return self._in_run(self._removed[-1])

    def inherited(self) -> list[tuple[Segment, bool]]:
        """The earlier names whose rows the table takes over in the run: per segment renamed in
        the run, whether the rows of its ``current`` come along (no statement of the run removed
        them)."""
        found = []
        for index, segment in enumerate(self.segments[:-1]):
            if self._in_run(segment.end):
                gone = self._removed[index + 1] is not None or self._in_run(segment.cleared)
                found.append((segment, not gone))
        return found


def names_of(changes: Iterable[dict], database: str, table: str, run: int | None = None) -> NameChain:
    """The chain of names of ``database.table`` through the renames of ``changes``
    (``schema_changes`` rows; those of one statement in its order, as each run writes them), with
    the statements that removed its rows in each segment, as the run of ordinal ``run`` reads
    them. Renames from another database are not followed: the table starts at the rename there."""
    changes = sorted(changes, key=position)  # stable: a statement's rows keep their order
    ends: list[tuple[str, int]] = [(table, len(changes))]  # each name, and the rename that ends it
    while len(ends) <= MAX_RENAMES:
        rename = _renamed_into(changes, database, ends[0][0], ends[0][1])
        if rename is None:
            break
        ends.insert(0, (changes[rename]["table"], rename))
    bounds = [None] + [position(changes[at]) for _, at in ends[:-1]]  # where each segment starts and ends
    segments = []
    for (name, _), start, end in zip(ends, bounds, bounds[1:] + [None]):
        within = [position(row) for row in changes if clears(row, database, name)
                  and (start is None or position(row) > start) and (end is None or position(row) < end)]
        segments.append(Segment(name, start, end, max(within, default=None)))
    return NameChain(segments, run)
