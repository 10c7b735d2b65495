"""Framing of every shared fixture against the facts in expected.json."""

from __future__ import annotations

import hashlib
import zlib
from collections import Counter

import pytest

from binlog_codec import errors
from binlog_codec.event_types import EventFlag, EventType
from binlog_codec.reader import MAGIC, BinlogReader
from fixture_facts import BAD_FILES, all_files, expected, facts, files_with_fact, files_with_measured, good_files, path


def outer_events(name: str):
    return [event for event in BinlogReader(path(name)) if event.inner_offset is None]


def test_fixture_set_is_complete():
    assert len(all_files()) == 47
    for name in all_files():
        data = path(name).read_bytes()
        assert len(data) == expected()[name]["size"]
        assert hashlib.sha256(data).hexdigest() == expected()[name]["sha256"]


@pytest.mark.parametrize("name", good_files())
def test_event_offsets_types_and_sizes(name):
    measured = expected()[name]["measured"]
    events = outer_events(name)
    assert [[e.pos, e.type_code, e.size] for e in events] == measured["events"]
    assert len(events) == measured["event_count"]
    assert dict(Counter(str(e.type_code) for e in events)) == measured["event_type_counts"]
    assert measured["bytes_after_last_complete_event"] == 0
    for event in events:
        assert event.end_pos == event.pos + event.size


@pytest.mark.parametrize("name", good_files())
def test_format_description(name):
    measured = expected()[name]["measured"]
    events = outer_events(name)
    fdes = [e for e in events if e.type_code == EventType.FORMAT_DESCRIPTION]
    assert len(fdes) == measured["fde_count"]
    fde = fdes[0].fde
    assert fde.server_version == measured["server_version"]
    assert fde.binlog_version == measured["binlog_version"]
    assert fde.checksum_name == measured["fde_checksum_alg"]
    with_crc = {e.checksum is not None for e in events if e.type_code != EventType.FORMAT_DESCRIPTION}
    if measured["event_checksums"] == "CRC32":
        assert with_crc == {True}
    else:
        assert with_crc <= {False}


@pytest.mark.parametrize("name", files_with_measured("all_event_crc32_valid"))
def test_every_crc32_is_verified(name):
    assert expected()[name]["measured"]["all_event_crc32_valid"] is True
    data = path(name).read_bytes()
    checked = 0
    for event in outer_events(name):
        if event.checksum is not None and event.type_code != EventType.FORMAT_DESCRIPTION:
            covered = data[event.pos : event.end_pos - 4]
            assert zlib.crc32(covered) == event.checksum
            checked += 1
    assert checked == len(outer_events(name)) - expected()[name]["measured"]["fde_count"]


@pytest.mark.parametrize("name", files_with_measured("fde_in_use_flag_set"))
def test_fde_checksum_is_computed_with_in_use_flag_cleared(name):
    measured = expected()[name]["measured"]
    fde = outer_events(name)[0]
    assert bool(fde.header.flags & EventFlag.BINLOG_IN_USE) == measured["fde_in_use_flag_set"]
    data = path(name).read_bytes()
    raw_crc = zlib.crc32(data[fde.pos : fde.end_pos - 4])
    if measured.get("fde_crc32_matches_only_with_in_use_flag_cleared"):
        assert raw_crc != fde.checksum  # and yet the reader verified it: the flag was cleared


@pytest.mark.parametrize("name", files_with_measured("transaction_payloads"))
def test_transaction_payload_inner_events(name):
    (payload,) = expected()[name]["measured"]["transaction_payloads"]
    events = list(BinlogReader(path(name)))
    inner = [e for e in events if e.inner_offset is not None]
    assert {e.pos for e in inner} == {payload["payload_event_offset"]}
    assert [[e.inner_offset, e.type_code, e.size] for e in inner] == payload["inner_events"]
    assert all(e.checksum is None for e in inner)
    assert sum(e.size for e in inner) == payload["uncompressed_size"]


@pytest.mark.parametrize("name", files_with_fact("transaction_payload_inner_events"))
def test_transaction_payload_inner_sequence_fact(name):
    (fact,) = facts(name, "transaction_payload_inner_events")
    inner = [e.type_code for e in BinlogReader(path(name)) if e.inner_offset is not None]
    assert inner == fact["inner_event_types"]


@pytest.mark.parametrize("name", files_with_fact("event_count"))
def test_event_count_facts(name):
    for fact in facts(name, "event_count"):
        assert len(outer_events(name)) == fact["value"]


def test_every_header_field_of_binlog_transaction():
    name = "blackbeam__rust_mysql_common/binlog_transaction.000001"
    (fact,) = facts(name, "event_headers")
    data = path(name).read_bytes()
    events = outer_events(name)
    for expected_header in fact["headers"]:
        event = events[expected_header["index0"]]
        header = event.header
        assert (header.timestamp, header.type_code, header.server_id, header.event_size, header.log_pos, header.flags) == (
            expected_header["timestamp"],
            expected_header["event_type"],
            expected_header["server_id"],
            expected_header["event_size"],
            expected_header["log_pos"],
            expected_header["flags"],
        )
        assert event.body == data[event.pos + 19 : event.end_pos]
    (magic,) = facts(name, "file_header_roundtrip")
    assert data[:4] == MAGIC == bytes.fromhex(magic["value"]["magic_hex"])


def test_relay_logs_are_framed_by_event_size_not_log_pos():
    name = "blackbeam__rust_mysql_common/bug33029-slave-relay-bin.000001"
    events = outer_events(name)
    assert any(e.header.log_pos != e.end_pos for e in events)
    assert [e.type_code for e in events].count(EventType.FORMAT_DESCRIPTION) == 2


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_fixture_fails_with_located_error(name):
    error_class, position, type_name = BAD_FILES[name]
    from binlog_codec.events import read

    with pytest.raises(errors.BinlogError) as caught:
        for _ in read(path(name)):
            pass
    error = caught.value
    assert type(error).__name__ == error_class
    assert (error.position, error.event_type) == (position, type_name)
    assert error.file == str(path(name))
    assert str(error).startswith(f"{path(name)}: at {position} ({type_name}): ")


@pytest.mark.parametrize("name", files_with_measured("stream_end", good_only=False))
def test_truncated_fixtures_report_the_trailing_bytes(name):
    measured = expected()[name]["measured"]
    # "truncated header: 10 bytes left at offset 4"
    left, offset = (int(word) for word in measured["stream_end"].split() if word.isdigit())
    with pytest.raises(errors.TruncatedError, match=f"{left} of 19 bytes") as caught:
        list(BinlogReader(path(name)))
    assert caught.value.position == offset
    assert offset + left == expected()[name]["size"]


def test_corrupt_relay_log_frames_to_the_end():
    """Its bad QUERY body is a decoding error, not a framing one: framing reaches the ROTATE after it."""
    name = "blackbeam__rust_mysql_common/corrupt-relay-bin.000624"
    (fact,) = facts(name, "roundtrip_and_full_decode")
    events = outer_events(name)
    assert [[e.pos, e.type_code, e.size] for e in events] == expected()[name]["measured"]["events"]
    bad = events[fact["locator"]["event_index_1based"] - 1]
    assert (bad.pos, bad.type_code, bad.size) == (91204, 2, fact["expect"]["first_failure"]["event_size"])


def test_reader_streams_without_loading_the_file(tmp_path):
    import tracemalloc

    from binlog_codec.writer import BinlogWriter

    writer = BinlogWriter()
    for number in range(16_000):
        writer.add(EventType.ROWS_QUERY, b"\x00" + bytes([number % 251]) * 2_500)
    big = tmp_path / "big.000001"
    big.write_bytes(writer.bytes())
    del writer
    tracemalloc.start()
    count = sum(1 for _ in BinlogReader(big))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 16_001
    assert big.stat().st_size > 40_000_000
    assert peak < 4 * 1024 * 1024


def test_start_and_stop_position():
    name = "osheroff__mysql-binlog-connector-java/mysql-bin.checksum-crc32"
    events = outer_events(name)
    middle = events[100]
    window = list(BinlogReader(path(name), start_position=middle.pos, stop_position=events[110].pos))
    assert [e.pos for e in window] == [e.pos for e in events[100:110]]
