"""A private ``airflow standalone`` for tests: started with ``infra/airflow.sh``, driven by its
command line and its REST API, its task logs read from its home.

:class:`AirflowStandalone` starts one Airflow (SQLite, this repository's ``dags/`` and
``plugins/``, everyone admin) in a folder of its own and stops it; :meth:`~AirflowStandalone.cli`
runs an ``airflow`` command against it, :meth:`~AirflowStandalone.api` a REST request with the
token its ``GET /auth/token`` hands out, :meth:`~AirflowStandalone.wait_for_run` polls a DAG run
until it ends, and :meth:`~AirflowStandalone.task_log` reads a task's log file. A failure says
what it waited for and ends with the tail of the failing task's log.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SCRIPT = REPO_ROOT / "infra" / "airflow.sh"
AIRFLOW = Path(sys.executable).parent / "airflow"
FINISHED = ("success", "failed")
WARNING_LEVELS = ("warning", "error", "critical")


class AirflowFailure(AssertionError):
    """What a test waited for did not happen; the message says what and why."""


def free_port() -> int:
    """A TCP port nothing listens on at the moment, on the loopback address."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fetch(url: str, headers: dict[str, str] | None = None, method: str = "GET",
          data: dict | None = None) -> tuple[int | None, str]:
    """Status and body of one HTTP request (JSON ``data`` as the body); status None when nothing answers."""
    body = None if data is None else json.dumps(data).encode()
    request = urllib.request.Request(url, data=body, method=method, headers={
        **({} if data is None else {"Content-Type": "application/json"}), **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()
    except OSError:
        return None, ""


def log_records(path: Path) -> list[dict]:
    """The records of one task log file (Airflow 3 writes one JSON object a line); a line that is
    not JSON becomes ``{"level": None, "event": line}``."""
    records = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            records.append({"level": None, "event": line})
    return records


def record_text(record: dict) -> str:
    """One log record as a line: level, logger, message."""
    return f"{record.get('level')} {record.get('logger', '')}: {record.get('event')}"


class AirflowStandalone:
    """One private Airflow in ``home`` on a free port (see the module text). ``env`` is added to
    the environment of every Airflow process (``AIRFLOW__...`` settings, ``AIRFLOW_VAR_...``
    Variables, ``SPARK_LOCAL_IP`` ...)."""

    def __init__(self, home: Path, env: dict[str, str] | None = None) -> None:
        self.home = home
        self.env = {**os.environ, **(env or {}), "AIRFLOW": str(AIRFLOW), "AIRFLOW_HOME": str(home),
                    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
                    "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
                    "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
        self.url = ""
        self._token = ""

    def start(self, timeout: float = 600) -> None:
        """``infra/airflow.sh start``: returns once the API server answers."""
        started = subprocess.run(["bash", str(SCRIPT), "start", str(self.home), str(free_port())],
                                 capture_output=True, text=True, env=self.env, timeout=timeout)
        if started.returncode != 0:
            raise AirflowFailure(f"airflow standalone did not start:\n{started.stderr[-4000:]}")
        details = dict(line.split("=", 1) for line in started.stdout.splitlines() if "=" in line)
        self.url = details["url"]

    def stop(self) -> None:
        """``infra/airflow.sh stop``: every process of this Airflow ends."""
        subprocess.run(["bash", str(SCRIPT), "stop", str(self.home)], capture_output=True, env=self.env, timeout=120)

    def cli(self, *args: str, timeout: float = 300) -> str:
        """The output of ``airflow ARGS...`` against this Airflow's database; fails when it fails."""
        done = subprocess.run([str(AIRFLOW), *args], capture_output=True, text=True, env=self.env,
                              cwd=REPO_ROOT, timeout=timeout)
        if done.returncode != 0:
            raise AirflowFailure(f"airflow {' '.join(args)} exited {done.returncode}:\n"
                                 f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done.stdout

    def token(self) -> str:
        """A JWT for the REST API: this Airflow logs everyone in as admin, so ``GET /auth/token``
        hands one out without credentials."""
        if not self._token:
            status, body = fetch(f"{self.url}/auth/token")
            if status != 201:
                raise AirflowFailure(f"GET /auth/token answered {status}: {body[:2000]}")
            self._token = json.loads(body)["access_token"]
        return self._token

    def api(self, path: str, method: str = "GET", data: dict | None = None, expect: int = 200, **query) -> dict:
        """One REST request to ``/api/v2/PATH`` (``query`` as its query string); its JSON answer."""
        url = f"{self.url}/api/v2/{path}" + (f"?{urllib.parse.urlencode(query, doseq=True)}" if query else "")
        status, body = fetch(url, {"Authorization": f"Bearer {self.token()}"}, method, data)
        if status != expect:
            raise AirflowFailure(f"{method} {url} answered {status}, not {expect}: {body[:3000]}")
        return json.loads(body) if body else {}

    def dag_runs(self, dag_id: str) -> list[dict]:
        """Every run of ``dag_id``, oldest first."""
        return self.api(f"dags/{dag_id}/dagRuns", order_by="run_after", limit=100)["dag_runs"]

    def task_instances(self, dag_id: str, run_id: str) -> list[dict]:
        """The task instances of one DAG run."""
        return self.api(f"dags/{dag_id}/dagRuns/{quote(run_id)}/taskInstances")["task_instances"]

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value"):
        """What a task of a run pushed under ``key`` (its return value, by default)."""
        entry = self.api(f"dags/{dag_id}/dagRuns/{quote(run_id)}/taskInstances/{task_id}/xcomEntries/{key}",
                         deserialize="true")
        return entry["value"]

    def wait_for_run(self, dag_id: str, run_id: str, timeout: float = 600) -> dict:
        """Polls the DAG run until it ends; returns it when it succeeded, fails with the state of
        each task and the end of the failed tasks' logs otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.api(f"dags/{dag_id}/dagRuns/{quote(run_id)}")
            if run["state"] in FINISHED or time.monotonic() > deadline:
                break
            time.sleep(2)
        if run["state"] != "success":
            raise AirflowFailure(f"{dag_id} run {run_id} is {run['state']} "
                                 f"({'ended' if run['state'] in FINISHED else f'after {timeout:.0f} s'}):\n"
                                 + self.describe_run(dag_id, run_id))
        return run

    def wait_for(self, what: str, found, timeout: float = 300, interval: float = 2):
        """Polls ``found()`` until it returns something true, and returns that; fails naming ``what``."""
        deadline = time.monotonic() + timeout
        while not (result := found()):
            if time.monotonic() > deadline:
                raise AirflowFailure(f"waited {timeout:.0f} s for {what}")
            time.sleep(interval)
        return result

    def describe_run(self, dag_id: str, run_id: str, tail: int = 40) -> str:
        """Each task's state, and the last ``tail`` lines of the log of each task that did not succeed."""
        lines = []
        for ti in self.task_instances(dag_id, run_id):
            lines.append(f"  {ti['task_id']}: {ti['state']} (try {ti['try_number']})")
            if ti["state"] not in ("success", "skipped", None) and ti["try_number"]:
                log = self.task_log(dag_id, run_id, ti["task_id"], ti["try_number"])
                text = [record_text(r) for r in log_records(log)] if log.is_file() else [f"(no log at {log})"]
                lines += [f"    {line}" for line in text[-tail:]]
        return "\n".join(lines)

    def task_log(self, dag_id: str, run_id: str, task_id: str, attempt: int = 1) -> Path:
        """Where Airflow wrote the log of one try of a task (its default log file name template)."""
        return (self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
                / f"attempt={attempt}.log")

    def task_logs(self, dag_id: str, run_id: str) -> list[Path]:
        """Every task log file of one DAG run."""
        return sorted((self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}").glob("task_id=*/attempt=*.log"))


def quote(run_id: str) -> str:
    """A run id as a path segment of the REST API (run ids hold ``:`` and ``+``)."""
    return urllib.parse.quote(run_id, safe="")
