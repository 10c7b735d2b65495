"""The online backup stream format (WL#4063): byte vectors from the specification's diagrams,
writer/reader round trips, damaged images and streaming with bounded memory."""

from __future__ import annotations

import io
import random
import tracemalloc
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlog_codec.backup import (
    BackupImageError,
    BackupReader,
    BackupWriter,
    BadPrefixError,
    BlockSizeError,
    Catalogue,
    CatalogueReferenceError,
    CorruptImageError,
    Database,
    DbItem,
    FragmentError,
    Header,
    ImageType,
    ItemType,
    MetadataItem,
    MetadataKind,
    SequenceGapError,
    ServerVersion,
    SnapshotInfo,
    Summary,
    Table,
    TableDataChunk,
    TruncatedImageError,
    read_image,
)
from binlog_codec.backup.encoding import pack_number, pack_time, read_number, read_time
from binlog_codec.backup.image import encode_data_chunk_head, encode_header, encode_item_entry
from binlog_codec.backup.transport import MAGIC, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE, ChunkReader, ChunkWriter
from binlog_codec.errors import BinlogError, TruncatedError
from binlog_codec.wire import Cursor

UTC = timezone.utc
T0 = datetime(2026, 11, 22, 1, 2, 3, tzinfo=UTC)
PREFIX = MAGIC + b"\x01\x00"


def _size(value: int) -> bytes:
    return value.to_bytes(4, "little")


def _chunks(data: bytes) -> list[bytes]:
    reader = ChunkReader(io.BytesIO(data))
    found = []
    while (chunk := reader.next_chunk()) is not None:
        found.append(chunk.data)
    return found


def _stream_of(chunks: list[bytes], block_size: int = 512) -> bytes:
    """Hand-built chunk payloads carried by the transport layer."""
    out = io.BytesIO()
    writer = ChunkWriter(out, block_size)
    for chunk in chunks:
        writer.write_chunk(chunk)
    writer.close()
    return out.getvalue()


def _string(text: str) -> bytes:
    data = text.encode()
    return bytes((len(data),)) + data


def _located(exc: BinlogError, offset: int) -> None:
    assert exc.position == offset
    assert f": at {offset}: " in str(exc)


# -- basic types ------------------------------------------------------------------


def test_variable_length_number_example_of_the_specification():
    value = 0b100101011101011010110100011110
    assert pack_number(value) == bytes((0x9E, 0xDA, 0xD6, 0xAB, 0x02))
    assert read_number(Cursor(bytes((0x9E, 0xDA, 0xD6, 0xAB, 0x02))), "n") == value


@given(st.integers(0, 2**64 - 1))
def test_variable_length_numbers_round_trip(value):
    encoded = pack_number(value)
    assert len(encoded) == max(1, -(-value.bit_length() // 7))
    cursor = Cursor(encoded)
    assert read_number(cursor, "n") == value and cursor.remaining == 0


def test_time_is_year_and_month_in_a_two_byte_number_then_four_bytes():
    assert pack_time(T0) == bytes((0xAB, 0x7E, 22, 1, 2, 3))  # 2026 << 4 | 11 = 0x7EAB, least significant first
    assert read_time(Cursor(bytes((0xAB, 0x7E, 22, 1, 2, 3))), "t") == T0


# -- transport layer: hand-built blocks and fragments ------------------------------


def test_small_fragments_eoc_and_fragment_to_the_end_of_a_block():
    first_block = PREFIX + _size(32) + b"\x00" + b"\x43abc" + b"\x80" + b"\x02de" + b"\x00fghijklm"
    assert len(first_block) == 32
    data = first_block + b"\x41n" + b"\xc0"
    reader = ChunkReader(io.BytesIO(data))
    assert (reader.format_version, reader.block_size, reader.initial_blocks) == (1, 32, 0)
    abc, empty, long = reader.next_chunk(), reader.next_chunk(), reader.next_chunk()
    assert (abc.data, abc.offset) == (b"abc", 15)
    assert (empty.data, empty.offset) == (b"", 19)
    assert (long.data, long.offset) == (b"defghijklmn", 20)
    assert long.file_offset(2) == 24 and long.file_offset(10) == 33  # payload after the headers at 23 and 32
    assert reader.next_chunk() is None and reader.end_of_stream_offset == 34


def test_big_and_huge_fragments():
    big, huge = bytes(range(64)), bytes(4096)
    data = PREFIX + _size(8192) + b"\x00" + b"\x81" + big + b"\x80" + b"\xc1" + huge + b"\x45vwxyz" + b"\xc0"
    assert _chunks(data) == [big, huge + b"vwxyz"]


def test_initial_blocks_repeat_the_block_size():
    block0 = PREFIX + _size(16) + b"\x01" + b"\x00"  # one byte left: an empty fragment
    block1 = _size(16) + b"\x4b" + b"0123456789a"
    block2 = b"\x40" + b"bcdefghijklmnop"  # to the end of the block, last of its chunk
    assert len(block0) == len(block1) == len(block2) == 16
    assert _chunks(block0 + block1 + block2 + b"\xc0") == [b"0123456789a", b"bcdefghijklmnop"]


def test_writer_blocks_headers_and_fragment_choice():
    out = io.BytesIO()
    writer = ChunkWriter(out, 256)
    writer.write_chunk(b"x" * 3)  # small, last
    writer.write_chunk(b"y" * 64)  # big, then EOC
    writer.write_chunk(b"z" * 300)  # to the end of the block; in the next: big, small last
    writer.close()
    data = out.getvalue()
    assert data[:15] == PREFIX + _size(256) + b"\x02"
    assert data[15:19] == b"\x43xxx"
    assert data[19] == 0x81 and data[20:84] == b"y" * 64 and data[84] == 0x80
    assert data[85] == 0x00 and data[86:256] == b"z" * 170
    assert data[256:260] == _size(256)  # the first initial block
    assert data[260] == 0x82 and data[389] == 0x42 and data[390:392] == b"zz"
    assert data[392:] == b"\xc0"  # the end-of-stream marker ends the last block
    assert _chunks(data) == [b"x" * 3, b"y" * 64, b"z" * 300]


@settings(max_examples=150, deadline=None)
@given(
    block_size=st.integers(MIN_BLOCK_SIZE, 300),
    sizes=st.lists(st.integers(0, 1200), max_size=12),
)
def test_transport_round_trip_fills_every_block(block_size, sizes):
    chunks = [bytes((i % 251,)) * size for i, size in enumerate(sizes)]
    data = _stream_of(chunks, block_size)
    assert _chunks(data) == chunks
    for start in (block_size, 2 * block_size):  # the initial blocks, when the image reaches them
        if start < len(data) - 1:
            assert data[start : start + 4] == _size(block_size)


def test_several_chunks_share_a_block():
    data = _stream_of([b"abc"] * 100, 512)
    assert len(data) < 512  # 100 chunks of 4 bytes each, in the first block
    assert _chunks(data) == [b"abc"] * 100


# -- image format: hand-built chunks ------------------------------------------------


def _hand_built_image() -> bytes:
    header = b"\x05\x00" + b"\xab\x7e\x16\x01\x02\x03" + b"\x02" + b"\x06\x00\x05" + _string("6.0.5-alpha")
    snapshot_cs = b"\x02" + b"\x01\x00" + b"\x00\x00" + b"\x02"
    snapshot_native = b"\x00" + b"\x01\x00" + b"\x07\x00" + b"\x01" + _string("MyISAM") + b"\x01\x02" + b"ext"
    summary = (
        b"\xab\x7e\x16\x01\x02\x04" + b"\xab\x7e\x16\x01\x02\x05"
        + b"\x04\x01\x00\x00" + _string("bin.000042") + b"\x78\x00\x00\x00" + _string("bin.000042")
    )
    catalogue = (
        _string("utf8") + _string("latin1") + b"\x00" + _string("root") + _string("app") + b"\x00"
        + _string("shop") + b"\x00" + _string("x") + b"\x80" + b"\x02\x00" + b"hi"
    )
    shop = (
        b"\x05\x00" + _string("orders") + b"\x00" + b"\x01"
        + b"\x06\x00" + _string("v")
        + b"\x05\x00" + _string("items") + b"\x80" + b"\x02" + b"\x03abc"
        + b"\x05\x00" + _string("stock") + b"\x00" + b"\x01"
    )
    x = b"\x00\x00"
    global_items = b"\x04\x00" + b"\x40" + b"\x00" + _string("CREATE DATABASE shop")
    shop_tables = (
        b"\x05\x00" + b"\xc0" + b"\x01\x00" + b"\x02\x00xy" + _string("CREATE TABLE orders (a INT)")
        + b"\x05\x00" + b"\x00" + b"\x02\x00"
    )
    x_tables = b"\x00\x00"
    other = b"\x06\x00" + b"\x40" + b"\x01\x00" + _string("CREATE VIEW v AS SELECT 1") + b"\x00\x00" \
        + b"\x03\x00" + b"\x80" + b"\x00\x00\x03" + b"\x01\x00P"
    data = [
        b"\x01" + b"\x00\x00" + b"\x00" + b"\x00" + b"row1",
        b"\x02" + b"\x00\x00" + b"\x01" + b"\x00",
        b"\x01" + b"\x01\x00" + b"\x01" + b"\x01" + b"row2",
    ]
    return _stream_of(
        [header, snapshot_cs, snapshot_native, summary, catalogue, shop, x,
         global_items, shop_tables, x_tables, other, *data]
    )


def test_hand_built_image_decodes_to_its_fields():
    image = BackupReader(io.BytesIO(_hand_built_image()))
    at = lambda second: datetime(2026, 11, 22, 1, 2, second, tzinfo=UTC)  # noqa: E731
    assert image.header == Header(
        creation_time=at(3),
        server_version=ServerVersion(6, 0, 5, "6.0.5-alpha"),
        snapshots=(
            SnapshotInfo(ImageType.CONSISTENT_SNAPSHOT, table_count=2, format_version=1),
            SnapshotInfo(ImageType.NATIVE, 1, 1, 7, "MyISAM", (1, 2), b"ext"),
        ),
        summary_in_preamble=True,
        has_binlog_position=True,
        big_endian=False,
    )
    assert image.summary == Summary(at(4), at(5), "bin.000042", 260, "bin.000042", 120)
    assert image.catalogue == Catalogue(
        charsets=("utf8", "latin1"),
        users=("root", "app"),
        databases=(
            Database("shop", (Table("orders", 1), DbItem(ItemType.VIEW, "v"), Table("items", 2, b"abc"),
                              Table("stock", 1))),
            Database("x", (), b"hi"),
        ),
    )
    assert image.catalogue.snapshot_tables(1) == [(0, Table("orders", 1)), (0, Table("stock", 1))]
    assert image.metadata == [
        MetadataItem(MetadataKind.GLOBAL, ItemType.DATABASE, 0, create_statement="CREATE DATABASE shop"),
        MetadataItem(MetadataKind.TABLE, ItemType.TABLE, 0, database=0, snapshot_number=1, extra_data=b"xy",
                     create_statement="CREATE TABLE orders (a INT)"),
        MetadataItem(MetadataKind.TABLE, ItemType.TABLE, 0, database=0, snapshot_number=2),
        MetadataItem(MetadataKind.PER_DB, ItemType.VIEW, 1, database=0, create_statement="CREATE VIEW v AS SELECT 1"),
        MetadataItem(MetadataKind.PER_TABLE, ItemType.PRIVILEGE, 0, database=0, table=3, extra_data=b"P"),
    ]
    assert list(image.table_data()) == [
        TableDataChunk(1, 0, b"row1", False, 0),
        TableDataChunk(2, 0, b"", True, 0),
        TableDataChunk(1, 1, b"row2", True, 1),
    ]


@pytest.mark.parametrize("databases", [b"", b"\x00"], ids=["nothing", "null string"])
def test_summary_at_the_end_and_a_catalogue_without_databases(databases):
    header = b"\x04\x00" + b"\xab\x7e\x16\x01\x02\x03" + b"\x00" + b"\x0a\x05\x00" + _string("10.5.0-MariaDB")
    catalogue = _string("utf8mb4") + _string("utf8mb4") + b"\x00" + _string("root") + b"\x00" + databases
    summary = b"\x00" + bytes(pack_time(T0)) * 2 + b"\x04\x00\x00\x00" + _string("b.1") + b"\x04\x00\x00\x00" \
        + _string("b.1")
    image = BackupReader(io.BytesIO(_stream_of([header, catalogue, b"\x00\x00", summary])))
    assert image.header.summary_in_preamble is False and image.header.snapshots == ()
    assert image.header.server_version == ServerVersion(10, 5, 0, "10.5.0-MariaDB")
    assert image.catalogue == Catalogue(("utf8mb4", "utf8mb4"), ("root",))
    assert image.metadata == []
    assert list(image.table_data()) == []
    assert image.summary == Summary(T0, T0, "b.1", 4, "b.1", 4)


def test_no_binlog_position_flag_reads_the_positions_as_none():
    header = Header(T0, ServerVersion(6, 0, 5), (), has_binlog_position=False)
    out = io.BytesIO()
    writer = BackupWriter(out, header=header, block_size=64)
    writer.write_catalogue(Catalogue(("utf8", "utf8"), ("root",)))
    writer.write_metadata()
    writer.finish(Summary(T0, T0))
    out.seek(0)
    assert BackupReader(out).summary == Summary(T0, T0, None, None, None, None)
    assert out.getvalue()[16:18] == b"\x00\x00"  # flags, after the header chunk's fragment header at 15


# -- writer/reader round trip --------------------------------------------------------

names = st.text(min_size=1, max_size=10)
times = st.datetimes(datetime(1, 1, 1), datetime(4095, 12, 31), timezones=st.just(UTC)).map(
    lambda moment: moment.replace(microsecond=0)
)
blobs = st.binary(max_size=20)


@st.composite
def images(draw):
    """(block size, header, catalogue, metadata, table data, summary) of a random valid image."""
    block_size = draw(st.integers(MIN_BLOCK_SIZE, MAX_BLOCK_SIZE))
    snapshot_count = draw(st.integers(0, 3))
    databases = []
    for _ in range(draw(st.integers(0, 3))):
        items = []
        for _ in range(draw(st.integers(0, 4))):
            if snapshot_count and draw(st.booleans()):
                items.append(Table(draw(names), draw(st.integers(1, snapshot_count)),
                                   draw(st.none() | st.binary(max_size=255))))
            else:
                items.append(DbItem(draw(st.sampled_from([ItemType.VIEW, ItemType.PRIVILEGE])), draw(names)))
        databases.append(Database(draw(names), tuple(items), draw(st.none() | blobs)))
    catalogue = Catalogue(tuple(draw(st.lists(names, min_size=2, max_size=4))),
                          tuple(draw(st.lists(names, max_size=3))), tuple(databases))
    snapshots = []
    for number in range(1, snapshot_count + 1):
        image_type = draw(st.sampled_from(ImageType))
        native = image_type == ImageType.NATIVE
        snapshots.append(SnapshotInfo(
            image_type, len(catalogue.snapshot_tables(number)), draw(st.integers(0, 0xFFFF)),
            draw(st.integers(0, 0xFFFF)), draw(names) if native else None,
            (draw(st.integers(0, 255)), draw(st.integers(0, 255))) if native else None, draw(blobs),
        ))
    header = Header(draw(times), ServerVersion(draw(st.integers(0, 255)), draw(st.integers(0, 255)),
                                               draw(st.integers(0, 255)), draw(st.text(max_size=20))),
                    tuple(snapshots), draw(st.booleans()), draw(st.booleans()), draw(st.booleans()), draw(blobs))
    statement = st.none() | st.text(max_size=40)
    extra = st.none() | blobs
    metadata = [MetadataItem(MetadataKind.GLOBAL, ItemType.DATABASE, number, extra_data=draw(extra),
                             create_statement=draw(statement))
                for number in range(len(databases)) if draw(st.booleans())]
    for db_number in range(len(databases)):
        for number in range(1, snapshot_count + 1):
            for position, (owner, _) in enumerate(catalogue.snapshot_tables(number)):
                if owner == db_number:
                    metadata.append(MetadataItem(MetadataKind.TABLE, ItemType.TABLE, position, db_number, number,
                                                 extra_data=draw(extra), create_statement=draw(statement)))
    for db_number, database in enumerate(databases):
        for position, item in enumerate(database.items):
            if isinstance(item, DbItem):
                metadata.append(MetadataItem(MetadataKind.PER_DB, item.type, position, db_number,
                                             create_statement=draw(statement)))
    for db_number, database in enumerate(databases):
        for position, item in enumerate(database.items):
            if isinstance(item, Table) and draw(st.booleans()):
                metadata.append(MetadataItem(MetadataKind.PER_TABLE, ItemType.PRIVILEGE, draw(st.integers(0, 300)),
                                             db_number, table=position, extra_data=draw(extra)))
    data = []
    tables = [(number, position) for number in range(1, snapshot_count + 1)
              for position in range(len(catalogue.snapshot_tables(number)))]
    if tables:
        sizes = st.integers(0, 64) | st.integers(0, 3 * block_size)
        for _ in range(draw(st.integers(0, 6))):
            snapshot, table = draw(st.sampled_from(tables))
            seed = draw(st.integers(0, 2**32))
            data.append((snapshot, table, random.Random(seed).randbytes(draw(sizes))))
    summary = Summary(draw(times), draw(times))
    if header.has_binlog_position:
        summary = Summary(summary.vp_time, summary.end_time, draw(names), draw(st.integers(0, 2**32 - 1)),
                          draw(names), draw(st.integers(0, 2**32 - 1)))
    return block_size, header, catalogue, metadata, data, summary


def _write(block_size, header, catalogue, metadata, data, summary) -> bytes:
    out = io.BytesIO()
    writer = BackupWriter(out, header=header, block_size=block_size,
                          summary=summary if header.summary_in_preamble else None)
    writer.write_catalogue(catalogue)
    writer.write_metadata(metadata)
    last_chunk = {(snapshot, table): index for index, (snapshot, table, _) in enumerate(data)}
    for index, (snapshot, table, chunk) in enumerate(data):
        writer.write_table_data(snapshot, table, chunk, last=last_chunk[snapshot, table] == index)
    size = writer.finish(None if header.summary_in_preamble else summary)
    assert size == len(out.getvalue())
    return out.getvalue()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(images())
def test_writer_reader_round_trip(image):
    block_size, header, catalogue, metadata, data, summary = image
    written = _write(*image)
    reader = BackupReader(io.BytesIO(written))
    assert reader.block_size == block_size
    assert reader.header == header
    assert reader.catalogue == catalogue
    assert reader.metadata == metadata
    chunks = list(reader.table_data())
    assert [(c.snapshot_number, c.table_number, c.data) for c in chunks] == data
    per_snapshot: dict[int, int] = {}
    for chunk in chunks:
        assert chunk.sequence_number == per_snapshot.get(chunk.snapshot_number, 0)
        per_snapshot[chunk.snapshot_number] = chunk.sequence_number + 1
    assert reader.summary == summary


def test_writer_refuses_what_the_format_cannot_hold():
    header = Header(T0, ServerVersion(6, 0, 5), (SnapshotInfo(ImageType.DEFAULT, 1),))
    with pytest.raises(ValueError, match="summary in the preamble"):
        BackupWriter(io.BytesIO(), header=Header(T0, ServerVersion(6, 0, 5), (), summary_in_preamble=True))
    writer = BackupWriter(io.BytesIO(), header=header)
    with pytest.raises(ValueError, match="the catalogue has 0"):
        writer.write_catalogue(Catalogue(("utf8", "utf8"), ("root",)))
    with pytest.raises(ValueError, match="two special ones"):
        writer.write_catalogue(Catalogue(("utf8",), ("root",), (Database("d", (Table("t", 1),)),)))
    with pytest.raises(ValueError, match="cannot write the table data now"):
        writer.write_table_data(1, 0, b"")
    writer.write_catalogue(Catalogue(("utf8", "utf8"), ("root",), (Database("d", (Table("t", 1),)),)))
    with pytest.raises(ValueError, match="past the catalogue's 1 databases"):
        writer.write_metadata([MetadataItem(MetadataKind.PER_DB, ItemType.VIEW, 0, database=1)])
    writer.write_metadata()
    with pytest.raises(ValueError, match="not in the catalogue"):
        writer.write_table_data(1, 1, b"")
    writer.write_table_data(1, 0, b"", last=True)
    with pytest.raises(ValueError, match="already had its last chunk"):
        writer.write_table_data(1, 0, b"")
    with pytest.raises(ValueError, match="needs it"):
        writer.finish()


# -- damaged and hostile images ------------------------------------------------------


def _small_image(block_size: int = 64, data=(b"a" * 100, b"b" * 10)) -> bytes:
    header = Header(T0, ServerVersion(6, 0, 5, "6.0.5"), (SnapshotInfo(ImageType.DEFAULT, 1),))
    catalogue = Catalogue(("utf8", "utf8"), ("root",), (Database("d", (Table("t", 1),)),))
    chunks = [(1, 0, chunk) for chunk in data]
    return _write(block_size, header, catalogue, [], chunks, Summary(T0, T0, "b.1", 4, "b.1", 4))


def _read_all(data: bytes) -> None:
    reader = BackupReader(io.BytesIO(data), "damaged.bak")
    list(reader.table_data())
    assert reader.summary


def test_wrong_magic():
    data = bytearray(_small_image())
    data[3] ^= 0xFF
    with pytest.raises(BadPrefixError, match="expected the magic number e0 f8 7f 7e 7e 5f 0f 03") as caught:
        _read_all(bytes(data))
    _located(caught.value, 0)
    assert str(caught.value).startswith("damaged.bak: at 0: ")


def test_unsupported_version():
    data = bytearray(_small_image())
    data[8] = 2
    with pytest.raises(BadPrefixError, match=r"version 2 \(expected 1\)") as caught:
        _read_all(bytes(data))
    _located(caught.value, 8)


@pytest.mark.parametrize("size", [0, 15, 0x10000, 0xFFFFFFFF])
def test_block_size_out_of_range(size):
    data = bytearray(_small_image())
    data[10:14] = _size(size)
    with pytest.raises(BlockSizeError, match=f"block size {size} in the first block, expected 16..65535") as caught:
        _read_all(bytes(data))
    _located(caught.value, 10)


def test_block_size_disagreeing_between_the_first_blocks():
    data = bytearray(_small_image(64))
    assert data[128:132] == _size(64)
    data[128:132] = _size(65)
    with pytest.raises(BlockSizeError, match="block size 65 in initial block 2 disagrees with the first block's 64") \
            as caught:
        _read_all(bytes(data))
    _located(caught.value, 128)


def test_fragment_running_past_its_block():
    data = PREFIX + _size(32) + b"\x00" + b"\x3f" + b"x" * 16 + b"\xc0"
    with pytest.raises(FragmentError, match="announces 63 bytes, running past the end of its block at 32") as caught:
        _chunks(data)
    _located(caught.value, 15)


def test_end_of_stream_inside_a_chunk():
    data = PREFIX + _size(32) + b"\x00" + b"\x02ab" + b"\xc0"
    with pytest.raises(FragmentError, match="end-of-stream marker inside a chunk") as caught:
        _chunks(data)
    _located(caught.value, 18)


def test_chunk_sequence_gap():
    header = Header(T0, ServerVersion(6, 0, 5), (SnapshotInfo(ImageType.DEFAULT, 1),), summary_in_preamble=True)
    catalogue = _string("utf8") * 2 + b"\x00" + _string("root") + b"\x00" + _string("d") + b"\x00"
    chunks = [*encode_header(header), bytes(pack_time(T0)) * 2 + bytes(10), catalogue,
              b"\x05\x00" + _string("t") + b"\x00\x01", b"\x00\x00", b"\x00\x00", b"\x00\x00",
              encode_data_chunk_head(1, 0, False, 0) + b"x", encode_data_chunk_head(1, 2, True, 0) + b"y"]
    data = _stream_of(chunks)
    gap_chunk = data.index(encode_data_chunk_head(1, 2, True, 0)) - 1  # its fragment header
    with pytest.raises(SequenceGapError, match="sequence number 2, expected 1") as caught:
        _read_all(data)
    _located(caught.value, gap_chunk + 2)  # the seq no field, after the fragment header and the snapshot no


def test_every_truncation_is_a_located_truncation_error():
    data = _small_image(64)
    for cut in range(1, len(data)):
        with pytest.raises(TruncatedImageError) as caught:
            _read_all(data[:cut])
        assert isinstance(caught.value, TruncatedError)
        assert 0 <= caught.value.position <= cut
        assert f": at {caught.value.position}: " in str(caught.value)


def test_image_without_its_summary():
    data = _small_image(64)
    without = _stream_of(_chunks(data)[:-1], 64)
    with pytest.raises(TruncatedImageError, match="without its summary") as caught:
        _read_all(without)
    _located(caught.value, len(without) - 1)  # the end-of-stream marker


def _image_with(catalogue_chunks: list[bytes], metadata_chunks: list[bytes], data_chunks=()) -> bytes:
    header = Header(T0, ServerVersion(6, 0, 5), (SnapshotInfo(ImageType.DEFAULT, 1),), summary_in_preamble=True)
    summary = bytes(pack_time(T0)) * 2 + bytes(10)
    return _stream_of([*encode_header(header), summary, *catalogue_chunks, *metadata_chunks, *data_chunks])


CATALOGUE = _string("utf8") * 2 + b"\x00" + _string("root") + b"\x00" + _string("d") + b"\x00"


def test_catalogue_table_in_a_snapshot_the_header_does_not_describe():
    data = _image_with([CATALOGUE, b"\x05\x00" + _string("t") + b"\x00\x03"], [])
    with pytest.raises(CatalogueReferenceError, match="snapshot 3, but the header describes snapshots 1..1") \
            as caught:
        _read_all(data)
    _located(caught.value, data.index(b"\x01t\x00\x03") + 3)


def test_metadata_entry_pointing_past_the_catalogue():
    entry = encode_item_entry(MetadataItem(MetadataKind.PER_DB, ItemType.VIEW, 0, database=5))
    data = _image_with([CATALOGUE, b"\x05\x00" + _string("t") + b"\x00\x01"],
                       [b"\x00\x00", b"\x00\x00", entry + b"\x00\x00"])
    with pytest.raises(CatalogueReferenceError, match="database 5 is past the catalogue's 1 databases") as caught:
        _read_all(data)
    _located(caught.value, data.index(entry))


def test_table_data_chunk_for_a_table_past_the_snapshot():
    head = encode_data_chunk_head(1, 0, False, 7)
    data = _image_with([CATALOGUE, b"\x05\x00" + _string("t") + b"\x00\x01"],
                       [b"\x00\x00", b"\x00\x00", b"\x00\x00"], [head + b"rows"])
    with pytest.raises(CatalogueReferenceError, match="table 7 of snapshot 1: the catalogue has 1 tables") as caught:
        _read_all(data)
    _located(caught.value, data.index(head) - 1)


@pytest.mark.parametrize("hostile", [pack_number(2**62) + b"x", b"\xff" * 12])
def test_hostile_string_sizes_never_allocate(hostile):
    catalogue = _string("utf8") * 2 + b"\x00" + hostile
    data = _image_with([catalogue], [])
    tracemalloc.start()
    try:
        with pytest.raises(CorruptImageError) as caught:
            _read_all(data)
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
    _located(caught.value, data.index(hostile))


def test_hostile_extra_data_length():
    catalogue = _string("utf8") * 2 + b"\x00" + b"\x00" + _string("d") + b"\x80" + b"\xff\xff" + b"short"
    data = _image_with([catalogue], [])
    with pytest.raises(CorruptImageError, match="database extra data: needs 65535 bytes") as caught:
        _read_all(data)
    _located(caught.value, data.index(b"short"))


def test_errors_are_binlog_errors():
    for cls in (BadPrefixError, BlockSizeError, FragmentError, TruncatedImageError, SequenceGapError,
                CatalogueReferenceError, CorruptImageError):
        assert issubclass(cls, BackupImageError) and issubclass(cls, BinlogError)


# -- streaming -------------------------------------------------------------------------


def test_a_200_mb_image_is_read_with_bounded_memory(tmp_path):
    block_size = 32 * 1024
    chunk = random.Random(7).randbytes(256 * 1024)
    chunks = 800  # 200 MiB
    header = Header(T0, ServerVersion(6, 0, 5), (SnapshotInfo(ImageType.DEFAULT, 1),))
    path = tmp_path / "big.bak"
    with path.open("wb") as stream:
        writer = BackupWriter(stream, header=header, block_size=block_size)
        writer.write_catalogue(Catalogue(("utf8", "utf8"), ("root",), (Database("d", (Table("t", 1),)),)))
        writer.write_metadata()
        for index in range(chunks):
            writer.write_table_data(1, 0, chunk, last=index == chunks - 1)
        writer.finish(Summary(T0, T0, "b.1", 4, "b.1", 4))
    assert path.stat().st_size > 200 * 1024 * 1024
    tracemalloc.start()
    try:
        count = total = 0
        with read_image(path) as image:
            for found in image.table_data():
                count += 1
                total += len(found.data)
                assert found.data == chunk
            summary = image.summary
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (count, total, summary.binlog_file) == (chunks, chunks * len(chunk), "b.1")
    assert peak < block_size + 4 * len(chunk) + (1 << 20), peak


def test_bytes_after_the_end_of_stream_marker_are_ignored_with_a_warning(caplog):
    data = _small_image(64)
    with caplog.at_level("WARNING", logger="binlog_codec.backup.transport"):
        _read_all(data + b"junk")
    assert f"bytes after the end-of-stream marker at {len(data) - 1} are ignored" in caplog.text


def test_an_empty_file_is_not_a_backup_image():
    with pytest.raises(BadPrefixError, match="found nothing") as caught:
        _read_all(b"")
    _located(caught.value, 0)
