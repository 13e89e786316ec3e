"""Cluster membership as group0 holds it: who the nodes are, where they listen, what they support.

A node becomes a member through a join request decided by the group0 leader and applied by every
node in log order. Applying a join is deterministic and re-checks the admission rules, so two
racing joins, or a join that races a feature being enabled, resolve the same way on every node.

Cluster features follow ScyllaDB's rule: a feature is enabled once every member supports it,
and an enabled feature is never disabled, so a node lacking one may not join (it could not
honour data or metadata already written under it).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

RAFT_ID_BITS = 63
"""Raft server ids are the top 63 bits of the host id: unique for practical purposes and fits
msgpack's signed 64-bit integers, so no id allocation round trip is needed at join time."""


DEFAULT_STORAGE_PORT = 7000


def raft_id_of(host_id: uuid.UUID) -> int:
    """The group0 Raft server id of the node with `host_id` (never 0: Raft reserves 'nobody')."""
    return (host_id.int >> (128 - RAFT_ID_BITS)) or 1


class NodeState(StrEnum):
    NORMAL = "normal"
    """A voting member serving requests."""


@dataclass(frozen=True)
class NodeRecord:
    """One member: identity, addresses and advertised capabilities."""

    host_id: uuid.UUID
    address: str
    rpc_address: str
    datacenter: str
    rack: str
    tokens: tuple[int, ...]
    supported_features: frozenset[str]
    shard_count: int = 2
    state: NodeState = NodeState.NORMAL
    storage_port: int = DEFAULT_STORAGE_PORT
    """Where the member takes group0/internode traffic (Scylla's storage_port)."""

    @property
    def raft_id(self) -> int:
        return raft_id_of(self.host_id)


@dataclass(frozen=True)
class Topology:
    """Members by host id, the cluster's name (set by the founder) and its enabled features."""

    cluster_name: str = ""
    members: dict[uuid.UUID, NodeRecord] = field(default_factory=dict)
    enabled_features: frozenset[str] = frozenset()
    group0_id: uuid.UUID | None = None
    """Names the group for its life: the founder's host id, set by the first join."""

    def by_raft_id(self, raft_id: int) -> NodeRecord | None:
        for record in self.members.values():
            if record.raft_id == raft_id:
                return record
        return None


class JoinRefused(Exception):
    """A node may not join this cluster; the message says why and what to change."""


def check_join(
    topology: Topology, cluster_name: str, record: NodeRecord, replaces: uuid.UUID | None = None
) -> None:
    """Raise JoinRefused if `record` may not join a cluster in `topology`; a node replacing
    `replaces` may take its address."""
    if topology.cluster_name and topology.cluster_name != cluster_name:
        raise JoinRefused(
            f"node {record.host_id} ({record.address}) has cluster_name {cluster_name!r} but this "
            f"cluster is {topology.cluster_name!r}; set the same cluster_name on every node"
        )
    missing = sorted(topology.enabled_features - record.supported_features)
    if missing:
        raise JoinRefused(
            f"node {record.host_id} ({record.address}) does not support the cluster's enabled "
            f"feature(s) {', '.join(missing)}; upgrade the node before it joins"
        )
    for other in topology.members.values():
        if other.address == record.address and other.host_id not in (record.host_id, replaces):
            raise JoinRefused(
                f"address {record.address} already belongs to member {other.host_id}; "
                "a replaced node must be removed first"
            )


def decided_tokens(topology: Topology, record: NodeRecord, replaces: uuid.UUID | None = None) -> NodeRecord:
    """``record`` with the vnode tokens the cluster gives it; tokens are decided once. A member
    keeps the tokens it was recorded with (a refresh after a restart or at a new address never
    moves them, whatever its identity file says); a node replacing member ``replaces`` takes
    that node's tokens over, as ScyllaDB's replace does, so no range moves between the other
    nodes; a new node brings its own."""
    known = topology.members.get(record.host_id)
    if known is not None:
        return replace(record, tokens=known.tokens)
    replaced = topology.members.get(replaces) if replaces is not None else None
    if replaced is not None:
        return replace(record, tokens=replaced.tokens)
    return record


@dataclass(frozen=True)
class JoinCommand:
    """Admit (or refresh the record of) one node. Re-checked on apply; idempotent."""

    command_id: uuid.UUID
    cluster_name: str
    record: NodeRecord
    replaces: uuid.UUID | None = None
    """A new node started with `replace_node_first_boot`: applying the join also queues its
    `replace` request (`group0.cluster_state`), in the same entry, so the coordinator never sees
    the node without its request or the request without the node's record."""


def apply_join(topology: Topology, command: JoinCommand) -> tuple[Topology, bool]:
    """The topology after `command` and whether it was admitted (False: refused on apply)."""
    try:
        check_join(topology, command.cluster_name, command.record, command.replaces)
    except JoinRefused:
        return topology, False
    members = dict(topology.members)
    members[command.record.host_id] = command.record
    common = frozenset.intersection(*(r.supported_features for r in members.values()))
    return (
        replace(
            topology,
            cluster_name=topology.cluster_name or command.cluster_name,
            group0_id=topology.group0_id or command.record.host_id,
            members=members,
            enabled_features=topology.enabled_features | common,
        ),
        True,
    )


# --- plain (msgpack-ready) encoding -----------------------------------------------------------


def record_to_plain(r: NodeRecord) -> dict[str, Any]:
    return {
        "host_id": r.host_id.bytes,
        "address": r.address,
        "rpc_address": r.rpc_address,
        "dc": r.datacenter,
        "rack": r.rack,
        "tokens": list(r.tokens),
        "features": sorted(r.supported_features),
        "shards": r.shard_count,
        "state": r.state.value,
        "storage_port": r.storage_port,
    }


def record_from_plain(d: dict[str, Any]) -> NodeRecord:
    return NodeRecord(
        host_id=uuid.UUID(bytes=d["host_id"]),
        address=d["address"],
        rpc_address=d["rpc_address"],
        datacenter=d["dc"],
        rack=d["rack"],
        tokens=tuple(int(t) for t in d["tokens"]),
        supported_features=frozenset(d["features"]),
        shard_count=int(d["shards"]),
        state=NodeState(d["state"]),
        storage_port=int(d.get("storage_port", DEFAULT_STORAGE_PORT)),  # records from before the key
    )


def topology_to_plain(t: Topology) -> dict[str, Any]:
    return {
        "cluster_name": t.cluster_name,
        "members": [record_to_plain(r) for _, r in sorted(t.members.items())],
        "enabled": sorted(t.enabled_features),
        "group0_id": t.group0_id.bytes if t.group0_id else None,
    }


def topology_from_plain(d: dict[str, Any]) -> Topology:
    records = [record_from_plain(r) for r in d["members"]]
    group0_id = uuid.UUID(bytes=d["group0_id"]) if d["group0_id"] else None
    return Topology(d["cluster_name"], {r.host_id: r for r in records}, frozenset(d["enabled"]), group0_id)


def join_to_plain(c: JoinCommand) -> dict[str, Any]:
    plain = {"id": c.command_id.bytes, "cluster_name": c.cluster_name, "record": record_to_plain(c.record)}
    if c.replaces is not None:
        plain["replaces"] = c.replaces.bytes  # absent otherwise: plain joins encode as before
    return plain


def join_from_plain(d: dict[str, Any]) -> JoinCommand:
    replaces = uuid.UUID(bytes=d["replaces"]) if d.get("replaces") is not None else None
    return JoinCommand(uuid.UUID(bytes=d["id"]), d["cluster_name"], record_from_plain(d["record"]), replaces)
