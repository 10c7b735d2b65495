"""Split planning (:mod:`spark_jobs.splits`) on the shared fixtures, without Spark.

* Splits are contiguous ranges of whole transactions: every complete
  transaction of a file is in exactly one split, at any target size.
* Decoding every split of a file in order gives exactly ``read_rows`` of the
  file's complete part, with one transaction per split and with one split per file.
* A file that ends inside a transaction is planned up to the last complete
  one, and the plan says where the next run resumes; a corrupt event in that
  unfinished transaction is kept as the file's error; a file that ends inside
  an event is a located error.
* A later format description that frames events differently governs the
  splits after it.
"""

from __future__ import annotations

import dataclasses

import pytest

from binlog_codec.errors import BinlogError, CorruptEventError, TruncatedError
from binlog_codec.reader import BinlogReader
from binlog_codec.rows import read_rows
from binlog_codec.transactions import scan_transactions
from fixture_facts import good_files, path
import spark_jobs.splits as splits_module
from binlog_codec.corpus import write_corpus
from spark_jobs.splits import MIN_BALANCED_BYTES, SPLITS_PER_SLOT, FilePlan, balanced_target, plan_splits, split_rows, split_transactions

TARGETS = [1, 700, 64 << 20]
SAKILA = "osheroff__mysql-binlog-connector-java/mysql-bin.sakila"
CRC32 = "osheroff__mysql-binlog-connector-java/mysql-bin.checksum-crc32"
NO_CHECKSUMS = "osheroff__mysql-binlog-connector-java/mysql-bin.checksum-none"


def only_file(plan) -> FilePlan:
    (file_plan,) = plan.files
    return file_plan


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", good_files())
def test_splits_cover_every_complete_transaction_once(name, target):
    plan = plan_splits([path(name)], target)
    file_plan = only_file(plan)
    complete = [t for t in scan_transactions(path(name)) if t.end <= file_plan.resume_position]
    inside = [[t for t in complete if split.start <= t.start and t.end <= split.end] for split in plan]
    assert [t for group in inside for t in group] == complete  # each exactly once, in order
    assert all(group and group[0].start == s.start and group[-1].end == s.end for group, s in zip(inside, plan))
    assert [s.transactions for s in plan] == [len(group) for group in inside]
    assert [s.index for s in plan] == list(range(len(plan)))
    assert all(len(group) == 1 or split.size <= target for group, split in zip(inside, plan))
    if target == 1:
        assert len(plan) == len(complete)
    if target == TARGETS[-1]:
        assert len(plan) == min(1, len(complete))
    assert plan.bytes == sum(s.size for s in plan)


@pytest.mark.parametrize("target", [1, 64 << 20])
@pytest.mark.parametrize("name", good_files())
def test_decoding_every_split_gives_read_rows(name, target):
    plan = plan_splits([path(name)], target)
    expected = list(read_rows(path(name), stop_position=only_file(plan).resume_position))
    assert [record for split in plan for record in split_rows(split)] == expected
    transactions = [t for split in plan for t in split_transactions(split)]
    assert transactions == [t for t in scan_transactions(path(name)) if t.end <= only_file(plan).resume_position]


@pytest.mark.parametrize("name", good_files())
def test_a_file_of_complete_transactions_resumes_at_its_end(name):
    file_plan = only_file(plan_splits([path(name)]))
    transactions = list(scan_transactions(path(name)))
    if transactions and not transactions[-1].complete:
        assert file_plan.resume_position == transactions[-1].start and not file_plan.complete
    else:
        assert file_plan.resume_position == path(name).stat().st_size and file_plan.complete
    assert file_plan.tail_error is None


def test_fixtures_that_end_inside_a_transaction():
    padding = only_file(plan_splits([path("osheroff__mysql-binlog-connector-java/mysql-bin.aurora-padding")]))
    assert (padding.splits, padding.resume_position, padding.size) == ((), 216, 1294)  # ends right after BEGIN
    statements = only_file(plan_splits([path("blackbeam__rust_mysql_common/ver_5_1-wl2325_s.001")]))
    assert (statements.splits, statements.resume_position) == ((), 102)  # BEGIN, never committed


def test_a_corrupt_event_after_the_last_complete_transaction_is_kept_as_the_tail_error():
    name = "blackbeam__rust_mysql_common/corrupt-relay-bin.000624"  # BEGIN, INTVAR, a QUERY of garbage, ROTATE
    file_plan = only_file(plan_splits([path(name)]))
    assert file_plan.resume_position == 91117 and file_plan.splits[-1].end == 91117
    error = file_plan.tail_error
    assert isinstance(error, CorruptEventError) and (error.file, error.position) == (str(path(name)), 91204)


def _events(name: str):
    return list(BinlogReader(path(name), unwrap_payloads=False))


def test_a_file_being_written_is_planned_up_to_its_last_complete_transaction(tmp_path):
    data = path(SAKILA).read_bytes()
    transactions = list(scan_transactions(path(SAKILA)))
    last = transactions[-1]
    inside = next(e for e in _events(SAKILA) if last.start < e.pos and e.end_pos < last.end)
    growing = tmp_path / "mysql-bin.000007"
    growing.write_bytes(data[: inside.end_pos])  # the last transaction half written, at an event boundary
    plan = plan_splits([growing], 1 << 20)
    assert only_file(plan).resume_position == last.start
    assert plan[-1].end == transactions[-2].end
    assert plan.resume_positions == {str(growing): last.start}
    expected = list(read_rows(path(SAKILA), stop_position=last.start))
    got = [r for split in plan for r in split_rows(split)]
    assert [(r.pos, r.row_index, r.change) for r in got] == [(r.pos, r.row_index, r.change) for r in expected]


def test_a_file_that_ends_inside_an_event_is_a_located_error(tmp_path):
    data = path(CRC32).read_bytes()
    broken = tmp_path / "mysql-bin.000003"
    broken.write_bytes(data[:-3])
    with pytest.raises(TruncatedError) as caught:
        plan_splits([broken])
    assert caught.value.file == str(broken) and caught.value.position == _events(CRC32)[-1].pos


def _spliced(tmp_path):
    """A file framed by a CRC32 format description, then one without checksums (as a relay log may hold)."""
    first = _events(CRC32)[0]
    spliced = tmp_path / "relay-bin.000002"
    spliced.write_bytes(path(CRC32).read_bytes()[: first.end_pos] + path(NO_CHECKSUMS).read_bytes()[4:])
    return spliced, first.end_pos


def test_a_later_format_description_that_frames_differently_governs_the_splits_after_it(tmp_path):
    spliced, second = _spliced(tmp_path)
    plan = plan_splits([spliced], 1)
    assert len(plan) == 40 and all(split.read_from == second < split.start for split in plan)
    assert [r for split in plan for r in split_rows(split)] == list(read_rows(spliced))
    framed_by_the_first = dataclasses.replace(plan[3], read_from=plan[3].start)
    with pytest.raises(BinlogError):
        list(split_rows(framed_by_the_first))


def test_an_equal_later_format_description_changes_nothing():
    relay = path("blackbeam__rust_mysql_common/bug33029-slave-relay-bin.000001")  # two equal ones
    plan = plan_splits([relay], 1)
    assert len(plan) == 28 and all(split.read_from == split.start for split in plan)


def test_several_files_are_numbered_in_order_with_their_flavour():
    names = ["blackbeam__rust_mysql_common/mariadb-bin.000001", SAKILA, CRC32]
    plan = plan_splits([path(name) for name in names], 1)
    assert [s.index for s in plan] == list(range(len(plan)))
    assert [f.path for f in plan.files] == [str(path(name)) for name in names]
    assert [f.flavour for f in plan.files] == ["mariadb", "mysql", "mysql"]
    assert [s.path for s in plan] == [f.path for f in plan.files for _ in f.splits]
    assert plan[0].stem == "mariadb-bin.000001-{}-{}".format(plan[0].start, plan[0].end)


def test_two_files_of_one_name_or_no_target_are_refused(tmp_path):
    copy = tmp_path / "mysql-bin.checksum-crc32"
    copy.write_bytes(path(CRC32).read_bytes())
    with pytest.raises(ValueError, match="same file name"):
        plan_splits([path(CRC32), copy])
    with pytest.raises(ValueError, match="at least 1"):
        plan_splits([path(CRC32)], 0)


@pytest.mark.parametrize("cut", [0, 1, 2, 7, -1])
def test_planning_from_a_transaction_boundary_gives_the_rest_of_the_file(cut):
    """Two runs, the second starting where the first stopped, read every row once."""
    transactions = [t for t in scan_transactions(path(SAKILA)) if t.complete]
    start = transactions[cut].start if cut >= 0 else transactions[-1].end
    plan = plan_splits([path(SAKILA)], 700, {str(path(SAKILA)): start})
    rest = [record for split in plan for record in split_rows(split)]
    assert rest == [record for record in read_rows(path(SAKILA)) if record.pos >= start]
    assert all(split.start >= start for split in plan) and (cut >= 0 or not plan)


def test_a_start_that_is_no_transaction_boundary_is_refused():
    first = next(t for t in scan_transactions(path(SAKILA)) if t.complete)
    with pytest.raises(ValueError, match=f"position {first.start + 1} is not a transaction boundary"):
        plan_splits([path(SAKILA)], start_positions={str(path(SAKILA)): first.start + 1})


def test_balanced_target_gives_every_slot_its_splits_within_its_bounds(tmp_path):
    big, small = tmp_path / "log.000001", tmp_path / "log.000002"
    with open(big, "wb") as handle:
        handle.truncate(200 << 20)  # sparse: only the size matters
    small.write_bytes(b"x" * 1000)
    files = [big, small]
    total = (200 << 20) + 1000
    quarter, eighth = -(-total // 4), -(-total // 8)
    assert balanced_target(files, 64 << 20, 1) == quarter + quarter // 64  # four splits for one slot, with a margin
    assert balanced_target(files, 64 << 20, 2) == eighth + eighth // 64  # eight splits of about equal size
    assert balanced_target(files, 40 << 20, 1) == 40 << 20  # a smaller target is kept
    assert balanced_target(files, 64 << 20, 64) == MIN_BALANCED_BYTES  # never below the floor
    resumed = balanced_target(files, 64 << 20, 2, {str(big): 180 << 20})  # only what is left counts
    assert resumed == MIN_BALANCED_BYTES
    resumed = balanced_target(files, 64 << 20, 1, {str(big): 100 << 20})
    assert resumed == -(-((100 << 20) + 1000) // 4) + -(-((100 << 20) + 1000) // 4) // 64


@pytest.mark.parametrize("slots", [1, 2, 3])
def test_balanced_splits_of_a_binlog_fill_every_round(slots, monkeypatch, tmp_path):
    """Cut at transaction boundaries with the margin, a binlog of many small transactions makes
    exactly SPLITS_PER_SLOT splits per slot."""
    monkeypatch.setattr(splits_module, "MIN_BALANCED_BYTES", 1)
    files = [tmp_path / "binlog.000001"]
    write_corpus(files[0], transactions=2000, seed=7)
    plan = plan_splits(files, balanced_target(files, 64 << 20, slots))
    assert len(plan) == SPLITS_PER_SLOT * slots


def test_a_scan_made_ahead_plans_what_a_scan_made_then_does(tmp_path, monkeypatch):
    """Scans started ahead (while Spark starts) give the same plans; a file that changed since its
    scan ahead (it grew: a server still writes it) is scanned again, and so is one whose scan ahead
    failed, which then fails with its located error as without a scan ahead."""
    files = [path(SAKILA), path(CRC32)]
    assert plan_splits(files, 700, scanned=splits_module.scan_ahead(files)) == plan_splits(files, 700)
    calls = []
    monkeypatch.setattr(splits_module, "scan_transactions", lambda *a, **k: calls.append(a) or scan_transactions(*a, **k))
    ahead = splits_module.scan_ahead(files)
    for scan in ahead.values():
        scan.result()
    calls.clear()
    plan_splits(files, 700, scanned=ahead)
    assert calls == []  # both scans were taken as made ahead

    data = path(SAKILA).read_bytes()
    inside = next(e for e in _events(SAKILA) if e.end_pos < len(data) // 2 < e.end_pos + 1000)
    growing = tmp_path / "mysql-bin.000007"
    growing.write_bytes(data[: inside.end_pos])
    ahead = splits_module.scan_ahead([growing])
    ahead[str(growing)].result()
    growing.write_bytes(data)  # the server wrote on
    assert plan_splits([growing], 700, scanned=ahead) == plan_splits([growing], 700)
    assert only_file(plan_splits([growing], 700, scanned=ahead)).resume_position == len(data)

    broken = tmp_path / "mysql-bin.000003"
    broken.write_bytes(path(CRC32).read_bytes()[:-3])
    ahead = splits_module.scan_ahead([broken])
    assert isinstance(ahead[str(broken)].exception(), TruncatedError)
    with pytest.raises(TruncatedError) as caught:
        plan_splits([broken], scanned=ahead)
    assert caught.value.file == str(broken)


def test_a_planned_size_bounds_the_plan_of_a_file_that_grew(tmp_path):
    """A file written on after the stream planned it is cut where it was planned."""
    from binlog_codec.corpus import write_corpus

    path = tmp_path / "binlog.000001"
    write_corpus(path, transactions=40, seed=3)
    ends = [t.end for t in scan_transactions(str(path))]
    plan = plan_splits([path], 1 << 20, sizes={str(path): ends[9]})
    assert plan.resume_positions == {str(path): ends[9]}
    assert sum(split.transactions for split in plan) == 10 and plan[-1].end == ends[9]
