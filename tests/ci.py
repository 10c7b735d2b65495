"""Whether the tests run in CI (``CI`` set to anything but empty, 0, false or no): there, a test
that needs something missing fails instead of skipping."""

from __future__ import annotations

import os


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
