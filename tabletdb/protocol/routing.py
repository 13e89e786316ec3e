"""The `tablets-routing-v1` custom payload: tells a driver which replicas own a token's tablet.

Its value is the serialized CQL value `tuple<bigint, bigint, frozen<list<frozen<tuple<uuid, int>>>>>`
(spec/clients.md 2.3): first token (exclusive), last token (inclusive), then (host id, shard) per
replica. The query layer attaches it to a RESULT when the coordinator was not a correct target.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence

TABLETS_ROUTING_V1_KEY = "tablets-routing-v1"

_CELL_LONG = struct.Struct(">iq")  # [bytes] of length 8 holding an i64
_CELL_INT = struct.Struct(">ii")  # [bytes] of length 4 holding an i32
_LEN = struct.Struct(">i")
_MIN_TOKEN = -(2**63)
_MAX_TOKEN = 2**63 - 1


def encode_tablets_routing_v1(
    first_token: int, last_token: int, replicas: Sequence[tuple[uuid.UUID, int]]
) -> bytes:
    """Serialize one tablet's range (first_token, last_token] and its replicas as (host id, shard)."""
    if not _MIN_TOKEN <= first_token < last_token <= _MAX_TOKEN:
        raise ValueError(f"bad tablet range ({first_token}, {last_token}]")
    replica_list = bytearray(_LEN.pack(len(replicas)))
    for host_id, shard in replicas:
        tup = _LEN.pack(16) + host_id.bytes + _CELL_INT.pack(4, shard)
        replica_list += _LEN.pack(len(tup))
        replica_list += tup
    out = bytearray(_CELL_LONG.pack(8, first_token))
    out += _CELL_LONG.pack(8, last_token)
    out += _LEN.pack(len(replica_list))
    out += replica_list
    return bytes(out)


def routing_payload(
    first_token: int, last_token: int, replicas: Sequence[tuple[uuid.UUID, int]]
) -> dict[str, bytes | None]:
    """A ready-to-attach custom payload map for a Response."""
    return {TABLETS_ROUTING_V1_KEY: encode_tablets_routing_v1(first_token, last_token, replicas)}
