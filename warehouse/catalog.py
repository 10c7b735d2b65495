"""The warehouse's Iceberg catalog: every table of the warehouse, read by every engine through it.

Every table of the warehouse contract is an Iceberg v2 table of a pyiceberg SQL
catalog: by default a SQLite file in the warehouse, ``_iceberg/catalog.db``
(:func:`default_uri`), or the SQLAlchemy URL the warehouse was first given
(:func:`configure`: PostgreSQL at scale), kept in ``_iceberg/catalog.json``.

=================================  ==========================================  ===========
table                              files                                       a commit
=================================  ==========================================  ===========
``<db>.<table>``                   ``current/<db>/<table>/``                   replaces it
``<db>.<table>__changes``          ``changes/<db>/<table>/commit_date=*/``     appends
``_binlake.table_schemas``         ``metadata/table_schemas/``                 replaces it
``_binlake.<name>``                ``metadata/<name>/`` (transactions, runs,   appends
                                   schema_changes, charset_checks)
=================================  ==========================================  ===========

(:func:`table_of`). Data files are Parquet files the Spark tasks wrote once, at
paths unique to their run (``<run id>-<part>.parquet``), registered where they
are, never renamed or rewritten; a table that a run replaces keeps its older
files for its older snapshots, until maintenance expires those. The Iceberg
metadata lives under ``_iceberg/<namespace>/<table>/``. Readers go through the
catalog (:func:`data_files`, :func:`read`, DuckDB's ``iceberg_scan`` on
:func:`metadata_location`): a table's folder holds the files of older snapshots
as well.

:func:`sync` is a step of every commit (:mod:`warehouse.publish`): after the
run's files are in place and before the checkpoint moves, each table the run
touches gets one snapshot, its summary carrying the run (``binlake.run_id``)
and the checkpoint it commits (``binlake.checkpoint``), so that a reader can
travel back to the snapshot of a run. Iceberg commits one table at a time: a
commit that dies among them is finished by the recovery of its journal, which
syncs again; a sync that is repeated changes nothing (a table already holding
the run's files gets no snapshot), so no table ever holds a run twice or half.

Schemas follow the files: columns a file adds are added (by name: the files
carry no Iceberg field ids, the table's name mapping resolves them); a table a
commit replaces takes the new files' columns, their order, and their types even
where Iceberg allows no promotion (the column is dropped and added again under
a new field id: no file of the new snapshot holds the old type). In a table a
commit appends to, such a type change (``INT`` to ``VARCHAR``, ``BIGINT`` to
``BIGINT UNSIGNED``) rewrites the table's earlier files with the column in the
new type (:func:`conform`), in the same snapshot; the casts are tried before the commit's
journal is written (:func:`check_type_changes`), so that a value the new type cannot hold
exactly refuses the run instead of stopping its commit half way.
"""

from __future__ import annotations

import itertools
import json
import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from spark_jobs import imports
from warehouse import storage
from warehouse.layout import layout_path, name_of, path_part

log = logging.getLogger(__name__)


class _NoStatisticsNotice(logging.Filter):
    """pyiceberg warns, per column and file, that Parquet holds no statistics for a column: the
    files of nested columns (``_before``, lists, maps) have none on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("PyArrow statistics missing")


logging.getLogger("pyiceberg.io.pyarrow").addFilter(_NoStatisticsNotice())

NAMESPACE = "_binlake"
APPENDED = ("transactions", "runs", "schema_changes", "charset_checks")
REPLACED = ("table_schemas",)
CHANGES = "__changes"  # the suffix of a source table's changes table
FOLDER = "_iceberg"  # the catalog file and the tables' Iceberg metadata, in the warehouse
RUN_ID, CHECKPOINT = "binlake.run_id", "binlake.checkpoint"
NAME_MAPPING = "schema.name-mapping.default"
# an append merges the table's manifests once they are many (pyiceberg's default count, 100), so
# that a commit's read of them does not grow with every run
MANIFEST_MERGE = "commit.manifest-merge.enabled"

CONFIG = "catalog.json"


def default_uri(warehouse: Path) -> str:
    """The SQLite catalog of a local warehouse."""
    return f"sqlite:///{Path(warehouse).resolve() / FOLDER / 'catalog.db'}"


def configure(warehouse: Path, uri: str) -> None:
    """Keep ``uri`` as the warehouse's catalog; a warehouse already kept in another one raises
    ``ValueError`` (its tables are registered there)."""
    kept = storage.keep(Path(warehouse).resolve() / FOLDER / CONFIG, uri)
    if kept != uri:
        raise ValueError(f"the warehouse {warehouse} is registered in the catalog {_shown(kept)}, not {_shown(uri)}")


def uri_of(warehouse: Path) -> str:
    """The warehouse's catalog: the one :func:`configure` kept, else :func:`default_uri`."""
    config = Path(warehouse).resolve() / FOLDER / CONFIG
    return json.loads(config.read_text())["uri"] if config.exists() else default_uri(warehouse)


def _shown(uri: str) -> str:
    """A catalog URL without its password."""
    from sqlalchemy.engine import make_url

    return make_url(uri).render_as_string(hide_password=True)


def import_in_background():
    """Start importing pyiceberg (a second of CPU) in a thread, for a run that will read or
    commit the catalog once it has decoded its binlogs (:func:`spark_jobs.imports.in_background`)."""
    return imports.in_background("pyiceberg.catalog.sql", "pyiceberg.io.pyarrow")


def open_catalog(warehouse: Path):
    """The warehouse's catalog (:func:`uri_of`)."""
    from pyiceberg.catalog.sql import SqlCatalog

    from sqlalchemy.exc import OperationalError

    warehouse = Path(warehouse).resolve()
    (warehouse / FOLDER).mkdir(parents=True, exist_ok=True)
    files = storage.of(warehouse)
    properties = {"uri": uri_of(warehouse), "warehouse": iceberg_uri(files.location(FOLDER)),
                  **files.iceberg_properties()}
    try:
        return SqlCatalog("binlake", **properties)
    except OperationalError as exc:  # a reader and a writer both creating the catalog's tables
        if "already exists" not in str(exc):
            raise
        return SqlCatalog("binlake", **properties)


@contextmanager
def connected(warehouse: Path):
    """The warehouse's catalog (:func:`open_catalog`), its database connections closed at the end."""
    catalog = open_catalog(warehouse)
    try:
        yield catalog
    finally:
        catalog.engine.dispose()


# -- which table a file belongs to ------------------------------------------------


def identifier(name: str) -> tuple[str, str]:
    """The catalog identifier of metadata table ``name``."""
    return NAMESPACE, name


def current_table(database: str, table: str) -> tuple[str, str]:
    """The identifier of the current state of source table ``database.table``."""
    return database, table


def changes_table(database: str, table: str) -> tuple[str, str]:
    """The identifier of the row changes of source table ``database.table``."""
    return database, table + CHANGES


def table_of(relative: str) -> tuple[tuple[str, str], str] | None:
    """The table a warehouse file (its path relative to the warehouse) belongs to, and the
    folder of the table's files that a commit replaces whole (``""``: it appends); None for a
    file of no table (the checkpoint). A file of a run's output folder belongs where its layout
    path (:func:`warehouse.layout.layout_path`) puts it, and so does the folder returned."""
    parts = layout_path(relative).split("/")
    if not relative.endswith(".parquet"):
        return None
    if parts[0] == "current" and len(parts) == 4:
        return current_table(name_of(parts[1]), name_of(parts[2])), "/".join(parts[:3])
    if parts[0] == "changes" and len(parts) >= 4:
        return changes_table(name_of(parts[1]), name_of(parts[2])), ""
    if parts[0] == "metadata" and len(parts) == 3 and parts[1] in APPENDED + REPLACED:
        return identifier(parts[1]), "/".join(parts[:2]) if parts[1] in REPLACED else ""
    return None


@dataclass
class TableCommit:
    """What a commit does to one table: ``files`` (relative to the warehouse) are added; the
    table's files under the ``replaced`` folders that are not among them are removed; ``whole``:
    the table's own folder is among them (the new files are the whole table)."""

    table: tuple[str, str]
    files: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    whole: bool = False

    def to_json(self) -> dict:
        return {"table": list(self.table), "files": self.files, "replaced": self.replaced, "whole": self.whole}

    @classmethod
    def from_json(cls, entry: dict) -> TableCommit:
        return cls(tuple(entry["table"]), entry["files"], entry["replaced"], entry["whole"])


def plan_tables(files: list[str], replaced_folders: list[str] = ()) -> list[TableCommit]:
    """The table commits that publish ``files`` (relative to the warehouse), in table order.
    ``replaced_folders``: folders (of the layout, :func:`warehouse.layout.layout_path`) replaced
    whole besides each table's own rule (:func:`table_of`), e.g. the days a backfill rebuilds."""
    commits: dict[tuple[str, str], TableCommit] = {}
    for relative in sorted(files):
        found = table_of(relative)
        if found is None:
            continue
        table, replaced = found
        commit = commits.setdefault(table, TableCommit(table, whole=bool(replaced)))
        commit.files.append(relative)
        scopes = [replaced] if replaced else [f for f in replaced_folders if layout_path(relative).startswith(f + "/")]
        commit.replaced += [scope for scope in scopes if scope not in commit.replaced]
    return [commits[table] for table in sorted(commits)]


# -- reading ------------------------------------------------------------------


def _load(catalog, table: tuple[str, str]):
    from pyiceberg.exceptions import NoSuchTableError

    try:
        return catalog.load_table(table)
    except NoSuchTableError:
        return None


def iceberg_uri(location: str) -> str:
    """How the tables name a warehouse file (:meth:`warehouse.storage.Storage.location`): a local
    path as ``file://`` and the path as it is (pyiceberg does not percent-decode, and the partition
    folders hold ``=``), an ``s3://`` URI as it is."""
    return location if "://" in location else f"file://{location}"


def local_path(uri: str) -> str:
    """The location an :func:`iceberg_uri` names (a local path without ``file://``)."""
    return uri.removeprefix("file://")


def has_catalog(warehouse: Path) -> bool:
    """Whether ``warehouse`` has a catalog yet (a warehouse before its first commit has none)."""
    folder = Path(warehouse) / FOLDER
    return (folder / CONFIG).exists() or (folder / "catalog.db").exists()


def data_files(warehouse: Path, table: tuple[str, str]) -> list[str]:
    """The data files of ``table``'s current snapshot, sorted by path (none when the catalog
    does not know the table)."""
    if not has_catalog(warehouse):
        return []
    with _answering(warehouse, f"listing the files of {'.'.join(table)}"), connected(warehouse) as catalog:
        loaded = _load(catalog, table)
        return [] if loaded is None else sorted(_referenced(loaded))


def read(warehouse: Path, table: tuple[str, str]) -> pa.Table | None:
    """``table``'s rows as Iceberg readers see them (None when the catalog does not know it)."""
    if not has_catalog(warehouse):
        return None
    with _answering(warehouse, f"reading {'.'.join(table)}"), connected(warehouse) as catalog:
        loaded = _load(catalog, table)
        return None if loaded is None else loaded.scan().to_arrow()


def tables_of_database(warehouse: Path, database: str) -> list[str]:
    """The names of the source tables of ``database`` with a ``current`` table in the catalog."""
    if not has_catalog(warehouse):
        return []
    from pyiceberg.exceptions import NoSuchNamespaceError

    with _answering(warehouse, f"listing the tables of {database}"), connected(warehouse) as catalog:
        try:
            found = catalog.list_tables((database,))
        except NoSuchNamespaceError:
            return []
        # the last part: a SQL catalog splits a namespace that holds a dot
        return sorted(name[-1] for name in found if not name[-1].endswith(CHANGES))


def committed_checkpoint(warehouse: Path) -> dict | None:
    """The checkpoint the catalog's last commit carried (``binlake.checkpoint`` of the current
    snapshot of ``_binlake.runs``, which every commit appends to); None before the first."""
    if not has_catalog(warehouse):
        return None
    with _answering(warehouse, "reading its last checkpoint"), connected(warehouse) as catalog:
        table = _load(catalog, identifier("runs"))
        snapshot = None if table is None else table.current_snapshot()
        text = None if snapshot is None else snapshot.summary.additional_properties.get(CHECKPOINT)
    return None if text is None else json.loads(text)


def _referenced(table) -> dict:
    """The data files of ``table``'s current snapshot by path, from its manifests (a scan plan
    leaves out the files without rows: an emptied table's)."""
    snapshot = table.current_snapshot()
    if snapshot is None:
        return {}
    return {local_path(entry.data_file.file_path): entry.data_file for manifest in snapshot.manifests(table.io)
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True)}


@contextmanager
def _answering(warehouse: Path, doing: str):
    """A catalog that cannot be reached while ``doing`` raises :class:`CatalogUnavailable`."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        yield
    except SQLAlchemyError as exc:
        raise CatalogUnavailable(f"the catalog {_shown(uri_of(warehouse))} did not answer while {doing} "
                                 f"({type(exc).__name__}: {_first_line(exc)}); nothing was published") from exc


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else ""


def metadata_location(warehouse: Path, table: str | tuple[str, str]) -> str:
    """Where the current metadata of a table is (``name``: ``_binlake.<name>``): what DuckDB's
    ``iceberg_scan`` reads."""
    table = identifier(table) if isinstance(table, str) else table
    with connected(warehouse) as catalog:
        return catalog.load_table(table).metadata_location


def duckdb_connection(warehouse: Path | None = None):
    """A DuckDB connection that reads Iceberg tables offline: the httpfs, Avro and Iceberg
    extensions loaded by path from their pip packages, nothing installed or loaded from the
    network; for an object-store ``warehouse``, a secret with its S3 settings
    (:func:`warehouse.storage.s3_settings`)."""
    import duckdb
    import duckdb_extension_avro
    import duckdb_extension_httpfs
    import duckdb_extension_iceberg

    connection = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    for package, name in ((duckdb_extension_httpfs, "httpfs"), (duckdb_extension_avro, "avro"),
                          (duckdb_extension_iceberg, "iceberg")):
        path = Path(package.__file__).parent / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
        connection.execute(f"LOAD '{path}'")
    if warehouse is not None and not storage.of(warehouse).is_local:
        connection.execute(_duckdb_secret(storage.s3_settings()))
    return connection


def _duckdb_secret(settings: dict) -> str:
    """DuckDB's ``CREATE SECRET`` for the S3 settings (path-style addressing at an endpoint of its own)."""
    def text(value: str) -> str:
        return "'" + value.replace("'", "''") + "'"

    parts = ["TYPE s3"]
    if settings["access_key"]:
        parts += [f"KEY_ID {text(settings['access_key'])}", f"SECRET {text(settings['secret_key'] or '')}"]
    if settings["session_token"]:
        parts.append(f"SESSION_TOKEN {text(settings['session_token'])}")
    if settings["region"]:
        parts.append(f"REGION {text(settings['region'])}")
    if settings["endpoint"]:
        scheme, _, host = settings["endpoint"].partition("://")
        parts += [f"ENDPOINT {text(host.rstrip('/'))}", "URL_STYLE 'path'", f"USE_SSL {str(scheme == 'https').lower()}"]
    return f"CREATE OR REPLACE SECRET binlake_s3 ({', '.join(parts)})"


# -- committing ---------------------------------------------------------------


class CatalogUnavailable(RuntimeError):
    """The catalog did not take a run's snapshots: the commit waits for it (see :func:`sync`)."""


class TableLost(CatalogUnavailable):
    """The catalog does not know a table whose Iceberg metadata is in the warehouse: its folder
    cannot be told from a folder of the earlier layout, so nothing is registered (:func:`adopt`)."""


@dataclass(frozen=True)
class Fence:
    """What a run's commit expects the catalog to hold: ``checkpoint``, the one the catalog's last
    commit carried when the run's commit began (None: no commit yet)."""

    checkpoint: dict | None


class CommitConflict(RuntimeError):
    """Another writer committed to the catalog after this run's commit began: publishing this run
    too would merge two runs planned from the same checkpoint. Nothing of the run was published."""


FENCE_TABLE = identifier("runs")  # every run appends its record: its commit is the run's, first
FENCE_ATTEMPTS = 3  # the fence table's commit tried again when the catalog refuses it and the fence still holds


def sync(warehouse: Path, run_id: str, checkpoint: dict, commits: list[TableCommit],
         fence: Fence | None = None) -> dict[str, int]:
    """Give each table of ``commits`` whose current snapshot does not hold the commit's files
    one snapshot that does, carrying ``run_id`` and ``checkpoint``; returns the files added per
    table (none when the catalog was up to date). A catalog that cannot be reached or refuses a
    commit raises :class:`CatalogUnavailable`, saying so.

    ``fence``: the table every run appends to (``_binlake.runs``) is committed first, and only if
    its current snapshot is this run's own (a commit rolled forward) or carries the fence's
    checkpoint; the catalog's compare-and-swap makes the check and the commit one step. Another
    writer's commit in between raises :class:`CommitConflict` before any table of this run moved."""
    warehouse = Path(warehouse).resolve()
    summary = {RUN_ID: run_id, CHECKPOINT: json.dumps(checkpoint, sort_keys=True)}
    ordered = sorted(commits, key=lambda each: each.table != FENCE_TABLE)  # stable: the fence table first
    try:
        with connected(warehouse) as catalog:
            added = {}
            for each in ordered:
                fenced = fence if each.table == FENCE_TABLE else None
                added[".".join(each.table)] = _commit_fenced(catalog, warehouse, each, summary, fenced)
    except CommitConflict:
        raise
    except Exception as exc:
        raise CatalogUnavailable(
            f"run {run_id}: the catalog {_shown(uri_of(warehouse))} did not take the run "
            f"({type(exc).__name__}: {_first_line(exc)}); its files are in place and the checkpoint has "
            "not moved: the next run finishes the commit once the catalog answers") from exc
    changed = {name: count for name, count in added.items() if count}
    log.info("run %s: catalog %s: %d tables, %s", run_id, _shown(uri_of(warehouse)), len(commits),
             ", ".join(f"{name} +{count} files" for name, count in changed.items()) or "nothing to add")
    return added


ADOPTED = "adopted"  # the run id of the snapshots that register a warehouse written before the catalog held every table


def adopt(warehouse: Path, checkpoint: dict) -> dict[str, int]:
    """Register the tables a warehouse written by an earlier version of binlake holds only as
    folders (``current/<db>/<table>/``, ``changes/<db>/<table>/``, ``metadata/table_schemas/``),
    every file of them: that version replaced those folders whole, so they hold nothing else.
    Called after the journals are finished (:func:`warehouse.publish.recover`): a table's
    folder without a table in the catalog is then such a folder. Returns the files registered
    per table (none once every table is registered). An object-store warehouse was never
    written by such a version: there, Iceberg metadata the catalog does not know raises
    :class:`TableLost` (:func:`_check_unregistered`)."""
    warehouse = Path(warehouse).resolve()
    if not storage.of(warehouse).is_local:
        _check_unregistered(warehouse)
        return {}
    folders = {folder: table_of(f"{folder.relative_to(warehouse).as_posix()}/x.parquet")[0]
               for folder in [*warehouse.glob("current/*/*"), *warehouse.glob("changes/*/*"),
                              warehouse / "metadata" / "table_schemas"] if folder.is_dir()}
    known = _known_tables(warehouse, {table[0] for table in folders.values()})
    unknown = {folder: table for folder, table in sorted(folders.items()) if table not in known}
    lost = [".".join(table) for table in unknown.values() if (warehouse / _metadata_folder(table)).exists()]
    if lost:  # a table of this layout the catalog no longer knows: its folder holds older snapshots' files too
        raise TableLost(f"the catalog {_shown(uri_of(warehouse))} does not know the tables {', '.join(lost)}, whose "
                        f"Iceberg metadata is in {warehouse / FOLDER}: nothing was published; restore the catalog, or "
                        "register each table again from its newest metadata file (pyiceberg register_table)")
    files = [path.relative_to(warehouse).as_posix() for folder in unknown for path in sorted(folder.rglob("*.parquet"))]
    commits = plan_tables(files)
    if not commits:
        return {}
    log.warning("registering %d tables this warehouse holds only as folders (written by an earlier version): %s",
                len(commits), ", ".join(".".join(each.table) for each in commits))
    return sync(warehouse, ADOPTED, checkpoint, commits)


def _check_unregistered(warehouse: Path) -> None:
    """A new catalog (no file yet) of an object-store warehouse whose ``_iceberg/`` holds
    metadata: its tables are registered in a catalog this state folder does not have (another
    state folder's, or a lost one); registering them again would start them over."""
    files = storage.of(warehouse)
    if has_catalog(warehouse) or not files.files(FOLDER):
        return
    raise TableLost(f"the warehouse {files.uri} holds Iceberg tables ({files.location(FOLDER)}) that the catalog "
                    f"{_shown(uri_of(warehouse))} of the state folder {warehouse} does not know: nothing was "
                    "published; run with that warehouse's state folder (--state) and catalog (--catalog), or "
                    "register each table again from its newest metadata file (pyiceberg register_table)")


def _known_tables(warehouse: Path, namespaces: set[str]) -> set[tuple[str, str]]:
    """The tables of ``namespaces`` the warehouse's catalog holds."""
    from pyiceberg.exceptions import NoSuchNamespaceError

    if not has_catalog(warehouse) or not namespaces:
        return set()
    known = set()
    with _answering(warehouse, "listing its tables"), connected(warehouse) as catalog:
        for namespace in namespaces:
            try:
                known |= {(namespace, name[-1]) for name in catalog.list_tables((namespace,))}
            except NoSuchNamespaceError:
                pass
    return known


def in_folders(warehouse: Path, folders: list[str]):
    """A test of a file's location: is it, by its layout path (:func:`warehouse.layout.layout_path`),
    in one of ``folders`` (relative to the warehouse)? So a file a run left in its output folder is
    in the folder of its table, as one moved there is."""
    files, scopes = storage.of(warehouse), tuple(folder + "/" for folder in folders)

    def test(location: str) -> bool:
        relative = files.relative(location)
        return bool(scopes) and relative is not None and layout_path(relative).startswith(scopes)
    return test


def _commit_fenced(catalog, warehouse: Path, commit: TableCommit, summary: dict[str, str], fence: Fence | None) -> int:
    """:func:`_commit_table`, behind ``fence`` when given: a commit the catalog refuses (another
    writer's snapshot landed since the table was loaded) is tried again while the fence holds."""
    from pyiceberg.exceptions import CommitFailedException, TableAlreadyExistsError

    for _ in range(FENCE_ATTEMPTS - 1 if fence is not None else 0):
        try:
            return _commit_table(catalog, warehouse, commit, summary, fence)
        except (CommitFailedException, TableAlreadyExistsError) as exc:
            log.warning("%s: the catalog refused the commit (%s); trying again", ".".join(commit.table), exc)
    return _commit_table(catalog, warehouse, commit, summary, fence)


def _check_fence(table, fence: Fence, run_id: str) -> None:
    """Raise :class:`CommitConflict` unless ``table``'s current snapshot is run ``run_id``'s or
    carries ``fence``'s checkpoint (see :func:`sync`)."""
    snapshot = None if table is None else table.current_snapshot()
    properties = {} if snapshot is None else snapshot.summary.additional_properties
    if properties.get(RUN_ID) == run_id:
        return
    seen = json.loads(properties[CHECKPOINT]) if CHECKPOINT in properties else None
    if seen != fence.checkpoint:
        raise CommitConflict(
            f"run {run_id}: another writer committed run {properties.get(RUN_ID)} to the catalog after this run's "
            f"commit began (its checkpoint {json.dumps(seen, sort_keys=True)[:300]}); nothing of this run was "
            "published. One warehouse takes one writer at a time: stop the other, then run again")


def _commit_table(catalog, warehouse: Path, commit: TableCommit, summary: dict[str, str],
                  fence: Fence | None = None) -> int:
    """One snapshot of ``commit``'s table (see :func:`sync`); the number of files added. A new
    table is created by the same catalog commit as its first snapshot: no reader sees it empty.
    ``fence``: checked on the table as loaded, whose snapshot the commit then requires."""
    from pyiceberg.io import load_file_io  # pyiceberg takes a second to import: when a commit needs it
    from pyiceberg.io.pyarrow import parquet_file_to_data_file

    place = storage.of(warehouse).location
    files = [place(relative) for relative in commit.files]
    table = _load(catalog, commit.table)
    if fence is not None:
        _check_fence(table, fence, summary[RUN_ID])
    referenced = {} if table is None else _referenced(table)
    replaced = in_folders(warehouse, commit.replaced)
    removed = [data for path, data in referenced.items() if path not in files and replaced(path)]
    added = [path for path in files if path not in referenced]
    if not added and not removed:
        return 0
    target = _unified([_read_schema(path) for path in added]) if added else None
    kept = [data for path, data in referenced.items() if data not in removed]
    with table.transaction() if table is not None else _creating(catalog, warehouse, commit.table, target) as transaction:
        retyped = _evolve(transaction, target, commit.whole) if target is not None else set()
        _partition_by_day(transaction, commit.table)
        rewritten = _conform_kept(kept, transaction, retyped, summary[RUN_ID]) if retyped and kept else {}
        if transaction.table_metadata.name_mapping() is None:
            transaction.set_properties(**{NAME_MAPPING: transaction.table_metadata.schema().name_mapping.model_dump_json()})
        if transaction.table_metadata.properties.get(MANIFEST_MERGE) != "true":
            transaction.set_properties(**{MANIFEST_MERGE: "true"})
        producer = transaction.update_snapshot(snapshot_properties=summary)
        io = load_file_io(catalog.properties, transaction.table_metadata.location)
        with (producer.overwrite() if removed or rewritten else producer.merge_append()) as snapshot:
            for data in removed + list(rewritten):
                snapshot.delete_data_file(data)
            for path in added + list(rewritten.values()):
                snapshot.append_data_file(parquet_file_to_data_file(io, transaction.table_metadata, iceberg_uri(path)))
    log.info("%s: +%d files, -%d files%s", ".".join(commit.table), len(added), len(removed),
             f", {len(rewritten)} earlier files rewritten for the type change of {sorted(retyped)}" if rewritten else "")
    return len(added)


COMMIT_TS, COMMIT_DATE = "_commit_ts", "commit_date"


def _partition_by_day(transaction, table: tuple[str, str]) -> None:
    """A ``changes`` table is partitioned by the UTC day of ``_commit_ts`` (Iceberg's ``day``
    transform, partition field ``commit_date``), as its files are by folder: engines prune a
    query on ``_commit_ts`` to the days it asks for. Files committed before the table had the
    spec keep theirs (unpartitioned)."""
    from pyiceberg.transforms import DayTransform

    metadata = transaction.table_metadata
    if not table[1].endswith(CHANGES) or not metadata.spec().is_unpartitioned():
        return
    if COMMIT_TS not in [column.name for column in metadata.schema().columns]:
        return
    with transaction.update_spec() as spec:
        spec.add_field(COMMIT_TS, DayTransform(), COMMIT_DATE)


def _creating(catalog, warehouse: Path, table: tuple[str, str], schema: pa.Schema):
    """The transaction that creates the Iceberg table ``table`` with ``schema``, committed with its
    first snapshot."""
    log.info("creating the Iceberg table %s", ".".join(table))
    catalog.create_namespace_if_not_exists(table[0])
    location = storage.of(warehouse).location(_metadata_folder(table))
    return catalog.create_table_transaction(table, schema=schema, location=iceberg_uri(location))


def _metadata_folder(table: tuple[str, str]) -> str:
    """Where the Iceberg metadata of ``table`` lives, relative to the warehouse."""
    return f"{FOLDER}/{path_part(table[0])}/{path_part(table[1])}"


def _read_schema(location: str) -> pa.Schema:
    filesystem, path = storage.open_file(location)
    return pq.read_schema(path, filesystem=filesystem)


def _unified(schemas: list[pa.Schema]) -> pa.Schema:
    """One schema for the files a commit adds: columns by name, the first file's order."""
    return pa.unify_schemas(schemas, promote_options="permissive") if len(schemas) > 1 else schemas[0]


def _retyped(current, target: pa.Schema) -> set[str]:
    """The columns of the Iceberg schema ``current`` whose type in ``target`` Iceberg cannot
    promote them to (:func:`_fits`)."""
    incoming = _iceberg_schema(target)
    return {column.name for column in current.columns if column.name in target.names and not _fits(
        column.field_type, incoming.find_field(column.name, case_sensitive=True).field_type)}


def _evolve(transaction, target: pa.Schema, whole: bool) -> set[str]:
    """Bring the table's schema to ``target``: columns added by name; a column whose type
    Iceberg cannot promote to the new one is dropped and added again (a new field id); a table
    replaced ``whole`` loses the columns ``target`` lacks and takes its column order. Returns the
    columns dropped and added again for their type."""
    current = transaction.table_metadata.schema()
    retyped = _retyped(current, target)
    gone = {column.name for column in current.columns if column.name not in target.names} if whole else set()
    if retyped or gone:
        with transaction.update_schema() as schema:
            for name in sorted(retyped | gone):
                schema.delete_column(name)
    with transaction.update_schema() as schema:
        schema.union_by_name(target)
    if whole:
        with transaction.update_schema() as schema:
            schema.move_first(target.names[0])
            for before, name in zip(target.names, target.names[1:]):
                schema.move_after(name, before)
    return retyped


def _iceberg_schema(target: pa.Schema):
    """``target`` in Iceberg types (its field ids mean nothing: for comparing types)."""
    from pyiceberg.io.pyarrow import pyarrow_to_schema
    from pyiceberg.table.name_mapping import MappedField, NameMapping

    ids = itertools.count(1)

    def mapped(name: str, kind: pa.DataType) -> MappedField:
        if pa.types.is_struct(kind):
            parts = [(each.name, each.type) for each in kind]
        elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
            parts = [("element", kind.value_type)]
        elif pa.types.is_map(kind):
            parts = [("key", kind.key_type), ("value", kind.item_type)]
        else:
            parts = []
        return MappedField(field_id=next(ids), names=[name], fields=[mapped(*part) for part in parts])

    return pyarrow_to_schema(target, name_mapping=NameMapping([mapped(each.name, each.type) for each in target]))


def _fits(old, new) -> bool:
    """Whether a column of Iceberg type ``old`` takes files of type ``new``: the same type, one
    Iceberg reads as ``old`` (``int`` into ``long``), or one ``old`` may be promoted to; structs,
    lists and maps part by part."""
    from pyiceberg.exceptions import ResolveError
    from pyiceberg.schema import promote
    from pyiceberg.types import ListType, MapType, StructType

    if old == new:
        return True
    if isinstance(old, StructType) and isinstance(new, StructType):
        fields = {each.name: each.field_type for each in new.fields}
        return all(each.name not in fields or _fits(each.field_type, fields[each.name]) for each in old.fields)
    if isinstance(old, ListType) and isinstance(new, ListType):
        return _fits(old.element_type, new.element_type)
    if isinstance(old, MapType) and isinstance(new, MapType):
        return _fits(old.key_type, new.key_type) and _fits(old.value_type, new.value_type)
    for source, read_as in ((new, old), (old, new)):
        try:
            promote(source, read_as)
            return True
        except ResolveError:
            pass
    return False


class TypeChangeRefused(ValueError):
    """A type change would rewrite a table's earlier files, and a value of theirs cannot be cast
    exactly to the new type: the run is refused before its commit starts."""


def check_type_changes(warehouse: Path, commits: list[TableCommit], sources: dict[str, str]) -> None:
    """Before a commit's journal is written: in each table a commit appends to, the earlier files
    that a column's type change would rewrite (:func:`_conform_kept`) take the new type exactly;
    else :class:`TypeChangeRefused` names the table, the column, both types and the value, and
    nothing is published. ``sources``: where the run's files are until they move (relative path
    in the warehouse: location)."""
    if not has_catalog(warehouse):
        return
    place = storage.of(warehouse).location
    with _answering(warehouse, "checking the run's type changes"), connected(warehouse) as catalog:
        for commit in commits:  # a table replaced whole keeps no earlier file: nothing of it is cast
            table = _load(catalog, commit.table) if commit.files and not commit.whole else None
            if table is None:
                continue
            target = _unified([_read_schema(sources.get(relative, place(relative))) for relative in commit.files])
            retyped = _retyped(table.schema(), target)
            replaced = in_folders(warehouse, commit.replaced)
            kept = [path for path in _referenced(table) if not replaced(path)] if retyped else []
            for location in kept:
                _check_conform(commit.table, location, retyped & set(_read_schema(location).names), target)


def _check_conform(table: tuple[str, str], location: str, columns: set[str], target: pa.Schema) -> None:
    for name in sorted(columns):
        values = storage.read_parquet(location, columns=[name])
        try:
            conform(values, pa.schema([target.field(name)]))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise TypeChangeRefused(
                f"{'.'.join(table)}: column {name} changes from {values.schema.field(name).type} to "
                f"{target.field(name).type}, and its earlier rows ({location}) hold values the new type cannot "
                f"hold exactly ({_first_line(exc)}): nothing was published; the run cannot be appended to them"
            ) from exc


def _conform_kept(kept: list, transaction, retyped: set[str], run_id: str) -> dict:
    """The table's earlier files that hold a column of ``retyped``, rewritten beside themselves
    with the columns of the table's new schema (:func:`conform`): {old data file: new path}."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    target = schema_to_pyarrow(transaction.table_metadata.schema(), include_field_ids=False)
    rewritten = {}
    for data in kept:
        location = local_path(data.file_path)
        if retyped & set(_read_schema(location).names):
            folder, name = location.rsplit("/", 1)
            new = f"{folder}/{run_id}-retyped-{name}"
            filesystem, path = storage.open_file(new)
            pq.write_table(conform(storage.read_parquet(location), target), path, filesystem=filesystem)
            rewritten[data] = new
    return rewritten


def conform(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """``rows`` in ``schema``'s columns and types: a column they lack is null, every value cast
    exactly (numbers to their decimal text, integers to wider ones); a value that cannot be
    cast exactly raises ``pyarrow.ArrowInvalid``."""
    return pa.table([_conform_array(rows[name] if name in rows.column_names else None, schema.field(name).type,
                                    rows.num_rows) for name in schema.names], schema=schema)


def _conform_array(values, kind: pa.DataType, length: int):
    if values is None:
        return pa.nulls(length, kind)
    if pa.types.is_struct(kind) and pa.types.is_struct(values.type):
        values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        names = {values.type.field(i).name for i in range(values.type.num_fields)}
        children = [_conform_array(values.field(kind.field(i).name) if kind.field(i).name in names else None,
                                   kind.field(i).type, length) for i in range(kind.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(kind), mask=values.is_null())
    return pc.cast(values, kind, safe=True)
