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

The warehouse is a local folder: a ``file://`` URI or a plain path.
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
    """The warehouse root folder (see the module text for where it comes from)."""
    uri = _setting(WAREHOUSE_VARIABLE, WAREHOUSE_ENV) or (airflow_home() / "binlake" / "warehouse").as_uri()
    return local_path(uri)


def staging_path() -> Path:
    """The folder binlog objects are downloaded to before a run decodes them."""
    return local_path(_setting(STAGING_VARIABLE, STAGING_ENV) or str(airflow_home() / "binlake" / "staging"))


def airflow_home() -> Path:
    """``$AIRFLOW_HOME``, else Airflow's own default ``~/airflow``."""
    return Path(os.environ.get("AIRFLOW_HOME") or "~/airflow").expanduser()


def local_path(uri: str) -> Path:
    """The folder a ``file://`` URI or a plain path names; any other scheme is an error."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise ValueError(f"{uri!r}: a file:// URI must name a local path (file:///path)")
        return Path(unquote(parsed.path))
    if parsed.scheme:
        raise ValueError(f"{uri!r}: the warehouse must be a local folder, a file:// URI or a plain path "
                         f"({parsed.scheme}:// is not supported)")
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
