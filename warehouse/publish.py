"""Publish a run's outputs into the warehouse atomically, and advance the checkpoint.

A run writes everything it produces under a run folder that mirrors the
warehouse layout (``changes/``, ``current/``, ``metadata/``), every file at a
name unique to the run. Nothing there is visible to readers. :func:`commit`
then makes it visible in three steps:

1. **Journal.** The type changes the tables would take are tried
   (:func:`warehouse.catalog.check_type_changes`), then the moves and the table
   commits (:func:`plan`) are written to ``_journal/<run id>.json`` in the state
   folder (a temporary file renamed into place: the rename is the commit point).
   A run that dies before it leaves the warehouse exactly as it was.
2. **Apply.** The files move into the warehouse's storage, eight at a time,
   beside the files of earlier runs (renamed into a local warehouse, uploaded
   to an object store, :mod:`warehouse.storage`; a repeated run's files take
   the place of identical ones); the
   catalog gives every table the run touches one snapshot
   (:func:`warehouse.catalog.sync`): ``changes`` and the appended metadata
   tables get the run's files, a ``current`` table and ``table_schemas`` are
   replaced by them (as are a backfill's days of ``changes``), each snapshot
   carrying the run and its checkpoint; the checkpoint file is replaced last.
3. **Done.** The journal is removed.

A process that dies during step 2 leaves the journal behind; :func:`recover`
(called by every :func:`commit`, and by the ingest entry point on start) rolls
it forward. Every move and every table commit is idempotent, so rolling forward
twice is harmless.

Readers read the tables through the catalog: a table's folder also holds the
files of its older snapshots (removed by maintenance once no snapshot kept
names them). Each table moves from one snapshot to the next in one step;
across tables, a reader that needs one cut reads the snapshots of one run
(their ``binlake.run_id``).
"""

from __future__ import annotations

import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from warehouse import catalog, storage

log = logging.getLogger(__name__)

JOURNAL = "_journal"
CHECKPOINT = Path("metadata") / "checkpoint.json"
DAY_PARTITIONS = "changes/*/*/commit_date=*"  # replaced whole by a backfill (spark_jobs.backfill)
PARALLEL_MOVES = 8  # files moved (uploaded, into an object store) side by side: their order does not matter


@dataclass(frozen=True)
class Move:
    """One step of a commit: ``source`` (in the run folder) becomes ``target`` (in the warehouse)."""

    source: str
    target: str

    def apply(self, warehouse: Path) -> None:
        """Do the move; a move an earlier attempt already did is skipped. A table's file goes to
        the warehouse's storage (:meth:`warehouse.storage.Storage.put`: uploaded to an object
        store), anything else (the checkpoint) stays in its state folder."""
        source = Path(self.source)
        if not source.exists():
            return
        if catalog.table_of(self.target) is not None:
            storage.of(warehouse).put(source, self.target)
            return
        target = warehouse / self.target
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)


@dataclass(frozen=True)
class Plan:
    """What a commit does: the ``moves`` (the checkpoint last) and the ``tables`` commits."""

    moves: list[Move]
    tables: list[catalog.TableCommit]

    def to_json(self) -> dict:
        return {"moves": [vars(move) for move in self.moves], "tables": [each.to_json() for each in self.tables]}

    @classmethod
    def from_json(cls, entry: dict) -> Plan:
        return cls([Move(**move) for move in entry["moves"]], [catalog.TableCommit.from_json(t) for t in entry["tables"]])


def plan(run_folder: Path, replaced: tuple[str, ...] = ()) -> Plan:
    """The commit of ``run_folder``: every file moved to the same place in the warehouse (the
    checkpoint last), and the table commits that register them (:func:`warehouse.catalog.plan_tables`);
    ``replaced``: patterns of folders whose tables' files the run's replace (a backfill's days)."""
    moves, checkpoint = [], None
    for path in sorted(p for p in run_folder.rglob("*") if p.is_file()):
        move = Move(str(path), path.relative_to(run_folder).as_posix())
        if Path(move.target) == CHECKPOINT:
            checkpoint = move
        else:
            moves.append(move)
    folders = [folder.relative_to(run_folder).as_posix() for pattern in replaced for folder in run_folder.glob(pattern)]
    return Plan(moves + ([checkpoint] if checkpoint else []), catalog.plan_tables([m.target for m in moves], folders))


def write_atomically(path: Path, text: str) -> None:
    """``path`` holds ``text`` or what it held before, never a part: write, flush, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def commit(warehouse: Path, run_folder: Path, run_id: str, replaced: tuple[str, ...] = ()) -> int:
    """Publish ``run_folder`` into ``warehouse``; returns the number of moves. See the module text."""
    warehouse, run_folder = Path(warehouse), Path(run_folder)
    recover(warehouse)
    _check_checkpoint(warehouse)
    planned = plan(run_folder, replaced)
    catalog.check_type_changes(warehouse, planned.tables, {move.target: move.source for move in planned.moves})
    journal = warehouse / JOURNAL / f"{run_id}.json"
    write_atomically(journal, json.dumps(planned.to_json(), indent=1))
    _apply(warehouse, journal)
    log.info("run %s committed: %d files into %s, %d tables", run_id, len(planned.moves), warehouse, len(planned.tables))
    return len(planned.moves)


class CheckpointMismatch(RuntimeError):
    """The state folder's checkpoint is not the one the catalog's tables were last committed with:
    a run planned from it would publish rows the tables already hold, or skip some."""


def _check_checkpoint(warehouse: Path) -> None:
    """Refuse a commit when the checkpoint in the state folder differs from the one the catalog's
    last commit carried (a state folder lost, restored from an older copy, or another one beside a
    shared catalog)."""
    kept, here = catalog.committed_checkpoint(warehouse), read_checkpoint(warehouse)
    if kept is not None and kept != here:
        raise CheckpointMismatch(
            f"the checkpoint in {warehouse / CHECKPOINT} ({json.dumps(here, sort_keys=True)[:300]}) is not the one "
            f"the catalog's tables were last committed with ({json.dumps(kept, sort_keys=True)[:300]}): nothing was "
            "published; restore the warehouse's state folder, or write that checkpoint back, before the next run")


def recover(warehouse: Path) -> list[str]:
    """Finish every commit a dead process left half done; returns their run ids. Then register
    the tables a warehouse written by an earlier version holds only as folders
    (:func:`warehouse.catalog.adopt`)."""
    finished = []
    for journal in sorted((Path(warehouse) / JOURNAL).glob("*.json")):
        log.warning("finishing the interrupted commit of run %s", journal.stem)
        _apply(Path(warehouse), journal)
        finished.append(journal.stem)
    catalog.adopt(warehouse, read_checkpoint(warehouse))
    return finished


def _apply(warehouse: Path, journal: Path) -> None:
    entry = json.loads(journal.read_text(encoding="utf-8"))
    if isinstance(entry, list):  # an earlier version's journal: its folder replacements cannot be replayed here
        raise RuntimeError(f"{journal} is the journal of a commit an earlier version of binlake left half done: "
                           "nothing was published; finish it with that version (any run of it does), then go on")
    planned = Plan.from_json(entry)
    checkpoint = [move for move in planned.moves if Path(move.target) == CHECKPOINT]
    with ThreadPoolExecutor(max_workers=PARALLEL_MOVES, thread_name_prefix="publish") as pool:
        list(pool.map(lambda move: move.apply(warehouse), [move for move in planned.moves if move not in checkpoint]))
    moved = [Path(move.source) for move in checkpoint if Path(move.source).exists()]
    # the checkpoint the run commits (the one in place when it moves none: a backfill's, a bootstrap's)
    committed = json.loads(moved[0].read_text(encoding="utf-8")) if moved else read_checkpoint(warehouse)
    catalog.sync(warehouse, journal.stem, committed, planned.tables)
    for move in checkpoint:
        move.apply(warehouse)
    journal.unlink()
    try:
        journal.parent.rmdir()  # no other commit pending: no empty folder left behind
    except OSError:
        pass


def read_checkpoint(warehouse: Path) -> dict:
    """The committed checkpoint: per source, the last committed file, position and GTID set."""
    path = Path(warehouse) / CHECKPOINT
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
