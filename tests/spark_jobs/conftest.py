"""Spark for the ``spark_jobs`` tests: one local[2] session for the whole test session."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession (``spark_jobs.session`` defaults), stopped at session end."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from spark_jobs.session import build_session

    session = build_session("local[2]", app_name="binlake-tests", log_level="ERROR")
    try:
        yield session
    finally:
        session.stop()
