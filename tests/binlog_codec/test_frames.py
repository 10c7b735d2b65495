"""The compiled framing and rows-event bodies (:mod:`binlog_codec.frames`) against the Python
code they stand in for: the same events, records and errors, for whole files, for files cut
or with bytes changed anywhere, and for rows and GTID bodies of any shape."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_compiled import damaged_copies, fixture_files, require_compiled

from binlog_codec.errors import BinlogError
from binlog_codec.event_types import ROWS_TYPES, EventType
from binlog_codec.events import decode
from binlog_codec.reader import BinlogReader, RawEvent

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples").glob("mariadb-bin.*"))
SAMPLE = SAMPLES[0].read_bytes()


@pytest.fixture(scope="module")
def frames():
    require_compiled()
    from binlog_codec import frames

    return frames


def python_reader(path, **options) -> BinlogReader:
    """A reader that frames every event with its Python ``_read_event``."""
    reader = BinlogReader(path, **options)
    reader._event_reader = lambda: reader._read_event
    return reader


def outcome(reader: BinlogReader) -> tuple[list, str | None]:
    """Every event the reader yields, as plain values, and the error that stopped it."""
    events = []
    try:
        for raw in reader:
            events.append((raw.pos, raw.end_pos, tuple(raw.header), bytes(raw.body), raw.checksum, raw.inner_offset))
    except BinlogError as exc:
        return events, f"{type(exc).__name__}: {exc}"
    return events, None


def same_framing(path, **options) -> tuple[list, str | None]:
    """The outcome of reading ``path``, checked to be the same both ways."""
    compiled = outcome(BinlogReader(path, **options))
    assert compiled == outcome(python_reader(path, **options))
    return compiled


def test_the_reader_frames_in_c(frames):
    assert BinlogReader(SAMPLES[0])._event_reader().__self__.__class__ is frames.Frames


@pytest.mark.parametrize("path", SAMPLES + fixture_files(), ids=lambda path: path.name)
def test_every_file_is_framed_the_same(frames, path):
    events, _ = same_framing(path)
    same_framing(path, verify_checksums=False)
    if len(events) > 4:
        middle = events[len(events) // 2][0]
        same_framing(path, start_position=middle, stop_position=events[-2][0])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=damaged_copies(SAMPLE))
def test_a_damaged_file_is_framed_and_reported_the_same(frames, tmp_path, case):
    data, verify = case
    path = tmp_path / "damaged.000001"
    path.write_bytes(data)
    same_framing(path, verify_checksums=verify)


def test_a_bad_checksum_is_still_an_error(frames, tmp_path):
    events, _ = same_framing(SAMPLES[0])
    last = events[-1]
    damaged = bytearray(SAMPLE)
    damaged[last[1] - 1] ^= 0xFF  # the last byte of the last event's CRC32
    path = tmp_path / "bad-crc.000001"
    path.write_bytes(bytes(damaged))
    found, error = same_framing(path)
    assert error.startswith("ChecksumError") and len(found) == len(events) - 1


# -- event bodies ---------------------------------------------------------------------------


def raw_events(paths, codes) -> list[RawEvent]:
    """The framed events of ``codes`` in the files (those before any error)."""
    found = []
    for path in paths:
        try:
            found.extend(raw for raw in BinlogReader(path) if raw.type_code in codes)
        except BinlogError:
            pass
    return found


def decoded(function, raw) -> object:
    """What ``function`` makes of ``raw``, or its error as text."""
    try:
        return function(raw)
    except BinlogError as exc:
        return f"{type(exc).__name__}: {exc}"


ROWS_EVENTS = raw_events(SAMPLES + fixture_files(), ROWS_TYPES)
GTID_EVENTS = raw_events(SAMPLES + fixture_files(), {EventType.MARIADB_GTID})


def test_there_are_bodies_to_compare():
    assert len(ROWS_EVENTS) >= 10 and len(GTID_EVENTS) >= 5


@pytest.mark.parametrize("raw", ROWS_EVENTS, ids=lambda raw: f"{Path(raw.file).name}@{raw.pos}")
def test_rows_events_are_the_records_decode_makes(frames, raw):
    assert frames.rows_event(raw) == decode(raw)


@pytest.mark.parametrize("raw", GTID_EVENTS, ids=lambda raw: f"{Path(raw.file).name}@{raw.pos}")
def test_mariadb_gtids_are_the_ones_decode_reads(frames, raw):
    assert frames.mariadb_gtid(raw) == decode(raw).gtid


def reshaped(raw: RawEvent, body: bytes, type_code: int | None = None) -> RawEvent:
    header = raw.header._replace(type_code=raw.type_code if type_code is None else type_code)
    return RawEvent(raw.file, raw.pos, raw.end_pos, header, body, raw.checksum, raw.fde, raw.inner_offset)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_rows_body_is_decoded_or_refused_the_same(frames, data):
    raw = data.draw(st.sampled_from(ROWS_EVENTS))
    body = bytearray(raw.body)
    for _ in range(data.draw(st.integers(0, 3))):
        body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    body = bytes(body[: data.draw(st.integers(0, len(body)))])
    code = data.draw(st.sampled_from(sorted(ROWS_TYPES)))
    event = reshaped(raw, body, code)
    assert decoded(frames.rows_event, event) == decoded(decode, event)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_gtid_body_is_read_or_refused_the_same(frames, data):
    raw = data.draw(st.sampled_from(GTID_EVENTS))
    body = data.draw(st.binary(min_size=0, max_size=40))
    if body[12:13] and data.draw(st.booleans()):  # a flags byte of the common kinds
        body = body[:12] + bytes([data.draw(st.sampled_from([0, 1, 2, 3, 8, 14]))]) + body[13:]
    event = reshaped(raw, body)
    assert decoded(frames.mariadb_gtid, event) == decoded(lambda raw: decode(raw).gtid, event)
