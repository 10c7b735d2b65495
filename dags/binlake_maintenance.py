"""binlake_maintenance: old snapshots expired, unreferenced files removed, committed staged binlogs pruned.

One DAG run a day: expire_snapshots → remove_orphan_files →
remove_abandoned_runs → prune_staged → report. The work itself is in :mod:`warehouse.maintenance` (through
:mod:`airflow_tasks.maintenance`); this file is the schedule, the parameters
and the wiring.

- **Schedule.** Daily at 03:30 UTC, no catch-up, one run at a time. Each step
  holds the warehouse lock, so it waits for an ingest commit and none lands
  while it looks.
- **Steps.** In every table of the catalog, the snapshots older than
  ``retention_days`` go, except the newest ``keep_last`` and the current one;
  then the Parquet files and Iceberg metadata files no snapshot names any
  more, older than ``orphan_age_hours``; then the work areas (``_runs/<run
  id>/``) of runs never published, untouched for as long; then the binlog
  files of the staging folder that come before their stream's checkpoint file.
- **Parameters** (trigger form, or ``--conf``): ``retention_days`` (7),
  ``keep_last`` (5), ``orphan_age_hours`` (24), ``dry_run`` (off: on, the
  run only reports what it would remove). The warehouse and the staging
  folder are the configured ones (:mod:`airflow_tasks.settings`).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from airflow.sdk import CronTriggerTimetable, Param, chain, dag, get_current_context, task

PARAMS = {
    "retention_days": Param(7, type="number", minimum=0,
                            description="expire snapshots older than this many days"),
    "keep_last": Param(5, type="integer", minimum=1,
                       description="keep at least this many newest snapshots of every table"),
    "orphan_age_hours": Param(24, type="number", minimum=1,
                              description="remove unreferenced files only when older than this many hours"),
    "dry_run": Param(False, type="boolean", description="only report what would be expired and removed"),
}


@dag(
    dag_id="binlake_maintenance",
    schedule=CronTriggerTimetable("30 3 * * *", timezone="UTC"),
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    params=PARAMS,
    default_args={"retries": 1, "retry_delay": timedelta(minutes=5)},
    tags=["binlake"],
    description="Daily: expire old snapshots, remove files no snapshot names, prune staged binlogs the "
    "checkpoint has passed",
    doc_md=__doc__,
)
def binlake_maintenance():
    @task
    def expire_snapshots() -> dict:
        """Expires the snapshots older than the retention, keeping the newest keep_last of every table."""
        from airflow_tasks import maintenance

        params = get_current_context()["params"]
        return maintenance.expire_snapshots(params["retention_days"], params["keep_last"], params["dry_run"])

    @task
    def remove_orphan_files() -> dict:
        """Removes the data and metadata files no snapshot names, older than the orphan age."""
        from airflow_tasks import maintenance

        params = get_current_context()["params"]
        return maintenance.remove_orphan_files(params["orphan_age_hours"], params["dry_run"])

    @task
    def remove_abandoned_runs() -> dict:
        """Removes the work areas of runs never published (failed, or left), older than the orphan age."""
        from airflow_tasks import maintenance

        params = get_current_context()["params"]
        return maintenance.remove_abandoned_runs(params["orphan_age_hours"], params["dry_run"])

    @task
    def prune_staged() -> dict:
        """Removes the staged binlog files before their stream's checkpoint file."""
        from airflow_tasks import maintenance

        return maintenance.prune_staged(get_current_context()["params"]["dry_run"])

    @task
    def report(expired: dict, removed: dict, abandoned: dict, pruned: dict) -> list[str]:
        """One line per table, for the abandoned runs and per staging folder, and a total."""
        from airflow_tasks import maintenance

        return maintenance.report(expired, removed, abandoned, pruned, get_current_context()["params"]["dry_run"])

    expired = expire_snapshots()
    removed = remove_orphan_files()
    abandoned = remove_abandoned_runs()
    pruned = prune_staged()
    chain(expired, removed, abandoned, pruned, report(expired, removed, abandoned, pruned))


binlake_maintenance()
