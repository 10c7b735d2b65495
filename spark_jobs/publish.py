"""Publish a run's outputs into the warehouse atomically, and advance the checkpoint.

A run writes everything it produces under a run folder that mirrors the
warehouse layout (``changes/``, ``current/``, ``metadata/``). Nothing there is
visible to readers. :func:`commit` then makes it visible in three steps:

1. **Journal.** The list of moves is written to ``_journal/<run id>.json``
   (a temporary file renamed into place: the rename is the commit point). A
   run that dies before it leaves the warehouse exactly as it was.
2. **Apply.** Files move into place. ``changes/`` and ``metadata/`` files are
   added under names derived from the run's input (the same input gives the
   same names, so a repeated run replaces files with identical ones instead of
   adding duplicates); each ``current/<db>/<table>/`` folder and the
   ``metadata/table_schemas/`` folder (its rows merged with the earlier runs'
   by the run) are replaced as a whole; the Iceberg tables of the warehouse's
   catalog register the new files (:func:`spark_jobs.catalog.sync`, a snapshot
   per table carrying the run and its checkpoint); the checkpoint file is
   replaced last.
3. **Done.** The journal is removed.

A process that dies during step 2 leaves the journal behind; :func:`recover`
(called by every :func:`commit`, and by the ingest entry point on start) rolls
it forward. Every move is idempotent, so rolling forward twice is harmless.

Readers see plain Parquet folders. A ``current`` folder is replaced by two
renames (old folder away, new folder in), so a reader listing it at that
instant may find it missing for a moment, never half written.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

JOURNAL = "_journal"
CHECKPOINT = Path("metadata") / "checkpoint.json"
# Folders replaced whole at a commit (each table's current rows, the merged table versions);
# every other file is added.
REPLACED_FOLDERS = ("current/*/*", "metadata/table_schemas")
DAY_PARTITIONS = "changes/*/*/commit_date=*"  # replaced whole too by a backfill (spark_jobs.backfill)


@dataclass(frozen=True)
class Move:
    """One step of a commit: ``source`` (in the run folder) becomes ``target`` (in the warehouse)."""

    source: str
    target: str
    replace_folder: bool = False

    def apply(self, warehouse: Path) -> None:
        """Do the move; a move an earlier attempt already did is skipped."""
        source, target = Path(self.source), warehouse / self.target
        if self.replace_folder:
            _replace_folder(source, target)
        elif source.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)


def _replace_folder(source: Path, target: Path) -> None:
    """``target`` becomes ``source``: the old folder is renamed away, the new one renamed in,
    then the old one removed. Each step can be repeated after a crash."""
    retired = target.with_name(target.name + ".retired")
    if source.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            if retired.exists():
                shutil.rmtree(retired)
            os.replace(target, retired)
        os.replace(source, target)
    shutil.rmtree(retired, ignore_errors=True)


def plan_moves(run_folder: Path, replaced: tuple[str, ...] = REPLACED_FOLDERS) -> list[Move]:
    """The moves that publish ``run_folder``: the folders matching ``replaced`` whole, every other
    file one by one, the checkpoint last."""
    moves, checkpoint = [], None
    replaced = sorted(folder for pattern in replaced for folder in run_folder.glob(pattern) if folder.is_dir())
    for folder in replaced:
        moves.append(Move(str(folder), str(folder.relative_to(run_folder)), replace_folder=True))
    for path in sorted(p for p in run_folder.rglob("*") if p.is_file()):
        relative = path.relative_to(run_folder)
        if any(path.is_relative_to(folder) for folder in replaced):
            continue
        move = Move(str(path), str(relative))
        if relative == CHECKPOINT:
            checkpoint = move
        else:
            moves.append(move)
    return moves + ([checkpoint] if checkpoint else [])


def write_atomically(path: Path, text: str) -> None:
    """``path`` holds ``text`` or what it held before, never a part: write, flush, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def commit(warehouse: Path, run_folder: Path, run_id: str, replaced: tuple[str, ...] = REPLACED_FOLDERS) -> int:
    """Publish ``run_folder`` into ``warehouse``; returns the number of moves. See the module text."""
    warehouse, run_folder = Path(warehouse), Path(run_folder)
    recover(warehouse)
    moves = plan_moves(run_folder, replaced)
    journal = warehouse / JOURNAL / f"{run_id}.json"
    write_atomically(journal, json.dumps([vars(move) for move in moves], indent=1))
    _apply(warehouse, journal)
    log.info("run %s committed: %d moves into %s", run_id, len(moves), warehouse)
    return len(moves)


def recover(warehouse: Path) -> list[str]:
    """Finish every commit a dead process left half done; returns their run ids."""
    finished = []
    for journal in sorted((Path(warehouse) / JOURNAL).glob("*.json")):
        log.warning("finishing the interrupted commit of run %s", journal.stem)
        _apply(Path(warehouse), journal)
        finished.append(journal.stem)
    return finished


def _apply(warehouse: Path, journal: Path) -> None:
    moves = [Move(**entry) for entry in json.loads(journal.read_text(encoding="utf-8"))]
    checkpoint = [move for move in moves if move.target == str(CHECKPOINT)]
    for move in moves:
        if move not in checkpoint:
            move.apply(warehouse)
    _sync_catalog(warehouse, journal.stem, checkpoint)
    for move in checkpoint:
        move.apply(warehouse)
    journal.unlink()
    try:
        journal.parent.rmdir()  # no other commit pending: no empty folder left behind
    except OSError:
        pass


def _sync_catalog(warehouse: Path, run_id: str, checkpoint: list[Move]) -> None:
    """The catalog's tables take the run's files, their snapshots the checkpoint the run commits
    (the one in place when the run moves none: a backfill's, a bootstrap's)."""
    from spark_jobs import catalog  # pyiceberg: imported when a commit needs it

    moved = [Path(move.source) for move in checkpoint if Path(move.source).exists()]
    committed = json.loads(moved[0].read_text(encoding="utf-8")) if moved else read_checkpoint(warehouse)
    catalog.sync(warehouse, run_id, committed)


def read_checkpoint(warehouse: Path) -> dict:
    """The committed checkpoint: per source, the last committed file, position and GTID set."""
    path = Path(warehouse) / CHECKPOINT
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
