"""Where binlake finds its things: the warehouse, the staging folder, the S3 connection.

Every part of binlake that runs under Airflow (DAGs, hooks, the UI view) asks
this module, so a deployment changes a location in one place. Each location
is looked up in this order:

1. the Airflow Variable (``binlake_warehouse_uri``, ``binlake_staging_dir``),
   which Airflow also reads from ``AIRFLOW_VAR_<NAME>`` environment variables;
2. a plain environment variable (``BINLAKE_WAREHOUSE_URI``, ``BINLAKE_STAGING_DIR``);
3. a folder under ``$AIRFLOW_HOME/binlake/``.

Reading a Variable never fails: without a reachable Airflow metadata database
or API (a plain Python process, a Spark executor, a test) the lookup goes on
with the environment and the default.

The warehouse is a local folder (a ``file://`` URI or a plain path) or an object-store
prefix ``s3://bucket/prefix`` (:mod:`warehouse.storage`). binlake names a warehouse by its
state folder (the folder itself for a local one); an ``s3://`` warehouse's is
``s3/<bucket>/<prefix>`` under ``BINLAKE_STATE_DIR``, else under
``$AIRFLOW_HOME/binlake/state``, and its tasks reach the object store with the
settings of the connection ``binlake_s3`` (:func:`airflow_tasks.hooks.export_s3_settings`).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

log = logging.getLogger(__name__)

S3_CONNECTION_ID = "binlake_s3"
"""The Airflow connection (type ``aws``) holding the object store's endpoint and keys."""

WAREHOUSE_VARIABLE, WAREHOUSE_ENV = "binlake_warehouse_uri", "BINLAKE_WAREHOUSE_URI"
STAGING_VARIABLE, STAGING_ENV = "binlake_staging_dir", "BINLAKE_STAGING_DIR"


def warehouse_path() -> Path:
    """The state folder of the configured warehouse (see the module text for where it comes from)."""
    uri = _setting(WAREHOUSE_VARIABLE, WAREHOUSE_ENV) or (airflow_home() / "binlake" / "warehouse").as_uri()
    return warehouse_root(uri)


def warehouse_root(uri: str) -> Path:
    """The state folder of the warehouse ``uri`` (an ``s3://`` URI, a ``file://`` URI, a path, or
    the state folder of an ``s3://`` warehouse); for an object-store warehouse, this process gets
    the S3 settings of the connection ``binlake_s3`` first."""
    from warehouse import storage

    if storage.is_object_store(uri):
        _export_s3_settings()
        base = os.environ.get(storage.STATE_ENV) or airflow_home() / "binlake" / "state"
        return storage.attach(uri, state=storage.state_folder(uri, base=base))
    root = local_path(uri).expanduser().resolve()
    if not storage.of(root).is_local:
        _export_s3_settings()
    return root


def _export_s3_settings() -> None:
    from airflow_tasks.hooks import export_s3_settings  # reads the Airflow connection: Airflow only when needed

    export_s3_settings(S3_CONNECTION_ID)


def staging_path() -> Path:
    """The folder binlog objects are downloaded to before a run decodes them."""
    return local_path(_setting(STAGING_VARIABLE, STAGING_ENV) or str(airflow_home() / "binlake" / "staging"))


def airflow_home() -> Path:
    """``$AIRFLOW_HOME``, else Airflow's own default ``~/airflow``."""
    return Path(os.environ.get("AIRFLOW_HOME") or "~/airflow").expanduser()


def local_path(uri: str) -> Path:
    """The folder a ``file://`` URI or a plain path names; any other scheme is an error (an
    ``s3://`` warehouse is taken by :func:`warehouse_root`)."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise ValueError(f"{uri!r}: a file:// URI must name a local path (file:///path)")
        return Path(unquote(parsed.path))
    if parsed.scheme:
        raise ValueError(f"{uri!r}: expected a local folder (a file:// URI or a plain path; a warehouse may be "
                         f"s3://bucket/prefix too): {parsed.scheme}:// is not supported")
    return Path(uri).expanduser()


def _setting(variable: str, env: str) -> str | None:
    """The Airflow Variable ``variable``, else the environment variable ``env``, else None."""
    return _airflow_variable(variable) or os.environ.get(env) or None


def _airflow_variable(key: str) -> str | None:
    """The Airflow Variable ``key``, or None when it is unset or Airflow cannot be asked."""
    try:
        from airflow.sdk import Variable

        return Variable.get(key, default=None)
    except Exception as exc:  # no Airflow, no metadata database, no API: use the fallbacks
        log.debug("Airflow Variable %s not readable (%s); using the environment or the default", key, exc)
        return None
