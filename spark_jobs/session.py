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
``binlog_codec``, ``spark_jobs`` and ``warehouse`` to the executors as a zip
(:func:`code_archive`); their Python needs pyarrow and zstandard installed.

The driver JVM's heap (``spark.driver.memory``, which in local mode is every
task's JVM memory too) is set from the machine, never left at Spark's 1 GB, which
a large run outgrows (:func:`driver_memory`): ``$SPARK_DRIVER_MEMORY`` when set
(as ``spark-submit`` reads it), else a quarter of the machine's memory, between 1
and 16 GiB; ``conf`` (the ingest's ``--driver-memory``) overrides both.

The driver's JVM logs through Python's logging (:func:`start_jvm`): it starts
with binlake's log4j2 configuration (:data:`LOG4J2_PROPERTIES`: warnings and
errors only, without the start-up notices of Spark's default profile), and a
thread reads what it prints and logs each line on the ``spark_jobs.jvm`` logger
at the level log4j gave it. Under Airflow, whose task supervisor logs anything a
task prints on standard error as an error, Spark's start-up is then no error
and a real Spark warning is still a warning.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import IO, Mapping

from pyspark.sql import SparkSession

from . import class_archive

log = logging.getLogger(__name__)
# py4j logs each connection it closes at INFO: a line per Spark job, nothing to act on.
logging.getLogger("py4j").setLevel(logging.WARNING)

DEFAULT_MASTER = "local[*]"
PACKAGES = ("binlog_codec", "spark_jobs", "warehouse")
DEFAULT_LOG_LEVEL = "WARN"

jvm_log = logging.getLogger("spark_jobs.jvm")

# The driver JVM's log4j2 configuration: Spark's default profile (log4j2-defaults.properties)
# without its start-up notices, warnings and up, one line a record without a date (Python's
# logging adds its own), and Hadoop's notice that it uses its Java code instead of a native
# library (nothing a user can act on) left out.
LOG4J2_PROPERTIES = """\
status = error
rootLogger.level = warn
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %p %c: %m%n%ex
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = warn
logger.jetty2.name = org.sparkproject.jetty.util.component.AbstractLifeCycle
logger.jetty2.level = error
logger.nativecode.name = org.apache.hadoop.util.NativeCodeLoader
logger.nativecode.level = error
logger.parquet.name = org.apache.parquet.CorruptStatistics
logger.parquet.level = error
"""
LOG4J2_OPTION = "-Dlog4j2.configurationFile"
# A log4j record as LOG4J2_PROPERTIES lays it out: "WARN org.apache.spark.SomeClass: message".
JVM_RECORD = re.compile(r"^(TRACE|DEBUG|INFO|WARN|ERROR|FATAL) \S+: ")
JVM_LEVELS = {"TRACE": logging.DEBUG, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
              "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
# What the java launcher itself prints, before log4j: Spark's launcher always adds the incubating
# vector module, and the JVM says so on every start.
JVM_NOTICES = ("WARNING: Using incubator modules",)

COMMON_CONF = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # Python workers do no linear algebra: numpy's BLAS threads would only take turns with the tasks.
    "spark.executorEnv.OPENBLAS_NUM_THREADS": "1",
}


# Settings no configuration changes: binlake's tasks write their files under names of their own
# (a retried task writes its file again), so a speculative second attempt running beside the
# first would write the same file at the same time.
FIXED_CONF = {"spark.speculation": "false"}

DRIVER_MEMORY = "spark.driver.memory"
GIB = 2**30


def machine_memory() -> int:
    """The machine's physical memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def driver_memory(total: int | None = None) -> str:
    """The driver JVM's heap: ``$SPARK_DRIVER_MEMORY``, else a quarter of ``total`` (the
    machine's memory), in whole GiB between 1 and 16 (``"6g"`` on a 24 GiB machine)."""
    given = os.environ.get("SPARK_DRIVER_MEMORY")
    if given:
        return given
    quarter = (machine_memory() if total is None else total) // 4 // GIB
    return f"{min(16, max(1, quarter))}g"


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
    """A zip of the packages of :data:`PACKAGES` as this driver has them, shipped to a
    cluster's executors (what ``spark-submit --py-files`` does), so they run the same code."""
    root = Path(__file__).resolve().parent.parent
    archive = Path(tempfile.mkdtemp(prefix="binlake-code-")) / "binlake.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        for package in PACKAGES:
            for source in sorted((root / package).rglob("*.py")):
                bundle.write(source, source.relative_to(root))
    return archive


def log4j2_config() -> Path:
    """The file of :data:`LOG4J2_PROPERTIES`, written once into the temporary folder under a name
    of its content (so a changed configuration never meets an old file)."""
    digest = hashlib.sha256(LOG4J2_PROPERTIES.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"binlake-log4j2-{digest}.properties"
    if not path.is_file():
        scratch = path.with_name(f"{path.name}.{os.getpid()}")
        scratch.write_text(LOG4J2_PROPERTIES, encoding="utf-8")
        os.replace(scratch, path)
    return path


def with_log_config(options: str | None) -> str:
    """The driver's Java options with binlake's log4j2 configuration, unless they name one."""
    if options and LOG4J2_OPTION in options:
        return options
    return " ".join(filter(None, [options, f"{LOG4J2_OPTION}={log4j2_config()}"]))


def jvm_level(line: str, previous: int) -> int:
    """The logging level of one line the JVM printed: a log4j record's own, the launcher's known
    notices DEBUG, and any other line (a stack trace's) that of the record before it."""
    record = JVM_RECORD.match(line)
    if record:
        return JVM_LEVELS[record[1]]
    if line.startswith(JVM_NOTICES):
        return logging.DEBUG
    return previous


def log_jvm_output(stream: IO[bytes]) -> None:
    """Logs each line of ``stream`` (the JVM's standard error) on ``spark_jobs.jvm`` at its
    level (:func:`jvm_level`) until the JVM closes it."""
    level = logging.INFO
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", errors="replace").rstrip()
        if line:
            level = jvm_level(line, level)
            jvm_log.log(level, "%s", line)


def start_jvm(settings: Mapping[str, str]) -> None:
    """Starts the driver JVM (PySpark's py4j gateway, as ``SparkContext`` would) with ``settings``,
    its standard error read by a thread of :func:`log_jvm_output`; nothing when one is running
    (a process has one driver JVM, reused by each of its sessions)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    threading.Thread(target=log_jvm_output, args=(gateway.proc.stderr,), name="spark-jvm-stderr",
                     daemon=True).start()
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)


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
    settings = {**COMMON_CONF, DRIVER_MEMORY: driver_memory()}
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
    settings.update(FIXED_CONF)
    settings[class_archive.JAVA_OPTIONS] = with_log_config(
        class_archive.with_archive(settings.get(class_archive.JAVA_OPTIONS)))
    start_jvm({**settings, "spark.master": master, "spark.app.name": app_name})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    if not master.startswith("local"):
        spark.sparkContext.addPyFile(str(code_archive()))
    log.info("Spark %s session on %s (%d default partitions)", spark.version, master, spark.sparkContext.defaultParallelism)
    return spark


# -- when Spark itself fails ------------------------------------------------------------

OUT_OF_MEMORY = "java.lang.OutOfMemoryError"
# What py4j and PySpark say when the driver JVM is gone (killed, or crashed on its own).
JVM_GONE = ("Answer from Java side is empty", "Error while receiving", "Error while sending",
            "Connection refused", "SparkContext was shut down", "Cannot call methods on a stopped SparkContext")


class SparkFailed(RuntimeError):
    """Spark itself failed (its driver JVM ran out of memory, or died): not the data's fault."""


# py4j's errors when the JVM does not answer (a Java exception is a Py4JJavaError, not one of these).
JVM_GONE_ERRORS = ("Py4JError", "Py4JNetworkError")


def spark_failure(error: BaseException, memory: str | None = None) -> str | None:
    """What ``error`` says about Spark itself, as one line for the user: the driver JVM ran out
    of memory, or died; None when the error is not Spark's own. ``memory``: the driver's heap
    setting, named with the way to change it."""
    texts = [f"{type(each).__name__}: {each}" for each in _chain(error)]
    setting = (f"the driver JVM's heap is {memory or driver_memory()}: give it more with --driver-memory "
               "(or SPARK_DRIVER_MEMORY, or driver_memory in the extra of the Airflow connection binlake_spark)")
    if any(OUT_OF_MEMORY in text for text in texts):
        return f"the Spark driver JVM ran out of memory ({OUT_OF_MEMORY}); {setting}"
    if any(isinstance(each, ConnectionError) or type(each).__name__ in JVM_GONE_ERRORS for each in _chain(error)) \
            or any(gone in text for text in texts for gone in JVM_GONE):
        return (f"the Spark driver JVM died ({_first_line(texts[0])}); look for its exit in the log above, or the "
                f"kernel's out-of-memory killer in the system log; {setting}")
    return None


def _chain(error: BaseException) -> list[BaseException]:
    """``error`` and the errors it was raised from or during, outermost first."""
    chain, seen = [], set()
    while error is not None and id(error) not in seen:
        chain.append(error)
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return chain


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def stop(spark: SparkSession) -> None:
    """Stop the session; a driver JVM already gone is not an error here (it was reported), nor is
    what py4j says afterwards while it lets go of the JVM's objects (:func:`_quiet_after_jvm`)."""
    try:
        spark.stop()
    except Exception as exc:  # noqa: BLE001 -- the JVM died: there is nothing left to stop
        if spark_failure(exc) is None:
            raise
        log.debug("the Spark session could not be stopped: %s", exc)
        _quiet_after_jvm()


def _quiet_after_jvm() -> None:
    """Once the driver JVM is gone, py4j still tries to reach it: its finalizers release the JVM's
    objects as Python lets go of them, up to the interpreter's exit, and each attempt ends in a
    traceback of a network error (logged by py4j, or printed as an exception Python ignored),
    after the run's own last word. Those go to the debug log; any other stays as it was."""
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    previous = sys.unraisablehook

    def hook(unraisable) -> None:
        if unraisable.exc_value is not None and spark_failure(unraisable.exc_value) is not None:
            log.debug("after the JVM died: %s", unraisable.exc_value)
        else:
            previous(unraisable)

    sys.unraisablehook = hook
