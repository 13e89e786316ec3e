"""New group0 state ids: time-based (version 1) UUIDs that always move forward.

The state id is also the schema version drivers compare for agreement, and ScyllaDB's are
timeuuids; making each new id strictly later than the previous one keeps ids ordered even if
the wall clock steps back.
"""

from __future__ import annotations

import random
import uuid

_GREGORIAN_OFFSET = 0x01B21DD213814000  # 100-ns intervals from 1582-10-15 to 1970-01-01


def timeuuid_after(prev: uuid.UUID | None, now_ns: int, rng: random.Random) -> uuid.UUID:
    """A version-1 UUID whose timestamp is max(now, prev + 1 tick), with random clock/node bits."""
    ticks = now_ns // 100 + _GREGORIAN_OFFSET
    if prev is not None and prev.version == 1:
        ticks = max(ticks, prev.time + 1)
    time_low = ticks & 0xFFFFFFFF
    time_mid = (ticks >> 32) & 0xFFFF
    time_hi_version = ((ticks >> 48) & 0x0FFF) | 0x1000
    clock_seq = rng.getrandbits(14) | 0x8000  # RFC 4122 variant
    node = rng.getrandbits(48) | 0x010000000000  # multicast bit: not a real MAC
    return uuid.UUID(fields=(time_low, time_mid, time_hi_version, clock_seq >> 8, clock_seq & 0xFF, node))
