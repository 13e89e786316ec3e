"""Nothing is proposed to group0 that every node cannot decode and apply.

Every node applies every committed entry, and a node that cannot apply one stops (raft.py): an
entry no node can decode would stop the whole cluster, and before that it wedged it (commit and
applied index apart for good, every later schema change timing out, restarts dying in replay).
So before an entry is proposed it is encoded, decoded again and compared with what was decided;
one that does not survive is refused with InvalidRequest and never reaches the log.

Decoding once here is sound for every node: the bytes are what every node decodes, decoding
depends on nothing but them, and the codecs bound their recursion (`schema.serialize`) so the
stack a node happens to apply on cannot change the outcome. Applying is covered too: the decoded
entry equals the decided one, and the batcher already applied that very command to the state it
was decided on (`batch.DdlBatcher`); on any other state the state-id guard makes it a no-op.
The cost is one decode and one comparison per entry (bench/bench_group0_admission.py).
"""

from __future__ import annotations

import uuid

from tabletdb.cql.errors import InvalidRequest
from tabletdb.group0.cluster_state import BatchEntry, GroupEntry, decode_entry, encode_entry


class Unreplicable(InvalidRequest):
    """The entry would not decode to itself on the nodes that apply it; `command_id` names the
    command at fault (in a batch, the first one that fails alone)."""

    def __init__(self, message: str, command_id: uuid.UUID | None) -> None:
        super().__init__(message)
        self.command_id = command_id


def encode_checked(entry: GroupEntry) -> bytes:
    """The bytes to propose for `entry`; raises Unreplicable if they would not decode to it."""
    try:
        return _round_trip(entry)
    except _Refused as refused:
        culprit = entry.command_id
        if isinstance(entry, BatchEntry):  # name the command that fails on its own, if one does
            culprit = next((e.command_id for e in entry.entries if not _survives(e)), culprit)
        message = f"This change cannot be replicated to the cluster: {refused}"
        raise Unreplicable(message, culprit) from refused.__cause__


class _Refused(Exception):
    """Why an entry failed its round trip."""


def _survives(entry: GroupEntry) -> bool:
    try:
        _round_trip(entry)
    except _Refused:
        return False
    return True


def _round_trip(entry: GroupEntry) -> bytes:
    try:
        data = encode_entry(entry)
        decoded = decode_entry(data)
        # Equal, or (a NaN inside is never equal to itself) encoding to the same bytes again.
        same = decoded == entry or encode_entry(decoded) == data
    except RecursionError as exc:
        raise _Refused("it is nested too deeply") from exc
    except (ValueError, TypeError, KeyError) as exc:
        raise _Refused(str(exc)) from exc
    if not same:
        raise _Refused("it would not decode to the change that was decided")
    return data
