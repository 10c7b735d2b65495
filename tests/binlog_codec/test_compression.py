"""binlog_codec.compression: archived binlogs told by their magic and written back out."""

from __future__ import annotations

import gzip

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from binlog_codec.compression import compression_of, decompress
from binlog_codec.errors import BinlogError

PACK = {"gzip": gzip.compress, "zstd": lambda data: zstandard.ZstdCompressor().compress(data)}


@settings(max_examples=50, deadline=None)
@given(kind=st.sampled_from(sorted(PACK)), data=st.binary(max_size=20_000))
def test_a_compressed_file_decompresses_to_its_bytes(tmp_path_factory, kind, data):
    folder = tmp_path_factory.mktemp("c")
    packed, out = folder / "f", folder / "out"
    packed.write_bytes(PACK[kind](data))
    assert compression_of(packed) == kind
    decompress(packed, out, name="f", kind=kind)
    assert out.read_bytes() == data


def test_plain_bytes_are_no_compression_and_broken_ones_are_named(tmp_path):
    plain = tmp_path / "mariadb-bin.000001"
    plain.write_bytes(b"\xfebin" + bytes(100))
    assert compression_of(plain) is None
    broken = tmp_path / "x.gz"
    broken.write_bytes(gzip.compress(b"binlog bytes" * 100)[:30])
    with pytest.raises(BinlogError, match=r"^x.gz: gzip-compressed, and its gzip data does not decompress"):
        decompress(broken, tmp_path / "out", name="x.gz", kind="gzip")
