"""Refusals waiting for a decision: the last run of a stream that was refused, and why.

A run whose source does not continue its stream (:mod:`spark_jobs.streams`)
publishes nothing, so nothing in the warehouse's tables shows it. Its refusal
is kept instead in ``<warehouse>/_refusals/<stream digest>.json`` (the stream,
its source, when, the problem and the way forward) until a later run of the
stream plans without one: the source was mended, or the user decided
(``--accept-gap``, ``--accept-new-series``). The binlake view lists them.
"""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import datetime, timezone
from pathlib import Path

from spark_jobs.positions import ContinuityError
from spark_jobs.publish import write_atomically

log = logging.getLogger(__name__)

FOLDER = "_refusals"


def _path(warehouse: Path, stream: str) -> Path:
    return Path(warehouse) / FOLDER / f"{hashlib.sha256(stream.encode()).hexdigest()[:16]}.json"


def record(warehouse: Path, stream: str, source: str, refused: ContinuityError) -> None:
    """Keep ``refused`` as the refusal waiting for a decision on ``stream``."""
    write_atomically(_path(warehouse, stream), json.dumps({
        "stream": stream,
        "source": source,
        "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "kind": type(refused).__name__,
        "problem": refused.problem,
        "way_forward": refused.way_forward,
    }, indent=1))
    log.error("stream %s refused: %s", stream, refused)


def clear(warehouse: Path, stream: str) -> None:
    """The stream has no refusal waiting any more."""
    path = _path(warehouse, stream)
    if path.exists():
        path.unlink()
        log.info("stream %s: the refusal of an earlier run no longer stands", stream)


def waiting(warehouse: Path) -> list[dict]:
    """Every refusal waiting for a decision, oldest first (a record that cannot be read is listed
    as such, not skipped)."""
    return sorted((_read(path) for path in sorted((Path(warehouse) / FOLDER).glob("*.json"))),
                  key=lambda refusal: refusal["at"])


def _read(path: Path) -> dict:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(found, dict) and {"stream", "at", "problem", "way_forward"} <= found.keys():
            return {"source": None, "kind": None, **found}
        problem = "a refusal record without its fields"
    except (OSError, ValueError) as error:
        problem = f"a refusal record that cannot be read: {error}"
    log.warning("%s: %s", path, problem)
    return {"stream": f"(unknown: {path.name})", "source": None, "at": "", "kind": None, "problem": problem,
            "way_forward": f"Remove {path} once the stream's next run has been checked"}
