"""Build hook: compile binlog_codec's hot modules into extension modules, when possible.

The modules listed in ``binlog_codec.COMPILED_MODULES`` are plain Python. When
Cython and a working C compiler are there, they are also compiled (Cython's
pure-Python mode: the ``.py`` file is the source, an optional ``.pxd`` file
beside it adds C types) and the extension modules are installed next to
them; ``pip install -e .`` puts them in place in the source tree. The
modules of ``binlog_codec.NATIVE_MODULES`` are Cython (``.pyx``) alone and
are built with them. Without Cython or without a compiler nothing is
compiled, one log line says why, and the package runs from its ``.py``
files, with the same output.

Everything else about the package is in ``pyproject.toml``.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

log = logging.getLogger("binlake.setup")

HERE = Path(__file__).resolve().parent
PACKAGE = "binlog_codec"

# Cython writes its C files here, not beside the sources.
CYTHON_BUILD_DIR = "build/cython"

# Python semantics everywhere: annotations are documentation, not C types (a
# ``bytes`` annotation must not refuse a memoryview); C types come only from the
# .pxd files. Integer division and overflow stay Python's.
DIRECTIVES = {
    "language_level": 3,
    "annotation_typing": False,
    "binding": True,
    "embedsignature": True,
    "always_allow_keywords": True,
}


def module_names(tuple_name: str) -> list[str]:
    """A tuple of module names in ``binlog_codec/__init__.py`` (``COMPILED_MODULES``,
    ``NATIVE_MODULES``), read without importing the package."""
    text = (HERE / PACKAGE / "__init__.py").read_text(encoding="utf-8")
    match = re.search(rf"^{tuple_name} = \(([^)]*)\)", text, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{PACKAGE}/__init__.py has no {tuple_name} tuple")
    return re.findall(r'"(\w+)"', match.group(1))


def extensions() -> list:
    """The extension modules to build; none when Cython is not installed."""
    try:
        from Cython.Build import cythonize
    except ImportError:
        log.warning("binlake: Cython is not installed; %s is installed as pure Python", PACKAGE)
        return []
    sources = [f"{PACKAGE}/{name}.py" for name in module_names("COMPILED_MODULES")]
    sources += [f"{PACKAGE}/{name}.pyx" for name in module_names("NATIVE_MODULES")]
    return cythonize(sources, build_dir=CYTHON_BUILD_DIR, compiler_directives=DIRECTIVES, quiet=True)


class OptionalBuildExt(build_ext):
    """``build_ext`` that falls back to building nothing when the C compiler is missing or fails."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler, no Python headers, a failing compiler
            self._fall_back(exc)

    def _fall_back(self, exc: Exception) -> None:
        self._fell_back = True
        self.extensions = []
        log.warning("binlake: no compiled build of %s (%s); the pure-Python modules are used", PACKAGE, exc)

    def get_outputs(self) -> list[str]:
        return [] if getattr(self, "_fell_back", False) else super().get_outputs()


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
