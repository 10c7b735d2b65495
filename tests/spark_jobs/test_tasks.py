"""``spark_jobs.tasks``: items as Spark tasks, one each or dealt into a few per slot."""

from __future__ import annotations

from collections import Counter

import pytest

from spark_jobs import tasks


def tagger():
    """A function pickled by value (this module is not importable in the Python workers): an
    item's square and the task that computed it."""
    def tagged(item: int) -> tuple[int, int]:
        from pyspark import TaskContext

        return item * item, TaskContext.get().partitionId()

    return tagged


def test_run_gives_a_task_per_item_and_the_results_in_order(spark):
    results = tasks.run(spark, tagger(), list(range(5)))
    assert [square for square, _ in results] == [n * n for n in range(5)]
    assert [task for _, task in results] == list(range(5))
    assert tasks.run(spark, tagger(), []) == []


@pytest.mark.parametrize("count", [1, 7, 8, 9, 25])
def test_run_in_groups_deals_items_into_a_few_tasks_per_slot_in_order(spark, count):
    """On two slots: at most 2 x per_slot tasks, about as many items each, every item once, the
    results in the order of the items."""
    results = tasks.run_in_groups(spark, tagger(), list(range(count)), per_slot=4)
    assert [square for square, _ in results] == [n * n for n in range(count)]
    per_task = Counter(task for _, task in results)
    assert len(per_task) == min(count, 8)
    assert max(per_task.values()) - min(per_task.values()) <= 1
