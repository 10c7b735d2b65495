"""The warehouse's Iceberg catalog: the tables every engine reads through it.

The metadata tables that runs only ever add files to (:data:`APPENDED`:
``transactions``, ``runs``, ``schema_changes``, ``charset_checks``) are Iceberg
v2 tables ``_binlake.<name>`` of a pyiceberg SQL catalog: by default a SQLite
file in the warehouse, ``_iceberg/catalog.db`` (:func:`default_uri`), or the
SQLAlchemy URL the warehouse was first given (:func:`configure`: PostgreSQL at
scale), kept in ``_iceberg/catalog.json``. Their data files are the
warehouse's own Parquet files, registered where they are (never copied); the
Iceberg metadata lives under ``_iceberg/<namespace>/<table>/``.

:func:`sync` is a step of every commit (:mod:`spark_jobs.publish`): after the
run's files are in place and before the checkpoint moves, each table gets one
snapshot adding the files it does not reference yet, its summary carrying the
run (``binlake.run_id``) and the checkpoint it commits (``binlake.checkpoint``),
so that a reader can travel back to the snapshot of a run. Iceberg commits one
table at a time: a commit that dies among them is finished by the recovery of
its journal, which syncs again; a sync that is repeated adds nothing, so no
table holds a run twice. A file whose schema adds columns widens the table
first (union by name).

DuckDB reads the tables offline with its Iceberg extension, loaded by path from
the ``duckdb-extension-iceberg`` package (:func:`duckdb_connection`).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow.parquet as pq

log = logging.getLogger(__name__)

NAMESPACE = "_binlake"
APPENDED = ("transactions", "runs", "schema_changes", "charset_checks")
FOLDER = "_iceberg"  # the catalog file and the tables' Iceberg metadata, in the warehouse
RUN_ID, CHECKPOINT = "binlake.run_id", "binlake.checkpoint"


CONFIG = "catalog.json"


def default_uri(warehouse: Path) -> str:
    """The SQLite catalog of a local warehouse."""
    return f"sqlite:///{Path(warehouse).resolve() / FOLDER / 'catalog.db'}"


def configure(warehouse: Path, uri: str) -> None:
    """Keep ``uri`` as the warehouse's catalog; a warehouse already kept in another one raises
    ``ValueError`` (its tables are registered there)."""
    config = Path(warehouse).resolve() / FOLDER / CONFIG
    kept = json.loads(config.read_text())["uri"] if config.exists() else None
    if kept is None:
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(json.dumps({"uri": uri}))
    elif kept != uri:
        raise ValueError(f"the warehouse {warehouse} is registered in the catalog {_shown(kept)}, not {_shown(uri)}")


def uri_of(warehouse: Path) -> str:
    """The warehouse's catalog: the one :func:`configure` kept, else :func:`default_uri`."""
    config = Path(warehouse).resolve() / FOLDER / CONFIG
    return json.loads(config.read_text())["uri"] if config.exists() else default_uri(warehouse)


def _shown(uri: str) -> str:
    """A catalog URL without its password."""
    from sqlalchemy.engine import make_url

    return make_url(uri).render_as_string(hide_password=True)


def open_catalog(warehouse: Path):
    """The warehouse's catalog (:func:`uri_of`)."""
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse = Path(warehouse).resolve()
    (warehouse / FOLDER).mkdir(parents=True, exist_ok=True)
    return SqlCatalog("binlake", uri=uri_of(warehouse), warehouse=(warehouse / FOLDER).as_uri())


def identifier(name: str) -> str:
    """The catalog identifier of metadata table ``name``."""
    return f"{NAMESPACE}.{name}"


class CatalogUnavailable(RuntimeError):
    """The catalog did not take a run's snapshots: the commit waits for it (see :func:`sync`)."""


def sync(warehouse: Path, run_id: str, checkpoint: dict) -> dict[str, int]:
    """Register the files of the warehouse's appended metadata tables that the catalog does not
    reference yet, a snapshot per table carrying ``run_id`` and ``checkpoint``; returns the
    files added per table (none when the catalog was up to date). A catalog that cannot be
    reached or refuses a commit raises :class:`CatalogUnavailable`, saying so."""
    warehouse = Path(warehouse).resolve()
    try:
        added = _sync(warehouse, run_id, checkpoint)
    except Exception as exc:
        lines = str(exc).strip().splitlines()
        raise CatalogUnavailable(
            f"run {run_id}: the catalog {_shown(uri_of(warehouse))} did not take the run "
            f"({type(exc).__name__}: {lines[0] if lines else ''}); its files are in place and the checkpoint has "
            "not moved: the next run finishes the commit once the catalog answers") from exc
    log.info("run %s: catalog %s: %s", run_id, _shown(uri_of(warehouse)),
             ", ".join(f"{identifier(name)} +{count} files" for name, count in added.items()) or "nothing to add")
    return added


def _sync(warehouse: Path, run_id: str, checkpoint: dict) -> dict[str, int]:
    catalog = open_catalog(warehouse)
    catalog.create_namespace_if_not_exists(NAMESPACE)
    added = {}
    for name in APPENDED:
        files = sorted(str(path) for path in (warehouse / "metadata" / name).glob("*.parquet"))
        if files:
            added[name] = _add_new_files(catalog, warehouse, name, files, {
                RUN_ID: run_id, CHECKPOINT: json.dumps(checkpoint, sort_keys=True)})
    return added


def _add_new_files(catalog, warehouse: Path, name: str, files: list[str], summary: dict[str, str]) -> int:
    table = _table(catalog, warehouse, name, files[-1])
    referenced = {task.file.file_path for task in table.scan().plan_files()}
    new = [file for file in files if Path(file).as_uri() not in referenced and file not in referenced]
    if not new:
        return 0
    with table.transaction() as transaction:
        with transaction.update_schema() as schema:
            for file in new:
                schema.union_by_name(pq.read_schema(file))
        transaction.add_files([Path(file).as_uri() for file in new], snapshot_properties=summary)
    return len(new)


def _table(catalog, warehouse: Path, name: str, example: str):
    """The Iceberg table of metadata table ``name``, created from the schema of file ``example``."""
    from pyiceberg.exceptions import NoSuchTableError

    try:
        return catalog.load_table(identifier(name))
    except NoSuchTableError:
        log.info("creating the Iceberg table %s", identifier(name))
        location = (warehouse / FOLDER / NAMESPACE / name).as_uri()
        return catalog.create_table(identifier(name), schema=pq.read_schema(example), location=location)


def duckdb_connection():
    """A DuckDB connection that reads Iceberg tables offline: the Avro and Iceberg extensions
    loaded by path from their pip packages, nothing installed or loaded from the network."""
    import duckdb
    import duckdb_extension_avro
    import duckdb_extension_iceberg

    connection = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    for package, name in ((duckdb_extension_avro, "avro"), (duckdb_extension_iceberg, "iceberg")):
        path = Path(package.__file__).parent / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
        connection.execute(f"LOAD '{path}'")
    return connection


def metadata_location(warehouse: Path, name: str) -> str:
    """Where the current metadata of ``_binlake.<name>`` is: what ``iceberg_scan`` reads."""
    return open_catalog(warehouse).load_table(identifier(name)).metadata_location
