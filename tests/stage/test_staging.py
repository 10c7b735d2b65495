"""stage.staging: which binlog objects are pending after a checkpoint, and staging them
from a real moto server (over HTTP) or a local folder into a staging folder, verified,
idempotent, never overwriting a staged file that differs."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mariadb import REPO_ROOT
from stage.object_store import FolderStore, ObjectStore, StoredObject
from stage.staging import (
    MANIFEST,
    StagedFile,
    StagingConflict,
    StagingError,
    VerificationError,
    pending_objects,
    prune,
    stage,
    stage_named,
)

MIB = 1 << 20


@pytest.fixture(scope="module")
def binlogs(fixtures_dir) -> dict[str, bytes]:
    """Real binlog files of different sizes."""
    folder = fixtures_dir / "osheroff__mysql-binlog-connector-java"
    return {name: (folder / name).read_bytes() for name in ("mysql-bin.checksum-crc32", "mysql-bin.checksum-none", "mysql-bin.sakila")}


@pytest.fixture
def bucket_store(s3_server, request):
    """An empty S3 store on the prefix ``binlogs`` of a new bucket."""
    bucket = s3_server.create_bucket(request.node.name)
    return s3_server.store(f"s3://{bucket}/binlogs")


@pytest.fixture
def staging_dir(tmp_path) -> Path:
    return tmp_path / "staging"


def put(store: ObjectStore, name: str, data: bytes, tmp_path: Path) -> None:
    source = tmp_path / "upload"
    source.write_bytes(data)
    store.upload(source, name)


class RequestLog:
    """The S3 requests an S3 store's client sends: ``(operation, Range header)``."""

    def __init__(self, store) -> None:
        self.requests: list[tuple[str, str | None]] = []
        store.client.meta.events.register("before-call.s3", self._record)

    def _record(self, model, params, **_) -> None:
        self.requests.append((model.name, params.get("headers", {}).get("Range")))

    def operations(self) -> list[str]:
        return [operation for operation, _ in self.requests]


class WrongETags:
    """A real store whose listing reports an ETag the bytes do not have: what a transfer
    that corrupted the bytes looks like to the verification."""

    def __init__(self, store: ObjectStore, etag: str) -> None:
        self._store = store
        self.uri = store.uri
        self.etag = etag

    def __getattr__(self, name):
        return getattr(self._store, name)

    def list(self) -> list[StoredObject]:
        return [replace(obj, etag=self.etag) for obj in self._store.list()]


class BadFirstTail:
    """A real store whose first ranged download (one not starting at 0) arrives with a byte flipped."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store
        self.uri = store.uri
        self.corrupted = 0

    def __getattr__(self, name):
        return getattr(self._store, name)

    def download(self, name: str, target: Path, *, start: int = 0, end: int | None = None) -> int:
        written = self._store.download(name, target, start=start, end=end)
        if start > 0 and not self.corrupted:
            data = bytearray(target.read_bytes())
            data[0] ^= 0xFF
            target.write_bytes(bytes(data))
            self.corrupted += 1
        return written


def folder_listing(folder: Path) -> list[str]:
    """Every file in the folder, hidden temporary files included."""
    return sorted(path.name for path in folder.iterdir())


def file_state(path: Path) -> tuple[bytes, int, int]:
    stat = path.stat()
    return path.read_bytes(), stat.st_ino, stat.st_mtime_ns


# -- pending_objects ---------------------------------------------------------------


def objects(*names_and_sizes: tuple[str, int]) -> list[StoredObject]:
    return [StoredObject(name, size, None) for name, size in names_and_sizes]


LISTING = objects(
    ("mariadb-bin.000010", 500),
    ("mariadb-bin.index", 60),
    ("mariadb-bin.000009", 900),
    ("mariadb-bin.000011", 300),
    ("mariadb-bin.000002", 700),
    ("notes.txt", 5),
)


def names(listing: list[StoredObject]) -> list[str]:
    return [obj.name for obj in listing]


def test_without_a_checkpoint_every_binlog_is_pending_in_log_order():
    assert names(pending_objects(LISTING, None)) == [
        "mariadb-bin.000002",
        "mariadb-bin.000009",
        "mariadb-bin.000010",
        "mariadb-bin.000011",
    ]


def test_files_after_the_checkpoint_file_are_pending():
    position = {"file": "mariadb-bin.000009", "position": 900}
    assert names(pending_objects(LISTING, position)) == ["mariadb-bin.000010", "mariadb-bin.000011"]


def test_the_checkpoint_file_is_pending_again_when_it_has_grown():
    position = {"file": "mariadb-bin.000010", "position": 320}
    assert names(pending_objects(LISTING, position)) == ["mariadb-bin.000010", "mariadb-bin.000011"]


def test_nothing_is_pending_after_the_end_of_the_last_file():
    assert pending_objects(LISTING, {"file": "mariadb-bin.000011", "position": 300}) == []


def test_without_the_checkpoint_file_every_binlog_is_staged_for_the_run_to_judge(caplog):
    """A stream pointed at another server's binlogs finds its place by GTID in the staged files
    (or the run refuses): staging takes them all, and says why."""
    pending = pending_objects(LISTING, {"file": "mariadb-bin.000005", "position": 4})
    assert names(pending) == names(pending_objects(LISTING, None))
    assert "mariadb-bin.000005 is not in the store" in caplog.text


def test_compressed_copies_are_staged_in_their_place_in_the_log():
    listing = objects(("b.000003.gz", 10), ("b.000002", 50), ("b.000004.zst", 9), ("b.000004.bak", 9), ("b.index", 1))
    assert names(pending_objects(listing, {"file": "b.000002", "position": 50})) == ["b.000003.gz", "b.000004.zst"]


def test_log_order_sorts_by_base_then_number():
    listing = objects(("relay.10", 1), ("binlog.000100", 1), ("binlog.000099", 1), ("relay.9", 1), ("binlog.1000", 1))
    assert names(pending_objects(listing, None)) == ["binlog.000099", "binlog.000100", "binlog.1000", "relay.9", "relay.10"]


binlog_names = st.builds(
    lambda base, seq, width: f"{base}.{seq:0{width}d}",
    st.sampled_from(["mariadb-bin", "mysql-bin", "relay.bin"]),
    st.integers(0, 2_000_000),
    st.integers(1, 8),
)
OTHER_NAMES = ("mariadb-bin.index", "notes.txt", "mysql-bin.", "README", "x.12a", ".12")
other_names = st.sampled_from(OTHER_NAMES)
listings = st.lists(
    st.builds(StoredObject, st.one_of(binlog_names, other_names), st.integers(0, 10**9), st.none()),
    unique_by=lambda obj: obj.name,
)


@given(listing=listings, data=st.data())
def test_pending_objects_are_the_binlogs_after_the_checkpoint_in_log_order(listing, data):
    def base_then_number(obj: StoredObject) -> tuple[str, int, str]:
        base, seq = obj.name.rsplit(".", 1)
        return base, int(seq), obj.name

    binlogs = sorted((obj for obj in listing if obj.name not in OTHER_NAMES), key=base_then_number)
    assert pending_objects(listing, None) == binlogs
    if not binlogs:
        return
    checkpoint = data.draw(st.sampled_from(binlogs))
    committed = data.draw(st.integers(0, checkpoint.size + 10))

    pending = pending_objects(listing, {"file": checkpoint.name, "position": committed})

    after = binlogs[binlogs.index(checkpoint) + 1 :]
    assert pending == ([checkpoint] if checkpoint.size > committed else []) + after


# -- stage ---------------------------------------------------------------------------


def test_the_first_stage_downloads_every_binlog_in_log_order(bucket_store, binlogs, staging_dir, tmp_path):
    put(bucket_store, "mysql-bin.000010", binlogs["mysql-bin.checksum-crc32"], tmp_path)
    put(bucket_store, "mysql-bin.000009", binlogs["mysql-bin.sakila"], tmp_path)
    put(bucket_store, "mysql-bin.index", b"mysql-bin.000009\nmysql-bin.000010\n", tmp_path)
    bucket_store.client.put_object(Bucket=bucket_store.bucket, Key="binlogs/old/mysql-bin.000001", Body=b"x")

    staged = stage(bucket_store, staging_dir, None)

    sakila, crc32 = binlogs["mysql-bin.sakila"], binlogs["mysql-bin.checksum-crc32"]
    assert staged == [
        StagedFile("mysql-bin.000009", str(staging_dir / "mysql-bin.000009"), len(sakila),
                   hashlib.md5(sakila).hexdigest(), hashlib.md5(sakila).hexdigest()),
        StagedFile("mysql-bin.000010", str(staging_dir / "mysql-bin.000010"), len(crc32),
                   hashlib.md5(crc32).hexdigest(), hashlib.md5(crc32).hexdigest()),
    ]
    assert (staging_dir / "mysql-bin.000009").read_bytes() == sakila
    assert (staging_dir / "mysql-bin.000010").read_bytes() == crc32
    assert folder_listing(staging_dir) == [MANIFEST, "mysql-bin.000009", "mysql-bin.000010"]
    manifest = json.loads((staging_dir / MANIFEST).read_text())
    assert manifest["mysql-bin.000010"] == {"size": len(crc32), "etag": staged[1].etag, "md5": staged[1].md5}


def test_a_second_stage_downloads_nothing(bucket_store, binlogs, staging_dir, tmp_path):
    put(bucket_store, "mysql-bin.000001", binlogs["mysql-bin.sakila"], tmp_path)
    put(bucket_store, "mysql-bin.000002", binlogs["mysql-bin.checksum-none"], tmp_path)
    first = stage(bucket_store, staging_dir, None)
    before = {name: file_state(staging_dir / name) for name in folder_listing(staging_dir)}
    requests = RequestLog(bucket_store)

    second = stage(bucket_store, staging_dir, None)

    assert second == first
    assert requests.operations() == ["ListObjectsV2"]
    assert {name: file_state(staging_dir / name) for name in folder_listing(staging_dir)} == before


def test_a_grown_object_gets_only_its_new_tail(bucket_store, binlogs, staging_dir, tmp_path):
    sakila = binlogs["mysql-bin.sakila"]
    put(bucket_store, "mysql-bin.000001", sakila[:600_000], tmp_path)
    stage(bucket_store, staging_dir, None)
    put(bucket_store, "mysql-bin.000001", sakila, tmp_path)  # the server wrote on
    requests = RequestLog(bucket_store)

    (staged,) = stage(bucket_store, staging_dir, {"file": "mysql-bin.000001", "position": 600_000})

    assert requests.requests == [("ListObjectsV2", None), ("GetObject", f"bytes=600000-{len(sakila) - 1}")]
    assert (staging_dir / "mysql-bin.000001").read_bytes() == sakila
    assert (staged.size, staged.md5) == (len(sakila), hashlib.md5(sakila).hexdigest())
    assert folder_listing(staging_dir) == [MANIFEST, "mysql-bin.000001"]


def test_a_bad_tail_transfer_is_told_from_a_rewritten_object(bucket_store, binlogs, staging_dir, tmp_path):
    sakila = binlogs["mysql-bin.sakila"]
    put(bucket_store, "mysql-bin.000001", sakila[:600_000], tmp_path)
    stage(bucket_store, staging_dir, None)
    put(bucket_store, "mysql-bin.000001", sakila, tmp_path)
    flaky = BadFirstTail(bucket_store)

    (staged,) = stage(flaky, staging_dir, None)

    assert flaky.corrupted == 1
    assert (staging_dir / "mysql-bin.000001").read_bytes() == sakila
    assert staged.md5 == hashlib.md5(sakila).hexdigest()


@pytest.mark.parametrize(
    "rewrite",
    [
        pytest.param(lambda data: data[:-1] + bytes([data[-1] ^ 0xFF]), id="same-size"),
        pytest.param(lambda data: data[:100] + bytes([data[100] ^ 0xFF]) + data[101:] + b"more", id="longer-different-start"),
        pytest.param(lambda data: data[:-10], id="shorter"),
    ],
)
def test_a_rewritten_object_is_a_conflict_and_the_staged_file_is_kept(
    bucket_store, binlogs, staging_dir, tmp_path, rewrite
):
    original = binlogs["mysql-bin.checksum-crc32"]
    put(bucket_store, "mysql-bin.000003", original, tmp_path)
    stage(bucket_store, staging_dir, None)
    kept = file_state(staging_dir / "mysql-bin.000003")
    put(bucket_store, "mysql-bin.000003", rewrite(original), tmp_path)

    with pytest.raises(StagingConflict, match="mysql-bin.000003"):
        stage(bucket_store, staging_dir, None)

    assert file_state(staging_dir / "mysql-bin.000003") == kept
    assert folder_listing(staging_dir) == [MANIFEST, "mysql-bin.000003"]


def test_a_download_that_does_not_verify_leaves_no_staged_file(bucket_store, binlogs, staging_dir, tmp_path):
    data = binlogs["mysql-bin.checksum-crc32"]
    put(bucket_store, "mysql-bin.000001", data, tmp_path)
    wrong = hashlib.md5(b"other bytes").hexdigest()

    with pytest.raises(VerificationError) as raised:
        stage(WrongETags(bucket_store, wrong), staging_dir, None)

    message = str(raised.value)
    assert "mysql-bin.000001" in message and wrong in message and hashlib.md5(data).hexdigest() in message
    assert folder_listing(staging_dir) == []


def test_a_multipart_object_is_verified_against_its_etag(s3_server, bucket_store, binlogs, staging_dir, tmp_path):
    data = (binlogs["mysql-bin.sakila"] * 9)[: 12 * MIB]
    s3_server.upload_in_parts(bucket_store.bucket, "binlogs/mysql-bin.000001", data, part_size=5 * MIB)

    (staged,) = stage(bucket_store, staging_dir, None)

    assert staged.etag.endswith("-3")
    assert staged.md5 == hashlib.md5(data).hexdigest()
    assert (staging_dir / "mysql-bin.000001").read_bytes() == data
    requests = RequestLog(bucket_store)
    assert stage(bucket_store, staging_dir, None) == [staged]
    assert requests.operations() == ["ListObjectsV2"]  # the manifest spares the part size and the hashing
    wrong = hashlib.md5(b"other bytes").hexdigest() + "-3"
    with pytest.raises(VerificationError, match=f"checksum {staged.etag}, the object {wrong}"):
        stage(WrongETags(bucket_store, wrong), tmp_path / "elsewhere", None)
    assert folder_listing(tmp_path / "elsewhere") == []


def test_without_the_manifest_staged_files_are_hashed_again_not_downloaded(bucket_store, binlogs, staging_dir, tmp_path):
    data = binlogs["mysql-bin.checksum-none"]
    put(bucket_store, "mysql-bin.000001", data, tmp_path)
    put(bucket_store, "mysql-bin.000002", data[:1000], tmp_path)
    stage(bucket_store, staging_dir, None)
    manifest = (staging_dir / MANIFEST).read_text()
    (staging_dir / MANIFEST).unlink()
    staged_copy = staging_dir / "mysql-bin.000002"
    staged_copy.write_bytes(bytes(1000))  # same size, other bytes: only hashing can tell
    requests = RequestLog(bucket_store)

    with pytest.raises(StagingConflict, match="mysql-bin.000002"):
        stage(bucket_store, staging_dir, None)

    assert requests.operations() == ["ListObjectsV2"]
    assert staged_copy.read_bytes() == bytes(1000)
    assert (staging_dir / MANIFEST).read_text() == json.dumps(
        {"mysql-bin.000001": json.loads(manifest)["mysql-bin.000001"]}, indent=1, sort_keys=True
    )


def test_a_staged_file_cut_short_is_completed(bucket_store, binlogs, staging_dir, tmp_path):
    data = binlogs["mysql-bin.sakila"]
    put(bucket_store, "mysql-bin.000001", data, tmp_path)
    stage(bucket_store, staging_dir, None)
    with open(staging_dir / "mysql-bin.000001", "r+b") as handle:
        handle.truncate(1000)

    (staged,) = stage(bucket_store, staging_dir, None)

    assert (staging_dir / "mysql-bin.000001").read_bytes() == data
    assert staged.md5 == hashlib.md5(data).hexdigest()


def test_staging_from_a_folder_follows_a_binlog_being_written(binlogs, staging_dir, tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    data = binlogs["mysql-bin.checksum-crc32"]
    (source / "mysql-bin.000001").write_bytes(data[:10_000])
    (source / "mysql-bin.index").write_text("./mysql-bin.000001\n")
    store = FolderStore(source)

    (first,) = stage(store, staging_dir, None)
    with open(source / "mysql-bin.000001", "ab") as handle:
        handle.write(data[10_000:])
    (second,) = stage(store, staging_dir, {"file": "mysql-bin.000001", "position": 9_000})

    assert (first.size, first.etag, first.md5) == (10_000, None, hashlib.md5(data[:10_000]).hexdigest())
    assert (second.size, second.md5) == (len(data), hashlib.md5(data).hexdigest())
    assert (staging_dir / "mysql-bin.000001").read_bytes() == data
    assert stage(store, staging_dir, None) == [second]

    (source / "mysql-bin.000001").write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    with pytest.raises(StagingConflict, match="mysql-bin.000001"):
        stage(store, staging_dir, None)
    assert (staging_dir / "mysql-bin.000001").read_bytes() == data


def test_a_backfill_stages_the_files_it_names_and_no_other(bucket_store, binlogs, staging_dir, tmp_path):
    put(bucket_store, "mysql-bin.000009", binlogs["mysql-bin.sakila"], tmp_path)
    put(bucket_store, "mysql-bin.000010", binlogs["mysql-bin.checksum-crc32"], tmp_path)
    staged = stage_named(bucket_store, staging_dir, ["mysql-bin.000010"])
    assert [f.name for f in staged] == ["mysql-bin.000010"]
    assert folder_listing(staging_dir) == [MANIFEST, "mysql-bin.000010"]
    assert (staging_dir / "mysql-bin.000010").read_bytes() == binlogs["mysql-bin.checksum-crc32"]
    with pytest.raises(StagingError, match="no longer holds mysql-bin.000003"):
        stage_named(bucket_store, staging_dir, ["mysql-bin.000003"])


def test_hostile_keys_in_the_bucket_are_never_staged(s3_server, bucket_store, binlogs, staging_dir, tmp_path):
    put(bucket_store, "mysql-bin.000001", binlogs["mysql-bin.checksum-crc32"], tmp_path)
    client = s3_server.client()
    for key in ("binlogs/..", "binlogs/..\\mysql-bin.000002", "binlogs/mysql-bin.000003\x01", "binlogs/mysql-bin\t.000004"):
        client.put_object(Bucket=bucket_store.bucket, Key=key, Body=binlogs["mysql-bin.checksum-none"])
    staged = stage(bucket_store, staging_dir, None)
    assert [f.name for f in staged] == ["mysql-bin.000001"]
    assert folder_listing(staging_dir) == [MANIFEST, "mysql-bin.000001"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["staging", "upload"]  # nothing beside the folder


STAGE_WITH_A_SIZE_LIMIT = """
import resource, signal, sys
from pathlib import Path
from stage.object_store import open_store
from stage.staging import StagingFull, stage

uri, endpoint, staging, limit = sys.argv[1:]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), int(limit)))
store = open_store(uri, endpoint_url=endpoint, access_key="testing", secret_key="testing", region="us-east-1")
try:
    stage(store, Path(staging), None)
except StagingFull as exc:
    print(exc)
    sys.exit(3)
"""


def test_a_staging_folder_without_room_fails_clearly_and_keeps_what_was_staged(
    s3_server, bucket_store, binlogs, staging_dir, tmp_path
):
    """A real limit on file size (the kernel refuses the write past it, as it does on a full disk):
    the file that does not fit fails the run naming it, leaves nothing behind, and the files staged
    before it stay staged and recorded; with room again, staging goes on from there."""
    small, large = binlogs["mysql-bin.checksum-crc32"], binlogs["mysql-bin.sakila"]
    put(bucket_store, "mysql-bin.000001", small, tmp_path)
    put(bucket_store, "mysql-bin.000002", large, tmp_path)
    limit = (len(small) + len(large)) // 2
    assert len(small) < limit < len(large)

    child = subprocess.run(
        [sys.executable, "-c", STAGE_WITH_A_SIZE_LIMIT, bucket_store.uri, s3_server.endpoint_url, str(staging_dir), str(limit)],
        capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
    )

    assert child.returncode == 3, child.stderr[-2000:]
    assert f"no room to stage {bucket_store.uri}/mysql-bin.000002 ({len(large)} bytes" in child.stdout
    assert folder_listing(staging_dir) == [MANIFEST, "mysql-bin.000001"]  # no partial file left
    assert list(json.loads((staging_dir / MANIFEST).read_text())) == ["mysql-bin.000001"]

    requests = RequestLog(bucket_store)
    staged = stage(bucket_store, staging_dir, None)

    assert [(each.name, Path(each.path).read_bytes()) for each in staged] == [
        ("mysql-bin.000001", small), ("mysql-bin.000002", large)]
    assert requests.operations().count("GetObject") == 1  # only the file that did not fit


def test_a_file_read_before_that_was_rewritten_in_the_store_is_refused_unless_taken_as_a_new_log(
    bucket_store, binlogs, staging_dir, tmp_path
):
    """After RESET MASTER an archiver uploads new files under the old names: an object staged
    before the checkpoint's file that changed is named, and nothing is staged, until the user
    takes the store's files as a new log; then it is staged again, for the run to judge."""
    first, second = binlogs["mysql-bin.checksum-crc32"], binlogs["mysql-bin.checksum-none"]
    put(bucket_store, "mysql-bin.000001", first, tmp_path)
    put(bucket_store, "mysql-bin.000002", second, tmp_path)
    stage(bucket_store, staging_dir, None)
    checkpoint = {"file": "mysql-bin.000002", "position": 0}
    put(bucket_store, "mysql-bin.000001", first[:-1] + bytes([first[-1] ^ 0xFF]), tmp_path)
    put(bucket_store, "mysql-bin.000003", second, tmp_path)
    before = folder_listing(staging_dir)
    with pytest.raises(StagingConflict, match=r"mysql-bin.000001 changed in the store .* accept_new_series"):
        stage(bucket_store, staging_dir, checkpoint)
    assert folder_listing(staging_dir) == before and (staging_dir / "mysql-bin.000001").read_bytes() == first
    staged = stage(bucket_store, staging_dir, checkpoint, replace_rewritten=True)
    assert [f.name for f in staged] == ["mysql-bin.000001", "mysql-bin.000002", "mysql-bin.000003"]
    assert (staging_dir / "mysql-bin.000001").read_bytes() == first[:-1] + bytes([first[-1] ^ 0xFF])
    assert stage(bucket_store, staging_dir, checkpoint) == staged[1:]  # the new bytes are now the staged ones


def test_the_checkpoint_file_growing_is_no_rewrite(bucket_store, binlogs, staging_dir, tmp_path):
    data = binlogs["mysql-bin.checksum-crc32"]
    put(bucket_store, "mysql-bin.000001", data[:1000], tmp_path)
    stage(bucket_store, staging_dir, None)
    put(bucket_store, "mysql-bin.000001", data, tmp_path)
    assert [f.name for f in stage(bucket_store, staging_dir, {"file": "mysql-bin.000001", "position": 0})] == [
        "mysql-bin.000001"]


def test_a_pruned_file_is_not_staged_again_and_its_record_still_tells_a_rewrite(binlogs, staging_dir, tmp_path):
    """Maintenance prunes the files before the checkpoint's (warehouse.maintenance.prune_staged):
    staging goes on from the checkpoint's file without them, still refuses an archive rewritten
    under their names, and a backfill stages one again."""
    first, second = binlogs["mysql-bin.checksum-crc32"], binlogs["mysql-bin.checksum-none"]
    source = tmp_path / "source"
    source.mkdir()
    (source / "mysql-bin.000001").write_bytes(first)
    (source / "mysql-bin.000002").write_bytes(second)
    store = FolderStore(source)
    stage(store, staging_dir, None)
    prune(staging_dir, ["mysql-bin.000001"])
    assert sorted(p.name for p in staging_dir.iterdir()) == [MANIFEST, "mysql-bin.000002"]
    assert json.loads((staging_dir / MANIFEST).read_text())["mysql-bin.000001"] == {
        "size": len(first), "etag": None, "md5": hashlib.md5(first).hexdigest(), "pruned": True}
    checkpoint = {"file": "mysql-bin.000002", "position": 0}
    assert [f.name for f in stage(store, staging_dir, checkpoint)] == ["mysql-bin.000002"]
    assert not (staging_dir / "mysql-bin.000001").exists()
    (source / "mysql-bin.000001").write_bytes(first[:-1])
    with pytest.raises(StagingConflict, match="mysql-bin.000001 changed in the store"):
        stage(store, staging_dir, checkpoint)
    (source / "mysql-bin.000001").write_bytes(first)
    assert [f.name for f in stage_named(store, staging_dir, ["mysql-bin.000001"])] == ["mysql-bin.000001"]
    assert (staging_dir / "mysql-bin.000001").read_bytes() == first
    assert "pruned" not in json.loads((staging_dir / MANIFEST).read_text())["mysql-bin.000001"]
