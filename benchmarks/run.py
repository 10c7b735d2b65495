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

python-mysql-replication reads the file as a replica does: the server that
wrote it (data kept in ``.bench/mdb``) is started for that measurement,
streams the file over its Unix socket, and is shut down afterwards.

    python benchmarks/run.py [--repeat 3] [--only NAME ...] [--target-mb 200] [--file BINLOG]

A missing tool or a failing command is recorded as an error in the results;
the other measurements still run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(HERE))

import make_binlog  # noqa: E402

RESULTS = make_binlog.BENCH_DIR / "results.json"
BASELINE = "mariadb-binlog"

# The in-tree command line, run with this interpreter.
CODEC = [sys.executable, "-c", "import sys; from binlog_codec.cli import main; sys.exit(main())"]


ROW_KINDS = ("insert", "update", "delete")
PYMYSQLREPLICATION = "python-mysql-replication"
CODEC_ROWS = "binlog-codec rows"
READ_ROWS = "python read_rows"
# Rows/s of the first entry over rows/s of the second (same as seconds of the
# second over seconds of the first): above 1, the first is faster.
RATIOS = [(CODEC_ROWS, PYMYSQLREPLICATION), (READ_ROWS, PYMYSQLREPLICATION)]
# What binlog-codec rows aims at on one core.
TARGETS = {"rows_per_s": 100_000, "vs_python_mysql_replication": 5.0}
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


def mariadb_binlog_row_counts(path: Path, mariadb_binlog: str) -> dict:
    """Row changes printed by ``mariadb-binlog -v --base64-output=decode-rows``:
    its ``### INSERT INTO`` / ``### UPDATE`` / ``### DELETE FROM`` lines."""
    starts = {b"### INSERT INTO ": "insert", b"### UPDATE ": "update", b"### DELETE FROM ": "delete"}
    counts = dict.fromkeys(ROW_KINDS, 0)
    with subprocess.Popen(
        [mariadb_binlog, "-v", "--base64-output=decode-rows", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    ) as proc:
        for line in proc.stdout:
            if line.startswith(b"### ") and not line.startswith(b"###   "):
                for start, kind in starts.items():
                    if line.startswith(start):
                        counts[kind] += 1
                        break
    if proc.returncode != 0:
        raise RuntimeError(f"mariadb-binlog exited with {proc.returncode}")
    return {"rows": sum(counts.values()), **counts}


# What is measured. Each entry is either a command ("argv", with {file} and
# {mariadb_binlog} substituted) or an in-process Python callable ("python",
# called with the file's Path; with "server": True also with the running
# server that wrote the file). Add entries here for new measurements.
BENCHMARKS: list[dict] = [
    {
        "name": "mariadb-binlog",
        "argv": ["{mariadb_binlog}", "{file}"],
        "what": "mariadb-binlog FILE (framing, base64 rows)",
    },
    {
        "name": "mariadb-binlog -v decode-rows",
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


def run_command(argv: list[str], timeout: float) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=timeout,
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p)),
    )
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip()[-800:]
        raise RuntimeError(f"exit {proc.returncode}: {tail}")
    return seconds


def measure(bench: dict, path: Path, repeat: int, timeout: float, tools: dict) -> dict:
    result: dict = {"name": bench["name"], "what": bench.get("what")}
    times: list[float] = []
    try:
        if "python" in bench:
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
            for _ in range(repeat):
                times.append(run_command(argv, timeout))
    except Exception as exc:  # noqa: BLE001 - every failure is recorded
        result["error"] = f"{type(exc).__name__}: {exc}"
    if times:
        result["seconds"] = round(min(times), 4)
        result["all_seconds"] = [round(t, 4) for t in times]
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is kept)")
    ap.add_argument("--only", nargs="*", help="names of the measurements to run")
    ap.add_argument("--target-mb", type=int, default=make_binlog.DEFAULT_TARGET_MB)
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    ap.add_argument("--file", type=Path, help="benchmark this binlog instead")
    args = ap.parse_args(argv)

    benches = [b for b in BENCHMARKS if not args.only or b["name"] in args.only]
    if args.file:
        path = args.file.resolve()
    else:
        try:
            # A server-streamed measurement needs the server that wrote the
            # file; without it the binlog is made again.
            path = make_binlog.ensure_binlog(
                args.target_mb, need_server=any(b.get("server") for b in benches)
            )
        except Exception as exc:  # noqa: BLE001
            print(f"run.py: cannot make the benchmark binlog: {exc}", file=sys.stderr)
            return 1
    size = path.stat().st_size
    mb = size / 1e6

    tools = {
        "mariadb_binlog": shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog"),
    }

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
        results.append(measure(bench, path, args.repeat, args.timeout, tools))
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
    codec_rows = by_name.get(CODEC_ROWS, {})
    targets = {
        **TARGETS,
        "rows_per_s_met": codec_rows["rows_per_s"] >= TARGETS["rows_per_s"] if codec_rows.get("rows_per_s") else None,
        "vs_python_mysql_replication_met": (
            ratios[f"{CODEC_ROWS} / {PYMYSQLREPLICATION}"] >= TARGETS["vs_python_mysql_replication"]
            if f"{CODEC_ROWS} / {PYMYSQLREPLICATION}" in ratios else None
        ),
    }

    report = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "file": str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path),
        "file_bytes": size,
        "file_mb": round(mb, 1),
        "event_count": event_count,
        "event_count_error": count_error,
        "row_count": row_count,
        "row_counts": row_counts,
        "row_counts_agree": row_counts_agree,
        "repeat": args.repeat,
        "baseline": BASELINE,
        "ratio_means": "seconds / seconds of the baseline (lower is faster)",
        "ratios": ratios,
        "ratios_mean": "rows/s of the first / rows/s of the second (above 1: the first is faster)",
        "targets": targets,
        "machine": {
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
        },
        "versions": {
            "python": platform.python_version(),
            "binlog_codec": _codec_version(),
            "git_commit": _git_commit(),
            "mariadb_binlog": _tool_version([tools["mariadb_binlog"], "--version"])
            if tools["mariadb_binlog"] else None,
            "python_mysql_replication": _package_version("mysql-replication"),
            "pymysql": _package_version("PyMySQL"),
        },
        "binlog_source": make_binlog.read_stamp() if not args.file else None,
        "results": results,
    }
    if args.only and RESULTS.exists():
        report["note"] = "partial run (--only)"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")

    print(json.dumps(report, indent=2))
    print(file=sys.stderr)
    print(f"{path.name}: {mb:.1f} MB, {event_count or '?'} events, {row_count or '?'} rows", file=sys.stderr)
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
    for name, counts in row_counts.items():
        print(f"  rows counted by {name}: {counts}", file=sys.stderr)
    print(f"  row counts agree: {row_counts_agree}", file=sys.stderr)
    for name, value in ratios.items():
        print(f"  {name}: {value}x rows/s", file=sys.stderr)
    print(f"results written to {RESULTS.relative_to(REPO_ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
