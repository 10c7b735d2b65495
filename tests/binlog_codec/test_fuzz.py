"""Fuzzing the decoders with mutated real input: every failure is a located error, never a crash,
a hang or a blow-up.

Seeds are real binlogs (the shared fixtures and the bundled samples), real binary JSON
documents and JSON diffs (from :mod:`binlog_codec.corpus`), and, from the seeds of the
coverage-guided fuzzer (:mod:`fuzz.seeds`), the TABLE_MAP bodies of real binlogs and backup
images written by :class:`~binlog_codec.backup.BackupWriter`. Mutations: bytes flipped, the input
cut short, and length fields set to huge values (an event's length, 1 to 8 bytes anywhere in an
event's body: the row images', table maps' and JSON lengths among them). Checksums are verified
or not (unverified, a flipped byte reaches the event decoders instead of failing the CRC32).

* The only exceptions allowed are :class:`~binlog_codec.errors.BinlogError` subclasses, and for
  binary JSON its documented :class:`~binlog_codec.json_binary.JsonBinaryError`.
* Time per input is bounded by the hypothesis deadline; memory, for the huge-length cases, by a
  tracemalloc peak of at most :data:`fuzz.targets.MEMORY_PER_INPUT_BYTE` times the input plus a
  constant.

Inputs the fuzzing found that once hung or allocated from a lying length are kept at the end,
exactly as found.

The suite runs a few hundred examples; ``BINLAKE_FUZZ_EXAMPLES=N`` runs N per test.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import tempfile
import tracemalloc
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlog_codec import json_binary, json_diff
from binlog_codec.backup import BackupImageError
from binlog_codec.corpus import json_changes, order_document, settings_document
from binlog_codec.errors import BinlogError, CorruptEventError, TruncatedError
from binlog_codec.event_types import EventType
from binlog_codec.events import read
from binlog_codec.reader import BinlogReader
from binlog_codec.rows import read_rows
from binlog_codec.table_map import Column, ColumnType, TableMap
from binlog_codec.writer import BinlogWriter, rows_body, table_map_event_body, transaction_payload_body
from mariadb import REPO_ROOT

if str(REPO_ROOT) not in sys.path:  # the fuzz package sits at the top of the repository
    sys.path.insert(0, str(REPO_ROOT))
from fuzz import targets as fuzz_targets  # noqa: E402
from fuzz.targets import MEMORY_ALLOWANCE, MEMORY_PER_INPUT_BYTE  # noqa: E402
from fuzz.seeds import seeds as fuzz_seeds  # noqa: E402

EXAMPLES = int(os.environ.get("BINLAKE_FUZZ_EXAMPLES", "100"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=timedelta(seconds=10),  # generous for a loaded machine; a hang never meets it
    database=None,
    derandomize=not os.environ.get("BINLAKE_FUZZ_EXAMPLES"),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
HEADER = 19
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
TABLE_MAPS = list(fuzz_seeds("table_map").values())
BACKUP_IMAGES = list(fuzz_seeds("backup_image").values())


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
    assert peak <= MEMORY_PER_INPUT_BYTE * len(data) + MEMORY_ALLOWANCE, f"{peak} bytes for {len(data)} bytes of input"


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


@st.composite
def mutated(draw, data: bytes) -> bytes:
    """``data`` with flipped bytes, cut short, or with a huge value in 1 to 8 bytes somewhere."""
    how = draw(st.sampled_from(["flip", "cut", "huge"]))
    if how == "flip":
        return draw(flipped(data))
    if how == "cut":
        return data[: draw(st.integers(0, len(data) - 1))]
    at = draw(st.integers(0, len(data) - 1))
    return with_huge_length(data, at, draw(st.sampled_from([1, 2, 3, 4, 8])), draw(st.sampled_from(HUGE)))


@pytest.mark.skipif(not TABLE_MAPS, reason="no TABLE_MAP in the seed binlogs (shared fixtures missing?)")
@FUZZ
@given(body=st.sampled_from(TABLE_MAPS) if TABLE_MAPS else st.nothing(), data=st.data())
def test_table_maps_with_flipped_bytes_cut_short_or_lying_lengths(body, data):
    """A TABLE_MAP body, its metadata (WL#4618), the decoding plan and text of its columns."""
    _within_memory(lambda b: _quietly(fuzz_targets.table_map, b, (BinlogError,)), data.draw(mutated(body)))


@FUZZ
@given(image=st.sampled_from(BACKUP_IMAGES), data=st.data())
def test_backup_images_with_flipped_bytes_cut_short_or_lying_lengths(image, data):
    """Prefix, block sizes, fragment headers, chunk fields and their sizes (WL#4063)."""
    _within_memory(lambda b: _quietly(fuzz_targets.backup_image, b, (BackupImageError,)), data.draw(mutated(image)))


def test_the_seeds_are_real_and_varied():
    """The fuzzing above starts from inputs that exercise the decoders: rows, JSON, diffs."""
    assert len(SEEDS) >= 8, [name for name, _, _ in SEEDS]
    assert sum(ROWS_IN_SEEDS[name] for name, _, _ in SEEDS) > 50
    assert len(DOCUMENTS) == 12 and len(DIFFS) >= 8
    assert len(TABLE_MAPS) >= 20 and len(BACKUP_IMAGES) >= 8
    assert all(fuzz_targets.run("table_map", body) is None for body in TABLE_MAPS)
    assert all(fuzz_targets.run("backup_image", image) is None for image in BACKUP_IMAGES)
    assert [json_binary.serialize(json_binary.parse(d)) for d in DOCUMENTS] == DOCUMENTS



# -- inputs the fuzzing found, exactly as found --------------------------------------------


def _int_table() -> TableMap:
    """``test.t (id INT NOT NULL)`` with its column names (binlog_row_metadata=FULL)."""
    column = Column(0, ColumnType.LONG, ColumnType.LONG, False, name="id", unsigned=False, visible=True)
    return TableMap(88, "test", "t", [column], primary_key=[(0, 0)], metadata_level="FULL")


def _timed_out(signum, frame):
    raise TimeoutError(f"no answer in {FOUND_INPUT_SECONDS} seconds: the decoder hangs")


FOUND_INPUT_SECONDS = 60  # what the decoders take is well under a second; a hang never ends


def _refusal(data: bytes) -> BinlogError:
    """The error reading ``data`` as a binlog ends in, checked to come in bounded time and memory."""
    refusals = []

    def decode(data: bytes) -> None:
        try:
            decode_file(data, verify_checksums=True)
        except BinlogError as exc:
            refusals.append(exc)

    previous = signal.signal(signal.SIGALRM, _timed_out)
    signal.alarm(FOUND_INPUT_SECONDS)
    try:
        _within_memory(decode, data)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert refusals, "the input was read without an error"
    return refusals[0]


def test_a_rows_event_whose_bitmap_selects_no_column_is_refused_not_read_forever():
    """An image of no columns takes no bytes: the row decoder stayed on the first row, appending
    it again and again, until the process held gigabytes (found with a long hypothesis run: two
    bytes of a real WRITE_ROWS column bitmap set to zero)."""
    writer = BinlogWriter()
    writer.add(EventType.TABLE_MAP, table_map_event_body(_int_table()))
    position = writer.add(EventType.WRITE_ROWS, rows_body(EventType.WRITE_ROWS, 88, 1, 1, b"\x00", None, b"\x00" + bytes(4)))
    error = _refusal(writer.bytes())
    assert isinstance(error, CorruptEventError) and error.position == position
    assert "5 bytes of rows, but the column bitmaps select none of the 1 columns" in error.message


def test_a_lying_event_size_inside_a_zstd_payload_allocates_little():
    """An inner event claiming 1 GiB in a TRANSACTION_PAYLOAD of a few bytes: the zstd reader
    allocated the gigabyte it was asked for before finding the payload ended."""
    writer = BinlogWriter()
    inner = bytearray(writer.inner_event(EventType.XID, (7).to_bytes(8, "little")))
    inner[9:13] = (1 << 30).to_bytes(4, "little")  # event_size
    position = writer.add(EventType.TRANSACTION_PAYLOAD, transaction_payload_body(bytes(inner)))
    error = _refusal(writer.bytes())
    assert isinstance(error, TruncatedError) and error.position == position
    assert error.message == "payload ends inside the event at payload offset 0"
