"""Streams: a source's log followed exactly once, by file identity and GTID set, not by file names.

A *stream* is a logical name that owns a checkpoint (``--stream``; by default
the source URI). The stream follows one server's log: the files it has read
are recorded by their identity (:mod:`binlog_codec.file_identity`: server,
start of the file, size read), and, when the server logs GTIDs, by the set of
transactions read so far (:mod:`binlog_codec.gtid_set`; the set logged before
the stream's first file counts as read: it is the state the stream started
from). Each run, :func:`plan_stream` decides from the source's files and the
stream's state what to read, and refuses loudly when reading on would lose or
repeat a transaction:

* **continue** — the checkpoint's file is in the source, unchanged: read it on
  from the checkpoint's position, then the next files. Their numbers must
  follow one another (a gap is :class:`~spark_jobs.positions.MissingFiles`)
  and, with GTIDs, each file's PREVIOUS_GTIDS / GTID_LIST must not hold a
  transaction the stream has not read (:class:`GtidHole`, naming the range);
  a file's ROTATE event must name the next file.
* **gtid** — the checkpoint's file is not there, or a file the stream read has
  changed (another server's files under the same names, ``RESET MASTER``, a
  new primary after a failover, the archive under a new prefix). A stream with
  GTIDs goes on from the last file whose start set it has read all of, skips
  every transaction already in its set, and reads the rest in order. That the
  new files carry the *same* transactions, not new ones under reused GTIDs
  (``RESET MASTER`` starts the numbering again), is checked on the stream's
  last transaction: it must be among them with the same commit timestamp and
  originating server (:class:`GtidsReused` otherwise).
* **start** — the stream's first run: every file, from the first.
* **new-series** — only on the user's word (``accept_new_series``): a
  changed or unknown log is taken as a new one, read from its first unknown
  file, and the GTID set starts again from what that file logs.

A stream without GTIDs (MySQL with ``gtid_mode=OFF``, servers before 5.6)
keeps file-and-position continuity; its run records say so. Whatever the
stream, a file another stream of the warehouse has read is refused
(:class:`AlreadyIngested`): the same binlogs under a second prefix are not
ingested twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Mapping

from binlog_codec.errors import BinlogError
from binlog_codec.event_types import EventType
from binlog_codec.events import decode
from binlog_codec.file_identity import FileIdentity, read_identity, same_file
from binlog_codec.gtid_set import GtidSet
from binlog_codec.reader import BinlogReader
from binlog_codec.transactions import Transaction
from spark_jobs.positions import (
    ACCEPT_GAP, CheckpointFileMissing, ContinuityError, log_order, missing_between, missing_files,
)
from spark_jobs.source_files import SourceFile

log = logging.getLogger(__name__)

ACCEPT_GAP_CHOICE = "gap"
ACCEPT_NEW_SERIES_CHOICE = "new-series"
ACCEPT_NEW_SERIES = (
    "If the source really starts a new log (RESET MASTER, a restore from a backup) and the warehouse should go on "
    "with it, run once with --accept-new-series (DAG param accept_new_series), which the run record keeps; to start "
    "the tables afresh instead, bootstrap the warehouse from a backup image"
)
NO_GTID = "ANONYMOUS"

# A scan of one file: its size when scanned and its transactions (spark_jobs.splits.scan_file).
Scan = Callable[[str], tuple[int, list[Transaction]]]


class FileReplaced(ContinuityError):
    """A file the stream has read holds other bytes now (replaced, truncated, another server's)."""


class GtidHole(ContinuityError):
    """The source lacks transactions between the stream's GTID set and what it holds."""


class GtidsReused(ContinuityError):
    """The source's files carry GTIDs the stream has read, but not the same transactions."""


class ForeignLog(ContinuityError):
    """A file of the source was written by a server of the other flavour than the log the stream follows."""


class AlreadyIngested(ContinuityError):
    """Another stream of the warehouse has read these very files."""


@dataclass
class StreamState:
    """A stream's checkpoint: the last ``file`` read and the ``position`` to go on from, the
    ``source`` it was read from, its ``flavour``, the GTID set read (``gtids``, text; None without
    GTIDs), the ``last`` transaction read (``gtid``, ``timestamp``, ``server_id``), and per file
    name the ``files`` read (``identity``, ``position`` read up to, ``stamp``: size and mtime when
    read, ``rotate_to``: the next file its ROTATE event names)."""

    file: str
    position: int
    source: str | None = None
    flavour: str | None = None
    gtids: str | None = None
    last: dict | None = None
    files: dict[str, dict] = field(default_factory=dict)
    continuity: str = "file-position"

    def gtid_set(self) -> GtidSet | None:
        return None if self.gtids is None else GtidSet.parse(self.gtids, self.flavour)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict | None) -> "StreamState | None":
        """The state of a checkpoint entry; an entry of an earlier version (``file``, ``position``
        only) has no identities or GTIDs yet: the next run records them."""
        if data is None:
            return None
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)


@dataclass
class FileRead:
    """One file of a plan: where reading starts and stops (``resume``: where the next run goes on),
    the transactions ``skipped`` (their starts: already read, by GTID) and ``kept``, and
    the ``size`` of the file when planned."""

    file: SourceFile
    identity: FileIdentity
    start: int
    resume: int
    size: int
    skipped: frozenset[int] = frozenset()
    kept: int = 0
    rotate_to: str | None = None  # the next file its ROTATE event names, once the file is read to its end


@dataclass
class StreamPlan:
    """What a run of ``stream`` reads (``reads``), how it chose (``mode``), what the user accepted,
    what it noticed without stopping (``notices``: a file read before that changed, where the
    GTID set shows the log goes on), and the stream's state once the run is published."""

    stream: str
    mode: str
    reads: list[FileRead]
    state: StreamState
    accepted: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        return sum(len(read.skipped) for read in self.reads)

    @property
    def has_data(self) -> bool:
        """Whether any transaction is to be read (a plan may only move the checkpoint)."""
        return any(read.kept for read in self.reads)

    def run_id(self) -> str:
        """A name derived from the stream and the transactions the run holds (the files' identities
        and byte ranges, the GTID set after it), never from paths: the same input gives the same
        name whatever folder it is read from, and different inputs never share one."""
        text = json.dumps([
            self.stream,
            [(r.identity.server_id, r.identity.head, r.start, r.resume, sorted(r.skipped)) for r in self.reads],
            self.state.gtids,
        ])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def position_of(entry: dict | None) -> dict | None:
    """The part of a stream's checkpoint entry that says where it is: ``file``, ``position``,
    ``gtids``, ``continuity`` (not the record of every file read)."""
    if entry is None:
        return None
    return {key: entry.get(key) for key in ("file", "position", "gtids", "continuity") if key in entry}


def position_text(entry: dict | None) -> str:
    """Where a stream is, in words: ``mariadb-bin.000004 at 1234, GTID set 0-1-120``."""
    if entry is None:
        return "the start (nothing read yet)"
    gtids = f", GTID set {entry['gtids'] or '(empty)'}" if entry.get("gtids") is not None else ""
    return f"{entry['file']} at {entry['position']}{gtids}"


def default_stream(source: str) -> str:
    """The stream of a source when none is named: the source URI (or resolved folder) itself."""
    return source if "://" in source else os.path.realpath(source)


def plan_stream(
    stream: str,
    source: str,
    files: Iterable[SourceFile],
    state: StreamState | None,
    *,
    scan: Scan,
    others: Mapping[str, StreamState] | None = None,
    accept: Iterable[str] = (),
) -> StreamPlan:
    """What the next run of ``stream`` reads from ``files`` (the binlog files of ``source``); see
    the module text. ``scan`` gives a file's transactions; ``others``: the warehouse's other streams;
    ``accept``: the user's choices for this run (``gap``, ``new-series``). Raises a
    :class:`~spark_jobs.positions.ContinuityError` naming the problem and the way forward."""
    planner = _Planner(stream, source, sorted(files, key=lambda f: log_order(f.name)), state, scan, frozenset(accept))
    return planner.plan(others or {})


class _Planner:
    """One planning of a stream; see :func:`plan_stream`."""

    def __init__(self, stream, source, files, state, scan, accept) -> None:
        self.stream, self.source, self.files, self.state, self.scan = stream, source, files, state, scan
        self.accept = accept
        self.accepted: list[str] = []
        self.notices: list[str] = []
        self.changed: dict[str, str] = {}
        self.entered_by_gtid = False  # only files entered by GTID may hold transactions the stream has read
        self._identities: dict[str, FileIdentity] = {}

    def identity(self, file: SourceFile) -> FileIdentity:
        if file.name not in self._identities:
            self._identities[file.name] = read_identity(file.path, file.name)
        return self._identities[file.name]

    # -- where to start ------------------------------------------------------------

    def plan(self, others: Mapping[str, StreamState]) -> StreamPlan:
        mode, first = self._start()
        self.entered_by_gtid = mode == "gtid"
        reads, running, last = self._walk(mode, first)
        self._check_not_read_elsewhere(reads, others)
        state = self._state_after(reads, running, last)
        return StreamPlan(self.stream, mode, reads, state, self.accepted, self.notices)

    def _start(self) -> tuple[str, int]:
        """The mode and the index of the first file to look at."""
        names = [file.name for file in self.files]
        if self.state is None:
            return "start", 0
        changed = self.changed = self._changed()
        problem = "; ".join(changed.values())
        have = self.state.gtid_set()
        if self.state.file in names and self.state.file not in changed and (not changed or have):
            if changed:  # only files before the checkpoint's: what comes after it is judged by GTID
                self.notices.append(f"{problem}; the log goes on from the checkpoint's file {self.state.file}, "
                                    "unchanged, and each later file is checked against the stream's GTID set")
                log.warning("%s: %s", self.source, self.notices[-1])
            return "continue", names.index(self.state.file)
        if ACCEPT_NEW_SERIES_CHOICE in self.accept:
            self.accepted.append(f"new series from {self.source}" + (f" ({problem})" if problem else ""))
            fresh = [i for i, f in enumerate(self.files) if f.name not in self.state.files or f.name in changed]
            return "new-series", fresh[0] if fresh else len(self.files)
        if have:
            if changed:
                self.notices.append(f"{problem}; the stream found its place by its GTID set")
            return "gtid", self._gtid_start(have, problem)
        if changed:
            raise FileReplaced(
                f"{self.source}: {problem}. The stream {self.stream!r} read those files before, and it has no GTIDs "
                "that could show how the log goes on", ACCEPT_NEW_SERIES,
            )
        raise CheckpointFileMissing(
            f"the stream {self.stream!r}'s checkpoint file {self.state.file} is not in {self.source} "
            f"(binlog files there: {', '.join(names[:8]) or 'none'}{' ...' if len(names) > 8 else ''}), and the stream "
            "has no GTIDs to find its place in other files",
            "Point the stream at the source that holds its log (--source). " + ACCEPT_NEW_SERIES,
        )

    def _changed(self) -> dict[str, str]:
        """Per file of the source that the stream read before and that is no longer what it read
        (other bytes, or fewer than it read), what changed."""
        changed = {}
        for file in self.files:
            entry = self.state.files.get(file.name)
            if entry is None or _stamp(file.path) == entry.get("stamp"):
                continue
            recorded = FileIdentity.from_json(entry["identity"])
            size = os.path.getsize(file.path)
            if not same_file(recorded, file.path):
                changed[file.name] = (f"{file.name} holds other bytes than the file read under that name "
                                      f"(now {self._describe(file)}; read: {recorded.describe()})")
            elif size < entry["position"]:
                changed[file.name] = f"{file.name} has {size} bytes, fewer than the {entry['position']} read (truncated)"
        return changed

    def _describe(self, file: SourceFile) -> str:
        try:
            return self.identity(file).describe()
        except BinlogError as error:
            return f"a file that does not read: {error}"

    def _gtid_start(self, have: GtidSet, problem: str) -> int:
        """The last file whose start set the stream has read all of: everything before it is read."""
        log.warning("%s: %s; finding the stream's place by its GTID set %s", self.source,
                    problem or f"the checkpoint file {self.state.file} is not there", have)
        for index in range(len(self.files) - 1, -1, -1):
            start = self.identity(self.files[index]).gtid_set()
            if start is not None and start.flavour == have.flavour and start <= have:
                return index
        if not self.files:
            raise CheckpointFileMissing(f"{self.source} holds no binlog files", "Point the stream at its source")
        first = self.files[0]
        start = self.identity(first).gtid_set()
        if ACCEPT_GAP_CHOICE in self.accept:
            return 0  # the walk records the gap at the first file's start
        if start is None or start.flavour != have.flavour:
            raise GtidHole(f"{self.source}: its files log no GTID set; the stream {self.stream!r} has {have}",
                           "Point the stream at a source with GTIDs. " + ACCEPT_NEW_SERIES)
        raise GtidHole(
            f"{self.source}: its earliest file {first.name} starts after {start}, but the stream {self.stream!r} has "
            f"read {have}: {(start - have).describe_missing()} are in no file of the source",
            "Bring the binlog files holding them into the source, or " + ACCEPT_GAP,
        )

    # -- reading on ----------------------------------------------------------------

    def _walk(self, mode: str, first: int) -> tuple[list[FileRead], GtidSet | None, dict | None]:
        """The files from ``first`` on: continuity checked at each file's start, transactions
        already in the GTID set skipped; returns the reads, the GTID set and the last transaction.

        The GTID set is None while unknown: a checkpoint written before GTIDs were recorded gets
        one from the next file's start set."""
        state = self.state if mode in ("continue", "gtid") else None
        running = state.gtid_set() if state else None
        anchor = AnchorCheck(state.last if mode == "gtid" else None, self.source,
                             required=state is not None and state.file in self.changed)
        previous = state.file if mode == "continue" else None
        reads: list[FileRead] = []
        last = state.last if state else None
        for file in self.files[first:]:
            if mode == "new-series" and file.name in self.state.files and file.name not in self.changed:
                self.notices.append(f"the new series ends before {file.name}, a file of the log read before")
                break
            identity = self.identity(file)
            start = state.position if mode == "continue" and file.name == state.file else 0
            if start and os.path.getsize(file.path) <= start:
                previous = file.name  # the checkpoint's file, nothing new in it
                continue
            if start == 0:
                running = self._check_file_start(previous, file, identity, running, reads)
                anchor.starts_at(identity.gtid_set())
            size, transactions = self.scan(file.path)
            read, running, last = self._read(file, identity, start, size, transactions, running, last, anchor)
            reads.append(read)
            previous = file.name
        anchor.finish()
        return reads, running, last

    def _check_file_start(self, previous, file, identity, running, reads) -> GtidSet:
        """A file read from its start continues the log: no name missing before it, its ROTATE
        link, and no transaction of its start set that the stream lacks. Returns the GTID set to
        go on with (a first file's start set: the state the stream starts from)."""
        gap = missing_between([previous, file.name]) if previous else []
        rotate_to = self._rotate_to(previous, reads)
        if previous and not gap and rotate_to and rotate_to != file.name:
            gap = [f"{rotate_to} (the file {previous}'s ROTATE event names it)"]
        start = identity.gtid_set()
        if running is not None and running.flavour != identity.flavour:
            raise ForeignLog(
                f"{self.source}: {file.name} was written by a {identity.flavour} server ({identity.describe()}), the "
                f"files before it by a {running.flavour} one: a source holds one log (one server's, or those of one "
                "replication topology)", "Move it into a source of its own and ingest that as a stream of its own",
            )
        if running is None:
            self._check_names(previous, file, gap)
            return start if start is not None else GtidSet.parse("", identity.flavour)
        lacking = start - running if start is not None and running else None
        if lacking:
            if ACCEPT_GAP_CHOICE not in self.accept:
                files = f" (and {', '.join(gap)} missing)" if gap else ""
                raise GtidHole(
                    f"{self.source}: {file.name} starts after {start}, but the stream {self.stream!r} has read {running}: "
                    f"{lacking.describe_missing()} are in no file read{files}",
                    "Bring the binlog files holding them into the source, or " + ACCEPT_GAP,
                )
            self.accepted.append(f"GTID gap {lacking.describe_missing()} before {file.name}")
            return running | lacking
        behind = running - start if start is not None and running and not self.entered_by_gtid else None
        if behind:
            raise GtidsReused(
                f"{self.source}: {file.name} starts at {start}, without {behind.describe_missing()} that the stream "
                f"{self.stream!r} read before it: its server's GTIDs started again (RESET MASTER?) or the file "
                "belongs to another log", ACCEPT_NEW_SERIES,
            )
        if gap and start is not None and running:
            log.warning("%s: %s not in the source, but %s starts where the stream's GTID set %s ends: nothing is lost",
                        self.source, ", ".join(gap), file.name, running)
        else:
            self._check_names(previous, file, gap)
        return running

    def _check_names(self, previous: str | None, file: SourceFile, gap: list[str]) -> None:
        """A gap in the file names, without GTIDs to show nothing is lost, stops the run."""
        if not gap:
            return
        if ACCEPT_GAP_CHOICE not in self.accept:
            raise missing_files(self.source, gap, previous, file.name)
        self.accepted.append(f"missing files {', '.join(gap)}")

    def _rotate_to(self, previous: str | None, reads: list[FileRead]) -> str | None:
        """The next file the ROTATE event of ``previous`` names (None when it has none)."""
        if previous is None:
            return None
        for read in reads:
            if read.file.name == previous:
                return read.rotate_to
        entry = (self.state.files if self.state else {}).get(previous)
        return entry.get("rotate_to") if entry else None

    def _read(self, file, identity, start, size, transactions, running, last, anchor):
        """The transactions of ``file`` from ``start``: kept or skipped; where the next run resumes.
        The GTIDs kept join the set once the file is read (a log holds each GTID once)."""
        complete, resume = [], size
        for transaction in transactions:
            if transaction.start < start:
                continue
            if not transaction.complete:
                resume = transaction.start
                break
            complete.append(transaction)
        gtids = [_gtid_of(transaction) if running is not None else None for transaction in complete]
        logged = [gtid for gtid in gtids if gtid is not None]
        self._check_each_once(file, logged)
        in_file = GtidSet.parse("", running.flavour).with_gtids(logged) if logged else None
        known = running & in_file if in_file else None  # read before
        skipped = set()
        for transaction, gtid in zip(complete, gtids):
            if known and gtid in known:
                self._check_may_skip(file, transaction, gtid, running)
                anchor.seen(_fingerprint(transaction))
                skipped.add(transaction.start)
        kept = [transaction for transaction in complete if transaction.start not in skipped]
        if kept:
            last = _fingerprint(kept[-1])
        if in_file:
            running = running | in_file
        if skipped:
            log.info("%s: %d transactions already read (their GTIDs are in the stream's set), skipped",
                     file.name, len(skipped))
        tail = complete[-1].end if complete else start  # the events after it link to the next file
        rotate_to = rotate_target(file.path, tail) if resume >= size else None
        return FileRead(file, identity, start, resume, size, frozenset(skipped), len(kept), rotate_to), running, last

    def _check_may_skip(self, file: SourceFile, transaction: Transaction, gtid: str, running: GtidSet) -> None:
        """Only files entered by GTID may hold transactions the stream has read."""
        if not self.entered_by_gtid:
            raise GtidsReused(
                f"{self.source}: {file.name} at {transaction.start} holds the transaction {gtid}, which the stream "
                f"{self.stream!r} has read before ({running}): one log never holds a GTID twice, so its server's "
                "GTIDs started again (RESET MASTER?) or the file belongs to another log", ACCEPT_NEW_SERIES,
            )

    def _check_each_once(self, file: SourceFile, logged: list[str]) -> None:
        """The GTIDs ``logged`` in ``file`` may not hold one twice."""
        if len(set(logged)) < len(logged):
            twice = sorted(gtid for gtid, count in Counter(logged).items() if count > 1)
            raise GtidsReused(
                f"{self.source}: {file.name} holds the transactions {', '.join(twice[:5])} twice: one log never holds "
                "a GTID twice, so its server's GTIDs started again (RESET MASTER?) or it joins two logs",
                ACCEPT_NEW_SERIES,
            )

    # -- checks and the state after ------------------------------------------------

    def _check_not_read_elsewhere(self, reads: list[FileRead], others: Mapping[str, StreamState]) -> None:
        """No file to read is one another stream has read, whatever its name there: files are
        known by their head (its length and digest)."""
        read_by = {
            (entry["identity"]["head_bytes"], entry["identity"]["head"]): (name, other, file_name)
            for name, other in others.items() if name != self.stream
            for file_name, entry in other.files.items()
        }
        for read in reads:
            found = read_by.get((read.identity.head_bytes, read.identity.head))
            if found:
                name, other, file_name = found
                raise AlreadyIngested(
                    f"{self.source}: {read.file.name} ({read.identity.describe()}) was read by the stream {name!r} "
                    f"(from {other.source}{'' if file_name == read.file.name else f', as {file_name}'}) already; "
                    "reading it again into the same warehouse would add its changes twice",
                    f"To go on with that log from this source, run with --stream {name!r} (DAG param stream)",
                )

    def _state_after(self, reads, running, last) -> StreamState:
        if not reads:
            return self.state
        files = dict(self.state.files) if self.state else {}
        for read in reads:
            files[read.file.name] = {
                "identity": read.identity.to_json(), "position": read.resume, "stamp": _stamp(read.file.path),
                "rotate_to": read.rotate_to,
            }
        uses_gtids = bool(running)
        return StreamState(
            file=reads[-1].file.name, position=reads[-1].resume, source=self.source,
            flavour=reads[-1].identity.flavour, gtids=str(running) if uses_gtids else None, last=last,
            files=files, continuity="gtid" if uses_gtids else "file-position",
        )


class AnchorCheck:
    """That files entered by GTID carry the stream's own transactions: the stream's last
    transaction must be among the skipped ones with the same commit timestamp and originating
    server, unless the first file's start set already holds it (the log goes on right after it).
    When the checkpoint's own file name holds other bytes now (``required``), the transaction
    must be found: a log started again (``RESET MASTER``) can reach the same start set by chance."""

    def __init__(self, last: dict | None, source: str, required: bool = False) -> None:
        self.last, self.source = last if last and last.get("gtid") else None, source
        self.required = required
        self.found = self.before_first = False
        self._first = True

    def starts_at(self, start: GtidSet | None) -> None:
        if self._first and self.last and start is not None:
            self.before_first = self.last["gtid"] in start
        self._first = False

    def seen(self, fingerprint: dict) -> None:
        if self.last is None or fingerprint["gtid"] != self.last["gtid"]:
            return
        self.found = True
        if _comparable(fingerprint, self.last) != _comparable(self.last, fingerprint):
            raise GtidsReused(
                f"{self.source}: the transaction {fingerprint['gtid']} there (committed at {fingerprint['timestamp']} by "
                f"server {fingerprint['server_id']}) is not the one the stream read under that GTID (committed at "
                f"{self.last['timestamp']} by server {self.last['server_id']}): the server's GTIDs started again "
                "(RESET MASTER?)", ACCEPT_NEW_SERIES,
            )

    def finish(self) -> None:
        if self.last and not self.found and (self.required or not self.before_first):
            raise GtidsReused(
                f"{self.source}: its files hold GTIDs the stream has read, but not the stream's last transaction "
                f"{self.last['gtid']}: either the server's GTIDs started again (RESET MASTER?) or this server never "
                "received that transaction (a failover to a replica that was behind)",
                ACCEPT_NEW_SERIES,
            )


def _comparable(one: dict, other: dict) -> tuple:
    """The parts of a transaction's fingerprint both sides know."""
    return tuple(one[key] for key in ("gtid", "timestamp", "server_id") if one.get(key) is not None
                 and other.get(key) is not None)


def _gtid_of(transaction: Transaction) -> str | None:
    """A transaction's GTID, None without one (no GTID event, or an anonymous one)."""
    return transaction.gtid if transaction.gtid and transaction.gtid != NO_GTID else None


def _fingerprint(transaction: Transaction) -> dict:
    """A transaction's GTID (None without one), commit timestamp and originating server."""
    ending = transaction.ending
    return {"gtid": _gtid_of(transaction), "timestamp": ending.timestamp if ending else None,
            "server_id": ending.server_id if ending else None}


def rotate_target(path: str, position: int) -> str | None:
    """The next file named by the ROTATE event after ``position`` (the events after a file's last
    transaction), None when the file has none (it is still being written, or ends with STOP)."""
    for raw in BinlogReader(path, start_position=position, unwrap_payloads=False):
        if raw.type_code == EventType.ROTATE:
            return decode(raw).next_file
    return None


def _stamp(path: str) -> list[int]:
    found = os.stat(path)
    return [found.st_size, found.st_mtime_ns]
