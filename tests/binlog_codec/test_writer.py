"""The writer re-encodes real events byte for byte, and the reader reads what it writes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlog_codec.event_types import EventType
from binlog_codec.events import read
from binlog_codec.reader import BinlogReader
from binlog_codec.writer import BinlogWriter, encode_event
from fixture_facts import good_files, path


@pytest.mark.parametrize("name", good_files())
def test_every_real_event_reencodes_to_identical_bytes(name):
    data = path(name).read_bytes()
    count = 0
    for event in BinlogReader(path(name)):
        if event.inner_offset is not None:
            continue
        assert encode_event(event.header, event.body, checksum=event.checksum is not None) == data[event.pos : event.end_pos]
        count += 1
    assert count > 0


@given(
    st.lists(st.tuples(st.sampled_from([EventType.ROWS_QUERY, EventType.XID]), st.binary(max_size=300)), max_size=20),
    st.booleans(),
)
def test_reader_reads_what_the_writer_writes(tmp_path_factory, events, checksum):
    writer = BinlogWriter(checksum=checksum)
    positions = []
    for type_code, payload in events:
        body = b"\0" + payload if type_code == EventType.ROWS_QUERY else payload[:8].ljust(8, b"\0")
        positions.append((writer.add(type_code, body), body))
    target = tmp_path_factory.mktemp("w") / "written.000001"
    target.write_bytes(writer.bytes())
    raws = list(BinlogReader(target))[1:]
    assert [(r.pos, r.body) for r in raws] == positions
    assert all(r.header.log_pos == r.end_pos for r in raws)
    decoded = list(read(target))
    assert decoded[0].checksum == ("CRC32" if checksum else "OFF")
