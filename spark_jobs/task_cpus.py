"""Arrow's thread pool sized to the cores Spark gave the task running it.

pyarrow reads and writes Parquet, sorts and takes with a thread pool as large as
the machine. Inside a Spark task that oversubscribes the machine: Spark already
runs one task per core (``spark.task.cpus`` each), and every task's pool would
add threads for every core again. A task therefore calls :func:`fit_to_task`
first, so that its Arrow work uses the cores Spark counted for it, and the
scheduler's count of busy cores is the truth.
"""

from __future__ import annotations

import pyarrow as pa


def fit_to_task() -> None:
    """Size Arrow's CPU thread pool to the current Spark task's cores (outside a task: unchanged)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is not None:
        pa.set_cpu_count(max(1, context.cpus()))
