"""A real S3 endpoint on the loopback for tests of stores reached by URI (moto's S3 server).

`s3_server` starts moto's threaded server on 127.0.0.1 (an ephemeral port), creates a bucket
through pyarrow's own S3 client and answers the bucket's URI with everything a process needs
in it — endpoint, plain HTTP, region and the (dummy) keys as the URI's user info — so Spark's
Python workers and other processes open the same store from the URI alone, with no environment
to pass along. Nothing leaves the machine: the endpoint is the loopback server.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class S3Bucket:
    endpoint: str
    """host:port of the server."""
    bucket: str

    def uri(self, prefix: str) -> str:
        """An s3:// URI of ``prefix`` in the bucket, carrying the endpoint and the keys."""
        query = f"endpoint_override={self.endpoint}&scheme=http&region=us-east-1"
        return f"s3://test:secret@{self.bucket}/{prefix.strip('/')}?{query}"


@contextmanager
def s3_server() -> Iterator[S3Bucket]:
    from moto.server import ThreadedMotoServer
    from pyarrow import fs

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        bucket = f"tabletdb-{uuid.uuid4().hex[:12]}"
        setup = S3Bucket(f"{host}:{port}", bucket)
        filesystem, _ = fs.FileSystem.from_uri(setup.uri("x") + "&allow_bucket_creation=true")
        filesystem.create_dir(bucket)
        yield setup
    finally:
        server.stop()
