"""Where a table's files live: ``<area>/<db>/<table>/`` in staging, run and warehouse folders.

In an object-store warehouse, a run writes its files once, where they stay: its
output folder ``data/<run id>.<attempt>/`` is laid out as the warehouse is at
its root (:func:`layout_path`); the catalog names each file where it is.

Database and table names become one path component each, percent-encoded where
a name holds characters a path cannot (``/``, ``.``, ``%`` and the like), so
that every MySQL identifier has exactly one folder and no folder escapes its
parent.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

RUNS_FOLDER = "_runs"  # a run's work area: _runs/<run id>/ in the storage and in the state folder
INFLATED_FOLDER = "_inflated"  # under RUNS_FOLDER: compressed binlogs of a stream, decompressed
DATA_FOLDER = "data"  # data/<run output>/: a run's files in an object store, written where they stay


def path_part(name: str) -> str:
    """A database or table name as one path component."""
    return quote(name, safe=" $-_@").replace(".", "%2E") or "%00"


def name_of(part: str) -> str:
    """The name :func:`path_part` made ``part`` of."""
    return "" if part == "%00" else unquote(part)


def output_folder(run_id: str, attempt: str) -> str:
    """Where, in an object-store warehouse, one attempt of a run writes its files (relative to the
    warehouse): laid out below as the warehouse is at its root, and left there by the commit."""
    return f"{DATA_FOLDER}/{run_id}.{attempt}"


def is_output_folder(relative: str) -> bool:
    """Is ``relative`` (a path relative to the warehouse) a run's output folder (:func:`output_folder`)?"""
    parts = relative.split("/")
    return len(parts) == 2 and parts[0] == DATA_FOLDER and bool(parts[1])


def layout_path(relative: str) -> str:
    """Where the warehouse file ``relative`` (a path relative to the warehouse) is in the layout:
    a file of a run's output folder (``data/<output>/current/<db>/<table>/...``) is where it would
    be at the warehouse's root (``current/<db>/<table>/...``); any other file, its own path."""
    parts = relative.split("/", 2)
    return parts[2] if len(parts) == 3 and parts[0] == DATA_FOLDER else relative


def table_folder(root: str, area: str, database: str, table: str) -> str:
    """``root/area/<db>/<table>``, e.g. the warehouse's ``current`` folder of a table."""
    return f"{str(root).rstrip('/')}/{area}/{path_part(database)}/{path_part(table)}"
