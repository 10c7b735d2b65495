"""Which binlog files a run reads, and from where: file names, log order, the checkpoint rule.

A server names its binlog files ``<base>.<digits>`` (``mariadb-bin.000042``) and
writes them in the order of the number. A source's checkpoint is the last
committed file and the position after its last committed transaction
(``{"file": name, "position": n}``, :mod:`spark_jobs.publish`). The files a run
reads after it are the checkpoint's own file again when it has grown past the
position (it was still being written), then every later file from its start.
Both the staging of objects (``plugins.staging``) and the ingest of a folder
(:mod:`spark_jobs.ingest`) follow this rule, through :func:`after_checkpoint`.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence, TypeVar

BINLOG_NAME = re.compile(r"^(?P<base>.+)\.(?P<seq>\d+)$")

File = TypeVar("File")


class CheckpointFileMissing(ValueError):
    """The checkpoint names a file the source no longer holds: the log cannot go on from it."""


def is_binlog_name(name: str) -> bool:
    """Whether ``name`` has the form of a binlog file's name, ``<base>.<digits>``."""
    return BINLOG_NAME.match(name) is not None


def log_order(name: str) -> tuple[str, int, str]:
    """Sort key of a binlog file name: its base, then its sequence number as a number
    (``mariadb-bin.000009`` before ``mariadb-bin.000010``)."""
    match = BINLOG_NAME.match(name)
    return match["base"], int(match["seq"]), name


def after_checkpoint(
    files: Sequence[File],
    position: dict | None,
    *,
    name: Callable[[File], str],
    size: Callable[[File], int],
    where: str = "the source",
) -> list[tuple[File, int]]:
    """``(file, start position)`` of each of ``files`` (binlog files, any order) a run reads
    after the checkpoint ``position`` (None: every file from its start), in log order."""
    ordered = sorted(files, key=lambda file: log_order(name(file)))
    if position is None:
        return [(file, 0) for file in ordered]
    names = [name(file) for file in ordered]
    if position["file"] not in names:
        raise CheckpointFileMissing(
            f"the checkpoint's file {position['file']} is not in {where} any more "
            f"(binlog files there: {', '.join(names) or 'none'})"
        )
    at = names.index(position["file"])
    grown = [(ordered[at], position["position"])] if size(ordered[at]) > position["position"] else []
    return grown + [(file, 0) for file in ordered[at + 1 :]]
