"""Bootstrap from a backup image, then ingest from its validity point: a real MariaDB server is the oracle.

The tables of :mod:`mariadb_workload` (every column type, seven charsets) get
their inserts; then a thread applies the workload's updates and deletes under
``binlog_row_image=MINIMAL`` (so every later change needs the snapshot's rows
to be whole) while ``binlog-codec backup create`` runs as a subprocess: the
first third of them before the backup starts, the second third while it runs,
the last third and a schema change only after it ended. A fresh warehouse is
bootstrapped from the image and the binlog files are ingested from the image's
position, which lies inside a file whose earlier part holds transactions the
snapshot already has.

``current/`` must equal ``SELECT`` on the server, value for value; ``changes/``
must hold the snapshot rows (``r``) and exactly the row changes logged after
the validity point, each once, none from before it. The same holds for a
warehouse in ``s3://`` on the private S3 server.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from binlog_codec.arrow import binlog_seq
from binlog_codec.backup import read_image
from binlog_codec.rows import read_rows
from mariadb_workload import (
    EVOLUTION,
    EVOLVED_TABLES,
    TABLES,
    assert_current_equals_server,
    evolution_operations,
    operations,
    warehouse_rows,
)
from spark_jobs.bootstrap import AlreadyBootstrapped, bootstrap
from spark_jobs.ingest import ingest
from warehouse import catalog, publish, storage

pytestmark = pytest.mark.integration

DATABASE = "bootstrap_e2e"
SOURCE_KEY = "s3://binlogs/bootstrap-e2e"
SESSION = "SET SESSION sql_mode = ''; SET SESSION time_zone = '+00:00'; SET SESSION binlog_row_image = {image};"
STATEMENTS_PER_SESSION = 8
WAIT_SECONDS = 300  # a safety net against a hung helper, never a condition of the result


def _session(image: str, sql: list[str]) -> str:
    return f"USE `{DATABASE}`; " + SESSION.format(image=image) + "\n".join(sql)


def _apply(mariadb, sql: list[str], image: str = "MINIMAL") -> None:
    """The statements in sessions of a few each (autocommit: one transaction per statement)."""
    for start in range(0, len(sql), STATEMENTS_PER_SESSION):
        mariadb.sql(_session(image, sql[start : start + STATEMENTS_PER_SESSION]))


def _later_statements() -> tuple[list[str], list[str], list[str]]:
    """The updates and deletes in three parts: before, during and after the backup."""
    later = [op.sql() for op in operations() if op.kind != "insert"]
    third = len(later) // 3
    return later[:third], later[third : 2 * third], later[2 * third :]


class Workload(threading.Thread):
    """Applies the later statements: part one, then (``started`` set) part two while the backup
    runs, then, once ``backup_done`` is set, part three and the schema change."""

    def __init__(self, mariadb) -> None:
        super().__init__(name="workload", daemon=True)
        self.mariadb, self.parts = mariadb, _later_statements()
        self.started, self.backup_done = threading.Event(), threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            before, during, after = self.parts
            _apply(self.mariadb, before)
            self.started.set()
            _apply(self.mariadb, during)
            if not self.backup_done.wait(WAIT_SECONDS):
                raise TimeoutError("the backup did not end")
            _apply(self.mariadb, after)
            # a schema change after the snapshot, and changes that use it (FULL images: a MINIMAL
            # change of a row last seen before the ALTER leaves the added column's DEFAULT unknown)
            _apply(self.mariadb, [EVOLUTION, *(op.sql() for op in evolution_operations())], image="FULL")
        except BaseException as exc:  # reported by the test, in its thread
            self.error = exc
            self.started.set()


@pytest.fixture(scope="module")
def scenario(mariadb, tmp_path_factory) -> dict:
    """The image, the source folder of binlog files and the validity point."""
    mariadb.sql("SET GLOBAL binlog_row_metadata = FULL")
    mariadb.flush_logs()
    first = mariadb.current_binlog()
    inserts = [op.sql() for op in operations() if op.kind == "insert"]
    mariadb.sql(f"CREATE DATABASE `{DATABASE}`;")
    mariadb.sql(_session("FULL", [table.ddl() for table in TABLES]))
    _apply(mariadb, inserts, image="FULL")
    work = tmp_path_factory.mktemp("bootstrap")
    image = work / "snapshot.bak"
    workload = Workload(mariadb)
    workload.start()
    assert workload.started.wait(WAIT_SECONDS)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "binlog_codec.cli", "backup", "create", "--socket", str(mariadb.socket),
             "--database", DATABASE, "--chunk-mb", "0.25", str(image)],
            capture_output=True, text=True, timeout=WAIT_SECONDS,
        )
    finally:
        workload.backup_done.set()
        workload.join(WAIT_SECONDS)
    assert workload.error is None, workload.error
    assert done.returncode == 0, done.stderr
    mariadb.flush_logs()
    source = work / "source"
    source.mkdir()
    for binlog in mariadb.binlog_files():
        if first <= binlog < mariadb.current_binlog():
            shutil.copyfile(binlog, source / binlog.name)
    with read_image(image) as reader:
        summary = reader.summary
    return {"image": image, "source": source, "file": summary.binlog_file, "position": summary.binlog_position}


@pytest.fixture(scope="module")
def warehouse(spark, scenario, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("warehouse")
    booted = bootstrap(spark, str(scenario["image"]), str(root), source_key=SOURCE_KEY)
    checkpoint = publish.read_checkpoint(root)
    ingested = ingest(str(scenario["source"]), str(root), spark=spark, source_key=SOURCE_KEY, validation=False)
    return {"root": root, "bootstrap": booted, "checkpoint_after_bootstrap": checkpoint, "ingest": ingested}


def table_rows(root: Path, area: str, table: str) -> list[dict]:
    return warehouse_rows(root, area, DATABASE, table)


def _astral_as_question_mark(text_hex: str) -> str:
    """MariaDB's SHOW CREATE TABLE is utf8mb3: a label's characters outside the BMP read as '?'
    in the image's CREATE TABLE, and so in the labels of snapshot rows (see the README)."""
    text = bytes.fromhex(text_hex).decode("utf-8")
    return "".join("?" if ord(char) > 0xFFFF else char for char in text).encode("utf-8").hex().upper()


def test_the_checkpoint_is_the_validity_point_inside_a_file_with_earlier_transactions(scenario, warehouse):
    assert warehouse["checkpoint_after_bootstrap"] == {
        SOURCE_KEY: {"file": scenario["file"], "position": scenario["position"]}
    }
    earlier = [r for r in read_rows(scenario["source"] / scenario["file"], database=DATABASE)
               if r.pos < scenario["position"]]
    assert earlier, "the validity point's file should hold transactions of the snapshot before it"
    assert warehouse["ingest"].inputs[0].name == scenario["file"]
    assert warehouse["ingest"].inputs[0].start == scenario["position"]


def test_current_equals_select(mariadb, warehouse):
    assert_current_equals_server(mariadb, warehouse["root"], DATABASE, EVOLVED_TABLES, _astral_as_question_mark)


def test_a_warehouse_in_s3_bootstrapped_then_ingested_equals_select(spark, mariadb, scenario, warehouse, s3_server,
                                                                   tmp_path):
    """The same image and binlogs into ``s3://`` on the private S3 server: the image's rows and
    the later changes are objects under the prefix, read through the catalog."""
    uri = f"s3://{s3_server.create_bucket('bootstrap')}/lake"
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {**s3_server.settings(), storage.STATE_ENV: str(tmp_path)}.items():
            patch.setenv(name, value)
        bootstrap(spark, str(scenario["image"]), uri, source_key=SOURCE_KEY)
        ingest(str(scenario["source"]), uri, spark=spark, source_key=SOURCE_KEY, validation=False)
        root = storage.state_folder(uri)
        assert publish.read_checkpoint(root) == publish.read_checkpoint(warehouse["root"])  # the local one's
        current = [path for table in EVOLVED_TABLES
                   for path in catalog.data_files(root, catalog.current_table(DATABASE, table.name))]
        homes = [re.fullmatch(rf"{uri}/data/([^/]+)\.[0-9a-f]+/current/{DATABASE}/[^/]+/[^/]+\.parquet", path)
                 for path in current]
        assert all(homes)
        # each file where the tasks of its run wrote it: the bootstrap's, and the ingest's for the tables it changed
        assert {found.group(1).startswith("bootstrap-") for found in homes} == {True, False}
        assert_current_equals_server(mariadb, root, DATABASE, EVOLVED_TABLES, _astral_as_question_mark)


def test_changes_hold_the_snapshot_and_every_change_after_it_once(scenario, warehouse):
    root, point = warehouse["root"], (binlog_seq(scenario["file"]), scenario["position"])
    logged = {}
    for binlog in sorted(scenario["source"].iterdir()):
        for record in read_rows(binlog, database=DATABASE):
            place = (binlog_seq(binlog.name), record.pos)
            if place > point:
                logged.setdefault(record.table, []).append((*place, record.inner_offset or 0, record.row_index))
    snapshot_rows = warehouse["bootstrap"].rows
    for table in TABLES:
        changes = table_rows(root, "changes", table.name)
        snapshot = [c for c in changes if c["_op"] == "r"]
        later = [c for c in changes if c["_op"] != "r"]
        assert len(snapshot) == snapshot_rows[f"{DATABASE}.{table.name}"] > 0, table.name
        assert {(c["_binlog_seq"], c["_binlog_pos"]) for c in snapshot} == {point}
        places = sorted((c["_binlog_seq"], c["_binlog_pos"], c["_binlog_inner_offset"] or 0, c["_row_index"])
                        for c in later)
        assert places == sorted(logged.get(table.name, [])), table.name  # none before, none twice, none missed
        assert all(place[:2] > point for place in places)
    assert sum(len(v) for v in logged.values()) == sum(warehouse["ingest"].rows.values())


def test_a_second_bootstrap_of_the_source_is_refused(spark, scenario, warehouse):
    root = warehouse["root"]
    before = {p: p.read_bytes() for p in sorted(root.rglob("*.parquet"))}
    with pytest.raises(AlreadyBootstrapped, match=SOURCE_KEY):
        bootstrap(spark, str(scenario["image"]), str(root), source_key=SOURCE_KEY)
    assert {p: p.read_bytes() for p in sorted(root.rglob("*.parquet"))} == before


def test_the_run_record_and_table_schemas_name_the_image(scenario, warehouse):
    root = warehouse["root"]
    runs = pq.read_table(root / "metadata" / "runs").to_pylist()
    booted = [run for run in runs if run["kind"] == "bootstrap"]
    assert len(booted) == 1 and booted[0]["run_id"] == warehouse["bootstrap"].run_id
    schemas = pq.read_table(root / "metadata" / "table_schemas").to_pylist()
    first = {(s["table"], s["first_file"], s["first_pos"]) for s in schemas if s["first_pos"] == scenario["position"]}
    assert {name for name, _, _ in first} == {table.name for table in TABLES}
