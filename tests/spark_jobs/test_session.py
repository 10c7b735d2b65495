"""spark_jobs.session: the driver JVM's memory comes from the machine, never Spark's 1 GB default."""

from __future__ import annotations

import pytest

from spark_jobs.session import DRIVER_MEMORY, GIB, driver_memory


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
