"""backup_bootstrap: start a warehouse from a backup image, at the image's binlog position.

One DAG run, triggered by hand (no schedule): stage_image → bootstrap → report.
The work itself is in :mod:`airflow_tasks.bootstrap`; this file is the
parameters and the wiring.

- **Input.** A backup image written by ``binlog-codec backup create``: its
  tables' rows become ``current/`` (``_op = 'r'``), its CREATE TABLE
  statements ``metadata/table_schemas``, and its validity point the checkpoint
  of the binlog source, so that ``binlog_ingest`` goes on from there.
- **Once per source.** A warehouse that already has a checkpoint for the source
  is refused: the run fails without retries and changes nothing.
- **Parameters** (trigger form, or ``--conf``): ``image_uri``
  (``s3://bucket/prefix/name`` read with the ``binlake_s3`` connection, or
  ``file:///folder/name``), ``source_uri`` (the binlog source the image's
  position belongs to, exactly as ``binlog_ingest`` is given it: it becomes
  the checkpoint's key), ``warehouse_uri`` (empty: the
  ``binlake_warehouse_uri`` Variable, see :mod:`airflow_tasks.settings`) and
  ``spark_master`` (empty: ``$SPARK_MASTER``, else ``local[*]``).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from airflow.sdk import Param, chain, dag, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException

REQUIRED = ("image_uri", "source_uri")

PARAMS = {
    "image_uri": Param(
        "", type="string", pattern=r"^$|^(s3://[^/]+/|file:///).+",
        description="the backup image: s3://bucket/prefix/name or file:///folder/name",
    ),
    "source_uri": Param(
        "", type="string", pattern=r"^$|^(s3://[^/]+|file:///).*",
        description="the binlog source the image's position belongs to (s3://bucket/prefix or file:///folder), "
        "as binlog_ingest is given it",
    ),
    "warehouse_uri": Param(
        "", type="string",
        description="warehouse folder (file:///folder or a path); empty: the Variable binlake_warehouse_uri, "
        "else $AIRFLOW_HOME/binlake/warehouse",
    ),
    "spark_master": Param(
        "", type="string",
        description="Spark master URL, e.g. local[2] or spark://host:7077; empty: $SPARK_MASTER, else local[*]",
    ),
}


@dag(
    dag_id="backup_bootstrap",
    schedule=None,
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    params=PARAMS,
    default_args={"retries": 2, "retry_delay": timedelta(seconds=30)},
    tags=["binlake"],
    description="Start a warehouse from a backup image: its rows into current/, its binlog position the "
    "checkpoint binlog_ingest goes on from",
    doc_md=__doc__,
)
def backup_bootstrap():
    @task
    def stage_image() -> dict:
        """Checks that the image and the source are given; downloads and verifies the image."""
        from airflow_tasks import bootstrap

        params = get_current_context()["params"]
        missing = [name for name in REQUIRED if not params[name]]
        if missing:
            raise AirflowFailException(f"parameters {', '.join(missing)} are required")
        return bootstrap.stage_image(params["image_uri"])

    @task
    def bootstrap(staged: dict) -> dict:
        """Spark: the image's rows into current/, its table versions and the checkpoint of its position."""
        from airflow_tasks.bootstrap import run_bootstrap
        from airflow_tasks.ingest import warehouse_of
        from spark_jobs.bootstrap import AlreadyBootstrapped

        params = get_current_context()["params"]
        try:
            return run_bootstrap(
                staged["path"], warehouse_of(params["warehouse_uri"]), params["source_uri"],
                params["spark_master"],
            )
        except AlreadyBootstrapped as refused:
            raise AirflowFailException(str(refused)) from refused

    @task
    def report(done: dict) -> list[str]:
        """Rows per table and the source's checkpoint."""
        from airflow_tasks import bootstrap, ingest

        params = get_current_context()["params"]
        return bootstrap.report(
            params["image_uri"], params["source_uri"], ingest.warehouse_of(params["warehouse_uri"]), done
        )

    staged = stage_image()
    done = bootstrap(staged)
    chain(staged, done, report(done))


backup_bootstrap()
