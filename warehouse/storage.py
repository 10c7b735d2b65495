"""Where a warehouse's tables keep their files: a local folder or an ``s3://bucket/prefix``.

A warehouse has two homes (docs/ARCHITECTURE.md, "The warehouse"):

* its **storage**, the ``warehouse_uri``: the tables' data files and their Iceberg
  metadata, what every engine reads (``current/``, ``changes/``, ``metadata/``,
  ``_iceberg/``). Files are written and read through ``pyarrow.fs``, one code
  path for both kinds: :func:`open_file` turns a location (a plain path,
  ``file://``, ``s3://``) into a filesystem and a path in it;
* its **state folder**, on the machine that runs the job: the SQLite catalog by
  default, the commit journal, the checkpoint, the lock, the runs in progress,
  their refusals and Data Docs. For a local warehouse it is the warehouse folder
  itself; for an ``s3://`` warehouse it is the folder given (``--state``), by
  default ``s3/<bucket>/<prefix>`` under ``$BINLAKE_STATE_DIR`` (default
  ``~/.local/state/binlake``).
  The state folder keeps its warehouse's URI (:func:`attach`), so that the rest
  of binlake names a warehouse by its state folder and asks :func:`of` where the
  files go.

S3 settings come from the standard environment variables (``AWS_ENDPOINT_URL``
or ``AWS_ENDPOINT_URL_S3``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_REGION``), which the Airflow tasks set from the connection ``binlake_s3``
(:func:`airflow_tasks.hooks.export_s3_settings`); without keys, the default chain
(shared config, instance role). Object keys are used as they are: a key holding
``%2E`` (a percent-encoded name, :mod:`warehouse.layout`) is never decoded.
"""

from __future__ import annotations

import functools
import json
import os
import posixpath
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

CONFIG = Path("_iceberg") / "warehouse.json"  # in the state folder: the warehouse's URI
STATE_ENV = "BINLAKE_STATE_DIR"
OBJECT_SCHEMES = ("s3", "s3a", "s3n")  # s3a:// and s3n:// (Hadoop's names) are read as s3://
CONNECT_TIMEOUT, REQUEST_TIMEOUT, ATTEMPTS = 5.0, 60.0, 4
DOWNLOAD_BYTES = 8 << 20  # one read of a file copied whole from an object store


class StorageUnavailable(RuntimeError):
    """The warehouse's storage cannot be used (a missing bucket, refused keys, an endpoint that
    does not answer): nothing was published."""


@dataclass(frozen=True, order=True)
class StoredFile:
    """A file of the warehouse's storage: its location, modification time (seconds since the
    epoch) and size."""

    location: str
    mtime: float
    size: int


@dataclass(frozen=True)
class Storage:
    """The storage of one warehouse: ``uri`` is ``s3://bucket/prefix`` or an absolute folder."""

    uri: str

    @property
    def is_local(self) -> bool:
        return not is_object_store(self.uri)

    def location(self, relative: str = "") -> str:
        """Where the warehouse file ``relative`` (a ``/``-separated path) is: a path or an ``s3://`` URI."""
        return f"{self.uri.rstrip('/')}/{relative}" if relative else self.uri.rstrip("/")

    def relative(self, location: str) -> str | None:
        """The path of ``location`` relative to the warehouse, None for a location outside it."""
        base = self.location() + "/"
        return location[len(base):] if location.startswith(base) else None

    def put(self, source: str | os.PathLike[str], relative: str) -> None:
        """Move the file at the location ``source`` (a local file, or one of this storage: a run's
        output) to ``relative`` in the warehouse: a rename in a local warehouse; in an object store,
        an upload of a local file or a copy made by the store itself (whole or not at all: S3 shows
        an object once it is complete), then the source removed."""
        target = self.location(relative)
        source_filesystem, source_path = open_file(source)
        if self.is_local:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            os.replace(source_path, target)
            return
        copy_file(str(source), target)
        source_filesystem.delete_file(source_path)

    def check(self) -> None:
        """Raise :class:`StorageUnavailable` when the storage cannot be listed (for an object
        store: a bucket that is not there, keys it refuses, an endpoint that does not answer)."""
        if self.is_local:
            return
        filesystem, path = open_file(self.location())
        bucket = path.split("/", 1)[0]
        try:
            found = filesystem.get_file_info(bucket)
            if found.type == pafs.FileType.NotFound:
                raise StorageUnavailable(f"the warehouse {self.uri}: the bucket {bucket} does not exist at "
                                         f"{_endpoint()}; nothing was published")
            filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        except OSError as exc:
            raise StorageUnavailable(f"the warehouse {self.uri} at {_endpoint()} cannot be read "
                                     f"({_first_line(exc)}); nothing was published") from exc

    def iceberg_properties(self) -> dict[str, str]:
        """The pyiceberg FileIO properties that reach this storage (none for a local one)."""
        if self.is_local:
            return {}
        settings = s3_settings()
        names = {"endpoint": "s3.endpoint", "access_key": "s3.access-key-id", "secret_key": "s3.secret-access-key",
                 "region": "s3.region"}
        return {names[key]: value for key, value in settings.items() if value and key in names}

    def files(self, relative: str) -> list[StoredFile]:
        """Every file under the warehouse folder ``relative``, in path order."""
        filesystem, path = open_file(self.location(relative))
        found = filesystem.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
        prefix = "" if self.is_local else self.location(relative)[: -len(path)]
        return sorted(StoredFile(prefix + info.path, info.mtime.timestamp() if info.mtime else 0.0, info.size)
                      for info in found if info.type == pafs.FileType.File)

    def delete(self, location: str) -> None:
        filesystem, path = open_file(location)
        filesystem.delete_file(path)


def is_object_store(uri: str) -> bool:
    return urlparse(str(uri)).scheme in OBJECT_SCHEMES


def open_file(location: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem of a location (a local path, ``file://`` + path, ``s3://bucket/key``) and
    the path in it, taken as it is (no percent-decoding)."""
    location = str(location)
    scheme, _, rest = location.partition("://")
    if not rest:
        return pafs.LocalFileSystem(use_mmap=True), os.path.abspath(location)  # Arrow files read without a copy
    if scheme == "file":
        return pafs.LocalFileSystem(use_mmap=True), rest
    if scheme in OBJECT_SCHEMES:
        return s3_filesystem(), rest
    raise ValueError(f"{location!r}: expected a local path, file:// or s3://")


def exists(location: str) -> bool:
    filesystem, path = open_file(location)
    return filesystem.get_file_info(path).type != pafs.FileType.NotFound


def files_under(location: str) -> list[str]:
    """The locations of every file under the folder ``location`` (none when it is absent), in
    path order, written as ``location`` is (a path, or an ``s3://`` URI)."""
    filesystem, path = open_file(location)
    found = filesystem.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
    prefix = str(location).rstrip("/")
    return sorted(prefix + "/" + posixpath.relpath(info.path, path) for info in found if info.type == pafs.FileType.File)


def copy_file(source: str, target: str) -> None:
    """A copy of the file at the location ``source`` at ``target`` (made by the object store itself
    when both are in it)."""
    source_filesystem, source_path = open_file(source)
    filesystem, path = _with_folder(target)
    if type(source_filesystem) is type(filesystem):
        filesystem.copy_file(source_path, path)
    else:
        pafs.copy_files(source_path, path, source_filesystem=source_filesystem, destination_filesystem=filesystem)


def remove(location: str) -> None:
    """Remove the file or folder at ``location``, if there is one."""
    filesystem, path = open_file(location)
    kind = filesystem.get_file_info(path).type
    if kind == pafs.FileType.Directory:
        filesystem.delete_dir(path)
    elif kind == pafs.FileType.File:
        filesystem.delete_file(path)


def open_output(location: str) -> pa.NativeFile:
    """A new file at ``location``, open for writing (its folder made when local; an object appears
    in a store once the file is closed, whole)."""
    filesystem, path = _with_folder(location)
    return filesystem.open_output_stream(path)


def _with_folder(location: str) -> tuple[pafs.FileSystem, str]:
    """:func:`open_file` of ``location``, its folder made when local (an object store has none)."""
    filesystem, path = open_file(location)
    if isinstance(filesystem, pafs.LocalFileSystem):
        filesystem.create_dir(posixpath.dirname(path), recursive=True)
    return filesystem, path


def write_parquet(table: pa.Table, location: str, **options) -> None:
    """``table`` as the Parquet file ``location``."""
    with open_output(location) as sink:
        pq.write_table(table, sink, **options)


def parquet_file(location: str, *, whole: bool = False) -> pq.ParquetFile:
    """The Parquet file at ``location``, open to read its footer or its batches. ``whole``: to read
    much of it. A file in an object store is then first copied whole, in one request, to a
    node-local temporary file: reading its batches in place pays the store's latency once per row
    group (on the bench's local S3 server, 5 times as long as the copy and the read together). The
    copy's name is removed at once; its space is freed when the returned file is dropped."""
    filesystem, path = open_file(location)
    if not whole or not is_object_store(location):
        return pq.ParquetFile(filesystem.open_input_file(path))
    with tempfile.NamedTemporaryFile(prefix="binlake-", suffix=".parquet", delete=False) as copy:
        try:
            with filesystem.open_input_stream(path) as source:
                while chunk := source.read(DOWNLOAD_BYTES):
                    copy.write(chunk)
            copy.flush()
            mapped = pa.memory_map(copy.name)
        finally:
            os.unlink(copy.name)
    return pq.ParquetFile(mapped)


def read_parquet(location: str, **options) -> pa.Table:
    """A whole Parquet file of the warehouse, local or in an object store."""
    filesystem, path = open_file(location)
    return pq.read_table(path, filesystem=filesystem, **options)


def s3_settings() -> dict[str, str | None]:
    """The S3 endpoint, keys and region from the standard environment variables."""
    return {
        "endpoint": os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None,
        "access_key": os.environ.get("AWS_ACCESS_KEY_ID") or None,
        "secret_key": os.environ.get("AWS_SECRET_ACCESS_KEY") or None,
        "session_token": os.environ.get("AWS_SESSION_TOKEN") or None,
        "region": os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None,
    }


S3_VARIABLES = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION")


def share_with(spark) -> None:
    """Hand this process's S3 settings to Spark's Python workers, which start from the
    environment their JVM started with (a task reading ``current`` from an object store needs
    them): Spark passes ``SparkContext.environment`` to every Python worker it starts."""
    environment = spark.sparkContext.environment
    environment.update({name: os.environ[name] for name in S3_VARIABLES if os.environ.get(name)})


def s3_filesystem() -> pafs.S3FileSystem:
    """The S3 filesystem of :func:`s3_settings` (one per process and settings), with bounded
    timeouts and retries: an endpoint that does not answer fails the run, it never hangs it."""
    return _s3_filesystem(tuple(sorted(s3_settings().items())))


@functools.lru_cache(maxsize=4)
def _s3_filesystem(settings: tuple) -> pafs.S3FileSystem:
    given = dict(settings)
    options = {"endpoint_override": given["endpoint"], "access_key": given["access_key"],
               "secret_key": given["secret_key"], "session_token": given["session_token"], "region": given["region"]}
    if given["endpoint"]:
        options["force_virtual_addressing"] = False
    return pafs.S3FileSystem(
        **{key: value for key, value in options.items() if value is not None},
        connect_timeout=CONNECT_TIMEOUT, request_timeout=REQUEST_TIMEOUT,
        retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=ATTEMPTS),
    )


def _endpoint() -> str:
    return s3_settings()["endpoint"] or "AWS"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


# -- a warehouse's state folder -----------------------------------------------------


def state_folder(uri: str, state: str | os.PathLike[str] | None = None,
                 base: str | os.PathLike[str] | None = None) -> Path:
    """The state folder of the warehouse ``uri``: the folder itself for a local warehouse
    (``file://`` or a path), else ``state``, or ``s3/<bucket>/<prefix>`` under ``base``,
    ``$BINLAKE_STATE_DIR`` or ``~/.local/state/binlake``."""
    parsed = urlparse(str(uri))
    if parsed.scheme in OBJECT_SCHEMES:
        if state is None:
            base = base or os.environ.get(STATE_ENV) or Path(os.environ.get("XDG_STATE_HOME") or "~/.local/state") / "binlake"
            state = Path(base).expanduser() / "s3" / parsed.netloc / parsed.path.strip("/")
        return Path(state).expanduser().resolve()
    if parsed.scheme == "file":
        return Path(unquote(parsed.path)).resolve()
    if parsed.scheme:
        raise ValueError(f"{uri!r}: the warehouse must be s3://bucket/prefix, a file:// URI or a folder")
    return Path(uri).expanduser().resolve()


def attach(uri: str, state: str | os.PathLike[str] | None = None) -> Path:
    """The state folder of the warehouse ``uri`` (:func:`state_folder`), which keeps ``uri`` from
    then on; a state folder already kept for another warehouse raises ``ValueError``."""
    root = state_folder(uri, state)
    if not is_object_store(uri):
        return root
    uri = "s3://" + str(uri).split("://", 1)[1].rstrip("/")
    kept = keep(root / CONFIG, uri)
    if kept != uri:
        raise ValueError(f"the state folder {root} belongs to the warehouse {kept}, not {uri}")
    return root


def keep(config: Path, uri: str) -> str:
    """The URI the state folder's JSON file ``config`` keeps (``{"uri": ...}``); ``uri``, written
    there, when it keeps none yet."""
    if config.exists():
        return json.loads(config.read_text())["uri"]
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"uri": uri}))
    return uri


def of(root: str | os.PathLike[str]) -> Storage:
    """The storage of the warehouse whose state folder is ``root`` (:func:`attach`)."""
    root = Path(root).resolve()
    config = root / CONFIG
    return Storage(json.loads(config.read_text())["uri"] if config.exists() else str(root))


# -- the command line ------------------------------------------------------------------


def add_arguments(parser, positional: bool = False) -> None:
    """``--warehouse`` (or a positional ``warehouse``) and ``--state`` for a command line; the
    command then names its warehouse by :func:`from_arguments`."""
    help_text = ("the warehouse: a folder or s3://bucket/prefix (S3 settings from AWS_ENDPOINT_URL, "
                 "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION)")
    if positional:
        parser.add_argument("warehouse", help=help_text)
    else:
        parser.add_argument("--warehouse", required=True, help=help_text)
    parser.add_argument(
        "--state", metavar="DIR", help="the state folder of an s3:// warehouse: its checkpoint, commit journal, lock, "
        "runs in progress and default catalog (default: s3/<bucket>/<prefix> under $BINLAKE_STATE_DIR, else under "
        "~/.local/state/binlake); a local warehouse keeps them in its folder")


def from_arguments(args) -> str:
    """The state folder of the warehouse the command line names (:func:`add_arguments`,
    :func:`attach`); ``ValueError`` for one that cannot be."""
    return str(attach(args.warehouse, args.state))
