"""What a warehouse looks like right now: per stream, how far it is ingested; refusals; the last runs.

This is the data behind the binlake view in the Airflow UI
(:mod:`plugins.binlake_view`), kept free of Airflow and FastAPI so that any
Python process can call it::

    from plugins.warehouse_status import status

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

The refusals are the runs refused for a decision of the user
(:func:`spark_jobs.refusals.waiting`): a gap in the log, a new series... The
runs come from ``metadata/runs/*.parquet`` (one row per committed run), newest
first, with their quality outcome when the run was validated and what the user
accepted for them.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Callable

import pyarrow.parquet as pq

from spark_jobs import refusals
from spark_jobs.positions import CheckpointFileMissing, MissingFiles, after_checkpoint, is_binlog_name, log_order
from spark_jobs.publish import read_checkpoint

log = logging.getLogger(__name__)

RUNS = Path("metadata") / "runs"
DEFAULT_RUN_COUNT = 20


GTID = "gtid"
FILE_POSITION = "file-position"


@dataclass(frozen=True)
class StreamStatus:
    """One stream: the source it reads, its checkpoint, that source's newest binlog object and how
    far behind the warehouse is.

    ``gtids`` is the GTID set the stream has read (text, ``0-1-120`` or ``uuid:1-57``; None when
    the stream has no GTIDs) and ``continuity`` how the next run finds its place: ``gtid`` or
    ``file-position``. ``newest_*`` and ``lag_*`` are None when the source could not be listed;
    ``unknown_reason`` then says why.
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


@dataclass(frozen=True)
class WarehouseStatus:
    """The whole picture: the warehouse root, one entry per stream, the refusals waiting for a
    decision (dicts of :func:`spark_jobs.refusals.waiting`: ``stream``, ``source``, ``at``,
    ``kind``, ``problem``, ``way_forward``; oldest first), the last runs newest first."""

    warehouse: Path
    streams: list[StreamStatus]
    runs: list[RunStatus]
    refusals: list[dict] = field(default_factory=list)


# A function giving the object store behind a source URI (``plugins.hooks.store_for``).
StoreFor = Callable[[str], object]


def status(warehouse: Path, store_for: StoreFor | None = None, *, run_count: int = DEFAULT_RUN_COUNT) -> WarehouseStatus:
    """The status of ``warehouse``. ``store_for(uri)`` opens a source for listing (default:
    :func:`plugins.hooks.store_for`, which takes S3 credentials from the Airflow connection);
    at most ``run_count`` runs are returned."""
    warehouse = Path(warehouse)
    checkpoint = read_checkpoint(warehouse)
    streams = [stream_status(name, entry, store_for) for name, entry in sorted(checkpoint.items())]
    return WarehouseStatus(warehouse, streams, last_runs(warehouse, run_count), refusals.waiting(warehouse))


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
                             gtids=gtids, continuity=continuity)
    try:
        objects = list_binlogs(committed.source, store_for)
    except Exception as exc:  # unreachable store, missing credentials, deleted folder: shown, not fatal
        log.warning("stream %s: cannot list source %s: %s", stream, committed.source, exc)
        return _unknown(committed, f"cannot list the source: {exc}")
    return lag(committed, objects)


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
    from plugins.hooks import store_for  # Airflow-backed: imported only when a source is listed

    return store_for


# ---------------------------------------------------------------- runs


def last_runs(warehouse: Path, count: int = DEFAULT_RUN_COUNT) -> list[RunStatus]:
    """The ``count`` most recently finished runs of ``metadata/runs``, newest first."""
    runs = [run_status(record) for path in sorted((Path(warehouse) / RUNS).glob("*.parquet"))
            for record in pq.read_table(path).to_pylist()]
    runs.sort(key=lambda run: (run.finished is not None, run.finished or datetime.min), reverse=True)
    return runs[:count]


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
