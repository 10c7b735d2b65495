"""``spark_jobs.streams`` on the bundled samples and real fixtures, without a server or Spark:
how a stream finds its place, what it refuses, and what a run is named after.

The two samples are one MariaDB server's ``mariadb-bin.000001`` (GTID_LIST empty,
transactions 0-1-1 to 0-1-7) and ``000002`` (GTID_LIST 0-1-7, then 0-1-8 and 0-1-9).
The cases with a real server, Spark and the warehouse are in
``test_streams_against_mariadb``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import zstandard

from binlog_codec.file_identity import read_identity, same_file
from fixture_facts import path as fixture
from mariadb import REPO_ROOT
from spark_jobs.positions import CheckpointFileMissing, MissingFiles
from spark_jobs.source_files import list_source
from spark_jobs.splits import scanned_file
from spark_jobs.streams import (
    AlreadyIngested, FileReplaced, ForeignLog, GtidHole, GtidsReused, StreamState, plan_stream, position_text,
)

SAMPLES = sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*"))
MYSQL_FIXTURE = "osheroff__mysql-binlog-connector-java/mysql-bin.checksum-crc32"


def scan(file_path: str):
    stamp, transactions = scanned_file(file_path).result()
    return stamp[0], transactions


def folder_of(tmp_path: Path, name: str, files: dict[str, Path | bytes]) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for file_name, content in files.items():
        (folder / file_name).write_bytes(content if isinstance(content, bytes) else content.read_bytes())
    return folder


def plan(folder: Path, state=None, **options):
    listing = list_source(folder, folder.parent / f"{folder.name}-inflated")
    return plan_stream(options.pop("stream", "s"), str(folder), listing.files, state, scan=scan, **options)


def after(result) -> StreamState:
    """The state a published run leaves, as the checkpoint file keeps it."""
    return StreamState.from_json(json.loads(json.dumps(result.state.to_json())))


@pytest.fixture
def both(tmp_path) -> Path:
    return folder_of(tmp_path, "source", {s.name: s for s in SAMPLES})


def test_a_first_run_reads_every_file_and_records_identity_and_gtid_set(both):
    first = plan(both)
    assert first.mode == "start" and [(r.file.name, r.start, r.kept) for r in first.reads] == [
        ("mariadb-bin.000001", 0, 7), ("mariadb-bin.000002", 0, 2)]
    state = after(first)
    assert (state.file, state.position, state.gtids, state.continuity) == ("mariadb-bin.000002", 2272, "0-1-9", "gtid")
    assert state.files["mariadb-bin.000001"]["rotate_to"] == "mariadb-bin.000002"
    assert state.last == {"gtid": "0-1-9", "timestamp": 1795291319, "server_id": 1}
    assert position_text(state.to_json()) == "mariadb-bin.000002 at 2272, GTID set 0-1-9"
    again = plan(both, state)
    assert again.mode == "continue" and again.reads == []


def test_a_run_is_named_after_the_stream_and_its_transactions_not_the_path(both, tmp_path):
    elsewhere = folder_of(tmp_path, "elsewhere", {s.name: s for s in SAMPLES})
    assert plan(both).run_id() == plan(elsewhere).run_id()
    assert plan(both).run_id() != plan(both, stream="other").run_id()
    only_first = folder_of(tmp_path, "first", {SAMPLES[0].name: SAMPLES[0]})
    assert plan(only_first).run_id() != plan(both).run_id()


def test_a_file_the_stream_read_that_holds_other_bytes_is_refused_without_gtids(tmp_path):
    """Without a GTID set, nothing can show how the log goes on past a replaced file."""
    folder = folder_of(tmp_path, "source", {SAMPLES[0].name: SAMPLES[0]})
    state = after(plan(folder))
    state.gtids, state.last = None, None  # as a server without GTIDs leaves it
    (folder / SAMPLES[0].name).write_bytes(SAMPLES[1].read_bytes())
    with pytest.raises(FileReplaced, match=r"mariadb-bin.000001 holds other bytes .* --accept-new-series"):
        plan(folder, state)
    corrupt = bytearray(SAMPLES[0].read_bytes())
    corrupt[400] ^= 0xFF  # inside the first transaction: the head the identity hashes
    (folder / SAMPLES[0].name).write_bytes(bytes(corrupt))
    with pytest.raises(FileReplaced, match=r"now a file that does not read: .*at 372 \(QUERY\): CRC32 mismatch"):
        plan(folder, state)
    (folder / SAMPLES[0].name).write_bytes(SAMPLES[0].read_bytes()[:3000])
    with pytest.raises(FileReplaced, match=r"3000 bytes, fewer than the 3781 read \(truncated\)"):
        plan(folder, state)


def test_a_stream_without_gtids_cannot_find_a_lost_checkpoint_file(both, tmp_path):
    state = after(plan(both))
    state.gtids, state.last = None, None
    gone = folder_of(tmp_path, "gone", {"mariadb-bin.000003": SAMPLES[1]})
    with pytest.raises(CheckpointFileMissing, match="checkpoint file mariadb-bin.000002 is not in"):
        plan(gone, state)
    new_series = plan(gone, state, accept=["new-series"])
    assert new_series.mode == "new-series" and [r.file.name for r in new_series.reads] == ["mariadb-bin.000003"]
    assert new_series.accepted == [f"new series from {gone}"]


def test_a_name_gap_without_gtids_is_refused_and_named(tmp_path):
    folder = folder_of(tmp_path, "source", {"mariadb-bin.000001": SAMPLES[0]})
    state = after(plan(folder))
    state.gtids, state.last = None, None
    (folder / "mariadb-bin.000004").write_bytes(SAMPLES[1].read_bytes())
    with pytest.raises(MissingFiles, match="lacks mariadb-bin.000002, mariadb-bin.000003 between") as raised:
        plan(folder, state)
    assert raised.value.missing == ["mariadb-bin.000002", "mariadb-bin.000003"]
    accepted = plan(folder, state, accept=["gap"])
    assert accepted.accepted == ["missing files mariadb-bin.000002, mariadb-bin.000003"]


def test_a_name_gap_whose_gtids_continue_loses_nothing_and_goes_on(tmp_path, caplog):
    """The ROTATE of 000001 names mariadb-bin.000002, and the next file is renamed: the names
    do not follow, but its GTID_LIST (0-1-7) is exactly what the stream has read."""
    folder = folder_of(tmp_path, "source", {"mariadb-bin.000001": SAMPLES[0], "mariadb-bin.000005": SAMPLES[1]})
    planned = plan(folder)
    assert [r.file.name for r in planned.reads] == ["mariadb-bin.000001", "mariadb-bin.000005"]
    assert "nothing is lost" in caplog.text


def test_a_gtid_hole_names_the_missing_range(tmp_path):
    folder = folder_of(tmp_path, "source", {"mariadb-bin.000001": SAMPLES[0]})
    state = after(plan(folder))
    state.gtids = "0-1-5"  # as if 0-1-6 and 0-1-7 had not been read
    (folder / "mariadb-bin.000002").write_bytes(SAMPLES[1].read_bytes())
    state.position = 2879  # the end of 0-1-5
    gone = folder_of(tmp_path, "other", {"mariadb-bin.000002": SAMPLES[1]})
    with pytest.raises(GtidHole, match=r"starts after 0-1-7, but the stream 's' has read 0-1-5: 0-1-6\.\.0-1-7 are"):
        plan(gone, state)


def test_transactions_already_read_are_skipped_by_gtid_in_another_servers_files(both, tmp_path):
    """The stream read 000001 only; the files now at hand (the same transactions, as a replica
    that logged them holds them) are entered by GTID and 0-1-1 to 0-1-7 skipped."""
    first = after(plan(folder_of(tmp_path, "first", {SAMPLES[0].name: SAMPLES[0]})))
    replica = folder_of(tmp_path, "replica", {"replica-bin.000001": SAMPLES[0], "replica-bin.000002": SAMPLES[1]})
    planned = plan(replica, first)
    assert planned.mode == "gtid"
    assert [(r.file.name, len(r.skipped), r.kept) for r in planned.reads] == [
        ("replica-bin.000002", 0, 2)]  # its GTID_LIST 0-1-7 is all read: it is where the stream goes on
    assert after(planned).gtids == "0-1-9"


def test_files_another_stream_read_are_refused(both, tmp_path):
    other = after(plan(both, stream="first"))
    copy = folder_of(tmp_path, "copy", {s.name: s for s in SAMPLES})
    with pytest.raises(AlreadyIngested, match=r"mariadb-bin.000001 .* was read by the stream 'first'"):
        plan(copy, stream="second", others={"first": other})


def test_a_file_of_another_flavour_is_another_log(tmp_path):
    folder = folder_of(tmp_path, "source", {"mariadb-bin.000001": SAMPLES[0], "mariadb-bin.000002":
                                            fixture(MYSQL_FIXTURE)})
    with pytest.raises(ForeignLog, match="mariadb-bin.000002 was written by a mysql server"):
        plan(folder)


def test_compressed_copies_are_read_as_the_file_and_look_alikes_reported(tmp_path):
    folder = folder_of(tmp_path, "source", {
        "mariadb-bin.000001.gz": gzip.compress(SAMPLES[0].read_bytes()),
        "mariadb-bin.000002.zst": zstandard.ZstdCompressor().compress(SAMPLES[1].read_bytes()),
        "mariadb-bin.000003": gzip.compress(b"x"),
        "mariadb-bin.000004.gz": b"plain text",
        "mariadb-bin.000002.bak": SAMPLES[1],
        "mariadb-bin.index": b"./mariadb-bin.000001\n",
    })
    listing = list_source(folder, tmp_path / "inflated")
    assert sorted((f.name, f.compressed) for f in listing.files) == [
        ("mariadb-bin.000001", "mariadb-bin.000001.gz"), ("mariadb-bin.000002", "mariadb-bin.000002.zst")]
    assert all(Path(f.path).read_bytes() == s.read_bytes() for f, s in zip(sorted(listing.files, key=lambda f: f.name),
                                                                            SAMPLES))
    assert sorted(listing.reported) == [
        "mariadb-bin.000002.bak: starts with the binlog magic but is not named <base>.<digits>; not read",
        "mariadb-bin.000003: named like a binlog file but starts 1f 8b 08 00, not the binlog magic fe 62 69 6e "
        "(it is gzip-compressed: name it .gz to have it read); not read",
        "mariadb-bin.000004.gz: named like a compressed binlog but its bytes start 70 6c 61 69, not 1f 8b; not read",
    ]
    inflated = sorted((tmp_path / "inflated").glob("mariadb-bin.*"))
    stamps = [p.stat().st_mtime_ns for p in inflated]
    list_source(folder, tmp_path / "inflated")
    assert [p.stat().st_mtime_ns for p in inflated] == stamps  # decompressed once


def test_identity_survives_growth_and_the_in_use_flag_not_other_bytes(tmp_path):
    whole = SAMPLES[0].read_bytes()
    growing = tmp_path / "mariadb-bin.000001"
    growing.write_bytes(whole[:459])  # the header events and the first transaction, as first read
    recorded = read_identity(growing)
    assert recorded.head_bytes == 459 and recorded.server_id == 1 and recorded.start_gtids == ""
    growing.write_bytes(whole)
    assert same_file(recorded, growing)
    flagged = bytearray(whole)
    flagged[4 + 17] ^= 0x01  # LOG_EVENT_BINLOG_IN_USE_F, which the server clears when it closes the file
    growing.write_bytes(bytes(flagged))
    assert same_file(recorded, growing)
    changed = bytearray(whole)
    changed[440] ^= 0x01
    growing.write_bytes(bytes(changed))
    assert not same_file(recorded, growing)
    growing.write_bytes(whole[:400])
    assert not same_file(recorded, growing)


def test_a_checkpoint_of_an_earlier_version_goes_on_and_gets_its_gtid_set(both):
    """``{"file", "position"}`` only: no identities or GTIDs yet; the next file's start set
    starts the GTID set."""
    old = StreamState.from_json({"file": SAMPLES[0].name, "position": SAMPLES[0].stat().st_size})
    planned = plan(both, old)
    assert planned.mode == "continue" and [r.file.name for r in planned.reads] == [SAMPLES[1].name]
    assert after(planned).gtids == "0-1-9" and set(after(planned).files) == {SAMPLES[1].name}


def test_state_round_trips_through_json(both):
    state = plan(both).state
    assert StreamState.from_json(json.loads(json.dumps(state.to_json()))) == state


def test_a_source_whose_earliest_file_starts_after_the_stream_names_the_hole_until_accepted(tmp_path):
    """Entered by GTID (the checkpoint file is not there), the earliest file of the source
    starts after transactions the stream has not read."""
    stream = after(plan(folder_of(tmp_path, "first", {"a.000001": SAMPLES[0]})))
    stream.gtids, stream.last = "0-1-5", None
    later = folder_of(tmp_path, "later", {"b.000002": SAMPLES[1]})
    with pytest.raises(GtidHole, match=r"earliest file b.000002 starts after 0-1-7, but .* 0-1-6\.\.0-1-7 are in no file"):
        plan(later, stream)
    accepted = plan(later, stream, accept=["gap"])
    assert accepted.accepted == ["GTID gap 0-1-6..0-1-7 before b.000002"]
    assert after(accepted).gtids == "0-1-9"


def test_refusals_wait_for_a_decision_and_an_unreadable_one_is_listed_not_fatal(tmp_path):
    from warehouse import refusals

    refusals.record(tmp_path, "s", "file:///x", MissingFiles("x lacks b.000002", "Bring it back", ["b.000002"]))
    (waiting,) = refusals.waiting(tmp_path)
    assert (waiting["stream"], waiting["kind"], waiting["problem"]) == ("s", "MissingFiles", "x lacks b.000002")
    (tmp_path / refusals.FOLDER / "broken.json").write_text("{not json")
    assert [r["problem"][:40] for r in refusals.waiting(tmp_path)] == [
        "a refusal record that cannot be read: Ex", "x lacks b.000002"]
    refusals.clear(tmp_path, "s")
    assert [r["stream"] for r in refusals.waiting(tmp_path)] == ["(unknown: broken.json)"]


def test_a_file_that_starts_the_gtids_again_is_refused_not_skipped(tmp_path):
    """The next file by name starts behind the stream's GTID set (RESET MASTER, or another log):
    its transactions are new ones under reused GTIDs, never to be skipped as read."""
    folder = folder_of(tmp_path, "source", {"a.000001": SAMPLES[0], "a.000002": SAMPLES[0]})
    with pytest.raises(GtidsReused, match=r"a.000002 starts at , without 0-1-1\.\.0-1-7 that the stream"):
        plan(folder)


def test_transactions_under_gtids_already_read_are_refused_when_no_start_set_says_so(tmp_path):
    """Two synthetic MySQL files without PREVIOUS_GTIDS, each numbering its GTIDs from 1."""
    from binlog_codec.corpus import write_corpus

    folder = tmp_path / "source"
    folder.mkdir()
    write_corpus(folder / "c.000001", transactions=3, seed=1)
    write_corpus(folder / "c.000002", transactions=3, seed=2)
    with pytest.raises(GtidsReused, match=r"c.000002 at \d+ holds the transaction .*:1, which the stream"):
        plan(folder)
    write_corpus(folder / "c.000002", transactions=3, seed=2, first_transaction=3)
    assert after(plan(folder)).gtids.endswith(":1-6")


def test_a_second_series_in_one_source_is_read_only_where_it_starts_where_the_first_ends(tmp_path):
    overlapping = folder_of(tmp_path, "overlapping", {"a.000001": SAMPLES[0], "b.000001": SAMPLES[0]})
    with pytest.raises(GtidsReused, match="b.000001 starts at , without 0-1-1..0-1-7"):
        plan(overlapping)
    following = folder_of(tmp_path, "following", {"a.000001": SAMPLES[0], "b.000002": SAMPLES[1]})
    assert [r.file.name for r in plan(following).reads] == ["a.000001", "b.000002"]


def test_files_another_stream_read_are_refused_under_other_names_too(both, tmp_path):
    other = after(plan(both, stream="first"))
    renamed = folder_of(tmp_path, "renamed", {"archived-bin.000007": SAMPLES[0]})
    with pytest.raises(AlreadyIngested, match=r"archived-bin.000007 .* was read by the stream 'first' \(from .*, "
                                              r"as mariadb-bin.000001\) already"):
        plan(renamed, stream="second", others={"first": other})
    other_log = folder_of(tmp_path, "other", {"mariadb-bin.000001": fixture(MYSQL_FIXTURE)})  # same name, other log
    assert plan(other_log, stream="second", others={"first": other}).reads


def test_a_next_file_its_predecessors_rotate_does_not_name_is_a_gap_without_gtids(tmp_path):
    folder = folder_of(tmp_path, "source", {"x.000001": SAMPLES[0]})  # its ROTATE names mariadb-bin.000002
    state = after(plan(folder))
    state.gtids, state.last = None, None
    (folder / "x.000002").write_bytes(SAMPLES[1].read_bytes())
    with pytest.raises(MissingFiles, match=r"lacks mariadb-bin.000002 \(the file x.000001's ROTATE event names it\)"):
        plan(folder, state)
