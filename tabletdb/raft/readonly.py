"""Read barriers (read-index, Raft thesis §6.4) pending on a leader.

A request records the commit index at the time it arrived, then the leader tags a heartbeat
round with the request's context. Once a quorum answers that round the leader knows it was
still the leader when the request arrived, so any read served after applying the recorded index
is linearizable. Acknowledging a later request also confirms every earlier one (the heartbeats
are sent in order), so requests are released as a prefix of the queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tabletdb.raft.types import NodeId


@dataclass
class ReadRequest:
    index: int
    """Commit index when the request reached the leader."""
    context: bytes
    origin: NodeId
    """Who asked: the leader itself (local ReadState) or a follower (READ_INDEX_RESPONSE)."""
    acks: set[NodeId] = field(default_factory=set)


class ReadOnly:
    def __init__(self) -> None:
        self._pending: dict[bytes, ReadRequest] = {}
        self._queue: list[bytes] = []

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, index: int, context: bytes, origin: NodeId) -> bool:
        """Queue a request; False if the context is already pending (it will be answered once)."""
        if context in self._pending:
            return False
        self._pending[context] = ReadRequest(index=index, context=context, origin=origin)
        self._queue.append(context)
        return True

    def ack(self, node: NodeId, context: bytes) -> set[NodeId] | None:
        """Record that `node` answered the heartbeat round of `context`; the ackers so far."""
        request = self._pending.get(context)
        if request is None:
            return None
        request.acks.add(node)
        return request.acks

    def release(self, context: bytes) -> list[ReadRequest]:
        """Pop and return every request up to and including `context`."""
        if context not in self._pending:
            return []
        upto = self._queue.index(context) + 1
        released = [self._pending.pop(c) for c in self._queue[:upto]]
        del self._queue[:upto]
        return released

    def last_context(self) -> bytes | None:
        return self._queue[-1] if self._queue else None
