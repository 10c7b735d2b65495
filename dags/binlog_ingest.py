"""binlog_ingest: binlog objects from S3 (or a folder) into the binlake warehouse.

One DAG run: discover → stage → decode_and_materialize → validate → publish →
report. The work itself is in :mod:`airflow_tasks.ingest`; this file is the
schedule, the parameters and the wiring.

- **Schedule.** Hourly data intervals (``CronDataIntervalTimetable``), no
  catch-up, one active run at a time: runs of a source share its checkpoint
  and must not overlap.
- **Input.** Everything of the source after the warehouse's checkpoint. When
  there is nothing new, ``stage`` and the Spark tasks are skipped and the run
  succeeds.
- **Backfill.** A backfill run (``airflow backfill create``, the UI's backfill),
  or any run with the ``rebuild`` parameter on, rebuilds instead the
  ``changes/`` partitions of the UTC days its data interval touches from the
  binlogs whose transactions committed on them (:mod:`spark_jobs.backfill`):
  each day's folder is replaced whole, ``current/`` and the checkpoint stay.
- **Retries.** Every task is safe to run again (see :mod:`airflow_tasks.ingest`),
  so each gets retries after a short delay. A run whose data fails validation
  fails at once and publishes nothing.
- **Parameters** (trigger form, or ``--conf``): ``source_uri``
  (``s3://bucket/prefix`` read with the ``binlake_s3`` connection, or
  ``file:///folder``; empty: the ``binlake_source_uri`` Variable),
  ``warehouse_uri`` (empty: the ``binlake_warehouse_uri`` Variable, see
  :mod:`airflow_tasks.settings`), ``spark_master`` (empty: ``$SPARK_MASTER``, else
  ``local[*]``), ``stream`` (the name that owns the checkpoint; empty: the
  source URI; point a stream at a new primary's binlogs to go on by GTID), and
  the decisions a refused run may ask for, each for that run only and kept in
  its run record: ``accept_gap`` (go on over missing files or GTIDs),
  ``accept_new_series`` (take a replaced log, after ``RESET MASTER`` or a
  restore, as a new one) and ``accept_type_change`` (tables whose type change
  binlake cannot convert as the server did: the values from before it are
  unknown in ``current``).
- **Assets.** ``publish`` emits one asset event per table the run published
  row changes of, through the asset alias ``binlake_tables``, on the table's
  Asset ``binlake://localhost/<warehouse folder>/<database>/<table>``
  (``binlake://<bucket>/<prefix>/...`` for a warehouse in S3; name and URI
  alike, :func:`airflow_tasks.ingest.table_asset`); the event's extra has
  ``database``, ``table``, ``rows``, ``run_id`` and ``warehouse``. A DAG
  scheduled on one such Asset runs after each run that changed the table; one
  scheduled on ``AssetAlias("binlake_tables")`` after each run that changed
  any (``dags/binlake_downstream_example.py``). A run with nothing new emits
  no event.
- **Refusals.** A source that does not continue the stream (a gap, a replaced
  file, reused GTIDs, files another stream has read) fails the run at once,
  without retries and with nothing published; the log says what is wrong and
  which decision would go on (:mod:`spark_jobs.streams`).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from airflow.sdk import AssetAlias, CronDataIntervalTimetable, Param, Variable, chain, dag, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

SOURCE_VARIABLE = "binlake_source_uri"
BACKFILL_RUN = "backfill"  # the run type of airflow backfill create and the UI's backfill
TABLES = AssetAlias("binlake_tables")  # an asset event per table a run published row changes of

PARAMS = {
    "source_uri": Param(
        None,
        type=["null", "string"],
        pattern=r"^$|^(s3://[^/]+|file:///).*",
        description="s3://bucket/prefix or file:///folder of binlog files; empty: the Variable binlake_source_uri",
    ),
    "warehouse_uri": Param(
        None,
        type=["null", "string"],
        description="the warehouse: s3://bucket/prefix (with the connection binlake_s3), or a folder "
        "(file:///folder or a path); empty: the Variable binlake_warehouse_uri, else $AIRFLOW_HOME/binlake/warehouse",
    ),
    "rebuild": Param(
        False,
        type="boolean",
        description="rebuild the changes/ of the days the data interval touches (backfill runs always do)",
    ),
    "stream": Param(
        None,
        type=["null", "string"],
        description="name of the stream that owns the checkpoint; empty: the source URI. Point a stream at "
        "another source (a new primary's binlogs) to go on by GTID",
    ),
    "accept_gap": Param(
        False,
        type="boolean",
        description="this run only: go on over missing binlog files or GTIDs (a deliberate purge); kept in the "
        "run record",
    ),
    "accept_new_series": Param(
        False,
        type="boolean",
        description="this run only: take a replaced log (RESET MASTER, a restore) as a new series, read from its "
        "first file; kept in the run record",
    ),
    "accept_type_change": Param(
        [],
        type="array",
        items={"type": "string"},
        description="this run only: tables (db.table) whose type changes binlake cannot convert as the server "
        "did are taken without the conversion: the values from before the change are unknown in current (null, "
        "named in _incomplete_columns); kept in the run record",
    ),
    "spark_master": Param(
        None,
        type=["null", "string"],
        description="Spark master URL, e.g. local[2] or spark://host:7077; empty: $SPARK_MASTER, else local[*]",
    ),
}


@dag(
    dag_id="binlog_ingest",
    schedule=CronDataIntervalTimetable("0 * * * *", timezone="UTC"),
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    params=PARAMS,
    default_args={"retries": 2, "retry_delay": timedelta(seconds=30)},
    tags=["binlake"],
    description="Binlog files from S3 or a folder into the binlake warehouse: new row changes after the "
    "checkpoint, validated, published atomically; an asset event per changed table",
    doc_md=__doc__,
)
def binlog_ingest():
    @task
    def discover() -> dict:
        """Resolves the run's source, warehouse and Spark master; lists what is new after the checkpoint."""
        from airflow_tasks import ingest

        context = get_current_context()
        params = context["params"]
        source = params["source_uri"] or Variable.get(SOURCE_VARIABLE, default="")
        if not source:
            raise AirflowFailException(f"no source: set the source_uri parameter or the Variable {SOURCE_VARIABLE}")
        warehouse = ingest.warehouse_of(params["warehouse_uri"])
        rebuild = None
        run_type = context["dag_run"].run_type
        if params.get("rebuild") or getattr(run_type, "value", run_type) == BACKFILL_RUN:
            start, end = context.get("data_interval_start"), context.get("data_interval_end")
            if start is None or end is None:
                raise AirflowFailException("rebuild needs a data interval: the days to rebuild are those it touches; "
                                           "trigger the run with a logical date, or use airflow backfill create")
            rebuild = (start.isoformat(), end.isoformat())
        accept = [choice for choice, param in (("gap", "accept_gap"), ("new-series", "accept_new_series"))
                  if params.get(param)]
        accept += [f"type-change:{table}" for table in params.get("accept_type_change") or []]
        discovered = ingest.discover(source, warehouse, rebuild=rebuild, stream=params.get("stream") or None)
        return {**discovered, "spark_master": params["spark_master"], "accept": accept}

    @task
    def stage(discovered: dict) -> dict:
        """Downloads and verifies the new objects into the source's staging folder."""
        from airflow_tasks import ingest
        from stage.staging import StagingConflict

        if not discovered["pending"]:
            raise AirflowSkipException(f"nothing to do in {discovered['source']}")
        names = [obj["name"] for obj in discovered["pending"]] if discovered["rebuild"] else None
        try:
            return ingest.stage_source(discovered["source"], discovered["warehouse"], names,
                                       discovered["stream"], tuple(discovered["accept"]))
        except StagingConflict as refused:
            raise AirflowFailException(f"refused, nothing published: {refused}") from refused

    @task
    def decode_and_materialize(discovered: dict, data_interval_start=None, data_interval_end=None) -> dict:
        """Spark: the staged files after the checkpoint (or the days to rebuild) into the run's work folder."""
        from airflow_tasks import ingest
        from spark_jobs.materialize import SchemaConflict
        from spark_jobs.positions import ContinuityError

        scheduled = (data_interval_start.isoformat(), data_interval_end.isoformat()) if data_interval_start else None
        interval = discovered["rebuild"] or scheduled  # manual and API runs may have no data interval
        try:
            return ingest.decode_and_materialize(
                discovered["source"], discovered["warehouse"], discovered["spark_master"],
                interval=tuple(interval) if interval else None, rebuild=bool(discovered["rebuild"]),
                stream=discovered["stream"],
                accept=tuple(discovered["accept"]),
            )
        except (ContinuityError, SchemaConflict) as refused:
            raise AirflowFailException(f"refused, nothing published: {refused}") from refused

    @task
    def validate(discovered: dict, prepared: dict) -> dict | None:
        """Great Expectations over the run; failed expectations fail the run without retries."""
        from airflow_tasks import ingest
        from spark_jobs.ingest import QualityFailed

        try:
            return ingest.validate(discovered["warehouse"], prepared["run_id"], discovered["spark_master"])
        except QualityFailed as failed:
            raise AirflowFailException(str(failed)) from failed

    @task(outlets=[TABLES])
    def publish(discovered: dict, prepared: dict, outlet_events=None) -> dict | None:
        """The atomic commit of the run's data and the new checkpoint; an asset event per changed table."""
        from airflow_tasks import ingest

        published = ingest.publish_run(discovered["warehouse"], prepared["run_id"])
        ingest.announce_tables(outlet_events[TABLES], discovered["warehouse"], prepared)
        return published

    @task(trigger_rule="none_failed")
    def report(discovered: dict, prepared: dict | None, quality: dict | None) -> dict:
        """Rows per table, quality and Data Docs, checkpoint; "nothing new" when stage was skipped."""
        from airflow_tasks import ingest

        return ingest.report(discovered["source"], discovered["warehouse"], prepared, quality, discovered["stream"])

    discovered = discover()
    staged = stage(discovered)
    prepared = decode_and_materialize(discovered)
    quality = validate(discovered, prepared)
    published = publish(discovered, prepared)
    reported = report(discovered, prepared, quality)
    chain(discovered, staged, prepared, quality, published, reported)


binlog_ingest()
