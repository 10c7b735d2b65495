"""Object storage holding binlog files: an S3 bucket prefix or a local folder.

Both kinds of store answer the same questions, so staging code never asks
which one it talks to:

* ``list()`` — the objects directly under the store's prefix (no recursion
  into deeper "folders"), sorted by name;
* ``download(name, target, start=, end=)`` — bytes ``[start, end)`` of one
  object into a local file, streamed in chunks (binlogs can be gigabytes);
* ``upload(source, name)`` — put a local file into the store (tests and the
  demo seed buckets with it);
* ``expected_checksum(obj)`` and ``local_checksum(obj, path)`` — how a local
  copy is verified: the checksum the store vouches for, and the same checksum
  computed over local bytes.

:func:`open_store` picks the kind from a URI: ``s3://bucket/prefix`` (boto3,
path-style addressing so that any S3-compatible server works) or
``file:///folder`` / a plain path. This module imports no Airflow; the
Airflow connection is read in :mod:`airflow_tasks.hooks`.

Hostile input. An object name is used as a local file name by staging, so only
plain names are accepted (:func:`safe_name`): no ``/`` or ``\\``, not ``.`` or
``..``, no NUL or other control characters, at most 255 bytes. Such objects
are left out of listings (with a warning naming the key) and refused by
``download`` and ``upload`` (:class:`UnsafeObjectName`), so no key can write
outside the staging folder.

Transient failures. The S3 client retries throttling, 5xx answers and dropped
connections itself (botocore's ``standard`` retry mode, :data:`S3_MAX_ATTEMPTS`
attempts, exponential backoff with jitter). A download whose body dies midway
is resumed by :meth:`S3Store.download` from the bytes already written (a range
request for the rest), up to :data:`S3_MAX_ATTEMPTS` times with exponential
backoff; after that, or when a listing keeps failing, :class:`StoreError`
names the store and the object.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlparse

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError, IncompleteReadError

log = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20  # read and write in pieces of 1 MiB, never a whole object
S3_MAX_ATTEMPTS = 5  # per request (botocore) and per download (a body that dies midway)
BACKOFF_SECONDS = 0.5  # before the second attempt at a download body; doubled each time after
MAX_NAME_BYTES = 255  # the longest file name a Linux filesystem takes


class UnsafeObjectName(ValueError):
    """An object name that is not a plain file name (it could write outside the staging folder)."""


class StoreError(RuntimeError):
    """A request failed for good (still failing after every retry, or refused by the store);
    the message names the store and the object."""


@dataclass(frozen=True)
class StoredObject:
    """One object as a listing sees it."""

    name: str  # relative to the store's prefix, e.g. "mariadb-bin.000003"
    size: int
    etag: str | None  # S3 ETag without quotes; None in a folder (its checksum is computed instead)


class ObjectStore(Protocol):
    """What staging needs from a store of binlog files (see the module docstring)."""

    uri: str

    def list(self) -> list[StoredObject]: ...

    def download(self, name: str, target: Path, *, start: int = 0, end: int | None = None) -> int: ...

    def upload(self, source: Path, name: str) -> None: ...

    def expected_checksum(self, obj: StoredObject) -> str: ...

    def local_checksum(self, obj: StoredObject, local: Path) -> tuple[str, str]: ...


def open_store(
    uri: str,
    *,
    endpoint_url: str | None = None,
    access_key: str | None = None,
    secret_key: str | None = None,
    region: str | None = None,
) -> ObjectStore:
    """The store behind ``uri``: ``s3://bucket/prefix`` or ``file:///folder`` (or a plain path).

    For S3, arguments left as None come from boto3's usual sources (environment,
    shared config, instance role), ``AWS_ENDPOINT_URL`` included."""
    parsed = urlparse(uri)
    if parsed.scheme == "s3" and parsed.netloc:
        client = _s3_client(endpoint_url, access_key, secret_key, region)
        return S3Store(parsed.netloc, parsed.path.strip("/"), client)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost") and parsed.path:
        return FolderStore(Path(unquote(parsed.path)))
    if parsed.scheme == "" and uri:
        return FolderStore(Path(uri))
    raise ValueError(f"not an object store URI (s3://bucket/prefix, file:///folder or a path): {uri!r}")


def _s3_client(endpoint_url, access_key, secret_key, region):
    """A boto3 S3 client with path-style addressing (bucket in the path, not the host name)."""
    return boto3.client(
        "s3",
        endpoint_url=endpoint_url,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        region_name=region,
        config=Config(
            s3={"addressing_style": "path"},
            retries={"mode": "standard", "total_max_attempts": S3_MAX_ATTEMPTS},
        ),
    )


def checksums(path: Path, part_size: int | None = None, *, limit: int | None = None) -> tuple[str, str]:
    """``(md5, etag)`` of a file's bytes (its first ``limit`` bytes, when given), read once in chunks.

    ``etag`` is what S3 reports for the same bytes: the MD5 itself when the object
    was uploaded in one piece, or for a multipart upload in parts of ``part_size``
    bytes, the MD5 of the parts' binary MD5s followed by ``-<number of parts>``."""
    whole = hashlib.md5()
    parts: list[bytes] = []
    part, in_part, remaining = hashlib.md5(), 0, limit
    with open(path, "rb") as handle:
        while remaining is None or remaining > 0:
            wanted = CHUNK_BYTES
            if part_size is not None:
                wanted = min(wanted, part_size - in_part)
            if remaining is not None:
                wanted = min(wanted, remaining)
                remaining -= wanted
            chunk = handle.read(wanted)
            if not chunk:
                break
            whole.update(chunk)
            if part_size is not None:
                part.update(chunk)
                in_part += len(chunk)
                if in_part == part_size:
                    parts.append(part.digest())
                    part, in_part = hashlib.md5(), 0
    if part_size is None:
        return whole.hexdigest(), whole.hexdigest()
    if in_part:
        parts.append(part.digest())
    return whole.hexdigest(), f"{hashlib.md5(b''.join(parts)).hexdigest()}-{len(parts)}"


def is_multipart_etag(etag: str) -> bool:
    """An ETag of the form ``<hex>-<parts>`` (a multipart upload), not a plain MD5."""
    return "-" in etag


def safe_name(name: str) -> str:
    """``name`` when it is a plain file name directly under the store's prefix (see the module
    text); :class:`UnsafeObjectName` saying why not otherwise."""
    if not name or name in (".", ".."):
        reason = "empty, or a reference to a folder"
    elif "/" in name or "\\" in name:
        reason = "it holds a path separator"
    elif any(ord(char) < 0x20 or ord(char) == 0x7F for char in name):
        reason = "it holds NUL or another control character"
    elif len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        reason = f"longer than {MAX_NAME_BYTES} bytes"
    else:
        return name
    raise UnsafeObjectName(f"not an object name directly under the store's prefix ({reason}): {name!r}")


def _listable(name: str, where: str) -> bool:
    """Whether a listed name is safe to hand on; an unsafe one is logged and left out."""
    try:
        safe_name(name)
    except UnsafeObjectName as exc:
        log.warning("%s: object left out: %s", where, exc)
        return False
    return True


def _check_range(start: int, end: int | None) -> None:
    if start < 0 or (end is not None and end < start):
        raise ValueError(f"invalid byte range [{start}, {end})")


class S3Store:
    """Objects directly under ``s3://bucket/prefix``.

    ``client`` is the boto3 S3 client it uses (exposed so that callers can hook
    its events, e.g. to count requests)."""

    def __init__(self, bucket: str, prefix: str, client) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = client
        self.uri = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"

    def _key(self, name: str) -> str:
        name = safe_name(name)
        return f"{self.prefix}/{name}" if self.prefix else name

    def list(self) -> list[StoredObject]:
        """The objects directly under the prefix (keys in deeper "folders" and unsafe names are
        left out)."""
        listing_prefix = f"{self.prefix}/" if self.prefix else ""
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=listing_prefix, Delimiter="/"
        )
        objects = []
        try:
            for page in pages:
                for entry in page.get("Contents", []):
                    name = entry["Key"][len(listing_prefix) :]
                    if name and _listable(name, self.uri):  # the prefix's own "folder marker" is no file
                        objects.append(StoredObject(name, entry["Size"], entry["ETag"].strip('"')))
        except (BotoCoreError, ClientError) as exc:
            raise StoreError(f"{self.uri}: listing failed after {S3_MAX_ATTEMPTS} attempts: {exc}") from exc
        return sorted(objects, key=lambda obj: obj.name)

    def download(self, name: str, target: Path, *, start: int = 0, end: int | None = None) -> int:
        """Bytes ``[start, end)`` of the object (``end`` None: to its end) into ``target``,
        created or truncated; returns the number of bytes written.

        A body that dies midway is resumed from the bytes already written, after a pause that
        doubles each time; :class:`StoreError` after :data:`S3_MAX_ATTEMPTS` attempts."""
        _check_range(start, end)
        safe_name(name)
        if end == start:
            Path(target).write_bytes(b"")
            return 0
        with open(target, "wb") as handle:
            for attempt in range(1, S3_MAX_ATTEMPTS + 1):
                try:
                    self._get_range(name, start + handle.tell(), end, handle)
                    break
                except FileNotFoundError:
                    handle.close()
                    Path(target).unlink()
                    raise
                except (HTTPClientError, IncompleteReadError) as exc:
                    if attempt == S3_MAX_ATTEMPTS:
                        raise StoreError(
                            f"{self.uri}/{name}: download failed after {attempt} attempts, "
                            f"{handle.tell()} bytes from {start} written: {exc}"
                        ) from exc
                    pause = BACKOFF_SECONDS * 2 ** (attempt - 1)
                    log.warning("%s/%s: download broke off after %d bytes (%s); resuming in %.1f s",
                                self.uri, name, handle.tell(), exc, pause)
                    time.sleep(pause)
            written = handle.tell()
        log.debug("%s/%s: %d bytes from %d downloaded", self.uri, name, written, start)
        return written

    def _get_range(self, name: str, start: int, end: int | None, handle) -> None:
        """One GET of bytes ``[start, end)`` of the object appended to ``handle``. What was
        written stays written when the body breaks off."""
        request = {"Bucket": self.bucket, "Key": self._key(name)}
        if start or end is not None:
            request["Range"] = f"bytes={start}-{'' if end is None else end - 1}"
        try:
            body = self.client.get_object(**request)["Body"]
        except self.client.exceptions.NoSuchKey:
            raise FileNotFoundError(f"{self.uri}/{name}: no such object") from None
        except (ClientError, BotoCoreError) as exc:
            raise StoreError(f"{self.uri}/{name}: {exc}") from exc
        try:
            for chunk in body.iter_chunks(CHUNK_BYTES):
                handle.write(chunk)
        finally:
            body.close()

    def upload(self, source: Path, name: str) -> None:
        """Put ``source`` under ``name`` (boto3 switches to a multipart upload for large files)."""
        self.client.upload_file(str(source), self.bucket, self._key(name))
        log.debug("%s/%s: uploaded from %s", self.uri, name, source)

    def expected_checksum(self, obj: StoredObject) -> str:
        """The object's ETag, as listed."""
        if obj.etag is None:
            raise ValueError(f"{self.uri}/{obj.name}: the listing gave no ETag")
        return obj.etag

    def local_checksum(self, obj: StoredObject, local: Path) -> tuple[str, str]:
        """``(md5, etag)`` of ``local``: the ETag S3 would give those bytes if they had been
        uploaded the way ``obj`` was (one piece, or parts of the size of its first part)."""
        part_size = self.part_size(obj.name) if is_multipart_etag(self.expected_checksum(obj)) else None
        return checksums(local, part_size)

    def part_size(self, name: str) -> int:
        """The size of the first part of a multipart-uploaded object (every part but the last
        has that size)."""
        head = self.client.head_object(Bucket=self.bucket, Key=self._key(name), PartNumber=1)
        return head["ContentLength"]


class FolderStore:
    """Files directly in a local folder (``file:///folder``); sub-folders are left out."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder).resolve()
        self.uri = self.folder.as_uri()

    def _path(self, name: str) -> Path:
        return self.folder / safe_name(name)

    def list(self) -> list[StoredObject]:
        """The regular files directly in the folder; no ETag (see :meth:`expected_checksum`)."""
        objects = [
            StoredObject(entry.name, entry.stat().st_size, None)
            for entry in os.scandir(self.folder)
            if entry.is_file() and _listable(entry.name, self.uri)
        ]
        return sorted(objects, key=lambda obj: obj.name)

    def download(self, name: str, target: Path, *, start: int = 0, end: int | None = None) -> int:
        """Bytes ``[start, end)`` of the file (``end`` None: to its end) into ``target``,
        created or truncated; returns the number of bytes written."""
        _check_range(start, end)
        remaining = None if end is None else end - start
        written = 0
        with open(self._path(name), "rb") as source, open(target, "wb") as handle:
            source.seek(start)
            while remaining is None or remaining > 0:
                chunk = source.read(CHUNK_BYTES if remaining is None else min(CHUNK_BYTES, remaining))
                if not chunk:
                    break
                handle.write(chunk)
                written += len(chunk)
                if remaining is not None:
                    remaining -= len(chunk)
        log.debug("%s/%s: %d bytes from %d copied", self.uri, name, written, start)
        return written

    def upload(self, source: Path, name: str) -> None:
        """Copy ``source`` in under ``name``; the file appears whole or not at all."""
        target = self._path(name)
        temporary = target.with_name(f".{target.name}.upload")
        shutil.copyfile(source, temporary)
        os.replace(temporary, target)
        log.debug("%s/%s: copied from %s", self.uri, name, source)

    def expected_checksum(self, obj: StoredObject) -> str:
        """MD5 of the file's first ``obj.size`` bytes (what the listing saw, even when the
        file has grown since)."""
        return checksums(self._path(obj.name), limit=obj.size)[0]

    def local_checksum(self, obj: StoredObject, local: Path) -> tuple[str, str]:
        """``(md5, md5)`` of ``local``: a folder's checksum is the plain MD5."""
        return checksums(local)
