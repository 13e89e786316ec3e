"""Who is on the other end of an internode connection: the handshake, checked before any message.

Every connection starts with a HELLO each way carrying the sender's identity (`Hello`): its RPC
id, host id, cluster name, group0 id, datacenter and rack, and the host id it expects to reach.
The acceptor checks the caller's HELLO (`Authority.admit`) and answers with its own, or with an
ERROR naming the reason and closes; the caller checks the answer the same way. From then on the
`src` of every message on the connection is the authenticated peer's id: a frame's own `src`
field is ignored, so one node cannot speak for another.

The cluster's rules (`ClusterAuthority`) are pure: they read membership through `MembershipView`
(group0's topology on a node) and never do I/O. A stranger, a node of another cluster or group,
a node that answers for another host id, a member's host id claimed from an address other than
the member's, and a plaintext connection that the encryption policy forbids are refused at the
handshake. (A HELLO is a claim; what makes it hard to forge is the address check, which needs
the member's address, and TLS with client certificates, which needs the cluster's CA.)

A node that is not (or no longer) a member passes the handshake but may only send the join
verbs: that is the narrow door a new node uses to ask the group0 leader to admit it. Every other
message from it is refused, checked per message, so a node that left is cut off at once and a
joiner is let in as soon as its join is applied. A member calling from an address other than the
one group0 records (restarted with a new IP) is held to the same door until the leader recorded
its new address (a join refreshes the record; the leader refuses it while the member answers at
its old address); every message re-checks the address, so it is let in once the change applied.

The joining node's side: its own log is empty until the leader's first entries arrive, so it
cannot check the leader against membership. It learns the group0 id from the seed it asked to
join (the seed's HELLO answer; the seed is configured, so trusted) and, until it sees itself a
member, takes peers that present that group0 id and cluster name as members ("provisional").
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol


class HandshakeRefused(Exception):
    """The peer may not talk to this node; the message says who it is and why."""


class InternodeEncryption(StrEnum):
    """scylla.yaml's `server_encryption_options.internode_encryption`."""

    NONE = "none"
    ALL = "all"
    DC = "dc"
    RACK = "rack"


@dataclass(frozen=True)
class Location:
    dc: str
    rack: str


def encryption_required(mode: InternodeEncryption, a: Location, b: Location | None) -> bool:
    """Whether traffic between nodes at `a` and `b` must be TLS. An unknown location (a seed not
    yet seen in group0) is treated as distant: encrypting is the safe guess."""
    if mode is InternodeEncryption.NONE:
        return False
    if mode is InternodeEncryption.ALL or b is None:
        return True
    if mode is InternodeEncryption.DC:
        return a.dc != b.dc
    return a != b


@dataclass(frozen=True)
class Hello:
    """One side's identity, as sent in the HELLO frame."""

    node_id: int
    host_id: uuid.UUID
    cluster_name: str
    group0_id: uuid.UUID | None
    location: Location
    expected_host_id: uuid.UUID | None
    """The host id the sender believes it reached (None: a seed, known only by address)."""

    def to_plain(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id,
            "host_id": self.host_id.bytes,
            "cluster_name": self.cluster_name,
            "group0_id": self.group0_id.bytes if self.group0_id else None,
            "dc": self.location.dc,
            "rack": self.location.rack,
            "expected_host_id": self.expected_host_id.bytes if self.expected_host_id else None,
        }

    @classmethod
    def from_plain(cls, plain: Any) -> Hello:
        """Decode a peer's HELLO; anything malformed is a refusal, never a crash."""
        try:
            return cls(
                node_id=_int(plain["node_id"]),
                host_id=uuid.UUID(bytes=plain["host_id"]),
                cluster_name=_str(plain["cluster_name"]),
                group0_id=_optional_uuid(plain["group0_id"]),
                location=Location(_str(plain["dc"]), _str(plain["rack"])),
                expected_host_id=_optional_uuid(plain["expected_host_id"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise HandshakeRefused(f"malformed handshake {plain!r:.200}: {exc!r}") from None


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an integer, got {value!r:.40}")
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r:.40}")
    return value


def _optional_uuid(value: Any) -> uuid.UUID | None:
    return None if value is None else uuid.UUID(bytes=value)


@dataclass(frozen=True)
class Peer:
    """The authenticated other end of a connection."""

    node_id: int
    host_id: uuid.UUID | None
    """None only under `TrustAll`."""
    description: str
    provisional: bool = False
    """Taken as a member by a joining node on the strength of its group0 id (module docstring)."""
    source: str | None = None
    """The address an inbound connection came from (None: this node dialled it)."""


class Authority(Protocol):
    """What `net.rpc.RpcNode` asks about the other end of each connection."""

    def hello(self, peer: int | None) -> Any:
        """This node's HELLO payload towards `peer` (None: answering an inbound connection)."""
        ...

    def admit(self, hello: Any, encrypted: bool, outbound_to: int | None, source: str | None) -> Peer:
        """The peer behind `hello`; raises HandshakeRefused. `outbound_to`: the id this node
        dialled (None: the peer called in); `source`: the address an inbound connection came
        from."""
        ...

    def refusal(self, peer: Peer, verb: str) -> str | None:
        """Why `peer` may not send `verb` now (None: it may)."""
        ...

    def must_encrypt(self, peer: int) -> bool:
        """Whether the connection to `peer` must be TLS."""
        ...


class TrustAll:
    """No authentication: the peer is whoever its HELLO says. For in-process tests and benches
    only; a node always runs with a `ClusterAuthority`."""

    def __init__(self, node_id: int) -> None:
        self._node_id = node_id

    def hello(self, peer: int | None) -> Any:
        return {"node_id": self._node_id}

    def admit(self, hello: Any, encrypted: bool, outbound_to: int | None, source: str | None) -> Peer:
        try:
            node_id = _int(hello["node_id"])
        except (KeyError, TypeError) as exc:
            raise HandshakeRefused(f"malformed handshake {hello!r:.200}: {exc!r}") from None
        return Peer(node_id, None, f"node {node_id}")

    def refusal(self, peer: Peer, verb: str) -> str | None:
        return None

    def must_encrypt(self, peer: int) -> bool:
        return False


class MembershipView(Protocol):
    """Group0's membership as the handshake reads it."""

    @property
    def group0_id(self) -> uuid.UUID | None: ...

    def member(self, host_id: uuid.UUID) -> tuple[int, Location] | None:
        """The member's RPC id and location, or None if `host_id` is not a member."""
        ...

    def host_of(self, node_id: int) -> tuple[uuid.UUID, Location] | None:
        """The member with RPC id `node_id` (None: not a member, e.g. a seed known by address)."""
        ...

    def address_of(self, host_id: uuid.UUID) -> str | None:
        """The address group0 records for the member (None: not a member)."""
        ...

    def joining(self) -> bool:
        """Whether this node is not yet a member in its own view of group0."""
        ...

    def adopt_group0(self, group0_id: uuid.UUID) -> None:
        """While joining: the group0 id a seed presented (see the module docstring)."""
        ...


@dataclass(frozen=True)
class Me:
    node_id: int
    host_id: uuid.UUID
    cluster_name: str
    location: Location


class ClusterAuthority:
    """The cluster's handshake rules (see the module docstring); pure over `view`."""

    def __init__(
        self,
        me: Me,
        view: MembershipView,
        join_verbs: frozenset[str],
        encryption: InternodeEncryption = InternodeEncryption.NONE,
        raft_id_of: Callable[[uuid.UUID], int] | None = None,
    ) -> None:
        """`raft_id_of` derives a host's RPC id from its host id, so a HELLO cannot pair one
        node's host id with another's RPC id."""
        self.me = me
        self.view = view
        self.join_verbs = join_verbs
        self.encryption = encryption
        self._raft_id_of = raft_id_of

    def hello(self, peer: int | None) -> Any:
        expected = None
        if peer is not None:
            known = self.view.host_of(peer)
            expected = known[0] if known else None
        me = self.me
        return Hello(
            me.node_id, me.host_id, me.cluster_name, self.view.group0_id, me.location, expected
        ).to_plain()

    def admit(self, hello: Any, encrypted: bool, outbound_to: int | None, source: str | None) -> Peer:
        h = Hello.from_plain(hello)
        who = f"node {h.host_id} (id {h.node_id})"
        me = self.me
        if h.cluster_name != me.cluster_name:
            raise HandshakeRefused(
                f"{who} belongs to cluster {h.cluster_name!r}, this node to {me.cluster_name!r}"
            )
        if h.group0_id and self.view.group0_id and h.group0_id != self.view.group0_id:
            raise HandshakeRefused(
                f"{who} belongs to group0 {h.group0_id}, this node to {self.view.group0_id}: "
                "same cluster name, different cluster"
            )
        if h.expected_host_id is not None and h.expected_host_id != me.host_id:
            raise HandshakeRefused(
                f"{who} expected to reach host {h.expected_host_id} but this is {me.host_id}: "
                "its view of the address is stale"
            )
        if self._raft_id_of is not None and self._raft_id_of(h.host_id) != h.node_id:
            raise HandshakeRefused(f"{who}: the id does not belong to the host id")
        member = self.view.member(h.host_id)
        if member is not None and member[0] != h.node_id:
            raise HandshakeRefused(f"{who}: group0 knows this host as id {member[0]}")
        location = member[1] if member is not None else h.location
        provisional = False
        if member is None and self.view.joining() and h.group0_id is not None:
            if (
                self.view.group0_id is None
                and outbound_to is not None
                and self.view.host_of(outbound_to) is None
            ):
                self.view.adopt_group0(h.group0_id)  # the seed this node dialled to ask to join
            provisional = h.group0_id == self.view.group0_id
        if not encrypted and encryption_required(self.encryption, me.location, location):
            raise HandshakeRefused(
                f"{who} in dc {location.dc!r} rack {location.rack!r} connected without TLS, but "
                f"internode_encryption={self.encryption.value} requires TLS to this node "
                f"(dc {me.location.dc!r} rack {me.location.rack!r}); it must use ssl_storage_port"
            )
        return Peer(h.node_id, h.host_id, who, provisional, source)

    def refusal(self, peer: Peer, verb: str) -> str | None:
        if verb in self.join_verbs:
            return None
        if peer.host_id is not None and self.view.member(peer.host_id) is not None:
            recorded = self.view.address_of(peer.host_id)
            if peer.source is None or recorded is None or peer.source == recorded:
                return None
            return (
                f"{peer.description} connected from {peer.source}, but group0 records this member at "
                f"{recorded}: {verb!r} refused until its new address is recorded (it asks with "
                f"{', '.join(sorted(self.join_verbs))})"
            )
        if peer.provisional and self.view.joining():
            return None
        return (
            f"{peer.description} is not a member of cluster {self.me.cluster_name!r} (it left, was "
            f"removed or has not joined yet): {verb!r} refused; only {', '.join(sorted(self.join_verbs))} "
            "is accepted from non-members"
        )

    def must_encrypt(self, peer: int) -> bool:
        known = self.view.host_of(peer)
        return encryption_required(self.encryption, self.me.location, known[1] if known else None)
