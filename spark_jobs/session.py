"""The SparkSession binlake's jobs run in.

:func:`build_session` takes the master from its argument, else from the
``SPARK_MASTER`` environment variable, else ``local[*]``. Every session moves
data between Python and the JVM as Arrow
(``spark.sql.execution.arrow.pyspark.enabled``, without a silent fallback to
pickled rows) and works in UTC. A local master also gets what a laptop or a
test wants: no web UI, few shuffle partitions, the loopback address, Python
workers started with this interpreter (so they import ``binlog_codec`` from the
same environment) and quiet JVM logs. Where ``make`` built a class archive of
the driver's JVM (:mod:`spark_jobs.class_archive`), the session maps it, which
takes two seconds off its start. On a cluster, the session ships
``binlog_codec`` and ``spark_jobs`` to the executors as a zip
(:func:`code_archive`); their Python needs pyarrow and zstandard installed.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Mapping

from pyspark.sql import SparkSession

from . import class_archive

log = logging.getLogger(__name__)
# py4j logs each connection it closes at INFO: a line per Spark job, nothing to act on.
logging.getLogger("py4j").setLevel(logging.WARNING)

DEFAULT_MASTER = "local[*]"
PACKAGES = ("binlog_codec", "spark_jobs")
DEFAULT_LOG_LEVEL = "WARN"

COMMON_CONF = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # Python workers do no linear algebra: numpy's BLAS threads would only take turns with the tasks.
    "spark.executorEnv.OPENBLAS_NUM_THREADS": "1",
}


def local_conf() -> dict[str, str]:
    """The settings of a local master."""
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.driver.host": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
        "spark.driver.bindAddress": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
        "spark.pyspark.driver.python": sys.executable,
    }


def code_archive() -> Path:
    """A zip of ``binlog_codec`` and ``spark_jobs`` as this driver has them, shipped to a
    cluster's executors (what ``spark-submit --py-files`` does), so they run the same code."""
    root = Path(__file__).resolve().parent.parent
    archive = Path(tempfile.mkdtemp(prefix="binlake-code-")) / "binlake.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        for package in PACKAGES:
            for source in sorted((root / package).rglob("*.py")):
                bundle.write(source, source.relative_to(root))
    return archive


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
    # PySpark starts its workers with $PYSPARK_PYTHON, else whatever "python3" is on the PATH:
    # by default, executors run this interpreter (on a cluster: the same path on every machine).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings["spark.pyspark.python"] = os.environ["PYSPARK_PYTHON"]
    if master.startswith("local"):
        settings.update(local_conf())
        # Local mode talks to itself only: on the loopback interface, without the JVM's warning that
        # the host name resolves to it and another interface was picked.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings.update(conf or {})
    java_options = class_archive.with_archive(settings.get(class_archive.JAVA_OPTIONS))
    if java_options:
        settings[class_archive.JAVA_OPTIONS] = java_options
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    if not master.startswith("local"):
        spark.sparkContext.addPyFile(str(code_archive()))
    log.info("Spark %s session on %s (%d default partitions)", spark.version, master, spark.sparkContext.defaultParallelism)
    return spark
