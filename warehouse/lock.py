"""The warehouse lock: one writer at a time in a warehouse folder.

Two ingest processes (two DAG runs, a command-line ingest next to a DAG run, a
backfill next to an ingest) must never interleave their work over one
warehouse: both would plan from the same checkpoint and publish the same rows
twice, or remove each other's run folders. Every step that reads the
checkpoint or writes into the warehouse therefore runs inside
:func:`warehouse_lock`:

* :func:`spark_jobs.ingest.prepare`, :func:`~spark_jobs.ingest.validate_run`,
  :func:`~spark_jobs.ingest.publish_run` and
  :func:`spark_jobs.backfill.prepare_backfill` each hold it for their step
  (a DAG runs the steps as separate tasks, in separate processes);
* :func:`spark_jobs.ingest.ingest` and ``python -m spark_jobs.backfill`` hold it
  for the whole run, prepare to publish, so that no other run's commit lands
  between their prepare and their publish.

The lock is :func:`fcntl.flock` on ``<warehouse>/_lock``. The holder writes its
pid, host, start time and what it is doing into the file, so that a process
that cannot get the lock says who has it, and removes the file when it is done
(a process that locked a file just removed tries again on the new one). A
process waits up to ``timeout`` seconds (default: ``$BINLAKE_LOCK_TIMEOUT``,
else 10 minutes; 0: do not wait) and then raises :class:`WarehouseLocked`. The
kernel drops the lock when the holder exits, however it exits: a killed
process leaves no stale lock, only the file with its last words, which the
next holder takes over.

The lock is re-entrant within a thread (a step inside a whole-run lock takes
it again for free) and excludes other threads of the same process.

``flock`` works between processes of one machine. A warehouse on a shared
filesystem written from several machines (NFS, a cluster filesystem, an object
store) needs a lock service instead (a database row, ZooKeeper, etcd): this
lock does not protect it.
"""

from __future__ import annotations

import fcntl
import functools
import inspect
import json
import logging
import os
import socket
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from warehouse import storage

log = logging.getLogger(__name__)

LOCK_FILE = "_lock"
TIMEOUT_VARIABLE = "BINLAKE_LOCK_TIMEOUT"
DEFAULT_TIMEOUT = 600.0
POLL_SECONDS = 0.2


class WarehouseLocked(RuntimeError):
    """Another process held the warehouse lock for longer than this one would wait."""

    def __init__(self, warehouse: Path, holder: dict, waited: float) -> None:
        who = ", ".join(f"{key} {holder[key]}" for key in ("pid", "host", "since", "purpose") if key in holder)
        super().__init__(
            f"warehouse {warehouse} is locked by another process ({who or 'holder unknown'}); "
            f"gave up after {waited:.0f} s. Wait for it to finish, or stop it."
        )
        self.holder = holder


class _Held:
    """This process's hold on one warehouse's lock: the open lock file and a thread lock."""

    def __init__(self) -> None:
        self.threads = threading.RLock()
        self.depth = 0
        self.handle = None


Step = TypeVar("Step", bound=Callable)

_held: dict[Path, _Held] = {}
_registry = threading.Lock()


def default_timeout() -> float:
    """Seconds to wait for the lock: ``$BINLAKE_LOCK_TIMEOUT``, else :data:`DEFAULT_TIMEOUT`."""
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    return float(text) if text else DEFAULT_TIMEOUT


def read_holder(warehouse: str | os.PathLike[str]) -> dict:
    """What the holder of the lock (or a holder that was killed) wrote about itself; empty when
    nobody holds it."""
    try:
        return json.loads((Path(warehouse) / LOCK_FILE).read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}


@contextmanager
def warehouse_lock(
    warehouse: str | os.PathLike[str], *, purpose: str = "", timeout: float | None = None
) -> Iterator[None]:
    """Hold the lock of ``warehouse`` (created when missing) for the ``with`` block; see the
    module text. ``purpose`` is written for others to read (e.g. ``"prepare"``)."""
    root = Path(warehouse).resolve()
    timeout = default_timeout() if timeout is None else timeout
    with _registry:
        held = _held.setdefault(root, _Held())
    deadline = time.monotonic() + timeout
    if not held.threads.acquire(timeout=max(timeout, 0)):
        raise WarehouseLocked(root, {"pid": os.getpid(), "purpose": "another thread of this process"}, timeout)
    try:
        if held.depth == 0:
            held.handle = _acquire(root, purpose, deadline, timeout)
        held.depth += 1
        try:
            yield
        finally:
            held.depth -= 1
            if held.depth == 0:
                _release(root, held.handle)
                held.handle = None
    finally:
        held.threads.release()


def locks_warehouse(purpose: str) -> Callable[[Step], Step]:
    """Decorator: the function runs holding the lock of the warehouse given as its ``warehouse``
    argument (``@locks_warehouse("publish")``). A warehouse given by its ``s3://`` URI is given
    to the function as its state folder (:func:`warehouse.storage.attach`), once its bucket has
    answered (:meth:`warehouse.storage.Storage.check`)."""

    def decorate(step: Step) -> Step:
        signature = inspect.signature(step)

        @functools.wraps(step)
        def locked(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            warehouse = bound.arguments["warehouse"]
            if storage.is_object_store(str(warehouse)):
                bound.arguments["warehouse"] = warehouse = str(storage.attach(str(warehouse)))
            storage.of(warehouse).check()
            with warehouse_lock(warehouse, purpose=purpose):
                return step(*bound.args, **bound.kwargs)

        return locked

    return decorate


def _acquire(root: Path, purpose: str, deadline: float, timeout: float):
    """The open lock file, flock'ed, with this process's particulars written into it."""
    root.mkdir(parents=True, exist_ok=True)
    announced = False
    while True:
        handle = open(root / LOCK_FILE, "a+", encoding="utf-8")  # never truncated before the lock is ours
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            if time.monotonic() >= deadline:
                raise WarehouseLocked(root, read_holder(root), timeout) from None
            if not announced:
                log.info("warehouse %s is locked by %s; waiting up to %.0f s", root, read_holder(root), timeout)
                announced = True
            time.sleep(POLL_SECONDS)
            continue
        if _still_in_place(root, handle):
            break
        handle.close()  # the holder before removed it after we opened it: lock the new one
    _write_holder(handle, purpose)
    log.debug("warehouse %s locked (%s)", root, purpose or "no purpose given")
    return handle


def _still_in_place(root: Path, handle) -> bool:
    """Whether the locked file is the one at ``<warehouse>/_lock`` (not one removed meanwhile)."""
    try:
        on_disk = os.stat(root / LOCK_FILE)
    except FileNotFoundError:
        return False
    held = os.fstat(handle.fileno())
    return (held.st_dev, held.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def _write_holder(handle, purpose: str) -> None:
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "purpose": purpose,
    }
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps(holder))
    handle.flush()


def _release(root: Path, handle) -> None:
    """Remove the lock file, then unlock and close it."""
    (root / LOCK_FILE).unlink(missing_ok=True)
    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    handle.close()
    log.debug("warehouse %s unlocked", root)
