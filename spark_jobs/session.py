"""The SparkSession binlake's jobs run in.

:func:`build_session` takes the master from its argument, else from the
``SPARK_MASTER`` environment variable, else ``local[*]``. Every session moves
data between Python and the JVM as Arrow
(``spark.sql.execution.arrow.pyspark.enabled``, without a silent fallback to
pickled rows) and works in UTC. A local master also gets what a laptop or a
test wants: no web UI, few shuffle partitions, the loopback address, Python
workers started with this interpreter (so they import ``binlog_codec`` from the
same environment) and quiet JVM logs. On a cluster, executors need
``binlog_codec`` and ``spark_jobs`` importable themselves (installed, or
shipped with ``spark-submit --py-files``).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Mapping

from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

DEFAULT_MASTER = "local[*]"
DEFAULT_LOG_LEVEL = "WARN"

COMMON_CONF = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}


def local_conf() -> dict[str, str]:
    """The settings of a local master."""
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.driver.host": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
        "spark.driver.bindAddress": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
    }


def master_of(master: str | None = None) -> str:
    """``master``, else ``$SPARK_MASTER``, else ``local[*]``."""
    return master or os.environ.get("SPARK_MASTER") or DEFAULT_MASTER


def build_session(
    master: str | None = None,
    app_name: str = "binlake",
    conf: Mapping[str, str] | None = None,
    log_level: str = DEFAULT_LOG_LEVEL,
) -> SparkSession:
    """A SparkSession (an existing one is reused, as ``getOrCreate`` does); ``conf`` overrides the defaults."""
    master = master_of(master)
    settings = dict(COMMON_CONF)
    if master.startswith("local"):
        settings.update(local_conf())
        # PySpark starts its workers with $PYSPARK_PYTHON, else whatever "python3" is on the PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings.update(conf or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    log.info("Spark %s session on %s (%d default partitions)", spark.version, master, spark.sparkContext.defaultParallelism)
    return spark
