"""What each task of the ``binlog_ingest`` DAG does, without Airflow.

The DAG (``dags/binlog_ingest.py``) only wires these functions together; each
one can be called from a plain Python process or a test. A DAG run goes:

1. :func:`discover` — which binlog objects of the source come after the
   warehouse's checkpoint (the checkpoint is kept per stream,
   :mod:`spark_jobs.streams`; a stream is named after its source URI unless
   the run names one);
2. :func:`stage_source` — those objects, downloaded and verified into the
   source's own staging folder (:func:`staging_dir_of`);
3. :func:`decode_and_materialize` — Spark decodes the staged files and folds
   the row images into the run's work folder in the warehouse (nothing is
   published yet);
4. :func:`validate` — Great Expectations over the run's output;
5. :func:`publish` — the run's data, its run record and the new checkpoint in
   one atomic commit;
6. :func:`report` — one line per table, the quality outcome and where the Data
   Docs are.

The ``publish`` task also tells Airflow which tables changed: one asset event
per table the run published row changes of (:func:`announce_tables`), on the
Asset :func:`table_asset` names, so that downstream DAGs can be scheduled on a
table or on any of them.

Every step can be repeated after a failure: staging resumes and verifies what
is already there, the run id is derived from the input, ``prepare`` rebuilds
the run's work folder, and publishing a published run does nothing. What the
steps hand to each other is small JSON (run id, file names, counts), never
data: the data stays in the staging folder and the warehouse.

Spark starts and stops inside each step that needs it (:func:`spark_session`),
so no task leaves a JVM behind.
"""

from __future__ import annotations

import hashlib
import logging
import re
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Iterator
from urllib.parse import quote, urlparse

from airflow_tasks import settings
from spark_jobs import backfill, ingest
from spark_jobs.expectations import verdict
from spark_jobs.streams import default_stream, position_of, position_text
from stage.object_store import ObjectStore, open_store
from stage.staging import pending_objects, stage, stage_named
from warehouse import publish, storage
from warehouse.lock import warehouse_lock

log = logging.getLogger(__name__)


def open_source(source_uri: str, conn_id: str = settings.S3_CONNECTION_ID) -> ObjectStore:
    """The object store behind ``source_uri``: ``s3://bucket/prefix`` with the keys and endpoint of
    the Airflow connection ``conn_id``, or ``file:///folder``."""
    scheme = urlparse(source_uri).scheme
    if scheme == "s3":
        from airflow_tasks.hooks import store_for  # reads the Airflow connection: Airflow only when needed

        return store_for(source_uri, conn_id)
    if scheme == "file":
        return open_store(source_uri)
    raise ValueError(f"source {source_uri!r}: expected s3://bucket/prefix or file:///folder")


def warehouse_of(warehouse_uri: str | None) -> Path:
    """The warehouse's state folder (:func:`airflow_tasks.settings.warehouse_root`): of ``warehouse_uri``
    (``s3://bucket/prefix``, ``file:///folder``, a path, or a state folder) when given, else of the
    configured one (:func:`airflow_tasks.settings.warehouse_path`). Every task that reads or writes the
    warehouse starts here: an object-store warehouse's tasks get the S3 settings."""
    return settings.warehouse_root(warehouse_uri) if warehouse_uri else settings.warehouse_path()


def staging_dir_of(source_uri: str) -> Path:
    """The staging folder of one source: under :func:`airflow_tasks.settings.staging_path`, named after the
    source (readable part plus a hash of the whole URI, so two sources never share a folder)."""
    readable = re.sub(r"[^A-Za-z0-9]+", "-", source_uri.split("://", 1)[-1]).strip("-")[:48]
    digest = hashlib.sha256(source_uri.encode()).hexdigest()[:12]
    return settings.staging_path().expanduser().resolve() / f"{readable or 'source'}-{digest}"


def checkpoint_of(warehouse: str | Path, stream: str) -> dict | None:
    """Where the stream's last committed run stopped (``{"file", "position", "gtids", ...}``), None
    before the first."""
    return publish.read_checkpoint(Path(warehouse)).get(stream)


def stream_of(source_uri: str, stream: str | None) -> str:
    """The stream a run follows: the one named, else the source URI's (:func:`spark_jobs.streams.default_stream`)."""
    return stream or default_stream(source_uri)


def discover(
    source_uri: str, warehouse: str | Path, *, rebuild: tuple[str, str] | None = None, stream: str | None = None
) -> dict:
    """Lists the source and picks the binlog objects after the checkpoint; with ``rebuild`` (a
    data interval), the objects holding transactions committed on the days it touches instead
    (:mod:`spark_jobs.backfill`).

    Returns ``{"source", "stream", "warehouse", "checkpoint", "pending": [{"name", "size"}],
    "rebuild"}``; an empty ``pending`` means nothing to do."""
    warehouse = warehouse_of(str(warehouse))
    with warehouse_lock(warehouse, purpose="discover"):  # never while another process commits
        ingest.recover(Path(warehouse))  # a commit a dead run left half done moves the checkpoint
    stream = stream_of(source_uri, stream)
    position = checkpoint_of(warehouse, stream)
    if rebuild is not None:
        return {**_discover_days(source_uri, Path(warehouse), position, rebuild), "stream": stream}
    pending = pending_objects(open_source(source_uri).list(), position)
    if pending:
        log.info("%s: %d binlog objects after the checkpoint %s: %s", source_uri, len(pending), position,
                 ", ".join(obj.name for obj in pending))
    else:
        log.info("%s: nothing new after the checkpoint %s", source_uri, position)
    return {
        "source": source_uri,
        "stream": stream,
        "warehouse": str(warehouse),
        "checkpoint": position,
        "pending": [{"name": obj.name, "size": obj.size} for obj in pending],
        "rebuild": None,
    }


def _discover_days(source_uri: str, warehouse: Path, position: dict | None, interval: tuple[str, str]) -> dict:
    days = backfill.interval_days(*(datetime.fromisoformat(moment) for moment in interval))
    names = backfill.files_of_days(warehouse, days)
    sizes = {obj.name: obj.size for obj in open_source(source_uri).list()}
    log.info("%s: rebuilding %s from %s", source_uri, ", ".join(map(str, days)) or "no day", ", ".join(names) or "no file")
    return {
        "source": source_uri,
        "warehouse": str(warehouse),
        "checkpoint": position,
        "pending": [{"name": name, "size": sizes.get(name)} for name in names],
        "rebuild": list(interval),
    }


def stage_source(
    source_uri: str, warehouse: str | Path, names: list[str] | None = None, stream: str | None = None,
    accept: tuple[str, ...] = (),
) -> dict:
    """Downloads and verifies the objects after the stream's checkpoint into the source's staging
    folder (or the objects ``names``, for a rebuild).

    The checkpoint's own file is staged too (from the store when the folder lacks it),
    because decoding goes on inside it. Returns ``{"staging_dir", "files", "bytes"}``."""
    folder = staging_dir_of(source_uri)
    if names is not None:
        staged = stage_named(open_source(source_uri), folder, names)
    else:
        position = checkpoint_of(warehouse, stream_of(source_uri, stream))
        from_checkpoint_file = None if position is None else {"file": position["file"], "position": 0}
        staged = stage(open_source(source_uri), folder, from_checkpoint_file,
                       replace_rewritten="new-series" in accept)
    log.info("%s: %d files staged in %s", source_uri, len(staged), folder)
    return {"staging_dir": str(folder), "files": [f.name for f in staged], "bytes": sum(f.size for f in staged)}


@contextmanager
def spark_session(spark_master: str | None, step: str) -> Iterator:
    """A Spark session for one step, stopped when the step ends (``spark_master`` None or empty:
    ``$SPARK_MASTER``, else ``local[*]``), with the memory settings of the Airflow connection
    ``binlake_spark`` if there is one. A driver JVM that dies fails the step as
    :class:`spark_jobs.session.SparkFailed`, saying so, never as a data-quality failure."""
    from airflow_tasks.hooks import spark_settings  # reads the Airflow connection
    from spark_jobs.session import SparkFailed, build_session, spark_failure, stop

    spark = build_session(spark_master or None, app_name=f"binlake {step}", conf=spark_settings())
    try:
        yield spark
    except Exception as exc:
        failure = spark_failure(exc)
        if failure is None:
            raise
        raise SparkFailed(failure) from exc
    finally:
        stop(spark)


def decode_and_materialize(
    source_uri: str,
    warehouse: str | Path,
    spark_master: str | None,
    *,
    interval: tuple[str, str] | None = None,
    rebuild: bool = False,
    stream: str | None = None,
    accept: tuple[str, ...] = (),
) -> dict:
    """Decodes the staged files that continue the stream and materializes them into the run's work
    folder (:func:`spark_jobs.ingest.prepare`, with the user's ``accept`` decisions); with
    ``rebuild``, rebuilds the days of the data ``interval`` instead
    (:func:`spark_jobs.backfill.prepare_backfill`). Publishes nothing. A source that does not
    continue the stream raises :class:`~spark_jobs.positions.ContinuityError`.

    Returns ``{"run_id", "inputs", "rows", "bytes", "accepted", "skipped_transactions"}``;
    ``run_id`` is empty when there was nothing to do."""
    folder, warehouse = staging_dir_of(source_uri), warehouse_of(str(warehouse))
    with spark_session(spark_master, "decode") as spark:
        if rebuild:
            start, end = (datetime.fromisoformat(moment) for moment in interval)
            log.info("rebuilding the days of %s to %s from %s", start, end, source_uri)
            result = backfill.prepare_backfill(
                str(folder), str(warehouse), start=start, end=end, spark=spark, source_key=source_uri
            )
        else:
            if interval:
                log.info("data interval %s to %s; input: everything of %s after the checkpoint", *interval, source_uri)
            result = ingest.prepare(str(folder), str(warehouse), spark=spark, source_key=source_uri,
                                    stream=stream_of(source_uri, stream), accept=accept)
    if result.run_id:
        log.info("run %s prepared: %d files, %d row changes", result.run_id, len(result.inputs),
                 sum(result.rows.values()))
    return {
        "run_id": result.run_id,
        "inputs": [{"file": i.name, "start": i.start, "end": result.ends.get(i.name)} for i in result.inputs],
        "rows": result.rows,
        "bytes": result.bytes,
        "accepted": result.accepted,
        "skipped_transactions": result.skipped_transactions,
    }


def validate(warehouse: str | Path, run_id: str, spark_master: str | None) -> dict | None:
    """Great Expectations over a prepared run (:func:`spark_jobs.ingest.validate_run`).

    Returns ``{"run_id", "success", "expectations", "data_docs", "failures"}`` (None when
    ``run_id`` is empty); raises :class:`spark_jobs.ingest.QualityFailed` when an expectation
    failed, so that nothing is published."""
    if not run_id:
        return None
    warehouse = warehouse_of(str(warehouse))
    from spark_jobs.validate import import_in_background

    import_in_background()  # while Spark starts
    with spark_session(spark_master, "validate") as spark:
        outcome = ingest.validate_run(spark, str(warehouse), run_id)
    summary = quality_summary(run_id, outcome, Path(warehouse))
    log.info("run %s: quality %s, %d expectations, Data Docs: %s", run_id,
             verdict(summary["success"], summary["expectations"]), summary["expectations"], summary["data_docs"])
    if not outcome["success"]:
        raise ingest.QualityFailed(run_id, outcome)
    return summary


def quality_summary(run_id: str, outcome: dict, warehouse: Path) -> dict:
    """The small part of a validation outcome worth handing on: success, counts, failures, and the
    Data Docs page (its path in the warehouse made absolute)."""
    docs = outcome.get("data_docs")
    return {
        "run_id": run_id,
        "success": bool(outcome["success"]),
        "expectations": sum(table["expectations"] for table in outcome["tables"]),
        "data_docs": str(warehouse / docs) if docs else None,
        "failures": [f"{t['database']}.{t['table']}: {line}" for t in outcome["tables"] for line in t["failures"]],
    }


def publish_run(warehouse: str | Path, run_id: str) -> dict | None:
    """Commits a prepared, validated run (:func:`spark_jobs.ingest.publish_run`): a no-op for a run
    already published. Returns ``{"run_id", "checkpoint"}`` (None when ``run_id`` is empty)."""
    if not run_id:
        return None
    warehouse = warehouse_of(str(warehouse))
    result = ingest.publish_run(str(warehouse), run_id)
    checkpoint = publish.read_checkpoint(Path(warehouse)).get(result.stream) if result.stream else None
    log.info("run %s published; stream %s now at %s", run_id, result.stream or "(unchanged)", position_text(checkpoint))
    return {"run_id": run_id, "checkpoint": position_of(checkpoint)}


def report(
    source_uri: str, warehouse: str | Path, prepared: dict | None, quality: dict | None, stream: str | None = None
) -> dict:
    """Logs what the run did: per table the row changes, the quality outcome, where the Data Docs and
    the tables are, and the source's checkpoint. Returns the same as a dict."""
    run_id = (prepared or {}).get("run_id") or ""
    summary = {
        "source": source_uri,
        "warehouse": storage.of(warehouse).uri,  # the folder, or the s3:// URI of a warehouse in an object store
        "run_id": run_id,
        "rows": (prepared or {}).get("rows", {}) if run_id else {},
        "quality": quality,
        "stream": stream_of(source_uri, stream),
        "checkpoint": position_of(checkpoint_of(warehouse, stream_of(source_uri, stream))),
    }
    for line in report_lines(summary):
        log.info("%s", line)
    return summary


def report_lines(summary: dict) -> list[str]:
    """The report of :func:`report` as text, one line per fact."""
    if not summary["run_id"]:
        return [f"{summary['source']}: nothing new; stream {summary['stream']} at {position_text(summary['checkpoint'])}"]
    lines = [f"run {summary['run_id']} from {summary['source']} into {summary['warehouse']}"]
    lines += [f"  {table}: {rows} row changes" for table, rows in sorted(summary["rows"].items())]
    quality = summary["quality"]
    if quality is not None:
        lines.append(f"quality: {verdict(quality['success'], quality['expectations'])} "
                     f"({quality['expectations']} expectations); Data Docs: {quality['data_docs']}")
    lines.append(f"stream {summary['stream']} now at {position_text(summary['checkpoint'])}")
    return lines


# ---------------------------------------------------------------- the tables as Airflow Assets

ASSET_SCHEME = "binlake"
ASSET_HOST = "localhost"  # the warehouse is a folder of this machine, as in file://localhost/path


def table_asset_uri(warehouse: str | Path, database: str, table: str) -> str:
    """The URI of one warehouse table's Asset:
    ``binlake://localhost/<warehouse folder>/<database>/<table>``, or for a warehouse in an
    object store ``binlake://<bucket>/<prefix>/<database>/<table>``.

    The folder is the warehouse's absolute path as the DAG resolves it (:func:`warehouse_of`);
    the database and the table are percent-encoded, so they are always the last two segments.
    The ``localhost`` host keeps the URI as written: Airflow shortens ``binlake:///path`` to
    ``binlake:/path``."""
    files = storage.of(warehouse_of(str(warehouse)))
    host, folder = (ASSET_HOST, files.uri) if files.is_local else files.uri.split("://", 1)[1].partition("/")[::2]
    folder = quote("/" + folder.strip("/"), safe="/")
    return f"{ASSET_SCHEME}://{host}{folder}/{quote(database, safe='')}/{quote(table, safe='')}"


def table_asset(warehouse: str | Path, database: str, table: str):
    """The Airflow ``Asset`` of one warehouse table, named by its URI (:func:`table_asset_uri`):
    what ``binlog_ingest`` emits events on, and what a downstream DAG schedules on."""
    from airflow.sdk import Asset

    uri = table_asset_uri(warehouse, database, table)
    return Asset(name=uri, uri=uri)


def published_tables(prepared: dict | None) -> dict[str, int]:
    """``{"db.table": row changes}`` of the tables a prepared run publishes rows of (none when
    the run had nothing to do)."""
    if not prepared or not prepared.get("run_id"):
        return {}
    return {name: rows for name, rows in sorted(prepared.get("rows", {}).items()) if rows > 0}


def announce_tables(events, warehouse: str | Path, prepared: dict | None) -> list[str]:
    """Adds one asset event per table with published row changes to ``events`` (the publish
    task's ``outlet_events[alias]``), its extra saying which table, how many row changes and
    which run; a run that published nothing adds none. Returns the URIs announced."""
    uris = []
    for name, rows in published_tables(prepared).items():
        database, table = name.split(".", 1)
        asset = table_asset(warehouse, database, table)
        events.add(asset, extra={"database": database, "table": table, "rows": rows,
                                 "run_id": prepared["run_id"], "warehouse": storage.of(warehouse_of(str(warehouse))).uri})
        uris.append(asset.uri)
    if uris:
        log.info("asset events for %d tables: %s", len(uris), ", ".join(uris))
    return uris


def table_event_lines(events) -> list[str]:
    """One line per asset event ``binlog_ingest`` emitted (a downstream run's
    ``triggering_asset_events[...]``): the table, its row changes, the run and the warehouse."""
    lines = []
    for event in events:
        extra = event.extra or {}
        lines.append(f"{extra.get('database')}.{extra.get('table')}: {extra.get('rows')} row changes "
                     f"published by run {extra.get('run_id')} into {extra.get('warehouse')} ({event.asset.uri})")
    return lines
