"""Shared pytest fixtures.

``mariadb``       a private MariaDB server for the whole test session
                  (tests using it are marked ``@pytest.mark.integration``).
``mariadb_pair``  a fresh primary (server id 1) and GTID replica (server id 2)
                  for one test, for failover tests (also ``integration``).
``fixtures_dir``  the shared binlog fixtures, kept outside the repository in
                  ``../shared/fixtures/binlogs``.

With ``CI`` set, a server that cannot start is a test failure; on a developer
machine without MariaDB the integration tests are skipped
(install it with ``infra/mariadb.sh install``).
"""

from __future__ import annotations

import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ci import in_ci  # noqa: E402
from mariadb import MariaDBServer, ServerError, missing_tools  # noqa: E402




def require_mariadb() -> None:
    """Skip the test when MariaDB is not installed; under ``CI``, fail it."""
    missing = missing_tools()
    if missing:
        reason = f"MariaDB is not installed (missing: {', '.join(missing)}); run: infra/mariadb.sh install"
        if in_ci():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)


@pytest.fixture(scope="session")
def mariadb(tmp_path_factory):
    """A running private MariaDB server (ROW format, FULL row metadata,
    CRC32 checksums, binlogs under ``binlog_dir``), stopped at session end.

    Attributes: ``socket``, ``port``, ``datadir``, ``binlog_dir``; methods:
    ``sql(text)``, ``rows(text)``, ``flush_logs()``, ``binlog_files()``,
    ``restart()``.
    """
    require_mariadb()

    # A short directory name keeps the Unix socket path under its length limit.
    directory = tmp_path_factory.mktemp("mdb")
    server = MariaDBServer(directory)
    try:
        server.start()
    except (ServerError, OSError) as exc:
        pytest.fail(f"could not start a private MariaDB server: {exc}", pytrace=False)
    try:
        yield server
    finally:
        try:
            server.stop()
        except ServerError as exc:  # pragma: no cover - reported, not fatal
            print(f"warning: stopping the MariaDB server failed: {exc}", file=sys.stderr)


@pytest.fixture
def mariadb_pair(tmp_path_factory):
    """``(primary, replica)``: two fresh private MariaDB servers for one test, server ids 1
    and 2 on free ports, the replica replicating from the primary with GTID
    (``MASTER_USE_GTID=slave_pos``, ``log_slave_updates`` on, ``gtid_strict_mode`` on).
    Both use the binlog base name ``mariadb-bin``. Both are stopped at teardown, also after
    ``primary.kill()``. Function scope: a test may kill the primary and promote the replica.

    Skipped like ``mariadb`` when MariaDB is missing (a failure under ``CI``).
    """
    require_mariadb()

    # Short directory names keep the Unix socket paths under their length limit.
    primary = MariaDBServer(tmp_path_factory.mktemp("mdb1"), server_id=1)
    replica = MariaDBServer(tmp_path_factory.mktemp("mdb2"), server_id=2)
    try:
        try:
            # Both initialise and start at once: half the wait.
            with ThreadPoolExecutor(max_workers=2) as pool:
                futures = [pool.submit(server.start) for server in (primary, replica)]
            for future in futures:
                future.result()
            replica.replicate_from(primary)
        except (ServerError, OSError) as exc:
            pytest.fail(f"could not start a private MariaDB primary and replica: {exc}", pytrace=False)
        yield primary, replica
    finally:
        for server in (replica, primary):
            try:
                server.stop()
            except ServerError as exc:  # pragma: no cover - reported, not fatal
                print(f"warning: stopping a MariaDB server failed: {exc}", file=sys.stderr)


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """Directory of the shared binlog fixtures (never copied into the repo)."""
    return Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "binlogs"


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A running private S3-compatible server (moto, started by ``infra/s3_server.sh`` on a
    free loopback port), stopped at session end.

    Attributes: ``endpoint_url``; method ``client()``: a boto3 S3 client with the dummy
    credentials ``testing``/``testing`` in ``us-east-1``. Buckets are shared by the whole
    session, so each test creates its own.
    """
    from s3_server import S3Server, S3ServerError, moto_server_missing

    if moto_server_missing():
        reason = "moto's server is not installed (pip install 'moto[server]')"
        if in_ci():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    server = S3Server(tmp_path_factory.mktemp("s3"))
    try:
        server.start()
    except (S3ServerError, OSError) as exc:
        pytest.fail(f"could not start a private S3 server: {exc}", pytrace=False)
    try:
        yield server
    finally:
        try:
            server.stop()
        except S3ServerError as exc:  # pragma: no cover - reported, not fatal
            print(f"warning: stopping the S3 server failed: {exc}", file=sys.stderr)


@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's Chromium for the browser tests: skipped without it, a failure when ``CI`` is set."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        reason = "Chromium is not installed; run: make chromium (apt-get install chromium)"
        if in_ci():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return found


@pytest.fixture(scope="module")
def spark():
    """A local[2] SparkSession (``spark_jobs.session`` defaults) shared by the modules of the test
    session: the one running, or a new one when code under test has stopped it (an Airflow task
    stops its own session, which in the test's process is this one)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from spark_jobs.session import build_session

    return build_session("local[2]", app_name="binlake-tests", log_level="ERROR")


@pytest.fixture(scope="session", autouse=True)
def spark_stopped_at_the_end():
    """The SparkSession still running when the test session ends, stopped."""
    yield
    if "pyspark" in sys.modules:
        from pyspark.sql import SparkSession

        running = SparkSession.getActiveSession()
        if running is not None:
            running.stop()
