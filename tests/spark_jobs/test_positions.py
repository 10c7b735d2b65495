"""The checkpoint rule shared by staging, ingest and the lag shown in the UI."""

from __future__ import annotations

import pytest

from spark_jobs.positions import (
    CheckpointFileMissing, MissingFiles, after_checkpoint, binlog_name_of, is_binlog_name, log_order, missing_between,
)

FILES = [("mysql-bin.000010", 500), ("mysql-bin.000009", 900), ("mysql-bin.000011", 40)]


def pending(position):
    return [(name, start) for (name, _), start in
            after_checkpoint(FILES, position, name=lambda f: f[0], size=lambda f: f[1])]


def test_every_file_from_its_start_without_a_checkpoint_in_log_order():
    assert pending(None) == [("mysql-bin.000009", 0), ("mysql-bin.000010", 0), ("mysql-bin.000011", 0)]


def test_the_checkpoint_file_again_from_its_position_when_it_grew():
    assert pending({"file": "mysql-bin.000010", "position": 300}) == [("mysql-bin.000010", 300), ("mysql-bin.000011", 0)]
    assert pending({"file": "mysql-bin.000010", "position": 500}) == [("mysql-bin.000011", 0)]
    assert pending({"file": "mysql-bin.000011", "position": 40}) == []


def test_a_checkpoint_file_the_source_lost_is_an_error_naming_it():
    with pytest.raises(CheckpointFileMissing, match=r"mysql-bin.000003 is not in the source any more"):
        pending({"file": "mysql-bin.000003", "position": 4})


def test_names_and_order():
    assert is_binlog_name("relay.000001") and not is_binlog_name("mysql-bin.index")
    assert sorted(["b.10", "b.9", "a.100"], key=log_order) == ["a.100", "b.9", "b.10"]


def test_a_gap_in_the_numbers_after_the_checkpoint_is_named():
    files = [("b.000001", 10), ("b.000002", 10), ("b.000005", 10)]
    with pytest.raises(MissingFiles, match="lacks b.000003, b.000004 between b.000002 and b.000005") as raised:
        after_checkpoint(files, {"file": "b.000002", "position": 10}, name=lambda f: f[0], size=lambda f: f[1])
    assert raised.value.missing == ["b.000003", "b.000004"] and "--accept-gap" in raised.value.way_forward
    accepted = after_checkpoint(files, {"file": "b.000002", "position": 10}, name=lambda f: f[0],
                                size=lambda f: f[1], accept_gap=True)
    assert accepted == [(("b.000005", 10), 0)]
    assert after_checkpoint(files[:2], None, name=lambda f: f[0], size=lambda f: f[1]) == [(f, 0) for f in files[:2]]


def test_compressed_copies_stand_for_the_file_they_hold():
    assert binlog_name_of("mariadb-bin.000004.gz") == "mariadb-bin.000004"
    assert binlog_name_of("mariadb-bin.000004.zst") == "mariadb-bin.000004"
    assert binlog_name_of("mariadb-bin.000004") == "mariadb-bin.000004"
    assert binlog_name_of("mariadb-bin.000004.bak") is None and binlog_name_of("notes.gz") is None


def test_missing_names_keep_the_width_and_say_where_a_base_changes():
    assert missing_between(["x.9", "x.12"]) == ["x.10", "x.11"]
    assert missing_between(["a.000001", "b.000001"]) == ["(the files after a.000001 and before b.000001)"]
    many = missing_between(["x.000001", "x.005000"])
    assert len(many) == 1001 and many[-1] == "... up to x.004999"
