"""binlog_codec: read MySQL and MariaDB binary log files offline, exactly.

``reader`` frames a file into events, ``events`` turns each event body into a
typed record, ``rows`` and ``values`` decode row images, ``cli`` is the
``binlog-codec`` command line.

The package is Python. Its hot modules (:data:`COMPILED_MODULES`) may also be
installed compiled: the package's build compiles those same ``.py`` files
with Cython when a C compiler is there (``setup.py``). Both give the same
output. The compiled modules are used when every one of them is there and
none is older than its source; otherwise, or with the environment variable
``BINLAKE_PURE_PYTHON=1``, the ``.py`` files are imported instead.
:func:`compiled` says which path is active.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import logging
import os
import sys
from pathlib import Path

__version__ = "0.1.0"

# The modules the build compiles (setup.py reads this tuple).
COMPILED_MODULES = ("wire", "values", "rows", "reader", "arrow")
# Modules written in Cython alone (``.pyx``), built with those above. They make the same
# output as the Python path they stand in for, and are used only when compiled() is true.
NATIVE_MODULES = ("row_text", "row_arrow", "frames")
# The C declarations the native modules share (a .pxd without a module of its own).
NATIVE_SHARED = "image_bytes.pxd"

PURE_PYTHON_VARIABLE = "BINLAKE_PURE_PYTHON"

log = logging.getLogger(__name__)
_HERE = Path(__file__).resolve().parent


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Imports the compiled modules of this package from their ``.py`` source files."""

    def find_spec(self, name, path=None, target=None):
        package, _, leaf = name.rpartition(".")
        if package != __name__ or leaf not in COMPILED_MODULES:
            return None
        return importlib.util.spec_from_file_location(name, _HERE / f"{leaf}.py")


def _extension(name: str) -> Path | None:
    """The compiled file of module ``name``, when there is one."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = _HERE / f"{name}{suffix}"
        if candidate.exists():
            return candidate
    return None


def _why_not_compiled() -> str | None:
    """Why the compiled modules cannot be used (None when they can)."""
    if os.environ.get(PURE_PYTHON_VARIABLE, "").strip().lower() not in ("", "0", "false", "no"):
        return f"{PURE_PYTHON_VARIABLE} is set"
    for name in COMPILED_MODULES + NATIVE_MODULES:
        built = _extension(name)
        if built is None:
            return f"{name} has no compiled module"
        sources = [_HERE / f"{name}.py", _HERE / f"{name}.pxd", _HERE / f"{name}.pyx"]
        if name in NATIVE_MODULES:
            sources.append(_HERE / NATIVE_SHARED)
        if any(source.exists() and source.stat().st_mtime > built.stat().st_mtime for source in sources):
            return f"the compiled {name} is older than its source (rebuild with: make setup)"
    return None


_WHY_PURE = _why_not_compiled()
if _WHY_PURE is not None and any(_extension(name) for name in COMPILED_MODULES):
    # Compiled files are there but not to be used: have the sources win. Without any (a
    # checkout without a build, or the package in a zip shipped to Spark executors) the
    # ordinary import finds the sources.
    sys.meta_path.insert(0, _SourceFirst())


def compiled() -> bool:
    """Whether the compiled build of :data:`COMPILED_MODULES` is the one in use."""
    return _WHY_PURE is None


def build_description() -> str:
    """Which build is in use, and why, in a few words: for ``--version`` and logs."""
    return "compiled" if _WHY_PURE is None else f"pure Python: {_WHY_PURE}"
