"""Scylla protocol extensions: names, and the SUPPORTED map a Scylla node advertises.

An extension is on for a connection only if the client echoed its key in STARTUP (the value is
ignored) and we offered it. The sharding keys are all-or-none: scylla-driver converts all three
numeric keys with int() as soon as any of them is present (spec/clients.md 2.1).
"""

from __future__ import annotations

import uuid

LWT_ADD_METADATA_MARK = "SCYLLA_LWT_ADD_METADATA_MARK"
RATE_LIMIT_ERROR = "SCYLLA_RATE_LIMIT_ERROR"
TABLETS_ROUTING_V1 = "TABLETS_ROUTING_V1"
USE_METADATA_ID = "SCYLLA_USE_METADATA_ID"

# Extensions this codec implements (STARTUP echoes of anything else are ignored).
KNOWN_EXTENSIONS = frozenset({LWT_ADD_METADATA_MARK, RATE_LIMIT_ERROR, TABLETS_ROUTING_V1, USE_METADATA_ID})

CQL_VERSION = "3.3.1"
MURMUR3_PARTITIONER = "org.apache.cassandra.dht.Murmur3Partitioner"
SHARDING_ALGORITHM = "biased-token-round-robin"
DEFAULT_IGNORE_MSB = 12
DEFAULT_SHARD_AWARE_PORT = 19042


def build_supported(
    *,
    host_id: uuid.UUID | None = None,
    shard: int | None = None,
    nr_shards: int | None = None,
    ignore_msb: int = DEFAULT_IGNORE_MSB,
    shard_aware_port: int | None = None,
    compression: tuple[str, ...] = ("lz4", "snappy"),
    extensions: frozenset[str] = KNOWN_EXTENSIONS,
) -> dict[str, list[str]]:
    """The SUPPORTED multimap as Scylla sends it, keys sorted.

    Pass both `shard` and `nr_shards` to advertise sharding (all keys), or neither.
    """
    opts: dict[str, list[str]] = {
        "CQL_VERSION": [CQL_VERSION],
        "COMPRESSION": list(compression),
        "CLIENT_OPTIONS": [""],
    }
    if host_id is not None:
        opts["SCYLLA_HOST_ID"] = [str(host_id)]
    if (shard is None) != (nr_shards is None):
        raise ValueError("sharding keys are all-or-none: pass both shard and nr_shards")
    if shard is not None and nr_shards is not None:
        opts["SCYLLA_SHARD"] = [str(shard)]
        opts["SCYLLA_NR_SHARDS"] = [str(nr_shards)]
        opts["SCYLLA_PARTITIONER"] = [MURMUR3_PARTITIONER]
        opts["SCYLLA_SHARDING_ALGORITHM"] = [SHARDING_ALGORITHM]
        opts["SCYLLA_SHARDING_IGNORE_MSB"] = [str(ignore_msb)]
        if shard_aware_port is not None:
            opts["SCYLLA_SHARD_AWARE_PORT"] = [str(shard_aware_port)]
    if LWT_ADD_METADATA_MARK in extensions:
        opts[LWT_ADD_METADATA_MARK] = ["LWT_OPTIMIZATION_META_BIT_MASK=2147483648"]
    if RATE_LIMIT_ERROR in extensions:
        opts[RATE_LIMIT_ERROR] = ["ERROR_CODE=61440"]
    if TABLETS_ROUTING_V1 in extensions:
        opts[TABLETS_ROUTING_V1] = [""]
    if USE_METADATA_ID in extensions:
        opts[USE_METADATA_ID] = [""]
    return dict(sorted(opts.items()))
