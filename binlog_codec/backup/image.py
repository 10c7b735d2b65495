"""The image format of the backup stream (WL#4063, "Version 1 of backup image format").

An image is a sequence of chunks (see :mod:`binlog_codec.backup.transport`)::

    [backup image] = [ preamble | table data | 0x00 ! summary ]      (summary at the end)
    [preamble]     = [ header | summary | catalogue | meta data ]    (summary in the preamble)

Each ``|`` is a chunk boundary, each ``!`` a field boundary inside a chunk.
This module encodes and decodes every part; fields without a width in the
specification's diagrams are variable-length numbers or strings
(:mod:`binlog_codec.backup.encoding`). Where the worklog's prose leaves a
detail open, this module follows MySQL's backup stream library
(``stream_v1.c``), which the worklog names as the reference:

* header::

      [header] = [ flags:2 ! creation time ! #of snapshots:1 ! server version ! extra data
                 | snapshot description | ... ]
      [server version] = [ major:1 ! minor:1 ! release:1 ! extra string ]
      [snapshot description] = [ image type:1 ! format version:2 ! global options:2 !
                                 #of tables ! backup engine info ! extra data ]
      [backup engine info (native)] = [ engine name ! major:1 ! minor:1 ]   (empty otherwise)

  the extra data are the rest of their chunk;
* summary: [ vp time ! end time ! binlog pos ! binlog group pos ], each binlog
  position [ pos:4 ! file name ]; at the end of the image its chunk starts
  with 0x00, which no table data chunk starts with;
* catalogue: [ charsets ! 0x00 ! users ! 0x00 ! databases | db catalogue | ... ]
  where 0x00 is the empty string ending a list, a database is
  [ name ! flags:1 ! (data len:2 ! data, if flag 0x80) ], a db catalogue
  entry [ type:2 ! name ! (for tables) flags:1 ! snapshot no:1 ! (data len:1 !
  data, if flag 0x80) ] and an empty db catalogue is 0x00 0x00;
* meta data: [ global items | tables of db 1 | ... | tables of db N |
  per-db items ! 0x00 0x00 ! per-table items ] (only the global items when
  there are no databases); each list holds item entries
  [ type:2 ! flags:1 ! position ! (data len:2 ! data, if flag 0x80) !
  (CREATE statement, if flag 0x40) ], an empty list is 0x00 0x00. The item
  type is 2 bytes as in the db catalogue (so that 0x00 0x00 is the type-0
  end marker); the position is 1 to 3 variable-length numbers:
  [pos] (global), [snapshot no ! pos in the snapshot's table list] (tables),
  [pos in the db's item list ! db no] (per-db), [pos in the table's item list
  ! db no ! table's pos in the db's item list] (per-table);
* table data chunk: [ snapshot no:1 ! seq no:2 ! flags:1 ! table no ! data ],
  flag 0x01 marking a table's last chunk; sequence numbers count each
  snapshot's chunks from 0 (modulo 2^16).

A table's position in its snapshot's table list is its rank among the tables
of that snapshot in catalogue order (databases in order, tables in order
inside each).
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime
from typing import Callable, Iterator

from ..wire import Cursor, ShortBody
from .encoding import (
    BadField,
    pack_int2,
    pack_int4,
    pack_number,
    pack_string,
    pack_time,
    read_number,
    read_string,
    read_time,
)
from .errors import CatalogueReferenceError, CorruptImageError
from .model import (
    Catalogue,
    Database,
    DbItem,
    Header,
    ImageType,
    ItemType,
    MetadataItem,
    MetadataKind,
    ServerVersion,
    SnapshotInfo,
    Summary,
    Table,
)
from .transport import Chunk

HAS_EXTRA_DATA = 0x80
HAS_CREATE_STATEMENT = 0x40
LAST_DATA_BLOCK = 0x01
END_OF_LIST = b"\x00\x00"  # item type 0: an empty list, or the end of the per-db items
SUMMARY_MARKER = 0x00  # first byte of the summary chunk at the end of the image
MAX_SNAPSHOTS = 0xFF
MAX_CHARSETS = 256

# How located errors are made: ChunkReader.error(error class, message, file offset).
ErrorFactory = Callable[[type, str, int], Exception]


@contextmanager
def chunk_fields(chunk: Chunk, error: ErrorFactory, section: str) -> Iterator[Cursor]:
    """A cursor over ``chunk``; a field running past the chunk or holding an impossible value
    becomes a :class:`CorruptImageError` at the field's file offset."""
    cursor = Cursor(chunk.data)
    try:
        yield cursor
    except BadField as exc:
        raise error(CorruptImageError, f"{section}: {exc}", chunk.file_offset(exc.at)) from None
    except ShortBody as exc:
        raise error(
            CorruptImageError, f"{section}: the chunk ends too early: {exc}", chunk.file_offset(cursor.pos)
        ) from None


def _expect_end(cursor: Cursor, section: str) -> None:
    if cursor.remaining:
        raise BadField(f"{cursor.remaining} bytes after the end of the {section}, end of chunk expected", cursor.pos)


def _check_extra(data: bytes | None, limit: int, what: str) -> None:
    if data is not None and len(data) > limit:
        raise ValueError(f"{what} holds {len(data)} bytes, at most {limit} fit")


def _check_name(name: str, what: str) -> None:
    if not name:
        raise ValueError(f"{what} cannot be empty: an empty string ends the list")


# -- header ----------------------------------------------------------------------


def encode_header(header: Header) -> list[bytes]:
    """The header chunk and one chunk per snapshot description."""
    if len(header.snapshots) > MAX_SNAPSHOTS:
        raise ValueError(f"{len(header.snapshots)} snapshots, at most {MAX_SNAPSHOTS} fit")
    version = header.server_version
    head = (
        pack_int2(header.flags)
        + pack_time(header.creation_time)
        + bytes((len(header.snapshots), version.major, version.minor, version.release))
        + pack_string(version.extra)
        + header.extra_data
    )
    return [head, *(encode_snapshot(info) for info in header.snapshots)]


def encode_snapshot(info: SnapshotInfo) -> bytes:
    native = info.image_type == ImageType.NATIVE
    if native != (info.engine_name is not None and info.engine_version is not None):
        raise ValueError("a native snapshot, and only a native one, names its engine and engine version")
    out = bytes((info.image_type,)) + pack_int2(info.format_version) + pack_int2(info.options)
    out += pack_number(info.table_count)
    if native:
        out += pack_string(info.engine_name) + bytes(info.engine_version)
    return out + info.extra_data


def decode_header(chunk: Chunk, error: ErrorFactory) -> tuple[int, datetime, ServerVersion, int, bytes]:
    """(flags, creation time, server version, number of snapshots, extra data) of the header chunk."""
    with chunk_fields(chunk, error, "header") as cursor:
        flags = cursor.u16("flags")
        created = read_time(cursor, "creation time")
        snapshots = cursor.u8("number of snapshots")
        major, minor, release = cursor.take(3, "server version")
        version = ServerVersion(major, minor, release, read_string(cursor, "server version string"))
        return flags, created, version, snapshots, cursor.rest()


def decode_snapshot(chunk: Chunk, error: ErrorFactory, number: int) -> SnapshotInfo:
    section = f"snapshot description {number}"
    with chunk_fields(chunk, error, section) as cursor:
        kind = cursor.u8("image type")
        if kind not in ImageType._value2member_map_:
            raise BadField(f"image type {kind}, expected 0 (native), 1 (default) or 2 (consistent snapshot)", 0)
        image_type = ImageType(kind)
        format_version = cursor.u16("format version")
        options = cursor.u16("global options")
        table_count = read_number(cursor, "number of tables")
        engine_name = engine_version = None
        if image_type == ImageType.NATIVE:
            engine_name = read_string(cursor, "storage engine name")
            engine_version = tuple(cursor.take(2, "storage engine version"))
        return SnapshotInfo(image_type, table_count, format_version, options, engine_name, engine_version, cursor.rest())


# -- summary ---------------------------------------------------------------------


def encode_summary(summary: Summary, has_binlog_position: bool) -> bytes:
    positions = (summary.binlog_file, summary.binlog_position, summary.binlog_group_file, summary.binlog_group_position)
    if has_binlog_position and None in positions:
        raise ValueError("the header announces a binlog position: the summary needs all four binlog fields")
    if not has_binlog_position and positions != (None,) * 4:
        raise ValueError("the header announces no binlog position: the summary's binlog fields must be None")
    out = pack_time(summary.vp_time) + pack_time(summary.end_time)
    for name, position in ((summary.binlog_file, summary.binlog_position),
                           (summary.binlog_group_file, summary.binlog_group_position)):
        out += pack_int4(position or 0) + pack_string(name or "")
    return out


def decode_summary(chunk: Chunk, error: ErrorFactory, has_binlog_position: bool, *, marker: bool) -> Summary:
    """The summary chunk; ``marker``: it starts with the 0x00 of a summary at the end of the image."""
    with chunk_fields(chunk, error, "summary") as cursor:
        if marker:
            cursor.u8("summary marker")
        vp_time = read_time(cursor, "validity point time")
        end_time = read_time(cursor, "end time")
        binlog = []
        for what in ("binlog position", "binlog group position"):
            position = cursor.u32(what)
            binlog += [read_string(cursor, f"{what} file name"), position]
        _expect_end(cursor, "summary")
    if not has_binlog_position:
        return Summary(vp_time, end_time)
    return Summary(vp_time, end_time, *binlog)


# -- catalogue -------------------------------------------------------------------


def encode_catalogue(catalogue: Catalogue) -> list[bytes]:
    """The catalogue chunk and one db catalogue chunk per database."""
    if not 2 <= len(catalogue.charsets) <= MAX_CHARSETS:
        raise ValueError(f"{len(catalogue.charsets)} charsets: the two special ones and at most {MAX_CHARSETS} in all")
    head = bytearray()
    for names, what in ((catalogue.charsets, "a charset name"), (catalogue.users, "a user name")):
        for name in names:
            _check_name(name, what)
            head += pack_string(name)
        head.append(0x00)
    for database in catalogue.databases:
        _check_name(database.name, "a database name")
        _check_extra(database.extra_data, 0xFFFF, f"extra data of database {database.name!r}")
        head += pack_string(database.name)
        if database.extra_data is None:
            head.append(0x00)
        else:
            head += bytes((HAS_EXTRA_DATA,)) + pack_int2(len(database.extra_data)) + database.extra_data
    return [bytes(head), *(encode_db_catalogue(database) for database in catalogue.databases)]


def encode_db_catalogue(database: Database) -> bytes:
    if not database.items:
        return END_OF_LIST
    out = bytearray()
    for item in database.items:
        if isinstance(item, DbItem) and item.type == ItemType.TABLE:
            raise ValueError(f"table {item.name!r} must be a Table (with its snapshot number), not a DbItem")
        out += pack_int2(item.type) + pack_string(item.name)
        if isinstance(item, Table):
            _check_extra(item.extra_data, 0xFF, f"extra data of table {item.name!r}")
            if not 1 <= item.snapshot_number <= MAX_SNAPSHOTS:
                raise ValueError(f"table {item.name!r}: snapshot number {item.snapshot_number} (snapshots count from 1)")
            if item.extra_data is None:
                out += bytes((0x00, item.snapshot_number))
            else:
                out += bytes((HAS_EXTRA_DATA, item.snapshot_number, len(item.extra_data))) + item.extra_data
    return bytes(out)


def _read_list(cursor: Cursor, what: str) -> tuple[str, ...]:
    names = []
    while True:
        name = read_string(cursor, what)
        if not name:
            return tuple(names)
        names.append(name)


def decode_catalogue(
    chunk: Chunk, next_chunk: Callable[[str], Chunk], error: ErrorFactory, snapshots: tuple[SnapshotInfo, ...]
) -> Catalogue:
    """The catalogue chunk and the db catalogue chunks after it, checked against the header's snapshots."""
    with chunk_fields(chunk, error, "catalogue") as cursor:
        charsets = _read_list(cursor, "charset name")
        users = _read_list(cursor, "user name")
        heads = []
        if cursor.data[cursor.pos :] != b"\x00":  # a single null string: no databases
            while cursor.remaining:
                start = cursor.pos
                name = read_string(cursor, "database name")
                if not name:
                    raise BadField("empty database name in the database list", start)
                flags = cursor.u8("database flags")
                extra = cursor.take(cursor.u16("database extra data length"), "database extra data") \
                    if flags & HAS_EXTRA_DATA else None
                heads.append((name, extra))
        if len(charsets) < 2:
            raise BadField(f"{len(charsets)} charsets, expected at least 2 (preamble charset, server charset)", 0)
    databases = tuple(
        Database(name, decode_db_catalogue(next_chunk(f"the catalogue of database {name!r}"), error, name, snapshots),
                 extra)
        for name, extra in heads
    )
    catalogue = Catalogue(charsets, users, databases)
    _check_table_counts(catalogue, snapshots, chunk, error)
    return catalogue


def decode_db_catalogue(
    chunk: Chunk, error: ErrorFactory, database: str, snapshots: tuple[SnapshotInfo, ...]
) -> tuple[Table | DbItem, ...]:
    if chunk.data == END_OF_LIST:
        return ()
    items: list[Table | DbItem] = []
    with chunk_fields(chunk, error, f"catalogue of database {database!r}") as cursor:
        while cursor.remaining:
            item_type = _read_item_type(cursor)
            name = read_string(cursor, "item name")
            if item_type != ItemType.TABLE:
                items.append(DbItem(item_type, name))
                continue
            flags = cursor.u8("table flags")
            snapshot_at = cursor.pos
            snapshot = cursor.u8("snapshot number")
            extra = cursor.take(cursor.u8("table extra data length"), "table extra data") \
                if flags & HAS_EXTRA_DATA else None
            if not 1 <= snapshot <= len(snapshots):
                raise error(
                    CatalogueReferenceError,
                    f"table {database}.{name} is in snapshot {snapshot}, but the header describes snapshots "
                    f"1..{len(snapshots)}",
                    chunk.file_offset(snapshot_at),
                )
            items.append(Table(name, snapshot, extra))
    return tuple(items)


def _read_item_type(cursor: Cursor) -> ItemType:
    start = cursor.pos
    code = cursor.u16("item type")
    if code not in ItemType._value2member_map_:
        raise BadField(f"item type {code}, expected 1..6", start)
    return ItemType(code)


def _check_table_counts(catalogue: Catalogue, snapshots, chunk: Chunk, error: ErrorFactory) -> None:
    for number, info in enumerate(snapshots, 1):
        found = len(catalogue.snapshot_tables(number))
        if found != info.table_count:
            raise error(
                CatalogueReferenceError,
                f"the catalogue lists {found} tables in snapshot {number}, its description {info.table_count}",
                chunk.offset,
            )


def check_catalogue(catalogue: Catalogue, header: Header) -> None:
    """Refuse (ValueError) a catalogue that the header's snapshot descriptions contradict."""
    for database in catalogue.databases:
        for table in database.tables:
            if not 1 <= table.snapshot_number <= len(header.snapshots):
                raise ValueError(
                    f"table {database.name}.{table.name} is in snapshot {table.snapshot_number}, the header "
                    f"describes snapshots 1..{len(header.snapshots)}"
                )
    for number, info in enumerate(header.snapshots, 1):
        found = len(catalogue.snapshot_tables(number))
        if found != info.table_count:
            raise ValueError(f"snapshot {number} announces {info.table_count} tables, the catalogue has {found}")


# -- meta data -------------------------------------------------------------------


def position_problem(item: MetadataItem, catalogue: Catalogue) -> str | None:
    """What is wrong with where ``item`` says its item is in ``catalogue``, or None."""
    databases = catalogue.databases
    if item.kind == MetadataKind.GLOBAL:
        lists = {ItemType.DATABASE: databases, ItemType.USER: catalogue.users, ItemType.CHARSET: catalogue.charsets}
        if item.type in lists and item.position >= len(lists[item.type]):
            return f"{item.type.name.lower()} {item.position} is past the catalogue's {len(lists[item.type])}"
        return None
    if item.database is None or item.database >= len(databases):
        return f"database {item.database} is past the catalogue's {len(databases)} databases"
    database = databases[item.database]
    if item.kind == MetadataKind.TABLE:
        tables = catalogue.snapshot_tables(item.snapshot_number or 0)
        if item.position >= len(tables):
            return f"table {item.position} is past the {len(tables)} tables of snapshot {item.snapshot_number}"
        if tables[item.position][0] != item.database:
            return (f"table {item.position} of snapshot {item.snapshot_number} belongs to database "
                    f"{tables[item.position][0]}, not to database {item.database} whose tables it is listed with")
        return None
    if item.kind == MetadataKind.PER_DB:
        if item.position >= len(database.items):
            return f"item {item.position} is past the {len(database.items)} items of database {database.name!r}"
        if database.items[item.position].type != item.type:
            return f"item {item.position} of database {database.name!r} is not a {item.type.name.lower()}"
        return None
    if item.table is None or item.table >= len(database.items) or not isinstance(database.items[item.table], Table):
        return f"item {item.table} of database {database.name!r} is not a table"
    return None


def encode_item_entry(item: MetadataItem) -> bytes:
    _check_extra(item.extra_data, 0xFFFF, "meta-data extra data")
    out = pack_int2(item.type) + bytes((item.flags,))
    if item.kind == MetadataKind.TABLE:
        out += pack_number(item.snapshot_number) + pack_number(item.position)
    else:
        out += pack_number(item.position)
    if item.kind in (MetadataKind.PER_DB, MetadataKind.PER_TABLE):
        out += pack_number(item.database)
    if item.kind == MetadataKind.PER_TABLE:
        out += pack_number(item.table)
    if item.extra_data is not None:
        out += pack_int2(len(item.extra_data)) + item.extra_data
    if item.create_statement is not None:
        out += pack_string(item.create_statement)
    return out


def encode_metadata(items: list[MetadataItem], catalogue: Catalogue) -> list[bytes]:
    """The meta-data chunks: global items, the tables of each database, other items."""
    for item in items:
        problem = position_problem(item, catalogue)
        if problem:
            raise ValueError(f"meta-data entry {item}: {problem}")

    def item_list(kind: MetadataKind, database: int | None = None) -> bytes:
        entries = b"".join(
            encode_item_entry(item) for item in items
            if item.kind == kind and (database is None or item.database == database)
        )
        return entries or END_OF_LIST

    chunks = [item_list(MetadataKind.GLOBAL)]
    if not catalogue.databases:
        return chunks
    chunks += [item_list(MetadataKind.TABLE, number) for number in range(len(catalogue.databases))]
    per_db = b"".join(encode_item_entry(item) for item in items if item.kind == MetadataKind.PER_DB)
    per_table = b"".join(encode_item_entry(item) for item in items if item.kind == MetadataKind.PER_TABLE)
    return [*chunks, per_db + END_OF_LIST + per_table]


def _decode_item_entry(cursor: Cursor, kind: MetadataKind, database: int | None) -> MetadataItem:
    item_type = _read_item_type(cursor)
    flags = cursor.u8("item flags")
    snapshot = table = None
    if kind == MetadataKind.TABLE:
        snapshot = read_number(cursor, "snapshot number")
    position = read_number(cursor, "item position")
    if kind in (MetadataKind.PER_DB, MetadataKind.PER_TABLE):
        database = read_number(cursor, "database number")
    if kind == MetadataKind.PER_TABLE:
        table = read_number(cursor, "table position")
    extra = cursor.take(cursor.u16("extra data length"), "extra data") if flags & HAS_EXTRA_DATA else None
    statement = read_string(cursor, "CREATE statement") if flags & HAS_CREATE_STATEMENT else None
    return MetadataItem(kind, item_type, position, database, snapshot, table, extra, statement)


def _decode_item_list(
    chunk: Chunk, cursor: Cursor, kind: MetadataKind, catalogue: Catalogue, error: ErrorFactory,
    database: int | None = None, *, until_marker: bool = False,
) -> list[MetadataItem]:
    """Entries up to the end of the chunk, or (``until_marker``) up to the 0x00 0x00 marker."""
    items = []
    first = True
    while cursor.remaining or until_marker:
        start = cursor.pos
        if cursor.data[start : start + 2] == END_OF_LIST:
            cursor.skip(2)
            if not until_marker and (not first or cursor.remaining):
                raise BadField("0x00 0x00 (empty list) must be the whole list", start)
            break
        item = _decode_item_entry(cursor, kind, database)
        problem = position_problem(item, catalogue)
        if problem:
            raise error(CatalogueReferenceError, f"{kind.value} meta-data entry: {problem}", chunk.file_offset(start))
        items.append(item)
        first = False
    return items


def decode_metadata(first: Chunk, next_chunk: Callable[[str], Chunk], error: ErrorFactory,
                    catalogue: Catalogue) -> list[MetadataItem]:
    """The meta-data chunks, every position checked against ``catalogue``."""
    with chunk_fields(first, error, "global meta-data") as cursor:
        items = _decode_item_list(first, cursor, MetadataKind.GLOBAL, catalogue, error)
    for number, database in enumerate(catalogue.databases):
        chunk = next_chunk(f"the table meta-data of database {database.name!r}")
        with chunk_fields(chunk, error, f"table meta-data of database {database.name!r}") as cursor:
            items += _decode_item_list(chunk, cursor, MetadataKind.TABLE, catalogue, error, number)
    if catalogue.databases:
        chunk = next_chunk("the per-db and per-table meta-data")
        with chunk_fields(chunk, error, "per-db and per-table meta-data") as cursor:
            items += _decode_item_list(chunk, cursor, MetadataKind.PER_DB, catalogue, error, until_marker=True)
            items += _decode_item_list(chunk, cursor, MetadataKind.PER_TABLE, catalogue, error)
    return items


# -- table data ------------------------------------------------------------------


def encode_data_chunk_head(snapshot_number: int, sequence_number: int, last: bool, table_number: int) -> bytes:
    """[ snapshot no:1 ! seq no:2 ! flags:1 ! table no ], followed in the chunk by the data."""
    return (
        bytes((snapshot_number,))
        + pack_int2(sequence_number)
        + bytes((LAST_DATA_BLOCK if last else 0,))
        + pack_number(table_number)
    )


def decode_data_chunk_head(chunk: Chunk, error: ErrorFactory) -> tuple[int, int, bool, int, int]:
    """(snapshot number, sequence number, last, table number, where the data starts in the chunk)."""
    with chunk_fields(chunk, error, "table data chunk") as cursor:
        snapshot = cursor.u8("snapshot number")
        sequence = cursor.u16("sequence number")
        flags = cursor.u8("flags")
        table = read_number(cursor, "table number")
        return snapshot, sequence, bool(flags & LAST_DATA_BLOCK), table, cursor.pos

