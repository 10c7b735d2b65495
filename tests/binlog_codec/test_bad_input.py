"""Hostile and damaged input: every failure is a located error, never a crash, hang or blow-up."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc

import pytest

from binlog_codec import errors
from binlog_codec.event_types import EventFlag, EventType
from binlog_codec.events import read
from binlog_codec.reader import BinlogReader
from binlog_codec.writer import BinlogWriter
from fixture_facts import path

GOOD = "osheroff__mysql-binlog-connector-java/mysql-bin.checksum-crc32"


def _copy(tmp_path, data: bytes, name: str = "damaged.000001"):
    target = tmp_path / name
    target.write_bytes(data)
    return target


def _last_event(data_path):
    return list(BinlogReader(data_path))[-1]


def _decode_all(target):
    return list(read(target))


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "binlog_codec.cli", *args], capture_output=True, text=True, timeout=60
    )


def _assert_clean_cli_failure(target, position: int, message: str):
    for command in ("events", "verify"):
        result = _cli(command, str(target))
        assert result.returncode == 1, result
        assert "Traceback" not in result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith(f"binlog-codec: {target}: at {position}")
        assert message in line


def test_truncated_last_event(tmp_path):
    data = path(GOOD).read_bytes()
    last = _last_event(path(GOOD))
    target = _copy(tmp_path, data[: last.pos + 30])
    with pytest.raises(errors.TruncatedError) as caught:
        _decode_all(target)
    assert (caught.value.position, caught.value.event_type) == (last.pos, "ROTATE")
    assert "runs past the end of the file" in str(caught.value)
    _assert_clean_cli_failure(target, last.pos, "runs past the end of the file")


def test_flipped_byte_is_a_crc32_mismatch(tmp_path):
    data = bytearray(path(GOOD).read_bytes())
    victim = list(BinlogReader(path(GOOD)))[50]
    data[victim.pos + 25] ^= 0x01
    target = _copy(tmp_path, bytes(data))
    with pytest.raises(errors.ChecksumError) as caught:
        _decode_all(target)
    assert (caught.value.position, caught.value.event_type) == (victim.pos, victim.type_name)
    _assert_clean_cli_failure(target, victim.pos, "CRC32 mismatch")
    # without verification the flipped byte goes through framing
    assert len(list(BinlogReader(target, verify_checksums=False))) == 303


@pytest.mark.parametrize("size", [2**32 - 1, 10**9])
def test_event_length_past_end_of_file_allocates_nothing(tmp_path, size):
    data = bytearray(path(GOOD).read_bytes())
    victim = list(BinlogReader(path(GOOD)))[10]
    data[victim.pos + 9 : victim.pos + 13] = size.to_bytes(4, "little")
    target = _copy(tmp_path, bytes(data))
    tracemalloc.start()
    with pytest.raises(errors.BinlogError) as caught:
        _decode_all(target)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 4 * 1024 * 1024
    assert caught.value.position == victim.pos
    assert f"event_size {size}" in str(caught.value)


def test_event_length_smaller_than_header(tmp_path):
    data = bytearray(path(GOOD).read_bytes())
    victim = list(BinlogReader(path(GOOD)))[10]
    data[victim.pos + 9 : victim.pos + 13] = (7).to_bytes(4, "little")
    target = _copy(tmp_path, bytes(data))
    with pytest.raises(errors.CorruptEventError, match="smaller than the 19-byte event header"):
        _decode_all(target)
    _assert_clean_cli_failure(target, victim.pos, "event_size 7 is smaller")


@pytest.mark.parametrize("head", [b"", b"\xfebi", b"GIF89a", b"\xfebin"[::-1]])
def test_wrong_magic(tmp_path, head):
    target = _copy(tmp_path, head + path(GOOD).read_bytes()[4:] if head else b"")
    with pytest.raises(errors.BadMagicError, match="not a binlog file"):
        _decode_all(target)
    _assert_clean_cli_failure(target, 0, "expected magic fe 62 69 6e")


def test_unknown_event_type(tmp_path):
    writer = BinlogWriter()
    position = writer.add(99, b"mystery")
    writer.add(EventType.XID, (7).to_bytes(8, "little"))
    target = _copy(tmp_path, writer.bytes())
    with pytest.raises(errors.UnknownEventError) as caught:
        _decode_all(target)
    assert (caught.value.position, caught.value.event_type) == (position, "UNKNOWN_99")
    _assert_clean_cli_failure(target, position, "unknown event type 99")
    skipped = list(read(target, skip_unknown=True))
    assert [e.type_name for e in skipped] == ["FORMAT_DESCRIPTION", "UNKNOWN_99", "XID"]
    assert "skipped on request" in skipped[1].summary()


def test_unknown_ignorable_event_is_stepped_over(tmp_path):
    writer = BinlogWriter()
    writer.add(120, b"\0" * 64, flags=EventFlag.IGNORABLE)
    writer.add(EventType.XID, (7).to_bytes(8, "little"))
    events = list(read(_copy(tmp_path, writer.bytes())))
    assert [e.type_name for e in events] == ["FORMAT_DESCRIPTION", "UNKNOWN_120", "XID"]
    assert events[2].xid == 7


def test_first_event_must_describe_the_format(tmp_path):
    writer = BinlogWriter()
    data = bytearray(writer.bytes())
    data[4 + 4] = EventType.QUERY  # the FDE's type byte
    with pytest.raises(errors.CorruptEventError, match="expected a FORMAT_DESCRIPTION_EVENT"):
        _decode_all(_copy(tmp_path, bytes(data)))


def test_encrypted_binlog_is_a_clear_error(tmp_path):
    writer = BinlogWriter(server_version="10.11.9-MariaDB-log")
    position = writer.add(EventType.START_ENCRYPTION, bytes([1]) + (1).to_bytes(4, "little") + b"\0" * 12)
    target = _copy(tmp_path, writer.bytes())
    with pytest.raises(errors.EncryptedBinlogError) as caught:
        _decode_all(target)
    assert caught.value.position == position
    _assert_clean_cli_failure(target, position, "encrypted binlog")


@pytest.mark.parametrize(
    "type_code, body, message",
    [
        (EventType.XID, b"\1\2\3", "XID body is 3 bytes, expected 8"),
        (EventType.QUERY, b"\0" * 12, "status_vars_len"),
        (EventType.QUERY, b"\0" * 8 + b"\x05" + b"\0\0" + b"\0\0" + b"abc", "database name"),
        (EventType.TABLE_MAP, b"\1\0\0\0\0\0\0\0\x40db", "database name"),
        (EventType.ROTATE, b"\4\0\0", "position"),
        (EventType.PREVIOUS_GTIDS, (10**12).to_bytes(8, "little"), "cannot fit"),
        (EventType.GTID_LIST, (10**6).to_bytes(4, "little"), "cannot fit"),
        (EventType.WRITE_ROWS, b"\1\0\0\0\0\0\1\0\1\0", "extra_data_len 1"),
        (EventType.TRANSACTION_PAYLOAD, b"\2\1\7\0", "unknown compression type 7"),
        (EventType.USER_VAR, b"\xff\xff\xff\x7f", "needs 2147483647 bytes"),
    ],
)
def test_hostile_bodies_are_located_errors(tmp_path, type_code, body, message):
    writer = BinlogWriter()
    position = writer.add(type_code, body)
    with pytest.raises(errors.CorruptEventError, match=message) as caught:
        _decode_all(_copy(tmp_path, writer.bytes()))
    assert (caught.value.position, caught.value.event_type) == (position, EventType(type_code).name)


def test_transaction_payload_with_garbage_zstd(tmp_path):
    from binlog_codec.writer import transaction_payload_body

    body = bytearray(transaction_payload_body(b"\0" * 200))
    body[-6:] = b"\xff" * 6
    writer = BinlogWriter()
    position = writer.add(EventType.TRANSACTION_PAYLOAD, bytes(body))
    with pytest.raises(errors.CorruptEventError) as caught:
        _decode_all(_copy(tmp_path, writer.bytes()))
    assert caught.value.position == position


def test_zstd_bomb_is_refused_before_inflating(tmp_path):
    from binlog_codec.writer import transaction_payload_body

    writer = BinlogWriter()
    position = writer.add(EventType.TRANSACTION_PAYLOAD, transaction_payload_body(b"\0" * 5_000_000))
    target = _copy(tmp_path, writer.bytes())
    with pytest.raises(errors.CorruptEventError, match="exceeds the 1000000-byte limit") as caught:
        list(BinlogReader(target, max_event_size=1_000_000))
    assert caught.value.position == position


def test_missing_file_is_a_clean_cli_error(tmp_path):
    result = _cli("verify", str(tmp_path / "nope.000001"))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "No such file" in result.stderr
