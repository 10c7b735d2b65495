#!/usr/bin/env python3
"""Make (or reuse) a large MariaDB binary log for benchmarks.

A private server (``infra/mariadb.sh``, data under ``.bench/mdb``) runs a
scripted, deterministic workload over three tables with a realistic mix of
column types (integers, VARCHAR, TEXT, DATETIME, DECIMAL, DOUBLE, ENUM, BLOB):
mostly row inserts in transactions of about 100 rows, plus some updates and
deletes, in ROW format with FULL row images and metadata and CRC32 checksums.
``max_binlog_size`` is 1G, so everything lands in one file, which is closed
with FLUSH BINARY LOGS and kept as ``.bench/binlog/mariadb-bin.000001``.

The server is then shut down but its data directory is kept: the file stays in
that server's binlog index (``.bench/binlog/`` holds a hard link to it, or a
copy), so ``run.py`` can start the same server again (:func:`bench_server`)
and have it stream that very file to a replication client.

The result is cached: a stamp file (``.bench/binlog/stamp.json``) written
last marks a complete file, and later runs reuse it. When the caller needs
the server too (``need_server=True``) and its data directory is gone or no
longer holds the same file, the binlog is made again.

    python benchmarks/make_binlog.py [--target-mb 1024] [--force] [--with-server]
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = REPO_ROOT / ".bench"
SERVER_DIR = BENCH_DIR / "mdb"
OUT_DIR = BENCH_DIR / "binlog"
STAMP = OUT_DIR / "stamp.json"
INFRA = REPO_ROOT / "infra" / "mariadb.sh"

# Bump when the workload changes so cached files are regenerated.
GENERATOR_VERSION = 1
DEFAULT_TARGET_MB = 1024  # a gigabyte: per-run costs (JVM start, planning) fade, rows/s and memory show
ROUNDS_PER_BATCH = 400

SCHEMA = """
CREATE DATABASE IF NOT EXISTS bench;
USE bench;
CREATE TABLE customers (
  id INT UNSIGNED NOT NULL PRIMARY KEY,
  name VARCHAR(64) NOT NULL,
  email VARCHAR(128),
  country CHAR(2) NOT NULL,
  created_at DATETIME NOT NULL,
  balance DECIMAL(12,2) NOT NULL,
  bio TEXT
) ENGINE=InnoDB;
CREATE TABLE orders (
  id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
  customer_id INT UNSIGNED NOT NULL,
  status ENUM('new','paid','shipped','cancelled') NOT NULL,
  amount DECIMAL(10,2) NOT NULL,
  qty SMALLINT NOT NULL,
  created_at DATETIME(6) NOT NULL,
  note VARCHAR(255),
  payload BLOB
) ENGINE=InnoDB;
CREATE TABLE events (
  id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
  kind TINYINT UNSIGNED NOT NULL,
  ts TIMESTAMP NULL,
  score DOUBLE,
  body TEXT
) ENGINE=InnoDB;
"""


def round_sql(r: int) -> str:
    """SQL for workload round ``r`` (deterministic). About 100 rows per
    transaction: 100 orders; 20 customers + 80 events; every fifth round an
    update of 50 orders and a delete of 40 events."""
    o = r * 100  # order ids r*100+1 .. r*100+100
    c = r * 20
    e = r * 80
    parts = [
        "BEGIN;",
        "INSERT INTO orders SELECT "
        f"{o} + seq, ({o} + seq) * 7919 % 200000 + 1, "
        "ELT(1 + seq % 4, 'new', 'paid', 'shipped', 'cancelled'), "
        f"(({o} + seq) * 37 % 100000) / 100, 1 + seq % 9, "
        f"TIMESTAMP'2024-01-01 00:00:00' + INTERVAL ({o} + seq) * 1731 MICROSECOND "
        f"+ INTERVAL {r} MINUTE, "
        f"CONCAT('order ', {o} + seq, ': ', REPEAT(CHAR(97 + seq % 26), seq % 60)), "
        f"IF(seq % 3 = 0, NULL, REPEAT(UNHEX(SHA2({o} + seq, 256)), 1 + seq % 4)) "
        "FROM seq_1_to_100;",
        "COMMIT;",
        "BEGIN;",
        "INSERT INTO customers SELECT "
        f"{c} + seq, CONCAT('Customer ', {c} + seq), "
        f"IF(seq % 5 = 0, NULL, CONCAT('user', {c} + seq, '@example.com')), "
        "ELT(1 + seq % 6, 'DE', 'FR', 'US', 'GB', 'JP', 'BR'), "
        f"TIMESTAMP'2023-06-01 00:00:00' + INTERVAL ({c} + seq) * 97 SECOND, "
        f"(({c} + seq) * 7907 % 10000000) / 100 - 20000, "
        f"CONCAT('Bio of customer ', {c} + seq, '. ', REPEAT('Lorem ipsum dolor sit amet. ', 1 + seq % 8)) "
        "FROM seq_1_to_20;",
        "INSERT INTO events SELECT "
        f"{e} + seq, seq % 16, "
        f"TIMESTAMP'2024-03-01 00:00:00' + INTERVAL ({e} + seq) SECOND, "
        f"({e} + seq) / 7.0, "
        f"IF(seq % 4 = 0, NULL, CONCAT('{{\"event\":', {e} + seq, ',\"kind\":', seq % 16, '}}')) "
        "FROM seq_1_to_80;",
        "COMMIT;",
    ]
    if r % 5 == 4:
        uo = (r - 3) * 100  # orders written a few rounds ago
        de = (r - 4) * 80
        parts += [
            "BEGIN;",
            "UPDATE orders SET status = 'shipped', amount = amount + 1.50, "
            f"note = CONCAT(note, ' (shipped)') WHERE id BETWEEN {uo + 1} AND {uo + 50};",
            f"DELETE FROM events WHERE id BETWEEN {de + 1} AND {de + 40};",
            "COMMIT;",
        ]
    return "\n".join(parts) + "\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A private server with its data in ``directory``; ``settings``: more environment for
    ``infra/mariadb.sh start`` (e.g. ``MARIADBD_EXTRA_ARGS``)."""

    def __init__(self, directory: Path, settings: dict | None = None):
        self.directory = directory
        self.socket = directory / "mariadb.sock"
        self.settings = settings or {}

    def start(self) -> None:
        env = dict(os.environ, MAX_BINLOG_SIZE="1G", INNODB_BUFFER_POOL_SIZE="512M", **self.settings)
        subprocess.run(
            ["bash", str(INFRA), "start", str(self.directory), str(_free_port())],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )

    def stop(self) -> None:
        subprocess.run(
            ["bash", str(INFRA), "stop", str(self.directory)],
            check=False,
            stdout=subprocess.DEVNULL,
        )

    def sql(self, text: str) -> str:
        client = shutil.which("mariadb") or shutil.which("mysql")
        if client is None:
            raise RuntimeError("the mariadb client is not installed")
        proc = subprocess.run(
            [
                client, "--no-defaults", "--protocol=socket", f"--socket={self.socket}",
                "-uroot", "--batch", "--raw", "--default-character-set=utf8mb4",
            ],
            input=text.encode(),
            capture_output=True,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"SQL failed: {proc.stderr.decode(errors='replace')}")
        return proc.stdout.decode()

    def binlogs(self) -> list[tuple[str, int]]:
        lines = self.sql("SHOW BINARY LOGS").splitlines()[1:]
        return [(l.split("\t")[0], int(l.split("\t")[1])) for l in lines]

    def port(self) -> int | None:
        try:
            return int((self.directory / "port").read_text().strip())
        except (OSError, ValueError):
            return None


def read_stamp() -> dict | None:
    try:
        stamp = json.loads(STAMP.read_text())
    except (OSError, ValueError):
        return None
    path = OUT_DIR / stamp.get("file", "")
    if (
        stamp.get("generator_version") != GENERATOR_VERSION
        or not path.is_file()
        or path.stat().st_size != stamp.get("size")
    ):
        return None
    return stamp


def server_problem(stamp: dict | None) -> str | None:
    """Why the server that wrote the cached binlog cannot stream it again, or None.

    Its data directory must still be there, with the file in its binlog index
    and byte for byte the cached one (normally the same inode: a hard link)."""
    if stamp is None:
        return "no cached binlog"
    name = stamp["file"]
    served = SERVER_DIR / "binlog" / name
    index = SERVER_DIR / "binlog" / "mariadb-bin.index"
    if not (SERVER_DIR / "data" / "mysql").is_dir():
        return f"the data directory of the server that wrote it ({SERVER_DIR.relative_to(REPO_ROOT)}) is gone"
    try:
        listed = [Path(line.strip()).name for line in index.read_text().splitlines() if line.strip()]
    except OSError:
        listed = []
    if name not in listed or not served.is_file():
        return f"{name} is no longer in that server's binlog index"
    cached = OUT_DIR / name
    if not (os.path.samefile(served, cached) or filecmp.cmp(served, cached, shallow=False)):
        return f"that server's {name} differs from the cached file"
    return None


def ensure_binlog(
    target_mb: int = DEFAULT_TARGET_MB, force: bool = False, quiet: bool = False, need_server: bool = False
) -> Path:
    """Path of a binlog of at least ``target_mb`` MB, generated if needed.

    With ``need_server``, the server that wrote it must be able to serve it
    again (see :func:`server_problem`); if it cannot, the binlog is made anew.
    """
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    target = target_mb * 1_000_000
    stamp = None if force else read_stamp()
    if stamp and stamp["size"] >= target:
        problem = server_problem(stamp) if need_server else None
        path = OUT_DIR / stamp["file"]
        if problem is None:
            say(f"reusing {path.relative_to(REPO_ROOT)} ({stamp['size'] / 1e6:.1f} MB)")
            return path
        say(f"not reusing {path.relative_to(REPO_ROOT)}: {problem}; making it again")

    if not shutil.which("mariadbd") and not Path("/usr/sbin/mariadbd").exists():
        raise RuntimeError("MariaDB is not installed; run: infra/mariadb.sh install")

    t0 = time.monotonic()
    server = Server(SERVER_DIR)
    server.stop()
    shutil.rmtree(SERVER_DIR, ignore_errors=True)
    shutil.rmtree(OUT_DIR, ignore_errors=True)
    say(f"starting a private MariaDB server in {SERVER_DIR.relative_to(REPO_ROOT)}")
    server.start()
    try:
        version = server.sql("SELECT VERSION()").splitlines()[1]
        server.sql(SCHEMA)
        first_file = server.binlogs()[-1][0]
        rnd = 0
        size = 0
        while size < target:
            batch = "USE bench;\n" + "".join(
                round_sql(r) for r in range(rnd, rnd + ROUNDS_PER_BATCH)
            )
            server.sql(batch)
            rnd += ROUNDS_PER_BATCH
            logs = server.binlogs()
            if len(logs) != 1 or logs[0][0] != first_file:
                raise RuntimeError(f"the workload spilled over several binlog files: {logs}")
            size = logs[0][1]
            elapsed = time.monotonic() - t0
            say(
                f"  {size / 1e6:7.1f} MB of {target / 1e6:.0f} MB, "
                f"{rnd * 200:>9,} rows inserted, {elapsed:5.1f} s"
            )
        server.sql("FLUSH BINARY LOGS")  # closes the file with a ROTATE event
    finally:
        server.stop()

    # The server keeps the file in its index, for streaming it later; the
    # cached path is a hard link to it (a copy across file systems).
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    src = SERVER_DIR / "binlog" / first_file
    dst = OUT_DIR / first_file
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
    seconds = time.monotonic() - t0
    stamp = {
        "generator_version": GENERATOR_VERSION,
        "file": dst.name,
        "size": dst.stat().st_size,
        "target_mb": target_mb,
        "rounds": rnd,
        "rows_inserted": rnd * 200,
        "server_version": version,
        "server_dir": str(SERVER_DIR.relative_to(REPO_ROOT)),
        "generation_seconds": round(seconds, 1),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    tmp = STAMP.with_suffix(".tmp")
    tmp.write_text(json.dumps(stamp, indent=2) + "\n")
    tmp.replace(STAMP)
    say(f"wrote {dst.relative_to(REPO_ROOT)}: {stamp['size'] / 1e6:.1f} MB in {seconds:.1f} s")
    return dst


@contextlib.contextmanager
def bench_server(path: Path):
    """Start the server that wrote the benchmark binlog ``path`` (same data
    directory and settings), check that it still lists that file at the same
    size, yield the :class:`Server`, and shut it down afterwards.

    Starting it writes a new binlog file after the existing ones; the
    benchmark file itself is closed and stays as it is."""
    problem = server_problem(read_stamp())
    if problem is None and path.resolve() != (OUT_DIR / read_stamp()["file"]).resolve():
        problem = f"{path} is not the generated benchmark binlog"
    if problem is not None:
        raise RuntimeError(f"cannot stream {path.name} from a server: {problem}")
    server = Server(SERVER_DIR)
    server.start()
    try:
        sizes = dict(server.binlogs())
        if sizes.get(path.name) != path.stat().st_size:
            raise RuntimeError(
                f"the server lists {path.name} with size {sizes.get(path.name)}, "
                f"the file has {path.stat().st_size} bytes"
            )
        yield server
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target-mb", type=int, default=DEFAULT_TARGET_MB,
                    help="minimum size of the binlog in MB (10^6 bytes)")
    ap.add_argument("--force", action="store_true", help="regenerate even if cached")
    ap.add_argument("--with-server", action="store_true",
                    help="regenerate also when the server that wrote the cached file cannot serve it again")
    args = ap.parse_args(argv)
    try:
        path = ensure_binlog(args.target_mb, args.force, need_server=args.with_server)
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"make_binlog: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
