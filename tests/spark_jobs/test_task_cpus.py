"""A Spark task sizes Arrow's thread pool to the cores Spark gave it (spark.task.cpus)."""

from __future__ import annotations


def test_a_task_uses_as_many_arrow_threads_as_it_has_cores(spark):
    def cpus_inside_a_task(_) -> int:  # a closure: shipped by value, not imported from this test module
        import pyarrow as pa

        from spark_jobs.task_cpus import fit_to_task

        pa.set_cpu_count(8)  # as a worker might have it from an earlier task
        fit_to_task()
        return pa.cpu_count()

    assert spark.sparkContext.parallelize(range(2), 2).map(cpus_inside_a_task).collect() == [1, 1]


def test_outside_a_task_arrow_keeps_its_pool():
    import pyarrow as pa

    from spark_jobs.task_cpus import fit_to_task

    before = pa.cpu_count()
    fit_to_task()
    assert pa.cpu_count() == before
