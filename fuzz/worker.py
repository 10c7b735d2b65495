"""One fuzzing process: libFuzzer (through atheris) over one target, in a bounded address space.

Started by :mod:`fuzz.run`, one process per target::

    python -m fuzz.worker TARGET --memory-mb 2048 --findings DIR [--again SCRIPT] -- [libFuzzer flags and corpus folders]

The codec (``binlog_codec``) is imported with atheris' coverage instrumentation,
so libFuzzer keeps the inputs that reach new branches of the decoders.

The address space is limited to ``--memory-mb`` (``RLIMIT_AS``): an allocation
beyond it is a MemoryError, caught like any other finding, instead of a machine
that swaps. An input the target fails on with an exception other than its
documented error is a *finding*: the first input of each kind (exception type
and the codec line that raised it) is saved in ``DIR`` as ``finding-<sha1>``
and described in ``DIR/findings.jsonl``, and fuzzing goes on. Hangs and runaway
memory (``-timeout``, ``-rss_limit_mb``) stop libFuzzer, which saves the input
in ``DIR`` as ``timeout-<sha1>`` or ``oom-<sha1>``.

libFuzzer's ``-merge=1`` starts the process again as a command of its own:
``--again`` names an executable script that does so (:mod:`fuzz.run` writes it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import sys
import traceback
from pathlib import Path

import atheris

FINDINGS_LOG = "findings.jsonl"


def _limit_address_space(megabytes: int) -> None:
    limit = megabytes << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def signature(exc: BaseException) -> str:
    """The kind of a finding: the exception type and the innermost line of the codec it came from."""
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if "binlog_codec" in frame.filename]
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "outside the codec"
    return f"{type(exc).__name__} at {where}"


class Findings:
    """The findings of one process, one saved input per kind."""

    def __init__(self, folder: Path, target: str) -> None:
        self.folder = folder
        self.target = target
        self.seen: set[str] = set()
        folder.mkdir(parents=True, exist_ok=True)

    def record(self, exc: BaseException, data: bytes) -> None:
        kind = signature(exc)
        if kind in self.seen:
            return
        self.seen.add(kind)
        path = self.folder / f"finding-{hashlib.sha1(data).hexdigest()}"
        path.write_bytes(data)
        entry = {
            "target": self.target,
            "kind": kind,
            "message": str(exc)[:500],
            "input": str(path),
            "traceback": traceback.format_exception(exc)[-6:],
        }
        with open(self.folder / FINDINGS_LOG, "a", encoding="utf-8") as log:
            log.write(json.dumps(entry) + "\n")
        print(f"FINDING {self.target}: {kind}: {entry['message']} (input saved as {path})", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    ours, libfuzzer = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(prog="python -m fuzz.worker", description=__doc__.splitlines()[0])
    parser.add_argument("target")
    parser.add_argument("--memory-mb", type=int, required=True, help="address space limit of this process")
    parser.add_argument("--findings", type=Path, required=True, help="where findings are saved")
    parser.add_argument("--again", default=sys.argv[0], help="the command that starts this process again")
    args = parser.parse_args(ours)

    with atheris.instrument_imports(include=["binlog_codec"]):
        from fuzz import targets
    if args.target not in targets.TARGETS:
        parser.error(f"unknown target {args.target!r}: one of {', '.join(targets.TARGETS)}")
    findings = Findings(args.findings, args.target)

    def one_input(data: bytes) -> None:
        try:
            targets.run(args.target, data)
        except Exception as exc:  # anything but the documented error: a finding
            findings.record(exc, data)

    _limit_address_space(args.memory_mb)
    atheris.Setup([args.again, *libfuzzer], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
