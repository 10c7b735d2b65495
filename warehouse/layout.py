"""Where a table's files live: ``<area>/<db>/<table>/`` in staging, run and warehouse folders.

Database and table names become one path component each, percent-encoded where
a name holds characters a path cannot (``/``, ``.``, ``%`` and the like), so
that every MySQL identifier has exactly one folder and no folder escapes its
parent.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

RUNS_FOLDER = "_runs"  # a run's work area: _runs/<run id>/ in the storage and in the state folder
INFLATED_FOLDER = "_inflated"  # under RUNS_FOLDER: compressed binlogs of a stream, decompressed


def path_part(name: str) -> str:
    """A database or table name as one path component."""
    return quote(name, safe=" $-_@").replace(".", "%2E") or "%00"


def name_of(part: str) -> str:
    """The name :func:`path_part` made ``part`` of."""
    return "" if part == "%00" else unquote(part)


def table_folder(root: str, area: str, database: str, table: str) -> str:
    """``root/area/<db>/<table>``, e.g. the warehouse's ``current`` folder of a table."""
    return f"{str(root).rstrip('/')}/{area}/{path_part(database)}/{path_part(table)}"
