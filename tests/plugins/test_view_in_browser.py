"""The binlake view in a real Airflow, seen by a real browser, behind a real login.

One Airflow (``infra/airflow.sh start``: standalone, SQLite, this repository's
plugins) serves a warehouse made by a real ingest of the bundled samples; the
warehouse is chosen through the Airflow Variable ``binlake_warehouse_uri`` set
with the ``airflow`` command. Headless Chromium then loads the view: its DOM
must show the checkpoint position and the run id, and a screenshot of the
view inside the Airflow UI is kept as a test artefact (its path is printed).

That Airflow logs everyone in as admin (``simple_auth_manager_all_admins``),
so the login is tried on a second Airflow API server (``airflow api-server``)
with a copy of its metadata database and a login: SimpleAuthManager with one
user of the viewer role. Anonymous requests to the mounted view are refused
there, and the page is served to the token its login hands out, sent as the
Airflow UI sends it (the ``_token`` cookie) or as an API client does.

The browser tests need Debian's ``chromium`` (``make chromium``); without it
they are skipped, or fail when ``CI`` is set.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from airflow_standalone import fetch, free_port
from warehouse.publish import read_checkpoint

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "infra" / "airflow.sh"
AIRFLOW = Path(sys.executable).parent / "airflow"
WINDOW = (1400, 900)
SIMPLE_AUTH_MANAGER = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
START_TIMEOUT = 300  # seconds for an API server to answer: the first start on a busy machine is slow


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A running Airflow whose binlake view shows a freshly ingested warehouse; stopped at the end.
    The ingest (Spark) runs while Airflow starts."""
    source, warehouse = tmp_path_factory.mktemp("binlogs"), tmp_path_factory.mktemp("warehouse")
    for sample in sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*")):
        shutil.copyfile(sample, source / sample.name)
    ingest = subprocess.Popen(
        [sys.executable, "-m", "spark_jobs.ingest", "--source", str(source), "--warehouse", str(warehouse),
         "--no-validation"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT,
        env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"),
    )
    home = tmp_path_factory.mktemp("airflow")
    env = dict(os.environ, AIRFLOW=str(AIRFLOW))
    for inherited in ("BINLAKE_WAREHOUSE_URI", "AIRFLOW_VAR_BINLAKE_WAREHOUSE_URI", "AIRFLOW_HOME"):
        env.pop(inherited, None)
    started = subprocess.run(["bash", str(SCRIPT), "start", str(home), str(free_port())],
                             capture_output=True, text=True, env=env, timeout=600)
    try:
        assert started.returncode == 0, started.stderr[-4000:]
        details = dict(line.split("=", 1) for line in started.stdout.splitlines() if "=" in line)
        out, err = ingest.communicate(timeout=900)
        assert ingest.returncode == 0, err[-4000:]
        run_id = re.search(r"^run (\w+) of stream", out, re.MULTILINE)[1]  # "run <id> of stream ...: 2 files"
        set_variable(home, "binlake_warehouse_uri", warehouse.as_uri())
        yield {"url": details["url"], "home": home, "warehouse": warehouse, "source": source, "run_id": run_id}
    finally:
        ingest.kill()
        subprocess.run(["bash", str(SCRIPT), "stop", str(home)], capture_output=True, env=env, timeout=120)


def test_the_view_shows_the_checkpoint_and_the_last_run(served, chromium, tmp_path):
    dom = run_chromium(chromium, tmp_path, "--dump-dom", f"{served['url']}/binlake/").stdout
    (committed,) = read_checkpoint(served["warehouse"]).values()
    assert str(served["warehouse"]) in dom  # the Variable set after the start is what the view reads
    assert f"{committed['position']:,}" in dom and committed["file"] in dom
    assert served["run_id"] in dom
    assert "up to date" in dom and "not validated" in dom


def test_a_screenshot_of_the_view_inside_the_airflow_ui(served, chromium, tmp_path):
    screenshot = tmp_path / "binlake-view.png"
    # Virtual time lets the Airflow UI (a single-page app) load and embed the view before the capture.
    run_chromium(chromium, tmp_path, f"--screenshot={screenshot}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
                 "--virtual-time-budget=20000", f"{served['url']}/plugin/binlake")
    print(f"screenshot of the binlake view: {screenshot}")
    width, height, colours = png_facts(screenshot)
    assert (width, height) == WINDOW
    assert colours > 16, "the screenshot is (nearly) blank"


@pytest.fixture(scope="module")
def with_login(served, tmp_path_factory):
    """An Airflow API server with a login (user ``reader``, viewer role) over a copy of the served
    Airflow's metadata database, showing the same warehouse; stopped at the end."""
    home = tmp_path_factory.mktemp("airflow-login")
    with sqlite3.connect(served["home"] / "airflow.db") as source, sqlite3.connect(home / "airflow.db") as copy:
        source.backup(copy)  # a consistent copy while the served Airflow keeps writing
    # Variables are encrypted with the Fernet key of each Airflow home: set it again in this one.
    set_variable(home, "binlake_warehouse_uri", served["warehouse"].as_uri())
    password = secrets.token_urlsafe(16)
    (home / "passwords.json").write_text(json.dumps({"reader": password}))
    url = f"http://127.0.0.1:{free_port()}"
    env = dict(
        os.environ,
        PATH=f"{AIRFLOW.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__DAGS_FOLDER=str(REPO_ROOT / "dags"),
        AIRFLOW__CORE__PLUGINS_FOLDER=str(REPO_ROOT / "plugins"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{home}/airflow.db",
        AIRFLOW__API__BASE_URL=url,
        AIRFLOW__CORE__AUTH_MANAGER=SIMPLE_AUTH_MANAGER,
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS="False",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="reader:viewer",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE=str(home / "passwords.json"),
        AIRFLOW__API_AUTH__JWT_SECRET=secrets.token_urlsafe(64),
    )
    for inherited in ("BINLAKE_WAREHOUSE_URI", "AIRFLOW_VAR_BINLAKE_WAREHOUSE_URI"):
        env.pop(inherited, None)
    log = home / "api-server.log"
    with log.open("w") as output:
        server = subprocess.Popen(
            [str(AIRFLOW), "api-server", "--host", "127.0.0.1", "--port", url.rsplit(":", 1)[1], "--workers", "1"],
            stdout=output, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
    try:
        wait_until_it_answers(url, server, log)
        yield {"url": url, "username": "reader", "password": password}
    finally:
        stop_process_group(server)


def wait_until_it_answers(url: str, server: subprocess.Popen, log: Path) -> None:
    """Return once the API server's health endpoint (no login needed) answers 200."""
    deadline = time.monotonic() + START_TIMEOUT
    while fetch(f"{url}/api/v2/monitor/health")[0] != 200:
        if server.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"the API server did not start; end of {log}:\n{log.read_text()[-4000:]}", pytrace=False)
        time.sleep(1)


def stop_process_group(server: subprocess.Popen) -> None:
    """SIGTERM to the server's process group (it leads one), SIGKILL if it is still there after 60 s."""
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def log_in(server: dict) -> str:
    """The token Airflow's login hands out for the server's user (``POST /auth/token``)."""
    status, body = fetch(f"{server['url']}/auth/token", method="POST",
                         data={"username": server["username"], "password": server["password"]})
    assert status == 201, body
    return json.loads(body)["access_token"]


def test_the_api_server_refuses_an_anonymous_request_to_the_view(with_login, served):
    status, body = fetch(f"{with_login['url']}/binlake/")
    assert (status, json.loads(body)) == (401, {"detail": "Not authenticated"})
    assert served["run_id"] not in body


@pytest.mark.parametrize("sent_as", ["cookie", "bearer"])
def test_after_login_the_api_server_serves_the_view(with_login, served, sent_as):
    token = log_in(with_login)
    credentials = {"Cookie": f"_token={token}"} if sent_as == "cookie" else {"Authorization": f"Bearer {token}"}
    status, body = fetch(f"{with_login['url']}/binlake/", credentials)
    assert status == 200 and served["run_id"] in body and str(served["warehouse"]) in body


def test_the_api_server_refuses_a_forged_cookie(with_login, served):
    status, body = fetch(f"{with_login['url']}/binlake/", {"Cookie": "_token=forged.by.someone"})
    assert (status, json.loads(body)) == (403, {"detail": "Invalid JWT token"})
    assert served["run_id"] not in body


def test_a_browser_that_has_not_logged_in_is_shown_no_page(with_login, served, chromium, tmp_path):
    dom = run_chromium(chromium, tmp_path, "--dump-dom", f"{with_login['url']}/binlake/").stdout
    assert "Not authenticated" in dom and served["run_id"] not in dom


def run_chromium(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    """Headless Chromium with a profile of its own (no sandbox: tests may run as root)."""
    done = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={profile / 'chromium-profile'}", *args],
        capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def set_variable(home: Path, key: str, value: str) -> None:
    """``airflow variables set`` against the metadata database of the Airflow in ``home``."""
    env = dict(os.environ, AIRFLOW_HOME=str(home),
               AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{home}/airflow.db")
    done = subprocess.run([str(AIRFLOW), "variables", "set", key, value], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def png_facts(path: Path) -> tuple[int, int, int]:
    """Width, height and the number of distinct byte values in the image data of a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    chunks, at = [], 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"IDAT":
            chunks.append(data[at + 8:at + 8 + length])
        at += 12 + length
    return width, height, len(set(zlib.decompress(b"".join(chunks))))


