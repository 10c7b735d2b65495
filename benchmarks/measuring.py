"""How the benchmarks run a reader as a command: wall time, peak memory, and its row changes counted.

Shared by ``run.py`` (the MariaDB binlog) and ``json_corpus.py`` (the synthetic MySQL 8 binlog):

* :func:`run_command` runs one command with its output to /dev/null (or to a file) and returns
  its wall seconds and its peak resident memory, from the kernel's accounting of the process;
* :func:`count_row_lines` runs a reader once more and counts the row changes it prints, by kind;
  :func:`mariadb_binlog_row_counts` does so for ``mariadb-binlog -v``;
* :func:`load_average` tells how busy the machine was around a measurement.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import BinaryIO, Callable

from make_binlog import REPO_ROOT

ROW_KINDS = ("insert", "update", "delete")

# The in-tree command line, run with this interpreter.
CODEC = [sys.executable, "-c", "import sys; from binlog_codec.cli import main; sys.exit(main())"]


class CommandFailed(RuntimeError):
    """A measured command exited with a status other than 0; ``stderr`` is the end of what it
    said (control characters, such as the bell mariadb-binlog rings, left out)."""

    def __init__(self, returncode: int, stderr: bytes) -> None:
        text = "".join(ch for ch in stderr.decode(errors="replace") if ch.isprintable() or ch in "\n\t")
        self.returncode, self.stderr = returncode, text.strip()[-800:]
        super().__init__(f"exit {returncode}: {self.stderr}")


def command_env(extra: dict | None = None) -> dict:
    """The environment of a measured command: ours, ``extra``, and this checkout first on PYTHONPATH."""
    return dict(os.environ, **(extra or {}), PYTHONPATH=os.pathsep.join(
        p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p))


def run_command(argv: list[str], timeout: float, env: dict | None = None,
                stdout: BinaryIO | None = None) -> tuple[float, float]:
    """Wall seconds and peak resident memory (MB, from the kernel's accounting of the
    process) of one run of ``argv``, output to /dev/null (or to the file ``stdout``).

    Raises :class:`CommandFailed` when it exits with another status than 0, RuntimeError when it
    runs longer than ``timeout`` seconds."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.DEVNULL if stdout is None else stdout,
            stderr=errors,
            cwd=REPO_ROOT,
            env=command_env(env),
        )
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise RuntimeError(f"timed out after {timeout:.0f} s")
            time.sleep(0.01)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            errors.seek(0)
            raise CommandFailed(proc.returncode, errors.read())
    return seconds, usage.ru_maxrss / 1024


def load_average() -> float | None:
    """The machine's 1-minute load average: other work on the machine slows every measurement down."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def count_row_lines(argv: list[str], kind_of: Callable[[bytes], str | None]) -> dict:
    """Row changes printed by ``argv``: every output line that ``kind_of`` names a kind
    (insert, update or delete) counts as one. Raises :class:`CommandFailed` when it fails."""
    counts = dict.fromkeys(ROW_KINDS, 0)
    with tempfile.TemporaryFile() as errors:
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors, cwd=REPO_ROOT, env=command_env()) as proc:
            for line in proc.stdout:
                kind = kind_of(line)
                if kind is not None:
                    counts[kind] += 1
        if proc.returncode != 0:
            errors.seek(0)
            raise CommandFailed(proc.returncode, errors.read())
    return {"rows": sum(counts.values()), **counts}


# The first line of each row change ``mariadb-binlog -v`` prints, by kind.
MARIADB_ROW_STARTS = {b"### INSERT INTO ": "insert", b"### UPDATE ": "update", b"### DELETE FROM ": "delete"}


def mariadb_row_kind(line: bytes) -> str | None:
    """The kind of row change a line of ``mariadb-binlog -v`` output starts, or None."""
    if line.startswith(b"### ") and not line.startswith(b"###   "):
        for start, kind in MARIADB_ROW_STARTS.items():
            if line.startswith(start):
                return kind
    return None


def mariadb_binlog_row_counts(path: Path, mariadb_binlog: str) -> dict:
    """Row changes printed by ``mariadb-binlog -v --base64-output=decode-rows``:
    its ``### INSERT INTO`` / ``### UPDATE`` / ``### DELETE FROM`` lines."""
    return count_row_lines([mariadb_binlog, "-v", "--base64-output=decode-rows", str(path)], mariadb_row_kind)
