"""Backfill on a real MariaDB server's binlogs spanning three days: a past day's ``changes/``
partition is rebuilt from the binlogs, exactly, and nothing else moves."""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mariadb_workload import warehouse_rows
from spark_jobs.backfill import files_of_days, interval_days, prepare_backfill
from spark_jobs.ingest import FACTS_FOLDER, ingest, publish_run, validate_run, work_folder
from warehouse import publish

pytestmark = pytest.mark.integration

DATABASE = "backfill"
DAYS = [date(2026, 3, 1), date(2026, 3, 2), date(2026, 3, 3)]


def at(day: date, hour: int) -> int:
    return int(datetime(day.year, day.month, day.day, hour, tzinfo=timezone.utc).timestamp())


WORKLOAD = f"""
CREATE DATABASE {DATABASE};
USE {DATABASE};
CREATE TABLE item (id INT PRIMARY KEY, name VARCHAR(20), qty INT, note TEXT);
CREATE TABLE tally (n INT, label VARCHAR(10));
SET timestamp = {at(DAYS[0], 10)};
INSERT INTO item VALUES (1, 'one', 1, 'a'), (2, 'two', 2, 'b'), (3, 'three', 3, 'c');
INSERT INTO tally VALUES (1, 'x'), (1, 'x');
SET timestamp = {at(DAYS[1], 9)};
UPDATE item SET qty = 20 WHERE id = 2;
UPDATE item SET id = 30 WHERE id = 3;
DELETE FROM item WHERE id = 1;
INSERT INTO item VALUES (4, 'four', 4, 'd');
UPDATE tally SET label = 'y' LIMIT 1;
ALTER TABLE tally COMMENT 'counts';
SET timestamp = {at(DAYS[2], 8)};
UPDATE item SET name = 'deux' WHERE id = 2;
UPDATE item SET qty = 31 WHERE id = 30;
SET timestamp = DEFAULT;
"""


@pytest.fixture(scope="module")
def source(mariadb, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("source")
    mariadb.logged(WORKLOAD, folder, row_image="MINIMAL")
    return folder


def files(root: Path, area: str) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / area).rglob("*")) if p.is_file()}


def day_rows(root: Path, table: str, day: date) -> list[dict]:
    """The table's changes committed on ``day``, read through the catalog."""
    rows = [row for row in warehouse_rows(root, "changes", DATABASE, table) if row["_commit_ts"].date() == day]
    return sorted(rows, key=lambda r: (r["_binlog_seq"], r["_binlog_pos"], r["_row_index"]))


@pytest.fixture
def warehouse(spark, source, tmp_path) -> Path:
    root = tmp_path / "warehouse"
    assert ingest(str(source), str(root), spark=spark, validation=False).run_id
    return root


def test_interval_days_are_the_utc_days_it_touches():
    start = datetime(2026, 3, 1, 23, tzinfo=timezone.utc)
    assert interval_days(start, datetime(2026, 3, 2, 0, 30, tzinfo=timezone.utc)) == DAYS[:2]
    assert interval_days(datetime(2026, 3, 2, tzinfo=timezone.utc), datetime(2026, 3, 3, tzinfo=timezone.utc)) == [DAYS[1]]
    assert interval_days(start, start) == []


def test_a_lost_day_is_rebuilt_exactly_and_nothing_else_moves(spark, source, warehouse):
    wanted = day_rows(warehouse, "item", DAYS[1])
    assert [r["_op"] for r in wanted] == ["u", "u", "d", "c"] and files_of_days(warehouse, [DAYS[1]])
    lost = warehouse / "changes" / DATABASE / "item" / f"commit_date={DAYS[1]}"
    for part in lost.glob("*.parquet"):  # a bad earlier run: the day's rows wrong
        pq.write_table(pq.read_table(part).slice(0, 1), part)
    current, checkpoint = files(warehouse, "current"), publish.read_checkpoint(warehouse)
    others = {d: day_rows(warehouse, "item", d) for d in (DAYS[0], DAYS[2])}
    tally = files(warehouse, "changes/backfill/tally")

    interval = (datetime(2026, 3, 2, tzinfo=timezone.utc), datetime(2026, 3, 3, tzinfo=timezone.utc))
    for attempt in range(2):  # the same backfill twice: the partition replaced, never added to
        prepared = prepare_backfill(str(source), str(warehouse), start=interval[0], end=interval[1], spark=spark)
        assert prepared.skipped == [f"{DATABASE}.tally"] and prepared.rows == {f"{DATABASE}.item": 4}
        facts = work_folder(warehouse, prepared.run_id) / FACTS_FOLDER / "metadata" / "schema_changes"
        logged = pa.concat_tables(pq.read_table(p) for p in sorted(facts.glob("*.parquet"))).to_pylist()
        assert [(c["table"], c["change"], c["detail"]) for c in logged] == [("tally", "altered", "COMMENT 'counts'")]
        if attempt == 0:  # validated like any run: on the rows it rebuilds
            outcome = validate_run(spark, str(warehouse), prepared.run_id)
            (checked,) = outcome["tables"]
            assert outcome["success"] and (checked["table"], checked["rows"]) == ("item", 4)
            assert checked["expectations"] > 0
        publish_run(str(warehouse), prepared.run_id)
        rebuilt = day_rows(warehouse, "item", DAYS[1])
        drop = {"_incomplete_columns"}
        assert [{k: v for k, v in r.items() if k not in drop} for r in rebuilt] == [
            {k: v for k, v in r.items() if k not in drop} for r in wanted
        ], attempt
        assert [r["_incomplete_columns"] for r in rebuilt] == [r["_incomplete_columns"] for r in wanted]
    assert files(warehouse, "current") == current and publish.read_checkpoint(warehouse) == checkpoint
    assert {d: day_rows(warehouse, "item", d) for d in (DAYS[0], DAYS[2])} == others
    assert files(warehouse, "changes/backfill/tally") == tally  # no primary key: left as it was


def test_an_interval_in_which_nothing_committed_does_nothing(spark, source, warehouse):
    quiet = (datetime(2027, 1, 1, tzinfo=timezone.utc), datetime(2027, 1, 2, tzinfo=timezone.utc))
    assert prepare_backfill(str(source), str(warehouse), start=quiet[0], end=quiet[1], spark=spark).run_id == ""
