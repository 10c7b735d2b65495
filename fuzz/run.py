"""The long fuzzing run: atheris (libFuzzer) over each decoder, one process per target.

::

    python -m fuzz.run --all --seconds 600          # what `make fuzz` runs
    python -m fuzz.run row_images --seconds 60
    python -m fuzz.run json_diffs --runs 5000       # a fixed number of inputs instead of a time
    python -m fuzz.run --all --merge                 # add the inputs that reach new coverage to fuzz/corpus/

Each target runs in its own process (:mod:`fuzz.worker`), one after the other,
with its address space limited to ``--memory-mb`` and libFuzzer's
``-rss_limit_mb`` and ``-malloc_limit_mb`` set to the same, a ``-timeout`` per
input, and the corpus folders: ``WORK/<target>/corpus`` (where libFuzzer keeps
the new inputs it finds, kept from run to run), the committed
``fuzz/corpus/<target>`` and ``WORK/<target>/seeds`` (made afresh by
:mod:`fuzz.seeds`). A process stopped by a hang or runaway memory is started
again for the time left.

Per target it prints and writes to the JSON summary (``WORK/summary.json``):
executions, coverage (libFuzzer's ``cov``: branches of the codec reached, and
``ft``: features), corpus size, findings (inputs saved under
``WORK/<target>/findings/``: add the ones fixed to ``fuzz/corpus/<target>/``)
and the process's peak RSS. The exit status is 1 when anything was found.

The codec runs from its Python source (``BINLAKE_PURE_PYTHON=1``) so that
atheris can instrument all of it, the modules of the compiled build included.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from binlog_codec import PURE_PYTHON_VARIABLE

from .seeds import is_real_binlog, write_seeds
from .targets import TARGETS
from .worker import FINDINGS_LOG

log = logging.getLogger("fuzz.run")

FUZZ_ROOT = Path(__file__).resolve().parent
REPO_ROOT = FUZZ_ROOT.parent
CORPUS = FUZZ_ROOT / "corpus"
WORK = FUZZ_ROOT / "work"
MEMORY_MB = 2048
INPUT_TIMEOUT = 10  # seconds an input may take before it counts as a hang
MAX_LEN = 16 << 10  # bytes of the largest input libFuzzer makes
# libFuzzer's status lines: "#1234  NEW    cov: 93 ft: 137 corp: 25/82b ..." and the final "stat::" lines.
# The codec runs from its .py files, so that atheris instruments every module: its compiled build,
# made from the same files, gives the same output (tests/binlog_codec/test_compiled.py).
_PURE_PYTHON = {**os.environ, PURE_PYTHON_VARIABLE: "1"}
_STATUS = re.compile(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/")
_STAT = re.compile(r"^stat::(\w+):\s+(\d+)")
_ARTIFACT = re.compile(r"^(crash|timeout|oom|leak|slow-unit)-")


@dataclass
class TargetResult:
    """What one target's run gave."""

    target: str
    seconds: float = 0.0
    executions: int = 0
    coverage: int = 0
    features: int = 0
    corpus: int = 0
    processes: int = 0
    peak_rss_mb: float = 0.0
    findings: list[dict] = field(default_factory=list)


def _folders(work: Path, target: str) -> dict[str, Path]:
    folders = {
        "corpus": work / target / "corpus",
        "seeds": work / target / "seeds",
        "findings": work / target / "findings",
        "committed": CORPUS / target,
    }
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    return folders


def _libfuzzer_flags(args: argparse.Namespace, folders: dict[str, Path], budget: float | None) -> list[str]:
    flags = [
        f"-rss_limit_mb={args.memory_mb}",
        f"-malloc_limit_mb={args.memory_mb}",
        f"-timeout={INPUT_TIMEOUT}",
        f"-max_len={MAX_LEN}",
        f"-artifact_prefix={folders['findings']}/",
        "-print_final_stats=1",
    ]
    if args.seed is not None:
        flags.append(f"-seed={args.seed}")
    if args.merge:
        return flags + ["-merge=1", str(folders["committed"]), str(folders["corpus"]), str(folders["seeds"])]
    flags.append(f"-runs={args.runs}" if args.runs is not None else f"-max_total_time={max(1, int(budget))}")
    return flags + [str(folders["corpus"]), str(folders["committed"]), str(folders["seeds"])]


def _run_process(args: argparse.Namespace, target: str, folders: dict[str, Path], budget: float | None,
                 result: TargetResult) -> int:
    """One worker process; its figures are added to ``result``. Returns its exit status."""
    worker = [
        sys.executable, "-m", "fuzz.worker", target,
        "--memory-mb", str(args.memory_mb), "--findings", str(folders["findings"]),
    ]
    again = _script_starting(worker, folders["findings"].parent / "worker.sh")
    command = [*worker, "--again", str(again), "--", *_libfuzzer_flags(args, folders, budget)]
    log_path = folders["findings"].parent / "libfuzzer.log"
    with open(log_path, "a", encoding="utf-8") as output:
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=output, stderr=subprocess.STDOUT, env=_PURE_PYTHON)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    result.processes += 1
    result.peak_rss_mb = max(result.peak_rss_mb, usage.ru_maxrss / 1024)
    _read_status(log_path, result)
    return process.returncode


def _script_starting(command: list[str], path: Path) -> Path:
    """An executable script running ``command`` with its own arguments added: libFuzzer's merge
    starts the worker again through it."""
    path.write_text(f"#!/bin/sh\ncd {shlex.quote(str(REPO_ROOT))} && exec {shlex.join(command)} -- \"$@\"\n")
    path.chmod(0o755)
    return path


def _read_status(log_path: Path, result: TargetResult) -> None:
    """Add the executions of the process that just wrote the end of ``log_path``; keep its coverage."""
    lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    start = max((i for i, line in enumerate(lines) if line.startswith("INFO: Seed:")), default=0)
    executions = 0
    for line in lines[start:]:
        status = _STATUS.match(line)
        if status:
            executions = int(status.group(1))
            result.coverage, result.features, result.corpus = map(int, status.group(2, 3, 4))
        stat = _STAT.match(line)
        if stat and stat.group(1) == "number_of_executed_units":
            executions = int(stat.group(2))
    result.executions += executions


def _findings(folders: dict[str, Path]) -> list[dict]:
    """The findings the workers described, and the hangs and runaway memory libFuzzer saved."""
    found = []
    described = folders["findings"] / FINDINGS_LOG
    if described.exists():
        found += [json.loads(line) for line in described.read_text(encoding="utf-8").splitlines() if line]
    for path in sorted(folders["findings"].iterdir()):
        kind = _ARTIFACT.match(path.name)
        if kind:
            found.append({"kind": kind.group(1), "input": str(path)})
    return found


def _drop_real_binlogs(folder: Path) -> None:
    """Remove the whole real binlogs a merge copied from the seeds: the fixtures stay where they
    are, the corpus keeps fragments and mutations of them."""
    for path in folder.iterdir():
        if is_real_binlog(path.read_bytes()):
            log.info("%s: a whole real binlog, left out of the corpus", path.name)
            path.unlink()


def fuzz_target(args: argparse.Namespace, target: str) -> TargetResult:
    """Run one target for its time (or number of runs), restarting after a hang or runaway memory."""
    folders = _folders(args.work, target)
    seeds = write_seeds(target, folders["seeds"])
    log.info("==> %s: %d seeds, %d committed inputs", target, seeds, len(list(folders["committed"].iterdir())))
    result = TargetResult(target)
    started = time.monotonic()
    while True:
        budget = None if args.runs is not None or args.merge else args.seconds - (time.monotonic() - started)
        status = _run_process(args, target, folders, budget, result)
        if status == 0 or args.runs is not None or args.merge:
            break
        left = args.seconds - (time.monotonic() - started)
        log.warning("%s: the fuzzer stopped (status %d), %.0f seconds left", target, status, left)
        if left < 5:
            break
    if args.merge:
        _drop_real_binlogs(folders["committed"])
    result.seconds = round(time.monotonic() - started, 1)
    result.findings = _findings(folders)
    log.info(
        "%s: %d executions in %.0f s, cov %d ft %d, corpus %d, %d findings, peak RSS %.0f MB",
        target, result.executions, result.seconds, result.coverage, result.features, result.corpus,
        len(result.findings), result.peak_rss_mb,
    )
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m fuzz.run", description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", metavar="TARGET", help=f"one or more of: {', '.join(TARGETS)}")
    parser.add_argument("--all", action="store_true", help="every target, one after the other")
    how_long = parser.add_mutually_exclusive_group()
    how_long.add_argument("--seconds", type=float, default=600, help="per target (default 600)")
    how_long.add_argument("--runs", type=int, help="inputs per target instead of a time")
    how_long.add_argument("--merge", action="store_true",
                          help="add the inputs of WORK that reach new coverage to fuzz/corpus/<target>")
    parser.add_argument("--memory-mb", type=int, default=MEMORY_MB, help=f"per process (default {MEMORY_MB})")
    parser.add_argument("--seed", type=int, help="libFuzzer's random seed (default: a new one each run)")
    parser.add_argument("--work", type=Path, default=WORK, help=f"work folder (default {WORK.relative_to(REPO_ROOT)})")
    parser.add_argument("--summary", type=Path, help="JSON summary (default WORK/summary.json)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    names = list(TARGETS) if args.all else args.targets
    if not names:
        parser.error("name a target or pass --all")
    unknown = [name for name in names if name not in TARGETS]
    if unknown:
        parser.error(f"unknown target {', '.join(unknown)}: one of {', '.join(TARGETS)}")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    results = [fuzz_target(args, name) for name in names]
    summary = args.summary or args.work / "summary.json"
    summary.parent.mkdir(parents=True, exist_ok=True)
    summary.write_text(json.dumps({"targets": [asdict(result) for result in results]}, indent=2) + "\n")
    log.info("summary: %s", summary)
    return 1 if any(result.findings for result in results) else 0


if __name__ == "__main__":
    sys.exit(main())
