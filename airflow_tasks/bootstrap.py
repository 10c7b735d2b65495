"""What each task of the ``backup_bootstrap`` DAG does, without Airflow.

The DAG (``dags/backup_bootstrap.py``) only wires these functions together:

1. :func:`stage_image` — the backup image, downloaded from its object store
   (``s3://bucket/prefix/name`` with the ``binlake_s3`` connection, or
   ``file:///folder/name``) into a staging folder of its own and verified
   against the store's checksum (:func:`stage.staging.stage_named`; a second
   attempt reuses what is already there);
2. :func:`run_bootstrap` — Spark reads the staged image into the warehouse
   and publishes it with the checkpoint of its validity point
   (:func:`spark_jobs.bootstrap.bootstrap`);
3. :func:`report` — one line per table and the new checkpoint.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from urllib.parse import urlparse

from airflow_tasks import settings
from airflow_tasks.ingest import checkpoint_of, open_source, spark_session
from stage.staging import stage_named

log = logging.getLogger(__name__)


def split_image_uri(image_uri: str) -> tuple[str, str]:
    """``(store URI, object name)`` of an image URI: ``s3://bucket/a/b.bak`` is ``s3://bucket/a``
    and ``b.bak``; ``file:///backups/b.bak`` is ``file:///backups`` and ``b.bak``."""
    parsed = urlparse(image_uri)
    folder, _, name = image_uri.rstrip("/").rpartition("/")
    if parsed.scheme not in ("s3", "file") or not name or not folder or folder.endswith(("://", ":/")):
        raise ValueError(f"image {image_uri!r}: expected s3://bucket/[prefix/]name or file:///folder/name")
    return folder, name


def staging_dir_of(image_uri: str) -> Path:
    """The staging folder of one image: under :func:`airflow_tasks.settings.staging_path`, named after a
    hash of its URI."""
    digest = hashlib.sha256(image_uri.encode()).hexdigest()[:12]
    return settings.staging_path().expanduser().resolve() / f"backup-image-{digest}"


def stage_image(image_uri: str) -> dict:
    """Downloads and verifies the image. Returns ``{"image_uri", "path", "bytes"}``."""
    store_uri, name = split_image_uri(image_uri)
    [staged] = stage_named(open_source(store_uri), staging_dir_of(image_uri), [name])
    log.info("%s: %d bytes staged as %s", image_uri, staged.size, staged.path)
    return {"image_uri": image_uri, "path": staged.path, "bytes": staged.size}


def run_bootstrap(image_path: str, warehouse: str | Path, source_uri: str, spark_master: str | None) -> dict:
    """Bootstraps ``warehouse`` from the staged image (refused when the source already has a
    checkpoint). Returns ``{"run_id", "rows", "validity_point", "checkpoint"}``."""
    from spark_jobs.bootstrap import bootstrap

    with spark_session(spark_master, "bootstrap") as spark:
        result = bootstrap(spark, image_path, str(warehouse), source_key=source_uri)
    return {
        "run_id": result.run_id,
        "rows": result.rows,
        "validity_point": result.validity_point,
        "checkpoint": result.checkpoint[source_uri],
    }


def report(image_uri: str, source_uri: str, warehouse: str | Path, done: dict) -> list[str]:
    """Logs what the bootstrap did, one line per fact, and returns the lines."""
    lines = [f"run {done['run_id']}: {image_uri} into {warehouse}"]
    lines += [f"  {table}: {rows} snapshot rows" for table, rows in sorted(done["rows"].items())]
    lines.append(f"checkpoint of {source_uri}: {checkpoint_of(warehouse, source_uri)}; the next ingest goes on there")
    for line in lines:
        log.info("%s", line)
    return lines
