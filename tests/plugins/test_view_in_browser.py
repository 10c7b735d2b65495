"""The binlake view in a real Airflow, seen by a real browser.

One Airflow (``infra/airflow.sh start``: standalone, SQLite, this repository's
plugins) serves a warehouse made by a real ingest of the bundled samples; the
warehouse is chosen through the Airflow Variable ``binlake_warehouse_uri`` set
with the ``airflow`` command. Headless Chromium then loads the view: its DOM
must show the checkpoint position and the run id, and a screenshot of the
view inside the Airflow UI is kept as a test artefact (its path is printed).

Needs Debian's ``chromium`` (``make chromium``); without it the test is
skipped, or fails when ``CI`` is set.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from ci import in_ci
from spark_jobs.publish import read_checkpoint

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "infra" / "airflow.sh"
AIRFLOW = Path(sys.executable).parent / "airflow"
WINDOW = (1400, 900)


@pytest.fixture(scope="module")
def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        reason = "Chromium is not installed; run: make chromium (apt-get install chromium)"
        if in_ci():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return found


@pytest.fixture(scope="module")
def served(chromium, tmp_path_factory):
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
        run_id = re.search(r"^run (\w+):", out, re.MULTILINE)[1]  # "run <id>: 2 files, ..."
        set_variable(home, "binlake_warehouse_uri", warehouse.as_uri())
        yield {"url": details["url"], "warehouse": warehouse, "source": source, "run_id": run_id}
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
