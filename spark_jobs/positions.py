"""Which binlog files a run reads, and from where: file names, log order, the checkpoint rule.

A server names its binlog files ``<base>.<digits>`` (``mariadb-bin.000042``) and
writes them in the order of the number, each file the next number after the
last. A source's checkpoint is the last committed file and the position after
its last committed transaction (``{"file": name, "position": n}``,
:mod:`warehouse.publish`). The files a run reads after it are the checkpoint's
own file again when it has grown past the position (it was still being
written), then every later file from its start.

Those later files must continue the log: their numbers follow one another
from the checkpoint's file on. A missing number is a gap (a file purged before
it was archived, one the archiver compressed or renamed, a failed upload): the
run stops with :class:`MissingFiles` naming them, before anything is read.
An archiver's compressed copy (``mariadb-bin.000004.gz`` or ``.zst``) stands for
the file it holds (:func:`binlog_name_of`).

Both the staging of objects (``stage.staging``) and the ingest of a folder
(:mod:`spark_jobs.ingest`) follow this rule, through :func:`after_checkpoint`;
:mod:`spark_jobs.streams` adds what names cannot tell (file identity, GTIDs).
"""

from __future__ import annotations

import re
from typing import Callable, Sequence, TypeVar

BINLOG_NAME = re.compile(r"^(?P<base>.+)\.(?P<seq>\d+)$")
COMPRESSED_SUFFIXES = (".gz", ".zst")

File = TypeVar("File")


class ContinuityError(RuntimeError):
    """The source does not continue the log the warehouse holds: reading on would lose or repeat
    transactions. Nothing was published and the checkpoint stays; ``way_forward`` says what a user
    can decide (each choice is a flag of the ingest, recorded in the run record)."""

    def __init__(self, problem: str, way_forward: str) -> None:
        super().__init__(f"{problem}. {way_forward}")
        self.problem = problem
        self.way_forward = way_forward


class CheckpointFileMissing(ContinuityError, ValueError):
    """The checkpoint names a file the source no longer holds: the log cannot go on from it."""


class MissingFiles(ContinuityError):
    """The numbers of the source's files skip one or more files: a gap in the log."""

    def __init__(self, problem: str, way_forward: str, missing: list[str]) -> None:
        super().__init__(problem, way_forward)
        self.missing = missing


ACCEPT_GAP = "go on over the gap only if it is deliberate (the files were purged and their transactions are " \
             "not wanted) with --accept-gap (DAG param accept_gap), which the run record keeps"


def is_binlog_name(name: str) -> bool:
    """Whether ``name`` has the form of a binlog file's name, ``<base>.<digits>``."""
    return BINLOG_NAME.match(name) is not None


def log_order(name: str) -> tuple[str, int, str]:
    """Sort key of a binlog file name: its base, then its sequence number as a number
    (``mariadb-bin.000009`` before ``mariadb-bin.000010``)."""
    match = BINLOG_NAME.match(name)
    return match["base"], int(match["seq"]), name


def binlog_name_of(name: str) -> str | None:
    """The binlog file name an object stands for: ``name`` itself when it has the form
    ``<base>.<digits>``, the name inside an archiver's compressed copy (``<base>.<digits>.gz``
    or ``.zst``), else None."""
    for suffix in COMPRESSED_SUFFIXES:
        if name.endswith(suffix) and is_binlog_name(name[: -len(suffix)]):
            return name[: -len(suffix)]
    return name if is_binlog_name(name) else None


def missing_between(names: Sequence[str]) -> list[str]:
    """The file names missing from ``names`` (binlog names of one base, in log order) for their
    numbers to follow one another: ``a.000001, a.000004`` lacks ``a.000002`` and ``a.000003``.
    Names of different bases are a gap too (the log changed base without a file in between)."""
    missing: list[str] = []
    for earlier, later in zip(names, names[1:]):
        first, second = BINLOG_NAME.match(earlier), BINLOG_NAME.match(later)
        if first["base"] != second["base"]:
            missing.append(f"(the files after {earlier} and before {later})")
            continue
        width = len(first["seq"])
        for number in range(int(first["seq"]) + 1, min(int(second["seq"]), int(first["seq"]) + 1001)):
            missing.append(f"{first['base']}.{number:0{width}d}")
        if int(second["seq"]) - int(first["seq"]) > 1001:
            missing.append(f"... up to {first['base']}.{int(second['seq']) - 1:0{width}d}")
    return missing


def after_checkpoint(
    files: Sequence[File],
    position: dict | None,
    *,
    name: Callable[[File], str],
    size: Callable[[File], int],
    where: str = "the source",
    accept_gap: bool = False,
) -> list[tuple[File, int]]:
    """``(file, start position)`` of each of ``files`` (binlog files, any order) a run reads
    after the checkpoint ``position`` (None: every file from its start), in log order.

    Raises :class:`CheckpointFileMissing` when the checkpoint's file is not among ``files``, and
    :class:`MissingFiles` when the files to read skip a number (unless ``accept_gap``)."""
    ordered = sorted(files, key=lambda file: log_order(name(file)))
    names = [name(file) for file in ordered]
    if position is None:
        pending = [(file, 0) for file in ordered]
        check_continuous(names, where, accept_gap)
        return pending
    if position["file"] not in names:
        raise CheckpointFileMissing(
            f"the checkpoint's file {position['file']} is not in {where} any more "
            f"(binlog files there: {_some(names) or 'none'})",
            "Point the stream at the source that holds it (--source), or, for a source with GTIDs, at any source "
            "holding the transactions after the checkpoint (a new primary's binlogs): the GTID set finds where to "
            "go on. A source without GTIDs that really starts a new log (RESET MASTER, a restore) goes on with "
            "--accept-new-series",
        )
    at = names.index(position["file"])
    check_continuous(names[at:], where, accept_gap)
    grown = [(ordered[at], position["position"])] if size(ordered[at]) > position["position"] else []
    return grown + [(file, 0) for file in ordered[at + 1 :]]


def check_continuous(names: Sequence[str], where: str = "the source", accept_gap: bool = False) -> None:
    """Raise :class:`MissingFiles` when ``names`` (in log order) skip a file, unless ``accept_gap``."""
    missing = missing_between(names)
    if missing and not accept_gap:
        raise missing_files(where, missing, names[0], names[-1])


def missing_files(where: str, missing: list[str], before: str, after: str) -> MissingFiles:
    """The refusal of a log that lacks the files ``missing`` between ``before`` and ``after``."""
    return MissingFiles(
        f"{where} lacks {', '.join(missing)} between {before} and {after}: reading on would lose their transactions",
        "Bring the missing files into the source (a compressed copy, .gz or .zst, is read as the file), or "
        + ACCEPT_GAP,
        missing,
    )


def _some(names: Sequence[str], most: int = 8) -> str:
    """At most ``most`` names, with how many more there are."""
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")
