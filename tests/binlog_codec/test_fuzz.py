"""Fuzzing the decoders with mutated real input: every failure is a located error, never a crash,
a hang or a blow-up.

Seeds are real binlogs (the shared fixtures and the bundled samples) and real binary JSON
documents and JSON diffs (from :mod:`binlog_codec.corpus`). Mutations: bytes flipped, the input
cut short, and length fields set to huge values (an event's length, 1 to 8 bytes anywhere in an
event's body: the row images', table maps' and JSON lengths among them). Checksums are verified
or not (unverified, a flipped byte reaches the event decoders instead of failing the CRC32).

* The only exceptions allowed are :class:`~binlog_codec.errors.BinlogError` subclasses, and for
  binary JSON its documented :class:`~binlog_codec.json_binary.JsonBinaryError`.
* Time per input is bounded by the hypothesis deadline; memory, for the huge-length cases, by a
  tracemalloc peak of at most :data:`BYTES_PER_INPUT_BYTE` times the input plus a constant.

The suite runs a few hundred examples; ``BINLAKE_FUZZ_EXAMPLES=N`` runs N per test.
"""

from __future__ import annotations

import os
import random
import tempfile
import tracemalloc
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlog_codec import json_binary, json_diff
from binlog_codec.corpus import json_changes, order_document, settings_document
from binlog_codec.errors import BinlogError
from binlog_codec.events import read
from binlog_codec.reader import BinlogReader
from binlog_codec.rows import read_rows
from mariadb import REPO_ROOT

EXAMPLES = int(os.environ.get("BINLAKE_FUZZ_EXAMPLES", "100"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=timedelta(seconds=10),  # generous for a loaded machine; a hang never meets it
    database=None,
    derandomize=not os.environ.get("BINLAKE_FUZZ_EXAMPLES"),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
HEADER = 19
BYTES_PER_INPUT_BYTE = 400  # Python objects for decoded rows, per byte of input
MEMORY_ALLOWANCE = 8 << 20
HUGE = [2**32 - 1, 2**31, 10**9, 2**64 - 1, 2**63, 0xFFFFFF, 0xFFFF]

SEED_FILES = [
    "blackbeam__rust_mysql_common/json.binlog.000001",
    "blackbeam__rust_mysql_common/json-opaque.binlog",
    "blackbeam__rust_mysql_common/mysql-enum-string-set.000001",
    "blackbeam__rust_mysql_common/update-partial-row.binlog",
    "blackbeam__rust_mysql_common/write-partial-row.binlog",
    "blackbeam__rust_mysql_common/transaction_compression.000001",
    "blackbeam__rust_mysql_common/vector.binlog",
    "blackbeam__rust_mysql_common/mysql_type_bit.000001",
    "blackbeam__rust_mysql_common/binlog-invisible-columns.000001",
    "blackbeam__rust_mysql_common/minimal_row_metadata.000001",
    "blackbeam__rust_mysql_common/mariadb-bin.000001",
    "osheroff__mysql-binlog-connector-java/mysql-bin.compressed",
]


def _seed_binlogs() -> list[tuple[str, bytes, list[tuple[int, int]]]]:
    """``(name, bytes, [(event position, event length)])`` of every seed file that decodes whole."""
    root = REPO_ROOT.parent / "shared" / "fixtures" / "binlogs"
    paths = [root / name for name in SEED_FILES] + sorted((REPO_ROOT / "samples").glob("mariadb-bin.0*"))
    seeds = []
    for path in paths:
        if not path.exists():
            continue
        try:
            ROWS_IN_SEEDS[f"{path.parent.name}/{path.name}"] = sum(1 for _ in read_rows(path))
            events = [(raw.pos, raw.size) for raw in BinlogReader(path, unwrap_payloads=False)]
        except BinlogError:
            continue  # a seed must decode: its mutations are what is tested
        seeds.append((f"{path.parent.name}/{path.name}", path.read_bytes(), events))
    return seeds


ROWS_IN_SEEDS: dict[str, int] = {}
SEEDS = _seed_binlogs()


def _json_documents() -> list[bytes]:
    rng = random.Random(8132)
    documents = [order_document(rng) for _ in range(6)] + [settings_document(rng) for _ in range(6)]
    return [json_binary.serialize(document) for document in documents]


def _diff_vectors() -> list[bytes]:
    rng = random.Random(2955)
    vectors = []
    for maker in [order_document] * 8 + [settings_document] * 8:
        diffs = json_changes(rng, maker(rng))
        if diffs:
            vectors.append(json_diff.encode_diffs(diffs))
    return vectors


DOCUMENTS, DIFFS = _json_documents(), _diff_vectors()


def decode_file(data: bytes, verify_checksums: bool) -> None:
    """Every event and every row of ``data`` as a binlog file, as the pipeline reads it."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzzed.000001"
        path.write_bytes(data)
        for _ in read(path, verify_checksums=verify_checksums):
            pass
        for _ in read_rows(path, verify_checksums=verify_checksums):
            pass


def _within_memory(decode, data: bytes) -> None:
    """``decode(data)``, with its peak allocation bounded by the input's size."""
    tracemalloc.start()
    try:
        try:
            decode(data)
        finally:
            peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= BYTES_PER_INPUT_BYTE * len(data) + MEMORY_ALLOWANCE, f"{peak} bytes for {len(data)} bytes of input"


def _quietly(decode, data: bytes, allowed: tuple[type[BaseException], ...]) -> None:
    """``decode(data)``: it may refuse the input, but only with an ``allowed`` error."""
    try:
        decode(data)
    except allowed:
        pass


@st.composite
def flipped(draw, data: bytes) -> bytes:
    """``data`` with 1 to 8 bytes xor'ed with random masks."""
    mutated = bytearray(data)
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(data) - 1))
        mutated[at] ^= draw(st.integers(1, 255))
    return bytes(mutated)


def with_huge_length(data: bytes, at: int, width: int, value: int) -> bytes:
    """``data`` with ``width`` bytes at ``at`` holding ``value`` (little-endian, cut to the width)."""
    mutated = bytearray(data)
    width = min(width, len(data) - at)
    mutated[at : at + width] = (value % (1 << (8 * width))).to_bytes(width, "little")
    return bytes(mutated)


seed_files = st.sampled_from(SEEDS) if SEEDS else st.nothing()


@pytest.mark.skipif(not SEEDS, reason="no seed binlog decodes (shared fixtures missing?)")
@FUZZ
@given(seed=seed_files, data=st.data(), verify=st.booleans())
def test_binlogs_with_flipped_bytes(seed, data, verify):
    _name, original, _events = seed
    _quietly(lambda b: decode_file(b, verify), data.draw(flipped(original)), (BinlogError,))


@pytest.mark.skipif(not SEEDS, reason="no seed binlog decodes (shared fixtures missing?)")
@FUZZ
@given(seed=seed_files, data=st.data())
def test_binlogs_cut_short(seed, data):
    _name, original, _events = seed
    cut = data.draw(st.integers(0, len(original) - 1))
    _quietly(lambda b: decode_file(b, True), original[:cut], (BinlogError,))


@pytest.mark.skipif(not SEEDS, reason="no seed binlog decodes (shared fixtures missing?)")
@FUZZ
@given(seed=seed_files, data=st.data(), value=st.sampled_from(HUGE), width=st.sampled_from([1, 2, 3, 4, 8]))
def test_binlogs_with_lying_lengths_allocate_little(seed, data, value, width):
    """A huge value in an event's length field or anywhere in its body (checksums off, so the
    decoders see it)."""
    _name, original, events = seed
    position, size = data.draw(st.sampled_from(events))
    in_header = data.draw(st.booleans())
    at = position + 9 if in_header else data.draw(st.integers(position + HEADER, position + size - 1))
    mutated = with_huge_length(original, at, 4 if in_header else width, value)
    _within_memory(lambda b: _quietly(lambda d: decode_file(d, False), b, (BinlogError,)), mutated)


@FUZZ
@given(document=st.sampled_from(DOCUMENTS), data=st.data())
def test_binary_json_with_flipped_bytes_or_cut_short(document, data):
    mutated = data.draw(st.one_of(flipped(document), st.integers(0, len(document) - 1).map(lambda n: document[:n])))
    _quietly(json_binary.parse, mutated, (json_binary.JsonBinaryError,))


@FUZZ
@given(document=st.sampled_from(DOCUMENTS), data=st.data(), value=st.sampled_from(HUGE), width=st.sampled_from([2, 4]))
def test_binary_json_with_lying_counts_and_sizes_allocates_little(document, data, value, width):
    at = data.draw(st.integers(0, len(document) - 1))
    mutated = with_huge_length(document, at, width, value)
    _within_memory(lambda b: _quietly(json_binary.parse, b, (json_binary.JsonBinaryError,)), mutated)


@FUZZ
@given(vector=st.sampled_from(DIFFS), data=st.data())
def test_json_diffs_with_flipped_bytes_or_cut_short(vector, data):
    mutated = data.draw(st.one_of(flipped(vector), st.integers(0, len(vector) - 1).map(lambda n: vector[:n])))
    _quietly(json_diff.decode_diffs, mutated, (BinlogError,))


@FUZZ
@given(vector=st.sampled_from(DIFFS), data=st.data(), value=st.sampled_from(HUGE), width=st.sampled_from([1, 2, 4, 8]))
def test_json_diffs_with_lying_lengths_allocate_little(vector, data, value, width):
    at = data.draw(st.integers(0, len(vector) - 1))
    mutated = with_huge_length(vector, at, width, value)
    _within_memory(lambda b: _quietly(json_diff.decode_diffs, b, (BinlogError,)), mutated)


def test_the_seeds_are_real_and_varied():
    """The fuzzing above starts from inputs that exercise the decoders: rows, JSON, diffs."""
    assert len(SEEDS) >= 8, [name for name, _, _ in SEEDS]
    assert sum(ROWS_IN_SEEDS[name] for name, _, _ in SEEDS) > 50
    assert len(DOCUMENTS) == 12 and len(DIFFS) >= 8
    assert [json_binary.serialize(json_binary.parse(d)) for d in DOCUMENTS] == DOCUMENTS

