"""A new node's way into the cluster after group0 admitted it: a Raft learner until it is normal.

Admission (the seed's leader applying its `JoinCommand`) records the node's address and tokens,
so every member lets it in on the internode port, and queues its `join` request
(`topology.requests.admit_member`). From then on the node:

* is a Raft **learner**: it receives and applies group0's log (it must know the tablet maps to
  take the writes of the `write both` stages and to install streamed files) but does not vote.
  So it can never lead group0 (the coordinator that must finish its join runs on a normal
  node), a joiner that dies does not count against the quorum, and a rolled-back join leaves
  no voter behind. The coordinator's leader promotes it to voter once it is `normal`
  (`reconcile_voters`) and removes nodes that left from the configuration;
* serves the internode verbs (replica writes, tablet streaming, the topology barrier) but not
  CQL: its start waits here until its request ended (`wait_joined`), and only a `normal` node
  opens the CQL port. A node restarted while bootstrapping waits the same way;
* is no read replica until a tablet's stage switches reads to it, after streaming.

A rolled-back (or refused) join ends the start with `JoinRefused` naming the reason: one line
and a non-zero exit, the same as any other refusal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable

from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.topology import JoinRefused, raft_id_of
from tabletdb.net.rpc import Retry
from tabletdb.node.group0_shell.raft import RaftDriver
from tabletdb.raft.errors import ConfChangeError, ProposalDroppedError
from tabletdb.raft.types import ConfChange, ConfChangeSingle, ConfChangeType, ConfState
from tabletdb.topology.requests import join_outcome
from tabletdb.topology.state import TopologyState
from tabletdb.topology.states import NodeState

log = logging.getLogger(__name__)

POLL_SECONDS = 0.5
"""Upper bound between looks at the state while waiting (Raft wakes the waiter sooner)."""


async def _changed(driver: RaftDriver) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(driver.changed(), POLL_SECONDS)


async def wait_joined(state: Callable[[], ClusterState], driver: RaftDriver, host_id: uuid.UUID) -> None:
    """Return once this node is `normal` and a Raft voter; JoinRefused if its join ended otherwise."""
    announced = False
    while True:
        current = state()
        if host_id not in current.topology_state.nodes and host_id in current.topology.members:
            return  # a member from before the topology state machine: normal by definition
        outcome = join_outcome(current.topology_state, host_id)
        if outcome:
            raise JoinRefused(outcome)
        if outcome == "":
            break
        if not announced:
            node = current.topology_state.nodes.get(host_id)
            log.info(
                "bootstrapping: waiting for the topology coordinator to move tablet replicas here "
                "host_id=%s request_id=%s",
                host_id,
                node.request_id if node else None,
            )
            announced = True
        await _changed(driver)
    raft_id = raft_id_of(host_id)
    while raft_id not in driver.conf_state.voters:
        await _changed(driver)
    if announced:
        log.info("bootstrap finished: node is normal and a group0 voter host_id=%s", host_id)


async def add_to_group(driver: RaftDriver, raft_id: int, as_voter: bool, timeout: float) -> None:
    """On the leader: make `raft_id` a learner (or a voter) unless it already is one (a voter is
    never demoted here); returns once the change is applied on this node."""

    def done() -> bool:
        conf = driver.conf_state
        return raft_id in conf.voters or (not as_voter and raft_id in conf.learners)

    kind = ConfChangeType.ADD_VOTER if as_voter else ConfChangeType.ADD_LEARNER
    change = ConfChange((ConfChangeSingle(kind, raft_id),))
    async with asyncio.timeout(timeout):
        while not done():
            if not driver.is_leader:
                raise Retry("lost group0 leadership while adding a member; retry")
            # ConfChangeError: another change is in flight; wait for it to apply, then retry.
            with contextlib.suppress(ConfChangeError):
                driver.propose_conf_change(change)
            try:
                async with asyncio.timeout(1.0):
                    while not done():
                        await driver.changed()
            except TimeoutError:
                continue


def voter_change(topology: TopologyState, conf: ConfState, me: int) -> ConfChangeSingle | None:
    """The next change that brings the Raft configuration in line with the topology: a node
    that left is removed (voter or learner; never this leader itself, the next one does that),
    a normal learner becomes a voter. None when they agree."""
    for host_id, node in sorted(topology.nodes.items()):
        raft_id = raft_id_of(host_id)
        if node.state is NodeState.LEFT and raft_id != me and raft_id in conf.voters | conf.learners:
            return ConfChangeSingle(ConfChangeType.REMOVE, raft_id)
        if node.state is NodeState.NORMAL and raft_id in conf.learners:
            return ConfChangeSingle(ConfChangeType.ADD_VOTER, raft_id)
    return None


def reconcile_voters(state: ClusterState, driver: RaftDriver, me: int) -> None:
    """On the leader: propose the next configuration change `voter_change` finds (one at a time;
    one still in flight makes this a no-op until it applied)."""
    if not driver.is_leader:
        return
    change = voter_change(state.topology_state, driver.conf_state, me)
    if change is None:
        return
    log.info("group0 configuration: %s of raft_id=%d", change.type.name.lower(), change.node)
    with contextlib.suppress(ConfChangeError, ProposalDroppedError):
        driver.propose_conf_change(ConfChange((change,)))
