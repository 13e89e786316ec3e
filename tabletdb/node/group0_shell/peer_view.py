"""group0's membership as the internode handshake reads it (`net.handshake.MembershipView`).

Members are the topology's records, looked up by host id on every message, so a node that
leaves the topology is refused from the next message on. A joining node's own topology is empty
until the leader's entries arrive; the group0 id its seed presented stands in until then.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from tabletdb.group0.topology import NodeRecord, Topology
from tabletdb.net.handshake import Location


class TopologyView:
    def __init__(self, topology: Callable[[], Topology], me: uuid.UUID) -> None:
        self._topology = topology
        self._me = me
        self._seed_group0: uuid.UUID | None = None

    @property
    def group0_id(self) -> uuid.UUID | None:
        return self._topology().group0_id or self._seed_group0

    def member(self, host_id: uuid.UUID) -> tuple[int, Location] | None:
        record = self._topology().members.get(host_id)
        return None if record is None else (record.raft_id, _location(record))

    def host_of(self, node_id: int) -> tuple[uuid.UUID, Location] | None:
        record = self._topology().by_raft_id(node_id)
        return None if record is None else (record.host_id, _location(record))

    def address_of(self, host_id: uuid.UUID) -> str | None:
        record = self._topology().members.get(host_id)
        return None if record is None else record.address

    def joining(self) -> bool:
        return self._me not in self._topology().members

    def adopt_group0(self, group0_id: uuid.UUID) -> None:
        if self.joining() and self._seed_group0 is None:
            self._seed_group0 = group0_id


def _location(record: NodeRecord) -> Location:
    return Location(record.datacenter, record.rack)
