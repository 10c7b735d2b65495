"""Python's cyclic garbage collector paused for one bulk step of a Spark task.

A task that decodes a split or folds a bucket holds hundreds of thousands of
young Python objects (row values waiting in an Arrow builder, fold states) and
creates no reference cycles worth collecting on the way. The collector's full
passes scan every one of those objects again and again as the heap grows: on
the benchmark binlog they took more than half of the time of decoding into
Arrow batches. Reference counting still frees everything as usual; the
collector runs again when the step ends, so whatever cyclic garbage the step
left (bounded by the size of one split or bucket) is collected then.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic collector off for the block (left as it was found when the block ends)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
