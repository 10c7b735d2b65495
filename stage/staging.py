"""Staging: the binlog objects after the checkpoint, copied into a local folder and verified.

Spark reads local files only, so each run first brings the binlog files it
needs from object storage into a staging folder:

1. :func:`pending_objects` picks, from a listing, the binlog files
   (``<base>.<digits>``, or an archiver's compressed copy ``.gz`` / ``.zst``)
   after the checkpoint, in log order; the checkpoint's own file again when it
   has grown past the committed position (a binlog still being written is read
   up to its last complete transaction and resumed by the next run; the
   decoder takes care of that). When the store does not hold the checkpoint's
   file (a stream pointed at a new primary's binlogs), every binlog object is
   staged: the run finds its place in them by GTID, or refuses
   (:mod:`spark_jobs.streams`). Whether the files continue the log is judged
   by the run, on the staged bytes, not here.
2. :func:`stage` downloads each into ``staging_dir/<name>``.

Every step can be repeated after a crash:

* a download goes to a temporary file in the staging folder, is verified
  (size, then the S3 ETag or, for a folder, the MD5 of the bytes), and only
  then renamed into place, so a final name never holds a half file;
* a file already staged with the object's size and checksum is kept as it is
  (nothing downloaded);
* a staged file that is a prefix of a grown object gets only the new tail
  (a range request from the staged size), and the whole is verified again;
* a staged file that is not what the object holds (the object was rewritten)
  raises :class:`StagingConflict` and is never overwritten;
* a staging folder that runs out of space (or a file size limit) raises
  :class:`StagingFull` naming the object and the space left: the temporary file
  is removed, the files staged before stay staged and recorded, and a run after
  space was freed goes on from there.

``staging_dir/_staged.json`` records what each staged file was verified
against (size, ETag, MD5), so that a later run need not hash unchanged files
again. A file whose size on disk differs from the record is hashed again.
:func:`prune` removes staged files the checkpoint has passed
(:func:`warehouse.maintenance.prune_staged`) and marks their records
``pruned``: their record still tells a rewritten archive, never that the file
is there.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from spark_jobs.positions import CheckpointFileMissing, after_checkpoint, binlog_name_of, log_order
from stage.object_store import CHUNK_BYTES, ObjectStore, StoredObject
from warehouse.publish import write_atomically

log = logging.getLogger(__name__)

MANIFEST = "_staged.json"


class StagingError(RuntimeError):
    """Staging cannot go on; nothing was left half written under a final name."""


class VerificationError(StagingError):
    """A downloaded file is not what the store lists (a bad transfer, or an object replaced
    while it was read). Running again is safe."""


class StagingConflict(StagingError):
    """A staged file differs from the object of the same name, which must have been
    rewritten. The staged file is kept; someone has to decide which one is right."""


class StagingFull(StagingError):
    """The staging folder has no room for the next file. Free space (or prune staged files
    the checkpoint has passed) and run again."""


# What a write says when the disk, the user's quota or the file size limit is reached.
NO_SPACE = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


@dataclass(frozen=True)
class StagedFile:
    """One verified binlog file in the staging folder."""

    name: str
    path: str
    size: int
    etag: str | None
    md5: str


def pending_objects(objects: list[StoredObject], position: dict | None) -> list[StoredObject]:
    """The binlog objects to read, in log order, after the checkpoint ``position``
    (``{"file": name, "position": n}``; None: all of them), by the rule of
    :mod:`spark_jobs.positions`: the checkpoint's own file again when it has grown, then the
    later files; all of them when the checkpoint's file is not there (see the module text).
    Objects whose names are not ``<base>.<digits>`` (with ``.gz`` or ``.zst`` for a compressed
    copy) are left out: index files and the like."""
    binlogs = []
    for obj in objects:
        if binlog_name_of(obj.name):
            binlogs.append(obj)
        else:
            log.debug("%s: not a binlog file name, not staged", obj.name)
    try:
        pending = after_checkpoint(binlogs, position, name=lambda o: binlog_name_of(o.name), size=lambda o: o.size,
                                   where="the store", accept_gap=True)
    except CheckpointFileMissing as exc:
        log.warning("%s; staging all %d binlog objects, for the run to find its place by GTID", exc.problem,
                    len(binlogs))
        pending = after_checkpoint(binlogs, None, name=lambda o: binlog_name_of(o.name), size=lambda o: o.size,
                                   accept_gap=True)
    return [obj for obj, _ in pending]


def stage(
    store: ObjectStore, staging_dir: Path, position: dict | None, *, replace_rewritten: bool = False
) -> list[StagedFile]:
    """Bring the objects after ``position`` into ``staging_dir``, verified; returns them in
    log order. See the module docstring for what happens to files already staged.

    An object staged before, and before the checkpoint's file in log order, that the store now
    lists with another size or ETag was rewritten (``RESET MASTER`` and an archiver reusing its
    names, a restore): :class:`StagingConflict` names them, unless ``replace_rewritten`` (the
    user took the store's files as a new log), which stages them again for the run to judge."""
    listing = store.list()
    staging_dir = Path(staging_dir)
    rewritten = rewritten_objects(listing, _read_manifest(staging_dir), position)
    if rewritten and not replace_rewritten:
        raise StagingConflict(
            f"{store.uri}: {', '.join(obj.name for obj in rewritten)} changed in the store since they were staged and "
            "read (another size or checksum): the archive's files were replaced, after RESET MASTER or a restore? "
            "Nothing was staged. If the source really starts a new log, run once with accept_new_series"
        )
    for obj in rewritten:
        log.warning("%s: rewritten in the store; staged again for the run to judge", obj.name)
        (staging_dir / obj.name).unlink(missing_ok=True)
    pending = pending_objects(listing, position)
    return stage_objects(store, staging_dir, rewritten + [obj for obj in pending if obj not in rewritten])


def rewritten_objects(objects: list[StoredObject], manifest: dict, position: dict | None) -> list[StoredObject]:
    """The objects staged before the checkpoint's file (a file that never changes once the log
    has moved on) that the store lists with another size or ETag than when they were staged."""
    if position is None:
        return []
    checkpoint_order = log_order(position["file"])
    changed = []
    for obj in objects:
        name, staged = binlog_name_of(obj.name), manifest.get(obj.name)
        if name is None or staged is None or log_order(name) >= checkpoint_order:
            continue
        if staged["size"] != obj.size or (obj.etag and staged["etag"] and staged["etag"] != obj.etag):
            changed.append(obj)
    return sorted(changed, key=lambda obj: log_order(binlog_name_of(obj.name)))


def stage_named(store: ObjectStore, staging_dir: Path, names: list[str]) -> list[StagedFile]:
    """Bring the objects named ``names`` into ``staging_dir`` (a backfill's files), verified; a
    name the store does not hold is a :class:`StagingError`."""
    listed = {obj.name: obj for obj in store.list()}
    missing = [name for name in names if name not in listed]
    if missing:
        raise StagingError(f"{store.uri} no longer holds {', '.join(missing)}")
    return stage_objects(store, staging_dir, [listed[name] for name in names])


def stage_objects(store: ObjectStore, staging_dir: Path, objects: list[StoredObject]) -> list[StagedFile]:
    """``objects`` of ``store`` into ``staging_dir``, verified, in the order given."""
    staging_dir = Path(staging_dir)
    staging_dir.mkdir(parents=True, exist_ok=True)
    manifest = _read_manifest(staging_dir)
    log.info("%s: %d binlog files to stage into %s", store.uri, len(objects), staging_dir)
    return [_stage_with_room(store, obj, staging_dir, manifest) for obj in objects]


def _stage_with_room(store: ObjectStore, obj: StoredObject, staging_dir: Path, manifest: dict) -> StagedFile:
    """:func:`_stage_object`, with a write that finds no room turned into :class:`StagingFull`."""
    try:
        return _stage_object(store, obj, staging_dir, manifest)
    except OSError as exc:
        if exc.errno not in NO_SPACE:
            raise
        free = shutil.disk_usage(staging_dir).free
        raise StagingFull(
            f"{staging_dir}: no room to stage {store.uri}/{obj.name} ({obj.size} bytes; {free} bytes free on "
            f"its file system): {exc.strerror}. Nothing of it is left in the staging folder; the files staged "
            "before it stay staged"
        ) from exc


def _stage_object(store: ObjectStore, obj: StoredObject, staging_dir: Path, manifest: dict) -> StagedFile:
    """One object into ``staging_dir/<name>``: downloaded, extended by its new tail, or kept."""
    final = staging_dir / obj.name
    staged_size = final.stat().st_size if final.exists() else None
    if staged_size is None:
        md5, action, transferred = _replace_with_download(store, obj, final), "downloaded", obj.size
    elif staged_size == obj.size:
        md5, action, transferred = _check_staged(store, obj, final, manifest.get(obj.name)), "skipped", 0
    elif staged_size < obj.size:
        md5, action, transferred = _extend(store, obj, final, staged_size), "extended", obj.size - staged_size
    else:
        raise StagingConflict(
            f"{final}: staged with {staged_size} bytes, but {store.uri}/{obj.name} has only {obj.size}; "
            "the object was rewritten, the staged file is kept"
        )
    entry = {"size": obj.size, "etag": obj.etag, "md5": md5}
    if manifest.get(obj.name) != entry:
        manifest[obj.name] = entry
        write_atomically(staging_dir / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True))
    log.info("%s: %d bytes, %s (%d bytes transferred)", obj.name, obj.size, action, transferred)
    return StagedFile(obj.name, str(final), obj.size, obj.etag, md5)


def _check_staged(store: ObjectStore, obj: StoredObject, final: Path, recorded: dict | None) -> str:
    """The MD5 of a staged file as large as the object, once it is known to hold the object's
    bytes: from the manifest when it recorded this very object, else by hashing the file."""
    expected = store.expected_checksum(obj)
    trusted = recorded and not recorded.get("pruned") and recorded["size"] == obj.size
    if trusted and _verified_against(recorded) == expected:
        return recorded["md5"]
    md5, actual = store.local_checksum(obj, final)
    if actual != expected:
        raise StagingConflict(
            f"{final}: the staged file differs from {store.uri}/{obj.name} (checksum {actual}, "
            f"the object's {expected}); the object was rewritten, the staged file is kept"
        )
    return md5


def _verified_against(recorded: dict) -> str:
    """The checksum a manifest entry was verified against: the ETag, or for a store without
    ETags, the MD5."""
    return recorded["etag"] or recorded["md5"]


def _extend(store: ObjectStore, obj: StoredObject, final: Path, staged_size: int) -> str:
    """The staged file plus the object's bytes from ``staged_size`` on, verified as a whole,
    replaces the staged file.

    When the whole does not verify, the object is downloaded whole to tell a bad
    transfer (retry later) from a rewritten object whose start differs from the
    staged file (a conflict)."""
    temporary = _temporary(final)
    try:
        try:
            md5 = _download_verified(store, obj, temporary, staged=final)
        except VerificationError as error:
            log.warning("%s: %s; downloading the whole object to compare", obj.name, error)
            md5 = _download_verified(store, obj, temporary)
            if not _starts_with(temporary, final):
                raise StagingConflict(
                    f"{final}: the staged file is not the start of {store.uri}/{obj.name}; "
                    "the object was rewritten, the staged file is kept"
                )
        os.replace(temporary, final)
        return md5
    finally:
        temporary.unlink(missing_ok=True)


def _replace_with_download(store: ObjectStore, obj: StoredObject, final: Path) -> str:
    """Download the whole object, verify it, move it to ``final``; returns its MD5."""
    temporary = _temporary(final)
    try:
        md5 = _download_verified(store, obj, temporary)
        os.replace(temporary, final)
        return md5
    finally:
        temporary.unlink(missing_ok=True)


def _temporary(final: Path) -> Path:
    """Where a download of ``final`` is written before it is verified (a hidden name that is
    not a binlog file name, so nothing reads it by mistake)."""
    return final.with_name(f".{final.name}.partial")


def _download_verified(store: ObjectStore, obj: StoredObject, target: Path, *, staged: Path | None = None) -> str:
    """The object's listed bytes into ``target`` (the ``staged`` file's bytes, then only the
    rest), verified against the listing; returns the MD5."""
    start = 0
    if staged is not None:
        shutil.copyfile(staged, target)
        start = staged.stat().st_size
        tail = target.with_name(target.name + ".tail")
        try:
            store.download(obj.name, tail, start=start, end=obj.size)
            with open(tail, "rb") as source, open(target, "ab") as handle:
                shutil.copyfileobj(source, handle, CHUNK_BYTES)
        finally:
            tail.unlink(missing_ok=True)
    else:
        store.download(obj.name, target, start=0, end=obj.size)
    return _verify(store, obj, target)


def _verify(store: ObjectStore, obj: StoredObject, local: Path) -> str:
    """The MD5 of ``local`` when its size and checksum are the object's; VerificationError naming
    the object, the expected and the actual value otherwise."""
    size = local.stat().st_size
    if size != obj.size:
        raise VerificationError(f"{store.uri}/{obj.name}: downloaded {size} bytes, the listing says {obj.size}")
    md5, actual = store.local_checksum(obj, local)
    expected = store.expected_checksum(obj)
    if actual != expected:
        raise VerificationError(
            f"{store.uri}/{obj.name}: downloaded bytes have checksum {actual}, the object {expected}"
        )
    return md5


def _starts_with(path: Path, prefix: Path) -> bool:
    """Whether the file ``path`` begins with the bytes of the file ``prefix``."""
    with open(path, "rb") as whole, open(prefix, "rb") as start:
        while chunk := start.read(CHUNK_BYTES):
            if whole.read(len(chunk)) != chunk:
                return False
    return True


def prune(staging_dir: Path, names: list[str]) -> None:
    """Remove the staged files ``names`` and mark their records ``pruned`` in the manifest: what
    they were verified against stays, so that :func:`stage` still notices an object rewritten
    under them, but a file put back under such a name is hashed again."""
    staging_dir = Path(staging_dir)
    manifest = _read_manifest(staging_dir)
    for name in names:
        (staging_dir / name).unlink(missing_ok=True)
        if name in manifest:
            manifest[name] = {**manifest[name], "pruned": True}
    write_atomically(staging_dir / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True))
    log.info("%s: %d staged files pruned", staging_dir, len(names))


def _read_manifest(staging_dir: Path) -> dict:
    """``name -> {"size", "etag", "md5"}`` of the files staged so far (empty when none)."""
    path = staging_dir / MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
