"""``spark_jobs.imports``: slow imports started in a thread, once per process."""

from __future__ import annotations

import sys

from spark_jobs import imports


def test_modules_are_imported_in_order_in_one_thread_once_per_process():
    for name in ("json.tool", "colorsys"):
        sys.modules.pop(name, None)
    first = imports.in_background("json.tool", "colorsys")
    assert imports.in_background("json.tool", "colorsys") is first
    first.join(30)
    assert not first.is_alive() and first.name == "import json.tool, colorsys" and first.daemon
    assert {"json.tool", "colorsys"} <= set(sys.modules)
    assert imports.in_background("colorsys") is not first  # another list: a thread of its own
