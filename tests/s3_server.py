"""A local S3 server (moto) for the tests that keep experiments in object storage."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import pytest

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def moto_s3() -> Iterator[tuple[Any, str]]:
    """Start a moto S3 server with an empty bucket named "bucket"; yields a pyarrow
    ``S3FileSystem`` on it and the URI query (``endpoint_override=...``) that reaches it.
    Skips the test when moto is not installed."""
    moto_server = pytest.importorskip("moto.server")
    pafs = pytest.importorskip("pyarrow.fs")
    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        fs = pafs.S3FileSystem(
            access_key="testing",
            secret_key="testing",
            region="us-east-1",
            scheme="http",
            endpoint_override=f"127.0.0.1:{port}",
            allow_bucket_creation=True,
        )
        fs.create_dir("bucket")
        yield fs, f"endpoint_override=127.0.0.1:{port}&scheme=http&region=us-east-1"
    finally:
        server.stop()
