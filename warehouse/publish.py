"""Publish a run's outputs into the warehouse atomically, and advance the checkpoint.

A run writes everything it produces under a run folder that mirrors the
warehouse layout (``changes/``, ``current/``, ``metadata/``), every file at a
name unique to the run. Into an object store, that folder is the run's output
folder in the warehouse's storage, ``data/<run id>.<attempt>/``
(:func:`warehouse.layout.output_folder`): Spark's tasks write each file once,
where it stays, and the commit registers it there. Into a local warehouse, it
is ``out/`` in the run's work folder, and the commit renames each file into
place. Nothing there is visible to readers until the commit: the catalog names
no file of the run before. :func:`commit` then makes it visible in three steps:

1. **Journal.** The type changes the tables would take are tried
   (:func:`warehouse.catalog.check_type_changes`), then the moves and the table
   commits (:func:`plan`) and the new checkpoint are written to
   ``_journal/<run id>.json`` in the state folder (a temporary file renamed into
   place: the rename is the commit point).
   A run that dies before it leaves the warehouse exactly as it was.
2. **Apply.** In a local warehouse, the files move into place, eight at a
   time, beside the files of earlier runs (:meth:`warehouse.storage.Storage.put`;
   a repeated run's files take the place of identical ones); the catalog gives
   every table the run touches one snapshot (:func:`warehouse.catalog.sync`):
   ``changes`` and the appended metadata tables get the run's files, a
   ``current`` table and ``table_schemas`` are replaced by them (as are a
   backfill's days of ``changes``), each snapshot carrying the run and its
   checkpoint; the checkpoint file in the state folder is replaced last.
3. **Done.** The journal is removed.

A process that dies during step 2 leaves the journal behind; :func:`recover`
(called by every :func:`commit`, and by the ingest entry point on start) rolls
it forward. Every move and every table commit is idempotent, so rolling forward
twice is harmless.

**Another writer.** The journal keeps the checkpoint the catalog's last commit
carried when the commit began (its *fence*, :class:`warehouse.catalog.Fence`).
The table every run appends to, ``_binlake.runs``, is committed first, and only
while its snapshot still carries that checkpoint (or is this run's own, rolled
forward): the catalog's compare-and-swap makes check and commit one step. A
writer that committed in between (another machine's state folder beside a
shared catalog) makes the commit raise :class:`warehouse.catalog.CommitConflict`
before any table holds the run; its journal is dropped, never rolled forward
over the other writer's run.

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
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from warehouse import catalog, storage
from warehouse.layout import is_output_folder, layout_path

log = logging.getLogger(__name__)

JOURNAL = "_journal"
CHECKPOINT = Path("metadata") / "checkpoint.json"
DAY_PARTITIONS = "changes/*/*/commit_date=*"  # replaced whole by a backfill (spark_jobs.backfill)
PARALLEL_MOVES = 8  # files moved (uploaded, into an object store) side by side: their order does not matter


@dataclass(frozen=True)
class Move:
    """One step of a commit: the file at the location ``source`` (in the run folder) becomes
    ``target`` (a path relative to the warehouse's storage)."""

    source: str
    target: str

    def apply(self, warehouse: Path) -> None:
        """Do the move (:meth:`warehouse.storage.Storage.put`); a move an earlier attempt already
        did is skipped."""
        if storage.exists(self.source):
            storage.of(warehouse).put(self.source, self.target)


@dataclass(frozen=True)
class Plan:
    """What a commit does: the ``moves``, the ``tables`` commits that register the moved files,
    and the ``checkpoint`` written last (None: the one in place stays, as after a backfill);
    ``fence``: what the catalog must hold for the tables to be committed (:class:`warehouse.catalog.Fence`)."""

    moves: list[Move]
    tables: list[catalog.TableCommit]
    checkpoint: dict | None = None
    fence: catalog.Fence | None = None

    def to_json(self) -> dict:
        return {"moves": [vars(move) for move in self.moves], "tables": [each.to_json() for each in self.tables],
                "checkpoint": self.checkpoint, "fence": None if self.fence is None else vars(self.fence)}

    @classmethod
    def from_json(cls, entry: dict) -> Plan:
        moves = [Move(**move) for move in entry["moves"]]
        checkpoint = entry.get("checkpoint")
        for move in [move for move in moves if Path(move.target) == CHECKPOINT]:  # an earlier version's journal
            moves.remove(move)
            source = Path(move.source)  # None when it was moved already: the one in place
            checkpoint = json.loads(source.read_text(encoding="utf-8")) if source.exists() else None
        fence = entry.get("fence")  # none in an earlier version's journal
        return cls(moves, [catalog.TableCommit.from_json(t) for t in entry["tables"]], checkpoint,
                   None if fence is None else catalog.Fence(**fence))


def plan(warehouse: Path, run_folder: str, replaced: tuple[str, ...] = (), checkpoint: dict | None = None) -> Plan:
    """The commit of the run folder at the location ``run_folder`` into ``warehouse``: every file
    moved to the same place in the warehouse, or, a run's output folder in the warehouse's storage
    (:func:`warehouse.layout.output_folder`), left where it is; the table commits that register the
    files (:func:`warehouse.catalog.plan_tables`), then ``checkpoint``. ``replaced``: patterns of
    folders whose tables' files the run's replace (a backfill's days)."""
    base = str(run_folder).rstrip("/")
    in_place = storage.of(warehouse).relative(base)
    in_place = in_place if in_place is not None and is_output_folder(in_place) else None
    moves = [Move(location, location[len(base) + 1:]) for location in storage.files_under(base)]
    if in_place is not None:
        targets, moves = [f"{in_place}/{move.target}" for move in moves], []
    else:
        targets = [move.target for move in moves]
    folders = sorted({folder for target in targets for pattern in replaced
                      for folder in _folders_matching(layout_path(target), pattern)})
    return Plan(moves, catalog.plan_tables(targets, folders), checkpoint)


def _folders_matching(target: str, pattern: str) -> list[str]:
    """The folders of ``target`` (a relative path) that match the glob ``pattern``, component by component."""
    parts, depth = target.split("/"), len(pattern.split("/"))
    folder = "/".join(parts[:depth])
    return [folder] if len(parts) > depth and PurePosixPath(folder).match(pattern) else []


def write_atomically(path: Path, text: str) -> None:
    """``path`` holds ``text`` or what it held before, never a part: write, flush, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def commit(warehouse: Path, run_folder: str | os.PathLike[str], run_id: str, replaced: tuple[str, ...] = (),
           checkpoint: dict | None = None) -> int:
    """Publish the run folder at the location ``run_folder`` into ``warehouse``, and ``checkpoint``
    as the new one (None: the one in place stays); returns the number of moves. See the module text."""
    warehouse = Path(warehouse)
    recover(warehouse)
    fence = catalog.Fence(_check_checkpoint(warehouse))
    planned = replace(plan(warehouse, str(run_folder), replaced, checkpoint), fence=fence)
    catalog.check_type_changes(warehouse, planned.tables, {move.target: move.source for move in planned.moves})
    journal = warehouse / JOURNAL / f"{run_id}.json"
    write_atomically(journal, json.dumps(planned.to_json(), indent=1))
    _apply(warehouse, journal)
    log.info("run %s committed: %d files into %s, %d tables", run_id, len(planned.moves), warehouse, len(planned.tables))
    return len(planned.moves)


class CheckpointMismatch(RuntimeError):
    """The state folder's checkpoint is not the one the catalog's tables were last committed with:
    a run planned from it would publish rows the tables already hold, or skip some."""


def _check_checkpoint(warehouse: Path) -> dict | None:
    """Refuse a commit when the checkpoint in the state folder differs from the one the catalog's
    last commit carried (a state folder lost, restored from an older copy, or another one beside a
    shared catalog); returns the catalog's (None before its first commit)."""
    kept, here = catalog.committed_checkpoint(warehouse), read_checkpoint(warehouse)
    if kept is not None and kept != here:
        raise CheckpointMismatch(
            f"the checkpoint in {warehouse / CHECKPOINT} ({json.dumps(here, sort_keys=True)[:300]}) is not the one "
            f"the catalog's tables were last committed with ({json.dumps(kept, sort_keys=True)[:300]}): nothing was "
            "published; restore the warehouse's state folder, or write that checkpoint back, before the next run")
    return kept


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
    with ThreadPoolExecutor(max_workers=PARALLEL_MOVES, thread_name_prefix="publish") as pool:
        list(pool.map(lambda move: move.apply(warehouse), planned.moves))
    committed = planned.checkpoint if planned.checkpoint is not None else read_checkpoint(warehouse)
    try:
        catalog.sync(warehouse, journal.stem, committed, planned.tables, planned.fence)
    except catalog.CommitConflict:
        journal.unlink()  # the fence table is committed first: no table holds any of the run
        raise
    if planned.checkpoint is not None:
        write_atomically(warehouse / CHECKPOINT, json.dumps(planned.checkpoint, indent=1, sort_keys=True))
    journal.unlink()
    try:
        journal.parent.rmdir()  # no other commit pending: no empty folder left behind
    except OSError:
        pass


def read_checkpoint(warehouse: Path) -> dict:
    """The committed checkpoint: per source, the last committed file, position and GTID set."""
    path = Path(warehouse) / CHECKPOINT
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
