"""The timeuuid keys a CDC log shows for the elements of a non-frozen list.

ScyllaDB stores a ``list<V>`` as a ``map<timeuuid, V>`` and its CDC log reveals those keys
(``frozen<map<timeuuid, V>>`` for added elements, ``frozen<set<timeuuid>>`` for removed ones),
so a consumer can replay the exact same list elsewhere with
``SET l[SCYLLA_TIMEUUID_LIST_INDEX(key)] = value``. Here a list element's storage path is an
8-byte unsigned position (``statements.keys.list_paths``), so the log key is a version-1 UUID
built from the position: its 60-bit time holds the position's top 60 bits and the low 4 bits
sit in the clock sequence, which keeps timeuuid order equal to list order and makes the key map
back to the very same position. A foreign timeuuid (made by ScyllaDB) maps to the position of
its time and clock-sequence bits, in the same order.
"""

from __future__ import annotations

POSITION_BYTES = 8
_NODE = (1).to_bytes(6, "big")


def key_of_position(path: bytes) -> bytes:
    """The 16-byte timeuuid key of the list element stored at ``path``."""
    if len(path) != POSITION_BYTES:
        raise ValueError(f"a list element path is {POSITION_BYTES} bytes, got {len(path)}")
    position = int.from_bytes(path, "big")
    t, low = position >> 4, position & 0xF
    time_hi = ((t >> 48) & 0x0FFF) | 0x1000
    clock_seq = 0x8000 | low
    return (
        (t & 0xFFFF_FFFF).to_bytes(4, "big")
        + ((t >> 32) & 0xFFFF).to_bytes(2, "big")
        + time_hi.to_bytes(2, "big")
        + clock_seq.to_bytes(2, "big")
        + _NODE
    )


def position_of_key(key: bytes) -> bytes:
    """The storage path of the list element a timeuuid key names (``key_of_position``'s inverse)."""
    if len(key) != 16 or key[6] >> 4 != 1:
        raise ValueError("SCYLLA_TIMEUUID_LIST_INDEX needs a version 1 (time-based) UUID")
    t = (
        int.from_bytes(key[0:4], "big")
        | int.from_bytes(key[4:6], "big") << 32
        | (int.from_bytes(key[6:8], "big") & 0x0FFF) << 48
    )
    low = key[9] & 0xF
    return ((t << 4) | low).to_bytes(POSITION_BYTES, "big")
