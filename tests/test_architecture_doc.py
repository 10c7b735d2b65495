"""docs/ARCHITECTURE.md against the tree: its module map names every module, and nothing that is not there.

A module is a ``.py``, ``.pyx`` or ``.pxd`` file under ``binlog_codec``, ``spark_jobs``,
``warehouse``, ``stage``, ``airflow_tasks``, ``plugins``, ``dags``, ``benchmarks`` or ``fuzz``
that git tracks (``__init__.py`` files included: they hold package-level concepts too). Each must
be named exactly once in the "Module map" section. Every repository path the document names
anywhere (a module, a test, a script or a README, with or without a leading ``../``) must exist.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ARCHITECTURE.md"
PACKAGES = ("binlog_codec", "spark_jobs", "warehouse", "stage", "airflow_tasks", "plugins", "dags", "benchmarks", "fuzz")
MODULE = re.compile(r"(?:\.\./)?\b((?:%s)/[\w/]*\w\.(?:py|pyx|pxd))\b" % "|".join(PACKAGES))
# Any path into the repository's own folders that names a file.
PATH = re.compile(r"(?:\.\./)?\b((?:%s|tests|infra|docs)/[\w/.-]*\w\.(?:py|pyx|pxd|sh|md))\b" % "|".join(PACKAGES))


def tracked_modules() -> set[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--", *(f"{package}/" for package in PACKAGES)],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.split()
    return {path for path in listed if path.endswith((".py", ".pyx", ".pxd"))}


def module_map() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("\n## Module map\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_every_module_is_in_the_module_map_once():
    section = module_map()
    named: dict[str, int] = {}
    for line in section.splitlines():
        if line.startswith("| ["):  # one table row per module: its first cell names it
            path = MODULE.search(line).group(1)
            named[path] = named.get(path, 0) + 1
    missing = sorted(tracked_modules() - named.keys())
    assert not missing, f"modules missing from the module map of {DOC.name}: {missing}"
    twice = sorted(path for path, count in named.items() if count > 1)
    assert not twice, f"modules listed more than once in the module map: {twice}"


def test_every_path_the_document_names_exists():
    text = DOC.read_text(encoding="utf-8")
    named = {match.group(1) for match in PATH.finditer(text)}
    absent = sorted(path for path in named if not (ROOT / path).exists())
    assert not absent, f"{DOC.name} names paths that do not exist: {absent}"


def test_module_map_rows_name_modules_the_tree_has():
    section = module_map()
    rows = {MODULE.search(line).group(1) for line in section.splitlines() if line.startswith("| [")}
    strangers = sorted(rows - tracked_modules())
    assert not strangers, f"the module map lists modules git does not track: {strangers}"
