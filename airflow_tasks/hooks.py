"""The Airflow side of object storage: a store built from an Airflow connection.

An ``s3://`` store takes its endpoint and keys from the Airflow connection
``binlake_s3`` (or the one named), type ``aws``:

* login: the access key id; password: the secret access key;
* extra: ``{"endpoint_url": "http://...", "region_name": "..."}``, both optional
  (no ``endpoint_url``: AWS itself).

Defined, for example, through the environment:

    AIRFLOW_CONN_BINLAKE_S3='{"conn_type": "aws", "login": "AKIA...", "password": "...",
                              "extra": {"endpoint_url": "http://127.0.0.1:5000", "region_name": "us-east-1"}}'

Without that connection, boto3 finds credentials the usual way (environment,
shared config files, instance role) and the endpoint in ``AWS_ENDPOINT_URL``.
``file://`` stores and plain paths need no connection.
"""

from __future__ import annotations

import logging
import os
from urllib.parse import urlparse

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from stage.object_store import ObjectStore, open_store

log = logging.getLogger(__name__)

DEFAULT_CONN_ID = "binlake_s3"
SPARK_CONN_ID = "binlake_spark"
# The Spark connection's extra fields and the Spark settings they give.
SPARK_EXTRA = {"driver_memory": "spark.driver.memory", "executor_memory": "spark.executor.memory"}


def store_for(uri: str, conn_id: str = DEFAULT_CONN_ID) -> ObjectStore:
    """The object store behind ``uri``, with the connection ``conn_id`` for ``s3://`` URIs."""
    if urlparse(uri).scheme != "s3":
        return open_store(uri)
    return open_store(uri, **_s3_settings(conn_id))


def _s3_settings(conn_id: str) -> dict:
    """``open_store`` arguments from the Airflow connection; none when it is not defined."""
    try:
        connection = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        log.info("no Airflow connection %s: boto3's default credentials and AWS_ENDPOINT_URL", conn_id)
        return {}
    extra = connection.extra_dejson
    log.info("S3 settings from the Airflow connection %s (endpoint %s)", conn_id, extra.get("endpoint_url") or "AWS")
    return {
        "endpoint_url": extra.get("endpoint_url") or None,
        "access_key": connection.login or None,
        "secret_key": connection.password or None,
        "region": extra.get("region_name") or None,
    }


S3_ENVIRONMENT = {"endpoint_url": "AWS_ENDPOINT_URL", "access_key": "AWS_ACCESS_KEY_ID",
                  "secret_key": "AWS_SECRET_ACCESS_KEY", "region": "AWS_REGION"}
"""The standard environment variables each setting of the connection is handed on in."""


def export_s3_settings(conn_id: str = DEFAULT_CONN_ID) -> list[str]:
    """The connection ``conn_id``'s S3 settings set in this process's environment (the standard
    ``AWS_*`` variables, :data:`S3_ENVIRONMENT`), for the warehouse's storage
    (:mod:`warehouse.storage`) and Spark's Python workers; returns the variables set (none
    without the connection: the environment's own settings stand)."""
    settings = {key: value for key, value in _s3_settings(conn_id).items() if value}
    os.environ.update({S3_ENVIRONMENT[key]: value for key, value in settings.items()})
    return sorted(S3_ENVIRONMENT[key] for key in settings)


def spark_settings(conn_id: str = SPARK_CONN_ID) -> dict[str, str]:
    """Spark settings from the Airflow connection ``conn_id``'s extra (``driver_memory``,
    ``executor_memory``, e.g. ``"8g"``); none when the connection is not defined (the session's
    defaults then come from the machine)."""
    try:
        connection = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return {}
    extra = connection.extra_dejson
    settings = {SPARK_EXTRA[name]: str(value) for name, value in extra.items() if name in SPARK_EXTRA and value}
    log.info("Spark settings from the Airflow connection %s: %s", conn_id, settings or "none")
    return settings
