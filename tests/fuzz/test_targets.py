"""The committed fuzz corpus, replayed: every input through every fuzz target.

``fuzz/corpus/<target>/`` holds inputs that reach distinct coverage of each
decoder (fragments and mutations of real binlogs, binary JSON, diff vectors,
backup images) and every input the fuzzing found that once crashed, hung or
allocated from a lying length (``regression-*``). Each goes through every
target, not only its own: a binlog fragment is also hostile binary JSON.

* Only the target's documented error may come out (:data:`fuzz.targets.DOCUMENTED_ERRORS`).
* Memory: a tracemalloc peak of at most :data:`fuzz.targets.MEMORY_PER_INPUT_BYTE`
  times the input plus :data:`fuzz.targets.MEMORY_ALLOWANCE`.
* Time: an input that takes :data:`HANG_SECONDS` is a hang (the decoders take
  milliseconds).
"""

from __future__ import annotations

import signal
import sys
import tracemalloc
from pathlib import Path

import pytest

from mariadb import REPO_ROOT

if str(REPO_ROOT) not in sys.path:  # the fuzz package sits at the top of the repository
    sys.path.insert(0, str(REPO_ROOT))
from fuzz.seeds import is_real_binlog, real_binlogs  # noqa: E402
from fuzz.targets import DOCUMENTED_ERRORS, MEMORY_ALLOWANCE, MEMORY_PER_INPUT_BYTE, TARGETS, run  # noqa: E402

CORPUS = REPO_ROOT / "fuzz" / "corpus"
INPUTS = sorted(path for path in CORPUS.glob("*/*") if path.is_file())
HANG_SECONDS = 30
CORPUS_BYTES_LIMIT = 2 << 20


class Hang(Exception):
    pass


def _hung(signum, frame):
    raise Hang(f"no answer in {HANG_SECONDS} seconds")


def _replay(target: str, path: Path) -> BaseException | None:
    """``target`` over the input at ``path``, within the time and memory bounds: the documented
    error it refused the input with, or None."""
    data = path.read_bytes()
    previous = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(HANG_SECONDS)
    tracemalloc.start()
    try:
        refusal = run(target, data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    bound = MEMORY_PER_INPUT_BYTE * len(data) + MEMORY_ALLOWANCE
    assert peak <= bound, f"{target} over {path.name}: {peak} bytes allocated for {len(data)} bytes of input"
    return refusal


def test_every_target_has_a_corpus_within_its_size():
    assert sorted(folder.name for folder in CORPUS.iterdir() if folder.is_dir()) == sorted(TARGETS)
    for target in TARGETS:
        assert len(list((CORPUS / target).iterdir())) >= 10, target
    assert sum(path.stat().st_size for path in INPUTS) < CORPUS_BYTES_LIMIT


@pytest.mark.skipif(not real_binlogs(), reason="the shared fixtures are not there to compare with")
def test_the_corpus_holds_no_whole_real_binlog():
    """The fixtures stay outside the repository; fragments and mutations of them are fine."""
    assert [path.name for path in INPUTS if is_real_binlog(path.read_bytes())] == []


@pytest.mark.parametrize("target", TARGETS)
def test_every_corpus_input_ends_in_a_documented_error_in_bounded_time_and_memory(target):
    outcomes = {"read": 0, "refused": 0}
    for path in INPUTS:
        try:
            refusal = _replay(target, path)
        except Hang as exc:
            pytest.fail(f"{target} over {path.relative_to(CORPUS)}: {exc}")
        except Exception as exc:
            pytest.fail(f"{target} over {path.relative_to(CORPUS)}: {type(exc).__name__}: {exc}, "
                        f"expected only {', '.join(e.__name__ for e in DOCUMENTED_ERRORS[target])}")
        outcomes["refused" if refusal is not None else "read"] += 1
    assert outcomes["read"] and outcomes["refused"], outcomes  # the corpus reaches both ends of the decoder


@pytest.mark.parametrize("path", [p for p in INPUTS if p.name.startswith("regression-")], ids=lambda p: p.name)
def test_every_found_input_is_refused_by_its_target(path):
    """The inputs that once crashed, hung or blew up now end in their target's documented error."""
    refusal = _replay(path.parent.name, path)
    assert isinstance(refusal, DOCUMENTED_ERRORS[path.parent.name]), refusal
