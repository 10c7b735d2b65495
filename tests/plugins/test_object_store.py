"""plugins.object_store: the same contract for an S3 bucket prefix (a real moto server over
HTTP) and a local folder: listing directly under the prefix, ranged downloads, uploads and
the checksums staging verifies with."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from plugins.object_store import FolderStore, ObjectStore, S3Store, StoredObject, checksums, open_store

MIB = 1 << 20


@pytest.fixture(scope="module")
def sakila(fixtures_dir) -> bytes:
    """A real 1.4 MB binlog: larger than one download chunk."""
    return (fixtures_dir / "osheroff__mysql-binlog-connector-java" / "mysql-bin.sakila").read_bytes()


@pytest.fixture(scope="module")
def small_binlog(fixtures_dir) -> bytes:
    return (fixtures_dir / "osheroff__mysql-binlog-connector-java" / "mysql-bin.checksum-crc32").read_bytes()


@dataclass
class Backend:
    """A store on the prefix ``logs`` plus a way to put bytes anywhere around it
    (deeper "folders", sibling prefixes), which the store itself cannot do."""

    store: ObjectStore
    put_key: Callable[[str, bytes], None]


@pytest.fixture(params=["s3", "folder"])
def backend(request, tmp_path) -> Backend:
    if request.param == "s3":
        server = request.getfixturevalue("s3_server")
        bucket = server.create_bucket(request.node.name)
        client = server.client()
        return Backend(
            server.store(f"s3://{bucket}/logs"),
            lambda key, data: client.put_object(Bucket=bucket, Key=key, Body=data),
        )

    def put_file(key: str, data: bytes) -> None:
        path = tmp_path / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    (tmp_path / "logs").mkdir()
    return Backend(open_store(str(tmp_path / "logs")), put_file)


def upload_bytes(store: ObjectStore, name: str, data: bytes, tmp_path: Path) -> None:
    source = tmp_path / f"upload-{name}"
    source.write_bytes(data)
    store.upload(source, name)


def test_list_gives_objects_directly_under_the_prefix_sorted(backend, small_binlog, sakila, tmp_path):
    upload_bytes(backend.store, "mariadb-bin.000010", sakila, tmp_path)
    upload_bytes(backend.store, "mariadb-bin.000002", small_binlog, tmp_path)
    upload_bytes(backend.store, "mariadb-bin.index", b"./mariadb-bin.000002\n", tmp_path)
    backend.put_key("logs/archive/mariadb-bin.000001", small_binlog)  # a deeper "folder"
    backend.put_key("logs2/mariadb-bin.000003", small_binlog)  # a sibling prefix sharing the start
    backend.put_key("mariadb-bin.000004", small_binlog)  # above the prefix

    listed = backend.store.list()

    assert [(obj.name, obj.size) for obj in listed] == [
        ("mariadb-bin.000002", len(small_binlog)),
        ("mariadb-bin.000010", len(sakila)),
        ("mariadb-bin.index", 21),
    ]
    if isinstance(backend.store, S3Store):  # single-part uploads: the ETag is the MD5
        assert listed[0].etag == hashlib.md5(small_binlog).hexdigest()
        assert listed[1].etag == hashlib.md5(sakila).hexdigest()
    else:
        assert {obj.etag for obj in listed} == {None}


def test_download_writes_the_requested_byte_range(backend, sakila, tmp_path):
    upload_bytes(backend.store, "mariadb-bin.000001", sakila, tmp_path)
    target = tmp_path / "target"
    cases = [
        ({}, sakila),
        ({"start": 1_000_000, "end": 1_200_000}, sakila[1_000_000:1_200_000]),  # across a chunk boundary
        ({"start": len(sakila) - 10}, sakila[-10:]),
        ({"end": 4}, sakila[:4]),
        ({"start": 500, "end": 500}, b""),
    ]
    for ranges, expected in cases:
        target.write_bytes(b"old content longer than some of the ranges")
        assert backend.store.download("mariadb-bin.000001", target, **ranges) == len(expected), ranges
        assert target.read_bytes() == expected, ranges


def test_download_of_a_missing_object_is_file_not_found(backend, tmp_path):
    with pytest.raises(FileNotFoundError, match="mariadb-bin.000404"):
        backend.store.download("mariadb-bin.000404", tmp_path / "target")
    assert not (tmp_path / "target").exists()


@pytest.mark.parametrize("name", ["", "..", "archive/mariadb-bin.000001", "../logs2/mariadb-bin.000001"])
def test_names_outside_the_prefix_are_refused(backend, name, tmp_path):
    with pytest.raises(ValueError, match="directly under"):
        backend.store.download(name, tmp_path / "target")


@pytest.mark.parametrize("start, end", [(-1, None), (10, 5)])
def test_invalid_ranges_are_refused(backend, small_binlog, start, end, tmp_path):
    upload_bytes(backend.store, "mariadb-bin.000001", small_binlog, tmp_path)
    with pytest.raises(ValueError, match="invalid byte range"):
        backend.store.download("mariadb-bin.000001", tmp_path / "target", start=start, end=end)


def test_a_downloaded_copy_has_the_checksum_the_store_expects(backend, sakila, tmp_path):
    upload_bytes(backend.store, "mariadb-bin.000001", sakila, tmp_path)
    (obj,) = backend.store.list()
    copy = tmp_path / "copy"
    backend.store.download(obj.name, copy)

    md5, checksum = backend.store.local_checksum(obj, copy)

    assert md5 == hashlib.md5(sakila).hexdigest()
    assert checksum == backend.store.expected_checksum(obj)
    copy.write_bytes(sakila[:-1] + bytes([sakila[-1] ^ 0xFF]))  # one byte changed
    assert backend.store.local_checksum(obj, copy)[1] != backend.store.expected_checksum(obj)


def test_multipart_etag_is_computed_with_the_objects_part_size(s3_server, sakila, tmp_path):
    bucket = s3_server.create_bucket("multipart")
    data = (sakila * 9)[: 12 * MIB]
    s3_server.upload_in_parts(bucket, "logs/mariadb-bin.000001", data, part_size=5 * MIB)
    store = s3_server.store(f"s3://{bucket}/logs")
    (obj,) = store.list()
    copy = tmp_path / "copy"
    copy.write_bytes(data)

    assert obj.etag.endswith("-3")
    assert store.part_size(obj.name) == 5 * MIB
    assert store.local_checksum(obj, copy) == (hashlib.md5(data).hexdigest(), obj.etag)
    assert checksums(copy, 8 * MIB)[1] != obj.etag  # the part size matters


def test_checksums_of_a_single_part_and_of_a_limited_prefix(sakila, tmp_path):
    path = tmp_path / "binlog"
    path.write_bytes(sakila)
    md5 = hashlib.md5(sakila).hexdigest()
    assert checksums(path) == (md5, md5)
    assert checksums(path, limit=1000)[0] == hashlib.md5(sakila[:1000]).hexdigest()
    one_part = hashlib.md5(hashlib.md5(sakila).digest()).hexdigest() + "-1"
    assert checksums(path, 2 * MIB) == (md5, one_part)


def test_a_folder_store_checks_a_grown_file_against_the_listed_size(sakila, tmp_path):
    (tmp_path / "mariadb-bin.000001").write_bytes(sakila[:5000])
    store = FolderStore(tmp_path)
    (obj,) = store.list()
    with open(tmp_path / "mariadb-bin.000001", "ab") as handle:  # the server writes on
        handle.write(sakila[5000:6000])

    assert store.expected_checksum(obj) == hashlib.md5(sakila[:5000]).hexdigest()


def test_s3_uris_name_the_bucket_and_prefix(s3_server):
    bucket = s3_server.create_bucket("uris")
    client = s3_server.client()
    client.put_object(Bucket=bucket, Key="top.000001", Body=b"top")
    client.put_object(Bucket=bucket, Key="a/b/deep.000001", Body=b"deep")

    assert [o.name for o in s3_server.store(f"s3://{bucket}").list()] == ["top.000001"]
    for uri in (f"s3://{bucket}/a/b", f"s3://{bucket}/a/b/"):
        store = s3_server.store(uri)
        assert store.uri == f"s3://{bucket}/a/b"
        assert store.list() == [StoredObject("deep.000001", 4, hashlib.md5(b"deep").hexdigest())]


def test_folder_uris_and_plain_paths_open_the_same_folder(tmp_path):
    for uri in (tmp_path.as_uri(), str(tmp_path), f"file://localhost{tmp_path}"):
        store = open_store(uri)
        assert isinstance(store, FolderStore)
        assert store.folder == tmp_path.resolve()
        assert store.uri == tmp_path.resolve().as_uri()


@pytest.mark.parametrize("uri", ["gs://bucket/logs", "s3://", "http://example.com/logs", "file://otherhost/logs", ""])
def test_other_uris_are_refused_by_name(uri):
    with pytest.raises(ValueError) as raised:
        open_store(uri)
    assert repr(uri) in str(raised.value)
