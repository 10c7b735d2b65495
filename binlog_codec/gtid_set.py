"""Exact GTID-set arithmetic for MySQL and MariaDB.

A binlog file opens with the set of transactions logged before it: MySQL's
PREVIOUS_GTIDS event, MariaDB's GTID_LIST event. Whether a chain of files is
complete, or what a replica still lacks, is set arithmetic on those sets and on
the GTIDs of the transactions; this module does it exactly, on intervals, so a
set of 10^18 transactions costs as little as a set of one.

:class:`MysqlGtidSet` follows MySQL's ``Gtid_set`` (``sql/rpl_gtid.h``,
``sql/rpl_gtid_set.cc``; text form of WL#3584, tags of WL#15294, MySQL 8.3+):
a set of ``(source uuid, tag, gno)``, kept as sorted, merged intervals per
``(uuid, tag)``. Its text is what ``SELECT @@gtid_executed`` and ``mysqlbinlog``
show::

    3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7,4a2b9f30-0000-11e1-9e33-c80aa9429562:1-3
    3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:tag_a:1-3:tag_b:9

:class:`MariadbGtidSet` follows MariaDB's GTIDs ``domain-server-seq``
(``sql/rpl_gtid.h`` / ``rpl_gtid.cc``, and the "Global Transaction ID"
documentation): within a replication domain ``seq_no`` grows across servers,
so an element is ``(domain, seq_no)``; the server id is shown, not compared.
A domain holding exactly ``1..N`` is written as MariaDB writes a GTID position,
``D-S-N``; any other shape as one ``D-S-first..last`` entry per interval::

    0-1-120,7-3-15            every transaction of domain 0 up to 120, of 7 up to 15
    0-1-95..120               only 95 to 120

Both are immutable, hashable values with ``|``, ``-``, ``&``, ``<=`` and
``gtid in s``; combining the two flavours is a :class:`TypeError`, and text
that is not a GTID set is a :class:`ValueError` naming the text and what was
expected (parsing is linear in the text and never expands an interval).
:func:`file_gtid_set` reads the set a binlog file opens with.
"""

from __future__ import annotations

import bisect
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Mapping
from itertools import groupby
from types import MappingProxyType
from typing import ClassVar

from .event_types import EventType
from .events import decode
from .events.gtid import GtidEvent, GtidListEvent, MariadbGtidEvent, PreviousGtidsEvent
from .reader import BinlogReader
from .transactions import OUTSIDE

Interval = tuple[int, int]  # closed: (first, last)
Intervals = tuple[Interval, ...]  # sorted, disjoint, not adjacent

# MySQL: ``GNO_END = INT64_MAX`` is one past the largest gno (``parse_gno``
# refuses ``>= GNO_END``), so gnos are 1 .. 2^63 - 2.
MYSQL_MAX_GNO = 2**63 - 2
# MySQL tags: ``[a-z_][a-z0-9_]{0,31}``, read case-insensitively (``libs/mysql/gtid/tag.h``).
MYSQL_TAG_MAX_LENGTH = 32
# MariaDB: ``domain_id`` and ``server_id`` are uint32, ``seq_no`` uint64 (``rpl_gtid``).
MARIADB_MAX_ID = 2**32 - 1
MARIADB_MAX_SEQ = 2**64 - 1
# How many ranges :meth:`GtidSet.describe_missing` names before it summarizes.
DESCRIBE_RANGES = 10
# How much of a bad text an error message quotes (MySQL quotes 200 characters).
QUOTED_TEXT = 200

_WHITESPACE = re.compile(r"[ \t\n\r\v\f]*")
_NUMBER = re.compile(r"[0-9]+")
_MAX_DIGITS = 20  # 2^64 - 1 has 20 digits: anything longer is out of range without int()
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_TAG = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MYSQL_GTID = re.compile(
    r"[ \t\n\r\v\f]*(?P<uuid>[0-9a-fA-F-]+)[ \t\n\r\v\f]*:[ \t\n\r\v\f]*"
    r"(?:(?P<tag>[A-Za-z_][A-Za-z0-9_]*)[ \t\n\r\v\f]*:[ \t\n\r\v\f]*)?(?P<gno>[0-9]+)[ \t\n\r\v\f]*"
)
_MARIADB_GTID = re.compile(r"[ \t\n\r\v\f]*([0-9]+)-([0-9]+)-([0-9]+)[ \t\n\r\v\f]*")
ANONYMOUS = "ANONYMOUS"  # GtidEvent.gtid of an anonymous transaction: it has no GTID


# -- closed-interval arithmetic --------------------------------------------------


def _merged(intervals: Iterable[Interval]) -> Intervals:
    """``intervals`` sorted, with overlapping and adjacent ones joined."""
    out: list[Interval] = []
    for first, last in sorted(intervals):
        if out and first <= out[-1][1] + 1:
            if last > out[-1][1]:
                out[-1] = (out[-1][0], last)
        else:
            out.append((first, last))
    return tuple(out)


def _difference(a: Intervals, b: Intervals) -> Intervals:
    """What of ``a`` lies outside ``b`` (one pass over both)."""
    out: list[Interval] = []
    j = 0
    for first, last in a:
        while j < len(b) and b[j][1] < first:
            j += 1
        k = j
        while k < len(b) and b[k][0] <= last and first <= last:
            if b[k][0] > first:
                out.append((first, b[k][0] - 1))
            first = max(first, b[k][1] + 1)
            k += 1
        if first <= last:
            out.append((first, last))
    return tuple(out)


def _intersection(a: Intervals, b: Intervals) -> Intervals:
    out: list[Interval] = []
    i = j = 0
    while i < len(a) and j < len(b):
        first, last = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if first <= last:
            out.append((first, last))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def _holds(intervals: Intervals, number: int) -> bool:
    index = bisect.bisect_right(intervals, (number, float("inf")))
    return index > 0 and intervals[index - 1][1] >= number


def _size(intervals: Intervals) -> int:
    return sum(last - first + 1 for first, last in intervals)


# -- text scanning ---------------------------------------------------------------


def _quoted(text: str) -> str:
    return repr(text if len(text) <= QUOTED_TEXT else text[:QUOTED_TEXT] + "...")


class _Scanner:
    """Reads one text left to right; :meth:`error` says where and what was expected."""

    def __init__(self, text: str, kind: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"a {kind} is text, not {type(text).__name__}")
        self.text = text
        self.kind = kind
        self.pos = 0

    def at_end(self) -> bool:
        return self.pos == len(self.text)

    def skip_space(self) -> None:
        self.pos = _WHITESPACE.match(self.text, self.pos).end()

    def literal(self, word: str) -> bool:
        if self.text.startswith(word, self.pos):
            self.pos += len(word)
            return True
        return False

    def token(self, pattern: re.Pattern[str]) -> str | None:
        found = pattern.match(self.text, self.pos)
        if found is None:
            return None
        self.pos = found.end()
        return found.group()

    def number(self, expected: str, low: int, high: int) -> int:
        """A decimal number in ``low..high``."""
        start = self.pos
        digits = self.token(_NUMBER)
        if digits is None:
            raise self.error(expected)
        value = int(digits) if len(digits) <= _MAX_DIGITS else high + 1
        if not low <= value <= high:
            self.pos = start
            raise self.error(f"{expected} in {low}..{high}")
        return value

    def error(self, expected: str) -> ValueError:
        found = self.text[self.pos : self.pos + 20] or "the end"
        return ValueError(
            f"malformed {self.kind} {_quoted(self.text)}: expected {expected} "
            f"at character {self.pos}, found {found!r}"
        )


def _number_in(text: str, digits: str, what: str, low: int, high: int) -> int:
    value = int(digits) if len(digits) <= _MAX_DIGITS else high + 1
    if not low <= value <= high:
        raise ValueError(f"malformed GTID {_quoted(text)}: {what} must be in {low}..{high}")
    return value


# -- the sets --------------------------------------------------------------------


class GtidSet(ABC):
    """A set of GTIDs of one flavour, ``"mysql"`` or ``"mariadb"``: an immutable value.

    ``GtidSet.parse(text, flavour)`` and ``GtidSet.from_event(event)`` pick the
    flavour; each subclass also has its own ``parse(text)``. Sets compare equal
    when they hold the same GTIDs.
    """

    __slots__ = ("_sets",)
    flavour: ClassVar[str]
    _flavour_name: ClassVar[str]

    def __init__(self) -> None:
        """The empty set."""
        self._sets: dict[Hashable, Intervals] = {}

    @classmethod
    def _of(cls, sets: Mapping[Hashable, Iterable[Interval]], **extra) -> GtidSet:
        """A set of ``key -> intervals`` (already valid), keys sorted, empty keys dropped."""
        made = cls.__new__(cls)
        made._sets = {}
        for key in sorted(sets, key=cls._sort_key):
            intervals = _merged(sets[key])
            if intervals:
                made._sets[key] = intervals
        made._finish(**extra)
        return made

    def _finish(self) -> None:
        """Complete a set just made by :meth:`_of` (a subclass adds its display data)."""

    # -- constructors ------------------------------------------------------------

    @classmethod
    def parse(cls, text: str, flavour: str | None = None) -> GtidSet:
        """The set written as ``text``; ``flavour`` ("mysql" or "mariadb") is required on
        :class:`GtidSet` itself and, on a subclass, must be its own if given."""
        if cls is GtidSet:
            return _flavour_class(flavour)._parse(text)
        if flavour is not None and flavour != cls.flavour:
            raise TypeError(f"{cls.__name__}.parse reads {cls.flavour} GTID sets, not {flavour!r}")
        return cls._parse(text)

    @classmethod
    def from_event(cls, event: object) -> GtidSet:
        """The set an event logs: PREVIOUS_GTIDS or GTID_LIST (the GTIDs before the file),
        or the one GTID of a GTID event (none for an anonymous one)."""
        for flavour_class in (MysqlGtidSet, MariadbGtidSet):
            if isinstance(event, flavour_class._EVENTS):
                if not issubclass(flavour_class, cls):
                    raise TypeError(
                        f"{type(event).__name__} is a {flavour_class.flavour} event, not {cls.flavour}"
                    )
                return flavour_class._from_event(event)
        raise TypeError(f"{type(event).__name__} carries no GTID set")

    # -- what the set holds --------------------------------------------------------

    @property
    def intervals(self) -> Mapping[Hashable, Intervals]:
        """Read-only ``key -> ((first, last), ...)``: the closed intervals of each key, sorted."""
        return MappingProxyType(self._sets)

    def count(self) -> int:
        """How many GTIDs the set holds."""
        return sum(_size(intervals) for intervals in self._sets.values())

    def is_empty(self) -> bool:
        return not self._sets

    def __bool__(self) -> bool:
        return bool(self._sets)

    def __contains__(self, gtid: str) -> bool:
        """Whether the GTID written ``gtid`` is in the set (an anonymous one never is)."""
        if gtid == ANONYMOUS:
            return False
        key, number = self._parse_gtid(gtid)
        return key in self._sets and _holds(self._sets[key], number)

    def with_gtid(self, gtid: str) -> GtidSet:
        """This set and the GTID written ``gtid`` (an anonymous GTID adds nothing)."""
        if gtid == ANONYMOUS:
            return self
        return self.union(self._gtid_set(gtid))

    def with_gtids(self, gtids: Iterable[str]) -> GtidSet:
        """This set and every GTID written in ``gtids`` (anonymous ones add nothing), in one union:
        a file's hundred thousand transactions cost one sort, not a set each."""
        return self.union(self._gtids_set([gtid for gtid in gtids if gtid != ANONYMOUS]))

    # -- arithmetic ----------------------------------------------------------------

    def union(self, other: GtidSet) -> GtidSet:
        self._check_flavour(other)
        keys = self._sets.keys() | other._sets.keys()
        sets = {key: self._sets.get(key, ()) + other._sets.get(key, ()) for key in keys}
        return self._of(sets, **self._display_union(other))

    def difference(self, other: GtidSet) -> GtidSet:
        self._check_flavour(other)
        sets = {key: _difference(mine, other._sets.get(key, ())) for key, mine in self._sets.items()}
        return self._of(sets, **self._display())

    def intersection(self, other: GtidSet) -> GtidSet:
        self._check_flavour(other)
        sets = {key: _intersection(mine, other._sets.get(key, ())) for key, mine in self._sets.items()}
        return self._of(sets, **self._display())

    def issubset(self, other: GtidSet) -> bool:
        self._check_flavour(other)
        return all(not _difference(mine, other._sets.get(key, ())) for key, mine in self._sets.items())

    def __or__(self, other: object) -> GtidSet:
        return self.union(other) if isinstance(other, GtidSet) else NotImplemented

    def __sub__(self, other: object) -> GtidSet:
        return self.difference(other) if isinstance(other, GtidSet) else NotImplemented

    def __and__(self, other: object) -> GtidSet:
        return self.intersection(other) if isinstance(other, GtidSet) else NotImplemented

    def __le__(self, other: object) -> bool:
        return self.issubset(other) if isinstance(other, GtidSet) else NotImplemented

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self.flavour == other.flavour and self._sets == other._sets

    def __hash__(self) -> int:
        return hash((self.flavour, tuple(self._sets.items())))

    def __repr__(self) -> str:
        return f"{type(self).__name__}.parse({str(self)!r})"

    def describe_missing(self) -> str:
        """A short text naming the set's ranges, for an error message about missing GTIDs,
        e.g. ``0-1-95..0-1-120`` or ``uuid:95-120``; past :data:`DESCRIBE_RANGES` ranges it
        says how many more there are."""
        ranges = [text for key, intervals in self._sets.items() for text in self._describe(key, intervals)]
        if not ranges:
            return "(none)"
        shown = ", ".join(ranges[:DESCRIBE_RANGES])
        if len(ranges) > DESCRIBE_RANGES:
            shown += f" and {len(ranges) - DESCRIBE_RANGES} more ranges ({self.count()} GTIDs in all)"
        return shown

    def _check_flavour(self, other: object) -> None:
        if not isinstance(other, GtidSet):
            raise TypeError(f"a {self._flavour_name} GTID set cannot be combined with {type(other).__name__}")
        if other.flavour != self.flavour:
            raise TypeError(
                f"cannot combine a {self._flavour_name} GTID set with a {other._flavour_name} one: "
                "MySQL and MariaDB GTIDs are different things"
            )

    def _display(self) -> dict:
        """What a set derived from this one keeps for display (a subclass may keep some)."""
        return {}

    def _display_union(self, other: GtidSet) -> dict:
        """What the union of this set and ``other`` keeps for display."""
        return {}

    # -- what each flavour defines -------------------------------------------------

    _EVENTS: ClassVar[tuple[type, ...]]

    @staticmethod
    @abstractmethod
    def _sort_key(key: Hashable):
        """How keys are ordered in the text."""

    @classmethod
    @abstractmethod
    def _parse(cls, text: str) -> GtidSet:
        """The set written ``text``."""

    @classmethod
    @abstractmethod
    def _from_event(cls, event: object) -> GtidSet:
        """The set an event of this flavour logs."""

    @classmethod
    @abstractmethod
    def _parse_gtid(cls, gtid: str) -> tuple[Hashable, int]:
        """``(key, number)`` of the one GTID written ``gtid``."""

    @classmethod
    @abstractmethod
    def _gtid_set(cls, gtid: str) -> GtidSet:
        """The set of the one GTID written ``gtid``."""

    @classmethod
    @abstractmethod
    def _gtids_set(cls, gtids: list[str]) -> GtidSet:
        """The set of the GTIDs written ``gtids`` (none anonymous)."""

    @abstractmethod
    def _describe(self, key: Hashable, intervals: Intervals) -> list[str]:
        """One human text per range of ``key``."""

    @abstractmethod
    def __str__(self) -> str:
        """The canonical text."""


def _flavour_class(flavour: str | None) -> type[GtidSet]:
    for flavour_class in (MysqlGtidSet, MariadbGtidSet):
        if flavour == flavour_class.flavour:
            return flavour_class
    raise ValueError(f"unknown GTID flavour {flavour!r}: expected 'mysql' or 'mariadb'")


class MysqlGtidSet(GtidSet):
    """MySQL's ``Gtid_set``: GTIDs ``uuid:gno`` and, from MySQL 8.3, ``uuid:tag:gno``.

    Keys are ``(uuid, tag)``, the uuid in lower case and the tag ``None`` when
    untagged; gnos run 1..2^63-2 (``GNO_END`` is ``INT64_MAX``).

    Text (``Gtid_set::to_string`` with ``default_string_format``): uuids in
    order, each followed by its untagged intervals and then by each tag (in
    order) and its intervals, all ``:``-separated, an interval as ``first-last``
    or a lone number. MySQL separates uuids with ``",\\n"``; ``str()`` uses
    ``","`` alone, as the decoder's ``PreviousGtidsEvent.gtid_set`` does.

    :meth:`parse` reads what ``Gtid_set::add_gtid_text`` reads: whitespace
    around every token, empty entries between commas, upper-case uuids and tags,
    a uuid with no intervals, intervals in any order and overlapping, and a tag
    switching the intervals that follow it (so ``uuid:tag:1-3``, the decoder's
    form, reads too). Unlike MySQL it refuses ``first-last`` with ``last <
    first`` (MySQL silently skips it) and numbers in hex or octal.
    """

    __slots__ = ()
    flavour = "mysql"
    _flavour_name = "MySQL"
    _EVENTS = (PreviousGtidsEvent, GtidEvent)

    @staticmethod
    def _sort_key(key: tuple[str, str | None]):
        uuid, tag = key
        return (uuid, tag or "")

    @classmethod
    def _parse(cls, text: str) -> MysqlGtidSet:
        scan = _Scanner(text, "MySQL GTID set")
        sets: dict[tuple[str, str | None], list[Interval]] = {}
        scan.skip_space()
        while not scan.at_end():
            if scan.literal(","):
                scan.skip_space()
                continue
            uuid = scan.token(_UUID)
            if uuid is None:
                raise scan.error("a UUID like 3e11fa47-71ca-11e1-9e33-c80aa9429562")
            key = (uuid.lower(), None)
            scan.skip_space()
            while scan.literal(":"):
                scan.skip_space()
                tag = scan.token(_TAG)
                if tag is not None:
                    key = (key[0], _tag(tag, scan))
                else:
                    sets.setdefault(key, []).append(_gno_interval(scan))
                scan.skip_space()
            if not scan.at_end() and not scan.literal(","):
                raise scan.error("':', ',' or the end")
            scan.skip_space()
        return cls._of(sets)

    @classmethod
    def _from_event(cls, event: PreviousGtidsEvent | GtidEvent) -> MysqlGtidSet:
        if isinstance(event, GtidEvent):
            if event.gtid == ANONYMOUS or event.gno == 0:
                return cls()
            gno = _event_gno(event.gno)
            return cls._of({(event.sid, _event_tag(event.tag)): [(gno, gno)]})
        sets: dict[tuple[str, str | None], list[Interval]] = {}
        for entry in event.sids:
            key = (entry.sid, _event_tag(entry.tag))
            for start, end in entry.intervals:  # [start, end) on disk
                if not 1 <= start < end <= MYSQL_MAX_GNO + 1:
                    raise ValueError(
                        f"PREVIOUS_GTIDS interval [{start}, {end}) of {entry.sid} is not 1 <= start < end <= 2^63-1"
                    )
                sets.setdefault(key, []).append((start, end - 1))
        return cls._of(sets)

    @classmethod
    def _parse_gtid(cls, gtid: str) -> tuple[tuple[str, str | None], int]:
        if not isinstance(gtid, str):
            raise TypeError(f"a MySQL GTID is text, not {type(gtid).__name__}")
        found = _MYSQL_GTID.fullmatch(gtid)
        if found is None or _UUID.fullmatch(found["uuid"]) is None:
            raise ValueError(f"malformed MySQL GTID {_quoted(gtid)}: expected uuid:number or uuid:tag:number")
        tag = found["tag"]
        if tag is not None and len(tag) > MYSQL_TAG_MAX_LENGTH:
            raise ValueError(
                f"malformed MySQL GTID {_quoted(gtid)}: a tag has at most {MYSQL_TAG_MAX_LENGTH} characters"
            )
        gno = _number_in(gtid, found["gno"], "the number", 1, MYSQL_MAX_GNO)
        return (found["uuid"].lower(), tag.lower() if tag else None), gno

    @classmethod
    def _gtid_set(cls, gtid: str) -> MysqlGtidSet:
        key, gno = cls._parse_gtid(gtid)
        return cls._of({key: [(gno, gno)]})

    @classmethod
    def _gtids_set(cls, gtids: list[str]) -> MysqlGtidSet:
        sets: dict[tuple[str, str | None], list[Interval]] = {}
        for gtid in gtids:
            key, gno = cls._parse_gtid(gtid)
            sets.setdefault(key, []).append((gno, gno))
        return cls._of(sets)

    def __str__(self) -> str:
        entries = []
        for uuid, items in groupby(self._sets.items(), key=lambda item: item[0][0]):
            text = uuid
            for (_, tag), intervals in items:
                text += (f":{tag}" if tag else "") + ":" + _mysql_ranges(intervals)
            entries.append(text)
        return ",".join(entries)

    def _describe(self, key: tuple[str, str | None], intervals: Intervals) -> list[str]:
        uuid, tag = key
        name = f"{uuid}:{tag}" if tag else uuid
        return [f"{name}:{_mysql_ranges((interval,))}" for interval in intervals]


def _mysql_ranges(intervals: Intervals) -> str:
    return ":".join(str(first) if first == last else f"{first}-{last}" for first, last in intervals)


def _tag(tag: str, scan: _Scanner) -> str:
    if len(tag) > MYSQL_TAG_MAX_LENGTH:
        scan.pos -= len(tag)
        raise scan.error(f"a tag of at most {MYSQL_TAG_MAX_LENGTH} characters")
    return tag.lower()


def _gno_interval(scan: _Scanner) -> Interval:
    """``first[-last]`` at the scanner, after a ``:``."""
    start = scan.pos
    first = scan.number("a transaction number or a tag", 1, MYSQL_MAX_GNO)
    scan.skip_space()
    last = first
    if scan.literal("-"):
        scan.skip_space()
        last = scan.number("the last transaction number of the interval", 1, MYSQL_MAX_GNO)
        if last < first:
            scan.pos = start
            raise scan.error(f"an interval first-last with last >= first (not {first}-{last})")
    return (first, last)


def _event_tag(tag: str | None) -> str | None:
    """A tag read from an event, checked as MySQL's ``Tag::decode_tag`` checks it."""
    if not tag:
        return None
    if len(tag) > MYSQL_TAG_MAX_LENGTH or _TAG.fullmatch(tag) is None:
        raise ValueError(f"GTID tag {tag!r} is not [a-z_][a-z0-9_]{{0,31}}")
    return tag.lower()


def _event_gno(gno: int) -> int:
    if not 1 <= gno <= MYSQL_MAX_GNO:
        raise ValueError(f"GTID event gno {gno} is not in 1..2^63-2")
    return gno


class MariadbGtidSet(GtidSet):
    """MariaDB GTIDs ``domain-server-seq`` as a set of ``(domain, seq_no)``.

    Keys are domain ids; ``seq_no`` runs 1..2^64-1. MariaDB allocates seq_no
    from 1 (``rpl_binlog_state::update_with_next_gtid``), so ``D-S-0`` is a
    position before any transaction: it parses, as the empty set of its
    domain, but it is no GTID for :meth:`with_gtid` or ``in``.

    Server ids are kept for display only, as MariaDB's binlog state keeps
    them: per domain, the last ``seq_no`` known of each server. The server
    shown for a ``seq_no`` is that of the first known one at or after it, else
    of the last known one. They take no part in equality or arithmetic.

    Text: domains in order; a domain holding exactly ``1..N`` is ``D-S-N``,
    the GTID position MariaDB writes (``@@gtid_binlog_pos``); any other domain
    is one ``D-S-first..last`` per interval, ``S`` the server of ``last``.
    :meth:`parse` reads both forms, ``,``-separated with optional whitespace
    around commas; several ``D-S-N`` of one domain (a ``gtid_binlog_state``)
    mean ``1..max(N)``.
    """

    __slots__ = ("_servers",)
    flavour = "mariadb"
    _flavour_name = "MariaDB"
    _EVENTS = (GtidListEvent, MariadbGtidEvent)

    def __init__(self) -> None:
        """The empty set."""
        super().__init__()
        self._servers: dict[int, tuple[tuple[int, int], ...]] = {}

    def _finish(self, servers: Mapping[int, Iterable[tuple[int, int]]] | None = None) -> None:
        """Keep the ``(seq_no, server_id)`` points of the domains the set holds."""
        servers = servers or {}
        self._servers = {domain: _server_runs(servers.get(domain, ())) for domain in self._sets}

    @staticmethod
    def _sort_key(key: int) -> int:
        return key

    @classmethod
    def from_gtid_list(cls, gtids: Iterable[str]) -> MariadbGtidSet:
        """The set a GTID_LIST event or ``@@gtid_binlog_state`` stands for: a list of
        ``D-S-N``, the last seq_no of each server; per domain, every seq_no up to the largest."""
        if isinstance(gtids, str):
            raise TypeError("from_gtid_list takes a list of GTIDs; parse() reads a text")
        sets: dict[int, list[Interval]] = {}
        servers: dict[int, list[tuple[int, int]]] = {}
        for gtid in gtids:
            domain, server, seq = _mariadb_position(gtid)
            sets.setdefault(domain, []).extend([(1, seq)] if seq else [])
            servers.setdefault(domain, []).append((seq, server))
        return cls._of(sets, servers=servers)

    @classmethod
    def _parse(cls, text: str) -> MariadbGtidSet:
        scan = _Scanner(text, "MariaDB GTID set")
        sets: dict[int, list[Interval]] = {}
        servers: dict[int, list[tuple[int, int]]] = {}
        scan.skip_space()
        while not scan.at_end():
            domain = scan.number("a GTID domain-server-seq (domain id)", 0, MARIADB_MAX_ID)
            if not scan.literal("-"):
                raise scan.error("'-' after the domain id")
            server = scan.number("a server id", 0, MARIADB_MAX_ID)
            if not scan.literal("-"):
                raise scan.error("'-' after the server id")
            start = scan.pos
            last = scan.number("a seq_no", 0, MARIADB_MAX_SEQ)
            first = 1
            if scan.literal(".."):
                first = last
                last = scan.number("the last seq_no of the range", 1, MARIADB_MAX_SEQ)
                if first < 1 or last < first:
                    scan.pos = start
                    raise scan.error(f"a range first..last with 1 <= first <= last (not {first}..{last})")
            sets.setdefault(domain, []).extend([(first, last)] if last else [])
            servers.setdefault(domain, []).append((last, server))
            scan.skip_space()
            if not scan.at_end():
                if not scan.literal(","):
                    raise scan.error("',' or the end")
                scan.skip_space()
                if scan.at_end():
                    raise scan.error("a GTID after ','")
        return cls._of(sets, servers=servers)

    @classmethod
    def _from_event(cls, event: GtidListEvent | MariadbGtidEvent) -> MariadbGtidSet:
        if isinstance(event, MariadbGtidEvent):
            return cls._gtid_set(event.gtid)
        return cls.from_gtid_list(event.gtids)

    @classmethod
    def _parse_gtid(cls, gtid: str) -> tuple[int, int]:
        domain, _, seq = _mariadb_gtid(gtid)
        return domain, seq

    @classmethod
    def _gtid_set(cls, gtid: str) -> MariadbGtidSet:
        domain, server, seq = _mariadb_gtid(gtid)
        return cls._of({domain: [(seq, seq)]}, servers={domain: [(seq, server)]})

    @classmethod
    def _gtids_set(cls, gtids: list[str]) -> MariadbGtidSet:
        sets: dict[int, list[Interval]] = {}
        servers: dict[int, list[tuple[int, int]]] = {}
        for gtid in gtids:
            domain, server, seq = _mariadb_gtid(gtid)
            sets.setdefault(domain, []).append((seq, seq))
            servers.setdefault(domain, []).append((seq, server))
        return cls._of(sets, servers=servers)

    def _display(self) -> dict:
        return {"servers": self._servers}

    def _display_union(self, other: GtidSet) -> dict:
        domains = self._servers.keys() | other._servers.keys()
        return {"servers": {d: self._servers.get(d, ()) + other._servers.get(d, ()) for d in domains}}

    def _server(self, domain: int, seq: int) -> int:
        points = self._servers[domain]
        index = bisect.bisect_left(points, (seq, -1))
        return points[min(index, len(points) - 1)][1]

    def __str__(self) -> str:
        entries = []
        for domain, intervals in self._sets.items():
            if len(intervals) == 1 and intervals[0][0] == 1:
                last = intervals[0][1]
                entries.append(f"{domain}-{self._server(domain, last)}-{last}")
            else:
                entries.extend(f"{domain}-{self._server(domain, last)}-{first}..{last}" for first, last in intervals)
        return ",".join(entries)

    def _describe(self, domain: int, intervals: Intervals) -> list[str]:
        out = []
        for first, last in intervals:
            name = f"{domain}-{self._server(domain, last)}-"
            out.append(f"{name}{first}" if first == last else f"{name}{first}..{name}{last}")
        return out


def _mariadb_position(gtid: str) -> tuple[int, int, int]:
    """``(domain, server, seq_no)`` of ``D-S-N`` (N may be 0), as ``gtid_parser_helper`` reads it."""
    if not isinstance(gtid, str):
        raise TypeError(f"a MariaDB GTID is text, not {type(gtid).__name__}")
    found = _MARIADB_GTID.fullmatch(gtid)
    if found is None:
        raise ValueError(f"malformed MariaDB GTID {_quoted(gtid)}: expected domain-server-seq, e.g. 0-1-42")
    return (
        _number_in(gtid, found[1], "the domain id", 0, MARIADB_MAX_ID),
        _number_in(gtid, found[2], "the server id", 0, MARIADB_MAX_ID),
        _number_in(gtid, found[3], "seq_no", 0, MARIADB_MAX_SEQ),
    )


def _mariadb_gtid(gtid: str) -> tuple[int, int, int]:
    """``(domain, server, seq_no)`` of one transaction's GTID ``D-S-N``: N >= 1."""
    domain, server, seq = _mariadb_position(gtid)
    if seq == 0:
        raise ValueError(f"malformed MariaDB GTID {_quoted(gtid)}: seq_no 0 is a position, not a transaction")
    return domain, server, seq


def _server_runs(points: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """``(seq_no, server)`` points sorted, the first of equal seq_no kept, and each run of
    one server reduced to its last point (the server shown for a seq_no does not change)."""
    by_seq: dict[int, int] = {}
    for seq, server in points:
        by_seq.setdefault(seq, server)
    ordered = sorted(by_seq.items())
    return tuple(point for point, after in zip(ordered, ordered[1:] + [None]) if after is None or after[1] != point[1])


# -- files -----------------------------------------------------------------------


def file_gtid_set(path: str | os.PathLike[str]) -> GtidSet | None:
    """The GTID set a binlog file logs at its start, before its first transaction:
    every GTID of the files before it (MySQL's PREVIOUS_GTIDS, MariaDB's GTID_LIST).
    ``None`` when the file logs neither (MySQL 5.1 to 5.5, MariaDB 5.x)."""
    for raw in BinlogReader(path, unwrap_payloads=False):
        if raw.type_code in (EventType.PREVIOUS_GTIDS, EventType.GTID_LIST):
            return GtidSet.from_event(decode(raw))
        if raw.type_code not in OUTSIDE:
            return None
    return None
