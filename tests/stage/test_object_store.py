"""stage.object_store: the same contract for an S3 bucket prefix (a real moto server over
HTTP) and a local folder: listing directly under the prefix, ranged downloads, uploads and
the checksums staging verifies with."""

from __future__ import annotations

import hashlib
import http.client
import logging
import re
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable
from urllib.parse import urlparse

import pytest

from stage import object_store
from stage.object_store import (
    FolderStore, ObjectStore, S3Store, StoredObject, UnsafeObjectName, checksums, open_store, safe_name,
)
from s3_server import ACCESS_KEY, REGION, SECRET_KEY

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


class FlakyProxy:
    """A real HTTP proxy in front of the S3 server that breaks requests on demand, the way a
    network or an overloaded endpoint does:

    * ``fail(n, status)``: the next ``n`` requests are answered with ``status`` (503: S3's
      "slow down") without reaching the server;
    * ``cut(n, after)``: the next ``n`` GETs of an object get their headers (with the full
      Content-Length) and only ``after`` bytes of the body, then the connection is closed.

    ``requests`` records ``(method, path, Range header)`` of every request received."""

    def __init__(self, upstream: str) -> None:
        self.upstream = urlparse(upstream)
        self.requests: list[tuple[str, str, str | None]] = []
        self._failures: list[int] = []
        self._cuts: list[int] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def fail(self, n: int, status: int = 503) -> None:
        self._failures += [status] * n

    def cut(self, n: int, after: int) -> None:
        self._cuts += [after] * n

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def forward(self) -> None:
                proxy.requests.append((self.command, self.path, self.headers.get("Range")))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if proxy._failures:
                    self.answer(proxy._failures.pop(0), b"<Error><Code>SlowDown</Code></Error>")
                    return
                upstream = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=30)
                upstream.request(self.command, self.path, body, dict(self.headers))
                response = upstream.getresponse()
                data = response.read()
                upstream.close()
                cut = proxy._cuts.pop(0) if self.command == "GET" and "?" not in self.path and proxy._cuts else None
                self.send_response(response.status)
                for name, value in response.getheaders():
                    if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command == "HEAD":
                    return
                if cut is None:
                    self.wfile.write(data)
                    return
                self.wfile.write(data[:cut])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

            def answer(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = forward

        return Handler


@pytest.fixture
def flaky(s3_server, request, monkeypatch):
    """``(proxy, store, put)``: an S3 store on a new bucket reached through a :class:`FlakyProxy`,
    and ``put(name, data)`` that seeds the bucket directly. Backoff pauses are cut to nothing."""
    monkeypatch.setattr(object_store, "BACKOFF_SECONDS", 0.0)
    bucket = s3_server.create_bucket(request.node.name)
    proxy = FlakyProxy(s3_server.endpoint_url)
    store = open_store(
        f"s3://{bucket}/logs", endpoint_url=proxy.url, access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION
    )
    client = s3_server.client()
    try:
        yield proxy, store, lambda name, data: client.put_object(Bucket=bucket, Key=f"logs/{name}", Body=data)
    finally:
        proxy.close()


def gets(proxy: FlakyProxy) -> list[str | None]:
    """The Range headers of the object GETs the proxy received, in order."""
    return [byte_range for method, path, byte_range in proxy.requests if method == "GET" and "?" not in path]


def test_a_listing_is_retried_through_transient_server_errors(flaky, small_binlog):
    proxy, store, put = flaky
    put("mariadb-bin.000001", small_binlog)
    proxy.fail(2)
    assert [obj.name for obj in store.list()] == ["mariadb-bin.000001"]
    assert sum(method == "GET" and "list-type=2" in path for method, path, _ in proxy.requests) == 3


def test_a_listing_that_keeps_failing_names_the_store(flaky):
    proxy, store, _ = flaky
    proxy.fail(object_store.S3_MAX_ATTEMPTS)
    with pytest.raises(object_store.StoreError, match=f"{store.uri}: listing failed"):
        store.list()


def test_a_download_is_retried_through_transient_server_errors(flaky, sakila, tmp_path):
    proxy, store, put = flaky
    put("mariadb-bin.000001", sakila)
    proxy.fail(2)
    assert store.download("mariadb-bin.000001", tmp_path / "target") == len(sakila)
    assert (tmp_path / "target").read_bytes() == sakila


def test_a_download_that_dies_mid_body_resumes_from_the_bytes_written(flaky, sakila, tmp_path):
    proxy, store, put = flaky
    put("mariadb-bin.000001", sakila)
    proxy.cut(2, after=300_000)
    assert store.download("mariadb-bin.000001", tmp_path / "target", start=1000) == len(sakila) - 1000
    assert (tmp_path / "target").read_bytes() == sakila[1000:]
    assert gets(proxy) == [f"bytes={1000 + written}-" for written in (0, 300_000, 600_000)]


def test_a_download_that_keeps_dying_names_the_object_and_what_was_written(flaky, sakila, tmp_path):
    proxy, store, put = flaky
    put("mariadb-bin.000001", sakila)
    proxy.cut(object_store.S3_MAX_ATTEMPTS, after=1000)
    message = f"{store.uri}/mariadb-bin.000001: download failed after {object_store.S3_MAX_ATTEMPTS} attempts, " \
              f"{object_store.S3_MAX_ATTEMPTS * 1000} bytes"
    with pytest.raises(object_store.StoreError, match=re.escape(message)):
        store.download("mariadb-bin.000001", tmp_path / "target", end=len(sakila))
    assert len(gets(proxy)) == object_store.S3_MAX_ATTEMPTS


HOSTILE_NAMES = [
    ".", "..", "/etc/passwd", "../mariadb-bin.000001", "..\\..\\mariadb-bin.000001", "C:\\mariadb-bin.000001",
    "mariadb-bin.000001\x00.txt", "mariadb-bin\n.000001", "mariadb-bin\x1b[2J.000001", "mariadb-bin\x7f.000001",
    "m" * 250 + ".000001",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_names_are_refused_for_download_and_upload(backend, name, tmp_path):
    source = tmp_path / "source"
    source.write_bytes(b"\xfebin")
    with pytest.raises(UnsafeObjectName, match="not an object name directly under the store's prefix"):
        backend.store.download(name, tmp_path / "target")
    with pytest.raises(UnsafeObjectName):
        backend.store.upload(source, name)
    assert not (tmp_path / "target").exists()
    assert backend.store.list() == []  # nothing was written anywhere, in the store or around it
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) in (["source"], ["logs", "source"])


@pytest.mark.parametrize("name", ["mariadb-bin\\.000002", "mariadb-bin\t.000002", "mariadb-bin\x01.000002"])
def test_hostile_names_in_a_listing_are_left_out_and_reported(backend, name, small_binlog, caplog):
    backend.put_key("logs/mariadb-bin.000001", small_binlog)
    backend.put_key(f"logs/{name}", small_binlog)
    with caplog.at_level(logging.WARNING, logger="stage.object_store"):
        listed = [obj.name for obj in backend.store.list()]
    assert listed == ["mariadb-bin.000001"]
    assert repr(name) in caplog.text and "object left out" in caplog.text


def test_plain_names_are_safe():
    for name in ("mariadb-bin.000001", "mysql-bin.index", "..hidden.000001", "binlog é.000001", "m" * 255):
        assert safe_name(name) == name
