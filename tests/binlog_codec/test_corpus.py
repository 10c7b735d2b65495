"""The synthetic MySQL 8.0 corpus: valid, deterministic, and applying it gives the documents it promises."""

from __future__ import annotations

import pytest

from binlog_codec.cli import main as binlog_codec_main
from binlog_codec.corpus import write_corpus
from binlog_codec.event_types import EventType
from binlog_codec.events import decode
from binlog_codec.json_diff import apply, decode_diffs
from binlog_codec.reader import BinlogReader
from binlog_codec.rows import read_rows
from binlog_codec.transactions import scan_transactions

TRANSACTIONS = 120


def _apply(path) -> dict[str, dict[int, dict]]:
    """Replay the file's row changes as a warehouse would: rows by primary key, the JSON diffs of
    partial columns applied to the document held so far."""
    tables: dict[str, dict[int, dict]] = {}
    for record in read_rows(path):
        rows = tables.setdefault(record.table, {})
        change = record.change
        row_id = (change.before or change.after)["id"]
        if record.kind == "delete":
            del rows[row_id]
            continue
        row = dict(rows.get(row_id, {}))
        for name, value in change.after.items():
            row[name] = apply(row[name], decode_diffs(value, column=name)) if name in change.partial else value
        rows[row_id] = row
    return tables


@pytest.mark.parametrize("image, compress", [("full", False), ("minimal", False), ("noblob", True), ("minimal", True)])
def test_applying_the_corpus_gives_the_expected_final_rows(tmp_path, image, compress):
    target = tmp_path / "corpus.000001"
    summary = write_corpus(target, transactions=TRANSACTIONS, seed=11, image=image, compress=compress)
    assert _apply(target) == summary.final_rows
    counts = summary.counts
    assert counts["transactions"] == TRANSACTIONS
    assert min(counts["insert"], counts["update"], counts["delete"]) > 0
    assert min(counts["REPLACE"], counts["INSERT"], counts["REMOVE"]) > 0
    assert counts["partial_json"] > 0 and counts["full_json_fallback"] > 0  # both sides of Def1 < Def2


@pytest.mark.parametrize("compress", [False, True])
def test_corpus_is_well_formed(tmp_path, capsys, compress):
    """``binlog-codec verify`` passes (magic, framing, CRC32, every body) and every transaction
    is GTID, BEGIN ... XID, with a transaction_length that spans it exactly."""
    target = tmp_path / "corpus.000001"
    write_corpus(target, transactions=60, seed=3, image="full", compress=compress)
    assert binlog_codec_main(["verify", str(target)]) == 0
    assert "OK" in capsys.readouterr().out
    transactions = list(scan_transactions(target))
    assert len(transactions) == 60
    outer = [raw for raw in BinlogReader(target) if raw.inner_offset is None][1:]
    gtids = [raw for raw in outer if raw.type_code == EventType.GTID]
    ends = [raw.pos for raw in gtids[1:]] + [outer[-1].end_pos]
    assert [decode(raw).transaction_length for raw in gtids] == [end - raw.pos for raw, end in zip(gtids, ends)]
    inside = {raw.type_code for raw in BinlogReader(target) if raw.inner_offset is not None}
    assert (EventType.TRANSACTION_PAYLOAD in {raw.type_code for raw in outer}) == compress
    assert not compress or inside >= {EventType.QUERY, EventType.TABLE_MAP, EventType.PARTIAL_UPDATE_ROWS, EventType.XID}


def test_corpus_is_deterministic_for_a_seed(tmp_path):
    first, second, other = (tmp_path / name for name in ("a", "b", "c"))
    write_corpus(first, transactions=40, seed=5, compress=True)
    write_corpus(second, transactions=40, seed=5, compress=True)
    write_corpus(other, transactions=40, seed=6, compress=True)
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() != other.read_bytes()


def test_a_corpus_file_can_go_on_from_another_ones_last_transaction(tmp_path):
    from binlog_codec.transactions import scan_transactions

    write_corpus(tmp_path / "c.000001", transactions=3, seed=1)
    write_corpus(tmp_path / "c.000002", transactions=2, seed=2, first_transaction=3)
    gtids = [t.gtid.rsplit(":", 1)[1] for name in ("c.000001", "c.000002") for t in scan_transactions(tmp_path / name)]
    assert gtids == ["1", "2", "3", "4", "5"]


def test_corpus_keeps_live_rows_bounded(tmp_path):
    summary = write_corpus(tmp_path / "corpus.000001", transactions=400, seed=2, max_rows=10)
    assert all(len(rows) <= 10 for rows in summary.final_rows.values())


def test_unknown_image_is_refused(tmp_path):
    with pytest.raises(ValueError, match="full, minimal, noblob"):
        write_corpus(tmp_path / "x", transactions=1, seed=1, image="compact")


def test_corpus_stops_once_it_reaches_the_target_size(tmp_path):
    target = tmp_path / "corpus.000001"
    summary = write_corpus(target, seed=4, image="full", target_bytes=200_000)
    size = target.stat().st_size
    assert 200_000 <= size < 220_000  # one transaction past the target at most
    assert summary.transactions == summary.counts["transactions"] > 100
    assert sum(1 for _ in read_rows(target)) == summary.counts["insert"] + summary.counts["update"] + summary.counts["delete"]


def test_corpus_stops_at_the_first_limit_reached(tmp_path):
    summary = write_corpus(tmp_path / "corpus.000001", transactions=5, seed=4, target_bytes=10**9)
    assert summary.transactions == 5


def test_corpus_needs_a_limit(tmp_path):
    with pytest.raises(ValueError, match="transactions, target_bytes"):
        write_corpus(tmp_path / "x", seed=1)
