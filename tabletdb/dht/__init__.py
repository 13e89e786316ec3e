"""Tokens, token ranges, shards, tablet ids and the vnode ring (layer 0: imports nothing of ours).

Submodules: ``token`` (bias/unbias, ranges), ``murmur3`` (partitioner), ``sharding`` (shard_of),
``tablet_ids`` (tablet boundaries), ``ring`` (vnode replicas), ``cdc_stream_id`` (id layout).
The names most callers need are re-exported here.
"""

from tabletdb.dht.murmur3 import murmur3_h1, partition_key_bytes, split_partition_key, token_of
from tabletdb.dht.sharding import first_token_of_shard, shard_of, shard_starts, token_for_next_shard
from tabletdb.dht.tablet_ids import tablet_id_of, tablet_last_token, tablet_last_tokens, tablet_range
from tabletdb.dht.token import FULL_RING, MAX_TOKEN, MIN_TOKEN, TokenRange, bias, unbias

__all__ = [
    "FULL_RING",
    "MAX_TOKEN",
    "MIN_TOKEN",
    "TokenRange",
    "bias",
    "first_token_of_shard",
    "murmur3_h1",
    "partition_key_bytes",
    "shard_of",
    "shard_starts",
    "split_partition_key",
    "tablet_id_of",
    "tablet_last_token",
    "tablet_last_tokens",
    "tablet_range",
    "token_for_next_shard",
    "token_of",
    "unbias",
]
