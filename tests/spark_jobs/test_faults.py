"""Fault injection: ``python -m spark_jobs.ingest`` killed with SIGKILL at random moments.

The source is the bundled samples, written the way a server writes them: each
round the files have grown to a new random length (cut after any event, inside
a transaction too, so a file still being written is read up to its last
complete transaction). Each round a run is started and killed, with its whole
process group (the Spark JVM and its workers too), at a random moment: up to a
second after a random line of its log (among as many lines as the round
before's runs logged, a clean run's for the first: a run of a larger state logs
at least as many), so that the kills spread over every step, the commit
included; then a recovery run completes. A last run reads the complete files.

The warehouse must then hold exactly what one clean run over the complete
files gives: the same ``changes`` and ``current`` rows, no duplicate
``(_binlog_seq, _binlog_pos, _binlog_inner_offset, _row_index)``, none missing,
the same checkpoint, and no run or journal left behind; the tables are read
through the Iceberg catalog, and the metadata tables runs append to hold what
their folders hold, each row once.

The moments are drawn from a seeded generator (``BINLAKE_FAULTS_SEED``); the
assertions hold whatever moment a kill lands on. The test runs with the
warehouse in a folder, and in ``s3://`` on the private S3 server (its state
folder local) against a clean run into a folder. The suite kills 3 runs; ``BINLAKE_FAULTS=N`` kills N. Runs skip the validation
step to spend the time on kills: it writes the run's quality report under
``quality/`` and publishes nothing.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest

from binlog_codec.reader import BinlogReader
from binlog_codec.transactions import scan_transactions
from mariadb import REPO_ROOT
from spark_jobs.ingest import RUNS_FOLDER
from spark_jobs.streams import position_of
from warehouse import catalog, maintenance, publish, storage
from warehouse.layout import DATA_FOLDER

SAMPLES = sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*"))
KILLS = int(os.environ.get("BINLAKE_FAULTS", "3"))
SEED = int(os.environ.get("BINLAKE_FAULTS_SEED", "20261122"))
ROW_KEY = ("_binlog_seq", "_binlog_pos", "_binlog_inner_offset", "_row_index")


@dataclass
class Tally:
    """What the killed runs were doing when they died (the last logger they logged from)."""

    killed: Counter = field(default_factory=Counter)
    finished_first: int = 0

    def summary(self) -> str:
        phases = ", ".join(f"{phase}: {n}" for phase, n in sorted(self.killed.items()))
        return f"{sum(self.killed.values())} runs killed ({phases}); {self.finished_first} finished before their kill"


@dataclass(frozen=True)
class Warehouse:
    """A warehouse as the runs are given it (``uri``: a folder or ``s3://``) and its state folder."""

    uri: str
    state: Path

    @classmethod
    def folder(cls, path: Path) -> "Warehouse":
        return cls(str(path), path)


def ingest_command(source: Path, warehouse: Warehouse) -> list[str]:
    return [sys.executable, "-m", "spark_jobs.ingest", "--source", str(source), "--warehouse", warehouse.uri,
            "--state", str(warehouse.state), "--master", "local[2]", "--no-validation"]


def environment() -> dict[str, str]:
    return {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(REPO_ROOT)}


def run_to_the_end(source: Path, warehouse: Warehouse, log: Path) -> int:
    """One complete ingest; returns the number of lines it logged."""
    with open(log, "w") as output:
        done = subprocess.run(ingest_command(source, warehouse), stdout=output, stderr=subprocess.STDOUT,
                              env=environment(), timeout=900)
    assert done.returncode == 0, log.read_text()[-4000:]
    return len(logged_lines(log))


def run_and_kill(source: Path, warehouse: Warehouse, moment: tuple[int, float], log: Path, tally: Tally) -> int:
    """An ingest killed (SIGKILL to its whole process group) at ``moment``: ``delay`` seconds after
    it logged its ``lines``-th line, unless it finished before; returns the lines it logged."""
    lines, delay = moment
    with open(log, "w") as output:
        process = subprocess.Popen(ingest_command(source, warehouse), stdout=output, stderr=subprocess.STDOUT,
                                   env=environment(), start_new_session=True)
        while process.poll() is None and len(logged_lines(log)) < lines:
            time.sleep(0.05)
        try:
            process.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            tally.killed[last_logger(log)] += 1
            return len(logged_lines(log))
    assert process.returncode == 0, log.read_text()[-4000:]
    tally.finished_first += 1
    return len(logged_lines(log))


def logged_lines(log: Path) -> list[str]:
    """The lines of the run's Python logging (``<date> <time> <level> <logger>: <message>``)."""
    return [line for line in log.read_text(errors="replace").splitlines()
            if line[:2] == "20" and len(line.split()) > 3 and line.split()[2] in ("INFO", "WARNING", "ERROR")]


def last_logger(log: Path) -> str:
    """The logger of the last line the run logged (``spark startup`` before the first)."""
    names = [line.split()[3].rstrip(":") for line in logged_lines(log)]
    return names[-1] if names else "spark startup"


def growth(rng: random.Random, rounds: int) -> list[dict[str, int]]:
    """``rounds`` growing states of the samples (file name -> length), then the complete files.
    A file appears once it holds its first transaction and grows event by event (a cut may
    fall inside a transaction; one inside an event is a broken file, see
    :func:`test_a_file_cut_inside_an_event_fails_the_run_and_publishes_nothing`)."""
    cuts = []  # (file index, length) at every event end after the file's first transaction
    for index, sample in enumerate(SAMPLES):
        first = next(scan_transactions(sample)).end
        cuts += [(index, raw.pos + raw.size) for raw in BinlogReader(sample) if raw.pos + raw.size >= first]
    states = []
    for index, length in sorted(rng.choice(cuts) for _ in range(rounds)):
        state = {sample.name: sample.stat().st_size for sample in SAMPLES[:index]}
        states.append({**state, SAMPLES[index].name: length})
    return states + [{sample.name: sample.stat().st_size for sample in SAMPLES}]


def write_source(source: Path, state: dict[str, int]) -> None:
    """The source folder as it is when its files have the lengths of ``state``."""
    source.mkdir(exist_ok=True)
    for sample in SAMPLES:
        if sample.name in state:
            (source / sample.name).write_bytes(sample.read_bytes()[: state[sample.name]])


def rows(warehouse: Path, area: str) -> dict[str, list[dict]]:
    """Per source table, the rows of its ``changes`` or ``current`` (``area``), read through the
    Iceberg catalog as users read them."""
    tables = catalog.open_catalog(warehouse)
    name = catalog.changes_table if area == "changes" else catalog.current_table
    return {f"{database}.{table}": catalog.read(warehouse, name(database, table)).to_pylist()
            for (database,) in tables.list_namespaces() if database != catalog.NAMESPACE
            for table in catalog.tables_of_database(warehouse, database)}


def as_multiset(table_rows: list[dict]) -> Counter:
    return Counter(json.dumps(row, sort_keys=True, default=str) for row in table_rows)


def positions(warehouse: Path) -> dict:
    """Where each stream of the warehouse is: file, position, GTID set."""
    return {stream: position_of(entry) for stream, entry in publish.read_checkpoint(warehouse).items()}


def metadata_rows(warehouse: Path, name: str) -> list[dict]:
    """Every row of the metadata table ``_binlake.<name>``, read through the catalog, but the
    ordinal of the run that read it (``_run``: the runs of a killed sequence are not the clean one's)."""
    rows = catalog.open_catalog(warehouse).load_table(catalog.identifier(name)).scan().to_arrow()
    return rows.drop_columns([column for column in ("_run",) if column in rows.column_names]).to_pylist()


@pytest.fixture(params=["folder", "s3"])
def faulted(request, tmp_path) -> Warehouse:
    """The warehouse the runs are killed in: a folder, or ``s3://`` on the private S3 server."""
    if request.param == "folder":
        return Warehouse.folder(tmp_path / "faulted")
    server, monkeypatch = request.getfixturevalue("s3_server"), request.getfixturevalue("monkeypatch")
    for name, value in server.settings().items():
        monkeypatch.setenv(name, value)  # for the runs (their environment is this one's) and the reads here
    return Warehouse(f"s3://{server.create_bucket('faults')}/faulted", tmp_path / "faulted-state")


def test_runs_killed_at_random_moments_publish_every_row_exactly_once(tmp_path, faulted):
    rng = random.Random(SEED)
    source, clean = tmp_path / "source", Warehouse.folder(tmp_path / "clean")
    states = growth(rng, KILLS)
    write_source(source, states[-1])
    lines = run_to_the_end(source, clean, tmp_path / "clean.log")
    shutil.rmtree(source)

    tally = Tally()
    for n, state in enumerate(states[:-1]):
        write_source(source, state)
        moment = (rng.randint(0, lines), rng.uniform(0, 1))
        logged = run_and_kill(source, faulted, moment, tmp_path / f"killed-{n}.log", tally)
        recovered = run_to_the_end(source, faulted, tmp_path / f"recovery-{n}.log")
        lines = max(logged, recovered)  # what a run of the next, larger state logs at least: its kill lands inside
        print(f"round {n + 1}/{KILLS}: {tally.summary()}", flush=True)
    write_source(source, states[-1])
    run_to_the_end(source, faulted, tmp_path / "last.log")
    print(f"seed {SEED}: {tally.summary()}")
    clean, faulted = clean.state, faulted.state

    expected_changes, changes = rows(clean, "changes"), rows(faulted, "changes")
    assert sorted(changes) == sorted(expected_changes) and sum(map(len, changes.values())) > 0
    for table, table_rows in changes.items():
        keys = Counter(tuple(row[column] for column in ROW_KEY) for row in table_rows)
        assert [key for key, count in keys.items() if count > 1] == [], f"{table}: duplicate rows"
        assert as_multiset(table_rows) == as_multiset(expected_changes[table]), f"{table}: rows differ"
    assert {t: as_multiset(r) for t, r in rows(faulted, "current").items()} == {
        t: as_multiset(r) for t, r in rows(clean, "current").items()
    }
    assert positions(faulted) == positions(clean)  # the record of each file read keeps its own stamps
    assert publish.read_checkpoint(faulted)[str(source.resolve())]["position"] == SAMPLES[-1].stat().st_size
    assert not (faulted / RUNS_FOLDER).exists() and not (faulted / publish.JOURNAL).exists()
    assert sum(tally.killed.values()) + tally.finished_first == KILLS
    # the metadata tables hold every committed row once, as the clean runs' do
    for name in ("transactions", "schema_changes"):
        assert as_multiset(metadata_rows(faulted, name)) == as_multiset(metadata_rows(clean, name))
    # what the killed runs left (their output folders in an object store) goes with maintenance, and no row with it
    published = {area: {t: as_multiset(r) for t, r in rows(faulted, area).items()} for area in ("changes", "current")}
    maintenance.remove_orphan_files(faulted, timedelta(0))
    maintenance.remove_abandoned_runs(faulted, timedelta(0))
    assert {area: {t: as_multiset(r) for t, r in rows(faulted, area).items()} for area in published} == published
    named = {catalog.local_path(uri) for _, table in maintenance.tables(catalog.open_catalog(faulted))
             for uri in table.inspect.all_files()["file_path"].to_pylist()}  # any snapshot's
    assert {file.location for file in storage.of(faulted).files(DATA_FOLDER)} <= named




def test_a_file_cut_inside_an_event_fails_the_run_and_publishes_nothing(tmp_path):
    """Half an event at a file's end is a broken file, not one being written: the run stops
    with the located error, and once the file is whole a run publishes all of it."""
    source, warehouse = tmp_path / "source", Warehouse.folder(tmp_path / "warehouse")
    sample = SAMPLES[0]
    last = list(BinlogReader(sample))[-1]
    write_source(source, {sample.name: last.pos + last.size // 2})
    broken = subprocess.run(ingest_command(source, warehouse), capture_output=True, text=True,
                            env=environment(), timeout=900)
    assert broken.returncode != 0
    assert f"{sample.name}: at {last.pos}" in broken.stderr and "TruncatedError" in broken.stderr
    assert not (warehouse.state / "changes").exists() and publish.read_checkpoint(warehouse.state) == {}
    write_source(source, {sample.name: sample.stat().st_size})
    run_to_the_end(source, warehouse, tmp_path / "whole.log")
    assert publish.read_checkpoint(warehouse.state)[str(source.resolve())]["position"] == sample.stat().st_size
