"""Test helper for a private S3-compatible server (moto in server mode).

``S3Server`` drives ``infra/s3_server.sh`` to run a throw-away server on a
free loopback port, its pid and log in one directory. Buckets live in the
server's memory and are gone when it stops.
"""

from __future__ import annotations

import importlib.util
import io
import itertools
import os
import re
import sys
from pathlib import Path

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

from mariadb import free_port, run_infra
from stage.object_store import open_store

REPO_ROOT = Path(__file__).resolve().parents[1]
INFRA_SCRIPT = REPO_ROOT / "infra" / "s3_server.sh"

# Dummy credentials: the server accepts any, boto3 insists on having some.
ACCESS_KEY = "testing"
SECRET_KEY = "testing"
REGION = "us-east-1"


class S3ServerError(RuntimeError):
    """The server could not be started or stopped."""


def moto_server_missing() -> bool:
    """True when this Python cannot run ``moto.server`` (moto installed without its server extra)."""
    return importlib.util.find_spec("moto") is None or importlib.util.find_spec("flask") is None


class S3Server:
    """A moto server managed by ``infra/s3_server.sh``, run with this test session's Python."""

    def __init__(self, directory: Path, port: int | None = None):
        self.directory = Path(directory)
        self.port = port or free_port()
        self.endpoint_url = f"http://127.0.0.1:{self.port}"
        self._env = dict(os.environ, PYTHON=sys.executable)
        self._bucket_numbers = itertools.count(1)

    def _infra(self, *args: str, timeout: float = 60) -> str:
        return run_infra(INFRA_SCRIPT, args, self._env, timeout, S3ServerError)

    def start(self) -> "S3Server":
        out = self._infra("start", str(self.directory), str(self.port))
        info = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        self.endpoint_url = info["endpoint"]
        return self

    def stop(self) -> None:
        self._infra("stop", str(self.directory))

    def client(self):
        """A boto3 S3 client for this server (dummy credentials, path-style addressing)."""
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
            config=Config(s3={"addressing_style": "path"}),
        )

    def create_bucket(self, label: str = "test") -> str:
        """A new empty bucket with a name no other test of the session uses; returns the name."""
        readable = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:40]
        name = f"{readable or 'bucket'}-{next(self._bucket_numbers)}"
        self.client().create_bucket(Bucket=name)
        return name

    def upload_in_parts(self, bucket: str, key: str, data: bytes, part_size: int) -> None:
        """Put ``data`` with a multipart upload in parts of ``part_size`` bytes (S3's minimum
        part size is 5 MiB), as boto3 does for large files."""
        config = TransferConfig(multipart_threshold=part_size, multipart_chunksize=part_size)
        self.client().upload_fileobj(io.BytesIO(data), bucket, key, Config=config)

    def settings(self) -> dict[str, str]:
        """This server's endpoint and keys as the standard ``AWS_*`` environment variables, where a
        warehouse in S3 takes them from (``warehouse.storage``)."""
        return {"AWS_ENDPOINT_URL": self.endpoint_url, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION}

    def store(self, uri: str):
        """The binlake object store for ``uri`` (``s3://bucket/prefix``) on this server."""
        return open_store(
            uri, endpoint_url=self.endpoint_url, access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION
        )
