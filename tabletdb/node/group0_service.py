"""group0 on a node: the Raft-replicated metadata store, cluster formation and joining.

DDL (`change_schema`): read barrier, decide on the now-current catalog, propose a command that
names the state id it was decided on, wait until *this* node applied it. If another change won
the race the command applies as a no-op everywhere and the decision is re-run on the newer
state, a bounded number of times (DESIGN.md decision 3).

Formation: a node whose seeds are only itself (or none) founds a cluster: its fresh log is
bootstrapped with itself as the only voter and it registers itself in the topology. Any other
node with a fresh log asks a seed to join; the seed forwards to the leader, which checks the
cluster name and the enabled features, records the node in the topology (so every member learns
its address) and then adds it as a Raft voter. A restarted node just replays its log (or
snapshot) and catches up from the leader.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import logging
import random
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tabletdb.cql.errors import ServerError
from tabletdb.group0.auth_state import with_auth
from tabletdb.group0.balancing import BalancingCommand
from tabletdb.group0.cluster_state import (
    Applied,
    ClusterState,
    GroupEntry,
    SchemaEntry,
    apply_entry,
    decode_entry,
    decode_snapshot,
    encode_entry,
    encode_snapshot,
)
from tabletdb.group0.state import SchemaCommand
from tabletdb.group0.state import apply as apply_group0
from tabletdb.group0.state_id import timeuuid_after
from tabletdb.group0.tablets_state import TabletChange
from tabletdb.group0.topology import (
    JoinCommand,
    JoinRefused,
    NodeRecord,
    check_join,
    record_from_plain,
    record_to_plain,
)
from tabletdb.net.rpc import RemoteError, RpcError, RpcNode
from tabletdb.node.group0_guard import DdlTurns
from tabletdb.node.group0_raft import RaftDriver
from tabletdb.query.metadata_store import Decision
from tabletdb.query.node_info import RaftInfo, RaftMember
from tabletdb.raft.errors import ConfChangeError, NotLeaderError
from tabletdb.raft.storage import DurableLog
from tabletdb.raft.types import ConfChange, ConfChangeSingle, ConfChangeType, ConfState, Entry, Snapshot
from tabletdb.schema.catalog_diff import catalog_events
from tabletdb.schema.ddl_common import DdlOutcome, SchemaChangeEvent
from tabletdb.schema.model import Catalog

log = logging.getLogger(__name__)

INTERNODE_PORT = 7000
"""Scylla's storage_port: group0 traffic. Every node has its own address, so one port serves."""
JOIN_VERB = "g0.join"
MAX_DDL_ATTEMPTS = 30
RETRY_PAUSE = 0.005
COMMAND_TIMEOUT = 30.0
JOIN_TIMEOUT = 120.0
RESTART_BARRIER_TIMEOUT = 15.0

SchemaListener = Callable[[tuple[SchemaChangeEvent, ...]], None]
MemberListener = Callable[[NodeRecord], None]


def founds_cluster(address: str, seeds: tuple[str, ...]) -> bool:
    """Whether a node with a fresh log founds the cluster instead of joining one.

    Seeds that are only this node (or none) found. When every node lists the same seeds, the
    lowest seed address founds and the others join it, so a shared seed list cannot leave
    every seed waiting for another to start the cluster.
    """
    if all(seed == address for seed in seeds):
        return True
    return address in seeds and address == min(seeds, key=lambda s: ipaddress.ip_address(s).packed)


class ConcurrentModification(ServerError):
    """A DDL lost the race against other schema changes every time it was retried."""


TabletPlanner = Callable[[ClusterState, Catalog], tuple[TabletChange, ...]]
"""(state before, catalog after a schema change) -> tablet maps to create/remove with it."""


class Group0Service:
    def __init__(
        self,
        directory: Path,
        record: NodeRecord,
        cluster_name: str,
        seeds: tuple[str, ...],
        tablet_planner: TabletPlanner | None = None,
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._tablet_planner = tablet_planner
        self.record = record
        self.cluster_name = cluster_name
        self.seeds = seeds
        self.store = DurableLog.open(str(directory))
        self.founder = founds_cluster(record.address, seeds)
        if self.store.last_index() == 0 and self.store.snapshot_meta.index == 0 and self.founder:
            self.store.bootstrap(ConfState(voters=frozenset({record.raft_id})))
        self._state = decode_snapshot(self.store.snapshot().data)
        self.rpc = RpcNode(record.raft_id, record.address, INTERNODE_PORT)
        self.driver = RaftDriver(
            record.raft_id, self.rpc, self.store, self._apply, self._install, self._snapshot_bytes
        )
        self._waiting: dict[uuid.UUID, asyncio.Future[Applied]] = {}
        self._schema_listeners: list[SchemaListener] = []
        self._member_listeners: list[MemberListener] = []
        self._join_lock = asyncio.Lock()
        self._ddl_lock = asyncio.Lock()
        self.turns = DdlTurns(self.driver, self.rpc)
        self._rng = random.Random()
        self._learn_peers()

    # --- MetadataStore ---------------------------------------------------------------------------

    @property
    def catalog(self) -> Catalog:
        return self._state.metadata.catalog

    @property
    def state(self) -> ClusterState:
        return self._state

    def add_listener(self, listener: SchemaListener) -> None:
        self._schema_listeners.append(listener)

    def add_member_listener(self, listener: MemberListener) -> None:
        self._member_listeners.append(listener)

    async def change_schema(self, decide: Decision) -> DdlOutcome:
        """Decide, propose, wait for our own apply; re-decide when another node's change won.

        One change at a time per node, and each takes a turn from the leader first
        (`group0_guard`), so commands rarely race. When one does lose (a leader change), the
        losing entry's apply already showed us the winner; a short random pause
        de-synchronises nodes that keep colliding.
        """
        async with self._ddl_lock, asyncio.timeout(COMMAND_TIMEOUT):
            token, leader, granted_at = await self.turns.acquire()
            try:
                await self.driver.wait_applied(granted_at)
                return await self._decide_and_commit(decide)
            finally:
                await self.turns.release(token, leader)

    async def _decide_and_commit(self, decide: Decision) -> DdlOutcome:
        # No read barrier: the turn came with the leader's commit index, which covers every
        # change made in earlier turns, and change_schema waited to apply up to it. If the
        # leader was deposed unawares, the state-id guard turns a stale command into a no-op.
        for attempt in range(MAX_DDL_ATTEMPTS):
            state = self._state.metadata
            outcome = decide(state.catalog)
            if outcome.is_noop:
                return outcome
            new_id = timeuuid_after(state.state_id, time.time_ns(), self._rng)
            command = with_auth(SchemaCommand(state.state_id, new_id, outcome.mutations), outcome)
            if self._tablet_planner is not None:  # tablet maps move with the schema, atomically
                preview, _ = apply_group0(state, command)
                changes = self._tablet_planner(self._state, preview.catalog)
                command = dataclasses.replace(command, tablet_changes=changes)
            applied = await self._submit(SchemaEntry(command, outcome.events))
            if applied.took_effect:
                return outcome
            await asyncio.sleep(self._rng.uniform(0, RETRY_PAUSE * (attempt + 1)))
        raise ConcurrentModification(
            f"schema change lost to concurrent schema changes {MAX_DDL_ATTEMPTS} times in a row; retry it"
        )

    async def set_balancing(self, enabled: bool) -> None:
        """Set group0's tablet-balancing flag; returns once this node applied it."""
        async with asyncio.timeout(COMMAND_TIMEOUT):
            await self._submit(BalancingCommand(uuid.uuid4(), enabled))

    # --- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the internode port, run Raft, and make sure this node is a member.

        Raises JoinRefused if the cluster will not have this node.
        """
        await self.rpc.start()
        self.rpc.register(JOIN_VERB, self._on_join)
        self.turns.register()
        await self.driver.start()
        if self.driver.conf_state.voters == frozenset({self.record.raft_id}):
            self.driver.campaign()  # a lone voter need not wait out an election timeout
        if self.record.host_id in self._state.topology.members:
            await self._catch_up()
        elif self.record.raft_id in self.driver.conf_state.voters:
            await self._register_self()
        else:
            await self._join_via_seeds()
        log.info("group0 member host_id=%s raft_id=%d", self.record.host_id, self.record.raft_id)

    async def stop(self) -> None:
        await self.driver.stop()
        await self.rpc.stop()

    def close(self) -> None:
        self.store.sync()

    def status(self) -> dict[str, Any]:
        status = self.driver.status()
        leader = self._state.topology.by_raft_id(status["leader"] or 0)
        status["leader_host_id"] = str(leader.host_id) if leader else None
        status["group0_id"] = str(self.group0_id) if self.group0_id else None
        return status

    def raft_info(self) -> RaftInfo | None:
        """This node's Raft view for system.raft_state (None until the group has a member)."""
        topology = self._state.topology
        if topology.group0_id is None:
            return None
        status = self.driver.status()
        by_raft_id = {r.raft_id: r.host_id for r in topology.members.values()}
        voters = set(status["voters"])
        members = tuple(
            RaftMember(by_raft_id[rid], rid in voters)
            for rid in sorted(voters | set(status["learners"]))
            if rid in by_raft_id
        )
        return RaftInfo(
            group_id=topology.group0_id,
            server_id=self.record.host_id,
            role=status["role"],
            term=status["term"],
            commit_index=status["commit_index"],
            leader=by_raft_id.get(status["leader"] or 0),
            members=members,
        )

    @property
    def group0_id(self) -> uuid.UUID | None:
        return self._state.topology.group0_id

    # --- membership ------------------------------------------------------------------------------

    async def _catch_up(self) -> None:
        try:
            async with asyncio.timeout(RESTART_BARRIER_TIMEOUT):
                await self.driver.read_barrier()
        except TimeoutError:
            log.warning("group0: no quorum after restart; serving the state replayed from the local log")

    async def _register_self(self) -> None:
        async with asyncio.timeout(JOIN_TIMEOUT):
            await self.driver.read_barrier()
            check_join(self._state.topology, self.cluster_name, self.record)
            applied = await self._submit(JoinCommand(uuid.uuid4(), self.cluster_name, self.record))
        if not applied.took_effect:
            raise JoinRefused(f"node {self.record.host_id}: refused when its registration was applied")

    async def _join_via_seeds(self) -> None:
        seeds = [s for s in self.seeds if s != self.record.address]
        for i, seed in enumerate(seeds):
            self.rpc.add_peer(-(i + 1), seed, INTERNODE_PORT)
        payload = {"cluster_name": self.cluster_name, "record": record_to_plain(self.record)}
        deadline = time.monotonic() + JOIN_TIMEOUT
        attempt = 0
        while True:
            peer = -(attempt % len(seeds) + 1)
            attempt += 1
            try:
                reply = await self.rpc.call(peer, JOIN_VERB, payload, timeout=JOIN_TIMEOUT)
                # Our log is empty until the leader's first snapshot arrives: learn the members'
                # addresses from the reply so our answers reach the leader before that.
                for raft_id, address in reply["members"]:
                    self.driver.add_peer(raft_id, address, INTERNODE_PORT)
                break
            except RemoteError as exc:
                if "JoinRefused" in str(exc):
                    raise JoinRefused(str(exc).split("JoinRefused: ", 1)[-1]) from None
                last_error: Exception = exc
            except RpcError as exc:
                last_error = exc
            if time.monotonic() > deadline:
                raise JoinRefused(f"could not join through seeds {', '.join(seeds)}: {last_error}")
            log.info("group0 join attempt failed (%s); retrying", last_error)
            await asyncio.sleep(0.5)
        async with asyncio.timeout(JOIN_TIMEOUT):
            await self.driver.read_barrier()

    async def _on_join(self, src: int, payload: Any) -> dict[str, Any]:
        if not self.driver.is_leader:
            leader = self.driver.raft.leader
            if leader is None:
                raise RuntimeError("no group0 leader known yet; retry")
            reply: dict[str, Any] = await self.rpc.call(leader, JOIN_VERB, payload, timeout=JOIN_TIMEOUT)
            return reply
        record = record_from_plain(payload["record"])
        async with self._join_lock:
            await self.driver.read_barrier()
            check_join(self._state.topology, payload["cluster_name"], record)
            if self._state.topology.members.get(record.host_id) != record:
                applied = await self._submit(JoinCommand(uuid.uuid4(), payload["cluster_name"], record))
                if not applied.took_effect:
                    raise JoinRefused(f"node {record.host_id}: refused when its join was applied")
            await self._add_voter(record.raft_id)
        log.info("group0 admitted host_id=%s address=%s", record.host_id, record.address)
        members = [[r.raft_id, r.address] for r in self._state.topology.members.values()]
        return {"leader": self.record.raft_id, "members": members}

    async def _add_voter(self, raft_id: int) -> None:
        change = ConfChange((ConfChangeSingle(ConfChangeType.ADD_VOTER, raft_id),))
        async with asyncio.timeout(COMMAND_TIMEOUT):
            while raft_id not in self.driver.conf_state.voters:
                if not self.driver.is_leader:
                    raise RuntimeError("lost group0 leadership while adding a voter; retry")
                # ConfChangeError: another change is in flight; wait for it to apply, then retry.
                with contextlib.suppress(ConfChangeError):
                    self.driver.propose_conf_change(change)
                try:
                    async with asyncio.timeout(1.0):
                        while raft_id not in self.driver.conf_state.voters:
                            await self.driver.changed()
                except TimeoutError:
                    continue

    # --- proposing and applying ------------------------------------------------------------------

    async def _submit(self, entry: GroupEntry) -> Applied:
        """Propose `entry` until this node applied it; proposals may repeat (apply is idempotent
        for joins and a no-op for a schema command whose state moved on)."""
        cid = entry.command_id
        loop = asyncio.get_running_loop()
        fut = self._waiting.setdefault(cid, loop.create_future())
        data = encode_entry(entry)
        try:
            while True:
                try:
                    self.driver.propose(data)
                except NotLeaderError:
                    await asyncio.sleep(0.05)
                    continue
                try:
                    return await asyncio.wait_for(asyncio.shield(fut), timeout=2.0)
                except TimeoutError:
                    log.info("group0 command %s not applied yet; proposing again", cid)
        finally:
            self._waiting.pop(cid, None)

    def _apply(self, entries: list[Entry]) -> None:
        for entry in entries:
            try:
                decoded = decode_entry(entry.data)
            except (ValueError, KeyError, TypeError) as exc:  # same bytes everywhere: all skip it
                log.error("group0 entry %d undecodable, skipped: %s", entry.index, exc)
                continue
            self._state, applied = apply_entry(self._state, decoded)
            fut = self._waiting.get(applied.command_id)
            if fut is not None and not fut.done():
                fut.set_result(applied)
            if applied.events:
                for listener in self._schema_listeners:
                    listener(applied.events)
            if applied.joined is not None:
                self._learn_peers()
                for member_listener in self._member_listeners:
                    member_listener(applied.joined)

    def _install(self, snapshot: Snapshot) -> None:
        before = self._state.metadata.catalog
        self._state = decode_snapshot(snapshot.data)
        self._learn_peers()
        # The commands the snapshot stands for never pass through _apply here: announce what
        # changed, or drivers connected to this node keep stale metadata.
        events = catalog_events(before, self._state.metadata.catalog)
        if events:
            for listener in self._schema_listeners:
                listener(events)
        log.info("group0 snapshot installed from the leader index=%d", snapshot.meta.index)

    def _snapshot_bytes(self) -> bytes:
        return encode_snapshot(self._state)

    def _learn_peers(self) -> None:
        for member in self._state.topology.members.values():
            self.driver.add_peer(member.raft_id, member.address, INTERNODE_PORT)
