"""warehouse.lock: one writer at a time in a warehouse, across real processes.

No test here depends on timing: a process that must be waiting is known to be
waiting because it logged so, and a process that must fail is asked not to wait.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from mariadb import REPO_ROOT
from warehouse import publish
from warehouse.lock import LOCK_FILE, TIMEOUT_VARIABLE, WarehouseLocked, read_holder, warehouse_lock

SAMPLES = sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*"))
HOLDER = """
import logging, sys
from warehouse.lock import warehouse_lock
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(name)s: %(message)s")
with warehouse_lock(sys.argv[1], purpose=sys.argv[2]):
    print("holding", flush=True)
    sys.stdin.readline()
    print("released", flush=True)
"""


def environment(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "SPARK_LOCAL_IP": "127.0.0.1", **extra}


def start_holder(warehouse: Path, purpose: str, log: Path, **env: str) -> subprocess.Popen:
    """A process that takes the lock, says ``holding`` in ``log`` and holds it until a line on stdin."""
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(warehouse), purpose], stdin=subprocess.PIPE, stdout=open(log, "w"),
        stderr=subprocess.STDOUT, text=True, env=environment(**env),
    )


def wait_for(log: Path, text: str, process: subprocess.Popen | None = None, count: int = 1) -> None:
    """Until ``log`` holds ``text`` ``count`` times (a process that exits first fails the test)."""
    deadline = time.monotonic() + 600  # a safety net against a hang, not part of any assertion
    while log.read_text(errors="replace").count(text) < count:
        assert process is None or process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"{log} never said {text!r}: {log.read_text()}"
        time.sleep(0.1)


def release(holder: subprocess.Popen) -> None:
    holder.stdin.write("\n")
    holder.stdin.flush()
    assert holder.wait(timeout=60) == 0


def test_a_second_process_that_does_not_wait_is_told_who_holds_the_lock(tmp_path):
    warehouse = tmp_path / "warehouse"
    holder = start_holder(warehouse, "publish", tmp_path / "holder.log")
    try:
        wait_for(tmp_path / "holder.log", "holding", holder)
        with pytest.raises(WarehouseLocked) as refused:
            with warehouse_lock(warehouse, timeout=0):
                pytest.fail("the lock was taken twice")
        message = str(refused.value)
        assert f"pid {holder.pid}" in message and f"host {socket.gethostname()}" in message
        assert "purpose publish" in message and "since 20" in message and str(warehouse) in message
    finally:
        release(holder)
    with warehouse_lock(warehouse, timeout=0):  # free again once the holder let go
        assert read_holder(warehouse)["pid"] == os.getpid()


def test_a_waiting_process_goes_on_only_after_the_holder_released(tmp_path):
    warehouse = tmp_path / "warehouse"
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    holder = start_holder(warehouse, "first", first)
    wait_for(first, "holding", holder)
    waiter = start_holder(warehouse, "second", second, **{TIMEOUT_VARIABLE: "600"})
    try:
        wait_for(second, "is locked by", waiter)  # it found the lock taken and waits
        assert "holding" not in second.read_text()
        release(holder)
        wait_for(second, "holding", waiter)
        assert read_holder(warehouse)["purpose"] == "second"
    finally:
        release(waiter)
    assert first.read_text().splitlines()[-1] == "released"


def test_the_lock_of_a_killed_holder_is_free(tmp_path):
    warehouse = tmp_path / "warehouse"
    holder = start_holder(warehouse, "doomed", tmp_path / "holder.log")
    wait_for(tmp_path / "holder.log", "holding", holder)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert read_holder(warehouse)["pid"] == holder.pid  # its last words stay in the file
    with warehouse_lock(warehouse, timeout=0):
        assert read_holder(warehouse)["pid"] == os.getpid()
    assert not (warehouse / LOCK_FILE).exists()  # the file is there only while someone holds the lock


COUNTER = """
import sys
from pathlib import Path
from warehouse.lock import warehouse_lock
warehouse, counter = sys.argv[1], Path(sys.argv[2])
for _ in range(int(sys.argv[3])):
    with warehouse_lock(warehouse):  # read, then write: an increment lost unless the lock excludes
        value = int(counter.read_text())
        counter.write_text(str(value + 1))
"""


def test_processes_taking_turns_never_hold_the_lock_together(tmp_path):
    """Four processes increment a counter 100 times each inside the lock, the lock file removed
    and created anew at every turn: no increment is lost."""
    counter = tmp_path / "counter"
    counter.write_text("0")
    workers = [subprocess.Popen([sys.executable, "-c", COUNTER, str(tmp_path / "warehouse"), str(counter), "100"],
                                env=environment()) for _ in range(4)]
    assert [worker.wait(timeout=600) for worker in workers] == [0, 0, 0, 0]
    assert counter.read_text() == "400"


def test_the_lock_is_reentrant_in_a_thread_and_excludes_other_threads(tmp_path):
    outcome = []

    def other_thread() -> None:
        try:
            with warehouse_lock(tmp_path, timeout=0):
                outcome.append("taken")
        except WarehouseLocked as exc:
            outcome.append(str(exc))

    with warehouse_lock(tmp_path, purpose="outer"):
        with warehouse_lock(tmp_path, purpose="inner", timeout=0):
            assert read_holder(tmp_path)["purpose"] == "outer"
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    assert len(outcome) == 1 and "another thread of this process" in outcome[0]
    other_thread()
    assert outcome[-1] == "taken"


def test_two_concurrent_ingests_never_interleave(tmp_path):
    """Both ingests start while the lock is held and wait; then one runs, the other waits for it
    to finish and finds nothing new: one run record, every row once."""
    source, warehouse = tmp_path / "source", tmp_path / "warehouse"
    source.mkdir()
    for sample in SAMPLES:
        shutil.copyfile(sample, source / sample.name)
    logs = [tmp_path / "ingest-1.log", tmp_path / "ingest-2.log"]
    command = [sys.executable, "-m", "spark_jobs.ingest", "--source", str(source), "--warehouse", str(warehouse),
               "--master", "local[1]", "--no-validation"]
    with warehouse_lock(warehouse, purpose="test"):
        ingests = [subprocess.Popen(command, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                                    env=environment(**{TIMEOUT_VARIABLE: "900"})) for log in logs]
        for log, process in zip(logs, ingests):
            wait_for(log, "is locked by", process)
    assert [process.wait(timeout=900) for process in ingests] == [0, 0]
    outputs = sorted(log.read_text() for log in logs)
    assert sum("nothing new to ingest" in output for output in outputs) == 1
    assert all(output.count("is locked by") >= 1 for output in outputs)
    assert len(list((warehouse / "metadata" / "runs").glob("*.parquet"))) == 1
    for table in (warehouse / "changes").glob("*/*"):
        rows = ds.dataset(table, partitioning="hive").to_table().to_pylist()
        keys = Counter((r["_binlog_seq"], r["_binlog_pos"], r["_binlog_inner_offset"], r["_row_index"]) for r in rows)
        assert rows and max(keys.values()) == 1
    assert publish.read_checkpoint(warehouse)[str(source.resolve())]["position"] == SAMPLES[-1].stat().st_size
