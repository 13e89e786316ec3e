"""Where a command reads and writes: a local path or a `file:` URI, made absolute on the driver.

Spark's executors do not run in the command's working directory (on a standalone cluster each
runs in its worker's application directory), so every location they use is resolved here,
before Spark starts, against the directory the command was run in.

Every command takes a path or a `file:` URI in any of Hadoop's spellings (`file:///abs`,
`file:/abs`, `file://localhost/abs`, `file:relative`, percent-encoded). Backup and restore
also take an `s3://` URI (Hadoop's `s3a://` and `s3n://` spellings name the same object):
they reach their store through pyarrow.fs (`spark.backup_store`), which the tests run against an
S3 server. CDC export commits a pass by renaming a directory and so takes paths only. On a
cluster a path must be a filesystem every machine mounts at the same path. Other schemes
(`hdfs://`, `gs://`, ...) are refused with that advice, not half-supported. `tabletdb load`
hands its input and its rejects location to Spark, which reads and writes any Hadoop filesystem
it has a connector for: there only `file:` URIs and bare paths are made absolute, and other URIs
go to Spark as given.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_LOCAL_HOSTS = ("", "localhost")


class LocationError(ValueError):
    """A location the command cannot use; the message says what to give instead."""


def scheme(location: str) -> str | None:
    """`file` for a `file:` URI, the scheme of any `scheme://` URI, None for a plain path
    (so `a:b/c` is a path, as a shell user means it)."""
    found = _SCHEME.match(location)
    if found is None:
        return None
    name = found.group(1).lower()
    if name == "file" or location[found.end() :].startswith("//"):
        return name
    return None


def local_path(location: str, option: str) -> Path:
    """The absolute local path of a path or a `file:` URI; `LocationError` for anything else."""
    kind = scheme(location)
    if kind is None:
        return Path(location).expanduser().resolve()
    if kind != "file":
        raise LocationError(
            f"{option} {location}: only a path or a file: URI works here (the driver and every "
            f"Spark executor read and write it as files); for {kind}://, mount that store at the "
            "same path on every machine (NFS, a FUSE mount) and give that path"
        )
    parts = urlsplit(location)
    if parts.netloc.lower() not in _LOCAL_HOSTS:
        raise LocationError(
            f"{option} {location}: a file: URI names no host other than localhost "
            f"(file:///path); {parts.netloc!r} is not this machine"
        )
    if parts.query or parts.fragment:
        raise LocationError(f"{option} {location}: a file: URI takes no query or fragment")
    return Path(unquote(parts.path)).expanduser().resolve()


def spark_location(location: str, option: str) -> str:
    """For Spark's own readers and writers: a path or `file:` URI as an absolute path; any other
    URI unchanged (Spark resolves it through its Hadoop filesystems)."""
    if scheme(location) in (None, "file"):
        return str(local_path(location, option))
    return location


def store_location(location: str, option: str) -> str:
    """For backup and restore: an absolute path for a path or `file:` URI, or a store URI
    `spark.backup_store` opens (`s3a://`/`s3n://` as `s3://`); `LocationError` otherwise."""
    from tabletdb.spark.backup_store import STORE_SCHEMES

    kind = scheme(location)
    if kind is None or kind == "file":
        return str(local_path(location, option))
    if kind in ("s3a", "s3n"):
        location = "s3" + location[len(kind) :]
        kind = "s3"
    if kind not in STORE_SCHEMES:
        accepted = ", ".join(f"{name}://" for name in STORE_SCHEMES)
        raise LocationError(
            f"{option} {location}: backup and restore take a path, a file: URI or {accepted} here"
            f" ({kind}:// has not been tested with them); mount that store at the same path on every"
            " machine (NFS, a FUSE mount) and give that path"
        )
    if not urlsplit(location).netloc:
        raise LocationError(f"{option} {location}: an {kind}:// URI names a bucket ({kind}://bucket/prefix)")
    return location
