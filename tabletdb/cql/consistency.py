"""Consistency levels as values: the `[consistency]` codes of the native protocol and their names.

They live here, below the protocol, because the data plane decides by them (how many replicas
answer, when Paxos runs SERIAL or LOCAL_SERIAL) and must not depend on the wire layer for that.
"""

from __future__ import annotations

ANY, ONE, TWO, THREE, QUORUM, ALL = 0x0000, 0x0001, 0x0002, 0x0003, 0x0004, 0x0005
LOCAL_QUORUM, EACH_QUORUM, SERIAL, LOCAL_SERIAL, LOCAL_ONE = 0x0006, 0x0007, 0x0008, 0x0009, 0x000A
CONSISTENCY_NAMES: dict[int, str] = {
    ANY: "ANY",
    ONE: "ONE",
    TWO: "TWO",
    THREE: "THREE",
    QUORUM: "QUORUM",
    ALL: "ALL",
    LOCAL_QUORUM: "LOCAL_QUORUM",
    EACH_QUORUM: "EACH_QUORUM",
    SERIAL: "SERIAL",
    LOCAL_SERIAL: "LOCAL_SERIAL",
    LOCAL_ONE: "LOCAL_ONE",
}
