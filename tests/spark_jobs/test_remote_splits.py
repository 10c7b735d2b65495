"""spark_jobs.remote_splits: a split read from object storage decodes to exactly what the same
split gives read from the driver's file; an object shorter than the plan is a located error."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import given, strategies as st

from binlog_codec import errors
from fixture_facts import path
from spark_jobs import image_files, remote_splits
from spark_jobs.decode import decode_split
from spark_jobs.remote_splits import COPIES, HEAD_BYTES, ranges, split_locations
from spark_jobs.source_files import SourceFile
from spark_jobs.splits import Split, plan_splits
from warehouse import storage

SAMPLE = path("osheroff__mysql-binlog-connector-java/mysql-bin.sakila")  # a real MySQL log of 1.4 MB


@given(st.integers(min_value=5, max_value=1 << 24), st.data())
def test_a_split_reads_its_files_head_and_its_own_bytes_nothing_else(end, data):
    read_from = data.draw(st.integers(min_value=4, max_value=end - 1))
    split = Split("f", read_from, end, 0, read_from, "mariadb", 1)
    fetched = ranges(split)
    assert fetched[0][0] == 0 and fetched[-1][1] == end
    assert all(start < stop for start, stop in fetched)
    assert all(a[1] < b[0] for a, b in zip(fetched, fetched[1:]))  # in order, apart
    covered = sum(stop - start for start, stop in fetched)
    assert covered == end if read_from <= HEAD_BYTES else covered == min(HEAD_BYTES, end) + end - read_from


@pytest.fixture
def bucket(s3_server, monkeypatch) -> str:
    for name, value in s3_server.settings().items():
        monkeypatch.setenv(name, value)
    return s3_server.create_bucket("splits")


def staged(staging: Path, summary: dict) -> dict[str, list]:
    """The rows of every file a split's summary names."""
    files = [version["path"] for version in summary["versions"]] + [summary["transactions_path"]]
    return {name: (pq.read_table(staging / name) if name.endswith(".parquet")
                   else image_files.read(*storage.open_file(str(staging / name)))).to_pylist() for name in files}


def test_a_split_fetched_from_the_object_store_decodes_as_the_local_file_does(bucket, tmp_path):
    uri = f"s3://{bucket}/binlogs/{SAMPLE.name}"
    storage.copy_file(str(SAMPLE), uri)
    splits = list(plan_splits([str(SAMPLE)], target_bytes=256 << 10))
    assert len(splits) > 2 and splits[-1].read_from > HEAD_BYTES  # later splits: a head and a range
    rows = 0
    for split in splits:
        here = decode_split(split, tmp_path / "here")
        there = decode_split(remote_splits.located(split, uri), tmp_path / "there")  # its CRC-32 checked
        assert "error" not in here and "error" not in there
        rows += here["rows"]
        assert {k: v for k, v in there.items() if k != "seconds"} == {k: v for k, v in here.items() if k != "seconds"}
        assert staged(tmp_path / "there", there) == staged(tmp_path / "here", here)
    assert rows > 1000


def test_an_object_shorter_than_the_planned_file_is_an_error_naming_the_file(bucket, tmp_path):
    uri = f"s3://{bucket}/binlogs/{SAMPLE.name}"
    with storage.open_output(uri) as target:
        target.write(SAMPLE.read_bytes()[:10_000])
    split = dataclasses.replace(list(plan_splits([str(SAMPLE)], target_bytes=256 << 10))[-1], location=uri)
    summary = decode_split(split, tmp_path / "staging")
    assert summary["error"]["kind"] == errors.TruncatedError.__name__
    assert summary["error"]["file"] == str(SAMPLE) and summary["error"]["position"] == 10_000
    assert "shorter than the file the run planned from" in summary["error"]["message"]
    assert summary["versions"] == [] and not list((tmp_path / "staging").rglob("*.arrow"))


def test_files_reach_the_tasks_from_an_s3_source_as_they_are_else_as_copies(bucket, tmp_path):
    area = f"s3://{bucket}/lake/_runs/r1"
    inflated = tmp_path / SAMPLE.name
    shutil.copyfile(SAMPLE, inflated)
    plain, compressed = SourceFile(SAMPLE.name, str(SAMPLE)), SourceFile(SAMPLE.name, str(inflated), f"{SAMPLE.name}.gz")
    assert split_locations([plain], {str(SAMPLE): 1000}, f"s3://{bucket}/binlogs/", area) == {
        str(SAMPLE): f"s3://{bucket}/binlogs/{SAMPLE.name}"}  # nothing uploaded
    assert not storage.exists(f"{area}/{COPIES}/{SAMPLE.name}")
    for source, file in (("file:///srv/binlogs", plain), (f"s3://{bucket}/binlogs", compressed)):
        [(path, location)] = split_locations([file], {file.path: 5000}, source, area).items()
        assert path == file.path and location == f"{area}/{COPIES}/{SAMPLE.name}"
        filesystem, key = storage.open_file(location)
        assert filesystem.open_input_file(key).read() == SAMPLE.read_bytes()[:5000]  # as far as the run planned


def test_an_object_rewritten_since_the_run_was_planned_is_refused_not_decoded(bucket, tmp_path):
    """The object holds another binlog's bytes under the planned name (a name reused after RESET
    MASTER, an archive overwritten), as long as the file: the task's CRC-32 of what it fetched
    differs from the driver's, the split fails naming the file, and it stages nothing."""
    uri = f"s3://{bucket}/binlogs/{SAMPLE.name}"
    data = bytearray(SAMPLE.read_bytes())
    split = list(plan_splits([str(SAMPLE)], target_bytes=256 << 10))[-1]
    data[split.end - 10] ^= 0xFF  # one byte of the split's last event
    with storage.open_output(uri) as target:
        target.write(bytes(data))
    located = remote_splits.located(split, uri)
    summary = decode_split(located, tmp_path / "staging")
    assert summary["error"]["kind"] == errors.ChecksumError.__name__
    assert summary["error"]["file"] == str(SAMPLE) and "the object was rewritten since" in summary["error"]["message"]
    assert summary["versions"] == [] and not list((tmp_path / "staging").rglob("*.arrow"))
