#!/usr/bin/env python3
"""Time binlog-codec against mariadb-binlog and python-mysql-replication on one large MariaDB binlog.

Makes sure the benchmark binlog exists (``make_binlog.py``), then times every
entry of ``BENCHMARKS`` on that same file in the same run: best of N wall
clock runs, output to /dev/null. For each it reports seconds, MB/s, events/s
(event count from binlog-codec's framing scan), rows/s (row count from
``read_rows``) and the ratio to plain ``mariadb-binlog FILE``; the row counts
of read_rows, python-mysql-replication and ``mariadb-binlog -v`` are compared,
and the rows/s of binlog-codec are set against python-mysql-replication's.
Results go to ``.bench/results.json`` and stdout.

The Spark pipeline is timed end to end as well: ``python -m spark_jobs.ingest``
over a folder holding just that file into a new warehouse, once with
``--master local[1]`` and once with ``local[2]`` (``--ingest-repeat`` runs
each), with how it scales and how it compares with ``binlog-codec rows``, and
the time of each phase (decode, materialize, publish) from its log.

Two ingest scenarios (:mod:`scenario_binlogs`: binlogs of their own, made once
and cached in ``.bench/scenarios``) run the same command on ``local[2]``, with
validation on and with ``--no-validation`` side by side (``report["scenarios"]``):
a small incremental run (1,100 row changes after a first run of 100,000 rows)
and one transaction of 4,000,000 row changes; each with its wall time, the
gate's seconds, the peak memory of every process and the log lines naming an
``OutOfMemoryError`` or at level ERROR. With ``--only`` naming just scenarios,
the MariaDB binlog is neither made nor read.

The JSON side (:mod:`json_corpus`) is timed on a synthetic MySQL 8 binlog of
binary JSON documents and partial JSON updates (``--json-target-mb``, 1024 by
default; made once and cached in ``.bench/json``): ``binlog-codec rows``,
python-mysql-replication and ``mariadb-binlog -v`` on that file, rows/s, MB/s,
peak memory, their row counts checked against the generator's.
``machine.two_process_speedup`` says how much two processes gain over one on
this machine for pure Python work: the ceiling of the ingest's ``local[2]``
over ``local[1]`` ratio. ``backup`` is the write and read speed of a
~100 MB WL#4063 backup image (:mod:`backup_bench`).

python-mysql-replication reads the file as a replica does: the server that
wrote it (data kept in ``.bench/mdb``) is started for that measurement,
streams the file over its Unix socket, and is shut down afterwards.

    python benchmarks/run.py [--repeat 3] [--ingest-repeat 1] [--only NAME ...] [--target-mb 1024] [--file BINLOG] [--json-target-mb 1024] [--no-json] [--no-backup]

A missing tool or a failing command is recorded as an error in the results;
the other measurements still run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(HERE))

import backup_bench  # noqa: E402
import json_corpus  # noqa: E402
import make_binlog  # noqa: E402
from measuring import CODEC, ROW_KINDS, mariadb_binlog_row_counts, run_command  # noqa: E402
from measuring import load_average as _load  # noqa: E402
import plot  # noqa: E402
import scenario_binlogs  # noqa: E402

RESULTS = make_binlog.BENCH_DIR / "results.json"
PLOT = RESULTS.with_suffix(".svg")  # throughput per measurement, next to the results
BASELINE = "mariadb-binlog"

PYMYSQLREPLICATION = "python-mysql-replication"
CODEC_ROWS = "binlog-codec rows"
CODEC_ROWS_PURE = "binlog-codec rows, pure Python"
ARROW = "decode to Arrow batches"
MARIADB_V = "mariadb-binlog -v decode-rows"
READ_ROWS = "python read_rows"
INGEST_1 = "spark ingest local[1]"
INGEST_2 = "spark ingest local[2]"
INGEST_2_VALIDATED = "spark ingest local[2], validation on"
INGEST_2_S3 = "spark ingest local[2], validation on, s3:// warehouse"
INGEST_1_CPU = "spark ingest local[1], one CPU"
INCREMENTAL = "spark ingest, incremental 1,100 changes"
BIG_TRANSACTION = "spark ingest, 4M changes in one transaction"
# Rows/s of the first entry over rows/s of the second (same as seconds of the
# second over seconds of the first): above 1, the first is faster.
RATIOS = [(CODEC_ROWS, PYMYSQLREPLICATION), (READ_ROWS, PYMYSQLREPLICATION), (CODEC_ROWS, MARIADB_V),
          (ARROW, MARIADB_V), (CODEC_ROWS, CODEC_ROWS_PURE), (INGEST_2, INGEST_1), (INGEST_2, INGEST_1_CPU)]
# Seconds of the first entry over seconds of the second: how many times as long
# the first takes.
TIME_RATIOS = [(INGEST_2, CODEC_ROWS), (INGEST_2_VALIDATED, INGEST_2), (INGEST_2_S3, INGEST_2_VALIDATED)]
# What binlog-codec aims at on one core (rows/s; rows/s over a peer's; peak
# memory), how the ingest scales from one core to two (rows/s of local[2] over
# rows/s of local[1]), and how long the ingest may take next to the codec alone.
TARGETS = {
    "rows_per_s": 100_000,
    "vs_python_mysql_replication": 5.0,
    "codec_rows_vs_mariadb_binlog_v": 1.0,
    "arrow_vs_mariadb_binlog_v": 1.5,
    "codec_rows_peak_rss_mb": 300,
    "ingest_local2_vs_local1": 1.8,
    "ingest_seconds_vs_codec_rows": 2.0,
    # Validation may add a quarter to the ingest's time (as users run it, over --no-validation).
    "ingest_validated_vs_unvalidated": 1.25,
    # A Spark task's budget: a fold bucket holds at most a million rows (spark_jobs.materialize).
    "ingest_task_peak_rss_mb": 2048,
    # A small incremental run (1,100 row changes, validation on): the gate's own seconds.
    "incremental_validation_seconds": 3.0,
    # One transaction of 4M row changes: the gate adds at most a quarter to the ingest's time, and
    # no log line of either run names an OutOfMemoryError.
    "big_transaction_validated_vs_unvalidated": 1.25,
    "big_transaction_out_of_memory_lines": 0,
}
# Runs of each ingest measurement (--ingest-repeat): each takes minutes.
INGEST_REPEAT = 1
# Where the ingest measurements keep their source folder, warehouses and logs.
INGEST_DIR = make_binlog.BENCH_DIR / "ingest"
# Reader's server id: any id but the server's own (1).
REPLICA_SERVER_ID = 4242


def framing_scan(path: Path) -> int:
    """Python API: iterate over every event (framing and CRC32 checks)."""
    from binlog_codec.reader import BinlogReader

    return sum(1 for _ in BinlogReader(path))


def read_rows_scan(path: Path) -> dict:
    """Python API: decode every row change with ``read_rows``, count them by kind."""
    from binlog_codec.rows import read_rows

    counts = dict.fromkeys(ROW_KINDS, 0)
    for record in read_rows(path):
        counts[record.kind] += 1
    return {"rows": sum(counts.values()), **counts}


def pymysqlreplication_stream(path: Path, server) -> dict:
    """python-mysql-replication: a replica's binlog dump of ``path`` from the
    server that wrote it, every row of every rows event decoded and counted.

    ``is_mariadb`` is left off on purpose: with it, the library sends an empty
    file name (and position 4) in its dump request, so the server would start at
    its first binlog rather than at ``log_file``. The MariaDB server takes the
    plain request (file name and position) as well."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    kinds = {WriteRowsEvent: "insert", UpdateRowsEvent: "update", DeleteRowsEvent: "delete"}
    counts = dict.fromkeys(ROW_KINDS, 0)
    stream = BinLogStreamReader(
        connection_settings={"unix_socket": str(server.socket), "user": "root", "password": ""},
        server_id=REPLICA_SERVER_ID,
        only_events=list(kinds),
        blocking=False,
        log_file=path.name,
        log_pos=4,
        resume_stream=True,
    )
    try:
        for event in stream:
            if stream.log_file != path.name:  # the server's later files (none holds rows)
                break
            n = 0
            for _row in event.rows:
                n += 1
            counts[kinds[type(event)]] += n
    finally:
        stream.close()
    return {"rows": sum(counts.values()), **counts}


# -- end-to-end ingest ------------------------------------------------------------------

# The ingest's log lines (logging's default asctime, then level and logger).
LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (\w+) ([\w.]+): (.*)$")
SUMMARY_LINE = re.compile(r"^run (\w+)(?: of stream .+)?: (\d+) files, ([\d,]+) bytes, ([\d,]+) row changes in "
                          r"([\d.]+) s(?: \(validation ([\d.]+) s\))?$")
TABLE_LINE = re.compile(r"^  (\S+): ([\d,]+)$")


def link_files(paths: list[Path], folder: Path) -> None:
    """A hard link to each of ``paths`` in ``folder`` (a symlink where a link is impossible)."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in paths:
        try:
            os.link(path, folder / path.name)
        except OSError:
            os.symlink(path, folder / path.name)


def ingest_source(path: Path) -> Path:
    """A source folder holding just ``path`` (see :func:`link_files`), under ``.bench/ingest/source``."""
    source = INGEST_DIR / "source"
    if source.exists():
        shutil.rmtree(source)
    link_files([path], source)
    return source


def _log_time(stamp: str) -> float:
    """Seconds since the epoch of a log line's local-time stamp."""
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def ingest_phases(log_text: str, started: float, ended: float) -> dict:
    """Where a run's wall time went, from its log lines (seconds, rounded):
    ``startup`` (interpreter, JVM and Spark session), ``plan`` (checkpoint,
    discovery, split planning), ``decode`` (the Spark decode job and staging),
    ``materialize`` (all tables, folded side by side; ``materialize_tables``:
    each table's own time from its start, as its log says), ``validate`` (the
    Great Expectations gate, None without it), ``publish``
    (metadata, run record, checkpoint and the commit) and ``shutdown``
    (stopping Spark, the process exiting)."""
    marks: dict[str, float] = {}
    tables: dict[str, float] = {}
    decode_reported = None
    for line in log_text.splitlines():
        m = LOG_LINE.match(line)
        if not m:
            continue
        t, logger, message = _log_time(m[1]), m[3], m[4]
        if logger == "spark_jobs.session" and "session on" in message:
            marks.setdefault("session", t)
        elif logger == "spark_jobs.decode" and message.startswith("decoding "):
            marks["decode_start"] = t
        elif logger == "spark_jobs.decode" and message.startswith("decoded "):
            marks["decode_end"] = t
            found = re.search(r" in ([\d.]+)s", message)
            decode_reported = float(found[1]) if found else None
        elif logger == "spark_jobs.materialize" and (found := re.match(r"^(\S+): \d+ changes into .*, ([\d.]+) s$", message)):
            tables[found[1]] = float(found[2])
        elif logger == "spark_jobs.ingest" and re.match(r"^\S+: \d+ changes, \d+ current rows$", message):
            marks["materialize_end"] = t
        elif logger == "spark_jobs.validate" and re.match(r"^run \S+: validating ", message):
            marks["validate_start"] = t
        elif logger == "spark_jobs.validate" and re.match(r"^run \S+: quality ", message):
            marks["validate_end"] = t
        elif logger == "warehouse.publish" and " committed: " in message:
            marks["committed"] = t
    prepared = marks.get("materialize_end", marks.get("decode_end"))
    order = [("startup", started, marks.get("session")),
             ("plan", marks.get("session"), marks.get("decode_start")),
             ("decode", marks.get("decode_start"), marks.get("decode_end")),
             ("materialize", marks.get("decode_end"), marks.get("materialize_end")),
             ("validate", marks.get("validate_start"), marks.get("validate_end")),
             ("publish", marks.get("validate_end", prepared), marks.get("committed")),
             ("shutdown", marks.get("committed"), ended)]
    phases = {name: round(b - a, 2) if a is not None and b is not None else None for name, a, b in order}
    phases["materialize_tables"] = tables
    phases["decode_reported"] = decode_reported
    return phases


def log_problems(log_text: str) -> dict:
    """Lines of a run's log that tell of trouble even when the run passes: ``out_of_memory``, those
    naming ``OutOfMemoryError`` (a JVM or Spark task out of heap; Spark may retry the task and go
    on), and ``error``, those logged at level ERROR (`` ERROR `` in the line: Spark's and ours)."""
    lines = log_text.splitlines()
    return {"out_of_memory": sum("OutOfMemoryError" in line for line in lines),
            "error": sum(" ERROR " in line for line in lines)}


def _traceback(text: str, limit: int = 6000) -> str:
    """The last Python traceback in ``text`` (else its tail), at most ``limit`` characters."""
    at = text.rfind("Traceback (most recent call last)")
    part = text[at:] if at >= 0 else text
    part = part.strip()
    return part if len(part) <= limit else "...\n" + part[-limit:]


class IngestFailed(RuntimeError):
    """An ingest that exited with another status than 0 or ran out of time: the message says how
    (and holds the last traceback of its log); ``seconds``, ``peak_rss_mb`` and ``log_problems``
    are what it measured until then."""

    def __init__(self, message: str, seconds: float, peak_rss_mb: dict, problems: dict) -> None:
        super().__init__(message)
        self.seconds, self.peak_rss_mb, self.log_problems = seconds, peak_rss_mb, problems


class PeakMemory:
    """The peak resident memory (the kernel's high-water mark, VmHWM) of every process of a
    process tree, sampled twice a second while it runs: the driver, the JVM, the Python workers
    Spark runs the tasks in."""

    def __init__(self, root: int, interval: float = 0.5) -> None:
        self.root, self.interval = root, interval
        self.peaks: dict[int, tuple[str, float]] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _tree(self, pid: int) -> list[int]:
        children = []
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{pid}/task").iterdir():
                children += [int(child) for child in (task / "children").read_text().split()]
        return [pid] + [each for child in children for each in self._tree(child)]

    def _sample(self) -> None:
        while not self._done.wait(self.interval):
            for pid in self._tree(self.root):
                with contextlib.suppress(OSError, IndexError, KeyError, ValueError):  # ended meanwhile, or a zombie
                    status = Path(f"/proc/{pid}/status").read_text()
                    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
                    peak = int(fields["VmHWM"].split()[0]) / 1024
                    command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    self.peaks[pid] = (command, max(peak, self.peaks.get(pid, ("", 0.0))[1]))

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def by_role(self) -> dict:
        """Peak MB of the driver, of the JVM, and of the largest Python worker (a task's memory)."""
        roles = {"driver": 0.0, "jvm": 0.0, "python_worker": 0.0}
        for pid, (command, peak) in self.peaks.items():
            role = "driver" if pid == self.root else "jvm" if "java" in command.split(" ", 1)[0] else "python_worker"
            roles[role] = round(max(roles[role], peak), 1)
        return roles


def spark_ingest(path: Path, master: str, timeout: float, cpus: int | None = None,
                 validation: bool = False, s3: bool = False) -> tuple[float, dict]:
    """``python -m spark_jobs.ingest`` over a folder holding just ``path`` into a
    fresh warehouse (:func:`run_ingest`); with ``s3``, the warehouse is ``s3://`` on a private
    S3 server started for the run (:func:`s3_server`). Output goes to
    ``.bench/ingest/<master>[-cpuN][-validated][-s3].log``; a local warehouse is kept until the next run."""
    tag = (re.sub(r"[^\w]+", "-", master).strip("-") + (f"-cpu{cpus}" if cpus else "")
           + ("-validated" if validation else "") + ("-s3" if s3 else ""))
    source = ingest_source(path)
    state = INGEST_DIR / f"warehouse-{tag}"
    if state.exists():
        shutil.rmtree(state)
    log_path = INGEST_DIR / f"{tag}.log"
    if not s3:
        return run_ingest(source, str(state), log_path, master, timeout, cpus, validation)
    with s3_server(INGEST_DIR / "s3") as settings:
        return run_ingest(source, "s3://bench/warehouse", log_path, master, timeout, cpus, validation,
                          state=state, env=settings)


@contextlib.contextmanager
def s3_server(folder: Path):
    """A private S3 server (``infra/s3_server.sh``, moto, in memory) with an empty bucket
    ``bench``, for one run; yields the ``AWS_*`` settings that reach it."""
    import socket

    env = dict(os.environ, PYTHON=sys.executable)
    with socket.socket() as probe:  # a free port: the last run's server may still hold its own
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = subprocess.run(["bash", str(REPO_ROOT / "infra" / "s3_server.sh"), "start", str(folder), str(port)],
                             capture_output=True, text=True, env=env, timeout=120)
    if started.returncode != 0:
        raise RuntimeError(f"the S3 server did not start: {started.stderr.strip()[-800:]}")
    endpoint = re.search(r"endpoint=(\S+)", started.stdout)[1]
    settings = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                "AWS_REGION": "us-east-1"}
    try:
        import boto3

        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="bench", aws_secret_access_key="bench",
                     region_name="us-east-1").create_bucket(Bucket="bench")
        yield settings
    finally:
        subprocess.run(["bash", str(REPO_ROOT / "infra" / "s3_server.sh"), "stop", str(folder)],
                       capture_output=True, env=env, timeout=120)


def run_ingest(source: Path, warehouse: str, log_path: Path, master: str, timeout: float,
               cpus: int | None = None, validation: bool = False, state: Path | None = None,
               env: dict | None = None) -> tuple[float, dict]:
    """``python -m spark_jobs.ingest --source source --warehouse warehouse`` as its own process
    (its own JVM), its stderr to ``log_path``. Returns the wall time of the whole command and
    what the run reported (rows, per table, phases, peak memory, :func:`log_problems`).
    ``cpus``: the process and all it starts (the JVM, the Python workers) may run
    on that many CPUs only, the first ones; ``validation``: with the Great
    Expectations gate, as users run it (else ``--no-validation``); ``state``: the state folder of
    an ``s3://`` warehouse, ``env``: variables added to the environment (its S3 settings)."""
    argv = [sys.executable, "-m", "spark_jobs.ingest", "--source", str(source), "--warehouse", warehouse,
            "--master", master] + ([] if validation else ["--no-validation"])
    argv += ["--state", str(state)] if state else []
    env = dict(os.environ, **(env or {}), PYTHONPATH=os.pathsep.join(
        p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p))
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    with open(log_path, "wb") as log_file, tempfile.TemporaryFile() as output:
        started = time.time()
        t0 = time.perf_counter()
        pinned = (lambda: os.sched_setaffinity(0, range(cpus))) if cpus else None
        proc = subprocess.Popen(argv, stdout=output, stderr=log_file, cwd=REPO_ROOT, env=env, preexec_fn=pinned)
        peaks = PeakMemory(proc.pid)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.kill()
            proc.wait()
        finally:
            peaks.stop()
        seconds = time.perf_counter() - t0
        ended = time.time()
        output.seek(0)
        stdout = output.read().decode(errors="replace")
    log_text = log_path.read_text(errors="replace")
    if proc.returncode != 0:
        why = f"timed out after {timeout:.0f} s" if timed_out else f"exit {proc.returncode}"
        raise IngestFailed(f"{why} (log in {log_path.relative_to(REPO_ROOT)}):\n{_traceback(log_text)}",
                           seconds, peaks.by_role(), log_problems(log_text))
    lines = stdout.strip().splitlines()
    summary = SUMMARY_LINE.match(lines[0]) if lines else None
    if summary is None:
        raise RuntimeError(f"no run summary on stdout: {stdout.strip()[-800:]!r}")
    tables = {m[1]: int(m[2].replace(",", "")) for m in map(TABLE_LINE.match, lines[1:]) if m}
    return seconds, {
        "rows": int(summary[4].replace(",", "")),
        "bytes": int(summary[3].replace(",", "")),
        "tables": tables,
        "run_seconds": float(summary[5]),
        "validation_seconds": float(summary[6]) if summary[6] else None,
        "phases": ingest_phases(log_text, started, ended),
        "peak_rss_mb": peaks.by_role(),
        "log_problems": log_problems(log_text),
        "log": str(log_path.relative_to(REPO_ROOT)),
        "warehouse": warehouse if state else str(Path(warehouse).relative_to(REPO_ROOT)),
    }


# -- ingest scenarios -------------------------------------------------------------------

# Each scenario's ingest, as users run it and without the gate, side by side: the key in its
# result's ``runs``, and whether the gate is on.
VALIDATED = "validation on"
UNVALIDATED = "--no-validation"
VARIANTS = {VALIDATED: True, UNVALIDATED: False}
SCENARIO_MASTER = "local[2]"


def scenario_variant(files: list[Path], workdir: Path, tag: str, validation: bool, timeout: float) -> dict:
    """One ingest of a scenario's last file, measured: every file before it is ingested first, in
    a run of its own (not measured), into the same fresh warehouse; the measured run then finds
    the last file next to them in the source folder, as the next run of the stream would. In
    ``workdir``: ``source-<tag>``, ``warehouse-<tag>`` (kept until the next run) and the logs,
    ``<tag>-before.log`` and ``<tag>.log``. Returns the wall seconds of the measured command and
    what it reported (:func:`run_ingest`), or ``error`` with what the failed run measured."""
    source, warehouse = workdir / f"source-{tag}", workdir / f"warehouse-{tag}"
    for folder in (source, warehouse):
        if folder.exists():
            shutil.rmtree(folder)
    step = "the run before"
    try:
        if files[:-1]:
            link_files(files[:-1], source)
            run_ingest(source, str(warehouse), workdir / f"{tag}-before.log", SCENARIO_MASTER, timeout,
                       validation=validation)
        step = "the measured run"
        link_files(files[-1:], source)
        seconds, out = run_ingest(source, str(warehouse), workdir / f"{tag}.log", SCENARIO_MASTER, timeout,
                                  validation=validation)
    except IngestFailed as exc:
        return {"error": f"{step}: {exc}", "failed_after_s": round(exc.seconds, 2),
                "peak_rss_mb": exc.peak_rss_mb, "log_problems": exc.log_problems}
    return {"seconds": round(seconds, 2), **out}


def validation_ratio(runs: dict) -> float | None:
    """Wall seconds of the run with the gate over those of the run without it (None unless both ran)."""
    validated, unvalidated = runs.get(VALIDATED, {}), runs.get(UNVALIDATED, {})
    if "seconds" not in validated or "seconds" not in unvalidated:
        return None
    return round(validated["seconds"] / unvalidated["seconds"], 2)


def best_run(runs: list[dict]) -> dict:
    """What a variant's runs (:func:`scenario_variant`, in order) measured: the first failed one
    if any failed (a failure is never hidden by a faster run), else the fastest; with
    ``all_seconds`` (of those that ran to the end) and ``all_log_problems`` of every run."""
    failed = [each for each in runs if "error" in each]
    chosen = failed[0] if failed else min(runs, key=lambda each: each["seconds"])
    return {**chosen, "all_seconds": [each["seconds"] for each in runs if "seconds" in each],
            "all_log_problems": [each.get("log_problems") for each in runs]}


def measure_scenario(bench: dict, repeat: int, timeout: float) -> dict:
    """A scenario's binlogs (:mod:`scenario_binlogs`, made first unless cached) ingested with
    :data:`SCENARIO_MASTER`, each of :data:`VARIANTS` in turn, ``repeat`` rounds
    (:func:`scenario_variant`, :func:`best_run`), and how many times as long the run with the
    gate took (:func:`validation_ratio`)."""
    result: dict = {"name": bench["name"], "what": bench["what"]}
    load_before = _load()
    try:
        files = scenario_binlogs.ensure_files(scenario_binlogs.SCENARIOS[bench["scenario"]])
    except Exception as exc:  # noqa: BLE001 - every failure is recorded
        return {**result, "error": f"cannot make the scenario's binlogs: {type(exc).__name__}: {exc}"}
    workdir = INGEST_DIR / bench["scenario"]
    result["files"] = [str(f.relative_to(REPO_ROOT)) for f in files]
    result["command"] = (f"python -m spark_jobs.ingest --source {workdir.relative_to(REPO_ROOT)}/source-<variant> "
                         f"--warehouse <fresh> --master {SCENARIO_MASTER} [--no-validation]"
                         + (f", first with {', '.join(f.name for f in files[:-1])}, then with "
                            f"{files[-1].name} added (measured)" if len(files) > 1 else ""))
    runs: dict[str, list[dict]] = {variant: [] for variant in VARIANTS}
    for _ in range(repeat):
        for variant, validation in VARIANTS.items():
            tag = re.sub(r"[^\w]+", "-", variant).strip("-")
            runs[variant].append(scenario_variant(files, workdir, tag, validation, timeout))
    result["runs"] = {variant: best_run(each) for variant, each in runs.items()}
    result["seconds_validated_over_unvalidated"] = validation_ratio(result["runs"])
    result["load_average"] = [load_before, _load()]
    return result


# What is measured. Each entry is either a command ("argv", with {file} and
# {mariadb_binlog} substituted), an in-process Python callable ("python",
# called with the file's Path; with "server": True also with the running
# server that wrote the file) or an end-to-end Spark ingest ("ingest": the
# master URL; run --ingest-repeat times) or an ingest scenario ("scenario": its key in
# scenario_binlogs.SCENARIOS; :func:`measure_scenario`, on its own binlogs rather than the
# file). Add entries here for new measurements.
BENCHMARKS: list[dict] = [
    {
        "name": "mariadb-binlog",
        "argv": ["{mariadb_binlog}", "{file}"],
        "what": "mariadb-binlog FILE (framing, base64 rows)",
    },
    {
        "name": MARIADB_V,
        "argv": ["{mariadb_binlog}", "-v", "--base64-output=decode-rows", "{file}"],
        "what": "mariadb-binlog with rows decoded to pseudo-SQL",
    },
    {
        "name": "binlog-codec verify",
        "argv": [*CODEC, "verify", "{file}"],
        "what": "magic, framing, every checksum and event body",
    },
    {
        "name": "binlog-codec events",
        "argv": [*CODEC, "events", "{file}"],
        "what": "one text line per event",
    },
    {
        "name": "python framing scan",
        "python": framing_scan,
        "what": "sum(1 for _ in BinlogReader(path))",
    },
    {
        "name": CODEC_ROWS,
        "argv": [*CODEC, "rows", "{file}"],
        "what": "one JSON line per row change (values decoded)",
    },
    {
        "name": CODEC_ROWS_PURE,
        "argv": [*CODEC, "rows", "{file}"],
        "env": {"BINLAKE_PURE_PYTHON": "1"},
        "what": "binlog-codec rows on the pure-Python modules (the compiled build switched off)",
    },
    {
        "name": ARROW,
        "argv": [sys.executable, str(HERE / "arrow_decode.py"), "{file}"],
        "what": "rows events into one Arrow TableBatches per table version (compiled: in C), "
                "tables of 65536 rows, dropped",
    },
    {
        "name": READ_ROWS,
        "python": read_rows_scan,
        "what": "for record in read_rows(path): count record.kind",
    },
    {
        "name": PYMYSQLREPLICATION,
        "python": pymysqlreplication_stream,
        "server": True,
        "what": "BinLogStreamReader from the server that wrote the file "
                "(Unix socket, blocking=False, rows events only): for row in event.rows",
    },
    {
        "name": INGEST_1,
        "ingest": "local[1]",
        "what": "python -m spark_jobs.ingest --master local[1]: the file into a fresh warehouse "
                "(decode, materialize, publish; 64 MB splits), JVM start included",
    },
    {
        "name": INGEST_1_CPU,
        "ingest": "local[1]",
        "cpus": 1,
        "what": "the same, the process tree (driver, JVM, Python workers) held to one CPU: what the ingest "
                "does with one core of its own, where local[1] alone leaves the driver and JVM the other",
    },
    {
        "name": INGEST_2,
        "ingest": "local[2]",
        "what": "python -m spark_jobs.ingest --master local[2] --no-validation: the file into a fresh warehouse "
                "(decode, materialize, publish; 64 MB splits), JVM start included",
    },
    {
        "name": INGEST_2_VALIDATED,
        "ingest": "local[2]",
        "validation": True,
        "what": "python -m spark_jobs.ingest --master local[2], as users run it: default settings, the Great "
                "Expectations gate on (decode, materialize, validate, publish)",
    },
    {
        "name": INGEST_2_S3,
        "ingest": "local[2]",
        "validation": True,
        "s3": True,
        "what": "the same into s3://bench/warehouse on a private S3 server (moto over HTTP on this machine, in "
                "memory; its own memory not counted), the state folder and SQLite catalog local",
    },
    {
        "name": INCREMENTAL,
        "scenario": "incremental",
        "what": "a small incremental run: bench_inc.items ingested with its 100,000 rows first (not measured), "
                "then the next file, 1,100 row changes (1,000 updates of the newest rows, 100 inserts), into the "
                "same warehouse; with validation on and with --no-validation",
    },
    {
        "name": BIG_TRANSACTION,
        "scenario": "big-transaction",
        "what": "one transaction of 4,000,000 row changes (2,000,000 inserts into bench_big.wide, 8 mixed "
                "columns, then an UPDATE of every row) into a fresh warehouse; with validation on and with "
                "--no-validation",
    },
]


def _tool_version(argv: list[str]) -> str | None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"error: {exc}"
    text = (proc.stdout or proc.stderr).strip().splitlines()
    return text[0] if text else None


def _codec_version() -> str | None:
    try:
        import binlog_codec

        return getattr(binlog_codec, "__version__", None) or "unknown"
    except Exception as exc:  # noqa: BLE001 - recorded, not fatal
        return f"error: {exc}"


def _codec_build() -> str:
    """Whether binlog_codec runs compiled here, or why not."""
    import binlog_codec

    return binlog_codec.build_description()


def _package_version(name: str) -> str | None:
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version(name)
    except PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=10,
        ).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def measure(bench: dict, path: Path, repeat: int, timeout: float, tools: dict) -> dict:
    result: dict = {"name": bench["name"], "what": bench.get("what")}
    times: list[float] = []
    # The machine's 1-minute load average before and after the runs: other
    # work on the machine slows every measurement down.
    load_before = _load()
    try:
        if "ingest" in bench:
            cpus = bench.get("cpus")
            result["command"] = ((f"taskset -c {','.join(map(str, range(cpus)))} " if cpus else "")
                                 + f"python -m spark_jobs.ingest --source {INGEST_DIR.relative_to(REPO_ROOT)}/source "
                                 f"--warehouse {'s3://bench/warehouse --state <fresh>' if bench.get('s3') else '<fresh>'}"
                                 f" --master {bench['ingest']}" + ("" if bench.get("validation") else " --no-validation"))
            runs = []
            for _ in range(repeat):
                seconds, out = spark_ingest(path, bench["ingest"], timeout, cpus, bench.get("validation", False),
                                            bench.get("s3", False))
                times.append(seconds)
                runs.append(out)
            # What the fastest run reported; the phases of every run.
            result["returned"] = runs[times.index(min(times))]
            result["all_phases"] = [run["phases"] for run in runs]
        elif "python" in bench:
            result["command"] = f"python: {bench.get('what')}"
            # Entries marked "server" get the running server that wrote the
            # file as a second argument; it is stopped after their runs.
            with (make_binlog.bench_server(path) if bench.get("server") else contextlib.nullcontext()) as server:
                args = (path, server) if bench.get("server") else (path,)
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    out = bench["python"](*args)
                    times.append(time.perf_counter() - t0)
            result["returned"] = out
        else:
            argv = []
            for arg in bench["argv"]:
                if arg == "{mariadb_binlog}":
                    if tools["mariadb_binlog"] is None:
                        raise FileNotFoundError("mariadb-binlog is not installed")
                    arg = tools["mariadb_binlog"]
                argv.append(arg.replace("{file}", str(path)))
            shown = ["binlog-codec" if a == CODEC[-1] else a for a in argv
                     if a not in (CODEC[0], "-c")]
            result["command"] = " ".join(shown)
            peaks = []
            for _ in range(repeat):
                seconds, peak = run_command(argv, timeout, bench.get("env"))
                times.append(seconds)
                peaks.append(peak)
            result["peak_rss_mb"] = round(max(peaks), 1)
    except Exception as exc:  # noqa: BLE001 - every failure is recorded
        result["error"] = f"{type(exc).__name__}: {exc}"
    result["load_average"] = [load_before, _load()]
    if times:
        result["seconds"] = round(min(times), 4)
        result["all_seconds"] = [round(t, 4) for t in times]
    return result


def targets_met(by_name: dict, ratios: dict) -> dict:
    """:data:`TARGETS` and, for each, whether this run met it (None: not measured)."""

    def at_least(value, target):
        return None if value is None else value >= target

    def at_most(value, target):
        return None if value is None else value <= target

    scaling = ratios.get(f"{INGEST_2} / {INGEST_1}")
    return {
        **TARGETS,
        "rows_per_s_met": at_least(by_name.get(CODEC_ROWS, {}).get("rows_per_s"), TARGETS["rows_per_s"]),
        "vs_python_mysql_replication_met": at_least(
            ratios.get(f"{CODEC_ROWS} / {PYMYSQLREPLICATION}"), TARGETS["vs_python_mysql_replication"]),
        "codec_rows_vs_mariadb_binlog_v_met": at_least(
            ratios.get(f"{CODEC_ROWS} / {MARIADB_V}"), TARGETS["codec_rows_vs_mariadb_binlog_v"]),
        "arrow_vs_mariadb_binlog_v_met": at_least(ratios.get(f"{ARROW} / {MARIADB_V}"), TARGETS["arrow_vs_mariadb_binlog_v"]),
        "codec_rows_peak_rss_mb_met": at_most(
            by_name.get(CODEC_ROWS, {}).get("peak_rss_mb"), TARGETS["codec_rows_peak_rss_mb"]),
        "ingest_local2_vs_local1_met": at_least(scaling, TARGETS["ingest_local2_vs_local1"]),
        "ingest_seconds_vs_codec_rows_met": at_most(
            ratios.get(f"seconds of {INGEST_2} / seconds of {CODEC_ROWS}"), TARGETS["ingest_seconds_vs_codec_rows"]),
        "ingest_task_peak_rss_mb_met": at_most(_task_peak(by_name), TARGETS["ingest_task_peak_rss_mb"]),
        "ingest_validated_vs_unvalidated_met": at_most(
            ratios.get(f"seconds of {INGEST_2_VALIDATED} / seconds of {INGEST_2}"),
            TARGETS["ingest_validated_vs_unvalidated"]),
        **scenario_targets_met(by_name),
    }


def scenario_targets_met(by_name: dict) -> dict:
    """Whether the ingest scenarios met their :data:`TARGETS`: None when the scenario was not run,
    False when it ran but the figure is missing (a run failed, or did not get to the gate)."""

    def within(name: str, value, target) -> bool | None:
        if name not in by_name:
            return None
        return value is not None and value <= target

    incremental = by_name.get(INCREMENTAL, {}).get("runs", {}).get(VALIDATED, {})
    big = by_name.get(BIG_TRANSACTION, {})
    problems = [logged for each in big.get("runs", {}).values() for logged in each.get("all_log_problems", [None])]
    out_of_memory = (sum(p["out_of_memory"] for p in problems)
                     if len(big.get("runs", {})) == len(VARIANTS) and all(problems) else None)
    return {
        "incremental_validation_seconds_met": within(
            INCREMENTAL, incremental.get("validation_seconds"), TARGETS["incremental_validation_seconds"]),
        "big_transaction_validated_vs_unvalidated_met": within(
            BIG_TRANSACTION, big.get("seconds_validated_over_unvalidated"),
            TARGETS["big_transaction_validated_vs_unvalidated"]),
        "big_transaction_out_of_memory_lines_met": within(
            BIG_TRANSACTION, out_of_memory, TARGETS["big_transaction_out_of_memory_lines"]),
    }


def _task_peak(by_name: dict) -> float | None:
    """The largest Python worker of the ingest measurements: the most memory a task took."""
    peaks = [
        by_name[name]["returned"]["peak_rss_mb"]["python_worker"]
        for name in (INGEST_1, INGEST_1_CPU, INGEST_2, INGEST_2_VALIDATED, INGEST_2_S3)
        if isinstance(by_name.get(name, {}).get("returned"), dict)
    ]
    return max(peaks) if peaks else None


def write_outputs_alone(warehouse: Path) -> dict:
    """Seconds it takes the ingest's own Parquet writer (:func:`spark_jobs.materialize.write_parquet`),
    on one thread, to write again every ``changes`` and ``current`` file of ``warehouse``, read into
    memory first (a file at a time, the read not timed). The lists of column names are given to it
    dictionary-indexed (:func:`spark_jobs.materialize.indexed_names`), as the ingest gives them. What any ingest of the same file spends at least
    on its outputs, whatever it does before."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from spark_jobs import materialize

    files = sorted(file for kind in ("changes", "current") for file in (warehouse / kind).rglob("*.parquet"))
    threads = pa.cpu_count()
    pa.set_cpu_count(1)
    seconds, rows = 0.0, 0
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for file in files:
                table = pq.read_table(file)
                indexed = materialize.indexed_names(table.column(materialize.PRESENT), table.column_names)
                table = table.set_column(table.schema.get_field_index(materialize.PRESENT), materialize.PRESENT, indexed)
                started = time.perf_counter()
                materialize.write_parquet(table, str(Path(scratch) / "out.parquet"))
                seconds += time.perf_counter() - started
                rows += table.num_rows
    finally:
        pa.set_cpu_count(threads)
    return {"files": len(files), "rows": rows, "seconds": round(seconds, 2)}


def ingest_floor(by_name: dict, two_process: float) -> dict | None:
    """The least time an ingest of the file on two slots can take on this machine: decoding to Arrow
    (:data:`ARROW`) and writing the outputs (:func:`write_outputs_alone`), shared by two cores at
    the machine's two-process speedup, plus the JVM's start and stop (``local[2]``'s ``startup`` and
    ``shutdown`` phases); and the ingest's target, twice the time of ``binlog-codec rows``. Left
    out: reading and folding the staged rows, Spark's task overhead, planning and publishing."""
    ingest, arrow, codec = (by_name.get(name, {}) for name in (INGEST_2, ARROW, CODEC_ROWS))
    if not all("seconds" in each for each in (ingest, arrow, codec)):
        return None
    phases = ingest["returned"]["phases"]
    written = write_outputs_alone(REPO_ROOT / ingest["returned"]["warehouse"])
    fixed = (phases.get("startup") or 0) + (phases.get("shutdown") or 0)
    return {
        "decode_to_arrow_s": arrow["seconds"],
        "write_outputs": written,
        "two_process_speedup": two_process,
        "startup_and_shutdown_s": round(fixed, 2),
        "floor_s": round((arrow["seconds"] + written["seconds"]) / two_process + fixed, 2),
        "ingest_s": ingest["seconds"],
        "target_s": round(TARGETS["ingest_seconds_vs_codec_rows"] * codec["seconds"], 2),
    }


def _spin(count: int) -> int:
    total = 0
    for n in range(count):
        total += n * n % 7
    return total


def two_process_speedup(count: int = 20_000_000) -> float:
    """How much faster two processes do two equal pieces of pure Python work than one process
    does both (2.0 on two idle cores): the most any two-slot Spark run can gain on this machine."""
    import multiprocessing

    started = time.perf_counter()
    _spin(count)
    _spin(count)
    alone = time.perf_counter() - started
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_spin, [1000, 1000])  # workers started before the clock
        started = time.perf_counter()
        pool.map(_spin, [count, count])
        together = time.perf_counter() - started
    return round(alone / together, 2)


def benchmark_file(args: argparse.Namespace, benches: list[dict]) -> Path:
    """The MariaDB binlog to measure: ``--file``, else the generated one (made unless cached;
    made again when a server-streamed measurement needs the server that wrote it and it cannot)."""
    if args.file:
        return args.file.resolve()
    return make_binlog.ensure_binlog(args.target_mb, need_server=any(b.get("server") for b in benches))


def measure_file(path: Path, benches: list[dict], args: argparse.Namespace, tools: dict) -> dict:
    """The MariaDB binlog ``path`` and its measurements ``benches``: the report's fields about the
    file (size, events, row changes counted by each reader), ``results`` (per measurement, with
    MB/s, events/s, rows/s and the ratio to the baseline) and ``ratios`` (:data:`RATIOS`,
    :data:`TIME_RATIOS`)."""
    size = path.stat().st_size
    mb = size / 1e6
    # The event count comes from binlog-codec's framing scan.
    event_count = None
    count_error = None
    try:
        event_count = framing_scan(path)
    except Exception as exc:  # noqa: BLE001
        count_error = f"{type(exc).__name__}: {exc}"

    results = []
    for bench in benches:
        print(f"timing {bench['name']} ...", file=sys.stderr, flush=True)
        repeat = args.ingest_repeat if "ingest" in bench else args.repeat
        results.append(measure(bench, path, repeat, args.timeout, tools))
    by_name = {r["name"]: r for r in results}

    # Row changes, counted by each reader that decodes them. The row count
    # behind rows/s is read_rows' (from its measurement, or one more pass).
    row_counts: dict = {}
    for name in (READ_ROWS, PYMYSQLREPLICATION):
        if isinstance(by_name.get(name, {}).get("returned"), dict):
            row_counts[name] = by_name[name]["returned"]
    if READ_ROWS not in row_counts:
        print("counting rows with read_rows ...", file=sys.stderr, flush=True)
        try:
            row_counts[READ_ROWS] = read_rows_scan(path)
        except Exception as exc:  # noqa: BLE001
            row_counts[READ_ROWS] = {"error": f"{type(exc).__name__}: {exc}"}
    if tools["mariadb_binlog"]:
        print("counting rows with mariadb-binlog -v ...", file=sys.stderr, flush=True)
        try:
            row_counts["mariadb-binlog -v decode-rows"] = mariadb_binlog_row_counts(path, tools["mariadb_binlog"])
        except Exception as exc:  # noqa: BLE001
            row_counts["mariadb-binlog -v decode-rows"] = {"error": f"{type(exc).__name__}: {exc}"}
    row_count = row_counts[READ_ROWS].get("rows")
    counted = [c for c in row_counts.values() if "rows" in c]
    row_counts_agree = (
        all({k: c[k] for k in ("rows", *ROW_KINDS)} == {k: counted[0][k] for k in ("rows", *ROW_KINDS)} for c in counted)
        if len(counted) > 1 else None
    )

    # The ingest's own count of row changes (all tables) is checked against it.
    for r in results:
        if "ingest" in next(b for b in benches if b["name"] == r["name"]) and isinstance(r.get("returned"), dict):
            r["rows_match_row_count"] = r["returned"].get("rows") == row_count if row_count else None

    base = by_name.get(BASELINE) if "seconds" in by_name.get(BASELINE, {}) else None
    for r in results:
        if "seconds" not in r:
            continue
        s = r["seconds"]
        r["mb_per_s"] = round(mb / s, 1) if s > 0 else None
        r["events_per_s"] = round(event_count / s) if event_count and s > 0 else None
        r["rows_per_s"] = round(row_count / s) if row_count and s > 0 else None
        r["ratio_vs_mariadb_binlog"] = round(s / base["seconds"], 3) if base else None

    ratios = {}
    for ours, theirs in RATIOS:
        if "seconds" in by_name.get(ours, {}) and "seconds" in by_name.get(theirs, {}):
            ratios[f"{ours} / {theirs}"] = round(by_name[theirs]["seconds"] / by_name[ours]["seconds"], 2)
    for ours, theirs in TIME_RATIOS:
        if "seconds" in by_name.get(ours, {}) and "seconds" in by_name.get(theirs, {}):
            ratios[f"seconds of {ours} / seconds of {theirs}"] = round(
                by_name[ours]["seconds"] / by_name[theirs]["seconds"], 2)
    return {
        "file": str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path),
        "file_bytes": size,
        "file_mb": round(mb, 1),
        "event_count": event_count,
        "event_count_error": count_error,
        "row_count": row_count,
        "row_counts": row_counts,
        "row_counts_agree": row_counts_agree,
        "results": results,
        "ratios": ratios,
    }


def print_file_summary(report: dict) -> None:
    """The MariaDB binlog's measurements, on stderr: each one's speed, the row counts, the ratios
    and the phases of the ingests."""
    results, ratios = report["results"], report["ratios"]
    print(f"{Path(report['file']).name}: {report['file_mb']:.1f} MB, {report['event_count'] or '?'} events, "
          f"{report['row_count'] or '?'} rows", file=sys.stderr)
    for r in results:
        if "seconds" in r:
            ratio = r["ratio_vs_mariadb_binlog"]
            print(
                f"  {r['name']:<32} {r['seconds']:8.3f} s {r['mb_per_s']:8.1f} MB/s "
                f"{r['events_per_s'] or 0:>10,} ev/s {r['rows_per_s'] or 0:>10,} rows/s"
                f"  x{ratio if ratio is not None else '?'}",
                file=sys.stderr,
            )
        else:
            print(f"  {r['name']:<32} ERROR {r.get('error')}", file=sys.stderr)
    print(f"  load average (1 min) at start: {report['machine']['load_average_at_start']}; per measurement, before and after: "
          + ", ".join(f"{r['name']} {r['load_average']}" for r in results), file=sys.stderr)
    for name, counts in report["row_counts"].items():
        print(f"  rows counted by {name}: {counts}", file=sys.stderr)
    print(f"  row counts agree: {report['row_counts_agree']}", file=sys.stderr)
    for name, value in ratios.items():
        print(f"  {name}: {value}x{'' if name.startswith('seconds of') else ' rows/s'}", file=sys.stderr)
    for r in results:
        phases = (r.get("returned") or {}).get("phases") if isinstance(r.get("returned"), dict) else None
        if phases:
            shown = ", ".join(f"{k} {v:.1f} s" for k, v in phases.items() if isinstance(v, (int, float))
                              and k != "decode_reported")
            print(f"  {r['name']} phases: {shown}", file=sys.stderr)


def scenario_lines(result: dict) -> list[str]:
    """An ingest scenario's measurement in a few lines: each variant's wall time, the gate's own
    seconds, peak memory (driver / JVM / largest Python worker) and the log lines naming an
    OutOfMemoryError or at level ERROR in all its runs (or why it failed), then the ratio of the two."""
    if "runs" not in result:
        return [f"{result['name']}: ERROR {result.get('error')}"]
    lines = [f"{result['name']}:"]
    for variant, run in result["runs"].items():
        peak = run.get("peak_rss_mb") or {}
        memory = " / ".join(f"{peak.get(role, 0):,.0f}" for role in ("driver", "jvm", "python_worker"))
        problems = [each for each in run.get("all_log_problems", [run.get("log_problems")]) if each]
        logged = (f"OutOfMemoryError lines {sum(each['out_of_memory'] for each in problems)}, "
                  f"ERROR lines {sum(each['error'] for each in problems)}")
        if "error" in run:
            first = run["error"].splitlines()[0]
            lines.append(f"  {variant}: FAILED after {run['failed_after_s']} s: {first}; peak MB {memory}; {logged}")
            continue
        gate = f" (validation {run['validation_seconds']} s)" if run.get("validation_seconds") is not None else ""
        every = run.get("all_seconds", [])
        runs = f" (runs: {', '.join(f'{t:.2f}' for t in every)} s)" if len(every) > 1 else ""
        lines.append(f"  {variant}: {run['seconds']:.2f} s{runs}{gate}, {run['rows']:,} row changes; "
                     f"peak MB driver / JVM / Python worker {memory}; {logged}")
    ratio = result.get("seconds_validated_over_unvalidated")
    lines.append(f"  validation on / --no-validation: {ratio if ratio is not None else '?'}x")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is kept)")
    ap.add_argument("--ingest-repeat", type=int, default=INGEST_REPEAT,
                    help="runs per Spark ingest measurement (best is kept)")
    ap.add_argument("--only", nargs="*", help="names of the measurements to run")
    ap.add_argument("--target-mb", type=int, default=make_binlog.DEFAULT_TARGET_MB)
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    ap.add_argument("--file", type=Path, help="benchmark this binlog instead")
    ap.add_argument("--json-target-mb", type=int, default=json_corpus.DEFAULT_TARGET_MB,
                    help="size of the synthetic MySQL 8 JSON corpus in MB (10^6 bytes)")
    ap.add_argument("--no-json", action="store_true", help="leave out the JSON corpus measurements")
    ap.add_argument("--no-backup", action="store_true", help="leave out the backup image measurements")
    args = ap.parse_args(argv)

    benches = [b for b in BENCHMARKS if not args.only or b["name"] in args.only]
    # The MariaDB binlog's entries; the scenarios ingest binlogs of their own.
    file_benches = [b for b in benches if "scenario" not in b]
    tools = {
        "mariadb_binlog": shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog"),
    }
    load_at_start = _load()
    measured: dict = {}
    if file_benches:
        try:
            path = benchmark_file(args, file_benches)
        except Exception as exc:  # noqa: BLE001
            print(f"run.py: cannot make the benchmark binlog: {exc}", file=sys.stderr)
            return 1
        measured = measure_file(path, file_benches, args, tools)
    scenarios = []
    for bench in benches:
        if "scenario" in bench:
            print(f"timing {bench['name']} ...", file=sys.stderr, flush=True)
            scenarios.append(measure_scenario(bench, args.ingest_repeat, args.timeout))
    results = measured.get("results", [])
    by_name = {r["name"]: r for r in results + scenarios}
    report = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **{key: value for key, value in measured.items() if key not in ("results", "ratios")},
        "repeat": args.repeat,
        "ingest_repeat": args.ingest_repeat,
        "baseline": BASELINE,
        "ratio_means": "seconds / seconds of the baseline (lower is faster)",
        "ratios": measured.get("ratios", {}),
        "ratios_mean": "rows/s of the first / rows/s of the second (above 1: the first is faster); "
                       "'seconds of A / seconds of B': how many times as long A takes as B",
        "targets": targets_met(by_name, measured.get("ratios", {})),
        "machine": {
            "cores": os.cpu_count(),
            "load_average_at_start": load_at_start,
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
        },
        "versions": {
            "python": platform.python_version(),
            "binlog_codec": _codec_version(),
            "binlog_codec_build": _codec_build(),
            "git_commit": _git_commit(),
            "mariadb_binlog": _tool_version([tools["mariadb_binlog"], "--version"])
            if tools["mariadb_binlog"] else None,
            "python_mysql_replication": _package_version("mysql-replication"),
            "pymysql": _package_version("PyMySQL"),
        },
        "binlog_source": make_binlog.read_stamp() if file_benches and not args.file else None,
        "results": results,
        "scenarios": scenarios,
    }
    report["machine"]["two_process_speedup"] = two_process_speedup()
    report["ingest_floor"] = ingest_floor(by_name, report["machine"]["two_process_speedup"])
    if not args.no_json:
        print(f"timing the JSON corpus ({args.json_target_mb} MB; made first unless cached: "
              f"about 10 minutes per GB) ...", file=sys.stderr, flush=True)
        report["json"] = json_corpus.measure(args.json_target_mb, args.repeat, timeout=args.timeout,
                                             mariadb_binlog=tools["mariadb_binlog"])
    if not args.no_backup:
        print("timing backup images ...", file=sys.stderr, flush=True)
        report["backup"] = backup_bench.benchmark(make_binlog.BENCH_DIR / "backup")
    if args.only and RESULTS.exists():
        report["note"] = "partial run (--only)"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    plot.write(report, PLOT)

    print(json.dumps(report, indent=2))
    print(file=sys.stderr)
    if "file" in report:
        print_file_summary(report)
    for scenario in report["scenarios"]:
        for line in scenario_lines(scenario):
            print(line, file=sys.stderr)
    print(f"  two processes vs one on this machine (pure Python): {report['machine']['two_process_speedup']}x",
          file=sys.stderr)
    if floor := report["ingest_floor"]:
        print(f"  the least an ingest on two slots can take here: {floor['floor_s']:.2f} s = (decode to Arrow "
              f"{floor['decode_to_arrow_s']:.2f} s + writing its {floor['write_outputs']['rows']:,} output rows "
              f"{floor['write_outputs']['seconds']:.2f} s) / {floor['two_process_speedup']} + JVM start and stop "
              f"{floor['startup_and_shutdown_s']:.2f} s; took {floor['ingest_s']:.2f} s, target {floor['target_s']:.2f} s",
              file=sys.stderr)
    if "json" in report:
        for line in json_corpus.summary_lines(report["json"]):
            print(f"  {line}", file=sys.stderr)
    if "backup" in report:
        b = report["backup"]
        print(f"  backup image ({b['bytes'] / 1e6:.0f} MB): write {b['write_mb_per_s']} MB/s, read {b['read_mb_per_s']} MB/s",
              file=sys.stderr)
    print(f"results written to {RESULTS.relative_to(REPO_ROOT)}, chart to {PLOT.relative_to(REPO_ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
