"""What each task of the ``binlake_maintenance`` DAG does, without Airflow.

The DAG (``dags/binlake_maintenance.py``) only wires these functions together;
each can be called from a plain Python process or a test. The warehouse and
the staging folder are the configured ones (:mod:`airflow_tasks.settings`); the work
is :mod:`warehouse.maintenance`'s. What the tasks hand to each other is small
JSON: counts per table and per staging folder.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from airflow_tasks import settings
from warehouse import maintenance

log = logging.getLogger(__name__)


def warehouse() -> str:
    """The configured warehouse folder (:func:`airflow_tasks.settings.warehouse_path`), resolved."""
    return str(settings.warehouse_path().expanduser().resolve())


def expire_snapshots(retention_days: float, keep_last: int, dry_run: bool) -> dict[str, int]:
    """Snapshots expired per table (:func:`warehouse.maintenance.expire_snapshots`)."""
    return maintenance.expire_snapshots(warehouse(), timedelta(days=retention_days), keep_last, dry_run)


def remove_orphan_files(orphan_age_hours: float, dry_run: bool) -> dict[str, dict]:
    """``{"files", "bytes"}`` removed per table (:func:`warehouse.maintenance.remove_orphan_files`)."""
    removed = maintenance.remove_orphan_files(warehouse(), timedelta(hours=orphan_age_hours), dry_run)
    return {name: each.summary() for name, each in removed.items()}


def remove_abandoned_runs(orphan_age_hours: float, dry_run: bool) -> dict:
    """``{"files", "bytes"}`` of the work areas of runs never published
    (:func:`warehouse.maintenance.remove_abandoned_runs`)."""
    return maintenance.remove_abandoned_runs(warehouse(), timedelta(hours=orphan_age_hours), dry_run).summary()


def prune_staged(dry_run: bool) -> dict[str, dict]:
    """``{"files", "bytes"}`` removed per staging folder of the configured staging folder
    (:func:`airflow_tasks.settings.staging_path`, one folder per source; none when it does not exist)."""
    staging = settings.staging_path().expanduser().resolve()
    if not staging.is_dir():
        log.info("%s: no staging folder, nothing to prune", staging)
        return {}
    return {folder: each.summary() for folder, each in maintenance.prune_staged(staging, warehouse(), dry_run).items()}


def report(expired: dict[str, int], removed: dict[str, dict], abandoned: dict, pruned: dict[str, dict],
           dry_run: bool) -> list[str]:
    """Logs one line per table, for the abandoned runs, per staging folder and a total
    (:func:`warehouse.maintenance.report_lines`)."""
    lines = maintenance.report_lines(expired, removed, pruned, dry_run, abandoned)
    for line in lines:
        log.info("%s", line)
    return lines
