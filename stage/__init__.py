"""Staging: the binlog objects a run needs, copied from object storage into a local folder and verified.

* :mod:`stage.object_store` — an S3 bucket prefix or a local folder behind one interface;
* :mod:`stage.staging` — the objects after the checkpoint, downloaded into the staging folder and
  checked against the store's checksum.

Spark then reads the staged files (:mod:`spark_jobs`). Nothing here imports Airflow; an ``s3://``
store built from an Airflow connection comes from :mod:`airflow_tasks.hooks`.
"""
