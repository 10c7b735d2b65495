#!/usr/bin/env python3
"""Make (or reuse) the binlogs of the ingest scenarios: a small incremental run, one big transaction.

Each scenario runs its SQL on a private MariaDB server of its own (:class:`make_binlog.Server`,
data under ``.bench/scenarios/<key>-mdb``, the same settings as ``make_binlog.py``: ROW format,
FULL row images and row metadata, CRC32), in steps; each step ends with FLUSH BINARY LOGS, so
it is one closed binlog file of its own, the files following each other as one stream:

* ``incremental``: ``bench_inc.items`` (``INT UNSIGNED AUTO_INCREMENT`` key, mixed columns)
  gets 100,000 rows (``mariadb-bin.000001``, the run before the measured one); then 1,100 row
  changes (``mariadb-bin.000002``): 100 transactions, each updating 10 of the newest 1,000 rows
  and inserting one row;
* ``big-transaction``: ``bench_big.wide`` (8 columns: ``INT UNSIGNED`` key, ``BIGINT``,
  ``VARCHAR(64)`` utf8mb4, ``TEXT``, ``DATETIME(6)``, ``DECIMAL(20,4)``, ``JSON``, ``ENUM``) gets
  2,000,000 inserts and one UPDATE of all its rows, 4,000,000 row changes in ONE transaction
  (``mariadb-bin.000001``, 867 MB; a transaction is never cut across files, even one larger than
  ``max_binlog_size``).

The server's binlog settings are checked before the workload (:func:`settings_problems`); the
binlog cache may take the whole transaction. The files are then hard-linked (copied where a
link is impossible) to ``.bench/scenarios/<key>/`` and the server's directory is removed: no
measurement needs the server again. ``stamp.json`` there, written last, marks the files as
complete; later runs reuse them while it matches them and :data:`GENERATOR_VERSION`.

    python benchmarks/scenario_binlogs.py [incremental] [big-transaction] [--force]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import make_binlog

SCENARIO_DIR = make_binlog.BENCH_DIR / "scenarios"
# Bump when a scenario's workload or server settings change so cached files are made again.
GENERATOR_VERSION = 2
# The binlog cache of a session: 1 MiB in memory, the rest spilled to a file in the server's
# directory, at most 16 GiB: the 4M-change transaction takes about 1 GB.
BINLOG_CACHE_SETTINGS = "--binlog-cache-size=1M --max-binlog-cache-size=16G"
MAX_BINLOG_CACHE_BYTES = 16 * 2**30
# What every scenario's server must write: the same as make_binlog.py's.
REQUIRED_SETTINGS = {"binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL",
                     "binlog_checksum": "CRC32"}

INCREMENTAL_SCHEMA = """
CREATE DATABASE bench_inc;
USE bench_inc;
CREATE TABLE items (
  id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  sku VARCHAR(32) NOT NULL,
  price DECIMAL(10,2) NOT NULL,
  stock INT NOT NULL,
  status ENUM('active','paused','gone') NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  note TEXT
) ENGINE=InnoDB;
"""
INCREMENTAL_BASE_ROWS = 100_000
INCREMENTAL_UPDATES = 1_000
INCREMENTAL_INSERTS = 100
BASE_ROWS_PER_TRANSACTION = 1_000

BIG_SCHEMA = """
CREATE DATABASE bench_big;
USE bench_big;
CREATE TABLE wide (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  qty BIGINT NOT NULL,
  name VARCHAR(64) CHARACTER SET utf8mb4 NOT NULL,
  note TEXT,
  created_at DATETIME(6) NOT NULL,
  amount DECIMAL(20,4) NOT NULL,
  attrs JSON,
  state ENUM('new','active','archived') NOT NULL
) ENGINE=InnoDB;
"""
BIG_ROWS = 2_000_000


def incremental_base_sql(rows: int = INCREMENTAL_BASE_ROWS, per_transaction: int = BASE_ROWS_PER_TRANSACTION) -> str:
    """The table and its first ``rows`` rows, keys 1 to ``rows``, in transactions of
    ``per_transaction`` inserts. The keys are given: InnoDB reserves AUTO_INCREMENT values for an
    INSERT ... SELECT in growing batches and leaves gaps; the inserts after it take the next ones."""
    parts = [INCREMENTAL_SCHEMA]
    for start in range(0, rows, per_transaction):
        parts += [
            "BEGIN;",
            "INSERT INTO items SELECT "
            f"{start} + seq, CONCAT('SKU-', LPAD({start} + seq, 8, '0')), ({start} + seq) * 37 % 100000 / 100, "
            f"({start} + seq) % 500, ELT(1 + seq % 3, 'active', 'paused', 'gone'), "
            f"TIMESTAMP'2024-01-01 00:00:00' + INTERVAL ({start} + seq) * 1731 MICROSECOND, "
            f"IF(seq % 4 = 0, NULL, CONCAT('item ', {start} + seq, ' ', REPEAT('x', seq % 40))) "
            f"FROM seq_1_to_{min(per_transaction, rows - start)};",
            "COMMIT;",
        ]
    return "\n".join(parts) + "\n"


def incremental_changes_sql(base_rows: int = INCREMENTAL_BASE_ROWS, updates: int = INCREMENTAL_UPDATES,
                            inserts: int = INCREMENTAL_INSERTS) -> str:
    """The measured run's changes: ``inserts`` transactions, each updating the next
    ``updates // inserts`` of the newest ``updates`` rows (every column but the key and the SKU
    changes) and inserting one row."""
    per = updates // inserts
    parts = ["USE bench_inc;"]
    for n in range(inserts):
        first = base_rows - updates + n * per + 1
        parts += [
            "BEGIN;",
            "UPDATE items SET price = price + 0.01, stock = stock - 1, "
            "status = IF(status = 'active', 'paused', 'active'), "
            "updated_at = updated_at + INTERVAL 1 DAY, note = CONCAT(IFNULL(note, ''), ' (changed)') "
            f"WHERE id BETWEEN {first} AND {first + per - 1};",
            "INSERT INTO items (sku, price, stock, status, updated_at, note) VALUES "
            f"('SKU-NEW-{n:04d}', {n}.25, {n}, 'active', TIMESTAMP'2024-06-01 00:00:00' + INTERVAL {n} MINUTE, "
            f"'new item {n}');",
            "COMMIT;",
        ]
    return "\n".join(parts) + "\n"


def big_transaction_sql(rows: int = BIG_ROWS) -> str:
    """The table, then ``rows`` inserts and an UPDATE of every row, in one transaction."""
    return BIG_SCHEMA + "\n".join([
        "BEGIN;",
        "INSERT INTO wide SELECT seq, seq * 7919 % 1000000007, "
        "CONCAT('wide row ', seq, ' \u00e9t\u00e9 \u20ac'), "
        "IF(seq % 10 = 0, NULL, REPEAT(CHAR(97 + seq % 26), 20 + seq % 60)), "
        "TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq * 1731 MICROSECOND, "
        "(seq * 7907 % 100000000) / 10000 - 5000, "
        "IF(seq % 7 = 0, NULL, JSON_OBJECT('n', seq, 'tag', CONCAT('t', seq % 100), 'ok', seq % 2 = 0)), "
        "ELT(1 + seq % 3, 'new', 'active', 'archived') "
        f"FROM seq_1_to_{rows};",
        "UPDATE wide SET qty = qty + 1, amount = amount + 0.5, "
        "state = IF(state = 'archived', 'new', 'archived');",
        "COMMIT;",
    ]) + "\n"


@dataclass(frozen=True)
class Scenario:
    """A workload made into binlog files: each of ``steps`` (SQL) is one file, ``row_changes``
    of them by kind."""

    key: str
    steps: tuple[str, ...]
    row_changes: tuple[dict, ...]
    settings: dict = field(default_factory=lambda: {"MARIADBD_EXTRA_ARGS": BINLOG_CACHE_SETTINGS})

    @property
    def directory(self) -> Path:
        return SCENARIO_DIR / self.key

    @property
    def server_dir(self) -> Path:
        return SCENARIO_DIR / f"{self.key}-mdb"

    @property
    def stamp(self) -> Path:
        return self.directory / "stamp.json"


INCREMENTAL = Scenario(
    "incremental",
    (incremental_base_sql(), incremental_changes_sql()),
    ({"insert": INCREMENTAL_BASE_ROWS, "update": 0, "delete": 0},
     {"insert": INCREMENTAL_INSERTS, "update": INCREMENTAL_UPDATES, "delete": 0}),
)
BIG_TRANSACTION = Scenario(
    "big-transaction",
    (big_transaction_sql(),),
    ({"insert": BIG_ROWS, "update": BIG_ROWS, "delete": 0},),
)
SCENARIOS = {s.key: s for s in (INCREMENTAL, BIG_TRANSACTION)}


def settings_problems(variables: dict[str, str]) -> list[str]:
    """What in the server's variables (``SHOW VARIABLES``: name to value) keeps it from writing a
    scenario: another binlog format, row image, row metadata or checksum than
    :data:`REQUIRED_SETTINGS`, or a binlog cache smaller than :data:`MAX_BINLOG_CACHE_BYTES`
    (the big transaction would fail with "Multi-statement transaction required more than
    'max_binlog_cache_size' bytes of storage")."""
    problems = [f"{name} is {variables.get(name)!r}, not {value!r}"
                for name, value in REQUIRED_SETTINGS.items() if variables.get(name, "").upper() != value]
    cache = variables.get("max_binlog_cache_size", "")
    if not cache.isdigit() or int(cache) < MAX_BINLOG_CACHE_BYTES:
        problems.append(f"max_binlog_cache_size is {cache or None}, less than {MAX_BINLOG_CACHE_BYTES}")
    return problems


def _variables(server: make_binlog.Server) -> dict[str, str]:
    lines = server.sql("SHOW GLOBAL VARIABLES WHERE Variable_name LIKE 'binlog%' "
                       "OR Variable_name LIKE 'max_binlog%'").splitlines()[1:]
    return dict(line.split("\t", 1) for line in lines)


def read_stamp(scenario: Scenario) -> dict | None:
    """The scenario's stamp when its files are complete: the generator version matches and every
    file is there at its size; else None."""
    try:
        stamp = json.loads(scenario.stamp.read_text())
    except (OSError, ValueError):
        return None
    if stamp.get("generator_version") != GENERATOR_VERSION or len(stamp.get("files", [])) != len(scenario.steps):
        return None
    for entry in stamp["files"]:
        path = scenario.directory / entry["file"]
        if not path.is_file() or path.stat().st_size != entry["size"]:
            return None
    return stamp


def _make(scenario: Scenario, say) -> dict:
    """Run the scenario on a fresh server, keep its files, remove the server; the stamp's content."""
    server = make_binlog.Server(scenario.server_dir, scenario.settings)
    server.stop()
    shutil.rmtree(scenario.server_dir, ignore_errors=True)
    shutil.rmtree(scenario.directory, ignore_errors=True)
    t0 = time.monotonic()
    say(f"starting a private MariaDB server in {scenario.server_dir.relative_to(make_binlog.REPO_ROOT)}")
    server.start()
    try:
        variables = _variables(server)
        if problems := settings_problems(variables):
            raise RuntimeError(f"the server cannot write the {scenario.key} scenario: {'; '.join(problems)}")
        version = server.sql("SELECT VERSION()").splitlines()[1]
        names = []
        for n, sql in enumerate(scenario.steps, 1):
            names.append(server.binlogs()[-1][0])
            server.sql(sql)
            server.sql("FLUSH BINARY LOGS")  # the step's file closed with a ROTATE event
            say(f"  step {n} of {len(scenario.steps)}: {names[-1]}, {time.monotonic() - t0:.1f} s")
    finally:
        server.stop()
    scenario.directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        try:
            os.link(scenario.server_dir / "binlog" / name, scenario.directory / name)
        except OSError:
            shutil.copy2(scenario.server_dir / "binlog" / name, scenario.directory / name)
    shutil.rmtree(scenario.server_dir)
    return {
        "generator_version": GENERATOR_VERSION,
        "scenario": scenario.key,
        "files": [{"file": name, "size": (scenario.directory / name).stat().st_size, "row_changes": changes}
                  for name, changes in zip(names, scenario.row_changes)],
        "server_version": version,
        "server_settings": {k: v for k, v in variables.items() if k in (
            *REQUIRED_SETTINGS, "max_binlog_size", "max_binlog_cache_size", "binlog_cache_size")},
        "generation_seconds": round(time.monotonic() - t0, 1),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def ensure_files(scenario: Scenario, force: bool = False, quiet: bool = False) -> list[Path]:
    """The scenario's binlog files, in log order; made first unless the cached ones are complete."""
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, file=sys.stderr, flush=True))
    stamp = None if force else read_stamp(scenario)
    if stamp is None:
        stamp = _make(scenario, say)
        tmp = scenario.stamp.with_suffix(".tmp")
        tmp.write_text(json.dumps(stamp, indent=2) + "\n")
        tmp.replace(scenario.stamp)
        say(f"wrote the {scenario.key} scenario's {len(stamp['files'])} files in {stamp['generation_seconds']} s")
    else:
        say(f"reusing the {scenario.key} scenario's files in {scenario.directory}")
    return [scenario.directory / entry["file"] for entry in stamp["files"]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenarios", nargs="*", metavar="SCENARIO", help=f"of {', '.join(SCENARIOS)} (default: all)")
    ap.add_argument("--force", action="store_true", help="make the files again even if cached")
    args = ap.parse_args(argv)
    if unknown := set(args.scenarios) - set(SCENARIOS):
        ap.error(f"no scenario {', '.join(sorted(unknown))}")
    try:
        for key in args.scenarios or SCENARIOS:
            for path in ensure_files(SCENARIOS[key], args.force):
                print(path)
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"scenario_binlogs: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
