"""Runs that did not publish: refusals waiting for a decision, and failed runs with their first error.

A run that does not publish leaves nothing in the warehouse's tables, so its
record is kept beside them, outside the commit, in ``<warehouse>/_refusals/``:

* **Refusals.** A run whose source does not continue its stream
  (:mod:`spark_jobs.streams`) is refused: ``<stream digest>.json`` keeps the
  stream, its source, when, the problem and the way forward until a later run
  of the stream plans without one: the source was mended, or the user decided
  (``--accept-gap``, ``--accept-new-series``).
* **Failed runs.** A run that fails otherwise (an error while planning,
  decoding, materializing, validating or publishing, or data that failed
  validation) leaves ``failed/<stream digest>-<run id>.json``: the stream, its
  source, when, the run id (None when it failed before it was planned), the
  Airflow run it belonged to, the step, the first line of its error, and what
  it saw of the source's newest event (:func:`spark_jobs.ingest.source_seen`).
  A run failing again replaces its record. The records of a stream are cleared
  once a later run of it succeeds (publishes, or finds nothing new): they list
  what is failing now, not a history (the Airflow UI keeps that).

:class:`Attempt` is what the ingest wraps its steps in: a
:class:`~spark_jobs.positions.ContinuityError` becomes a refusal, any other
error a failed run. The binlake view lists both.
"""

from __future__ import annotations

import hashlib
import json
import logging
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from spark_jobs.positions import ContinuityError
from warehouse.publish import write_atomically

log = logging.getLogger(__name__)

FOLDER = "_refusals"
FAILED = "failed"  # under FOLDER
UNPLANNED = "unplanned"  # the run key of a run that failed before it had a run id
MAX_ERROR_CHARS = 500
JVM_CALL = "An error occurred while calling "  # py4j's first line: the Java error follows


def _digest(stream: str) -> str:
    return hashlib.sha256(stream.encode()).hexdigest()[:16]


def _path(warehouse: Path, stream: str) -> Path:
    return Path(warehouse) / FOLDER / f"{_digest(stream)}.json"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# ---------------------------------------------------------------- refusals


def record(warehouse: Path, stream: str, source: str, refused: ContinuityError) -> None:
    """Keep ``refused`` as the refusal waiting for a decision on ``stream``."""
    write_atomically(_path(warehouse, stream), json.dumps({
        "stream": stream,
        "source": source,
        "at": _now(),
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
    found, problem = _load(path, {"stream", "at", "problem", "way_forward"}, "refusal")
    if found is not None:
        return {"source": None, "kind": None, **found}
    return {"stream": f"(unknown: {path.name})", "source": None, "at": "", "kind": None, "problem": problem,
            "way_forward": f"Remove {path} once the stream's next run has been checked"}


def _load(path: Path, fields: set[str], what: str) -> tuple[dict | None, str]:
    """The record in ``path`` when it holds ``fields``, else None and what is wrong with it."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(found, dict) and fields <= found.keys():
            return found, ""
        problem = f"a {what} record without its fields"
    except (OSError, ValueError) as error:
        problem = f"a {what} record that cannot be read: {error}"
    log.warning("%s: %s", path, problem)
    return None, problem


# ---------------------------------------------------------------- failed runs


def _failure_path(warehouse: Path, stream: str, run_id: str | None) -> Path:
    return Path(warehouse) / FOLDER / FAILED / f"{_digest(stream)}-{run_id or UNPLANNED}.json"


def first_error(error: BaseException) -> str:
    """What a person reads first of ``error``: its type and the first line of its message that
    says something (an error may offer its own as ``first_error``; py4j's "An error occurred
    while calling" line gives way to the Java error after it), cut at :data:`MAX_ERROR_CHARS`."""
    own = getattr(error, "first_error", None)
    lines = [line.strip().lstrip(": ") for line in str(error).splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(JVM_CALL)] or lines
    text = own if isinstance(own, str) else f"{type(error).__name__}: {lines[0] if lines else '(no message)'}"
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + "..."


def record_failure(attempt: "Attempt", step: str, error: str) -> None:
    """Keep the failure of ``attempt`` at ``step`` with its first ``error`` line (replacing an
    earlier failure of the same run)."""
    write_atomically(_failure_path(attempt.warehouse, attempt.stream, attempt.run_id), json.dumps({
        "stream": attempt.stream,
        "source": attempt.source,
        "at": _now(),
        "run_id": attempt.run_id,
        "airflow_run": attempt.airflow_run,
        "step": step,
        "error": error,
        "seen": attempt.seen,
    }, indent=1))
    log.error("stream %s: run %s failed at %s: %s", attempt.stream, attempt.run_id or "(not planned)", step, error)


def clear_failures(warehouse: Path, stream: str) -> None:
    """A run of ``stream`` succeeded: its earlier failures no longer stand."""
    cleared = list((Path(warehouse) / FOLDER / FAILED).glob(f"{_digest(stream)}-*.json"))
    for path in cleared:
        path.unlink(missing_ok=True)
    if cleared:
        log.info("stream %s: %d failed run(s) before this one no longer stand", stream, len(cleared))


def failing(warehouse: Path) -> list[dict]:
    """Every failed run not yet followed by a success of its stream, newest first (a record that
    cannot be read is listed as such, not skipped)."""
    found = [_read_failure(path) for path in sorted((Path(warehouse) / FOLDER / FAILED).glob("*.json"))]
    return sorted(found, key=lambda failure: failure["at"], reverse=True)


def _read_failure(path: Path) -> dict:
    found, problem = _load(path, {"stream", "at", "step", "error"}, "failed run")
    blank = {"source": None, "run_id": None, "airflow_run": None, "seen": None}
    if found is not None:
        return {**blank, **found}
    return {**blank, "stream": f"(unknown: {path.name})", "at": "", "step": "", "error": problem}


@dataclass
class Attempt:
    """A run of ``stream`` over ``source`` under way: its steps run inside :meth:`step`, which
    records how the run did not publish if one raises. ``run_id`` and ``seen`` (the source's newest
    event the run saw) are filled in once the run is planned; ``airflow_run`` is ``dag_id/run_id``."""

    warehouse: Path
    stream: str
    source: str
    airflow_run: str | None = None
    run_id: str | None = None
    seen: dict | None = None

    @contextmanager
    def step(self, name: str, expected: tuple[type[BaseException], ...] = ()) -> Iterator["Attempt"]:
        """Run the step ``name``: a :class:`ContinuityError` raised in it is kept as the stream's
        refusal, any other error (but the ``expected`` ones, recorded elsewhere or no failure of
        the stream) as the run's failure; the error goes on up either way."""
        try:
            yield self
        except ContinuityError as refused:
            record(self.warehouse, self.stream, self.source, refused)
            raise
        except expected:
            raise
        except Exception as error:
            self.failed(name, error)
            raise

    def failed(self, step: str, error: BaseException) -> None:
        """Keep the run's failure at ``step``."""
        record_failure(self, step, first_error(error))
