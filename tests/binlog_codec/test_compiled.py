"""The compiled build of binlog_codec against its pure-Python modules.

The build compiles the modules of ``binlog_codec.COMPILED_MODULES`` from their
own ``.py`` files, and those of ``NATIVE_MODULES`` from ``.pyx`` (``setup.py``). These tests check that the compiled modules
are really extension modules, that ``BINLAKE_PURE_PYTHON=1`` really imports the
sources, and that both give the same output: ``binlog-codec rows`` and the
Arrow batches of every shared fixture binlog, and row images of random values
written by :mod:`binlog_codec.value_encoder`. The pure-Python side always runs
in its own process, with the variable set.

Without a compiled build (no C compiler when the package was installed) the
comparisons have nothing to compare and are skipped; with ``CI`` set they fail.
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
import json
import os
import pickle
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader
from pathlib import Path

import pytest
from ci import in_ci
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_values import KINDS

import binlog_codec
from binlog_codec.rows import DecodingPlan
from binlog_codec.table_map import TableMap
from binlog_codec.value_encoder import encode_row_image

PURE = {**os.environ, binlog_codec.PURE_PYTHON_VARIABLE: "1"}
# The shared fixture binlogs (the ``fixtures_dir`` fixture of conftest.py), known when tests are collected.
FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "binlogs"


def require_compiled() -> None:
    """Skip (fail under CI) when the compiled build is not the one in use."""
    if binlog_codec.compiled():
        return
    reason = f"binlog_codec runs without its compiled build ({binlog_codec.build_description()}); run: make setup"
    if in_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def python(code: str, *args: str, env: dict | None = None, stdin: str | None = None) -> str:
    """The standard output of ``code`` run by this interpreter in a new process; fails on a nonzero exit."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, input=stdin, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- which build runs -------------------------------------------------------------------


def test_the_hot_modules_are_extension_modules():
    require_compiled()
    for name in binlog_codec.COMPILED_MODULES + binlog_codec.NATIVE_MODULES:
        module = importlib.import_module(f"binlog_codec.{name}")
        assert isinstance(module.__loader__, ExtensionFileLoader), module.__file__
        assert module.__file__.endswith(tuple(EXTENSION_SUFFIXES))


WHICH_BUILD = """
import importlib, json, binlog_codec
files = {name: importlib.import_module("binlog_codec." + name).__file__ for name in binlog_codec.COMPILED_MODULES}
print(json.dumps({"compiled": binlog_codec.compiled(), "build": binlog_codec.build_description(), "files": files}))
"""


def test_the_pure_python_variable_imports_the_sources():
    found = json.loads(python(WHICH_BUILD, env=PURE))
    assert found["compiled"] is False
    assert found["build"] == "pure Python: BINLAKE_PURE_PYTHON is set"
    assert {name: Path(file).name for name, file in found["files"].items()} == {
        name: f"{name}.py" for name in binlog_codec.COMPILED_MODULES
    }


def test_version_names_the_build():
    version = python("import sys; from binlog_codec.cli import main; sys.exit(main())", "--version", env=PURE)
    assert version == f"binlog-codec {binlog_codec.__version__} (pure Python: BINLAKE_PURE_PYTHON is set)\n"


# -- same output on every fixture ----------------------------------------------------------

# For each file: the exit status, standard output and standard error of
# ``binlog-codec rows FILE``, and the Arrow batches of its rows (schema and
# values of each table version's batch, or the error that stopped them).
OUTPUTS = r"""
import contextlib, io, json, sys
from binlog_codec import cli
from binlog_codec.arrow import ImageBatchBuilder
from binlog_codec.reader import BinlogReader
from binlog_codec.rows import read_rows

def rows_command(path):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["rows", path])
    return [status, out.getvalue(), err.getvalue()]

def arrow_batches(path):
    builders = {}
    try:
        flavour = "mariadb" if next(iter(BinlogReader(path))).fde.is_mariadb else "mysql"
        for record in read_rows(path):
            builder = builders.get(id(record.table_map))
            if builder is None:
                builder = builders[id(record.table_map)] = ImageBatchBuilder(record.table_map, flavour)
            builder.append(record)
        ending = None
    except Exception as exc:
        ending = f"{type(exc).__name__}: {exc}"
    batches = []
    for builder in builders.values():
        batch = builder.build()
        batches.append([str(batch.schema), repr(batch.to_pylist())])
    return {"batches": batches, "ending": ending}

print(json.dumps({path: {"rows": rows_command(path), "arrow": arrow_batches(path)} for path in sys.argv[1:]}))
"""


def fixture_files() -> list[Path]:
    """The binlog files among the fixtures (not their notes and expectations)."""
    return sorted(path for path in FIXTURES.rglob("*") if path.is_file() and path.suffix not in (".md", ".json"))


@st.composite
def damaged_copies(draw, sample: bytes) -> tuple[bytes, bool]:
    """A copy of ``sample`` with one byte (after the magic) changed and maybe cut short, and
    whether to verify checksums while reading it."""
    damaged = bytearray(sample)
    damaged[draw(st.integers(4, len(sample) - 1))] = draw(st.integers(0, 255))
    cut = draw(st.one_of(st.none(), st.integers(0, len(sample))))
    return bytes(damaged[:cut]), draw(st.booleans())


@pytest.fixture(scope="module")
def both_outputs():
    """The outputs of every fixture file, from the build in use and from the pure-Python modules."""
    require_compiled()
    files = [str(path) for path in fixture_files()]
    compiled = json.loads(python(OUTPUTS, *files))
    pure = json.loads(python(OUTPUTS, *files, env=PURE))
    return compiled, pure


def test_the_fixtures_are_there(fixtures_dir):
    assert fixtures_dir == FIXTURES
    assert len(fixture_files()) >= 40


@pytest.mark.parametrize("path", fixture_files(), ids=lambda path: str(path.relative_to(FIXTURES)))
def test_rows_command_and_arrow_batches_are_the_same_on_both_paths(both_outputs, path):
    compiled, pure = both_outputs
    assert compiled[str(path)]["rows"] == pure[str(path)]["rows"]
    assert compiled[str(path)]["arrow"] == pure[str(path)]["arrow"]


def test_the_fixtures_give_rows_and_batches(both_outputs):
    """The comparison above compares something: most files have rows, some stop at an error."""
    compiled, _ = both_outputs
    with_rows = [path for path, found in compiled.items() if found["rows"][1]]
    with_batches = [path for path, found in compiled.items() if found["arrow"]["batches"]]
    failing = [path for path, found in compiled.items() if found["rows"][0] != 0]
    assert len(with_rows) >= 20 and len(with_batches) >= 20 and failing


# -- same values for random row images -------------------------------------------------------

# Reads pickled (columns, present, image) requests, one base64 line each, and answers each with
# one line: the repr of the decoded values and the next offset, or the error.
DECODER = r"""
import base64, pickle, sys
from binlog_codec.rows import DecodingPlan
from binlog_codec.table_map import TableMap

for line in sys.stdin:
    columns, present, image = pickle.loads(base64.b64decode(line))
    plan = DecodingPlan(TableMap(1, "db", "t", columns))
    try:
        answer = repr(plan.image(image, 0, plan.columns_of(present)))
    except Exception as exc:
        answer = repr((type(exc).__name__, str(exc)))
    print(answer, flush=True)
"""


@pytest.fixture(scope="module")
def pure_decoder():
    """A process decoding row images with the pure-Python modules."""
    require_compiled()
    process = subprocess.Popen(
        [sys.executable, "-c", DECODER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=PURE
    )
    yield process
    process.stdin.close()
    process.wait(timeout=60)


def decoded_here(columns, present, image) -> str:
    plan = DecodingPlan(TableMap(1, "db", "t", columns))
    try:
        return repr(plan.image(image, 0, plan.columns_of(present)))
    except Exception as exc:
        return repr((type(exc).__name__, str(exc)))


@st.composite
def row_images(draw):
    """Columns of random types with a random value each (some NULL), and the image holding them;
    sometimes cut short, so that errors are compared too."""
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=8))
    columns, values = [], {}
    for index, kind in enumerate(kinds):
        column, value = draw(KINDS[kind])
        column = dataclasses.replace(column, index=index, name=f"c{index}")
        columns.append(column)
        values[column.display_name] = None if draw(st.integers(0, 4)) == 0 else value
    present = sorted(draw(st.sets(st.integers(0, len(columns) - 1), min_size=1)))
    image = encode_row_image(columns, {columns[i].display_name: values[columns[i].display_name] for i in present},
                             present)
    cut = draw(st.one_of(st.just(len(image)), st.integers(0, len(image))))
    return columns, present, image[:cut]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(row_images())
def test_row_images_decode_the_same_on_both_paths(pure_decoder, example):
    columns, present, image = example
    pure_decoder.stdin.write(base64.b64encode(pickle.dumps((columns, present, image))).decode() + "\n")
    pure_decoder.stdin.flush()
    assert decoded_here(columns, present, image) == pure_decoder.stdout.readline().rstrip("\n")
