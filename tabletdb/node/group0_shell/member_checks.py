"""What a member checks with the cluster before it serves again, and the leader's checks on a
replacing node.

* Removed while down: a node that was removed (``removenode``) while it was dead never saw the
  command that made it ``left``; its own log still says it is a member. Its peers no longer take
  its messages (it is no member to them), so its read barrier could only time out, after which
  it would serve CQL from its stale state: writes acknowledged by it would reach no one. So on
  every restart it asks the members it knows (``g0.member_state``, a verb non-members may send)
  how they see it; if any says ``left`` it refuses to start, as a node that saw its own removal
  does.
* Replacement (``replace_node_first_boot``): the leader admits a replacing node only while the
  node it replaces is a normal member that the leader sees down. Vnode keyspaces follow through
  the request's ring phase (``topology.vnode_phase``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.topology import JoinRefused, raft_id_of
from tabletdb.net.rpc import RpcError, RpcNode
from tabletdb.topology.states import NodeState

log = logging.getLogger(__name__)

MEMBER_STATE_VERB = "g0.member_state"
ASK_TIMEOUT = 2.0
"""Seconds a restarting member waits for its peers' view of it (silent peers are skipped)."""


def serve_member_state(rpc: RpcNode, state: Callable[[], ClusterState]) -> None:
    """Answer how this node's group0 state sees the asking node (by its handshake's id)."""

    async def handle(src: int, payload: Any) -> str:
        host = uuid.UUID(bytes=bytes(payload))
        topology_state = state().topology_state
        if host not in topology_state.nodes:
            return NodeState.NONE.value
        if raft_id_of(host) != src:
            raise ValueError(f"node {src} asked for the state of {host}, which is not itself")
        return topology_state.state_of(host).value

    rpc.register(MEMBER_STATE_VERB, handle)


async def removed_by_peers(rpc: RpcNode, me: uuid.UUID, peers: Sequence[int]) -> bool:
    """Whether any of ``peers`` (RPC ids with known addresses) sees this node as ``left``."""

    async def ask(peer: int) -> str:
        try:
            return str(await rpc.call(peer, MEMBER_STATE_VERB, me.bytes, timeout=ASK_TIMEOUT))
        except (RpcError, OSError) as exc:
            log.debug("member state not answered by node %d: %s", peer, exc)
            return ""

    answers = await asyncio.gather(*(ask(p) for p in peers))
    return NodeState.LEFT.value in answers


def check_replacement(
    state: ClusterState, new: uuid.UUID, replaced: uuid.UUID, alive: Callable[[uuid.UUID], bool]
) -> None:
    """Raise JoinRefused unless ``new`` may replace ``replaced`` now (see the module docstring)."""
    topology_state = state.topology_state
    if topology_state.state_of(replaced) is not NodeState.NORMAL or replaced not in state.topology.members:
        raise JoinRefused(
            f"replace: node {replaced} is not a normal member of the cluster "
            f"(it is {topology_state.state_of(replaced).value}); check replace_node_first_boot"
        )
    if alive(replaced):
        raise JoinRefused(
            f"replace: node {replaced} is alive; stop it before replacing it (replace is for dead nodes)"
        )
