"""Python functions run as Spark tasks: a task per item, the results back in order.

Every job binlake runs on Spark is a Python function over a short list of items
(the splits of a decode, the files and buckets of a table), each task writing
its own files and sending back a small result; no row crosses the JVM. They run
as RDD jobs rather than through a DataFrame (``mapInArrow``), whose SQL plan and
first start of Python workers cost seconds: on a ``local[2]`` master, the first
task of a DataFrame job started 3.7 s after the job was submitted, that of an
RDD job 1.6 s after, and a 1 GB decode took 7.0 s instead of 10.1 s.

Each task first sizes Arrow's thread pool to its cores (:func:`fit_to_task`).
Tasks read and write the warehouse's storage with this process's S3 settings
(:func:`warehouse.storage.share_with`).

Spark spends about 50 ms between one Python task and the next in the same slot
(measured on a ``local`` master with tasks that do nothing). For many short
items, :func:`run_in_groups` deals them into a few tasks per slot instead.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from warehouse.storage import share_with

from .task_cpus import fit_to_task

TASKS_PER_SLOT = 4  # run_in_groups: tasks per Spark slot at most


def _in_task(function: Callable[[Any], Any], item: Any) -> Any:
    fit_to_task()
    return function(item)


def run(spark, function: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """``function`` over ``items``, a Spark task each; their results in the order of ``items``."""
    if not items:
        return []
    items = list(items)
    share_with(spark)
    return spark.sparkContext.parallelize(items, len(items)).map(functools.partial(_in_task, function)).collect()


def _each(function: Callable[[Any], Any], group: Sequence[Any]) -> list[Any]:
    return [function(item) for item in group]


def run_in_groups(spark, function: Callable[[Any], Any], items: Sequence[Any], per_slot: int = TASKS_PER_SLOT) -> list[Any]:
    """``function`` over ``items`` as :func:`run` does, in at most ``per_slot`` tasks per Spark slot:
    the items are dealt round robin, so that each task gets about as many, and a task runs its
    items one after the other; the results in the order of ``items``."""
    items = list(items)
    count = min(len(items), per_slot * max(1, spark.sparkContext.defaultParallelism))
    if count == len(items):
        return run(spark, function, items)
    results: list[Any] = [None] * len(items)
    for number, done in enumerate(run(spark, functools.partial(_each, function), [items[g::count] for g in range(count)])):
        results[number::count] = done
    return results
