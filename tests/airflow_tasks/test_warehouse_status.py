"""airflow_tasks.warehouse_status: streams, checkpoints, lag, refusals and runs of a warehouse.

The main tests read a real warehouse: the bundled sample binlogs ingested by
``spark_jobs.ingest`` (Spark local mode) in two runs, the source listed as a
``file://`` folder through ``stage.object_store``. Hand-built records cover
the cases a real run does not produce on demand: quality outcomes, named
streams, checkpoints and records of an older layout, sources that cannot be
listed, refusals, runs the user accepted a gap for.

The lag in time and the failed runs come from real runs too: the samples were
all written within one second, so the second file is re-stamped as if its
server had written it 200 seconds later (every event's timestamp moved, its
checksum computed again); a run of it fails while decoding (the decoder
raises, as a Spark job that dies does), then a run of it succeeds.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from airflow_tasks.warehouse_status import (
    NOT_TIMED, NOT_VALIDATED, FailedRun, SourceSeen, StreamStatus, TimeLag, lag, last_runs, quality_of, status,
    time_lag,
)
from binlog_codec.reader import MAGIC, BinlogReader
from binlog_codec.transactions import scan_transactions
from binlog_codec.writer import encode_event
from stage.object_store import open_store
from warehouse import refusals
from warehouse_records import commit_run_record
from spark_jobs.positions import MissingFiles
from warehouse.publish import CHECKPOINT, read_checkpoint

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*"))


@pytest.fixture(scope="module")
def two_runs(spark, tmp_path_factory):
    """A warehouse after two runs over the samples, with the status seen in between:
    run 1 ingests ``mariadb-bin.000001``; then ``.000002`` lands in the source; run 2 ingests it."""
    from spark_jobs.ingest import ingest

    source, warehouse = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("warehouse")
    shutil.copyfile(SAMPLES[0], source / SAMPLES[0].name)
    first = ingest(str(source), str(warehouse), spark=spark, validation=False)
    shutil.copyfile(SAMPLES[1], source / SAMPLES[1].name)
    between = status(warehouse, open_store)
    second = ingest(str(source), str(warehouse), spark=spark, validation=False)
    return {"source": source, "warehouse": warehouse, "first": first, "second": second,
            "between": between, "after": status(warehouse, open_store)}


def test_a_new_binlog_in_the_source_is_one_file_of_lag(two_runs):
    (source,) = two_runs["between"].streams
    newest = SAMPLES[1]
    assert source.stream == source.source == str(two_runs["source"].resolve())  # the default stream: its source
    assert source.checkpoint_file == SAMPLES[0].name
    assert source.newest_object == newest.name and source.newest_size == newest.stat().st_size
    assert source.lag_files == 1
    unread_of_first = SAMPLES[0].stat().st_size - source.checkpoint_position
    assert source.lag_bytes == unread_of_first + newest.stat().st_size
    assert source.unknown_reason is None and not source.up_to_date


def test_after_the_next_run_the_source_is_up_to_date_at_the_checkpoint(two_runs):
    (source,) = two_runs["after"].streams
    committed = read_checkpoint(two_runs["warehouse"])[source.stream]
    assert (source.checkpoint_file, source.checkpoint_position) == (committed["file"], committed["position"])
    assert source.checkpoint_file == SAMPLES[1].name
    assert source.up_to_date and source.lag_bytes == 0


def test_a_stream_of_the_samples_follows_its_log_by_gtid_set(two_runs):
    (before,), (after,) = two_runs["between"].streams, two_runs["after"].streams
    assert (before.gtids, before.continuity, before.uses_gtids) == ("0-1-7", "gtid", True)
    assert after.gtids == read_checkpoint(two_runs["warehouse"])[after.stream]["gtids"] != before.gtids
    assert two_runs["after"].refusals == []


def test_runs_are_listed_newest_first_with_their_counts(two_runs):
    runs = two_runs["after"].runs
    first, second = two_runs["first"], two_runs["second"]
    assert [run.run_id for run in runs] == [second.run_id, first.run_id]
    assert runs[0].finished > runs[1].finished
    for run, result in zip(runs, [second, first]):
        assert run.rows_per_table == result.rows and run.rows == sum(result.rows.values()) > 0
        assert run.inputs == len(result.inputs) and run.bytes == result.bytes > 0
        assert run.source == run.stream == str(two_runs["source"].resolve())
        assert run.quality == NOT_VALIDATED  # ingested with validation off
        assert (run.accepted, run.notices, run.skipped_transactions) == ([], [], 0)
        assert run.continuity == "gtid" and run.gtid_set is not None


# ---------------------------------------------------------------- lag in time and failed runs

LATER = 200  # seconds: how much later the second sample is written in the runs below
SCHEDULED = "binlog_ingest/scheduled__2026-11-27T10:00:00+00:00"
MANUAL = ("binlog_ingest", "manual__2026-11-27T10:10:00+00:00")


def restamped(sample: Path, target: Path, later: int) -> Path:
    """``sample`` as its server would have written it ``later`` seconds later: every event's
    timestamp moved, its CRC32 computed again."""
    events = BinlogReader(sample, unwrap_payloads=False)
    target.write_bytes(MAGIC + b"".join(
        encode_event(raw.header._replace(timestamp=raw.header.timestamp + later), raw.body,
                     checksum=raw.checksum is not None) for raw in events))
    return target


def commit_times(path: Path) -> list[datetime]:
    """The commit time of every complete transaction of a binlog file, read by the codec."""
    return [datetime.fromtimestamp(t.ending.timestamp, timezone.utc) for t in scan_transactions(path) if t.complete]


@pytest.fixture(scope="module")
def failed_then_caught_up(spark, tmp_path_factory):
    """Run 1 ingests ``mariadb-bin.000001`` (as a task of an Airflow run); a re-stamped
    ``.000002`` lands; run 2, a task of another Airflow run, plans it and dies in the decoder;
    run 3 reads it. The status after each."""
    import spark_jobs.ingest as pipeline

    source, warehouse = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("warehouse")
    shutil.copyfile(SAMPLES[0], source / SAMPLES[0].name)
    first = pipeline.ingest(str(source), str(warehouse), spark=spark, validation=False, airflow_run=SCHEDULED)
    second_file = restamped(SAMPLES[1], source / SAMPLES[1].name, LATER)
    grown = status(warehouse, open_store)

    def executor_lost(*args, **kwargs):
        raise RuntimeError("Spark executor lost\n  at the second line, which is not the first error")

    with pytest.MonkeyPatch.context() as task:
        task.setenv(pipeline.AIRFLOW_DAG_ID, MANUAL[0])  # what Airflow exports to a task's process
        task.setenv(pipeline.AIRFLOW_RUN_ID, MANUAL[1])
        task.setattr(pipeline, "decode", executor_lost)
        with pytest.raises(RuntimeError, match="executor lost"):
            pipeline.ingest(str(source), str(warehouse), spark=spark, validation=False)
    failing = status(warehouse, open_store)
    third = pipeline.ingest(str(source), str(warehouse), spark=spark, validation=False)
    return {"source": source, "warehouse": warehouse, "second_file": second_file, "first": first, "third": third, "grown": grown,
            "failing": failing, "after": status(warehouse, open_store)}


def test_a_run_that_read_the_source_on_gives_the_stream_its_lag_in_time(failed_then_caught_up):
    (stream,) = failed_then_caught_up["failing"].streams
    last_commit = max(commit_times(SAMPLES[0]))  # the checkpoint's, after run 1
    newest = max(commit_times(failed_then_caught_up["second_file"]))  # what the failed run 2 saw
    assert newest - last_commit == timedelta(seconds=LATER)
    assert stream.last_commit == last_commit and stream.lag_files == 1
    lagged = stream.time_lag
    assert (lagged.seconds, lagged.at_least, lagged.newest_event, lagged.last_commit) == (LATER, False, newest,
                                                                                          last_commit)
    assert not lagged.up_to_date and lagged.unknown_reason is None


def test_a_source_grown_since_a_run_caught_up_is_not_timed_and_says_why(failed_then_caught_up):
    (stream,) = failed_then_caught_up["grown"].streams
    assert stream.lag_files == 1 and stream.time_lag.seconds is None
    assert stream.time_lag.unknown_reason.startswith("the source has grown since a run last read it")


def test_a_stream_that_has_read_its_source_is_up_to_date_in_time(failed_then_caught_up):
    (stream,) = failed_then_caught_up["after"].streams
    assert stream.up_to_date and stream.time_lag.up_to_date and stream.time_lag.seconds == 0
    assert stream.last_commit == max(commit_times(failed_then_caught_up["second_file"]))


def test_a_failed_run_is_listed_with_its_step_first_error_and_airflow_run(failed_then_caught_up):
    (failed,) = failed_then_caught_up["failing"].failures
    third = failed_then_caught_up["third"]
    assert failed.run_id == third.run_id  # the same input: the run that failed, done again
    assert (failed.stream, failed.source) == (third.stream, str(failed_then_caught_up["source"].resolve()))
    assert (failed.step, failed.error) == ("decode", "RuntimeError: Spark executor lost")
    assert failed.airflow_run == "/".join(MANUAL)
    assert datetime.now(timezone.utc) - timedelta(minutes=10) < failed.at <= datetime.now(timezone.utc)
    assert failed.seen.file == SAMPLES[1].name and failed.seen.size == SAMPLES[1].stat().st_size
    assert failed_then_caught_up["failing"].refusals == []  # it failed; it was not refused


def test_a_later_success_of_the_stream_clears_its_failed_runs(failed_then_caught_up):
    assert failed_then_caught_up["after"].failures == []
    assert not list((failed_then_caught_up["warehouse"] / refusals.FOLDER / refusals.FAILED).glob("*"))


def test_runs_record_their_airflow_run_and_what_they_saw_of_the_source(failed_then_caught_up):
    third, first = failed_then_caught_up["after"].runs
    assert first.airflow_run == SCHEDULED and third.airflow_run is None  # run 3 ran outside Airflow
    assert first.seen == SourceSeen(SAMPLES[0].name, SAMPLES[0].stat().st_size, max(commit_times(SAMPLES[0])))
    assert third.seen.event_time == max(commit_times(failed_then_caught_up["second_file"]))


def test_the_lag_in_time_is_at_least_what_was_seen_once_the_source_has_grown():
    commit = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
    seen = (commit + timedelta(hours=1), SourceSeen("mariadb-bin.000010", 700, commit + timedelta(minutes=5)))
    stream = StreamStatus("db1", "s3://logs/db1", "mariadb-bin.000009", 1000, newest_object="mariadb-bin.000010",
                          newest_size=700, lag_files=2, lag_bytes=1200, last_commit=commit)
    assert (time_lag(stream, seen).seconds, time_lag(stream, seen).at_least) == (300, False)
    grown = replace(stream, newest_object="mariadb-bin.000011", newest_size=10)
    assert (time_lag(grown, seen).seconds, time_lag(grown, seen).at_least) == (300, True)
    assert time_lag(stream, None).unknown_reason == "no run has timed the source's newest event yet"
    unlisted = replace(stream, newest_object=None, newest_size=None, lag_files=None, unknown_reason="cannot list")
    assert (time_lag(unlisted, seen).seconds, time_lag(unlisted, seen).at_least) == (300, True)
    caught_up = (seen[0], replace(seen[1], event_time=commit))
    assert time_lag(unlisted, caught_up).unknown_reason == "cannot list" and time_lag(grown, caught_up).seconds is None


def test_a_source_that_cannot_be_listed_has_an_unknown_lag_and_says_why(tmp_path):
    missing = tmp_path / "gone"
    write_checkpoint(tmp_path, {str(missing): {"file": "mariadb-bin.000003", "position": 120}})
    (source,) = status(tmp_path, open_store).streams
    assert (source.checkpoint_file, source.checkpoint_position) == ("mariadb-bin.000003", 120)
    assert source.lag_files is None and source.lag_bytes is None and source.newest_object is None
    assert source.unknown_reason.startswith("cannot list the source")


def test_lag_counts_the_unread_rest_of_the_checkpoint_file_and_every_later_file():
    committed = StreamStatus("db1", "s3://logs/db1", "mariadb-bin.000009", 1000)
    listed = [("mariadb-bin.000009", 1500), ("mariadb-bin.000010", 700), ("mariadb-bin.000011", 300)]
    behind = lag(committed, listed)
    assert (behind.lag_files, behind.lag_bytes) == (3, 500 + 700 + 300)
    assert (behind.newest_object, behind.newest_size) == ("mariadb-bin.000011", 300)
    caught_up = lag(StreamStatus("db1", "s3://logs/db1", "mariadb-bin.000011", 300), listed)
    assert (caught_up.lag_files, caught_up.lag_bytes) == (0, 0)


def test_a_gap_in_the_source_is_shown_as_the_reason_the_lag_is_unknown():
    committed = StreamStatus("db1", "s3://logs/db1", "mariadb-bin.000009", 1000)
    gapped = lag(committed, [("mariadb-bin.000009", 1500), ("mariadb-bin.000011", 300)])
    assert gapped.lag_files is None and gapped.newest_object == "mariadb-bin.000011"
    assert gapped.unknown_reason == "the source lacks mariadb-bin.000010 between mariadb-bin.000009 and " \
                                    "mariadb-bin.000011: reading on would lose their transactions"


def test_log_order_is_numeric_and_the_index_file_is_not_a_binlog(tmp_path):
    for name, size in [("mariadb-bin.999999", 10), ("mariadb-bin.1000000", 20), ("mariadb-bin.index", 5)]:
        (tmp_path / name).write_bytes(b"x" * size)
    write_checkpoint(tmp_path / "wh", {tmp_path.as_uri(): {"file": "mariadb-bin.999999", "position": 10}})
    (source,) = status(tmp_path / "wh", open_store).streams
    assert (source.newest_object, source.lag_files, source.lag_bytes) == ("mariadb-bin.1000000", 1, 20)


def test_a_checkpoint_file_gone_from_the_source_leaves_the_lag_unknown():
    gone = lag(StreamStatus("file:///logs", "file:///logs", "mariadb-bin.000001", 4), [("mariadb-bin.000005", 99)])
    assert gone.lag_files is None and gone.newest_object == "mariadb-bin.000005"
    assert "mariadb-bin.000001 is no longer in the source" in gone.unknown_reason


def test_quality_outcomes_passed_failed_and_not_validated():
    passed = quality_of(json.dumps({"run_id": "r1", "success": True, "data_docs": "quality/runs/r1/index.html",
                                    "tables": [{"database": "shop", "table": "orders", "failures": []}]}))
    assert passed.validated and passed.success and passed.failing == 0
    assert passed.data_docs == "quality/runs/r1/index.html"
    failed = quality_of(json.dumps({"run_id": "r2", "success": False, "tables": [
        {"database": "shop", "table": "orders", "failures": ["_binlog_pos not unique", "amount out of range"]},
        {"database": "shop", "table": "customers", "failures": ["row count 3 != 4"]}]}))
    assert failed.validated and not failed.success and failed.failing == 3
    assert quality_of(None) == NOT_VALIDATED


def test_runs_of_an_older_layout_and_the_run_limit(tmp_path):
    start = datetime(2026, 1, 5, 12, 0, tzinfo=timezone.utc)
    for n in range(5):
        record = {"run_id": f"run{n}", "finished": start + timedelta(minutes=n), "seconds": 1.5, "bytes": 100 * n,
                  "inputs": json.dumps([{"file": "mariadb-bin.000001"}]), "rows": n, "rows_per_table": "{}"}
        write_run(tmp_path, record)  # no source, no quality column: written before they existed
    runs = last_runs(tmp_path, count=3)
    assert [run.run_id for run in runs] == ["run4", "run3", "run2"]
    assert runs[0].source is None and runs[0].quality == NOT_VALIDATED and runs[0].inputs == 1
    assert (runs[0].stream, runs[0].accepted, runs[0].notices, runs[0].skipped_transactions) == (None, [], [], 0)


def test_an_empty_warehouse_has_no_streams_no_refusals_and_no_runs(tmp_path):
    report = status(tmp_path)
    assert report.streams == [] and report.runs == [] and report.refusals == [] and report.warehouse == tmp_path


# ---------------------------------------------------------------- streams


def binlogs(folder: Path, sizes: dict[str, int]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, size in sizes.items():
        (folder / name).write_bytes(b"x" * size)
    return folder


def test_a_named_stream_shows_its_gtid_set_and_lags_behind_the_source_it_reads(tmp_path):
    source = binlogs(tmp_path / "primary", {"mariadb-bin.000004": 900, "mariadb-bin.000005": 250})
    write_checkpoint(tmp_path / "wh", {"shop-primary": {
        "file": "mariadb-bin.000004", "position": 600, "source": source.as_uri(), "flavour": "mariadb",
        "gtids": "0-1-120", "last": {"gtid": "0-1-120", "timestamp": 1767225600, "server_id": 1},
        "files": {"mariadb-bin.000004": {"identity": {}, "position": 600, "stamp": [900, 1], "rotate_to": None}},
        "continuity": "gtid",
    }})
    (stream,) = status(tmp_path / "wh", open_store).streams
    assert (stream.stream, stream.source) == ("shop-primary", source.as_uri())
    assert (stream.checkpoint_file, stream.checkpoint_position) == ("mariadb-bin.000004", 600)
    assert (stream.gtids, stream.continuity, stream.uses_gtids) == ("0-1-120", "gtid", True)
    # listed from the entry's source, not from the stream's name (which is no folder)
    assert (stream.newest_object, stream.lag_files, stream.lag_bytes, stream.unknown_reason) == (
        "mariadb-bin.000005", 2, 300 + 250, None)


def test_a_stream_without_gtids_keeps_file_and_position(tmp_path):
    source = binlogs(tmp_path / "legacy", {"mysql-bin.000002": 500})
    write_checkpoint(tmp_path / "wh", {"legacy": {
        "file": "mysql-bin.000002", "position": 500, "source": str(source), "flavour": "mysql", "gtids": None,
        "last": None, "files": {}, "continuity": "file-position"}})
    (stream,) = status(tmp_path / "wh", open_store).streams
    assert (stream.stream, stream.source, stream.gtids, stream.continuity) == ("legacy", str(source), None, "file-position")
    assert not stream.uses_gtids and stream.up_to_date


def test_a_checkpoint_entry_of_an_older_version_is_a_stream_named_after_its_source(tmp_path):
    source = binlogs(tmp_path / "old", {"mariadb-bin.000001": 400, "mariadb-bin.000002": 100})
    write_checkpoint(tmp_path / "wh", {source.as_uri(): {"file": "mariadb-bin.000001", "position": 300}})
    (stream,) = status(tmp_path / "wh", open_store).streams
    assert replace(stream, time_lag=NOT_TIMED) == StreamStatus(
        source.as_uri(), source.as_uri(), "mariadb-bin.000001", 300, gtids=None, continuity="file-position",
        newest_object="mariadb-bin.000002", newest_size=100, lag_files=2, lag_bytes=100 + 100)
    assert stream.time_lag == TimeLag(unknown_reason="the checkpoint records no commit time of a last transaction")


def test_streams_are_listed_by_name(tmp_path):
    write_checkpoint(tmp_path, {name: {"file": "mariadb-bin.000001", "position": 4, "source": str(tmp_path / name)}
                                for name in ("zeta", "alpha", "mid")})
    assert [stream.stream for stream in status(tmp_path, open_store).streams] == ["alpha", "mid", "zeta"]


# ---------------------------------------------------------------- refusals and decisions


GAP = MissingFiles(
    "s3://logs/db1 lacks mariadb-bin.000004 <script>alert(1)</script> between mariadb-bin.000003 and "
    "mariadb-bin.000005: reading on would lose their transactions",
    "Bring the missing files into the source, or go on over the gap with --accept-gap",
    ["mariadb-bin.000004 <script>alert(1)</script>"],
)


def test_a_refused_run_waits_for_a_decision_until_it_is_cleared(tmp_path):
    write_checkpoint(tmp_path, {"db1": {"file": "mariadb-bin.000003", "position": 4, "source": "s3://logs/db1"}})
    refusals.record(tmp_path, "db1", "s3://logs/db1", GAP)
    (refusal,) = status(tmp_path, lambda uri: None).refusals
    assert {key: refusal[key] for key in ("stream", "source", "kind", "problem", "way_forward")} == {
        "stream": "db1", "source": "s3://logs/db1", "kind": "MissingFiles",
        "problem": "s3://logs/db1 lacks mariadb-bin.000004 <script>alert(1)</script> between mariadb-bin.000003 "
                   "and mariadb-bin.000005: reading on would lose their transactions",
        "way_forward": "Bring the missing files into the source, or go on over the gap with --accept-gap",
    }
    assert datetime.fromisoformat(refusal["at"]) > datetime.now(timezone.utc) - timedelta(minutes=5)
    refusals.clear(tmp_path, "db1")
    assert status(tmp_path, lambda uri: None).refusals == []


def test_a_run_shows_what_the_user_accepted_and_what_it_noticed(tmp_path):
    write_run(tmp_path, {
        "run_id": "gap-run", "source": "s3://logs/db1", "finished": datetime(2026, 3, 2, tzinfo=timezone.utc),
        "inputs": "[]", "rows_per_table": "{}", "stream": "db1", "continuity": "file-position", "gtid_set": None,
        "accepted": ["missing files mariadb-bin.000004"],
        "notices": ["mariadb-bin.000002 holds other bytes; the stream found its place by its GTID set"],
        "skipped_transactions": 3,
    })
    (run,) = last_runs(tmp_path)
    assert (run.stream, run.continuity, run.gtid_set) == ("db1", "file-position", None)
    assert run.accepted == ["missing files mariadb-bin.000004"]
    assert run.notices == ["mariadb-bin.000002 holds other bytes; the stream found its place by its GTID set"]
    assert run.skipped_transactions == 3


def write_checkpoint(warehouse: Path, checkpoint: dict) -> None:
    path = warehouse / CHECKPOINT
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(checkpoint))


def write_run(warehouse: Path, record: dict) -> None:
    commit_run_record(warehouse, record)
