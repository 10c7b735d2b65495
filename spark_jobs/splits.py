"""Splits: contiguous ranges of whole transactions of a binlog file, the unit of parallel decoding.

:func:`plan_splits` finds the transaction boundaries of each file with the
header-only scan of :func:`binlog_codec.transactions.scan_transactions` and
cuts the file into :class:`Split` ranges of about ``target_bytes``:

* a split starts where a transaction starts and ends where one ends, and holds
  at least one transaction: a transaction larger than the target is a split of
  its own; a target of 1 byte gives one split per transaction;
* the events before the first transaction (format description, previous
  GTIDs, ...) and between transactions (rotate, checkpoints, stop) belong to
  no split. A decoder still needs the file's format description:
  :class:`~binlog_codec.reader.BinlogReader` reads the first one before it
  seeks to ``start_position``. A *later* format description (a relay log
  carries the source server's after its own) that frames the events
  differently (checksums, header or post-header lengths) governs the splits
  after it: they are read from that event on (``read_from``) and the events
  before ``start`` are read but dropped. Servers write one per file, so this
  costs nothing for their binlogs;
* a file that ends inside a transaction (it is still being written): the
  splits stop at the last complete transaction and the plan's
  ``resume_position`` for the file is where the unfinished one starts, the
  position the next run reads the file from. Otherwise it is the file's size
  at planning time. A transaction cut short in the middle of the file (a GTID
  event while another transaction is open) is kept in its split, flagged
  incomplete by the scan.

The events of an unfinished transaction at the end are decoded once while
planning: a server writing a file never leaves a corrupt event behind, so one
is an error of the file, not a wait for the next run. It is kept as the file
plan's ``tail_error`` (the decoder raises it unless a split before it fails
first). A file that ends inside an *event* is not a file being written but a
broken one: the scan raises the reader's located
:class:`~binlog_codec.errors.TruncatedError`.

The scan reads the whole file (about 0.7 s a gigabyte). :func:`scan_ahead`
starts it in a background thread, so that a caller can overlap it with
something slow that needs no scan (``python -m spark_jobs.ingest`` starts the
Spark session meanwhile); :func:`plan_splits` takes such a scan only for a
file whose size and modification time are still those it was scanned at.

:func:`split_events`, :func:`split_rows` and :func:`split_transactions` read
one split, as the executors do: the rows events of
:func:`~binlog_codec.rows.rows_events` (their row changes, as
:func:`~binlog_codec.rows.read_rows` gives them) and the transactions of the
scan whose position is inside the split. Decoding every
split of a file in order gives exactly ``read_rows`` of the file's complete
part (the flavour, which ``read_rows`` takes from the file's first format
description, is carried by the split).
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import PurePath
from typing import AbstractSet, Iterable, Iterator, Mapping, Sequence

from binlog_codec.errors import BinlogError
from binlog_codec.event_types import EventType
from binlog_codec.events import decode
from binlog_codec.reader import BinlogReader, FormatDescription
from binlog_codec.rows import RowRecord, RowsOfTable, event_records, rows_events
from binlog_codec.transactions import Transaction, scan_transactions

log = logging.getLogger(__name__)

DEFAULT_TARGET_BYTES = 64 << 20
MIN_BALANCED_BYTES = 4 << 20  # balancing never cuts splits smaller than this
SPLITS_PER_SLOT = 4  # balancing aims at this many splits per Spark slot
_FORMAT_EVENTS = (EventType.FORMAT_DESCRIPTION, EventType.START_V3)


@dataclass(frozen=True)
class Split:
    """Transactions ``[start, end)`` of the file at ``path``: the ``index``-th split of its plan.

    ``read_from`` is where reading starts: ``start``, or the later format
    description the split is framed by (see the module docstring). ``flavour``
    is the file's (``mysql`` or ``mariadb``), ``transactions`` how many the scan found.
    ``location``: where a task reads the file when it cannot see ``path`` (an object store's
    URI, :mod:`spark_jobs.remote_splits`), and ``crc32`` the CRC-32 of the bytes it reads there, as
    the driver's file holds them; None: at ``path``.
    """

    path: str
    start: int
    end: int
    index: int
    read_from: int
    flavour: str
    transactions: int
    location: str | None = None
    crc32: int | None = None

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def file_name(self) -> str:
        return PurePath(self.path).name

    @property
    def stem(self) -> str:
        """``<file name>-<start>-<end>``: names what is staged from the split, the same on every run."""
        return f"{self.file_name}-{self.start}-{self.end}"


@dataclass(frozen=True)
class FilePlan:
    """One file of a plan: its size when planned, its splits and where the next run resumes;
    ``tail_error``: the located error of a corrupt event after the last complete transaction."""

    path: str
    size: int
    splits: tuple[Split, ...]
    resume_position: int
    flavour: str
    tail_error: BinlogError | None = None

    @property
    def transactions(self) -> int:
        return sum(split.transactions for split in self.splits)

    @property
    def complete(self) -> bool:
        """Whether the file ends with a complete transaction (nothing left for a later run)."""
        return self.resume_position >= self.size


class SplitPlan(list):
    """The splits of every file, in file order (a list of :class:`Split`), and ``files``: each file's plan."""

    def __init__(self, files: Sequence[FilePlan]) -> None:
        super().__init__(split for plan in files for split in plan.splits)
        self.files = list(files)

    @property
    def bytes(self) -> int:
        return sum(split.size for split in self)

    @property
    def resume_positions(self) -> dict[str, int]:
        """Per file path, the position the next run reads it from."""
        return {plan.path: plan.resume_position for plan in self.files}


# -- format descriptions ----------------------------------------------------------


def _framing(fde: FormatDescription) -> tuple:
    """What a format description changes about reading the events after it."""
    return (fde.header_length, fde.post_header_lengths, fde.checksum_alg)


def _gaps(transactions: Sequence[Transaction]) -> Iterator[tuple[int | None, int]]:
    """The byte ranges before and between transactions (``None``: from the file's start)."""
    previous: int | None = None
    for transaction in transactions:
        if previous is None or previous < transaction.start:
            yield previous, transaction.start
        previous = transaction.end


def _formats(path: str, transactions: Sequence[Transaction]) -> tuple[str, list[tuple[int, bool]]]:
    """The file's flavour, and each later format description as ``(position, frames differently)``.

    Format descriptions are outside transactions: only the gaps are read.
    """
    first: FormatDescription | None = None
    later: list[tuple[int, bool]] = []
    for start, stop in _gaps(transactions):
        for raw in BinlogReader(path, start_position=start, stop_position=stop, unwrap_payloads=False):
            if raw.type_code not in _FORMAT_EVENTS:
                continue
            if first is None:
                first = raw.fde
            else:
                later.append((raw.pos, _framing(raw.fde) != _framing(first)))
    flavour = "mariadb" if first is not None and first.is_mariadb else "mysql"
    return flavour, later


def _read_from(start: int, later: list[tuple[int, bool]]) -> int:
    """Where a split starting at ``start`` is read from: the later format description in force, if it frames differently."""
    governing = [(position, differs) for position, differs in later if position < start]
    if governing and governing[-1][1]:
        return governing[-1][0]
    return start


# -- cutting ------------------------------------------------------------------------


def _groups(
    transactions: Iterable[Transaction], target_bytes: int, skipped: AbstractSet[int] = frozenset()
) -> Iterator[list[Transaction]]:
    """Consecutive transactions in groups of at most ``target_bytes`` from the first's start
    to the last's end, each group at least one transaction. A transaction whose start is in
    ``skipped`` belongs to no group, and no group reaches over it."""
    group: list[Transaction] = []
    for transaction in transactions:
        if transaction.start in skipped:
            if group:
                yield group
            group = []
            continue
        if group and transaction.end - group[0].start > target_bytes:
            yield group
            group = []
        group.append(transaction)
    if group:
        yield group


def _error_in(path: str, start: int, stop: int, later: list[tuple[int, bool]]) -> BinlogError | None:
    """The located error of the first event in ``[start, stop)`` that does not decode, if any."""
    try:
        for raw in BinlogReader(path, start_position=_read_from(start, later), stop_position=stop):
            if raw.pos >= start:
                decode(raw)
    except BinlogError as exc:
        return exc
    return None


def _stamp(path: str) -> tuple[int, int]:
    """A file's size and modification time: a scan made at this stamp is the file's scan."""
    found = os.stat(path)
    return found.st_size, found.st_mtime_ns


def _scan(path: str) -> tuple[tuple[int, int], list[Transaction]]:
    stamp = _stamp(path)
    return stamp, list(scan_transactions(path, stop_position=stamp[0]))


def scanned_file(path: str, ahead: Future | None = None) -> Future:
    """A finished scan of the file at ``path`` (its stamp and transactions): ``ahead`` when that
    scan is of the file as it is now, else a new one. A failed scan is made again, to raise its
    located error here."""
    if ahead is not None and ahead.done() and ahead.exception() is None and ahead.result()[0] == _stamp(path):
        return ahead
    if ahead is not None and not ahead.done():
        ahead.exception()  # wait for it: it may well be of the file as it is
        return scanned_file(path, ahead)
    done: Future = Future()
    done.set_result(_scan(path))
    return done


def scan_ahead(files: Iterable[str | os.PathLike[str]]) -> dict[str, Future]:
    """Start the transaction scans of ``files`` in a background thread, one after the other, so
    that they run while something else does (a Spark session starting: the JVM is another
    process); per path, the future scan for :func:`plan_splits`' ``scanned``."""
    paths = [os.fspath(file) for file in files]
    if not paths:
        return {}
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scan-ahead")
    scans = {path: pool.submit(_scan, path) for path in paths}
    pool.shutdown(wait=False)
    return scans


def _transactions(path: str, size: int, scanned: Mapping[str, Future] | None) -> list[Transaction]:
    """The scan of the file (``size`` bytes of it): the one started ahead when the file has not
    changed since (nor did the scan fail: then it is made again, to raise here), else a new one."""
    ahead = (scanned or {}).get(path)
    if ahead is not None and ahead.exception() is None:
        stamp, transactions = ahead.result()
        if stamp == _stamp(path) and stamp[0] == size:
            return transactions
    return list(scan_transactions(path, stop_position=size))


def plan_file(
    path: str | os.PathLike[str],
    target_bytes: int = DEFAULT_TARGET_BYTES,
    first_index: int = 0,
    start: int = 0,
    scanned: Mapping[str, Future] | None = None,
    skipped: AbstractSet[int] = frozenset(),
    size: int | None = None,
) -> FilePlan:
    """Plan one file from ``start`` (0 or a transaction boundary: where an earlier run stopped);
    its splits are numbered from ``first_index``; ``scanned``: scans started ahead (:func:`scan_ahead`);
    ``skipped``: the starts of transactions to leave out (already ingested, by their GTID); ``size``:
    how much of the file to plan (default: all of it now; a file being written grows meanwhile)."""
    path = os.fspath(path)
    size = os.stat(path).st_size if size is None else size
    transactions = _from(path, _transactions(path, size, scanned), start)
    unfinished = transactions.pop() if transactions and not transactions[-1].complete else None
    flavour, later = _formats(path, transactions)
    resume, tail_error = size, None
    if unfinished is not None:
        resume, tail_error = unfinished.start, _error_in(path, unfinished.start, size, later)
        if tail_error is not None:
            log.warning("after the last complete transaction: %s", tail_error)
    if any(differs for _, differs in later):
        log.warning("%s: a later format description frames events differently; splits after it re-read from it", path)
    splits = tuple(
        Split(path, group[0].start, group[-1].end, first_index + number,
              _read_from(group[0].start, later), flavour, len(group))
        for number, group in enumerate(_groups(transactions, target_bytes, skipped))
    )
    log.debug("%s: %d bytes, %d transactions in %d splits, resume at %d", path, size, len(transactions), len(splits), resume)
    return FilePlan(path, size, splits, resume, flavour, tail_error)


def _from(path: str, transactions: list[Transaction], start: int) -> list[Transaction]:
    """The transactions at or after ``start``, which must be where one starts or the last one ends."""
    if start and start not in {t.start for t in transactions} | {t.end for t in transactions[-1:]}:
        raise ValueError(f"{path}: position {start} is not a transaction boundary; cannot resume there")
    return [t for t in transactions if t.start >= start]


def _check_names(files: Sequence[str]) -> None:
    """Staged files are named after the binlog file's name: two inputs may not share one."""
    names: dict[str, str] = {}
    for path in files:
        name = PurePath(path).name
        if name in names:
            raise ValueError(f"{path} and {names[name]} have the same file name {name!r}; decode them separately")
        names[name] = path


def plan_splits(
    files: Iterable[str | os.PathLike[str]],
    target_bytes: int = DEFAULT_TARGET_BYTES,
    start_positions: Mapping[str, int] | None = None,
    scanned: Mapping[str, Future] | None = None,
    skipped: Mapping[str, AbstractSet[int]] | None = None,
    sizes: Mapping[str, int] | None = None,
) -> SplitPlan:
    """Cut ``files`` (in log order) into splits of about ``target_bytes``; see the module docstring.
    ``start_positions`` maps a file's path to where to start reading it (default 0); ``scanned``:
    the transaction scans :func:`scan_ahead` started, used for the files that have not changed since;
    ``skipped``: per file path, the starts of transactions to leave out (no split holds them);
    ``sizes``: per file path, how much of it to plan (default: all of it).

    Raises the reader's located :class:`~binlog_codec.errors.BinlogError` for a
    file whose framing is broken, ``ValueError`` for a target below one byte or
    two files of the same name.
    """
    if target_bytes < 1:
        raise ValueError(f"target_bytes must be at least 1, not {target_bytes}")
    paths = [os.fspath(file) for file in files]
    _check_names(paths)
    plans: list[FilePlan] = []
    for path in paths:
        start = (start_positions or {}).get(path, 0)
        skip = (skipped or {}).get(path, frozenset())
        plans.append(plan_file(path, target_bytes, sum(len(plan.splits) for plan in plans), start, scanned, skip,
                               (sizes or {}).get(path)))
    plan = SplitPlan(plans)
    log.info(
        "planned %d files: %d splits, %d transactions, %d bytes (target %d bytes per split)",
        len(plans), len(plan), sum(p.transactions for p in plans), plan.bytes, target_bytes,
    )
    return plan


def balanced_target(
    files: Iterable[str | os.PathLike[str]],
    target_bytes: int,
    slots: int,
    start_positions: Mapping[str, int] | None = None,
) -> int:
    """The split size to plan with when ``slots`` tasks run at once: ``target_bytes``, made smaller
    (down to :data:`MIN_BALANCED_BYTES`) so that the input makes :data:`SPLITS_PER_SLOT` splits
    per slot. Splits of the target size leave slots idle at the end: 208 MB in 64 MB splits on
    two slots is a last round of one 16 MB split beside nothing; in 26 MB splits every round is
    full. A split ends at the last whole transaction that fits, so the size has a margin of
    1/64: without it, 208 MB in splits of exactly a quarter make five splits, not four."""
    remaining = sum(
        max(0, os.path.getsize(file) - (start_positions or {}).get(os.fspath(file), 0)) for file in files
    )
    balanced = -(-remaining // (SPLITS_PER_SLOT * max(1, slots)))
    return max(1, min(target_bytes, max(MIN_BALANCED_BYTES, balanced + balanced // 64)))


# -- reading a split ------------------------------------------------------------------


def split_events(split: Split, **options) -> Iterator[RowsOfTable]:
    """The rows events of ``split``, in log order, as :func:`~binlog_codec.rows.rows_events` reads them."""
    events = rows_events(
        split.path, flavour=split.flavour, start_position=split.read_from, stop_position=split.end, **options
    )
    for rows in events:
        if rows.event.pos >= split.start:
            yield rows


def split_rows(split: Split, **options) -> Iterator[RowRecord]:
    """The row changes of ``split``, in log order, as :func:`~binlog_codec.rows.read_rows` reads them."""
    for rows in split_events(split, **options):
        yield from event_records(rows)


def split_transactions(split: Split) -> Iterator[Transaction]:
    """The transactions of ``split``, in order, as the scan finds them."""
    for transaction in scan_transactions(split.path, start_position=split.read_from, stop_position=split.end):
        if transaction.start >= split.start:
            yield transaction
