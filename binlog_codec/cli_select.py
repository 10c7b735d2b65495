"""Which transactions and tables ``binlog-codec`` shows: ``--include-gtids``, ``--exclude-gtids``
and ``--database``.

GTIDs, as ``mysqlbinlog --include-gtids / --exclude-gtids`` (MySQL) take them,
for MySQL and MariaDB GTID sets alike (their text and arithmetic are
:mod:`binlog_codec.gtid_set`'s): a transaction is kept when its GTID is in the
include set, if one is given, and not in the exclude set, if one is given; its
events are kept or dropped together. Events outside transactions (format
description, rotate, GTID list, ...: :data:`binlog_codec.transactions.OUTSIDE`)
are always kept. A transaction without a GTID (an anonymous MySQL one, a binlog
without GTIDs, events before the first GTID event read) is in no set.

``mariadb-binlog`` spells these differently: ``--start-position`` with a GTID
list ``D-S-N,...`` shows the transactions after ``N`` of each listed domain,
``--exclude-gtids D-S-N,...`` here; ``--stop-position`` with a GTID list shows
those up to ``N`` of the listed domains and none of the others,
``--include-gtids D-S-N,...``; a window of both is ``--include-gtids
D-S-first..last``. ``--do-domain-ids`` and ``--ignore-domain-ids`` are a set
holding all of a domain, ``D-S-18446744073709551615``. Server ids are no part
of a GTID set (``--do-server-ids`` has no counterpart here).

``--database NAME`` keeps the table maps of that database and the rows events
of those tables, as ``mysqlbinlog -d`` does with row events; every other event
is kept. ``mysqlbinlog -d`` also drops statements (QUERY events) whose current
database (``USE``) is another one, whatever tables they change; here statements
are never dropped by their database.
"""

from __future__ import annotations

from .events import Event, RowsEvent, TableMapEvent
from .events.gtid import GtidEvent, MariadbGtidEvent
from .gtid_set import GtidSet
from .transactions import OUTSIDE


class OptionMismatch(ValueError):
    """Options that do not fit the binlog they are applied to (a GTID set of the other flavour)."""


def gtid_set_option(text: str) -> GtidSet:
    """A GTID set option's value: MySQL's ``uuid:1-5[,...]`` (with tags, ``uuid:tag:1-5``) when the
    text holds a ``:``, else MariaDB's ``domain-server-seq[,...]`` (:meth:`GtidSet.parse`)."""
    return GtidSet.parse(text, "mysql" if ":" in text else "mariadb")


class GtidSelection:
    """The transactions ``--include-gtids`` and ``--exclude-gtids`` keep."""

    def __init__(self, include: GtidSet | None, exclude: GtidSet | None) -> None:
        self.include, self.exclude = include, exclude

    def keeps(self, gtid: str | None, file: str) -> bool:
        """Whether the transaction with ``gtid`` (None: it has none) of ``file`` is kept; an
        :class:`OptionMismatch` when the GTID is of the other flavour than the sets."""
        if self.include is not None and not _holds(self.include, "include", gtid, file):
            return False
        return self.exclude is None or not _holds(self.exclude, "exclude", gtid, file)


_FLAVOURS = {"mysql": "MySQL", "mariadb": "MariaDB"}


def _holds(gtids: GtidSet, option: str, gtid: str | None, file: str) -> bool:
    """Whether ``gtid`` is in the set of ``--{option}-gtids`` (a transaction without one is not)."""
    if gtid is None:
        return False
    try:
        return gtid in gtids
    except ValueError:
        other = next(name for flavour, name in _FLAVOURS.items() if flavour != gtids.flavour)
        raise OptionMismatch(
            f"{file}: --{option}-gtids is a {_FLAVOURS[gtids.flavour]} GTID set, and this binlog logs "
            f"{other} GTIDs ({gtid})"
        ) from None


class EventSelection:
    """Which events of one file ``events`` shows, by their transaction's GTID and their table's
    database. Give it every event of the file in order (:meth:`keeps`), dropped ones too: it
    follows the GTID of the current transaction and the database of each table id."""

    def __init__(self, gtids: GtidSelection, database: str | None) -> None:
        self._gtids, self._database = gtids, database
        self._gtid: str | None = None
        self._databases: dict[int, str] = {}  # table id -> database, from the table maps read

    def keeps(self, event: Event) -> bool:
        if isinstance(event, (GtidEvent, MariadbGtidEvent)):
            self._gtid = event.gtid
        elif isinstance(event, TableMapEvent):
            self._databases[event.table_id] = event.database
        if event.type_code in OUTSIDE:
            return True
        if not self._gtids.keeps(self._gtid, event.file):
            return False
        return self._database is None or self._table_database(event) in (None, self._database)

    def _table_database(self, event: Event) -> str | None:
        """The database of a table map or rows event (None for other events, or a rows event
        whose table map was not read)."""
        if isinstance(event, (TableMapEvent, RowsEvent)):
            return self._databases.get(event.table_id)
        return None
