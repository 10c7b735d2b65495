"""What a warehouse looks like right now: per stream, how far it is ingested; refusals; the last runs.

This is the data behind the binlake view in the Airflow UI
(:mod:`plugins.binlake_view`), kept free of Airflow and FastAPI so that any
Python process can call it::

    from airflow_tasks.warehouse_status import status

    report = status(Path("/data/warehouse"))
    for stream in report.streams:
        print(stream.stream, stream.source, stream.checkpoint_file, stream.gtids, stream.lag_files)

Per stream (each key of ``metadata/checkpoint.json``: the stream's name, by
default its source URI; :mod:`spark_jobs.streams`) it gives the source the
stream last read, the committed checkpoint (file and position, the GTID set
read and the continuity mode: ``gtid`` or ``file-position``) and, when that
source can be listed, its newest binlog object and the **lag**: the files the
next run would read and their unread bytes (the rest of the checkpoint's file
past the committed position, plus every later file). A source that cannot be
listed has its lag unknown, with the reason. Entries written before streams
(``file`` and ``position`` only) are streams named after their source, without
GTIDs.

Each stream also has a **lag in time**: the newest event a run saw in the
source (the commit time of the newest transaction in the files it scanned,
:func:`spark_jobs.ingest.source_seen`, kept in its run record or, for a run
that failed, its failure record) minus the commit time of the stream's last
committed transaction (the checkpoint's ``last``). Nothing reads the source's
events when the page is shown: when the source has grown since the run that
saw it (its newest object is another, or of another size), the lag is *at
least* that, and unknown when that run had caught up. See :class:`TimeLag`.

The refusals are the runs refused for a decision of the user
(:func:`warehouse.refusals.waiting`): a gap in the log, a new series... The
failed runs (:func:`warehouse.refusals.failing`) are the runs that failed
since their stream's last success, newest first, with the step and their
first error. The runs come from ``metadata/runs/*.parquet`` (one row per
committed run), newest first, with their quality outcome when the run was
validated, what the user accepted for them and the Airflow run they belong to.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable


from spark_jobs.positions import CheckpointFileMissing, MissingFiles, after_checkpoint, is_binlog_name, log_order
from warehouse import catalog, refusals, storage
from warehouse.publish import read_checkpoint

log = logging.getLogger(__name__)

DEFAULT_RUN_COUNT = 20


GTID = "gtid"
FILE_POSITION = "file-position"


@dataclass(frozen=True)
class SourceSeen:
    """What a run saw of its source's end: its last ``file`` and that file's ``size``, and the
    commit time of the newest transaction it scanned (``event_time``, None when it saw none)."""

    file: str | None
    size: int | None
    event_time: datetime | None


@dataclass(frozen=True)
class TimeLag:
    """How far behind the source a stream is in time: ``seconds`` from the commit of the stream's
    last committed transaction (``last_commit``) to the newest event a run saw in the source
    (``newest_event``, seen at ``seen_at``). ``at_least``: the source has grown since (its newest
    object is not the one the run saw, or could not be listed), so newer events are not counted.
    A source that cannot be listed counts as grown.
    ``seconds`` is None when unknown, ``unknown_reason`` saying why; ``up_to_date`` when the
    stream has read all its source holds (``seconds`` 0)."""

    seconds: float | None = None
    at_least: bool = False
    unknown_reason: str | None = None
    newest_event: datetime | None = None
    last_commit: datetime | None = None
    seen_at: datetime | None = None
    up_to_date: bool = False


NOT_TIMED = TimeLag(unknown_reason="not computed")
GROWN = ("the source has grown since a run last read it; its newer events are timed when the next run "
         "reads them")


@dataclass(frozen=True)
class StreamStatus:
    """One stream: the source it reads, its checkpoint, that source's newest binlog object and how
    far behind the warehouse is.

    ``gtids`` is the GTID set the stream has read (text, ``0-1-120`` or ``uuid:1-57``; None when
    the stream has no GTIDs) and ``continuity`` how the next run finds its place: ``gtid`` or
    ``file-position``. ``newest_*`` and ``lag_*`` are None when the source could not be listed;
    ``unknown_reason`` then says why. ``last_commit`` is the commit time of the stream's last
    committed transaction (None when the checkpoint has none) and ``time_lag`` the lag in time.
    """

    stream: str
    source: str
    checkpoint_file: str
    checkpoint_position: int
    gtids: str | None = None
    continuity: str = FILE_POSITION
    newest_object: str | None = None
    newest_size: int | None = None
    lag_files: int | None = None
    lag_bytes: int | None = None
    unknown_reason: str | None = None
    last_commit: datetime | None = None
    time_lag: TimeLag = NOT_TIMED

    @property
    def up_to_date(self) -> bool:
        return self.lag_files == 0

    @property
    def uses_gtids(self) -> bool:
        """Whether the stream follows its log by GTID set (else by file and position only)."""
        return self.gtids is not None


@dataclass(frozen=True)
class Quality:
    """A run's validation outcome; ``validated`` is False for runs recorded without one.

    ``failing`` counts the failed checks over all tables; ``data_docs`` is the
    Data Docs page, relative to the warehouse root.
    """

    validated: bool
    success: bool = False
    failing: int = 0
    data_docs: str | None = None


NOT_VALIDATED = Quality(validated=False)


@dataclass(frozen=True)
class RunStatus:
    """One committed run, as ``metadata/runs`` recorded it: its stream, counts and quality, what the
    user ``accepted`` for it (``missing files mariadb-bin.000004``), what it noticed without stopping
    (``notices``) and how many transactions it skipped as already read (by GTID)."""

    run_id: str
    source: str | None
    finished: datetime | None
    seconds: float | None
    inputs: int
    bytes: int
    rows: int
    rows_per_table: dict[str, int] = field(default_factory=dict)
    quality: Quality = NOT_VALIDATED
    stream: str | None = None
    continuity: str | None = None
    gtid_set: str | None = None
    accepted: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    skipped_transactions: int = 0
    airflow_run: str | None = None
    seen: SourceSeen | None = None


@dataclass(frozen=True)
class FailedRun:
    """A run that failed since its stream's last success (:func:`warehouse.refusals.failing`):
    its stream and source, when, its run id (None when it failed before it was planned), the
    Airflow run it belonged to (``dag_id/run_id``), the step and the first line of its error."""

    stream: str
    source: str | None
    at: datetime | None
    run_id: str | None
    airflow_run: str | None
    step: str
    error: str
    seen: SourceSeen | None = None


@dataclass(frozen=True)
class WarehouseStatus:
    """The whole picture: the warehouse root, one entry per stream, the refusals waiting for a
    decision (dicts of :func:`warehouse.refusals.waiting`: ``stream``, ``source``, ``at``,
    ``kind``, ``problem``, ``way_forward``; oldest first), the last runs newest first, the failed
    runs since their stream's last success, newest first."""

    warehouse: Path
    streams: list[StreamStatus]
    runs: list[RunStatus]
    refusals: list[dict] = field(default_factory=list)
    failures: list[FailedRun] = field(default_factory=list)


# A function giving the object store behind a source URI (``airflow_tasks.hooks.store_for``).
StoreFor = Callable[[str], object]


def status(warehouse: Path, store_for: StoreFor | None = None, *, run_count: int = DEFAULT_RUN_COUNT) -> WarehouseStatus:
    """The status of ``warehouse``. ``store_for(uri)`` opens a source for listing (default:
    :func:`airflow_tasks.hooks.store_for`, which takes S3 credentials from the Airflow connection);
    at most ``run_count`` runs are returned."""
    warehouse = Path(warehouse)
    checkpoint = read_checkpoint(warehouse)
    runs, failures = all_runs(warehouse), failed_runs(warehouse)
    seen = last_seen(runs, failures)
    streams = [timed(stream_status(name, entry, store_for), seen.get(name)) for name, entry in sorted(checkpoint.items())]
    return WarehouseStatus(warehouse, streams, runs[:run_count], refusals.waiting(warehouse), failures)


# ---------------------------------------------------------------- streams


def stream_status(stream: str, entry: dict, store_for: StoreFor | None = None) -> StreamStatus:
    """Checkpoint, newest object and lag of one stream (``entry``: its checkpoint entry, the JSON
    of a :class:`spark_jobs.streams.StreamState`); the lag is that of the source the stream last
    read, unknown when listing it fails. An entry written before streams (``file`` and
    ``position`` only) is keyed by its source and has no GTIDs.

    The entry is read as JSON, not through :mod:`spark_jobs.streams`: that module loads the
    binlog codec (compiled extensions), which the Airflow processes showing this page do not
    need, and which failed to import inside ``airflow standalone``'s plugin loading."""
    gtids = entry.get("gtids")
    continuity = entry.get("continuity") or (GTID if gtids is not None else FILE_POSITION)
    committed = StreamStatus(stream, entry.get("source") or stream, entry["file"], int(entry["position"]),
                             gtids=gtids, continuity=continuity, last_commit=_commit_time(entry))
    try:
        objects = list_binlogs(committed.source, store_for)
    except Exception as exc:  # unreachable store, missing credentials, deleted folder: shown, not fatal
        log.warning("stream %s: cannot list source %s: %s", stream, committed.source, exc)
        return _unknown(committed, f"cannot list the source: {exc}")
    return lag(committed, objects)


def _commit_time(entry: dict) -> datetime | None:
    """The commit time of the last transaction of a checkpoint entry (its ``last`` transaction's
    ``timestamp``, seconds since the epoch), None when the entry has none."""
    stamp = (entry.get("last") or {}).get("timestamp")
    return None if stamp is None else datetime.fromtimestamp(int(stamp), timezone.utc)


def list_binlogs(source: str, store_for: StoreFor | None = None) -> list[tuple[str, int]]:
    """The source's binlog objects as ``(name, size)`` in log order (by base name, then number)."""
    store = (store_for or _default_store_for())(_as_uri(source))
    found = []
    for stored in store.list():
        name = stored.name.rsplit("/", 1)[-1]
        if is_binlog_name(name):
            found.append((name, int(stored.size)))
    return sorted(found, key=lambda item: log_order(item[0]))


def lag(committed: StreamStatus, objects: list[tuple[str, int]]) -> StreamStatus:
    """``committed`` completed with the newest object and the lag behind it (the module text
    says what the lag counts)."""
    if not objects:
        return _unknown(committed, "the source holds no binlog files")
    newest, newest_size = objects[-1]
    position = {"file": committed.checkpoint_file, "position": committed.checkpoint_position}
    try:
        pending = after_checkpoint(objects, position, name=lambda o: o[0], size=lambda o: o[1])
    except CheckpointFileMissing:
        return _unknown(committed, f"the checkpoint's file {committed.checkpoint_file} is no longer in the source",
                        newest=(newest, newest_size))
    except MissingFiles as gap:  # the next run refuses it; the view says so rather than fail
        return _unknown(committed, gap.problem, newest=(newest, newest_size))
    return replace(
        committed, newest_object=newest, newest_size=newest_size,
        lag_files=len(pending), lag_bytes=sum(size - start for (_, size), start in pending),
    )


def _unknown(committed: StreamStatus, reason: str, newest: tuple[str, int] | None = None) -> StreamStatus:
    name, size = newest or (None, None)
    return replace(committed, newest_object=name, newest_size=size, unknown_reason=reason)


def _as_uri(source: str) -> str:
    """Sources are URIs (``s3://``, ``file://``) or, for local runs, plain folder paths."""
    return source if "://" in source else Path(source).resolve().as_uri()


def _default_store_for() -> StoreFor:
    from airflow_tasks.hooks import store_for  # Airflow-backed: imported only when a source is listed

    return store_for


# ---------------------------------------------------------------- lag in time


def timed(stream: StreamStatus, seen: tuple[datetime, SourceSeen] | None) -> StreamStatus:
    """``stream`` with its lag in time, from what the latest run of it saw of the source
    (``seen``: when, and what; None when no run recorded it)."""
    return replace(stream, time_lag=time_lag(stream, seen))


def time_lag(stream: StreamStatus, seen: tuple[datetime, SourceSeen] | None) -> TimeLag:
    """The lag in time of ``stream`` (see :class:`TimeLag` and the module text)."""
    if stream.up_to_date:
        return TimeLag(seconds=0, last_commit=stream.last_commit, up_to_date=True)
    if stream.last_commit is None:
        return TimeLag(unknown_reason="the checkpoint records no commit time of a last transaction")
    if seen is None or seen[1].event_time is None:
        return TimeLag(unknown_reason="no run has timed the source's newest event yet",
                       last_commit=stream.last_commit)
    seen_at, source = seen
    changed = (stream.newest_object, stream.newest_size) != (source.file, source.size)  # or not listed
    seconds = max(0.0, (source.event_time - stream.last_commit).total_seconds())
    if changed and seconds == 0:
        reason = GROWN if stream.newest_object is not None else stream.unknown_reason
        return TimeLag(unknown_reason=reason, last_commit=stream.last_commit, seen_at=seen_at)
    return TimeLag(seconds, changed, None, source.event_time, stream.last_commit, seen_at)


def last_seen(runs: list[RunStatus], failures: list["FailedRun"]) -> dict[str, tuple[datetime, SourceSeen]]:
    """Per stream, what the latest run that recorded it saw of the source, with when: its newest
    failed run's (a failure stands only while no later run of its stream succeeded), else its
    newest published run's."""
    published = _newest_per_stream((run.stream, run.finished, run.seen) for run in runs)
    failed = _newest_per_stream((failure.stream, failure.at, failure.seen) for failure in failures)
    return {**published, **failed}


def _newest_per_stream(sightings) -> dict[str, tuple[datetime, SourceSeen]]:
    """Of ``(stream, when, seen)`` triples, the newest per stream that saw something."""
    newest: dict[str, tuple[datetime, SourceSeen]] = {}
    for stream, at, seen in sightings:
        if stream and at is not None and seen is not None and (stream not in newest or at > newest[stream][0]):
            newest[stream] = (at, seen)
    return newest


# ---------------------------------------------------------------- runs


def last_runs(warehouse: Path, count: int = DEFAULT_RUN_COUNT) -> list[RunStatus]:
    """The ``count`` most recently finished runs of ``metadata/runs``, newest first."""
    return all_runs(warehouse)[:count]


def all_runs(warehouse: Path) -> list[RunStatus]:
    """Every run of ``metadata/runs``, newest first."""
    runs = [run_status(record) for path in catalog.data_files(Path(warehouse), catalog.identifier("runs"))
            for record in storage.read_parquet(path).to_pylist()]
    runs.sort(key=lambda run: (run.finished is not None, run.finished or datetime.min), reverse=True)
    return runs


def run_status(record: dict) -> RunStatus:
    """One ``metadata/runs`` row; columns added by later versions (``source``, ``quality``,
    ``stream``, ``accepted``...) may be missing from older rows: their stream was their source,
    they accepted and noticed nothing, skipped no transaction."""
    return RunStatus(
        run_id=record["run_id"],
        source=record.get("source"),
        finished=record.get("finished"),
        seconds=record.get("seconds"),
        inputs=len(json.loads(record.get("inputs") or "[]")),
        bytes=record.get("bytes") or 0,
        rows=record.get("rows") or 0,
        rows_per_table=json.loads(record.get("rows_per_table") or "{}"),
        quality=quality_of(record.get("quality")),
        stream=record.get("stream") or record.get("source"),
        continuity=record.get("continuity"),
        gtid_set=record.get("gtid_set"),
        accepted=list(record.get("accepted") or []),
        notices=list(record.get("notices") or []),
        skipped_transactions=record.get("skipped_transactions") or 0,
        airflow_run=record.get("airflow_run"),
        seen=_seen(record.get("source_newest_file"), record.get("source_newest_size"),
                   record.get("source_newest_event")),
    )


def _seen(file: str | None, size: int | None, event_time: datetime | str | None) -> SourceSeen | None:
    """What a run saw of its source's end, None when it recorded nothing (older runs)."""
    if file is None and event_time is None:
        return None
    if isinstance(event_time, str):
        event_time = _moment(event_time)
    return SourceSeen(file, size, event_time)


def _moment(text: object) -> datetime | None:
    """An ISO 8601 time as an aware datetime (UTC when it names no zone); None when it is none."""
    try:
        moment = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def airflow_dag_run(airflow_run: str | None) -> tuple[str, str] | None:
    """``(dag_id, run_id)`` of a recorded Airflow run (``dag_id/run_id``: a DAG id holds no
    slash, a run id may); None when there is none or it does not have that form."""
    dag_id, slash, run_id = (airflow_run or "").partition("/")
    return (dag_id, run_id) if dag_id and slash and run_id else None


# ---------------------------------------------------------------- failed runs


def failed_runs(warehouse: Path) -> list[FailedRun]:
    """The runs that failed since their stream's last success, newest first."""
    return [failed_run(record) for record in refusals.failing(warehouse)]


def failed_run(record: dict) -> FailedRun:
    """One failure record of :func:`warehouse.refusals.failing`."""
    seen = record.get("seen") or {}
    return FailedRun(
        stream=record["stream"], source=record.get("source"), at=_moment(record["at"]) if record["at"] else None,
        run_id=record.get("run_id"), airflow_run=record.get("airflow_run"), step=record["step"],
        error=record["error"], seen=_seen(seen.get("file"), seen.get("size"), seen.get("event_time")),
    )


def quality_of(text: str | None) -> Quality:
    """The ``quality`` column (JSON: ``success``, ``tables`` with their ``failures``,
    ``data_docs``); None or empty means the run was not validated."""
    if not text:
        return NOT_VALIDATED
    outcome = json.loads(text)
    tables = outcome.get("tables") or []
    failing = sum(len(table.get("failures") or []) for table in tables)
    return Quality(validated=True, success=bool(outcome.get("success")), failing=failing,
                   data_docs=outcome.get("data_docs"))
