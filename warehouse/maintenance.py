"""Maintenance of a warehouse: old snapshots expired, files no snapshot names removed, staged
binlog files the checkpoint has passed pruned.

A commit never rewrites or removes a file: a ``current`` table (``<db>.<table>``)
and ``_binlake.table_schemas`` are replaced by a snapshot of new files beside the
old ones, ``changes`` and the other metadata tables are appended to
(:mod:`warehouse.catalog`). Older snapshots keep naming the old files, so a
reader can travel back; without maintenance the warehouse only grows. Four
steps, each run under the warehouse lock (:mod:`warehouse.lock`), so that no
commit lands while they look:

1. :func:`expire_snapshots` — in every table of the catalog, the snapshots older
   than the retention go, except the newest ``keep_last``, the current one and
   any a branch or tag points at. Time travel reaches the kept ones only.
2. :func:`remove_orphan_files` — the Parquet files under ``changes/``,
   ``current/`` and ``metadata/``, at the root or in a run's output folder
   (``data/<output>/``, :mod:`warehouse.layout`), that no snapshot of any table names (nor a
   pending commit's journal, ``_journal/*.json``), older than an age (by
   modification time, a day by default: a commit in flight is never touched),
   and, in each table's Iceberg metadata folder (``_iceberg/<ns>/<table>/metadata/``),
   the files its metadata no longer names: manifest lists and manifests of
   expired snapshots, metadata files beyond the table's metadata log. A file
   in a folder that holds no table's files (a table the catalog does not know)
   is left alone and logged, as is everything else in the warehouse (the
   checkpoint, the catalog, ``_runs/``, ``_journal/``, ``_quality/``). Folders
   left empty go too.
3. :func:`remove_abandoned_runs` — the work areas of runs that were never
   published (a run that failed, or was prepared and then left): each
   ``_runs/<run id>/`` of the storage and of the state folder whose newest file is
   older than the same age, unless a pending commit's journal names the run; and
   in an object store, each output folder ``data/<run id>.<attempt>/`` of which no
   snapshot nor pending journal names a file (an attempt that failed). A run that
   failed is prepared afresh by the next one, in an output folder of its own.
4. :func:`prune_staged` — the staged binlog files whose every transaction is
   committed (see there).

``--dry-run`` (DAG param ``dry_run``) only reports what each step would remove.
Command line::

    python -m warehouse.maintenance WAREHOUSE [--state DIR] [--staging DIR] [--retention-days N]
        [--keep-last N] [--orphan-age-hours N] [--dry-run]
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

from spark_jobs.positions import binlog_name_of, log_order
from warehouse import storage
from warehouse.catalog import FOLDER, local_path, open_catalog
from warehouse.layout import DATA_FOLDER, INFLATED_FOLDER, RUNS_FOLDER, is_output_folder, layout_path, name_of
from warehouse.lock import warehouse_lock
from warehouse.publish import JOURNAL, read_checkpoint

log = logging.getLogger(__name__)

RETENTION = timedelta(days=7)
KEEP_LAST = 5
ORPHAN_AGE = timedelta(days=1)
TABLE_DEPTH = {"changes": 3, "current": 3, "metadata": 2}
"""The warehouse folders of table files, and how deep a table's own folder is in each:
``changes/<db>/<table>``, ``current/<db>/<table>``, ``metadata/<name>``."""


@dataclass
class Removed:
    """What a step removed (or, in a dry run, would remove): file count, bytes, paths."""

    files: int = 0
    bytes: int = 0
    paths: list[str] = field(default_factory=list)

    def add(self, file: storage.StoredFile) -> None:
        self.files += 1
        self.bytes += file.size
        self.paths.append(file.location)

    def merge(self, other: "Removed") -> None:
        self.files += other.files
        self.bytes += other.bytes
        self.paths += other.paths

    def summary(self) -> dict:
        """The counts, small enough to hand between tasks."""
        return {"files": self.files, "bytes": self.bytes}


# -- the tables ---------------------------------------------------------------


def tables(catalog) -> Iterator[tuple[str, object]]:
    """Every table of ``catalog``, whatever its namespace and name: ``("ns.name", table)``."""
    for namespace in catalog.list_namespaces():
        for identifier in catalog.list_tables(namespace):
            yield ".".join(identifier), catalog.load_table(identifier)


# -- 1. snapshots -------------------------------------------------------------


def expire_snapshots(warehouse: Path, older_than: timedelta = RETENTION, keep_last: int = KEEP_LAST,
                     dry_run: bool = False) -> dict[str, int]:
    """Expire, in every table, the snapshots older than ``older_than`` except the newest
    ``keep_last`` (at least 1), the current one and those a branch or tag points at; returns per
    table how many were expired (in a dry run: would be)."""
    if keep_last < 1:
        raise ValueError(f"keep_last must be at least 1 (the current snapshot), not {keep_last}")
    cutoff_ms = int((datetime.now(timezone.utc) - older_than).timestamp() * 1000)
    expired = {}
    with warehouse_lock(warehouse, purpose="maintenance: expire snapshots"):
        for name, table in tables(open_catalog(warehouse)):
            ids = expirable(table, cutoff_ms, keep_last)
            if ids and not dry_run:
                table.maintenance.expire_snapshots().by_ids(ids).commit()
            log.info("%s: %d of %d snapshots %s", name, len(ids), len(table.snapshots()),
                     "to expire" if dry_run else "expired")
            expired[name] = len(ids)
    return expired


def expirable(table, cutoff_ms: int, keep_last: int) -> list[int]:
    """The ids of ``table``'s snapshots taken before ``cutoff_ms`` that are neither among the
    newest ``keep_last`` nor the head of a branch or tag (the current snapshot is main's head)."""
    newest = sorted(table.snapshots(), key=lambda snapshot: snapshot.timestamp_ms, reverse=True)
    kept = {snapshot.snapshot_id for snapshot in newest[:keep_last]}
    kept |= {ref.snapshot_id for ref in table.metadata.refs.values()}
    return [s.snapshot_id for s in newest if s.snapshot_id not in kept and s.timestamp_ms < cutoff_ms]


# -- 2. orphan files ----------------------------------------------------------


def remove_orphan_files(warehouse: Path, older_than: timedelta = ORPHAN_AGE,
                        dry_run: bool = False) -> dict[str, Removed]:
    """Remove the files of the tables that no snapshot names, older than ``older_than`` (see the
    module text); returns per table what was removed (in a dry run: would be)."""
    warehouse = Path(warehouse).resolve()
    files = storage.of(warehouse)
    cutoff = time.time() - older_than.total_seconds()
    with warehouse_lock(warehouse, purpose="maintenance: orphan files"):
        protected = journal_paths(warehouse)
        owners, referenced, removed = {}, set(), {}
        for name, table in tables(open_catalog(warehouse)):
            named = _named(table)
            referenced |= named
            owners.update({folder: name for folder in (table_folder(files, f) for f in named) if folder})
            removed[name] = _orphan_metadata(files, name, table, cutoff, dry_run)
        for file in _orphan_data(files, owners, referenced | protected, cutoff):
            removed[owners[table_folder(files, file.location)]].add(file)
            _remove(file, files, files.location(), dry_run)
    _log_unknown_metadata(files, removed)
    for name, each in removed.items():
        log.info("%s: %d files (%d bytes) %s", name, each.files, each.bytes, "to remove" if dry_run else "removed")
    return removed


def _named(table) -> set[str]:
    """The data files any snapshot of ``table`` names."""
    return {local_path(uri) for uri in table.inspect.all_files()["file_path"].to_pylist()}


def journal_paths(warehouse: Path) -> set[str]:
    """The locations the pending commits' journals name: move sources and targets, and the files
    their table commits register (a run's output folder is registered where it is)."""
    paths, files = set(), storage.of(warehouse)
    for journal in (warehouse / JOURNAL).glob("*.json"):
        entry = json.loads(journal.read_text(encoding="utf-8"))
        for move in entry["moves"]:
            paths |= {move["source"], files.location(move["target"])}
        paths |= {files.location(relative) for table in entry["tables"] for relative in table["files"]}
    return paths


def table_folder(files: storage.Storage, location: str) -> str | None:
    """The table's own folder (relative to the warehouse) a file of ``changes/``, ``current/`` or
    ``metadata/`` is in, by :data:`TABLE_DEPTH`; None for any other file."""
    relative = files.relative(location)
    if relative is None:
        return None
    parts = layout_path(relative).split("/")
    depth = TABLE_DEPTH.get(parts[0])
    return "/".join(parts[:depth]) if depth and len(parts) > depth else None


def _orphan_data(files: storage.Storage, owners: dict[str, str], kept: set[str],
                 cutoff: float) -> Iterator[storage.StoredFile]:
    """The Parquet files of the tables' folders that ``kept`` lacks, modified before ``cutoff``;
    files of folders no table has files in are logged and left."""
    unknown = set()
    for area in [*TABLE_DEPTH, DATA_FOLDER]:
        for file in files.files(area):
            folder = table_folder(files, file.location)
            if (folder is None or not file.location.endswith(".parquet") or file.location in kept
                    or file.mtime >= cutoff):
                continue
            if folder in owners:
                yield file
            elif folder not in unknown:
                unknown.add(folder)
                log.warning("%s: no table of the catalog has files there; its files are left alone", folder)


def _orphan_metadata(files: storage.Storage, name: str, table, cutoff: float, dry_run: bool) -> Removed:
    """The files of ``table``'s Iceberg metadata folder its metadata no longer names (manifest
    lists and manifests of expired snapshots, metadata files beyond its metadata log), modified
    before ``cutoff``, removed. A table whose metadata is not under the warehouse's ``_iceberg/``
    is left alone."""
    removed = Removed()
    folder = local_path(table.metadata.location).rstrip("/") + "/metadata"
    relative = files.relative(folder)
    if relative is None or not relative.startswith(f"{FOLDER}/"):
        log.warning("%s: its metadata is in %s, outside the warehouse: left alone", name, folder)
        return removed
    named = metadata_files(table)
    for file in files.files(relative):
        if file.location not in named and file.mtime < cutoff:
            removed.add(file)
            _remove(file, files, folder, dry_run)
    return removed


def metadata_files(table) -> set[str]:
    """Every metadata file ``table``'s current metadata names: itself, the earlier metadata files
    of its log, the manifest list and the manifests of every snapshot, statistics files."""
    metadata = table.metadata
    uris = {table.metadata_location, *(entry.metadata_file for entry in metadata.metadata_log)}
    uris |= {snapshot.manifest_list for snapshot in metadata.snapshots}
    uris |= set(table.inspect.all_manifests()["path"].to_pylist())
    uris |= {each.statistics_path for each in metadata.statistics + metadata.partition_statistics}
    return {local_path(uri) for uri in uris}


def _log_unknown_metadata(files: storage.Storage, removed: dict[str, Removed]) -> None:
    """Log the table folders of ``_iceberg/`` that belong to no table of the catalog (left alone)."""
    known = {tuple(name.split(".", 1)) for name in removed}
    folders = {tuple(files.relative(file.location).split("/")[1:3]) for file in files.files(FOLDER)}
    for namespace, table in sorted(folder for folder in folders if len(folder) == 2):
        if (name_of(namespace), name_of(table)) not in known and (namespace, table) not in known:
            log.warning("%s/%s/%s: Iceberg metadata of no table of the catalog; left alone", FOLDER, namespace, table)


def _remove(file: storage.StoredFile, files: storage.Storage, root: str, dry_run: bool) -> None:
    """Remove ``file`` and, in a local warehouse, the folders it leaves empty, up to ``root``
    (kept; an object store has no folders)."""
    if dry_run:
        return
    files.delete(file.location)
    if not files.is_local:
        return
    for folder in Path(file.location).parents:
        if folder == Path(root) or not folder.is_relative_to(root) or any(folder.iterdir()):
            break
        folder.rmdir()


# -- 3. abandoned runs ---------------------------------------------------------


def remove_abandoned_runs(warehouse: Path, older_than: timedelta = ORPHAN_AGE, dry_run: bool = False) -> Removed:
    """Remove the work areas of runs never published, whose newest file is older than
    ``older_than`` (see the module text); returns what was removed (in a dry run: would be)."""
    warehouse = Path(warehouse).resolve()
    files = storage.of(warehouse)
    cutoff = time.time() - older_than.total_seconds()
    removed = Removed()
    with warehouse_lock(warehouse, purpose="maintenance: abandoned runs"):
        pending = {journal.stem for journal in (warehouse / JOURNAL).glob("*.json")}
        for run_id, run_files in sorted(_run_areas(files, warehouse).items()):
            if run_id in pending or max(file.mtime for file in run_files) >= cutoff:
                continue
            log.info("run %s: its work area was left behind; %s", run_id, "to remove" if dry_run else "removed")
            for file in run_files:
                removed.add(file)
            if not dry_run:
                storage.remove(files.location(f"{RUNS_FOLDER}/{run_id}"))
                shutil.rmtree(warehouse / RUNS_FOLDER / run_id, ignore_errors=True)
        removed.merge(_remove_unnamed_outputs(warehouse, files, cutoff, dry_run))
    return removed


def _remove_unnamed_outputs(warehouse: Path, files: storage.Storage, cutoff: float, dry_run: bool) -> Removed:
    """Remove the output folders (``data/<output>/``) of which no snapshot of any table names a
    file, nor a pending commit's journal, whose newest file is older than ``cutoff``: a run's
    attempt that failed or was left before its commit (or one every file of which later runs
    replaced and expired)."""
    removed = Removed()
    outputs: dict[str, list[storage.StoredFile]] = {}
    for file in files.files(DATA_FOLDER):
        folder = "/".join(files.relative(file.location).split("/")[:2])
        outputs.setdefault(folder, []).append(file)
    if not outputs:
        return removed
    named = journal_paths(warehouse)
    for _, table in tables(open_catalog(warehouse)):
        named |= _named(table)
    for folder, output_files in sorted(outputs.items()):
        if not is_output_folder(folder) or max(file.mtime for file in output_files) >= cutoff:
            continue
        if any(file.location in named for file in output_files):
            continue
        log.info("%s: no table names its files; %s", folder, "to remove" if dry_run else "removed")
        for file in output_files:
            removed.add(file)
        if not dry_run:
            storage.remove(files.location(folder))
    return removed


def _run_areas(files: storage.Storage, warehouse: Path) -> dict[str, list[storage.StoredFile]]:
    """The files of each run's work area (``_runs/<run id>/``), in the storage and in the state
    folder (the same folder for a local warehouse), by run id."""
    found = {file.location: file for file in files.files(RUNS_FOLDER)}
    found.update({str(path): storage.StoredFile(str(path), path.stat().st_mtime, path.stat().st_size)
                  for path in (warehouse / RUNS_FOLDER).rglob("*") if path.is_file()})
    areas: dict[str, list[storage.StoredFile]] = {}
    for location, file in found.items():
        run_id = _run_of(location, files.location(RUNS_FOLDER), str(warehouse / RUNS_FOLDER))
        if run_id is not None and run_id != INFLATED_FOLDER:
            areas.setdefault(run_id, []).append(file)
    return areas


def _run_of(location: str, *bases: str) -> str | None:
    for base in bases:
        if location.startswith(base + "/"):
            return location[len(base) + 1:].split("/", 1)[0]
    return None


# -- 4. staged binlog files ---------------------------------------------------


def prune_staged(staging_dir: Path, warehouse: Path, dry_run: bool = False) -> dict[str, Removed]:
    """Remove the staged binlog files whose whole content is committed; returns per staging
    folder what was removed (in a dry run: would be).

    ``staging_dir`` is one source's staging folder (it holds ``_staged.json``) or a folder of
    them (the DAG's, one per source). A folder belongs to the stream whose checkpoint file is
    staged in it, uncompressed, with the identity the stream recorded when it read the file
    (:mod:`binlog_codec.file_identity`: the server and the file's first bytes, not its name); a
    folder that matches no stream, or more than one, is left alone and logged (as is one whose
    checkpoint file is staged only as a compressed copy). Its files before the checkpoint's
    file in log order, of the same base name, hold only committed transactions: a run never
    reads them again (it goes on inside the checkpoint's file, which is kept: it may grow,
    then in the files after it). They are removed and marked pruned in ``_staged.json``
    (:func:`stage.staging.prune`); a backfill that needs one stages it again."""
    from stage.staging import MANIFEST, prune

    staging_dir = Path(staging_dir)
    folders = [staging_dir] if (staging_dir / MANIFEST).exists() else sorted(
        path.parent for path in staging_dir.glob(f"*/{MANIFEST}"))
    pruned = {}
    with warehouse_lock(warehouse, purpose="maintenance: staged files"):  # the checkpoint holds still
        checkpoint = read_checkpoint(Path(warehouse))
        for folder in folders:
            stream = stream_of_folder(folder, checkpoint)
            if stream is None:
                continue
            pruned[str(folder)] = removed = Removed()
            for path in committed_files(folder, checkpoint[stream]["file"]):
                removed.add(storage.StoredFile(str(path), 0.0, path.stat().st_size))
            if not dry_run:
                prune(folder, [Path(path).name for path in removed.paths])
            log.info("%s (stream %s, at %s): %d staged files (%d bytes) %s", folder, stream, checkpoint[stream]["file"],
                     removed.files, removed.bytes, "to remove" if dry_run else "removed")
    return pruned


def stream_of_folder(folder: Path, checkpoint: dict) -> str | None:
    """The one stream of ``checkpoint`` whose checkpoint file is staged in ``folder`` as the very
    file the stream read; None (logged) when no stream or several are."""
    from binlog_codec.file_identity import FileIdentity, same_file

    matches = []
    for stream, entry in checkpoint.items():
        identity = (entry.get("files") or {}).get(entry.get("file"), {}).get("identity")
        staged = folder / entry.get("file", "")
        if identity and staged.is_file() and same_file(FileIdentity.from_json(identity), staged):
            matches.append(stream)
    if len(matches) != 1:
        log.warning("%s: %s; nothing pruned there", folder, "staged files of several streams " + ", ".join(matches)
                    if matches else "no stream's checkpoint file is staged there")
        return None
    return matches[0]


def committed_files(folder: Path, checkpoint_file: str) -> list[Path]:
    """The binlog files in ``folder`` (or compressed copies) of ``checkpoint_file``'s base name
    before it in log order."""
    base, number, _ = log_order(checkpoint_file)
    files = []
    for path in sorted(folder.iterdir()):
        name = binlog_name_of(path.name)
        if name and path.is_file() and log_order(name)[0] == base and log_order(name)[1] < number:
            files.append(path)
    return files


# -- reporting and the command line ---------------------------------------------


def report_lines(expired: dict[str, int], removed: dict[str, dict], pruned: dict[str, dict],
                 dry_run: bool = False, abandoned: dict | None = None) -> list[str]:
    """One line per table (snapshots expired, files removed), one for the abandoned runs' work
    areas, one per staging folder, and a total; ``removed``, ``abandoned`` and ``pruned`` as
    :meth:`Removed.summary`."""
    verb = "to expire" if dry_run else "expired"
    gone = "to remove" if dry_run else "removed"
    lines = [f"{name}: {expired.get(name, 0)} snapshots {verb}, {removed.get(name, {}).get('files', 0)} files {gone} "
             f"({removed.get(name, {}).get('bytes', 0)} bytes)" for name in sorted(set(expired) | set(removed))]
    files = list(removed.values())
    if abandoned and abandoned["files"]:
        lines.append(f"abandoned runs: {abandoned['files']} files {gone} ({abandoned['bytes']} bytes)")
        files.append(abandoned)
    lines += [f"staged {folder}: {each['files']} binlog files {gone} ({each['bytes']} bytes)"
              for folder, each in sorted(pruned.items())]
    total = (f"total: {sum(expired.values())} snapshots {verb}, {sum(r['files'] for r in files)} files "
             f"{gone} ({sum(r['bytes'] for r in files)} bytes)")
    if pruned:
        total += (f", {sum(p['files'] for p in pruned.values())} staged files {gone} "
                  f"({sum(p['bytes'] for p in pruned.values())} bytes)")
    return lines + [total + (" (dry run: nothing changed)" if dry_run else "")]


def run(warehouse: Path, staging: Path | None = None, retention: timedelta = RETENTION, keep_last: int = KEEP_LAST,
        orphan_age: timedelta = ORPHAN_AGE, dry_run: bool = False) -> list[str]:
    """The four steps in order (the staged files only with ``staging``); returns the report lines."""
    expired = expire_snapshots(warehouse, retention, keep_last, dry_run)
    removed = {name: each.summary() for name, each in remove_orphan_files(warehouse, orphan_age, dry_run).items()}
    abandoned = remove_abandoned_runs(warehouse, orphan_age, dry_run).summary()
    pruned = {} if staging is None else {
        folder: each.summary() for folder, each in prune_staged(staging, warehouse, dry_run).items()}
    return report_lines(expired, removed, pruned, dry_run, abandoned)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m warehouse.maintenance", description=__doc__.split("\n\n")[0])
    storage.add_arguments(parser, positional=True)
    parser.add_argument("--staging", type=Path, help="a staging folder (or a folder of them) to prune")
    parser.add_argument("--retention-days", type=float, default=RETENTION.days,
                        help=f"expire snapshots older than this (default {RETENTION.days})")
    parser.add_argument("--keep-last", type=int, default=KEEP_LAST,
                        help=f"keep at least this many newest snapshots per table (default {KEEP_LAST})")
    parser.add_argument("--orphan-age-hours", type=float, default=ORPHAN_AGE.total_seconds() / 3600,
                        help="remove unreferenced files only when older than this (default 24)")
    parser.add_argument("--dry-run", action="store_true", help="only report what would be removed")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    root = storage.state_folder(args.warehouse, args.state)
    if not (root / FOLDER).is_dir():
        parser.error(f"{args.warehouse}: no Iceberg catalog in {root / FOLDER}: not a warehouse")
    lines = run(Path(storage.from_arguments(args)), args.staging, timedelta(days=args.retention_days), args.keep_last,
                timedelta(hours=args.orphan_age_hours), args.dry_run)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
