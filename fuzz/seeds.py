"""Seed inputs of the fuzz targets, made from real and synthetic input.

* **Real binlogs**: the shared fixtures (``../shared/fixtures/binlogs/`` next to
  the repository, written by MySQL, MariaDB, Percona and Aurora servers) and
  the bundled ``samples/``. Small files are seeds as they are; every file is
  also cut into *fragments*: the magic, the format description and one event
  (a rows event with the table map before it), so that mutations land on the
  bytes that matter instead of on framing.
* **Synthetic binlogs** of :func:`binlog_codec.corpus.write_corpus`: FULL,
  MINIMAL and NOBLOB images, partial JSON updates, zstd transaction payloads.
* **Binary JSON** documents and **JSON diff** vectors of :mod:`binlog_codec.corpus`,
  and the JSON values of the real binlogs, serialized again.
* **Backup images** written by :class:`binlog_codec.backup.BackupWriter`: the
  summary in the preamble or at the end, small blocks (so that chunks span
  blocks and the initial blocks repeat the block size) and large ones.

:func:`seeds` returns a target's seeds by name; ``python -m fuzz.seeds DIR``
writes every target's seeds to ``DIR/<target>/``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import logging
import random
import tempfile
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from binlog_codec import json_binary, json_diff
from binlog_codec.backup import (
    BackupWriter,
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
from binlog_codec.corpus import json_changes, order_document, settings_document, write_corpus
from binlog_codec.errors import BinlogError
from binlog_codec.event_types import ROWS_TYPES, EventType
from binlog_codec.reader import MAGIC, BinlogReader
from binlog_codec.rows import read_rows

from .targets import BASE_DOCUMENTS, TABLE_MAP_FDE

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = REPO_ROOT.parent / "shared" / "fixtures" / "binlogs"
SAMPLES = REPO_ROOT / "samples"
# Whole files up to this size are seeds; larger ones only give fragments.
MAX_SEED_FILE = 16 << 10
# Fragments kept per file and event type: the first few are as varied as the rest.
FRAGMENTS_PER_TYPE = 3


def real_binlogs() -> list[Path]:
    """The fixture binlogs and the bundled samples that exist on this machine."""
    found = sorted(path for path in FIXTURES.glob("*/*") if path.is_file() and path.suffix not in (".md", ".json"))
    return found + sorted(SAMPLES.glob("mariadb-bin.0*"))


@lru_cache(maxsize=1)
def _real_binlog_digests() -> frozenset[str]:
    return frozenset(hashlib.sha1(path.read_bytes()).hexdigest() for path in real_binlogs())


def is_real_binlog(data: bytes) -> bool:
    """Whether ``data`` is a whole real binlog: those are seeds, never part of the committed corpus."""
    return hashlib.sha1(data).hexdigest() in _real_binlog_digests()


@lru_cache(maxsize=1)
def _synthetic_binlogs() -> tuple[tuple[str, bytes], ...]:
    """Small synthetic MySQL 8.0 binlogs: each row image kind, plain and compressed."""
    files = []
    with tempfile.TemporaryDirectory() as folder:
        for seed, (image, compress) in enumerate(
            [("full", False), ("minimal", False), ("noblob", False), ("minimal", True)], start=41
        ):
            path = Path(folder) / f"corpus-{image}{'-zstd' if compress else ''}.000001"
            write_corpus(path, transactions=4, seed=seed, image=image, compress=compress, max_rows=4)
            files.append((path.name, path.read_bytes()))
    return tuple(files)


@lru_cache(maxsize=1)
def binlog_files() -> tuple[tuple[str, bytes], ...]:
    """``(name, bytes)`` of every real and synthetic binlog."""
    real = tuple((f"{path.parent.name}/{path.name}", path.read_bytes()) for path in real_binlogs())
    return real + _synthetic_binlogs()


def _events(name: str, data: bytes) -> list[tuple[int, int, int]]:
    """``(position, end, type code)`` of the events of a binlog, up to the first it cannot frame."""
    events = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "seed.000001"
        path.write_bytes(data)
        try:
            for raw in BinlogReader(path, verify_checksums=False, unwrap_payloads=False):
                events.append((raw.pos, raw.end_pos, raw.type_code))
        except BinlogError as exc:
            log.debug("%s: framing stops at %s (%s)", name, exc.position, exc.message)
    return events


def fragments(name: str, data: bytes) -> Iterator[tuple[str, bytes]]:
    """``(name, bytes)`` of small binlogs cut from ``data``: magic, its first format description,
    then one event, a rows event after the table map in force for it."""
    events = _events(name, data)
    if not events or events[0][2] != EventType.FORMAT_DESCRIPTION:
        return
    fde = data[events[0][0] : events[0][1]]
    table_map = b""
    per_type: dict[int, int] = {}
    for position, end, type_code in events[1:]:
        event = data[position:end]
        if type_code == EventType.TABLE_MAP:
            table_map = event
        if per_type.get(type_code, 0) >= FRAGMENTS_PER_TYPE:
            continue
        per_type[type_code] = per_type.get(type_code, 0) + 1
        before = table_map if type_code in ROWS_TYPES and type_code != EventType.TABLE_MAP else b""
        yield f"{name}@{position}", MAGIC + fde + before + event


def _table_map_bodies(name: str, data: bytes) -> Iterator[tuple[str, bytes]]:
    """The TABLE_MAP bodies of a binlog whose table ids take 6 bytes (as the target reads them)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "seed.000001"
        path.write_bytes(data)
        reader = BinlogReader(path, verify_checksums=False)
        try:
            for raw in reader:
                if raw.type_code == EventType.TABLE_MAP and raw.fde.post_header_length(EventType.TABLE_MAP, 8) == 8:
                    yield f"{name}@{raw.pos}", raw.body
        except BinlogError:
            return


def _json_values(name: str, data: bytes) -> Iterator[tuple[str, bytes]]:
    """The JSON documents in the rows of a binlog, serialized again as binary JSON."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "seed.000001"
        path.write_bytes(data)
        try:
            for record in read_rows(path, verify_checksums=False):
                for image in (record.change.before, record.change.after):
                    for column, value in (image or {}).items():
                        if isinstance(value, (dict, list, json_binary.Opaque)):
                            yield f"{name}@{record.pos}.{record.row_index}.{column}", json_binary.serialize(value)
        except (BinlogError, ValueError):
            return


def _documents() -> Iterator[tuple[str, bytes]]:
    rng = random.Random(8132)
    for number in range(6):
        yield f"order-{number}", json_binary.serialize(order_document(rng))
        yield f"settings-{number}", json_binary.serialize(settings_document(rng))
    for number, document in enumerate(BASE_DOCUMENTS):
        yield f"base-{number}", json_binary.serialize(document)


def _diff_vectors() -> Iterator[tuple[str, bytes]]:
    """Diff vectors that apply to the target's base documents (and some that do not)."""
    rng = random.Random(2955)
    for number in range(24):
        document = BASE_DOCUMENTS[number % len(BASE_DOCUMENTS)]
        diffs = json_changes(rng, document)
        if diffs:
            yield f"diffs-{number}", json_diff.encode_diffs(diffs)


T0 = datetime(2026, 11, 22, 1, 2, 3, tzinfo=timezone.utc)


def _backup_parts(summary_in_preamble: bool) -> tuple[Header, Catalogue, list[MetadataItem], Summary]:
    """The parts of a backup image of two snapshots, four tables, a view and a privilege."""
    header = Header(
        T0,
        ServerVersion(8, 0, 40, "8.0.40-log"),
        (
            SnapshotInfo(ImageType.CONSISTENT_SNAPSHOT, table_count=2, format_version=1),
            SnapshotInfo(ImageType.NATIVE, 1, 1, 7, "MyISAM", (1, 2), b"ext"),
        ),
        summary_in_preamble=summary_in_preamble,
        has_binlog_position=True,
        big_endian=False,
    )
    catalogue = Catalogue(
        ("utf8mb4", "latin1"),
        ("root", "app"),
        (
            Database("shop", (Table("orders", 1), DbItem(ItemType.VIEW, "v"), Table("items", 2, b"abc"),
                              Table("stock", 1))),
            Database("x", (), b"hi"),
        ),
    )
    metadata = [
        MetadataItem(MetadataKind.GLOBAL, ItemType.DATABASE, 0, create_statement="CREATE DATABASE shop"),
        MetadataItem(MetadataKind.TABLE, ItemType.TABLE, 0, database=0, snapshot_number=1, extra_data=b"xy",
                     create_statement="CREATE TABLE orders (id INT PRIMARY KEY)"),
        MetadataItem(MetadataKind.TABLE, ItemType.TABLE, 0, database=0, snapshot_number=2),
        MetadataItem(MetadataKind.PER_DB, ItemType.VIEW, 1, database=0, create_statement="CREATE VIEW v AS SELECT 1"),
        MetadataItem(MetadataKind.PER_TABLE, ItemType.PRIVILEGE, 0, database=0, table=3, extra_data=b"P"),
    ]
    summary = Summary(T0, T0, "binlog.000042", 260, "binlog.000042", 120)
    return header, catalogue, metadata, summary


def backup_image(block_size: int, summary_in_preamble: bool, rows: int) -> bytes:
    """A backup image with ``rows`` table data chunks per table, in blocks of ``block_size``."""
    header, catalogue, metadata, summary = _backup_parts(summary_in_preamble)
    out = io.BytesIO()
    writer = BackupWriter(out, header=header, block_size=block_size,
                          summary=summary if summary_in_preamble else None)
    writer.write_catalogue(catalogue)
    writer.write_metadata(metadata)
    for snapshot, table in ((1, 0), (1, 1), (2, 0)):
        for number in range(rows):
            writer.write_table_data(snapshot, table, f"row {number} of {snapshot}.{table}".encode() * (number + 1),
                                    last=number == rows - 1)
    writer.finish(None if summary_in_preamble else summary)
    return out.getvalue()


def _backup_images() -> Iterator[tuple[str, bytes]]:
    for block_size in (16, 64, 512, 32 << 10):
        for in_preamble in (True, False):
            for rows in (1, 3):
                name = f"backup-{block_size}-{'preamble' if in_preamble else 'end'}-{rows}"
                yield name, backup_image(block_size, in_preamble, rows)


def _file_seeds(with_rows_only: bool) -> Iterator[tuple[str, bytes]]:
    for name, data in binlog_files():
        if len(data) <= MAX_SEED_FILE:
            yield name, data
        for fragment_name, fragment in fragments(name, data):
            if not with_rows_only or _has_rows(fragment):
                yield fragment_name, fragment


def _has_rows(fragment: bytes) -> bool:
    return any(code in ROWS_TYPES for *_, code in _events("fragment", fragment)[1:])


def _table_maps() -> Iterator[tuple[str, bytes]]:
    for name, data in binlog_files():
        yield from _table_map_bodies(name, data)


def _json_documents() -> Iterator[tuple[str, bytes]]:
    yield from _documents()
    for name, data in binlog_files():
        yield from _json_values(name, data)


_MAKERS = {
    "binlog_events": lambda: _file_seeds(with_rows_only=False),
    "table_map": _table_maps,
    "row_images": lambda: _file_seeds(with_rows_only=True),
    "binary_json": _json_documents,
    "json_diffs": _diff_vectors,
    "backup_image": _backup_images,
}


def seeds(target: str) -> dict[str, bytes]:
    """The seeds of ``target`` by name, distinct bytes only, none above :data:`MAX_SEED_FILE`."""
    found: dict[str, bytes] = {}
    seen: set[bytes] = set()
    for name, data in _MAKERS[target]():
        if data not in seen and len(data) <= MAX_SEED_FILE:
            seen.add(data)
            found[name] = data
    log.info("%s: %d seeds, %d bytes", target, len(found), sum(map(len, found.values())))
    return found


def write_seeds(target: str, folder: Path) -> int:
    """Write ``target``'s seeds into ``folder`` (named by content, as libFuzzer names inputs)."""
    folder.mkdir(parents=True, exist_ok=True)
    found = seeds(target)
    for data in found.values():
        (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)
    return len(found)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m fuzz.seeds", description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="seeds go to FOLDER/<target>/")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for target in _MAKERS:
        write_seeds(target, args.folder / target)


if __name__ == "__main__":
    main()
