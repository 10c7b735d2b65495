"""The checkpoint rule shared by staging, ingest and the lag shown in the UI."""

from __future__ import annotations

import pytest

from spark_jobs.positions import CheckpointFileMissing, after_checkpoint, is_binlog_name, log_order

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
