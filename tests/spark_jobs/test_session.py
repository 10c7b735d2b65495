"""spark_jobs.session: the driver JVM's memory comes from the machine, never Spark's 1 GB default;
a JVM that runs out of memory or dies is reported as what it is."""

from __future__ import annotations

import shutil
import subprocess
import sys

import psutil
import pytest

from mariadb import REPO_ROOT
from spark_jobs.ingest import SPARK_FAILED
from spark_jobs.session import DRIVER_MEMORY, GIB, driver_memory, spark_failure
from warehouse import publish

SAMPLES = sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*"))


@pytest.mark.parametrize(("total", "heap"), [(24 * GIB, "6g"), (2 * GIB, "1g"), (7 * GIB, "1g"), (256 * GIB, "16g")])
def test_the_driver_gets_a_quarter_of_the_machine_between_1_and_16_gib(monkeypatch, total, heap):
    monkeypatch.delenv("SPARK_DRIVER_MEMORY", raising=False)
    assert driver_memory(total) == heap


def test_spark_driver_memory_in_the_environment_wins(monkeypatch):
    monkeypatch.setenv("SPARK_DRIVER_MEMORY", "3g")
    assert driver_memory(64 * GIB) == "3g"


def test_a_session_starts_its_driver_with_that_memory(spark):
    assert spark.sparkContext.getConf().get(DRIVER_MEMORY) == driver_memory()
    heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    assert heap > 0.8 * int(driver_memory()[:-1]) * GIB  # the JVM took it: -Xmx, not only a setting


# -- when Spark itself fails --------------------------------------------------------


def raised_from(outer: Exception, inner: Exception) -> Exception:
    try:
        try:
            raise inner
        except Exception as cause:
            raise outer from cause
    except Exception as error:
        return error


def test_an_out_of_memory_error_is_named_with_the_setting_to_change():
    error = raised_from(RuntimeError("An error occurred while calling o42.collect"),
                        RuntimeError("Job aborted: java.lang.OutOfMemoryError: Java heap space"))
    line = spark_failure(error, "2g")
    assert line.startswith("the Spark driver JVM ran out of memory (java.lang.OutOfMemoryError)")
    assert "heap is 2g" in line and "--driver-memory" in line and "SPARK_DRIVER_MEMORY" in line


def test_a_dead_jvm_is_named_and_other_errors_are_not_spark_s():
    line = spark_failure(raised_from(RuntimeError("type check could not run"), ConnectionRefusedError(111, "refused")))
    assert line.startswith("the Spark driver JVM died (RuntimeError: type check could not run)")
    assert "--driver-memory" in line
    assert spark_failure(ValueError("a value that is wrong")) is None
    assert spark_failure(raised_from(ValueError("outer"), KeyError("inner"))) is None


@pytest.mark.integration
def test_an_ingest_whose_jvm_dies_says_so_exits_5_and_publishes_nothing(tmp_path):
    """The driver JVM killed while the run decodes: exit status 5 and one line saying the JVM died,
    not a quality failure nor a traceback as the last word; no checkpoint, no run published."""
    source, warehouse = tmp_path / "source", tmp_path / "warehouse"
    source.mkdir()
    for sample in SAMPLES:
        shutil.copyfile(sample, source / sample.name)
    command = subprocess.Popen(
        [sys.executable, "-m", "spark_jobs.ingest", "--source", str(source), "--warehouse", str(warehouse),
         "--master", "local[1]"], cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = []
    for line in command.stderr:
        started.append(line)
        if "session on" in line:  # the JVM is up and the run begins
            [jvm] = [child for child in psutil.Process(command.pid).children(recursive=True) if child.name() == "java"]
            jvm.kill()
            break
    rest = command.stderr.read()
    assert command.wait(timeout=300) == SPARK_FAILED, "".join(started) + rest
    assert rest.splitlines()[-1].startswith("Spark failed, nothing published: the Spark driver JVM died")
    assert "QualityFailed" not in rest and "quality" not in rest.splitlines()[-1]
    assert publish.read_checkpoint(warehouse) == {} and not (warehouse / "current").exists()


def test_once_the_jvm_is_gone_what_py4j_says_letting_go_of_it_is_not_the_last_word(monkeypatch, capsys):
    """py4j's finalizers still try to reach a dead JVM up to the interpreter's exit: their network
    errors go to the debug log, not after the run's verdict; any other ignored exception is printed."""
    import logging

    from py4j.protocol import Py4JNetworkError

    from spark_jobs import session

    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)
    monkeypatch.setattr(logging.getLogger("py4j"), "level", logging.getLogger("py4j").level)

    class Finalized:
        def __init__(self, error: Exception) -> None:
            self.error = error

        def __del__(self) -> None:
            raise self.error

    class Stopping:
        def stop(self) -> None:
            raise Py4JNetworkError("Answer from Java side is empty")

    session.stop(Stopping())
    Finalized(Py4JNetworkError("Answer from Java side is empty"))
    assert "Answer from Java side" not in capsys.readouterr().err
    assert logging.getLogger("py4j").level == logging.CRITICAL
    Finalized(ValueError("a finalizer's own bug"))
    assert "a finalizer's own bug" in capsys.readouterr().err


def test_no_configuration_turns_speculative_tasks_on(spark):
    """Tasks write their files under names of their own: a second, speculative attempt of a task
    would write the same file at once. A session has speculation off, after any configuration given."""
    from spark_jobs.session import FIXED_CONF

    assert FIXED_CONF == {"spark.speculation": "false"}
    assert spark.sparkContext.getConf().get("spark.speculation") == "false"
