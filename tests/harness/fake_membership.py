"""An in-memory `net.handshake.MembershipView` for unit tests of the handshake and the RPC
layer: members by host id with their locations; `me` not among them means "joining"."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from tabletdb.group0.topology import raft_id_of
from tabletdb.net.handshake import Location


@dataclass
class View:
    members: dict[uuid.UUID, Location] = field(default_factory=dict)
    group0: uuid.UUID | None = None
    me: uuid.UUID | None = None
    adopted: uuid.UUID | None = None
    addresses: dict[uuid.UUID, str] = field(default_factory=dict)
    """A member's recorded address when it is not 127.0.0.1."""

    @property
    def group0_id(self) -> uuid.UUID | None:
        return self.group0 or self.adopted

    def member(self, host_id: uuid.UUID) -> tuple[int, Location] | None:
        loc = self.members.get(host_id)
        return None if loc is None else (raft_id_of(host_id), loc)

    def host_of(self, node_id: int) -> tuple[uuid.UUID, Location] | None:
        for host, loc in self.members.items():
            if raft_id_of(host) == node_id:
                return host, loc
        return None

    def address_of(self, host_id: uuid.UUID) -> str | None:
        return self.addresses.get(host_id, "127.0.0.1") if host_id in self.members else None

    def joining(self) -> bool:
        return self.me not in self.members

    def adopt_group0(self, group0_id: uuid.UUID) -> None:
        self.adopted = group0_id
