"""Encoder/decoder pairs of the wire primitives, compressed blocks and payload headers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlog_codec.mariadb_compression import compress_block, uncompress_block
from binlog_codec.payload import COMPRESSION_NONE, COMPRESSION_ZSTD, open_payload, parse_payload_header
from binlog_codec.writer import transaction_payload_body
from binlog_codec.wire import Cursor, ShortBody, pack_int, pack_varlen_int, pack_varlen_uint

U64 = st.integers(min_value=0, max_value=2**64 - 1)


@given(U64, st.binary(max_size=8))
def test_packed_int_roundtrip(value, tail):
    cursor = Cursor(pack_int(value) + tail)
    assert cursor.packed_int() == value
    assert cursor.rest() == tail


@pytest.mark.parametrize("value, encoded", [(250, "fa"), (251, "fcfb00"), (65536, "fd000001"), (2**24, "fe0000000100000000")])
def test_packed_int_layout(value, encoded):
    assert pack_int(value).hex() == encoded


@given(U64, st.binary(max_size=8))
def test_varlen_uint_roundtrip(value, tail):
    encoded = pack_varlen_uint(value)
    assert len(encoded) == ((value.bit_length() * 575) >> 12) + 1
    cursor = Cursor(encoded + tail)
    assert cursor.varlen_uint() == value
    assert cursor.rest() == tail


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varlen_int_roundtrip(value):
    assert Cursor(pack_varlen_int(value)).varlen_int() == value


def test_varlen_layout_matches_mysql():
    # one byte: value << 1; two bytes: low bit set, value in the 14 bits after it
    assert pack_varlen_uint(1) == b"\x02"
    assert pack_varlen_uint(127) == b"\xfe"
    assert pack_varlen_uint(128) == b"\x01\x02"
    assert pack_varlen_int(-1) == b"\x02"
    assert Cursor(b"\x06").varlen_int() == -2


@given(st.binary(max_size=64), st.integers(min_value=0, max_value=70))
def test_reads_past_the_end_raise(data, want):
    cursor = Cursor(data)
    if want > len(data):
        with pytest.raises(ShortBody, match=f"needs {want} bytes"):
            cursor.take(want, "field")
    else:
        assert cursor.take(want) == data[:want]


@given(st.binary(max_size=5000))
def test_mariadb_compressed_block_roundtrip(data):
    assert uncompress_block(compress_block(data), len(data)) == data


def test_mariadb_compressed_block_refuses_a_bomb():
    block = compress_block(b"\0" * 100_000)
    with pytest.raises(ShortBody, match="exceeds the 1000-byte limit"):
        uncompress_block(block, 1000)
    with pytest.raises(ShortBody, match="lacks the compression bit"):
        uncompress_block(b"\x01" + block[1:], 10**6)


@given(st.binary(max_size=3000), st.sampled_from([COMPRESSION_ZSTD, COMPRESSION_NONE]))
def test_transaction_payload_roundtrip(events, compression):
    body = transaction_payload_body(events, compression)
    header = parse_payload_header(body)
    assert (header.compression_type, header.uncompressed_size) == (compression, len(events))
    assert open_payload(body, header).read() == events
