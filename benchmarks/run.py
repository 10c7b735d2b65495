#!/usr/bin/env python3
"""Time binlog-codec against mariadb-binlog on one large MariaDB binlog.

Makes sure the benchmark binlog exists (``make_binlog.py``), then times every
entry of ``BENCHMARKS`` on that same file in the same run: best of N wall
clock runs, output to /dev/null. For each it reports seconds, MB/s, events/s
(event count from binlog-codec's framing scan) and the ratio to plain
``mariadb-binlog FILE``. Results go to ``.bench/results.json`` and stdout.

    python benchmarks/run.py [--repeat 3] [--only NAME ...] [--target-mb 200]

A missing tool or a failing command is recorded as an error in the results;
the other measurements still run.
"""

from __future__ import annotations

import argparse
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


def framing_scan(path: Path) -> int:
    """Python API: iterate over every event (framing and CRC32 checks)."""
    from binlog_codec.reader import BinlogReader

    return sum(1 for _ in BinlogReader(path))


# What is measured. Each entry is either a command ("argv", with {file} and
# {mariadb_binlog} substituted) or an in-process Python callable ("python",
# called with the file's Path). Add entries here for new measurements.
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
            for _ in range(repeat):
                t0 = time.perf_counter()
                out = bench["python"](path)
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

    if args.file:
        path = args.file.resolve()
    else:
        try:
            path = make_binlog.ensure_binlog(args.target_mb)
        except Exception as exc:  # noqa: BLE001
            print(f"run.py: cannot make the benchmark binlog: {exc}", file=sys.stderr)
            return 1
    size = path.stat().st_size
    mb = size / 1e6

    tools = {
        "mariadb_binlog": shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog"),
    }
    benches = [b for b in BENCHMARKS if not args.only or b["name"] in args.only]

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

    base = next((r for r in results if r["name"] == BASELINE and "seconds" in r), None)
    for r in results:
        if "seconds" not in r:
            continue
        s = r["seconds"]
        r["mb_per_s"] = round(mb / s, 1) if s > 0 else None
        r["events_per_s"] = round(event_count / s) if event_count and s > 0 else None
        r["ratio_vs_mariadb_binlog"] = round(s / base["seconds"], 3) if base else None

    report = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "file": str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path),
        "file_bytes": size,
        "file_mb": round(mb, 1),
        "event_count": event_count,
        "event_count_error": count_error,
        "repeat": args.repeat,
        "baseline": BASELINE,
        "ratio_means": "seconds / seconds of the baseline (lower is faster)",
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
    print(f"{path.name}: {mb:.1f} MB, {event_count or '?'} events", file=sys.stderr)
    for r in results:
        if "seconds" in r:
            ratio = r["ratio_vs_mariadb_binlog"]
            print(
                f"  {r['name']:<32} {r['seconds']:8.3f} s {r['mb_per_s']:8.1f} MB/s "
                f"{r['events_per_s'] or 0:>10,} ev/s  x{ratio if ratio is not None else '?'}",
                file=sys.stderr,
            )
        else:
            print(f"  {r['name']:<32} ERROR {r.get('error')}", file=sys.stderr)
    print(f"results written to {RESULTS.relative_to(REPO_ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
